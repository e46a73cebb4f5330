/*
 * btl/ofi's internals, shared by btl_ofi.c (provider, RMA, atomics,
 * completion, ordering, the iface) and btl_ofi_am.c (messages, batches,
 * pings). Not part of btl.h: nothing outside btl/ofi includes it.
 */
#ifndef BTL_OFI_H
#define BTL_OFI_H

#include "btl/btl.h"
#include "btl/btl_batch.h"
#include "btl/btl_helper.h"
#include "btl/btl_wait.h"

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

/* libfabric's entry points, loaded by btl_ofi_lib_open (btl_ofi_lib.c) */
typedef struct {
    int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info);
    void (*freeinfo)(struct fi_info *info);
    struct fi_info *(*dupinfo)(const struct fi_info *info);
    int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
    const char *(*strerror)(int errnum);
    uint32_t (*version)(void);
} btl_ofi_lib_t;

extern btl_ofi_lib_t btl_ofi_lib;

/* Loads libfabric once per process; a one-line error where it cannot. */
util_status_t btl_ofi_lib_open(void);

#define BTL_OFI_API_VERSION FI_VERSION(1, 10)
#define BTL_OFI_ADDR_MAX    128 /* bytes of a published fi_getname address */
#define BTL_OFI_SPINS_BEFORE_YIELD                                                                 \
    BTL_WAIT_NET_SPINS            /* progress calls between yields (oversubscribed) */
#define BTL_OFI_SLOTS         64  /* bounce-ring slots (staged puts in flight) */
#define BTL_OFI_REQS          256 /* requests: BTL_OFI_SLOTS staged + the rest plain */
#define BTL_OFI_CQ_BATCH      16
#define BTL_OFI_TIMEOUT_CHECK 1024 /* progress calls between timeout scans */
#define BTL_OFI_AM_RX         32   /* receive buffers posted for messages */
#define BTL_OFI_AM_SIZE       4096 /* bytes of a message's buffer: header and payload */
#define BTL_OFI_BATCH_PUT_MAX 1024 /* larger puts are not batched */
#define BTL_OFI_SPANS         64   /* per peer: batches whose target bytes we remember */
#define BTL_OFI_SEND_TRIES    64   /* the helper's tries of a send the provider defers */
#define BTL_OFI_ASK_AFTER     256  /* polls for a pong before reading the peer's count */
#define BTL_OFI_AM_WINDOW     8    /* full batches to a peer in flight, not yet applied */
#define BTL_OFI_SERVE_EVERY   16   /* posts between polls without a helper thread */
#define BTL_OFI_YIELD_EVERY   64   /* and between yields, where PEs outnumber cores */

#define BTL_OFI_MR_MODES                                                                           \
    (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)

/* How fence(ep) orders later operations to one peer behind earlier ones. */
typedef enum {
    BTL_OFI_FENCE_ORDERED, /* provider orders every RMA/atomic pair: nothing to do */
    BTL_OFI_FENCE_FLAG,    /* the next operation to the peer carries FI_FENCE */
    BTL_OFI_FENCE_WAIT     /* wait for everything, when the peer has anything outstanding */
} btl_ofi_fence_mode_t;

typedef enum {
    BTL_OFI_FLAG_NATIVE,
    BTL_OFI_FLAG_FENCE,
    BTL_OFI_FLAG_MESSAGE,
    BTL_OFI_FLAG_WAIT
} btl_ofi_flag_order_t;

/* A message (flag order message): the header, then batch_len bytes of
 * records (btl_batch.h) the target applies in order: puts and atomics held
 * back for it, then a put_flag (or a put, or a put_flag_rec's record and
 * its put_flag). Addresses are the target's. */
typedef struct {
    uint32_t origin;    /* the sender's rank: its am_applied word */
    uint16_t batch_len; /* bytes of records */
    uint16_t ping;      /* BTL_OFI_PING: answer with a pong (quiet); BTL_OFI_PONG: one */
} btl_ofi_am_hdr_t;

/* A ping asks the target for its count of our messages once it has
 * applied this one; the pong carries it back as a flag write into our
 * am_pong word for the target. Pongs are not counted as messages: an
 * answer must not stand for a message still waiting to be applied. */
