/*
 * btl/ofi: peers through libfabric (FI_EP_RDM, FI_RMA, FI_ATOMIC).
 *
 * Provider. RMB_OFI_PROVIDER (or libfabric's own FI_PROVIDER) names one,
 * e.g. "tcp;ofi_rxm", "sockets", "shm"; without either we take the first
 * RDM provider fi_getinfo offers that is not shm (shm reaches one node only)
 * and that opens.
 *
 * Addresses. iface_open enables the endpoint and publishes its fi_getname
 * bytes with bootstrap_put; the context commits and fences once. ep_connect
 * (first use of a peer) reads the peer's bytes and fi_av_insert's them:
 * connecting lazily keeps start-up O(1) per process.
 *
 * Memory registration. We accept every MR mode a provider may ask for:
 * FI_MR_LOCAL (local buffers need a descriptor: the caller's btl_mem_t, a
 * registered bounce buffer, or the iface's registered scratch words for
 * atomics), FI_MR_VIRT_ADDR (remote addresses are virtual, else offsets from
 * the registered base, kept in the rkey), FI_MR_PROV_KEY (the key comes from
 * fi_mr_key, else we hand out iface-unique keys), FI_MR_ENDPOINT (the MR is
 * bound to our endpoint and enabled) and FI_MR_ALLOCATED (we only register
 * memory that exists). Keys longer than 8 bytes (FI_MR_RAW) are not taken.
 *
 * Completions. Two counters count finished writes/base atomics and
 * reads/fetching atomics. Every write and atomic carries
 * FI_DELIVERY_COMPLETE, so a counter that caught up with what we posted
 * means the data is in the target's memory. CQ entries are asked for only
 * where one operation's own completion matters (FI_SELECTIVE_COMPLETION +
 * FI_COMPLETION): a request (btl_ofi_req_t, the op's context) finishes a
 * non-blocking operation in its btl_comp_t, or frees a bounce-ring slot.
 * quiet = both counters caught up and no request pending. Errors surface on
 * the counters' error counts and the CQ (fi_cq_readerr), logged once.
 *
 * Local completion. Puts up to the inject size are copied by the provider;
 * puts up to RMB_OFI_EAGER_SIZE are copied into a slot of a registered
 * bounce ring and posted: both return at once. Larger puts and gets with a
 * btl_comp_t return UTIL_IN_PROGRESS (one request per max_msg chunk) and
 * complete from progress; without one they wait.
 *
 * Bounded waits. Every wait (counters, requests, retries after FI_EAGAIN)
 * fails with UTIL_ERR_TIMEOUT after RMB_BTL_TIMEOUT_SEC and logs the
 * operation and the peer; progress fails a non-blocking operation's
 * btl_comp_t the same way.
 *
 * Put-with-flag (RMB_OFI_FLAG_ORDER=auto|native|fence|message|wait).
 * native: the flag write follows the payload at once, because the provider
 * promises write-after-write placement order (FI_ORDER_RMA_WAW and a
 * max_order_waw_size covering the payload). fence: the flag carries
 * FI_FENCE (provider has the FI_FENCE capability). message: payload and
 * flag travel as one message (FI_MSG) that the target's progress applies:
 * copy, then a release store of the flag (see "Messages"). wait: we wait
 * for the payload's delivery completion, then post the flag (a round trip,
 * always correct). auto picks native, else fence, else message, else
 * wait: sockets gets native, tcp;ofi_rxm message (it reports
 * max_order_waw_size 0 once FI_ATOMIC is asked for).
 *
 * Messages, batches, pings: btl_ofi_am.c.
 *
 * Atomics. fi_query_atomic tells at open which (op, 32/64-bit) pairs the
 * provider has in base, fetching and compare form. A missing form is
 * emulated: base through the fetching form, fetching through a
 * compare-and-swap loop; without compare-and-swap for a size the op returns
 * UTIL_ERR_UNSUPPORTED.
 *
 * Progress. Providers with manual data progress (tcp;ofi_rxm, shm) only
 * serve incoming RMA and atomics while someone calls into them. A helper
 * thread (btl_helper.h, shared with btl/ucx) serves them while the PE
 * stays away from the provider: it sleeps in the CQ's wait fd until
 * traffic arrives, and only looks every RMB_OFI_PROGRESS_USEC microseconds
 * while the PE drives the provider itself; 0 turns it off, a negative
 * value makes it poll continuously (a core to spare).
 *
 * fence(ep) (RMB_OFI_FENCE=auto|ordered|flag|wait): nothing when the
 * provider orders all reads and writes (sockets); FI_FENCE on the next
 * operation to the peer when it has the capability; otherwise a quiet, and
 * only when something was posted to that peer since everything was last
 * seen complete (tcp;ofi_rxm).
 */
#include "btl/ofi/btl_ofi.h"
#include "btl/btl_cpu_amo.h"
#include "bootstrap/bootstrap.h"
#include "util/env.h"
#include "util/log.h"
#include "util/wait.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A libfabric return code as a status; the caller has logged the cause. */
util_status_t btl_ofi_status(ssize_t ret)
{
    switch (-ret) {
    case FI_ENOMEM:
        return UTIL_ERR_NO_MEMORY;
    case FI_EAGAIN:
        return UTIL_ERR_NO_RESOURCE;
    case FI_ENOSYS:
    case FI_EOPNOTSUPP:
    case FI_ENODATA:
        return UTIL_ERR_UNSUPPORTED;
    case FI_EINVAL:
    case FI_EBADFLAGS:
        return UTIL_ERR_INVALID;
    case FI_ETIMEDOUT:
        return UTIL_ERR_TIMEOUT;
    case FI_EHOSTUNREACH:
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
        return UTIL_ERR_UNREACHABLE;
    default:
        return UTIL_ERR_IO;
    }
}

util_status_t btl_ofi_fail(const char *call, ssize_t ret)
{
    util_error("btl/ofi: %s: %s", call, btl_ofi_lib.strerror((int)-ret));
    return btl_ofi_status(ret);
}

/* ---- requests: operations whose own completion we must see ---- */
void btl_ofi_req_release(btl_ofi_iface_t *oif, btl_ofi_req_t *req)
{
    btl_ofi_req_t **head = req->slot >= 0 ? &oif->staged_free : &oif->plain_free;

    req->in_use = 0;
    req->comp = NULL;
    req->next_free = *head;
    *head = req;
    oif->reqs_pending--;
}

/* The provider finished req (status: how). Its btl_comp_t counts it. */
static void btl_ofi_req_done(btl_ofi_iface_t *oif, btl_ofi_req_t *req, util_status_t status)
{
    btl_comp_t *comp = req->comp;

    if (comp != NULL) {
        if (status != UTIL_OK && comp->status == UTIL_OK) {
            comp->status = status;
        }
        __atomic_store_n(&comp->completed, comp->completed + 1, __ATOMIC_RELEASE);
    }
    btl_ofi_req_release(oif, req);
}

/* Forgets comp in every pending request (the caller gives up on it after
 * an error): later completions must not write into a dead btl_comp_t. */
static void btl_ofi_req_detach(btl_ofi_iface_t *oif, btl_comp_t *comp)
{
    for (int i = 0; i < BTL_OFI_REQS; i++) {
        if (oif->reqs[i].in_use && oif->reqs[i].comp == comp) {
            oif->reqs[i].comp = NULL;
        }
    }
}

static util_status_t btl_ofi_poll_tx(btl_ofi_iface_t *oif);

/* ---- completion ---- */

/* Drives the provider and finishes requests whose completions are queued;
 * reports an error completion, if one is queued. Applies arrived messages.
 * Each CQ read drives the provider (on tcp, a system call): with messages,
 * the message CQ's read does it, and the other is read where requests wait
 * for their entries, and every 64th time (error entries of operations that
 * asked for none; btl_ofi_cntr_wait reads it when a counter shows one). */
util_status_t btl_ofi_poll(btl_ofi_iface_t *oif)
{
    util_status_t status = UTIL_OK, am;

    if (oif->rx_cq == NULL || oif->reqs_pending > 0 || ++oif->tx_skips % 64 == 0) {
        status = btl_ofi_poll_tx(oif);
    }
    am = btl_ofi_am_poll(oif);
    return status != UTIL_OK ? status : am;
}

/* The transmit side of btl_ofi_poll. */
static util_status_t btl_ofi_poll_tx(btl_ofi_iface_t *oif)
{
    struct fi_cq_err_entry err;
    struct fi_cq_entry entries[BTL_OFI_CQ_BATCH];
    ssize_t ret = fi_cq_read(oif->cq, entries, BTL_OFI_CQ_BATCH);
    util_status_t status;

    if (ret > 0) {
        for (ssize_t i = 0; i < ret; i++) {
            if (entries[i].op_context != NULL) {
                btl_ofi_req_done(oif, entries[i].op_context, UTIL_OK);
            }
        }
        return UTIL_OK;
    }
    if (ret == -FI_EAGAIN) {
        return UTIL_OK;
    }
    if (ret != -FI_EAVAIL) {
        return btl_ofi_fail("fi_cq_read", ret);
    }
    memset(&err, 0, sizeof(err));
    ret = fi_cq_readerr(oif->cq, &err, 0);
    if (ret < 0) {
        return btl_ofi_fail("fi_cq_readerr", ret);
    }
    util_error("btl/ofi: operation failed: %s (%s)", btl_ofi_lib.strerror(err.err),
               fi_cq_strerror(oif->cq, err.prov_errno, err.err_data, NULL, 0));
    status = btl_ofi_status(-(ssize_t)err.err);
    if (err.op_context != NULL) {
        btl_ofi_req_done(oif, err.op_context, status);
    }
    return status;
}

/* A bounded wait (btl_wait.h) that also tells the helper thread the PE
 * drives the provider itself. */
util_status_t btl_ofi_wait_tick(btl_ofi_iface_t *oif, btl_wait_t *w, const char *what, int peer)
{
    btl_helper_touch(&oif->helper);
    return btl_wait_tick(w, &oif->bound, what, peer);
}

/* A free request: staged ones (index < BTL_OFI_SLOTS) own a bounce-ring
 * slot. Waits (progress, bounded) while none is free. */
util_status_t btl_ofi_req_get(btl_ofi_iface_t *oif, int staged, int peer, btl_ofi_req_t **req_p)
{
    btl_ofi_req_t **head = staged ? &oif->staged_free : &oif->plain_free;
    btl_wait_t w = BTL_WAIT_INIT;
    btl_ofi_req_t *req;
    util_status_t status;

    while (*head == NULL) {
        status = btl_ofi_poll(oif);
        if (status == UTIL_OK) {
            status = btl_ofi_wait_tick(
                oif, &w, staged ? "waiting for a bounce slot" : "waiting for a request", peer);
        }
        if (status != UTIL_OK) {
            return status;
        }
    }
    req = *head;
    *head = req->next_free;
    req->in_use = 1;
    req->comp = NULL;
    req->peer = peer;
    oif->reqs_pending++;
    *req_p = req;
    return UTIL_OK;
}

/* Waits until cntr counted `posted` operations. Completions in error are
 * counted on the error side; their cause is logged once. */
