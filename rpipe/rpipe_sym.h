/*
 * rpipe_sym: symmetric segments, the memory model OpenSHMEM needs. A
 * segment is memory every rank registers collectively with the same size;
 * offset x in mine names offset x in every peer's. Reaching a peer costs,
 * after the first use, one load of the peer entry: on-node peers whose
 * segment is mapped here are plain memory (memcpy, CPU atomics), others go
 * through the btl with the peer's key unpacked once.
 *
 * This is the "rwrite/rread at the symmetric offset" of the design: a
 * symmetric-mode rmalloc instance (rmalloc_symm) hands out the offsets, so
 * no descriptor or address is ever exchanged for a put, get or atomic.
 * Internal to the library (used by shmem/).
 */
#ifndef RPIPE_SYM_H
#define RPIPE_SYM_H

#include "btl/btl_cpu_amo.h"
#include "btl/btl_inl.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

typedef struct rpipe_sym_peer {
    char *ptr;    /* the peer's segment mapped here, or NULL */
    btl_ep_t *ep; /* NULL until first use */
    btl_rkey_t *rkey;
    uint64_t base;    /* the peer's address of its segment */
    btl_ep_t *amo_ep; /* rpipe_sym_amo_network: atomics through the network */
    btl_rkey_t *amo_rkey;
} rpipe_sym_peer_t;

typedef struct rpipe_sym {
    btl_mem_t *mem;
    char *base;
    size_t size;
    int npeers;
    rpipe_sym_peer_t *peer; /* npeers entries */
    uint8_t *packed;        /* every rank's packed key (connect on first use) */
    size_t packed_stride;
    int *ranks; /* group segments: the rank of each peer index; NULL when
                                * peer index == rank (every rank) */
} rpipe_sym_t;

/* Collective over all ranks. alloc: memory the btl allocates (fast on
 * node: shm segments); reg: caller memory of the same size on every rank
 * (e.g. static data). */
util_status_t rpipe_sym_alloc(size_t size, rpipe_sym_t **sym_p);
util_status_t rpipe_sym_reg(void *addr, size_t size, rpipe_sym_t **sym_p);
/* Like reg for a page-aligned range of a program's static data: the range
 * is remapped (contents kept) so that on-node peers map it directly. Call
 * before starting threads that write the range. */
util_status_t rpipe_sym_static(void *addr, size_t size, rpipe_sym_t **sym_p);
/* Collective. */
util_status_t rpipe_sym_destroy(rpipe_sym_t *sym);

/* Group segments (OpenSHMEM spaces): collective over the nranks ranks of
 * ranks[] only, which must include mine; peers are then indexed by their
 * place in ranks[] (0..nranks-1), not by rank. Nobody else allocates,
 * registers or waits. The members' keys travel through allgather (each
 * member's len bytes into out[index * len], over the group only) when the
 * caller has one, else through the bootstrap: each member puts its key
 * under tag and reads the others' (a lazy get, no fence); tag must be one
 * this rank never used before for a group segment (the members agree on
 * it). rpipe_sym_release is local: the members have agreed beforehand that
 * nobody reaches into the segment any more. */
typedef int (*rpipe_sym_allgather_func_t)(void *arg, const void *in, size_t len, void *out);
util_status_t rpipe_sym_alloc_group(const int *ranks, int nranks, uint64_t tag, size_t size,
                                    rpipe_sym_allgather_func_t allgather, void *arg,
                                    rpipe_sym_t **sym_p);
void rpipe_sym_release(rpipe_sym_t *sym);

/* Threads (SHMEM_THREAD_MULTIPLE): the btl serves one thread at a time, so
 * once rpipe_sym_set_threaded(1) every call into it below is made under one
 * mutex. Mapped peers (plain loads, stores and CPU atomics) take no lock. */
extern int rpipe_sym_threaded;
extern pthread_mutex_t rpipe_sym_mutex;
void rpipe_sym_set_threaded(int on);

static inline void rpipe_sym_enter(void)
{
    if (__builtin_expect(rpipe_sym_threaded, 0)) {
        pthread_mutex_lock(&rpipe_sym_mutex);
    }
}

static inline void rpipe_sym_leave(void)
{
    if (__builtin_expect(rpipe_sym_threaded, 0)) {
        pthread_mutex_unlock(&rpipe_sym_mutex);
    }
}

