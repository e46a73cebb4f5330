/*
 * OpenSHMEM atomic memory operations. Values travel as 4- or 8-byte bit
 * patterns (two's complement for integers, IEEE bits for float/double),
 * so one helper per operation serves every type. Each routine exists for
 * the default context and as shmem_ctx_* (PE numbered in the context's
 * team). The fetching _nbi forms fetch at once: the value is in *fetch
 * when they return, earlier than the next quiet that the spec allows.
 */
#include "shmem/shmem.h"
#include "shmem/shmem_types.h"
#include "shmem/shmemi.h"

#include <string.h>

/* shmem_ctx.c: the world PE of a context's team PE (fatal on
 * SHMEM_CTX_INVALID). Wanted in shmemi.h. */

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

/* Every routine is written once, for a context C and a PE expression:
 * the public routines instantiate it with the default context (PE as
 * given, no translation) and with a ctx argument. */
#define SHMEMI_PE_DEF(call) pe
#define SHMEMI_PE_CTX(call) shmemi_ctx_pe(call, ctx, pe)
#define SHMEMI_NAME_DEF(N, op) shmem_##N##_##op
#define SHMEMI_NAME_CTX(N, op) shmem_ctx_##N##_##op
#define SHMEMI_ARG_DEF
#define SHMEMI_ARG_CTX shmem_ctx_t ctx,
#define SHMEMI_CALL_DEF(N, op) "shmem_" #N "_" #op
#define SHMEMI_CALL_CTX(N, op) "shmem_ctx_" #N "_" #op

#define SHMEMI_AMO_EXT(T, N, K)                                                                  \
    T SHMEMI_NAME_##K(N, atomic_fetch)(SHMEMI_ARG_##K const T *s, int pe) { T o; shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_fetch), (void *)s, BTL_AMO_FETCH, NULL, NULL, &o, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_fetch))); return o; } \
    void SHMEMI_NAME_##K(N, atomic_set)(SHMEMI_ARG_##K T *d, T v, int pe) { shmemi_amo_post(SHMEMI_CALL_##K(N, atomic_set), d, BTL_AMO_SET, sizeof(T), shmemi_bits(&v, sizeof(T)), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_set))); } \
    T SHMEMI_NAME_##K(N, atomic_swap)(SHMEMI_ARG_##K T *d, T v, int pe) { T o; shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_swap), d, BTL_AMO_SWAP, &v, NULL, &o, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_swap))); return o; } \
    void SHMEMI_NAME_##K(N, atomic_fetch_nbi)(SHMEMI_ARG_##K T *f, const T *s, int pe) { shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_fetch_nbi), (void *)s, BTL_AMO_FETCH, NULL, NULL, f, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_fetch_nbi))); } \
    void SHMEMI_NAME_##K(N, atomic_swap_nbi)(SHMEMI_ARG_##K T *f, T *d, T v, int pe) { shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_swap_nbi), d, BTL_AMO_SWAP, &v, NULL, f, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_swap_nbi))); }

