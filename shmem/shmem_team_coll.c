/*
 * Team-based collectives of OpenSHMEM 1.5 (+ the 1.6 scans) on
 * symmetric-heap schedules.
 *
 * Every team owns a slot of a pool of internal symmetric blocks reserved at
 * shmem_init (slot 0 SHMEM_TEAM_WORLD, 1 SHMEM_TEAM_SHARED, the others for
 * split teams; a slot is free on a PE when no team of that PE uses it, so
 * teams without a common member may share a slot number). A slot holds:
 *
 *   bar[2][r]   dissemination barrier: member i writes the number k of
 *               barriers done into bar[k % 2][r] of member i + 2^r and
 *               waits for its own bar[k % 2][r] to reach it;
 *   xflag[2][m] the exchange's flags, one per parity and member: member j
 *               sets xflag[parity][j] to the number of exchanges of that
 *               parity it has sent;
 *   misc        the count a collect publishes, the words a split reduces;
 *   hflag[2][k] the leaders' flags of the hierarchical exchange (leader k
 *               writes its count of that parity's exchanges);
 *   ring_ack[m] broadcast ring: the checkpoints (below) member m has
 *               passed (only m adds to it);
 *   xbuf[2][m]  exchange buffers: block j is written only by member j;
 *   ring[l]     the broadcast ring: SHMEMI_TC_RING cache lines, each a
 *               flag word and SHMEMI_TC_RING_LINE_DATA data bytes. A
 *               broadcast takes as many consecutive lines as its data
 *               needs; each line's flag is its position + 1 (positions
 *               count lines since the team began), written only by that
 *               broadcast's root, the first line's as the signal after
 *               the data. An 8-byte broadcast is one line per member.
 *
 * Signals are remote atomic adds on counters that only grow while the team
 * lives, and waits are "counter >= expected": an add from a fast member
 * already in the next operation cannot be lost or confused with this one,
 * and adds commute, so the network may deliver them in any order. When a
 * team is destroyed every add aimed at this PE has been waited for, so its
 * counters go back to zero for the next team of the slot.
 *
 * The exchange is the small-message engine: each member puts its block
 * (up to xchg_max bytes) into xbuf[parity][me] of every member with its
 * flag xflag[parity][me] (a put with signal: one ordered message, no
 * round trip between data and flag). It costs one one-way latency and also proves
 * that everyone has entered. Two buffers suffice: a member writing a
 * buffer for exchange k + 2 has finished exchange k + 1, which needed my
 * signal of exchange k + 1, sent after I finished reading exchange k.
 * SHMEM_TEAM_WORLD of a job across nodes also has a wide exchange, blocks
 * of SHMEMI_TC_WIDE_CHUNK bytes outside the pool with the exchange's own
 * flags and parities (so the argument holds across both kinds).
 * Small broadcasts do not wait for the others: the root puts its data with
 * the flags into the next lines of every member's ring and returns, so
 * consecutive broadcasts overlap (on a team spanning nodes: of its node's
 * members and of each other node's leader, which forwards to its node).
 * Every member places every broadcast the same way (same sizes, same
 * order): from position p, k lines; an entry that would run past the
 * ring's end starts over at line 0, the lines skipped counting as read. A
 * root reuses a line R lines later, so it must know that everybody has
 * read it: each time a member's position passes a multiple of R/2 (a
 * checkpoint) it adds 1 to ring_ack[me] of every other member, without
 * waiting, and a root placing lines up to p + k waits until every other
 * member's word covers line p + k - R. So a root stalls only when a member
 * lags by more than half a ring, and the acknowledgements cost n - 1
 * atomic adds per member every R/2 lines: every 64 broadcasts of up to 56
 * bytes. A team is destroyed once all its acknowledgements have arrived
 * (every member passes the same checkpoints). Why every line carries a
 * flag: a later entry may start on a line that held data, and data there
 * could pass for a newer flag.
 * Teams of more than SHMEMI_TC_XCHG_TEAM members have neither: their small
 * broadcasts and reductions take log2(n) rounds of recursive doubling in
 * the ring's lines (see "recursive doubling" below).
 * Larger messages synchronize with the barrier and move the data straight
 * between the user's symmetric objects (each member pulls or pushes its own
 * share, so nobody serializes the whole team's traffic).
 *
 * Reductions combine in team order (member 0's value on the left), so all
 * members get bit-identical results; above the exchange size (on a team
 * spanning nodes: above a few exchanges, wide ones for the world) each
 * member reduces one segment of the vector over the whole team and writes
 * the result into every member's dest (a reduce-scatter then allgather).
 *
 * Teams spanning nodes run in two levels (SHMEM_COLL_HIER): the first
 * member of each node in team order is its leader. The barrier, small
 * reductions and broadcasts gather to the leader in shared memory, only
 * the leaders talk over the network, and each leader hands the result down
 * to its node (the Gmem pattern: the network carries K (K - 1) messages,
 * not N (N - 1)). Large broadcasts: leaders pull from the root, then their node
 * from them. The rest stays flat (its barriers are hierarchical).
 */
#include "shmem/shmem.h"
#include "shmem/shmemi.h"
#include "shmem/shmem_coll_types.h"
#include "shmem/shmem_signal_inl.h"
#include "bootstrap/bootstrap.h"
#include "util/env.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHMEMI_TC_LINE           64
#define SHMEMI_TC_SLOT_BYTES     4096u /* pool budget: 64 slots, 256 KiB */
#define SHMEMI_TC_XCHG_TEAM      16    /* teams up to this size use the exchange */
#define SHMEMI_TC_CHUNK_MAX      512u  /* bytes one member contributes to an exchange */
#define SHMEMI_TC_STAGE          4096u /* staging buffers of the large-message paths */
#define SHMEMI_TC_XCHG_PIECES    4     /* exchanges a reduction across nodes may take */
#define SHMEMI_TC_WIDE_CHUNK     4096u /* the wide exchange's block (SHMEM_TEAM_WORLD across nodes) */
#define SHMEMI_TC_WIDE_PIECES    4     /* wide exchanges a reduction may take */
#define SHMEMI_TC_GATHER         65536u /* a reduction round's gets, all members */
#define SHMEMI_TC_GATHER_STACK   8192u  /* ... held on the stack up to this */
#define SHMEMI_TC_RING           128    /* broadcast ring lines (a checkpoint every half) */
#define SHMEMI_TC_RING_LINE_DATA (SHMEMI_TC_LINE - 8u) /* data bytes of a ring line */
#define SHMEMI_TC_RING_ENTRY_MAX 5u                    /* lines of the largest entry */
#define SHMEMI_TC_RING_DATA      (SHMEMI_TC_RING_ENTRY_MAX * SHMEMI_TC_RING_LINE_DATA) /* 280 bytes */
#define SHMEMI_TC_RD_BLOCK_MAX   512u /* recursive doubling's block, header included */

/* The pool (same layout on every PE: allocated at init in the same order). */
static struct {
    char *base;
    size_t slot_bytes;
    size_t off_xflag, off_misc, off_hcnt, off_hflag, off_ring_ack, off_xbuf, off_ring;
    /* offsets inside a slot */
    size_t chunk;   /* xbuf block size */
    char *wide;     /* the wide exchange's buffers [2][members] (a job across nodes) */
    int rounds;     /* dissemination rounds of the world */
    size_t members; /* xbuf blocks per parity */
    uint64_t used;  /* slots in use by my teams */
    int hier_mode;  /* SHMEM_COLL_HIER: SHMEMI_HIER_* */
    struct shmemi_team *owner[SHMEMI_TC_SLOTS];
} shmemi_tc;

static _Alignas(64) const char shmemi_tc_zeros[SHMEMI_TC_STAGE];

enum { SHMEMI_MISC_COUNT = 0, SHMEMI_MISC_SPLIT_SRC = 1, SHMEMI_MISC_SPLIT_DST = 4 };
enum { SHMEMI_HIER_NO, SHMEMI_HIER_AUTO, SHMEMI_HIER_YES };
/* counters of a hierarchical exchange, one line per parity */
enum { SHMEMI_HCNT_UP = 0, SHMEMI_HCNT_DOWN = 1 };

/* A team's node structure (team indices; a node's leader is its first member). */
struct shmemi_tc_hier {
    int leader;         /* my node's leader */
    int n_local;        /* members on my node, leader included */
    int n_leaders;      /* nodes the team spans */
    int my_leader_rank; /* my node's position among the leaders */
    int *local;         /* my node's members, ascending (local[0] == leader) */
    int *leaders;       /* every node's leader, ascending */
    int *leader_of;     /* each member's leader */
    uint64_t hdone[2];  /* hierarchical exchanges done per parity */
};

