/*
 * OpenSHMEM setup, exit, library queries and the symmetric heap.
 */
#define _GNU_SOURCE
#include "shmem/shmem.h"
#include "shmem/shmemi.h"
#include "shmem/shmem_coll_types.h"
#include "rpipe/rmalloc.h"
#include "bootstrap/bootstrap.h"
#include "util/env.h"

#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

rpipe_sym_t shmemi_no_segment;
shmemi_state_t shmemi = {.heap = &shmemi_no_segment};

/* The library's part of the heap, on top of SHMEM_SYMMETRIC_SIZE: sync
 * objects, the collective scratch, the team pool (up to 768 KiB) and, for a
 * job across nodes, the wide exchange (up to 128 KiB). */
#define SHMEMI_INTERNAL_HEAP (2u << 20)
#define SHMEMI_COLL_BUF      (512u << 10) /* the active-set collectives' scratch */

/* One line with the sizes: what was asked, what is free, and the knob. */
static void shmemi_heap_exhausted(const char *call, size_t size) __attribute__((noreturn, cold));
static void shmemi_heap_exhausted(const char *call, size_t size)
{
    const rmalloc_vmem_t *vmem = rmalloc_symm_vmem(shmemi.symm);
    size_t used = (size_t)rmalloc_vmem_used_units(vmem) << rmalloc_vmem_unit_shift(vmem);

    shmemi_fatal("%s(%zu): the symmetric heap is exhausted: %zu bytes requested, %zu free in a "
                 "heap of %zu (SHMEM_SYMMETRIC_SIZE=%zu plus %u for the library); raise "
                 "SHMEM_SYMMETRIC_SIZE",
                 call, size, size, used < shmemi.heap_size ? shmemi.heap_size - used : 0,
                 shmemi.heap_size, shmemi.heap_size - SHMEMI_INTERNAL_HEAP, SHMEMI_INTERNAL_HEAP);
}

/* The program's writable data (.data, .bss), without the part that is
 * read-only after relocation (RELRO), page-aligned. */
typedef struct {
    uintptr_t start, end;
} shmemi_range_t;

static int shmemi_find_data(struct dl_phdr_info *info, size_t size, void *arg)
{
    shmemi_range_t *range = arg;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), relro_end = 0;

    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_RELRO) {
            relro_end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        }
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
            uintptr_t start = info->dlpi_addr + ph->p_vaddr;
            uintptr_t end = start + ph->p_memsz;
            if (relro_end > start && relro_end < end) {
                start = relro_end;
            }
            range->start = (start + page - 1) & ~(page - 1);
            range->end = (end + page - 1) & ~(page - 1);
            break;
        }
    }
    return 1; /* the first object is the program itself */
}

static void shmemi_setup_static(void)
{
    shmemi_range_t range = {0, 0};
    util_status_t status;
    int enabled = 1;

    util_env_get_bool("RMB_SHMEM_STATIC", &enabled);
    if (!enabled) {
        return;
    }
    dl_iterate_phdr(shmemi_find_data, &range);
    if (range.end <= range.start) {
        return; /* no static data: nothing to share */
    }
    status = rpipe_sym_static((void *)range.start, range.end - range.start, &shmemi.data);
    if (status != UTIL_OK) {
        shmemi_fatal("shmem_init: cannot make static data symmetric: %s",
                     util_status_string(status));
    }
}

static void shmemi_setup_heap(void)
{
    util_status_t status;
    size_t user;

    if (util_env_get_size("SHMEM_SYMMETRIC_SIZE", &user) != UTIL_OK) {
        shmemi_fatal("shmem_init: SHMEM_SYMMETRIC_SIZE is not a size (e.g. 512M, 2G)");
    }
    shmemi.heap_size = user + SHMEMI_INTERNAL_HEAP;
    status = rpipe_sym_alloc(shmemi.heap_size, &shmemi.heap);
    if (status != UTIL_OK) {
        shmemi_fatal("shmem_init: cannot create a symmetric heap of %zu bytes "
                     "(SHMEM_SYMMETRIC_SIZE): %s",
                     shmemi.heap_size, util_status_string(status));
    }
    status = rmalloc_symm_create(shmemi.heap->base, shmemi.heap_size, 64, RMALLOC_FIRST_FIT,
                                 &shmemi.symm);
    if (status != UTIL_OK) {
        shmemi_fatal("shmem_init: cannot create the heap allocator: %s",
                     util_status_string(status));
    }
    btl_comp_init(&shmemi.nbi_gets);
    /* internal objects: identical sequence on every PE, hence symmetric */
    shmemi.coll_buf_size = SHMEMI_COLL_BUF;
    if (rmalloc_symm_alloc(shmemi.symm, 2 * SHMEMI_BARRIER_ROUNDS * 8, 64,
                           (void **)&shmemi.barrier_flags) != UTIL_OK ||
        rmalloc_symm_alloc(shmemi.symm, (size_t)shmemi.n_pes * 8, 64,
                           (void **)&shmemi.coll_flags) != UTIL_OK ||
        rmalloc_symm_alloc(shmemi.symm, shmemi.coll_buf_size, 64, &shmemi.coll_buf) != UTIL_OK) {
        shmemi_fatal("shmem_init: cannot place internal objects in the symmetric heap");
    }
    memset(shmemi.barrier_flags, 0, 2 * SHMEMI_BARRIER_ROUNDS * 8);
    memset(shmemi.coll_flags, 0, (size_t)shmemi.n_pes * 8);
}

