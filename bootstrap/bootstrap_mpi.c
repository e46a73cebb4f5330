/*
 * MPI flavour: for programs that are MPI programs (MPI_Init, then rinit or
 * shmem_init), and for any program launched by mpirun/mpiexec with
 * RMB_BOOTSTRAP=mpi (then we call MPI_Init ourselves, and MPI_Finalize at
 * the last bootstrap_finalize). Also the loader of the MPI plugin (see
 * bootstrap_mpi.h): this file calls MPI only through the shim table.
 *
 * Ranks are those of MPI_COMM_WORLD, through a duplicate of it (our
 * messages never meet the program's). Node ids: the lowest rank of each
 * MPI_COMM_TYPE_SHARED group, numbered densely in rank order.
 *
 * Keys. MPI has no key-value server that holds a value for a reader who
 * comes later, as the PMIx server does. So commit *pushes*: it sends the
 * values put since the last commit to every other rank at once (MPI_Isend
 * of one packed buffer each), and readers keep what arrives in a local
 * table. The owner takes no further part: a lazy get (rpipe channels,
 * network_send/recv) is answered by what already arrived, however busy the
 * owner is afterwards; it polls for pushes for about a second, then says
 * UTIL_ERR_TIMEOUT and the caller retries, as under PMIx. fence(collect)
 * allgathers how many pushes each rank sent and receives until all have
 * arrived, so after a fence every value committed before it is readable.
 * Cost: (size-1) messages per commit, which is what a job of the sizes
 * btl/mpi targets (tests, benchmarks, tens of ranks) can afford; a large
 * job that creates rpipe channels lazily would want a put addressed to one
 * reader instead.
 */
#define _GNU_SOURCE
#include "bootstrap/bootstrap_mpi.h"
#include "util/log.h"
#include "util/wait.h"

#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BMPI_BUCKETS    1024
#define BMPI_GET_WAIT_S 1.0 /* a lazy get polls this long before UTIL_ERR_TIMEOUT */

/* ---- plugin loader ---------------------------------------------------------------- */
static const bootstrap_mpi_shim_t *bmpi_shim;
static int bmpi_load_failed; /* tried and failed: do not try again */
static char bmpi_why[512];   /* why it failed */

util_status_t bootstrap_mpi_fail(const char *what, int code)
{
    char text[256] = "";

    if (bmpi_shim != NULL) {
        bmpi_shim->error_string(code, text, sizeof(text));
    }
    util_error("MPI %s failed: %s", what, text[0] ? text : "(no MPI error text)");
    return UTIL_ERR_IO;
}

/* MPI_Initialized (and not finalized) of an MPI already in the process,
 * without a plugin: the symbols are looked up by name. */
static int bmpi_process_has_running_mpi(void)
{
    int (*initialized)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "MPI_Initialized");
    int (*finalized)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "MPI_Finalized");
    int i = 0, f = 0;

    if (initialized == NULL || initialized(&i) != 0) {
        return 0;
    }
    if (finalized != NULL) {
        finalized(&f);
    }
    return i && !f;
}

/* Which plugin: a name ("openmpi", "mpich") or, from RMB_MPI_PLUGIN, a path. */
static const char *bmpi_pick(char *why, size_t size)
{
    const char *forced = getenv("RMB_MPI_PLUGIN");
    int (*version)(char *, int *) =
        (int (*)(char *, int *))dlsym(RTLD_DEFAULT, "MPI_Get_library_version");

    if (forced != NULL && forced[0] != '\0') {
        return forced;
    }
    if (version != NULL) {
        static char text[8192]; /* MPICH's MPI_MAX_LIBRARY_VERSION_STRING */
        int len = 0;

        if (version(text, &len) == 0) {
            text[len > 0 && len < (int)sizeof(text) ? len : 0] = '\0';
            if (strstr(text, "Open MPI") != NULL) {
                return "openmpi";
            }
            if (strstr(text, "MPICH") != NULL) {
                return "mpich";
            }
            snprintf(why, size, "the process runs an MPI rmb has no plugin for (\"%.60s\")", text);
            return NULL;
        }
    }
    if (getenv("OMPI_COMM_WORLD_SIZE") != NULL) {
        return "openmpi";
    }
    if (getenv("PMI_RANK") != NULL || getenv("HYDRA_CONTROL_FD") != NULL) {
        return "mpich";
    }
    snprintf(why, size,
             "no MPI in the process and no MPI launcher in the environment "
             "(start with mpirun/mpiexec, or call MPI_Init first)");
    return NULL;
}

