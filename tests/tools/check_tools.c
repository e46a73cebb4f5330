/*
 * The tools around the library, as a user meets them: oshinfo's output
 * (version, build, backends, every variable of the env table, --param,
 * --parsable), the man pages (rmb(7) lists every row of the table),
 * oshcc's --showme forms and a program calling powl built with it, and
 * oshrun's conventions: 128+signal for a crashed PE with the PE and the
 * signal named, -np/-x/--oversubscribe/--allow-run-as-root/--tag-output,
 * --map-by onto emulated nodes, --bind-to. Every job runs under a time
 * limit with a private TMPDIR that must be empty afterwards.
 */
#define _GNU_SOURCE
#include "config.h"
#include "tests/common/mp_run.h"
#include "util/env.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG    "tools/mp_tools"
#define OUT_MAX (1 << 18)

typedef struct {
    int status;
    char out[OUT_MAX];
    char err[OUT_MAX];
} run_t;

static char tmp_dir[PATH_MAX];
static char *shm_before;
static run_t run_result; /* large: not on the stack */

/* One private directory per test case, made and removed by the process
 * that forks the tests (unchecked fixtures), so that a failing test, whose
 * checked teardown does not run, leaves nothing behind either. It is the
 * jobs' TMPDIR: oshrun's private directory must be gone after each job. */
static void case_setup(void)
{
    snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/rmb-tools.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
    setenv("TMPDIR", tmp_dir, 1);
}

/* What the tests write themselves (names given to tmp_path). */
static const char *const made[] = {"out", "err", "powl", "powl.o", NULL};

static void remove_made(void)
{
    for (int i = 0; made[i] != NULL; i++) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/%s", tmp_dir, made[i]);
        unlink(path);
    }
}

static void remove_tree(const char *path)
{
    DIR *dir = opendir(path);
    struct dirent *entry;

    while (dir != NULL && (entry = readdir(dir)) != NULL) {
        char child[PATH_MAX + 256];
        struct stat st;

        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) {
            continue;
        }
        snprintf(child, sizeof(child), "%s/%s", path, entry->d_name);
        if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode)) {
            remove_tree(child);
        } else {
            unlink(child);
        }
    }
    if (dir != NULL) {
        closedir(dir);
    }
    rmdir(path);
}

static void case_teardown(void)
{
    remove_tree(tmp_dir); /* what a failed test may have left */
    unsetenv("TMPDIR");
}

static void setup(void)
{
    shm_before = mp_shm_snapshot();
}

/* After each passing test: nothing but the test's own files in tmp_dir,
 * nothing new in /dev/shm, no PE alive. */
static void teardown(void)
{
    DIR *dir = opendir(tmp_dir);
    struct dirent *entry;
    int left = 0;

    remove_made();
    while (dir != NULL && (entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) {
            fprintf(stderr, "left in %s: %s\n", tmp_dir, entry->d_name);
            left++;
        }
    }
    if (dir != NULL) {
        closedir(dir);
    }
    ck_assert_int_eq(left, 0);
    ck_assert_int_eq(mp_shm_new_entries(shm_before), 0);
    ck_assert_int_eq(mp_count_alive(PROG), 0);
    free(shm_before);
}

static const char *tmp_path(const char *name)
{
    static char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/%s", tmp_dir, name);
    return path;
}

static void read_file(const char *path, char *buf)
{
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, OUT_MAX - 1) : -1;

    buf[n > 0 ? n : 0] = '\0';
    if (fd >= 0) {
        close(fd);
    }
}

