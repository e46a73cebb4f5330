/*
 * Memory-model stress test on every backend: tests/shmem/mp_shmem_memmodel
 * (the target checks with plain loads what atomics + quiet + sync, atomics
 * + quiet + flag, put + fence + flag, large puts + quiet + barrier,
 * mixed put/atomics to one word, and puts and adds passed round a ring with
 * no quiet, only waits, left in its memory) on 2 and 4 PEs with
 *   shm (the default on one node),
 *   ofi forced for every peer, FI_PROVIDER='tcp;ofi_rxm' and sockets,
 *   ucx forced for every peer (TCP loopback: peer error handling),
 *   2 emulated nodes (oshrun --nodes 2: shm within, tcp;ofi_rxm or UCX
 *   over TCP between),
 *   btl/mpi under Open MPI's mpirun (RMB_BOOTSTRAP=mpi RMB_BTL=mpi),
 * plus 4 PEs on 2 nodes with RMB_AMO_NETWORK=yes and btl/mpi's pure-RMA
 * path (RMB_MPI_LOAD_STORE=no). Each run is bounded (mp_run's limit, and
 * the program's own alarm a little earlier) and followed by a check for
 * survivors and /dev/shm leftovers; a backend that was not built gives one
 * SKIP line. MEMMODEL_SCALE=x runs x times the rounds, with x times the
 * time limits (TEST_TIME_SCALE divides the rounds). See docs/btl.md,
 * "Memory-model stress test".
 */
#include "btl/btl.h"
#include "tests/common/mp_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef RMB_TEST_LSAN_MPI_SUPP
#define RMB_TEST_LSAN_MPI_SUPP "tests/btl/lsan_mpi.supp"
#endif

#define PROG    "shmem/mp_shmem_memmodel"
#define LIMIT_S 60.0 /* per run, scaled by TEST_TIME_SCALE */

enum { L_OSHRUN, L_OMPI };

/* Rounds per pattern (the large-put pattern runs rounds/8): each run's
 * patterns take 0.5-3 s on 2 idle cores; sockets is slow here (see
 * docs/btl_ofi.md), so it runs few. */
static const struct {
    const char *name;
    int launcher, np, nodes;
    const char *btl;
    const char *net;      /* the network backend the run needs (RMB_BTL_NET), or NULL */
    const char *provider; /* FI_PROVIDER for ofi, UCX_TLS for ucx, or NULL */
    const char *env;      /* one more NAME=VALUE, or NULL */
    long rounds;
} runs[] = {
    {"shm", L_OSHRUN, 2, 1, "auto", NULL, NULL, NULL, 5000},
    {"shm", L_OSHRUN, 4, 1, "auto", NULL, NULL, NULL, 1000},
    {"ofi tcp;ofi_rxm", L_OSHRUN, 2, 1, "ofi", "ofi", "tcp;ofi_rxm", NULL, 1000},
    {"ofi tcp;ofi_rxm", L_OSHRUN, 4, 1, "ofi", "ofi", "tcp;ofi_rxm", NULL, 300},
    {"ofi sockets", L_OSHRUN, 2, 1, "ofi", "ofi", "sockets", NULL, 40},
    {"ofi sockets", L_OSHRUN, 4, 1, "ofi", "ofi", "sockets", NULL, 16},
    {"shm + ofi tcp;ofi_rxm", L_OSHRUN, 2, 2, "auto", "ofi", "tcp;ofi_rxm", NULL, 1000},
    {"shm + ofi tcp;ofi_rxm", L_OSHRUN, 4, 2, "auto", "ofi", "tcp;ofi_rxm", NULL, 300},
    {"ucx", L_OSHRUN, 2, 1, "ucx", "ucx", NULL, NULL, 2000},
    {"ucx", L_OSHRUN, 4, 1, "ucx", "ucx", NULL, NULL, 500},
    {"shm + ucx tcp", L_OSHRUN, 2, 2, "auto", "ucx", "tcp,self", NULL, 2000},
    {"shm + ucx tcp", L_OSHRUN, 4, 2, "auto", "ucx", "tcp,self", NULL, 500},
    /* every atomic through the network, puts to the node's peers mapped:
     * fence between a network atomic and a store on one word */
    {"shm + ofi tcp;ofi_rxm", L_OSHRUN, 4, 2, "auto", "ofi", "tcp;ofi_rxm", "RMB_AMO_NETWORK=yes",
     300},
    {"shm + ucx tcp", L_OSHRUN, 4, 2, "auto", "ucx", "tcp,self", "RMB_AMO_NETWORK=yes", 500},
    /* without the helper thread: only the PEs' calls move the data (over
     * ofi, flags then travel as messages, as with the helper) */
    {"shm + ofi tcp;ofi_rxm", L_OSHRUN, 4, 2, "auto", "ofi", "tcp;ofi_rxm",
     "RMB_OFI_PROGRESS_USEC=0", 300},
    {"shm + ucx tcp", L_OSHRUN, 4, 2, "auto", "ucx", "tcp,self", "RMB_UCX_PROGRESS_USEC=0", 500},
    {"mpi (Open MPI)", L_OMPI, 2, 1, "mpi", NULL, NULL, NULL, 10000},
    {"mpi (Open MPI)", L_OMPI, 4, 1, "mpi", NULL, NULL, NULL, 2000},
    /* btl/mpi's pure-RMA path: MPI RMA on the pool window, no loads/stores */
    {"mpi (Open MPI)", L_OMPI, 2, 1, "mpi", NULL, NULL, "RMB_MPI_LOAD_STORE=no", 10000},
    {"mpi (Open MPI)", L_OMPI, 4, 1, "mpi", NULL, NULL, "RMB_MPI_LOAD_STORE=no", 1000},
};
#define N_RUNS (int)(sizeof(runs) / sizeof(runs[0]))

