/*
 * gups: a random-access kernel in the manner of HPCC RandomAccess, in
 * OpenSHMEM 1.4 (builds with any oshcc). Every PE owns a table of 2^LOG
 * 64-bit words (unsigned long); each PE draws pseudo-random 64-bit values r, and each r
 * updates word r mod 2^LOG of PE (r >> 40) mod npes with table ^= r.
 *
 *   oshrun -n 4 ./gups [-m amo|getput|fetch|fetchnbi] [-l LOG] [-u UPDATES_PER_PE]
 *
 * Modes:
 *   amo     shmem_ulong_atomic_xor (non-fetching): the updates can be
 *           pipelined; a quiet every 1024 updates (HPCC's look-ahead bound)
 *   getput  HPCC's classic remote update: v = shmem_ulong_g, v ^= r,
 *           shmem_ulong_p: races between PEs may lose updates
 *   fetch   shmem_ulong_atomic_fetch_xor: one fetching atomic per update
 *   fetchnbi  (OpenSHMEM 1.5 libraries only) shmem_ulong_atomic_fetch_xor_nbi,
 *           a quiet every 64 updates: fetching atomics in flight together
 * Verification as HPCC does it: the same updates are applied a second time
 * (xor undoes them) and every word must be back to its index; amo and
 * fetch(nbi) must have no error, getput at most 1% of the updates.
 * Output on PE 0: "gups_MODE_Kups <thousands of updates per second>" (all
 * PEs together, over the slowest PE's time) and "gups_MODE_errors N".
 * Exit status 1 when the verification fails.
 */
#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOOKAHEAD 1024

#define NBI_WINDOW 64

/* The fetching _nbi atomics came with OpenSHMEM 1.5. */
#if defined(SHMEM_MAJOR_VERSION) && defined(SHMEM_MINOR_VERSION) &&                                \
    SHMEM_MAJOR_VERSION * 100 + SHMEM_MINOR_VERSION >= 105
#define HAVE_FETCH_NBI 1
#else
#define HAVE_FETCH_NBI 0
#endif

enum { MODE_AMO, MODE_GETPUT, MODE_FETCH, MODE_FETCH_NBI, MODE_COUNT };
static const char *mode_names[] = {"amo", "getput", "fetch", "fetchnbi"};

static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long lwork[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double dwork[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long lval, lsum;
static double dval, dmax;

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* splitmix64: a fresh, well-mixed stream per PE (seeded with the PE). */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void run_updates(unsigned long *table, int log, long updates, int mode, int me, int n)
{
    uint64_t state = 0x1234567ULL + (uint64_t)me * 0x10001ULL;
    uint64_t mask = ((uint64_t)1 << log) - 1;

    for (long i = 0; i < updates; i++) {
        uint64_t r = next_random(&state);
        int pe = (int)((r >> 40) % (uint64_t)n);
        unsigned long *word = &table[r & mask];

        switch (mode) {
        case MODE_AMO:
            shmem_ulong_atomic_xor(word, (unsigned long)r, pe);
            if ((i + 1) % LOOKAHEAD == 0) {
                shmem_quiet();
            }
            break;
        case MODE_GETPUT:
            shmem_ulong_p(word, shmem_ulong_g(word, pe) ^ (unsigned long)r, pe);
            break;
        case MODE_FETCH_NBI: {
#if HAVE_FETCH_NBI
            static unsigned long fetched[NBI_WINDOW];
            shmem_ulong_atomic_fetch_xor_nbi(&fetched[i % NBI_WINDOW], word, (unsigned long)r, pe);
            if ((i + 1) % NBI_WINDOW == 0) {
                shmem_quiet();
            }
#endif
            break;
        }
        default:
            (void)shmem_ulong_atomic_fetch_xor(word, (unsigned long)r, pe);
            break;
        }
    }
    shmem_quiet();
}

static long sum_all(long v, int n)
{
    lval = v;
    shmem_barrier_all();
    shmem_long_sum_to_all(&lsum, &lval, 1, 0, 0, n, lwork, psync);
    shmem_barrier_all();
    return lsum;
}

static double max_all(double v, int n)
{
    dval = v;
    shmem_barrier_all();
    shmem_double_max_to_all(&dmax, &dval, 1, 0, 0, n, dwork, psync);
    shmem_barrier_all();
    return dmax;
}

int main(int argc, char **argv)
{
    int mode = MODE_AMO, log = 20, opt, me, n;
    long updates = 1L << 16, errors = 0, total_errors, size;
    unsigned long *table;
    double t0, elapsed, slowest;

    while ((opt = getopt(argc, argv, "m:l:u:")) != -1) {
        switch (opt) {
        case 'm':
            for (mode = 0; mode < MODE_COUNT && strcmp(optarg, mode_names[mode]) != 0; mode++) {
            }
            if (mode == MODE_COUNT) {
                fprintf(stderr, "gups: unknown mode '%s' (amo, getput, fetch, fetchnbi)\n", optarg);
                return 2;
            }
            if (mode == MODE_FETCH_NBI && !HAVE_FETCH_NBI) {
                fprintf(stderr, "gups: fetchnbi needs an OpenSHMEM 1.5 library\n");
                return 2;
            }
            break;
        case 'l':
            log = atoi(optarg);
            break;
        case 'u':
            updates = atol(optarg);
            break;
        default:
            fprintf(stderr,
                    "usage: gups [-m amo|getput|fetch|fetchnbi] [-l LOG] [-u UPDATES_PER_PE]\n");
            return 2;
        }
    }
    if (log < 4 || log > 30 || updates < 1) {
        fprintf(stderr, "gups: -l takes 4..30 and -u a positive count\n");
        return 2;
    }
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) {
        psync[i] = SHMEM_SYNC_VALUE;
    }
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    size = 1L << log;
    table = shmem_malloc(size * sizeof(long));
    if (table == NULL) {
        fprintf(stderr, "gups: shmem_malloc of %ld words failed\n", size);
        shmem_global_exit(1);
    }
    for (long i = 0; i < size; i++) {
        table[i] = (unsigned long)i;
    }
    shmem_barrier_all();

    t0 = now_s();
    run_updates(table, log, updates, mode, me, n);
    elapsed = now_s() - t0;
    shmem_barrier_all();
    slowest = max_all(elapsed, n);

    /* Verification: the same updates again undo the first ones. */
    run_updates(table, log, updates, mode, me, n);
    shmem_barrier_all();
    for (long i = 0; i < size; i++) {
        errors += table[i] != (unsigned long)i;
    }
    total_errors = sum_all(errors, n);
    if (me == 0) {
        long all = updates * n;
        int ok = mode == MODE_GETPUT ? total_errors * 100 <= all : total_errors == 0;

        printf("gups_%s_Kups %.2f\n", mode_names[mode], all / slowest / 1e3);
        printf("gups_%s_errors %ld\n", mode_names[mode], total_errors);
        if (!ok) {
            fprintf(stderr, "gups: verification failed: %ld wrong words after %ld updates\n",
                    total_errors, all);
        }
        fflush(stdout);
        shmem_free(table);
        shmem_finalize();
        return ok ? 0 : 1;
    }
    shmem_free(table);
    shmem_finalize();
    return 0;
}
