/*
 * btl/verbs unit tests. The device-independent half (btl_verbs_wire.c) is
 * tested everywhere: connection metadata and rkey layouts byte by byte,
 * work-request fields, credit accounting (including a long random run that
 * checks the SQ/CQ invariants after every step), completion-error texts,
 * and every atomic against a simulated remote word (with interference from
 * a concurrent peer). The device case runs the backend through the btl API
 * on the QP to myself when a device has an active port; without one it
 * checks that verbs is not offered and that forcing it fails with
 * UTIL_ERR_UNSUPPORTED, and prints why the rest is skipped.
 */
#include "btl/btl.h"
#include "btl/btl_inl.h"
#include "btl/verbs/btl_verbs_wire.h"
#include "util/log.h"
#include "tests/common/mp_run.h"

#include <check.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- connection metadata ---- */
static btl_verbs_conn_t sample_conn(void)
{
    btl_verbs_conn_t conn;

    memset(&conn, 0, sizeof(conn));
    conn.lid = 0x1234;
    conn.port = 1;
    conn.mtu = IBV_MTU_4096;
    conn.has_gid = 1;
    for (int i = 0; i < 16; i++) {
        conn.gid[i] = (uint8_t)(0xa0 + i);
    }
    conn.qpn = 0xabcdef;
    conn.psn = 0x123456;
    return conn;
}

START_TEST(test_conn_roundtrip)
{
    static const uint8_t head[16] = {0xb5, 1,    1,    5,    1,    0,    0x34, 0x12,
                                     0xef, 0xcd, 0xab, 0x00, 0x56, 0x34, 0x12, 0x00};
    btl_verbs_conn_t conn = sample_conn(), back;
    uint8_t buf[64];
    size_t len = 0;

    memset(buf, 0xee, sizeof(buf));
    ck_assert_int_eq(btl_verbs_conn_pack(&conn, buf, sizeof(buf), &len), UTIL_OK);
    ck_assert_uint_eq(len, BTL_VERBS_CONN_SIZE);
    ck_assert_mem_eq(buf, head, sizeof(head));
    ck_assert_mem_eq(buf + 16, conn.gid, 16);
    ck_assert_uint_eq(buf[32], 0xee); /* nothing written past the layout */

    memset(&back, 0, sizeof(back));
    ck_assert_int_eq(btl_verbs_conn_unpack(buf, len, &back), UTIL_OK);
    ck_assert_uint_eq(back.lid, 0x1234);
    ck_assert_uint_eq(back.port, 1);
    ck_assert_uint_eq(back.mtu, IBV_MTU_4096);
    ck_assert_uint_eq(back.has_gid, 1);
    ck_assert_uint_eq(back.qpn, 0xabcdef);
    ck_assert_uint_eq(back.psn, 0x123456);
    ck_assert_mem_eq(back.gid, conn.gid, 16);

    /* InfiniBand without GID: LID routing only */
    conn.has_gid = 0;
    memset(conn.gid, 0, 16);
    ck_assert_int_eq(btl_verbs_conn_pack(&conn, buf, sizeof(buf), &len), UTIL_OK);
    ck_assert_int_eq(btl_verbs_conn_unpack(buf, len, &back), UTIL_OK);
    ck_assert_uint_eq(back.has_gid, 0);
    ck_assert_uint_eq(back.lid, 0x1234);
}
END_TEST

START_TEST(test_conn_rejects)
{
    btl_verbs_conn_t conn = sample_conn(), bad, back;
    uint8_t buf[BTL_VERBS_CONN_SIZE + 1], tmp[BTL_VERBS_CONN_SIZE + 1];
    size_t len = 0;

    bad = conn;
    bad.qpn = 0x1000000; /* 25 bits */
    ck_assert_int_eq(btl_verbs_conn_pack(&bad, buf, sizeof(buf), &len), UTIL_ERR_INVALID);
    bad = conn;
    bad.psn = 0x1000000;
    ck_assert_int_eq(btl_verbs_conn_pack(&bad, buf, sizeof(buf), &len), UTIL_ERR_INVALID);
    bad = conn;
    bad.mtu = 0;
    ck_assert_int_eq(btl_verbs_conn_pack(&bad, buf, sizeof(buf), &len), UTIL_ERR_INVALID);
    bad.mtu = 6;
    ck_assert_int_eq(btl_verbs_conn_pack(&bad, buf, sizeof(buf), &len), UTIL_ERR_INVALID);
    bad = conn;
    bad.has_gid = 0;
    bad.lid = 0; /* neither LID nor GID: unroutable */
    ck_assert_int_eq(btl_verbs_conn_pack(&bad, buf, sizeof(buf), &len), UTIL_ERR_INVALID);
    ck_assert_int_eq(btl_verbs_conn_pack(&conn, buf, BTL_VERBS_CONN_SIZE - 1, &len),
                     UTIL_ERR_TRUNCATED);

    ck_assert_int_eq(btl_verbs_conn_pack(&conn, buf, sizeof(buf), &len), UTIL_OK);
    memset(&back, 0x5a, sizeof(back));
    ck_assert_int_eq(btl_verbs_conn_unpack(buf, len - 1, &back), UTIL_ERR_INVALID);
    ck_assert_int_eq(btl_verbs_conn_unpack(buf, len + 1, &back), UTIL_ERR_INVALID);
    ck_assert_int_eq(btl_verbs_conn_unpack(buf, 1, &back), UTIL_ERR_INVALID);
    memcpy(tmp, buf, len);
    tmp[0] = 0x00; /* magic */
    ck_assert_int_eq(btl_verbs_conn_unpack(tmp, len, &back), UTIL_ERR_INVALID);
    memcpy(tmp, buf, len);
    tmp[1] = 2; /* a future version */
    ck_assert_int_eq(btl_verbs_conn_unpack(tmp, len, &back), UTIL_ERR_UNSUPPORTED);
    memcpy(tmp, buf, len);
    tmp[5] = 1; /* pad */
    ck_assert_int_eq(btl_verbs_conn_unpack(tmp, len, &back), UTIL_ERR_INVALID);
    memcpy(tmp, buf, len);
    tmp[11] = 1; /* QPN beyond 24 bits */
    ck_assert_int_eq(btl_verbs_conn_unpack(tmp, len, &back), UTIL_ERR_INVALID);
    memcpy(tmp, buf, len);
    tmp[3] = 7; /* MTU */
    ck_assert_int_eq(btl_verbs_conn_unpack(tmp, len, &back), UTIL_ERR_INVALID);
    memcpy(tmp, buf, len);
    tmp[4] = 2; /* has_gid is 0 or 1 */
    ck_assert_int_eq(btl_verbs_conn_unpack(tmp, len, &back), UTIL_ERR_INVALID);
    /* output untouched by every failure */
    ck_assert_uint_eq(back.qpn, 0x5a5a5a5a);
}
END_TEST

