/*
 * OpenSHMEM point-to-point tests (contexts, nbi atomics, ibput/ibget,
 * put-with-signal, set waits, locks): runs tests/shmem/mp_shmem_p2p under
 * oshrun for each mode with 1-8 PEs on shm, with the ofi backend forced
 * (2 PEs; 4 PEs for locks and signals), on two emulated nodes (shm within,
 * ofi across: SHMEM_TEAM_SHARED is then a real subset), and checks that
 * bad input ends the job with an error.
 */
#include "btl/btl.h"
#include "tests/common/mp_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#define PROG "shmem/mp_shmem_p2p"

static const char *const modes[] = {"ctx", "amo", "ibput", "signal", "wait", "lock"};
#define NMODES ((int)(sizeof(modes) / sizeof(modes[0])))

static int run(int np, int nodes, const char *backend, const char *mode)
{
    const char *args[] = {mode, NULL};
    int status;

    setenv("RMB_BTL", backend, 1);
    setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    status = mp_run(mp_oshrun_argv(np, nodes, PROG, args), 60, NULL);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    return status;
}

static int have_ofi(const char *what)
{
    if (btl_component_find("ofi") == NULL) {
        printf("SKIP %s: btl/ofi not built\n", what);
        return 0;
    }
    return 1;
}

START_TEST(test_modes_shm)
{
    static const int counts[] = {1, 2, 3, 4, 8};
    for (int c = 0; c < 5; c++) {
        ck_assert_msg(run(counts[c], 1, "auto", modes[_i]) == 0, "%s on %d PEs", modes[_i],
                      counts[c]);
    }
}
END_TEST

/* Over the network every job start costs seconds: one job runs several modes. */
START_TEST(test_ofi)
{
    if (!have_ofi("shmem p2p over ofi")) {
        return;
    }
    ck_assert_msg(run(2, 1, "ofi", "ctx,amo,ibput,signal,wait,lock") == 0, "over ofi, 2 PEs");
    ck_assert_msg(run(4, 1, "ofi", "lock,signal") == 0, "lock and signal over ofi, 4 PEs");
}
END_TEST

START_TEST(test_two_nodes)
{
    if (!have_ofi("shmem p2p on two emulated nodes")) {
        return;
    }
    /* shm inside a node, ofi between: contexts on SHMEM_TEAM_SHARED
     * translate to the node's PEs; signals and locks mix both paths */
    ck_assert_msg(run(4, 2, "auto", "ctx,signal,lock") == 0, "on 2 nodes");
}
END_TEST

START_TEST(test_bad_input)
{
    /* one line, exit 1 */
    ck_assert_int_eq(run(2, 1, "auto", "badctx"), 1);
    ck_assert_int_eq(run(2, 1, "auto", "badsig"), 1);
    ck_assert_int_eq(run(2, 1, "auto", "destroydefault"), 1);
    ck_assert_int_eq(run(2, 1, "auto", "badctxpe"), 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("shmem_p2p");
    TCase *tc = tcase_create("shmem_p2p");

    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_modes_shm, 0, NMODES);
    tcase_add_test(tc, test_ofi);
    tcase_add_test(tc, test_two_nodes);
    tcase_add_test(tc, test_bad_input);
    suite_add_tcase(s, tc);
    return mp_run_suite(s);
}
