/*
 * Sync protocols: each test runs for every protocol/heuristic/direction
 * combination it applies to (loop tests over pair_combo()), through the
 * in-memory transport.
 */
#include "tests/rmalloc/rmalloc_pair.h"
#include "rmalloc/rmalloc_order.h"

#include <check.h>
#include <stdlib.h>

#define UNIT 64

static rmalloc_sync_ep_t *P, *C;

static void setup_pair(pair_t *p, pair_combo_t c, uint64_t units, uint32_t qlen, double watermark,
                       unsigned retries, unsigned defer)
{
    rmalloc_sync_config_t cfg;
    pair_config(&cfg, c, units, UNIT, qlen);
    cfg.watermark = watermark;
    cfg.retries = retries;
    ck_assert_int_eq(pair_init(p, &cfg, defer, 0, 1), UTIL_OK);
    P = p->ep[PAIR_PRODUCER];
    C = p->ep[PAIR_CONSUMER];
}

/* Consumer side of one message: the descriptor must match the producer's. */
static raddr_t take(pair_t *p, const raddr_t *pd)
{
    raddr_t cd;
    util_status_t st;
    if (p->cfg.protocol == RMALLOC_SYNC_BLOCK)
        st = rmalloc_sync_accept(C, pd->payload, 0, &cd);
    else
        while ((st = rmalloc_sync_next(C, &cd)) == UTIL_IN_PROGRESS)
            ;
    ck_assert_int_eq(st, UTIL_OK);
    ck_assert_uint_eq(cd.start, pd->start);
    ck_assert_uint_eq(cd.end, pd->end);
    ck_assert_uint_eq(cd.payload, pd->payload);
    return cd;
}

static void pull_all(void)
{
    util_status_t st;
    while ((st = rmalloc_sync_pull(P)) == UTIL_IN_PROGRESS)
        ;
    ck_assert_int_eq(st, UTIL_OK);
}

static util_status_t alloc_wait(raddr_t *d, uint64_t payload)
{
    util_status_t st;
    while ((st = rmalloc_sync_alloc(P, payload, 0, d)) == UTIL_IN_PROGRESS)
        ;
    return st;
}

START_TEST(test_flow)
{
    pair_combo_t c = pair_combo(_i);
    pair_t p;
    raddr_t pd, cd[32];

    setup_pair(&p, c, 256, 8, RMALLOC_WATERMARK_FULL, 4, 0);
    int local_is_consumer = (c.direction == RMALLOC_SYNC_PUT);
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 32; i++) {
            uint64_t payload = 1 + (uint64_t)((i * 37 + round * 11) % 400);
            ck_assert_int_eq(alloc_wait(&pd, payload), UTIL_OK);
            ck_assert_int_eq(rmalloc_vmem_ptr(rmalloc_sync_vmem(P), &pd) != NULL,
                             !local_is_consumer);
            ck_assert_int_eq(rmalloc_sync_post(P, &pd), UTIL_OK);
            cd[i] = take(&p, &pd);
            ck_assert_int_eq(rmalloc_vmem_ptr(rmalloc_sync_vmem(C), &cd[i]) != NULL,
                             local_is_consumer);
            if (i % 4 == 3) /* keep the free queues from filling up */
                for (int k = i - 3; k <= i; k++)
                    ck_assert_int_eq(rmalloc_sync_free(C, &cd[k]), UTIL_OK);
            if (i % 8 == 7) pull_all();
        }
        pull_all();
        ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(C)), 0);
        ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), 0);
        ck_assert_int_eq(rmalloc_vmem_check(rmalloc_sync_vmem(P)), UTIL_OK);
        ck_assert_int_eq(rmalloc_vmem_check(rmalloc_sync_vmem(C)), UTIL_OK);
    }
    pair_fini(&p);
}
END_TEST

/* TAG, one side maps the other's buffer: the tags it loads come without
 * their checksum (the writer was told), the tags the other side copies with
 * one-sided reads keep it, and the flow works both ways. (Frees in reverse
 * order, so that they are tags, not counted.) */
