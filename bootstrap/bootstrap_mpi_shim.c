/*
 * The MPI plugin: every MPI call of rmb, behind the MPI-free table of
 * bootstrap/bootstrap_mpi.h. Compiled once per MPI (RMB_MPI_SHIM_NAME is
 * "openmpi" or "mpich") into rmb_mpi_<name>.so; nothing else of rmb is in
 * it, so it needs no symbol of librmb.
 *
 * Errors come back as codes: the job communicator and the windows use
 * MPI_ERRORS_RETURN, so a failing call never aborts the job behind the
 * caller's back.
 *
 * One lock around every MPI call made here: btl/mpi's progress thread and
 * the thread using rmb never call MPI at the same time. So MPI_THREAD_
 * SERIALIZED is enough when rmb initializes MPI, MPI's own locks stay off,
 * and our calls never race inside an MPI (Open MPI 4.1's osc/rdma crashes
 * in compare-and-swap over vader when another thread progresses at the
 * same moment). Uncontended, the lock costs two atomics per call.
 */
#include "bootstrap/bootstrap_mpi.h"

#include <mpi.h>

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RMB_MPI_SHIM_NAME
#error "RMB_MPI_SHIM_NAME must name the MPI this plugin is built for"
#endif

#define SHIM_TAG_PUSH 0x726d    /* pushes on the job communicator */
#define SHIM_CHUNK    (1 << 30) /* MPI counts are int: larger transfers go in pieces */

typedef struct {
    MPI_Win win;
    int shared; /* MPI_Win_allocate_shared (disp: an offset); else dynamic (an address) */
} shim_win_t;

/* One pushed buffer and its sends to every other rank. */
typedef struct shim_push {
    struct shim_push *next;
    void *buf;
    int nreq;
    MPI_Request *req;
    MPI_Status *st; /* not MPI_STATUSES_IGNORE: MPICH's mpi.h annotates the array */
} shim_push_t;

static pthread_mutex_t shim_mutex = PTHREAD_MUTEX_INITIALIZER;
static MPI_Comm shim_comm = MPI_COMM_NULL;
static int shim_rank, shim_size;
static int shim_one_node; /* every rank shares memory with every other */
static shim_push_t *shim_pushes;

static const char *shim_vendor(void)
{
    return strcmp(RMB_MPI_SHIM_NAME, "openmpi") == 0 ? "Open MPI" : "MPICH";
}

static int shim_check(char *why, size_t size)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;

    /* Callable before MPI_Init (MPI-3). */
    if (MPI_Get_library_version(version, &len) != MPI_SUCCESS) {
        snprintf(why, size, "MPI_Get_library_version failed");
        return 1;
    }
    version[len < (int)sizeof(version) ? len : (int)sizeof(version) - 1] = '\0';
    if (strstr(version, shim_vendor()) == NULL) {
        char *nl = strchr(version, '\n');
        if (nl != NULL) {
            *nl = '\0';
        }
        snprintf(why, size, "plugin %s was built for %s, the process runs \"%.80s\"",
                 RMB_MPI_SHIM_NAME, shim_vendor(), version);
        return 1;
    }
    return 0;
}

static int shim_running(void)
{
    int initialized = 0, finalized = 0;

    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    return initialized && !finalized;
}

static int shim_init(void)
{
    int provided;

    return MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
}

static int shim_thread_level(void)
{
    int provided = MPI_THREAD_SINGLE;

    MPI_Query_thread(&provided);
    return provided == MPI_THREAD_MULTIPLE     ? 3
           : provided == MPI_THREAD_SERIALIZED ? 2
           : provided == MPI_THREAD_FUNNELED   ? 1
                                               : 0;
}

static int shim_finalize(void)
{
    return MPI_Finalize();
}

