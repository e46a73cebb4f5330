/*
 * btl/mpi: peers through MPI-3 RMA, passive target (thesis §4.6, Fig. 4.13).
 * Every MPI call goes through the MPI plugin (bootstrap/bootstrap_mpi.h),
 * so this file, like the rest of librmb, carries no MPI type and links no
 * MPI library; the backend exists only while MPI runs in the process
 * (btl_mpi_usable, consulted by the registry in btl.c).
 *
 * Window. One dynamic window per iface over the job communicator
 * (MPI_Win_create_dynamic, collective at iface_open) and one passive epoch
 * for its whole life (MPI_Win_lock_all(MPI_MODE_NOCHECK) once; unlock_all
 * at close). mem_reg attaches the range (MPI_Win_attach, local, no
 * collective): registration stays what the btl contract says, per process
 * and at any time. A range inside one already attached is counted, not
 * attached again (MPI forbids overlapping attachments in some versions).
 * The packed key carries the owner's virtual base and its MPI_Get_address,
 * so a remote address turns into a window displacement with one add.
 * We read flags with plain loads, so the memory model must be
 * MPI_WIN_UNIFIED (checked at open).
 *
 * Pool. When every rank is on this node, iface_open also allocates a pool
 * window (MPI_Win_allocate_shared, RMB_MPI_POOL_SIZE bytes per rank,
 * default 512 MiB, 0: none): the MPI's shared-memory path (Open MPI osc/sm:
 * a put is a memcpy; a dynamic window only gets osc/rdma at ~2 us).
 * mem_alloc hands out zeroed, page-aligned blocks of it (first fit; freed
 * blocks merge), so the symmetric heap and rpipe's buffers live there; when
 * none is left, mem_alloc says UNSUPPORTED and btl.c registers plain memory
 * on the dynamic window. A key says which window; quiet and fence flush
 * the windows written to since the last quiet. Not MPI_Win_allocate: Open MPI 4.1 gives it osc/rdma, whose
 * vader-emulated atomics on it crash. mem_remap puts a program's static
 * data into the pool too: a pool block gets a copy, then a second mapping
 * of the block's pages replaces the range in place.
 *
 * Load/store. With the pool (RMB_MPI_LOAD_STORE=auto, the default),
 * MPI_Win_shared_query gives every rank's pool as mapped here, and a pool
 * key says "load/store": puts, gets, flags and atomics on that memory are
 * memcpy, release stores and CPU atomics, as on btl/shm, and no MPI call.
 * Atomicity: the owner's key decides, so every rank reaches a given word
 * the same way, all CPU atomics (pool) or all MPI accumulates (dynamic
 * window); BTL_CAP_AMO_CPU stays unset, so shmem sends a PE's atomics on
 * its own memory through here too, where the same rule applies. With
 * RMB_MPI_LOAD_STORE=no the pool is reached by MPI RMA only.
 *
 * Completion. put returns after local completion: up to BTL_MPI_SLOT
 * bytes are copied into a ring of source slots (MPI_Put from the slot, no
 * flush), larger ones wait for MPI_Win_flush_local(peer). Gets and
 * fetching atomics wait with MPI_Win_flush_local(peer) (the data or the old
 * value is then here). quiet is MPI_Win_flush for the one peer written to
 * since the last quiet, or MPI_Win_flush_all when there were several;
 * fence(ep) is MPI_Win_flush(peer): MPI orders nothing between two puts.
 * A ring slot is reused only after MPI_Win_flush_local_all (once per ring
 * round) or a quiet.
 *
 * Put-with-flag. MPI_Put of the payload, MPI_Win_flush(peer) (the payload
 * is in the target's memory), then the flag as an MPI_Accumulate with
 * MPI_REPLACE (atomic, so a concurrent reader never sees half a flag). An
 * "ordered accumulate" instead of the flush would not do: MPI orders
 * accumulates (accumulate_ordering) only to the same or overlapping
 * locations, and the flag is another location. get_flag: MPI_Get,
 * flush_local, then the flag.
 *
 * Atomics. Non-fetching: MPI_Accumulate (SUM, BAND, BOR, BXOR, REPLACE for
 * SET). Fetching: MPI_Fetch_and_op (NO_OP for FETCH, REPLACE for SWAP/SET)
 * and MPI_Compare_and_swap. All of them are MPI "accumulate" operations,
 * which are atomic with respect to each other per element, never with
 * respect to MPI_Put/MPI_Get: a word is updated either by atomics or by
 * puts, never by both at once (the rule shmem imposes as well). About
 * accumulate_ops: see bootstrap_mpi_shim.c and docs/btl_mpi.md.
 *
 * Progress. Neither Debian MPI here completes a passive-target operation
 * while the target stays out of MPI: Open MPI 4.1 (osc rdma, ucx, pt2pt)
 * stalls fetch-and-op or put+flush, MPICH 4.0 (ch4:ucx, dynamic windows as
 * active messages) everything, until the target calls MPI. btl progress
 * calls MPI_Iprobe, and every wait in the layers above calls btl progress;
 * for a PE busy elsewhere (computing, or polling memory without rmb), a
 * helper thread calls MPI_Iprobe every RMB_MPI_PROGRESS_USEC microseconds
 * (default 100; 0: no thread; negative: poll continuously). MPI allows the
 * thread when every MPI call of the process is ours (RMB_BOOTSTRAP=mpi
 * initializes MPI at MPI_THREAD_SERIALIZED, and the plugin serializes its
 * calls with a lock) or when the program asked for MPI_THREAD_MULTIPLE; an
 * MPI program at a lower level gets no thread, and its peers wait until it
 * calls MPI or rmb again.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MREMAP_FIXED */
#endif
#include "btl/btl.h"
#include "btl/btl_cpu_amo.h"
#include "btl/btl_helper.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_mpi.h"
#include "util/env.h"
#include "util/log.h"
#include "util/wait.h"

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BTL_MPI_SLOT               64 /* bytes of one ring slot: puts this small are copied */
#define BTL_MPI_RING_SLOTS         256
#define BTL_MPI_DIRTY_NONE         (-1)
#define BTL_MPI_DIRTY_MANY         (-2)
#define BTL_MPI_SPINS_BEFORE_YIELD 256

/* Packed remote key. */
enum {
    BTL_MPI_KEY_POOL = 1, /* in the pool window (else the dynamic window) */
    BTL_MPI_KEY_LS = 2    /* and every access is a load, store or CPU atomic */
};

