/*
 * OpenSHMEM atomic memory operations. Values travel as 4- or 8-byte bit
 * patterns (two's complement for integers, IEEE bits for float/double),
 * so one helper per operation serves every type.
 */
#include "shmem/shmem.h"
#include "shmem/shmem_types.h"
#include "shmem/shmemi.h"

#include <string.h>

static inline uint64_t shmemi_bits(const void *v, unsigned size)
{
    uint64_t b = 0;
    memcpy(&b, v, size); /* little-endian: the low bytes */
    return b;
}

static inline void shmemi_amo_typed(const char *call, void *dest, btl_amo_op_t op, const void *value,
                                    const void *cond, void *old, unsigned size, int pe)
{
    uint64_t result = shmemi_amo_fetch(call, dest, op, size, value ? shmemi_bits(value, size) : 0,
                                       cond ? shmemi_bits(cond, size) : 0, pe);
    if (old != NULL) {
        memcpy(old, &result, size);
    }
}

#define SHMEMI_DEFINE_AMO_EXT(T, N)                                                              \
    T shmem_##N##_atomic_fetch(const T *s, int pe) { T o; shmemi_amo_typed("shmem_" #N "_atomic_fetch", (void *)s, BTL_AMO_FETCH, NULL, NULL, &o, sizeof(T), pe); return o; } \
    void shmem_##N##_atomic_set(T *d, T v, int pe) { shmemi_amo_post("shmem_" #N "_atomic_set", d, BTL_AMO_SET, sizeof(T), shmemi_bits(&v, sizeof(T)), pe); } \
    T shmem_##N##_atomic_swap(T *d, T v, int pe) { T o; shmemi_amo_typed("shmem_" #N "_atomic_swap", d, BTL_AMO_SWAP, &v, NULL, &o, sizeof(T), pe); return o; }
SHMEMI_AMO_STD_TYPES(SHMEMI_DEFINE_AMO_EXT)
SHMEMI_AMO_FLOAT_TYPES(SHMEMI_DEFINE_AMO_EXT)

#define SHMEMI_DEFINE_AMO_STD(T, N)                                                              \
    T shmem_##N##_atomic_compare_swap(T *d, T c, T v, int pe) { T o; shmemi_amo_typed("shmem_" #N "_atomic_compare_swap", d, BTL_AMO_CSWAP, &v, &c, &o, sizeof(T), pe); return o; } \
    T shmem_##N##_atomic_fetch_inc(T *d, int pe) { T one = 1, o; shmemi_amo_typed("shmem_" #N "_atomic_fetch_inc", d, BTL_AMO_ADD, &one, NULL, &o, sizeof(T), pe); return o; } \
    void shmem_##N##_atomic_inc(T *d, int pe) { shmemi_amo_post("shmem_" #N "_atomic_inc", d, BTL_AMO_ADD, sizeof(T), 1, pe); } \
    T shmem_##N##_atomic_fetch_add(T *d, T v, int pe) { T o; shmemi_amo_typed("shmem_" #N "_atomic_fetch_add", d, BTL_AMO_ADD, &v, NULL, &o, sizeof(T), pe); return o; } \
    void shmem_##N##_atomic_add(T *d, T v, int pe) { shmemi_amo_post("shmem_" #N "_atomic_add", d, BTL_AMO_ADD, sizeof(T), shmemi_bits(&v, sizeof(T)), pe); }
SHMEMI_AMO_STD_TYPES(SHMEMI_DEFINE_AMO_STD)

#define SHMEMI_DEFINE_AMO_BIT(T, N)                                                              \
    T shmem_##N##_atomic_fetch_and(T *d, T v, int pe) { T o; shmemi_amo_typed("shmem_" #N "_atomic_fetch_and", d, BTL_AMO_AND, &v, NULL, &o, sizeof(T), pe); return o; } \
    void shmem_##N##_atomic_and(T *d, T v, int pe) { shmemi_amo_post("shmem_" #N "_atomic_and", d, BTL_AMO_AND, sizeof(T), shmemi_bits(&v, sizeof(T)), pe); } \
    T shmem_##N##_atomic_fetch_or(T *d, T v, int pe) { T o; shmemi_amo_typed("shmem_" #N "_atomic_fetch_or", d, BTL_AMO_OR, &v, NULL, &o, sizeof(T), pe); return o; } \
    void shmem_##N##_atomic_or(T *d, T v, int pe) { shmemi_amo_post("shmem_" #N "_atomic_or", d, BTL_AMO_OR, sizeof(T), shmemi_bits(&v, sizeof(T)), pe); } \
    T shmem_##N##_atomic_fetch_xor(T *d, T v, int pe) { T o; shmemi_amo_typed("shmem_" #N "_atomic_fetch_xor", d, BTL_AMO_XOR, &v, NULL, &o, sizeof(T), pe); return o; } \
    void shmem_##N##_atomic_xor(T *d, T v, int pe) { shmemi_amo_post("shmem_" #N "_atomic_xor", d, BTL_AMO_XOR, sizeof(T), shmemi_bits(&v, sizeof(T)), pe); }
SHMEMI_AMO_BIT_TYPES(SHMEMI_DEFINE_AMO_BIT)

/* Deprecated 1.3 names: int, long, long long (and float/double for
 * fetch/set/swap) call the 1.4 routines. */
#define SHMEMI_DEFINE_AMO_OLD_EXT(T, N)                                                          \
    T shmem_##N##_fetch(const T *s, int pe) { return shmem_##N##_atomic_fetch(s, pe); }        \
    void shmem_##N##_set(T *d, T v, int pe) { shmem_##N##_atomic_set(d, v, pe); }              \
    T shmem_##N##_swap(T *d, T v, int pe) { return shmem_##N##_atomic_swap(d, v, pe); }
#define SHMEMI_DEFINE_AMO_OLD(T, N)                                                              \
    SHMEMI_DEFINE_AMO_OLD_EXT(T, N)                                                             \
    T shmem_##N##_cswap(T *d, T c, T v, int pe) { return shmem_##N##_atomic_compare_swap(d, c, v, pe); } \
    T shmem_##N##_finc(T *d, int pe) { return shmem_##N##_atomic_fetch_inc(d, pe); }           \
    void shmem_##N##_inc(T *d, int pe) { shmem_##N##_atomic_inc(d, pe); }                      \
    T shmem_##N##_fadd(T *d, T v, int pe) { return shmem_##N##_atomic_fetch_add(d, v, pe); }   \
    void shmem_##N##_add(T *d, T v, int pe) { shmem_##N##_atomic_add(d, v, pe); }
SHMEMI_DEFINE_AMO_OLD(int, int)
SHMEMI_DEFINE_AMO_OLD(long, long)
SHMEMI_DEFINE_AMO_OLD(long long, longlong)
SHMEMI_DEFINE_AMO_OLD_EXT(float, float)
SHMEMI_DEFINE_AMO_OLD_EXT(double, double)