START_TEST(test_one_view)
{
    pair_combo_t c = {RMALLOC_SYNC_TAG, RMALLOC_NEXT_FIT, RMALLOC_SYNC_PUT};
    pair_t p;
    raddr_t pd, cd[8];
    int loader = _i ? PAIR_PRODUCER : PAIR_CONSUMER; /* who maps the other */
    uint32_t check;

    setup_pair(&p, c, 256, 8, RMALLOC_WATERMARK_FULL, 4, 0);
    rmalloc_sync_set_peer_view(p.ep[loader], p.sbuf[1 - loader]);
    for (int round = 0; round < 12; round++) {
        for (int i = 0; i < 8; i++) {
            ck_assert_int_eq(alloc_wait(&pd, 40 + (uint64_t)i), UTIL_OK);
            ck_assert_int_eq(rmalloc_sync_post(P, &pd), UTIL_OK);
            cd[i] = take(&p, &pd);
        }
        for (int i = 7; i >= 0; i--) ck_assert_int_eq(rmalloc_sync_free(C, &cd[i]), UTIL_OK);
        pull_all();
        ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), 0);
    }
    /* tag 0 of each queue: its checksum word (after peer_block) */
    memcpy(&check, (uint8_t *)p.sbuf[1 - loader] + 64 + 36, sizeof(check));
    ck_assert_uint_eq(check, 0);
    memcpy(&check, (uint8_t *)p.sbuf[loader] + 64 + 36, sizeof(check));
    ck_assert_uint_ne(check, 0);
    pair_fini(&p);
}
END_TEST

/* TAG and CHANNEL: a full outbound queue pushes back until drained. */
START_TEST(test_queue_full)
{
    pair_combo_t c = pair_combo(_i);
    pair_t p;
    raddr_t pd[6], cd[6];
    rmalloc_sync_stats_t stats;

    if (c.protocol == RMALLOC_SYNC_BLOCK) return;
    setup_pair(&p, c, 256, 4, RMALLOC_WATERMARK_FULL, 4, 0);
    for (int i = 0; i < 5; i++) ck_assert_int_eq(alloc_wait(&pd[i], 100), UTIL_OK);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(rmalloc_sync_post(P, &pd[i]), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_post(P, &pd[4]), UTIL_ERR_NO_RESOURCE);
    rmalloc_sync_get_stats(P, &stats);
    ck_assert_uint_eq(stats.backpressure, 1);
    cd[0] = take(&p, &pd[0]);
    if (c.protocol == RMALLOC_SYNC_TAG) {
        /* a tag queue is reused only after the reader drained all of it */
        for (int i = 1; i < 4; i++) cd[i] = take(&p, &pd[i]);
        ck_assert_int_eq(rmalloc_sync_next(C, &cd[5]), UTIL_ERR_NO_RESOURCE);
        ck_assert_int_eq(rmalloc_sync_post(P, &pd[4]), UTIL_OK);
    } else {
        ck_assert_int_eq(rmalloc_sync_post(P, &pd[4]), UTIL_OK); /* one slot back */
        for (int i = 1; i < 4; i++) cd[i] = take(&p, &pd[i]);
    }
    cd[4] = take(&p, &pd[4]);
    /* the free direction: the 5th free is pushed back, nothing changes.
     * TAG: only frees out of order are tags (a free of the oldest live
     * message is counted), so message 0 is held until the end. */
    int tag = (c.protocol == RMALLOC_SYNC_TAG), last = 4 + tag;
    if (tag) {
        ck_assert_int_eq(alloc_wait(&pd[5], 100), UTIL_OK);
        ck_assert_int_eq(rmalloc_sync_post(P, &pd[5]), UTIL_OK);
        cd[5] = take(&p, &pd[5]);
    }
    for (int i = tag; i < last; i++) ck_assert_int_eq(rmalloc_sync_free(C, &cd[i]), UTIL_OK);
    uint64_t used = rmalloc_vmem_used_units(rmalloc_sync_vmem(C));
    ck_assert_int_eq(rmalloc_sync_free(C, &cd[last]), UTIL_ERR_NO_RESOURCE);
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(C)), used);
    pull_all();
    ck_assert_int_eq(rmalloc_sync_free(C, &cd[last]), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_free(C, &cd[last]), UTIL_ERR_INVALID); /* double free */
    if (tag) ck_assert_int_eq(rmalloc_sync_free(C, &cd[0]), UTIL_OK);    /* counted: never full */
    pull_all();
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), 0);
    pair_fini(&p);
}
END_TEST