START_TEST(test_mtu)
{
    ck_assert_uint_eq(btl_verbs_mtu_common(IBV_MTU_4096, IBV_MTU_1024), IBV_MTU_1024);
    ck_assert_uint_eq(btl_verbs_mtu_common(IBV_MTU_512, IBV_MTU_2048), IBV_MTU_512);
    ck_assert_uint_eq(btl_verbs_mtu_bytes(IBV_MTU_256), 256);
    ck_assert_uint_eq(btl_verbs_mtu_bytes(IBV_MTU_1024), 1024);
    ck_assert_uint_eq(btl_verbs_mtu_bytes(IBV_MTU_4096), 4096);
    ck_assert_uint_eq(btl_verbs_mtu_bytes(0), 0);
    ck_assert_uint_eq(btl_verbs_mtu_bytes(6), 0);
}
END_TEST

/* ---- rkeys and ranges ---- */
START_TEST(test_rkey)
{
    static const uint8_t want[20] = {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00, 0x10,
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x03, 0x02, 0x01};
    uint8_t buf[32];
    uint64_t addr = 0, length = 0;
    uint32_t rkey = 0;
    size_t len = 0;

    ck_assert_int_eq(
        btl_verbs_rkey_pack_raw(0x1122334455667788ull, 0x1000, 0x01020304, buf, sizeof(buf), &len),
        UTIL_OK);
    ck_assert_uint_eq(len, BTL_VERBS_RKEY_SIZE);
    ck_assert_mem_eq(buf, want, sizeof(want));
    ck_assert_int_eq(btl_verbs_rkey_unpack_raw(buf, len, &addr, &length, &rkey), UTIL_OK);
    ck_assert_uint_eq(addr, 0x1122334455667788ull);
    ck_assert_uint_eq(length, 0x1000);
    ck_assert_uint_eq(rkey, 0x01020304);

    ck_assert_int_eq(btl_verbs_rkey_pack_raw(1, 1, 1, buf, BTL_VERBS_RKEY_SIZE - 1, &len),
                     UTIL_ERR_TRUNCATED);
    addr = 7;
    ck_assert_int_eq(btl_verbs_rkey_unpack_raw(want, 19, &addr, &length, &rkey), UTIL_ERR_INVALID);
    ck_assert_int_eq(btl_verbs_rkey_unpack_raw(buf, 21, &addr, &length, &rkey), UTIL_ERR_INVALID);
    ck_assert_uint_eq(addr, 7);
    /* zero length, and a range that wraps the address space */
    ck_assert_int_eq(btl_verbs_rkey_pack_raw(0x1000, 0, 9, buf, sizeof(buf), &len), UTIL_OK);
    ck_assert_int_eq(btl_verbs_rkey_unpack_raw(buf, len, &addr, &length, &rkey), UTIL_ERR_INVALID);
    ck_assert_int_eq(btl_verbs_rkey_pack_raw(UINT64_MAX - 4, 8, 9, buf, sizeof(buf), &len),
                     UTIL_OK);
    ck_assert_int_eq(btl_verbs_rkey_unpack_raw(buf, len, &addr, &length, &rkey), UTIL_ERR_INVALID);
}
END_TEST

START_TEST(test_range)
{
    ck_assert(btl_verbs_range_ok(0x1000, 0x100, 0x1000, 0x100));
    ck_assert(btl_verbs_range_ok(0x1000, 0x100, 0x10ff, 1));
    ck_assert(btl_verbs_range_ok(0x1000, 0x100, 0x1100, 0));
    ck_assert(!btl_verbs_range_ok(0x1000, 0x100, 0x10ff, 2));
    ck_assert(!btl_verbs_range_ok(0x1000, 0x100, 0xfff, 1));
    ck_assert(!btl_verbs_range_ok(0x1000, 0x100, 0x1101, 0));
    ck_assert(!btl_verbs_range_ok(0x1000, 0x100, 0x1080, UINT64_MAX)); /* no wrap-around */
    ck_assert(!btl_verbs_range_ok(0x1000, 0x100, UINT64_MAX, 2));
}
END_TEST

/* ---- work requests ---- */
START_TEST(test_wr_write_read)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    char buf[64] = {0};

    memset(&wr, 0x77, sizeof(wr));
    btl_verbs_wr_write(&wr, &sge, buf, 48, 0x42, 0xdead0000, 0x99, IBV_SEND_INLINE, 0x1234);
    ck_assert_int_eq(wr.opcode, IBV_WR_RDMA_WRITE);
    ck_assert_uint_eq(wr.send_flags, IBV_SEND_INLINE);
    ck_assert_ptr_eq(wr.sg_list, &sge);
    ck_assert_int_eq(wr.num_sge, 1);
    ck_assert_ptr_null(wr.next);
    ck_assert_uint_eq(wr.wr_id, 0x1234);
    ck_assert_uint_eq(sge.addr, (uintptr_t)buf);
    ck_assert_uint_eq(sge.length, 48);
    ck_assert_uint_eq(sge.lkey, 0x42);
    ck_assert_uint_eq(wr.wr.rdma.remote_addr, 0xdead0000);
    ck_assert_uint_eq(wr.wr.rdma.rkey, 0x99);

    memset(&wr, 0x77, sizeof(wr));
    btl_verbs_wr_read(&wr, &sge, buf, 64, 0x43, 0xbeef0008, 0x98,
                      IBV_SEND_INLINE | IBV_SEND_SIGNALED, 7);
    ck_assert_int_eq(wr.opcode, IBV_WR_RDMA_READ);
    ck_assert_uint_eq(wr.send_flags, IBV_SEND_SIGNALED); /* reads are never inline */
    ck_assert_uint_eq(sge.addr, (uintptr_t)buf);
    ck_assert_uint_eq(sge.length, 64);
    ck_assert_uint_eq(sge.lkey, 0x43);
    ck_assert_uint_eq(wr.wr.rdma.remote_addr, 0xbeef0008);
    ck_assert_uint_eq(wr.wr.rdma.rkey, 0x98);
    ck_assert_ptr_null(wr.next);

    memset(&wr, 0x77, sizeof(wr));
    btl_verbs_wr_nop(&wr, IBV_SEND_SIGNALED, 11);
    ck_assert_int_eq(wr.opcode, IBV_WR_RDMA_WRITE);
    ck_assert_int_eq(wr.num_sge, 0);
    ck_assert_ptr_null(wr.sg_list);
    ck_assert_uint_eq(wr.send_flags, IBV_SEND_SIGNALED);
    ck_assert_uint_eq(wr.wr_id, 11);
}
END_TEST

