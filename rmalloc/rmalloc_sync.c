/*
 * Shadow synchronization: what every protocol does. The endpoint, its
 * configuration and sync buffer, the public calls (each one goes through
 * the endpoint's protocol table, rmalloc_sync_int.h), reads of the peer's
 * buffer, the deferred protocols' allocation loop and the stubs for the
 * slots a role leaves empty. The protocols themselves are in
 * rmalloc_sync_block.c, rmalloc_sync_tag.c and rmalloc_sync_channel.c.
 */
#include "rmalloc/rmalloc_sync_int.h"
#include "util/env.h"
#include "util/log.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The tables, by protocol and role. */
static const rmalloc_sync_protocol_ops_t
    *const rmalloc_sync_protocols[RMALLOC_SYNC_PROTOCOL_COUNT][2] = {
        [RMALLOC_SYNC_CHANNEL] = {[RMALLOC_SYNC_PRODUCER] = &rmalloc_sync_channel_producer_ops,
                                  [RMALLOC_SYNC_CONSUMER] = &rmalloc_sync_channel_consumer_ops},
        [RMALLOC_SYNC_BLOCK] = {[RMALLOC_SYNC_PRODUCER] = &rmalloc_sync_block_producer_ops,
                                [RMALLOC_SYNC_CONSUMER] = &rmalloc_sync_block_consumer_ops},
        [RMALLOC_SYNC_TAG] = {[RMALLOC_SYNC_PRODUCER] = &rmalloc_sync_tag_producer_ops,
                              [RMALLOC_SYNC_CONSUMER] = &rmalloc_sync_tag_consumer_ops},
};

const char *rmalloc_sync_protocol_name(rmalloc_sync_protocol_t protocol)
{
    if ((unsigned)protocol >= RMALLOC_SYNC_PROTOCOL_COUNT) {
        return "?";
    }
    return rmalloc_sync_protocols[protocol][RMALLOC_SYNC_PRODUCER]->name;
}

/* ---- configuration ----------------------------------------------------- */

util_status_t rmalloc_sync_parse_watermark(const char *text, double *watermark_p)
{
    char *end;
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
    const char *text;
    size_t unit;
    long value;

    memset(config, 0, sizeof(*config));
    config->unit = 64;
    config->header_bytes = 8;
    config->watermark = RMALLOC_WATERMARK_FULL;
    config->retries = 4;
    config->queue_len = 256;
    config->heuristic = RMALLOC_NEXT_FIT;
    config->protocol = RMALLOC_SYNC_BLOCK;

    if ((status = util_env_get_string("RMB_RMALLOC_HEURISTIC", &text)) != UTIL_OK ||
        (status = rmalloc_heuristic_parse(text, &config->heuristic)) != UTIL_OK) {
        return status;
    }
    if ((status = util_env_get_string("RMB_RMALLOC_SYNC", &text)) != UTIL_OK) {
        return status;
    }
    for (value = 0; value < RMALLOC_SYNC_PROTOCOL_COUNT; value++) {
        if (!strcasecmp(text, rmalloc_sync_protocol_name((rmalloc_sync_protocol_t)value))) {
            break;
        }
    }
    if (value == RMALLOC_SYNC_PROTOCOL_COUNT) {
        util_error("RMB_RMALLOC_SYNC='%s': use channel, block or tag", text);
        return UTIL_ERR_INVALID;
    }
    config->protocol = (rmalloc_sync_protocol_t)value;
    if ((status = util_env_get_size("RMB_RMALLOC_UNIT", &unit)) != UTIL_OK) {
        return status;
    }
    config->unit = unit;
    if ((status = util_env_get_string("RMB_RMALLOC_WATERMARK", &text)) != UTIL_OK ||
        (status = rmalloc_sync_parse_watermark(text, &config->watermark)) != UTIL_OK) {
        return status;
    }
    if ((status = util_env_get_int("RMB_RMALLOC_RETRIES", &value)) != UTIL_OK) {
        return status;
    }
    if (value < 0 || value > 1000000) {
        util_error("RMB_RMALLOC_RETRIES=%ld is out of range (0..1000000)", value);
        return UTIL_ERR_INVALID;
    }
    config->retries = (unsigned)value;
    if ((status = util_env_get_int("RMB_RMALLOC_QUEUE_LEN", &value)) != UTIL_OK) {
        return status;
    }
    if (value < 1 || value > (1L << 20)) {
        util_error("RMB_RMALLOC_QUEUE_LEN=%ld is out of range (1..1048576)", value);
        return UTIL_ERR_INVALID;
    }
    config->queue_len = (uint32_t)value;
    return UTIL_OK;
}

