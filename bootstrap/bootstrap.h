/*
 * bootstrap: process discovery, key-value exchange and coarse synchronization.
 * The lowest layer; every layer above reaches the process manager only
 * through these functions. No PMIx or MPI type crosses this header.
 *
 * Flavours (one .c each): pmix (under oshrun, Open MPI's mpirun, srun
 * --mpi=pmix), singleton (no launcher: a 1-PE job), mpi (seam, later).
 * RMB_BOOTSTRAP=auto|pmix|singleton|mpi forces one; auto picks pmix when the
 * environment carries a PMIx server's coordinates, else singleton.
 *
 * All functions are for one thread at a time (the layers above serialize).
 */
#ifndef BOOTSTRAP_H
#define BOOTSTRAP_H

#include "util/status.h"

#include <stddef.h>

#define BOOTSTRAP_KEY_MAX 64 /* longest key, including the terminating NUL */

/* Starts the flavour chosen as above. Calling it again while initialized
 * counts references; each init needs one finalize. */
util_status_t bootstrap_init(void);
util_status_t bootstrap_finalize(void);
int bootstrap_initialized(void);

/* Name of the flavour in use: "pmix", "singleton", "mpi". */
const char *bootstrap_flavour(void);

int bootstrap_rank(void);
int bootstrap_size(void);
/* Rank among the processes of my node, and how many there are. */
int bootstrap_local_rank(void);
int bootstrap_local_size(void);
/* Node ids are 0 .. bootstrap_num_nodes()-1 and identical on every rank. */
int bootstrap_node_id(void);
int bootstrap_num_nodes(void);
int bootstrap_node_of(int rank);
/* Ranks on my node, ascending; bootstrap_local_size() entries. */
const int *bootstrap_local_ranks(void);

/* Key-value exchange. put stages a value under my rank; commit publishes
 * staged values; fence (collective) makes every committed value visible to
 * every rank. get copies rank's value for key into buf (bufsize bytes);
 * *size_p receives the stored size. A value larger than bufsize returns
 * UTIL_ERR_TRUNCATED with nothing copied; a missing key UTIL_ERR_NOT_FOUND.
 * Keys are at most BOOTSTRAP_KEY_MAX-1 characters.
 *
 * get also works without a fence for a key the peer publishes later (put +
 * commit): under PMIx the server holds the request until the peer commits,
 * for a bounded time (about 2 s here), then get returns UTIL_ERR_TIMEOUT and
 * the caller may retry. This is how channels bootstrap lazily, pairwise,
 * with no global synchronization. */
util_status_t bootstrap_put(const char *key, const void *value, size_t size);
util_status_t bootstrap_commit(void);
util_status_t bootstrap_fence(void);
util_status_t bootstrap_get(int rank, const char *key, void *buf, size_t bufsize, size_t *size_p);

/* Collective: returns once every rank entered. */
util_status_t bootstrap_barrier(void);
/* The same, and serve(arg) runs over and over until every rank entered: a
 * rank that others may be waiting on keeps working for them while it waits
 * (rpipe's barrier takes ahead what its peers' full queues hold back).
 * serve returns non-zero while it has work; once it returns 0 the wait may
 * sleep until the barrier completes or BOOTSTRAP_SERVE_IDLE_USEC pass
 * (the process manager's threads need the CPU to complete it). */
#define BOOTSTRAP_SERVE_IDLE_USEC 10000
typedef int (*bootstrap_serve_fn_t)(void *arg);
util_status_t bootstrap_barrier_serving(bootstrap_serve_fn_t serve, void *arg);
/* Collective: out (size * bootstrap_size() bytes) receives every rank's in,
 * in rank order. */
util_status_t bootstrap_allgather(const void *in, void *out, size_t size);

/* Ends the whole job: the launcher terminates every rank and exits with
 * code (non-zero). msg is printed once. Does not return. */
void bootstrap_abort(int code, const char *msg) __attribute__((noreturn));
/* The same, with code 0 allowed: a deliberate end of the whole job that
 * counts as success (shmem_global_exit(0)). */
void bootstrap_end_job(int code, const char *msg) __attribute__((noreturn));

#endif
