/*
 * Multi-node tests: the rpipe and shmem multi-process programs on 2 nodes
 * x 2 PEs, each node its own network namespace (`oshrun --nodes 2 --netns`),
 * shm within a node and ofi tcp;ofi_rxm over the veth links between them;
 * and the hierarchical team collectives on 2 x 2 and on 5 PEs over 2 and 3
 * nodes; and first contact under stress (case first_contact: fresh jobs
 * whose first operations all collide, 4 PEs / 2 nodes and 8 PEs / 4 nodes,
 * with and without namespaces). Needs root (network namespaces) and
 * btl/ofi: skipped with a message otherwise (the runs without namespaces
 * need only btl/ofi). A selection, not the whole suites: every run pays
 * the tcp provider's connection set-up. The programs are this suite's own
 * builds of the layers' ones, so the parallel suites' process checks do
 * not see each other's.
 */
#define _GNU_SOURCE
#include "btl/btl.h"
#include "tests/common/mp_run.h"

#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs `oshrun -n 1 --netns /bin/true`; returns its exit status and its
 * first stderr line in why. */
static int netns_probe(char *why, size_t len)
{
    const char *oshrun = mp_oshrun_argv(1, 1, "multinode/mp_netns", NULL)[0];
    int fds[2], wstatus;
    ssize_t got;
    pid_t pid;

    why[0] = '\0';
    if (pipe(fds) != 0) {
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        execl(oshrun, oshrun, "-n", "1", "--netns", "--timeout", "20", "/bin/true", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    got = read(fds[0], why, len - 1);
    why[got > 0 ? got : 0] = '\0';
    why[strcspn(why, "\n")] = '\0';
    close(fds[0]);
    waitpid(pid, &wstatus, 0);
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
}

/* Skips (with a message) where namespaces or the network backend are missing:
 * not root, no `ip`, a container without CAP_SYS_ADMIN, no veth in the kernel. */
static int skip(const char *what)
{
    char why[256];

    if (geteuid() != 0) {
        printf("SKIP %s: oshrun --netns needs root\n", what);
        return 1;
    }
    if (btl_component_find("ofi") == NULL) {
        printf("SKIP %s: btl/ofi not built (nodes need a network)\n", what);
        return 1;
    }
    if (netns_probe(why, sizeof(why)) != 0) {
        printf("SKIP %s: %s\n", what, why[0] ? why : "oshrun --netns does not work here");
        return 1;
    }
    return 0;
}

/* oshrun -n np --nodes nodes --netns prog args... */
static int run_netns(int np, int nodes, const char *prog, const char *const args[])
{
    char **argv = mp_oshrun_argv(np, nodes, prog, args);
    char *with[70];
    char *before = mp_shm_snapshot();
    int n = 0, status;

    with[n++] = argv[0];
    with[n++] = "--netns";
    for (int i = 1; argv[i] != NULL && n < 69; i++) {
        with[n++] = argv[i];
    }
    with[n] = NULL;
    setenv("RMB_BTL", "auto", 1);
    setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    status = mp_run(with, 120, NULL);
    ck_assert_int_eq(mp_count_alive(prog), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
    return status;
}

START_TEST(test_netns_links)
{
    if (skip("emulated nodes in network namespaces")) return;
    ck_assert_msg(run_netns(4, 2, "multinode/mp_netns", NULL) == 0, "4 PEs on 2 nodes");
    ck_assert_msg(run_netns(5, 3, "multinode/mp_netns", NULL) == 0, "5 PEs on 3 nodes");
}
END_TEST

static const char *const rpipe_runs[][6] = {
    {"stream", "put", "tag", "next", "300"},
    {"stream", "get", "block", "next", "300"},
    {"irregular", "put", "channel", "best", "300"},
    {"channels", "get", "tag", "next", "300"},
    {"alltoall", "put", "channel", "next", "300"},
    {"messages"},
    /* sizes that change: tag readers across nodes take messages by slot,
     * by guessed flag and, after their read patience, by tag */
    {"irregular", "put", "tag", "next", "300"},
};

START_TEST(test_rpipe)
{
    const char *const *a = rpipe_runs[_i];
    const char *args[] = {a[0], a[1], a[2], a[3], a[4], NULL};

    if (skip("rpipe on 2 nodes")) return;
    ck_assert_msg(run_netns(4, 2, "multinode/mp_rpipe", args) == 0, "mp_rpipe %s %s", a[0],
                  a[1] ? a[1] : "");
}
END_TEST

START_TEST(test_rcoll)
{
    const char *args[] = {"ops", "put", NULL};

    if (skip("rcoll on 2 nodes")) return;
    setenv("RMB_RPIPE_SPIN", "50", 1);
    ck_assert_int_eq(run_netns(4, 2, "multinode/mp_rcoll", args), 0);
    unsetenv("RMB_RPIPE_SPIN");
}
END_TEST

static const char *const shmem_modes[] = {"rma", "amo", "sync", "coll", "heap", "away"};

START_TEST(test_shmem)
{
    const char *args[] = {shmem_modes[_i], NULL};

    if (skip("shmem on 2 nodes")) return;
    ck_assert_msg(run_netns(4, 2, "multinode/mp_shmem", args) == 0, "mp_shmem %s", shmem_modes[_i]);
}
END_TEST

START_TEST(test_shmem_p2p)
{
    const char *args[] = {"ctx,signal,lock", NULL};

    if (skip("shmem p2p on 2 nodes")) return;
    ck_assert_int_eq(run_netns(4, 2, "multinode/mp_shmem_p2p", args), 0);
}
END_TEST

/* Teams and collectives, hierarchical where a team spans nodes (the
 * default) and flat, on 2 x 2 and on 5 PEs on 2 and 3 uneven nodes. The
 * last run needs no root: the nodes share a namespace, ofi crosses lo. */
START_TEST(test_shmem_team)
{
    static const struct {
        int np, nodes, netns;
        const char *hier, *mode;
    } runs[] = {
        {4, 2, 1, "auto", "all"},
        {4, 2, 1, "no", "coll"},
        {5, 2, 1, "auto", "coll"},
        {5, 3, 0, "yes", "coll"},
    };
    char nodes_arg[16];
    const char *args[] = {runs[_i].mode, nodes_arg, NULL};
    int status;

    if (runs[_i].netns ? skip("shmem teams on several nodes in network namespaces")
                       : btl_component_find("ofi") == NULL) {
        if (!runs[_i].netns) printf("SKIP shmem teams on several nodes: btl/ofi not built\n");
        return;
    }
    snprintf(nodes_arg, sizeof(nodes_arg), "%d", runs[_i].nodes);
    setenv("SHMEM_COLL_HIER", runs[_i].hier, 1);
    if (runs[_i].netns) {
        status = run_netns(runs[_i].np, runs[_i].nodes, "multinode/mp_shmem_team", args);
    } else {
        setenv("RMB_BTL", "auto", 1);
        setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
        status =
            mp_run(mp_oshrun_argv(runs[_i].np, runs[_i].nodes, "multinode/mp_shmem_team", args),
                   120, NULL);
        ck_assert_int_eq(mp_count_alive("multinode/mp_shmem_team"), 0);
    }
    unsetenv("SHMEM_COLL_HIER");
    ck_assert_msg(status == 0, "%d PEs on %d nodes%s, SHMEM_COLL_HIER=%s", runs[_i].np,
                  runs[_i].nodes, runs[_i].netns ? " (netns)" : "", runs[_i].hier);
}
END_TEST

/* First contact under stress (docs/multinode.md): fresh jobs of
 * mp_first_contact, whose first operation from every PE to every other is
 * an all-to-all fetch-add right after shmem_init, on 4 PEs / 2 nodes and
 * 8 PEs / 4 nodes, nodes sharing lo and (root) in network namespaces.
 * FIRST_CONTACT_REPS jobs per configuration (default 3; the stress run
 * uses 100), orders xor, rotate, same in turn. RMB_OFI_TIMEOUT_SEC=10 (unless
 * set) turns a stuck connection into a failed job after 10 s; each job is
 * killed at 60 s. Prints min/median/max wall time per configuration and
 * every job slower than 2 s. */
static const struct {
    int np, nodes, netns;
} first_contact_runs[] = {
    {4, 2, 0},
    {8, 4, 0},
    {4, 2, 1},
    {8, 4, 1},
};

static long first_contact_reps(void)
{
    const char *text = getenv("FIRST_CONTACT_REPS");
    long reps = text != NULL && *text != '\0' ? strtol(text, NULL, 10) : 3;

    return reps > 0 ? reps : 3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

START_TEST(test_first_contact)
{
    const int np = first_contact_runs[_i].np, nodes = first_contact_runs[_i].nodes;
    const int netns = first_contact_runs[_i].netns;
    long reps = first_contact_reps(), failed = 0, slow = 0;
    double *walls = calloc((size_t)reps, sizeof(double));
    char what[80];

    ck_assert_ptr_nonnull(walls);
    snprintf(what, sizeof(what), "first contact, %d PEs on %d nodes%s", np, nodes,
             netns ? " in network namespaces" : "");
    if (netns ? skip(what) : btl_component_find("ofi") == NULL) {
        if (!netns) printf("SKIP %s: btl/ofi not built\n", what);
        free(walls);
        return;
    }
    setenv("RMB_BTL", "auto", 1);
    setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    setenv("RMB_OFI_TIMEOUT_SEC", "10", 0);
    for (long r = 0; r < reps; r++) {
        static const char *const orders[] = {"xor", "rotate", "same"};
        const char *args[] = {orders[r % 3], NULL};
        char **argv = mp_oshrun_argv(np, nodes, "multinode/mp_first_contact", args);
        char *with[16], *before = mp_shm_snapshot();
        int n = 0, status;

        with[n++] = argv[0];
        if (netns) with[n++] = "--netns";
        for (int i = 1; argv[i] != NULL && n < 15; i++) {
            with[n++] = argv[i];
        }
        with[n] = NULL;
        status = mp_run(with, 60, &walls[r]);
        if (status != 0) {
            failed++;
            printf("FAIL %s, job %ld (%s): exit status %d after %.2f s\n", what, r + 1, args[0],
                   status, walls[r]);
        } else if (walls[r] > mp_scaled_time(2)) {
            slow++;
            printf("slow: %s, job %ld (%s): %.2f s\n", what, r + 1, args[0], walls[r]);
        }
        ck_assert_int_eq(mp_count_alive("multinode/mp_first_contact"), 0);
        ck_assert_int_eq(mp_shm_new_entries(before), 0);
        free(before);
    }
    qsort(walls, (size_t)reps, sizeof(double), cmp_double);
    printf("%s: %ld jobs, %ld failed, %ld over 2 s; wall min %.2f median %.2f max %.2f s\n", what,
           reps, failed, slow, walls[0],
           reps % 2 ? walls[reps / 2] : (walls[reps / 2 - 1] + walls[reps / 2]) / 2,
           walls[reps - 1]);
    fflush(stdout);
    free(walls);
    ck_assert_msg(failed == 0, "%s: %ld of %ld jobs failed", what, failed, reps);
}
END_TEST

/* Network namespaces of live processes (newline-separated "net:[inode]"
 * list); *fresh_p counts the processes in one not in before (if not NULL),
 * named on stderr when verbose. */
static char *netns_list(const char *before, int verbose, int *fresh_p)
{
    DIR *proc = opendir("/proc");
    struct dirent *entry;
    size_t len = 1;
    char *list = calloc(1, 1);

    *fresh_p = 0;
    while (proc != NULL && list != NULL && (entry = readdir(proc)) != NULL) {
        char path[300], ns[64], needle[70];
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%s/ns/net", entry->d_name);
        n = entry->d_name[0] >= '0' && entry->d_name[0] <= '9' ? readlink(path, ns, sizeof(ns) - 1)
                                                               : -1;
        if (n <= 0) {
            continue;
        }
        ns[n] = '\0';
        snprintf(needle, sizeof(needle), "%s\n", ns);
        if (before != NULL && strstr(before, needle) == NULL && !verbose) {
            (*fresh_p)++;
        } else if (before != NULL && strstr(before, needle) == NULL) {
            char comm[64] = "?";
            FILE *f;

            snprintf(path, sizeof(path), "/proc/%s/comm", entry->d_name);
            if ((f = fopen(path, "r")) != NULL) {
                if (fgets(comm, sizeof(comm), f) != NULL) comm[strcspn(comm, "\n")] = '\0';
                fclose(f);
            }
            fprintf(stderr, "check_multinode: pid %s (%s) lives in namespace %s\n", entry->d_name,
                    comm, ns);
            (*fresh_p)++;
        }
        if (strstr(list, needle) == NULL) {
            char *grown = realloc(list, len + strlen(needle));
            if (grown == NULL) break;
            list = grown;
            strcat(list, needle);
            len += strlen(needle);
        }
    }
    if (proc != NULL) closedir(proc);
    return list;
}

/* SIGINT, then SIGKILL, to oshrun while the PEs are in their namespaces:
 * no PE survives, so no namespace does (oshrun held the rest by fds). */
START_TEST(test_netns_teardown)
{
    static const int sigs[] = {SIGINT, SIGKILL};
    const char *args[] = {"hold", NULL};

    if (skip("network namespace teardown")) return;
    for (int k = 0; k < 2; k++) {
        char **argv = mp_oshrun_argv(4, 2, "multinode/mp_netns", args);
        char *with[16], *before, *after, ready[64];
        int n = 0, out, fresh = 0, status;
        FILE *f;
        pid_t pid;

        with[n++] = argv[0];
        with[n++] = "--netns";
        for (int i = 1; argv[i] != NULL && n < 15; i++) {
            with[n++] = argv[i];
        }
        with[n] = NULL;
        before = netns_list(NULL, 0, &fresh);
        pid = mp_start(with, &out);
        ck_assert_int_gt(pid, 0);
        f = fdopen(out, "r");
        ck_assert_ptr_nonnull(fgets(ready, sizeof(ready), f)); /* a PE is up in its namespace */
        kill(pid, sigs[k]);
        status = mp_wait(pid, 10, NULL);
        fclose(f);
        ck_assert_int_eq(status, 128 + sigs[k]);
        for (int tries = 0; tries < 300 && mp_count_alive("multinode/mp_netns") > 0; tries++) {
            usleep(10000);
        }
        ck_assert_int_eq(mp_count_alive("multinode/mp_netns"), 0);
        /* a dying PE loses its exe before its namespaces: allow it 3 s */
        for (int tries = 0;; tries++) {
            after = netns_list(before, tries == 300, &fresh);
            free(after);
            if (fresh == 0 || tries == 300) break;
            usleep(10000);
        }
        ck_assert_int_eq(fresh, 0);
        free(before);
    }
}
END_TEST

/* Not root: one line and exit status 1, nothing started. */
START_TEST(test_netns_needs_root)
{
    char **argv = mp_oshrun_argv(2, 2, "multinode/mp_netns", NULL);
    int fds[2], wstatus;
    char line[256] = "";
    ssize_t got;
    pid_t pid;

    ck_assert_int_eq(pipe(fds), 0);
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
            _exit(99);
        }
        execl(argv[0], argv[0], "-n", "2", "--nodes", "2", "--netns", "/bin/true", (char *)NULL);
        _exit(98);
    }
    close(fds[1]);
    got = read(fds[0], line, sizeof(line) - 1);
    close(fds[0]);
    waitpid(pid, &wstatus, 0);
    ck_assert(WIFEXITED(wstatus));
    ck_assert_int_eq(WEXITSTATUS(wstatus), 1);
    ck_assert(got > 0);
    line[got] = '\0';
    ck_assert_msg(strstr(line, "--netns needs root") != NULL &&
                      strchr(line, '\n') == line + got - 1,
                  "one line naming the cause, got '%s'", line);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("multinode");
    TCase *tc = tcase_create("netns"), *fc;

    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, test_netns_needs_root);
    tcase_add_test(tc, test_netns_links);
    tcase_add_test(tc, test_netns_teardown);
    tcase_add_loop_test(tc, test_rpipe, 0, sizeof(rpipe_runs) / sizeof(rpipe_runs[0]));
    tcase_add_test(tc, test_rcoll);
    tcase_add_loop_test(tc, test_shmem, 0, sizeof(shmem_modes) / sizeof(shmem_modes[0]));
    tcase_add_test(tc, test_shmem_p2p);
    tcase_add_loop_test(tc, test_shmem_team, 0, 4);
    suite_add_tcase(s, tc);
    /* its own case: CK_RUN_CASE=first_contact FIRST_CONTACT_REPS=100 runs the stress */
    fc = tcase_create("first_contact");
    tcase_set_timeout(fc, 60 + 65 * (double)first_contact_reps());
    tcase_add_loop_test(fc, test_first_contact, 0,
                        sizeof(first_contact_runs) / sizeof(first_contact_runs[0]));
    suite_add_tcase(s, fc);
    return mp_run_suite(s);
}
