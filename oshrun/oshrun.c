/*
 * oshrun -n N [options] [--] program [args...]
 *
 * Forks N PEs as clients of the embedded PMIx server and supervises them:
 * the first PE that fails (non-zero exit, signal, PMIx_Abort) or a SIGINT/
 * SIGTERM to oshrun ends the whole job. The exit status is 0 only if every
 * PE exited 0; otherwise the abort status, the first failing PE's exit code,
 * or 128+signal. Nothing is left behind: PEs die with oshrun
 * (PR_SET_PDEATHSIG), and a watchdog process removes the private tmpdir
 * even when oshrun itself is killed with SIGKILL.
 */
#define _GNU_SOURCE
#include "oshrun/oshrun.h"
#include "util/env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OSHRUN_EXIT_USAGE    2
#define OSHRUN_KILL_GRACE_MS 1000 /* SIGTERM, then SIGKILL after this */

extern char **environ;

typedef struct {
    pid_t pid;
    int running;
    int wstatus;
} oshrun_pe_t;

static void oshrun_usage(FILE *out)
{
    fprintf(out, "usage: oshrun -n N [options] [--] program [args...]\n"
                 "\n"
                 "Runs N processing elements (PEs) of program on this machine. oshrun is\n"
                 "itself the PMIx server of the job: no other runtime is needed.\n"
                 "\n"
                 "options:\n"
                 "  -n, -np, --np N     number of PEs (required, >= 1)\n"
                 "  --nodes K           emulate K nodes: PEs are placed in consecutive blocks,\n"
                 "                      and each block reports its own node id (default 1)\n"
                 "  --map-by node       place PE r on emulated node r mod K (round robin)\n"
                 "  --map-by ppr:M:node M PEs per emulated node (K = ceil(N/M) unless --nodes)\n"
                 "  --map-by slot|core  consecutive blocks (the default)\n"
                 "  --netns             (root) put each emulated node in its own network\n"
                 "                      namespace, linked by veth to a bridge, so traffic\n"
                 "                      between nodes crosses a network interface\n"
                 "  -x VAR[=value]      set VAR in the PEs' environment (without a value:\n"
                 "                      pass oshrun's VAR, as every variable is passed anyway)\n"
                 "  --tag-output        prefix every line of output with \"[PE r] \"\n"
                 "  --bind-to none|core none (default): no binding; core: PE r is bound to the\n"
                 "                      r-th CPU oshrun may use; with more PEs than CPUs,\n"
                 "                      consecutive PEs share a CPU (PE r on CPU r*CPUs/N)\n"
                 "  --oversubscribe     accepted: more PEs than cores is always allowed\n"
                 "  --allow-run-as-root accepted: root is always allowed\n"
                 "  --timeout SECONDS   terminate the job after SECONDS (exit status 124)\n"
                 "  --local             run the PEs on this machine even inside a Slurm job\n"
                 "  -h, --help          this text\n"
                 "  -V, --version       print the version\n"
                 "\n"
                 "The environment is passed to every PE. stdout and stderr of every PE go to\n"
                 "oshrun's; stdin goes to PE 0. The exit status is 0 only if every PE exits 0;\n"
                 "otherwise the status given to shmem_global_exit()/abort, the first failing\n"
                 "PE's exit code, or 128+signal; 2 for bad usage. When a PE fails, the others\n"
                 "are terminated at once and oshrun names the PE and the cause on stderr.\n"
                 "\n"
                 "Inside a Slurm allocation (SLURM_JOB_ID set, not in a job step) oshrun runs\n"
                 "srun --mpi=pmix --ntasks=N [--nodes=K] --kill-on-bad-exit=1 program args\n"
                 "instead: the PEs run on the allocation's nodes (--timeout becomes --time,\n"
                 "in whole minutes; --map-by, --bind-to, --tag-output and --oversubscribe\n"
                 "become srun's --distribution/--ntasks-per-node, --cpu-bind, --label and\n"
                 "--overcommit; -x values go through the environment).\n");
}

static int oshrun_bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "oshrun: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (oshrun --help for usage)\n");
    return OSHRUN_EXIT_USAGE;
}

static int oshrun_parse_count(const char *text, const char *what, int *value_p)
{
    long value;

    if (text == NULL || util_env_parse_int(text, &value) != UTIL_OK || value < 1 ||
        value > 100000) {
        fprintf(stderr,
                "oshrun: %s must be a whole number >= 1, got '%s' (oshrun --help for usage)\n",
                what, text ? text : "");
        return OSHRUN_EXIT_USAGE;
    }
    *value_p = (int)value;
    return 0;
}

