/*
 * What the three example applications share besides their kernels: strict
 * integer options, the wall clock, and how long a wait loop spins.
 */
#ifndef APP_COMMON_H
#define APP_COMMON_H

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The whole string must be a number within [min, max] (so "-s 10x" is a
 * usage error, not 10). */
static inline int app_parse_long(const char *s, long min, long max, long *v)
{
    char *end;
    long x = strtol(s, &end, 10);

    if (*s == '\0' || *end != '\0' || x < min || x > max) return -1;
    *v = x;
    return 0;
}

static inline double app_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Empty polls an application-level wait loop makes before it starts
 * yielding the core: few when the job has more PEs than the machine has
 * cores (the PE we wait for needs our core), many otherwise. Open MPI
 * makes the same distinction for its own waits (mpi_yield_when_idle). */
static inline long app_idle_spin(int np)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    return cpus > 0 && np > cpus ? 64 : 1L << 16;
}

#endif
