/*
 * btl/mpi and the MPI bootstrap under each MPI this build has a plugin for:
 * Open MPI's mpirun and MPICH's mpiexec (hydra). Programs that are not MPI
 * programs run with RMB_BOOTSTRAP=mpi (rmb calls MPI_Init itself) and
 * RMB_BTL=mpi (every peer through btl/mpi): mp_bootstrap (identity,
 * exchange, lazy gets, barrier, allgather, abort), the btl conformance
 * suite, mp_rpipe and mp_shmem. mp_mpi_shmem_<mpi> is an MPI program that
 * calls MPI_Init before shmem_init. btl/mpi's two paths on one node both
 * run: loads and stores on the pool window (the default) and MPI RMA on it
 * (RMB_MPI_LOAD_STORE=no). With MP_MPI_NODES=1, as root, MPICH also runs
 * one rank on each of two emulated nodes (network namespaces,
 * tests/btl/mpi_netns.sh). Every run is bounded by a timeout and
 * followed by a check for survivors and /dev/shm leftovers; an MPI that is
 * not there gives a SKIP line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* unshare, CLONE_NEWNET */
#endif
#include "tests/common/mp_run.h"

#include <check.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef RMB_TEST_MPICH_MPIEXEC
#define RMB_TEST_MPICH_MPIEXEC ""
#endif
#ifndef RMB_TEST_LSAN_MPI_SUPP
#define RMB_TEST_LSAN_MPI_SUPP "tests/btl/lsan_mpi.supp"
#endif

enum { T_OMPI, T_MPICH, T_NUM_MPI };

static const char *const t_mpi_name[T_NUM_MPI] = {"openmpi", "mpich"};

static const char *t_launcher(int mpi)
{
    const char *path = mpi == T_OMPI ? getenv("OMPI_MPIRUN") : RMB_TEST_MPICH_MPIEXEC;
    return (path != NULL && path[0] != '\0' && access(path, X_OK) == 0) ? path : NULL;
}

/* The MPI is usable here: its launcher exists and its plugin was built. */
static int t_have(int mpi)
{
    char plugin[4096];
    const char *builddir = getenv("TESTS_BUILDDIR");

    snprintf(plugin, sizeof(plugin), "%s/../bootstrap/.libs/rmb_mpi_%s.so",
             builddir ? builddir : ".", t_mpi_name[mpi]);
    if (access(plugin, R_OK) != 0) {
        printf("SKIP %s: no plugin built (configure found no %s)\n", t_mpi_name[mpi],
               mpi == T_OMPI ? "mpicc.openmpi" : "mpicc.mpich");
        return 0;
    }
    if (t_launcher(mpi) == NULL) {
        printf("SKIP %s: no launcher (%s)\n", t_mpi_name[mpi],
               mpi == T_OMPI ? "mpirun.openmpi" : "mpiexec.mpich");
        return 0;
    }
    return 1;
}

/* "<launcher> <np options> <TESTS_BUILDDIR>/prog args..." (static storage). */
static char **t_argv(int mpi, int np, const char *prog, const char *const args[])
{
    static char *argv[64];
    static char np_text[16], path[4096];
    int n = 0;

    snprintf(np_text, sizeof(np_text), "%d", np);
    snprintf(path, sizeof(path), "%s", mp_test_path(prog));
    argv[n++] = (char *)t_launcher(mpi);
    if (mpi == T_OMPI) {
        argv[n++] = "--allow-run-as-root";
        argv[n++] = "--oversubscribe";
        argv[n++] = "-np";
    } else {
        argv[n++] = "-n";
    }
    argv[n++] = np_text;
    argv[n++] = path;
    for (int i = 0; args != NULL && args[i] != NULL && n < 63; i++) {
        argv[n++] = (char *)args[i];
    }
    argv[n] = NULL;
    return argv;
}

/* Sanitizer builds: MPI keeps what MPI_Init allocated (lsan_mpi.supp). */
static void t_lsan_mpi(void)
{
    if (getenv("LSAN_OPTIONS") != NULL) {
        setenv("LSAN_OPTIONS",
               "suppressions=" RMB_TEST_LSAN_MPI_SUPP
               ":fast_unwind_on_malloc=0:print_suppressions=0:symbolize=0",
               1);
    }
}

