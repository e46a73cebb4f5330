/*
 * rmalloc instances: every heuristic runs the same tests (loop tests over
 * rmalloc_heuristic_t), then heuristic-specific placement, ring mode and
 * the symmetric mode.
 */
#include "rmalloc/rmalloc_symm.h"
#include "rmalloc/rmalloc_vmem.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define UNIT  64
#define UNITS 1024

static rmalloc_vmem_t *make(rmalloc_heuristic_t h, void *base, uint64_t units, unsigned flags)
{
    rmalloc_vmem_config_t cfg = {.base = base,
                                 .size = units * UNIT,
                                 .unit = UNIT,
                                 .heuristic = h,
                                 .flags = flags,
                                 .seed = 7};
    rmalloc_vmem_t *vm = NULL;
    ck_assert_int_eq(rmalloc_vmem_create(&cfg, &vm), UTIL_OK);
    return vm;
}

static void count_cb(const rmalloc_block_info_t *b, void *arg)
{
    uint64_t *c = arg;
    c[b->state]++;
}

static uint64_t count_blocks(const rmalloc_vmem_t *vm, int state)
{
    uint64_t c[4] = {0};
    rmalloc_vmem_walk(vm, count_cb, c);
    return c[state];
}

START_TEST(test_create_invalid)
{
    rmalloc_vmem_config_t cfg = {.size = 4096, .unit = 48, .heuristic = RMALLOC_FIRST_FIT};
    rmalloc_vmem_t *vm = NULL;
    ck_assert_int_eq(rmalloc_vmem_create(&cfg, &vm), UTIL_ERR_INVALID);
    cfg.unit = 64;
    cfg.size = 32;
    ck_assert_int_eq(rmalloc_vmem_create(&cfg, &vm), UTIL_ERR_INVALID);
    cfg.size = 4096;
    cfg.flags = RMALLOC_VMEM_RING;
    ck_assert_int_eq(rmalloc_vmem_create(&cfg, &vm), UTIL_ERR_INVALID);
    cfg.heuristic = RMALLOC_HEURISTIC_COUNT;
    cfg.flags = 0;
    ck_assert_int_eq(rmalloc_vmem_create(&cfg, &vm), UTIL_ERR_INVALID);
    ck_assert_ptr_null(vm);
}
END_TEST

START_TEST(test_basic)
{
    static uint8_t mem[UNITS * UNIT];
    rmalloc_vmem_t *vm = make((rmalloc_heuristic_t)_i, mem, UNITS, 0);
    raddr_t d[8];

    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(rmalloc_vmem_alloc(vm, 100 * (uint64_t)(i + 1), 0, &d[i]), UTIL_OK);
        ck_assert(rmalloc_desc_valid(&d[i]));
        ck_assert_uint_eq(d[i].payload, 100 * (uint64_t)(i + 1));
        ck_assert_uint_eq(d[i].end - d[i].start, (100u * (i + 1) + UNIT - 1) / UNIT);
        ck_assert_uint_eq(rmalloc_desc_offset(&d[i]), d[i].start * UNIT);
        ck_assert_ptr_eq(rmalloc_vmem_ptr(vm, &d[i]), mem + d[i].start * UNIT);
        for (int j = 0; j < i; j++) ck_assert(d[i].end <= d[j].start || d[j].end <= d[i].start);
        ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    }
    ck_assert_uint_eq(rmalloc_vmem_live_count(vm), 8);
    for (int i = 0; i < 8; i += 2) ck_assert_int_eq(rmalloc_vmem_free(vm, &d[i]), UTIL_OK);
    for (int i = 1; i < 8; i += 2) ck_assert_int_eq(rmalloc_vmem_free(vm, &d[i]), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), 0);
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_FREE), 1);
    rmalloc_vmem_destroy(vm);
}
END_TEST

/* Fill the region with 1-unit blocks, free in a scrambled order: every
 * free must coalesce (check() rejects adjacent free blocks). */
