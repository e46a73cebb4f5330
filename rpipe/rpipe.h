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
 * messages are staged (PUT), or fetched into or pushed into (GET).
 *
 * Message layout inside an allocation (offsets from the allocation start):
 *   [0, 8)                 user header (network_header)
 *   [8, 8 + payload)       payload (rmem, rread's pointer)
 *   [flag_offset, +8)      notified flag, flag_offset = 8 + round8(payload)
 * rmalloc sees "payload + 8" as its payload and reserves 8 header bytes for
 * the flag, so rmalloc_desc_flag_offset() is exactly flag_offset. The user
 * sees desc.payload without the 8 header bytes (rpipe_desc_store_user()).
 *
 * Small-message slots. Messages of up to slot_payload bytes (the config's;
 * by default RPIPE_SLOT_PAYLOAD, one line a slot) go to a ring of slots
 * after the region, outside the allocator: user header, payload, and the
 * flag in the slot's last 8 bytes, so a reader polls a slot without
 * knowing the size. The consumer frees slots by publishing how many it
 * freed in order (the slot header line before the first slot); the
 * producer reads that count only when the ring looks full. Block mode: both ends pick the slots by size (their sizes agree),
 * and the flag's sequence is the slot's number. Tag and channel modes: a
 * slot is taken only while no other slot is allocated and unwritten, so
 * slots are written in ring order; the flag carries the write sequence
 * shared with region messages, and the reader takes whichever of the next
 * slot and the next region message carries the sequence it expects.
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

#define RPIPE_CACHE_LINE   64u /* the prefetch stride, the slot header and the smallest slot */
#define RPIPE_SLOT_PAYLOAD (RPIPE_CACHE_LINE - 8u - RPIPE_UHDR_BYTES) /* the default slot's */
#define RPIPE_SLOTS_MAX    64u /* the consumer's free mask is one word */
/* raddr_t.flags of a slot message (rmalloc's own flags are the low bits) */
#define RPIPE_DESC_SLOT (1u << 15)

/* What a side publishes for its peer (bootstrap key per channel side). */
typedef struct rpipe_meta {
    uint32_t magic;
    uint32_t op, algorithm, sync;
    uint64_t unit, alloc_size, region_bytes, sync_bytes;
    uint64_t region_addr, sync_addr; /* region: the owner's, or a GET consumer's mirror */
    uint32_t region_key_len, sync_key_len;
    uint8_t region_key[BTL_RKEY_PACKED_MAX];
    uint8_t sync_key[BTL_RKEY_PACKED_MAX];
    uint64_t atomic_type, cell_addr; /* RDMA_ATOMIC: the consumer's accumulator */
    uint32_t cell_key_len, slots, slot_bytes;
    uint8_t cell_key[BTL_RKEY_PACKED_MAX];
} rpipe_meta_t;

struct rpipe_channel {
    rmalloc_config_t cfg;
    int producer; /* this side writes messages */
    int owner;    /* messages live in this side's memory */
    int connected;
    uint64_t region_bytes; /* same on both sides: the allocator's part */
    uint64_t view_bytes;   /* the region, then the slot header line and the slots */
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
     * (rmalloc_vmem_units_for) and the units it is aligned to
     * (rpipe_block_size), kept for the next message of that size;
     * tag and channel producers: units_payload is the last size rmalloc_nb
     * checked */
    uint64_t units_payload, units, units_align;

    /* the peer, once connected */
    btl_ep_t *ep;
    btl_rkey_t *peer_region_rkey;
    btl_rkey_t *peer_sync_rkey;
    uint64_t peer_region_addr;
    uint64_t peer_sync_addr;
    char *peer_region; /* owner's region mapped here (load/store), else NULL */
    /* GET across a network (the consumer's RMB_RPIPE_GET_PUSH): the
     * consumer published its mirror at rpipe() (meta.region_*, which a GET
     * producer's peer_region_* then name), and the producer's rwrite puts
     * each message there, flag last, as PUT does: rread polls local memory
     * instead of reading the flag, then the message, through the network. */
    uint8_t pushed_get;
    /* The sync transport's read in flight (rpipe_sync_read): over a network
     * a reader watches its slot meanwhile instead of waiting a round trip. */
    btl_comp_t sync_comp;
    /* Tag mode, tags read through the network: while messages keep coming
     * by their slot or their guessed flag, the next tag read waits until
     * tag_read_after_ns (twice the quickest read seen, tag_read_rt_ns), so
     * that reads nobody needs do not cost both PEs a send and a receive per
     * message (rpipe_tag_found_elsewhere). */
    uint8_t tags_remote;
    uint64_t tag_read_after_ns, tag_read_rt_ns, sync_read_ns;
    /* Channel sync across a network: rwrite's post record, kept by the
     * sync transport's write (rec_capture) to travel in the message's own
     * send (btl_put_flag_rec) instead of a second one. */
    uint8_t rec_capture;
    uint32_t rec_len;
    uint64_t rec_off;
    uint8_t rec[BTL_PUT_REC_MAX];

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

    /* consumer: the message rread_nb is waiting for; block mode: polls of
     * it that found nothing, and when they began (rpipe_block_size_check) */
    int pending;
    raddr_t pending_desc;
    uint32_t pending_polls;
    uint64_t pending_since_ns;
    /* messages written (producer) / taken (consumer): the flag's sequence in
     * tag and channel modes (rpipe_msg_seq) */
    uint64_t seq;

    /* Small-message slots (nslots a power of two, 0: none; slots_on once
     * connected and usable). slot_next: slots allocated (producer) or taken
     * (consumer); slot_freed: the consumer's in-order free count (producer:
     * as last read); slot_free_mask: consumer, bit k = slot slot_freed + k
     * freed out of order; slot_unwritten: tag/channel producer, a slot is
     * allocated and not written yet. */
    uint32_t nslots;
    uint32_t slot_bytes;   /* a slot: whole lines, the flag in its last 8 bytes */
    uint32_t slot_payload; /* the largest payload a slot holds: slot_bytes - 16 */
    int slots_on;
    uint64_t slot_header; /* byte offset of the slot header line in the view */
    char *slot_mem;       /* that line where this side sees it (set at connect) */
    uint64_t slot_start0; /* unit of the first slot */
    uint16_t unit_shift;
    uint32_t slot_skip; /* producer across the network: rmallocs left before the
                           * next look at a full ring's free count */
    uint64_t slot_next, slot_freed, slot_free_mask;
    int slot_unwritten;

    /* rpipe's barrier (cold: after what every message touches): the
     * barrier (epoch) in which this end has deferred items to tell its
     * peer about, how far the telling went, and the last epoch in which it
     * answered the peer's telling (rpipe.c, "barrier"). */
    uint64_t held_epoch, answered_epoch;
    uint8_t held_state;

    char key_mine[BOOTSTRAP_KEY_MAX];
    char key_peer[BOOTSTRAP_KEY_MAX];
    struct rpipe_channel *next; /* all channels, for rexit */
};

#endif
