/*
 * Ordering, barriers and point-to-point synchronization.
 *
 * barrier_all is a dissemination barrier over internal symmetric flags:
 * in round r each PE writes the barrier's epoch into flag r of PE
 * (me + 2^r) mod n and waits for its own flag r to reach the epoch. Epochs
 * only grow, so flags never need resetting and a PE already in the next
 * barrier cannot confuse a slower one.
 *
 * Point-to-point waits (wait_until, the _all/_any/_some/_vector sets,
 * signal_wait_until) poll local memory with acquire loads, drive the btl
 * and spin, then yield, then nap (shmemi_relax, util/wait.h).
 *
 * Active-set barriers (shmem_barrier, the deprecated collectives) use the
 * caller's pSync: members add 1 to pSync[0] of the set's first PE, which
 * waits for all of them, restores pSync[0] and releases each member
 * through its pSync[1]; every word ends at SHMEM_SYNC_VALUE again.
 */
#include "shmem/shmem.h"
#include "shmem/shmemi.h"
#include "shmem/shmem_signal_inl.h"
#include "shmem/shmem_sync_inl.h"

void shmemi_quiet(void)
{
    util_status_t status;

    /* get_nbi's data in place (the network's quiet may not wait for gets) */
    shmemi_comp_wait("shmem_quiet", &shmemi.nbi_gets);
    status = rpipe_sym_quiet();
    if (status != UTIL_OK) {
        shmemi_fatal("shmem_quiet: %s", util_status_string(status));
    }
}

void shmem_quiet(void)
{
    shmemi_check_init("shmem_quiet");
    shmemi_quiet();
}

void shmem_fence(void)
{
    shmemi_check_init("shmem_fence");
    /* On node a release fence orders the stores; the network backends
     * order theirs (btl/ucx: a worker fence; a quiet where a backend
     * cannot do less). */
    if (rpipe_sym_fence() != UTIL_OK) {
        shmemi_fatal("shmem_fence failed");
    }
}

void (*shmemi_world_barrier)(void);

/* Aligned: where its flag loop fell in the cache line moved barrier_all on
 * 2 PEs from 0.17 to 0.24 us when unrelated code earlier in the library
 * grew by 80 bytes. */
__attribute__((aligned(64))) static void shmemi_barrier_flags(void)
{
    uint64_t epoch;
    int n = shmemi.n_pes, me = shmemi.my_pe;

    /* Across nodes the flat barrier sends n log n messages over the
     * network; the hierarchical one K (K - 1) for K nodes (4 PEs on 2
     * nodes: 75-90 us instead of 310-420 on the loaded 2-core VM). */
    if (shmemi_world_barrier != NULL) {
        shmemi_world_barrier();
        return;
    }
    epoch = ++shmemi.barrier_epoch;
    for (int r = 0, dist = 1; dist < n; r++, dist <<= 1) {
        int partner = (me + dist) % n;
        util_wait_t polls = UTIL_WAIT_INIT;

        /* A flag write, not an atomic: one message where an atomic set
         * waits for its reply over some networks. Flags alternate by
         * parity: a partner's write for barrier e + 1 may be on its way
         * with the one for e (the network may reorder them), never with
         * the one for e - 1, which we saw before finishing barrier e - 1. */
        uint64_t *flag = &shmemi.barrier_flags[2 * r + (epoch & 1)];

        shmemi_signal_set_internal("shmem_barrier_all", flag, epoch, partner);
        while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) < epoch) {
            shmemi_relax(&polls);
        }
    }
}

void shmem_barrier_all(void)
{
    shmemi_check_init("shmem_barrier_all");
    shmemi_quiet();
    shmemi_barrier_flags();
}

void shmem_sync_all(void)
{
    shmemi_check_init("shmem_sync_all");
    shmemi_barrier_flags();
}

/* Centralized barrier of the active set on the caller's pSync (see top),
 * coordinated by PE coord (a member). When every member has arrived, coord
 * runs between(arg) before releasing them: a broadcast puts its data
 * there, so it costs one gather and one release instead of two barriers. */
void shmemi_gather_release(int start, int log_stride, int size, long *pSync, int coord,
                           void (*between)(void *arg), void *arg)
{
    int stride = 1 << log_stride, me = shmemi.my_pe;
    util_wait_t polls = UTIL_WAIT_INIT;

    if (size <= 1) {
        if (between != NULL) between(arg);
        return;
    }
    if (me == coord) {
        while (__atomic_load_n(&pSync[0], __ATOMIC_ACQUIRE) != SHMEM_SYNC_VALUE + (size - 1)) {
            shmemi_relax(&polls);
        }
        __atomic_store_n(&pSync[0], SHMEM_SYNC_VALUE, __ATOMIC_RELAXED);
        if (between != NULL) {
            between(arg);
            shmemi_quiet(); /* the data lands before the release */
        }
        for (int i = 0; i < size; i++) {
            int pe = start + i * stride;
            if (pe != coord) {
                shmemi_amo_notify("shmem collective", &pSync[1], BTL_AMO_SET, 8, 1, pe);
            }
        }
    } else {
        shmemi_amo_notify("shmem collective", &pSync[0], BTL_AMO_ADD, 8, 1, coord);
        while (__atomic_load_n(&pSync[1], __ATOMIC_ACQUIRE) != 1) {
            shmemi_relax(&polls);
        }
        __atomic_store_n(&pSync[1], SHMEM_SYNC_VALUE, __ATOMIC_RELAXED);
    }
}