static util_status_t btl_ofi_cntr_wait(btl_ofi_iface_t *oif, struct fid_cntr *cntr, uint64_t posted,
                                       uint64_t *err_seen, const char *what, int peer)
{
    btl_wait_t w = BTL_WAIT_INIT;

    for (;;) {
        uint64_t done = fi_cntr_read(cntr);
        uint64_t errs = fi_cntr_readerr(cntr);
        util_status_t status;

        if (errs > *err_seen) {
            status = btl_ofi_poll_tx(oif);
            util_error("btl/ofi: %llu operation(s) completed in error",
                       (unsigned long long)(errs - *err_seen));
            *err_seen = errs;
            return status != UTIL_OK ? status : UTIL_ERR_IO;
        }
        if (done + errs >= posted) {
            return UTIL_OK;
        }
        /* The counter read drove the provider; the other CQ only matters
         * when requests wait for their entries (errors show on the
         * counter). Messages are applied: peers' batches must not fill our
         * receive buffers while we wait (rxm then stops reading the
         * connection, the answers to our own reads included). */
        status = oif->reqs_pending > 0 ? btl_ofi_poll(oif) : btl_ofi_am_poll(oif);
        if (status == UTIL_OK) {
            status = btl_ofi_wait_tick(oif, &w, what, peer);
        }
        if (status != UTIL_OK) {
            return status;
        }
    }
}

static util_status_t btl_ofi_wait_writes(btl_ofi_iface_t *oif, const char *what, int peer)
{
    return btl_ofi_cntr_wait(oif, oif->wr_cntr, oif->wr_posted, &oif->wr_err_seen, what, peer);
}

util_status_t btl_ofi_wait_reads(btl_ofi_iface_t *oif, const char *what, int peer)
{
    return btl_ofi_cntr_wait(oif, oif->rd_cntr, oif->rd_posted, &oif->rd_err_seen, what, peer);
}

/* Progress, then retry, when the provider is out of resources; bounded
 * like every wait. A peer that never took a single operation is most
 * likely unreachable at the address it published (rxm answers FI_EAGAIN
 * to every post while its connection is refused): say so, with the
 * address. */
util_status_t btl_ofi_retry(btl_ofi_iface_t *oif, btl_wait_t *w, const char *call, ssize_t ret,
                            btl_ofi_ep_t *oep)
{
    util_status_t status;

    if (ret != -FI_EAGAIN) {
        return btl_ofi_fail(call, ret);
    }
    status = btl_ofi_poll(oif);
    if (status == UTIL_OK) {
        status = btl_ofi_wait_tick(oif, w, call, oep->super.peer);
        if (status == UTIL_ERR_TIMEOUT && !oep->accepted) {
            util_error("btl/ofi: no connection to PE %d at %s (its published address is not "
                       "reachable from here? FI_TCP_IFACE names the interface; FI_LOG_LEVEL=warn "
                       "shows the provider's view)",
                       oep->super.peer, oep->where);
        }
    }
    return status;
}

/* The flags an operation to oep carries: a pending per-peer fence is
 * taken by the first operation after it (see btl_ofi_fence). */
static inline uint64_t btl_ofi_take_fence(btl_ofi_ep_t *oep)
{
    uint64_t flag = oep->fence_flag;

    oep->fence_flag = 0;
    return flag;
}

/* Records that an operation to oep was posted (per-peer fence). */
static inline void btl_ofi_mark(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep)
{
    oep->accepted = 1;
    oep->last_seq = oif->wr_posted + oif->rd_posted;
}

static util_status_t btl_ofi_progress(btl_iface_t *iface);

/* A non-blocking operation to a peer was posted. Without the helper
 * thread, on a provider with manual progress (rxm: BTL_CAP_PE_PROGRESS),
 * peers' operations land only in our calls, and a stream of posts that
 * never waits drove the provider only when it ran out of credits: the
 * other PEs' fetch_adds were answered ~10 ms apart. So every
 * BTL_OFI_SERVE_EVERY posts the progress call of a wait, and every
 * BTL_OFI_YIELD_EVERY a turn for the other PEs on this core
 * (util_wait_share_core): the PE that waits for our answer may be one
 * (without it 1.8 s for what took 0.03; at every 16th post the stream lost
 * a third). */
static inline util_status_t btl_ofi_posted(btl_ofi_iface_t *oif)
{
    if (__builtin_expect(!(oif->super.caps & BTL_CAP_PE_PROGRESS), 1) ||
        ++oif->posts_unserved % BTL_OFI_SERVE_EVERY != 0) {
        return UTIL_OK;
    }
    if (oif->posts_unserved % BTL_OFI_YIELD_EVERY == 0) {
        util_wait_share_core(&oif->relaxes_seen);
    }
    return btl_ofi_progress(&oif->super);
}

/* ---- addressing ---- */
static inline uint64_t btl_ofi_raddr(btl_rkey_t *rkey, uint64_t raddr)
{
    return raddr - btl_ofi_rkey(rkey)->offset;
}

static inline void *btl_ofi_desc(btl_ofi_iface_t *oif, btl_mem_t *lmem)
{
    btl_mr_t *mr;

    if (lmem == NULL || !(oif->mr_mode & FI_MR_LOCAL)) {
        return NULL;
    }
    mr = lmem->mr[oif->super.index];
    return mr != NULL ? btl_ofi_mr(mr)->desc : NULL;
}

/* ---- writes ---- */

/* Posts one write or read. Small writes are injected (the source is free
 * at once); every write asks for delivery completion. Counted in
 * wr_posted / rd_posted; with req, the operation also reports to the CQ
 * with req as its context. */
util_status_t btl_ofi_rma_post_raw(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, int is_write, void *buf,
                                   size_t len, void *desc, uint64_t raddr, btl_rkey_t *rkey,
                                   uint64_t extra_flags, btl_ofi_req_t *req)
{
    struct iovec iov = {buf, len};
    struct fi_rma_iov rma = {btl_ofi_raddr(rkey, raddr), len, btl_ofi_rkey(rkey)->key};
    struct fi_msg_rma msg = {.msg_iov = &iov,
                             .desc = &desc,
                             .iov_count = 1,
                             .addr = oep->addr,
                             .rma_iov = &rma,
                             .rma_iov_count = 1,
                             .context = req,
                             .data = 0};
    uint64_t flags = extra_flags | btl_ofi_take_fence(oep);
    btl_wait_t w = BTL_WAIT_INIT;
    util_status_t status;
    ssize_t ret;

    if (req != NULL) {
        flags |= FI_COMPLETION;
    } else if (is_write && len <= oif->inject_size) {
        flags |= FI_INJECT;
    }
    if (is_write) {
        flags |= oif->comp_flag;
    }
    while ((ret = is_write ? fi_writemsg(oif->ep, &msg, flags)
                           : fi_readmsg(oif->ep, &msg, flags)) != 0) {
        status = btl_ofi_retry(oif, &w, is_write ? "fi_writemsg" : "fi_readmsg", ret, oep);
        if (status != UTIL_OK) {
            return status;
        }
    }
    if (is_write) {
        oif->wr_posted++;
    } else {
        oif->rd_posted++;
    }
    btl_ofi_mark(oif, oep);
    return btl_ofi_posted(oif);
}

/* btl_ofi_rma_post_raw behind the messages a fence put before it. */
static util_status_t btl_ofi_rma_post(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, int is_write,
                                      void *buf, size_t len, void *desc, uint64_t raddr,
                                      btl_rkey_t *rkey, uint64_t extra_flags, btl_ofi_req_t *req)
{
    util_status_t status = btl_ofi_am_order(oif, oep, raddr, len);

    return status != UTIL_OK ? status
                             : btl_ofi_rma_post_raw(oif, oep, is_write, buf, len, desc, raddr, rkey,
                                                    extra_flags, req);
}

static util_status_t btl_ofi_write_post(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, const void *src,
                                        size_t len, void *desc, uint64_t raddr, btl_rkey_t *rkey,
                                        uint64_t extra_flags, btl_ofi_req_t *req)
{
    return btl_ofi_rma_post(oif, oep, 1, (void *)(uintptr_t)src, len, desc, raddr, rkey,
                            extra_flags, req);
}

/* A put staged in a bounce-ring slot: the source is free on return, the
 * slot when the write completes (progress). No round trip for sizes
 * between the inject size and eager_size. */
static util_status_t btl_ofi_write_staged(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, const void *src,
                                          size_t len, uint64_t raddr, btl_rkey_t *rkey,
                                          uint64_t extra_flags)
{
    btl_ofi_req_t *req;
    void *slot;
    util_status_t status = btl_ofi_req_get(oif, 1, oep->super.peer, &req);

    if (status != UTIL_OK) {
        return status;
    }
    slot = (char *)oif->ring + (size_t)req->slot * oif->eager_size;
    memcpy(slot, src, len);
    status =
        btl_ofi_write_post(oif, oep, slot, len, oif->ring_mr->desc, raddr, rkey, extra_flags, req);
    if (status != UTIL_OK) {
        btl_ofi_req_release(oif, req);
    }
    return status;
}

/* Small writes that need no wait: injected, or staged in the ring. */
static inline int btl_ofi_write_is_eager(const btl_ofi_iface_t *oif, size_t len)
{
    return len <= oif->inject_size || len <= oif->eager_size;
}

static util_status_t btl_ofi_write_eager(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, const void *src,
                                         size_t len, uint64_t raddr, btl_rkey_t *rkey,
                                         uint64_t extra_flags)
{
    if (len <= oif->inject_size) {
        return btl_ofi_write_post(oif, oep, src, len, NULL, raddr, rkey, extra_flags, NULL);
    }
    return btl_ofi_write_staged(oif, oep, src, len, raddr, rkey, extra_flags);
}

/* A write or read that is locally complete on return (a read's data is in
 * buf). Buffers without a registration on FI_MR_LOCAL providers go through
 * the bounce buffer, a chunk at a time. */
static util_status_t btl_ofi_rma(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, int is_write, void *buf,
                                 size_t len, btl_mem_t *lmem, uint64_t raddr, btl_rkey_t *rkey)
{
    void *desc = btl_ofi_desc(oif, lmem);
    int peer = oep->super.peer;
    const char *what = is_write ? "put" : "get";
    util_status_t status;

    if (is_write && btl_ofi_write_is_eager(oif, len)) {
        return btl_ofi_write_eager(oif, oep, buf, len, raddr, rkey, 0);
    }
    if (len == 0) {
        return UTIL_OK;
    }
    if (desc != NULL || !(oif->mr_mode & FI_MR_LOCAL)) {
        while (len > 0) {
            size_t chunk = len < oif->max_msg ? len : oif->max_msg;

            status = btl_ofi_rma_post(oif, oep, is_write, buf, chunk, desc, raddr, rkey, 0, NULL);
            if (status != UTIL_OK) {
                return status;
            }
            buf = (char *)buf + chunk;
            raddr += chunk;
            len -= chunk;
        }
        return is_write ? btl_ofi_wait_writes(oif, what, peer)
                        : btl_ofi_wait_reads(oif, what, peer);
    }
    while (len > 0) {
        size_t chunk = len < oif->bounce_size ? len : oif->bounce_size;

        if (is_write) {
            memcpy(oif->bounce, buf, chunk);
        }
        status = btl_ofi_rma_post(oif, oep, is_write, oif->bounce, chunk, oif->bounce_mr->desc,
                                  raddr, rkey, 0, NULL);
        if (status == UTIL_OK) {
            status = is_write ? btl_ofi_wait_writes(oif, what, peer)
                              : btl_ofi_wait_reads(oif, what, peer);
        }
        if (status != UTIL_OK) {
            return status;
        }
        if (!is_write) {
            memcpy(buf, oif->bounce, chunk);
        }
        buf = (char *)buf + chunk;
        raddr += chunk;
        len -= chunk;
    }
    return UTIL_OK;
}

static util_status_t btl_ofi_write(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, const void *src,
                                   size_t len, btl_mem_t *lmem, uint64_t raddr, btl_rkey_t *rkey)
{
    return btl_ofi_rma(oif, oep, 1, (void *)(uintptr_t)src, len, lmem, raddr, rkey);
}

