/*
 * rcoll: collectives compiled into rounds of rwrite/rread actions on rpipe
 * channels (thesis §5.3, Listings 5.9-5.10).
 *
 * Schedules. rcoll_init() compiles the operation for this member into
 * rounds; a round holds local copies, sends and receives. A round runs its
 * copies, then its sends, then its receives, and ends when all are done:
 * data a round sends is never changed by the same round's receives (what
 * recursive doubling and scans need). Receives that reduce apply the
 * message straight from the channel memory, then rfree it.
 *
 * Channels. Every ordered rank pair has one rcoll lane (rpipe context
 * RCOLL_CONTEXT_LANE, tag sync so messages may differ in size), shared by
 * all handles. A message carries its collective in the user header (the
 * group key) and a tag word at the start of the payload (the group's
 * sequence number of the collective and the step). Messages that arrive
 * before their receive is running are copied into the peer's unexpected
 * list and freed at once, so a channel never stays full of messages nobody
 * is waiting for: senders always make progress, whatever the interleaving
 * of collectives in flight (MPI-like ordering per group is enough).
 *
 * Progress. Every rcoll entry point advances all collectives in flight on
 * this rank; blocking calls wait with rpipe's wait step (btl progress,
 * deferred frees, spin then yield).
 */
#include "rpipe/rcoll_int.h"
#include "rpipe/rpipe_inl.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

#define RCOLL_STEP_BITS  24
#define RCOLL_STEP_FINAL ((1u << RCOLL_STEP_BITS) - 1)

static struct {
    rcoll_peer_t **peers[2]; /* [RDMA_PUT / RDMA_GET][rank], created on demand */
    int nranks;
    rcoll_group_t *groups;
    unsigned handles; /* live handles: the tables go with the last one */
    rcoll_h active;   /* collectives in flight */
    rcoll_h all;      /* every live handle */
} rcoll_state;

/* ---- peers and channels ---------------------------------------------------------------- */

static int rcoll_active_side(rdma_op_t op, int producer)
{
    return (op == RDMA_GET) ? !producer : producer;
}

/* This rank's end of the lane with peer in one direction: an rpipe channel
 * that rcoll opened before (its tables were dropped) or a new one. */
static int rcoll_channel(rdma_op_t op, int peer, int producer, rch_t *ch_p)
{
    rmalloc_config_t cfg;
    int active = rcoll_active_side(op, producer);

    for (rch_t ch = rpipe_state.channels; ch != NULL; ch = ch->next) {
        if (ch->cfg.peer == peer && ch->cfg.context == RCOLL_CONTEXT_LANE && ch->cfg.op == op &&
            !!ch->cfg.rdma_active == active) {
            *ch_p = ch;
            return R_SUCCESS;
        }
    }
    rmalloc_config_init(&cfg);
    cfg.peer = peer;
    cfg.rdma_active = active;
    cfg.op = op;
    cfg.sync = NET_SYNC_TAGS; /* messages of any size up to the capacity */
    cfg.algorithm = NEXT_FIT;
    cfg.alloc_size = RCOLL_CHANNEL_BYTES;
    cfg.context = RCOLL_CONTEXT_LANE;
    cfg.queue_len = RCOLL_QUEUE_LEN;
    return rpipe(ch_p, &cfg);
}

static int rcoll_peer_get(rdma_op_t op, int rank, rcoll_peer_t **peer_p)
{
    rcoll_peer_t **table = rcoll_state.peers[op == RDMA_GET];
    rcoll_peer_t *peer;
    int status;

    if (table == NULL) {
        table = calloc((size_t)rcoll_state.nranks, sizeof(*table));
        if (table == NULL) {
            return R_ERR_NOMEM;
        }
        rcoll_state.peers[op == RDMA_GET] = table;
    }
    if (table[rank] != NULL) {
        *peer_p = table[rank];
        return R_SUCCESS;
    }
    peer = calloc(1, sizeof(*peer));
    if (peer == NULL) {
        return R_ERR_NOMEM;
    }
    peer->rank = rank;
    peer->unexp_tail = &peer->unexp;
    status = rcoll_channel(op, rank, 1, &peer->out);
    if (status == R_SUCCESS) {
        status = rcoll_channel(op, rank, 0, &peer->in);
    }
    if (status != R_SUCCESS) {
        /* a channel opened here stays with rpipe and is found again */
        free(peer);
        return status;
    }
    table[rank] = peer;
    *peer_p = peer;
    return R_SUCCESS;
}

/* Drops rcoll's tables once no handle is left (the channels stay open in
 * rpipe until rexit and are found again). Messages kept for a collective
 * that has not started yet keep the tables alive. */
/* Drops the peer tables when no early arrival is kept in them (those
 * belong to collectives still to come), or always when forced (rexit). */
static void rcoll_state_release(int force)
{
    for (int op = 0; op < 2 && !force; op++) {
        rcoll_peer_t **table = rcoll_state.peers[op];
        for (int r = 0; table != NULL && r < rcoll_state.nranks; r++) {
            if (table[r] != NULL && table[r]->unexp != NULL) {
                return;
            }
        }
    }
    for (int op = 0; op < 2; op++) {
        rcoll_peer_t **table = rcoll_state.peers[op];
        for (int r = 0; table != NULL && r < rcoll_state.nranks; r++) {
            for (rcoll_msg_t *m = table[r] ? table[r]->unexp : NULL, *next; m != NULL; m = next) {
                next = m->next;
                free(m);
            }
            free(table[r]);
        }
        free(table);
        rcoll_state.peers[op] = NULL;
    }
    rcoll_state.nranks = 0;
}

