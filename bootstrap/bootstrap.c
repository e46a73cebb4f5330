/*
 * Common bootstrap state and the dispatch to the chosen flavour. Locality
 * (local ranks, node count) is derived here from node_of[] so every flavour
 * only reports which node each rank is on.
 */
#include "bootstrap/bootstrap_flavour.h"
#if RMB_HAVE_MPI
#include "bootstrap/bootstrap_mpi.h"
#endif
#include "util/env.h"
#include "util/log.h"
#include "util/wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const bootstrap_flavour_ops_t *bootstrap_ops;
static bootstrap_job_t bootstrap_job;
static int bootstrap_refcount;
/* allgather rounds of this process; never reset: the process manager keeps
 * the values of earlier init/finalize cycles under the same keys */
static uint64_t bootstrap_allgather_seq;
#define BOOTSTRAP_ALLGATHER_TRIES 20000 /* 100 us apart: 2 s and more */

/* 1 (after one line on stderr) when this process is one task of a
 * multi-task Slurm step started without a process-management interface
 * (srun with no --mpi, or --mpi=none, where the site's MpiDefault is
 * none): as a singleton, each task would run as its own 1-PE job and
 * report success. */
static int bootstrap_srun_without_pmi(void)
{
    const char *tasks = getenv("SLURM_STEP_NUM_TASKS");
    const char *rank = getenv("SLURM_PROCID");

    if (tasks == NULL || rank == NULL || atol(tasks) <= 1) {
        return 0;
    }
    util_error("task %s of %s of a Slurm step started without PMIx (srun with no --mpi, or "
               "--mpi=none): each task would run alone; use srun --mpi=pmix",
               rank, tasks);
    return 1;
}

