/*
 * CHANNEL sync (immediate, any heuristic; thesis Alg. 2). Every allocation
 * descriptor is pushed into the consumer's inbound ring, every free into
 * the producer's, as it happens: one remote write of a stamped record,
 * which the reader polls. The thesis adds a fetch-add on a head counter;
 * the stamp makes it unnecessary (it was a second remote operation per
 * record, and an atomic on the line the reader polls stalls the writer
 * until it owns it). Every allocation applies all the frees first
 * (Alg. 2 l. 14).
 */
#include "rmalloc/rmalloc_sync_int.h"
#include "util/log.h"

#include <string.h>

/* The slot of the peer's next record in my inbound ring. */
static inline const rmalloc_sync_rec_t *rmalloc_sync_channel_incoming(const rmalloc_sync_ep_t *ep)
{
    uint64_t mask = ep->cfg.queue_len - 1;

    return (const rmalloc_sync_rec_t *)(const void *)(ep->buf + ep->ring_off +
                                                      (ep->ch_tail & mask) *
                                                          sizeof(rmalloc_sync_rec_t));
}

/* The record that tells the peer about an allocation or a free. */
static inline void rmalloc_sync_channel_rec(rmalloc_sync_rec_t *r, const raddr_t *desc,
                                            uint64_t peer_id, uint32_t peer_block)
{
    memset(r, 0, sizeof(*r));
    r->start = desc->start;
    r->units = desc->end - desc->start;
    r->payload = desc->payload;
    r->peer_id = peer_id;
    r->peer_block = peer_block;
}

/* Pushes r into the peer's inbound ring: one write. NO_RESOURCE while the
 * peer has not consumed the record queue_len back. */
static util_status_t rmalloc_sync_channel_send(rmalloc_sync_ep_t *ep, rmalloc_sync_rec_t *r)
{
    util_status_t status;
    uint64_t cap = ep->cfg.queue_len;

    /* Opportunistic: let earlier records and head bumps land. */
    if (ep->unflushed && ep->pending == RMALLOC_SYNC_PEND_NONE &&
        ep->tr.ops->flush(ep->tr.ctx) == UTIL_OK) {
        ep->unflushed = 0;
    }
    if (ep->ch_sent - ep->peer_tail >= cap) {
        status = rmalloc_sync_read_word(ep, RMALLOC_SYNC_PEND_TAIL, RMALLOC_SYNC_OFF_CH_TAIL);
        if (status != UTIL_OK) {
            return status;
        }
        ep->peer_tail = ep->word;
        if (ep->ch_sent - ep->peer_tail >= cap) {
            ep->stats.backpressure++;
            return UTIL_ERR_NO_RESOURCE;
        }
    }
    rmalloc_sync_rec_seal(r, ep->ch_sent + 1);
    status = ep->tr.ops->write(ep->tr.ctx, ep->ring_off + (ep->ch_sent & (cap - 1)) * sizeof(*r), r,
                               sizeof(*r));
    if (status == UTIL_IN_PROGRESS) {
        ep->unflushed = 1;
    } else if (status != UTIL_OK) {
        return status;
    }
    ep->stats.writes++;
    ep->stats.pushed++;
    ep->ch_sent++;
    return UTIL_OK;
}

static util_status_t rmalloc_sync_channel_read_done(rmalloc_sync_ep_t *ep, rmalloc_sync_pend_t kind)
{
    ep->peer_tail = ep->word;
    return UTIL_OK;
}

/* Producer: the consumer freed the block the record names (by the
 * producer's own names: its id and block record). */
static util_status_t rmalloc_sync_channel_apply_free(rmalloc_sync_ep_t *ep,
                                                     const rmalloc_sync_rec_t *r)
{
    raddr_t d = {
        .start = r->start, .end = r->start + r->units, .id = r->peer_id, .block = r->peer_block};
    util_status_t status;

    ep->stats.applied++;
    status = rmalloc_vmem_free(ep->vm, &d);
    return (status == UTIL_ERR_INVALID) ? rmalloc_sync_peer_mismatch(ep, r) : status;
}

/* Consumer: the producer allocated what the record names. Records come in
 * the order messages are taken, so where messages were taken at their
 * guessed place the record is that of the oldest of them: it must agree,
 * and it brings the producer's names. */
