/*
 * OpenSHMEM tests, launched as N PEs under oshrun; one mode per run.
 *   mp_shmem rma|amo|sync|coll|heap|threads|away|away-calls|badpe|badaddr|exitN
 * Every mode checks real values and exits 0 only if all matched.
 * badpe and badaddr must end the job with a clear error (non-zero).
 */
#include <shmem.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/common/mp_check.h"

static int me, npes, errors;

#define N 1000
static long static_array[N];
static long static_counter;
static int static_int;
static double static_double;

static void mode_rma(void)
{
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long *heap = shmem_malloc(N * sizeof(long)), src[N];
    int *ints = shmem_malloc(N * sizeof(int));
    double *dbl = shmem_malloc(8 * sizeof(double));
    short *shorts = shmem_malloc(2 * N * sizeof(short));
    char *bytes = shmem_malloc(4099);

    for (int i = 0; i < N; i++) src[i] = me * 100000L + i;
    shmem_long_put(heap, src, N, right);
    shmem_putmem(static_array, src, sizeof(src), right);
    for (int i = 0; i < N; i++) shmem_int_p(&ints[i], me * 7 + i, right);
    shmem_double_p(&dbl[3], 0.5 + me, right);
    memset(bytes, 0, 4099);
    {
        char odd[4099];
        for (int i = 0; i < 4099; i++) odd[i] = (char)(me + i);
        shmem_barrier_all();
        shmem_putmem(bytes + 1, odd, 4097, right); /* unaligned, odd length */
    }
    /* strided: every other short */
    {
        short s[N];
        for (int i = 0; i < N; i++) s[i] = (short)(me + i);
        shmem_short_iput(shorts, s, 2, 1, N, right);
    }
    shmem_barrier_all();
    for (int i = 0; i < N; i++) {
        CHECK(heap[i] == left * 100000L + i, "heap[%d] = %ld", i, heap[i]);
        CHECK(static_array[i] == left * 100000L + i, "static[%d] = %ld", i, static_array[i]);
        CHECK(ints[i] == left * 7 + i, "ints[%d] = %d", i, ints[i]);
        CHECK(shorts[2 * i] == (short)(left + i), "shorts[%d] = %d", 2 * i, shorts[2 * i]);
    }
    CHECK(dbl[3] == 0.5 + left, "dbl = %g", dbl[3]);
    CHECK(bytes[0] == 0 && bytes[4098] == 0, "bytes outside the put were written");
    for (int i = 0; i < 4097; i++) {
        CHECK(bytes[1 + i] == (char)(left + i), "bytes[%d]", 1 + i);
        if (errors) break;
    }
    /* gets from the left, heap and static, g */
    {
        long got[N];
        shmem_long_get(got, heap, N, left);
        for (int i = 0; i < N; i++) {
            long expect = ((left + npes - 1) % npes) * 100000L + i;
            CHECK(got[i] == expect, "get[%d] = %ld, expected %ld", i, got[i], expect);
        }
        CHECK(shmem_long_g(&static_array[5], left) == ((left + npes - 1) % npes) * 100000L + 5,
              "g static");
        shmem_getmem(got, static_array, 16, left);
        CHECK(got[1] == ((left + npes - 1) % npes) * 100000L + 1, "getmem static");
    }
    /* shmem_ptr: every peer of my node, heap and static data (unless the
     * network backend was forced for every peer; btl/mpi maps its pool
     * window when the whole job is on one node, unless told not to) */
    const char *forced = getenv("RMB_BTL"), *mpi_ls = getenv("RMB_MPI_LOAD_STORE");
    const char *mpi_pool = getenv("RMB_MPI_POOL_SIZE");
    int mapped = forced == NULL || (strcmp(forced, "ofi") != 0 && strcmp(forced, "mpi") != 0);
    if (forced != NULL && strcmp(forced, "mpi") == 0) {
        mapped = shmem_team_n_pes(SHMEM_TEAM_SHARED) == npes &&
                 (mpi_ls == NULL || strcmp(mpi_ls, "no") != 0) &&
                 (mpi_pool == NULL || strcmp(mpi_pool, "0") != 0);
    }
    for (int p = 0; p < npes; p++) {
        long *ph = shmem_ptr(heap, p), *ps = shmem_ptr(static_array, p);
        int on_node = shmem_team_translate_pe(SHMEM_TEAM_WORLD, p, SHMEM_TEAM_SHARED) >= 0;
        CHECK(!mapped || !on_node || (ph != NULL && ps != NULL), "shmem_ptr to PE %d is NULL", p);
        if (ph && ps) {
            long expect = ((p + npes - 1) % npes) * 100000L + 9;
            CHECK(ph[9] == expect && ps[9] == expect, "shmem_ptr data of PE %d", p);
        }
    }
    CHECK(shmem_ptr(src, right) == NULL || right == me, "shmem_ptr of a stack address");
    CHECK(shmem_addr_accessible(heap, right) && shmem_addr_accessible(static_array, right) &&
              !shmem_addr_accessible(src, right),
          "addr_accessible");
    shmem_barrier_all();
    shmem_free(bytes);
    shmem_free(shorts);
    shmem_free(dbl);
    shmem_free(ints);
    shmem_free(heap);
}