static void *bmpi_dlopen(const char *dir, const char *name, char *why, size_t size)
{
    char path[4096];
    void *handle;

    snprintf(path, sizeof(path), "%s/rmb_mpi_%s.so", dir, name);
    handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (handle == NULL && access(path, F_OK) == 0) {
        /* there, but it does not load: that is the message worth keeping */
        snprintf(why, size, "%s", dlerror());
    }
    return handle;
}

/* Loads the plugin once; quiet: keep the cause in bmpi_why unsaid. */
static const bootstrap_mpi_shim_t *bmpi_load(int quiet)
{
    char *why = bmpi_why, own_dir[4096] = "";
    const char *pick;
    void *handle = NULL;
    Dl_info info;
    bootstrap_mpi_shim_entry_t entry;
    const bootstrap_mpi_shim_t *shim;

    if (bmpi_shim != NULL) {
        return bmpi_shim;
    }
    if (bmpi_load_failed) {
        if (!quiet) {
            util_error("MPI: %s", bmpi_why);
        }
        return NULL;
    }
    why[0] = '\0';
    pick = bmpi_pick(why, sizeof(bmpi_why));
    if (pick != NULL && strchr(pick, '/') != NULL) {
        handle = dlopen(pick, RTLD_NOW | RTLD_GLOBAL);
        if (handle == NULL) {
            snprintf(why, sizeof(bmpi_why), "RMB_MPI_PLUGIN=%s: %s", pick, dlerror());
        }
    } else if (pick != NULL) {
        /* next to librmb (installed: $(libdir)/rmb = pkglibdir), the build
         * tree, the configured pkglibdir */
        if (dladdr((void *)bmpi_load, &info) != 0 && info.dli_fname != NULL) {
            const char *slash = strrchr(info.dli_fname, '/');
            if (slash != NULL) {
                snprintf(own_dir, sizeof(own_dir), "%.*s/rmb", (int)(slash - info.dli_fname),
                         info.dli_fname);
                handle = bmpi_dlopen(own_dir, pick, why, sizeof(bmpi_why));
            }
        }
#ifdef RMB_MPI_BUILD_DIR
        if (handle == NULL) {
            handle = bmpi_dlopen(RMB_MPI_BUILD_DIR, pick, why, sizeof(bmpi_why));
        }
#endif
#ifdef RMB_MPI_PLUGIN_DIR
        if (handle == NULL) {
            handle = bmpi_dlopen(RMB_MPI_PLUGIN_DIR, pick, why, sizeof(bmpi_why));
        }
#endif
        if (handle == NULL && why[0] == '\0') {
            snprintf(why, sizeof(bmpi_why),
                     "no rmb_mpi_%s.so (rmb was configured without %s; "
                     "see docs/btl_mpi.md)",
                     pick, pick);
        }
    }
    if (handle == NULL) {
        goto fail;
    }
    entry = (bootstrap_mpi_shim_entry_t)dlsym(handle, BOOTSTRAP_MPI_SHIM_ENTRY);
    shim = entry != NULL ? entry(BOOTSTRAP_MPI_SHIM_ABI) : NULL;
    if (shim == NULL) {
        snprintf(why, sizeof(bmpi_why), "the MPI plugin is from another rmb build (interface %u)",
                 BOOTSTRAP_MPI_SHIM_ABI);
        goto fail; /* never dlclose: MPI may be half-loaded through it */
    }
    if (shim->check(why, sizeof(bmpi_why)) != 0) {
        goto fail;
    }
    bmpi_shim = shim;
    util_debug("bootstrap/mpi: plugin %s loaded", shim->name);
    return shim;

fail:
    bmpi_load_failed = 1;
    if (!quiet) {
        util_error("MPI: %s", why);
    }
    return NULL;
}

const bootstrap_mpi_shim_t *bootstrap_mpi_shim(void)
{
    return bmpi_load(0);
}