/* Non-blocking put or get of a buffer the provider can use in place: one
 * request per chunk, each counted in comp and finished by progress. */
static util_status_t btl_ofi_rma_nb(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, int is_write,
                                    void *buf, size_t len, void *desc, uint64_t raddr,
                                    btl_rkey_t *rkey, btl_comp_t *comp)
{
    uint64_t now = oif->bound.timeout_ns != 0 ? btl_now_ns() : 0;
    util_status_t status = UTIL_OK;

    while (len > 0) {
        size_t chunk = len < oif->max_msg ? len : oif->max_msg;
        btl_ofi_req_t *req;

        status = btl_ofi_req_get(oif, 0, oep->super.peer, &req);
        if (status != UTIL_OK) {
            break;
        }
        req->comp = comp;
        req->posted_ns = now;
        status = btl_ofi_rma_post(oif, oep, is_write, buf, chunk, desc, raddr, rkey, 0, req);
        if (status != UTIL_OK) {
            btl_ofi_req_release(oif, req);
            break;
        }
        comp->posted++;
        buf = (char *)buf + chunk;
        raddr += chunk;
        len -= chunk;
    }
    if (status != UTIL_OK) {
        btl_ofi_req_detach(oif, comp);
        return status;
    }
    return UTIL_IN_PROGRESS;
}

/* Non-blocking when comp is given and the buffer can be used in place:
 * eager puts complete locally at once (UTIL_OK), larger ones return
 * UTIL_IN_PROGRESS. Otherwise blocking to local completion. */
static util_status_t btl_ofi_put(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                 uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    btl_ofi_ep_t *oep = btl_ofi_ep(ep);
    void *desc;

    if (len == 0) {
        return UTIL_OK;
    }
    if (oep->am_seen < oep->am_fenced &&
        btl_ofi_am_fits(oif, oep, btl_batch_rec_size(BTL_BATCH_PUT, len))) {
        /* behind messages a fence put first: as a message, it needs no wait */
        return btl_ofi_am_send(oif, oep, src, len, raddr, 0, 0, NULL, 0, 0, 1);
    }
    if (comp == NULL || btl_ofi_write_is_eager(oif, len)) {
        return btl_ofi_write(oif, oep, src, len, lmem, raddr, rkey);
    }
    desc = btl_ofi_desc(oif, lmem);
    if (desc == NULL && (oif->mr_mode & FI_MR_LOCAL)) {
        return btl_ofi_write(oif, oep, src, len, lmem, raddr, rkey);
    }
    return btl_ofi_rma_nb(oif, oep, 1, (void *)(uintptr_t)src, len, desc, raddr, rkey, comp);
}

/* A put of up to BTL_OFI_BATCH_PUT_MAX bytes into the peer's batch where
 * the iface batches (else a put). */
static util_status_t btl_ofi_put_batch(btl_ep_t *ep, const void *src, size_t len, uint64_t raddr,
                                       btl_rkey_t *rkey)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    btl_ofi_ep_t *oep = btl_ofi_ep(ep);

    if (oif->batch_max > 0 && oep->am && len > 0 && len <= BTL_OFI_BATCH_PUT_MAX) {
        btl_batch_rec_t rec = {BTL_BATCH_PUT, (uint32_t)len, raddr, {0, 0}};
        return btl_ofi_batch_add(oif, oep, &rec, src, len);
    }
    return btl_ofi_put(ep, src, len, NULL, raddr, rkey, NULL);
}

static util_status_t btl_ofi_get(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                 uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    void *desc = btl_ofi_desc(oif, lmem);

    if (len == 0) {
        return UTIL_OK;
    }
    if (comp == NULL || (desc == NULL && (oif->mr_mode & FI_MR_LOCAL))) {
        return btl_ofi_rma(oif, btl_ofi_ep(ep), 0, dst, len, lmem, raddr, rkey);
    }
    return btl_ofi_rma_nb(oif, btl_ofi_ep(ep), 0, dst, len, desc, raddr, rkey, comp);
}

/* The 8-byte flag: a message where flags travel as messages (their order
 * kept), else from the registered scratch word. */
static util_status_t btl_ofi_flag_post(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, uint64_t flag_raddr,
                                       btl_rkey_t *flag_rkey, uint64_t value, uint64_t extra_flags)
{
    util_status_t status;

    if (btl_ofi_am_fits(oif, oep, btl_batch_rec_size(BTL_BATCH_PUT_FLAG, 0))) {
        return btl_ofi_am_send(oif, oep, NULL, 0, 0, flag_raddr, value, NULL, 0, 0, 1);
    }
    if ((flag_raddr & 7) != 0) {
        util_error("btl/ofi: flag address 0x%llx is not 8-byte aligned",
                   (unsigned long long)flag_raddr);
        return UTIL_ERR_INVALID;
    }
    if (oif->inject_size >= sizeof(uint64_t) || oif->eager_size >= sizeof(uint64_t)) {
        return btl_ofi_write_eager(oif, oep, &value, sizeof(value), flag_raddr, flag_rkey,
                                   extra_flags);
    }
    /* No way to copy 8 bytes away: the scratch word stays put until done. */
    oif->scratch.flag = value;
    status = btl_ofi_write_post(oif, oep, &oif->scratch.flag, sizeof(uint64_t),
                                oif->scratch_mr->desc, flag_raddr, flag_rkey, extra_flags, NULL);
    return status != UTIL_OK ? status : btl_ofi_wait_writes(oif, "put_flag", oep->super.peer);
}

static util_status_t btl_ofi_put_flag(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                      uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                      btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    btl_ofi_ep_t *oep = btl_ofi_ep(ep);
    void *desc = btl_ofi_desc(oif, lmem);
    int eager = btl_ofi_write_is_eager(oif, len);
    int direct = eager || (len <= oif->max_msg && (desc != NULL || !(oif->mr_mode & FI_MR_LOCAL)));
    uint64_t flag_fence = oif->flag_order == BTL_OFI_FLAG_FENCE ? FI_FENCE : 0;
    util_status_t status;

    (void)comp; /* always complete on return */
    if (btl_ofi_am_fits(oif, oep, btl_batch_rec_size(BTL_BATCH_PUT_FLAG, len))) {
        return btl_ofi_am_send(oif, oep, src, len, raddr, flag_raddr, flag_value, NULL, 0, 0,
                               comp != &btl_comp_signal);
    }
    if (len == 0) {
        return btl_ofi_flag_post(oif, oep, flag_raddr, flag_rkey, flag_value, 0);
    }
    if (oif->flag_order == BTL_OFI_FLAG_WAIT || oif->flag_order == BTL_OFI_FLAG_MESSAGE ||
        !direct || (oif->flag_order == BTL_OFI_FLAG_NATIVE && len > oif->max_waw)) {
        /* Payload delivered, then the flag: one round trip. */
        status = btl_ofi_write(oif, oep, src, len, lmem, raddr, rkey);
        if (status == UTIL_OK) {
            status = btl_ofi_wait_writes(oif, "put_flag", ep->peer);
        }
        if (status != UTIL_OK) {
            return status;
        }
        return btl_ofi_flag_post(oif, oep, flag_raddr, flag_rkey, flag_value, 0);
    }
    if (eager) {
        status = btl_ofi_write_eager(oif, oep, src, len, raddr, rkey, 0);
        return status != UTIL_OK
                   ? status
                   : btl_ofi_flag_post(oif, oep, flag_raddr, flag_rkey, flag_value, flag_fence);
    }
    status = btl_ofi_write_post(oif, oep, src, len, desc, raddr, rkey, 0, NULL);
    if (status == UTIL_OK) {
        status = btl_ofi_flag_post(oif, oep, flag_raddr, flag_rkey, flag_value, flag_fence);
    }
    if (status != UTIL_OK) {
        return status;
    }
    return btl_ofi_wait_writes(oif, "put_flag", ep->peer); /* local completion of the payload */
}

/* One message where flags travel as messages; else btl_put_flag_rec's
 * put_flag and put. */
static util_status_t btl_ofi_put_flag_rec(btl_ep_t *ep, const void *src, size_t len,
                                          btl_mem_t *lmem, uint64_t raddr, btl_rkey_t *rkey,
                                          uint64_t flag_raddr, btl_rkey_t *flag_rkey,
                                          uint64_t flag_value, const void *rec, size_t rec_len,
                                          uint64_t rec_raddr, btl_rkey_t *rec_rkey)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    btl_ofi_ep_t *oep = btl_ofi_ep(ep);

    (void)lmem, (void)rkey, (void)flag_rkey, (void)rec_rkey;
    if (!btl_ofi_am_fits(oif, oep,
                         btl_batch_rec_size(BTL_BATCH_PUT_FLAG, len) +
                             btl_batch_rec_size(BTL_BATCH_PUT, rec_len))) {
        return UTIL_ERR_UNSUPPORTED;
    }
    return btl_ofi_am_send(oif, oep, src, len, raddr, flag_raddr, flag_value, rec, rec_len,
                           rec_raddr, 1);
}

static util_status_t btl_ofi_get_flag(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                      uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                      btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    util_status_t status = btl_ofi_rma(oif, btl_ofi_ep(ep), 0, dst, len, lmem, raddr, rkey);

    (void)comp; /* always complete on return */
    if (status != UTIL_OK) {
        return status;
    }
    return btl_ofi_flag_post(oif, btl_ofi_ep(ep), flag_raddr, flag_rkey, flag_value, 0);
}

/* ---- atomics ---- */
static const enum fi_op btl_ofi_amo_op[BTL_AMO_LAST] = {
    [BTL_AMO_FETCH] = FI_ATOMIC_READ,
    [BTL_AMO_SET] = FI_ATOMIC_WRITE,
    [BTL_AMO_SWAP] = FI_ATOMIC_WRITE,
    [BTL_AMO_CSWAP] = FI_CSWAP,
    [BTL_AMO_ADD] = FI_SUM,
    [BTL_AMO_AND] = FI_BAND,
    [BTL_AMO_OR] = FI_BOR,
    [BTL_AMO_XOR] = FI_BXOR,
};

