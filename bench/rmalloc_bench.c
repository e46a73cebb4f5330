/*
 * rmalloc microbenchmark (not a test).
 *  1. alloc+free pairs per second per heuristic with 1K, 64K and 1M live
 *     blocks: after filling, each pair frees one live block and allocates a
 *     new one of a random size (1..8 units). Two victim orders: "fifo"
 *     frees the oldest block (circular-buffer use, what next-fit is for)
 *     and "random" frees any live block (fragmenting).
 *     Each measurement runs chunks of 64K pairs until the pair count is
 *     reached or one second has passed. Times are thread CPU time (now()).
 *  2. sync cost per protocol: one message = producer alloc + post,
 *     consumer take + free, through the in-memory transport; shows ns per
 *     message and transport operations per message.
 * Usage: rmalloc_bench [pairs-per-measurement (default 50000000)
 *                      [heuristic fifo|random live-blocks]]  (one measurement)
 */
#include "rmalloc/rmalloc_sync.h"
#include "tests/rmalloc/rmalloc_pair.h"

#include "bench/bench_args.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNIT   64
#define NSIZES 65536

/* Thread CPU time: the build machine is shared, and wall time would count
 * the time slices other processes take (both are close on an idle box). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t xs = 88172645463325252ULL;
static uint64_t rnd(void)
{
    xs ^= xs << 13;
    xs ^= xs >> 7;
    xs ^= xs << 17;
    return xs;
}

static uint64_t sizes[NSIZES];

/* Returns pairs per second, or 0 when an allocation failed. */
static double run_pairs(rmalloc_heuristic_t h, uint64_t live, uint64_t pairs, int random_order)
{
    rmalloc_vmem_config_t cfg = {
        .size = live * 8 * 4 * UNIT, .unit = UNIT, .heuristic = h, .seed = 3};
    rmalloc_vmem_t *vm;
    raddr_t *d = malloc(live * sizeof(*d));
    double t0, t1;
    uint64_t i;

    if (d == NULL || rmalloc_vmem_create(&cfg, &vm) != UTIL_OK) {
        free(d);
        return 0;
    }
    for (i = 0; i < live; i++)
        if (rmalloc_vmem_alloc(vm, sizes[i % NSIZES], 0, &d[i]) != UTIL_OK) goto fail;
    uint64_t oldest = 0;
    /* Chunks of 64K pairs until `pairs` are done or a second has passed. */
    t0 = t1 = now();
    for (i = 0; i < pairs && t1 - t0 < 1.0;) {
        for (uint64_t end = i + 65536; i < end; i++) {
            /* multiply-shift: a uniform index without a division */
            uint64_t v = random_order ? ((rnd() >> 32) * live) >> 32 : oldest;
            if (++oldest == live) oldest = 0;
            if (rmalloc_vmem_free(vm, &d[v]) != UTIL_OK ||
                rmalloc_vmem_alloc(vm, sizes[i % NSIZES], 0, &d[v]) != UTIL_OK)
                goto fail;
        }
        t1 = now();
    }
    pairs = i;
    if (rmalloc_vmem_check(vm) != UTIL_OK) goto fail;
    rmalloc_vmem_destroy(vm);
    free(d);
    return (double)pairs / (t1 - t0);
fail:
    fprintf(stderr, "%s: allocation failed (live %llu)\n", rmalloc_heuristic_name(h),
            (unsigned long long)live);
    rmalloc_vmem_destroy(vm);
    free(d);
    return 0;
}

