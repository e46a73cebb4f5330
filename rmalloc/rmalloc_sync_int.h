/*
 * Internals of the shadow sync endpoint, shared by rmalloc_sync.c (the
 * steps every protocol takes) and the three protocols, one file each:
 * rmalloc_sync_block.c, rmalloc_sync_tag.c, rmalloc_sync_channel.c.
 * Nothing outside rmalloc/rmalloc_sync*.c includes this header.
 *
 * A protocol is a table of operations (rmalloc_sync_protocol_ops_t), one
 * per protocol and role: the endpoint points to the table of its protocol
 * and role at creation, and the public calls in rmalloc_sync.c go through
 * it, so no main path tests the protocol or the role. A call that the role
 * does not make (rmalloc_sync_alloc on a consumer, rmalloc_sync_accept on a
 * tag consumer) points to a shared stub that returns UTIL_ERR_INVALID,
 * never NULL.
 *
 * Sync buffer layout (same on both sides; words are 64-bit):
 *   0   freed     BLOCK: units the consumer released, in allocation order;
 *                 TAG: messages the consumer freed as its oldest live one
 *   8   (unused: Alg. 10/11's tag state; readers go by the stamps)
 *   16  consumed  my outbound tags the reader has taken (the reader writes it)
 *   24  loads     non-zero: my tag reader maps this buffer (it loads my tags)
 *   32  held      the caller's handshake words (rmalloc_sync_tell), written
 *   40  answer    by the peer; no protocol reads them
 *   48  ch_tail   my inbound channel ring: records I consumed (the peer reads it)
 *   64  tags[Q]            my outbound tags (48 bytes each)
 *   ... ring[Q]            my inbound channel records (48 bytes each)
 * (Q: queue_len rounded up to a power of two.)
 * Each tag and record carries a stamp (its sequence number) and a
 * checksum, so a reader never applies a torn or stale entry: it stops and
 * retries.
 */
#ifndef RMALLOC_SYNC_INT_H
#define RMALLOC_SYNC_INT_H

#include "rmalloc/rmalloc_order.h"
#include "rmalloc/rmalloc_sync.h"

#include <stddef.h>
#include <stdint.h>

#define RMALLOC_SYNC_OFF_FREED    0
#define RMALLOC_SYNC_OFF_CONSUMED 16
#define RMALLOC_SYNC_OFF_LOADS    24
#define RMALLOC_SYNC_OFF_HELD     32
#define RMALLOC_SYNC_OFF_ANSWER   40
#define RMALLOC_SYNC_OFF_CH_TAIL  48
#define RMALLOC_SYNC_OFF_TAGS     64

#define RMALLOC_SYNC_TAG_WINDOW 16 /* tags fetched per one-sided read */
#define RMALLOC_SYNC_TAG_PULL_READS                                                                \
    8 /* windows one pull reads, one-sided, to find
                                          the queue's end */

/* The read in flight (ep->pending): its kind says how the protocol applies
 * it when it completes (rmalloc_sync_protocol_ops_t.read_done). */
typedef enum {
    RMALLOC_SYNC_PEND_NONE = 0,
    RMALLOC_SYNC_PEND_FREED, /* BLOCK: the consumer's freed counter */
    RMALLOC_SYNC_PEND_COUNT, /* TAG producer: the consumer's count, before its tags */
    RMALLOC_SYNC_PEND_TAGS,  /* TAG: a window of the peer's tag queue */
    RMALLOC_SYNC_PEND_TAIL   /* CHANNEL: how far the peer consumed my records */
} rmalloc_sync_pend_t;

/* An allocation tag or channel record. A TAG free tag reuses two fields:
 * payload is the consumer's count of counted frees when it was written,
 * peer_id the message's post sequence (peer_block unused). */
typedef struct {
    uint64_t start, units, payload;
    uint64_t peer_id;    /* the producer's allocation id */
    uint32_t peer_block; /* the producer's block record */
    uint32_t check;      /* checksum of the other fields */
    uint64_t stamp;
} rmalloc_sync_rec_t;

_Static_assert(sizeof(rmalloc_sync_rec_t) == 48, "tag layout");
_Static_assert(sizeof(rmalloc_sync_rec_t) <= RMALLOC_SYNC_MAX_WRITE, "a record fits one inject");

/* A one-sided read may see a record half written; the stamp says which
 * slot and generation it belongs to, the checksum that it is whole. Every
 * field gets its own odd multiplier, so a field from another generation
 * changes the sum; the products are independent (it runs twice per
 * message, and a chain of multiplies was a tenth of tag mode's cost). */
