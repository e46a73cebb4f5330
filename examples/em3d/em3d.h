/*
 * em3d: the irregular bipartite E/H graph of the thesis's §5.2.4 /
 * Algorithm 14, shared by its four variants (em3d_rpipe, em3d_shmem,
 * em3d_mpi, em3d_mpi_rma).
 *
 * Every PE owns n E nodes and n H nodes. Every node has `degree` in-edges
 * from nodes of the other kind; with probability remote% an edge comes from
 * a node on another PE. A time step is two half-steps: every E node becomes
 * 0.5 E + sum(w * H) over its in-edges, then every H node likewise from the
 * E nodes. The graph is generated from a seed, the same on every PE, so no
 * PE needs to be told what to send where.
 *
 * Communication per half-step: for each ordered pair (p, q), the values of
 * the distinct nodes of p that q's nodes read, packed in one message (one
 * value per remote node however many edges read it: the thesis's proxying
 * of H3->E1 and H3->E2 through one remote allocation).
 */
#ifndef EXAMPLES_EM3D_H
#define EXAMPLES_EM3D_H

#include "../app_common.h"

#include <stdint.h>

enum { EM3D_E = 0, EM3D_H = 1 };

typedef struct em3d_params {
    int n;      /* nodes of each kind per PE */
    int degree; /* in-edges per node */
    int remote; /* per cent of edges from another PE */
    long steps; /* timed steps (2 half-steps each) */
    long warm;  /* untimed steps before them (channels connect, pages fault in) */
    long total; /* warm + steps: what the run and the serial reference compute */
    uint64_t seed;
} em3d_params_t;

/* An in-edge: weight and where the source value is: seg[pe][idx] (the
 * kernel's seg[pe] is this PE's own array of the other kind for pe == me,
 * else the values received from pe). */
typedef struct em3d_edge {
    double w;
    int32_t pe;
    int32_t idx;
} em3d_edge_t;

/* What one PE needs. kind K means "values of K nodes", so the E half-step
 * receives K = H lists and the H half-step K = E lists. */
typedef struct em3d_graph {
    int me, np;
    em3d_edge_t *in[2]; /* in[E]: in-edges of my E nodes (n * degree), in[H] likewise */
    int *send_len[2];   /* [K][q]: values of my K nodes that q reads */
    int **send_idx[2];  /* [K][q][t]: which of my K nodes, in message order */
    int *recv_len[2];   /* [K][p]: values of p's K nodes that I read */
    /* layout of a receive region for the one-sided variants: region of PE q
     * for kind K holds, for p = 0..np-1, recv_len of p -> q at recv_off */
    long *recv_off[2];  /* [K][p]: offset (values) of p's message in my region */
    long *send_off[2];  /* [K][q]: offset of my message in q's region */
    long region_len[2]; /* [K]: values of the largest region over all PEs */
} em3d_graph_t;

/* Parses [-p small|large] [-n nodes] [-d degree] [-r remote%] [-s steps]
 * [-S seed]; prints the usage line and returns -1 on bad arguments. */
int em3d_parse(int argc, char **argv, const char *prog, em3d_params_t *p);

/* Builds PE me's part of the graph (deterministic from p->seed). */
int em3d_graph_build(const em3d_params_t *p, int me, int np, em3d_graph_t *g);
void em3d_graph_free(em3d_graph_t *g);

/* The kernel: one half-step for n nodes of one kind. */
void em3d_compute(double *restrict val, int n, int degree, const em3d_edge_t *restrict in,
                  const double *const *seg);

/* Packs the values of my K nodes that q reads into buf. */
void em3d_pack(const em3d_graph_t *g, int kind, int q, const double *vals, double *restrict buf);

/* Initial value of node i of `kind` on PE pe. */
double em3d_init_value(int pe, int kind, int i);

/* Position-weighted sum of a PE's E and H values. */
double em3d_checksum(const double *e, const double *h, int n);

/* Rank 0 after a run: serial reference, comparison of the per-PE checksums,
 * the result line with the slowest time; 0 PASS, 1 FAIL. results holds
 * {checksum, seconds} per PE, as halo_report's. */
int em3d_report(const em3d_params_t *p, const char *variant, int np, const double *results);

#endif
