/*
 * OpenSHMEM point-to-point tests, launched as N PEs under oshrun; one mode
 * per run:
 *   mp_shmem_p2p ctx|amo|ibput|signal|wait|lock[,...]   (several: one job)
 *   mp_shmem_p2p badctx|badsig|destroydefault|badctxpe   (must fail: exit 1)
 * Every PE checks real values and exits non-zero on a mismatch.
 */
#include <shmem.h>

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/common/mp_check.h"

static int me, npes, errors;

#define N 512
static long static_longs[N];
static long static_lock, static_counter;
static uint64_t static_sig;

static int right_of(int pe, int n)
{
    return (pe + 1) % n;
}
static int left_of(int pe, int n)
{
    return (pe + n - 1) % n;
}

/* Small pseudo-random numbers, different per PE (no shared state). */
static unsigned rnd(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 16) & 0x7fff;
}

/* ---- contexts: world, team, RMA through them, get_team, pe_quiet -------------------- */

/* A ring inside the context's team: team PE i puts its world PE into
 * slots of i+1 and gets from i-1; checks against translate_pe. Called by
 * every PE (non-members with SHMEM_CTX_INVALID) for the world barriers. */
static void ctx_ring(shmem_ctx_t ctx, shmem_team_t team, long *buf, int tag)
{
    int member = ctx != SHMEM_CTX_INVALID;
    int tme = member ? shmem_team_my_pe(team) : 0, tn = member ? shmem_team_n_pes(team) : 1;
    int tright = right_of(tme, tn), tleft = left_of(tme, tn);
    long left_world = member ? shmem_team_translate_pe(team, tleft, SHMEM_TEAM_WORLD) : -1;
    long src[8], got[8];

    for (int i = 0; i < 8; i++) src[i] = tag * 100000L + me * 100L + i;
    if (member) {
        CHECK(left_world >= 0, "translate_pe");
        shmem_ctx_long_put(ctx, buf, src, 8, tright);
        shmem_ctx_long_p(ctx, &buf[8], me, tright);
        shmem_ctx_quiet(ctx);
    }
    shmem_barrier_all();
    if (member) {
        for (int i = 0; i < 8; i++)
            CHECK(buf[i] == tag * 100000L + left_world * 100L + i, "team ring [%d] = %ld (tag %d)",
                  i, buf[i], tag);
        CHECK(buf[8] == left_world, "team ring p: %ld, expected %ld", buf[8], left_world);
        /* get from the right what it received from me */
        shmem_ctx_long_get(ctx, got, buf, 8, tright);
        for (int i = 0; i < 8; i++) CHECK(got[i] == src[i], "team ring get [%d] = %ld", i, got[i]);
        CHECK(shmem_ctx_long_g(ctx, &buf[8], tright) == me, "team ring g");
    }
    shmem_barrier_all();
}

/* get_nbi from every PE at once (typed, sized, mem; default context and a
 * created one): in place after quiet, and with sizes that cross the
 * network's message thresholds. */
static void get_nbi_all(shmem_ctx_t ctx)
{
    enum { L = 300 };
    long *src = shmem_malloc(L * sizeof(long));
    long *got = malloc((size_t)npes * 3 * L * sizeof(long));

    for (int i = 0; i < L; i++) src[i] = me * 100000L + i;
    shmem_barrier_all();
    for (int p = 0; p < npes; p++) {
        long *g = got + (size_t)p * 3 * L;
        shmem_long_get_nbi(g, src, 1, p);
        shmem_get64_nbi(g + 1, src + 1, 40, p);
        shmem_ctx_getmem_nbi(ctx, g + 41, src + 41, (L - 41) * sizeof(long), p);
        shmem_ctx_long_get_nbi(ctx, g + L, src, L, p);
        shmem_getmem_nbi(g + 2 * L, src, L * sizeof(long), p);
    }
    shmem_ctx_quiet(ctx);
    shmem_quiet();
    for (int p = 0; p < npes; p++) {
        for (int i = 0; i < 3 * L; i++) {
            long want = p * 100000L + i % L;
            if (got[(size_t)p * 3 * L + (size_t)i] != want) {
                CHECK(0, "get_nbi from PE %d [%d] = %ld, expected %ld", p, i,
                      got[(size_t)p * 3 * L + (size_t)i], want);
                break;
            }
        }
    }
    shmem_barrier_all(); /* nobody frees src while a get may read it */
    free(got);
    shmem_free(src);
}

