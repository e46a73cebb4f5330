/*
 * btl/ucx: peers through UCX's UCP layer (RMA and atomics): RC/DC/UD verbs
 * with hardware atomics on InfiniBand and RoCE, TCP elsewhere. UCX picks
 * its transports itself; UCX_TLS and UCX_NET_DEVICES reach it untouched.
 *
 * Objects. One UCP context and one worker per iface (one per btl context).
 * The worker runs in UCS_THREAD_MODE_MULTI when the helper thread below is
 * on (it and the PE both drive the worker), else SERIALIZED (upper layers
 * already serialize the PE's threads per context).
 *
 * Addresses. iface_open publishes the worker's address with bootstrap_put;
 * ep_connect (first use of a peer) reads it and creates the UCP endpoint,
 * with peer error handling where UCX allows it (btl_ucx_err_mode_peer), so
 * that a dead peer fails operations instead of waiting for our timeout.
 *
 * Memory. mem_reg maps the range with ucp_mem_map and packs its rkey once;
 * our packed key is {base, length, rkey bytes}. Remote addresses are
 * virtual addresses, as UCP wants them.
 *
 * Completion. A UCP call either completes at once (NULL), fails, or
 * returns a request. Without a btl_comp_t we wait for the request (local
 * completion: the source may be reused, fetched data is in place); with
 * one the request is kept in a pending list that progress reaps, counting
 * it in its btl_comp_t. Only the PE's thread touches that list: the helper
 * thread calls ucp_worker_progress and nothing else. quiet is
 * ucp_worker_flush_nbx (remote completion of everything) and then reaps.
 *
 * Ordering. UCP orders nothing by itself between two operations (they may
 * take different lanes or protocols); ucp_worker_fence orders everything
 * issued before it on the worker before everything after. put_flag is
 * payload, fence, flag: the flag is never placed before its payload, at
 * the cost of a fence (docs/btl_ucx.md has what it costs per transport).
 *
 * Active messages. Where no RDMA device exists, UCX carries RMA and
 * atomics as messages that the target's worker applies, and answers each
 * put and non-fetching atomic with a completion message. Ours are one
 * message, a batch of records (btl_ucx_batch_send): put_flag (payload and
 * flag), puts up to RMB_UCX_AM_PUT_MAX and non-fetching atomics; quiet
 * completes them remotely with one ping per peer that got any, in the
 * batch. They ride the endpoint's one AM lane in order; a fence separates
 * them from UCP's RMA and atomics. OpenSHMEM's puts and non-fetching
 * atomics (put_batch, amo_post_batch) wait in the peer's batch until the
 * next progress or quiet, anything else to that peer, or the helper thread
 * once the PE stays away.
 *
 * Atomics. Every btl op maps onto ucp_atomic_op_nbx (ADD, AND, OR, XOR,
 * SWAP, CSWAP; FETCH is a fetching ADD of 0, SET a swap whose old value we
 * drop). Over TCP and shared memory UCX applies them in the target process
 * with CPU atomics, so they stay atomic with on-node CPU atomics on the
 * same word (BTL_CAP_AMO_CPU); on an RDMA device they are the NIC's.
 *
 * Progress. Over TCP (and for wire-up everywhere) the target's worker must
 * run for peers' operations to land. A helper thread serves them while the
 * PE stays away from UCX (computing, in a bootstrap barrier): it sleeps in
 * the worker's event fd (ucp_worker_arm) until traffic arrives, and only
 * looks every RMB_UCX_PROGRESS_USEC while the PE drives the worker itself.
 *
 * Waits are bounded by RMB_BTL_TIMEOUT_SEC (btl_wait.h).
 */
#include "btl/btl.h"
#include "btl/btl_batch.h"
#include "btl/btl_helper.h"
#include "btl/btl_wait.h"
#include "bootstrap/bootstrap.h"
#include "util/env.h"
#include "util/log.h"

/* UCX 1.19's ucp.h trips -Wsign-compare in its own enum (UCS_MASK) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>
#pragma GCC diagnostic pop

#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BTL_UCX_ADDR_MAX      4096 /* bytes of a published worker address */
#define BTL_UCX_PENDING_INIT  64
#define BTL_UCX_REAP_EVERY    64   /* progress calls between scans of the pending list */
#define BTL_UCX_DRAIN_PASSES  1024 /* progress calls of one helper drain, at most */
#define BTL_UCX_YIELD_EVERY   16   /* batches between util_wait_share_core, no helper */
#define BTL_UCX_AM_MAX        4096 /* largest payload sent as one active message */
#define BTL_UCX_BATCH_DEFAULT 8192 /* bytes held back per peer (RMB_UCX_AM_BATCH) */
#define BTL_UCX_BATCH_MIN     64
#define BTL_UCX_BATCH_LIMIT   65536

/* Our active messages (see "Active messages" above). */
enum {
    BTL_UCX_AM_PONG = 0x74,  /* no header; 8 bytes of payload, ignored */
    BTL_UCX_AM_BATCH = 0x78, /* header: btl_ucx_am_batch_t; payload: records */
};

/* Every active message of ours is a batch (btl_batch.h) to one peer, and
 * maybe a ping (quiet). A put or atomic sent alone is a batch of one;
 * OpenSHMEM's (btl_ucx_put_batch, btl_ucx_amo_post_batch) wait in the
 * peer's batch for the next ones. */
typedef struct {
    uint32_t ping;  /* 1: answer with a pong once applied (quiet) */
    uint32_t bytes; /* of records in the payload; an empty batch (a ping
                     * alone) carries 8 bytes of padding instead */
} btl_ucx_am_batch_t;

/* UCX 1.16 sent an empty payload by zero-copy (seen crashing there, on a
 * UCX without thread support): every message of ours carries at least
 * these 8 bytes and stays on the copied eager path. */
static const uint64_t btl_ucx_am_padding;

/* Head of our packed key; the UCP rkey bytes follow. */
typedef struct {
    uint64_t base;
    uint64_t len;
} btl_ucx_packed_t;

#define BTL_UCX_RKEY_MAX (BTL_RKEY_PACKED_MAX - 8 - sizeof(btl_ucx_packed_t))

/* A non-blocking operation counted in a btl_comp_t, reaped by progress. */
typedef struct {
    void *request;
    btl_comp_t *comp;
    void *owned; /* freed with the request: memory UCP reads until completion */
    uint64_t posted_ns;
    int peer;
} btl_ucx_pending_t;

typedef struct {
    btl_iface_t super;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    btl_wait_bound_t bound;
    btl_ucx_pending_t *pending;
    unsigned num_pending, max_pending;
    unsigned progress_calls;
    int rdma_device; /* an InfiniBand/RoCE device exists: atomics are the NIC's */
    int err_peer;    /* endpoints with peer error handling (RMB_UCX_ERR_MODE) */
    btl_helper_t helper;
    int event_fd;      /* the worker's event fd, or -1 */
    int info;          /* RMB_INFO on PE 0: name the transports per peer class */
    int info_told[2];  /* [off-node, on-node] */
    int am_flag;       /* put_flag as one active message (no RDMA device) */
    size_t am_put_max; /* puts up to this size as active messages (0: none) */
    int am_amo;        /* non-fetching atomics as active messages */
    /* RMA or atomics issued since the PE's last fence or flush returned
     * (written by the PE's thread, read by the helper's) */
    int unordered;
    uint64_t pings, pongs;        /* quiet's round trips behind the active messages */
    struct btl_ucx_ep **am_dirty; /* endpoints with active messages since the last quiet */
    int num_am_dirty;
    /* Batches: RMB_UCX_AM_BATCH bytes held per peer at most (0: none), in
     * a buffer of batch_cap bytes (room for the largest message). The
     * helper thread sends them too (btl_ucx_drain), so batch_lock guards
     * every batch and the list of endpoints that hold one. */
    size_t batch_max, batch_cap;
    int batch_lock;
    int helper_asleep;       /* blocked in the event fd with no batch to send */
    unsigned stream_batches; /* batches sent without the helper thread */
    uint64_t relaxes_seen;   /* their util_wait_share_core */
    int fence_flushes;       /* ucp_worker_fence is a flush: the PE does its own, bounded */
    struct btl_ucx_ep **batched;
    int num_batched;
} btl_ucx_iface_t;

typedef struct btl_ucx_ep {
    btl_ep_t super;
    ucp_ep_h ep;
    ucs_status_t failed; /* set by the error handler: the peer is gone */
    int am_dirty;        /* in the iface's am_dirty list */
    char *batch;         /* batch_cap bytes, allocated at the first active message */
    size_t batch_len;    /* bytes held */
    int batched;         /* in the iface's batched list */
} btl_ucx_ep_t;

typedef struct {
    btl_mr_t super;
    ucp_mem_h memh;
    size_t rkey_len;
    uint8_t rkey[BTL_UCX_RKEY_MAX];
} btl_ucx_mr_t;

typedef struct {
    btl_rkey_t super;
    ucp_rkey_h rkey;
} btl_ucx_rkey_t;

static inline btl_ucx_iface_t *btl_ucx_iface(btl_iface_t *iface)
{
    return btl_container_of(iface, btl_ucx_iface_t, super);
}

static inline btl_ucx_ep_t *btl_ucx_ep(btl_ep_t *ep)
{
    return btl_container_of(ep, btl_ucx_ep_t, super);
}

static inline ucp_rkey_h btl_ucx_rkey(btl_rkey_t *rkey)
{
    return btl_container_of(rkey, btl_ucx_rkey_t, super)->rkey;
}

static inline btl_ucx_mr_t *btl_ucx_mr(btl_mr_t *mr)
{
    return btl_container_of(mr, btl_ucx_mr_t, super);
}

/* A UCS status as ours; the caller has logged the cause. */
static util_status_t btl_ucx_status(ucs_status_t status)
{
    switch (status) {
    case UCS_OK:
        return UTIL_OK;
    case UCS_INPROGRESS:
        return UTIL_IN_PROGRESS;
    case UCS_ERR_NO_MEMORY:
        return UTIL_ERR_NO_MEMORY;
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_EXCEEDS_LIMIT:
        return UTIL_ERR_NO_RESOURCE;
    case UCS_ERR_UNSUPPORTED:
    case UCS_ERR_NOT_IMPLEMENTED:
        return UTIL_ERR_UNSUPPORTED;
    case UCS_ERR_INVALID_PARAM:
    case UCS_ERR_INVALID_ADDR:
        return UTIL_ERR_INVALID;
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_ENDPOINT_TIMEOUT:
        return UTIL_ERR_TIMEOUT;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NO_DEVICE:
        return UTIL_ERR_UNREACHABLE;
    default:
        return UTIL_ERR_IO;
    }
}

