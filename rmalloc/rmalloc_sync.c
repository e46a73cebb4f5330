/*
 * Shadow synchronization protocols over the rmalloc_sync transport.
 *
 * Sync buffer layout (same on both sides; words are 64-bit):
 *   0   freed     BLOCK: units the consumer released, in allocation order;
 *                 TAG: messages the consumer freed as its oldest live one
 *   8   (unused: Alg. 10/11's tag state; readers go by the stamps)
 *   16  consumed  my outbound tags the reader has taken (the reader writes it)
 *   24  loads     non-zero: my tag reader maps this buffer (it loads my tags)
 *   32  (unused)
 *   40  (unused: a channel reader polls the next record's stamp, no head)
 *   48  ch_tail   my inbound channel ring: records I consumed (the peer reads it)
 *   64  tags[Q]            my outbound tags (48 bytes each)
 *   ... ring[Q]            my inbound channel records (48 bytes each)
 * (Q: queue_len rounded up to a power of two.)
 * Each tag and record carries a stamp (its sequence number) and a
 * checksum, so a reader never applies a torn or stale entry: it stops and
 * retries. The tag queue is a ring: a slot is free again as soon as the
 * reader has taken it and reported so (its consumed count, written into
 * the writer's buffer every quarter ring). The
 * thesis's queue (Alg. 10/11) only restarts once the reader drained it
 * whole; that waits on the reader's progress even with room to spare,
 * which can deadlock two peers that each wait on the other. Readers rely on
 * the stamps rather than the tag state, so they fetch only the window of
 * tags they have not seen.
 *
 * TAG frees are named by order, not by the producer's names. Both ends
 * keep their live messages in post order (rmalloc_order.h). The consumer
 * counts a free of its oldest live message (one store to word 0) and sends
 * a free tag only for any other: the tag names the message by its post
 * sequence and carries the count as it was then. The producer reads the
 * count first, then the tags: each tag's count says how many counted frees
 * came before it, and after the last tag the rest of the count applies, so
 * it replays the consumer's order exactly; a counted free releases its own
 * oldest live message, which is the same one. So in-order frees cost no tag,
 * and a message taken by its flag (rmalloc_sync_take_early) needs no tag
 * at all: the consumer skips it unread.
 */
#include "rmalloc/rmalloc_sync.h"
#include "rmalloc/rmalloc_order.h"
#include "util/env.h"
#include "util/log.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define OFF_FREED     0
#define OFF_CONSUMED  16
#define OFF_LOADS     24
#define OFF_CH_TAIL   48
#define OFF_TAGS      64

enum { PEND_NONE = 0, PEND_FREED, PEND_COUNT, PEND_TAGS, PEND_TAIL };

/* An allocation tag or channel record. A TAG free tag reuses two fields:
 * payload is the consumer's count of counted frees when it was written,
 * peer_id the message's post sequence (peer_block unused). */
typedef struct {
    uint64_t start, units, payload;
    uint64_t peer_id;    /* the producer's allocation id */
    uint32_t peer_block; /* the producer's block record */
    uint32_t check;      /* checksum of the other fields */
    uint64_t stamp;
} rec_t;

_Static_assert(sizeof(rec_t) == 48, "tag layout");

/* A one-sided read may see a record half written; the stamp says which
 * slot and generation it belongs to, the checksum that it is whole. Every
 * field gets its own odd multiplier, so a field from another generation
 * changes the sum; the products are independent (it runs twice per
 * message, and a chain of multiplies was a tenth of tag mode's cost). */
static inline uint32_t rec_check(const rec_t *r)
{
    uint64_t h = (r->start * UINT64_C(0x9e3779b97f4a7c15)) ^
                 (r->units * UINT64_C(0xbf58476d1ce4e5b9)) ^
                 (r->payload * UINT64_C(0x94d049bb133111eb)) ^
                 (r->peer_id * UINT64_C(0xd6e8feb86659fd93)) ^
                 ((((uint64_t)r->peer_block << 32) ^ r->stamp) * UINT64_C(0xff51afd7ed558ccd));
    h ^= h >> 29;
    return (uint32_t)(h >> 32) | 1u; /* never 0: a zeroed slot fails */
}

static inline void rec_seal(rec_t *r, uint64_t stamp)
{
    r->stamp = stamp;
    r->check = rec_check(r);
}

static inline int rec_valid(const rec_t *r, uint64_t stamp)
{
    return r->stamp == stamp && r->check == rec_check(r);
}

#define TAG_WINDOW      16 /* tags fetched per read */
#define TAG_PULL_READS  8  /* windows one pull reads, one-sided, to find the queue's end */
_Static_assert(sizeof(rec_t) <= RMALLOC_SYNC_MAX_WRITE, "a record fits one inject");

/* A FIFO of descriptors (grows by doubling from 64: a slot is a mask, not
 * a division, on the take path). */
typedef struct {
    raddr_t *q;
    size_t   cap, head, tail;
} desc_queue_t;

static inline int dq_empty(const desc_queue_t *dq)
{
    return dq->head == dq->tail;
}

static util_status_t dq_push(desc_queue_t *dq, const raddr_t *d)
{
    if (dq->tail - dq->head == dq->cap) {
        size_t   cap = dq->cap ? dq->cap * 2 : 64;
        raddr_t *q   = malloc(cap * sizeof(*q));
        if (q == NULL) {
            util_error("rmalloc: cannot grow a descriptor queue to %zu", cap);
            return UTIL_ERR_NO_MEMORY;
        }
        for (size_t s = dq->head; s != dq->tail; s++)
            q[s - dq->head] = dq->q[s & (dq->cap - 1)];
        dq->tail -= dq->head;
        dq->head  = 0;
        free(dq->q);
        dq->q   = q;
        dq->cap = cap;
    }
    dq->q[dq->tail++ & (dq->cap - 1)] = *d;
    return UTIL_OK;
}

static inline raddr_t *dq_front(desc_queue_t *dq)
{
    return &dq->q[dq->head & (dq->cap - 1)];
}

