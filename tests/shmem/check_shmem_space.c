/*
 * Spaces (docs/spaces.md): runs tests/shmem/mp_shmem_space on 4 PEs
 *   accept, all   on shm (one node), on 2 emulated nodes (shm within; ofi
 *                 tcp;ofi_rxm or UCX over TCP between), with ofi and ucx
 *                 forced for every peer, and under Open MPI's mpirun with
 *                 btl/mpi (RMB_BOOTSTRAP=mpi RMB_BTL=mpi);
 *                 and on shm with the keys swapped through the bootstrap (the
 *                 path of teams above 16 PEs: RMB_SPACE_KEYS=bootstrap);
 *   the error modes, each of which must end the job with status 1 and
 *   "shmem error" lines that name the call and the problem;
 * and checks that nothing survived and nothing was left in /dev/shm. A
 * backend that was not built gives one SKIP line.
 */
#include "btl/btl.h"
#include "tests/common/mp_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "shmem/mp_shmem_space"

static const struct {
    const char *name;
    int nodes;
    const char *btl, *net, *tls; /* RMB_BTL, the network backend needed, FI_PROVIDER/UCX_TLS */
    int mpi;                     /* under Open MPI's mpirun */
} runs[] = {
    {"shm", 1, "auto", NULL, NULL, 0},
    {"2 nodes, shm + ofi tcp;ofi_rxm", 2, "auto", "ofi", "tcp;ofi_rxm", 0},
    {"2 nodes, shm + ucx tcp", 2, "auto", "ucx", "tcp,self", 0},
    {"ofi tcp;ofi_rxm for every peer", 1, "ofi", "ofi", "tcp;ofi_rxm", 0},
    {"ucx for every peer", 1, "ucx", "ucx", NULL, 0},
    {"mpi (Open MPI)", 1, "mpi", NULL, NULL, 1},
    {"shm, keys through the bootstrap", 1, "auto", NULL, NULL, 0}, /* as teams > 16 PEs */
};
#define N_RUNS (int)(sizeof(runs) / sizeof(runs[0]))

static void set_env(int r)
{
    setenv("RMB_BTL", runs[r].btl, 1);
    unsetenv("FI_PROVIDER");
    unsetenv("UCX_TLS");
    unsetenv("RMB_BTL_NET");
    unsetenv("RMB_BOOTSTRAP");
    if (runs[r].tls != NULL) {
        setenv(strcmp(runs[r].net, "ucx") == 0 ? "UCX_TLS" : "FI_PROVIDER", runs[r].tls, 1);
    }
    if (runs[r].nodes > 1) {
        setenv("RMB_BTL_NET", runs[r].net, 1);
    }
    if (runs[r].mpi) {
        setenv("RMB_BOOTSTRAP", "mpi", 1);
    }
    if (strstr(runs[r].name, "bootstrap") != NULL) {
        setenv("RMB_SPACE_KEYS", "bootstrap", 1);
    } else {
        unsetenv("RMB_SPACE_KEYS");
    }
}

/* Open MPI's mpirun when btl/mpi was built for it, else NULL (SKIP printed). */
static const char *ompi_mpirun(const char *what)
{
    char plugin[4096];
    const char *builddir = getenv("TESTS_BUILDDIR"), *mpirun = getenv("OMPI_MPIRUN");

    snprintf(plugin, sizeof(plugin), "%s/../bootstrap/.libs/rmb_mpi_openmpi.so",
             builddir ? builddir : ".");
    if (access(plugin, R_OK) != 0 || mpirun == NULL || mpirun[0] == '\0' ||
        access(mpirun, X_OK) != 0) {
        printf("SKIP %s: no btl/mpi plugin for Open MPI or no mpirun.openmpi\n", what);
        return NULL;
    }
    return mpirun;
}

