/*
 * space_halves: the memory a space saves (docs/spaces.md, the table after
 * reference 003's Table 4). The upper half of the PEs shares a large object
 * (a ring of puts into it, then a sum reduction over it); the lower half
 * never touches it. With the global heap every PE must allocate (and a
 * calloc clears) the object; with a space only the upper half's team does.
 *   oshcc -o space_halves space_halves.c
 *   oshrun -n 4 ./space_halves heap  [MiB]
 *   oshrun -n 4 ./space_halves space [MiB]
 * Each PE measures the memory its own shared segments hold before and after
 * (tmpfs blocks of the library's memfd segments: what is really committed,
 * however it was touched), and PE 0 prints one line per PE and the total.
 */
#include <shmem.h>
#include <shmemx.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes committed in this process's own library segments. */
static long long committed_bytes(void)
{
    char prefix[64], path[300], link[300];
    long long total = 0;
    struct dirent *e;
    DIR *dir = opendir("/proc/self/fd");

    snprintf(prefix, sizeof(prefix), "/memfd:rmb-btl-%d-", (int)getpid());
    while (dir != NULL && (e = readdir(dir)) != NULL) {
        struct stat st;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0) continue;
        link[n] = '\0';
        if (strncmp(link, prefix, strlen(prefix)) == 0 && stat(path, &st) == 0) {
            total += (long long)st.st_blocks * 512;
        }
    }
    if (dir != NULL) closedir(dir);
    return total;
}

int main(int argc, char **argv)
{
    int use_space = argc > 1 && strcmp(argv[1], "space") == 0;
    size_t bytes = (size_t)(argc > 2 ? atol(argv[2]) : 16) << 20;
    size_t count = bytes / sizeof(long);
    long long before, report[3], *all;
    shmem_team_t upper;
    shmemx_space_t space = SHMEMX_SPACE_INVALID;
    long *obj = NULL, *sum = NULL;
    int me, n, ok = 1;

    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    all = shmem_malloc(sizeof(report) * (size_t)n);
    shmem_team_split_strided(SHMEM_TEAM_WORLD, n / 2, 1, n - n / 2, NULL, 0, &upper);
    shmem_barrier_all();
    before = committed_bytes();

    if (use_space) {
        if (upper != SHMEM_TEAM_INVALID) {
            /* the object, the reduction's result and the allocator's slack */
            shmemx_create_symmetric_space_size(upper, bytes + (1 << 20), &space);
            obj = shmemx_calloc_space(count, sizeof(long), space);
            sum = shmemx_malloc_space(sizeof(long), space);
        }
    } else {
        obj = shmem_calloc(count, sizeof(long)); /* every PE, used or not */
        sum = shmem_malloc(sizeof(long));
    }

    if (upper != SHMEM_TEAM_INVALID) {
        int t = shmem_team_my_pe(upper), m = shmem_team_n_pes(upper);
        int right = shmem_team_translate_pe(upper, (t + 1) % m, SHMEM_TEAM_WORLD);
        long *mine = malloc(bytes);

        for (size_t i = 0; i < count; i++) mine[i] = t;
        shmem_long_put(obj, mine, count, right);
        shmem_quiet();
        shmem_team_sync(upper);
        shmem_long_sum_reduce(upper, sum, &obj[count - 1], 1);
        ok = *sum == (long)m * (m - 1) / 2;
        free(mine);
    }
    report[0] = upper != SHMEM_TEAM_INVALID;
    report[1] = obj != NULL ? (long long)bytes : 0;
    report[2] = committed_bytes() - before;
    shmem_barrier_all();
    shmem_longlong_fcollect(SHMEM_TEAM_WORLD, all, report, 3);
    if (me == 0) {
        long long total = 0;
        printf("%s, %d PEs, object %zu MiB used by PEs %d..%d\n",
               use_space ? "space" : "global heap", n, bytes >> 20, n / 2, n - 1);
        printf("PE  uses  allocated_MiB  committed_MiB\n");
        for (int p = 0; p < n; p++) {
            printf("%-3d %-5s %13.1f %14.1f\n", p, all[3 * p] ? "yes" : "no",
                   all[3 * p + 1] / 1048576.0, all[3 * p + 2] / 1048576.0);
            total += all[3 * p + 2];
        }
        printf("total committed: %.1f MiB\n", total / 1048576.0);
    }
    if (use_space && space != SHMEMX_SPACE_INVALID) {
        shmemx_destroy_space(space);
    } else if (!use_space) {
        shmem_free(sum);
        shmem_free(obj);
    }
    shmem_team_destroy(upper);
    shmem_free(all);
    shmem_finalize();
    if (!ok) fprintf(stderr, "PE %d: wrong sum\n", me);
    return !ok;
}