/* TAG and CHANNEL: a consumer's pull takes what was posted ahead of next(),
 * so a full queue takes more while the reader reads nothing (rpipe's
 * barrier); next() then hands out every message in post order. BLOCK
 * consumers have nothing to take. */
START_TEST(test_take_ahead)
{
    pair_combo_t c = pair_combo(_i);
    pair_t p;
    raddr_t pd[10];
    util_status_t st;

    setup_pair(&p, c, 256, 4, RMALLOC_WATERMARK_FULL, 4, 0);
    if (c.protocol == RMALLOC_SYNC_BLOCK) {
        ck_assert_int_eq(rmalloc_sync_pull(C), UTIL_ERR_INVALID);
        pair_fini(&p);
        return;
    }
    for (int i = 0; i < 10; i++) ck_assert_int_eq(alloc_wait(&pd[i], 40), UTIL_OK);
    for (int i = 0; i < 4; i++) ck_assert_int_eq(rmalloc_sync_post(P, &pd[i]), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_post(P, &pd[4]), UTIL_ERR_NO_RESOURCE);
    for (int i = 4; i < 10; i += 2) {
        while ((st = rmalloc_sync_pull(C)) == UTIL_IN_PROGRESS)
            ;
        ck_assert_int_eq(st, UTIL_OK);
        ck_assert_int_eq(rmalloc_sync_post(P, &pd[i]), UTIL_OK);
        ck_assert_int_eq(rmalloc_sync_post(P, &pd[i + 1]), UTIL_OK);
    }
    for (int i = 0; i < 10; i++) take(&p, &pd[i]);
    pair_fini(&p);
}
END_TEST

/* The two handshake words: each side reads what the other told it, and
 * nothing it told itself. */
START_TEST(test_tell)
{
    pair_combo_t c = pair_combo(_i);
    pair_t p;

    setup_pair(&p, c, 256, 4, RMALLOC_WATERMARK_FULL, 4, 0);
    ck_assert_uint_eq(rmalloc_sync_told(C, RMALLOC_SYNC_WORD_HELD), 0);
    ck_assert_int_eq(rmalloc_sync_tell(P, RMALLOC_SYNC_WORD_HELD, 7), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_tell(C, RMALLOC_SYNC_WORD_ANSWER, 9), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_tell(C, RMALLOC_SYNC_WORD_HELD, 11), UTIL_OK);
    ck_assert_uint_eq(rmalloc_sync_told(C, RMALLOC_SYNC_WORD_HELD), 7);
    ck_assert_uint_eq(rmalloc_sync_told(P, RMALLOC_SYNC_WORD_ANSWER), 9);
    ck_assert_uint_eq(rmalloc_sync_told(P, RMALLOC_SYNC_WORD_HELD), 11);
    ck_assert_uint_eq(rmalloc_sync_told(C, RMALLOC_SYNC_WORD_ANSWER), 0);
    pair_fini(&p);
}
END_TEST

/* Deferred protocols: with FULL the producer syncs only when out of
 * memory; with HALF it pulls as soon as half the shadow is in use. */
