/*
 * btl/verbs, the device-independent half: everything that can be decided
 * without an RDMA device, so that it is unit-tested on machines without one
 * (tests/btl/check_btl_verbs.c). Nothing here calls into libibverbs; the
 * header is included only for its struct and enum types.
 *
 *   connection metadata  what a rank publishes per peer for an RC QP (LID,
 *                        GID, QPN, PSN, MTU): a fixed little-endian layout
 *                        with a magic byte and a version.
 *   packed rkey          (address, length, rkey) of a registration.
 *   work requests        ibv_send_wr/ibv_sge builders for each operation.
 *   credits              send-queue and CQ accounting so that neither is
 *                        overrun, with one signaled WR every N.
 *   completion errors    ibv_wc_status -> util_status_t and a sentence.
 *   atomics              the network has 64-bit fetch-add and
 *                        compare-and-swap; every other op and every 32-bit
 *                        op runs as a loop over those two primitives.
 */
#ifndef BTL_VERBS_WIRE_H
#define BTL_VERBS_WIRE_H

#include "btl/btl.h"

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

/* ---- connection metadata ---- */
#define BTL_VERBS_CONN_MAGIC   0xb5
#define BTL_VERBS_CONN_VERSION 1
#define BTL_VERBS_CONN_SIZE    32 /* packed bytes */

/* One side of an RC connection, as published for one peer. */
typedef struct {
    uint16_t lid; /* 0 on RoCE */
    uint8_t port;
    uint8_t mtu;     /* enum ibv_mtu (1..5) */
    uint8_t has_gid; /* 1: route with a GRH (RoCE, or IB across subnets) */
    uint8_t gid[16];
    uint32_t qpn; /* 24 bits */
    uint32_t psn; /* 24 bits: first packet sequence number */
} btl_verbs_conn_t;

/* Layout: magic, version, port, mtu, has_gid, 1 pad byte, lid (le16),
 * qpn (le32), psn (le32), gid (16 bytes). UTIL_ERR_TRUNCATED when bufsize
 * is too small; UTIL_ERR_INVALID for out-of-range fields. */
util_status_t btl_verbs_conn_pack(const btl_verbs_conn_t *conn, void *buf, size_t bufsize,
                                  size_t *size_p);
/* UTIL_ERR_INVALID for a wrong size, magic or field range,
 * UTIL_ERR_UNSUPPORTED for another version. */
util_status_t btl_verbs_conn_unpack(const void *buf, size_t size, btl_verbs_conn_t *conn_p);

/* The path MTU both sides can use (the smaller); bytes of an ibv_mtu
 * (0 when out of range). */
uint8_t btl_verbs_mtu_common(uint8_t mine, uint8_t theirs);
unsigned btl_verbs_mtu_bytes(uint8_t mtu);

/* ---- packed remote key ---- */
#define BTL_VERBS_RKEY_SIZE 20 /* addr (le64), length (le64), rkey (le32) */

util_status_t btl_verbs_rkey_pack_raw(uint64_t addr, uint64_t length, uint32_t rkey, void *buf,
                                      size_t bufsize, size_t *size_p);
util_status_t btl_verbs_rkey_unpack_raw(const void *buf, size_t size, uint64_t *addr_p,
                                        uint64_t *length_p, uint32_t *rkey_p);
/* 1 when [raddr, raddr + len) lies inside [base, base + length). */
int btl_verbs_range_ok(uint64_t base, uint64_t length, uint64_t raddr, uint64_t len);

/* ---- work requests ---- */
/* Builders fill one WR and its SGE (wr->next = NULL, wr->sg_list = sge).
 * flags are IBV_SEND_* bits (SIGNALED, INLINE, FENCE). */
void btl_verbs_wr_write(struct ibv_send_wr *wr, struct ibv_sge *sge, const void *src, uint32_t len,
                        uint32_t lkey, uint64_t raddr, uint32_t rkey, unsigned flags,
                        uint64_t wr_id);
