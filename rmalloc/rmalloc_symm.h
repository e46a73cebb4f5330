/*
 * Symmetric mode (for the OpenSHMEM symmetric heap). shmem_malloc,
 * shmem_align, shmem_realloc and shmem_free are collective and called with
 * the same arguments in the same order on every PE, and the allocator is
 * deterministic, so every PE's instance stays identical without any sync
 * traffic: an offset in my heap is the same offset in every peer's heap.
 * Blocks are found again by pointer (a hash on the start unit), since the
 * OpenSHMEM calls pass pointers, not descriptors. Alignment is relative to
 * base (base should be aligned at least as much as the largest alignment
 * asked for; page-aligned heaps cover shmem_align up to the page size).
 * Not thread-safe. Status: OK; ERR_NO_RESOURCE when the heap is full;
 * ERR_INVALID for a pointer that is not a live allocation or a bad align.
 */
#ifndef RMALLOC_SYMM_H
#define RMALLOC_SYMM_H

#include "rmalloc/rmalloc_vmem.h"
#include "util/status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct rmalloc_symm rmalloc_symm_t;

/* Creates a symmetric allocator over [base, base + size) with the given
 * granularity (power of two) and heuristic (first-fit is a good default). */
util_status_t rmalloc_symm_create(void *base, size_t size, size_t granularity,
                                  rmalloc_heuristic_t heuristic, rmalloc_symm_t **symm_p);

/* Frees the allocator's metadata (not the heap). */
void rmalloc_symm_destroy(rmalloc_symm_t *symm);

/* Allocates size bytes aligned to align (0 = granularity; else a power of
 * two). size 0 gives *ptr_p = NULL and UTIL_OK, as shmem_malloc(0) does. */
util_status_t rmalloc_symm_alloc(rmalloc_symm_t *symm, size_t size, size_t align, void **ptr_p);

/* Resizes: in place when the block shrinks or its successor is free, else
 * moves (copying the old contents). ptr NULL allocates; size 0 frees and
 * gives NULL. On ERR_NO_RESOURCE the old block is untouched. */
util_status_t rmalloc_symm_realloc(rmalloc_symm_t *symm, void *ptr, size_t size, void **ptr_p);

/* Frees ptr (NULL is a no-op). ERR_INVALID if ptr is not a live block. */
util_status_t rmalloc_symm_free(rmalloc_symm_t *symm, void *ptr);

/* Offset of any address inside the heap; ERR_INVALID outside it. */
util_status_t rmalloc_symm_offset(const rmalloc_symm_t *symm, const void *ptr, uint64_t *offset_p);

/* Address of an offset (NULL when offset is outside the heap). */
void *rmalloc_symm_ptr(const rmalloc_symm_t *symm, uint64_t offset);

/* Bytes usable at a live allocation (0 if ptr is not one). */
size_t rmalloc_symm_usable_size(const rmalloc_symm_t *symm, const void *ptr);

/* The underlying instance (for checks and statistics). */
const rmalloc_vmem_t *rmalloc_symm_vmem(const rmalloc_symm_t *symm);

#endif
