/*
 * em3d_rpipe: EM3D over RDMA Managed Buffers (Listing 5.8, Fig. 5.2).
 *   oshrun -n N examples/em3d/em3d_rpipe [-p small|large] [-n nodes] [-d degree] [-r remote%]
 *                                        [-s steps] [-S seed]
 *
 * One channel per ordered pair of PEs that share edges, and per kind of
 * value (context 0 carries E values, context 1 H values). At each half-step
 * a PE packs the values its peer reads straight into memory rmalloc'ed in
 * the peer's buffer (zero copy) and rwrite()s it; the peer rread()s the
 * message, its kernel reads the values in place, and it rfree()s them after
 * the half-step. The application has no synchronization of its own: the
 * notified flags and the allocators' sync are all there is.
 */
#include "em3d.h"

#include "../app_rpipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH                                                                                      \
    2 /* messages a channel holds: a writer may run two steps ahead of its reader;
                   * deeper only spreads the messages over more memory (cache) */

static int me, np;

static void check(int rc, const char *what)
{
    if (rc != R_SUCCESS) {
        fprintf(stderr, "em3d_rpipe PE %d: %s: %s\n", me, what, rstrerror(rc));
        network_abort(1);
    }
}

static rch_t open_channel(int peer, int producer, int kind, size_t bytes)
{
    rmalloc_config_t cfg;
    rch_t ch;

    rmalloc_config_init(&cfg);
    cfg.peer = peer;
    cfg.op = RDMA_PUT;
    cfg.rdma_active = producer;
    cfg.algorithm = NEXT_FIT;
    cfg.sync = NET_SYNC_BLKS;
    cfg.context = (unsigned)kind;
    cfg.alloc_size = DEPTH * bytes;
    /* every message has this size: slots of it keep the allocator off the path */
    cfg.slot_payload = bytes <= RSLOT_PAYLOAD_MAX ? bytes : 0;
    check(rpipe(&ch, &cfg), "rpipe");
    return ch;
}

int main(int argc, char **argv)
{
    em3d_params_t p;
    em3d_graph_t g;
    rch_t *out[2], *in[2];
    raddr_t *hd;
    const double **seg;
    double *val[2], *stage, t0 = 0.0, t1;
    int stage_len = 1;
    int rc = 0;

    if (em3d_parse(argc, argv, "em3d_rpipe", &p)) return 2;
    if (rinit(&me, &np) != R_SUCCESS) {
        fprintf(stderr, "em3d_rpipe: rinit failed\n");
        return 1;
    }
    if (em3d_graph_build(&p, me, np, &g)) {
        fprintf(stderr, "em3d_rpipe PE %d: out of memory building the graph\n", me);
        network_abort(1);
    }
    hd = calloc((size_t)np, sizeof(raddr_t));
    seg = calloc((size_t)np, sizeof(double *));
    for (int V = 0; V < 2; V++) {
        val[V] = malloc((size_t)p.n * sizeof(double));
        out[V] = calloc((size_t)np, sizeof(rch_t));
        in[V] = calloc((size_t)np, sizeof(rch_t));
        if (val[V] == NULL || out[V] == NULL || in[V] == NULL) network_abort(1);
        for (int i = 0; i < p.n; i++) val[V][i] = em3d_init_value(me, V, i);
        for (int q = 0; q < np; q++) {
            if (g.send_len[V][q] > 0) {
                out[V][q] = open_channel(q, 1, V, (size_t)g.send_len[V][q] * sizeof(double));
            }
            if (g.recv_len[V][q] > 0) {
                in[V][q] = open_channel(q, 0, V, (size_t)g.recv_len[V][q] * sizeof(double));
            }
        }
    }
    for (int V = 0; V < 2; V++) {
        for (int q = 0; q < np; q++) {
            if (g.send_len[V][q] > stage_len) stage_len = g.send_len[V][q];
        }
    }
    stage = malloc((size_t)stage_len * sizeof(double));
    if (hd == NULL || seg == NULL || stage == NULL) network_abort(1);

    app_rpipe_clock_init();
    network_barrier();
    for (long s = 0; s < p.total; s++) {
        if (s == p.warm) { /* the clock starts after the untimed warm-up steps */
            app_rpipe_clock_sync();
            t0 = app_now();
        }
        for (int K = 0; K < 2; K++) { /* E nodes from H values, then H from E */
            int V = 1 - K;
            for (int q = 0; q < np; q++) {
                raddr_t d;
                double *buf;
                if (out[V][q] == NULL) continue;
                buf = rmalloc_mem(out[V][q], (size_t)g.send_len[V][q] * sizeof(double), &d);
                if (buf == NULL) check(R_ERR_NOMEM, "rmalloc");
                /* Gathered here, then copied: 8-byte stores scattered over
                 * lines the peer last read wait for those lines one by one;
                 * a copy asks for whole lines (10% of a run at 2 PEs). */
                em3d_pack(&g, V, q, val[V], stage);
                memcpy(buf, stage, (size_t)g.send_len[V][q] * sizeof(double));
                check(rwrite(out[V][q], d), "rwrite");
            }
            for (int q = 0; q < np; q++) {
                if (in[V][q] == NULL) continue;
                check(rread(in[V][q], &hd[q], (void **)&seg[q],
                            (size_t)g.recv_len[V][q] * sizeof(double)),
                      "rread");
            }
            seg[me] = val[V];
            em3d_compute(val[K], p.n, p.degree, g.in[K], seg);
            for (int q = 0; q < np; q++) {
                if (in[V][q] != NULL) check(rfree(in[V][q], hd[q]), "rfree");
            }
        }
    }
    t1 = app_now();
    app_rpipe_clock_sync();

    double mine[2] = {em3d_checksum(val[EM3D_E], val[EM3D_H], p.n), t1 - t0};
    double *all = malloc(2 * (size_t)np * sizeof(double));
    if (all == NULL) network_abort(1);
    check(network_allgather(mine, all, sizeof(mine)), "network_allgather");
    if (me == 0) {
        rc = em3d_report(&p, "rpipe", np, all);
    }
    app_rpipe_clock_free();
    rexit();
    free(all);
    for (int V = 0; V < 2; V++) {
        free(val[V]);
        free(out[V]);
        free(in[V]);
    }
    free(hd);
    free(stage);
    free(seg);
    em3d_graph_free(&g);
    return rc;
}
