/*
 * Bounded waits of the network backends (btl/ofi, btl/ucx): spin, then
 * yield or nap by the one waiting policy (util/wait.h), and after
 * RMB_BTL_TIMEOUT_SEC fail with UTIL_ERR_TIMEOUT and one line naming the
 * backend, the operation and the peer. The clock is read only once a wait
 * has spun a while, so short waits never pay for it.
 *
 * Usage: btl_wait_t w = BTL_WAIT_INIT;
 *        while (!done) { progress...; if ((s = btl_wait_tick(&w, ...)) != UTIL_OK) return s; }
 */
#ifndef BTL_WAIT_H
#define BTL_WAIT_H

#include "btl/btl.h"
#include "util/status.h"
#include "util/wait.h"

#include <stdint.h>

/* A network progress call costs system calls, not a load: this many of
 * them last about as long as the policy's spin of loads. */
#define BTL_WAIT_NET_SPINS 256

typedef struct {
    util_wait_t idle;
    uint64_t deadline; /* 0 until the wait has spun a while */
    uint32_t busy;     /* progress calls that did work (btl_wait_busy) */
} btl_wait_t;

#define BTL_WAIT_INIT                                                                              \
    {                                                                                              \
        UTIL_WAIT_INIT, 0, 0                                                                       \
    }

/* What a backend's waits are bounded by. */
typedef struct {
    const char *backend;  /* "btl/ofi", "btl/ucx": first word of messages */
    const char *variable; /* the variable that sets the bound, for messages */
    uint64_t timeout_ns;  /* 0: unbounded */
} btl_wait_bound_t;

/* Reads RMB_BTL_TIMEOUT_SEC (legacy: a backend's own variable, when set,
 * wins) into bound; UTIL_ERR_INVALID with a one-line error on bad input. */
util_status_t btl_wait_bound_init(btl_wait_bound_t *bound, const char *backend,
                                  const char *legacy_variable);

uint64_t btl_now_ns(void);

/* One idle step of a wait for `what` (to peer, or every peer when peer < 0):
 * UTIL_OK to go on, UTIL_ERR_TIMEOUT (logged) once the bound has passed. */
util_status_t btl_wait_tick_slow(btl_wait_t *w, const btl_wait_bound_t *bound, const char *what,
                                 int peer);

/* UTIL_ERR_TIMEOUT (logged) once the wait has outlived the bound. */
util_status_t btl_wait_check_deadline(btl_wait_t *w, const btl_wait_bound_t *bound,
                                      const char *what, int peer);

/* A non-blocking operation to peer, posted at posted_ns (btl_now_ns), that
 * has outlived the bound at now: logged once, comp fails with
 * UTIL_ERR_TIMEOUT and 1 is returned (the caller then forgets comp); else 0. */
int btl_wait_expire_comp(const btl_wait_bound_t *bound, btl_comp_t *comp, uint64_t posted_ns,
                         uint64_t now, int peer);

static inline util_status_t btl_wait_tick(btl_wait_t *w, const btl_wait_bound_t *bound,
                                          const char *what, int peer)
{
    if (++w->idle.polls <= BTL_WAIT_NET_SPINS && w->idle.polls <= util_wait_policy.spin) {
        return UTIL_OK;
    }
    return btl_wait_tick_slow(w, bound, what, peer);
}

/* The step of a wait whose progress call just did work: progress again at
 * once. A yield there gives the core away after every chunk of a peer's
 * stream queued ahead of our completion (the stream's target waited
 * seconds for a fetch on a loaded machine). The bound still counts. */
static inline util_status_t btl_wait_busy(btl_wait_t *w, const btl_wait_bound_t *bound,
                                          const char *what, int peer)
{
    return (++w->busy & 63) != 0 ? UTIL_OK : btl_wait_check_deadline(w, bound, what, peer);
}

#endif
