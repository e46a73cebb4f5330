/*
 * dht: active messages over rpipe, the pattern of the thesis's Listing 5.3.
 * Each rank owns one slice of a distributed hash table. Every rank inserts
 * keys chosen at random: the key's owner is key % nranks, so most inserts
 * are requests sent to another rank through a per-pair channel. Nobody
 * knows how many requests it will get or from whom, so each rank, between
 * its own sends (and whenever a send finds its channel full), polls all
 * its inbound channels with rread_nb and applies what it finds to its
 * slice. A final "done" message on every channel ends the run.
 *   oshrun -n N examples/rpipe/dht [-put|-get] [inserts_per_rank] [block|tag|channel]
 * At the end every rank recomputes, serially, all inserts of all ranks and
 * checks that its slice holds exactly the ones it owns. Exits 0 only then.
 */
#include <rmalloc.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_SPACE        4096u /* keys repeat, so updates to one bucket come from many ranks */
#define CHANNEL_REQUESTS 16 /* requests in flight per channel: small, to exercise full channels */
#define KEY_DONE         UINT64_MAX

typedef struct request {
    uint64_t key;
    uint64_t value;
} request_t;

/* The local slice: per key, the sum and the number of values inserted
 * (commutative, so the arrival order does not matter). */
typedef struct slice {
    uint64_t sum[KEY_SPACE];
    uint32_t count[KEY_SPACE];
} slice_t;

static int rank, nranks, errors;

static void usage(void)
{
    fprintf(stderr, "usage: dht [-put|-get] [inserts_per_rank] [block|tag|channel]\n");
}

/* Insert i of rank r: a reproducible random key and value. */
static request_t make_insert(int r, long i)
{
    uint64_t z = ((uint64_t)r << 32 | (uint64_t)i) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    request_t q;

    z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
    z = z ^ (z >> 29);
    q.key = z % KEY_SPACE;
    q.value = (uint64_t)r * 1000003u + (uint64_t)i;
    return q;
}

static void apply(slice_t *t, const request_t *q)
{
    t->sum[q->key] += q->value;
    t->count[q->key] += 1;
}

/* One pass over the inbound channels (Listing 5.3's handle_hashreq_thread):
 * takes every request that has arrived; counts "done" messages. */
static void serve(rch_t *in, slice_t *t, int *done)
{
    for (int p = 0; p < nranks; p++) {
        raddr_t d;
        request_t *q;
        int rc;

        if (p == rank) continue;
        while ((rc = rread_nb(in[p], &d, (void **)&q, sizeof(*q))) == R_SUCCESS) {
            if (q->key == KEY_DONE) {
                (*done)++;
            } else if (q->key < KEY_SPACE) {
                apply(t, q);
            } else if (errors++ < 5) {
                fprintf(stderr, "dht rank %d: bad key %llu from %d\n", rank,
                        (unsigned long long)q->key, p);
            }
            if (rfree(in[p], d) != R_SUCCESS) errors++;
        }
        if (rc != R_PENDING && errors++ < 5) {
            fprintf(stderr, "dht rank %d: rread_nb from %d: %s\n", rank, p, rstrerror(rc));
        }
    }
}

/* Sends one request, serving inbound channels while the channel is full:
 * the owner may itself be waiting for room in a channel to us. */
static void send_request(rch_t out, rch_t *in, slice_t *t, int *done, request_t q)
{
    raddr_t d;
    int rc;

    while ((rc = rmalloc_nb(out, sizeof(q), &d)) == R_PENDING) {
        serve(in, t, done);
    }
    if (rc != R_SUCCESS) {
        fprintf(stderr, "dht rank %d: rmalloc_nb: %s\n", rank, rstrerror(rc));
        network_abort(1);
    }
    memcpy(rmem(out, d), &q, sizeof(q));
    if (rwrite(out, d) != R_SUCCESS) {
        network_abort(1);
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "-put";
    long inserts = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
    const char *sync = argc > 3 ? argv[3] : "block";
    slice_t *table, *ref;
    rmalloc_config_t cfg;
    rch_t *out, *in;
    int done = 0;
    long mine = 0;

    if ((strcmp(dir, "-put") && strcmp(dir, "-get")) || inserts < 0 || argc > 4 ||
        (strcmp(sync, "block") && strcmp(sync, "tag") && strcmp(sync, "channel"))) {
        usage();
        return 2;
    }
    if (rinit(&rank, &nranks) != R_SUCCESS) {
        fprintf(stderr, "dht: rinit failed\n");
        return 1;
    }
    table = calloc(1, sizeof(*table));
    ref = calloc(1, sizeof(*ref));
    out = calloc((size_t)nranks, sizeof(rch_t));
    in = calloc((size_t)nranks, sizeof(rch_t));
    if (table == NULL || ref == NULL || out == NULL || in == NULL) {
        network_abort(1);
    }

    /* A channel per ordered pair: out[p] carries our requests to p, in[p]
     * p's requests to us. Ends are created in any order, without waiting. */
    rmalloc_config_init(&cfg);
    cfg.op = strcmp(dir, "-get") ? RDMA_PUT : RDMA_GET;
    cfg.sync = !strcmp(sync, "tag")       ? NET_SYNC_TAGS
               : !strcmp(sync, "channel") ? CH_SYNC
                                          : NET_SYNC_BLKS;
    cfg.unit_size = sizeof(request_t);
    cfg.alloc_size = CHANNEL_REQUESTS * sizeof(request_t);
    for (int p = 0; p < nranks; p++) {
        if (p == rank) continue;
        cfg.peer = p;
        cfg.rdma_active = cfg.op == RDMA_PUT; /* PUT: the sender initiates */
        if (rpipe(&out[p], &cfg) != R_SUCCESS) network_abort(1);
        cfg.rdma_active = cfg.op == RDMA_GET;
        if (rpipe(&in[p], &cfg) != R_SUCCESS) network_abort(1);
    }

    for (long i = 0; i < inserts; i++) {
        request_t q = make_insert(rank, i);
        int owner = (int)(q.key % (uint64_t)nranks);

        if (owner == rank) {
            apply(table, &q);
            mine++;
        } else {
            send_request(out[owner], in, table, &done, q);
        }
        if (i % 8 == 0) serve(in, table, &done);
    }
    for (int p = 0; p < nranks; p++) {
        if (p != rank) send_request(out[p], in, table, &done, (request_t){KEY_DONE, 0});
    }
    while (done < nranks - 1 && errors == 0) {
        serve(in, table, &done);
    }

    /* serial reference: all inserts of all ranks, the ones we own */
    for (int r = 0; r < nranks; r++) {
        for (long i = 0; i < inserts; i++) {
            request_t q = make_insert(r, i);
            if ((int)(q.key % (uint64_t)nranks) == rank) apply(ref, &q);
        }
    }
    if (memcmp(table, ref, sizeof(*ref)) != 0) {
        for (unsigned k = 0; k < KEY_SPACE && errors < 5; k++) {
            if (table->sum[k] != ref->sum[k] || table->count[k] != ref->count[k]) {
                fprintf(stderr,
                        "dht rank %d: key %u holds %u values (sum %llu), expected %u (%llu)\n",
                        rank, k, table->count[k], (unsigned long long)table->sum[k], ref->count[k],
                        (unsigned long long)ref->sum[k]);
                errors++;
            }
        }
    }
    printf("dht %s %s rank %d of %d: %ld inserts (%ld local), %s\n", dir + 1, sync, rank, nranks,
           inserts, mine, errors ? "FAILED" : "ok");
    rexit();
    free(table);
    free(ref);
    free(out);
    free(in);
    return errors ? 1 : 0;
}