START_TEST(test_wr_atomics)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    uint64_t result;

    memset(&wr, 0x77, sizeof(wr));
    btl_verbs_wr_fadd(&wr, &sge, &result, 5, 0x2000, 6, 0xfffffffffffffffful,
                      IBV_SEND_SIGNALED | IBV_SEND_INLINE, 3);
    ck_assert_int_eq(wr.opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
    ck_assert_uint_eq(wr.send_flags, IBV_SEND_SIGNALED);
    ck_assert_uint_eq(sge.addr, (uintptr_t)&result);
    ck_assert_uint_eq(sge.length, 8);
    ck_assert_uint_eq(sge.lkey, 5);
    ck_assert_uint_eq(wr.wr.atomic.remote_addr, 0x2000);
    ck_assert_uint_eq(wr.wr.atomic.rkey, 6);
    ck_assert_uint_eq(wr.wr.atomic.compare_add, 0xfffffffffffffffful);
    ck_assert_uint_eq(wr.wr_id, 3);

    memset(&wr, 0x77, sizeof(wr));
    btl_verbs_wr_cswap(&wr, &sge, &result, 5, 0x2008, 6, 111, 222, IBV_SEND_SIGNALED, 4);
    ck_assert_int_eq(wr.opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
    ck_assert_uint_eq(wr.wr.atomic.remote_addr, 0x2008);
    ck_assert_uint_eq(wr.wr.atomic.compare_add, 111);
    ck_assert_uint_eq(wr.wr.atomic.swap, 222);
    ck_assert_uint_eq(sge.length, 8);
    ck_assert_ptr_null(wr.next);
}
END_TEST

START_TEST(test_wr_put_flag)
{
    struct ibv_send_wr wr[2];
    struct ibv_sge sge[2];
    uint64_t flag = 0x600d;
    char payload[32] = {0};

    memset(wr, 0x77, sizeof(wr));
    btl_verbs_wr_put_flag(wr, sge, payload, 32, 9, IBV_SEND_INLINE, 0x3000, 0x51, &flag, 0x4000,
                          0x52, IBV_SEND_SIGNALED, 77);
    ck_assert_ptr_eq(wr[0].next, &wr[1]);
    ck_assert_ptr_null(wr[1].next);
    ck_assert_int_eq(wr[0].opcode, IBV_WR_RDMA_WRITE);
    ck_assert_int_eq(wr[1].opcode, IBV_WR_RDMA_WRITE);
    ck_assert_uint_eq(wr[0].send_flags, IBV_SEND_INLINE);
    ck_assert_uint_eq(sge[0].addr, (uintptr_t)payload);
    ck_assert_uint_eq(sge[0].length, 32);
    ck_assert_uint_eq(wr[0].wr.rdma.remote_addr, 0x3000);
    ck_assert_uint_eq(wr[0].wr.rdma.rkey, 0x51);
    /* the flag: 8 bytes inline, own rkey, carries the chain's wr_id */
    ck_assert_uint_eq(wr[1].send_flags, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
    ck_assert_ptr_eq(wr[1].sg_list, &sge[1]);
    ck_assert_uint_eq(sge[1].addr, (uintptr_t)&flag);
    ck_assert_uint_eq(sge[1].length, 8);
    ck_assert_uint_eq(wr[1].wr.rdma.remote_addr, 0x4000);
    ck_assert_uint_eq(wr[1].wr.rdma.rkey, 0x52);
    ck_assert_uint_eq(wr[1].wr_id, 77);
}
END_TEST

/* ---- credits ---- */
START_TEST(test_credits_signal_every)
{
    btl_verbs_sq_credits_t sq;
    btl_verbs_cq_credits_t cq;
    uint64_t number;
    int signaled[9] = {0};

    btl_verbs_cq_credits_init(&cq, 64);
    ck_assert_uint_eq(cq.signaled_depth, 32);
    ck_assert_uint_eq(cq.unsignaled_budget, 32);
    btl_verbs_sq_credits_init(&sq, 8, 4);
    for (int i = 1; i <= 8; i++) {
        ck_assert(btl_verbs_credits_available(&sq, &cq, 1));
        signaled[i] = btl_verbs_credits_post(&sq, &cq, 0, &number);
        ck_assert_uint_eq(number, (uint64_t)i);
    }
    for (int i = 1; i <= 8; i++) {
        ck_assert_int_eq(signaled[i], i == 4 || i == 8);
    }
    ck_assert_uint_eq(cq.signaled, 2);
    ck_assert_uint_eq(cq.unsignaled, 6);
    ck_assert(!btl_verbs_credits_available(&sq, &cq, 1)); /* SQ full */
    ck_assert(!btl_verbs_credits_tail_unsignaled(&sq));

    btl_verbs_credits_complete(&sq, &cq, 4);
    ck_assert_uint_eq(sq.completed, 4);
    ck_assert_uint_eq(cq.signaled, 1);
    ck_assert_uint_eq(cq.unsignaled, 3);
    ck_assert(btl_verbs_credits_available(&sq, &cq, 4));
    ck_assert(!btl_verbs_credits_available(&sq, &cq, 5));
    btl_verbs_credits_complete(&sq, &cq, 4);  /* stale: no change */
    btl_verbs_credits_complete(&sq, &cq, 99); /* never posted: no change */
    ck_assert_uint_eq(cq.signaled, 1);
    ck_assert_uint_eq(sq.completed, 4);

    /* a caller that waits gets its WR signaled */
    btl_verbs_credits_complete(&sq, &cq, 8);
    ck_assert(btl_verbs_credits_post(&sq, &cq, 1, &number));
    ck_assert_uint_eq(number, 9);
    ck_assert(!btl_verbs_credits_post(&sq, &cq, 0, &number));
    ck_assert(btl_verbs_credits_tail_unsignaled(&sq)); /* quiet must add a signaled nop */
    btl_verbs_credits_complete(&sq, &cq, 9);
    ck_assert(btl_verbs_credits_post(&sq, &cq, 1, &number)); /* the nop */
    btl_verbs_credits_complete(&sq, &cq, number);
    ck_assert_uint_eq(cq.signaled, 0);
    ck_assert_uint_eq(cq.unsignaled, 0);
    ck_assert_uint_eq(sq.completed, sq.posted);
}
END_TEST

START_TEST(test_credits_last_slot_and_budget)
{
    btl_verbs_sq_credits_t a, b;
    btl_verbs_cq_credits_t cq;
    uint64_t number;

    /* SQ of 4, no periodic signal: the 4th WR takes the last slot and
     * must be signaled, or nothing would ever retire the queue */
    btl_verbs_cq_credits_init(&cq, 1000);
    btl_verbs_sq_credits_init(&a, 4, 1000);
    for (int i = 1; i <= 3; i++) {
        ck_assert(!btl_verbs_credits_post(&a, &cq, 0, &number));
    }
    ck_assert(btl_verbs_credits_post(&a, &cq, 0, &number));

    /* CQ of 4: 2 signaled in flight, 2 unsignaled, over both QPs */
    btl_verbs_cq_credits_init(&cq, 4);
    btl_verbs_sq_credits_init(&a, 100, 100);
    btl_verbs_sq_credits_init(&b, 100, 100);
    ck_assert(!btl_verbs_credits_post(&a, &cq, 0, &number));
    ck_assert(!btl_verbs_credits_post(&a, &cq, 0, &number));
    ck_assert(btl_verbs_credits_post(&a, &cq, 0, &number)); /* budget used up */
    ck_assert_uint_eq(number, 3);
    ck_assert(btl_verbs_credits_post(&b, &cq, 0, &number));
    ck_assert_uint_eq(cq.signaled, 2);
    ck_assert(!btl_verbs_credits_available(&a, &cq, 1)); /* CQ full */
    ck_assert(!btl_verbs_credits_available(&b, &cq, 1));
    btl_verbs_credits_complete(&a, &cq, 3); /* retires a's 1..3 */
    ck_assert_uint_eq(cq.signaled, 1);
    ck_assert_uint_eq(cq.unsignaled, 0);
    ck_assert(btl_verbs_credits_available(&b, &cq, 1));
    ck_assert(!btl_verbs_credits_post(&b, &cq, 0, &number)); /* budget back */
}
END_TEST

/* Random posts and completions over three QPs; after every step the SQs
 * and the CQ can never hold more than their depth, and draining with the
 * quiet rule (signaled nop behind an unsignaled tail) empties everything. */
START_TEST(test_credits_random)
{
    enum { NQP = 3, SQ = 16, CQ = 24, STEPS = 8000 };
    btl_verbs_sq_credits_t sq[NQP];
    btl_verbs_cq_credits_t cq;
    uint64_t pending[NQP][SQ]; /* signaled numbers not yet completed, oldest first */
    int npending[NQP] = {0};
    int failures = 0;
    uint32_t signaled_out;
    uint32_t seed = 12345;
    uint64_t number;

    btl_verbs_cq_credits_init(&cq, CQ);
    for (int q = 0; q < NQP; q++) {
        btl_verbs_sq_credits_init(&sq[q], SQ, 5);
    }
    for (int step = 0; step < STEPS; step++) {
        int q, total = 0;

        seed = seed * 1103515245u + 12345u;
        q = (int)((seed >> 16) % NQP);
        if (((seed >> 4) & 255) == 0) {
            /* the QP fails; once its last CQE is read it gives everything back */
            btl_verbs_credits_release(&sq[q], &cq);
            npending[q] = 0;
            failures++;
        } else if (((seed >> 8) & 3) != 0 && btl_verbs_credits_available(&sq[q], &cq, 1)) {
            int want = ((seed >> 20) & 7) == 0;
            if (btl_verbs_credits_post(&sq[q], &cq, want, &number)) {
                ck_assert_int_lt(npending[q], SQ);
                pending[q][npending[q]++] = number;
            }
        } else if (npending[q] > 0) {
            btl_verbs_credits_complete(&sq[q], &cq, pending[q][0]);
            memmove(pending[q], pending[q] + 1, sizeof(uint64_t) * (size_t)--npending[q]);
        }
        signaled_out = 0;
        for (int k = 0; k < NQP; k++) {
            ck_assert_uint_eq(sq[k].signaled_out, (uint32_t)npending[k]);
            signaled_out += sq[k].signaled_out;
            ck_assert_uint_le(sq[k].posted - sq[k].completed, SQ);
            total += (int)(sq[k].posted - sq[k].completed);
            /* an unretired WR always has a signaled one at or after it */
            ck_assert(sq[k].posted == sq[k].completed || npending[k] > 0 ||
                      btl_verbs_credits_tail_unsignaled(&sq[k]));
        }
        ck_assert_uint_eq(cq.signaled, signaled_out);
        ck_assert_uint_le(cq.signaled, cq.signaled_depth);
        ck_assert_uint_le(cq.unsignaled, cq.unsignaled_budget);
        ck_assert_int_eq(total, (int)(cq.signaled + cq.unsignaled));
        ck_assert_int_le(total, CQ); /* even a flush of everything fits the CQ */
    }
    for (int q = 0; q < NQP; q++) {
        while (npending[q] > 0) {
            btl_verbs_credits_complete(&sq[q], &cq, pending[q][0]);
            memmove(pending[q], pending[q] + 1, sizeof(uint64_t) * (size_t)--npending[q]);
        }
        if (btl_verbs_credits_tail_unsignaled(&sq[q])) {
            ck_assert(btl_verbs_credits_available(&sq[q], &cq, 1));
            ck_assert(btl_verbs_credits_post(&sq[q], &cq, 1, &number));
            btl_verbs_credits_complete(&sq[q], &cq, number);
        }
        ck_assert_uint_eq(sq[q].completed, sq[q].posted);
    }
    ck_assert_uint_eq(cq.signaled, 0);
    ck_assert_uint_eq(cq.unsignaled, 0);
    ck_assert_int_gt(failures, 5); /* the failure path was taken */
}
END_TEST

/* A failed QP's credits go back to the CQ, and only its own. */
START_TEST(test_credits_release)
{
    btl_verbs_sq_credits_t a, b;
    btl_verbs_cq_credits_t cq;
    uint64_t number;
    int signaled = 0;

    btl_verbs_cq_credits_init(&cq, 64);
    btl_verbs_sq_credits_init(&a, 16, 2);
    btl_verbs_sq_credits_init(&b, 16, 2);
    for (int i = 1; i <= 5; i++) {
        signaled += btl_verbs_credits_post(&a, &cq, 0, &number) << i; /* 2 and 4 */
    }
    ck_assert_int_eq(signaled, (1 << 2) | (1 << 4));
    ck_assert(!btl_verbs_credits_post(&b, &cq, 0, &number));
    btl_verbs_credits_complete(&a, &cq, 2);
    ck_assert_uint_eq(a.signaled_out, 1);
    ck_assert_uint_eq(cq.signaled, 1);
    ck_assert_uint_eq(cq.unsignaled, 3); /* a's 3 and 5, b's 1 */
    btl_verbs_credits_release(&a, &cq);
    ck_assert_uint_eq(cq.signaled, 0);
    ck_assert_uint_eq(cq.unsignaled, 1);
    ck_assert_uint_eq(a.completed, 5);
    ck_assert_uint_eq(a.signaled_out, 0);
    btl_verbs_credits_release(&a, &cq); /* again: nothing more */
    ck_assert_uint_eq(cq.unsignaled, 1);
    ck_assert_uint_eq(b.posted - b.completed, 1);
}
END_TEST

START_TEST(test_wr_id)
{
    const uint64_t wrap = (uint64_t)1 << BTL_VERBS_WRID_NUMBER_BITS;
    uint64_t id = btl_verbs_wr_id(0xabcdef, 0x123456789aull);

    ck_assert_uint_eq(btl_verbs_wr_id_peer(id), 0xabcdef);
    ck_assert_uint_eq(btl_verbs_wr_id_number(id, 0x123456789aull + 10), 0x123456789aull);
    /* numbers past 2^40 come back whole from the QP's posted count */
    id = btl_verbs_wr_id(3, wrap + 3);
    ck_assert_uint_eq(btl_verbs_wr_id_peer(id), 3);
    ck_assert_uint_eq(btl_verbs_wr_id_number(id, wrap + 5), wrap + 3);
    id = btl_verbs_wr_id(3, wrap - 2);
    ck_assert_uint_eq(btl_verbs_wr_id_number(id, wrap + 5), wrap - 2);
}
END_TEST

/* ---- completion errors ---- */
START_TEST(test_wc_error)
{
    static const struct {
        enum ibv_wc_status wc;
        util_status_t status;
        const char *words;
    } cases[] = {
        {IBV_WC_SUCCESS, UTIL_OK, "success"},
        {IBV_WC_REM_ACCESS_ERR, UTIL_ERR_INVALID, "remote access error"},
        {IBV_WC_REM_INV_REQ_ERR, UTIL_ERR_INVALID, "remote invalid request"},
        {IBV_WC_LOC_PROT_ERR, UTIL_ERR_INVALID, "not registered"},
        {IBV_WC_LOC_LEN_ERR, UTIL_ERR_INVALID, "length"},
        {IBV_WC_RETRY_EXC_ERR, UTIL_ERR_UNREACHABLE, "does not answer"},
        {IBV_WC_RNR_RETRY_EXC_ERR, UTIL_ERR_UNREACHABLE, "receiver-not-ready"},
        {IBV_WC_WR_FLUSH_ERR, UTIL_ERR_IO, "flushed"},
        {IBV_WC_RESP_TIMEOUT_ERR, UTIL_ERR_TIMEOUT, "timeout"},
        {IBV_WC_FATAL_ERR, UTIL_ERR_IO, "fatal"},
        {(enum ibv_wc_status)999, UTIL_ERR_IO, "completion error"},
    };
    const char *text;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        text = NULL;
        ck_assert_int_eq(btl_verbs_wc_error(cases[i].wc, &text), cases[i].status);
        ck_assert_ptr_nonnull(text);
        ck_assert_msg(strstr(text, cases[i].words) != NULL, "status %d: \"%s\" lacks \"%s\"",
                      (int)cases[i].wc, text, cases[i].words);
    }
    /* every failure maps to an error code and a sentence */
    for (int wc = IBV_WC_LOC_LEN_ERR; wc <= IBV_WC_GENERAL_ERR; wc++) {
        ck_assert_int_lt(btl_verbs_wc_error((enum ibv_wc_status)wc, &text), 0);
        ck_assert_uint_gt(strlen(text), 5);
    }
    ck_assert_str_eq(btl_verbs_wc_opcode_name(IBV_WC_COMP_SWAP), "atomic compare-and-swap");
    ck_assert_str_eq(btl_verbs_wc_opcode_name(IBV_WC_RDMA_READ), "RDMA read");
}
END_TEST

/* ---- atomics against a simulated remote memory ---- */
typedef struct {
    uint64_t word[4]; /* remote memory; raddr = byte offset */
    int cas_calls;
    int fadd_calls;
    int interfere; /* before this many next CAS, a peer xors the word */
    uint64_t interfere_xor;
    util_status_t fail; /* returned by every primitive when set */
} sim_t;

static util_status_t sim_cas(void *arg, uint64_t word_raddr, uint64_t compare, uint64_t swap,
                             uint64_t *old_p)
{
    sim_t *sim = arg;
    uint64_t *w = &sim->word[word_raddr / 8];

    ck_assert_uint_eq(word_raddr % 8, 0);
    sim->cas_calls++;
    if (sim->fail != UTIL_OK) {
        return sim->fail;
    }
    if (sim->interfere > 0) {
        sim->interfere--;
        *w ^= sim->interfere_xor;
    }
    *old_p = *w;
    if (*w == compare) {
        *w = swap;
    }
    return UTIL_OK;
}

static util_status_t sim_fadd(void *arg, uint64_t word_raddr, uint64_t add, uint64_t *old_p)
{
    sim_t *sim = arg;
    uint64_t *w = &sim->word[word_raddr / 8];

    ck_assert_uint_eq(word_raddr % 8, 0);
    sim->fadd_calls++;
    if (sim->fail != UTIL_OK) {
        return sim->fail;
    }
    *old_p = *w;
    *w += add;
    return UTIL_OK;
}

/* What a CPU atomic would leave in memory: the reference, written apart
 * from the library's own btl_verbs_amo_apply. */
static uint64_t ref_apply(btl_amo_op_t op, uint64_t old, uint64_t operand, uint64_t compare,
                          uint64_t mask)
{
    switch (op) {
    case BTL_AMO_FETCH:
        return old;
    case BTL_AMO_SET:
    case BTL_AMO_SWAP:
        return operand & mask;
    case BTL_AMO_CSWAP:
        return old == (compare & mask) ? (operand & mask) : old;
    case BTL_AMO_ADD:
        return (old + operand) & mask;
    case BTL_AMO_AND:
        return old & operand & mask;
    case BTL_AMO_OR:
        return (old | operand) & mask;
    case BTL_AMO_XOR:
        return (old ^ operand) & mask;
    default:
        return old;
    }
}

static uint64_t load_at(const sim_t *sim, unsigned off, unsigned size)
{
    uint64_t v64;
    uint32_t v32;

    if (size == 8) {
        memcpy(&v64, (const char *)sim->word + off, 8);
        return v64;
    }
    memcpy(&v32, (const char *)sim->word + off, 4);
    return v32;
}

START_TEST(test_amo_all_ops)
{
    static const uint64_t inits[] = {0, 0x89abcdef01234567ull, 0xffffffffffffffffull,
                                     0x00000000ffffffffull};
    static const uint64_t operands[] = {1, 0x0f0f0f0ff0f0f0f0ull, 0xffffffffffffffffull};
    static const struct {
        unsigned size, off;
    } slots[] = {{8, 8}, {4, 8}, {4, 12}};

    for (int op = 0; op < BTL_AMO_LAST; op++) {
        for (size_t s = 0; s < 3; s++) {
            unsigned size = slots[s].size, off = slots[s].off;
            uint64_t mask = size == 8 ? ~(uint64_t)0 : 0xffffffffu;
            unsigned other = off == 8 ? 12 : 8; /* the other half of the word */

            for (size_t i = 0; i < 4; i++) {
                for (size_t o = 0; o < 3; o++) {
                    for (int match = 0; match < 2; match++) {
                        sim_t sim;
                        uint64_t before, neighbour, compare, result = 0xdeadbeef, want;

                        memset(&sim, 0, sizeof(sim));
                        sim.word[0] = 0x1111111111111111ull;
                        sim.word[1] = inits[i];
                        sim.word[2] = 0x2222222222222222ull;
                        before = load_at(&sim, off, size);
                        neighbour = load_at(&sim, other, 4);
                        compare = match ? before : before ^ 1;
                        want = ref_apply((btl_amo_op_t)op, before, operands[o], compare, mask);
                        ck_assert_int_eq(btl_verbs_amo_run((btl_amo_op_t)op, size, off, operands[o],
                                                           compare, sim_cas, sim_fadd, &sim,
                                                           &result),
                                         UTIL_OK);
                        ck_assert_msg(result == before,
                                      "op %d size %u off %u init %zu: old 0x%llx, want 0x%llx", op,
                                      size, off, i, (unsigned long long)result,
                                      (unsigned long long)before);
                        ck_assert_msg(load_at(&sim, off, size) == want,
                                      "op %d size %u off %u init %zu operand %zu: memory 0x%llx, "
                                      "want 0x%llx",
                                      op, size, off, i, o,
                                      (unsigned long long)load_at(&sim, off, size),
                                      (unsigned long long)want);
                        if (size == 4) {
                            ck_assert_uint_eq(load_at(&sim, other, 4), neighbour);
                        }
                        ck_assert_uint_eq(sim.word[0], 0x1111111111111111ull);
                        ck_assert_uint_eq(sim.word[2], 0x2222222222222222ull);
                        ck_assert_int_le(sim.cas_calls, 2); /* guess 0, then the real value */
                    }
                }
            }
        }
    }
}
END_TEST

/* Which primitive runs how often: the cheap cases are one network op. */
START_TEST(test_amo_primitive_counts)
{
    sim_t sim;
    uint64_t r;
    unsigned low = 8, high = 12; /* halves of word 1 on a little-endian host */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    low = 12;
    high = 8;
#endif
    memset(&sim, 0, sizeof(sim));
    sim.word[1] = 5;
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_ADD, 8, 8, 3, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_OK);
    ck_assert_int_eq(sim.fadd_calls, 1);
    ck_assert_int_eq(sim.cas_calls, 0);
    ck_assert_uint_eq(r, 5);
    ck_assert_uint_eq(sim.word[1], 8);

    memset(&sim, 0, sizeof(sim));
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_FETCH, 4, low, 0, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_OK);
    ck_assert_int_eq(sim.fadd_calls, 1);
    ck_assert_int_eq(sim.cas_calls, 0);

    memset(&sim, 0, sizeof(sim));
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_CSWAP, 8, 16, 9, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_OK);
    ck_assert_int_eq(sim.cas_calls, 1);
    ck_assert_uint_eq(sim.word[2], 9);

    /* 32-bit add in the high half: the carry leaves the word, one fetch-add */
    memset(&sim, 0, sizeof(sim));
    sim.word[1] = 0xffffffff00000007ull;
    if (high == 8) {
        sim.word[1] = 0x00000007ffffffffull;
    }
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_ADD, 4, high, 1, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_OK);
    ck_assert_int_eq(sim.fadd_calls, 1);
    ck_assert_uint_eq(r, 0xffffffffu);
    ck_assert_uint_eq(load_at(&sim, high, 4), 0);
    ck_assert_uint_eq(load_at(&sim, low, 4), 7);

    /* in the low half the carry would reach the neighbour: CAS loop */
    memset(&sim, 0, sizeof(sim));
    sim.word[1] = 0x00000007ffffffffull;
    if (low == 12) {
        sim.word[1] = 0xffffffff00000007ull;
    }
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_ADD, 4, low, 1, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_OK);
    ck_assert_int_eq(sim.fadd_calls, 0);
    ck_assert_int_eq(sim.cas_calls, 2);
    ck_assert_uint_eq(r, 0xffffffffu);
    ck_assert_uint_eq(load_at(&sim, low, 4), 0);
    ck_assert_uint_eq(load_at(&sim, high, 4), 7);
}
END_TEST

