/*
 * Runs the btl conformance suite (mp_btl_conformance, one program for
 * every backend) under oshrun in each configuration: shm with 2 and 4
 * PEs, each network backend (ucx, ofi) between emulated nodes, ucx forced
 * for all peers, ofi forced with each
 * libfabric provider we support here; and the network backends' bounded
 * waits against a stalled peer.
 */
#include "btl/btl.h"
#include "tests/common/mp_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "btl/mp_btl_conformance"

static void set_or_unset(const char *name, const char *value)
{
    if (value != NULL) {
        setenv(name, value, 1);
    } else {
        unsetenv(name);
    }
}

/* fi_provider: FI_PROVIDER for ofi; ucx_tls: UCX_TLS for ucx (NULL: theirs). */
static void run_suite(int np, int nodes, const char *force, const char *fi_provider,
                      const char *ucx_tls)
{
    char *before = mp_shm_snapshot();

    set_or_unset("UCX_TLS", ucx_tls);
    set_or_unset("FI_PROVIDER", fi_provider);
    setenv("RMB_BTL", force, 1);
    /* The suite loops over every backend of the context; run just the one
     * under test ("auto" = whatever serves the peers, i.e. all). */
    if (strcmp(force, "auto") != 0) {
        setenv("BTL_CONF_ONLY", force, 1);
    } else {
        unsetenv("BTL_CONF_ONLY");
    }
    ck_assert_int_eq(mp_run(mp_oshrun_argv(np, nodes, PROG, NULL), 240, NULL), 0);
    unsetenv("UCX_TLS");
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
}

START_TEST(test_shm_2)
{
    run_suite(2, 1, "shm", NULL, NULL);
}
END_TEST
START_TEST(test_shm_4)
{
    run_suite(4, 1, "shm", NULL, NULL);
}
END_TEST
/* Each network backend between 2 emulated nodes, 2 PEs on each. The
 * suite forces every backend it tests (one context each), so this is not
 * auto's choice (check_multinode runs that); one backend per run, where
 * one run of every backend twice took 22 s each. */
static const char *const net_backends[] = {"ucx", "ofi", "verbs"};

START_TEST(test_net_2_nodes)
{
    if (btl_component_find(net_backends[_i]) == NULL) {
        printf("SKIP %s on 2 nodes: not built (verbs: or no RDMA device)\n", net_backends[_i]);
        return;
    }
    /* as test_ofi_forced at 4 PEs: 100,000 notified puts took 10 s over ofi */
    if (strcmp(net_backends[_i], "ofi") == 0) {
        char iters[24];

        snprintf(iters, sizeof(iters), "%ld", mp_scaled_count(20000));
        setenv("BTL_CONF_ITERS", iters, 1);
    }
    /* UCX would see one host and take its shared memory: the wire, please */
    run_suite(4, 2, net_backends[_i], NULL, strcmp(net_backends[_i], "ucx") == 0 ? "tcp" : NULL);
    unsetenv("BTL_CONF_ITERS");
}
END_TEST

/* ucx for every peer, 2 and 4 PEs, UCX's own choice of transports (TCP
 * loopback on one node: btl/ucx keeps UCX off its shared memory and
 * "self"); then 2 PEs without the progress thread (RMB_UCX_PROGRESS_USEC=0,
 * as with a UCX built without thread support): every wait drives UCX. */
START_TEST(test_ucx_forced)
{
    if (btl_component_find("ucx") == NULL) {
        printf("SKIP btl/ucx: not built (apt-get install libucx-dev)\n");
        return;
    }
    if (_i == 2) {
        setenv("RMB_UCX_PROGRESS_USEC", "0", 1);
    }
    run_suite(_i == 1 ? 4 : 2, 1, "ucx", NULL, NULL);
    unsetenv("RMB_UCX_PROGRESS_USEC");
}
END_TEST

static const char *const providers[] = {"tcp;ofi_rxm", "sockets"};

/* Stress iterations per run: the full 10^5 where the provider is fast
 * enough on 2 loaded cores, fewer where it is not (sockets: ~40 ms per
 * round trip here; see docs/btl_ofi.md). */
static const char *const ofi_iters[2][2] = {{NULL, "20000"}, {"1000", "500"}};

