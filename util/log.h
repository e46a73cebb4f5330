/*
 * Logging. The first place that detects an error logs its cause; callers
 * only propagate the status. Lines look like "rmb[pe 3] error: ..." so a
 * multi-PE job's stderr says who complained. Levels above UTIL_LOG_MAX_LEVEL
 * compile out entirely, so trace calls cost nothing in a release build.
 */
#ifndef UTIL_LOG_H
#define UTIL_LOG_H

#include <stdarg.h>

typedef enum {
    UTIL_LOG_ERROR = 0,
    UTIL_LOG_WARN = 1,
    UTIL_LOG_INFO = 2,
    UTIL_LOG_DEBUG = 3,
    UTIL_LOG_TRACE = 4
} util_log_level_t;

#ifndef UTIL_LOG_MAX_LEVEL
#ifdef RMB_DEBUG
#define UTIL_LOG_MAX_LEVEL UTIL_LOG_TRACE
#else
#define UTIL_LOG_MAX_LEVEL UTIL_LOG_DEBUG
#endif
#endif

extern int util_log_level; /* runtime threshold, from RMB_LOG_LEVEL */

void util_log_set_rank(int rank);
void util_log_write(util_log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define util_log_(_level, ...)                                                                     \
    do {                                                                                           \
        if ((_level) <= UTIL_LOG_MAX_LEVEL && (int)(_level) <= util_log_level)                     \
            util_log_write((_level), __FILE__, __LINE__, __VA_ARGS__);                             \
    } while (0)

#define util_error(...) util_log_(UTIL_LOG_ERROR, __VA_ARGS__)
#define util_warn(...)  util_log_(UTIL_LOG_WARN, __VA_ARGS__)
#define util_info(...)  util_log_(UTIL_LOG_INFO, __VA_ARGS__)
#define util_debug(...) util_log_(UTIL_LOG_DEBUG, __VA_ARGS__)
#define util_trace(...) util_log_(UTIL_LOG_TRACE, __VA_ARGS__)

#endif