static util_status_t btl_ofi_amo_check(btl_amo_op_t op, unsigned size, uint64_t raddr)
{
    if ((size != 4 && size != 8) || (raddr & (size - 1)) != 0 || (unsigned)op >= BTL_AMO_LAST) {
        util_error("btl/ofi: bad atomic (op %d, size %u, address 0x%llx)", (int)op, size,
                   (unsigned long long)raddr);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

/* One native fetching (or compare, for CSWAP) atomic; waits for the result. */
static util_status_t btl_ofi_amo_fetch_native(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep,
                                              btl_amo_op_t op, unsigned size, uint64_t raddr,
                                              btl_rkey_t *rkey, uint64_t operand, uint64_t compare,
                                              uint64_t *result_p)
{
    enum fi_datatype dt = size == 8 ? FI_UINT64 : FI_UINT32;
    void *desc = oif->scratch_mr->desc;
    struct fi_ioc src = {&oif->scratch.operand, 1};
    struct fi_ioc cmp = {&oif->scratch.compare, 1};
    struct fi_ioc res = {&oif->scratch.result, 1};
    struct fi_rma_ioc rma = {btl_ofi_raddr(rkey, raddr), 1, btl_ofi_rkey(rkey)->key};
    struct fi_msg_atomic msg = {.msg_iov = &src,
                                .desc = &desc,
                                .iov_count = 1,
                                .addr = oep->addr,
                                .rma_iov = &rma,
                                .rma_iov_count = 1,
                                .datatype = dt,
                                .op = btl_ofi_amo_op[op],
                                .context = NULL,
                                .data = 0};
    void *res_desc = desc, *cmp_desc = desc;
    uint64_t flags;
    btl_wait_t w = BTL_WAIT_INIT;
    util_status_t status = btl_ofi_am_order(oif, oep, raddr, size);
    ssize_t ret;

    if (status != UTIL_OK) {
        return status;
    }
    flags = btl_ofi_take_fence(oep);
    /* The scratch words hold the value in their first `size` bytes. */
    if (size == 8) {
        oif->scratch.operand = operand;
        oif->scratch.compare = compare;
    } else {
        uint32_t op32 = (uint32_t)operand, cmp32 = (uint32_t)compare;
        memcpy(&oif->scratch.operand, &op32, 4);
        memcpy(&oif->scratch.compare, &cmp32, 4);
    }
    oif->scratch.result = 0;
    for (;;) {
        if (op == BTL_AMO_CSWAP) {
            ret =
                fi_compare_atomicmsg(oif->ep, &msg, &cmp, &cmp_desc, 1, &res, &res_desc, 1, flags);
        } else {
            ret = fi_fetch_atomicmsg(oif->ep, &msg, &res, &res_desc, 1, flags);
        }
        if (ret == 0) {
            break;
        }
        status = btl_ofi_retry(
            oif, &w, op == BTL_AMO_CSWAP ? "fi_compare_atomicmsg" : "fi_fetch_atomicmsg", ret, oep);
        if (status != UTIL_OK) {
            return status;
        }
    }
    oif->rd_posted++;
    btl_ofi_mark(oif, oep);
    status = btl_ofi_wait_reads(oif, "fetching atomic", oep->super.peer);
    if (status != UTIL_OK) {
        return status;
    }
    if (size == 8) {
        *result_p = oif->scratch.result;
    } else {
        uint32_t r32;
        memcpy(&r32, &oif->scratch.result, 4);
        *result_p = r32;
    }
    return UTIL_OK;
}

/* Any fetching op as a compare-and-swap loop (provider lacks the op). */
static util_status_t btl_ofi_amo_cas_loop(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, btl_amo_op_t op,
                                          unsigned size, uint64_t raddr, btl_rkey_t *rkey,
                                          uint64_t operand, uint64_t *result_p)
{
    uint64_t mask = size == 8 ? ~(uint64_t)0 : 0xffffffffu;
    uint64_t guess = 0, got;
    util_status_t status;

    for (;;) {
        uint64_t next = btl_amo_combine(op, guess, operand, 0) & mask;
        status =
            btl_ofi_amo_fetch_native(oif, oep, BTL_AMO_CSWAP, size, raddr, rkey, next, guess, &got);
        if (status != UTIL_OK) {
            return status;
        }
        if (got == guess) {
            *result_p = got;
            return UTIL_OK;
        }
        guess = got;
    }
}

static util_status_t btl_ofi_amo_fetch(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                       btl_rkey_t *rkey, uint64_t operand, uint64_t compare,
                                       uint64_t *result_p)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    util_status_t status = btl_ofi_amo_check(op, size, raddr);
    int wide = size == 8;

    if (status != UTIL_OK) {
        return status;
    }
    if (oif->amo[op][wide] & BTL_OFI_AMO_FETCH) {
        return btl_ofi_amo_fetch_native(oif, btl_ofi_ep(ep), op, size, raddr, rkey, operand,
                                        compare, result_p);
    }
    if (op != BTL_AMO_CSWAP && (oif->amo[BTL_AMO_CSWAP][wide] & BTL_OFI_AMO_FETCH)) {
        return btl_ofi_amo_cas_loop(oif, btl_ofi_ep(ep), op, size, raddr, rkey, operand, result_p);
    }
    util_error("btl/ofi: provider %s has no %u-bit atomic %d nor compare-and-swap to emulate it",
               oif->info->fabric_attr->prov_name, size * 8, (int)op);
    return UTIL_ERR_UNSUPPORTED;
}

static util_status_t btl_ofi_amo_post(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                      btl_rkey_t *rkey, uint64_t operand)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    btl_ofi_ep_t *oep = btl_ofi_ep(ep);
    util_status_t status = btl_ofi_amo_check(op, size, raddr);
    uint64_t old;

    if (status == UTIL_OK) {
        status = btl_ofi_am_order(oif, oep, raddr, size);
    }
    if (status != UTIL_OK) {
        return status;
    }
    if (op == BTL_AMO_FETCH || op == BTL_AMO_SWAP || op == BTL_AMO_CSWAP) {
        util_error("btl/ofi: atomic op %d has no non-fetching form", (int)op);
        return UTIL_ERR_INVALID;
    }
    if (oif->amo[op][size == 8] & BTL_OFI_AMO_BASE) {
        void *desc = oif->scratch_mr->desc;
        struct fi_ioc src = {&oif->scratch.operand, 1};
        struct fi_rma_ioc rma = {btl_ofi_raddr(rkey, raddr), 1, btl_ofi_rkey(rkey)->key};
        struct fi_msg_atomic msg = {.msg_iov = &src,
                                    .desc = &desc,
                                    .iov_count = 1,
                                    .addr = oep->addr,
                                    .rma_iov = &rma,
                                    .rma_iov_count = 1,
                                    .datatype = size == 8 ? FI_UINT64 : FI_UINT32,
                                    .op = btl_ofi_amo_op[op],
                                    .context = NULL,
                                    .data = 0};
        uint64_t flags = FI_INJECT | oif->comp_flag | btl_ofi_take_fence(oep);
        btl_wait_t w = BTL_WAIT_INIT;
        ssize_t ret;

        if (size == 8) {
            oif->scratch.operand = operand;
        } else {
            uint32_t op32 = (uint32_t)operand;
            memcpy(&oif->scratch.operand, &op32, 4);
        }
        while ((ret = fi_atomicmsg(oif->ep, &msg, flags)) != 0) {
            status = btl_ofi_retry(oif, &w, "fi_atomicmsg", ret, oep);
            if (status != UTIL_OK) {
                return status;
            }
        }
        oif->wr_posted++;
        btl_ofi_mark(oif, oep);
        return btl_ofi_posted(oif);
    }
    return btl_ofi_amo_fetch(ep, op, size, raddr, rkey, operand, 0, &old);
}

/* A non-fetching atomic into the peer's batch where the iface batches
 * (the target applies it with CPU atomics, as the provider applies
 * others' atomics to the same word; else amo_post). */
static util_status_t btl_ofi_amo_post_batch(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                            uint64_t raddr, btl_rkey_t *rkey, uint64_t operand)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    btl_ofi_ep_t *oep = btl_ofi_ep(ep);
    util_status_t status = btl_ofi_amo_check(op, size, raddr);

    if (status != UTIL_OK) {
        return status;
    }
    if (oif->batch_max > 0 && oep->am && (op == BTL_AMO_SET || op >= BTL_AMO_ADD)) {
        btl_batch_rec_t rec = {BTL_BATCH_AMO, size | (uint32_t)op << 8, raddr, {operand, 0}};
        return btl_ofi_batch_add(oif, oep, &rec, NULL, 0);
    }
    return btl_ofi_amo_post(ep, op, size, raddr, rkey, operand);
}

/* ---- ordering ---- */

/* Remote completion of everything: both counters caught up, and every
 * request (non-blocking operation, staged put) finished, so each
 * btl_comp_t involved has counted its operations. */
static util_status_t btl_ofi_quiet(btl_iface_t *iface)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(iface);
    btl_wait_t w = BTL_WAIT_INIT;
    util_status_t status = UTIL_OK;

    /* Every peer with messages a quiet must see applied gets a ping first
     * (what we hold for it rides along): the pongs travel while the
     * writes complete. Then what is held for the others goes. */
    for (btl_ofi_ep_t *oep = oif->am_dirty; oep != NULL && status == UTIL_OK; oep = oep->am_next) {
        btl_ofi_am_landed(oif, oep);
        if (((oep->am_seen < oep->am_need && oep->am_pinged < oep->am_need) ||
             __atomic_load_n(&oep->batch_len, __ATOMIC_ACQUIRE) > 0) &&
            btl_ofi_am_small(oif)) {
            status = btl_ofi_am_ping(oif, oep);
        }
    }
    if (status == UTIL_OK && __atomic_load_n(&oif->num_batched, __ATOMIC_ACQUIRE) > 0) {
        btl_ofi_tx_lock(oif);
        status = btl_ofi_batch_flush(oif, 0);
        btl_ofi_tx_unlock(oif);
    }
    if (status == UTIL_OK) {
        status = btl_ofi_wait_writes(oif, "quiet", -1);
    }
    if (status == UTIL_OK) {
        status = btl_ofi_wait_reads(oif, "quiet", -1);
    }
    /* A counter may run ahead of the CQ entry of the same operation. */
    while (status == UTIL_OK && oif->reqs_pending > 0) {
        status = btl_ofi_poll(oif);
        if (status == UTIL_OK) {
            status = btl_ofi_wait_tick(oif, &w, "quiet", -1);
        }
    }
    if (status == UTIL_OK && oif->am_dirty != NULL) {
        status = btl_ofi_am_quiet(oif);
    }
    if (status == UTIL_OK) {
        oif->drained_seq = oif->wr_posted + oif->rd_posted;
    }
    return status;
}

/* Operations to ep after the fence are performed after those before it.
 * ordered: the provider already orders them. flag: the next operation to
 * this peer carries FI_FENCE (the provider defers it until the earlier
 * ones to the same peer completed). wait: free when nothing was posted to
 * this peer since everything was last seen complete, else a quiet. */
static util_status_t btl_ofi_fence(btl_ep_t *ep)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    btl_ofi_ep_t *oep = btl_ofi_ep(ep);

    /* Later messages are applied after these anyway; a later RMA or
     * atomic waits until they are (btl_ofi_am_order). Held records too. */
    util_status_t status = btl_ofi_batch_out(oif, oep);

    if (status != UTIL_OK) {
        return status;
    }
    oep->am_fenced = oep->am_sent;
    switch (oif->fence_mode) {
    case BTL_OFI_FENCE_ORDERED:
        return UTIL_OK;
    case BTL_OFI_FENCE_FLAG:
        if (oep->last_seq > oif->drained_seq) {
            oep->fence_flag = FI_FENCE;
        }
        return UTIL_OK;
    default:
        return oep->last_seq > oif->drained_seq ? btl_ofi_quiet(ep->iface) : UTIL_OK;
    }
}

/* Fails non-blocking operations outstanding longer than the timeout: their
 * btl_comp_t gets UTIL_ERR_TIMEOUT and is forgotten (the provider keeps
 * the request until it completes, if ever). */
static void btl_ofi_expire(btl_ofi_iface_t *oif)
{
    uint64_t now = btl_now_ns();

    for (int i = BTL_OFI_SLOTS; i < BTL_OFI_REQS; i++) {
        btl_ofi_req_t *req = &oif->reqs[i];

        if (req->in_use && req->comp != NULL &&
            btl_wait_expire_comp(&oif->bound, req->comp, req->posted_ns, now, req->peer)) {
            btl_ofi_req_detach(oif, req->comp);
        }
    }
}

