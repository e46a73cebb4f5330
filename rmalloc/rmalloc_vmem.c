/*
 * rmalloc allocator instance: block records kept out of band (so shadows
 * work), address-neighbour links on every block, segregated size classes
 * and an address-ordered treap (max-size augmented) over the free blocks.
 */
#include "rmalloc/rmalloc_vmem.h"
#include "rmalloc/rmalloc_claims.h"
#include "rmalloc/rmalloc_ring_inl.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NIL              UINT32_MAX
#define SL_BITS          3
#define SL_COUNT         (1u << SL_BITS)
#define FL_COUNT         64
#define CLASS_COUNT      (FL_COUNT * SL_COUNT)
#define MAX_REGION_UNITS (UINT64_C(1) << 40)
#define SCAN_LIMIT       32 /* entries looked at inside one size class */
#define HOT              static inline __attribute__((always_inline))

enum {
    BLK_UNUSED = 0,
    BLK_FREE = RMALLOC_BLOCK_FREE,
    BLK_ALLOC = RMALLOC_BLOCK_ALLOC,
    BLK_DUMMY = RMALLOC_BLOCK_DUMMY
};

/* One block record: exactly one 64-byte cache line. */
typedef struct {
    uint64_t start, units;
    uint32_t prev, next; /* address order, every block */
    uint16_t state;
    uint16_t cls; /* size class while free */
    uint32_t pad_;
    union {
        struct { /* free: class list and treap */
            uint32_t bprev, bnext;
            uint32_t left, right, parent, prio;
            uint64_t max; /* largest units in the subtree */
        } f;
        struct { /* allocated or dummy */
            uint64_t id, peer_id, payload;
            uint32_t peer_block;
            uint32_t pad_;
        } a;
    } u;
} blk_t;

_Static_assert(sizeof(blk_t) == 64, "a block record is one cache line");

struct rmalloc_vmem {
    blk_t *blk;
    uint32_t cap, unused_head, unused_count;
    uint32_t root, first;
    int tree;    /* the address tree is maintained */
    int classes; /* the size classes are maintained */
    uint32_t bins[CLASS_COUNT];
    uint64_t fl_map;
    uint8_t sl_map[FL_COUNT];
    uint64_t total, used, live;
    uint8_t *base;
    unsigned shift;
    rmalloc_heuristic_t heuristic;
    unsigned flags;
    uint32_t header_bytes;
    uint64_t cursor;     /* next-fit position (units) */
    uint32_t cursor_blk; /* hint: block starting at the cursor */
    uint64_t rng;
    uint64_t stamp, seq;
    rmalloc_ring_t *ring;             /* ring mode: everything is there */
    rmalloc_claims_t *claims;         /* claims mode: likewise */
    int ring_first;                   /* ring-first mode (still a ring while ring != NULL) */
    uint32_t *legacy;                 /* ring-first, after the ring: FIFO sequence -> record */
    uint32_t legacy_head, legacy_n;   /* of descriptors the ring issued */
    uint64_t legacy_seq, legacy_live; /* their largest id sequence; how many live */
};

#define SEQ_MASK ((UINT64_C(1) << 40) - 1)

static const char *heuristic_names[RMALLOC_HEURISTIC_COUNT] = {"first-fit", "next-fit", "best-fit",
                                                               "worst-fit", "random-fit"};

static uint64_t vmem_stamp_counter;

const char *rmalloc_heuristic_name(rmalloc_heuristic_t heuristic)
{
    return ((unsigned)heuristic < RMALLOC_HEURISTIC_COUNT) ? heuristic_names[heuristic] : "?";
}

util_status_t rmalloc_heuristic_parse(const char *text, rmalloc_heuristic_t *heuristic_p)
{
    static const char *short_names[RMALLOC_HEURISTIC_COUNT] = {"first", "next", "best", "worst",
                                                               "random"};
    for (unsigned i = 0; i < RMALLOC_HEURISTIC_COUNT; i++) {
        if (!strcasecmp(text, short_names[i]) || !strcasecmp(text, heuristic_names[i])) {
            *heuristic_p = (rmalloc_heuristic_t)i;
            return UTIL_OK;
        }
    }
    util_error("unknown rmalloc heuristic '%s' (first, next, best, worst, random)", text);
    return UTIL_ERR_INVALID;
}

static inline uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*: cheap and deterministic for a given seed. */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * UINT64_C(2685821657736338717);
}

/* ---- size classes ------------------------------------------------------ */

static inline unsigned cls_of(uint64_t s)
{
    if (s < SL_COUNT) return (unsigned)s;
    unsigned l = 63u - (unsigned)__builtin_clzll(s);
    return (l - SL_BITS + 1) * SL_COUNT + ((unsigned)(s >> (l - SL_BITS)) & (SL_COUNT - 1));
}

/* Smallest class whose every block holds at least s units. */
static inline unsigned cls_ceil(uint64_t s)
{
    if (s < SL_COUNT) return (unsigned)s;
    unsigned l = 63u - (unsigned)__builtin_clzll(s);
    return cls_of(s + ((UINT64_C(1) << (l - SL_BITS)) - 1));
}

static inline void bin_insert(rmalloc_vmem_t *vm, uint32_t i)
{
    if (!vm->classes) return;
    blk_t *b = &vm->blk[i];
    unsigned c = cls_of(b->units);
    b->cls = (uint16_t)c;
    b->u.f.bprev = NIL;
    b->u.f.bnext = vm->bins[c];
    if (vm->bins[c] != NIL) vm->blk[vm->bins[c]].u.f.bprev = i;
    vm->bins[c] = i;
    vm->fl_map |= UINT64_C(1) << (c / SL_COUNT);
    vm->sl_map[c / SL_COUNT] |= (uint8_t)(1u << (c % SL_COUNT));
}

static inline void bin_remove(rmalloc_vmem_t *vm, uint32_t i)
{
    if (!vm->classes) return;
    blk_t *b = &vm->blk[i];
    unsigned c = b->cls;
    if (b->u.f.bprev != NIL)
        vm->blk[b->u.f.bprev].u.f.bnext = b->u.f.bnext;
    else
        vm->bins[c] = b->u.f.bnext;
    if (b->u.f.bnext != NIL) vm->blk[b->u.f.bnext].u.f.bprev = b->u.f.bprev;
    if (vm->bins[c] == NIL) {
        vm->sl_map[c / SL_COUNT] &= (uint8_t) ~(1u << (c % SL_COUNT));
        if (!vm->sl_map[c / SL_COUNT]) vm->fl_map &= ~(UINT64_C(1) << (c / SL_COUNT));
    }
}

