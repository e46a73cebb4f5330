/*
 * Claims-mode allocator instance: live claims in a record table, busy units
 * in a bitmap (see rmalloc_claims.h for why that is enough).
 */
#include "rmalloc/rmalloc_claims.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

#define NO_REC UINT32_MAX

typedef struct {
    uint64_t start, units, payload;
    uint64_t id; /* 0: the record is unused */
    uint64_t peer_id;
    uint32_t peer_block;
    uint32_t next_unused;
} claim_rec_t;

struct rmalloc_claims {
    claim_rec_t *rec;
    uint32_t cap, unused_head;
    uint64_t *busy; /* bit u: unit u is claimed */
    uint64_t total, used, live;
    uint64_t stamp, seq;
    unsigned shift;
};

util_status_t rmalloc_claims_create(uint64_t total_units, unsigned unit_shift, uint64_t stamp,
                                    rmalloc_claims_t **claims_p)
{
    rmalloc_claims_t *c = calloc(1, sizeof(*c));

    if (c == NULL || total_units > RMALLOC_CLAIMS_MAX_UNITS ||
        (c->busy = calloc((total_units + 63) / 64, sizeof(uint64_t))) == NULL) {
        free(c);
        util_error("rmalloc: cannot allocate a claims instance of %llu units",
                   (unsigned long long)total_units);
        return UTIL_ERR_NO_MEMORY;
    }
    c->unused_head = NO_REC;
    c->total = total_units;
    c->shift = unit_shift;
    c->stamp = stamp;
    *claims_p = c;
    return UTIL_OK;
}

void rmalloc_claims_destroy(rmalloc_claims_t *claims)
{
    if (claims != NULL) {
        free(claims->rec);
        free(claims->busy);
        free(claims);
    }
}

enum { BITS_TEST, BITS_SET, BITS_CLEAR };

/* Tests (non-zero if any bit is set), sets or clears units [s, s + n). */
static inline int bits_range(uint64_t *busy, uint64_t s, uint64_t n, int op)
{
    uint64_t end = s + n;

    if ((s & 63) + n <= 64) { /* one word: most messages are a few units */
        uint64_t *w = &busy[s >> 6];
        uint64_t mask = ((n == 64) ? ~UINT64_C(0) : ((UINT64_C(1) << n) - 1)) << (s & 63);
        if (op == BITS_TEST) return (*w & mask) != 0;
        *w = (op == BITS_SET) ? (*w | mask) : (*w & ~mask);
        return 0;
    }
    while (s < end) {
        uint64_t w = s >> 6;
        uint64_t lo = s & 63;
        uint64_t hi = (end - (w << 6) < 64) ? end - (w << 6) : 64;
        uint64_t mask =
            ((hi == 64) ? ~UINT64_C(0) : ((UINT64_C(1) << hi) - 1)) & (~UINT64_C(0) << lo);
        if (op == BITS_TEST) {
            if (busy[w] & mask) return 1;
        } else if (op == BITS_SET) {
            busy[w] |= mask;
        } else {
            busy[w] &= ~mask;
        }
        s = (w + 1) << 6;
    }
    return 0;
}

static util_status_t rec_grow(rmalloc_claims_t *c)
{
    uint32_t cap = c->cap ? c->cap * 2 : 64;
    claim_rec_t *rec;

    if (c->cap >= NO_REC / 2 || (rec = realloc(c->rec, (size_t)cap * sizeof(*rec))) == NULL) {
        util_error("rmalloc: cannot grow the claims table to %u records", cap);
        return UTIL_ERR_NO_MEMORY;
    }
    for (uint32_t i = cap; i-- > c->cap;) {
        rec[i].id = 0;
        rec[i].next_unused = c->unused_head;
        c->unused_head = i;
    }
    c->rec = rec;
    c->cap = cap;
    return UTIL_OK;
}

util_status_t rmalloc_claims_claim(rmalloc_claims_t *c, uint64_t start, uint64_t units,
                                   uint64_t payload, uint64_t peer_id, uint32_t peer_block,
                                   raddr_t *desc_p)
{
    if (units == 0 || units > RMALLOC_MAX_UNITS || start >= c->total || units > c->total - start)
        return UTIL_ERR_INVALID;
    if (bits_range(c->busy, start, units, BITS_TEST)) {
        util_debug("rmalloc: claim of [%llu, %llu) overlaps claimed memory",
                   (unsigned long long)start, (unsigned long long)(start + units));
        return UTIL_ERR_INVALID;
    }
    if (c->unused_head == NO_REC && rec_grow(c) != UTIL_OK) return UTIL_ERR_NO_MEMORY;

    uint32_t i = c->unused_head;
    claim_rec_t *r = &c->rec[i];
    c->unused_head = r->next_unused;
    r->start = start;
    r->units = units;
    r->payload = payload;
    r->id = (c->stamp << 40) | (++c->seq & ((UINT64_C(1) << 40) - 1));
    r->peer_id = peer_id;
    r->peer_block = peer_block;
    bits_range(c->busy, start, units, BITS_SET);
    c->used += units;
    c->live++;

    desc_p->start = start;
    desc_p->end = start + units;
    desc_p->id = r->id;
    desc_p->wrap_from = 0;
    desc_p->payload = payload;
    desc_p->block = i;
    desc_p->unit_shift = (uint16_t)c->shift;
    desc_p->flags = 0;
    return UTIL_OK;
}