static void mode_amo(void)
{
    long *counter = shmem_malloc(sizeof(long));
    unsigned int *bits = shmem_malloc(sizeof(unsigned int));
    int iters = 2000;
    long sum_old = 0;

    *counter = 0;
    static_counter = 0;
    *bits = 0;
    static_int = 0;
    static_double = 0;
    shmem_barrier_all();
    for (int i = 0; i < iters; i++) {
        sum_old += shmem_long_atomic_fetch_add(counter, 3, 0);
        shmem_long_atomic_inc(&static_counter, 0);
        /* an increment through compare-and-swap */
        int old, seen = shmem_int_atomic_fetch(&static_int, 0);
        while ((old = shmem_int_atomic_compare_swap(&static_int, seen, seen + 1, 0)) != seen)
            seen = old;
    }
    shmem_uint_atomic_or(bits, 1u << me, (me + 1) % npes);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(*counter == 3L * iters * npes, "counter %ld, expected %ld", *counter,
              3L * iters * npes);
        CHECK(static_counter == (long)iters * npes, "static counter %ld", static_counter);
        CHECK(static_int == iters * npes, "cswap counter %d", static_int);
    }
    CHECK(*bits == 1u << ((me + npes - 1) % npes), "or bits %#x", *bits);
    /* swap / set / xor / and, and float swap */
    shmem_barrier_all();
    if (me == npes - 1) {
        long prev = shmem_long_atomic_swap(counter, 42, 0);
        CHECK(prev == 3L * iters * npes, "swap returned %ld", prev);
        shmem_double_atomic_set(&static_double, 2.25, 0);
        CHECK(shmem_double_atomic_swap(&static_double, 4.5, 0) == 2.25, "double swap");
        shmem_uint_atomic_xor(bits, 0xffu, me);
        CHECK(shmem_uint_atomic_fetch_and(bits, 0x0fu, me) ==
                  ((1u << ((me + npes - 1) % npes)) ^ 0xffu),
              "fetch_and");
    }
    shmem_barrier_all();
    if (me == 0) {
        CHECK(*counter == 42, "after swap %ld", *counter);
        CHECK(static_double == 4.5, "double %g", static_double);
    }
    /* the fetch_add results seen by all PEs are distinct multiples of 3:
     * their total is 3 * (0 + 1 + ... + iters*npes - 1) */
    {
        long total = 0, *all = shmem_malloc(sizeof(long) * (size_t)npes),
             *mine = shmem_malloc(sizeof(long));
        static long pSync[SHMEM_REDUCE_SYNC_SIZE], pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
        *mine = sum_old;
        shmem_barrier_all();
        shmem_long_sum_to_all(all, mine, 1, 0, 0, npes, pWrk, pSync);
        total = all[0];
        long n = (long)iters * npes;
        CHECK(total == 3 * n * (n - 1) / 2, "fetch_add results sum %ld, expected %ld", total,
              3 * n * (n - 1) / 2);
        shmem_free(mine);
        shmem_free(all);
    }
    shmem_free(bits);
    shmem_free(counter);
}

