/*
 * Batches: small operations to one peer carried as one message, whose
 * target applies them in order (btl/ucx's active messages, btl/ofi's
 * messages). A batch is a run of records, each a btl_batch_rec_t head
 * (16, 24 or 32 bytes by kind) and, for puts, the data padded to 8 bytes.
 * One format and one applier, so that every backend that batches keeps the
 * same guarantees: records in posting order, atomics with CPU atomics (the
 * same instructions on-node peers use, btl_cpu_amo.h), a put_flag's flag
 * stored with release order after its data.
 */
#ifndef BTL_BATCH_H
#define BTL_BATCH_H

#include <stddef.h>
#include <stdint.h>

enum { BTL_BATCH_PUT = 1, BTL_BATCH_AMO, BTL_BATCH_PUT_FLAG };

typedef struct {
    uint32_t kind;   /* BTL_BATCH_* */
    uint32_t len;    /* PUT, PUT_FLAG: bytes of data after the head; AMO: size | op << 8 */
    uint64_t raddr;  /* the target's address */
    uint64_t arg[2]; /* AMO: the operand; PUT_FLAG: the flag's address and value */
} btl_batch_rec_t;

/* Bytes a record of this kind and its len bytes of data take. */
size_t btl_batch_rec_size(unsigned kind, size_t len);

/* Writes a record and its data at `at` (rec_size bytes of room); returns
 * the bytes written. */
size_t btl_batch_write(char *at, const btl_batch_rec_t *rec, const void *data, size_t len);

/* The target's bytes a record writes: [*lo, *hi). */
void btl_batch_rec_span(const btl_batch_rec_t *rec, uint64_t *lo, uint64_t *hi);

/* Copies a remote PE's write into our memory, in whichever thread drives
 * the transport (the PE's or the helper): the one place such copies
 * happen, so that ThreadSanitizer can be told that their order with the
 * owner's reads is set by the remote PE through the network (a flag, a
 * barrier), which it cannot see (tests/tsan.supp). */
void btl_batch_copy_in(void *dst, const void *src, size_t len);

/* Applies len bytes of records in order. A malformed record stops it with
 * one line naming `backend`; returns 0 then, else 1. */
int btl_batch_apply(const char *records, size_t len, const char *backend);

#endif