/* The atomicity rule. CPU atomics on a mapped peer and the network's
 * atomics on the same word are atomic together only when the network's are
 * CPU atomics at the target (BTL_CAP_AMO_CPU: software providers). When a
 * network iface serves any peer (a job across nodes, or RMB_BTL naming a
 * network backend on one node) and they are not (a NIC's, MPI's), every
 * atomic on symmetric memory goes through the network, to on-node peers and
 * myself too; set at the first segment (RMB_AMO_NETWORK=auto|yes|no). */
extern int rpipe_sym_amo_network;
util_status_t rpipe_sym_amo_connect(rpipe_sym_t *sym, int pe, rpipe_sym_peer_t **peer_p);

/* Slow path of rpipe_sym_peer: connects and unpacks the peer's key. */
util_status_t rpipe_sym_connect(rpipe_sym_t *sym, int pe);

/* Peers' operations land only while this PE calls the btl (the network
 * iface has BTL_CAP_PE_PROGRESS: no helper thread). Calls that need no btl
 * and that a PE may loop on while it waits for its peers (a fetching
 * atomic on mapped memory, a quiet, a wait or test already satisfied, a
 * signal fetch) drive it every RPIPE_SYM_POLL_EVERY-th time, else such a loop
 * starves its peers (tests-sos' signal_fetch and mt_lock_test hung over
 * UCX without thread support). Set with the first segment. */
#define RPIPE_SYM_POLL_EVERY 16
extern int rpipe_sym_pe_progress;
void rpipe_sym_poll_slow(void);
static inline void rpipe_sym_poll(void)
{
    if (__builtin_expect(rpipe_sym_pe_progress, 0)) {
        rpipe_sym_poll_slow();
    }
}

/* Remote completion of every put/atomic issued so far; ordering to one pe. */
util_status_t rpipe_sym_quiet(void);
util_status_t rpipe_sym_fence(void);
/* Drives the btl (for waits on local memory that peers update). */
void rpipe_sym_progress(void);

static inline int rpipe_sym_contains(const rpipe_sym_t *sym, const void *addr, size_t len)
{
    return (const char *)addr >= sym->base && len <= sym->size &&
           (size_t)((const char *)addr - sym->base) <= sym->size - len;
}

static inline util_status_t rpipe_sym_peer(rpipe_sym_t *sym, int pe, rpipe_sym_peer_t **peer_p)
{
    rpipe_sym_peer_t *peer = &sym->peer[pe];

    /* acquire: pairs with the release that publishes a connected peer */
    if (__builtin_expect(__atomic_load_n(&peer->ptr, __ATOMIC_ACQUIRE) != NULL ||
                             __atomic_load_n(&peer->ep, __ATOMIC_ACQUIRE) != NULL,
                         1)) {
        *peer_p = peer;
        return UTIL_OK;
    }
    *peer_p = peer;
    return rpipe_sym_connect(sym, pe);
}

/* Direct pointer to offset in pe's segment, or NULL when not mapped here. */
static inline void *rpipe_sym_ptr(rpipe_sym_t *sym, int pe, size_t offset)
{
    rpipe_sym_peer_t *peer;

    if (rpipe_sym_peer(sym, pe, &peer) != UTIL_OK || peer->ptr == NULL) {
        return NULL;
    }
    return peer->ptr + offset;
}

/* Blocking to local completion (the source may be reused). Across the
 * network it may be batched with the next ones to pe (btl_put_batch): it
 * leaves by the next quiet, wait (progress) or other operation to pe. */
static inline util_status_t rpipe_sym_put(rpipe_sym_t *sym, int pe, size_t offset, const void *src,
                                          size_t len)
{
    rpipe_sym_peer_t *peer;
    util_status_t status = rpipe_sym_peer(sym, pe, &peer);

    if (__builtin_expect(peer->ptr != NULL, 1)) {
        memcpy(peer->ptr + offset, src, len);
        return UTIL_OK;
    }
    if (status != UTIL_OK) {
        return status;
    }
    rpipe_sym_enter();
    status = btl_put_batch(peer->ep, src, len, peer->base + offset, peer->rkey);
    rpipe_sym_leave();
    return status;
}

/* A get whose data is in dst once rpipe_sym_comp_wait(comp) has returned
 * (comp NULL: on return): across the network several (to any PEs) fly
 * together; on node it is done on return. comp starts btl_comp_init'ed. */