START_TEST(test_fill_and_coalesce)
{
    rmalloc_vmem_t *vm = make((rmalloc_heuristic_t)_i, NULL, UNITS, 0);
    static raddr_t d[UNITS];
    raddr_t extra;
    uint64_t n = 0;

    while (rmalloc_vmem_alloc(vm, UNIT, 0, &d[n]) == UTIL_OK) n++;
    ck_assert_uint_eq(n, UNITS);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 1, 0, &extra), UTIL_ERR_NO_RESOURCE);
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_FREE), 0);
    /* every other block free: 2 units never fit, 1 unit does */
    for (uint64_t i = 0; i < n; i++)
        if (d[i].start % 2 == 0) ck_assert_int_eq(rmalloc_vmem_free(vm, &d[i]), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_FREE), UNITS / 2);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 2 * UNIT, 0, &extra), UTIL_ERR_NO_RESOURCE);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, UNIT, 0, &extra), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &extra), UTIL_OK);
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = (k * 7919) % n; /* 7919 is prime: a permutation */
        if (d[i].start % 2 == 1) {
            ck_assert_int_eq(rmalloc_vmem_free(vm, &d[i]), UTIL_OK);
            ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
        }
    }
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_FREE), 1);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), 0);
    rmalloc_vmem_destroy(vm);
}
END_TEST

START_TEST(test_bad_descriptors)
{
    rmalloc_vmem_t *vm = make((rmalloc_heuristic_t)_i, NULL, UNITS, 0);
    rmalloc_vmem_t *other = make((rmalloc_heuristic_t)_i, NULL, UNITS, 0);
    raddr_t a, b, foreign, bad;

    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 500, 0, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 500, 0, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(other, 500, 0, &foreign), UTIL_OK);
    uint64_t used = rmalloc_vmem_used_units(vm);

    ck_assert_int_eq(rmalloc_vmem_free(vm, &foreign),
                     UTIL_ERR_INVALID); /* same shape, other instance */
    bad = a;
    bad.end++;
    ck_assert_int_eq(rmalloc_vmem_free(vm, &bad), UTIL_ERR_INVALID);
    bad = a;
    bad.block = 1u << 30;
    ck_assert_int_eq(rmalloc_vmem_free(vm, &bad), UTIL_ERR_INVALID);
    bad = RMALLOC_ADDR_NULL;
    ck_assert_int_eq(rmalloc_vmem_free(vm, &bad), UTIL_ERR_INVALID);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), used);

    ck_assert_int_eq(rmalloc_vmem_free(vm, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &a), UTIL_ERR_INVALID); /* double free */
    /* the record is reused: the stale descriptor must still be rejected */
    raddr_t c;
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 500, 0, &c), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &a), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &c), UTIL_OK);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), 0);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 0, 0, &c), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, (UNITS + 1) * UNIT, 0, &c), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 8, 48, &c), UTIL_ERR_INVALID);
    rmalloc_vmem_destroy(vm);
    rmalloc_vmem_destroy(other);
}
END_TEST

START_TEST(test_align)
{
    rmalloc_vmem_t *vm = make((rmalloc_heuristic_t)_i, NULL, UNITS, 0);
    raddr_t d[6];

    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 1, 0, &d[0]), UTIL_OK);
    for (int i = 1; i < 6; i++) {
        uint64_t align = UINT64_C(128) << i;
        ck_assert_int_eq(rmalloc_vmem_alloc(vm, 70, align, &d[i]), UTIL_OK);
        ck_assert_uint_eq(rmalloc_desc_offset(&d[i]) % align, 0);
        ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    }
    for (int i = 0; i < 6; i++) ck_assert_int_eq(rmalloc_vmem_free(vm, &d[i]), UTIL_OK);
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_FREE), 1);
    rmalloc_vmem_destroy(vm);
}
END_TEST

