/*
 * btl/verbs device-independent logic (see btl_verbs_wire.h). No libibverbs
 * calls: this file is what tests/btl/check_btl_verbs.c verifies on machines
 * without an RDMA device.
 */
#include "btl/verbs/btl_verbs_wire.h"
#include "btl/btl_cpu_amo.h"

#include <string.h>

/* ---- little-endian helpers: the layouts are fixed, not host order ---- */
static void btl_verbs_put_le(uint8_t *out, uint64_t value, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++) {
        out[i] = (uint8_t)(value >> (8 * i));
    }
}

static uint64_t btl_verbs_get_le(const uint8_t *in, unsigned bytes)
{
    uint64_t value = 0;

    for (unsigned i = 0; i < bytes; i++) {
        value |= (uint64_t)in[i] << (8 * i);
    }
    return value;
}

/* ---- connection metadata ---- */
#define BTL_VERBS_24BIT 0xffffffu

static int btl_verbs_conn_valid(const btl_verbs_conn_t *conn)
{
    return conn->qpn <= BTL_VERBS_24BIT && conn->psn <= BTL_VERBS_24BIT &&
           btl_verbs_mtu_bytes(conn->mtu) != 0 && conn->has_gid <= 1 &&
           (conn->has_gid || conn->lid != 0);
}

util_status_t btl_verbs_conn_pack(const btl_verbs_conn_t *conn, void *buf, size_t bufsize,
                                  size_t *size_p)
{
    uint8_t *out = buf;

    if (!btl_verbs_conn_valid(conn)) {
        return UTIL_ERR_INVALID;
    }
    if (bufsize < BTL_VERBS_CONN_SIZE) {
        return UTIL_ERR_TRUNCATED;
    }
    out[0] = BTL_VERBS_CONN_MAGIC;
    out[1] = BTL_VERBS_CONN_VERSION;
    out[2] = conn->port;
    out[3] = conn->mtu;
    out[4] = conn->has_gid;
    out[5] = 0;
    btl_verbs_put_le(out + 6, conn->lid, 2);
    btl_verbs_put_le(out + 8, conn->qpn, 4);
    btl_verbs_put_le(out + 12, conn->psn, 4);
    memcpy(out + 16, conn->gid, 16);
    *size_p = BTL_VERBS_CONN_SIZE;
    return UTIL_OK;
}

util_status_t btl_verbs_conn_unpack(const void *buf, size_t size, btl_verbs_conn_t *conn_p)
{
    const uint8_t *in = buf;
    btl_verbs_conn_t conn;

    if (size < 2 || in[0] != BTL_VERBS_CONN_MAGIC) {
        return UTIL_ERR_INVALID;
    }
    if (in[1] != BTL_VERBS_CONN_VERSION) {
        return UTIL_ERR_UNSUPPORTED; /* a peer running another build */
    }
    if (size != BTL_VERBS_CONN_SIZE || in[5] != 0) {
        return UTIL_ERR_INVALID;
    }
    conn.port = in[2];
    conn.mtu = in[3];
    conn.has_gid = in[4];
    conn.lid = (uint16_t)btl_verbs_get_le(in + 6, 2);
    conn.qpn = (uint32_t)btl_verbs_get_le(in + 8, 4);
    conn.psn = (uint32_t)btl_verbs_get_le(in + 12, 4);
    memcpy(conn.gid, in + 16, 16);
    if (!btl_verbs_conn_valid(&conn)) {
        return UTIL_ERR_INVALID;
    }
    *conn_p = conn;
    return UTIL_OK;
}

uint8_t btl_verbs_mtu_common(uint8_t mine, uint8_t theirs)
{
    return mine < theirs ? mine : theirs;
}

unsigned btl_verbs_mtu_bytes(uint8_t mtu)
{
    /* IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5 */
    return (mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096) ? 128u << mtu : 0;
}

/* ---- packed remote key ---- */
util_status_t btl_verbs_rkey_pack_raw(uint64_t addr, uint64_t length, uint32_t rkey, void *buf,
                                      size_t bufsize, size_t *size_p)
{
    uint8_t *out = buf;

    if (bufsize < BTL_VERBS_RKEY_SIZE) {
        return UTIL_ERR_TRUNCATED;
    }
    btl_verbs_put_le(out, addr, 8);
    btl_verbs_put_le(out + 8, length, 8);
    btl_verbs_put_le(out + 16, rkey, 4);
    *size_p = BTL_VERBS_RKEY_SIZE;
    return UTIL_OK;
}

