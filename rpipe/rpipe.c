/*
 * rpipe: library state, channel setup and the lazy pairwise connection
 * (thesis Algorithm 1), the rmalloc sync transport over the btl, status
 * text and the network_* utilities.
 *
 * Lazy connection. rpipe() allocates and registers this side's memory,
 * creates its rmalloc sync endpoint and publishes a description under a
 * key that encodes the channel id (active rank, passive rank, context) and
 * the side. It never waits. The first call that needs the peer gets the
 * peer's key from the bootstrap, which waits until the peer publishes it;
 * so ends may be created in any order and no global barrier is involved.
 */
#include "rpipe/rpipe.h"
#include "rpipe/rpipe_inl.h"
#include "rmalloc/rmalloc_ring_inl.h"
#include "btl/btl_inl.h"
#include "btl/btl_wait.h"
#include "util/env.h"
#include "util/log.h"

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define RPIPE_META_MAGIC 0x72706970u /* "rpip" */

rpipe_state_t rpipe_state;

/* The public codes (rmalloc.h, self-contained) are the internal util_status_t
 * values, so a status crosses into the API untranslated. This is the one
 * place that knows both lists: each pair is checked, and so is the count,
 * so a new internal code cannot reach users without a public name. */
#define RPIPE_SAME_STATUS(_public, _internal)                                                      \
    _Static_assert((int)(_public) == (int)(_internal), #_public " is " #_internal)
RPIPE_SAME_STATUS(R_SUCCESS, UTIL_OK);
RPIPE_SAME_STATUS(R_PENDING, UTIL_IN_PROGRESS);
RPIPE_SAME_STATUS(R_ERR_NOMEM, UTIL_ERR_NO_MEMORY);
RPIPE_SAME_STATUS(R_ERR_INVALID, UTIL_ERR_INVALID);
RPIPE_SAME_STATUS(R_ERR_NOT_FOUND, UTIL_ERR_NOT_FOUND);
RPIPE_SAME_STATUS(R_ERR_TIMEOUT, UTIL_ERR_TIMEOUT);
RPIPE_SAME_STATUS(R_ERR_IO, UTIL_ERR_IO);
RPIPE_SAME_STATUS(R_ERR_NO_RESOURCE, UTIL_ERR_NO_RESOURCE);
RPIPE_SAME_STATUS(R_ERR_UNSUPPORTED, UTIL_ERR_UNSUPPORTED);
RPIPE_SAME_STATUS(R_ERR_UNREACHABLE, UTIL_ERR_UNREACHABLE);
RPIPE_SAME_STATUS(R_ERR_TRUNCATED, UTIL_ERR_TRUNCATED);
RPIPE_SAME_STATUS(R_ERR_BUSY, UTIL_ERR_BUSY);
RPIPE_SAME_STATUS(R_ERR_STATE, UTIL_ERR_STATE);
RPIPE_SAME_STATUS(R_ERR_RUNTIME, UTIL_ERR_RUNTIME);
RPIPE_SAME_STATUS(R_ERR_OVERFLOW, UTIL_ERR_OVERFLOW);
RPIPE_SAME_STATUS(R_ERR_PEER_FAILED, UTIL_ERR_PEER_FAILED);
RPIPE_SAME_STATUS(R_ERR_EXISTS, UTIL_ERR_EXISTS);
#define RPIPE_COUNT_STATUS_(_name, _value, _text) +1
_Static_assert(0 UTIL_STATUS_LIST(RPIPE_COUNT_STATUS_) == 17,
               "every util_status_t code needs its R_ code in rmalloc.h and a line above");
#undef RPIPE_COUNT_STATUS_
#undef RPIPE_SAME_STATUS

const char *rstrerror(int status)
{
    return util_status_string((util_status_t)status);
}

void rmalloc_config_init(rmalloc_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->peer = -1;
    cfg->op = RDMA_PUT;
    cfg->algorithm = NEXT_FIT;
    cfg->unit_size = 8;
    cfg->alloc_size = 64 * 1024;
    cfg->sync = NET_SYNC_BLKS;
    cfg->watermark = RWATERMARK_FULL;
    cfg->retries = 1;
    cfg->atomic_type = RATOMIC_ADD;
}

/* ---- waiting ------------------------------------------------------------------------- */

void rpipe_wait_init(rpipe_wait_t *wait)
{
    wait->polls = 0;
    util_wait_init(&wait->idle);
}

/* Spin or, after RMB_RPIPE_SPIN polls, yield and later nap (util/wait.h)
 * so that oversubscribed PEs make progress. */
static void rpipe_wait_relax(rpipe_wait_t *wait)
{
    if (++wait->polls > rpipe_state.spin) {
        util_wait_relax_slow(&wait->idle);
    } else {
        util_wait_cpu_pause();
    }
}

/* Sends what any channel deferred (a peer may be waiting for it), each
 * driving its sync first (room may have come); the first real failure. */
static util_status_t rpipe_send_deferred(void)
{
    util_status_t first = UTIL_OK;

    for (rch_t ch = rpipe_state.channels; ch != NULL && rpipe_state.deferred > 0; ch = ch->next) {
        if (ch->deferred_n > 0) {
            util_status_t status;

            (void)rmalloc_sync_progress(ch->sync);
            status = rpipe_flush_deferred(ch);
            first = first == UTIL_OK ? status : first;
        }
    }
    return first;
}

/* One step of a blocking wait: drive the btl, send what is deferred, relax. */
void rpipe_wait_step(rpipe_wait_t *wait)
{
    btl_ctx_progress(rpipe_state.btl);
    (void)rpipe_send_deferred();
    rpipe_wait_relax(wait);
}

static double rpipe_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- deferred posts and frees ---------------------------------------------------------- */

static util_status_t rpipe_sync_send(rch_t ch, const raddr_t *desc)
{
    return ch->producer ? rmalloc_sync_post(ch->sync, desc) : rmalloc_sync_free(ch->sync, desc);
}

/* Block consumer: the deferred frees of the oldest messages in turn (frees
 * in order), on the ring inline, and one store of the units they release;
 * how many. The rest go through rmalloc_sync_free(). */
static uint32_t rpipe_flush_block_frees(rch_t ch)
{
    uint64_t released = 0;
    uint32_t done;

    for (done = 0; done < ch->deferred_n; done++) {
        rmalloc_ring_ent_t *e = rmalloc_ring_find(ch->block_ring, &ch->deferred[done]);
        uint64_t units = (e != NULL) ? rmalloc_ring_free_oldest_inl(ch->block_ring, e) : 0;

        if (units == 0) {
            break;
        }
        released += units;
    }
    if (released != 0) {
        rmalloc_sync_block_released(ch->sync, released);
    }
    return done;
}

util_status_t rpipe_flush_deferred(rch_t ch)
{
    uint32_t done = 0;
    util_status_t status = UTIL_OK;

    if (ch->block_ring != NULL && !ch->producer) {
        done = rpipe_flush_block_frees(ch);
    }
    while (done < ch->deferred_n) {
        status = rpipe_sync_send(ch, &ch->deferred[done]);
        if (rpipe_sync_not_now(status)) {
            status = UTIL_OK;
            break;
        }
        if (status != UTIL_OK) {
            break;
        }
        done++;
    }
    if (done > 0) {
        if (done < ch->deferred_n) {
            memmove(ch->deferred, ch->deferred + done, (ch->deferred_n - done) * sizeof(raddr_t));
        }
        ch->deferred_n -= done;
        rpipe_state.deferred -= done;
    }
    return status;
}

void rpipe_flush_all_deferred(void)
{
    for (rch_t ch = rpipe_state.channels; ch != NULL && rpipe_state.deferred > 0; ch = ch->next) {
        rpipe_flush_deferred(ch);
    }
}

/* A barrier's first step (network_barrier, rexit): what is deferred goes
 * out. A post or free held back by this side's own sync read in flight goes
 * once the read lands, so wait for such reads and flush again; one refused
 * for room in the peer's queue waits for the barrier's telling (below):
 * once rounds stop sending anything, stop. Without the wait, over a network
 * (a read takes a round trip) a producer could leave its last posts
 * deferred for no reason but a read about to land. */
#define RPIPE_SETTLE_ROUNDS 4 /* a tag pull is two reads (count, tags); room reads repeat */

static void rpipe_flush_all_deferred_settled(void)
{
    int idle_rounds = 0;

    rpipe_flush_all_deferred();
    while (rpipe_state.deferred > 0 && idle_rounds < RPIPE_SETTLE_ROUNDS) {
        uint64_t before = rpipe_state.deferred;
        int reading = 0;

        for (rch_t ch = rpipe_state.channels; ch != NULL; ch = ch->next) {
            rpipe_wait_t wait;

            if (ch->deferred_n == 0 || !rmalloc_sync_reading(ch->sync)) {
                continue;
            }
            reading = 1;
            rpipe_wait_init(&wait);
            /* only the btl meanwhile: a flush here could start the next
             * read each time one lands (a channel producer re-reads the
             * peer's tail while its ring is full) and never end the wait */
            while (rmalloc_sync_progress(ch->sync) == UTIL_IN_PROGRESS) {
                btl_ctx_progress(rpipe_state.btl);
                rpipe_wait_relax(&wait); /* landed, or failed: a failure ends the wait */
            }
        }
        if (!reading) {
            return;
        }
        rpipe_flush_all_deferred();
        idle_rounds = rpipe_state.deferred < before ? 0 : idle_rounds + 1;
    }
}

/* ---- the barrier ----------------------------------------------------------------------
 *
 * network_barrier and rexit: no rank passes while another holds back posts
 * or frees that a peer may wait for, nor while a peer still reaches into
 * its memory for them.
 *
 * An item refused for room in the peer's sync queue stays deferred until
 * the peer takes entries. A producer a whole queue ahead of its consumer
 * used to enter the bootstrap barrier (which drives nothing) with posts
 * held back: a consumer that read before its own barrier waited forever,
 * one that read after it never got them. So an end that still defers
 * something tells its peer (word HELD: the epoch, "holding") and keeps
 * sending what the peer's queue takes. The peer, in its barrier, takes
 * ahead what this end posted or freed (rmalloc_sync_pull) while it is told
 * "holding"; told "released", it lets its reads land and answers (word
 * ANSWER: the epoch). An end that told enters the bootstrap barrier only
 * once it holds nothing and has its answer: until then the peer may still
 * read or write its sync buffer. Every rank serves while it waits, in the
 * bootstrap barrier too (bootstrap_barrier_serving), so a peer that is
 * told late still answers. Without deferred items this is the plain
 * barrier plus a load of one local word per channel per step.
 */
enum { RPIPE_HELD_NONE = 0, RPIPE_HELD_TELL, RPIPE_HELD_TOLD, RPIPE_HELD_RELEASED };

#define RPIPE_HELD_WORD(epoch, holding) (((epoch) << 1) | (uint64_t)(holding))

typedef struct {
    uint64_t epoch;
    rpipe_wait_t wait;
    int fencing;          /* in the bootstrap barrier */
    util_status_t status; /* the first failure */
} rpipe_barrier_t;

static void rpipe_barrier_fail(rpipe_barrier_t *b, util_status_t status)
{
    if (b->status == UTIL_OK && !rpipe_sync_not_now(status) && status != UTIL_OK) {
        b->status = status;
    }
}

/* Telling the peer: "holding" while items are deferred, then "released". */
static void rpipe_barrier_tell(rch_t ch, rpipe_barrier_t *b)
{
    util_status_t status;

    if (ch->held_epoch != b->epoch || ch->held_state == RPIPE_HELD_RELEASED ||
        ch->held_state == RPIPE_HELD_NONE) {
        return;
    }
    if (ch->held_state == RPIPE_HELD_TELL && ch->deferred_n == 0) {
        ch->held_state = RPIPE_HELD_NONE; /* sent before the peer heard: nothing to answer */
        return;
    }
    if (ch->held_state == RPIPE_HELD_TOLD && ch->deferred_n > 0) {
        return;
    }
    status = rmalloc_sync_tell(ch->sync, RMALLOC_SYNC_WORD_HELD,
                               RPIPE_HELD_WORD(b->epoch, ch->held_state == RPIPE_HELD_TELL));
    if (status == UTIL_OK || status == UTIL_IN_PROGRESS) {
        ch->held_state++;
    }
    rpipe_barrier_fail(b, status);
}

/* The peer's telling: take ahead while it holds items back; once it
 * released them, let this side's reads land and answer. 1 while there is
 * something to do for the peer. */
static int rpipe_barrier_answer(rch_t ch, rpipe_barrier_t *b)
{
    uint64_t peer = rmalloc_sync_told(ch->sync, RMALLOC_SYNC_WORD_HELD);
    util_status_t status;

    if (peer == RPIPE_HELD_WORD(b->epoch, 1)) {
        status = rpipe_ready(ch); /* an end not used yet connects: the peer's is there */
        if (status == UTIL_OK) {
            status = rmalloc_sync_pull(ch->sync);
        }
        rpipe_barrier_fail(b, status == UTIL_ERR_INVALID ? UTIL_OK : status); /* BLOCK: none */
        return 1;
    }
    if (peer != RPIPE_HELD_WORD(b->epoch, 0) || ch->answered_epoch == b->epoch) {
        return 0;
    }
    status = rpipe_ready(ch);
    if (status == UTIL_OK && rmalloc_sync_progress(ch->sync) == UTIL_IN_PROGRESS) {
        return 1; /* a read of the peer's buffer is in flight */
    }
    if (status == UTIL_OK) {
        status = rmalloc_sync_tell(ch->sync, RMALLOC_SYNC_WORD_ANSWER, b->epoch);
    }
    if (status == UTIL_OK || status == UTIL_IN_PROGRESS) {
        ch->answered_epoch = b->epoch;
    }
    rpipe_barrier_fail(b, status);
    return ch->answered_epoch != b->epoch;
}

/* One step of the barrier's wait; 1 while a peer's telling needs us (in
 * the bootstrap barrier, where this side defers nothing any more: idle,
 * that wait sleeps as the blocking fence did, waking now and then). */
static int rpipe_barrier_serve(void *arg)
{
    rpipe_barrier_t *b = arg;
    int busy = 0;

    btl_ctx_progress(rpipe_state.btl);
    rpipe_barrier_fail(b, rpipe_send_deferred());
    for (rch_t ch = rpipe_state.channels; ch != NULL; ch = ch->next) {
        rpipe_barrier_tell(ch, b);
        busy |= rpipe_barrier_answer(ch, b);
    }
    if (!b->fencing) {
        rpipe_wait_relax(&b->wait);
    } else if (busy) {
        util_wait_relax_slow(&b->wait.idle); /* the fence's threads need the CPU too */
    }
    return busy;
}

/* Nothing deferred, and every peer told has answered. */
static int rpipe_barrier_released(rpipe_barrier_t *b)
{
    if (rpipe_state.deferred > 0) {
        return 0;
    }
    for (rch_t ch = rpipe_state.channels; ch != NULL; ch = ch->next) {
        if (ch->held_epoch == b->epoch && ch->held_state != RPIPE_HELD_NONE &&
            (ch->held_state != RPIPE_HELD_RELEASED ||
             rmalloc_sync_told(ch->sync, RMALLOC_SYNC_WORD_ANSWER) != b->epoch)) {
            return 0;
        }
    }
    return 1;
}

static util_status_t rpipe_barrier_all(void)
{
    rpipe_barrier_t b = {.epoch = ++rpipe_state.barriers, .status = UTIL_OK};
    util_status_t status;

    rpipe_wait_init(&b.wait);
    rpipe_flush_all_deferred_settled();
    if (rpipe_state.deferred > 0) {
        for (rch_t ch = rpipe_state.channels; ch != NULL; ch = ch->next) {
            if (ch->deferred_n > 0) {
                ch->held_epoch = b.epoch;
                ch->held_state = RPIPE_HELD_TELL;
            }
        }
    }
    while (b.status == UTIL_OK && !rpipe_barrier_released(&b)) {
        (void)rpipe_barrier_serve(&b);
    }
    /* This side's reads land and its writes too: peers may unmap their
     * memory once they pass. */
    for (rch_t ch = rpipe_state.channels; ch != NULL; ch = ch->next) {
        (void)btl_ctx_comp_wait(rpipe_state.btl, &ch->sync_comp);
    }
    status = btl_ctx_quiet(rpipe_state.btl);
    if (status == UTIL_OK) {
        b.fencing = 1;
        status = bootstrap_barrier_serving(rpipe_barrier_serve, &b);
    }
    return status != UTIL_OK ? status : b.status;
}

util_status_t rpipe_post_or_defer(rch_t ch, const raddr_t *desc)
{
    util_status_t status = UTIL_ERR_NO_RESOURCE;

    if (ch->deferred_n > 0) {
        status = rpipe_flush_deferred(ch);
        if (status != UTIL_OK) {
            return status;
        }
    }
    if (ch->deferred_n == 0) { /* keep the order: nothing may overtake */
        status = rpipe_sync_send(ch, desc);
        if (!rpipe_sync_not_now(status)) {
            return status;
        }
    }
    return rpipe_defer(ch, desc);
}

util_status_t rpipe_post_capture(rch_t ch, const raddr_t *desc)
{
    util_status_t status;

    ch->rec_len = 0;
    ch->rec_capture = 1;
    status = rmalloc_sync_post(ch->sync, desc);
    ch->rec_capture = 0;
    return status;
}

util_status_t rpipe_defer(rch_t ch, const raddr_t *desc)
{
    if (ch->deferred_n == ch->deferred_cap) {
        uint32_t cap = ch->deferred_cap ? 2 * ch->deferred_cap : 16;
        raddr_t *grown = realloc(ch->deferred, cap * sizeof(raddr_t));
        if (grown == NULL) {
            return UTIL_ERR_NO_MEMORY;
        }
        ch->deferred = grown;
        ch->deferred_cap = cap;
    }
    ch->deferred[ch->deferred_n++] = *desc;
    rpipe_state.deferred++;
    return UTIL_OK;
}

/* ---- init / exit --------------------------------------------------------------------- */

int rinit(int *rank, int *nranks)
{
    util_status_t status;
    long spin, timeout, slots;
    size_t prefetch;

    if (rpipe_state.refcount > 0) {
        rpipe_state.refcount++;
    } else {
        status = btl_ctx_create(NULL, &rpipe_state.btl);
        if (status != UTIL_OK) {
            return status;
        }
        if (util_env_get_int("RMB_RPIPE_SPIN", &spin) != UTIL_OK || spin < -1 ||
            util_env_get_int("RMB_RPIPE_CONNECT_TIMEOUT", &timeout) != UTIL_OK || timeout < 1) {
            util_error("RMB_RPIPE_SPIN must be >= -1 and RMB_RPIPE_CONNECT_TIMEOUT >= 1");
            btl_ctx_destroy(rpipe_state.btl);
            return UTIL_ERR_INVALID;
        }
        if (util_env_get_bool("RMB_RPIPE_GET_PUSH", &rpipe_state.get_push) != UTIL_OK) {
            btl_ctx_destroy(rpipe_state.btl);
            return UTIL_ERR_INVALID;
        }
        if (util_env_get_int("RMB_RPIPE_SLOTS", &slots) != UTIL_OK || slots < 0 ||
            slots > RPIPE_SLOTS_MAX || (slots & (slots - 1)) != 0) {
            util_error("RMB_RPIPE_SLOTS must be 0 or a power of two up to %u", RPIPE_SLOTS_MAX);
            btl_ctx_destroy(rpipe_state.btl);
            return UTIL_ERR_INVALID;
        }
        if (util_env_get_size("RMB_RPIPE_PREFETCH", &prefetch) != UTIL_OK) {
            btl_ctx_destroy(rpipe_state.btl);
            return UTIL_ERR_INVALID;
        }
        rpipe_state.prefetch = (uint64_t)prefetch;
        rpipe_state.slots = (uint32_t)slots;
        rpipe_state.spin = spin >= 0 ? (uint64_t)spin : util_wait_policy.spin;
        rpipe_state.connect_timeout = (double)timeout;
        rpipe_state.rank = bootstrap_rank();
        rpipe_state.size = bootstrap_size();
        rpipe_state.msg_sent = calloc((size_t)rpipe_state.size, sizeof(uint64_t));
        rpipe_state.msg_recv = calloc((size_t)rpipe_state.size, sizeof(uint64_t));
        if (rpipe_state.msg_sent == NULL || rpipe_state.msg_recv == NULL) {
            free(rpipe_state.msg_sent);
            free(rpipe_state.msg_recv);
            btl_ctx_destroy(rpipe_state.btl);
            return UTIL_ERR_NO_MEMORY;
        }
        rpipe_state.refcount = 1;
    }
    if (rank != NULL) {
        *rank = rpipe_state.rank;
    }
    if (nranks != NULL) {
        *nranks = rpipe_state.size;
    }
    return R_SUCCESS;
}

int rexit(void)
{
    util_status_t status;

    if (rpipe_state.refcount == 0) {
        return R_ERR_STATE;
    }
    if (--rpipe_state.refcount > 0) {
        return R_SUCCESS;
    }
    /* Everyone stops using channels before anyone unmaps its memory: what
     * is still deferred goes out and lands first, and after the barrier
     * nothing more is written into a peer's channel memory (it may be
     * unmapped already; a network backend that applies writes in the
     * target's process, UCX over TCP, would fault there). */
    (void)rpipe_barrier_all();
    rpipe_state.exiting = 1;
    for (int i = 0; i < rpipe_state.finalize_nhooks; i++) {
        rpipe_state.finalize_hooks[i]();
    }
    while (rpipe_state.channels != NULL) {
        rpipe_close(rpipe_state.channels);
    }
    status = btl_ctx_destroy(rpipe_state.btl);
    free(rpipe_state.msg_sent);
    free(rpipe_state.msg_recv);
    memset(&rpipe_state, 0, sizeof(rpipe_state));
    return status;
}

util_status_t rpipe_finalize_hook_add(rpipe_finalize_hook_func_t hook)
{
    for (int i = 0; i < rpipe_state.finalize_nhooks; i++) {
        if (rpipe_state.finalize_hooks[i] == hook) {
            return UTIL_OK;
        }
    }
    if (rpipe_state.finalize_nhooks == RPIPE_FINALIZE_HOOKS_MAX) {
        util_error("rpipe: more than %d finalize hooks", RPIPE_FINALIZE_HOOKS_MAX);
        return UTIL_ERR_OVERFLOW;
    }
    rpipe_state.finalize_hooks[rpipe_state.finalize_nhooks++] = hook;
    return UTIL_OK;
}

/* ---- the rmalloc sync transport over the btl -------------------------------------------- */

/* The quickest sync read seen: about the network's round trip. */
static void rpipe_note_read_rt(rch_t ch, uint64_t rt)
{
    if (ch->tag_read_rt_ns == 0 || rt < ch->tag_read_rt_ns) {
        ch->tag_read_rt_ns = rt != 0 ? rt : 1;
    }
}

/* Non-blocking: the sync layer keeps at most one read in flight per
 * channel and completes it through rpipe_sync_flush. */
static util_status_t rpipe_sync_read(void *ctx, uint64_t offset, void *buf, size_t len)
{
    rch_t ch = ctx;
    util_status_t status;
    uint64_t now = 0;

    if (ch->tags_remote) {
        now = btl_now_ns();
        if (now < ch->tag_read_after_ns) {
            return UTIL_ERR_NO_RESOURCE; /* not issued: retried later */
        }
    }
    status = btl_get_nb(ch->ep, buf, len, NULL, ch->peer_sync_addr + offset, ch->peer_sync_rkey,
                        &ch->sync_comp);
    ch->sync_read_ns = status == UTIL_IN_PROGRESS ? now : 0;
    if (status == UTIL_OK && ch->tags_remote) { /* done on return (btl/ofi on FI_MR_LOCAL) */
        rpipe_note_read_rt(ch, btl_now_ns() - now);
    }
    return status;
}

static util_status_t rpipe_sync_write(void *ctx, uint64_t offset, const void *buf, size_t len)
{
    rch_t ch = ctx;
    util_status_t status;

    if (ch->rec_capture && ch->rec_len == 0 && len <= sizeof(ch->rec)) {
        memcpy(ch->rec, buf, len); /* goes with the message (rpipe_post_capture) */
        ch->rec_off = offset;
        ch->rec_len = (uint32_t)len;
        return UTIL_OK;
    }

    status = btl_put(ch->ep, buf, len, NULL, ch->peer_sync_addr + offset, ch->peer_sync_rkey);
    /* The sync protocols rely on issue order at the peer. */
    return (status == UTIL_OK) ? btl_fence(ch->ep) : status;
}

static util_status_t rpipe_sync_fetch_add(void *ctx, uint64_t offset, uint64_t value,
                                          uint64_t *old_p)
{
    rch_t ch = ctx;
    uint64_t old;
    util_status_t status = btl_amo_fetch(ch->ep, BTL_AMO_ADD, 8, ch->peer_sync_addr + offset,
                                         ch->peer_sync_rkey, value, 0, &old);
    if (status == UTIL_OK && old_p != NULL) {
        *old_p = old;
    }
    return status;
}

static util_status_t rpipe_sync_cswap(void *ctx, uint64_t offset, uint64_t expected,
                                      uint64_t desired, uint64_t *old_p)
{
    rch_t ch = ctx;
    uint64_t old;
    util_status_t status = btl_amo_fetch(ch->ep, BTL_AMO_CSWAP, 8, ch->peer_sync_addr + offset,
                                         ch->peer_sync_rkey, desired, expected, &old);
    if (status == UTIL_OK && old_p != NULL) {
        *old_p = old;
    }
    return status;
}

/* Writes and atomics complete before they return; a read may still be in
 * flight: one progress call, then IN_PROGRESS until it lands. */
static util_status_t rpipe_sync_flush(void *ctx)
{
    rch_t ch = ctx;
    util_status_t status = btl_comp_test(&ch->sync_comp);

    if (status == UTIL_IN_PROGRESS) {
        btl_ctx_progress(rpipe_state.btl);
        status = btl_comp_test(&ch->sync_comp);
    }
    if (status == UTIL_OK && ch->sync_read_ns != 0) {
        /* a read's round trip, at most: the reader may look late */
        rpipe_note_read_rt(ch, btl_now_ns() - ch->sync_read_ns);
        ch->sync_read_ns = 0;
    }
    return status;
}

static const rmalloc_sync_ops_t rpipe_sync_ops = {
    .read = rpipe_sync_read,
    .write = rpipe_sync_write,
    .fetch_add = rpipe_sync_fetch_add,
    .cswap = rpipe_sync_cswap,
    .flush = rpipe_sync_flush,
};

/* ---- channel setup --------------------------------------------------------------------- */

/* Maps every page of a peer's memory that this side loads and stores, at
 * connect: a page first touched by a message costs a fault in this process
 * (the owner zeroed it in its own), and next-fit walks a new page every few
 * messages until the region has wrapped once (halo's first 15 steps: +20 us).
 * Without MADV_POPULATE_WRITE (Linux < 5.14) a load per page does it: the
 * mapping is shared and never write-protected. */
static void rpipe_prefault(const void *addr, size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start, end;

    if (page <= 0 || len == 0) {
        return;
    }
    start = (uintptr_t)addr & ~(uintptr_t)(page - 1);
    end = (uintptr_t)addr + len;
#ifdef MADV_POPULATE_WRITE
    if (madvise((void *)start, end - start, MADV_POPULATE_WRITE) == 0) {
        return;
    }
#endif
    for (uintptr_t p = start; p < end; p += (uintptr_t)page) {
        (void)*(volatile const char *)(p > (uintptr_t)addr ? p : (uintptr_t)addr);
    }
}

static util_status_t rpipe_check_config(const rmalloc_config_t *cfg)
{
    if (rpipe_state.refcount == 0) {
        util_error("rpipe: call rinit() first");
        return UTIL_ERR_STATE;
    }
    if (cfg->peer < 0 || cfg->peer >= rpipe_state.size || cfg->peer == rpipe_state.rank) {
        util_error("rpipe: peer %d is not another rank of this job (0..%d, I am %d)", cfg->peer,
                   rpipe_state.size - 1, rpipe_state.rank);
        return UTIL_ERR_INVALID;
    }
    if (cfg->op != RDMA_PUT && cfg->op != RDMA_GET && cfg->op != RDMA_ATOMIC) {
        util_error("rpipe: op %d is not RDMA_PUT, RDMA_GET or RDMA_ATOMIC", (int)cfg->op);
        return UTIL_ERR_INVALID;
    }
    if (cfg->op == RDMA_ATOMIC && cfg->atomic_type > RATOMIC_SET) {
        util_error("rpipe: atomic_type %llu is not a RATOMIC_* operation",
                   (unsigned long long)cfg->atomic_type);
        return UTIL_ERR_INVALID;
    }
    if (cfg->unit_size == 0 || (cfg->unit_size & (cfg->unit_size - 1)) != 0) {
        util_error("rpipe: unit_size %zu is not a power of two", cfg->unit_size);
        return UTIL_ERR_INVALID;
    }
    if (cfg->alloc_size == 0 || cfg->alloc_size > ((size_t)1 << 40)) {
        util_error("rpipe: alloc_size %zu is out of range (1 B .. 1 TiB)", cfg->alloc_size);
        return UTIL_ERR_INVALID;
    }
    if (cfg->context > 255) {
        util_error("rpipe: context %u is out of range (0..255)", cfg->context);
        return UTIL_ERR_INVALID;
    }
    if ((unsigned)cfg->algorithm > RANDOM_FIT || (unsigned)cfg->sync > CH_SYNC) {
        util_error("rpipe: unknown algorithm %d or sync mode %d", (int)cfg->algorithm,
                   (int)cfg->sync);
        return UTIL_ERR_INVALID;
    }
    if (cfg->sync == NET_SYNC_BLKS && cfg->algorithm != NEXT_FIT) {
        util_error("rpipe: NET_SYNC_BLKS needs NEXT_FIT (use NET_SYNC_TAGS or CH_SYNC for other "
                   "heuristics)");
        return UTIL_ERR_INVALID;
    }
    if (cfg->slot_payload != 0) {
        const char *why = cfg->slot_payload > RSLOT_PAYLOAD_MAX
                              ? "is above RSLOT_PAYLOAD_MAX (65520)"
                          : cfg->unit_size > RPIPE_CACHE_LINE ? "needs unit_size 64 or less"
                          : cfg->op == RDMA_ATOMIC            ? "is not for RDMA_ATOMIC"
                                                              : NULL;
        if (why != NULL) {
            util_error("rpipe: slot_payload %zu %s", cfg->slot_payload, why);
            return UTIL_ERR_INVALID;
        }
    }
    if (!(cfg->watermark > 0.0 && cfg->watermark <= 1.0)) {
        util_error("rpipe: watermark %g is out of range (0, 1]", cfg->watermark);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

static void rpipe_channel_keys(rch_t ch)
{
    int active = ch->cfg.rdma_active ? rpipe_state.rank : ch->cfg.peer;
    int passive = ch->cfg.rdma_active ? ch->cfg.peer : rpipe_state.rank;

    ch->flag_salt = ((uint64_t)active << 40) ^ ((uint64_t)passive << 16) ^
                    ((uint64_t)ch->cfg.context << 4) ^ (uint64_t)ch->cfg.op ^ 0x72706970ull;

    /* channel id = (active, passive, context), plus the op so that a PUT and
     * a GET channel of the same pair and context do not collide */
    /* the btl context's serial tells this rinit's keys from those of an
     * earlier rinit/rexit, which stay in the exchange store */
    snprintf(ch->key_mine, sizeof(ch->key_mine), "rp%u.%d.%d.%u.%d.%c", rpipe_state.btl->serial,
             active, passive, ch->cfg.context, (int)ch->cfg.op, ch->cfg.rdma_active ? 'a' : 'p');
    snprintf(ch->key_peer, sizeof(ch->key_peer), "rp%u.%d.%d.%u.%d.%c", rpipe_state.btl->serial,
             active, passive, ch->cfg.context, (int)ch->cfg.op, ch->cfg.rdma_active ? 'p' : 'a');
}

/* Bytes of the message region: the capacity plus, per message the
 * capacity can hold at the unit size, the user header, flag and padding. */
static uint64_t rpipe_region_bytes(const rmalloc_config_t *cfg, uint64_t unit)
{
    uint64_t messages = (cfg->alloc_size + cfg->unit_size - 1) / cfg->unit_size;
    uint64_t bytes = cfg->alloc_size + messages * (RPIPE_UHDR_BYTES + 8 + 8);

    return (bytes + unit - 1) / unit * unit;
}

/* Small-message slots of a channel: RMB_RPIPE_SLOTS, fewer where the
 * capacity is small (a ring full of the largest slot messages stays within
 * it), none for RDMA_ATOMIC (a message is an operation on the accumulator),
 * for units above a line, or where flags carry no sequence (the tag-mode
 * reader needs it). */
static uint32_t rpipe_channel_slots(const rch_t ch)
{
    uint32_t n = rpipe_state.slots;
    uint64_t payload = ch->cfg.slot_payload != 0 ? ch->cfg.slot_payload : RPIPE_SLOT_PAYLOAD;

    if (ch->cfg.op == RDMA_ATOMIC || ch->unit > RPIPE_CACHE_LINE || !rpipe_flag_has_seq(ch)) {
        return 0;
    }
    while (n > 1 && (uint64_t)n * payload > ch->cfg.alloc_size) {
        n >>= 1;
    }
    return n >= 2 ? n : 0;
}

/* Bytes of a slot: the lines that the user header, the configured payload
 * and the flag fill. */
static uint32_t rpipe_slot_bytes(const rmalloc_config_t *cfg)
{
    uint64_t payload = cfg->slot_payload != 0 ? cfg->slot_payload : RPIPE_SLOT_PAYLOAD;

    return (uint32_t)((payload + RPIPE_UHDR_BYTES + 8 + RPIPE_CACHE_LINE - 1) &
                      ~(uint64_t)(RPIPE_CACHE_LINE - 1));
}

/* Byte offset of the slot header line (the consumer's free count). */
static uint64_t rpipe_slot_header_offset(const rch_t ch)
{
    return (ch->region_bytes + RPIPE_CACHE_LINE - 1) & ~(uint64_t)(RPIPE_CACHE_LINE - 1);
}

int rpipe(rch_t *ch_p, const rmalloc_config_t *cfg)
{
    rmalloc_sync_transport_t transport = {&rpipe_sync_ops, NULL};
    rpipe_meta_t meta;
    util_status_t status;
    size_t key_len;
    rch_t ch;

    if (ch_p == NULL || cfg == NULL) {
        return R_ERR_INVALID;
    }
    status = rpipe_check_config(cfg);
    if (status != UTIL_OK) {
        return status;
    }
    ch = calloc(1, sizeof(*ch));
    if (ch == NULL) {
        return R_ERR_NOMEM;
    }
    ch->cfg = *cfg;
    btl_comp_init(&ch->sync_comp);
    ch->producer = (cfg->op == RDMA_GET) ? !cfg->rdma_active : !!cfg->rdma_active;
    ch->owner = (cfg->op == RDMA_GET) ? ch->producer : !ch->producer;
    ch->unit = cfg->unit_size < 8 ? 8 : cfg->unit_size;
    ch->region_bytes = rpipe_region_bytes(cfg, ch->unit);
    ch->slot_bytes = rpipe_slot_bytes(cfg);
    ch->slot_payload = ch->slot_bytes - RPIPE_UHDR_BYTES - 8; /* a slot holds up to this */
    ch->nslots = rpipe_channel_slots(ch);
    ch->unit_shift = (uint16_t)__builtin_ctzll(ch->unit);
    ch->slot_header = rpipe_slot_header_offset(ch);
    ch->slot_start0 = (ch->slot_header + RPIPE_CACHE_LINE) >> ch->unit_shift;
    ch->view_bytes = ch->nslots == 0 ? ch->region_bytes
                                     : ch->slot_header + RPIPE_CACHE_LINE +
                                           (uint64_t)ch->nslots * ch->slot_bytes;
    rpipe_channel_keys(ch);
    for (rch_t other = rpipe_state.channels; other != NULL; other = other->next) {
        if (strcmp(other->key_mine, ch->key_mine) == 0) {
            util_error("rpipe: a channel with peer %d, context %u and this direction exists",
                       cfg->peer, cfg->context);
            free(ch);
            return R_ERR_EXISTS;
        }
    }

    status = rmalloc_sync_config_init(&ch->sync_cfg);
    if (status != UTIL_OK) {
        goto err_free;
    }
    ch->sync_cfg.protocol = cfg->sync == NET_SYNC_BLKS   ? RMALLOC_SYNC_BLOCK
                            : cfg->sync == NET_SYNC_TAGS ? RMALLOC_SYNC_TAG
                                                         : RMALLOC_SYNC_CHANNEL;
    ch->sync_cfg.direction = cfg->op == RDMA_GET ? RMALLOC_SYNC_GET : RMALLOC_SYNC_PUT;
    ch->sync_cfg.role = ch->producer ? RMALLOC_SYNC_PRODUCER : RMALLOC_SYNC_CONSUMER;
    ch->sync_cfg.heuristic = (rmalloc_heuristic_t)cfg->algorithm;
    ch->sync_cfg.size = ch->region_bytes;
    ch->sync_cfg.unit = ch->unit;
    ch->sync_cfg.header_bytes = 8; /* the notified flag */
    ch->sync_cfg.watermark = cfg->watermark;
    ch->sync_cfg.retries = cfg->retries;
    ch->sync_cfg.seed = 0x5eed0000u + cfg->context;
    if (cfg->queue_len != 0) {
        ch->sync_cfg.queue_len = cfg->queue_len;
    } else {
        /* Twice the messages the region can hold (smallest message: user
         * header, 1 byte, flag): unread tags are at most one region's worth
         * and the reader reports what it took every half ring, so a queue
         * never pushes back. Capped for huge channels of tiny units, where
         * deferral covers the rest. */
        uint64_t smallest = (RPIPE_UHDR_BYTES + 8 + 8 + ch->unit - 1) / ch->unit * ch->unit;
        uint64_t entries = 2 * (ch->region_bytes / smallest + 1);
        ch->sync_cfg.queue_len = (uint32_t)(entries < 65536 ? entries : 65536);
    }

    /* The owner's region holds messages. A GET consumer whose peer's
     * memory will not be mapped here allocates its mirror now and publishes
     * it, for the producer to push messages into (rpipe.h, pushed_get);
     * other mirrors wait for connect, when we know whether one is needed. */
    if (ch->owner || (cfg->op == RDMA_GET && !ch->producer && rpipe_state.get_push &&
                      !(btl_ctx_peer_caps(rpipe_state.btl, cfg->peer) & BTL_CAP_LOAD_STORE))) {
        status = btl_mem_alloc(rpipe_state.btl, ch->view_bytes, &ch->region_mem);
        if (status != UTIL_OK) {
            goto err_free;
        }
        ch->region = btl_mem_addr(ch->region_mem);
        memset(ch->region, 0, ch->view_bytes); /* no flag set; and prefaulted */
        if (ch->owner) {
            ch->sync_cfg.base = ch->region;
        }
    }
    if (cfg->op == RDMA_ATOMIC && !ch->producer) {
        status = btl_mem_alloc(rpipe_state.btl, 64, &ch->cell_mem);
        if (status != UTIL_OK) {
            goto err_region;
        }
        ch->cell = btl_mem_addr(ch->cell_mem);
        *ch->cell = (cfg->atomic_type == RATOMIC_AND) ? ~UINT64_C(0) : 0; /* the op's identity */
    }
    status = btl_mem_alloc(rpipe_state.btl, rmalloc_sync_buffer_size(&ch->sync_cfg), &ch->sync_mem);
    if (status != UTIL_OK) {
        goto err_cell;
    }
    transport.ctx = ch;
    status = rmalloc_sync_create(&ch->sync_cfg, btl_mem_addr(ch->sync_mem), &transport, &ch->sync);
    if (status != UTIL_OK) {
        goto err_sync_mem;
    }
    ch->block_ring = rmalloc_sync_block_ring(ch->sync);

    memset(&meta, 0, sizeof(meta));
    meta.magic = RPIPE_META_MAGIC;
    meta.op = (uint32_t)cfg->op;
    meta.algorithm = (uint32_t)cfg->algorithm;
    meta.sync = (uint32_t)cfg->sync;
    meta.unit = ch->unit;
    meta.alloc_size = cfg->alloc_size;
    meta.region_bytes = ch->region_bytes;
    meta.sync_bytes = rmalloc_sync_buffer_size(&ch->sync_cfg);
    meta.sync_addr = (uint64_t)(uintptr_t)btl_mem_addr(ch->sync_mem);
    status = btl_mem_pack(ch->sync_mem, meta.sync_key, sizeof(meta.sync_key), &key_len);
    meta.sync_key_len = (uint32_t)key_len;
    meta.atomic_type = cfg->op == RDMA_ATOMIC ? cfg->atomic_type : 0;
    meta.slots = ch->nslots;
    meta.slot_bytes = ch->slot_bytes;
    if (status == UTIL_OK && ch->cell_mem != NULL) {
        meta.cell_addr = (uint64_t)(uintptr_t)ch->cell;
        status = btl_mem_pack(ch->cell_mem, meta.cell_key, sizeof(meta.cell_key), &key_len);
        meta.cell_key_len = (uint32_t)key_len;
    }
    if (status == UTIL_OK && ch->region_mem != NULL) {
        meta.region_addr = (uint64_t)(uintptr_t)ch->region;
        status = btl_mem_pack(ch->region_mem, meta.region_key, sizeof(meta.region_key), &key_len);
        meta.region_key_len = (uint32_t)key_len;
    }
    if (status == UTIL_OK) {
        status = bootstrap_put(ch->key_mine, &meta, sizeof(meta));
    }
    if (status == UTIL_OK) {
        status = bootstrap_commit();
    }
    if (status != UTIL_OK) {
        goto err_sync;
    }
    ch->next = rpipe_state.channels;
    rpipe_state.channels = ch;
    *ch_p = ch;
    return R_SUCCESS;

err_sync:
    rmalloc_sync_destroy(ch->sync);
err_sync_mem:
    btl_mem_free(ch->sync_mem);
err_cell:
    if (ch->cell_mem != NULL) {
        btl_mem_free(ch->cell_mem);
    }
err_region:
    if (ch->region_mem != NULL) {
        btl_mem_free(ch->region_mem);
    }
err_free:
    free(ch);
    return status;
}

/* Reads the peer's description, waiting for the peer to publish it. */
static util_status_t rpipe_get_peer_meta(rch_t ch, rpipe_meta_t *meta)
{
    double deadline = rpipe_now() + rpipe_state.connect_timeout;
    util_status_t status;
    size_t size;

    for (;;) {
        status = bootstrap_get(ch->cfg.peer, ch->key_peer, meta, sizeof(*meta), &size);
        if (status != UTIL_ERR_TIMEOUT && status != UTIL_ERR_NOT_FOUND) {
            break;
        }
        if (rpipe_now() > deadline) {
            util_error("rpipe: rank %d did not create its end of channel %s within %.0f s "
                       "(RMB_RPIPE_CONNECT_TIMEOUT)",
                       ch->cfg.peer, ch->key_peer, rpipe_state.connect_timeout);
            return UTIL_ERR_TIMEOUT;
        }
    }
    if (status == UTIL_OK && (size != sizeof(*meta) || meta->magic != RPIPE_META_MAGIC)) {
        util_error("rpipe: rank %d published a malformed channel description", ch->cfg.peer);
        status = UTIL_ERR_STATE;
    }
    return status;
}

util_status_t rpipe_connect(rch_t ch)
{
    rpipe_meta_t meta;
    util_status_t status;
    int sync_mapped;
    void *ptr;

    status = rpipe_get_peer_meta(ch, &meta);
    if (status != UTIL_OK) {
        return status;
    }
    if (meta.op != (uint32_t)ch->cfg.op || meta.algorithm != (uint32_t)ch->cfg.algorithm ||
        meta.sync != (uint32_t)ch->cfg.sync || meta.unit != ch->unit ||
        meta.alloc_size != ch->cfg.alloc_size ||
        (ch->cfg.op == RDMA_ATOMIC && meta.atomic_type != ch->cfg.atomic_type)) {
        util_error("rpipe: the two ends of channel %s disagree (op, algorithm, sync, unit_size, "
                   "alloc_size or atomic_type differ between rank %d and rank %d)",
                   ch->key_mine, rpipe_state.rank, ch->cfg.peer);
        return UTIL_ERR_INVALID;
    }
    if (meta.slots != ch->nslots || (ch->nslots != 0 && meta.slot_bytes != ch->slot_bytes)) {
        util_error("rpipe: the two ends of channel %s disagree on small-message slots (%u of %u "
                   "bytes on rank %d, %u of %u on rank %d: set RMB_RPIPE_SLOTS and slot_payload "
                   "alike)",
                   ch->key_mine, ch->nslots, ch->slot_bytes, rpipe_state.rank, meta.slots,
                   meta.slot_bytes, ch->cfg.peer);
        return UTIL_ERR_INVALID;
    }
    status = btl_ctx_ep(rpipe_state.btl, ch->cfg.peer, &ch->ep);
    if (status != UTIL_OK) {
        return status;
    }
    ch->peer_sync_addr = meta.sync_addr;
    status = btl_rkey_unpack(ch->ep, meta.sync_key, meta.sync_key_len, &ch->peer_sync_rkey);
    if (status != UTIL_OK) {
        return status;
    }
    sync_mapped = btl_rkey_ptr(ch->peer_sync_rkey, meta.sync_addr, &ptr) == UTIL_OK;
    if (sync_mapped) {
        rmalloc_sync_set_peer_view(ch->sync, ptr); /* sync reads become loads */
        rpipe_prefault(ptr, rmalloc_sync_buffer_size(&ch->sync_cfg));
        ch->slots_on = ch->nslots != 0;
    } else {
        ch->tags_remote = ch->cfg.sync == NET_SYNC_TAGS && !ch->producer;
    }
    if (ch->cfg.op == RDMA_ATOMIC && ch->producer) {
        ch->peer_cell_addr = meta.cell_addr;
        status = btl_rkey_unpack(ch->ep, meta.cell_key, meta.cell_key_len, &ch->peer_cell_rkey);
        if (status != UTIL_OK) {
            goto err_sync_rkey;
        }
        if (btl_rkey_ptr(ch->peer_cell_rkey, meta.cell_addr, &ptr) == UTIL_OK) {
            ch->peer_cell = ptr; /* on node: CPU atomics */
        }
    }
    if (!ch->owner || (meta.region_key_len != 0 && !sync_mapped)) {
        /* the owner's region; or, GET producer, the consumer's mirror */
        ch->peer_region_addr = meta.region_addr;
        status =
            btl_rkey_unpack(ch->ep, meta.region_key, meta.region_key_len, &ch->peer_region_rkey);
        if (status != UTIL_OK) {
            goto err_sync_rkey;
        }
        ch->pushed_get = ch->owner;
    }
    if (!ch->owner) {
        if (btl_rkey_ptr(ch->peer_region_rkey, meta.region_addr, &ptr) == UTIL_OK) {
            ch->peer_region = ptr; /* messages are written/read in place */
            rpipe_prefault(ptr, ch->view_bytes);
            if (ch->region_mem != NULL) { /* published at rpipe(), not needed after all */
                btl_mem_free(ch->region_mem);
                ch->region_mem = NULL;
                ch->region = NULL;
            }
        } else if (ch->slots_on && ch->cfg.op == RDMA_GET) {
            util_error("rpipe: channel %s: rank %d's sync memory is mapped here but its message "
                       "region is not",
                       ch->key_mine, ch->cfg.peer);
            status = UTIL_ERR_STATE;
            goto err_region_rkey;
        } else if (ch->region_mem != NULL) {
            /* the mirror published at rpipe(): the producer pushes into it
             * unless it maps our memory (it maps both buffers or neither) */
            ch->pushed_get = !sync_mapped;
        } else {
            status = btl_mem_alloc(rpipe_state.btl, ch->view_bytes, &ch->region_mem);
            if (status != UTIL_OK) {
                goto err_region_rkey;
            }
            ch->region = btl_mem_addr(ch->region_mem);
        }
    }
    if (!sync_mapped) {
        /* Across the network the slots serve where the reader polls its own
         * memory: PUT, and GET pushed. Both ends see the same (a peer's
         * memory is mapped both ways or neither; the consumer's mirror
         * decides the push). */
        ch->slots_on = ch->nslots != 0 && (ch->cfg.op == RDMA_PUT || ch->pushed_get);
    }
    if (ch->slots_on) {
        ch->slot_mem = (ch->peer_region != NULL ? ch->peer_region : ch->region) + ch->slot_header;
    }
    ch->connected = 1;
    return UTIL_OK;

err_region_rkey:
    btl_rkey_release(ch->peer_region_rkey);
    ch->peer_region_rkey = NULL;
    if (ch->peer_cell_rkey != NULL) {
        btl_rkey_release(ch->peer_cell_rkey);
        ch->peer_cell_rkey = NULL;
        ch->peer_cell = NULL;
    }
err_sync_rkey:
    btl_rkey_release(ch->peer_sync_rkey);
    ch->peer_sync_rkey = NULL;
    return status;
}

int rpipe_close(rch_t ch)
{
    rch_t *link;

    if (ch == NULL) {
        return R_ERR_INVALID;
    }
    for (link = &rpipe_state.channels; *link != NULL && *link != ch; link = &(*link)->next) {
    }
    if (*link == NULL) {
        util_error("rpipe_close: not an open channel");
        return R_ERR_INVALID;
    }
    *link = ch->next;
    /* A sync read in flight lands in the endpoint's memory: let it. */
    (void)btl_ctx_comp_wait(rpipe_state.btl, &ch->sync_comp);
    /* Deferred posts and frees are dropped, not sent: both ends close a
     * channel, so the peer no longer needs them, and it may already have
     * freed the memory they would reach. Over a software RMA transport
     * (UCX or libfabric over TCP) such a late access crashes the peer
     * while it serves it. */
    rpipe_state.deferred -= ch->deferred_n;
    free(ch->deferred);
    rmalloc_sync_destroy(ch->sync);
    if (ch->peer_region_rkey != NULL) {
        btl_rkey_release(ch->peer_region_rkey);
    }
    if (ch->peer_sync_rkey != NULL) {
        btl_rkey_release(ch->peer_sync_rkey);
    }
    if (ch->peer_cell_rkey != NULL) {
        btl_rkey_release(ch->peer_cell_rkey);
    }
    if (ch->cell_mem != NULL) {
        btl_mem_free(ch->cell_mem);
    }
    if (ch->region_mem != NULL) {
        btl_mem_free(ch->region_mem);
    }
    btl_mem_free(ch->sync_mem);
    free(ch);
    return R_SUCCESS;
}

/* ---- network utilities ------------------------------------------------------------------- */

uint32_t network_rank(void)
{
    return (uint32_t)rpipe_state.rank;
}
uint32_t network_ranks(void)
{
    return (uint32_t)rpipe_state.size;
}

int network_barrier(void)
{
    if (rpipe_state.refcount == 0) {
        return R_ERR_STATE;
    }
    return rpipe_barrier_all();
}

int network_allgather(const void *in, void *out, size_t bytes)
{
    return rpipe_state.refcount ? bootstrap_allgather(in, out, bytes) : R_ERR_STATE;
}

void network_abort(int code)
{
    bootstrap_abort(code, "network_abort called");
}

/* Control messages ride on the bootstrap's key store: message k from A to B
 * is key "nm.A.B.k". Slow, but it never blocks the sender. */
int network_send(int to, const void *buf, size_t bytes)
{
    char key[BOOTSTRAP_KEY_MAX];
    util_status_t status;

    if (rpipe_state.refcount == 0) {
        return R_ERR_STATE;
    }
    if (to < 0 || to >= rpipe_state.size || (buf == NULL && bytes > 0)) {
        return R_ERR_INVALID;
    }
    snprintf(key, sizeof(key), "nm%u.%d.%d.%llu", rpipe_state.btl->serial, rpipe_state.rank, to,
             (unsigned long long)rpipe_state.msg_sent[to]);
    status = bootstrap_put(key, buf, bytes);
    if (status == UTIL_OK) {
        status = bootstrap_commit();
    }
    if (status == UTIL_OK) {
        rpipe_state.msg_sent[to]++;
    }
    return status;
}

int network_recv(int from, void *buf, size_t bytes)
{
    char key[BOOTSTRAP_KEY_MAX];
    double deadline;
    util_status_t status;
    size_t size;

    if (rpipe_state.refcount == 0) {
        return R_ERR_STATE;
    }
    if (from < 0 || from >= rpipe_state.size || (buf == NULL && bytes > 0)) {
        return R_ERR_INVALID;
    }
    snprintf(key, sizeof(key), "nm%u.%d.%d.%llu", rpipe_state.btl->serial, from, rpipe_state.rank,
             (unsigned long long)rpipe_state.msg_recv[from]);
    deadline = rpipe_now() + rpipe_state.connect_timeout;
    do {
        status = bootstrap_get(from, key, buf, bytes, &size);
    } while ((status == UTIL_ERR_TIMEOUT || status == UTIL_ERR_NOT_FOUND) &&
             rpipe_now() < deadline);
    if (status == UTIL_OK && size != bytes) {
        util_error("network_recv: message %s has %zu bytes, %zu expected", key, size, bytes);
        status = UTIL_ERR_TRUNCATED;
    }
    if (status == UTIL_OK) {
        rpipe_state.msg_recv[from]++;
    }
    return status;
}
