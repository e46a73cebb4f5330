/*
 * pingpong: rank 0 sends a message to rank 1 through one channel, rank 1
 * sends it back through another, and rank 0 prints the one-way latency
 * (round trip / 2) for each size from 8 B up to the maximum.
 *   oshrun -n 2 examples/rpipe/pingpong [-put|-get] [iterations] [max_bytes] [block|tag|channel]
 * Every echoed message is compared with what was sent; exits 0 only if all
 * came back intact.
 */
#include <rmalloc.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(void)
{
    fprintf(stderr, "usage: pingpong [-put|-get] [iterations] [max_bytes] [block|tag|channel]\n");
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static unsigned char pattern(long i, size_t k)
{
    return (unsigned char)(i * 7 + k * 13 + 1);
}

/* Rank 0's side of one message: send, wait for the echo, check it. */
static int ping(rch_t out, rch_t in, size_t size, long i)
{
    raddr_t d = rmalloc(out, size);
    unsigned char *m = rmem(out, d), *e;
    int ok = 1;

    if (m == NULL) {
        return 0;
    }
    /* Touch only the first and last bytes in the timed loop: the example
     * measures the channel, not memset. The echo must return both. */
    m[0] = pattern(i, 0);
    m[size - 1] = pattern(i, size - 1);
    if (rwrite(out, d) != R_SUCCESS || rread(in, &d, (void **)&e, size) != R_SUCCESS) {
        return 0;
    }
    ok = d.payload == size && e[0] == pattern(i, 0) && e[size - 1] == pattern(i, size - 1);
    return rfree(in, d) == R_SUCCESS && ok;
}

/* Rank 1's side: copy the message into a new one on the way back. */
static int pong(rch_t out, rch_t in, size_t size)
{
    raddr_t r, d;
    void *m, *o;

    if (rread(in, &r, &m, size) != R_SUCCESS) {
        return 0;
    }
    d = rmalloc(out, size);
    o = rmem(out, d);
    if (o == NULL) {
        return 0;
    }
    memcpy(o, m, r.payload);
    return rfree(in, r) == R_SUCCESS && rwrite(out, d) == R_SUCCESS;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "-put";
    long iters = argc > 2 ? strtol(argv[2], NULL, 10) : 10000;
    long max = argc > 3 ? strtol(argv[3], NULL, 10) : 4096;
    const char *sync = argc > 4 ? argv[4] : "block";
    rmalloc_config_t cfg;
    rch_t to, from;
    int rank, nranks, errors = 0;

    if ((strcmp(dir, "-put") && strcmp(dir, "-get")) || iters < 1 || max < 8 || max > (1L << 24) ||
        argc > 5 || (strcmp(sync, "block") && strcmp(sync, "tag") && strcmp(sync, "channel"))) {
        usage();
        return 2;
    }
    if (rinit(&rank, &nranks) != R_SUCCESS) {
        fprintf(stderr, "pingpong: rinit failed\n");
        return 1;
    }
    if (nranks != 2) {
        if (rank == 0) fprintf(stderr, "pingpong: run with 2 ranks (oshrun -n 2)\n");
        rexit();
        return 2;
    }
    rmalloc_config_init(&cfg);
    cfg.peer = 1 - rank;
    cfg.op = strcmp(dir, "-get") ? RDMA_PUT : RDMA_GET;
    cfg.sync = !strcmp(sync, "tag")       ? NET_SYNC_TAGS
               : !strcmp(sync, "channel") ? CH_SYNC
                                          : NET_SYNC_BLKS;
    cfg.alloc_size = 4 * (size_t)max; /* a few messages in flight at the largest size */
    /* PUT: the sender initiates; GET: the receiver. "to" is the channel
     * this rank sends on. */
    cfg.rdma_active = cfg.op == RDMA_PUT;
    if (rpipe(&to, &cfg) != R_SUCCESS) {
        network_abort(1);
    }
    cfg.rdma_active = cfg.op == RDMA_GET;
    if (rpipe(&from, &cfg) != R_SUCCESS) {
        network_abort(1);
    }
    if (rank == 0) {
        printf("# pingpong %s %s, %ld iterations per size\n# %10s %14s\n", dir + 1, sync, iters,
               "bytes", "one-way ns");
    }
    for (size_t size = 8; size <= (size_t)max && errors == 0; size *= 2) {
        long warm = iters / 10 + 1;
        double t0 = 0;

        for (long i = -warm; i < iters; i++) {
            if (i == 0) t0 = now_ns();
            if (rank == 0 ? !ping(to, from, size, i) : !pong(to, from, size)) {
                fprintf(stderr, "pingpong rank %d: %zu bytes, iteration %ld failed\n", rank, size,
                        i);
                network_abort(1); /* the peer would wait for us forever */
            }
        }
        if (rank == 0 && errors == 0) {
            printf("  %10zu %14.1f\n", size, (now_ns() - t0) / iters / 2);
        }
    }
    if (rank == 0) printf("pingpong %s: %s\n", dir + 1, errors ? "FAILED" : "ok");
    rexit();
    return errors ? 1 : 0;
}