static util_status_t btl_ucx_fail(const char *call, int peer, ucs_status_t status)
{
    if (peer >= 0) {
        util_error("btl/ucx: %s to PE %d: %s", call, peer, ucs_status_string(status));
    } else {
        util_error("btl/ucx: %s: %s", call, ucs_status_string(status));
    }
    return btl_ucx_status(status);
}

/* The PE's thread progresses the worker now: the helper stays back. Only
 * where it does: a PE that issues, or quiets with nothing in flight, in a
 * loop, must not keep the helper from serving its peers (their atomics
 * over TCP stalled for good). */
static inline void btl_ucx_touch(btl_ucx_iface_t *uif)
{
    btl_helper_touch(&uif->helper);
}

/* UCP RMA or atomics went out: an active message after them needs a fence. */
static inline void btl_ucx_rma_issued(btl_ucx_iface_t *uif)
{
    __atomic_store_n(&uif->unordered, 1, __ATOMIC_RELAXED);
}

/* The PE's thread, once a fence or flush returned: what went before is
 * ordered before anything issued from now on, the helper's batches too. */
static inline void btl_ucx_ordered(btl_ucx_iface_t *uif)
{
    __atomic_store_n(&uif->unordered, 0, __ATOMIC_RELEASE);
}

/* ---- requests ---- */
static util_status_t btl_ucx_pending_add(btl_ucx_iface_t *uif, void *request, btl_comp_t *comp,
                                         int peer);

/* How UCX reports a peer that closed its side first, as the peers of a job
 * that passed its last barrier do: a reset, or not connected (any more). */
static int btl_ucx_peer_gone(ucs_status_t status)
{
    return status == UCS_ERR_CONNECTION_RESET || status == UCS_ERR_NOT_CONNECTED;
}

/* Waits for a request UCP returned (NULL: done at once); frees it. With
 * gone_ok a peer that closed first (btl_ucx_peer_gone) counts as success. */
static util_status_t btl_ucx_wait_but(btl_ucx_iface_t *uif, ucs_status_ptr_t request,
                                      const char *what, int peer, int gone_ok)
{
    btl_wait_t w = BTL_WAIT_INIT;
    ucs_status_t status;

    if (request == NULL) {
        return UTIL_OK;
    }
    if (UCS_PTR_IS_ERR(request)) {
        status = UCS_PTR_STATUS(request);
        return gone_ok && btl_ucx_peer_gone(status) ? UTIL_OK : btl_ucx_fail(what, peer, status);
    }
    for (;;) {
        btl_ucx_touch(uif);
        unsigned worked = ucp_worker_progress(uif->worker);
        status = ucp_request_check_status(request);
        if (status != UCS_INPROGRESS) {
            break;
        }
        util_status_t tick = worked != 0 ? btl_wait_busy(&w, &uif->bound, what, peer)
                                         : btl_wait_tick(&w, &uif->bound, what, peer);
        if (tick != UTIL_OK) {
            /* Nobody waits for it any more: progress frees it once it
             * completes, if ever (teardown cancels it). */
            btl_ucx_pending_add(uif, request, NULL, peer);
            return tick;
        }
    }
    ucp_request_free(request);
    return status == UCS_OK || (gone_ok && btl_ucx_peer_gone(status))
               ? UTIL_OK
               : btl_ucx_fail(what, peer, status);
}

/* The same, where every failure is one. */
static util_status_t btl_ucx_wait(btl_ucx_iface_t *uif, ucs_status_ptr_t request, const char *what,
                                  int peer)
{
    return btl_ucx_wait_but(uif, request, what, peer, 0);
}

static void btl_ucx_comp_count(btl_comp_t *comp, util_status_t status)
{
    if (status != UTIL_OK && comp->status == UTIL_OK) {
        comp->status = status;
    }
    __atomic_store_n(&comp->completed, comp->completed + 1, __ATOMIC_RELEASE);
}

/* Keeps a request for progress to reap; comp (may be NULL) counts it. */
static util_status_t btl_ucx_pending_add(btl_ucx_iface_t *uif, void *request, btl_comp_t *comp,
                                         int peer)
{
    btl_ucx_pending_t *p;

    if (uif->num_pending == uif->max_pending) {
        unsigned max = uif->max_pending * 2;
        btl_ucx_pending_t *grown = realloc(uif->pending, max * sizeof(*grown));
        if (grown == NULL) {
            return UTIL_ERR_NO_MEMORY;
        }
        uif->pending = grown;
        uif->max_pending = max;
    }
    p = &uif->pending[uif->num_pending++];
    p->request = request;
    p->comp = comp;
    p->owned = NULL;
    p->peer = peer;
    p->posted_ns = uif->bound.timeout_ns != 0 ? btl_now_ns() : 0;
    if (comp != NULL) {
        comp->posted++;
    }
    return UTIL_OK;
}

/* Either done (OK), an error, or kept pending and counted in comp. */
static util_status_t btl_ucx_track(btl_ucx_iface_t *uif, ucs_status_ptr_t request, btl_comp_t *comp,
                                   const char *what, int peer)
{
    if (request == NULL) {
        return UTIL_OK;
    }
    if (UCS_PTR_IS_ERR(request)) {
        return btl_ucx_fail(what, peer, UCS_PTR_STATUS(request));
    }
    if (btl_ucx_pending_add(uif, request, comp, peer) != UTIL_OK) {
        return btl_ucx_wait(uif, request, what, peer); /* no room to track it: finish it here */
    }
    return UTIL_IN_PROGRESS;
}

/* Counts finished pending requests in their btl_comp_t; fails those older
 * than the bound (timeout check only when asked: it reads the clock). */
static void btl_ucx_reap(btl_ucx_iface_t *uif, int check_timeout)
{
    uint64_t now = check_timeout && uif->bound.timeout_ns != 0 ? btl_now_ns() : 0;

    for (unsigned i = 0; i < uif->num_pending;) {
        btl_ucx_pending_t *p = &uif->pending[i];
        ucs_status_t status = ucp_request_check_status(p->request);

        if (status == UCS_INPROGRESS) {
            if (now == 0 || p->comp == NULL ||
                !btl_wait_expire_comp(&uif->bound, p->comp, p->posted_ns, now, p->peer)) {
                i++;
                continue;
            }
            /* Forget the comp everywhere: its owner gives up on it. */
            for (unsigned k = 0; k < uif->num_pending; k++) {
                if (uif->pending[k].comp == p->comp && k != i) {
                    uif->pending[k].comp = NULL;
                }
            }
            p->comp = NULL;
            i++;
            continue;
        }
        if (status != UCS_OK) {
            util_error("btl/ucx: non-blocking operation to PE %d failed: %s", p->peer,
                       ucs_status_string(status));
        }
        if (p->comp != NULL) {
            btl_ucx_comp_count(p->comp, btl_ucx_status(status));
        }
        ucp_request_free(p->request);
        free(p->owned);
        *p = uif->pending[--uif->num_pending];
    }
}

/* Marks uep for quiet's ping (PE thread only). */
static inline void btl_ucx_am_dirty(btl_ucx_iface_t *uif, btl_ucx_ep_t *uep)
{
    if (!uep->am_dirty) {
        uep->am_dirty = 1;
        uif->am_dirty[uif->num_am_dirty++] = uep;
    }
}

/* ucp_worker_fence for the PE's thread; once it returned, the PE's RMA is
 * ordered (btl_ucx_ordered). Where UCX's fence is a flush it
 * waits for without bound (a stalled peer held the PE 5 s past
 * RMB_BTL_TIMEOUT_SEC), the same flush under our bounded wait. */
static util_status_t btl_ucx_fence_pe(btl_ucx_iface_t *uif, int peer)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    ucs_status_t ret;

    if (uif->fence_flushes) {
        util_status_t status =
            btl_ucx_wait(uif, ucp_worker_flush_nbx(uif->worker, &param), "fence", peer);
        if (status == UTIL_OK) {
            btl_ucx_ordered(uif);
        }
        return status;
    }
    ret = ucp_worker_fence(uif->worker);
    if (ret != UCS_OK) {
        return btl_ucx_fail("ucp_worker_fence", peer, ret);
    }
    btl_ucx_ordered(uif);
    return UTIL_OK;
}

/* ---- batches ---- */
/* Sends uep's batch as one active message (batch_lock held), complete
 * locally on return; ping: the target answers with a pong once it has
 * applied it (quiet). Behind a fence where UCP RMA or atomics went before:
 * UCP orders neither RMA nor active messages by themselves (earlier puts
 * and atomics land first: the hierarchical exchange's blocks, an rpipe
 * atomic channel's update); our active messages to a peer take its one AM
 * lane in order. From the helper thread: no PE activity noted, the fence
 * done by btl_ucx_batch_flush, and a wait by progress alone. */