static inline uint64_t *shmemi_tc_bar(const struct shmemi_team_coll *c)
{
    return (uint64_t *)c->sym;
}

static inline uint64_t *shmemi_tc_xflag(const struct shmemi_team_coll *c, int parity, int member)
{
    return (uint64_t *)(c->sym + shmemi_tc.off_xflag) + (size_t)parity * shmemi_tc.members +
           (size_t)member;
}

static inline uint64_t *shmemi_tc_misc(const struct shmemi_team_coll *c)
{
    return (uint64_t *)(c->sym + shmemi_tc.off_misc);
}

/* The leaders' flags of a hierarchical exchange: leader k (its rank among
 * the leaders) writes the count of that parity's exchanges into word k. */
static inline uint64_t *shmemi_tc_hflag(const struct shmemi_team_coll *c, int parity, int leader)
{
    return (uint64_t *)(c->sym + shmemi_tc.off_hflag) + (size_t)parity * shmemi_tc.members +
           (size_t)leader;
}

static inline uint64_t *shmemi_tc_hcnt(const struct shmemi_team_coll *c, int parity)
{
    return (uint64_t *)(c->sym + shmemi_tc.off_hcnt + (size_t)parity * SHMEMI_TC_LINE);
}

static inline char *shmemi_tc_xbuf(const struct shmemi_team_coll *c, int parity, int member)
{
    return c->sym + shmemi_tc.off_xbuf +
           ((size_t)parity * shmemi_tc.members + (size_t)member) * shmemi_tc.chunk;
}

/* The ring line at position pos: its flag word, then its data. */
static inline uint64_t *shmemi_tc_ring_line(const struct shmemi_team_coll *c, uint64_t pos)
{
    return (uint64_t *)(c->sym + shmemi_tc.off_ring + pos % SHMEMI_TC_RING * SHMEMI_TC_LINE);
}

static inline uint64_t *shmemi_tc_ring_ack(const struct shmemi_team_coll *c, int member)
{
    return (uint64_t *)(c->sym + shmemi_tc.off_ring_ack) + member;
}

/* Teams small enough for the exchange use the broadcast ring too (the
 * root sends to each member). */
static inline int shmemi_tc_has_ring(const struct shmemi_team_coll *c)
{
    return c->xchg_max != 0;
}

static inline size_t shmemi_tc_round_up(size_t x, size_t to)
{
    return (x + to - 1) / to * to;
}

/* ---- the pool -------------------------------------------------------------------------- */

void shmemi_tc_init(void)
{
    const char *hier = "auto";
    int rounds = 0;
    size_t header;

    memset(&shmemi_tc, 0, sizeof(shmemi_tc));
    util_env_get_string("SHMEM_COLL_HIER", &hier);
    if (strcmp(hier, "auto") == 0) {
        shmemi_tc.hier_mode = SHMEMI_HIER_AUTO;
    } else if (strcmp(hier, "yes") == 0) {
        shmemi_tc.hier_mode = SHMEMI_HIER_YES;
    } else if (strcmp(hier, "no") == 0) {
        shmemi_tc.hier_mode = SHMEMI_HIER_NO;
    } else {
        shmemi_fatal("shmem_init: SHMEM_COLL_HIER is '%s'; use auto, yes or no", hier);
    }
    while ((1L << rounds) < shmemi.n_pes) {
        rounds++;
    }
    /* one line per counter family: members spin on their own lines */
    shmemi_tc.members =
        shmemi.n_pes < SHMEMI_TC_XCHG_TEAM ? (size_t)shmemi.n_pes : SHMEMI_TC_XCHG_TEAM;
    shmemi_tc.rounds = rounds > 0 ? rounds : 1;
    shmemi_tc.off_xflag = shmemi_tc_round_up(2 * (size_t)shmemi_tc.rounds * 8, SHMEMI_TC_LINE);
    shmemi_tc.off_misc =
        shmemi_tc.off_xflag + shmemi_tc_round_up(2 * shmemi_tc.members * 8, SHMEMI_TC_LINE);
    shmemi_tc.off_hcnt = shmemi_tc.off_misc + SHMEMI_TC_LINE;
    shmemi_tc.off_hflag = shmemi_tc.off_hcnt + 2 * SHMEMI_TC_LINE;
    shmemi_tc.off_ring_ack =
        shmemi_tc.off_hflag + shmemi_tc_round_up(2 * shmemi_tc.members * 8, SHMEMI_TC_LINE);
    shmemi_tc.off_xbuf =
        shmemi_tc.off_ring_ack + shmemi_tc_round_up(shmemi_tc.members * 8, SHMEMI_TC_LINE);
    header = shmemi_tc.off_xbuf;
    shmemi_tc.chunk = (SHMEMI_TC_SLOT_BYTES - header) / (2 * shmemi_tc.members) / 16 * 16;
    if (shmemi_tc.chunk > SHMEMI_TC_CHUNK_MAX) {
        shmemi_tc.chunk = SHMEMI_TC_CHUNK_MAX;
    }
    shmemi_tc.off_ring =
        shmemi_tc_round_up(header + 2 * shmemi_tc.members * shmemi_tc.chunk, SHMEMI_TC_LINE);
    shmemi_tc.slot_bytes = shmemi_tc.off_ring + SHMEMI_TC_RING * SHMEMI_TC_LINE;
    if (rmalloc_symm_alloc(shmemi.symm, shmemi_tc.slot_bytes * SHMEMI_TC_SLOTS, 64,
                           (void **)&shmemi_tc.base) != UTIL_OK) {
        shmemi_fatal("shmem_init: cannot place the team pool in the symmetric heap");
    }
    /* zero before the barrier that ends shmem_init: nobody signals earlier */
    memset(shmemi_tc.base, 0, shmemi_tc.slot_bytes * SHMEMI_TC_SLOTS);
    if (bootstrap_num_nodes() > 1 &&
        rmalloc_symm_alloc(shmemi.symm, 2 * shmemi_tc.members * SHMEMI_TC_WIDE_CHUNK, 64,
                           (void **)&shmemi_tc.wide) != UTIL_OK) {
        shmemi_fatal("shmem_init: cannot place the wide exchange in the symmetric heap");
    }
}

uint64_t shmemi_tc_free_mask(void)
{
    return ~shmemi_tc.used;
}

static void shmemi_tc_hier_free(struct shmemi_tc_hier *h)
{
    if (h != NULL) {
        free(h->local);
        free(h->leaders);
        free(h->leader_of);
        free(h);
    }
}

/* The node structure into *hier_p when the team is to run in two levels,
 * else NULL. Every member computes the same answer from the same node map
 * (so out of memory is an error, not a quiet fall-back to flat). */
static int shmemi_tc_hier_create(const struct shmemi_team *team, struct shmemi_tc_hier **hier_p)
{
    int n = team->size, max_local = 0, nodes = 0;
    struct shmemi_tc_hier *h;

    *hier_p = NULL;
    if (shmemi_tc.hier_mode == SHMEMI_HIER_NO || n < 2) {
        return 0;
    }
    h = calloc(1, sizeof(*h));
    if (h == NULL || (h->local = malloc(sizeof(int) * (size_t)n)) == NULL ||
        (h->leaders = malloc(sizeof(int) * (size_t)n)) == NULL ||
        (h->leader_of = malloc(sizeof(int) * (size_t)n)) == NULL) {
        shmemi_tc_hier_free(h);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int node = bootstrap_node_of(shmemi_team_world_pe(team, i)), count = 0;

        h->leader_of[i] = i;
        for (int j = 0; j < i; j++) {
            if (bootstrap_node_of(shmemi_team_world_pe(team, j)) == node) {
                h->leader_of[i] = h->leader_of[j];
                break;
            }
        }
        if (h->leader_of[i] == i) {
            h->leaders[nodes++] = i;
        }
        for (int j = 0; j <= i; j++) {
            count += h->leader_of[j] == h->leader_of[i];
        }
        max_local = count > max_local ? count : max_local;
    }
    if (shmemi_tc.hier_mode == SHMEMI_HIER_AUTO && (nodes < 2 || max_local < 2)) {
        shmemi_tc_hier_free(h);
        return 0;
    }
    h->n_leaders = nodes;
    h->leader = h->leader_of[team->my_pe];
    for (int i = 0; i < n; i++) {
        if (h->leader_of[i] == h->leader) {
            h->local[h->n_local++] = i;
        }
    }
    for (int k = 0; k < nodes; k++) {
        if (h->leaders[k] == h->leader) {
            h->my_leader_rank = k;
        }
    }
    *hier_p = h;
    return 0;
}

