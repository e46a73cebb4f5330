/*
 * OpenSHMEM teams: SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED (the PEs of this
 * node) and the teams split from them.
 *
 * A team is its members' world PE numbers (start + i * stride, or a list)
 * and a slot of symmetric collective state (shmem_team_coll.c). A split is
 * collective over the parent only, so it cannot allocate symmetric memory;
 * instead the parent's members AND their masks of free slots with the
 * parent's own reduction and all take the lowest slot free everywhere,
 * which is therefore free on every member of the new team.
 */
#include "shmem/shmem.h"
#include "shmem/shmemi.h"
#include "shmem/shmem_coll_types.h"
#include "bootstrap/bootstrap.h"

#include <stdio.h>
#include <stdlib.h>

struct shmemi_team shmemi_team_world = {.predefined = 1, .my_pe = -1};
struct shmemi_team shmemi_team_shared = {.predefined = 1, .my_pe = -1};
shmem_team_t SHMEM_TEAM_WORLD = &shmemi_team_world;
shmem_team_t SHMEM_TEAM_SHARED = &shmemi_team_shared;

void shmemi_team_init(void)
{
    const int *local = bootstrap_local_ranks();
    int n = bootstrap_local_size(), strided = 1;

    shmemi_team_world.start = 0;
    shmemi_team_world.stride = 1;
    shmemi_team_world.size = shmemi.n_pes;
    shmemi_team_world.my_pe = shmemi.my_pe;

    for (int i = 2; i < n; i++) {
        strided &= (local[i] - local[i - 1] == local[1] - local[0]);
    }
    shmemi_team_shared.start = local[0];
    shmemi_team_shared.stride = n > 1 ? local[1] - local[0] : 1;
    shmemi_team_shared.size = n;
    shmemi_team_shared.my_pe = bootstrap_local_rank();
    if (!strided) {
        shmemi_team_shared.world_pes = malloc(sizeof(int) * (size_t)n);
        if (shmemi_team_shared.world_pes == NULL) {
            shmemi_fatal("shmem_init: out of memory");
        }
        for (int i = 0; i < n; i++) {
            shmemi_team_shared.world_pes[i] = local[i];
        }
    }
    /* slot 0: WORLD, 1: SHARED (the SHARED teams of different nodes have
     * no common member, so they share the slot number) */
    shmemi_tc_init();
    if (shmemi_tc_attach(&shmemi_team_world, 0) != 0 ||
        shmemi_tc_attach(&shmemi_team_shared, 1) != 0) {
        shmemi_fatal("shmem_init: out of memory");
    }
}

void shmemi_team_finalize(void)
{
    shmemi_tc_finalize();
    free(shmemi_team_shared.world_pes);
    shmemi_team_shared.world_pes = NULL;
    shmemi_team_world.my_pe = shmemi_team_shared.my_pe = -1;
}

/* ---- queries --------------------------------------------------------------------------- */

static inline int shmemi_team_ok(shmem_team_t team)
{
    return shmemi.initialized > 0 && team != SHMEM_TEAM_INVALID && team->my_pe >= 0;
}

int shmem_team_my_pe(shmem_team_t team)
{
    return shmemi_team_ok(team) ? team->my_pe : -1;
}

int shmem_team_n_pes(shmem_team_t team)
{
    return shmemi_team_ok(team) ? team->size : -1;
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)
{
    if (!shmemi_team_ok(team) || config == NULL) {
        return -1;
    }
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS) {
        config->num_contexts = team->config.num_contexts;
    }
    return 0;
}

int shmemi_team_index(const struct shmemi_team *team, int pe)
{
    if (team->world_pes != NULL) {
        for (int i = 0; i < team->size; i++) {
            if (team->world_pes[i] == pe) {
                return i;
            }
        }
        return -1;
    }
    long d = (long)pe - team->start;
    if (d % team->stride != 0) {
        return -1;
    }
    d /= team->stride;
    return d >= 0 && d < team->size ? (int)d : -1;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)
{
    if (!shmemi_team_ok(src_team) || !shmemi_team_ok(dest_team) || src_pe < 0 ||
        src_pe >= src_team->size) {
        return -1;
    }
    return shmemi_team_index(dest_team, shmemi_team_world_pe(src_team, src_pe));
}

