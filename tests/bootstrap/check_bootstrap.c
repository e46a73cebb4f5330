/*
 * bootstrap and oshrun tests. Singleton cases run in-process; the others
 * launch tests/bootstrap/mp_bootstrap as N PEs under oshrun (and Open MPI's
 * mpirun when installed) and check exit codes, timing and that nothing is
 * left behind.
 */
#include "bootstrap/bootstrap.h"
#include "tests/common/mp_run.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "mp_bootstrap"

/* ---- singleton (no launcher) ------------------------------------------------ */

static void singleton_env(void)
{
    unsetenv("PMIX_NAMESPACE");
    unsetenv("PMIX_RANK");
    unsetenv("RMB_BOOTSTRAP");
}

START_TEST(test_singleton_identity)
{
    singleton_env();
    ck_assert_int_eq(bootstrap_init(), UTIL_OK);
    ck_assert_str_eq(bootstrap_flavour(), "singleton");
    ck_assert_int_eq(bootstrap_rank(), 0);
    ck_assert_int_eq(bootstrap_size(), 1);
    ck_assert_int_eq(bootstrap_local_rank(), 0);
    ck_assert_int_eq(bootstrap_local_size(), 1);
    ck_assert_int_eq(bootstrap_node_id(), 0);
    ck_assert_int_eq(bootstrap_num_nodes(), 1);
    ck_assert_int_eq(bootstrap_local_ranks()[0], 0);
    ck_assert_int_eq(bootstrap_node_of(0), 0);
    ck_assert_int_eq(bootstrap_node_of(1), -1);
    /* init is reference counted */
    ck_assert_int_eq(bootstrap_init(), UTIL_OK);
    ck_assert_int_eq(bootstrap_finalize(), UTIL_OK);
    ck_assert_int_eq(bootstrap_initialized(), 1);
    ck_assert_int_eq(bootstrap_finalize(), UTIL_OK);
    ck_assert_int_eq(bootstrap_initialized(), 0);
    ck_assert_int_eq(bootstrap_finalize(), UTIL_ERR_STATE);
}
END_TEST

START_TEST(test_singleton_kv)
{
    long value = 1234, got = 0;
    int in[2] = {5, 6}, out[2] = {0, 0};
    size_t size = 0;
    char small;

    singleton_env();
    ck_assert_int_eq(bootstrap_put("before-init", &value, sizeof(value)), UTIL_ERR_STATE);
    ck_assert_int_eq(bootstrap_init(), UTIL_OK);
    ck_assert_int_eq(bootstrap_put("v", &value, sizeof(value)), UTIL_OK);
    ck_assert_int_eq(bootstrap_commit(), UTIL_OK);
    ck_assert_int_eq(bootstrap_fence(), UTIL_OK);
    ck_assert_int_eq(bootstrap_get(0, "v", &got, sizeof(got), &size), UTIL_OK);
    ck_assert_int_eq(got, 1234);
    ck_assert_uint_eq(size, sizeof(got));
    value = 99; /* a later put replaces */
    ck_assert_int_eq(bootstrap_put("v", &value, sizeof(value)), UTIL_OK);
    ck_assert_int_eq(bootstrap_get(0, "v", &got, sizeof(got), &size), UTIL_OK);
    ck_assert_int_eq(got, 99);
    ck_assert_int_eq(bootstrap_get(0, "v", &small, 1, &size), UTIL_ERR_TRUNCATED);
    ck_assert_int_eq(bootstrap_get(0, "missing", &got, sizeof(got), &size), UTIL_ERR_NOT_FOUND);
    ck_assert_int_eq(bootstrap_get(1, "v", &got, sizeof(got), &size), UTIL_ERR_INVALID);
    ck_assert_int_eq(bootstrap_get(-1, "v", &got, sizeof(got), &size), UTIL_ERR_INVALID);
    ck_assert_int_eq(bootstrap_put(NULL, &value, 1), UTIL_ERR_INVALID);
    ck_assert_int_eq(bootstrap_put("null-value", NULL, 4), UTIL_ERR_INVALID);
    ck_assert_int_eq(bootstrap_barrier(), UTIL_OK);
    ck_assert_int_eq(bootstrap_allgather(in, out, sizeof(in)), UTIL_OK);
    ck_assert_int_eq(out[0], 5);
    ck_assert_int_eq(out[1], 6);
    ck_assert_int_eq(bootstrap_finalize(), UTIL_OK);
}
END_TEST

