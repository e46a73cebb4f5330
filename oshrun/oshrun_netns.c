/*
 * oshrun --netns: each emulated node in its own network namespace, so
 * traffic between nodes crosses a real (virtual) interface.
 *
 *   node k namespace: lo, and rmb0 = 10.213.0.(k+1)/24
 *   hub namespace:    bridge rmbhub = 10.213.0.254/24, with the peer ends
 *                     rmbh<k> of every node's rmb0 as its ports
 *
 * The namespaces are unnamed: oshrun holds them by file descriptors, the
 * PEs by living in them, so they (and the veth links and addresses inside)
 * vanish when the last of those ends, however oshrun exits. Nothing is
 * created in the namespace oshrun was started in, so the test addresses
 * cannot collide with the machine's. The PMIx server listens on the hub's
 * address (its TCP listener would be unreachable on oshrun's loopback).
 * The links are configured with `ip -batch`, run inside each namespace.
 */
#define _GNU_SOURCE
#include "oshrun/oshrun.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#define OSHRUN_NETNS_MAX_NODES 250

static int oshrun_netns_orig = -1;

static int oshrun_netns_fail(const char *what)
{
    fprintf(stderr, "oshrun: --netns: %s: %s\n", what, strerror(errno));
    return -1;
}

static const char *oshrun_netns_ip_path(void)
{
    static const char *const paths[] = {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"};

    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        if (access(paths[i], X_OK) == 0) {
            return paths[i];
        }
    }
    return NULL;
}

/* Runs `ip -batch -` with commands in the namespace ns; returns 0 when ip
 * succeeded, else prints one line with ip's first complaint. */
static int oshrun_netns_ip(const char *ip, int ns, const char *commands)
{
    int in[2], err[2], wstatus;
    char msg[256] = "";
    ssize_t got, used = 0;
    pid_t pid;

    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        return oshrun_netns_fail("cannot create a pipe");
    }
    pid = fork();
    if (pid == 0) {
        if (setns(ns, CLONE_NEWNET) != 0) {
            dprintf(err[1], "cannot enter the namespace: %s\n", strerror(errno));
            _exit(127);
        }
        dup2(in[0], STDIN_FILENO);
        dup2(err[1], STDERR_FILENO);
        dup2(err[1], STDOUT_FILENO);
        execl(ip, "ip", "-batch", "-", (char *)NULL);
        dprintf(err[1], "cannot execute %s: %s\n", ip, strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(err[1]);
    if (pid < 0) {
        close(in[1]);
        close(err[0]);
        return oshrun_netns_fail("cannot fork");
    }
    if (write(in[1], commands, strlen(commands)) < 0) {
        /* ip failed early: its status says why */
    }
    close(in[1]);
    while ((got = read(err[0], msg + used, sizeof(msg) - 1 - (size_t)used)) > 0) {
        used += got;
    }
    close(err[0]);
    msg[used] = '\0';
    msg[strcspn(msg, "\n")] = '\0';
    waitpid(pid, &wstatus, 0);
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        fprintf(stderr, "oshrun: --netns: cannot configure the test links: ip says '%s'\n", msg);
        return -1;
    }
    return 0;
}

