/*
 * The MPI bootstrap flavour and the MPI plugin ("shim") interface.
 *
 * librmb never links an MPI library: users of oshrun have none, and Open MPI
 * and MPICH differ in ABI (handles are pointers in one, integers in the
 * other). Every MPI call lives in bootstrap/bootstrap_mpi_shim.c, which is
 * compiled once per MPI found at configure time into a small plugin,
 * $(pkglibdir)/rmb_mpi_<name>.so, linked against that MPI. librmb loads the
 * plugin matching the MPI of the process with dlopen, and talks to it only
 * through the table below, whose types carry no MPI type. The MPI bootstrap
 * (bootstrap_mpi.c) and btl/mpi (btl/mpi/btl_mpi.c) are its two users.
 *
 * Which plugin: RMB_MPI_PLUGIN (a name, "openmpi" or "mpich", or a path);
 * else the vendor in MPI_Get_library_version of the MPI already in the
 * process; else the launcher's environment (Open MPI's mpirun sets
 * OMPI_COMM_WORLD_SIZE, MPICH's hydra PMI_RANK). Where: RMB_MPI_PLUGIN's
 * path; <dir of librmb>/rmb/; the build tree's btl/mpi/.libs (tests run
 * there); $(pkglibdir).
 *
 * Every shim call returns an MPI error code (0 = MPI_SUCCESS, the same in
 * both MPIs); error_string turns it into text.
 */
#ifndef BOOTSTRAP_MPI_H
#define BOOTSTRAP_MPI_H

#include "bootstrap/bootstrap_flavour.h"

#include <stddef.h>
#include <stdint.h>

#define BOOTSTRAP_MPI_SHIM_ABI   6
#define BOOTSTRAP_MPI_SHIM_ENTRY "rmb_mpi_shim"

/* Accumulate operations, mapped onto MPI_Op by the shim. */
typedef enum {
    BOOTSTRAP_MPI_OP_NO_OP,
    BOOTSTRAP_MPI_OP_REPLACE,
    BOOTSTRAP_MPI_OP_SUM,
    BOOTSTRAP_MPI_OP_BAND,
    BOOTSTRAP_MPI_OP_BOR,
    BOOTSTRAP_MPI_OP_BXOR
} bootstrap_mpi_op_t;

