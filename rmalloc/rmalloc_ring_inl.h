/*
 * Ring-mode allocator instance, the inline part: its layout and the
 * per-message steps (allocation, lookup, the release of the oldest), so
 * that a small message is placed and freed without the calls in between:
 * rmalloc_vmem.c, and rpipe (rpipe_io.c, rpipe.c) on the ring
 * rmalloc_sync_alloc_ring() or rmalloc_sync_block_ring() hands it. Nothing
 * else includes this; everyone else uses rmalloc_ring.h.
 */
#ifndef RMALLOC_RING_INL_H
#define RMALLOC_RING_INL_H

#include "rmalloc/rmalloc_ring.h"

enum {
    RMALLOC_RING_ENT_ALLOC = RMALLOC_BLOCK_ALLOC,
    RMALLOC_RING_ENT_DUMMY = RMALLOC_BLOCK_DUMMY,
    RMALLOC_RING_ENT_RELEASED = 0
};

typedef struct {
    uint64_t from;  /* the occupied span starts here (alignment padding before start) */
    uint64_t start; /* first unit of the block */
    uint64_t units;
    uint64_t id;
    uint32_t state; /* RMALLOC_RING_ENT_* */
    uint32_t pad_;
} rmalloc_ring_ent_t;

struct rmalloc_ring {
    rmalloc_ring_ent_t *fifo;
    uint64_t mask, head, tail; /* entries [head, tail), sequence numbers */
    uint64_t total, cursor;
    uint64_t used, live, released;
    uint64_t stamp, seq;
    uint64_t dummy_seq; /* FIFO sequence of the newest dummy (at most one is live) */
    unsigned shift;
};

/* Doubles the FIFO (out of line: rare). */
util_status_t rmalloc_ring_grow(rmalloc_ring_t *ring);

static inline rmalloc_ring_ent_t *rmalloc_ring_push(rmalloc_ring_t *ring, uint64_t from,
                                                    uint64_t start, uint64_t units, uint32_t state)
{
    rmalloc_ring_ent_t *e = &ring->fifo[ring->tail++ & ring->mask];

    e->from = from;
    e->start = start;
    e->units = units;
    e->state = state;
    e->id = (ring->stamp << 40) | (++ring->seq & ((UINT64_C(1) << 40) - 1));
    ring->used += units;
    ring->cursor = start + units;
    return e;
}

static inline __attribute__((always_inline)) util_status_t
rmalloc_ring_alloc_inl(rmalloc_ring_t *ring, uint64_t units, uint64_t align_units, uint64_t payload,
                       raddr_t *desc_p)
{
    uint64_t cursor = ring->cursor;
    uint64_t s = (cursor + align_units - 1) & ~(align_units - 1);
    int empty = (ring->head == ring->tail);
    uint64_t lo = empty ? 0 : ring->fifo[ring->head & ring->mask].from;
    uint64_t wrap_from = UINT64_MAX;

    /* Two pushes at most (a dummy and the block). */
    if (ring->tail - ring->head + 2 > ring->mask + 1 && rmalloc_ring_grow(ring) != UTIL_OK)
        return UTIL_ERR_NO_MEMORY;
    /* Occupied: [lo, cursor) when lo < cursor, [lo, total) + [0, cursor)
     * when it wrapped; lo == cursor with entries means full. */
    if (s + units <= ring->total) {
        if (!empty && !(lo < cursor || s + units <= lo)) return UTIL_ERR_NO_RESOURCE;
    } else {
        /* Wrap: the dummy takes [cursor, total), the block [0, units). */
        uint64_t free0_end;
        if (units > ring->total) return UTIL_ERR_NO_RESOURCE;
        if (empty)
            free0_end = cursor;
        else if (lo < cursor || cursor == ring->total)
            free0_end = lo;
        else
            return UTIL_ERR_NO_RESOURCE;
        if (free0_end < units) return UTIL_ERR_NO_RESOURCE;
        wrap_from = cursor;
        if (cursor < ring->total) {
            ring->dummy_seq = ring->tail;
            rmalloc_ring_push(ring, cursor, cursor, ring->total - cursor, RMALLOC_RING_ENT_DUMMY);
        }
        cursor = s = 0;
    }
    rmalloc_ring_ent_t *e = rmalloc_ring_push(ring, cursor, s, units, RMALLOC_RING_ENT_ALLOC);
    ring->live++;
    desc_p->start = s;
    desc_p->end = s + units;
    desc_p->id = e->id;
    desc_p->payload = payload;
    desc_p->block = (uint32_t)(ring->tail - 1);
    desc_p->unit_shift = (uint16_t)ring->shift;
    desc_p->flags = 0;
    desc_p->wrap_from = 0;
    if (wrap_from != UINT64_MAX) {
        desc_p->flags = RMALLOC_DESC_WRAPPED;
        desc_p->wrap_from = wrap_from;
    }
    return UTIL_OK;
}

/* The live entry desc names, or NULL. */
static inline __attribute__((always_inline)) rmalloc_ring_ent_t *
rmalloc_ring_find(const rmalloc_ring_t *ring, const raddr_t *desc)
{
    uint32_t off = desc->block - (uint32_t)ring->head;

    if (desc->id == 0 || off >= ring->tail - ring->head) return NULL;
    rmalloc_ring_ent_t *e = &ring->fifo[(ring->head + off) & ring->mask];
    if (e->state != RMALLOC_RING_ENT_ALLOC || e->id != desc->id || e->start != desc->start ||
        e->start + e->units != desc->end)
        return NULL;
    return e;
}

/* Frees e (a live allocation rmalloc_ring_find() returned) if it is the
 * oldest one, as rmalloc_ring_free() would, and returns the units that frees
 * in allocation order (> 0: the allocation, a dummy before it, and later
 * allocations freed before it), without adding them to ring->released; 0,
 * with nothing changed, where e is not the oldest (use rmalloc_ring_free()). */
static inline __attribute__((always_inline)) uint64_t
rmalloc_ring_free_oldest_inl(rmalloc_ring_t *ring, rmalloc_ring_ent_t *e)
{
    rmalloc_ring_ent_t *fifo = ring->fifo;
    uint64_t mask = ring->mask, head = ring->head, tail = ring->tail;
    uint64_t used = ring->used, released = 0;

    /* only a wrap into an empty ring leaves a dummy in front of the oldest */
    if (e != &fifo[head & mask] &&
        (fifo[head & mask].state != RMALLOC_RING_ENT_DUMMY || e != &fifo[(head + 1) & mask])) {
        return 0;
    }
    e->state = RMALLOC_RING_ENT_RELEASED;
    used -= e->units;
    for (; head != tail; head++) {
        e = &fifo[head & mask];
        if (e->state == RMALLOC_RING_ENT_ALLOC) {
            break;
        }
        if (e->state == RMALLOC_RING_ENT_DUMMY) {
            used -= e->units;
        }
        released += e->units;
    }
    ring->head = head;
    ring->used = used;
    ring->live--;
    return released;
}

#endif
