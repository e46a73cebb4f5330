/*
 * Bounded waits shared by the network backends (btl_wait.h).
 */
#include "btl/btl_wait.h"
#include "util/env.h"
#include "util/log.h"

#include <stdlib.h>
#include <time.h>

uint64_t btl_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

util_status_t btl_wait_bound_init(btl_wait_bound_t *bound, const char *backend,
                                  const char *legacy_variable)
{
    const char *variable = "RMB_BTL_TIMEOUT_SEC";
    long seconds = 0;
    util_status_t status;

    if (legacy_variable != NULL && getenv(legacy_variable) != NULL) {
        variable = legacy_variable;
    }
    status = util_env_get_int(variable, &seconds);
    if (status != UTIL_OK) {
        return status;
    }
    if (seconds < 0) {
        util_error("%s=%ld: expected seconds >= 0 (0: no limit)", variable, seconds);
        return UTIL_ERR_INVALID;
    }
    bound->backend = backend;
    bound->variable = variable;
    bound->timeout_ns = (uint64_t)seconds * 1000000000u;
    return UTIL_OK;
}

int btl_wait_expire_comp(const btl_wait_bound_t *bound, btl_comp_t *comp, uint64_t posted_ns,
                         uint64_t now, int peer)
{
    if (bound->timeout_ns == 0 || now - posted_ns <= bound->timeout_ns) {
        return 0;
    }
    util_error("%s: non-blocking operation to PE %d: no completion after %llu s (PE dead or "
               "transport stalled; %s)",
               bound->backend, peer, (unsigned long long)(bound->timeout_ns / 1000000000u),
               bound->variable);
    if (comp->status == UTIL_OK) {
        comp->status = UTIL_ERR_TIMEOUT;
    }
    return 1;
}

util_status_t btl_wait_tick_slow(btl_wait_t *w, const btl_wait_bound_t *bound, const char *what,
                                 int peer)
{
    /* Providers with their own progress threads and peers on the same
     * cores need the CPU more than our spinning does. */
    util_wait_relax_slow(&w->idle);
    if (bound->timeout_ns == 0 || (w->idle.polls & 63) != 0) {
        return UTIL_OK;
    }
    return btl_wait_check_deadline(w, bound, what, peer);
}

util_status_t btl_wait_check_deadline(btl_wait_t *w, const btl_wait_bound_t *bound,
                                      const char *what, int peer)
{
    uint64_t now;

    if (bound->timeout_ns == 0) {
        return UTIL_OK;
    }
    now = btl_now_ns();
    if (w->deadline == 0) {
        w->deadline = now + bound->timeout_ns;
        return UTIL_OK;
    }
    if (now < w->deadline) {
        return UTIL_OK;
    }
    if (peer >= 0) {
        util_error("%s: %s to PE %d: no completion after %llu s (PE dead or transport stalled; "
                   "%s)",
                   bound->backend, what, peer,
                   (unsigned long long)(bound->timeout_ns / 1000000000u), bound->variable);
    } else {
        util_error("%s: %s: no completion after %llu s (a peer dead or transport stalled; %s)",
                   bound->backend, what, (unsigned long long)(bound->timeout_ns / 1000000000u),
                   bound->variable);
    }
    return UTIL_ERR_TIMEOUT;
}
