/*
 * libFuzzer target: rmalloc operation sequences. The input picks an
 * instance configuration (heuristic, ring, ring-first or claims mode, unit,
 * region size, header) and then a sequence of operations: alloc with an
 * alignment (some unaligned ones by rpipe's small-message path: the ring
 * inline, rmalloc_vmem_ring_for + rmalloc_ring_alloc_inl), free of a live allocation, free of a descriptor that is stale,
 * forged or already freed, realloc in place, claim of a unit range, and the
 * ring's retire/take.
 * A model (unit -> owner) runs alongside. After every operation:
 *   - rmalloc_vmem_check() accepts the instance;
 *   - a successful allocation covers only units the model holds free, is
 *     aligned as asked and large enough for its payload and header;
 *   - a rejected free or claim (ERR_INVALID) changed nothing;
 *   - used units and the live count agree with the model.
 * Any disagreement aborts, so libFuzzer records the input.
 */
#include "rmalloc/rmalloc_vmem.h"
#include "rmalloc/rmalloc_ring_inl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_UNITS 256
#define MAX_LIVE  64

typedef struct {
    const uint8_t *data;
    size_t size, pos;
} input_t;

static uint64_t take(input_t *in, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++) {
        v = (v << 8) | (in->pos < in->size ? in->data[in->pos++] : 0);
    }
    return v;
}

