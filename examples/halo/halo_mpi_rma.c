/*
 * halo_mpi_rma: the 2-D heat equation over MPI-3 RMA, passive target.
 *   mpirun -np N examples/halo/halo_mpi_rma [-p small|large] [-r rows] [-c cols] [-s steps]
 *
 * One window (MPI_Win_allocate, the unified model where the MPI library
 * offers it) holds each rank's halo buffers, by step parity, and two flags.
 * The whole run is one MPI_Win_lock_all epoch. A rank MPI_Puts its new
 * boundary rows into the neighbours' halo buffers, MPI_Win_flush'es them to
 * completion and then raises the neighbour's flag (state + 1) with an
 * atomic MPI_Accumulate(MPI_REPLACE); the neighbour polls its flag with
 * MPI_Fetch_and_op(MPI_NO_OP). No barrier per step; the parity argument of
 * halo_shmem.c makes acknowledgements unnecessary.
 */
#include "halo.h"

#include <mpi.h>

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    halo_params_t p;
    double *cur, *nxt, *ghost[2], t0 = 0.0, t1;
    char *base; /* window: int64_t flag[2], then double halo[parity][side][C] */
    double *halo_buf;
    MPI_Win win;
    MPI_Aint halo_off = 2 * sizeof(int64_t);
    int me, np, nb[2], R, C, rc = 0;
    long idle_spin;

    if (halo_parse(argc, argv, "halo_mpi_rma", &p)) return 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    R = p.rows, C = p.cols;
    MPI_Win_allocate(halo_off + 4 * (MPI_Aint)C * (MPI_Aint)sizeof(double), 1, MPI_INFO_NULL,
                     MPI_COMM_WORLD, &base, &win);
    halo_buf = (double *)(base + halo_off);
    memset(base, 0, 2 * sizeof(int64_t));
    cur = malloc((size_t)R * C * sizeof(double));
    nxt = malloc((size_t)R * C * sizeof(double));
    ghost[0] = malloc((size_t)C * sizeof(double));
    ghost[1] = malloc((size_t)C * sizeof(double));
    if (cur == NULL || nxt == NULL || ghost[0] == NULL || ghost[1] == NULL) {
        fprintf(stderr, "halo_mpi_rma rank %d: out of memory\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    halo_ghost_rows(ghost[0], ghost[1], C);
    for (int i = 0; i < R; i++) {
        for (int j = 0; j < C; j++) cur[(size_t)i * C + j] = halo_init_value((long)me * R + i, j);
    }
    idle_spin = app_idle_spin(np);
    nb[0] = me > 0 ? me - 1 : -1;
    nb[1] = me < np - 1 ? me + 1 : -1;
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    MPI_Barrier(MPI_COMM_WORLD); /* flags are zero everywhere before anyone raises one */

    for (long s = -1; s < p.total; s++) {
        if (s == p.warm) { /* the clock starts after the untimed warm-up steps */
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (s >= 0) {
            const double *halo[2];
            for (int k = 0; k < 2; k++) {
                if (nb[k] < 0) {
                    halo[k] = ghost[k];
                    continue;
                }
                int64_t seen = 0, dummy = 0;
                for (unsigned long polls = 0;; polls++) {
                    MPI_Fetch_and_op(&dummy, &seen, MPI_INT64_T, me,
                                     (MPI_Aint)k * (MPI_Aint)sizeof(int64_t), MPI_NO_OP, win);
                    MPI_Win_flush(me, win);
                    if (seen >= s + 1) break;
                    /* oversubscribed: osc/sm's flush does not yield */
                    if (polls > (unsigned long)idle_spin) sched_yield();
                }
                halo[k] = halo_buf + ((size_t)(s % 2) * 2 + (size_t)k) * C;
            }
            if (R == 1) {
                halo_row(halo[0], cur, halo[1], nxt, NULL, C);
            } else {
                halo_row(halo[0], cur, cur + C, nxt, NULL, C);
                halo_row(cur + (size_t)(R - 2) * C, cur + (size_t)(R - 1) * C, halo[1],
                         nxt + (size_t)(R - 1) * C, NULL, C);
            }
        }
        /* send state s + 1 (at s = -1: the initial state) */
        if (s + 1 < p.total) {
            const double *src = s < 0 ? cur : nxt;
            MPI_Aint q = (MPI_Aint)((s + 1) % 2);
            int64_t flagval = s + 2;
            for (int k = 0; k < 2; k++) {
                if (nb[k] < 0) continue;
                MPI_Put(src + (size_t)(k ? R - 1 : 0) * C, C, MPI_DOUBLE, nb[k],
                        halo_off + (q * 2 + (1 - k)) * C * (MPI_Aint)sizeof(double), C, MPI_DOUBLE,
                        win);
            }
            for (int k = 0; k < 2; k++) {
                if (nb[k] < 0) continue;
                MPI_Win_flush(nb[k], win); /* the rows are there before the flag */
                MPI_Accumulate(&flagval, 1, MPI_INT64_T, nb[k],
                               (MPI_Aint)(1 - k) * (MPI_Aint)sizeof(int64_t), 1, MPI_INT64_T,
                               MPI_REPLACE, win);
                MPI_Win_flush(nb[k], win);
            }
        }
        if (s >= 0) {
            for (int i = 1; i < R - 1; i++) {
                halo_row(cur + (size_t)(i - 1) * C, cur + (size_t)i * C, cur + (size_t)(i + 1) * C,
                         nxt + (size_t)i * C, NULL, C);
            }
            double *t = cur;
            cur = nxt;
            nxt = t;
        }
    }
    t1 = MPI_Wtime();
    MPI_Win_unlock_all(win);

    double mine[2] = {halo_checksum(cur, R, C, (long)me * R), t1 - t0};
    double *all = malloc(2 * (size_t)np * sizeof(double));
    if (all == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me == 0) {
        rc = halo_report(&p, "mpi_rma", np, all);
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    free(all);
    free(cur);
    free(nxt);
    free(ghost[0]);
    free(ghost[1]);
    return rc;
}