static void shmemi_tc_barrier(const char *call, struct shmemi_team *team);
static void shmemi_tc_wait_ge(const uint64_t *word, uint64_t value);

static void shmemi_tc_world_barrier(void)
{
    shmemi_tc_barrier("shmem_barrier_all", &shmemi_team_world);
}

int shmemi_tc_attach(struct shmemi_team *team, int slot)
{
    struct shmemi_team_coll *c = calloc(1, sizeof(*c));

    if (c == NULL || shmemi_tc_hier_create(team, &c->hier) != 0) {
        free(c);
        return -1;
    }
    c->slot = slot;
    c->sym = shmemi_tc.base + (size_t)slot * shmemi_tc.slot_bytes;
    c->xchg_max = team->size <= SHMEMI_TC_XCHG_TEAM ? shmemi_tc.chunk : 0;
    for (int i = 1; i < team->size && !c->spans_nodes; i++) {
        c->spans_nodes = bootstrap_node_of(shmemi_team_world_pe(team, i)) !=
                         bootstrap_node_of(shmemi_team_world_pe(team, 0));
    }
    c->wide_max =
        slot == 0 && c->xchg_max != 0 && shmemi_tc.wide != NULL ? SHMEMI_TC_WIDE_CHUNK : 0;
    team->coll = c;
    shmemi_tc.used |= 1ULL << slot;
    shmemi_tc.owner[slot] = team;
    return 0;
}

/* After a barrier that follows shmemi_tc_init on every PE: before it, a
 * fast PE's signal could land in a slot its owner has yet to zero. */
void shmemi_tc_use_world_barrier(void)
{
    if (shmemi_team_world.coll != NULL && shmemi_team_world.coll->hier != NULL) {
        shmemi_world_barrier = shmemi_tc_world_barrier;
    }
}

/* Every add aimed at my counters has been waited for (each operation
 * waits for all of its own), so they can start again from zero. */
void shmemi_tc_detach(struct shmemi_team *team)
{
    struct shmemi_team_coll *c = team->coll;

    if (c == NULL) {
        return;
    }
    if (team == &shmemi_team_world) {
        shmemi_world_barrier = NULL;
    }
    /* the broadcast ring's last acknowledgements may still be on their way */
    for (int m = 0; shmemi_tc_has_ring(c) && m < team->size; m++) {
        if (m != team->my_pe) {
            shmemi_tc_wait_ge(shmemi_tc_ring_ack(c, m), c->ring_pos / (SHMEMI_TC_RING / 2));
        }
    }
    memset(c->sym, 0, shmemi_tc.off_xbuf);
    memset(shmemi_tc_ring_line(c, 0), 0, SHMEMI_TC_RING * SHMEMI_TC_LINE);
    shmemi_tc.used &= ~(1ULL << c->slot);
    shmemi_tc.owner[c->slot] = NULL;
    shmemi_tc_hier_free(c->hier);
    free(c);
    team->coll = NULL;
}

void shmemi_tc_finalize(void)
{
    for (int s = 0; s < SHMEMI_TC_SLOTS; s++) {
        if (shmemi_tc.owner[s] != NULL) {
            struct shmemi_team *team = shmemi_tc.owner[s];
            shmemi_tc_hier_free(team->coll->hier);
            free(team->coll);
            team->coll = NULL;
        }
    }
    memset(&shmemi_tc, 0, sizeof(shmemi_tc));
}

/* ---- synchronization ------------------------------------------------------------------- */

static inline int shmemi_tc_pe(const struct shmemi_team *team, int i)
{
    return shmemi_team_world_pe(team, i);
}

static void shmemi_tc_wait_ge(const uint64_t *word, uint64_t value)
{
    util_wait_t polls = UTIL_WAIT_INIT;

    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < value) {
        shmemi_relax(&polls);
    }
}

/* Sends len bytes at from into to of each member in list[first..count),
 * each with an add of 1 to their counter word (a put with signal: the
 * data is there when the count says so, with no round trip between). */
static void shmemi_tc_fan_out(const char *call, const struct shmemi_team *team, char *to,
                              const char *from, size_t len, uint64_t *word, const int *list,
                              int first, int count, int rotate)
{
    for (int i = first; i < count; i++) {
        shmemi_put_signal(call, to, from, len, word, 1, SHMEM_SIGNAL_ADD | SHMEMI_SIGNAL_INTERNAL,
                          shmemi_tc_pe(team, list[(rotate + i) % count]));
    }
}

/* The hierarchical exchange. My block (first len bytes of
 * shmemi_tc_mine; only member root's when root >= 0) goes up to my node's
 * leader, into my own slot there. With op, the leaders swap their nodes'
 * raw blocks (into the same slots) and each folds all of them in team
 * order; with root, only the root's leader sends it. Each leader hands the
 * result down to its node, into its own slot there. Returns the result.
 * len 0 with no op is a barrier. Slot j of a PE is written only by member
 * j or by j's leader, and the parity sequence is the flat exchange's, so
 * the two-buffer argument above holds when both kinds alternate. */
static const char *shmemi_tc_hier_exchange(const char *call, struct shmemi_team *team, size_t len,
                                           shmemi_tc_op_t op, size_t nelems, int root)
{
    struct shmemi_team_coll *c = team->coll;
    struct shmemi_tc_hier *h = c->hier;
    int parity = (int)(c->xchg_count++ & 1), me = team->my_pe, nl = h->n_leaders;
    uint64_t done = ++h->hdone[parity], *cnt = shmemi_tc_hcnt(c, parity);
    char *mine = shmemi_tc_xbuf(c, parity, me);
    const char *result = mine;

    __atomic_thread_fence(__ATOMIC_RELEASE);
    if (me != h->leader) {
        size_t up = root < 0 || root == me ? len : 0;

        shmemi_tc_fan_out(call, team, mine, mine, up, &cnt[SHMEMI_HCNT_UP], &h->leader, 0, 1, 0);
        shmemi_tc_wait_ge(&cnt[SHMEMI_HCNT_DOWN], done);
        result = shmemi_tc_xbuf(c, parity, h->leader);
    } else {
        size_t across = len;

        shmemi_tc_wait_ge(&cnt[SHMEMI_HCNT_UP], (uint64_t)(h->n_local - 1) * done);
        if (root >= 0) {
            across = h->leader_of[root] == me ? len : 0;
            if (across && root != me) {
                memcpy(mine, shmemi_tc_xbuf(c, parity, root), len);
            }
        }
        if (nl > 1) {
            if (op != NULL && len > 0) {
                /* my node's raw blocks, from their own slots of mine: one
                 * put per leader when the node's members are consecutive,
                 * the last carrying the signal */
                int first = h->local[0], last = h->local[h->n_local - 1];
                char *from = shmemi_tc_xbuf(c, parity, first);

                for (int k = 1; k < nl; k++) {
                    int pe = shmemi_tc_pe(team, h->leaders[(h->my_leader_rank + k) % nl]);
                    char *block = from;
                    size_t span = (size_t)(last - first) * shmemi_tc.chunk + len;

                    if (last - first + 1 != h->n_local) {
                        for (int i = 0; i < h->n_local - 1; i++) {
                            block = shmemi_tc_xbuf(c, parity, h->local[i]);
                            shmemi_put(call, block, block, len, pe);
                        }
                        block = shmemi_tc_xbuf(c, parity, last);
                        span = len;
                    }
                    shmemi_put_signal(call, block, block, span,
                                      shmemi_tc_hflag(c, parity, h->my_leader_rank), done,
                                      SHMEM_SIGNAL_SET | SHMEMI_SIGNAL_INTERNAL, pe);
                }
            } else {
                for (int k = 1; k < nl; k++) {
                    shmemi_put_signal(call, mine, mine, across,
                                      shmemi_tc_hflag(c, parity, h->my_leader_rank), done,
                                      SHMEM_SIGNAL_SET | SHMEMI_SIGNAL_INTERNAL,
                                      shmemi_tc_pe(team, h->leaders[(h->my_leader_rank + k) % nl]));
                }
            }
            /* one flag per leader (a write, one message; writes of the
             * exchanges k and k + 2 cannot overtake each other, as above) */
            for (int k = 1; k < nl; k++) {
                shmemi_tc_wait_ge(shmemi_tc_hflag(c, parity, (h->my_leader_rank + k) % nl), done);
            }
            if (root >= 0) {
                result = shmemi_tc_xbuf(c, parity, h->leader_of[root]);
            }
        }
        if (root < 0 && op != NULL && len > 0) {
            /* every block is here: fold in team order, as the flat exchange
             * does, so the result is bit-identical to it; my block's
             * sends completed locally, so mine is free */
            _Alignas(64) char acc[SHMEMI_TC_CHUNK_MAX];

            memcpy(acc, shmemi_tc_xbuf(c, parity, 0), len);
            for (int j = 1; j < team->size; j++) {
                op(acc, shmemi_tc_xbuf(c, parity, j), nelems);
            }
            memcpy(mine, acc, len);
        }
        /* into each member's slot of me (mine's offset) */
        __atomic_thread_fence(__ATOMIC_RELEASE);
        shmemi_tc_fan_out(call, team, mine, result, len, &cnt[SHMEMI_HCNT_DOWN], h->local, 1,
                          h->n_local, 0);
    }
    return result;
}