/* A new, empty network namespace held by a descriptor; oshrun stays in its own. */
static int oshrun_netns_new(void)
{
    int fd;

    if (unshare(CLONE_NEWNET) != 0) {
        return oshrun_netns_fail("cannot create a network namespace");
    }
    fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        oshrun_netns_fail("cannot open the new network namespace");
    }
    if (setns(oshrun_netns_orig, CLONE_NEWNET) != 0) {
        oshrun_netns_fail("cannot return to oshrun's network namespace");
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

int oshrun_netns_create(oshrun_job_t *job)
{
    const char *ip = oshrun_netns_ip_path();
    size_t len = 256 + (size_t)job->nodes * 160, used = 0;
    char *cmds;
    int rc = -1;

    if (geteuid() != 0) {
        fprintf(stderr,
                "oshrun: --netns needs root (it creates network namespaces and veth links)\n");
        return -1;
    }
    if (job->nodes > OSHRUN_NETNS_MAX_NODES) {
        fprintf(stderr, "oshrun: --netns supports at most %d nodes\n", OSHRUN_NETNS_MAX_NODES);
        return -1;
    }
    if (ip == NULL) {
        fprintf(stderr,
                "oshrun: --netns needs the 'ip' command (iproute2), which is not installed\n");
        return -1;
    }
    job->netns_fds = malloc(sizeof(int) * (size_t)job->nodes);
    cmds = malloc(len);
    if (job->netns_fds == NULL || cmds == NULL) {
        fprintf(stderr, "oshrun: --netns: out of memory\n");
        goto out;
    }
    for (int k = 0; k < job->nodes; k++) {
        job->netns_fds[k] = -1;
    }
    oshrun_netns_orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (oshrun_netns_orig < 0) {
        oshrun_netns_fail("cannot open oshrun's network namespace");
        goto out;
    }
    job->netns_hub = oshrun_netns_new();
    if (job->netns_hub < 0) {
        goto out;
    }
    for (int k = 0; k < job->nodes; k++) {
        job->netns_fds[k] = oshrun_netns_new();
        if (job->netns_fds[k] < 0) {
            goto out;
        }
    }
    used = (size_t)snprintf(cmds, len,
                            "link set lo up\n"
                            "link add rmbhub type bridge\n"
                            "addr add " OSHRUN_NETNS_HUB_ADDR "/24 dev rmbhub\n"
                            "link set rmbhub up\n");
    for (int k = 0; k < job->nodes; k++) {
        /* the peer end is born inside node k's namespace: never in ours */
        used += (size_t)snprintf(cmds + used, len - used,
                                 "link add rmbh%d type veth peer name " OSHRUN_NETNS_IFACE
                                 " netns /proc/%ld/fd/%d\n"
                                 "link set rmbh%d master rmbhub\n"
                                 "link set rmbh%d up\n",
                                 k, (long)getpid(), job->netns_fds[k], k, k);
    }
    if (oshrun_netns_ip(ip, job->netns_hub, cmds) != 0) {
        goto out;
    }
    for (int k = 0; k < job->nodes; k++) {
        snprintf(cmds, len,
                 "link set lo up\n"
                 "addr add 10.213.0.%d/24 dev " OSHRUN_NETNS_IFACE "\n"
                 "link set " OSHRUN_NETNS_IFACE " up\n",
                 k + 1);
        if (oshrun_netns_ip(ip, job->netns_fds[k], cmds) != 0) {
            goto out;
        }
    }
    rc = 0;
out:
    free(cmds);
    if (rc != 0) {
        oshrun_netns_close(job);
    }
    return rc;
}

int oshrun_netns_enter_hub(const oshrun_job_t *job)
{
    if (setns(job->netns_hub, CLONE_NEWNET) != 0) {
        return oshrun_netns_fail("cannot enter the hub namespace");
    }
    return 0;
}

int oshrun_netns_leave_hub(void)
{
    if (setns(oshrun_netns_orig, CLONE_NEWNET) != 0) {
        return oshrun_netns_fail("cannot return to oshrun's network namespace");
    }
    return 0;
}

int oshrun_netns_enter_node(const oshrun_job_t *job, int node)
{
    if (setns(job->netns_fds[node], CLONE_NEWNET) != 0) {
        return -1;
    }
    /* sysfs shows the network namespace it was mounted in: without a
     * fresh one the PE's /sys/class/net lists the machine's interfaces,
     * not lo and rmb0, and libraries that look there (UCX) miss rmb0.
     * As `ip netns exec` does: a private mount namespace, kept a slave of
     * ours so nothing leaks back, with sysfs mounted anew. Best effort:
     * programs that never read /sys do without. */
    if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) == 0 &&
        umount2("/sys", MNT_DETACH) == 0) {
        (void)mount("sysfs", "/sys", "sysfs", 0, NULL);
    }
    return 0;
}

void oshrun_netns_close(oshrun_job_t *job)
{
    for (int k = 0; job->netns_fds != NULL && k < job->nodes; k++) {
        if (job->netns_fds[k] >= 0) {
            close(job->netns_fds[k]);
        }
    }
    free(job->netns_fds);
    job->netns_fds = NULL;
    if (job->netns_hub >= 0) {
        close(job->netns_hub);
    }
    job->netns_hub = -1;
    if (oshrun_netns_orig >= 0) {
        close(oshrun_netns_orig);
    }
    oshrun_netns_orig = -1;
}