typedef struct {
    uint64_t base; /* owner's virtual address */
    uint64_t len;
    uint64_t disp;  /* MPI_Get_address(base), or the offset in the owner's pool */
    uint64_t flags; /* BTL_MPI_KEY_* */
} btl_mpi_packed_t;

/* A free range of the pool, in a list sorted by offset. */
typedef struct btl_mpi_block {
    struct btl_mpi_block *next;
    size_t off, len;
} btl_mpi_block_t;

/* One attached range of the window, counted by the mrs inside it. */
typedef struct btl_mpi_region {
    struct btl_mpi_region *next;
    uintptr_t start, end;
    unsigned refs;
} btl_mpi_region_t;

typedef struct btl_mpi_mr {
    btl_mr_t super;
    btl_mpi_region_t *region; /* dynamic window: the attached range */
    uint64_t disp;
    int in_pool;                   /* the key names the pool window */
    int remapped;                  /* caller memory remapped onto our block */
    size_t pool_off, pool_len;     /* pool: our block (pool_len 0: none of ours) */
    struct btl_mpi_mr *next_remap; /* mem_remap'd: caller memory aliasing the block */
} btl_mpi_mr_t;

typedef struct {
    btl_iface_t super;
    const bootstrap_mpi_shim_t *shim;
    void *win;      /* dynamic: mem_reg */
    void *pool_win; /* allocated at open: mem_alloc, or NULL */
    char *pool_base;
    size_t pool_size;
    btl_mpi_block_t *pool_free;
    /* Offsets from here on were never handed out: as the MPI gave them,
     * fresh shared pages (zero, uncommitted) in Open MPI and MPICH. */
    size_t pool_fresh;
    int load_store;   /* pool keys say BTL_MPI_KEY_LS */
    char **peer_pool; /* per rank: its pool mapped here */
    btl_mpi_mr_t *remaps;
    int comm_held;
    btl_mpi_region_t *regions;
    int dirty;                 /* peer written to since the last quiet, or NONE/MANY */
    int dirty_dyn, dirty_pool; /* and through which windows */
    unsigned ring_next;        /* next free slot */
    unsigned progress_calls;
    int oversubscribed;  /* more ranks on this node than CPUs */
    btl_helper_t helper; /* serves peers while the rank is away from MPI */
    uint8_t ring[BTL_MPI_RING_SLOTS][BTL_MPI_SLOT] __attribute__((aligned(8)));
} btl_mpi_iface_t;

typedef struct {
    btl_ep_t super;
} btl_mpi_ep_t;

typedef struct {
    btl_rkey_t super;
    uint64_t delta; /* displacement = remote address + delta */
    void *win;
} btl_mpi_rkey_t;

static inline btl_mpi_iface_t *btl_mpi_iface(btl_iface_t *iface)
{
    return btl_container_of(iface, btl_mpi_iface_t, super);
}

static inline uint64_t btl_mpi_disp(btl_rkey_t *rkey, uint64_t raddr)
{
    return raddr + btl_container_of(rkey, btl_mpi_rkey_t, super)->delta;
}

static inline void *btl_mpi_win(btl_rkey_t *rkey)
{
    return btl_container_of(rkey, btl_mpi_rkey_t, super)->win;
}

/* The peer's word through the shared pool (rkey->ls_valid). */
static inline void *btl_mpi_ls_ptr(const btl_rkey_t *rkey, uint64_t raddr)
{
    return (void *)(uintptr_t)(raddr + (uint64_t)rkey->ls_delta);
}

int btl_mpi_usable(void)
{
    return bootstrap_mpi_running();
}

static util_status_t btl_mpi_check(const char *what, int rc)
{
    return rc == 0 ? UTIL_OK : bootstrap_mpi_fail(what, rc);
}

/* ---- completion bookkeeping ---- */
/* A write to peer through win is outstanding: quiet, fence and the ring
 * flush that window (a flush of a window with nothing outstanding still
 * costs a call into the MPI, and more under MPICH's ch4:ucx). */
static void btl_mpi_mark(btl_mpi_iface_t *mif, int peer, void *win)
{
    if (win == mif->pool_win) {
        mif->dirty_pool = 1;
    } else {
        mif->dirty_dyn = 1;
    }
    if (mif->dirty == BTL_MPI_DIRTY_NONE) {
        mif->dirty = peer;
    } else if (mif->dirty != peer) {
        mif->dirty = BTL_MPI_DIRTY_MANY;
    }
}

/* A ring slot holding a copy of len bytes of src, free to be sent from. */
static util_status_t btl_mpi_slot(btl_mpi_iface_t *mif, const void *src, size_t len, void **slot_p)
{
    if (mif->ring_next == BTL_MPI_RING_SLOTS) {
        util_status_t status = UTIL_OK;
        if (mif->dirty_dyn) {
            status = btl_mpi_check("MPI_Win_flush_local_all", mif->shim->flush_local_all(mif->win));
        }
        if (status == UTIL_OK && mif->dirty_pool) {
            status =
                btl_mpi_check("MPI_Win_flush_local_all", mif->shim->flush_local_all(mif->pool_win));
        }
        if (status != UTIL_OK) {
            return status;
        }
        mif->ring_next = 0;
    }
    *slot_p = mif->ring[mif->ring_next++];
    memcpy(*slot_p, src, len);
    return UTIL_OK;
}

/* Remote completion of everything to peer. */
static util_status_t btl_mpi_flush_peer(btl_mpi_iface_t *mif, int peer)
{
    util_status_t status = UTIL_OK;

    if (mif->dirty_dyn) {
        status = btl_mpi_check("MPI_Win_flush", mif->shim->flush(mif->win, peer));
    }
    if (status == UTIL_OK && mif->dirty_pool) {
        status = btl_mpi_check("MPI_Win_flush", mif->shim->flush(mif->pool_win, peer));
    }
    if (status == UTIL_OK && mif->dirty == peer) {
        /* every outstanding write went to peer: the ring is free again */
        mif->dirty = BTL_MPI_DIRTY_NONE;
        mif->dirty_dyn = mif->dirty_pool = 0;
        mif->ring_next = 0;
    }
    return status;
}

