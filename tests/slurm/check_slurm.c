/*
 * Jobs started by Slurm: srun --mpi=pmix/pmi2/none, sbatch, salloc, oshrun
 * inside an allocation, exit statuses, scancel, a killed PE, and a stress
 * of first contacts between nodes. The cluster (munged, slurmctld, two
 * slurmd as two nodes, each node its own network namespace and host name)
 * is started by tests/slurm/slurm_cluster.sh in namespaces of its own, so
 * that it and everything it started end with this test, whatever ends it.
 *
 * Skipped (exit 77, one line) when not root, when Slurm or munge is not
 * installed, or when rmb was built without a network backend.
 * CHECK_SLURM_REPS (default 10) sets the number of runs of each stress
 * configuration; docs/launcher.md has the long run.
 */
#define _GNU_SOURCE
#include "tests/common/mp_run.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef RMB_TEST_SLURM_CLUSTER
#define RMB_TEST_SLURM_CLUSTER "tests/slurm/slurm_cluster.sh"
#endif

#define CLUSTER_START_S 60.0 /* daemons up and both nodes idle */
#define JOB_LIMIT_S     30.0 /* any one command of a case */
#define END_WITHIN_S    2.0  /* a failing PE, scancel, SIGKILL: the step is gone after */
/* Other suites of make check share the cores: a time bound missed once is
 * tried again (the outcome itself is checked on every try). */
#define TIMING_ATTEMPTS 2

static char cluster_dir[4096];    /* tmpfs inside the cluster's mount namespace */
static pid_t cluster_keeper = -1; /* unshare, in our namespaces */
static pid_t cluster_init = -1;   /* its child: pid 1 of the cluster */
static char tests_dir[4096];
static const char *net_backend; /* what RMB_INFO names for off-node peers */

static double now_realtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the cluster ------------------------------------------------------------------- */

/* Reads one line from fd within limit_s; 0 on success. */
static int read_line(int fd, char *line, size_t len, double limit_s)
{
    size_t n = 0;
    double end = now_realtime() + limit_s;

    while (n + 1 < len) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int left_ms = (int)((end - now_realtime()) * 1000);

        if (left_ms <= 0 || poll(&pfd, 1, left_ms) <= 0) {
            break;
        }
        if (read(fd, line + n, 1) != 1) {
            break;
        }
        if (line[n] == '\n') {
            line[n] = '\0';
            return 0;
        }
        n++;
    }
    line[n] = '\0';
    return -1;
}

static void cluster_stop(void)
{
    if (cluster_keeper > 0) {
        kill(cluster_keeper, SIGKILL); /* its child, pid 1 of the cluster, goes with it */
        waitpid(cluster_keeper, NULL, 0);
        cluster_keeper = -1;
    }
    if (cluster_dir[0] != '\0') {
        /* The files were on a tmpfs of the cluster's mount namespace: what
         * is left here is the empty mount point. */
        for (int i = 0; i < 50 && rmdir(cluster_dir) != 0 && errno == EBUSY; i++) {
            usleep(20000);
        }
        cluster_dir[0] = '\0';
    }
}

