/*
 * Small-message slots (rpipe.h): the inline steps of rmalloc, rwrite,
 * rread and rfree for messages of up to the channel's slot_payload bytes.
 * A slot is whole lines (one by default): user header, payload, and the
 * flag in the last 8 bytes.
 *
 * The flag is mark, payload size and a 40-bit sequence, with no hash of the
 * place (rpipe_flag_value): no payload byte reaches the flag's word, so it
 * holds 0 or a flag written there, and the sequence tells the message
 * expected from an older one (docs/rpipe.md: why 40 bits suffice). So rfree does not clear it: the
 * consumer never writes a slot's line, which otherwise would move to the
 * consumer and back once more per message, and on x86 its store would
 * have to land before the consumer's next message (stores become visible
 * in order), on the path of a ping-pong's reply.
 */
#ifndef RPIPE_SLOT_H
#define RPIPE_SLOT_H

#include "rpipe/rpipe_inl.h"
#include "btl/btl_inl.h"
#include "util/log.h"

#define RPIPE_SLOT_SEQ_BITS (~UINT64_C(0xffffff))
#define RPIPE_SLOT_CHECK    (RPIPE_SLOT_SEQ_BITS | 0xffu) /* sequence and mark */

static inline int rpipe_slot_block(const struct rpipe_channel *ch)
{
    return ch->cfg.sync == NET_SYNC_BLKS;
}

static inline uint64_t rpipe_slot_flag(uint64_t seq, uint64_t user_payload)
{
    return (seq << 24) | (user_payload << 8) | RPIPE_FLAG_MARK;
}

/* Slot number n (after the header line), its flag, and the unit where it
 * starts. */
static inline char *rpipe_slot_line(const struct rpipe_channel *ch, uint64_t n)
{
    return ch->slot_mem + RPIPE_CACHE_LINE + (uint64_t)ch->slot_bytes * (n & (ch->nslots - 1));
}

static inline uint64_t *rpipe_slot_flag_at(const struct rpipe_channel *ch, char *line)
{
    return (uint64_t *)(line + ch->slot_bytes - 8);
}

static inline uint64_t rpipe_slot_start(const struct rpipe_channel *ch, uint64_t n)
{
    return ch->slot_start0 + ((n & (ch->nslots - 1)) * (ch->slot_bytes >> ch->unit_shift));
}

/* Writes the user's descriptor of slot n holding user_payload bytes. */
static inline void rpipe_slot_desc(const struct rpipe_channel *ch, uint64_t n,
                                   uint64_t user_payload, raddr_t *d)
{
    uint64_t start = rpipe_slot_start(ch, n);

    rpipe_desc_pack(d, start, start + (ch->slot_bytes >> ch->unit_shift), (UINT64_C(1) << 63) | n,
                    0, user_payload, (uint32_t)n, ch->unit_shift, RPIPE_DESC_SLOT);
}

static __attribute__((noinline, cold)) int rpipe_slot_invalid(const struct rpipe_channel *ch,
                                                              const char *call, const char *what)
{
    util_error("%s: descriptor is not %s of the channel with rank %d", call, what, ch->cfg.peer);
    return R_ERR_INVALID;
}

/* The slot number a descriptor names, relative to the oldest slot not
 * freed (as this side knows it). */
static inline uint64_t rpipe_slot_age(const struct rpipe_channel *ch, const raddr_t *d)
{
    return (uint32_t)(d->block - (uint32_t)ch->slot_freed);
}

/* Producer: reads the consumer's count of slots freed in order. */
static util_status_t rpipe_slot_load_freed(rch_t ch)
{
    uint64_t freed;

    if (!rpipe_msgs_pushed(ch)) {
        freed = __atomic_load_n((const uint64_t *)ch->slot_mem, __ATOMIC_ACQUIRE);
    } else {
        util_status_t status = btl_get(
            ch->ep, &freed, 8, NULL, ch->peer_region_addr + ch->slot_header, ch->peer_region_rkey);
        if (status != UTIL_OK) {
            return status;
        }
    }
    ch->slot_freed = freed;
    return UTIL_OK;
}