START_TEST(test_realloc)
{
    rmalloc_vmem_t *vm = make(RMALLOC_FIRST_FIT, NULL, UNITS, 0);
    raddr_t a, b, c, r;

    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 4 * UNIT, 0, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 4 * UNIT, 0, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 4 * UNIT, 0, &c), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_realloc(vm, &a, 5 * UNIT, &r), UTIL_ERR_NO_RESOURCE);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_realloc(vm, &a, 6 * UNIT, &r), UTIL_OK); /* into b */
    ck_assert_uint_eq(r.start, a.start);
    ck_assert_uint_eq(r.end, a.start + 6);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &a), UTIL_ERR_INVALID);         /* stale size */
    ck_assert_int_eq(rmalloc_vmem_realloc(vm, &r, 8 * UNIT, &r), UTIL_OK); /* exactly b */
    ck_assert_uint_eq(r.end, c.start);
    ck_assert_int_eq(rmalloc_vmem_realloc(vm, &r, 1 * UNIT, &r), UTIL_OK); /* shrink */
    ck_assert_uint_eq(r.end, a.start + 1);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_realloc(vm, &c, 1 * UNIT, &c), UTIL_OK); /* shrink, free next */
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &r), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &c), UTIL_OK);
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_FREE), 1);
    rmalloc_vmem_destroy(vm);
}
END_TEST

/* Holes of 10, 50 and 20 units (in that address order) and a large tail. */
static rmalloc_vmem_t *make_holes(rmalloc_heuristic_t h, raddr_t *keep)
{
    rmalloc_vmem_t *vm = make(h, NULL, UNITS, 0);
    uint64_t sizes[7] = {10, 1, 50, 1, 20, 1, 0};
    raddr_t d[6];
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(rmalloc_vmem_alloc(vm, sizes[i] * UNIT, 0, &d[i]), UTIL_OK);
    for (int i = 0; i < 6; i += 2) ck_assert_int_eq(rmalloc_vmem_free(vm, &d[i]), UTIL_OK);
    for (int i = 0; i < 3; i++) keep[i] = d[2 * i + 1];
    return vm;
}

START_TEST(test_placement)
{
    static const struct {
        rmalloc_heuristic_t h;
        uint64_t start;
    } expect[] = {
        {RMALLOC_FIRST_FIT, 11}, /* first hole that fits: the 50 */
        {RMALLOC_BEST_FIT, 62},  /* smallest that fits: the 20 */
        {RMALLOC_WORST_FIT, 83}, /* largest: the tail */
        {RMALLOC_NEXT_FIT, 83},  /* after the last allocation */
    };
    for (unsigned k = 0; k < sizeof(expect) / sizeof(expect[0]); k++) {
        raddr_t keep[3], d;
        rmalloc_vmem_t *vm = make_holes(expect[k].h, keep);
        ck_assert_int_eq(rmalloc_vmem_alloc(vm, 15 * UNIT, 0, &d), UTIL_OK);
        ck_assert_msg(d.start == expect[k].start, "%s placed at %llu, expected %llu",
                      rmalloc_heuristic_name(expect[k].h), (unsigned long long)d.start,
                      (unsigned long long)expect[k].start);
        rmalloc_vmem_destroy(vm);
    }
}
END_TEST

START_TEST(test_next_fit_wraps_cursor)
{
    rmalloc_vmem_t *vm = make(RMALLOC_NEXT_FIT, NULL, 100, 0);
    raddr_t a, b, c, d;
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 40 * UNIT, 0, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 40 * UNIT, 0, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 10 * UNIT, 0, &c), UTIL_OK);
    ck_assert_uint_eq(c.start, 80); /* continues at the cursor, not at 0 */
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 30 * UNIT, 0, &d), UTIL_OK);
    ck_assert_uint_eq(d.start, 0); /* plain next-fit: wraps without a dummy */
    ck_assert_uint_eq(d.flags, 0);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    rmalloc_vmem_destroy(vm);
}
END_TEST

START_TEST(test_ring_wrap_and_release_order)
{
    rmalloc_vmem_t *vm = make(RMALLOC_NEXT_FIT, NULL, 100, RMALLOC_VMEM_RING);
    raddr_t a, b, c, x;

    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 40 * UNIT, 0, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 40 * UNIT, 0, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 30 * UNIT, 0, &x), UTIL_ERR_NO_RESOURCE);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &b), UTIL_OK); /* out of order */
    ck_assert_uint_eq(rmalloc_vmem_ring_take_released(vm), 0);
    /* the ring never looks behind the cursor, even though b is free */
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 30 * UNIT, 0, &x), UTIL_ERR_NO_RESOURCE);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &a), UTIL_OK);
    ck_assert_uint_eq(rmalloc_vmem_ring_take_released(vm), 80);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 30 * UNIT, 0, &c), UTIL_OK);
    ck_assert_uint_eq(c.start, 0);
    ck_assert(c.flags & RMALLOC_DESC_WRAPPED);
    ck_assert_uint_eq(c.wrap_from, 80);
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_DUMMY), 1);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), 50); /* c + the dummy */
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &c), UTIL_OK); /* dummy goes too */
    ck_assert_uint_eq(rmalloc_vmem_ring_take_released(vm), 50);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), 0);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    rmalloc_vmem_destroy(vm);
}
END_TEST