enum { BTL_OFI_PING = 1, BTL_OFI_PONG = 2 };

/* A posted receive buffer; its address is the receive's context. */
typedef struct {
    int arrived; /* completed, waiting for the ones posted before it */
} btl_ofi_rx_t;

/* Which forms of an atomic the provider has for one size. */
enum { BTL_OFI_AMO_BASE = 1u << 0, BTL_OFI_AMO_FETCH = 1u << 1 };

/* Packed remote key. */
typedef struct {
    uint64_t base;
    uint64_t len;
    uint64_t key;
} btl_ofi_packed_t;

/* Words atomics read and write locally: registered once, so FI_MR_LOCAL
 * providers get a descriptor without a registration per call. */
typedef struct {
    uint64_t operand;
    uint64_t compare;
    uint64_t result;
    uint64_t flag; /* source of flag writes */
} btl_ofi_scratch_t;

/* An operation posted with FI_COMPLETION whose CQ entry we wait for: a
 * non-blocking operation counted in comp, or a put staged in bounce-ring
 * slot `slot` (freed on completion). The request is the op's context. */
typedef struct btl_ofi_req {
    btl_comp_t *comp; /* NULL: nobody to tell (staged put, or detached) */
    int slot;         /* bounce-ring slot, -1 for plain requests */
    int peer;
    int in_use;
    uint64_t posted_ns; /* non-blocking operations: for their timeout */
    struct btl_ofi_req *next_free;
} btl_ofi_req_t;

typedef struct {
    btl_mr_t super;
    struct fid_mr *mr;
    void *desc;
    uint64_t key;
} btl_ofi_mr_t;

typedef struct {
    btl_iface_t super;
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_cntr *wr_cntr;
    struct fid_cntr *rd_cntr;
    struct fid_ep *ep;
    uint64_t mr_mode;
    int virt_addr;
    size_t inject_size;
    uint64_t comp_flag; /* completion level of writes and atomics */
    size_t max_msg;     /* largest single transfer */
    size_t max_waw;     /* largest payload whose placement is ordered */
    btl_ofi_flag_order_t flag_order;
    btl_ofi_fence_mode_t fence_mode;
    uint64_t drained_seq;   /* wr_posted + rd_posted when last seen all done */
    btl_wait_bound_t bound; /* RMB_BTL_TIMEOUT_SEC: how long waits may take */
    size_t eager_size;      /* puts up to this size are staged in the ring */
    void *ring;             /* BTL_OFI_SLOTS slots of eager_size bytes */
    btl_ofi_mr_t *ring_mr;
    btl_ofi_req_t reqs[BTL_OFI_REQS];
    btl_ofi_req_t *staged_free, *plain_free;
    unsigned reqs_pending;
    uint64_t wr_posted, rd_posted;     /* operations we posted */
    uint64_t wr_err_seen, rd_err_seen; /* errors already reported */
    uint64_t next_key;
    unsigned progress_calls;
    unsigned amo[BTL_AMO_LAST][2]; /* BTL_OFI_AMO_* by [op][size == 8] */
    btl_ofi_scratch_t scratch;
    btl_ofi_mr_t *scratch_mr;
    void *bounce;
    size_t bounce_size;
    btl_ofi_mr_t *bounce_mr;
    btl_helper_t helper;
    int progress_fd; /* RMB_OFI_PROGRESS_FD: the helper may sleep in the CQ fd */
    int wait_fd;     /* the CQ's wait fd for the helper thread, or -1 */

    /* Messages (flag order message); the PE and the helper apply them,
     * whoever holds rx_lock. */
    struct fid_cq *rx_cq;
    int rx_wait_fd;
    int rx_lock;
    unsigned rx_head;        /* next buffer to apply, in posting order */
    unsigned tx_skips;       /* polls that left the other CQ alone (btl_ofi_poll) */
    unsigned posts_unserved; /* posts without a helper thread (btl_ofi_posted) */
    uint64_t relaxes_seen;   /* its util_wait_share_core */
    btl_ofi_rx_t rx[BTL_OFI_AM_RX];
    void *rx_buf; /* BTL_OFI_AM_RX buffers of BTL_OFI_AM_SIZE bytes */
    btl_ofi_mr_t *rx_mr;
    uint64_t *am_applied;        /* per peer: its messages applied here (peers read them) */
    uint64_t *am_landing;        /* per peer: its count of ours, read here */
    uint64_t *am_pong;           /* per peer: its count of ours, as its pong wrote it */
    btl_ofi_mr_t *am_mr;         /* the three arrays */
    struct btl_ofi_ep *am_dirty; /* eps with messages not yet seen applied */
    size_t am_inject;            /* messages up to this size are injected */
    /* Pongs owed (a ping applied here), under rx_lock; peers[] are the
     * endpoints by rank, which pongs go out on. pong_connect: a pong is
     * owed to a peer we have no endpoint for (the PE connects it). */
    struct btl_ofi_ep **peers;
    uint8_t *pong_owed;
    int *pong_list;
    int num_pongs;
    int pong_connect;

    /* Batches (software providers with messages): OpenSHMEM's small puts
     * and non-fetching atomics wait per peer, up to batch_max bytes of
     * records, and go as one message (btl_ofi_batch_send). The helper
     * thread sends them too, so batch_lock guards every message send, the
     * batches and the list of peers that hold one. */
    size_t batch_max; /* 0: no batches */
    int batch_lock;
    struct btl_ofi_ep **batched;
    int num_batched;
    int helper_asleep; /* blocked in poll with no batch to send */
    int wake_fd;       /* an eventfd that ends the helper's block, or -1 */
} btl_ofi_iface_t;

