/*
 * The fatal errors every shmem file reports through: one line naming the
 * call and the PE, then the job ends. This file calls no other shmem file,
 * so calls between shmem/ files point one way (init -> team -> team_coll ->
 * sync -> here).
 */
#include "shmem/shmemi.h"
#include "bootstrap/bootstrap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void shmemi_fatal(const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "shmem error (PE %d): %s\n", shmemi.my_pe, msg);
    fflush(stderr);
    bootstrap_abort(1, msg);
}

void shmemi_not_initialized(const char *call)
{
    fprintf(stderr, "shmem error: %s called %s shmem_init\n", call,
            shmemi.finalized ? "after shmem_finalize, without a new" : "before");
    fflush(stderr);
    exit(1);
}

void shmemi_bad_pe(const char *call, int pe)
{
    if (shmemi.initialized <= 0) {
        shmemi_not_initialized(call);
    }
    shmemi_fatal("%s: PE %d is not in 0..%d", call, pe, shmemi.n_pes - 1);
}

void shmemi_not_symmetric(const char *call, const void *addr, size_t len)
{
    if (shmemi.initialized <= 0) {
        shmemi_not_initialized(call);
    }
    shmemi_fatal("%s: %p (+%zu bytes) is not symmetric (neither in the symmetric heap, nor in "
                 "static data, nor in a live space)",
                 call, addr, len);
}
