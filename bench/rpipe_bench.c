/*
 * rpipe_bench: rpipe microbenchmarks between two ranks (prints numbers; not
 * a test). Rank 0 produces, rank 1 consumes; rank 0 prints.
 *   oshrun -n 2 bench/rpipe_bench [-put|-get] [all|floor|lat|floorlat|bw|table|irregular] [max_bytes]
 * The backend is the btl's choice (RMB_BTL=shm|ofi, FI_PROVIDER=...).
 * RPIPE_BENCH_SYNC=block|tag|channel runs lat and bw for that sync mode only
 * (for profilers; the other columns print 0). RPIPE_BENCH_SLOT=BYTES sets
 * every channel's slot_payload (messages up to that size in fixed slots).
 *   floor      two processes ping-pong on one shared cache-line flag, no
 *              library: the machine's one-way floor for rwrite->rread
 *   lat        one-way latency (ping-pong / 2: rmalloc, rwrite, rread,
 *              rfree on each side) per sync mode, 8 B .. max_bytes
 *   floorlat   floor, lat, floor again in one run (one vCPU placement: the
 *              issue-24 goal is lat <= floor + 40 ns for 8 bytes)
 *   bw         streaming bandwidth per sync mode (the producer copies the
 *              payload into rmem, the consumer reads it in place)
 *   table      the thesis's Table 6.1: rwrite (streamed, time per message
 *              at the producer) and rread (one-way latency) for block,
 *              tag and channel sync at 4 B, 512 B and 64 KiB, with the
 *              slowdown against block (next-fit)
 *   irregular  the thesis's Fig. 6.14: 8-byte messages through a small
 *              channel; the consumer holds 16 messages and frees them in
 *              order, reversed or in random order, with 0/1/10 us between
 *              frees; time per message per heuristic and sync mode, and the
 *              slowdown against next-fit, in order, no delay
 */
#define _GNU_SOURCE
#include "bench/bench_args.h"
#include <rmalloc.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BIG_CHANNEL   (4u << 20) /* lat/bw/table channels: "unbounded" for these runs */
#define SMALL_CHANNEL 256u       /* irregular: about 40 eight-byte messages */
#define HELD          16         /* irregular: messages the consumer holds */

typedef struct pair {
    rch_t data; /* 0 -> 1 */
    rch_t echo; /* 1 -> 0 */
} pair_t;

static int rank, op_get;
static unsigned next_context;
static char *src_buf;

