/*
 * rcoll tests: runs tests/rpipe/mp_rcoll under oshrun: every operation for
 * 1-8 PEs against a serial reference, active sets, several collectives in
 * flight, repeated use, a user reduction, barrier semantics, misuse; over
 * PUT and GET channels on shm, and a few cases with the ofi backend forced.
 * PEs outnumber the 2 cores here, so waits yield early (RMB_RPIPE_SPIN).
 */
#include "btl/btl.h"
#include "tests/common/mp_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "rpipe/mp_rcoll"

static void run(int np, const char *backend, const char *mode, const char *rdma)
{
    const char *args[] = {mode, rdma, NULL};
    char *before = mp_shm_snapshot();

    setenv("RMB_BTL", backend, 1);
    setenv("RMB_RPIPE_SPIN", "50", 1);
    if (!strcmp(backend, "ofi")) {
        setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    } else {
        unsetenv("FI_PROVIDER");
    }
    ck_assert_int_eq(mp_run(mp_oshrun_argv(np, 1, PROG, args), 60, NULL), 0);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
}

/* every operation, type, count and root; 1..8 PEs */
START_TEST(test_ops)
{
    run(_i, "auto", "ops", "put");
}
END_TEST

START_TEST(test_ops_get)
{
    run(3, "auto", "ops", "get");
}
END_TEST

/* active sets (start 1 / 0, stride 2) */
START_TEST(test_active)
{
    run(_i, "auto", "active", "put");
}
END_TEST

/* six collectives in flight, completed in a different order per PE */
START_TEST(test_nb)
{
    run(_i, "auto", "nb", _i % 2 ? "get" : "put");
}
END_TEST

START_TEST(test_repeat)
{
    run(_i, "auto", "repeat", "put");
}
END_TEST

START_TEST(test_user)
{
    run(_i, "auto", "user", "put");
}
END_TEST

START_TEST(test_barrier)
{
    run(_i, "auto", "barrier", "put");
}
END_TEST

START_TEST(test_misuse)
{
    run(2, "auto", "misuse", "put");
}
END_TEST

/* handles still live at rexit */
START_TEST(test_leftover)
{
    run(_i, "auto", "leftover", "put");
}
END_TEST

static const char *const ofi_modes[] = {"repeat", "nb", "user"};

START_TEST(test_ofi)
{
    if (btl_component_find("ofi") == NULL) {
        printf("SKIP rcoll over ofi: btl/ofi not built\n");
        return;
    }
    run(3, "ofi", ofi_modes[_i], "put");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rcoll");
    TCase *tc = tcase_create("shm");
    TCase *net = tcase_create("ofi");

    tcase_set_timeout(tc, 90);
    tcase_add_loop_test(tc, test_ops, 1, 9);
    tcase_add_test(tc, test_ops_get);
    tcase_add_loop_test(tc, test_active, 4, 6);
    tcase_add_loop_test(tc, test_nb, 2, 6);
    tcase_add_loop_test(tc, test_repeat, 2, 4);
    tcase_add_loop_test(tc, test_user, 3, 5);
    tcase_add_loop_test(tc, test_barrier, 3, 4);
    tcase_add_test(tc, test_misuse);
    tcase_add_loop_test(tc, test_leftover, 1, 5);
    suite_add_tcase(s, tc);
    tcase_set_timeout(net, 90);
    tcase_add_loop_test(net, test_ofi, 0, 3);
    suite_add_tcase(s, net);
    return mp_run_suite(s);
}