static util_status_t btl_ucx_batch_send(btl_ucx_iface_t *uif, btl_ucx_ep_t *uep, int ping,
                                        int helper)
{
    btl_ucx_am_batch_t hdr = {(uint32_t)ping, (uint32_t)uep->batch_len};
    /* an empty batch (a ping alone) carries the padding */
    const void *payload = uep->batch_len > 0 ? (const void *)uep->batch : &btl_ucx_am_padding;
    size_t payload_len = uep->batch_len > 0 ? uep->batch_len : sizeof(btl_ucx_am_padding);
    ucp_request_param_t param;
    ucs_status_ptr_t request;
    ucs_status_t ret;
    util_status_t status;

    if (!helper && uif->unordered) {
        status = btl_ucx_fence_pe(uif, uep->super.peer);
        if (status != UTIL_OK) {
            __atomic_store_n(&uep->batch_len, 0, __ATOMIC_RELEASE);
            return status;
        }
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_AM_SEND_FLAG_EAGER | (ping ? UCP_AM_SEND_FLAG_REPLY : 0);
    request =
        ucp_am_send_nbx(uep->ep, BTL_UCX_AM_BATCH, &hdr, sizeof(hdr), payload, payload_len, &param);
    if (helper) {
        while (UCS_PTR_IS_PTR(request) && ucp_request_check_status(request) == UCS_INPROGRESS) {
            ucp_worker_progress(uif->worker); /* a broken connection fails the request */
        }
        ret = UCS_PTR_IS_PTR(request) ? ucp_request_check_status(request) : UCS_PTR_STATUS(request);
        if (UCS_PTR_IS_PTR(request)) {
            ucp_request_free(request);
        }
        status = ret == UCS_OK ? UTIL_OK : btl_ucx_fail("batch", uep->super.peer, ret);
    } else {
        if (request == NULL && !uif->helper.running) {
            /* no helper: a stream serves its peers, and now and then lets
             * a PE on this core run (one waiting for our answers: 0.4 s
             * instead of 0.04; at every batch a loop of broadcasts took
             * twice as long). Without a helper nobody else takes batch_lock. */
            if (++uif->stream_batches % BTL_UCX_YIELD_EVERY == 0) {
                util_wait_share_core(&uif->relaxes_seen);
            }
            ucp_worker_progress(uif->worker);
        }
        status = btl_ucx_wait(uif, request, "batch", uep->super.peer);
        if (status != UTIL_OK && UCS_PTR_IS_PTR(request) && uif->num_pending > 0 &&
            uif->pending[uif->num_pending - 1].request == request) {
            /* timed out and kept pending: UCP may still read the batch */
            uif->pending[uif->num_pending - 1].owned = uep->batch;
            uep->batch = NULL;
        }
    }
    __atomic_store_n(&uep->batch_len, 0, __ATOMIC_RELEASE);
    return status;
}

/* The helper's fence before it sends what the PE held back (batch_lock
 * held): needed only where the PE issued RMA or atomics since its last
 * fence (records appended after them must not overtake them). Where UCX's
 * fence is a flush (btl_ucx_fence_flushes), a flush that gets one helper
 * interval: a stalled peer must not hold batch_lock, and so the PE, past
 * the PE's own bound; the batches then wait for the PE, which fails with
 * its bounded error if the peer stays stalled. 1: ordered, send. */
static int btl_ucx_helper_fence(btl_ucx_iface_t *uif)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    ucs_status_ptr_t request;
    uint64_t deadline;
    ucs_status_t ret;

    if (!__atomic_load_n(&uif->unordered, __ATOMIC_ACQUIRE)) {
        return 1; /* the PE's last fence came after its last RMA */
    }
    if (!uif->fence_flushes) {
        return ucp_worker_fence(uif->worker) == UCS_OK;
    }
    request = ucp_worker_flush_nbx(uif->worker, &param);
    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request) == UCS_OK;
    }
    deadline = btl_now_ns() + 1000000 +
               (uif->helper.interval_usec > 0 ? (uint64_t)uif->helper.interval_usec * 1000 : 0);
    while ((ret = ucp_request_check_status(request)) == UCS_INPROGRESS && btl_now_ns() < deadline) {
        ucp_worker_progress(uif->worker);
    }
    ucp_request_free(request); /* UCX releases it once done, if still in flight */
    return ret == UCS_OK;
}

/* Sends every batch (batch_lock held): progress, quiet, the helper. */
static util_status_t btl_ucx_batch_flush(btl_ucx_iface_t *uif, int helper)
{
    util_status_t status = UTIL_OK;

    if (helper && !btl_ucx_helper_fence(uif)) {
        return UTIL_OK; /* left for the PE */
    }
    for (int i = 0; i < uif->num_batched; i++) {
        btl_ucx_ep_t *uep = uif->batched[i];

        uep->batched = 0;
        if (uep->batch_len > 0) {
            util_status_t sent = btl_ucx_batch_send(uif, uep, 0, helper);
            status = status == UTIL_OK ? sent : status;
        }
    }
    __atomic_store_n(&uif->num_batched, 0, __ATOMIC_RELEASE);
    return status;
}

/* The PE's thread, before anything else to uep: its batch goes first. */
static inline util_status_t btl_ucx_batch_out(btl_ucx_iface_t *uif, btl_ucx_ep_t *uep)
{
    util_status_t status = UTIL_OK;

    if (__atomic_load_n(&uep->batch_len, __ATOMIC_ACQUIRE) == 0) {
        return UTIL_OK;
    }
    btl_helper_lock(&uif->batch_lock);
    if (uep->batch_len > 0) {
        status = btl_ucx_batch_send(uif, uep, 0, 0);
    }
    btl_helper_unlock(&uif->batch_lock);
    return status;
}

/* With batch_lock held: room for need more bytes in uep's batch (what it
 * holds goes first where they would not fit). */
static util_status_t btl_ucx_batch_room(btl_ucx_iface_t *uif, btl_ucx_ep_t *uep, size_t need)
{
    if (uep->batch_len + need > uif->batch_cap) {
        util_status_t status = btl_ucx_batch_send(uif, uep, 0, 0);
        if (status != UTIL_OK) {
            return status;
        }
    }
    if (uep->batch == NULL && (uep->batch = malloc(uif->batch_cap)) == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    return UTIL_OK;
}

/* With batch_lock held and room made: a record and len bytes of data. */
static void btl_ucx_batch_append(btl_ucx_ep_t *uep, const btl_batch_rec_t *rec, const void *data,
                                 size_t len)
{
    size_t size = btl_batch_write(uep->batch + uep->batch_len, rec, data, len);

    __atomic_store_n(&uep->batch_len, uep->batch_len + size, __ATOMIC_RELEASE);
}

/* Adds a record (and len bytes of data, at most BTL_UCX_AM_MAX) to ep's
 * batch. hold: it may wait there for the next ones (up to batch_max
 * bytes); else the batch goes now. */
static util_status_t btl_ucx_batch_add(btl_ucx_iface_t *uif, btl_ep_t *ep,
                                       const btl_batch_rec_t *rec, const void *data, size_t len,
                                       int hold, int for_quiet)
{
    btl_ucx_ep_t *uep = btl_ucx_ep(ep);
    util_status_t status;
    int wake = 0;

    if (for_quiet) {
        btl_ucx_am_dirty(uif, uep);
    }
    btl_helper_lock(&uif->batch_lock);
    status = btl_ucx_batch_room(uif, uep, btl_batch_rec_size(rec->kind, len));
    if (status == UTIL_OK) {
        btl_ucx_batch_append(uep, rec, data, len);
        if (!hold || uep->batch_len >= uif->batch_max) {
            status = btl_ucx_batch_send(uif, uep, 0, 0);
        } else if (!uep->batched) {
            uep->batched = 1;
            uif->batched[uif->num_batched] = uep;
            __atomic_store_n(&uif->num_batched, uif->num_batched + 1, __ATOMIC_SEQ_CST);
            /* the first batch while the helper sleeps without a timeout
             * short enough for it: wake it (btl_ucx_block) */
            wake = uif->num_batched == 1 && __atomic_load_n(&uif->helper_asleep, __ATOMIC_SEQ_CST);
        }
    }
    btl_helper_unlock(&uif->batch_lock);
    if (wake) {
        (void)ucp_worker_signal(uif->worker);
    }
    return status;
}

/* ---- RMA ---- */
static inline ucp_ep_h btl_ucx_uep(btl_ep_t *ep)
{
    return btl_ucx_ep(ep)->ep;
}

/* A UCP call's outcome: done at once (NULL), failed, waited for (no comp),
 * or kept pending and counted in comp. */
static inline util_status_t btl_ucx_complete(btl_ucx_iface_t *uif, ucs_status_ptr_t request,
                                             btl_comp_t *comp, const char *what, int peer)
{
    return comp == NULL ? btl_ucx_wait(uif, request, what, peer)
                        : btl_ucx_track(uif, request, comp, what, peer);
}

static util_status_t btl_ucx_put(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                 uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(ep->iface);
    ucp_request_param_t param = {.op_attr_mask = 0};
    util_status_t status;

    (void)lmem;
    if (len == 0) {
        return UTIL_OK;
    }
    if (len <= uif->am_put_max) {
        /* one message, no completion message back (quiet pings instead) */
        btl_batch_rec_t rec = {BTL_BATCH_PUT, (uint32_t)len, raddr, {0, 0}};
        return btl_ucx_batch_add(uif, ep, &rec, src, len, 0, 1);
    }
    status = btl_ucx_batch_out(uif, btl_ucx_ep(ep));
    if (status != UTIL_OK) {
        return status;
    }
    btl_ucx_rma_issued(uif);
    return btl_ucx_complete(
        uif, ucp_put_nbx(btl_ucx_uep(ep), src, len, raddr, btl_ucx_rkey(rkey), &param), comp, "put",
        ep->peer);
}

/* Puts up to RMB_UCX_AM_PUT_MAX bytes into the peer's batch (else a put). */
static util_status_t btl_ucx_put_batch(btl_ep_t *ep, const void *src, size_t len, uint64_t raddr,
                                       btl_rkey_t *rkey)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(ep->iface);

    if (len > 0 && len <= uif->am_put_max) {
        btl_batch_rec_t rec = {BTL_BATCH_PUT, (uint32_t)len, raddr, {0, 0}};
        return btl_ucx_batch_add(uif, ep, &rec, src, len, 1, 1);
    }
    return btl_ucx_put(ep, src, len, NULL, raddr, rkey, NULL);
}

static util_status_t btl_ucx_get(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                 uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(ep->iface);
    ucp_request_param_t param = {.op_attr_mask = 0};
    util_status_t status;

    (void)lmem;
    if (len == 0) {
        return UTIL_OK;
    }
    status = btl_ucx_batch_out(uif, btl_ucx_ep(ep)); /* a get sees the puts before it */
    if (status != UTIL_OK) {
        return status;
    }
    btl_ucx_rma_issued(uif);
    return btl_ucx_complete(
        uif, ucp_get_nbx(btl_ucx_uep(ep), dst, len, raddr, btl_ucx_rkey(rkey), &param), comp, "get",
        ep->peer);
}