/* After a free block's size changed: move it if its class changed. */
HOT void bin_reclass(rmalloc_vmem_t *vm, uint32_t i)
{
    if (vm->classes && cls_of(vm->blk[i].units) != vm->blk[i].cls) {
        bin_remove(vm, i);
        bin_insert(vm, i);
    }
}

/* First non-empty class >= c, or NIL. */
static inline uint32_t bin_find(const rmalloc_vmem_t *vm, unsigned c)
{
    unsigned fl = c / SL_COUNT;
    if (fl >= FL_COUNT) return NIL;
    unsigned sl_map = vm->sl_map[fl] & (0xffu << (c % SL_COUNT));
    if (!sl_map) {
        uint64_t fl_map = (fl + 1 < FL_COUNT) ? vm->fl_map & (~UINT64_C(0) << (fl + 1)) : 0;
        if (!fl_map) return NIL;
        fl = (unsigned)__builtin_ctzll(fl_map);
        sl_map = vm->sl_map[fl];
    }
    return vm->bins[fl * SL_COUNT + (unsigned)__builtin_ctz(sl_map)];
}

/* ---- address-ordered treap over free blocks ----------------------------- */

static inline uint64_t t_max(const rmalloc_vmem_t *vm, uint32_t i)
{
    return (i == NIL) ? 0 : vm->blk[i].u.f.max;
}

static inline void t_update(rmalloc_vmem_t *vm, uint32_t i)
{
    blk_t *b = &vm->blk[i];
    uint64_t m = b->units, l = t_max(vm, b->u.f.left), r = t_max(vm, b->u.f.right);
    if (l > m) m = l;
    if (r > m) m = r;
    b->u.f.max = m;
}

/* Recomputes maxima from i upwards, stopping once nothing changes. */
HOT void t_fix_up(rmalloc_vmem_t *vm, uint32_t i)
{
    while (i != NIL) {
        uint64_t old = vm->blk[i].u.f.max;
        t_update(vm, i);
        if (vm->blk[i].u.f.max == old) return;
        i = vm->blk[i].u.f.parent;
    }
}

static inline void t_replace_child(rmalloc_vmem_t *vm, uint32_t parent, uint32_t old, uint32_t new_)
{
    if (parent == NIL)
        vm->root = new_;
    else if (vm->blk[parent].u.f.left == old)
        vm->blk[parent].u.f.left = new_;
    else
        vm->blk[parent].u.f.right = new_;
}

/* Rotates x above its parent. */
static void t_rotate_up(rmalloc_vmem_t *vm, uint32_t x)
{
    blk_t *bx = &vm->blk[x];
    uint32_t p = bx->u.f.parent;
    blk_t *bp = &vm->blk[p];
    uint32_t g = bp->u.f.parent;
    if (bp->u.f.left == x) {
        bp->u.f.left = bx->u.f.right;
        if (bx->u.f.right != NIL) vm->blk[bx->u.f.right].u.f.parent = p;
        bx->u.f.right = p;
    } else {
        bp->u.f.right = bx->u.f.left;
        if (bx->u.f.left != NIL) vm->blk[bx->u.f.left].u.f.parent = p;
        bx->u.f.left = p;
    }
    bp->u.f.parent = x;
    bx->u.f.parent = g;
    t_replace_child(vm, g, p, x);
    t_update(vm, p);
    t_update(vm, x);
}

static void t_insert(rmalloc_vmem_t *vm, uint32_t i)
{
    blk_t *b = &vm->blk[i];
    uint32_t p = NIL, x = vm->root;
    b->u.f.left = b->u.f.right = NIL;
    b->u.f.prio = (uint32_t)rng_next(&vm->rng);
    b->u.f.max = b->units;
    while (x != NIL) {
        p = x;
        x = (b->start < vm->blk[x].start) ? vm->blk[x].u.f.left : vm->blk[x].u.f.right;
    }
    b->u.f.parent = p;
    if (p == NIL)
        vm->root = i;
    else if (b->start < vm->blk[p].start)
        vm->blk[p].u.f.left = i;
    else
        vm->blk[p].u.f.right = i;
    while (vm->blk[i].u.f.parent != NIL &&
           vm->blk[i].u.f.prio > vm->blk[vm->blk[i].u.f.parent].u.f.prio)
        t_rotate_up(vm, i);
    t_fix_up(vm, vm->blk[i].u.f.parent);
}

static void t_remove(rmalloc_vmem_t *vm, uint32_t i)
{
    for (;;) {
        blk_t *b = &vm->blk[i];
        uint32_t l = b->u.f.left, r = b->u.f.right;
        if (l == NIL && r == NIL) break;
        if (r == NIL || (l != NIL && vm->blk[l].u.f.prio > vm->blk[r].u.f.prio))
            t_rotate_up(vm, l);
        else
            t_rotate_up(vm, r);
    }
    uint32_t p = vm->blk[i].u.f.parent;
    t_replace_child(vm, p, i, NIL);
    t_fix_up(vm, p);
}

/* Free block containing unit u, or NIL (the tree must be on). */
static uint32_t t_containing(const rmalloc_vmem_t *vm, uint64_t u)
{
    uint32_t x = vm->root, best = NIL;
    while (x != NIL) {
        if (vm->blk[x].start <= u) {
            best = x;
            x = vm->blk[x].u.f.right;
        } else {
            x = vm->blk[x].u.f.left;
        }
    }
    if (best != NIL && vm->blk[best].start + vm->blk[best].units > u) return best;
    return NIL;
}

/* Lowest-address free block with start >= lo and at least need units. */
static uint32_t t_first_from(const rmalloc_vmem_t *vm, uint32_t x, uint64_t need, uint64_t lo)
{
    while (x != NIL && vm->blk[x].u.f.max >= need) {
        const blk_t *b = &vm->blk[x];
        if (b->start >= lo) {
            uint32_t r = t_first_from(vm, b->u.f.left, need, lo);
            if (r != NIL) return r;
            if (b->units >= need) return x;
        }
        x = b->u.f.right;
    }
    return NIL;
}

/* ---- block records ----------------------------------------------------- */

