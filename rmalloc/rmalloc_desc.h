/*
 * rmalloc descriptors (raddr_t, thesis Fig. 4.2). An allocation is handed
 * around by value: start and end boundary tags (in allocation units), the
 * payload size the caller asked for, the granularity, and an allocation id
 * that, together with the block index, lets the issuing instance reject a
 * double free or a descriptor that is not its own.
 *
 * Every allocation reserves `header_bytes` (instance setting) after the
 * payload, rounded to 8 bytes, for rpipe's poll header: the notified flag
 * sits at rmalloc_desc_flag_offset(), which only needs the payload size.
 */
#ifndef RMALLOC_DESC_H
#define RMALLOC_DESC_H

#include <stdint.h>

/* Descriptor flags. */
enum {
    RMALLOC_DESC_WRAPPED = 1u << 0 /* next-fit wrapped; a dummy block covers
                                      [wrap_from, end of region) */
};

/* rpipe/rmalloc.h (public) defines the same struct under the same guard,
 * so user code sees the descriptor without internal headers. */
#ifndef RMALLOC_RADDR_DEFINED
#define RMALLOC_RADDR_DEFINED
typedef struct raddr {
    uint64_t start;      /* first unit (start boundary tag) */
    uint64_t end;        /* one past the last unit (end boundary tag) */
    uint64_t id;         /* allocation id: instance stamp << 40 | sequence */
    uint64_t wrap_from;  /* with RMALLOC_DESC_WRAPPED: start of the dummy */
    uint64_t payload;    /* payload bytes requested */
    uint32_t block;      /* block record index inside the issuing instance */
    uint16_t unit_shift; /* granularity = 1 << unit_shift bytes */
    uint16_t flags;
} raddr_t;
#endif

/* The null descriptor (id 0 is never issued). */
#define RMALLOC_ADDR_NULL ((raddr_t){0, 0, 0, 0, 0, 0, 0, 0})

/* Non-zero when d describes an allocation (not the null descriptor). */
static inline int rmalloc_desc_valid(const raddr_t *d)
{
    return d->id != 0;
}

/* Byte offset of the allocation from the start of its region. */
static inline uint64_t rmalloc_desc_offset(const raddr_t *d)
{
    return d->start << d->unit_shift;
}

/* Bytes reserved for the allocation (payload + header, rounded to units). */
static inline uint64_t rmalloc_desc_bytes(const raddr_t *d)
{
    return (d->end - d->start) << d->unit_shift;
}

/* Byte offset, from the start of the allocation, of the 8-byte aligned poll
 * header that follows the payload (where rpipe puts its notified flag). */
static inline uint64_t rmalloc_desc_flag_offset(const raddr_t *d)
{
    return (d->payload + 7u) & ~(uint64_t)7u;
}

#endif
