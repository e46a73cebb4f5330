/*
 * Spaces (shmemx.h, docs/spaces.md), launched as N PEs (N even, >= 2)
 * under oshrun; one mode per run.
 *   mp_shmem_space accept   the acceptance program: a space on the odd PEs
 *                           only; allocate, put, atomic add, reduce, free;
 *                           the even PEs call nothing and must be untouched
 *                           and unallocated (no mapping, no memory growth)
 *   mp_shmem_space all      two disjoint teams (odd, even) each owning a
 *                           space: every RMA/AMO/signal/wait/collective/
 *                           lock/shmem_ptr form on space memory, by world
 *                           PE and through contexts of the space's team,
 *                           realloc keeps contents, calloc, align, a space
 *                           outliving its team, 100 create/destroy cycles
 *   mp_shmem_space bench    creation and allocation time vs team size
 *                           (teams of 2..N PEs; PE 0 prints)
 *   mp_shmem_space ERROR    must end the job with one clear error line:
 *                           nonmember, otherspace, doublefree, destroyed,
 *                           oom, notmember_put, freed_put, destroy_own_team
 * Every check compares real values; exit 0 only if all matched.
 */
#include <shmem.h>
#include <shmemx.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/common/mp_check.h"

static int me, npes, errors;

#define N 64 /* longs per test array */

/* memfd mappings of the library's segments in this process (own or peers') */
static int count_segment_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;

    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        n += strstr(line, "memfd:rmb-btl-") != NULL;
    }
    fclose(f);
    return n;
}

/* virtual size of the process in bytes */
static long long vm_size(void)
{
    long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f != NULL) {
        if (fscanf(f, "%lld", &pages) != 1) pages = 0;
        fclose(f);
    }
    return pages * sysconf(_SC_PAGESIZE);
}

static shmem_team_t split_parity(int parity)
{
    shmem_team_t t = SHMEM_TEAM_INVALID;
    int rc =
        shmem_team_split_strided(SHMEM_TEAM_WORLD, parity, 2, (npes - parity + 1) / 2, NULL, 0, &t);
    CHECK(rc == 0, "split parity %d: %d", parity, rc);
    CHECK((t != SHMEM_TEAM_INVALID) == (me % 2 == parity), "membership parity %d", parity);
    return t;
}

/* ---- the acceptance program --------------------------------------------------------- */

static void mode_accept(void)
{
    static long witness[N]; /* static data: must stay untouched on the even PEs */
    long *sentinel = shmem_malloc(N * sizeof(long));
    shmem_team_t odd = split_parity(1);
    shmemx_space_t space = SHMEMX_SPACE_INVALID;
    long long vm_before = vm_size();
    int maps_before = count_segment_maps();

    for (int i = 0; i < N; i++) sentinel[i] = witness[i] = 1000 + me;
    shmem_barrier_all();
    if (odd != SHMEM_TEAM_INVALID) {
        int n = shmem_team_n_pes(odd), t = shmem_team_my_pe(odd);
        int right = shmem_team_translate_pe(odd, (t + 1) % n, SHMEM_TEAM_WORLD);
        long *buf, *sum, *counter;

        CHECK(shmemx_create_symmetric_space_size(odd, 16 << 20, &space) == 0, "create");
        buf = shmemx_malloc_space(N * sizeof(long), space);
        sum = shmemx_malloc_space(N * sizeof(long), space);
        counter = shmemx_calloc_space(1, sizeof(long), space);
        CHECK(buf != NULL && sum != NULL && counter != NULL, "allocations");
        CHECK(!shmem_addr_accessible(buf, me ^ 1), "an even PE has no space memory");
        CHECK(shmem_addr_accessible(buf, right), "a member has space memory");
        for (int i = 0; i < N; i++) buf[i] = -1;
        shmem_team_sync(odd);
        for (int i = 0; i < N; i++) shmem_long_p(&buf[i], 100 * me + i, right);
        shmem_long_atomic_add(counter, me + 1, shmem_team_translate_pe(odd, 0, SHMEM_TEAM_WORLD));
        shmem_quiet();
        shmem_team_sync(odd);
        {
            int left = shmem_team_translate_pe(odd, (t + n - 1) % n, SHMEM_TEAM_WORLD);
            long expect_counter = 0;
            for (int i = 0; i < N; i++) {
                CHECK(buf[i] == 100 * left + i, "buf[%d] = %ld, expected %d", i, buf[i],
                      100 * left + i);
            }
            for (int k = 0; k < n; k++)
                expect_counter += shmem_team_translate_pe(odd, k, SHMEM_TEAM_WORLD) + 1;
            if (t == 0)
                CHECK(*counter == expect_counter, "counter %ld, expected %ld", *counter,
                      expect_counter);
        }
        CHECK(shmem_long_sum_reduce(odd, sum, buf, N) == 0, "sum_reduce");
        for (int i = 0; i < N; i++) {
            long expect = 0;
            for (int k = 0; k < n; k++)
                expect += 100 * shmem_team_translate_pe(odd, k, SHMEM_TEAM_WORLD) + i;
            CHECK(sum[i] == expect, "sum[%d] = %ld, expected %ld", i, sum[i], expect);
        }
        shmemx_free_space(counter, space);
        shmemx_free_space(sum, space);
        shmemx_free_space(buf, space);
        shmemx_destroy_space(space);
    } else {
        /* the even PEs: no call at all while the odd ones work, then
         * nothing may have been mapped or grown here */
        CHECK(shmemx_create_symmetric_space(odd, &space) != 0, "a non-member's create fails");
        CHECK(space == SHMEMX_SPACE_INVALID, "a non-member gets no space");
    }
    if (me % 2 == 0) {
        CHECK(count_segment_maps() == maps_before, "even PE: segment mappings %d -> %d",
              maps_before, count_segment_maps());
        CHECK(vm_size() - vm_before < (8 << 20), "even PE grew by %lld bytes",
              vm_size() - vm_before);
    }
    shmem_barrier_all();
    for (int i = 0; i < N; i++) {
        CHECK(sentinel[i] == 1000 + me && witness[i] == 1000 + me, "untouched[%d]", i);
    }
    shmem_team_destroy(odd);
    shmem_free(sentinel);
}

