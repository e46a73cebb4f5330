/*
 * An MPI program that is also an OpenSHMEM program: MPI_Init first, then
 * shmem_init (which must find the MPI bootstrap and, with RMB_BTL=mpi,
 * btl/mpi), MPI calls interleaved with shmem ones, shmem_finalize before
 * MPI_Finalize. Built once per MPI (mp_mpi_shmem_openmpi, _mpich) and run
 * by check_btl_mpi under that MPI's launcher.
 *
 * Checks, on every PE, with real values: ranks and sizes agree with MPI;
 * puts and gets of 8 B .. 1 MiB to heap and static memory; notified data
 * (put, fence, flag put, wait_until); atomics under contention, one word
 * hit by several different operations at once (fetch-add, add, inc,
 * compare-and-swap loops), which is where MPI's accumulate_ops default
 * could bite; one hot word that PE 0 updates itself while all others do
 * (its self atomics against MPI's); swap balance; barrier_all that nobody leaves early.
 * Exits 0 only if everything matched on every PE.
 */
#include <mpi.h>
#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/common/mp_check.h"

#define BIG             (1 << 20)
#define ITERS           200
#define CONTENDED_ITERS 2000
#define SELF_BATCH      1024

static int me, npes, errors;
static long static_words[1024];
static long static_counter;
static long static_hot; /* contended like the heap's hot words (static data: remapped) */
static int static_hot32;

static unsigned char pattern(int writer, size_t size, size_t i)
{
    return (unsigned char)(writer * 29 + size * 3 + i * 11 + (i >> 9));
}

static void check_rma(void)
{
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    unsigned char *heap = shmem_malloc(BIG), *src = malloc(BIG), *back = malloc(BIG);

    CHECK(heap != NULL && src != NULL && back != NULL, "allocation");
    for (size_t size = 8; size <= BIG; size *= 8) {
        for (size_t i = 0; i < size; i++) {
            src[i] = pattern(me, size, i);
        }
        shmem_barrier_all();
        shmem_putmem(heap, src, size, right);
        shmem_barrier_all();
        for (size_t i = 0; i < size; i++) {
            if (heap[i] != pattern(left, size, i)) {
                CHECK(0, "size %zu: heap byte %zu is %u, expected %u", size, i, heap[i],
                      pattern(left, size, i));
                break;
            }
        }
        memset(back, 0, size);
        shmem_getmem(back, heap, size, right);
        CHECK(memcmp(back, src, size) == 0, "size %zu: get returned other data", size);
    }
    /* static (remapped or registered) data, long-typed */
    {
        long words[1024];
        for (int i = 0; i < 1024; i++) {
            words[i] = me * 100000L + i;
        }
        shmem_barrier_all();
        shmem_long_put(static_words, words, 1024, right);
        shmem_barrier_all();
        for (int i = 0; i < 1024; i++) {
            CHECK(static_words[i] == left * 100000L + i, "static[%d] = %ld", i, static_words[i]);
        }
        CHECK(shmem_long_g(&static_words[17], right) == me * 100000L + 17, "g of static");
    }
    shmem_barrier_all();
    shmem_free(heap);
    free(src);
    free(back);
}

/* put, fence, then a flag: the reader that sees the flag sees the data */
static void check_notify(void)
{
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long *data = shmem_calloc(64, sizeof(long)), *flag = shmem_calloc(1, sizeof(long));
    long mine[64];

    shmem_barrier_all();
    for (long round = 1; round <= 50; round++) {
        for (int i = 0; i < 64; i++) {
            mine[i] = round * 1000 + me;
        }
        shmem_long_put(data, mine, 64, right);
        shmem_fence();
        shmem_long_atomic_set(flag, round, right);
        shmem_long_wait_until(flag, SHMEM_CMP_GE, round);
        for (int i = 0; i < 64; i++) {
            CHECK(data[i] == round * 1000 + left, "round %ld: word %d is %ld", round, i, data[i]);
        }
        /* my writer may not overwrite data before I checked it */
        shmem_barrier_all();
    }
    shmem_free(data);
    shmem_free(flag);
}

