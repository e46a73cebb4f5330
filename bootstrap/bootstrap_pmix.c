/*
 * PMIx client flavour: works under any PMIx server (our oshrun, Open MPI's
 * mpirun, srun --mpi=pmix). Values travel as byte objects; barrier is a
 * fence without data collection.
 */
#include "bootstrap/bootstrap_flavour.h"
#include "util/env.h"
#include "util/log.h"

#include <pmix.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pmix_proc_t bootstrap_pmix_me;

int bootstrap_pmix_detected(void)
{
    return getenv("PMIX_NAMESPACE") != NULL && getenv("PMIX_RANK") != NULL;
}

static util_status_t bootstrap_pmix_error(const char *what, pmix_status_t rc)
{
    util_error("PMIx %s failed: %s", what, PMIx_Error_string(rc));
    return UTIL_ERR_RUNTIME;
}

static util_status_t bootstrap_pmix_get_u32(pmix_rank_t rank, const char *key, int optional,
                                            uint32_t *value_p)
{
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    pmix_info_t info;
    pmix_status_t rc;
    bool opt = true;

    PMIX_LOAD_PROCID(&proc, bootstrap_pmix_me.nspace, rank);
    PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &opt, PMIX_BOOL);
    rc = PMIx_Get(&proc, key, optional ? &info : NULL, optional ? 1 : 0, &val);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS) {
        if (!optional) {
            return bootstrap_pmix_error(key, rc);
        }
        return UTIL_ERR_NOT_FOUND;
    }
    switch (val->type) {
    case PMIX_UINT32:
        *value_p = val->data.uint32;
        break;
    case PMIX_UINT16:
        *value_p = val->data.uint16;
        break;
    case PMIX_INT:
        *value_p = (uint32_t)val->data.integer;
        break;
    case PMIX_UINT64:
        *value_p = (uint32_t)val->data.uint64;
        break;
    case PMIX_PROC_RANK:
        *value_p = val->data.rank;
        break;
    default:
        PMIX_VALUE_RELEASE(val);
        util_error("PMIx %s has unexpected type %d", key, (int)val->type);
        return UTIL_ERR_RUNTIME;
    }
    PMIX_VALUE_RELEASE(val);
    return UTIL_OK;
}

/* Maps arbitrary node identifiers to dense ids in order of first appearance
 * by rank, so node 0 holds rank 0 on every launcher. */
static void bootstrap_pmix_densify(int *node_of, int size)
{
    for (int r = 0, next = 0; r < size; r++) {
        int raw = node_of[r];
        if (raw < 0) {
            continue; /* already mapped */
        }
        for (int s = r; s < size; s++) {
            if (node_of[s] == raw) {
                node_of[s] = -1 - next;
            }
        }
        next++;
    }
    for (int r = 0; r < size; r++) {
        node_of[r] = -1 - node_of[r];
    }
}

static util_status_t bootstrap_pmix_put(const char *key, const void *value, size_t size);
static util_status_t bootstrap_pmix_commit(void);
static util_status_t bootstrap_pmix_fence(int collect_data);

/* ---- the serving fence ---- */
typedef struct {
    int done; /* set under lock: once the waiter took the lock after it, the callback is out */
    pmix_status_t status;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} bootstrap_pmix_wait_t;

static void bootstrap_pmix_fence_done(pmix_status_t status, void *cbdata)
{
    bootstrap_pmix_wait_t *wait = cbdata;

    pthread_mutex_lock(&wait->lock);
    wait->status = status;
    __atomic_store_n(&wait->done, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&wait->cond);
    pthread_mutex_unlock(&wait->lock);
}

/* Sleeps until the callback or BOOTSTRAP_SERVE_IDLE_USEC passed (lock held). */
static void bootstrap_pmix_wait_idle(bootstrap_pmix_wait_t *wait)
{
    struct timespec until;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += BOOTSTRAP_SERVE_IDLE_USEC * 1000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (!wait->done) {
        (void)pthread_cond_timedwait(&wait->cond, &wait->lock, &until);
    }
}

/* The fence, non-blocking: PMIx's thread calls back when it is done. While
 * serve has work it runs in a loop; idle, the wait sleeps, waking now and
 * then to serve again. Every fence collects data, also a plain barrier:
 * under Slurm 22.05's mpi/pmix plugin a fence without PMIX_COLLECT_DATA
 * does not wait for the other nodes (measured: every one of 200 such
 * fences let a process out before the last one entered), so rexit and
 * network_barrier let PEs free memory their peers were still reaching. */
