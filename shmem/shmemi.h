/*
 * shmem internals. The symmetric heap is one rpipe symmetric segment
 * managed by a symmetric-mode rmalloc instance; the program's static data
 * is a second segment (remapped at init so on-node peers map it). Every
 * RMA or atomic turns into an action at a symmetric offset of one of the
 * two segments (rpipe_sym_*), inline for the on-node case.
 */
#ifndef SHMEMI_H
#define SHMEMI_H

#include "shmem/shmem.h"
#include "rmalloc/rmalloc_symm.h"
#include "rpipe/rpipe_sym.h"
#include "util/log.h"
#include "util/wait.h"

#include <stddef.h>
#include <stdint.h>

#define SHMEMI_BARRIER_ROUNDS 32 /* dissemination rounds: up to 2^32 PEs */

typedef struct shmemi_state {
    int initialized; /* init count (shmem_init may be called again) */
    int finalized;
    int my_pe, n_pes;
    int thread_level;
    int debug; /* SHMEM_DEBUG: full checks (collective arguments agree) */
    size_t heap_size;
    rpipe_sym_t *heap;    /* the symmetric heap */
    rpipe_sym_t *data;    /* the program's static data (may be NULL) */
    rmalloc_symm_t *symm; /* allocator over the heap */
    /* internal symmetric objects, at the start of the heap */
    uint64_t *barrier_flags; /* [2 parities][SHMEMI_BARRIER_ROUNDS] */
    uint64_t barrier_epoch;
    uint64_t *coll_flags; /* [n_pes] arrival flags for active-set collectives */
    uint64_t coll_epoch;
    void *coll_buf; /* per-PE scratch for collectives */
    size_t coll_buf_size;
    btl_comp_t nbi_gets; /* get_nbi in flight across the network: shmemi_quiet waits */
} shmemi_state_t;

extern shmemi_state_t shmemi;

/* ---- teams and contexts (shmem_team.c, shmem_ctx.c) ---- */

struct shmemi_team_coll; /* collective state of a team (shmem_team_coll.c) */

/* Member i of a team is world PE start + i * stride, or world_pes[i] when
 * the members are not evenly spaced (SHMEM_TEAM_SHARED on some layouts). */
struct shmemi_team {
    int start, stride, size;
    int *world_pes; /* NULL when strided */
    int my_pe;      /* my index; -1 when not a member */
    shmem_team_config_t config;
    long config_mask;
    int predefined; /* WORLD, SHARED: never destroyed */
    int n_ctx;      /* contexts created on the team */
    int of_space;   /* a space's own team (shmemx_space_team): the
                                       * space destroys it, shmem_team_destroy may not */
    struct shmemi_team_coll *coll;
};

struct shmemi_ctx {
    struct shmemi_team *team;
    long options;
    int is_default;
};

extern struct shmemi_team shmemi_team_world, shmemi_team_shared;
extern struct shmemi_ctx shmemi_ctx_default;

static inline int shmemi_team_world_pe(const struct shmemi_team *team, int i)
{
    return team->world_pes != NULL ? team->world_pes[i] : team->start + i * team->stride;
}

/* Index of world PE pe in team, or -1 (O(1) when strided). */
int shmemi_team_index(const struct shmemi_team *team, int pe);
/* Frees a team made by a split (no checks): for spaces. */
void shmemi_team_release(struct shmemi_team *team);

/* Team setup at shmem_init (after the heap exists: collective state lives
 * in it) and teardown at shmem_finalize. */
void shmemi_team_init(void);
void shmemi_team_finalize(void);

/* shmem_error.c. Prints "shmem error: <what>" (with the PE) and ends the
 * job with status 1: the OpenSHMEM routines have no error return, and
 * silent corruption is worse than stopping. */
void shmemi_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* Not initialized: one clear line instead of a crash. */
void shmemi_not_initialized(const char *call) __attribute__((noreturn));