/* Finds program like execvp would, so a missing program is a usage error
 * reported once rather than N exec failures. */
static int oshrun_resolve_program(const char *name, char *path, size_t len)
{
    struct stat st;

    if (strchr(name, '/') != NULL) {
        snprintf(path, len, "%s", name);
    } else {
        const char *dirs = getenv("PATH");
        char *copy, *dir, *save = NULL;
        int found = 0;

        copy = strdup(dirs ? dirs : "/usr/bin:/bin");
        for (dir = strtok_r(copy, ":", &save); dir != NULL && !found;
             dir = strtok_r(NULL, ":", &save)) {
            snprintf(path, len, "%s/%s", *dir ? dir : ".", name);
            found = (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0);
        }
        free(copy);
        if (!found) {
            fprintf(stderr, "oshrun: program '%s' not found in PATH\n", name);
            return OSHRUN_EXIT_USAGE;
        }
    }
    if (stat(path, &st) != 0) {
        fprintf(stderr, "oshrun: program '%s' not found\n", name);
        return OSHRUN_EXIT_USAGE;
    }
    if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0) {
        fprintf(stderr, "oshrun: program '%s' is not an executable file\n", name);
        return OSHRUN_EXIT_USAGE;
    }
    return 0;
}

/* -x VAR[=value]: the PEs inherit oshrun's environment, so setting it
 * here reaches them (and srun's tasks inside Slurm). */
static int oshrun_parse_export(const char *text)
{
    const char *eq = text ? strchr(text, '=') : NULL;
    size_t len = text ? (eq ? (size_t)(eq - text) : strlen(text)) : 0;
    char name[256];

    if (len == 0 || len >= sizeof(name) ||
        strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "abcdefghijklmnopqrstuvwxyz"
                     "0123456789_") != len ||
        (text[0] >= '0' && text[0] <= '9')) {
        return oshrun_bad_usage("-x takes VAR or VAR=value, got '%s'", text ? text : "");
    }
    if (eq != NULL) {
        memcpy(name, text, len);
        name[len] = '\0';
        setenv(name, eq + 1, 1);
    }
    return 0;
}

/* --map-by: only placements onto emulated nodes mean something here. */
static int oshrun_parse_map(const char *text, oshrun_job_t *job)
{
    int n;
    char tail;

    if (text != NULL && strcmp(text, "node") == 0) {
        job->map_cyclic = 1;
    } else if (text != NULL && (strcmp(text, "slot") == 0 || strcmp(text, "core") == 0)) {
        job->map_cyclic = 0;
    } else if (text != NULL && sscanf(text, "ppr:%d:nod%c", &n, &tail) == 2 && tail == 'e' &&
               n >= 1 && strcmp(strrchr(text, ':'), ":node") == 0) {
        job->per_node = n;
        job->map_cyclic = 0;
    } else {
        return oshrun_bad_usage("--map-by takes node, ppr:N:node, slot or core (placement on "
                                "emulated nodes), got '%s'",
                                text ? text : "");
    }
    return 0;
}