struct rmalloc_sync_ep {
    rmalloc_sync_config_t    cfg;
    rmalloc_sync_transport_t tr;
    uint8_t                 *buf;
    size_t                   buf_size;
    uint64_t                 ring_off;
    rmalloc_vmem_t          *vm;
    int                      pending;
    int                      unflushed; /* some operation returned IN_PROGRESS */
    int                      pulled_new;
    uint64_t                 word;    /* landing spot of 8-byte reads */
    uint8_t                 *scratch; /* landing spot of tag queue reads */
    const uint8_t           *window_at; /* the window to apply: scratch, or NULL for the
                                           peer view's queue itself */
    unsigned                 pull_reads; /* TAG producer: windows read this pull */
    const uint8_t           *peer_view; /* peer's buffer mapped here, or NULL */
    int                      reader_loads; /* tag writer: the reader said it loads tags */
    uint64_t                 window;  /* tags asked for by the read in flight */
    uint64_t                 freed_seen, freed_total; /* BLOCK: units; TAG: messages
                                                        freed as the oldest live one */
    uint64_t                 count_read; /* TAG producer: the consumer's count, read
                                            before its tags */
    rmalloc_order_t          order;   /* TAG: live messages in post order */
    uint64_t                 consumed, consumed_told; /* tag reader: taken, reported */
    uint64_t                 produced, peer_consumed; /* tag writer: appended, last seen taken */
    uint64_t                 ch_sent, peer_tail, ch_tail;
    desc_queue_t             ready;   /* consumer: claimed, not yet taken */
    desc_queue_t             early;   /* consumer: taken at the guessed place, tag not seen */
    uint64_t                 last_start, last_units, last_payload; /* consumer: last taken */
    int                      early_free_tried; /* a free waits for an early message's tag */
    rmalloc_sync_stats_t     stats;
};

static const char *protocol_names[RMALLOC_SYNC_PROTOCOL_COUNT] = {"channel", "block", "tag"};

const char *rmalloc_sync_protocol_name(rmalloc_sync_protocol_t protocol)
{
    return ((unsigned)protocol < RMALLOC_SYNC_PROTOCOL_COUNT) ? protocol_names[protocol] : "?";
}

static inline uint64_t *word_at(rmalloc_sync_ep_t *ep, uint64_t off)
{
    return (uint64_t *)(void *)(ep->buf + off);
}

/* Words of my buffer that the peer may write are read with acquire. */
static inline uint64_t load_word(rmalloc_sync_ep_t *ep, uint64_t off)
{
    return __atomic_load_n(word_at(ep, off), __ATOMIC_ACQUIRE);
}

static inline void store_word(rmalloc_sync_ep_t *ep, uint64_t off, uint64_t v)
{
    __atomic_store_n(word_at(ep, off), v, __ATOMIC_RELEASE);
}

util_status_t rmalloc_sync_parse_watermark(const char *text, double *watermark_p)
{
    char  *end;
    double w;

    if (!strcasecmp(text, "half")) {
        *watermark_p = RMALLOC_WATERMARK_HALF;
        return UTIL_OK;
    }
    if (!strcasecmp(text, "full")) {
        *watermark_p = RMALLOC_WATERMARK_FULL;
        return UTIL_OK;
    }
    w = strtod(text, &end);
    if (end == text || *end != '\0' || !(w > 0.0 && w <= 1.0)) {
        util_error("rmalloc watermark '%s' is not half, full or a fraction in (0,1]", text);
        return UTIL_ERR_INVALID;
    }
    *watermark_p = w;
    return UTIL_OK;
}

util_status_t rmalloc_sync_config_init(rmalloc_sync_config_t *config)
{
    util_status_t status;
    const char   *text;
    size_t        unit;
    long          value;

    memset(config, 0, sizeof(*config));
    config->unit         = 64;
    config->header_bytes = 8;
    config->watermark    = RMALLOC_WATERMARK_FULL;
    config->retries      = 4;
    config->queue_len    = 256;
    config->heuristic    = RMALLOC_NEXT_FIT;
    config->protocol     = RMALLOC_SYNC_BLOCK;

    if ((status = util_env_get_string("RMB_RMALLOC_HEURISTIC", &text)) != UTIL_OK ||
        (status = rmalloc_heuristic_parse(text, &config->heuristic)) != UTIL_OK)
        return status;
    if ((status = util_env_get_string("RMB_RMALLOC_SYNC", &text)) != UTIL_OK)
        return status;
    for (value = 0; value < RMALLOC_SYNC_PROTOCOL_COUNT; value++)
        if (!strcasecmp(text, protocol_names[value]))
            break;
    if (value == RMALLOC_SYNC_PROTOCOL_COUNT) {
        util_error("RMB_RMALLOC_SYNC='%s': use channel, block or tag", text);
        return UTIL_ERR_INVALID;
    }
    config->protocol = (rmalloc_sync_protocol_t)value;
    if ((status = util_env_get_size("RMB_RMALLOC_UNIT", &unit)) != UTIL_OK)
        return status;
    config->unit = unit;
    if ((status = util_env_get_string("RMB_RMALLOC_WATERMARK", &text)) != UTIL_OK ||
        (status = rmalloc_sync_parse_watermark(text, &config->watermark)) != UTIL_OK)
        return status;
    if ((status = util_env_get_int("RMB_RMALLOC_RETRIES", &value)) != UTIL_OK)
        return status;
    if (value < 0 || value > 1000000) {
        util_error("RMB_RMALLOC_RETRIES=%ld is out of range (0..1000000)", value);
        return UTIL_ERR_INVALID;
    }
    config->retries = (unsigned)value;
    if ((status = util_env_get_int("RMB_RMALLOC_QUEUE_LEN", &value)) != UTIL_OK)
        return status;
    if (value < 1 || value > (1L << 20)) {
        util_error("RMB_RMALLOC_QUEUE_LEN=%ld is out of range (1..1048576)", value);
        return UTIL_ERR_INVALID;
    }
    config->queue_len = (uint32_t)value;
    return UTIL_OK;
}

/* Queue entries: queue_len rounded up to a power of two, so that a slot
 * is a mask, not a division, on every message. */
static uint64_t queue_slots(uint32_t queue_len)
{
    uint64_t n = 1;
    while (n < queue_len)
        n <<= 1;
    return n;
}

size_t rmalloc_sync_buffer_size(const rmalloc_sync_config_t *config)
{
    return OFF_TAGS + 2 * (size_t)queue_slots(config->queue_len) * sizeof(rec_t);
}

