/*
 * zero_copy: the thesis's Listing B.2. Rank 0 sends n messages to rank 1
 * through one channel; the same program runs over RDMA PUT or RDMA GET.
 *   oshrun -n 2 examples/rpipe/zero_copy [-put|-get] [n] [block|tag|channel] [next|first|best|worst|random]
 * Exits 0 only if every message arrived with the values sent.
 */
#include <rmalloc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEND_VAL 1000

int main(int argc, char **argv)
{
    rmalloc_config_t cfg;
    rch_t ch;
    int rank, nranks, errors = 0;
    int is_get = argc > 1 && strcmp(argv[1], "-get") == 0;
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    const char *sync = argc > 3 ? argv[3] : "block";
    const char *alg = argc > 4 ? argv[4] : "next";
    size_t chunks = 4, allocsz = chunks * sizeof(int);

    if (argc > 1 && strcmp(argv[1], "-get") != 0 && strcmp(argv[1], "-put") != 0) {
        fprintf(stderr, "usage: zero_copy [-put|-get] [n] [block|tag|channel] "
                        "[next|first|best|worst|random]\n");
        return 2;
    }
    if (rinit(&rank, &nranks) != R_SUCCESS) {
        fprintf(stderr, "zero_copy: rinit failed\n");
        return 1;
    }
    if (nranks != 2) {
        if (rank == 0) fprintf(stderr, "zero_copy: run with 2 ranks (oshrun -n 2)\n");
        rexit();
        return 2;
    }
    rmalloc_config_init(&cfg);
    cfg.peer = 1 - rank;
    cfg.unit_size = 4;
    cfg.alloc_size = allocsz * 20; /* room for 20 messages in flight */
    cfg.op = is_get ? RDMA_GET : RDMA_PUT;
    cfg.sync = !strcmp(sync, "tag")       ? NET_SYNC_TAGS
               : !strcmp(sync, "channel") ? CH_SYNC
                                          : NET_SYNC_BLKS;
    cfg.algorithm = !strcmp(alg, "first")    ? FIRST_FIT
                    : !strcmp(alg, "best")   ? BEST_FIT
                    : !strcmp(alg, "worst")  ? WORST_FIT
                    : !strcmp(alg, "random") ? RANDOM_FIT
                                             : NEXT_FIT;
    /* PUT: the sender initiates the RDMA; GET: the receiver does. */
    cfg.rdma_active = is_get ? (rank == 1) : (rank == 0);
    if (rpipe(&ch, &cfg) != R_SUCCESS) {
        fprintf(stderr, "zero_copy: rpipe failed\n");
        rexit();
        return 1;
    }
    for (int i = 0; i < n; i++) {
        if (rank == 0) {
            raddr_t addr = rmalloc(ch, allocsz);
            int *ptr = rmem(ch, addr);
            if (ptr == NULL) {
                errors++;
                break;
            }
            for (size_t k = 0; k < chunks; k++) ptr[k] = SEND_VAL * (i + 1) + (int)k;
            if (rwrite(ch, addr) != R_SUCCESS) {
                errors++;
                break;
            }
        } else {
            raddr_t addr;
            int *ptr;
            if (rread(ch, &addr, (void **)&ptr, allocsz) != R_SUCCESS) {
                errors++;
                break;
            }
            for (size_t k = 0; k < chunks; k++) {
                if (ptr[k] != SEND_VAL * (i + 1) + (int)k) {
                    if (errors++ < 5) fprintf(stderr, "message %d word %zu: %d\n", i, k, ptr[k]);
                }
            }
            if (rfree(ch, addr) != R_SUCCESS) {
                errors++;
                break;
            }
        }
    }
    printf("zero_copy %s %s/%s rank %d: %d messages, %s\n", is_get ? "GET" : "PUT", sync, alg, rank,
           n, errors ? "FAILED" : "ok");
    network_barrier(); /* both ends done before either frees its memory (rmalloc.h) */
    rpipe_close(ch);
    rexit();
    return errors ? 1 : 0;
}