static void mode_sync(void)
{
    long *flag = shmem_calloc(1, sizeof(long));
    int *token = shmem_calloc(1, sizeof(int));

    /* a token passed around the ring 5 times with wait_until */
    for (int round = 1; round <= 5; round++) {
        if (me == 0) {
            shmem_int_p(token, round, (me + 1) % npes);
            shmem_int_wait_until(token, SHMEM_CMP_GE, npes > 1 ? round : 0);
        } else {
            shmem_int_wait_until(token, SHMEM_CMP_EQ, round);
            shmem_int_p(token, round, (me + 1) % npes);
        }
    }
    shmem_barrier_all();
    CHECK(*token == 5 || npes == 1, "token %d", *token);
    /* test() polls without blocking; put, fence, then the flag */
    if (me == 0) {
        for (int p = 1; p < npes; p++) {
            shmem_long_p(&static_array[0], 1234, p);
            shmem_fence();
            shmem_long_atomic_set(flag, 1, p);
        }
    } else {
        while (!shmem_long_test(flag, SHMEM_CMP_EQ, 1)) {
        }
        CHECK(static_array[0] == 1234, "data behind the flag: %ld", static_array[0]);
    }
    shmem_barrier_all();
    shmem_free(token);
    shmem_free(flag);
}

static void mode_coll(void)
{
    static long pSync[SHMEM_BCAST_SYNC_SIZE], pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static double dWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    long *src = shmem_malloc(16 * sizeof(long)),
         *dst = shmem_malloc(16 * (size_t)npes * sizeof(long));
    double *dsrc = shmem_malloc(4 * sizeof(double)), *ddst = shmem_malloc(4 * sizeof(double));
    int *isrc = shmem_malloc(4 * sizeof(int)), *idst = shmem_malloc(4 * (size_t)npes * sizeof(int));

    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    for (int root = 0; root < npes; root++) {
        for (int i = 0; i < 16; i++) {
            src[i] = root * 10 + i;
            dst[i] = -1;
        }
        shmem_broadcast64(dst, src, 16, root, 0, 0, npes, pSync);
        for (int i = 0; i < 16 && me != root; i++)
            CHECK(dst[i] == root * 10 + i, "bcast root %d [%d] = %ld", root, i, dst[i]);
        /* the deprecated form leaves the root's dest alone */
        for (int i = 0; i < 16 && me == root; i++)
            CHECK(dst[i] == -1, "bcast root %d wrote its own dest", root);
    }
    /* fcollect and collect (PE p contributes p+1 ints) */
    for (int i = 0; i < 4; i++) isrc[i] = me * 10 + i;
    shmem_fcollect32(idst, isrc, 4, 0, 0, npes, pSync);
    for (int p = 0; p < npes; p++)
        for (int i = 0; i < 4; i++)
            CHECK(idst[p * 4 + i] == p * 10 + i, "fcollect [%d]", p * 4 + i);
    for (int i = 0; i < 16; i++) src[i] = me * 100 + i;
    shmem_collect64(dst, src, (size_t)(me % 4) + 1, 0, 0, npes, pSync);
    for (int p = 0, at = 0; p < npes; p++)
        for (int i = 0; i < p % 4 + 1; i++, at++)
            CHECK(dst[at] == p * 100 + i, "collect [%d] = %ld", at, dst[at]);
    /* reductions over everyone, then over the odd PEs (start 1, stride 2) */
    for (int i = 0; i < 4; i++) {
        src[i] = me + i;
        dsrc[i] = 0.5 * (me + 1);
    }
    shmem_long_sum_to_all(dst, src, 4, 0, 0, npes, pWrk, pSync);
    for (int i = 0; i < 4; i++)
        CHECK(dst[i] == (long)npes * (npes - 1) / 2 + (long)i * npes, "sum [%d] = %ld", i, dst[i]);
    shmem_long_max_to_all(dst, src, 4, 0, 0, npes, pWrk, pSync);
    CHECK(dst[0] == npes - 1, "max %ld", dst[0]);
    shmem_long_min_to_all(dst, src, 4, 0, 0, npes, pWrk, pSync);
    CHECK(dst[2] == 2, "min %ld", dst[2]);
    shmem_double_prod_to_all(ddst, dsrc, 4, 0, 0, npes, dWrk, pSync);
    {
        double expect = 1;
        for (int p = 0; p < npes; p++) expect *= 0.5 * (p + 1);
        CHECK(ddst[1] == expect, "prod %g, expected %g", ddst[1], expect);
    }
    src[0] = 1L << me;
    shmem_long_or_to_all(dst, src, 1, 0, 0, npes, pWrk, pSync);
    CHECK(dst[0] == (1L << npes) - 1, "or %#lx", dst[0]);
    shmem_long_xor_to_all(dst, src, 1, 0, 0, npes, pWrk, pSync);
    CHECK(dst[0] == (1L << npes) - 1, "xor %#lx", dst[0]);
    if (npes >= 3 && (me & 1)) {
        int size = npes / 2;
        src[0] = me;
        shmem_long_sum_to_all(dst, src, 1, 1, 1, size, pWrk, pSync);
        CHECK(dst[0] == (long)size * size, "odd-set sum %ld, expected %ld", dst[0],
              (long)size * size);
        shmem_barrier(1, 1, size, pSync);
    }
    shmem_barrier_all();
    shmem_free(idst);
    shmem_free(isrc);
    shmem_free(ddst);
    shmem_free(dsrc);
    shmem_free(dst);
    shmem_free(src);
}

