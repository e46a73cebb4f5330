/*
 * One waiting policy for every blocking wait of the library (quiet, flag
 * and wait_until polls, barrier and collective steps, rpipe waits, btl
 * waits for completions): spin while the core is ours, then yield, then
 * sleep. Spinning is right when every PE has a core: the event comes
 * within a wire round trip and a yield or a sleep would only add to it.
 * When PEs outnumber cores the PE we wait for needs our core, so we yield
 * at once. With RMB_WAIT_YIELD_USEC set, a wait that has yielded that long
 * sleeps in short naps, so that a PE stuck behind a slow one stops taking
 * CPU from those that work; off by default: a napping PE answers its
 * peers' operations late (its btl's helper thread takes over while it naps).
 *
 * Usage: util_wait_t w = UTIL_WAIT_INIT; while (!done) { poll...; util_wait_relax(&w); }
 */
#ifndef UTIL_WAIT_H
#define UTIL_WAIT_H

#include <stdint.h>

typedef struct {
    uint32_t polls;
    uint32_t yields;
    uint64_t yield_since_ns; /* when the wait started yielding; 0 until known */
} util_wait_t;

#define UTIL_WAIT_INIT                                                                             \
    {                                                                                              \
        0, 0, 0                                                                                    \
    }

typedef struct {
    uint32_t spin;     /* polls before the first yield */
    uint64_t yield_ns; /* yielding this long before sleeping */
    uint64_t sleep_ns; /* one nap */
    int oversubscribed;
} util_wait_policy_t;

extern util_wait_policy_t util_wait_policy;

/* Sets the policy from RMB_WAIT_SPIN, RMB_WAIT_YIELD_USEC, RMB_WAIT_SLEEP_USEC
 * and from whether procs_here (processes of the job on this node, or
 * RMB_HOST_PROCS when emulated nodes share the machine) times
 * threads_each (busy threads per process) outnumber the cores this process
 * may run on. Called by the bootstrap once it knows the node's processes. */
void util_wait_setup(int procs_here, int threads_each);

/* Threads of this process napping in a wait now: a btl helper thread
 * serves the peers meanwhile (the PE is not polling). */
extern int util_wait_nappers;

static inline int util_wait_someone_naps(void)
{
    return __atomic_load_n(&util_wait_nappers, __ATOMIC_RELAXED) != 0;
}

/* The yield/sleep phase of util_wait_relax (out of line). */
void util_wait_relax_slow(util_wait_t *w);

static inline void util_wait_cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline void util_wait_init(util_wait_t *w)
{
    w->polls = 0;
    w->yields = 0;
    w->yield_since_ns = 0;
}

/* True while the wait is still in its spin phase. */
static inline int util_wait_spinning(const util_wait_t *w)
{
    return w->polls < util_wait_policy.spin;
}

/* One idle step of a wait: pause (spin phase), else yield or nap. */
static inline void util_wait_relax(util_wait_t *w)
{
    if (++w->polls <= util_wait_policy.spin) {
        util_wait_cpu_pause();
        return;
    }
    util_wait_relax_slow(w);
}

#endif
