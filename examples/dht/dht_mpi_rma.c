/*
 * dht_mpi_rma: the distributed hash table over MPI-3 RMA atomics (the
 * "MPI-3 atomic" flavour of §6.3.3, after Gerstenberger et al.).
 *   mpirun -np N examples/dht/dht_mpi_rma [-p small|large] [-v volume] [-i inserts] [-S seed]
 *
 * The table lives in a window (MPI_Win_allocate; word 0 is the heap top,
 * then the slots, then the heap), locked once with MPI_Win_lock_all. An
 * insert: MPI_Compare_and_swap on the slot's key; if the slot was taken,
 * MPI_Fetch_and_op(MPI_SUM) on the owner's heap top, MPI_Put of key and
 * value into that element, MPI_Fetch_and_op(MPI_REPLACE) to make it the
 * chain head and MPI_Accumulate(MPI_REPLACE) of the old head into its next.
 * Each step is completed with MPI_Win_flush, since the next one needs its
 * result. (-b is accepted and ignored: nothing is batched.)
 */
#include "dht.h"

#include <mpi.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W(x) ((MPI_Aint)(x)) /* displacements are in int64 words */

int main(int argc, char **argv)
{
    dht_params_t p;
    dht_table_t table;
    int64_t *base;
    long heap_cap, errors = 0;
    MPI_Win win;
    double t0, t1;
    int me, np, rc = 0;

    if (dht_parse(argc, argv, "dht_mpi_rma", &p)) return 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    heap_cap = dht_heap_cap(&p, np);
    if (heap_cap < 0) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Win_allocate((MPI_Aint)sizeof(int64_t) + dht_table_bytes(p.volume, heap_cap),
                     sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    dht_table_init(&table, p.volume, heap_cap, base + 1, base);

    const MPI_Aint words = sizeof(dht_elem_t) / sizeof(int64_t);
    const MPI_Aint slot0 = 1, heap0 = 1 + W(p.volume) * words;
    const MPI_Aint key_off = offsetof(dht_elem_t, key) / sizeof(int64_t);
    const MPI_Aint val_off = offsetof(dht_elem_t, value) / sizeof(int64_t);
    const MPI_Aint next_off = offsetof(dht_elem_t, next) / sizeof(int64_t);
    const int64_t zero = 0, one = 1;

    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* warm-up: one atomic on every rank */
    for (int q = 0; q < np; q++) {
        int64_t v;
        MPI_Fetch_and_op(&zero, &v, MPI_INT64_T, q, 0, MPI_NO_OP, win);
        MPI_Win_flush(q, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    t0 = MPI_Wtime();
    for (long i = 0; i < p.inserts; i++) {
        dht_req_t r = dht_make(&p, me, i);
        int o = dht_owner(r.key, np);
        MPI_Aint slot = slot0 + W(dht_slot(r.key, p.volume)) * words;
        int64_t old, idx, prev;

        MPI_Compare_and_swap(&r.key, &zero, &old, MPI_INT64_T, o, slot + key_off, win);
        MPI_Win_flush(o, win);
        if (old == 0) {
            MPI_Put(&r.value, 1, MPI_INT64_T, o, slot + val_off, 1, MPI_INT64_T, win);
            MPI_Win_flush(o, win);
            continue;
        }
        MPI_Fetch_and_op(&one, &idx, MPI_INT64_T, o, 0, MPI_SUM, win);
        MPI_Win_flush(o, win);
        if (idx >= heap_cap) {
            if (errors++ == 0)
                fprintf(stderr, "dht_mpi_rma rank %d: rank %d's heap is full\n", me, o);
            continue;
        }
        MPI_Aint elem = heap0 + W(idx) * words;
        MPI_Put(&r, 2, MPI_INT64_T, o, elem + key_off, 2, MPI_INT64_T, win);
        MPI_Fetch_and_op(&idx, &prev, MPI_INT64_T, o, slot + next_off, MPI_REPLACE, win);
        MPI_Win_flush(o, win);
        MPI_Accumulate(&prev, 1, MPI_INT64_T, o, elem + next_off, 1, MPI_INT64_T, MPI_REPLACE, win);
        MPI_Win_flush(o, win);
    }
    MPI_Win_flush_all(win);
    t1 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win); /* the others' updates are visible to our loads */

    long errs_mine = errors + dht_verify(&p, &table, me, np);
    double time_mine = t1 - t0;
    long *errs = malloc((size_t)np * sizeof(long));
    double *times = malloc((size_t)np * sizeof(double));
    if (errs == NULL || times == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(&errs_mine, 1, MPI_LONG, errs, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Gather(&time_mine, 1, MPI_DOUBLE, times, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    p.batch = 0; /* one-sided: nothing batched */
    if (me == 0) rc = dht_report(&p, "mpi_rma", np, errs, times);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Finalize();
    free(errs);
    free(times);
    return rc;
}
