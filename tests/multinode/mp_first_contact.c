/*
 * First contact under stress: every PE's first operation to every other PE
 * at the same instant. Run under `oshrun -n N --nodes K [--netns]` with
 * RMB_BTL=auto (shm within a node, btl/ofi between nodes):
 *
 *   mp_first_contact [xor|rotate|same]
 *
 * 1. right after shmem_init (no barrier of ours before it): an all-to-all
 *    shmem_long_atomic_fetch_add, PE p adding p+1 to a counter on every PE
 *    q (itself included), in one of three orders: xor (default; n a power
 *    of 2, else rotate): q = p^1, p^2, ..., p^(n-1), then p itself, so at
 *    every step the pairs contact each other, both sides at once; rotate:
 *    q = p+1, p+2, ... (every PE on a different target); same: q = 0, 1,
 *    ... (all on the same target at once); each PE then puts the value it
 *    fetched into its slot on q;
 * 2. barrier, the same all-to-all on a second counter (connections up);
 * 3. barrier_all, puts of 8 B, 512 B and 20 KiB (inject, bounce ring, in
 *    place over tcp;ofi_rxm) to every other PE; barrier_all; check.
 *
 * Checked on every target q: each counter ends at n(n+1)/2 (phase 2: 1000
 * times that), and the fetched values, sorted, form one chain of prefix
 * sums starting at 0 (each add saw exactly the adds before it: atomicity).
 * PE 0 prints one line with the slowest PE's time for shmem_init (and the
 * CPU time it used up to then) and for each phase; with FIRST_CONTACT_T0
 * (wall-clock seconds when oshrun was started) also the launch (to the
 * slowest PE's main) and a second line with its shmem_finalize and when it
 * was done. Exit 0 only if everything matched; a stuck connection fails the
 * job through btl/ofi's bounded waits (RMB_OFI_TIMEOUT_SEC) instead of
 * hanging.
 *
 * Note: shmem_init ends with shmem_barrier_all, whose dissemination rounds
 * already contact PEs me+1, me+2, me+4, ... (in the last round pairs at
 * distance n/2 contact each other at the same time: on 4 PEs that round
 * connects PE 0 with 2 and 1 with 3 from both sides at once, and every pair
 * is connected by the end of shmem_init); phase 1 is the first contact of
 * the other pairs (on 8 PEs: distances 3 and 5) and the first fetching
 * atomic (fi_fetch_atomicmsg) of all.
 */
#include <shmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "tests/common/mp_check.h"

#define MAXPES 64
#define BIG    (20 * 1024)

static const size_t put_sizes[] = {8, 512, BIG};
#define NSIZES (sizeof(put_sizes) / sizeof(put_sizes[0]))

static int me, npes, errors;