/* ---- data ---- */
static util_status_t btl_mpi_put(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                 uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(ep->iface);
    util_status_t status;
    void *slot;

    if (rkey->ls_valid) {
        memcpy(btl_mpi_ls_ptr(rkey, raddr), src, len);
        return UTIL_OK;
    }
    if (len == 0) {
        return UTIL_OK;
    }
    if (len <= BTL_MPI_SLOT) {
        status = btl_mpi_slot(mif, src, len, &slot);
        if (status != UTIL_OK) {
            return status;
        }
        src = slot;
    }
    status = btl_mpi_check("MPI_Put", mif->shim->put(btl_mpi_win(rkey), src, len, ep->peer,
                                                     btl_mpi_disp(rkey, raddr)));
    if (status != UTIL_OK) {
        return status;
    }
    btl_mpi_mark(mif, ep->peer, btl_mpi_win(rkey));
    if (len > BTL_MPI_SLOT) {
        status = btl_mpi_check("MPI_Win_flush_local",
                               mif->shim->flush_local(btl_mpi_win(rkey), ep->peer));
    }
    return status;
}

static util_status_t btl_mpi_get(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                 uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(ep->iface);
    util_status_t status;

    if (rkey->ls_valid) {
        memcpy(dst, btl_mpi_ls_ptr(rkey, raddr), len);
        return UTIL_OK;
    }
    if (len == 0) {
        return UTIL_OK;
    }
    status = btl_mpi_check("MPI_Get", mif->shim->get(btl_mpi_win(rkey), dst, len, ep->peer,
                                                     btl_mpi_disp(rkey, raddr)));
    if (status != UTIL_OK) {
        return status;
    }
    return btl_mpi_check("MPI_Win_flush_local",
                         mif->shim->flush_local(btl_mpi_win(rkey), ep->peer));
}

/* The 8-byte flag: an atomic replace from a ring slot. */
static util_status_t btl_mpi_flag(btl_mpi_iface_t *mif, int peer, uint64_t flag_raddr,
                                  btl_rkey_t *flag_rkey, uint64_t value)
{
    util_status_t status;
    void *slot;

    if ((flag_raddr & 7) != 0) {
        util_error("btl/mpi: flag address 0x%llx is not 8-byte aligned",
                   (unsigned long long)flag_raddr);
        return UTIL_ERR_INVALID;
    }
    if (flag_rkey->ls_valid) {
        /* release: the payload (stored, or flushed by MPI) is visible first */
        __atomic_store_n((uint64_t *)btl_mpi_ls_ptr(flag_rkey, flag_raddr), value,
                         __ATOMIC_RELEASE);
        return UTIL_OK;
    }
    status = btl_mpi_slot(mif, &value, sizeof(value), &slot);
    if (status != UTIL_OK) {
        return status;
    }
    status = btl_mpi_check("MPI_Accumulate", mif->shim->acc(btl_mpi_win(flag_rkey), slot, 8, peer,
                                                            btl_mpi_disp(flag_rkey, flag_raddr),
                                                            BOOTSTRAP_MPI_OP_REPLACE));
    if (status == UTIL_OK) {
        btl_mpi_mark(mif, peer, btl_mpi_win(flag_rkey));
    }
    return status;
}

static util_status_t btl_mpi_put_flag(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                      uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                      btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(ep->iface);
    util_status_t status;

    if (len > 0 && rkey->ls_valid) {
        memcpy(btl_mpi_ls_ptr(rkey, raddr), src, len);
    } else if (len > 0) {
        status = btl_mpi_check("MPI_Put", mif->shim->put(btl_mpi_win(rkey), src, len, ep->peer,
                                                         btl_mpi_disp(rkey, raddr)));
        if (status == UTIL_OK) {
            btl_mpi_mark(mif, ep->peer, btl_mpi_win(rkey));
            /* payload in the target's memory before the flag leaves */
            status = btl_mpi_flush_peer(mif, ep->peer);
        }
        if (status != UTIL_OK) {
            return status;
        }
    }
    return btl_mpi_flag(mif, ep->peer, flag_raddr, flag_rkey, flag_value);
}

static util_status_t btl_mpi_get_flag(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                      uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                      btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp)
{
    util_status_t status = btl_mpi_get(ep, dst, len, lmem, raddr, rkey, NULL);

    if (status != UTIL_OK) {
        return status;
    }
    return btl_mpi_flag(btl_mpi_iface(ep->iface), ep->peer, flag_raddr, flag_rkey, flag_value);
}

/* ---- atomics ---- */
static const bootstrap_mpi_op_t btl_mpi_amo_op[BTL_AMO_LAST] = {
    [BTL_AMO_FETCH] = BOOTSTRAP_MPI_OP_NO_OP,
    [BTL_AMO_SET] = BOOTSTRAP_MPI_OP_REPLACE,
    [BTL_AMO_SWAP] = BOOTSTRAP_MPI_OP_REPLACE,
    [BTL_AMO_CSWAP] = BOOTSTRAP_MPI_OP_NO_OP, /* MPI_Compare_and_swap */
    [BTL_AMO_ADD] = BOOTSTRAP_MPI_OP_SUM,
    [BTL_AMO_AND] = BOOTSTRAP_MPI_OP_BAND,
    [BTL_AMO_OR] = BOOTSTRAP_MPI_OP_BOR,
    [BTL_AMO_XOR] = BOOTSTRAP_MPI_OP_BXOR,
};

