/*
 * em3d: graph generation, kernel, checksum and serial reference shared by
 * the four variants (see em3d.h).
 */
#include "em3d.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-p small|large] [-n nodes_per_pe] [-d degree] [-r remote_percent] "
            "[-s steps] [-S seed]\n",
            prog);
}

int em3d_parse(int argc, char **argv, const char *prog, em3d_params_t *p)
{
    long v;
    int c;

    p->n = 1000;
    p->degree = 6;
    p->remote = 20;
    p->steps = 100;
    p->seed = 42;
    opterr = 0;
    while ((c = getopt(argc, argv, "p:n:d:r:s:S:")) != -1) {
        switch (c) {
        case 'p':
            if (!strcmp(optarg, "small")) {
                p->n = 1000, p->degree = 6, p->remote = 20, p->steps = 100;
            } else if (!strcmp(optarg, "large")) {
                p->n = 20000, p->degree = 6, p->remote = 20, p->steps = 200;
            } else {
                goto bad;
            }
            break;
        case 'n':
            if (app_parse_long(optarg, 1, 1 << 26, &v)) goto bad;
            p->n = (int)v;
            break;
        case 'd':
            if (app_parse_long(optarg, 1, 255, &v)) goto bad;
            p->degree = (int)v;
            break;
        case 'r':
            if (app_parse_long(optarg, 0, 100, &v)) goto bad;
            p->remote = (int)v;
            break;
        case 's':
            if (app_parse_long(optarg, 1, 1L << 40, &v)) goto bad;
            p->steps = v;
            break;
        case 'S':
            if (app_parse_long(optarg, 0, 1L << 62, &v)) goto bad;
            p->seed = (uint64_t)v;
            break;
        default:
            goto bad;
        }
    }
    if (optind == argc) {
        p->warm = 1;
        p->total = p->warm + p->steps;
        return 0;
    }
bad:
    usage(prog);
    return -1;
}

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The in-edges of node i of `kind` on PE q, with the source's own index;
 * the weights' absolute values sum to 0.5 so that values stay bounded. */
