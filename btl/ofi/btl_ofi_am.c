/*
 * btl/ofi's messages (flag order message, docs/btl_ofi.md "Messages" and
 * "Batches"): the target applies them, the sender builds them, batches
 * OpenSHMEM's small writes into them and pings for their application.
 *
 * Target. Each iface posts BTL_OFI_AM_RX receive buffers on a CQ of their
 * own; whoever drives the provider (the PE's progress, the helper thread;
 * one at a time, rx_lock) applies arrived messages in the order the
 * buffers were posted, which is the order they were sent (FI_ORDER_SAS),
 * and counts them in am_applied[origin], a registered word per peer.
 *
 * Sender. Every flag to a peer travels as a message (put_flag, get_flag,
 * larger payloads' flags after their delivered RMA write), so flags are
 * seen in the order they were set. Messages up to am_inject bytes are
 * built in the peer's buffer and injected (any thread, under batch_lock),
 * larger ones staged in the bounce ring (the PE's thread).
 *
 * Batches (software providers, RMB_OFI_AM_BATCH): OpenSHMEM's puts up to
 * BTL_OFI_BATCH_PUT_MAX and non-fetching atomics become btl_batch.h
 * records in the peer's buffer, sent at the next progress, quiet, fence or
 * other operation to the peer (a message to it carries them in front),
 * when full, or by the helper thread once the PE stays away.
 *
 * Application, not delivery. A delivered message may still wait in its
 * buffer, and the provider performs RMA and atomics on arrival, ahead of
 * it. So quiet pings each peer it waits for, and the peer answers once it
 * has applied what came before (a pong: its count of our messages, stored
 * into our am_pong word for it; a read of that count could overtake the
 * message it asks about); a fence only notes the count, and a later RMA or
 * atomic to that peer waits for it, or for the batches whose bytes it
 * overlaps (a small put behind a fence goes as a message: no wait).
 */
#include "btl/ofi/btl_ofi.h"
#include "util/log.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the target's side ---- */
static inline int btl_ofi_rx_trylock(btl_ofi_iface_t *oif)
{
    return btl_helper_trylock(&oif->rx_lock);
}

static inline void btl_ofi_rx_unlock(btl_ofi_iface_t *oif)
{
    btl_helper_unlock(&oif->rx_lock);
}

static inline char *btl_ofi_rx_buf(btl_ofi_iface_t *oif, unsigned i)
{
    return (char *)oif->rx_buf + (size_t)i * BTL_OFI_AM_SIZE;
}

/* (Re)posts receive buffer i; the provider may ask us to drive it first. */
static util_status_t btl_ofi_rx_post(btl_ofi_iface_t *oif, unsigned i)
{
    btl_wait_t w = BTL_WAIT_INIT;
    ssize_t ret;

    while ((ret = fi_recv(oif->ep, btl_ofi_rx_buf(oif, i), BTL_OFI_AM_SIZE, oif->rx_mr->desc,
                          FI_ADDR_UNSPEC, &oif->rx[i])) != 0) {
        util_status_t status;

        if (ret != -FI_EAGAIN) {
            return btl_ofi_fail("fi_recv", ret);
        }
        (void)fi_cntr_read(oif->wr_cntr); /* drives the provider */
        status = btl_wait_tick(&w, &oif->bound, "posting a receive buffer", -1);
        if (status != UTIL_OK) {
            return status;
        }
    }
    return UTIL_OK;
}

/* One message: its records in order (a flag with release order: a reader
 * that sees it sees what came before), then the sender's count. */
static void btl_ofi_am_apply(btl_ofi_iface_t *oif, const char *msg)
{
    btl_ofi_am_hdr_t hdr;

    memcpy(&hdr, msg, sizeof(hdr));
    if (hdr.batch_len > BTL_OFI_AM_SIZE - sizeof(hdr) ||
        hdr.origin >= (uint32_t)oif->super.ctx->size) {
        util_error("btl/ofi: malformed message (%u bytes from %u): dropped", hdr.batch_len,
                   hdr.origin);
        return;
    }
    (void)btl_batch_apply(msg + sizeof(hdr), hdr.batch_len, "btl/ofi");
    if (hdr.ping == BTL_OFI_PONG) {
        return;
    }
    __atomic_store_n(&oif->am_applied[hdr.origin], oif->am_applied[hdr.origin] + 1,
                     __ATOMIC_RELEASE);
    if (hdr.ping == BTL_OFI_PING && !oif->pong_owed[hdr.origin]) {
        oif->pong_owed[hdr.origin] = 1;
        oif->pong_list[oif->num_pongs] = (int)hdr.origin;
        __atomic_store_n(&oif->num_pongs, oif->num_pongs + 1,
                         __ATOMIC_RELAXED); /* the helper's block peeks */
    }
}

