/*
 * OpenSHMEM tests: runs tests/shmem/mp_shmem under oshrun for each API
 * group with 1-8 PEs on shm, with the ofi backend forced, across two
 * emulated nodes, and checks that bad input ends the job with an error.
 */
#include "btl/btl.h"
#include "tests/common/mp_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#define PROG "shmem/mp_shmem"

static const char *const modes[] = {"rma", "amo", "sync", "coll", "heap", "threads"};

static int run(int np, const char *backend, const char *mode)
{
    const char *args[] = {mode, NULL};
    int status;

    setenv("RMB_BTL", backend, 1);
    setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    status = mp_run(mp_oshrun_argv(np, 1, PROG, args), 120, NULL);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    return status;
}

START_TEST(test_modes_shm)
{
    static const int counts[] = {1, 2, 3, 4, 8};
    for (int c = 0; c < 5; c++) {
        ck_assert_msg(run(counts[c], "auto", modes[_i]) == 0, "%s on %d PEs", modes[_i], counts[c]);
    }
}
END_TEST

START_TEST(test_modes_ofi)
{
    if (btl_component_find("ofi") == NULL) {
        printf("SKIP shmem over ofi: btl/ofi not built\n");
        return;
    }
    ck_assert_msg(run(2, "ofi", modes[_i]) == 0, "%s over ofi", modes[_i]);
}
END_TEST

/* Two emulated nodes: atomics through the network to every peer, myself
 * included (the atomicity rule for NIC atomics), and the default choice. */
START_TEST(test_amo_network)
{
    const char *args[] = {_i == 0 ? "amo" : "sync", NULL};

    if (btl_component_find("ofi") == NULL) {
        printf("SKIP shmem atomics through the network: btl/ofi not built\n");
        return;
    }
    setenv("RMB_BTL", "auto", 1);
    setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    setenv("RMB_AMO_NETWORK", "yes", 1);
    ck_assert_int_eq(mp_run(mp_oshrun_argv(4, 2, PROG, args), 120, NULL), 0);
    unsetenv("RMB_AMO_NETWORK");
    ck_assert_int_eq(mp_run(mp_oshrun_argv(4, 2, PROG, args), 120, NULL), 0);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
}
END_TEST

/* A PE away from the network (computing, calling quiet with nothing in
 * flight, streaming atomics) has its memory served to the other node's PEs
 * (mp_shmem's away mode): over ucx with and without peer error handling
 * (UCX >= 1.16 runs without), and over ofi; without the helper thread (a
 * UCX built without thread support has none) the calls alone must. */
static const struct {
    const char *net, *err_mode, *progress_usec, *mode;
} away_runs[] = {
    {"ucx", "auto", "1000", "away"},    {"ucx", "none", "1000", "away"},
    {"ofi", "auto", "1000", "away"},    {"ucx", "none", "0", "away-calls"},
    {"ofi", "auto", "0", "away-calls"},
};

START_TEST(test_away_network)
{
    const char *args[] = {away_runs[_i].mode, NULL};

    if (btl_component_find(away_runs[_i].net) == NULL) {
        printf("SKIP shmem %s mode over %s: btl/%s not built\n", away_runs[_i].mode,
               away_runs[_i].net, away_runs[_i].net);
        return;
    }
    setenv("RMB_BTL", "auto", 1);
    setenv("RMB_BTL_NET", away_runs[_i].net, 1);
    setenv("RMB_UCX_ERR_MODE", away_runs[_i].err_mode, 1);
    setenv("RMB_UCX_PROGRESS_USEC", away_runs[_i].progress_usec, 1);
    setenv("RMB_OFI_PROGRESS_USEC", away_runs[_i].progress_usec, 1);
    setenv("UCX_TLS", "tcp", 1);
    setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    ck_assert_msg(mp_run(mp_oshrun_argv(4, 2, PROG, args), 120, NULL) == 0,
                  "%s over %s (error mode %s, helper interval %s us)", away_runs[_i].mode,
                  away_runs[_i].net, away_runs[_i].err_mode, away_runs[_i].progress_usec);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    unsetenv("RMB_BTL_NET");
    unsetenv("RMB_UCX_ERR_MODE");
    unsetenv("RMB_UCX_PROGRESS_USEC");
    unsetenv("RMB_OFI_PROGRESS_USEC");
    unsetenv("UCX_TLS");
}
END_TEST

START_TEST(test_bad_input)
{
    /* a PE out of range and a non-symmetric address: one line, exit 1 */
    ck_assert_int_eq(run(2, "auto", "badpe"), 1);
    ck_assert_int_eq(run(2, "auto", "badaddr"), 1);
}
END_TEST

START_TEST(test_global_exit)
{
    /* shmem_global_exit(status) is the job's exit status, 0 included */
    ck_assert_int_eq(run(3, "auto", "exit0"), 0);
    ck_assert_int_eq(run(3, "auto", "exit5"), 5);
    ck_assert_int_eq(run(1, "auto", "exit7"), 7);
}
END_TEST

START_TEST(test_pshmem)
{
    /* a tool interposes shmem_ names and forwards through pshmem_ ones */
    ck_assert_int_eq(mp_run(mp_oshrun_argv(3, 1, "shmem/mp_pshmem", NULL), 60, NULL), 0);
    ck_assert_int_eq(mp_count_alive("shmem/mp_pshmem"), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("shmem");
    TCase *tc = tcase_create("shmem");

    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_modes_shm, 0, 6);
    tcase_add_loop_test(tc, test_modes_ofi, 0, 6);
    tcase_add_test(tc, test_bad_input);
    tcase_add_loop_test(tc, test_amo_network, 0, 2);
    tcase_add_loop_test(tc, test_away_network, 0, 5);
    tcase_add_test(tc, test_global_exit);
    tcase_add_test(tc, test_pshmem);
    suite_add_tcase(s, tc);
    return mp_run_suite(s);
}
