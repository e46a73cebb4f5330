/*
 * TAG sync (deferred, any heuristic; thesis Alg. 10, 11). Bounded tag
 * queues in the writer's sync buffer, one per direction: alloc tags in the
 * producer's, free tags in the consumer's. The queue is a ring: a slot is
 * free again as soon as the reader has taken it and reported so (its
 * consumed count, written into the writer's buffer every quarter ring).
 * The thesis's queue only restarts once the reader drained it whole; that
 * waits on the reader's progress even with room to spare, which can
 * deadlock two peers that each wait on the other. Readers rely on the
 * stamps rather than a tag state, so they fetch only the window of tags
 * they have not seen.
 *
 * Frees are named by order, not by the producer's names. Both ends keep
 * their live messages in post order (rmalloc_order.h). The consumer counts
 * a free of its oldest live message (one store to word 0) and sends a free
 * tag only for any other: the tag names the message by its post sequence
 * and carries the count as it was then. The producer reads the count
 * first, then the tags: each tag's count says how many counted frees came
 * before it, and after the last tag the rest of the count applies, so it
 * replays the consumer's order exactly; a counted free releases its own
 * oldest live message, which is the same one. So in-order frees cost no
 * tag, and a message taken by its flag (rmalloc_sync_take_early) needs no
 * tag at all: the consumer skips it unread.
 */
#include "rmalloc/rmalloc_sync_int.h"
#include "util/log.h"

#include <stddef.h>
#include <string.h>

/* The slot of the peer's next tag where it can be loaded (peer view). */
static inline const rmalloc_sync_rec_t *rmalloc_sync_tag_incoming(const rmalloc_sync_ep_t *ep)
{
    uint64_t mask = ep->cfg.queue_len - 1;

    return (const rmalloc_sync_rec_t *)(const void *)(ep->peer_view + RMALLOC_SYNC_OFF_TAGS +
                                                      (ep->consumed & mask) *
                                                          sizeof(rmalloc_sync_rec_t));
}

/* Tells the tag writer that its tags are loaded here, past the stamp that
 * is stored last: it may leave out their checksum. Set once, never
 * cleared, so a reader that copies tags with one-sided reads (the only one
 * that needs the checksum) never sees tags without it. */
static void rmalloc_sync_tag_peer_view(rmalloc_sync_ep_t *ep)
{
    __atomic_store_n((uint64_t *)(void *)((uint8_t *)ep->peer_view + RMALLOC_SYNC_OFF_LOADS), 1,
                     __ATOMIC_RELEASE);
}

/* ---- writer -------------------------------------------------------------- */

/* Appends r to my outbound queue (Alg. 10); the peer pulls it.
 * NO_RESOURCE when the reader has not yet taken the tag queue_len back. */
static util_status_t rmalloc_sync_tag_produce(rmalloc_sync_ep_t *ep, rmalloc_sync_rec_t *r)
{
    uint64_t cap = ep->cfg.queue_len;
    uint64_t produced = ep->produced;
    rmalloc_sync_rec_t *slot = (rmalloc_sync_rec_t *)(void *)(ep->buf + RMALLOC_SYNC_OFF_TAGS +
                                                              (produced & (cap - 1)) * sizeof(*r));

    /* The reader's count lives in a line it writes: load it only when the
     * last value seen says the queue is full. Signed: an alloc tag's reader
     * counts messages it took by their flag, perhaps before their tags. */
    if ((int64_t)(produced - ep->peer_consumed) >= (int64_t)cap &&
        (int64_t)(produced - (ep->peer_consumed = rmalloc_sync_load_word(
                                  ep, RMALLOC_SYNC_OFF_CONSUMED))) >= (int64_t)cap) {
        ep->stats.backpressure++;
        return UTIL_ERR_NO_RESOURCE;
    }
    /* A reader that loads tags has said so (OFF_LOADS): it goes by the
     * stamp alone. */
    if (ep->reader_loads ||
        (ep->reader_loads = (rmalloc_sync_load_word(ep, RMALLOC_SYNC_OFF_LOADS) != 0))) {
        r->stamp = produced + 1;
    } else {
        rmalloc_sync_rec_seal(r, produced + 1);
    }
    /* The fields first, the stamp last: a reader with loads checks the stamp
     * before the rest, so it sees a whole record (x86-TSO keeps store
     * order; the release keeps the compiler's). One-sided readers also
     * have the checksum. */
    memcpy(slot, r, offsetof(rmalloc_sync_rec_t, stamp));
    __atomic_store_n(&slot->stamp, r->stamp, __ATOMIC_RELEASE);
    ep->produced = produced + 1;
    ep->stats.pushed++;
    return UTIL_OK;
}

