/*
 * The OpenSHMEM type tables as X-macro lists: X(C type, name). Each use
 * expands every entry into a one-line routine that calls an inline helper
 * in shmemi.h; scripts/gen_shmem_h.py holds the same tables for shmem.h.
 */
#ifndef SHMEM_TYPES_H
#define SHMEM_TYPES_H

#include <stddef.h>
#include <stdint.h>

#define SHMEMI_RMA_TYPES(X)                                                   \
    X(float, float) X(double, double) X(long double, longdouble) X(char, char) \
    X(signed char, schar) X(short, short) X(int, int) X(long, long)           \
    X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)  \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)     \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) \
    X(size_t, size) X(ptrdiff_t, ptrdiff)

#define SHMEMI_AMO_STD_TYPES(X)                                               \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)    \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32) \
    X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) \
    X(ptrdiff_t, ptrdiff)

#define SHMEMI_AMO_FLOAT_TYPES(X) X(float, float) X(double, double)

#define SHMEMI_AMO_BIT_TYPES(X)                                               \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)

#define SHMEMI_SYNC_TYPES(X)                                                  \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)          \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)   \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)      \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

#define SHMEMI_SIZES(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

#endif