static void mode_heap(void)
{
    void *ptrs[64];
    char *a = shmem_align(4096, 100), *r;

    CHECK(((uintptr_t)a & 4095) == 0, "shmem_align(4096) gave %p", (void *)a);
    CHECK(shmem_align(3, 10) == NULL, "shmem_align(3) did not fail");
    CHECK(shmem_malloc(0) == NULL, "shmem_malloc(0) is not NULL");
    for (int i = 0; i < 64; i++) ptrs[i] = shmem_malloc((size_t)(i * 37 % 500) + 1);
    for (int i = 0; i < 64; i += 2) shmem_free(ptrs[i]);
    r = shmem_realloc(ptrs[1], 10000);
    CHECK(r != NULL, "realloc");
    {
        long *z = shmem_calloc(100, sizeof(long));
        long nonzero = 0;
        for (int i = 0; i < 100; i++) nonzero |= z[i];
        CHECK(z != NULL && nonzero == 0, "calloc");
        /* symmetric: the same offsets everywhere, usable for RMA */
        z[0] = me;
        shmem_barrier_all();
        CHECK(shmem_long_g(z, (me + 1) % npes) == (me + 1) % npes, "calloc'd block is symmetric");
        shmem_free(z);
    }
    for (int i = 3; i < 64; i += 2) shmem_free(ptrs[i]);
    shmem_free(r);
    shmem_free(a);
    {
        int major, minor;
        char name[SHMEM_MAX_NAME_LEN];
        shmem_info_get_version(&major, &minor);
        shmem_info_get_name(name);
        CHECK(major == 1 && minor == 5 && strstr(name, "rmb") != NULL, "info %d.%d %s", major,
              minor, name);
    }
}

/* SHMEM_THREAD_MULTIPLE: THREADS threads per PE put, get and add to every
 * PE at once, each in its own slice, on the default context and on one
 * context per thread. */
#define THREADS 4
#define TITERS  300
static long *t_slots;   /* [npes * THREADS * TITERS] on every PE */
static long *t_counter; /* fetch-add target, one per PE */