static int oshrun_parse_args(int argc, char **argv, oshrun_job_t *job, long *timeout_p)
{
    int i, rc;

    job->np = 0;
    job->nodes = 1;
    *timeout_p = 0;
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];

        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            oshrun_usage(stdout);
            exit(0);
        } else if (strcmp(arg, "-V") == 0 || strcmp(arg, "--version") == 0) {
            printf("oshrun (rmb) %s\n", PACKAGE_VERSION);
            exit(0);
        } else if (strcmp(arg, "-n") == 0 || strcmp(arg, "-np") == 0 || strcmp(arg, "--np") == 0 ||
                   strcmp(arg, "-N") == 0) {
            rc = oshrun_parse_count(++i < argc ? argv[i] : NULL, "-n", &job->np);
            if (rc != 0) return rc;
        } else if (strncmp(arg, "--np=", 5) == 0 || strncmp(arg, "-n=", 3) == 0) {
            rc = oshrun_parse_count(strchr(arg, '=') + 1, "-n", &job->np);
            if (rc != 0) return rc;
        } else if (strcmp(arg, "--nodes") == 0) {
            rc = oshrun_parse_count(++i < argc ? argv[i] : NULL, "--nodes", &job->nodes);
            if (rc != 0) return rc;
            job->nodes_given = 1;
        } else if (strncmp(arg, "--nodes=", 8) == 0) {
            rc = oshrun_parse_count(arg + 8, "--nodes", &job->nodes);
            if (rc != 0) return rc;
            job->nodes_given = 1;
        } else if (strcmp(arg, "-x") == 0) {
            rc = oshrun_parse_export(++i < argc ? argv[i] : NULL);
            if (rc != 0) return rc;
        } else if (strcmp(arg, "--map-by") == 0 || strncmp(arg, "--map-by=", 9) == 0) {
            rc = oshrun_parse_map(arg[8] == '=' ? arg + 9 : (++i < argc ? argv[i] : NULL), job);
            if (rc != 0) return rc;
        } else if (strcmp(arg, "--bind-to") == 0 || strncmp(arg, "--bind-to=", 10) == 0) {
            const char *text = arg[9] == '=' ? arg + 10 : (++i < argc ? argv[i] : NULL);

            if (text != NULL && strcmp(text, "none") == 0) {
                job->bind = OSHRUN_BIND_NONE;
            } else if (text != NULL && strcmp(text, "core") == 0) {
                job->bind = OSHRUN_BIND_CORE;
            } else {
                return oshrun_bad_usage("--bind-to takes none or core, got '%s'", text ? text : "");
            }
        } else if (strcmp(arg, "--tag-output") == 0) {
            job->tag_output = 1;
        } else if (strcmp(arg, "--oversubscribe") == 0) {
            job->oversubscribe = 1;
        } else if (strcmp(arg, "--allow-run-as-root") == 0) {
            /* root may always run PEs here */
        } else if (strcmp(arg, "--netns") == 0) {
            job->netns = 1;
        } else if (strcmp(arg, "--local") == 0) {
            job->local = 1;
        } else if (strcmp(arg, "--timeout") == 0 || strncmp(arg, "--timeout=", 10) == 0) {
            const char *text = arg[9] == '=' ? arg + 10 : (++i < argc ? argv[i] : NULL);
            int seconds;
            rc = oshrun_parse_count(text, "--timeout", &seconds);
            if (rc != 0) return rc;
            *timeout_p = seconds;
        } else if (arg[0] == '-') {
            return oshrun_bad_usage("unknown option '%s'", arg);
        } else {
            break;
        }
    }
    if (i >= argc) {
        return oshrun_bad_usage("%sno program given", "");
    }
    if (job->np == 0) {
        return oshrun_bad_usage("%sthe number of PEs is missing: give -n N", "");
    }
    if (job->per_node > 0) {
        if (!job->nodes_given) {
            job->nodes = (job->np + job->per_node - 1) / job->per_node;
        } else if ((long)job->per_node * job->nodes < job->np) {
            fprintf(stderr,
                    "oshrun: --map-by ppr:%d:node places at most %ld of the %d PEs on "
                    "%d nodes\n",
                    job->per_node, (long)job->per_node * job->nodes, job->np, job->nodes);
            return OSHRUN_EXIT_USAGE;
        }
    }
    if (job->nodes > job->np) {
        fprintf(stderr, "oshrun: --nodes %d is more than the %d PEs\n", job->nodes, job->np);
        return OSHRUN_EXIT_USAGE;
    }
    job->argv = &argv[i];
    return 0;
}

static void oshrun_remove_tree(const char *path)
{
    DIR *dir = opendir(path);
    struct dirent *entry;

    if (dir != NULL) {
        while ((entry = readdir(dir)) != NULL) {
            char child[PATH_MAX];
            struct stat st;

            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) {
                continue;
            }
            snprintf(child, sizeof(child), "%s/%s", path, entry->d_name);
            if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode)) {
                oshrun_remove_tree(child);
            } else {
                unlink(child);
            }
        }
        closedir(dir);
    }
    rmdir(path);
}

/* The watchdog outlives a SIGKILLed oshrun just long enough to remove the
 * tmpdir: it blocks on a pipe whose write end only oshrun holds. */
static pid_t oshrun_start_watchdog(const char *tmpdir, int *pipe_wr_p)
{
    int fds[2];
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) != 0) {
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        char c;
        sigset_t all;

        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL); /* survive the job's signals */
        setsid();
        prctl(PR_SET_NAME, "oshrun-cleanup"); /* so "pkill oshrun" spares it */
        close(fds[1]);
        while (read(fds[0], &c, 1) < 0 && errno == EINTR) {
        }
        oshrun_remove_tree(tmpdir);
        _exit(0);
    }
    close(fds[0]);
    if (pid < 0) {
        close(fds[1]);
        return -1;
    }
    *pipe_wr_p = fds[1];
    return pid;
}