/* Producer, every slot looks in use: reads the free count again (R_SUCCESS
 * where one is free now); else R_PENDING (block mode waits for a slot) or
 * R_ERR_NOT_FOUND (tag/channel: the region takes the message). */
static __attribute__((noinline)) int rpipe_slot_refill(rch_t ch)
{
    int none = rpipe_slot_block(ch) ? R_PENDING : R_ERR_NOT_FOUND;
    util_status_t status;

    if (ch->slot_skip > 0) { /* across the network a look is a get: not every time */
        ch->slot_skip--;
        return none;
    }
    status = rpipe_slot_load_freed(ch);
    if (status != UTIL_OK) {
        return status;
    }
    if (ch->slot_next - ch->slot_freed >= ch->nslots) {
        if (rpipe_msgs_pushed(ch)) {
            ch->slot_skip = ch->nslots / 4;
        }
        return none;
    }
    return R_SUCCESS;
}

/* Producer: a slot for size bytes (R_SUCCESS); R_PENDING where block mode
 * waits for a free slot; R_ERR_NOT_FOUND where a tag or channel message
 * goes to the region instead (a slot is allocated and unwritten, so the
 * next would be written out of ring order; or every slot is in use). */
static inline __attribute__((always_inline)) int rpipe_slot_alloc(rch_t ch, size_t size,
                                                                  raddr_t *desc_p)
{
    int block = rpipe_slot_block(ch);

    if (!block && ch->slot_unwritten) {
        return R_ERR_NOT_FOUND;
    }
    if (__builtin_expect(ch->slot_next - ch->slot_freed >= ch->nslots, 0)) {
        int status = rpipe_slot_refill(ch);

        if (status != R_SUCCESS) {
            return status;
        }
    }
    rpipe_slot_desc(ch, ch->slot_next++, size, desc_p);
    ch->slot_unwritten = !block;
    return R_SUCCESS;
}

/* Producer: whether rmalloc's inline path may try a slot for size bytes
 * (connected with slots, nothing deferred to flush first). */
static inline int rpipe_slot_fast(const struct rpipe_channel *ch, size_t size)
{
    return ch != NULL && ch->producer && ch->slots_on && size <= ch->slot_payload &&
           ch->deferred_n == 0;
}

/* Producer, rwrite of a slot: checks that this end allocated it and may
 * write it, then stores (or puts) the flag after the payload. */
static inline __attribute__((always_inline)) int rpipe_slot_write(rch_t ch, const raddr_t *d)
{
    uint64_t age = rpipe_slot_age(ch, d), n = ch->slot_freed + age;
    uint64_t flag;
    char *line;

    if (__builtin_expect(d->payload > ch->slot_payload || d->start != rpipe_slot_start(ch, n) ||
                             (rpipe_slot_block(ch) ? age >= ch->slot_next - ch->slot_freed
                                                   : !ch->slot_unwritten || n + 1 != ch->slot_next),
                         0)) {
        return rpipe_slot_invalid(ch, "rwrite", "a slot allocated and not yet written");
    }
    ch->slot_unwritten = 0;
    flag = rpipe_slot_flag(rpipe_slot_block(ch) ? n : ch->seq, d->payload);
    line = rpipe_slot_line(ch, n);
    if (!rpipe_msgs_pushed(ch)) {
        __atomic_store_n(rpipe_slot_flag_at(ch, line), flag, __ATOMIC_RELEASE);
    } else {
        uint64_t off = (uint64_t)(line - ch->region);
        util_status_t status = btl_put_flag(
            ch->ep, line, RPIPE_UHDR_BYTES + d->payload, ch->region_mem, ch->peer_region_addr + off,
            ch->peer_region_rkey, ch->peer_region_addr + off + ch->slot_bytes - 8,
            ch->peer_region_rkey, flag, NULL);
        if (status != UTIL_OK) {
            return status;
        }
    }
    ch->seq++;
    return R_SUCCESS;
}

