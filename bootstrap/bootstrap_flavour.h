/*
 * Internal: the table each bootstrap flavour fills. bootstrap.c owns the
 * common state (rank, sizes, node map) and dispatches to the flavour for
 * everything that talks to a process manager.
 */
#ifndef BOOTSTRAP_FLAVOUR_H
#define BOOTSTRAP_FLAVOUR_H

#include "bootstrap/bootstrap.h"

typedef struct bootstrap_job {
    int rank;
    int size;
    int node_id;
    int num_nodes;
    int *node_of; /* size entries: node id of every rank */
    int local_rank;
    int local_size;
    int *local_ranks; /* local_size entries, ascending */
} bootstrap_job_t;

typedef struct bootstrap_flavour_ops {
    const char *name;
    /* Fills job->rank, size, and node_of (allocated with malloc). */
    util_status_t (*init)(bootstrap_job_t *job);
    util_status_t (*finalize)(void);
    util_status_t (*put)(const char *key, const void *value, size_t size);
    util_status_t (*commit)(void);
    util_status_t (*fence)(int collect_data);
    /* fence(0) that runs serve(arg) until it completes */
    util_status_t (*fence_serving)(bootstrap_serve_fn_t serve, void *arg);
    util_status_t (*get)(int rank, const char *key, void *buf, size_t bufsize, size_t *size_p);
    /* get of the value rank committed last under a key it puts again
     * (a client may cache the first one) */
    util_status_t (*get_latest)(int rank, const char *key, void *buf, size_t bufsize,
                                size_t *size_p);
    void (*abort)(int code, const char *msg) __attribute__((noreturn));
} bootstrap_flavour_ops_t;

extern const bootstrap_flavour_ops_t bootstrap_pmix_ops;
extern const bootstrap_flavour_ops_t bootstrap_singleton_ops;

/* Whether this environment was set up by a PMIx server (oshrun, mpirun, srun). */
int bootstrap_pmix_detected(void);

#endif