/* ---- reader -------------------------------------------------------------- */

/* Enough tags taken and not yet reported to tell the writer. */
static inline int rmalloc_sync_tag_to_report(const rmalloc_sync_ep_t *ep)
{
    return ep->consumed - ep->consumed_told >= (ep->cfg.queue_len + 3) / 4;
}

/* Reports the tags taken (Alg. 11 l. 17-20, per quarter ring rather than
 * per full queue): the writer may then reuse those slots. Not per tag: the
 * count lands in the writer's busiest cache line, and the writer can only
 * be short of slots while some are unread (caught up, fewer than a quarter
 * ring are unreported). */
static util_status_t rmalloc_sync_tag_report(rmalloc_sync_ep_t *ep)
{
    uint64_t told = ep->consumed;
    util_status_t status =
        ep->tr.ops->write(ep->tr.ctx, RMALLOC_SYNC_OFF_CONSUMED, &told, sizeof(told));

    if (status == UTIL_ERR_NO_RESOURCE) {
        return UTIL_OK; /* reported with the next batch */
    }
    if (status == UTIL_IN_PROGRESS) {
        ep->unflushed = 1;
    } else if (status != UTIL_OK) {
        return status;
    }
    ep->stats.writes++;
    ep->consumed_told = told;
    return UTIL_OK;
}

/* Producer: releases its oldest live messages until `count` of them went by
 * count (each freed by the consumer as its oldest live message; the two
 * lists agree, see rmalloc_order.h). NO_RESOURCE when the list ran out
 * first: the rest are messages whose post is still deferred here (the
 * consumer took them by their flag), released once posted. */
static util_status_t rmalloc_sync_tag_release_counted(rmalloc_sync_ep_t *ep, uint64_t count)
{
    const raddr_t *run;
    size_t n, done;
    util_status_t status;

    while ((int64_t)(count - ep->freed_seen) > 0) {
        n = rmalloc_order_run(&ep->order, count - ep->freed_seen, &run);
        if (n == 0) {
            return UTIL_ERR_NO_RESOURCE;
        }
        /* a run in allocation order is one call on a ring-first instance */
        status = rmalloc_vmem_free_n(ep->vm, run, n, &done);
        if (status != UTIL_OK) {
            util_error("rmalloc: the peer freed [%llu, %llu) in order, which is not live here",
                       (unsigned long long)run[done].start, (unsigned long long)run[done].end);
            return UTIL_ERR_STATE;
        }
        rmalloc_order_pop_n(&ep->order, done);
        ep->freed_seen += done;
        ep->stats.applied += done;
        ep->pulled_new = 1;
    }
    return UTIL_OK;
}

/* Producer: a free tag (a message the consumer freed out of order), which
 * names the message by its post sequence and carries the count as it was
 * then: the counted frees before it are applied first. NO_RESOURCE when the
 * message is not posted here yet (deferred): stop, apply it later. */