/* ---- atomics ---- */
static util_status_t btl_ucx_amo_check(btl_amo_op_t op, unsigned size, uint64_t raddr)
{
    if ((size != 4 && size != 8) || (raddr & (size - 1)) != 0 || (unsigned)op >= BTL_AMO_LAST) {
        util_error("btl/ucx: bad atomic (op %d, size %u, address 0x%llx)", (int)op, size,
                   (unsigned long long)raddr);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

static const ucp_atomic_op_t btl_ucx_amo_op[BTL_AMO_LAST] = {
    [BTL_AMO_FETCH] = UCP_ATOMIC_OP_ADD, /* of 0 */
    [BTL_AMO_SET] = UCP_ATOMIC_OP_SWAP,    [BTL_AMO_SWAP] = UCP_ATOMIC_OP_SWAP,
    [BTL_AMO_CSWAP] = UCP_ATOMIC_OP_CSWAP, [BTL_AMO_ADD] = UCP_ATOMIC_OP_ADD,
    [BTL_AMO_AND] = UCP_ATOMIC_OP_AND,     [BTL_AMO_OR] = UCP_ATOMIC_OP_OR,
    [BTL_AMO_XOR] = UCP_ATOMIC_OP_XOR,
};

/* A 4- or 8-byte value in the first `size` bytes of *word. */
static inline void btl_ucx_word_set(uint64_t *word, unsigned size, uint64_t value)
{
    if (size == 8) {
        *word = value;
    } else {
        uint32_t v32 = (uint32_t)value;
        memcpy(word, &v32, 4);
    }
}

static inline uint64_t btl_ucx_word_get(const uint64_t *word, unsigned size)
{
    uint32_t v32;

    if (size == 8) {
        return *word;
    }
    memcpy(&v32, word, 4);
    return v32;
}

static util_status_t btl_ucx_amo_fetch(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                       btl_rkey_t *rkey, uint64_t operand, uint64_t compare,
                                       uint64_t *result_p)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(ep->iface);
    uint64_t value = 0, reply = 0;
    ucp_request_param_t param;
    util_status_t status = btl_ucx_amo_check(op, size, raddr);

    if (status == UTIL_OK) {
        status = btl_ucx_batch_out(uif, btl_ucx_ep(ep));
    }
    if (status != UTIL_OK) {
        return status;
    }
    btl_ucx_rma_issued(uif);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype = ucp_dt_make_contig(size);
    param.reply_buffer = &reply;
    if (op == BTL_AMO_CSWAP) {
        /* UCP: the buffer holds the compare value, the reply buffer the new one. */
        btl_ucx_word_set(&value, size, compare);
        btl_ucx_word_set(&reply, size, operand);
    } else if (op != BTL_AMO_FETCH) {
        btl_ucx_word_set(&value, size, operand);
    }
    status = btl_ucx_wait(uif,
                          ucp_atomic_op_nbx(btl_ucx_uep(ep), btl_ucx_amo_op[op], &value, 1, raddr,
                                            btl_ucx_rkey(rkey), &param),
                          "fetching atomic", ep->peer);
    if (status == UTIL_OK) {
        *result_p = btl_ucx_word_get(&reply, size);
    }
    return status;
}

/* The reply lands straight in *result (UCP writes size bytes there; for
 * CSWAP it first reads the new value from it), and the request waits in
 * the pending list: quiet's flush completes it, so fetches to several
 * peers are in flight together. The operand lives until then in memory
 * the pending entry owns (UCP may read it until completion). */
static util_status_t btl_ucx_amo_fetch_nbi(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                           uint64_t raddr, btl_rkey_t *rkey, uint64_t operand,
                                           uint64_t compare, void *result)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(ep->iface);
    ucp_request_param_t param;
    ucs_status_ptr_t request;
    uint64_t *value;
    util_status_t status = btl_ucx_amo_check(op, size, raddr);

    if (status == UTIL_OK) {
        status = btl_ucx_batch_out(uif, btl_ucx_ep(ep));
    }
    if (status != UTIL_OK) {
        return status;
    }
    value = calloc(1, sizeof(*value));
    if (value == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    btl_ucx_rma_issued(uif);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype = ucp_dt_make_contig(size);
    param.reply_buffer = result;
    if (op == BTL_AMO_CSWAP) {
        btl_ucx_word_set(value, size, compare);
        memcpy(result, &operand, size); /* little-endian: the low bytes */
    } else if (op != BTL_AMO_FETCH) {
        btl_ucx_word_set(value, size, operand);
    }
    request = ucp_atomic_op_nbx(btl_ucx_uep(ep), btl_ucx_amo_op[op], value, 1, raddr,
                                btl_ucx_rkey(rkey), &param);
    if (UCS_PTR_IS_PTR(request) && btl_ucx_pending_add(uif, request, NULL, ep->peer) == UTIL_OK) {
        uif->pending[uif->num_pending - 1].owned = value;
        return UTIL_OK;
    }
    status = btl_ucx_wait(uif, request, "fetching atomic", ep->peer); /* done, failed, or no room */
    if (UCS_PTR_IS_PTR(request) && uif->num_pending > 0 &&
        uif->pending[uif->num_pending - 1].request == request) {
        uif->pending[uif->num_pending - 1].owned = value; /* timed out: kept pending */
    } else {
        free(value);
    }
    return status;
}

static util_status_t btl_ucx_amo_post(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                      btl_rkey_t *rkey, uint64_t operand)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(ep->iface);
    ucp_request_param_t param;
    uint64_t value = 0, old = 0;
    util_status_t status = btl_ucx_amo_check(op, size, raddr);

    if (status != UTIL_OK) {
        return status;
    }
    if (op == BTL_AMO_FETCH || op == BTL_AMO_SWAP || op == BTL_AMO_CSWAP) {
        util_error("btl/ucx: atomic op %d has no non-fetching form", (int)op);
        return UTIL_ERR_INVALID;
    }
    if (uif->am_amo) {
        /* applied by the target's worker with CPU atomics, as UCX's own
         * emulation does, but without its completion message back */
        btl_batch_rec_t rec = {BTL_BATCH_AMO, size | (uint32_t)op << 8, raddr, {operand, 0}};
        return btl_ucx_batch_add(uif, ep, &rec, NULL, 0, 0, 1);
    }
    status = btl_ucx_batch_out(uif, btl_ucx_ep(ep));
    if (status != UTIL_OK) {
        return status;
    }
    btl_ucx_rma_issued(uif);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_contig(size);
    if (op == BTL_AMO_SET) {
        /* UCP has no non-fetching store: a swap whose old value we drop. */
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer = &old;
    }
    btl_ucx_word_set(&value, size, operand);
    /* Operand (and SET's old value) live on our stack: a request UCP keeps
     * must finish before we return (small atomics mostly go out at once). */
    return btl_ucx_wait(uif,
                        ucp_atomic_op_nbx(btl_ucx_uep(ep), btl_ucx_amo_op[op], &value, 1, raddr,
                                          btl_ucx_rkey(rkey), &param),
                        "atomic", ep->peer);
}

/* A non-fetching atomic into the peer's batch, where atomics go as active
 * messages (else amo_post). */
static util_status_t btl_ucx_amo_post_batch(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                            uint64_t raddr, btl_rkey_t *rkey, uint64_t operand)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(ep->iface);
    util_status_t status = btl_ucx_amo_check(op, size, raddr);

    if (status != UTIL_OK) {
        return status;
    }
    if (uif->am_amo && (op == BTL_AMO_SET || op >= BTL_AMO_ADD)) {
        btl_batch_rec_t rec = {BTL_BATCH_AMO, size | (uint32_t)op << 8, raddr, {operand, 0}};
        return btl_ucx_batch_add(uif, ep, &rec, NULL, 0, 1, 1);
    }
    return btl_ucx_amo_post(ep, op, size, raddr, rkey, operand);
}

/* ---- notified flags ---- */

/* The 8-byte flag: one aligned 8-byte write wherever UCX places it (an
 * RDMA write, or a copy by the target's worker, which moves 8 aligned
 * bytes with one store), so a reader never sees it torn. A swap would be
 * atomic by contract but costs a reply per flag. */
static util_status_t btl_ucx_flag_post(btl_ucx_iface_t *uif, btl_ep_t *ep, uint64_t flag_raddr,
                                       btl_rkey_t *flag_rkey, uint64_t value)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    util_status_t status;

    if ((flag_raddr & 7) != 0) {
        util_error("btl/ucx: flag address 0x%llx is not 8-byte aligned",
                   (unsigned long long)flag_raddr);
        return UTIL_ERR_INVALID;
    }
    status = btl_ucx_batch_out(uif, btl_ucx_ep(ep));
    if (status != UTIL_OK) {
        return status;
    }
    btl_ucx_rma_issued(uif);
    /* value is on our stack: a request UCP keeps must finish first. */
    return btl_ucx_wait(uif,
                        ucp_put_nbx(btl_ucx_uep(ep), &value, sizeof(value), flag_raddr,
                                    btl_ucx_rkey(flag_rkey), &param),
                        "put_flag", ep->peer);
}

/* put_flag as one active message, a batch closed by the flag's record: the
 * target's worker (its PE polling, or the helper thread) copies the data
 * and then stores the flag with release order. Without an RDMA device UCX
 * emulates puts with messages anyway, and a put, a fence and a flag put
 * are two messages where this is one; puts held for this peer go in the
 * same message. Remote completion: btl_ucx_quiet's ping behind the
 * messages of each peer (not for internal signals, btl_comp_signal, which
 * only their receiver awaits: a barrier's quiet would otherwise ping
 * behind the previous barrier). */
static util_status_t btl_ucx_am_put_flag(btl_ucx_iface_t *uif, btl_ep_t *ep, const void *src,
                                         size_t len, uint64_t raddr, uint64_t flag_raddr,
                                         uint64_t flag_value, int for_quiet)
{
    btl_batch_rec_t rec = {BTL_BATCH_PUT_FLAG, (uint32_t)len, raddr, {flag_raddr, flag_value}};

    if ((flag_raddr & 7) != 0) {
        util_error("btl/ucx: flag address 0x%llx is not 8-byte aligned",
                   (unsigned long long)flag_raddr);
        return UTIL_ERR_INVALID;
    }
    return btl_ucx_batch_add(uif, ep, &rec, src, len, 0, for_quiet);
}

/* Answers a ping (alone, or at a batch's end) with a pong. */
static void btl_ucx_pong(const ucp_am_recv_param_t *param)
{
    ucp_request_param_t reply = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_AM_SEND_FLAG_EAGER};
    ucs_status_ptr_t request;

    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        util_error("btl/ucx: ping without a reply endpoint");
        return;
    }
    request = ucp_am_send_nbx(param->reply_ep, BTL_UCX_AM_PONG, NULL, 0, &btl_ucx_am_padding,
                              sizeof(btl_ucx_am_padding), &reply);
    if (UCS_PTR_IS_PTR(request)) {
        ucp_request_free(request); /* nothing to keep alive: it completes on its own */
    }
}

