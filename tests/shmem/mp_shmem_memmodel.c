/*
 * Memory-model stress test: after each completion/ordering pattern below,
 * the TARGET reads the words it was sent with plain (volatile) loads, no
 * library call, and must see exactly this round's value. Uses only shmem.h.
 *
 *   mp_shmem_memmodel [rounds [patterns]]
 *
 * rounds (default 200, or MEMMODEL_ROUNDS): rounds of each pattern; the
 * large-put pattern runs rounds/8 (at least 2). patterns: a comma list of
 * names or numbers (default all):
 *   1 amo    every PE atomic_inc's two counters (heap, static) at the target,
 *            quiet, then sync_all or barrier_all: exact count
 *   2 flag   every PE atomic_add's its own word and a shared static word at
 *            the target, quiet, then a flag put (shmem_long_p of the round);
 *            the target waits for each flag (wait_until), then loads the words
 *   3 fence  every PE puts 1..16384 words (heap; static for some small sizes),
 *            fence, flag put; the target waits for each flag, loads every word
 *   4 large  every PE puts 256 KiB .. 1 MiB (blocking or nbi) to another PE,
 *            quiet, barrier_all or sync_all; each PE loads every word it got
 *   5 mixed  one PE puts a value to ONE word (heap and static) at the target,
 *            fence, atomic_add; quiet, sync: the target loads it; then every
 *            PE adds (add, fetch_add, inc), quiet, sync: exact value; then
 *            another PE adds, fences, puts, fences, adds; quiet, sync: the
 *            put's value plus the last add only
 *   6 third  a writer puts 1..512 words to a target, quiet, then a flag put
 *            to a third PE (the observer), which waits for it and gets the
 *            words from the target: quiet completes puts at the target for
 *            everyone, not only on the writer's own path to it (lazily
 *            completed puts must be flushed, a later message to the same
 *            target is not enough)
 *   7 ring   every PE adds the round to the next PE's counter and passes it
 *            the round as a token (shmem_long_p), no quiet, then waits for
 *            its own token: a PE that only waits still delivers what it put
 *            (small puts a library holds back to send together must leave by
 *            then); after the rounds, quiet and barrier: the exact sum
 * Targets rotate over the PEs round by round, so every PE is a target and
 * every pair (self included) is exercised.
 *
 * A stale value prints one line "memmodel FAIL: pattern P round R: target PE
 * T, from PE S, WORD: expected E got G (re-read after 100 ms: L)" and ends
 * the job with shmem_global_exit(1). MEMMODEL_ALARM (seconds, default 60)
 * bounds a hang (lost flag, hung barrier): one line naming the pattern and
 * round, exit 3. PE 0 prints one line per pattern with its time.
 */
#include <shmem.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_PES     64
#define DATA_MAX    16384             /* words per writer, pattern 3 (128 KiB) */
#define STATIC_DATA 1024              /* words per writer in static data */
#define LARGE_MAX   (1024 * 1024 / 8) /* words, pattern 4 (1 MiB) */

static int me, npes;

/* where we are, for the alarm handler */
static const char *volatile stage = "start-up";
static volatile long stage_round = -1;

/* symmetric static data */
static long counter_static;                    /* 1 */
static long total_static;                      /* 2 */
static long data_static[MAX_PES][STATIC_DATA]; /* 3 */
static long mixed_static;                      /* 5 */
static long ring_token, ring_sum;              /* 7 */