static util_status_t blk_reserve(rmalloc_vmem_t *vm, unsigned count)
{
    if (vm->unused_count >= count) return UTIL_OK;
    if (vm->cap >= NIL / 2) {
        util_error("rmalloc: too many blocks (%u)", vm->cap);
        return UTIL_ERR_NO_MEMORY;
    }
    uint32_t new_cap = vm->cap ? vm->cap * 2 : 64;
    blk_t *blk;
    if (posix_memalign((void **)&blk, 64, (size_t)new_cap * sizeof(*blk))) {
        util_error("rmalloc: cannot grow block table to %u entries", new_cap);
        return UTIL_ERR_NO_MEMORY;
    }
    if (vm->cap) memcpy(blk, vm->blk, (size_t)vm->cap * sizeof(*blk));
    free(vm->blk);
    for (uint32_t i = new_cap; i-- > vm->cap;) {
        blk[i].state = BLK_UNUSED;
        blk[i].next = vm->unused_head;
        vm->unused_head = i;
    }
    vm->unused_count += new_cap - vm->cap;
    vm->blk = blk;
    vm->cap = new_cap;
    return UTIL_OK;
}

/* Takes a reserved record (blk_reserve() was called: never reallocates). */
static inline uint32_t blk_new(rmalloc_vmem_t *vm)
{
    uint32_t i = vm->unused_head;
    vm->unused_head = vm->blk[i].next;
    vm->unused_count--;
    return i;
}

static inline void blk_release(rmalloc_vmem_t *vm, uint32_t i)
{
    blk_t *b = &vm->blk[i];
    if (b->prev != NIL)
        vm->blk[b->prev].next = b->next;
    else
        vm->first = b->next;
    if (b->next != NIL) vm->blk[b->next].prev = b->prev;
    b->state = BLK_UNUSED;
    b->next = vm->unused_head;
    vm->unused_head = i;
    vm->unused_count++;
}

/* Links record n into the address list right after record after. */
static inline void blk_link_after(rmalloc_vmem_t *vm, uint32_t after, uint32_t n)
{
    blk_t *a = &vm->blk[after], *b = &vm->blk[n];
    b->prev = after;
    b->next = a->next;
    if (a->next != NIL) vm->blk[a->next].prev = n;
    a->next = n;
}

static inline void blk_link_before(rmalloc_vmem_t *vm, uint32_t before, uint32_t n)
{
    blk_t *a = &vm->blk[before], *b = &vm->blk[n];
    b->next = before;
    b->prev = a->prev;
    if (a->prev != NIL)
        vm->blk[a->prev].next = n;
    else
        vm->first = n;
    a->prev = n;
}

static inline void free_insert(rmalloc_vmem_t *vm, uint32_t i)
{
    vm->blk[i].state = BLK_FREE;
    bin_insert(vm, i);
    if (vm->tree) t_insert(vm, i);
}

static inline void free_remove(rmalloc_vmem_t *vm, uint32_t i)
{
    bin_remove(vm, i);
    if (vm->tree) t_remove(vm, i);
}

/* The address tree costs O(log n) per change, so instances that never
 * search by address (best/worst/random-fit without claims) do without it;
 * the first address lookup builds it and it is maintained from then on. */
static void tree_enable(rmalloc_vmem_t *vm)
{
    if (vm->tree) return;
    vm->tree = 1;
    for (uint32_t i = vm->first; i != NIL; i = vm->blk[i].next)
        if (vm->blk[i].state == BLK_FREE) t_insert(vm, i);
}

/* A free block's size changed in place (its order is unchanged). */
HOT void free_resized(rmalloc_vmem_t *vm, uint32_t i)
{
    bin_reclass(vm, i);
    if (vm->tree) t_fix_up(vm, i);
}

/* Cuts [s, s + n) out of free block f (two records reserved) and returns the
 * new allocated record. The free remainders keep their place in the tree. */
HOT uint32_t carve(rmalloc_vmem_t *vm, uint32_t f, uint64_t s, uint64_t n, uint32_t state)
{
    blk_t *bf = &vm->blk[f];
    uint64_t front = s - bf->start;
    uint64_t back = bf->start + bf->units - (s + n);
    uint32_t a;

    if (front == 0 && back == 0) {
        free_remove(vm, f);
        a = f;
    } else if (front == 0) {
        a = blk_new(vm);
        bf = &vm->blk[f];
        blk_link_before(vm, f, a);
        bf->start += n;
        bf->units -= n;
        free_resized(vm, f);
    } else {
        a = blk_new(vm);
        bf = &vm->blk[f];
        blk_link_after(vm, f, a);
        bf->units = front;
        free_resized(vm, f);
        if (back) {
            uint32_t c = blk_new(vm);
            vm->blk[c].start = s + n;
            vm->blk[c].units = back;
            blk_link_after(vm, a, c);
            free_insert(vm, c);
        }
    }
    blk_t *ba = &vm->blk[a];
    ba->start = s;
    ba->units = n;
    ba->state = (uint16_t)state;
    ba->u.a.id = (vm->stamp << 40) | (++vm->seq & ((UINT64_C(1) << 40) - 1));
    ba->u.a.peer_id = 0;
    ba->u.a.peer_block = NIL;
    ba->u.a.payload = 0;
    vm->used += n;
    return a;
}

/* Returns allocated/dummy record i to the free space, coalescing. */
HOT void release_block(rmalloc_vmem_t *vm, uint32_t i)
{
    blk_t *b = &vm->blk[i];
    uint32_t p = b->prev, n = b->next;
    int pf = (p != NIL && vm->blk[p].state == BLK_FREE);
    int nf = (n != NIL && vm->blk[n].state == BLK_FREE);
    uint64_t size = b->units;

    vm->used -= size;
    if (vm->cursor_blk == i) vm->cursor_blk = NIL;
    if (pf && nf) {
        uint64_t nsize = vm->blk[n].units;
        free_remove(vm, n);
        if (vm->cursor_blk == n) vm->cursor_blk = NIL;
        blk_release(vm, n);
        blk_release(vm, i);
        vm->blk[p].units += size + nsize;
        free_resized(vm, p);
    } else if (pf) {
        blk_release(vm, i);
        vm->blk[p].units += size;
        free_resized(vm, p);
    } else if (nf) {
        blk_release(vm, i);
        vm->blk[n].start -= size;
        vm->blk[n].units += size;
        if (vm->cursor_blk == n) vm->cursor_blk = NIL;
        free_resized(vm, n);
    } else {
        free_insert(vm, i);
    }
}

static inline void fill_desc(const rmalloc_vmem_t *vm, uint32_t i, raddr_t *d)
{
    const blk_t *b = &vm->blk[i];
    d->start = b->start;
    d->end = b->start + b->units;
    d->id = b->u.a.id;
    d->wrap_from = 0;
    d->payload = b->u.a.payload;
    d->block = i;
    d->unit_shift = (uint16_t)vm->shift;
    d->flags = 0;
}

