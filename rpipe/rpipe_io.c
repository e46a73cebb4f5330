/*
 * rpipe data path: rmalloc, rwrite, rread, rfree (thesis Algorithms 12-13,
 * §4.3). Where the owner's region is mapped here (btl/shm), messages are
 * written and read in place and a flag is one release store; otherwise the
 * mirror region stages them and the btl moves payload and flag
 * (put-with-flag for PUT, get then flag-clear for GET).
 */
#include "rpipe/rpipe_inl.h"
#include "rpipe/rpipe_slot.h"
#include "rmalloc/rmalloc_ring_inl.h"
#include "btl/btl_cpu_amo.h"
#include "btl/btl_inl.h"
#include "btl/btl_wait.h"
#include "util/log.h"

#include <string.h>

/* Loads of a pending flag word between two full rread_nb polls. */
#define RPIPE_FLAG_SPIN 64
/* Frees a consumer holds back before sending them (see rfree). */
#define RPIPE_LAZY_FREES 16
/* Block mode: a wait for one message looks for it under another size every
 * this many empty polls, once this long has passed (rpipe_block_size_check). */
#define RPIPE_SIZE_CHECK_POLLS 64
#define RPIPE_SIZE_CHECK_NS    50000000ull
/* ... and as far as a message this large (a look at 4 MiB is half a
 * millisecond of loads per interval; larger sizes are not looked for) */
#define RPIPE_SIZE_CHECK_BYTES (4ull << 20)

/* Base of the memory where this side sees message bytes: the owner's own
 * region, the owner's region mapped here, or the local mirror. */
static inline char *rpipe_view(rch_t ch)
{
    return ch->peer_region != NULL ? ch->peer_region : ch->region;
}

static int rpipe_check_side(rch_t ch, int want_producer, const char *call)
{
    if (ch == NULL) {
        return R_ERR_INVALID;
    }
    if (ch->producer != want_producer) {
        util_error("%s: this end of the channel with rank %d is the %s", call, ch->cfg.peer,
                   ch->producer ? "producer (rmalloc/rwrite)" : "consumer (rread/rfree)");
        return R_ERR_STATE;
    }
    return R_SUCCESS;
}

/* A descriptor this channel could have issued: its granularity, inside
 * its memory, payload and flag within the units. A few compares, so a
 * forged or corrupted descriptor cannot make rwrite/rmem reach outside the
 * channel (liveness is rfree's check; the producer does not track it). */
static inline int rpipe_desc_fits(rch_t ch, const raddr_t *user_desc)
{
    const raddr_t *d = user_desc;

    return d->unit_shift < 64 && ((uint64_t)1 << d->unit_shift) == ch->unit && d->start < d->end &&
           d->end <= (ch->view_bytes >> d->unit_shift) &&
           d->payload <= ((d->end - d->start) << d->unit_shift) &&
           ((d->payload + RPIPE_UHDR_BYTES + 7) & ~(uint64_t)7) + 8 <=
               ((d->end - d->start) << d->unit_shift);
}

static __attribute__((unused, cold)) int rpipe_desc_foreign(rch_t ch, const char *call)
{
    util_error("%s: descriptor was not issued by the channel with rank %d (outside its memory "
               "or of another granularity)",
               call, ch->cfg.peer);
    return R_ERR_INVALID;
}

/* The flag of a message rread handed out and rfree has not cleared: set,
 * for a message of `payload` bytes. */
static inline int rpipe_flag_live(rch_t ch, const raddr_t *desc, uint64_t payload)
{
    uint64_t seen = __atomic_load_n((const uint64_t *)(rpipe_view(ch) + rpipe_flag_offset(desc)),
                                    __ATOMIC_RELAXED) ^
                    rpipe_flag_mask(ch, desc);

    return (seen & 0xffu) == RPIPE_FLAG_MARK && rpipe_flag_payload(ch, seen) == payload;
}

/* Block mode: units and alignment of a message of `payload` bytes (user
 * header included), cached for the next one of that size. Both ends place
 * the same sizes the same way. A message of a cache line or more starts on
 * a line of its own: else its first line is also the line of the previous
 * message's flag, which the consumer clears in rfree while the producer
 * writes the new message there (the line would cross cores twice more per
 * message). Units above 16 bytes keep their placement: the region is sized
 * for messages of whole units (rpipe_region_bytes), not for the padding. */
static inline void rpipe_block_size(rch_t ch, uint64_t payload)
{
    if (payload != ch->units_payload) {
        ch->units = rmalloc_vmem_units_for(rmalloc_sync_vmem(ch->sync), payload);
        ch->units_align =
            (payload >= RPIPE_CACHE_LINE && ch->unit <= 16) ? RPIPE_CACHE_LINE / ch->unit : 1;
        ch->units_payload = payload;
    }
}

/* The alignment rmalloc_sync_alloc and _accept take for that message, in
 * bytes (0: none; the other modes place messages unaligned). */
static inline uint64_t rpipe_block_align_bytes(rch_t ch, uint64_t payload)
{
    if (ch->block_ring == NULL) {
        return 0;
    }
    rpipe_block_size(ch, payload);
    return ch->units_align > 1 ? ch->units_align * ch->unit : 0;
}