/* A concurrent peer changes the word between our read and our CAS: the
 * loop retries and keeps the peer's bits. */
START_TEST(test_amo_interference)
{
    sim_t sim;
    uint64_t r;

    memset(&sim, 0, sizeof(sim));
    sim.word[1] = 0x0000000100000010ull;
    sim.interfere = 2;
    sim.interfere_xor = 0x0000010000000000ull; /* high half changes twice under us */
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_OR, 8, 8, 0x3, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_OK);
    /* CAS 1 (guess 0) fails after a flip, CAS 2 fails after a flip back,
     * CAS 3 succeeds */
    ck_assert_int_eq(sim.cas_calls, 3);
    ck_assert_uint_eq(r, 0x0000000100000010ull);
    ck_assert_uint_eq(sim.word[1], 0x0000000100000013ull);

    memset(&sim, 0, sizeof(sim));
    sim.interfere = 1;
    sim.interfere_xor = 0xabcd000000000000ull; /* the neighbour half, for a 32-bit op */
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_XOR, 4, 8, 0xffff, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_OK);
    ck_assert_int_eq(sim.cas_calls, 2);
    ck_assert_uint_eq(r, 0);
    ck_assert_uint_eq(sim.word[1], 0xabcd00000000ffffull);

    /* compare-and-swap that does not match ends as soon as the real value
     * is known, without writing */
    memset(&sim, 0, sizeof(sim));
    sim.word[1] = 0x4242424200000005ull;
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_CSWAP, 4, 8, 9, 6, sim_cas, sim_fadd, &sim, &r),
                     UTIL_OK);
    ck_assert_int_eq(sim.cas_calls, 1);
    ck_assert_uint_eq(r, 5);
    ck_assert_uint_eq(sim.word[1], 0x4242424200000005ull);
}
END_TEST

