/*
 * OpenSHMEM teams and team-based collectives, launched as N PEs under
 * oshrun; one mode per run.
 *   mp_shmem_team all [nodes]   every check below (nodes: oshrun --nodes value)
 *   mp_shmem_team split|split2d|shared [nodes]|reuse|coll|b2b|deprecated|skew
 *   mp_shmem_team destroyworld  must end the job with a clear error
 *   mp_shmem_team bench [iters] timings (PE 0 prints ns per call)
 * Every check compares real values on every PE; exit 0 only if all matched.
 */
#include <shmem.h>

#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/common/mp_check.h"

static int me, npes, nodes = 1, errors;

#define MAXN  1000         /* largest element count tested */
#define BUFSZ (512 * 1024) /* bytes of each symmetric test buffer */

static char *src, *dst, *aux; /* symmetric, BUFSZ each */
static long *pSync, *pSync2;  /* symmetric, on the heap (static data may not be) */
static double complex *pWrk;

static const size_t sizes[] = {0, 1, 7, 100, MAXN};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* ---- team structure ------------------------------------------------------------------ */

/* A strided sub-team in reverse order: world n-1, n-3, ... (n >= 3), the
 * whole world reversed (n = 2), or {0} (n = 1). */
static int sub_stride(void)
{
    return npes >= 3 ? -2 : -1;
}
static int sub_size(void)
{
    return npes == 1 ? 1 : (npes - 1) / -sub_stride() + 1;
}

static shmem_team_t make_sub(void)
{
    shmem_team_t t = SHMEM_TEAM_INVALID;
    int start = npes - 1, stride = sub_stride(), size = sub_size(), member;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, size, NULL, 0, &t);

    CHECK(rc == 0, "split_strided(%d, %d, %d) = %d", start, stride, size, rc);
    member = (start - me) % -stride == 0 && me <= start;
    CHECK(member == (t != SHMEM_TEAM_INVALID), "membership of PE %d in the sub-team", me);
    return t;
}

static void mode_split(void)
{
    shmem_team_t t, sub = make_sub();
    shmem_team_config_t cfg = {.num_contexts = 3}, got = {.num_contexts = -7};
    struct {
        int start, stride, size;
    } bad[] = {
        {npes, 1, 1},     {-1, 1, 1}, {0, 1, 0},  {0, 1, npes + 1},
        {npes - 1, 1, 2}, {0, 0, 2},  {0, -1, 2}, {0, 2, npes / 2 + 1 + (npes % 2)},
    };

    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "world my_pe");
    CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes, "world n_pes");
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1, "my_pe(INVALID)");
    CHECK(shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1, "n_pes(INVALID)");
    CHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &got) != 0,
          "get_config(INVALID)");
    CHECK(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
              got.num_contexts == 0,
          "world config: %d", got.num_contexts);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD) == -1,
          "translate INVALID");
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, npes, SHMEM_TEAM_WORLD) == -1,
          "translate pe n");
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, -1, SHMEM_TEAM_WORLD) == -1, "translate pe -1");
    CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, "sync(INVALID)");
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, src, me) == (void *)src, "team_ptr to myself");
    CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, src, 0) == NULL, "team_ptr(INVALID)");
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, src, npes) == NULL, "team_ptr(pe n)");

    /* the reversed strided sub-team, both ways */
    for (int i = 0; i < sub_size(); i++) {
        int w = npes - 1 + i * sub_stride();
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, w, sub) == (sub ? i : -1),
              "world %d -> sub", w);
        if (sub != SHMEM_TEAM_INVALID) {
            CHECK(shmem_team_translate_pe(sub, i, SHMEM_TEAM_WORLD) == w, "sub %d -> world", i);
        }
    }
    if (sub != SHMEM_TEAM_INVALID) {
        int mine = (npes - 1 - me) / -sub_stride();
        CHECK(shmem_team_my_pe(sub) == mine, "sub my_pe %d, expected %d", shmem_team_my_pe(sub),
              mine);
        CHECK(shmem_team_n_pes(sub) == sub_size(), "sub n_pes");
        CHECK(shmem_team_translate_pe(sub, sub_size(), SHMEM_TEAM_WORLD) == -1, "sub pe n");
        if (npes >= 3) {
            /* a world PE of the other parity is not in the sub-team */
            CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, npes - 2, sub) == -1, "not a member");
        }
        CHECK(shmem_team_ptr(sub, src, mine) == (void *)src, "team_ptr(sub, me)");
        CHECK(shmem_team_sync(sub) == 0, "sync(sub)");
    } else {
        CHECK(shmem_team_my_pe(sub) == -1 && shmem_team_n_pes(sub) == -1, "non-member queries");
        CHECK(shmem_long_sum_reduce(sub, (long *)dst, (long *)src, 1) != 0, "reduce on INVALID");
        CHECK(shmem_broadcastmem(sub, dst, src, 8, 0) != 0, "broadcast on INVALID");
    }

    /* several valid triplets: sizes 1 (also with stride 0), the last PE, strides 1..3 */
    for (int start = 0; start < npes; start++) {
        for (int stride = 0; stride <= 3; stride++) {
            int size = stride == 0 ? 1 : (npes - 1 - start) / stride + 1;
            for (int sz = 1; sz <= size; sz += (size > 2 ? size - 1 : 1)) {
                int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, sz, &cfg,
                                                  SHMEM_TEAM_NUM_CONTEXTS, &t);
                int rel = me - start, idx = stride ? rel / stride : 0;
                int member = rel >= 0 && (stride ? rel % stride == 0 && idx < sz : rel == 0);
                CHECK(rc == 0, "split(%d, %d, %d) = %d", start, stride, sz, rc);
                CHECK(member == (t != SHMEM_TEAM_INVALID), "split(%d, %d, %d): membership", start,
                      stride, sz);
                if (t != SHMEM_TEAM_INVALID) {
                    long one = 1;
                    got.num_contexts = -1;
                    CHECK(shmem_team_my_pe(t) == idx, "split(%d, %d, %d): my_pe %d", start, stride,
                          sz, shmem_team_my_pe(t));
                    CHECK(shmem_team_n_pes(t) == sz, "n_pes");
                    CHECK(shmem_team_get_config(t, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
                              got.num_contexts == 3,
                          "config num_contexts %d", got.num_contexts);
                    CHECK(shmem_team_translate_pe(t, sz - 1, SHMEM_TEAM_WORLD) ==
                              start + (sz - 1) * stride,
                          "last member");
                    *(long *)src = me;
                    CHECK(shmem_long_sum_reduce(t, (long *)dst, (long *)src, 1) == 0, "reduce");
                    CHECK(*(long *)dst == (long)sz * start + (long)stride * sz * (sz - 1) / 2,
                          "sum of world PEs of split(%d, %d, %d): %ld", start, stride, sz,
                          *(long *)dst);
                    (void)one;
                    shmem_team_destroy(t);
                }
            }
        }
    }
    /* invalid triplets: nonzero everywhere, no team */
    for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
        t = SHMEM_TEAM_WORLD;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, bad[b].start, bad[b].stride, bad[b].size,
                                       NULL, 0, &t) != 0 &&
                  t == SHMEM_TEAM_INVALID,
              "bad triplet (%d, %d, %d) accepted", bad[b].start, bad[b].stride, bad[b].size);
    }
    t = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &t) != 0 &&
              t == SHMEM_TEAM_INVALID,
          "split of INVALID");

    /* nested: the first half of the sub-team, split from the sub-team */
    if (sub != SHMEM_TEAM_INVALID) {
        int n = shmem_team_n_pes(sub), half = (n + 1) / 2, my = shmem_team_my_pe(sub);
        shmem_team_t nested;
        CHECK(shmem_team_split_strided(sub, 0, 1, half, NULL, 0, &nested) == 0, "nested split");
        CHECK((my < half) == (nested != SHMEM_TEAM_INVALID), "nested membership");
        if (nested != SHMEM_TEAM_INVALID) {
            for (int i = 0; i < half; i++) {
                CHECK(shmem_team_translate_pe(nested, i, SHMEM_TEAM_WORLD) ==
                          npes - 1 + i * sub_stride(),
                      "nested -> world");
                CHECK(shmem_team_translate_pe(nested, i, sub) == i, "nested -> sub");
            }
            shmem_team_destroy(nested);
        }
        shmem_team_destroy(sub);
    }
    shmem_team_destroy(SHMEM_TEAM_INVALID); /* no-op */
}

