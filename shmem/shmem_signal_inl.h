/*
 * Put-with-signal: the helper that the typed routines of
 * shmem_typed_signal.c and the putmem forms of shmem_signal.c call. The
 * payload and the 8-byte signal are one rpipe_sym_put_signal: memcpy then
 * a release store or add on node, the btl's ordered put_flag (SET) or put,
 * fence, atomic add (ADD) across nodes, so a PE that sees the signal sees
 * the data. The _nbi forms complete before they return.
 */
#ifndef SHMEM_SIGNAL_INL_H
#define SHMEM_SIGNAL_INL_H

#include "shmem/shmemi.h"

/* Or'ed into sig_op by the library's own barriers and collectives: a
 * signal only its receiver waits for, which quiet need not complete. */
#define SHMEMI_SIGNAL_INTERNAL 0x100

static inline rpipe_sym_t *shmemi_locate_signal(const char *call, uint64_t *sig_addr,
                                                size_t *offset_p, int *pe_p)
{
#ifdef RMB_ARG_CHECKS
    if (__builtin_expect(((uintptr_t)sig_addr & 7) != 0, 0)) {
        shmemi_fatal("%s: signal address %p is not 8-byte aligned", call, (void *)sig_addr);
    }
#endif
    return shmemi_locate(call, sig_addr, sizeof(uint64_t), offset_p, pe_p);
}

static inline void shmemi_put_signal(const char *call, void *dest, const void *src, size_t len,
                                     uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    size_t off = 0, sig_off;
    rpipe_sym_t *seg, *sig_seg;
    int sig_pe = pe; /* differs from pe when one of the two is in a space */

    shmemi_check_pe(call, pe);
    if (__builtin_expect((sig_op & ~SHMEMI_SIGNAL_INTERNAL) != SHMEM_SIGNAL_SET &&
                             (sig_op & ~SHMEMI_SIGNAL_INTERNAL) != SHMEM_SIGNAL_ADD,
                         0)) {
        shmemi_fatal("%s: sig_op %d is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD", call,
                     sig_op);
    }
    sig_seg = shmemi_locate_signal(call, sig_addr, &sig_off, &sig_pe);
    if (len > 0) {
        seg = shmemi_locate(call, dest, len, &off, &pe);
    } else {
        seg = sig_seg;
        pe = sig_pe;
    }
    shmemi_check_status(
        call,
        rpipe_sym_put_signal(seg, pe, off, src, len, sig_seg, sig_pe, sig_off,
                             ((sig_op & SHMEM_SIGNAL_ADD) ? RPIPE_SIGNAL_ADD : 0) |
                                 ((sig_op & SHMEMI_SIGNAL_INTERNAL) ? RPIPE_SIGNAL_INTERNAL : 0),
                             signal),
        pe);
}

/* An internal flag write (barriers): a release store where the target's
 * memory is mapped here, else a put-with-signal that quiet need not
 * complete. The barrier's hot path on node, so no more than that. */
static inline void shmemi_signal_set_internal(const char *call, uint64_t *sig_addr, uint64_t value,
                                              int pe)
{
    size_t off;
    int sig_pe = pe;
    rpipe_sym_t *seg = shmemi_locate_signal(call, sig_addr, &off, &sig_pe);
    rpipe_sym_peer_t *peer;

    if (__builtin_expect(rpipe_sym_peer(seg, sig_pe, &peer) == UTIL_OK && peer->ptr != NULL &&
                             !rpipe_sym_amo_network,
                         1)) {
        __atomic_store_n((uint64_t *)(peer->ptr + off), value, __ATOMIC_RELEASE);
        return;
    }
    shmemi_put_signal(call, NULL, NULL, 0, sig_addr, value,
                      SHMEM_SIGNAL_SET | SHMEMI_SIGNAL_INTERNAL, pe);
}

#endif