/* ---- producer ----------------------------------------------------------------------------- */

int rmalloc_nb(rch_t ch, size_t size, raddr_t *desc_p)
{
    util_status_t status = rpipe_check_side(ch, 1, "rmalloc");
    raddr_t desc;

    if (status != UTIL_OK) {
        return status;
    }
    if (desc_p == NULL || size > ch->cfg.alloc_size) {
        if (desc_p != NULL) {
            util_error("rmalloc: %zu bytes do not fit a channel of %zu bytes", size,
                       ch->cfg.alloc_size);
        }
        return R_ERR_INVALID;
    }
    if (ch->cfg.op == RDMA_ATOMIC && size != 8) {
        util_error("rmalloc: a message of an RDMA_ATOMIC channel is one 8-byte operand, not %zu "
                   "bytes",
                   size);
        return R_ERR_INVALID;
    }
    status = rpipe_ready(ch);
    if (status != UTIL_OK) {
        return status;
    }
    if (ch->deferred_n > 0) {              /* the consumer may be waiting for these */
        status = rpipe_flush_deferred(ch); /* only a real failure: refusals stay deferred */
        if (status != UTIL_OK) {
            return status;
        }
    }
    if (size <= ch->slot_payload && ch->slots_on) {
        int placed = rpipe_slot_alloc(ch, size, desc_p);

        if (placed != R_ERR_NOT_FOUND) {
            return placed;
        }
    }
    if (ch->block_ring != NULL && rmalloc_sync_block_alloc_ready(ch->sync)) {
        /* Block: the ring, inline, with the units of the last size */
        uint64_t payload = size + RPIPE_UHDR_BYTES;

        rpipe_block_size(ch, payload);
        if (ch->units != 0 && rmalloc_ring_alloc_inl(ch->block_ring, ch->units, ch->units_align,
                                                     payload, &desc) == UTIL_OK) {
            rpipe_desc_store_user(desc_p, &desc);
            return R_SUCCESS;
        }
    } else {
        /* Tag and channel: while the producer's instance is a ring and no
         * sync step is due, place the message in the ring here, inline;
         * where it refuses (full), rmalloc_sync_alloc pulls frees. */
        uint64_t units;
        struct rmalloc_ring *ring =
            rmalloc_sync_alloc_ring(ch->sync, size + RPIPE_UHDR_BYTES, &units);

        if (ch->block_ring == NULL) { /* checked, so rmalloc may skip the checks */
            ch->units_payload = size + RPIPE_UHDR_BYTES;
        }
        if (ring != NULL &&
            rmalloc_ring_alloc_inl(ring, units, 1, size + RPIPE_UHDR_BYTES, &desc) == UTIL_OK) {
            rpipe_desc_store_user(desc_p, &desc);
            return R_SUCCESS;
        }
    }
    status = rmalloc_sync_alloc(ch->sync, size + RPIPE_UHDR_BYTES,
                                rpipe_block_align_bytes(ch, size + RPIPE_UHDR_BYTES), &desc);
    if (rpipe_sync_not_now(status)) {
        return R_PENDING;
    }
    if (status != UTIL_OK) {
        return status;
    }
    rpipe_desc_store_user(desc_p, &desc);
    return R_SUCCESS;
}

static __attribute__((noinline)) raddr_t rpipe_malloc(rch_t ch, size_t size)
{
    rpipe_wait_t wait;
    raddr_t desc;
    int status;

    /* A size placed before (so checked), the ring serving:
     * the placement inline, as rmalloc_nb would make it */
    if (ch != NULL && ch->producer && ch->connected &&
        size + RPIPE_UHDR_BYTES == ch->units_payload && ch->deferred_n == 0) {
        if (ch->block_ring != NULL) {
            if (ch->units != 0 && rmalloc_sync_block_alloc_ready(ch->sync) &&
                rmalloc_ring_alloc_inl(ch->block_ring, ch->units, ch->units_align,
                                       ch->units_payload, &desc) == UTIL_OK) {
                raddr_t user;

                rpipe_desc_store_user(&user, &desc);
                return user;
            }
        } else {
            uint64_t units;
            struct rmalloc_ring *ring =
                rmalloc_sync_alloc_ring(ch->sync, ch->units_payload, &units);

            if (ring != NULL &&
                rmalloc_ring_alloc_inl(ring, units, 1, ch->units_payload, &desc) == UTIL_OK) {
                raddr_t user;

                rpipe_desc_store_user(&user, &desc);
                return user;
            }
        }
    }
    status = rmalloc_nb(ch, size, &desc);
    if (status == R_PENDING) { /* a full channel: wait only now */
        rpipe_wait_init(&wait);
        do {
            rpipe_wait_step(&wait);
        } while ((status = rmalloc_nb(ch, size, &desc)) == R_PENDING);
    }
    return (status == R_SUCCESS) ? desc : RADDR_NULL;
}

/* Each call's common case (a slot) inline, the rest out of line, so that
 * the common case pays no frame of the general one. */