START_TEST(test_ofi_forced)
{
    int np = (_i & 1) ? 4 : 2;
    const char *provider = providers[_i / 2], *iters = ofi_iters[_i / 2][_i & 1];

    if (btl_component_find("ofi") == NULL) {
        printf("SKIP btl/ofi: not built (apt-get install libfabric-dev)\n");
        return;
    }
    if (mp_time_scale() > 1) { /* slow build: fewer stress rounds */
        char scaled[24];
        snprintf(scaled, sizeof(scaled), "%ld", mp_scaled_count(iters ? atol(iters) : 100000));
        setenv("BTL_CONF_ITERS", scaled, 1);
    } else if (iters != NULL) {
        setenv("BTL_CONF_ITERS", iters, 1);
    } else {
        unsetenv("BTL_CONF_ITERS");
    }
    run_suite(np, 1, "ofi", provider, NULL);
    unsetenv("BTL_CONF_ITERS");
}
END_TEST

/* A job over ofi with var=value must fail, its error one line holding
 * expect, and no PE may survive. */
static void t_ofi_refused(const char *var, const char *value, const char *expect)
{
    char **argv = mp_oshrun_argv(2, 1, PROG, NULL);
    char cmd[4096], out[8192] = "";
    size_t n = 0, len = 0;
    int fd, status;
    FILE *f;
    pid_t pid;

    for (int i = 0; argv[i] != NULL; i++) {
        len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, "%s ", argv[i]);
    }
    snprintf(cmd + len, sizeof(cmd) - len, "2>&1");
    setenv(var, value, 1);
    setenv("RMB_BTL", "ofi", 1);
    setenv("BTL_CONF_ONLY", "ofi", 1);
    setenv("FI_PROVIDER", "tcp;ofi_rxm", 1);
    pid = mp_start((char *[]){"sh", "-c", cmd, NULL}, &fd);
    ck_assert_int_gt(pid, 0);
    f = fdopen(fd, "r");
    while (n + 1 < sizeof(out) && fgets(out + n, (int)(sizeof(out) - n), f) != NULL) {
        n = strlen(out);
    }
    fclose(f);
    status = mp_wait(pid, 60, NULL);
    ck_assert_msg(status != 0, "a job with %s=%s exited 0", var, value);
    ck_assert_msg(mp_count_lines(out, expect) >= 1, "no one-line error for %s=%s:\n%s", var, value,
                  out);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    unsetenv(var);
    unsetenv("RMB_BTL");
    unsetenv("BTL_CONF_ONLY");
    unsetenv("FI_PROVIDER");
}

/* tcp;ofi_rxm's put-with-flag goes as one message since flag order
 * "message"; the older way (payload delivered, then the flag) stays what
 * auto takes without the helper thread: the suite over it at 2 PEs. A
 * value the provider cannot do, or a bad batch size, is one line and a
 * failed job. */
START_TEST(test_ofi_flag_order)
{
    if (btl_component_find("ofi") == NULL) {
        printf("SKIP btl/ofi flag orders: not built\n");
        return;
    }
    if (_i == 0) {
        char iters[24];

        snprintf(iters, sizeof(iters), "%ld", mp_scaled_count(5000));
        setenv("BTL_CONF_ITERS", iters, 1);
        setenv("RMB_OFI_FLAG_ORDER", "wait", 1);
        run_suite(2, 1, "ofi", "tcp;ofi_rxm", NULL);
    } else {
        t_ofi_refused("RMB_OFI_FLAG_ORDER", "sideways",
                      "RMB_OFI_FLAG_ORDER=\"sideways\": expected");
        t_ofi_refused("RMB_OFI_AM_BATCH", "5", "RMB_OFI_AM_BATCH is 5; use 0 (off) or 64 to");
    }
    unsetenv("RMB_OFI_FLAG_ORDER");
    unsetenv("BTL_CONF_ITERS");
}
END_TEST

/* Waits are bounded: a stalled peer makes quiet and a non-blocking put
 * fail with a timeout after RMB_BTL_TIMEOUT_SEC=1, then everything
 * completes once it serves again (~6 s: the peer stalls 5 s). Both network
 * backends, on wires that need the target's progress; then again with
 * PE 0's helper thread on. */