/* Dissemination barrier over the members (no quiet); hierarchical when
 * the team spans nodes. */
static void shmemi_tc_barrier(const char *call, struct shmemi_team *team)
{
    struct shmemi_team_coll *c = team->coll;
    uint64_t *bar = shmemi_tc_bar(c), count;
    int n = team->size, me = team->my_pe;

    if (c->hier != NULL) {
        shmemi_tc_hier_exchange(call, team, 0, NULL, 0, -1);
        return;
    }
    count = ++c->bar_count;

    /* round r's word has one writer (member me - 2^r): a flag write of the
     * count, one message, where an atomic may wait for a reply; the words
     * alternate by parity (see shmemi_barrier_flags) */
    bar += (count & 1) * (size_t)shmemi_tc.rounds;
    for (int r = 0, dist = 1; dist < n; r++, dist <<= 1) {
        shmemi_signal_set_internal(call, &bar[r], count, shmemi_tc_pe(team, (me + dist) % n));
        shmemi_tc_wait_ge(&bar[r], count);
    }
}

/* Block `member` of parity's exchange buffer: the slot's (blocks of
 * shmemi_tc.chunk) or, wide, the wide exchange's: blocks of
 * SHMEMI_TC_WIDE_CHUNK outside the pool, for the world team of a job across
 * nodes. Both kinds share the flags, counts and parities, so the two-buffer
 * argument above holds whichever kind each exchange takes. */
static inline char *shmemi_tc_block(const struct shmemi_team *team, int wide, int parity,
                                    int member)
{
    return wide ? shmemi_tc.wide +
                      ((size_t)parity * shmemi_tc.members + (size_t)member) * SHMEMI_TC_WIDE_CHUNK
                : shmemi_tc_xbuf(team->coll, parity, member);
}

/* My block of the next exchange (fill it, then call shmemi_tc_exchange). */
static inline char *shmemi_tc_mine(const struct shmemi_team *team)
{
    return shmemi_tc_block(team, 0, (int)(team->coll->xchg_count & 1), team->my_pe);
}

/* Sends the first len bytes of my block to every member and returns the
 * buffer holding every member's block (member j's at j times the block
 * size) once all have arrived. */
static const char *shmemi_tc_exchange_of(const char *call, struct shmemi_team *team, int wide,
                                         size_t len)
{
    struct shmemi_team_coll *c = team->coll;
    int parity = (int)(c->xchg_count++ & 1), n = team->size, me = team->my_pe;
    uint64_t done = ++c->xdone[parity];
    char *mine = shmemi_tc_block(team, wide, parity, me);

    for (int i = 1; i < n; i++) {
        shmemi_put_signal(call, mine, mine, len, shmemi_tc_xflag(c, parity, me), done,
                          SHMEM_SIGNAL_SET | SHMEMI_SIGNAL_INTERNAL,
                          shmemi_tc_pe(team, (me + i) % n));
    }
    for (int i = 1; i < n; i++) {
        shmemi_tc_wait_ge(shmemi_tc_xflag(c, parity, (me + i) % n), done);
    }
    return shmemi_tc_block(team, wide, parity, 0);
}

static const char *shmemi_tc_exchange(const char *call, struct shmemi_team *team, size_t len)
{
    return shmemi_tc_exchange_of(call, team, 0, len);
}

/* ---- pieces: collectives across nodes through a few exchanges --------------------------
 * On a team spanning nodes, a collective of up to a few exchanges' worth
 * per member beats the large paths' barriers and network round trips (gets,
 * puts and quiet): each piece is one message to every member, and
 * consecutive pieces overlap (two parities). On one node the large paths'
 * copies and barriers cost less (a 1 KiB reduction at 2 PEs: 0.6 us, in two
 * pieces 0.9). Reductions, 2 PEs on 2 nodes over UCX, µs, large path /
 * pieces: 1 KiB (2 pieces) 75-142 / 25-48, 2 KiB 76-155 / 51-59, 4 KiB in
 * 8 pieces 79-92 / 97-170; in the world's wide pieces 4 KiB 86-157 / 18-37,
 * 8 KiB 94-196 / 40-79, 16 KiB 119-247 / 72-126, 64 KiB 123-140 / 170-447;
 * 4 PEs on 2 nodes, 4 KiB 265-281 / 57-84. */

/* The piece size for bytes per member (a multiple of elem), 0 when not
 * this way; *wide_p: the pieces take the wide exchange. */
static size_t shmemi_tc_piece_step(const struct shmemi_team *team, size_t bytes, size_t elem,
                                   int *wide_p)
{
    const struct shmemi_team_coll *c = team->coll;

    *wide_p = 0;
    if (c->xchg_max < elem) {
        return 0;
    }
    if (bytes <= c->xchg_max * (c->spans_nodes ? SHMEMI_TC_XCHG_PIECES : 1)) {
        return c->xchg_max / elem * elem;
    }
    if (c->spans_nodes && c->wide_max != 0 && bytes <= c->wide_max * SHMEMI_TC_WIDE_PIECES) {
        *wide_p = 1;
        return c->wide_max / elem * elem;
    }
    return 0;
}

/* My block of the next piece (then shmemi_tc_exchange_of(.., wide, ..):
 * member j's piece at j * shmemi_tc_piece_stride(wide)). */
static inline char *shmemi_tc_piece_mine(const struct shmemi_team *team, int wide)
{
    return shmemi_tc_block(team, wide, (int)(team->coll->xchg_count & 1), team->my_pe);
}

static inline size_t shmemi_tc_piece_stride(int wide)
{
    return wide ? SHMEMI_TC_WIDE_CHUNK : shmemi_tc.chunk;
}

static inline int shmemi_tc_bad_team(const char *call, shmem_team_t team)
{
    shmemi_check_init(call);
    return __builtin_expect(team == SHMEM_TEAM_INVALID || team->my_pe < 0 || team->coll == NULL, 0);
}

int shmem_team_sync(shmem_team_t team)
{
    if (shmemi_tc_bad_team("shmem_team_sync", team)) {
        return -1;
    }
    shmemi_tc_barrier("shmem_team_sync", team);
    return 0;
}

/* ---- recursive doubling (teams larger than the exchange) ------------------------------ */

/* Teams of more than SHMEMI_TC_XCHG_TEAM members have no exchange and no
 * broadcast ring. Their small broadcasts, reductions and fcollects run in
 * log2(n) rounds with a partner each (a reduction took n round trips at one
 * member before: 1.1 ms for 8 bytes at 24 PEs on 4 nodes). The ring's lines hold
 * flag words, per parity of the operation count and per step (0: the
 * pre-step of a member beyond the largest power of two p2, then the
 * rounds, then the post-step), and an area per parity. */
static inline int shmemi_tc_rd_steps(void)
{
    return shmemi_tc.rounds + 2;
}

static inline size_t shmemi_tc_rd_flag_bytes(void)
{
    return shmemi_tc_round_up(2 * (size_t)shmemi_tc_rd_steps() * 8, SHMEMI_TC_LINE);
}

/* Bytes of a parity's area (line multiples). */
static inline size_t shmemi_tc_rd_area(void)
{
    size_t room = SHMEMI_TC_RING * SHMEMI_TC_LINE - shmemi_tc_rd_flag_bytes();

    return room / 2 / SHMEMI_TC_LINE * SHMEMI_TC_LINE;
}

/* A broadcast's block per step: an 8-byte header (whether it holds the
 * root's data) and the data; at most SHMEMI_TC_RD_BLOCK_MAX bytes. */