static void usage(void)
{
    fprintf(stderr, "usage: rpipe_bench [-put|-get] [all|floor|lat|floorlat|bw|table|irregular] "
                    "[max_bytes]\n");
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void spin_ns(double ns)
{
    double end = now_ns() + ns;
    while (now_ns() < end) {
    }
}

static void check(int rc, const char *what)
{
    if (rc != R_SUCCESS) {
        fprintf(stderr, "rpipe_bench rank %d: %s: %s\n", rank, what, rstrerror(rc));
        network_abort(1);
    }
}

static size_t slot_payload; /* RPIPE_BENCH_SLOT */

/* Both ends of a data channel (0 -> 1) and an echo channel (1 -> 0). */
static pair_t open_pair(rsync_mode_t sync, ralloc_algorithm_t alg, size_t capacity, size_t unit)
{
    rmalloc_config_t cfg;
    pair_t p;

    rmalloc_config_init(&cfg);
    cfg.peer = 1 - rank;
    cfg.op = op_get ? RDMA_GET : RDMA_PUT;
    cfg.sync = sync;
    cfg.algorithm = alg;
    cfg.alloc_size = capacity;
    cfg.unit_size = unit;
    cfg.slot_payload = slot_payload;
    cfg.context = next_context++;
    /* PUT: the producer is rdma_active; GET: the consumer. */
    cfg.rdma_active = (rank == 0) != op_get;
    check(rpipe(&p.data, &cfg), "rpipe");
    cfg.rdma_active = (rank == 1) != op_get;
    check(rpipe(&p.echo, &cfg), "rpipe");
    return p;
}

static void send_msg(rch_t ch, size_t size, int copy)
{
    raddr_t d = rmalloc(ch, size);
    char *m = rmem(ch, d);

    if (m == NULL) {
        check(R_ERR_INVALID, "rmalloc");
    }
    if (copy) {
        memcpy(m, src_buf, size);
    } else {
        m[0] = 1;
    }
    check(rwrite(ch, d), "rwrite");
}

static void recv_msg(rch_t ch, size_t size)
{
    raddr_t d;
    volatile char *m;

    check(rread(ch, &d, (void **)&m, size), "rread");
    (void)m[0];
    check(rfree(ch, d), "rfree");
}

/* ---- floor ------------------------------------------------------------------------ */

typedef struct floor_flags {
    _Alignas(64) volatile uint64_t ping;
    _Alignas(64) volatile uint64_t pong;
} floor_flags_t;

/* One-way time of a ping-pong on two flags in memory both ranks map. */
static double bench_floor(long iters)
{
    char name[64];
    uint64_t id = 0;
    floor_flags_t *f;
    double t0 = 0, t = 0;
    int fd;

    if (rank == 0) {
        id = (uint64_t)getpid();
        network_send(1, &id, sizeof(id));
    } else {
        check(network_recv(0, &id, sizeof(id)), "network_recv");
    }
    snprintf(name, sizeof(name), "/rpipe_bench_floor.%llu", (unsigned long long)id);
    fd = shm_open(name, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, sizeof(*f)) != 0) {
        perror("rpipe_bench: shm_open");
        network_abort(1);
    }
    f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (f == MAP_FAILED) {
        network_abort(1);
    }
    network_barrier();
    if (rank == 0) {
        shm_unlink(name);
    }
    for (long i = 1; i <= iters; i++) {
        if (i == iters / 10) t0 = now_ns();
        if (rank == 0) {
            __atomic_store_n(&f->ping, i, __ATOMIC_RELEASE);
            while (__atomic_load_n(&f->pong, __ATOMIC_ACQUIRE) != (uint64_t)i) {
            }
        } else {
            while (__atomic_load_n(&f->ping, __ATOMIC_ACQUIRE) != (uint64_t)i) {
            }
            __atomic_store_n(&f->pong, i, __ATOMIC_RELEASE);
        }
    }
    t = (now_ns() - t0) / (iters - iters / 10) / 2;
    munmap(f, sizeof(*f));
    network_barrier();
    return t;
}

/* ---- latency and bandwidth --------------------------------------------------------- */

/* One-way ns: ping-pong through data and echo, RTT / 2. */
static double bench_lat(pair_t *p, size_t size, long iters)
{
    long warm = iters / 10 + 10;
    double t0 = 0;

    for (long i = -warm; i < iters; i++) {
        if (i == 0) t0 = now_ns();
        if (rank == 0) {
            send_msg(p->data, size, 0);
            recv_msg(p->echo, size);
        } else {
            recv_msg(p->data, size);
            send_msg(p->echo, size, 0);
        }
    }
    return (now_ns() - t0) / iters / 2;
}

/* ns per message of a stream of count messages, measured by the producer
 * up to the consumer's acknowledgement of the last one. */
static double bench_stream(pair_t *p, size_t size, long count, int copy)
{
    double t0;

    bench_lat(p, 8, 10); /* both sides are here */
    t0 = now_ns();
    if (rank == 0) {
        for (long i = 0; i < count; i++) send_msg(p->data, size, copy);
        recv_msg(p->echo, 8);
    } else {
        for (long i = 0; i < count; i++) recv_msg(p->data, size);
        send_msg(p->echo, 8, 0);
    }
    return (now_ns() - t0) / count;
}

static long lat_iters(size_t size)
{
    return size <= 4096 ? 20000 : (long)(20000 * 4096 / size) + 50;
}

static long stream_count(size_t size)
{
    long n = (long)((256u << 20) / size);
    return n < 200 ? 200 : n > 200000 ? 200000 : n;
}

