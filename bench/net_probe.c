/*
 * net_probe: the network rows of scripts/net-compare.sh. One OpenSHMEM 1.4
 * program that compiles unchanged with our oshcc and with Open MPI's, so
 * both run the same source in the same session.
 *
 *   oshcc -O2 net_probe.c -o net_probe && oshrun -n 2 --nodes 2 ./net_probe [ITERS]
 *
 * Latency rows (µs per operation) run between PE 0 and PE n-1, the first
 * and the last node under a block placement. Every row is timed on PE 0 as
 * the median of TRIALS loops; collectives are timed on every PE and the
 * slowest PE's time is printed (a root that returns early proves nothing).
 * Rate rows: msgrate_Mps is 8-byte puts from every PE to its partner on
 * the other half of the job (PE i -> (i + n/2) % n), one quiet per window
 * of 64, summed over the PEs, in millions per second; put4M_GBs/get4M_GBs
 * are 4 MiB transfers between PE 0 and PE n-1.
 * Output: one "name value" line per row on PE 0.
 */
#include <shmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TRIALS   5
#define RATE_WIN 64
#define BIG      (4L << 20)

static double now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double median(double *v)
{
    qsort(v, TRIALS, sizeof(double), cmp_double);
    return v[TRIALS / 2];
}

static long psync[SHMEM_REDUCE_SYNC_SIZE > SHMEM_BCAST_SYNC_SIZE ? SHMEM_REDUCE_SYNC_SIZE
                                                                 : SHMEM_BCAST_SYNC_SIZE];
static long psync2[SHMEM_REDUCE_SYNC_SIZE];
static double dwork[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long lwork[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double dval, dmax;

/* The slowest PE's value of t (collective). */
static double slowest(double t)
{
    dval = t;
    shmem_barrier_all();
    shmem_double_max_to_all(&dmax, &dval, 1, 0, 0, shmem_n_pes(), dwork, psync2);
    shmem_barrier_all();
    return dmax;
}

/* Time per iteration of `body` on PE 0 only, median of TRIALS loops. */
#define PE0_LOOP(iters, body)                                                                      \
    ({                                                                                             \
        double r_[TRIALS];                                                                         \
        for (int t_ = 0; t_ < TRIALS; t_++) {                                                      \
            shmem_barrier_all();                                                                   \
            double t0_ = now_us();                                                                 \
            if (me == 0) {                                                                         \
                for (long i_ = 0; i_ < (iters); i_++) {                                            \
                    body;                                                                          \
                }                                                                                  \
            }                                                                                      \
            r_[t_] = (now_us() - t0_) / (iters);                                                   \
            shmem_barrier_all();                                                                   \
        }                                                                                          \
        median(r_);                                                                                \
    })

/* Time per call of a collective on every PE; the slowest PE's median. */
#define ALL_LOOP(iters, body)                                                                      \
    ({                                                                                             \
        double r_[TRIALS];                                                                         \
        for (int t_ = 0; t_ < TRIALS; t_++) {                                                      \
            shmem_barrier_all();                                                                   \
            double t0_ = now_us();                                                                 \
            for (long i_ = 0; i_ < (iters); i_++) {                                                \
                body;                                                                              \
            }                                                                                      \
            r_[t_] = (now_us() - t0_) / (iters);                                                   \
        }                                                                                          \
        slowest(median(r_));                                                                       \
    })

int main(int argc, char **argv)
{
    static long x;
    long iters, coll_iters, v = 1;
    int me, n, peer, partner;
    char *buf, *lbuf;
    long *bsrc, *bdst;

    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    peer = n - 1;
    partner = (me + n / 2) % n;
    iters = argc > 1 ? atol(argv[1]) : 20000;
    if (iters < 10) {
        iters = 10;
    }
    coll_iters = iters / 10;
    for (size_t i = 0; i < sizeof(psync) / sizeof(psync[0]); i++) {
        psync[i] = SHMEM_SYNC_VALUE;
    }
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) {
        psync2[i] = SHMEM_SYNC_VALUE;
    }
    buf = shmem_malloc(BIG);
    bsrc = shmem_malloc(64);
    bdst = shmem_malloc(64);
    lbuf = malloc(BIG);
    if (buf == NULL || bsrc == NULL || bdst == NULL || lbuf == NULL) {
        fprintf(stderr, "net_probe: out of memory\n");
        shmem_global_exit(1);
    }
    memset(lbuf, 1, BIG);
    memset(bsrc, 0, 64);
    shmem_barrier_all();

    double put8 = PE0_LOOP(iters, {
        shmem_putmem(buf, lbuf, 8, peer);
        shmem_quiet();
    });
    double get8 = PE0_LOOP(iters, shmem_getmem(lbuf, buf, 8, peer));
    double p8 = PE0_LOOP(iters, shmem_long_p(&x, v, peer));
    if (me == 0) {
        shmem_quiet();
    }
    double fadd = PE0_LOOP(iters, v += shmem_long_atomic_fetch_add(&x, 1, peer));
    /* Non-fetching: the loop's time includes the quiet that completes them. */
    double add = PE0_LOOP(iters, {
        shmem_long_atomic_add(&x, 1, peer);
        if (i_ == iters - 1) {
            shmem_quiet();
        }
    });
    double cswap = PE0_LOOP(iters, v += shmem_long_atomic_compare_swap(&x, v, v + 1, peer));
    double barrier = ALL_LOOP(coll_iters, shmem_barrier_all());
    double bcast = ALL_LOOP(coll_iters, shmem_broadcast64(bdst, bsrc, 1, 0, 0, 0, n, psync));
    shmem_barrier_all();
    double reduce =
        ALL_LOOP(coll_iters, shmem_long_sum_to_all(bdst, bsrc, 1, 0, 0, n, lwork, psync2));
    long bw_iters = 50;
    double bwput = PE0_LOOP(bw_iters, {
        shmem_putmem(buf, lbuf, BIG, peer);
        shmem_quiet();
    });
    double bwget = PE0_LOOP(bw_iters, shmem_getmem(lbuf, buf, BIG, peer));

    /* Message rate: every PE to its partner, windows of RATE_WIN puts. */
    long windows = iters / RATE_WIN + 1;
    double rr[TRIALS];
    for (int t = 0; t < TRIALS; t++) {
        shmem_barrier_all();
        double t0 = now_us();
        for (long w = 0; w < windows; w++) {
            for (int k = 0; k < RATE_WIN; k++) {
                shmem_putmem(buf + 8 * k, lbuf, 8, partner);
            }
            shmem_quiet();
        }
        rr[t] = now_us() - t0;
    }
    double rate_time = slowest(median(rr)); /* µs for windows*RATE_WIN puts per PE */
    double msgrate = (double)n * windows * RATE_WIN / rate_time;

    if (me == 0) {
        printf("npes=%d iters=%ld (us per op; GB/s; millions of messages/s)\n", n, iters);
        printf("put8+quiet %.3f\nget8 %.3f\np8 %.3f\nfetch_add %.3f\nadd %.3f\ncswap %.3f\n"
               "barrier %.3f\nbcast8 %.3f\nreduce8 %.3f\nput4M_GBs %.3f\nget4M_GBs %.3f\n"
               "msgrate_Mps %.4f\n",
               put8, get8, p8, fadd, add, cswap, barrier, bcast, reduce, BIG / bwput / 1e3,
               BIG / bwget / 1e3, msgrate);
        fflush(stdout);
    }
    shmem_barrier_all();
    shmem_free(bdst);
    shmem_free(bsrc);
    shmem_free(buf);
    free(lbuf);
    shmem_finalize();
    return 0;
}