static inline util_status_t rpipe_sym_get_nb(rpipe_sym_t *sym, int pe, size_t offset, void *dst,
                                             size_t len, btl_comp_t *comp)
{
    rpipe_sym_peer_t *peer;
    util_status_t status = rpipe_sym_peer(sym, pe, &peer);

    if (__builtin_expect(peer->ptr != NULL, 1)) {
        memcpy(dst, peer->ptr + offset, len);
        return UTIL_OK;
    }
    if (status != UTIL_OK) {
        return status;
    }
    rpipe_sym_enter();
    status = btl_get_nb(peer->ep, dst, len, NULL, peer->base + offset, peer->rkey, comp);
    rpipe_sym_leave();
    return status == UTIL_IN_PROGRESS ? UTIL_OK : status;
}

/* Waits for every operation counted in comp (rpipe_sym_get_nb). */
util_status_t rpipe_sym_comp_wait(btl_comp_t *comp);

static inline util_status_t rpipe_sym_get(rpipe_sym_t *sym, int pe, size_t offset, void *dst,
                                          size_t len)
{
    return rpipe_sym_get_nb(sym, pe, offset, dst, len, NULL);
}

/* Atomics on 4- or 8-byte words. On node they are CPU atomics on the
 * mapping; across nodes the network's. (A word must not be updated both
 * ways at once: see docs/shmem.md, "atomicity".) */
/* Atomics through the network endpoint (rpipe_sym_amo_network). */
static inline util_status_t rpipe_sym_amo_peer(rpipe_sym_t *sym, int pe, rpipe_sym_peer_t **peer_p)
{
    *peer_p = &sym->peer[pe];
    if (__builtin_expect(__atomic_load_n(&(*peer_p)->amo_ep, __ATOMIC_ACQUIRE) != NULL, 1)) {
        return UTIL_OK;
    }
    return rpipe_sym_amo_connect(sym, pe, peer_p);
}

/* Where an atomic on offset of pe's segment goes: a mapping here (*ptr_p,
 * CPU atomics), else a btl endpoint, key and address (the network
 * endpoint under rpipe_sym_amo_network). */
typedef struct {
    char *ptr;
    btl_ep_t *ep;
    btl_rkey_t *rkey;
    uint64_t raddr;
} rpipe_sym_amo_route_t;

static inline util_status_t rpipe_sym_amo_route(rpipe_sym_t *sym, int pe, size_t offset,
                                                rpipe_sym_amo_route_t *r)
{
    rpipe_sym_peer_t *peer;
    util_status_t status;

    r->ptr = NULL;
    if (__builtin_expect(rpipe_sym_amo_network, 0)) {
        status = rpipe_sym_amo_peer(sym, pe, &peer);
        r->ep = peer->amo_ep;
        r->rkey = peer->amo_rkey;
    } else {
        status = rpipe_sym_peer(sym, pe, &peer);
        if (__builtin_expect(peer->ptr != NULL, 1)) {
            r->ptr = peer->ptr + offset;
            return UTIL_OK;
        }
        r->ep = peer->ep;
        r->rkey = peer->rkey;
    }
    r->raddr = peer->base + offset;
    return status;
}

static inline util_status_t rpipe_sym_amo_fetch(rpipe_sym_t *sym, int pe, size_t offset,
                                                btl_amo_op_t op, unsigned size, uint64_t operand,
                                                uint64_t compare, uint64_t *old_p)
{
    rpipe_sym_amo_route_t r;
    util_status_t status = rpipe_sym_amo_route(sym, pe, offset, &r);

    if (__builtin_expect(r.ptr != NULL, 1)) {
        *old_p = btl_cpu_amo_fetch(op, size, r.ptr, operand, compare);
        rpipe_sym_poll(); /* a fetch on a mapping is how a PE polls a word */
        return UTIL_OK;
    }
    if (status != UTIL_OK) {
        return status;
    }
    rpipe_sym_enter();
    status = btl_amo_fetch(r.ep, op, size, r.raddr, r.rkey, operand, compare, old_p);
    rpipe_sym_leave();
    return status;
}

/* batch: across the network it may wait for the next ones to pe, as a put
 * (OpenSHMEM's non-fetching atomics); else it leaves at once (a signal,
 * a lock's grant: someone polls for it). */