/* Record of a live allocation described by d, or NIL. A descriptor that a
 * ring-first instance's ring issued names its FIFO sequence, not a record. */
HOT uint32_t lookup(const rmalloc_vmem_t *vm, const raddr_t *d)
{
    uint32_t i = d->block;

    if (__builtin_expect(vm->legacy != NULL, 0) && (d->id & SEQ_MASK) <= vm->legacy_seq) {
        uint32_t off = d->block - vm->legacy_head;
        i = (off < vm->legacy_n) ? vm->legacy[off] : NIL;
    }
    if (i >= vm->cap || d->id == 0) return NIL;
    const blk_t *b = &vm->blk[i];
    if (b->state != BLK_ALLOC || b->u.a.id != d->id || b->start != d->start ||
        b->start + b->units != d->end)
        return NIL;
    return i;
}

/* The allocation d names (lookup(d) found it) is freed or gets a new id: if
 * d is a ring descriptor, it is no longer mapped (returns 1). The table goes
 * once none is left. */
static int legacy_forget(rmalloc_vmem_t *vm, const raddr_t *d)
{
    if (vm->legacy == NULL || (d->id & SEQ_MASK) > vm->legacy_seq) return 0;
    vm->legacy[d->block - vm->legacy_head] = NIL;
    if (--vm->legacy_live == 0) {
        free(vm->legacy);
        vm->legacy = NULL;
    }
    return 1;
}

/* ---- ring-first: leaving the ring --------------------------------------- */

typedef struct {
    rmalloc_vmem_t *vm;
    uint64_t head, n; /* FIFO sequences [head, head + n) */
} leave_t;

static void leave_count(const rmalloc_ring_entry_t *e, void *arg)
{
    leave_t *l = arg;

    if (l->n == 0) l->head = e->seq;
    l->n = e->seq - l->head + 1;
}

/* Every live allocation of the ring gets a block record at its place, with
 * its id (the blocks were reserved); dummies become free space. */
static void leave_one(const rmalloc_ring_entry_t *e, void *arg)
{
    leave_t *l = arg;
    rmalloc_vmem_t *vm = l->vm;

    if (e->state != RMALLOC_BLOCK_ALLOC) return;
    uint32_t a = carve(vm, t_containing(vm, e->start), e->start, e->units, BLK_ALLOC);
    vm->blk[a].u.a.id = e->id;
    vm->live++;
    vm->legacy[e->seq - l->head] = a;
    vm->legacy_live++;
}

/* Turns a ring-first instance still in its ring into the general instance
 * (O(live), once). NO_MEMORY leaves it a ring. */
static util_status_t leave_ring(rmalloc_vmem_t *vm)
{
    leave_t l = {vm, 0, 0};
    uint64_t cursor, seq;

    rmalloc_ring_export(vm->ring, leave_count, &l, &cursor, &seq);
    if (l.n > 0) {
        vm->legacy = malloc(l.n * sizeof(*vm->legacy));
        while (vm->legacy != NULL && vm->unused_count < 2 * l.n + 4)
            if (blk_reserve(vm, (unsigned)(2 * l.n + 4)) != UTIL_OK) break;
        if (vm->legacy == NULL || vm->unused_count < 2 * l.n + 4) {
            free(vm->legacy);
            vm->legacy = NULL;
            util_error("rmalloc: no memory to turn a ring of %llu entries into an instance",
                       (unsigned long long)l.n);
            return UTIL_ERR_NO_MEMORY;
        }
        for (uint64_t k = 0; k < l.n; k++) vm->legacy[k] = NIL;
        vm->legacy_head = (uint32_t)l.head;
        vm->legacy_n = (uint32_t)l.n;
        rmalloc_ring_export(vm->ring, leave_one, &l, &cursor, &seq);
    }
    vm->seq = seq; /* new ids follow the ring's */
    vm->legacy_seq = seq & SEQ_MASK;
    if (vm->legacy != NULL && vm->legacy_live == 0) {
        free(vm->legacy);
        vm->legacy = NULL;
    }
    vm->cursor = (cursor >= vm->total) ? 0 : cursor;
    vm->cursor_blk = NIL;
    rmalloc_ring_destroy(vm->ring);
    vm->ring = NULL;
    return UTIL_OK;
}

/* ---- public ------------------------------------------------------------- */

util_status_t rmalloc_vmem_create(const rmalloc_vmem_config_t *config, rmalloc_vmem_t **vmem_p)
{
    util_status_t status;
    rmalloc_vmem_t *vm;

    if (config == NULL || vmem_p == NULL || config->unit == 0 ||
        (config->unit & (config->unit - 1)) ||
        (unsigned)config->heuristic >= RMALLOC_HEURISTIC_COUNT) {
        util_error("rmalloc: invalid instance configuration");
        return UTIL_ERR_INVALID;
    }
    uint64_t total = config->size / config->unit;
    if (total == 0 || total > MAX_REGION_UNITS) {
        util_error("rmalloc: region of %llu bytes with unit %llu holds %llu units (1..2^40)",
                   (unsigned long long)config->size, (unsigned long long)config->unit,
                   (unsigned long long)total);
        return UTIL_ERR_INVALID;
    }
    if ((config->flags & RMALLOC_VMEM_RING) && config->heuristic != RMALLOC_NEXT_FIT) {
        util_error("rmalloc: ring mode needs the next-fit heuristic");
        return UTIL_ERR_INVALID;
    }

    vm = calloc(1, sizeof(*vm));
    if (vm == NULL) {
        util_error("rmalloc: cannot allocate an instance");
        return UTIL_ERR_NO_MEMORY;
    }
    vm->unused_head = NIL;
    vm->root = NIL;
    vm->cursor_blk = NIL;
    vm->total = total;
    vm->base = config->base;
    vm->shift = (unsigned)__builtin_ctzll(config->unit);
    vm->heuristic = config->heuristic;
    vm->flags = config->flags;
    vm->header_bytes = config->header_bytes;
    vm->rng = config->seed ? config->seed : UINT64_C(0x9e3779b97f4a7c15);
    /* A per-instance stamp in every id makes another instance's descriptor
     * fail validation even when block index and sequence happen to match. */
    vm->stamp = __atomic_add_fetch(&vmem_stamp_counter, 1, __ATOMIC_RELAXED) % 0xffffff + 1;
    vm->tree = (config->heuristic == RMALLOC_FIRST_FIT || config->heuristic == RMALLOC_NEXT_FIT);
    /* First- and next-fit search only the address tree: the size classes
     * would be bookkeeping on every allocation and free for nothing. */
    vm->classes = !vm->tree;
    for (unsigned c = 0; c < CLASS_COUNT; c++) vm->bins[c] = NIL;

    status = blk_reserve(vm, 64);
    if (status != UTIL_OK) goto err_free_vm;
    vm->ring_first = (vm->flags & RMALLOC_VMEM_RING_FIRST) && !(vm->flags & RMALLOC_VMEM_RING) &&
                     !(vm->flags & RMALLOC_VMEM_CLAIMS) && config->heuristic == RMALLOC_NEXT_FIT;
    if ((vm->flags & RMALLOC_VMEM_RING) || vm->ring_first) {
        status = rmalloc_ring_create(total, vm->shift, vm->stamp, &vm->ring);
        if (status != UTIL_OK) goto err_free_blk;
    } else if ((vm->flags & RMALLOC_VMEM_CLAIMS) && total <= RMALLOC_CLAIMS_MAX_UNITS) {
        status = rmalloc_claims_create(total, vm->shift, vm->stamp, &vm->claims);
        if (status != UTIL_OK) goto err_free_blk;
    }
    uint32_t i = blk_new(vm);
    vm->blk[i].start = 0;
    vm->blk[i].units = total;
    vm->blk[i].prev = vm->blk[i].next = NIL;
    vm->first = i;
    free_insert(vm, i);
    *vmem_p = vm;
    return UTIL_OK;

err_free_blk:
    free(vm->blk);
err_free_vm:
    free(vm);
    return status;
}

