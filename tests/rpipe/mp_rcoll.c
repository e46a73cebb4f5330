/*
 * rcoll multi-process tests, launched as N PEs under oshrun.
 *   mp_rcoll MODE [put|get]
 * MODE  ops      every operation x element type x reduction x count (1, 7,
 *                and 6000 elements: fragmented), roots 0, n/2 and n-1,
 *                over all ranks; each handle is run blocking, then reset
 *                and run again with rcoll_nb (other values);
 *       active   the same over the active sets (start 1, stride 2) and
 *                (start 0, stride 2); non-members do not call;
 *       nb       six collectives of different kinds and groups in flight
 *                at once, advanced in a different order on every PE;
 *       repeat   one allreduce handle reused 300 times with rcoll_reset,
 *                a barrier handle 300 times;
 *       user     a user reduction (struct of sum and max);
 *       barrier  PE 0 enters late; everyone must wait for it;
 *       misuse   bad configurations get error codes.
 * Every result is compared with a serial reference computed locally:
 * exactly for integers, within 1e-4 (float) / 1e-10 (double) relatively.
 */
#include "rpipe/rcoll.h"

#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int me, npes, errors;
static rdma_op_t rdma = RDMA_PUT;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (errors++ < 10) {                                                                       \
            fprintf(stderr, "PE %d: ", me);                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

#define CHECK_RC(_call)                                                                            \
    do {                                                                                           \
        int _rc = (_call);                                                                         \
        if (_rc != R_SUCCESS) {                                                                    \
            FAIL("%s: %s", #_call, rstrerror(_rc));                                                \
        }                                                                                          \
    } while (0)

static const char *const type_names[] = {"barrier", "bcast",  "reduce",  "allreduce", "allgather",
                                         "scan",    "exscan", "scatter", "gather",    "alltoall"};

/* ---- values and the serial reference ------------------------------------------------- */

static int64_t ival(int who, size_t k, int it)
{
    return (int64_t)((who * 131 + (int64_t)k * 17 + it * 7) % 97) - 40;
}

static double fval(int who, size_t k, int it)
{
    return (double)ival(who, k, it) * 0.37 + 0.1;
}

static size_t dt_size(rcoll_dtype_t dt)
{
    return (dt == RCOLL_INT32 || dt == RCOLL_FLOAT) ? 4 : 8;
}

/* Element k of who's contribution. */
static void put_val(rcoll_dtype_t dt, void *buf, size_t k, int who, size_t vk, int it)
{
    switch (dt) {
    case RCOLL_INT32:
        ((int32_t *)buf)[k] = (int32_t)ival(who, vk, it);
        break;
    case RCOLL_INT64:
        ((int64_t *)buf)[k] = ival(who, vk, it);
        break;
    case RCOLL_UINT64:
        ((uint64_t *)buf)[k] = (uint64_t)ival(who, vk, it) * 0x100000001ull;
        break;
    case RCOLL_FLOAT:
        ((float *)buf)[k] = (float)fval(who, vk, it);
        break;
    case RCOLL_DOUBLE:
        ((double *)buf)[k] = fval(who, vk, it);
        break;
    default:
        break;
    }
}

static uint64_t iop(rcoll_op_t op, uint64_t a, uint64_t b, int is_signed, int bits)
{
    int64_t sa = (int64_t)a, sb = (int64_t)b;

    if (bits == 32) {
        sa = (int32_t)a, sb = (int32_t)b;
    }
    switch (op) {
    case RCOLL_SUM:
        return a + b;
    case RCOLL_PROD:
        return a * b;
    case RCOLL_MIN:
        return is_signed ? (uint64_t)(sb < sa ? sb : sa) : (b < a ? b : a);
    case RCOLL_MAX:
        return is_signed ? (uint64_t)(sb > sa ? sb : sa) : (b > a ? b : a);
    case RCOLL_AND:
        return a & b;
    case RCOLL_OR:
        return a | b;
    case RCOLL_XOR:
        return a ^ b;
    default:
        return 0;
    }
}

static double fop(rcoll_op_t op, double a, double b)
{
    switch (op) {
    case RCOLL_SUM:
        return a + b;
    case RCOLL_PROD:
        return a * b;
    case RCOLL_MIN:
        return b < a ? b : a;
    case RCOLL_MAX:
        return b > a ? b : a;
    default:
        return 0;
    }
}

/* Reference: op over the contributions of members [lo, hi) at element k,
 * written as element k of out. */
static void ref_reduce(rcoll_dtype_t dt, rcoll_op_t op, int lo, int hi, size_t k, int it, void *out)
{
    unsigned char tmp[8];

    if (dt == RCOLL_FLOAT || dt == RCOLL_DOUBLE) {
        double acc = 0;
        for (int m = lo; m < hi; m++) {
            double v;
            put_val(dt, tmp, 0, m, k, it);
            v = dt == RCOLL_FLOAT ? ((float *)tmp)[0] : ((double *)tmp)[0];
            acc = (m == lo) ? v : fop(op, acc, v);
        }
        if (dt == RCOLL_FLOAT) {
            ((float *)out)[k] = (float)acc;
        } else {
            ((double *)out)[k] = acc;
        }
        return;
    }
    {
        uint64_t acc = 0;
        for (int m = lo; m < hi; m++) {
            uint64_t v;
            put_val(dt, tmp, 0, m, k, it);
            v = dt == RCOLL_INT32 ? (uint64_t)(int64_t)((int32_t *)tmp)[0] : ((uint64_t *)tmp)[0];
            acc = (m == lo) ? v : iop(op, acc, v, dt != RCOLL_UINT64, dt == RCOLL_INT32 ? 32 : 64);
        }
        if (dt == RCOLL_INT32) {
            ((int32_t *)out)[k] = (int32_t)acc;
        } else {
            ((uint64_t *)out)[k] = acc;
        }
    }
}

static int same(rcoll_dtype_t dt, const void *got, const void *want, size_t k)
{
    if (dt == RCOLL_FLOAT) {
        double g = ((const float *)got)[k], w = ((const float *)want)[k];
        return fabs(g - w) <= 1e-4 * (fabs(w) + 1e-3);
    }
    if (dt == RCOLL_DOUBLE) {
        double g = ((const double *)got)[k], w = ((const double *)want)[k];
        return fabs(g - w) <= 1e-10 * (fabs(w) + 1e-3);
    }
    return !memcmp((const char *)got + k * dt_size(dt), (const char *)want + k * dt_size(dt),
                   dt_size(dt));
}

/* ---- one operation ------------------------------------------------------------------------ */

typedef struct {
    rcoll_type_t type;
    rcoll_dtype_t dt;
    rcoll_op_t op;
    size_t count;
    int root;
    int start, lstride, size; /* size 0: all ranks */
} tcase_t;

static int member_of(const tcase_t *t, int *m_p, int *n_p)
{
    int n = t->size ? t->size : npes, start = t->size ? t->start : 0;
    int ls = t->size ? t->lstride : 0;

    *n_p = n;
    if (me < start || ((me - start) & ((1 << ls) - 1)) || ((me - start) >> ls) >= n) {
        return 0;
    }
    *m_p = (me - start) >> ls;
    return 1;
}

/* Fills src for run `it`, runs h, checks dst. */
static void run_case(const tcase_t *t, rcoll_h h, int it, int nonblocking)
{
    int m, n, rc;
    size_t es = dt_size(t->dt), c = t->count, blocks;
    unsigned char *src, *dst, *want;
    const size_t SENT = 0x5a;

    member_of(t, &m, &n);
    blocks = (t->type == RCOLL_ALLGATHER || t->type == RCOLL_SCATTER || t->type == RCOLL_GATHER ||
              t->type == RCOLL_ALLTOALL)
                 ? (size_t)n
                 : 1;
    src = malloc(blocks * c * es + 1);
    dst = malloc(blocks * c * es + 1);
    want = malloc(blocks * c * es + 1);
    memset(dst, SENT, blocks * c * es + 1);
    memset(want, SENT, blocks * c * es + 1);

    /* inputs */
    for (size_t b = 0; b < blocks; b++) {
        for (size_t k = 0; k < c; k++) {
            int who = m;
            if (t->type == RCOLL_SCATTER) {
                who = (int)b;
            } else if (t->type == RCOLL_ALLTOALL) {
                who = m * 64 + (int)b;
            }
            put_val(t->dt, src + b * c * es, k, who, k, it);
        }
    }
    /* expected */
    for (size_t b = 0; b < blocks; b++) {
        for (size_t k = 0; k < c; k++) {
            void *w = want + b * c * es;
            switch (t->type) {
            case RCOLL_BCAST:
                put_val(t->dt, w, k, t->root, k, it);
                break;
            case RCOLL_REDUCE:
                if (m == t->root) {
                    ref_reduce(t->dt, t->op, 0, n, k, it, w);
                }
                break;
            case RCOLL_ALLREDUCE:
                ref_reduce(t->dt, t->op, 0, n, k, it, w);
                break;
            case RCOLL_SCAN:
                ref_reduce(t->dt, t->op, 0, m + 1, k, it, w);
                break;
            case RCOLL_EXSCAN:
                if (m > 0) {
                    ref_reduce(t->dt, t->op, 0, m, k, it, w);
                }
                break;
            case RCOLL_ALLGATHER:
                put_val(t->dt, w, k, (int)b, k, it);
                break;
            case RCOLL_SCATTER: /* one block lands; the rest of dst stays untouched */
                if (b == 0) {
                    put_val(t->dt, w, k, m, k, it);
                }
                break;
            case RCOLL_GATHER:
                if (m == t->root) {
                    put_val(t->dt, w, k, (int)b, k, it);
                }
                break;
            case RCOLL_ALLTOALL:
                put_val(t->dt, w, k, (int)b * 64 + m, k, it);
                break;
            default:
                break;
            }
        }
    }

    {
        /* non-roots of reduce/gather pass no dst: nothing may be written */
        void *d =
            ((t->type == RCOLL_REDUCE || t->type == RCOLL_GATHER) && m != t->root) ? NULL : dst;
        const void *s = (t->type == RCOLL_SCATTER && m != t->root) ? NULL : src;
        if (t->type == RCOLL_BCAST && m != t->root) {
            s = NULL;
        }
        if (t->type == RCOLL_ALLREDUCE && it % 2 == 1) {
            memcpy(dst, src, c * es); /* in place */
            s = dst;
        }
        if (nonblocking) {
            while ((rc = rcoll_nb(h, s, d)) == R_PENDING) {
                sched_yield(); /* PEs may outnumber cores */
            }
        } else {
            rc = rcoll(h, s, d);
        }
    }
    if (rc != R_SUCCESS) {
        FAIL("%s: %s", type_names[t->type], rstrerror(rc));
    }
    for (size_t k = 0; k < blocks * c; k++) {
        if (!same(t->dt, dst, want, k)) {
            FAIL("%s dt %d op %d count %zu root %d group (%d,%d,%d) it %d: element %zu wrong",
                 type_names[t->type], t->dt, t->op, c, t->root, t->start, t->lstride, t->size, it,
                 k);
            break;
        }
    }
    if (dst[blocks * c * es] != SENT) {
        FAIL("%s: wrote past the end of dst", type_names[t->type]);
    }
    free(src);
    free(dst);
    free(want);
}

static rcoll_config_t make_config(const tcase_t *t)
{
    rcoll_config_t cfg;

    rcoll_config_init(&cfg);
    cfg.type = t->type;
    cfg.group_start = t->start;
    cfg.group_log2stride = t->lstride;
    cfg.group_size = t->size;
    cfg.root = t->root;
    cfg.dtype = t->dt;
    cfg.op = t->op;
    cfg.count = t->count;
    cfg.rdma_op = rdma;
    return cfg;
}

static void test_case(const tcase_t *t)
{
    rcoll_config_t cfg = make_config(t);
    rcoll_h h;
    int m, n;

    if (!member_of(t, &m, &n)) {
        return;
    }
    if (rcoll_init(&h, &cfg) != R_SUCCESS) {
        FAIL("rcoll_init %s failed", type_names[t->type]);
        return;
    }
    if (rcoll_group_rank(h) != m || rcoll_group_size(h) != n) {
        FAIL("group rank/size %d/%d, want %d/%d", rcoll_group_rank(h), rcoll_group_size(h), m, n);
    }
    run_case(t, h, 0, 0);
    CHECK_RC(rcoll_reset(h));
    run_case(t, h, 1, 1);
    CHECK_RC(rcoll_free(h));
}

static const struct {
    rcoll_dtype_t dt;
    rcoll_op_t op;
} reductions[] = {
    {RCOLL_INT64, RCOLL_SUM},   {RCOLL_INT32, RCOLL_PROD}, {RCOLL_INT32, RCOLL_MIN},
    {RCOLL_UINT64, RCOLL_MAX},  {RCOLL_INT64, RCOLL_AND},  {RCOLL_UINT64, RCOLL_OR},
    {RCOLL_INT32, RCOLL_XOR},   {RCOLL_FLOAT, RCOLL_SUM},  {RCOLL_DOUBLE, RCOLL_SUM},
    {RCOLL_DOUBLE, RCOLL_PROD}, {RCOLL_FLOAT, RCOLL_MAX},  {RCOLL_INT64, RCOLL_MIN},
};
#define NRED (sizeof(reductions) / sizeof(reductions[0]))

static void test_ops(int start, int lstride, int size)
{
    static const size_t counts[] = {1, 7, 6000};
    int n = size ? size : npes, roots[3] = {0, n / 2, n - 1};

    for (int type = RCOLL_BARRIER; type <= RCOLL_ALLTOALL; type++) {
        int rooted = type == RCOLL_BCAST || type == RCOLL_REDUCE || type == RCOLL_SCATTER ||
                     type == RCOLL_GATHER;
        int red = type == RCOLL_REDUCE || type == RCOLL_ALLREDUCE || type == RCOLL_SCAN ||
                  type == RCOLL_EXSCAN;
        for (size_t ci = 0; ci < 3; ci++) {
            for (int ri = 0; ri < (rooted ? 3 : 1); ri++) {
                for (size_t r = 0; r < (red ? NRED : 1); r++) {
                    tcase_t t = {(rcoll_type_t)type,
                                 red ? reductions[r].dt : RCOLL_INT64,
                                 red ? reductions[r].op : RCOLL_OP_NONE,
                                 counts[ci],
                                 roots[ri],
                                 start,
                                 lstride,
                                 size};
                    /* the big count only for a few reductions: keeps the run short */
                    if (ci == 2 && red && r % 4 != 0) {
                        continue;
                    }
                    if (type == RCOLL_BARRIER) {
                        t.count = 0;
                    }
                    test_case(&t);
                }
            }
        }
    }
}

/* Six collectives in flight, advanced in a PE-dependent order. */
static void test_nb(void)
{
    enum { NH = 6 };
    tcase_t t[NH] = {
        {RCOLL_ALLREDUCE, RCOLL_INT64, RCOLL_SUM, 5, 0, 0, 0, 0},
        {RCOLL_BCAST, RCOLL_INT64, RCOLL_OP_NONE, 9000, npes - 1, 0, 0, 0},
        {RCOLL_BARRIER, RCOLL_INT64, RCOLL_OP_NONE, 0, 0, 0, 0, 0},
        {RCOLL_ALLTOALL, RCOLL_INT64, RCOLL_OP_NONE, 3, 0, 0, 0, 0},
        {RCOLL_SCAN, RCOLL_DOUBLE, RCOLL_SUM, 4, 0, 1, 1, npes / 2},
        {RCOLL_ALLGATHER, RCOLL_INT32, RCOLL_OP_NONE, 2000, 0, 0, 0, 0},
    };
    rcoll_h h[NH];
    unsigned char *src[NH], *dst[NH], *want[NH];
    int in[NH], m, n, left = 0, it;

    for (it = 0; it < 3; it++) {
        for (int i = 0; i < NH; i++) {
            rcoll_config_t cfg = make_config(&t[i]);
            size_t bytes = (size_t)npes * (t[i].count + 1) * 8;

            in[i] = member_of(&t[i], &m, &n);
            if (!in[i]) {
                continue;
            }
            CHECK_RC(rcoll_init(&h[i], &cfg));
            src[i] = calloc(1, bytes);
            dst[i] = calloc(1, bytes);
            want[i] = calloc(1, bytes);
        }
        /* start all, in the same order everywhere */
        for (int i = 0; i < NH; i++) {
            size_t c = t[i].count, es = dt_size(t[i].dt);
            if (!in[i]) {
                continue;
            }
            member_of(&t[i], &m, &n);
            for (size_t k = 0; k < c; k++) {
                switch (t[i].type) {
                case RCOLL_ALLREDUCE:
                    put_val(t[i].dt, src[i], k, m, k, it);
                    ref_reduce(t[i].dt, t[i].op, 0, n, k, it, want[i]);
                    break;
                case RCOLL_BCAST:
                    put_val(t[i].dt, src[i], k, m, k, it);
                    put_val(t[i].dt, want[i], k, t[i].root, k, it);
                    break;
                case RCOLL_ALLTOALL:
                    for (int b = 0; b < n; b++) {
                        put_val(t[i].dt, src[i] + b * c * es, k, m * 64 + b, k, it);
                        put_val(t[i].dt, want[i] + b * c * es, k, b * 64 + m, k, it);
                    }
                    break;
                case RCOLL_SCAN:
                    put_val(t[i].dt, src[i], k, m, k, it);
                    ref_reduce(t[i].dt, t[i].op, 0, m + 1, k, it, want[i]);
                    break;
                case RCOLL_ALLGATHER:
                    put_val(t[i].dt, src[i], k, m, k, it);
                    for (int b = 0; b < n; b++) {
                        put_val(t[i].dt, want[i] + b * c * es, k, b, k, it);
                    }
                    break;
                default:
                    break;
                }
            }
            {
                int rc = rcoll_nb(h[i], src[i], dst[i]);
                if (rc < 0) {
                    FAIL("rcoll_nb %d: %s", i, rstrerror(rc));
                }
            }
            left++;
        }
        /* complete them in a PE-dependent order */
        while (left > 0) {
            for (int j = 0; j < NH; j++) {
                int i = (j + me + it) % NH, rc;
                if (!in[i]) {
                    continue;
                }
                rc = (me % 2) ? rcoll_test(h[i]) : rcoll_nb(h[i], NULL, NULL);
                if (rc == R_SUCCESS) {
                    size_t c = t[i].count, es = dt_size(t[i].dt);
                    size_t blocks = (t[i].type == RCOLL_ALLTOALL || t[i].type == RCOLL_ALLGATHER)
                                        ? (size_t)npes
                                        : 1;
                    member_of(&t[i], &m, &n);
                    for (size_t k = 0; k < blocks * c && blocks * c * es > 0; k++) {
                        if (k >= (size_t)n * c) {
                            break;
                        }
                        if (!same(t[i].dt, dst[i], want[i], k)) {
                            FAIL("nb %s it %d: element %zu wrong", type_names[t[i].type], it, k);
                            break;
                        }
                    }
                    CHECK_RC(rcoll_free(h[i]));
                    free(src[i]), free(dst[i]), free(want[i]);
                    in[i] = 0;
                    left--;
                } else if (rc == R_PENDING) {
                    sched_yield();
                } else {
                    FAIL("nb %s: %s", type_names[t[i].type], rstrerror(rc));
                    in[i] = 0;
                    left--;
                }
            }
        }
    }
}

static void test_repeat(void)
{
    rcoll_config_t cfg;
    rcoll_h ar, bar;
    int64_t v, sum;

    rcoll_config_init(&cfg);
    cfg.rdma_op = rdma;
    CHECK_RC(rcoll_init(&bar, &cfg));
    cfg.type = RCOLL_ALLREDUCE;
    cfg.dtype = RCOLL_INT64;
    cfg.op = RCOLL_SUM;
    cfg.count = 1;
    CHECK_RC(rcoll_init(&ar, &cfg));
    for (int it = 0; it < 300; it++) {
        int rc;
        v = me * 1000 + it;
        sum = 0;
        while ((rc = rcoll_nb(ar, &v, &sum)) == R_PENDING) {
            sched_yield();
        }
        CHECK_RC(rc);
        CHECK_RC(rcoll_nb(ar, NULL, NULL)); /* stays complete */
        if (sum != (int64_t)npes * (npes - 1) / 2 * 1000 + (int64_t)npes * it) {
            FAIL("repeat %d: sum %lld", it, (long long)sum);
        }
        CHECK_RC(rcoll_reset(ar));
        CHECK_RC(rcoll(bar, NULL, NULL));
    }
    CHECK_RC(rcoll_free(ar));
    CHECK_RC(rcoll_free(bar));
}

typedef struct {
    int64_t sum, max;
} pair_t;

static void pair_op(void *inout, const void *in, size_t count)
{
    pair_t *a = inout;
    const pair_t *b = in;

    for (size_t k = 0; k < count; k++) {
        a[k].sum += b[k].sum;
        a[k].max = b[k].max > a[k].max ? b[k].max : a[k].max;
    }
}

static void test_user(void)
{
    enum { C = 300 };
    rcoll_config_t cfg;
    rcoll_h h;
    pair_t src[C], dst[C];

    for (int type = RCOLL_REDUCE; type <= RCOLL_EXSCAN; type++) {
        if (type == RCOLL_ALLGATHER) {
            continue;
        }
        rcoll_config_init(&cfg);
        cfg.type = (rcoll_type_t)type;
        cfg.elem_size = sizeof(pair_t);
        cfg.count = C;
        cfg.user_op = pair_op;
        cfg.root = npes - 1;
        cfg.rdma_op = rdma;
        CHECK_RC(rcoll_init(&h, &cfg));
        for (int k = 0; k < C; k++) {
            src[k].sum = me + k;
            src[k].max = (me * 7 + k) % 5;
        }
        memset(dst, 0, sizeof(dst));
        CHECK_RC(rcoll(h, src, dst));
        for (int k = 0; k < C; k++) {
            int lo = 0, hi = npes;
            int64_t sum = 0, max = INT64_MIN;
            if (type == RCOLL_REDUCE && me != npes - 1) {
                break;
            }
            if (type == RCOLL_SCAN) {
                hi = me + 1;
            } else if (type == RCOLL_EXSCAN) {
                hi = me;
                if (me == 0) {
                    break;
                }
            }
            for (int p = lo; p < hi; p++) {
                sum += p + k;
                max = (p * 7 + k) % 5 > max ? (p * 7 + k) % 5 : max;
            }
            if (dst[k].sum != sum || dst[k].max != max) {
                FAIL("user %s: element %d is (%lld, %lld), want (%lld, %lld)", type_names[type], k,
                     (long long)dst[k].sum, (long long)dst[k].max, (long long)sum, (long long)max);
                break;
            }
        }
        CHECK_RC(rcoll_free(h));
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_barrier(void)
{
    rcoll_config_t cfg;
    rcoll_h h;

    rcoll_config_init(&cfg);
    cfg.rdma_op = rdma;
    CHECK_RC(rcoll_init(&h, &cfg));
    CHECK_RC(rcoll(h, NULL, NULL));
    for (int it = 0; it < 3; it++) {
        double t0 = now(), waited;
        if (me == it % npes) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        CHECK_RC(rcoll(h, NULL, NULL));
        waited = now() - t0;
        if (npes > 1 && waited < 0.040) {
            FAIL("barrier %d returned after %.3f s, before the late PE arrived", it, waited);
        }
    }
    CHECK_RC(rcoll_free(h));
}

static void test_misuse(void)
{
    rcoll_config_t cfg;
    rcoll_h h = NULL;
    int64_t x = 0;

    rcoll_config_init(&cfg);
    cfg.group_size = npes + 1;
    if (rcoll_init(&h, &cfg) != R_ERR_INVALID) {
        FAIL("active set larger than the job accepted");
    }
    rcoll_config_init(&cfg);
    cfg.group_start = 0, cfg.group_log2stride = 0, cfg.group_size = 1;
    if (me != 0 && rcoll_init(&h, &cfg) != R_ERR_INVALID) {
        FAIL("non-member accepted");
    }
    rcoll_config_init(&cfg);
    cfg.type = RCOLL_ALLREDUCE, cfg.dtype = RCOLL_DOUBLE, cfg.op = RCOLL_XOR, cfg.count = 1;
    if (rcoll_init(&h, &cfg) != R_ERR_INVALID) {
        FAIL("xor on doubles accepted");
    }
    cfg.op = RCOLL_OP_NONE;
    if (rcoll_init(&h, &cfg) != R_ERR_INVALID) {
        FAIL("reduction without an op accepted");
    }
    rcoll_config_init(&cfg);
    cfg.type = RCOLL_BCAST, cfg.root = npes, cfg.dtype = RCOLL_INT64, cfg.count = 1;
    if (rcoll_init(&h, &cfg) != R_ERR_INVALID) {
        FAIL("root out of range accepted");
    }
    cfg.root = 0;
    CHECK_RC(rcoll_init(&h, &cfg));
    if (rcoll_test(h) != R_ERR_STATE) {
        FAIL("rcoll_test of an idle handle");
    }
    if (me == 0 && rcoll(h, NULL, &x) != R_ERR_INVALID) {
        FAIL("broadcast without a source at the root accepted");
    }
    CHECK_RC(rcoll(h, &x, &x));
    CHECK_RC(rcoll_free(h));
    if (rcoll_init(NULL, &cfg) != R_ERR_INVALID || rcoll(NULL, NULL, NULL) != R_ERR_INVALID) {
        FAIL("NULL handle accepted");
    }
}

/* Handles left live at rexit are freed by it; a new rinit starts clean. */
static void test_leftover(void)
{
    for (int round = 0; round < 3; round++) {
        rcoll_config_t cfg;
        rcoll_h bar, sum;
        int64_t x = me + 1 + round, total = -1;

        rcoll_config_init(&cfg);
        CHECK_RC(rcoll_init(&bar, &cfg));
        cfg.type = RCOLL_ALLREDUCE;
        cfg.dtype = RCOLL_INT64;
        cfg.op = RCOLL_SUM;
        cfg.count = 1;
        CHECK_RC(rcoll_init(&sum, &cfg));
        CHECK_RC(rcoll(bar, NULL, NULL));
        CHECK_RC(rcoll(sum, &x, &total));
        if (total != (int64_t)npes * (npes + 1) / 2 + (int64_t)npes * round) {
            FAIL("round %d: allreduce gave %lld", round, (long long)total);
        }
        /* no rcoll_free: rexit must release both */
        network_barrier();
        if (rexit() != R_SUCCESS || rinit(&me, &npes) != R_SUCCESS) {
            FAIL("rexit/rinit with live handles failed");
            return;
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ops";

    if (argc > 2 && !strcmp(argv[2], "get")) {
        rdma = RDMA_GET;
    }
    if (rinit(&me, &npes) != R_SUCCESS) {
        fprintf(stderr, "rinit failed\n");
        return 1;
    }
    if (!strcmp(mode, "ops")) {
        test_ops(0, 0, 0);
    } else if (!strcmp(mode, "active")) {
        if (npes >= 2) {
            test_ops(1, 1, npes / 2);
        }
        test_ops(0, 1, (npes + 1) / 2);
    } else if (!strcmp(mode, "nb")) {
        test_nb();
    } else if (!strcmp(mode, "repeat")) {
        test_repeat();
    } else if (!strcmp(mode, "user")) {
        test_user();
    } else if (!strcmp(mode, "barrier")) {
        test_barrier();
    } else if (!strcmp(mode, "misuse")) {
        test_misuse();
    } else if (!strcmp(mode, "leftover")) {
        test_leftover();
    } else {
        FAIL("unknown mode %s", mode);
    }
    network_barrier();
    if (rexit() != R_SUCCESS) {
        FAIL("rexit failed");
    }
    if (errors > 0) {
        fprintf(stderr, "PE %d: %d errors (%s)\n", me, errors, mode);
    }
    return errors ? 1 : 0;
}
