/*
 * OpenSHMEM point-to-point and collective timings, measured the way the
 * SKaMPI-OpenSHMEM paper (reference 001) recommends: one timer around a
 * whole loop (a timer call per iteration costs more than an on-node put),
 * blocking calls kept apart from their completion, and broadcasts timed
 * with acknowledgements so consecutive ones cannot overlap.
 *   oshrun -n N bench/shmem_bench [ITERS] [MAX_BYTES]
 * Standard OpenSHMEM 1.4 only, so the same source builds with any oshcc
 * (e.g. Open MPI's, for comparison). PE 0 talks to PE N-1.
 *
 * Point-to-point rows, per message size (µs per operation unless noted):
 *   put_call   shmem_putmem alone (one quiet after the whole loop)
 *   put_quiet  shmem_putmem + shmem_quiet
 *   nbi_post   shmem_putmem_nbi alone
 *   quiet      shmem_quiet right after one shmem_putmem_nbi
 *   overlap    time in put_nbi + quiet when separated by computation lasting
 *              twice put_quiet (equals put_quiet when nothing overlaps)
 *   get        shmem_getmem
 *   put_GBs    bandwidth of back-to-back puts, one quiet at the end
 * Collective rows (µs per call): barrier_all, broadcast64 (acknowledged, see
 * bcast_ack), sum_to_all and fcollect64 per element count.
 */
#include <shmem.h>

#include "bench_args.h" /* same directory: builds with any oshcc */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me, npes, peer;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Busy work of about `seconds`, not optimized away. */
static volatile double sink;
static void compute(double seconds)
{
    double end = now() + seconds, x = 1.0;
    while (now() < end) {
        for (int i = 0; i < 64; i++) x = x * 1.0000001 + 1e-9;
    }
    sink = x;
}

#define TRIALS 5
static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over TRIALS of the mean time per iteration of BODY on PE 0 (the
 * other PEs wait in the barriers). */
#define TIME_PE0(iters, BODY)                                                                      \
    ({                                                                                             \
        double r_[TRIALS];                                                                         \
        for (int t_ = 0; t_ < TRIALS; t_++) {                                                      \
            shmem_barrier_all();                                                                   \
            double t0_ = now();                                                                    \
            if (me == 0) {                                                                         \
                for (long i_ = 0; i_ < (iters); i_++) {                                            \
                    BODY;                                                                          \
                }                                                                                  \
            }                                                                                      \
            r_[t_] = (now() - t0_) / (double)(iters);                                              \
            shmem_quiet();                                                                         \
            shmem_barrier_all();                                                                   \
        }                                                                                          \
        qsort(r_, TRIALS, sizeof(double), cmpd);                                                   \
        r_[TRIALS / 2] * 1e6;                                                                      \
    })

static long iters_for(size_t bytes, long base)
{
    long it = base;
    while (it > 20 && (double)it * (double)bytes > 4e8) it /= 2;
    return it;
}

static void p2p(long base_iters, size_t max_bytes, char *remote, char *local)
{
    if (me == 0) {
        printf("# point-to-point, PE 0 -> PE %d, µs per operation (put_GBs: GB/s)\n", peer);
        printf("%-10s %10s %10s %10s %10s %10s %10s %10s\n", "bytes", "put_call", "put_quiet",
               "nbi_post", "quiet", "overlap", "get", "put_GBs");
    }
    for (size_t s = 8; s <= max_bytes; s *= 8) {
        long it = iters_for(s, base_iters);
        double call = TIME_PE0(it, shmem_putmem(remote, local, s, peer));
        double pq = TIME_PE0(it, {
            shmem_putmem(remote, local, s, peer);
            shmem_quiet();
        });
        double post = TIME_PE0(it, shmem_putmem_nbi(remote, local, s, peer));
        double get = TIME_PE0(it, shmem_getmem(local, remote, s, peer));
        /* quiet alone and overlap need a timer per iteration: subtract the
         * timer's own cost, measured the same way */
        double tq = 0, tc = 0, tover = 0, tnone = 0;
        long oit = it < 2000 ? it : 2000;
        if (me == 0) {
            double a, b;
            for (long i = 0; i < oit; i++) {
                a = now();
                b = now();
                tnone += b - a;
                shmem_putmem_nbi(remote, local, s, peer);
                a = now();
                shmem_quiet();
                b = now();
                tq += b - a;
                a = now();
                shmem_putmem_nbi(remote, local, s, peer);
                b = now();
                tc = b - a;
                compute(2 * pq * 1e-6);
                a = now();
                shmem_quiet();
                b = now();
                tover += tc + (b - a);
            }
        }
        shmem_barrier_all();
        double bw_t = TIME_PE0(1, {
            for (long k = 0; k < it; k++) shmem_putmem(remote, local, s, peer);
            shmem_quiet();
        });
        if (me == 0) {
            double timer = tnone / (double)oit;
            double quiet = (tq / (double)oit - timer) * 1e6;
            double over = (tover / (double)oit - 2 * timer) * 1e6;
            printf("%-10zu %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %10.2f\n", s, call, pq, post,
                   quiet < 0 ? 0 : quiet, over < 0 ? 0 : over, get,
                   (double)s * (double)it / (bw_t * 1e-6) / 1e9);
            fflush(stdout);
        }
    }
}

