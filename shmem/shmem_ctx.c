/*
 * OpenSHMEM communication contexts.
 */
#include "shmem/shmem.h"
#include "shmem/shmemi.h"

struct shmemi_ctx shmemi_ctx_default = {.team = &shmemi_team_world, .is_default = 1};
shmem_ctx_t SHMEM_CTX_DEFAULT = &shmemi_ctx_default;