/* Consumer: takes the next slot's message if its flag carries the sequence
 * expected (R_SUCCESS), else R_PENDING; R_ERR_TRUNCATED leaves it there. */
static inline __attribute__((always_inline)) int rpipe_slot_take(rch_t ch, size_t size,
                                                                 raddr_t *desc_p, void **ptr_p)
{
    uint64_t n = ch->slot_next;
    char *line = rpipe_slot_line(ch, n);
    uint64_t flag = btl_flag_load(rpipe_slot_flag_at(ch, line));
    uint64_t payload = (flag >> 8) & 0xffffu;

    if ((flag & RPIPE_SLOT_CHECK) != rpipe_slot_flag(rpipe_slot_block(ch) ? n : ch->seq, 0) ||
        payload > ch->slot_payload) {
        return R_PENDING;
    }
    if (payload > size) {
        return R_ERR_TRUNCATED;
    }
    ch->slot_next = n + 1;
    ch->seq++;
    rpipe_slot_desc(ch, n, payload, desc_p);
    *ptr_p = line + RPIPE_UHDR_BYTES;
    if (payload > RPIPE_SLOT_PAYLOAD) { /* a slot of more than the flag's line */
        rpipe_prefetch(line + RPIPE_UHDR_BYTES, payload);
    }
    return R_SUCCESS;
}

/* Consumer, rfree of a slot: checks that it is taken and not freed, then
 * publishes the count of slots freed in order (released after the reads
 * of the message, so the producer never writes a slot still in use). */
static inline __attribute__((always_inline)) int rpipe_slot_free(rch_t ch, const raddr_t *d)
{
    uint64_t age = rpipe_slot_age(ch, d), n = ch->slot_freed + age, mask;
    uint64_t *flag;

    if (__builtin_expect(age >= ch->slot_next - ch->slot_freed ||
                             ((ch->slot_free_mask >> age) & 1) ||
                             d->start != rpipe_slot_start(ch, n),
                         0)) {
        goto invalid;
    }
    flag = rpipe_slot_flag_at(ch, rpipe_slot_line(ch, n));
    if ((__atomic_load_n(flag, __ATOMIC_RELAXED) & 0xffffffu) !=
        ((d->payload << 8) | RPIPE_FLAG_MARK)) {
        goto invalid;
    }
    mask = ch->slot_free_mask | (UINT64_C(1) << age);
    if (age == 0) {
        uint64_t run = (mask == UINT64_MAX) ? 64 : (uint64_t)__builtin_ctzll(~mask);

        mask = (run == 64) ? 0 : mask >> run;
        ch->slot_freed += run;
        __atomic_store_n((uint64_t *)ch->slot_mem, ch->slot_freed, __ATOMIC_RELEASE);
    }
    ch->slot_free_mask = mask;
    return R_SUCCESS;
invalid:
    return rpipe_slot_invalid(ch, "rfree", "a live message (freed twice, or from another channel)");
}

/* rmem of a slot descriptor: where its payload is here, or NULL. */
static inline void *rpipe_slot_mem(const struct rpipe_channel *ch, const raddr_t *d)
{
    uint64_t units = d->start - ch->slot_start0;

    if (d->unit_shift != ch->unit_shift ||
        units >= (uint64_t)ch->nslots * (ch->slot_bytes >> ch->unit_shift) ||
        d->end - d->start != (ch->slot_bytes >> ch->unit_shift) || d->payload > ch->slot_payload) {
        return NULL;
    }
    return ch->slot_mem + RPIPE_CACHE_LINE + (units << ch->unit_shift) + RPIPE_UHDR_BYTES;
}

/* Where the next slot's flag is, for a wait to watch. */
static inline const uint64_t *rpipe_slot_next_flag(const struct rpipe_channel *ch)
{
    return rpipe_slot_flag_at(ch, rpipe_slot_line(ch, ch->slot_next));
}

#endif