/* A batch: its records in order, then the pong quiet asked for. */
static ucs_status_t btl_ucx_am_batch_recv(void *arg, const void *header, size_t header_length,
                                          void *data, size_t length,
                                          const ucp_am_recv_param_t *param)
{
    btl_ucx_am_batch_t hdr;

    (void)arg;
    if (header_length != sizeof(hdr) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        util_error("btl/ucx: malformed batch (%zu-byte header, %zu bytes)", header_length, length);
        return UCS_OK;
    }
    memcpy(&hdr, header, sizeof(hdr));
    if (hdr.bytes > length) {
        util_error("btl/ucx: malformed batch (%u bytes of records in %zu)", hdr.bytes, length);
        return UCS_OK;
    }
    (void)btl_batch_apply(data, hdr.bytes, "btl/ucx");
    if (hdr.ping) {
        btl_ucx_pong(param);
    }
    return UCS_OK;
}

static ucs_status_t btl_ucx_am_pong_recv(void *arg, const void *header, size_t header_length,
                                         void *data, size_t length,
                                         const ucp_am_recv_param_t *param)
{
    btl_ucx_iface_t *uif = arg;

    (void)header, (void)header_length, (void)data, (void)length, (void)param;
    __atomic_add_fetch(&uif->pongs, 1, __ATOMIC_RELEASE);
    return UCS_OK;
}

/* Remote completion of the active messages since the last quiet: one ping
 * per peer that got any, then wait for every pong. Quiet calls it after its
 * flush, so the pings need no fence (under UCX's strong fence one would be
 * a second flush). */
static util_status_t btl_ucx_am_complete(btl_ucx_iface_t *uif)
{
    btl_wait_t w = BTL_WAIT_INIT;
    util_status_t status = UTIL_OK;

    btl_helper_lock(&uif->batch_lock);
    for (int i = 0; i < uif->num_am_dirty; i++) {
        btl_ucx_ep_t *uep = uif->am_dirty[i];

        uep->am_dirty = 0;
        if (status == UTIL_OK) {
            /* the ping: the batch held for this peer, or an empty one */
            status = btl_ucx_batch_send(uif, uep, 1, 0);
            uif->pings += status == UTIL_OK;
        }
    }
    uif->num_am_dirty = 0;
    if (status == UTIL_OK) {
        status = btl_ucx_batch_flush(uif, 0); /* empty by now: clears the list */
    }
    btl_helper_unlock(&uif->batch_lock);
    while (status == UTIL_OK && __atomic_load_n(&uif->pongs, __ATOMIC_ACQUIRE) < uif->pings) {
        btl_ucx_touch(uif);
        unsigned worked = ucp_worker_progress(uif->worker);
        if (__atomic_load_n(&uif->pongs, __ATOMIC_ACQUIRE) < uif->pings) {
            status = worked != 0 ? btl_wait_busy(&w, &uif->bound, "quiet", -1)
                                 : btl_wait_tick(&w, &uif->bound, "quiet", -1);
        }
    }
    if (status != UTIL_OK) {
        uif->pings = uif->pongs; /* a lost pong must not hold up every later quiet */
    }
    return status;
}

static util_status_t btl_ucx_put_flag(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                      uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                      btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(ep->iface);
    util_status_t status;

    /* complete on return; btl_comp_signal: quiet need not complete it */
    if (uif->am_flag && len <= BTL_UCX_AM_MAX) {
        return btl_ucx_am_put_flag(uif, ep, src, len, raddr, flag_raddr, flag_value,
                                   comp != &btl_comp_signal);
    }
    if (len > 0) {
        status = btl_ucx_put(ep, src, len, lmem, raddr, rkey, NULL);
        if (status != UTIL_OK) {
            return status;
        }
        status = btl_ucx_fence_pe(uif, ep->peer);
        if (status != UTIL_OK) {
            return status;
        }
    }
    return btl_ucx_flag_post(uif, ep, flag_raddr, flag_rkey, flag_value);
}

/* One active message where put_flag is one (an rpipe channel-mode message
 * and its post record: two sends over TCP were the cost): the record, then
 * the put_flag, closing the peer's batch; else the caller does put_flag,
 * then put. */
static util_status_t btl_ucx_put_flag_rec(btl_ep_t *ep, const void *src, size_t len,
                                          btl_mem_t *lmem, uint64_t raddr, btl_rkey_t *rkey,
                                          uint64_t flag_raddr, btl_rkey_t *flag_rkey,
                                          uint64_t flag_value, const void *rec, size_t rec_len,
                                          uint64_t rec_raddr, btl_rkey_t *rec_rkey)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(ep->iface);
    btl_ucx_ep_t *uep = btl_ucx_ep(ep);
    btl_batch_rec_t put = {BTL_BATCH_PUT, (uint32_t)rec_len, rec_raddr, {0, 0}};
    btl_batch_rec_t flag = {BTL_BATCH_PUT_FLAG, (uint32_t)len, raddr, {flag_raddr, flag_value}};
    util_status_t status;

    (void)lmem, (void)rkey, (void)flag_rkey, (void)rec_rkey; /* active messages need no keys */
    if (!uif->am_flag || len > BTL_UCX_AM_MAX || rec_len > BTL_PUT_REC_MAX ||
        (flag_raddr & 7) != 0) {
        return UTIL_ERR_UNSUPPORTED;
    }
    btl_ucx_am_dirty(uif, uep);
    btl_helper_lock(&uif->batch_lock);
    status = btl_ucx_batch_room(
        uif, uep, btl_batch_rec_size(put.kind, rec_len) + btl_batch_rec_size(flag.kind, len));
    if (status == UTIL_OK) {
        btl_ucx_batch_append(uep, &put, rec, rec_len);
        btl_ucx_batch_append(uep, &flag, src, len);
        status = btl_ucx_batch_send(uif, uep, 0, 0);
    }
    btl_helper_unlock(&uif->batch_lock);
    return status;
}

static util_status_t btl_ucx_get_flag(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                      uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                      btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(ep->iface);
    util_status_t status = btl_ucx_get(ep, dst, len, lmem, raddr, rkey, NULL);

    (void)comp; /* complete on return */
    if (status != UTIL_OK) {
        return status;
    }
    return btl_ucx_flag_post(uif, ep, flag_raddr, flag_rkey, flag_value);
}

/* ---- ordering and completion ---- */
static util_status_t btl_ucx_fence(btl_ep_t *ep)
{
    return btl_ucx_fence_pe(btl_ucx_iface(ep->iface), ep->peer);
}

/* One worker-wide fence serves every peer; batches need none (each is in
 * order, and goes before anything else to its peer). */
static util_status_t btl_ucx_fence_all(btl_iface_t *iface)
{
    return btl_ucx_fence_pe(btl_ucx_iface(iface), -1);
}

static util_status_t btl_ucx_quiet(btl_iface_t *iface)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(iface);
    ucp_request_param_t param = {.op_attr_mask = 0};
    util_status_t status;

    status = btl_ucx_wait(uif, ucp_worker_flush_nbx(uif->worker, &param), "quiet", -1);
    if (status == UTIL_OK) {
        btl_ucx_ordered(uif);
    }
    /* Flushed: every pending request has finished; count them. */
    btl_ucx_reap(uif, 0);
    if (uif->num_am_dirty > 0) {
        util_status_t am = btl_ucx_am_complete(uif);
        status = status == UTIL_OK ? am : status;
    }
    return status;
}

static util_status_t btl_ucx_progress(btl_iface_t *iface)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(iface);

    btl_ucx_touch(uif);
    if (__atomic_load_n(&uif->num_batched, __ATOMIC_ACQUIRE) > 0) {
        util_status_t status;

        btl_helper_lock(&uif->batch_lock);
        status = btl_ucx_batch_flush(uif, 0); /* the PE waits: what it held back goes */
        btl_helper_unlock(&uif->batch_lock);
        if (status != UTIL_OK) {
            return status;
        }
    }
    if (ucp_worker_progress(uif->worker) != 0) {
        util_wait_note_served();
    }
    if (uif->num_pending > 0) {
        uif->progress_calls++;
        btl_ucx_reap(uif, uif->progress_calls % BTL_UCX_REAP_EVERY == 0);
    }
    return UTIL_OK;
}

/* ---- helper thread (btl_helper.h) ---- */
/* Progress until the worker is idle, the PE is back (with peers' traffic
 * flowing the worker is never idle, and each call takes the MULTI worker's
 * lock from the PE: that halved random access) or a bounded number of
 * passes (so a stop is seen). */
static void btl_ucx_drain(void *arg)
{
    btl_ucx_iface_t *uif = arg;
    uint64_t activity = btl_helper_activity(&uif->helper);

    /* The PE stayed away a whole interval: what it held back goes now. */
    if (__atomic_load_n(&uif->num_batched, __ATOMIC_ACQUIRE) > 0 &&
        btl_helper_trylock(&uif->batch_lock)) {
        (void)btl_ucx_batch_flush(uif, 1);
        btl_helper_unlock(&uif->batch_lock);
    }
    for (int pass = 0; pass < BTL_UCX_DRAIN_PASSES; pass++) {
        if (ucp_worker_progress(uif->worker) == 0) {
            return;
        }
        util_wait_note_served();
        if (btl_helper_activity(&uif->helper) != activity) {
            return;
        }
    }
}

static int btl_ucx_block(void *arg, int timeout_ms)
{
    btl_ucx_iface_t *uif = arg;
    struct pollfd pfd = {uif->event_fd, POLLIN, 0};
    ucs_status_t ret;

    if (uif->event_fd < 0) {
        return 0;
    }
    ret = ucp_worker_arm(uif->worker);
    if (ret == UCS_ERR_BUSY) {
        return 1; /* events queued: progress again at once */
    }
    if (ret != UCS_OK) {
        return 0;
    }
    /* Batches waiting: back within an interval to send them, as the PE may
     * not return soon. The first batch while we sleep wakes us
     * (btl_ucx_batch_add). */
    __atomic_store_n(&uif->helper_asleep, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&uif->num_batched, __ATOMIC_SEQ_CST) > 0) {
        long ms = uif->helper.interval_usec / 1000;
        timeout_ms = ms < 1 ? 1 : ms < timeout_ms ? (int)ms : timeout_ms;
    }
    (void)poll(&pfd, 1, timeout_ms);
    __atomic_store_n(&uif->helper_asleep, 0, __ATOMIC_RELAXED);
    return 1;
}