static inline uint32_t rmalloc_sync_rec_check(const rmalloc_sync_rec_t *r)
{
    uint64_t h =
        (r->start * UINT64_C(0x9e3779b97f4a7c15)) ^ (r->units * UINT64_C(0xbf58476d1ce4e5b9)) ^
        (r->payload * UINT64_C(0x94d049bb133111eb)) ^ (r->peer_id * UINT64_C(0xd6e8feb86659fd93)) ^
        ((((uint64_t)r->peer_block << 32) ^ r->stamp) * UINT64_C(0xff51afd7ed558ccd));
    h ^= h >> 29;
    return (uint32_t)(h >> 32) | 1u; /* never 0: a zeroed slot fails */
}

static inline void rmalloc_sync_rec_seal(rmalloc_sync_rec_t *r, uint64_t stamp)
{
    r->stamp = stamp;
    r->check = rmalloc_sync_rec_check(r);
}

static inline int rmalloc_sync_rec_valid(const rmalloc_sync_rec_t *r, uint64_t stamp)
{
    return r->stamp == stamp && r->check == rmalloc_sync_rec_check(r);
}

/* A FIFO of descriptors (grows by doubling from 64: a slot is a mask, not
 * a division, on the take path). */
typedef struct {
    raddr_t *q;
    size_t cap, head, tail;
} rmalloc_sync_dq_t;

static inline int rmalloc_sync_dq_empty(const rmalloc_sync_dq_t *dq)
{
    return dq->head == dq->tail;
}

static inline raddr_t *rmalloc_sync_dq_front(rmalloc_sync_dq_t *dq)
{
    return &dq->q[dq->head & (dq->cap - 1)];
}

util_status_t rmalloc_sync_dq_push(rmalloc_sync_dq_t *dq, const raddr_t *d);

/* ---- the protocol table ------------------------------------------------- */

typedef struct rmalloc_sync_protocol_ops {
    const char *name;    /* "channel", "block", "tag" */
    unsigned vmem_flags; /* RMALLOC_VMEM_* of this role's instance */

    /* Setup: ERR_INVALID when the configuration does not suit the protocol. */
    util_status_t (*check)(const rmalloc_sync_config_t *config);
    /* The peer's buffer was mapped here (ep->peer_view is set). */
    void (*peer_view)(rmalloc_sync_ep_t *ep);
    /* The read of kind `kind` completed (ep->word or ep->scratch): apply it. */
    util_status_t (*read_done)(rmalloc_sync_ep_t *ep, rmalloc_sync_pend_t kind);
    /* One sync_in round (Alg. 3 l. 9-17): OK when applied, IN_PROGRESS. */
    util_status_t (*sync_in)(rmalloc_sync_ep_t *ep);

    /* The public calls (rmalloc_sync.h), each of this role. */
    util_status_t (*alloc)(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                           raddr_t *desc_p);
    util_status_t (*post)(rmalloc_sync_ep_t *ep, const raddr_t *desc); /* first
                                                      rmalloc_sync_post_check() */
    util_status_t (*pull)(rmalloc_sync_ep_t *ep);
    util_status_t (*next)(rmalloc_sync_ep_t *ep, raddr_t *desc_p);
    util_status_t (*guess)(const rmalloc_sync_ep_t *ep, uint64_t *start_p, uint64_t *units_p,
                           uint64_t *payload_p);
    util_status_t (*take_early)(rmalloc_sync_ep_t *ep, uint64_t start, uint64_t units,
                                uint64_t payload, raddr_t *desc_p);
    util_status_t (*accept)(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                            raddr_t *desc_p);
    util_status_t (*free)(rmalloc_sync_ep_t *ep, const raddr_t *desc);
    const uint64_t *(*poll_word)(const rmalloc_sync_ep_t *ep);
    util_status_t (*progress)(rmalloc_sync_ep_t *ep);
} rmalloc_sync_protocol_ops_t;

extern const rmalloc_sync_protocol_ops_t rmalloc_sync_block_producer_ops;
extern const rmalloc_sync_protocol_ops_t rmalloc_sync_block_consumer_ops;
extern const rmalloc_sync_protocol_ops_t rmalloc_sync_tag_producer_ops;
extern const rmalloc_sync_protocol_ops_t rmalloc_sync_tag_consumer_ops;
extern const rmalloc_sync_protocol_ops_t rmalloc_sync_channel_producer_ops;
extern const rmalloc_sync_protocol_ops_t rmalloc_sync_channel_consumer_ops;