static util_status_t rmalloc_sync_tag_apply_free(rmalloc_sync_ep_t *ep, const rmalloc_sync_rec_t *r)
{
    size_t i;
    util_status_t status = rmalloc_sync_tag_release_counted(ep, r->payload);

    if (status != UTIL_OK) {
        return status;
    }
    i = rmalloc_order_find(&ep->order, r->peer_id);
    if (i == SIZE_MAX && r->peer_id >= ep->produced) {
        return UTIL_ERR_NO_RESOURCE;
    }
    if (i == SIZE_MAX || ep->order.desc[i].start != r->start ||
        ep->order.desc[i].end != r->start + r->units ||
        rmalloc_vmem_free(ep->vm, &ep->order.desc[i]) != UTIL_OK) {
        return rmalloc_sync_peer_mismatch(ep, r);
    }
    rmalloc_order_remove(&ep->order, i);
    ep->stats.applied++;
    return UTIL_OK;
}

/* Consumer: an alloc tag. The claim keeps the post sequence (r->stamp - 1),
 * all that a free needs to name the message. */
static util_status_t rmalloc_sync_tag_apply_alloc(rmalloc_sync_ep_t *ep,
                                                  const rmalloc_sync_rec_t *r)
{
    util_status_t status;
    raddr_t d;

    ep->stats.applied++;
    rmalloc_sync_prefetch_header(ep, r);
    status = rmalloc_order_reserve(&ep->order);
    if (status != UTIL_OK) {
        return status;
    }
    status = rmalloc_vmem_claim(ep->vm, r->start, r->units, r->payload, r->stamp - 1, 0, &d);
    if (status == UTIL_OK) {
        rmalloc_order_push(&ep->order, r->stamp - 1, &d);
        status = rmalloc_sync_dq_push(&ep->ready, &d);
    }
    rmalloc_sync_note_taken(ep, r->start, r->units, r->payload);
    return (status == UTIL_ERR_INVALID) ? rmalloc_sync_peer_mismatch(ep, r) : status;
}

/* Applies the window of the peer's queue at ep->window_at (or in the peer
 * view, around the ring). Tag number n sits in slot n % Q with stamp n + 1
 * and a good checksum; the first slot that is not so (not written yet, or
 * half written) ends the batch, to be read again later (*at_end_p = 1). */
static util_status_t rmalloc_sync_tag_apply_window(rmalloc_sync_ep_t *ep, uint64_t *n_p,
                                                   int *at_end_p)
{
    util_status_t status = UTIL_OK;
    uint64_t n;

    *at_end_p = 0;
    for (n = 0; n < ep->window; n++) {
        rmalloc_sync_rec_t r;

        if (ep->window_at == NULL) {
            const rmalloc_sync_rec_t *slot = rmalloc_sync_tag_incoming(ep);
            /* The writer stores the stamp last, with release: once it reads
             * n + 1 (acquire), the fields are whole, and they stay so until
             * this side reports the slot taken. No checksum to compute. */
            if (__atomic_load_n(&slot->stamp, __ATOMIC_ACQUIRE) != ep->consumed + 1) {
                *at_end_p = 1;
                break;
            }
            memcpy(&r, slot, offsetof(rmalloc_sync_rec_t, stamp));
            r.stamp = ep->consumed + 1;
        } else {
            memcpy(&r, ep->window_at + n * sizeof(r), sizeof(r));
            if (!rmalloc_sync_rec_valid(&r, ep->consumed + 1)) {
                *at_end_p = 1; /* a one-sided read may have caught it half written */
                break;
            }
        }
        if (ep->cfg.role == RMALLOC_SYNC_PRODUCER) {
            status = rmalloc_sync_tag_apply_free(ep, &r);
        } else {
            status = rmalloc_sync_tag_apply_alloc(ep, &r);
        }
        if (status == UTIL_ERR_NO_RESOURCE) {
            break;
        }
        if (status != UTIL_OK) {
            return status;
        }
        ep->consumed++;
    }
    *n_p = n;
    return UTIL_OK;
}

static util_status_t rmalloc_sync_tag_read_tags(rmalloc_sync_ep_t *ep);

