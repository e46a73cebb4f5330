/*
 * The strided RMA helpers (iput/iget, and the blocked ibput/ibget of 1.6)
 * that the typed routines of shmem_typed_rma.c call: an element (or block)
 * at a time through shmemi_put/shmemi_get_nb (shmemi.h), inlined so that the
 * element size is a constant in each routine.
 */
#ifndef SHMEM_RMA_INL_H
#define SHMEM_RMA_INL_H

#include "shmem/shmemi.h"

static inline void shmemi_iput(const char *call, char *dest, const char *src, ptrdiff_t dst,
                               ptrdiff_t sst, size_t nelems, size_t elem, int pe)
{
    for (size_t i = 0; i < nelems; i++) {
        shmemi_put(call, dest + (ptrdiff_t)i * dst * (ptrdiff_t)elem,
                   src + (ptrdiff_t)i * sst * (ptrdiff_t)elem, elem, pe);
    }
}

/* The gets of one call fly together across the network (one round trip,
 * not one per element); on node they are copies. */
static inline void shmemi_iget(const char *call, char *dest, const char *src, ptrdiff_t dst,
                               ptrdiff_t sst, size_t nelems, size_t elem, int pe)
{
    btl_comp_t comp;

    btl_comp_init(&comp);
    for (size_t i = 0; i < nelems; i++) {
        shmemi_get_nb(call, dest + (ptrdiff_t)i * dst * (ptrdiff_t)elem,
                      src + (ptrdiff_t)i * sst * (ptrdiff_t)elem, elem, pe, &comp);
    }
    shmemi_comp_wait(call, &comp);
}

/* Blocked strided (1.6): block i (bsize contiguous elements) starts at
 * element i * dst of dest and i * sst of source. */
static inline void shmemi_ibput(const char *call, char *dest, const char *src, ptrdiff_t dst,
                                ptrdiff_t sst, size_t bsize, size_t nblocks, size_t elem, int pe)
{
    for (size_t i = 0; i < nblocks; i++) {
        shmemi_put(call, dest + (ptrdiff_t)i * dst * (ptrdiff_t)elem,
                   src + (ptrdiff_t)i * sst * (ptrdiff_t)elem, bsize * elem, pe);
    }
}

static inline void shmemi_ibget(const char *call, char *dest, const char *src, ptrdiff_t dst,
                                ptrdiff_t sst, size_t bsize, size_t nblocks, size_t elem, int pe)
{
    btl_comp_t comp;

    btl_comp_init(&comp);
    for (size_t i = 0; i < nblocks; i++) {
        shmemi_get_nb(call, dest + (ptrdiff_t)i * dst * (ptrdiff_t)elem,
                      src + (ptrdiff_t)i * sst * (ptrdiff_t)elem, bsize * elem, pe, &comp);
    }
    shmemi_comp_wait(call, &comp);
}

#endif