static void check_atomics(void)
{
    long *word = shmem_calloc(4, sizeof(long));
    long swap_in = 0, swap_out = 0, in_all, out_all;
    long expect = 0;

    shmem_barrier_all();
    /* word[0] on every PE: four kinds of increment from every PE, mixed */
    for (int it = 0; it < ITERS; it++) {
        for (int p = 0; p < npes; p++) {
            long old, seen;

            shmem_long_atomic_add(&word[0], 2, p);
            (void)shmem_long_atomic_fetch_add(&word[0], 3, p);
            shmem_long_atomic_inc(&word[0], p);
            seen = shmem_long_atomic_fetch(&word[0], p);
            while ((old = shmem_long_atomic_compare_swap(&word[0], seen, seen + 4, p)) != seen) {
                seen = old;
            }
            /* swaps on word[1]: what goes in comes out (xor over the job) */
            long v = ((long)me << 32) | (long)(it * npes + p + 1);
            swap_in ^= v;
            swap_out ^= shmem_long_atomic_swap(&word[1], v, p);
        }
    }
    /* a static counter too */
    for (int p = 0; p < npes; p++) {
        shmem_long_atomic_add(&static_counter, me + 1, p);
    }
    shmem_barrier_all();
    expect = (long)ITERS * npes * (2 + 3 + 1 + 4);
    CHECK(word[0] == expect, "mixed-op counter %ld, expected %ld", word[0], expect);
    swap_out ^= word[1];
    MPI_Allreduce(&swap_in, &in_all, 1, MPI_LONG, MPI_BXOR, MPI_COMM_WORLD);
    MPI_Allreduce(&swap_out, &out_all, 1, MPI_LONG, MPI_BXOR, MPI_COMM_WORLD);
    CHECK(in_all == out_all, "swaps lost or duplicated values");
    CHECK(static_counter == (long)npes * (npes + 1) / 2, "static counter %ld", static_counter);
    shmem_barrier_all();
    shmem_free(word);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One hot word on PE 0, updated by everybody at once. The others run
 * CONTENDED_ITERS rounds of add, fetch-add and inc (64- and 32-bit); PE 0
 * keeps updating its own word until they are done, so its self-targeted
 * atomics overlap theirs the whole time (with a progress thread, MPI may
 * apply the peers' ones while PE 0 runs). Exact totals: a self atomic that is
 * not atomic with the MPI ones loses updates. */
/* One round on PE 0's hot words, on the heap and in static data: 4 added
 * to each, through every kind of atomic update. */
static void contend_round(long *hot, int *hot32)
{
    shmem_long_atomic_add(hot, 1, 0);
    (void)shmem_long_atomic_fetch_add(hot, 2, 0);
    shmem_long_atomic_inc(hot, 0);
    shmem_int_atomic_add(hot32, 3, 0);
    (void)shmem_int_atomic_fetch_inc(hot32, 0);
    (void)shmem_long_atomic_fetch_add(&static_hot, 3, 0);
    shmem_long_atomic_inc(&static_hot, 0);
    shmem_int_atomic_add(&static_hot32, 2, 0);
    (void)shmem_int_atomic_fetch_add(&static_hot32, 2, 0);
}

static void check_contended(void)
{
    long *hot = shmem_calloc(1, sizeof(long)), *done = shmem_calloc(1, sizeof(long));
    int *hot32 = shmem_calloc(1, sizeof(int));
    long added = 0, added_all = 0, added32 = 0, added32_all = 0;

    shmem_barrier_all();
    if (me == 0) {
        double give_up = now_s() + 30;
        while (!shmem_long_test(done, SHMEM_CMP_EQ, npes - 1) && now_s() < give_up) {
            for (int i = 0; i < SELF_BATCH; i++) {
                contend_round(hot, hot32);
                added += 4;
                added32 += 4;
            }
        }
    } else {
        for (int i = 0; i < CONTENDED_ITERS; i++) {
            contend_round(hot, hot32);
            added += 4;
            added32 += 4;
        }
        shmem_quiet();
        shmem_long_atomic_inc(done, 0);
    }
    shmem_barrier_all();
    MPI_Allreduce(&added, &added_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&added32, &added32_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
        CHECK(*hot == added_all, "contended 64-bit word %ld, expected %ld (%ld lost)", *hot,
              added_all, added_all - *hot);
        CHECK(*hot32 == (int)added32_all, "contended 32-bit word %d, expected %ld (%ld lost)",
              *hot32, added32_all, added32_all - *hot32);
        CHECK(static_hot == added_all && static_hot32 == (int)added32_all,
              "contended static words %ld and %d, expected %ld (%ld and %ld lost)", static_hot,
              static_hot32, added_all, added_all - static_hot, added32_all - static_hot32);
    }
    shmem_barrier_all();
    shmem_free(hot32);
    shmem_free(done);
    shmem_free(hot);
}

static void check_barrier(void)
{
    double t[2], *all = malloc(sizeof(t) * (size_t)npes), last_in = 0, first_out = 1e300;

    usleep((useconds_t)(me * 20000));
    t[0] = now_s();
    shmem_barrier_all();
    t[1] = now_s();
    MPI_Allgather(t, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int p = 0; p < npes; p++) {
        last_in = all[2 * p] > last_in ? all[2 * p] : last_in;
        first_out = all[2 * p + 1] < first_out ? all[2 * p + 1] : first_out;
    }
    CHECK(last_in <= first_out, "a PE left shmem_barrier_all %.0f us early",
          (last_in - first_out) * 1e6);
    free(all);
}

int main(int argc, char **argv)
{
    int rank, size, total = 0, provided = MPI_THREAD_SINGLE;

    /* "multiple": MPI_THREAD_MULTIPLE, so btl/mpi runs its progress thread */
    if (argc > 1 && strcmp(argv[1], "multiple") == 0) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    CHECK(me == rank && npes == size, "shmem PE %d of %d, MPI rank %d of %d", me, npes, rank, size);
    check_rma();
    MPI_Barrier(MPI_COMM_WORLD); /* MPI and shmem calls interleave */
    check_notify();
    check_atomics();
    check_contended();
    check_barrier();
    shmem_finalize();
    /* static data keeps its contents, and stays writable, after finalize */
    CHECK(static_counter == (long)npes * (npes + 1) / 2, "static counter after finalize %ld",
          static_counter);
    static_counter = 0;
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mp_mpi_shmem: %d PEs, thread level %d: %s\n", size, provided,
               total ? "FAILED" : "all checks passed");
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