typedef struct {
    btl_rkey_t super;
    uint64_t key;
    uint64_t offset; /* subtracted from remote addresses (0 with FI_MR_VIRT_ADDR) */
} btl_ofi_rkey_t;

typedef struct btl_ofi_ep {
    btl_ep_t super;
    fi_addr_t addr;
    uint64_t fence_flag; /* FI_FENCE for the next operation, after a fence */
    uint64_t last_seq;   /* wr_posted + rd_posted after our latest operation */
    int accepted;        /* the provider took an operation to this peer */
    char where[64];      /* the peer's address as text, for error messages */

    /* Messages: the peer's am_applied word for us, what we sent, what a
     * quiet must see applied (btl_comp_signal flags need not), and what
     * we last read there. */
    int am;
    btl_ofi_rkey_t am_rkey;
    uint64_t am_raddr;
    uint64_t am_sent, am_need, am_seen;
    uint64_t am_fenced; /* messages a fence put before later RMA and atomics */
    uint64_t am_pinged; /* the number of our latest ping */
    int am_listed;
    struct btl_ofi_ep *am_next;

    /* The message being built: a header's room, then batch_len bytes of
     * held records covering target bytes [batch_lo, batch_hi). */
    char *msg; /* BTL_OFI_AM_SIZE bytes, allocated at the first message */
    size_t batch_len;
    uint64_t batch_lo, batch_hi;
    int batched; /* in the iface's batched list */
    /* Batches sent: message number and target bytes of the latest ones,
     * so that an RMA or atomic waits only for those it overlaps
     * (span_lost: the latest number forgotten). */
    struct {
        uint64_t no, lo, hi;
    } span[BTL_OFI_SPANS];
    unsigned span_next;
    uint64_t span_max, span_lost;
} btl_ofi_ep_t;

static inline btl_ofi_iface_t *btl_ofi_iface(btl_iface_t *iface)
{
    return btl_container_of(iface, btl_ofi_iface_t, super);
}

static inline btl_ofi_ep_t *btl_ofi_ep(btl_ep_t *ep)
{
    return btl_container_of(ep, btl_ofi_ep_t, super);
}

static inline btl_ofi_rkey_t *btl_ofi_rkey(btl_rkey_t *rkey)
{
    return btl_container_of(rkey, btl_ofi_rkey_t, super);
}

static inline btl_ofi_mr_t *btl_ofi_mr(btl_mr_t *mr)
{
    return btl_container_of(mr, btl_ofi_mr_t, super);
}

/* ---- messages: what both files use ---- */

/* A message of this many bytes is injected (built in the peer's message
 * buffer), else staged in the bounce ring. */
static inline int btl_ofi_am_injects(const btl_ofi_iface_t *oif, size_t bytes)
{
    return bytes <= oif->am_inject;
}