/* Ring-first mode (a tag or channel producer): the gap behind a wrap makes
 * it leave its ring, where the ring would refuse and the general instance
 * places; descriptors issued before stay valid. */
START_TEST(test_ring_first_gap)
{
    rmalloc_vmem_t *vm = make(RMALLOC_NEXT_FIT, NULL, 100, RMALLOC_VMEM_RING_FIRST);
    raddr_t a, b, c, d, e;

    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 40 * UNIT, 0, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 40 * UNIT, 0, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &a), UTIL_OK); /* the oldest: still a ring */
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 30 * UNIT, 0, &c), UTIL_OK);
    ck_assert_uint_eq(c.start, 0);                      /* wrapped: [80, 100) is the ring's dummy */
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), 70); /* counted free, as it will be */
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    /* [30, 40) is too small; a general instance has [80, 100) free */
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 15 * UNIT, 0, &d), UTIL_OK);
    ck_assert_uint_eq(d.start, 80);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    ck_assert_uint_eq(rmalloc_vmem_live_count(vm), 3);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), 85);
    /* what neither could place */
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 11 * UNIT, 0, &e), UTIL_ERR_NO_RESOURCE);
    /* the ring's descriptors: freed once, then refused */
    e = b;
    ck_assert_int_eq(rmalloc_vmem_free(vm, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &e), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_vmem_realloc(vm, &c, 20 * UNIT, &e), UTIL_OK); /* shrinks */
    ck_assert_int_eq(rmalloc_vmem_free(vm, &c), UTIL_ERR_INVALID);          /* replaced by e */
    ck_assert_int_eq(rmalloc_vmem_free(vm, &e), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &d), UTIL_OK);
    ck_assert_uint_eq(rmalloc_vmem_live_count(vm), 0);
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_FREE), 1);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    rmalloc_vmem_destroy(vm);

    /* a resize leaves the ring too; one that cannot stay in place changes
     * nothing, and the ring's descriptor stays good (a fuzzer case) */
    vm = make(RMALLOC_NEXT_FIT, NULL, 100, RMALLOC_VMEM_RING_FIRST);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 14 * UNIT, 0, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 13 * UNIT, 0, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_realloc(vm, &a, 24 * UNIT, &e), UTIL_ERR_NO_RESOURCE);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    rmalloc_vmem_destroy(vm);
}
END_TEST

/* A batch of frees: the run of oldest allocations goes through the ring,
 * the first one out of order moves the instance to the general path for the
 * rest, and the batch stops at a bad descriptor with the count freed. */
START_TEST(test_free_n)
{
    rmalloc_vmem_t *vm = make(RMALLOC_NEXT_FIT, NULL, 100, RMALLOC_VMEM_RING_FIRST);
    raddr_t d[8], batch[8];
    size_t done;

    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(rmalloc_vmem_alloc(vm, 10 * UNIT, 0, &d[i]), UTIL_OK);
    /* in order: all through the ring */
    ck_assert_int_eq(rmalloc_vmem_free_n(vm, d, 3, &done), UTIL_OK);
    ck_assert_uint_eq(done, 3);
    ck_assert_uint_eq(rmalloc_vmem_live_count(vm), 5);
    /* a repeat is refused: nothing changes */
    ck_assert_int_eq(rmalloc_vmem_free_n(vm, d, 1, &done), UTIL_ERR_INVALID);
    ck_assert_uint_eq(done, 0);
    ck_assert_uint_eq(rmalloc_vmem_live_count(vm), 5);
    /* d[3] in order, then d[5] ahead of d[4], then d[4]; then a double free */
    batch[0] = d[3], batch[1] = d[5], batch[2] = d[4], batch[3] = d[4], batch[4] = d[6];
    ck_assert_int_eq(rmalloc_vmem_free_n(vm, batch, 5, &done), UTIL_ERR_INVALID);
    ck_assert_uint_eq(done, 3);
    ck_assert_uint_eq(rmalloc_vmem_live_count(vm), 2);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free_n(vm, &d[6], 2, &done), UTIL_OK);
    ck_assert_uint_eq(done, 2);
    ck_assert_uint_eq(rmalloc_vmem_live_count(vm), 0);
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_FREE), 1);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free_n(vm, d, 0, &done), UTIL_OK);
    ck_assert_uint_eq(done, 0);
    rmalloc_vmem_destroy(vm);
}
END_TEST

