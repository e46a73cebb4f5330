/* The waiting policy (util/wait.h). */
#define _GNU_SOURCE
#include "util/wait.h"

#include "util/env.h"
#include "util/log.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define UTIL_WAIT_SPIN_ALONE  50000    /* polls (~0.3-1 ms) when every PE has a core */
#define UTIL_WAIT_CHECK_EVERY 16       /* yields between clock reads */
#define UTIL_WAIT_YIELD_OVER  1000     /* us of yielding before naps, PEs outnumbering cores */
#define UTIL_WAIT_NAP_MAX_NS  1000000u /* naps grow to 1 ms (or RMB_WAIT_SLEEP_USEC) */

/* Until the bootstrap knows the node: spin a little, yield, never sleep. */
util_wait_policy_t util_wait_policy = {UTIL_WAIT_SPIN_ALONE, 0, 0, 0};

static uint64_t util_wait_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPUs in a "0-3,8" list (/proc/PID/status Cpus_allowed_list); 0 if unreadable. */
static int util_wait_cpus_of(const char *status_path)
{
    char line[4096];
    int n = 0;
    FILE *f = fopen(status_path, "r");

    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
            for (char *p = line + 18; *p != '\0' && *p != '\n';) {
                char *end;
                long lo = strtol(p, &end, 10), hi = lo;

                if (end == p) {
                    p++; /* blanks, commas */
                    continue;
                }
                if (*end == '-') {
                    p = end + 1;
                    hi = strtol(p, &end, 10);
                }
                n += hi >= lo ? (int)(hi - lo + 1) : 0;
                p = end;
            }
            break;
        }
    }
    fclose(f);
    return n;
}

/* The cores the machine's PEs share. A PE bound to CPUs of its own
 * (oshrun --bind-to core, srun --cpu-bind, mpirun's default binding) sees
 * only those: two PEs each bound to a core are not two PEs on one core.
 * So the launcher's count where it gives one (oshrun: RMB_HOST_CPUS; a
 * Slurm step: SLURM_CPUS_ON_NODE); else, where this process may use fewer
 * CPUs than the machine's first process (its container or cgroup), the
 * launcher bound it, and each PE of the node has as many. */
static int util_wait_cores(int procs_here)
{
    cpu_set_t set;
    long host = 0, slurm = 0, online;
    const char *text = getenv("SLURM_CPUS_ON_NODE");
    int own, allowed;

    if (util_env_get_int("RMB_HOST_CPUS", &host) == UTIL_OK && host > 0 && host < 1000000) {
        return (int)host;
    }
    if (text != NULL && getenv("SLURM_STEP_ID") != NULL &&
        util_env_parse_int(text, &slurm) == UTIL_OK && slurm > 0 && slurm < 1000000) {
        return (int)slurm;
    }
    online = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) == 0) {
        return online > 0 ? (int)online : 1;
    }
    own = CPU_COUNT(&set);
    allowed = util_wait_cpus_of("/proc/1/status");
    if (allowed > own && procs_here > 1) {
        long bound = (long)procs_here * own;
        return bound < allowed ? (int)bound : allowed;
    }
    return own;
}

static int util_wait_procs = 1, util_wait_threads = 1; /* the last setup's arguments */
static int util_wait_unseen;                           /* util_wait_serves_unseen called */

void util_wait_busy_threads(int threads_each)
{
    if (threads_each > util_wait_threads) {
        util_wait_setup(util_wait_procs, threads_each);
    }
}

void util_wait_serves_unseen(void)
{
    if (!util_wait_unseen) {
        util_wait_unseen = 1;
        util_wait_setup(util_wait_procs, util_wait_threads);
    }
}