START_TEST(test_watermark)
{
    pair_combo_t c = pair_combo(_i);
    pair_t p;
    raddr_t pd[16], cd[16];
    rmalloc_sync_stats_t stats;

    if (c.protocol == RMALLOC_SYNC_CHANNEL) return;
    for (int half = 0; half < 2; half++) {
        /* 10-unit messages (payload 632 + 8 header = 640 bytes) in 100 units */
        setup_pair(&p, c, 100, 64, half ? RMALLOC_WATERMARK_HALF : RMALLOC_WATERMARK_FULL, 4, 0);
        for (int i = 0; i < 4; i++) {
            ck_assert_int_eq(alloc_wait(&pd[i], 632), UTIL_OK);
            ck_assert_int_eq(rmalloc_sync_post(P, &pd[i]), UTIL_OK);
            cd[i] = take(&p, &pd[i]);
            ck_assert_int_eq(rmalloc_sync_free(C, &cd[i]), UTIL_OK);
        }
        rmalloc_sync_get_stats(P, &stats);
        ck_assert_uint_eq(stats.pulls, 0);
        ck_assert_int_eq(alloc_wait(&pd[4], 632), UTIL_OK); /* 40 units used */
        ck_assert_int_eq(alloc_wait(&pd[5], 632), UTIL_OK); /* 50: crosses HALF */
        ck_assert_int_eq(alloc_wait(&pd[6], 632), UTIL_OK);
        rmalloc_sync_get_stats(P, &stats);
        ck_assert_uint_eq(stats.pulls, half ? 1 : 0);
        ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), half ? 30 : 70);
        pair_fini(&p);
    }
}
END_TEST

/* Out of memory: retries bound the pulls; 0 retries never pulls. */
START_TEST(test_retries)
{
    pair_combo_t c = pair_combo(_i);
    pair_t p;
    raddr_t pd[16], extra;
    rmalloc_sync_stats_t stats;

    if (c.protocol == RMALLOC_SYNC_CHANNEL) return;
    for (unsigned retries = 0; retries < 3; retries += 2) {
        setup_pair(&p, c, 100, 64, RMALLOC_WATERMARK_FULL, retries, 0);
        for (int i = 0; i < 10; i++) ck_assert_int_eq(alloc_wait(&pd[i], 632), UTIL_OK);
        ck_assert_int_eq(alloc_wait(&extra, 632), UTIL_ERR_NO_RESOURCE);
        rmalloc_sync_get_stats(P, &stats);
        /* a pull that brings nothing ends the attempt */
        ck_assert_uint_eq(stats.pulls, retries ? 1 : 0);
        pair_fini(&p);
    }
}
END_TEST

/* BLOCK: out-of-order frees are released in allocation order only. */
START_TEST(test_block_out_of_order)
{
    pair_t p;
    raddr_t pd[3], cd[3], x;
    setup_pair(&p, pair_combo(_i), 90, 64, RMALLOC_WATERMARK_FULL, 4, 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(alloc_wait(&pd[i], 1912), UTIL_OK); /* 30 units */
        cd[i] = take(&p, &pd[i]);
    }
    ck_assert_int_eq(rmalloc_sync_free(C, &cd[2]), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_free(C, &cd[1]), UTIL_OK);
    ck_assert_int_eq(alloc_wait(&x, 1912), UTIL_ERR_NO_RESOURCE);
    ck_assert_int_eq(rmalloc_sync_free(C, &cd[0]), UTIL_OK);
    ck_assert_int_eq(alloc_wait(&x, 1912), UTIL_OK);
    ck_assert_uint_eq(x.start, 0);
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), 30);
    pair_fini(&p);
}
END_TEST

/* BLOCK: wrap-around with a dummy; the consumer mirrors it. */
START_TEST(test_block_wrap)
{
    pair_t p;
    raddr_t pd[3], cd[3];
    setup_pair(&p, pair_combo(_i), 100, 64, RMALLOC_WATERMARK_FULL, 4, 0);
    ck_assert_int_eq(alloc_wait(&pd[0], 40 * UNIT - 8), UTIL_OK);
    ck_assert_int_eq(alloc_wait(&pd[1], 40 * UNIT - 8), UTIL_OK);
    cd[0] = take(&p, &pd[0]);
    cd[1] = take(&p, &pd[1]);
    ck_assert_int_eq(rmalloc_sync_free(C, &cd[0]), UTIL_OK);
    ck_assert_int_eq(alloc_wait(&pd[2], 30 * UNIT - 8), UTIL_OK);
    ck_assert_uint_eq(pd[2].start, 0);
    ck_assert(pd[2].flags & RMALLOC_DESC_WRAPPED);
    ck_assert_uint_eq(pd[2].wrap_from, 80);
    cd[2] = take(&p, &pd[2]);
    ck_assert(cd[2].flags & RMALLOC_DESC_WRAPPED);
    ck_assert_uint_eq(cd[2].wrap_from, 80);
    ck_assert_int_eq(rmalloc_sync_free(C, &cd[1]), UTIL_OK); /* releases b + dummy */
    pull_all();
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), 30);
    ck_assert_int_eq(rmalloc_vmem_check(rmalloc_sync_vmem(P)), UTIL_OK);
    pair_fini(&p);
}
END_TEST

