/*
 * Runs the btl conformance suite (mp_btl_conformance, one program for
 * every backend) under oshrun in each configuration: shm with 2 and 4
 * PEs, the network backend between emulated nodes, and every backend
 * forced for all peers with each libfabric provider we support here.
 */
#include "btl/btl.h"
#include "tests/common/mp_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "btl/mp_btl_conformance"

static void run_suite(int np, int nodes, const char *force, const char *provider)
{
    char *before = mp_shm_snapshot();

    setenv("RMB_BTL", force, 1);
    /* The suite loops over every backend of the context; run just the one
     * under test ("auto" = whatever serves the peers, i.e. all). */
    if (strcmp(force, "auto") != 0) {
        setenv("BTL_CONF_ONLY", force, 1);
    } else {
        unsetenv("BTL_CONF_ONLY");
    }
    if (provider != NULL) {
        setenv("FI_PROVIDER", provider, 1);
    } else {
        unsetenv("FI_PROVIDER");
    }
    ck_assert_int_eq(mp_run(mp_oshrun_argv(np, nodes, PROG, NULL), 240, NULL), 0);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
}

START_TEST(test_shm_2) { run_suite(2, 1, "shm", NULL); }
END_TEST
START_TEST(test_shm_4) { run_suite(4, 1, "shm", NULL); }
END_TEST
START_TEST(test_auto_2_nodes) { run_suite(4, 2, "auto", NULL); }
END_TEST

static const char *const providers[] = {"tcp;ofi_rxm", "sockets"};

/* Stress iterations per run: the full 10^5 where the provider is fast
 * enough on 2 loaded cores, fewer where it is not (sockets: ~40 ms per
 * round trip here; see docs/btl_ofi.md). */
static const char *const ofi_iters[2][2] = {{NULL, "20000"}, {"1000", "500"}};

START_TEST(test_ofi_forced)
{
    int np = (_i & 1) ? 4 : 2;
    const char *provider = providers[_i / 2], *iters = ofi_iters[_i / 2][_i & 1];

    if (btl_component_find("ofi") == NULL) {
        printf("SKIP btl/ofi: not built (apt-get install libfabric-dev)\n");
        return;
    }
    if (mp_time_scale() > 1) { /* slow build: fewer stress rounds */
        char scaled[24];
        snprintf(scaled, sizeof(scaled), "%ld", mp_scaled_count(iters ? atol(iters) : 100000));
        setenv("BTL_CONF_ITERS", scaled, 1);
    } else if (iters != NULL) {
        setenv("BTL_CONF_ITERS", iters, 1);
    } else {
        unsetenv("BTL_CONF_ITERS");
    }
    run_suite(np, 1, "ofi", provider);
    unsetenv("BTL_CONF_ITERS");
}
END_TEST

/* Waits are bounded: a stalled peer makes quiet and a non-blocking put
 * fail with a timeout after RMB_OFI_TIMEOUT_SEC=1, then everything
 * completes once it serves again (~7 s: the peer stalls 5 s). */
START_TEST(test_ofi_timeout)
{
    const char *prog = "btl/mp_btl_ofi_timeout";
    char *before = mp_shm_snapshot();

    if (btl_component_find("ofi") == NULL) {
        printf("SKIP btl/ofi timeout: not built\n");
        free(before);
        return;
    }
    setenv("RMB_BTL", "ofi", 1);
    setenv("FI_PROVIDER", "tcp;ofi_rxm", 1); /* manual progress: a sleeping PE serves nothing */
    setenv("RMB_OFI_PROGRESS_USEC", "0", 1);
    setenv("RMB_OFI_TIMEOUT_SEC", "1", 1);
    ck_assert_int_eq(mp_run(mp_oshrun_argv(2, 1, prog, NULL), 60, NULL), 0);
    unsetenv("RMB_OFI_PROGRESS_USEC");
    unsetenv("RMB_OFI_TIMEOUT_SEC");
    unsetenv("FI_PROVIDER");
    ck_assert_int_eq(mp_count_alive(prog), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
}
END_TEST

int main(void)
{
    Suite *s   = suite_create("btl");
    TCase *shm = tcase_create("shm");
    TCase *ofi = tcase_create("ofi");

    tcase_set_timeout(shm, 300);
    tcase_add_test(shm, test_shm_2);
    tcase_add_test(shm, test_shm_4);
    tcase_add_test(shm, test_auto_2_nodes);
    suite_add_tcase(s, shm);
    tcase_set_timeout(ofi, 300);
    tcase_add_loop_test(ofi, test_ofi_forced, 0, 4);
    tcase_add_test(ofi, test_ofi_timeout);
    suite_add_tcase(s, ofi);
    return mp_run_suite(s);
}