static inline size_t shmemi_tc_rd_block(void)
{
    size_t block =
        shmemi_tc_rd_area() / (size_t)shmemi_tc_rd_steps() / SHMEMI_TC_LINE * SHMEMI_TC_LINE;

    return block < SHMEMI_TC_RD_BLOCK_MAX ? block : SHMEMI_TC_RD_BLOCK_MAX;
}

static inline uint64_t *shmemi_tc_rd_flag(const struct shmemi_team_coll *c, uint64_t k, int step)
{
    return (uint64_t *)(c->sym + shmemi_tc.off_ring) + (k & 1) * (size_t)shmemi_tc_rd_steps() +
           step;
}

static inline char *shmemi_tc_rd_area_of(const struct shmemi_team_coll *c, uint64_t k)
{
    return c->sym + shmemi_tc.off_ring + shmemi_tc_rd_flag_bytes() + (k & 1) * shmemi_tc_rd_area();
}

/* Partners: rank j (of p2) stands for members [lo(j), lo(j + 1)): two
 * for j < rem (the even one handed its block over), one after. */
typedef struct {
    int n, me, p2, rem, rank, post;
} shmemi_tc_rd_t;

static inline int shmemi_tc_rd_lo(const shmemi_tc_rd_t *d, int rank)
{
    return rank < d->rem ? 2 * rank : rank + d->rem;
}

/* The member that acts for rank */
static inline int shmemi_tc_rd_member(const shmemi_tc_rd_t *d, int rank)
{
    return rank < d->rem ? 2 * rank + 1 : rank + d->rem;
}

static void shmemi_tc_rd_init(const struct shmemi_team *team, shmemi_tc_rd_t *d)
{
    d->n = team->size;
    d->me = team->my_pe;
    for (d->p2 = 1; d->p2 * 2 <= d->n; d->p2 *= 2) {
    }
    d->rem = d->n - d->p2;
    d->rank = d->me < 2 * d->rem ? (d->me % 2 ? d->me / 2 : -1) : d->me - d->rem;
    d->post = shmemi_tc_rd_steps() - 1;
}

static void shmemi_tc_rd_send(const char *call, const struct shmemi_team *team, uint64_t k,
                              int step, void *to, const void *from, size_t len, int member)
{
    shmemi_put_signal(call, to, from, len, shmemi_tc_rd_flag(team->coll, k, step), k,
                      SHMEM_SIGNAL_SET | SHMEMI_SIGNAL_INTERNAL, shmemi_tc_pe(team, member));
}

/* Every member's `bytes` into area[member * bytes] of every member (the
 * area of operation k): after the pre-step each rank holds its members'
 * blocks, and in round r it swaps all it holds, 2^r ranks' worth, with
 * rank ^ 2^r. Two parities suffice: a member writes a partner's area of
 * operation k + 2 only after that partner's message of k + 1, which the
 * partner sent once it was done with k (partners are the same each time). */
static char *shmemi_tc_rd_gather(const char *call, struct shmemi_team *team, const void *mine,
                                 size_t bytes)
{
    struct shmemi_team_coll *c = team->coll;
    uint64_t k = ++c->rd_count;
    char *area = shmemi_tc_rd_area_of(c, k);
    shmemi_tc_rd_t d;

    shmemi_tc_rd_init(team, &d);
    memcpy(area + (size_t)d.me * bytes, mine, bytes);
    if (d.rank < 0) { /* hand over, get everything back */
        shmemi_tc_rd_send(call, team, k, 0, area + (size_t)d.me * bytes,
                          area + (size_t)d.me * bytes, bytes, d.me + 1);
        shmemi_tc_wait_ge(shmemi_tc_rd_flag(c, k, d.post), k);
        return area;
    }
    if (d.me < 2 * d.rem) {
        shmemi_tc_wait_ge(shmemi_tc_rd_flag(c, k, 0), k);
    }
    for (int r = 0; (1 << r) < d.p2; r++) {
        int base = d.rank & ~((1 << r) - 1), peer = d.rank ^ (1 << r);
        size_t lo = (size_t)shmemi_tc_rd_lo(&d, base) * bytes;
        size_t hi = (size_t)shmemi_tc_rd_lo(&d, base + (1 << r)) * bytes;

        shmemi_tc_rd_send(call, team, k, 1 + r, area + lo, area + lo, hi - lo,
                          shmemi_tc_rd_member(&d, peer));
        shmemi_tc_wait_ge(shmemi_tc_rd_flag(c, k, 1 + r), k);
    }
    if (d.me < 2 * d.rem) {
        shmemi_tc_rd_send(call, team, k, d.post, area, area, (size_t)d.n * bytes, d.me - 1);
    }
    return area;
}

/* The root's `len` bytes to every member, in the same rounds: a block
 * (8-byte header: whether it holds the root's data, then the data) goes
 * each way, and a member keeps whichever of the two has it. */
/* Waits for step's block and keeps it unless mine holds the root's data. */
static void shmemi_tc_rd_take(const struct shmemi_team_coll *c, uint64_t k, int step, char *block,
                              const char *in, size_t len)
{
    uint64_t has;

    shmemi_tc_wait_ge(shmemi_tc_rd_flag(c, k, step), k);
    memcpy(&has, block, 8);
    if (!has) {
        memcpy(block, in, 8 + len);
    }
}

static void shmemi_tc_rd_bcast(const char *call, struct shmemi_team *team, char *block, size_t len)
{
    struct shmemi_team_coll *c = team->coll;
    uint64_t k = ++c->rd_count;
    char *area = shmemi_tc_rd_area_of(c, k);
    size_t bs = shmemi_tc_rd_block();
    shmemi_tc_rd_t d;

    shmemi_tc_rd_init(team, &d);
    if (d.rank < 0) {
        shmemi_tc_rd_send(call, team, k, 0, area, block, 8 + len, d.me + 1);
        shmemi_tc_wait_ge(shmemi_tc_rd_flag(c, k, d.post), k);
        memcpy(block, area + (size_t)d.post * bs, 8 + len);
        return;
    }
    if (d.me < 2 * d.rem) {
        shmemi_tc_rd_take(c, k, 0, block, area, len);
    }
    for (int r = 0; (1 << r) < d.p2; r++) {
        char *in = area + (size_t)(1 + r) * bs;

        shmemi_tc_rd_send(call, team, k, 1 + r, in, block, 8 + len,
                          shmemi_tc_rd_member(&d, d.rank ^ (1 << r)));
        shmemi_tc_rd_take(c, k, 1 + r, block, in, len);
    }
    if (d.me < 2 * d.rem) {
        shmemi_tc_rd_send(call, team, k, d.post, area + (size_t)d.post * bs, block, 8 + len,
                          d.me - 1);
    }
}

/* Whether a large team's fixed-size blocks, one per member, fit the
 * gather (recursive doubling) */
static inline int shmemi_tc_rd_gathers(const struct shmemi_team *team, size_t bytes)
{
    return !shmemi_tc_has_ring(team->coll) && (size_t)team->size * bytes <= shmemi_tc_rd_area();
}

/* ---- reductions and scans -------------------------------------------------------------- */

/* Large vectors: member i owns segment i, gets it from every member in
 * team order, and puts the result (total, or the prefix of member j for
 * the scans) into every member's dest. Only member i touches segment i of
 * any source or dest, so source == dest is safe. The gets of a round (the
 * same piece from every member) fly together: across nodes a round is one
 * round trip, not one per member. */
