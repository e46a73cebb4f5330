/*
 * Point-to-point synchronization: the helpers that the typed wait_until
 * and test routines of shmem_typed_sync.c call. The single-ivar forms
 * inline the whole poll (one acquire load and one compare, size and
 * signedness constant in each routine); the set forms (_all, _any, _some
 * and their _vector variants) describe the set in a shmemi_set_t and call
 * the scan in shmem_sync.c.
 */
#ifndef SHMEM_SYNC_INL_H
#define SHMEM_SYNC_INL_H

#include "shmem/shmemi.h"

/* Inlined into each typed routine, so that size and signedness are
 * constants there and a poll is one load and one compare. */
#define SHMEMI_INLINE static inline __attribute__((always_inline))

/* x (the loaded ivar) against y, both as size-byte values (2, 4 or 8). */
SHMEMI_INLINE int shmemi_compare_bits(uint64_t x, int cmp, const void *value, unsigned size,
                                      int is_signed)
{
    int64_t a, b;

    if (size == 8) {
        uint64_t y;
        __builtin_memcpy(&y, value, 8);
        if (!is_signed) {
            switch (cmp) {
            case SHMEM_CMP_EQ:
                return x == y;
            case SHMEM_CMP_NE:
                return x != y;
            case SHMEM_CMP_GT:
                return x > y;
            case SHMEM_CMP_LE:
                return x <= y;
            case SHMEM_CMP_LT:
                return x < y;
            case SHMEM_CMP_GE:
                return x >= y;
            }
        }
        a = (int64_t)x;
        b = (int64_t)y;
    } else if (size == 4) {
        uint32_t y;
        __builtin_memcpy(&y, value, 4);
        a = is_signed ? (int64_t)(int32_t)x : (int64_t)(uint32_t)x;
        b = is_signed ? (int64_t)(int32_t)y : (int64_t)y;
    } else {
        uint16_t y;
        __builtin_memcpy(&y, value, 2);
        a = is_signed ? (int64_t)(int16_t)x : (int64_t)(uint16_t)x;
        b = is_signed ? (int64_t)(int16_t)y : (int64_t)y;
    }
    switch (cmp) {
    case SHMEM_CMP_EQ:
        return a == b;
    case SHMEM_CMP_NE:
        return a != b;
    case SHMEM_CMP_GT:
        return a > b;
    case SHMEM_CMP_LE:
        return a <= b;
    case SHMEM_CMP_LT:
        return a < b;
    case SHMEM_CMP_GE:
        return a >= b;
    }
    shmemi_fatal("shmem wait/test: comparison %d is not a SHMEM_CMP_* value", cmp);
}

/* Acquire load: what was written before the update is visible after it. */
SHMEMI_INLINE uint64_t shmemi_load(const volatile void *ivar, unsigned size)
{
    if (size == 8) {
        return __atomic_load_n((const volatile uint64_t *)ivar, __ATOMIC_ACQUIRE);
    }
    if (size == 4) {
        return __atomic_load_n((const volatile uint32_t *)ivar, __ATOMIC_ACQUIRE);
    }
    return __atomic_load_n((const volatile uint16_t *)ivar, __ATOMIC_ACQUIRE);
}

SHMEMI_INLINE int shmemi_compare(const volatile void *ivar, int cmp, const void *value,
                                 unsigned size, int is_signed)
{
    return shmemi_compare_bits(shmemi_load(ivar, size), cmp, value, size, is_signed);
}

SHMEMI_INLINE int shmemi_test_inl(const volatile void *ivar, int cmp, const void *value,
                                  unsigned size, int is_signed)
{
    if (shmemi_compare(ivar, cmp, value, size, is_signed)) {
        rpipe_sym_poll(); /* a loop of satisfied tests still serves peers */
        return 1;
    }
    rpipe_sym_progress();
    return 0;
}

SHMEMI_INLINE void shmemi_wait_inl(const volatile void *ivar, int cmp, const void *value,
                                   unsigned size, int is_signed)
{
    util_wait_t polls = UTIL_WAIT_INIT;

    while (!shmemi_compare(ivar, cmp, value, size, is_signed)) {
        shmemi_relax(&polls);
    }
    rpipe_sym_poll(); /* a loop of waits satisfied at once still serves peers */
}

/* ---- wait/test over sets of ivars (1.5): _all, _any, _some, and _vector ------------------
 * One scan helper serves them all: element i takes part unless status[i]
 * is non-zero, and is compared with values[i] (vector forms) or with the
 * one value. _any scans from a rotating start, so that a series of calls
 * eventually returns every satisfied element, not always the first. */

enum { SHMEMI_SET_ALL, SHMEMI_SET_ANY, SHMEMI_SET_SOME };

typedef struct {
    const char *ivars;
    size_t nelems;
    const int *status;
    int cmp;
    const char *values;
    size_t vstride; /* 0: one value for every element */
    unsigned size;
    int is_signed;
} shmemi_set_t;

/* One pass. ALL: 1 if every member is satisfied; ANY: a satisfied index
 * or SIZE_MAX; SOME: the number of satisfied indices written to indices.
 * *members_p: whether the set has members at all. */
size_t shmemi_set_scan(const shmemi_set_t *set, int kind, size_t *indices, int *members_p);

/* Wait until the set is satisfied; returns what the satisfying scan did
 * (ALL: 1). */
size_t shmemi_set_wait(const shmemi_set_t *set, int kind, size_t *indices);

/* One scan, then progress if the set is not satisfied yet. */
static inline size_t shmemi_set_test(const shmemi_set_t *set, int kind, size_t *indices)
{
    int members;
    size_t r = shmemi_set_scan(set, kind, indices, &members);

    if (members && r == (kind == SHMEMI_SET_ANY ? SIZE_MAX : 0)) {
        rpipe_sym_progress(); /* not yet: let the btl move (as shmemi_test) */
    } else {
        rpipe_sym_poll();
    }
    return r;
}

#endif
