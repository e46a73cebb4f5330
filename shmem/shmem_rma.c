/*
 * OpenSHMEM RMA: put, get, p, g, strided and non-blocking forms. Every
 * routine is one call into shmemi_put/shmemi_get (shmemi.h), which reach a
 * symmetric offset through rpipe_sym; on node that is a memcpy.
 * The _nbi forms complete before they return (allowed by the spec: they
 * may complete any time before the next quiet).
 */
#include "shmem/shmem.h"
#include "shmem/shmem_types.h"
#include "shmem/shmemi.h"

static inline void shmemi_iput(const char *call, char *dest, const char *src, ptrdiff_t dst,
                               ptrdiff_t sst, size_t nelems, size_t elem, int pe)
{
    for (size_t i = 0; i < nelems; i++) {
        shmemi_put(call, dest + (ptrdiff_t)i * dst * (ptrdiff_t)elem,
                   src + (ptrdiff_t)i * sst * (ptrdiff_t)elem, elem, pe);
    }
}

static inline void shmemi_iget(const char *call, char *dest, const char *src, ptrdiff_t dst,
                               ptrdiff_t sst, size_t nelems, size_t elem, int pe)
{
    for (size_t i = 0; i < nelems; i++) {
        shmemi_get(call, dest + (ptrdiff_t)i * dst * (ptrdiff_t)elem,
                   src + (ptrdiff_t)i * sst * (ptrdiff_t)elem, elem, pe);
    }
}

#define SHMEMI_DEFINE_RMA(T, N)                                                                  \
    void shmem_##N##_put(T *d, const T *s, size_t n, int pe) { shmemi_put("shmem_" #N "_put", d, s, n * sizeof(T), pe); } \
    void shmem_##N##_get(T *d, const T *s, size_t n, int pe) { shmemi_get("shmem_" #N "_get", d, s, n * sizeof(T), pe); } \
    void shmem_##N##_put_nbi(T *d, const T *s, size_t n, int pe) { shmemi_put("shmem_" #N "_put_nbi", d, s, n * sizeof(T), pe); } \
    void shmem_##N##_get_nbi(T *d, const T *s, size_t n, int pe) { shmemi_get("shmem_" #N "_get_nbi", d, s, n * sizeof(T), pe); } \
    void shmem_##N##_p(T *d, T v, int pe) { shmemi_put("shmem_" #N "_p", d, &v, sizeof(T), pe); } \
    T shmem_##N##_g(const T *s, int pe) { T v; shmemi_get("shmem_" #N "_g", &v, s, sizeof(T), pe); return v; } \
    void shmem_##N##_iput(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iput("shmem_" #N "_iput", (char *)d, (const char *)s, dst, sst, n, sizeof(T), pe); } \
    void shmem_##N##_iget(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iget("shmem_" #N "_iget", (char *)d, (const char *)s, dst, sst, n, sizeof(T), pe); }
SHMEMI_RMA_TYPES(SHMEMI_DEFINE_RMA)

#define SHMEMI_DEFINE_SIZED(BITS, BYTES)                                                         \
    void shmem_put##BITS(void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_put" #BITS, d, s, n * BYTES, pe); } \
    void shmem_get##BITS(void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_get" #BITS, d, s, n * BYTES, pe); } \
    void shmem_put##BITS##_nbi(void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_put" #BITS "_nbi", d, s, n * BYTES, pe); } \
    void shmem_get##BITS##_nbi(void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_get" #BITS "_nbi", d, s, n * BYTES, pe); } \
    void shmem_iput##BITS(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iput("shmem_iput" #BITS, d, s, dst, sst, n, BYTES, pe); } \
    void shmem_iget##BITS(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iget("shmem_iget" #BITS, d, s, dst, sst, n, BYTES, pe); }
SHMEMI_SIZES(SHMEMI_DEFINE_SIZED)

void shmem_putmem(void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_putmem", d, s, n, pe); }
void shmem_getmem(void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_getmem", d, s, n, pe); }
void shmem_putmem_nbi(void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_putmem_nbi", d, s, n, pe); }
void shmem_getmem_nbi(void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_getmem_nbi", d, s, n, pe); }