/* Starts the cluster; returns 0 (ready), 77 (skip, after one line) or 1. */
static int cluster_start(void)
{
    const char *tmp = getenv("TMPDIR");
    char line[1024], children[64];
    int fds[2];
    FILE *f;

    snprintf(cluster_dir, sizeof(cluster_dir), "%s/rmbslurm.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(cluster_dir) == NULL || pipe(fds) != 0) {
        fprintf(stderr, "check_slurm: cannot create %s: %s\n", cluster_dir, strerror(errno));
        cluster_dir[0] = '\0';
        return 1;
    }
    cluster_keeper = fork();
    if (cluster_keeper == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* we die (even by SIGKILL): so does the cluster */
        setpgid(0, 0);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execlp("unshare", "unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--mount",
               "--net", "--uts", "sh", RMB_TEST_SLURM_CLUSTER, cluster_dir, (char *)NULL);
        printf("skip: cannot run unshare: %s\n", strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    if (read_line(fds[0], line, sizeof(line), mp_scaled_time(CLUSTER_START_S)) != 0) {
        snprintf(line, sizeof(line), "error: the cluster did not start in %.0f s",
                 mp_scaled_time(CLUSTER_START_S));
    }
    close(fds[0]);
    if (strncmp(line, "skip: ", 6) == 0) {
        printf("check_slurm: skipped: %s\n", line + 6);
        return 77;
    }
    if (strcmp(line, "ready") != 0) {
        fprintf(stderr, "check_slurm: %s\n", line);
        return 1;
    }
    snprintf(line, sizeof(line), "/proc/%ld/task/%ld/children", (long)cluster_keeper,
             (long)cluster_keeper);
    f = fopen(line, "r");
    if (f == NULL || fgets(children, sizeof(children), f) == NULL ||
        (cluster_init = (pid_t)atol(children)) <= 0) {
        fprintf(stderr, "check_slurm: cannot find the cluster's first process\n");
        if (f != NULL) fclose(f);
        return 1;
    }
    fclose(f);
    return 0;
}

/* ---- commands in the cluster ------------------------------------------------------ */

typedef struct {
    int status;      /* exit status, 128+signal, or MP_RUN_TIMEOUT */
    double ended;    /* wall-clock time when it ended */
    double elapsed;  /* seconds it ran */
    char out[65536]; /* stdout and stderr, interleaved */
} cmd_result_t;

/* Starts a shell command on the cluster's control host (its namespaces,
 * working directory TESTS_BUILDDIR, stderr with stdout); returns the pid
 * and the read end of its output. */
static pid_t cmd_start(const char *command, int *out_fd_p)
{
    char target[32], wd[4200], script[16384];
    char *argv[] = {"nsenter", "-t", target, "-a", wd, "sh", "-c", script, NULL};

    snprintf(target, sizeof(target), "%ld", (long)cluster_init);
    snprintf(wd, sizeof(wd), "--wd=%s", tests_dir);
    snprintf(script, sizeof(script), "exec 2>&1; %s", command);
    return mp_start(argv, out_fd_p);
}

/* Collects output until EOF, then the status (bounded by limit_s). */
static void cmd_finish(pid_t pid, int fd, double limit_s, cmd_result_t *res)
{
    size_t n = strlen(res->out);
    double end = now_realtime() + mp_scaled_time(limit_s);

    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        int left_ms = (int)((end - now_realtime()) * 1000);
        ssize_t got;

        if (left_ms <= 0 || poll(&pfd, 1, left_ms) <= 0) {
            break;
        }
        got = read(fd, res->out + n, sizeof(res->out) - 1 - n);
        if (got <= 0) {
            break;
        }
        n += (size_t)got;
        if (n + 1 >= sizeof(res->out)) {
            n = 0; /* keep the end, where the verdicts are */
        }
    }
    res->out[n] = '\0';
    close(fd);
    res->status = mp_wait(pid, 5.0, NULL); /* the output has ended: so has it, nearly */
    res->ended = now_realtime();
}

static void cmd(const char *command, double limit_s, cmd_result_t *res)
{
    int fd;
    pid_t pid;
    double start = now_realtime();

    res->out[0] = '\0';
    pid = cmd_start(command, &fd);
    ck_assert_msg(pid > 0, "cannot start nsenter");
    cmd_finish(pid, fd, limit_s, res);
    res->elapsed = res->ended - start;
    fprintf(stderr, "--- %s: status %d in %.2f s\n", command, res->status, res->elapsed);
    if (res->status == MP_RUN_TIMEOUT) {
        /* srun was killed, its job lives on and holds the nodes: end it so
         * that the next cases do not wait for them */
        pid = cmd_start("scancel --user=root", NULL);
        if (pid > 0) {
            mp_wait(pid, 10.0, NULL);
        }
    }
}

#define EXPECT_OUT(res, needle)                                                                    \
    ck_assert_msg(strstr((res)->out, needle) != NULL, "output lacks \"%s\":\n%s", needle,          \
                  (res)->out)

/* Every PE of the case's programs has ended (Slurm reaps them at once). */
static void expect_no_pes(const char *prog)
{
    int alive = 0;

    for (int i = 0; i < 100 && (alive = mp_count_alive(prog)) > 0; i++) {
        usleep(20000);
    }
    ck_assert_msg(alive == 0, "%d process(es) of %s still alive", alive, prog);
}

/* ---- cases ------------------------------------------------------------------------- */

#define SRUN_2x2 "srun --mpi=pmix -N 2 -n 4 --ntasks-per-node=2 "

START_TEST(test_srun_pmix)
{
    cmd_result_t res;
    char expect[128];

    cmd(SRUN_2x2 "env RMB_INFO=1 slurm/mp_slurm check", JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "status %d:\n%s", res.status, res.out);
    EXPECT_OUT(&res, "slurm check: PEs 4 nodes 2 ok");
    EXPECT_OUT(&res, "rmb: bootstrap pmix, 4 ranks on 2 node(s)");
    /* off-node peers over the network backend, on the node's own link */
    snprintf(expect, sizeof(expect), "rmb: btl/%s to PE", net_backend);
    if (strcmp(net_backend, "ucx") == 0) {
        EXPECT_OUT(&res, "(off-node): tcp/rmb0");
    }
    /* each node its own network namespace; bulk data crosses rmb0 */
    cmd(SRUN_2x2 "multinode/mp_netns", JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "mp_netns: status %d:\n%s", res.status, res.out);
    /* one node, and PEs spread one per node */
    cmd("srun --mpi=pmix -N 1 -n 3 slurm/mp_slurm check", JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "status %d:\n%s", res.status, res.out);
    EXPECT_OUT(&res, "slurm check: PEs 3 nodes 1 ok");
    cmd("srun --mpi=pmix -N 2 -n 2 slurm/mp_slurm check", JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "status %d:\n%s", res.status, res.out);
    EXPECT_OUT(&res, "slurm check: PEs 2 nodes 2 ok");
    expect_no_pes("slurm/mp_slurm");
}
END_TEST

START_TEST(test_srun_rpipe)
{
    cmd_result_t res;

    cmd(SRUN_2x2 "multinode/mp_rpipe alltoall put tag next 300", JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "alltoall: status %d:\n%s", res.status, res.out);
    cmd(SRUN_2x2 "multinode/mp_rpipe stream get block next 300", JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "stream: status %d:\n%s", res.status, res.out);
    /* writers a sync queue ahead; the readers read after the barrier, which
     * serves inside Slurm's fence */
    cmd(SRUN_2x2 "multinode/mp_rpipe burstlate put tag first 2000", JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "burstlate: status %d:\n%s", res.status, res.out);
    expect_no_pes("multinode/mp_rpipe");
    /* the bootstrap under Slurm's PMIx server: keys, barriers, and
     * allgathers that reuse their keys (each round's values checked) */
    cmd(SRUN_2x2 "mp_bootstrap 4 check", JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "mp_bootstrap: status %d:\n%s", res.status, res.out);
    EXPECT_OUT(&res, "mp_bootstrap: 4 PEs on 2 node(s): all checks passed");
    expect_no_pes("mp_bootstrap");
}
END_TEST

START_TEST(test_sbatch)
{
    cmd_result_t res;

    cmd("printf '#!/bin/sh\\nsrun --mpi=pmix slurm/mp_slurm check\\n' > $CLUSTER_DIR/job.sh && "
        "sbatch --wait -N 2 -n 4 --ntasks-per-node=2 -D $PWD -o $CLUSTER_DIR/job.out "
        "$CLUSTER_DIR/job.sh && cat $CLUSTER_DIR/job.out",
        JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "status %d:\n%s", res.status, res.out);
    EXPECT_OUT(&res, "Submitted batch job");
    EXPECT_OUT(&res, "slurm check: PEs 4 nodes 2 ok");
}
END_TEST

START_TEST(test_salloc)
{
    cmd_result_t res;

    cmd("salloc -N 2 -n 4 --ntasks-per-node=2 srun --mpi=pmix slurm/mp_slurm check", JOB_LIMIT_S,
        &res);
    ck_assert_msg(res.status == 0, "status %d:\n%s", res.status, res.out);
    EXPECT_OUT(&res, "slurm check: PEs 4 nodes 2 ok");
    /* oshrun in the allocation hands the job to srun */
    cmd("salloc -N 2 -n 4 --ntasks-per-node=2 $OSHRUN -n 4 slurm/mp_slurm check", JOB_LIMIT_S,
        &res);
    ck_assert_msg(res.status == 0, "oshrun: status %d:\n%s", res.status, res.out);
    EXPECT_OUT(&res, "slurm check: PEs 4 nodes 2 ok");
    cmd("salloc -N 2 -n 4 --ntasks-per-node=2 $OSHRUN -n 4 slurm/mp_slurm exit 6", JOB_LIMIT_S,
        &res);
    ck_assert_msg(res.status == 6, "oshrun, a PE exits 6: status %d:\n%s", res.status, res.out);
    /* the options of Open MPI's launchers, in srun's words: -x through the
     * environment, --tag-output as --label ("r: "), --map-by node as a
     * cyclic distribution */
    cmd("salloc -N 2 -n 4 --ntasks-per-node=2 $OSHRUN -np 4 -x RMB_TEST_X=42 --tag-output "
        "--map-by node --bind-to none --oversubscribe --allow-run-as-root "
        "sh -c 'echo \"x=$RMB_TEST_X node=$SLURMD_NODENAME\"'",
        JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "oshrun with OSHMEM options: status %d:\n%s", res.status,
                  res.out);
    EXPECT_OUT(&res, "0: x=42 node=node1");
    EXPECT_OUT(&res, "1: x=42 node=node2");
    EXPECT_OUT(&res, "2: x=42 node=node1");
    EXPECT_OUT(&res, "3: x=42 node=node2");
    cmd("salloc -N 2 -n 4 --ntasks-per-node=2 $OSHRUN -np 4 --map-by ppr:2:node --tag-output "
        "slurm/mp_slurm check",
        JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "oshrun --map-by ppr:2:node: status %d:\n%s", res.status,
                  res.out);
    EXPECT_OUT(&res, "0: slurm check: PEs 4 nodes 2 ok");
    cmd("salloc -N 1 -n 2 $OSHRUN -n 2 --netns slurm/mp_slurm check", JOB_LIMIT_S, &res);
    ck_assert_msg(res.status != 0, "oshrun --netns in an allocation: status 0");
    EXPECT_OUT(&res, "oshrun: --netns emulates nodes on this machine, but this is Slurm job");
    cmd("salloc -N 1 -n 2 $OSHRUN --local -n 2 slurm/mp_slurm check", JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "oshrun --local: status %d:\n%s", res.status, res.out);
    EXPECT_OUT(&res, "slurm check: PEs 2 nodes 1 ok");
    expect_no_pes("slurm/mp_slurm");
}
END_TEST

/* A PE ends the job (exit N, SIGKILL, shmem_global_exit) while the others
 * wait in a barrier: srun returns want, within END_WITHIN_S of the PE's
 * leaving (it prints when). */
static void expect_job_end(const char *srun, const char *mode, int want)
{
    cmd_result_t res;
    char command[512];
    const char *left;
    double left_at = 0;

    snprintf(command, sizeof(command), "%s slurm/mp_slurm %s", srun, mode);
    for (int attempt = 1; attempt <= TIMING_ATTEMPTS; attempt++) {
        cmd(command, JOB_LIMIT_S, &res);
        ck_assert_msg(res.status == want, "%s: status %d, expected %d:\n%s", command, res.status,
                      want, res.out);
        left = strstr(res.out, " leaves at ");
        ck_assert_msg(left != NULL && sscanf(left, " leaves at %lf", &left_at) == 1,
                      "%s: the PE did not say when it left:\n%s", command, res.out);
        fprintf(stderr, "--- %s: the step ended %.3f s after the PE left\n", command,
                res.ended - left_at);
        expect_no_pes("slurm/mp_slurm");
        if (res.ended - left_at < mp_scaled_time(END_WITHIN_S)) {
            break;
        }
    }
    ck_assert_msg(res.ended - left_at < mp_scaled_time(END_WITHIN_S),
                  "%s: the step ended %.2f s after the PE left (%d tries)", command,
                  res.ended - left_at, TIMING_ATTEMPTS);
}

START_TEST(test_exit_status)
{
    expect_job_end(SRUN_2x2, "exit 3", 3);
    expect_job_end(SRUN_2x2, "kill", 128 + SIGKILL);
    expect_job_end(SRUN_2x2, "global_exit 5", 5);
    expect_job_end(SRUN_2x2, "exit 0", 1); /* exit without shmem_finalize */
    /* one node: shm waits alone would never notice */
    expect_job_end("srun --mpi=pmix -N 1 -n 2", "exit 3", 3);
    expect_job_end("srun --mpi=pmix -N 1 -n 2", "kill", 128 + SIGKILL);
}
END_TEST

/* Starts `hold` on 2x2, waits for the 4 "ready" lines, then runs how (a
 * command on the control host; %ld gets the pid of PE 3 in the cluster):
 * the step must be gone within END_WITHIN_S. */
static double hold_ended_by(const char *how);

static void expect_hold_ended_by(const char *how)
{
    double took = 0;

    for (int attempt = 1; attempt <= TIMING_ATTEMPTS; attempt++) {
        took = hold_ended_by(how);
        if (took < mp_scaled_time(END_WITHIN_S)) {
            break;
        }
    }
    ck_assert_msg(took < mp_scaled_time(END_WITHIN_S), "%s: the step ended %.2f s later (%d tries)",
                  how, took, TIMING_ATTEMPTS);
}

/* One try: the seconds from the action to srun's end. */
static double hold_ended_by(const char *how)
{
    cmd_result_t res, act;
    char command[512], line[256];
    long pe3 = -1;
    double acted;
    int fd, ready = 0;
    pid_t pid;

    res.out[0] = '\0';
    pid = cmd_start(SRUN_2x2 "slurm/mp_slurm hold", &fd);
    ck_assert(pid > 0);
    while (ready < 4 && read_line(fd, line, sizeof(line), mp_scaled_time(JOB_LIMIT_S)) == 0) {
        int pe;
        long pe_pid;

        if (sscanf(line, "ready PE %d pid %ld", &pe, &pe_pid) == 2) {
            ready++;
            pe3 = pe == 3 ? pe_pid : pe3;
        }
    }
    ck_assert_msg(ready == 4 && pe3 > 0, "only %d PEs ready (last line: %s)", ready, line);
    snprintf(command, sizeof(command), how, pe3);
    acted = now_realtime();
    cmd(command, JOB_LIMIT_S, &act);
    ck_assert_msg(act.status == 0, "%s: status %d:\n%s", command, act.status, act.out);
    cmd_finish(pid, fd, JOB_LIMIT_S, &res);
    fprintf(stderr, "--- %s: srun ended %.3f s later, status %d\n", command, res.ended - acted,
            res.status);
    ck_assert_msg(res.status != 0 && res.status != MP_RUN_TIMEOUT, "%s: srun status %d:\n%s",
                  command, res.status, res.out);
    expect_no_pes("slurm/mp_slurm");
    return res.ended - acted;
}

START_TEST(test_scancel)
{
    expect_hold_ended_by("scancel $(squeue -h -o %%i)");
}
END_TEST

START_TEST(test_sigkill_pe)
{
    expect_hold_ended_by("kill -KILL %ld");
}
END_TEST

#if RMB_HAVE_MPI
START_TEST(test_pmi2)
{
    cmd_result_t res;

    cmd("srun --mpi=pmi2 -N 2 -n 4 --ntasks-per-node=2 slurm/mp_slurm check", JOB_LIMIT_S, &res);
    ck_assert_msg(res.status == 0, "status %d:\n%s", res.status, res.out);
    EXPECT_OUT(&res, "slurm check: PEs 4 nodes 2 ok");
}
END_TEST
#endif

/* srun without a process-management interface: every task says what to
 * do, and the step fails at once (never 4 silent 1-PE jobs). */
START_TEST(test_no_pmi)
{
    static const char *const ways[] = {"srun", "srun --mpi=none"};
    cmd_result_t res;
    char command[256];

    for (int i = 0; i < 2; i++) {
        snprintf(command, sizeof(command), "%s -N 2 -n 4 slurm/mp_slurm check", ways[i]);
        cmd(command, JOB_LIMIT_S, &res);
        ck_assert_msg(res.status != 0, "%s: status 0:\n%s", command, res.out);
        ck_assert_msg(mp_count_lines(res.out, "use srun --mpi=pmix") == 4,
                      "%s: not one line per PE:\n%s", command, res.out);
        ck_assert_msg(strstr(res.out, "slurm check:") == NULL, "%s: a PE ran alone", command);
        ck_assert_msg(res.elapsed < mp_scaled_time(5.0), "%s: took %.1f s", command, res.elapsed);
    }
    expect_no_pes("slurm/mp_slurm");
}
END_TEST

/* First contact between nodes, repeated: every PE's first operation to
 * every other at the same instant, on nodes with their own host names
 * (shm and network peers mixed). The documented stress run
 * (CHECK_SLURM_REPS set, a quiet machine) wants each run under 5 s; in
 * make check, where other suites load the cores, a run only has to end
 * (bounded waits end a stuck one after 10 s). */
static void stress(const char *net)
{
    const char *text = getenv("CHECK_SLURM_REPS");
    long reps = mp_scaled_count(text ? atol(text) : 10);
    double bound = text ? 5.0 : 30.0, slowest = 0;
    cmd_result_t res;
    char command[512];

    /* libfabric's tcp provider would take lo, not the node's link */
    snprintf(command, sizeof(command),
             "RMB_BTL_NET=%s FI_TCP_IFACE=rmb0 FI_SOCKETS_IFACE=rmb0 " SRUN_2x2
             "multinode/mp_first_contact",
             net);
    for (long r = 0; r < reps; r++) {
        cmd(command, JOB_LIMIT_S, &res);
        ck_assert_msg(res.status == 0, "run %ld of %ld: status %d:\n%s", r + 1, reps, res.status,
                      res.out);
        ck_assert_msg(res.elapsed < mp_scaled_time(bound), "run %ld of %ld took %.2f s", r + 1,
                      reps, res.elapsed);
        slowest = res.elapsed > slowest ? res.elapsed : slowest;
    }
    fprintf(stderr, "--- first contact over %s: %ld runs, slowest %.2f s\n", net, reps, slowest);
    expect_no_pes("multinode/mp_first_contact");
}

#if RMB_HAVE_BTL_UCX
START_TEST(test_stress_ucx)
{
    stress("ucx");
}
END_TEST
#endif

#if RMB_HAVE_BTL_OFI
START_TEST(test_stress_ofi)
{
    stress("ofi");
}
END_TEST
#endif

/* ---- main -------------------------------------------------------------------------- */

/* Names in /tmp of what a Slurm job or PMIx could leave there. */
static int tmp_is_ours(const char *name)
{
    static const char *const prefixes[] = {"rmbslurm", "pmix", "spmix", "slurm", "munge"};

    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The job must not inherit an outer Slurm job's or launcher's identity. */
static void clean_environment(void)
{
    static const char *const prefixes[] = {"SLURM_", "SALLOC_", "SBATCH_", "SRUN_",
                                           "PMIX_",  "PMI_",    "OMPI_",   "RMB_BTL"};
    extern char **environ;
    char name[256];

    /* unsetenv moves the entries after the one removed: look again from the start */
    for (char **e = environ; *e != NULL;) {
        size_t i = 0;

        while (i < sizeof(prefixes) / sizeof(prefixes[0]) &&
               strncmp(*e, prefixes[i], strlen(prefixes[i])) != 0) {
            i++;
        }
        if (i == sizeof(prefixes) / sizeof(prefixes[0])) {
            e++;
            continue;
        }
        snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
        unsetenv(name);
        e = environ;
    }
}

int main(void)
{
    const char *dir = getenv("TESTS_BUILDDIR");
    char conf[4200], tmp[4200];
    Suite *s;
    TCase *jobs, *ends, *stress_tc;
    char *tmp_before;
    int rc;

    if (geteuid() != 0) {
        printf("check_slurm: skipped: needs root (it starts slurmctld, slurmd and munged in "
               "namespaces of their own)\n");
        return 77;
    }
#if RMB_HAVE_BTL_UCX
    net_backend = "ucx";
#elif RMB_HAVE_BTL_OFI
    net_backend = "ofi";
#else
    printf("check_slurm: skipped: rmb was built without a network backend (ucx or ofi)\n");
    return 77;
#endif
    if (dir == NULL || realpath(dir, tests_dir) == NULL) {
        fprintf(stderr, "check_slurm: TESTS_BUILDDIR is not set (run it through make check)\n");
        return 1;
    }
    clean_environment();
    tmp_before = mp_dir_snapshot("/tmp", tmp_is_ours);
    mp_mark_owner(); /* every process of the cluster carries the mark */
    rc = cluster_start();
    if (rc != 0) {
        cluster_stop();
        free(tmp_before);
        return rc;
    }
    snprintf(conf, sizeof(conf), "%s/slurm.conf", cluster_dir);
    setenv("SLURM_CONF", conf, 1);
    setenv("CLUSTER_DIR", cluster_dir, 1);             /* for the cases' commands */
    snprintf(tmp, sizeof(tmp), "%s/tmp", cluster_dir); /* PMIx, srun: nothing in /tmp */
    setenv("TMPDIR", tmp, 1);

    s = suite_create("slurm");
    jobs = tcase_create("jobs");
    tcase_set_timeout(jobs, 120);
    tcase_add_test(jobs, test_srun_pmix);
    tcase_add_test(jobs, test_srun_rpipe);
    tcase_add_test(jobs, test_sbatch);
    tcase_add_test(jobs, test_salloc);
#if RMB_HAVE_MPI
    tcase_add_test(jobs, test_pmi2);
#endif
    tcase_add_test(jobs, test_no_pmi);
    suite_add_tcase(s, jobs);
    ends = tcase_create("job_end");
    tcase_set_timeout(ends, 120);
    tcase_add_test(ends, test_exit_status);
    tcase_add_test(ends, test_scancel);
    tcase_add_test(ends, test_sigkill_pe);
    suite_add_tcase(s, ends);
    stress_tc = tcase_create("stress");
    tcase_set_timeout(stress_tc, 600);
#if RMB_HAVE_BTL_UCX
    tcase_add_test(stress_tc, test_stress_ucx);
#endif
#if RMB_HAVE_BTL_OFI
    tcase_add_test(stress_tc, test_stress_ofi);
#endif
    suite_add_tcase(s, stress_tc);
    rc = mp_run_suite(s);

    cluster_stop();
    for (int i = 0; i < 20 && mp_count_owned(0) > 0; i++) {
        usleep(100000); /* the kernel ends the cluster's processes; reaping takes a moment */
    }
    if (mp_count_owned(1) > 0 || mp_dir_new_entries("/tmp", tmp_before, tmp_is_ours) > 0) {
        rc = EXIT_FAILURE;
    }
    free(tmp_before);
    return rc;
}
