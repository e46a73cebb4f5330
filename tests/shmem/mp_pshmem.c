/*
 * The profiling interface: this program interposes shmem_long_p and
 * shmem_barrier_all, counts the calls and forwards them through their
 * pshmem_ names; the data must still arrive and shmem_pcontrol must exist.
 */
#include <pshmem.h>
#include <shmem.h>

#include <stdio.h>

static long p_calls, barrier_calls;

void shmem_long_p(long *dest, long value, int pe)
{
    p_calls++;
    pshmem_long_p(dest, value, pe);
}

void shmem_barrier_all(void)
{
    barrier_calls++;
    pshmem_barrier_all();
}

static long target[4];

int main(void)
{
    int me, npes, errors = 0;

    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    shmem_pcontrol(1);
    for (int i = 0; i < 4; i++) {
        shmem_long_p(&target[i], 100 * me + i, (me + 1) % npes);
    }
    shmem_barrier_all();
    for (int i = 0; i < 4; i++) {
        errors += target[i] != 100 * ((me + npes - 1) % npes) + i;
    }
    /* shmem_init and shmem_finalize may call barrier_all too: at least ours */
    errors += p_calls != 4 || barrier_calls < 1;
    if (errors) {
        fprintf(stderr, "PE %d: %d errors (p calls %ld, barrier calls %ld)\n", me, errors, p_calls,
                barrier_calls);
    }
    shmem_finalize();
    return errors ? 1 : 0;
}
