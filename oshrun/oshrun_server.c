/*
 * The PMIx server side of oshrun. Every PE is a local client; on one
 * machine the fence upcall can hand the collected data straight back,
 * because the PMIx server library already merged what its clients gave.
 * Emulated nodes (--nodes) only change the per-PE node id the job reports.
 */
#include "oshrun/oshrun.h"

#include <pmix.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
    pthread_mutex_t lock;
    int aborted;
    int rank;
    int status;
    char msg[512];
} oshrun_abort_state = {PTHREAD_MUTEX_INITIALIZER, 0, -1, 0, ""};

static oshrun_job_t *oshrun_server_job;

/* Blocking wait for a PMIx callback; the server thread fires it. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    pmix_status_t status;
} oshrun_wait_t;

#define OSHRUN_WAIT_INIT                                                                           \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, PMIX_SUCCESS                       \
    }

static void oshrun_wait_cb(pmix_status_t status, void *cbdata)
{
    oshrun_wait_t *w = cbdata;

    pthread_mutex_lock(&w->lock);
    w->status = status;
    w->done = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

static pmix_status_t oshrun_wait(oshrun_wait_t *w)
{
    pthread_mutex_lock(&w->lock);
    while (!w->done) {
        pthread_cond_wait(&w->cond, &w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return w->status;
}

static void oshrun_wake(void)
{
    char c = 'a';
    if (oshrun_server_job != NULL && write(oshrun_server_job->wake_fd, &c, 1) < 0) {
        /* the main loop also polls on a timer, so a lost wake-up only delays */
    }
}

static pmix_status_t oshrun_client_connected(const pmix_proc_t *proc, void *server_object,
                                             pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    return PMIX_OPERATION_SUCCEEDED;
}

static pmix_status_t oshrun_client_finalized(const pmix_proc_t *proc, void *server_object,
                                             pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    return PMIX_OPERATION_SUCCEEDED;
}

static pmix_status_t oshrun_abort(const pmix_proc_t *proc, void *server_object, int status,
                                  const char msg[], pmix_proc_t procs[], size_t nprocs,
                                  pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    pthread_mutex_lock(&oshrun_abort_state.lock);
    if (!oshrun_abort_state.aborted) {
        oshrun_abort_state.aborted = 1;
        oshrun_abort_state.rank = (int)proc->rank;
        oshrun_abort_state.status = status;
        snprintf(oshrun_abort_state.msg, sizeof(oshrun_abort_state.msg), "%s", msg ? msg : "");
    }
    pthread_mutex_unlock(&oshrun_abort_state.lock);
    oshrun_wake();
    /* Acknowledge at once; the main loop terminates the job, caller included. */
    return PMIX_OPERATION_SUCCEEDED;
}

static pmix_status_t oshrun_fence(const pmix_proc_t procs[], size_t nprocs,
                                  const pmix_info_t info[], size_t ninfo, char *data, size_t ndata,
                                  pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    /* All PEs are local clients of this server: nothing to collect elsewhere. */
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, data, ndata, cbdata, NULL, NULL);
    }
    return PMIX_SUCCESS;
}

static pmix_status_t oshrun_direct_modex(const pmix_proc_t *proc, const pmix_info_t info[],
                                         size_t ninfo, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    /* Only remote procs reach the host; there are none. */
    return PMIX_ERR_NOT_FOUND;
}

static pmix_server_module_t oshrun_module = {
    .client_connected = oshrun_client_connected,
    .client_finalized = oshrun_client_finalized,
    .abort = oshrun_abort,
    .fence_nb = oshrun_fence,
    .direct_modex = oshrun_direct_modex,
};

int oshrun_node_of(const oshrun_job_t *job, int rank)
{
    int per_node = job->per_node > 0 ? job->per_node : (job->np + job->nodes - 1) / job->nodes;

    return job->map_cyclic ? rank % job->nodes : rank / per_node;
}