/* Queue entries: queue_len rounded up to a power of two, so that a slot
 * is a mask, not a division, on every message. */
static uint64_t rmalloc_sync_queue_slots(uint32_t queue_len)
{
    uint64_t n = 1;

    while (n < queue_len) {
        n <<= 1;
    }
    return n;
}

size_t rmalloc_sync_buffer_size(const rmalloc_sync_config_t *config)
{
    return RMALLOC_SYNC_OFF_TAGS +
           2 * (size_t)rmalloc_sync_queue_slots(config->queue_len) * sizeof(rmalloc_sync_rec_t);
}

/* ---- endpoint ------------------------------------------------------------ */

util_status_t rmalloc_sync_create(const rmalloc_sync_config_t *config, void *sync_buf,
                                  const rmalloc_sync_transport_t *transport,
                                  rmalloc_sync_ep_t **ep_p)
{
    const rmalloc_sync_protocol_ops_t *ops;
    util_status_t status;
    rmalloc_sync_ep_t *ep;
    rmalloc_vmem_config_t vcfg;
    int is_local;

    if (config == NULL || sync_buf == NULL || transport == NULL || transport->ops == NULL ||
        ((uintptr_t)sync_buf & 7) || config->queue_len == 0 ||
        (unsigned)config->protocol >= RMALLOC_SYNC_PROTOCOL_COUNT ||
        (unsigned)config->role > RMALLOC_SYNC_CONSUMER ||
        !(config->watermark > 0.0 && config->watermark <= 1.0)) {
        util_error("rmalloc: invalid sync endpoint configuration");
        return UTIL_ERR_INVALID;
    }
    ops = rmalloc_sync_protocols[config->protocol][config->role];
    status = ops->check(config);
    if (status != UTIL_OK) {
        return status;
    }

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        util_error("rmalloc: cannot allocate a sync endpoint");
        return UTIL_ERR_NO_MEMORY;
    }
    ep->ops = ops;
    ep->cfg = *config;
    ep->cfg.queue_len = (uint32_t)rmalloc_sync_queue_slots(config->queue_len);
    ep->tr = *transport;
    ep->buf = sync_buf;
    ep->buf_size = rmalloc_sync_buffer_size(config);
    ep->ring_off = RMALLOC_SYNC_OFF_TAGS + (uint64_t)config->queue_len * sizeof(rmalloc_sync_rec_t);
    memset(sync_buf, 0, ep->buf_size);

    ep->scratch = malloc(RMALLOC_SYNC_TAG_WINDOW * sizeof(rmalloc_sync_rec_t));
    if (ep->scratch == NULL) {
        util_error("rmalloc: cannot allocate the sync scratch buffer");
        status = UTIL_ERR_NO_MEMORY;
        goto err_free_ep;
    }

    /* PUT: the consumer owns the memory; GET: the producer does. */
    is_local = (config->direction == RMALLOC_SYNC_PUT) == (config->role == RMALLOC_SYNC_CONSUMER);
    memset(&vcfg, 0, sizeof(vcfg));
    vcfg.base = is_local ? config->base : NULL;
    vcfg.size = config->size;
    vcfg.unit = config->unit;
    vcfg.heuristic = config->heuristic;
    vcfg.header_bytes = config->header_bytes;
    vcfg.flags = ops->vmem_flags;
    vcfg.seed = config->seed;
    status = rmalloc_vmem_create(&vcfg, &ep->vm);
    if (status != UTIL_OK) {
        goto err_free_scratch;
    }
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
    if (ep == NULL) {
        return;
    }
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
    if (peer_buf != NULL) {
        ep->ops->peer_view(ep);
    }
}

rmalloc_vmem_t *rmalloc_sync_vmem(rmalloc_sync_ep_t *ep)
{
    return ep->vm;
}

void rmalloc_sync_get_stats(const rmalloc_sync_ep_t *ep, rmalloc_sync_stats_t *stats_p)
{
    *stats_p = ep->stats;
}

/* ---- the public calls: through the protocol table ------------------------ */

util_status_t rmalloc_sync_alloc(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                 raddr_t *desc_p)
{
    return ep->ops->alloc(ep, payload, align, desc_p);
}

