/*
 * rcoll latency: barrier, broadcast of 8 bytes and allreduce of one int64
 * (sum) over all PEs, blocking, one handle reused per operation.
 *   oshrun -n N bench/rcoll_bench [ITERS]
 * Prints one line per operation: the mean time per call on PE 0 over ITERS
 * calls (after 10% warm-up), and the slowest PE's mean.
 */
#include "rpipe/rcoll.h"

#include "bench/bench_args.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double bench(rcoll_type_t type, long iters)
{
    rcoll_config_t cfg;
    rcoll_h h;
    int64_t src = 1, dst = 0;
    double t0;
    int rc;

    rcoll_config_init(&cfg);
    cfg.type = type;
    cfg.dtype = RCOLL_INT64;
    cfg.op = type == RCOLL_ALLREDUCE ? RCOLL_SUM : RCOLL_OP_NONE;
    cfg.count = type == RCOLL_BARRIER ? 0 : 1;
    if ((rc = rcoll_init(&h, &cfg)) != R_SUCCESS) {
        fprintf(stderr, "rcoll_init: %s\n", rstrerror(rc));
        exit(1);
    }
    for (long i = 0; i < iters / 10 + 1; i++) {
        rcoll(h, &src, &dst);
    }
    t0 = now();
    for (long i = 0; i < iters; i++) {
        if ((rc = rcoll(h, &src, &dst)) != R_SUCCESS) {
            fprintf(stderr, "rcoll: %s\n", rstrerror(rc));
            exit(1);
        }
    }
    t0 = (now() - t0) / (double)iters;
    rcoll_free(h);
    return t0;
}

int main(int argc, char **argv)
{
    static const struct {
        rcoll_type_t type;
        const char *name;
    } ops[] = {
        {RCOLL_BARRIER, "barrier"}, {RCOLL_BCAST, "bcast 8 B"}, {RCOLL_ALLREDUCE, "allreduce 8 B"}};
    long iters =
        (long)bench_arg(argc, argv, 1, 100000, 1, 1L << 40, "oshrun -n N rcoll_bench [ITERATIONS]");
    int me, npes;

    if (rinit(&me, &npes) != R_SUCCESS) {
        return 1;
    }
    if (me == 0) {
        printf("# rcoll latency, %d PEs, %ld iterations\n", npes, iters);
    }
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        double t = bench(ops[k].type, iters), all[1024];

        network_allgather(&t, npes <= 1024 ? all : NULL, sizeof(t));
        if (me == 0) {
            double worst = 0;
            for (int p = 0; p < npes && p < 1024; p++) {
                worst = all[p] > worst ? all[p] : worst;
            }
            printf("%-14s %2d PEs  %8.3f us  (slowest PE %8.3f us)\n", ops[k].name, npes, t * 1e6,
                   worst * 1e6);
        }
    }
    rexit();
    return 0;
}
