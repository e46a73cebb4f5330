#define _GNU_SOURCE
#include "tests/common/mp_run.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double mp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double mp_time_scale(void)
{
    const char *text = getenv("TEST_TIME_SCALE");
    char *end;
    double scale;

    if (text == NULL || *text == '\0') {
        return 1.0;
    }
    scale = strtod(text, &end);
    if (*end != '\0' || !(scale >= 1.0 && scale <= 1000.0)) {
        fprintf(stderr, "mp_run: TEST_TIME_SCALE=%s is not a number in [1, 1000]\n", text);
        exit(2); /* a typo must not silently change what the tests check */
    }
    return scale;
}

double mp_scaled_time(double seconds)
{
    return seconds * mp_time_scale();
}

long mp_scaled_count(long count)
{
    long scaled = (long)((double)count / mp_time_scale());
    return scaled > 0 ? scaled : 1;
}

/* Every process a test starts inherits MP_RUN_OWNER=<the test's pid>, so
 * mp_count_alive counts only this test's processes, not those of another
 * test that runs the same program at the same time (make -j check). */
#define MP_OWNER_VAR "MP_RUN_OWNER"

void mp_mark_owner(void)
{
    char pid_text[24];

    snprintf(pid_text, sizeof(pid_text), "%ld", (long)getpid());
    setenv(MP_OWNER_VAR, pid_text, 1);
}

/* 1 when process pid carries our MP_RUN_OWNER mark. */
static int mp_owned(const char *pid)
{
    char path[300], want[64], env[65536];
    size_t len;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%s/environ", pid);
    snprintf(want, sizeof(want), MP_OWNER_VAR "=%ld", (long)getpid());
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    len = fread(env, 1, sizeof(env) - 1, f);
    fclose(f);
    env[len] = '\0';
    for (size_t pos = 0; pos < len; pos += strlen(env + pos) + 1) {
        if (strcmp(env + pos, want) == 0) {
            return 1;
        }
    }
    return 0;
}

pid_t mp_start(char *const argv[], int *stdout_fd_p)
{
    int fds[2] = {-1, -1};
    pid_t pid;

    mp_mark_owner();

    if (stdout_fd_p != NULL && pipe(fds) != 0) {
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        if (stdout_fd_p != NULL) {
            dup2(fds[1], STDOUT_FILENO);
            close(fds[0]);
            close(fds[1]);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "mp_run: cannot execute %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (pid > 0) {
        setpgid(pid, pid); /* both sides set it: no race with the exec */
    }
    if (stdout_fd_p != NULL) {
        close(fds[1]);
        *stdout_fd_p = fds[0];
    }
    return pid;
}

/* The process group of /proc/<pid> (field 5 of its stat), or -1. */
static long mp_proc_pgrp(const char *pid, char *comm, size_t comm_size)
{
    char path[300], stat[1024];
    const char *close_paren;
    long pgrp = -1;
    size_t len;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%s/stat", pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    len = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[len] = '\0';
    /* "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses */
    close_paren = strrchr(stat, ')');
    if (close_paren != NULL && sscanf(close_paren + 1, " %*c %*d %ld", &pgrp) == 1) {
        const char *open_paren = strchr(stat, '(');
        size_t n = (size_t)(close_paren - open_paren - 1);

        snprintf(comm, comm_size, "%.*s", (int)n, open_paren + 1);
    }
    return pgrp;
}

/* A job that outlives its limit is a hang to explain: before it is killed,
 * print every thread's stack of each process in its group (gdb, when the
 * machine has it; MP_RUN_STACKS=0 turns this off). */
static void mp_dump_stacks(pid_t pgid)
{
    const char *want = getenv("MP_RUN_STACKS");
    struct dirent *entry;
    DIR *proc;

    if ((want != NULL && strcmp(want, "0") == 0) || system("command -v gdb >/dev/null 2>&1") != 0) {
        fprintf(stderr, "mp_run: no stacks (gdb not installed, or MP_RUN_STACKS=0)\n");
        return;
    }
    proc = opendir("/proc");
    while (proc != NULL && (entry = readdir(proc)) != NULL) {
        char comm[64] = "", cmd[512];

        if (entry->d_name[0] < '1' || entry->d_name[0] > '9' ||
            mp_proc_pgrp(entry->d_name, comm, sizeof(comm)) != (long)pgid) {
            continue;
        }
        fprintf(stderr, "mp_run: stacks of process %s (%s):\n", entry->d_name, comm);
        snprintf(cmd, sizeof(cmd),
                 "timeout 30 gdb -batch -nx -p %s -ex 'thread apply all bt 30' 2>&1 |"
                 " grep -E '^(Thread|#)' >&2",
                 entry->d_name);
        if (system(cmd) != 0) {
            fprintf(stderr, "mp_run: gdb could not read process %s\n", entry->d_name);
        }
    }
    if (proc != NULL) {
        closedir(proc);
    }
}

int mp_wait(pid_t pid, double limit_s, double *elapsed_p)
{
    double start = mp_now();
    int wstatus;

    limit_s = mp_scaled_time(limit_s);

    for (;;) {
        pid_t done = waitpid(pid, &wstatus, WNOHANG);

        if (done == pid) {
            break;
        }
        if (mp_now() - start > limit_s) {
            fprintf(stderr, "mp_run: still running after %.0f s: killing it\n", limit_s);
            mp_dump_stacks(pid);
            kill(-pid, SIGKILL);
            waitpid(pid, &wstatus, 0);
            if (elapsed_p) *elapsed_p = mp_now() - start;
            return MP_RUN_TIMEOUT;
        }
        usleep(5000);
    }
    if (elapsed_p) *elapsed_p = mp_now() - start;
    if (WIFEXITED(wstatus)) {
        return WEXITSTATUS(wstatus);
    }
    return WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : 255;
}

int mp_run(char *const argv[], double limit_s, double *elapsed_p)
{
    pid_t pid = mp_start(argv, NULL);
    return pid < 0 ? 255 : mp_wait(pid, limit_s, elapsed_p);
}

const char *mp_test_path(const char *prog)
{
    static char path[4096];
    const char *dir = getenv("TESTS_BUILDDIR");

    snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".", prog);
    return path;
}