struct rmalloc_ring *rmalloc_sync_alloc_ring(const rmalloc_sync_ep_t *ep, uint64_t payload,
                                             uint64_t *units_p)
{
    /* rmalloc_sync_alloc_deferred's steps before its first placement are
     * then no-ops: nothing to complete, no pull at a watermark. A channel
     * producer's allocation applies the frees that arrived first; a ring
     * that places the message without them places it where it would with
     * them (they only move the ring's oldest end), so they wait until the
     * ring refuses, and the record line the consumer just wrote is not
     * loaded on the way to every message. */
    if (ep->pending != RMALLOC_SYNC_PEND_NONE) {
        return NULL;
    }
    if (ep->ops == &rmalloc_sync_channel_producer_ops) {
        return rmalloc_vmem_ring_for(ep->vm, payload, units_p);
    }
    if (ep->ops->alloc != rmalloc_sync_alloc_deferred || ep->cfg.watermark < 1.0) {
        return NULL;
    }
    return rmalloc_vmem_ring_for(ep->vm, payload, units_p);
}

util_status_t rmalloc_sync_post(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    return ep->ops->post(ep, desc);
}

util_status_t rmalloc_sync_pull(rmalloc_sync_ep_t *ep)
{
    return ep->ops->pull(ep);
}

util_status_t rmalloc_sync_next(rmalloc_sync_ep_t *ep, raddr_t *desc_p)
{
    return ep->ops->next(ep, desc_p);
}

util_status_t rmalloc_sync_guess(const rmalloc_sync_ep_t *ep, uint64_t *start_p, uint64_t *units_p,
                                 uint64_t *payload_p)
{
    return ep->ops->guess(ep, start_p, units_p, payload_p);
}

util_status_t rmalloc_sync_take_early(rmalloc_sync_ep_t *ep, uint64_t start, uint64_t units,
                                      uint64_t payload, raddr_t *desc_p)
{
    if (!rmalloc_sync_dq_empty(&ep->ready)) {
        return UTIL_ERR_INVALID;
    }
    return ep->ops->take_early(ep, start, units, payload, desc_p);
}

util_status_t rmalloc_sync_accept(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                  raddr_t *desc_p)
{
    return ep->ops->accept(ep, payload, align, desc_p);
}

util_status_t rmalloc_sync_free(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    return ep->ops->free(ep, desc);
}

struct rmalloc_ring *rmalloc_sync_block_ring(const rmalloc_sync_ep_t *ep)
{
    uint64_t units;

    if (ep->cfg.protocol != RMALLOC_SYNC_BLOCK) {
        return NULL;
    }
    return rmalloc_vmem_ring_for(ep->vm, 1, &units);
}

int rmalloc_sync_block_alloc_ready(const rmalloc_sync_ep_t *ep)
{
    return ep->pending == RMALLOC_SYNC_PEND_NONE && ep->cfg.watermark >= 1.0;
}

void rmalloc_sync_block_released(rmalloc_sync_ep_t *ep, uint64_t units)
{
    ep->freed_total += units;
    rmalloc_sync_store_word(ep, RMALLOC_SYNC_OFF_FREED, ep->freed_total);
}

const uint64_t *rmalloc_sync_poll_word(const rmalloc_sync_ep_t *ep)
{
    if (!rmalloc_sync_dq_empty(&ep->ready)) {
        return NULL;
    }
    return ep->ops->poll_word(ep);
}

util_status_t rmalloc_sync_progress(rmalloc_sync_ep_t *ep)
{
    return ep->ops->progress(ep);
}

static uint64_t rmalloc_sync_word_offset(rmalloc_sync_word_t word)
{
    return word == RMALLOC_SYNC_WORD_HELD ? RMALLOC_SYNC_OFF_HELD : RMALLOC_SYNC_OFF_ANSWER;
}

util_status_t rmalloc_sync_tell(rmalloc_sync_ep_t *ep, rmalloc_sync_word_t word, uint64_t value)
{
    util_status_t status =
        ep->tr.ops->write(ep->tr.ctx, rmalloc_sync_word_offset(word), &value, sizeof(value));

    if (status == UTIL_IN_PROGRESS) {
        ep->unflushed = 1;
    }
    if (status == UTIL_OK || status == UTIL_IN_PROGRESS) {
        ep->stats.writes++;
    }
    return status;
}