static util_status_t rmalloc_sync_channel_apply_alloc(rmalloc_sync_ep_t *ep,
                                                      const rmalloc_sync_rec_t *r)
{
    util_status_t status;
    raddr_t d;

    ep->stats.applied++;
    if (!rmalloc_sync_dq_empty(&ep->early)) {
        raddr_t *e = rmalloc_sync_dq_front(&ep->early);

        if (e->start != r->start || e->end != r->start + r->units || e->payload != r->payload) {
            util_error("rmalloc: the peer's allocation [%llu, +%llu) is not the message taken "
                       "at its next-fit place [%llu, +%llu)",
                       (unsigned long long)r->start, (unsigned long long)r->units,
                       (unsigned long long)e->start, (unsigned long long)(e->end - e->start));
            return UTIL_ERR_STATE;
        }
        status = rmalloc_vmem_set_peer(ep->vm, e, r->peer_id, r->peer_block);
        ep->early.head++;
        return (status == UTIL_OK) ? UTIL_OK : UTIL_ERR_STATE;
    }
    rmalloc_sync_prefetch_header(ep, r);
    status =
        rmalloc_vmem_claim(ep->vm, r->start, r->units, r->payload, r->peer_id, r->peer_block, &d);
    if (status == UTIL_OK) {
        status = rmalloc_sync_dq_push(&ep->ready, &d);
    }
    rmalloc_sync_note_taken(ep, r->start, r->units, r->payload);
    return (status == UTIL_ERR_INVALID) ? rmalloc_sync_peer_mismatch(ep, r) : status;
}

/* Takes one record from my inbound ring. NO_RESOURCE if none. */
static util_status_t rmalloc_sync_channel_take(rmalloc_sync_ep_t *ep)
{
    rmalloc_sync_rec_t r;
    const rmalloc_sync_rec_t *slot = rmalloc_sync_channel_incoming(ep);
    util_status_t status;

    if (__atomic_load_n(&slot->stamp, __ATOMIC_ACQUIRE) != ep->ch_tail + 1) {
        return UTIL_ERR_NO_RESOURCE;
    }
    memcpy(&r, slot, sizeof(r));
    if (!rmalloc_sync_rec_valid(&r, ep->ch_tail + 1)) {
        return UTIL_ERR_NO_RESOURCE; /* not wholly landed yet */
    }
    if (ep->cfg.role == RMALLOC_SYNC_PRODUCER) {
        status = rmalloc_sync_channel_apply_free(ep, &r);
    } else {
        status = rmalloc_sync_channel_apply_alloc(ep, &r);
    }
    if (status != UTIL_OK) {
        return status;
    }
    ep->ch_tail++;
    rmalloc_sync_store_word(ep, RMALLOC_SYNC_OFF_CH_TAIL, ep->ch_tail);
    return UTIL_OK;
}

/* Applies every record that arrived. */
static util_status_t rmalloc_sync_channel_sync_in(rmalloc_sync_ep_t *ep)
{
    util_status_t status;

    while ((status = rmalloc_sync_channel_take(ep)) == UTIL_OK) {
        ep->pulled_new = 1;
    }
    return (status == UTIL_ERR_NO_RESOURCE) ? UTIL_OK : status;
}

/* ---- producer ------------------------------------------------------------ */

/* Frees applied per batch (rmalloc_sync_channel_producer_sync_in). */
#define RMALLOC_SYNC_CHANNEL_FREE_BATCH 64

/* Applies every free record that arrived, a batch at a time: the frees of
 * a ring-first instance's oldest allocations are one release
 * (rmalloc_vmem_free_n), and my tail is stored once per batch. The same
 * frees in the same order as rmalloc_sync_channel_take() one by one. */