/* Runs argv with stdout and stderr in files; the result in run_result. */
static run_t *run(char *const argv[], double limit_s)
{
    char out_path[PATH_MAX + 16], err_path[PATH_MAX + 16];
    int out_fd, err_fd, saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);

    snprintf(out_path, sizeof(out_path), "%s", tmp_path("out"));
    snprintf(err_path, sizeof(err_path), "%s", tmp_path("err"));
    out_fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert(out_fd >= 0 && err_fd >= 0);
    fflush(stdout);
    fflush(stderr);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    run_result.status = mp_run(argv, limit_s, NULL);
    dup2(saved_out, STDOUT_FILENO);
    dup2(saved_err, STDERR_FILENO);
    close(saved_out);
    close(saved_err);
    close(out_fd);
    close(err_fd);
    read_file(out_path, run_result.out);
    read_file(err_path, run_result.err);
    fprintf(stderr, "--- %s ...: status %d\n--- stdout:\n%s--- stderr:\n%s", argv[0],
            run_result.status, run_result.out, run_result.err);
    ck_assert_msg(run_result.status != MP_RUN_TIMEOUT, "%s: killed at the time limit", argv[0]);
    return &run_result;
}

#define ARGV(...) ((char *[]){__VA_ARGS__, NULL})

static void assert_has(const char *text, const char *what)
{
    ck_assert_msg(strstr(text, what) != NULL, "missing: \"%s\"", what);
}

static char *oshrun(void)
{
    return getenv("OSHRUN");
}
static char *prog(void)
{
    static char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s", mp_test_path(PROG));
    return path;
}

/* ---- oshinfo ------------------------------------------------------------------------ */

START_TEST(test_oshinfo_version_help)
{
    run_t *r = run(ARGV(TOOLS_OSHINFO, "--version"), 20);

    ck_assert_int_eq(r->status, 0);
    ck_assert_str_eq(r->out, "oshinfo (rmb) " PACKAGE_VERSION "\n");
    r = run(ARGV(TOOLS_OSHINFO, "--help"), 20);
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "--param NAME");
    assert_has(r->out, "--parsable");
    r = run(ARGV(TOOLS_OSHINFO, "--bogus"), 20);
    ck_assert_int_eq(r->status, 2);
    ck_assert_int_eq(mp_count_lines(r->err, "oshinfo: "), 1);
}
END_TEST

START_TEST(test_oshinfo_default)
{
    static const char *const built[] = {
#if RMB_HAVE_BTL_SHM
        "shm",
#endif
#if RMB_HAVE_BTL_UCX
        "ucx",
#endif
#if RMB_HAVE_BTL_OFI
        "ofi",
#endif
#if RMB_HAVE_BTL_VERBS
        "verbs",
#endif
#if RMB_HAVE_MPI
        "mpi",
#endif
        NULL
    };
    run_t *r = run(ARGV(TOOLS_OSHINFO), 60);
    char line[128];

    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "rmb " PACKAGE_VERSION " (OpenSHMEM 1.5)\n");
    assert_has(r->out, "  compiler    : " RMB_BUILD_CC "\n");
    assert_has(r->out, "backends on this machine now:\n");
    ck_assert_ptr_null(strstr(r->out, "environment variables"));

    r = run(ARGV(TOOLS_OSHINFO, "--parsable"), 60);
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "version:rmb::" PACKAGE_VERSION "\n");
    assert_has(r->out, "version:openshmem::1.5\n");
    assert_has(r->out, "build::cflags:" RMB_BUILD_CFLAGS "\n");
    assert_has(r->out, "build::bootstraps:pmix singleton");
    /* shm works wherever the tests run; every backend built is described */
    assert_has(r->out, "backend:shm:usable:yes\n");
    assert_has(r->out, "backend:shm:segments:memfd_create: works\n");
    for (int i = 0; built[i] != NULL; i++) {
        snprintf(line, sizeof(line), "backend:%s:usable:", built[i]);
        ck_assert_int_eq(mp_count_lines(r->out, line), 1);
    }
#if RMB_HAVE_BTL_OFI
    /* tcp;ofi_rxm is how the tests reach other nodes: it must be found */
    assert_has(r->out, "backend:ofi:provider:tcp;ofi_rxm (domain lo): RDM, RMA, atomics\n");
