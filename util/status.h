/*
 * One status type for every internal layer (util, bootstrap, btl, rmalloc, rpipe).
 * OK is 0, "in progress" is positive, errors are negative, so a status crosses
 * layers without translation. The list below generates the enum and both
 * string functions; the strings are constants (thread-safe, no buffers).
 */
#ifndef UTIL_STATUS_H
#define UTIL_STATUS_H

#define UTIL_STATUS_LIST(_X)                                                                       \
    _X(OK, 0, "success")                                                                           \
    _X(IN_PROGRESS, 1, "operation in progress")                                                    \
    _X(ERR_NO_MEMORY, -1, "out of memory")                                                         \
    _X(ERR_INVALID, -2, "invalid argument")                                                        \
    _X(ERR_NOT_FOUND, -3, "not found")                                                             \
    _X(ERR_TIMEOUT, -4, "timed out")                                                               \
    _X(ERR_IO, -5, "input/output error")                                                           \
    _X(ERR_NO_RESOURCE, -6, "resource temporarily unavailable, retry")                             \
    _X(ERR_UNSUPPORTED, -7, "operation not supported")                                             \
    _X(ERR_UNREACHABLE, -8, "peer unreachable")                                                    \
    _X(ERR_TRUNCATED, -9, "message truncated")                                                     \
    _X(ERR_BUSY, -10, "resource busy")                                                             \
    _X(ERR_STATE, -11, "invalid state for this operation")                                         \
    _X(ERR_RUNTIME, -12, "process manager (PMIx/MPI) error")                                       \
    _X(ERR_OVERFLOW, -13, "value out of range")                                                    \
    _X(ERR_PEER_FAILED, -14, "peer process failed")                                                \
    _X(ERR_EXISTS, -15, "already exists")

typedef enum {
#define UTIL_STATUS_ENUM_(_name, _value, _text) UTIL_##_name = (_value),
    UTIL_STATUS_LIST(UTIL_STATUS_ENUM_)
#undef UTIL_STATUS_ENUM_
} util_status_t;

/* "out of memory"; unknown codes give a fixed "unknown status". */
const char *util_status_string(util_status_t status);
/* "UTIL_ERR_NO_MEMORY"; for log lines. */
const char *util_status_name(util_status_t status);

#endif