static const char *const sync_names[] = {"block", "tag", "channel"};

/* RPIPE_BENCH_SYNC: the one sync mode lat/bw run, or -1 for all. */
static int only_sync(void)
{
    const char *v = getenv("RPIPE_BENCH_SYNC");

    for (int s = 0; v != NULL && s < 3; s++) {
        if (!strcmp(v, sync_names[s])) return s;
    }
    if (v != NULL && rank == 0) fprintf(stderr, "rpipe_bench: RPIPE_BENCH_SYNC=%s ignored\n", v);
    return -1;
}

static void run_lat_bw(int do_lat, int do_bw, size_t max)
{
    int only = only_sync();

    pair_t p[3];
    /* Latency alone: a channel of 8 messages of the largest size (64 KiB at
     * least). A ring much larger than the L2 cache streams every message
     * through memory no cache holds (and, on its first pass, through page
     * faults), which measures the memory system rather than the channel. */
    size_t capacity = do_bw ? BIG_CHANNEL : (8 * max > 65536 ? 8 * max : 65536);

    for (int s = 0; s < 3; s++) {
        p[s] = open_pair((rsync_mode_t)s, NEXT_FIT, capacity, 64);
    }
    if (rank == 0) {
        printf("\n# %s, next-fit, %zu KiB channel: one-way latency (ns) and streaming bandwidth "
               "(MB/s)\n",
               op_get ? "GET" : "PUT", capacity >> 10);
        printf("# %9s", "bytes");
        for (int s = 0; s < 3; s++) {
            if (do_lat) printf(" %10s-ns", sync_names[s]);
        }
        for (int s = 0; s < 3; s++) {
            if (do_bw) printf(" %9s-MB/s", sync_names[s]);
        }
        printf("\n");
    }
    for (size_t size = 8; size <= max; size *= 2) {
        double lat[3] = {0}, bw[3] = {0};

        for (int s = 0; s < 3; s++) {
            if (only >= 0 && s != only) continue;
            if (do_lat) lat[s] = bench_lat(&p[s], size, lat_iters(size));
            if (do_bw) bw[s] = size * 1e3 / bench_stream(&p[s], size, stream_count(size), 1);
        }
        if (rank == 0) {
            printf("  %9zu", size);
            for (int s = 0; s < 3; s++) {
                if (do_lat) printf(" %13.1f", lat[s]);
            }
            for (int s = 0; s < 3; s++) {
                if (do_bw) printf(" %14.1f", bw[s]);
            }
            printf("\n");
            fflush(stdout);
        }
    }
}

/* ---- Table 6.1 ----------------------------------------------------------------------- */

static void run_table(void)
{
    static const size_t sizes[] = {4, 512, 65536};
    static const struct {
        rsync_mode_t sync;
        ralloc_algorithm_t alg;
        const char *name;
    } modes[] = {
        {NET_SYNC_BLKS, NEXT_FIT, "block/next"}, {NET_SYNC_TAGS, NEXT_FIT, "tag/next"},
        {NET_SYNC_TAGS, BEST_FIT, "tag/best"},   {CH_SYNC, NEXT_FIT, "channel/next"},
        {CH_SYNC, BEST_FIT, "channel/best"},
    };
    enum { NMODES = sizeof(modes) / sizeof(modes[0]) };
    pair_t p[NMODES];

    for (int m = 0; m < NMODES; m++) {
        p[m] = open_pair(modes[m].sync, modes[m].alg, BIG_CHANNEL, 64);
    }
    if (rank == 0) {
        printf("\n# Table 6.1, %s: rwrite = ns per message streamed (producer), "
               "rread = one-way ns (ping-pong/2); x = slowdown vs block/next\n",
               op_get ? "GET" : "PUT");
        printf("# %-16s", "call(bytes)");
        for (int m = 0; m < NMODES; m++) printf(" %14s      ", modes[m].name);
        printf("\n");
    }
    for (int what = 0; what < 2; what++) {
        for (int k = 0; k < 3; k++) {
            double t[NMODES];

            for (int m = 0; m < NMODES; m++) {
                t[m] = what == 0
                           ? bench_stream(&p[m], sizes[k], stream_count(sizes[k]) / 2 + 1000, 1)
                           : bench_lat(&p[m], sizes[k], lat_iters(sizes[k]));
            }
            if (rank == 0) {
                char label[32];
                snprintf(label, sizeof(label), "%s(%zu)", what ? "rread" : "rwrite", sizes[k]);
                printf("  %-16s", label);
                for (int m = 0; m < NMODES; m++) printf(" %10.1f (%4.2fx)", t[m], t[m] / t[0]);
                printf("\n");
                fflush(stdout);
            }
        }
    }
}

