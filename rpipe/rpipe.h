/*
 * rpipe internals: the channel object shared by rpipe.c (setup, lazy
 * connection, the rmalloc sync transport over the btl) and rpipe_io.c
 * (rmalloc/rwrite/rread/rfree).
 *
 * Roles. The producer writes messages, the consumer reads them. The owner
 * is the side whose memory holds the messages and whose rmalloc instance
 * is the real one: the consumer for RDMA_PUT, the producer for RDMA_GET.
 * The other side keeps a shadow instance and, when the owner's memory is
 * not load/store reachable, a local mirror region of the same size where
 * messages are staged (PUT) or fetched into (GET).
 *
 * Message layout inside an allocation (offsets from the allocation start):
 *   [0, 8)                 user header (network_header)
 *   [8, 8 + payload)       payload (rmem, rread's pointer)
 *   [flag_offset, +8)      notified flag, flag_offset = 8 + round8(payload)
 * rmalloc sees "payload + 8" as its payload and reserves 8 header bytes for
 * the flag, so rmalloc_desc_flag_offset() is exactly flag_offset. The user
 * sees desc.payload without the 8 header bytes (rpipe_desc_to_user()).
 */
#ifndef RPIPE_H
#define RPIPE_H

#include "bootstrap/bootstrap.h"
#include "btl/btl.h"
#include "rmalloc/rmalloc_sync.h"
#include "rpipe/rmalloc.h"

#include <stdint.h>

#define RPIPE_UHDR_BYTES 8u
#define RPIPE_FLAG_MARK  0xA5u /* low byte of a set flag; then payload size and sequence */

/* What a side publishes for its peer (bootstrap key per channel side). */
typedef struct rpipe_meta {
    uint32_t magic;
    uint32_t op, algorithm, sync;
    uint64_t unit, alloc_size, region_bytes, sync_bytes;
    uint64_t region_addr, sync_addr;
    uint32_t region_key_len, sync_key_len;
    uint8_t region_key[BTL_RKEY_PACKED_MAX];
    uint8_t sync_key[BTL_RKEY_PACKED_MAX];
    uint64_t atomic_type, cell_addr; /* RDMA_ATOMIC: the consumer's accumulator */
    uint32_t cell_key_len, pad_;
    uint8_t cell_key[BTL_RKEY_PACKED_MAX];
} rpipe_meta_t;

struct rpipe_channel {
    rmalloc_config_t cfg;
    int producer; /* this side writes messages */
    int owner;    /* messages live in this side's memory */
    int connected;
    uint64_t region_bytes; /* same on both sides */
    uint64_t unit;         /* allocator granularity (>= 8) */
    uint64_t flag_salt;    /* same on both ends (rpipe_flag_mask) */

    btl_mem_t *region_mem; /* owner: the message region; else the mirror (may be NULL) */
    char *region;          /* its local address */
    btl_mem_t *sync_mem;   /* this side's sync buffer */
    rmalloc_sync_config_t sync_cfg;
    rmalloc_sync_ep_t *sync;
    /* block mode: the instance's ring (rmalloc_sync_block_ring), for the
     * inline steps of rwrite, rread and rfree; NULL in the other modes */
    struct rmalloc_ring *block_ring;
    /* block mode: units of an allocation of units_payload bytes
     * (rmalloc_vmem_units_for), kept for the next message of that size;
     * tag and channel producers: units_payload is the last size rmalloc_nb
     * checked */
    uint64_t units_payload, units;

    /* the peer, once connected */
    btl_ep_t *ep;
    btl_rkey_t *peer_region_rkey;
    btl_rkey_t *peer_sync_rkey;
    uint64_t peer_region_addr;
    uint64_t peer_sync_addr;
    char *peer_region; /* owner's region mapped here (load/store), else NULL */

    /* Descriptors whose post (producer) or free (consumer) the sync queue
     * pushed back; flushed in order by every rpipe wait, so rwrite and
     * rfree never wait for the peer. */
    raddr_t *deferred;
    uint32_t deferred_n, deferred_cap;

    /* RDMA_ATOMIC: the accumulator every rwrite updates, in the consumer's
     * memory (cell_mem there; peer_cell mapped or peer_cell_rkey here) */
    btl_mem_t *cell_mem;
    uint64_t *cell;
    uint64_t *peer_cell;
    btl_rkey_t *peer_cell_rkey;
    uint64_t peer_cell_addr;

    /* consumer: the message rread_nb is waiting for */
    int pending;
    raddr_t pending_desc;
    /* messages written (producer) / taken (consumer): the flag's sequence in
     * tag and channel modes (rpipe_msg_seq) */
    uint64_t seq;

    char key_mine[BOOTSTRAP_KEY_MAX];
    char key_peer[BOOTSTRAP_KEY_MAX];
    struct rpipe_channel *next; /* all channels, for rexit */
};

#endif
