/*
 * Randomized model-based test of the sync protocols. For every heuristic x
 * protocol x direction (22 combinations) a producer and a consumer run a
 * random interleaving of alloc (half of the unaligned ones by rpipe's
 * small-message path: rmalloc_sync_alloc_ring, then the ring inline), post,
 * take, take early (next-fit: the next message at its guessed place,
 * perhaps before its post, as rpipe does when the flag is there; with and
 * without a peer view, so also while a read is in flight), out-of-order free, pull and
 * progress through the in-memory transport, which itself defers and
 * refuses operations at random. After every step:
 *   - both instances pass rmalloc_vmem_check() (blocks tile the region, so
 *     every unit is free or allocated exactly once; no two free blocks are
 *     adjacent; size classes and tree are consistent);
 *   - a model of the real memory (unit -> in use) shows that the producer
 *     never hands out a unit the consumer has not freed, so no two live
 *     allocations overlap;
 *   - every allocation the consumer holds is also live in the producer's
 *     instance, at the same place;
 * and at quiescent points (everything posted, taken and pulled) the shadow
 * and the real instance hold exactly the same allocations.
 *
 * RMALLOC_TEST_SEED=<n> picks the seed (printed); RMALLOC_TEST_OPS=<n> the
 * operations per combination (default 20000; the full run is 1000000).
 */
#include "tests/rmalloc/rmalloc_pair.h"
#include "rmalloc/rmalloc_ring_inl.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define UNIT    64
#define UNITS   512
#define MAXLIVE 1024

static uint64_t g_seed = 20261122;
static uint64_t g_ops = 20000;

typedef struct {
    pair_t p;
    int combo;
    uint64_t rng, step;
    uint8_t inuse[UNITS];
    raddr_t unposted[MAXLIVE], inflight[MAXLIVE], held[MAXLIVE];
    uint64_t unposted_align[MAXLIVE], inflight_align[MAXLIVE];
    unsigned nun, nin, nheld;
    unsigned nun_taken; /* unposted[0..nun_taken) were taken early */
    uint64_t last_payload;
    uint64_t early, early_unposted; /* messages taken early; of them, before their post */
    uint64_t ring_allocs; /* placed by rpipe's small-message path (rmalloc_sync_alloc_ring) */
} model_t;

static uint64_t rnd(model_t *m)
{
    m->rng ^= m->rng >> 12;
    m->rng ^= m->rng << 25;
    m->rng ^= m->rng >> 27;
    return m->rng * UINT64_C(2685821657736338717);
}