/* ---- irregular (Fig. 6.14) ------------------------------------------------------------ */

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ns per 8-byte message; the consumer frees each batch of HELD in `order`
 * (0 in order, 1 reversed, 2 random) with delay_ns between frees. */
static double bench_irregular(pair_t *p, long count, int order, double delay_ns)
{
    raddr_t held[HELD];
    uint64_t seed = 0x2545F4914F6CDD1Dull;
    double t0;

    bench_lat(p, 8, 10);
    t0 = now_ns();
    if (rank == 0) {
        for (long i = 0; i < count; i++) send_msg(p->data, 8, 0);
        recv_msg(p->echo, 8);
        return (now_ns() - t0) / count;
    }
    for (long i = 0; i < count; i += HELD) {
        int n = count - i < HELD ? (int)(count - i) : HELD;
        void *m;

        for (int k = 0; k < n; k++) check(rread(p->data, &held[k], &m, 8), "rread");
        if (order == 1) {
            for (int a = 0, b = n - 1; a < b; a++, b--) {
                raddr_t t = held[a];
                held[a] = held[b];
                held[b] = t;
            }
        } else if (order == 2) {
            for (int k = n - 1; k > 0; k--) {
                int j = (int)(rng(&seed) % (uint64_t)(k + 1));
                raddr_t t = held[k];
                held[k] = held[j];
                held[j] = t;
            }
        }
        for (int k = 0; k < n; k++) {
            if (delay_ns > 0) spin_ns(delay_ns);
            check(rfree(p->data, held[k]), "rfree");
        }
    }
    send_msg(p->echo, 8, 0);
    return 0;
}