/* ---- the endpoint -------------------------------------------------------- */

struct rmalloc_sync_ep {
    const rmalloc_sync_protocol_ops_t *ops; /* of cfg.protocol and cfg.role */
    rmalloc_sync_config_t cfg;
    rmalloc_sync_transport_t tr;
    uint8_t *buf;
    size_t buf_size;
    uint64_t ring_off;
    rmalloc_vmem_t *vm;
    rmalloc_sync_pend_t pending;
    int unflushed; /* some operation returned IN_PROGRESS */
    int pulled_new;
    uint64_t word;                    /* landing spot of 8-byte reads */
    uint8_t *scratch;                 /* landing spot of tag queue reads */
    const uint8_t *window_at;         /* the window to apply: scratch, or NULL for the peer
                                     view's queue itself */
    unsigned pull_reads;              /* TAG producer: windows read this pull */
    const uint8_t *peer_view;         /* peer's buffer mapped here, or NULL */
    int reader_loads;                 /* tag writer: the reader said it loads tags */
    uint64_t window;                  /* tags asked for by the read in flight */
    uint64_t freed_seen, freed_total; /* BLOCK: units; TAG: messages freed as the
                                               oldest live one */
    uint64_t count_read;              /* TAG producer: the consumer's count, read before its
                                     tags */
    rmalloc_order_t order;            /* TAG: live messages in post order */
    uint64_t consumed, consumed_told; /* tag reader: taken, reported */
    uint64_t produced, peer_consumed; /* tag writer: appended, last seen taken */
    uint64_t ch_sent, peer_tail, ch_tail;
    rmalloc_sync_dq_t ready; /* consumer: claimed, not yet taken */
    rmalloc_sync_dq_t early; /* consumer: taken at the guessed place, tag not seen */
    uint64_t last_start, last_units, last_payload; /* consumer: last taken */
    int early_free_tried;                          /* a free waits for an early message's tag */
    rmalloc_sync_stats_t stats;
};

/* ---- shared steps (rmalloc_sync.c) --------------------------------------- */

static inline uint64_t *rmalloc_sync_word_at(rmalloc_sync_ep_t *ep, uint64_t off)
{
    return (uint64_t *)(void *)(ep->buf + off);
}

/* Words of my buffer that the peer may write are read with acquire. */
static inline uint64_t rmalloc_sync_load_word(rmalloc_sync_ep_t *ep, uint64_t off)
{
    return __atomic_load_n(rmalloc_sync_word_at(ep, off), __ATOMIC_ACQUIRE);
}

static inline void rmalloc_sync_store_word(rmalloc_sync_ep_t *ep, uint64_t off, uint64_t v)
{
    __atomic_store_n(rmalloc_sync_word_at(ep, off), v, __ATOMIC_RELEASE);
}

/* Completes the read in flight and applies it (read_done). */
util_status_t rmalloc_sync_complete_read(rmalloc_sync_ep_t *ep);

/* Completes the read in flight, if any, and applies it. */
static inline util_status_t rmalloc_sync_complete_pending(rmalloc_sync_ep_t *ep)
{
    if (ep->pending == RMALLOC_SYNC_PEND_NONE) {
        return UTIL_OK;
    }
    return rmalloc_sync_complete_read(ep);
}

/* Completes writes and atomics the transport left in flight. */
static inline util_status_t rmalloc_sync_flush_unflushed(rmalloc_sync_ep_t *ep)
{
    if (ep->unflushed) {
        util_status_t status = ep->tr.ops->flush(ep->tr.ctx);
        if (status != UTIL_OK) {
            return status;
        }
        ep->unflushed = 0;
    }
    return UTIL_OK;
}

/* Reads the word at `off` of the peer's buffer into ep->word (a load where
 * the peer view maps it). OK: it is there, the caller applies it;
 * IN_PROGRESS: in flight as `kind`, read_done applies it. */
util_status_t rmalloc_sync_read_word(rmalloc_sync_ep_t *ep, rmalloc_sync_pend_t kind, uint64_t off);

/* Accounts a read the protocol issued itself (status of the transport's
 * read): IN_PROGRESS makes it the read in flight, as `kind`. */
util_status_t rmalloc_sync_read_issued(rmalloc_sync_ep_t *ep, rmalloc_sync_pend_t kind,
                                       util_status_t status);

