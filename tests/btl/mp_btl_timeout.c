/*
 * Network backends' waits are bounded: with a peer that stops serving,
 * quiet and a non-blocking get fail with UTIL_ERR_TIMEOUT after
 * RMB_BTL_TIMEOUT_SEC instead of hanging, and everything completes once
 * the peer serves again. The backend is RMB_BTL's (ofi or ucx).
 *
 *   RMB_BTL=ofi RMB_BTL_TIMEOUT_SEC=1 RMB_OFI_PROGRESS_USEC=0 FI_PROVIDER='tcp;ofi_rxm' \
 *       oshrun -n 2 tests/btl/mp_btl_timeout
 *   RMB_BTL=ucx RMB_BTL_TIMEOUT_SEC=1 RMB_UCX_PROGRESS_USEC=0 UCX_TLS=tcp,self \
 *       oshrun -n 2 tests/btl/mp_btl_timeout
 *
 * The wire must need the target's progress (tcp;ofi_rxm, UCX over TCP)
 * and the helper progress thread must be off, so that a PE away from the
 * btl serves nothing. PE 1 stalls in the launcher's barrier (no btl call)
 * until PE 0 has seen both its waits time out and joins it. Then PE 1
 * tells PE 0 it is awake and serves until PE 0 is done. Exits 0 only when
 * every check passed; each failure prints one line.
 *
 * With T_HELPER_PE0=1 in the environment PE 0 runs its helper thread
 * (RMB_*_PROGRESS_USEC=1000) and, before its quiet, holds a batched put
 * behind a read and stays away from the btl a while: the helper's attempts
 * to send that batch (behind a fence, on UCX >= 1.14 a flush that the
 * stalled peer never answers) must not hold the quiet past its bound. (A
 * batch whose fence failed goes with the error: its put is not checked.)
 */
#include "btl/btl.h"
#include "btl/btl_inl.h"
#include "bootstrap/bootstrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T_BIG    (1u << 20)
#define T_AWAKE  T_BIG         /* offset of PE 1's "awake" word, in PE 0's arena */
#define T_DONE   (T_BIG + 64)  /* offset of PE 0's "done" word, in PE 1's arena */
#define T_HELLO  (T_BIG + 128) /* connection warm-up word, both ways */
#define T_HELD   (T_BIG + 192) /* PE 0's batched put, in PE 1's arena (T_HELPER_PE0) */
#define T_ARENA  (T_BIG + 4096)
#define T_LATE_S 4 /* a wait that ends later waited for the peer */

typedef struct {
    uint64_t base;
    uint32_t len;
    uint8_t packed[BTL_RKEY_PACKED_MAX];
} t_key_t;

static int t_failures;

#define T_CHECK(_cond, ...)                                                                        \
    do {                                                                                           \
        if (!(_cond)) {                                                                            \
            fprintf(stderr, "pe %d: %s:%d: ", bootstrap_rank(), __FILE__, __LINE__);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            t_failures++;                                                                          \
        }                                                                                          \
    } while (0)

static double t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Polls a local word with btl progress until it is nonzero or limit_s passed. */
static int t_wait_value(btl_ctx_t *ctx, volatile uint64_t *word, uint64_t value, double limit_s)
{
    double end = t_now() + limit_s;

    while (btl_flag_load((const uint64_t *)word) < value) {
        if (btl_ctx_progress(ctx) < 0 || t_now() > end) {
            return -1;
        }
    }
    return 0;
}