/* Every transfer deferred: calls report IN_PROGRESS, then complete. */
START_TEST(test_in_progress)
{
    pair_combo_t c = pair_combo(_i);
    pair_t p;
    raddr_t pd[10], cd[10], x;

    if (c.protocol == RMALLOC_SYNC_CHANNEL) return;
    setup_pair(&p, c, 100, 64, RMALLOC_WATERMARK_FULL, 4, 100);
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(rmalloc_sync_alloc(P, 632, 0, &pd[i]), UTIL_OK);
        ck_assert_int_eq(rmalloc_sync_post(P, &pd[i]), UTIL_OK);
    }
    for (int i = 0; i < 10; i++) {
        if (c.protocol == RMALLOC_SYNC_BLOCK) {
            cd[i] = take(&p, &pd[i]);
        } else {
            ck_assert_int_eq(rmalloc_sync_next(C, &cd[i]), i == 0 ? UTIL_IN_PROGRESS : UTIL_OK);
            if (i == 0) cd[0] = take(&p, &pd[0]);
        }
        ck_assert_int_eq(rmalloc_sync_free(C, &cd[i]), UTIL_OK);
    }
    ck_assert_int_eq(rmalloc_sync_alloc(P, 632, 0, &x), UTIL_IN_PROGRESS);
    if (c.protocol == RMALLOC_SYNC_TAG) /* the count, then the free tags */
        ck_assert_int_eq(rmalloc_sync_alloc(P, 632, 0, &x), UTIL_IN_PROGRESS);
    ck_assert_int_eq(rmalloc_sync_alloc(P, 632, 0, &x), UTIL_OK);
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), 10);
    pair_fini(&p);
}
END_TEST

/* A pair where the consumer loads the producer's buffer (both ways with
 * both_views), past its first message: the one returned, taken. */
static raddr_t early_setup(pair_t *p, pair_combo_t c, int both_views)
{
    uint64_t start, units, payload;
    raddr_t pd;

    setup_pair(p, c, 256, 8, RMALLOC_WATERMARK_FULL, 4, 0);
    rmalloc_sync_set_peer_view(C, p->sbuf[PAIR_PRODUCER]);
    if (both_views) rmalloc_sync_set_peer_view(P, p->sbuf[PAIR_CONSUMER]);
    /* no guess before a first message */
    ck_assert_int_eq(rmalloc_sync_guess(C, &start, &units, &payload), UTIL_ERR_NO_RESOURCE);
    ck_assert_int_eq(alloc_wait(&pd, 100), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_post(P, &pd), UTIL_OK);
    return take(p, &pd);
}

/* One round of taking early: the producer allocates (not yet posted), the
 * consumer guesses right, takes it (*ed; a second claim is refused) and
 * frees the previous message (*cd). Returns the message's units. */
static uint64_t early_step(raddr_t *pd, raddr_t *ed, raddr_t *cd)
{
    uint64_t start, units, payload;

    ck_assert_int_eq(alloc_wait(pd, 100), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_guess(C, &start, &units, &payload), UTIL_OK);
    ck_assert_uint_eq(start, pd->start); /* same size: the guess is right */
    ck_assert_uint_eq(units, pd->end - pd->start);
    ck_assert_uint_eq(payload, pd->payload);
    ck_assert_int_eq(rmalloc_sync_take_early(C, start, units, payload, ed), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_take_early(C, start, units, payload, cd), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_sync_free(C, cd), UTIL_OK);
    return units;
}