util_status_t rmalloc_sync_create(const rmalloc_sync_config_t *config, void *sync_buf,
                                  const rmalloc_sync_transport_t *transport,
                                  rmalloc_sync_ep_t **ep_p)
{
    util_status_t         status;
    rmalloc_sync_ep_t    *ep;
    rmalloc_vmem_config_t vcfg;

    if (config == NULL || sync_buf == NULL || transport == NULL || transport->ops == NULL ||
        ((uintptr_t)sync_buf & 7) || config->queue_len == 0 ||
        (unsigned)config->protocol >= RMALLOC_SYNC_PROTOCOL_COUNT ||
        !(config->watermark > 0.0 && config->watermark <= 1.0)) {
        util_error("rmalloc: invalid sync endpoint configuration");
        return UTIL_ERR_INVALID;
    }
    if (config->protocol == RMALLOC_SYNC_BLOCK && config->heuristic != RMALLOC_NEXT_FIT) {
        util_error("rmalloc: the block protocol needs next-fit, not %s",
                   rmalloc_heuristic_name(config->heuristic));
        return UTIL_ERR_INVALID;
    }

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        util_error("rmalloc: cannot allocate a sync endpoint");
        return UTIL_ERR_NO_MEMORY;
    }
    ep->cfg      = *config;
    ep->cfg.queue_len = (uint32_t)queue_slots(config->queue_len);
    ep->tr       = *transport;
    ep->buf      = sync_buf;
    ep->buf_size = rmalloc_sync_buffer_size(config);
    ep->ring_off = OFF_TAGS + (uint64_t)config->queue_len * sizeof(rec_t);
    memset(sync_buf, 0, ep->buf_size);

    ep->scratch = malloc(TAG_WINDOW * sizeof(rec_t));
    if (ep->scratch == NULL) {
        util_error("rmalloc: cannot allocate the sync scratch buffer");
        status = UTIL_ERR_NO_MEMORY;
        goto err_free_ep;
    }

    /* PUT: the consumer owns the memory; GET: the producer does. */
    int is_local = (config->direction == RMALLOC_SYNC_PUT) == (config->role == RMALLOC_SYNC_CONSUMER);
    memset(&vcfg, 0, sizeof(vcfg));
    vcfg.base         = is_local ? config->base : NULL;
    vcfg.size         = config->size;
    vcfg.unit         = config->unit;
    vcfg.heuristic    = config->heuristic;
    vcfg.header_bytes = config->header_bytes;
    /* Block: both ends are rings. Tag and channel: the consumer only
     * applies the producer's placements, and a next-fit producer runs a ring
     * for as long as frees come in allocation order (the flag is ignored for
     * the other heuristics). */
    vcfg.flags        = (config->protocol == RMALLOC_SYNC_BLOCK)     ? RMALLOC_VMEM_RING
                        : (config->role == RMALLOC_SYNC_CONSUMER) ? RMALLOC_VMEM_CLAIMS
                                                                  : RMALLOC_VMEM_RING_FIRST;
    vcfg.seed         = config->seed;
    status = rmalloc_vmem_create(&vcfg, &ep->vm);
    if (status != UTIL_OK)
        goto err_free_scratch;
    *ep_p = ep;
    return UTIL_OK;

err_free_scratch:
    free(ep->scratch);
err_free_ep:
    free(ep);
    return status;
}

void rmalloc_sync_destroy(rmalloc_sync_ep_t *ep)
{
    if (ep == NULL)
        return;
    rmalloc_vmem_destroy(ep->vm);
    free(ep->ready.q);
    free(ep->early.q);
    rmalloc_order_fini(&ep->order);
    free(ep->scratch);
    free(ep);
}

void rmalloc_sync_set_peer_view(rmalloc_sync_ep_t *ep, void *peer_buf)
{
    ep->peer_view = peer_buf;
    /* Tell the tag writer that its tags are loaded here, past the stamp
     * that is stored last: it may leave out their checksum. Set once, never
     * cleared, so a reader that copies tags with one-sided reads (the only
     * one that needs the checksum) never sees tags without it. */
    if (peer_buf != NULL && ep->cfg.protocol == RMALLOC_SYNC_TAG)
        __atomic_store_n((uint64_t *)(void *)((uint8_t *)peer_buf + OFF_LOADS), 1,
                         __ATOMIC_RELEASE);
}

/* The slot of the peer's next tag or channel record, where it can be
 * loaded (a tag only through the peer view), or NULL. */
static const rec_t *next_incoming(const rmalloc_sync_ep_t *ep)
{
    uint64_t mask = ep->cfg.queue_len - 1;

    if (ep->cfg.protocol == RMALLOC_SYNC_CHANNEL)
        return (const rec_t *)(const void *)(ep->buf + ep->ring_off +
                                             (ep->ch_tail & mask) * sizeof(rec_t));
    if (ep->cfg.protocol == RMALLOC_SYNC_TAG && ep->peer_view != NULL)
        return (const rec_t *)(const void *)(ep->peer_view + OFF_TAGS +
                                             (ep->consumed & mask) * sizeof(rec_t));
    return NULL;
}

const uint64_t *rmalloc_sync_poll_word(const rmalloc_sync_ep_t *ep)
{
    const rec_t *slot = next_incoming(ep);

    if (ep->cfg.role != RMALLOC_SYNC_CONSUMER || !dq_empty(&ep->ready) || slot == NULL)
        return NULL;
    return &slot->stamp;
}

/* Next-fit puts the next allocation right after the last one; guess that
 * its size is the same (streams, ping-pongs), and at unit 0 when it would
 * not fit before the region's end. */
static uint64_t guess_next(const rmalloc_sync_ep_t *ep)
{
    uint64_t start = ep->last_start + ep->last_units;
    return ((start + ep->last_units) * ep->cfg.unit > ep->cfg.size) ? 0 : start;
}

rmalloc_vmem_t *rmalloc_sync_vmem(rmalloc_sync_ep_t *ep)
{
    return ep->vm;
}

void rmalloc_sync_get_stats(const rmalloc_sync_ep_t *ep, rmalloc_sync_stats_t *stats_p)
{
    *stats_p = ep->stats;
}

/* ---- applying what the peer sent ---------------------------------------- */

static __attribute__((cold)) util_status_t peer_mismatch(const rmalloc_sync_ep_t *ep,
                                                         const rec_t *r)
{
    util_error("rmalloc: peer sent %s of [%llu, %llu) that does not match this instance",
               ep->cfg.role == RMALLOC_SYNC_CONSUMER ? "an allocation" : "a free",
               (unsigned long long)r->start, (unsigned long long)(r->start + r->units));
    return UTIL_ERR_STATE;
}

