/*
 * Singleton flavour: a program started without a launcher is a 1-rank job.
 * Key-value pairs live in a small local list so put/get of own keys works
 * the same as under a launcher.
 */
#include "bootstrap/bootstrap_flavour.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct bootstrap_singleton_kv {
    struct bootstrap_singleton_kv *next;
    char key[BOOTSTRAP_KEY_MAX];
    size_t size;
    char value[];
} bootstrap_singleton_kv_t;

static bootstrap_singleton_kv_t *bootstrap_singleton_store;

static util_status_t bootstrap_singleton_init(bootstrap_job_t *job)
{
    job->rank = 0;
    job->size = 1;
    job->node_of = calloc(1, sizeof(int));
    return job->node_of ? UTIL_OK : UTIL_ERR_NO_MEMORY;
}

static util_status_t bootstrap_singleton_finalize(void)
{
    while (bootstrap_singleton_store != NULL) {
        bootstrap_singleton_kv_t *kv = bootstrap_singleton_store;
        bootstrap_singleton_store = kv->next;
        free(kv);
    }
    return UTIL_OK;
}

static bootstrap_singleton_kv_t **bootstrap_singleton_find(const char *key)
{
    bootstrap_singleton_kv_t **link = &bootstrap_singleton_store;

    while (*link != NULL && strcmp((*link)->key, key) != 0) {
        link = &(*link)->next;
    }
    return link;
}

static util_status_t bootstrap_singleton_put(const char *key, const void *value, size_t size)
{
    bootstrap_singleton_kv_t **link = bootstrap_singleton_find(key);
    bootstrap_singleton_kv_t *kv = malloc(sizeof(*kv) + size);

    if (kv == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    snprintf(kv->key, sizeof(kv->key), "%s", key);
    kv->size = size;
    if (size > 0) {
        memcpy(kv->value, value, size);
    }
    if (*link != NULL) { /* replace: later puts of a key win, as with PMIx */
        kv->next = (*link)->next;
        free(*link);
    } else {
        kv->next = NULL;
    }
    *link = kv;
    return UTIL_OK;
}

static util_status_t bootstrap_singleton_nothing(void)
{
    return UTIL_OK;
}

static util_status_t bootstrap_singleton_fence(int collect_data)
{
    return UTIL_OK;
}

static util_status_t bootstrap_singleton_fence_serving(bootstrap_serve_fn_t serve, void *arg)
{
    (void)serve; /* no other rank to wait for */
    (void)arg;
    return UTIL_OK;
}

static util_status_t bootstrap_singleton_get(int rank, const char *key, void *buf, size_t bufsize,
                                             size_t *size_p)
{
    bootstrap_singleton_kv_t *kv = *bootstrap_singleton_find(key);

    if (kv == NULL) {
        return UTIL_ERR_NOT_FOUND;
    }
    if (kv->size > bufsize) {
        return UTIL_ERR_TRUNCATED;
    }
    memcpy(buf, kv->value, kv->size);
    *size_p = kv->size;
    return UTIL_OK;
}

__attribute__((noreturn)) static void bootstrap_singleton_abort(int code, const char *msg)
{
    if (code != 0) { /* 0: a deliberate successful end, nothing to report */
        fprintf(stderr, "rmb: job aborted with status %d%s%s\n", code, msg ? ": " : "",
                msg ? msg : "");
        fflush(stderr);
    }
    fflush(stdout);
    _exit(code);
}

const bootstrap_flavour_ops_t bootstrap_singleton_ops = {
    .name = "singleton",
    .init = bootstrap_singleton_init,
    .finalize = bootstrap_singleton_finalize,
    .put = bootstrap_singleton_put,
    .commit = bootstrap_singleton_nothing,
    .fence = bootstrap_singleton_fence,
    .fence_serving = bootstrap_singleton_fence_serving,
    .get = bootstrap_singleton_get,
    .get_latest = bootstrap_singleton_get, /* a put replaces the value */
    .abort = bootstrap_singleton_abort,
};
