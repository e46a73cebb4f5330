/*
 * What the three example applications share besides their kernels: strict
 * integer options, the wall clock, and how long a wait loop spins.
 */
#ifndef APP_COMMON_H
#define APP_COMMON_H

#include <math.h>
#include <stdio.h>
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

/* Rank 0 after a run: compares results[2 * r] (PE r's checksum) with
 * want[r] for every PE, printing the first mismatches, and sets *tmax_p to
 * the slowest results[2 * r + 1] (seconds). Returns the mismatch count.
 * The same kernel in the same order gives the same bits; the tolerance only
 * allows for a compiler contracting differently. */
static inline int app_check_results(const char *app, const char *variant, int np,
                                    const double *results, const double *want, double *tmax_p)
{
    int bad = 0;

    *tmax_p = 0.0;
    for (int r = 0; r < np; r++) {
        double sum = results[2 * r];

        if (!(fabs(sum - want[r]) <= 1e-12 * fabs(want[r]) + 1e-300) && bad++ < 4) {
            fprintf(stderr, "%s %s: PE %d checksum %.17g, serial reference %.17g\n", app, variant,
                    r, sum, want[r]);
        }
        if (results[2 * r + 1] > *tmax_p) *tmax_p = results[2 * r + 1];
    }
    return bad;
}

#endif