/* "0,1,2" style list of the ranks satisfying node_of == node (node < 0: all). */
static char *oshrun_rank_list(const oshrun_job_t *job, int node)
{
    size_t len = (size_t)job->np * 12 + 1, used = 0;
    char *list = malloc(len);

    if (list == NULL) {
        return NULL;
    }
    list[0] = '\0';
    for (int r = 0; r < job->np; r++) {
        if (node >= 0 && oshrun_node_of(job, r) != node) {
            continue;
        }
        used += (size_t)snprintf(list + used, len - used, "%s%d", used ? "," : "", r);
    }
    return list;
}

static int oshrun_register_job(oshrun_job_t *job)
{
    char host[256] = "localhost", *peers, *regex = NULL, *ppn = NULL;
    size_t ninfo = 10 + (size_t)job->np, n = 0;
    pmix_info_t *info;
    oshrun_wait_t w = OSHRUN_WAIT_INIT;
    uint32_t u32;
    pmix_status_t rc;

    gethostname(host, sizeof(host) - 1);
    peers = oshrun_rank_list(job, -1);
    if (peers == NULL || PMIx_generate_regex(host, &regex) != PMIX_SUCCESS ||
        PMIx_generate_ppn(peers, &ppn) != PMIX_SUCCESS) {
        fprintf(stderr, "oshrun: cannot build the PMIx node and process maps\n");
        free(peers);
        return -1;
    }

    PMIX_INFO_CREATE(info, ninfo);
    u32 = (uint32_t)job->np;
    PMIX_INFO_LOAD(&info[n++], PMIX_UNIV_SIZE, &u32, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[n++], PMIX_JOB_SIZE, &u32, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[n++], PMIX_MAX_PROCS, &u32, PMIX_UINT32);
    /* To PMIx the whole job is one node, the one this server runs on;
     * emulated nodes show only in PMIX_NODEID below. */
    PMIX_INFO_LOAD(&info[n++], PMIX_LOCAL_SIZE, &u32, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[n++], PMIX_LOCAL_PEERS, peers, PMIX_STRING);
    PMIX_INFO_LOAD(&info[n++], PMIX_NODE_MAP, regex, PMIX_REGEX);
    PMIX_INFO_LOAD(&info[n++], PMIX_PROC_MAP, ppn, PMIX_REGEX);
    u32 = 1;
    PMIX_INFO_LOAD(&info[n++], PMIX_NUM_NODES, &u32, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[n++], PMIX_JOBID, job->nspace, PMIX_STRING);
    PMIX_INFO_LOAD(&info[n++], PMIX_HOSTNAME, host, PMIX_STRING);
    for (int r = 0; r < job->np; r++) {
        pmix_data_array_t *darray;
        pmix_info_t *pinfo;
        pmix_rank_t rank = (pmix_rank_t)r;
        uint16_t local = (uint16_t)r;
        uint32_t node = (uint32_t)oshrun_node_of(job, r);

        PMIX_DATA_ARRAY_CREATE(darray, 5, PMIX_INFO);
        pinfo = darray->array;
        PMIX_INFO_LOAD(&pinfo[0], PMIX_RANK, &rank, PMIX_PROC_RANK);
        PMIX_INFO_LOAD(&pinfo[1], PMIX_LOCAL_RANK, &local, PMIX_UINT16);
        PMIX_INFO_LOAD(&pinfo[2], PMIX_NODE_RANK, &local, PMIX_UINT16);
        PMIX_INFO_LOAD(&pinfo[3], PMIX_NODEID, &node, PMIX_UINT32);
        PMIX_INFO_LOAD(&pinfo[4], PMIX_HOSTNAME, host, PMIX_STRING);
        PMIX_INFO_LOAD(&info[n], PMIX_PROC_DATA, darray, PMIX_DATA_ARRAY);
        PMIX_DATA_ARRAY_FREE(darray);
        n++;
    }
    rc = PMIx_server_register_nspace(job->nspace, job->np, info, n, oshrun_wait_cb, &w);
    if (rc == PMIX_SUCCESS) {
        rc = oshrun_wait(&w);
    } else if (rc == PMIX_OPERATION_SUCCEEDED) {
        rc = PMIX_SUCCESS;
    }
    PMIX_INFO_FREE(info, ninfo);
    free(peers);
    free(regex);
    free(ppn);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "oshrun: PMIx cannot register the job: %s\n", PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

int oshrun_server_start(oshrun_job_t *job)
{
    pmix_info_t info[5];
    bool no = false, yes = true;
    size_t ninfo = 3;
    pmix_status_t rc;

    oshrun_server_job = job;
    snprintf(job->nspace, sizeof(job->nspace), "oshrun.%ld", (long)getpid());
    /* A private tmpdir keeps PMIx's sockets and shared-memory store files
     * where oshrun (or its cleanup watchdog) removes them. */
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, job->tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, job->tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[2], PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
    if (job->netns) {
        /* PMIx clients connect over TCP: listen on the hub's bridge, which
         * every node namespace reaches (loopback is per namespace). */
        PMIX_INFO_LOAD(&info[ninfo], PMIX_TCP_IF_INCLUDE, OSHRUN_NETNS_SUBNET, PMIX_STRING);
        ninfo++;
        PMIX_INFO_LOAD(&info[ninfo], PMIX_SERVER_REMOTE_CONNECTIONS, &yes, PMIX_BOOL);
        ninfo++;
        if (oshrun_netns_enter_hub(job) != 0) {
            return -1;
        }
    }
    rc = PMIx_server_init(&oshrun_module, info, ninfo);
    if (job->netns && oshrun_netns_leave_hub() != 0) {
        rc = PMIX_ERROR;
    }
    for (size_t i = 0; i < ninfo; i++) {
        PMIX_INFO_DESTRUCT(&info[i]);
    }
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "oshrun: cannot start the PMIx server: %s\n", PMIx_Error_string(rc));
        return -1;
    }
    if (oshrun_register_job(job) != 0) {
        PMIx_server_finalize();
        return -1;
    }
    return 0;
}