#endif
#if RMB_HAVE_BTL_UCX
    assert_has(r->out, "backend:ucx:transport:tcp/lo\n");
#endif
}
END_TEST

START_TEST(test_oshinfo_all)
{
    run_t *r;
    char line[1024];

    setenv("RMB_LOG_LEVEL", "info", 1);
    r = run(ARGV(TOOLS_OSHINFO, "--all", "--parsable"), 60);
    ck_assert_int_eq(r->status, 0);
    ck_assert_int_eq(mp_count_lines(r->out, ":help:"), util_env_count());
    for (int i = 0; i < util_env_count(); i++) {
        const util_env_var_t *var = util_env_at(i);

        snprintf(line, sizeof(line), "env:%s:type:%s\n", var->name, util_env_type_name(var->type));
        assert_has(r->out, line);
        snprintf(line, sizeof(line), "env:%s:default:%s\n", var->name, var->default_value);
        assert_has(r->out, line);
        snprintf(line, sizeof(line), "env:%s:help:%s\n", var->name, var->help);
        assert_has(r->out, line);
    }
    assert_has(r->out, "env:RMB_LOG_LEVEL:value:info\n");
    assert_has(r->out, "env:RMB_LOG_LEVEL:source:environment\n");
    assert_has(r->out, "env:SHMEM_SYMMETRIC_SIZE:source:default\n");

    r = run(ARGV(TOOLS_OSHINFO, "--all"), 60);
    ck_assert_int_eq(r->status, 0);
    snprintf(line, sizeof(line), "environment variables (%d;", util_env_count());
    assert_has(r->out, line);
    assert_has(r->out, "  RMB_LOG_LEVEL (string, util) = \"info\" (set), default \"warn\"\n");
}
END_TEST

START_TEST(test_oshinfo_param)
{
    run_t *r;

    setenv("SHMEM_SYMMETRIC_SIZE", "64M", 1);
    r = run(ARGV(TOOLS_OSHINFO, "--param", "SHMEM_SYMMETRIC_SIZE", "--parsable"), 20);
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "env:SHMEM_SYMMETRIC_SIZE:type:size\n");
    assert_has(r->out, "env:SHMEM_SYMMETRIC_SIZE:value:64M\n");
    assert_has(r->out, "env:SHMEM_SYMMETRIC_SIZE:source:environment\n");
    ck_assert_int_eq(mp_count_lines(r->out, "env:"), 6); /* that variable only */

    r = run(ARGV(TOOLS_OSHINFO, "--param", "SHMEM_SYMMETRIC_SIZE"), 20);
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "SHMEM_SYMMETRIC_SIZE (size, shmem) = \"64M\" (set)");

    setenv("SHMEM_SYMMETRIC_SIZE", "lots", 1);
    r = run(ARGV(TOOLS_OSHINFO, "--param=SHMEM_SYMMETRIC_SIZE", "--parsable"), 20);
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "env:SHMEM_SYMMETRIC_SIZE:source:invalid\n");

    r = run(ARGV(TOOLS_OSHINFO, "--param", "RMB_NO_SUCH_THING"), 20);
    ck_assert_int_eq(r->status, 1);
    ck_assert_int_eq(mp_count_lines(r->err, "no environment variable RMB_NO_SUCH_THING"), 1);
}
END_TEST

/* ---- man pages ---------------------------------------------------------------------- */