/* ---- every routine on space memory ---------------------------------------------------- */

static void test_space_ops(shmem_team_t team, shmemx_space_t space)
{
    shmem_team_t st = shmemx_space_team(space);
    int n = shmem_team_n_pes(st), t = shmem_team_my_pe(st);
    int rt = (t + 1) % n, lt = (t + n - 1) % n;
    int right = shmem_team_translate_pe(st, rt, SHMEM_TEAM_WORLD);
    int left = shmem_team_translate_pe(st, lt, SHMEM_TEAM_WORLD);
    int root = shmem_team_translate_pe(st, 0, SHMEM_TEAM_WORLD);
    long *a = shmemx_malloc_space(N * sizeof(long), space);
    long *b = shmemx_align_space(4096, N * sizeof(long), space);
    long *c = shmemx_calloc_space(N, sizeof(long), space);
    uint64_t *sig = shmemx_calloc_space(1, sizeof(uint64_t), space);
    long *lock = shmemx_calloc_space(1, sizeof(long), space);
    int *ivar = shmemx_calloc_space(1, sizeof(int), space);
    long src[N], got[N];
    shmem_ctx_t ctx;

    CHECK(a && b && c && sig && lock && ivar, "allocations");
    CHECK(((uintptr_t)b & 4095) == 0, "align_space: %p", (void *)b);
    for (int i = 0; i < N; i++) CHECK(c[i] == 0, "calloc_space c[%d]", i);
    CHECK(shmem_team_create_ctx(st, 0, &ctx) == 0, "ctx on the space's team");
    shmem_team_sync(st); /* everyone has looked at c before it is written */

    /* blocking, nbi, strided puts and gets; by world PE and by team PE */
    for (int i = 0; i < N; i++) src[i] = 1000 * me + i;
    shmem_long_put(a, src, N, right);
    shmem_ctx_long_put_nbi(ctx, b, src, N, rt);
    shmem_long_iput(c, src, 2, 1, N / 2, right);
    shmem_quiet();
    shmem_ctx_quiet(ctx);
    shmem_team_sync(st);
    for (int i = 0; i < N; i++) {
        CHECK(a[i] == 1000 * left + i, "put a[%d] = %ld", i, a[i]);
        CHECK(b[i] == 1000 * left + i, "ctx put_nbi b[%d] = %ld", i, b[i]);
        CHECK(c[i] == (i % 2 == 0 ? 1000 * left + i / 2 : 0), "iput c[%d] = %ld", i, c[i]);
    }
    shmem_long_get(got, a, N, right);
    for (int i = 0; i < N; i++) CHECK(got[i] == 1000 * me + i, "get[%d] = %ld", i, got[i]);
    shmem_ctx_long_get_nbi(ctx, got, b, N, lt);
    shmem_ctx_quiet(ctx);
    {
        int ll = shmem_team_translate_pe(st, (lt + n - 1) % n, SHMEM_TEAM_WORLD);
        for (int i = 0; i < N; i++)
            CHECK(got[i] == 1000 * ll + i, "ctx get_nbi[%d] = %ld", i, got[i]);
    }
    shmem_long_iget(got, a, 1, 2, N / 2, right);
    for (int i = 0; i < N / 2; i++) CHECK(got[i] == 1000 * me + 2 * i, "iget[%d]", i);
    CHECK(shmem_ctx_long_g(ctx, &a[3], rt) == 1000 * me + 3, "ctx g");
    shmem_team_sync(st);

    /* atomics: every member works on member 0's words */
    c[0] = 0;
    c[1] = 0;
    c[2] = -1;
    shmem_team_sync(st);
    shmem_long_atomic_add(&c[0], 2, root);
    shmem_ctx_long_atomic_inc(ctx, &c[0], 0);
    (void)shmem_long_atomic_fetch_add(&c[0], 10, root);
    (void)shmem_ctx_long_atomic_fetch_inc(ctx, &c[0], 0);
    (void)shmem_ulong_atomic_fetch_or((unsigned long *)&c[1], 1UL << t, root);
    shmem_ulong_atomic_and((unsigned long *)&c[2], ~(1UL << t), root);
    shmem_ulong_atomic_xor((unsigned long *)&c[1], 1UL << (t + 32), root);
    while (shmem_long_atomic_compare_swap(&c[3], t, t + 1, root) != t) {
    }
    shmem_quiet();
    shmem_team_sync(st);
    if (t == 0) {
        long bits = (1L << n) - 1;
        CHECK(c[0] == 14L * n, "add/inc/fetch_add/fetch_inc: %ld", c[0]);
        CHECK(c[1] == (bits | (bits << 32)), "or/xor: %lx", c[1]);
        CHECK(c[2] == ~bits, "and: %lx", c[2]);
        CHECK(c[3] == n, "cswap chain: %ld", c[3]);
    }
    CHECK(shmem_long_atomic_fetch(&c[0], root) == 14L * n, "atomic fetch");
    shmem_team_sync(st);
    (void)shmem_long_atomic_swap(&c[4 + t], 7, root);
    shmem_long_atomic_set(&c[4 + t], shmem_long_atomic_fetch(&c[4 + t], root) + 1, root);
    shmem_quiet();
    shmem_team_sync(st);
    if (t == 0)
        for (int k = 0; k < n; k++) CHECK(c[4 + k] == 8, "swap/set c[%d]", 4 + k);

    /* put with signal, signal wait; wait_until on an int a peer sets */
    shmem_long_put_signal(a, src, N, sig, 1, SHMEM_SIGNAL_ADD, right);
    shmem_signal_wait_until(sig, SHMEM_CMP_GE, 1);
    for (int i = 0; i < N; i++) CHECK(a[i] == 1000 * left + i, "put_signal a[%d]", i);
    shmem_ctx_int_atomic_set(ctx, ivar, 5, rt);
    shmem_int_wait_until(ivar, SHMEM_CMP_EQ, 5);
    CHECK(shmem_int_test(ivar, SHMEM_CMP_EQ, 5), "test on space memory");
    shmem_team_sync(st);

    /* team collectives with space buffers, on the user's team and on the space's */
    for (int i = 0; i < N; i++) a[i] = t + i;
    CHECK(shmem_long_sum_reduce(team, b, a, N) == 0, "sum_reduce");
    for (int i = 0; i < N; i++) CHECK(b[i] == (long)n * (n - 1) / 2 + (long)n * i, "sum[%d]", i);
    CHECK(shmem_long_max_reduce(st, b, a, N) == 0, "max_reduce");
    for (int i = 0; i < N; i++) CHECK(b[i] == n - 1 + i, "max[%d]", i);
    CHECK(shmem_long_broadcast(st, b, a, N, n - 1) == 0, "broadcast");
    for (int i = 0; i < N; i++) CHECK(b[i] == n - 1 + i, "bcast[%d]", i);
    {
        long *all = shmemx_malloc_space((size_t)n * sizeof(long), space);
        CHECK(shmem_long_fcollect(st, all, &a[0], 1) == 0, "fcollect");
        for (int k = 0; k < n; k++) CHECK(all[k] == k, "fcollect[%d]", k);
        shmemx_free_space(all, space);
    }

    /* a lock in space memory (its home is the space's first member) */
    c[8] = 0;
    shmem_team_sync(st);
    for (int r = 0; r < 20; r++) {
        shmem_set_lock(lock);
        shmem_long_p(&c[8], shmem_long_g(&c[8], root) + 1, root);
        shmem_quiet();
        shmem_clear_lock(lock);
    }
    shmem_team_sync(st);
    if (t == 0) CHECK(c[8] == 20L * n, "lock: %ld", c[8]);

    /* shmem_ptr: on-node members only, non-members never */
    {
        long *p = shmem_ptr(a, right);
        if (p != NULL) CHECK(p[0] == rt, "shmem_ptr read %ld", p[0]);
        CHECK(shmem_ptr(a, me ^ 1) == NULL, "shmem_ptr to a non-member");
        CHECK(shmem_team_ptr(st, a, t) == a, "team_ptr to myself");
    }
    shmem_team_sync(st);

    /* realloc keeps the contents (grown in place or moved) */
    for (int i = 0; i < N; i++) a[i] = 7 * i + t;
    shmem_team_sync(st);
    a = shmemx_realloc_space(a, 64 * N * sizeof(long), space);
    for (int i = 0; i < N; i++) CHECK(a[i] == 7 * i + t, "realloc kept a[%d] = %ld", i, a[i]);
    a[64 * N - 1] = t;
    shmem_long_p(&a[64 * N - 2], t, right);
    shmem_quiet();
    shmem_team_sync(st);
    CHECK(a[64 * N - 2] == lt, "put into the grown block");

    shmem_ctx_destroy(ctx);
    shmemx_free_space(lock, space);
    shmemx_free_space(ivar, space);
    shmemx_free_space(sig, space);
    shmemx_free_space(c, space);
    shmemx_free_space(b, space);
    shmemx_free_space(a, space);
}