void rmalloc_vmem_destroy(rmalloc_vmem_t *vmem)
{
    if (vmem == NULL) return;
    rmalloc_ring_destroy(vmem->ring);
    rmalloc_claims_destroy(vmem->claims);
    free(vmem->legacy);
    free(vmem->blk);
    free(vmem);
}

uint64_t rmalloc_vmem_units_for(const rmalloc_vmem_t *vm, uint64_t payload)
{
    uint64_t bytes = payload;
    if (vm->header_bytes) bytes = ((payload + 7u) & ~(uint64_t)7u) + vm->header_bytes;
    if (payload > (UINT64_C(1) << 62) || bytes == 0) return 0;
    uint64_t units = (bytes + (UINT64_C(1) << vm->shift) - 1) >> vm->shift;
    return (units > RMALLOC_MAX_UNITS) ? 0 : units;
}

/* Free block chosen by the heuristic for `need` units, or NIL. */
static uint32_t pick(rmalloc_vmem_t *vm, uint64_t need)
{
    uint32_t i, best;

    switch (vm->heuristic) {
    case RMALLOC_FIRST_FIT:
        return t_first_from(vm, vm->root, need, 0);
    case RMALLOC_NEXT_FIT:
        i = t_first_from(vm, vm->root, need, vm->cursor);
        return (i != NIL) ? i : t_first_from(vm, vm->root, need, 0);
    case RMALLOC_BEST_FIT:
        /* Exact inside the request's own class, then the smallest class
         * whose blocks all fit (within 1/8 of the best). */
        best = NIL;
        i = vm->bins[cls_of(need)];
        for (unsigned n = 0; i != NIL && n < SCAN_LIMIT; n++, i = vm->blk[i].u.f.bnext) {
            if (vm->blk[i].units >= need &&
                (best == NIL || vm->blk[i].units < vm->blk[best].units)) {
                best = i;
                if (vm->blk[i].units == need) break;
            }
        }
        return (best != NIL) ? best : bin_find(vm, cls_ceil(need));
    case RMALLOC_WORST_FIT:
        if (!vm->fl_map) return NIL;
        {
            unsigned fl = 63u - (unsigned)__builtin_clzll(vm->fl_map);
            unsigned sl = 31u - (unsigned)__builtin_clz(vm->sl_map[fl]);
            best = NIL;
            i = vm->bins[fl * SL_COUNT + sl];
            for (unsigned n = 0; i != NIL && n < SCAN_LIMIT; n++, i = vm->blk[i].u.f.bnext)
                if (best == NIL || vm->blk[i].units > vm->blk[best].units) best = i;
        }
        return (vm->blk[best].units >= need) ? best : NIL;
    case RMALLOC_RANDOM_FIT: {
        unsigned lo = cls_ceil(need);
        if (!vm->fl_map || lo / SL_COUNT >= FL_COUNT) return NIL;
        unsigned top = (63u - (unsigned)__builtin_clzll(vm->fl_map) + 1) * SL_COUNT;
        if (top <= lo) return bin_find(vm, lo);
        i = bin_find(vm, lo + (unsigned)(rng_next(&vm->rng) % (top - lo)));
        return (i != NIL) ? i : bin_find(vm, lo);
    }
    default:
        return NIL;
    }
}

static inline uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) & ~(a - 1);
}

/* rmalloc_vmem_alloc past its checks: a ring-first instance that must
 * leave its ring, or the general instance. Out of line, so that the ring's
 * per-message path does not pay this one's frame. */
static __attribute__((noinline)) util_status_t vmem_alloc_general(rmalloc_vmem_t *vm,
                                                                  uint64_t payload, uint64_t units,
                                                                  uint64_t au, raddr_t *desc_p)
{
    util_status_t status;
    uint32_t f, a;

    if (vm->ring != NULL) {
        if (au == 1) {
            status = rmalloc_ring_alloc(vm->ring, units, au, payload, desc_p);
            if (status != UTIL_ERR_NO_RESOURCE || rmalloc_ring_spare_units(vm->ring) < units)
                return status; /* placed, or the general instance would not place it either */
        }
        if ((status = leave_ring(vm)) != UTIL_OK) return status;
    }
    if (vm->claims != NULL) return UTIL_ERR_UNSUPPORTED;
    status = blk_reserve(vm, 4);
    if (status != UTIL_OK) return status;

    /* Next-fit fast path: the free block right at the cursor. */
    if (vm->heuristic == RMALLOC_NEXT_FIT) {
        f = vm->cursor_blk;
        if (f == NIL || vm->blk[f].state != BLK_FREE || vm->blk[f].start != vm->cursor)
            f = t_containing(vm, vm->cursor);
        if (f != NIL) {
            uint64_t s = align_up(vm->cursor, au);
            if (s + units <= vm->blk[f].start + vm->blk[f].units) {
                a = carve(vm, f, s, units, BLK_ALLOC);
                goto found;
            }
        }
    }
    f = pick(vm, units + au - 1);
    if (f == NIL) return UTIL_ERR_NO_RESOURCE;
    a = carve(vm, f, align_up(vm->blk[f].start, au), units, BLK_ALLOC);
found:
    vm->blk[a].u.a.payload = payload;
    vm->live++;
    vm->cursor = vm->blk[a].start + vm->blk[a].units;
    vm->cursor_blk = vm->blk[a].next;
    if (vm->cursor >= vm->total) {
        vm->cursor = 0;
        vm->cursor_blk = vm->first;
    }
    fill_desc(vm, a, desc_p);
    return UTIL_OK;
}