void btl_verbs_wr_read(struct ibv_send_wr *wr, struct ibv_sge *sge, void *dst, uint32_t len,
                       uint32_t lkey, uint64_t raddr, uint32_t rkey, unsigned flags,
                       uint64_t wr_id);
/* Atomics on the 8-byte word at raddr; the old value lands in *result. */
void btl_verbs_wr_fadd(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t *result, uint32_t lkey,
                       uint64_t raddr, uint32_t rkey, uint64_t add, unsigned flags, uint64_t wr_id);
void btl_verbs_wr_cswap(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t *result,
                        uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t compare,
                        uint64_t swap, unsigned flags, uint64_t wr_id);
/* A zero-length RDMA write: no data, only a completion (quiet uses it to
 * get a signaled WR behind unsignaled ones). */
void btl_verbs_wr_nop(struct ibv_send_wr *wr, unsigned flags, uint64_t wr_id);
/* Payload then flag as one chain of two writes on the QP: RC executes them
 * in order, so the flag lands after the payload. The flag is sent inline
 * from *flag_src (8 bytes). wr[0].next = &wr[1]. */
void btl_verbs_wr_put_flag(struct ibv_send_wr wr[2], struct ibv_sge sge[2], const void *src,
                           uint32_t len, uint32_t lkey, unsigned payload_flags, uint64_t raddr,
                           uint32_t rkey, const uint64_t *flag_src, uint64_t flag_raddr,
                           uint32_t flag_rkey, unsigned flag_flags, uint64_t wr_id);

/* ---- credits ----
 * Per QP, WRs are numbered 1, 2, ... as posted. Only some are signaled; a
 * signaled WR's completion retires it and every unsignaled one before it
 * (RC completes in order), so the completion carries its number in wr_id
 * and the QP's completed count jumps to it. The SQ holds at most sq_depth
 * unretired WRs.
 *
 * The CQ is shared by the iface's QPs and every unretired WR may still
 * produce a CQE: signaled ones when they finish, unsignaled ones too when
 * their QP fails (a QP in error flushes every WR with a CQE). So half the
 * CQ is for signaled WRs (posting waits for room) and half is a budget of
 * unsignaled WRs (when it is used up, WRs are signaled instead): the CQ can
 * never hold more than cq_depth entries, and no wait depends on a WR that
 * nobody will signal. */
typedef struct {
    uint32_t signaled_depth;    /* signaled WRs in flight, at most */
    uint32_t unsignaled_budget; /* unretired unsignaled WRs, at most */
    uint32_t signaled;
    uint32_t unsignaled;
} btl_verbs_cq_credits_t;

typedef struct {
    uint32_t sq_depth;
    uint32_t signal_every; /* at most this many WRs per signaled one */
    uint64_t posted;       /* number of the last WR posted */
    uint64_t completed;    /* every WR up to this number is retired */
    uint64_t last_signaled;
    uint32_t signaled_out; /* signaled WRs not yet completed */
} btl_verbs_sq_credits_t;

void btl_verbs_cq_credits_init(btl_verbs_cq_credits_t *cq, uint32_t cq_depth);
void btl_verbs_sq_credits_init(btl_verbs_sq_credits_t *sq, uint32_t sq_depth,
                               uint32_t signal_every);
/* 1 when n more WRs fit in both queues (the caller drives progress until
 * they do). */
int btl_verbs_credits_available(const btl_verbs_sq_credits_t *sq, const btl_verbs_cq_credits_t *cq,
                                uint32_t n);
/* Takes one WR; returns 1 when it must be signaled: the caller asked
 * (want_signal), signal_every WRs went unsignaled, it takes the SQ's last
 * slot, or the unsignaled budget is used up. *number_p receives the WR's
 * number (its wr_id payload). Call only when credits are available. */
int btl_verbs_credits_post(btl_verbs_sq_credits_t *sq, btl_verbs_cq_credits_t *cq, int want_signal,
                           uint64_t *number_p);
