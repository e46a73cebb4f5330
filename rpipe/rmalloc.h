/*
 * rmalloc.h — RDMA Managed Buffers: zero-copy messaging over managed remote
 * memory (public API).
 *
 * A channel (rpipe) joins two ranks. The producer asks the channel for
 * memory with rmalloc(): the memory is provisioned in the consumer's
 * registered buffer by a shadow allocator that mirrors the consumer's, so no
 * address is ever exchanged. The producer fills it (rmem() gives a pointer)
 * and rwrite()s it; the consumer rread()s the message in place and rfree()s
 * it, which is what makes the memory available to the producer again.
 * Completion is a notified flag written after the payload and polled by the
 * consumer; the allocators stay in step through the channel's sync mode.
 *
 * The same program runs unchanged over RDMA_PUT (the producer writes into
 * the consumer) and RDMA_GET (the consumer reads from the producer); only
 * which side is rdma_active changes. Where the two ends do not map each
 * other's memory (across nodes), a GET producer pushes each message into
 * the consumer's copy of the region instead (RMB_RPIPE_GET_PUSH): a read
 * per poll of a remote flag would cost a round trip each.
 *
 * Changes from the thesis's appendix B, made for consistency:
 *   - every call returns an int status (R_SUCCESS, R_PENDING, R_ERR_*);
 *     outputs are pointer arguments, last;
 *   - rpipe(&ch, &cfg) takes pointers (B.1's by-value rch_t could not
 *     return the channel) and rpipe_close(ch) releases it;
 *   - rread(ch, &desc, &ptr, size) returns the descriptor and a pointer to
 *     the message, as Listing B.2 uses it (B.1's prototype differed);
 *   - rfree(ch, desc) names its channel, as the listings do;
 *   - the *_nb forms return R_PENDING instead of setting a flag argument.
 */
#ifndef RMALLOC_H
#define RMALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RMALLOC_API __attribute__((visibility("default")))
#else
#define RMALLOC_API
#endif

/* ---- status codes ----------------------------------------------------------------- */
enum {
    R_SUCCESS = 0,
    R_PENDING = 1,      /* not yet: call the _nb function again */
    R_ERR_NOMEM = -1,   /* out of memory */
    R_ERR_INVALID = -2, /* invalid argument (bad channel, descriptor, size) */
    R_ERR_NOT_FOUND = -3,
    R_ERR_TIMEOUT = -4, /* the peer did not answer in time */
    R_ERR_IO = -5,
    R_ERR_NO_RESOURCE = -6, /* temporarily out of a resource */
    R_ERR_UNSUPPORTED = -7, /* not supported by this channel or backend */
    R_ERR_UNREACHABLE = -8, /* the peer cannot be reached */
    R_ERR_TRUNCATED = -9,   /* the message is larger than the buffer */
    R_ERR_BUSY = -10,
    R_ERR_STATE = -11,    /* wrong state: not initialized, wrong side of the channel */
    R_ERR_RUNTIME = -12,  /* process manager error */
    R_ERR_OVERFLOW = -13, /* size out of range */
    R_ERR_PEER_FAILED = -14,
    R_ERR_EXISTS = -15 /* a channel with this peer and context already exists */
};

/* Text for a status code ("success", "invalid argument", ...). */
RMALLOC_API const char *rstrerror(int status);

/* ---- descriptors -------------------------------------------------------------------- */
/* An allocation, handed around by value (thesis Fig. 4.2): start and end
 * boundary tags in allocation units, the payload size, the granularity and
 * an allocation id. Treat it as opaque except for `payload`. */
#ifndef RMALLOC_RADDR_DEFINED
#define RMALLOC_RADDR_DEFINED
typedef struct raddr {
    uint64_t start;      /* first unit */
    uint64_t end;        /* one past the last unit */
    uint64_t id;         /* allocation id (0: null descriptor) */
    uint64_t wrap_from;  /* internal (next-fit wrap-around) */
    uint64_t payload;    /* payload bytes */
    uint32_t block;      /* internal */
    uint16_t unit_shift; /* granularity = 1 << unit_shift bytes */
    uint16_t flags;      /* internal */
} raddr_t;
#endif