raddr_t rmalloc(rch_t ch, size_t size)
{
    raddr_t desc;

    if (rpipe_slot_fast(ch, size) && rpipe_slot_alloc(ch, size, &desc) == R_SUCCESS) {
        return desc;
    }
    return rpipe_malloc(ch, size);
}

void *rmem(rch_t ch, raddr_t desc)
{
    if (ch != NULL && (desc.flags & RPIPE_DESC_SLOT) && ch->slots_on && desc.id != 0) {
        return rpipe_slot_mem(ch, &desc);
    }
    if (ch == NULL || raddr_is_null(desc) || !ch->connected || !rpipe_desc_fits(ch, &desc)) {
        return NULL;
    }
    return rpipe_view(ch) + rpipe_offset(&desc) + RPIPE_UHDR_BYTES;
}

void *rmalloc_mem(rch_t ch, size_t size, raddr_t *desc_p)
{
    raddr_t desc;

    if (rpipe_slot_fast(ch, size) && desc_p != NULL) {
        uint64_t n = ch->slot_next; /* the slot rpipe_slot_alloc hands out */

        if (rpipe_slot_alloc(ch, size, desc_p) == R_SUCCESS) {
            return rpipe_slot_line(ch, n) + RPIPE_UHDR_BYTES;
        }
        desc = rpipe_malloc(ch, size); /* the slots were tried (rmalloc's fast path) */
    } else {
        desc = rmalloc(ch, size);
    }

    if (desc_p != NULL) {
        *desc_p = desc;
    }
    if (raddr_is_null(desc)) {
        return NULL;
    }
    /* issued by this channel just now: rmem's checks of a caller's
     * descriptor would find nothing */
    if (desc.flags & RPIPE_DESC_SLOT) {
        return rpipe_slot_mem(ch, &desc);
    }
    return rpipe_view(ch) + rpipe_offset(&desc) + RPIPE_UHDR_BYTES;
}

void *network_header(rch_t ch, raddr_t desc)
{
    if (ch == NULL || raddr_is_null(desc) || !ch->connected || !rpipe_desc_fits(ch, &desc)) {
        return NULL;
    }
    return rpipe_view(ch) + rpipe_offset(&desc);
}

uint16_t network_header_bytes(size_t payload)
{
    return RPIPE_UHDR_BYTES;
}

/* RDMA_ATOMIC: applies the configured operation with the message's operand
 * to the consumer's accumulator, before the message's flag can be seen,
 * and keeps the operand in the user header (rread puts the accumulator's
 * value in the payload). */
static util_status_t rpipe_apply_atomic(rch_t ch, const raddr_t *desc)
{
    static const btl_amo_op_t amo[] = {[RATOMIC_ADD] = BTL_AMO_ADD,
                                       [RATOMIC_XOR] = BTL_AMO_XOR,
                                       [RATOMIC_OR] = BTL_AMO_OR,
                                       [RATOMIC_AND] = BTL_AMO_AND,
                                       [RATOMIC_SET] = BTL_AMO_SET};
    char *msg = rpipe_view(ch) + rpipe_offset(desc);
    uint64_t operand;
    util_status_t status;

    memcpy(&operand, msg + RPIPE_UHDR_BYTES, 8);
    memcpy(msg, &operand, 8);
    if (ch->peer_cell != NULL) {
        btl_cpu_amo_post(amo[ch->cfg.atomic_type], 8, ch->peer_cell, operand);
        return UTIL_OK;
    }
    status = btl_amo_post(ch->ep, amo[ch->cfg.atomic_type], 8, ch->peer_cell_addr,
                          ch->peer_cell_rkey, operand);
    return status == UTIL_OK ? btl_fence(ch->ep) : status; /* the update lands before the flag */
}