/* ---- groups ----------------------------------------------------------------------------- */

static uint64_t rcoll_group_key(int start, int log2stride, int size)
{
    return ((uint64_t)(uint32_t)start << 40) | ((uint64_t)(uint32_t)log2stride << 32) |
           (uint64_t)(uint32_t)size;
}

static rcoll_group_t *rcoll_group_get(uint64_t key)
{
    rcoll_group_t *g;

    for (g = rcoll_state.groups; g != NULL; g = g->next) {
        if (g->key == key) {
            g->refs++;
            return g;
        }
    }
    g = calloc(1, sizeof(*g));
    if (g != NULL) {
        g->key = key;
        g->refs = 1;
        g->next = rcoll_state.groups;
        rcoll_state.groups = g;
    }
    return g;
}

static void rcoll_group_put(rcoll_group_t *g)
{
    rcoll_group_t **link;

    if (--g->refs > 0) {
        return;
    }
    for (link = &rcoll_state.groups; *link != g; link = &(*link)->next) {
    }
    *link = g->next;
    free(g);
}

/* ---- schedule compiler ------------------------------------------------------------------ */

typedef struct {
    rcoll_action_t *acts;
    uint32_t nacts, cap;
    rcoll_round_t *rounds;
    uint32_t nrounds, rcap;
    int failed;
} rcoll_builder_t;

static void rcoll_round(rcoll_builder_t *b)
{
    if (b->nrounds == b->rcap) {
        uint32_t cap = b->rcap ? 2 * b->rcap : 8;
        rcoll_round_t *r = realloc(b->rounds, cap * sizeof(*r));
        if (r == NULL) {
            b->failed = 1;
            return;
        }
        b->rounds = r;
        b->rcap = cap;
    }
    b->rounds[b->nrounds].first = b->nacts;
    b->rounds[b->nrounds].count = 0;
    b->nrounds++;
}

static rcoll_action_t *rcoll_add(rcoll_builder_t *b, uint8_t kind)
{
    rcoll_action_t *a;

    if (b->failed || b->nrounds == 0) {
        b->failed = 1;
        return NULL;
    }
    if (b->nacts == b->cap) {
        uint32_t cap = b->cap ? 2 * b->cap : 16;
        rcoll_action_t *acts = realloc(b->acts, cap * sizeof(*acts));
        if (acts == NULL) {
            b->failed = 1;
            return NULL;
        }
        b->acts = acts;
        b->cap = cap;
    }
    a = &b->acts[b->nacts++];
    memset(a, 0, sizeof(*a));
    a->kind = kind;
    a->member = -1;
    b->rounds[b->nrounds - 1].count++;
    return a;
}

/* Local copy (skipped at run time when a pointer is NULL or both are the same). */
static void rcoll_copy(rcoll_builder_t *b, uint8_t from, size_t off, uint8_t to, size_t off2,
                       size_t bytes)
{
    rcoll_action_t *a = rcoll_add(b, RCOLL_ACT_COPY);
    if (a != NULL) {
        a->buf = from, a->off = off, a->buf2 = to, a->off2 = off2, a->bytes = bytes;
    }
}

static void rcoll_send(rcoll_builder_t *b, int member, uint32_t step, uint8_t buf, size_t off,
                       size_t bytes)
{
    rcoll_action_t *a = rcoll_add(b, RCOLL_ACT_SEND);
    if (a != NULL) {
        a->member = member, a->step = step, a->buf = buf, a->off = off, a->bytes = bytes;
    }
}

static void rcoll_recv(rcoll_builder_t *b, int member, uint32_t step, uint8_t mode, uint8_t buf,
                       size_t off, uint8_t buf2, size_t off2, size_t bytes)
{
    rcoll_action_t *a = rcoll_add(b, RCOLL_ACT_RECV);
    if (a != NULL) {
        a->member = member, a->step = step, a->mode = mode, a->buf = buf, a->off = off;
        a->buf2 = buf2, a->off2 = off2, a->bytes = bytes;
    }
}

static uint32_t rcoll_log2(unsigned v)
{
    return (uint32_t)__builtin_ctz(v);
}

/* Dissemination: ceil(log2 n) rounds, each one empty message to i + 2^k. */
static void rcoll_compile_barrier(rcoll_h h, rcoll_builder_t *b)
{
    int n = h->n, i = h->me;

    for (int d = 1; d < n; d <<= 1) {
        rcoll_round(b);
        rcoll_send(b, (i + d) % n, rcoll_log2(d), RCOLL_BUF_NONE, 0, 0);
        rcoll_recv(b, (i - d + n) % n, rcoll_log2(d), RCOLL_RECV_COPY, RCOLL_BUF_NONE, 0,
                   RCOLL_BUF_NONE, 0, 0);
    }
}

/* Binomial tree rooted at root (relative ranks v = i - root): a member
 * receives from v - lowbit(v), then sends to v + m for every m < lowbit(v). */