int bootstrap_mpi_running(void)
{
    if (bmpi_shim == NULL) {
        /* quiet: the registry asks often; bootstrap_mpi_detected told why */
        if (!bmpi_process_has_running_mpi() || bmpi_load(1) == NULL) {
            return 0;
        }
    }
    return bmpi_shim->running();
}

int bootstrap_mpi_detected(void)
{
    if (bmpi_process_has_running_mpi()) {
        if (bmpi_load(1) != NULL) {
            return 1;
        }
        util_warn("MPI runs in this process, but %s: not using the MPI bootstrap", bmpi_why);
        return 0;
    }
    /* MPICH's hydra (PMI-1/2, no PMIx): without us every process would be a
     * singleton; with a plugin for it, MPI can be the bootstrap. */
    if (!bootstrap_pmix_detected() && getenv("PMI_RANK") != NULL && getenv("PMI_SIZE") != NULL) {
        return bmpi_load(1) != NULL;
    }
    return 0;
}

/* ---- job communicator (shared with btl/mpi) --------------------------------------- */
static int bmpi_comm_refs;
static int bmpi_rank, bmpi_size, bmpi_leader;

util_status_t bootstrap_mpi_comm_acquire(int *rank_p, int *size_p, int *leader_p)
{
    if (bmpi_comm_refs == 0) {
        int rc = bmpi_shim->comm_open(&bmpi_rank, &bmpi_size, &bmpi_leader);
        if (rc != 0) {
            return bootstrap_mpi_fail("MPI_Comm_dup/split_type of MPI_COMM_WORLD", rc);
        }
    }
    bmpi_comm_refs++;
    *rank_p = bmpi_rank;
    *size_p = bmpi_size;
    if (leader_p != NULL) {
        *leader_p = bmpi_leader;
    }
    return UTIL_OK;
}

util_status_t bootstrap_mpi_comm_release(void)
{
    int rc;

    if (bmpi_comm_refs == 0 || --bmpi_comm_refs > 0) {
        return UTIL_OK;
    }
    rc = bmpi_shim->comm_close();
    return rc != 0 ? bootstrap_mpi_fail("MPI_Comm_free", rc) : UTIL_OK;
}

/* ---- key-value table ------------------------------------------------------------- */
typedef struct bmpi_kv {
    struct bmpi_kv *next;
    int rank;
    size_t size;
    char key[BOOTSTRAP_KEY_MAX];
    char value[];
} bmpi_kv_t;

static bmpi_kv_t *bmpi_table[BMPI_BUCKETS];
static uint8_t *bmpi_staged; /* packed entries put since the last commit */
static size_t bmpi_staged_len, bmpi_staged_cap;
static uint64_t bmpi_pushes_sent;
static uint64_t *bmpi_pushes_seen; /* per rank */
static int bmpi_we_initialized;    /* we called MPI_Init: we call MPI_Finalize */

static unsigned bmpi_hash(int rank, const char *key)
{
    uint32_t h = 2166136261u ^ (uint32_t)rank;

    for (const char *c = key; *c != '\0'; c++) {
        h = (h ^ (uint8_t)*c) * 16777619u;
    }
    return h % BMPI_BUCKETS;
}

static bmpi_kv_t **bmpi_find(int rank, const char *key)
{
    bmpi_kv_t **link = &bmpi_table[bmpi_hash(rank, key)];

    while (*link != NULL && ((*link)->rank != rank || strcmp((*link)->key, key) != 0)) {
        link = &(*link)->next;
    }
    return link;
}

