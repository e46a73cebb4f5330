/*
 * Ordering, barriers and point-to-point synchronization.
 *
 * barrier_all is a dissemination barrier over internal symmetric flags:
 * in round r each PE writes the barrier's epoch into flag r of PE
 * (me + 2^r) mod n and waits for its own flag r to reach the epoch. Epochs
 * only grow, so flags never need resetting and a PE already in the next
 * barrier cannot confuse a slower one.
 *
 * Active-set barriers (shmem_barrier, the deprecated collectives) use the
 * caller's pSync: members add 1 to pSync[0] of the set's first PE, which
 * waits for all of them, restores pSync[0] and releases each member
 * through its pSync[1]; every word ends at SHMEM_SYNC_VALUE again.
 */
#include "shmem/shmem.h"
#include "shmem/shmem_types.h"
#include "shmem/shmemi.h"

#include <sched.h>

#define SHMEMI_SPIN 1000 /* polls before a waiting PE starts yielding */

static inline void shmemi_relax(unsigned long *polls)
{
    if (++*polls > SHMEMI_SPIN) {
        rpipe_sym_progress();
        sched_yield(); /* oversubscribed: let the PE we wait for run */
    } else {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

void shmemi_quiet(void)
{
    util_status_t status = rpipe_sym_quiet();
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
    /* On node every store is ordered already; elsewhere completing
     * everything orders it too. */
    if (rpipe_sym_fence() != UTIL_OK) {
        shmemi_fatal("shmem_fence failed");
    }
}

static void shmemi_barrier_flags(void)
{
    uint64_t epoch = ++shmemi.barrier_epoch;
    int n = shmemi.n_pes, me = shmemi.my_pe;

    for (int r = 0, dist = 1; dist < n; r++, dist <<= 1) {
        int partner = (me + dist) % n;
        unsigned long polls = 0;

        __atomic_thread_fence(__ATOMIC_RELEASE);
        shmemi_amo_post("shmem_barrier_all", &shmemi.barrier_flags[r], BTL_AMO_SET, 8, epoch,
                        partner);
        while (__atomic_load_n(&shmemi.barrier_flags[r], __ATOMIC_ACQUIRE) < epoch) {
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
    unsigned long polls = 0;

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
                shmemi_amo_post("shmem collective", &pSync[1], BTL_AMO_SET, 8, 1, pe);
            }
        }
    } else {
        shmemi_amo_post("shmem collective", &pSync[0], BTL_AMO_ADD, 8, 1, coord);
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

void shmem_barrier(int start, int log_stride, int size, long *pSync)
{
    shmemi_check_init("shmem_barrier");
    shmemi_check_set("shmem_barrier", start, log_stride, size);
    shmemi_quiet();
    shmemi_barrier_psync(start, log_stride, size, pSync);
}

/* ---- wait_until / test ---------------------------------------------------------------- */

static int shmemi_compare(const volatile void *ivar, int cmp, const void *value, unsigned size,
                          int is_signed)
{
    int64_t a, b;

    if (size == 8) {
        uint64_t x = __atomic_load_n((const volatile uint64_t *)ivar, __ATOMIC_ACQUIRE), y;
        __builtin_memcpy(&y, value, 8);
        if (!is_signed) {
            switch (cmp) {
            case SHMEM_CMP_EQ: return x == y;
            case SHMEM_CMP_NE: return x != y;
            case SHMEM_CMP_GT: return x > y;
            case SHMEM_CMP_LE: return x <= y;
            case SHMEM_CMP_LT: return x < y;
            case SHMEM_CMP_GE: return x >= y;
            }
        }
        a = (int64_t)x;
        b = (int64_t)y;
    } else if (size == 4) {
        uint32_t x = __atomic_load_n((const volatile uint32_t *)ivar, __ATOMIC_ACQUIRE), y;
        __builtin_memcpy(&y, value, 4);
        a = is_signed ? (int64_t)(int32_t)x : (int64_t)x;
        b = is_signed ? (int64_t)(int32_t)y : (int64_t)y;
    } else {
        uint16_t x = __atomic_load_n((const volatile uint16_t *)ivar, __ATOMIC_ACQUIRE), y;
        __builtin_memcpy(&y, value, 2);
        a = is_signed ? (int64_t)(int16_t)x : (int64_t)x;
        b = is_signed ? (int64_t)(int16_t)y : (int64_t)y;
    }
    switch (cmp) {
    case SHMEM_CMP_EQ: return a == b;
    case SHMEM_CMP_NE: return a != b;
    case SHMEM_CMP_GT: return a > b;
    case SHMEM_CMP_LE: return a <= b;
    case SHMEM_CMP_LT: return a < b;
    case SHMEM_CMP_GE: return a >= b;
    }
    shmemi_fatal("shmem wait/test: comparison %d is not a SHMEM_CMP_* value", cmp);
}

int shmemi_test(const volatile void *ivar, int cmp, const void *value, unsigned size, int is_signed)
{
    if (shmemi_compare(ivar, cmp, value, size, is_signed)) {
        return 1;
    }
    rpipe_sym_progress();
    return 0;
}

void shmemi_wait_until(const volatile void *ivar, int cmp, const void *value, unsigned size,
                       int is_signed)
{
    unsigned long polls = 0;

    while (!shmemi_compare(ivar, cmp, value, size, is_signed)) {
        shmemi_relax(&polls);
    }
}

#define SHMEMI_SIGNED(T) (!((T)-1 > (T)0)) /* no "unsigned < 0" warning */
#define SHMEMI_DEFINE_SYNC(T, N)                                                                 \
    void shmem_##N##_wait_until(T *ivar, int cmp, T value) { shmemi_check_init("shmem_" #N "_wait_until"); shmemi_wait_until(ivar, cmp, &value, sizeof(T), SHMEMI_SIGNED(T)); } \
    int shmem_##N##_test(T *ivar, int cmp, T value) { shmemi_check_init("shmem_" #N "_test"); return shmemi_test(ivar, cmp, &value, sizeof(T), SHMEMI_SIGNED(T)); }
SHMEMI_SYNC_TYPES(SHMEMI_DEFINE_SYNC)

void shmem_short_wait(short *ivar, short value) { shmem_short_wait_until(ivar, SHMEM_CMP_NE, value); }
void shmem_int_wait(int *ivar, int value) { shmem_int_wait_until(ivar, SHMEM_CMP_NE, value); }
void shmem_long_wait(long *ivar, long value) { shmem_long_wait_until(ivar, SHMEM_CMP_NE, value); }
void shmem_longlong_wait(long long *ivar, long long value) { shmem_longlong_wait_until(ivar, SHMEM_CMP_NE, value); }
void shmem_wait(long *ivar, long value) { shmem_long_wait_until(ivar, SHMEM_CMP_NE, value); }