static util_status_t btl_mpi_amo_check(btl_amo_op_t op, unsigned size, uint64_t raddr)
{
    if ((size != 4 && size != 8) || (raddr & (size - 1)) != 0 || (unsigned)op >= BTL_AMO_LAST) {
        util_error("btl/mpi: bad atomic (op %d, size %u, address 0x%llx)", (int)op, size,
                   (unsigned long long)raddr);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

/* The value in its first size bytes, as MPI reads a 4- or 8-byte element. */
static void btl_mpi_amo_value(uint64_t value, unsigned size, uint64_t *word)
{
    if (size == 8) {
        *word = value;
    } else {
        uint32_t v32 = (uint32_t)value;
        memcpy(word, &v32, 4);
    }
}

static util_status_t btl_mpi_amo_post(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                      btl_rkey_t *rkey, uint64_t operand)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(ep->iface);
    util_status_t status = btl_mpi_amo_check(op, size, raddr);
    uint64_t word = 0;
    void *slot;

    if (status != UTIL_OK) {
        return status;
    }
    if (op == BTL_AMO_FETCH || op == BTL_AMO_SWAP || op == BTL_AMO_CSWAP) {
        util_error("btl/mpi: atomic op %d has no non-fetching form", (int)op);
        return UTIL_ERR_INVALID;
    }
    /* A key with ls_valid (BTL_MPI_KEY_LS) makes every access to the pool a
     * CPU one, so CPU atomics never meet an MPI accumulate on the same word. */
    if (rkey->ls_valid) {
        btl_cpu_amo_post(op, size, btl_mpi_ls_ptr(rkey, raddr), operand);
        return UTIL_OK;
    }
    btl_mpi_amo_value(operand, size, &word);
    status = btl_mpi_slot(mif, &word, sizeof(word), &slot);
    if (status != UTIL_OK) {
        return status;
    }
    status = btl_mpi_check("MPI_Accumulate",
                           mif->shim->acc(btl_mpi_win(rkey), slot, size, ep->peer,
                                          btl_mpi_disp(rkey, raddr), btl_mpi_amo_op[op]));
    if (status == UTIL_OK) {
        btl_mpi_mark(mif, ep->peer, btl_mpi_win(rkey));
    }
    return status;
}

static util_status_t btl_mpi_amo_fetch(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                       btl_rkey_t *rkey, uint64_t operand, uint64_t compare,
                                       uint64_t *result_p)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(ep->iface);
    util_status_t status = btl_mpi_amo_check(op, size, raddr);
    uint64_t src = 0, cmp = 0, result = 0;
    int rc;

    if (status != UTIL_OK) {
        return status;
    }
    if (rkey->ls_valid) {
        *result_p = btl_cpu_amo_fetch(op, size, btl_mpi_ls_ptr(rkey, raddr), operand, compare);
        return UTIL_OK;
    }
    btl_mpi_amo_value(operand, size, &src);
    if (op == BTL_AMO_CSWAP) {
        btl_mpi_amo_value(compare, size, &cmp);
        rc = mif->shim->cas(btl_mpi_win(rkey), &src, &cmp, &result, size, ep->peer,
                            btl_mpi_disp(rkey, raddr));
    } else {
        rc = mif->shim->fetch_op(btl_mpi_win(rkey), &src, &result, size, ep->peer,
                                 btl_mpi_disp(rkey, raddr), btl_mpi_amo_op[op]);
    }
    status = btl_mpi_check(op == BTL_AMO_CSWAP ? "MPI_Compare_and_swap" : "MPI_Fetch_and_op", rc);
    if (status == UTIL_OK) {
        /* the old value is here once the operation completed locally */
        status = btl_mpi_check("MPI_Win_flush_local",
                               mif->shim->flush_local(btl_mpi_win(rkey), ep->peer));
    }
    if (status != UTIL_OK) {
        return status;
    }
    if (size == 8) {
        *result_p = result;
    } else {
        uint32_t r32;
        memcpy(&r32, &result, 4);
        *result_p = r32;
    }
    return UTIL_OK;
}

/* ---- ordering ---- */
static util_status_t btl_mpi_quiet(btl_iface_t *iface)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(iface);
    util_status_t status;

    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* stores into the shared pool */
    if (mif->dirty == BTL_MPI_DIRTY_NONE) {
        return UTIL_OK;
    }
    if (mif->dirty >= 0) {
        return btl_mpi_flush_peer(mif, mif->dirty);
    }
    status = mif->dirty_dyn ? btl_mpi_check("MPI_Win_flush_all", mif->shim->flush_all(mif->win))
                            : UTIL_OK;
    if (status == UTIL_OK && mif->dirty_pool) {
        status = btl_mpi_check("MPI_Win_flush_all", mif->shim->flush_all(mif->pool_win));
    }
    if (status == UTIL_OK) {
        mif->dirty = BTL_MPI_DIRTY_NONE;
        mif->dirty_dyn = mif->dirty_pool = 0;
        mif->ring_next = 0;
    }
    return status;
}

static util_status_t btl_mpi_fence(btl_ep_t *ep)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(ep->iface);

    __atomic_thread_fence(__ATOMIC_RELEASE); /* stores into the shared pool */
    if (mif->dirty != ep->peer && mif->dirty != BTL_MPI_DIRTY_MANY) {
        return UTIL_OK; /* nothing outstanding to this peer */
    }
    return btl_mpi_flush_peer(mif, ep->peer);
}

static util_status_t btl_mpi_progress(btl_iface_t *iface)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(iface);

    /* A caller polling a flag lets the peers on its cores run now and then;
     * with a core each, yielding only hands the core to unrelated work and
     * delays the replies our peers wait for (their operations need us in MPI). */
    btl_helper_touch(&mif->helper);
    if (mif->oversubscribed && ++mif->progress_calls % BTL_MPI_SPINS_BEFORE_YIELD == 0) {
        sched_yield();
    }
    return btl_mpi_check("MPI_Iprobe (progress)", mif->shim->progress());
}

/* The helper thread (btl_helper.h) serves peers' operations while this
 * process is busy outside MPI; while the rank polls MPI itself it stays
 * out (its calls would only contend for MPI's lock). MPI has no fd to
 * sleep in: it looks every interval. */
static void btl_mpi_drain(void *arg)
{
    btl_mpi_iface_t *mif = arg;

    (void)mif->shim->progress();
}

/* RMB_MPI_PROGRESS_USEC (row in btl/btl_env.def; read directly until then). */
static long btl_mpi_progress_interval(void)
{
    const char *text = getenv("RMB_MPI_PROGRESS_USEC");
    long usec = 100;

    if (text != NULL && util_env_parse_int(text, &usec) != UTIL_OK) {
        util_warn("RMB_MPI_PROGRESS_USEC=\"%s\" is not an integer: using 100", text);
        usec = 100;
    }
    return usec;
}

/* ---- memory ---- */
/* Whether [start, end) is pool memory (through the pool's own mapping, or
 * caller memory remapped onto it); *disp_p: its offset in my pool. */
static int btl_mpi_pool_find(btl_mpi_iface_t *mif, uintptr_t start, uintptr_t end, uint64_t *disp_p)
{
    uintptr_t base = (uintptr_t)mif->pool_base;

    if (mif->pool_win == NULL) {
        return 0;
    }
    if (start >= base && end <= base + mif->pool_size) {
        *disp_p = start - base;
        return 1;
    }
    for (btl_mpi_mr_t *mr = mif->remaps; mr != NULL; mr = mr->next_remap) {
        uintptr_t rbase = (uintptr_t)mr->super.addr;
        if (start >= rbase && end <= rbase + mr->pool_len) {
            *disp_p = mr->pool_off + (start - rbase);
            return 1;
        }
    }
    return 0;
}