/* TAG (with a peer view), next-fit: a consumer takes the next allocation
 * early, at its guessed place, and frees it at once: counted (even before
 * the producer posted it) or, out of order, as a tag naming its post
 * sequence. The producer applies both once the message is posted. */
START_TEST(test_take_early_tag)
{
    pair_combo_t c = {RMALLOC_SYNC_TAG, RMALLOC_NEXT_FIT, _i ? RMALLOC_SYNC_GET : RMALLOC_SYNC_PUT};
    pair_t p;
    raddr_t pd, held_pd, cd, ed, held;
    uint64_t start, units, payload;

    cd = early_setup(&p, c, 1);
    for (int i = 0; i < 40; i++) { /* wraps the 256-unit region */
        units = early_step(&pd, &ed, &cd);
        if (i % 2) {
            /* counted before its post: the producer releases the older one
             * only, and this one once it is posted */
            ck_assert_int_eq(rmalloc_sync_free(C, &ed), UTIL_OK);
            pull_all();
            ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), units);
            ck_assert_int_eq(rmalloc_sync_post(P, &pd), UTIL_OK);
            /* its tag is skipped, not handed out */
            ck_assert_int_eq(rmalloc_sync_next(C, &cd), UTIL_ERR_NO_RESOURCE);
            pull_all();
            ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), 0);
            ck_assert_int_eq(alloc_wait(&pd, 100), UTIL_OK);
            ck_assert_int_eq(rmalloc_sync_post(P, &pd), UTIL_OK);
            cd = take(&p, &pd);
        } else {
            ck_assert_int_eq(rmalloc_sync_post(P, &pd), UTIL_OK);
            ck_assert_int_eq(rmalloc_sync_next(C, &cd), UTIL_ERR_NO_RESOURCE);
            cd = ed;
            pull_all();
        }
    }
    /* out of order: a newer message freed while an older one is held is a
     * tag; one freed before its post waits in the queue until it is */
    ck_assert_int_eq(alloc_wait(&held_pd, 100), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_post(P, &held_pd), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_free(C, &cd), UTIL_OK);
    held = take(&p, &held_pd);
    ck_assert_int_eq(alloc_wait(&pd, 100), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_guess(C, &start, &units, &payload), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_take_early(C, start, units, payload, &ed), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_free(C, &ed), UTIL_OK); /* a tag */
    pull_all();
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), 2 * units);
    ck_assert_int_eq(rmalloc_sync_post(P, &pd), UTIL_OK);
    pull_all();
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), units);
    ck_assert_int_eq(rmalloc_sync_free(C, &held), UTIL_OK); /* counted */
    pull_all();
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(C)), 0);
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), 0);
    ck_assert_int_eq(rmalloc_vmem_check(rmalloc_sync_vmem(P)), UTIL_OK);
    /* a free tag that names a message at another place is a protocol error */
    ck_assert_int_eq(alloc_wait(&held_pd, 100), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_post(P, &held_pd), UTIL_OK);
    held = take(&p, &held_pd);
    ck_assert_int_eq(alloc_wait(&pd, 100), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_guess(C, &start, &units, &payload), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_take_early(C, start + 1, units, payload, &ed), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_free(C, &ed), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_post(P, &pd), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_pull(P), UTIL_ERR_STATE);
    pair_fini(&p);
}
END_TEST

/* CHANNEL, next-fit: a consumer takes the next allocation early, at its
 * guessed place; the record that follows must match it and gives the names
 * its free needs. */