static __attribute__((noinline)) int rpipe_write(rch_t ch, raddr_t user_desc)
{
    util_status_t status = rpipe_check_side(ch, 1, "rwrite");
    raddr_t desc = rpipe_desc_from_user(user_desc);
    uint64_t flag;
    int posted = 0; /* channel sync across a network: with the message */

    if (status != UTIL_OK) {
        return status;
    }
    if (raddr_is_null(user_desc) || !ch->connected) {
        return R_ERR_INVALID;
    }
    if (user_desc.flags & RPIPE_DESC_SLOT) {
        return rpipe_slot_write(ch, &user_desc); /* nothing to post: the reader polls it */
    }
    flag = rpipe_flag_value(ch, &desc, user_desc.payload, rpipe_msg_seq(ch, &desc));
#ifdef RMB_ARG_CHECKS
    if (__builtin_expect(!rpipe_desc_fits(ch, &user_desc), 0)) {
        return rpipe_desc_foreign(ch, "rwrite");
    }
#endif
    if (ch->cfg.op == RDMA_ATOMIC) {
        status = rpipe_apply_atomic(ch, &desc);
        if (status != UTIL_OK) {
            return status;
        }
    }
    if (!rpipe_msgs_pushed(ch)) {
        /* GET producer, or PUT into mapped memory: the message is in place. */
        __atomic_store_n((uint64_t *)(rpipe_view(ch) + rpipe_flag_offset(&desc)), flag,
                         __ATOMIC_RELEASE);
    } else { /* PUT, or GET pushed: to the peer's region or mirror */
        uint64_t off = rpipe_offset(&desc);
        uint32_t rec_len;

        if (ch->cfg.sync == CH_SYNC && ch->deferred_n == 0) {
            /* the post record rides in the message's send */
            status = rpipe_post_capture(ch, &desc);
            if (status != UTIL_OK && !rpipe_sync_not_now(status)) {
                ch->rec_len = 0;
                return status;
            }
            posted = status == UTIL_OK;
        }
        rec_len = ch->rec_len;
        ch->rec_len = 0;
        status = btl_put_flag_rec(ch->ep, ch->region + off, RPIPE_UHDR_BYTES + user_desc.payload,
                                  ch->region_mem, ch->peer_region_addr + off, ch->peer_region_rkey,
                                  ch->peer_region_addr + rpipe_flag_offset(&desc),
                                  ch->peer_region_rkey, flag, ch->rec, rec_len,
                                  ch->peer_sync_addr + ch->rec_off, ch->peer_sync_rkey);
        if (status == UTIL_OK && rec_len != 0) {
            status = btl_fence(ch->ep); /* as after every sync write */
        }
        if (status != UTIL_OK) {
            return status;
        }
    }
    ch->seq++;
    if (ch->block_ring != NULL) {
        /* block mode's post is this check alone (rmalloc_sync_post), here
         * inline; nothing to publish: the consumer places the same sizes */
        return rmalloc_ring_find(ch->block_ring, &desc) != NULL ? R_SUCCESS : R_ERR_INVALID;
    }
    return posted ? R_SUCCESS : rpipe_post_or_defer(ch, &desc);
}

/* A slot (a small message, the common case) inline, the rest out of line. */
static inline __attribute__((always_inline)) int rpipe_write_any(rch_t ch, raddr_t *d)
{
    if (ch != NULL && (d->flags & RPIPE_DESC_SLOT) && ch->producer && ch->slots_on && d->id != 0) {
        return rpipe_slot_write(ch, d);
    }
    return rpipe_write(ch, *d);
}

int rwrite_nb(rch_t ch, raddr_t user_desc)
{
    return rpipe_write_any(ch, &user_desc);
}

/* The data transfer completes locally before rwrite_nb returns and the
 * post never waits (it is deferred when the queue pushes back), so the
 * two forms are the same. */
int rwrite(rch_t ch, raddr_t desc)
{
    return rpipe_write_any(ch, &desc);
}

/* ---- consumer ----------------------------------------------------------------------------- */

/* Learns where the next message is (block mode: by placing the size the
 * reader expects; tag/channel modes: from the producer's posted descriptor). */
static util_status_t rpipe_next_desc(rch_t ch, size_t size, raddr_t *desc_p)
{
    if (ch->cfg.sync == NET_SYNC_BLKS) {
        uint64_t payload = size + RPIPE_UHDR_BYTES;

        if (ch->block_ring != NULL) { /* the ring, inline, as rmalloc_sync_accept would */
            rpipe_block_size(ch, payload);
            if (ch->units != 0 && rmalloc_ring_alloc_inl(ch->block_ring, ch->units, ch->units_align,
                                                         payload, desc_p) == UTIL_OK) {
                return UTIL_OK;
            }
        }
        return rmalloc_sync_accept(ch->sync, payload, rpipe_block_align_bytes(ch, payload), desc_p);
    }
    return rmalloc_sync_next(ch->sync, desc_p);
}

/* Tag/channel, next-fit, message memory load/store reachable: the flag of
 * the message next-fit most likely put next (after the last one, same
 * size), as *g would have it; NULL when there is no such guess. */
static const uint64_t *rpipe_guessed_flag(rch_t ch, raddr_t *g)
{
    uint64_t start, units, payload;

    if (ch->cfg.sync == NET_SYNC_BLKS || !rpipe_flag_has_seq(ch) || !rpipe_msgs_local(ch) ||
        rmalloc_sync_guess(ch->sync, &start, &units, &payload) != UTIL_OK) {
        return NULL;
    }
    *g = (raddr_t){
        .start = start, .end = start + units, .payload = payload, .unit_shift = ch->unit_shift};
    if (rpipe_flag_offset(g) + 8 > ch->region_bytes) {
        return NULL;
    }
    return (const uint64_t *)(rpipe_view(ch) + rpipe_flag_offset(g));
}

/* Takes that message if its flag is there with the next sequence number,
 * without waiting for its tag: one cache line moves instead of two in a row. */
static int rpipe_take_guessed(rch_t ch)
{
    raddr_t g;
    const uint64_t *flag = rpipe_guessed_flag(ch, &g);

    return flag != NULL &&
           btl_flag_load(flag) ==
               rpipe_flag_value(ch, &g, g.payload - RPIPE_UHDR_BYTES, rpipe_msg_seq(ch, &g)) &&
           rmalloc_sync_take_early(ch->sync, g.start, g.end - g.start, g.payload,
                                   &ch->pending_desc) == UTIL_OK;
}