static util_status_t issue_read(rmalloc_sync_ep_t *ep, int kind);

/* TAG, producer: releases its oldest live messages until `count` of them
 * went by count (each freed by the consumer as its oldest live message;
 * the two lists agree, see rmalloc_order.h). NO_RESOURCE when the list
 * ran out first: the rest are messages whose post is still deferred here
 * (the consumer took them by their flag), released once posted. */
static util_status_t release_counted(rmalloc_sync_ep_t *ep, uint64_t count)
{
    const raddr_t *run;
    size_t         n, done;
    util_status_t  status;

    while ((int64_t)(count - ep->freed_seen) > 0) {
        n = rmalloc_order_run(&ep->order, count - ep->freed_seen, &run);
        if (n == 0)
            return UTIL_ERR_NO_RESOURCE;
        /* a run in allocation order is one call on a ring-first instance */
        status = rmalloc_vmem_free_n(ep->vm, run, n, &done);
        if (status != UTIL_OK) {
            util_error("rmalloc: the peer freed [%llu, %llu) in order, which is not live here",
                       (unsigned long long)run[done].start, (unsigned long long)run[done].end);
            return UTIL_ERR_STATE;
        }
        rmalloc_order_pop_n(&ep->order, done);
        ep->freed_seen    += done;
        ep->stats.applied += done;
        ep->pulled_new     = 1;
    }
    return UTIL_OK;
}

/* TAG, producer: a free tag (a message the consumer freed out of order),
 * which names the message by its post sequence and carries the count as it
 * was then: the counted frees before it are applied first. NO_RESOURCE when
 * the message is not posted here yet (deferred): stop, apply it later. */
static util_status_t apply_free_tag(rmalloc_sync_ep_t *ep, const rec_t *r)
{
    size_t        i;
    util_status_t status = release_counted(ep, r->payload);

    if (status != UTIL_OK)
        return status;
    i = rmalloc_order_find(&ep->order, r->peer_id);
    if (i == SIZE_MAX && r->peer_id >= ep->produced)
        return UTIL_ERR_NO_RESOURCE;
    if (i == SIZE_MAX || ep->order.desc[i].start != r->start ||
        ep->order.desc[i].end != r->start + r->units ||
        rmalloc_vmem_free(ep->vm, &ep->order.desc[i]) != UTIL_OK)
        return peer_mismatch(ep, r);
    rmalloc_order_remove(&ep->order, i);
    ep->stats.applied++;
    return UTIL_OK;
}

/* A record from the peer: an allocation (consumer) or a free (producer).
 * NO_RESOURCE: it cannot be applied yet (apply_free_tag). */
static util_status_t apply_rec(rmalloc_sync_ep_t *ep, const rec_t *r)
{
    util_status_t status;
    raddr_t       d;

    if (ep->cfg.role == RMALLOC_SYNC_PRODUCER && ep->cfg.protocol == RMALLOC_SYNC_TAG)
        return apply_free_tag(ep, r);
    ep->stats.applied++;
    if (ep->cfg.role == RMALLOC_SYNC_CONSUMER && !dq_empty(&ep->early)) {
        /* CHANNEL: records come in the order messages are taken, so this is
         * the record of the oldest message taken at its guessed place: it
         * must agree. */
        raddr_t *e = dq_front(&ep->early);
        if (e->start != r->start || e->end != r->start + r->units || e->payload != r->payload) {
            util_error("rmalloc: the peer's allocation [%llu, +%llu) is not the message taken "
                       "at its next-fit place [%llu, +%llu)",
                       (unsigned long long)r->start, (unsigned long long)r->units,
                       (unsigned long long)e->start, (unsigned long long)(e->end - e->start));
            return UTIL_ERR_STATE;
        }
        status = rmalloc_vmem_set_peer(ep->vm, e, r->peer_id, r->peer_block);
        ep->early.head++;
        return status == UTIL_OK ? UTIL_OK : UTIL_ERR_STATE;
    }
    if (ep->cfg.role == RMALLOC_SYNC_CONSUMER) {
        /* The reader will load the new allocation's poll header next: start
         * that miss now, so that it overlaps the claim below. */
        raddr_t hint = {.start = r->start, .end = r->start + r->units, .id = 1,
                        .payload = r->payload,
                        .unit_shift = (uint16_t)rmalloc_vmem_unit_shift(ep->vm)};
        const char *mem = rmalloc_vmem_ptr(ep->vm, &hint);
        if (mem != NULL)
            __builtin_prefetch(mem + rmalloc_desc_flag_offset(&hint));
        if (ep->cfg.protocol == RMALLOC_SYNC_TAG) {
            /* TAG: the claim keeps the post sequence (r->stamp - 1), all
             * that a free needs to name the message */
            status = rmalloc_order_reserve(&ep->order);
            if (status != UTIL_OK)
                return status;
            status = rmalloc_vmem_claim(ep->vm, r->start, r->units, r->payload, r->stamp - 1, 0,
                                        &d);
            if (status == UTIL_OK)
                rmalloc_order_push(&ep->order, r->stamp - 1, &d);
        } else
            status = rmalloc_vmem_claim(ep->vm, r->start, r->units, r->payload, r->peer_id,
                                        r->peer_block, &d);
        if (status == UTIL_OK)
            status = dq_push(&ep->ready, &d);
        ep->last_start   = r->start;
        ep->last_units   = r->units;
        ep->last_payload = r->payload;
    } else {
        /* CHANNEL: the consumer freed the block the record names (by the
         * producer's own names: its id and block record) */
        d = (raddr_t){.start = r->start, .end = r->start + r->units, .id = r->peer_id,
                      .block = r->peer_block};
        status = rmalloc_vmem_free(ep->vm, &d);
    }
    return (status == UTIL_ERR_INVALID) ? peer_mismatch(ep, r) : status;
}

/* BLOCK, producer: the consumer's freed counter arrived (Alg. 8). */
static util_status_t apply_freed(rmalloc_sync_ep_t *ep, uint64_t freed)
{
    uint64_t delta = freed - ep->freed_seen;
    ep->pulled_new = (delta != 0);
    if (delta == 0)
        return UTIL_OK;
    if (rmalloc_vmem_ring_retire(ep->vm, delta) != UTIL_OK)
        return UTIL_ERR_STATE;
    ep->freed_seen = freed;
    return UTIL_OK;
}