void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)
{
    if (!shmemi_team_ok(team) || pe < 0 || pe >= team->size) {
        return NULL;
    }
    return shmem_ptr(dest, shmemi_team_world_pe(team, pe));
}

/* ---- creation -------------------------------------------------------------------------- */

/* Parent members start + i * stride, i < size, all in 0..parent->size - 1
 * (the spec's valid triplet: no wrap-around; stride 0 only with size 1). */
static int shmemi_team_triplet_ok(const struct shmemi_team *parent, int start, int stride, int size)
{
    long long last = (long long)start + (long long)stride * (size - 1);

    if (size < 1 || (stride == 0 && size != 1)) {
        return 0;
    }
    return start >= 0 && start < parent->size && last >= 0 && last < parent->size;
}

/* The new team's members in world numbering and my place in it; NULL
 * when out of memory. */
static struct shmemi_team *shmemi_team_new(const struct shmemi_team *parent, int start, int stride,
                                           int size, const shmem_team_config_t *config,
                                           long config_mask)
{
    struct shmemi_team *team = calloc(1, sizeof(*team));

    if (team == NULL) {
        return NULL;
    }
    if (size == 1) {
        stride = 1; /* any stride names the same single member */
    }
    team->size = size;
    if (parent->world_pes == NULL) {
        team->start = parent->start + start * parent->stride;
        team->stride = stride * parent->stride;
    } else {
        team->world_pes = malloc(sizeof(int) * (size_t)size);
        if (team->world_pes == NULL) {
            free(team);
            return NULL;
        }
        for (int i = 0; i < size; i++) {
            team->world_pes[i] = parent->world_pes[start + i * stride];
        }
        team->start = team->world_pes[0];
        team->stride = 1;
    }
    team->my_pe = shmemi_team_index(team, shmemi.my_pe);
    if (config != NULL && (config_mask & SHMEM_TEAM_NUM_CONTEXTS)) {
        team->config.num_contexts = config->num_contexts;
        team->config_mask = SHMEM_TEAM_NUM_CONTEXTS;
    }
    return team;
}

static void shmemi_team_free(struct shmemi_team *team)
{
    if (team != NULL) {
        shmemi_tc_detach(team);
        free(team->world_pes);
        free(team);
    }
}

void shmemi_team_release(struct shmemi_team *team)
{
    shmemi_team_free(team);
}

static int shmemi_lowest_bit(uint64_t mask)
{
    return mask == 0 ? -1 : __builtin_ctzll(mask);
}

/* One line, once per split, from the parent's first member. */
static void shmemi_team_warn(const struct shmemi_team *parent, const char *call, const char *what)
{
    if (parent->my_pe == 0) {
        fprintf(stderr, "shmem warning (PE %d): %s: %s\n", shmemi.my_pe, call, what);
        fflush(stderr);
    }
}

/* Creates up to two teams at once (split_2d: every member belongs to one
 * x team and one y team; the x teams are disjoint, so they all use the
 * same slot, and so do the y teams). mine[k] is my team k, NULL when I am
 * not a member; ok is 0 when I could not allocate them. The parent agrees
 * on the free slots and on whether everyone could allocate; returns how
 * many of the teams got a slot (the same on every member of the parent). */
static int shmemi_team_commit(struct shmemi_team *parent, const char *call, int ok,
                              struct shmemi_team *mine[2], int nteams, shmem_team_t *out[2])
{
    uint64_t words[2] = {shmemi_tc_free_mask(), (uint64_t)(ok != 0)};
    int made = 0;