/* A signaled WR numbered `number` completed: retires it and those before. */
void btl_verbs_credits_complete(btl_verbs_sq_credits_t *sq, btl_verbs_cq_credits_t *cq,
                                uint64_t number);
/* The QP failed and its last CQE (error or flush: a QP in error completes
 * every WR, signaled or not, in order) has been read: gives back to the CQ
 * everything the QP held. Idempotent. */
void btl_verbs_credits_release(btl_verbs_sq_credits_t *sq, btl_verbs_cq_credits_t *cq);
/* 1 when the last posted WR is unsignaled (quiet must add a signaled one). */
static inline int btl_verbs_credits_tail_unsignaled(const btl_verbs_sq_credits_t *sq)
{
    return sq->posted > sq->last_signaled;
}

/* wr_id: peer index in the high 24 bits, WR number in the low 40. */
#define BTL_VERBS_WRID_NUMBER_BITS 40
static inline uint64_t btl_verbs_wr_id(uint32_t peer, uint64_t number)
{
    return ((uint64_t)peer << BTL_VERBS_WRID_NUMBER_BITS) |
           (number & (((uint64_t)1 << BTL_VERBS_WRID_NUMBER_BITS) - 1));
}
static inline uint32_t btl_verbs_wr_id_peer(uint64_t wr_id)
{
    return (uint32_t)(wr_id >> BTL_VERBS_WRID_NUMBER_BITS);
}
/* The full number, given the QP's last posted number (numbers wrap at 2^40). */
uint64_t btl_verbs_wr_id_number(uint64_t wr_id, uint64_t posted);

/* ---- completion errors ---- */
/* A failed completion's status as a util status, and a sentence saying
 * what it usually means (never NULL). */
util_status_t btl_verbs_wc_error(enum ibv_wc_status wc_status, const char **text_p);
/* "RDMA write", "atomic compare-and-swap", ... for an ibv_wc_opcode. */
const char *btl_verbs_wc_opcode_name(enum ibv_wc_opcode opcode);

/* ---- atomics over fetch-add and compare-and-swap ---- */
/* One network primitive on the 8-byte word at word_raddr; *old_p gets the
 * word's value before the operation. */
typedef util_status_t (*btl_verbs_cas_func_t)(void *arg, uint64_t word_raddr, uint64_t compare,
                                              uint64_t swap, uint64_t *old_p);
typedef util_status_t (*btl_verbs_fadd_func_t)(void *arg, uint64_t word_raddr, uint64_t add,
                                               uint64_t *old_p);

/* Applies op to a value of size bytes (4 or 8); the result is masked. */
uint64_t btl_verbs_amo_apply(btl_amo_op_t op, unsigned size, uint64_t old, uint64_t operand,
                             uint64_t compare);
/* Where a size-byte value at raddr sits in its enclosing 8-byte word. */
typedef struct {
    uint64_t word_raddr;
    unsigned shift; /* bit position of the value in the word (host order) */
    uint64_t mask;  /* the value's bits, unshifted */
} btl_verbs_amo_slot_t;
/* UTIL_ERR_INVALID for a size other than 4/8 or a misaligned address. */
util_status_t btl_verbs_amo_slot(unsigned size, uint64_t raddr, btl_verbs_amo_slot_t *slot_p);
/* Runs one atomic: 64-bit ADD and FETCH (and a 32-bit ADD in the high
 * half, whose carry leaves the word) are one fetch-add; 64-bit CSWAP is one
 * compare-and-swap; the rest is a compare-and-swap loop on the enclosing
 * word that changes only the value's bits. *result_p gets the old value
 * (zero-extended). */
util_status_t btl_verbs_amo_run(btl_amo_op_t op, unsigned size, uint64_t raddr, uint64_t operand,
                                uint64_t compare, btl_verbs_cas_func_t cas,
                                btl_verbs_fadd_func_t fadd, void *arg, uint64_t *result_p);

#endif
