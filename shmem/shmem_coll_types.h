/*
 * Type tables of the team-based reductions and scans as X-macro lists,
 * X(C type, name), matching RED_BIT, RED_MINMAX and RED_COMPLEX in
 * scripts/gen_shmem_h.py (the RMA table is SHMEMI_RMA_TYPES in
 * shmem_types.h), the operators the reductions combine with, and the
 * per-team collective state that shmem_team.c sets up through
 * shmem_team_coll.c. See docs/shmem_teams.md.
 */
#ifndef SHMEM_COLL_TYPES_H
#define SHMEM_COLL_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* and, or, xor */
#define SHMEMI_RED_BIT_TYPES(X)                                               \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)   \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)  \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)   \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)

/* max, min, sum, prod, sum_inscan, sum_exscan */
#define SHMEMI_RED_MINMAX_TYPES(X)                                            \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)           \
    X(long, long) X(long long, longlong) X(ptrdiff_t, ptrdiff)                \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)   \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)  \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)   \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) \
    X(float, float) X(double, double) X(long double, longdouble)

/* sum, prod */
#define SHMEMI_RED_COMPLEX_TYPES(X) X(double _Complex, complexd) X(float _Complex, complexf)

/* The operators, shared by the team reductions and the active-set
 * *_to_all forms: a = a OP b, always with the lower-numbered member's
 * value on the left, so every member combines in the same order. */
#define SHMEMI_OP_sum(a, b)  ((a) + (b))
#define SHMEMI_OP_prod(a, b) ((a) * (b))
#define SHMEMI_OP_min(a, b)  ((b) < (a) ? (b) : (a))
#define SHMEMI_OP_max(a, b)  ((b) > (a) ? (b) : (a))
#define SHMEMI_OP_and(a, b)  ((a) & (b))
#define SHMEMI_OP_or(a, b)   ((a) | (b))
#define SHMEMI_OP_xor(a, b)  ((a) ^ (b))

/* A combine function shmemi_tc_<name>_<op> for type T (a shmemi_tc_op_t). */
#define SHMEMI_DEFINE_TC_OP(T, N, OP)                                                            \
    static void shmemi_tc_##N##_##OP(void *acc, const void *in, size_t n)                        \
    {                                                                                            \
        T *a = acc;                                                                              \
        const T *b = in;                                                                         \
        for (size_t i = 0; i < n; i++) a[i] = SHMEMI_OP_##OP(a[i], b[i]);                        \
    }

/* ---- per-team collective state (shmem_team_coll.c), used by shmem_team.c ---- */

struct shmemi_team;

/* acc[i] = acc[i] OP in[i] for i < n */
typedef void (*shmemi_tc_op_t)(void *acc, const void *in, size_t n);
enum { SHMEMI_TC_REDUCE, SHMEMI_TC_INSCAN, SHMEMI_TC_EXSCAN };

/* Reduction (or scan) of nelems elements of elem bytes over a team. */
int shmemi_tc_reduce(const char *call, struct shmemi_team *team, void *dest, const void *source,
                     size_t nelems, size_t elem, shmemi_tc_op_t op, int kind);

/* Broadcast on a team; update_root 0 leaves the root's dest alone (the
 * deprecated active-set semantics). */
int shmemi_tc_broadcast(const char *call, struct shmemi_team *team, void *dest,
                        const void *source, size_t bytes, int root, int update_root);

#define SHMEMI_TC_SLOTS 64 /* teams a PE can be a member of at once (WORLD, SHARED included) */

struct shmemi_team_coll {
    int      slot;        /* index in the pool of symmetric slots */
    char    *sym;         /* the slot, my address (symmetric) */
    uint64_t bar_count;   /* barriers done on this team */
    uint64_t xchg_count;  /* exchanges done on this team */
    size_t   xchg_max;    /* bytes a member sends in one exchange; 0: none for this team */
    int      all_mapped;  /* every member's heap is plain memory here; -1: not known yet */
    uint64_t xdone[2];    /* flat exchanges done per parity (the hierarchical ones share the parity) */
    struct shmemi_tc_hier *hier; /* node structure when the team runs hierarchically; else NULL */
};

/* Reserves the pool (shmem_init, after the heap; same order on every PE). */
void shmemi_tc_init(void);
/* shmem_barrier_all runs on SHMEM_TEAM_WORLD's barrier from now on, when
 * that team is hierarchical (shmem_init, after its last flat barrier). */
void shmemi_tc_use_world_barrier(void);
void shmemi_tc_finalize(void);
/* Slots no team of mine uses (bit s: slot s). */
uint64_t shmemi_tc_free_mask(void);
/* Gives team (size, my_pe set) slot's collective state; nonzero when out of memory. */
int shmemi_tc_attach(struct shmemi_team *team, int slot);
void shmemi_tc_detach(struct shmemi_team *team);
/* Bitwise AND of nwords (<= 3) words over the members of team, in place. */
void shmemi_tc_allreduce_and(struct shmemi_team *team, uint64_t *words, int nwords);

#endif
