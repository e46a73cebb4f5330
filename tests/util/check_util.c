/* Unit tests of util/: status strings, the strict environment parsers and
 * the waiting policy. */
#define _GNU_SOURCE
#include "util/env.h"
#include "util/status.h"
#include "util/wait.h"

#include <check.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_status_strings)
{
    ck_assert_str_eq(util_status_string(UTIL_OK), "success");
    ck_assert_str_eq(util_status_string(UTIL_ERR_NO_MEMORY), "out of memory");
    ck_assert_str_eq(util_status_name(UTIL_ERR_TIMEOUT), "UTIL_ERR_TIMEOUT");
    ck_assert_str_eq(util_status_string((util_status_t)-999), "unknown status");
    ck_assert_str_eq(util_status_name((util_status_t)77), "UTIL_UNKNOWN");
    ck_assert_int_eq(UTIL_OK, 0);
    ck_assert_int_gt(UTIL_IN_PROGRESS, 0);
    ck_assert_int_lt(UTIL_ERR_INVALID, 0);
}
END_TEST

START_TEST(test_parse_bool)
{
    int v = -1;
    const char *yes[] = {"1", "yes", "YES", "true", "on", "y"};
    const char *no[] = {"0", "no", "False", "off", "n"};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        v = -1;
        ck_assert_int_eq(util_env_parse_bool(yes[i], &v), UTIL_OK);
        ck_assert_int_eq(v, 1);
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        v = -1;
        ck_assert_int_eq(util_env_parse_bool(no[i], &v), UTIL_OK);
        ck_assert_int_eq(v, 0);
    }
    v = 42;
    ck_assert_int_eq(util_env_parse_bool("2", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_bool("", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_bool("yess", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(v, 42); /* outputs untouched on error */
}
END_TEST

START_TEST(test_parse_size)
{
    size_t v = 0;

    ck_assert_int_eq(util_env_parse_size("4096", &v), UTIL_OK);
    ck_assert_uint_eq(v, 4096);
    ck_assert_int_eq(util_env_parse_size("4K", &v), UTIL_OK);
    ck_assert_uint_eq(v, 4096);
    ck_assert_int_eq(util_env_parse_size("64m", &v), UTIL_OK);
    ck_assert_uint_eq(v, 64UL << 20);
    ck_assert_int_eq(util_env_parse_size("2G", &v), UTIL_OK);
    ck_assert_uint_eq(v, 2UL << 30);
    ck_assert_int_eq(util_env_parse_size("1T", &v), UTIL_OK);
    ck_assert_uint_eq(v, 1UL << 40);
    ck_assert_int_eq(util_env_parse_size("3KiB", &v), UTIL_OK);
    ck_assert_uint_eq(v, 3072);
    ck_assert_int_eq(util_env_parse_size("10MB", &v), UTIL_OK);
    ck_assert_uint_eq(v, 10UL << 20);
    v = 7;
    ck_assert_int_eq(util_env_parse_size("-1", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_size("12Q", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_size("", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_size("K", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_size("99999999999999999999", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_size("16777216T", &v), UTIL_ERR_INVALID); /* overflows */
    ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_parse_int)
{
    long v = 0;

    ck_assert_int_eq(util_env_parse_int("-12", &v), UTIL_OK);
    ck_assert_int_eq(v, -12);
    ck_assert_int_eq(util_env_parse_int("0x10", &v), UTIL_OK);
    ck_assert_int_eq(v, 16);
    ck_assert_int_eq(util_env_parse_int("12abc", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_int("", &v), UTIL_ERR_INVALID);
}
END_TEST

START_TEST(test_env_getters)
{
    const char *text = NULL;
    int flag = -1;

    unsetenv("RMB_INFO");
    ck_assert_int_eq(util_env_get_bool("RMB_INFO", &flag), UTIL_OK);
    ck_assert_int_eq(flag, 0); /* the row's default */
    setenv("RMB_INFO", "yes", 1);
    ck_assert_int_eq(util_env_get_bool("RMB_INFO", &flag), UTIL_OK);
    ck_assert_int_eq(flag, 1);
    setenv("RMB_INFO", "maybe", 1);
    flag = 5;
    ck_assert_int_eq(util_env_get_bool("RMB_INFO", &flag), UTIL_ERR_INVALID);
    ck_assert_int_eq(flag, 5);
    unsetenv("RMB_INFO");
    ck_assert_int_eq(util_env_get_string("RMB_LOG_LEVEL", &text), UTIL_OK);
    ck_assert_str_eq(text, "warn");
    /* A name without a row, or a row of another type, is refused. */
    ck_assert_int_eq(util_env_get_bool("RMB_NO_SUCH_VARIABLE", &flag), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_get_bool("RMB_LOG_LEVEL", &flag), UTIL_ERR_INVALID);
}
END_TEST

/* Yields until the wait naps; the number of relax steps it took, or -1. */
static int wait_until_nap(util_wait_t *w, int serve)
{
    for (int i = 0; i < 100000; i++) {
        if (serve) {
            util_wait_note_served();
        }
        util_wait_relax(w);
        if (w->nap_ns != 0) {
            return i;
        }
    }
    return -1;
}

START_TEST(test_wait_policy)
{
    util_wait_t w = UTIL_WAIT_INIT;
    uint64_t first;

    unsetenv("RMB_WAIT_SPIN");
    unsetenv("RMB_WAIT_YIELD_USEC");
    unsetenv("RMB_WAIT_SLEEP_USEC");
    unsetenv("RMB_HOST_PROCS");
    unsetenv("RMB_HOST_CPUS");
    /* One process: spins long, never naps. */
    util_wait_setup(1, 1);
    ck_assert_int_eq(util_wait_policy.oversubscribed, 0);
    ck_assert_uint_eq(util_wait_policy.spin, 50000);
    ck_assert_uint_eq(util_wait_policy.yield_ns, 0);
    /* More processes than any machine's cores: yields at once, naps after 1 ms. */
    util_wait_setup(1 << 20, 1);
    ck_assert_int_eq(util_wait_policy.oversubscribed, 1);
    ck_assert_uint_eq(util_wait_policy.spin, 0);
    ck_assert_uint_eq(util_wait_policy.yield_ns, 1000000);
    ck_assert_uint_eq(util_wait_policy.sleep_ns, 50000);

    /* A wait that yields past RMB_WAIT_YIELD_USEC naps, in naps that grow
     * to 1 ms; one whose btl serves peers meanwhile does not nap. */
    setenv("RMB_WAIT_YIELD_USEC", "5", 1);
    setenv("RMB_WAIT_SLEEP_USEC", "10", 1);
    util_wait_setup(1 << 20, 1);
    ck_assert_uint_eq(util_wait_policy.yield_ns, 5000);
    ck_assert_int_eq(wait_until_nap(&w, 1), -1);
    ck_assert_int_ge(wait_until_nap(&w, 0), 0);
    first = w.nap_ns;
    ck_assert_uint_eq(first, 10000 + 10000 / 8); /* one nap taken, the next longer */
    for (int i = 0; i < 100; i++) {
        util_wait_relax(&w);
    }
    ck_assert_uint_eq(w.nap_ns, 1000000);
    /* Traffic served while it naps: it wakes to yielding (and serving). */
    util_wait_note_served();
    util_wait_relax(&w);
    ck_assert_uint_eq(w.nap_ns, 0);
    /* Traffic served while it yields: it polls again at once (more may be
     * queued ahead of what it waits for), then yields again. */
    uint32_t yields = w.yields;
    util_wait_note_served();
    util_wait_relax(&w);
    ck_assert_uint_eq(w.yields, yields);
    util_wait_relax(&w);
    ck_assert_uint_eq(w.yields, yields + 1);
    /* Every such step counts as a wait that relaxed: a loop of calls that
     * never wait (util_wait_share_core) yields only when none did since
     * its last look, and remembers the count it saw. */
    uint64_t seen = 0, relaxes = util_wait_relaxes;
    util_wait_relax(&w);
    ck_assert_uint_eq(util_wait_relaxes, relaxes + 1);
    util_wait_share_core(&seen);
    ck_assert_uint_eq(seen, relaxes + 1);
    util_wait_share_core(&seen);
    ck_assert_uint_eq(seen, relaxes + 1);

    /* Bad values fall back to the automatic policy. */
    setenv("RMB_WAIT_YIELD_USEC", "-7", 1);
    util_wait_setup(1 << 20, 1);
    ck_assert_uint_eq(util_wait_policy.yield_ns, 1000000);
    setenv("RMB_WAIT_YIELD_USEC", "0", 1);
    util_wait_setup(1 << 20, 1);
    ck_assert_uint_eq(util_wait_policy.yield_ns, 0); /* 0: yield, never nap */
    unsetenv("RMB_WAIT_YIELD_USEC");
    unsetenv("RMB_WAIT_SLEEP_USEC");
    /* A btl that cannot tell when it served peers (rxm, MPI): no naps; its
     * own busy threads make PEs outnumber cores. */
    util_wait_setup(1, 1);
    util_wait_busy_threads(1 << 20);
    ck_assert_int_eq(util_wait_policy.oversubscribed, 1);
    ck_assert_uint_eq(util_wait_policy.yield_ns, 1000000);
    util_wait_serves_unseen();
    ck_assert_int_eq(util_wait_policy.oversubscribed, 1);
    ck_assert_uint_eq(util_wait_policy.yield_ns, 0);
    util_wait_setup(1, 1);
}
END_TEST

/* The Cpus_allowed_list line of /proc/<who>/status, or "" */
static void cpus_allowed_line(const char *who, char *line, size_t size)
{
    char path[64];
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%s/status", who);
    line[0] = '\0';
    if ((f = fopen(path, "r")) == NULL) {
        return;
    }
    while (fgets(line, (int)size, f) != NULL && strncmp(line, "Cpus_allowed_list:", 18) != 0) {
    }
    if (strncmp(line, "Cpus_allowed_list:", 18) != 0) {
        line[0] = '\0';
    }
    fclose(f);
}

/* The cores PEs share: the launcher's count first (oshrun's RMB_HOST_CPUS,
 * a Slurm step's SLURM_CPUS_ON_NODE); a process bound to fewer CPUs than
 * the machine's first process counts one such set per process. */
START_TEST(test_wait_cores)
{
    cpu_set_t all, one;
    char init_cpus[4096], my_cpus[4096];
    int first = -1;

    unsetenv("RMB_WAIT_SPIN");
    unsetenv("RMB_WAIT_YIELD_USEC");
    unsetenv("RMB_HOST_PROCS");
    unsetenv("SLURM_STEP_ID");
    setenv("RMB_HOST_CPUS", "4", 1);
    util_wait_setup(4, 1);
    ck_assert_int_eq(util_wait_policy.oversubscribed, 0);
    ck_assert_uint_eq(util_wait_policy.spin, 50000);
    util_wait_setup(5, 1);
    ck_assert_int_eq(util_wait_policy.oversubscribed, 1);
    setenv("RMB_HOST_CPUS", "1", 1);
    util_wait_setup(2, 1);
    ck_assert_int_eq(util_wait_policy.oversubscribed, 1);
    unsetenv("RMB_HOST_CPUS");
    setenv("SLURM_CPUS_ON_NODE", "3", 1);
    setenv("SLURM_STEP_ID", "0", 1);
    util_wait_setup(3, 1);
    ck_assert_int_eq(util_wait_policy.oversubscribed, 0);
    util_wait_setup(4, 1);
    ck_assert_int_eq(util_wait_policy.oversubscribed, 1);
    unsetenv("SLURM_STEP_ID"); /* in the allocation, not a step: not the launcher's count */
    unsetenv("SLURM_CPUS_ON_NODE");

    /* bound to one CPU where the machine has more: two such PEs have two */
    ck_assert_int_eq(sched_getaffinity(0, sizeof(all), &all), 0);
    for (int cpu = 0; cpu < CPU_SETSIZE && first < 0; cpu++) {
        if (CPU_ISSET(cpu, &all)) {
            first = cpu;
        }
    }
    cpus_allowed_line("1", init_cpus, sizeof(init_cpus));
    cpus_allowed_line("self", my_cpus, sizeof(my_cpus));
    if (CPU_COUNT(&all) >= 2 && init_cpus[0] != '\0' && strcmp(init_cpus, my_cpus) == 0) {
        CPU_ZERO(&one);
        CPU_SET(first, &one);
        ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
        util_wait_setup(2, 1);
        ck_assert_int_eq(util_wait_policy.oversubscribed, 0);
        util_wait_setup(CPU_COUNT(&all) + 1, 1);
        ck_assert_int_eq(util_wait_policy.oversubscribed, 1);
        ck_assert_int_eq(sched_setaffinity(0, sizeof(all), &all), 0);
    } else {
        printf("test_wait_cores: one CPU, or not those of the machine's first process: the bound "
               "case not checked\n");
    }
    util_wait_setup(1, 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("core");
    SRunner *r = srunner_create(s);
    int failed;

    tcase_add_test(tc, test_status_strings);
    tcase_add_test(tc, test_parse_bool);
    tcase_add_test(tc, test_parse_size);
    tcase_add_test(tc, test_parse_int);
    tcase_add_test(tc, test_env_getters);
    tcase_add_test(tc, test_wait_policy);
    tcase_add_test(tc, test_wait_cores);
    suite_add_tcase(s, tc);
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