static void btl_ucx_wake(void *arg)
{
    btl_ucx_iface_t *uif = arg;

    (void)ucp_worker_signal(uif->worker);
}

/* ---- memory ---- */
static util_status_t btl_ucx_mem_reg(btl_iface_t *iface, void *addr, size_t size, btl_mr_t **mr_p)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(iface);
    ucp_mem_map_params_t params;
    btl_ucx_mr_t *mr;
    void *rkey_buf;
    size_t rkey_len;
    ucs_status_t ret;

    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = addr;
    params.length = size;
    ret = ucp_mem_map(uif->context, &params, &mr->memh);
    if (ret != UCS_OK) {
        util_error("btl/ucx: ucp_mem_map(%p, %zu): %s", addr, size, ucs_status_string(ret));
        free(mr);
        return btl_ucx_status(ret);
    }
    ret = ucp_rkey_pack(uif->context, mr->memh, &rkey_buf, &rkey_len);
    if (ret != UCS_OK) {
        util_error("btl/ucx: ucp_rkey_pack: %s", ucs_status_string(ret));
        ucp_mem_unmap(uif->context, mr->memh);
        free(mr);
        return btl_ucx_status(ret);
    }
    if (rkey_len > sizeof(mr->rkey)) {
        util_error("btl/ucx: UCX's remote key takes %zu bytes, we carry at most %zu (UCX_TLS "
                   "with fewer transports makes it smaller)",
                   rkey_len, sizeof(mr->rkey));
        ucp_rkey_buffer_release(rkey_buf);
        ucp_mem_unmap(uif->context, mr->memh);
        free(mr);
        return UTIL_ERR_OVERFLOW;
    }
    memcpy(mr->rkey, rkey_buf, rkey_len);
    mr->rkey_len = rkey_len;
    ucp_rkey_buffer_release(rkey_buf);
    mr->super.iface = iface;
    mr->super.addr = addr;
    mr->super.size = size;
    *mr_p = &mr->super;
    return UTIL_OK;
}

static util_status_t btl_ucx_mem_dereg(btl_mr_t *mr_base)
{
    btl_ucx_mr_t *mr = btl_ucx_mr(mr_base);
    btl_ucx_iface_t *uif = btl_ucx_iface(mr->super.iface);
    ucs_status_t ret = ucp_mem_unmap(uif->context, mr->memh);

    free(mr);
    if (ret != UCS_OK) {
        return btl_ucx_fail("ucp_mem_unmap", -1, ret);
    }
    return UTIL_OK;
}

static util_status_t btl_ucx_rkey_pack(btl_mr_t *mr_base, void *buf, size_t bufsize, size_t *size_p)
{
    btl_ucx_mr_t *mr = btl_ucx_mr(mr_base);
    btl_ucx_packed_t head = {(uint64_t)(uintptr_t)mr->super.addr, mr->super.size};

    if (bufsize < sizeof(head) + mr->rkey_len) {
        return UTIL_ERR_TRUNCATED;
    }
    memcpy(buf, &head, sizeof(head));
    memcpy((uint8_t *)buf + sizeof(head), mr->rkey, mr->rkey_len);
    *size_p = sizeof(head) + mr->rkey_len;
    return UTIL_OK;
}

static util_status_t btl_ucx_rkey_unpack(btl_ep_t *ep, const void *buf, size_t size,
                                         btl_rkey_t **rkey_p)
{
    btl_ucx_packed_t head;
    btl_ucx_rkey_t *rk;
    ucs_status_t ret;

    if (size <= sizeof(head) || size > sizeof(head) + BTL_UCX_RKEY_MAX) {
        util_error("btl/ucx: packed key from PE %d has %zu bytes, expected %zu to %zu", ep->peer,
                   size, sizeof(head) + 1, sizeof(head) + BTL_UCX_RKEY_MAX);
        return UTIL_ERR_INVALID;
    }
    memcpy(&head, buf, sizeof(head));
    rk = calloc(1, sizeof(*rk));
    if (rk == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    ret = ucp_ep_rkey_unpack(btl_ucx_uep(ep), (const uint8_t *)buf + sizeof(head), &rk->rkey);
    if (ret != UCS_OK) {
        free(rk);
        return btl_ucx_fail("ucp_ep_rkey_unpack", ep->peer, ret);
    }
    rk->super.remote_base = head.base;
    rk->super.length = head.len;
    *rkey_p = &rk->super;
    return UTIL_OK;
}

static util_status_t btl_ucx_rkey_release(btl_rkey_t *rkey)
{
    btl_ucx_rkey_t *rk = btl_container_of(rkey, btl_ucx_rkey_t, super);

    ucp_rkey_destroy(rk->rkey);
    free(rk);
    return UTIL_OK;
}

/* ---- endpoints ---- */

/* RMB_INFO: the UCX transports an endpoint uses, from ucp_ep_print_info's
 * "lane[i]: n:tcp/lo.0 md[0] ... rma_bw#0 am" lines (UCX 1.13 has no query
 * for them), printed once per peer class. */
static void btl_ucx_tell_transports(btl_ucx_iface_t *uif, btl_ucx_ep_t *uep, int peer)
{
    int on_node = bootstrap_node_of(peer) == bootstrap_node_id();
    char *text = NULL, *line, *save = NULL, lanes[512] = "";
    size_t size = 0, used = 0;
    FILE *out;

    if (!uif->info || uif->info_told[on_node]) {
        return;
    }
    uif->info_told[on_node] = 1;
    out = open_memstream(&text, &size);
    if (out == NULL) {
        return;
    }
    ucp_ep_print_info(uep->ep, out);
    fclose(out);
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *lane = strstr(line, "lane["), *colon, *end;

        if (lane == NULL || (colon = strchr(lane + 5, ':')) == NULL ||
            (colon = strchr(colon + 1, ':')) == NULL) {
            continue;
        }
        end = strpbrk(colon + 1, " \t");
        used += (size_t)snprintf(lanes + used, used < sizeof(lanes) ? sizeof(lanes) - used : 0,
                                 "%s%.*s", used > 0 ? ", " : "",
                                 (int)(end != NULL ? end - colon - 1 : (long)strlen(colon + 1)),
                                 colon + 1);
    }
    printf("rmb: btl/ucx to PE %d (%s): %s\n", peer, on_node ? "on-node" : "off-node",
           used > 0 ? lanes : "(no lanes reported)");
    fflush(stdout);
    free(text);
}

/* UCX calls this (from whichever thread drives the worker) when the
 * connection to a peer breaks: operations to it fail from now on, each
 * with its own one-line error. Only logged at debug level: peers that
 * finish first close their side while we may still be in the last
 * barrier, which looks the same. */
static void btl_ucx_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    btl_ucx_ep_t *uep = arg;

    (void)ep;
    if (__atomic_exchange_n(&uep->failed, status, __ATOMIC_RELAXED) == UCS_OK) {
        util_debug("btl/ucx: connection to PE %d closed: %s", uep->super.peer,
                   ucs_status_string(status));
    }
}

static util_status_t btl_ucx_ep_connect(btl_iface_t *iface, int peer, btl_ep_t **ep_p)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(iface);
    char key[BOOTSTRAP_KEY_MAX];
    ucp_ep_params_t params;
    btl_ucx_ep_t *uep;
    uint8_t *addr;
    size_t got;
    util_status_t status;
    ucs_status_t ret;

    status = btl_iface_key(iface, "addr", key, sizeof(key));
    if (status != UTIL_OK) {
        return status;
    }
    addr = malloc(BTL_UCX_ADDR_MAX);
    uep = calloc(1, sizeof(*uep));
    if (addr == NULL || uep == NULL) {
        free(addr);
        free(uep);
        return UTIL_ERR_NO_MEMORY;
    }
    status = bootstrap_get(peer, key, addr, BTL_UCX_ADDR_MAX, &got);
    if (status != UTIL_OK) {
        util_error("btl/ucx: no worker address for PE %d (%s): %s", peer, key,
                   util_status_string(status));
        free(addr);
        free(uep);
        return status;
    }
    uep->super.peer = peer; /* for the error handler's message */
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = (const ucp_address_t *)addr;
    /* Peer failure handling (btl_ucx_err_mode_peer): a dead peer fails
     * operations at once. It also keeps every endpoint, the one to myself
     * included, off UCX 1.13's shared-memory and "self" transports, which
     * do not offer it; "self" applies no fetching AND, OR or XOR (the word
     * keeps its value: the conformance suite's fetch-or case). The cost:
     * RMB_BTL=ucx on one node runs over TCP (auto uses btl/shm there).
     * Without it the handler still hears of transport errors. */
    params.err_mode = uif->err_peer ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    params.err_handler.cb = btl_ucx_ep_error;
    params.err_handler.arg = uep;
    ret = ucp_ep_create(uif->worker, &params, &uep->ep);
    free(addr);
    if (ret != UCS_OK) {
        free(uep);
        return btl_ucx_fail("ucp_ep_create", peer, ret);
    }
    btl_ucx_tell_transports(uif, uep, peer);
    *ep_p = &uep->super;
    return UTIL_OK;
}

static util_status_t btl_ucx_ep_disconnect(btl_ep_t *ep)
{
    btl_ucx_iface_t *uif = btl_ucx_iface(ep->iface);
    btl_ucx_ep_t *uep = btl_ucx_ep(ep);
    ucp_request_param_t param;
    util_status_t status;

    /* Everything was flushed and the job passed a barrier (btl_ctx_destroy):
     * no handshake with a peer that may already be gone. UCX allows that
     * only with peer error handling; without it the close flushes, which
     * our bounded wait keeps from hanging on a dead peer, and a peer that
     * closed its side first is how a job ends, not an error. */
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = uif->err_peer ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    status = btl_ucx_wait_but(uif, ucp_ep_close_nbx(uep->ep, &param), "closing the endpoint",
                              ep->peer, !uif->err_peer);
    for (int i = 0; uep->am_dirty && i < uif->num_am_dirty; i++) {
        if (uif->am_dirty[i] == uep) {
            uif->am_dirty[i] = uif->am_dirty[--uif->num_am_dirty];
            break;
        }
    }
    btl_helper_lock(&uif->batch_lock);
    for (int i = 0; uep->batched && i < uif->num_batched; i++) {
        if (uif->batched[i] == uep) {
            uif->batched[i] = uif->batched[--uif->num_batched];
            break;
        }
    }
    btl_helper_unlock(&uif->batch_lock);
    free(uep->batch);
    free(uep);
    return status;
}

