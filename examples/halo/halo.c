/*
 * halo: kernel, initial state, checksum and serial reference shared by the
 * four variants (see halo.h).
 */
#include "halo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HALO_ALPHA 0.2 /* diffusion number: stable below 0.25 */

static void usage(const char *prog)
{
    fprintf(stderr, "usage: %s [-p small|large] [-r rows_per_pe] [-c cols] [-s steps]\n", prog);
}

int halo_parse(int argc, char **argv, const char *prog, halo_params_t *p)
{
    long v;
    int c;

    /* small: ~40K values exchanged per PE over the run (2 x 200 x 100);
     * large: ~40M (2 x 4000 x 5000), the thesis's two configurations. Two
     * rows per PE keep it communication-heavy, as the thesis chose it
     * (communication up to 80% of the time); with 8 rows the large case was
     * bound by the stencil's memory traffic in every variant alike. */
    p->rows = 2;
    p->cols = 200;
    p->steps = 100;
    opterr = 0;
    while ((c = getopt(argc, argv, "p:r:c:s:")) != -1) {
        switch (c) {
        case 'p':
            if (!strcmp(optarg, "small")) {
                p->cols = 200, p->steps = 100;
            } else if (!strcmp(optarg, "large")) {
                p->cols = 4000, p->steps = 5000;
            } else {
                goto bad;
            }
            break;
        case 'r':
            if (app_parse_long(optarg, 1, 1 << 20, &v)) goto bad;
            p->rows = (int)v;
            break;
        case 'c':
            if (app_parse_long(optarg, 3, 1 << 24, &v)) goto bad;
            p->cols = (int)v;
            break;
        case 's':
            if (app_parse_long(optarg, 1, 1L << 40, &v)) goto bad;
            p->steps = v;
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

void halo_row(const double *restrict up, const double *restrict mid, const double *restrict down,
              double *restrict out, double *restrict out2, int cols)
{
    out[0] = mid[0];
    out[cols - 1] = mid[cols - 1];
    for (int j = 1; j < cols - 1; j++) {
        out[j] = mid[j] + HALO_ALPHA * (up[j] + down[j] + mid[j - 1] + mid[j + 1] - 4.0 * mid[j]);
    }
    if (out2 != NULL) memcpy(out2, out, (size_t)cols * sizeof(*out));
}

double halo_init_value(long gi, int j)
{
    return (double)((gi * 7 + (long)j * 13) % 17) / 17.0;
}

void halo_ghost_rows(double *left, double *right, int cols)
{
    for (int j = 0; j < cols; j++) {
        left[j] = 1.0;
        right[j] = 0.0;
    }
}

double halo_checksum(const double *u, int rows, int cols, long gi0)
{
    double s = 0.0;

    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < cols; j++) {
            s += u[(size_t)i * cols + j] * (double)(1 + ((gi0 + i) * 131 + j) % 7);
        }
    }
    return s;
}

/* The whole grid on one process, with the same kernel: np * rows rows
 * between the two ghost rows. */
static double *serial_reference(const halo_params_t *p, int np)
{
    long nx = (long)np * p->rows;
    size_t rowv = (size_t)p->cols;
    double *a = malloc((size_t)(nx + 2) * rowv * sizeof(double));
    double *b = malloc((size_t)(nx + 2) * rowv * sizeof(double));

    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return NULL;
    }
    halo_ghost_rows(a, a + (size_t)(nx + 1) * rowv, p->cols);
    halo_ghost_rows(b, b + (size_t)(nx + 1) * rowv, p->cols);
    for (long gi = 0; gi < nx; gi++) {
        for (int j = 0; j < p->cols; j++) a[(size_t)(gi + 1) * rowv + j] = halo_init_value(gi, j);
    }
    for (long s = 0; s < p->total; s++) {
        for (long i = 1; i <= nx; i++) {
            halo_row(a + (i - 1) * rowv, a + i * rowv, a + (i + 1) * rowv, b + i * rowv, NULL,
                     p->cols);
        }
        double *t = a;
        a = b;
        b = t;
    }
    free(b);
    return a;
}

int halo_report(const halo_params_t *p, const char *variant, int np, const double *results)
{
    double *ref = serial_reference(p, np), *want = malloc((size_t)np * sizeof(double));
    double tmax = 0.0;
    int bad;

    if (ref == NULL || want == NULL) {
        fprintf(stderr, "halo %s: no memory for the serial reference\n", variant);
        free(ref);
        free(want);
        return 1;
    }
    for (int r = 0; r < np; r++) {
        const double *slice = ref + (size_t)(1 + (long)r * p->rows) * (size_t)p->cols;
        want[r] = halo_checksum(slice, p->rows, p->cols, (long)r * p->rows);
    }
    bad = app_check_results("halo", variant, np, results, want, &tmax);
    free(want);
    free(ref);
    /* values each interior PE receives over the run: two halo rows a step */
    printf("halo %s np=%d rows=%d cols=%d steps=%ld exchanged=%ld time_s=%.6f check=%s\n", variant,
           np, p->rows, p->cols, p->steps, 2L * p->cols * p->steps, tmax, bad ? "FAIL" : "PASS");
    fflush(stdout);
    return bad ? 1 : 0;
}