/* Open MPI's mpirun and rmb's plugin for it (as tests/btl/check_btl_mpi.c
 * decides); NULL, after one SKIP line, when either is missing. */
static const char *ompi_mpirun(const char *what)
{
    char plugin[4096];
    const char *builddir = getenv("TESTS_BUILDDIR"), *mpirun = getenv("OMPI_MPIRUN");

    snprintf(plugin, sizeof(plugin), "%s/../bootstrap/.libs/rmb_mpi_openmpi.so",
             builddir ? builddir : ".");
    if (access(plugin, R_OK) != 0) { /* btl_component_find("mpi") needs MPI running */
        printf("SKIP %s: btl/mpi not built for Open MPI (no rmb_mpi_openmpi.so)\n", what);
        return NULL;
    }
    if (mpirun == NULL || mpirun[0] == '\0' || access(mpirun, X_OK) != 0) {
        printf("SKIP %s: no Open MPI launcher (mpirun.openmpi)\n", what);
        return NULL;
    }
    return mpirun;
}

/* "mpirun --allow-run-as-root --oversubscribe -np N prog args" (static) */
static char **ompi_argv(const char *mpirun, int np, const char *const args[])
{
    static char *argv[16];
    static char np_text[16], path[4096];
    int n = 0;

    snprintf(np_text, sizeof(np_text), "%d", np);
    snprintf(path, sizeof(path), "%s", mp_test_path(PROG));
    argv[n++] = (char *)mpirun;
    argv[n++] = "--allow-run-as-root";
    argv[n++] = "--oversubscribe";
    argv[n++] = "-np";
    argv[n++] = np_text;
    argv[n++] = path;
    for (int i = 0; args[i] != NULL && n < 15; i++) {
        argv[n++] = (char *)args[i];
    }
    argv[n] = NULL;
    return argv;
}

/* MEMMODEL_SCALE (> 0, default 1): multiplies the rounds */
static double memmodel_scale(void)
{
    const char *text = getenv("MEMMODEL_SCALE");
    double scale = text != NULL ? atof(text) : 1.0;

    return scale > 0 ? scale : 1.0;
}

