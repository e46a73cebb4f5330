/*
 * OpenSHMEM atomic memory operations: the helpers that the typed routines
 * of shmem_typed_amo.c call. Values travel as 4- or 8-byte bit patterns
 * (two's complement for integers, IEEE bits for float/double), so one
 * helper per operation serves every type. Each routine exists for the
 * default context and as shmem_ctx_* (PE numbered in the context's team).
 * The fetching _nbi forms fetch at once: the value is in *fetch when they
 * return, earlier than the next quiet that the spec allows.
 */
#ifndef SHMEM_AMO_INL_H
#define SHMEM_AMO_INL_H

#include "shmem/shmemi.h"

#include <string.h>

static inline uint64_t shmemi_bits(const void *v, unsigned size)
{
    uint64_t b = 0;
    memcpy(&b, v, size); /* little-endian: the low bytes */
    return b;
}

static inline void shmemi_amo_typed(const char *call, void *dest, btl_amo_op_t op,
                                    const void *value, const void *cond, void *old, unsigned size,
                                    int pe)
{
    uint64_t result = shmemi_amo_fetch(call, dest, op, size, value ? shmemi_bits(value, size) : 0,
                                       cond ? shmemi_bits(cond, size) : 0, pe);
    if (old != NULL) {
        memcpy(old, &result, size);
    }
}

#endif