START_TEST(test_amo_errors)
{
    btl_verbs_amo_slot_t slot;
    sim_t sim;
    uint64_t r = 77;

    memset(&sim, 0, sizeof(sim));
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_ADD, 2, 8, 1, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_ERR_INVALID);
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_ADD, 4, 10, 1, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_ERR_INVALID);
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_ADD, 8, 12, 1, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_ERR_INVALID);
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_LAST, 8, 8, 1, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_ERR_INVALID);
    ck_assert_int_eq(sim.cas_calls + sim.fadd_calls, 0);
    sim.fail = UTIL_ERR_UNREACHABLE;
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_OR, 4, 8, 1, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_ERR_UNREACHABLE);
    ck_assert_int_eq(btl_verbs_amo_run(BTL_AMO_ADD, 8, 8, 1, 0, sim_cas, sim_fadd, &sim, &r),
                     UTIL_ERR_UNREACHABLE);
    ck_assert_uint_eq(r, 77); /* untouched on failure */

    ck_assert_int_eq(btl_verbs_amo_slot(4, 0x100c, &slot), UTIL_OK);
    ck_assert_uint_eq(slot.word_raddr, 0x1008);
    ck_assert_uint_eq(slot.mask, 0xffffffffu);
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
    ck_assert_uint_eq(slot.shift, 32);
    ck_assert_int_eq(btl_verbs_amo_slot(4, 0x1008, &slot), UTIL_OK);
    ck_assert_uint_eq(slot.shift, 0);