/* shmem_barrier_all/sync_all over SHMEM_TEAM_WORLD's hierarchical barrier,
 * set while that team runs in two levels (a job across nodes, several PEs
 * on some node; docs/multinode.md), else NULL: the flat dissemination
 * barrier. A hook, so that the barrier does not call the team code back. */
extern void (*shmemi_world_barrier)(void);

/* One idle step of a wait on local memory that peers update. A spinning PE
 * drives the btl too, not only once it yields: over MPI a peer's operation
 * on our memory (a barrier flag, a get) completes only while we are in MPI,
 * so progress only after the spin would delay the peer by the whole spin. */
#define SHMEMI_PROGRESS_EVERY 16 /* polls between btl progress calls while spinning */
static inline void shmemi_relax(util_wait_t *wait)
{
    if (util_wait_spinning(wait)) {
        if ((wait->polls + 1) % SHMEMI_PROGRESS_EVERY == 0) {
            rpipe_sym_progress();
        }
    } else {
        rpipe_sym_progress();
    }
    util_wait_relax(wait);
}

static inline void shmemi_check_init(const char *call)
{
    if (__builtin_expect(shmemi.initialized <= 0, 0)) {
        shmemi_not_initialized(call);
    }
}

/* Out of line, so that the checks cost one compare and a not-taken
 * branch. Both tell "not initialized" apart first: before shmem_init and
 * after shmem_finalize n_pes is 0 and the heap is shmemi_no_segment, so
 * every put, get and atomic lands here without an init test of its own. */
void shmemi_bad_pe(const char *call, int pe) __attribute__((noreturn, cold));
void shmemi_not_symmetric(const char *call, const void *addr, size_t len)
    __attribute__((noreturn, cold));

/* The heap while not initialized: empty, so that no address is in it. */
extern rpipe_sym_t shmemi_no_segment;

static inline void shmemi_check_pe(const char *call, int pe)
{
#ifdef RMB_ARG_CHECKS
    if (__builtin_expect((unsigned)pe >= (unsigned)shmemi.n_pes, 0)) {
        shmemi_bad_pe(call, pe);
    }
#endif
}

/* The world PE of pe in ctx's team (fatal on SHMEM_CTX_INVALID; range
 * checked with argument checks on). Inline: every shmem_ctx_* routine
 * starts with it. */
static inline int shmemi_ctx_pe(const char *call, shmem_ctx_t ctx, int pe)
{
    const struct shmemi_team *team;

    if (__builtin_expect(ctx == SHMEM_CTX_INVALID, 0)) {
        shmemi_fatal("%s: the context is SHMEM_CTX_INVALID", call);
    }
    team = ctx->team;
    if (__builtin_expect(team == &shmemi_team_world, 1)) {
        return pe; /* the RMA/AMO helpers check it */
    }
#ifdef RMB_ARG_CHECKS
    if (__builtin_expect((unsigned)pe >= (unsigned)team->size, 0)) {
        shmemi_fatal("%s: PE %d is not in 0..%d of the context's team", call, pe, team->size - 1);
    }
#endif
    return shmemi_team_world_pe(team, pe);
}

/* Spaces (shmem_space.c; docs/spaces.md). Every address outside the heap
 * and static data: the space holding [addr, addr + len) (binary search over
 * the live spaces by base address, O(log spaces)), with *pe_p, a world PE,
 * turned into its index in the space's team; fatal when the range is in no
 * live space or the PE is not a member. */
rpipe_sym_t *shmemi_space_locate(const char *call, const void *addr, size_t len, int *pe_p)
    __attribute__((noinline));
/* The space holding addr, or NULL (shmem_ptr, shmem_addr_accessible, locks). */
struct shmemi_space *shmemi_space_find(const void *addr, size_t len);
rpipe_sym_t *shmemi_space_seg(const struct shmemi_space *space);
const struct shmemi_team *shmemi_space_members(const struct shmemi_space *space);
void shmemi_space_finalize(void);