static void mode_split2d(void)
{
    int xranges[] = {1, 2, 3, npes, npes + 2};
    shmem_team_t xt, yt;

    for (size_t k = 0; k < sizeof(xranges) / sizeof(xranges[0]); k++) {
        int xr = xranges[k], xe = xr > npes ? npes : xr;
        int x = me % xe, y = me / xe, rc;
        int xsize = npes - y * xe < xe ? npes - y * xe : xe, ysize = (npes - x + xe - 1) / xe;

        rc = shmem_team_split_2d(SHMEM_TEAM_WORLD, xr, NULL, 0, &xt, NULL, 0, &yt);
        CHECK(rc == 0 && xt != SHMEM_TEAM_INVALID && yt != SHMEM_TEAM_INVALID, "split_2d(%d)", xr);
        if (rc != 0) continue;
        CHECK(shmem_team_my_pe(xt) == x && shmem_team_my_pe(yt) == y, "split_2d(%d): (%d, %d)", xr,
              shmem_team_my_pe(xt), shmem_team_my_pe(yt));
        CHECK(shmem_team_n_pes(xt) == xsize && shmem_team_n_pes(yt) == ysize,
              "split_2d(%d): sizes %d, %d (expected %d, %d)", xr, shmem_team_n_pes(xt),
              shmem_team_n_pes(yt), xsize, ysize);
        for (int i = 0; i < ysize; i++) {
            CHECK(shmem_team_translate_pe(yt, i, SHMEM_TEAM_WORLD) == x + i * xe, "y member %d", i);
        }
        for (int i = 0; i < xsize; i++) {
            CHECK(shmem_team_translate_pe(xt, i, SHMEM_TEAM_WORLD) == y * xe + i, "x member %d", i);
        }
        /* both teams work at once: sums of world PEs along my row and column */
        *(long *)src = me;
        CHECK(shmem_long_sum_reduce(xt, (long *)dst, (long *)src, 1) == 0, "x reduce");
        CHECK(*(long *)dst == (long)xsize * y * xe + (long)xsize * (xsize - 1) / 2, "x sum %ld",
              *(long *)dst);
        CHECK(shmem_long_sum_reduce(yt, (long *)dst, (long *)src, 1) == 0, "y reduce");
        CHECK(*(long *)dst == (long)ysize * x + (long)xe * ysize * (ysize - 1) / 2, "y sum %ld",
              *(long *)dst);
        shmem_team_destroy(xt);
        shmem_team_destroy(yt);
    }
    xt = yt = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, NULL, 0, &xt, NULL, 0, &yt) != 0 &&
              xt == SHMEM_TEAM_INVALID && yt == SHMEM_TEAM_INVALID,
          "split_2d(0)");
}

/* oshrun --nodes k: blocks of ceil(n / k) consecutive PEs per node */
static void mode_shared(void)
{
    int block = (npes + nodes - 1) / nodes, node = me / block;
    int size = npes - node * block < block ? npes - node * block : block;
    shmem_team_t sh = SHMEM_TEAM_SHARED;

    CHECK(shmem_team_n_pes(sh) == size, "shared size %d, expected %d", shmem_team_n_pes(sh), size);
    CHECK(shmem_team_my_pe(sh) == me % block, "shared my_pe %d", shmem_team_my_pe(sh));
    for (int i = 0; i < size; i++) {
        CHECK(shmem_team_translate_pe(sh, i, SHMEM_TEAM_WORLD) == node * block + i,
              "shared -> world");
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, node * block + i, sh) == i,
              "world -> shared");
    }
    if (npes > size) {
        int other = node == 0 ? block : 0; /* a PE of another node */
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, other, sh) == -1, "other node's PE");
    }
    /* collectives on the node, then a split of it */
    *(long *)src = me;
    CHECK(shmem_long_sum_reduce(sh, (long *)dst, (long *)src, 1) == 0, "shared reduce");
    CHECK(*(long *)dst == (long)size * node * block + (long)size * (size - 1) / 2, "shared sum %ld",
          *(long *)dst);
    CHECK(shmem_team_sync(sh) == 0, "shared sync");
    {
        shmem_team_t t;
        CHECK(shmem_team_split_strided(sh, 0, 2, (size + 1) / 2, NULL, 0, &t) == 0, "split shared");
        CHECK(((me % block) % 2 == 0) == (t != SHMEM_TEAM_INVALID), "split shared membership");
        if (t != SHMEM_TEAM_INVALID) {
            CHECK(shmem_team_translate_pe(t, shmem_team_n_pes(t) - 1, SHMEM_TEAM_WORLD) ==
                      node * block + 2 * (shmem_team_n_pes(t) - 1),
                  "split shared -> world");
            shmem_team_destroy(t);
        }
    }
}