static void mode_all(void)
{
    shmem_team_t mine = split_parity(me % 2), other_parity = split_parity(1 - me % 2);
    shmemx_space_t space, second;
    long *x;

    CHECK(other_parity == SHMEM_TEAM_INVALID, "one team each");
    /* two disjoint teams each create a space at the same time */
    CHECK(shmemx_create_symmetric_space(mine, &space) == 0, "create");
    CHECK(shmemx_create_symmetric_space(other_parity, &second) != 0, "non-member create");
    test_space_ops(mine, space);

    /* objects of two spaces side by side; different offsets, no mixing */
    CHECK(shmemx_create_symmetric_space_size(mine, 1 << 20, &second) == 0, "second space");
    x = shmemx_malloc_space(sizeof(long), second);
    *x = me;
    shmem_team_sync(mine);
    CHECK(shmem_long_g(x, shmem_team_translate_pe(mine, 0, SHMEM_TEAM_WORLD)) ==
              shmem_team_translate_pe(mine, 0, SHMEM_TEAM_WORLD),
          "second space g");
    shmem_team_sync(mine);
    shmemx_destroy_space(second); /* frees x with it */

    /* the space outlives the team it was made from */
    shmem_team_destroy(mine);
    test_space_ops(shmemx_space_team(space), space);
    shmemx_destroy_space(space);

    /* create/destroy cycles with live objects: destroy frees everything
     * (LeakSanitizer checks this under --enable-sanitizers) */
    mine = split_parity(me % 2);
    for (int r = 0; r < 100; r++) {
        CHECK(shmemx_create_symmetric_space_size(mine, 1 << 20, &space) == 0, "cycle %d", r);
        x = shmemx_malloc_space(1000, space);
        (void)shmemx_malloc_space(5000, space);
        shmem_long_p(x, r, shmem_team_translate_pe(mine, 0, SHMEM_TEAM_WORLD));
        shmemx_destroy_space(space);
    }
    /* one left live: shmem_finalize releases it */
    CHECK(shmemx_create_symmetric_space_size(mine, 1 << 20, &space) == 0, "left for finalize");
    (void)shmemx_malloc_space(64, space);
    shmem_team_destroy(mine);
    shmem_barrier_all();
}

