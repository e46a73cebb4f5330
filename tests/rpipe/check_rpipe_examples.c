/*
 * The rpipe examples as tests: examples/rpipe/{ring,pingpong,dht} run under
 * oshrun on shm and with the ofi backend forced; each program checks every
 * value it receives and exits 0 only if all arrived intact. Bad arguments
 * must give exit status 2 (usage) without starting the library.
 */
#include "btl/btl.h"
#include "tests/common/mp_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING     "../examples/rpipe/ring"
#define PINGPONG "../examples/rpipe/pingpong"
#define DHT      "../examples/rpipe/dht"

static const char *const dirs[] = {"-put", "-get"};
static const char *const syncs[] = {"block", "tag", "channel"};
static const char *const orders[] = {"natural", "send-first", "alternate"};

static void run(int np, const char *backend, const char *prog, const char *const args[])
{
    char *before = mp_shm_snapshot();

    setenv("RMB_BTL", backend, 1);
    if (strcmp(backend, "ofi") == 0) {
        setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    } else {
        unsetenv("FI_PROVIDER");
    }
    ck_assert_int_eq(mp_run(mp_oshrun_argv(np, 1, prog, args), 120, NULL), 0);
    ck_assert_int_eq(mp_count_alive(prog), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
}

static int have_ofi(void)
{
    if (btl_component_find("ofi") == NULL) {
        printf("SKIP rpipe examples over ofi: btl/ofi not built\n");
        return 0;
    }
    return 1;
}

/* Listing B.3: every creation order, 2-8 ranks, PUT and GET. Rank pairs
 * whose creation order would deadlock a blocking rpipe() are in every run
 * with 3 or more ranks (the ring closes on rank 0). */
START_TEST(test_ring_orders)
{
    const char *args[] = {dirs[_i % 2], "700", "block", orders[(_i / 2) % 3], NULL};
    run(3 + _i / 6, "auto", RING, args);
}
END_TEST

START_TEST(test_ring_sizes)
{
    const char *args[] = {dirs[_i % 2], "640", syncs[_i % 3], "natural", NULL};
    run(_i + 2, "auto", RING, args);
}
END_TEST

START_TEST(test_pingpong)
{
    const char *args[] = {dirs[_i % 2], "200", "65536", syncs[_i / 2], NULL};
    run(2, "auto", PINGPONG, args);
}
END_TEST

START_TEST(test_dht)
{
    const char *args[] = {dirs[_i % 2], "3000", syncs[(_i / 2) % 3], NULL};
    run(_i < 6 ? 4 : 2 + (_i - 6), "auto", DHT, args);
}
END_TEST

START_TEST(test_ofi)
{
    const char *ring[] = {dirs[_i], "300", "tag", "natural", NULL};
    const char *pp[] = {dirs[_i], "50", "4096", "block", NULL};
    const char *dht[] = {dirs[_i], "500", "block", NULL};

    if (!have_ofi()) {
        return;
    }
    run(3, "ofi", RING, ring);
    run(2, "ofi", PINGPONG, pp);
    run(3, "ofi", DHT, dht);
}
END_TEST

/* Usage errors exit 2 before any library call (run without oshrun). */
START_TEST(test_usage)
{
    static const char *const bad[][6] = {
        {RING, "-send", NULL},
        {RING, "-put", "0", NULL},
        {RING, "-put", "10", "fast", NULL},
        {RING, "-put", "10", "tag", "sideways", NULL},
        {PINGPONG, "-put", "10", "4", NULL},
        {PINGPONG, "-put", "10", "64", "fast", NULL},
        {DHT, "-bogus", NULL},
        {DHT, "-get", "-5", NULL},
        {DHT, "-get", "10", "tags", NULL},
    };
    char *argv[6] = {0};
    char path[4096];

    for (size_t t = 0; t < sizeof(bad) / sizeof(bad[0]); t++) {
        snprintf(path, sizeof(path), "%s", mp_test_path(bad[t][0]));
        argv[0] = path;
        for (int k = 1; k < 6; k++) {
            argv[k] = (char *)bad[t][k];
            if (bad[t][k] == NULL) break;
        }
        ck_assert_msg(mp_run(argv, 10, NULL) == 2, "%s %s: no usage error", bad[t][0], bad[t][1]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rpipe_examples");
    TCase *tc = tcase_create("shm");
    TCase *net = tcase_create("ofi");

    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, test_usage);
    tcase_add_loop_test(tc, test_ring_orders, 0, 12); /* 3 and 4 ranks */
    tcase_add_loop_test(tc, test_ring_sizes, 0, 7);   /* 2..8 ranks */
    tcase_add_loop_test(tc, test_pingpong, 0, 6);
    tcase_add_loop_test(tc, test_dht, 0, 13); /* 4 ranks x modes, then 2..8 */
    suite_add_tcase(s, tc);
    tcase_set_timeout(net, 150);
    tcase_add_loop_test(net, test_ofi, 0, 2);
    suite_add_tcase(s, net);
    return mp_run_suite(s);
}
