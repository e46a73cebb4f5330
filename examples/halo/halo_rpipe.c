/*
 * halo_rpipe: the 2-D heat equation over RDMA Managed Buffers (Listing 5.2).
 *   oshrun -n N examples/halo/halo_rpipe [-p small|large] [-r rows] [-c cols] [-s steps]
 *
 * Each PE has two channels per neighbour, one in each direction. A boundary
 * row of the new state is computed straight into memory rmalloc'ed in the
 * neighbour's buffer (zero copy: on shm that is the neighbour's own memory)
 * and rwrite()n as soon as it is done, before the interior rows; the
 * neighbour rread()s it in place as its halo and rfree()s it once its own
 * boundary row is computed. The notified flag of each message is the only
 * synchronization: no barrier, no acknowledgement in the application, and
 * the channel's depth lets a PE run ahead of its neighbours by a few steps.
 */
#include "halo.h"

#include "../app_rpipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH 4 /* halo messages a channel holds */

static int me, np;

static void check(int rc, const char *what)
{
    if (rc != R_SUCCESS) {
        fprintf(stderr, "halo_rpipe PE %d: %s: %s\n", me, what, rstrerror(rc));
        network_abort(1);
    }
}

static rch_t open_channel(int peer, int producer, size_t row_bytes)
{
    rmalloc_config_t cfg;
    rch_t ch;

    rmalloc_config_init(&cfg);
    cfg.peer = peer;
    cfg.op = RDMA_PUT;
    cfg.rdma_active = producer; /* PUT: the producer writes into the consumer */
    cfg.algorithm = NEXT_FIT;
    cfg.sync = NET_SYNC_BLKS;
    cfg.alloc_size = DEPTH * row_bytes;
    /* every message has this size: slots of it keep the allocator off the path */
    cfg.slot_payload = row_bytes <= RSLOT_PAYLOAD_MAX ? row_bytes : 0;
    check(rpipe(&ch, &cfg), "rpipe");
    return ch;
}

/* Memory for the next boundary row in the neighbour's buffer. */
static double *next_out(rch_t ch, size_t bytes, raddr_t *d)
{
    double *p = rmalloc_mem(ch, bytes, d);

    if (p == NULL) {
        fprintf(stderr, "halo_rpipe PE %d: rmalloc failed\n", me);
        network_abort(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    halo_params_t p;
    rch_t in[2] = {NULL, NULL}, out[2] = {NULL, NULL}; /* [0] left, [1] right */
    double *cur, *nxt, *ghost[2], t0 = 0.0, t1;
    size_t row_bytes;
    int nb[2], R, C;

    if (halo_parse(argc, argv, "halo_rpipe", &p)) return 2;
    if (rinit(&me, &np) != R_SUCCESS) {
        fprintf(stderr, "halo_rpipe: rinit failed\n");
        return 1;
    }
    R = p.rows, C = p.cols;
    row_bytes = (size_t)C * sizeof(double);
    cur = malloc((size_t)R * row_bytes);
    nxt = malloc((size_t)R * row_bytes);
    ghost[0] = malloc(row_bytes);
    ghost[1] = malloc(row_bytes);
    if (cur == NULL || nxt == NULL || ghost[0] == NULL || ghost[1] == NULL) {
        fprintf(stderr, "halo_rpipe PE %d: out of memory\n", me);
        network_abort(1);
    }
    halo_ghost_rows(ghost[0], ghost[1], C);
    for (int i = 0; i < R; i++) {
        for (int j = 0; j < C; j++) cur[(size_t)i * C + j] = halo_init_value((long)me * R + i, j);
    }
    nb[0] = me > 0 ? me - 1 : -1;
    nb[1] = me < np - 1 ? me + 1 : -1;
    for (int k = 0; k < 2; k++) {
        if (nb[k] < 0) continue;
        out[k] = open_channel(nb[k], 1, row_bytes);
        in[k] = open_channel(nb[k], 0, row_bytes);
    }

    app_rpipe_clock_init();
    network_barrier();
    /* state 0's boundary rows */
    for (int k = 0; k < 2; k++) {
        raddr_t d;
        if (out[k] == NULL) continue;
        memcpy(next_out(out[k], row_bytes, &d), cur + (size_t)(k ? R - 1 : 0) * C, row_bytes);
        check(rwrite(out[k], d), "rwrite");
    }
    for (long s = 0; s < p.total; s++) {
        if (s == p.warm) { /* the clock starts after the untimed warm-up steps */
            app_rpipe_clock_sync();
            t0 = app_now();
        }
        const double *halo[2];
        raddr_t hd[2], od[2];
        double *o[2] = {NULL, NULL};
        int more = s + 1 < p.total; /* the neighbours need our new rows */

        for (int k = 0; k < 2; k++) {
            if (in[k] == NULL) {
                halo[k] = ghost[k];
                continue;
            }
            check(rread(in[k], &hd[k], (void **)&halo[k], row_bytes), "rread");
            if (more) o[k] = next_out(out[k], row_bytes, &od[k]);
        }
        /* boundary rows first, written into the neighbours' buffers */
        if (R == 1) {
            halo_row(halo[0], cur, halo[1], nxt, o[0], C);
            if (o[1] != NULL) memcpy(o[1], nxt, row_bytes);
        } else {
            halo_row(halo[0], cur, cur + C, nxt, o[0], C);
            halo_row(cur + (size_t)(R - 2) * C, cur + (size_t)(R - 1) * C, halo[1],
                     nxt + (size_t)(R - 1) * C, o[1], C);
        }
        for (int k = 0; k < 2; k++) {
            if (in[k] == NULL) continue;
            if (more) check(rwrite(out[k], od[k]), "rwrite");
            check(rfree(in[k], hd[k]), "rfree");
        }
        for (int i = 1; i < R - 1; i++) {
            halo_row(cur + (size_t)(i - 1) * C, cur + (size_t)i * C, cur + (size_t)(i + 1) * C,
                     nxt + (size_t)i * C, NULL, C);
        }
        double *t = cur;
        cur = nxt;
        nxt = t;
    }
    t1 = app_now();
    app_rpipe_clock_sync();

    double mine[2] = {halo_checksum(cur, R, C, (long)me * R), t1 - t0};
    int rc = 0;
    double *all = malloc(2 * (size_t)np * sizeof(double));
    if (all == NULL) network_abort(1);
    check(network_allgather(mine, all, sizeof(mine)), "network_allgather");
    if (me == 0) {
        rc = halo_report(&p, "rpipe", np, all);
    }
    app_rpipe_clock_free();
    rexit();
    free(all);
    free(cur);
    free(nxt);
    free(ghost[0]);
    free(ghost[1]);
    return rc;
}