/* ---- collectives ----------------------------------------------------------------------- */

static double dval(int pe, size_t i)
{
    return 1.0 / (pe + 3) + (double)i * 0.001;
}
static long lval(int pe, size_t i)
{
    return (long)pe * 1000003L + (long)i * 7 - 5;
}

static void fill(void *buf, unsigned char c, size_t bytes)
{
    memset(buf, c, bytes);
}

/* bytes from off on are still c */
static int untouched(const void *buf, size_t off, size_t len, unsigned char c)
{
    const unsigned char *b = buf;
    for (size_t i = off; i < off + len; i++) {
        if (b[i] != c) return 0;
    }
    return 1;
}

static void check_broadcast(shmem_team_t t, size_t n)
{
    int tn = shmem_team_n_pes(t), tme = shmem_team_my_pe(t);
    int roots[] = {0, tn - 1, tn / 2};

    for (int r = 0; r < 3; r++) {
        int root = roots[r], wroot = shmem_team_translate_pe(t, root, SHMEM_TEAM_WORLD);
        long *s = (long *)src, *d = (long *)dst;
        double *ds = (double *)src, *dd = (double *)dst;

        for (size_t i = 0; i < n; i++) s[i] = lval(me, i);
        fill(dst, 0xab, (n + 4) * sizeof(long));
        CHECK(shmem_long_broadcast(t, d, s, n, root) == 0, "long broadcast");
        for (size_t i = 0; i < n; i++) {
            CHECK(d[i] == lval(wroot, i), "broadcast(n %zu, root %d)[%zu] = %ld, expected %ld", n,
                  root, i, d[i], lval(wroot, i));
            if (d[i] != lval(wroot, i)) break;
        }
        CHECK(untouched(dst, n * sizeof(long), 4 * sizeof(long), 0xab),
              "broadcast wrote past dest");
        /* bytes, odd length; and doubles in place on the root */
        for (size_t i = 0; i < n * 3 + 1; i++) src[i] = (char)(me * 31 + i);
        CHECK(shmem_broadcastmem(t, dst, src, n * 3 + 1, root) == 0, "broadcastmem");
        for (size_t i = 0; i < n * 3 + 1; i++) {
            CHECK(dst[i] == (char)(wroot * 31 + i), "broadcastmem[%zu]", i);
            if (dst[i] != (char)(wroot * 31 + i)) break;
        }
        for (size_t i = 0; i < n; i++) ds[i] = dval(me, i);
        CHECK(shmem_double_broadcast(t, ds, ds, n, root) == 0, "double broadcast in place");
        for (size_t i = 0; i < n; i++) {
            CHECK(ds[i] == dval(wroot, i), "in-place broadcast[%zu]", i);
            if (ds[i] != dval(wroot, i)) break;
        }
        (void)dd;
    }
    CHECK(shmem_long_broadcast(t, (long *)dst, (long *)src, n, tn) != 0, "root out of range");
    (void)tme;
}

/* counts of collect: some members with n, some with n + 1 or 0 */
static size_t ccount(int idx, size_t n, int variant)
{
    if (variant == 0) return n + (size_t)(idx % 3 == 1);
    return idx % 2 ? n : (n > 0 ? 1 : 0); /* mixed small and large */
}

static void check_collect(shmem_team_t t, size_t n)
{
    int tn = shmem_team_n_pes(t), tme = shmem_team_my_pe(t);
    int *s = (int *)src, *d = (int *)dst;
    uint64_t *us = (uint64_t *)src, *ud = (uint64_t *)dst;

    /* fcollect of ints and of uint64 */
    for (size_t i = 0; i < n; i++) s[i] = (int)lval(me, i);
    fill(dst, 0xcd, (tn * n + 2) * sizeof(int));
    CHECK(shmem_int_fcollect(t, d, s, n) == 0, "fcollect");
    for (int j = 0; j < tn; j++) {
        int w = shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD);
        for (size_t i = 0; i < n; i++) {
            CHECK(d[j * n + i] == (int)lval(w, i), "fcollect(n %zu)[%d][%zu]", n, j, i);
            if (d[j * n + i] != (int)lval(w, i)) break;
        }
    }
    CHECK(untouched(dst, tn * n * sizeof(int), 2 * sizeof(int), 0xcd), "fcollect wrote past dest");
    for (size_t i = 0; i < n; i++) us[i] = (uint64_t)lval(me, i) << 20;
    CHECK(shmem_uint64_fcollect(t, ud, us, n) == 0, "uint64 fcollect");
    for (int j = 0; j < tn; j++) {
        int w = shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD);
        for (size_t i = 0; i < n; i++) {
            CHECK(ud[j * n + i] == (uint64_t)lval(w, i) << 20, "uint64 fcollect[%d][%zu]", j, i);
            if (ud[j * n + i] != (uint64_t)lval(w, i) << 20) break;
        }
    }
    /* collect with different counts */
    for (int variant = 0; variant < 2; variant++) {
        size_t mine = ccount(tme, n, variant), off = 0;
        double *ds = (double *)src, *dd = (double *)dst;

        for (size_t i = 0; i < mine; i++) ds[i] = dval(me, i);
        fill(dst, 0xef, (tn * (n + 1) + 2) * sizeof(double));
        CHECK(shmem_double_collect(t, dd, ds, mine) == 0, "collect");
        for (int j = 0; j < tn; j++) {
            int w = shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD);
            size_t c = ccount(j, n, variant);
            for (size_t i = 0; i < c; i++) {
                CHECK(dd[off + i] == dval(w, i), "collect(n %zu, variant %d)[%d][%zu]", n, variant,
                      j, i);
                if (dd[off + i] != dval(w, i)) break;
            }
            off += c;
        }
        CHECK(untouched(dst, off * sizeof(double), 2 * sizeof(double), 0xef),
              "collect wrote past dest");
    }
    /* collectmem: bytes */
    for (size_t i = 0; i < n + tme; i++) src[i] = (char)(me + 3 * i);
    CHECK(shmem_collectmem(t, dst, src, n + tme) == 0, "collectmem");
    for (int j = 0, off = 0; j < tn; off += (int)n + j, j++) {
        int w = shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD);
        for (size_t i = 0; i < n + j; i++) {
            CHECK(dst[off + i] == (char)(w + 3 * i), "collectmem[%d][%zu]", j, i);
            if (dst[off + i] != (char)(w + 3 * i)) break;
        }
    }
}