rmalloc_ring_t *rmalloc_vmem_ring_for(const rmalloc_vmem_t *vm, uint64_t payload, uint64_t *units_p)
{
    uint64_t units = rmalloc_vmem_units_for(vm, payload);

    if (vm->ring == NULL || units == 0 || units > vm->total) return NULL;
    *units_p = units;
    return vm->ring;
}

util_status_t rmalloc_vmem_alloc(rmalloc_vmem_t *vm, uint64_t payload, uint64_t align,
                                 raddr_t *desc_p)
{
    uint64_t units = rmalloc_vmem_units_for(vm, payload);
    uint64_t au = 1;

    if (units == 0 || units > vm->total || (align & (align - 1))) return UTIL_ERR_INVALID;
    if (align > (UINT64_C(1) << vm->shift)) au = align >> vm->shift;
    /* The per-message path of block mode on both ends, and of a ring-first
     * producer whose frees come back in order: the ring, inline. A ring-first
     * instance the ring cannot serve tries the general instance. */
    if (vm->ring != NULL && (!vm->ring_first || au == 1)) {
        util_status_t status = rmalloc_ring_alloc_inl(vm->ring, units, au, payload, desc_p);

        if (status != UTIL_ERR_NO_RESOURCE || !vm->ring_first) return status;
    }
    return vmem_alloc_general(vm, payload, units, au, desc_p);
}

/* A ring-first instance still in its ring about to apply an operation on
 * desc that only the general instance can (a free out of allocation order,
 * a claim, a resize): leaves the ring first. ERR_INVALID when desc is no
 * live allocation (the ring stays). */
static util_status_t leave_ring_for(rmalloc_vmem_t *vm, const raddr_t *desc)
{
    if (desc != NULL && rmalloc_ring_lookup(vm->ring, desc) != UTIL_OK) {
        util_debug("rmalloc: descriptor this instance did not issue or already freed");
        return UTIL_ERR_INVALID;
    }
    return leave_ring(vm);
}

util_status_t rmalloc_vmem_free(rmalloc_vmem_t *vm, const raddr_t *desc)
{
    util_status_t status;

    if (desc == NULL) return UTIL_ERR_INVALID;
    if (vm->ring != NULL) {
        if (!vm->ring_first) return rmalloc_ring_free(vm->ring, desc);
        if (rmalloc_ring_free_oldest(vm->ring, desc) == UTIL_OK) return UTIL_OK;
        if ((status = leave_ring_for(vm, desc)) != UTIL_OK) return status;
    }
    if (vm->claims != NULL) return rmalloc_claims_free(vm->claims, desc);
    uint32_t i = lookup(vm, desc);
    if (i == NIL) {
        util_debug("rmalloc: free of a descriptor this instance did not issue or already freed");
        return UTIL_ERR_INVALID;
    }
    legacy_forget(vm, desc);
    vm->live--;
    release_block(vm, i);
    return UTIL_OK;
}

util_status_t rmalloc_vmem_free_n(rmalloc_vmem_t *vm, const raddr_t *descs, size_t n,
                                  size_t *done_p)
{
    util_status_t status = UTIL_OK;
    size_t k = 0;

    if (vm->ring != NULL && vm->ring_first) k = rmalloc_ring_free_oldest_n(vm->ring, descs, n);
    for (; k < n && (status = rmalloc_vmem_free(vm, &descs[k])) == UTIL_OK; k++)
        ;
    *done_p = k;
    return status;
}

util_status_t rmalloc_vmem_realloc(rmalloc_vmem_t *vm, const raddr_t *desc, uint64_t payload,
                                   raddr_t *desc_p)
{
    uint32_t i;
    uint64_t units;
    util_status_t status;

    if (vm->flags & RMALLOC_VMEM_RING)
        return rmalloc_ring_lookup(vm->ring, desc) == UTIL_OK ? UTIL_ERR_UNSUPPORTED
                                                              : UTIL_ERR_INVALID;
    if (vm->ring != NULL && (status = leave_ring_for(vm, desc)) != UTIL_OK) return status;
    if (vm->claims != NULL) {
        uint64_t peer_id;
        uint32_t peer_block;
        return rmalloc_claims_peer(vm->claims, desc, &peer_id, &peer_block) == UTIL_OK
                   ? UTIL_ERR_UNSUPPORTED
                   : UTIL_ERR_INVALID;
    }
    if ((i = lookup(vm, desc)) == NIL) return UTIL_ERR_INVALID;
    units = rmalloc_vmem_units_for(vm, payload);
    if (units == 0) return UTIL_ERR_INVALID;
    if (blk_reserve(vm, 2) != UTIL_OK) return UTIL_ERR_NO_MEMORY;

    blk_t *b = &vm->blk[i];
    uint32_t n = b->next;
    if (units < b->units) {
        uint64_t diff = b->units - units;
        b->units = units;
        vm->used -= diff;
        if (n != NIL && vm->blk[n].state == BLK_FREE) {
            vm->blk[n].start -= diff;
            vm->blk[n].units += diff;
            free_resized(vm, n);
        } else {
            uint32_t c = blk_new(vm);
            vm->blk[c].start = vm->blk[i].start + units;
            vm->blk[c].units = diff;
            blk_link_after(vm, i, c);
            free_insert(vm, c);
        }
    } else if (units > b->units) {
        uint64_t diff = units - b->units;
        if (n == NIL || vm->blk[n].state != BLK_FREE || vm->blk[n].units < diff)
            return UTIL_ERR_NO_RESOURCE;
        if (vm->blk[n].units == diff) {
            free_remove(vm, n);
            if (vm->cursor_blk == n) vm->cursor_blk = NIL;
            blk_release(vm, n);
        } else {
            vm->blk[n].start += diff;
            vm->blk[n].units -= diff;
            free_resized(vm, n);
        }
        vm->blk[i].units = units;
        vm->used += diff;
    }
    vm->blk[i].u.a.payload = payload;
    if (legacy_forget(vm, desc)) /* the new descriptor names the record: a new id */
        vm->blk[i].u.a.id = (vm->stamp << 40) | (++vm->seq & SEQ_MASK);
    fill_desc(vm, i, desc_p);
    return UTIL_OK;
}

