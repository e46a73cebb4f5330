/*
 * The rpipe variants' clock barrier: rcoll's barrier, over the channels,
 * before the timed loop starts and after it ends. network_barrier() and
 * network_allgather() go through the launcher's PMIx server: its replies
 * release PEs tens of microseconds apart, and a PE that is done and waits
 * there keeps the server and the PMIx threads busy on cores that PEs still
 * in their loop need (where PEs outnumber cores). So they serve setup and
 * the results only, as shmem_barrier_all and MPI_Barrier bracket the other
 * variants' loops.
 */
#ifndef APP_RPIPE_H
#define APP_RPIPE_H

#include <rcoll.h>
#include <rmalloc.h>

#include <stdio.h>

static rcoll_h app_rpipe_clock;

/* Collective: every PE, after rinit. */
static inline void app_rpipe_clock_init(void)
{
    rcoll_config_t cfg;
    int rc;

    rcoll_config_init(&cfg); /* a barrier over every rank */
    rc = rcoll_init(&app_rpipe_clock, &cfg);
    if (rc != R_SUCCESS) {
        fprintf(stderr, "rcoll_init (clock barrier): %s\n", rstrerror(rc));
        network_abort(1);
    }
}

static inline void app_rpipe_clock_sync(void)
{
    int rc = rcoll(app_rpipe_clock, NULL, NULL);

    if (rc != R_SUCCESS) {
        fprintf(stderr, "rcoll (clock barrier): %s\n", rstrerror(rc));
        network_abort(1);
    }
}

static inline void app_rpipe_clock_free(void)
{
    rcoll_free(app_rpipe_clock);
}

#endif