/* Reads the message's flag; for GET through the network it is fetched. */
static util_status_t rpipe_load_flag(rch_t ch, const raddr_t *desc, uint64_t *flag_p)
{
    uint64_t off = rpipe_flag_offset(desc);

    if (rpipe_msgs_local(ch)) {
        *flag_p = btl_flag_load((const uint64_t *)(rpipe_view(ch) + off));
        return UTIL_OK;
    }
    return btl_get(ch->ep, flag_p, 8, NULL, ch->peer_region_addr + off, ch->peer_region_rkey);
}

/* rread_nb's last step: the pending message of `payload` bytes is the
 * caller's. */
static inline int rpipe_read_done(rch_t ch, const raddr_t *desc, uint64_t payload, raddr_t *desc_p,
                                  void **ptr_p)
{
    char *msg = rpipe_view(ch) + rpipe_offset(desc);

    if (ch->cfg.op == RDMA_ATOMIC) {
        /* the accumulator as of this update (later ones may be in too) */
        uint64_t value = __atomic_load_n(ch->cell, __ATOMIC_ACQUIRE);
        memcpy(msg + RPIPE_UHDR_BYTES, &value, 8);
    }
    ch->pending = 0;
    ch->pending_polls = 0;
    ch->pending_since_ns = 0;
    ch->seq++;
    rpipe_prefetch(msg + RPIPE_UHDR_BYTES, payload);
    rpipe_desc_pack(desc_p, desc->start, desc->end, desc->id, desc->wrap_from, payload, desc->block,
                    desc->unit_shift, desc->flags);
    *ptr_p = msg + RPIPE_UHDR_BYTES;
    return R_SUCCESS;
}

/* Tag mode, tags read through the network: the message just taken came by
 * its slot or its guessed flag, so the next one most likely will too; a tag
 * read waits a while (rpipe.h, tag_read_after_ns). Without a measured read
 * yet, or once a message comes by its tag, reads go out at once. */
static inline void rpipe_tag_found_elsewhere(rch_t ch)
{
    if (ch->tags_remote && ch->tag_read_rt_ns != 0) {
        uint64_t patience = 2 * ch->tag_read_rt_ns;

        ch->tag_read_after_ns = btl_now_ns() + (patience < 100000 ? patience : 100000);
    }
}

/* Block mode, message memory loadable here: the payload size (user bytes)
 * of message seq placed at unit start, found by its flag wherever a size
 * would put it; -1 if none. */
static int64_t rpipe_block_find_flag(rch_t ch, uint64_t start, uint64_t seq)
{
    raddr_t at = {.start = start};
    const char *msg = rpipe_view(ch) + (start << ch->unit_shift);
    uint64_t mask = rpipe_flag_mask(ch, &at), room, limit;

    if ((start << ch->unit_shift) >= ch->region_bytes) {
        return -1;
    }
    room = ch->region_bytes - (start << ch->unit_shift);
    limit =
        ch->cfg.alloc_size < RPIPE_SIZE_CHECK_BYTES ? ch->cfg.alloc_size : RPIPE_SIZE_CHECK_BYTES;
    limit += RPIPE_UHDR_BYTES + 16;
    limit = limit < room ? limit : room;
    for (uint64_t off = 8; off + 8 <= limit; off += 8) {
        uint64_t flag = __atomic_load_n((const uint64_t *)(msg + off), __ATOMIC_RELAXED) ^ mask;
        uint64_t payload = rpipe_flag_payload(ch, flag);

        if (rpipe_flag_expected(ch, flag, seq) &&
            ((payload + RPIPE_UHDR_BYTES + 7) & ~(uint64_t)7) == off) {
            return (int64_t)payload;
        }
    }
    return -1;
}

/* Block mode: the reader places each message by the size it asks for, so
 * a producer that allocated another size wrote the flag elsewhere (or, past
 * a wrap, at another start) and the reader would wait for ever. A wait that
 * has lasted RPIPE_SIZE_CHECK_NS looks for the message's flag at every
 * place a size could have put it, at its start and at the start the other
 * size would have wrapped to: found means the ends disagree, an error.
 * Where message memory is not loads here (GET, not pushed) nothing is
 * scanned: each word would be a read through the network. */
