/*
 * rcoll internals: compiled schedules (rounds of copy/send/receive actions)
 * and the per-peer channel pairs shared by every handle.
 */
#ifndef RCOLL_INT_H
#define RCOLL_INT_H

#include "rpipe/rcoll.h"

#include <stddef.h>
#include <stdint.h>

/* rpipe contexts reserved for rcoll on every ordered rank pair: 128..255.
 * One lane (128) carries every handle's messages today; the rest are kept
 * for more lanes (large messages, separate progress). */
#define RCOLL_CONTEXT_FIRST 128u
#define RCOLL_CONTEXT_LAST  255u
#define RCOLL_CONTEXT_LANE  RCOLL_CONTEXT_FIRST

/* Capacity of each rcoll channel; messages larger than a quarter of it go
 * in fragments so that several are in flight. */
#define RCOLL_CHANNEL_BYTES (64u * 1024u)
#define RCOLL_TAG_BYTES     8u /* seq/step word at the start of every payload */
/* Tag queue entries of each rcoll channel. The default sizing (twice the
 * 8-byte messages 64 KiB could hold: 8192 entries, 768 KiB of sync buffer
 * zeroed at connect, per channel) cost a 4-PE job 24 ms of page faults per PE
 * at rcoll_init. A collective has a few messages per peer in flight; a fast
 * producer running further ahead waits in deferral, as any full queue does. */
#define RCOLL_QUEUE_LEN 256u

/* A message that arrived before its collective wanted it: copied out of the
 * channel (the only allocation on a data path, and only out of order). */
typedef struct rcoll_msg {
    struct rcoll_msg *next;
    uint64_t key, tag;
    size_t len;
    unsigned char data[];
} rcoll_msg_t;

/* Both directions with one rank, shared by every handle (per RDMA op). */
typedef struct rcoll_peer {
    int rank;
    rch_t out, in;      /* out: this rank produces; in: it consumes */
    rcoll_msg_t *unexp; /* arrived early, in arrival order */
    rcoll_msg_t **unexp_tail;
} rcoll_peer_t;

enum { RCOLL_BUF_NONE = 0, RCOLL_BUF_SRC, RCOLL_BUF_DST, RCOLL_BUF_TMP, RCOLL_BUF_MAX };
enum { RCOLL_ACT_COPY = 0, RCOLL_ACT_SEND, RCOLL_ACT_RECV };
enum { RCOLL_RECV_COPY = 0, RCOLL_RECV_REDUCE };

typedef struct rcoll_action {
    uint8_t kind;  /* RCOLL_ACT_* */
    uint8_t mode;  /* RECV: RCOLL_RECV_* into buf */
    uint8_t buf;   /* SEND: from; RECV: into; COPY: from */
    uint8_t buf2;  /* COPY: to; RECV: also reduce into (or NONE) */
    uint32_t step; /* matches a send with its receive */
    int member;    /* peer's member index (at compile time) */
    rcoll_peer_t *peer;
    size_t off, off2, bytes;
} rcoll_action_t;

typedef struct rcoll_round {
    uint32_t first, count; /* actions [first, first + count) */
} rcoll_round_t;

typedef struct rcoll_group {
    uint64_t key; /* start, log2 stride, size: exact */
    uint64_t seq; /* collectives started on this group */
    unsigned refs;
    struct rcoll_group *next;
} rcoll_group_t;

enum { RCOLL_IDLE = 0, RCOLL_ACTIVE, RCOLL_DONE, RCOLL_FAILED };

struct rcoll_handle {
    rcoll_config_t cfg;
    rcoll_group_t *group;
    int me, n; /* member index, member count */
    size_t esize, block;
    size_t frag; /* most data bytes per message */
    rcoll_user_op_func_t reduce;
    rcoll_action_t *acts;
    uint32_t nacts;
    rcoll_round_t *rounds;
    uint32_t nrounds;
    size_t *done;         /* per action: bytes moved */
    uint8_t *finished;    /* per action */
    rcoll_peer_t **peers; /* distinct peers of the schedule */
    uint32_t npeers;
    void *tmp;
    size_t tmp_bytes;

    /* one run */
    int state;
    int error;
    uint64_t tag_base; /* seq << 24 */
    uint32_t round;
    int copied; /* this round's copies are done */
    unsigned char *base[RCOLL_BUF_MAX];
    struct rcoll_handle *next_active;
    struct rcoll_handle *all_prev, *all_next; /* every live handle (for rexit) */
};

size_t rcoll_dtype_size(rcoll_dtype_t dtype);
rcoll_user_op_func_t rcoll_ops_lookup(rcoll_dtype_t dtype, rcoll_op_t op);

#endif
