/*
 * Strict parsing of the benchmarks' numeric arguments: "abc", "12x" or an
 * out-of-range value prints the usage line and exits 2, instead of running
 * a measurement of 0 iterations that prints nonsense.
 */
#ifndef BENCH_ARGS_H
#define BENCH_ARGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* argv[i] as an integer in [min, max], or dflt when argc <= i. */
static inline long long bench_arg(int argc, char **argv, int i, long long dflt, long long min,
                                  long long max, const char *usage)
{
    char *end;
    long long v;

    if (argc <= i) {
        return dflt;
    }
    errno = 0;
    v = strtoll(argv[i], &end, 0);
    if (errno != 0 || end == argv[i] || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "%s: bad argument '%s' (expected %lld..%lld)\nusage: %s\n", argv[0],
                argv[i], min, max, usage);
        exit(2);
    }
    return v;
}

#endif
