/*
 * The network backends' helper thread (btl_helper.h).
 */
#include "btl/btl_helper.h"
#include "util/log.h"
#include "util/wait.h"

#include <sched.h>
#include <string.h>
#include <unistd.h>

static void *btl_helper_main(void *arg)
{
    btl_helper_t *helper = arg;
    uint64_t seen = ~(uint64_t)0;
    long interval = helper->interval_usec;

    while (!__atomic_load_n(&helper->stop, __ATOMIC_ACQUIRE)) {
        uint64_t activity = __atomic_load_n(&helper->activity, __ATOMIC_RELAXED);

        if (activity == seen || util_wait_someone_naps() || helper->interval_usec < 0) {
            interval = helper->interval_usec;
            helper->drain(helper->arg);
            if (helper->interval_usec < 0) {
                sched_yield();
                continue;
            }
            if (helper->block != NULL && helper->block(helper->arg, BTL_HELPER_BLOCK_MS)) {
                continue;
            }
        } else if (interval < BTL_HELPER_BACKOFF * helper->interval_usec) {
            /* The PE drove the transport all along: each look takes a core
             * from a PE on a full node (a fetch_add over TCP 0.6 us slower
             * on average with a look every 1 ms), so look less often. */
            interval *= 2;
        }
        seen = activity;
        usleep((useconds_t)interval);
    }
    return NULL;
}

util_status_t btl_helper_start(btl_helper_t *helper, const char *backend)
{
    int ret;

    helper->stop = 0;
    ret = pthread_create(&helper->thread, NULL, btl_helper_main, helper);
    if (ret != 0) {
        util_error("%s: progress thread: %s", backend, strerror(ret));
        return UTIL_ERR_NO_RESOURCE;
    }
    helper->running = 1;
    return UTIL_OK;
}

void btl_helper_stop(btl_helper_t *helper)
{
    if (!helper->running) {
        return;
    }
    __atomic_store_n(&helper->stop, 1, __ATOMIC_RELEASE);
    if (helper->wake != NULL) {
        helper->wake(helper->arg);
    }
    pthread_join(helper->thread, NULL);
    helper->running = 0;
}