static void rcoll_compile_bcast(rcoll_h h, rcoll_builder_t *b)
{
    int n = h->n, root = h->cfg.root, v = (h->me - root + n) % n, mask = 1;
    uint8_t from = RCOLL_BUF_DST;

    rcoll_round(b);
    if (v == 0) {
        rcoll_copy(b, RCOLL_BUF_SRC, 0, RCOLL_BUF_DST, 0, h->block);
        from = RCOLL_BUF_SRC;
        while (mask < n) {
            mask <<= 1;
        }
    } else {
        while (!(v & mask)) {
            mask <<= 1;
        }
        rcoll_recv(b, (v - mask + root) % n, rcoll_log2(mask), RCOLL_RECV_COPY, RCOLL_BUF_DST, 0,
                   RCOLL_BUF_NONE, 0, h->block);
        rcoll_round(b);
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (v + mask < n) {
            rcoll_send(b, (v + mask + root) % n, rcoll_log2(mask), from, 0, h->block);
        }
    }
}

/* Binomial tree towards root; children are combined in a fixed order so
 * results do not depend on arrival order. */
static void rcoll_compile_reduce(rcoll_h h, rcoll_builder_t *b)
{
    int n = h->n, root = h->cfg.root, v = (h->me - root + n) % n;
    uint8_t acc = (v == 0) ? RCOLL_BUF_DST : RCOLL_BUF_TMP;

    rcoll_round(b);
    rcoll_copy(b, RCOLL_BUF_SRC, 0, acc, 0, h->block);
    for (int mask = 1; mask < n; mask <<= 1) {
        rcoll_round(b);
        if (v & mask) {
            rcoll_send(b, (v - mask + root) % n, rcoll_log2(mask), acc, 0, h->block);
            break;
        }
        if (v + mask < n) {
            rcoll_recv(b, (v + mask + root) % n, rcoll_log2(mask), RCOLL_RECV_REDUCE, acc, 0,
                       RCOLL_BUF_NONE, 0, h->block);
        }
    }
}

/* Recursive doubling over the largest power of two p2 <= n; the n - p2
 * extra members first hand their data to member i - p2 and get the result
 * back at the end. Partners combine the same two values, so every member
 * ends with the same bits (the operation is commutative). */
static void rcoll_compile_allreduce(rcoll_h h, rcoll_builder_t *b)
{
    int n = h->n, i = h->me, p2 = 1;

    while (2 * p2 <= n) {
        p2 <<= 1;
    }
    rcoll_round(b);
    rcoll_copy(b, RCOLL_BUF_SRC, 0, RCOLL_BUF_DST, 0, h->block);
    if (i >= p2) {
        rcoll_send(b, i - p2, 0, RCOLL_BUF_DST, 0, h->block);
        rcoll_round(b);
        rcoll_recv(b, i - p2, RCOLL_STEP_FINAL, RCOLL_RECV_COPY, RCOLL_BUF_DST, 0, RCOLL_BUF_NONE,
                   0, h->block);
        return;
    }
    if (i + p2 < n) {
        rcoll_recv(b, i + p2, 0, RCOLL_RECV_REDUCE, RCOLL_BUF_DST, 0, RCOLL_BUF_NONE, 0, h->block);
    }
    for (int mask = 1; mask < p2; mask <<= 1) {
        rcoll_round(b);
        rcoll_send(b, i ^ mask, 1 + rcoll_log2(mask), RCOLL_BUF_DST, 0, h->block);
        rcoll_recv(b, i ^ mask, 1 + rcoll_log2(mask), RCOLL_RECV_REDUCE, RCOLL_BUF_DST, 0,
                   RCOLL_BUF_NONE, 0, h->block);
    }
    if (i + p2 < n) {
        rcoll_round(b);
        rcoll_send(b, i + p2, RCOLL_STEP_FINAL, RCOLL_BUF_DST, 0, h->block);
    }
}

/* Small blocks: every member sends its block to every other in one round
 * (one latency). Large blocks: a ring of n - 1 rounds, each link carrying
 * one block per round (bandwidth-optimal). */
#define RCOLL_ALLGATHER_DIRECT_MAX 4096

static void rcoll_compile_allgather(rcoll_h h, rcoll_builder_t *b)
{
    int n = h->n, i = h->me;
    size_t B = h->block;

    rcoll_round(b);
    rcoll_copy(b, RCOLL_BUF_SRC, 0, RCOLL_BUF_DST, (size_t)i * B, B);
    if (B <= RCOLL_ALLGATHER_DIRECT_MAX) {
        for (int d = 1; d < n; d++) {
            rcoll_send(b, (i + d) % n, 0, RCOLL_BUF_SRC, 0, B);
        }
        for (int d = 1; d < n; d++) {
            int j = (i - d + n) % n;
            rcoll_recv(b, j, 0, RCOLL_RECV_COPY, RCOLL_BUF_DST, (size_t)j * B, RCOLL_BUF_NONE, 0,
                       B);
        }
        return;
    }
    for (int s = 0; s < n - 1; s++) {
        rcoll_round(b);
        rcoll_send(b, (i + 1) % n, (uint32_t)s, RCOLL_BUF_DST, (size_t)((i - s + n) % n) * B, B);
        rcoll_recv(b, (i - 1 + n) % n, (uint32_t)s, RCOLL_RECV_COPY, RCOLL_BUF_DST,
                   (size_t)((i - s - 1 + 2 * n) % n) * B, RCOLL_BUF_NONE, 0, B);
    }
}

/* Recursive doubling (Hillis-Steele): in round k member i sends its partial
 * result over [i - 2^k + 1, i] to i + 2^k and folds in the one of i - 2^k.
 * The exclusive scan also folds the received values alone into dst. */
