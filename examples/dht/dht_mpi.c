/*
 * dht_mpi: the distributed hash table over MPI two-sided active messages.
 *   mpirun -np N examples/dht/dht_mpi [-p small|large] [-v volume] [-i inserts] [-b batch]
 *                                     [-S seed]
 *
 * The same protocol as dht_rpipe: inserts for another rank are batched in a
 * per-destination buffer and sent with MPI_Isend when full (a small ring of
 * send buffers per destination); one MPI_Irecv per source stays posted and
 * is polled with MPI_Testany between the rank's own inserts. A message with
 * count -1 from every other rank ends the run.
 */
#include "dht.h"

#include <mpi.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEND_BUFS   8  /* send buffers per destination */
#define SERVE_EVERY 16 /* own inserts between polls */
#define TAG         1

typedef struct msg {
    int64_t count; /* requests; 0: warm-up; -1: the sender is done */
    dht_req_t r[];
} msg_t;

static int me, np;
static dht_params_t p;
static dht_table_t table;
static size_t msg_bytes;
static char *rbuf;        /* np receive buffers */
static MPI_Request *rreq; /* np: the posted receive per source */
static char *sbuf;        /* np x SEND_BUFS send buffers */
static MPI_Request *sreq; /* np x SEND_BUFS */
static int *sslot;        /* per destination: the buffer being filled */
static long done, warm, errors, idle, idle_spin;

static msg_t *rmsg(int q)
{
    return (msg_t *)(rbuf + (size_t)q * msg_bytes);
}
static msg_t *smsg(int q, int k)
{
    return (msg_t *)(sbuf + ((size_t)q * SEND_BUFS + (size_t)k) * msg_bytes);
}

static void post_recv(int q)
{
    MPI_Irecv(rmsg(q), (int)msg_bytes, MPI_BYTE, q, TAG, MPI_COMM_WORLD, &rreq[q]);
}

/* Applies every request that has arrived. */
static void serve(void)
{
    int found = 0;

    for (;;) {
        int q, flag;
        MPI_Testany(np, rreq, &q, &flag, MPI_STATUS_IGNORE);
        if (!flag || q == MPI_UNDEFINED) break;
        found = 1;
        msg_t *m = rmsg(q);
        if (m->count < 0) {
            done++; /* nothing more comes from q: rreq[q] stays MPI_REQUEST_NULL */
            continue;
        }
        if (m->count == 0) {
            warm++;
        } else {
            for (int64_t k = 0; k < m->count; k++) {
                if (dht_local_insert(&table, m->r[k].key, m->r[k].value) && errors++ == 0) {
                    fprintf(stderr, "dht_mpi rank %d: collision heap full\n", me);
                }
            }
        }
        post_recv(q);
    }
    if (found) {
        idle = 0;
    } else if (++idle > idle_spin) {
        sched_yield();
    }
}

/* The buffer being filled for q; waits (serving) until it is free. */
static msg_t *fill_buf(int q)
{
    MPI_Request *r = &sreq[(size_t)q * SEND_BUFS + (size_t)sslot[q]];
    int flag = 0;

    for (;;) {
        MPI_Test(r, &flag, MPI_STATUS_IGNORE);
        if (flag) break;
        serve();
    }
    return smsg(q, sslot[q]);
}

static void send_buf(int q)
{
    int k = sslot[q];

    MPI_Isend(smsg(q, k), (int)msg_bytes, MPI_BYTE, q, TAG, MPI_COMM_WORLD,
              &sreq[(size_t)q * SEND_BUFS + (size_t)k]);
    sslot[q] = (k + 1) % SEND_BUFS;
}

static void send_control(int q, int64_t count)
{
    msg_t *m = fill_buf(q);

    if (m->count > 0) {
        send_buf(q);
        m = fill_buf(q);
    }
    m->count = count;
    send_buf(q);
    fill_buf(q)->count = 0;
}

int main(int argc, char **argv)
{
    void *mem;
    int64_t heap_top;
    long heap_cap;
    double t0, t1;
    int rc = 0;

    if (dht_parse(argc, argv, "dht_mpi", &p)) return 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    heap_cap = dht_heap_cap(&p, np);
    idle_spin = app_idle_spin(np);
    msg_bytes = sizeof(msg_t) + (size_t)p.batch * sizeof(dht_req_t);
    mem = heap_cap < 0 ? NULL : malloc((size_t)dht_table_bytes(p.volume, heap_cap));
    rbuf = malloc((size_t)np * msg_bytes);
    rreq = malloc((size_t)np * sizeof(MPI_Request));
    sbuf = calloc((size_t)np * SEND_BUFS, msg_bytes);
    sreq = malloc((size_t)np * SEND_BUFS * sizeof(MPI_Request));
    sslot = calloc((size_t)np, sizeof(int));
    if (mem == NULL || rbuf == NULL || rreq == NULL || sbuf == NULL || sreq == NULL ||
        sslot == NULL) {
        fprintf(stderr, "dht_mpi rank %d: out of memory\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    dht_table_init(&table, p.volume, heap_cap, mem, &heap_top);
    for (size_t k = 0; k < (size_t)np * SEND_BUFS; k++) sreq[k] = MPI_REQUEST_NULL;
    for (int q = 0; q < np; q++) {
        if (q == me) {
            rreq[q] = MPI_REQUEST_NULL;
        } else {
            post_recv(q);
        }
    }

    /* warm-up: one empty message each way */
    for (int q = 0; q < np; q++) {
        if (q != me) send_control(q, 0);
    }
    while (warm < np - 1) serve();
    MPI_Barrier(MPI_COMM_WORLD);

    t0 = MPI_Wtime();
    for (long i = 0; i < p.inserts; i++) {
        dht_req_t r = dht_make(&p, me, i);
        int o = dht_owner(r.key, np);

        if (o == me) {
            if (dht_local_insert(&table, r.key, r.value) && errors++ == 0) {
                fprintf(stderr, "dht_mpi rank %d: collision heap full\n", me);
            }
        } else {
            msg_t *m = fill_buf(o);
            m->r[m->count++] = r;
            if (m->count == p.batch) {
                send_buf(o);
                fill_buf(o)->count = 0;
            }
        }
        if (i % SERVE_EVERY == 0) serve();
    }
    for (int q = 0; q < np; q++) {
        if (q != me) send_control(q, -1);
    }
    while (done < np - 1) serve();
    MPI_Waitall(np * SEND_BUFS, sreq, MPI_STATUSES_IGNORE);
    t1 = MPI_Wtime();

    long errs_mine = errors + dht_verify(&p, &table, me, np);
    double time_mine = t1 - t0;
    long *errs = malloc((size_t)np * sizeof(long));
    double *times = malloc((size_t)np * sizeof(double));
    if (errs == NULL || times == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(&errs_mine, 1, MPI_LONG, errs, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Gather(&time_mine, 1, MPI_DOUBLE, times, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me == 0) rc = dht_report(&p, "mpi", np, errs, times);
    MPI_Finalize();
    free(errs);
    free(times);
    free(mem);
    free(rbuf);
    free(rreq);
    free(sbuf);
    free(sreq);
    free(sslot);
    return rc;
}
