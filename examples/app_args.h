/*
 * Strict integer options for the example applications: the whole string
 * must be a number within [min, max] (so "-s 10x" is a usage error, not 10).
 */
#ifndef APP_ARGS_H
#define APP_ARGS_H

#include <stdlib.h>

static inline int app_parse_long(const char *s, long min, long max, long *v)
{
    char *end;
    long x = strtol(s, &end, 10);

    if (*s == '\0' || *end != '\0' || x < min || x > max) return -1;
    *v = x;
    return 0;
}

#endif