START_TEST(test_bad_flavour)
{
    singleton_env();
    setenv("RMB_BOOTSTRAP", "carrier-pigeon", 1);
    ck_assert_int_eq(bootstrap_init(), UTIL_ERR_INVALID);
    ck_assert_int_eq(bootstrap_initialized(), 0);
    setenv("RMB_BOOTSTRAP", "pmix", 1); /* forced, but no server around */
    ck_assert_int_eq(bootstrap_init(), UTIL_ERR_RUNTIME);
    unsetenv("RMB_BOOTSTRAP");
}
END_TEST

START_TEST(test_singleton_program)
{
    char *argv[] = {(char *)mp_test_path(PROG), "1", NULL};
    ck_assert_int_eq(mp_run(argv, 30, NULL), 0);
}
END_TEST

/* ---- under oshrun ----------------------------------------------------------------- */

static void run_ok(int np, int nodes)
{
    char np_text[16];
    const char *args[] = {np_text, NULL};
    char *before = mp_shm_snapshot();

    snprintf(np_text, sizeof(np_text), "%d", np);
    ck_assert_int_eq(mp_run(mp_oshrun_argv(np, nodes, PROG, args), 60, NULL), 0);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
}

START_TEST(test_oshrun_np)
{
    run_ok(_i, 1);
}
END_TEST

START_TEST(test_oshrun_emulated_nodes)
{
    run_ok(4, 2);
    run_ok(5, 3);
}
END_TEST

/* A hang would last until mp_run's 30 s limit; the bound has room for a
 * sanitized build's start and exit on a loaded 2-core runner. */
#define FAIL_END_S 6.0

/* A failing PE must end the job quickly, with its status, and no survivors. */
static void run_failure(int np, const char *mode, int expected_status)
{
    char np_text[16];
    const char *args[] = {np_text, mode, NULL};
    double elapsed;
    char *before = mp_shm_snapshot();

    snprintf(np_text, sizeof(np_text), "%d", np);
    ck_assert_int_eq(mp_run(mp_oshrun_argv(np, 1, PROG, args), 30, &elapsed), expected_status);
    ck_assert_msg(elapsed < mp_scaled_time(FAIL_END_S), "job took %.2f s to end after a failure",
                  elapsed);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
}

START_TEST(test_abort_status)
{
    run_failure(4, "abort", 7);
}
END_TEST

START_TEST(test_pe_killed_by_signal)
{
    run_failure(4, "kill", 128 + SIGKILL);
}
END_TEST

START_TEST(test_pe_exit_status)
{
    run_failure(3, "exit3", 3);
}
END_TEST

/* Reads "PE <r> pid <pid> waiting" lines until PE rank's pid is known. */
static pid_t read_pe_pid(int fd, int rank, int np)
{
    char buf[4096] = "";
    size_t used = 0;
    int seen = 0;
    pid_t found = -1;

    while (seen < np && used < sizeof(buf) - 1) {
        ssize_t n = read(fd, buf + used, sizeof(buf) - 1 - used);
        if (n <= 0) {
            break;
        }
        used += (size_t)n;
        buf[used] = '\0';
        seen = 0;
        for (char *p = buf; (p = strstr(p, " waiting")) != NULL; p++) {
            seen++;
        }
    }
    for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        int r;
        long pid;
        if (sscanf(line, "PE %d pid %ld", &r, &pid) == 2 && r == rank) {
            found = (pid_t)pid;
        }
    }
    return found;
}