static void btl_ofi_pongs_send(btl_ofi_iface_t *oif);

/* Applies the messages that arrived, in the order their buffers were
 * posted (the order they were sent), and reposts the buffers. The PE and
 * the helper thread both call it; one of them at a time does the work. */
util_status_t btl_ofi_am_poll(btl_ofi_iface_t *oif)
{
    struct fi_cq_entry entries[BTL_OFI_CQ_BATCH];
    util_status_t status = UTIL_OK;
    ssize_t ret;

    if (oif->rx_cq == NULL || !btl_ofi_rx_trylock(oif)) {
        return UTIL_OK;
    }
    do {
        ret = fi_cq_read(oif->rx_cq, entries, BTL_OFI_CQ_BATCH);
        for (ssize_t i = 0; i < ret; i++) {
            ((btl_ofi_rx_t *)entries[i].op_context)->arrived = 1;
        }
        if (ret == -FI_EAVAIL) {
            struct fi_cq_err_entry err;

            memset(&err, 0, sizeof(err));
            if (fi_cq_readerr(oif->rx_cq, &err, 0) > 0 && err.err != FI_ECANCELED) {
                util_error("btl/ofi: receiving a message: %s (%s)", btl_ofi_lib.strerror(err.err),
                           fi_cq_strerror(oif->rx_cq, err.prov_errno, err.err_data, NULL, 0));
                status = btl_ofi_status(-(ssize_t)err.err);
                if (err.op_context != NULL) {
                    ((btl_ofi_rx_t *)err.op_context)->arrived = 2; /* repost, apply nothing */
                }
            }
            ret = 1;
        } else if (ret < 0 && ret != -FI_EAGAIN) {
            status = btl_ofi_fail("fi_cq_read (messages)", ret);
        }
        while (status == UTIL_OK && oif->rx[oif->rx_head].arrived) {
            unsigned head = oif->rx_head;

            if (oif->rx[head].arrived == 1) {
                btl_ofi_am_apply(oif, btl_ofi_rx_buf(oif, head));
            }
            oif->rx[head].arrived = 0;
            status = btl_ofi_rx_post(oif, head);
            oif->rx_head = (head + 1) % BTL_OFI_AM_RX;
        }
    } while (status == UTIL_OK && ret == BTL_OFI_CQ_BATCH);
    if (oif->num_pongs > 0) {
        btl_ofi_pongs_send(oif);
    }
    btl_ofi_rx_unlock(oif);
    return status;
}

/* ---- the sender's side ---- */

/* oep's message buffer (tx lock held), allocated at its first message. */
static inline char *btl_ofi_msg_buf(btl_ofi_ep_t *oep)
{
    if (oep->msg == NULL) {
        oep->msg = malloc(BTL_OFI_AM_SIZE);
    }
    return oep->msg;
}

/* A message to oep went out (tx lock held): its number; need: a quiet
 * must see it applied; batch: it carried the held records, remembered by
 * their span. */
static void btl_ofi_am_count(btl_ofi_ep_t *oep, int need, int batch)
{
    oep->am_sent++;
    if (need || batch) {
        oep->am_need = oep->am_sent;
    }
    if (batch) {
        unsigned i = oep->span_next++ % BTL_OFI_SPANS;

        if (oep->span[i].no > oep->span_lost) {
            oep->span_lost = oep->span[i].no;
        }
        oep->span[i].no = oep->am_sent;
        oep->span[i].lo = oep->batch_lo;
        oep->span[i].hi = oep->batch_hi;
        oep->span_max = oep->am_sent;
        __atomic_store_n(&oep->batch_len, 0, __ATOMIC_RELEASE);
    }
}

/* The PE's thread: quiet waits for oep's messages. */
static inline void btl_ofi_am_list(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep)
{
    oep->accepted = 1;
    if (!oep->am_listed) {
        oep->am_listed = 1;
        oep->am_next = oif->am_dirty;
        oif->am_dirty = oep;
    }
}