/* The heap or static data segment holding [addr, addr + len) and the
 * offset in it, or NULL: then the range is in a space or nowhere, and the
 * caller tail-calls an out-of-line shmemi_space_* form, so that the heap's
 * path keeps nothing live for it (same code as before spaces existed). */
static inline rpipe_sym_t *shmemi_locate_fast(const void *addr, size_t len, size_t *offset_p)
{
    rpipe_sym_t *seg = shmemi.heap;

    if (__builtin_expect(!rpipe_sym_contains(seg, addr, len), 0)) {
        seg = shmemi.data;
        if (seg == NULL || !rpipe_sym_contains(seg, addr, len)) {
            return NULL;
        }
    }
    *offset_p = (size_t)((const char *)addr - seg->base);
    return seg;
}

/* Segment and offset of any symmetric range, and the PE numbered as that
 * segment numbers its peers (a world PE, or for a space the member index);
 * fatal when it is not symmetric (the signal routines). */
static inline rpipe_sym_t *shmemi_locate(const char *call, const void *addr, size_t len,
                                         size_t *offset_p, int *pe_p)
{
    rpipe_sym_t *seg = shmemi_locate_fast(addr, len, offset_p);

    if (__builtin_expect(seg == NULL, 0)) {
        int pe = *pe_p; /* a copy: the caller's pe stays out of memory */
        seg = shmemi_space_locate(call, addr, len, &pe);
        *pe_p = pe;
        *offset_p = (size_t)((const char *)addr - seg->base);
    }
    return seg;
}

/* The RMA and AMO helpers below for space memory (shmem_space.c). */
void shmemi_space_put(const char *call, void *dest, const void *src, size_t len, int pe);
void shmemi_space_get(const char *call, void *dest, const void *src, size_t len, int pe);
uint64_t shmemi_space_amo_fetch(const char *call, void *dest, btl_amo_op_t op, unsigned size,
                                uint64_t operand, uint64_t compare, int pe);
void shmemi_space_amo_post(const char *call, void *dest, btl_amo_op_t op, unsigned size,
                           uint64_t operand, int pe, int batch);

static inline void shmemi_check_status(const char *call, util_status_t status, int pe)
{
    if (__builtin_expect(status != UTIL_OK, 0)) {
        shmemi_fatal("%s to PE %d failed: %s", call, pe, util_status_string(status));
    }
}

static inline void shmemi_put(const char *call, void *dest, const void *src, size_t len, int pe)
{
    size_t off;
    rpipe_sym_t *seg;

    shmemi_check_pe(call, pe);
    if (len == 0) {
        return;
    }
    seg = shmemi_locate_fast(dest, len, &off);
    if (__builtin_expect(seg == NULL, 0)) {
        shmemi_space_put(call, dest, src, len, pe);
        return;
    }
    shmemi_check_status(call, rpipe_sym_put(seg, pe, off, src, len), pe);
}

/* A get whose data is in dest once shmemi_comp_wait(comp) returns (comp
 * NULL, on node, and for a space: on return). */
static inline void shmemi_get_nb(const char *call, void *dest, const void *src, size_t len, int pe,
                                 btl_comp_t *comp)
{
    size_t off;
    rpipe_sym_t *seg;

    shmemi_check_pe(call, pe);
    if (len == 0) {
        return;
    }
    seg = shmemi_locate_fast(src, len, &off);
    if (__builtin_expect(seg == NULL, 0)) {
        shmemi_space_get(call, dest, src, len, pe);
        return;
    }
    shmemi_check_status(call, rpipe_sym_get_nb(seg, pe, off, dest, len, comp), pe);
}

static inline void shmemi_get(const char *call, void *dest, const void *src, size_t len, int pe)
{
    shmemi_get_nb(call, dest, src, len, pe, NULL);
}

static inline void shmemi_comp_wait(const char *call, btl_comp_t *comp)
{
    util_status_t status = btl_comp_test(comp); /* inline: nothing out is one compare */

    if (status == UTIL_IN_PROGRESS) {
        status = rpipe_sym_comp_wait(comp);
    }
    if (__builtin_expect(status != UTIL_OK, 0)) {
        shmemi_fatal("%s: %s", call, util_status_string(status));
    }
}

