/*
 * btl hot paths, inline. The small case comes first; anything it cannot do
 * goes through the ops table (btl.h), and connection set-up stays out of
 * line in btl.c.
 */
#ifndef BTL_INL_H
#define BTL_INL_H

#include "btl/btl.h"

#include <string.h>

/* The ep serving peer, connecting on first use. */
static inline util_status_t btl_ctx_ep(btl_ctx_t *ctx, int peer, btl_ep_t **ep_p)
{
    btl_ep_t *ep;

    if (__builtin_expect((unsigned)peer < (unsigned)ctx->size &&
                         (ep = ctx->eps[peer]) != NULL, 1)) {
        *ep_p = ep;
        return UTIL_OK;
    }
    return btl_ctx_connect(ctx, peer, ep_p);
}

/* Short put, blocking to local completion. When the rkey maps the peer's
 * memory (shm) it is a memcpy into that mapping: no call at all. */
static inline util_status_t btl_put_short(btl_ep_t *ep, const void *src, size_t len,
                                          uint64_t raddr, btl_rkey_t *rkey)
{
    if (__builtin_expect(rkey->ls_valid, 1)) {
        memcpy((void *)(uintptr_t)(raddr + (uint64_t)rkey->ls_delta), src, len);
        return UTIL_OK;
    }
    return ep->iface->ops.put(ep, src, len, NULL, raddr, rkey, NULL);
}

static inline util_status_t btl_get_short(btl_ep_t *ep, void *dst, size_t len,
                                          uint64_t raddr, btl_rkey_t *rkey)
{
    if (__builtin_expect(rkey->ls_valid, 1)) {
        memcpy(dst, (const void *)(uintptr_t)(raddr + (uint64_t)rkey->ls_delta), len);
        return UTIL_OK;
    }
    return ep->iface->ops.get(ep, dst, len, NULL, raddr, rkey, NULL);
}

/* Reads a local notified flag (acquire: data written before it is visible). */
static inline uint64_t btl_flag_load(const uint64_t *flag)
{
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

/* Polls a local flag until it equals value: acquire-load, compare, drive
 * progress, relax the CPU. Gives up after max_polls polls (0: never) with
 * UTIL_ERR_TIMEOUT; the caller names the peer and flag in its message. */
static inline util_status_t btl_flag_wait(btl_ctx_t *ctx, const uint64_t *flag, uint64_t value,
                                          uint64_t max_polls)
{
    uint64_t polls = 0;

    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != value) {
        util_status_t status = btl_ctx_progress(ctx);
        if (status < 0)
            return status;
        if (max_polls != 0 && ++polls >= max_polls)
            return UTIL_ERR_TIMEOUT;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    }
    return UTIL_OK;
}

#endif