static void shmemi_tc_reduce_segments(const char *call, struct shmemi_team *team, char *dest,
                                      const char *source, size_t nelems, size_t elem,
                                      shmemi_tc_op_t op, int kind)
{
    _Alignas(64) char stack_stage[SHMEMI_TC_GATHER_STACK];
    int n = team->size, me = team->my_pe;
    size_t q = nelems / (size_t)n, r = nelems % (size_t)n;
    size_t first = (size_t)me * q + ((size_t)me < r ? (size_t)me : r);
    size_t count = q + ((size_t)me < r);
    /* elements per round: every member's piece in the stage, folded into
     * the first */
    size_t per = SHMEMI_TC_GATHER / ((size_t)n * elem);
    char *stage = stack_stage;

    per = per == 0 ? 1 : per;
    if (kind == SHMEMI_TC_EXSCAN && per > SHMEMI_TC_STAGE / elem) {
        per = SHMEMI_TC_STAGE / elem; /* member 0's prefix comes from the zeros */
    }
    per = per < count ? per : (count > 0 ? count : 1);
    if ((size_t)n * per * elem > sizeof(stack_stage)) {
        stage = malloc((size_t)n * per * elem);
        if (stage == NULL) {
            shmemi_fatal("%s: no memory for %zu bytes of staging", call, (size_t)n * per * elem);
        }
    }
    shmemi_tc_barrier(call, team); /* sources ready, dests free */
    for (size_t k = 0; k < count; k += per) {
        size_t m = count - k < per ? count - k : per, len = m * elem, off = (first + k) * elem;
        btl_comp_t comp;

        btl_comp_init(&comp);
        for (int j = 0; j < n; j++) {
            shmemi_get_nb(call, stage + (size_t)j * len, source + off, len, shmemi_tc_pe(team, j),
                          &comp);
        }
        shmemi_comp_wait(call, &comp);
        for (int j = 0; j < n; j++) {
            int pe = shmemi_tc_pe(team, j);
            if (kind == SHMEMI_TC_EXSCAN) {
                shmemi_put(call, dest + off, j == 0 ? shmemi_tc_zeros : stage, len, pe);
            }
            if (j > 0) {
                op(stage, stage + (size_t)j * len, m);
            }
            if (kind == SHMEMI_TC_INSCAN) {
                shmemi_put(call, dest + off, stage, len, pe);
            }
        }
        if (kind == SHMEMI_TC_REDUCE) {
            for (int i = 0; i < n; i++) {
                shmemi_put(call, dest + off, stage, len, shmemi_tc_pe(team, (me + i) % n));
            }
        }
    }
    if (stage != stack_stage) {
        free(stage);
    }
    shmemi_quiet();
    shmemi_tc_barrier(call, team); /* every segment has landed everywhere */
}

int shmemi_tc_reduce(const char *call, shmem_team_t team, void *dest, const void *source,
                     size_t nelems, size_t elem, shmemi_tc_op_t op, int kind)
{
    size_t bytes = nelems * elem, step;
    int n, me, last, wide;

    if (shmemi_tc_bad_team(call, team)) {
        return -1;
    }
    if (nelems == 0) {
        return 0; /* the same count on every member: nobody waits */
    }
    n = team->size;
    me = team->my_pe;
    last = kind == SHMEMI_TC_REDUCE ? n - 1 : kind == SHMEMI_TC_INSCAN ? me : me - 1;
    if (n == 1) {
        if (last < 0) {
            memset(dest, 0, bytes);
        } else if (dest != source) {
            memmove(dest, source, bytes);
        }
        return 0;
    }
    if (kind == SHMEMI_TC_REDUCE && shmemi_tc_rd_gathers(team, bytes)) {
        /* every block everywhere, folded in team order: the flat order's bits */
        const char *all = shmemi_tc_rd_gather(call, team, source, bytes);

        memmove(dest, all, bytes);
        for (int j = 1; j < n; j++) {
            op(dest, all + (size_t)j * bytes, nelems);
        }
        return 0;
    }
    step = shmemi_tc_piece_step(team, bytes, elem, &wide);
    if (step != 0) {
        size_t stride = shmemi_tc_piece_stride(wide);

        for (size_t off = 0; off < bytes; off += step) {
            size_t len = bytes - off < step ? bytes - off : step, m = len / elem;
            const char *all;

            /* the piece before dest may overwrite it (in place) */
            memcpy(shmemi_tc_piece_mine(team, wide), (const char *)source + off, len);
            if (!wide && team->coll->hier != NULL && kind == SHMEMI_TC_REDUCE) {
                memcpy((char *)dest + off, shmemi_tc_hier_exchange(call, team, len, op, m, -1),
                       len);
                continue;
            }
            all = shmemi_tc_exchange_of(call, team, wide, len);
            if (last < 0) {
                memset((char *)dest + off, 0, len);
                continue;
            }
            memcpy((char *)dest + off, all, len);
            for (int j = 1; j <= last; j++) {
                op((char *)dest + off, all + (size_t)j * stride, m);
            }
        }
        return 0;
    }
    shmemi_tc_reduce_segments(call, team, dest, source, nelems, elem, op, kind);
    return 0;
}

/* AND of nwords (<= 3) words over a team, for team creation: the parent
 * agrees on free slots with its own machinery. */
static void shmemi_tc_and_u64(void *acc, const void *in, size_t n)
{
    uint64_t *a = acc;
    const uint64_t *b = in;
    for (size_t i = 0; i < n; i++) a[i] &= b[i];
}

void shmemi_tc_allreduce(struct shmemi_team *team, uint64_t *words, int nwords, shmemi_tc_op_t op)
{
    uint64_t *misc = shmemi_tc_misc(team->coll);

    memcpy(&misc[SHMEMI_MISC_SPLIT_SRC], words, sizeof(uint64_t) * (size_t)nwords);
    shmemi_tc_reduce("shmem_team_split", team, &misc[SHMEMI_MISC_SPLIT_DST],
                     &misc[SHMEMI_MISC_SPLIT_SRC], (size_t)nwords, 8, op, SHMEMI_TC_REDUCE);
    memcpy(words, &misc[SHMEMI_MISC_SPLIT_DST], sizeof(uint64_t) * (size_t)nwords);
}

void shmemi_tc_allreduce_and(struct shmemi_team *team, uint64_t *words, int nwords)
{
    shmemi_tc_allreduce(team, words, nwords, shmemi_tc_and_u64);
}

/* Every member's len bytes into out[member * len] in rounds of the
 * exchange (a few microseconds each on node): spaces swap their keys so.
 * -1 when the team has no exchange (more than SHMEMI_TC_XCHG_TEAM members). */
int shmemi_tc_allgather(struct shmemi_team *team, const void *in, size_t len, void *out)
{
    size_t step = team->coll->xchg_max;

    if (step == 0) {
        return -1;
    }
    for (size_t off = 0; off < len; off += step) {
        size_t piece = len - off < step ? len - off : step;
        const char *all;

        memcpy(shmemi_tc_mine(team), (const char *)in + off, piece);
        all = shmemi_tc_exchange("shmemx_create_symmetric_space", team, piece);
        for (int j = 0; j < team->size; j++) {
            memcpy((char *)out + (size_t)j * len + off, all + (size_t)j * shmemi_tc.chunk, piece);
        }
    }
    return 0;
}

/* ---- broadcast ------------------------------------------------------------------------- */

/* Is member m a target of sender `from` in broadcast `root`'s ring step?
 * Flat: the root sends to everyone. On a team spanning nodes (hier): the
 * root to its node's members and to every other node's leader, each such
 * leader to its own node's members: one network message per node, not
 * per member. */
static inline int shmemi_tc_ring_target(const struct shmemi_tc_hier *h, int root, int from, int m)
{
    if (m == from || m == root) {
        return 0;
    }
    if (h == NULL) {
        return from == root;
    }
    if (from == root) {
        return h->leader_of[m] == h->leader_of[root] || h->leader_of[m] == m;
    }
    return h->leader_of[m] == from; /* a leader forwarding on its node */
}

/* Puts an entry of `lines` lines at position pos into the ring of my
 * targets, each once it has read what the lines held a ring ago; `entry`
 * is what travels: the first line's data, then the other lines whole (their
 * flags included), `bytes` in all. */
static void shmemi_tc_ring_send(const char *call, struct shmemi_team *team, const void *entry,
                                size_t bytes, uint64_t pos, unsigned lines, int root)
{
    struct shmemi_team_coll *c = team->coll;
    int n = team->size, me = team->my_pe;

    if (pos + lines > SHMEMI_TC_RING) {
        uint64_t checkpoint =
            (pos + lines - SHMEMI_TC_RING + SHMEMI_TC_RING / 2 - 1) / (SHMEMI_TC_RING / 2);
        for (int i = 1; i < n; i++) {
            int m = (me + i) % n;
            if (shmemi_tc_ring_target(c->hier, root, me, m)) {
                shmemi_tc_wait_ge(shmemi_tc_ring_ack(c, m), checkpoint);
            }
        }
    }
    for (int i = 1; i < n; i++) {
        int m = (me + i) % n;
        if (shmemi_tc_ring_target(c->hier, root, me, m)) {
            uint64_t *line = shmemi_tc_ring_line(c, pos);
            shmemi_put_signal(call, line + 1, entry, bytes, line, pos + 1,
                              SHMEM_SIGNAL_SET | SHMEMI_SIGNAL_INTERNAL, shmemi_tc_pe(team, m));
        }
    }
}

/* Data bytes of a broadcast of `bytes` in line j of its entry. */
static inline size_t shmemi_tc_ring_piece(size_t bytes, unsigned j)
{
    size_t off = (size_t)j * SHMEMI_TC_RING_LINE_DATA;

    return bytes - off < SHMEMI_TC_RING_LINE_DATA ? bytes - off : SHMEMI_TC_RING_LINE_DATA;
}

