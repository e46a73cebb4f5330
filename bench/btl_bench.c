/*
 * btl microbenchmark: put/get latency and bandwidth and atomic latency for
 * every backend in the build, next to the raw floor measured in the same
 * run (memcpy + fence, a CPU atomic) on the same memory.
 *
 *   oshrun -n 2 bench/btl_bench [iterations]
 *
 * PE 0 drives, PE 1 owns the target memory (with one PE, PE 0 targets
 * itself). Numbers are ns per operation (median of 5 runs) and MB/s.
 * The target polls a flag with btl progress meanwhile, as a PE waiting in
 * btl_flag_wait does (networks with manual progress serve RMA only while
 * the target calls in); BTL_BENCH_TARGET=barrier leaves it in a bootstrap
 * barrier instead (served by the backend's helper thread, if any).
 * BTL_BENCH_ONLY=<name> measures one backend.
 */
#include "btl/btl.h"
#include "btl/btl_inl.h"
#include "bootstrap/bootstrap.h"

#include "bench/bench_args.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define B_BUF  (8u << 20)
#define B_RUNS 5
#define B_DONE (B_BUF + 64) /* offset of the word that ends the target's polling */

typedef struct {
    uint64_t base;
    uint32_t len;
    uint8_t packed[BTL_RKEY_PACKED_MAX];
} b_key_t;

static double b_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int b_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double b_median(double *v)
{
    qsort(v, B_RUNS, sizeof(double), b_cmp);
    return v[B_RUNS / 2];
}

/* Each measurement kind; one switch keeps the loops visible. */
typedef enum {
    B_RAW_STORE,    /* memcpy 8 B + release fence into the mapping */
    B_RAW_STORE_SC, /* memcpy 8 B + full fence */
    B_RAW_AMO,      /* __atomic_fetch_add on the mapping */
    B_MAPPED_PUT,   /* memcpy 8 B into the mapping + btl_fence: rpipe_sym's on-node put */
    B_PUT,          /* btl_put (through the ops table) */
    B_PUT_QUIET,    /* btl_put + btl_quiet */
    B_GET,
    B_PUT_FLAG,
    B_AMO_FADD,
    B_AMO_ADD,
    B_AMO_CSWAP,
    B_RAW_COPY /* memcpy of size bytes into the mapping */
} b_kind_t;

static util_status_t b_loop(b_kind_t kind, btl_ep_t *ep, btl_rkey_t *rk, uint64_t raddr,
                            void *direct, uint8_t *src, size_t size, long iters, double *ns_p)
{
    btl_iface_t *iface = ep->iface;
    double t0 = b_now();
    uint64_t v = 0, old;
    util_status_t status = UTIL_OK;

    for (long i = 0; i < iters && status == UTIL_OK; i++) {
        v = (uint64_t)i;
        switch (kind) {
        case B_RAW_STORE:
            memcpy(direct, &v, 8);
            __atomic_thread_fence(__ATOMIC_RELEASE);
            __asm__ __volatile__("" ::: "memory");
            break;
        case B_RAW_STORE_SC:
            memcpy(direct, &v, 8);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            break;
        case B_RAW_AMO:
            __atomic_fetch_add((uint64_t *)direct, 1, __ATOMIC_SEQ_CST);
            break;
        case B_RAW_COPY:
            memcpy(direct, src, size);
            __asm__ __volatile__("" ::: "memory");
            break;
        case B_MAPPED_PUT:
            memcpy(direct, &v, 8);
            status = btl_fence(ep);
            break;
        case B_PUT:
            status = btl_put(ep, src, size, NULL, raddr, rk);
            break;
        case B_PUT_QUIET:
            status = btl_put(ep, src, size, NULL, raddr, rk);
            if (status == UTIL_OK) {
                status = btl_quiet(iface);
            }
            break;
        case B_GET:
            status = btl_get(ep, src, size, NULL, raddr, rk);
            break;
        case B_PUT_FLAG:
            status = btl_put_flag(ep, src, size, NULL, raddr, rk, raddr + B_BUF, rk, v, NULL);
            break;
        case B_AMO_FADD:
            status = btl_amo_fetch(ep, BTL_AMO_ADD, 8, raddr, rk, 1, 0, &old);
            break;
        case B_AMO_ADD:
            status = btl_amo_post(ep, BTL_AMO_ADD, 8, raddr, rk, 1);
            break;
        case B_AMO_CSWAP:
            status = btl_amo_fetch(ep, BTL_AMO_CSWAP, 8, raddr, rk, v + 1, v, &old);
            break;
        }
    }
    if (status == UTIL_OK) {
        status = btl_quiet(iface);
    }
    *ns_p = (b_now() - t0) / (double)iters;
    return status;
}

