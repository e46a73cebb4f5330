/*
 * rmalloc allocator instances (thesis §3.4.3, §4.1.3, §4.2).
 *
 * An instance manages a contiguous region of `size` bytes cut into
 * allocation units of `unit` bytes (a power of two). It keeps all of its
 * metadata out of band, so the same code serves a *local* instance (base
 * points at mapped memory) and a *shadow* instance (base is NULL: it mirrors
 * a peer's memory that is not mapped here).
 *
 * Free blocks live in segregated size classes (two-level: power of two,
 * then eight linear steps) and in an address-ordered tree; every block,
 * free or not, is linked to its address neighbours, so a free coalesces with
 * its predecessor and successor in O(1) and touches the tree only when the
 * set of free blocks changes shape (O(log n)).
 *
 * Heuristics: first-fit (lowest address that fits), next-fit (circular
 * buffer from the last allocation, Fig. 4.6, then first fit after the
 * cursor), best-fit (smallest fitting size class, exact inside the
 * request's own class), worst-fit (largest class) and random-fit.
 *
 * Ring mode (RMALLOC_VMEM_RING, next-fit only) is the strict circular buffer
 * the block protocol needs: an allocation is placed at the cursor or, when
 * the end of the region is too close, at unit 0 behind a dummy block that
 * covers the rest of the region. The placement then depends only on the
 * cursor and the size, so a shadow and the real instance make the same
 * choice. Releases are counted in allocation order (see ring_* below).
 * A ring keeps only a FIFO of its allocations (rmalloc_ring.h): O(1) per
 * call, since rpipe's block mode runs it on every message.
 *
 * Ring-first mode (RMALLOC_VMEM_RING_FIRST, next-fit) is for a producer whose
 * frees usually come in allocation order (tag and channel sync): it starts as
 * a ring and turns into the general instance, once and for good, at the
 * first free that is not of the oldest allocation, at a request with an
 * alignment above the unit, or at an allocation the ring refuses but the
 * general instance would place (the gap behind a wrap). Until then both make
 * the same placements; descriptors issued by the ring stay valid after the
 * change (a table maps their FIFO sequence to the new block records).
 *
 * Claims mode (RMALLOC_VMEM_CLAIMS) serves an instance that only applies a
 * peer's placements (the consumer of the tag and channel protocols): a
 * record table and a bitmap of busy units (rmalloc_claims.h), O(1) per
 * message for small messages. rmalloc_vmem_alloc/_realloc then return
 * ERR_UNSUPPORTED.
 *
 * Status codes: UTIL_OK; UTIL_ERR_NO_RESOURCE when no free block fits (the
 * "would block" of an allocation: free or sync, then retry);
 * UTIL_ERR_INVALID for bad arguments and for descriptors that this instance
 * did not issue or that were already freed (state is left untouched);
 * UTIL_ERR_NO_MEMORY when metadata cannot be allocated.
 * Instances are not thread-safe: one thread per instance.
 */
#ifndef RMALLOC_VMEM_H
#define RMALLOC_VMEM_H

#include "rmalloc/rmalloc_desc.h"
#include "util/status.h"

#include <stddef.h>
#include <stdint.h>

typedef enum {
    RMALLOC_FIRST_FIT = 0,
    RMALLOC_NEXT_FIT,
    RMALLOC_BEST_FIT,
    RMALLOC_WORST_FIT,
    RMALLOC_RANDOM_FIT,
    RMALLOC_HEURISTIC_COUNT
} rmalloc_heuristic_t;

/* Instance flags. */
enum {
    RMALLOC_VMEM_RING = 1u << 0,      /* strict circular buffer (next-fit only) */
    RMALLOC_VMEM_CLAIMS = 1u << 1,    /* only claims and frees, never allocates
                                      (rmalloc_claims.h); ignored for regions
                                      of more than 2^27 units */
    RMALLOC_VMEM_RING_FIRST = 1u << 2 /* next-fit: runs as a ring while frees come
                                      in allocation order, then as the general
                                      instance (see below); ignored otherwise */
};

/* Largest allocation, in units (thesis: 2^31 units). */
#define RMALLOC_MAX_UNITS (UINT64_C(1) << 31)

typedef struct {
    void *base;    /* mapped region, or NULL for a shadow */
    uint64_t size; /* region bytes (whole units are used) */
    uint64_t unit; /* granularity: power of two bytes */
    rmalloc_heuristic_t heuristic;
    uint32_t header_bytes; /* poll header after each payload */
    unsigned flags;        /* RMALLOC_VMEM_* */
    uint64_t seed;         /* random-fit generator seed */
} rmalloc_vmem_config_t;

typedef struct rmalloc_vmem rmalloc_vmem_t;

/* One block as seen by rmalloc_vmem_walk(). */
typedef struct {
    uint64_t start, end; /* units */
    int state;           /* RMALLOC_BLOCK_* */
} rmalloc_block_info_t;

enum { RMALLOC_BLOCK_FREE = 1, RMALLOC_BLOCK_ALLOC = 2, RMALLOC_BLOCK_DUMMY = 3 };

/* Short name of a heuristic ("next-fit"); "?" for an unknown value. */
const char *rmalloc_heuristic_name(rmalloc_heuristic_t heuristic);

/* Parses "first", "next", "best", "worst", "random" (optionally "-fit"). */
util_status_t rmalloc_heuristic_parse(const char *text, rmalloc_heuristic_t *heuristic_p);

/* Creates an instance over [base, base + size) (base may be NULL: shadow).
 * ERR_INVALID when unit is not a power of two, the region holds no unit or
 * more than 2^40 units, or RING is asked for with another heuristic. */