static void check_alltoall(shmem_team_t t, size_t n)
{
    int tn = shmem_team_n_pes(t), tme = shmem_team_my_pe(t);
    long *s = (long *)src, *d = (long *)dst;
    int32_t *s4 = (int32_t *)src, *d4 = (int32_t *)dst;

    /* block j of my source is for member j: value encodes (sender, receiver, index) */
    for (int j = 0; j < tn; j++)
        for (size_t i = 0; i < n; i++) s[j * n + i] = lval(me, i) * 16 + j;
    fill(dst, 0x5a, (tn * n + 2) * sizeof(long));
    CHECK(shmem_long_alltoall(t, d, s, n) == 0, "alltoall");
    for (int j = 0; j < tn; j++) {
        int w = shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD);
        for (size_t i = 0; i < n; i++) {
            CHECK(d[j * n + i] == lval(w, i) * 16 + tme, "alltoall(n %zu)[%d][%zu]", n, j, i);
            if (d[j * n + i] != lval(w, i) * 16 + tme) break;
        }
    }
    CHECK(untouched(dst, tn * n * sizeof(long), 2 * sizeof(long), 0x5a),
          "alltoall wrote past dest");
    /* alltoalls: source stride 3, dest stride 2; the gaps stay */
    for (int j = 0; j < tn; j++)
        for (size_t i = 0; i < n; i++)
            s4[3 * (j * n + i)] = (int32_t)(me * 100000 + j * 1000 + (int)i);
    fill(dst, 0x77, (2 * tn * n + 2) * sizeof(int32_t));
    CHECK(shmem_int32_alltoalls(t, d4, s4, 2, 3, n) == 0, "alltoalls");
    for (int j = 0; j < tn; j++) {
        int w = shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD);
        for (size_t i = 0; i < n; i++) {
            size_t at = 2 * (j * n + i);
            CHECK(d4[at] == (int32_t)(w * 100000 + tme * 1000 + (int)i), "alltoalls[%d][%zu] = %d",
                  j, i, d4[at]);
            CHECK(untouched(&d4[at + 1], 0, sizeof(int32_t), 0x77), "alltoalls wrote a gap");
            if (errors) break;
        }
    }
    /* alltoallmem, odd bytes */
    for (int j = 0; j < tn; j++)
        for (size_t i = 0; i < n + 1; i++) src[j * (n + 1) + i] = (char)(me * 7 + j * 3 + i);
    CHECK(shmem_alltoallmem(t, dst, src, n + 1) == 0, "alltoallmem");
    for (int j = 0; j < tn; j++) {
        int w = shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD);
        for (size_t i = 0; i < n + 1; i++) {
            CHECK(dst[j * (n + 1) + i] == (char)(w * 7 + tme * 3 + i), "alltoallmem[%d][%zu]", j,
                  i);
            if (errors) break;
        }
    }
    CHECK(shmem_int32_alltoalls(t, d4, s4, 0, 1, n) != 0, "alltoalls stride 0");
}