/* Injects bytes of msg to oep (tx lock held). Another thread than the
 * PE's (helper) drives the provider itself between tries and gives up
 * after BTL_OFI_SEND_TRIES (UTIL_ERR_NO_RESOURCE: it is sent later). */
static util_status_t btl_ofi_msg_inject(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, const void *msg,
                                        size_t bytes, int helper)
{
    btl_wait_t w = BTL_WAIT_INIT;
    util_status_t status;
    ssize_t ret;

    for (int tries = 1; (ret = fi_inject(oif->ep, msg, bytes, oep->addr)) != 0; tries++) {
        if (!helper) {
            status = btl_ofi_retry(oif, &w, "fi_inject", ret, oep);
        } else if (ret == -FI_EAGAIN && tries < BTL_OFI_SEND_TRIES) {
            (void)fi_cntr_read(oif->wr_cntr); /* drives the provider */
            status = UTIL_OK;
        } else {
            status = ret == -FI_EAGAIN ? UTIL_ERR_NO_RESOURCE : btl_ofi_fail("fi_inject", ret);
        }
        if (status != UTIL_OK) {
            return status;
        }
    }
    return UTIL_OK;
}

/* Sends oep's held records as one message (tx lock held); ping: the
 * peer answers once it has applied it (quiet). */
static util_status_t btl_ofi_batch_send(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, int helper,
                                        int ping)
{
    btl_ofi_am_hdr_t hdr = {.origin = (uint32_t)oif->super.ctx->rank,
                            .batch_len = (uint16_t)oep->batch_len,
                            .ping = (uint16_t)ping};
    util_status_t status;

    memcpy(oep->msg, &hdr, sizeof(hdr));
    status = btl_ofi_msg_inject(oif, oep, oep->msg, sizeof(hdr) + oep->batch_len, helper);
    if (status == UTIL_OK) {
        btl_ofi_am_count(oep, 1, 1);
        if (ping) {
            oep->am_pinged = oep->am_sent;
        }
    }
    return status;
}

/* A message without data (tx lock held): a ping (quiet), a bare header
 * that is counted, or a pong, a flag record that writes value, our count
 * of the peer's messages, into its am_pong word for us (pong_raddr), not
 * counted. */
static util_status_t btl_ofi_bare_send(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, int kind,
                                       uint64_t pong_raddr, uint64_t value, int helper)
{
    btl_batch_rec_t pong = {BTL_BATCH_PUT_FLAG, 0, 0, {pong_raddr, value}};
    char msg[sizeof(btl_ofi_am_hdr_t) + sizeof(btl_batch_rec_t)];
    btl_ofi_am_hdr_t hdr = {(uint32_t)oif->super.ctx->rank, 0, (uint16_t)kind};
    util_status_t status;

    if (kind == BTL_OFI_PONG) {
        hdr.batch_len = (uint16_t)btl_batch_write(msg + sizeof(hdr), &pong, NULL, 0);
    }
    memcpy(msg, &hdr, sizeof(hdr));
    status = btl_ofi_msg_inject(oif, oep, msg, sizeof(hdr) + hdr.batch_len, helper);
    if (status == UTIL_OK && kind == BTL_OFI_PING) {
        btl_ofi_am_count(oep, 0, 0);
        oep->am_pinged = oep->am_sent;
    }
    return status;
}

/* The pongs owed (rx_lock held; any thread): our count of each pinging
 * peer's messages into its am_pong word for us. Owed on while the PE
 * sends (tx lock busy), the provider defers, or we have no endpoint to the
 * peer yet (the PE connects it: btl_ofi_pong_connect). */
static void btl_ofi_pongs_send(btl_ofi_iface_t *oif)
{
    const uint64_t pong_offset = 2 * (uint64_t)oif->super.ctx->size * sizeof(uint64_t);
    int kept = 0;

    if (!btl_ofi_tx_trylock(oif)) {
        return;
    }
    for (int i = 0; i < oif->num_pongs; i++) {
        int peer = oif->pong_list[i];
        btl_ofi_ep_t *oep = oif->peers[peer];
        util_status_t status = UTIL_OK;

        if (oep == NULL) {
            __atomic_store_n(&oif->pong_connect, 1, __ATOMIC_RELEASE);
            status = UTIL_ERR_NO_RESOURCE;
        } else if (oep->am) {
            uint64_t count = __atomic_load_n(&oif->am_applied[peer], __ATOMIC_RELAXED);

            status =
                btl_ofi_bare_send(oif, oep, BTL_OFI_PONG, oep->am_raddr + pong_offset, count, 1);
        }
        if (status == UTIL_ERR_NO_RESOURCE) {
            oif->pong_list[kept++] = peer;
        } else {
            oif->pong_owed[peer] = 0;
        }
    }
    __atomic_store_n(&oif->num_pongs, kept, __ATOMIC_RELAXED);
    btl_ofi_tx_unlock(oif);
}

