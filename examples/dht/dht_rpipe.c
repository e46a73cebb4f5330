/*
 * dht_rpipe: the distributed hash table over RDMA Managed Buffers, with
 * active messages (Listing 5.3).
 *   oshrun -n N examples/dht/dht_rpipe [-p small|large] [-v volume] [-i inserts] [-b batch]
 *                                      [-S seed]
 *
 * A channel per ordered pair of PEs. An insert for another PE is written
 * straight into the message being filled in that PE's buffer (rmalloc'ed
 * there: zero copy); a full message (batch inserts) is rwrite()n. Between
 * its own inserts, and whenever a channel is full, a PE polls all its
 * inbound channels with rread_nb, applies the requests it finds to its part
 * of the table in place and rfree()s them. Nobody knows how many requests
 * will come or from whom; a final message with count -1 on every channel
 * ends the run.
 */
#include "dht.h"

#include "../app_rpipe.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHANNEL_BYTES 32768 /* bytes of requests in flight per channel */
#define SERVE_EVERY   16    /* own inserts between polls of the inbound channels */

typedef struct msg {
    int64_t count; /* requests; 0: warm-up; -1: the sender is done */
    dht_req_t r[];
} msg_t;

static int me, np;
static dht_params_t p;
static dht_table_t table;
static rch_t *out, *in;
static msg_t **open_msg; /* message being filled for each peer, in its buffer */
static raddr_t *open_desc;
static size_t msg_bytes;
static long done, warm, errors, idle, idle_spin;

static void check(int rc, const char *what)
{
    if (rc != R_SUCCESS) {
        fprintf(stderr, "dht_rpipe PE %d: %s: %s\n", me, what, rstrerror(rc));
        network_abort(1);
    }
}

/* One pass over the inbound channels: applies every request that has
 * arrived (Listing 5.3's handle_hashreq_thread). */
static void serve(void)
{
    int found = 0;

    for (int q = 0; q < np; q++) {
        raddr_t d;
        msg_t *m;
        int rc;

        if (q == me) continue;
        while ((rc = rread_nb(in[q], &d, (void **)&m, msg_bytes)) == R_SUCCESS) {
            found = 1;
            if (m->count < 0) {
                done++;
            } else if (m->count == 0) {
                warm++;
            } else {
                for (int64_t k = 0; k < m->count; k++) {
                    if (dht_local_insert(&table, m->r[k].key, m->r[k].value) && errors++ == 0) {
                        fprintf(stderr, "dht_rpipe PE %d: collision heap full\n", me);
                    }
                }
            }
            check(rfree(in[q], d), "rfree");
        }
        if (rc != R_PENDING) check(rc, "rread_nb");
    }
    /* oversubscribed PEs: let the ones we wait for run */
    if (found) {
        idle = 0;
    } else if (++idle > idle_spin) {
        sched_yield();
    }
}

/* The next message to q, in q's buffer; serves while the channel is full
 * (q may itself be waiting for room in its channel to us). */
static msg_t *next_msg(int q)
{
    int rc;

    if (open_msg[q] != NULL) return open_msg[q];
    while ((rc = rmalloc_nb(out[q], msg_bytes, &open_desc[q])) == R_PENDING) serve();
    check(rc, "rmalloc_nb");
    open_msg[q] = rmem(out[q], open_desc[q]);
    open_msg[q]->count = 0;
    return open_msg[q];
}

static void send_msg(int q)
{
    check(rwrite(out[q], open_desc[q]), "rwrite");
    open_msg[q] = NULL;
}

static void send_control(int q, int64_t count)
{
    if (open_msg[q] != NULL && open_msg[q]->count > 0) send_msg(q);
    next_msg(q)->count = count;
    send_msg(q);
}

