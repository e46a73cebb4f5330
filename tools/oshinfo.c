/*
 * oshinfo: what this rmb is and what it can use here, for users and for
 * scripts (--parsable). Everything comes from the library itself: the
 * version and build settings compiled in, the backends through btl's
 * registry (btl_describe: each backend says what it finds on this
 * machine), and the environment variables from the one table in
 * util/env.c, so nothing here can drift from what a program would do.
 * Needs no job: no bootstrap, no PMIx server.
 */
#include "config.h"
#include "btl/btl.h"
#include "util/env.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OSHINFO_SPEC "1.5" /* the OpenSHMEM version shmem.h declares */

typedef struct {
    int parsable;
    const char *last; /* human output: the backend whose line is open */
} oshinfo_t;

static void oshinfo_usage(FILE *out)
{
    fprintf(out, "usage: oshinfo [--all] [--param NAME] [--parsable]\n"
                 "\n"
                 "Prints the version of rmb and of OpenSHMEM, how this rmb was built (prefix,\n"
                 "compiler, flags, backends and bootstraps compiled in) and what it can use on\n"
                 "this machine now (shared memory, libfabric providers with RDM, RMA and\n"
                 "atomics, UCX transports, RDMA devices, MPI plugins).\n"
                 "\n"
                 "  -a, --all           also every environment variable: type, default,\n"
                 "                      current value and meaning\n"
                 "  --param NAME        only the environment variable NAME (exit 1 if there\n"
                 "                      is no such variable)\n"
                 "  --parsable          one \"section:name:field:value\" line per fact\n"
                 "  -h, --help          this text\n"
                 "  -V, --version       the version only\n");
}

static void oshinfo_fact(const oshinfo_t *info, const char *section, const char *name,
                         const char *field, const char *value)
{
    if (info->parsable) {
        printf("%s:%s:%s:%s\n", section, name, field, value);
    } else {
        printf("  %-12s: %s\n", field, value);
    }
}

static void oshinfo_version(const oshinfo_t *info)
{
    if (info->parsable) {
        printf("version:rmb::%s\n", PACKAGE_VERSION);
        printf("version:openshmem::%s\n", OSHINFO_SPEC);
    } else {
        printf("rmb %s (OpenSHMEM %s)\n", PACKAGE_VERSION, OSHINFO_SPEC);
    }
}

static void oshinfo_build(const oshinfo_t *info)
{
    const char *backends = ""
#if RMB_HAVE_BTL_SHM
                           "shm "
#endif
#if RMB_HAVE_BTL_UCX
                           "ucx "
#endif
#if RMB_HAVE_BTL_OFI
                           "ofi "
#endif
#if RMB_HAVE_BTL_VERBS
                           "verbs "
#endif
#if RMB_HAVE_MPI
                           "mpi "
#endif
        ;
    const char *bootstraps = "pmix singleton"
#if RMB_HAVE_MPI
                             " mpi"
#endif
        ;
    char list[128];

    if (!info->parsable) {
        printf("build:\n");
    }
    oshinfo_fact(info, "build", "", "prefix", OSHINFO_PREFIX);
    oshinfo_fact(info, "build", "", "bindir", OSHINFO_BINDIR);
    oshinfo_fact(info, "build", "", "libdir", OSHINFO_LIBDIR);
    oshinfo_fact(info, "build", "", "includedir", OSHINFO_INCLUDEDIR);
    oshinfo_fact(info, "build", "", "compiler", RMB_BUILD_CC);
    oshinfo_fact(info, "build", "", "cflags", RMB_BUILD_CFLAGS);
    oshinfo_fact(info, "build", "", "configure", RMB_CONFIGURE_ARGS);
    snprintf(list, sizeof(list), "%s", backends);
    if (list[0] != '\0') {
        list[strlen(list) - 1] = '\0'; /* the last space */
    }
    oshinfo_fact(info, "build", "", "backends", list);
    oshinfo_fact(info, "build", "", "bootstraps", bootstraps);
    oshinfo_fact(info, "build", "", "launcher", "oshrun (embedded PMIx server); srun --mpi=pmix");
}

