/*
 * BLOCK sync (deferred, next-fit only; thesis Alg. 8, 9). Both instances
 * are strict circular buffers (RMALLOC_VMEM_RING). The consumer learns
 * allocations by placing the same sizes in the same order
 * (rmalloc_sync_accept()), which gives the same offsets: nothing travels
 * for an allocation. The consumer adds the units it released, in
 * allocation order, to a counter in its own sync buffer (sync_out_blocks,
 * Alg. 9); the producer reads it (sync_in_blocks, Alg. 8) only when its
 * shadow is full or above the watermark.
 */
#include "rmalloc/rmalloc_sync_int.h"
#include "util/log.h"

static util_status_t rmalloc_sync_block_check(const rmalloc_sync_config_t *config)
{
    if (config->heuristic != RMALLOC_NEXT_FIT) {
        util_error("rmalloc: the block protocol needs next-fit, not %s",
                   rmalloc_heuristic_name(config->heuristic));
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

/* ---- producer ------------------------------------------------------------ */

/* The consumer's freed counter arrived (Alg. 8). */
static util_status_t rmalloc_sync_block_apply_freed(rmalloc_sync_ep_t *ep, uint64_t freed)
{
    uint64_t delta = freed - ep->freed_seen;

    ep->pulled_new = (delta != 0);
    if (delta == 0) {
        return UTIL_OK;
    }
    if (rmalloc_vmem_ring_retire(ep->vm, delta) != UTIL_OK) {
        return UTIL_ERR_STATE;
    }
    ep->freed_seen = freed;
    return UTIL_OK;
}

static util_status_t rmalloc_sync_block_read_done(rmalloc_sync_ep_t *ep, rmalloc_sync_pend_t kind)
{
    return rmalloc_sync_block_apply_freed(ep, ep->word);
}

static util_status_t rmalloc_sync_block_sync_in(rmalloc_sync_ep_t *ep)
{
    util_status_t status;

    status = rmalloc_sync_read_word(ep, RMALLOC_SYNC_PEND_FREED, RMALLOC_SYNC_OFF_FREED);
    if (status != UTIL_OK) {
        return status;
    }
    return rmalloc_sync_block_apply_freed(ep, ep->word);
}

/* Nothing to publish: the consumer places the same sizes itself. */
static util_status_t rmalloc_sync_block_post(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    return rmalloc_sync_post_check(ep, desc);
}

/* ---- consumer ------------------------------------------------------------ */

static util_status_t rmalloc_sync_block_accept(rmalloc_sync_ep_t *ep, uint64_t payload,
                                               uint64_t align, raddr_t *desc_p)
{
    util_status_t status = rmalloc_vmem_alloc(ep->vm, payload, align, desc_p);

    if (status == UTIL_ERR_NO_RESOURCE) {
        util_error("rmalloc: cannot mirror the producer's allocation of %llu bytes",
                   (unsigned long long)payload);
        return UTIL_ERR_STATE;
    }
    return status;
}

/* Alg. 6/7 l. 5-7 and Alg. 9: count units released in order. */
static util_status_t rmalloc_sync_block_free(rmalloc_sync_ep_t *ep, const raddr_t *desc)
{
    util_status_t status;
    uint64_t released;

    status = rmalloc_vmem_free(ep->vm, desc);
    if (status != UTIL_OK) {
        return status;
    }
    released = rmalloc_vmem_ring_take_released(ep->vm);
    if (released) {
        ep->freed_total += released;
        rmalloc_sync_store_word(ep, RMALLOC_SYNC_OFF_FREED, ep->freed_total);
    }
    return UTIL_OK;
}

/* ---- tables -------------------------------------------------------------- */

const rmalloc_sync_protocol_ops_t rmalloc_sync_block_producer_ops = {
    .name = "block",
    .vmem_flags = RMALLOC_VMEM_RING,
    .check = rmalloc_sync_block_check,
    .peer_view = rmalloc_sync_no_peer_view,
    .read_done = rmalloc_sync_block_read_done,
    .sync_in = rmalloc_sync_block_sync_in,
    .alloc = rmalloc_sync_alloc_deferred,
    .post = rmalloc_sync_block_post,
    .pull = rmalloc_sync_pull_base,
    .next = rmalloc_sync_no_next,
    .guess = rmalloc_sync_no_guess,
    .take_early = rmalloc_sync_no_take_early,
    .accept = rmalloc_sync_no_accept,
    .free = rmalloc_sync_no_free,
    .poll_word = rmalloc_sync_no_poll_word,
    .progress = rmalloc_sync_progress_base,
};

const rmalloc_sync_protocol_ops_t rmalloc_sync_block_consumer_ops = {
    .name = "block",
    .vmem_flags = RMALLOC_VMEM_RING,
    .check = rmalloc_sync_block_check,
    .peer_view = rmalloc_sync_no_peer_view,
    .read_done = rmalloc_sync_no_read,
    .sync_in = rmalloc_sync_no_sync_in,
    .alloc = rmalloc_sync_no_alloc,
    .post = rmalloc_sync_no_post,
    .pull = rmalloc_sync_no_pull,
    .next = rmalloc_sync_no_next,
    .guess = rmalloc_sync_no_guess,
    .take_early = rmalloc_sync_no_take_early,
    .accept = rmalloc_sync_block_accept,
    .free = rmalloc_sync_block_free,
    .poll_word = rmalloc_sync_no_poll_word,
    .progress = rmalloc_sync_progress_base,
};