static void rcoll_compile_scan(rcoll_h h, rcoll_builder_t *b, int exclusive)
{
    int n = h->n, i = h->me;
    uint8_t acc = exclusive ? RCOLL_BUF_TMP : RCOLL_BUF_DST;

    rcoll_round(b);
    rcoll_copy(b, RCOLL_BUF_SRC, 0, acc, 0, h->block);
    for (int mask = 1; mask < n; mask <<= 1) {
        rcoll_round(b);
        if (i + mask < n) {
            rcoll_send(b, i + mask, rcoll_log2(mask), acc, 0, h->block);
        }
        if (i - mask < 0) {
            continue;
        }
        if (exclusive) {
            rcoll_recv(b, i - mask, rcoll_log2(mask),
                       mask == 1 ? RCOLL_RECV_COPY : RCOLL_RECV_REDUCE, RCOLL_BUF_DST, 0,
                       i + mask < n ? acc : RCOLL_BUF_NONE, 0, h->block);
        } else {
            rcoll_recv(b, i - mask, rcoll_log2(mask), RCOLL_RECV_REDUCE, acc, 0, RCOLL_BUF_NONE, 0,
                       h->block);
        }
    }
}

/* Scatter and gather go directly between the root and every member: one
 * round, n - 1 messages at the root. */
static void rcoll_compile_scatter(rcoll_h h, rcoll_builder_t *b)
{
    int n = h->n, root = h->cfg.root;
    size_t B = h->block;

    rcoll_round(b);
    if (h->me != root) {
        rcoll_recv(b, root, 0, RCOLL_RECV_COPY, RCOLL_BUF_DST, 0, RCOLL_BUF_NONE, 0, B);
        return;
    }
    rcoll_copy(b, RCOLL_BUF_SRC, (size_t)root * B, RCOLL_BUF_DST, 0, B);
    for (int d = 1; d < n; d++) {
        int j = (root + d) % n;
        rcoll_send(b, j, 0, RCOLL_BUF_SRC, (size_t)j * B, B);
    }
}

static void rcoll_compile_gather(rcoll_h h, rcoll_builder_t *b)
{
    int n = h->n, root = h->cfg.root;
    size_t B = h->block;

    rcoll_round(b);
    if (h->me != root) {
        rcoll_send(b, root, 0, RCOLL_BUF_SRC, 0, B);
        return;
    }
    rcoll_copy(b, RCOLL_BUF_SRC, 0, RCOLL_BUF_DST, (size_t)root * B, B);
    for (int d = 1; d < n; d++) {
        int j = (root + d) % n;
        rcoll_recv(b, j, 0, RCOLL_RECV_COPY, RCOLL_BUF_DST, (size_t)j * B, RCOLL_BUF_NONE, 0, B);
    }
}

/* Every pair exchanges directly in one round; member i starts with i + 1
 * so that not everyone sends to the same member first. */
static void rcoll_compile_alltoall(rcoll_h h, rcoll_builder_t *b)
{
    int n = h->n, i = h->me;
    size_t B = h->block;

    rcoll_round(b);
    rcoll_copy(b, RCOLL_BUF_SRC, (size_t)i * B, RCOLL_BUF_DST, (size_t)i * B, B);
    for (int d = 1; d < n; d++) {
        int j = (i + d) % n;
        rcoll_send(b, j, 0, RCOLL_BUF_SRC, (size_t)j * B, B);
    }
    for (int d = 1; d < n; d++) {
        int j = (i - d + n) % n;
        rcoll_recv(b, j, 0, RCOLL_RECV_COPY, RCOLL_BUF_DST, (size_t)j * B, RCOLL_BUF_NONE, 0, B);
    }
}

static int rcoll_compile(rcoll_h h)
{
    rcoll_builder_t b;

    memset(&b, 0, sizeof(b));
    switch (h->cfg.type) {
    case RCOLL_BARRIER:
        rcoll_compile_barrier(h, &b);
        break;
    case RCOLL_BCAST:
        rcoll_compile_bcast(h, &b);
        break;
    case RCOLL_REDUCE:
        rcoll_compile_reduce(h, &b);
        break;
    case RCOLL_ALLREDUCE:
        rcoll_compile_allreduce(h, &b);
        break;
    case RCOLL_ALLGATHER:
        rcoll_compile_allgather(h, &b);
        break;
    case RCOLL_SCAN:
        rcoll_compile_scan(h, &b, 0);
        break;
    case RCOLL_EXSCAN:
        rcoll_compile_scan(h, &b, 1);
        break;
    case RCOLL_SCATTER:
        rcoll_compile_scatter(h, &b);
        break;
    case RCOLL_GATHER:
        rcoll_compile_gather(h, &b);
        break;
    case RCOLL_ALLTOALL:
        rcoll_compile_alltoall(h, &b);
        break;
    }
    if (b.failed) {
        free(b.acts);
        free(b.rounds);
        return R_ERR_NOMEM;
    }
    h->acts = b.acts;
    h->nacts = b.nacts;
    h->rounds = b.rounds;
    h->nrounds = b.nrounds;
    return R_SUCCESS;
}

/* ---- message transfer --------------------------------------------------------------------- */

static inline uint64_t rcoll_tag(const rcoll_h h, const rcoll_action_t *a)
{
    return h->tag_base | a->step;
}

