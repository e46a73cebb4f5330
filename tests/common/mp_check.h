/*
 * CHECK(cond, fmt, ...) for the multi-process test programs: a failed
 * condition prints one line "PE <me>: file:line: <message>" (the first 10
 * only) and counts in `errors`. The program defines `int me, errors`
 * (its PE and its failure count) before including this header, and turns a
 * non-zero count into its exit status.
 */
#ifndef TESTS_MP_CHECK_H
#define TESTS_MP_CHECK_H

#include <stdio.h>

#define CHECK(_cond, ...)                                                                          \
    do {                                                                                           \
        if (!(_cond) && errors++ < 10) {                                                           \
            fprintf(stderr, "PE %d: %s:%d: ", me, __FILE__, __LINE__);                             \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

#endif