/* TAG, reader side: enough tags taken and not yet reported to tell the
 * writer (see report_consumed). */
static inline int tags_to_report(const rmalloc_sync_ep_t *ep)
{
    return ep->consumed - ep->consumed_told >= (ep->cfg.queue_len + 3) / 4;
}

/* TAG, reader side: reports the tags taken (Alg. 11 l. 17-20, per quarter
 * ring rather than per full queue): the writer may then reuse those slots.
 * Not per tag: the count lands in the writer's busiest cache line, and the
 * writer can only be short of slots while some are unread (caught up,
 * fewer than a quarter ring are unreported). */
static util_status_t report_consumed(rmalloc_sync_ep_t *ep)
{
    uint64_t      told   = ep->consumed;
    util_status_t status = ep->tr.ops->write(ep->tr.ctx, OFF_CONSUMED, &told, sizeof(told));

    if (status == UTIL_ERR_NO_RESOURCE)
        return UTIL_OK; /* reported with the next batch */
    if (status == UTIL_IN_PROGRESS)
        ep->unflushed = 1;
    else if (status != UTIL_OK)
        return status;
    ep->stats.writes++;
    ep->consumed_told = told;
    return UTIL_OK;
}

/* TAG, reader side: applies the window of the peer's queue at
 * ep->window_at (or in the peer view, around the ring). Tag number n sits in
 * slot n % Q with stamp n + 1 and a good checksum; the first slot that is
 * not so (not written yet, or half written) ends the batch, to be read
 * again later (*at_end_p = 1). */
static util_status_t apply_window(rmalloc_sync_ep_t *ep, uint64_t *n_p, int *at_end_p)
{
    util_status_t status = UTIL_OK;
    uint64_t      n;

    *at_end_p = 0;
    for (n = 0; n < ep->window; n++) {
        rec_t r;

        if (ep->window_at == NULL) {
            const rec_t *slot = next_incoming(ep);
            /* The writer stores the stamp last, with release: once it reads
             * n + 1 (acquire), the fields are whole, and they stay so until
             * this side reports the slot taken. No checksum to compute. */
            if (__atomic_load_n(&slot->stamp, __ATOMIC_ACQUIRE) != ep->consumed + 1) {
                *at_end_p = 1;
                break;
            }
            memcpy(&r, slot, offsetof(rec_t, stamp));
            r.stamp = ep->consumed + 1;
        } else {
            memcpy(&r, ep->window_at + n * sizeof(rec_t), sizeof(r));
            if (!rec_valid(&r, ep->consumed + 1)) {
                *at_end_p = 1; /* a one-sided read may have caught it half written */
                break;
            }
        }
        status = apply_rec(ep, &r);
        if (status == UTIL_ERR_NO_RESOURCE)
            break;
        if (status != UTIL_OK)
            return status;
        ep->consumed++;
    }
    *n_p = n;
    return UTIL_OK;
}

/* TAG, reader side: a window of the peer's queue arrived (Alg. 11). */
static util_status_t apply_tags(rmalloc_sync_ep_t *ep)
{
    uint64_t      n;
    int           at_end;
    util_status_t status;

    /* pulled_new was cleared when the pull began (start_pull): a pull may
     * read several windows */
    status = apply_window(ep, &n, &at_end);
    if (status != UTIL_OK)
        return status;
    if (n != 0)
        ep->pulled_new = 1;
    /* Producer: the counted frees. Every tag written before the count was
     * read is in the window when it ended at a missing tag; otherwise
     * (window exhausted, or a tag to apply later) a counted free could
     * overtake a tag before it. */
    if (ep->cfg.role == RMALLOC_SYNC_PRODUCER && at_end) {
        status = release_counted(ep, ep->count_read);
        if (status != UTIL_OK && status != UTIL_ERR_NO_RESOURCE)
            return status;
    } else if (ep->cfg.role == RMALLOC_SYNC_PRODUCER && n == ep->window &&
               ++ep->pull_reads < TAG_PULL_READS) {
        /* one-sided window used up (at the ring's end, or full): read on */
        if (tags_to_report(ep) && (status = report_consumed(ep)) != UTIL_OK)
            return status;
        return issue_read(ep, PEND_TAGS);
    }
    return tags_to_report(ep) ? report_consumed(ep) : UTIL_OK;
}

static util_status_t apply_read(rmalloc_sync_ep_t *ep, int kind)
{
    switch (kind) {
    case PEND_FREED: return apply_freed(ep, ep->word);
    case PEND_COUNT: /* TAG producer: the count first, then the tags */
        ep->count_read = ep->word;
        return issue_read(ep, PEND_TAGS);
    case PEND_TAGS:  return apply_tags(ep);
    default:         ep->peer_tail = ep->word; return UTIL_OK;
    }
}

/* Completes the read in flight, if any, and applies it. */
static util_status_t complete_pending(rmalloc_sync_ep_t *ep)
{
    util_status_t status;
    int           kind = ep->pending;

    if (kind == PEND_NONE)
        return UTIL_OK;
    status = ep->tr.ops->flush(ep->tr.ctx);
    if (status != UTIL_OK)
        return status;
    ep->pending   = PEND_NONE;
    ep->unflushed = 0;
    return apply_read(ep, kind);
}

/* Completes writes and atomics the transport left in flight. */
static util_status_t flush_unflushed(rmalloc_sync_ep_t *ep)
{
    if (ep->unflushed) {
        util_status_t status = ep->tr.ops->flush(ep->tr.ctx);
        if (status != UTIL_OK)
            return status;
        ep->unflushed = 0;
    }
    return UTIL_OK;
}

/* issue_read() where the peer's buffer is mapped: loads. A tag window is
 * applied in place once its first slot holds the tag expected next. */
static util_status_t view_read(rmalloc_sync_ep_t *ep, int kind)
{
    util_status_t status = flush_unflushed(ep); /* no read completes here to do it */

    if (status != UTIL_OK)
        return status;
    ep->stats.reads++;
    if (kind == PEND_TAGS) {
        ep->window = ep->cfg.queue_len; /* no more can be there: slots come back on reports */
        if (__atomic_load_n(&next_incoming(ep)->stamp, __ATOMIC_ACQUIRE) != ep->consumed + 1) {
            if (ep->cfg.role == RMALLOC_SYNC_CONSUMER && !tags_to_report(ep))
                return UTIL_OK; /* nothing new, nothing to report */
            ep->window = 1;     /* apply_tags finds it stale: counted frees, report */
        }
        ep->window_at = NULL; /* applied in place, each record as it is copied */
    } else {
        ep->word = __atomic_load_n((const uint64_t *)(ep->peer_view +
                                                      (kind == PEND_TAIL ? OFF_CH_TAIL
                                                                         : OFF_FREED)),
                                   __ATOMIC_ACQUIRE);
    }
    return apply_read(ep, kind);
}