char **mp_oshrun_argv(int np, int nodes, const char *prog, const char *const args[])
{
    static char *argv[64];
    static char np_text[16], nodes_text[16], prog_path[4096];
    const char *oshrun = getenv("OSHRUN");
    int n = 0;

    snprintf(np_text, sizeof(np_text), "%d", np);
    snprintf(nodes_text, sizeof(nodes_text), "%d", nodes);
    snprintf(prog_path, sizeof(prog_path), "%s", mp_test_path(prog));
    argv[n++] = (char *)(oshrun ? oshrun : "oshrun");
    argv[n++] = "-n";
    argv[n++] = np_text;
    if (nodes > 1) {
        argv[n++] = "--nodes";
        argv[n++] = nodes_text;
    }
    argv[n++] = prog_path;
    for (int i = 0; args != NULL && args[i] != NULL && n < 63; i++) {
        argv[n++] = (char *)args[i];
    }
    argv[n] = NULL;
    return argv;
}

int mp_count_alive(const char *prog)
{
    char want[4096], exe[4096], link[300];
    DIR *proc;
    struct dirent *entry;
    int count = 0;

    /* Compare executables, not names: the same program run from another
     * build tree (or a zombie, which has no exe) does not count. */
    if (realpath(mp_test_path(prog), want) == NULL) {
        return 0;
    }
    proc = opendir("/proc");
    while (proc != NULL && (entry = readdir(proc)) != NULL) {
        ssize_t n;

        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') {
            continue;
        }
        snprintf(link, sizeof(link), "/proc/%s/exe", entry->d_name);
        n = readlink(link, exe, sizeof(exe) - 1);
        if (n > 0) {
            exe[n] = '\0';
            count += (strcmp(exe, want) == 0 && mp_owned(entry->d_name));
        }
    }
    if (proc != NULL) {
        closedir(proc);
    }
    return count;
}

char *mp_dir_snapshot(const char *path, int (*keep)(const char *name))
{
    DIR *dir = opendir(path);
    struct dirent *entry;
    size_t len = 1;
    char *list = calloc(1, 1);

    while (dir != NULL && list != NULL && (entry = readdir(dir)) != NULL) {
        size_t add = strlen(entry->d_name) + 1;
        char *grown;

        if ((keep != NULL && !keep(entry->d_name)) || (grown = realloc(list, len + add)) == NULL) {
            continue;
        }
        list = grown;
        strcat(list, entry->d_name);
        strcat(list, "\n");
        len += add;
    }
    if (dir != NULL) {
        closedir(dir);
    }
    return list;
}

int mp_dir_new_entries(const char *path, const char *before, int (*keep)(const char *name))
{
    DIR *dir = opendir(path);
    struct dirent *entry;
    int fresh = 0;

    while (dir != NULL && (entry = readdir(dir)) != NULL) {
        char needle[300];

        if (keep != NULL && !keep(entry->d_name)) {
            continue;
        }
        snprintf(needle, sizeof(needle), "%s\n", entry->d_name);
        if (before == NULL || strstr(before, needle) == NULL) {
            fprintf(stderr, "mp_run: %s/%s was left behind\n", path, entry->d_name);
            fresh++;
        }
    }
    if (dir != NULL) {
        closedir(dir);
    }
    return fresh;
}

char *mp_shm_snapshot(void)
{
    return mp_dir_snapshot("/dev/shm", NULL);
}

static int mp_is_rmb(const char *name)
{
    return strncmp(name, "rmb", 3) == 0;
}

int mp_shm_new_entries(const char *before)
{
    return mp_dir_new_entries("/dev/shm", before, mp_is_rmb);
}

int mp_count_owned(int report)
{
    DIR *proc = opendir("/proc");
    struct dirent *entry;
    int count = 0;

    while (proc != NULL && (entry = readdir(proc)) != NULL) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9' || atol(entry->d_name) == getpid() ||
            !mp_owned(entry->d_name)) {
            continue;
        }
        if (report) {
            fprintf(stderr, "mp_run: process %s was left running\n", entry->d_name);
        }
        count++;
    }
    if (proc != NULL) {
        closedir(proc);
    }
    return count;
}

int mp_count_lines(const char *text, const char *what)
{
    int count = 0;

    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, what);

        count += hit != NULL && (size_t)(hit - line) < len;
        line = end != NULL ? end + 1 : NULL;
    }
    return count;
}

int mp_run_suite(Suite *suite)
{
    SRunner *runner = srunner_create(suite);
    int failed;

    srunner_run_all(runner, CK_ENV); /* CK_VERBOSITY=verbose: a line per test */
    failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