/* A page-rounded block of len bytes from the pool's free list (first fit):
 * its offset, or UNSUPPORTED when none is large enough. */
static util_status_t btl_mpi_pool_get(btl_mpi_iface_t *mif, size_t len, size_t *off_p,
                                      size_t *used_p)
{
    btl_mpi_block_t **link, *block;

    for (link = &mif->pool_free; *link != NULL && (*link)->len < len; link = &(*link)->next) {
    }
    if (*link == NULL) {
        util_debug("btl/mpi: no %zu-byte block left in the pool: plain memory on the dynamic "
                   "window (RMB_MPI_POOL_SIZE)",
                   len);
        return UTIL_ERR_UNSUPPORTED;
    }
    block = *link;
    *off_p = block->off;
    /* the part handed out before: what a zeroed block must clear */
    *used_p = block->off < mif->pool_fresh ? mif->pool_fresh - block->off : 0;
    if (*used_p > len) {
        *used_p = len;
    }
    if (block->off + len > mif->pool_fresh) {
        mif->pool_fresh = block->off + len;
    }
    block->off += len;
    block->len -= len;
    if (block->len == 0) {
        *link = block->next;
        free(block);
    }
    return UTIL_OK;
}

static util_status_t btl_mpi_mem_reg(btl_iface_t *iface, void *addr, size_t size, btl_mr_t **mr_p)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(iface);
    uintptr_t start = (uintptr_t)addr, end = start + size;
    btl_mpi_region_t *region;
    btl_mpi_mr_t *mr;
    util_status_t status;

    if (addr == NULL || size == 0) {
        return UTIL_ERR_INVALID;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    mr->super.iface = iface;
    mr->super.addr = addr;
    mr->super.size = size;
    if (btl_mpi_pool_find(mif, start, end, &mr->disp)) {
        /* one way in for every word of the pool: the pool's key */
        mr->in_pool = 1;
        *mr_p = &mr->super;
        return UTIL_OK;
    }
    for (region = mif->regions; region != NULL; region = region->next) {
        if (region->start <= start && end <= region->end) {
            break;
        }
    }
    if (region == NULL) {
        region = calloc(1, sizeof(*region));
        if (region == NULL) {
            free(mr);
            return UTIL_ERR_NO_MEMORY;
        }
        status = btl_mpi_check("MPI_Win_attach", mif->shim->win_attach(mif->win, addr, size));
        if (status != UTIL_OK) {
            free(region);
            free(mr);
            return status;
        }
        region->start = start;
        region->end = end;
        region->next = mif->regions;
        mif->regions = region;
    }
    region->refs++;
    mr->region = region;
    mr->disp = mif->shim->address(addr);
    *mr_p = &mr->super;
    return UTIL_OK;
}

/* A zeroed block of the pool window (first fit, page-aligned), or
 * UNSUPPORTED when none is free: the caller then registers other memory. */
static util_status_t btl_mpi_mem_alloc(btl_iface_t *iface, size_t size, void **addr_p,
                                       btl_mr_t **mr_p)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(iface);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len, used;
    btl_mpi_mr_t *mr;
    util_status_t status;

    if (mif->pool_win == NULL || size == 0) {
        return UTIL_ERR_UNSUPPORTED;
    }
    len = (size + page - 1) / page * page;
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    status = btl_mpi_pool_get(mif, len, &mr->pool_off, &used);
    if (status != UTIL_OK) {
        free(mr);
        return status;
    }
    mr->pool_len = len;
    mr->in_pool = 1;
    mr->super.iface = iface;
    mr->super.addr = mif->pool_base + mr->pool_off;
    mr->super.size = size;
    mr->disp = mr->pool_off;
    /* Zeroed like btl/shm's fresh segments, but only what was in use before:
     * touching the rest would commit a whole symmetric heap at init (a
     * 256 MiB heap took 1.8 s per PE on a 2-core VM). */
    memset(mr->super.addr, 0, used < size ? used : size);
    util_trace("btl/mpi: pool block of %zu bytes at offset %zu", len, mr->pool_off);
    *addr_p = mr->super.addr;
    *mr_p = &mr->super;
    return UTIL_OK;
}

/* Gives a block back to the free list, merged with its neighbours. */
static util_status_t btl_mpi_pool_put(btl_mpi_iface_t *mif, size_t off, size_t len)
{
    btl_mpi_block_t **link = &mif->pool_free, *prev = NULL, *block;

    while (*link != NULL && (*link)->off < off) {
        prev = *link;
        link = &(*link)->next;
    }
    if (prev != NULL && prev->off + prev->len == off) {
        prev->len += len;
        block = prev;
    } else {
        block = calloc(1, sizeof(*block));
        if (block == NULL) {
            return UTIL_ERR_NO_MEMORY; /* the range stays out of the pool */
        }
        block->off = off;
        block->len = len;
        block->next = *link;
        *link = block;
    }
    if (block->next != NULL && block->off + block->len == block->next->off) {
        btl_mpi_block_t *next = block->next;
        block->len += next->len;
        block->next = next->next;
        free(next);
    }
    return UTIL_OK;
}

static util_status_t btl_mpi_region_put(btl_mpi_iface_t *mif, btl_mpi_region_t *region)
{
    util_status_t status = UTIL_OK;

    if (--region->refs > 0) {
        return UTIL_OK;
    }
    for (btl_mpi_region_t **link = &mif->regions; *link != NULL; link = &(*link)->next) {
        if (*link == region) {
            *link = region->next;
            break;
        }
    }
    status =
        btl_mpi_check("MPI_Win_detach", mif->shim->win_detach(mif->win, (void *)region->start));
    free(region);
    return status;
}

/* mremap as the raw system call: MPICH's UCX memory hooks intercept the
 * libc one and return NULL for a duplicating remap (old size 0). */
static int btl_mpi_mremap(void *from, size_t old_size, size_t size, void *to)
{
    return (void *)syscall(SYS_mremap, from, old_size, size, MREMAP_MAYMOVE | MREMAP_FIXED, to) ==
                   to
               ? 0
               : -1;
}

/* Copies len bytes through the kernel (a pipe, raw system calls): a
 * program's static data holds AddressSanitizer's redzones between globals,
 * which a memcpy here would report, and process_vm_readv is not allowed in
 * every container. */