void util_wait_setup(int procs_here, int threads_each)
{
    long spin = -1, yield_usec = -1, sleep_usec = 50;
    long host_procs = 0;
    int cores;

    util_wait_procs = procs_here;
    util_wait_threads = threads_each;

    /* Emulated nodes (oshrun --nodes, several slurmd on one host) share
     * this machine's cores. */
    if (util_env_get_int("RMB_HOST_PROCS", &host_procs) == UTIL_OK && host_procs > procs_here &&
        host_procs < 1000000) {
        procs_here = (int)host_procs;
    }
    if (procs_here < 1) {
        procs_here = 1;
    }
    if (threads_each < 1) {
        threads_each = 1;
    }
    cores = util_wait_cores(procs_here);
    util_wait_policy.oversubscribed = (long)procs_here * threads_each > cores;
    if (util_env_get_int("RMB_WAIT_SPIN", &spin) != UTIL_OK || spin < -1 || spin > 1000000000L) {
        util_warn("RMB_WAIT_SPIN must be -1 (auto) or 0..1e9 polls; using auto");
        spin = -1;
    }
    if (util_env_get_int("RMB_WAIT_YIELD_USEC", &yield_usec) != UTIL_OK || yield_usec < -1 ||
        yield_usec > 1000000000L) {
        util_warn("RMB_WAIT_YIELD_USEC must be -1 (auto) or 0..1e9 us; using auto");
        yield_usec = -1;
    }
    if (util_env_get_int("RMB_WAIT_SLEEP_USEC", &sleep_usec) != UTIL_OK || sleep_usec < 1 ||
        sleep_usec > 1000000) {
        util_warn("RMB_WAIT_SLEEP_USEC must be 1..1000000; using 50");
        sleep_usec = 50;
    }
    if (spin < 0) {
        spin = util_wait_policy.oversubscribed ? 0 : UTIL_WAIT_SPIN_ALONE;
    }
    if (yield_usec < 0) {
        yield_usec =
            util_wait_policy.oversubscribed && !util_wait_unseen ? UTIL_WAIT_YIELD_OVER : 0;
    }
    util_wait_policy.spin = (uint32_t)spin;
    util_wait_policy.yield_ns = (uint64_t)yield_usec * 1000u;
    util_wait_policy.sleep_ns = (uint64_t)sleep_usec * 1000u;
    util_debug("wait: %d process(es) x %d thread(s) on %d core(s): spin %u polls, yield %ld us, "
               "then naps of %ld us",
               procs_here, threads_each, cores, util_wait_policy.spin, yield_usec, sleep_usec);
}

int util_wait_nappers;
uint64_t util_wait_served;
uint64_t util_wait_relaxes;

/* Naps grow by an eighth each (about an eighth of the time napped so far:
 * a wait that ends is noticed at most ~12% late), from RMB_WAIT_SLEEP_USEC
 * to 1 ms: a PE waiting for a slow one for long wakes up rarely, and does
 * not preempt the PEs that work every 50 us. */
static void util_wait_nap(util_wait_t *w)
{
    uint64_t cap = util_wait_policy.sleep_ns > UTIL_WAIT_NAP_MAX_NS ? util_wait_policy.sleep_ns
                                                                    : UTIL_WAIT_NAP_MAX_NS;
    struct timespec nap = {(time_t)(w->nap_ns / 1000000000u), (long)(w->nap_ns % 1000000000u)};

    __atomic_add_fetch(&util_wait_nappers, 1, __ATOMIC_RELAXED);
    nanosleep(&nap, NULL);
    __atomic_sub_fetch(&util_wait_nappers, 1, __ATOMIC_RELAXED);
    w->nap_ns += w->nap_ns / 8;
    if (w->nap_ns > cap) {
        w->nap_ns = cap;
    }
}

void util_wait_relax_slow(util_wait_t *w)
{
    uint64_t now, served = __atomic_load_n(&util_wait_served, __ATOMIC_RELAXED);

    /* any change counts (util_wait_share_core): a lost increment is harmless */
    __atomic_store_n(&util_wait_relaxes, __atomic_load_n(&util_wait_relaxes, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);

    if (served != w->served) {
        /* Peers' traffic came in: our progress served it, so more may be
         * queued ahead of what we wait for (a peer's stream on the socket
         * our answer comes on): poll again at once. Served by the helper
         * while we napped: serve it ourselves from now on. Either way the
         * yield phase starts over. */
        w->served = served;
        w->nap_ns = 0;
        w->yield_since_ns = 0;
        return;
    }
    if (w->nap_ns != 0) {
        util_wait_nap(w);
        return;
    }
    if (util_wait_policy.yield_ns == 0 || ++w->yields % UTIL_WAIT_CHECK_EVERY != 0) {
        sched_yield();
        return;
    }
    now = util_wait_now_ns();
    if (w->yield_since_ns == 0) {
        w->yield_since_ns = now;
    } else if (now - w->yield_since_ns >= util_wait_policy.yield_ns) {
        w->nap_ns = util_wait_policy.sleep_ns;
        util_wait_nap(w);
        return;
    }
    sched_yield();
}