/* A launcher ending the job (scancel, oshrun after a failure, Ctrl-C)
 * sends SIGTERM/SIGINT/SIGHUP. Some libraries we load catch them and call
 * exit(1) (libfabric's PSM provider does, at load time): the exit check
 * must not take that for the program's own failure. The handler notes
 * the signal and hands it on to whatever was there before. */
static volatile sig_atomic_t shmemi_terminating;
static const int shmemi_term_signals[] = {SIGTERM, SIGINT, SIGHUP};
#define SHMEMI_TERM_SIGNALS (int)(sizeof(shmemi_term_signals) / sizeof(shmemi_term_signals[0]))
static struct sigaction shmemi_term_prev[SHMEMI_TERM_SIGNALS];

static void shmemi_term_handler(int sig, siginfo_t *info, void *context)
{
    for (int i = 0; i < SHMEMI_TERM_SIGNALS; i++) {
        const struct sigaction *prev = &shmemi_term_prev[i];

        if (shmemi_term_signals[i] != sig) {
            continue;
        }
        shmemi_terminating = sig;
        if (prev->sa_flags & SA_SIGINFO) {
            prev->sa_sigaction(sig, info, context);
        } else if (prev->sa_handler == SIG_DFL) {
            signal(sig, SIG_DFL);
            raise(sig);
        } else if (prev->sa_handler != SIG_IGN) {
            prev->sa_handler(sig);
        }
    }
}

static void shmemi_watch_termination(void)
{
    struct sigaction act;

    memset(&act, 0, sizeof(act));
    act.sa_sigaction = shmemi_term_handler;
    act.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&act.sa_mask);
    for (int i = 0; i < SHMEMI_TERM_SIGNALS; i++) {
        if (sigaction(shmemi_term_signals[i], NULL, &shmemi_term_prev[i]) == 0 &&
            !(shmemi_term_prev[i].sa_flags & SA_SIGINFO) &&
            shmemi_term_prev[i].sa_handler == SIG_IGN) {
            continue; /* ignored (nohup): leave it so */
        }
        sigaction(shmemi_term_signals[i], &act, NULL);
    }
}

/* A crash (SIGSEGV, SIGBUS, ...) must end the PE by its signal, so that
 * the launcher reports 128+signal and names it. Libraries we load install
 * handlers of their own: UCX prints a backtrace and hands the signal on,
 * and libfabric's PSM provider then calls exit(1), which would make the
 * crash look like an ordinary failure with status 1. Our handler,
 * installed after those libraries are loaded, says which PE got which
 * signal, lets the earlier handlers print what they print, and then dies
 * by the signal; when one of them calls exit() instead, the exit check
 * below does it. */
static volatile sig_atomic_t shmemi_crash_signal;
static const int shmemi_crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define SHMEMI_CRASH_SIGNALS (int)(sizeof(shmemi_crash_signals) / sizeof(shmemi_crash_signals[0]))
static struct sigaction shmemi_crash_prev[SHMEMI_CRASH_SIGNALS];

static void shmemi_die_by_signal(int sig)
{
    sigset_t set;

    signal(sig, SIG_DFL);
    sigemptyset(&set);
    sigaddset(&set, sig);
    raise(sig); /* pending while blocked (inside a handler) */
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    _exit(128 + sig); /* not reached unless the signal was ignored */
}

/* Decimal digits of v at the end of buf; returns where they start
 * (snprintf is not async-signal-safe). */
static char *shmemi_utoa(unsigned v, char *end)
{
    *--end = '\0';
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return end;
}