util_status_t rmalloc_vmem_claim(rmalloc_vmem_t *vm, uint64_t start, uint64_t units,
                                 uint64_t payload, uint64_t peer_id, uint32_t peer_block,
                                 raddr_t *desc_p)
{
    if (vm->claims != NULL)
        return rmalloc_claims_claim(vm->claims, start, units, payload, peer_id, peer_block, desc_p);
    if ((vm->flags & RMALLOC_VMEM_RING) || units == 0 || units > RMALLOC_MAX_UNITS ||
        start >= vm->total || units > vm->total - start)
        return UTIL_ERR_INVALID;
    if (vm->ring != NULL && leave_ring(vm) != UTIL_OK) return UTIL_ERR_NO_MEMORY;
    if (blk_reserve(vm, 2) != UTIL_OK) return UTIL_ERR_NO_MEMORY;
    tree_enable(vm);
    uint32_t f = t_containing(vm, start);
    if (f == NIL || vm->blk[f].start + vm->blk[f].units < start + units) {
        util_debug("rmalloc: claim of [%llu, %llu) overlaps allocated memory",
                   (unsigned long long)start, (unsigned long long)(start + units));
        return UTIL_ERR_INVALID;
    }
    uint32_t a = carve(vm, f, start, units, BLK_ALLOC);
    vm->blk[a].u.a.payload = payload;
    vm->blk[a].u.a.peer_id = peer_id;
    vm->blk[a].u.a.peer_block = peer_block;
    vm->live++;
    fill_desc(vm, a, desc_p);
    return UTIL_OK;
}

util_status_t rmalloc_vmem_peer(const rmalloc_vmem_t *vm, const raddr_t *desc, uint64_t *peer_id_p,
                                uint32_t *peer_block_p)
{
    if (vm->ring != NULL) { /* ring mode claims nothing: no peer names */
        *peer_id_p = 0;
        *peer_block_p = NIL;
        return rmalloc_ring_find(vm->ring, desc) != NULL ? UTIL_OK : UTIL_ERR_INVALID;
    }
    if (vm->claims != NULL) return rmalloc_claims_peer(vm->claims, desc, peer_id_p, peer_block_p);
    uint32_t i = lookup(vm, desc);
    if (i == NIL) return UTIL_ERR_INVALID;
    *peer_id_p = vm->blk[i].u.a.peer_id;
    *peer_block_p = vm->blk[i].u.a.peer_block;
    return UTIL_OK;
}

util_status_t rmalloc_vmem_set_peer(rmalloc_vmem_t *vm, const raddr_t *desc, uint64_t peer_id,
                                    uint32_t peer_block)
{
    util_status_t status;

    if (vm->flags & RMALLOC_VMEM_RING) return UTIL_ERR_UNSUPPORTED;
    if (vm->ring != NULL && (status = leave_ring_for(vm, desc)) != UTIL_OK) return status;
    if (vm->claims != NULL) return rmalloc_claims_set_peer(vm->claims, desc, peer_id, peer_block);
    uint32_t i = lookup(vm, desc);
    if (i == NIL) return UTIL_ERR_INVALID;
    vm->blk[i].u.a.peer_id = peer_id;
    vm->blk[i].u.a.peer_block = peer_block;
    return UTIL_OK;
}

uint64_t rmalloc_vmem_ring_take_released(rmalloc_vmem_t *vm)
{
    return (vm->flags & RMALLOC_VMEM_RING) ? rmalloc_ring_take_released(vm->ring) : 0;
}

util_status_t rmalloc_vmem_ring_retire(rmalloc_vmem_t *vm, uint64_t units)
{
    return (vm->flags & RMALLOC_VMEM_RING) ? rmalloc_ring_retire(vm->ring, units)
                                           : UTIL_ERR_INVALID;
}

void *rmalloc_vmem_ptr(const rmalloc_vmem_t *vm, const raddr_t *desc)
{
    if (vm->base == NULL || desc == NULL || !rmalloc_desc_valid(desc)) return NULL;
    return vm->base + (desc->start << vm->shift);
}

uint64_t rmalloc_vmem_total_units(const rmalloc_vmem_t *vm)
{
    return vm->total;
}

uint64_t rmalloc_vmem_used_units(const rmalloc_vmem_t *vm)
{
    if (vm->claims != NULL) return rmalloc_claims_used_units(vm->claims);
    if (vm->ring != NULL) /* a ring-first instance counts as its general instance would */
        return rmalloc_ring_used_units(vm->ring) -
               (vm->ring_first ? rmalloc_ring_dummy_units(vm->ring) : 0);
    return vm->used;
}

uint64_t rmalloc_vmem_live_count(const rmalloc_vmem_t *vm)
{
    if (vm->claims != NULL) return rmalloc_claims_live_count(vm->claims);
    return (vm->ring != NULL) ? rmalloc_ring_live_count(vm->ring) : vm->live;
}

unsigned rmalloc_vmem_unit_shift(const rmalloc_vmem_t *vm)
{
    return vm->shift;
}

