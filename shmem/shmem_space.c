/*
 * Spaces (shmemx.h; reference 003, Table 3; docs/spaces.md): symmetric
 * memory that exists only on the members of one team.
 *
 * A space is an rpipe group segment (its own registered region, created on
 * the members only, keys exchanged among them through the bootstrap) with a
 * symmetric-mode rmalloc instance over it, exactly as the global heap is a
 * segment plus rmalloc_symm: calls in the same order with the same
 * arguments on every member give the same offsets, so nothing is exchanged
 * per allocation. The space keeps its own team, split from the user's at
 * creation (collective over the user's team only): it gives the space a
 * slot of its own for the barriers of allocation and destruction, and it
 * outlives the user's team (the paper: destroying a team does not destroy
 * memory other teams may still use).
 *
 * The put/AMO path tests the global heap, then static data, inline; only an
 * address in neither comes here, where the live spaces are a table sorted
 * by base address: a binary search, O(log spaces).
 */
#include "shmem/shmem.h"
#include "shmem/shmemx.h"
#include "shmem/shmemi.h"
#include "shmem/shmem_coll_types.h"
#include "util/env.h"

#include <stdlib.h>
#include <string.h>

#define SHMEMI_SPACE_LIVE 0x5350414345ULL /* "SPACE" */
#define SHMEMI_SPACE_DEAD 0x4445414445ULL /* destroyed: the handle stays as a tombstone */

struct shmemi_space {
    uint64_t magic;
    struct shmemi_team *team; /* the space's own team */
    rpipe_sym_t *seg;
    rmalloc_symm_t *symm;
    size_t size;
    struct shmemi_space *next; /* every space ever created here (freed at finalize) */
};

static struct {
    struct shmemi_space **live; /* sorted by seg->base */
    int n_live, cap;
    struct shmemi_space *all;
    uint64_t next_tag; /* key tags of group segments: never reused */
} shmemi_spaces;

/* ---- the table of live spaces ---------------------------------------------------------- */

/* Index of the last live space whose base is <= addr, or -1. */
static int shmemi_space_below(const char *addr)
{
    int lo = 0, hi = shmemi_spaces.n_live - 1, found = -1;

    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (shmemi_spaces.live[mid]->seg->base <= addr) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found;
}

struct shmemi_space *shmemi_space_find(const void *addr, size_t len)
{
    int i = shmemi_space_below(addr);

    if (i >= 0 && rpipe_sym_contains(shmemi_spaces.live[i]->seg, addr, len)) {
        return shmemi_spaces.live[i];
    }
    return NULL;
}

static int shmemi_space_insert(struct shmemi_space *sp)
{
    int at;

    if (shmemi_spaces.n_live == shmemi_spaces.cap) {
        int cap = shmemi_spaces.cap > 0 ? 2 * shmemi_spaces.cap : 8;
        void *grown = realloc(shmemi_spaces.live, sizeof(*shmemi_spaces.live) * (size_t)cap);
        if (grown == NULL) {
            return -1;
        }
        shmemi_spaces.live = grown;
        shmemi_spaces.cap = cap;
    }
    at = shmemi_space_below(sp->seg->base) + 1;
    memmove(&shmemi_spaces.live[at + 1], &shmemi_spaces.live[at],
            sizeof(*shmemi_spaces.live) * (size_t)(shmemi_spaces.n_live - at));
    shmemi_spaces.live[at] = sp;
    shmemi_spaces.n_live++;
    return 0;
}

static void shmemi_space_remove(struct shmemi_space *sp)
{
    int at = shmemi_space_below(sp->seg->base);

    memmove(&shmemi_spaces.live[at], &shmemi_spaces.live[at + 1],
            sizeof(*shmemi_spaces.live) * (size_t)(shmemi_spaces.n_live - at - 1));
    shmemi_spaces.n_live--;
}

rpipe_sym_t *shmemi_space_seg(const struct shmemi_space *space)
{
    return space->seg;
}

const struct shmemi_team *shmemi_space_members(const struct shmemi_space *space)
{
    return space->team;
}

rpipe_sym_t *shmemi_space_locate(const char *call, const void *addr, size_t len, int *pe_p)
{
    struct shmemi_space *sp = shmemi_space_find(addr, len);
    int index;

    if (sp == NULL) {
        shmemi_not_symmetric(call, addr, len);
    }
    index = shmemi_team_index(sp->team, *pe_p);
    if (index < 0) {
        shmemi_fatal("%s: PE %d is not a member of the team of the space holding %p (a space "
                     "exists only on its team's PEs)",
                     call, *pe_p, addr);
    }
    *pe_p = index;
    return sp->seg;
}