static int run_mode(int r, const char *mode, double limit)
{
    const char *args[] = {mode, NULL};
    char what[160];
    const char *mpirun;
    char *before;
    int status;

    snprintf(what, sizeof(what), "spaces %s, 4 PEs, %s", mode, runs[r].name);
    if (runs[r].net != NULL && btl_component_find(runs[r].net) == NULL) {
        printf("SKIP %s: btl/%s not built\n", what, runs[r].net);
        return 0;
    }
    if (runs[r].mpi && (mpirun = ompi_mpirun(what)) == NULL) {
        return 0;
    }
    set_env(r);
    before = mp_shm_snapshot();
    if (runs[r].mpi) {
        static char path[4096];
        char *argv[] = {(char *)mpirun,
                        "--allow-run-as-root",
                        "--oversubscribe",
                        "-np",
                        "4",
                        path,
                        (char *)mode,
                        NULL};
        snprintf(path, sizeof(path), "%s", mp_test_path(PROG));
        status = mp_run(argv, limit, NULL);
    } else {
        status = mp_run(mp_oshrun_argv(4, runs[r].nodes, PROG, args), limit, NULL);
    }
    printf("%s: status %d\n", what, status);
    fflush(stdout);
    set_env(0);
    unsetenv("RMB_BTL");
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
    return status;
}

START_TEST(test_accept)
{
    ck_assert_msg(run_mode(_i, "accept", 60) == 0, "accept on %s", runs[_i].name);
}
END_TEST

START_TEST(test_all)
{
    ck_assert_msg(run_mode(_i, "all", 120) == 0, "all on %s", runs[_i].name);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------- */

static const struct {
    const char *mode;
    const char *needles[4];
} errs[] = {
    {"nonmember", {"shmemx_malloc_space", "SHMEMX_SPACE_INVALID", NULL}},
    {"otherspace", {"shmemx_free_space", "is not in this space (it is in another space)", NULL}},
    {"doublefree", {"shmemx_free_space", "freed twice", NULL}},
    {"destroyed", {"shmemx_malloc_space", "the space was destroyed", NULL}},
    {"oom", {"shmemx_malloc_space(3145728)", "the space is exhausted", "space of 1048576", NULL}},
    {"notmember_put", {"shmem_long_p", "PE 0 is not a member of the team of the space", NULL}},
    {"freed_put", {"shmem_long_p", "is not symmetric", NULL}},
    {"destroy_own_team", {"shmem_team_destroy", "shmemx_destroy_space destroys it", NULL}},
};
#define N_ERRS (int)(sizeof(errs) / sizeof(errs[0]))

START_TEST(test_error)
{
    const char *args[] = {errs[_i].mode, NULL};
    char err_path[] = "/tmp/rmb-space-stderr.XXXXXX", text[16384];
    char *before = mp_shm_snapshot();
    int err_fd = mkstemp(err_path), saved = dup(STDERR_FILENO), status, lines;
    ssize_t n;

    ck_assert_int_ge(err_fd, 0);
    fflush(stderr);
    dup2(err_fd, STDERR_FILENO);
    status = mp_run(mp_oshrun_argv(4, 1, PROG, args), 30, NULL);
    dup2(saved, STDERR_FILENO);
    close(saved);
    n = pread(err_fd, text, sizeof(text) - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    close(err_fd);
    unlink(err_path);
    fprintf(stderr, "--- %s: status %d, stderr:\n%s", errs[_i].mode, status, text);
    ck_assert_msg(status == 1, "%s: exit status %d, expected 1", errs[_i].mode, status);
    lines = mp_count_lines(text, "shmem error");
    ck_assert_msg(lines >= 1 && lines <= 2, "%s: %d 'shmem error' lines", errs[_i].mode, lines);
    for (int k = 0; errs[_i].needles[k] != NULL; k++) {
        ck_assert_msg(strstr(text, errs[_i].needles[k]) != NULL, "%s: no \"%s\"", errs[_i].mode,
                      errs[_i].needles[k]);
    }
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("shmem_space");
    TCase *tc = tcase_create("shmem_space");

    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_accept, 0, N_RUNS);
    tcase_add_loop_test(tc, test_all, 0, N_RUNS);
    tcase_add_loop_test(tc, test_error, 0, N_ERRS);
    suite_add_tcase(s, tc);
    return mp_run_suite(s);
}