static int block_by_start(const void *a, const void *b)
{
    const rmalloc_block_info_t *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

void rmalloc_walk_sorted(rmalloc_block_info_t *blocks, uint64_t n, uint64_t total,
                         void (*fn)(const rmalloc_block_info_t *block, void *arg), void *arg)
{
    uint64_t pos = 0;

    qsort(blocks, n, sizeof(*blocks), block_by_start);
    for (uint64_t i = 0; i < n; i++) {
        if (blocks[i].start > pos) {
            rmalloc_block_info_t gap = {pos, blocks[i].start, RMALLOC_BLOCK_FREE};
            fn(&gap, arg);
        }
        fn(&blocks[i], arg);
        pos = blocks[i].end;
    }
    if (pos < total) {
        rmalloc_block_info_t tail = {pos, total, RMALLOC_BLOCK_FREE};
        fn(&tail, arg);
    }
}

void rmalloc_vmem_walk(const rmalloc_vmem_t *vm,
                       void (*fn)(const rmalloc_block_info_t *block, void *arg), void *arg)
{
    if (vm->ring != NULL) {
        rmalloc_ring_walk(vm->ring, fn, arg);
        return;
    }
    if (vm->claims != NULL) {
        rmalloc_claims_walk(vm->claims, fn, arg);
        return;
    }
    for (uint32_t i = vm->first; i != NIL; i = vm->blk[i].next) {
        rmalloc_block_info_t info = {vm->blk[i].start, vm->blk[i].start + vm->blk[i].units,
                                     (int)vm->blk[i].state};
        fn(&info, arg);
    }
}

#define CHECK_(_cond, ...)                                                                         \
    do {                                                                                           \
        if (!(_cond)) {                                                                            \
            util_error("rmalloc check: " __VA_ARGS__);                                             \
            return UTIL_ERR_STATE;                                                                 \
        }                                                                                          \
    } while (0)

/* In-order walk of the treap: order, parents, heap priorities, maxima. */
static util_status_t check_tree(const rmalloc_vmem_t *vm, uint32_t x, uint32_t parent,
                                uint64_t *last_end, uint64_t *count, unsigned depth)
{
    if (x == NIL) return UTIL_OK;
    const blk_t *b = &vm->blk[x];
    CHECK_(depth < 4096, "tree too deep");
    CHECK_(b->state == BLK_FREE, "tree holds a non-free block %u", x);
    CHECK_(b->u.f.parent == parent, "bad parent link at %u", x);
    CHECK_(parent == NIL || b->u.f.prio <= vm->blk[parent].u.f.prio, "heap order at %u", x);
    if (check_tree(vm, b->u.f.left, x, last_end, count, depth + 1) != UTIL_OK)
        return UTIL_ERR_STATE;
    CHECK_(b->start >= *last_end, "tree out of address order at %u", x);
    *last_end = b->start + b->units;
    (*count)++;
    if (check_tree(vm, b->u.f.right, x, last_end, count, depth + 1) != UTIL_OK)
        return UTIL_ERR_STATE;
    uint64_t m = b->units, l = t_max(vm, b->u.f.left), r = t_max(vm, b->u.f.right);
    if (l > m) m = l;
    if (r > m) m = r;
    CHECK_(b->u.f.max == m, "stale subtree maximum at %u", x);
    return UTIL_OK;
}

util_status_t rmalloc_vmem_check(const rmalloc_vmem_t *vm)
{
    uint64_t pos = 0, used = 0, live = 0, nfree = 0, nbin = 0, ntree = 0, last_end = 0;
    uint32_t prev = NIL;
    int prev_free = 0;

    if (vm->ring != NULL) return rmalloc_ring_check(vm->ring);
    if (vm->claims != NULL) return rmalloc_claims_check(vm->claims);

    for (uint32_t i = vm->first; i != NIL; prev = i, i = vm->blk[i].next) {
        const blk_t *b = &vm->blk[i];
        CHECK_(b->prev == prev, "bad address back link at block %u", i);
        CHECK_(b->start == pos, "gap or overlap at unit %llu", (unsigned long long)pos);
        CHECK_(b->units > 0, "empty block %u", i);
        CHECK_(b->state != BLK_UNUSED, "unused record %u in the address list", i);
        if (b->state == BLK_FREE) {
            CHECK_(!prev_free, "adjacent free blocks at unit %llu", (unsigned long long)pos);
            CHECK_(!vm->classes || b->cls == cls_of(b->units), "block %u in the wrong size class",
                   i);
            nfree++;
        } else {
            used += b->units;
            live += (b->state == BLK_ALLOC);
        }
        prev_free = (b->state == BLK_FREE);
        pos += b->units;
        CHECK_(pos <= vm->total, "blocks run past the region");
    }
    CHECK_(pos == vm->total, "blocks cover %llu of %llu units", (unsigned long long)pos,
           (unsigned long long)vm->total);
    CHECK_(used == vm->used, "used units %llu, counted %llu", (unsigned long long)vm->used,
           (unsigned long long)used);
    CHECK_(live == vm->live, "live count %llu, counted %llu", (unsigned long long)vm->live,
           (unsigned long long)live);
    uint64_t nunused = 0;
    for (uint32_t i = vm->unused_head; i != NIL; i = vm->blk[i].next) nunused++;
    CHECK_(nunused == vm->unused_count, "unused records %llu, counted %llu",
           (unsigned long long)vm->unused_count, (unsigned long long)nunused);
    for (unsigned c = 0; c < CLASS_COUNT; c++) {
        int bit = !!(vm->sl_map[c / SL_COUNT] & (1u << (c % SL_COUNT)));
        CHECK_(bit == (vm->bins[c] != NIL), "class bitmap out of date for class %u", c);
        uint32_t p = NIL;
        for (uint32_t i = vm->bins[c]; i != NIL; p = i, i = vm->blk[i].u.f.bnext) {
            CHECK_(vm->blk[i].state == BLK_FREE && vm->blk[i].cls == c,
                   "class %u lists block %u wrongly", c, i);
            CHECK_(vm->blk[i].u.f.bprev == p, "class %u back link", c);
            nbin++;
        }
    }
    for (unsigned fl = 0; fl < FL_COUNT; fl++)
        CHECK_(!!(vm->fl_map & (UINT64_C(1) << fl)) == !!vm->sl_map[fl], "first-level bitmap");
    CHECK_(nbin == (vm->classes ? nfree : 0), "%llu free blocks, %llu in size classes",
           (unsigned long long)nfree, (unsigned long long)nbin);
    if (!vm->tree)
        ntree = nfree;
    else if (check_tree(vm, vm->root, NIL, &last_end, &ntree, 0) != UTIL_OK)
        return UTIL_ERR_STATE;
    CHECK_(ntree == nfree, "%llu free blocks, %llu in the tree", (unsigned long long)nfree,
           (unsigned long long)ntree);
    uint64_t nlegacy = 0;
    for (uint32_t k = 0; vm->legacy != NULL && k < vm->legacy_n; k++) {
        uint32_t i = vm->legacy[k];
        if (i == NIL) continue;
        CHECK_(i < vm->cap && vm->blk[i].state == BLK_ALLOC &&
                   (vm->blk[i].u.a.id & SEQ_MASK) <= vm->legacy_seq,
               "ring descriptor %u maps to record %u, not one of its allocations", k, i);
        nlegacy++;
    }
    CHECK_(nlegacy == (vm->legacy != NULL ? vm->legacy_live : 0),
           "%llu ring descriptors mapped, %llu counted", (unsigned long long)nlegacy,
           (unsigned long long)vm->legacy_live);
    return UTIL_OK;
}