/* Sends what is left of a (fragments of at most h->frag bytes). */
static int rcoll_send_progress(rcoll_h h, uint32_t k)
{
    const rcoll_action_t *a = &h->acts[k];
    rch_t ch = a->peer->out;
    size_t done = h->done[k];

    do {
        size_t len = a->bytes - done < h->frag ? a->bytes - done : h->frag;
        unsigned char *p;
        raddr_t d;
        int status = rmalloc_nb(ch, RCOLL_TAG_BYTES + len, &d);

        if (status != R_SUCCESS) {
            h->done[k] = done;
            return status;
        }
        p = rmem(ch, d);
        *(uint64_t *)network_header(ch, d) = h->group->key;
        *(uint64_t *)p = rcoll_tag(h, a);
        if (len > 0) {
            memcpy(p + RCOLL_TAG_BYTES, h->base[a->buf] + a->off + done, len);
        }
        status = rwrite(ch, d);
        if (status != R_SUCCESS) {
            return status;
        }
        done += len;
    } while (done < a->bytes);
    h->done[k] = done;
    h->finished[k] = 1;
    return R_SUCCESS;
}

/* Applies one received fragment of len bytes to receive action k. */
static int rcoll_apply(rcoll_h h, uint32_t k, const unsigned char *data, size_t len)
{
    const rcoll_action_t *a = &h->acts[k];
    size_t done = h->done[k];

    if (len > a->bytes - done) {
        util_error("rcoll: %zu bytes from rank %d exceed the %zu expected (members disagree "
                   "on the collective)",
                   len, a->peer->rank, a->bytes - done);
        return R_ERR_TRUNCATED;
    }
    if (len > 0) {
        unsigned char *to = h->base[a->buf] + a->off + done;
        if (a->mode == RCOLL_RECV_COPY) {
            memcpy(to, data, len);
        } else {
            h->reduce(to, data, len / h->esize);
        }
        if (a->buf2 != RCOLL_BUF_NONE) {
            h->reduce(h->base[a->buf2] + a->off2 + done, data, len / h->esize);
        }
    }
    done += len;
    h->done[k] = done;
    if (done == a->bytes) {
        h->finished[k] = 1;
    }
    return R_SUCCESS;
}

/* Copies a message nobody is waiting for yet into the peer's list and
 * frees it in the channel. */
static int rcoll_stash(rcoll_peer_t *peer, raddr_t d, const unsigned char *p)
{
    size_t len = d.payload - RCOLL_TAG_BYTES;
    rcoll_msg_t *m = malloc(sizeof(*m) + len);

    if (m == NULL) {
        return R_ERR_NOMEM;
    }
    m->next = NULL;
    m->key = *(uint64_t *)network_header(peer->in, d);
    m->tag = *(const uint64_t *)p;
    m->len = len;
    memcpy(m->data, p + RCOLL_TAG_BYTES, len);
    *peer->unexp_tail = m;
    peer->unexp_tail = &m->next;
    return rfree(peer->in, d);
}

/* Reads the next message from peer; R_PENDING when none is there. */
static inline int rcoll_read(rcoll_peer_t *peer, raddr_t *d_p, unsigned char **p_p)
{
    void *p;
    int status = rread_nb(peer->in, d_p, &p, RCOLL_CHANNEL_BYTES);

    if (status == R_SUCCESS) {
        if (d_p->payload < RCOLL_TAG_BYTES) {
            util_error("rcoll: malformed message from rank %d", peer->rank);
            return R_ERR_STATE;
        }
        *p_p = p;
    }
    return status;
}

/* Moves everything waiting in peer's channel to its unexpected list. */
static int rcoll_drain(rcoll_peer_t *peer)
{
    raddr_t d;
    unsigned char *p;
    int status;

    while ((status = rcoll_read(peer, &d, &p)) == R_SUCCESS) {
        status = rcoll_stash(peer, d, p);
        if (status != R_SUCCESS) {
            return status;
        }
    }
    return status == R_PENDING ? R_SUCCESS : status;
}

static int rcoll_recv_progress(rcoll_h h, uint32_t k)
{
    const rcoll_action_t *a = &h->acts[k];
    rcoll_peer_t *peer = a->peer;
    uint64_t key = h->group->key, tag = rcoll_tag(h, a);
    int status = R_SUCCESS;

    /* Earlier arrivals first: they precede anything still in the channel. */
    if (peer->unexp != NULL) {
        rcoll_msg_t **link = &peer->unexp, *m;
        while ((m = *link) != NULL && !h->finished[k]) {
            if (m->key != key || m->tag != tag) {
                link = &m->next;
                continue;
            }
            *link = m->next;
            if (peer->unexp_tail == &m->next) {
                peer->unexp_tail = link;
            }
            status = rcoll_apply(h, k, m->data, m->len);
            free(m);
            if (status != R_SUCCESS) {
                return status;
            }
        }
    }
    while (!h->finished[k]) {
        raddr_t d;
        unsigned char *p;

        status = rcoll_read(peer, &d, &p);
        if (status != R_SUCCESS) {
            return status;
        }
        if (__builtin_expect(
                *(uint64_t *)network_header(peer->in, d) == key && *(uint64_t *)p == tag, 1)) {
            status = rcoll_apply(h, k, p + RCOLL_TAG_BYTES, d.payload - RCOLL_TAG_BYTES);
            if (status == R_SUCCESS) {
                status = rfree(peer->in, d);
            }
        } else {
            status = rcoll_stash(peer, d, p);
        }
        if (status != R_SUCCESS) {
            return status;
        }
    }
    return R_SUCCESS;
}

/* ---- running a schedule -------------------------------------------------------------------- */