START_TEST(test_external_kill9)
{
    const char *args[] = {"8", "wait", NULL};
    int out_fd;
    double elapsed;
    pid_t job = mp_start(mp_oshrun_argv(8, 1, PROG, args), &out_fd);
    pid_t victim;

    ck_assert_int_gt(job, 0);
    victim = read_pe_pid(out_fd, 5, 8);
    ck_assert_int_gt(victim, 0);
    ck_assert_int_eq(mp_count_alive(PROG), 8); /* the survivor check sees live PEs */
    ck_assert_int_eq(kill(victim, SIGKILL), 0);
    ck_assert_int_eq(mp_wait(job, 30, &elapsed), 128 + SIGKILL);
    ck_assert_msg(elapsed < mp_scaled_time(FAIL_END_S),
                  "oshrun took %.2f s to end after kill -9 of a PE", elapsed);
    close(out_fd);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
}
END_TEST

START_TEST(test_sigint_to_oshrun)
{
    const char *args[] = {"4", "wait", NULL};
    int out_fd;
    double elapsed;
    pid_t job = mp_start(mp_oshrun_argv(4, 1, PROG, args), &out_fd);

    ck_assert_int_gt(read_pe_pid(out_fd, 0, 4), 0);
    ck_assert_int_eq(kill(job, SIGINT), 0);
    ck_assert_int_eq(mp_wait(job, 30, &elapsed), 128 + SIGINT);
    ck_assert_msg(elapsed < mp_scaled_time(FAIL_END_S), "oshrun took %.2f s to end after SIGINT",
                  elapsed);
    close(out_fd);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
}
END_TEST

START_TEST(test_sigkill_to_oshrun)
{
    const char *args[] = {"4", "wait", NULL};
    int out_fd, left = -1;
    pid_t job = mp_start(mp_oshrun_argv(4, 1, PROG, args), &out_fd);

    ck_assert_int_gt(read_pe_pid(out_fd, 0, 4), 0);
    ck_assert_int_eq(kill(job, SIGKILL), 0);
    ck_assert_int_eq(mp_wait(job, 30, NULL), 128 + SIGKILL);
    close(out_fd);
    /* PEs die with oshrun (parent-death signal); give the kernel a moment. */
    for (int i = 0; i < 200 && left != 0; i++) {
        left = mp_count_alive(PROG);
        usleep(10000);
    }
    ck_assert_int_eq(left, 0);
}
END_TEST

START_TEST(test_oshrun_timeout)
{
    char *argv[] = {getenv("OSHRUN"),           "--timeout", "1",    "-n", "2",
                    (char *)mp_test_path(PROG), "2",         "wait", NULL};
    double elapsed;

    ck_assert_int_eq(mp_run(argv, 30, &elapsed), 124);
    ck_assert_msg(elapsed < mp_scaled_time(4.0), "--timeout 1 took %.2f s", elapsed);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
}
END_TEST

