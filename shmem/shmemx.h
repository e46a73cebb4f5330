/*
 * shmemx.h — rmb extensions to OpenSHMEM: spaces (reference 003, Welch et
 * al., Table 3), symmetric memory that exists only on the PEs of one team.
 * docs/spaces.md has the semantics; in short:
 *
 * - shmemx_create_symmetric_space is collective over the team's members
 *   only (non-members do not call it, allocate nothing, wait for nothing).
 *   The space has a fixed size per member (the _size form, or
 *   RMB_SPACE_SIZE; memory is committed only when touched).
 * - malloc/calloc/align/realloc/free_space are collective over the space's
 *   members with the same arguments; an object has the same offset in every
 *   member's part of the space, so it is addressed like any symmetric
 *   object: world PE numbers in the plain routines, team PE numbers through
 *   a context of any team (shmem_team_create_ctx) that contains the target.
 *   Every target must be a member of the space's team.
 * - shmemx_destroy_space (collective over the members) frees everything in
 *   it. Destroying the team the space was created from does not destroy the
 *   space: it keeps its own copy, shmemx_space_team(space).
 */
#ifndef SHMEMX_H
#define SHMEMX_H

#include "shmem.h" /* next to this header, installed or in the tree */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shmemi_space *shmemx_space_t;
#define SHMEMX_SPACE_INVALID ((shmemx_space_t)0)

/* Creates a space over team (every member calls it; same size on each).
 * 0 on success; nonzero, and *space = SHMEMX_SPACE_INVALID, when the caller
 * is not a member or no team slot is free. size 0: RMB_SPACE_SIZE. */
SHMEM_API int shmemx_create_symmetric_space(shmem_team_t team, shmemx_space_t *space);
SHMEM_API int shmemx_create_symmetric_space_size(shmem_team_t team, size_t size,
                                                 shmemx_space_t *space);
/* The space's own team (a copy made at creation, destroyed with the space;
 * do not destroy it): its PE numbers, its contexts, its collectives. */
SHMEM_API shmem_team_t shmemx_space_team(shmemx_space_t space);
SHMEM_API void *shmemx_malloc_space(size_t size, shmemx_space_t space);
SHMEM_API void *shmemx_calloc_space(size_t count, size_t size, shmemx_space_t space);
SHMEM_API void *shmemx_align_space(size_t alignment, size_t size, shmemx_space_t space);
SHMEM_API void *shmemx_realloc_space(void *ptr, size_t size, shmemx_space_t space);
SHMEM_API void shmemx_free_space(void *ptr, shmemx_space_t space);
/* Frees every object of the space and the space itself. */
SHMEM_API void shmemx_destroy_space(shmemx_space_t space);

#ifdef __cplusplus
}
#endif

#endif