/* Later values of a key replace earlier ones, as with PMIx. */
static util_status_t bmpi_store(int rank, const char *key, const void *value, size_t size)
{
    bmpi_kv_t **link = bmpi_find(rank, key);
    bmpi_kv_t *kv = malloc(sizeof(*kv) + (size > 0 ? size : 1));

    if (kv == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    kv->rank = rank;
    kv->size = size;
    snprintf(kv->key, sizeof(kv->key), "%s", key);
    if (size > 0) {
        memcpy(kv->value, value, size);
    }
    if (*link != NULL) {
        kv->next = (*link)->next;
        free(*link);
    } else {
        kv->next = NULL;
    }
    *link = kv;
    return UTIL_OK;
}

static void bmpi_table_clear(void)
{
    for (int b = 0; b < BMPI_BUCKETS; b++) {
        while (bmpi_table[b] != NULL) {
            bmpi_kv_t *kv = bmpi_table[b];
            bmpi_table[b] = kv->next;
            free(kv);
        }
    }
}

/* Packed entry: u8 key length, key, u64 value size, value. */
static util_status_t bmpi_stage(const char *key, const void *value, size_t size)
{
    size_t klen = strlen(key), need = 1 + klen + 8 + size;
    uint64_t size64 = size;

    if (bmpi_staged_len + need > bmpi_staged_cap) {
        size_t cap = bmpi_staged_cap ? bmpi_staged_cap : 4096;
        uint8_t *grown;

        while (cap < bmpi_staged_len + need) {
            cap *= 2;
        }
        grown = realloc(bmpi_staged, cap);
        if (grown == NULL) {
            return UTIL_ERR_NO_MEMORY;
        }
        bmpi_staged = grown;
        bmpi_staged_cap = cap;
    }
    bmpi_staged[bmpi_staged_len] = (uint8_t)klen;
    memcpy(bmpi_staged + bmpi_staged_len + 1, key, klen);
    memcpy(bmpi_staged + bmpi_staged_len + 1 + klen, &size64, 8);
    if (size > 0) {
        memcpy(bmpi_staged + bmpi_staged_len + 1 + klen + 8, value, size);
    }
    bmpi_staged_len += need;
    return UTIL_OK;
}

/* Files one received push from source. */
static util_status_t bmpi_ingest(int source, const uint8_t *buf, size_t size)
{
    size_t pos = 0;

    bmpi_pushes_seen[source]++;
    while (pos < size) {
        char key[BOOTSTRAP_KEY_MAX];
        size_t klen = buf[pos];
        uint64_t vlen;
        util_status_t status;

        if (klen >= BOOTSTRAP_KEY_MAX || pos + 1 + klen + 8 > size) {
            util_error("bootstrap/mpi: malformed key push from rank %d", source);
            return UTIL_ERR_RUNTIME;
        }
        memcpy(key, buf + pos + 1, klen);
        key[klen] = '\0';
        memcpy(&vlen, buf + pos + 1 + klen, 8);
        if (vlen > size - (pos + 1 + klen + 8)) {
            util_error("bootstrap/mpi: malformed key push from rank %d", source);
            return UTIL_ERR_RUNTIME;
        }
        status = bmpi_store(source, key, buf + pos + 1 + klen + 8, (size_t)vlen);
        if (status != UTIL_OK) {
            return status;
        }
        pos += 1 + klen + 8 + (size_t)vlen;
    }
    return UTIL_OK;
}

/* Receives one push (from source, -1 any); *got_p says whether one came. */
static util_status_t bmpi_receive(int source, int block, int *got_p)
{
    void *buf = NULL;
    size_t size = 0;
    int from = -1, rc = bmpi_shim->push_recv(source, block, &from, &buf, &size);
    util_status_t status;

    *got_p = 0;
    if (rc != 0) {
        return bootstrap_mpi_fail("receive of published keys", rc);
    }
    if (buf == NULL) {
        return UTIL_OK;
    }
    status = bmpi_ingest(from, buf, size);
    free(buf);
    *got_p = 1;
    return status;
}

/* Files every push that has arrived. */
static util_status_t bmpi_drain(void)
{
    util_status_t status;
    int got = 1;

    while (got) {
        status = bmpi_receive(-1, 0, &got);
        if (status != UTIL_OK) {
            return status;
        }
    }
    return UTIL_OK;
}

/* Receives until every rank's pushes up to its count in the last
 * allgather have arrived. Collective. */
static util_status_t bmpi_collect(void)
{
    uint64_t *sent = malloc(sizeof(uint64_t) * (size_t)bmpi_size);
    util_status_t status = UTIL_OK;
    int rc, got;

    if (sent == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    rc = bmpi_shim->allgather(&bmpi_pushes_sent, sent, sizeof(uint64_t));
    if (rc != 0) {
        free(sent);
        return bootstrap_mpi_fail("MPI_Allgather", rc);
    }
    for (int r = 0; r < bmpi_size && status == UTIL_OK; r++) {
        while (r != bmpi_rank && bmpi_pushes_seen[r] < sent[r] && status == UTIL_OK) {
            status = bmpi_receive(r, 1, &got);
        }
    }
    free(sent);
    if (status == UTIL_OK && (rc = bmpi_shim->push_reap(0)) != 0) {
        status = bootstrap_mpi_fail("completion of key pushes", rc);
    }
    return status;
}

/* ---- flavour ----------------------------------------------------------------------- */
static util_status_t bmpi_init(bootstrap_job_t *job)
{
    int *leaders = NULL, rc;
    util_status_t status;

    if (bootstrap_mpi_shim() == NULL) {
        return UTIL_ERR_RUNTIME;
    }
    if (!bmpi_shim->running()) {
        rc = bmpi_shim->init();
        if (rc != 0) {
            return bootstrap_mpi_fail("MPI_Init_thread", rc);
        }
        bmpi_we_initialized = 1;
    }
    status = bootstrap_mpi_comm_acquire(&bmpi_rank, &bmpi_size, &bmpi_leader);
    if (status != UTIL_OK) {
        goto err_finalize;
    }
    leaders = malloc(sizeof(int) * (size_t)bmpi_size);
    job->node_of = malloc(sizeof(int) * (size_t)bmpi_size);
    bmpi_pushes_seen = calloc((size_t)bmpi_size, sizeof(uint64_t));
    if (leaders == NULL || job->node_of == NULL || bmpi_pushes_seen == NULL) {
        status = UTIL_ERR_NO_MEMORY;
        goto err_free;
    }
    rc = bmpi_shim->allgather(&bmpi_leader, leaders, sizeof(int));
    if (rc != 0) {
        status = bootstrap_mpi_fail("MPI_Allgather of node leaders", rc);
        goto err_free;
    }
    /* leader = lowest rank of the node: dense ids in rank order */
    for (int r = 0, next = 0; r < bmpi_size; r++) {
        job->node_of[r] = leaders[r] == r ? next++ : job->node_of[leaders[r]];
    }
    free(leaders);
    job->rank = bmpi_rank;
    job->size = bmpi_size;
    bmpi_pushes_sent = 0;
    return UTIL_OK;

err_free:
    free(leaders);
    free(job->node_of);
    job->node_of = NULL;
    free(bmpi_pushes_seen);
    bmpi_pushes_seen = NULL;
    bootstrap_mpi_comm_release();
err_finalize:
    if (bmpi_we_initialized) {
        bmpi_shim->finalize();
        bmpi_we_initialized = 0;
    }
    return status;
}

static util_status_t bmpi_finalize(void)
{
    /* Every push must be received before its send can complete: the last
     * finalize is collective anyway (it ends MPI use for the job). */
    util_status_t status = bmpi_collect(), s;
    int rc;

    s = bootstrap_mpi_comm_release();
    status = status != UTIL_OK ? status : s;
    bmpi_table_clear();
    free(bmpi_staged);
    bmpi_staged = NULL;
    bmpi_staged_len = bmpi_staged_cap = 0;
    free(bmpi_pushes_seen);
    bmpi_pushes_seen = NULL;
    if (bmpi_we_initialized) {
        bmpi_we_initialized = 0;
        rc = bmpi_shim->finalize();
        if (rc != 0 && status == UTIL_OK) {
            status = bootstrap_mpi_fail("MPI_Finalize", rc);
        }
    }
    return status;
}

static util_status_t bmpi_put(const char *key, const void *value, size_t size)
{
    util_status_t status = bmpi_store(bmpi_rank, key, value, size);

    return status != UTIL_OK ? status : bmpi_stage(key, value, size);
}

static util_status_t bmpi_commit(void)
{
    uint8_t *buf;
    int rc;

    if (bmpi_staged_len == 0 || bmpi_size == 1) {
        bmpi_staged_len = 0;
        return UTIL_OK;
    }
    /* the shim owns (and frees) what it pushes */
    buf = malloc(bmpi_staged_len);
    if (buf == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    memcpy(buf, bmpi_staged, bmpi_staged_len);
    rc = bmpi_shim->push(buf, bmpi_staged_len);
    bmpi_staged_len = 0;
    if (rc != 0) {
        return bootstrap_mpi_fail("push of published keys (MPI_Isend)", rc);
    }
    bmpi_pushes_sent++;
    rc = bmpi_shim->push_reap(0);
    return rc != 0 ? bootstrap_mpi_fail("completion of key pushes", rc) : UTIL_OK;
}

static util_status_t bmpi_fence(int collect_data)
{
    int rc;

    if (collect_data) {
        return bmpi_collect();
    }
    rc = bmpi_shim->barrier();
    return rc != 0 ? bootstrap_mpi_fail("MPI_Barrier", rc) : UTIL_OK;
}

/* MPI_Ibarrier, serving while it is open. MPI moves it only inside MPI
 * calls, so the wait polls as MPI_Barrier does; idle, it relaxes by the
 * library's policy (spin, yield, nap: util/wait.h). */
static util_status_t bmpi_fence_serving(bootstrap_serve_fn_t serve, void *arg)
{
    util_wait_t idle = UTIL_WAIT_INIT;
    void *req = NULL;
    int rc, done = 0;

    rc = bmpi_shim->ibarrier(&req);
    while (rc == 0 && (rc = bmpi_shim->test(req, &done)) == 0 && !done) {
        if (!serve(arg)) {
            util_wait_relax(&idle);
        }
    }
    return rc != 0 ? bootstrap_mpi_fail("MPI_Ibarrier", rc) : UTIL_OK;
}

static double bmpi_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static util_status_t bmpi_get(int rank, const char *key, void *buf, size_t bufsize, size_t *size_p)
{
    bmpi_kv_t *kv = *bmpi_find(rank, key);
    double deadline = 0;
    util_status_t status;
    unsigned polls = 0;

    if (kv == NULL && rank == bmpi_rank) {
        return UTIL_ERR_NOT_FOUND;
    }
    /* what arrived since, even for a key we hold: it may have been re-put */
    if (rank != bmpi_rank) {
        status = bmpi_drain();
        if (status != UTIL_OK) {
            return status;
        }
        kv = *bmpi_find(rank, key);
    }
    while (kv == NULL) {
        int got = 0;

        if (deadline == 0) {
            deadline = bmpi_now() + BMPI_GET_WAIT_S;
        } else if (bmpi_now() > deadline) {
            util_debug("bootstrap/mpi: \"%s\" of rank %d not published (yet)", key, rank);
            return UTIL_ERR_TIMEOUT;
        }
        status = bmpi_receive(-1, 0, &got);
        if (status != UTIL_OK) {
            return status;
        }
        if (got) {
            kv = *bmpi_find(rank, key);
        } else if (++polls % 64 == 0) {
            /* ranks outnumber cores in tests: let the publisher run */
            struct timespec pause = {0, 20000};
            nanosleep(&pause, NULL);
        } else {
            sched_yield();
        }
    }
    if (kv->size > bufsize) {
        return UTIL_ERR_TRUNCATED;
    }
    if (kv->size > 0) {
        memcpy(buf, kv->value, kv->size);
    }
    *size_p = kv->size;
    return UTIL_OK;
}

int bootstrap_mpi_thread_allowed(void)
{
    int level = bmpi_shim != NULL ? bmpi_shim->thread_level() : 0;

    return (bmpi_we_initialized && level >= 2) || level == 3;
}

util_status_t bootstrap_mpi_allgather(const void *in, void *out, size_t size)
{
    int rc = bmpi_shim->allgather(in, out, size);

    return rc != 0 ? bootstrap_mpi_fail("MPI_Allgather", rc) : UTIL_OK;
}

__attribute__((noreturn)) static void bmpi_abort(int code, const char *msg)
{
    if (msg != NULL && msg[0] != '\0' && code != 0) {
        fprintf(stderr, "rmb[pe %d]: %s\n", bmpi_rank, msg);
    }
    fflush(stdout);
    fflush(stderr);
    bmpi_shim->abort(code);
}

const bootstrap_flavour_ops_t bootstrap_mpi_ops = {
    .name = "mpi",
    .init = bmpi_init,
    .finalize = bmpi_finalize,
    .put = bmpi_put,
    .commit = bmpi_commit,
    .fence = bmpi_fence,
    .fence_serving = bmpi_fence_serving,
    .get = bmpi_get,
    .get_latest = bmpi_get, /* not used: allgather is MPI_Allgather */
    .abort = bmpi_abort,
};