START_TEST(test_oshrun_bad_usage)
{
    char *oshrun = getenv("OSHRUN");
    char *no_program[] = {oshrun, "-n", "2", NULL};
    char *zero[] = {oshrun, "-n", "0", "true", NULL};
    char *garbage[] = {oshrun, "-n", "two", "true", NULL};
    char *no_n[] = {oshrun, "true", NULL};
    char *missing[] = {oshrun, "-n", "2", "/no/such/program", NULL};
    char plain_file[] = "/tmp/rmb-not-executable.XXXXXX";
    int plain_fd = mkstemp(plain_file); /* mode 0600: not executable */
    char *not_exec[] = {oshrun, "-n", "2", plain_file, NULL};
    char *not_in_path[] = {oshrun, "-n", "2", "no-such-program-rmb", NULL};
    char *bad_option[] = {oshrun, "--frobnicate", "-n", "2", "true", NULL};
    char *too_many_nodes[] = {oshrun, "-n", "2", "--nodes", "3", "true", NULL};
    char *help[] = {oshrun, "--help", NULL};
    char *with_dashes[] = {oshrun, "-n", "3", "--", "true", NULL};
    char *failing_tool[] = {oshrun, "-n", "2", "false", NULL};

    ck_assert_int_eq(mp_run(no_program, 10, NULL), 2);
    ck_assert_int_eq(mp_run(zero, 10, NULL), 2);
    ck_assert_int_eq(mp_run(garbage, 10, NULL), 2);
    ck_assert_int_eq(mp_run(no_n, 10, NULL), 2);
    ck_assert_int_eq(mp_run(missing, 10, NULL), 2);
    ck_assert_int_ge(plain_fd, 0);
    ck_assert_int_eq(mp_run(not_exec, 10, NULL), 2);
    close(plain_fd);
    unlink(plain_file);
    ck_assert_int_eq(mp_run(not_in_path, 10, NULL), 2);
    ck_assert_int_eq(mp_run(bad_option, 10, NULL), 2);
    ck_assert_int_eq(mp_run(too_many_nodes, 10, NULL), 2);
    ck_assert_int_eq(mp_run(help, 10, NULL), 0);
    /* Programs that are not PMIx clients still run; status is passed on. */
    ck_assert_int_eq(mp_run(with_dashes, 10, NULL), 0);
    ck_assert_int_eq(mp_run(failing_tool, 10, NULL), 1);
}
END_TEST

/* ---- under Open MPI's mpirun ---------------------------------------------------- */

START_TEST(test_under_ompi_mpirun)
{
    const char *mpirun = getenv("OMPI_MPIRUN");
    char prog[4096];

    if (mpirun == NULL || mpirun[0] == '\0') {
        printf("SKIP test_under_ompi_mpirun: Open MPI's mpirun not installed "
               "(apt-get install openmpi-bin)\n");
        return;
    }
    snprintf(prog, sizeof(prog), "%s", mp_test_path(PROG));
    {
        char *argv[] = {(char *)mpirun,
                        "--allow-run-as-root",
                        "--oversubscribe",
                        "--mca",
                        "btl",
                        "self",
                        "-np",
                        "2",
                        prog,
                        "2",
                        NULL};
        ck_assert_int_eq(mp_run(argv, 60, NULL), 0);
    }
    ck_assert_int_eq(mp_count_alive(PROG), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bootstrap");
    TCase *singleton = tcase_create("singleton");
    TCase *oshrun = tcase_create("oshrun");
    TCase *failures = tcase_create("failures");
    TCase *mpirun = tcase_create("mpirun");

    tcase_add_test(singleton, test_singleton_identity);
    tcase_add_test(singleton, test_singleton_kv);
    tcase_add_test(singleton, test_bad_flavour);
    tcase_add_test(singleton, test_singleton_program);
    suite_add_tcase(s, singleton);

    tcase_set_timeout(oshrun, 120);
    tcase_add_loop_test(oshrun, test_oshrun_np, 1, 9); /* 1..8 PEs on 2 cores */
    tcase_add_test(oshrun, test_oshrun_emulated_nodes);
    tcase_add_test(oshrun, test_oshrun_bad_usage);
    suite_add_tcase(s, oshrun);

    tcase_set_timeout(failures, 60);
    tcase_add_test(failures, test_abort_status);
    tcase_add_test(failures, test_pe_killed_by_signal);
    tcase_add_test(failures, test_pe_exit_status);
    tcase_add_test(failures, test_external_kill9);
    tcase_add_test(failures, test_sigint_to_oshrun);
    tcase_add_test(failures, test_sigkill_to_oshrun);
    tcase_add_test(failures, test_oshrun_timeout);
    suite_add_tcase(s, failures);

    tcase_set_timeout(mpirun, 90);
    tcase_add_test(mpirun, test_under_ompi_mpirun);
    suite_add_tcase(s, mpirun);

    return mp_run_suite(s);
}
