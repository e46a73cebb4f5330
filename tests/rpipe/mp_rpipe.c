/*
 * rpipe multi-process tests, launched as N PEs under oshrun.
 *   mp_rpipe MODE OP SYNC ALG [COUNT]
 * MODE  stream    PE 2k sends COUNT messages of seeded random sizes to PE 2k+1
 *                 through a tiny channel (a sync every few messages);
 *       irregular as stream, but the consumer holds up to 8 messages and
 *                 frees them in a seeded random order (irregular consumption);
 *       channels  8 channels (contexts) per ordered pair between PE 0 and 1,
 *                 used round-robin;
 *       alltoall  every PE streams to every other PE at once, polling its
 *                 inbound channels with rread_nb;
 *       stale     block mode: a message's flag word still holds an older
 *                 message's payload, forged to look like a flag with the
 *                 wrong sequence number; rread_nb must not take it (2 PEs);
 *       misuse    bad configurations and calls get error codes (2 PEs);
 *       messages  network_send/recv between every pair;
 *       slots     small-message slots: held, freed out of order, full
 *                 (block waits, tag/channel use the region), written out
 *                 of order, misused, ends that disagree (2 PEs);
 *       slotswide as slots, with slots of 200 bytes (slot_payload);
 *       getpush   GET: the four combinations of RMB_RPIPE_GET_PUSH on the
 *                 two ends; the consumer's decides whether messages are
 *                 pushed where memory is not mapped (2 PEs);
 *       burst     PE 2k writes COUNT small messages, many more than its sync
 *                 queue holds (64), into a channel with room for all, and
 *                 enters network_barrier; PE 2k+1 reads them all only then,
 *                 before its own barrier;
 *       burstlate as burst, but PE 2k+1 reads them after its barrier;
 *       burstboth both PEs of a pair write COUNT messages to each other, pass
 *                 a barrier, read them all, free them newest first and
 *                 pass a barrier: nothing may stay deferred (twice).
 * OP put|get, SYNC block|tag|channel, ALG next|first|best|worst|random.
 * Every payload byte is checked; exits 0 only if all arrived in order.
 */
#include "rpipe/rmalloc.h"
#include "rpipe/rpipe_inl.h" /* stale: the flag encoding, to forge one */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me, npes, errors;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (errors++ < 10) {                                                                       \
            fprintf(stderr, "PE %d: ", me);                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