static util_status_t btl_ofi_progress(btl_iface_t *iface)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(iface);

    /* A caller polling a flag in a loop lets threads on its cores (the
     * provider's, our peers') run now and then. */
    btl_helper_touch(&oif->helper);
    if (++oif->progress_calls % BTL_OFI_SPINS_BEFORE_YIELD == 0) {
        if (util_wait_policy.oversubscribed) {
            sched_yield();
        }
        if (oif->progress_calls % BTL_OFI_TIMEOUT_CHECK == 0 && oif->bound.timeout_ns != 0 &&
            oif->reqs_pending > 0) {
            btl_ofi_expire(oif);
        }
    }
    if (__atomic_load_n(&oif->pong_connect, __ATOMIC_ACQUIRE)) {
        btl_ofi_pong_connect(oif);
    }
    if (__atomic_load_n(&oif->num_batched, __ATOMIC_ACQUIRE) > 0) {
        util_status_t status;

        btl_ofi_tx_lock(oif);
        status = btl_ofi_batch_flush(oif, 0); /* the PE waits: what it held back goes */
        btl_ofi_tx_unlock(oif);
        if (status != UTIL_OK) {
            return status;
        }
    }
    return btl_ofi_poll(oif); /* reading the CQ drives the endpoint too */
}

/* The helper thread (btl_helper.h): reading the counters drives the
 * provider; it blocks in the CQ's wait fd, which peers' traffic to us makes
 * readable. It cannot block without the fd, or while events are queued for
 * the PE's thread to read (fi_trywait). */
static void btl_ofi_drain(void *arg)
{
    btl_ofi_iface_t *oif = arg;

    /* The PE stayed away a whole interval: what it held back goes now. */
    if (__atomic_load_n(&oif->num_batched, __ATOMIC_ACQUIRE) > 0 && btl_ofi_tx_trylock(oif)) {
        (void)btl_ofi_batch_flush(oif, 1);
        btl_ofi_tx_unlock(oif);
    }
    (void)fi_cntr_read(oif->rd_cntr);
    (void)fi_cntr_read(oif->wr_cntr);
    (void)btl_ofi_am_poll(oif); /* errors are logged; the PE sees them on its next poll */
}

static int btl_ofi_block(void *arg, int timeout_ms)
{
    btl_ofi_iface_t *oif = arg;
    struct fid *fids[2] = {&oif->cq->fid, oif->rx_cq != NULL ? &oif->rx_cq->fid : NULL};
    struct pollfd pfd[3] = {{oif->wait_fd, POLLIN, 0}, {oif->rx_wait_fd, POLLIN, 0}};
    int n = oif->rx_cq != NULL ? 2 : 1, ready;

    if (oif->wait_fd < 0 || (n == 2 && oif->rx_wait_fd < 0) ||
        fi_trywait(oif->fabric, fids, n) != FI_SUCCESS) {
        return 0;
    }
    /* Batches waiting: back within an interval to send them, as the PE may
     * not return soon; the first batch while we sleep wakes us
     * (btl_ofi_batch_add). */
    __atomic_store_n(&oif->helper_asleep, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&oif->num_batched, __ATOMIC_SEQ_CST) > 0 ||
        __atomic_load_n(&oif->num_pongs, __ATOMIC_RELAXED) > 0) {
        long ms = oif->helper.interval_usec / 1000;
        timeout_ms = ms < 1 ? 1 : ms < timeout_ms ? (int)ms : timeout_ms;
    }
    if (oif->wake_fd >= 0) {
        pfd[n++] = (struct pollfd){oif->wake_fd, POLLIN, 0};
    }
    ready = poll(pfd, (nfds_t)n, timeout_ms);
    __atomic_store_n(&oif->helper_asleep, 0, __ATOMIC_RELAXED);
    if (oif->wake_fd >= 0 && (pfd[n - 1].revents & POLLIN)) {
        uint64_t count;
        ssize_t got = read(oif->wake_fd, &count, sizeof(count));

        (void)got;
        ready--;
    }
    if (ready > 0) {
        util_wait_note_served(); /* peers' traffic: a napping PE serves it itself next */
    }
    return 1;
}

/* ---- memory registration ---- */
util_status_t btl_ofi_reg(btl_ofi_iface_t *oif, void *addr, size_t size, btl_ofi_mr_t **mr_p)
{
    btl_ofi_mr_t *mr;
    int ret;

    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    ret = fi_mr_reg(oif->domain, addr, size, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
                    0, (oif->mr_mode & FI_MR_PROV_KEY) ? 0 : oif->next_key, 0, &mr->mr, NULL);
    if (ret != 0) {
        util_error("btl/ofi: fi_mr_reg(%p, %zu): %s", addr, size, btl_ofi_lib.strerror(-ret));
        free(mr);
        return btl_ofi_status(ret);
    }
    if (oif->mr_mode & FI_MR_ENDPOINT) {
        ret = fi_mr_bind(mr->mr, &oif->ep->fid, 0);
        if (ret == 0) {
            ret = fi_mr_enable(mr->mr);
        }
        if (ret != 0) {
            util_error("btl/ofi: binding MR to the endpoint: %s", btl_ofi_lib.strerror(-ret));
            fi_close(&mr->mr->fid);
            free(mr);
            return btl_ofi_status(ret);
        }
    }
    oif->next_key++;
    mr->key = fi_mr_key(mr->mr);
    if (mr->key == FI_KEY_NOTAVAIL) {
        util_error("btl/ofi: provider key needs FI_MR_RAW (longer than 8 bytes): unsupported");
        fi_close(&mr->mr->fid);
        free(mr);
        return UTIL_ERR_UNSUPPORTED;
    }
    mr->desc = fi_mr_desc(mr->mr);
    mr->super.iface = &oif->super;
    mr->super.addr = addr;
    mr->super.size = size;
    *mr_p = mr;
    return UTIL_OK;
}

static void btl_ofi_unreg(btl_ofi_mr_t *mr)
{
    int ret = fi_close(&mr->mr->fid);

    if (ret != 0) {
        util_warn("btl/ofi: fi_close(mr): %s", btl_ofi_lib.strerror(-ret));
    }
    free(mr);
}

/* Deregisters mr (if any) and frees the buffer (if any) it covered. */
static void btl_ofi_unreg_free(btl_ofi_mr_t *mr, void *buf)
{
    if (mr != NULL) {
        btl_ofi_unreg(mr);
    }
    free(buf);
}

static util_status_t btl_ofi_mem_reg(btl_iface_t *iface, void *addr, size_t size, btl_mr_t **mr_p)
{
    btl_ofi_mr_t *mr;
    util_status_t status = btl_ofi_reg(btl_ofi_iface(iface), addr, size, &mr);

    if (status == UTIL_OK) {
        *mr_p = &mr->super;
    }
    return status;
}

static util_status_t btl_ofi_mem_dereg(btl_mr_t *mr)
{
    btl_ofi_unreg(btl_ofi_mr(mr));
    return UTIL_OK;
}

static util_status_t btl_ofi_rkey_pack(btl_mr_t *mr_base, void *buf, size_t bufsize, size_t *size_p)
{
    btl_ofi_mr_t *mr = btl_ofi_mr(mr_base);
    btl_ofi_packed_t packed;

    if (bufsize < sizeof(packed)) {
        return UTIL_ERR_TRUNCATED;
    }
    packed.base = (uint64_t)(uintptr_t)mr->super.addr;
    packed.len = mr->super.size;
    packed.key = mr->key;
    memcpy(buf, &packed, sizeof(packed));
    *size_p = sizeof(packed);
    return UTIL_OK;
}

static util_status_t btl_ofi_rkey_unpack(btl_ep_t *ep, const void *buf, size_t size,
                                         btl_rkey_t **rkey_p)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    btl_ofi_packed_t packed;
    btl_ofi_rkey_t *rk;

    if (size != sizeof(packed)) {
        util_error("btl/ofi: packed key from peer %d has %zu bytes, expected %zu", ep->peer, size,
                   sizeof(packed));
        return UTIL_ERR_INVALID;
    }
    memcpy(&packed, buf, sizeof(packed));
    rk = calloc(1, sizeof(*rk));
    if (rk == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    rk->super.remote_base = packed.base;
    rk->super.length = packed.len;
    rk->key = packed.key;
    rk->offset = oif->virt_addr ? 0 : packed.base;
    *rkey_p = &rk->super;
    return UTIL_OK;
}

static util_status_t btl_ofi_rkey_release(btl_rkey_t *rkey)
{
    free(btl_ofi_rkey(rkey));
    return UTIL_OK;
}

/* ---- endpoints ---- */
/* Opens the endpoint to peer (the PE's thread): its address and its count
 * of our messages, from the bootstrap. */
util_status_t btl_ofi_ep_open(btl_ofi_iface_t *oif, int peer, btl_ofi_ep_t **oep_p)
{
    btl_iface_t *iface = &oif->super;
    uint8_t blob[sizeof(btl_ofi_packed_t) + BTL_OFI_ADDR_MAX],
        *addr = blob + sizeof(btl_ofi_packed_t);
    btl_ofi_packed_t am;
    char key[BOOTSTRAP_KEY_MAX];
    btl_ofi_ep_t *oep;
    size_t got;
    util_status_t status;
    int ret;

    status = btl_iface_key(iface, "addr", key, sizeof(key));
    if (status != UTIL_OK) {
        return status;
    }
    status = bootstrap_get(peer, key, blob, sizeof(blob), &got);
    if (status == UTIL_OK && got <= sizeof(am)) {
        status = UTIL_ERR_INVALID;
    }
    if (status != UTIL_OK) {
        util_error("btl/ofi: no address for peer %d (%s): %s", peer, key,
                   util_status_string(status));
        return status;
    }
    oep = calloc(1, sizeof(*oep));
    if (oep == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    /* The peer's count of applied messages (base 0: it takes none). */
    memcpy(&am, blob, sizeof(am));
    if (oif->rx_cq != NULL && am.base != 0) {
        oep->am = 1;
        oep->am_rkey.super.remote_base = am.base;
        oep->am_rkey.super.length = am.len;
        oep->am_rkey.key = am.key;
        oep->am_rkey.offset = oif->virt_addr ? 0 : am.base;
        oep->am_raddr = am.base + (uint64_t)iface->ctx->rank * sizeof(uint64_t);
    }
    ret = fi_av_insert(oif->av, addr, 1, &oep->addr, 0, NULL);
    if (ret != 1) {
        util_error("btl/ofi: fi_av_insert for peer %d: %s", peer,
                   ret < 0 ? btl_ofi_lib.strerror(-ret) : "address rejected");
        free(oep);
        return ret < 0 ? btl_ofi_status(ret) : UTIL_ERR_UNREACHABLE;
    }
    {
        size_t len = sizeof(oep->where);
        if (fi_av_straddr(oif->av, addr, oep->where, &len) == NULL) {
            snprintf(oep->where, sizeof(oep->where), "(address not printable)");
        }
    }
    oep->super.iface = iface;
    oep->super.peer = peer;
    btl_ofi_tx_lock(oif); /* pongs look endpoints up from any thread */
    oif->peers[peer] = oep;
    btl_ofi_tx_unlock(oif);
    *oep_p = oep;
    return UTIL_OK;
}

/* The endpoint may exist already: opened to answer the peer's pings. */
static util_status_t btl_ofi_ep_connect(btl_iface_t *iface, int peer, btl_ep_t **ep_p)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(iface);
    btl_ofi_ep_t *oep = oif->peers[peer];
    util_status_t status = oep != NULL ? UTIL_OK : btl_ofi_ep_open(oif, peer, &oep);

    if (status == UTIL_OK) {
        *ep_p = &oep->super;
    }
    return status;
}