typedef struct bootstrap_mpi_shim {
    unsigned abi;     /* BOOTSTRAP_MPI_SHIM_ABI */
    const char *name; /* "openmpi", "mpich" */

    /* ---- process ---- */
    /* 0 when the MPI library in the process is the one the plugin was built
     * for; otherwise fills why. */
    int (*check)(char *why, size_t size);
    /* 1 between MPI_Init and MPI_Finalize. */
    int (*running)(void);
    /* MPI_Init_thread(MPI_THREAD_SERIALIZED: the shim serializes its own
     * calls, btl/mpi's progress thread included), for programs that are not
     * MPI programs themselves (RMB_BOOTSTRAP=mpi); finalize is MPI_Finalize. */
    int (*init)(void);
    int (*finalize)(void);
    /* The thread level MPI runs at: 0 single, 1 funneled, 2 serialized,
     * 3 multiple. */
    int (*thread_level)(void);
    void (*error_string)(int code, char *buf, size_t size);
    void (*abort)(int code) __attribute__((noreturn));

    /* ---- the job communicator: a duplicate of MPI_COMM_WORLD ---- */
    /* Duplicates MPI_COMM_WORLD (errors return), gives my rank, the size,
     * and my node's leader: the lowest rank that shares memory with me
     * (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)). */
    int (*comm_open)(int *rank_p, int *size_p, int *leader_p);
    int (*comm_close)(void);
    int (*barrier)(void);
    /* MPI_Ibarrier into *req_p; test sets *done_p once it completed (and
     * frees the request). */
    int (*ibarrier)(void **req_p);
    int (*test)(void *req, int *done_p);
    int (*allgather)(const void *in, void *out, size_t size);
    /* Key pushes (bootstrap_mpi.c): push sends buf to every other rank
     * without blocking and frees it (free()) once every send completed;
     * push_reap completes what finished (wait: everything). push_recv
     * receives one push: from source (-1: any); *buf_p (malloc'ed) is NULL
     * when none is there and block is 0. */
    int (*push)(void *buf, size_t size);
    int (*push_reap)(int wait);
    int (*push_recv)(int source, int block, int *source_p, void **buf_p, size_t *size_p);
    /* Lets MPI's progress engine run (passive target needs it in some MPIs). */
    int (*progress)(void);

    /* ---- RMA: dynamic windows over the job communicator ---- */
    /* Collective. MPI_Win_create_dynamic + MPI_Win_lock_all(NOCHECK);
     * *unified_p says whether the memory model is MPI_WIN_UNIFIED. */
    int (*win_create)(void **win_p, int *unified_p);
    /* Collective. When every rank is on this node, MPI_Win_allocate_shared
     * of size bytes here (*base_p; disp is the offset from a rank's own
     * base), then as win_create; else *win_p is NULL. */
    int (*win_allocate)(size_t size, void **base_p, void **win_p, int *unified_p);
    /* MPI_Win_shared_query on a win_allocate window: where peer's segment
     * is mapped in this process. */
    int (*win_shared_query)(void *win, int peer, void **base_p);
    int (*win_free)(void *win);
    int (*win_attach)(void *win, void *addr, size_t size);
    int (*win_detach)(void *win, void *addr);
    /* MPI_Get_address: the displacement of addr in a dynamic window. */
    uint64_t (*address)(const void *addr);
    int (*put)(void *win, const void *src, size_t len, int peer, uint64_t disp);
    int (*get)(void *win, void *dst, size_t len, int peer, uint64_t disp);
    /* One 4- or 8-byte unsigned element. */
    int (*acc)(void *win, const void *src, unsigned size, int peer, uint64_t disp,
               bootstrap_mpi_op_t op);
    int (*fetch_op)(void *win, const void *src, void *result, unsigned size, int peer,
                    uint64_t disp, bootstrap_mpi_op_t op);
    int (*cas)(void *win, const void *src, const void *compare, void *result, unsigned size,
               int peer, uint64_t disp);
    int (*flush)(void *win, int peer);
    int (*flush_local)(void *win, int peer);
    int (*flush_all)(void *win);
    int (*flush_local_all)(void *win);
} bootstrap_mpi_shim_t;

/* The plugin's one exported symbol. */
typedef const bootstrap_mpi_shim_t *(*bootstrap_mpi_shim_entry_t)(unsigned abi);

extern const bootstrap_flavour_ops_t bootstrap_mpi_ops;

/* Whether auto should pick the MPI flavour: the process has MPI
 * initialized, or MPICH's hydra launched it (PMI_RANK, no PMIx) and a
 * plugin for it exists. */
int bootstrap_mpi_detected(void);

/* The loaded plugin, loading it on first use; NULL (cause logged) when
 * none fits. */
const bootstrap_mpi_shim_t *bootstrap_mpi_shim(void);

/* Whether btl/mpi may run a progress thread: rmb initialized MPI (every MPI
 * call is then ours, and serialized by the shim) at SERIALIZED or more, or
 * the program did at MPI_THREAD_MULTIPLE. */
int bootstrap_mpi_thread_allowed(void);

/* MPI runs in this process and btl/mpi may use it: a plugin is loaded (or
 * loadable) and MPI is between init and finalize. Cheap after the first call. */
int bootstrap_mpi_running(void);

/* The job communicator (a duplicate of MPI_COMM_WORLD), shared by the
 * flavour and btl/mpi, counted; collective the first and the last time.
 * leader_p (may be NULL): see comm_open. */
util_status_t bootstrap_mpi_comm_acquire(int *rank_p, int *size_p, int *leader_p);
util_status_t bootstrap_mpi_comm_release(void);

/* MPI error code as a logged error; returns UTIL_ERR_IO. */
util_status_t bootstrap_mpi_fail(const char *what, int code);

/* bootstrap_allgather with the MPI flavour: one MPI_Allgather. */
util_status_t bootstrap_mpi_allgather(const void *in, void *out, size_t size);

#endif
