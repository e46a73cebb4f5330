/*
 * OpenSHMEM RMA: put, get, p, g, strided, blocked-strided and non-blocking
 * forms, each also as shmem_ctx_* (PE numbered in the context's team).
 * Every routine is one call into shmemi_put/shmemi_get (shmemi.h), which
 * reach a symmetric offset through rpipe_sym; on node that is a memcpy.
 * The _nbi forms complete before they return (allowed by the spec: they
 * may complete any time before the next quiet). The address queries
 * (shmem_ptr, shmem_addr_accessible) are here too.
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
    for (size_t i = 0; i < nblocks; i++) {
        shmemi_get(call, dest + (ptrdiff_t)i * dst * (ptrdiff_t)elem,
                   src + (ptrdiff_t)i * sst * (ptrdiff_t)elem, bsize * elem, pe);
    }
}

/* Each routine twice: the default context (world PE, no translation) and
 * the context form, whose PE is translated first. */
#define SHMEMI_CPE(C, call) shmemi_ctx_pe(call, C, pe)

#define SHMEMI_DEFINE_RMA(T, N)                                                                  \
    void shmem_##N##_put(T *d, const T *s, size_t n, int pe) { shmemi_put("shmem_" #N "_put", d, s, n * sizeof(T), pe); } \
    void shmem_##N##_get(T *d, const T *s, size_t n, int pe) { shmemi_get("shmem_" #N "_get", d, s, n * sizeof(T), pe); } \
    void shmem_##N##_put_nbi(T *d, const T *s, size_t n, int pe) { shmemi_put("shmem_" #N "_put_nbi", d, s, n * sizeof(T), pe); } \
    void shmem_##N##_get_nbi(T *d, const T *s, size_t n, int pe) { shmemi_get("shmem_" #N "_get_nbi", d, s, n * sizeof(T), pe); } \
    void shmem_##N##_p(T *d, T v, int pe) { shmemi_put("shmem_" #N "_p", d, &v, sizeof(T), pe); } \
    T shmem_##N##_g(const T *s, int pe) { T v; shmemi_get("shmem_" #N "_g", &v, s, sizeof(T), pe); return v; } \
    void shmem_##N##_iput(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iput("shmem_" #N "_iput", (char *)d, (const char *)s, dst, sst, n, sizeof(T), pe); } \
    void shmem_##N##_iget(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iget("shmem_" #N "_iget", (char *)d, (const char *)s, dst, sst, n, sizeof(T), pe); } \
    void shmem_##N##_ibput(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmemi_ibput("shmem_" #N "_ibput", (char *)d, (const char *)s, dst, sst, b, nb, sizeof(T), pe); } \
    void shmem_##N##_ibget(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmemi_ibget("shmem_" #N "_ibget", (char *)d, (const char *)s, dst, sst, b, nb, sizeof(T), pe); } \
    void shmem_ctx_##N##_put(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmemi_put("shmem_ctx_" #N "_put", d, s, n * sizeof(T), SHMEMI_CPE(c, "shmem_ctx_" #N "_put")); } \
    void shmem_ctx_##N##_get(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmemi_get("shmem_ctx_" #N "_get", d, s, n * sizeof(T), SHMEMI_CPE(c, "shmem_ctx_" #N "_get")); } \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmemi_put("shmem_ctx_" #N "_put_nbi", d, s, n * sizeof(T), SHMEMI_CPE(c, "shmem_ctx_" #N "_put_nbi")); } \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmemi_get("shmem_ctx_" #N "_get_nbi", d, s, n * sizeof(T), SHMEMI_CPE(c, "shmem_ctx_" #N "_get_nbi")); } \
    void shmem_ctx_##N##_p(shmem_ctx_t c, T *d, T v, int pe) { shmemi_put("shmem_ctx_" #N "_p", d, &v, sizeof(T), SHMEMI_CPE(c, "shmem_ctx_" #N "_p")); } \
    T shmem_ctx_##N##_g(shmem_ctx_t c, const T *s, int pe) { T v; shmemi_get("shmem_ctx_" #N "_g", &v, s, sizeof(T), SHMEMI_CPE(c, "shmem_ctx_" #N "_g")); return v; } \
    void shmem_ctx_##N##_iput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iput("shmem_ctx_" #N "_iput", (char *)d, (const char *)s, dst, sst, n, sizeof(T), SHMEMI_CPE(c, "shmem_ctx_" #N "_iput")); } \
    void shmem_ctx_##N##_iget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iget("shmem_ctx_" #N "_iget", (char *)d, (const char *)s, dst, sst, n, sizeof(T), SHMEMI_CPE(c, "shmem_ctx_" #N "_iget")); } \
    void shmem_ctx_##N##_ibput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmemi_ibput("shmem_ctx_" #N "_ibput", (char *)d, (const char *)s, dst, sst, b, nb, sizeof(T), SHMEMI_CPE(c, "shmem_ctx_" #N "_ibput")); } \
    void shmem_ctx_##N##_ibget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmemi_ibget("shmem_ctx_" #N "_ibget", (char *)d, (const char *)s, dst, sst, b, nb, sizeof(T), SHMEMI_CPE(c, "shmem_ctx_" #N "_ibget")); }