static char **oshrun_copy_environ(void)
{
    size_t n = 0;
    char **env;

    while (environ[n] != NULL) {
        n++;
    }
    env = calloc(n + 1, sizeof(char *));
    for (size_t i = 0; env != NULL && i < n; i++) {
        env[i] = strdup(environ[i]);
    }
    return env;
}

static void oshrun_free_environ(char **env)
{
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
        free(env[i]);
    }
    free(env);
}

/* --bind-to core: PE r on the r-th of the n CPUs oshrun may use; with more
 * PEs than CPUs, consecutive PEs share one (PE r on CPU r * n / np), so the
 * neighbours that most programs talk to, and an emulated node's PEs, stay
 * on one core instead of every exchange crossing cores. */
static void oshrun_bind_core(int rank, int np)
{
    cpu_set_t allowed, mine;
    int n = 0, ncpu, want;

    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) == 0) {
        return;
    }
    ncpu = CPU_COUNT(&allowed);
    want = np <= ncpu ? rank : (int)((long)rank * ncpu / np);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &allowed) && n++ == want) {
            CPU_ZERO(&mine);
            CPU_SET(cpu, &mine);
            if (sched_setaffinity(0, sizeof(mine), &mine) != 0) {
                fprintf(stderr, "oshrun: PE %d cannot be bound to CPU %d: %s\n", rank, cpu,
                        strerror(errno));
            }
            return;
        }
    }
}

static pid_t oshrun_spawn(oshrun_job_t *job, int rank, const char *path, char **env,
                          const sigset_t *old_mask)
{
    pid_t parent = getpid();
    pid_t pid = fork();

    if (pid != 0) {
        return pid;
    }
    /* child */
    if (job->netns && oshrun_netns_enter_node(job, oshrun_node_of(job, rank)) != 0) {
        fprintf(stderr, "oshrun: PE %d cannot enter its node's network namespace: %s\n", rank,
                strerror(errno));
        _exit(127);
    }
    sigprocmask(SIG_SETMASK, old_mask, NULL);
    signal(SIGPIPE, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
        _exit(127); /* oshrun died before we armed the death signal */
    }
    if (job->tag_output) {
        oshrun_output_child(job, rank);
    }
    if (job->bind == OSHRUN_BIND_CORE) {
        oshrun_bind_core(rank, job->np);
    }
    if (rank != 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            close(null);
        }
    }
    execve(path, job->argv, env);
    fprintf(stderr, "oshrun: PE %d cannot execute '%s': %s\n", rank, path, strerror(errno));
    _exit(127);
}

static long oshrun_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void oshrun_signal_all(oshrun_pe_t *pes, int np, int sig)
{
    for (int r = 0; r < np; r++) {
        if (pes[r].running && pes[r].pid > 0) {
            kill(pes[r].pid, sig);
        }
    }
}

static int oshrun_count_running(const oshrun_pe_t *pes, int np)
{
    int n = 0;
    for (int r = 0; r < np; r++) {
        n += pes[r].running;
    }
    return n;
}

static int oshrun_exit_code(int wstatus)
{
    if (WIFEXITED(wstatus)) {
        return WEXITSTATUS(wstatus);
    }
    if (WIFSIGNALED(wstatus)) {
        return 128 + WTERMSIG(wstatus);
    }
    return 1;
}

static void oshrun_describe(int wstatus, char *buf, size_t len)
{
    if (WIFEXITED(wstatus)) {
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(wstatus));
    } else if (WIFSIGNALED(wstatus)) {
        snprintf(buf, len, "was killed by signal %d (%s)%s", WTERMSIG(wstatus),
                 strsignal(WTERMSIG(wstatus)), WCOREDUMP(wstatus) ? ", core dumped" : "");
    } else {
        snprintf(buf, len, "ended abnormally");
    }
}

/* Supervises the PEs until all have ended; returns oshrun's exit status.
 * pfd has room for 2 + 2 * np entries (the --tag-output pipes). */