/* A window of the peer's queue arrived (Alg. 11). */
static util_status_t rmalloc_sync_tag_apply_tags(rmalloc_sync_ep_t *ep)
{
    uint64_t n;
    int at_end;
    util_status_t status;

    /* pulled_new was cleared when the pull began (rmalloc_sync_start_pull):
     * a pull may read several windows */
    status = rmalloc_sync_tag_apply_window(ep, &n, &at_end);
    if (status != UTIL_OK) {
        return status;
    }
    if (n != 0) {
        ep->pulled_new = 1;
    }
    /* Producer: the counted frees. Every tag written before the count was
     * read is in the window when it ended at a missing tag; otherwise
     * (window exhausted, or a tag to apply later) a counted free could
     * overtake a tag before it. */
    if (ep->cfg.role == RMALLOC_SYNC_PRODUCER && at_end) {
        status = rmalloc_sync_tag_release_counted(ep, ep->count_read);
        if (status != UTIL_OK && status != UTIL_ERR_NO_RESOURCE) {
            return status;
        }
    } else if (ep->cfg.role == RMALLOC_SYNC_PRODUCER && n == ep->window &&
               ++ep->pull_reads < RMALLOC_SYNC_TAG_PULL_READS) {
        /* one-sided window used up (at the ring's end, or full): read on */
        if (rmalloc_sync_tag_to_report(ep) && (status = rmalloc_sync_tag_report(ep)) != UTIL_OK) {
            return status;
        }
        return rmalloc_sync_tag_read_tags(ep);
    }
    return rmalloc_sync_tag_to_report(ep) ? rmalloc_sync_tag_report(ep) : UTIL_OK;
}

/* Reads the next window of the peer's queue and applies it. Where the
 * peer's buffer is mapped, in place, once its first slot holds the tag
 * expected next; otherwise a one-sided read into ep->scratch. */
static util_status_t rmalloc_sync_tag_read_tags(rmalloc_sync_ep_t *ep)
{
    util_status_t status;
    uint64_t cap = ep->cfg.queue_len;

    if (ep->peer_view != NULL) {
        status = rmalloc_sync_flush_unflushed(ep); /* no read completes here to do it */
        if (status != UTIL_OK) {
            return status;
        }
        ep->stats.reads++;
        ep->window = cap; /* no more can be there: slots come back on reports */
        if (__atomic_load_n(&rmalloc_sync_tag_incoming(ep)->stamp, __ATOMIC_ACQUIRE) !=
            ep->consumed + 1) {
            if (ep->cfg.role == RMALLOC_SYNC_CONSUMER && !rmalloc_sync_tag_to_report(ep)) {
                return UTIL_OK; /* nothing new, nothing to report */
            }
            ep->window = 1; /* apply_tags finds it stale: counted frees, report */
        }
        ep->window_at = NULL; /* applied in place, each record as it is copied */
        return rmalloc_sync_tag_apply_tags(ep);
    }

    uint64_t slot = ep->consumed & (cap - 1); /* the window stops at the ring's end */
    ep->window = (cap - slot < RMALLOC_SYNC_TAG_WINDOW) ? cap - slot : RMALLOC_SYNC_TAG_WINDOW;
    ep->window_at = ep->scratch;
    status = ep->tr.ops->read(ep->tr.ctx, RMALLOC_SYNC_OFF_TAGS + slot * sizeof(rmalloc_sync_rec_t),
                              ep->scratch, ep->window * sizeof(rmalloc_sync_rec_t));
    status = rmalloc_sync_read_issued(ep, RMALLOC_SYNC_PEND_TAGS, status);
    if (status != UTIL_OK) {
        return status;
    }
    return rmalloc_sync_tag_apply_tags(ep);
}

/* Producer: the consumer's count arrived; its tags next. */
static util_status_t rmalloc_sync_tag_count_read(rmalloc_sync_ep_t *ep)
{
    ep->count_read = ep->word;
    return rmalloc_sync_tag_read_tags(ep);
}