START_TEST(test_man_pages)
{
    static const char *const pages[] = {"oshrun.1", "oshcc.1", "oshc++.1", "oshinfo.1", "rmb.7"};
    static char text[OUT_MAX];
    char path[PATH_MAX], line[256];

    for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", TOOLS_MAN_DIR, pages[i]);
        ck_assert_msg(stat(path, &st) == 0 && st.st_size > 0, "no man page %s", path);
    }
    /* rmb(7) has a entry for every row of the table the library parses */
    snprintf(path, sizeof(path), "%s/rmb.7", TOOLS_MAN_DIR);
    read_file(path, text);
    ck_assert_int_eq(mp_count_lines(text, ".TP"), util_env_count());
    for (int i = 0; i < util_env_count(); i++) {
        snprintf(line, sizeof(line), "\n.B %s\n(%s; default: ", util_env_at(i)->name,
                 util_env_type_name(util_env_at(i)->type));
        assert_has(text, line);
    }
    snprintf(path, sizeof(path), "%s/oshrun.1", TOOLS_MAN_DIR);
    read_file(path, text);
    assert_has(text, "\\-\\-tag\\-output");
    assert_has(text, "\\-\\-map\\-by");
    assert_has(text, "128+signal");
    snprintf(path, sizeof(path), "%s/oshc++.1", TOOLS_MAN_DIR);
    read_file(path, text);
    ck_assert_str_eq(text, ".so man1/oshcc.1\n");
}
END_TEST

/* ---- oshcc ------------------------------------------------------------------------- */

START_TEST(test_oshcc_showme)
{
    run_t *r = run(ARGV(TOOLS_OSHCC, "--showme:link"), 20);

    ck_assert_int_eq(r->status, 0);
    /* a sanitizer build adds its flags after these */
    ck_assert_int_eq(
        strncmp(r->out, "-L" TOOLS_LIBDIR " -Wl,-rpath," TOOLS_LIBDIR " -lrmb -lm -pthread",
                strlen("-L" TOOLS_LIBDIR " -Wl,-rpath," TOOLS_LIBDIR " -lrmb -lm -pthread")),
        0);
    r = run(ARGV(TOOLS_OSHCC, "--showme:compile"), 20);
    ck_assert_str_eq(r->out, "-I" TOOLS_SRCDIR "/shmem -I" TOOLS_SRCDIR "/rpipe -pthread\n");
    r = run(ARGV(TOOLS_OSHCC, "--showme:incdirs"), 20);
    ck_assert_str_eq(r->out, TOOLS_SRCDIR "/shmem " TOOLS_SRCDIR "/rpipe\n");
    r = run(ARGV(TOOLS_OSHCC, "--showme:libdirs"), 20);
    ck_assert_str_eq(r->out, TOOLS_LIBDIR "\n");
    r = run(ARGV(TOOLS_OSHCC, "-showme:libs"), 20);
    ck_assert_str_eq(r->out, "rmb m\n");
    r = run(ARGV(TOOLS_OSHCC, "--showme:version"), 20);
    ck_assert_str_eq(r->out,
                     "oshcc-uninstalled: rmb " PACKAGE_VERSION " (OpenSHMEM 1.5, Language: C)\n");
    r = run(ARGV(TOOLS_OSHCXX, "--showme:version"), 20);
    assert_has(r->out, "(OpenSHMEM 1.5, Language: C++)\n");
    /* the whole command: the user's arguments, then ours; no link flags
     * when nothing is linked */
    r = run(ARGV(TOOLS_OSHCC, "--showme", "-O2", "x.c", "-o", "x"), 20);
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, " -O2 x.c -o x -I" TOOLS_SRCDIR "/shmem ");
    assert_has(r->out, " -lrmb -lm -pthread");
    r = run(ARGV(TOOLS_OSHCC, "-showme", "-c", "x.c"), 20);
    assert_has(r->out, " -c x.c -I");
    ck_assert_ptr_null(strstr(r->out, "-lrmb"));
    r = run(ARGV(TOOLS_OSHCC, "--showme"), 20);
    assert_has(r->out, "-lrmb");
    r = run(ARGV(TOOLS_OSHCC, "--showme:bogus"), 20);
    ck_assert_int_eq(r->status, 1);
    ck_assert_int_eq(mp_count_lines(r->err, "unrecognized option"), 1);
    /* Fortran: one line, status 1, the compiler never runs */
    r = run(ARGV(TOOLS_OSHCC, "-o", "x", "x.f90"), 20);
    ck_assert_int_eq(r->status, 1);
    ck_assert_int_eq(mp_count_lines(r->err, "Fortran is not supported"), 1);
    ck_assert_int_eq(mp_count_lines(r->err, ""), 1);
}
END_TEST

