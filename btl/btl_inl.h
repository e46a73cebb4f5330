/*
 * btl hot paths, inline: the endpoint lookup and the notified-flag load and
 * wait. Connection set-up stays out of line in btl.c. The on-node put, get
 * and atomic need no btl call at all: rpipe_sym resolves a peer's mapping
 * once (btl_rkey_ptr) and uses plain memcpy and btl_cpu_amo.h on it.
 */
#ifndef BTL_INL_H
#define BTL_INL_H

#include "btl/btl.h"

/* The ep serving peer, connecting on first use. */
static inline util_status_t btl_ctx_ep(btl_ctx_t *ctx, int peer, btl_ep_t **ep_p)
{
    btl_ep_t *ep;

    if (__builtin_expect((unsigned)peer < (unsigned)ctx->size && (ep = ctx->eps[peer]) != NULL,
                         1)) {
        *ep_p = ep;
        return UTIL_OK;
    }
    return btl_ctx_connect(ctx, peer, ep_p);
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
        if (status < 0) return status;
        if (max_polls != 0 && ++polls >= max_polls) return UTIL_ERR_TIMEOUT;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    }
    return UTIL_OK;
}

#endif
