/*
 * rcoll.h — collective operations over rpipe channels (public API).
 *
 * A collective handle is compiled once from a configuration (thesis §5.3,
 * Listings 5.9-5.10): the operation, the group of ranks, the element size
 * and count, and for reductions the operation. rcoll_init() turns it into
 * rounds of rwrite/rread actions on rpipe channels; rcoll() runs it to
 * completion, rcoll_nb() starts and advances it without waiting, and
 * rcoll_reset() makes a completed handle ready for its next use.
 *
 * Semantics are MPI-like: every member of a group creates its handles and
 * starts collectives on that group in the same order (handles of one group
 * may differ in operation; several may be in flight at once). Ranks that
 * are not in the group do not call. Reduction operations, built-in or the
 * user's, must be associative and commutative.
 *
 * Buffers are passed per call. Sizes below are in elements of elem_size
 * bytes; "block" is count elements. n is the group size, i a member's index
 * in the group (0..n-1), root a member index.
 *
 *   RCOLL_BARRIER    no data.
 *   RCOLL_BCAST      root's src (block) -> every member's dst (the root's
 *                    too, unless dst is NULL or equal to src).
 *   RCOLL_REDUCE     op over every member's src (block) -> root's dst.
 *   RCOLL_ALLREDUCE  op over every member's src -> every dst (src == dst ok).
 *   RCOLL_ALLGATHER  member j's src (block) -> block j of every dst (n blocks).
 *   RCOLL_SCAN       dst of member i = op over src of members 0..i.
 *   RCOLL_EXSCAN     dst of member i = op over src of members 0..i-1
 *                    (member 0's dst is not written).
 *   RCOLL_SCATTER    block j of root's src (n blocks) -> member j's dst.
 *   RCOLL_GATHER     member j's src (block) -> block j of root's dst.
 *   RCOLL_ALLTOALL   block j of member i's src -> block i of member j's dst
 *                    (src and dst hold n blocks, must not overlap).
 *
 * Except where noted src and dst must not overlap. Every call returns
 * R_SUCCESS, R_PENDING (rcoll_nb, rcoll_test) or a negative R_ERR_* code
 * (rstrerror() gives its text).
 */
#ifndef RCOLL_H
#define RCOLL_H

#include "rmalloc.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    RCOLL_BARRIER = 0,
    RCOLL_BCAST,
    RCOLL_REDUCE,
    RCOLL_ALLREDUCE,
    RCOLL_ALLGATHER,
    RCOLL_SCAN,
    RCOLL_EXSCAN,
    RCOLL_SCATTER,
    RCOLL_GATHER,
    RCOLL_ALLTOALL
} rcoll_type_t;

/* Element types of the built-in reductions; RCOLL_BYTES means "opaque
 * elements of elem_size bytes" (data movement, or a user reduction). */
typedef enum {
    RCOLL_BYTES = 0,
    RCOLL_INT32,
    RCOLL_INT64,
    RCOLL_UINT64,
    RCOLL_FLOAT,
    RCOLL_DOUBLE
} rcoll_dtype_t;

/* Built-in reductions; AND/OR/XOR (bitwise) only for the integer types. */
typedef enum {
    RCOLL_OP_NONE = 0,
    RCOLL_SUM,
    RCOLL_PROD,
    RCOLL_MIN,
    RCOLL_MAX,
    RCOLL_AND,
    RCOLL_OR,
    RCOLL_XOR
} rcoll_op_t;

/* A user reduction: inout[k] = inout[k] (op) in[k] for k < count elements. */
typedef void (*rcoll_user_op_func_t)(void *inout, const void *in, size_t count);

/* All ranks of the job: set group_size to this. */
#define RCOLL_GROUP_ALL 0

typedef struct rcoll_config {
    rcoll_type_t type;
    /* The group: ranks start + k * 2^log2stride for k < group_size
     * (an OpenSHMEM 1.x active set); group_size RCOLL_GROUP_ALL: every rank. */
    int group_start;
    int group_log2stride;
    int group_size;
    int root;            /* member index (0..n-1) of BCAST/REDUCE/SCATTER/GATHER */
    size_t elem_size;    /* bytes per element (set from dtype when 0) */
    size_t count;        /* elements per block */
    rcoll_dtype_t dtype; /* with op: a built-in reduction */
    rcoll_op_t op;
    rcoll_user_op_func_t user_op; /* non-NULL: used instead of dtype/op */
    rdma_op_t rdma_op;            /* channels: RDMA_PUT (default) or RDMA_GET */
} rcoll_config_t;

typedef struct rcoll_handle *rcoll_h;

/* Defaults: barrier over all ranks, root 0, no data, RDMA_PUT. */
RMALLOC_API void rcoll_config_init(rcoll_config_t *cfg);

/* Collective over the group (call after rinit): compiles the schedule and
 * connects the channels it needs, creating them on first use of a rank
 * pair; waits for the other members to create their handle. R_ERR_INVALID
 * for a bad configuration or when this rank is not a member. */
RMALLOC_API int rcoll_init(rcoll_h *handle_p, const rcoll_config_t *cfg);

/* Runs the collective with these buffers to completion. The handle must
 * be idle or completed (a completed handle is reset implicitly). */
RMALLOC_API int rcoll(rcoll_h h, const void *src, void *dst);

/* Starts the collective (idle handle) or advances it (started handle;
 * src and dst are then ignored). R_SUCCESS once complete (and on every
 * later call until rcoll_reset), R_PENDING while it is in flight. Every
 * rcoll_nb, rcoll_test and rcoll_progress call advances all collectives
 * in flight on this rank. */
RMALLOC_API int rcoll_nb(rcoll_h h, const void *src, void *dst);

/* Advances a started collective: R_SUCCESS when complete, R_PENDING, or
 * R_ERR_STATE when the handle was never started. */
RMALLOC_API int rcoll_test(rcoll_h h);

/* Waits for a started collective to complete. */
RMALLOC_API int rcoll_wait(rcoll_h h);

/* Advances every collective in flight on this rank; R_SUCCESS when none is
 * left, R_PENDING otherwise. */
RMALLOC_API int rcoll_progress(void);

/* Makes a completed (or idle) handle ready to start again; R_ERR_BUSY
 * while it is in flight. */
RMALLOC_API int rcoll_reset(rcoll_h h);

/* Releases the handle (local; R_ERR_BUSY while in flight). Channels stay
 * open for other handles until rexit(). */
RMALLOC_API int rcoll_free(rcoll_h h);

/* The handle's group: this rank's member index and the member count. */
RMALLOC_API int rcoll_group_rank(rcoll_h h);
RMALLOC_API int rcoll_group_size(rcoll_h h);

#ifdef __cplusplus
}
#endif

#endif