static void mode_ctx(void)
{
    int right = right_of(me, npes), left = left_of(me, npes);
    long *buf = shmem_calloc(64, sizeof(long));
    double *dbl = shmem_calloc(4, sizeof(double));
    unsigned char *bytes = shmem_calloc(100, 1);
    int *ints = shmem_calloc(32, sizeof(int));
    long *flag = shmem_calloc(1, sizeof(long));
    shmem_ctx_t ctx, ctx2, tctx;
    shmem_team_t team;

    /* creation, get_team, invalid handles */
    CHECK(shmem_ctx_create(0, &ctx) == 0 && ctx != SHMEM_CTX_INVALID, "ctx_create");
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED, &ctx2) == 0,
          "ctx_create with options");
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &team) == 0 && team == SHMEM_TEAM_WORLD,
          "default ctx team");
    CHECK(shmem_ctx_get_team(ctx, &team) == 0 && team == SHMEM_TEAM_WORLD, "created ctx team");
    team = SHMEM_TEAM_WORLD;
    CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &team) != 0 && team == SHMEM_TEAM_INVALID,
          "invalid ctx team");
    tctx = SHMEM_CTX_DEFAULT;
    CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &tctx) != 0 && tctx == SHMEM_CTX_INVALID,
          "team_create_ctx(INVALID)");
    shmem_ctx_destroy(SHMEM_CTX_INVALID); /* no operation */
    get_nbi_all(SHMEM_CTX_DEFAULT);
    get_nbi_all(ctx);

    /* RMA through a world context: the same ring as the default one */
    {
        long src[16];
        int is[16];
        unsigned char bs[100];
        for (int i = 0; i < 16; i++) {
            src[i] = me * 1000L + i;
            is[i] = me * 10 + i;
        }
        for (int i = 0; i < 100; i++) bs[i] = (unsigned char)(me + 3 * i);
        shmem_ctx_long_put(ctx, buf, src, 16, right);
        shmem_ctx_double_p(ctx, &dbl[1], 0.25 * me, right);
        shmem_ctx_int_iput(ctx, ints, is, 2, 1, 16, right);
        shmem_ctx_uchar_put_nbi(ctx2, bytes, bs, 100, right);
        shmem_ctx_putmem_nbi(ctx, &buf[32], src, 4 * sizeof(long), right);
        shmem_ctx_put64(ctx, &buf[40], src, 2, right);
        shmem_ctx_quiet(ctx2);
        shmem_ctx_quiet(ctx);
        shmem_barrier_all();
        for (int i = 0; i < 16; i++) {
            CHECK(buf[i] == left * 1000L + i, "ctx put [%d] = %ld", i, buf[i]);
            CHECK(ints[2 * i] == left * 10 + i, "ctx iput [%d] = %d", 2 * i, ints[2 * i]);
        }
        for (int i = 0; i < 100; i++)
            CHECK(bytes[i] == (unsigned char)(left + 3 * i), "ctx put_nbi [%d]", i);
        CHECK(dbl[1] == 0.25 * left, "ctx double p %g", dbl[1]);
        CHECK(buf[33] == left * 1000L + 1 && buf[41] == left * 1000L + 1, "ctx putmem_nbi / put64");
        /* gets: from the right, what I put there */
        long got[16];
        int ig[16];
        shmem_ctx_long_get(ctx, got, buf, 16, right);
        shmem_ctx_int_iget(ctx, ig, ints, 1, 2, 16, right);
        for (int i = 0; i < 16; i++) {
            CHECK(got[i] == src[i], "ctx get [%d] = %ld", i, got[i]);
            CHECK(ig[i] == is[i], "ctx iget [%d] = %d", i, ig[i]);
        }
        CHECK(shmem_ctx_double_g(ctx, &dbl[1], right) == 0.25 * me, "ctx double g");
        shmem_ctx_getmem_nbi(ctx, got, static_longs, sizeof(long), right);
        shmem_ctx_quiet(ctx);
        CHECK(got[0] == 0, "ctx getmem_nbi of static data");
        /* the default context through the ctx API */
        shmem_ctx_long_p(SHMEM_CTX_DEFAULT, &static_longs[1], 77 + me, right);
        shmem_ctx_fence(SHMEM_CTX_DEFAULT);
        shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
        shmem_barrier_all();
        CHECK(static_longs[1] == 77 + left, "default ctx p: %ld", static_longs[1]);
    }

    /* pe_quiet: put, pe_quiet to that PE, then the flag; the receiver
     * sees the data once it sees the flag */
    {
        long v[4] = {me, me + 1, me + 2, me + 3};
        int target = right;
        shmem_long_put(&buf[48], v, 4, right);
        shmem_pe_quiet(&target, 1);
        shmem_long_atomic_set(flag, 1, right);
        shmem_long_wait_until(flag, SHMEM_CMP_GE, 1);
        CHECK(buf[48] == left && buf[51] == left + 3, "pe_quiet data %ld %ld", buf[48], buf[51]);
        shmem_pe_quiet(NULL, 0);
        shmem_ctx_long_put(ctx, &buf[52], v, 4, right);
        shmem_ctx_pe_quiet(ctx, &target, 1);
        shmem_ctx_long_atomic_set(ctx, flag, 2, right);
        shmem_long_wait_until(flag, SHMEM_CMP_GE, 2);
        CHECK(buf[52] == left && buf[55] == left + 3, "ctx_pe_quiet data %ld %ld", buf[52],
              buf[55]);
        shmem_barrier_all();
    }

    /* a context on SHMEM_TEAM_SHARED (a real subset under --nodes) */
    CHECK(shmem_team_create_ctx(SHMEM_TEAM_SHARED, 0, &tctx) == 0, "shared team ctx");
    CHECK(shmem_ctx_get_team(tctx, &team) == 0 && team == SHMEM_TEAM_SHARED, "shared ctx team");
    ctx_ring(tctx, SHMEM_TEAM_SHARED, buf, 1);
    shmem_ctx_destroy(tctx);
    shmem_barrier_all();

    /* a context on a strided team: the odd PEs */
    if (npes >= 2) {
        shmem_team_t odd = SHMEM_TEAM_INVALID;
        int size = npes / 2;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, size, NULL, 0, &odd) == 0,
              "split_strided");
        if (me % 2 == 1) {
            CHECK(odd != SHMEM_TEAM_INVALID && shmem_team_my_pe(odd) == me / 2, "odd team");
            CHECK(shmem_team_create_ctx(odd, 0, &tctx) == 0, "odd team ctx");
            CHECK(shmem_ctx_get_team(tctx, &team) == 0 && team == odd, "odd ctx team");
        } else {
            CHECK(odd == SHMEM_TEAM_INVALID, "even PE got a team");
            CHECK(shmem_team_create_ctx(odd, 0, &tctx) != 0 && tctx == SHMEM_CTX_INVALID,
                  "ctx on a team I am not in");
        }
        ctx_ring(tctx, odd, buf, 2);
        shmem_ctx_destroy(tctx);
        shmem_team_destroy(odd);
        shmem_barrier_all();
    }

    shmem_ctx_destroy(ctx2);
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    shmem_free(flag);
    shmem_free(ints);
    shmem_free(bytes);
    shmem_free(dbl);
    shmem_free(buf);
}

