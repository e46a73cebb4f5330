/*
 * OpenSHMEM signaling: putmem with signal, signal_add/set/fetch (the wait
 * is shmem_signal_wait_until in shmem_sync.c; the typed and sized
 * put-with-signal routines are in shmem_typed_signal.c, generated). How a
 * signal is ordered after its payload: shmem_signal_inl.h.
 */
#include "shmem/shmem.h"
#include "shmem/shmemi.h"
#include "shmem/shmem_signal_inl.h"

void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                         uint64_t signal, int sig_op, int pe)
{
    shmemi_put_signal("shmem_putmem_signal", dest, source, nelems, sig_addr, signal, sig_op, pe);
}

void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe)
{
    shmemi_put_signal("shmem_putmem_signal_nbi", dest, source, nelems, sig_addr, signal, sig_op,
                      pe);
}

void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    shmemi_put_signal("shmem_ctx_putmem_signal", dest, source, nelems, sig_addr, signal, sig_op,
                      shmemi_ctx_pe("shmem_ctx_putmem_signal", ctx, pe));
}

void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    shmemi_put_signal("shmem_ctx_putmem_signal_nbi", dest, source, nelems, sig_addr, signal, sig_op,
                      shmemi_ctx_pe("shmem_ctx_putmem_signal_nbi", ctx, pe));
}

/* Signal updates without payload (1.6): an atomic on the 8-byte word. */
static inline void shmemi_signal_update(const char *call, uint64_t *sig_addr, btl_amo_op_t op,
                                        uint64_t signal, int pe)
{
    size_t off;
    rpipe_sym_t *seg;

    shmemi_check_pe(call, pe);
    seg = shmemi_locate_signal(call, sig_addr, &off, &pe);
    shmemi_check_status(call, rpipe_sym_amo_post(seg, pe, off, op, 8, signal, 0), pe);
}

void shmem_signal_add(uint64_t *sig_addr, uint64_t signal, int pe)
{
    shmemi_signal_update("shmem_signal_add", sig_addr, BTL_AMO_ADD, signal, pe);
}
void shmem_signal_set(uint64_t *sig_addr, uint64_t signal, int pe)
{
    shmemi_signal_update("shmem_signal_set", sig_addr, BTL_AMO_SET, signal, pe);
}
void shmem_ctx_signal_add(shmem_ctx_t c, uint64_t *sig_addr, uint64_t signal, int pe)
{
    shmemi_signal_update("shmem_ctx_signal_add", sig_addr, BTL_AMO_ADD, signal,
                         shmemi_ctx_pe("shmem_ctx_signal_add", c, pe));
}
void shmem_ctx_signal_set(shmem_ctx_t c, uint64_t *sig_addr, uint64_t signal, int pe)
{
    shmemi_signal_update("shmem_ctx_signal_set", sig_addr, BTL_AMO_SET, signal,
                         shmemi_ctx_pe("shmem_ctx_signal_set", c, pe));
}

uint64_t shmem_signal_fetch(const uint64_t *sig_addr)
{
    /* Local word, updated by peers' signals: an acquire load sees the
     * payload that came before it. A PE may loop on it: rpipe_sym_poll. */
    uint64_t value = __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);

    rpipe_sym_poll();
    return value;
}