/* Ring-first mode places exactly as a general next-fit instance, before and
 * after it leaves the ring (frees in allocation order first, then out of
 * order), and refuses the same bad descriptors. */
START_TEST(test_ring_first_same_placements)
{
    enum { N = 160, OPS = 6000 };
    rmalloc_vmem_t *vm[2] = {make(RMALLOC_NEXT_FIT, NULL, N, 0),
                             make(RMALLOC_NEXT_FIT, NULL, N, RMALLOC_VMEM_RING_FIRST)};
    static raddr_t live[2][N];
    uint64_t n = 0, rng = 0x9e3779b97f4a7c15ull + (uint64_t)_i;

    for (int op = 0; op < OPS; op++) {
        int in_order = op < OPS / 2 || _i == 0; /* loop 0 never leaves the ring by a free */
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        if (n == 0 || (rng % 100 < 55 && n < N)) {
            uint64_t units = 1 + (rng >> 8) % 24;
            raddr_t d[2];
            util_status_t st[2];
            for (int k = 0; k < 2; k++) st[k] = rmalloc_vmem_alloc(vm[k], units * UNIT, 0, &d[k]);
            ck_assert_int_eq(st[0], st[1]);
            if (st[0] == UTIL_OK) {
                ck_assert_uint_eq(d[0].start, d[1].start);
                ck_assert_uint_eq(d[0].end, d[1].end);
                live[0][n] = d[0];
                live[1][n] = d[1];
                n++;
            }
        } else {
            uint64_t j = in_order ? 0 : (rng >> 8) % n;
            for (int k = 0; k < 2; k++) {
                raddr_t gone = live[k][j];
                ck_assert_int_eq(rmalloc_vmem_free(vm[k], &live[k][j]), UTIL_OK);
                ck_assert_int_eq(rmalloc_vmem_free(vm[k], &gone), UTIL_ERR_INVALID);
                memmove(&live[k][j], &live[k][j + 1], (n - j - 1) * sizeof(raddr_t));
            }
            n--;
        }
        if (op % 500 == 0) {
            for (int k = 0; k < 2; k++) ck_assert_int_eq(rmalloc_vmem_check(vm[k]), UTIL_OK);
            ck_assert_uint_eq(rmalloc_vmem_live_count(vm[0]), rmalloc_vmem_live_count(vm[1]));
            ck_assert_uint_eq(rmalloc_vmem_used_units(vm[0]), rmalloc_vmem_used_units(vm[1]));
        }
    }
    for (int k = 0; k < 2; k++) {
        for (uint64_t j = 0; j < n; j++)
            ck_assert_int_eq(rmalloc_vmem_free(vm[k], &live[k][j]), UTIL_OK);
        ck_assert_uint_eq(rmalloc_vmem_used_units(vm[k]), 0);
        ck_assert_int_eq(rmalloc_vmem_check(vm[k]), UTIL_OK);
        rmalloc_vmem_destroy(vm[k]);
    }
}
END_TEST

