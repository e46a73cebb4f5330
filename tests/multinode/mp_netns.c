/*
 * Run under `oshrun --nodes K --netns`: checks that each emulated node is
 * its own network namespace (the same for the PEs of a node, different
 * across nodes, never oshrun's) and that data between nodes crosses the
 * node's link rmb0: its transmit counter grows by at least what a PE put
 * to the next node. "hold": wait to be killed (teardown tests).
 */
#include <shmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAYLOAD (4L << 20)

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "PE %d: %s:%d: ", shmem_my_pe(), __FILE__, __LINE__);                  \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            shmem_global_exit(1);                                                                  \
        }                                                                                          \
    } while (0)

/* Bytes sent on rmb0 in my namespace (/proc/self/net is per namespace,
 * /sys/class/net is not); -1 when there is no such link. */
static long long tx_bytes(void)
{
    FILE *f = fopen("/proc/self/net/dev", "r");
    char line[512];
    long long tx = -1;

    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        char *name = line + strspn(line, " ");
        unsigned long long v[9];

        if (strncmp(name, "rmb0:", 5) == 0 &&
            sscanf(name + 5, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) == 9) {
            tx = (long long)v[8];
        }
    }
    if (f != NULL) fclose(f);
    return tx;
}

static long long netns_id[2], all_ids[2 * 256];

int main(int argc, char **argv)
{
    struct stat mine, init_ns;
    int me, npes, shared_me, shared_n;
    long long before, after;
    char *buf;

    shmem_init();
    if (argc > 1 && strcmp(argv[1], "hold") == 0) {
        shmem_barrier_all();
        printf("ready\n"); /* for the teardown test: now kill oshrun */
        fflush(stdout);
        sleep(60);
        return 1;
    }
    me = shmem_my_pe();
    npes = shmem_n_pes();
    CHECK(npes <= 256, "at most 256 PEs");
    CHECK(stat("/proc/self/ns/net", &mine) == 0, "stat of my namespace");
    CHECK(stat("/proc/1/ns/net", &init_ns) != 0 || mine.st_ino != init_ns.st_ino,
          "still in the machine's network namespace");
    netns_id[0] = (long long)mine.st_ino;
    netns_id[1] = shmem_team_translate_pe(SHMEM_TEAM_SHARED, 0, SHMEM_TEAM_WORLD); /* node leader */
    shmem_longlong_fcollect(SHMEM_TEAM_WORLD, all_ids, netns_id, 2);
    for (int p = 0; p < npes; p++) {
        int same_node = all_ids[2 * p + 1] == netns_id[1];
        CHECK(same_node == (all_ids[2 * p] == netns_id[0]), "PE %d: namespace %s but node %s", p,
              all_ids[2 * p] == netns_id[0] ? "same" : "other", same_node ? "same" : "other");
    }

    /* the first PE of each node puts PAYLOAD to the PE after its node */
    buf = shmem_malloc(PAYLOAD);
    CHECK(buf != NULL, "shmem_malloc");
    memset(buf, me & 0x7f, PAYLOAD);
    shared_me = shmem_team_my_pe(SHMEM_TEAM_SHARED);
    shared_n = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    before = tx_bytes();
    CHECK(before >= 0, "no link rmb0 in my namespace");
    shmem_barrier_all();
    if (shared_me == 0 && shared_n < npes) {
        char *data = malloc(PAYLOAD);
        CHECK(data != NULL, "malloc");
        memset(data, 0x5a, PAYLOAD);
        shmem_putmem(buf, data, PAYLOAD, (me + shared_n) % npes);
        shmem_quiet();
        free(data);
        after = tx_bytes();
        CHECK(after - before >= PAYLOAD, "rmb0 sent %lld bytes, less than the %ld put",
              after - before, PAYLOAD);
    }
    shmem_barrier_all();
    for (int leader = 0; leader < npes; leader++) {
        int size = 0;
        for (int p = 0; p < npes; p++) {
            size += all_ids[2 * p + 1] == leader;
        }
        if (size > 0 && size < npes && (leader + size) % npes == me) {
            for (long i = 0; i < PAYLOAD; i += 4093) {
                CHECK(buf[i] == 0x5a, "byte %ld from PE %d: %d", i, leader, buf[i]);
            }
        }
    }
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