util_status_t rmalloc_vmem_create(const rmalloc_vmem_config_t *config, rmalloc_vmem_t **vmem_p);

/* Frees the instance and its metadata (not the region itself). */
void rmalloc_vmem_destroy(rmalloc_vmem_t *vmem);

/* Allocates payload bytes (+ the header) aligned to `align` bytes (0 or a
 * power of two; alignment below the unit is free). ERR_NO_RESOURCE when
 * nothing fits; ERR_INVALID for a zero or over-large size or a bad align. */
util_status_t rmalloc_vmem_alloc(rmalloc_vmem_t *vmem, uint64_t payload, uint64_t align,
                                 raddr_t *desc_p);

/* Releases an allocation. ERR_INVALID (nothing changes) for a double free,
 * a descriptor of another instance or a dummy. In ring mode the released
 * units are counted for rmalloc_vmem_ring_take_released(). */
util_status_t rmalloc_vmem_free(rmalloc_vmem_t *vmem, const raddr_t *desc);

/* rmalloc_vmem_free() of descs[0..n) in turn, stopping at the first error;
 * *done_p: how many were freed. A ring-first instance frees a run of oldest
 * allocations in one call (a producer applying its consumer's frees). */
util_status_t rmalloc_vmem_free_n(rmalloc_vmem_t *vmem, const raddr_t *descs, size_t n,
                                  size_t *done_p);

/* Resizes an allocation in place: shrinks, or grows into a free successor.
 * ERR_NO_RESOURCE when it cannot stay in place (the caller moves it);
 * ERR_UNSUPPORTED in ring mode. *desc_p gets the updated descriptor. */
util_status_t rmalloc_vmem_realloc(rmalloc_vmem_t *vmem, const raddr_t *desc, uint64_t payload,
                                   raddr_t *desc_p);

/* Marks [start, start + units) allocated; it must lie inside one free block
 * (ERR_INVALID otherwise). Used to apply a peer's allocation. peer_id and
 * peer_block are stored for rmalloc_vmem_peer(). Not in ring mode. */
util_status_t rmalloc_vmem_claim(rmalloc_vmem_t *vmem, uint64_t start, uint64_t units,
                                 uint64_t payload, uint64_t peer_id, uint32_t peer_block,
                                 raddr_t *desc_p);

/* The peer id / block stored by rmalloc_vmem_claim() for a live allocation. */
util_status_t rmalloc_vmem_peer(const rmalloc_vmem_t *vmem, const raddr_t *desc,
                                uint64_t *peer_id_p, uint32_t *peer_block_p);
/* Replaces them (a claim made before the peer's names were known). */
util_status_t rmalloc_vmem_set_peer(rmalloc_vmem_t *vmem, const raddr_t *desc, uint64_t peer_id,
                                    uint32_t peer_block);

/* Ring mode: units released in allocation order since the last call (freed
 * blocks at the tail, plus dummies they uncover). */
uint64_t rmalloc_vmem_ring_take_released(rmalloc_vmem_t *vmem);

/* Ring mode, shadow side: retires `units` from the tail in allocation order
 * (the peer released them). ERR_INVALID if units does not end on a block
 * boundary or exceeds what is live; nothing changes then. */
util_status_t rmalloc_vmem_ring_retire(rmalloc_vmem_t *vmem, uint64_t units);

/* Local pointer of an allocation, NULL for a shadow or a null descriptor. */
void *rmalloc_vmem_ptr(const rmalloc_vmem_t *vmem, const raddr_t *desc);

/* Units in the region and units allocated (a ring's dummies included, except
 * in ring-first mode, which counts as its general instance would). */
uint64_t rmalloc_vmem_total_units(const rmalloc_vmem_t *vmem);
uint64_t rmalloc_vmem_used_units(const rmalloc_vmem_t *vmem);
/* Live allocations (dummies excluded). */
uint64_t rmalloc_vmem_live_count(const rmalloc_vmem_t *vmem);
/* log2 of the unit. */
unsigned rmalloc_vmem_unit_shift(const rmalloc_vmem_t *vmem);
/* Units an allocation of `payload` bytes takes (0 if too large). */
uint64_t rmalloc_vmem_units_for(const rmalloc_vmem_t *vmem, uint64_t payload);
/* The ring an unaligned allocation of `payload` bytes is placed in first
 * (a ring instance, or a ring-first one still in its ring), with the units
 * it takes in *units_p; NULL when there is none or the size is invalid.
 * rmalloc_ring_alloc_inl() there places it exactly as rmalloc_vmem_alloc()
 * would; where the ring refuses, rmalloc_vmem_alloc() decides. */
struct rmalloc_ring *rmalloc_vmem_ring_for(const rmalloc_vmem_t *vmem, uint64_t payload,
                                           uint64_t *units_p);

/* Calls fn for every block in address order (for tests and debugging). */
void rmalloc_vmem_walk(const rmalloc_vmem_t *vmem,
                       void (*fn)(const rmalloc_block_info_t *block, void *arg), void *arg);

/* For instance modes that keep only their allocations (ring, claims): sorts
 * blocks[0..n) by address and calls fn for each, with the free gaps between
 * them and up to `total` units. */
void rmalloc_walk_sorted(rmalloc_block_info_t *blocks, uint64_t n, uint64_t total,
                         void (*fn)(const rmalloc_block_info_t *block, void *arg), void *arg);

/* Checks every internal invariant (blocks tile the region, no two free
 * blocks adjacent, size classes, tree order and sizes, counters).
 * UTIL_OK or ERR_STATE with one error line naming the broken invariant. */
util_status_t rmalloc_vmem_check(const rmalloc_vmem_t *vmem);

#endif