#define RADDR_NULL ((raddr_t){0, 0, 0, 0, 0, 0, 0, 0})
static inline int raddr_is_null(raddr_t d)
{
    return d.id == 0;
}

/* ---- configuration -------------------------------------------------------------------- */
typedef enum { RDMA_PUT = 0, RDMA_GET = 1, RDMA_ATOMIC = 2 } rdma_op_t;

/* Allocation heuristics of the channel's allocators. */
typedef enum { FIRST_FIT = 0, NEXT_FIT, BEST_FIT, WORST_FIT, RANDOM_FIT } ralloc_algorithm_t;

/* How the producer's shadow allocator learns about the consumer's frees
 * (thesis Table 3.1). NET_SYNC_BLKS needs NEXT_FIT. */
typedef enum {
    NET_SYNC_BLKS = 0, /* deferred: freed blocks pulled when the shadow runs low */
    NET_SYNC_TAGS = 1, /* deferred: tag queues, any heuristic */
    CH_SYNC = 2        /* immediate: every descriptor through a secondary channel */
} rsync_mode_t;

#define RWATERMARK_HALF 0.5
#define RWATERMARK_FULL 1.0

typedef struct rmalloc_config {
    int peer;                     /* the other rank of the channel */
    int rdma_active;              /* 1: this rank initiates the RDMA (PUT: the
                                       producer; GET: the consumer) */
    rdma_op_t op;                 /* RDMA_PUT, RDMA_GET or RDMA_ATOMIC */
    ralloc_algorithm_t algorithm; /* allocation heuristic */
    size_t unit_size;             /* allocation granularity in bytes (power of two) */
    size_t alloc_size;            /* channel capacity: payload bytes in flight */
    rsync_mode_t sync;            /* allocator synchronization */
    double watermark;             /* pull frees above this fill (0 < w <= 1) */
    unsigned retries;             /* syncs per allocation before R_PENDING */
    unsigned context;             /* 0..255: tells apart channels of one rank pair */
    unsigned queue_len;           /* tag queue / sync channel entries (0: default) */
    uint64_t atomic_type;         /* RDMA_ATOMIC: operation applied by rwrite (RATOMIC_*) */
    size_t slot_payload;          /* messages up to this size skip the allocator: fixed
                                       slots (0: 48 bytes; at most RSLOT_PAYLOAD_MAX) */
} rmalloc_config_t;

/* The largest slot_payload: a channel whose messages keep one size (a halo
 * row, a per-pair pack) sets it to that size, and each message is a slot of
 * that size whose free is a count, with no allocator on its path. Both ends
 * set the same value; unit_size must be 64 or less. */
#define RSLOT_PAYLOAD_MAX 65520u

/* RDMA_ATOMIC channels: messages are one 8-byte operand; rwrite applies
 * atomic_type with it to the consumer's accumulator before the message
 * arrives; rread gives the operand in the user header (network_header) and
 * the accumulator's value as of that update as the payload. */
enum { RATOMIC_ADD = 0, RATOMIC_XOR = 1, RATOMIC_OR = 2, RATOMIC_AND = 3, RATOMIC_SET = 4 };

/* Defaults: RDMA_PUT, NEXT_FIT, NET_SYNC_BLKS, unit 8, 64 KiB, FULL
 * watermark, context 0; a program sets peer, rdma_active, op, alloc_size. */
RMALLOC_API void rmalloc_config_init(rmalloc_config_t *cfg);

/* ---- setup ---------------------------------------------------------------------------- */
typedef struct rpipe_channel *rch_t;

/* Collective: starts the library; *rank and *nranks may be NULL. */
RMALLOC_API int rinit(int *rank, int *nranks);
/* Collective: closes every channel and shuts down. */
RMALLOC_API int rexit(void);

/* Creates this rank's end of a channel with cfg->peer. Never waits for the
 * peer: the two ends find each other on first use, in any order, with no
 * global synchronization. R_ERR_EXISTS when this rank already has a channel
 * with that peer, direction and context. */