/* symmetric (static data) */
static long counter[2];      /* phase 1 and 2 targets */
static long olds[2][MAXPES]; /* olds[k][p]: what PE p's add fetched here */
static double times[6], max_times[6];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds (user + system, every thread) this process used so far. */
static double cpu_time(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* Seconds since FIRST_CONTACT_T0 (wall-clock seconds since the epoch, set
 * by the stress script when it starts oshrun); -1 without it. */
static double since_t0(void)
{
    const char *text = getenv("FIRST_CONTACT_T0");
    struct timespec ts;

    if (text == NULL || *text == '\0') return -1;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9 - strtod(text, NULL);
}

enum order { ORDER_XOR, ORDER_ROTATE, ORDER_SAME };
static const char *const order_names[] = {"xor", "rotate", "same"};

/* All-to-all fetch-add of (me+1)*scale on counter[k] of every PE; the
 * fetched values go to olds[k][me] on their target. */
static void all_to_all(int k, long scale, enum order order)
{
    long fetched[MAXPES];

    for (int i = 0; i < npes; i++) {
        int q = order == ORDER_SAME  ? i
                : order == ORDER_XOR ? me ^ ((i + 1) % npes)
                                     : (me + 1 + i) % npes;
        fetched[q] = shmem_long_atomic_fetch_add(&counter[k], (me + 1) * scale, q);
    }
    for (int q = 0; q < npes; q++) {
        shmem_long_p(&olds[k][me], fetched[q], q);
    }
}

/* On this PE: counter[k] is the sum of every add, and the adds' fetched
 * values chain: sorted by fetched value, each starts where the one before
 * ended (old + add), from 0 to the total. */
static void check_chain(int k, long scale)
{
    long total = (long)npes * (npes + 1) / 2 * scale;
    int used[MAXPES] = {0};
    long at = 0;

    CHECK(counter[k] == total, "phase %d: counter %ld, expected %ld", k + 1, counter[k], total);
    for (int step = 0; step < npes; step++) {
        int found = -1;
        for (int p = 0; p < npes; p++) {
            if (!used[p] && olds[k][p] == at) {
                found = p;
                break;
            }
        }
        if (found < 0) {
            CHECK(0, "phase %d: no add fetched %ld (fetched values not a chain)", k + 1, at);
            return;
        }
        used[found] = 1;
        at += (found + 1) * scale;
    }
    CHECK(at == total, "phase %d: chain ends at %ld, expected %ld", k + 1, at, total);
}

int main(int argc, char **argv)
{
    enum order order = ORDER_XOR;
    char *slots, *src;
    double t0, t1;

    if (argc > 1) {
        for (order = ORDER_XOR; order <= ORDER_SAME; order++) {
            if (strcmp(argv[1], order_names[order]) == 0) break;
        }
        if (order > ORDER_SAME) {
            fprintf(stderr, "usage: mp_first_contact [xor|rotate|same]\n");
            return 2;
        }
    }
    times[4] = since_t0(); /* launch: oshrun start to this PE's main */
    t0 = now();
    shmem_init();
    times[3] = now() - t0;
    times[5] = cpu_time(); /* start-up and shmem_init: CPU this PE needed */
    t0 = now();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (npes > MAXPES) {
        if (me == 0) fprintf(stderr, "mp_first_contact: at most %d PEs\n", MAXPES);
        shmem_global_exit(2);
    }
    if (order == ORDER_XOR && (npes & (npes - 1)) != 0) {
        order = ORDER_ROTATE; /* p XOR i leaves 0..n-1 unless n is a power of 2 */
    }

    /* 1: first contact, nothing in between */
    all_to_all(0, 1, order);
    t1 = now();
    times[0] = t1 - t0;
    shmem_barrier_all();
    check_chain(0, 1);

    /* 2: again, every connection up */
    t0 = now();
    all_to_all(1, 1000, order);
    times[1] = now() - t0;
    shmem_barrier_all();
    check_chain(1, 1000);

    /* 3: puts of each size to every other PE */
    slots = shmem_malloc((size_t)npes * BIG);
    src = malloc(BIG);
    CHECK(slots != NULL && src != NULL, "allocation");
    if (slots == NULL || src == NULL) shmem_global_exit(1);
    memset(slots, 0, (size_t)npes * BIG);
    shmem_barrier_all();
    t0 = now();
    for (size_t s = 0; s < NSIZES; s++) {
        for (int i = 1; i < npes; i++) {
            int q = (me + i) % npes;
            for (size_t b = 0; b < put_sizes[s]; b++) {
                src[b] = (char)(me * 31 + q * 7 + s * 3 + b);
            }
            shmem_putmem(slots + (size_t)me * BIG, src, put_sizes[s], q);
        }
        shmem_barrier_all();
        for (int p = 0; p < npes; p++) {
            int bad = -1;
            for (size_t b = 0; p != me && b < put_sizes[s] && bad < 0; b++) {
                if (slots[(size_t)p * BIG + b] != (char)(p * 31 + me * 7 + s * 3 + b)) {
                    bad = (int)b;
                }
            }
            CHECK(bad < 0, "put of %zu B from PE %d: byte %d wrong", put_sizes[s], p, bad);
        }
        shmem_barrier_all(); /* all checked before the next size overwrites */
    }
    times[2] = now() - t0;

    shmem_double_max_reduce(SHMEM_TEAM_WORLD, max_times, times, 6);
    if (me == 0) {
        printf("mp_first_contact: %d PEs (%s): ", npes, order_names[order]);
        if (max_times[4] >= 0) printf("launch %.1f ms, ", max_times[4] * 1e3);
        printf("init %.1f ms (cpu %.1f ms), first contact %.1f ms, second %.1f ms, puts %.1f ms "
               "(slowest PE)\n",
               max_times[3] * 1e3, max_times[5] * 1e3, max_times[0] * 1e3, max_times[1] * 1e3,
               max_times[2] * 1e3);
        fflush(stdout);
    }
    shmem_free(slots);
    free(src);
    t0 = now();
    shmem_finalize();
    if (me == 0 && since_t0() >= 0) {
        printf("mp_first_contact: PE 0 finalize %.1f ms, done at %.1f ms\n", (now() - t0) * 1e3,
               since_t0() * 1e3);
    }
    return errors ? 1 : 0;
}