/* Issues a read of the peer's buffer into ep->word or ep->scratch. */
static util_status_t issue_read(rmalloc_sync_ep_t *ep, int kind)
{
    util_status_t status;

    if (ep->peer_view != NULL)
        return view_read(ep, kind);

    if (kind == PEND_TAGS) {
        uint64_t cap  = ep->cfg.queue_len;
        uint64_t slot = ep->consumed & (cap - 1); /* the window stops at the ring's end */
        ep->window = (cap - slot < TAG_WINDOW) ? cap - slot : TAG_WINDOW;
        status     = ep->tr.ops->read(ep->tr.ctx, OFF_TAGS + slot * sizeof(rec_t),
                                      ep->scratch, ep->window * sizeof(rec_t));
        ep->window_at = ep->scratch;
    } else
        status = ep->tr.ops->read(ep->tr.ctx, kind == PEND_TAIL ? OFF_CH_TAIL : OFF_FREED,
                                  &ep->word, sizeof(ep->word));
    if (status == UTIL_OK || status == UTIL_IN_PROGRESS)
        ep->stats.reads++;
    if (status == UTIL_IN_PROGRESS) {
        ep->pending = kind;
        return status;
    }
    if (status != UTIL_OK)
        return status;
    return apply_read(ep, kind);
}

/* ---- sending ----------------------------------------------------------- */

/* CHANNEL: pushes r into the peer's inbound ring: one write. The reader
 * polls the slot's stamp, so no head counter is bumped (the thesis's
 * fetch-add was a second remote operation per record, and an atomic on
 * the line the reader polls stalls the writer until it owns it). */
static util_status_t channel_send(rmalloc_sync_ep_t *ep, rec_t *r)
{
    util_status_t status;
    uint64_t      cap = ep->cfg.queue_len;

    /* Opportunistic: let earlier records and head bumps land. */
    if (ep->unflushed && ep->pending == PEND_NONE && ep->tr.ops->flush(ep->tr.ctx) == UTIL_OK)
        ep->unflushed = 0;
    if (ep->ch_sent - ep->peer_tail >= cap) {
        status = issue_read(ep, PEND_TAIL);
        if (status != UTIL_OK)
            return status;
        if (ep->ch_sent - ep->peer_tail >= cap) {
            ep->stats.backpressure++;
            return UTIL_ERR_NO_RESOURCE;
        }
    }
    rec_seal(r, ep->ch_sent + 1);
    status   = ep->tr.ops->write(ep->tr.ctx, ep->ring_off + (ep->ch_sent & (cap - 1)) * sizeof(*r), r,
                                 sizeof(*r));
    if (status == UTIL_IN_PROGRESS)
        ep->unflushed = 1;
    else if (status != UTIL_OK)
        return status;
    ep->stats.writes++;
    ep->stats.pushed++;
    ep->ch_sent++;
    return UTIL_OK;
}

/* CHANNEL: takes one record from my inbound ring. NO_RESOURCE if none. */
static util_status_t channel_take(rmalloc_sync_ep_t *ep)
{
    rec_t        r;
    const rec_t *slot = next_incoming(ep);

    if (__atomic_load_n(&slot->stamp, __ATOMIC_ACQUIRE) != ep->ch_tail + 1)
        return UTIL_ERR_NO_RESOURCE;
    memcpy(&r, slot, sizeof(r));
    if (!rec_valid(&r, ep->ch_tail + 1))
        return UTIL_ERR_NO_RESOURCE; /* not wholly landed yet */
    util_status_t status = apply_rec(ep, &r);
    if (status != UTIL_OK)
        return status;
    ep->ch_tail++;
    store_word(ep, OFF_CH_TAIL, ep->ch_tail);
    return UTIL_OK;
}

/* TAG: appends r to my outbound queue (Alg. 10); the peer pulls it.
 * NO_RESOURCE when the reader has not yet taken the tag queue_len back. */
static util_status_t tag_produce(rmalloc_sync_ep_t *ep, rec_t *r)
{
    uint64_t cap      = ep->cfg.queue_len;
    uint64_t produced = ep->produced;
    rec_t   *slot     = (rec_t *)(void *)(ep->buf + OFF_TAGS + (produced & (cap - 1)) * sizeof(*r));

    /* The reader's count lives in a line it writes: load it only when the
     * last value seen says the queue is full. Signed: an alloc tag's reader
     * counts messages it took by their flag, perhaps before their tags. */
    if ((int64_t)(produced - ep->peer_consumed) >= (int64_t)cap &&
        (int64_t)(produced - (ep->peer_consumed = load_word(ep, OFF_CONSUMED))) >= (int64_t)cap) {
        ep->stats.backpressure++;
        return UTIL_ERR_NO_RESOURCE;
    }
    /* A reader that loads tags has said so (OFF_LOADS): it goes by the
     * stamp alone. */
    if (ep->reader_loads || (ep->reader_loads = (load_word(ep, OFF_LOADS) != 0)))
        r->stamp = produced + 1;
    else
        rec_seal(r, produced + 1);
    /* The fields first, the stamp last: a reader with loads checks the stamp
     * before the rest, so it sees a whole record (x86-TSO keeps store
     * order; the release keeps the compiler's). One-sided readers also
     * have the checksum. */
    memcpy(slot, r, offsetof(rec_t, stamp));
    __atomic_store_n(&slot->stamp, r->stamp, __ATOMIC_RELEASE);
    ep->produced = produced + 1;
    ep->stats.pushed++;
    return UTIL_OK;
}

/* ---- producer ------------------------------------------------------------ */

/* One sync_in round (Alg. 3 l. 9-17): OK when applied, IN_PROGRESS. */
static util_status_t start_pull(rmalloc_sync_ep_t *ep)
{
    util_status_t status;

    ep->stats.pulls++;
    ep->pulled_new = 0;
    ep->pull_reads = 0;
    switch (ep->cfg.protocol) {
    case RMALLOC_SYNC_BLOCK:
        return issue_read(ep, PEND_FREED);
    case RMALLOC_SYNC_TAG: /* frees: the count, then the tags (apply_tags) */
        return issue_read(ep, PEND_COUNT);
    default:
        while ((status = channel_take(ep)) == UTIL_OK)
            ep->pulled_new = 1;
        return (status == UTIL_ERR_NO_RESOURCE) ? UTIL_OK : status;
    }
}

