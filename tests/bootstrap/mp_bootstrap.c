/*
 * Multi-process bootstrap test, launched as N PEs (oshrun or mpirun).
 *   mp_bootstrap [expected_np [mode]]
 * modes: check (default) exchange/barrier/allgather with verified values;
 *        abort  the last PE calls bootstrap_abort(7) while the others wait;
 *        kill   PE 1 kills itself with SIGKILL while the others wait;
 *        exit3  PE 0 exits with status 3 while the others wait;
 *        wait   every PE waits 60 s (for tests that kill a PE or oshrun);
 *        hello  one line per PE (the demo).
 * Exits 0 only if every check passed on this PE.
 */
#include "bootstrap/bootstrap.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define EXPECT(_cond, ...)                                                                         \
    do {                                                                                           \
        if (!(_cond)) {                                                                            \
            fprintf(stderr, "PE %d: FAILED %s:%d: ", bootstrap_rank(), __FILE__, __LINE__);        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* system-wide: comparable across PEs */
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static void check_identity(int expected_np)
{
    int me = bootstrap_rank(), n = bootstrap_size(), in_local = 0;

    EXPECT(expected_np <= 0 || n == expected_np, "size %d, expected %d", n, expected_np);
    EXPECT(me >= 0 && me < n, "rank %d out of 0..%d", me, n - 1);
    EXPECT(bootstrap_local_size() >= 1 && bootstrap_local_size() <= n, "local size %d",
           bootstrap_local_size());
    EXPECT(bootstrap_node_of(me) == bootstrap_node_id(), "node_of(me) %d != node id %d",
           bootstrap_node_of(me), bootstrap_node_id());
    EXPECT(bootstrap_node_of(n) == -1 && bootstrap_node_of(-1) == -1, "node_of out of range");
    for (int i = 0; i < bootstrap_local_size(); i++) {
        int r = bootstrap_local_ranks()[i];
        EXPECT(bootstrap_node_of(r) == bootstrap_node_id(), "local rank %d on node %d", r,
               bootstrap_node_of(r));
        EXPECT(i == 0 || bootstrap_local_ranks()[i - 1] < r, "local ranks not ascending");
        in_local += (r == me);
    }
    EXPECT(in_local == 1, "my rank appears %d times in the local ranks", in_local);
    EXPECT(bootstrap_local_ranks()[bootstrap_local_rank()] == me, "local rank index wrong");
}

static void check_exchange(void)
{
    int me = bootstrap_rank(), n = bootstrap_size();
    long small = 1000L * me + 7, big[1000], got_big[1000];
    size_t size;
    char key[32];

    for (int i = 0; i < 1000; i++) {
        big[i] = (long)me * 1000000 + i;
    }
    EXPECT(bootstrap_put("small", &small, sizeof(small)) == UTIL_OK, "put small");
    EXPECT(bootstrap_put("big", big, sizeof(big)) == UTIL_OK, "put big");
    snprintf(key, sizeof(key), "only.%d", me);
    EXPECT(bootstrap_put(key, "", 0) == UTIL_OK, "put empty value");
    EXPECT(bootstrap_commit() == UTIL_OK, "commit");
    EXPECT(bootstrap_fence() == UTIL_OK, "fence");
    for (int r = 0; r < n; r++) {
        long v = -1;
        EXPECT(bootstrap_get(r, "small", &v, sizeof(v), &size) == UTIL_OK && size == sizeof(v) &&
                   v == 1000L * r + 7,
               "small of rank %d: %ld (size %zu)", r, v, size);
        memset(got_big, 0, sizeof(got_big));
        EXPECT(bootstrap_get(r, "big", got_big, sizeof(got_big), &size) == UTIL_OK &&
                   size == sizeof(big),
               "big of rank %d", r);
        for (int i = 0; i < 1000; i++) {
            if (got_big[i] != (long)r * 1000000 + i) {
                EXPECT(0, "big[%d] of rank %d is %ld", i, r, got_big[i]);
                break;
            }
        }
        EXPECT(bootstrap_get(r, "big", &v, sizeof(v), &size) == UTIL_ERR_TRUNCATED,
               "small buffer for big value of rank %d not refused", r);
        snprintf(key, sizeof(key), "only.%d", r);
        EXPECT(bootstrap_get(r, key, &v, sizeof(v), &size) == UTIL_OK && size == 0,
               "empty value of rank %d", r);
    }
    EXPECT(bootstrap_get(n, "small", &small, sizeof(small), &size) == UTIL_ERR_INVALID,
           "get from rank n not refused");
    EXPECT(bootstrap_put("", &small, sizeof(small)) == UTIL_ERR_INVALID, "empty key not refused");
    EXPECT(bootstrap_put("x123456789012345678901234567890123456789012345678901234567890123456789",
                         &small, 1) == UTIL_ERR_INVALID,
           "long key not refused");
}

/* Pairwise exchange with no fence: each rank publishes late, its partner
 * reads as soon as it can (retrying while the key is not there yet). */
static void check_lazy_exchange(void)
{
    int me = bootstrap_rank(), n = bootstrap_size(), peer = me ^ 1;
    long mine = 5000L + me, theirs = -1;
    char key[32];
    size_t size = 0;
    util_status_t status;

    if (peer >= n) {
        return;
    }
    usleep((useconds_t)((me & 1) * 300000)); /* odd ranks publish 0.3 s late */
    snprintf(key, sizeof(key), "late.%d", me);
    EXPECT(bootstrap_put(key, &mine, sizeof(mine)) == UTIL_OK && bootstrap_commit() == UTIL_OK,
           "publish %s", key);
    snprintf(key, sizeof(key), "late.%d", peer);
    for (int tries = 0; tries < 10; tries++) {
        status = bootstrap_get(peer, key, &theirs, sizeof(theirs), &size);
        if (status != UTIL_ERR_TIMEOUT) {
            break;
        }
    }
    EXPECT(status == UTIL_OK && theirs == 5000L + peer, "lazy get of %s: status %d value %ld", key,
           (int)status, theirs);
}

static int count_serve(void *arg)
{
    return (int)(++*(long *)arg % 2); /* idle every other call: the wait may sleep */
}

/* serving: bootstrap_barrier_serving, whose serve must run while an
 * earlier rank waits for the later ones (20 ms per rank) */
static void check_barrier_with(int serving)
{
    int me = bootstrap_rank(), n = bootstrap_size();
    double times[2], *all = malloc(sizeof(times) * (size_t)n), max_enter = 0, min_leave = 1e300;
    long served = 0;

    /* Staggered arrival: nobody may leave before the last one entered. */
    usleep((useconds_t)(me * 20000));
    times[0] = now_us();
    if (serving) {
        EXPECT(bootstrap_barrier_serving(count_serve, &served) == UTIL_OK, "barrier_serving");
        EXPECT(me == n - 1 || served > 0,
               "rank %d waited %d ms in barrier_serving and never served", me, (n - 1 - me) * 20);
    } else {
        EXPECT(bootstrap_barrier() == UTIL_OK, "barrier");
    }
    times[1] = now_us();
    EXPECT(bootstrap_allgather(times, all, sizeof(times)) == UTIL_OK, "allgather of times");
    for (int r = 0; r < n; r++) {
        max_enter = all[2 * r] > max_enter ? all[2 * r] : max_enter;
        min_leave = all[2 * r + 1] < min_leave ? all[2 * r + 1] : min_leave;
    }
    EXPECT(max_enter <= min_leave, "a PE left the barrier %.0f us before the last entered",
           max_enter - min_leave);
    free(all);
}

static void check_barrier(void)
{
    check_barrier_with(0);
    check_barrier_with(1);
}

static void check_allgather(void)
{
    int me = bootstrap_rank(), n = bootstrap_size();

    for (int round = 0; round < 20; round++) {
        int in[3] = {me, me * 7 + round, -round}, *out = malloc(sizeof(in) * (size_t)n);

        EXPECT(bootstrap_allgather(in, out, sizeof(in)) == UTIL_OK, "allgather round %d", round);
        for (int r = 0; r < n; r++) {
            EXPECT(out[3 * r] == r && out[3 * r + 1] == r * 7 + round && out[3 * r + 2] == -round,
                   "allgather round %d slot %d: %d %d %d", round, r, out[3 * r], out[3 * r + 1],
                   out[3 * r + 2]);
        }
        free(out);
    }
    /* sizes in turn (the store reuses keys: each round's values must be
     * that round's, whatever size came before) */
    for (int round = 0; round < 60; round++) {
        static const size_t sizes[] = {4, 12, 40, 12};
        size_t words = sizes[round % 4] / sizeof(int);
        int in[10], *out = malloc(sizeof(in) * (size_t)n);

        for (size_t w = 0; w < words; w++) {
            in[w] = me * 1000 + round * 10 + (int)w;
        }
        EXPECT(bootstrap_allgather(in, out, words * sizeof(int)) == UTIL_OK,
               "allgather of %zu bytes, round %d", words * sizeof(int), round);
        for (int r = 0; r < n; r++) {
            for (size_t w = 0; w < words; w++) {
                int want = r * 1000 + round * 10 + (int)w;

                EXPECT(out[(size_t)r * words + w] == want,
                       "allgather of %zu bytes, round %d, rank %d word %zu: %d, not %d",
                       words * sizeof(int), round, r, w, out[(size_t)r * words + w], want);
            }
        }
        free(out);
    }
}

int main(int argc, char **argv)
{
    int expected_np = argc > 1 ? atoi(argv[1]) : 0;
    const char *mode = argc > 2 ? argv[2] : "check";

    if (bootstrap_init() != UTIL_OK) {
        fprintf(stderr, "bootstrap_init failed\n");
        return 1;
    }
    if (strcmp(mode, "hello") == 0) {
        char host[64] = "";
        gethostname(host, sizeof(host) - 1);
        printf("hello from PE %d of %d (local %d of %d, node %d, %s bootstrap on %s)\n",
               bootstrap_rank(), bootstrap_size(), bootstrap_local_rank(), bootstrap_local_size(),
               bootstrap_node_id(), bootstrap_flavour(), host);
        fflush(stdout);
    } else if (strcmp(mode, "wait") == 0) {
        bootstrap_barrier();
        printf("PE %d pid %ld waiting\n", bootstrap_rank(), (long)getpid());
        fflush(stdout);
        sleep(60);
    } else if (strcmp(mode, "abort") == 0 || strcmp(mode, "kill") == 0 ||
               strcmp(mode, "exit3") == 0) {
        int culprit = strcmp(mode, "abort") == 0  ? bootstrap_size() - 1
                      : strcmp(mode, "kill") == 0 ? 1
                                                  : 0;
        bootstrap_barrier();
        if (bootstrap_rank() == culprit) {
            if (strcmp(mode, "abort") == 0) bootstrap_abort(7, "test abort");
            if (strcmp(mode, "kill") == 0) raise(SIGKILL);
            return 3;
        }
        bootstrap_barrier(); /* never completes: the culprit does not come */
        sleep(60);
        return 0;
    } else {
        check_identity(expected_np);
        check_exchange();
        check_lazy_exchange();
        check_barrier();
        check_allgather();
        if (bootstrap_rank() == 0 && failures == 0) {
            printf("mp_bootstrap: %d PEs on %d node(s): all checks passed\n", bootstrap_size(),
                   bootstrap_num_nodes());
        }
    }
    bootstrap_finalize();
    return failures ? 1 : 0;
}
