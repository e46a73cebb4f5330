/*
 * ring: an OpenSHMEM demo. Every PE puts a greeting into its right
 * neighbour's symmetric buffer, bumps a counter on PE 0 with an atomic,
 * and all PEs sum their ranks with a reduction; each PE prints one line.
 *   oshcc -o ring ring.c && oshrun -n 4 ./ring
 */
#include <shmem.h>

#include <stdio.h>
#include <string.h>

static long counter; /* static data is symmetric too */
static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

int main(void)
{
    char mine[64], *inbox;
    long *rank, *sum;
    int me, n;

    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    inbox = shmem_calloc(64, 1);
    rank = shmem_malloc(sizeof(long));
    sum = shmem_malloc(sizeof(long));
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;

    snprintf(mine, sizeof(mine), "hello from PE %d", me);
    shmem_putmem(inbox, mine, strlen(mine) + 1, (me + 1) % n);
    shmem_long_atomic_inc(&counter, 0);
    *rank = me;
    shmem_barrier_all();
    shmem_long_sum_to_all(sum, rank, 1, 0, 0, n, pWrk, pSync);

    printf("PE %d of %d: got \"%s\"; sum of ranks %ld (expected %ld)\n", me, n, inbox, *sum,
           (long)n * (n - 1) / 2);
    if (me == 0) {
        printf("PE 0: counter incremented by every PE: %ld (expected %d)\n", counter, n);
    }
    shmem_free(sum);
    shmem_free(rank);
    shmem_free(inbox);
    shmem_finalize();
    return 0;
}
