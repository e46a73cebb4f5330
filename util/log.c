#include "util/log.h"

#include <stdio.h>
#include <string.h>

int util_log_level = UTIL_LOG_WARN;
static int util_log_rank = -1;

static const char *const util_log_names[] = {"error", "warning", "info", "debug", "trace"};

void util_log_set_rank(int rank)
{
    util_log_rank = rank;
}

void util_log_write(util_log_level_t level, const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    /* One fprintf per line so that lines from concurrent PEs do not interleave. */
    if (level >= UTIL_LOG_DEBUG) {
        const char *base = strrchr(file, '/');
        fprintf(stderr, "rmb[pe %d] %s: %s (%s:%d)\n", util_log_rank, util_log_names[level], msg,
                base ? base + 1 : file, line);
    } else if (util_log_rank >= 0) {
        fprintf(stderr, "rmb[pe %d] %s: %s\n", util_log_rank, util_log_names[level], msg);
    } else {
        fprintf(stderr, "rmb %s: %s\n", util_log_names[level], msg);
    }
}