static util_status_t btl_ofi_ep_disconnect(btl_ep_t *ep)
{
    btl_ofi_iface_t *oif = btl_ofi_iface(ep->iface);
    btl_ofi_ep_t *oep = btl_ofi_ep(ep);

    for (btl_ofi_ep_t **link = &oif->am_dirty; *link != NULL; link = &(*link)->am_next) {
        if (*link == oep) {
            *link = oep->am_next;
            break;
        }
    }
    btl_ofi_tx_lock(oif); /* the helper thread may be sending its batch or a pong */
    oif->peers[oep->super.peer] = NULL;
    for (int i = 0; i < oif->num_batched; i++) {
        if (oif->batched[i] == oep) {
            oif->batched[i] = oif->batched[oif->num_batched - 1];
            __atomic_store_n(&oif->num_batched, oif->num_batched - 1, __ATOMIC_RELEASE);
            break;
        }
    }
    btl_ofi_tx_unlock(oif);
    /* The AV entry goes with the AV at iface_close: peers may still be
     * reaching us until then, and removal is optional for providers. */
    free(oep->msg);
    free(oep);
    return UTIL_OK;
}

/* ---- iface ---- */
static void btl_ofi_close_fid(struct fid *fid, const char *what)
{
    int ret;

    if (fid == NULL) {
        return;
    }
    ret = fi_close(fid);
    if (ret != 0) {
        util_warn("btl/ofi: fi_close(%s): %s", what, btl_ofi_lib.strerror(-ret));
    }
}

static void btl_ofi_teardown(btl_ofi_iface_t *oif)
{
    btl_helper_stop(&oif->helper);
    btl_ofi_close_fid(oif->ep != NULL ? &oif->ep->fid : NULL, "ep");
    btl_ofi_close_fid(oif->rx_cq != NULL ? &oif->rx_cq->fid : NULL, "message cq");
    btl_ofi_unreg_free(oif->rx_mr, oif->rx_buf);
    btl_ofi_unreg_free(oif->am_mr, oif->am_applied);
    btl_ofi_unreg_free(oif->scratch_mr, NULL); /* the scratch words live in oif */
    btl_ofi_unreg_free(oif->bounce_mr, oif->bounce);
    btl_ofi_unreg_free(oif->ring_mr, oif->ring);
    btl_ofi_close_fid(oif->av != NULL ? &oif->av->fid : NULL, "av");
    btl_ofi_close_fid(oif->wr_cntr != NULL ? &oif->wr_cntr->fid : NULL, "write counter");
    btl_ofi_close_fid(oif->rd_cntr != NULL ? &oif->rd_cntr->fid : NULL, "read counter");
    btl_ofi_close_fid(oif->cq != NULL ? &oif->cq->fid : NULL, "cq");
    btl_ofi_close_fid(oif->domain != NULL ? &oif->domain->fid : NULL, "domain");
    btl_ofi_close_fid(oif->fabric != NULL ? &oif->fabric->fid : NULL, "fabric");
    if (oif->info != NULL) {
        btl_ofi_lib.freeinfo(oif->info);
    }
    if (oif->wake_fd >= 0) {
        close(oif->wake_fd);
    }
    free(oif->batched);
    if (oif->peers != NULL) {
        for (int i = 0; i < oif->super.ctx->size; i++) {
            if (oif->peers[i] != NULL) { /* connected for a pong, never handed out */
                free(oif->peers[i]->msg);
                free(oif->peers[i]);
            }
        }
        free(oif->peers);
    }
    free(oif->pong_owed);
    free(oif->pong_list);
    free(oif);
}

static util_status_t btl_ofi_iface_close(btl_iface_t *iface)
{
    btl_ofi_teardown(btl_ofi_iface(iface));
    return UTIL_OK;
}

/* Which atomic forms the provider offers, per op and size. */
static void btl_ofi_query_atomics(btl_ofi_iface_t *oif)
{
    for (int op = 0; op < BTL_AMO_LAST; op++) {
        for (int wide = 0; wide < 2; wide++) {
            enum fi_datatype dt = wide ? FI_UINT64 : FI_UINT32;
            struct fi_atomic_attr attr;
            uint64_t fetch_flag = op == BTL_AMO_CSWAP ? FI_COMPARE_ATOMIC : FI_FETCH_ATOMIC;

            oif->amo[op][wide] = 0;
            if (op != BTL_AMO_FETCH && op != BTL_AMO_SWAP && op != BTL_AMO_CSWAP &&
                fi_query_atomic(oif->domain, dt, btl_ofi_amo_op[op], &attr, 0) == 0) {
                oif->amo[op][wide] |= BTL_OFI_AMO_BASE;
            }
            if (fi_query_atomic(oif->domain, dt, btl_ofi_amo_op[op], &attr, fetch_flag) == 0) {
                oif->amo[op][wide] |= BTL_OFI_AMO_FETCH;
            }
        }
    }
}

/* 1 when every 32-bit (or 64-bit) op works, natively or emulated. */
static int btl_ofi_amo_complete(btl_ofi_iface_t *oif, int wide)
{
    if (oif->amo[BTL_AMO_CSWAP][wide] & BTL_OFI_AMO_FETCH) {
        return 1;
    }
    for (int op = 0; op < BTL_AMO_LAST; op++) {
        if (!(oif->amo[op][wide] & BTL_OFI_AMO_FETCH)) {
            return 0;
        }
    }
    return 1;
}

/* What the backend asks of a provider (the same for btl_ofi_describe). */
static struct fi_info *btl_ofi_hints(void)
{
    struct fi_info *hints = btl_ofi_lib.dupinfo(NULL);

    if (hints == NULL) {
        return NULL;
    }
    hints->caps = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    hints->mode = 0;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = BTL_OFI_MR_MODES;
    hints->domain_attr->threading = FI_THREAD_SAFE; /* the progress thread */
    hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    return hints;
}

