/*
 * Active-set collectives of OpenSHMEM 1.4 (broadcast, collect, fcollect,
 * *_to_all reductions), kept because real codes still call them. Each is
 * an entry barrier (nobody writes into a destination its owner may still
 * be reading), the data movement, and an exit barrier, on the caller's
 * pSync. Straightforward algorithms, correct for any set; the team-based
 * routines are in shmem_team_coll.c.
 */
#include "shmem/shmem.h"
#include "shmem/shmemi.h"
#include "shmem/shmem_coll_types.h"

#include <stdlib.h>
#include <string.h>

static inline int shmemi_member(int start, int log_stride, int i)
{
    return start + i * (1 << log_stride);
}

/* An active set of every PE runs on SHMEM_TEAM_WORLD's collectives (one
 * exchange instead of pSync round trips through one coordinator). pSync is
 * then not touched, which the spec allows: it only must be available. */
static inline int shmemi_set_is_world(int start, int log_stride, int size)
{
    return start == 0 && size == shmemi.n_pes && (log_stride == 0 || size == 1);
}

typedef struct {
    const char *call;
    void       *dest;
    const void *source;
    size_t      bytes;
    int         start, log_stride, size, root_pe;
} shmemi_bcast_t;

static void shmemi_bcast_puts(void *arg)
{
    const shmemi_bcast_t *b = arg;

    for (int i = 0; i < b->size; i++) {
        int pe = shmemi_member(b->start, b->log_stride, i);
        if (pe != b->root_pe) {
            shmemi_put(b->call, b->dest, b->source, b->bytes, pe);
        }
    }
}

/* Members announce they are in (their dest is free), the root puts the
 * data to each once all are in, then releases them: one round trip. */
static void shmemi_broadcast(const char *call, void *dest, const void *source, size_t bytes,
                             int root, int start, int log_stride, int size, long *pSync)
{
    shmemi_bcast_t b = {call, dest, source, bytes, start, log_stride, size, 0};

    shmemi_check_init(call);
    shmemi_check_set(call, start, log_stride, size);
    if (root < 0 || root >= size) {
        shmemi_fatal("%s: root %d is not an index of the active set (size %d)", call, root, size);
    }
    if (shmemi_set_is_world(start, log_stride, size)) {
        shmemi_tc_broadcast(call, &shmemi_team_world, dest, source, bytes, root, 0);
        return;
    }
    b.root_pe = shmemi_member(start, log_stride, root);
    shmemi_gather_release(start, log_stride, size, pSync, b.root_pe, shmemi_bcast_puts, &b);
}

void shmem_broadcast32(void *dest, const void *source, size_t nelems, int root, int start,
                       int log_stride, int size, long *pSync)
{
    shmemi_broadcast("shmem_broadcast32", dest, source, nelems * 4, root, start, log_stride, size, pSync);
}

void shmem_broadcast64(void *dest, const void *source, size_t nelems, int root, int start,
                       int log_stride, int size, long *pSync)
{
    shmemi_broadcast("shmem_broadcast64", dest, source, nelems * 8, root, start, log_stride, size, pSync);
}

/* fcollect: equal blocks in set order; collect: blocks of any size, whose
 * offsets come from every member's size published in its pSync[2]. */
static void shmemi_collect(const char *call, void *dest, const void *source, size_t nelems,
                           size_t elem, int fixed, int start, int log_stride, int size, long *pSync)
{
    size_t offset = 0;
    int me_index = 0;

    shmemi_check_init(call);
    shmemi_check_set(call, start, log_stride, size);
    if (shmemi_set_is_world(start, log_stride, size)) {
        if (fixed) {
            shmem_fcollectmem(SHMEM_TEAM_WORLD, dest, source, nelems * elem);
        } else {
            shmem_collectmem(SHMEM_TEAM_WORLD, dest, source, nelems * elem);
        }
        return;
    }
    for (int i = 0; i < size; i++) {
        if (shmemi_member(start, log_stride, i) == shmemi.my_pe) {
            me_index = i;
        }
    }
    if (!fixed) {
        __atomic_store_n(&pSync[2], (long)nelems, __ATOMIC_RELAXED);
    }
    shmemi_barrier_set_psync(start, log_stride, size, pSync);
    if (fixed) {
        offset = (size_t)me_index * nelems * elem;
    } else {
        for (int i = 0; i < me_index; i++) {
            long count;
            shmemi_get(call, &count, &pSync[2], sizeof(count), shmemi_member(start, log_stride, i));
            offset += (size_t)count * elem;
        }
    }
    for (int i = 0; i < size; i++) {
        shmemi_put(call, (char *)dest + offset, source, nelems * elem,
                   shmemi_member(start, log_stride, i));
    }
    shmemi_quiet();
    shmemi_barrier_set_psync(start, log_stride, size, pSync);
    if (!fixed) {
        pSync[2] = SHMEM_SYNC_VALUE; /* nobody reads it after the barrier */
    }
}