static void run_sync(pair_combo_t c, uint64_t msgs)
{
    rmalloc_sync_config_t cfg;
    pair_t p;
    raddr_t pd, cd;
    rmalloc_sync_stats_t sp, sc;
    util_status_t st;
    double t0, t1;

    pair_config(&cfg, c, 16384, UNIT, 256); /* 1 MiB region */
    if (pair_init(&p, &cfg, 0, 0, 1) != UTIL_OK) {
        fprintf(stderr, "cannot set up %s\n", rmalloc_sync_protocol_name(c.protocol));
        return;
    }
    rmalloc_sync_ep_t *P = p.ep[PAIR_PRODUCER], *C = p.ep[PAIR_CONSUMER];
    /* a window of messages in flight, so deferred protocols sync rarely */
    enum { WINDOW = 64 };
    raddr_t held[WINDOW];
    uint64_t nheld = 0;
    t0 = now();
    for (uint64_t i = 0; i < msgs; i++) {
        while ((st = rmalloc_sync_alloc(P, sizes[i % NSIZES] - 8, 0, &pd)) != UTIL_OK) {
            if (st != UTIL_IN_PROGRESS && st != UTIL_ERR_NO_RESOURCE) goto fail;
            rmalloc_sync_progress(C);
        }
        while ((st = rmalloc_sync_post(P, &pd)) != UTIL_OK)
            if (st != UTIL_IN_PROGRESS && st != UTIL_ERR_NO_RESOURCE) goto fail;
        if (c.protocol == RMALLOC_SYNC_BLOCK)
            st = rmalloc_sync_accept(C, pd.payload, 0, &cd);
        else
            while ((st = rmalloc_sync_next(C, &cd)) == UTIL_IN_PROGRESS)
                ;
        if (st != UTIL_OK) goto fail;
        if (nheld == WINDOW) {
            while ((st = rmalloc_sync_free(C, &held[i % WINDOW])) != UTIL_OK) {
                if (st != UTIL_IN_PROGRESS && st != UTIL_ERR_NO_RESOURCE) goto fail;
                rmalloc_sync_pull(P);
            }
            nheld--;
        }
        held[i % WINDOW] = cd;
        nheld++;
    }
    t1 = now();
    rmalloc_sync_get_stats(P, &sp);
    rmalloc_sync_get_stats(C, &sc);
    printf("  %-8s %-10s %8.1f ns/msg  %6.3f remote ops/msg (reads %.3f, writes %.3f, "
           "atomics %.3f)  pulls/msg %.4f\n",
           rmalloc_sync_protocol_name(c.protocol), rmalloc_heuristic_name(c.heuristic),
           1e9 * (t1 - t0) / (double)msgs,
           (double)(sp.reads + sp.writes + sp.atomics + sc.reads + sc.writes + sc.atomics) /
               (double)msgs,
           (double)(sp.reads + sc.reads) / (double)msgs,
           (double)(sp.writes + sc.writes) / (double)msgs,
           (double)(sp.atomics + sc.atomics) / (double)msgs, (double)sp.pulls / (double)msgs);
    pair_fini(&p);
    return;
fail:
    fprintf(stderr, "%s/%s failed: %s\n", rmalloc_sync_protocol_name(c.protocol),
            rmalloc_heuristic_name(c.heuristic), util_status_name(st));
    pair_fini(&p);
}

int main(int argc, char **argv)
{
    const char *usage = "rmalloc_bench [PAIRS [HEURISTIC fifo|random LIVE]]";
    uint64_t pairs = (uint64_t)bench_arg(argc, argv, 1, 50000000, 1, 1LL << 40, usage);
    static const uint64_t lives[] = {1024, 65536, 1048576};

    for (int i = 0; i < NSIZES; i++) sizes[i] = UNIT * (1 + rnd() % 8); /* 1..8 units */
    if (argc > 4) {
        rmalloc_heuristic_t h;
        if (argc > 5 || rmalloc_heuristic_parse(argv[2], &h) != UTIL_OK ||
            (strcmp(argv[3], "random") && strcmp(argv[3], "fifo"))) {
            fprintf(stderr, "usage: %s\n", usage);
            return 2;
        }
        double r = run_pairs(h, (uint64_t)bench_arg(argc, argv, 4, 0, 1, 1 << 24, usage), pairs,
                             !strcmp(argv[3], "random"));
        printf("%s %s %s live: %.2f M pairs/s\n", rmalloc_heuristic_name(h), argv[3], argv[4],
               r / 1e6);
        return r > 0 ? 0 : 1;
    }
    printf("rmalloc_bench: up to %llu alloc+free pairs or 1 s per measurement, unit %d B, sizes "
           "1..8 units\n",
           (unsigned long long)pairs, UNIT);
    printf("alloc+free pairs per second (millions)\n");
    printf("  %-11s %-7s %10s %10s %10s\n", "heuristic", "order", "1K live", "64K live", "1M live");
    for (int order = 0; order < 2; order++) {
        for (int h = 0; h < RMALLOC_HEURISTIC_COUNT; h++) {
            printf("  %-11s %-7s", rmalloc_heuristic_name((rmalloc_heuristic_t)h),
                   order ? "random" : "fifo");
            for (int l = 0; l < 3; l++)
                printf(" %10.2f", run_pairs((rmalloc_heuristic_t)h, lives[l], pairs, order) / 1e6);
            printf("\n");
            fflush(stdout);
        }
    }
    uint64_t msgs = pairs < 2000000 ? pairs : 2000000;
    printf("sync cost per protocol (PUT, 1 MiB region, 64 messages in flight, %llu messages)\n",
           (unsigned long long)msgs);
    for (int i = 0; i < PAIR_COMBOS; i += 2) {
        pair_combo_t c = pair_combo(i);
        if (c.heuristic == RMALLOC_NEXT_FIT || c.heuristic == RMALLOC_BEST_FIT) run_sync(c, msgs);
    }
    return 0;
}