static void shim_error_string(int code, char *buf, size_t size)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) {
        snprintf(buf, size, "MPI error %d", code);
        return;
    }
    text[len < (int)sizeof(text) ? len : (int)sizeof(text) - 1] = '\0';
    snprintf(buf, size, "%s", text);
}

__attribute__((noreturn)) static void shim_abort(int code)
{
    MPI_Abort(shim_comm != MPI_COMM_NULL ? shim_comm : MPI_COMM_WORLD, code);
    exit(code != 0 ? code : 1); /* MPI_Abort does not return; in case it does */
}

/* ---- job communicator ---- */
static int shim_comm_open(int *rank_p, int *size_p, int *leader_p)
{
    MPI_Comm node = MPI_COMM_NULL;
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &shim_comm);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    MPI_Comm_set_errhandler(shim_comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(shim_comm, &shim_rank);
    MPI_Comm_size(shim_comm, &shim_size);
    /* key = rank: node-local rank 0 is the lowest rank on the node */
    rc = MPI_Comm_split_type(shim_comm, MPI_COMM_TYPE_SHARED, shim_rank, MPI_INFO_NULL, &node);
    if (rc == MPI_SUCCESS) {
        int node_size = 0;

        *leader_p = shim_rank;
        rc = MPI_Bcast(leader_p, 1, MPI_INT, 0, node);
        MPI_Comm_size(node, &node_size);
        shim_one_node = node_size == shim_size;
        MPI_Comm_free(&node);
    }
    if (rc != MPI_SUCCESS) {
        MPI_Comm_free(&shim_comm);
        shim_comm = MPI_COMM_NULL;
        return rc;
    }
    *rank_p = shim_rank;
    *size_p = shim_size;
    return MPI_SUCCESS;
}

static int shim_push_reap(int wait);

static int shim_comm_close(void)
{
    int rc = shim_push_reap(1);
    int rc2 = MPI_Comm_free(&shim_comm);

    shim_comm = MPI_COMM_NULL;
    return rc != MPI_SUCCESS ? rc : rc2;
}

static int shim_barrier(void)
{
    return MPI_Barrier(shim_comm);
}

static int shim_ibarrier(void **req_p)
{
    MPI_Request *req = malloc(sizeof(*req));
    int rc;

    if (req == NULL) {
        return MPI_ERR_NO_MEM;
    }
    rc = MPI_Ibarrier(shim_comm, req);
    if (rc != MPI_SUCCESS) {
        free(req);
        return rc;
    }
    *req_p = req;
    return MPI_SUCCESS;
}

static int shim_test(void *req, int *done_p)
{
    int rc = MPI_Test((MPI_Request *)req, done_p, MPI_STATUS_IGNORE);

    if (rc == MPI_SUCCESS && *done_p) {
        free(req);
    }
    return rc;
}

static int shim_allgather(const void *in, void *out, size_t size)
{
    if (size > INT_MAX) {
        return MPI_ERR_COUNT;
    }
    return MPI_Allgather(in, (int)size, MPI_BYTE, out, (int)size, MPI_BYTE, shim_comm);
}

/* ---- key pushes ---- */
static int shim_push(void *buf, size_t size)
{
    shim_push_t *p;
    int rc = MPI_SUCCESS;
    size_t n;

    if (size > INT_MAX) {
        free(buf);
        return MPI_ERR_COUNT;
    }
    n = (size_t)(shim_size > 1 ? shim_size - 1 : 1);
    p = malloc(sizeof(*p) + (sizeof(MPI_Request) + sizeof(MPI_Status)) * n);
    if (p == NULL) {
        free(buf);
        return MPI_ERR_NO_MEM;
    }
    p->req = (MPI_Request *)(p + 1);
    p->st = (MPI_Status *)(p->req + n);
    p->buf = buf;
    p->nreq = 0;
    for (int r = 0; r < shim_size && rc == MPI_SUCCESS; r++) {
        if (r != shim_rank) {
            rc = MPI_Isend(buf, (int)size, MPI_BYTE, r, SHIM_TAG_PUSH, shim_comm,
                           &p->req[p->nreq++]);
        }
    }
    p->next = shim_pushes;
    shim_pushes = p;
    return rc;
}