static util_status_t rmalloc_sync_channel_producer_sync_in(rmalloc_sync_ep_t *ep)
{
    raddr_t d[RMALLOC_SYNC_CHANNEL_FREE_BATCH];
    uint64_t mask = ep->cfg.queue_len - 1;
    const rmalloc_sync_rec_t *ring =
        (const rmalloc_sync_rec_t *)(const void *)(ep->buf + ep->ring_off);

    for (;;) {
        util_status_t status;
        size_t n = 0, done;

        while (n < RMALLOC_SYNC_CHANNEL_FREE_BATCH) {
            const rmalloc_sync_rec_t *slot = &ring[(ep->ch_tail + n) & mask];
            rmalloc_sync_rec_t r;

            if (__atomic_load_n(&slot->stamp, __ATOMIC_ACQUIRE) != ep->ch_tail + n + 1) {
                break;
            }
            memcpy(&r, slot, sizeof(r));
            if (!rmalloc_sync_rec_valid(&r, ep->ch_tail + n + 1)) {
                break; /* not wholly landed yet */
            }
            d[n++] = (raddr_t){
                .start = r.start, .end = r.start + r.units, .id = r.peer_id, .block = r.peer_block};
        }
        if (n == 0) {
            return UTIL_OK;
        }
        status = rmalloc_vmem_free_n(ep->vm, d, n, &done);
        if (done > 0) {
            ep->stats.applied += done;
            ep->ch_tail += done;
            ep->pulled_new = 1;
            rmalloc_sync_store_word(ep, RMALLOC_SYNC_OFF_CH_TAIL, ep->ch_tail);
        }
        if (status != UTIL_OK) {
            rmalloc_sync_rec_t r = {.start = d[done].start, .units = d[done].end - d[done].start};

            return (status == UTIL_ERR_INVALID) ? rmalloc_sync_peer_mismatch(ep, &r) : status;
        }
        if (n < RMALLOC_SYNC_CHANNEL_FREE_BATCH) {
            return UTIL_OK;
        }
    }
}

/* Immediate: apply every free the consumer pushed (Alg. 2 l. 14). */
static util_status_t rmalloc_sync_channel_alloc(rmalloc_sync_ep_t *ep, uint64_t payload,
                                                uint64_t align, raddr_t *desc_p)
{
    util_status_t status;

    status = rmalloc_sync_complete_pending(ep);
    if (status != UTIL_OK && status != UTIL_IN_PROGRESS) {
        return status;
    }
    status = rmalloc_sync_start_pull(ep);
    if (status != UTIL_OK) {
        return status;
    }
    return rmalloc_vmem_alloc(ep->vm, payload, align, desc_p);
}

static util_status_t rmalloc_sync_channel_post(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    util_status_t status;
    rmalloc_sync_rec_t r;

    status = rmalloc_sync_post_check(ep, desc);
    if (status != UTIL_OK) {
        return status;
    }
    status = rmalloc_sync_complete_pending(ep);
    if (status != UTIL_OK) {
        return status;
    }
    rmalloc_sync_channel_rec(&r, desc, desc->id, desc->block);
    return rmalloc_sync_channel_send(ep, &r);
}

static util_status_t rmalloc_sync_channel_progress(rmalloc_sync_ep_t *ep)
{
    util_status_t status = rmalloc_sync_progress_base(ep);

    if (status != UTIL_OK) {
        return status;
    }
    return rmalloc_sync_start_pull(ep);
}

/* ---- consumer ------------------------------------------------------------ */

static util_status_t rmalloc_sync_channel_next(rmalloc_sync_ep_t *ep, raddr_t *desc_p)
{
    util_status_t status;

    if (rmalloc_sync_dq_empty(&ep->ready)) {
        status = rmalloc_sync_channel_take(ep);
        if (status != UTIL_OK) {
            return status;
        }
        if (rmalloc_sync_dq_empty(&ep->ready)) {
            return UTIL_ERR_NO_RESOURCE;
        }
    }
    *desc_p = *rmalloc_sync_dq_front(&ep->ready);
    ep->ready.head++;
    return UTIL_OK;
}

/* The producer's names come with the record (peer id 0 until then). */
static util_status_t rmalloc_sync_channel_take_early(rmalloc_sync_ep_t *ep, uint64_t start,
                                                     uint64_t units, uint64_t payload,
                                                     raddr_t *desc_p)
{
    util_status_t status;

    status = rmalloc_vmem_claim(ep->vm, start, units, payload, 0, UINT32_MAX, desc_p);
    if (status != UTIL_OK) {
        return status;
    }
    status = rmalloc_sync_dq_push(&ep->early, desc_p);
    if (status != UTIL_OK) {
        rmalloc_vmem_free(ep->vm, desc_p);
        return status;
    }
    rmalloc_sync_note_taken(ep, start, units, payload);
    return UTIL_OK;
}