/* Expected values fold in team order, like the library: bit-identical. */
static void check_reduce(shmem_team_t t, size_t n)
{
    int tn = shmem_team_n_pes(t), tme = shmem_team_my_pe(t);
    int w[64];

    for (int j = 0; j < tn; j++) w[j] = shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD);

    /* int: sum, prod, min, max, and, or, xor (uint for the bitwise ones) */
    {
        int *s = (int *)src, *d = (int *)dst;
        for (int op = 0; op < 4; op++) {
            for (size_t i = 0; i < n; i++)
                s[i] = op == 1 ? 1 + (me + (int)i) % 3 : (int)lval(me, i);
            fill(dst, 0x11, (n + 2) * sizeof(int));
            int rc = op == 0   ? shmem_int_sum_reduce(t, d, s, n)
                     : op == 1 ? shmem_int_prod_reduce(t, d, s, n)
                     : op == 2 ? shmem_int_min_reduce(t, d, s, n)
                               : shmem_int_max_reduce(t, d, s, n);
            CHECK(rc == 0, "int reduce %d", op);
            for (size_t i = 0; i < n; i++) {
                int e = op == 1 ? 1 + (w[0] + (int)i) % 3 : (int)lval(w[0], i);
                for (int j = 1; j < tn; j++) {
                    int v = op == 1 ? 1 + (w[j] + (int)i) % 3 : (int)lval(w[j], i);
                    e = op == 0   ? (int)((unsigned)e + (unsigned)v)
                        : op == 1 ? e * v
                        : op == 2 ? (v < e ? v : e)
                                  : (v > e ? v : e);
                }
                CHECK(d[i] == e, "int op %d (n %zu)[%zu] = %d, expected %d", op, n, i, d[i], e);
                if (d[i] != e) break;
            }
            CHECK(untouched(dst, n * sizeof(int), 2 * sizeof(int), 0x11), "reduce wrote past dest");
        }
    }
    {
        uint64_t *s = (uint64_t *)src, *d = (uint64_t *)dst;
        for (int op = 0; op < 4; op++) {
            for (size_t i = 0; i < n; i++)
                s[i] = ((uint64_t)lval(me, i) * 0x9e3779b97f4a7c15ULL) |
                       (op == 0 ? 1ULL << me % 64 : 0);
            int rc = op == 0   ? shmem_uint64_and_reduce(t, d, s, n)
                     : op == 1 ? shmem_uint64_or_reduce(t, d, s, n)
                     : op == 2 ? shmem_uint64_xor_reduce(t, d, s, n)
                               : shmem_uint64_sum_reduce(t, d, s, n);
            CHECK(rc == 0, "uint64 reduce %d", op);
            for (size_t i = 0; i < n; i++) {
                uint64_t e = 0;
                for (int j = 0; j < tn; j++) {
                    uint64_t v = ((uint64_t)lval(w[j], i) * 0x9e3779b97f4a7c15ULL) |
                                 (op == 0 ? 1ULL << w[j] % 64 : 0);
                    e = j == 0 ? v : op == 0 ? e & v : op == 1 ? e | v : op == 2 ? e ^ v : e + v;
                }
                CHECK(d[i] == e, "uint64 op %d (n %zu)[%zu]", op, n, i);
                if (d[i] != e) break;
            }
        }
    }
    /* long sum in place, long max */
    {
        long *s = (long *)src, *d = (long *)dst;
        for (size_t i = 0; i < n; i++) s[i] = lval(me, i);
        CHECK(shmem_long_sum_reduce(t, s, s, n) == 0, "long sum in place");
        for (size_t i = 0; i < n; i++) {
            long e = 0;
            for (int j = 0; j < tn; j++) e += lval(w[j], i);
            CHECK(s[i] == e, "long in-place sum (n %zu)[%zu] = %ld, expected %ld", n, i, s[i], e);
            if (s[i] != e) break;
        }
        for (size_t i = 0; i < n; i++) s[i] = -lval(me, i) * (long)(i % 2 ? 1 : -1);
        CHECK(shmem_long_max_reduce(t, d, s, n) == 0, "long max");
        for (size_t i = 0; i < n; i++) {
            long e = 0;
            for (int j = 0; j < tn; j++) {
                long v = -lval(w[j], i) * (long)(i % 2 ? 1 : -1);
                e = j == 0 || v > e ? v : e;
            }
            CHECK(d[i] == e, "long max[%zu]", i);
            if (d[i] != e) break;
        }
    }
    /* double: sum (inexact: order matters), prod, min; in place too */
    {
        double *s = (double *)src, *d = (double *)dst;
        for (int op = 0; op < 4; op++) {
            for (size_t i = 0; i < n; i++)
                s[i] = op == 1 ? 1.0 + dval(me, i) / 8 : dval(me, i) * (op == 2 ? -1 : 1);
            int rc = op == 0   ? shmem_double_sum_reduce(t, d, s, n)
                     : op == 1 ? shmem_double_prod_reduce(t, d, s, n)
                     : op == 2 ? shmem_double_min_reduce(t, d, s, n)
                               : shmem_double_sum_reduce(t, s, s, n);
            double *r = op == 3 ? s : d;
            CHECK(rc == 0, "double reduce %d", op);
            for (size_t i = 0; i < n; i++) {
                double e = 0;
                for (int j = 0; j < tn; j++) {
                    double v =
                        op == 1 ? 1.0 + dval(w[j], i) / 8 : dval(w[j], i) * (op == 2 ? -1 : 1);
                    e = j == 0 ? v : op == 1 ? e * v : op == 2 ? (v < e ? v : e) : e + v;
                }
                CHECK(memcmp(&r[i], &e, sizeof(e)) == 0,
                      "double op %d (n %zu)[%zu] = %.17g, expected %.17g", op, n, i, r[i], e);
                if (memcmp(&r[i], &e, sizeof(e)) != 0) break;
            }
        }
    }
    /* complex double sum and prod */
    {
        double complex *s = (double complex *)src, *d = (double complex *)dst;
        for (int op = 0; op < 2; op++) {
            for (size_t i = 0; i < n; i++)
                s[i] = op ? 1.0 + (me % 2) * I : (me + 1.0) + ((double)i - me) * I;
            CHECK((op ? shmem_complexd_prod_reduce(t, d, s, n)
                      : shmem_complexd_sum_reduce(t, d, s, n)) == 0,
                  "complexd reduce");
            for (size_t i = 0; i < n; i++) {
                double complex e = 0;
                for (int j = 0; j < tn; j++) {
                    double complex v =
                        op ? 1.0 + (w[j] % 2) * I : (w[j] + 1.0) + ((double)i - w[j]) * I;
                    e = j == 0 ? v : op ? e * v : e + v;
                }
                CHECK(d[i] == e, "complexd op %d (n %zu)[%zu] = %g%+gi, expected %g%+gi", op, n, i,
                      creal(d[i]), cimag(d[i]), creal(e), cimag(e));
                if (d[i] != e) break;
            }
        }
    }
    /* scans: long inscan, exscan (also in place), double inscan */
    {
        long *s = (long *)src, *d = (long *)dst;
        for (int op = 0; op < 3; op++) {
            for (size_t i = 0; i < n; i++) s[i] = lval(me, i);
            int rc = op == 0   ? shmem_long_sum_inscan(t, d, s, n)
                     : op == 1 ? shmem_long_sum_exscan(t, d, s, n)
                               : shmem_long_sum_exscan(t, s, s, n);
            long *r = op == 2 ? s : d;
            CHECK(rc == 0, "scan %d", op);
            for (size_t i = 0; i < n; i++) {
                long e = 0;
                for (int j = 0; j < (op == 0 ? tme + 1 : tme); j++) e += lval(w[j], i);
                CHECK(r[i] == e, "scan %d (n %zu)[%zu] = %ld, expected %ld", op, n, i, r[i], e);
                if (r[i] != e) break;
            }
        }
        double *ds = (double *)src, *dd = (double *)dst;
        for (size_t i = 0; i < n; i++) ds[i] = dval(me, i);
        CHECK(shmem_double_sum_inscan(t, dd, ds, n) == 0, "double inscan");
        for (size_t i = 0; i < n; i++) {
            double e = dval(w[0], i);
            for (int j = 1; j <= tme; j++) e = e + dval(w[j], i);
            CHECK(memcmp(&dd[i], &e, sizeof(e)) == 0, "double inscan[%zu]", i);
            if (memcmp(&dd[i], &e, sizeof(e)) != 0) break;
        }
    }
}