void shmemi_space_put(const char *call, void *dest, const void *src, size_t len, int pe)
{
    rpipe_sym_t *seg = shmemi_space_locate(call, dest, len, &pe);
    size_t off = (size_t)((char *)dest - seg->base);

    shmemi_check_status(call, rpipe_sym_put(seg, pe, off, src, len), pe);
}

void shmemi_space_get(const char *call, void *dest, const void *src, size_t len, int pe)
{
    rpipe_sym_t *seg = shmemi_space_locate(call, src, len, &pe);
    size_t off = (size_t)((const char *)src - seg->base);

    shmemi_check_status(call, rpipe_sym_get(seg, pe, off, dest, len), pe);
}

uint64_t shmemi_space_amo_fetch(const char *call, void *dest, btl_amo_op_t op, unsigned size,
                                uint64_t operand, uint64_t compare, int pe)
{
    rpipe_sym_t *seg = shmemi_space_locate(call, dest, size, &pe);
    size_t off = (size_t)((char *)dest - seg->base);
    uint64_t old = 0;

    shmemi_check_status(call, rpipe_sym_amo_fetch(seg, pe, off, op, size, operand, compare, &old),
                        pe);
    return old;
}

void shmemi_space_amo_post(const char *call, void *dest, btl_amo_op_t op, unsigned size,
                           uint64_t operand, int pe, int batch)
{
    rpipe_sym_t *seg = shmemi_space_locate(call, dest, size, &pe);
    size_t off = (size_t)((char *)dest - seg->base);

    shmemi_check_status(call, rpipe_sym_amo_post(seg, pe, off, op, size, operand, batch), pe);
}

/* ---- creation and destruction ---------------------------------------------------------- */

static void shmemi_max_u64(void *acc, const void *in, size_t n)
{
    uint64_t *a = acc;
    const uint64_t *b = in;
    for (size_t i = 0; i < n; i++) a[i] = a[i] > b[i] ? a[i] : b[i];
}

/* Keys among the members: the space team's exchange, else (more than 16
 * members) rpipe's bootstrap path. */
static int shmemi_space_allgather(void *team, const void *in, size_t len, void *out)
{
    return shmemi_tc_allgather(team, in, len, out);
}

int shmemx_create_symmetric_space_size(shmem_team_t team, size_t size, shmemx_space_t *space)
{
    const char *call = "shmemx_create_symmetric_space";
    struct shmemi_space *sp;
    shmem_team_t own;
    uint64_t words[3];
    util_status_t status;
    const char *keys = "auto";
    int *ranks;

    shmemi_check_init(call);
    if (space == NULL) {
        shmemi_fatal("%s: the space argument is NULL", call);
    }
    *space = SHMEMX_SPACE_INVALID;
    if (team == SHMEM_TEAM_INVALID || team->my_pe < 0 || team->coll == NULL) {
        return -1; /* not a member: nothing to do, nobody waits for me */
    }
    if (size == 0 && util_env_get_size("RMB_SPACE_SIZE", &size) != UTIL_OK) {
        shmemi_fatal("%s: RMB_SPACE_SIZE is not a size (e.g. 64M, 1G)", call);
    }
    size = (size + 4095) & ~(size_t)4095;
    /* the space's own team: a slot for its barriers, and it outlives team */
    if (shmem_team_split_strided(team, 0, 1, team->size, NULL, 0, &own) != 0) {
        return -1; /* every member returns here (no slot free on all of them) */
    }
    own->of_space = 1;
    /* One reduction agrees on a key tag newer than any member used (max),
     * and checks the size: max(size) == min(size), min = ~max(~size). */
    words[0] = shmemi_spaces.next_tag;
    words[1] = size;
    words[2] = ~(uint64_t)size;
    shmemi_tc_allreduce(own, words, 3, shmemi_max_u64);
    shmemi_spaces.next_tag = words[0] + 1;
    if (words[1] != ~words[2]) {
        shmemi_fatal("%s: the members ask for different sizes (%zu here, between %llu and %llu); "
                     "a space has one size",
                     call, size, (unsigned long long)~words[2], (unsigned long long)words[1]);
    }
    sp = calloc(1, sizeof(*sp));
    ranks = malloc(sizeof(int) * (size_t)own->size);
    if (sp == NULL || ranks == NULL) {
        shmemi_fatal("%s: out of memory", call);
    }
    for (int i = 0; i < own->size; i++) {
        ranks[i] = shmemi_team_world_pe(own, i);
    }
    util_env_get_string("RMB_SPACE_KEYS", &keys);
    status = rpipe_sym_alloc_group(
        ranks, own->size, words[0], size,
        own->coll->xchg_max > 0 && strcmp(keys, "bootstrap") != 0 ? shmemi_space_allgather : NULL,
        own, &sp->seg);
    free(ranks);
    if (status != UTIL_OK) {
        shmemi_fatal("%s: cannot create a space of %zu bytes per PE: %s", call, size,
                     util_status_string(status));
    }
    status = rmalloc_symm_create(sp->seg->base, size, 64, RMALLOC_FIRST_FIT, &sp->symm);
    if (status != UTIL_OK || shmemi_space_insert(sp) != 0) {
        shmemi_fatal("%s: cannot create the space's allocator: %s", call,
                     util_status_string(status == UTIL_OK ? UTIL_ERR_NO_MEMORY : status));
    }
    sp->magic = SHMEMI_SPACE_LIVE;
    sp->team = own;
    sp->size = size;
    sp->next = shmemi_spaces.all;
    shmemi_spaces.all = sp;
    *space = sp;
    return 0;
}