uint64_t rmalloc_sync_told(rmalloc_sync_ep_t *ep, rmalloc_sync_word_t word)
{
    return rmalloc_sync_load_word(ep, rmalloc_sync_word_offset(word));
}

int rmalloc_sync_reading(const rmalloc_sync_ep_t *ep)
{
    return ep->pending != RMALLOC_SYNC_PEND_NONE;
}

/* ---- shared steps -------------------------------------------------------- */

util_status_t rmalloc_sync_dq_push(rmalloc_sync_dq_t *dq, const raddr_t *d)
{
    if (dq->tail - dq->head == dq->cap) {
        size_t cap = dq->cap ? dq->cap * 2 : 64;
        raddr_t *q = malloc(cap * sizeof(*q));

        if (q == NULL) {
            util_error("rmalloc: cannot grow a descriptor queue to %zu", cap);
            return UTIL_ERR_NO_MEMORY;
        }
        for (size_t s = dq->head; s != dq->tail; s++) {
            q[s - dq->head] = dq->q[s & (dq->cap - 1)];
        }
        dq->tail -= dq->head;
        dq->head = 0;
        free(dq->q);
        dq->q = q;
        dq->cap = cap;
    }
    dq->q[dq->tail++ & (dq->cap - 1)] = *d;
    return UTIL_OK;
}

util_status_t rmalloc_sync_complete_read(rmalloc_sync_ep_t *ep)
{
    rmalloc_sync_pend_t kind = ep->pending;
    util_status_t status;

    status = ep->tr.ops->flush(ep->tr.ctx);
    if (status != UTIL_OK) {
        return status;
    }
    ep->pending = RMALLOC_SYNC_PEND_NONE;
    ep->unflushed = 0;
    return ep->ops->read_done(ep, kind);
}

util_status_t rmalloc_sync_read_issued(rmalloc_sync_ep_t *ep, rmalloc_sync_pend_t kind,
                                       util_status_t status)
{
    if (status == UTIL_OK || status == UTIL_IN_PROGRESS) {
        ep->stats.reads++;
    }
    if (status == UTIL_IN_PROGRESS) {
        ep->pending = kind;
    }
    return status;
}

util_status_t rmalloc_sync_read_word(rmalloc_sync_ep_t *ep, rmalloc_sync_pend_t kind, uint64_t off)
{
    util_status_t status;

    if (ep->peer_view != NULL) {
        status = rmalloc_sync_flush_unflushed(ep); /* no read completes here to do it */
        if (status != UTIL_OK) {
            return status;
        }
        ep->stats.reads++;
        ep->word = __atomic_load_n((const uint64_t *)(const void *)(ep->peer_view + off),
                                   __ATOMIC_ACQUIRE);
        return UTIL_OK;
    }
    status = ep->tr.ops->read(ep->tr.ctx, off, &ep->word, sizeof(ep->word));
    return rmalloc_sync_read_issued(ep, kind, status);
}

util_status_t rmalloc_sync_start_pull(rmalloc_sync_ep_t *ep)
{
    ep->stats.pulls++;
    ep->pulled_new = 0;
    ep->pull_reads = 0;
    return ep->ops->sync_in(ep);
}

util_status_t rmalloc_sync_pull_base(rmalloc_sync_ep_t *ep)
{
    if (ep->pending != RMALLOC_SYNC_PEND_NONE) {
        return rmalloc_sync_complete_read(ep);
    }
    return rmalloc_sync_start_pull(ep);
}

util_status_t rmalloc_sync_alloc_deferred(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                          raddr_t *desc_p)
{
    util_status_t status;

    status = rmalloc_sync_complete_pending(ep);
    if (status != UTIL_OK && status != UTIL_IN_PROGRESS) {
        return status;
    }
    /* Pull early once the shadow crosses the watermark; do not wait for it
     * while memory is left. */
    if (ep->pending == RMALLOC_SYNC_PEND_NONE && ep->cfg.watermark < 1.0 &&
        (double)rmalloc_vmem_used_units(ep->vm) >=
            ep->cfg.watermark * (double)rmalloc_vmem_total_units(ep->vm)) {
        status = rmalloc_sync_start_pull(ep);
        if (status != UTIL_OK && status != UTIL_IN_PROGRESS && status != UTIL_ERR_NO_RESOURCE) {
            return status;
        }
    }
    for (unsigned attempt = 0;; attempt++) {
        status = rmalloc_vmem_alloc(ep->vm, payload, align, desc_p);
        if (status != UTIL_ERR_NO_RESOURCE) {
            return status;
        }
        if (ep->pending != RMALLOC_SYNC_PEND_NONE) {
            return UTIL_IN_PROGRESS;
        }
        if (attempt >= ep->cfg.retries) {
            return UTIL_ERR_NO_RESOURCE;
        }
        status = rmalloc_sync_start_pull(ep);
        if (status != UTIL_OK) {
            return status;
        }
        if (!ep->pulled_new) {
            return UTIL_ERR_NO_RESOURCE;
        }
    }
}