/* ---- atomics through contexts, and the fetching _nbi forms --------------------------- */

static void mode_amo(void)
{
    int iters = 200;
    long *lc = shmem_calloc(1, sizeof(long));
    int *ic = shmem_calloc(1, sizeof(int));
    uint64_t *uc = shmem_calloc(2, sizeof(uint64_t));
    unsigned int *bits = shmem_calloc(1, sizeof(unsigned int));
    double *dv = shmem_calloc(1, sizeof(double));
    float *fv = shmem_calloc(1, sizeof(float));
    long *sums = shmem_calloc((size_t)npes, sizeof(long));
    shmem_ctx_t ctx;
    long fetched_total = 0;

    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
    shmem_barrier_all();
    for (int i = 0; i < iters; i++) {
        long f;
        fetched_total += shmem_ctx_long_atomic_fetch_add(ctx, lc, 2, 0);
        shmem_ctx_int_atomic_inc(ctx, ic, npes - 1);
        /* increment by compare-and-swap through the context */
        uint64_t seen = shmem_ctx_uint64_atomic_fetch(ctx, &uc[0], 0), old;
        while ((old = shmem_ctx_uint64_atomic_compare_swap(ctx, &uc[0], seen, seen + 1, 0)) != seen)
            seen = old;
        /* _nbi: the value is there after quiet */
        f = -1;
        shmem_long_atomic_fetch_add_nbi(&f, lc, 0, 0);
        shmem_quiet();
        CHECK(f >= 0 && f % 2 == 0, "fetch_add_nbi(0) gave %ld", f);
        shmem_ctx_uint64_atomic_add(ctx, &uc[1], 3, 0);
    }
    shmem_ctx_uint_atomic_or(ctx, bits, 1u << (me % 32), 0);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(*lc == 2L * iters * npes, "ctx fetch_add counter %ld", *lc);
        CHECK(uc[0] == (uint64_t)iters * npes, "ctx cswap counter %llu", (unsigned long long)uc[0]);
        CHECK(uc[1] == 3ull * iters * npes, "ctx add counter %llu", (unsigned long long)uc[1]);
        unsigned expect = 0;
        for (int p = 0; p < npes; p++) expect |= 1u << (p % 32);
        CHECK(*bits == expect, "ctx or: %#x, expected %#x", *bits, expect);
    }
    if (me == npes - 1) CHECK(*ic == iters * npes, "ctx inc counter %d", *ic);
    /* distinct fetch_add results: their sum is 2 * (0 + ... + n-1) */
    shmem_long_p(&sums[me], fetched_total, 0);
    shmem_barrier_all();
    if (me == 0) {
        long total = 0, n = (long)iters * npes;
        for (int p = 0; p < npes; p++) total += sums[p];
        CHECK(total == n * (n - 1), "fetch_add results sum %ld, expected %ld", total, n * (n - 1));
    }
    shmem_barrier_all();

    /* every fetching _nbi form (default and ctx), on the right neighbour,
     * one PE at a time so the expected old values are known */
    int right = right_of(me, npes);
    for (int turn = 0; turn < npes; turn++) {
        if (turn == me) {
            long lf[8];
            int if_[4];
            unsigned int uf[4];
            uint64_t u64f[4];
            double df[2];
            float ff[2];
            memset(lf, 0xff, sizeof(lf));
            shmem_long_atomic_set(lc, 10, right);
            shmem_quiet();
            shmem_long_atomic_fetch_nbi(&lf[0], lc, right);                /* 10 */
            shmem_long_atomic_swap_nbi(&lf[1], lc, 20, right);             /* 10 -> 20 */
            shmem_long_atomic_compare_swap_nbi(&lf[2], lc, 20, 30, right); /* 20 -> 30 */
            shmem_long_atomic_compare_swap_nbi(&lf[3], lc, 99, 40, right); /* 30, no change */
            shmem_atomic_fetch_inc_nbi(&lf[4], lc, right); /* 30 -> 31 (C11 generic) */
            shmem_ctx_long_atomic_fetch_add_nbi(ctx, &lf[5], lc, 9, right); /* 31 -> 40 */
            shmem_ctx_long_atomic_fetch_inc_nbi(ctx, &lf[6], lc, right);    /* 40 -> 41 */
            shmem_ctx_long_atomic_fetch_nbi(ctx, &lf[7], lc, right);        /* 41 */
            shmem_quiet();
            shmem_ctx_quiet(ctx);
            long expect[8] = {10, 10, 20, 30, 30, 31, 40, 41};
            for (int i = 0; i < 8; i++)
                CHECK(lf[i] == expect[i], "long nbi [%d] = %ld, expected %ld", i, lf[i], expect[i]);
            CHECK(shmem_long_g(lc, right) == 41, "long after nbi");

            shmem_int_atomic_set(ic, -5, right);
            shmem_int_atomic_fetch_add_nbi(&if_[0], ic, 7, right);                 /* -5 -> 2 */
            shmem_ctx_int_atomic_swap_nbi(ctx, &if_[1], ic, -9, right);            /* 2 -> -9 */
            shmem_ctx_int_atomic_compare_swap_nbi(ctx, &if_[2], ic, -9, 4, right); /* -9 -> 4 */
            shmem_int_atomic_fetch_nbi(&if_[3], ic, right);                        /* 4 */
            shmem_quiet();
            CHECK(if_[0] == -5 && if_[1] == 2 && if_[2] == -9 && if_[3] == 4, "int nbi %d %d %d %d",
                  if_[0], if_[1], if_[2], if_[3]);

            shmem_uint_atomic_set(bits, 0xf0u, right);
            shmem_uint_atomic_fetch_and_nbi(&uf[0], bits, 0x3cu, right);          /* f0 -> 30 */
            shmem_uint_atomic_fetch_or_nbi(&uf[1], bits, 0x05u, right);           /* 30 -> 35 */
            shmem_ctx_uint_atomic_fetch_xor_nbi(ctx, &uf[2], bits, 0xffu, right); /* 35 -> ca */
            shmem_ctx_uint_atomic_fetch_and_nbi(ctx, &uf[3], bits, 0x0fu, right); /* ca -> 0a */
            shmem_quiet();
            CHECK(uf[0] == 0xf0 && uf[1] == 0x30 && uf[2] == 0x35 && uf[3] == 0xca,
                  "uint bit nbi %#x %#x %#x %#x", uf[0], uf[1], uf[2], uf[3]);
            CHECK(shmem_uint_atomic_fetch(bits, right) == 0x0a, "uint after bit nbi");

            shmem_uint64_atomic_set(&uc[1], 1ull << 40, right);
            shmem_uint64_atomic_fetch_or_nbi(&u64f[0], &uc[1], 1, right);
            shmem_ctx_uint64_atomic_fetch_xor_nbi(ctx, &u64f[1], &uc[1], 1ull << 40, right);
            shmem_ctx_uint64_atomic_fetch_add_nbi(ctx, &u64f[2], &uc[1], 1ull << 33, right);
            shmem_uint64_atomic_fetch_nbi(&u64f[3], &uc[1], right);
            shmem_quiet();
            CHECK(u64f[0] == 1ull << 40 && u64f[1] == (1ull << 40) + 1 && u64f[2] == 1 &&
                      u64f[3] == (1ull << 33) + 1,
                  "uint64 nbi");

            shmem_double_atomic_set(dv, 1.5, right);
            shmem_double_atomic_swap_nbi(&df[0], dv, -2.5, right);
            shmem_ctx_double_atomic_fetch_nbi(ctx, &df[1], dv, right);
            shmem_ctx_float_atomic_set(ctx, fv, 0.75f, right);
            shmem_ctx_float_atomic_swap_nbi(ctx, &ff[0], fv, 8.0f, right);
            shmem_float_atomic_fetch_nbi(&ff[1], fv, right);
            shmem_quiet();
            CHECK(df[0] == 1.5 && df[1] == -2.5, "double nbi %g %g", df[0], df[1]);
            CHECK(ff[0] == 0.75f && ff[1] == 8.0f, "float nbi %g %g", ff[0], ff[1]);
            CHECK(shmem_ctx_double_atomic_swap(ctx, dv, 0.0, right) == -2.5, "ctx double swap");
            CHECK(shmem_ctx_long_atomic_fetch_inc(ctx, lc, right) == 41, "ctx fetch_inc");
            CHECK(shmem_ctx_ulong_atomic_fetch_and(ctx, (unsigned long *)lc, 2, right) == 42,
                  "ctx fetch_and");
            CHECK(shmem_ctx_long_atomic_swap(ctx, lc, 7, right) == 2, "ctx swap");
            shmem_ctx_long_atomic_add(ctx, lc, 3, right);
            shmem_ctx_long_atomic_set(ctx, &lc[0], shmem_ctx_long_atomic_fetch(ctx, lc, right) * 2,
                                      right);
            shmem_ctx_quiet(ctx);
            CHECK(shmem_long_g(lc, right) == 20, "ctx add/set %ld", shmem_long_g(lc, right));
        }
        shmem_barrier_all();
    }
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    shmem_free(sums);
    shmem_free(fv);
    shmem_free(dv);
    shmem_free(bits);
    shmem_free(uc);
    shmem_free(ic);
    shmem_free(lc);
}

