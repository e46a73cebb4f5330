/*
 * OpenSHMEM distributed locks: an MCS queue lock on the user's symmetric
 * long (zero on every PE at first).
 *
 * The long is two 32-bit words, each updated only by 32-bit atomics:
 *   tail (first word, meaningful on PE 0 only): last PE in the queue + 1,
 *        0 when the lock is free;
 *   node (second word, on every PE): my place in the queue: bits 0..30 my
 *        successor + 1 (written once by the successor), bit 31 set by my
 *        predecessor when it hands the lock over.
 * set_lock swaps itself into the tail; with a predecessor it links itself
 * into the predecessor's node and spins on its OWN node (local memory: no
 * remote polling, so 8 PEs on 2 cores do not flood PE 0), then clears the
 * hand-over bit. clear_lock quiets (the critical section's writes are
 * complete before the next holder runs), then either swings the tail back
 * to free or waits for its successor to link and hands over. Waiters are
 * served in arrival order, so nobody starves; each acquisition costs one
 * remote swap, plus one link and one hand-over when there is contention.
 * All remote updates are atomics, so it works through the network btl.
 */
#include "shmem/shmem.h"
#include "shmem/shmemi.h"

#define SHMEMI_LOCK_GRANT 0x80000000u /* node: the lock is handed to me */
#define SHMEMI_LOCK_NEXT  0x7fffffffu /* node: successor + 1 */

static inline uint32_t *shmemi_lock_tail(long *lock)
{
    return (uint32_t *)lock;
}
static inline uint32_t *shmemi_lock_node(long *lock)
{
    return (uint32_t *)lock + 1;
}

/* Checks the lock and returns the world PE holding its tail: PE 0, or the
 * first member of the team of a space holding the lock (the others have no
 * such memory). */
static int shmemi_lock_check(const char *call, long *lock)
{
    const struct shmemi_space *space;

    shmemi_check_init(call);
    if (lock == NULL || ((uintptr_t)lock & (sizeof(long) - 1)) != 0) {
        shmemi_fatal("%s: %p is not an aligned symmetric long", call, (void *)lock);
    }
    if (rpipe_sym_contains(shmemi.heap, lock, sizeof(long))) {
        return 0;
    }
    space = shmemi_space_find(lock, sizeof(long));
    return space != NULL ? shmemi_team_world_pe(shmemi_space_members(space), 0) : 0;
}

void shmem_set_lock(long *lock)
{
    uint32_t me = (uint32_t)shmemi.my_pe + 1, pred, grant = SHMEMI_LOCK_GRANT;
    uint32_t *node = shmemi_lock_node(lock);

    int home = shmemi_lock_check("shmem_set_lock", lock);
    pred = (uint32_t)shmemi_amo_fetch("shmem_set_lock", shmemi_lock_tail(lock), BTL_AMO_SWAP, 4, me,
                                      0, home);
    if (pred == 0) {
        return; /* free: mine */
    }
    shmemi_amo_notify("shmem_set_lock", node, BTL_AMO_OR, 4, me, (int)pred - 1);
    shmemi_wait_until(node, SHMEM_CMP_GE, &grant, 4, 0);
    /* Only my successor may still write here (its link, bits 0..30), maybe
     * through the network: an atomic of the same kind as its (atomicity rule). */
    (void)shmemi_amo_fetch("shmem_set_lock", node, BTL_AMO_AND, 4, ~SHMEMI_LOCK_GRANT, 0,
                           shmemi.my_pe);
}

int shmem_test_lock(long *lock)
{
    uint32_t me = (uint32_t)shmemi.my_pe + 1;

    int home = shmemi_lock_check("shmem_test_lock", lock);
    /* Only when free: never queue (test_lock does not block). */
    return shmemi_amo_fetch("shmem_test_lock", shmemi_lock_tail(lock), BTL_AMO_CSWAP, 4, me, 0,
                            home) == 0
               ? 0
               : 1;
}

void shmem_clear_lock(long *lock)
{
    uint32_t me = (uint32_t)shmemi.my_pe + 1, next, zero = 0;
    uint32_t *node = shmemi_lock_node(lock);

    int home = shmemi_lock_check("shmem_clear_lock", lock);
    shmemi_quiet();
    next = __atomic_load_n(node, __ATOMIC_ACQUIRE) & SHMEMI_LOCK_NEXT;
    if (next == 0) {
        if (shmemi_amo_fetch("shmem_clear_lock", shmemi_lock_tail(lock), BTL_AMO_CSWAP, 4, 0, me,
                             home) == me) {
            return; /* nobody queued behind me: free */
        }
        /* Someone swapped in after me and is about to link. */
        shmemi_wait_until(node, SHMEM_CMP_NE, &zero, 4, 0);
        next = __atomic_load_n(node, __ATOMIC_ACQUIRE) & SHMEMI_LOCK_NEXT;
    }
    /* Reset my node before the hand-over: nobody writes it any more. */
    __atomic_store_n(node, 0, __ATOMIC_RELAXED);
    shmemi_amo_notify("shmem_clear_lock", shmemi_lock_node(lock), BTL_AMO_OR, 4, SHMEMI_LOCK_GRANT,
                      (int)next - 1);
}