static util_status_t btl_mpi_kernel_copy(void *dst, const void *src, size_t len)
{
    util_status_t status = UTIL_OK;
    int fds[2];

    if (pipe(fds) != 0) {
        util_error("btl/mpi: pipe: %m");
        return UTIL_ERR_IO;
    }
    while (len > 0 && status == UTIL_OK) {
        /* one page at a time: an empty pipe always takes it whole */
        long n = syscall(SYS_write, fds[1], src, len < 4096 ? len : 4096);
        if (n <= 0) {
            status = UTIL_ERR_IO;
            break;
        }
        src = (const char *)src + n;
        len -= (size_t)n;
        while (n > 0) {
            long got = syscall(SYS_read, fds[0], dst, (size_t)n);
            if (got <= 0) {
                status = UTIL_ERR_IO;
                break;
            }
            dst = (char *)dst + got;
            n -= got;
        }
    }
    if (status != UTIL_OK) {
        util_error("btl/mpi: cannot copy memory through a pipe: %m");
    }
    close(fds[0]);
    close(fds[1]);
    return status;
}

/* Makes caller memory (page-aligned: a program's static data) pool memory,
 * contents kept: a block of the pool gets a copy, then a second mapping of
 * the block's pages replaces the range (mremap with old size 0 duplicates
 * a shared mapping). Peers then reach it through the pool window, by loads
 * and stores where the pool is load/store (as btl/shm remaps onto shm).
 * UNSUPPORTED (the range stays where it is, on the dynamic window) without
 * a pool or room in it. Nothing else may write the range meanwhile:
 * callers remap at initialization. */
static util_status_t btl_mpi_mem_remap(btl_iface_t *iface, void *addr, size_t size, btl_mr_t **mr_p)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(iface);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    btl_mpi_mr_t *mr;
    util_status_t status;
    void *block;
    size_t used; /* the copy overwrites it all */

    if (((uintptr_t)addr % page) != 0 || (size % page) != 0 || size == 0) {
        return UTIL_ERR_INVALID;
    }
    if (mif->pool_win == NULL) {
        return UTIL_ERR_UNSUPPORTED;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    status = btl_mpi_pool_get(mif, size, &mr->pool_off, &used);
    if (status != UTIL_OK) {
        free(mr);
        return status;
    }
    block = mif->pool_base + mr->pool_off;
    status = btl_mpi_kernel_copy(block, addr, size);
    if (status == UTIL_OK && btl_mpi_mremap(block, 0, size, addr) != 0) {
        util_debug("btl/mpi: cannot map pool memory over %p (+%zu): %m; it stays on the "
                   "dynamic window",
                   addr, size);
        status = UTIL_ERR_UNSUPPORTED;
    }
    if (status != UTIL_OK) {
        btl_mpi_pool_put(mif, mr->pool_off, size);
        free(mr);
        return status;
    }
    mr->super.iface = iface;
    mr->super.addr = addr;
    mr->super.size = size;
    mr->disp = mr->pool_off;
    mr->pool_len = size;
    mr->in_pool = 1;
    mr->remapped = 1;
    mr->next_remap = mif->remaps;
    mif->remaps = mr;
    util_debug("btl/mpi: %p (+%zu) remapped onto the pool at offset %zu", addr, size, mr->pool_off);
    *mr_p = &mr->super;
    return UTIL_OK;
}

/* Undoes a remap: private memory again with the current contents (the
 * program goes on using its static data after the library is finalized). */
static util_status_t btl_mpi_unremap(btl_mpi_iface_t *mif, btl_mpi_mr_t *mr)
{
    size_t size = mr->pool_len;
    void *copy;
    util_status_t status;

    for (btl_mpi_mr_t **link = &mif->remaps; *link != NULL; link = &(*link)->next_remap) {
        if (*link == mr) {
            *link = mr->next_remap;
            break;
        }
    }
    copy = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) {
        util_warn("btl/mpi: cannot restore %p as private memory (%m); it stays shared",
                  mr->super.addr);
        return UTIL_ERR_NO_MEMORY; /* the block stays out of the pool */
    }
    status = btl_mpi_kernel_copy(copy, mr->super.addr, size);
    if (status == UTIL_OK && btl_mpi_mremap(copy, size, size, mr->super.addr) != 0) {
        util_warn("btl/mpi: cannot restore %p as private memory (%m); it stays shared",
                  mr->super.addr);
        status = UTIL_ERR_IO;
    }
    if (status != UTIL_OK) {
        munmap(copy, size);
        return status;
    }
    return btl_mpi_pool_put(mif, mr->pool_off, size);
}

static util_status_t btl_mpi_mem_dereg(btl_mr_t *mr)
{
    btl_mpi_mr_t *mmr = btl_container_of(mr, btl_mpi_mr_t, super);
    btl_mpi_iface_t *mif = btl_mpi_iface(mr->iface);
    util_status_t status;

    /* peers may not be reaching into it any more (the caller's promise),
     * but our own writes to it may still be in flight */
    status = btl_mpi_quiet(mr->iface);
    if (status == UTIL_OK) {
        if (mmr->remapped) {
            status = btl_mpi_unremap(mif, mmr);
        } else if (mmr->pool_len > 0) {
            status = btl_mpi_pool_put(mif, mmr->pool_off, mmr->pool_len);
        } else if (mmr->region != NULL) {
            status = btl_mpi_region_put(mif, mmr->region);
        }
    }
    free(mmr);
    return status;
}

static util_status_t btl_mpi_rkey_pack(btl_mr_t *mr, void *buf, size_t bufsize, size_t *size_p)
{
    btl_mpi_mr_t *mmr = btl_container_of(mr, btl_mpi_mr_t, super);
    btl_mpi_iface_t *mif = btl_mpi_iface(mr->iface);
    btl_mpi_packed_t packed = {(uint64_t)(uintptr_t)mr->addr, mr->size, mmr->disp, 0};

    if (mmr->in_pool) {
        packed.flags = BTL_MPI_KEY_POOL | (mif->load_store ? BTL_MPI_KEY_LS : 0);
    }

    if (bufsize < sizeof(packed)) {
        return UTIL_ERR_TRUNCATED;
    }
    memcpy(buf, &packed, sizeof(packed));
    *size_p = sizeof(packed);
    return UTIL_OK;
}

