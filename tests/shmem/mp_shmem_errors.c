/*
 * Bad input and faults, launched as N PEs under oshrun; one mode per run.
 *   mp_shmem_errors MODE
 * Each error mode makes the last PE (or every PE, for collective calls)
 * commit one mistake while the others wait in a barrier; the library must
 * end the job with one "shmem error" line. tests/shmem/check_shmem_errors.c
 * checks the exit status, the line and the time taken.
 *
 * Modes that must fail: pe, addr, overflow, heap, mismatch (SHMEM_DEBUG=1), doublefree, badfree,
 * align, beforeinit, afterfinalize, ctx, killbarrier, killwait, killcoll,
 * exitearly. Modes that must succeed (exit 0): team (invalid teams get
 * error codes), ok.
 */
#include "shmem.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long static_word;
static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

static int me, npes;

/* The last PE commits the mistake; the others wait for it in a barrier
 * that the library must not leave them in. */
static int culprit(void)
{
    return me == npes - 1;
}

static int failures;

#define EXPECT(_cond)                                                                              \
    do {                                                                                           \
        if (!(_cond)) {                                                                            \
            fprintf(stderr, "PE %d: FAILED %s:%d: %s\n", me, __FILE__, __LINE__, #_cond);          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Invalid teams are reported by return values (the spec's error codes). */
static void mode_team(void)
{
    shmem_team_t team = SHMEM_TEAM_INVALID;
    shmem_ctx_t ctx;
    shmem_team_config_t config;

    EXPECT(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1);
    EXPECT(shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1);
    EXPECT(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD) == -1);
    EXPECT(shmem_team_translate_pe(SHMEM_TEAM_WORLD, npes, SHMEM_TEAM_WORLD) == -1);
    EXPECT(shmem_team_get_config(SHMEM_TEAM_INVALID, 0, &config) != 0);
    EXPECT(shmem_team_sync(SHMEM_TEAM_INVALID) != 0);
    EXPECT(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &team) != 0);
    EXPECT(team == SHMEM_TEAM_INVALID);
    /* a stride that leaves the world: every PE gets an error and no team */
    EXPECT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes + 1, NULL, 0, &team) != 0);
    EXPECT(team == SHMEM_TEAM_INVALID);
    EXPECT(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &ctx) != 0);
    EXPECT(ctx == SHMEM_CTX_INVALID);
    EXPECT(shmem_long_sum_reduce(SHMEM_TEAM_INVALID, &static_word, &static_word, 1) != 0);
    shmem_team_destroy(SHMEM_TEAM_INVALID); /* no effect */
}

/* PE 1 leaves the job (signal or return); the time lets the test bound
 * how long the others take to be ended. */
static void announce_death(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    fprintf(stderr, "PE 1 leaves at %.6f\n", ts.tv_sec + ts.tv_nsec * 1e-9);
    fflush(stderr);
}

static void wait_for_culprit(void)
{
    shmem_barrier_all();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    long local = 0;
    long *heap;

    if (!strcmp(mode, "beforeinit")) {
        shmem_long_p(&static_word, 1, 0);
        return 0;
    }
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    heap = shmem_malloc(4 * sizeof(long));
    if (!strcmp(mode, "ok")) {
        /* nothing */
    } else if (!strcmp(mode, "team")) {
        mode_team();
    } else if (!strcmp(mode, "pe")) {
        if (culprit()) shmem_long_p(heap, 1, npes + 3);
        wait_for_culprit();
    } else if (!strcmp(mode, "addr")) {
        if (culprit()) shmem_long_put(&local, &local, 1, 0);
        wait_for_culprit();
    } else if (!strcmp(mode, "overflow")) {
        /* a length that wraps around the address space */
        if (culprit()) shmem_putmem(heap, &local, SIZE_MAX - 16, 0);
        wait_for_culprit();
    } else if (!strcmp(mode, "heap")) {
        /* collective: every PE asks for more than SHMEM_SYMMETRIC_SIZE */
        (void)shmem_malloc((size_t)3 << 20);
    } else if (!strcmp(mode, "mismatch")) {
        /* collective with different sizes: caught with SHMEM_DEBUG=1 */
        (void)shmem_malloc(me == 0 ? 64 : 128);
    } else if (!strcmp(mode, "doublefree")) {
        long *block = shmem_malloc(64);
        shmem_free(block);
        shmem_free(block);
    } else if (!strcmp(mode, "badfree")) {
        shmem_free(&static_word); /* static data is symmetric but not the heap's */
    } else if (!strcmp(mode, "align")) {
        if (culprit()) (void)shmem_long_atomic_fetch_add((long *)((char *)heap + 4), 1, 0);
        wait_for_culprit();
    } else if (!strcmp(mode, "afterfinalize")) {
        shmem_finalize();
        if (culprit()) shmem_long_p(&static_word, 1, 0);
        return 0;
    } else if (!strcmp(mode, "ctx")) {
        if (culprit()) shmem_ctx_long_p(SHMEM_CTX_INVALID, heap, 1, 0);
        wait_for_culprit();
    } else if (!strcmp(mode, "killbarrier")) {
        /* PE 1 dies while the others are in a barrier */
        if (me == 1) {
            announce_death();
            raise(SIGKILL);
        }
        shmem_barrier_all();
    } else if (!strcmp(mode, "killwait")) {
        /* the others wait for a value PE 1 never puts */
        if (me == 1) {
            announce_death();
            raise(SIGKILL);
        }
        shmem_long_wait_until(heap, SHMEM_CMP_EQ, 42);
    } else if (!strcmp(mode, "killcoll")) {
        /* the others are inside a reduction */
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
        shmem_barrier_all();
        if (me == 1) {
            announce_death();
            raise(SIGKILL);
        }
        shmem_long_sum_to_all(heap, heap + 1, 1, 0, 0, npes, pwrk, psync);
    } else if (!strcmp(mode, "exitearly")) {
        /* PE 1 returns from main, status 0, without shmem_finalize */
        if (me == 1) {
            announce_death();
            return 0;
        }
        shmem_barrier_all();
    } else {
        fprintf(stderr, "mp_shmem_errors: unknown mode %s\n", mode);
        return 2;
    }
    shmem_free(heap);
    shmem_finalize();
    if (failures == 0 && !strcmp(mode, "team") && me == 0) {
        printf("mp_shmem_errors team: ok\n");
    }
    return failures ? 1 : 0;
}