int main(void)
{
    btl_ctx_t *ctx;
    btl_mem_t *mem;
    btl_ep_t *ep;
    btl_rkey_t *rk;
    t_key_t mine, all[2];
    size_t len = 0;
    uint8_t *arena, *src, *back, *spare;
    uint64_t raddr;
    int rank, peer, helper;
    char backend[BTL_NAME_MAX];

    alarm(60); /* bounded even if the btl's own bound failed */
    if (bootstrap_init() != UTIL_OK || bootstrap_size() != 2) {
        fprintf(stderr, "mp_btl_timeout: needs exactly 2 PEs under oshrun\n");
        return 1;
    }
    rank = bootstrap_rank();
    peer = 1 - rank;
    helper = rank == 0 && getenv("T_HELPER_PE0") != NULL;
    if (helper) {
        setenv("RMB_OFI_PROGRESS_USEC", "1000", 1);
        setenv("RMB_UCX_PROGRESS_USEC", "1000", 1);
    }
    src = malloc(T_BIG);
    back = malloc(T_BIG);
    spare = malloc(T_BIG);
    if (src == NULL || back == NULL || spare == NULL || btl_ctx_create(NULL, &ctx) != UTIL_OK ||
        btl_mem_alloc(ctx, T_ARENA, &mem) != UTIL_OK || btl_ctx_ep(ctx, peer, &ep) != UTIL_OK) {
        bootstrap_abort(1, "mp_btl_timeout: set-up failed");
    }
    arena = btl_mem_addr(mem);
    memset(arena, 0, T_ARENA);
    memset(&mine, 0, sizeof(mine));
    mine.base = (uint64_t)(uintptr_t)arena;
    if (btl_mem_pack(mem, mine.packed, sizeof(mine.packed), &len) != UTIL_OK) {
        bootstrap_abort(1, "mp_btl_timeout: pack failed");
    }
    mine.len = (uint32_t)len;
    if (bootstrap_allgather(&mine, all, sizeof(mine)) != UTIL_OK ||
        btl_rkey_unpack(ep, all[peer].packed, all[peer].len, &rk) != UTIL_OK) {
        bootstrap_abort(1, "mp_btl_timeout: key exchange failed");
    }
    raddr = all[peer].base;
    for (size_t i = 0; i < T_BIG; i++) {
        src[i] = (uint8_t)(i * 7 + 3);
    }

    /* Connect while both serve: the provider's connection set-up needs the
     * peer's progress too, and the stall below is about data. The second
     * word says the peer's quiet is done: a PE must not leave for the
     * bootstrap barrier (where it serves nothing) while the other's quiet
     * still needs it (that quiet has RMB_BTL_TIMEOUT_SEC, 1 s, and failed
     * the warm-up now and then on the loaded machine). */
    if (btl_amo_post(ep, BTL_AMO_SET, 8, raddr + T_HELLO, rk, 1) != UTIL_OK ||
        t_wait_value(ctx, (volatile uint64_t *)(arena + T_HELLO), 1, 30) != 0 ||
        btl_quiet(ep->iface) != UTIL_OK ||
        btl_amo_post(ep, BTL_AMO_SET, 8, raddr + T_HELLO, rk, 2) != UTIL_OK ||
        t_wait_value(ctx, (volatile uint64_t *)(arena + T_HELLO), 2, 30) != 0 ||
        bootstrap_barrier() != UTIL_OK) {
        bootstrap_abort(1, "mp_btl_timeout: warm-up failed");
    }

    if (rank == 1) {
        /* no btl call: nothing of PE 0's is served */
        if (bootstrap_barrier() != UTIL_OK) {
            bootstrap_abort(1, "mp_btl_timeout: stall barrier failed");
        }
        T_CHECK(btl_amo_post(ep, BTL_AMO_SET, 8, raddr + T_AWAKE, rk, 1) == UTIL_OK,
                "telling PE 0 I am awake");
        T_CHECK(t_wait_value(ctx, (volatile uint64_t *)(arena + T_DONE), 1, 30) == 0,
                "PE 0 never said it was done");
    } else {
        static uint64_t early_word; /* lands whenever the peer serves */
        static btl_comp_t early;    /* the backend may count it until then */
        btl_comp_t comp;
        util_status_t status;
        double t0, dt;

        /* 1. put + quiet against a stalled peer: a timeout, not a hang. */
        t0 = t_now();
        T_CHECK(btl_put(ep, src, 8, NULL, raddr, rk) == UTIL_OK, "8-byte put");
        if (helper) {
            /* RMA (a read: over UCX not a message), then a held put */
            btl_comp_init(&early);
            status = btl_get_nb(ep, &early_word, 8, NULL, raddr + T_HELLO, rk, &early);
            T_CHECK(status == UTIL_OK || status == UTIL_IN_PROGRESS, "8-byte get_nb returned %s",
                    util_status_name(status));
            T_CHECK(btl_put_batch(ep, src, 8, raddr + T_HELD, rk) == UTIL_OK, "batched put");
            usleep(300000); /* away: the helper tries to send the batch */
        }
        status = btl_quiet(ep->iface);
        dt = t_now() - t0;
        T_CHECK(status == UTIL_ERR_TIMEOUT, "quiet returned %s, expected ERR_TIMEOUT",
                util_status_name(status));
        T_CHECK(dt >= 0.9 && dt < T_LATE_S, "quiet gave up after %.2f s (limit 1 s)", dt);

        /* 2. a non-blocking get (no wire completes it locally: the data
         * comes from the stalled peer): its btl_comp_t fails with the
         * timeout. */
        btl_comp_init(&comp);
        t0 = t_now();
        status = btl_get_nb(ep, spare, T_BIG, NULL, raddr, rk, &comp);
        T_CHECK(status == UTIL_IN_PROGRESS, "1 MiB get_nb returned %s, expected IN_PROGRESS",
                util_status_name(status));
        status = btl_ctx_comp_wait(ctx, &comp);
        dt = t_now() - t0;
        T_CHECK(status == UTIL_ERR_TIMEOUT, "comp_wait returned %s, expected ERR_TIMEOUT",
                util_status_name(status));
        T_CHECK(dt >= 0.9 && dt < T_LATE_S, "comp_wait gave up after %.2f s (limit 1 s)", dt);

        /* 3. the peer serves again: everything completes, data is there. */
        if (bootstrap_barrier() != UTIL_OK) {
            bootstrap_abort(1, "mp_btl_timeout: stall barrier failed");
        }
        T_CHECK(t_wait_value(ctx, (volatile uint64_t *)(arena + T_AWAKE), 1, 30) == 0,
                "PE 1 never woke up");
        status = btl_quiet(ep->iface);
        T_CHECK(status == UTIL_OK, "quiet after the peer woke returned %s",
                util_status_name(status));
        T_CHECK(btl_get(ep, back, T_BIG, NULL, raddr, rk) == UTIL_OK, "get back");
        T_CHECK(memcmp(back, src, 8) == 0, "the stalled put's data did not land");
        T_CHECK(btl_amo_post(ep, BTL_AMO_SET, 8, raddr + T_DONE, rk, 1) == UTIL_OK &&
                    btl_quiet(ep->iface) == UTIL_OK,
                "telling PE 1 I am done");
    }

    snprintf(backend, sizeof(backend), "%s", btl_ep_backend(ep));
    btl_rkey_release(rk);
    btl_mem_free(mem);
    btl_ctx_destroy(ctx);
    free(src);
    free(back);
    free(spare);
    if (rank == 0) {
        printf("mp_btl_timeout (%s): %s\n", backend, t_failures == 0 ? "PASS" : "FAIL");
    }
    bootstrap_finalize();
    return t_failures == 0 ? 0 : 1;
}
