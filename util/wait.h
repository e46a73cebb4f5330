/*
 * One waiting policy for every blocking wait of the library (quiet, flag
 * and wait_until polls, barrier and collective steps, rpipe waits, btl
 * waits for completions): spin while the core is ours, then yield, then
 * sleep. Spinning is right when every PE has a core: the event comes
 * within a wire round trip and a yield or a sleep would only add to it.
 * When PEs outnumber cores the PE we wait for needs our core, so we yield
 * at once, and a wait that has yielded RMB_WAIT_YIELD_USEC (1 ms there; off
 * where every PE has a core) sleeps in short naps, so that PEs stuck behind
 * a slow one stop taking CPU from those that work. A wait whose btl serves
 * peers' traffic meanwhile (util_wait_note_served: their gets and atomics
 * need our progress over TCP) does not nap: a napping PE would answer them
 * late, through its btl's helper thread; nor does it yield right after
 * serving (what it waits for may be queued behind more of it). Where a btl
 * cannot tell when it served (util_wait_serves_unseen) the automatic naps
 * are off.
 *
 * Usage: util_wait_t w = UTIL_WAIT_INIT; while (!done) { poll...; util_wait_relax(&w); }
 */
#ifndef UTIL_WAIT_H
#define UTIL_WAIT_H

#include <sched.h>
#include <stdint.h>

typedef struct {
    uint32_t polls;
    uint32_t yields;
    uint64_t yield_since_ns; /* when the wait started yielding; 0 until known */
    uint64_t served;         /* util_wait_served when last looked at */
    uint64_t nap_ns;         /* the next nap; 0 while the wait does not nap */
} util_wait_t;

#define UTIL_WAIT_INIT                                                                             \
    {                                                                                              \
        0, 0, 0, 0, 0                                                                              \
    }

typedef struct {
    uint32_t spin;     /* polls before the first yield */
    uint64_t yield_ns; /* yielding this long before sleeping */
    uint64_t sleep_ns; /* the first nap */
    int oversubscribed;
} util_wait_policy_t;

extern util_wait_policy_t util_wait_policy;

/* Sets the policy from RMB_WAIT_SPIN, RMB_WAIT_YIELD_USEC, RMB_WAIT_SLEEP_USEC
 * and from whether procs_here (processes of the job on this node, or
 * RMB_HOST_PROCS when emulated nodes share the machine) times
 * threads_each (busy threads per process) outnumber the cores they share
 * (RMB_HOST_CPUS from oshrun, SLURM_CPUS_ON_NODE in a Slurm step, else this
 * process's CPUs, times procs_here where a launcher bound it to fewer than
 * the machine's first process may use). Called by the bootstrap once it
 * knows the node's processes. */
void util_wait_setup(int procs_here, int threads_each);

/* A transport whose own threads move the data (libfabric's sockets
 * provider) takes CPU while we wait: with threads_each busy threads per
 * process the policy is set again (PEs may now outnumber cores). */
void util_wait_busy_threads(int threads_each);

/* A transport that serves peers' operations through our progress calls
 * and cannot tell when it did (libfabric's rxm, MPI): automatic naps are
 * off, or a PE in a long wait would answer its peers late. */
void util_wait_serves_unseen(void);

/* Threads of this process napping in a wait now: a btl helper thread
 * serves the peers meanwhile (the PE is not polling). */
extern int util_wait_nappers;

static inline int util_wait_someone_naps(void)
{
    return __atomic_load_n(&util_wait_nappers, __ATOMIC_RELAXED) != 0;
}

/* Bumped by the network backends when their progress (the PE's or the
 * helper thread's) handled peers' traffic: waits that see it move stay
 * awake. Any change counts, so a lost increment between threads is
 * harmless. */
extern uint64_t util_wait_served;

static inline void util_wait_note_served(void)
{
    __atomic_store_n(&util_wait_served, __atomic_load_n(&util_wait_served, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
}

/* The yield/sleep phase of util_wait_relax (out of line). */
void util_wait_relax_slow(util_wait_t *w);

/* Bumped by every wait in its yield/nap phase (util_wait_relax_slow). */
extern uint64_t util_wait_relaxes;

/* A loop of calls that never wait (a stream of posts, a test or quiet that
 * is satisfied at once, each serving peers without a helper thread) never
 * yields: where PEs outnumber cores, a PE on this core that waits for our
 * answers then gets the core only at the kernel's preemption (milliseconds
 * per answer). Such a loop calls this now and then: it yields when no wait
 * of this process has relaxed since the last call with this *seen (loops
 * that wait too, collectives, yield in their waits already). *seen may be
 * shared by threads: any value it holds is a fine next comparison. */
static inline void util_wait_share_core(uint64_t *seen)
{
    uint64_t relaxes;

    if (!util_wait_policy.oversubscribed) {
        return;
    }
    relaxes = __atomic_load_n(&util_wait_relaxes, __ATOMIC_RELAXED);
    if (relaxes == __atomic_load_n(seen, __ATOMIC_RELAXED)) {
        sched_yield();
    }
    __atomic_store_n(seen, relaxes, __ATOMIC_RELAXED);
}

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
    w->served = 0;
    w->nap_ns = 0;
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