util_status_t btl_verbs_rkey_unpack_raw(const void *buf, size_t size, uint64_t *addr_p,
                                        uint64_t *length_p, uint32_t *rkey_p)
{
    const uint8_t *in = buf;
    uint64_t addr, length;

    if (size != BTL_VERBS_RKEY_SIZE) {
        return UTIL_ERR_INVALID;
    }
    addr = btl_verbs_get_le(in, 8);
    length = btl_verbs_get_le(in + 8, 8);
    if (length == 0 || addr + length < addr) {
        return UTIL_ERR_INVALID;
    }
    *addr_p = addr;
    *length_p = length;
    *rkey_p = (uint32_t)btl_verbs_get_le(in + 16, 4);
    return UTIL_OK;
}

int btl_verbs_range_ok(uint64_t base, uint64_t length, uint64_t raddr, uint64_t len)
{
    return raddr >= base && raddr - base <= length && len <= length - (raddr - base);
}

/* ---- work requests ---- */
static void btl_verbs_wr_init(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t laddr,
                              uint32_t len, uint32_t lkey, enum ibv_wr_opcode opcode,
                              unsigned flags, uint64_t wr_id)
{
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = wr_id;
    wr->opcode = opcode;
    wr->send_flags = flags;
    if (sge != NULL) {
        sge->addr = laddr;
        sge->length = len;
        sge->lkey = lkey;
        wr->sg_list = sge;
        wr->num_sge = 1;
    }
}

void btl_verbs_wr_write(struct ibv_send_wr *wr, struct ibv_sge *sge, const void *src, uint32_t len,
                        uint32_t lkey, uint64_t raddr, uint32_t rkey, unsigned flags,
                        uint64_t wr_id)
{
    btl_verbs_wr_init(wr, sge, (uintptr_t)src, len, lkey, IBV_WR_RDMA_WRITE, flags, wr_id);
    wr->wr.rdma.remote_addr = raddr;
    wr->wr.rdma.rkey = rkey;
}

void btl_verbs_wr_read(struct ibv_send_wr *wr, struct ibv_sge *sge, void *dst, uint32_t len,
                       uint32_t lkey, uint64_t raddr, uint32_t rkey, unsigned flags, uint64_t wr_id)
{
    btl_verbs_wr_init(wr, sge, (uintptr_t)dst, len, lkey, IBV_WR_RDMA_READ,
                      flags & ~(unsigned)IBV_SEND_INLINE, wr_id);
    wr->wr.rdma.remote_addr = raddr;
    wr->wr.rdma.rkey = rkey;
}

void btl_verbs_wr_fadd(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t *result, uint32_t lkey,
                       uint64_t raddr, uint32_t rkey, uint64_t add, unsigned flags, uint64_t wr_id)
{
    btl_verbs_wr_init(wr, sge, (uintptr_t)result, 8, lkey, IBV_WR_ATOMIC_FETCH_AND_ADD,
                      flags & ~(unsigned)IBV_SEND_INLINE, wr_id);
    wr->wr.atomic.remote_addr = raddr;
    wr->wr.atomic.rkey = rkey;
    wr->wr.atomic.compare_add = add;
}

void btl_verbs_wr_cswap(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t *result,
                        uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t compare,
                        uint64_t swap, unsigned flags, uint64_t wr_id)
{
    btl_verbs_wr_init(wr, sge, (uintptr_t)result, 8, lkey, IBV_WR_ATOMIC_CMP_AND_SWP,
                      flags & ~(unsigned)IBV_SEND_INLINE, wr_id);
    wr->wr.atomic.remote_addr = raddr;
    wr->wr.atomic.rkey = rkey;
    wr->wr.atomic.compare_add = compare;
    wr->wr.atomic.swap = swap;
}

void btl_verbs_wr_nop(struct ibv_send_wr *wr, unsigned flags, uint64_t wr_id)
{
    btl_verbs_wr_init(wr, NULL, 0, 0, 0, IBV_WR_RDMA_WRITE, flags, wr_id);
}

void btl_verbs_wr_put_flag(struct ibv_send_wr wr[2], struct ibv_sge sge[2], const void *src,
                           uint32_t len, uint32_t lkey, unsigned payload_flags, uint64_t raddr,
                           uint32_t rkey, const uint64_t *flag_src, uint64_t flag_raddr,
                           uint32_t flag_rkey, unsigned flag_flags, uint64_t wr_id)
{
    btl_verbs_wr_write(&wr[0], &sge[0], src, len, lkey, raddr, rkey, payload_flags, 0);
    btl_verbs_wr_write(&wr[1], &sge[1], flag_src, 8, 0, flag_raddr, flag_rkey,
                       flag_flags | IBV_SEND_INLINE, wr_id);
    wr[0].next = &wr[1];
}

/* ---- credits ---- */
void btl_verbs_cq_credits_init(btl_verbs_cq_credits_t *cq, uint32_t cq_depth)
{
    memset(cq, 0, sizeof(*cq));
    cq->unsignaled_budget = cq_depth / 2;
    cq->signaled_depth = cq_depth - cq->unsignaled_budget;
}