SHMEMI_RMA_TYPES(SHMEMI_DEFINE_RMA)

#define SHMEMI_DEFINE_SIZED(BITS, BYTES)                                                         \
    void shmem_put##BITS(void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_put" #BITS, d, s, n * BYTES, pe); } \
    void shmem_get##BITS(void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_get" #BITS, d, s, n * BYTES, pe); } \
    void shmem_put##BITS##_nbi(void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_put" #BITS "_nbi", d, s, n * BYTES, pe); } \
    void shmem_get##BITS##_nbi(void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_get" #BITS "_nbi", d, s, n * BYTES, pe); } \
    void shmem_iput##BITS(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iput("shmem_iput" #BITS, d, s, dst, sst, n, BYTES, pe); } \
    void shmem_iget##BITS(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iget("shmem_iget" #BITS, d, s, dst, sst, n, BYTES, pe); } \
    void shmem_ibput##BITS(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmemi_ibput("shmem_ibput" #BITS, d, s, dst, sst, b, nb, BYTES, pe); } \
    void shmem_ibget##BITS(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmemi_ibget("shmem_ibget" #BITS, d, s, dst, sst, b, nb, BYTES, pe); } \
    void shmem_ctx_put##BITS(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_ctx_put" #BITS, d, s, n * BYTES, SHMEMI_CPE(c, "shmem_ctx_put" #BITS)); } \
    void shmem_ctx_get##BITS(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_ctx_get" #BITS, d, s, n * BYTES, SHMEMI_CPE(c, "shmem_ctx_get" #BITS)); } \
    void shmem_ctx_put##BITS##_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_ctx_put" #BITS "_nbi", d, s, n * BYTES, SHMEMI_CPE(c, "shmem_ctx_put" #BITS "_nbi")); } \
    void shmem_ctx_get##BITS##_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_ctx_get" #BITS "_nbi", d, s, n * BYTES, SHMEMI_CPE(c, "shmem_ctx_get" #BITS "_nbi")); } \
    void shmem_ctx_iput##BITS(shmem_ctx_t c, void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iput("shmem_ctx_iput" #BITS, d, s, dst, sst, n, BYTES, SHMEMI_CPE(c, "shmem_ctx_iput" #BITS)); } \
    void shmem_ctx_iget##BITS(shmem_ctx_t c, void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmemi_iget("shmem_ctx_iget" #BITS, d, s, dst, sst, n, BYTES, SHMEMI_CPE(c, "shmem_ctx_iget" #BITS)); } \
    void shmem_ctx_ibput##BITS(shmem_ctx_t c, void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmemi_ibput("shmem_ctx_ibput" #BITS, d, s, dst, sst, b, nb, BYTES, SHMEMI_CPE(c, "shmem_ctx_ibput" #BITS)); } \
    void shmem_ctx_ibget##BITS(shmem_ctx_t c, void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmemi_ibget("shmem_ctx_ibget" #BITS, d, s, dst, sst, b, nb, BYTES, SHMEMI_CPE(c, "shmem_ctx_ibget" #BITS)); }
SHMEMI_SIZES(SHMEMI_DEFINE_SIZED)

void shmem_putmem(void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_putmem", d, s, n, pe); }
void shmem_getmem(void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_getmem", d, s, n, pe); }
void shmem_putmem_nbi(void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_putmem_nbi", d, s, n, pe); }
void shmem_getmem_nbi(void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_getmem_nbi", d, s, n, pe); }
void shmem_ctx_putmem(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_ctx_putmem", d, s, n, SHMEMI_CPE(c, "shmem_ctx_putmem")); }
void shmem_ctx_getmem(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_ctx_getmem", d, s, n, SHMEMI_CPE(c, "shmem_ctx_getmem")); }
void shmem_ctx_putmem_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shmemi_put("shmem_ctx_putmem_nbi", d, s, n, SHMEMI_CPE(c, "shmem_ctx_putmem_nbi")); }
void shmem_ctx_getmem_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) { shmemi_get("shmem_ctx_getmem_nbi", d, s, n, SHMEMI_CPE(c, "shmem_ctx_getmem_nbi")); }

/* ---- address queries ---- */

int shmem_pe_accessible(int pe)
{
    return shmemi.initialized > 0 && pe >= 0 && pe < shmemi.n_pes;
}

int shmem_addr_accessible(const void *addr, int pe)
{
    if (!shmem_pe_accessible(pe)) {
        return 0;
    }
    return rpipe_sym_contains(shmemi.heap, addr, 1) ||
           (shmemi.data != NULL && rpipe_sym_contains(shmemi.data, addr, 1));
}

void *shmem_ptr(const void *dest, int pe)
{
    rpipe_sym_t *seg;
    size_t off;

    if (!shmem_addr_accessible(dest, pe)) {
        return NULL;
    }
    seg = rpipe_sym_contains(shmemi.heap, dest, 1) ? shmemi.heap : shmemi.data;
    off = (size_t)((const char *)dest - seg->base);
    return rpipe_sym_ptr(seg, pe, off);
}