#define EXPECT_RC(_call, _want)                                                                    \
    do {                                                                                           \
        int _rc = (_call);                                                                         \
        if (_rc != (_want)) {                                                                      \
            FAIL("%s returned %d (%s), expected %d", #_call, _rc, rstrerror(_rc), (_want));        \
        }                                                                                          \
    } while (0)

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Size and byte pattern of message i on the channel from src to dst. */
static size_t msg_size(int src, int dst, int ctx, long i, size_t max)
{
    uint64_t s = 0x9E3779B97F4A7C15ull ^ ((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^
                 ((uint64_t)ctx << 56) ^ (uint64_t)i * 0x2545F4914F6CDD1Dull;
    rng_next(&s);
    return 1 + rng_next(&s) % max;
}

static unsigned char msg_byte(int src, long i, size_t k)
{
    return (unsigned char)(src * 31 + i * 7 + k * 13);
}

static rmalloc_config_t make_config(const char *op, const char *sync, const char *alg)
{
    rmalloc_config_t cfg;

    rmalloc_config_init(&cfg);
    cfg.op = !strcmp(op, "get") ? RDMA_GET : RDMA_PUT;
    cfg.sync = !strcmp(sync, "tag")       ? NET_SYNC_TAGS
               : !strcmp(sync, "channel") ? CH_SYNC
                                          : NET_SYNC_BLKS;
    cfg.algorithm = !strcmp(alg, "first")    ? FIRST_FIT
                    : !strcmp(alg, "best")   ? BEST_FIT
                    : !strcmp(alg, "worst")  ? WORST_FIT
                    : !strcmp(alg, "random") ? RANDOM_FIT
                                             : NEXT_FIT;
    cfg.unit_size = 8;
    return cfg;
}

/* One end of a channel from src to dst; the producer is src. */
static rch_t open_channel(rmalloc_config_t cfg, int src, int dst, unsigned ctx, size_t capacity)
{
    rch_t ch = NULL;
    int rc;

    cfg.peer = (me == src) ? dst : src;
    cfg.context = ctx;
    cfg.alloc_size = capacity;
    cfg.rdma_active = (cfg.op != RDMA_GET) ? (me == src) : (me == dst);
    rc = rpipe(&ch, &cfg);
    if (rc != R_SUCCESS) {
        FAIL("rpipe(%d -> %d, ctx %u): %s", src, dst, ctx, rstrerror(rc));
    }
    return ch;
}

/* Block mode places a message of a cache line or more (user header
 * included) on a line of its own, at the same place on both ends. */
static void check_line_start(rch_t ch, long i, const raddr_t *d, const void *hdr)
{
    if (ch->cfg.sync == NET_SYNC_BLKS && ch->cfg.unit_size <= 16 && !(d->flags & RPIPE_DESC_SLOT) &&
        d->payload + RPIPE_UHDR_BYTES >= RPIPE_CACHE_LINE &&
        (uintptr_t)hdr % RPIPE_CACHE_LINE != 0) {
        FAIL("block-mode message %ld of %llu bytes starts at line offset %u", i,
             (unsigned long long)d->payload, (unsigned)((uintptr_t)hdr % RPIPE_CACHE_LINE));
    }
}

static void send_one(rch_t ch, int dst, int ctx, long i, size_t max)
{
    size_t size = msg_size(me, dst, ctx, i, max);
    raddr_t d = rmalloc(ch, size);
    unsigned char *p = rmem(ch, d);
    uint64_t *hdr;

    if (p == NULL) {
        FAIL("rmalloc of %zu bytes (message %ld) failed", size, i);
        return;
    }
    for (size_t k = 0; k < size; k++) {
        p[k] = msg_byte(me, i, k);
    }
    hdr = network_header(ch, d);
    check_line_start(ch, i, &d, hdr);
    *hdr = (uint64_t)i; /* immediate data: the sequence number */
    if (rwrite(ch, d) != R_SUCCESS) {
        FAIL("rwrite of message %ld failed", i);
    }
}

static void check_message(int src, int ctx, long i, const raddr_t *d, const unsigned char *p,
                          size_t expect, const void *hdr)
{
    uint64_t seq;

    memcpy(&seq, hdr, sizeof(seq));
    if (d->payload != expect) {
        FAIL("message %ld from %d ctx %d has %llu bytes, expected %zu", i, src, ctx,
             (unsigned long long)d->payload, expect);
        return;
    }
    if (seq != (uint64_t)i) {
        FAIL("message %ld from %d carries sequence %llu", i, src, (unsigned long long)seq);
    }
    for (size_t k = 0; k < expect; k++) {
        if (p[k] != msg_byte(src, i, k)) {
            FAIL("message %ld from %d byte %zu is %u, expected %u", i, src, k, p[k],
                 msg_byte(src, i, k));
            return;
        }
    }
}

static void recv_one(rch_t ch, int src, int ctx, long i, size_t max, raddr_t *d_p)
{
    size_t expect = msg_size(src, me, ctx, i, max);
    void *p;
    int rc = rread(ch, d_p, &p, expect);

    if (rc != R_SUCCESS) {
        FAIL("rread of message %ld: %s", i, rstrerror(rc));
        *d_p = RADDR_NULL;
        return;
    }
    check_line_start(ch, i, d_p, network_header(ch, *d_p));
    check_message(src, ctx, i, d_p, p, expect, network_header(ch, *d_p));
}

/* max message 96 bytes in a 256-byte channel: a sync every few messages */
#define MAX_MSG 96
#define TINY    256

static void mode_stream(rmalloc_config_t cfg, long count, int hold)
{
    int partner = me ^ 1;
    rch_t ch;

    if (partner >= npes) {
        return;
    }
    ch = open_channel(cfg, me & ~1, me | 1, 0, hold ? 1024 : TINY);
    if (ch == NULL) {
        return;
    }
    if ((me & 1) == 0) {
        for (long i = 0; i < count; i++) {
            send_one(ch, partner, 0, i, MAX_MSG);
        }
    } else {
        raddr_t held[8];
        int nheld = 0;
        uint64_t s = 12345 + (uint64_t)me;

        for (long i = 0; i < count; i++) {
            recv_one(ch, partner, 0, i, MAX_MSG, &held[nheld++]);
            if (!hold || nheld == 8 || i == count - 1) {
                /* free in a random order (in order when not holding) */
                while (nheld > 0) {
                    int k = hold ? (int)(rng_next(&s) % (uint64_t)nheld) : 0;
                    if (!raddr_is_null(held[k]) && rfree(ch, held[k]) != R_SUCCESS) {
                        FAIL("rfree of a held message failed");
                    }
                    held[k] = held[--nheld];
                }
            }
        }
    }
    network_barrier();
    rpipe_close(ch);
}

/* Messages written in another order than allocated: the producer takes
 * 1-3 allocations, then writes them last first. They must arrive in write
 * order (a reader that takes a message at its next-fit place without its
 * tag must not take the first allocation before the ones written earlier).
 * First all messages have one size (the reader's guesses are right), then
 * sizes vary. Message n (write order) has the size and bytes of message n. */
static void mode_reorder(rmalloc_config_t cfg, long count)
{
    int partner = me ^ 1;
    rch_t ch;

    if (partner >= npes) {
        return;
    }
    ch = open_channel(cfg, me & ~1, me | 1, 0, TINY);
    if (ch == NULL) {
        return;
    }
    for (long i = 0; i < count;) {
        size_t max = (i < count / 2) ? 1 : MAX_MSG;
        long batch = 1 + i % 3;

        if (batch > count - i) {
            batch = count - i;
        }
        if ((me & 1) == 0) {
            raddr_t d[3];

            for (long j = 0; j < batch; j++) { /* d[j] will be written as message i+batch-1-j */
                d[j] = rmalloc(ch, msg_size(me, partner, 0, i + batch - 1 - j, max));
            }
            for (long j = batch - 1; j >= 0; j--) {
                long n = i + batch - 1 - j;
                unsigned char *p = rmem(ch, d[j]);
                uint64_t *hdr = network_header(ch, d[j]);

                if (p == NULL || hdr == NULL) {
                    FAIL("rmalloc for message %ld failed", n);
                    break;
                }
                for (size_t k = 0; k < msg_size(me, partner, 0, n, max); k++) {
                    p[k] = msg_byte(me, n, k);
                }
                *hdr = (uint64_t)n;
                if (rwrite(ch, d[j]) != R_SUCCESS) {
                    FAIL("rwrite of message %ld failed", n);
                }
            }
        } else {
            for (long j = 0; j < batch; j++) {
                raddr_t d;
                recv_one(ch, partner, 0, i + j, max, &d);
                if (!raddr_is_null(d) && rfree(ch, d) != R_SUCCESS) {
                    FAIL("rfree of message %ld failed", i + j);
                }
            }
        }
        i += batch;
    }
    network_barrier();
    rpipe_close(ch);
}

/* Messages of 256 bytes (with header and flag) fill the channel's region;
 * then a small one wraps onto the first one's bytes, so its flag word
 * holds what the first message carried there until it is written. The
 * first message carries a flag of the small one's place and size but
 * another sequence number (what a stale flag left behind looks like). The
 * reader must wait for the real one. */
static void mode_stale(rmalloc_config_t cfg)
{
    /* SMALL: the smallest message the region takes (smaller ones use the
     * slots, whose flags carry a sequence that never wraps) */
    enum { CAP = 256, BIG = CAP - 2 * 8, SMALL = RPIPE_SLOT_PAYLOAD + 8 };
    rch_t ch;
    raddr_t d;
    unsigned char *p;
    long token = 0, fill;

    if (npes != 2 || cfg.sync != NET_SYNC_BLKS) {
        FAIL("stale runs on 2 PEs in block mode");
        return;
    }
    ch = open_channel(cfg, 0, 1, 0, CAP);
    if (ch == NULL) {
        return;
    }
    fill = (long)(ch->region_bytes / CAP);
    if (ch->region_bytes % CAP != 0) {
        FAIL("region of %llu bytes is not a multiple of %d", (unsigned long long)ch->region_bytes,
             CAP);
        return;
    }
    if (me == 0) {
        raddr_t next = {.start = 0,
                        .end = (SMALL + 2 * 8) / 8,
                        .payload = SMALL + RPIPE_UHDR_BYTES,
                        .unit_shift = 3}; /* where the small message will be */

        for (long i = 0; i < fill; i++) {
            d = rmalloc(ch, BIG);
            p = rmem(ch, d);
            if (p == NULL || d.start != (uint64_t)i * CAP / 8) {
                FAIL("message %ld is not at byte %ld of the channel", i, i * CAP);
                return;
            }
            memset(p, 0x5a, BIG);
            if (i == 0) { /* the small message is the ring's entry `fill`, not 7 */
                uint64_t forged = rpipe_flag_value(ch, &next, SMALL, 7);
                memcpy(p + rpipe_flag_offset(&next) - RPIPE_UHDR_BYTES, &forged, 8);
            }
            EXPECT_RC(rwrite(ch, d), R_SUCCESS);
        }
        EXPECT_RC(network_recv(1, &token, sizeof(token)), R_SUCCESS); /* all freed */
        d = rmalloc(ch, SMALL);
        if (raddr_is_null(d) || d.start != 0 || d.end != next.end) {
            FAIL("the small message did not wrap onto the first one ([%llu, %llu))",
                 (unsigned long long)d.start, (unsigned long long)d.end);
        }
        EXPECT_RC(network_send(1, &token, sizeof(token)), R_SUCCESS);
        EXPECT_RC(network_recv(1, &token, sizeof(token)), R_SUCCESS); /* polled */
        p = rmem(ch, d);
        if (p != NULL) {
            for (size_t k = 0; k < SMALL; k++) p[k] = msg_byte(0, 2, k);
            EXPECT_RC(rwrite(ch, d), R_SUCCESS);
        }
    } else {
        void *m;

        for (long i = 0; i < fill; i++) {
            EXPECT_RC(rread(ch, &d, &m, BIG), R_SUCCESS);
            if (d.payload != BIG)
                FAIL("message %ld has %llu bytes", i, (unsigned long long)d.payload);
            EXPECT_RC(rfree(ch, d), R_SUCCESS);
        }
        EXPECT_RC(network_send(0, &token, sizeof(token)), R_SUCCESS);
        EXPECT_RC(network_recv(0, &token, sizeof(token)), R_SUCCESS); /* allocated */
        for (int k = 0; k < 100; k++) {
            int rc = rread_nb(ch, &d, &m, SMALL);
            if (rc != R_PENDING) {
                FAIL("rread_nb took the stale flag: %s", rstrerror(rc));
                break;
            }
        }
        EXPECT_RC(network_send(0, &token, sizeof(token)), R_SUCCESS);
        EXPECT_RC(rread(ch, &d, &m, SMALL), R_SUCCESS);
        p = m;
        if (d.payload != SMALL) {
            FAIL("the small message has %llu bytes", (unsigned long long)d.payload);
        } else {
            for (size_t k = 0; k < SMALL; k++) {
                if (p[k] != msg_byte(0, 2, k)) {
                    FAIL("the small message's byte %zu is %u", k, p[k]);
                    break;
                }
            }
        }
        EXPECT_RC(rfree(ch, d), R_SUCCESS);
    }
    network_barrier();
    rpipe_close(ch);
}

static void mode_channels(rmalloc_config_t cfg, long count)
{
    enum { NCH = 8 };
    rch_t ch[NCH];

    if (me > 1) {
        return;
    }
    for (int c = 0; c < NCH; c++) {
        /* odd contexts flow 1 -> 0, even ones 0 -> 1; opened in opposite
         * orders on the two ranks: lazy creation must not care */
        int cc = me == 0 ? c : NCH - 1 - c;
        ch[cc] = open_channel(cfg, cc & 1, 1 - (cc & 1), (unsigned)cc, TINY);
    }
    for (long i = 0; i < count; i++) {
        for (int c = 0; c < NCH; c++) {
            int src = c & 1;
            raddr_t d;
            if (ch[c] == NULL) continue;
            if (me == src) {
                send_one(ch[c], 1 - src, c, i, MAX_MSG);
            } else {
                recv_one(ch[c], src, c, i, MAX_MSG, &d);
                if (!raddr_is_null(d)) rfree(ch[c], d);
            }
        }
    }
    for (int c = 0; c < NCH; c++) {
        if (ch[c] != NULL) rpipe_close(ch[c]);
    }
}

static void mode_alltoall(rmalloc_config_t cfg, long count)
{
    rch_t *out = calloc((size_t)npes, sizeof(rch_t)), *in = calloc((size_t)npes, sizeof(rch_t));
    long *sent = calloc((size_t)npes, sizeof(long)), *got = calloc((size_t)npes, sizeof(long));
    long remaining = count * (npes - 1) * 2;

    for (int p = 0; p < npes; p++) {
        if (p == me) continue;
        out[p] = open_channel(cfg, me, p, 0, TINY);
        in[p] = open_channel(cfg, p, me, 0, TINY);
    }
    /* Interleave non-blocking sends and receives so nobody waits on a full
     * channel while its peer waits on another. */
    while (remaining > 0 && errors == 0) {
        for (int p = 0; p < npes; p++) {
            if (p == me) continue;
            if (sent[p] < count) {
                size_t size = msg_size(me, p, 0, sent[p], MAX_MSG);
                raddr_t d;
                int rc = rmalloc_nb(out[p], size, &d);
                if (rc == R_SUCCESS) {
                    unsigned char *m = rmem(out[p], d);
                    uint64_t *hdr = network_header(out[p], d);
                    for (size_t k = 0; k < size; k++) m[k] = msg_byte(me, sent[p], k);
                    *hdr = (uint64_t)sent[p];
                    if (rwrite(out[p], d) != R_SUCCESS) FAIL("rwrite to %d", p);
                    sent[p]++;
                    remaining--;
                } else if (rc != R_PENDING) {
                    FAIL("rmalloc_nb to %d: %s", p, rstrerror(rc));
                }
            }
            if (got[p] < count) {
                size_t expect = msg_size(p, me, 0, got[p], MAX_MSG);
                raddr_t d;
                void *m;
                int rc = rread_nb(in[p], &d, &m, expect);
                if (rc == R_SUCCESS) {
                    check_message(p, 0, got[p], &d, m, expect, network_header(in[p], d));
                    rfree(in[p], d);
                    got[p]++;
                    remaining--;
                } else if (rc != R_PENDING) {
                    FAIL("rread_nb from %d: %s", p, rstrerror(rc));
                }
            }
        }
    }
    network_barrier();
    for (int p = 0; p < npes; p++) {
        if (out[p]) rpipe_close(out[p]);
        if (in[p]) rpipe_close(in[p]);
    }
    free(out);
    free(in);
    free(sent);
    free(got);
}

/* Bad input gets an error code, never a crash or a hang (2 PEs). */
/* Small-message slots (2 PEs, PE 0 -> PE 1). Round 1: as many small
 * messages as there are slots, all held by the reader; the next small one
 * waits (block) or goes to the region (tag/channel); the held ones are
 * freed in a seeded random order. Round 2 (tag/channel): a small message
 * allocated while another is unwritten goes to the region, and the two
 * written in reverse order arrive in write order. Round 3: count messages
 * of 1..96 bytes, a slot or the region by size. Misuse: a slot freed twice,
 * written twice (tag/channel), a forged slot descriptor. Last: ends that
 * disagree on RMB_RPIPE_SLOTS (slotswide: on slot_payload), and bad values
 * of it and of RMB_RPIPE_PREFETCH, are refused (bad slot_payload: misuse). slotswide
 * runs it all with slot_payload 200 (slots of four lines) and 64-byte units. */
/* Receives message i of exactly size bytes from PE 0 (context 3). */
static void recv_exact(rch_t ch, long i, size_t size, raddr_t *d_p)
{
    void *p;
    int rc = rread(ch, d_p, &p, size);

    if (rc != R_SUCCESS) {
        FAIL("rread of message %ld: %s", i, rstrerror(rc));
        *d_p = RADDR_NULL;
        return;
    }
    check_message(0, 3, i, d_p, p, size, network_header(ch, *d_p));
}

static void mode_slots(rmalloc_config_t cfg, long count, size_t slot_payload)
{
    enum { CAP = 1024 };
    int block = cfg.sync == NET_SYNC_BLKS, on;
    size_t full, big;
    long token = 0, n = 0, i = 0;
    uint64_t rng = 0x51075107u;
    raddr_t held[RPIPE_SLOTS_MAX], d;
    rch_t ch;
    void *p;

    if (npes != 2) {
        FAIL("slots runs on 2 PEs");
        return;
    }
    cfg.slot_payload = slot_payload;
    if (slot_payload != 0) {
        cfg.unit_size = RPIPE_CACHE_LINE; /* the largest unit slots take */
    }
    ch = open_channel(cfg, 0, 1, 3, CAP);
    if (ch == NULL) {
        return;
    }
    full = ch->slot_payload; /* the largest message a slot holds */
    big = 2 * full;          /* round 3's sizes: slots and region */
    if (full < (slot_payload ? slot_payload : RPIPE_SLOT_PAYLOAD) || full > RSLOT_PAYLOAD_MAX) {
        FAIL("slot_payload %zu gave slots of %zu bytes", slot_payload, full);
    }
    if (me == 0) {
        send_one(ch, 1, 3, n++, 8); /* connects: slots_on is known now */
    } else {
        recv_one(ch, 0, 3, i++, 8, &held[0]);
    }
    /* GET across the network has none: its reader would poll the peer */
    on = ch->slots_on;
    if (!on && (cfg.op == RDMA_PUT || ch->peer_region != NULL)) {
        FAIL("a 1 KiB channel has no slots here (nslots %u)", ch->nslots);
    }
    if (me == 0 && on) {
        /* round 1: fill the slots (one is in use already) */
        for (; n < (long)ch->nslots; n++) {
            send_one(ch, 1, 3, n, full);
        }
        EXPECT_RC(network_recv(1, &token, sizeof(token)), R_SUCCESS); /* all read, held */
        if (block) {
            EXPECT_RC(rmalloc_nb(ch, 8, &d), R_PENDING);
        } else {
            EXPECT_RC(rmalloc_nb(ch, 8, &d), R_SUCCESS);
            if (d.flags & RPIPE_DESC_SLOT) {
                FAIL("a small message took a slot while every slot was held");
            }
            EXPECT_RC(rfree(ch, d), R_ERR_STATE); /* the producer's end */
            for (int k = 0; k < 8; k++) ((unsigned char *)rmem(ch, d))[k] = msg_byte(0, n, k);
            *(uint64_t *)network_header(ch, d) = (uint64_t)n;
            EXPECT_RC(rwrite(ch, d), R_SUCCESS);
            n++;
        }
        EXPECT_RC(network_send(1, &token, sizeof(token)), R_SUCCESS);
        EXPECT_RC(network_recv(1, &token, sizeof(token)), R_SUCCESS); /* all freed */
        if (block) {
            send_one(ch, 1, 3, n++, full);
        }
        /* round 2 */
        if (!block) {
            raddr_t a = rmalloc(ch, 8), b = rmalloc(ch, 8);

            /* across the network a producer that found the slots full
             * looks again only a few messages later: a may be the region's */
            if ((a.flags & RPIPE_DESC_SLOT) && (b.flags & RPIPE_DESC_SLOT)) {
                FAIL("with a slot unwritten the next small message took a slot too");
            }
            if (!(a.flags & RPIPE_DESC_SLOT) && ch->peer_region != NULL) {
                FAIL("a small message went to the region with the slots free");
            }
            for (int k = 0; k < 8; k++) {
                ((unsigned char *)rmem(ch, b))[k] = msg_byte(0, n, k);
                ((unsigned char *)rmem(ch, a))[k] = msg_byte(0, n + 1, k);
            }
            *(uint64_t *)network_header(ch, b) = (uint64_t)n;
            *(uint64_t *)network_header(ch, a) = (uint64_t)n + 1;
            EXPECT_RC(rwrite(ch, b), R_SUCCESS);
            EXPECT_RC(rwrite(ch, a), R_SUCCESS);
            if (a.flags & RPIPE_DESC_SLOT) {
                EXPECT_RC(rwrite(ch, a), R_ERR_INVALID); /* written already */
            }
            n += 2;
        }
    } else if (on) {
        for (; i < (long)ch->nslots; i++) {
            recv_exact(ch, i, msg_size(0, 1, 3, i, full), &held[i]);
            if (raddr_is_null(held[i])) {
                return;
            }
        }
        EXPECT_RC(network_send(0, &token, sizeof(token)), R_SUCCESS);
        EXPECT_RC(network_recv(0, &token, sizeof(token)), R_SUCCESS);
        if (!block) { /* the region's message is next */
            recv_exact(ch, i++, 8, &d);
            EXPECT_RC(rfree(ch, d), R_SUCCESS);
        }
        for (long k = (long)ch->nslots - 1; k > 0; k--) { /* a seeded random order */
            long j = (long)(rng_next(&rng) % (uint64_t)(k + 1));
            raddr_t t = held[k];
            held[k] = held[j];
            held[j] = t;
        }
        for (long k = 0; k < (long)ch->nslots; k++) {
            EXPECT_RC(rfree(ch, held[k]), R_SUCCESS);
        }
        EXPECT_RC(rfree(ch, held[0]), R_ERR_INVALID); /* freed twice */
        EXPECT_RC(network_send(0, &token, sizeof(token)), R_SUCCESS);
        if (block) {
            recv_exact(ch, i, msg_size(0, 1, 3, i, full), &d);
            i++;
            EXPECT_RC(rfree(ch, d), R_SUCCESS);
        } else {
            for (int k = 0; k < 2; k++, i++) {
                recv_exact(ch, i, 8, &d);
                EXPECT_RC(rfree(ch, d), R_SUCCESS);
            }
        }
    } else if (me == 1) {
        EXPECT_RC(rfree(ch, held[0]), R_SUCCESS);
    }
    /* round 3: a slot or the region by size */
    for (long k = 0; k < count; k++) {
        if (me == 0) {
            send_one(ch, 1, 3, n++, big);
            continue;
        }
        recv_one(ch, 0, 3, i, big, &d);
        if (!raddr_is_null(d)) {
            if (on && block && (d.payload <= full) != !!(d.flags & RPIPE_DESC_SLOT)) {
                FAIL("block message %ld of %llu bytes: slot %d", i, (unsigned long long)d.payload,
                     !!(d.flags & RPIPE_DESC_SLOT));
            }
            EXPECT_RC(rfree(ch, d), R_SUCCESS);
        }
        i++;
    }
    if (me == 0 && on) { /* misuse: a slot the producer never allocated */
        d = rmalloc(ch, 8);
        d.block += 5;
        d.start =
            ch->slot_start0 + ch->nslots * (ch->slot_bytes >> ch->unit_shift); /* past the last */
        if (rmem(ch, d) != NULL) {
            FAIL("rmem gave a pointer for a slot outside the channel");
        }
        EXPECT_RC(rwrite(ch, d), R_ERR_INVALID);
    }
    network_barrier();
    rpipe_close(ch);

    /* the ends disagree on the slots (their number, or their size with
     * slot_payload): refused on both, with a message */
    EXPECT_RC(rexit(), R_SUCCESS);
    if (me == 1 && slot_payload == 0) {
        setenv("RMB_RPIPE_SLOTS", "8", 1);
    } else if (me == 1) {
        cfg.slot_payload = slot_payload + 50; /* as many slots, of 5 lines */
    }
    EXPECT_RC(rinit(NULL, NULL), R_SUCCESS);
    ch = open_channel(cfg, 0, 1, 4, CAP);
    if (ch != NULL) {
        if (me == 0) {
            EXPECT_RC(rmalloc_nb(ch, 8, &d), R_ERR_INVALID);
        } else {
            EXPECT_RC(rread_nb(ch, &d, &p, 8), R_ERR_INVALID);
        }
    }
    EXPECT_RC(rexit(), R_SUCCESS);
    setenv("RMB_RPIPE_SLOTS", "3", 1);
    EXPECT_RC(rinit(NULL, NULL), R_ERR_INVALID);
    unsetenv("RMB_RPIPE_SLOTS");
    setenv("RMB_RPIPE_PREFETCH", "-1", 1);
    EXPECT_RC(rinit(NULL, NULL), R_ERR_INVALID);
    setenv("RMB_RPIPE_PREFETCH", "16 lines", 1);
    EXPECT_RC(rinit(NULL, NULL), R_ERR_INVALID);
    unsetenv("RMB_RPIPE_PREFETCH");
    EXPECT_RC(rinit(NULL, NULL), R_SUCCESS);
}

/* PE 0 writes a message of exactly size bytes, the bytes check_message
 * expects of message i. */
static void send_sized(rch_t ch, long i, size_t size, raddr_t *d_p)
{
    unsigned char *p = rmalloc_mem(ch, size, d_p);

    if (p == NULL) {
        FAIL("rmalloc of %zu bytes failed", size);
        return;
    }
    for (size_t k = 0; k < size; k++) {
        p[k] = msg_byte(0, i, k);
    }
    *(uint64_t *)network_header(ch, *d_p) = (uint64_t)i;
    EXPECT_RC(rwrite(ch, *d_p), R_SUCCESS);
}

/* Block mode places a message by the size each end gives, so ends that
 * disagree would leave the reader waiting for a flag written elsewhere:
 * rread fails with R_ERR_STATE instead, once it has waited a while. Larger
 * and smaller, and across a wrap both ways (the producer's message wraps
 * to the start and the reader's does not, and the reverse). Sizes above
 * the slots' (48 bytes) on both ends: a small message is another stream. */
static void block_size_mismatch(rmalloc_config_t base)
{
    static const size_t sizes[][2] = {{64, 56}, {56, 64}, {1000, 1600}, {600, 100}, {100, 600}};

    for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        int wrap = sizes[k][0] == 600 || sizes[k][1] == 600;
        rch_t ch = open_channel(base, 0, 1, 8 + k, 2048);
        raddr_t d;
        long i = 0;
        void *p;

        if (ch == NULL) {
            return;
        }
        /* agreed 200-byte messages until less than 512 bytes remain: 100
         * bytes still fit there, 600 wrap */
        while (wrap) {
            if (me == 0) {
                send_sized(ch, i, 200, &d);
            } else {
                recv_exact(ch, i, 200, &d);
                EXPECT_RC(rfree(ch, d), R_SUCCESS);
            }
            i++;
            if (raddr_is_null(d) ||
                ch->region_bytes - ((d.end << d.unit_shift) + 63) / 64 * 64 < 512) {
                break;
            }
        }
        if (me == 0) {
            send_sized(ch, i, sizes[k][0], &d);
        } else {
            int rc = rread(ch, &d, &p, sizes[k][1]);

            if (rc != R_ERR_STATE) {
                FAIL("block mode: rread of %zu bytes where %zu were written returned %d (%s), "
                     "expected R_ERR_STATE",
                     sizes[k][1], sizes[k][0], rc, rstrerror(rc));
            }
        }
        network_barrier();
        EXPECT_RC(rpipe_close(ch), R_SUCCESS);
    }
}

static void mode_misuse(rmalloc_config_t base)
{
    rmalloc_config_t cfg;
    rch_t ch, dup, mism, other;
    raddr_t d, bogus, theirs;
    void *p;

    if (me > 1) {
        return;
    }
    cfg = base;
    cfg.peer = me;
    EXPECT_RC(rpipe(&ch, &cfg), R_ERR_INVALID);
    cfg.peer = npes;
    EXPECT_RC(rpipe(&ch, &cfg), R_ERR_INVALID);
    cfg = base;
    cfg.peer = 1 - me;
    cfg.unit_size = 3;
    EXPECT_RC(rpipe(&ch, &cfg), R_ERR_INVALID);
    cfg.unit_size = 8;
    cfg.context = 300;
    EXPECT_RC(rpipe(&ch, &cfg), R_ERR_INVALID);
    cfg.context = 0;
    cfg.slot_payload = RSLOT_PAYLOAD_MAX + 1;
    EXPECT_RC(rpipe(&ch, &cfg), R_ERR_INVALID);
    cfg.slot_payload = 64; /* with units above a line, or atomic */
    cfg.unit_size = 128;
    EXPECT_RC(rpipe(&ch, &cfg), R_ERR_INVALID);
    cfg.unit_size = 8;
    cfg.op = RDMA_ATOMIC;
    EXPECT_RC(rpipe(&ch, &cfg), R_ERR_INVALID);
    cfg.op = base.op;
    cfg.slot_payload = 0;
    cfg.sync = NET_SYNC_BLKS;
    cfg.algorithm = BEST_FIT;
    EXPECT_RC(rpipe(&ch, &cfg), R_ERR_INVALID);
    cfg.algorithm = NEXT_FIT;
    cfg.op = RDMA_ATOMIC;
    cfg.atomic_type = 99;
    EXPECT_RC(rpipe(&ch, &cfg), R_ERR_INVALID);
    cfg.op = RDMA_PUT;
    cfg.atomic_type = RATOMIC_ADD;
    cfg.alloc_size = 0;
    EXPECT_RC(rpipe(&ch, &cfg), R_ERR_INVALID);
    EXPECT_RC(rpipe(NULL, &base), R_ERR_INVALID);

    ch = open_channel(base, 0, 1, 1, 1024);
    if (ch == NULL) return;
    cfg = base;
    cfg.peer = 1 - me;
    cfg.context = 1;
    cfg.alloc_size = 1024;
    cfg.rdma_active = (cfg.op == RDMA_PUT) ? (me == 0) : (me == 1);
    EXPECT_RC(rpipe(&dup, &cfg), R_ERR_EXISTS);
    if (me == 0) {
        EXPECT_RC(rread_nb(ch, &d, &p, 8), R_ERR_STATE); /* producer side */
        EXPECT_RC(rfree(ch, d), R_ERR_STATE);
        EXPECT_RC(rmalloc_nb(ch, 4096, &d), R_ERR_INVALID); /* larger than the channel */
        send_one(ch, 1, 1, 0, 64);
#ifdef RMB_ARG_CHECKS
        /* forged descriptors: outside the channel's memory, another
         * granularity, inverted bounds; rejected before any byte moves */
        raddr_t forged = (raddr_t){
            .start = 1ull << 40, .end = (1ull << 40) + 4, .id = 7, .payload = 8, .unit_shift = 3};
        EXPECT_RC(rwrite(ch, forged), R_ERR_INVALID);
        if (rmem(ch, forged) != NULL || network_header(ch, forged) != NULL) {
            FAIL("rmem/network_header gave a pointer for a descriptor outside the channel");
        }
        forged.start = 0;
        forged.end = 4;
        forged.unit_shift = 9;
        EXPECT_RC(rwrite(ch, forged), R_ERR_INVALID);
        forged.unit_shift = 3;
        forged.end = 0;
        EXPECT_RC(rwrite(ch, forged), R_ERR_INVALID);
        forged.end = 1;
        forged.payload = 64; /* payload larger than its units */
        EXPECT_RC(rwrite(ch, forged), R_ERR_INVALID);
#endif
    } else {
        EXPECT_RC(rmalloc_nb(ch, 8, &d), R_ERR_STATE); /* consumer side */
        EXPECT_RC(rwrite(ch, d), R_ERR_STATE);
        recv_one(ch, 0, 1, 0, 64, &d);
        bogus = d;
        bogus.id ^= 0x5a5a;
        EXPECT_RC(rfree(ch, bogus), R_ERR_INVALID); /* foreign descriptor */
        EXPECT_RC(rfree(ch, d), R_SUCCESS);
        EXPECT_RC(rfree(ch, d), R_ERR_INVALID); /* double free */
        EXPECT_RC(rfree(ch, RADDR_NULL), R_ERR_INVALID);
    }
    /* a live message of another channel is foreign to this one */
    other = open_channel(base, 0, 1, 3, 1024);
    if (other != NULL) {
        if (me == 0) {
            send_one(ch, 1, 1, 1, 64);
            send_one(other, 1, 3, 0, 64);
        } else {
            recv_one(ch, 0, 1, 1, 64, &d);
            recv_one(other, 0, 3, 0, 64, &theirs);
            EXPECT_RC(rfree(ch, theirs), R_ERR_INVALID);
            EXPECT_RC(rfree(other, d), R_ERR_INVALID);
            EXPECT_RC(rfree(ch, d), R_SUCCESS);
            EXPECT_RC(rfree(other, theirs), R_SUCCESS);
        }
        network_barrier(); /* both ends done before closing */
        EXPECT_RC(rpipe_close(other), R_SUCCESS);
    }
    /* The two ends disagree on the capacity: both see it on first use. */
    mism = open_channel(base, 0, 1, 2, me == 0 ? 1024 : 2048);
    if (mism != NULL) {
        if (me == 0)
            EXPECT_RC(rmalloc_nb(mism, 8, &d), R_ERR_INVALID);
        else
            EXPECT_RC(rread_nb(mism, &d, &p, 8), R_ERR_INVALID);
        rpipe_close(mism);
    }
    EXPECT_RC(rpipe_close(ch), R_SUCCESS);
    EXPECT_RC(network_send(npes, &d, 1), R_ERR_INVALID);
    /* where message memory is loads here: GET through the network reads
     * it from the producer unless pushed, and that reader is not told */
    if (base.sync == NET_SYNC_BLKS) {
        block_size_mismatch(base);
    }
}

/* RDMA_ATOMIC: PE 0 and PE 1 update each other's accumulator with every
 * operation; each message carries its operand in the user header and the
 * accumulator's value as of its update in the payload. */
static uint64_t atomic_operand(int type, long k)
{
    switch (type) {
    case RATOMIC_ADD:
        return (uint64_t)k + 1;
    case RATOMIC_XOR:
        return (uint64_t)k * 0x9e3779b97f4a7c15ull;
    case RATOMIC_OR:
        return 1ull << (k % 64);
    case RATOMIC_AND:
        return ~(1ull << (k % 64));
    default:
        return (uint64_t)k + 1;
    }
}

static uint64_t atomic_apply(int type, uint64_t acc, uint64_t v)
{
    switch (type) {
    case RATOMIC_ADD:
        return acc + v;
    case RATOMIC_XOR:
        return acc ^ v;
    case RATOMIC_OR:
        return acc | v;
    case RATOMIC_AND:
        return acc & v;
    default:
        return v;
    }
}

static void mode_atomic(rmalloc_config_t base, long count)
{
    rch_t out = NULL, in = NULL;

    for (int type = RATOMIC_ADD; type <= RATOMIC_SET + 1; type++) {
        rmalloc_config_t cfg = base;
        uint64_t expect = type == RATOMIC_AND ? ~0ull : 0;
        raddr_t d;
        void *p;

        /* every PE, also those without a channel; an end is closed only
         * once its peer is done with it */
        network_barrier();
        if (out != NULL) rpipe_close(out);
        if (in != NULL) rpipe_close(in);
        out = in = NULL;
        if (me > 1 || npes < 2 || type > RATOMIC_SET) continue;
        cfg.op = RDMA_ATOMIC;
        cfg.atomic_type = (uint64_t)type;
        out = open_channel(cfg, me, 1 - me, 20 + (unsigned)type, 256);
        in = open_channel(cfg, 1 - me, me, 20 + (unsigned)type, 256);
        if (out == NULL || in == NULL) return;
        EXPECT_RC(rmalloc_nb(out, 4, &d), R_ERR_INVALID); /* one 8-byte operand only */
        for (long k = 0; k < count; k++) {
            uint64_t v = atomic_operand(type, k), value, operand;
            uint64_t *slot = rmalloc_mem(out, 8, &d);
            if (slot == NULL) {
                FAIL("rmalloc of an operand failed");
                return;
            }
            *slot = v;
            EXPECT_RC(rwrite(out, d), R_SUCCESS);
            EXPECT_RC(rread(in, &d, &p, 8), R_SUCCESS);
            memcpy(&operand, network_header(in, d), 8);
            memcpy(&value, p, 8);
            expect = atomic_apply(type, expect, v);
            if (operand != v || d.payload != 8) {
                FAIL("atomic type %d message %ld: operand %llx, want %llx", type, k,
                     (unsigned long long)operand, (unsigned long long)v);
            }
            /* the peer runs the same sequence, at most one update ahead */
            if (value != expect &&
                value != atomic_apply(type, expect, atomic_operand(type, k + 1))) {
                FAIL("atomic type %d message %ld: accumulator %llx, want %llx", type, k,
                     (unsigned long long)value, (unsigned long long)expect);
            }
            EXPECT_RC(rfree(in, d), R_SUCCESS);
        }
    }
}

/* Control messages: every PE sends 3 numbered messages to every other. */
static void mode_messages(void)
{
    for (int p = 0; p < npes; p++) {
        for (long k = 0; k < 3 && p != me; k++) {
            long v = me * 1000 + p * 10 + k;
            EXPECT_RC(network_send(p, &v, sizeof(v)), R_SUCCESS);
        }
    }
    for (int p = 0; p < npes; p++) {
        for (long k = 0; k < 3 && p != me; k++) {
            long v = -1;
            EXPECT_RC(network_recv(p, &v, sizeof(v)), R_SUCCESS);
            if (v != p * 1000 + me * 10 + k) FAIL("message %ld from %d is %ld", k, p, v);
        }
    }
}

/* GET channels whose ends do not map each other's memory: the producer
 * pushes messages into the consumer's mirror where the consumer's
 * RMB_RPIPE_GET_PUSH says so (the producer's value does not matter), else
 * the consumer reads them; all four combinations carry every message
 * intact, in whichever sync mode is given. A bad value is refused. */
static void mode_getpush(rmalloc_config_t cfg, long count)
{
    static const char *const yes_no[] = {"yes", "no"};

    if (npes != 2 || cfg.op != RDMA_GET) {
        FAIL("getpush runs GET on 2 PEs");
        return;
    }
    for (int c = 0; c < 4; c++) {
        int consumer_push = (c & 1) == 0; /* PE 1's value */
        rch_t ch;

        EXPECT_RC(rexit(), R_SUCCESS);
        setenv("RMB_RPIPE_GET_PUSH", yes_no[me == 1 ? c & 1 : c >> 1], 1);
        EXPECT_RC(rinit(NULL, NULL), R_SUCCESS);
        ch = open_channel(cfg, 0, 1, 5, TINY);
        if (ch == NULL) {
            return;
        }
        for (long i = 0; i < count; i++) {
            raddr_t d;

            if (me == 0) {
                send_one(ch, 1, 5, i, MAX_MSG);
            } else {
                recv_one(ch, 0, 5, i, MAX_MSG, &d);
                if (!raddr_is_null(d) && rfree(ch, d) != R_SUCCESS) {
                    FAIL("rfree of message %ld failed", i);
                }
            }
        }
        if (me == 1) { /* the producer's region mapped here: nothing to push */
            long pushed = ch->pushed_get, want = ch->peer_region == NULL && consumer_push;

            if (pushed != want) {
                FAIL("consumer: messages %spushed with its RMB_RPIPE_GET_PUSH=%s (memory %s)",
                     pushed ? "" : "not ", yes_no[c & 1],
                     ch->peer_region ? "mapped" : "not mapped");
            }
            EXPECT_RC(network_send(0, &pushed, sizeof(pushed)), R_SUCCESS);
        } else {
            long pushed = -1;

            EXPECT_RC(network_recv(1, &pushed, sizeof(pushed)), R_SUCCESS);
            if (pushed != ch->pushed_get) {
                FAIL("producer pushes: %d, consumer expects pushed messages: %ld", ch->pushed_get,
                     pushed);
            }
        }
        network_barrier();
        rpipe_close(ch);
    }
    EXPECT_RC(rexit(), R_SUCCESS);
    setenv("RMB_RPIPE_GET_PUSH", "maybe", 1);
    EXPECT_RC(rinit(NULL, NULL), R_ERR_INVALID);
    unsetenv("RMB_RPIPE_GET_PUSH");
    EXPECT_RC(rinit(NULL, NULL), R_SUCCESS);
}

/* The writer's posts beyond its queue stay deferred until the reader
 * takes tags; the barrier must send them, or the reader waits forever:
 * whether it reads before its barrier or after (late). */
static void mode_burst(rmalloc_config_t cfg, long count, int late)
{
    int partner = me ^ 1;
    rch_t ch = NULL;

    if (partner < npes) {
        cfg.queue_len = 64;
        /* up to 8 bytes of payload and the header: one 16-byte unit each */
        ch = open_channel(cfg, me & ~1, me | 1, 0, (size_t)count * 32 + 4096);
    }
    if (ch != NULL && (me & 1) == 0) {
        for (long i = 0; i < count; i++) {
            send_one(ch, partner, 0, i, 8);
        }
    } else if (ch != NULL) {
        struct timespec pause = {0, 100 * 1000 * 1000}; /* the writer reaches its barrier */

        nanosleep(&pause, NULL);
        if (late) {
            EXPECT_RC(network_barrier(), R_SUCCESS);
        }
        for (long i = 0; i < count; i++) {
            raddr_t d;

            recv_one(ch, partner, 0, i, 8, &d);
            if (!raddr_is_null(d) && rfree(ch, d) != R_SUCCESS) {
                FAIL("rfree of message %ld failed", i);
            }
        }
    }
    if (!late || ch == NULL || (me & 1) == 0) {
        EXPECT_RC(network_barrier(), R_SUCCESS);
    }
    if (ch != NULL && (me & 1) == 0 && ch->deferred_n != 0) {
        FAIL("%u posts still deferred after the barrier", ch->deferred_n);
    }
    network_barrier(); /* the reader is done before the writer closes */
    if (ch != NULL) {
        rpipe_close(ch);
    }
}

/* Both ends of a pair write COUNT small messages to each other (a channel
 * each way, sync queues of 64) and pass a barrier: both hold posts back and
 * both take the other's ahead. Then each reads them all and frees them
 * newest first (out of order: each a free record, far more than the queue
 * holds), and a second barrier settles those frees. Twice: the second burst
 * needs the memory the first one's frees gave back. */
static void mode_burstboth(rmalloc_config_t cfg, long count)
{
    int partner = me ^ 1;
    rch_t out = NULL, in = NULL;
    raddr_t *held = NULL;

    if (partner < npes) {
        cfg.queue_len = 64;
        out = open_channel(cfg, me, partner, 0, (size_t)count * 32 + 4096);
        in = open_channel(cfg, partner, me, 0, (size_t)count * 32 + 4096);
        held = calloc((size_t)count, sizeof(*held));
    }
    for (int round = 0; round < 2; round++) {
        for (long i = 0; out != NULL && i < count; i++) {
            send_one(out, partner, 0, i, 8);
        }
        EXPECT_RC(network_barrier(), R_SUCCESS);
        if (out != NULL && out->deferred_n != 0) {
            FAIL("round %d: %u posts still deferred after the barrier", round, out->deferred_n);
        }
        for (long i = 0; in != NULL && held != NULL && i < count; i++) {
            recv_one(in, partner, 0, i, 8, &held[i]);
        }
        for (long i = count - 1; in != NULL && held != NULL && i >= 0; i--) {
            if (!raddr_is_null(held[i]) && rfree(in, held[i]) != R_SUCCESS) {
                FAIL("round %d: rfree of message %ld failed", round, i);
            }
        }
        EXPECT_RC(network_barrier(), R_SUCCESS);
        if (in != NULL && in->deferred_n != 0) {
            FAIL("round %d: %u frees still deferred after the barrier", round, in->deferred_n);
        }
    }
    network_barrier(); /* both ends are done before either closes */
    free(held);
    if (out != NULL) {
        rpipe_close(out);
        rpipe_close(in);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "stream";
    const char *op = argc > 2 ? argv[2] : "put";
    const char *sync = argc > 3 ? argv[3] : "block";
    const char *alg = argc > 4 ? argv[4] : "next";
    long count = argc > 5 ? atol(argv[5]) : 2000;
    rmalloc_config_t cfg;
    int total;

    if (rinit(&me, &npes) != R_SUCCESS) {
        fprintf(stderr, "mp_rpipe: rinit failed\n");
        return 1;
    }
    cfg = make_config(op, sync, alg);
    if (!strcmp(mode, "stream"))
        mode_stream(cfg, count, 0);
    else if (!strcmp(mode, "irregular"))
        mode_stream(cfg, count, 1);
    else if (!strcmp(mode, "reorder"))
        mode_reorder(cfg, count);
    else if (!strcmp(mode, "channels"))
        mode_channels(cfg, count);
    else if (!strcmp(mode, "alltoall"))
        mode_alltoall(cfg, count);
    else if (!strcmp(mode, "misuse"))
        mode_misuse(cfg);
    else if (!strcmp(mode, "stale"))
        mode_stale(cfg);
    else if (!strcmp(mode, "messages"))
        mode_messages();
    else if (!strcmp(mode, "slots"))
        mode_slots(cfg, count, 0);
    else if (!strcmp(mode, "slotswide"))
        mode_slots(cfg, count, 200);
    else if (!strcmp(mode, "atomic"))
        mode_atomic(cfg, count);
    else if (!strcmp(mode, "getpush"))
        mode_getpush(cfg, count);
    else if (!strcmp(mode, "burst"))
        mode_burst(cfg, count, 0);
    else if (!strcmp(mode, "burstlate"))
        mode_burst(cfg, count, 1);
    else if (!strcmp(mode, "burstboth"))
        mode_burstboth(cfg, count);
    else {
        fprintf(stderr, "mp_rpipe: unknown mode %s\n", mode);
        errors++;
    }

    /* every PE learns whether anyone failed */
    {
        int *all = malloc(sizeof(int) * (size_t)npes);
        network_allgather(&errors, all, sizeof(int));
        total = 0;
        for (int p = 0; p < npes; p++) total += all[p];
        free(all);
    }
    if (me == 0) {
        printf("mp_rpipe %s %s %s %s x%ld on %d PEs: %s\n", mode, op, sync, alg, count, npes,
               total ? "FAILED" : "ok");
    }
    rexit();
    return total ? 1 : 0;
}