void btl_verbs_sq_credits_init(btl_verbs_sq_credits_t *sq, uint32_t sq_depth, uint32_t signal_every)
{
    memset(sq, 0, sizeof(*sq));
    sq->sq_depth = sq_depth;
    sq->signal_every = signal_every > 0 ? signal_every : 1;
}

int btl_verbs_credits_available(const btl_verbs_sq_credits_t *sq, const btl_verbs_cq_credits_t *cq,
                                uint32_t n)
{
    /* every one of the n may have to be signaled */
    return sq->posted - sq->completed + n <= sq->sq_depth &&
           (uint64_t)cq->signaled + n <= cq->signaled_depth;
}

int btl_verbs_credits_post(btl_verbs_sq_credits_t *sq, btl_verbs_cq_credits_t *cq, int want_signal,
                           uint64_t *number_p)
{
    uint64_t number = sq->posted + 1;
    int signal = want_signal || number - sq->last_signaled >= sq->signal_every ||
                 number - sq->completed >= sq->sq_depth || cq->unsignaled >= cq->unsignaled_budget;

    sq->posted = number;
    if (signal) {
        sq->last_signaled = number;
        sq->signaled_out++;
        cq->signaled++;
    } else {
        cq->unsignaled++;
    }
    *number_p = number;
    return signal;
}

void btl_verbs_credits_complete(btl_verbs_sq_credits_t *sq, btl_verbs_cq_credits_t *cq,
                                uint64_t number)
{
    if (number <= sq->completed || number > sq->posted) {
        return; /* stale or foreign: nothing to retire */
    }
    cq->unsignaled -= (uint32_t)(number - sq->completed - 1);
    cq->signaled--;
    sq->signaled_out--;
    sq->completed = number;
}

void btl_verbs_credits_release(btl_verbs_sq_credits_t *sq, btl_verbs_cq_credits_t *cq)
{
    cq->unsignaled -= (uint32_t)(sq->posted - sq->completed - sq->signaled_out);
    cq->signaled -= sq->signaled_out;
    sq->signaled_out = 0;
    sq->completed = sq->posted;
}

uint64_t btl_verbs_wr_id_number(uint64_t wr_id, uint64_t posted)
{
    const uint64_t mask = ((uint64_t)1 << BTL_VERBS_WRID_NUMBER_BITS) - 1;

    return posted - ((posted - (wr_id & mask)) & mask);
}

/* ---- completion errors ---- */
util_status_t btl_verbs_wc_error(enum ibv_wc_status wc_status, const char **text_p)
{
    const char *text;
    util_status_t status;

    switch (wc_status) {
    case IBV_WC_SUCCESS:
        text = "success";
        status = UTIL_OK;
        break;
    case IBV_WC_LOC_LEN_ERR:
        text = "local length error: the request is longer than the QP or port allows";
        status = UTIL_ERR_INVALID;
        break;
    case IBV_WC_LOC_QP_OP_ERR:
        text = "local QP operation error: malformed work request or QP not ready";
        status = UTIL_ERR_INVALID;
        break;
    case IBV_WC_LOC_PROT_ERR:
        text = "local protection error: the local buffer is not registered (bad lkey) or "
               "lacks the access right";
        status = UTIL_ERR_INVALID;
        break;
    case IBV_WC_WR_FLUSH_ERR:
        text = "work request flushed: the connection failed on an earlier request";
        status = UTIL_ERR_IO;
        break;
    case IBV_WC_LOC_ACCESS_ERR:
        text = "local access error: the result buffer of a read or atomic is not writable";
        status = UTIL_ERR_INVALID;
        break;
    case IBV_WC_REM_INV_REQ_ERR:
        text = "remote invalid request: the peer rejected the operation (not enabled on its "
               "QP, e.g. atomics, or a bad length)";
        status = UTIL_ERR_INVALID;
        break;
    case IBV_WC_REM_ACCESS_ERR:
        text = "remote access error: the peer rejected the remote address, length or key "
               "(not registered there, released, or no access right)";
        status = UTIL_ERR_INVALID;
        break;
    case IBV_WC_REM_OP_ERR:
        text = "remote operation error: the peer's adapter could not complete the request";
        status = UTIL_ERR_IO;
        break;
    case IBV_WC_RETRY_EXC_ERR:
        text = "transport retry count exceeded: the peer does not answer (process gone, QP "
               "not connected, or link down)";
        status = UTIL_ERR_UNREACHABLE;
        break;
    case IBV_WC_RNR_RETRY_EXC_ERR:
        text = "receiver-not-ready retry count exceeded: the peer posted no receive";
        status = UTIL_ERR_UNREACHABLE;
        break;
    case IBV_WC_RESP_TIMEOUT_ERR:
        text = "response timeout";
        status = UTIL_ERR_TIMEOUT;
        break;
    case IBV_WC_FATAL_ERR:
        text = "fatal adapter error";
        status = UTIL_ERR_IO;
        break;
    case IBV_WC_BAD_RESP_ERR:
        text = "bad response from the peer";
        status = UTIL_ERR_IO;
        break;
    case IBV_WC_MW_BIND_ERR:
        text = "memory window bind error";
        status = UTIL_ERR_INVALID;
        break;
    case IBV_WC_REM_ABORT_ERR:
        text = "the peer aborted the request";
        status = UTIL_ERR_IO;
        break;
    default:
        text = "completion error";
        status = UTIL_ERR_IO;
        break;
    }
    *text_p = text;
    return status;
}