static void model_fail(const model_t *m, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define MCHECK(_m, _cond, ...)                                                                     \
    do {                                                                                           \
        if (!(_cond)) model_fail((_m), __LINE__, __VA_ARGS__);                                     \
    } while (0)

static void model_fail(const model_t *m, int line, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ck_abort_msg("line %d, combo %d, step %llu, RMALLOC_TEST_SEED=%llu: %s", line, m->combo,
                 (unsigned long long)m->step, (unsigned long long)g_seed, msg);
}

static void st_ok(model_t *m, util_status_t st, const char *what)
{
    MCHECK(m, st == UTIL_OK || st == UTIL_IN_PROGRESS || st == UTIL_ERR_NO_RESOURCE,
           "%s returned %s", what, util_status_name(st));
}

typedef struct {
    uint64_t start[MAXLIVE * 2], end[MAXLIVE * 2];
    unsigned n;
} blocks_t;

static void collect_cb(const rmalloc_block_info_t *b, void *arg)
{
    blocks_t *bl = arg;
    if (b->state == RMALLOC_BLOCK_ALLOC && bl->n < MAXLIVE * 2) {
        bl->start[bl->n] = b->start;
        bl->end[bl->n++] = b->end;
    }
}

/* Consumer's live allocations are a subset of the producer's (exact: equal). */
static void compare(model_t *m, int exact)
{
    static blocks_t bp, bc;
    bp.n = bc.n = 0;
    rmalloc_vmem_walk(rmalloc_sync_vmem(m->p.ep[PAIR_PRODUCER]), collect_cb, &bp);
    rmalloc_vmem_walk(rmalloc_sync_vmem(m->p.ep[PAIR_CONSUMER]), collect_cb, &bc);
    unsigned j = 0;
    for (unsigned i = 0; i < bc.n; i++) {
        while (j < bp.n && bp.start[j] < bc.start[i]) j++;
        MCHECK(m, j < bp.n && bp.start[j] == bc.start[i] && bp.end[j] == bc.end[i],
               "consumer block [%llu,%llu) is not live in the producer",
               (unsigned long long)bc.start[i], (unsigned long long)bc.end[i]);
    }
    if (exact) MCHECK(m, bp.n == bc.n, "producer has %u allocations, consumer %u", bp.n, bc.n);
}

static void check_all(model_t *m)
{
    MCHECK(m, rmalloc_vmem_check(rmalloc_sync_vmem(m->p.ep[PAIR_PRODUCER])) == UTIL_OK,
           "producer instance broken");
    MCHECK(m, rmalloc_vmem_check(rmalloc_sync_vmem(m->p.ep[PAIR_CONSUMER])) == UTIL_OK,
           "consumer instance broken");
    compare(m, 0);
}

static void op_alloc(model_t *m)
{
    raddr_t d;
    uint64_t r = rnd(m);
    /* mostly small messages, some large ones (up to 1/8 of the region) */
    uint64_t payload = (r % 4) ? 1 + (r >> 8) % (3 * UNIT) : 1 + (r >> 8) % (UNITS * UNIT / 8);
    uint64_t align = ((r >> 40) % 16 == 0) ? 256 : 0;
    if ((r >> 44) % 2 && m->last_payload) { /* a stream of equal messages */
        payload = m->last_payload;
        align = 0;
    }
    m->last_payload = payload;
    if (m->nun + m->nin + m->nheld >= MAXLIVE) return;
    util_status_t st = UTIL_ERR_NO_RESOURCE;
    if (!align && (r >> 46) % 2) {
        /* rpipe's small-message path: straight into the ring while no sync
         * step is due, rmalloc_sync_alloc() where the ring refuses */
        uint64_t units;
        struct rmalloc_ring *ring =
            rmalloc_sync_alloc_ring(m->p.ep[PAIR_PRODUCER], payload, &units);
        if (ring != NULL) st = rmalloc_ring_alloc_inl(ring, units, 1, payload, &d);
        if (st == UTIL_OK) m->ring_allocs++;
    }
    if (st != UTIL_OK) st = rmalloc_sync_alloc(m->p.ep[PAIR_PRODUCER], payload, align, &d);
    st_ok(m, st, "alloc");
    if (st != UTIL_OK) return;
    MCHECK(m, d.end <= UNITS && d.end > d.start && d.payload == payload, "bad descriptor");
    MCHECK(m, !align || rmalloc_desc_offset(&d) % align == 0, "misaligned");
    for (uint64_t u = d.start; u < d.end; u++) {
        MCHECK(m, !m->inuse[u], "producer handed out unit %llu the consumer still uses",
               (unsigned long long)u);
        m->inuse[u] = 1;
    }
    m->unposted_align[m->nun] = align;
    m->unposted[m->nun++] = d;
}

static void op_post(model_t *m)
{
    if (!m->nun) return;
    util_status_t st = rmalloc_sync_post(m->p.ep[PAIR_PRODUCER], &m->unposted[0]);
    st_ok(m, st, "post");
    if (st != UTIL_OK) return;
    if (m->nun_taken > 0) {
        m->nun_taken--; /* the consumer has it already */
    } else {
        m->inflight_align[m->nin] = m->unposted_align[0];
        m->inflight[m->nin++] = m->unposted[0];
    }
    m->nun--;
    memmove(&m->unposted[0], &m->unposted[1], m->nun * sizeof(raddr_t));
    memmove(&m->unposted_align[0], &m->unposted_align[1], m->nun * sizeof(uint64_t));
}

static void op_take(model_t *m)
{
    raddr_t d;
    util_status_t st;
    if (m->p.cfg.protocol == RMALLOC_SYNC_BLOCK) {
        if (!m->nin) return;
        st = rmalloc_sync_accept(m->p.ep[PAIR_CONSUMER], m->inflight[0].payload,
                                 m->inflight_align[0], &d);
        MCHECK(m, st == UTIL_OK, "accept returned %s", util_status_name(st));
    } else {
        st = rmalloc_sync_next(m->p.ep[PAIR_CONSUMER], &d);
        st_ok(m, st, "next");
        if (st != UTIL_OK) return;
        MCHECK(m, m->nin > 0, "consumer got an allocation nobody posted");
    }
    MCHECK(m,
           d.start == m->inflight[0].start && d.end == m->inflight[0].end &&
               d.payload == m->inflight[0].payload,
           "consumer took [%llu,%llu), producer posted [%llu,%llu)", (unsigned long long)d.start,
           (unsigned long long)d.end, (unsigned long long)m->inflight[0].start,
           (unsigned long long)m->inflight[0].end);
    MCHECK(m,
           (rmalloc_vmem_ptr(rmalloc_sync_vmem(m->p.ep[PAIR_CONSUMER]), &d) != NULL) ==
               (m->p.cfg.direction == RMALLOC_SYNC_PUT),
           "consumer mapping wrong for direction");
    m->held[m->nheld++] = d;
    m->nin--;
    memmove(&m->inflight[0], &m->inflight[1], m->nin * sizeof(raddr_t));
    memmove(&m->inflight_align[0], &m->inflight_align[1], m->nin * sizeof(uint64_t));
}

/* The consumer takes the next message in post order where next-fit most
 * likely put it, if it is there (rpipe: its flag says so). */
static void op_take_early(model_t *m)
{
    uint64_t start, units, payload;
    raddr_t d, *next;

    if (rmalloc_sync_guess(m->p.ep[PAIR_CONSUMER], &start, &units, &payload) != UTIL_OK) return;
    next = m->nin ? &m->inflight[0] : (m->nun > m->nun_taken ? &m->unposted[m->nun_taken] : NULL);
    if (next == NULL || next->start != start || next->end != start + units ||
        next->payload != payload)
        return; /* no flag there */
    MCHECK(m, rmalloc_sync_take_early(m->p.ep[PAIR_CONSUMER], start, units, payload, &d) == UTIL_OK,
           "take_early refused the next message");
    MCHECK(m, d.start == start && d.end == start + units, "take_early gave another place");
    m->held[m->nheld++] = d;
    m->early++;
    m->early_unposted += (m->nin == 0);
    if (m->nin) {
        m->nin--;
        memmove(&m->inflight[0], &m->inflight[1], m->nin * sizeof(raddr_t));
        memmove(&m->inflight_align[0], &m->inflight_align[1], m->nin * sizeof(uint64_t));
    } else
        m->nun_taken++;
}

static void op_free(model_t *m, unsigned k)
{
    raddr_t d = m->held[k];
    util_status_t st = rmalloc_sync_free(m->p.ep[PAIR_CONSUMER], &d);
    st_ok(m, st, "free");
    if (st != UTIL_OK) return;
    for (uint64_t u = d.start; u < d.end; u++) {
        MCHECK(m, m->inuse[u], "unit %llu freed twice", (unsigned long long)u);
        m->inuse[u] = 0;
    }
    m->held[k] = m->held[--m->nheld];
    /* a second free of the same descriptor must be refused, harmlessly */
    if ((rnd(m) & 63) == 0)
        MCHECK(m, rmalloc_sync_free(m->p.ep[PAIR_CONSUMER], &d) == UTIL_ERR_INVALID,
               "double free accepted");
}

static void op_pull(model_t *m)
{
    st_ok(m, rmalloc_sync_pull(m->p.ep[PAIR_PRODUCER]), "pull");
}

static void op_progress(model_t *m)
{
    st_ok(m, rmalloc_sync_progress(m->p.ep[PAIR_PRODUCER]), "producer progress");
    st_ok(m, rmalloc_sync_progress(m->p.ep[PAIR_CONSUMER]), "consumer progress");
}

/* Post and take everything; optionally free everything; pull until the
 * producer has seen it all. Then the two instances must agree. */
static void quiesce(model_t *m, int free_all)
{
    for (unsigned guard = 0; m->nun || m->nin; guard++) {
        MCHECK(m, guard < 1000000, "cannot drain %u unposted, %u in flight", m->nun, m->nin);
        op_post(m);
        op_take(m);
        op_progress(m);
    }
    for (unsigned guard = 0; free_all && m->nheld; guard++) {
        MCHECK(m, guard < 1000000, "cannot free %u held", m->nheld);
        op_free(m, (unsigned)(rnd(m) % m->nheld));
        op_pull(m);
    }
    /* enough rounds for every refused or deferred transfer to go through */
    for (unsigned i = 0; i < 200; i++) {
        op_progress(m);
        op_pull(m);
    }
    check_all(m);
    if (m->p.cfg.protocol != RMALLOC_SYNC_BLOCK || free_all) compare(m, 1);
    if (free_all) {
        MCHECK(
            m, rmalloc_vmem_used_units(rmalloc_sync_vmem(m->p.ep[PAIR_PRODUCER])) == 0,
            "producer still uses %llu units after everything was freed",
            (unsigned long long)rmalloc_vmem_used_units(rmalloc_sync_vmem(m->p.ep[PAIR_PRODUCER])));
    }
}

START_TEST(test_model)
{
    static model_t m;
    rmalloc_sync_config_t cfg;
    pair_combo_t c = pair_combo(_i % PAIR_COMBOS);
    int view = _i >= PAIR_COMBOS; /* reads as loads of the peer's buffer */

    memset(&m, 0, sizeof(m));
    m.combo = _i;
    m.rng = g_seed * 1000003 + (uint64_t)_i + 1;
    pair_config(&cfg, c, UNITS, UNIT, 8);
    cfg.watermark = (_i % 3 == 0) ? RMALLOC_WATERMARK_HALF : RMALLOC_WATERMARK_FULL;
    cfg.retries = 1 + (unsigned)_i % 3;
    ck_assert_int_eq(pair_init(&m.p, &cfg, 20, 10, m.rng), UTIL_OK);
    if (view) {
        rmalloc_sync_set_peer_view(m.p.ep[PAIR_PRODUCER], m.p.sbuf[PAIR_CONSUMER]);
        rmalloc_sync_set_peer_view(m.p.ep[PAIR_CONSUMER], m.p.sbuf[PAIR_PRODUCER]);
    }

    for (m.step = 0; m.step < g_ops; m.step++) {
        uint64_t r = rnd(&m) % 100;
        if (r < 30)
            op_alloc(&m);
        else if (r < 50)
            op_post(&m);
        else if (r < 62)
            op_take_early(&m);
        else if (r < 70)
            op_take(&m);
        else if (r < 92) {
            if (m.nheld) op_free(&m, (unsigned)(rnd(&m) % m.nheld));
        } else if (r < 97)
            op_pull(&m);
        else
            op_progress(&m);
        check_all(&m);
        if (m.step % 5000 == 4999) quiesce(&m, (m.step / 5000) % 2);
    }
    quiesce(&m, 1);
    printf("model: %s/%s/%s%s: %llu ops ok (%llu taken early, %llu before their post; "
           "%llu placed in the ring directly)\n",
           rmalloc_sync_protocol_name(c.protocol), rmalloc_heuristic_name(c.heuristic),
           c.direction == RMALLOC_SYNC_PUT ? "put" : "get", view ? " (peer view)" : "",
           (unsigned long long)g_ops, (unsigned long long)m.early,
           (unsigned long long)m.early_unposted, (unsigned long long)m.ring_allocs);
    pair_fini(&m.p);
}
END_TEST

int main(void)
{
    const char *text;
    if ((text = getenv("RMALLOC_TEST_SEED")) != NULL) g_seed = strtoull(text, NULL, 0);
    if ((text = getenv("RMALLOC_TEST_OPS")) != NULL) g_ops = strtoull(text, NULL, 0);
    printf("rmalloc model test: RMALLOC_TEST_SEED=%llu RMALLOC_TEST_OPS=%llu\n",
           (unsigned long long)g_seed, (unsigned long long)g_ops);
    fflush(stdout);

    Suite *s = suite_create("rmalloc_model");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 60.0 + (double)g_ops / 2000.0);
    tcase_add_loop_test(tc, test_model, 0, 2 * PAIR_COMBOS);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