static void b_report(const char *backend, const char *what, size_t size, b_kind_t kind,
                     btl_ep_t *ep, btl_rkey_t *rk, uint64_t raddr, void *direct, uint8_t *src,
                     long iters)
{
    double runs[B_RUNS], ns;
    util_status_t status = UTIL_OK;

    if (direct == NULL && (kind == B_RAW_STORE || kind == B_RAW_STORE_SC || kind == B_RAW_AMO ||
                           kind == B_RAW_COPY || kind == B_MAPPED_PUT)) {
        return;
    }
    for (int r = 0; r < B_RUNS && status == UTIL_OK; r++) {
        status = b_loop(kind, ep, rk, raddr, direct, src, size, iters, &runs[r]);
    }
    if (status != UTIL_OK) {
        printf("%-4s %-28s %9zu  %s\n", backend, what, size, util_status_name(status));
        return;
    }
    ns = b_median(runs);
    printf("%-4s %-28s %9zu %12.2f %12.1f\n", backend, what, size, ns,
           size >= 8 ? (double)size / ns * 1e3 : 0.0);
}

static int b_backend(const btl_component_t *comp, long iters)
{
    btl_ctx_t *ctx;
    btl_mem_t *mem;
    btl_ep_t *ep;
    btl_rkey_t *rk;
    b_key_t mine, *all;
    size_t len;
    int rank = bootstrap_rank(), size = bootstrap_size();
    int target = size > 1 ? 1 : 0;
    uint8_t *src = malloc(B_BUF);
    void *direct = NULL;
    uint64_t raddr, *done;
    const char *mode = getenv("BTL_BENCH_TARGET");
    int target_polls = mode == NULL || strcmp(mode, "barrier") != 0;

    if (src == NULL || btl_ctx_create(comp->name, &ctx) != UTIL_OK) {
        free(src);
        return -1;
    }
    memset(src, 1, B_BUF);
    if (btl_mem_alloc(ctx, B_BUF + 4096, &mem) != UTIL_OK ||
        btl_ctx_ep(ctx, target, &ep) != UTIL_OK) {
        return -1;
    }
    memset(&mine, 0, sizeof(mine));
    mine.base = (uint64_t)(uintptr_t)btl_mem_addr(mem);
    btl_mem_pack(mem, mine.packed, sizeof(mine.packed), &len);
    mine.len = (uint32_t)len;
    all = calloc((size_t)size, sizeof(*all));
    if (all == NULL || bootstrap_allgather(&mine, all, sizeof(mine)) != UTIL_OK ||
        btl_rkey_unpack(ep, all[target].packed, all[target].len, &rk) != UTIL_OK) {
        return -1;
    }
    raddr = all[target].base;
    if (btl_rkey_ptr(rk, raddr, &direct) != UTIL_OK) {
        direct = NULL;
    }
    done = (uint64_t *)((char *)btl_mem_addr(mem) + B_DONE);
    *done = 0;
    bootstrap_barrier();
    if (rank == target && rank != 0 && target_polls) {
        /* Serve PE 0 until it says it is done. */
        if (btl_flag_wait(ctx, done, 1, 0) != UTIL_OK) {
            fprintf(stderr, "btl_bench: target poll failed\n");
        }
    }
    if (rank == 0) {
        const char *name = comp->name;
        printf("# backend %s, PE 0 -> PE %d, %ld iterations, median of %d runs\n", name, target,
               iters, B_RUNS);
        printf("%-4s %-28s %9s %12s %12s\n", "btl", "operation", "bytes", "ns/op", "MB/s");
        b_report(name, "raw memcpy+fence(release)", 8, B_RAW_STORE, ep, rk, raddr, direct, src,
                 iters);
        b_report(name, "mapped put+fence", 8, B_MAPPED_PUT, ep, rk, raddr, direct, src, iters);
        b_report(name, "put (ops table)", 8, B_PUT, ep, rk, raddr, direct, src, iters);
        b_report(name, "raw memcpy+fence(seq_cst)", 8, B_RAW_STORE_SC, ep, rk, raddr, direct, src,
                 iters);
        b_report(name, "put+quiet", 8, B_PUT_QUIET, ep, rk, raddr, direct, src, iters);
        b_report(name, "get", 8, B_GET, ep, rk, raddr, direct, src, iters);
        b_report(name, "put_flag", 8, B_PUT_FLAG, ep, rk, raddr, direct, src, iters);
        b_report(name, "raw atomic fetch-add", 8, B_RAW_AMO, ep, rk, raddr, direct, src, iters);
        b_report(name, "amo fetch-add", 8, B_AMO_FADD, ep, rk, raddr, direct, src, iters);
        b_report(name, "amo add (post)", 8, B_AMO_ADD, ep, rk, raddr, direct, src, iters);
        b_report(name, "amo cswap", 8, B_AMO_CSWAP, ep, rk, raddr, direct, src, iters);
        for (size_t s = 64; s <= B_BUF; s *= 8) {
            long n = s >= (1u << 20) ? iters / 2000 + 10 : iters / 100 + 10;
            b_report(name, "raw memcpy", s, B_RAW_COPY, ep, rk, raddr, direct, src, n);
            b_report(name, "put", s, B_PUT, ep, rk, raddr, direct, src, n);
            b_report(name, "get", s, B_GET, ep, rk, raddr, direct, src, n);
        }
        fflush(stdout);
        if (target != 0 && (btl_amo_post(ep, BTL_AMO_SET, 8, raddr + B_DONE, rk, 1) != UTIL_OK ||
                            btl_quiet(ep->iface) != UTIL_OK)) {
            fprintf(stderr, "btl_bench: cannot release the target\n");
        }
    }
    bootstrap_barrier();
    btl_rkey_release(rk);
    free(all);
    btl_mem_free(mem);
    btl_ctx_destroy(ctx);
    free(src);
    return 0;
}

int main(int argc, char **argv)
{
    long iters =
        (long)bench_arg(argc, argv, 1, 1000000, 1, 1L << 40, "oshrun -n 2 btl_bench [ITERATIONS]");
    int rc = 0;

    if (iters <= 0 || bootstrap_init() != UTIL_OK) {
        fprintf(stderr, "usage: oshrun -n 2 btl_bench [iterations]\n");
        return 1;
    }
    for (int c = 0; c < btl_component_count(); c++) {
        const btl_component_t *comp = btl_component_at(c);
        const char *only = getenv("BTL_BENCH_ONLY");
        if ((comp->on_node_only && bootstrap_num_nodes() > 1) ||
            (only != NULL && strcmp(only, comp->name) != 0)) {
            continue;
        }
        if (b_backend(comp, iters) != 0) {
            fprintf(stderr, "btl_bench: backend %s failed to set up\n", comp->name);
            rc = 1;
        }
    }
    bootstrap_finalize();
    return rc;
}