/* ---- timings for docs/spaces.md ------------------------------------------------------ */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* medians of create+destroy and of malloc+free(1 int) in a space, and
 * shmem_malloc+free on the world, for teams of 2..npes (the first k PEs) */
static void mode_bench(int reps)
{
    double *t_create = malloc(sizeof(double) * (size_t)reps);
    double *t_alloc = malloc(sizeof(double) * (size_t)reps);
    double *t_heap = malloc(sizeof(double) * (size_t)reps);

    if (me == 0) printf("team_pes create_us malloc_us shmem_malloc_us(world %d PEs)\n", npes);
    for (int k = 2; k <= npes; k++) {
        shmem_team_t team;
        shmemx_space_t space;

        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, k, NULL, 0, &team);
        for (int r = 0; r < reps; r++) {
            double t0;
            if (team != SHMEM_TEAM_INVALID) {
                shmem_team_sync(team);
                t0 = now_us();
                shmemx_create_symmetric_space(team, &space);
                t_create[r] = now_us() - t0;
                shmem_team_sync(team);
                t0 = now_us();
                int *p = shmemx_malloc_space(sizeof(int), space);
                t_alloc[r] = now_us() - t0;
                shmemx_free_space(p, space);
                shmemx_destroy_space(space);
            }
            shmem_barrier_all();
            t0 = now_us();
            int *q = shmem_malloc(sizeof(int));
            t_heap[r] = now_us() - t0;
            shmem_free(q);
        }
        if (me == 0) {
            qsort(t_create, (size_t)reps, sizeof(double), cmp_double);
            qsort(t_alloc, (size_t)reps, sizeof(double), cmp_double);
            qsort(t_heap, (size_t)reps, sizeof(double), cmp_double);
            printf("%d %.1f %.2f %.2f\n", k, t_create[reps / 2], t_alloc[reps / 2],
                   t_heap[reps / 2]);
            fflush(stdout);
        }
        shmem_team_destroy(team);
    }
    free(t_create);
    free(t_alloc);
    free(t_heap);
}