const char *btl_verbs_wc_opcode_name(enum ibv_wc_opcode opcode)
{
    switch (opcode) {
    case IBV_WC_RDMA_WRITE:
        return "RDMA write";
    case IBV_WC_RDMA_READ:
        return "RDMA read";
    case IBV_WC_COMP_SWAP:
        return "atomic compare-and-swap";
    case IBV_WC_FETCH_ADD:
        return "atomic fetch-and-add";
    case IBV_WC_SEND:
        return "send";
    default:
        return "operation";
    }
}

/* ---- atomics ---- */
uint64_t btl_verbs_amo_apply(btl_amo_op_t op, unsigned size, uint64_t old, uint64_t operand,
                             uint64_t compare)
{
    uint64_t mask = size == 8 ? ~(uint64_t)0 : 0xffffffffu;

    return btl_amo_combine(op, old & mask, operand & mask, compare & mask) & mask;
}

util_status_t btl_verbs_amo_slot(unsigned size, uint64_t raddr, btl_verbs_amo_slot_t *slot_p)
{
    if ((size != 4 && size != 8) || (raddr & (size - 1)) != 0) {
        return UTIL_ERR_INVALID;
    }
    slot_p->word_raddr = raddr & ~(uint64_t)7;
    slot_p->mask = size == 8 ? ~(uint64_t)0 : 0xffffffffu;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    slot_p->shift = size == 8 ? 0 : ((raddr & 4) ? 0 : 32);
#else
    slot_p->shift = (unsigned)(raddr & 4) * 8;
#endif
    return UTIL_OK;
}

util_status_t btl_verbs_amo_run(btl_amo_op_t op, unsigned size, uint64_t raddr, uint64_t operand,
                                uint64_t compare, btl_verbs_cas_func_t cas,
                                btl_verbs_fadd_func_t fadd, void *arg, uint64_t *result_p)
{
    btl_verbs_amo_slot_t slot;
    uint64_t guess = 0, got;
    util_status_t status;

    if ((unsigned)op >= BTL_AMO_LAST) {
        return UTIL_ERR_INVALID;
    }
    status = btl_verbs_amo_slot(size, raddr, &slot);
    if (status != UTIL_OK) {
        return status;
    }
    operand &= slot.mask;
    compare &= slot.mask;
    /* A carry out of the word's top bit is lost, so an add into the high
     * half (or the whole word) cannot disturb a neighbour. */
    if (op == BTL_AMO_FETCH || (op == BTL_AMO_ADD && slot.shift + size * 8 == 64)) {
        status = fadd(arg, slot.word_raddr, op == BTL_AMO_ADD ? operand << slot.shift : 0, &got);
        if (status == UTIL_OK) {
            *result_p = (got >> slot.shift) & slot.mask;
        }
        return status;
    }
    if (op == BTL_AMO_CSWAP && size == 8) {
        status = cas(arg, slot.word_raddr, compare, operand, &got);
        if (status == UTIL_OK) {
            *result_p = got;
        }
        return status;
    }
    /* First guess 0 (fresh memory is zeroed); each failed try returns the
     * word's real value, which is the next guess. */
    for (;;) {
        uint64_t old = (guess >> slot.shift) & slot.mask;
        uint64_t next = btl_verbs_amo_apply(op, size, old, operand, compare);
        uint64_t word = (guess & ~(slot.mask << slot.shift)) | (next << slot.shift);

        status = cas(arg, slot.word_raddr, guess, word, &got);
        if (status != UTIL_OK) {
            return status;
        }
        if (got == guess) {
            *result_p = old;
            return UTIL_OK;
        }
        /* got is the word at that instant: an op that would leave the value
         * as it is (CSWAP that does not match, AND with ones, ...) has taken
         * effect right then. */
        old = (got >> slot.shift) & slot.mask;
        if (btl_verbs_amo_apply(op, size, old, operand, compare) == old) {
            *result_p = old;
            return UTIL_OK;
        }
        guess = got;
    }
}