/* ---- iface ---- */
static void btl_ucx_teardown(btl_ucx_iface_t *uif)
{
    btl_helper_stop(&uif->helper);
    for (unsigned i = 0; i < uif->num_pending; i++) {
        ucp_request_cancel(uif->worker, uif->pending[i].request);
        ucp_request_free(uif->pending[i].request);
    }
    free(uif->am_dirty);
    free(uif->batched);
    if (uif->address != NULL) {
        ucp_worker_release_address(uif->worker, uif->address);
    }
    if (uif->worker != NULL) {
        ucp_worker_destroy(uif->worker);
    }
    for (unsigned i = 0; i < uif->num_pending; i++) {
        free(uif->pending[i].owned); /* no longer read: the worker is gone */
    }
    free(uif->pending);
    if (uif->context != NULL) {
        ucp_cleanup(uif->context);
    }
    free(uif);
}

static util_status_t btl_ucx_iface_close(btl_iface_t *iface)
{
    btl_ucx_teardown(btl_ucx_iface(iface));
    return UTIL_OK;
}

/* Atomics go to a NIC only where an RDMA device exists (InfiniBand, RoCE,
 * iWARP); UCX emulates them with CPU atomics in the target elsewhere. */
static int btl_ucx_have_rdma_device(void)
{
    DIR *dir = opendir("/sys/class/infiniband");
    struct dirent *entry;
    int found = 0;

    if (dir == NULL) {
        return 0;
    }
    while (!found && (entry = readdir(dir)) != NULL) {
        found = entry->d_name[0] != '.';
    }
    closedir(dir);
    return found;
}

static util_status_t btl_ucx_iface_open(btl_ctx_t *ctx, int index, btl_iface_t **iface_p);

static const btl_ops_t btl_ucx_ops = {
    .iface_close = btl_ucx_iface_close,
    .ep_connect = btl_ucx_ep_connect,
    .ep_disconnect = btl_ucx_ep_disconnect,
    .mem_alloc = btl_stub_mem_alloc,
    .mem_remap = btl_stub_mem_remap,
    .mem_reg = btl_ucx_mem_reg,
    .mem_dereg = btl_ucx_mem_dereg,
    .rkey_pack = btl_ucx_rkey_pack,
    .rkey_unpack = btl_ucx_rkey_unpack,
    .rkey_release = btl_ucx_rkey_release,
    .put = btl_ucx_put,
    .get = btl_ucx_get,
    .put_flag = btl_ucx_put_flag,
    .put_flag_rec = btl_ucx_put_flag_rec,
    .get_flag = btl_ucx_get_flag,
    .amo_post = btl_ucx_amo_post,
    .put_batch = btl_ucx_put_batch,
    .amo_post_batch = btl_ucx_amo_post_batch,
    .amo_fetch = btl_ucx_amo_fetch,
    .amo_fetch_nbi = btl_ucx_amo_fetch_nbi,
    .fence = btl_ucx_fence,
    .fence_all = btl_ucx_fence_all,
    .quiet = btl_ucx_quiet,
    .progress = btl_ucx_progress,
};

/* UCX's TCP segments default to 8 KiB sent, 64 KiB received: 4 MiB puts
 * and gets between 2 emulated nodes ran at 0.65-1.16 GB/s, with 64 KiB /
 * 256 KiB at 1.87-3.26 GB/s (small operations unchanged; docs/btl_ucx.md).
 * UCX reads its transports' settings from the environment when it opens
 * them (ucp_config_modify does not reach them): set there, only where the
 * user has not. */
static void btl_ucx_tune(void)
{
    (void)setenv("UCX_TCP_TX_SEG_SIZE", "64K", 0);
    (void)setenv("UCX_TCP_RX_SEG_SIZE", "256K", 0);
}

/* One memory domain's transports, "tl/device" each (UCT's view: what
 * UCP may choose from; UCX_TLS narrows it at run time). */
static void btl_ucx_describe_md(uct_component_h comp, const char *md_name,
                                btl_describe_func_t report, void *arg)
{
    uct_tl_resource_desc_t *tls;
    uct_md_config_t *config;
    unsigned ntls;
    uct_md_h md;
    char line[128];

    if (uct_md_config_read(comp, NULL, NULL, &config) != UCS_OK) {
        return;
    }
    if (uct_md_open(comp, md_name, config, &md) == UCS_OK) {
        if (uct_md_query_tl_resources(md, &tls, &ntls) == UCS_OK) {
            for (unsigned i = 0; i < ntls; i++) {
                snprintf(line, sizeof(line), "%s/%s", tls[i].tl_name, tls[i].dev_name);
                report(arg, "ucx", "transport", line);
            }
            uct_release_tl_resource_list(tls);
        }
        uct_md_close(md);
    }
    uct_config_release(config);
}

/* UCX's version, its transports, and whether UCP starts with the features
 * the backend asks for (RMA and 32/64-bit atomics). */
static int btl_ucx_describe(btl_describe_func_t report, void *arg)
{
    unsigned major, minor, release, ncomps;
    uct_component_h *comps;
    ucp_params_t params;
    ucp_config_t *config;
    ucp_context_h context;
    char line[64];
    int usable = 0;

    ucp_get_version(&major, &minor, &release);
    snprintf(line, sizeof(line), "UCX %u.%u.%u", major, minor, release);
    report(arg, "ucx", "library", line);
    if (uct_query_components(&comps, &ncomps) == UCS_OK) {
        for (unsigned c = 0; c < ncomps; c++) {
            uct_component_attr_t attr;

            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
            if (uct_component_query(comps[c], &attr) != UCS_OK || attr.md_resource_count == 0) {
                continue;
            }
            attr.md_resources = calloc(attr.md_resource_count, sizeof(*attr.md_resources));
            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
            if (attr.md_resources != NULL && uct_component_query(comps[c], &attr) == UCS_OK) {
                for (unsigned m = 0; m < attr.md_resource_count; m++) {
                    btl_ucx_describe_md(comps[c], attr.md_resources[m].md_name, report, arg);
                }
            }
            free(attr.md_resources);
        }
        uct_release_component_list(comps);
    }
    btl_ucx_tune();
    if (ucp_config_read(NULL, NULL, &config) == UCS_OK) {
        params.field_mask = UCP_PARAM_FIELD_FEATURES;
        params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
        if (ucp_init(&params, config, &context) == UCS_OK) {
            usable = 1;
            ucp_cleanup(context);
        }
        ucp_config_release(config);
    }
    return usable;
}

const btl_component_t btl_ucx_component = {
    .name = "ucx",
    .on_node_only = 0,
    .iface_open = btl_ucx_iface_open,
    .describe = btl_ucx_describe,
};

/* RMB_UCX_AM_FLAG: auto is on unless an RDMA device exists (there a put,
 * a fence and a flag put are RDMA writes the target's CPU never sees). */