static util_status_t rmalloc_sync_channel_free(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    uint64_t peer_id;
    uint32_t peer_block;
    util_status_t status;
    rmalloc_sync_rec_t r;

    status = rmalloc_sync_complete_pending(ep);
    if (status != UTIL_OK) {
        return status;
    }
    if (rmalloc_vmem_peer(ep->vm, desc, &peer_id, &peer_block) != UTIL_OK) {
        return UTIL_ERR_INVALID;
    }
    if (peer_id == 0) {
        /* Taken early: its record (with the producer's names) was pushed
         * right after the message. Its line has not moved here yet: a load
         * now would wait for it on the reader's critical path. So the first
         * try only starts that transfer and asks to be retried (rpipe
         * retries deferred frees before it next waits); the retry applies
         * it. */
        if (!ep->early_free_tried) {
            __builtin_prefetch(rmalloc_sync_channel_incoming(ep));
            ep->early_free_tried = 1;
            return UTIL_ERR_NO_RESOURCE;
        }
        ep->early_free_tried = 0;
        status = rmalloc_sync_start_pull(ep); /* the same sync_in as the producer's */
        if (status != UTIL_OK && status != UTIL_IN_PROGRESS) {
            return status;
        }
        if (rmalloc_vmem_peer(ep->vm, desc, &peer_id, &peer_block) != UTIL_OK) {
            return UTIL_ERR_INVALID;
        }
        if (peer_id == 0) {
            return (status == UTIL_IN_PROGRESS) ? UTIL_IN_PROGRESS : UTIL_ERR_NO_RESOURCE;
        }
    }
    rmalloc_sync_channel_rec(&r, desc, peer_id, peer_block); /* the producer's names */
    status = rmalloc_sync_channel_send(ep, &r);
    if (status != UTIL_OK) {
        return status;
    }
    return rmalloc_vmem_free(ep->vm, desc);
}

static const uint64_t *rmalloc_sync_channel_poll_word(const rmalloc_sync_ep_t *ep)
{
    return &rmalloc_sync_channel_incoming(ep)->stamp;
}

/* ---- tables -------------------------------------------------------------- */

const rmalloc_sync_protocol_ops_t rmalloc_sync_channel_producer_ops = {
    .name = "channel",
    .vmem_flags = RMALLOC_VMEM_RING_FIRST, /* ignored by heuristics other than next-fit */
    .check = rmalloc_sync_check_any,
    .peer_view = rmalloc_sync_no_peer_view,
    .read_done = rmalloc_sync_channel_read_done,
    .sync_in = rmalloc_sync_channel_producer_sync_in,
    .alloc = rmalloc_sync_channel_alloc,
    .post = rmalloc_sync_channel_post,
    .pull = rmalloc_sync_pull_base,
    .next = rmalloc_sync_no_next,
    .guess = rmalloc_sync_no_guess,
    .take_early = rmalloc_sync_no_take_early,
    .accept = rmalloc_sync_no_accept,
    .free = rmalloc_sync_no_free,
    .poll_word = rmalloc_sync_no_poll_word,
    .progress = rmalloc_sync_channel_progress,
};

const rmalloc_sync_protocol_ops_t rmalloc_sync_channel_consumer_ops = {
    .name = "channel",
    .vmem_flags = RMALLOC_VMEM_CLAIMS,
    .check = rmalloc_sync_check_any,
    .peer_view = rmalloc_sync_no_peer_view,
    .read_done = rmalloc_sync_channel_read_done,
    .sync_in = rmalloc_sync_channel_sync_in,
    .alloc = rmalloc_sync_no_alloc,
    .post = rmalloc_sync_no_post,
    .pull = rmalloc_sync_pull_base,
    .next = rmalloc_sync_channel_next,
    .guess = rmalloc_sync_guess_next,
    .take_early = rmalloc_sync_channel_take_early,
    .accept = rmalloc_sync_no_accept,
    .free = rmalloc_sync_channel_free,
    .poll_word = rmalloc_sync_channel_poll_word,
    .progress = rmalloc_sync_progress_base,
};