static util_status_t bootstrap_choose(const bootstrap_flavour_ops_t **ops_p)
{
    const char *choice;
    util_status_t status = util_env_get_string("RMB_BOOTSTRAP", &choice);

    if (status != UTIL_OK) {
        return status;
    }
#if RMB_HAVE_MPI
    /* an MPI program (MPI_Init before us), or MPICH's launcher */
    if (strcmp(choice, "mpi") == 0 || (strcmp(choice, "auto") == 0 && bootstrap_mpi_detected())) {
        *ops_p = &bootstrap_mpi_ops;
        return UTIL_OK;
    }
#define BOOTSTRAP_CHOICES "auto, pmix, singleton or mpi"
#else
#define BOOTSTRAP_CHOICES "auto, pmix or singleton (mpi: rmb was built without MPI)"
#endif
    if (strcmp(choice, "auto") == 0) {
        if (!bootstrap_pmix_detected() && bootstrap_srun_without_pmi()) {
            return UTIL_ERR_RUNTIME;
        }
        *ops_p = bootstrap_pmix_detected() ? &bootstrap_pmix_ops : &bootstrap_singleton_ops;
    } else if (strcmp(choice, "pmix") == 0) {
        *ops_p = &bootstrap_pmix_ops;
    } else if (strcmp(choice, "singleton") == 0) {
        *ops_p = &bootstrap_singleton_ops;
    } else {
        util_error("RMB_BOOTSTRAP=\"%s\" is not valid: expected " BOOTSTRAP_CHOICES, choice);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

/* Derives local ranks and node count from node_of[]; node ids are assumed
 * dense (0..num_nodes-1), which every flavour guarantees. */
static util_status_t bootstrap_derive_locality(bootstrap_job_t *job)
{
    job->num_nodes = 0;
    job->local_size = 0;
    for (int r = 0; r < job->size; r++) {
        if (job->node_of[r] < 0 || job->node_of[r] >= job->size) {
            util_error("bootstrap: rank %d has invalid node id %d", r, job->node_of[r]);
            return UTIL_ERR_RUNTIME;
        }
        if (job->node_of[r] + 1 > job->num_nodes) {
            job->num_nodes = job->node_of[r] + 1;
        }
        if (job->node_of[r] == job->node_of[job->rank]) {
            job->local_size++;
        }
    }
    job->local_ranks = malloc(sizeof(int) * (size_t)job->local_size);
    if (job->local_ranks == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    job->node_id = job->node_of[job->rank];
    for (int r = 0, i = 0; r < job->size; r++) {
        if (job->node_of[r] == job->node_id) {
            if (r == job->rank) {
                job->local_rank = i;
            }
            job->local_ranks[i++] = r;
        }
    }
    return UTIL_OK;
}

static void bootstrap_apply_log_level(void)
{
    static const char *const names[] = {"error", "warn", "info", "debug", "trace"};
    const char *level;

    if (util_env_get_string("RMB_LOG_LEVEL", &level) != UTIL_OK) {
        return;
    }
    for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) {
        if (strcmp(level, names[i]) == 0) {
            util_log_level = i;
            return;
        }
    }
    util_warn("RMB_LOG_LEVEL=\"%s\" is not valid: expected error, warn, info, debug or trace",
              level);
}

util_status_t bootstrap_init(void)
{
    const bootstrap_flavour_ops_t *ops;
    util_status_t status;
    int info;

    if (bootstrap_refcount > 0) {
        bootstrap_refcount++;
        return UTIL_OK;
    }
    bootstrap_apply_log_level();
    status = bootstrap_choose(&ops);
    if (status != UTIL_OK) {
        return status;
    }
    memset(&bootstrap_job, 0, sizeof(bootstrap_job));
    status = ops->init(&bootstrap_job);
    if (status != UTIL_OK) {
        return status;
    }
    util_log_set_rank(bootstrap_job.rank);
    status = bootstrap_derive_locality(&bootstrap_job);
    if (status != UTIL_OK) {
        goto err_finalize;
    }
    bootstrap_ops = ops;
    bootstrap_refcount = 1;
    util_wait_setup(bootstrap_job.local_size, 1);
    util_env_check_unknown();
    if (util_env_get_bool("RMB_INFO", &info) == UTIL_OK && info && bootstrap_job.rank == 0) {
        printf("rmb: bootstrap %s, %d ranks on %d node(s); environment:\n", ops->name,
               bootstrap_job.size, bootstrap_job.num_nodes);
        util_env_print(stdout);
        fflush(stdout);
    }
    util_debug("bootstrap %s: rank %d/%d, local %d/%d, node %d/%d", ops->name, bootstrap_job.rank,
               bootstrap_job.size, bootstrap_job.local_rank, bootstrap_job.local_size,
               bootstrap_job.node_id, bootstrap_job.num_nodes);
    return UTIL_OK;

err_finalize:
    free(bootstrap_job.node_of);
    ops->finalize();
    return status;
}

util_status_t bootstrap_finalize(void)
{
    util_status_t status;

    if (bootstrap_refcount == 0) {
        return UTIL_ERR_STATE;
    }
    if (--bootstrap_refcount > 0) {
        return UTIL_OK;
    }
    status = bootstrap_ops->finalize();
    free(bootstrap_job.node_of);
    free(bootstrap_job.local_ranks);
    memset(&bootstrap_job, 0, sizeof(bootstrap_job));
    bootstrap_ops = NULL;
    return status;
}

int bootstrap_initialized(void)
{
    return bootstrap_refcount > 0;
}

const char *bootstrap_flavour(void)
{
    return bootstrap_ops ? bootstrap_ops->name : "none";
}

int bootstrap_rank(void)
{
    return bootstrap_job.rank;
}
int bootstrap_size(void)
{
    return bootstrap_job.size;
}
int bootstrap_local_rank(void)
{
    return bootstrap_job.local_rank;
}
int bootstrap_local_size(void)
{
    return bootstrap_job.local_size;
}
int bootstrap_node_id(void)
{
    return bootstrap_job.node_id;
}
int bootstrap_num_nodes(void)
{
    return bootstrap_job.num_nodes;
}
const int *bootstrap_local_ranks(void)
{
    return bootstrap_job.local_ranks;
}

int bootstrap_node_of(int rank)
{
    if (rank < 0 || rank >= bootstrap_job.size) {
        return -1;
    }
    return bootstrap_job.node_of[rank];
}

static util_status_t bootstrap_check_key(const char *key)
{
    if (key == NULL || key[0] == '\0' || strlen(key) >= BOOTSTRAP_KEY_MAX) {
        util_error("bootstrap: key \"%s\" is empty or longer than %d characters",
                   key ? key : "(null)", BOOTSTRAP_KEY_MAX - 1);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

util_status_t bootstrap_put(const char *key, const void *value, size_t size)
{
    util_status_t status;

    if (bootstrap_ops == NULL) {
        return UTIL_ERR_STATE;
    }
    status = bootstrap_check_key(key);
    if (status != UTIL_OK) {
        return status;
    }
    if (value == NULL && size > 0) {
        return UTIL_ERR_INVALID;
    }
    return bootstrap_ops->put(key, value, size);
}

util_status_t bootstrap_commit(void)
{
    return bootstrap_ops ? bootstrap_ops->commit() : UTIL_ERR_STATE;
}

util_status_t bootstrap_fence(void)
{
    return bootstrap_ops ? bootstrap_ops->fence(1) : UTIL_ERR_STATE;
}

util_status_t bootstrap_get(int rank, const char *key, void *buf, size_t bufsize, size_t *size_p)
{
    util_status_t status;

    if (bootstrap_ops == NULL) {
        return UTIL_ERR_STATE;
    }
    status = bootstrap_check_key(key);
    if (status != UTIL_OK) {
        return status;
    }
    if (rank < 0 || rank >= bootstrap_job.size) {
        util_error("bootstrap: get from rank %d, job has ranks 0..%d", rank,
                   bootstrap_job.size - 1);
        return UTIL_ERR_INVALID;
    }
    return bootstrap_ops->get(rank, key, buf, bufsize, size_p);
}

util_status_t bootstrap_barrier(void)
{
    return bootstrap_ops ? bootstrap_ops->fence(0) : UTIL_ERR_STATE;
}

util_status_t bootstrap_barrier_serving(bootstrap_serve_fn_t serve, void *arg)
{
    if (bootstrap_ops == NULL) {
        return UTIL_ERR_STATE;
    }
    return serve != NULL ? bootstrap_ops->fence_serving(serve, arg) : bootstrap_ops->fence(0);
}

/* Rank r's value of allgather round `round` into out (size bytes); value
 * is scratch of size + 8 bytes. First what this client holds (the fence
 * brought it, mostly); a value of an earlier round is asked for again,
 * from the server (get_latest), for a while. */
static util_status_t bootstrap_allgather_get(int r, const char *key, uint64_t round, char *value,
                                             void *out, size_t size)
{
    struct timespec pause = {0, 100 * 1000};
    uint64_t got_round = round;
    util_status_t status;
    size_t got;

    for (int tries = 0; tries < BOOTSTRAP_ALLGATHER_TRIES; tries++) {
        status = tries == 0 ? bootstrap_ops->get(r, key, value, size + 8, &got)
                            : bootstrap_ops->get_latest(r, key, value, size + 8, &got);
        if (status == UTIL_OK && got != size + 8) {
            util_error("bootstrap: allgather got %zu bytes from rank %d, expected %zu", got, r,
                       size + 8);
            return UTIL_ERR_TRUNCATED;
        }
        if (status == UTIL_ERR_TIMEOUT || status == UTIL_ERR_NOT_FOUND) {
            util_error("bootstrap: allgather round %llu: rank %d published no value of %zu bytes "
                       "(do all ranks pass the same size?)",
                       (unsigned long long)round, r, size);
        }
        if (status != UTIL_OK) {
            return status;
        }
        memcpy(&got_round, value, 8);
        if (got_round == round) {
            memcpy(out, value + 8, size);
            return UTIL_OK;
        }
        if (tries > 0) {
            nanosleep(&pause, NULL);
        }
    }
    util_error("bootstrap: allgather round %llu read round %llu from rank %d (ranks passed "
               "different sizes, or the process manager keeps an old value)",
               (unsigned long long)round, (unsigned long long)got_round, r);
    return UTIL_ERR_STATE;
}

util_status_t bootstrap_allgather(const void *in, void *out, size_t size)
{
    char key[BOOTSTRAP_KEY_MAX], *value;
    uint64_t round;
    util_status_t status;

    if (bootstrap_ops == NULL) {
        return UTIL_ERR_STATE;
    }
#if RMB_HAVE_MPI
    if (bootstrap_ops == &bootstrap_mpi_ops) {
        return bootstrap_mpi_allgather(in, out, size); /* one MPI_Allgather */
    }
#endif
    /* Two keys in turn per value size, each value led by its round. Every
     * round ends in a fence, so no rank is more than one round ahead of
     * another: none rewrites a key that another still reads. Reads ask for
     * the latest value and check its round. Per size: PMIx 4.2 keeps
     * handing out the cached value of a key whose size changed (a third of
     * the reads, 3 PEs). A fresh key per round, as before, made every call
     * slower than the last: under PMIx each get searched all the keys the
     * rank ever committed (1.2 ms per call over the first 300 calls, 13.8
     * ms over calls 600-900, at 2 PEs under oshrun). */
    value = malloc(size + 8);
    if (value == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    round = bootstrap_allgather_seq++;
    snprintf(key, sizeof(key), "rmb.allgather.%zu.%u", size, (unsigned)(round & 1));
    memcpy(value, &round, 8);
    memcpy(value + 8, in, size);
    status = bootstrap_ops->put(key, value, size + 8);
    if (status == UTIL_OK) {
        status = bootstrap_ops->commit();
    }
    if (status == UTIL_OK) {
        status = bootstrap_ops->fence(1);
    }
    for (int r = 0; r < bootstrap_job.size && status == UTIL_OK; r++) {
        if (r == bootstrap_job.rank) {
            memcpy((char *)out + (size_t)r * size, in, size);
            continue;
        }
        status =
            bootstrap_allgather_get(r, key, round, value, (char *)out + (size_t)r * size, size);
    }
    free(value);
    return status;
}

void bootstrap_abort(int code, const char *msg)
{
    bootstrap_end_job(code == 0 ? 1 : code, msg);
}

void bootstrap_end_job(int code, const char *msg)
{
    if (bootstrap_ops == NULL) {
        fprintf(stderr, "rmb: abort before initialization: %s\n", msg ? msg : "");
        exit(code);
    }
    bootstrap_ops->abort(code, msg);
}