START_TEST(test_take_early)
{
    pair_combo_t c = {RMALLOC_SYNC_CHANNEL, RMALLOC_NEXT_FIT,
                      _i ? RMALLOC_SYNC_GET : RMALLOC_SYNC_PUT};
    pair_t p;
    raddr_t pd, cd, ed;
    uint64_t start, units, payload;

    cd = early_setup(&p, c, 0);
    for (int i = 0; i < 40; i++) { /* wraps the 256-unit region */
        units = early_step(&pd, &ed, &cd);
        /* no record yet: the free asks to be retried, twice (prefetch, then look) */
        ck_assert_int_eq(rmalloc_sync_free(C, &ed), UTIL_ERR_NO_RESOURCE);
        ck_assert_int_eq(rmalloc_sync_free(C, &ed), UTIL_ERR_NO_RESOURCE);
        ck_assert_int_eq(rmalloc_sync_post(P, &pd), UTIL_OK);
        /* the tag is matched, not handed out again */
        ck_assert_int_eq(rmalloc_sync_next(C, &cd), UTIL_ERR_NO_RESOURCE);
        cd = ed;
        pull_all();
    }
    ck_assert_int_eq(rmalloc_sync_free(C, &cd), UTIL_OK); /* rmalloc_sync_next applied its tag */
    pull_all();
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(C)), 0);
    ck_assert_uint_eq(rmalloc_vmem_used_units(rmalloc_sync_vmem(P)), 0);
    /* a tag that disagrees with the message taken early is a protocol error */
    ck_assert_int_eq(alloc_wait(&pd, 100), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_guess(C, &start, &units, &payload), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_take_early(C, start + 1, units, payload, &ed), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_post(P, &pd), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_next(C, &cd), UTIL_ERR_STATE);
    pair_fini(&p);
}
END_TEST

/* The live list of frees by order: front, runs, holes found and dropped,
 * squeezed out, against a plain array. */
START_TEST(test_order)
{
    enum { N = 3000 };
    static uint8_t live[N];
    rmalloc_order_t o;
    uint64_t rng = 7, front = 0, nlive = 0;
    const raddr_t *run;

    memset(&o, 0, sizeof(o));
    memset(live, 0, sizeof(live));
    for (uint64_t seq = 0; seq < N; seq++) {
        raddr_t d = {.start = seq, .end = seq + 1, .id = seq + 1};
        ck_assert_int_eq(rmalloc_order_reserve(&o), UTIL_OK);
        rmalloc_order_push(&o, seq * 3, &d); /* sequences need not be dense */
        live[seq] = 1;
        nlive++;
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        if ((rng >> 60) < 9 && nlive > 1) { /* remove one at random, out of order */
            uint64_t k = front + (rng >> 20) % (seq + 1 - front);
            size_t i = rmalloc_order_find(&o, k * 3);
            ck_assert_uint_eq(i == SIZE_MAX, !live[k]);
            if (i != SIZE_MAX) {
                ck_assert_uint_eq(o.desc[i].start, k);
                rmalloc_order_remove(&o, i);
                live[k] = 0;
                nlive--;
            }
            ck_assert_uint_eq(rmalloc_order_find(&o, k * 3), SIZE_MAX);
            ck_assert_uint_eq(rmalloc_order_find(&o, k * 3 + 1), SIZE_MAX);
        } else if ((rng >> 60) < 11) { /* release a run of the oldest */
            size_t n = rmalloc_order_run(&o, 1 + (rng >> 30) % 8, &run);
            ck_assert_uint_ge(n, 1);
            for (size_t j = 0; j < n; j++) {
                while (!live[front]) front++;
                ck_assert_uint_eq(run[j].start, front);
                live[front++] = 0;
                nlive--;
            }
            rmalloc_order_pop_n(&o, n);
        }
        while (front < N && !live[front] && front <= seq) front++;
        ck_assert_uint_eq(rmalloc_order_live(&o), nlive);
        if (nlive) ck_assert_uint_eq(rmalloc_order_front_seq(&o), front * 3);
    }
    /* the list stays O(live): holes do not pile up behind a held front */
    ck_assert_uint_le(o.tail - o.head, 2 * nlive + 64);
    rmalloc_order_fini(&o);
}
END_TEST

