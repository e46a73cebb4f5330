/*
 * A producer/consumer pair of sync endpoints joined by the in-memory
 * transport, for the protocol tests, the model test and the benchmark.
 * Combinations: every heuristic with CHANNEL and TAG, next-fit with BLOCK,
 * each in the PUT and the GET direction (22 in all).
 */
#ifndef TESTS_RMALLOC_PAIR_H
#define TESTS_RMALLOC_PAIR_H

#include "tests/rmalloc/rmalloc_memtr.h"

#include <stdlib.h>

enum { PAIR_PRODUCER = 0, PAIR_CONSUMER = 1 };

typedef struct {
    rmalloc_sync_protocol_t protocol;
    rmalloc_heuristic_t heuristic;
    rmalloc_sync_direction_t direction;
} pair_combo_t;

#define PAIR_COMBOS 22

static inline pair_combo_t pair_combo(int i)
{
    pair_combo_t c;
    int k = i / 2;
    c.direction = (i % 2) ? RMALLOC_SYNC_GET : RMALLOC_SYNC_PUT;
    if (k < RMALLOC_HEURISTIC_COUNT) {
        c.protocol = RMALLOC_SYNC_CHANNEL;
        c.heuristic = (rmalloc_heuristic_t)k;
    } else if (k < 2 * RMALLOC_HEURISTIC_COUNT) {
        c.protocol = RMALLOC_SYNC_TAG;
        c.heuristic = (rmalloc_heuristic_t)(k - RMALLOC_HEURISTIC_COUNT);
    } else {
        c.protocol = RMALLOC_SYNC_BLOCK;
        c.heuristic = RMALLOC_NEXT_FIT;
    }
    return c;
}

typedef struct {
    rmalloc_sync_config_t cfg;
    void *mem;     /* the real memory (one side owns it) */
    void *sbuf[2]; /* sync buffers */
    memtr_t tr[2]; /* tr[i] reaches the other side's buffer */
    rmalloc_sync_ep_t *ep[2];
} pair_t;

/* cfg gives everything but role and base. */
static inline util_status_t pair_init(pair_t *p, const rmalloc_sync_config_t *cfg,
                                      unsigned defer_pct, unsigned refuse_pct, uint64_t seed)
{
    util_status_t status;
    size_t bsize = rmalloc_sync_buffer_size(cfg);

    memset(p, 0, sizeof(*p));
    p->cfg = *cfg;
    p->mem = calloc(1, cfg->size);
    for (int i = 0; i < 2; i++) p->sbuf[i] = aligned_alloc(64, (bsize + 63) & ~(size_t)63);
    if (!p->mem || !p->sbuf[0] || !p->sbuf[1]) return UTIL_ERR_NO_MEMORY;
    for (int i = 0; i < 2; i++) {
        p->tr[i].peer = p->sbuf[1 - i];
        p->tr[i].size = bsize;
        p->tr[i].rng = seed * 2 + (uint64_t)i + 1;
        p->tr[i].defer_pct = defer_pct;
        p->tr[i].refuse_pct = refuse_pct;
    }
    for (int i = 0; i < 2; i++) {
        rmalloc_sync_config_t c = *cfg;
        rmalloc_sync_transport_t t = {&memtr_ops, &p->tr[i]};
        c.role = (i == PAIR_PRODUCER) ? RMALLOC_SYNC_PRODUCER : RMALLOC_SYNC_CONSUMER;
        c.base = p->mem;
        status = rmalloc_sync_create(&c, p->sbuf[i], &t, &p->ep[i]);
        if (status != UTIL_OK) return status;
    }
    return UTIL_OK;
}

static inline void pair_fini(pair_t *p)
{
    for (int i = 0; i < 2; i++) {
        rmalloc_sync_destroy(p->ep[i]);
        free(p->sbuf[i]);
    }
    free(p->mem);
}

static inline void pair_config(rmalloc_sync_config_t *cfg, pair_combo_t c, uint64_t units,
                               uint64_t unit, uint32_t queue_len)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->protocol = c.protocol;
    cfg->heuristic = c.heuristic;
    cfg->direction = c.direction;
    cfg->size = units * unit;
    cfg->unit = unit;
    cfg->header_bytes = 8;
    cfg->watermark = RMALLOC_WATERMARK_FULL;
    cfg->retries = 4;
    cfg->queue_len = queue_len;
    cfg->seed = 99;
}

#endif