static void *thread_body(void *arg)
{
    long t = (long)arg;
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;

    if (t % 2 == 1 && shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) != 0) {
        ctx = SHMEM_CTX_DEFAULT;
    }
    for (long i = 0; i < TITERS; i++) {
        for (int pe = 0; pe < npes; pe++) {
            long v = ((long)me << 32) | (t << 16) | i, back = -1;
            long *slot = &t_slots[(me * THREADS + t) * TITERS + i];
            shmem_ctx_long_p(ctx, slot, v, pe);
            shmem_ctx_quiet(ctx);
            back = shmem_ctx_long_g(ctx, slot, pe);
            CHECK(back == v, "thread %ld: PE %d slot %ld holds %lx, want %lx", t, pe, i, back, v);
            shmem_ctx_long_atomic_add(ctx, t_counter, 1, pe);
        }
    }
    shmem_ctx_quiet(ctx);
    if (ctx != SHMEM_CTX_DEFAULT) {
        shmem_ctx_destroy(ctx);
    }
    return NULL;
}

static void mode_threads(void)
{
    pthread_t th[THREADS];
    int provided = -1;

    shmem_query_thread(&provided);
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided thread level %d", provided);
    t_slots = shmem_calloc((size_t)npes * THREADS * TITERS, sizeof(long));
    t_counter = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    for (long t = 0; t < THREADS; t++) {
        pthread_create(&th[t], NULL, thread_body, (void *)t);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
    }
    shmem_barrier_all();
    CHECK(*t_counter == (long)npes * THREADS * TITERS, "counter %ld, want %ld", *t_counter,
          (long)npes * THREADS * TITERS);
    for (int p = 0; p < npes; p++) {
        for (long t = 0; t < THREADS; t++) {
            long i = TITERS - 1, want = ((long)p << 32) | (t << 16) | i;
            CHECK(t_slots[(p * THREADS + t) * TITERS + i] == want, "slot of PE %d thread %ld", p,
                  t);
        }
    }
    shmem_barrier_all();
    shmem_free(t_counter);
    shmem_free(t_slots);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A PE away from the network right after a busy phase still has its
 * memory served to PEs on other nodes, where the network needs the target's
 * progress (TCP): its btl's helper thread takes over, within a few of its
 * intervals (btl_helper.h). The last PE is away; every other PE updates and
 * reads its counter AWAY_OPS times meanwhile; the away PE stays away until
 * it finds every update with a plain load, AWAY_LIMIT_SEC at most (a stall
 * lasts for good; a loaded 2-core machine with sanitizers needs seconds).
 * Away four ways: computing (no library call); calling the library without
 * needing the network (a quiet with nothing in flight and an atomic on its
 * own memory, in a loop, as a PE waiting for its peers' atomics does);
 * streaming non-fetching atomics to PE 0 (held back in batches); polling (a
 * signal fetch and a test already satisfied, in a loop). Calls that do not
 * progress the network must not keep the helper away: over btl/ucx the
 * peers' atomics stalled for good (tests-sos' atomic_nbi hung), over btl/ofi
 * behind the stream. away-calls: the last three only, for a backend without
 * its helper thread, where the calls themselves must serve the peers
 * (rpipe_sym_poll). */
#define AWAY_LIMIT_SEC 20.0
#define AWAY_OPS       50
enum { AWAY_COMPUTE, AWAY_QUIET, AWAY_STREAM, AWAY_POLL, AWAY_WAYS };
static const char *const away_what[] = {"computing", "calling quiet", "streaming atomics",
                                        "polling"};
static uint64_t away_signal; /* symmetric, never signalled */

static void away_phase(long *counter, long *sink, int how)
{
    int target = npes - 1;
    long issued = 0;

    *counter = 0;
    *sink = 0;
    shmem_barrier_all();
    if (me == target) {
        long expected = (long)(npes - 1) * AWAY_OPS;
        double start = now_s();
        while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < expected &&
               now_s() < start + AWAY_LIMIT_SEC) {
            if (how == AWAY_QUIET) {
                shmem_long_atomic_add(sink, 1, me);
                shmem_quiet();
                issued++;
            } else if (how == AWAY_STREAM) {
                shmem_long_atomic_add(sink, 1, 0);
                issued++;
            } else if (how == AWAY_POLL) {
                issued += shmem_signal_fetch(&away_signal) != 0;
                issued += !shmem_uint64_test(&away_signal, SHMEM_CMP_EQ, 0);
            }
        }
        long seen = __atomic_load_n(counter, __ATOMIC_ACQUIRE);
        CHECK(seen == expected,
              "after %.1f s away (%s): %ld of %ld updates landed (nobody served my memory)",
              now_s() - start, away_what[how], seen, expected);
    } else {
        for (int i = 0; i < AWAY_OPS; i++) {
            long old = shmem_long_atomic_fetch_add(counter, 1, target);
            CHECK(old >= 0 && old < (long)(npes - 1) * AWAY_OPS, "fetch_add returned %ld", old);
            CHECK(shmem_long_g(counter, target) > old, "get after fetch_add");
        }
    }
    shmem_barrier_all();
    CHECK(shmem_long_g(counter, target) == (long)(npes - 1) * AWAY_OPS, "final count");
    CHECK(how != AWAY_POLL || issued == 0, "polling: the signal changed");
    if (me == target && (how == AWAY_QUIET || how == AWAY_STREAM)) {
        long landed = shmem_long_g(sink, how == AWAY_QUIET ? me : 0);
        CHECK(landed == issued, "%s: %ld of %ld own atomics landed", away_what[how], landed,
              issued);
    }
    shmem_barrier_all();
}