static util_status_t rmalloc_sync_tag_read_done(rmalloc_sync_ep_t *ep, rmalloc_sync_pend_t kind)
{
    if (kind == RMALLOC_SYNC_PEND_COUNT) {
        return rmalloc_sync_tag_count_read(ep);
    }
    return rmalloc_sync_tag_apply_tags(ep);
}

/* ---- producer ------------------------------------------------------------ */

/* Frees: the count, then the tags. */
static util_status_t rmalloc_sync_tag_sync_in(rmalloc_sync_ep_t *ep)
{
    util_status_t status;

    status = rmalloc_sync_read_word(ep, RMALLOC_SYNC_PEND_COUNT, RMALLOC_SYNC_OFF_FREED);
    if (status != UTIL_OK) {
        return status;
    }
    return rmalloc_sync_tag_count_read(ep);
}

/* The message joins the live list under its tag's number, which the
 * consumer's frees name it by. */
static util_status_t rmalloc_sync_tag_post(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    util_status_t status;
    uint64_t seq;
    rmalloc_sync_rec_t r = {.start = desc->start,
                            .units = desc->end - desc->start,
                            .payload = desc->payload,
                            .peer_id = desc->id,
                            .peer_block = desc->block};

    status = rmalloc_sync_post_check(ep, desc);
    if (status != UTIL_OK) {
        return status;
    }
    status = rmalloc_sync_complete_pending(ep);
    if (status != UTIL_OK) {
        return status;
    }
    seq = ep->produced;
    if ((status = rmalloc_order_reserve(&ep->order)) != UTIL_OK ||
        (status = rmalloc_sync_tag_produce(ep, &r)) != UTIL_OK) {
        return status;
    }
    rmalloc_order_push(&ep->order, seq, desc);
    return UTIL_OK;
}

/* ---- consumer ------------------------------------------------------------ */