int shmemx_create_symmetric_space(shmem_team_t team, shmemx_space_t *space)
{
    return shmemx_create_symmetric_space_size(team, 0, space);
}

/* A live space of mine, or one clear line naming the call. */
static struct shmemi_space *shmemi_space_check(const char *call, shmemx_space_t space)
{
    shmemi_check_init(call);
    if (space == SHMEMX_SPACE_INVALID) {
        shmemi_fatal("%s: the space is SHMEMX_SPACE_INVALID (a PE outside the space's team has "
                     "no space)",
                     call);
    }
    if (space->magic == SHMEMI_SPACE_DEAD) {
        shmemi_fatal("%s: the space was destroyed (shmemx_destroy_space)", call);
    }
    if (space->magic != SHMEMI_SPACE_LIVE) {
        shmemi_fatal("%s: %p is not a space", call, (void *)space);
    }
    return space;
}

shmem_team_t shmemx_space_team(shmemx_space_t space)
{
    return shmemi_space_check("shmemx_space_team", space)->team;
}

static void shmemi_space_free_parts(struct shmemi_space *sp)
{
    shmemi_space_remove(sp);
    rmalloc_symm_destroy(sp->symm);
    rpipe_sym_release(sp->seg);
    shmemi_team_release(sp->team);
    sp->symm = NULL;
    sp->seg = NULL;
    sp->team = NULL;
    sp->magic = SHMEMI_SPACE_DEAD;
}

void shmemx_destroy_space(shmemx_space_t space)
{
    const char *call = "shmemx_destroy_space";
    struct shmemi_space *sp = shmemi_space_check(call, space);

    if (sp->team->n_ctx > 0) {
        shmemi_fatal("%s: %d context(s) on the space's team are still live; destroy them first",
                     call, sp->team->n_ctx);
    }
    /* every member's accesses are complete before anyone unmaps */
    shmemi_quiet();
    shmem_team_sync(sp->team);
    shmemi_space_free_parts(sp);
}

/* Spaces the program did not destroy: after shmem_finalize's barrier
 * nobody reaches into them any more. */
void shmemi_space_finalize(void)
{
    while (shmemi_spaces.all != NULL) {
        struct shmemi_space *sp = shmemi_spaces.all;
        shmemi_spaces.all = sp->next;
        if (sp->magic == SHMEMI_SPACE_LIVE) {
            shmemi_space_free_parts(sp);
        }
        free(sp);
    }
    free(shmemi_spaces.live);
    shmemi_spaces.live = NULL;
    shmemi_spaces.n_live = shmemi_spaces.cap = 0;
}

/* ---- allocation ------------------------------------------------------------------------ */

static void shmemi_space_exhausted(const char *call, const struct shmemi_space *sp, size_t size)
    __attribute__((noreturn, cold));