util_status_t rmalloc_sync_pull(rmalloc_sync_ep_t *ep)
{
    if (ep->cfg.role != RMALLOC_SYNC_PRODUCER)
        return UTIL_ERR_INVALID;
    if (ep->pending != PEND_NONE)
        return complete_pending(ep);
    return start_pull(ep);
}

util_status_t rmalloc_sync_alloc(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                 raddr_t *desc_p)
{
    util_status_t status, pend;

    if (ep->cfg.role != RMALLOC_SYNC_PRODUCER)
        return UTIL_ERR_INVALID;
    pend = complete_pending(ep);
    if (pend != UTIL_OK && pend != UTIL_IN_PROGRESS)
        return pend;
    if (ep->cfg.protocol == RMALLOC_SYNC_CHANNEL) {
        /* Immediate: apply every free the consumer pushed (Alg. 2 l. 14). */
        status = start_pull(ep);
        if (status != UTIL_OK)
            return status;
        return rmalloc_vmem_alloc(ep->vm, payload, align, desc_p);
    }
    /* Deferred: pull early once the shadow crosses the watermark; do not
     * wait for it while memory is left. */
    if (ep->pending == PEND_NONE && ep->cfg.watermark < 1.0 &&
        (double)rmalloc_vmem_used_units(ep->vm) >=
            ep->cfg.watermark * (double)rmalloc_vmem_total_units(ep->vm)) {
        status = start_pull(ep);
        if (status != UTIL_OK && status != UTIL_IN_PROGRESS && status != UTIL_ERR_NO_RESOURCE)
            return status;
    }
    for (unsigned attempt = 0;; attempt++) {
        status = rmalloc_vmem_alloc(ep->vm, payload, align, desc_p);
        if (status != UTIL_ERR_NO_RESOURCE)
            return status;
        if (ep->pending != PEND_NONE)
            return UTIL_IN_PROGRESS;
        if (attempt >= ep->cfg.retries)
            return UTIL_ERR_NO_RESOURCE;
        status = start_pull(ep);
        if (status != UTIL_OK)
            return status;
        if (!ep->pulled_new)
            return UTIL_ERR_NO_RESOURCE;
    }
}

/* The record that tells the peer about an allocation or a free. */
static void rec_from_desc(rec_t *r, const raddr_t *desc)
{
    memset(r, 0, sizeof(*r));
    r->start      = desc->start;
    r->units      = desc->end - desc->start;
    r->payload    = desc->payload;
    r->peer_id    = desc->id;
    r->peer_block = desc->block;
}

util_status_t rmalloc_sync_post(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    uint64_t      peer_id;
    uint32_t      peer_block;
    util_status_t status;
    rec_t         r;

    if (ep->cfg.role != RMALLOC_SYNC_PRODUCER)
        return UTIL_ERR_INVALID;
    /* Validates that desc is a live allocation of this instance. */
    if (rmalloc_vmem_peer(ep->vm, desc, &peer_id, &peer_block) != UTIL_OK)
        return UTIL_ERR_INVALID;
    if (ep->cfg.protocol == RMALLOC_SYNC_BLOCK)
        return UTIL_OK;
    status = complete_pending(ep);
    if (status != UTIL_OK)
        return status;
    rec_from_desc(&r, desc);
    if (ep->cfg.protocol == RMALLOC_SYNC_CHANNEL)
        return channel_send(ep, &r);
    /* TAG: the message joins the live list under its tag's number, which
     * the consumer's frees name it by */
    uint64_t seq = ep->produced;
    if ((status = rmalloc_order_reserve(&ep->order)) != UTIL_OK ||
        (status = tag_produce(ep, &r)) != UTIL_OK)
        return status;
    rmalloc_order_push(&ep->order, seq, desc);
    return UTIL_OK;
}

/* ---- consumer ------------------------------------------------------------ */

util_status_t rmalloc_sync_next(rmalloc_sync_ep_t *ep, raddr_t *desc_p)
{
    util_status_t status;

    if (ep->cfg.role != RMALLOC_SYNC_CONSUMER || ep->cfg.protocol == RMALLOC_SYNC_BLOCK)
        return UTIL_ERR_INVALID;
    if (dq_empty(&ep->ready)) {
        if (ep->cfg.protocol == RMALLOC_SYNC_CHANNEL) {
            status = channel_take(ep);
        } else {
            status = (ep->pending != PEND_NONE) ? complete_pending(ep)
                                                : issue_read(ep, PEND_TAGS);
        }
        if (status != UTIL_OK)
            return status;
        if (dq_empty(&ep->ready))
            return UTIL_ERR_NO_RESOURCE;
    }
    *desc_p = *dq_front(&ep->ready);
    ep->ready.head++;
    return UTIL_OK;
}

util_status_t rmalloc_sync_guess(const rmalloc_sync_ep_t *ep, uint64_t *start_p,
                                 uint64_t *units_p, uint64_t *payload_p)
{
    /* Only where the tags are loads (peer view): over a network the early
     * message's tag is a read that the producer must serve, and a free that
     * waits for it would wait on the producer's progress. */
    if (ep->cfg.role != RMALLOC_SYNC_CONSUMER || ep->cfg.protocol == RMALLOC_SYNC_BLOCK ||
        ep->cfg.heuristic != RMALLOC_NEXT_FIT || ep->last_units == 0 || !dq_empty(&ep->ready) ||
        (ep->cfg.protocol == RMALLOC_SYNC_TAG && ep->peer_view == NULL))
        return UTIL_ERR_NO_RESOURCE;
    *start_p   = guess_next(ep);
    *units_p   = ep->last_units;
    *payload_p = ep->last_payload;
    return UTIL_OK;
}