static util_status_t rmalloc_sync_tag_next(rmalloc_sync_ep_t *ep, raddr_t *desc_p)
{
    util_status_t status;

    if (rmalloc_sync_dq_empty(&ep->ready)) {
        status = (ep->pending != RMALLOC_SYNC_PEND_NONE) ? rmalloc_sync_complete_read(ep)
                                                         : rmalloc_sync_tag_read_tags(ep);
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

/* rmalloc_sync_pull(): the tags written so far (a window per read when
 * read through the network) go to the ready list ahead of next(). */
static util_status_t rmalloc_sync_tag_pull_consumer(rmalloc_sync_ep_t *ep)
{
    if (ep->pending != RMALLOC_SYNC_PEND_NONE) {
        return rmalloc_sync_complete_read(ep);
    }
    return rmalloc_sync_tag_read_tags(ep);
}

/* With or without a peer view: a message taken early skips its tag (its
 * frees name it by post order), so nothing waits for the producer to serve
 * a read of it. Over a network this is what spares a PUT reader a round
 * trip per message: the guessed flag is in its own memory. */
static util_status_t rmalloc_sync_tag_guess(const rmalloc_sync_ep_t *ep, uint64_t *start_p,
                                            uint64_t *units_p, uint64_t *payload_p)
{
    return rmalloc_sync_guess_next(ep, start_p, units_p, payload_p);
}

/* It is the message of tag number `consumed`; its frees name it by that
 * number, so its tag is not needed: skip it, unread. */
static util_status_t rmalloc_sync_tag_take_early(rmalloc_sync_ep_t *ep, uint64_t start,
                                                 uint64_t units, uint64_t payload, raddr_t *desc_p)
{
    util_status_t status;

    status = rmalloc_order_reserve(&ep->order);
    if (status != UTIL_OK) {
        return status;
    }
    status = rmalloc_vmem_claim(ep->vm, start, units, payload, ep->consumed, 0, desc_p);
    if (status != UTIL_OK) {
        return status;
    }
    rmalloc_order_push(&ep->order, ep->consumed, desc_p);
    ep->consumed++;
    rmalloc_sync_note_taken(ep, start, units, payload);
    return rmalloc_sync_tag_to_report(ep) ? rmalloc_sync_tag_report(ep) : UTIL_OK;
}

/* The oldest live message is counted (one store into my own buffer, which
 * the producer reads when it pulls); any other is a free tag naming it by
 * its post sequence, with the count as of now. */
static util_status_t rmalloc_sync_tag_free(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    uint64_t seq;
    uint32_t unused;
    util_status_t status;
    size_t i;

    if (rmalloc_vmem_peer(ep->vm, desc, &seq, &unused) != UTIL_OK) {
        return UTIL_ERR_INVALID;
    }
    if (rmalloc_order_live(&ep->order) && rmalloc_order_front_seq(&ep->order) == seq) {
        status = rmalloc_vmem_free(ep->vm, desc);
        if (status != UTIL_OK) {
            return status;
        }
        rmalloc_order_pop_n(&ep->order, 1);
        rmalloc_sync_store_word(ep, RMALLOC_SYNC_OFF_FREED, ++ep->freed_total);
        return UTIL_OK;
    }
    i = rmalloc_order_find(&ep->order, seq);
    if (i == SIZE_MAX) {
        util_error("rmalloc: live message %llu is missing from the post order",
                   (unsigned long long)seq);
        return UTIL_ERR_STATE;
    }
    rmalloc_sync_rec_t r = {.start = desc->start,
                            .units = desc->end - desc->start,
                            .payload = ep->freed_total,
                            .peer_id = seq};
    status = rmalloc_sync_tag_produce(ep, &r);
    if (status != UTIL_OK) {
        return status;
    }
    rmalloc_order_remove(&ep->order, i);
    return rmalloc_vmem_free(ep->vm, desc);
}

/* Consumer waiting for the next tag: its stamp, where tags are loads. */
static const uint64_t *rmalloc_sync_tag_poll_word(const rmalloc_sync_ep_t *ep)
{
    if (ep->peer_view == NULL) {
        return NULL;
    }
    return &rmalloc_sync_tag_incoming(ep)->stamp;
}

/* ---- tables -------------------------------------------------------------- */

const rmalloc_sync_protocol_ops_t rmalloc_sync_tag_producer_ops = {
    .name = "tag",
    .vmem_flags = RMALLOC_VMEM_RING_FIRST, /* ignored by heuristics other than next-fit */
    .check = rmalloc_sync_check_any,
    .peer_view = rmalloc_sync_tag_peer_view,
    .read_done = rmalloc_sync_tag_read_done,
    .sync_in = rmalloc_sync_tag_sync_in,
    .alloc = rmalloc_sync_alloc_deferred,
    .post = rmalloc_sync_tag_post,
    .pull = rmalloc_sync_pull_base,
    .next = rmalloc_sync_no_next,
    .guess = rmalloc_sync_no_guess,
    .take_early = rmalloc_sync_no_take_early,
    .accept = rmalloc_sync_no_accept,
    .free = rmalloc_sync_no_free,
    .poll_word = rmalloc_sync_no_poll_word,
    .progress = rmalloc_sync_progress_base,
};

const rmalloc_sync_protocol_ops_t rmalloc_sync_tag_consumer_ops = {
    .name = "tag",
    .vmem_flags = RMALLOC_VMEM_CLAIMS,
    .check = rmalloc_sync_check_any,
    .peer_view = rmalloc_sync_tag_peer_view,
    .read_done = rmalloc_sync_tag_read_done,
    .sync_in = rmalloc_sync_no_sync_in,
    .alloc = rmalloc_sync_no_alloc,
    .post = rmalloc_sync_no_post,
    .pull = rmalloc_sync_tag_pull_consumer,
    .next = rmalloc_sync_tag_next,
    .guess = rmalloc_sync_tag_guess,
    .take_early = rmalloc_sync_tag_take_early,
    .accept = rmalloc_sync_no_accept,
    .free = rmalloc_sync_tag_free,
    .poll_word = rmalloc_sync_tag_poll_word,
    .progress = rmalloc_sync_progress_base,
};
