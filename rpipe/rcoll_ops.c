/*
 * rcoll built-in reductions: one loop per (type, operation), looked up once
 * when a handle is created (never per call).
 *
 * The bodies are written out per operation; one X-macro type list
 * instantiates each for the types it applies to, so every function is a
 * plain loop that the compiler vectorizes.
 */
#include "rpipe/rcoll_int.h"

#include <stdint.h>

#define RCOLL_OPS_ALL_TYPES(_X)                                                                    \
    _X(int32, int32_t)                                                                             \
    _X(int64, int64_t)                                                                             \
    _X(uint64, uint64_t)                                                                           \
    _X(float, float)                                                                               \
    _X(double, double)

#define RCOLL_OPS_INT_TYPES(_X)                                                                    \
    _X(int32, int32_t)                                                                             \
    _X(int64, int64_t)                                                                             \
    _X(uint64, uint64_t)

#define RCOLL_OPS_FLOAT_TYPES(_X)                                                                  \
    _X(float, float)                                                                               \
    _X(double, double)

/* inout[k] = inout[k] OP in[k] */
#define RCOLL_OPS_LOOP(_name, _type, _opname, _expr)                                               \
    static void rcoll_op_##_opname##_##_name(void *inout, const void *in, size_t count)            \
    {                                                                                              \
        _type *restrict a = inout;                                                                 \
        const _type *restrict b = in;                                                              \
        for (size_t k = 0; k < count; k++) {                                                       \
            _type x = a[k], y = b[k];                                                              \
            a[k] = (_expr);                                                                        \
        }                                                                                          \
    }

/* Integers wrap around (through uint64_t: signed overflow would be undefined). */
#define RCOLL_OPS_ISUM(_name, _type)                                                               \
    RCOLL_OPS_LOOP(_name, _type, sum, (_type)((uint64_t)x + (uint64_t)y))
#define RCOLL_OPS_IPROD(_name, _type)                                                              \
    RCOLL_OPS_LOOP(_name, _type, prod, (_type)((uint64_t)x * (uint64_t)y))
#define RCOLL_OPS_FSUM(_name, _type)  RCOLL_OPS_LOOP(_name, _type, sum, x + y)
#define RCOLL_OPS_FPROD(_name, _type) RCOLL_OPS_LOOP(_name, _type, prod, x *y)
#define RCOLL_OPS_MIN(_name, _type)   RCOLL_OPS_LOOP(_name, _type, min, y < x ? y : x)
#define RCOLL_OPS_MAX(_name, _type)   RCOLL_OPS_LOOP(_name, _type, max, y > x ? y : x)
#define RCOLL_OPS_AND(_name, _type)   RCOLL_OPS_LOOP(_name, _type, and, x &y)
#define RCOLL_OPS_OR(_name, _type)    RCOLL_OPS_LOOP(_name, _type, or, x | y)
#define RCOLL_OPS_XOR(_name, _type)   RCOLL_OPS_LOOP(_name, _type, xor, x ^ y)

RCOLL_OPS_INT_TYPES(RCOLL_OPS_ISUM)
RCOLL_OPS_INT_TYPES(RCOLL_OPS_IPROD)
RCOLL_OPS_FLOAT_TYPES(RCOLL_OPS_FSUM)
RCOLL_OPS_FLOAT_TYPES(RCOLL_OPS_FPROD)
RCOLL_OPS_ALL_TYPES(RCOLL_OPS_MIN)
RCOLL_OPS_ALL_TYPES(RCOLL_OPS_MAX)
RCOLL_OPS_INT_TYPES(RCOLL_OPS_AND)
RCOLL_OPS_INT_TYPES(RCOLL_OPS_OR)
RCOLL_OPS_INT_TYPES(RCOLL_OPS_XOR)

/* [dtype][op]; NULL where the pair is not defined (bitwise ops on floats). */
static const rcoll_user_op_func_t rcoll_ops_table[RCOLL_DOUBLE + 1][RCOLL_XOR + 1] = {
    [RCOLL_INT32] = {NULL, rcoll_op_sum_int32, rcoll_op_prod_int32, rcoll_op_min_int32,
                     rcoll_op_max_int32, rcoll_op_and_int32, rcoll_op_or_int32, rcoll_op_xor_int32},
    [RCOLL_INT64] = {NULL, rcoll_op_sum_int64, rcoll_op_prod_int64, rcoll_op_min_int64,
                     rcoll_op_max_int64, rcoll_op_and_int64, rcoll_op_or_int64, rcoll_op_xor_int64},
    [RCOLL_UINT64] = {NULL, rcoll_op_sum_uint64, rcoll_op_prod_uint64, rcoll_op_min_uint64,
                      rcoll_op_max_uint64, rcoll_op_and_uint64, rcoll_op_or_uint64,
                      rcoll_op_xor_uint64},
    [RCOLL_FLOAT] = {NULL, rcoll_op_sum_float, rcoll_op_prod_float, rcoll_op_min_float,
                     rcoll_op_max_float, NULL, NULL, NULL},
    [RCOLL_DOUBLE] = {NULL, rcoll_op_sum_double, rcoll_op_prod_double, rcoll_op_min_double,
                      rcoll_op_max_double, NULL, NULL, NULL},
};

size_t rcoll_dtype_size(rcoll_dtype_t dtype)
{
    switch (dtype) {
    case RCOLL_INT32:
    case RCOLL_FLOAT:
        return 4;
    case RCOLL_INT64:
    case RCOLL_UINT64:
    case RCOLL_DOUBLE:
        return 8;
    default:
        return 0;
    }
}

rcoll_user_op_func_t rcoll_ops_lookup(rcoll_dtype_t dtype, rcoll_op_t op)
{
    if ((unsigned)dtype > RCOLL_DOUBLE || (unsigned)op > RCOLL_XOR) {
        return NULL;
    }
    return rcoll_ops_table[dtype][op];
}