static void run_irregular(void)
{
    static const struct {
        rsync_mode_t sync;
        ralloc_algorithm_t alg;
        const char *name;
    } modes[] = {
        {NET_SYNC_BLKS, NEXT_FIT, "next/block"}, {NET_SYNC_TAGS, NEXT_FIT, "next/tag"},
        {NET_SYNC_TAGS, FIRST_FIT, "first/tag"}, {NET_SYNC_TAGS, BEST_FIT, "best/tag"},
        {NET_SYNC_TAGS, WORST_FIT, "worst/tag"}, {CH_SYNC, BEST_FIT, "best/channel"},
        {CH_SYNC, WORST_FIT, "worst/channel"},
    };
    static const char *const orders[] = {"in-order", "reversed", "random"};
    static const double delays[] = {0, 1000, 10000};
    enum { NMODES = sizeof(modes) / sizeof(modes[0]) };
    pair_t p[NMODES];
    double base = 0;

    for (int m = 0; m < NMODES; m++) {
        p[m] = open_pair(modes[m].sync, modes[m].alg, SMALL_CHANNEL, 8);
    }
    if (rank == 0) {
        printf("\n# Fig. 6.14 irregular, %s: 8 B messages, %u B channel, consumer holds %d and "
               "frees them in ORDER with DELAY between frees;\n# ns per message (slowdown vs "
               "next/block in-order 0 us)\n# %-9s %5s",
               op_get ? "GET" : "PUT", SMALL_CHANNEL, HELD, "order", "delay");
        for (int m = 0; m < NMODES; m++) printf(" %13s     ", modes[m].name);
        printf("\n");
    }
    for (int o = 0; o < 3; o++) {
        for (int d = 0; d < 3; d++) {
            long count = delays[d] > 0 ? 20000000 / (long)delays[d] / HELD * HELD : 40000;
            double t[NMODES];

            for (int m = 0; m < NMODES; m++) {
                t[m] = bench_irregular(&p[m], count, o, delays[d]);
            }
            if (rank == 0) {
                if (o == 0 && d == 0) base = t[0];
                printf("  %-9s %3.0fus", orders[o], delays[d] / 1000);
                for (int m = 0; m < NMODES; m++) printf(" %9.0f (%5.1fx)", t[m], t[m] / base);
                printf("\n");
                fflush(stdout);
            }
        }
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "-put";
    const char *what = argc > 2 ? argv[2] : "all";
    long max = (long)bench_arg(
        argc, argv, 3, 1 << 20, 8, 1 << 20,
        "rpipe_bench [-put|-get] [all|floor|lat|floorlat|bw|table|irregular] [MAX_BYTES]");
    int all, floorlat, nranks;
    const char *btl = getenv("RMB_BTL");

    all = !strcmp(what, "all");
    floorlat = !strcmp(what, "floorlat"); /* lat between two floors: one vCPU placement */
    if ((strcmp(dir, "-put") && strcmp(dir, "-get")) || argc > 4 || max < 8 || max > (1 << 20) ||
        (!all && !floorlat && strcmp(what, "floor") && strcmp(what, "lat") && strcmp(what, "bw") &&
         strcmp(what, "table") && strcmp(what, "irregular"))) {
        usage();
        return 2;
    }
    op_get = !strcmp(dir, "-get");
    if (rinit(&rank, &nranks) != R_SUCCESS) {
        fprintf(stderr, "rpipe_bench: rinit failed\n");
        return 1;
    }
    if (getenv("RPIPE_BENCH_SLOT") != NULL) {
        char *end;
        unsigned long v = strtoul(getenv("RPIPE_BENCH_SLOT"), &end, 10);

        if (*end != '\0' || v > RSLOT_PAYLOAD_MAX) {
            if (rank == 0) {
                fprintf(stderr, "rpipe_bench: RPIPE_BENCH_SLOT=%s is not a size up to %u\n",
                        getenv("RPIPE_BENCH_SLOT"), RSLOT_PAYLOAD_MAX);
            }
            rexit();
            return 2;
        }
        slot_payload = v;
    }
    if (nranks != 2) {
        if (rank == 0) fprintf(stderr, "rpipe_bench: run with 2 ranks (oshrun -n 2)\n");
        rexit();
        return 2;
    }
    src_buf = malloc((size_t)max);
    if (src_buf == NULL) {
        network_abort(1);
    }
    memset(src_buf, 0x5a, (size_t)max);
    if (rank == 0) {
        printf("# rpipe_bench %s %s, btl %s%s%s, slot_payload %zu\n", dir + 1, what,
               btl ? btl : "auto", getenv("FI_PROVIDER") ? ", FI_PROVIDER=" : "",
               getenv("FI_PROVIDER") ? getenv("FI_PROVIDER") : "", slot_payload);
    }
    if (all || floorlat || !strcmp(what, "floor")) {
        double t = bench_floor(1000000);
        if (rank == 0) printf("\n# floor: shared-flag ping-pong one-way %.1f ns\n", t);
    }
    if (all || floorlat || !strcmp(what, "lat") || !strcmp(what, "bw")) {
        run_lat_bw(all || floorlat || !strcmp(what, "lat"), all || !strcmp(what, "bw"),
                   (size_t)max);
    }
    if (all || !strcmp(what, "table")) {
        run_table();
    }
    if (all || !strcmp(what, "irregular")) {
        run_irregular();
    }
    if (all || floorlat || !strcmp(what, "floor")) { /* again: did the machine stay quiet? */
        double t = bench_floor(1000000);
        if (rank == 0) printf("\n# floor (end of run): one-way %.1f ns\n", t);
    }
    rexit();
    free(src_buf);
    return 0;
}