static inline util_status_t rpipe_sym_amo_post(rpipe_sym_t *sym, int pe, size_t offset,
                                               btl_amo_op_t op, unsigned size, uint64_t operand,
                                               int batch)
{
    rpipe_sym_amo_route_t r;
    util_status_t status = rpipe_sym_amo_route(sym, pe, offset, &r);

    if (__builtin_expect(r.ptr != NULL, 1)) {
        btl_cpu_amo_post(op, size, r.ptr, operand);
        return UTIL_OK;
    }
    if (status != UTIL_OK) {
        return status;
    }
    rpipe_sym_enter();
    status = batch ? btl_amo_post_batch(r.ep, op, size, r.raddr, r.rkey, operand)
                   : btl_amo_post(r.ep, op, size, r.raddr, r.rkey, operand);
    rpipe_sym_leave();
    return status;
}

/* A fetching atomic whose old value (size bytes) lands in *result by the
 * next rpipe_sym_quiet: across the network fetches to several PEs fly
 * together (OpenSHMEM's fetching _nbi atomics); on node it is done on
 * return. */
util_status_t rpipe_sym_amo_fetch_nbi(rpipe_sym_t *sym, int pe, size_t offset, btl_amo_op_t op,
                                      unsigned size, uint64_t operand, uint64_t compare,
                                      void *result);

/* Put with signal: the payload, then the 8-byte word at sig_offset of
 * sig_sym (8-byte aligned; the target is peer sig_pe there: the same rank
 * as pe, numbered as sig_sym numbers its peers) set to value, or atomically increased by it
 * when add is non-zero. A peer that sees the signal sees the payload. On
 * node: memcpy, then a release store or add. Across nodes SET is the btl's
 * put_flag (payload and flag ordered inside the network where it can);
 * ADD is put, fence to the peer, network atomic. */
/* put_signal's mode: the signal adds (else sets); it is internal (only its
 * receiver waits for it, nobody completes it with quiet: barrier and
 * collective flags). */
enum { RPIPE_SIGNAL_ADD = 1, RPIPE_SIGNAL_INTERNAL = 2 };

static inline util_status_t rpipe_sym_put_signal(rpipe_sym_t *sym, int pe, size_t offset,
                                                 const void *src, size_t len, rpipe_sym_t *sig_sym,
                                                 int sig_pe, size_t sig_offset, int mode,
                                                 uint64_t value)
{
    rpipe_sym_peer_t *peer, *sig_peer;
    util_status_t status = rpipe_sym_peer(sym, pe, &peer);
    int add = mode & RPIPE_SIGNAL_ADD;

    if (status == UTIL_OK) {
        status = rpipe_sym_peer(sig_sym, sig_pe, &sig_peer);
    }
    if (status != UTIL_OK) {
        return status;
    }
    if (__builtin_expect(peer->ptr != NULL && sig_peer->ptr != NULL && !rpipe_sym_amo_network, 1)) {
        uint64_t *sig = (uint64_t *)(sig_peer->ptr + sig_offset);
        if (len > 0) { /* src may be NULL for a signal alone */
            memcpy(peer->ptr + offset, src, len);
        }
        if (add) {
            __atomic_fetch_add(sig, value, __ATOMIC_RELEASE);
        } else {
            __atomic_store_n(sig, value, __ATOMIC_RELEASE);
        }
        return UTIL_OK;
    }
    if (peer->ptr == NULL && sig_peer->ptr == NULL && !add && !rpipe_sym_amo_network) {
        rpipe_sym_enter();
        status = btl_put_flag(peer->ep, src, len, NULL, peer->base + offset, peer->rkey,
                              sig_peer->base + sig_offset, sig_peer->rkey, value,
                              mode & RPIPE_SIGNAL_INTERNAL ? &btl_comp_signal : NULL);
        rpipe_sym_leave();
        if (status != UTIL_ERR_UNSUPPORTED) {
            return status;
        }
    }
    /* Generic order: payload; if it went through the network, a fence
     * (signal through the network too) or remote completion (signal by a
     * store on a mapping) before the signal. */
    status = len > 0 ? rpipe_sym_put(sym, pe, offset, src, len) : UTIL_OK;
    if (status == UTIL_OK && (peer->ptr != NULL || len == 0)) {
        __atomic_thread_fence(__ATOMIC_RELEASE); /* stores before the network signal */
    } else if (status == UTIL_OK) {
        rpipe_sym_enter();
        status = sig_peer->ptr == NULL ? btl_fence(peer->ep) : btl_quiet(peer->ep->iface);
        rpipe_sym_leave();
    }
    if (status != UTIL_OK) {
        return status;
    }
    return rpipe_sym_amo_post(sig_sym, sig_pe, sig_offset, add ? BTL_AMO_ADD : BTL_AMO_SET, 8,
                              value, 0);
}

#endif
