/*
 * em3d_mpi: EM3D over MPI two-sided messages (Listing 5.4).
 *   mpirun -np N examples/em3d/em3d_mpi [-p small|large] [-n nodes] [-d degree] [-r remote%]
 *                                       [-s steps] [-S seed]
 *
 * At each half-step a rank posts an MPI_Irecv per peer it reads from,
 * packs and MPI_Isends what each peer reads, waits for all of them and runs
 * the kernel on the received buffers.
 */
#include "em3d.h"

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    em3d_params_t p;
    em3d_graph_t g;
    const double **seg;
    double *val[2], *rbuf[2], **sbuf[2], t0 = 0.0, t1;
    MPI_Request *req;
    int me, np, rc = 0;

    if (em3d_parse(argc, argv, "em3d_mpi", &p)) return 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (em3d_graph_build(&p, me, np, &g)) {
        fprintf(stderr, "em3d_mpi rank %d: out of memory building the graph\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    seg = calloc((size_t)np, sizeof(double *));
    req = malloc(2 * (size_t)np * sizeof(MPI_Request));
    if (seg == NULL || req == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int V = 0; V < 2; V++) {
        long total = 1;
        for (int q = 0; q < np; q++) total += g.recv_len[V][q];
        val[V] = malloc((size_t)p.n * sizeof(double));
        rbuf[V] = malloc((size_t)total * sizeof(double));
        sbuf[V] = calloc((size_t)np, sizeof(double *));
        if (val[V] == NULL || rbuf[V] == NULL || sbuf[V] == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
        for (int i = 0; i < p.n; i++) val[V][i] = em3d_init_value(me, V, i);
        for (int q = 0; q < np; q++) {
            if (g.send_len[V][q] == 0) continue;
            sbuf[V][q] = malloc((size_t)g.send_len[V][q] * sizeof(double));
            if (sbuf[V][q] == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }

    MPI_Barrier(MPI_COMM_WORLD);
    for (long s = 0; s < p.total; s++) {
        if (s == p.warm) { /* the clock starts after the untimed warm-up steps */
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        for (int K = 0; K < 2; K++) {
            int V = 1 - K, nreq = 0;
            double *r = rbuf[V];
            for (int q = 0; q < np; q++) {
                if (g.recv_len[V][q] == 0) continue;
                seg[q] = r;
                MPI_Irecv(r, g.recv_len[V][q], MPI_DOUBLE, q, V, MPI_COMM_WORLD, &req[nreq++]);
                r += g.recv_len[V][q];
            }
            for (int q = 0; q < np; q++) {
                if (g.send_len[V][q] == 0) continue;
                em3d_pack(&g, V, q, val[V], sbuf[V][q]);
                MPI_Isend(sbuf[V][q], g.send_len[V][q], MPI_DOUBLE, q, V, MPI_COMM_WORLD,
                          &req[nreq++]);
            }
            MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
            seg[me] = val[V];
            em3d_compute(val[K], p.n, p.degree, g.in[K], seg);
        }
    }
    t1 = MPI_Wtime();

    double mine[2] = {em3d_checksum(val[EM3D_E], val[EM3D_H], p.n), t1 - t0};
    double *all = malloc(2 * (size_t)np * sizeof(double));
    if (all == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me == 0) {
        rc = em3d_report(&p, "mpi", np, all);
    }
    MPI_Finalize();
    free(all);
    for (int V = 0; V < 2; V++) {
        for (int q = 0; q < np; q++) free(sbuf[V][q]);
        free(sbuf[V]);
        free(rbuf[V]);
        free(val[V]);
    }
    free(req);
    free(seg);
    em3d_graph_free(&g);
    return rc;
}