/* Broadcast timed with acknowledgements (reference 001, Algorithm 3): for
 * each non-root PE in turn, the root times broadcast + that PE's fetch-inc
 * acknowledgement, minus the acknowledgement alone (measured first). The
 * result is the slowest PE's mean. */
static double bcast_ack(long iters, long *dst, long *src, size_t nelems, long *pSync, int *ack)
{
    double worst = 0;

    for (int task = 1; task < npes; task++) {
        double ack_time = 0, total;
        shmem_barrier_all();
        if (me == 0) {
            double t0 = now();
            for (long i = 0; i < iters; i++) {
                shmem_int_p(ack, 1, task); /* ping */
                shmem_int_wait_until(ack, SHMEM_CMP_EQ, 1);
                *ack = 0;
            }
            ack_time = (now() - t0) / (double)iters / 2;
        } else if (me == task) {
            for (long i = 0; i < iters; i++) {
                shmem_int_wait_until(ack, SHMEM_CMP_EQ, 1);
                *ack = 0;
                shmem_int_atomic_fetch_inc(ack, 0);
            }
        }
        shmem_barrier_all();
        double t0 = now();
        for (long i = 0; i < iters; i++) {
            shmem_broadcast64(dst, src, nelems, 0, 0, 0, npes, pSync);
            if (me == task) {
                shmem_int_atomic_fetch_inc(ack, 0);
            } else if (me == 0) {
                shmem_int_wait_until(ack, SHMEM_CMP_EQ, 1);
                *ack = 0;
            }
        }
        total = (now() - t0) / (double)iters;
        if (me == 0 && total - ack_time > worst) {
            worst = total - ack_time;
        }
    }
    return worst * 1e6;
}

static void collectives(long iters)
{
    static long pSync[SHMEM_REDUCE_SYNC_SIZE], pSync2[SHMEM_REDUCE_SYNC_SIZE];
    static long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 1024];
    long *src = shmem_malloc(sizeof(long) * 4096 * (size_t)npes);
    long *dst = shmem_malloc(sizeof(long) * 4096 * (size_t)npes);
    int *ack = shmem_malloc(sizeof(int));
    double r[TRIALS];

    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = pSync2[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < 4096 * npes; i++) src[i] = me + i;
    *ack = 0;
    shmem_barrier_all();
    for (int t = 0; t < TRIALS; t++) {
        shmem_barrier_all();
        double t0 = now();
        for (long i = 0; i < iters; i++) shmem_barrier_all();
        r[t] = (now() - t0) / (double)iters * 1e6;
    }
    qsort(r, TRIALS, sizeof(double), cmpd);
    if (me == 0) {
        printf("# collectives over %d PEs, µs per call\n%-10s %10s %10s %10s %10s\n", npes,
               "elements", "barrier", "bcast_ack", "sum_to_all", "fcollect");
    }
    for (size_t n = 1; n <= 1024; n *= 4) {
        long it = iters_for(n * 8 * (size_t)npes, iters);
        double bc = bcast_ack(it / 4 + 1, dst, src, n, pSync, ack);
        double red[TRIALS], fc[TRIALS];
        for (int t = 0; t < TRIALS; t++) {
            shmem_barrier_all();
            double t0 = now();
            for (long i = 0; i < it; i++) {
                shmem_long_sum_to_all(dst, src, (int)n, 0, 0, npes, pWrk, i & 1 ? pSync2 : pSync);
            }
            red[t] = (now() - t0) / (double)it * 1e6;
            shmem_barrier_all();
            t0 = now();
            for (long i = 0; i < it; i++) {
                shmem_fcollect64(dst, src, n, 0, 0, npes, i & 1 ? pSync2 : pSync);
            }
            fc[t] = (now() - t0) / (double)it * 1e6;
        }
        qsort(red, TRIALS, sizeof(double), cmpd);
        qsort(fc, TRIALS, sizeof(double), cmpd);
        if (me == 0) {
            printf("%-10zu %10.3f %10.3f %10.3f %10.3f\n", n, r[TRIALS / 2], bc, red[TRIALS / 2],
                   fc[TRIALS / 2]);
            fflush(stdout);
        }
    }
    shmem_barrier_all();
    shmem_free(ack);
    shmem_free(dst);
    shmem_free(src);
}

int main(int argc, char **argv)
{
    const char *usage = "oshrun -n N shmem_bench [ITERS >= 10] [MAX_BYTES >= 8]";
    long iters = (long)bench_arg(argc, argv, 1, 20000, 10, 1L << 40, usage);
    size_t max_bytes = (size_t)bench_arg(argc, argv, 2, 1 << 22, 8, 1LL << 34, usage);

    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    peer = npes - 1;
    char *remote = shmem_malloc(max_bytes);
    char *local = malloc(max_bytes);
    if (remote == NULL || local == NULL) {
        if (me == 0) fprintf(stderr, "shmem_bench: cannot allocate %zu bytes\n", max_bytes);
        shmem_global_exit(1);
    }
    memset(local, me + 1, max_bytes);
    memset(remote, 0, max_bytes);
    if (npes > 1) p2p(iters, max_bytes, remote, local);
    collectives(iters / 4 + 10);
    shmem_barrier_all();
    free(local);
    shmem_free(remote);
    shmem_finalize();
    return 0;
}