RMALLOC_API int rpipe(rch_t *ch, const rmalloc_config_t *cfg);
/* Releases this end (local; the peer should close its end too). Close once
 * neither end uses the channel any more (after network_barrier, say): over a
 * network the peer may still be reading this end's sync memory. */
RMALLOC_API int rpipe_close(rch_t ch);

/* ---- producer ------------------------------------------------------------------------- */
/* Memory for a message of size bytes, provisioned in the consumer's buffer.
 * rmalloc waits until memory is free; rmalloc_nb returns R_PENDING instead. */
RMALLOC_API raddr_t rmalloc(rch_t ch, size_t size);
RMALLOC_API int rmalloc_nb(rch_t ch, size_t size, raddr_t *desc_p);
/* Where to write the message of desc (NULL for a null/foreign descriptor). */
RMALLOC_API void *rmem(rch_t ch, raddr_t desc);
/* rmalloc + rmem: returns the pointer, *desc_p gets the descriptor. */
RMALLOC_API void *rmalloc_mem(rch_t ch, size_t size, raddr_t *desc_p);
/* Delivers the message (returns after local completion). */
RMALLOC_API int rwrite(rch_t ch, raddr_t desc);
RMALLOC_API int rwrite_nb(rch_t ch, raddr_t desc);

/* ---- consumer ------------------------------------------------------------------------- */
/* Waits for the next message of size bytes (NET_SYNC_BLKS: exactly the size
 * the producer allocated; other modes: at most size, larger is
 * R_ERR_TRUNCATED); *desc_p gets its descriptor (desc.payload is its size)
 * and *ptr_p a pointer to it, valid until rfree. rread_nb returns R_PENDING
 * when no message has arrived. NET_SYNC_BLKS, sizes past the slots at both
 * ends (over 48 bytes, or over slot_payload; up to 4 MiB): a producer that
 * wrote another size than the reader asks for is found once the read has
 * waited 50 ms, R_ERR_STATE with a message (not where a GET reader reads
 * the producer's memory through the network, RMB_RPIPE_GET_PUSH=no). */
RMALLOC_API int rread(rch_t ch, raddr_t *desc_p, void **ptr_p, size_t size);
RMALLOC_API int rread_nb(rch_t ch, raddr_t *desc_p, void **ptr_p, size_t size);
/* rread into buf (size bytes) and rfree; *len_p (may be NULL) gets the length. */
RMALLOC_API int rread_mem(rch_t ch, void *buf, size_t size, size_t *len_p);
/* Gives a message's memory back to the producer. With NET_SYNC_TAGS the
 * producer learns of it at this side's next rread/rread_nb on the channel,
 * any blocking rpipe call or rclose (at most 16 frees wait), not at once:
 * that bookkeeping stays off the path to what the caller sends next. */
RMALLOC_API int rfree(rch_t ch, raddr_t desc);

/* ---- immediate data and the network --------------------------------------------------- */
/* User bytes travelling beside the payload of desc (written by the
 * producer before rwrite, read by the consumer after rread). */
RMALLOC_API void *network_header(rch_t ch, raddr_t desc);
RMALLOC_API uint16_t network_header_bytes(size_t payload);

RMALLOC_API uint32_t network_rank(void);
RMALLOC_API uint32_t network_ranks(void);
/* Collective over all ranks. Before anyone passes, every post and free
 * that rwrite/rfree deferred has reached its peer (a reader may read a
 * burst before its barrier or after it) and every write to a peer landed. */
RMALLOC_API int network_barrier(void);
/* Control messages (setup data, not a fast path): send never waits for the
 * receiver; recv waits for the next message from `from` of exactly bytes. */
RMALLOC_API int network_send(int to, const void *buf, size_t bytes);
RMALLOC_API int network_recv(int from, void *buf, size_t bytes);
/* Through the process manager (hundreds of µs): for setup data; rcoll.h's
 * allgather is the fast one. */
RMALLOC_API int network_allgather(const void *in, void *out, size_t bytes);
RMALLOC_API void network_abort(int code) __attribute__((noreturn));

#ifdef __cplusplus
}
#endif

#endif