START_TEST(test_oshcc_powl)
{
    char exe[PATH_MAX + 16], obj[PATH_MAX + 16];
    run_t *r;

    snprintf(exe, sizeof(exe), "%s", tmp_path("powl"));
    snprintf(obj, sizeof(obj), "%s", tmp_path("powl.o"));
    r = run(ARGV(TOOLS_OSHCC, "-O2", "-o", exe, TOOLS_SRCDIR "/tests/tools/powl_prog.c"), 120);
    ck_assert_int_eq(r->status, 0);
    r = run(ARGV(oshrun(), "-n", "2", exe), 60);
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "PE 0 of 2: powl 1024\n");
    assert_has(r->out, "PE 1 of 2: powl 1024\n");
    /* compile, then link, separately */
    unlink(exe);
    r = run(ARGV(TOOLS_OSHCC, "-c", "-o", obj, TOOLS_SRCDIR "/tests/tools/powl_prog.c"), 120);
    ck_assert_int_eq(r->status, 0);
    r = run(ARGV(TOOLS_OSHCC, "-o", exe, obj), 120);
    ck_assert_int_eq(r->status, 0);
    ck_assert_int_eq(access(exe, X_OK), 0);
    /* -E and -M find shmem.h and link nothing */
    r = run(ARGV(TOOLS_OSHCC, "-E", TOOLS_SRCDIR "/tests/tools/powl_prog.c"), 60);
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "shmem_init");
    r = run(ARGV(TOOLS_OSHCC, "-M", TOOLS_SRCDIR "/tests/tools/powl_prog.c"), 60);
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "/shmem/shmem.h");
}
END_TEST

/* ---- oshrun ------------------------------------------------------------------------ */

/* A PE that dies of SIGSEGV: exit 139, and lines naming the PE and the
 * signal from the PE (the library's handler) and from oshrun. */
static void expect_segv(char *const argv[])
{
    run_t *r = run(argv, 30);

    ck_assert_int_eq(r->status, 128 + SIGSEGV);
    ck_assert_int_eq(
        mp_count_lines(r->err, "shmem error (PE 1): killed by signal 11 (Segmentation fault)"), 1);
    ck_assert_int_eq(mp_count_lines(r->err, "oshrun: PE 1 (pid "), 1);
    ck_assert_int_eq(mp_count_lines(r->err, "was killed by signal 11 (Segmentation fault)"), 1);
}

