/*
 * em3d_shmem: EM3D over OpenSHMEM.
 *   oshrun -n N examples/em3d/em3d_shmem [-p small|large] [-n nodes] [-d degree] [-r remote%]
 *                                        [-s steps] [-S seed]
 *
 * Every PE has a symmetric receive region per kind of value and step
 * parity, laid out identically on all PEs from the graph (each pair's
 * message at a fixed offset). A PE packs what a peer reads, shmem_puts it
 * into the peer's region, shmem_fence()s and raises the peer's flag for
 * that pair (step + 1). After a half-step it acknowledges each sender
 * (step + 1 in the sender's ack word): the graph is not symmetric, so
 * without that a sender could overwrite a parity buffer that its reader has
 * not used yet. Flags and acks are waited on with shmem_wait_until.
 */
#include "em3d.h"

#include <shmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    em3d_params_t p;
    em3d_graph_t g;
    const double **seg;
    double *val[2], *rbuf[2], *sbuf, *results, t0 = 0.0, t1;
    long *flag[2],
        *ack[2]; /* symmetric, [np] each: flag[V][p] from sender p, ack[V][q] from reader q */
    long maxsend = 1;
    int me, np, rc = 0;

    if (em3d_parse(argc, argv, "em3d_shmem", &p)) return 2;
    shmem_init();
    me = shmem_my_pe();
    np = shmem_n_pes();
    if (em3d_graph_build(&p, me, np, &g)) {
        fprintf(stderr, "em3d_shmem PE %d: out of memory building the graph\n", me);
        shmem_global_exit(1);
    }
    seg = calloc((size_t)np, sizeof(double *));
    results = shmem_calloc(2 * (size_t)np, sizeof(double));
    for (int V = 0; V < 2; V++) {
        val[V] = malloc((size_t)p.n * sizeof(double));
        rbuf[V] = shmem_malloc(2 * (size_t)(g.region_len[V] + 1) * sizeof(double));
        flag[V] = shmem_calloc((size_t)np, sizeof(long));
        ack[V] = shmem_calloc((size_t)np, sizeof(long));
        if (val[V] == NULL || rbuf[V] == NULL || flag[V] == NULL || ack[V] == NULL) {
            shmem_global_exit(1);
        }
        for (int i = 0; i < p.n; i++) val[V][i] = em3d_init_value(me, V, i);
        for (int q = 0; q < np; q++) {
            if (g.send_len[V][q] > maxsend) maxsend = g.send_len[V][q];
        }
    }
    sbuf = malloc((size_t)maxsend * sizeof(double));
    if (seg == NULL || results == NULL || sbuf == NULL) shmem_global_exit(1);

    shmem_barrier_all();
    for (long s = 0; s < p.total; s++) {
        if (s == p.warm) { /* the clock starts after the untimed warm-up steps */
            shmem_barrier_all();
            t0 = app_now();
        }
        for (int K = 0; K < 2; K++) {
            int V = 1 - K;
            double *region = rbuf[V] + (size_t)(s % 2) * (size_t)(g.region_len[V] + 1);
            for (int q = 0; q < np; q++) {
                if (g.send_len[V][q] == 0) continue;
                /* q has used what we put into this parity two steps ago */
                if (s >= 2) shmem_long_wait_until(&ack[V][q], SHMEM_CMP_GE, s - 1);
                em3d_pack(&g, V, q, val[V], sbuf);
                shmem_double_put(region + g.send_off[V][q], sbuf, (size_t)g.send_len[V][q], q);
            }
            shmem_fence();
            for (int q = 0; q < np; q++) {
                if (g.send_len[V][q] > 0) shmem_long_atomic_set(&flag[V][me], s + 1, q);
            }
            for (int q = 0; q < np; q++) {
                if (g.recv_len[V][q] == 0) continue;
                shmem_long_wait_until(&flag[V][q], SHMEM_CMP_GE, s + 1);
                seg[q] = region + g.recv_off[V][q];
            }
            seg[me] = val[V];
            em3d_compute(val[K], p.n, p.degree, g.in[K], seg);
            for (int q = 0; q < np; q++) {
                if (g.recv_len[V][q] > 0) shmem_long_atomic_set(&ack[V][me], s + 1, q);
            }
        }
    }
    t1 = app_now();

    double mine[2] = {em3d_checksum(val[EM3D_E], val[EM3D_H], p.n), t1 - t0};
    shmem_double_put(results + 2 * (size_t)me, mine, 2, 0);
    shmem_barrier_all();
    if (me == 0) {
        rc = em3d_report(&p, "shmem", np, results);
    }
    shmem_barrier_all();
    for (int V = 0; V < 2; V++) {
        shmem_free(ack[V]);
        shmem_free(flag[V]);
        shmem_free(rbuf[V]);
        free(val[V]);
    }
    shmem_free(results);
    shmem_finalize();
    free(sbuf);
    free(seg);
    em3d_graph_free(&g);
    return rc;
}