START_TEST(test_timeout)
{
    const char *prog = "btl/mp_btl_timeout", *btl = net_backends[_i];
    char *before = mp_shm_snapshot();

    if (btl_component_find(btl) == NULL) {
        printf("SKIP btl/%s timeout: not built\n", btl);
        free(before);
        return;
    }
    setenv("RMB_BTL", btl, 1);
    setenv("FI_PROVIDER", "tcp;ofi_rxm", 1); /* manual progress: a sleeping PE serves nothing */
    setenv("UCX_TLS", "tcp,self", 1);        /* the same for UCX */
    setenv("RMB_OFI_PROGRESS_USEC", "0", 1);
    setenv("RMB_UCX_PROGRESS_USEC", "0", 1);
    setenv("RMB_BTL_TIMEOUT_SEC", "1", 1);
    ck_assert_int_eq(mp_run(mp_oshrun_argv(2, 1, prog, NULL), 60, NULL), 0);
    /* again with PE 0's helper thread sending what PE 0 held back */
    setenv("T_HELPER_PE0", "1", 1);
    ck_assert_int_eq(mp_run(mp_oshrun_argv(2, 1, prog, NULL), 60, NULL), 0);
    unsetenv("T_HELPER_PE0");
    unsetenv("RMB_OFI_PROGRESS_USEC");
    unsetenv("RMB_UCX_PROGRESS_USEC");
    unsetenv("RMB_BTL_TIMEOUT_SEC");
    unsetenv("FI_PROVIDER");
    unsetenv("UCX_TLS");
    ck_assert_int_eq(mp_count_alive(prog), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
}
END_TEST

/* A bad RMB_UCX_ERR_MODE ends the job with one line naming the values. */
START_TEST(test_ucx_err_mode_bad)
{
    char *const *job, *argv[32] = {"/bin/sh", "-c", "exec \"$@\" 2>&1", "sh"};
    char out[8192];
    size_t len = 0;
    ssize_t got;
    int fd, n = 4;
    pid_t pid;

    if (btl_component_find("ucx") == NULL) {
        printf("SKIP btl/ucx: not built\n");
        return;
    }
    setenv("RMB_BTL", "ucx", 1);
    setenv("BTL_CONF_ONLY", "ucx", 1);
    setenv("RMB_UCX_ERR_MODE", "bogus", 1);
    job = mp_oshrun_argv(2, 1, PROG, NULL);
    for (int i = 0; job[i] != NULL && n < 31; i++) {
        argv[n++] = job[i];
    }
    argv[n] = NULL;
    pid = mp_start(argv, &fd);
    while (len < sizeof(out) - 1 && (got = read(fd, out + len, sizeof(out) - 1 - len)) > 0) {
        len += (size_t)got;
    }
    out[len] = '\0';
    close(fd);
    ck_assert_int_ne(mp_wait(pid, 60, NULL), 0);
    unsetenv("RMB_UCX_ERR_MODE");
    unsetenv("BTL_CONF_ONLY");
    ck_assert_msg(mp_count_lines(out, "RMB_UCX_ERR_MODE is 'bogus'; use auto, peer or none") >= 1,
                  "no one-line error in: %s", out);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("btl");
    TCase *shm = tcase_create("shm");
    TCase *ofi = tcase_create("ofi");
    TCase *ucx = tcase_create("ucx");
    TCase *net = tcase_create("net");

    tcase_set_timeout(shm, 300);
    tcase_add_test(shm, test_shm_2);
    tcase_add_test(shm, test_shm_4);
    suite_add_tcase(s, shm);
    tcase_set_timeout(ofi, 300);
    tcase_add_loop_test(ofi, test_ofi_forced, 0, 4);
    tcase_add_loop_test(ofi, test_ofi_flag_order, 0, 2);
    suite_add_tcase(s, ofi);
    tcase_set_timeout(ucx, 300);
    tcase_add_loop_test(ucx, test_ucx_forced, 0, 3);
    tcase_add_test(ucx, test_ucx_err_mode_bad);
    suite_add_tcase(s, ucx);
    tcase_set_timeout(net, 300);
    tcase_add_loop_test(net, test_net_2_nodes, 0, 3);
    tcase_add_loop_test(net, test_timeout, 0, 2); /* ucx and ofi (net_backends[0..1]) */
    suite_add_tcase(s, net);
    return mp_run_suite(s);
}