/* The PE's thread: endpoints to the peers a pong is owed to. */
void btl_ofi_pong_connect(btl_ofi_iface_t *oif)
{
    int peers[64], n = 0;

    if (!btl_ofi_rx_trylock(oif)) {
        return; /* the helper applies messages: next time */
    }
    __atomic_store_n(&oif->pong_connect, 0, __ATOMIC_RELAXED);
    for (int i = 0; i < oif->num_pongs && n < 64; i++) {
        if (oif->peers[oif->pong_list[i]] == NULL) {
            peers[n++] = oif->pong_list[i];
        }
    }
    btl_ofi_rx_unlock(oif);
    for (int i = 0; i < n; i++) {
        btl_ofi_ep_t *oep;

        if (btl_ofi_ep_open(oif, peers[i], &oep) != UTIL_OK) {
            util_error("btl/ofi: PE %d waits for our answer, but we cannot reach it", peers[i]);
        } else {
            util_debug("btl/ofi: connected back to PE %d to answer its ping", peers[i]);
        }
    }
    if (n == 64) {
        __atomic_store_n(&oif->pong_connect, 1, __ATOMIC_RELEASE); /* more next time */
    }
}

/* Sends every held batch (tx lock held): the PE's progress and quiet, or
 * the helper thread (a batch the provider keeps deferring stays listed). */
util_status_t btl_ofi_batch_flush(btl_ofi_iface_t *oif, int helper)
{
    util_status_t status = UTIL_OK;
    int kept = 0;

    for (int i = 0; i < oif->num_batched; i++) {
        btl_ofi_ep_t *oep = oif->batched[i];
        util_status_t sent = oep->batch_len > 0 ? btl_ofi_batch_send(oif, oep, helper, 0) : UTIL_OK;

        if (sent == UTIL_ERR_NO_RESOURCE && helper) {
            oif->batched[kept++] = oep;
            continue;
        }
        oep->batched = 0;
        status = status == UTIL_OK ? sent : status;
    }
    __atomic_store_n(&oif->num_batched, kept, __ATOMIC_RELEASE);
    return status;
}

/* The PE's thread, before anything else to oep: what it holds goes first. */
util_status_t btl_ofi_batch_out(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep)
{
    util_status_t status = UTIL_OK;

    if (__atomic_load_n(&oep->batch_len, __ATOMIC_ACQUIRE) == 0) {
        return UTIL_OK;
    }
    btl_ofi_tx_lock(oif);
    if (oep->batch_len > 0) {
        status = btl_ofi_batch_send(oif, oep, 0, 0);
    }
    btl_ofi_tx_unlock(oif);
    return status;
}

/* Ends the helper thread's block (a batch to send, or stop). */
void btl_ofi_wake(void *arg)
{
    btl_ofi_iface_t *oif = arg;
    uint64_t one = 1;

    if (oif->wake_fd >= 0) {
        ssize_t ret = write(oif->wake_fd, &one, sizeof(one));
        (void)ret; /* a full counter wakes it too */
    }
}

static util_status_t btl_ofi_am_wait(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, uint64_t upto,
                                     const char *what);

/* A record (and len bytes of data) into oep's batch: it goes with the
 * next message to oep, at the PE's next progress or quiet, when the batch
 * is full, or from the helper thread once the PE stays away. */
