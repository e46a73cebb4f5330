/*
 * OpenSHMEM signaling: put-with-signal, signal_add/set/fetch (the wait is
 * shmem_signal_wait_until in shmem_sync.c). The payload and the 8-byte
 * signal are one rpipe_sym_put_signal: memcpy then a release store or add
 * on node, the btl's ordered put_flag (SET) or put, fence, atomic add (ADD)
 * across nodes, so a PE that sees the signal sees the data. The _nbi
 * forms complete before they return.
 */
#include "shmem/shmem.h"
#include "shmem/shmem_types.h"
#include "shmem/shmemi.h"

/* shmem_ctx.c: the world PE of a context's team PE (fatal on
 * SHMEM_CTX_INVALID). Wanted in shmemi.h. */

static inline rpipe_sym_t *shmemi_locate_signal(const char *call, uint64_t *sig_addr,
                                                size_t *offset_p)
{
#ifdef RMB_ARG_CHECKS
    if (__builtin_expect(((uintptr_t)sig_addr & 7) != 0, 0)) {
        shmemi_fatal("%s: signal address %p is not 8-byte aligned", call, (void *)sig_addr);
    }
#endif
    return shmemi_locate(call, sig_addr, sizeof(uint64_t), offset_p);
}

static inline void shmemi_put_signal(const char *call, void *dest, const void *src, size_t len,
                                     uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    size_t off = 0, sig_off;
    rpipe_sym_t *seg, *sig_seg;

    shmemi_check_pe(call, pe);
    if (__builtin_expect(sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD, 0)) {
        shmemi_fatal("%s: sig_op %d is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD", call,
                     sig_op);
    }
    sig_seg = shmemi_locate_signal(call, sig_addr, &sig_off);
    seg = len > 0 ? shmemi_locate(call, dest, len, &off) : sig_seg;
    shmemi_check_status(call,
                        rpipe_sym_put_signal(seg, pe, off, src, len, sig_seg, sig_off,
                                             sig_op == SHMEM_SIGNAL_ADD, signal),
                        pe);
}

#define SHMEMI_CPE(C, call) shmemi_ctx_pe(call, C, pe)
#define SHMEMI_SIG_ARGS uint64_t *sig, uint64_t signal, int sig_op, int pe

#define SHMEMI_DEFINE_SIGNAL(T, N)                                                               \
    void shmem_##N##_put_signal(T *d, const T *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_" #N "_put_signal", d, s, n * sizeof(T), sig, signal, sig_op, pe); } \
    void shmem_##N##_put_signal_nbi(T *d, const T *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_" #N "_put_signal_nbi", d, s, n * sizeof(T), sig, signal, sig_op, pe); } \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t c, T *d, const T *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_ctx_" #N "_put_signal", d, s, n * sizeof(T), sig, signal, sig_op, SHMEMI_CPE(c, "shmem_ctx_" #N "_put_signal")); } \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_ctx_" #N "_put_signal_nbi", d, s, n * sizeof(T), sig, signal, sig_op, SHMEMI_CPE(c, "shmem_ctx_" #N "_put_signal_nbi")); }
SHMEMI_RMA_TYPES(SHMEMI_DEFINE_SIGNAL)

#define SHMEMI_DEFINE_SIGNAL_SIZED(BITS, BYTES)                                                  \
    void shmem_put##BITS##_signal(void *d, const void *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_put" #BITS "_signal", d, s, n * BYTES, sig, signal, sig_op, pe); } \
    void shmem_put##BITS##_signal_nbi(void *d, const void *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_put" #BITS "_signal_nbi", d, s, n * BYTES, sig, signal, sig_op, pe); } \
    void shmem_ctx_put##BITS##_signal(shmem_ctx_t c, void *d, const void *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_ctx_put" #BITS "_signal", d, s, n * BYTES, sig, signal, sig_op, SHMEMI_CPE(c, "shmem_ctx_put" #BITS "_signal")); } \
    void shmem_ctx_put##BITS##_signal_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_ctx_put" #BITS "_signal_nbi", d, s, n * BYTES, sig, signal, sig_op, SHMEMI_CPE(c, "shmem_ctx_put" #BITS "_signal_nbi")); }
SHMEMI_SIZES(SHMEMI_DEFINE_SIGNAL_SIZED)

void shmem_putmem_signal(void *d, const void *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_putmem_signal", d, s, n, sig, signal, sig_op, pe); }
void shmem_putmem_signal_nbi(void *d, const void *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_putmem_signal_nbi", d, s, n, sig, signal, sig_op, pe); }
void shmem_ctx_putmem_signal(shmem_ctx_t c, void *d, const void *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_ctx_putmem_signal", d, s, n, sig, signal, sig_op, SHMEMI_CPE(c, "shmem_ctx_putmem_signal")); }
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, SHMEMI_SIG_ARGS) { shmemi_put_signal("shmem_ctx_putmem_signal_nbi", d, s, n, sig, signal, sig_op, SHMEMI_CPE(c, "shmem_ctx_putmem_signal_nbi")); }

/* Signal updates without payload (1.6): an atomic on the 8-byte word. */
static inline void shmemi_signal_update(const char *call, uint64_t *sig_addr, btl_amo_op_t op,
                                        uint64_t signal, int pe)
{
    size_t off;
    rpipe_sym_t *seg;

    shmemi_check_pe(call, pe);
    seg = shmemi_locate_signal(call, sig_addr, &off);
    shmemi_check_status(call, rpipe_sym_amo_post(seg, pe, off, op, 8, signal), pe);
}

void shmem_signal_add(uint64_t *sig_addr, uint64_t signal, int pe) { shmemi_signal_update("shmem_signal_add", sig_addr, BTL_AMO_ADD, signal, pe); }
void shmem_signal_set(uint64_t *sig_addr, uint64_t signal, int pe) { shmemi_signal_update("shmem_signal_set", sig_addr, BTL_AMO_SET, signal, pe); }
void shmem_ctx_signal_add(shmem_ctx_t c, uint64_t *sig_addr, uint64_t signal, int pe) { shmemi_signal_update("shmem_ctx_signal_add", sig_addr, BTL_AMO_ADD, signal, SHMEMI_CPE(c, "shmem_ctx_signal_add")); }
void shmem_ctx_signal_set(shmem_ctx_t c, uint64_t *sig_addr, uint64_t signal, int pe) { shmemi_signal_update("shmem_ctx_signal_set", sig_addr, BTL_AMO_SET, signal, SHMEMI_CPE(c, "shmem_ctx_signal_set")); }

uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
    /* Local word, updated by peers' signals: an acquire load sees the
     * payload that came before it. */
    return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}