/* Claims mode: the consumer's instance of the tag and channel protocols. */
START_TEST(test_claims_mode)
{
    static uint8_t mem[UNITS * UNIT];
    rmalloc_vmem_t *vm = make(RMALLOC_NEXT_FIT, mem, UNITS, RMALLOC_VMEM_CLAIMS);
    raddr_t a, b, c, stale;
    uint64_t peer_id;
    uint32_t peer_block;

    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 8, 0, &a), UTIL_ERR_UNSUPPORTED);
    /* claims land anywhere, in any order, straddling bitmap words */
    ck_assert_int_eq(rmalloc_vmem_claim(vm, 60, 10, 500, 77, 5, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_claim(vm, 0, 1, 8, 78, 6, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_claim(vm, UNITS - 130, 130, 8000, 79, 7, &c), UTIL_OK);
    ck_assert_uint_eq(a.start, 60);
    ck_assert_uint_eq(a.end, 70);
    ck_assert_uint_eq(a.payload, 500);
    ck_assert_ptr_eq(rmalloc_vmem_ptr(vm, &a), mem + 60 * UNIT);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), 141);
    ck_assert_uint_eq(rmalloc_vmem_live_count(vm), 3);
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_ALLOC), 3);
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_FREE), 2);
    ck_assert_int_eq(rmalloc_vmem_peer(vm, &a, &peer_id, &peer_block), UTIL_OK);
    ck_assert_uint_eq(peer_id, 77);
    ck_assert_uint_eq(peer_block, 5);
    /* overlaps (inside, across either edge) and out-of-region claims fail */
    ck_assert_int_eq(rmalloc_vmem_claim(vm, 64, 1, 8, 1, 1, &stale), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_vmem_claim(vm, 55, 6, 8, 1, 1, &stale), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_vmem_claim(vm, 69, 3, 8, 1, 1, &stale), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_vmem_claim(vm, UNITS - 1, 2, 8, 1, 1, &stale), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_vmem_claim(vm, 10, 0, 8, 1, 1, &stale), UTIL_ERR_INVALID);
    ck_assert_uint_eq(rmalloc_vmem_live_count(vm), 3);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    /* free out of order; a freed or altered descriptor is refused */
    stale = a;
    ck_assert_int_eq(rmalloc_vmem_free(vm, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &stale), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_vmem_peer(vm, &stale, &peer_id, &peer_block), UTIL_ERR_INVALID);
    stale = b;
    stale.end++;
    ck_assert_int_eq(rmalloc_vmem_free(vm, &stale), UTIL_ERR_INVALID);
    stale = b;
    stale.block = 1u << 30;
    ck_assert_int_eq(rmalloc_vmem_free(vm, &stale), UTIL_ERR_INVALID);
    /* the freed units can be claimed again; the old descriptor stays dead */
    ck_assert_int_eq(rmalloc_vmem_claim(vm, 62, 8, 400, 80, 8, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &stale), UTIL_ERR_INVALID);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), 139);
    ck_assert_int_eq(rmalloc_vmem_realloc(vm, &a, 8, &stale), UTIL_ERR_UNSUPPORTED);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    /* many live claims: the record table grows */
    ck_assert_int_eq(rmalloc_vmem_free(vm, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &c), UTIL_OK);
    static raddr_t all[UNITS];
    for (uint64_t u = 0; u < UNITS; u++)
        ck_assert_int_eq(rmalloc_vmem_claim(vm, u, 1, 8, u, (uint32_t)u, &all[u]), UTIL_OK);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), UNITS);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    for (uint64_t u = UNITS; u-- > 0;) ck_assert_int_eq(rmalloc_vmem_free(vm, &all[u]), UTIL_OK);
    ck_assert_uint_eq(rmalloc_vmem_live_count(vm), 0);
    ck_assert_uint_eq(count_blocks(vm, RMALLOC_BLOCK_FREE), 1);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    rmalloc_vmem_destroy(vm);
}
END_TEST

START_TEST(test_ring_retire)
{
    rmalloc_vmem_t *vm = make(RMALLOC_NEXT_FIT, NULL, 100, RMALLOC_VMEM_RING);
    raddr_t a, b;
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 10 * UNIT, 0, &a), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 20 * UNIT, 0, &b), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_ring_retire(vm, 15), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_vmem_ring_retire(vm, 31), UTIL_ERR_INVALID);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), 30);
    ck_assert_int_eq(rmalloc_vmem_ring_retire(vm, 10), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_free(vm, &a), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_vmem_ring_retire(vm, 20), UTIL_OK);
    ck_assert_uint_eq(rmalloc_vmem_used_units(vm), 0);
    ck_assert_int_eq(rmalloc_vmem_check(vm), UTIL_OK);
    rmalloc_vmem_destroy(vm);
}
END_TEST