/* ---- blocked strided transfers (1.6) ------------------------------------------------ */

static void mode_ibput(void)
{
    int right = right_of(me, npes), left = left_of(me, npes);
    int *di = shmem_malloc(128 * sizeof(int));
    int64_t *d64 = shmem_malloc(128 * sizeof(int64_t));
    int16_t *d16 = shmem_malloc(128 * sizeof(int16_t));
    long double *dld = shmem_malloc(64 * sizeof(long double));
    int si[128];
    int64_t s64[128];
    int16_t s16[128];
    long double sld[64];
    shmem_ctx_t ctx;

    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
    for (int i = 0; i < 128; i++) {
        di[i] = -1;
        d64[i] = -1;
        d16[i] = -1;
        si[i] = me * 1000 + i;
        s64[i] = (int64_t)me << 40 | i;
        s16[i] = (int16_t)(me * 100 + i);
    }
    for (int i = 0; i < 64; i++) {
        dld[i] = -1;
        sld[i] = me + i / 4.0L;
    }
    shmem_barrier_all();
    /* 6 blocks of 3: dest block b at 8b, source block b at 5b */
    shmem_int_ibput(di, si, 8, 5, 3, 6, right);
    /* sized, contiguous source (sst = bsize), dest stride 10 */
    shmem_ibput64(d64, s64, 10, 4, 4, 5, right);
    shmem_ibput(ctx, d16, s16, 7, 2, 2, 9, right); /* C11 generic: shmem_ctx_int16/short_ibput */
    shmem_ctx_longdouble_ibput(ctx, dld, sld, 3, 1, 1, 20, right); /* bsize 1: like iput */
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    for (int i = 0; i < 128; i++) {
        int b = i / 8, k = i % 8;
        int expect = (b < 6 && k < 3) ? left * 1000 + b * 5 + k : -1;
        CHECK(di[i] == expect, "int ibput [%d] = %d, expected %d", i, di[i], expect);
        b = i / 10;
        k = i % 10;
        int64_t e64 = (b < 5 && k < 4) ? ((int64_t)left << 40 | (b * 4 + k)) : -1;
        CHECK(d64[i] == e64, "ibput64 [%d]", i);
        b = i / 7;
        k = i % 7;
        int16_t e16 = (b < 9 && k < 2) ? (int16_t)(left * 100 + b * 2 + k) : -1;
        CHECK(d16[i] == e16, "ctx ibput16 [%d] = %d, expected %d", i, d16[i], e16);
        if (errors) break;
    }
    for (int i = 0; i < 60; i++) {
        long double e = (i % 3 == 0) ? left + (i / 3) / 4.0L : -1;
        CHECK(dld[i] == e, "ctx longdouble ibput [%d]", i);
    }
    /* ibget: back from the right what I put there, re-blocked */
    {
        int gi[64];
        int64_t g64[64];
        for (int i = 0; i < 64; i++) {
            gi[i] = -2;
            g64[i] = -2;
        }
        /* remote blocks at 8b (3 each) into local blocks at 4b */
        shmem_int_ibget(gi, di, 4, 8, 3, 6, right);
        shmem_ctx_ibget64(ctx, g64, d64, 4, 10, 4, 5, right);
        for (int i = 0; i < 64; i++) {
            int b = i / 4, k = i % 4;
            int expect = (b < 6 && k < 3) ? me * 1000 + b * 5 + k : -2;
            CHECK(gi[i] == expect, "int ibget [%d] = %d, expected %d", i, gi[i], expect);
            CHECK(g64[i] == (i < 20 ? ((int64_t)me << 40 | i) : -2), "ctx ibget64 [%d]", i);
        }
        /* zero blocks or zero-sized blocks move nothing */
        shmem_int_ibget(gi, di, 4, 8, 3, 0, right);
        shmem_ibget32(gi, di, 4, 8, 0, 6, right);
        CHECK(gi[0] == me * 1000, "empty ibget wrote");
    }
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    shmem_free(dld);
    shmem_free(d16);
    shmem_free(d64);
    shmem_free(di);
}