/* ---- errors: each ends the job with one line ----------------------------------------- */

static void mode_error(const char *mode)
{
    shmem_team_t odd = split_parity(1);
    shmemx_space_t space = SHMEMX_SPACE_INVALID, other = SHMEMX_SPACE_INVALID;
    long *p = NULL;

    if (odd != SHMEM_TEAM_INVALID) {
        shmemx_create_symmetric_space_size(odd, 1 << 20, &space);
        p = shmemx_malloc_space(64, space);
    }
    if (strcmp(mode, "nonmember") == 0) {
        if (me == 0) {
            shmemx_create_symmetric_space(odd, &space); /* returns nonzero */
            (void)shmemx_malloc_space(8, space);
        }
    } else if (strcmp(mode, "otherspace") == 0 && odd != SHMEM_TEAM_INVALID) {
        shmemx_create_symmetric_space_size(odd, 1 << 20, &other);
        shmemx_free_space(p, other);
    } else if (strcmp(mode, "doublefree") == 0 && odd != SHMEM_TEAM_INVALID) {
        shmemx_free_space(p, space);
        shmemx_free_space(p, space);
    } else if (strcmp(mode, "destroyed") == 0 && odd != SHMEM_TEAM_INVALID) {
        shmemx_destroy_space(space);
        (void)shmemx_malloc_space(8, space);
    } else if (strcmp(mode, "oom") == 0 && odd != SHMEM_TEAM_INVALID) {
        (void)shmemx_malloc_space(3 << 20, space);
    } else if (strcmp(mode, "notmember_put") == 0 && me == 1) {
        shmem_long_p(p, 1, 0); /* PE 0 is even: it has no such memory */
    } else if (strcmp(mode, "freed_put") == 0 && odd != SHMEM_TEAM_INVALID) {
        shmemx_destroy_space(space);
        if (me == 1) shmem_long_p(p, 1, 1);
    } else if (strcmp(mode, "destroy_own_team") == 0 && me == 1) {
        shmem_team_destroy(shmemx_space_team(space));
    }
    shmem_barrier_all();
    shmem_barrier_all();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";

    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (strcmp(mode, "bench") == 0) {
        mode_bench(argc > 2 ? atoi(argv[2]) : 200);
    } else if (npes < 2 || npes % 2 != 0) {
        if (me == 0) fprintf(stderr, "mp_shmem_space needs an even number of PEs\n");
        errors++;
    } else if (strcmp(mode, "accept") == 0) {
        mode_accept();
    } else if (strcmp(mode, "all") == 0) {
        mode_all();
    } else {
        mode_error(mode);
    }
    shmem_finalize();
    if (errors > 0) fprintf(stderr, "PE %d: %d check(s) failed\n", me, errors);
    return errors > 0;
}