int oshrun_server_setup_pe(oshrun_job_t *job, int rank, char ***env_p)
{
    oshrun_wait_t w = OSHRUN_WAIT_INIT;
    pmix_proc_t proc;
    pmix_status_t rc;

    PMIX_LOAD_PROCID(&proc, job->nspace, (pmix_rank_t)rank);
    rc = PMIx_server_register_client(&proc, geteuid(), getegid(), NULL, oshrun_wait_cb, &w);
    if (rc == PMIX_SUCCESS) {
        rc = oshrun_wait(&w);
    } else if (rc == PMIX_OPERATION_SUCCEEDED) {
        rc = PMIX_SUCCESS;
    }
    if (rc == PMIX_SUCCESS) {
        rc = PMIx_server_setup_fork(&proc, env_p);
    }
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "oshrun: cannot set up PE %d with PMIx: %s\n", rank, PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

void oshrun_server_stop(oshrun_job_t *job, int clean)
{
    /* libpmix 4.2 can crash in PMIx_server_finalize while it is still
     * tearing down connections of clients that died without finalizing.
     * After a failed job oshrun exits at once and removes the tmpdir
     * itself, so the server is left to die with the process. */
    if (clean) {
        PMIx_server_finalize();
    }
    oshrun_server_job = NULL;
}

int oshrun_server_abort_info(int *rank_p, int *status_p, char *msg, size_t msglen)
{
    int aborted;

    pthread_mutex_lock(&oshrun_abort_state.lock);
    aborted = oshrun_abort_state.aborted;
    if (aborted) {
        *rank_p = oshrun_abort_state.rank;
        *status_p = oshrun_abort_state.status;
        snprintf(msg, msglen, "%s", oshrun_abort_state.msg);
    }
    pthread_mutex_unlock(&oshrun_abort_state.lock);
    return aborted;
}