static int oshrun_supervise(oshrun_job_t *job, oshrun_pe_t *pes, struct pollfd *pfd, int sfd,
                            int wake_rd, long timeout_s)
{
    long start = oshrun_now_ms(), kill_at = -1;
    int exit_code = 0, failed = 0, reported_abort = 0;

    int nout = 0;

    while (oshrun_count_running(pes, job->np) > 0) {
        int abort_rank, abort_status;
        char abort_msg[512];

        pfd[0] = (struct pollfd){sfd, POLLIN, 0};
        pfd[1] = (struct pollfd){wake_rd, POLLIN, 0};
        if (job->tag_output) {
            nout = oshrun_output_pollfds(job, pfd + 2);
        }
        poll(pfd, 2 + (nfds_t)nout, 100);
        if (nout > 0) {
            oshrun_output_forward(job, pfd + 2, nout, 0);
        }
        if (pfd[1].revents & POLLIN) {
            char drain[64];
            while (read(wake_rd, drain, sizeof(drain)) > 0) {
            }
        }
        if (pfd[0].revents & POLLIN) {
            struct signalfd_siginfo si;

            while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                if (si.ssi_signo == SIGCHLD) {
                    continue; /* reaped below */
                }
                if (!failed) {
                    fprintf(stderr, "oshrun: received signal %d (%s); terminating %d PE(s)\n",
                            si.ssi_signo, strsignal((int)si.ssi_signo),
                            oshrun_count_running(pes, job->np));
                    failed = 1;
                    exit_code = 128 + (int)si.ssi_signo;
                    oshrun_signal_all(pes, job->np, SIGTERM);
                    kill_at = oshrun_now_ms() + OSHRUN_KILL_GRACE_MS;
                } else {
                    oshrun_signal_all(pes, job->np, SIGKILL); /* a second signal: no grace */
                }
            }
        }
        for (;;) {
            int wstatus;
            pid_t pid = waitpid(-1, &wstatus, WNOHANG);

            if (pid <= 0) {
                break;
            }
            for (int r = 0; r < job->np; r++) {
                if (pes[r].pid != pid || !pes[r].running) {
                    continue;
                }
                pes[r].running = 0;
                pes[r].wstatus = wstatus;
                if (!failed && !(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)) {
                    char how[128];

                    /* An abort may have raced with the exit it causes. A
                     * PE killed by a signal is reported first: the aborts
                     * of peers that lost it follow from the crash. */
                    if (!WIFSIGNALED(wstatus) &&
                        oshrun_server_abort_info(&abort_rank, &abort_status, abort_msg,
                                                 sizeof(abort_msg))) {
                        break; /* reported below, with the abort's status */
                    }
                    oshrun_describe(wstatus, how, sizeof(how));
                    fprintf(stderr, "oshrun: PE %d (pid %ld) %s; terminating the other %d PE(s)\n",
                            r, (long)pid, how, oshrun_count_running(pes, job->np));
                    failed = 1;
                    exit_code = oshrun_exit_code(wstatus);
                    if (exit_code == 0) {
                        exit_code = 1;
                    }
                    oshrun_signal_all(pes, job->np, SIGKILL);
                }
                break;
            }
        }
        if (!reported_abort &&
            oshrun_server_abort_info(&abort_rank, &abort_status, abort_msg, sizeof(abort_msg))) {
            reported_abort = 1;
            if (!failed) {
                /* Status 0 is a deliberate successful end of the whole job
                 * (shmem_global_exit(0)): nothing to report. */
                if (abort_status != 0) {
                    fprintf(stderr,
                            "oshrun: PE %d called abort with status %d%s%s; terminating the job\n",
                            abort_rank, abort_status, abort_msg[0] ? ": " : "", abort_msg);
                }
                failed = 1;
                exit_code = abort_status;
                oshrun_signal_all(pes, job->np, SIGKILL);
            }
        }
        if (!failed && timeout_s > 0 && oshrun_now_ms() - start > timeout_s * 1000) {
            fprintf(stderr, "oshrun: job exceeded --timeout %ld s; terminating %d PE(s)\n",
                    timeout_s, oshrun_count_running(pes, job->np));
            failed = 1;
            exit_code = 124;
            oshrun_signal_all(pes, job->np, SIGKILL);
        }
        if (kill_at >= 0 && oshrun_now_ms() >= kill_at) {
            oshrun_signal_all(pes, job->np, SIGKILL);
            kill_at = -1;
        }
    }
    if (job->tag_output) {
        oshrun_output_forward(job, NULL, 0, 1); /* what the PEs wrote last */
    }
    return exit_code;
}