static util_status_t bootstrap_pmix_fence_serving(bootstrap_serve_fn_t serve, void *arg)
{
    bootstrap_pmix_wait_t wait = {.done = 0, .status = PMIX_SUCCESS};
    pthread_condattr_t attr;
    pmix_info_t info; /* PMIx reads it until the callback: it outlives the wait */
    bool collect = true;
    pmix_status_t rc;

    pthread_mutex_init(&wait.lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&wait.cond, &attr);
    pthread_condattr_destroy(&attr);
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    rc = PMIx_Fence_nb(NULL, 0, &info, 1, bootstrap_pmix_fence_done, &wait);
    if (rc == PMIX_SUCCESS) {
        while (!__atomic_load_n(&wait.done, __ATOMIC_ACQUIRE)) {
            if (!serve(arg)) {
                pthread_mutex_lock(&wait.lock);
                bootstrap_pmix_wait_idle(&wait);
                pthread_mutex_unlock(&wait.lock);
            }
        }
        pthread_mutex_lock(&wait.lock); /* the callback has let go of it */
        rc = wait.status;
        pthread_mutex_unlock(&wait.lock);
    } else if (rc == PMIX_OPERATION_SUCCEEDED) {
        rc = PMIX_SUCCESS; /* done at once: no callback */
    }
    PMIX_INFO_DESTRUCT(&info);
    pthread_cond_destroy(&wait.cond);
    pthread_mutex_destroy(&wait.lock);
    return (rc == PMIX_SUCCESS) ? UTIL_OK : bootstrap_pmix_error("fence", rc);
}

static util_status_t bootstrap_pmix_get(int rank, const char *key, void *buf, size_t bufsize,
                                        size_t *size_p);

