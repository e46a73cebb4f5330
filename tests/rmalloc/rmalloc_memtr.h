/*
 * In-memory rmalloc_sync transport for tests and the benchmark: each side's
 * context points at the peer's sync buffer in the same process. It can
 * defer operations (UTIL_IN_PROGRESS, applied in issue order at a later
 * flush) and refuse them (UTIL_ERR_NO_RESOURCE) at random, so the
 * protocols' non-blocking paths run too. Header-only: static functions.
 */
#ifndef TESTS_RMALLOC_MEMTR_H
#define TESTS_RMALLOC_MEMTR_H

#include "rmalloc/rmalloc_sync.h"

#include <string.h>

#define MEMTR_QUEUE 64

typedef struct {
    int kind; /* 0 read, 1 write, 2 fetch-add, 3 cswap */
    uint64_t off;
    void *buf;
    size_t len;
    uint8_t data[RMALLOC_SYNC_MAX_WRITE];
    uint64_t v1, v2;
    uint64_t *old_p;
} memtr_op_t;

typedef struct {
    uint8_t *peer; /* the peer's sync buffer */
    size_t size;
    uint64_t rng;
    unsigned defer_pct;  /* chance an operation is deferred */
    unsigned refuse_pct; /* chance an operation (or flush) is refused */
    memtr_op_t q[MEMTR_QUEUE];
    unsigned qn;
    uint64_t ops;
} memtr_t;

static inline unsigned memtr_rand(memtr_t *t)
{
    t->rng ^= t->rng << 13;
    t->rng ^= t->rng >> 7;
    t->rng ^= t->rng << 17;
    return (unsigned)(t->rng % 100);
}

static inline void memtr_apply(memtr_t *t, memtr_op_t *op)
{
    uint64_t *w = (uint64_t *)(void *)(t->peer + op->off);
    uint64_t old;

    switch (op->kind) {
    case 0:
        memcpy(op->buf, t->peer + op->off, op->len);
        break;
    case 1:
        memcpy(t->peer + op->off, op->data, op->len);
        break;
    case 2:
        old = __atomic_fetch_add(w, op->v1, __ATOMIC_ACQ_REL);
        if (op->old_p) *op->old_p = old;
        break;
    default:
        old = op->v1;
        __atomic_compare_exchange_n(w, &old, op->v2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        if (op->old_p) *op->old_p = old;
        break;
    }
}

static inline util_status_t memtr_issue(memtr_t *t, memtr_op_t *op)
{
    if (op->off + op->len > t->size || (op->kind >= 2 && (op->off & 7))) return UTIL_ERR_INVALID;
    if (t->refuse_pct && memtr_rand(t) < t->refuse_pct) return UTIL_ERR_NO_RESOURCE;
    t->ops++;
    /* Once one operation is deferred, later ones queue behind it (order). */
    if (t->qn || (t->defer_pct && memtr_rand(t) < t->defer_pct)) {
        if (t->qn == MEMTR_QUEUE) return UTIL_ERR_NO_RESOURCE;
        t->q[t->qn++] = *op;
        return UTIL_IN_PROGRESS;
    }
    memtr_apply(t, op);
    return UTIL_OK;
}

static util_status_t memtr_read(void *ctx, uint64_t off, void *buf, size_t len)
{
    memtr_op_t op = {.kind = 0, .off = off, .buf = buf, .len = len};
    return memtr_issue(ctx, &op);
}

static util_status_t memtr_write(void *ctx, uint64_t off, const void *buf, size_t len)
{
    memtr_op_t op = {.kind = 1, .off = off, .len = len};
    if (len > sizeof(op.data)) return UTIL_ERR_INVALID;
    memcpy(op.data, buf, len);
    return memtr_issue(ctx, &op);
}

static util_status_t memtr_fetch_add(void *ctx, uint64_t off, uint64_t v, uint64_t *old_p)
{
    memtr_op_t op = {.kind = 2, .off = off, .len = 8, .v1 = v, .old_p = old_p};
    return memtr_issue(ctx, &op);
}

static util_status_t memtr_cswap(void *ctx, uint64_t off, uint64_t expected, uint64_t desired,
                                 uint64_t *old_p)
{
    memtr_op_t op = {
        .kind = 3, .off = off, .len = 8, .v1 = expected, .v2 = desired, .old_p = old_p};
    return memtr_issue(ctx, &op);
}

static util_status_t memtr_flush(void *ctx)
{
    memtr_t *t = ctx;
    if (!t->qn) return UTIL_OK;
    if (t->refuse_pct && memtr_rand(t) < t->refuse_pct) return UTIL_IN_PROGRESS;
    for (unsigned i = 0; i < t->qn; i++) memtr_apply(t, &t->q[i]);
    t->qn = 0;
    return UTIL_OK;
}

static const rmalloc_sync_ops_t memtr_ops = {
    .read = memtr_read,
    .write = memtr_write,
    .fetch_add = memtr_fetch_add,
    .cswap = memtr_cswap,
    .flush = memtr_flush,
};

#endif
