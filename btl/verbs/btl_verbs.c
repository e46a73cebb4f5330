/*
 * btl/verbs: peers through libibverbs reliable-connected (RC) queue pairs.
 * docs/btl_verbs.md has the design and says what is verified where; the
 * device-independent parts (wire formats, work requests, credits, error
 * texts, atomic emulation) are in btl_verbs_wire.c.
 *
 * Device. RMB_VERBS_DEVICE names one (ibv_devices lists them), else the
 * first device with an active port; RMB_VERBS_PORT picks the port (0: the
 * first active one). RoCE ports route with a GID (RMB_VERBS_GID_INDEX,
 * default 0 there); InfiniBand ports use the LID unless a GID index is set.
 * Without a device that has an active port the component is not usable
 * (btl_verbs_usable): auto never picks it and RMB_BTL=verbs is refused with
 * one line.
 *
 * Connections. iface_open creates one RC QP per peer (self included: the
 * network atomics of BTL_CAP_AMO_CPU-less backends reach my own memory
 * through it) and moves it to INIT, then publishes, per peer, the metadata
 * that peer needs (LID/GID, the QPN of my QP for it, PSN, MTU) under key
 * "<iface key>.c<peer>". A QP reaches RTR and RTS when first used to send
 * (ep_connect), or, for every peer at once, when this rank first hands out
 * a memory key (rkey_pack): no peer can touch my memory before it has a key
 * of mine, so my side of every connection is ready to answer by then. Cost:
 * one QP per peer; no QP is connected before it is needed on one side.
 *
 * Completions. One CQ per iface; WRs are signaled one in
 * RMB_VERBS_SQ_DEPTH/4 (and whenever the caller waits for one); credits in
 * btl_verbs_wire.h keep the send queues and the CQ from overrunning. Calls
 * return after local completion: writes up to the inline size are copied
 * at post; larger ones and reads wait for their completion (for an RDMA
 * write on RC, that is the peer's acknowledgement). A btl_comp_t is never
 * left pending. A failed completion is logged once with its meaning and
 * the peer; that peer's QP then refuses work with the same status.
 *
 * Put-with-flag (RMB_VERBS_FLAG_ORDER). ordered: the flag write is posted
 * right behind the payload on the same QP; RC executes writes of one QP in
 * order and our registrations do not allow relaxed PCIe ordering, so the
 * flag lands after the payload. wait: the flag is posted after the
 * payload's completion.
 *
 * Atomics: the adapter's 64-bit fetch-add and compare-and-swap; the rest
 * by loops over them, 32-bit values inside their enclosing 8-byte word
 * (btl_verbs_amo_run). Devices without atomics get the UNSUPPORTED stubs.
 */
#include "btl/btl.h"
#include "btl/verbs/btl_verbs_wire.h"
#include "bootstrap/bootstrap.h"
#include "util/env.h"
#include "util/log.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BTL_VERBS_INLINE_WANT        64          /* inline bytes asked of each QP */
#define BTL_VERBS_BOUNCE_SIZE        (64 * 1024) /* registered copy buffer for unregistered memory */
#define BTL_VERBS_MAX_MSG            ((size_t)1 << 30)
#define BTL_VERBS_POLL_BATCH         16
#define BTL_VERBS_SPINS_BEFORE_YIELD 256
#define BTL_VERBS_ACCESS                                                                           \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                   \
     IBV_ACCESS_REMOTE_ATOMIC)

typedef struct {
    btl_mr_t super;
    struct ibv_mr *mr;
} btl_verbs_mr_t;

typedef struct {
    btl_rkey_t super;
    uint32_t rkey;
} btl_verbs_rkey_t;

typedef struct {
    struct ibv_qp *qp;
    btl_verbs_sq_credits_t credits;
    uint32_t psn;
    int connected;
    util_status_t status; /* first failure on this QP */
} btl_verbs_qp_t;

typedef struct {
    btl_ep_t super;
    btl_verbs_qp_t *vqp;
} btl_verbs_ep_t;

/* Local words that atomics and flag writes use; registered once. */
typedef struct {
    uint64_t result;
} btl_verbs_scratch_t;

typedef struct {
    btl_iface_t super;
    struct ibv_context *dev;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    char dev_name[64];
    btl_verbs_conn_t self; /* lid, port, mtu, gid; qpn/psn are per QP */
    int gid_index;
    uint32_t sq_depth;
    uint32_t max_inline;
    uint8_t max_rd_atomic;
    int flag_ordered;
    int accepted_all;
    util_status_t status; /* the CQ failed: everything fails */
    int num_qps;
    btl_verbs_qp_t *qps; /* per peer */
    btl_verbs_cq_credits_t cq_credits;
    btl_verbs_scratch_t *scratch;
    struct ibv_mr *scratch_mr;
    void *bounce;
    struct ibv_mr *bounce_mr;
} btl_verbs_iface_t;

static inline btl_verbs_iface_t *btl_verbs_iface(btl_iface_t *iface)
{
    return btl_container_of(iface, btl_verbs_iface_t, super);
}

static inline btl_verbs_ep_t *btl_verbs_ep(btl_ep_t *ep)
{
    return btl_container_of(ep, btl_verbs_ep_t, super);
}

static inline btl_verbs_rkey_t *btl_verbs_rkey(btl_rkey_t *rkey)
{
    return btl_container_of(rkey, btl_verbs_rkey_t, super);
}

static inline btl_verbs_mr_t *btl_verbs_mr(btl_mr_t *mr)
{
    return btl_container_of(mr, btl_verbs_mr_t, super);
}

static inline int btl_verbs_peer_of(const btl_verbs_iface_t *vif, const btl_verbs_qp_t *q)
{
    return (int)(q - vif->qps);
}

/* ---- usable: is there a device with an active port? ---- */
int btl_verbs_usable(void);

static int btl_verbs_device_active(struct ibv_device *device)
{
    struct ibv_context *dev = ibv_open_device(device);
    struct ibv_device_attr dattr;
    struct ibv_port_attr pattr;
    int active = 0;

    if (dev == NULL) {
        return 0;
    }
    if (ibv_query_device(dev, &dattr) == 0) {
        for (int port = 1; port <= dattr.phys_port_cnt && !active; port++) {
            active =
                ibv_query_port(dev, (uint8_t)port, &pattr) == 0 && pattr.state == IBV_PORT_ACTIVE;
        }
    }
    ibv_close_device(dev);
    return active;
}