START_TEST(test_oshrun_segv)
{
    const char *asan = getenv("ASAN_OPTIONS");
    char opts[1024];

    /* AddressSanitizer's SEGV handler (a sanitizer build) reports and
     * _exit(1)s; the crash as a user's build sees it is what is tested. */
    snprintf(opts, sizeof(opts), "%s%shandle_segv=0", asan ? asan : "", asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    expect_segv(ARGV(oshrun(), "-n", "3", prog(), "segv"));
    /* on two emulated nodes the peers see the crash through the network
     * too; the crash is still what oshrun reports */
    expect_segv(ARGV(oshrun(), "-n", "4", "--nodes", "2", prog(), "segv"));
}
END_TEST

START_TEST(test_oshrun_compat_options)
{
    run_t *r;
    char want[128];
    int tagged = 0;

    r = run(ARGV(oshrun(), "-np", "2", "-x", "FOO=1", "--oversubscribe", "--allow-run-as-root",
                 "--tag-output", prog(), "tag"),
            60);
    ck_assert_int_eq(r->status, 0);
    /* every stdout line is whole and tagged with the PE that wrote it */
    for (char *line = r->out, *end; *line != '\0'; line = end + 1) {
        int tag_pe = -1, pe = -2, n = -1, len;

        end = strchr(line, '\n');
        ck_assert_ptr_nonnull(end);
        len = (int)(end - line);
        if (sscanf(line, "[PE %d] PE %d line %d FOO=1", &tag_pe, &pe, &n) == 3) {
            ck_assert_msg(tag_pe == pe && strncmp(end - 5, "FOO=1", 5) == 0, "bad line: %.*s", len,
                          line);
            tagged++;
        } else {
            ck_assert_msg(sscanf(line, "[PE %d] PE %d last line without newline", &tag_pe, &pe) ==
                                  2 &&
                              tag_pe == pe,
                          "bad line: %.*s", len, line);
        }
    }
    ck_assert_int_eq(tagged, 2 * 50);
    for (int pe = 0; pe < 2; pe++) {
        snprintf(want, sizeof(want), "[PE %d] PE %d last line without newline\n", pe, pe);
        assert_has(r->out, want);
        snprintf(want, sizeof(want), "[PE %d] PE %d on stderr\n", pe, pe);
        assert_has(r->err, want);
    }
    /* -x VAR without a value passes oshrun's own; untagged output as before */
    setenv("FOO", "from-env", 1);
    r = run(ARGV(oshrun(), "-n", "1", "-x", "FOO", prog(), "tag"), 60);
    ck_assert_int_eq(r->status, 0);
    ck_assert_int_eq(mp_count_lines(r->out, "PE 0 line"), 50);
    ck_assert_int_eq(mp_count_lines(r->out, "FOO=from-env"), 50);
    ck_assert_ptr_null(strstr(r->out, "[PE "));
    /* bad values: one line, status 2 */
    r = run(ARGV(oshrun(), "-n", "1", "-x", "1FOO=2", prog()), 20);
    ck_assert_int_eq(r->status, 2);
    ck_assert_int_eq(mp_count_lines(r->err, "oshrun: -x takes VAR or VAR=value"), 1);
    r = run(ARGV(oshrun(), "-n", "1", "--no-such-option", prog()), 20);
    ck_assert_int_eq(r->status, 2);
    ck_assert_int_eq(mp_count_lines(r->err, "oshrun: unknown option '--no-such-option'"), 1);
    ck_assert_int_eq(mp_count_lines(r->err, ""), 1);
}
END_TEST

START_TEST(test_oshrun_map_by)
{
    run_t *r =
        run(ARGV(oshrun(), "-n", "4", "--nodes", "2", "--map-by", "node", prog(), "shared"), 60);

    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "PE 0 node peers 0,2\n");
    assert_has(r->out, "PE 1 node peers 1,3\n");
    assert_has(r->out, "PE 2 node peers 0,2\n");
    r = run(ARGV(oshrun(), "-n", "5", "--map-by", "ppr:2:node", prog(), "shared"), 60);
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "PE 1 node peers 0,1\n");
    assert_has(r->out, "PE 3 node peers 2,3\n");
    assert_has(r->out, "PE 4 node peers 4\n");
    r = run(ARGV(oshrun(), "-n", "4", "--map-by=slot", "--nodes=2", prog(), "shared"), 60);
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "PE 2 node peers 2,3\n");
    r = run(ARGV(oshrun(), "-n", "4", "--map-by", "socket", prog(), "shared"), 20);
    ck_assert_int_eq(r->status, 2);
    ck_assert_int_eq(mp_count_lines(r->err, "oshrun: --map-by takes node, ppr:N:node"), 1);
    r = run(ARGV(oshrun(), "-n", "5", "--nodes", "2", "--map-by", "ppr:2:node", prog()), 20);
    ck_assert_int_eq(r->status, 2);
    ck_assert_int_eq(mp_count_lines(r->err, "places at most 4 of the 5 PEs"), 1);
}
END_TEST