util_status_t btl_ofi_batch_add(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, const btl_batch_rec_t *rec,
                                const void *data, size_t len)
{
    size_t need = btl_batch_rec_size(rec->kind, len);
    util_status_t status = UTIL_OK;
    uint64_t lo, hi;
    int wake = 0, sent = 0;

    btl_ofi_tx_lock(oif);
    if (sizeof(btl_ofi_am_hdr_t) + oep->batch_len + need > BTL_OFI_AM_SIZE) {
        status = btl_ofi_batch_send(oif, oep, 0, 0);
        sent = 1;
    }
    if (status == UTIL_OK && btl_ofi_msg_buf(oep) == NULL) {
        status = UTIL_ERR_NO_MEMORY;
    }
    if (status == UTIL_OK) {
        btl_batch_rec_span(rec, &lo, &hi);
        if (oep->batch_len == 0 || lo < oep->batch_lo) {
            oep->batch_lo = lo;
        }
        if (oep->batch_len == 0 || hi > oep->batch_hi) {
            oep->batch_hi = hi;
        }
        need =
            btl_batch_write(oep->msg + sizeof(btl_ofi_am_hdr_t) + oep->batch_len, rec, data, len);
        __atomic_store_n(&oep->batch_len, oep->batch_len + need, __ATOMIC_RELEASE);
        if (oep->batch_len >= oif->batch_max) {
            /* a ping every half window, so that its pong is back before the window is full */
            int ping = oep->am_sent + 1 - oep->am_pinged >= BTL_OFI_AM_WINDOW / 2;

            status = btl_ofi_batch_send(oif, oep, 0, ping ? BTL_OFI_PING : 0);
            sent = 1;
        } else if (!oep->batched) {
            oep->batched = 1;
            oif->batched[oif->num_batched] = oep;
            __atomic_store_n(&oif->num_batched, oif->num_batched + 1, __ATOMIC_SEQ_CST);
            /* the first batch while the helper sleeps long: wake it */
            wake = oif->num_batched == 1 && __atomic_load_n(&oif->helper_asleep, __ATOMIC_SEQ_CST);
        }
    }
    btl_ofi_tx_unlock(oif);
    btl_ofi_am_list(oif, oep);
    if (wake) {
        btl_ofi_wake(oif);
    }
    if (sent && status == UTIL_OK && oep->am_sent - oep->am_seen > BTL_OFI_AM_WINDOW) {
        /* A stream runs at most a window ahead of what oep's peer applied:
         * a backlog queued in the provider delayed our answers to every
         * peer by milliseconds (rxm; docs/btl_ofi.md, LIMITS). */
        btl_ofi_am_landed(oif, oep);
        if (oep->am_sent - oep->am_seen > BTL_OFI_AM_WINDOW) {
            status = btl_ofi_am_wait(oif, oep, oep->am_sent - BTL_OFI_AM_WINDOW / 2, "window");
        }
    }
    return status;
}

/* Stages bytes of msg, too many to inject, in a bounce-ring slot (the PE's
 * thread, tx lock held). */
static util_status_t btl_ofi_am_stage(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, const char *msg,
                                      size_t bytes)
{
    btl_wait_t w = BTL_WAIT_INIT;
    btl_ofi_req_t *req;
    char *slot;
    struct iovec iov;
    void *desc = oif->ring_mr->desc;
    struct fi_msg fmsg = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = oep->addr};
    util_status_t status = btl_ofi_req_get(oif, 1, oep->super.peer, &req);
    ssize_t ret;

    if (status != UTIL_OK) {
        return status;
    }
    slot = (char *)oif->ring + (size_t)req->slot * oif->eager_size;
    memcpy(slot, msg, bytes);
    iov.iov_base = slot;
    iov.iov_len = bytes;
    fmsg.context = req;
    while ((ret = fi_sendmsg(oif->ep, &fmsg, FI_COMPLETION)) != 0) {
        status = btl_ofi_retry(oif, &w, "fi_sendmsg", ret, oep);
        if (status != UTIL_OK) {
            btl_ofi_req_release(oif, req);
            return status;
        }
    }
    return UTIL_OK;
}

/* Sends a put_flag (flag_raddr 0: a put) as one message (btl_ofi_am_fits
 * said it fits), behind the records held for oep, and rec_len bytes for
 * rec_raddr before it (put_flag_rec): injected, or staged in a bounce-ring
 * slot. need: a quiet must see it applied (not for btl_comp_signal's
 * flags). */
