/*
 * ring: the thesis's Listing B.3. Every rank streams messages to its right
 * neighbour and reads the same number from its left one, through two
 * channels per rank.
 *   oshrun -n N examples/rpipe/ring [-put|-get] [messages] [block|tag|channel] [ORDER]
 * ORDER says in which order each rank creates its two channels:
 *   natural     receive channel, then send channel, on every rank (default)
 *   send-first  send channel first on every rank
 *   alternate   even ranks natural, odd ranks send-first
 * Listing B.3 had to create rank 0's channels in the opposite order to the
 * others' because its rpipe() waited for the peer's matching call; here
 * rpipe() never waits (the ends meet on first use), so every ORDER works.
 * Exits 0 only if every message arrived with the values sent.
 */
#include <rmalloc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEND_VAL 1000
#define WIDTH    128 /* messages the channel holds (the listing's n) */
#define WORDS    4   /* ints per message */

static void usage(void)
{
    fprintf(stderr, "usage: ring [-put|-get] [messages] [block|tag|channel] "
                    "[natural|send-first|alternate]\n");
}

static int parse_sync(const char *s, rsync_mode_t *sync_p)
{
    if (!strcmp(s, "block"))
        *sync_p = NET_SYNC_BLKS;
    else if (!strcmp(s, "tag"))
        *sync_p = NET_SYNC_TAGS;
    else if (!strcmp(s, "channel"))
        *sync_p = CH_SYNC;
    else
        return -1;
    return 0;
}

/* The listing's channel_write: one message of WORDS ints, i-th of the stream. */
static int channel_write(rch_t ch, int val)
{
    raddr_t addr = rmalloc(ch, WORDS * sizeof(int));
    int *r = rmem(ch, addr);

    if (r == NULL) {
        return R_ERR_INVALID;
    }
    for (int k = 0; k < WORDS; k++) r[k] = val + k;
    return rwrite(ch, addr);
}

/* The listing's channel_test: reads one message and checks its values. */
static int channel_test(rch_t ch, int val)
{
    raddr_t addr;
    int *r, ok = 1;

    if (rread(ch, &addr, (void **)&r, WORDS * sizeof(int)) != R_SUCCESS) {
        return 0;
    }
    ok = addr.payload == WORDS * sizeof(int);
    for (int k = 0; ok && k < WORDS; k++) ok = r[k] == val + k;
    return rfree(ch, addr) == R_SUCCESS && ok;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "-put";
    long n = argc > 2 ? strtol(argv[2], NULL, 10) : WIDTH + 512;
    const char *order = argc > 4 ? argv[4] : "natural";
    rmalloc_config_t cfg[2];
    rsync_mode_t sync = NET_SYNC_BLKS;
    rch_t ch[2];
    int rank, nranks, left, right, send_first, errors = 0;

    if ((strcmp(dir, "-put") && strcmp(dir, "-get")) || n < 1 || argc > 5 ||
        (argc > 3 && parse_sync(argv[3], &sync)) ||
        (strcmp(order, "natural") && strcmp(order, "send-first") && strcmp(order, "alternate"))) {
        usage();
        return 2;
    }
    if (rinit(&rank, &nranks) != R_SUCCESS) {
        fprintf(stderr, "ring: rinit failed\n");
        return 1;
    }
    if (nranks < 2) {
        fprintf(stderr, "ring: run with at least 2 ranks (oshrun -n 2)\n");
        rexit();
        return 2;
    }
    right = (rank + 1) % nranks;
    left = (rank + nranks - 1) % nranks;

    /* ch[0] receives from the left, ch[1] sends to the right. With PUT the
     * sender is rdma_active, with GET the receiver. */
    for (int i = 0; i < 2; i++) {
        rmalloc_config_init(&cfg[i]);
        cfg[i].op = strcmp(dir, "-get") ? RDMA_PUT : RDMA_GET;
        cfg[i].sync = sync;
        cfg[i].unit_size = WORDS * sizeof(int);
        cfg[i].alloc_size = WIDTH * WORDS * sizeof(int);
        cfg[i].peer = i == 0 ? left : right;
        cfg[i].rdma_active = (cfg[i].op == RDMA_PUT) == (i == 1);
    }
    send_first = !strcmp(order, "send-first") || (!strcmp(order, "alternate") && rank % 2);
    for (int k = 0; k < 2; k++) {
        int i = send_first ? 1 - k : k;
        int rc = rpipe(&ch[i], &cfg[i]);
        if (rc != R_SUCCESS) {
            fprintf(stderr, "ring rank %d: rpipe with %d: %s\n", rank, cfg[i].peer, rstrerror(rc));
            network_abort(1);
        }
    }

    for (long i = 0; i < n; i++) {
        if (channel_write(ch[1], SEND_VAL + (int)i) != R_SUCCESS) {
            fprintf(stderr, "ring rank %d: rwrite %ld failed\n", rank, i);
            errors++;
            break;
        }
        if (!channel_test(ch[0], SEND_VAL + (int)i)) {
            if (errors++ < 5)
                fprintf(stderr, "ring rank %d: message %ld from %d is wrong\n", rank, i, left);
        }
    }
    printf("ring %s %s rank %d of %d: %ld messages from %d, %s\n", dir + 1, order, rank, nranks, n,
           left, errors ? "FAILED" : "ok");
    rexit(); /* closes both channels */
    return errors ? 1 : 0;
}
