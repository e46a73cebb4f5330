/*
 * CPU atomics on memory this process maps: an on-node peer's segment
 * (rpipe_sym, btl/shm) or btl/mpi's shared pool. The one place that turns
 * a btl_amo_op_t and a size into an __atomic builtin, so every path has the
 * same memory orders; docs/btl.md ("CPU atomics") says why these.
 *
 *   read-modify-write (SWAP, CSWAP, SET in a fetch, ADD, AND, OR, XOR):
 *           SEQ_CST. Locks and flags built from atomics need at least
 *           ACQ_REL, which compiles to the same instruction (x86-64: a
 *           locked one, AArch64: the *AL form); SEQ_CST adds one order
 *           over all atomics for free.
 *   FETCH:  SEQ_CST load: at least acquire, which a fetch polled as a flag
 *           needs; on x86-64 a plain load either way.
 *   non-fetching SET: RELEASE store. Nothing reads its old value, and
 *           OpenSHMEM orders it with later operations only through fence
 *           and quiet, which are fences of their own; release keeps what
 *           was written before it visible first (a put then a set flag).
 *
 * Callers check op and size (4 or 8, naturally aligned) beforehand.
 */
#ifndef BTL_CPU_AMO_H
#define BTL_CPU_AMO_H

#include "btl/btl.h"

#include <stdint.h>

/* Always inlined: the callers are inline fast paths, and out of line this
 * switch would cost them a call (measured: +2 ns per shmem atomic_fetch). */
#define BTL_CPU_AMO_INLINE static inline __attribute__((always_inline))

/* The old value (zero-extended for 4 bytes). SET behaves as SWAP. */
BTL_CPU_AMO_INLINE uint64_t btl_cpu_amo_fetch(btl_amo_op_t op, unsigned size, void *ptr,
                                              uint64_t operand, uint64_t compare)
{
    if (size == 8) {
        uint64_t *w = ptr, old = compare;
        switch (op) {
        case BTL_AMO_FETCH:
            return __atomic_load_n(w, __ATOMIC_SEQ_CST);
        case BTL_AMO_SET:
        case BTL_AMO_SWAP:
            return __atomic_exchange_n(w, operand, __ATOMIC_SEQ_CST);
        case BTL_AMO_CSWAP:
            __atomic_compare_exchange_n(w, &old, operand, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return old;
        case BTL_AMO_ADD:
            return __atomic_fetch_add(w, operand, __ATOMIC_SEQ_CST);
        case BTL_AMO_AND:
            return __atomic_fetch_and(w, operand, __ATOMIC_SEQ_CST);
        case BTL_AMO_OR:
            return __atomic_fetch_or(w, operand, __ATOMIC_SEQ_CST);
        case BTL_AMO_XOR:
            return __atomic_fetch_xor(w, operand, __ATOMIC_SEQ_CST);
        default:
            return 0;
        }
    } else {
        uint32_t *w = ptr, v = (uint32_t)operand, old = (uint32_t)compare;
        switch (op) {
        case BTL_AMO_FETCH:
            return __atomic_load_n(w, __ATOMIC_SEQ_CST);
        case BTL_AMO_SET:
        case BTL_AMO_SWAP:
            return __atomic_exchange_n(w, v, __ATOMIC_SEQ_CST);
        case BTL_AMO_CSWAP:
            __atomic_compare_exchange_n(w, &old, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return old;
        case BTL_AMO_ADD:
            return __atomic_fetch_add(w, v, __ATOMIC_SEQ_CST);
        case BTL_AMO_AND:
            return __atomic_fetch_and(w, v, __ATOMIC_SEQ_CST);
        case BTL_AMO_OR:
            return __atomic_fetch_or(w, v, __ATOMIC_SEQ_CST);
        case BTL_AMO_XOR:
            return __atomic_fetch_xor(w, v, __ATOMIC_SEQ_CST);
        default:
            return 0;
        }
    }
}

/* The value op leaves in a word that held old, for read-modify-write loops
 * and emulations that cannot use one builtin (a compare-and-swap loop, a
 * locked word, a NIC without the operation); FETCH leaves it unchanged. */
static inline uint64_t btl_amo_combine(btl_amo_op_t op, uint64_t old, uint64_t operand,
                                       uint64_t compare)
{
    switch (op) {
    case BTL_AMO_SET:
    case BTL_AMO_SWAP:
        return operand;
    case BTL_AMO_CSWAP:
        return old == compare ? operand : old;
    case BTL_AMO_ADD:
        return old + operand;
    case BTL_AMO_AND:
        return old & operand;
    case BTL_AMO_OR:
        return old | operand;
    case BTL_AMO_XOR:
        return old ^ operand;
    default:
        return old; /* FETCH */
    }
}

/* The non-fetching form: SET, ADD, AND, OR, XOR. */
BTL_CPU_AMO_INLINE void btl_cpu_amo_post(btl_amo_op_t op, unsigned size, void *ptr,
                                         uint64_t operand)
{
    if (op == BTL_AMO_SET) {
        if (size == 8) {
            __atomic_store_n((uint64_t *)ptr, operand, __ATOMIC_RELEASE);
        } else {
            __atomic_store_n((uint32_t *)ptr, (uint32_t)operand, __ATOMIC_RELEASE);
        }
        return;
    }
    (void)btl_cpu_amo_fetch(op, size, ptr, operand, 0);
}

#endif