/* The live record desc names, or NULL. */
static inline claim_rec_t *rec_find(const rmalloc_claims_t *c, const raddr_t *desc)
{
    if (desc == NULL || desc->block >= c->cap) return NULL;
    claim_rec_t *r = &c->rec[desc->block];
    if (desc->id == 0 || r->id != desc->id || r->start != desc->start ||
        r->start + r->units != desc->end)
        return NULL;
    return r;
}

util_status_t rmalloc_claims_free(rmalloc_claims_t *c, const raddr_t *desc)
{
    claim_rec_t *r = rec_find(c, desc);

    if (r == NULL) {
        util_debug("rmalloc: free of a descriptor this instance did not issue or already freed");
        return UTIL_ERR_INVALID;
    }
    bits_range(c->busy, r->start, r->units, BITS_CLEAR);
    c->used -= r->units;
    c->live--;
    r->id = 0;
    r->next_unused = c->unused_head;
    c->unused_head = desc->block;
    return UTIL_OK;
}

util_status_t rmalloc_claims_peer(const rmalloc_claims_t *c, const raddr_t *desc,
                                  uint64_t *peer_id_p, uint32_t *peer_block_p)
{
    const claim_rec_t *r = rec_find(c, desc);

    if (r == NULL) return UTIL_ERR_INVALID;
    *peer_id_p = r->peer_id;
    *peer_block_p = r->peer_block;
    return UTIL_OK;
}

util_status_t rmalloc_claims_set_peer(rmalloc_claims_t *c, const raddr_t *desc, uint64_t peer_id,
                                      uint32_t peer_block)
{
    claim_rec_t *r = rec_find(c, desc);

    if (r == NULL) return UTIL_ERR_INVALID;
    r->peer_id = peer_id;
    r->peer_block = peer_block;
    return UTIL_OK;
}

uint64_t rmalloc_claims_used_units(const rmalloc_claims_t *c)
{
    return c->used;
}

uint64_t rmalloc_claims_live_count(const rmalloc_claims_t *c)
{
    return c->live;
}

static int rec_by_start(const void *a, const void *b)
{
    const claim_rec_t *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* Live records sorted by address (malloc'ed; *n_p entries), or NULL. */
static claim_rec_t *sorted_live(const rmalloc_claims_t *c, uint64_t *n_p)
{
    claim_rec_t *live = malloc((c->live + 1) * sizeof(*live));
    uint64_t n = 0;

    if (live == NULL) return NULL;
    for (uint32_t i = 0; i < c->cap && n < c->live + 1; i++)
        if (c->rec[i].id != 0) live[n++] = c->rec[i];
    qsort(live, n, sizeof(*live), rec_by_start);
    *n_p = n;
    return live;
}

void rmalloc_claims_walk(const rmalloc_claims_t *c,
                         void (*fn)(const rmalloc_block_info_t *block, void *arg), void *arg)
{
    uint64_t n = 0;
    rmalloc_block_info_t *blocks = malloc((c->live + 1) * sizeof(*blocks));

    if (blocks == NULL) {
        util_error("rmalloc: no memory to walk a claims instance");
        return;
    }
    for (uint32_t i = 0; i < c->cap && n < c->live + 1; i++)
        if (c->rec[i].id != 0)
            blocks[n++] = (rmalloc_block_info_t){c->rec[i].start, c->rec[i].start + c->rec[i].units,
                                                 RMALLOC_BLOCK_ALLOC};
    rmalloc_walk_sorted(blocks, n, c->total, fn, arg);
    free(blocks);
}

#define CHECK_(_cond, ...)                                                                         \
    do {                                                                                           \
        if (!(_cond)) {                                                                            \
            util_error("rmalloc claims check: " __VA_ARGS__);                                      \
            status = UTIL_ERR_STATE;                                                               \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

util_status_t rmalloc_claims_check(const rmalloc_claims_t *c)
{
    util_status_t status = UTIL_OK;
    uint64_t n, end = 0, used = 0, bits = 0;
    claim_rec_t *live = sorted_live(c, &n);

    if (live == NULL) {
        util_error("rmalloc: no memory to check a claims instance");
        return UTIL_ERR_NO_MEMORY;
    }
    CHECK_(n == c->live, "live count %llu, counted %llu", (unsigned long long)c->live,
           (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) {
        CHECK_(live[i].start >= end, "claims overlap at unit %llu",
               (unsigned long long)live[i].start);
        end = live[i].start + live[i].units;
        CHECK_(end <= c->total, "claim past the region at unit %llu",
               (unsigned long long)live[i].start);
        CHECK_(live[i].units > 0, "empty claim at unit %llu", (unsigned long long)live[i].start);
        for (uint64_t u = live[i].start; u < end; u++)
            CHECK_((c->busy[u >> 6] >> (u & 63)) & 1, "claimed unit %llu not marked busy",
                   (unsigned long long)u);
        used += live[i].units;
    }
    for (uint64_t w = 0; w < (c->total + 63) / 64; w++)
        bits += (uint64_t)__builtin_popcountll(c->busy[w]);
    CHECK_(used == c->used, "used units %llu, counted %llu", (unsigned long long)c->used,
           (unsigned long long)used);
    CHECK_(bits == used, "%llu units marked busy, %llu claimed", (unsigned long long)bits,
           (unsigned long long)used);
out:
    free(live);
    return status;
}
