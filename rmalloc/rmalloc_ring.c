/*
 * Ring-mode allocator instance: allocations in a FIFO, nothing else (see
 * rmalloc_ring.h for why that is enough).
 */
#include "rmalloc/rmalloc_ring_inl.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

util_status_t rmalloc_ring_create(uint64_t total_units, unsigned unit_shift, uint64_t stamp,
                                  rmalloc_ring_t **ring_p)
{
    rmalloc_ring_t *ring = calloc(1, sizeof(*ring));

    if (ring == NULL || (ring->fifo = malloc(64 * sizeof(*ring->fifo))) == NULL) {
        free(ring);
        util_error("rmalloc: cannot allocate a ring instance");
        return UTIL_ERR_NO_MEMORY;
    }
    ring->mask = 63;
    ring->total = total_units;
    ring->shift = unit_shift;
    ring->stamp = stamp;
    ring->dummy_seq = UINT64_MAX;
    *ring_p = ring;
    return UTIL_OK;
}

void rmalloc_ring_destroy(rmalloc_ring_t *ring)
{
    if (ring != NULL) {
        free(ring->fifo);
        free(ring);
    }
}

util_status_t rmalloc_ring_grow(rmalloc_ring_t *ring)
{
    uint64_t cap = (ring->mask + 1) * 2;
    rmalloc_ring_ent_t *fifo = malloc(cap * sizeof(*fifo));

    if (fifo == NULL) {
        util_error("rmalloc: cannot grow the ring FIFO to %llu entries", (unsigned long long)cap);
        return UTIL_ERR_NO_MEMORY;
    }
    for (uint64_t s = ring->head; s != ring->tail; s++)
        fifo[s & (cap - 1)] = ring->fifo[s & ring->mask];
    free(ring->fifo);
    ring->fifo = fifo;
    ring->mask = cap - 1;
    return UTIL_OK;
}

util_status_t rmalloc_ring_alloc(rmalloc_ring_t *ring, uint64_t units, uint64_t align_units,
                                 uint64_t payload, raddr_t *desc_p)
{
    return rmalloc_ring_alloc_inl(ring, units, align_units, payload, desc_p);
}

util_status_t rmalloc_ring_lookup(const rmalloc_ring_t *ring, const raddr_t *desc)
{
    return rmalloc_ring_find(ring, desc) != NULL ? UTIL_OK : UTIL_ERR_INVALID;
}

/* The counters a release moves, kept in locals over a run of releases:
 * stores to entries may alias the ring's own fields, so the compiler would
 * reload each one per entry. */
typedef struct {
    uint64_t head, used, released;
} ring_pos_t;

/* Releases e, then pops the released entries at the head: units count as
 * released in allocation order only (Alg. 6/7). */
static inline void ring_release_at(rmalloc_ring_ent_t *fifo, uint64_t mask, uint64_t tail,
                                   ring_pos_t *p, rmalloc_ring_ent_t *e)
{
    e->state = RMALLOC_RING_ENT_RELEASED;
    p->used -= e->units;
    while (p->head != tail) {
        e = &fifo[p->head & mask];
        if (e->state == RMALLOC_RING_ENT_ALLOC) break;
        if (e->state == RMALLOC_RING_ENT_DUMMY) p->used -= e->units;
        p->released += e->units;
        p->head++;
    }
}

static inline void ring_release(rmalloc_ring_t *ring, rmalloc_ring_ent_t *e)
{
    ring_pos_t p = {ring->head, ring->used, ring->released};

    ring_release_at(ring->fifo, ring->mask, ring->tail, &p, e);
    ring->head = p.head;
    ring->used = p.used;
    ring->released = p.released;
    ring->live--;
}

util_status_t rmalloc_ring_free(rmalloc_ring_t *ring, const raddr_t *desc)
{
    rmalloc_ring_ent_t *e = rmalloc_ring_find(ring, desc);

    if (e == NULL) {
        util_debug("rmalloc: free of a descriptor this ring did not issue or already freed");
        return UTIL_ERR_INVALID;
    }
    ring_release(ring, e);
    return UTIL_OK;
}

util_status_t rmalloc_ring_free_oldest(rmalloc_ring_t *ring, const raddr_t *desc)
{
    return rmalloc_ring_free_oldest_n(ring, desc, 1) == 1 ? UTIL_OK : UTIL_ERR_NO_RESOURCE;
}

size_t rmalloc_ring_free_oldest_n(rmalloc_ring_t *ring, const raddr_t *descs, size_t n)
{
    rmalloc_ring_ent_t *fifo = ring->fifo;
    uint64_t mask = ring->mask, tail = ring->tail;
    ring_pos_t p = {ring->head, ring->used, ring->released};
    size_t k;

    for (k = 0; k < n; k++) {
        const raddr_t *desc = &descs[k];

        /* After a release the head is an allocation; only a wrap into an
         * empty ring leaves a dummy in front of one. */
        uint64_t s = p.head;
        while (s != tail && fifo[s & mask].state == RMALLOC_RING_ENT_DUMMY) s++;
        rmalloc_ring_ent_t *e = &fifo[s & mask];
        if (s == tail || (uint32_t)s != desc->block || e->id != desc->id ||
            e->start != desc->start || e->start + e->units != desc->end)
            break;
        ring_release_at(fifo, mask, tail, &p, e);
    }
    ring->head = p.head;
    ring->used = p.used;
    ring->released = p.released;
    ring->live -= k;
    return k;
}

/* The dummy behind the last wrap while it is in the FIFO, or NULL. One wrap
 * at a time: the cursor cannot pass the oldest entry, which is older than
 * the dummy, so a second dummy waits for the first to go. */