static void shmemi_crash_handler(int sig, siginfo_t *info, void *context)
{
    static const char *const names[] = {"Segmentation fault", "Bus error",
                                        "Floating point exception", "Illegal instruction",
                                        "Aborted"};
    char pe_buf[16], sig_buf[16], line[160];
    const char *parts[7];
    size_t len = 0;
    int i;

    for (i = 0; i < SHMEMI_CRASH_SIGNALS && shmemi_crash_signals[i] != sig; i++) {
    }
    if (i == SHMEMI_CRASH_SIGNALS || shmemi_crash_signal != 0) {
        shmemi_die_by_signal(sig); /* a second crash inside the handlers */
    }
    shmemi_crash_signal = sig;
    parts[0] = "shmem error (PE ";
    parts[1] = shmemi_utoa((unsigned)shmemi.my_pe, pe_buf + sizeof(pe_buf));
    parts[2] = "): killed by signal ";
    parts[3] = shmemi_utoa((unsigned)sig, sig_buf + sizeof(sig_buf));
    parts[4] = " (";
    parts[5] = names[i];
    parts[6] = ")\n";
    for (int k = 0; k < 7; k++) {
        size_t n = strlen(parts[k]);
        if (len + n < sizeof(line)) {
            memcpy(line + len, parts[k], n);
            len += n;
        }
    }
    if (write(STDERR_FILENO, line, len) < 0) {
        /* nothing more to do about it */
    }
    if (shmemi_crash_prev[i].sa_flags & SA_SIGINFO) {
        shmemi_crash_prev[i].sa_sigaction(sig, info, context);
    } else if (shmemi_crash_prev[i].sa_handler != SIG_DFL &&
               shmemi_crash_prev[i].sa_handler != SIG_IGN) {
        shmemi_crash_prev[i].sa_handler(sig);
    }
    shmemi_die_by_signal(sig);
}

static void shmemi_watch_crashes(void)
{
    struct sigaction act;

    memset(&act, 0, sizeof(act));
    act.sa_sigaction = shmemi_crash_handler;
    act.sa_flags = SA_SIGINFO;
    sigemptyset(&act.sa_mask);
    for (int i = 0; i < SHMEMI_CRASH_SIGNALS; i++) {
        if (sigaction(shmemi_crash_signals[i], NULL, &shmemi_crash_prev[i]) == 0) {
            sigaction(shmemi_crash_signals[i], &act, NULL);
        }
    }
}

/* Registered once, at the first shmem_init. A PE of a multi-PE job that
 * exits while still initialized leaves the others waiting in whatever
 * collective comes next: end the whole job through the bootstrap, with
 * the PE's status. Exit status 0 there is an error too (the spec requires
 * shmem_finalize). Launchers that do not end a job when one task fails
 * (srun without -K) rely on this; the MPI flavour is left to MPI's rules. */
static void shmemi_exit_check(int exit_status, void *arg)
{
    char msg[160];

    (void)arg;
    if (shmemi_crash_signal != 0) {
        shmemi_die_by_signal(shmemi_crash_signal); /* a crash handler called exit() */
    }
    if (shmemi.initialized <= 0 || shmemi.n_pes <= 1 || strcmp(bootstrap_flavour(), "mpi") == 0 ||
        shmemi_terminating) {
        return;
    }
    if (exit_status == 0) {
        snprintf(msg, sizeof(msg), "PE %d exited without calling shmem_finalize", shmemi.my_pe);
        fprintf(stderr,
                "shmem error (PE %d): the program exited (status 0) without calling "
                "shmem_finalize; ending the job\n",
                shmemi.my_pe);
    } else {
        snprintf(msg, sizeof(msg), "PE %d exited with status %d", shmemi.my_pe, exit_status);
        fprintf(stderr,
                "shmem error (PE %d): the program exited with status %d before "
                "shmem_finalize; ending the job\n",
                shmemi.my_pe, exit_status);
    }
    fflush(stderr);
    bootstrap_abort(exit_status == 0 ? 1 : exit_status, msg);
}