#endif
    ck_assert_int_eq(btl_verbs_amo_slot(8, 0x1008, &slot), UTIL_OK);
    ck_assert_uint_eq(slot.shift, 0);
    ck_assert_uint_eq(slot.mask, ~(uint64_t)0);
}
END_TEST

/* ---- the device ---- */
static int device_count(void)
{
    int num = 0;
    struct ibv_device **list = ibv_get_device_list(&num);

    if (list != NULL) {
        ibv_free_device_list(list);
    }
    return num;
}

/* Without a device: verbs is not offered and forcing it fails cleanly. */
static void check_absent(void)
{
    btl_ctx_t *ctx = NULL;

    ck_assert_ptr_null(btl_component_find("verbs"));
    for (int i = 0; i < btl_component_count(); i++) {
        ck_assert_str_ne(btl_component_at(i)->name, "verbs");
    }
    /* refused with its one-line message (it shows in the test log) */
    ck_assert_int_eq(btl_ctx_create("verbs", &ctx), UTIL_ERR_UNSUPPORTED);
    ck_assert_ptr_null(ctx);
}

/* With a device: a 1-PE job whose only peer (myself) is reached through
 * the RC QP connected to itself. */
static void check_device(void)
{
    enum { ARENA = 1 << 20, BIG = 200000 };
    btl_ctx_t *ctx;
    btl_mem_t *arena, *src_mem;
    btl_ep_t *ep;
    btl_rkey_t *rkey;
    uint8_t packed[BTL_RKEY_PACKED_MAX];
    size_t packed_len;
    uint64_t base, r, v;
    uint8_t *local, *src, *back;
    uint32_t v32;

    ck_assert_int_eq(btl_ctx_create("verbs", &ctx), UTIL_OK);
    ck_assert_int_eq(btl_mem_alloc(ctx, ARENA, &arena), UTIL_OK);
    ck_assert_int_eq(btl_mem_alloc(ctx, BIG, &src_mem), UTIL_OK);
    local = btl_mem_addr(arena);
    base = (uintptr_t)local;
    ck_assert_int_eq(btl_mem_pack(arena, packed, sizeof(packed), &packed_len), UTIL_OK);
    ck_assert_int_eq(btl_ctx_ep(ctx, 0, &ep), UTIL_OK);
    ck_assert_str_eq(btl_ep_backend(ep), "verbs");
    ck_assert_int_eq(btl_rkey_unpack(ep, packed, packed_len, &rkey), UTIL_OK);

    /* inline put, get */
    v = 0x1122334455667788ull;
    ck_assert_int_eq(btl_put(ep, &v, 8, NULL, base + 64, rkey), UTIL_OK);
    ck_assert_int_eq(btl_quiet(btl_ctx_iface(ctx, 0)), UTIL_OK);
    ck_assert_mem_eq(local + 64, &v, 8);
    r = 0;
    ck_assert_int_eq(btl_get(ep, &r, 8, NULL, base + 64, rkey), UTIL_OK);
    ck_assert_uint_eq(r, v);

    /* large put from unregistered memory (bounce) and from registered memory */
    src = malloc(BIG);
    back = malloc(BIG);
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(back);
    for (int i = 0; i < BIG; i++) {
        src[i] = (uint8_t)(i * 7 + 1);
    }
    ck_assert_int_eq(btl_put(ep, src, BIG, NULL, base + 4096, rkey), UTIL_OK);
    ck_assert_mem_eq(local + 4096, src, BIG);
    memcpy(btl_mem_addr(src_mem), src, BIG);
    memset(local + 4096, 0, BIG);
    ck_assert_int_eq(btl_put(ep, btl_mem_addr(src_mem), BIG, src_mem, base + 4096, rkey), UTIL_OK);
    ck_assert_mem_eq(local + 4096, src, BIG);
    ck_assert_int_eq(btl_get(ep, back, BIG, NULL, base + 4096, rkey), UTIL_OK);
    ck_assert_mem_eq(back, src, BIG);

    /* put-with-flag: after the flag, the payload */
    memset(local + 256, 0, 40);
    ck_assert_int_eq(btl_put_flag(ep, src, 32, NULL, base + 256, rkey, base + 512, rkey, 42, NULL),
                     UTIL_OK);
    ck_assert_int_eq(btl_flag_wait(ctx, (uint64_t *)(local + 512), 42, 100000000), UTIL_OK);
    ck_assert_mem_eq(local + 256, src, 32);

    /* atomics, 64 and both 32-bit halves */
    memset(local + 1024, 0, 16);
    ck_assert_int_eq(btl_amo_fetch(ep, BTL_AMO_ADD, 8, base + 1024, rkey, 5, 0, &r), UTIL_OK);
    ck_assert_uint_eq(r, 0);
    ck_assert_int_eq(btl_amo_fetch(ep, BTL_AMO_CSWAP, 8, base + 1024, rkey, 9, 5, &r), UTIL_OK);
    ck_assert_uint_eq(r, 5);
    ck_assert_int_eq(btl_amo_post(ep, BTL_AMO_XOR, 8, base + 1024, rkey, 3), UTIL_OK);
    memcpy(&v, local + 1024, 8);
    ck_assert_uint_eq(v, 10);
    ck_assert_int_eq(btl_amo_post(ep, BTL_AMO_ADD, 4, base + 1032, rkey, 0xffffffff), UTIL_OK);
    ck_assert_int_eq(btl_amo_post(ep, BTL_AMO_ADD, 4, base + 1032, rkey, 2), UTIL_OK);
    ck_assert_int_eq(btl_amo_fetch(ep, BTL_AMO_SWAP, 4, base + 1036, rkey, 77, 0, &r), UTIL_OK);
    ck_assert_uint_eq(r, 0);
    memcpy(&v32, local + 1032, 4);
    ck_assert_uint_eq(v32, 1);
    memcpy(&v32, local + 1036, 4);
    ck_assert_uint_eq(v32, 77);

    /* a range outside the registration is refused before posting */
    util_log_level = -1;
    ck_assert_int_eq(btl_put(ep, &v, 8, NULL, base + ARENA - 4, rkey), UTIL_ERR_INVALID);
    util_log_level = UTIL_LOG_WARN;
    ck_assert_int_eq(btl_ctx_quiet(ctx), UTIL_OK);

    free(src);
    free(back);
    ck_assert_int_eq(btl_rkey_release(rkey), UTIL_OK);
    ck_assert_int_eq(btl_mem_free(src_mem), UTIL_OK);
    ck_assert_int_eq(btl_mem_free(arena), UTIL_OK);
    ck_assert_int_eq(btl_ctx_destroy(ctx), UTIL_OK);
}