static const rmalloc_ring_ent_t *live_dummy(const rmalloc_ring_t *ring)
{
    uint64_t d = ring->dummy_seq;

    if (d == UINT64_MAX || d < ring->head || d >= ring->tail ||
        ring->fifo[d & ring->mask].state != RMALLOC_RING_ENT_DUMMY)
        return NULL;
    return &ring->fifo[d & ring->mask];
}

uint64_t rmalloc_ring_spare_units(const rmalloc_ring_t *ring)
{
    const rmalloc_ring_ent_t *d = live_dummy(ring);

    if (d == NULL) return 0;
    if (d == &ring->fifo[ring->head & ring->mask]) /* nothing older: one gap to the end */
        return ring->total - ring->cursor;
    return d->units;
}

uint64_t rmalloc_ring_dummy_units(const rmalloc_ring_t *ring)
{
    const rmalloc_ring_ent_t *d = live_dummy(ring);

    return (d != NULL) ? d->units : 0;
}

void rmalloc_ring_export(const rmalloc_ring_t *ring,
                         void (*fn)(const rmalloc_ring_entry_t *entry, void *arg), void *arg,
                         uint64_t *cursor_p, uint64_t *seq_p)
{
    for (uint64_t s = ring->head; s != ring->tail; s++) {
        const rmalloc_ring_ent_t *e = &ring->fifo[s & ring->mask];
        if (e->state != RMALLOC_RING_ENT_RELEASED) {
            rmalloc_ring_entry_t out = {s, e->start, e->units, e->id, (int)e->state};
            fn(&out, arg);
        }
    }
    *cursor_p = ring->cursor;
    *seq_p = ring->seq;
}

uint64_t rmalloc_ring_take_released(rmalloc_ring_t *ring)
{
    uint64_t r = ring->released;
    ring->released = 0;
    return r;
}

util_status_t rmalloc_ring_retire(rmalloc_ring_t *ring, uint64_t units)
{
    uint64_t sum = 0, s;

    for (s = ring->head; s != ring->tail && sum < units; s++)
        sum += ring->fifo[s & ring->mask].units;
    if (sum != units) {
        util_error("rmalloc: peer released %llu units, not a block boundary of this ring",
                   (unsigned long long)units);
        return UTIL_ERR_INVALID;
    }
    for (; ring->head != s; ring->head++) {
        const rmalloc_ring_ent_t *e = &ring->fifo[ring->head & ring->mask];
        if (e->state == RMALLOC_RING_ENT_ALLOC) ring->live--;
        if (e->state != RMALLOC_RING_ENT_RELEASED) ring->used -= e->units;
    }
    return UTIL_OK;
}

uint64_t rmalloc_ring_used_units(const rmalloc_ring_t *ring)
{
    return ring->used;
}

uint64_t rmalloc_ring_live_count(const rmalloc_ring_t *ring)
{
    return ring->live;
}

void rmalloc_ring_walk(const rmalloc_ring_t *ring,
                       void (*fn)(const rmalloc_block_info_t *block, void *arg), void *arg)
{
    uint64_t n = 0;
    rmalloc_block_info_t *blocks = malloc((ring->tail - ring->head + 1) * sizeof(*blocks));

    if (blocks == NULL) {
        util_error("rmalloc: no memory to walk a ring");
        return;
    }
    for (uint64_t s = ring->head; s != ring->tail; s++) {
        const rmalloc_ring_ent_t *e = &ring->fifo[s & ring->mask];
        if (e->state != RMALLOC_RING_ENT_RELEASED)
            blocks[n++] = (rmalloc_block_info_t){e->start, e->start + e->units, (int)e->state};
    }
    rmalloc_walk_sorted(blocks, n, ring->total, fn, arg);
    free(blocks);
}

#define CHECK_(_cond, ...)                                                                         \
    do {                                                                                           \
        if (!(_cond)) {                                                                            \
            util_error("rmalloc ring check: " __VA_ARGS__);                                        \
            return UTIL_ERR_STATE;                                                                 \
        }                                                                                          \
    } while (0)

util_status_t rmalloc_ring_check(const rmalloc_ring_t *ring)
{
    uint64_t used = 0, live = 0, span = 0, end = 0;

    CHECK_(ring->tail - ring->head <= ring->mask + 1, "FIFO overflow");
    CHECK_(ring->cursor <= ring->total, "cursor %llu past the region",
           (unsigned long long)ring->cursor);
    for (uint64_t s = ring->head; s != ring->tail; s++) {
        const rmalloc_ring_ent_t *e = &ring->fifo[s & ring->mask];
        CHECK_(e->units > 0 && e->from <= e->start && e->start + e->units <= ring->total,
               "entry %llu out of the region", (unsigned long long)s);
        if (s != ring->head)
            CHECK_(e->from == end || (e->from == 0 && end == ring->total),
                   "entry %llu does not follow its predecessor", (unsigned long long)s);
        CHECK_(s != ring->head || e->state != RMALLOC_RING_ENT_RELEASED,
               "released entry at the head");
        span += e->start + e->units - e->from;
        end = e->start + e->units;
        if (e->state != RMALLOC_RING_ENT_RELEASED) used += e->units;
        live += (e->state == RMALLOC_RING_ENT_ALLOC);
    }
    CHECK_(ring->head == ring->tail || end == ring->cursor, "cursor is not after the newest block");
    CHECK_(span <= ring->total, "ring holds %llu of %llu units", (unsigned long long)span,
           (unsigned long long)ring->total);
    CHECK_(used == ring->used, "used units %llu, counted %llu", (unsigned long long)ring->used,
           (unsigned long long)used);
    CHECK_(live == ring->live, "live count %llu, counted %llu", (unsigned long long)ring->live,
           (unsigned long long)live);
    return UTIL_OK;
}