/* Fallback when the server gives no per-rank PMIX_NODEID: exchange hostnames. */
static util_status_t bootstrap_pmix_node_ids_by_hostname(int *node_of, int size)
{
    char host[256] = {0}, other[256];
    util_status_t status;
    size_t got;

    gethostname(host, sizeof(host) - 1);
    status = bootstrap_pmix_put("rmb.hostname", host, strlen(host) + 1);
    if (status == UTIL_OK) status = bootstrap_pmix_commit();
    if (status == UTIL_OK) status = bootstrap_pmix_fence(1);
    if (status != UTIL_OK) {
        return status;
    }
    /* raw id = lowest rank with the same hostname */
    char(*names)[256] = malloc(sizeof(*names) * (size_t)size);
    if (names == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    for (int r = 0; r < size; r++) {
        status = bootstrap_pmix_get(r, "rmb.hostname", other, sizeof(other), &got);
        if (status != UTIL_OK) {
            break;
        }
        memcpy(names[r], other, sizeof(other));
        node_of[r] = r;
        for (int s = 0; s < r; s++) {
            if (strcmp(names[s], names[r]) == 0) {
                node_of[r] = node_of[s];
                break;
            }
        }
    }
    free(names);
    return status;
}

/* The PMIx connection lives from the first init until the process exits:
 * a client that finalizes and initializes again (rinit/rexit or
 * shmem_init/shmem_finalize cycles) can be counted twice by PMIx 4.x
 * servers, and its next fence then completes early with PARTIAL_SUCCESS
 * (openpmix issue 4113). */
static int bootstrap_pmix_alive;

static void bootstrap_pmix_atexit(void)
{
    if (bootstrap_pmix_alive) {
        bootstrap_pmix_alive = 0;
        PMIx_Finalize(NULL, 0);
    }
}

static util_status_t bootstrap_pmix_init(bootstrap_job_t *job)
{
    pmix_status_t rc;
    util_status_t status;
    uint32_t size, node;
    int by_hostname = 0;

    if (!bootstrap_pmix_alive) {
        rc = PMIx_Init(&bootstrap_pmix_me, NULL, 0);
        if (rc != PMIX_SUCCESS) {
            return bootstrap_pmix_error("client initialization (is the launcher a PMIx server?)",
                                        rc);
        }
        bootstrap_pmix_alive = 1;
        atexit(bootstrap_pmix_atexit);
    }
    status = bootstrap_pmix_get_u32(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, 0, &size);
    if (status != UTIL_OK) {
        goto err_finalize;
    }
    job->rank = (int)bootstrap_pmix_me.rank;
    job->size = (int)size;
    job->node_of = malloc(sizeof(int) * size);
    if (job->node_of == NULL) {
        status = UTIL_ERR_NO_MEMORY;
        goto err_finalize;
    }
    for (uint32_t r = 0; r < size; r++) {
        if (bootstrap_pmix_get_u32(r, PMIX_NODEID, 1, &node) != UTIL_OK) {
            by_hostname = 1;
            break;
        }
        job->node_of[r] = (int)node;
    }
    if (by_hostname) {
        status = bootstrap_pmix_node_ids_by_hostname(job->node_of, job->size);
        if (status != UTIL_OK) {
            goto err_free;
        }
    }
    bootstrap_pmix_densify(job->node_of, job->size);
    return UTIL_OK;

err_free:
    free(job->node_of);
    job->node_of = NULL;
err_finalize:
    bootstrap_pmix_atexit(); /* nothing usable came of it: disconnect now */
    return status;
}

static util_status_t bootstrap_pmix_finalize(void)
{
    return UTIL_OK; /* PMIx itself is finalized at exit (see bootstrap_pmix_alive) */
}

static util_status_t bootstrap_pmix_put(const char *key, const void *value, size_t size)
{
    pmix_value_t val;
    pmix_status_t rc;

    PMIX_VALUE_CONSTRUCT(&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)value;
    val.data.bo.size = size;
    rc = PMIx_Put(PMIX_GLOBAL, key, &val); /* copies the value */
    return (rc == PMIX_SUCCESS) ? UTIL_OK : bootstrap_pmix_error("put", rc);
}

static util_status_t bootstrap_pmix_commit(void)
{
    pmix_status_t rc = PMIx_Commit();
    return (rc == PMIX_SUCCESS) ? UTIL_OK : bootstrap_pmix_error("commit", rc);
}

static int bootstrap_pmix_nothing_to_serve(void *arg)
{
    (void)arg;
    return 0;
}

/* The serving fence with nothing to serve: it sleeps until the callback. */
static util_status_t bootstrap_pmix_fence(int collect_data)
{
    (void)collect_data; /* every fence collects: bootstrap_pmix_fence_serving */
    return bootstrap_pmix_fence_serving(bootstrap_pmix_nothing_to_serve, NULL);
}

/* latest: ask the server for the value the peer committed last, not the
 * one this client cached (PMIX_GET_REFRESH_CACHE). */
static util_status_t bootstrap_pmix_get_value(int rank, const char *key, void *buf, size_t bufsize,
                                              size_t *size_p, bool latest)
{
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    pmix_info_t info;
    pmix_status_t rc;
    util_status_t status = UTIL_OK;

    PMIX_LOAD_PROCID(&proc, bootstrap_pmix_me.nspace, (pmix_rank_t)rank);
    PMIX_INFO_LOAD(&info, PMIX_GET_REFRESH_CACHE, &latest, PMIX_BOOL);
    rc = PMIx_Get(&proc, key, latest ? &info : NULL, latest ? 1 : 0, &val);
    PMIX_INFO_DESTRUCT(&info);
    if (rc == PMIX_ERR_NOT_FOUND) {
        return UTIL_ERR_NOT_FOUND;
    }
    if (rc == PMIX_ERR_TIMEOUT) {
        /* The peer has not committed the key (yet): the server waited its
         * direct-modex timeout. Callers that expect it later retry. */
        util_debug("PMIx get of \"%s\" from rank %d timed out", key, rank);
        return UTIL_ERR_TIMEOUT;
    }
    if (rc != PMIX_SUCCESS) {
        return bootstrap_pmix_error("get", rc);
    }
    if (val->type != PMIX_BYTE_OBJECT) {
        util_error("PMIx get of \"%s\" from rank %d: not a value put by rmb", key, rank);
        status = UTIL_ERR_INVALID;
    } else if (val->data.bo.size > bufsize) {
        status = UTIL_ERR_TRUNCATED;
    } else {
        if (val->data.bo.size > 0) {
            memcpy(buf, val->data.bo.bytes, val->data.bo.size);
        }
        *size_p = val->data.bo.size;
    }
    PMIX_VALUE_RELEASE(val);
    return status;
}

static util_status_t bootstrap_pmix_get(int rank, const char *key, void *buf, size_t bufsize,
                                        size_t *size_p)
{
    return bootstrap_pmix_get_value(rank, key, buf, bufsize, size_p, false);
}

static util_status_t bootstrap_pmix_get_latest(int rank, const char *key, void *buf, size_t bufsize,
                                               size_t *size_p)
{
    return bootstrap_pmix_get_value(rank, key, buf, bufsize, size_p, true);
}

__attribute__((noreturn)) static void bootstrap_pmix_abort(int code, const char *msg)
{
    fflush(stdout);
    PMIx_Abort(code, msg ? msg : "", NULL, 0);
    _exit(code); /* the launcher kills us; in case it does not, do not linger */
}

const bootstrap_flavour_ops_t bootstrap_pmix_ops = {
    .name = "pmix",
    .init = bootstrap_pmix_init,
    .finalize = bootstrap_pmix_finalize,
    .put = bootstrap_pmix_put,
    .commit = bootstrap_pmix_commit,
    .fence = bootstrap_pmix_fence,
    .fence_serving = bootstrap_pmix_fence_serving,
    .get = bootstrap_pmix_get,
    .get_latest = bootstrap_pmix_get_latest,
    .abort = bootstrap_pmix_abort,
};
