/*
 * Claims-mode allocator instance (RMALLOC_VMEM_CLAIMS): the consumer's end
 * of the tag and channel protocols.
 *
 * That end never chooses a place: every allocation arrives from the
 * producer as a claim (start, units) and leaves by rmalloc_vmem_free, in
 * any order. So it needs no free list, size classes or address tree, only
 * (1) the live claims, each named by its record index for O(1) lookup of a
 * descriptor, and (2) one bit per unit, so that a claim overlapping live
 * memory (peers out of step) is still refused. Claim and free cost
 * O(units / 64); the general instance paid two tree updates per message.
 *
 * rmalloc_vmem_* calls on a CLAIMS instance dispatch here; the contracts
 * are those of rmalloc_vmem.h. rmalloc_vmem_alloc and _realloc are not
 * supported (ERR_UNSUPPORTED).
 */
#ifndef RMALLOC_CLAIMS_H
#define RMALLOC_CLAIMS_H

#include "rmalloc/rmalloc_vmem.h"

/* Regions above this many units use the general instance instead: the
 * bitmap would be too large (16 MiB here). */
#define RMALLOC_CLAIMS_MAX_UNITS (UINT64_C(1) << 27)

typedef struct rmalloc_claims rmalloc_claims_t;

util_status_t rmalloc_claims_create(uint64_t total_units, unsigned unit_shift, uint64_t stamp,
                                    rmalloc_claims_t **claims_p);
void rmalloc_claims_destroy(rmalloc_claims_t *claims);

util_status_t rmalloc_claims_claim(rmalloc_claims_t *claims, uint64_t start, uint64_t units,
                                   uint64_t payload, uint64_t peer_id, uint32_t peer_block,
                                   raddr_t *desc_p);
util_status_t rmalloc_claims_free(rmalloc_claims_t *claims, const raddr_t *desc);
util_status_t rmalloc_claims_peer(const rmalloc_claims_t *claims, const raddr_t *desc,
                                  uint64_t *peer_id_p, uint32_t *peer_block_p);

util_status_t rmalloc_claims_set_peer(rmalloc_claims_t *claims, const raddr_t *desc,
                                      uint64_t peer_id, uint32_t peer_block);

uint64_t rmalloc_claims_used_units(const rmalloc_claims_t *claims);
uint64_t rmalloc_claims_live_count(const rmalloc_claims_t *claims);
void rmalloc_claims_walk(const rmalloc_claims_t *claims,
                         void (*fn)(const rmalloc_block_info_t *block, void *arg), void *arg);
util_status_t rmalloc_claims_check(const rmalloc_claims_t *claims);

#endif