/* ---- put-with-signal ---------------------------------------------------------------- */

#define SIG_ITERS 300

static void mode_signal(void)
{
    int right = right_of(me, npes), left = left_of(me, npes);
    size_t maxlen = 4096;
    long *data = shmem_calloc(maxlen / sizeof(long), sizeof(long));
    uint64_t *sig = shmem_calloc(2, sizeof(uint64_t)); /* [0] data signal, [1] acks */
    long src[4096 / sizeof(long)];
    shmem_ctx_t ctx;

    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
    shmem_barrier_all();
    /* Ring: each iteration puts a block to the right with its signal; the
     * receiver checks the block when the signal says it arrived, then
     * acknowledges to the left so that the next block may come. SET and
     * ADD alternate: the signal reads exactly `it` after iteration it. */
    for (int it = 1; it <= SIG_ITERS; it++) {
        size_t n = (size_t)1 << (it % 10); /* 1 .. 512 longs */
        if (n > maxlen / sizeof(long)) n = maxlen / sizeof(long);
        for (size_t i = 0; i < n; i++) src[i] = (long)it * 1000000L + me * 1000L + (long)i;
        /* the right neighbour has consumed iteration it-1 */
        shmem_signal_wait_until(&sig[1], SHMEM_CMP_GE, (uint64_t)it - 1);
        switch (it % 6) {
        case 0:
            shmem_long_put_signal(data, src, n, &sig[0], (uint64_t)it, SHMEM_SIGNAL_SET, right);
            break;
        case 1:
            shmem_long_put_signal(data, src, n, &sig[0], 1, SHMEM_SIGNAL_ADD, right);
            break;
        case 2:
            shmem_ctx_putmem_signal_nbi(ctx, data, src, n * sizeof(long), &sig[0], (uint64_t)it,
                                        SHMEM_SIGNAL_SET, right);
            break;
        case 3:
            shmem_put64_signal_nbi(data, src, n, &sig[0], 1, SHMEM_SIGNAL_ADD, right);
            break;
        case 4:
            shmem_put_signal(ctx, data, src, n, &sig[0], (uint64_t)it, SHMEM_SIGNAL_SET, right);
            break; /* C11 generic */
        default:
            shmem_ctx_put32_signal(ctx, data, src, 2 * n, &sig[0], 1, SHMEM_SIGNAL_ADD, right);
            break;
        }
        uint64_t got = shmem_signal_wait_until(&sig[0], SHMEM_CMP_GE, (uint64_t)it);
        CHECK(got == (uint64_t)it, "signal_wait_until returned %llu at iteration %d",
              (unsigned long long)got, it);
        CHECK(shmem_signal_fetch(&sig[0]) == (uint64_t)it, "signal_fetch at %d", it);
        for (size_t i = 0; i < n; i++) {
            long expect = (long)it * 1000000L + left * 1000L + (long)i;
            if (data[i] != expect) {
                CHECK(0, "iteration %d data[%zu] = %ld, expected %ld", it, i, data[i], expect);
                break;
            }
        }
        if (it % 2)
            shmem_signal_add(&sig[1], 1, left);
        else
            shmem_ctx_signal_set(ctx, &sig[1], (uint64_t)it, left);
    }
    shmem_barrier_all();

    /* Many senders ADD into one signal with data in their own slots;
     * the static signal, a zero-length payload now and then. */
    {
        int rounds = 50;
        for (int r = 1; r <= rounds; r++) {
            long v = (long)r * 100 + me;
            if (r % 5 == 0)
                shmem_putmem_signal(&static_longs[me], &v, 0, &static_sig, 1, SHMEM_SIGNAL_ADD, 0);
            else
                shmem_long_put_signal(&static_longs[me], &v, 1, &static_sig, 1, SHMEM_SIGNAL_ADD,
                                      0);
        }
        if (me == 0) {
            uint64_t total = (uint64_t)rounds * (uint64_t)npes;
            CHECK(shmem_signal_wait_until(&static_sig, SHMEM_CMP_EQ, total) == total,
                  "add signal total");
            for (int p = 0; p < npes; p++)
                CHECK(static_longs[p] == (long)(rounds - 1) * 100 + p, "slot %d = %ld", p,
                      static_longs[p]);
        }
        shmem_barrier_all();
    }
    /* signal_set / signal_add without payload, and the comparisons */
    if (me == 0) static_sig = 0;
    shmem_barrier_all();
    shmem_signal_add(&static_sig, (uint64_t)me + 1, 0);
    shmem_barrier_all();
    if (me == 0) {
        uint64_t total = (uint64_t)npes * (npes + 1) / 2;
        CHECK(shmem_signal_wait_until(&static_sig, SHMEM_CMP_LE, total) == total,
              "signal_add total");
        CHECK(shmem_signal_wait_until(&static_sig, SHMEM_CMP_NE, 0) == total, "NE");
        CHECK(shmem_signal_wait_until(&static_sig, SHMEM_CMP_GT, total - 1) == total, "GT");
    }
    shmem_barrier_all();
    shmem_signal_set(&sig[0], ~0ull - me, right); /* above INT64_MAX: compared unsigned */
    shmem_barrier_all();
    CHECK(shmem_signal_wait_until(&sig[0], SHMEM_CMP_GT, 1) == ~0ull - left,
          "unsigned signal compare");
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    shmem_free(sig);
    shmem_free(data);
}