static util_status_t btl_mpi_rkey_unpack(btl_ep_t *ep, const void *buf, size_t size,
                                         btl_rkey_t **rkey_p)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(ep->iface);
    btl_mpi_packed_t packed;
    btl_mpi_rkey_t *rk;

    if (size != sizeof(packed)) {
        util_error("btl/mpi: packed key of %zu bytes, expected %zu", size, sizeof(packed));
        return UTIL_ERR_INVALID;
    }
    memcpy(&packed, buf, sizeof(packed));
    if (packed.flags > (BTL_MPI_KEY_POOL | BTL_MPI_KEY_LS) ||
        (packed.flags != 0 && (mif->pool_win == NULL || packed.flags == BTL_MPI_KEY_LS))) {
        util_error("btl/mpi: packed key names a pool window this process does not have");
        return UTIL_ERR_INVALID;
    }
    rk = calloc(1, sizeof(*rk));
    if (rk == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    rk->super.remote_base = packed.base;
    rk->super.length = packed.len;
    rk->delta = packed.disp - packed.base;
    rk->win = (packed.flags & BTL_MPI_KEY_POOL) ? mif->pool_win : mif->win;
    if (packed.flags & BTL_MPI_KEY_LS) {
        /* the owner decides, so every rank reaches this memory the same way */
        rk->super.ls_valid = 1;
        rk->super.ls_delta =
            (intptr_t)((uint64_t)(uintptr_t)mif->peer_pool[ep->peer] + packed.disp - packed.base);
    }
    *rkey_p = &rk->super;
    return UTIL_OK;
}

static util_status_t btl_mpi_rkey_release(btl_rkey_t *rkey)
{
    free(btl_container_of(rkey, btl_mpi_rkey_t, super));
    return UTIL_OK;
}

/* ---- endpoints: a peer is its rank in the window's communicator ---- */
static util_status_t btl_mpi_ep_connect(btl_iface_t *iface, int peer, btl_ep_t **ep_p)
{
    btl_mpi_ep_t *mep = calloc(1, sizeof(*mep));

    if (mep == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    *ep_p = &mep->super;
    return UTIL_OK;
}

static util_status_t btl_mpi_ep_disconnect(btl_ep_t *ep)
{
    free(btl_container_of(ep, btl_mpi_ep_t, super));
    return UTIL_OK;
}

/* ---- iface ---- */
static util_status_t btl_mpi_teardown(btl_mpi_iface_t *mif)
{
    util_status_t status = UTIL_OK, s;

    btl_helper_stop(&mif->helper);
    if (mif->win != NULL) {
        /* ranges still registered go with the window */
        while (mif->regions != NULL) {
            btl_mpi_region_t *region = mif->regions;
            mif->regions = region->next;
            mif->shim->win_detach(mif->win, (void *)region->start);
            free(region);
        }
        status = btl_mpi_check("MPI_Win_free", mif->shim->win_free(mif->win));
    }
    while (mif->remaps != NULL) {
        /* still registered: the caller's memory must not go with the pool */
        btl_mpi_mr_t *mr = mif->remaps;
        (void)btl_mpi_unremap(mif, mr); /* unlinks it, even when it fails */
        free(mr);
    }
    if (mif->pool_win != NULL) {
        s = btl_mpi_check("MPI_Win_free", mif->shim->win_free(mif->pool_win));
        status = status != UTIL_OK ? status : s;
    }
    free(mif->peer_pool);
    while (mif->pool_free != NULL) {
        btl_mpi_block_t *block = mif->pool_free;
        mif->pool_free = block->next;
        free(block);
    }
    if (mif->comm_held) {
        s = bootstrap_mpi_comm_release();
        status = status != UTIL_OK ? status : s;
    }
    free(mif);
    return status;
}

static util_status_t btl_mpi_iface_close(btl_iface_t *iface)
{
    btl_mpi_iface_t *mif = btl_mpi_iface(iface);
    util_status_t status = btl_mpi_quiet(iface), s;

    s = btl_mpi_teardown(mif);
    return status != UTIL_OK ? status : s;
}

static util_status_t btl_mpi_iface_open(btl_ctx_t *ctx, int index, btl_iface_t **iface_p);

static const btl_ops_t btl_mpi_ops = {
    .iface_close = btl_mpi_iface_close,
    .ep_connect = btl_mpi_ep_connect,
    .ep_disconnect = btl_mpi_ep_disconnect,
    .mem_alloc = btl_mpi_mem_alloc,
    .mem_remap = btl_mpi_mem_remap,
    .mem_reg = btl_mpi_mem_reg,
    .mem_dereg = btl_mpi_mem_dereg,
    .rkey_pack = btl_mpi_rkey_pack,
    .rkey_unpack = btl_mpi_rkey_unpack,
    .rkey_release = btl_mpi_rkey_release,
    .put = btl_mpi_put,
    .get = btl_mpi_get,
    .put_flag = btl_mpi_put_flag,
    .get_flag = btl_mpi_get_flag,
    .amo_post = btl_mpi_amo_post,
    .amo_fetch = btl_mpi_amo_fetch,
    .amo_fetch_nbi = btl_amo_fetch_nbi_at_once,
    .fence = btl_mpi_fence,
    .quiet = btl_mpi_quiet,
    .progress = btl_mpi_progress,
};

/* The MPI plugins this build installs (bootstrap/bootstrap_mpi.h); one
 * is loaded only by a program that runs MPI, so "usable" means a plugin
 * is in place for it. */
static int btl_mpi_describe(btl_describe_func_t report, void *arg)
{
    static const char *const names[] = {"openmpi", "mpich"};
    static const char *const dirs[] = {
#ifdef RMB_MPI_PLUGIN_DIR
        RMB_MPI_PLUGIN_DIR,
#endif
#ifdef RMB_MPI_BUILD_DIR
        RMB_MPI_BUILD_DIR,
#endif
        NULL};
    char path[1024];
    int found = 0;

    for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
        for (size_t d = 0; dirs[d] != NULL; d++) {
            snprintf(path, sizeof(path), "%s/rmb_mpi_%s.so", dirs[d], names[n]);
            if (access(path, R_OK) == 0) {
                report(arg, "mpi", "plugin", path);
                found++;
                break;
            }
        }
    }
    report(arg, "mpi", "runs",
           "in MPI programs (MPI_Init before shmem_init), or with "
           "RMB_BOOTSTRAP=mpi under mpirun/mpiexec");
    return found > 0;
}

const btl_component_t btl_mpi_component = {
    .name = "mpi",
    .on_node_only = 0,
    .iface_open = btl_mpi_iface_open,
    .describe = btl_mpi_describe,
};