/* Can records (bytes of btl_batch.h records) go to oep as one message? */
static inline int btl_ofi_am_fits(const btl_ofi_iface_t *oif, const btl_ofi_ep_t *oep,
                                  size_t records)
{
    size_t bytes = sizeof(btl_ofi_am_hdr_t) + records;

    return oif->flag_order == BTL_OFI_FLAG_MESSAGE && oep->am && bytes <= BTL_OFI_AM_SIZE &&
           (btl_ofi_am_injects(oif, bytes) || bytes <= oif->eager_size);
}

/* Can a header and a bare flag record (a ping, a pong) be injected? */
static inline int btl_ofi_am_small(const btl_ofi_iface_t *oif)
{
    return btl_ofi_am_injects(oif,
                              sizeof(btl_ofi_am_hdr_t) + btl_batch_rec_size(BTL_BATCH_PUT_FLAG, 0));
}

/* batch_lock (btl_helper_lock): held for every message send (the helper
 * thread sends batches), the batches and the batched list. */
static inline void btl_ofi_tx_lock(btl_ofi_iface_t *oif)
{
    btl_helper_lock(&oif->batch_lock);
}

static inline int btl_ofi_tx_trylock(btl_ofi_iface_t *oif)
{
    return btl_helper_trylock(&oif->batch_lock);
}

static inline void btl_ofi_tx_unlock(btl_ofi_iface_t *oif)
{
    btl_helper_unlock(&oif->batch_lock);
}

/* ---- btl_ofi.c, for btl_ofi_am.c ---- */
util_status_t btl_ofi_status(ssize_t ret);
util_status_t btl_ofi_fail(const char *call, ssize_t ret);
util_status_t btl_ofi_retry(btl_ofi_iface_t *oif, btl_wait_t *w, const char *call, ssize_t ret,
                            btl_ofi_ep_t *oep);
util_status_t btl_ofi_poll(btl_ofi_iface_t *oif);
util_status_t btl_ofi_wait_tick(btl_ofi_iface_t *oif, btl_wait_t *w, const char *what, int peer);
util_status_t btl_ofi_wait_reads(btl_ofi_iface_t *oif, const char *what, int peer);
util_status_t btl_ofi_rma_post_raw(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, int is_write, void *buf,
                                   size_t len, void *desc, uint64_t raddr, btl_rkey_t *rkey,
                                   uint64_t extra_flags, btl_ofi_req_t *req);
util_status_t btl_ofi_req_get(btl_ofi_iface_t *oif, int staged, int peer, btl_ofi_req_t **req_p);
void btl_ofi_req_release(btl_ofi_iface_t *oif, btl_ofi_req_t *req);
util_status_t btl_ofi_reg(btl_ofi_iface_t *oif, void *addr, size_t size, btl_ofi_mr_t **mr_p);
util_status_t btl_ofi_ep_open(btl_ofi_iface_t *oif, int peer, btl_ofi_ep_t **oep_p);

/* ---- btl_ofi_am.c ---- */
util_status_t btl_ofi_am_init(btl_ofi_iface_t *oif);
util_status_t btl_ofi_am_poll(btl_ofi_iface_t *oif);
void btl_ofi_pong_connect(btl_ofi_iface_t *oif);
util_status_t btl_ofi_am_send(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, const void *src, size_t len,
                              uint64_t raddr, uint64_t flag_raddr, uint64_t flag_value,
                              const void *rec, size_t rec_len, uint64_t rec_raddr, int need);
util_status_t btl_ofi_batch_add(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, const btl_batch_rec_t *rec,
                                const void *data, size_t len);
util_status_t btl_ofi_batch_flush(btl_ofi_iface_t *oif, int helper);
util_status_t btl_ofi_batch_out(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep);
void btl_ofi_wake(void *arg);
util_status_t btl_ofi_am_ping(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep);
void btl_ofi_am_landed(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep);
util_status_t btl_ofi_am_order(btl_ofi_iface_t *oif, btl_ofi_ep_t *oep, uint64_t raddr, size_t len);
util_status_t btl_ofi_am_quiet(btl_ofi_iface_t *oif);

#endif