START_TEST(test_memmodel)
{
    char what[128], rounds[24], alarm_s[24], env_name[64];
    const char *args[] = {rounds, NULL};
    const char *mpirun = NULL;
    double elapsed = 0, scale, limit;
    char *before;
    int status;

    snprintf(what, sizeof(what), "memmodel %s, %d PEs%s%s%s", runs[_i].name, runs[_i].np,
             runs[_i].nodes > 1 ? " on 2 nodes" : "", runs[_i].env ? ", " : "",
             runs[_i].env ? runs[_i].env : "");
    if (runs[_i].net != NULL && btl_component_find(runs[_i].net) == NULL) {
        printf("SKIP %s: btl/%s not built (apt-get install %s)\n", what, runs[_i].net,
               strcmp(runs[_i].net, "ucx") == 0 ? "libucx-dev" : "libfabric-dev");
        return;
    }
    if (runs[_i].launcher == L_OMPI && (mpirun = ompi_mpirun(what)) == NULL) {
        return;
    }
    /* slow builds (sanitizers): TEST_TIME_SCALE divides the rounds and
     * multiplies the limits; MEMMODEL_SCALE=x: x times the rounds and the
     * limits (a longer stress run by hand) */
    scale = memmodel_scale();
    limit = LIMIT_S * (scale > 1 ? scale : 1);
    snprintf(rounds, sizeof(rounds), "%ld", mp_scaled_count((long)(runs[_i].rounds * scale)));
    snprintf(alarm_s, sizeof(alarm_s), "%.0f", mp_scaled_time(limit) - 5);
    setenv("MEMMODEL_ALARM", alarm_s, 1);
    setenv("RMB_BTL", runs[_i].btl, 1);
    unsetenv("FI_PROVIDER");
    unsetenv("UCX_TLS");
    if (runs[_i].provider != NULL) {
        setenv(strcmp(runs[_i].net, "ucx") == 0 ? "UCX_TLS" : "FI_PROVIDER", runs[_i].provider, 1);
    }
    if (runs[_i].nodes > 1) {
        setenv("RMB_BTL_NET", runs[_i].net, 1);
    }
    if (runs[_i].launcher == L_OMPI) {
        setenv("RMB_BOOTSTRAP", "mpi", 1);
        if (getenv("LSAN_OPTIONS") != NULL) { /* sanitizer builds: what MPI_Init keeps */
            setenv("LSAN_OPTIONS",
                   "suppressions=" RMB_TEST_LSAN_MPI_SUPP
                   ":fast_unwind_on_malloc=0:print_suppressions=0:symbolize=0",
                   1);
        }
    } else {
        unsetenv("RMB_BOOTSTRAP");
    }

    if (runs[_i].env != NULL) {
        snprintf(env_name, sizeof(env_name), "%.*s", (int)strcspn(runs[_i].env, "="), runs[_i].env);
        setenv(env_name, runs[_i].env + strlen(env_name) + 1, 1);
    }

    before = mp_shm_snapshot();
    if (runs[_i].launcher == L_OMPI) {
        status = mp_run(ompi_argv(mpirun, runs[_i].np, args), limit, &elapsed);
    } else {
        status = mp_run(mp_oshrun_argv(runs[_i].np, runs[_i].nodes, PROG, args), limit, &elapsed);
    }
    printf("%s: %s rounds, status %d, %.1f s\n", what, rounds, status, elapsed);
    fflush(stdout);
    unsetenv("RMB_BOOTSTRAP");
    unsetenv("RMB_BTL_NET");
    if (runs[_i].env != NULL) {
        unsetenv(env_name);
    }
    ck_assert_msg(status == 0, "%s: exit status %d%s", what, status,
                  status == MP_RUN_TIMEOUT ? " (killed at the time limit)" : "");
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("shmem_memmodel");
    TCase *tc = tcase_create("memmodel");

    /* a run is killed at its limit before that */
    tcase_set_timeout(tc, LIMIT_S * (memmodel_scale() > 1 ? memmodel_scale() : 1) + 30);
    tcase_add_loop_test(tc, test_memmodel, 0, N_RUNS);
    suite_add_tcase(s, tc);
    return mp_run_suite(s);
}