static int shim_push_reap(int wait)
{
    int rc = MPI_SUCCESS;

    for (shim_push_t **link = &shim_pushes; *link != NULL;) {
        shim_push_t *p = *link;
        int done = 1;

        if (wait) {
            rc = MPI_Waitall(p->nreq, p->req, p->st);
        } else {
            rc = MPI_Testall(p->nreq, p->req, &done, p->st);
        }
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        if (done) {
            *link = p->next;
            free(p->buf);
            free(p);
        } else {
            link = &p->next;
        }
    }
    return rc;
}

static int shim_push_recv(int source, int block, int *source_p, void **buf_p, size_t *size_p)
{
    MPI_Status status;
    int found = 1, count = 0, rc;
    void *buf;

    *buf_p = NULL;
    source = source < 0 ? MPI_ANY_SOURCE : source;
    if (block) {
        rc = MPI_Probe(source, SHIM_TAG_PUSH, shim_comm, &status);
    } else {
        rc = MPI_Iprobe(source, SHIM_TAG_PUSH, shim_comm, &found, &status);
    }
    if (rc != MPI_SUCCESS || !found) {
        return rc;
    }
    MPI_Get_count(&status, MPI_BYTE, &count);
    buf = malloc(count > 0 ? (size_t)count : 1);
    if (buf == NULL) {
        return MPI_ERR_NO_MEM;
    }
    rc = MPI_Recv(buf, count, MPI_BYTE, status.MPI_SOURCE, SHIM_TAG_PUSH, shim_comm,
                  MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        free(buf);
        return rc;
    }
    *buf_p = buf;
    *size_p = (size_t)count;
    *source_p = status.MPI_SOURCE;
    return MPI_SUCCESS;
}

static int shim_progress(void)
{
    int flag;

    return MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, shim_comm, &flag, MPI_STATUS_IGNORE);
}

/* ---- RMA ---- */
static MPI_Op shim_op(bootstrap_mpi_op_t op)
{
    switch (op) {
    case BOOTSTRAP_MPI_OP_REPLACE:
        return MPI_REPLACE;
    case BOOTSTRAP_MPI_OP_SUM:
        return MPI_SUM;
    case BOOTSTRAP_MPI_OP_BAND:
        return MPI_BAND;
    case BOOTSTRAP_MPI_OP_BOR:
        return MPI_BOR;
    case BOOTSTRAP_MPI_OP_BXOR:
        return MPI_BXOR;
    default:
        return MPI_NO_OP;
    }
}

static MPI_Datatype shim_type(unsigned size)
{
    return size == 8 ? MPI_UINT64_T : MPI_UINT32_T;
}

static void shim_win_info(MPI_Info *info_p)
{
    MPI_Info_create(info_p);
    /* The MPI default accumulate_ops=same_op_no_op lets an MPI assume that
     * concurrent accumulates to one address use one op (or NO_OP); we mix
     * SUM, REPLACE, BAND... and compare-and-swap on one word (locks,
     * signals). There is no standard "any op" value; the MPI-4 hint
     * which_accumulate_ops lists every op we issue, so an MPI that honours
     * it (MPICH) picks one mechanism that does them all atomically. */
    MPI_Info_set(*info_p, "which_accumulate_ops", "sum,band,bor,bxor,replace,no_op,cswap");
}

/* Error handler, model, and one passive-target epoch for the window's whole life. */
static int shim_win_start(shim_win_t *w, void **win_p, int *unified_p)
{
    int *model = NULL, flag = 0, rc;

    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    MPI_Win_get_attr(w->win, MPI_WIN_MODEL, &model, &flag);
    *unified_p = flag && model != NULL && *model == MPI_WIN_UNIFIED;
    rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win);
    if (rc != MPI_SUCCESS) {
        MPI_Win_free(&w->win);
        free(w);
        return rc;
    }
    *win_p = w;
    return MPI_SUCCESS;
}