static void coll_on(shmem_team_t t, const char *name)
{
    /* reductions where the exchange's pieces end (across nodes: one, two
     * and four pieces of up to 512 bytes, then the segments) */
    static const size_t rsizes[] = {64, 65, 128, 129, 256, 257};

    if (t == SHMEM_TEAM_INVALID) return;
    for (size_t k = 0; k < sizeof(rsizes) / sizeof(rsizes[0]); k++) {
        int before = errors;
        check_reduce(t, rsizes[k]);
        if (errors != before) {
            fprintf(stderr, "PE %d: reduce errors on team %s with %zu elements\n", me, name,
                    rsizes[k]);
        }
    }
    for (size_t k = 0; k < NSIZES; k++) {
        int before = errors;
        check_broadcast(t, sizes[k]);
        check_collect(t, sizes[k]);
        check_alltoall(t, sizes[k]);
        check_reduce(t, sizes[k]);
        CHECK(shmem_team_sync(t) == 0, "sync");
        /* go on: returning early would leave the others waiting in a collective */
        if (errors != before) {
            fprintf(stderr, "PE %d: errors on team %s with %zu elements\n", me, name, sizes[k]);
        }
    }
}

static void mode_coll(void)
{
    shmem_team_t sub = make_sub();

    coll_on(SHMEM_TEAM_WORLD, "world");
    coll_on(sub, "sub");
    if (nodes > 1) {
        coll_on(SHMEM_TEAM_SHARED, "shared");
    }
    if (sub != SHMEM_TEAM_INVALID) shmem_team_destroy(sub);
}

/* 200 iterations of mixed collectives with no barrier in between: every
 * result is checked right away, and the buffers are refilled right away. */
static void mode_b2b(void)
{
    shmem_team_t sub = make_sub();
    long *s = (long *)src, *d = (long *)dst, *a = (long *)aux;

    for (int it = 0; it < 200; it++) {
        shmem_team_t t = (it % 3 == 2 && sub != SHMEM_TEAM_INVALID)
                             ? sub
                             : (it % 3 == 2 ? SHMEM_TEAM_INVALID : SHMEM_TEAM_WORLD);
        if (t == SHMEM_TEAM_INVALID) continue;
        int tn = shmem_team_n_pes(t), tme = shmem_team_my_pe(t);
        size_t n = (size_t)(it % 4 == 0 ? 300 : 1 + it % 5);
        int root = it % tn, wroot = shmem_team_translate_pe(t, root, SHMEM_TEAM_WORLD);
        long e;

        for (size_t i = 0; i < n; i++) s[i] = lval(me, i) + it;
        CHECK(shmem_long_sum_reduce(t, d, s, n) == 0, "b2b reduce");
        for (size_t i = 0; i < n; i++) {
            e = 0;
            for (int j = 0; j < tn; j++)
                e += lval(shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD), i) + it;
            CHECK(d[i] == e, "b2b %d reduce[%zu] = %ld, expected %ld", it, i, d[i], e);
            if (d[i] != e) break;
        }
        for (size_t i = 0; i < n; i++) s[i] = lval(me, i) - it;
        CHECK(shmem_long_broadcast(t, d, s, n, root) == 0, "b2b broadcast");
        for (size_t i = 0; i < n; i++) {
            CHECK(d[i] == lval(wroot, i) - it, "b2b %d broadcast[%zu]", it, i);
            if (d[i] != lval(wroot, i) - it) break;
        }
        if (it % 2) CHECK(shmem_team_sync(t) == 0, "b2b sync");
        s[0] = me * 3 + it;
        CHECK(shmem_long_fcollect(t, a, s, 1) == 0, "b2b fcollect");
        for (int j = 0; j < tn; j++) {
            CHECK(a[j] == shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD) * 3 + it,
                  "b2b %d fcollect[%d]", it, j);
        }
        for (int j = 0; j < tn; j++)
            for (size_t i = 0; i < n; i++) s[j * n + i] = (long)me * 1000 + j * 10 + it;
        CHECK(shmem_long_alltoall(t, d, s, n) == 0, "b2b alltoall");
        for (int j = 0; j < tn; j++) {
            long want =
                (long)shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD) * 1000 + tme * 10 + it;
            CHECK(d[j * n] == want && d[j * n + n - 1] == want, "b2b %d alltoall[%d]", it, j);
        }
        s[0] = it + me;
        CHECK(shmem_long_sum_inscan(t, d, s, 1) == 0, "b2b inscan");
        e = 0;
        for (int j = 0; j <= tme; j++) e += it + shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD);
        CHECK(d[0] == e, "b2b %d inscan = %ld, expected %ld", it, d[0], e);
    }
    if (sub != SHMEM_TEAM_INVALID) shmem_team_destroy(sub);
}

/* Back-to-back collectives that may overlap (the broadcast ring lets a
 * root run ahead): 10^4 iterations of broadcast (roots and sizes vary,
 * ring-sized and not), sum reduction and fcollect on the world and the
 * sub-team, while one PE (it changes every 1000 iterations) sleeps a
 * random few microseconds between calls. Every value is checked. */