static void shmemi_space_exhausted(const char *call, const struct shmemi_space *sp, size_t size)
{
    const rmalloc_vmem_t *vmem = rmalloc_symm_vmem(sp->symm);
    size_t used = (size_t)rmalloc_vmem_used_units(vmem) << rmalloc_vmem_unit_shift(vmem);

    shmemi_fatal("%s(%zu): the space is exhausted: %zu bytes requested, %zu free in a space of "
                 "%zu; create it larger (shmemx_create_symmetric_space_size or RMB_SPACE_SIZE)",
                 call, size, size, used < sp->size ? sp->size - used : 0, sp->size);
}

/* Collective over the members: allocate, zero if asked, and return once
 * every member has (nobody puts into a block a slower member still clears). */
static void *shmemi_space_alloc(const char *call, struct shmemi_space *sp, size_t size,
                                size_t align, int zero)
{
    util_status_t status;
    void *ptr = NULL;

    status = rmalloc_symm_alloc(sp->symm, size, align, &ptr);
    if (status == UTIL_ERR_NO_RESOURCE || (status == UTIL_ERR_INVALID && size > sp->size)) {
        shmemi_space_exhausted(call, sp, size);
    }
    if (status != UTIL_OK) {
        shmemi_fatal("%s: %s", call, util_status_string(status));
    }
    if (zero && ptr != NULL) {
        memset(ptr, 0, size);
    }
    shmem_team_sync(sp->team);
    return ptr;
}

void *shmemx_malloc_space(size_t size, shmemx_space_t space)
{
    const char *call = "shmemx_malloc_space";
    return shmemi_space_alloc(call, shmemi_space_check(call, space), size, 0, 0);
}

void *shmemx_calloc_space(size_t count, size_t size, shmemx_space_t space)
{
    const char *call = "shmemx_calloc_space";
    struct shmemi_space *sp = shmemi_space_check(call, space);

    if (size != 0 && count > SIZE_MAX / size) {
        shmem_team_sync(sp->team);
        return NULL;
    }
    return shmemi_space_alloc(call, sp, count * size, 0, 1);
}

void *shmemx_align_space(size_t alignment, size_t size, shmemx_space_t space)
{
    const char *call = "shmemx_align_space";
    struct shmemi_space *sp = shmemi_space_check(call, space);

    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        shmem_team_sync(sp->team);
        return NULL; /* as shmem_align: not a power of two */
    }
    return shmemi_space_alloc(call, sp, size, alignment, 0);
}

/* ptr in this space, or one line saying where it is instead. */
static void shmemi_space_check_ptr(const char *call, const struct shmemi_space *sp, void *ptr)
{
    const struct shmemi_space *other;

    if (rpipe_sym_contains(sp->seg, ptr, 1)) {
        return;
    }
    other = shmemi_space_find(ptr, 1);
    shmemi_fatal("%s: %p is not in this space (it is %s)", call, ptr,
                 other != NULL ? "in another space"
                 : rpipe_sym_contains(shmemi.heap, ptr, 1)
                     ? "in the global symmetric heap"
                     : "in no live space: freed with its space, or never symmetric");
}

void *shmemx_realloc_space(void *ptr, size_t size, shmemx_space_t space)
{
    const char *call = "shmemx_realloc_space";
    struct shmemi_space *sp = shmemi_space_check(call, space);
    util_status_t status;
    void *out = NULL;

    if (ptr != NULL) {
        shmemi_space_check_ptr(call, sp, ptr);
    }
    shmemi_quiet();
    shmem_team_sync(sp->team); /* nobody may still access the old block */
    status = rmalloc_symm_realloc(sp->symm, ptr, size, &out);
    if (status == UTIL_ERR_NO_RESOURCE || (status == UTIL_ERR_INVALID && size > sp->size)) {
        shmemi_space_exhausted(call, sp, size);
    }
    if (status == UTIL_ERR_INVALID) {
        shmemi_fatal("%s: %p is not a live allocation of the space (freed?)", call, ptr);
    }
    if (status != UTIL_OK) {
        shmemi_fatal("%s: %s", call, util_status_string(status));
    }
    shmem_team_sync(sp->team);
    return out;
}

void shmemx_free_space(void *ptr, shmemx_space_t space)
{
    const char *call = "shmemx_free_space";
    struct shmemi_space *sp = shmemi_space_check(call, space);

    if (ptr == NULL) {
        return;
    }
    shmemi_space_check_ptr(call, sp, ptr);
    shmemi_quiet();
    shmem_team_sync(sp->team);
    if (rmalloc_symm_free(sp->symm, ptr) != UTIL_OK) {
        shmemi_fatal("%s: %p is not a live allocation of the space (freed twice?)", call, ptr);
    }
}