/* ---- wait/test over sets ------------------------------------------------------------- */

/* Every PE sets its slot in every PE's array, in its own random order. */
static void scatter_flags(void (*set)(int slot, int pe, int value), int value)
{
    unsigned state = 12345u + 977u * (unsigned)me;
    int order[256];
    for (int p = 0; p < npes; p++) order[p] = p;
    for (int p = npes - 1; p > 0; p--) {
        int j = (int)(rnd(&state) % (unsigned)(p + 1)), t = order[p];
        order[p] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < npes; k++) {
        if (rnd(&state) % 4 == 0) sched_yield();
        set(me, order[k], value);
    }
}

static int *wflags_i;
static long *wflags_l;
static uint64_t *wflags_u;
static short *wflags_s;
static void set_i(int slot, int pe, int v)
{
    shmem_int_atomic_set(&wflags_i[slot], v, pe);
}
static void set_l(int slot, int pe, int v)
{
    shmem_long_atomic_set(&wflags_l[slot], v, pe);
}
static void set_u(int slot, int pe, int v)
{
    shmem_uint64_atomic_set(&wflags_u[slot], (uint64_t)v * 1000 + (uint64_t)slot, pe);
}
static void set_s(int slot, int pe, int v)
{
    shmem_short_p(&wflags_s[slot], (short)-v, pe);
    shmem_fence();
}