int shmem_init_thread(int requested, int *provided)
{
    static int exit_check_registered;

    int flag;

    if (shmemi.initialized > 0) {
        shmemi.initialized++;
        if (provided) *provided = shmemi.thread_level;
        return 0;
    }
    if (util_env_get_bool("SHMEM_DEBUG", &flag) == UTIL_OK && flag) {
        util_log_level = UTIL_LOG_DEBUG;
        shmemi.debug = 1;
    }
    if (rinit(&shmemi.my_pe, &shmemi.n_pes) != R_SUCCESS) {
        fprintf(stderr, "shmem error: shmem_init failed to start the library (see above)\n");
        exit(1);
    }
    if (!exit_check_registered) {
        exit_check_registered = 1;
        shmemi_watch_termination();
        shmemi_watch_crashes();
        on_exit(shmemi_exit_check, NULL);
    }
    shmemi_setup_heap();
    shmemi_setup_static();
    shmemi_team_init();
    /* MULTIPLE: on-node operations are plain loads, stores and CPU atomics
     * (thread-safe as they are); calls into the btl are serialized by
     * rpipe_sym's mutex. Lower levels pay nothing. */
    shmemi.thread_level = requested < SHMEM_THREAD_SINGLE     ? SHMEM_THREAD_SINGLE
                          : requested > SHMEM_THREAD_MULTIPLE ? SHMEM_THREAD_MULTIPLE
                                                              : requested;
    rpipe_sym_set_threaded(shmemi.thread_level == SHMEM_THREAD_MULTIPLE);
    if (provided) *provided = shmemi.thread_level;
    shmemi.initialized = 1;
    shmemi.finalized = 0;
    if (shmemi.my_pe == 0 && util_env_get_bool("SHMEM_VERSION", &flag) == UTIL_OK && flag) {
        printf("%s, OpenSHMEM %d.%d\n", SHMEM_VENDOR_STRING, SHMEM_MAJOR_VERSION,
               SHMEM_MINOR_VERSION);
    }
    if (shmemi.my_pe == 0 && util_env_get_bool("SHMEM_INFO", &flag) == UTIL_OK && flag) {
        printf("%s, OpenSHMEM %d.%d; environment:\n", SHMEM_VENDOR_STRING, SHMEM_MAJOR_VERSION,
               SHMEM_MINOR_VERSION);
        util_env_print(stdout);
    }
    fflush(stdout);
    shmem_barrier_all();
    shmemi_tc_use_world_barrier();
    return 0;
}

void shmem_init(void)
{
    shmem_init_thread(SHMEM_THREAD_SINGLE, NULL);
}

void shmem_finalize(void)
{
    if (shmemi.initialized <= 0) {
        return; /* finalize without init, or twice: nothing to do */
    }
    if (shmemi.initialized > 1) {
        shmemi.initialized--;
        return;
    }
    shmem_barrier_all();
    shmemi_space_finalize(); /* before the teams: a space owns one */
    shmemi_team_finalize();
    shmemi.initialized = 0;
    if (shmemi.data != NULL) {
        rpipe_sym_destroy(shmemi.data);
        shmemi.data = NULL;
    }
    rmalloc_symm_destroy(shmemi.symm);
    rpipe_sym_destroy(shmemi.heap);
    shmemi.heap = &shmemi_no_segment; /* later RMA: "after shmem_finalize" */
    shmemi.symm = NULL;
    shmemi.finalized = 1;
    rpipe_sym_set_threaded(0);
    rexit();
    shmemi.n_pes = 0; /* later RMA fails the PE check: "after shmem_finalize" */
}

void shmem_global_exit(int status)
{
    fflush(stdout);
    bootstrap_end_job(status, "shmem_global_exit");
}

int shmem_my_pe(void)
{
    return shmemi.initialized > 0 ? shmemi.my_pe : -1;
}
int shmem_n_pes(void)
{
    return shmemi.initialized > 0 ? shmemi.n_pes : -1;
}
int _my_pe(void)
{
    return shmem_my_pe();
}
int _num_pes(void)
{
    return shmem_n_pes();
}

void start_pes(int npes)
{
    shmem_init();
}

void shmem_query_thread(int *provided)
{
    if (provided) *provided = shmemi.thread_level;
}

int shmem_query_initialized(int *initialized)
{
    if (initialized) *initialized = shmemi.initialized > 0;
    return 0;
}

void shmem_info_get_version(int *major, int *minor)
{
    if (major) *major = SHMEM_MAJOR_VERSION;
    if (minor) *minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char *name)
{
    if (name) {
        strncpy(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN - 1);
        name[SHMEM_MAX_NAME_LEN - 1] = '\0';
    }
}

/* ---- symmetric heap (collective: same calls in the same order on every PE) ---- */

/* SHMEM_DEBUG only (an allgather per call): a collective allocation whose
 * argument differs between PEs would leave the heaps out of step, and
 * every later symmetric address would be wrong without any error. */