static util_status_t btl_ucx_am_flag_mode(int rdma_device, int *on_p)
{
    const char *mode = "auto";
    util_status_t status = util_env_get_string("RMB_UCX_AM_FLAG", &mode);

    if (status != UTIL_OK) {
        return status;
    }
    if (strcmp(mode, "auto") == 0) {
        *on_p = !rdma_device;
    } else if (strcmp(mode, "yes") == 0 || strcmp(mode, "no") == 0) {
        *on_p = mode[0] == 'y';
    } else {
        util_error("btl/ucx: RMB_UCX_AM_FLAG is '%s'; use auto, yes or no", mode);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

/* UCX >= 1.16 selects protocols anew unless UCX_PROTO_ENABLE says no. */
static int btl_ucx_new_protocols(void)
{
    const char *proto = getenv("UCX_PROTO_ENABLE");
    unsigned major, minor, release;

    if (proto != NULL && *proto != '\0') {
        return strchr("nN0fF", proto[0]) == NULL && strcasecmp(proto, "off") != 0;
    }
    ucp_get_version(&major, &minor, &release);
    return major > 1 || (major == 1 && minor >= 16);
}

/* Whether ucp_worker_fence is UCX's "strong" fence (from 1.14: with the new
 * protocols, several RMA lanes, or UCX_FENCE_MODE=strong): a flush of every
 * endpoint that UCX waits for in a loop without bound. */
static int btl_ucx_fence_flushes(void)
{
    const char *mode = getenv("UCX_FENCE_MODE"), *lanes = getenv("UCX_MAX_RMA_LANES");
    unsigned major, minor, release;

    ucp_get_version(&major, &minor, &release);
    if ((major == 1 && minor < 14) || (mode != NULL && strcasecmp(mode, "weak") == 0)) {
        return 0;
    }
    return (mode != NULL && strcasecmp(mode, "strong") == 0) ||
           (lanes != NULL && atoi(lanes) > 1) || btl_ucx_new_protocols();
}

/* RMB_UCX_ERR_MODE: peer error handling unless UCX's new protocol
 * selection is on (UCX_PROTO_ENABLE, the default from UCX 1.16): it offers
 * such endpoints no atomics at all ("cannot find remote protocol for:
 * amo_fetch") and no RDMA reads (gets fall back to messages the target
 * must serve), as no protocol for them implements the abort that peer
 * error handling needs. There endpoints go without it, as OSHMEM's and
 * Open MPI's do: a dead peer then shows as our wait's timeout, and the
 * launcher ends the job. */
static util_status_t btl_ucx_err_mode_peer(int *peer_p)
{
    const char *mode = "auto";
    util_status_t status = util_env_get_string("RMB_UCX_ERR_MODE", &mode);

    if (status != UTIL_OK) {
        return status;
    }
    if (strcmp(mode, "peer") == 0 || strcmp(mode, "none") == 0) {
        *peer_p = mode[0] == 'p';
    } else if (strcmp(mode, "auto") != 0) {
        util_error("btl/ucx: RMB_UCX_ERR_MODE is '%s'; use auto, peer or none", mode);
        return UTIL_ERR_INVALID;
    } else {
        *peer_p = !btl_ucx_new_protocols();
    }
    return UTIL_OK;
}

/* RMB_UCX_AM_PUT_MAX: -1 follows RMB_UCX_AM_FLAG (where the target's CPU
 * handles RMA anyway, a message the target applies needs no completion
 * message back). Atomics go as messages only without an RDMA device: a
 * NIC's atomics are not atomic with the target CPU's. */
static util_status_t btl_ucx_am_put_mode(btl_ucx_iface_t *uif)
{
    long max = -1;
    util_status_t status = util_env_get_int("RMB_UCX_AM_PUT_MAX", &max);

    if (status != UTIL_OK) {
        return status;
    }
    if (max < -1 || max > BTL_UCX_AM_MAX) {
        util_error("btl/ucx: RMB_UCX_AM_PUT_MAX is %ld; use -1 (auto) or 0 to %d bytes", max,
                   BTL_UCX_AM_MAX);
        return UTIL_ERR_INVALID;
    }
    if (max != 0 && !uif->am_flag) {
        max = 0; /* one mechanism for ordering: active messages behind fences */
    }
    uif->am_put_max = max < 0 ? BTL_UCX_AM_MAX : (size_t)max;
    uif->am_amo = uif->am_put_max > 0 && !uif->rdma_device;
    return UTIL_OK;
}

/* RMB_UCX_AM_BATCH: bytes held back per peer (0: none); only where puts
 * and atomics go as active messages. The buffer holds at least the
 * largest message (put_flag_rec's). */
static util_status_t btl_ucx_batch_mode(btl_ucx_iface_t *uif)
{
    long max = BTL_UCX_BATCH_DEFAULT;
    util_status_t status = util_env_get_int("RMB_UCX_AM_BATCH", &max);

    if (status != UTIL_OK) {
        return status;
    }
    if (max != 0 && (max < BTL_UCX_BATCH_MIN || max > BTL_UCX_BATCH_LIMIT)) {
        util_error("btl/ucx: RMB_UCX_AM_BATCH is %ld; use 0 (off) or %d to %d bytes", max,
                   BTL_UCX_BATCH_MIN, BTL_UCX_BATCH_LIMIT);
        return UTIL_ERR_INVALID;
    }
    uif->batch_max = uif->am_put_max > 0 ? (size_t)max : 0;
    uif->batch_cap = btl_batch_rec_size(BTL_BATCH_PUT, BTL_PUT_REC_MAX) +
                     btl_batch_rec_size(BTL_BATCH_PUT_FLAG, BTL_UCX_AM_MAX);
    uif->batch_cap = uif->batch_max > uif->batch_cap ? uif->batch_max : uif->batch_cap;
    return UTIL_OK;
}

static util_status_t btl_ucx_am_handlers(btl_ucx_iface_t *uif)
{
    static const struct {
        unsigned id;
        ucp_am_recv_callback_t cb;
    } handlers[] = {{BTL_UCX_AM_BATCH, btl_ucx_am_batch_recv},
                    {BTL_UCX_AM_PONG, btl_ucx_am_pong_recv}};

    for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
        ucp_am_handler_param_t param;
        ucs_status_t ret;

        param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                           UCP_AM_HANDLER_PARAM_FIELD_ARG;
        param.id = handlers[i].id;
        param.cb = handlers[i].cb;
        param.arg = uif;
        ret = ucp_worker_set_am_recv_handler(uif->worker, &param);
        if (ret != UCS_OK) {
            return btl_ucx_fail("ucp_worker_set_am_recv_handler", -1, ret);
        }
    }
    return UTIL_OK;
}

/* Whether UCX granted the thread mode a second thread needs. */
static int btl_ucx_worker_multi(ucp_worker_h worker)
{
    ucp_worker_attr_t attr;

    attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
    return ucp_worker_query(worker, &attr) == UCS_OK && attr.thread_mode == UCS_THREAD_MODE_MULTI;
}

static util_status_t btl_ucx_iface_open(btl_ctx_t *ctx, int index, btl_iface_t **iface_p)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_config_t *config;
    char key[BOOTSTRAP_KEY_MAX];
    btl_ucx_iface_t *uif;
    util_status_t status;
    ucs_status_t ret;

    uif = calloc(1, sizeof(*uif));
    if (uif == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    uif->super.ops = btl_ucx_ops;
    btl_iface_base_init(&uif->super, &btl_ucx_component, ctx, index, 0);
    uif->event_fd = -1;
    status = util_env_get_int("RMB_UCX_PROGRESS_USEC", &uif->helper.interval_usec);
    if (status == UTIL_OK) {
        status = util_env_get_bool("RMB_INFO", &uif->info);
        uif->info = uif->info && ctx->rank == 0;
    }
    if (status == UTIL_OK) {
        status = btl_wait_bound_init(&uif->bound, "btl/ucx", NULL);
    }
    if (status == UTIL_OK) {
        uif->rdma_device = btl_ucx_have_rdma_device();
        status = btl_ucx_am_flag_mode(uif->rdma_device, &uif->am_flag);
    }
    if (status == UTIL_OK) {
        status = btl_ucx_err_mode_peer(&uif->err_peer);
        uif->fence_flushes = btl_ucx_fence_flushes();
    }
    if (status == UTIL_OK) {
        status = btl_ucx_am_put_mode(uif);
    }
    if (status == UTIL_OK) {
        status = btl_ucx_batch_mode(uif);
    }
    if (status != UTIL_OK) {
        goto err;
    }
    uif->max_pending = BTL_UCX_PENDING_INIT;
    uif->pending = malloc(uif->max_pending * sizeof(*uif->pending));
    uif->am_dirty = calloc((size_t)ctx->size, sizeof(*uif->am_dirty));
    uif->batched = calloc((size_t)ctx->size, sizeof(*uif->batched));
    if (uif->pending == NULL || uif->am_dirty == NULL || uif->batched == NULL) {
        status = UTIL_ERR_NO_MEMORY;
        goto err;
    }

    btl_ucx_tune();
    ret = ucp_config_read(NULL, NULL, &config);
    if (ret != UCS_OK) {
        status = btl_ucx_fail("ucp_config_read", -1, ret);
        goto err;
    }
    if (!uif->err_peer && getenv("UCX_TLS") == NULL) {
        /* Without peer error handling UCX would also take its shared memory
         * and "self" transports, which peer error handling kept out (and
         * btl/shm serves on-node peers): "self" leaves a fetching OR to my
         * own word unapplied (UCX 1.13 and 1.16; the conformance suite's
         * atomics case). The user's UCX_TLS still decides. */
        (void)ucp_config_modify(config, "TLS", "^sm,self");
    }
    params.field_mask =
        UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64;
    if (uif->helper.interval_usec != 0) {
        params.features |= UCP_FEATURE_WAKEUP;
    }
    if (uif->am_flag) {
        params.features |= UCP_FEATURE_AM;
    }
    params.estimated_num_eps = (size_t)ctx->size;
    params.name = "rmb";
    ret = ucp_init(&params, config, &uif->context);
    ucp_config_release(config);
    if (ret != UCS_OK) {
        status = btl_ucx_fail("ucp_init (no usable UCX transport? UCX_TLS)", -1, ret);
        goto err;
    }
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode =
        uif->helper.interval_usec != 0 ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SERIALIZED;
    ret = ucp_worker_create(uif->context, &wparams, &uif->worker);
    if (ret != UCS_OK) {
        status = btl_ucx_fail("ucp_worker_create", -1, ret);
        goto err;
    }
    if (wparams.thread_mode == UCS_THREAD_MODE_MULTI && !btl_ucx_worker_multi(uif->worker)) {
        /* A UCX built without --enable-mt (Spack's default) hands out a
         * single-threaded worker: the helper's progress would race the PE's
         * and corrupt the TCP transport's state. Run without it. */
        if (ctx->rank == 0) {
            util_info("btl/ucx: this UCX (%s) was built without thread support (--enable-mt): "
                      "no progress thread; a PE busy outside rmb delays its peers",
                      ucp_get_version_string());
        }
        uif->helper.interval_usec = 0;
    }
    if (uif->am_flag) {
        status = btl_ucx_am_handlers(uif);
        if (status != UTIL_OK) {
            goto err;
        }
    }
    ret = ucp_worker_get_address(uif->worker, &uif->address, &uif->address_len);
    if (ret != UCS_OK) {
        status = btl_ucx_fail("ucp_worker_get_address", -1, ret);
        goto err;
    }
    if (uif->address_len > BTL_UCX_ADDR_MAX) {
        util_error("btl/ucx: worker address of %zu bytes, at most %d fit (UCX_TLS with fewer "
                   "transports makes it smaller)",
                   uif->address_len, BTL_UCX_ADDR_MAX);
        status = UTIL_ERR_OVERFLOW;
        goto err;
    }

    uif->super.caps = BTL_CAP_ANY_MEMORY | BTL_CAP_AMO32 | BTL_CAP_AMO64 | BTL_CAP_FLAG_ORDERED |
                      BTL_CAP_NONBLOCKING | (uif->rdma_device ? 0 : BTL_CAP_AMO_CPU) |
                      (uif->helper.interval_usec == 0 ? BTL_CAP_PE_PROGRESS : 0);

    status = btl_iface_key(&uif->super, "addr", key, sizeof(key));
    if (status == UTIL_OK) {
        status = bootstrap_put(key, uif->address, uif->address_len);
    }
    if (status != UTIL_OK) {
        goto err;
    }
    if (uif->helper.interval_usec != 0) {
        if (uif->helper.interval_usec > 0 &&
            ucp_worker_get_efd(uif->worker, &uif->event_fd) != UCS_OK) {
            uif->event_fd = -1; /* the helper then sleeps its interval */
        }
        uif->helper.drain = btl_ucx_drain;
        uif->helper.block = btl_ucx_block;
        uif->helper.wake = btl_ucx_wake;
        uif->helper.arg = uif;
        status = btl_helper_start(&uif->helper, "btl/ucx");
        if (status != UTIL_OK) {
            goto err;
        }
    }
    util_debug("btl/ucx: UCX %s, worker address %zu bytes, peer error handling %s, atomics %s, "
               "put_flag %s, puts up to %zu bytes as active messages, batches of %zu bytes, "
               "progress thread %s",
               ucp_get_version_string(), uif->address_len, uif->err_peer ? "on" : "off",
               uif->rdma_device ? "on the RDMA device" : "by the target's CPU",
               uif->am_flag ? "as one active message" : "put, fence, flag put", uif->am_put_max,
               uif->batch_max,
               !uif->helper.running ? "off"
               : uif->event_fd >= 0 ? "on (sleeps in the event fd)"
                                    : "on (interval)");
    *iface_p = &uif->super;
    return UTIL_OK;

err:
    btl_ucx_teardown(uif);
    return status;
}