static int rcoll_run_copies(rcoll_h h, const rcoll_round_t *r)
{
    for (uint32_t k = r->first; k < r->first + r->count; k++) {
        const rcoll_action_t *a = &h->acts[k];
        unsigned char *from, *to;

        if (a->kind != RCOLL_ACT_COPY) {
            continue;
        }
        from = h->base[a->buf];
        to = h->base[a->buf2];
        if (from != NULL && to != NULL && from + a->off != to + a->off2 && a->bytes > 0) {
            memmove(to + a->off2, from + a->off, a->bytes);
        }
    }
    return R_SUCCESS;
}

/* Advances h as far as it goes without waiting. */
static int rcoll_advance(rcoll_h h)
{
    int status;

    while (h->round < h->nrounds) {
        const rcoll_round_t *r = &h->rounds[h->round];
        uint32_t end = r->first + r->count, k;
        int pending = 0;

        if (!h->copied) {
            rcoll_run_copies(h, r);
            h->copied = 1;
        }
        /* Sends in order (messages to one peer keep their order). */
        for (k = r->first; k < end; k++) {
            if (h->acts[k].kind != RCOLL_ACT_SEND || h->finished[k]) {
                continue;
            }
            status = rcoll_send_progress(h, k);
            if (status == R_PENDING) {
                /* The peer's channel is full: drain ours so that it can
                 * drain its own, whatever it is waiting for. */
                for (uint32_t p = 0; p < h->npeers; p++) {
                    status = rcoll_drain(h->peers[p]);
                    if (status != R_SUCCESS) {
                        return status;
                    }
                }
                return R_PENDING;
            }
            if (status != R_SUCCESS) {
                return status;
            }
        }
        for (k = r->first; k < end; k++) {
            if (h->acts[k].kind != RCOLL_ACT_RECV || h->finished[k]) {
                continue;
            }
            status = rcoll_recv_progress(h, k);
            if (status == R_PENDING) {
                pending = 1;
            } else if (status != R_SUCCESS) {
                return status;
            }
        }
        if (pending) {
            return R_PENDING;
        }
        h->round++;
        h->copied = 0;
    }
    return R_SUCCESS;
}

static void rcoll_unlink(rcoll_h h)
{
    rcoll_h *link;

    for (link = &rcoll_state.active; *link != NULL; link = &(*link)->next_active) {
        if (*link == h) {
            *link = h->next_active;
            break;
        }
    }
}

/* One pass over every collective in flight. */
static void rcoll_progress_all(void)
{
    rcoll_h h = rcoll_state.active;

    while (h != NULL) {
        rcoll_h next = h->next_active;
        int status = rcoll_advance(h);

        if (status != R_PENDING) {
            h->state = (status == R_SUCCESS) ? RCOLL_DONE : RCOLL_FAILED;
            h->error = status;
            rcoll_unlink(h);
        }
        h = next;
    }
}

static int rcoll_check_buffers(rcoll_h h)
{
    for (uint32_t k = 0; k < h->nacts; k++) {
        const rcoll_action_t *a = &h->acts[k];
        /* a copy's destination may be absent (the root's dst of a broadcast) */
        if (a->bytes > 0 && a->buf != RCOLL_BUF_NONE && h->base[a->buf] == NULL) {
            util_error("rcoll: this operation needs a %s buffer on member %d",
                       a->buf == RCOLL_BUF_SRC ? "source" : "destination", h->me);
            return R_ERR_INVALID;
        }
    }
    return R_SUCCESS;
}

static int rcoll_start(rcoll_h h, const void *src, void *dst)
{
    int status;

    h->base[RCOLL_BUF_NONE] = NULL;
    h->base[RCOLL_BUF_SRC] = (unsigned char *)(uintptr_t)src;
    h->base[RCOLL_BUF_DST] = dst;
    h->base[RCOLL_BUF_TMP] = h->tmp;
    if (h->block > 0) {
        status = rcoll_check_buffers(h);
        if (status != R_SUCCESS) {
            return status;
        }
    }
    h->tag_base = (h->group->seq++ & ((1ull << (64 - RCOLL_STEP_BITS)) - 1)) << RCOLL_STEP_BITS;
    h->round = 0;
    h->copied = 0;
    h->error = R_SUCCESS;
    if (h->nacts > 0) {
        memset(h->done, 0, h->nacts * sizeof(*h->done));
        memset(h->finished, 0, h->nacts);
    }
    h->state = RCOLL_ACTIVE;
    h->next_active = rcoll_state.active;
    rcoll_state.active = h;
    return R_SUCCESS;
}

static int rcoll_result(rcoll_h h)
{
    switch (h->state) {
    case RCOLL_DONE:
        return R_SUCCESS;
    case RCOLL_ACTIVE:
        return R_PENDING;
    case RCOLL_FAILED:
        return h->error;
    default:
        return R_ERR_STATE;
    }
}

/* ---- API ----------------------------------------------------------------------------------- */

void rcoll_config_init(rcoll_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->type = RCOLL_BARRIER;
    cfg->group_size = RCOLL_GROUP_ALL;
    cfg->dtype = RCOLL_BYTES;
    cfg->op = RCOLL_OP_NONE;
    cfg->rdma_op = RDMA_PUT;
}

static int rcoll_is_reduction(rcoll_type_t type)
{
    return type == RCOLL_REDUCE || type == RCOLL_ALLREDUCE || type == RCOLL_SCAN ||
           type == RCOLL_EXSCAN;
}