static __attribute__((noinline, cold)) int rpipe_block_size_check(rch_t ch, const raddr_t *desc)
{
    uint64_t now = btl_now_ns(), want = desc->payload - RPIPE_UHDR_BYTES;
    uint64_t start[4], seq[4];
    unsigned n = 0;

    if (ch->cfg.sync != NET_SYNC_BLKS || !rpipe_msgs_local(ch) || !rpipe_flag_has_seq(ch)) {
        return R_PENDING;
    }
    if (ch->pending_since_ns == 0 || now - ch->pending_since_ns < RPIPE_SIZE_CHECK_NS) {
        if (ch->pending_since_ns == 0) {
            ch->pending_since_ns = now;
        }
        return R_PENDING;
    }
    ch->pending_since_ns = now; /* the next look one interval later */
    start[n] = desc->start, seq[n++] = desc->block;
    if (desc->flags & RMALLOC_DESC_WRAPPED) {
        /* a smaller one fit before the wrap, there or on the next line
         * (rpipe_block_size: a message of a line or more starts on one) */
        uint64_t line = ch->unit <= 16 ? RPIPE_CACHE_LINE / ch->unit : 1;

        start[n] = desc->wrap_from, seq[n++] = desc->block - 1;
        if (desc->wrap_from % line != 0) {
            start[n] = (desc->wrap_from / line + 1) * line, seq[n++] = desc->block - 1;
        }
    } else if (desc->start != 0 && desc->end < (ch->region_bytes >> ch->unit_shift)) {
        /* a larger one wrapped (a dummy took a number). Not where this one
         * ends the region: the next message then starts there, numbered so,
         * and may have been written first. */
        start[n] = 0, seq[n++] = desc->block + 1;
    }
    for (unsigned i = 0; i < n; i++) {
        int64_t found = rpipe_block_find_flag(ch, start[i], seq[i]);

        if (found >= 0 && (uint64_t)found != want) {
            util_error("rread: the producer (rank %d) wrote a message of %lld bytes where this "
                       "reader asked for %llu (block sync: both ends use the same sizes, in order)",
                       ch->cfg.peer, (long long)found, (unsigned long long)want);
            return R_ERR_STATE;
        }
    }
    return R_PENDING;
}

/* rread_nb's last steps, for its pending message: its flag, and the
 * message once the flag is the expected one. */
static inline int rpipe_read_pending(rch_t ch, raddr_t *desc_p, void **ptr_p, size_t size)
{
    /* in place: a copy of the descriptor just stored would stall (rpipe_desc_pack) */
    const raddr_t *desc = &ch->pending_desc;
    uint64_t flag, payload;
    util_status_t status = rpipe_load_flag(ch, desc, &flag);

    if (status != UTIL_OK) {
        return status;
    }
    flag ^= rpipe_flag_mask(ch, desc);
    payload = rpipe_flag_payload(ch, flag);
    if (!rpipe_flag_expected(ch, flag, rpipe_msg_seq(ch, desc)) || payload > ch->cfg.alloc_size) {
        /* not written yet (0, or old bytes of freed messages), or written
         * elsewhere: a producer that used another size (block mode) */
        if (__builtin_expect(++ch->pending_polls % RPIPE_SIZE_CHECK_POLLS == 0, 0)) {
            return rpipe_block_size_check(ch, desc);
        }
        return R_PENDING;
    }
    if (payload + RPIPE_UHDR_BYTES > desc->payload) {
        util_error("rread: message of %llu bytes in a slot of %llu (peers disagree on sizes)",
                   (unsigned long long)payload,
                   (unsigned long long)(desc->payload - RPIPE_UHDR_BYTES));
        return R_ERR_STATE;
    }
    if (payload > size) {
        return R_ERR_TRUNCATED; /* stays pending: a larger read can take it */
    }
    if (!rpipe_msgs_local(ch)) {
        /* GET through the network: fetch header and payload into the mirror. */
        uint64_t off = rpipe_offset(desc);
        status = btl_get(ch->ep, ch->region + off, RPIPE_UHDR_BYTES + payload, ch->region_mem,
                         ch->peer_region_addr + off, ch->peer_region_rkey);
        if (status != UTIL_OK) {
            return status;
        }
        /* The mirror's flag slot marks the message live until rfree. */
        *(uint64_t *)(ch->region + rpipe_flag_offset(desc)) = flag ^ rpipe_flag_mask(ch, desc);
    }
    return rpipe_read_done(ch, desc, payload, desc_p, ptr_p);
}

int rread_nb(rch_t ch, raddr_t *desc_p, void **ptr_p, size_t size)
{
    util_status_t status = rpipe_check_side(ch, 0, "rread");
    uint64_t payload;

    if (status != UTIL_OK) {
        return status;
    }
    if (desc_p == NULL || ptr_p == NULL || size > ch->cfg.alloc_size) {
        return R_ERR_INVALID;
    }
    status = rpipe_ready(ch);
    if (status != UTIL_OK) {
        return status;
    }
    if (ch->deferred_n > 0) {              /* the producer may be waiting for these frees */
        status = rpipe_flush_deferred(ch); /* only a real failure: refusals stay deferred */
        if (status != UTIL_OK) {
            return status;
        }
    }
    if (ch->slots_on && (rpipe_slot_block(ch) ? !ch->pending && size <= ch->slot_payload : 1)) {
        /* block: small sizes are the slots' alone; tag/channel: the next
         * slot or the next region message, whichever has the sequence */
        int taken = rpipe_slot_take(ch, size, desc_p, ptr_p);

        if (taken != R_PENDING || rpipe_slot_block(ch)) {
            if (taken == R_SUCCESS) {
                rpipe_tag_found_elsewhere(ch);
            }
            return taken;
        }
    }
    if (!ch->pending && rpipe_take_guessed(ch)) {
        /* its flag was just read as expected: place, size and sequence */
        rpipe_tag_found_elsewhere(ch);
        ch->pending = 1;
        payload = ch->pending_desc.payload - RPIPE_UHDR_BYTES;
        if (payload > size) {
            return R_ERR_TRUNCATED; /* stays pending: a larger read can take it */
        }
        return rpipe_read_done(ch, &ch->pending_desc, payload, desc_p, ptr_p);
    }
    if (!ch->pending) {
        status = rpipe_next_desc(ch, size, &ch->pending_desc);
        if (rpipe_sync_not_now(status)) {
            rmalloc_sync_progress(ch->sync);
            return R_PENDING;
        }
        if (status != UTIL_OK) {
            return status;
        }
        ch->pending = 1;
        ch->tag_read_after_ns = 0; /* found by its tag: read the next ones at once */
    }
    return rpipe_read_pending(ch, desc_p, ptr_p, size);
}