/* get_nbi: in dest by the next quiet (or anything that quiets: barrier,
 * context destruction, finalize); across the network gets to any PEs fly
 * together. */
static inline void shmemi_get_nbi(const char *call, void *dest, const void *src, size_t len, int pe)
{
    shmemi_get_nb(call, dest, src, len, pe, &shmemi.nbi_gets);
}

/* An atomic's target: checks pe (and alignment with RMB_ARG_CHECKS); the
 * heap segment holding dest, or NULL for a space. */
static inline rpipe_sym_t *shmemi_amo_locate(const char *call, void *dest, unsigned size, int pe,
                                             size_t *off_p)
{
    shmemi_check_pe(call, pe);
#ifdef RMB_ARG_CHECKS
    if (__builtin_expect(((uintptr_t)dest & (size - 1)) != 0, 0)) {
        shmemi_fatal("%s: %p is not aligned to %u bytes", call, dest, size);
    }
#endif
    return shmemi_locate_fast(dest, size, off_p);
}

static inline uint64_t shmemi_amo_fetch(const char *call, void *dest, btl_amo_op_t op,
                                        unsigned size, uint64_t operand, uint64_t compare, int pe)
{
    size_t off;
    rpipe_sym_t *seg;
    uint64_t old = 0;

    seg = shmemi_amo_locate(call, dest, size, pe, &off);
    if (__builtin_expect(seg == NULL, 0)) {
        return shmemi_space_amo_fetch(call, dest, op, size, operand, compare, pe);
    }
    shmemi_check_status(call, rpipe_sym_amo_fetch(seg, pe, off, op, size, operand, compare, &old),
                        pe);
    return old;
}

/* batch: see rpipe_sym_amo_post. */
static inline void shmemi_amo_post_as(const char *call, void *dest, btl_amo_op_t op, unsigned size,
                                      uint64_t operand, int pe, int batch)
{
    size_t off;
    rpipe_sym_t *seg;

    seg = shmemi_amo_locate(call, dest, size, pe, &off);
    if (__builtin_expect(seg == NULL, 0)) {
        shmemi_space_amo_post(call, dest, op, size, operand, pe, batch);
        return;
    }
    shmemi_check_status(call, rpipe_sym_amo_post(seg, pe, off, op, size, operand, batch), pe);
}

/* The user's non-fetching atomics: complete at quiet, so across the
 * network they may travel batched with the next operations to pe. */
static inline void shmemi_amo_post(const char *call, void *dest, btl_amo_op_t op, unsigned size,
                                   uint64_t operand, int pe)
{
    shmemi_amo_post_as(call, dest, op, size, operand, pe, 1);
}

/* The library's own notifications (a lock's grant, a collective's counter):
 * a peer polls for them, so they leave at once. */
static inline void shmemi_amo_notify(const char *call, void *dest, btl_amo_op_t op, unsigned size,
                                     uint64_t operand, int pe)
{
    shmemi_amo_post_as(call, dest, op, size, operand, pe, 0);
}

/* Active sets (start, 2^log_stride, size): fatal unless valid and
 * containing the caller; barrier over the set on the caller's pSync. */
void shmemi_check_set(const char *call, int start, int log_stride, int size);
void shmemi_barrier_set_psync(int start, int log_stride, int size, long *pSync);
void shmemi_gather_release(int start, int log_stride, int size, long *pSync, int coord,
                           void (*between)(void *arg), void *arg);
void shmemi_quiet(void);

/* Polls until *ivar satisfies cmp against value (bytes: 4 or 8, signed or
 * not), driving progress and yielding when it waits long. */
void shmemi_wait_until(const volatile void *ivar, int cmp, const void *value, unsigned size,
                       int is_signed);
int shmemi_test(const volatile void *ivar, int cmp, const void *value, unsigned size,
                int is_signed);

#endif
