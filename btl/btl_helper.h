/*
 * The helper thread of the network backends (btl/ofi, btl/ucx, btl/mpi): one
 * mechanism that serves peers' operations while the PE stays away from the
 * transport (computing, in a bootstrap barrier), on wires whose target must
 * progress for RMA and atomics to land (TCP, wire-up).
 *
 * While the PE's own thread drives the transport (every wait and progress
 * call bumps `activity`), the helper only looks every `interval_usec`, and
 * less often the longer the PE stays busy (twice the time after each look,
 * up to BTL_HELPER_BACKOFF intervals), so the two do not fight over the
 * transport's lock or the cores. Once the PE has stayed away for a whole
 * interval, the helper drains the transport and then sleeps in its wait fd
 * until traffic arrives: an idle PE costs no wake-ups, a busy one gets its
 * peers served at once. A PE napping in a long wait (util/wait.h) counts as
 * away. Negative interval: poll continuously.
 */
#ifndef BTL_HELPER_H
#define BTL_HELPER_H

#include "util/status.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>

typedef struct {
    /* Filled by the backend before btl_helper_start. */
    void (*drain)(void *arg); /* progress until idle */
    /* Sleeps until the transport has events or timeout_ms pass; 0 when it
     * cannot block (no fd, events queued): the helper then sleeps its
     * interval. */
    int (*block)(void *arg, int timeout_ms); /* may be NULL: no fd to sleep in */
    void (*wake)(void *arg);                 /* may be NULL: ends a block early at stop */
    void *arg;
    long interval_usec;

    uint64_t activity; /* bumped by the PE's thread (btl_helper_touch) */
    int stop;
    int running;
    pthread_t thread;
} btl_helper_t;

/* The PE's thread progresses the transport now (a wait, a progress call;
 * not an operation it only issues: that serves no peer). */
static inline void btl_helper_touch(btl_helper_t *helper)
{
    __atomic_store_n(&helper->activity, helper->activity + 1, __ATOMIC_RELAXED);
}

/* The PE's activity count: a drain that sees it move stops, so that the
 * helper does not fight the returning PE over the transport's lock. */
static inline uint64_t btl_helper_activity(const btl_helper_t *helper)
{
    return __atomic_load_n(&helper->activity, __ATOMIC_RELAXED);
}

/* A spin lock between the PE's thread and the helper thread, held for
 * microseconds (a batch's send, applying arrived messages). */
static inline void btl_helper_lock(int *lock)
{
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(lock, __ATOMIC_RELAXED)) {
            sched_yield();
        }
    }
}

static inline int btl_helper_trylock(int *lock)
{
    return !__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE);
}

static inline void btl_helper_unlock(int *lock)
{
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

/* Starts the thread; `backend` names it in the one-line error. */
util_status_t btl_helper_start(btl_helper_t *helper, const char *backend);

/* Stops and joins the thread (no-op when it is not running): at once when
 * the backend has a wake, else within BTL_HELPER_BLOCK_MS. */
void btl_helper_stop(btl_helper_t *helper);

#define BTL_HELPER_BLOCK_MS 100 /* the helper's longest block: how soon it sees stop */
#define BTL_HELPER_BACKOFF  8   /* looks at a busy PE grow to this many intervals apart */

#endif
