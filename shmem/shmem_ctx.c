/*
 * OpenSHMEM communication contexts.
 *
 * A context is a team plus options; the shmem_ctx_* routines number PEs
 * within that team and translate to world PEs (shmemi_ctx_pe) before the
 * same symmetric-offset actions as the default context. Completion is not
 * tracked per context: the btl completes per interface (btl_ctx_t is one
 * per job and created collectively, while shmem_ctx_create is local), so
 * ctx_quiet completes everything the PE issued, which is stronger than the
 * spec asks (docs/shmem_p2p.md).
 */
#include "shmem/shmem.h"
#include "shmem/shmemi.h"

#include <stdlib.h>

struct shmemi_ctx shmemi_ctx_default = {.team = &shmemi_team_world, .is_default = 1};
shmem_ctx_t SHMEM_CTX_DEFAULT = &shmemi_ctx_default;

static void shmemi_ctx_check(const char *call, shmem_ctx_t ctx)
{
    shmemi_check_init(call);
    if (ctx == SHMEM_CTX_INVALID) {
        shmemi_fatal("%s: the context is SHMEM_CTX_INVALID", call);
    }
}

static int shmemi_create_ctx(const char *call, shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    struct shmemi_ctx *c;

    shmemi_check_init(call);
    if (ctx == NULL) {
        shmemi_fatal("%s: ctx is NULL", call);
    }
    *ctx = SHMEM_CTX_INVALID;
    /* Not a member: no PE numbering to give it (the spec leaves it
     * undefined; failing is the useful answer). */
    if (team == SHMEM_TEAM_INVALID || team->my_pe < 0) {
        return 1;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return 1; /* not an error: the caller may retry */
    }
    c->team = team;
    c->options = options;
    __atomic_fetch_add(&team->n_ctx, 1, __ATOMIC_RELAXED);
    *ctx = c;
    return 0;
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)
{
    return shmemi_create_ctx("shmem_team_create_ctx", team, options, ctx);
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx)
{
    return shmemi_create_ctx("shmem_ctx_create", SHMEM_TEAM_WORLD, options, ctx);
}

void shmem_ctx_destroy(shmem_ctx_t ctx)
{
    if (ctx == SHMEM_CTX_INVALID) {
        return; /* the spec: no operation */
    }
    shmemi_check_init("shmem_ctx_destroy");
    if (ctx->is_default) {
        shmemi_fatal("shmem_ctx_destroy: SHMEM_CTX_DEFAULT cannot be destroyed");
    }
    shmemi_quiet();
    __atomic_fetch_sub(&ctx->team->n_ctx, 1, __ATOMIC_RELAXED);
    free(ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)
{
    if (team == NULL) {
        shmemi_fatal("shmem_ctx_get_team: team is NULL");
    }
    if (ctx == SHMEM_CTX_INVALID) {
        *team = SHMEM_TEAM_INVALID;
        return 1;
    }
    *team = ctx->team;
    return 0;
}

/* ---- ordering per context ---- */

/* Quiet and fence on SHMEM_CTX_INVALID do nothing: a PE outside a team
 * holds that context and may run the same code as the members (the spec's
 * shmem_team_create_ctx example does). */
void shmem_ctx_quiet(shmem_ctx_t ctx)
{
    shmemi_check_init("shmem_ctx_quiet");
    if (ctx != SHMEM_CTX_INVALID) {
        shmemi_quiet();
    }
}

void shmem_ctx_fence(shmem_ctx_t ctx)
{
    shmemi_check_init("shmem_ctx_fence");
    if (ctx == SHMEM_CTX_INVALID) {
        return;
    }
    if (rpipe_sym_fence() != UTIL_OK) {
        shmemi_fatal("shmem_ctx_fence failed");
    }
}

/* Completion to some PEs: the btl has no per-peer completion cheaper than
 * completing everything (ofi's fence is a quiet), so this is a quiet after
 * checking the PE numbers. */
static void shmemi_pe_quiet(const char *call, shmem_ctx_t ctx, const int *target_pes, size_t npes)
{
    shmemi_ctx_check(call, ctx);
    if (npes == 0) {
        return;
    }
    if (target_pes == NULL) {
        shmemi_fatal("%s: target_pes is NULL", call);
    }
#ifdef RMB_ARG_CHECKS
    for (size_t i = 0; i < npes; i++) {
        (void)shmemi_ctx_pe(call, ctx, target_pes[i]);
    }
#endif
    shmemi_quiet();
}

void shmem_pe_quiet(const int *target_pes, size_t npes)
{
    shmemi_pe_quiet("shmem_pe_quiet", SHMEM_CTX_DEFAULT, target_pes, npes);
}

void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes)
{
    shmemi_pe_quiet("shmem_ctx_pe_quiet", ctx, target_pes, npes);
}