/* Starts one sync_in round (ops->sync_in). */
util_status_t rmalloc_sync_start_pull(rmalloc_sync_ep_t *ep);

/* Producer, deferred protocols (block, tag): allocates, pulling frees at the
 * watermark and, when nothing fits, up to `retries` times (Alg. 3). */
util_status_t rmalloc_sync_alloc_deferred(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                          raddr_t *desc_p);

/* rmalloc_sync_pull() of the producers and the CHANNEL consumer: completes
 * the read in flight or starts a sync_in round. */
util_status_t rmalloc_sync_pull_base(rmalloc_sync_ep_t *ep);

/* Both roles: completes the read in flight and the writes left unflushed. */
util_status_t rmalloc_sync_progress_base(rmalloc_sync_ep_t *ep);

/* Consumer, next-fit: the guess of rmalloc_sync_guess(), where one can be made. */
util_status_t rmalloc_sync_guess_next(const rmalloc_sync_ep_t *ep, uint64_t *start_p,
                                      uint64_t *units_p, uint64_t *payload_p);

/* The peer sent something that does not fit this instance: logs, ERR_STATE. */
util_status_t rmalloc_sync_peer_mismatch(const rmalloc_sync_ep_t *ep, const rmalloc_sync_rec_t *r);

/* Consumer: the peer's record r announced an allocation. The reader loads
 * its poll header next: start that miss now, so that it overlaps the claim
 * that follows. */
static inline void rmalloc_sync_prefetch_header(const rmalloc_sync_ep_t *ep,
                                                const rmalloc_sync_rec_t *r)
{
    raddr_t hint = {.start = r->start,
                    .end = r->start + r->units,
                    .id = 1,
                    .payload = r->payload,
                    .unit_shift = (uint16_t)rmalloc_vmem_unit_shift(ep->vm)};
    const char *mem = rmalloc_vmem_ptr(ep->vm, &hint);

    if (mem != NULL) {
        __builtin_prefetch(mem + rmalloc_desc_flag_offset(&hint));
    }
}

/* Consumer: the last allocation taken, where the next guess starts. */
static inline void rmalloc_sync_note_taken(rmalloc_sync_ep_t *ep, uint64_t start, uint64_t units,
                                           uint64_t payload)
{
    ep->last_start = start;
    ep->last_units = units;
    ep->last_payload = payload;
}

/* Producer, every post first: ERR_INVALID unless desc is a live allocation
 * of this instance. (In the protocol's post rather than in the public call,
 * which then is a plain jump through the table: a post is on every
 * message's path.) */
static inline util_status_t rmalloc_sync_post_check(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    uint64_t peer_id;
    uint32_t peer_block;

    if (rmalloc_vmem_peer(ep->vm, desc, &peer_id, &peer_block) != UTIL_OK) {
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

/* Stubs for the slots a role or protocol leaves empty. */
util_status_t rmalloc_sync_check_any(const rmalloc_sync_config_t *config);
void rmalloc_sync_no_peer_view(rmalloc_sync_ep_t *ep);
util_status_t rmalloc_sync_no_read(rmalloc_sync_ep_t *ep, rmalloc_sync_pend_t kind);
util_status_t rmalloc_sync_no_sync_in(rmalloc_sync_ep_t *ep);
util_status_t rmalloc_sync_no_alloc(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                    raddr_t *desc_p);
util_status_t rmalloc_sync_no_post(rmalloc_sync_ep_t *ep, const raddr_t *desc);
util_status_t rmalloc_sync_no_pull(rmalloc_sync_ep_t *ep);
util_status_t rmalloc_sync_no_next(rmalloc_sync_ep_t *ep, raddr_t *desc_p);
util_status_t rmalloc_sync_no_guess(const rmalloc_sync_ep_t *ep, uint64_t *start_p,
                                    uint64_t *units_p, uint64_t *payload_p);
util_status_t rmalloc_sync_no_take_early(rmalloc_sync_ep_t *ep, uint64_t start, uint64_t units,
                                         uint64_t payload, raddr_t *desc_p);
util_status_t rmalloc_sync_no_accept(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                     raddr_t *desc_p);
util_status_t rmalloc_sync_no_free(rmalloc_sync_ep_t *ep, const raddr_t *desc);
const uint64_t *rmalloc_sync_no_poll_word(const rmalloc_sync_ep_t *ep);

#endif