int main(int argc, char **argv)
{
    oshrun_job_t job;
    oshrun_pe_t *pes = NULL;
    struct pollfd *pfd = NULL;
    char path[PATH_MAX], **env;
    sigset_t mask, old_mask;
    int rc, sfd, wake[2], watchdog_wr = -1, exit_code;
    pid_t watchdog;
    long timeout_s;

    memset(&job, 0, sizeof(job));
    job.netns_hub = -1;
    rc = oshrun_parse_args(argc, argv, &job, &timeout_s);
    if (rc != 0) {
        return rc;
    }
    rc = oshrun_resolve_program(job.argv[0], path, sizeof(path));
    if (rc != 0) {
        return rc;
    }
    if (oshrun_slurm_wanted(&job)) {
        return oshrun_slurm_exec(&job, timeout_s);
    }

    /* Signals are read from a signalfd by the main loop; block them before
     * PMIx starts its threads so that those inherit the mask. */
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGQUIT);
    sigprocmask(SIG_BLOCK, &mask, &old_mask);
    signal(SIGPIPE, SIG_IGN);
    sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0 || pipe2(wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        fprintf(stderr, "oshrun: cannot set up signal handling: %s\n", strerror(errno));
        return 1;
    }
    job.wake_fd = wake[1];

    snprintf(job.tmpdir, sizeof(job.tmpdir), "%s/oshrun.XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(job.tmpdir) == NULL) {
        fprintf(stderr, "oshrun: cannot create a directory in %s: %s\n", job.tmpdir,
                strerror(errno));
        return 1;
    }
    watchdog = oshrun_start_watchdog(job.tmpdir, &watchdog_wr);
    if (watchdog < 0) {
        fprintf(stderr, "oshrun: cannot start the cleanup process: %s\n", strerror(errno));
        oshrun_remove_tree(job.tmpdir);
        return 1;
    }

    exit_code = 1;
    /* Emulated nodes share this machine's cores: the PEs' waiting policy
     * (util/wait.h) must count every PE here, not only its node's. */
    {
        char procs[16], cpus[16];
        cpu_set_t allowed;

        snprintf(procs, sizeof(procs), "%d", job.np);
        setenv("RMB_HOST_PROCS", procs, 1);
        /* and the CPUs they share: bound PEs (--bind-to core) see one each */
        if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) > 0) {
            snprintf(cpus, sizeof(cpus), "%d", CPU_COUNT(&allowed));
            setenv("RMB_HOST_CPUS", cpus, 1);
        }
    }
    if (job.netns) {
        /* libfabric's tcp and sockets providers: the node's link, not lo */
        setenv("FI_TCP_IFACE", OSHRUN_NETNS_IFACE, 0);
        setenv("FI_SOCKETS_IFACE", OSHRUN_NETNS_IFACE, 0);
        if (oshrun_netns_create(&job) != 0) {
            goto out_cleanup;
        }
    }
    pes = calloc((size_t)job.np, sizeof(*pes));
    pfd = calloc(2 + 2 * (size_t)job.np, sizeof(*pfd));
    if (pes == NULL || pfd == NULL) {
        fprintf(stderr, "oshrun: out of memory\n");
        goto out_cleanup;
    }
    if ((job.tag_output && oshrun_output_open(&job) != 0) || oshrun_server_start(&job) != 0) {
        goto out_cleanup;
    }
    for (int r = 0; r < job.np; r++) {
        env = oshrun_copy_environ();
        if (env == NULL || oshrun_server_setup_pe(&job, r, &env) != 0) {
            oshrun_free_environ(env);
            oshrun_signal_all(pes, r, SIGKILL);
            goto out_reap;
        }
        pes[r].pid = oshrun_spawn(&job, r, path, env, &old_mask);
        oshrun_free_environ(env);
        if (pes[r].pid < 0) {
            fprintf(stderr, "oshrun: cannot fork PE %d: %s\n", r, strerror(errno));
            oshrun_signal_all(pes, r, SIGKILL);
            goto out_reap;
        }
        pes[r].running = 1;
        if (job.tag_output) {
            oshrun_output_spawned(&job, r);
        }
    }
    exit_code = oshrun_supervise(&job, pes, pfd, sfd, wake[0], timeout_s);
    goto out_server;

out_reap:
    for (int r = 0; r < job.np; r++) {
        if (pes[r].running) {
            waitpid(pes[r].pid, NULL, 0);
        }
    }
out_server:
    oshrun_server_stop(&job, exit_code == 0);
out_cleanup:
    if (job.tag_output) {
        oshrun_output_forward(&job, NULL, 0, 1); /* closes whatever is still open */
    }
    free(pfd);
    free(pes);
    if (job.netns) {
        oshrun_netns_close(&job);
    }
    oshrun_remove_tree(job.tmpdir);
    close(watchdog_wr);
    waitpid(watchdog, NULL, 0);
    return exit_code;
}
