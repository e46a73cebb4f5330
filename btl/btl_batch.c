/*
 * Batches of records (btl_batch.h).
 */
#include "btl/btl_batch.h"
#include "btl/btl_cpu_amo.h"
#include "util/log.h"

#include <string.h>

/* Head bytes per kind: PUT has no arg, AMO one, PUT_FLAG two. */
static const size_t btl_batch_head[] = {
    [BTL_BATCH_PUT] = 16, [BTL_BATCH_AMO] = 24, [BTL_BATCH_PUT_FLAG] = 32};

size_t btl_batch_rec_size(unsigned kind, size_t len)
{
    return btl_batch_head[kind] + ((len + 7) & ~(size_t)7);
}

size_t btl_batch_write(char *at, const btl_batch_rec_t *rec, const void *data, size_t len)
{
    size_t head = btl_batch_head[rec->kind], size = btl_batch_rec_size(rec->kind, len);

    memcpy(at, rec, head);
    if (len > 0) {
        memcpy(at + head, data, len);
        memset(at + head + len, 0, size - head - len);
    }
    return size;
}

void btl_batch_rec_span(const btl_batch_rec_t *rec, uint64_t *lo, uint64_t *hi)
{
    *lo = rec->raddr;
    *hi = rec->raddr + (rec->kind == BTL_BATCH_AMO ? (rec->len & 0xff) : rec->len);
}

__attribute__((noinline)) void btl_batch_copy_in(void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
}

/* One record; 0 if it is malformed. */
static int btl_batch_apply_one(const btl_batch_rec_t *rec, const char *data, size_t len)
{
    if (rec->kind == BTL_BATCH_AMO) {
        unsigned size = rec->len & 0xff, op = rec->len >> 8;

        if ((size != 4 && size != 8) || (rec->raddr & (size - 1)) != 0 ||
            (op != BTL_AMO_SET && (op < BTL_AMO_ADD || op >= BTL_AMO_LAST))) {
            return 0;
        }
        btl_cpu_amo_post((btl_amo_op_t)op, size, (void *)(uintptr_t)rec->raddr, rec->arg[0]);
        return 1;
    }
    if (rec->kind == BTL_BATCH_PUT_FLAG && (rec->arg[0] & 7) != 0) {
        return 0;
    }
    if (len > 0) {
        btl_batch_copy_in((void *)(uintptr_t)rec->raddr, data, len);
    }
    if (rec->kind == BTL_BATCH_PUT_FLAG) {
        __atomic_store_n((uint64_t *)(uintptr_t)rec->arg[0], rec->arg[1], __ATOMIC_RELEASE);
    }
    return 1;
}

int btl_batch_apply(const char *records, size_t length, const char *backend)
{
    const char *at = records;
    size_t left = length;

    while (left > 0) {
        btl_batch_rec_t rec = {0, 0, 0, {0, 0}};
        size_t head = 0, len = 0, step;

        if (left >= 8) {
            memcpy(&rec, at, 8);
        }
        if (rec.kind >= BTL_BATCH_PUT && rec.kind <= BTL_BATCH_PUT_FLAG) {
            head = btl_batch_head[rec.kind];
            len = rec.kind == BTL_BATCH_AMO ? 0 : rec.len;
        }
        if (head != 0 && left >= head && left - head >= len) {
            memcpy(&rec, at, head);
        }
        if (head == 0 || left < head || left - head < len ||
            !btl_batch_apply_one(&rec, at + head, len)) {
            util_error("%s: malformed batch record at byte %zu of %zu", backend, length - left,
                       length);
            return 0;
        }
        step = btl_batch_rec_size(rec.kind, len);
        step = step < left ? step : left;
        at += step;
        left -= step;
    }
    return 1;
}
