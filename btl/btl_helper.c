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

    while (!__atomic_load_n(&helper->stop, __ATOMIC_ACQUIRE)) {
        uint64_t activity = __atomic_load_n(&helper->activity, __ATOMIC_RELAXED);

        if (activity == seen || util_wait_someone_naps() || helper->interval_usec < 0) {
            helper->drain(helper->arg);
            if (helper->interval_usec < 0) {
                sched_yield();
                continue;
            }
            if (helper->block != NULL && helper->block(helper->arg, BTL_HELPER_BLOCK_MS)) {
                continue;
            }
        }
        seen = activity;
        usleep((useconds_t)helper->interval_usec);
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