int btl_verbs_usable(void)
{
    static int usable = -1;
    int cached = __atomic_load_n(&usable, __ATOMIC_RELAXED);

    if (cached < 0) {
        int num = 0, active = 0;
        struct ibv_device **list = ibv_get_device_list(&num);

        for (int i = 0; list != NULL && i < num; i++) {
            active += btl_verbs_device_active(list[i]);
        }
        if (list != NULL) {
            ibv_free_device_list(list);
        }
        cached = active > 0;
        util_debug("btl/verbs: %d RDMA device(s), %d with an active port%s", num, active,
                   cached ? "" : ": backend not usable");
        __atomic_store_n(&usable, cached, __ATOMIC_RELAXED);
    }
    return cached;
}

/* Every RDMA device and the state of each port; usable as for auto. */
static int btl_verbs_describe(btl_describe_func_t report, void *arg)
{
    int num = 0;
    struct ibv_device **list = ibv_get_device_list(&num);
    char line[160];

    if (list == NULL || num == 0) {
        report(arg, "verbs", "device", "none (ibv_get_device_list found no RDMA device)");
    }
    for (int i = 0; list != NULL && i < num; i++) {
        struct ibv_context *dev = ibv_open_device(list[i]);
        struct ibv_device_attr dattr;
        struct ibv_port_attr pattr;

        if (dev == NULL || ibv_query_device(dev, &dattr) != 0) {
            snprintf(line, sizeof(line), "%s: cannot be opened", ibv_get_device_name(list[i]));
            report(arg, "verbs", "device", line);
        }
        for (int port = 1; dev != NULL && port <= dattr.phys_port_cnt; port++) {
            if (ibv_query_port(dev, (uint8_t)port, &pattr) != 0) {
                continue;
            }
            snprintf(line, sizeof(line), "%s port %d: %s (%s)", ibv_get_device_name(list[i]), port,
                     ibv_port_state_str(pattr.state),
                     pattr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand");
            report(arg, "verbs", "device", line);
        }
        if (dev != NULL) {
            ibv_close_device(dev);
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    return btl_verbs_usable();
}

/* ---- completions ---- */

/* Reads completed WRs, retires their credits, and records (and logs once
 * per QP) a failure. Returns the iface's status. */
static util_status_t btl_verbs_poll(btl_verbs_iface_t *vif)
{
    struct ibv_wc wc[BTL_VERBS_POLL_BATCH];
    int n;

    if (vif->status != UTIL_OK) {
        return vif->status;
    }
    n = ibv_poll_cq(vif->cq, BTL_VERBS_POLL_BATCH, wc);
    if (n < 0) {
        util_error("btl/verbs: ibv_poll_cq on %s failed (%d): the completion queue is unusable",
                   vif->dev_name, n);
        vif->status = UTIL_ERR_IO;
        return vif->status;
    }
    for (int i = 0; i < n; i++) {
        uint32_t peer = btl_verbs_wr_id_peer(wc[i].wr_id);
        btl_verbs_qp_t *q;
        uint64_t number;

        if (peer >= (uint32_t)vif->num_qps) {
            util_warn("btl/verbs: completion with unknown wr_id 0x%llx ignored",
                      (unsigned long long)wc[i].wr_id);
            continue;
        }
        q = &vif->qps[peer];
        number = btl_verbs_wr_id_number(wc[i].wr_id, q->credits.posted);
        if (wc[i].status != IBV_WC_SUCCESS && q->status == UTIL_OK) {
            const char *text;
            util_status_t status = btl_verbs_wc_error(wc[i].status, &text);

            util_error("btl/verbs: operation to peer %u failed: %s (%s, vendor error 0x%x)", peer,
                       text, ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
            q->status = status;
        }
        if (q->status != UTIL_OK) {
            /* a failed QP posts nothing more and completes every WR left
             * with a flush CQE, in order: after the last one its credits
             * go back to the CQ */
            if (number == q->credits.posted) {
                btl_verbs_credits_release(&q->credits, &vif->cq_credits);
            }
            continue;
        }
        btl_verbs_credits_complete(&q->credits, &vif->cq_credits, number);
    }
    return UTIL_OK;
}

/* One step of a wait on q: its error if it has one, else polls once more;
 * after many idle polls lets peers on the same cores run. */
static util_status_t btl_verbs_poll_wait(btl_verbs_iface_t *vif, btl_verbs_qp_t *q, unsigned *spins)
{
    util_status_t status = (q->status != UTIL_OK) ? q->status : btl_verbs_poll(vif);

    if (++*spins >= BTL_VERBS_SPINS_BEFORE_YIELD) {
        sched_yield();
    }
    return status;
}

/* Waits until every WR up to `number` on q is retired. The RC transport's
 * retry limit turns a silent peer into an error completion, so this ends. */
static util_status_t btl_verbs_wait(btl_verbs_iface_t *vif, btl_verbs_qp_t *q, uint64_t number)
{
    unsigned spins = 0;

    while (q->credits.completed < number) {
        util_status_t status = btl_verbs_poll_wait(vif, q, &spins);
        if (status != UTIL_OK) {
            return status;
        }
    }
    return q->status;
}

/* Posts a chain of n WRs (n <= 2) on q once credits allow; the last one is
 * signaled when `signal` is set. *number_p gets the last WR's number. */
static util_status_t btl_verbs_post(btl_verbs_iface_t *vif, btl_verbs_qp_t *q,
                                    struct ibv_send_wr *wr, uint32_t n, int signal,
                                    uint64_t *number_p)
{
    struct ibv_send_wr *bad = NULL;
    uint32_t peer = (uint32_t)btl_verbs_peer_of(vif, q);
    unsigned spins = 0;
    uint64_t number = 0;
    int ret;

    while (!btl_verbs_credits_available(&q->credits, &vif->cq_credits, n)) {
        util_status_t status = btl_verbs_poll_wait(vif, q, &spins);
        if (status != UTIL_OK) {
            return status;
        }
    }
    if (q->status != UTIL_OK) {
        return q->status;
    }
    for (struct ibv_send_wr *w = wr; w != NULL; w = w->next) {
        if (btl_verbs_credits_post(&q->credits, &vif->cq_credits, signal && w->next == NULL,
                                   &number)) {
            w->send_flags |= IBV_SEND_SIGNALED;
        } else {
            w->send_flags &= ~(unsigned)IBV_SEND_SIGNALED;
        }
        w->wr_id = btl_verbs_wr_id(peer, number);
    }
    ret = ibv_post_send(q->qp, wr, &bad);
    if (ret != 0) {
        util_error("btl/verbs: ibv_post_send to peer %u: %s", peer, strerror(ret));
        q->status = ret == ENOMEM ? UTIL_ERR_NO_RESOURCE : UTIL_ERR_IO;
        btl_verbs_credits_release(&q->credits, &vif->cq_credits);
        return q->status;
    }
    *number_p = number;
    return UTIL_OK;
}

/* ---- connections ---- */
static util_status_t btl_verbs_conn_key(btl_verbs_iface_t *vif, int peer, char *key, size_t keysize)
{
    char suffix[16];

    snprintf(suffix, sizeof(suffix), "c%d", peer);
    return btl_iface_key(&vif->super, suffix, key, keysize);
}

/* INIT -> RTR -> RTS with the metadata peer published for me. */
static util_status_t btl_verbs_connect_qp(btl_verbs_iface_t *vif, int peer)
{
    btl_verbs_qp_t *q = &vif->qps[peer];
    uint8_t buf[BTL_VERBS_CONN_SIZE + 8];
    char key[BOOTSTRAP_KEY_MAX];
    btl_verbs_conn_t remote;
    struct ibv_qp_attr attr;
    size_t got;
    util_status_t status;
    int ret;

    if (q->connected) {
        return q->status;
    }
    status = btl_verbs_conn_key(vif, vif->super.ctx->rank, key, sizeof(key));
    if (status != UTIL_OK) {
        return status;
    }
    status = bootstrap_get(peer, key, buf, sizeof(buf), &got);
    if (status != UTIL_OK) {
        util_error("btl/verbs: no connection data from peer %d (%s): %s", peer, key,
                   util_status_string(status));
        return status;
    }
    status = btl_verbs_conn_unpack(buf, got, &remote);
    if (status != UTIL_OK) {
        util_error("btl/verbs: connection data from peer %d %s", peer,
                   status == UTIL_ERR_UNSUPPORTED ? "has another format version (mixed builds?)"
                                                  : "is malformed");
        return status;
    }
    if (remote.has_gid != vif->self.has_gid) {
        util_error("btl/verbs: peer %d %s a GID and I %s (set RMB_VERBS_GID_INDEX alike)", peer,
                   remote.has_gid ? "routes with" : "routes without",
                   vif->self.has_gid ? "do" : "do not");
        return UTIL_ERR_UNREACHABLE;
    }

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = (enum ibv_mtu)btl_verbs_mtu_common(vif->self.mtu, remote.mtu);
    attr.dest_qp_num = remote.qpn;
    attr.rq_psn = remote.psn;
    attr.max_dest_rd_atomic = vif->max_rd_atomic;
    attr.min_rnr_timer = 12;
    attr.ah_attr.dlid = remote.lid;
    attr.ah_attr.port_num = vif->self.port;
    if (remote.has_gid) {
        attr.ah_attr.is_global = 1;
        memcpy(attr.ah_attr.grh.dgid.raw, remote.gid, 16);
        attr.ah_attr.grh.sgid_index = (uint8_t)vif->gid_index;
        attr.ah_attr.grh.hop_limit = 64;
    }
    ret = ibv_modify_qp(q->qp, &attr,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (ret != 0) {
        util_error("btl/verbs: QP for peer %d to RTR (remote QPN 0x%x, LID %u): %s", peer,
                   remote.qpn, remote.lid, strerror(ret));
        return UTIL_ERR_UNREACHABLE;
    }
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = 14; /* 4.096 us * 2^14 = 67 ms per try */
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    attr.sq_psn = q->psn;
    attr.max_rd_atomic = vif->max_rd_atomic;
    ret = ibv_modify_qp(q->qp, &attr,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                            IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (ret != 0) {
        util_error("btl/verbs: QP for peer %d to RTS: %s", peer, strerror(ret));
        return UTIL_ERR_UNREACHABLE;
    }
    q->connected = 1;
    util_trace("btl/verbs: connected to peer %d (QPN 0x%x -> 0x%x, MTU %u)", peer, q->qp->qp_num,
               remote.qpn, btl_verbs_mtu_bytes(attr.path_mtu));
    return UTIL_OK;
}

/* Makes my side of every connection able to answer (see the top). */
static util_status_t btl_verbs_accept_all(btl_verbs_iface_t *vif)
{
    if (vif->accepted_all) {
        return UTIL_OK;
    }
    for (int peer = 0; peer < vif->num_qps; peer++) {
        util_status_t status = btl_verbs_connect_qp(vif, peer);
        if (status != UTIL_OK) {
            return status;
        }
    }
    vif->accepted_all = 1;
    return UTIL_OK;
}

static util_status_t btl_verbs_ep_connect(btl_iface_t *iface, int peer, btl_ep_t **ep_p)
{
    btl_verbs_iface_t *vif = btl_verbs_iface(iface);
    btl_verbs_ep_t *vep;
    util_status_t status;

    if (peer < 0 || peer >= vif->num_qps) {
        return UTIL_ERR_INVALID;
    }
    status = btl_verbs_connect_qp(vif, peer);
    if (status != UTIL_OK) {
        return status;
    }
    vep = calloc(1, sizeof(*vep));
    if (vep == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    vep->vqp = &vif->qps[peer];
    *ep_p = &vep->super;
    return UTIL_OK;
}

static util_status_t btl_verbs_ep_disconnect(btl_ep_t *ep)
{
    /* the QP belongs to the iface: another ep (net_eps) may share it */
    free(btl_verbs_ep(ep));
    return UTIL_OK;
}

/* ---- memory ---- */
static util_status_t btl_verbs_reg(btl_verbs_iface_t *vif, void *addr, size_t size, int access,
                                   struct ibv_mr **mr_p)
{
    struct ibv_mr *mr = ibv_reg_mr(vif->pd, addr, size, access);

    if (mr == NULL) {
        util_error("btl/verbs: ibv_reg_mr(%p, %zu bytes) on %s: %s%s", addr, size, vif->dev_name,
                   strerror(errno), errno == ENOMEM || errno == EPERM ? " (check ulimit -l)" : "");
        return errno == ENOMEM ? UTIL_ERR_NO_MEMORY : UTIL_ERR_IO;
    }
    *mr_p = mr;
    return UTIL_OK;
}

static util_status_t btl_verbs_mem_reg(btl_iface_t *iface, void *addr, size_t size, btl_mr_t **mr_p)
{
    btl_verbs_iface_t *vif = btl_verbs_iface(iface);
    btl_verbs_mr_t *vmr = calloc(1, sizeof(*vmr));
    util_status_t status;

    if (vmr == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    status = btl_verbs_reg(vif, addr, size, BTL_VERBS_ACCESS, &vmr->mr);
    if (status != UTIL_OK) {
        free(vmr);
        return status;
    }
    vmr->super.iface = iface;
    vmr->super.addr = addr;
    vmr->super.size = size;
    *mr_p = &vmr->super;
    return UTIL_OK;
}

static util_status_t btl_verbs_mem_dereg(btl_mr_t *mr)
{
    btl_verbs_mr_t *vmr = btl_verbs_mr(mr);
    int ret = ibv_dereg_mr(vmr->mr);

    free(vmr);
    if (ret != 0) {
        util_error("btl/verbs: ibv_dereg_mr: %s", strerror(ret));
        return UTIL_ERR_IO;
    }
    return UTIL_OK;
}

static util_status_t btl_verbs_rkey_pack(btl_mr_t *mr, void *buf, size_t bufsize, size_t *size_p)
{
    btl_verbs_iface_t *vif = btl_verbs_iface(mr->iface);
    util_status_t status = btl_verbs_accept_all(vif);

    if (status != UTIL_OK) {
        return status;
    }
    return btl_verbs_rkey_pack_raw((uintptr_t)mr->addr, mr->size, btl_verbs_mr(mr)->mr->rkey, buf,
                                   bufsize, size_p);
}

static util_status_t btl_verbs_rkey_unpack(btl_ep_t *ep, const void *buf, size_t size,
                                           btl_rkey_t **rkey_p)
{
    btl_verbs_rkey_t *vrk;
    uint64_t addr, length;
    uint32_t rkey;
    util_status_t status = btl_verbs_rkey_unpack_raw(buf, size, &addr, &length, &rkey);

    if (status != UTIL_OK) {
        util_error("btl/verbs: malformed memory key from peer %d (%zu bytes)", ep->peer, size);
        return status;
    }
    vrk = calloc(1, sizeof(*vrk));
    if (vrk == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    vrk->super.remote_base = addr;
    vrk->super.length = length;
    vrk->rkey = rkey;
    *rkey_p = &vrk->super;
    return UTIL_OK;
}

static util_status_t btl_verbs_rkey_release(btl_rkey_t *rkey)
{
    free(btl_verbs_rkey(rkey));
    return UTIL_OK;
}

/* ---- data ---- */
static util_status_t btl_verbs_quiet_qp(btl_verbs_iface_t *vif, btl_verbs_qp_t *q);

/* The lkey of [buf, buf + len) when lmem registers it with this iface. */
static int btl_verbs_lkey(btl_verbs_iface_t *vif, btl_mem_t *lmem, const void *buf, size_t len,
                          uint32_t *lkey_p)
{
    btl_mr_t *mr;

    if (lmem == NULL || (mr = lmem->mr[vif->super.index]) == NULL ||
        !btl_verbs_range_ok((uintptr_t)mr->addr, mr->size, (uintptr_t)buf, len)) {
        return 0;
    }
    *lkey_p = btl_verbs_mr(mr)->mr->lkey;
    return 1;
}

static util_status_t btl_verbs_check(btl_verbs_qp_t *q, btl_rkey_t *rkey, uint64_t raddr,
                                     size_t len, const char *what)
{
    if (q->status != UTIL_OK) {
        return q->status;
    }
    if (!btl_verbs_range_ok(rkey->remote_base, rkey->length, raddr, len)) {
        util_error("btl/verbs: %s of %zu bytes at 0x%llx is outside the peer's registration "
                   "(0x%llx, %llu bytes)",
                   what, len, (unsigned long long)raddr, (unsigned long long)rkey->remote_base,
                   (unsigned long long)rkey->length);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

/* Write; locally complete on return. */
static util_status_t btl_verbs_write(btl_verbs_iface_t *vif, btl_verbs_qp_t *q, const void *src,
                                     size_t len, btl_mem_t *lmem, uint64_t raddr, uint32_t rkey)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    uint64_t number;
    uint32_t lkey;
    util_status_t status;

    if (len == 0) {
        return UTIL_OK;
    }
    if (len <= vif->max_inline) {
        btl_verbs_wr_write(&wr, &sge, src, (uint32_t)len, 0, raddr, rkey, IBV_SEND_INLINE, 0);
        return btl_verbs_post(vif, q, &wr, 1, 0, &number);
    }
    if (btl_verbs_lkey(vif, lmem, src, len, &lkey)) {
        while (len > 0) {
            size_t chunk = len < BTL_VERBS_MAX_MSG ? len : BTL_VERBS_MAX_MSG;

            btl_verbs_wr_write(&wr, &sge, src, (uint32_t)chunk, lkey, raddr, rkey, 0, 0);
            status = btl_verbs_post(vif, q, &wr, 1, chunk == len, &number);
            if (status != UTIL_OK) {
                return status;
            }
            src = (const char *)src + chunk;
            raddr += chunk;
            len -= chunk;
        }
        return btl_verbs_wait(vif, q, number);
    }
    while (len > 0) {
        size_t chunk = len < BTL_VERBS_BOUNCE_SIZE ? len : BTL_VERBS_BOUNCE_SIZE;

        memcpy(vif->bounce, src, chunk);
        btl_verbs_wr_write(&wr, &sge, vif->bounce, (uint32_t)chunk, vif->bounce_mr->lkey, raddr,
                           rkey, 0, 0);
        status = btl_verbs_post(vif, q, &wr, 1, 1, &number);
        if (status == UTIL_OK) {
            status = btl_verbs_wait(vif, q, number);
        }
        if (status != UTIL_OK) {
            return status;
        }
        src = (const char *)src + chunk;
        raddr += chunk;
        len -= chunk;
    }
    return UTIL_OK;
}

static util_status_t btl_verbs_read(btl_verbs_iface_t *vif, btl_verbs_qp_t *q, void *dst,
                                    size_t len, btl_mem_t *lmem, uint64_t raddr, uint32_t rkey)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    uint64_t number = 0;
    uint32_t lkey;
    util_status_t status;

    if (len == 0) {
        return UTIL_OK;
    }
    if (btl_verbs_lkey(vif, lmem, dst, len, &lkey)) {
        while (len > 0) {
            size_t chunk = len < BTL_VERBS_MAX_MSG ? len : BTL_VERBS_MAX_MSG;

            btl_verbs_wr_read(&wr, &sge, dst, (uint32_t)chunk, lkey, raddr, rkey, 0, 0);
            status = btl_verbs_post(vif, q, &wr, 1, chunk == len, &number);
            if (status != UTIL_OK) {
                return status;
            }
            dst = (char *)dst + chunk;
            raddr += chunk;
            len -= chunk;
        }
        return btl_verbs_wait(vif, q, number);
    }
    while (len > 0) {
        size_t chunk = len < BTL_VERBS_BOUNCE_SIZE ? len : BTL_VERBS_BOUNCE_SIZE;

        btl_verbs_wr_read(&wr, &sge, vif->bounce, (uint32_t)chunk, vif->bounce_mr->lkey, raddr,
                          rkey, 0, 0);
        status = btl_verbs_post(vif, q, &wr, 1, 1, &number);
        if (status == UTIL_OK) {
            status = btl_verbs_wait(vif, q, number);
        }
        if (status != UTIL_OK) {
            return status;
        }
        memcpy(dst, vif->bounce, chunk);
        dst = (char *)dst + chunk;
        raddr += chunk;
        len -= chunk;
    }
    return UTIL_OK;
}

static util_status_t btl_verbs_put(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                   uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    btl_verbs_iface_t *vif = btl_verbs_iface(ep->iface);
    btl_verbs_qp_t *q = btl_verbs_ep(ep)->vqp;
    util_status_t status = btl_verbs_check(q, rkey, raddr, len, "put");

    (void)comp; /* completes before returning */
    if (status != UTIL_OK) {
        return status;
    }
    return btl_verbs_write(vif, q, src, len, lmem, raddr, btl_verbs_rkey(rkey)->rkey);
}

static util_status_t btl_verbs_get(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                   uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    btl_verbs_iface_t *vif = btl_verbs_iface(ep->iface);
    btl_verbs_qp_t *q = btl_verbs_ep(ep)->vqp;
    util_status_t status = btl_verbs_check(q, rkey, raddr, len, "get");

    (void)comp;
    if (status != UTIL_OK) {
        return status;
    }
    return btl_verbs_read(vif, q, dst, len, lmem, raddr, btl_verbs_rkey(rkey)->rkey);
}

static util_status_t btl_verbs_put_flag(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                        uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                        btl_rkey_t *flag_rkey, uint64_t flag_value,
                                        btl_comp_t *comp)
{
    btl_verbs_iface_t *vif = btl_verbs_iface(ep->iface);
    btl_verbs_qp_t *q = btl_verbs_ep(ep)->vqp;
    uint32_t flag_key = btl_verbs_rkey(flag_rkey)->rkey;
    util_status_t status = btl_verbs_check(q, rkey, raddr, len, "put_flag payload");

    (void)comp;
    if (status == UTIL_OK) {
        status = btl_verbs_check(q, flag_rkey, flag_raddr, 8, "put_flag flag");
    }
    if (status != UTIL_OK) {
        return status;
    }
    /* Payload and flag both inline: one chain, done at once. */
    if (vif->flag_ordered && len > 0 && len <= vif->max_inline && vif->max_inline >= 8) {
        struct ibv_send_wr wr[2];
        struct ibv_sge sge[2];
        uint64_t number;

        btl_verbs_wr_put_flag(wr, sge, src, (uint32_t)len, 0, IBV_SEND_INLINE, raddr,
                              btl_verbs_rkey(rkey)->rkey, &flag_value, flag_raddr, flag_key, 0, 0);
        return btl_verbs_post(vif, q, wr, 2, 0, &number);
    }
    /* Otherwise the payload write is locally complete first (a write
     * beyond the inline size waits for its acknowledgement); in wait mode
     * an inline payload is waited for too. */
    status = btl_verbs_write(vif, q, src, len, lmem, raddr, btl_verbs_rkey(rkey)->rkey);
    if (status == UTIL_OK && !vif->flag_ordered) {
        status = btl_verbs_quiet_qp(vif, q);
    }
    if (status != UTIL_OK) {
        return status;
    }
    return btl_verbs_write(vif, q, &flag_value, 8, NULL, flag_raddr, flag_key);
}

static util_status_t btl_verbs_get_flag(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                        uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                        btl_rkey_t *flag_rkey, uint64_t flag_value,
                                        btl_comp_t *comp)
{
    btl_verbs_iface_t *vif = btl_verbs_iface(ep->iface);
    btl_verbs_qp_t *q = btl_verbs_ep(ep)->vqp;
    util_status_t status = btl_verbs_check(q, rkey, raddr, len, "get_flag payload");

    (void)comp;
    if (status == UTIL_OK) {
        status = btl_verbs_check(q, flag_rkey, flag_raddr, 8, "get_flag flag");
    }
    if (status == UTIL_OK) {
        status = btl_verbs_read(vif, q, dst, len, lmem, raddr, btl_verbs_rkey(rkey)->rkey);
    }
    if (status != UTIL_OK) {
        return status;
    }
    return btl_verbs_write(vif, q, &flag_value, 8, NULL, flag_raddr,
                           btl_verbs_rkey(flag_rkey)->rkey);
}

/* ---- atomics ---- */
typedef struct {
    btl_verbs_iface_t *vif;
    btl_verbs_qp_t *q;
    uint32_t rkey;
} btl_verbs_amo_ctx_t;

/* Posts one network atomic into the scratch word and waits for it. */
static util_status_t btl_verbs_amo_wait(btl_verbs_amo_ctx_t *ac, struct ibv_send_wr *wr,
                                        uint64_t *old_p)
{
    uint64_t number;
    util_status_t status = btl_verbs_post(ac->vif, ac->q, wr, 1, 1, &number);

    if (status == UTIL_OK) {
        status = btl_verbs_wait(ac->vif, ac->q, number);
    }
    if (status == UTIL_OK) {
        *old_p = __atomic_load_n(&ac->vif->scratch->result, __ATOMIC_ACQUIRE);
    }
    return status;
}

static util_status_t btl_verbs_amo_cas(void *arg, uint64_t word_raddr, uint64_t compare,
                                       uint64_t swap, uint64_t *old_p)
{
    btl_verbs_amo_ctx_t *ac = arg;
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    btl_verbs_wr_cswap(&wr, &sge, &ac->vif->scratch->result, ac->vif->scratch_mr->lkey, word_raddr,
                       ac->rkey, compare, swap, 0, 0);
    return btl_verbs_amo_wait(ac, &wr, old_p);
}

static util_status_t btl_verbs_amo_fadd(void *arg, uint64_t word_raddr, uint64_t add,
                                        uint64_t *old_p)
{
    btl_verbs_amo_ctx_t *ac = arg;
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    btl_verbs_wr_fadd(&wr, &sge, &ac->vif->scratch->result, ac->vif->scratch_mr->lkey, word_raddr,
                      ac->rkey, add, 0, 0);
    return btl_verbs_amo_wait(ac, &wr, old_p);
}

static util_status_t btl_verbs_amo_fetch(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                         uint64_t raddr, btl_rkey_t *rkey, uint64_t operand,
                                         uint64_t compare, uint64_t *result_p)
{
    btl_verbs_amo_ctx_t ac = {btl_verbs_iface(ep->iface), btl_verbs_ep(ep)->vqp,
                              btl_verbs_rkey(rkey)->rkey};
    btl_verbs_amo_slot_t slot;
    util_status_t status;

    if ((unsigned)op >= BTL_AMO_LAST || btl_verbs_amo_slot(size, raddr, &slot) != UTIL_OK) {
        util_error("btl/verbs: bad atomic (op %d, size %u, address 0x%llx)", (int)op, size,
                   (unsigned long long)raddr);
        return UTIL_ERR_INVALID;
    }
    /* the adapter works on the whole enclosing 8-byte word */
    status = btl_verbs_check(ac.q, rkey, slot.word_raddr, 8, "atomic");
    if (status != UTIL_OK) {
        return status;
    }
    return btl_verbs_amo_run(op, size, raddr, operand, compare, btl_verbs_amo_cas,
                             btl_verbs_amo_fadd, &ac, result_p);
}

static util_status_t btl_verbs_amo_post(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                        uint64_t raddr, btl_rkey_t *rkey, uint64_t operand)
{
    uint64_t old;

    if (op == BTL_AMO_FETCH || op == BTL_AMO_SWAP || op == BTL_AMO_CSWAP) {
        util_error("btl/verbs: atomic op %d has no non-fetching form", (int)op);
        return UTIL_ERR_INVALID;
    }
    return btl_verbs_amo_fetch(ep, op, size, raddr, rkey, operand, 0, &old);
}

/* ---- ordering and completion ---- */

/* Every WR posted on q is retired: a signaled nop goes behind an unsignaled
 * tail so that a completion comes. */
static util_status_t btl_verbs_quiet_qp(btl_verbs_iface_t *vif, btl_verbs_qp_t *q)
{
    uint64_t number = q->credits.posted;
    util_status_t status;

    if (q->status != UTIL_OK) {
        return q->status;
    }
    if (q->credits.completed >= number) {
        return UTIL_OK;
    }
    if (btl_verbs_credits_tail_unsignaled(&q->credits)) {
        struct ibv_send_wr wr;

        btl_verbs_wr_nop(&wr, 0, 0);
        status = btl_verbs_post(vif, q, &wr, 1, 1, &number);
        if (status != UTIL_OK) {
            return status;
        }
    }
    return btl_verbs_wait(vif, q, number);
}

static util_status_t btl_verbs_fence(btl_ep_t *ep)
{
    return btl_verbs_quiet_qp(btl_verbs_iface(ep->iface), btl_verbs_ep(ep)->vqp);
}

static util_status_t btl_verbs_quiet(btl_iface_t *iface)
{
    btl_verbs_iface_t *vif = btl_verbs_iface(iface);
    util_status_t first = vif->status;

    for (int peer = 0; peer < vif->num_qps && first == UTIL_OK; peer++) {
        if (vif->qps[peer].connected) {
            util_status_t status = btl_verbs_quiet_qp(vif, &vif->qps[peer]);
            if (status != UTIL_OK) {
                first = status;
            }
        }
    }
    return first;
}

static util_status_t btl_verbs_progress(btl_iface_t *iface)
{
    return btl_verbs_poll(btl_verbs_iface(iface));
}

/* ---- iface ---- */
static void btl_verbs_teardown(btl_verbs_iface_t *vif)
{
    for (int peer = 0; vif->qps != NULL && peer < vif->num_qps; peer++) {
        if (vif->qps[peer].qp != NULL && ibv_destroy_qp(vif->qps[peer].qp) != 0) {
            util_warn("btl/verbs: ibv_destroy_qp (peer %d) failed", peer);
        }
    }
    free(vif->qps);
    if (vif->scratch_mr != NULL) {
        ibv_dereg_mr(vif->scratch_mr);
    }
    if (vif->bounce_mr != NULL) {
        ibv_dereg_mr(vif->bounce_mr);
    }
    free(vif->scratch);
    free(vif->bounce);
    if (vif->cq != NULL && ibv_destroy_cq(vif->cq) != 0) {
        util_warn("btl/verbs: ibv_destroy_cq failed");
    }
    if (vif->pd != NULL && ibv_dealloc_pd(vif->pd) != 0) {
        util_warn("btl/verbs: ibv_dealloc_pd failed (registrations still open?)");
    }
    if (vif->dev != NULL) {
        ibv_close_device(vif->dev);
    }
    free(vif);
}

static util_status_t btl_verbs_iface_close(btl_iface_t *iface)
{
    btl_verbs_teardown(btl_verbs_iface(iface));
    return UTIL_OK;
}

/* First active port of dev at or after `want` (0: any). */
static int btl_verbs_active_port(struct ibv_context *dev, const struct ibv_device_attr *dattr,
                                 long want, struct ibv_port_attr *pattr_p)
{
    for (int port = 1; port <= dattr->phys_port_cnt; port++) {
        if (want != 0 && port != want) {
            continue;
        }
        if (ibv_query_port(dev, (uint8_t)port, pattr_p) == 0 && pattr_p->state == IBV_PORT_ACTIVE) {
            return port;
        }
    }
    return 0;
}

/* Opens the device named by RMB_VERBS_DEVICE, else the first one with an
 * active port (RMB_VERBS_PORT). */
static util_status_t btl_verbs_open_device(btl_verbs_iface_t *vif, struct ibv_device_attr *dattr,
                                           struct ibv_port_attr *pattr)
{
    const char *want_dev = NULL;
    long want_port = 0;
    struct ibv_device **list;
    int num = 0, port = 0;
    util_status_t status = util_env_get_string("RMB_VERBS_DEVICE", &want_dev);

    if (status == UTIL_OK) {
        status = util_env_get_int("RMB_VERBS_PORT", &want_port);
    }
    if (status != UTIL_OK) {
        return status;
    }
    if (want_port < 0 || want_port > 255) {
        util_error("RMB_VERBS_PORT=%ld: expected 0 (first active) or a port number", want_port);
        return UTIL_ERR_INVALID;
    }
    list = ibv_get_device_list(&num);
    if (list == NULL || num == 0) {
        util_error("btl/verbs: no RDMA device (ibv_get_device_list found none)");
        if (list != NULL) {
            ibv_free_device_list(list);
        }
        return UTIL_ERR_NOT_FOUND;
    }
    for (int i = 0; i < num && vif->dev == NULL; i++) {
        const char *name = ibv_get_device_name(list[i]);
        struct ibv_context *dev;

        if (want_dev[0] != '\0' && strcmp(name, want_dev) != 0) {
            continue;
        }
        dev = ibv_open_device(list[i]);
        if (dev == NULL) {
            util_debug("btl/verbs: cannot open %s: %s", name, strerror(errno));
            continue;
        }
        if (ibv_query_device(dev, dattr) == 0 &&
            (port = btl_verbs_active_port(dev, dattr, want_port, pattr)) != 0) {
            vif->dev = dev;
            snprintf(vif->dev_name, sizeof(vif->dev_name), "%s", name);
        } else {
            ibv_close_device(dev);
        }
    }
    ibv_free_device_list(list);
    if (vif->dev == NULL) {
        if (want_dev[0] != '\0') {
            util_error("btl/verbs: RMB_VERBS_DEVICE=%s%s: no such device with an active port "
                       "(see ibv_devinfo)",
                       want_dev, want_port != 0 ? " and RMB_VERBS_PORT" : "");
        } else {
            util_error("btl/verbs: none of %d RDMA device(s) has an active port%s (see "
                       "ibv_devinfo)",
                       num, want_port != 0 ? " with RMB_VERBS_PORT's number" : "");
        }
        return UTIL_ERR_NOT_FOUND;
    }
    vif->self.port = (uint8_t)port;
    return UTIL_OK;
}

/* LID, MTU and (RoCE, or RMB_VERBS_GID_INDEX set) GID of my port. */
static util_status_t btl_verbs_address(btl_verbs_iface_t *vif, const struct ibv_port_attr *pattr)
{
    long gid_index = -1;
    union ibv_gid gid;
    util_status_t status = util_env_get_int("RMB_VERBS_GID_INDEX", &gid_index);

    if (status != UTIL_OK) {
        return status;
    }
    vif->self.lid = pattr->lid;
    vif->self.mtu = (uint8_t)pattr->active_mtu;
    if (gid_index < 0 && pattr->link_layer == IBV_LINK_LAYER_ETHERNET) {
        gid_index = 0; /* RoCE has no LIDs */
    }
    if (gid_index >= 0) {
        if (gid_index >= pattr->gid_tbl_len ||
            ibv_query_gid(vif->dev, vif->self.port, (int)gid_index, &gid) != 0) {
            util_error("btl/verbs: RMB_VERBS_GID_INDEX=%ld: no such GID on %s port %u "
                       "(table has %d; see ibv_devinfo -v)",
                       gid_index, vif->dev_name, vif->self.port, pattr->gid_tbl_len);
            return UTIL_ERR_INVALID;
        }
        vif->self.has_gid = 1;
        vif->gid_index = (int)gid_index;
        memcpy(vif->self.gid, gid.raw, 16);
    } else if (pattr->lid == 0) {
        util_error("btl/verbs: %s port %u has no LID (subnet manager running?) and no GID "
                   "index was given (RMB_VERBS_GID_INDEX)",
                   vif->dev_name, vif->self.port);
        return UTIL_ERR_UNREACHABLE;
    }
    return UTIL_OK;
}

static util_status_t btl_verbs_create_qps(btl_verbs_iface_t *vif, int num_peers,
                                          uint32_t signal_every)
{
    int rank = vif->super.ctx->rank;

    vif->qps = calloc((size_t)num_peers, sizeof(*vif->qps));
    if (vif->qps == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    vif->num_qps = num_peers;
    vif->max_inline = BTL_VERBS_INLINE_WANT;
    for (int peer = 0; peer < num_peers; peer++) {
        btl_verbs_qp_t *q = &vif->qps[peer];
        struct ibv_qp_init_attr init;
        struct ibv_qp_attr attr;
        int ret;

        memset(&init, 0, sizeof(init));
        init.send_cq = vif->cq;
        init.recv_cq = vif->cq;
        init.qp_type = IBV_QPT_RC;
        init.cap.max_send_wr = vif->sq_depth;
        init.cap.max_recv_wr = 1;
        init.cap.max_send_sge = 1;
        init.cap.max_recv_sge = 1;
        init.cap.max_inline_data = vif->max_inline;
        q->qp = ibv_create_qp(vif->pd, &init);
        if (q->qp == NULL && vif->max_inline > 0) {
            init.cap.max_inline_data = vif->max_inline = 0; /* no inline on this device */
            q->qp = ibv_create_qp(vif->pd, &init);
        }
        if (q->qp == NULL) {
            util_error("btl/verbs: ibv_create_qp (%d of %d, %u WRs) on %s: %s", peer + 1, num_peers,
                       vif->sq_depth, vif->dev_name, strerror(errno));
            return errno == ENOMEM ? UTIL_ERR_NO_MEMORY : UTIL_ERR_NO_RESOURCE;
        }
        if (init.cap.max_inline_data < vif->max_inline) {
            vif->max_inline = init.cap.max_inline_data;
        }
        memset(&attr, 0, sizeof(attr));
        attr.qp_state = IBV_QPS_INIT;
        attr.pkey_index = 0;
        attr.port_num = vif->self.port;
        attr.qp_access_flags =
            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        ret = ibv_modify_qp(q->qp, &attr,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
        if (ret != 0) {
            util_error("btl/verbs: QP for peer %d to INIT: %s", peer, strerror(ret));
            return UTIL_ERR_IO;
        }
        /* any 24-bit start will do; differing ones make stale packets stand out */
        q->psn = ((uint32_t)rank * 2654435761u ^ (uint32_t)peer * 40503u) & 0xffffffu;
        btl_verbs_sq_credits_init(&q->credits, vif->sq_depth, signal_every);
    }
    return UTIL_OK;
}

static util_status_t btl_verbs_publish(btl_verbs_iface_t *vif)
{
    for (int peer = 0; peer < vif->num_qps; peer++) {
        btl_verbs_conn_t conn = vif->self;
        uint8_t buf[BTL_VERBS_CONN_SIZE];
        char key[BOOTSTRAP_KEY_MAX];
        size_t len;
        util_status_t status;

        conn.qpn = vif->qps[peer].qp->qp_num;
        conn.psn = vif->qps[peer].psn;
        status = btl_verbs_conn_pack(&conn, buf, sizeof(buf), &len);
        if (status == UTIL_OK) {
            status = btl_verbs_conn_key(vif, peer, key, sizeof(key));
        }
        if (status == UTIL_OK) {
            status = bootstrap_put(key, buf, len);
        }
        if (status != UTIL_OK) {
            util_error("btl/verbs: cannot publish connection data for peer %d: %s", peer,
                       util_status_string(status));
            return status;
        }
    }
    return UTIL_OK;
}

static util_status_t btl_verbs_iface_open(btl_ctx_t *ctx, int index, btl_iface_t **iface_p);

static const btl_ops_t btl_verbs_ops = {
    .iface_close = btl_verbs_iface_close,
    .ep_connect = btl_verbs_ep_connect,
    .ep_disconnect = btl_verbs_ep_disconnect,
    .mem_alloc = btl_stub_mem_alloc,
    .mem_remap = btl_stub_mem_remap,
    .mem_reg = btl_verbs_mem_reg,
    .mem_dereg = btl_verbs_mem_dereg,
    .rkey_pack = btl_verbs_rkey_pack,
    .rkey_unpack = btl_verbs_rkey_unpack,
    .rkey_release = btl_verbs_rkey_release,
    .put = btl_verbs_put,
    .get = btl_verbs_get,
    .put_flag = btl_verbs_put_flag,
    .get_flag = btl_verbs_get_flag,
    .amo_post = btl_verbs_amo_post,
    .amo_fetch = btl_verbs_amo_fetch,
    .amo_fetch_nbi = btl_amo_fetch_nbi_at_once,
    .fence = btl_verbs_fence,
    .quiet = btl_verbs_quiet,
    .progress = btl_verbs_progress,
};

const btl_component_t btl_verbs_component = {
    .name = "verbs",
    .on_node_only = 0,
    .iface_open = btl_verbs_iface_open,
    .describe = btl_verbs_describe,
};

static util_status_t btl_verbs_iface_open(btl_ctx_t *ctx, int index, btl_iface_t **iface_p)
{
    struct ibv_device_attr dattr;
    struct ibv_port_attr pattr;
    const char *order = NULL;
    long sq_depth = 0, cq_depth = 0;
    btl_verbs_iface_t *vif;
    unsigned caps = BTL_CAP_ANY_MEMORY;
    util_status_t status;

    vif = calloc(1, sizeof(*vif));
    if (vif == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    vif->super.ops = btl_verbs_ops;
    btl_iface_base_init(&vif->super, &btl_verbs_component, ctx, index, 0);
    status = util_env_get_int("RMB_VERBS_SQ_DEPTH", &sq_depth);
    if (status == UTIL_OK) {
        status = util_env_get_int("RMB_VERBS_CQ_DEPTH", &cq_depth);
    }
    if (status == UTIL_OK) {
        status = util_env_get_string("RMB_VERBS_FLAG_ORDER", &order);
    }
    if (status != UTIL_OK) {
        goto err;
    }
    if (sq_depth < 4 || sq_depth > 65536 || cq_depth < 8 || cq_depth > (1L << 22)) {
        util_error("RMB_VERBS_SQ_DEPTH=%ld / RMB_VERBS_CQ_DEPTH=%ld: expected 4..65536 and "
                   "8..4194304",
                   sq_depth, cq_depth);
        status = UTIL_ERR_INVALID;
        goto err;
    }
    if (strcmp(order, "ordered") == 0 || strcmp(order, "wait") == 0) {
        vif->flag_ordered = order[0] == 'o';
    } else {
        util_error("RMB_VERBS_FLAG_ORDER=\"%s\": expected ordered or wait", order);
        status = UTIL_ERR_INVALID;
        goto err;
    }
    status = btl_verbs_open_device(vif, &dattr, &pattr);
    if (status == UTIL_OK) {
        status = btl_verbs_address(vif, &pattr);
    }
    if (status != UTIL_OK) {
        goto err;
    }
    vif->sq_depth = (uint32_t)(sq_depth < dattr.max_qp_wr ? sq_depth : dattr.max_qp_wr);
    if (cq_depth > dattr.max_cqe) {
        cq_depth = dattr.max_cqe;
    }
    vif->max_rd_atomic = (uint8_t)(dattr.max_qp_rd_atom < 16 ? dattr.max_qp_rd_atom : 16);
    if (dattr.max_qp_init_rd_atom < vif->max_rd_atomic) {
        vif->max_rd_atomic = (uint8_t)dattr.max_qp_init_rd_atom;
    }
    btl_verbs_cq_credits_init(&vif->cq_credits, (uint32_t)cq_depth);

    vif->pd = ibv_alloc_pd(vif->dev);
    if (vif->pd == NULL) {
        util_error("btl/verbs: ibv_alloc_pd on %s: %s", vif->dev_name, strerror(errno));
        status = UTIL_ERR_NO_RESOURCE;
        goto err;
    }
    vif->cq = ibv_create_cq(vif->dev, (int)cq_depth, NULL, NULL, 0);
    if (vif->cq == NULL) {
        util_error("btl/verbs: ibv_create_cq(%ld) on %s: %s", cq_depth, vif->dev_name,
                   strerror(errno));
        status = UTIL_ERR_NO_RESOURCE;
        goto err;
    }
    if (posix_memalign((void **)&vif->scratch, 64, sizeof(*vif->scratch)) != 0 ||
        posix_memalign(&vif->bounce, 4096, BTL_VERBS_BOUNCE_SIZE) != 0) {
        status = UTIL_ERR_NO_MEMORY;
        goto err;
    }
    status = btl_verbs_reg(vif, vif->scratch, sizeof(*vif->scratch), IBV_ACCESS_LOCAL_WRITE,
                           &vif->scratch_mr);
    if (status == UTIL_OK) {
        status = btl_verbs_reg(vif, vif->bounce, BTL_VERBS_BOUNCE_SIZE, IBV_ACCESS_LOCAL_WRITE,
                               &vif->bounce_mr);
    }
    if (status == UTIL_OK) {
        status = btl_verbs_create_qps(vif, ctx->size, vif->sq_depth / 4);
    }
    if (status == UTIL_OK) {
        status = btl_verbs_publish(vif);
    }
    if (status != UTIL_OK) {
        goto err;
    }

    if (dattr.atomic_cap == IBV_ATOMIC_NONE || vif->max_rd_atomic == 0) {
        /* swap the table rather than test per call */
        vif->super.ops.amo_post = btl_stub_amo_post;
        vif->super.ops.amo_fetch = btl_stub_amo_fetch;
    } else {
        caps |= BTL_CAP_AMO32 | BTL_CAP_AMO64;
    }
    if (vif->flag_ordered) {
        caps |= BTL_CAP_FLAG_ORDERED;
    }
    vif->super.caps = caps;
    util_debug("btl/verbs: %s port %u (%s), LID %u, MTU %u, SQ %u, CQ %ld, inline %u, "
               "atomics %s, flag %s",
               vif->dev_name, vif->self.port, vif->self.has_gid ? "GID" : "LID", vif->self.lid,
               btl_verbs_mtu_bytes(vif->self.mtu), vif->sq_depth, cq_depth, vif->max_inline,
               (caps & BTL_CAP_AMO64) ? "yes" : "no", vif->flag_ordered ? "ordered" : "wait");
    *iface_p = &vif->super;
    return UTIL_OK;

err:
    btl_verbs_teardown(vif);
    return status;
}