static void node_edges(const em3d_params_t *p, int np, int q, int kind, int i, em3d_edge_t *out)
{
    double sum = 0.0;

    for (int k = 0; k < p->degree; k++) {
        uint64_t x = mix(p->seed ^ mix((uint64_t)q << 40 ^ (uint64_t)kind << 39 ^ (uint64_t)i << 8 ^
                                       (uint64_t)k));
        int remote = np > 1 && (int)(x % 100) < p->remote;

        out[k].pe = remote ? (int32_t)((q + 1 + (int)((x >> 8) % (uint64_t)(np - 1))) % np) : q;
        out[k].idx = (int32_t)((x >> 32) % (uint64_t)p->n);
        out[k].w = (double)(mix(x) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
        sum += fabs(out[k].w);
    }
    for (int k = 0; k < p->degree; k++) out[k].w = sum > 0.0 ? 0.5 * out[k].w / sum : 0.0;
}

int em3d_graph_build(const em3d_params_t *p, int me, int np, em3d_graph_t *g)
{
    size_t n = (size_t)p->n, d = (size_t)p->degree;
    unsigned char *mark = calloc((size_t)np * n, 1);
    int32_t *pos = malloc((size_t)np * n * sizeof(int32_t));
    long *len = calloc(2 * (size_t)np * (size_t)np, sizeof(long)); /* [V][p][q] */
    em3d_edge_t *tmp = malloc(d * sizeof(em3d_edge_t));
    int rc = -1;

    memset(g, 0, sizeof(*g));
    g->me = me, g->np = np;
    if (mark == NULL || pos == NULL || len == NULL || tmp == NULL) goto out;
    for (int V = 0; V < 2; V++) {
        g->in[V] = malloc(n * d * sizeof(em3d_edge_t));
        g->send_len[V] = calloc((size_t)np, sizeof(int));
        g->send_idx[V] = calloc((size_t)np, sizeof(int *));
        g->recv_len[V] = calloc((size_t)np, sizeof(int));
        g->recv_off[V] = calloc((size_t)np, sizeof(long));
        g->send_off[V] = calloc((size_t)np, sizeof(long));
        if (!g->in[V] || !g->send_len[V] || !g->send_idx[V] || !g->recv_len[V] || !g->recv_off[V] ||
            !g->send_off[V]) {
            goto out;
        }
    }
    /* Every PE's in-edges, to learn every pair's message length (the
     * one-sided variants need the others' region layouts) and whom we feed. */
    for (int q = 0; q < np; q++) {
        for (int K = 0; K < 2; K++) {
            int V = 1 - K; /* K nodes read V values */
            memset(mark, 0, (size_t)np * n);
            for (size_t i = 0; i < n; i++) {
                em3d_edge_t *e = q == me ? g->in[K] + i * d : tmp;
                node_edges(p, np, q, K, (int)i, e);
                for (size_t k = 0; k < d; k++) {
                    if (e[k].pe != q) mark[(size_t)e[k].pe * n + (size_t)e[k].idx] = 1;
                }
            }
            for (int s = 0; s < np; s++) {
                long cnt = 0;
                for (size_t i = 0; i < n; i++) {
                    if (mark[(size_t)s * n + i]) pos[(size_t)s * n + i] = (int32_t)cnt++;
                }
                len[((size_t)V * np + (size_t)s) * np + (size_t)q] = cnt;
                if (q == me) g->recv_len[V][s] = (int)cnt;
                if (s == me && q != me && cnt > 0) {
                    int *list = malloc((size_t)cnt * sizeof(int));
                    if (list == NULL) goto out;
                    for (size_t i = 0, t = 0; i < n; i++) {
                        if (mark[(size_t)s * n + i]) list[t++] = (int)i;
                    }
                    g->send_len[V][q] = (int)cnt;
                    g->send_idx[V][q] = list;
                }
            }
            if (q == me) { /* remote sources: index into the packed message */
                for (size_t j = 0; j < n * d; j++) {
                    em3d_edge_t *e = &g->in[K][j];
                    if (e->pe != me) e->idx = pos[(size_t)e->pe * n + (size_t)e->idx];
                }
            }
        }
    }
    for (int V = 0; V < 2; V++) {
        for (int q = 0; q < np; q++) {
            long off = 0;
            for (int s = 0; s < np; s++) {
                long l = len[((size_t)V * np + (size_t)s) * np + (size_t)q];
                if (q == me) g->recv_off[V][s] = off;
                if (s == me) g->send_off[V][q] = off;
                off += l;
            }
            if (off > g->region_len[V]) g->region_len[V] = off;
        }
    }
    rc = 0;
out:
    free(mark);
    free(pos);
    free(len);
    free(tmp);
    if (rc) em3d_graph_free(g);
    return rc;
}

void em3d_graph_free(em3d_graph_t *g)
{
    for (int V = 0; V < 2; V++) {
        if (g->send_idx[V] != NULL) {
            for (int q = 0; q < g->np; q++) free(g->send_idx[V][q]);
        }
        free(g->in[V]);
        free(g->send_len[V]);
        free(g->send_idx[V]);
        free(g->recv_len[V]);
        free(g->recv_off[V]);
        free(g->send_off[V]);
    }
    memset(g, 0, sizeof(*g));
}

void em3d_compute(double *restrict val, int n, int degree, const em3d_edge_t *restrict in,
                  const double *const *seg)
{
    for (int i = 0; i < n; i++) {
        const em3d_edge_t *e = in + (size_t)i * (size_t)degree;
        double acc = 0.5 * val[i];
        for (int k = 0; k < degree; k++) acc += e[k].w * seg[e[k].pe][e[k].idx];
        val[i] = acc;
    }
}

void em3d_pack(const em3d_graph_t *g, int kind, int q, const double *vals, double *restrict buf)
{
    const int *idx = g->send_idx[kind][q];
    int len = g->send_len[kind][q];

    for (int t = 0; t < len; t++) buf[t] = vals[idx[t]];
}

double em3d_init_value(int pe, int kind, int i)
{
    return (double)(mix((uint64_t)pe << 33 ^ (uint64_t)kind << 32 ^ (uint64_t)i) >> 11) *
               0x1.0p-53 -
           0.5;
}

double em3d_checksum(const double *e, const double *h, int n)
{
    double s = 0.0;

    for (int i = 0; i < n; i++) s += e[i] * (double)(1 + i % 5) + h[i] * (double)(1 + (i + 2) % 7);
    return s;
}

/* All PEs' nodes in one process, with the same kernel and the sources'
 * own indices: seg[p] points at PE p's part of the global array. */
static double *serial_reference(const em3d_params_t *p, int np)
{
    size_t n = (size_t)p->n, d = (size_t)p->degree, N = (size_t)np * n;
    double *val[2] = {malloc(N * sizeof(double)), malloc(N * sizeof(double))};
    em3d_edge_t *in[2] = {malloc(N * d * sizeof(em3d_edge_t)), malloc(N * d * sizeof(em3d_edge_t))};
    const double **seg = malloc((size_t)np * sizeof(double *));
    double *sums = malloc((size_t)np * sizeof(double));

    if (!val[0] || !val[1] || !in[0] || !in[1] || !seg || !sums) {
        free(sums);
        sums = NULL;
        goto out;
    }
    for (int q = 0; q < np; q++) {
        for (int K = 0; K < 2; K++) {
            for (size_t i = 0; i < n; i++) {
                val[K][(size_t)q * n + i] = em3d_init_value(q, K, (int)i);
                node_edges(p, np, q, K, (int)i, in[K] + ((size_t)q * n + i) * d);
            }
        }
    }
    for (long s = 0; s < p->total; s++) {
        for (int K = 0; K < 2; K++) { /* E from H, then H from E */
            for (int q = 0; q < np; q++) seg[q] = val[1 - K] + (size_t)q * n;
            for (int q = 0; q < np; q++) {
                em3d_compute(val[K] + (size_t)q * n, p->n, p->degree, in[K] + (size_t)q * n * d,
                             seg);
            }
        }
    }
    for (int q = 0; q < np; q++) {
        sums[q] = em3d_checksum(val[EM3D_E] + (size_t)q * n, val[EM3D_H] + (size_t)q * n, p->n);
    }
out:
    free(val[0]);
    free(val[1]);
    free(in[0]);
    free(in[1]);
    free(seg);
    return sums;
}

int em3d_report(const em3d_params_t *p, const char *variant, int np, const double *results)
{
    double *ref = serial_reference(p, np);
    double tmax = 0.0;
    int bad;

    if (ref == NULL) {
        fprintf(stderr, "em3d %s: no memory for the serial reference\n", variant);
        return 1;
    }
    bad = app_check_results("em3d", variant, np, results, ref, &tmax);
    free(ref);
    printf("em3d %s np=%d nodes=%d degree=%d remote=%d steps=%ld time_s=%.6f check=%s\n", variant,
           np, p->n, p->degree, p->remote, p->steps, tmax, bad ? "FAIL" : "PASS");
    fflush(stdout);
    return bad ? 1 : 0;
}
