/*
 * halo_shmem: the 2-D heat equation over OpenSHMEM.
 *   oshrun -n N examples/halo/halo_shmem [-p small|large] [-r rows] [-c cols] [-s steps]
 *
 * A PE puts its new boundary rows into the neighbours' symmetric halo
 * buffers, orders them with shmem_fence and raises the neighbour's flag
 * (state + 1) with an atomic set; the neighbour waits on its flag with
 * shmem_wait_until. Halo buffers alternate by step parity. Writing parity q
 * again two steps later is safe without an acknowledgement: by then we have
 * waited for the neighbour's next state, which it sends only after its
 * boundary row has read the halo.
 */
#include "halo.h"

#include <shmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    halo_params_t p;
    double *cur, *nxt, *ghost[2], *halo_buf, t0 = 0.0, t1;
    long *flag;      /* symmetric: [0] from the left neighbour, [1] from the right */
    double *results; /* symmetric, on PE 0: (checksum, time) per PE */
    size_t row_bytes;
    int me, np, nb[2], R, C, rc = 0;

    if (halo_parse(argc, argv, "halo_shmem", &p)) return 2;
    shmem_init();
    me = shmem_my_pe();
    np = shmem_n_pes();
    R = p.rows, C = p.cols;
    row_bytes = (size_t)C * sizeof(double);
    /* halo_buf[parity][side][C]: side 0 holds the left neighbour's last row */
    halo_buf = shmem_malloc(4 * row_bytes);
    flag = shmem_calloc(2, sizeof(long));
    results = shmem_calloc(2 * (size_t)np, sizeof(double));
    cur = malloc((size_t)R * row_bytes);
    nxt = malloc((size_t)R * row_bytes);
    ghost[0] = malloc(row_bytes);
    ghost[1] = malloc(row_bytes);
    if (halo_buf == NULL || flag == NULL || results == NULL || cur == NULL || nxt == NULL ||
        ghost[0] == NULL || ghost[1] == NULL) {
        fprintf(stderr, "halo_shmem PE %d: out of memory\n", me);
        shmem_global_exit(1);
    }
    halo_ghost_rows(ghost[0], ghost[1], C);
    for (int i = 0; i < R; i++) {
        for (int j = 0; j < C; j++) cur[(size_t)i * C + j] = halo_init_value((long)me * R + i, j);
    }
    nb[0] = me > 0 ? me - 1 : -1;
    nb[1] = me < np - 1 ? me + 1 : -1;

    shmem_barrier_all();
    /* state s goes to the neighbours' parity s % 2; our left neighbour keeps
     * our row on its side 1 (its right), our right neighbour on side 0 */
    for (long s = 0; s < p.total; s++) {
        if (s == p.warm) { /* the clock starts after the untimed warm-up steps */
            shmem_barrier_all();
            t0 = app_now();
        }
        const double *halo[2];

        if (s == 0) {
            for (int k = 0; k < 2; k++) {
                if (nb[k] < 0) continue;
                shmem_double_put(halo_buf + (size_t)(1 - k) * C, cur + (size_t)(k ? R - 1 : 0) * C,
                                 (size_t)C, nb[k]);
            }
            shmem_fence();
            for (int k = 0; k < 2; k++) {
                if (nb[k] >= 0) shmem_long_atomic_set(&flag[1 - k], 1, nb[k]);
            }
        }
        for (int k = 0; k < 2; k++) {
            if (nb[k] < 0) {
                halo[k] = ghost[k];
            } else {
                shmem_long_wait_until(&flag[k], SHMEM_CMP_GE, s + 1);
                halo[k] = halo_buf + ((size_t)(s % 2) * 2 + (size_t)k) * C;
            }
        }
        if (R == 1) {
            halo_row(halo[0], cur, halo[1], nxt, NULL, C);
        } else {
            halo_row(halo[0], cur, cur + C, nxt, NULL, C);
            halo_row(cur + (size_t)(R - 2) * C, cur + (size_t)(R - 1) * C, halo[1],
                     nxt + (size_t)(R - 1) * C, NULL, C);
        }
        if (s + 1 < p.total) {
            size_t q = (size_t)((s + 1) % 2);
            for (int k = 0; k < 2; k++) {
                if (nb[k] < 0) continue;
                shmem_double_put_nbi(halo_buf + (q * 2 + (size_t)(1 - k)) * C,
                                     nxt + (size_t)(k ? R - 1 : 0) * C, (size_t)C, nb[k]);
            }
            shmem_fence();
            for (int k = 0; k < 2; k++) {
                if (nb[k] >= 0) shmem_long_atomic_set(&flag[1 - k], s + 2, nb[k]);
            }
        }
        for (int i = 1; i < R - 1; i++) {
            halo_row(cur + (size_t)(i - 1) * C, cur + (size_t)i * C, cur + (size_t)(i + 1) * C,
                     nxt + (size_t)i * C, NULL, C);
        }
        double *t = cur;
        cur = nxt;
        nxt = t;
    }
    t1 = app_now();

    double mine[2] = {halo_checksum(cur, R, C, (long)me * R), t1 - t0};
    shmem_double_put(results + 2 * (size_t)me, mine, 2, 0);
    shmem_barrier_all();
    if (me == 0) {
        rc = halo_report(&p, "shmem", np, results);
    }
    shmem_barrier_all();
    shmem_free(results);
    shmem_free(flag);
    shmem_free(halo_buf);
    shmem_finalize();
    free(cur);
    free(nxt);
    free(ghost[0]);
    free(ghost[1]);
    return rc;
}
