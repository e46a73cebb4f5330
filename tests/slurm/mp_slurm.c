/*
 * Run by Slurm (srun --mpi=pmix) for tests/slurm/check_slurm.c:
 *
 *   mp_slurm check        puts around the ring, atomics on every PE, a sum
 *                         reduction; node locality checked against host
 *                         names (shmem_ptr and SHMEM_TEAM_SHARED); PE 0
 *                         prints "slurm check: PEs N nodes K ok";
 *   mp_slurm exit N       the last PE exits with status N right after
 *                         shmem_init while the others wait in a barrier;
 *   mp_slurm kill         the same, but it kills itself with SIGKILL;
 *   mp_slurm global_exit N  the same, through shmem_global_exit(N);
 *                         (these three print "PE p leaves at T" on stderr
 *                         first, T the wall-clock time in seconds);
 *   mp_slurm hold         every PE prints "ready PE p pid P", then sleeps
 *                         (the test ends the job: scancel, SIGKILL of a PE).
 * Exit 0 only when every check held.
 */
#include <shmem.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int me, errors; /* for CHECK */
#include "tests/common/mp_check.h"

#define MAX_PES  64
#define HOST_LEN 64

static char hosts[MAX_PES][HOST_LEN];
static long ring_in, counter, adds, sum_in, sum_out;

static void check(void)
{
    int npes = shmem_n_pes(), same = 0, nodes = 0;
    long fetched;

    if (npes > MAX_PES) {
        fprintf(stderr, "mp_slurm: at most %d PEs\n", MAX_PES);
        shmem_global_exit(2);
    }
    /* Locality: on-node peers are those with my host name (each Slurm node
     * of the test is its own UTS namespace); they and only they are
     * reachable by load/store, and they make up SHMEM_TEAM_SHARED. */
    gethostname(hosts[me], HOST_LEN - 1);
    for (int p = 0; p < npes; p++) {
        shmem_putmem(hosts[me], hosts[me], HOST_LEN, p);
    }
    shmem_barrier_all();
    for (int p = 0; p < npes; p++) {
        int here = strcmp(hosts[p], hosts[me]) == 0, first = 1;
        same += here;
        CHECK(here == (shmem_ptr(&ring_in, p) != NULL), "PE %d on %s (I am on %s): shmem_ptr %s", p,
              hosts[p], hosts[me], here ? "NULL" : "not NULL");
        for (int q = 0; q < p; q++) {
            first = first && strcmp(hosts[q], hosts[p]) != 0;
        }
        nodes += first;
    }
    CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == same, "SHMEM_TEAM_SHARED has %d PEs, my node %d",
          shmem_team_n_pes(SHMEM_TEAM_SHARED), same);

    /* ring of puts (crosses nodes), atomics on every PE, a reduction */
    shmem_long_p(&ring_in, 1000 + me, (me + 1) % npes);
    for (int p = 0; p < npes; p++) {
        shmem_long_atomic_add(&adds, me + 1, p);
    }
    fetched = shmem_long_atomic_fetch_add(&counter, 1, 0);
    CHECK(fetched >= 0 && fetched < npes, "fetch_add on PE 0 returned %ld", fetched);
    sum_in = me + 1;
    shmem_barrier_all();
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &sum_out, &sum_in, 1);
    CHECK(ring_in == 1000 + (me + npes - 1) % npes, "ring: %ld", ring_in);
    CHECK(adds == (long)npes * (npes + 1) / 2, "atomic adds: %ld", adds);
    CHECK(me != 0 || counter == npes, "fetch_add counter: %ld", counter);
    CHECK(sum_out == (long)npes * (npes + 1) / 2, "sum reduction: %ld", sum_out);
    shmem_barrier_all();
    if (errors > 0) {
        shmem_global_exit(1);
    }
    shmem_barrier_all();
    if (me == 0) {
        printf("slurm check: PEs %d nodes %d ok\n", npes, nodes);
    }
}

static void leaving(void)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    fprintf(stderr, "PE %d leaves at %.3f\n", shmem_my_pe(), now.tv_sec + now.tv_nsec * 1e-9);
    fflush(stderr);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "check";
    int arg = argc > 2 ? atoi(argv[2]) : 0;
    int last;

    shmem_init();
    me = shmem_my_pe();
    last = me == shmem_n_pes() - 1;
    if (strcmp(mode, "check") == 0) {
        check();
    } else if (strcmp(mode, "exit") == 0 && last) {
        leaving();
        exit(arg);
    } else if (strcmp(mode, "kill") == 0 && last) {
        leaving();
        raise(SIGKILL);
    } else if (strcmp(mode, "global_exit") == 0 && last) {
        leaving();
        shmem_global_exit(arg);
    } else if (strcmp(mode, "hold") == 0) {
        shmem_barrier_all();
        printf("ready PE %d pid %ld\n", me, (long)getpid());
        fflush(stdout);
        sleep(60);
        return 1;
    }
    shmem_barrier_all(); /* where the others wait when the last PE ends */
    shmem_finalize();
    return 0;
}
