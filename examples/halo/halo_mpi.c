/*
 * halo_mpi: the 2-D heat equation over MPI two-sided messages.
 *   mpirun -np N examples/halo/halo_mpi [-p small|large] [-r rows] [-c cols] [-s steps]
 *
 * The usual overlapped exchange: the receives for the next state are posted
 * before its boundary rows are sent (MPI_Irecv / MPI_Isend), and the
 * interior rows are computed while the messages travel.
 */
#include "halo.h"

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    halo_params_t p;
    double *cur, *nxt, *ghost[2], *hbuf, t0 = 0.0, t1;
    MPI_Request rreq[2], sreq[2];
    int me, np, nb[2], R, C, rc = 0;

    if (halo_parse(argc, argv, "halo_mpi", &p)) return 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    R = p.rows, C = p.cols;
    cur = malloc((size_t)R * C * sizeof(double));
    nxt = malloc((size_t)R * C * sizeof(double));
    hbuf = malloc(4 * (size_t)C * sizeof(double)); /* [parity][side][C] */
    ghost[0] = malloc((size_t)C * sizeof(double));
    ghost[1] = malloc((size_t)C * sizeof(double));
    if (cur == NULL || nxt == NULL || hbuf == NULL || ghost[0] == NULL || ghost[1] == NULL) {
        fprintf(stderr, "halo_mpi rank %d: out of memory\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    halo_ghost_rows(ghost[0], ghost[1], C);
    for (int i = 0; i < R; i++) {
        for (int j = 0; j < C; j++) cur[(size_t)i * C + j] = halo_init_value((long)me * R + i, j);
    }
    nb[0] = me > 0 ? me - 1 : MPI_PROC_NULL;
    nb[1] = me < np - 1 ? me + 1 : MPI_PROC_NULL;

    MPI_Barrier(MPI_COMM_WORLD);
    /* tag k: a row travelling to the receiver's side k */
    for (int k = 0; k < 2; k++) {
        MPI_Irecv(hbuf + (size_t)k * C, C, MPI_DOUBLE, nb[k], k, MPI_COMM_WORLD, &rreq[k]);
    }
    for (int k = 0; k < 2; k++) {
        MPI_Isend(cur + (size_t)(k ? R - 1 : 0) * C, C, MPI_DOUBLE, nb[k], 1 - k, MPI_COMM_WORLD,
                  &sreq[k]);
    }
    for (long s = 0; s < p.total; s++) {
        if (s == p.warm) { /* the clock starts after the untimed warm-up steps */
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        const double *halo[2];
        double *h = hbuf + (size_t)(s % 2) * 2 * C;

        MPI_Waitall(2, rreq, MPI_STATUSES_IGNORE);
        for (int k = 0; k < 2; k++) halo[k] = nb[k] == MPI_PROC_NULL ? ghost[k] : h + (size_t)k * C;
        if (R == 1) {
            halo_row(halo[0], cur, halo[1], nxt, NULL, C);
        } else {
            halo_row(halo[0], cur, cur + C, nxt, NULL, C);
            halo_row(cur + (size_t)(R - 2) * C, cur + (size_t)(R - 1) * C, halo[1],
                     nxt + (size_t)(R - 1) * C, NULL, C);
        }
        /* the previous sends read cur's boundary rows: done before nxt
         * becomes cur and is overwritten */
        MPI_Waitall(2, sreq, MPI_STATUSES_IGNORE);
        if (s + 1 < p.total) {
            double *hn = hbuf + (size_t)((s + 1) % 2) * 2 * C;
            for (int k = 0; k < 2; k++) {
                MPI_Irecv(hn + (size_t)k * C, C, MPI_DOUBLE, nb[k], k, MPI_COMM_WORLD, &rreq[k]);
            }
            for (int k = 0; k < 2; k++) {
                MPI_Isend(nxt + (size_t)(k ? R - 1 : 0) * C, C, MPI_DOUBLE, nb[k], 1 - k,
                          MPI_COMM_WORLD, &sreq[k]);
            }
        }
        for (int i = 1; i < R - 1; i++) {
            halo_row(cur + (size_t)(i - 1) * C, cur + (size_t)i * C, cur + (size_t)(i + 1) * C,
                     nxt + (size_t)i * C, NULL, C);
        }
        double *t = cur;
        cur = nxt;
        nxt = t;
    }
    t1 = MPI_Wtime();

    double mine[2] = {halo_checksum(cur, R, C, (long)me * R), t1 - t0};
    double *all = malloc(2 * (size_t)np * sizeof(double));
    if (all == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me == 0) {
        rc = halo_report(&p, "mpi", np, all);
    }
    MPI_Finalize();
    free(all);
    free(cur);
    free(nxt);
    free(hbuf);
    free(ghost[0]);
    free(ghost[1]);
    return rc;
}