/* A small broadcast through the ring (see the top of the file). */
static void shmemi_tc_ring_broadcast(const char *call, struct shmemi_team *team, void *dest,
                                     const void *source, size_t bytes, int root, int update_root)
{
    struct shmemi_team_coll *c = team->coll;
    const size_t D = SHMEMI_TC_RING_LINE_DATA;
    unsigned lines = (unsigned)((bytes + D - 1) / D);
    uint64_t start = c->ring_pos, pos = start, *line;
    /* the entry as it travels: the first line's data, then whole lines */
    size_t entry_bytes = bytes + (lines - 1) * 8u;
    int n = team->size, me = team->my_pe;

    if (pos % SHMEMI_TC_RING + lines > SHMEMI_TC_RING) {
        pos += SHMEMI_TC_RING - pos % SHMEMI_TC_RING; /* no entry wraps */
    }
    c->ring_pos = pos + lines;
    line = shmemi_tc_ring_line(c, pos);
    if (me == root) {
        if (lines == 1) {
            shmemi_tc_ring_send(call, team, source, bytes, pos, lines, root);
        } else {
            uint64_t entry[SHMEMI_TC_RING_ENTRY_MAX * SHMEMI_TC_LINE / 8];
            char *e = (char *)entry;
            for (unsigned j = 0; j < lines; j++) {
                if (j > 0) {
                    entry[j * SHMEMI_TC_LINE / 8] = pos + j + 1;
                }
                memcpy(e + j * SHMEMI_TC_LINE + 8, (const char *)source + j * D,
                       shmemi_tc_ring_piece(bytes, j));
            }
            shmemi_tc_ring_send(call, team, e + 8, entry_bytes, pos, lines, root);
        }
        if (update_root && dest != source) {
            memmove(dest, source, bytes);
        }
    } else {
        shmemi_tc_wait_ge(line, pos + 1);
        if (c->hier != NULL && c->hier->leader == me &&
            c->hier->leader_of[root] != me) { /* my node's leader, the root elsewhere */
            shmemi_tc_ring_send(call, team, line + 1, entry_bytes, pos, lines, root);
        }
        for (unsigned j = 0; j < lines; j++) {
            memcpy((char *)dest + j * D, (const char *)(line + 1) + j * SHMEMI_TC_LINE,
                   shmemi_tc_ring_piece(bytes, j));
        }
    }
    if (c->ring_pos / (SHMEMI_TC_RING / 2) != start / (SHMEMI_TC_RING / 2)) {
        /* an add (that commutes): two checkpoints of one member may be on
         * their way at once, and a network may reorder two writes. Batched:
         * a root needs it only half a ring later, so across the network it
         * rides with our next message to that PE (a root's next broadcast),
         * or leaves at our next wait or from the helper thread, instead of a
         * send of its own. An entry is shorter than half a ring: one
         * checkpoint at most. */
        for (int i = 1; i < n; i++) {
            shmemi_amo_post_as(call, shmemi_tc_ring_ack(c, me), BTL_AMO_ADD, 8, 1,
                               shmemi_tc_pe(team, (me + i) % n), 1);
        }
    }
}

/* update_root: 1.5 team semantics (the root's dest gets the data too);
 * 0 for the deprecated active-set forms, which leave it alone. */
int shmemi_tc_broadcast(const char *call, shmem_team_t team, void *dest, const void *source,
                        size_t bytes, int root, int update_root)
{
    size_t step;
    int me, wide;

    if (shmemi_tc_bad_team(call, team) || root < 0 || root >= team->size) {
        return -1;
    }
    me = team->my_pe;
    if (bytes == 0) {
        return 0;
    }
    if (team->size == 1) {
        if (dest != source && update_root) memmove(dest, source, bytes);
        return 0;
    }
    if (bytes <= SHMEMI_TC_RING_DATA && shmemi_tc_has_ring(team->coll)) {
        shmemi_tc_ring_broadcast(call, team, dest, source, bytes, root, update_root);
        return 0;
    }
    if (!shmemi_tc_has_ring(team->coll) && 8 + bytes <= shmemi_tc_rd_block()) {
        _Alignas(64) char block[SHMEMI_TC_RD_BLOCK_MAX];
        uint64_t has = me == root;

        memcpy(block, &has, 8);
        if (has) {
            memcpy(block + 8, source, bytes);
        } else {
            memset(block + 8, 0, bytes);
        }
        shmemi_tc_rd_bcast(call, team, block, bytes);
        if (me != root || update_root) {
            memmove(dest, block + 8, bytes);
        }
        return 0;
    }
    if (bytes <= team->coll->xchg_max && team->coll->hier != NULL) {
        const char *got;

        if (me == root) {
            memcpy(shmemi_tc_mine(team), source, bytes);
        }
        got = shmemi_tc_hier_exchange(call, team, bytes, NULL, 0, root);
        if (me != root || update_root) {
            memmove(dest, me == root ? source : got, bytes);
        }
        return 0;
    }
    if (bytes <= team->coll->xchg_max) {
        /* the others send empty blocks: their signals say they are in */
        const char *all;

        if (me == root) {
            memcpy(shmemi_tc_mine(team), source, bytes);
        }
        all = shmemi_tc_exchange(call, team, me == root ? bytes : 0);
        if (me != root || update_root) {
            memmove(dest, me == root ? source : all + (size_t)root * shmemi_tc.chunk, bytes);
        }
        return 0;
    }
    if (team->coll->spans_nodes && (step = shmemi_tc_piece_step(team, bytes, 1, &wide)) != 0) {
        /* the root's pieces; the others send empty blocks (they are in) */
        for (size_t off = 0; off < bytes; off += step) {
            size_t len = bytes - off < step ? bytes - off : step;
            const char *all;

            if (me == root) {
                memcpy(shmemi_tc_piece_mine(team, wide), (const char *)source + off, len);
            }
            all = shmemi_tc_exchange_of(call, team, wide, me == root ? len : 0);
            if (me != root || update_root) {
                memmove((char *)dest + off,
                        me == root ? (const char *)source + off
                                   : all + (size_t)root * shmemi_tc_piece_stride(wide),
                        len);
            }
        }
        return 0;
    }
    if (team->coll->hier != NULL) {
        /* the leaders (and the root's node) pull from the root, then the
         * other nodes from their leader: one network copy per node */
        struct shmemi_tc_hier *h = team->coll->hier;
        int root_leader = h->leader_of[root];

        shmemi_tc_barrier(call, team);
        if (me == root) {
            if (dest != source && update_root) memmove(dest, source, bytes);
        } else if (h->leader == root_leader || me == h->leader) {
            shmemi_get(call, dest, source, bytes, shmemi_tc_pe(team, root));
        }
        shmemi_tc_barrier(call, team); /* the leaders have it */
        if (me != h->leader && h->leader != root_leader) {
            shmemi_get(call, dest, dest, bytes, shmemi_tc_pe(team, h->leader));
        }
        shmemi_tc_barrier(call, team);
        return 0;
    }
    /* every member pulls from the root at once; the root's source stays
     * untouched until the last has its copy */
    shmemi_tc_barrier(call, team);
    if (me == root) {
        if (dest != source && update_root) memmove(dest, source, bytes);
    } else {
        shmemi_get(call, dest, source, bytes, shmemi_tc_pe(team, root));
    }
    shmemi_tc_barrier(call, team);
    return 0;
}

/* ---- collect, fcollect ----------------------------------------------------------------- */

/* Blocks in team order. With the exchange, every member sends its count
 * and, when it fits, its block; blocks that do not fit are pulled from
 * their owner's source, and then (everyone saw the same counts) all wait
 * at a barrier so no owner changes its source early. Without it (large
 * teams) a small fcollect runs as recursive doubling's gather, and the
 * rest publish their counts in the slot and read them after a barrier. */
