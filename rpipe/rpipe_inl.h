/*
 * rpipe hot-path helpers: library state, descriptor conversion and the
 * notified flag.
 */
#ifndef RPIPE_INL_H
#define RPIPE_INL_H

#include "rpipe/rpipe.h"
#include "util/wait.h"

#include <stddef.h>

/* Run by rexit after its barrier and before the channels close, in the
 * order added: a client of the channels (rcoll) drops what still uses them.
 * rpipe never calls its clients by name. */
typedef void (*rpipe_finalize_hook_func_t)(void);
#define RPIPE_FINALIZE_HOOKS_MAX 4

typedef struct rpipe_state {
    int refcount;
    int rank, size;
    btl_ctx_t *btl;
    uint64_t spin;                 /* polls before yielding (RMB_RPIPE_SPIN) */
    double connect_timeout;        /* seconds (RMB_RPIPE_CONNECT_TIMEOUT) */
    uint32_t slots;                /* small-message slots per channel (RMB_RPIPE_SLOTS) */
    int get_push;                  /* RMB_RPIPE_GET_PUSH */
    uint64_t prefetch;             /* bytes of a message rread pulls in (RMB_RPIPE_PREFETCH) */
    rch_t channels;                /* every open channel */
    uint64_t deferred;             /* posts/frees deferred over all channels */
    uint64_t barriers;             /* network_barrier and rexit calls: the epoch */
    int exiting;                   /* rexit past its barrier: peers may have unmapped */
    uint64_t *msg_sent, *msg_recv; /* network_send/recv sequence per peer */
    rpipe_finalize_hook_func_t finalize_hooks[RPIPE_FINALIZE_HOOKS_MAX];
    int finalize_nhooks;
} rpipe_state_t;

extern rpipe_state_t rpipe_state;

/* Adds hook for this rinit..rexit (again is a no-op). Call after rinit. */
util_status_t rpipe_finalize_hook_add(rpipe_finalize_hook_func_t hook);

/* The sync layer's "not now" (its queue is full, or what we wait for is not
 * there yet): the caller defers, or its _nb form returns R_PENDING. */
static inline int rpipe_sync_not_now(util_status_t status)
{
    return status == UTIL_ERR_NO_RESOURCE || status == UTIL_IN_PROGRESS;
}

typedef struct {
    uint64_t polls;
    util_wait_t idle; /* the yield/nap phase */
} rpipe_wait_t;
void rpipe_wait_init(rpipe_wait_t *wait);
void rpipe_wait_step(rpipe_wait_t *wait);

util_status_t rpipe_connect(rch_t ch);

/* Sends deferred posts/frees of ch in order while the queue takes them. */
util_status_t rpipe_flush_deferred(rch_t ch);
/* The same for every open channel (best effort). */
void rpipe_flush_all_deferred(void);
/* Posts (producer) or frees (consumer) desc now, or defers it. */
util_status_t rpipe_post_or_defer(rch_t ch, const raddr_t *desc);
/* Defers it: sent by the next rpipe_flush_deferred (rread_nb, rmalloc_nb,
 * any blocking wait, rclose). */
util_status_t rpipe_defer(rch_t ch, const raddr_t *desc);
/* Channel-mode producer, nothing deferred: posts desc, keeping the write of
 * its record in ch->rec* for the caller to send with the message. */
util_status_t rpipe_post_capture(rch_t ch, const raddr_t *desc);

static inline util_status_t rpipe_ready(rch_t ch)
{
    if (__builtin_expect(ch->connected, 1)) {
        return UTIL_OK;
    }
    return rpipe_connect(ch);
}

/* Stores a descriptor made of these fields at *d. Callers copy
 * descriptors in 16-byte loads (they are passed by value), and a wide load
 * of narrower stores stalls on store forwarding (tens of ns per message
 * here): so, where the layout allows, three 16-byte stores. */
static inline __attribute__((always_inline)) void
rpipe_desc_pack(raddr_t *d, uint64_t start, uint64_t end, uint64_t id, uint64_t wrap_from,
                uint64_t payload, uint32_t block, uint16_t unit_shift, uint16_t flags)
{
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    typedef uint64_t rpipe_u64x2_t __attribute__((vector_size(16), aligned(8), may_alias));
    _Static_assert(offsetof(raddr_t, wrap_from) == 24 && offsetof(raddr_t, block) == 40 &&
                       offsetof(raddr_t, unit_shift) == 44 && offsetof(raddr_t, flags) == 46 &&
                       sizeof(raddr_t) == 48,
                   "raddr_t layout");
    rpipe_u64x2_t *v = (rpipe_u64x2_t *)(void *)d;

    v[0] = (rpipe_u64x2_t){start, end};
    v[1] = (rpipe_u64x2_t){id, wrap_from};
    v[2] = (rpipe_u64x2_t){payload, block | (uint64_t)unit_shift << 32 | (uint64_t)flags << 48};
#else
    *d = (raddr_t){.start = start,
                   .end = end,
                   .id = id,
                   .wrap_from = wrap_from,
                   .payload = payload,
                   .block = block,
                   .unit_shift = unit_shift,
                   .flags = flags};
#endif
}

/* *dst = the user's view of rmalloc's descriptor *src (its payload without
 * the user header), stored as rpipe_desc_pack does. */