static int rcoll_check_config(rcoll_h h, const rcoll_config_t *cfg)
{
    int nranks = (int)rpipe_state.size, start, lstride, size;

    if (rpipe_state.refcount == 0) {
        util_error("rcoll: call rinit() first");
        return R_ERR_STATE;
    }
    if ((unsigned)cfg->type > RCOLL_ALLTOALL ||
        (cfg->rdma_op != RDMA_PUT && cfg->rdma_op != RDMA_GET)) {
        util_error("rcoll: unknown operation %d or RDMA op %d", (int)cfg->type, (int)cfg->rdma_op);
        return R_ERR_INVALID;
    }
    start = cfg->group_size == RCOLL_GROUP_ALL ? 0 : cfg->group_start;
    lstride = cfg->group_size == RCOLL_GROUP_ALL ? 0 : cfg->group_log2stride;
    size = cfg->group_size == RCOLL_GROUP_ALL ? nranks : cfg->group_size;
    if (start < 0 || lstride < 0 || lstride > 30 || size < 1 || start >= nranks ||
        (long long)start + ((long long)(size - 1) << lstride) >= nranks) {
        util_error("rcoll: active set start %d, log2 stride %d, size %d does not fit %d ranks",
                   cfg->group_start, cfg->group_log2stride, cfg->group_size, nranks);
        return R_ERR_INVALID;
    }
    if (rpipe_state.rank < start || ((rpipe_state.rank - start) & ((1 << lstride) - 1)) != 0 ||
        ((rpipe_state.rank - start) >> lstride) >= size) {
        util_error("rcoll: rank %d is not a member of the active set (start %d, log2 stride "
                   "%d, size %d)",
                   rpipe_state.rank, start, lstride, size);
        return R_ERR_INVALID;
    }
    h->me = (rpipe_state.rank - start) >> lstride;
    h->n = size;
    h->cfg.group_start = start;
    h->cfg.group_log2stride = lstride;
    h->cfg.group_size = size;
    if (cfg->root < 0 || cfg->root >= size) {
        util_error("rcoll: root %d is not a member index (0..%d)", cfg->root, size - 1);
        return R_ERR_INVALID;
    }
    h->esize = cfg->elem_size ? cfg->elem_size : rcoll_dtype_size(cfg->dtype);
    if (cfg->type != RCOLL_BARRIER && cfg->count > 0 && h->esize == 0) {
        util_error("rcoll: element size unknown (set elem_size or a dtype)");
        return R_ERR_INVALID;
    }
    if (cfg->type == RCOLL_BARRIER) {
        h->esize = 1;
        h->block = 0;
    } else {
        if (h->esize > 0 && cfg->count > SIZE_MAX / h->esize / (size_t)size) {
            return R_ERR_OVERFLOW;
        }
        h->block = cfg->count * h->esize;
    }
    if (rcoll_is_reduction(cfg->type)) {
        h->reduce = cfg->user_op;
        if (h->reduce == NULL) {
            if (cfg->elem_size != 0 && cfg->elem_size != rcoll_dtype_size(cfg->dtype)) {
                util_error("rcoll: elem_size %zu does not match the dtype", cfg->elem_size);
                return R_ERR_INVALID;
            }
            h->reduce = rcoll_ops_lookup(cfg->dtype, cfg->op);
        }
        if (h->reduce == NULL) {
            util_error("rcoll: no reduction for dtype %d and op %d (bitwise ops need an "
                       "integer type; or give user_op)",
                       (int)cfg->dtype, (int)cfg->op);
            return R_ERR_INVALID;
        }
    }
    /* Fragments: a quarter of the channel, whole elements. */
    h->frag = (RCOLL_CHANNEL_BYTES / 4 - RCOLL_TAG_BYTES) / h->esize * h->esize;
    if (h->frag == 0) {
        util_error("rcoll: elements of %zu bytes are larger than a fragment", h->esize);
        return R_ERR_OVERFLOW;
    }
    return R_SUCCESS;
}

static int rcoll_member_rank(rcoll_h h, int member)
{
    return h->cfg.group_start + (member << h->cfg.group_log2stride);
}

/* Finds or creates the channels of every peer of the schedule, then
 * connects them (all are created first: a peer never waits for us). */
static int rcoll_bind_peers(rcoll_h h)
{
    int status;

    h->peers = calloc(h->nacts > 0 ? h->nacts : 1, sizeof(*h->peers));
    if (h->peers == NULL) {
        return R_ERR_NOMEM;
    }
    for (uint32_t k = 0; k < h->nacts; k++) {
        rcoll_action_t *a = &h->acts[k];
        uint32_t p;

        if (a->member < 0) {
            continue;
        }
        status = rcoll_peer_get(h->cfg.rdma_op, rcoll_member_rank(h, a->member), &a->peer);
        if (status != R_SUCCESS) {
            return status;
        }
        for (p = 0; p < h->npeers && h->peers[p] != a->peer; p++) {
        }
        if (p == h->npeers) {
            h->peers[h->npeers++] = a->peer;
        }
    }
    for (uint32_t p = 0; p < h->npeers; p++) {
        status = rpipe_ready(h->peers[p]->out);
        if (status == R_SUCCESS) {
            status = rpipe_ready(h->peers[p]->in);
        }
        if (status != R_SUCCESS) {
            return status;
        }
    }
    return R_SUCCESS;
}

static void rcoll_destroy(rcoll_h h)
{
    free(h->acts);
    free(h->rounds);
    free(h->done);
    free(h->finished);
    free(h->peers);
    free(h->tmp);
    if (h->group != NULL) {
        rcoll_group_put(h->group);
    }
    if (h->all_prev != NULL) {
        h->all_prev->all_next = h->all_next;
    } else if (rcoll_state.all == h) {
        rcoll_state.all = h->all_next;
    }
    if (h->all_next != NULL) {
        h->all_next->all_prev = h->all_prev;
    }
    free(h);
    if (--rcoll_state.handles == 0) {
        rcoll_state_release(0);
    }
}

