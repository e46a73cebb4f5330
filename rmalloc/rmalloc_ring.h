/*
 * Ring-mode allocator instance (RMALLOC_VMEM_RING): the strict circular
 * buffer of next-fit with block sync (thesis Fig. 4.6, Alg. 6-9).
 *
 * In a ring the occupied units are always one circular interval: from the
 * oldest live allocation to the cursor. So the instance keeps only its
 * allocations in allocation order (a FIFO) and never a free list or an
 * address tree: an allocation is placed at the cursor or, when the end of
 * the region is too close, at unit 0 behind a dummy block that covers the
 * rest of the region, and a release pops the FIFO's head while it is
 * released. Every operation is O(1) amortized; this is the per-message path
 * of rpipe's block mode on both ends (shadow and real instance make the same
 * choice because placement depends only on the cursor and the size).
 *
 * rmalloc_vmem_* calls on a RING instance dispatch here; the contracts are
 * those of rmalloc_vmem.h. A descriptor's `block` is its FIFO sequence.
 */
#ifndef RMALLOC_RING_H
#define RMALLOC_RING_H

#include "rmalloc/rmalloc_vmem.h"

typedef struct rmalloc_ring rmalloc_ring_t;

util_status_t rmalloc_ring_create(uint64_t total_units, unsigned unit_shift, uint64_t stamp,
                                  rmalloc_ring_t **ring_p);
void rmalloc_ring_destroy(rmalloc_ring_t *ring);

/* Places `units` aligned to `align_units` (a power of two); fills *desc_p
 * except payload-independent fields the caller owns (unit_shift, payload). */
util_status_t rmalloc_ring_alloc(rmalloc_ring_t *ring, uint64_t units, uint64_t align_units,
                                 uint64_t payload, raddr_t *desc_p);
util_status_t rmalloc_ring_free(rmalloc_ring_t *ring, const raddr_t *desc);
/* UTIL_OK when desc is a live allocation of this ring. */
util_status_t rmalloc_ring_lookup(const rmalloc_ring_t *ring, const raddr_t *desc);
uint64_t rmalloc_ring_take_released(rmalloc_ring_t *ring);
util_status_t rmalloc_ring_retire(rmalloc_ring_t *ring, uint64_t units);

/* Ring-first instances (RMALLOC_VMEM_RING_FIRST): frees desc if it is the
 * oldest live allocation (the ring stays a strict FIFO); NO_RESOURCE, with
 * nothing changed, if it is not (or is no live allocation at all). */
util_status_t rmalloc_ring_free_oldest(rmalloc_ring_t *ring, const raddr_t *desc);

/* rmalloc_ring_free_oldest() over descs[0..n) in turn, up to the first that
 * is not the oldest: how many it freed. */
size_t rmalloc_ring_free_oldest_n(rmalloc_ring_t *ring, const raddr_t *descs, size_t n);

/* Units a general next-fit instance would have free in one block that the
 * ring cannot place into: the dummy behind a wrap (or, with nothing older
 * left, the gap from the cursor to the region's end). */
uint64_t rmalloc_ring_spare_units(const rmalloc_ring_t *ring);
/* Units of that dummy (0 without one): a ring-first instance counts them
 * free, as its general instance would. */
uint64_t rmalloc_ring_dummy_units(const rmalloc_ring_t *ring);

/* One FIFO entry, for an instance that leaves its ring (rmalloc_vmem.c). */
typedef struct {
    uint64_t seq; /* FIFO sequence: a descriptor's block is its low 32 bits */
    uint64_t start, units, id;
    int state; /* RMALLOC_BLOCK_ALLOC or _DUMMY; released entries are skipped */
} rmalloc_ring_entry_t;

/* Calls fn for every entry still in the FIFO, oldest first, and returns
 * the cursor and the id sequence counter. */
void rmalloc_ring_export(const rmalloc_ring_t *ring,
                         void (*fn)(const rmalloc_ring_entry_t *entry, void *arg), void *arg,
                         uint64_t *cursor_p, uint64_t *seq_p);

uint64_t rmalloc_ring_used_units(const rmalloc_ring_t *ring);
uint64_t rmalloc_ring_live_count(const rmalloc_ring_t *ring);
void rmalloc_ring_walk(const rmalloc_ring_t *ring,
                       void (*fn)(const rmalloc_block_info_t *block, void *arg), void *arg);
util_status_t rmalloc_ring_check(const rmalloc_ring_t *ring);

#endif