#define EXPECT(_cond, ...)                                                                         \
    do {                                                                                           \
        if (!(_cond)) {                                                                            \
            fprintf(stderr, "fuzz_rmalloc: " __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

typedef struct {
    rmalloc_vmem_t *vmem;
    int ring;
    int claims; /* claims mode: only claims place memory */
    uint64_t units, unit, header;
    raddr_t live[MAX_LIVE];
    unsigned nlive;
    raddr_t dead[MAX_LIVE]; /* freed descriptors, for double frees */
    unsigned ndead;
    int owner[MAX_UNITS]; /* 1 + index into live, 0 = free (dummies: -1) */
} model_t;

static uint64_t model_used(const model_t *m)
{
    uint64_t used = 0;
    for (unsigned i = 0; i < m->nlive; i++) {
        used += m->live[i].end - m->live[i].start;
    }
    return used;
}

static void model_verify(const model_t *m)
{
    EXPECT(rmalloc_vmem_check(m->vmem) == UTIL_OK, "invariants broken");
    EXPECT(rmalloc_vmem_live_count(m->vmem) == m->nlive, "live count %llu, model %u",
           (unsigned long long)rmalloc_vmem_live_count(m->vmem), m->nlive);
    /* Ring mode keeps dummies (wrapped tails) allocated: used >= model. */
    if (m->ring) {
        EXPECT(rmalloc_vmem_used_units(m->vmem) >= model_used(m), "used units below live units");
    } else {
        EXPECT(rmalloc_vmem_used_units(m->vmem) == model_used(m), "used units %llu, model %llu",
               (unsigned long long)rmalloc_vmem_used_units(m->vmem),
               (unsigned long long)model_used(m));
    }
}

static void model_add(model_t *m, const raddr_t *d, uint64_t payload, uint64_t align)
{
    EXPECT(d->start < d->end && d->end <= m->units, "descriptor [%llu,%llu) outside %llu units",
           (unsigned long long)d->start, (unsigned long long)d->end, (unsigned long long)m->units);
    EXPECT(((d->end - d->start) * m->unit) >= payload + m->header, "allocation too small");
    EXPECT(align <= m->unit || (d->start * m->unit) % align == 0, "misaligned allocation");
    for (uint64_t u = d->start; u < d->end; u++) {
        EXPECT(m->owner[u] == 0, "unit %llu handed out twice", (unsigned long long)u);
        m->owner[u] = (int)m->nlive + 1;
    }
    m->live[m->nlive++] = *d;
}

static void model_remove(model_t *m, unsigned i, int freed)
{
    raddr_t d = m->live[i];

    for (uint64_t u = d.start; u < d.end; u++) {
        m->owner[u] = 0;
    }
    if (freed && m->ndead < MAX_LIVE) {
        m->dead[m->ndead++] = d;
    }
    m->live[i] = m->live[--m->nlive];
    for (uint64_t u = m->live[i].start; i < m->nlive && u < m->live[i].end; u++) {
        m->owner[u] = (int)i + 1;
    }
}

/* A free the instance must reject: nothing may change. */
static void expect_rejected_free(model_t *m, const raddr_t *d)
{
    uint64_t used = rmalloc_vmem_used_units(m->vmem);
    EXPECT(rmalloc_vmem_free(m->vmem, d) == UTIL_ERR_INVALID, "bad free accepted");
    EXPECT(rmalloc_vmem_used_units(m->vmem) == used, "rejected free changed the instance");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input_t in = {data, size, 0};
    rmalloc_vmem_config_t cfg;
    model_t m;

    memset(&m, 0, sizeof(m));
    memset(&cfg, 0, sizeof(cfg));
    uint64_t mode = take(&in, 1); /* heuristic, and claims mode in a quarter of the rest */
    cfg.heuristic = (rmalloc_heuristic_t)(mode % RMALLOC_HEURISTIC_COUNT);
    m.ring = cfg.heuristic == RMALLOC_NEXT_FIT && (take(&in, 1) & 1);
    m.claims = !m.ring && (mode / RMALLOC_HEURISTIC_COUNT) % 4 == 3;
    /* next-fit, neither: ring-first in half of the cases (ignored by the others) */
    cfg.flags = m.ring                                 ? RMALLOC_VMEM_RING
                : m.claims                             ? RMALLOC_VMEM_CLAIMS
                : (mode / RMALLOC_HEURISTIC_COUNT) % 2 ? RMALLOC_VMEM_RING_FIRST
                                                       : 0;
    cfg.unit = UINT64_C(8) << (take(&in, 1) % 4);
    m.units = 1 + take(&in, 1) % MAX_UNITS;
    cfg.size = m.units * cfg.unit;
    cfg.header_bytes = (uint32_t)(take(&in, 1) % 2) * 8;
    cfg.seed = take(&in, 2);
    m.unit = cfg.unit;
    m.header = cfg.header_bytes;
    if (rmalloc_vmem_create(&cfg, &m.vmem) != UTIL_OK) {
        return 0;
    }
    while (in.pos < in.size) {
        unsigned op = (unsigned)take(&in, 1) % 8;
        raddr_t d;
        util_status_t status;

        switch (op) {
        case 0:
        case 1:
        case 2: { /* alloc */
            uint64_t payload = take(&in, 2) % (m.units * m.unit + 64);
            uint64_t align = (take(&in, 1) % 3 == 0) ? (UINT64_C(1) << (take(&in, 1) % 10)) : 0;
            status = UTIL_ERR_NO_RESOURCE;
            if (op == 2 && !align) {
                /* rpipe's small-message path: the ring inline, then the
                 * instance where the ring refuses */
                uint64_t units;
                struct rmalloc_ring *ring = rmalloc_vmem_ring_for(m.vmem, payload, &units);
                if (ring != NULL) {
                    status = rmalloc_ring_alloc_inl(ring, units, 1, payload, &d);
                }
            }
            if (status != UTIL_OK) {
                status = rmalloc_vmem_alloc(m.vmem, payload, align, &d);
            }
            if (status == UTIL_OK) {
                if (m.nlive == MAX_LIVE) {
                    rmalloc_vmem_free(m.vmem, &d); /* the model is full */
                } else {
                    model_add(&m, &d, payload, align);
                }
            } else {
                EXPECT(status == UTIL_ERR_NO_RESOURCE || status == UTIL_ERR_INVALID ||
                           (m.claims && status == UTIL_ERR_UNSUPPORTED),
                       "alloc: unexpected status %d", status);
                EXPECT(!m.claims || status != UTIL_ERR_NO_RESOURCE, "claims mode allocated");
                EXPECT(status != UTIL_ERR_INVALID || payload == 0 ||
                           payload + m.header > m.units * m.unit,
                       "alloc of %llu bytes called invalid", (unsigned long long)payload);
            }
            break;
        }
        case 4: /* a batch of frees, in allocation order or not, maybe ending in a bad one */
            if (m.nlive > 0) {
                raddr_t batch[5];
                unsigned idx[4], k = 1 + (unsigned)take(&in, 1) % (m.nlive < 4 ? m.nlive : 4);
                unsigned first = (unsigned)take(&in, 1) % m.nlive, sorted = take(&in, 1) & 1;
                int bad = m.ndead > 0 && (take(&in, 1) % 4 == 0);
                size_t done;
                for (unsigned j = 0; j < k; j++) {
                    idx[j] = (first + j) % m.nlive;
                }
                for (unsigned a = 0; sorted && a < k; a++) { /* by id: allocation order */
                    for (unsigned b = a + 1; b < k; b++) {
                        if (m.live[idx[b]].id < m.live[idx[a]].id) {
                            unsigned t = idx[a];
                            idx[a] = idx[b];
                            idx[b] = t;
                        }
                    }
                }
                for (unsigned j = 0; j < k; j++) {
                    batch[j] = m.live[idx[j]];
                }
                if (bad) {
                    batch[k] = m.dead[take(&in, 1) % m.ndead];
                }
                status = rmalloc_vmem_free_n(m.vmem, batch, k + (unsigned)bad, &done);
                EXPECT(status == (bad ? UTIL_ERR_INVALID : UTIL_OK) && done == k,
                       "batch free of %u (+%d bad): status %d, %zu freed", k, bad, status, done);
                for (unsigned a = 0; a < k; a++) { /* remove from the highest index down */
                    unsigned top = a;
                    for (unsigned b = a + 1; b < k; b++) {
                        if (idx[b] > idx[top]) top = b;
                    }
                    unsigned t = idx[a];
                    idx[a] = idx[top];
                    idx[top] = t;
                    model_remove(&m, idx[a], 1);
                }
            }
            break;
        case 3: /* free a live allocation (ring: any order) */
            if (m.nlive > 0) {
                unsigned i = (unsigned)take(&in, 1) % m.nlive;
                EXPECT(rmalloc_vmem_free(m.vmem, &m.live[i]) == UTIL_OK,
                       "free of a live allocation failed");
                model_remove(&m, i, 1);
            }
            break;
        case 5: /* double free, or a forged descriptor */
            if (m.ndead > 0 && (take(&in, 1) & 1)) {
                d = m.dead[take(&in, 1) % m.ndead];
                /* Its units may have been reissued: a new allocation at the
                 * same place has another id, so this is still a double free. */
                expect_rejected_free(&m, &d);
            } else if (m.nlive > 0) {
                d = m.live[take(&in, 1) % m.nlive];
                switch (take(&in, 1) % 4) {
                case 0:
                    d.id ^= 1 + take(&in, 1);
                    break;
                case 1:
                    d.block += 1 + (uint32_t)take(&in, 1);
                    break;
                case 2:
                    d.start += 1 + take(&in, 1);
                    break;
                default:
                    d.end += 1 + take(&in, 1);
                    break;
                }
                expect_rejected_free(&m, &d);
            }
            break;
        case 6: /* realloc in place (not in ring mode) */
            if (m.nlive > 0) {
                unsigned i = (unsigned)take(&in, 1) % m.nlive;
                uint64_t payload = 1 + take(&in, 2) % (m.units * m.unit);
                raddr_t old = m.live[i];
                status = rmalloc_vmem_realloc(m.vmem, &old, payload, &d);
                if (status == UTIL_OK) {
                    EXPECT(d.start == old.start, "realloc moved the allocation");
                    model_remove(&m, i, 0); /* same id: the old descriptor is not stale */
                    model_add(&m, &d, payload, 0);
                } else {
                    EXPECT(status == UTIL_ERR_NO_RESOURCE || status == UTIL_ERR_UNSUPPORTED ||
                               status == UTIL_ERR_INVALID,
                           "realloc: unexpected status %d", status);
                    EXPECT(status != UTIL_ERR_UNSUPPORTED || m.ring || m.claims,
                           "realloc unsupported");
                }
            }
            break;
        default: /* claim a range, as a shadow applies a peer's allocation */
            if (!m.ring && m.nlive < MAX_LIVE) {
                uint64_t start = take(&in, 1) % m.units, units = 1 + take(&in, 1) % 16;
                int all_free = start + units <= m.units;
                uint64_t used = rmalloc_vmem_used_units(m.vmem);
                for (uint64_t u = start; all_free && u < start + units; u++) {
                    all_free = m.owner[u] == 0;
                }
                status = rmalloc_vmem_claim(m.vmem, start, units, units * m.unit - m.header, 7,
                                            (uint32_t)start, &d);
                if (all_free) {
                    EXPECT(status == UTIL_OK, "claim of free units [%llu,+%llu) failed: %d",
                           (unsigned long long)start, (unsigned long long)units, status);
                    EXPECT(d.start == start && d.end == start + units, "claim placed elsewhere");
                    model_add(&m, &d, units * m.unit - m.header, 0);
                } else {
                    EXPECT(status == UTIL_ERR_INVALID, "claim over used units: status %d", status);
                    EXPECT(rmalloc_vmem_used_units(m.vmem) == used,
                           "rejected claim changed the instance");
                }
            } else if (m.ring) {
                rmalloc_vmem_ring_take_released(m.vmem);
            }
            break;
        }
        model_verify(&m);
    }
    while (m.nlive > 0) {
        EXPECT(rmalloc_vmem_free(m.vmem, &m.live[0]) == UTIL_OK, "final free failed");
        model_remove(&m, 0, 1);
    }
    model_verify(&m);
    if (!m.ring) {
        EXPECT(rmalloc_vmem_used_units(m.vmem) == 0, "units left allocated after freeing all");
    }
    rmalloc_vmem_destroy(m.vmem);
    return 0;
}