static void mode_skew(void)
{
    shmem_team_t sub = make_sub();
    long *s = (long *)src, *d = (long *)dst, *a = (long *)aux;
    unsigned seed = 12345u + (unsigned)me;
    /* longs: the ring's one-line entries (1, 2, 7), two lines (8), five
     * (31, 35: its largest), the sizes past it (36) and the exchange's
     * (100); the mix makes entries skip the ring's end */
    static const size_t bsizes[] = {1, 2, 7, 8, 31, 35, 36, 100};

    for (int it = 0; it < 10000; it++) {
        shmem_team_t t = it % 4 == 3 ? sub : SHMEM_TEAM_WORLD;
        if (t == SHMEM_TEAM_INVALID) {
            continue; /* not a member of the sub-team */
        }
        int tn = shmem_team_n_pes(t), root = (it / 3) % tn;
        int wroot = shmem_team_translate_pe(t, root, SHMEM_TEAM_WORLD);
        size_t n = bsizes[it % (sizeof(bsizes) / sizeof(bsizes[0]))];
        long e;

        if (me == (it / 1000) % npes && rand_r(&seed) % 4 == 0) {
            struct timespec nap = {0, (long)(rand_r(&seed) % 20000)};
            nanosleep(&nap, NULL);
        }
        for (size_t i = 0; i < n; i++) s[i] = lval(me, i) ^ it;
        CHECK(shmem_long_broadcast(t, d, s, n, root) == 0, "skew broadcast");
        for (size_t i = 0; i < n; i++) {
            if (d[i] != (lval(wroot, i) ^ it)) {
                CHECK(0, "skew %d broadcast(n %zu, root %d)[%zu] = %ld, expected %ld", it, n, root,
                      i, d[i], lval(wroot, i) ^ it);
                break;
            }
        }
        if (it % 50 == 0) {
            /* a burst of broadcasts only: the root may run a whole ring ahead */
            for (int b = 0; b < 160; b++) {
                if (me == (it / 1000) % npes && b % 8 == 3) {
                    struct timespec nap = {0, (long)(rand_r(&seed) % 50000)};
                    nanosleep(&nap, NULL);
                }
                s[0] = lval(me, (size_t)b) + it;
                CHECK(shmem_long_broadcast(t, d, s, 1, root) == 0, "skew burst");
                CHECK(d[0] == lval(wroot, (size_t)b) + it, "skew %d burst %d = %ld, expected %ld",
                      it, b, d[0], lval(wroot, (size_t)b) + it);
            }
        }
        if (it % 3 == 0) {
            s[0] = me + it;
            CHECK(shmem_long_sum_reduce(t, d, s, 1) == 0, "skew reduce");
            e = 0;
            for (int j = 0; j < tn; j++) e += shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD) + it;
            CHECK(d[0] == e, "skew %d reduce = %ld, expected %ld", it, d[0], e);
        } else if (it % 3 == 1) {
            s[0] = me * 7 + it;
            CHECK(shmem_long_fcollect(t, a, s, 1) == 0, "skew fcollect");
            for (int j = 0; j < tn; j++) {
                e = shmem_team_translate_pe(t, j, SHMEM_TEAM_WORLD) * 7 + it;
                CHECK(a[j] == e, "skew %d fcollect[%d] = %ld, expected %ld", it, j, a[j], e);
            }
        }
        if (errors > 10) break;
    }
    if (sub != SHMEM_TEAM_INVALID) shmem_team_destroy(sub);
}

/* Slot reuse: 200 split/destroy cycles next to a long-lived team, then
 * the pool runs out (a clean error) and recovers. */
static void mode_reuse(void)
{
    shmem_team_t keep = make_sub(), many[64];
    int made = 0, rc;

    for (int it = 0; it < 200; it++) {
        int start = it % npes, stride = 1 + it % 2, size = (npes - 1 - start) / stride + 1;
        shmem_team_t t;

        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, size, NULL, 0, &t) == 0,
              "reuse split %d", it);
        if (t != SHMEM_TEAM_INVALID) {
            *(long *)src = me + it;
            CHECK(shmem_long_sum_reduce(t, (long *)dst, (long *)src, 1) == 0, "reuse reduce");
            CHECK(*(long *)dst == (long)size * (start + it) + (long)stride * size * (size - 1) / 2,
                  "reuse %d sum %ld", it, *(long *)dst);
            if (it % 3 == 0) CHECK(shmem_team_sync(t) == 0, "reuse sync");
        }
        if (keep != SHMEM_TEAM_INVALID) {
            *(long *)aux = 1;
            CHECK(shmem_long_sum_reduce(keep, (long *)aux, (long *)aux, 1) == 0 &&
                      *(long *)aux == sub_size(),
                  "kept team reduce");
        }
        shmem_team_destroy(t);
    }
    /* WORLD, SHARED and keep hold 3 of the 64 slots */
    for (made = 0; made < 64; made++) {
        rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &many[made]);
        if (rc != 0) {
            CHECK(many[made] == SHMEM_TEAM_INVALID, "failed split left a team");
            break;
        }
    }
    CHECK(made == 64 - 3, "%d teams before the pool ran out", made);
    /* every live team still works (the last one, the first one) */
    if (made > 0) {
        *(long *)src = 2;
        CHECK(shmem_long_sum_reduce(many[made - 1], (long *)dst, (long *)src, 1) == 0 &&
                  *(long *)dst == 2L * npes,
              "last team");
        CHECK(shmem_long_sum_reduce(many[0], (long *)dst, (long *)src, 1) == 0 &&
                  *(long *)dst == 2L * npes,
              "first team");
    }
    for (int i = 0; i < made; i++) shmem_team_destroy(many[i]);
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &many[0]) == 0, "after");
    shmem_team_destroy(many[0]);
    if (keep != SHMEM_TEAM_INVALID) shmem_team_destroy(keep);
}