/* RMB_MPI_LOAD_STORE: with a pool, where every peer's pool is mapped here,
 * and whether pool memory is reached by loads, stores and CPU atomics
 * (auto) or through MPI RMA on the pool window (no). */
static util_status_t btl_mpi_load_store(btl_mpi_iface_t *mif, int size)
{
    const char *how = "auto";
    util_status_t status;

    util_env_get_string("RMB_MPI_LOAD_STORE", &how);
    if (strcmp(how, "auto") != 0 && strcmp(how, "no") != 0) {
        util_error("RMB_MPI_LOAD_STORE is '%s'; use auto or no", how);
        return UTIL_ERR_INVALID;
    }
    if (mif->pool_win == NULL) {
        return UTIL_OK;
    }
    mif->peer_pool = calloc((size_t)size, sizeof(*mif->peer_pool));
    if (mif->peer_pool == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    for (int peer = 0; peer < size; peer++) {
        void *base = NULL;
        status = btl_mpi_check("MPI_Win_shared_query",
                               mif->shim->win_shared_query(mif->pool_win, peer, &base));
        if (status != UTIL_OK) {
            return status;
        }
        mif->peer_pool[peer] = base;
    }
    if (strcmp(how, "auto") == 0) {
        /* each owner's key says so: readers follow it (rkey_unpack) */
        mif->load_store = 1;
        mif->super.caps |= BTL_CAP_LOAD_STORE;
    }
    return UTIL_OK;
}

static util_status_t btl_mpi_iface_open(btl_ctx_t *ctx, int index, btl_iface_t **iface_p)
{
    btl_mpi_iface_t *mif;
    int rank, size, unified = 0;
    util_status_t status;
    void *base = NULL;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    mif = calloc(1, sizeof(*mif));
    if (mif == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    mif->super.ops = btl_mpi_ops;
    btl_iface_base_init(&mif->super, &btl_mpi_component, ctx, index,
                        BTL_CAP_ANY_MEMORY | BTL_CAP_AMO32 | BTL_CAP_AMO64);
    mif->dirty = BTL_MPI_DIRTY_NONE;
    mif->shim = bootstrap_mpi_shim();
    if (mif->shim == NULL || !mif->shim->running()) {
        util_error("btl/mpi: MPI is not initialized (call MPI_Init first, or launch with "
                   "mpirun/mpiexec and RMB_BOOTSTRAP=mpi)");
        free(mif);
        return UTIL_ERR_UNSUPPORTED;
    }
    status = bootstrap_mpi_comm_acquire(&rank, &size, NULL);
    if (status != UTIL_OK) {
        free(mif);
        return status;
    }
    mif->comm_held = 1;
    if (rank != ctx->rank || size != ctx->size) {
        util_error("btl/mpi: MPI_COMM_WORLD rank %d of %d, but bootstrap (%s) rank %d of %d: "
                   "the job must be one MPI job",
                   rank, size, bootstrap_flavour(), ctx->rank, ctx->size);
        status = UTIL_ERR_STATE;
        goto err;
    }
    status = btl_mpi_check("MPI_Win_create_dynamic/MPI_Win_lock_all",
                           mif->shim->win_create(&mif->win, &unified));
    if (status != UTIL_OK) {
        goto err;
    }
    if (!unified) {
        util_error("btl/mpi: %s gives this window the separate memory model; rmb reads "
                   "notified flags with loads and needs MPI_WIN_UNIFIED",
                   mif->shim->name);
        status = UTIL_ERR_UNSUPPORTED;
        goto err;
    }
    status = util_env_get_size("RMB_MPI_POOL_SIZE", &mif->pool_size);
    if (status != UTIL_OK) {
        goto err;
    }
    if (mif->pool_size > 0) {
        /* a page more: the MPI's base need not be page-aligned (osc/sm) */
        mif->pool_size += page;
        status =
            btl_mpi_check("MPI_Win_allocate_shared/MPI_Win_lock_all",
                          mif->shim->win_allocate(mif->pool_size, &base, &mif->pool_win, &unified));
        if (status != UTIL_OK) {
            goto err;
        }
        if (mif->pool_win == NULL) {
            mif->pool_size = 0; /* ranks on several nodes: the dynamic window only */
        }
    }
    if (mif->pool_win != NULL) {
        mif->pool_base = base;
        mif->pool_free = calloc(1, sizeof(*mif->pool_free));
        if (mif->pool_free == NULL) {
            status = UTIL_ERR_NO_MEMORY;
            goto err;
        }
        mif->pool_free->off = (page - (uintptr_t)base % page) % page;
        mif->pool_free->len = (mif->pool_size - mif->pool_free->off) / page * page;
        if (!unified) {
            util_error("btl/mpi: %s gives the pool window the separate memory model (set "
                       "RMB_MPI_POOL_SIZE=0)",
                       mif->shim->name);
            status = UTIL_ERR_UNSUPPORTED;
            goto err;
        }
    }
    status = btl_mpi_load_store(mif, size);
    if (status != UTIL_OK) {
        goto err;
    }
    mif->oversubscribed = bootstrap_local_size() > sysconf(_SC_NPROCESSORS_ONLN);
    /* Peers' RMA may need our MPI calls to land, and nothing tells us when
     * one did: no naps (util/wait.h). */
    util_wait_serves_unseen();
    mif->helper.interval_usec = btl_mpi_progress_interval();
    if (mif->helper.interval_usec != 0 && bootstrap_mpi_thread_allowed()) {
        mif->helper.drain = btl_mpi_drain;
        mif->helper.arg = mif;
        status = btl_helper_start(&mif->helper, "btl/mpi");
        if (status != UTIL_OK) {
            goto err;
        }
    } else {
        mif->super.caps |= mif->load_store ? 0 : BTL_CAP_PE_PROGRESS;
        if (mif->helper.interval_usec != 0 && ctx->rank == 0) {
            util_info("btl/mpi: the program initialized MPI below MPI_THREAD_MULTIPLE: no "
                      "progress thread; a PE busy outside MPI and rmb delays its peers");
        }
    }
    util_debug("btl/mpi: %s, dynamic window, pool window of %zu bytes (%s), %d ranks, "
               "progress thread %s",
               mif->shim->name, mif->pool_size, mif->load_store ? "load/store" : "MPI RMA", size,
               mif->helper.running ? "on" : "off");
    *iface_p = &mif->super;
    return UTIL_OK;

err:
    btl_mpi_teardown(mif);
    return status;
}