START_TEST(test_invalid)
{
    rmalloc_sync_config_t cfg;
    pair_t p;
    raddr_t d;
    double w;

    pair_config(&cfg, (pair_combo_t){RMALLOC_SYNC_BLOCK, RMALLOC_BEST_FIT, RMALLOC_SYNC_PUT}, 100,
                UNIT, 8);
    ck_assert_int_eq(pair_init(&p, &cfg, 0, 0, 1), UTIL_ERR_INVALID);
    pair_fini(&p);
    setup_pair(&p, pair_combo(0), 100, 8, RMALLOC_WATERMARK_FULL, 4, 0);
    ck_assert_int_eq(rmalloc_sync_alloc(C, 10, 0, &d), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_sync_next(P, &d), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_sync_accept(C, 10, 0, &d), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_sync_alloc(P, 10, 0, &d), UTIL_OK);
    ck_assert_int_eq(rmalloc_sync_free(C, &d), UTIL_ERR_INVALID); /* the producer's */
    d.id ^= 1;
    ck_assert_int_eq(rmalloc_sync_post(P, &d), UTIL_ERR_INVALID);
    pair_fini(&p);
    ck_assert_int_eq(rmalloc_sync_parse_watermark("half", &w), UTIL_OK);
    ck_assert(w == 0.5);
    ck_assert_int_eq(rmalloc_sync_parse_watermark("0.25", &w), UTIL_OK);
    ck_assert(w == 0.25);
    ck_assert_int_eq(rmalloc_sync_parse_watermark("1.5", &w), UTIL_ERR_INVALID);
    ck_assert_int_eq(rmalloc_sync_parse_watermark("most", &w), UTIL_ERR_INVALID);
}
END_TEST

START_TEST(test_config_env)
{
    rmalloc_sync_config_t cfg;
    setenv("RMB_RMALLOC_WATERMARK", "half", 1);
    setenv("RMB_RMALLOC_SYNC", "tag", 1);
    setenv("RMB_RMALLOC_HEURISTIC", "best", 1);
    ck_assert_int_eq(rmalloc_sync_config_init(&cfg), UTIL_OK);
    ck_assert(cfg.watermark == 0.5);
    ck_assert_int_eq(cfg.protocol, RMALLOC_SYNC_TAG);
    ck_assert_int_eq(cfg.heuristic, RMALLOC_BEST_FIT);
    ck_assert_uint_eq(cfg.unit, 64);
    setenv("RMB_RMALLOC_SYNC", "carrier-pigeon", 1);
    ck_assert_int_eq(rmalloc_sync_config_init(&cfg), UTIL_ERR_INVALID);
    unsetenv("RMB_RMALLOC_SYNC");
    unsetenv("RMB_RMALLOC_WATERMARK");
    unsetenv("RMB_RMALLOC_HEURISTIC");
    ck_assert_int_eq(rmalloc_sync_config_init(&cfg), UTIL_OK);
    ck_assert_int_eq(cfg.protocol, RMALLOC_SYNC_BLOCK);
    ck_assert_int_eq(cfg.heuristic, RMALLOC_NEXT_FIT);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rmalloc_sync");
    TCase *tc = tcase_create("protocols");
    tcase_add_loop_test(tc, test_flow, 0, PAIR_COMBOS);
    tcase_add_loop_test(tc, test_queue_full, 0, PAIR_COMBOS);
    tcase_add_loop_test(tc, test_take_ahead, 0, PAIR_COMBOS);
    tcase_add_loop_test(tc, test_tell, 0, PAIR_COMBOS);
    tcase_add_loop_test(tc, test_watermark, 0, PAIR_COMBOS);
    tcase_add_loop_test(tc, test_retries, 0, PAIR_COMBOS);
    tcase_add_loop_test(tc, test_in_progress, 0, PAIR_COMBOS);
    tcase_add_loop_test(tc, test_block_out_of_order, PAIR_COMBOS - 2, PAIR_COMBOS);
    tcase_add_loop_test(tc, test_block_wrap, PAIR_COMBOS - 2, PAIR_COMBOS);
    tcase_add_loop_test(tc, test_take_early, 0, 2);
    tcase_add_loop_test(tc, test_take_early_tag, 0, 2);
    tcase_add_loop_test(tc, test_one_view, 0, 2);
    tcase_add_test(tc, test_order);
    tcase_add_test(tc, test_invalid);
    tcase_add_test(tc, test_config_env);
    suite_add_tcase(s, tc);

    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