util_status_t rmalloc_sync_take_early(rmalloc_sync_ep_t *ep, uint64_t start, uint64_t units,
                                      uint64_t payload, raddr_t *desc_p)
{
    util_status_t status;

    if (ep->cfg.role != RMALLOC_SYNC_CONSUMER || ep->cfg.protocol == RMALLOC_SYNC_BLOCK ||
        !dq_empty(&ep->ready))
        return UTIL_ERR_INVALID;
    if (ep->cfg.protocol == RMALLOC_SYNC_TAG) {
        /* It is the message of tag number `consumed`; its frees name it by
         * that number, so its tag is not needed: skip it, unread. */
        status = rmalloc_order_reserve(&ep->order);
        if (status != UTIL_OK)
            return status;
        status = rmalloc_vmem_claim(ep->vm, start, units, payload, ep->consumed, 0, desc_p);
        if (status != UTIL_OK)
            return status;
        rmalloc_order_push(&ep->order, ep->consumed, desc_p);
        ep->consumed++;
        ep->last_start   = start;
        ep->last_units   = units;
        ep->last_payload = payload;
        return tags_to_report(ep) ? report_consumed(ep) : UTIL_OK;
    }
    /* CHANNEL: the producer's names come with the record (peer id 0 until
     * then). */
    status = rmalloc_vmem_claim(ep->vm, start, units, payload, 0, UINT32_MAX, desc_p);
    if (status != UTIL_OK)
        return status;
    status = dq_push(&ep->early, desc_p);
    if (status != UTIL_OK) {
        rmalloc_vmem_free(ep->vm, desc_p);
        return status;
    }
    ep->last_start   = start;
    ep->last_units   = units;
    ep->last_payload = payload;
    return UTIL_OK;
}

util_status_t rmalloc_sync_accept(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                  raddr_t *desc_p)
{
    util_status_t status;

    if (ep->cfg.role != RMALLOC_SYNC_CONSUMER || ep->cfg.protocol != RMALLOC_SYNC_BLOCK)
        return UTIL_ERR_INVALID;
    status = rmalloc_vmem_alloc(ep->vm, payload, align, desc_p);
    if (status == UTIL_ERR_NO_RESOURCE) {
        util_error("rmalloc: cannot mirror the producer's allocation of %llu bytes",
                   (unsigned long long)payload);
        return UTIL_ERR_STATE;
    }
    return status;
}

/* TAG, consumer: the oldest live message is counted (one store into my
 * own buffer, which the producer reads when it pulls); any other is a free
 * tag naming it by its post sequence, with the count as of now. */
static util_status_t tag_free(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    uint64_t      seq;
    uint32_t      unused;
    util_status_t status;
    size_t        i;

    if (rmalloc_vmem_peer(ep->vm, desc, &seq, &unused) != UTIL_OK)
        return UTIL_ERR_INVALID;
    if (rmalloc_order_live(&ep->order) && rmalloc_order_front_seq(&ep->order) == seq) {
        status = rmalloc_vmem_free(ep->vm, desc);
        if (status != UTIL_OK)
            return status;
        rmalloc_order_pop_n(&ep->order, 1);
        store_word(ep, OFF_FREED, ++ep->freed_total);
        return UTIL_OK;
    }
    i = rmalloc_order_find(&ep->order, seq);
    if (i == SIZE_MAX) {
        util_error("rmalloc: live message %llu is missing from the post order",
                   (unsigned long long)seq);
        return UTIL_ERR_STATE;
    }
    rec_t r = {.start = desc->start, .units = desc->end - desc->start,
               .payload = ep->freed_total, .peer_id = seq};
    status = tag_produce(ep, &r);
    if (status != UTIL_OK)
        return status;
    rmalloc_order_remove(&ep->order, i);
    return rmalloc_vmem_free(ep->vm, desc);
}

util_status_t rmalloc_sync_free(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    uint64_t      peer_id;
    uint32_t      peer_block;
    util_status_t status;
    rec_t         r;

    if (ep->cfg.role != RMALLOC_SYNC_CONSUMER)
        return UTIL_ERR_INVALID;
    if (ep->cfg.protocol == RMALLOC_SYNC_BLOCK) {
        /* Alg. 6/7 l. 5-7 and Alg. 9: count units released in order. */
        status = rmalloc_vmem_free(ep->vm, desc);
        if (status != UTIL_OK)
            return status;
        uint64_t released = rmalloc_vmem_ring_take_released(ep->vm);
        if (released) {
            ep->freed_total += released;
            store_word(ep, OFF_FREED, ep->freed_total);
        }
        return UTIL_OK;
    }
    if (ep->cfg.protocol == RMALLOC_SYNC_TAG)
        return tag_free(ep, desc);
    /* CHANNEL */
    status = complete_pending(ep);
    if (status != UTIL_OK)
        return status;
    if (rmalloc_vmem_peer(ep->vm, desc, &peer_id, &peer_block) != UTIL_OK)
        return UTIL_ERR_INVALID;
    if (peer_id == 0) {
        /* Taken early: its record (with the producer's names) was pushed
         * right after the message. Its line has not moved here yet: a load
         * now would wait for it on the reader's critical path. So the first
         * try only starts that transfer and asks to be retried (rpipe
         * retries deferred frees before it next waits); the retry applies
         * it. */
        if (!ep->early_free_tried) {
            __builtin_prefetch(next_incoming(ep));
            ep->early_free_tried = 1;
            return UTIL_ERR_NO_RESOURCE;
        }
        ep->early_free_tried = 0;
        status = start_pull(ep); /* the same sync_in as the producer's */
        if (status != UTIL_OK && status != UTIL_IN_PROGRESS)
            return status;
        if (rmalloc_vmem_peer(ep->vm, desc, &peer_id, &peer_block) != UTIL_OK)
            return UTIL_ERR_INVALID;
        if (peer_id == 0)
            return (status == UTIL_IN_PROGRESS) ? UTIL_IN_PROGRESS : UTIL_ERR_NO_RESOURCE;
    }
    rec_from_desc(&r, desc);
    r.peer_id    = peer_id; /* the producer's names for the block */
    r.peer_block = peer_block;
    status = channel_send(ep, &r);
    if (status != UTIL_OK)
        return status;
    return rmalloc_vmem_free(ep->vm, desc);
}

util_status_t rmalloc_sync_progress(rmalloc_sync_ep_t *ep)
{
    util_status_t status = complete_pending(ep);
    if (status != UTIL_OK)
        return status;
    status = flush_unflushed(ep);
    if (status != UTIL_OK)
        return status;
    if (ep->cfg.role == RMALLOC_SYNC_PRODUCER && ep->cfg.protocol == RMALLOC_SYNC_CHANNEL)
        return start_pull(ep);
    return UTIL_OK;
}
