/*
 * Symmetric mode: a local instance plus a start-unit -> descriptor hash
 * (open addressing, linear probing, backward-shift deletion).
 */
#include "rmalloc/rmalloc_symm.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

struct rmalloc_symm {
    rmalloc_vmem_t *vm;
    uint8_t *base;
    uint64_t size;
    unsigned shift;
    raddr_t *slots; /* id 0 = empty */
    uint64_t mask, count;
};

static inline uint64_t slot_of(const rmalloc_symm_t *s, uint64_t start)
{
    return (start * UINT64_C(0x9e3779b97f4a7c15)) >> 20 & s->mask;
}

static util_status_t map_grow(rmalloc_symm_t *s)
{
    uint64_t cap = (s->mask + 1) * 2;
    raddr_t *slots = calloc(cap, sizeof(*slots));
    raddr_t *old = s->slots;
    uint64_t old_cap = s->mask + 1;

    if (slots == NULL) {
        util_error("rmalloc: cannot grow the symmetric block map to %llu", (unsigned long long)cap);
        return UTIL_ERR_NO_MEMORY;
    }
    s->slots = slots;
    s->mask = cap - 1;
    for (uint64_t i = 0; i < old_cap; i++) {
        if (!old[i].id) continue;
        uint64_t j = slot_of(s, old[i].start);
        while (slots[j].id) j = (j + 1) & s->mask;
        slots[j] = old[i];
    }
    free(old);
    return UTIL_OK;
}

static uint64_t map_find(const rmalloc_symm_t *s, uint64_t start)
{
    for (uint64_t j = slot_of(s, start);; j = (j + 1) & s->mask) {
        if (!s->slots[j].id) return UINT64_MAX;
        if (s->slots[j].start == start) return j;
    }
}

static void map_insert(rmalloc_symm_t *s, const raddr_t *d)
{
    uint64_t j = slot_of(s, d->start);
    while (s->slots[j].id) j = (j + 1) & s->mask;
    s->slots[j] = *d;
    s->count++;
}

static void map_delete(rmalloc_symm_t *s, uint64_t j)
{
    /* Backward shift: keep every probe chain unbroken without tombstones. */
    uint64_t i = j;
    for (;;) {
        s->slots[i].id = 0;
        uint64_t k = i;
        for (;;) {
            k = (k + 1) & s->mask;
            if (!s->slots[k].id) {
                s->count--;
                return;
            }
            uint64_t home = slot_of(s, s->slots[k].start);
            /* Move k into the hole i unless its home lies in (i, k]. */
            if (((k - home) & s->mask) >= ((k - i) & s->mask)) break;
        }
        s->slots[i] = s->slots[k];
        i = k;
    }
}

util_status_t rmalloc_symm_create(void *base, size_t size, size_t granularity,
                                  rmalloc_heuristic_t heuristic, rmalloc_symm_t **symm_p)
{
    util_status_t status;
    rmalloc_vmem_config_t cfg;
    rmalloc_symm_t *s;

    if (base == NULL || symm_p == NULL) {
        util_error("rmalloc: symmetric heap needs a base address");
        return UTIL_ERR_INVALID;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        util_error("rmalloc: cannot allocate a symmetric allocator");
        return UTIL_ERR_NO_MEMORY;
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.base = base;
    cfg.size = size;
    cfg.unit = granularity;
    cfg.heuristic = heuristic;
    cfg.seed = 1; /* same on every PE: random-fit stays symmetric */
    status = rmalloc_vmem_create(&cfg, &s->vm);
    if (status != UTIL_OK) goto err_free;
    s->base = base;
    s->shift = rmalloc_vmem_unit_shift(s->vm);
    s->size = rmalloc_vmem_total_units(s->vm) << s->shift;
    s->mask = 63;
    s->slots = calloc(64, sizeof(*s->slots));
    if (s->slots == NULL) {
        util_error("rmalloc: cannot allocate the symmetric block map");
        status = UTIL_ERR_NO_MEMORY;
        goto err_vmem;
    }
    *symm_p = s;
    return UTIL_OK;

err_vmem:
    rmalloc_vmem_destroy(s->vm);
err_free:
    free(s);
    return status;
}

void rmalloc_symm_destroy(rmalloc_symm_t *s)
{
    if (s == NULL) return;
    rmalloc_vmem_destroy(s->vm);
    free(s->slots);
    free(s);
}

util_status_t rmalloc_symm_alloc(rmalloc_symm_t *s, size_t size, size_t align, void **ptr_p)
{
    util_status_t status;
    raddr_t d;

    if (size == 0) {
        *ptr_p = NULL;
        return UTIL_OK;
    }
    if ((s->count + 1) * 2 > s->mask + 1 && (status = map_grow(s)) != UTIL_OK) return status;
    status = rmalloc_vmem_alloc(s->vm, size, align, &d);
    if (status != UTIL_OK) return status;
    map_insert(s, &d);
    *ptr_p = s->base + (d.start << s->shift);
    return UTIL_OK;
}

static uint64_t find_ptr(const rmalloc_symm_t *s, const void *ptr)
{
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)s->base;
    if ((const uint8_t *)ptr < s->base || off >= s->size || (off & ((1u << s->shift) - 1)))
        return UINT64_MAX;
    return map_find(s, off >> s->shift);
}