static int shim_win_create(void **win_p, int *unified_p)
{
    shim_win_t *w = calloc(1, sizeof(*w));
    MPI_Info info;
    int rc;

    if (w == NULL) {
        return MPI_ERR_NO_MEM;
    }
    shim_win_info(&info);
    rc = MPI_Win_create_dynamic(info, shim_comm, &w->win);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        free(w);
        return rc;
    }
    return shim_win_start(w, win_p, unified_p);
}

/* A shared-memory window: the MPI's on-node fast path (Open MPI osc/sm,
 * MPICH ch4 shm). Not MPI_Win_allocate: Open MPI 4.1 gives that osc/rdma,
 * whose vader-emulated atomics on it crash (the target applies the origin's
 * mapping address). Only when every rank is on this node: else *win_p NULL. */
static int shim_win_allocate(size_t size, void **base_p, void **win_p, int *unified_p)
{
    shim_win_t *w;
    MPI_Info info;
    int rc;

    *win_p = NULL;
    if (!shim_one_node) {
        return MPI_SUCCESS;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return MPI_ERR_NO_MEM;
    }
    shim_win_info(&info);
    /* each rank's segment on its own pages (MPICH: first touch on its NUMA node) */
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    rc = MPI_Win_allocate_shared((MPI_Aint)size, 1, info, shim_comm, base_p, &w->win);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        free(w);
        return rc;
    }
    w->shared = 1;
    return shim_win_start(w, win_p, unified_p);
}

static int shim_win_shared_query(void *win, int peer, void **base_p)
{
    MPI_Aint size = 0;
    int disp_unit = 0;

    return MPI_Win_shared_query(((shim_win_t *)win)->win, peer, &size, &disp_unit, base_p);
}

static int shim_win_free(void *win)
{
    shim_win_t *w = win;
    int rc = MPI_Win_unlock_all(w->win);
    int rc2 = MPI_Win_free(&w->win);

    free(w);
    return rc != MPI_SUCCESS ? rc : rc2;
}

static int shim_win_attach(void *win, void *addr, size_t size)
{
    return MPI_Win_attach(((shim_win_t *)win)->win, addr, (MPI_Aint)size);
}

static int shim_win_detach(void *win, void *addr)
{
    return MPI_Win_detach(((shim_win_t *)win)->win, addr);
}

static uint64_t shim_address(const void *addr)
{
    MPI_Aint a = 0;

    MPI_Get_address(addr, &a);
    return (uint64_t)a;
}

static int shim_put(void *win, const void *src, size_t len, int peer, uint64_t disp)
{
    int rc = MPI_SUCCESS;

    while (len > 0 && rc == MPI_SUCCESS) {
        int n = len > SHIM_CHUNK ? SHIM_CHUNK : (int)len;
        rc = MPI_Put(src, n, MPI_BYTE, peer, (MPI_Aint)disp, n, MPI_BYTE, ((shim_win_t *)win)->win);
        src = (const char *)src + n;
        disp += (uint64_t)n;
        len -= (size_t)n;
    }
    return rc;
}

static int shim_get(void *win, void *dst, size_t len, int peer, uint64_t disp)
{
    int rc = MPI_SUCCESS;

    while (len > 0 && rc == MPI_SUCCESS) {
        int n = len > SHIM_CHUNK ? SHIM_CHUNK : (int)len;
        rc = MPI_Get(dst, n, MPI_BYTE, peer, (MPI_Aint)disp, n, MPI_BYTE, ((shim_win_t *)win)->win);
        dst = (char *)dst + n;
        disp += (uint64_t)n;
        len -= (size_t)n;
    }
    return rc;
}