int shmemi_tc_collect(const char *call, shmem_team_t team, void *dest, const void *source,
                      size_t nelems, size_t elem, int fixed)
{
    struct shmemi_team_coll *c;
    size_t off = 0, mine = nelems * elem, step;
    uint64_t *counts = NULL;
    btl_comp_t comp;
    int n, me, wide;

    if (shmemi_tc_bad_team(call, team)) {
        return -1;
    }
    c = team->coll;
    n = team->size;
    me = team->my_pe;
    if (n == 1 || (fixed && nelems == 0)) {
        if (mine != 0 && dest != source) memmove(dest, source, mine);
        return 0;
    }
    if (fixed && shmemi_tc_rd_gathers(team, mine)) {
        /* a large team's small fcollect: every block everywhere in log2(n) rounds */
        memmove(dest, shmemi_tc_rd_gather(call, team, source, mine), (size_t)n * mine);
        return 0;
    }
    if (fixed && c->spans_nodes && mine + 16 > c->xchg_max &&
        (step = shmemi_tc_piece_step(team, mine, 1, &wide)) != 0) {
        /* every member's block in pieces, piece k of all in exchange k */
        for (size_t at = 0; at < mine; at += step) {
            size_t len = mine - at < step ? mine - at : step;
            const char *all;

            memcpy(shmemi_tc_piece_mine(team, wide), (const char *)source + at, len);
            all = shmemi_tc_exchange_of(call, team, wide, len);
            for (int j = 0; j < n; j++) {
                memcpy((char *)dest + (size_t)j * mine + at,
                       all + (size_t)j * shmemi_tc_piece_stride(wide), len);
            }
        }
        return 0;
    }
    if (c->xchg_max >= 16) {
        size_t cap = c->xchg_max - 16;
        char *block = shmemi_tc_mine(team);
        const char *all;
        int pulled = 0;

        memcpy(block, &nelems, sizeof(nelems));
        if (mine <= cap) {
            memcpy(block + 16, source, mine);
        }
        all = shmemi_tc_exchange(call, team, 16 + (mine <= cap ? mine : 0));
        btl_comp_init(&comp);
        for (int j = 0; j < n; j++) {
            const char *b = all + (size_t)j * shmemi_tc.chunk;
            size_t count, len;

            memcpy(&count, b, sizeof(count));
            len = count * elem;
            if (len <= cap) {
                memcpy((char *)dest + off, b + 16, len);
            } else {
                pulled = 1;
                if (j == me) {
                    memmove((char *)dest + off, source, len);
                } else { /* the pulls fly together */
                    shmemi_get_nb(call, (char *)dest + off, source, len, shmemi_tc_pe(team, j),
                                  &comp);
                }
            }
            off += len;
        }
        if (pulled) {
            shmemi_comp_wait(call, &comp);
            shmemi_tc_barrier(call, team);
        }
        return 0;
    }
    if (!fixed) {
        __atomic_store_n(&shmemi_tc_misc(c)[SHMEMI_MISC_COUNT], (uint64_t)nelems, __ATOMIC_RELAXED);
        counts = malloc(sizeof(uint64_t) * (size_t)n);
        if (counts == NULL) {
            shmemi_fatal("%s: no memory for %d counts", call, n);
        }
    }
    shmemi_tc_barrier(call, team);
    if (!fixed) { /* every count first (they place the blocks), all at once */
        btl_comp_init(&comp);
        for (int j = 0; j < n; j++) {
            counts[j] = nelems;
            if (j != me) {
                shmemi_get_nb(call, &counts[j], &shmemi_tc_misc(c)[SHMEMI_MISC_COUNT], 8,
                              shmemi_tc_pe(team, j), &comp);
            }
        }
        shmemi_comp_wait(call, &comp);
    }
    btl_comp_init(&comp);
    for (int j = 0; j < n; j++) {
        size_t len = (fixed ? nelems : (size_t)counts[j]) * elem;

        if (j == me) {
            memmove((char *)dest + off, source, mine);
        } else {
            shmemi_get_nb(call, (char *)dest + off, source, len, shmemi_tc_pe(team, j), &comp);
        }
        off += len;
    }
    shmemi_comp_wait(call, &comp);
    free(counts);
    shmemi_tc_barrier(call, team);
    return 0;
}

/* ---- alltoall, alltoalls --------------------------------------------------------------- */

/* Block j of source (elements j*nelems .. at stride sst) goes to block me
 * of member j's dest (stride dst). Small: every member sends all its blocks
 * packed in one exchange and keeps the ones meant for it. Large: a
 * barrier (dests free), direct puts, quiet, a barrier (all landed). */
static void shmemi_tc_pack(char *out, const char *src, ptrdiff_t stride, size_t nelems, size_t elem)
{
    if (stride == 1) {
        memcpy(out, src, nelems * elem);
        return;
    }
    for (size_t i = 0; i < nelems; i++) {
        memcpy(out + i * elem, src + (ptrdiff_t)i * stride * (ptrdiff_t)elem, elem);
    }
}

static void shmemi_tc_unpack(char *dst, const char *in, ptrdiff_t stride, size_t nelems,
                             size_t elem)
{
    if (stride == 1) {
        memmove(dst, in, nelems * elem);
        return;
    }
    for (size_t i = 0; i < nelems; i++) {
        memmove(dst + (ptrdiff_t)i * stride * (ptrdiff_t)elem, in + i * elem, elem);
    }
}

int shmemi_tc_alltoall(const char *call, shmem_team_t team, void *dest, const void *source,
                       ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t elem)
{
    const char *src = source;
    char *out = dest;
    ptrdiff_t dblock, sblock;
    int n, me;

    if (shmemi_tc_bad_team(call, team) || dst < 1 || sst < 1) {
        return -1;
    }
    if (nelems == 0) {
        return 0;
    }
    n = team->size;
    me = team->my_pe;
    dblock = (ptrdiff_t)nelems * dst * (ptrdiff_t)elem; /* bytes between blocks */
    sblock = (ptrdiff_t)nelems * sst * (ptrdiff_t)elem;
    if (n == 1) {
        _Alignas(64) char tmp[SHMEMI_TC_STAGE];
        for (size_t k = 0, per = SHMEMI_TC_STAGE / elem; k < nelems; k += per) {
            size_t m = nelems - k < per ? nelems - k : per;
            shmemi_tc_pack(tmp, src + (ptrdiff_t)k * sst * (ptrdiff_t)elem, sst, m, elem);
            shmemi_tc_unpack(out + (ptrdiff_t)k * dst * (ptrdiff_t)elem, tmp, dst, m, elem);
        }
        return 0;
    }
    if ((size_t)n * nelems * elem <= team->coll->xchg_max) {
        char *block = shmemi_tc_mine(team);
        size_t bytes = nelems * elem;
        const char *all;

        for (int j = 0; j < n; j++) {
            shmemi_tc_pack(block + (size_t)j * bytes, src + j * sblock, sst, nelems, elem);
        }
        all = shmemi_tc_exchange(call, team, (size_t)n * bytes);
        for (int i = 0; i < n; i++) {
            shmemi_tc_unpack(out + i * dblock,
                             all + (size_t)i * shmemi_tc.chunk + (size_t)me * bytes, dst, nelems,
                             elem);
        }
        return 0;
    }
    shmemi_tc_barrier(call, team);
    for (int i = 0; i < n; i++) {
        int j = (me + i) % n, pe = shmemi_tc_pe(team, j);
        char *to = out + me * dblock;
        const char *from = src + j * sblock;

        if (dst == 1 && sst == 1) {
            shmemi_put(call, to, from, nelems * elem, pe);
        } else if (dst == 1) {
            _Alignas(64) char tmp[SHMEMI_TC_STAGE];
            for (size_t k = 0, per = SHMEMI_TC_STAGE / elem; k < nelems; k += per) {
                size_t m = nelems - k < per ? nelems - k : per;
                shmemi_tc_pack(tmp, from + (ptrdiff_t)k * sst * (ptrdiff_t)elem, sst, m, elem);
                shmemi_put(call, to + k * elem, tmp, m * elem, pe);
            }
        } else {
            for (size_t k = 0; k < nelems; k++) {
                shmemi_put(call, to + (ptrdiff_t)k * dst * (ptrdiff_t)elem,
                           from + (ptrdiff_t)k * sst * (ptrdiff_t)elem, elem, pe);
            }
        }
    }
    shmemi_quiet();
    shmemi_tc_barrier(call, team);
    return 0;
}

/* ---- the public routines --------------------------------------------------------------- */

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int root)
{
    return shmemi_tc_broadcast("shmem_broadcastmem", team, dest, source, nelems, root, 1);
}

int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return shmemi_tc_collect("shmem_collectmem", team, dest, source, nelems, 1, 0);
}

int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return shmemi_tc_collect("shmem_fcollectmem", team, dest, source, nelems, 1, 1);
}

int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return shmemi_tc_alltoall("shmem_alltoallmem", team, dest, source, 1, 1, nelems, 1);
}

int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems)
{
    return shmemi_tc_alltoall("shmem_alltoallsmem", team, dest, source, dst, sst, nelems, 1);
}
