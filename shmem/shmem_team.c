/*
 * OpenSHMEM teams: SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED (the PEs of this
 * node) and the teams split from them.
 */
#include "shmem/shmem.h"
#include "shmem/shmemi.h"
#include "bootstrap/bootstrap.h"

#include <stdlib.h>

struct shmemi_team shmemi_team_world  = {.predefined = 1, .my_pe = -1};
struct shmemi_team shmemi_team_shared = {.predefined = 1, .my_pe = -1};
shmem_team_t SHMEM_TEAM_WORLD  = &shmemi_team_world;
shmem_team_t SHMEM_TEAM_SHARED = &shmemi_team_shared;

void shmemi_team_init(void)
{
    const int *local = bootstrap_local_ranks();
    int n = bootstrap_local_size(), strided = 1;

    shmemi_team_world.start  = 0;
    shmemi_team_world.stride = 1;
    shmemi_team_world.size   = shmemi.n_pes;
    shmemi_team_world.my_pe  = shmemi.my_pe;

    for (int i = 2; i < n; i++) {
        strided &= (local[i] - local[i - 1] == local[1] - local[0]);
    }
    shmemi_team_shared.start  = local[0];
    shmemi_team_shared.stride = n > 1 ? local[1] - local[0] : 1;
    shmemi_team_shared.size   = n;
    shmemi_team_shared.my_pe  = bootstrap_local_rank();
    if (!strided) {
        shmemi_team_shared.world_pes = malloc(sizeof(int) * (size_t)n);
        if (shmemi_team_shared.world_pes == NULL) {
            shmemi_fatal("shmem_init: out of memory");
        }
        for (int i = 0; i < n; i++) {
            shmemi_team_shared.world_pes[i] = local[i];
        }
    }
}

void shmemi_team_finalize(void)
{
    free(shmemi_team_shared.world_pes);
    shmemi_team_shared.world_pes = NULL;
    shmemi_team_world.my_pe = shmemi_team_shared.my_pe = -1;
}