static void mode_wait(void)
{
    int n = npes;
    int *status = calloc((size_t)n, sizeof(int));
    size_t *idx = calloc((size_t)n, sizeof(size_t));
    int *seen = calloc((size_t)n, sizeof(int));
    uint64_t *vals = calloc((size_t)n, sizeof(uint64_t));

    wflags_i = shmem_calloc((size_t)n, sizeof(int));
    wflags_l = shmem_calloc((size_t)n, sizeof(long));
    wflags_u = shmem_calloc((size_t)n, sizeof(uint64_t));
    wflags_s = shmem_calloc((size_t)n, sizeof(short));
    shmem_barrier_all();

    /* nothing set yet: tests do not block and say so */
    CHECK(shmem_int_test_any(wflags_i, (size_t)n, NULL, SHMEM_CMP_EQ, 1) == SIZE_MAX,
          "test_any before");
    CHECK(shmem_int_test_some(wflags_i, (size_t)n, idx, NULL, SHMEM_CMP_EQ, 1) == 0,
          "test_some before");
    CHECK(shmem_int_test_all(wflags_i, (size_t)n, NULL, SHMEM_CMP_EQ, 1) == 0, "test_all before");
    CHECK(shmem_int_test_all(wflags_i, 0, NULL, SHMEM_CMP_EQ, 1) == 1, "test_all of nothing");
    CHECK(shmem_int_test_any(wflags_i, 0, NULL, SHMEM_CMP_EQ, 1) == SIZE_MAX,
          "test_any of nothing");
    for (int i = 0; i < n; i++) status[i] = 1;
    CHECK(shmem_int_test_all(wflags_i, (size_t)n, status, SHMEM_CMP_EQ, 1) == 1,
          "test_all, all excluded");
    CHECK(shmem_int_wait_until_any(wflags_i, (size_t)n, status, SHMEM_CMP_EQ, 1) == SIZE_MAX,
          "wait_any, all excluded");
    CHECK(shmem_int_wait_until_some(wflags_i, (size_t)n, idx, status, SHMEM_CMP_EQ, 1) == 0,
          "wait_some, all excluded");
    CHECK(shmem_int_wait_until_some(wflags_i, 0, idx, NULL, SHMEM_CMP_EQ, 1) == 0,
          "wait_some of nothing");
    shmem_int_wait_until_all(wflags_i, 0, NULL, SHMEM_CMP_EQ, 1);
    memset(status, 0, sizeof(int) * (size_t)n);
    shmem_barrier_all();

    /* round 1, int: wait_until_any until every slot was returned once,
     * excluding what was returned (the status mask) */
    scatter_flags(set_i, 1);
    for (int k = 0; k < n; k++) {
        size_t i =
            shmem_wait_until_any(wflags_i, (size_t)n, status, SHMEM_CMP_EQ, 1); /* C11 generic */
        CHECK(i < (size_t)n && !status[i], "wait_until_any returned %zu", i);
        if (i >= (size_t)n) break;
        status[i] = 1;
        seen[i]++;
    }
    CHECK(shmem_int_wait_until_any(wflags_i, (size_t)n, status, SHMEM_CMP_EQ, 1) == SIZE_MAX,
          "any after all excluded");
    for (int i = 0; i < n; i++) CHECK(seen[i] == 1, "slot %d returned %d times by any", i, seen[i]);
    CHECK(shmem_int_test_all(wflags_i, (size_t)n, NULL, SHMEM_CMP_EQ, 1) == 1, "test_all after");
    CHECK(shmem_int_test_any(wflags_i, (size_t)n, NULL, SHMEM_CMP_NE, 0) < (size_t)n,
          "test_any after");
    CHECK(shmem_int_test_some(wflags_i, (size_t)n, idx, NULL, SHMEM_CMP_GE, 1) == (size_t)n,
          "test_some after");
    shmem_barrier_all();

    /* round 2, long: wait_until_some collects every slot exactly once */
    memset(status, 0, sizeof(int) * (size_t)n);
    memset(seen, 0, sizeof(int) * (size_t)n);
    scatter_flags(set_l, 2);
    for (int got = 0; got < n;) {
        size_t c = shmem_long_wait_until_some(wflags_l, (size_t)n, idx, status, SHMEM_CMP_GE, 2);
        CHECK(c >= 1 && c <= (size_t)(n - got), "wait_until_some returned %zu", c);
        if (c < 1 || c > (size_t)(n - got)) break;
        for (size_t k = 0; k < c; k++) {
            CHECK(idx[k] < (size_t)n && !status[idx[k]], "some index %zu", idx[k]);
            if (idx[k] < (size_t)n) {
                status[idx[k]] = 1;
                seen[idx[k]]++;
            }
        }
        got += (int)c;
    }
    for (int i = 0; i < n; i++)
        CHECK(seen[i] == 1, "slot %d returned %d times by some", i, seen[i]);
    shmem_long_wait_until_all(wflags_l, (size_t)n, NULL, SHMEM_CMP_EQ, 2);
    shmem_barrier_all();

    /* round 3, uint64 vectors: slot i must reach its own value */
    for (int i = 0; i < n; i++) vals[i] = 3 * 1000 + (uint64_t)i;
    scatter_flags(set_u, 3);
    {
        size_t i =
            shmem_uint64_wait_until_any_vector(wflags_u, (size_t)n, NULL, SHMEM_CMP_EQ, vals);
        CHECK(i < (size_t)n && wflags_u[i] == vals[i], "any_vector returned %zu", i);
        size_t c =
            shmem_uint64_wait_until_some_vector(wflags_u, (size_t)n, idx, NULL, SHMEM_CMP_EQ, vals);
        CHECK(c >= 1 && c <= (size_t)n, "some_vector returned %zu", c);
        for (size_t k = 0; k < c && k < (size_t)n; k++)
            CHECK(wflags_u[idx[k]] == vals[idx[k]], "some_vector index %zu", idx[k]);
        shmem_uint64_wait_until_all_vector(wflags_u, (size_t)n, NULL, SHMEM_CMP_EQ, vals);
        for (int j = 0; j < n; j++) CHECK(wflags_u[j] == vals[j], "all_vector slot %d", j);
        CHECK(shmem_uint64_test_all_vector(wflags_u, (size_t)n, NULL, SHMEM_CMP_EQ, vals) == 1,
              "test_all_vector");
        vals[0] += 1; /* slot 0 no longer matches; the others still do */
        CHECK(shmem_uint64_test_all_vector(wflags_u, (size_t)n, NULL, SHMEM_CMP_EQ, vals) == 0,
              "test_all_vector, one off");
        CHECK(shmem_uint64_test_some_vector(wflags_u, (size_t)n, idx, NULL, SHMEM_CMP_EQ, vals) ==
                  (size_t)n - 1,
              "test_some_vector, one off");
        CHECK(shmem_uint64_test_any_vector(wflags_u, (size_t)n, NULL, SHMEM_CMP_LT, vals) == 0,
              "test_any_vector LT: only slot 0");
        status[0] = 1;
        for (int i = 1; i < n; i++) status[i] = 0;
        CHECK(shmem_uint64_test_any_vector(wflags_u, (size_t)n, status, SHMEM_CMP_LT, vals) ==
                  SIZE_MAX,
              "test_any_vector, slot 0 excluded");
    }
    shmem_barrier_all();

    /* round 4, short with negative values: signed comparisons */
    scatter_flags(set_s, 4);
    shmem_short_wait_until_all(wflags_s, (size_t)n, NULL, SHMEM_CMP_LT, 0);
    CHECK(shmem_short_test_all(wflags_s, (size_t)n, NULL, SHMEM_CMP_EQ, -4) == 1, "short test_all");
    CHECK(shmem_short_test_any(wflags_s, (size_t)n, NULL, SHMEM_CMP_GT, -4) == SIZE_MAX,
          "short test_any GT");
    {
        short sv[256];
        for (int i = 0; i < n; i++) sv[i] = (short)(i % 2 ? -3 : -5);
        /* odd slots: -4 < -3; even slots: -4 > -5 */
        CHECK(shmem_short_test_some_vector(wflags_s, (size_t)n, idx, NULL, SHMEM_CMP_LT, sv) ==
                  (size_t)n / 2,
              "short some_vector LT");
        CHECK(shmem_short_wait_until_any_vector(wflags_s, (size_t)n, NULL, SHMEM_CMP_GT, sv) % 2 ==
                  0,
              "short any_vector GT");
    }
    /* size_t / ptrdiff_t locally */
    {
        size_t *sz = shmem_calloc(3, sizeof(size_t)), idx3[3];
        sz[0] = 1;
        sz[1] = SIZE_MAX;
        sz[2] = 2;
        CHECK(shmem_size_test_some(sz, 3, idx3, NULL, SHMEM_CMP_GT, 1) == 2 && idx3[0] == 1 &&
                  idx3[1] == 2,
              "size_t some GT");
        CHECK(shmem_ptrdiff_test_any((ptrdiff_t *)sz, 3, NULL, SHMEM_CMP_LT, 0) == 1,
              "ptrdiff any LT 0");
        shmem_free(sz);
    }
    shmem_barrier_all();
    shmem_free(wflags_s);
    shmem_free(wflags_u);
    shmem_free(wflags_l);
    shmem_free(wflags_i);
    free(vals);
    free(seen);
    free(idx);
    free(status);
}