util_status_t btl_ofi_am_send(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, const void *src, size_t len,
                              uint64_t raddr, uint64_t flag_raddr, uint64_t flag_value,
                              const void *rec, size_t rec_len, uint64_t rec_raddr, int need)
{
    btl_batch_rec_t put = {BTL_BATCH_PUT, (uint32_t)rec_len, rec_raddr, {0, 0}};
    btl_batch_rec_t last = {flag_raddr != 0 ? BTL_BATCH_PUT_FLAG : BTL_BATCH_PUT,
                            (uint32_t)len,
                            raddr,
                            {flag_raddr, flag_value}};
    size_t records = btl_batch_rec_size(last.kind, len) +
                     (rec_len > 0 ? btl_batch_rec_size(BTL_BATCH_PUT, rec_len) : 0);
    size_t bytes = sizeof(btl_ofi_am_hdr_t) + records;
    util_status_t status = UTIL_OK;
    int carried;
    char *at;

    if ((flag_raddr & 7) != 0) { /* 0: no flag */
        util_error("btl/ofi: flag address 0x%llx is not 8-byte aligned",
                   (unsigned long long)flag_raddr);
        return UTIL_ERR_INVALID;
    }
    btl_ofi_tx_lock(oif);
    if (oep->batch_len > 0 && (bytes + oep->batch_len > BTL_OFI_AM_SIZE ||
                               !btl_ofi_am_injects(oif, bytes + oep->batch_len))) {
        status = btl_ofi_batch_send(oif, oep, 0, 0); /* no room for both: the records first */
    }
    if (status == UTIL_OK && btl_ofi_msg_buf(oep) == NULL) {
        status = UTIL_ERR_NO_MEMORY;
    }
    if (status == UTIL_OK) {
        btl_ofi_am_hdr_t hdr = {(uint32_t)oif->super.ctx->rank,
                                (uint16_t)(oep->batch_len + records), 0};

        carried = oep->batch_len > 0;
        at = oep->msg + sizeof(hdr) + oep->batch_len;
        if (rec_len > 0) {
            at += btl_batch_write(at, &put, rec, rec_len);
        }
        btl_batch_write(at, &last, src, len);
        memcpy(oep->msg, &hdr, sizeof(hdr));
        bytes = sizeof(hdr) + hdr.batch_len;
        status = btl_ofi_am_injects(oif, bytes) ? btl_ofi_msg_inject(oif, oep, oep->msg, bytes, 0)
                                                : btl_ofi_am_stage(oif, oep, oep->msg, bytes);
        if (status == UTIL_OK) {
            btl_ofi_am_count(oep, need, carried);
        }
    }
    btl_ofi_tx_unlock(oif);
    if (status == UTIL_OK) {
        btl_ofi_am_list(oif, oep);
    }
    return status;
}

/* Posts a read of oep's peer's count of our applied messages into our
 * landing word for it; btl_ofi_am_landed takes the value once the reads
 * are done. */
static util_status_t btl_ofi_am_ask(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep)
{
    return btl_ofi_rma_post_raw(oif, oep, 0, &oif->am_landing[oep->super.peer], sizeof(uint64_t),
                                oif->am_mr->desc, oep->am_raddr, &oep->am_rkey.super, 0, NULL);
}

/* What we know oep's peer applied: its pongs, or a read of its count. */
void btl_ofi_am_landed(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep)
{
    uint64_t read = __atomic_load_n(&oif->am_landing[oep->super.peer], __ATOMIC_ACQUIRE);
    uint64_t pong = __atomic_load_n(&oif->am_pong[oep->super.peer], __ATOMIC_ACQUIRE);
    uint64_t seen = read > pong ? read : pong;

    if (seen > oep->am_seen) {
        oep->am_seen = seen;
    }
}

/* Asks oep's peer to answer once it has applied what we sent so far (a
 * pong); what we hold for it rides along. The PE's thread. */
util_status_t btl_ofi_am_ping(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep)
{
    util_status_t status;

    btl_ofi_tx_lock(oif);
    status = oep->batch_len > 0 ? btl_ofi_batch_send(oif, oep, 0, BTL_OFI_PING)
                                : btl_ofi_bare_send(oif, oep, BTL_OFI_PING, 0, 0, 0);
    btl_ofi_tx_unlock(oif);
    return status;
}

/* Waits until oep's peer applied our messages up to number upto (a
 * delivered message may still wait in its buffer): one ping, whose pong
 * our progress applies; a read of the peer's count now and then in case
 * the pong is slow (the peer connects back to us first). */