util_status_t rmalloc_symm_free(rmalloc_symm_t *s, void *ptr)
{
    if (ptr == NULL) return UTIL_OK;
    uint64_t j = find_ptr(s, ptr);
    if (j == UINT64_MAX) {
        util_debug("rmalloc: symmetric free of %p, which is not a live block", ptr);
        return UTIL_ERR_INVALID;
    }
    util_status_t status = rmalloc_vmem_free(s->vm, &s->slots[j]);
    if (status == UTIL_OK) map_delete(s, j);
    return status;
}

util_status_t rmalloc_symm_realloc(rmalloc_symm_t *s, void *ptr, size_t size, void **ptr_p)
{
    util_status_t status;
    raddr_t d;
    void *moved;

    if (ptr == NULL) return rmalloc_symm_alloc(s, size, 0, ptr_p);
    uint64_t j = find_ptr(s, ptr);
    if (j == UINT64_MAX) return UTIL_ERR_INVALID;
    if (size == 0) {
        *ptr_p = NULL;
        return rmalloc_symm_free(s, ptr);
    }
    status = rmalloc_vmem_realloc(s->vm, &s->slots[j], size, &d);
    if (status == UTIL_OK) {
        s->slots[j] = d; /* same start: same slot */
        *ptr_p = ptr;
        return UTIL_OK;
    }
    if (status != UTIL_ERR_NO_RESOURCE) return status;
    uint64_t old_bytes = s->slots[j].payload;
    status = rmalloc_symm_alloc(s, size, 0, &moved);
    if (status != UTIL_OK) return status;
    memcpy(moved, ptr, old_bytes < size ? old_bytes : size);
    rmalloc_symm_free(s, ptr);
    *ptr_p = moved;
    return UTIL_OK;
}

util_status_t rmalloc_symm_offset(const rmalloc_symm_t *s, const void *ptr, uint64_t *offset_p)
{
    if ((const uint8_t *)ptr < s->base || (uintptr_t)ptr - (uintptr_t)s->base >= s->size)
        return UTIL_ERR_INVALID;
    *offset_p = (uintptr_t)ptr - (uintptr_t)s->base;
    return UTIL_OK;
}

void *rmalloc_symm_ptr(const rmalloc_symm_t *s, uint64_t offset)
{
    return (offset < s->size) ? s->base + offset : NULL;
}

size_t rmalloc_symm_usable_size(const rmalloc_symm_t *s, const void *ptr)
{
    uint64_t j = find_ptr(s, ptr);
    return (j == UINT64_MAX) ? 0 : (size_t)rmalloc_desc_bytes(&s->slots[j]);
}

const rmalloc_vmem_t *rmalloc_symm_vmem(const rmalloc_symm_t *s)
{
    return s->vm;
}