/* Waits for the pending message's flag word (or, before its place is
 * known, the sync word that announces it) to change, where it is in memory
 * this side can load: one load per poll instead of a full rread_nb,
 * so the flag is seen about as soon as it lands. Tag/channel modes also
 * watch where rread_nb may take the next message at once (the guessed
 * place, rpipe_take_guessed; the next slot), block mode the next slot alone
 * for a small size. Each round of loads counts as one poll of the general
 * wait, which runs between rounds (a word may hold stale bytes that never
 * change) and alone once deferred posts or frees need it or the wait has
 * begun to yield the core. */
static void rpipe_wait_flag(rch_t ch, size_t size, rpipe_wait_t *wait)
{
    const uint64_t *word[3];
    uint64_t seen[3];
    unsigned nw = 0;
    raddr_t g;

    if (rpipe_state.deferred == 0 && wait->polls < rpipe_state.spin) {
        int block = rpipe_slot_block(ch);

        if (ch->slots_on && (!block || (!ch->pending && size <= ch->slot_payload))) {
            word[nw++] = rpipe_slot_next_flag(ch);
        }
        if (block && nw > 0) {
            /* the slot alone */
        } else if (!ch->pending) { /* tag/channel: the next descriptor is not known yet */
            const uint64_t *poll = rmalloc_sync_poll_word(ch->sync);

            if (poll != NULL) {
                const uint64_t *guess = rpipe_guessed_flag(ch, &g);

                word[nw++] = poll;
                if (guess != NULL) {
                    word[nw++] = guess;
                }
            }
        } else if (rpipe_msgs_local(ch)) {
            word[nw++] = (const uint64_t *)(rpipe_view(ch) + rpipe_flag_offset(&ch->pending_desc));
        }
    }
    if (nw > 0) { /* not once the wait yields the core */
        /* Watching a slot and the region (tag/channel): the full rread_nb
         * between rounds takes long enough to hide a slot's flag for a
         * while, so longer rounds, each counted as that many polls. */
        unsigned rounds = (nw > 1 && ch->slots_on) ? 8 : 1;

        for (unsigned i = 0; i < nw; i++) {
            seen[i] = __atomic_load_n(word[i], __ATOMIC_RELAXED);
        }
        wait->polls += rounds - 1;
        /* No pause here: it would delay seeing the flag by its own length
         * (tens of ns on recent x86); rpipe_wait_step pauses between rounds. */
        for (unsigned n = 0; n < rounds * RPIPE_FLAG_SPIN; n++) {
            for (unsigned i = 0; i < nw; i++) {
                if (__atomic_load_n(word[i], __ATOMIC_RELAXED) != seen[i]) {
                    return;
                }
            }
        }
    }
    rpipe_wait_step(wait);
}

/* rread of a block-mode slot: the next slot's flag is the one word to
 * watch, so a wait is the floor's loop on it, with the general wait step
 * between rounds. */
static __attribute__((noinline)) int rpipe_slot_read(rch_t ch, raddr_t *desc_p, void **ptr_p,
                                                     size_t size)
{
    const uint64_t *flag = rpipe_slot_next_flag(ch);
    uint64_t want = rpipe_slot_flag(ch->slot_next, 0); /* block: the slot's number */
    rpipe_wait_t wait;
    int status, seen = 0;

    rpipe_wait_init(&wait);
    while ((status = rpipe_slot_take(ch, size, desc_p, ptr_p)) == R_PENDING) {
        /* seen and still not taken (a flag with a size no slot holds):
         * the general step, as for any word that never turns */
        if (!seen && rpipe_state.deferred == 0 && wait.polls < rpipe_state.spin) {
            unsigned n;

            for (n = 0; n < RPIPE_FLAG_SPIN; n++) {
                if ((__atomic_load_n(flag, __ATOMIC_RELAXED) & RPIPE_SLOT_CHECK) == want) {
                    break;
                }
            }
            if (n < RPIPE_FLAG_SPIN) {
                seen = 1;
                continue; /* take it now */
            }
        }
        seen = 0;
        rpipe_wait_step(&wait);
    }
    return status;
}