static int shim_acc(void *win, const void *src, unsigned size, int peer, uint64_t disp,
                    bootstrap_mpi_op_t op)
{
    return MPI_Accumulate(src, 1, shim_type(size), peer, (MPI_Aint)disp, 1, shim_type(size),
                          shim_op(op), ((shim_win_t *)win)->win);
}

static int shim_fetch_op(void *win, const void *src, void *result, unsigned size, int peer,
                         uint64_t disp, bootstrap_mpi_op_t op)
{
    return MPI_Fetch_and_op(src, result, shim_type(size), peer, (MPI_Aint)disp, shim_op(op),
                            ((shim_win_t *)win)->win);
}

static int shim_cas(void *win, const void *src, const void *compare, void *result, unsigned size,
                    int peer, uint64_t disp)
{
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
    /* Open MPI 4.x osc/rdma over vader crashes on a 64-bit compare-and-swap
     * to the calling rank itself (a NULL vader endpoint; the open-mpi/ompi
     * #7967 family; 32-bit and every other op are fine). On one node, do
     * that one case here as a CPU compare-and-swap on the word: vader
     * performs the atomics of the other ranks on our memory as CPU atomics
     * too (across nodes a NIC may, so MPI does it there). Our own earlier
     * operations on the word complete first, as MPI's accumulate ordering
     * would have kept them. Dynamic window only (disp is the address); the
     * shared pool window is osc/sm, which does CAS to self under its lock. */
    if (size == 8 && peer == shim_rank && shim_one_node && !((shim_win_t *)win)->shared) {
        uint64_t expected, desired;
        int rc = MPI_Win_flush(peer, ((shim_win_t *)win)->win);

        memcpy(&expected, compare, 8);
        memcpy(&desired, src, 8);
        __atomic_compare_exchange_n((uint64_t *)(uintptr_t)disp, &expected, desired, 0,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        memcpy(result, &expected, 8); /* the old value, either way */
        return rc;
    }
#endif
    return MPI_Compare_and_swap(src, compare, result, shim_type(size), peer, (MPI_Aint)disp,
                                ((shim_win_t *)win)->win);
}

static int shim_flush(void *win, int peer)
{
    return MPI_Win_flush(peer, ((shim_win_t *)win)->win);
}

static int shim_flush_local(void *win, int peer)
{
    return MPI_Win_flush_local(peer, ((shim_win_t *)win)->win);
}

static int shim_flush_all(void *win)
{
    return MPI_Win_flush_all(((shim_win_t *)win)->win);
}

static int shim_flush_local_all(void *win)
{
    return MPI_Win_flush_local_all(((shim_win_t *)win)->win);
}

/* The table's entries: each impl under the lock. */
#define SHIM_LOCKED(_name, _params, _args)                                                         \
    static int _name##_locked _params                                                              \
    {                                                                                              \
        int rc;                                                                                    \
        pthread_mutex_lock(&shim_mutex);                                                           \
        rc = _name _args;                                                                          \
        pthread_mutex_unlock(&shim_mutex);                                                         \
        return rc;                                                                                 \
    }

SHIM_LOCKED(shim_init, (void), ())
SHIM_LOCKED(shim_finalize, (void), ())
SHIM_LOCKED(shim_comm_open, (int *rank_p, int *size_p, int *leader_p), (rank_p, size_p, leader_p))
SHIM_LOCKED(shim_comm_close, (void), ())
SHIM_LOCKED(shim_barrier, (void), ())
SHIM_LOCKED(shim_ibarrier, (void **req_p), (req_p))
SHIM_LOCKED(shim_test, (void *req, int *done_p), (req, done_p))
SHIM_LOCKED(shim_allgather, (const void *in, void *out, size_t size), (in, out, size))
SHIM_LOCKED(shim_push, (void *buf, size_t size), (buf, size))
SHIM_LOCKED(shim_push_reap, (int wait), (wait))
SHIM_LOCKED(shim_push_recv, (int source, int block, int *source_p, void **buf_p, size_t *size_p),
            (source, block, source_p, buf_p, size_p))
SHIM_LOCKED(shim_progress, (void), ())
SHIM_LOCKED(shim_win_create, (void **win_p, int *unified_p), (win_p, unified_p))
SHIM_LOCKED(shim_win_allocate, (size_t size, void **base_p, void **win_p, int *unified_p),
            (size, base_p, win_p, unified_p))
SHIM_LOCKED(shim_win_shared_query, (void *win, int peer, void **base_p), (win, peer, base_p))
SHIM_LOCKED(shim_win_free, (void *win), (win))
SHIM_LOCKED(shim_win_attach, (void *win, void *addr, size_t size), (win, addr, size))
SHIM_LOCKED(shim_win_detach, (void *win, void *addr), (win, addr))
SHIM_LOCKED(shim_put, (void *win, const void *src, size_t len, int peer, uint64_t disp),
            (win, src, len, peer, disp))
SHIM_LOCKED(shim_get, (void *win, void *dst, size_t len, int peer, uint64_t disp),
            (win, dst, len, peer, disp))
SHIM_LOCKED(shim_acc,
            (void *win, const void *src, unsigned size, int peer, uint64_t disp,
             bootstrap_mpi_op_t op),
            (win, src, size, peer, disp, op))
SHIM_LOCKED(shim_fetch_op,
            (void *win, const void *src, void *result, unsigned size, int peer, uint64_t disp,
             bootstrap_mpi_op_t op),
            (win, src, result, size, peer, disp, op))
SHIM_LOCKED(shim_cas,
            (void *win, const void *src, const void *compare, void *result, unsigned size, int peer,
             uint64_t disp),
            (win, src, compare, result, size, peer, disp))
SHIM_LOCKED(shim_flush, (void *win, int peer), (win, peer))
SHIM_LOCKED(shim_flush_local, (void *win, int peer), (win, peer))
SHIM_LOCKED(shim_flush_all, (void *win), (win))
SHIM_LOCKED(shim_flush_local_all, (void *win), (win))

static const bootstrap_mpi_shim_t shim_table = {
    .abi = BOOTSTRAP_MPI_SHIM_ABI,
    .name = RMB_MPI_SHIM_NAME,
    .check = shim_check,
    .running = shim_running,
    .init = shim_init_locked,
    .finalize = shim_finalize_locked,
    .thread_level = shim_thread_level,
    .error_string = shim_error_string,
    .abort = shim_abort,
    .comm_open = shim_comm_open_locked,
    .comm_close = shim_comm_close_locked,
    .barrier = shim_barrier_locked,
    .ibarrier = shim_ibarrier_locked,
    .test = shim_test_locked,
    .allgather = shim_allgather_locked,
    .push = shim_push_locked,
    .push_reap = shim_push_reap_locked,
    .push_recv = shim_push_recv_locked,
    .progress = shim_progress_locked,
    .win_create = shim_win_create_locked,
    .win_allocate = shim_win_allocate_locked,
    .win_shared_query = shim_win_shared_query_locked,
    .win_free = shim_win_free_locked,
    .win_attach = shim_win_attach_locked,
    .win_detach = shim_win_detach_locked,
    .address = shim_address,
    .put = shim_put_locked,
    .get = shim_get_locked,
    .acc = shim_acc_locked,
    .fetch_op = shim_fetch_op_locked,
    .cas = shim_cas_locked,
    .flush = shim_flush_locked,
    .flush_local = shim_flush_local_locked,
    .flush_all = shim_flush_all_locked,
    .flush_local_all = shim_flush_local_all_locked,
};

__attribute__((visibility("default"))) const bootstrap_mpi_shim_t *rmb_mpi_shim(unsigned abi)
{
    return abi == BOOTSTRAP_MPI_SHIM_ABI ? &shim_table : NULL;
}