static void shmemi_barrier_psync(int start, int log_stride, int size, long *pSync)
{
    shmemi_gather_release(start, log_stride, size, pSync, start, NULL, NULL);
}

void shmemi_check_set(const char *call, int start, int log_stride, int size)
{
    long last = (long)start + (long)(size - 1) * (1L << log_stride);
    int me = shmemi.my_pe, member = 0;

    if (start < 0 || log_stride < 0 || log_stride > 30 || size < 1 || last >= shmemi.n_pes) {
        shmemi_fatal("%s: active set (start %d, log stride %d, size %d) does not fit %d PEs", call,
                     start, log_stride, size, shmemi.n_pes);
    }
    for (int i = 0; i < size && !member; i++) {
        member = (start + i * (1 << log_stride) == me);
    }
    if (!member) {
        shmemi_fatal("%s: PE %d is not in the active set (start %d, log stride %d, size %d)", call,
                     me, start, log_stride, size);
    }
}

void shmemi_barrier_set_psync(int start, int log_stride, int size, long *pSync)
{
    shmemi_barrier_psync(start, log_stride, size, pSync);
}

/* Like shmem_barrier without the quiet (1.4's active-set shmem_sync). */
void shmem_sync(int start, int log_stride, int size, long *pSync)
{
    shmemi_check_init("shmem_sync");
    shmemi_check_set("shmem_sync", start, log_stride, size);
    shmemi_barrier_set_psync(start, log_stride, size, pSync);
}

void shmem_barrier(int start, int log_stride, int size, long *pSync)
{
    shmemi_check_init("shmem_barrier");
    shmemi_check_set("shmem_barrier", start, log_stride, size);
    shmemi_quiet();
    shmemi_barrier_psync(start, log_stride, size, pSync);
}

/* ---- wait_until / test (the typed routines: shmem_typed_sync.c) ------------------------ */

int shmemi_test(const volatile void *ivar, int cmp, const void *value, unsigned size, int is_signed)
{
    return shmemi_test_inl(ivar, cmp, value, size, is_signed);
}

void shmemi_wait_until(const volatile void *ivar, int cmp, const void *value, unsigned size,
                       int is_signed)
{
    shmemi_wait_inl(ivar, cmp, value, size, is_signed);
}

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)
{
    util_wait_t polls = UTIL_WAIT_INIT;
    uint64_t v;

    shmemi_check_init("shmem_signal_wait_until");
    /* the value returned is the one that satisfied the condition, not a
     * later reload */
    while (!shmemi_compare_bits(v = __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE), cmp, &cmp_value, 8,
                                0)) {
        shmemi_relax(&polls);
    }
    return v;
}

/* ---- wait/test over sets of ivars (1.5): see shmem_sync_inl.h ---------------------------- */

static _Thread_local size_t shmemi_any_start;

static inline int shmemi_set_in(const shmemi_set_t *set, size_t i)
{
    return set->status == NULL || set->status[i] == 0;
}

static inline int shmemi_set_ok(const shmemi_set_t *set, size_t i)
{
    return shmemi_compare(set->ivars + i * set->size, set->cmp, set->values + i * set->vstride,
                          set->size, set->is_signed);
}

size_t shmemi_set_scan(const shmemi_set_t *set, int kind, size_t *indices, int *members_p)
{
    size_t n = set->nelems, count = 0;
    int members = 0;

    if (kind == SHMEMI_SET_ANY) {
        size_t start = n > 0 ? shmemi_any_start++ % n : 0;
        for (size_t k = 0; k < n; k++) {
            size_t i = (start + k) % n;
            if (shmemi_set_in(set, i)) {
                members = 1;
                if (shmemi_set_ok(set, i)) {
                    *members_p = 1;
                    return i;
                }
            }
        }
        *members_p = members;
        return SIZE_MAX;
    }
    for (size_t i = 0; i < n; i++) {
        if (!shmemi_set_in(set, i)) {
            continue;
        }
        members = 1;
        if (shmemi_set_ok(set, i)) {
            if (kind == SHMEMI_SET_SOME) {
                indices[count++] = i;
            }
        } else if (kind == SHMEMI_SET_ALL) {
            *members_p = 1;
            return 0;
        }
    }
    *members_p = members;
    return kind == SHMEMI_SET_ALL ? 1 : count;
}

size_t shmemi_set_wait(const shmemi_set_t *set, int kind, size_t *indices)
{
    util_wait_t polls = UTIL_WAIT_INIT;
    int members;

    if (kind == SHMEMI_SET_ALL) {
        /* each member in turn: once satisfied it stays so for this call */
        for (size_t i = 0; i < set->nelems; i++) {
            if (shmemi_set_in(set, i)) {
                shmemi_wait_until(set->ivars + i * set->size, set->cmp,
                                  set->values + i * set->vstride, set->size, set->is_signed);
            }
        }
        return 1;
    }
    for (;;) {
        size_t r = shmemi_set_scan(set, kind, indices, &members);
        if (!members || (kind == SHMEMI_SET_ANY ? r != SIZE_MAX : r != 0)) {
            return r; /* an empty set: SIZE_MAX (any) or 0 (some) */
        }
        shmemi_relax(&polls);
    }
}