static util_status_t btl_ofi_getinfo(struct fi_info **info_p)
{
    struct fi_info *hints, *list = NULL, *pick;
    const char *prov = NULL;
    util_status_t status;
    int ret;

    status = util_env_get_string("RMB_OFI_PROVIDER", &prov);
    if (status != UTIL_OK) {
        return status;
    }
    /* sockets' progress threads spin 10 ms before sleeping; on a node
     * where PEs outnumber cores that starves the peers' progress threads
     * and every round trip takes a scheduler tick. A user's value wins. */
    (void)setenv("FI_SOCKETS_PE_WAITTIME", "0", 0);
    hints = btl_ofi_hints();
    if (hints == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    if (prov != NULL && prov[0] != '\0') {
        hints->fabric_attr->prov_name = strdup(prov);
        if (hints->fabric_attr->prov_name == NULL) {
            btl_ofi_lib.freeinfo(hints);
            return UTIL_ERR_NO_MEMORY;
        }
    }
    /* Messages too where the provider has them (flag order message). */
    hints->caps |= FI_MSG;
    ret = btl_ofi_lib.getinfo(BTL_OFI_API_VERSION, NULL, NULL, 0, hints, &list);
    if (ret != 0) {
        hints->caps &= ~(uint64_t)FI_MSG;
        ret = btl_ofi_lib.getinfo(BTL_OFI_API_VERSION, NULL, NULL, 0, hints, &list);
    }
    btl_ofi_lib.freeinfo(hints);
    if (ret != 0) {
        util_error("btl/ofi: no RDM provider with RMA and atomics%s%s: %s",
                   prov != NULL && prov[0] != '\0' ? " named " : "", prov != NULL ? prov : "",
                   btl_ofi_lib.strerror(-ret));
        return btl_ofi_status(ret);
    }
    /* Without an explicit choice, skip shm: it reaches one node only. */
    pick = list;
    if ((prov == NULL || prov[0] == '\0') && getenv("FI_PROVIDER") == NULL) {
        for (pick = list; pick != NULL; pick = pick->next) {
            if (strcmp(pick->fabric_attr->prov_name, "shm") != 0) {
                break;
            }
        }
        if (pick == NULL) {
            pick = list;
        }
    }
    *info_p = btl_ofi_lib.dupinfo(pick);
    btl_ofi_lib.freeinfo(list);
    return *info_p != NULL ? UTIL_OK : UTIL_ERR_NO_MEMORY;
}

static util_status_t btl_ofi_choose_flag_order(btl_ofi_iface_t *oif)
{
    const char *choice = NULL;
    struct fi_info *info = oif->info;
    int has_fence = (info->caps & FI_FENCE) != 0;
    int ordered = (info->tx_attr->msg_order & (FI_ORDER_RMA_WAW | FI_ORDER_WAW)) != 0 &&
                  info->ep_attr->max_order_waw_size > 0;
    util_status_t status = util_env_get_string("RMB_OFI_FLAG_ORDER", &choice);
    /* Messages need FI_MSG, and a header that can be injected or staged.
     * The target's progress applies them: auto takes them with the helper
     * thread, which applies them while the PE stays away, or without it
     * where the provider's progress is manual (rxm: its RMA lands only in
     * the target's calls too, and the other way, the flag after the
     * payload's delivery completion, waits a round trip per message: rpipe
     * 8 B one-way 19.6-28 us against 5.4-7.7, broadcast 18 us against 4.3). */
    int messages =
        (info->caps & FI_MSG) != 0 && (btl_ofi_am_small(oif) || oif->eager_size > oif->inject_size);
    int applied =
        oif->helper.interval_usec != 0 || info->domain_attr->data_progress == FI_PROGRESS_MANUAL;

    if (status != UTIL_OK) {
        return status;
    }
    if (strcmp(choice, "auto") == 0) {
        oif->flag_order = ordered               ? BTL_OFI_FLAG_NATIVE
                          : has_fence           ? BTL_OFI_FLAG_FENCE
                          : messages && applied ? BTL_OFI_FLAG_MESSAGE
                                                : BTL_OFI_FLAG_WAIT;
    } else if (strcmp(choice, "native") == 0) {
        oif->flag_order = BTL_OFI_FLAG_NATIVE;
    } else if (strcmp(choice, "fence") == 0 && has_fence) {
        oif->flag_order = BTL_OFI_FLAG_FENCE;
    } else if (strcmp(choice, "message") == 0 && messages) {
        oif->flag_order = BTL_OFI_FLAG_MESSAGE;
    } else if (strcmp(choice, "wait") == 0) {
        oif->flag_order = BTL_OFI_FLAG_WAIT;
    } else {
        util_error("RMB_OFI_FLAG_ORDER=\"%s\": expected auto, native, wait%s%s", choice,
                   has_fence ? ", fence" : " (provider has no FI_FENCE)",
                   messages ? ", message" : " (no messages: provider has no FI_MSG)");
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

/* The fence mode: RMB_OFI_FENCE=auto|ordered|flag|wait. auto: ordered when
 * the provider orders every read/write pair without size limit, else flag
 * when it has FI_FENCE, else wait. */
static util_status_t btl_ofi_choose_fence(btl_ofi_iface_t *oif)
{
    const uint64_t all = FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_WAR | FI_ORDER_WAW;
    struct fi_info *info = oif->info;
    int has_fence = (info->caps & FI_FENCE) != 0;
    int ordered = (info->tx_attr->msg_order & all) == all &&
                  info->ep_attr->max_order_raw_size >= oif->max_msg &&
                  info->ep_attr->max_order_war_size >= oif->max_msg &&
                  info->ep_attr->max_order_waw_size >= oif->max_msg;
    const char *choice = NULL;
    util_status_t status = util_env_get_string("RMB_OFI_FENCE", &choice);

    if (status != UTIL_OK) {
        return status;
    }
    if (strcmp(choice, "auto") == 0) {
        oif->fence_mode = ordered     ? BTL_OFI_FENCE_ORDERED
                          : has_fence ? BTL_OFI_FENCE_FLAG
                                      : BTL_OFI_FENCE_WAIT;
    } else if (strcmp(choice, "ordered") == 0 && ordered) {
        oif->fence_mode = BTL_OFI_FENCE_ORDERED;
    } else if (strcmp(choice, "flag") == 0 && has_fence) {
        oif->fence_mode = BTL_OFI_FENCE_FLAG;
    } else if (strcmp(choice, "wait") == 0) {
        oif->fence_mode = BTL_OFI_FENCE_WAIT;
    } else {
        util_error("RMB_OFI_FENCE=\"%s\": expected auto, wait%s%s", choice,
                   ordered ? ", ordered" : "", has_fence ? ", flag" : "");
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

static const char *btl_ofi_fence_name(btl_ofi_fence_mode_t mode)
{
    switch (mode) {
    case BTL_OFI_FENCE_ORDERED:
        return "ordered";
    case BTL_OFI_FENCE_FLAG:
        return "flag";
    default:
        return "wait";
    }
}

/* The requests and the bounce ring for staged puts. */
static util_status_t btl_ofi_reqs_init(btl_ofi_iface_t *oif)
{
    util_status_t status;

    for (int i = BTL_OFI_REQS - 1; i >= 0; i--) {
        btl_ofi_req_t *req = &oif->reqs[i];

        req->slot = i < BTL_OFI_SLOTS ? i : -1;
        if (i < BTL_OFI_SLOTS) {
            req->next_free = oif->staged_free;
            oif->staged_free = req;
        } else {
            req->next_free = oif->plain_free;
            oif->plain_free = req;
        }
    }
    if (oif->eager_size <= oif->inject_size) {
        oif->eager_size = 0; /* injecting covers it */
        return UTIL_OK;
    }
    if (posix_memalign(&oif->ring, 4096, oif->eager_size * BTL_OFI_SLOTS) != 0) {
        return UTIL_ERR_NO_MEMORY;
    }
    status = btl_ofi_reg(oif, oif->ring, oif->eager_size * BTL_OFI_SLOTS, &oif->ring_mr);
    if (status != UTIL_OK) {
        free(oif->ring);
        oif->ring = NULL;
    }
    return status;
}

static util_status_t btl_ofi_iface_open(btl_ctx_t *ctx, int index, btl_iface_t **iface_p);

static const btl_ops_t btl_ofi_ops = {
    .iface_close = btl_ofi_iface_close,
    .ep_connect = btl_ofi_ep_connect,
    .ep_disconnect = btl_ofi_ep_disconnect,
    .mem_alloc = btl_stub_mem_alloc,
    .mem_remap = btl_stub_mem_remap,
    .mem_reg = btl_ofi_mem_reg,
    .mem_dereg = btl_ofi_mem_dereg,
    .rkey_pack = btl_ofi_rkey_pack,
    .rkey_unpack = btl_ofi_rkey_unpack,
    .rkey_release = btl_ofi_rkey_release,
    .put = btl_ofi_put,
    .get = btl_ofi_get,
    .put_flag = btl_ofi_put_flag,
    .put_flag_rec = btl_ofi_put_flag_rec,
    .get_flag = btl_ofi_get_flag,
    .amo_post = btl_ofi_amo_post,
    .put_batch = btl_ofi_put_batch,
    .amo_post_batch = btl_ofi_amo_post_batch,
    .amo_fetch = btl_ofi_amo_fetch,
    .amo_fetch_nbi = btl_amo_fetch_nbi_at_once,
    .fence = btl_ofi_fence,
    .quiet = btl_ofi_quiet,
    .progress = btl_ofi_progress,
};

/* Every provider that offers what btl_ofi_getinfo asks for (RDM, RMA,
 * atomics), one line per provider and domain; auto takes the first that
 * is not shm unless RMB_OFI_PROVIDER or FI_PROVIDER names one. */
static int btl_ofi_describe(btl_describe_func_t report, void *arg)
{
    struct fi_info *hints, *list = NULL;
    char line[256], version[32];
    int ret, count = 0;

    if (btl_ofi_lib_open() != UTIL_OK) {
        report(arg, "ofi", "library", "libfabric cannot be loaded (the error above)");
        return 0;
    }
    hints = btl_ofi_hints();
    snprintf(version, sizeof(version), "libfabric %u.%u", FI_MAJOR(btl_ofi_lib.version()),
             FI_MINOR(btl_ofi_lib.version()));
    report(arg, "ofi", "library", version);
    if (hints == NULL) {
        return 0;
    }
    (void)setenv("FI_SOCKETS_PE_WAITTIME", "0", 0); /* as btl_ofi_getinfo */
    ret = btl_ofi_lib.getinfo(BTL_OFI_API_VERSION, NULL, NULL, 0, hints, &list);
    btl_ofi_lib.freeinfo(hints);
    if (ret != 0) {
        snprintf(line, sizeof(line), "none with RDM, RMA and atomics (%s)",
                 btl_ofi_lib.strerror(-ret));
        report(arg, "ofi", "provider", line);
        return 0;
    }
    for (struct fi_info *info = list; info != NULL; info = info->next) {
        int seen = 0;

        for (struct fi_info *prev = list; prev != info && !seen; prev = prev->next) {
            seen = strcmp(prev->fabric_attr->prov_name, info->fabric_attr->prov_name) == 0 &&
                   strcmp(prev->domain_attr->name, info->domain_attr->name) == 0;
        }
        if (seen) {
            continue; /* the same provider and domain with other attributes */
        }
        snprintf(line, sizeof(line), "%s (domain %s): RDM, RMA, atomics",
                 info->fabric_attr->prov_name, info->domain_attr->name);
        report(arg, "ofi", "provider", line);
        count++;
    }
    btl_ofi_lib.freeinfo(list);
    return count > 0;
}

const btl_component_t btl_ofi_component = {
    .name = "ofi",
    .on_node_only = 0,
    .iface_open = btl_ofi_iface_open,
    .describe = btl_ofi_describe,
};

static const char *btl_ofi_flag_order_name(btl_ofi_flag_order_t order)
{
    switch (order) {
    case BTL_OFI_FLAG_NATIVE:
        return "native";
    case BTL_OFI_FLAG_FENCE:
        return "fence";
    case BTL_OFI_FLAG_MESSAGE:
        return "message";
    default:
        return "wait";
    }
}

/* Providers with manual data progress serve peers only while someone calls
 * them: a helper thread does when the PE does not (RMB_OFI_PROGRESS_USEC). */
static int btl_ofi_wants_thread(const btl_ofi_iface_t *oif)
{
    return (oif->info->domain_attr->data_progress == FI_PROGRESS_MANUAL ||
            oif->flag_order == BTL_OFI_FLAG_MESSAGE) &&
           oif->helper.interval_usec != 0;
}

/* RMB_OFI_AM_BATCH: bytes of records held per peer (0: no batches). */
static util_status_t btl_ofi_batch_size(btl_ofi_iface_t *oif)
{
    const long limit = BTL_OFI_AM_SIZE - (long)sizeof(btl_ofi_am_hdr_t);
    long max = limit;
    util_status_t status = util_env_get_int("RMB_OFI_AM_BATCH", &max);

    if (status != UTIL_OK) {
        return status;
    }
    if (max != 0 && (max < 64 || max > limit)) {
        util_error("btl/ofi: RMB_OFI_AM_BATCH is %ld; use 0 (off) or 64 to %ld bytes", max, limit);
        return UTIL_ERR_INVALID;
    }
    oif->batch_max = (size_t)max;
    return UTIL_OK;
}

/* How large a message we inject: tcp;ofi_rxm reports 64 bytes but takes
 * up to its buffer size when asked (FI_OFI_RXM_BUFFER_SIZE, 16 KiB), so
 * every message goes without a bounce-ring slot and from any thread
 * (batches); other providers keep what they report. */
static size_t btl_ofi_am_inject_size(btl_ofi_iface_t *oif)
{
    struct fi_info *hints, *got = NULL;
    size_t size = oif->inject_size;

    if (!(oif->info->caps & FI_MSG) || size >= BTL_OFI_AM_SIZE ||
        (hints = btl_ofi_hints()) == NULL) {
        return size;
    }
    hints->caps |= FI_MSG;
    hints->fabric_attr->prov_name = strdup(oif->info->fabric_attr->prov_name);
    hints->tx_attr->inject_size = BTL_OFI_AM_SIZE;
    if (hints->fabric_attr->prov_name != NULL &&
        btl_ofi_lib.getinfo(BTL_OFI_API_VERSION, NULL, NULL, 0, hints, &got) == 0 && got != NULL &&
        got->tx_attr->inject_size >= BTL_OFI_AM_SIZE) {
        oif->info->tx_attr->inject_size = BTL_OFI_AM_SIZE; /* the endpoint takes it from here */
        size = BTL_OFI_AM_SIZE;
    }
    if (got != NULL) {
        btl_ofi_lib.freeinfo(got);
    }
    btl_ofi_lib.freeinfo(hints);
    return size;
}

/* Opens a CQ with attr's wait object, else with none (the helper then
 * sleeps its interval); *fd_p gets its wait fd, or -1. */
static util_status_t btl_ofi_cq_open(btl_ofi_iface_t *oif, struct fi_cq_attr *attr,
                                     struct fid_cq **cq_p, int *fd_p, const char *what)
{
    int ret = fi_cq_open(oif->domain, attr, cq_p, NULL);

    if (ret != 0 && attr->wait_obj != FI_WAIT_NONE) {
        attr->wait_obj = FI_WAIT_NONE;
        ret = fi_cq_open(oif->domain, attr, cq_p, NULL);
    }
    if (ret != 0) {
        *cq_p = NULL;
        return btl_ofi_fail(what, ret);
    }
    if (attr->wait_obj == FI_WAIT_FD && fi_control(&(*cq_p)->fid, FI_GETWAIT, fd_p) != 0) {
        *fd_p = -1;
    }
    return UTIL_OK;
}

static util_status_t btl_ofi_iface_open(btl_ctx_t *ctx, int index, btl_iface_t **iface_p)
{
    struct fi_av_attr av_attr = {0};
    struct fi_cq_attr cq_attr = {0};
    struct fi_cntr_attr cntr_attr = {0};
    uint8_t addr[BTL_OFI_ADDR_MAX];
    size_t addrlen = sizeof(addr);
    char key[BOOTSTRAP_KEY_MAX];
    btl_ofi_iface_t *oif;
    unsigned caps;
    util_status_t status;
    int ret;

    oif = calloc(1, sizeof(*oif));
    if (oif == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    oif->super.ops = btl_ofi_ops;
    btl_iface_base_init(&oif->super, &btl_ofi_component, ctx, index, 0);
    oif->next_key = 1;
    oif->peers = calloc((size_t)ctx->size, sizeof(*oif->peers));
    if (oif->peers == NULL) {
        free(oif);
        return UTIL_ERR_NO_MEMORY;
    }
    oif->wait_fd = -1;
    oif->rx_wait_fd = -1;
    oif->wake_fd = -1;
    status = util_env_get_int("RMB_OFI_PROGRESS_USEC", &oif->helper.interval_usec);
    if (status == UTIL_OK) {
        status = util_env_get_bool("RMB_OFI_PROGRESS_FD", &oif->progress_fd);
    }
    if (status == UTIL_OK) {
        status = util_env_get_size("RMB_OFI_BOUNCE_SIZE", &oif->bounce_size);
    }
    if (status == UTIL_OK) {
        status = util_env_get_size("RMB_OFI_EAGER_SIZE", &oif->eager_size);
    }
    if (status == UTIL_OK) {
        status = btl_ofi_batch_size(oif);
    }
    if (status == UTIL_OK) {
        status = btl_wait_bound_init(&oif->bound, "btl/ofi", "RMB_OFI_TIMEOUT_SEC");
    }
    if (status == UTIL_OK) {
        status = btl_ofi_lib_open();
    }
    if (status == UTIL_OK) {
        status = btl_ofi_getinfo(&oif->info);
    }
    if (status != UTIL_OK) {
        goto err;
    }
    oif->mr_mode = oif->info->domain_attr->mr_mode;
    oif->virt_addr = (oif->mr_mode & FI_MR_VIRT_ADDR) != 0;
    oif->inject_size = oif->info->tx_attr->inject_size;
    oif->am_inject = btl_ofi_am_inject_size(oif);
    oif->comp_flag = FI_DELIVERY_COMPLETE;
    oif->max_msg =
        oif->info->ep_attr->max_msg_size > 0 ? oif->info->ep_attr->max_msg_size : (size_t)1 << 30;
    /* Payloads larger than the placement-order guarantee wait (native
     * mode); RMB_OFI_FLAG_ORDER=native forced on an unordered provider
     * means "trust the wire order". */
    oif->max_waw = oif->info->ep_attr->max_order_waw_size > 0
                       ? oif->info->ep_attr->max_order_waw_size
                       : SIZE_MAX;
    status = btl_ofi_choose_flag_order(oif);
    if (status == UTIL_OK) {
        status = btl_ofi_choose_fence(oif);
    }
    if (status != UTIL_OK) {
        goto err;
    }

    ret = btl_ofi_lib.fabric(oif->info->fabric_attr, &oif->fabric, NULL);
    if (ret != 0) {
        status = btl_ofi_fail("fi_fabric", ret);
        goto err;
    }
    ret = fi_domain(oif->fabric, oif->info, &oif->domain, NULL);
    if (ret != 0) {
        status = btl_ofi_fail("fi_domain", ret);
        goto err;
    }
    av_attr.type = oif->info->domain_attr->av_type != FI_AV_UNSPEC ? oif->info->domain_attr->av_type
                                                                   : FI_AV_TABLE;
    ret = fi_av_open(oif->domain, &av_attr, &oif->av, NULL);
    if (ret != 0) {
        status = btl_ofi_fail("fi_av_open", ret);
        goto err;
    }
    /* The helper thread (manual progress) sleeps in the CQ's wait fd
     * (RMB_OFI_PROGRESS_FD; it costs tcp;ofi_rxm about a tenth of its
     * message rate, docs/network.md); no other wait object: a counter with
     * one signals it on every completion (a system call per operation on
     * the util providers). */
    cq_attr.format = FI_CQ_FORMAT_CONTEXT;
    cq_attr.wait_obj = btl_ofi_wants_thread(oif) && oif->progress_fd ? FI_WAIT_FD : FI_WAIT_NONE;
    status = btl_ofi_cq_open(oif, &cq_attr, &oif->cq, &oif->wait_fd, "fi_cq_open");
    if (status == UTIL_OK && oif->flag_order == BTL_OFI_FLAG_MESSAGE) {
        /* Messages complete on a CQ of their own, which the helper thread
         * reads too (the PE alone reads the other one). */
        status =
            btl_ofi_cq_open(oif, &cq_attr, &oif->rx_cq, &oif->rx_wait_fd, "fi_cq_open (messages)");
    }
    if (status != UTIL_OK) {
        goto err;
    }
    cntr_attr.events = FI_CNTR_EVENTS_COMP;
    cntr_attr.wait_obj = FI_WAIT_NONE;
    ret = fi_cntr_open(oif->domain, &cntr_attr, &oif->wr_cntr, NULL);
    if (ret == 0) {
        ret = fi_cntr_open(oif->domain, &cntr_attr, &oif->rd_cntr, NULL);
    }
    if (ret != 0) {
        status = btl_ofi_fail("fi_cntr_open", ret);
        goto err;
    }
    ret = fi_endpoint(oif->domain, oif->info, &oif->ep, NULL);
    if (ret != 0) {
        status = btl_ofi_fail("fi_endpoint", ret);
        goto err;
    }
    ret = fi_ep_bind(oif->ep, &oif->av->fid, 0);
    if (ret == 0 && oif->rx_cq != NULL) {
        ret = fi_ep_bind(oif->ep, &oif->cq->fid, FI_TRANSMIT | FI_SELECTIVE_COMPLETION);
        if (ret == 0) {
            ret = fi_ep_bind(oif->ep, &oif->rx_cq->fid, FI_RECV);
        }
    } else if (ret == 0) {
        ret = fi_ep_bind(oif->ep, &oif->cq->fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION);
    }
    if (ret == 0) {
        ret = fi_ep_bind(oif->ep, &oif->wr_cntr->fid, FI_WRITE);
    }
    if (ret == 0) {
        ret = fi_ep_bind(oif->ep, &oif->rd_cntr->fid, FI_READ);
    }
    if (ret != 0) {
        status = btl_ofi_fail("fi_ep_bind", ret);
        goto err;
    }
    ret = fi_enable(oif->ep);
    if (ret != 0) {
        status = btl_ofi_fail("fi_enable", ret);
        goto err;
    }
    ret = fi_getname(&oif->ep->fid, addr, &addrlen);
    if (ret != 0) {
        status = btl_ofi_fail("fi_getname", ret);
        goto err;
    }

    /* After fi_enable: FI_MR_ENDPOINT binds MRs to the enabled endpoint. */
    status = btl_ofi_reg(oif, &oif->scratch, sizeof(oif->scratch), &oif->scratch_mr);
    if (status != UTIL_OK) {
        goto err;
    }
    if (oif->mr_mode & FI_MR_LOCAL) {
        if (oif->bounce_size < 4096) {
            oif->bounce_size = 4096;
        }
        if (posix_memalign(&oif->bounce, 4096, oif->bounce_size) != 0) {
            status = UTIL_ERR_NO_MEMORY;
            goto err;
        }
        status = btl_ofi_reg(oif, oif->bounce, oif->bounce_size, &oif->bounce_mr);
        if (status != UTIL_OK) {
            goto err;
        }
    }

    status = btl_ofi_reqs_init(oif);
    if (status == UTIL_OK && oif->rx_cq != NULL) {
        status = btl_ofi_am_init(oif);
    }
    if (status != UTIL_OK) {
        goto err;
    }

    btl_ofi_query_atomics(oif);
    caps = BTL_CAP_ANY_MEMORY | BTL_CAP_NONBLOCKING;
    if (btl_ofi_amo_complete(oif, 0)) {
        caps |= BTL_CAP_AMO32;
    }
    if (btl_ofi_amo_complete(oif, 1)) {
        caps |= BTL_CAP_AMO64;
    }
    if (oif->flag_order != BTL_OFI_FLAG_WAIT) {
        caps |= BTL_CAP_FLAG_ORDERED;
    }
    /* Software providers apply remote atomics in the target process with
     * CPU atomic instructions (libfabric's ofi_atomic built with compiler
     * atomics); a NIC's atomics are not coherent with the CPU's. */
    {
        static const char *const software[] = {"tcp", "sockets", "udp", "shm", "net"};
        const char *prov = oif->info->fabric_attr->prov_name;
        for (size_t i = 0; i < sizeof(software) / sizeof(software[0]); i++) {
            if (strstr(prov, software[i]) != NULL && strstr(prov, "verbs") == NULL) {
                caps |= BTL_CAP_AMO_CPU;
            }
        }
        /* A software provider with automatic progress runs its own thread
         * (sockets): our waits must leave it a core, or every message
         * waits for a time slice (barrier over sockets: 1 ms, 8 round
         * trips, while PEs spun). */
        if ((caps & BTL_CAP_AMO_CPU) != 0 &&
            oif->info->domain_attr->data_progress == FI_PROGRESS_AUTO) {
            util_wait_busy_threads(2);
        }
    }
    /* Manual progress (rxm): peers' operations land in our progress calls,
     * which cannot tell that they did; a napping PE would answer them late
     * (4 PEs on 2 nodes, fetch_add 25 -> 31 us with naps). */
    if (oif->info->domain_attr->data_progress == FI_PROGRESS_MANUAL) {
        util_wait_serves_unseen();
    }
    oif->super.caps = caps;
    /* Batches where the target applies atomics with CPU atomics (ours and
     * the provider's agree), a whole message is injected from any thread,
     * and the helper thread sends what a PE that stays away held back. */
    if (oif->flag_order != BTL_OFI_FLAG_MESSAGE || !(caps & BTL_CAP_AMO_CPU) ||
        oif->am_inject < BTL_OFI_AM_SIZE || !btl_ofi_wants_thread(oif)) {
        oif->batch_max = 0;
    }
    if (oif->batch_max > 0) {
        oif->batched = calloc((size_t)oif->super.ctx->size, sizeof(*oif->batched));
        oif->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (oif->batched == NULL) {
            status = UTIL_ERR_NO_MEMORY;
            goto err;
        }
        oif->helper.wake = btl_ofi_wake;
    }

    /* Published: where peers read our count of their messages (zeros:
     * we take none), then the endpoint's address. */
    {
        btl_ofi_packed_t am = {0, 0, 0};
        uint8_t blob[sizeof(am) + BTL_OFI_ADDR_MAX];

        if (oif->am_mr != NULL) {
            am.base = (uint64_t)(uintptr_t)oif->am_applied;
            am.len = (uint64_t)oif->super.ctx->size * sizeof(uint64_t);
            am.key = oif->am_mr->key;
        }
        memcpy(blob, &am, sizeof(am));
        memcpy(blob + sizeof(am), addr, addrlen);
        status = btl_iface_key(&oif->super, "addr", key, sizeof(key));
        if (status == UTIL_OK) {
            status = bootstrap_put(key, blob, sizeof(am) + addrlen);
        }
    }
    if (status != UTIL_OK) {
        goto err;
    }
    if (oif->info->domain_attr->data_progress == FI_PROGRESS_MANUAL &&
        oif->helper.interval_usec == 0) {
        oif->super.caps |= BTL_CAP_PE_PROGRESS;
    }
    if (btl_ofi_wants_thread(oif)) {
        oif->helper.drain = btl_ofi_drain;
        oif->helper.block = btl_ofi_block;
        oif->helper.arg = oif;
        status = btl_helper_start(&oif->helper, "btl/ofi");
        if (status != UTIL_OK) {
            goto err;
        }
    }
    {
        char where[64];
        size_t len = sizeof(where);
        if (fi_av_straddr(oif->av, addr, where, &len) == NULL) {
            snprintf(where, sizeof(where), "?");
        }
        util_debug("btl/ofi: my address %s (published to the peers)", where);
    }
    util_debug("btl/ofi: provider %s, domain %s, mr_mode 0x%llx, inject %zu (messages %zu), "
               "eager %zu, batch %zu, flag order %s, fence %s, progress thread %s",
               oif->info->fabric_attr->prov_name, oif->info->domain_attr->name,
               (unsigned long long)oif->mr_mode, oif->inject_size, oif->am_inject, oif->eager_size,
               oif->batch_max, btl_ofi_flag_order_name(oif->flag_order),
               btl_ofi_fence_name(oif->fence_mode),
               !oif->helper.running ? "off"
               : oif->wait_fd >= 0  ? "on (sleeps in the CQ fd)"
                                    : "on (interval)");
    *iface_p = &oif->super;
    return UTIL_OK;

err:
    btl_ofi_teardown(oif);
    return status;
}