void shmem_collect32(void *d, const void *s, size_t n, int st, int ls, int sz, long *pSync)
{
    shmemi_collect("shmem_collect32", d, s, n, 4, 0, st, ls, sz, pSync);
}
void shmem_collect64(void *d, const void *s, size_t n, int st, int ls, int sz, long *pSync)
{
    shmemi_collect("shmem_collect64", d, s, n, 8, 0, st, ls, sz, pSync);
}
void shmem_fcollect32(void *d, const void *s, size_t n, int st, int ls, int sz, long *pSync)
{
    shmemi_collect("shmem_fcollect32", d, s, n, 4, 1, st, ls, sz, pSync);
}
void shmem_fcollect64(void *d, const void *s, size_t n, int st, int ls, int sz, long *pSync)
{
    shmemi_collect("shmem_fcollect64", d, s, n, 8, 1, st, ls, sz, pSync);
}

/* Reductions: every member reads every member's source and combines in
 * set order, so all members compute the same result bit for bit. */
#define SHMEMI_DEFINE_REDUCE(T, N, OP)                                                           \
    SHMEMI_DEFINE_TC_OP(T, N, OP)                                                                \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int start,             \
                                   int log_stride, int size, T *pWrk, long *pSync)               \
    {                                                                                            \
        const char *call = "shmem_" #N "_" #OP "_to_all";                                        \
        T *acc, *other;                                                                          \
        shmemi_check_init(call);                                                                 \
        shmemi_check_set(call, start, log_stride, size);                                         \
        if (nreduce < 0) shmemi_fatal("%s: nreduce %d is negative", call, nreduce);              \
        if (shmemi_set_is_world(start, log_stride, size)) {                                      \
            shmemi_tc_reduce(call, &shmemi_team_world, dest, source, (size_t)nreduce, sizeof(T), \
                             shmemi_tc_##N##_##OP, SHMEMI_TC_REDUCE);                            \
            return;                                                                              \
        }                                                                                        \
        acc   = malloc(sizeof(T) * (size_t)(nreduce ? nreduce : 1));                             \
        other = malloc(sizeof(T) * (size_t)(nreduce ? nreduce : 1));                             \
        if (acc == NULL || other == NULL) shmemi_fatal("%s: out of memory", call);               \
        shmemi_barrier_set_psync(start, log_stride, size, pSync);                                \
        for (int i = 0; i < size; i++) {                                                         \
            shmemi_get(call, i ? other : acc, source, sizeof(T) * (size_t)nreduce,               \
                       shmemi_member(start, log_stride, i));                                     \
            for (int k = 0; i && k < nreduce; k++) acc[k] = SHMEMI_OP_##OP(acc[k], other[k]);    \
        }                                                                                        \
        /* source may alias dest: write only after everyone has read */                         \
        shmemi_barrier_set_psync(start, log_stride, size, pSync);                                \
        memcpy(dest, acc, sizeof(T) * (size_t)nreduce);                                          \
        free(acc);                                                                               \
        free(other);                                                                             \
    }

#define SHMEMI_DEFINE_REDUCE_ARITH(T, N)                                                         \
    SHMEMI_DEFINE_REDUCE(T, N, sum) SHMEMI_DEFINE_REDUCE(T, N, prod)                             \
    SHMEMI_DEFINE_REDUCE(T, N, min) SHMEMI_DEFINE_REDUCE(T, N, max)
#define SHMEMI_DEFINE_REDUCE_BIT(T, N)                                                           \
    SHMEMI_DEFINE_REDUCE(T, N, and) SHMEMI_DEFINE_REDUCE(T, N, or) SHMEMI_DEFINE_REDUCE(T, N, xor)

SHMEMI_DEFINE_REDUCE_ARITH(short, short)
SHMEMI_DEFINE_REDUCE_ARITH(int, int)
SHMEMI_DEFINE_REDUCE_ARITH(long, long)
SHMEMI_DEFINE_REDUCE_ARITH(long long, longlong)
SHMEMI_DEFINE_REDUCE_ARITH(float, float)
SHMEMI_DEFINE_REDUCE_ARITH(double, double)
SHMEMI_DEFINE_REDUCE_ARITH(long double, longdouble)
SHMEMI_DEFINE_REDUCE_BIT(short, short)
SHMEMI_DEFINE_REDUCE_BIT(int, int)
SHMEMI_DEFINE_REDUCE_BIT(long, long)
SHMEMI_DEFINE_REDUCE_BIT(long long, longlong)
SHMEMI_DEFINE_REDUCE(double _Complex, complexd, sum)
SHMEMI_DEFINE_REDUCE(double _Complex, complexd, prod)
SHMEMI_DEFINE_REDUCE(float _Complex, complexf, sum)
SHMEMI_DEFINE_REDUCE(float _Complex, complexf, prod)

/* alltoall(s): an entry barrier (every dest is free), each member puts its
 * block j (elements at stride sst) into block "my index" of member j's
 * dest (stride dst), quiet, an exit barrier (everything has landed). */
static void shmemi_alltoalls(const char *call, void *dest, const void *source, ptrdiff_t dst,
                             ptrdiff_t sst, size_t nelems, size_t elem, int start, int log_stride,
                             int size, long *pSync)
{
    int me_index = 0;

    shmemi_check_init(call);
    shmemi_check_set(call, start, log_stride, size);
    if (dst < 1 || sst < 1) {
        shmemi_fatal("%s: strides must be at least 1 (dst %td, sst %td)", call, dst, sst);
    }
    if (shmemi_set_is_world(start, log_stride, size)) {
        if (elem == 4) {
            shmem_uint32_alltoalls(SHMEM_TEAM_WORLD, dest, source, dst, sst, nelems);
        } else {
            shmem_uint64_alltoalls(SHMEM_TEAM_WORLD, dest, source, dst, sst, nelems);
        }
        return;
    }
    while (shmemi_member(start, log_stride, me_index) != shmemi.my_pe) {
        me_index++;
    }
    shmemi_barrier_set_psync(start, log_stride, size, pSync);
    for (int i = 0; i < size; i++) {
        int j = (me_index + i) % size, pe = shmemi_member(start, log_stride, j);
        char *to = (char *)dest + (ptrdiff_t)me_index * (ptrdiff_t)nelems * dst * (ptrdiff_t)elem;
        const char *from = (const char *)source + (ptrdiff_t)j * (ptrdiff_t)nelems * sst * (ptrdiff_t)elem;

        if (dst == 1 && sst == 1) {
            shmemi_put(call, to, from, nelems * elem, pe);
        } else {
            for (size_t k = 0; k < nelems; k++) {
                shmemi_put(call, to + (ptrdiff_t)k * dst * (ptrdiff_t)elem,
                           from + (ptrdiff_t)k * sst * (ptrdiff_t)elem, elem, pe);
            }
        }
    }
    shmemi_quiet();
    shmemi_barrier_set_psync(start, log_stride, size, pSync);
}

void shmem_alltoall32(void *d, const void *s, size_t n, int st, int ls, int sz, long *pSync)
{
    shmemi_alltoalls("shmem_alltoall32", d, s, 1, 1, n, 4, st, ls, sz, pSync);
}
void shmem_alltoall64(void *d, const void *s, size_t n, int st, int ls, int sz, long *pSync)
{
    shmemi_alltoalls("shmem_alltoall64", d, s, 1, 1, n, 8, st, ls, sz, pSync);
}
void shmem_alltoalls32(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int st,
                       int ls, int sz, long *pSync)
{
    shmemi_alltoalls("shmem_alltoalls32", d, s, dst, sst, n, 4, st, ls, sz, pSync);
}
void shmem_alltoalls64(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int st,
                       int ls, int sz, long *pSync)
{
    shmemi_alltoalls("shmem_alltoalls64", d, s, dst, sst, n, 8, st, ls, sz, pSync);
}