static util_status_t btl_ofi_am_wait(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, uint64_t upto,
                                     const char *what)
{
    btl_wait_t w = BTL_WAIT_INIT;
    util_status_t status = UTIL_OK;
    unsigned polls = 0;

    btl_ofi_am_landed(oif, oep);
    if (!btl_ofi_am_small(oif)) {
        polls = BTL_OFI_ASK_AFTER - 1; /* no pings: read at once */
    } else if (oep->am_seen < upto && oep->am_pinged < upto) {
        status = btl_ofi_am_ping(oif, oep);
    }
    while (status == UTIL_OK && oep->am_seen < upto) {
        if (++polls % BTL_OFI_ASK_AFTER == 0) {
            status = btl_ofi_am_ask(oif, oep);
            if (status == UTIL_OK) {
                status = btl_ofi_wait_reads(oif, what, oep->super.peer);
            }
        } else {
            status = btl_ofi_poll(oif); /* applies the pong (and the peer may wait for ours) */
        }
        btl_ofi_am_landed(oif, oep);
        if (status == UTIL_OK && oep->am_seen < upto) {
            status = btl_ofi_wait_tick(oif, &w, what, oep->super.peer);
        }
    }
    return status;
}

/* Before an RMA or atomic to oep on target bytes [raddr, raddr + len):
 * the records held for oep go first, and the provider, which performs it
 * on arrival, must not overtake messages still waiting in their buffers:
 * those sent before a fence to oep, and batches that wrote those bytes
 * (a get sees the puts before it; a batch we no longer remember counts
 * as overlapping). */
util_status_t btl_ofi_am_order(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, uint64_t raddr, size_t len)
{
    util_status_t status = btl_ofi_batch_out(oif, oep);
    uint64_t upto = oep->am_fenced;

    if (status != UTIL_OK) {
        return status;
    }
    if (oep->span_max > oep->am_seen) {
        upto = oep->span_lost > upto ? oep->span_lost : upto;
        for (unsigned i = 0; i < BTL_OFI_SPANS; i++) {
            if (oep->span[i].no > upto && oep->span[i].lo < raddr + len &&
                raddr < oep->span[i].hi) {
                upto = oep->span[i].no;
            }
        }
    }
    return oep->am_seen < upto ? btl_ofi_am_wait(oif, oep, upto, "ordering") : UTIL_OK;
}

/* Every peer's messages that a quiet must see applied; peers with none
 * outstanding leave the list. */
util_status_t btl_ofi_am_quiet(btl_ofi_iface_t *oif)
{
    btl_ofi_ep_t **link = &oif->am_dirty;

    while (*link != NULL) {
        btl_ofi_ep_t *oep = *link;
        util_status_t status = btl_ofi_am_wait(oif, oep, oep->am_need, "quiet");

        if (status != UTIL_OK) {
            return status;
        }
        if (oep->am_seen >= oep->am_sent) {
            *link = oep->am_next;
            oep->am_listed = 0;
        } else {
            link = &oep->am_next;
        }
    }
    return UTIL_OK;
}

/* Messages: receive buffers posted, and the registered per-peer counts of
 * applied messages that peers read. */
util_status_t btl_ofi_am_init(btl_ofi_iface_t *oif)
{
    size_t size = (size_t)oif->super.ctx->size, count_bytes = 3 * size * sizeof(uint64_t);
    util_status_t status;

    if (posix_memalign(&oif->rx_buf, 4096, (size_t)BTL_OFI_AM_RX * BTL_OFI_AM_SIZE) != 0) {
        oif->rx_buf = NULL;
        return UTIL_ERR_NO_MEMORY;
    }
    if (posix_memalign((void **)&oif->am_applied, 64, count_bytes) != 0) {
        oif->am_applied = NULL;
        return UTIL_ERR_NO_MEMORY;
    }
    memset(oif->am_applied, 0, count_bytes);
    oif->am_landing = oif->am_applied + size;
    oif->am_pong =
        oif->am_applied + 2 * size; /* the peers' pongs write here: see btl_ofi_pong_raddr */
    oif->pong_owed = calloc(size, 1);
    oif->pong_list = calloc(size, sizeof(int));
    if (oif->pong_owed == NULL || oif->pong_list == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    status = btl_ofi_reg(oif, oif->rx_buf, (size_t)BTL_OFI_AM_RX * BTL_OFI_AM_SIZE, &oif->rx_mr);
    if (status == UTIL_OK) {
        status = btl_ofi_reg(oif, oif->am_applied, count_bytes, &oif->am_mr);
    }
    for (unsigned i = 0; status == UTIL_OK && i < BTL_OFI_AM_RX; i++) {
        status = btl_ofi_rx_post(oif, i);
    }
    return status;
}