START_TEST(test_limits_and_header)
{
    /* A shadow of 2^33 one-byte units: the 2^31-unit allocation limit. */
    rmalloc_vmem_config_t cfg = {
        .size = UINT64_C(1) << 33, .unit = 1, .heuristic = RMALLOC_BEST_FIT};
    rmalloc_vmem_t *vm;
    raddr_t d;
    ck_assert_int_eq(rmalloc_vmem_create(&cfg, &vm), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, RMALLOC_MAX_UNITS, 0, &d), UTIL_OK);
    ck_assert_ptr_null(rmalloc_vmem_ptr(vm, &d)); /* shadow: not mapped */
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, RMALLOC_MAX_UNITS + 1, 0, &d), UTIL_ERR_INVALID);
    rmalloc_vmem_destroy(vm);

    cfg.size = 4096;
    cfg.unit = 8;
    cfg.header_bytes = 8;
    ck_assert_int_eq(rmalloc_vmem_create(&cfg, &vm), UTIL_OK);
    ck_assert_int_eq(rmalloc_vmem_alloc(vm, 13, 0, &d), UTIL_OK);
    ck_assert_uint_eq(d.end - d.start, 3); /* 16 payload + 8 header */
    ck_assert_uint_eq(rmalloc_desc_flag_offset(&d), 16);
    ck_assert_uint_eq(rmalloc_desc_bytes(&d), 24);
    rmalloc_vmem_destroy(vm);
}
END_TEST

START_TEST(test_heuristic_names)
{
    rmalloc_heuristic_t h;
    ck_assert_int_eq(rmalloc_heuristic_parse("best", &h), UTIL_OK);
    ck_assert_int_eq(h, RMALLOC_BEST_FIT);
    ck_assert_int_eq(rmalloc_heuristic_parse("Worst-Fit", &h), UTIL_OK);
    ck_assert_int_eq(h, RMALLOC_WORST_FIT);
    ck_assert_int_eq(rmalloc_heuristic_parse("fastest", &h), UTIL_ERR_INVALID);
    ck_assert_str_eq(rmalloc_heuristic_name(RMALLOC_NEXT_FIT), "next-fit");
}
END_TEST

/* ---- symmetric mode ------------------------------------------------------ */

START_TEST(test_symm_basic)
{
    size_t size = 1 << 20;
    void *heap = aligned_alloc(4096, size);
    rmalloc_symm_t *s;
    void *p, *q, *r;
    uint64_t off;

    ck_assert_int_eq(rmalloc_symm_create(heap, size, 16, RMALLOC_FIRST_FIT, &s), UTIL_OK);
    ck_assert_int_eq(rmalloc_symm_alloc(s, 0, 0, &p), UTIL_OK);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(rmalloc_symm_alloc(s, 100, 0, &p), UTIL_OK);
    ck_assert_int_eq(rmalloc_symm_alloc(s, 100, 4096, &q), UTIL_OK);
    ck_assert_uint_eq((uintptr_t)q % 4096, 0);
    ck_assert_int_eq(rmalloc_symm_offset(s, q, &off), UTIL_OK);
    ck_assert_ptr_eq(rmalloc_symm_ptr(s, off), q);
    ck_assert_int_eq(rmalloc_symm_offset(s, (char *)heap + size, &off), UTIL_ERR_INVALID);
    ck_assert_ptr_null(rmalloc_symm_ptr(s, size));
    memset(p, 0xab, 100);
    ck_assert_int_eq(rmalloc_symm_realloc(s, p, 5000, &r), UTIL_OK); /* q blocks it: moves */
    ck_assert_ptr_ne(r, p);
    ck_assert_uint_eq(((unsigned char *)r)[99], 0xab);
    ck_assert_uint_ge(rmalloc_symm_usable_size(s, r), 5000);
    ck_assert_uint_eq(rmalloc_symm_usable_size(s, p), 0);
    ck_assert_int_eq(rmalloc_symm_free(s, p), UTIL_ERR_INVALID); /* moved away */
    ck_assert_int_eq(rmalloc_symm_free(s, (char *)r + 16), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_symm_realloc(s, r, 0, &r), UTIL_OK);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(rmalloc_symm_free(s, q), UTIL_OK);
    ck_assert_int_eq(rmalloc_symm_free(s, NULL), UTIL_OK);
    ck_assert_int_eq(rmalloc_symm_alloc(s, size + 1, 0, &p), UTIL_ERR_INVALID);
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_symm_vmem(s)), 0);
    rmalloc_symm_destroy(s);
    free(heap);
}
END_TEST