int rread(rch_t ch, raddr_t *desc_p, void **ptr_p, size_t size)
{
    rpipe_wait_t wait;
    int status;

    if (ch != NULL && !ch->producer && ch->slots_on && rpipe_slot_block(ch) && !ch->pending &&
        size <= ch->slot_payload && ch->deferred_n == 0 && desc_p != NULL && ptr_p != NULL) {
        status = rpipe_slot_take(ch, size, desc_p, ptr_p);
        return status != R_PENDING ? status : rpipe_slot_read(ch, desc_p, ptr_p, size);
    }
    rpipe_wait_init(&wait);
    status = rread_nb(ch, desc_p, ptr_p, size);
    while (status == R_PENDING) {
        rpipe_wait_flag(ch, size, &wait);
        /* Block mode, the message's place known and its flag in this
         * side's memory: the flag that just changed is all rread_nb would
         * look at again (its other steps are done), so that is the step
         * from the flag to the caller, which a reply waits for. */
        if (ch->pending && ch->block_ring != NULL && ch->deferred_n == 0 && rpipe_msgs_local(ch)) {
            status = rpipe_read_pending(ch, desc_p, ptr_p, size);
        } else {
            status = rread_nb(ch, desc_p, ptr_p, size);
        }
    }
    return status;
}

static __attribute__((noinline)) int rpipe_free(rch_t ch, raddr_t user_desc);

int rfree(rch_t ch, raddr_t user_desc)
{
    if (ch != NULL && (user_desc.flags & RPIPE_DESC_SLOT) && !ch->producer && ch->slots_on &&
        user_desc.id != 0) {
        return rpipe_slot_free(ch, &user_desc);
    }
    return rpipe_free(ch, user_desc);
}

static int rpipe_free(rch_t ch, raddr_t user_desc)
{
    util_status_t status = rpipe_check_side(ch, 0, "rfree");
    raddr_t desc;
    uint64_t zero = 0;

    if (status != UTIL_OK) {
        return status;
    }
    if (raddr_is_null(user_desc) || !ch->connected) {
        return R_ERR_INVALID;
    }
    if (user_desc.flags & RPIPE_DESC_SLOT) {
        return rpipe_slot_free(ch, &user_desc); /* slots off: refused there */
    }
    desc = rpipe_desc_from_user(user_desc);
    /* Validate before touching memory: a stale descriptor's slot may hold
     * a newer message by now. A message is live from rread to rfree, and
     * its flag (or, for GET through the network, the mirror's copy of it)
     * holds the value rread accepted until rfree clears it; this also
     * catches a second rfree of a message whose first one is deferred,
     * without scanning the deferred list (which can be long). */
    {
        uint64_t peer_id;
        uint32_t peer_block;

        /* the descriptor first: only then may its flag be read (block
         * mode: the ring's lookup, inline) */
        if ((ch->block_ring != NULL ? rmalloc_ring_find(ch->block_ring, &desc) == NULL
                                    : rmalloc_vmem_peer(rmalloc_sync_vmem(ch->sync), &desc,
                                                        &peer_id, &peer_block) != UTIL_OK) ||
            !rpipe_flag_live(ch, &desc, user_desc.payload)) {
            util_error("rfree: descriptor is not a live message of the channel with rank %d "
                       "(freed twice, or from another channel)",
                       ch->cfg.peer);
            return R_ERR_INVALID;
        }
    }
    /* Clear the flag before the memory can be handed out again. The
     * producer's copy, across a network (GET), only where flags carry no
     * write sequence: one that does cannot pass for the flag of a later
     * message at that place (its sequence differs), so the clear would only
     * cost a put and a round trip per message. */
    __atomic_store_n((uint64_t *)(rpipe_view(ch) + rpipe_flag_offset(&desc)), zero,
                     __ATOMIC_RELAXED);
    if (!rpipe_msgs_local(ch) && !rpipe_flag_has_seq(ch)) {
        status = btl_put(ch->ep, &zero, 8, NULL, ch->peer_region_addr + rpipe_flag_offset(&desc),
                         ch->peer_region_rkey);
        /* The clear must have landed before the free is published: block and
         * tag frees are published in my own sync buffer, which the producer
         * reads with its own gets, so an ordering fence is not enough (the
         * slot could be reused and its new flag zeroed by this put). */
        if (status == UTIL_OK) {
            status = btl_quiet(ch->ep->iface);
        }
        if (status != UTIL_OK) {
            return status;
        }
    }
    /* Every sync mode: the free is bookkeeping on both ends (block: the
     * ring and the released count; tag: the live list, the count or a tag;
     * channel: the claim and a free record), none of which the producer
     * needs at once; done before this side next reads or waits, it is off
     * the path from this message to whatever the caller sends next. A few
     * are sent together. */
    if (ch->deferred_n < RPIPE_LAZY_FREES) {
        return rpipe_defer(ch, &desc);
    }
    return rpipe_post_or_defer(ch, &desc);
}

int rread_mem(rch_t ch, void *buf, size_t size, size_t *len_p)
{
    raddr_t desc;
    void *ptr;
    int status = rread(ch, &desc, &ptr, size);

    if (status != R_SUCCESS) {
        return status;
    }
    memcpy(buf, ptr, desc.payload);
    if (len_p != NULL) {
        *len_p = desc.payload;
    }
    return rfree(ch, desc);
}