/* rexit's finalize hook, before the channels close: frees every live
 * handle and everything rcoll still holds (handles are invalid afterwards). */
static void rcoll_finalize(void)
{
    rcoll_state.active = NULL; /* whatever was in flight is abandoned */
    while (rcoll_state.all != NULL) {
        rcoll_destroy(rcoll_state.all);
    }
    rcoll_state_release(1);
}

int rcoll_init(rcoll_h *handle_p, const rcoll_config_t *cfg)
{
    rcoll_h h;
    int status;

    if (handle_p == NULL || cfg == NULL) {
        return R_ERR_INVALID;
    }
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return R_ERR_NOMEM;
    }
    h->cfg = *cfg;
    rcoll_state.handles++;
    h->all_next = rcoll_state.all;
    if (rcoll_state.all != NULL) {
        rcoll_state.all->all_prev = h;
    }
    rcoll_state.all = h;
    status = rcoll_check_config(h, cfg);
    if (status != R_SUCCESS) {
        goto err;
    }
    status = rpipe_finalize_hook_add(rcoll_finalize);
    if (status != R_SUCCESS) {
        goto err;
    }
    if (rcoll_state.nranks == 0) {
        rcoll_state.nranks = (int)rpipe_state.size;
    }
    h->group = rcoll_group_get(
        rcoll_group_key(h->cfg.group_start, h->cfg.group_log2stride, h->cfg.group_size));
    if (h->group == NULL) {
        status = R_ERR_NOMEM;
        goto err;
    }
    if (cfg->type == RCOLL_REDUCE || cfg->type == RCOLL_EXSCAN) {
        h->tmp_bytes = h->block;
    }
    if (h->tmp_bytes > 0 && (h->tmp = malloc(h->tmp_bytes)) == NULL) {
        status = R_ERR_NOMEM;
        goto err;
    }
    status = rcoll_compile(h);
    if (status != R_SUCCESS) {
        goto err;
    }
    h->done = calloc(h->nacts > 0 ? h->nacts : 1, sizeof(*h->done));
    h->finished = calloc(h->nacts > 0 ? h->nacts : 1, 1);
    if (h->done == NULL || h->finished == NULL) {
        status = R_ERR_NOMEM;
        goto err;
    }
    status = rcoll_bind_peers(h);
    if (status != R_SUCCESS) {
        goto err;
    }
    h->state = RCOLL_IDLE;
    *handle_p = h;
    return R_SUCCESS;

err:
    rcoll_destroy(h);
    return status;
}

int rcoll_nb(rcoll_h h, const void *src, void *dst)
{
    int status;

    if (h == NULL) {
        return R_ERR_INVALID;
    }
    if (h->state == RCOLL_IDLE) {
        status = rcoll_start(h, src, dst);
        if (status != R_SUCCESS) {
            return status;
        }
    }
    if (rcoll_state.active != NULL) {
        rcoll_progress_all();
    }
    return rcoll_result(h);
}

int rcoll_test(rcoll_h h)
{
    if (h == NULL) {
        return R_ERR_INVALID;
    }
    if (h->state == RCOLL_IDLE) {
        return R_ERR_STATE;
    }
    if (rcoll_state.active != NULL) {
        rcoll_progress_all();
    }
    return rcoll_result(h);
}

int rcoll_wait(rcoll_h h)
{
    rpipe_wait_t wait;

    if (h == NULL) {
        return R_ERR_INVALID;
    }
    if (h->state == RCOLL_IDLE) {
        return R_ERR_STATE;
    }
    rpipe_wait_init(&wait);
    for (;;) {
        rcoll_progress_all();
        if (h->state != RCOLL_ACTIVE) {
            return rcoll_result(h);
        }
        rpipe_wait_step(&wait);
    }
}

int rcoll(rcoll_h h, const void *src, void *dst)
{
    int status;

    if (h == NULL) {
        return R_ERR_INVALID;
    }
    if (h->state == RCOLL_ACTIVE) {
        util_error("rcoll: the collective is in flight (rcoll_wait it first)");
        return R_ERR_BUSY;
    }
    h->state = RCOLL_IDLE;
    status = rcoll_start(h, src, dst);
    if (status != R_SUCCESS) {
        return status;
    }
    return rcoll_wait(h);
}

int rcoll_progress(void)
{
    if (rcoll_state.active != NULL) {
        rcoll_progress_all();
    }
    return rcoll_state.active != NULL ? R_PENDING : R_SUCCESS;
}

int rcoll_reset(rcoll_h h)
{
    if (h == NULL) {
        return R_ERR_INVALID;
    }
    if (h->state == RCOLL_ACTIVE) {
        return R_ERR_BUSY;
    }
    h->state = RCOLL_IDLE;
    return R_SUCCESS;
}

int rcoll_free(rcoll_h h)
{
    if (h == NULL) {
        return R_ERR_INVALID;
    }
    if (h->state == RCOLL_ACTIVE) {
        return R_ERR_BUSY;
    }
    rcoll_destroy(h);
    return R_SUCCESS;
}

int rcoll_group_rank(rcoll_h h)
{
    return h != NULL ? h->me : R_ERR_INVALID;
}

int rcoll_group_size(rcoll_h h)
{
    return h != NULL ? h->n : R_ERR_INVALID;
}