/* btl_describe's callback: one fact of one backend. */
static void oshinfo_backend_fact(void *arg, const char *backend, const char *what,
                                 const char *value)
{
    oshinfo_t *info = arg;

    if (info->parsable) {
        printf("backend:%s:%s:%s\n", backend, what, value);
        return;
    }
    if (info->last == NULL || strcmp(info->last, backend) != 0) {
        printf("  %s\n", backend);
        info->last = backend;
    }
    printf("    %-10s: %s\n", what, value);
}

static void oshinfo_env_var(const oshinfo_t *info, const util_env_var_t *var)
{
    const char *set = getenv(var->name);
    const char *value = set != NULL ? set : var->default_value;
    const char *type = util_env_type_name(var->type);
    int valid = util_env_valid(var->type, value);

    if (info->parsable) {
        printf("env:%s:type:%s\n", var->name, type);
        printf("env:%s:layer:%s\n", var->name, var->layer);
        printf("env:%s:default:%s\n", var->name, var->default_value);
        printf("env:%s:value:%s\n", var->name, value);
        printf("env:%s:source:%s\n", var->name,
               set != NULL ? (valid ? "environment" : "invalid") : "default");
        printf("env:%s:help:%s\n", var->name, var->help);
        return;
    }
    printf("  %s (%s, %s) = \"%s\"%s, default \"%s\"\n      %s\n", var->name, type, var->layer,
           value,
           set == NULL ? " (default)"
           : valid     ? " (set)"
                       : " (set, NOT VALID)",
           var->default_value, var->help);
}

static void oshinfo_env_all(const oshinfo_t *info)
{
    if (!info->parsable) {
        printf("environment variables (%d; %s):\n", util_env_count(), "rmb(7) describes them");
    }
    for (int i = 0; i < util_env_count(); i++) {
        oshinfo_env_var(info, util_env_at(i));
    }
}

int main(int argc, char **argv)
{
    oshinfo_t info = {0, NULL};
    const char *param = NULL;
    int all = 0;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];

        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            oshinfo_usage(stdout);
            return 0;
        } else if (strcmp(arg, "-V") == 0 || strcmp(arg, "--version") == 0) {
            printf("oshinfo (rmb) %s\n", PACKAGE_VERSION);
            return 0;
        } else if (strcmp(arg, "-a") == 0 || strcmp(arg, "--all") == 0) {
            all = 1;
        } else if (strcmp(arg, "--parsable") == 0 || strcmp(arg, "--parseable") == 0) {
            info.parsable = 1;
        } else if (strcmp(arg, "--param") == 0 && i + 1 < argc) {
            param = argv[++i];
        } else if (strncmp(arg, "--param=", 8) == 0) {
            param = arg + 8;
        } else {
            fprintf(stderr,
                    "oshinfo: unknown option or missing value: '%s' (oshinfo --help for usage)\n",
                    arg);
            return 2;
        }
    }
    if (param != NULL) {
        const util_env_var_t *var = util_env_row(param);

        if (var == NULL) {
            fprintf(stderr, "oshinfo: no environment variable %s (oshinfo --all lists them)\n",
                    param);
            return 1;
        }
        oshinfo_env_var(&info, var);
        return 0;
    }
    oshinfo_version(&info);
    oshinfo_build(&info);
    if (!info.parsable) {
        printf("backends on this machine now:\n");
    }
    fflush(stdout);
    {
        int level = util_log_level;

        util_log_level = UTIL_LOG_ERROR; /* backends probing this machine: facts, not warnings */
        btl_describe(oshinfo_backend_fact, &info);
        util_log_level = level;
    }
    if (all) {
        oshinfo_env_all(&info);
        util_env_check_unknown();
    }
    return 0;
}