static void shmemi_check_same(const char *call, const char *what, uint64_t value)
{
    uint64_t *all;

    if (!shmemi.debug) {
        return;
    }
    all = malloc(sizeof(uint64_t) * (size_t)shmemi.n_pes);
    if (all == NULL || bootstrap_allgather(&value, all, sizeof(value)) != UTIL_OK) {
        shmemi_fatal("%s: SHMEM_DEBUG check of the %s failed (out of memory or bootstrap error)",
                     call, what);
    }
    for (int pe = 0; pe < shmemi.n_pes; pe++) {
        if (all[pe] != value) {
            uint64_t theirs = all[pe];
            free(all);
            shmemi_fatal("%s: the %s differs between PEs (%llu here, %llu on PE %d); a collective "
                         "call needs the same on every PE",
                         call, what, (unsigned long long)value, (unsigned long long)theirs, pe);
        }
    }
    free(all);
}

/* Allocates (collectively), zeroes if asked, and returns after every PE
 * has done so: nobody may put into a block a slower PE still clears. */
static void *shmemi_heap_alloc(const char *call, size_t size, size_t align, int zero)
{
    void *ptr = NULL;
    util_status_t status;

    shmemi_check_init(call);
    shmemi_check_same(call, "size", size);
    shmemi_check_same(call, "alignment", align);
    status = rmalloc_symm_alloc(shmemi.symm, size, align, &ptr);
    if (status == UTIL_ERR_NO_RESOURCE || (status == UTIL_ERR_INVALID && size > shmemi.heap_size)) {
        shmemi_heap_exhausted(call, size);
    }
    if (status != UTIL_OK) {
        shmemi_fatal("%s: %s", call, util_status_string(status));
    }
    if (zero && ptr != NULL) {
        memset(ptr, 0, size);
    }
    shmem_barrier_all();
    return ptr;
}

void *shmem_malloc(size_t size)
{
    return shmemi_heap_alloc("shmem_malloc", size, 0, 0);
}

void *shmem_malloc_with_hints(size_t size, long hints)
{
    return shmemi_heap_alloc("shmem_malloc_with_hints", size, 0, 0);
}

void *shmem_align(size_t alignment, size_t size)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        shmemi_check_init("shmem_align");
        shmem_barrier_all();
        return NULL; /* the spec: not a power of two */
    }
    return shmemi_heap_alloc("shmem_align", size, alignment, 0);
}

void *shmem_calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) {
        shmemi_check_init("shmem_calloc");
        shmem_barrier_all();
        return NULL;
    }
    return shmemi_heap_alloc("shmem_calloc", count * size, 0, 1);
}

void *shmem_realloc(void *ptr, size_t size)
{
    void *out = NULL;
    util_status_t status;

    shmemi_check_init("shmem_realloc");
    shmemi_check_same("shmem_realloc", "size", size);
    shmemi_check_same("shmem_realloc", "block (heap offset)",
                      ptr == NULL ? UINT64_MAX : (uint64_t)((char *)ptr - shmemi.heap->base));
    shmem_barrier_all(); /* nobody may still access the old block */
    status = rmalloc_symm_realloc(shmemi.symm, ptr, size, &out);
    if (status == UTIL_ERR_NO_RESOURCE || (status == UTIL_ERR_INVALID && size > shmemi.heap_size)) {
        shmemi_heap_exhausted("shmem_realloc", size);
    }
    if (status == UTIL_ERR_INVALID) {
        shmemi_fatal("shmem_realloc: %p is not a live symmetric allocation", ptr);
    }
    if (status != UTIL_OK) {
        shmemi_fatal("shmem_realloc: %s", util_status_string(status));
    }
    shmem_barrier_all();
    return out;
}

void shmem_free(void *ptr)
{
    if (ptr == NULL) {
        return;
    }
    shmemi_check_init("shmem_free");
    shmemi_check_same("shmem_free", "block (heap offset)",
                      (uint64_t)((char *)ptr - shmemi.heap->base));
    shmem_barrier_all();
    if (!rpipe_sym_contains(shmemi.heap, ptr, 1)) {
        shmemi_fatal("shmem_free: %p is not in the symmetric heap", ptr);
    }
    if (rmalloc_symm_free(shmemi.symm, ptr) != UTIL_OK) {
        shmemi_fatal("shmem_free: %p is not a live symmetric allocation (freed twice?)", ptr);
    }
}

void *shmalloc(size_t size)
{
    return shmem_malloc(size);
}
void shfree(void *ptr)
{
    shmem_free(ptr);
}
void *shrealloc(void *ptr, size_t size)
{
    return shmem_realloc(ptr, size);
}
void *shmemalign(size_t alignment, size_t size)
{
    return shmem_align(alignment, size);
}

/* The profiling interface's control call: the library itself records
 * nothing, so there is nothing to switch; a tool that interposes
 * shmem_pcontrol (and reaches the library through the pshmem_ names) acts
 * on the level. */
void shmem_pcontrol(const int level, ...)
{
    (void)level;
}