/* Two "PEs" run the same random sequence: offsets must match step by step. */
START_TEST(test_symm_identical_sequences)
{
    size_t size = 1 << 22;
    void *heap[2] = {aligned_alloc(4096, size), aligned_alloc(4096, size)};
    rmalloc_symm_t *s[2];
    void *live[2][512] = {{0}};
    uint64_t rng = 12345;

    for (int pe = 0; pe < 2; pe++)
        ck_assert_int_eq(rmalloc_symm_create(heap[pe], size, 64, (rmalloc_heuristic_t)_i, &s[pe]),
                         UTIL_OK);
    for (int step = 0; step < 20000; step++) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned k = (unsigned)(rng >> 33) % 512, op = (unsigned)(rng >> 20) % 3;
        size_t sz = 1 + (size_t)((rng >> 40) % 9000), al = (op == 2) ? 256 : 0;
        util_status_t st[2];
        for (int pe = 0; pe < 2; pe++) {
            if (live[pe][k] == NULL)
                st[pe] = rmalloc_symm_alloc(s[pe], sz, al, &live[pe][k]);
            else if (op == 0)
                st[pe] = rmalloc_symm_realloc(s[pe], live[pe][k], sz, &live[pe][k]);
            else {
                st[pe] = rmalloc_symm_free(s[pe], live[pe][k]);
                live[pe][k] = NULL;
            }
        }
        ck_assert_int_eq(st[0], st[1]);
        ck_assert(st[0] == UTIL_OK || st[0] == UTIL_ERR_NO_RESOURCE);
        long off[2];
        for (int pe = 0; pe < 2; pe++)
            off[pe] = live[pe][k] ? (char *)live[pe][k] - (char *)heap[pe] : -1;
        ck_assert_int_eq(off[0], off[1]);
    }
    ck_assert_int_eq(rmalloc_vmem_check(rmalloc_symm_vmem(s[0])), UTIL_OK);
    for (int pe = 0; pe < 2; pe++) {
        rmalloc_symm_destroy(s[pe]);
        free(heap[pe]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rmalloc_vmem");
    TCase *tc = tcase_create("heuristics");
    tcase_add_test(tc, test_create_invalid);
    tcase_add_loop_test(tc, test_basic, 0, RMALLOC_HEURISTIC_COUNT);
    tcase_add_loop_test(tc, test_fill_and_coalesce, 0, RMALLOC_HEURISTIC_COUNT);
    tcase_add_loop_test(tc, test_bad_descriptors, 0, RMALLOC_HEURISTIC_COUNT);
    tcase_add_loop_test(tc, test_align, 0, RMALLOC_HEURISTIC_COUNT);
    tcase_add_test(tc, test_realloc);
    tcase_add_test(tc, test_placement);
    tcase_add_test(tc, test_next_fit_wraps_cursor);
    tcase_add_test(tc, test_ring_wrap_and_release_order);
    tcase_add_test(tc, test_ring_retire);
    tcase_add_test(tc, test_claims_mode);
    tcase_add_test(tc, test_ring_first_gap);
    tcase_add_test(tc, test_free_n);
    tcase_add_loop_test(tc, test_ring_first_same_placements, 0, 4);
    tcase_add_test(tc, test_limits_and_header);
    tcase_add_test(tc, test_heuristic_names);
    suite_add_tcase(s, tc);
    TCase *ts = tcase_create("symmetric");
    tcase_add_test(ts, test_symm_basic);
    tcase_add_loop_test(ts, test_symm_identical_sequences, 0, RMALLOC_HEURISTIC_COUNT);
    suite_add_tcase(s, ts);

    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