#define SHMEMI_AMO_STD(T, N, K)                                                                  \
    T SHMEMI_NAME_##K(N, atomic_compare_swap)(SHMEMI_ARG_##K T *d, T c, T v, int pe) { T o; shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_compare_swap), d, BTL_AMO_CSWAP, &v, &c, &o, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_compare_swap))); return o; } \
    T SHMEMI_NAME_##K(N, atomic_fetch_inc)(SHMEMI_ARG_##K T *d, int pe) { T one = 1, o; shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_fetch_inc), d, BTL_AMO_ADD, &one, NULL, &o, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_fetch_inc))); return o; } \
    void SHMEMI_NAME_##K(N, atomic_inc)(SHMEMI_ARG_##K T *d, int pe) { shmemi_amo_post(SHMEMI_CALL_##K(N, atomic_inc), d, BTL_AMO_ADD, sizeof(T), 1, SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_inc))); } \
    T SHMEMI_NAME_##K(N, atomic_fetch_add)(SHMEMI_ARG_##K T *d, T v, int pe) { T o; shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_fetch_add), d, BTL_AMO_ADD, &v, NULL, &o, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_fetch_add))); return o; } \
    void SHMEMI_NAME_##K(N, atomic_add)(SHMEMI_ARG_##K T *d, T v, int pe) { shmemi_amo_post(SHMEMI_CALL_##K(N, atomic_add), d, BTL_AMO_ADD, sizeof(T), shmemi_bits(&v, sizeof(T)), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_add))); } \
    void SHMEMI_NAME_##K(N, atomic_compare_swap_nbi)(SHMEMI_ARG_##K T *f, T *d, T c, T v, int pe) { shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_compare_swap_nbi), d, BTL_AMO_CSWAP, &v, &c, f, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_compare_swap_nbi))); } \
    void SHMEMI_NAME_##K(N, atomic_fetch_inc_nbi)(SHMEMI_ARG_##K T *f, T *d, int pe) { T one = 1; shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_fetch_inc_nbi), d, BTL_AMO_ADD, &one, NULL, f, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_fetch_inc_nbi))); } \
    void SHMEMI_NAME_##K(N, atomic_fetch_add_nbi)(SHMEMI_ARG_##K T *f, T *d, T v, int pe) { shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_fetch_add_nbi), d, BTL_AMO_ADD, &v, NULL, f, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_fetch_add_nbi))); }

#define SHMEMI_AMO_BITOP(T, N, K, OP, BTLOP)                                                     \
    T SHMEMI_NAME_##K(N, atomic_fetch_##OP)(SHMEMI_ARG_##K T *d, T v, int pe) { T o; shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_fetch_##OP), d, BTLOP, &v, NULL, &o, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_fetch_##OP))); return o; } \
    void SHMEMI_NAME_##K(N, atomic_##OP)(SHMEMI_ARG_##K T *d, T v, int pe) { shmemi_amo_post(SHMEMI_CALL_##K(N, atomic_##OP), d, BTLOP, sizeof(T), shmemi_bits(&v, sizeof(T)), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_##OP))); } \
    void SHMEMI_NAME_##K(N, atomic_fetch_##OP##_nbi)(SHMEMI_ARG_##K T *f, T *d, T v, int pe) { shmemi_amo_typed(SHMEMI_CALL_##K(N, atomic_fetch_##OP##_nbi), d, BTLOP, &v, NULL, f, sizeof(T), SHMEMI_PE_##K(SHMEMI_CALL_##K(N, atomic_fetch_##OP##_nbi))); }
#define SHMEMI_AMO_BIT(T, N, K)                                                                  \
    SHMEMI_AMO_BITOP(T, N, K, and, BTL_AMO_AND)                                                  \
    SHMEMI_AMO_BITOP(T, N, K, or, BTL_AMO_OR)                                                    \
    SHMEMI_AMO_BITOP(T, N, K, xor, BTL_AMO_XOR)

#define SHMEMI_DEFINE_AMO_EXT(T, N) SHMEMI_AMO_EXT(T, N, DEF) SHMEMI_AMO_EXT(T, N, CTX)
#define SHMEMI_DEFINE_AMO_STD(T, N) SHMEMI_AMO_STD(T, N, DEF) SHMEMI_AMO_STD(T, N, CTX)
#define SHMEMI_DEFINE_AMO_BIT(T, N) SHMEMI_AMO_BIT(T, N, DEF) SHMEMI_AMO_BIT(T, N, CTX)
SHMEMI_AMO_STD_TYPES(SHMEMI_DEFINE_AMO_EXT)
SHMEMI_AMO_FLOAT_TYPES(SHMEMI_DEFINE_AMO_EXT)
SHMEMI_AMO_STD_TYPES(SHMEMI_DEFINE_AMO_STD)
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
