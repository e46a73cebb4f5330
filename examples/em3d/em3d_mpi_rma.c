/*
 * em3d_mpi_rma: EM3D over MPI-3 RMA, passive target (Listing 5.7's
 * one-sided exchange, with flags instead of a barrier per half-step).
 *   mpirun -np N examples/em3d/em3d_mpi_rma [-p small|large] [-n nodes] [-d degree]
 *                                           [-r remote%] [-s steps] [-S seed]
 *
 * One window (MPI_Win_allocate) per rank: flags and acks (int64, one per
 * peer and kind) and a receive region per kind and step parity laid out the
 * same on every rank. The run is one MPI_Win_lock_all epoch. A rank packs
 * what each peer reads, MPI_Puts it into the peer's region, completes the
 * puts with MPI_Win_flush_all and raises the peer's flag with an atomic
 * MPI_Accumulate(MPI_REPLACE). Readers poll their flags with
 * MPI_Fetch_and_op(MPI_NO_OP) and acknowledge each sender after the
 * half-step, which is what lets the sender reuse that parity (see
 * em3d_shmem.c).
 */
#include "em3d.h"

#include <mpi.h>

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MPI_Win win;
static int me, np;
static long idle_spin;

/* Atomic read of an int64 word of this rank's window at byte offset off. */
static int64_t read_word(MPI_Aint off)
{
    int64_t v = 0, dummy = 0;

    MPI_Fetch_and_op(&dummy, &v, MPI_INT64_T, me, off, MPI_NO_OP, win);
    MPI_Win_flush(me, win);
    return v;
}

/* Waits until the word at off is at least v; yields after a while, since
 * osc/sm's flush does not (oversubscribed ranks). */
static void wait_word(MPI_Aint off, int64_t v)
{
    for (long polls = 0; read_word(off) < v; polls++) {
        if (polls > idle_spin) sched_yield();
    }
}

static void set_word(int target, MPI_Aint off, int64_t v)
{
    MPI_Accumulate(&v, 1, MPI_INT64_T, target, off, 1, MPI_INT64_T, MPI_REPLACE, win);
}

int main(int argc, char **argv)
{
    em3d_params_t p;
    em3d_graph_t g;
    const double **seg;
    double *val[2], **sbuf[2], *region[2], t0 = 0.0, t1;
    char *base;
    MPI_Aint flag_off[2], ack_off[2], region_off[2], size;
    int rc = 0;

    if (em3d_parse(argc, argv, "em3d_mpi_rma", &p)) return 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    idle_spin = app_idle_spin(np);
    if (em3d_graph_build(&p, me, np, &g)) {
        fprintf(stderr, "em3d_mpi_rma rank %d: out of memory building the graph\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    size = 0;
    for (int V = 0; V < 2; V++) {
        flag_off[V] = size, size += np * (MPI_Aint)sizeof(int64_t);
        ack_off[V] = size, size += np * (MPI_Aint)sizeof(int64_t);
    }
    for (int V = 0; V < 2; V++) {
        region_off[V] = size;
        size += 2 * (g.region_len[V] + 1) * (MPI_Aint)sizeof(double);
    }
    MPI_Win_allocate(size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, (size_t)region_off[0]);
    seg = calloc((size_t)np, sizeof(double *));
    if (seg == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int V = 0; V < 2; V++) {
        region[V] = (double *)(base + region_off[V]);
        val[V] = malloc((size_t)p.n * sizeof(double));
        sbuf[V] = calloc((size_t)np, sizeof(double *));
        if (val[V] == NULL || sbuf[V] == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
        for (int i = 0; i < p.n; i++) val[V][i] = em3d_init_value(me, V, i);
        for (int q = 0; q < np; q++) {
            if (g.send_len[V][q] == 0) continue;
            sbuf[V][q] = malloc((size_t)g.send_len[V][q] * sizeof(double));
            if (sbuf[V][q] == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    MPI_Barrier(MPI_COMM_WORLD); /* flags are zero everywhere before use */

    for (long s = 0; s < p.total; s++) {
        if (s == p.warm) { /* the clock starts after the untimed warm-up steps */
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        for (int K = 0; K < 2; K++) {
            int V = 1 - K, sent = 0;
            MPI_Aint par = (MPI_Aint)(s % 2) * (g.region_len[V] + 1);
            if (s >= 2) { /* every reader has used this parity's previous contents */
                for (int q = 0; q < np; q++) {
                    if (g.send_len[V][q] == 0) continue;
                    wait_word(ack_off[V] + q * (MPI_Aint)sizeof(int64_t), s - 1);
                }
            }
            for (int q = 0; q < np; q++) {
                if (g.send_len[V][q] == 0) continue;
                em3d_pack(&g, V, q, val[V], sbuf[V][q]);
                MPI_Put(sbuf[V][q], g.send_len[V][q], MPI_DOUBLE, q,
                        region_off[V] + (par + g.send_off[V][q]) * (MPI_Aint)sizeof(double),
                        g.send_len[V][q], MPI_DOUBLE, win);
                sent = 1;
            }
            if (sent) {
                MPI_Win_flush_all(win); /* the values are there before the flags */
                for (int q = 0; q < np; q++) {
                    if (g.send_len[V][q] > 0) {
                        set_word(q, flag_off[V] + me * (MPI_Aint)sizeof(int64_t), s + 1);
                    }
                }
                MPI_Win_flush_all(win);
            }
            for (int q = 0; q < np; q++) {
                if (g.recv_len[V][q] == 0) continue;
                wait_word(flag_off[V] + q * (MPI_Aint)sizeof(int64_t), s + 1);
                seg[q] = region[V] + par + g.recv_off[V][q];
            }
            seg[me] = val[V];
            em3d_compute(val[K], p.n, p.degree, g.in[K], seg);
            sent = 0;
            for (int q = 0; q < np; q++) {
                if (g.recv_len[V][q] == 0) continue;
                set_word(q, ack_off[V] + me * (MPI_Aint)sizeof(int64_t), s + 1);
                sent = 1;
            }
            if (sent) MPI_Win_flush_all(win);
        }
    }
    t1 = MPI_Wtime();
    MPI_Win_unlock_all(win);

    double mine[2] = {em3d_checksum(val[EM3D_E], val[EM3D_H], p.n), t1 - t0};
    double *all = malloc(2 * (size_t)np * sizeof(double));
    if (all == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me == 0) {
        rc = em3d_report(&p, "mpi_rma", np, all);
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    free(all);
    for (int V = 0; V < 2; V++) {
        for (int q = 0; q < np; q++) free(sbuf[V][q]);
        free(sbuf[V]);
        free(val[V]);
    }
    free(seg);
    em3d_graph_free(&g);
    return rc;
}