int main(int argc, char **argv)
{
    rmalloc_config_t cfg;
    void *mem;
    int64_t heap_top;
    long heap_cap;
    double t0, t1;
    int rc = 0;

    if (dht_parse(argc, argv, "dht_rpipe", &p)) return 2;
    if (rinit(&me, &np) != R_SUCCESS) {
        fprintf(stderr, "dht_rpipe: rinit failed\n");
        return 1;
    }
    heap_cap = dht_heap_cap(&p, np);
    idle_spin = app_idle_spin(np);
    mem = heap_cap < 0 ? NULL : malloc((size_t)dht_table_bytes(p.volume, heap_cap));
    out = calloc((size_t)np, sizeof(rch_t));
    in = calloc((size_t)np, sizeof(rch_t));
    open_msg = calloc((size_t)np, sizeof(msg_t *));
    open_desc = calloc((size_t)np, sizeof(raddr_t));
    if (mem == NULL || out == NULL || in == NULL || open_msg == NULL || open_desc == NULL) {
        fprintf(stderr, "dht_rpipe PE %d: out of memory\n", me);
        network_abort(1);
    }
    dht_table_init(&table, p.volume, heap_cap, mem, &heap_top);
    msg_bytes = sizeof(msg_t) + (size_t)p.batch * sizeof(dht_req_t);

    rmalloc_config_init(&cfg);
    cfg.op = RDMA_PUT;
    cfg.algorithm = NEXT_FIT;
    cfg.sync = NET_SYNC_BLKS;
    cfg.alloc_size = (CHANNEL_BYTES / msg_bytes < 4 ? 4 : CHANNEL_BYTES / msg_bytes) * msg_bytes;
    for (int q = 0; q < np; q++) {
        if (q == me) continue;
        cfg.peer = q;
        cfg.rdma_active = 1; /* PUT: the sender writes into the owner's buffer */
        check(rpipe(&out[q], &cfg), "rpipe");
        cfg.rdma_active = 0;
        check(rpipe(&in[q], &cfg), "rpipe");
    }

    app_rpipe_clock_init();
    /* warm-up: one empty message each way connects every channel */
    for (int q = 0; q < np; q++) {
        if (q != me) send_control(q, 0);
    }
    while (warm < np - 1) serve();
    app_rpipe_clock_sync();
    t0 = app_now();
    for (long i = 0; i < p.inserts; i++) {
        dht_req_t r = dht_make(&p, me, i);
        int o = dht_owner(r.key, np);

        if (o == me) {
            if (dht_local_insert(&table, r.key, r.value) && errors++ == 0) {
                fprintf(stderr, "dht_rpipe PE %d: collision heap full\n", me);
            }
        } else {
            msg_t *m = next_msg(o);
            m->r[m->count++] = r;
            if (m->count == p.batch) send_msg(o);
        }
        if (i % SERVE_EVERY == 0) serve();
    }
    for (int q = 0; q < np; q++) {
        if (q != me) send_control(q, -1);
    }
    while (done < np - 1) serve();
    t1 = app_now();
    app_rpipe_clock_sync(); /* every PE has had every insert served */

    struct {
        long errs;
        double time;
    } mine = {errors + dht_verify(&p, &table, me, np), t1 - t0}, *all;
    all = malloc((size_t)np * sizeof(*all));
    if (all == NULL) network_abort(1);
    check(network_allgather(&mine, all, sizeof(mine)), "network_allgather");
    if (me == 0) {
        long *errs = malloc((size_t)np * sizeof(long));
        double *times = malloc((size_t)np * sizeof(double));
        if (errs == NULL || times == NULL) network_abort(1);
        for (int r = 0; r < np; r++) errs[r] = all[r].errs, times[r] = all[r].time;
        rc = dht_report(&p, "rpipe", np, errs, times);
        free(errs);
        free(times);
    }
    app_rpipe_clock_free();
    rexit();
    free(all);
    free(mem);
    free(out);
    free(in);
    free(open_msg);
    free(open_desc);
    return rc;
}