static long vload(const long *p)
{
    return *(const volatile long *)p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void on_alarm(int sig)
{
    char line[256];
    int len = snprintf(line, sizeof(line),
                       "memmodel: PE %d still in pattern %s round %ld at the time limit "
                       "(MEMMODEL_ALARM): a lost flag, a hung barrier or too many rounds\n",
                       me, stage, (long)stage_round);
    (void)sig;
    if (len > 0 && write(STDERR_FILENO, line, (size_t)len) < 0) {
        /* nothing more to do */
    }
    _exit(3);
}

/* One line, then the whole job ends. got is the value the check saw; the
 * word is read again 100 ms later (late arrival vs. lost update). */
static void fail(const char *pattern, long round, int from, const char *word, long index,
                 long expect, long got, const long *addr)
{
    char from_text[32] = "every PE";
    long later;

    if (from >= 0) {
        snprintf(from_text, sizeof(from_text), "PE %d", from);
    }
    usleep(100000);
    later = vload(addr);
    fprintf(stderr,
            "memmodel FAIL: pattern %s round %ld: target PE %d, from %s, %s[%ld]: "
            "expected %ld got %ld (re-read after 100 ms: %ld)\n",
            pattern, round, me, from_text, word, index, expect, got, later);
    shmem_global_exit(1);
}

static void check(const char *pattern, long round, int from, const char *word, long index,
                  const long *addr, long expect)
{
    long got = vload(addr);
    if (got != expect) {
        fail(pattern, round, from, word, index, expect, got, addr);
    }
}

/* Alternate the two synchronizations the patterns allow. */
static void sync_or_barrier(long round)
{
    if ((round / (npes > 1 ? npes : 1)) % 2 == 0) {
        shmem_sync_all();
    } else {
        shmem_barrier_all();
    }
}

/* Word i of what PE from sends in round r (never 0, differs per round). */
static long pattern_word(long r, int from, long i)
{
    return ((r + 1) << 40) ^ ((long)(from + 1) << 32) ^ (i * 2654435761L % 0xffffffffL) ^ 1;
}

/* ---- 1: atomic_inc, quiet, sync_all/barrier_all, plain load ---- */
static void pattern_amo(long rounds)
{
    long *counter = shmem_malloc(sizeof(long));
    long expect = 0;

    *counter = 0;
    counter_static = 0;
    shmem_barrier_all();
    for (long r = 0; r < rounds; r++) {
        int t = (int)(r % npes);
        long add = 0;

        stage_round = r;
        for (int p = 0; p < npes; p++) {
            add += 1 + (p + r) % 3;
        }
        for (long k = 0; k < 1 + (me + r) % 3; k++) {
            shmem_long_atomic_inc(counter, t);
            shmem_long_atomic_inc(&counter_static, t);
        }
        shmem_quiet();
        sync_or_barrier(r);
        if (me == t) {
            expect += add;
            check("1-amo", r, -1, "heap counter", 0, counter, expect);
            check("1-amo", r, -1, "static counter", 0, &counter_static, expect);
        }
    }
    shmem_barrier_all();
    shmem_free(counter);
}

/* ---- 2: atomic_add, quiet, flag put; wait_until, plain load ---- */
static void pattern_flag(long rounds)
{
    long *acc = shmem_calloc(MAX_PES, sizeof(long));
    long *flag = shmem_calloc(MAX_PES, sizeof(long));
    long expect_acc[MAX_PES] = {0}, expect_total = 0;

    total_static = 0;
    shmem_barrier_all();
    for (long r = 0; r < rounds; r++) {
        int t = (int)(r % npes);
        long v = (r + 1) * (me + 1);

        stage_round = r;
        shmem_long_atomic_add(&acc[me], v, t);
        shmem_long_atomic_add(&total_static, v, t);
        shmem_quiet();
        shmem_long_p(&flag[me], r + 1, t);
        if (me == t) {
            /* in a rotating order, so the first flag waited for varies */
            for (int k = 0; k < npes; k++) {
                int p = (int)((k + r / npes) % npes);
                long got;

                shmem_long_wait_until(&flag[p], SHMEM_CMP_GE, r + 1);
                check("2-flag", r, p, "flag", p, &flag[p], r + 1);
                expect_acc[p] += (r + 1) * (p + 1);
                expect_total += (r + 1) * (p + 1);
                got = vload(&acc[p]);
                if (got != expect_acc[p]) {
                    fail("2-flag", r, p, "added word", p, expect_acc[p], got, &acc[p]);
                }
            }
            check("2-flag", r, -1, "static total", 0, &total_static, expect_total);
        }
        /* a target is reused npes rounds later: one sync per lap */
        if (r % npes == npes - 1) {
            shmem_sync_all();
        }
    }
    shmem_barrier_all();
    shmem_free(flag);
    shmem_free(acc);
}

/* ---- 3: put, fence, flag put; wait_until, plain loads ---- */
static const long fence_sizes[] = {1, 3, 64, 1024, DATA_MAX};
#define N_FENCE_SIZES (long)(sizeof(fence_sizes) / sizeof(fence_sizes[0]))

static void pattern_fence(long rounds)
{
    long *data = shmem_malloc((size_t)npes * DATA_MAX * sizeof(long));
    long *flag = shmem_calloc(MAX_PES, sizeof(long));
    long *src = malloc(DATA_MAX * sizeof(long));

    shmem_barrier_all();
    for (long r = 0; r < rounds; r++) {
        int t = (int)(r % npes);
        long n = fence_sizes[(r / npes) % N_FENCE_SIZES];
        int in_static = n <= STATIC_DATA && (r / npes / N_FENCE_SIZES) % 2 == 1;
        long *dst = in_static ? data_static[me] : data + (long)me * DATA_MAX;

        stage_round = r;
        for (long i = 0; i < n; i++) {
            src[i] = pattern_word(r, me, i);
        }
        if (n == 1) {
            shmem_long_p(dst, src[0], t);
        } else {
            shmem_long_put(dst, src, (size_t)n, t);
        }
        shmem_fence();
        shmem_long_p(&flag[me], r + 1, t);
        if (me == t) {
            for (int k = 0; k < npes; k++) {
                int p = (int)((k + r / npes) % npes);
                const long *got = in_static ? data_static[p] : data + (long)p * DATA_MAX;

                shmem_long_wait_until(&flag[p], SHMEM_CMP_GE, r + 1);
                check("3-fence", r, p, "flag", p, &flag[p], r + 1);
                for (long i = 0; i < n; i++) {
                    long w = vload(&got[i]), want = pattern_word(r, p, i);
                    if (w != want) {
                        fail("3-fence", r, p, in_static ? "static data" : "heap data", i, want, w,
                             &got[i]);
                    }
                }
            }
        }
        if (r % npes == npes - 1) {
            shmem_sync_all();
        }
    }
    shmem_barrier_all();
    free(src);
    shmem_free(flag);
    shmem_free(data);
}

/* ---- 4: large put (blocking or nbi), quiet, barrier/sync; plain loads ---- */
static const long large_sizes[] = {256 * 1024 / 8, LARGE_MAX - 1, 512 * 1024 / 8};
#define N_LARGE_SIZES (long)(sizeof(large_sizes) / sizeof(large_sizes[0]))

static void pattern_large(long rounds)
{
    /* two buffers by round parity: a PE checks round r's while round r+1
     * writes the other; round r+2 comes after its barrier */
    long *buf = shmem_malloc(2 * (size_t)LARGE_MAX * sizeof(long));
    long *src = malloc(LARGE_MAX * sizeof(long));

    shmem_barrier_all();
    for (long r = 0; r < rounds; r++) {
        long shift = 1 + (r / 2) % npes; /* npes: to myself */
        int dst_pe = (int)((me + shift) % npes), from = (int)((me + npes - shift % npes) % npes);
        long n = large_sizes[r % N_LARGE_SIZES];
        long *dst = buf + (r % 2) * LARGE_MAX;

        stage_round = r;
        for (long i = 0; i < n; i++) {
            src[i] = pattern_word(r, me, i);
        }
        if ((r / 3) % 2 == 0) {
            shmem_long_put(dst, src, (size_t)n, dst_pe);
        } else {
            shmem_long_put_nbi(dst, src, (size_t)n, dst_pe);
        }
        shmem_quiet();
        if (r % 2 == 0) {
            shmem_barrier_all();
        } else {
            shmem_sync_all();
        }
        for (long i = 0; i < n; i++) {
            long w = vload(&dst[i]), want = pattern_word(r, from, i);
            if (w != want) {
                fail("4-large", r, from, "large buffer", i, want, w, &dst[i]);
            }
        }
    }
    shmem_barrier_all();
    free(src);
    shmem_free(buf);
}

/* ---- 5: put, fence, add from one PE; adds from all; exact value ---- */
static void pattern_mixed(long rounds)
{
    long *mixed = shmem_malloc(sizeof(long));

    *mixed = 0;
    mixed_static = 0;
    shmem_barrier_all();
    for (long r = 0; r < rounds; r++) {
        int t = (int)(r % npes);
        int a = (int)((t + 1 + r / npes) % npes); /* the putting PE; the target now and then */
        int b = (a + 1) % npes;
        long base = (r + 1) * 1000003L, a1 = 7 + r % 5, expect;

        stage_round = r;
        if (me == a) {
            shmem_long_p(mixed, base, t);
            shmem_long_p(&mixed_static, base, t);
            shmem_fence();
            shmem_long_atomic_add(mixed, a1, t);
            shmem_long_atomic_add(&mixed_static, a1, t);
        }
        shmem_quiet();
        shmem_sync_all();
        expect = base + a1;
        if (me == t) {
            check("5-mixed", r, a, "heap word after put+fence+add", 0, mixed, expect);
            check("5-mixed", r, a, "static word after put+fence+add", 0, &mixed_static, expect);
        }
        /* the target has read it before anyone adds again */
        shmem_sync_all();
        for (int p = 0; p < npes; p++) {
            expect += 3 * (p + 1) + 1 + 1;
        }
        shmem_long_atomic_add(mixed, 3 * (me + 1), t);
        (void)shmem_long_atomic_fetch_add(&mixed_static, 3 * (me + 1), t);
        shmem_long_atomic_inc(mixed, t);
        shmem_long_atomic_inc(&mixed_static, t);
        long old = shmem_long_atomic_fetch_add(mixed, 1, t);
        if (old < base + a1) { /* the word this PE's fetch_add found at the target */
            fprintf(stderr,
                    "memmodel FAIL: pattern 5-mixed round %ld: target PE %d, from PE %d, "
                    "fetch_add's old value: expected >= %ld got %ld\n",
                    r, t, me, base + a1, old);
            shmem_global_exit(1);
        }
        shmem_long_atomic_add(&mixed_static, 1, t);
        shmem_quiet();
        sync_or_barrier(r);
        if (me == t) {
            check("5-mixed", r, -1, "heap word after all adds", 0, mixed, expect);
            check("5-mixed", r, -1, "static word after all adds", 0, &mixed_static, expect);
        }
        /* the other way round: another PE adds, fences, overwrites with a
         * put, fences, adds; an add that passed the put would stay in */
        shmem_sync_all();
        if (me == b) {
            shmem_long_atomic_add(mixed, 1000, t);
            shmem_long_atomic_add(&mixed_static, 1000, t);
            shmem_fence();
            shmem_long_p(mixed, -base, t);
            shmem_long_p(&mixed_static, -base, t);
            shmem_fence();
            shmem_long_atomic_add(mixed, a1, t);
            shmem_long_atomic_add(&mixed_static, a1, t);
        }
        shmem_quiet();
        shmem_sync_all();
        if (me == t) {
            check("5-mixed", r, b, "heap word after add+fence+put+fence+add", 0, mixed, -base + a1);
            check("5-mixed", r, b, "static word after add+fence+put+fence+add", 0, &mixed_static,
                  -base + a1);
        }
        /* the next round's target differs; this one is reused after npes
         * rounds, each with syncs */
    }
    shmem_barrier_all();
    shmem_free(mixed);
}

/* ---- 6: put, quiet, flag to a third PE; it gets the data from the target ---- */
static const long third_sizes[] = {1, 3, 8, 64, 512};
#define N_THIRD_SIZES (long)(sizeof(third_sizes) / sizeof(third_sizes[0]))

static void pattern_third(long rounds)
{
    long *data = shmem_calloc(512, sizeof(long));
    long *flag = shmem_calloc(1, sizeof(long));
    long src[512], got[512];

    shmem_barrier_all();
    for (long r = 0; r < rounds; r++) {
        int w = (int)(r % npes), t = (int)((r + 1) % npes), o = (int)((r + 2) % npes);
        long len = third_sizes[r % N_THIRD_SIZES];

        stage_round = r;
        if (me == w) {
            for (long i = 0; i < len; i++) {
                src[i] = pattern_word(r, w, i);
            }
            shmem_putmem(data, src, (size_t)len * sizeof(long), t);
            shmem_quiet();
            shmem_long_p(flag, r + 1, o);
        }
        if (me == o) {
            shmem_long_wait_until(flag, SHMEM_CMP_GE, r + 1);
            shmem_getmem(got, data, (size_t)len * sizeof(long), t);
            for (long i = 0; i < len; i++) {
                if (got[i] != pattern_word(r, w, i)) {
                    fprintf(stderr,
                            "memmodel FAIL: pattern 6-third round %ld: PE %d got from PE %d "
                            "data[%ld] = %ld, expected %ld (written by PE %d before its quiet "
                            "and its flag)\n",
                            r, me, t, i, got[i], pattern_word(r, w, i), w);
                    fflush(stderr);
                    shmem_global_exit(1);
                }
            }
        }
        shmem_sync_all(); /* the target's words are rewritten npes rounds later */
    }
    shmem_barrier_all();
    shmem_free(flag);
    shmem_free(data);
}

/* ---- 7: puts and adds with no quiet, a wait; then quiet, barrier ---- */
static void pattern_ring(long rounds)
{
    int next = (me + 1) % npes;

    ring_token = 0;
    ring_sum = 0;
    shmem_barrier_all();
    for (long r = 1; r <= rounds; r++) {
        stage_round = r;
        shmem_long_atomic_add(&ring_sum, r, next);
        shmem_long_p(&ring_token, r, next);
        /* the previous PE may be rounds ahead: tokens only grow */
        shmem_long_wait_until(&ring_token, SHMEM_CMP_GE, r);
    }
    shmem_quiet();
    shmem_barrier_all();
    check("7-ring", rounds, (me + npes - 1) % npes, "ring_sum", 0, &ring_sum,
          rounds * (rounds + 1) / 2);
}

static const struct {
    const char *name, *number;
    void (*run)(long rounds);
    int divisor;
} patterns[] = {
    {"amo", "1", pattern_amo, 1},     {"flag", "2", pattern_flag, 1},
    {"fence", "3", pattern_fence, 1}, {"large", "4", pattern_large, 8},
    {"mixed", "5", pattern_mixed, 1}, {"third", "6", pattern_third, 1},
    {"ring", "7", pattern_ring, 1},
};
#define N_PATTERNS (int)(sizeof(patterns) / sizeof(patterns[0]))

/* 1 when pattern k is in the comma list (NULL: all) */
static int selected(const char *list, int k)
{
    size_t nlen = strlen(patterns[k].name);
    const char *s = list;

    if (list == NULL) {
        return 1;
    }
    while (*s) {
        size_t len = strcspn(s, ",");
        if ((len == nlen && strncmp(s, patterns[k].name, len) == 0) ||
            (len == 1 && *s == patterns[k].number[0])) {
            return 1;
        }
        s += len + (s[len] == ',');
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *env_rounds = getenv("MEMMODEL_ROUNDS"), *env_alarm = getenv("MEMMODEL_ALARM");
    long rounds = argc > 1 ? atol(argv[1]) : env_rounds != NULL ? atol(env_rounds) : 200;
    const char *list = argc > 2 ? argv[2] : NULL;
    int alarm_s = env_alarm != NULL ? atoi(env_alarm) : 60, any = 0;
    double start = now();

    for (int k = 0; k < N_PATTERNS; k++) {
        any |= selected(list, k);
    }
    if (rounds < 1 || !any) {
        fprintf(stderr, "usage: mp_shmem_memmodel [rounds >= 1 [amo,flag,fence,large,mixed,"
                        "third,ring or 1,2,3,4,5,6,7]]\n");
        return 2;
    }
    signal(SIGALRM, on_alarm);
    alarm(alarm_s > 0 ? (unsigned)alarm_s : 60);

    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (npes > MAX_PES) {
        if (me == 0) fprintf(stderr, "mp_shmem_memmodel: at most %d PEs\n", MAX_PES);
        shmem_finalize();
        return 2;
    }
    for (int k = 0; k < N_PATTERNS; k++) {
        long n = rounds / patterns[k].divisor;
        double t0;

        if (!selected(list, k)) {
            continue;
        }
        if (n < 2) {
            n = 2;
        }
        stage = patterns[k].name;
        t0 = now();
        patterns[k].run(n);
        if (me == 0) {
            printf("memmodel %-5s %d PEs: %ld rounds ok, %.2f s\n", patterns[k].name, npes, n,
                   now() - t0);
            fflush(stdout);
        }
    }
    stage = "finalize";
    shmem_finalize();
    if (me == 0) {
        printf("memmodel: all patterns passed on %d PEs in %.2f s\n", npes, now() - start);
    }
    return 0;
}
