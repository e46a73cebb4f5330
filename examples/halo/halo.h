/*
 * halo: the 2-D heat equation of the thesis's §5.2.2 / §6.3.1, shared by
 * its four variants (halo_rpipe, halo_shmem, halo_mpi, halo_mpi_rma).
 *
 * The global grid has np * rows rows of cols values. It is decomposed along
 * X: PE p owns rows [p * rows, (p + 1) * rows). Every step is one Jacobi
 * sweep of the five-point heat stencil, whose X part is the three-point
 * stencil across PEs, so each PE needs the last row of its left neighbour
 * and the first row of its right one (the halos) from the previous step.
 * Outside the grid are two fixed ghost rows (1.0 on the left, 0.0 on the
 * right); the first and last columns are fixed too.
 *
 * Only communication differs between the variants: the stencil kernel, the
 * initial state, the checksum and the serial reference are here.
 */
#ifndef EXAMPLES_HALO_H
#define EXAMPLES_HALO_H

#include "../app_common.h"

#include <stddef.h>

typedef struct halo_params {
    int rows;   /* rows per PE */
    int cols;   /* values per row (= values in one halo message) */
    long steps; /* timed steps */
    long warm;  /* untimed steps before them (channels connect, pages fault in) */
    long total; /* warm + steps: what the run and the serial reference compute */
} halo_params_t;

/* Parses [-p small|large] [-r rows] [-c cols] [-s steps]; on bad arguments
 * prints the usage line and returns -1. Called before the library starts. */
int halo_parse(int argc, char **argv, const char *prog, halo_params_t *p);

/* The kernel: one row of the new state from three rows of the old one.
 * out2, when not NULL, gets the same values (a boundary row written
 * straight into a message for the neighbour). */
void halo_row(const double *restrict up, const double *restrict mid, const double *restrict down,
              double *restrict out, double *restrict out2, int cols);

/* The initial value of global row gi, column j; the ghost rows. */
double halo_init_value(long gi, int j);
void halo_ghost_rows(double *left, double *right, int cols);

/* Position-weighted sum of a PE's rows (rows x cols, contiguous) that start
 * at global row gi0: a value in the wrong place changes it. */
double halo_checksum(const double *u, int rows, int cols, long gi0);

/* Rank 0 after a run: computes the serial reference, compares each PE's
 * checksum with it, prints the result line with the slowest PE's time and
 * returns 0 (PASS) or 1 (FAIL). results[2 * r] is PE r's checksum,
 * results[2 * r + 1] its time in seconds (what every variant gathers). */
int halo_report(const halo_params_t *p, const char *variant, int np, const double *results);

#endif