START_TEST(test_oshrun_bind_to)
{
    cpu_set_t mine;
    char want[64], np[16];
    int ncpu;
    run_t *r;

    ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
    setenv("RMB_LOG_LEVEL", "debug", 1);
    r = run(ARGV(oshrun(), "-n", "2", "--bind-to", "core", prog(), "cpus"), 60);
    unsetenv("RMB_LOG_LEVEL");
    ck_assert_int_eq(r->status, 0);
    assert_has(r->out, "PE 0 cpus 1 first");
    assert_has(r->out, "PE 1 cpus 1 first");
    if (CPU_COUNT(&mine) >= 2) {
        /* two PEs each on a core of its own are not two on one: they spin
         * (a btl may set the policy again: a line each time) */
        ck_assert_int_eq(mp_count_lines(r->err, "on 1 core(s)"), 0);
        ck_assert_int_eq(mp_count_lines(r->err, "spin 0 polls"), 0);
        ck_assert_int_ge(mp_count_lines(r->err, "spin 50000 polls"), 2);
    }
    r = run(ARGV(oshrun(), "-n", "2", "--bind-to=none", prog(), "cpus"), 60);
    ck_assert_int_eq(r->status, 0);
    snprintf(want, sizeof(want), "PE 1 cpus %d first", CPU_COUNT(&mine));
    assert_has(r->out, want);
    r = run(ARGV(oshrun(), "-n", "2", "--bind-to", "socket", prog()), 20);
    ck_assert_int_eq(r->status, 2);
    ck_assert_int_eq(mp_count_lines(r->err, "oshrun: --bind-to takes none or core"), 1);
    /* twice as many PEs as CPUs: PEs 2c and 2c+1 share the c-th allowed CPU */
    ncpu = CPU_COUNT(&mine);
    if (ncpu > 8) {
        printf("test_oshrun_bind_to: %d CPUs, not starting %d PEs to check shared CPUs\n", ncpu,
               2 * ncpu);
        return;
    }
    snprintf(np, sizeof(np), "%d", 2 * ncpu);
    r = run(ARGV(oshrun(), "-n", np, "--bind-to", "core", prog(), "cpus"), 60);
    ck_assert_int_eq(r->status, 0);
    for (int cpu = 0, c = 0; cpu < CPU_SETSIZE && c < ncpu; cpu++) {
        if (!CPU_ISSET(cpu, &mine)) {
            continue;
        }
        for (int k = 0; k < 2; k++) {
            snprintf(want, sizeof(want), "PE %d cpus 1 first %d\n", 2 * c + k, cpu);
            assert_has(r->out, want);
        }
        c++;
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tools");
    TCase *info = tcase_create("oshinfo");
    TCase *cc = tcase_create("oshcc");
    TCase *launch = tcase_create("oshrun");

    tcase_add_unchecked_fixture(info, case_setup, case_teardown);
    tcase_add_checked_fixture(info, setup, teardown);
    tcase_add_test(info, test_oshinfo_version_help);
    tcase_add_test(info, test_oshinfo_default);
    tcase_add_test(info, test_oshinfo_all);
    tcase_add_test(info, test_oshinfo_param);
    tcase_add_test(info, test_man_pages);
    tcase_set_timeout(info, 120);
    suite_add_tcase(s, info);

    tcase_add_unchecked_fixture(cc, case_setup, case_teardown);
    tcase_add_checked_fixture(cc, setup, teardown);
    tcase_add_test(cc, test_oshcc_showme);
    tcase_add_test(cc, test_oshcc_powl);
    tcase_set_timeout(cc, 300);
    suite_add_tcase(s, cc);

    tcase_add_unchecked_fixture(launch, case_setup, case_teardown);
    tcase_add_checked_fixture(launch, setup, teardown);
    tcase_add_test(launch, test_oshrun_segv);
    tcase_add_test(launch, test_oshrun_compat_options);
    tcase_add_test(launch, test_oshrun_map_by);
    tcase_add_test(launch, test_oshrun_bind_to);
    tcase_set_timeout(launch, 300);
    suite_add_tcase(s, launch);
    return mp_run_suite(s);
}