/* Runs prog as np ranks with RMB_BOOTSTRAP=bootstrap and RMB_BTL=backend,
 * checks that nothing survives or stays in /dev/shm; returns the exit status. */
static int t_run_with(int mpi, int np, const char *bootstrap, const char *backend, const char *prog,
                      const char *const args[], double limit)
{
    char *before = mp_shm_snapshot();
    double elapsed = 0;
    int status;

    t_lsan_mpi();
    setenv("RMB_BOOTSTRAP", bootstrap, 1);
    setenv("RMB_BTL", backend, 1);
    setenv("BTL_CONF_ONLY", "mpi", 1);
    status = mp_run(t_argv(mpi, np, prog, args), limit, &elapsed);
    printf("%-7s %-26s %-10s np %d: status %d, %.1f s\n", t_mpi_name[mpi], prog,
           args != NULL && args[0] != NULL ? args[0] : "", np, status, elapsed);
    fflush(stdout);
    ck_assert_int_eq(mp_count_alive(prog), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
    return status;
}

/* A program that is not an MPI program: rmb calls MPI_Init itself. */
static int t_run(int mpi, int np, const char *backend, const char *prog, const char *const args[],
                 double limit)
{
    return t_run_with(mpi, np, "mpi", backend, prog, args, limit);
}

/* The same over btl/mpi's pure-RMA path: the pool window is reached
 * through MPI (RMB_MPI_LOAD_STORE=no) instead of loads and stores. */
static int t_run_rma(int mpi, int np, const char *bootstrap, const char *prog,
                     const char *const args[], double limit)
{
    int status;

    setenv("RMB_MPI_LOAD_STORE", "no", 1);
    printf("(RMB_MPI_LOAD_STORE=no) ");
    status = t_run_with(mpi, np, bootstrap, "mpi", prog, args, limit);
    unsetenv("RMB_MPI_LOAD_STORE");
    return status;
}

START_TEST(test_bootstrap)
{
    const char *args[] = {"3", "check", NULL};

    if (!t_have(_i)) {
        return;
    }
    ck_assert_int_eq(t_run(_i, 3, "mpi", "mp_bootstrap", args, 60), 0);
}
END_TEST

START_TEST(test_abort)
{
    const char *args[] = {"3", "abort", NULL};
    int status;

    if (!t_have(_i)) {
        return;
    }
    /* bootstrap_abort(7) is MPI_Abort: the job ends, not with success */
    status = t_run(_i, 3, "mpi", "mp_bootstrap", args, 60);
    ck_assert_msg(status != 0 && status != MP_RUN_TIMEOUT, "abort gave status %d", status);
}
END_TEST

START_TEST(test_conformance)
{
    if (!t_have(_i)) {
        return;
    }
    /* The stress loops do one flush per notified put. MPICH (ch4:ucx)
     * runs every operation on a dynamic window as an active message the
     * target serves: with more ranks than our 2 cores each atomic waits a
     * scheduler slice (~4 ms; 3 ranks take 60-100 s), so MPICH runs 2. */
    setenv("BTL_CONF_ITERS", _i == T_OMPI ? "20000" : "2000", 1);
    ck_assert_int_eq(t_run(_i, 2, "mpi", "btl/mp_btl_conformance", NULL, 240), 0);
    setenv("BTL_CONF_ITERS", "2000", 1);
    ck_assert_int_eq(t_run_rma(_i, 2, "mpi", "btl/mp_btl_conformance", NULL, 240), 0);
    if (_i == T_OMPI) {
        setenv("BTL_CONF_ITERS", "2000", 1);
        ck_assert_int_eq(t_run(_i, 3, "mpi", "btl/mp_btl_conformance", NULL, 240), 0);
    }
    unsetenv("BTL_CONF_ITERS");
}
END_TEST

START_TEST(test_rpipe)
{
    const char *stream[] = {"stream", "put", "tag", "next", "300", NULL};
    const char *get[] = {"stream", "get", "block", "next", "300", NULL};
    const char *alltoall[] = {"alltoall", "put", "tag", "next", "100", NULL};
    const char *messages[] = {"messages", NULL};

    if (!t_have(_i)) {
        return;
    }
    /* channels meet through lazy gets of keys pushed at commit */
    ck_assert_int_eq(t_run(_i, 2, "mpi", "rpipe/mp_rpipe", stream, 120), 0);
    ck_assert_int_eq(t_run(_i, 2, "mpi", "rpipe/mp_rpipe", get, 120), 0);
    ck_assert_int_eq(t_run_rma(_i, 2, "mpi", "rpipe/mp_rpipe", stream, 120), 0);
    ck_assert_int_eq(t_run(_i, 3, "mpi", "rpipe/mp_rpipe", alltoall, 120), 0);
    /* network_send/recv: one key per message */
    ck_assert_int_eq(t_run(_i, 3, "mpi", "rpipe/mp_rpipe", messages, 120), 0);
}
END_TEST

START_TEST(test_shmem)
{
    static const char *const modes[] = {"rma", "amo", "sync", "coll", "heap"};

    if (!t_have(_i)) {
        return;
    }
    for (int m = 0; m < 5; m++) {
        const char *args[] = {modes[m], NULL};
        /* load/store on btl/mpi's pool (the default), then for rma, amo
         * and sync the pure-RMA path (shmem_ptr gives NULL there) */
        ck_assert_msg(t_run(_i, 2, "mpi", "shmem/mp_shmem", args, 120) == 0, "mp_shmem %s",
                      modes[m]);
        if (m < 3) {
            ck_assert_msg(t_run_rma(_i, 2, "mpi", "shmem/mp_shmem", args, 120) == 0,
                          "mp_shmem %s (RMB_MPI_LOAD_STORE=no)", modes[m]);
        }
    }
}
END_TEST

START_TEST(test_mpi_program)
{
    const char *multiple[] = {"multiple", NULL};
    char prog[64];

    if (!t_have(_i)) {
        return;
    }
    snprintf(prog, sizeof(prog), "btl/mp_mpi_shmem_%s", t_mpi_name[_i]);
    /* MPI_Init first, bootstrap auto-detected; every peer through btl/mpi,
     * then the default choice (shm on the node) */
    ck_assert_int_eq(t_run_with(_i, 2, "auto", "mpi", prog, NULL, 120), 0);
    ck_assert_int_eq(t_run_with(_i, 3, "auto", "auto", prog, NULL, 120), 0);
    /* MPI_THREAD_MULTIPLE: btl/mpi's progress thread applies peers' atomics
     * while PE 0 runs its own on the same word (lost updates when PE 0's were
     * CPU atomics: MPICH failed about every other run) */
    ck_assert_int_eq(t_run_with(_i, 2, "auto", "mpi", prog, multiple, 120), 0);
    /* the same through MPI RMA on the pool (static data remapped onto it) */
    ck_assert_int_eq(t_run_rma(_i, 2, "auto", prog, NULL, 120), 0);
    ck_assert_int_eq(t_run_rma(_i, 2, "auto", prog, multiple, 120), 0);
    /* a pool window smaller than the symmetric heap: mem_alloc falls back,
     * the heap is plain memory on the dynamic window (MPI atomics) while
     * static data is remapped onto the pool (CPU atomics): both at once */
    setenv("RMB_MPI_POOL_SIZE", "1M", 1);
    ck_assert_int_eq(t_run_with(_i, 2, "auto", "mpi", prog, NULL, 120), 0);
    unsetenv("RMB_MPI_POOL_SIZE");
}
END_TEST

/* ---- two emulated nodes (MPICH, root) ---- */

#define T_NODES 2

/* A child that holds a new, empty network namespace until killed, or
 * until this process dies (PR_SET_PDEATHSIG); -1 when unshare fails. */
static pid_t t_netns_holder(void)
{
    int fds[2];
    char ok = 0;
    pid_t pid;

    if (pipe(fds) != 0) {
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        ok = unshare(CLONE_NEWNET) == 0;
        if (write(fds[1], &ok, 1) != 1 || !ok) {
            _exit(1);
        }
        for (;;) {
            pause();
        }
    }
    close(fds[1]);
    if (pid > 0 && (read(fds[0], &ok, 1) != 1 || !ok)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        pid = -1;
    }
    close(fds[0]);
    return pid;
}

/* Bytes received on rmb0 in the network namespace of pid (its
 * /proc/<pid>/net/dev), or -1. */
static long long t_rmb0_rx(pid_t pid)
{
    char path[64], line[512];
    long long rx = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/net/dev", (long)pid);
    f = fopen(path, "r");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        char *name = line + strspn(line, " ");
        if (strncmp(name, "rmb0:", 5) == 0) {
            rx = strtoll(name + 5, NULL, 10);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return rx;
}

/* mpiexec.mpich in the hub's namespace, one rank on each node through the
 * launcher script: "nsenter -t HUB -n mpiexec ... prog args" (static). */
static char **t_nodes_argv(pid_t hub, const char *prog, const char *const args[])
{
    static char *argv[64];
    static char hub_text[16], path[4096];
    int n = 0;

    snprintf(hub_text, sizeof(hub_text), "%ld", (long)hub);
    snprintf(path, sizeof(path), "%s", mp_test_path(prog));
    argv[n++] = "nsenter";
    argv[n++] = "-t";
    argv[n++] = hub_text;
    argv[n++] = "-n";
    argv[n++] = (char *)t_launcher(T_MPICH);
    argv[n++] = "-launcher";
    argv[n++] = "ssh";
    argv[n++] = "-launcher-exec";
    argv[n++] = RMB_TEST_NETNS_SCRIPT;
    argv[n++] = "-iface";
    argv[n++] = "br0";
    argv[n++] = "-hosts";
    argv[n++] = "10.213.8.1,10.213.8.2";
    argv[n++] = "-n";
    argv[n++] = "2";
    argv[n++] = "-ppn";
    argv[n++] = "1";
    argv[n++] = path;
    for (int i = 0; args != NULL && args[i] != NULL && n < 63; i++) {
        argv[n++] = (char *)args[i];
    }
    argv[n] = NULL;
    return argv;
}

/* Runs prog over btl/mpi on the two nodes; returns its exit status. With
 * expect (not NULL), the job's stdout must contain it. */
static int t_run_nodes(pid_t hub, const char *prog, const char *const args[], const char *expect,
                       double limit)
{
    char *before = mp_shm_snapshot(), out[4096], *last;
    struct timespec t0, t1;
    size_t got = 0;
    ssize_t n;
    int fd, status;
    pid_t pid;

    t_lsan_mpi();
    setenv("RMB_BOOTSTRAP", "mpi", 1);
    setenv("RMB_BTL", "mpi", 1);
    setenv("BTL_CONF_ONLY", "mpi", 1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid = mp_start(t_nodes_argv(hub, prog, args), &fd);
    /* wait first (bounded), then read: these programs print a few lines,
     * which the pipe holds */
    status = mp_wait(pid, limit, NULL);
    fcntl(fd, F_SETFL, O_NONBLOCK); /* a survivor may still hold the pipe */
    while (got < sizeof(out) - 1 && (n = read(fd, out + got, sizeof(out) - 1 - got)) > 0) {
        got += (size_t)n;
    }
    out[got] = '\0';
    close(fd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    while (got > 0 && out[got - 1] == '\n') {
        out[--got] = '\0';
    }
    last = strrchr(out, '\n');
    printf("mpich   %-26s %-10s 2 nodes: status %d, %.1f s: %s\n", prog,
           args != NULL && args[0] != NULL ? args[0] : "", status,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
           last != NULL ? last + 1 : out);
    fflush(stdout);
    ck_assert_int_eq(mp_count_alive(prog), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
    if (status == 0 && expect != NULL) {
        ck_assert_msg(strstr(out, expect) != NULL, "%s: no \"%s\" in:\n%s", prog, expect, out);
    }
    return status;
}

/* One rank on each of two emulated nodes: network namespaces joined by a
 * bridge, hydra launching through tests/btl/mpi_netns.sh. MPI sees two
 * nodes (MPI_COMM_TYPE_SHARED), so btl/mpi has no pool: everything goes
 * through the dynamic window and MPICH's network path (UCX over TCP).
 * Opt-in (MP_MPI_NODES=1): MPICH 4.0's MPI_Finalize can hang over UCX/TCP,
 * one rank waiting in ucp_disconnect for a peer already in its PMI barrier
 * (seen once in about 60 runs; MPICH 4.2 dropped that barrier,
 * pmodels/mpich#6596), and a test that fails now and then would not help. */
START_TEST(test_two_nodes)
{
    const char *check[] = {"2", "check", NULL};
    const char *stream[] = {"stream", "put", "tag", "next", "100", NULL};
    const char *rma[] = {"rma", NULL}, *amo[] = {"amo", NULL};
    pid_t holder[T_NODES + 1];
    char setup[256];
    int ok = 1;

    if (!t_have(T_MPICH)) {
        return;
    }
    if (getenv("MP_MPI_NODES") == NULL) {
        printf("SKIP mpich on 2 nodes: opt-in, MP_MPI_NODES=1 (MPICH 4.0 may hang in "
               "MPI_Finalize over UCX/TCP)\n");
        return;
    }
    if (geteuid() != 0) {
        printf("SKIP mpich on 2 nodes: network namespaces need root\n");
        return;
    }
    for (int i = 0; i <= T_NODES; i++) {
        holder[i] = t_netns_holder();
        ok = ok && holder[i] > 0;
    }
    if (ok) {
        char *argv[] = {RMB_TEST_NETNS_SCRIPT, "setup", NULL, NULL, NULL, NULL};
        char pids[T_NODES + 1][16];
        for (int i = 0; i <= T_NODES; i++) {
            snprintf(pids[i], sizeof(pids[i]), "%ld", (long)holder[i]);
            argv[2 + i] = pids[i];
        }
        ok = mp_run(argv, 30, NULL) == 0;
        snprintf(setup, sizeof(setup), "%s %s", pids[1], pids[2]);
        setenv("MP_NETNS_PIDS", setup, 1);
    }
    if (!ok) {
        printf("SKIP mpich on 2 nodes: cannot make network namespaces and veth links here\n");
    } else {
        /* UCX: TCP on the link between the nodes (by itself it would take
         * shared memory: it sees one machine, namespaces or not) */
        setenv("UCX_NET_DEVICES", "rmb0", 1);
        setenv("UCX_TLS", "tcp,self", 1);
        ck_assert_int_eq(t_run_nodes(holder[0], "mp_bootstrap", check,
                                     "2 PEs on 2 node(s): all checks passed", 60),
                         0);
        long long rx = t_rmb0_rx(holder[1]);
        setenv("BTL_CONF_ITERS", "200", 1);
        ck_assert_int_eq(t_run_nodes(holder[0], "btl/mp_btl_conformance", NULL, NULL, 120), 0);
        unsetenv("BTL_CONF_ITERS");
        /* the suite's 1 MiB transfers crossed the link, not shared memory */
        rx = t_rmb0_rx(holder[1]) - rx;
        ck_assert_msg(rx >= (1 << 20), "node 1 received %lld bytes on rmb0", rx);
        ck_assert_int_eq(t_run_nodes(holder[0], "rpipe/mp_rpipe", stream, NULL, 60), 0);
        ck_assert_int_eq(t_run_nodes(holder[0], "shmem/mp_shmem", rma, NULL, 60), 0);
        ck_assert_int_eq(t_run_nodes(holder[0], "shmem/mp_shmem", amo, NULL, 60), 0);
        unsetenv("UCX_NET_DEVICES");
        unsetenv("UCX_TLS");
        unsetenv("MP_NETNS_PIDS");
    }
    for (int i = 0; i <= T_NODES; i++) {
        if (holder[i] > 0) {
            kill(holder[i], SIGKILL);
            waitpid(holder[i], NULL, 0);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("btl_mpi");
    TCase *tc = tcase_create("mpi");

    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_bootstrap, 0, T_NUM_MPI);
    tcase_add_loop_test(tc, test_abort, 0, T_NUM_MPI);
    tcase_add_loop_test(tc, test_conformance, 0, T_NUM_MPI);
    tcase_add_loop_test(tc, test_rpipe, 0, T_NUM_MPI);
    tcase_add_loop_test(tc, test_shmem, 0, T_NUM_MPI);
    tcase_add_loop_test(tc, test_mpi_program, 0, T_NUM_MPI);
    tcase_add_test(tc, test_two_nodes);
    suite_add_tcase(s, tc);
    return mp_run_suite(s);
}