/* The deprecated active-set forms with pSync. */
static void mode_deprecated(void)
{
    int log_stride = npes >= 4 ? 1 : 0, size = npes >= 4 ? npes / 2 : npes;
    int in = me % (1 << log_stride) == 0 && me / (1 << log_stride) < size, idx = me >> log_stride;
    size_t n = 5;
    int64_t *s = (int64_t *)src, *d = (int64_t *)dst;
    int32_t *s4 = (int32_t *)src, *d4 = (int32_t *)dst;
    double complex *cs = (double complex *)src, *cd = (double complex *)dst;

    for (int i = 0; i < SHMEM_ALLTOALL_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync2[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    if (in) {
        for (int rep = 0; rep < 3; rep++) {
            for (int j = 0; j < size; j++)
                for (size_t i = 0; i < n; i++)
                    s[j * n + i] = (int64_t)me * 1000 + j * 10 + (int64_t)i + rep;
            shmem_alltoall64(d, s, n, 0, log_stride, size, pSync);
            for (int j = 0; j < size; j++)
                for (size_t i = 0; i < n; i++)
                    CHECK(d[j * n + i] ==
                              (int64_t)(j << log_stride) * 1000 + idx * 10 + (int64_t)i + rep,
                          "alltoall64[%d][%zu]", j, i);
            for (int j = 0; j < size; j++)
                for (size_t i = 0; i < n; i++) s4[j * n + i] = me * 1000 + j * 10 + (int)i - rep;
            shmem_alltoall32(d4, s4, n, 0, log_stride, size, pSync);
            for (int j = 0; j < size; j++)
                for (size_t i = 0; i < n; i++)
                    CHECK(d4[j * n + i] == (j << log_stride) * 1000 + idx * 10 + (int)i - rep,
                          "alltoall32[%d][%zu]", j, i);
            fill(dst, 0x33, 2 * size * n * 8 + 16);
            for (int j = 0; j < size; j++)
                for (size_t i = 0; i < n; i++)
                    s[2 * (j * n + i)] = (int64_t)me * 1000 + j * 10 + (int64_t)i;
            shmem_alltoalls64(d, s, 3, 2, n, 0, log_stride, size, pSync);
            for (int j = 0; j < size; j++)
                for (size_t i = 0; i < n; i++)
                    CHECK(d[3 * (j * n + i)] ==
                              (int64_t)(j << log_stride) * 1000 + idx * 10 + (int64_t)i,
                          "alltoalls64[%d][%zu]", j, i);
            CHECK(untouched(&d[1], 0, 16, 0x33), "alltoalls64 wrote a gap");
            for (int j = 0; j < size; j++)
                for (size_t i = 0; i < n; i++) s4[j * n + i] = me + j + (int)i;
            shmem_alltoalls32(d4, s4, 2, 1, n, 0, log_stride, size, pSync);
            for (int j = 0; j < size; j++)
                for (size_t i = 0; i < n; i++)
                    CHECK(d4[2 * (j * n + i)] == (j << log_stride) + idx + (int)i,
                          "alltoalls32[%d][%zu]", j, i);
            for (size_t i = 0; i < n; i++) cs[i] = (me + 1.0) + (double)i * I;
            shmem_complexd_sum_to_all(cd, cs, (int)n, 0, log_stride, size, (double complex *)pWrk,
                                      pSync2);
            for (size_t i = 0; i < n; i++) {
                double complex e = 0;
                for (int j = 0; j < size; j++) e += ((j << log_stride) + 1.0) + (double)i * I;
                CHECK(cd[i] == e, "complexd_sum_to_all[%zu]", i);
            }
            {
                float complex *fs = (float complex *)src, *fd = (float complex *)dst;
                for (size_t i = 0; i < n; i++) fs[i] = 1.0f + (float)(me % 2) * I;
                shmem_complexf_prod_to_all(fd, fs, (int)n, 0, log_stride, size,
                                           (float complex *)pWrk, pSync2);
                float complex e = 1.0f;
                for (int j = 0; j < size; j++) e *= 1.0f + (float)((j << log_stride) % 2) * I;
                for (size_t i = 0; i < n; i++) CHECK(fd[i] == e, "complexf_prod_to_all[%zu]", i);
            }
        }
    }
    shmem_barrier_all();
}

/* ---- timings --------------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void mode_bench(int iters)
{
    long *s = (long *)src, *d = (long *)dst;
    double t0;

    s[0] = me;
/* best of 10 rounds (the machine may be shared) */
#define BENCH(_name, _call)                                                                        \
    do {                                                                                           \
        double best = 1e30;                                                                        \
        for (int i = 0; i < iters / 10; i++) _call;                                                \
        for (int round = 0; round < 10; round++) {                                                 \
            shmem_barrier_all();                                                                   \
            t0 = now();                                                                            \
            for (int i = 0; i < iters / 10; i++) _call;                                            \
            t0 = now() - t0;                                                                       \
            best = t0 < best ? t0 : best;                                                          \
        }                                                                                          \
        if (me == 0) printf("%-32s %8.0f ns\n", _name, best / (iters / 10) * 1e9);                 \
        shmem_barrier_all();                                                                       \
    } while (0)
    BENCH("team_sync(world)", shmem_team_sync(SHMEM_TEAM_WORLD));
    BENCH("sync_all", shmem_sync_all());
    BENCH("long_sum_reduce(1)", shmem_long_sum_reduce(SHMEM_TEAM_WORLD, d, s, 1));
    BENCH("long_broadcast(1)", shmem_long_broadcast(SHMEM_TEAM_WORLD, d, s, 1, 0));
    BENCH("long_fcollect(1)", shmem_long_fcollect(SHMEM_TEAM_WORLD, d, s, 1));
    BENCH("long_alltoall(1)", shmem_long_alltoall(SHMEM_TEAM_WORLD, d, s, 1));
    BENCH("double_sum_reduce(1000)",
          shmem_double_sum_reduce(SHMEM_TEAM_WORLD, (double *)d, (double *)s, 1000));
    BENCH("broadcastmem(64 KiB)", shmem_broadcastmem(SHMEM_TEAM_WORLD, d, s, 65536, 0));
#undef BENCH
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";

    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (argc > 2) nodes = atoi(argv[2]);
    src = shmem_malloc(BUFSZ);
    dst = shmem_malloc(BUFSZ);
    aux = shmem_malloc(BUFSZ);
    pSync = shmem_malloc(sizeof(long) * SHMEM_ALLTOALL_SYNC_SIZE);
    pSync2 = shmem_malloc(sizeof(long) * SHMEM_REDUCE_SYNC_SIZE);
    pWrk = shmem_malloc(sizeof(double complex) * (SHMEM_REDUCE_MIN_WRKDATA_SIZE + MAXN));
    if (npes > 64) {
        fprintf(stderr, "at most 64 PEs\n");
        return 2;
    }

    if (!strcmp(mode, "destroyworld")) {
        shmem_team_destroy(SHMEM_TEAM_WORLD); /* fatal: one line, exit 1 */
        return 0;
    }
    if (!strcmp(mode, "bench")) {
        mode_bench(argc > 2 ? atoi(argv[2]) : 100000);
        nodes = 1;
    }
    if (!strcmp(mode, "all") || !strcmp(mode, "split")) mode_split();
    if (!strcmp(mode, "all") || !strcmp(mode, "split2d")) mode_split2d();
    if (!strcmp(mode, "all") || !strcmp(mode, "shared")) mode_shared();
    if (!strcmp(mode, "all") || !strcmp(mode, "reuse")) mode_reuse();
    if (!strcmp(mode, "all") || !strcmp(mode, "coll")) mode_coll();
    if (!strcmp(mode, "all") || !strcmp(mode, "b2b")) mode_b2b();
    if (!strcmp(mode, "all") || !strcmp(mode, "deprecated")) mode_deprecated();
    if (!strcmp(mode, "skew")) mode_skew();

    shmem_free(pWrk);
    shmem_free(pSync2);
    shmem_free(pSync);
    shmem_free(aux);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    if (errors) {
        fprintf(stderr, "PE %d: %d errors in mode %s\n", me, errors, mode);
    }
    return errors != 0;
}