    shmemi_tc_allreduce_and(parent, words, 2);
    if (!words[1]) {
        shmemi_team_warn(parent, call, "out of memory");
    }
    for (int k = 0; k < nteams; k++) {
        int slot = words[1] ? shmemi_lowest_bit(words[0]) : -1;

        *out[k] = SHMEM_TEAM_INVALID;
        if (slot < 0) {
            if (words[1]) {
                shmemi_team_warn(parent, call,
                                 "no team slot is free on every PE of the parent "
                                 "team (too many live teams: destroy some)");
                words[1] = 0; /* the message once */
            }
            shmemi_team_free(mine[k]);
            continue;
        }
        words[0] &= ~(1ULL << slot);
        made++;
        if (mine[k] != NULL) {
            if (shmemi_tc_attach(mine[k], slot) != 0) {
                shmemi_fatal("%s: out of memory", call); /* too late to agree on failing */
            }
            *out[k] = mine[k];
        }
    }
    return made;
}

int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team)
{
    const char *call = "shmem_team_split_strided";
    struct shmemi_team *mine[2] = {NULL, NULL};
    shmem_team_t *out[2] = {new_team, NULL};
    long long rel;
    int ok = 1;

    shmemi_check_init(call);
    if (new_team == NULL) {
        return -1;
    }
    *new_team = SHMEM_TEAM_INVALID;
    if (!shmemi_team_ok(parent_team) || parent_team->coll == NULL) {
        return -1;
    }
    if (!shmemi_team_triplet_ok(parent_team, start, stride, size)) {
        /* same arguments everywhere: every member returns here */
        shmemi_team_warn(parent_team, call, "invalid (start, stride, size) for the parent team");
        return -1;
    }
    rel = (long long)parent_team->my_pe - start;
    if (stride == 0 ? rel == 0 : (rel % stride == 0 && rel / stride >= 0 && rel / stride < size)) {
        mine[0] = shmemi_team_new(parent_team, start, stride, size, config, config_mask);
        ok = mine[0] != NULL;
    }
    return shmemi_team_commit(parent_team, call, ok, mine, 1, out) == 1 ? 0 : -1;
}

int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team)
{
    const char *call = "shmem_team_split_2d";
    struct shmemi_team *mine[2];
    shmem_team_t *out[2] = {xaxis_team, yaxis_team};
    int n, me, x, y;

    shmemi_check_init(call);
    if (xaxis_team == NULL || yaxis_team == NULL) {
        return -1;
    }
    *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
    if (!shmemi_team_ok(parent_team) || parent_team->coll == NULL) {
        return -1;
    }
    n = parent_team->size;
    me = parent_team->my_pe;
    if (xrange <= 0) {
        shmemi_team_warn(parent_team, call, "xrange must be positive");
        return -1;
    }
    if (xrange > n) {
        xrange = n;
    }
    x = me % xrange;
    y = me / xrange;
    /* x team: my row (same y); y team: my column (same x) */
    mine[0] = shmemi_team_new(parent_team, y * xrange, 1,
                              n - y * xrange < xrange ? n - y * xrange : xrange, xaxis_config,
                              xaxis_mask);
    mine[1] = shmemi_team_new(parent_team, x, xrange, (n - x + xrange - 1) / xrange, yaxis_config,
                              yaxis_mask);
    return shmemi_team_commit(parent_team, call, mine[0] != NULL && mine[1] != NULL, mine, 2,
                              out) == 2
               ? 0
               : -1;
}

void shmem_team_destroy(shmem_team_t team)
{
    shmemi_check_init("shmem_team_destroy");
    if (team == SHMEM_TEAM_INVALID) {
        return;
    }
    if (team->predefined) {
        shmemi_fatal("shmem_team_destroy: %s cannot be destroyed",
                     team == SHMEM_TEAM_WORLD    ? "SHMEM_TEAM_WORLD"
                     : team == SHMEM_TEAM_SHARED ? "SHMEM_TEAM_SHARED"
                                                 : "a predefined team");
    }
    if (team->of_space) {
        shmemi_fatal("shmem_team_destroy: the team is a space's own (shmemx_space_team); "
                     "shmemx_destroy_space destroys it");
    }
    shmemi_team_free(team);
}
