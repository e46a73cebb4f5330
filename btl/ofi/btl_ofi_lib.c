/*
 * libfabric, opened the first time btl/ofi is used rather than linked into
 * librmb. Debian's libfabric.so.1 needs libpsm2 and libinfinipath, whose
 * constructors time the CPU clock with about 100 ms of sleeps each in every
 * process that loads them: linked, every PE paid 0.2 s at start-up, also in
 * jobs that never leave their node or that reach other nodes over UCX.
 * btl/ofi calls the library's few real entry points through btl_ofi_lib;
 * the rest of libfabric's API is inline, through the objects' ops tables.
 */
#include "btl/ofi/btl_ofi.h"
#include "util/env.h"
#include "util/log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#ifndef RMB_OFI_LIBRARY
#define RMB_OFI_LIBRARY "libfabric.so.1"
#endif

btl_ofi_lib_t btl_ofi_lib;

static pthread_once_t btl_ofi_lib_once = PTHREAD_ONCE_INIT;
static util_status_t btl_ofi_lib_status = UTIL_ERR_UNSUPPORTED;
static char btl_ofi_lib_why[256];

static void *btl_ofi_lib_sym(void *handle, const char *path, const char *name)
{
    void *sym = dlsym(handle, name);

    if (sym == NULL && btl_ofi_lib_why[0] == '\0') {
        snprintf(btl_ofi_lib_why, sizeof(btl_ofi_lib_why), "%s has no %s", path, name);
    }
    return sym;
}

static void btl_ofi_lib_load(void)
{
    const char *path = NULL;
    void *handle;
    btl_ofi_lib_t lib;

    if (util_env_get_string("RMB_OFI_LIBRARY", &path) != UTIL_OK || path == NULL ||
        path[0] == '\0') {
        path = RMB_OFI_LIBRARY;
    }
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *err = dlerror();

        snprintf(btl_ofi_lib_why, sizeof(btl_ofi_lib_why), "%s", err != NULL ? err : path);
        return;
    }
    /* the default version of each symbol: the ABI of the headers we built with */
    *(void **)&lib.getinfo = btl_ofi_lib_sym(handle, path, "fi_getinfo");
    *(void **)&lib.freeinfo = btl_ofi_lib_sym(handle, path, "fi_freeinfo");
    *(void **)&lib.dupinfo = btl_ofi_lib_sym(handle, path, "fi_dupinfo");
    *(void **)&lib.fabric = btl_ofi_lib_sym(handle, path, "fi_fabric");
    *(void **)&lib.strerror = btl_ofi_lib_sym(handle, path, "fi_strerror");
    *(void **)&lib.version = btl_ofi_lib_sym(handle, path, "fi_version");
    if (btl_ofi_lib_why[0] != '\0') {
        dlclose(handle);
        return;
    }
    btl_ofi_lib = lib; /* kept open for the life of the process */
    btl_ofi_lib_status = UTIL_OK;
}

util_status_t btl_ofi_lib_open(void)
{
    pthread_once(&btl_ofi_lib_once, btl_ofi_lib_load);
    if (btl_ofi_lib_status != UTIL_OK) {
        util_error("btl/ofi: cannot load libfabric (RMB_OFI_LIBRARY): %s", btl_ofi_lib_why);
    }
    return btl_ofi_lib_status;
}