/* ---- locks ----------------------------------------------------------------------------- */

#define LOCK_ITERS 200

static void mode_lock(void)
{
    long *heap_lock = shmem_calloc(1, sizeof(long));
    long *counter = shmem_calloc(1, sizeof(long));
    long *block = shmem_calloc(64, sizeof(long));
    long *held = shmem_calloc(1, sizeof(long));
    long buf[64];

    shmem_barrier_all();
    /* a non-atomic read-modify-write of PE 0's counter in the critical
     * section: any overlap loses an increment */
    for (int i = 0; i < LOCK_ITERS; i++) {
        shmem_set_lock(&static_lock);
        long v = shmem_long_g(&static_counter, 0);
        if (i % 50 == 0) sched_yield(); /* hold it a while now and then */
        shmem_long_p(&static_counter, v + 1, 0);
        shmem_clear_lock(&static_lock);
    }
    /* a lock on the heap; a 64-long block is read and written back whole */
    for (int i = 0; i < LOCK_ITERS / 4; i++) {
        shmem_set_lock(heap_lock);
        CHECK(shmem_long_atomic_fetch_inc(held, npes - 1) == 0, "two PEs in the critical section");
        shmem_long_get(buf, block, 64, npes - 1);
        for (int k = 1; k < 64; k++)
            CHECK(buf[k] == buf[0], "block torn: [%d] = %ld, [0] = %ld", k, buf[k], buf[0]);
        for (int k = 0; k < 64; k++) buf[k]++;
        shmem_long_put(block, buf, 64, npes - 1);
        shmem_long_atomic_add(held, -1, npes - 1);
        shmem_clear_lock(heap_lock);
        if (errors) break;
    }
    shmem_barrier_all();
    if (me == 0)
        CHECK(static_counter == (long)npes * LOCK_ITERS, "counter %ld, expected %ld",
              static_counter, (long)npes * LOCK_ITERS);
    if (me == npes - 1)
        CHECK(block[0] == (long)npes * (LOCK_ITERS / 4) && block[63] == block[0], "block %ld",
              block[0]);

    /* test_lock: fails while another PE holds it, succeeds once free */
    if (me == 0) shmem_set_lock(&static_lock);
    shmem_barrier_all();
    if (me != 0) CHECK(shmem_test_lock(&static_lock) != 0, "test_lock acquired a held lock");
    shmem_barrier_all();
    if (me == 0) shmem_clear_lock(&static_lock);
    shmem_barrier_all();
    for (int i = 0; i < 20; i++) {
        unsigned long tries = 0;
        while (shmem_test_lock(&static_lock) != 0) {
            if (++tries % 16 == 0) sched_yield();
        }
        long v = shmem_long_g(&static_counter, 0);
        shmem_long_p(&static_counter, v + 1, 0);
        shmem_clear_lock(&static_lock);
    }
    shmem_barrier_all();
    if (me == 0)
        CHECK(static_counter == (long)npes * (LOCK_ITERS + 20), "counter after test_lock %ld",
              static_counter);
    CHECK(static_lock == 0 && *heap_lock == 0, "lock words not back to 0: %#lx %#lx", static_lock,
          *heap_lock);
    shmem_barrier_all();
    shmem_free(held);
    shmem_free(block);
    shmem_free(counter);
    shmem_free(heap_lock);
}

static int run_mode(const char *mode)
{
    if (!strcmp(mode, "ctx"))
        mode_ctx();
    else if (!strcmp(mode, "amo"))
        mode_amo();
    else if (!strcmp(mode, "ibput"))
        mode_ibput();
    else if (!strcmp(mode, "signal"))
        mode_signal();
    else if (!strcmp(mode, "wait"))
        mode_wait();
    else if (!strcmp(mode, "lock"))
        mode_lock();
    else if (!strcmp(mode, "badctx"))
        shmem_ctx_long_p(SHMEM_CTX_INVALID, &static_counter, 1, 0);
    else if (!strcmp(mode, "badsig"))
        shmem_long_put_signal(static_longs, static_longs, 1, &static_sig, 1, 7, 0);
    else if (!strcmp(mode, "destroydefault"))
        shmem_ctx_destroy(SHMEM_CTX_DEFAULT);
    else if (!strcmp(mode, "badctxpe")) {
        shmem_ctx_t ctx;
        shmem_team_create_ctx(SHMEM_TEAM_SHARED, 0, &ctx);
        shmem_ctx_long_p(ctx, &static_counter, 1, shmem_team_n_pes(SHMEM_TEAM_SHARED));
    } else
        return -1;
    return 0;
}

/* argv[1]: one mode or several, comma-separated (one job start for all). */
int main(int argc, char **argv)
{
    char modes[256], *save = NULL;

    snprintf(modes, sizeof(modes), "%s", argc > 1 ? argv[1] : "ctx");
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (npes > 256) {
        fprintf(stderr, "at most 256 PEs\n");
        return 2;
    }
    for (char *mode = strtok_r(modes, ",", &save); mode != NULL;
         mode = strtok_r(NULL, ",", &save)) {
        if (run_mode(mode) != 0) {
            fprintf(stderr, "usage: mp_shmem_p2p MODE[,MODE...]: ctx amo ibput signal wait lock "
                            "badctx badsig destroydefault badctxpe\n");
            return 2;
        }
        shmem_barrier_all();
        if (me == 0 || errors)
            printf("mp_shmem_p2p %s on %d PEs: PE %d %s\n", mode, npes, me,
                   errors ? "FAILED" : "ok");
    }
    shmem_finalize();
    return errors ? 1 : 0;
}
