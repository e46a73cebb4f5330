/*
 * Helpers for Check tests that launch multi-process jobs: run a command with
 * a wall-clock limit (its whole process group is killed at the limit), build
 * oshrun command lines, and check that a job left nothing behind.
 * Paths come from the environment set by `make check`: OSHRUN (the launcher),
 * TESTS_BUILDDIR (where test programs are), OMPI_MPIRUN (Open MPI's mpirun, or empty),
 * TEST_TIME_SCALE (slow builds: sanitizers, valgrind; see docs/hardening.md).
 */
#ifndef TESTS_MP_RUN_H
#define TESTS_MP_RUN_H

#include <sys/types.h>

#define MP_RUN_TIMEOUT (-1) /* test_run's result when the limit killed the command */

/* TEST_TIME_SCALE (>= 1, default 1): how much slower than a plain build
 * this one runs. mp_run/mp_wait multiply their limits by it; tests multiply
 * their own time bounds by it and divide heavy stress counts by it. */
double mp_time_scale(void);
double mp_scaled_time(double seconds); /* seconds * scale */
long mp_scaled_count(long count);      /* count / scale, at least 1 */

/* Runs argv (NULL-terminated) in its own process group; returns its exit
 * status, 128+signal, or MP_RUN_TIMEOUT. limit_s is scaled by mp_time_scale().
 * *elapsed_p (may be NULL) gets seconds. */
int mp_run(char *const argv[], double limit_s, double *elapsed_p);

/* Starts argv in its own process group with stdout on a pipe; returns the
 * pid and sets *stdout_fd_p. mp_wait() collects it like mp_run(). */
pid_t mp_start(char *const argv[], int *stdout_fd_p);
int mp_wait(pid_t pid, double limit_s, double *elapsed_p);

/* "oshrun -n np [--nodes k] <TESTS_BUILDDIR>/prog args..." into a static
 * argv (valid until the next call); nodes <= 1 omits --nodes. */
char **mp_oshrun_argv(int np, int nodes, const char *prog, const char *const args[]);

/* Path of a test program in TESTS_BUILDDIR (static buffer). */
const char *mp_test_path(const char *prog);

/* Live processes running the test program prog (path relative to
 * TESTS_BUILDDIR, as for mp_test_path) that this test started (directly or
 * not) with mp_run/mp_start; zombies do not count. */
int mp_count_alive(const char *prog);

/* Names in /dev/shm starting with "rmb" that were not in before (a
 * newline-separated snapshot from mp_shm_snapshot); 0 if none. */
char *mp_shm_snapshot(void);
int mp_shm_new_entries(const char *before);

/* The same for any directory and names keep() accepts (NULL: all): a
 * snapshot to free, and the count of new names, each named on stderr. */
char *mp_dir_snapshot(const char *path, int (*keep)(const char *name));
int mp_dir_new_entries(const char *path, const char *before, int (*keep)(const char *name));

/* Marks this process (MP_RUN_OWNER=<pid> in its environment) so that what
 * it starts, and their descendants, can be counted; mp_run/mp_start do it. */
void mp_mark_owner(void);

/* Live processes other than this one that carry this test's mark (zombies
 * do not count), each named on stderr when report is set. */
int mp_count_owned(int report);

/* Lines of text (a job's captured output) that contain what. */
int mp_count_lines(const char *text, const char *what);

/* Runs a Check suite (normal output); returns the process exit status. */
typedef struct Suite Suite;
int mp_run_suite(Suite *suite);

#endif
