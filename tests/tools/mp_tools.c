/*
 * The PE side of tests/check_tools (oshrun's options):
 *   tag     50 lines on stdout, written in pieces, one on stderr, and a last
 *           line without a newline (--tag-output, -x FOO)
 *   segv    PE 1 writes to a page it may not touch; the others wait in a barrier
 *   shared  the world PEs of my node (SHMEM_TEAM_SHARED: --map-by)
 *   cpus    how many CPUs I may run on, and the first of them (--bind-to)
 */
#define _GNU_SOURCE
#include <sched.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void mode_tag(int me)
{
    const char *foo = getenv("FOO");

    for (int i = 0; i < 50; i++) {
        /* a line in three writes: --tag-output must still tag it whole */
        printf("PE %d line %d ", me, i);
        fflush(stdout);
        printf("FOO=%s", foo ? foo : "(unset)");
        fflush(stdout);
        printf("\n");
        fflush(stdout);
    }
    fprintf(stderr, "PE %d on stderr\n", me);
    printf("PE %d last line without newline", me);
    fflush(stdout);
}

static void mode_shared(int me)
{
    int n = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    char list[256] = "";

    for (int i = 0; i < n; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof(list) - used, "%s%d", i ? "," : "",
                 shmem_team_translate_pe(SHMEM_TEAM_SHARED, i, SHMEM_TEAM_WORLD));
    }
    printf("PE %d node peers %s\n", me, list);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "tag";
    int me;

    shmem_init();
    me = shmem_my_pe();
    if (strcmp(mode, "tag") == 0) {
        mode_tag(me);
    } else if (strcmp(mode, "segv") == 0) {
        if (me == 1) {
            /* a real fault, on a page with no access (a null pointer
             * would stop an UBSan build before the fault) */
            volatile int *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            *page = 1;
        }
        shmem_barrier_all();
        sleep(30); /* never reached by the test's end: oshrun ends the job */
    } else if (strcmp(mode, "shared") == 0) {
        mode_shared(me);
    } else if (strcmp(mode, "cpus") == 0) {
        cpu_set_t set;
        sched_getaffinity(0, sizeof(set), &set);
        int first = 0;
        while (first < CPU_SETSIZE && !CPU_ISSET(first, &set)) {
            first++;
        }
        printf("PE %d cpus %d first %d\n", me, CPU_COUNT(&set), first);
    }
    fflush(stdout);
    shmem_finalize();
    return 0;
}