static void mode_away(int first_way)
{
    long *counter = shmem_malloc(sizeof(long)), *done = shmem_malloc(sizeof(long));
    long *sink = shmem_malloc(sizeof(long));
    int partner = (me + 1) % npes;
    long sum = 0;

    *done = 0;
    shmem_barrier_all();
    for (int how = first_way; how < AWAY_WAYS; how++) {
        /* busy phase: the helper threads see their PEs drive the network */
        for (int i = 0; i < 2000; i++) sum += shmem_long_atomic_fetch_add(done, 0, partner);
        CHECK(sum == 0, "busy phase: fetch_add of 0 returned %ld in total", sum);
        shmem_barrier_all();
        away_phase(counter, sink, how);
    }
    shmem_free(sink);
    shmem_free(done);
    shmem_free(counter);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "rma";
    static long pSync[SHMEM_REDUCE_SYNC_SIZE], pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    long *errs, *total;

    if (!strcmp(mode, "threads")) {
        int provided;
        shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    } else {
        shmem_init();
    }
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (!strcmp(mode, "rma"))
        mode_rma();
    else if (!strcmp(mode, "amo"))
        mode_amo();
    else if (!strcmp(mode, "sync"))
        mode_sync();
    else if (!strcmp(mode, "coll"))
        mode_coll();
    else if (!strcmp(mode, "heap"))
        mode_heap();
    else if (!strcmp(mode, "threads"))
        mode_threads();
    else if (!strcmp(mode, "away"))
        mode_away(AWAY_COMPUTE);
    else if (!strcmp(mode, "away-calls"))
        mode_away(AWAY_QUIET); /* no helper thread: only calls serve peers */
    else if (!strcmp(mode, "badpe"))
        shmem_long_p(&static_counter, 1, npes + 3);
    else if (!strcmp(mode, "badaddr")) {
        long local = 0;
        shmem_long_p(&local, 1, 0);
    } else if (!strncmp(mode, "exit", 4)) {
        /* the last PE ends the job while the others wait in a barrier */
        if (me == npes - 1) shmem_global_exit(atoi(mode + 4));
        shmem_barrier_all();
        fprintf(stderr, "mp_shmem: PE %d passed a barrier PE %d never entered\n", me, npes - 1);
        return 3;
    } else {
        fprintf(
            stderr,
            "usage: mp_shmem rma|amo|sync|coll|heap|threads|away|away-calls|badpe|badaddr|exitN\n");
        return 2;
    }

    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    errs = shmem_malloc(sizeof(long));
    total = shmem_malloc(sizeof(long));
    *errs = errors;
    shmem_barrier_all();
    shmem_long_sum_to_all(total, errs, 1, 0, 0, npes, pWrk, pSync);
    if (me == 0) printf("mp_shmem %s on %d PEs: %s\n", mode, npes, *total ? "FAILED" : "ok");
    long result = *total;
    shmem_free(total);
    shmem_free(errs);
    shmem_finalize();
    return result ? 1 : 0;
}