START_TEST(test_device)
{
    int num = device_count();

    if (btl_component_find("verbs") == NULL) {
        check_absent();
        printf("no RDMA device%s: skipping the btl/verbs device tests (checked that verbs is "
               "not offered and RMB_BTL=verbs is refused; see docs/btl_verbs.md)\n",
               num > 0 ? " with an active port" : "");
        return;
    }
    printf("btl/verbs: %d RDMA device(s): running the device tests\n", num);
    check_device();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("btl_verbs");
    TCase *wire = tcase_create("wire");
    TCase *dev = tcase_create("device");

    tcase_add_test(wire, test_conn_roundtrip);
    tcase_add_test(wire, test_conn_rejects);
    tcase_add_test(wire, test_mtu);
    tcase_add_test(wire, test_rkey);
    tcase_add_test(wire, test_range);
    tcase_add_test(wire, test_wr_write_read);
    tcase_add_test(wire, test_wr_atomics);
    tcase_add_test(wire, test_wr_put_flag);
    tcase_add_test(wire, test_credits_signal_every);
    tcase_add_test(wire, test_credits_last_slot_and_budget);
    tcase_add_test(wire, test_credits_random);
    tcase_add_test(wire, test_credits_release);
    tcase_add_test(wire, test_wr_id);
    tcase_add_test(wire, test_wc_error);
    tcase_add_test(wire, test_amo_all_ops);
    tcase_add_test(wire, test_amo_primitive_counts);
    tcase_add_test(wire, test_amo_interference);
    tcase_add_test(wire, test_amo_errors);
    tcase_set_timeout(wire, 30); /* CI machines run many jobs on 2 cores */
    suite_add_tcase(s, wire);
    tcase_set_timeout(dev, 60);
    tcase_add_test(dev, test_device);
    suite_add_tcase(s, dev);
    return mp_run_suite(s);
}