util_status_t rmalloc_sync_progress_base(rmalloc_sync_ep_t *ep)
{
    util_status_t status = rmalloc_sync_complete_pending(ep);

    if (status != UTIL_OK) {
        return status;
    }
    return rmalloc_sync_flush_unflushed(ep);
}

util_status_t rmalloc_sync_guess_next(const rmalloc_sync_ep_t *ep, uint64_t *start_p,
                                      uint64_t *units_p, uint64_t *payload_p)
{
    uint64_t start;

    if (ep->cfg.heuristic != RMALLOC_NEXT_FIT || ep->last_units == 0 ||
        !rmalloc_sync_dq_empty(&ep->ready)) {
        return UTIL_ERR_NO_RESOURCE;
    }
    /* Next-fit puts the next allocation right after the last one; guess
     * that its size is the same (streams, ping-pongs), and at unit 0 when
     * it would not fit before the region's end. */
    start = ep->last_start + ep->last_units;
    *start_p = ((start + ep->last_units) * ep->cfg.unit > ep->cfg.size) ? 0 : start;
    *units_p = ep->last_units;
    *payload_p = ep->last_payload;
    return UTIL_OK;
}

__attribute__((cold)) util_status_t rmalloc_sync_peer_mismatch(const rmalloc_sync_ep_t *ep,
                                                               const rmalloc_sync_rec_t *r)
{
    util_error("rmalloc: peer sent %s of [%llu, %llu) that does not match this instance",
               ep->cfg.role == RMALLOC_SYNC_CONSUMER ? "an allocation" : "a free",
               (unsigned long long)r->start, (unsigned long long)(r->start + r->units));
    return UTIL_ERR_STATE;
}

/* ---- stubs: a call this role or protocol does not make ------------------- */

util_status_t rmalloc_sync_check_any(const rmalloc_sync_config_t *config)
{
    return UTIL_OK;
}

void rmalloc_sync_no_peer_view(rmalloc_sync_ep_t *ep) {}

util_status_t rmalloc_sync_no_read(rmalloc_sync_ep_t *ep, rmalloc_sync_pend_t kind)
{
    util_error("rmalloc: a %s endpoint got a read it never issues (%d)", ep->ops->name, (int)kind);
    return UTIL_ERR_STATE;
}

util_status_t rmalloc_sync_no_sync_in(rmalloc_sync_ep_t *ep)
{
    return UTIL_ERR_INVALID;
}

util_status_t rmalloc_sync_no_alloc(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                    raddr_t *desc_p)
{
    return UTIL_ERR_INVALID;
}

util_status_t rmalloc_sync_no_post(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    return UTIL_ERR_INVALID;
}

util_status_t rmalloc_sync_no_pull(rmalloc_sync_ep_t *ep)
{
    return UTIL_ERR_INVALID;
}

util_status_t rmalloc_sync_no_next(rmalloc_sync_ep_t *ep, raddr_t *desc_p)
{
    return UTIL_ERR_INVALID;
}

util_status_t rmalloc_sync_no_guess(const rmalloc_sync_ep_t *ep, uint64_t *start_p,
                                    uint64_t *units_p, uint64_t *payload_p)
{
    return UTIL_ERR_NO_RESOURCE;
}

util_status_t rmalloc_sync_no_take_early(rmalloc_sync_ep_t *ep, uint64_t start, uint64_t units,
                                         uint64_t payload, raddr_t *desc_p)
{
    return UTIL_ERR_INVALID;
}

util_status_t rmalloc_sync_no_accept(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                     raddr_t *desc_p)
{
    return UTIL_ERR_INVALID;
}

util_status_t rmalloc_sync_no_free(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    return UTIL_ERR_INVALID;
}

const uint64_t *rmalloc_sync_no_poll_word(const rmalloc_sync_ep_t *ep)
{
    return NULL;
}