static inline __attribute__((always_inline)) void rpipe_desc_store_user(raddr_t *dst,
                                                                        const raddr_t *src)
{
    rpipe_desc_pack(dst, src->start, src->end, src->id, src->wrap_from,
                    src->payload - RPIPE_UHDR_BYTES, src->block, src->unit_shift, src->flags);
}

/* rmalloc's payload includes the user header; the user's does not. */
static inline raddr_t rpipe_desc_from_user(raddr_t d)
{
    d.payload += RPIPE_UHDR_BYTES;
    return d;
}

/* Message memory is loads and stores here: this side owns it (PUT
 * consumer, GET producer), has the owner's region mapped (same node), or
 * is a GET consumer whose mirror the producer pushes messages into. */
static inline int rpipe_msgs_local(const struct rpipe_channel *ch)
{
    return ch->owner || ch->peer_region != NULL || ch->pushed_get;
}

/* Producer: its messages go to the peer's memory through the btl (PUT
 * across a network, GET pushed), and the consumer's slot free count is
 * read there. */
static inline int rpipe_msgs_pushed(const struct rpipe_channel *ch)
{
    return ch->pushed_get || !rpipe_msgs_local(ch);
}

/* A set flag is tied to its slot: H(channel salt, start) ^ (seq << 40 |
 * payload << 8 | mark). Freed memory keeps old payload bytes, and a new
 * message's flag can land on them; a constant marker would match such bytes
 * 1 time in 256, mark and seq together 1 time in 2^32, while rread still
 * learns the size. seq is the message's number (24 bits, rpipe_msg_seq); it
 * also lets a reader take a message found at its guessed place without the
 * tag, since the flag then proves which message it is. Channels whose
 * messages may reach 4 GiB keep the payload in bits 8..63 and carry no
 * sequence. */
static inline int rpipe_flag_has_seq(const struct rpipe_channel *ch)
{
    return ch->cfg.alloc_size < (UINT64_C(1) << 32) - RPIPE_UHDR_BYTES;
}

static inline uint64_t rpipe_flag_payload(const struct rpipe_channel *ch, uint64_t unmasked)
{
    return rpipe_flag_has_seq(ch) ? (unmasked >> 8) & 0xffffffffu : unmasked >> 8;
}

static inline uint64_t rpipe_flag_seq_bits(const struct rpipe_channel *ch, uint64_t seq)
{
    return rpipe_flag_has_seq(ch) ? (seq & 0xffffffu) << 40 : 0;
}
/* The sequence number a message's flag carries. Tag and channel modes: the
 * write order, which is also the order the reader takes messages in (posts
 * keep it). Block mode: the message's place in allocation order, the FIFO
 * sequence both rings give it (rmalloc_ring.h); the reader takes messages
 * in that order, and a producer may write them in another. */
static inline uint64_t rpipe_msg_seq(const struct rpipe_channel *ch, const raddr_t *d)
{
    return ch->cfg.sync == NET_SYNC_BLKS ? d->block : ch->seq;
}

/* A flag read back and unmasked is the one expected: mark and sequence
 * (the payload is checked against the slot by the caller). Stale bytes at
 * the flag's place (an older message's payload) then pass 1 time in 2^32
 * per place, not 1 in 256, and never in a row. */
static inline int rpipe_flag_expected(const struct rpipe_channel *ch, uint64_t unmasked,
                                      uint64_t seq)
{
    uint64_t checked = rpipe_flag_seq_bits(ch, UINT64_MAX) | 0xffu;

    return (unmasked & checked) == (rpipe_flag_seq_bits(ch, seq) | RPIPE_FLAG_MARK);
}

static inline uint64_t rpipe_flag_mask(const struct rpipe_channel *ch, const raddr_t *d)
{
    uint64_t z = ch->flag_salt + d->start * 0x9E3779B97F4A7C15ull;

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t rpipe_flag_value(const struct rpipe_channel *ch, const raddr_t *d,
                                        uint64_t user_payload, uint64_t seq)
{
    return rpipe_flag_mask(ch, d) ^
           (rpipe_flag_seq_bits(ch, seq) | (user_payload << 8) | RPIPE_FLAG_MARK);
}

/* Offset of the allocation in the region, and of its flag. */
static inline uint64_t rpipe_offset(const raddr_t *d)
{
    return rmalloc_desc_offset(d);
}

static inline uint64_t rpipe_flag_offset(const raddr_t *d)
{
    return rmalloc_desc_offset(d) + rmalloc_desc_flag_offset(d);
}

/* The payload was written by another core (or the network) and the caller
 * may read it in any order: ask for all its lines now, so they come in
 * together instead of one demand miss after another (em3d reads its values
 * at random). Only the first RMB_RPIPE_PREFETCH bytes: more would evict
 * what the caller works on. */
static inline void rpipe_prefetch(const char *payload, uint64_t bytes)
{
    const uint64_t line = RPIPE_CACHE_LINE;
    uint64_t n = bytes < rpipe_state.prefetch ? bytes : rpipe_state.prefetch, off = 0;

    for (; off + 4 * line <= n; off += 4 * line) { /* a quarter of the loop's own instructions */
        __builtin_prefetch(payload + off);
        __builtin_prefetch(payload + off + line);
        __builtin_prefetch(payload + off + 2 * line);
        __builtin_prefetch(payload + off + 3 * line);
    }
    for (; off < n; off += line) {
        __builtin_prefetch(payload + off);
    }
}

#endif
