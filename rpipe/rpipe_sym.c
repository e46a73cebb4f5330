/*
 * Symmetric segments: collective creation (every rank's packed key is
 * gathered once) and lazy per-peer connection. See rpipe_sym.h.
 */
#include "rpipe/rpipe_sym.h"
#include "rpipe/rpipe_inl.h"
#include "bootstrap/bootstrap.h"
#include "util/log.h"

#include "util/env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    uint64_t base;
    uint64_t size;
    uint64_t key_len;
    uint8_t key[BTL_RKEY_PACKED_MAX];
} rpipe_sym_card_t;

static util_status_t rpipe_sym_publish(rpipe_sym_t *sym)
{
    rpipe_sym_card_t mine, *all;
    util_status_t status;
    size_t key_len;

    memset(&mine, 0, sizeof(mine));
    mine.base = (uint64_t)(uintptr_t)sym->base;
    mine.size = sym->size;
    status = btl_mem_pack(sym->mem, mine.key, sizeof(mine.key), &key_len);
    if (status != UTIL_OK) {
        return status;
    }
    mine.key_len = key_len;
    all = malloc(sizeof(*all) * (size_t)sym->npeers);
    if (all == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    status = bootstrap_allgather(&mine, all, sizeof(mine));
    if (status != UTIL_OK) {
        free(all);
        return status;
    }
    for (int pe = 0; pe < sym->npeers; pe++) {
        if (all[pe].size != sym->size) {
            util_error("symmetric segment: rank %d has %llu bytes, I have %zu (sizes must match)",
                       pe, (unsigned long long)all[pe].size, sym->size);
            free(all);
            return UTIL_ERR_INVALID;
        }
        sym->peer[pe].base = all[pe].base;
    }
    sym->packed = (uint8_t *)all;
    sym->packed_stride = sizeof(*all);
    return UTIL_OK;
}

static double rpipe_sym_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A group's exchange of cards: through the caller's allgather, or put mine
 * under "sg<ctx>.<rank>.<tag>" and read each other member's (the bootstrap
 * holds a get until the peer has committed; retried up to
 * RMB_RPIPE_CONNECT_TIMEOUT; a few hundred microseconds per get under
 * PMIx, hence the allgather where the caller has a cheaper one). Only
 * members take part: no fence, no barrier. */
static util_status_t rpipe_sym_publish_group(rpipe_sym_t *sym, uint64_t tag,
                                             rpipe_sym_allgather_func_t allgather, void *arg)
{
    rpipe_sym_card_t *all;
    char key[BOOTSTRAP_KEY_MAX];
    util_status_t status;
    size_t key_len, got;
    int me = -1;

    all = calloc((size_t)sym->npeers, sizeof(*all));
    if (all == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    for (int i = 0; i < sym->npeers; i++) {
        if (sym->ranks[i] == rpipe_state.rank) {
            me = i;
        }
    }
    all[me].base = (uint64_t)(uintptr_t)sym->base;
    all[me].size = sym->size;
    status = btl_mem_pack(sym->mem, all[me].key, sizeof(all[me].key), &key_len);
    if (status != UTIL_OK) {
        goto err;
    }
    all[me].key_len = key_len;
    if (allgather != NULL) {
        rpipe_sym_card_t mine = all[me];
        status = allgather(arg, &mine, sizeof(mine), all) == 0 ? UTIL_OK : UTIL_ERR_STATE;
        for (int i = 0; i < sym->npeers && status == UTIL_OK; i++) {
            if (all[i].size != sym->size) {
                util_error("symmetric group segment: rank %d has %llu bytes, I have %zu (sizes "
                           "must match)",
                           sym->ranks[i], (unsigned long long)all[i].size, sym->size);
                status = UTIL_ERR_INVALID;
            }
        }
        goto done;
    }
    snprintf(key, sizeof(key), "sg%u.%d.%llu", rpipe_state.btl->serial, rpipe_state.rank,
             (unsigned long long)tag);
    status = bootstrap_put(key, &all[me], sizeof(all[me]));
    if (status == UTIL_OK) {
        status = bootstrap_commit();
    }
    for (int i = 0; i < sym->npeers && status == UTIL_OK; i++) {
        double deadline = rpipe_sym_now() + rpipe_state.connect_timeout;

        if (i == me) {
            continue;
        }
        snprintf(key, sizeof(key), "sg%u.%d.%llu", rpipe_state.btl->serial, sym->ranks[i],
                 (unsigned long long)tag);
        do {
            status = bootstrap_get(sym->ranks[i], key, &all[i], sizeof(all[i]), &got);
        } while ((status == UTIL_ERR_TIMEOUT || status == UTIL_ERR_NOT_FOUND) &&
                 rpipe_sym_now() < deadline);
        if (status == UTIL_OK && (got != sizeof(all[i]) || all[i].size != sym->size)) {
            util_error("symmetric group segment: rank %d published %llu bytes, I have %zu "
                       "(sizes must match)",
                       sym->ranks[i], (unsigned long long)all[i].size, sym->size);
            status = UTIL_ERR_INVALID;
        } else if (status != UTIL_OK) {
            util_error("symmetric group segment: no key from rank %d: %s", sym->ranks[i],
                       util_status_string(status));
        }
    }
done:
    if (status != UTIL_OK) {
        goto err;
    }
    for (int i = 0; i < sym->npeers; i++) {
        sym->peer[i].base = all[i].base;
    }
    sym->packed = (uint8_t *)all;
    sym->packed_stride = sizeof(*all);
    sym->peer[me].ptr = sym->base; /* myself: always plain memory */
    return UTIL_OK;

err:
    free(all);
    return status;
}

int rpipe_sym_amo_network;
int rpipe_sym_pe_progress;
static unsigned rpipe_sym_polls;

void rpipe_sym_poll_slow(void)
{
    static uint64_t relaxes_seen;

    /* relaxed: a count lost between threads only moves the next drive */
    if (__atomic_add_fetch(&rpipe_sym_polls, 1, __ATOMIC_RELAXED) % RPIPE_SYM_POLL_EVERY == 0) {
        util_wait_share_core(&relaxes_seen); /* a loop of such calls may never wait */
        rpipe_sym_progress();
    }
}

/* RMB_AMO_NETWORK (see rpipe_sym.h, "the atomicity rule"). */
static util_status_t rpipe_sym_choose_amo(void)
{
    btl_iface_t *net = btl_ctx_net_iface(rpipe_state.btl);
    const char *how = "auto";

    rpipe_sym_pe_progress = net != NULL && (btl_iface_caps(net) & BTL_CAP_PE_PROGRESS);
    util_env_get_string("RMB_AMO_NETWORK", &how);
    if (strcmp(how, "no") == 0) {
        rpipe_sym_amo_network = 0;
    } else if (strcmp(how, "yes") == 0) {
        rpipe_sym_amo_network = net != NULL;
    } else if (strcmp(how, "auto") == 0) {
        /* An open network iface serves some peer (auto opens one only across
         * nodes; RMB_BTL=mpi|ofi|verbs serves every peer with it, on one node
         * too), while my own atomics would be CPU ones on the same words. */
        rpipe_sym_amo_network =
            net != NULL && rpipe_state.size > 1 && !(btl_iface_caps(net) & BTL_CAP_AMO_CPU);
    } else {
        util_error("RMB_AMO_NETWORK is '%s'; use auto, yes or no", how);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

enum { RPIPE_SYM_ALLOC, RPIPE_SYM_REG, RPIPE_SYM_REMAP };

/* ranks == NULL: every rank (collective over all); else a group (above). */
static util_status_t rpipe_sym_create(int how, void *addr, size_t size, const int *ranks,
                                      int nranks, uint64_t tag,
                                      rpipe_sym_allgather_func_t allgather, void *arg,
                                      rpipe_sym_t **sym_p)
{
    rpipe_sym_t *sym;
    util_status_t status;

    if (rpipe_state.refcount == 0) {
        util_error("symmetric segment: rinit() first");
        return UTIL_ERR_STATE;
    }
    sym = calloc(1, sizeof(*sym));
    if (sym == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    status = rpipe_sym_choose_amo();
    if (status != UTIL_OK) {
        free(sym);
        return status;
    }
    sym->npeers = ranks != NULL ? nranks : rpipe_state.size;
    sym->size = size;
    sym->peer = calloc((size_t)sym->npeers, sizeof(*sym->peer));
    if (sym->peer == NULL) {
        free(sym);
        return UTIL_ERR_NO_MEMORY;
    }
    if (ranks != NULL) {
        sym->ranks = malloc(sizeof(int) * (size_t)nranks);
        if (sym->ranks == NULL) {
            status = UTIL_ERR_NO_MEMORY;
            goto err_free;
        }
        memcpy(sym->ranks, ranks, sizeof(int) * (size_t)nranks);
    }
    status = how == RPIPE_SYM_ALLOC ? btl_mem_alloc(rpipe_state.btl, size, &sym->mem)
             : how == RPIPE_SYM_REG ? btl_mem_reg(rpipe_state.btl, addr, size, &sym->mem)
                                    : btl_mem_remap(rpipe_state.btl, addr, size, &sym->mem);
    if (status != UTIL_OK) {
        goto err_free;
    }
    sym->base = btl_mem_addr(sym->mem);
    status =
        ranks != NULL ? rpipe_sym_publish_group(sym, tag, allgather, arg) : rpipe_sym_publish(sym);
    if (status != UTIL_OK) {
        goto err_mem;
    }
    if (ranks == NULL) {
        sym->peer[rpipe_state.rank].ptr = sym->base; /* myself: always plain memory */
    }
    *sym_p = sym;
    return UTIL_OK;

err_mem:
    btl_mem_free(sym->mem);
err_free:
    free(sym->ranks);
    free(sym->peer);
    free(sym);
    return status;
}

util_status_t rpipe_sym_alloc(size_t size, rpipe_sym_t **sym_p)
{
    return rpipe_sym_create(RPIPE_SYM_ALLOC, NULL, size, NULL, 0, 0, NULL, NULL, sym_p);
}

util_status_t rpipe_sym_reg(void *addr, size_t size, rpipe_sym_t **sym_p)
{
    return (addr == NULL)
               ? UTIL_ERR_INVALID
               : rpipe_sym_create(RPIPE_SYM_REG, addr, size, NULL, 0, 0, NULL, NULL, sym_p);
}

util_status_t rpipe_sym_static(void *addr, size_t size, rpipe_sym_t **sym_p)
{
    return (addr == NULL)
               ? UTIL_ERR_INVALID
               : rpipe_sym_create(RPIPE_SYM_REMAP, addr, size, NULL, 0, 0, NULL, NULL, sym_p);
}

util_status_t rpipe_sym_alloc_group(const int *ranks, int nranks, uint64_t tag, size_t size,
                                    rpipe_sym_allgather_func_t allgather, void *arg,
                                    rpipe_sym_t **sym_p)
{
    int mine = 0;

    for (int i = 0; ranks != NULL && i < nranks; i++) {
        mine += ranks[i] == rpipe_state.rank;
    }
    if (mine != 1) {
        util_error("symmetric group segment: this rank is not (once) in the group");
        return UTIL_ERR_INVALID;
    }
    return rpipe_sym_create(RPIPE_SYM_ALLOC, NULL, size, ranks, nranks, tag, allgather, arg, sym_p);
}

int rpipe_sym_threaded;
pthread_mutex_t rpipe_sym_mutex = PTHREAD_MUTEX_INITIALIZER;

void rpipe_sym_set_threaded(int on)
{
    rpipe_sym_threaded = on;
}

/* The peer is published (ptr, else ep) only once complete, with release
 * stores, so a thread that sees it in rpipe_sym_peer sees its key too. */
util_status_t rpipe_sym_connect(rpipe_sym_t *sym, int pe)
{
    const rpipe_sym_card_t *card;
    rpipe_sym_peer_t *peer = &sym->peer[pe];
    util_status_t status = UTIL_OK;
    btl_ep_t *ep;
    void *ptr;

    rpipe_sym_enter();
    if (peer->ptr != NULL || peer->ep != NULL) {
        goto out; /* another thread got there first */
    }
    status = btl_ctx_ep(rpipe_state.btl, sym->ranks != NULL ? sym->ranks[pe] : pe, &ep);
    if (status != UTIL_OK) {
        goto out;
    }
    card = (const rpipe_sym_card_t *)(sym->packed + (size_t)pe * sym->packed_stride);
    status = btl_rkey_unpack(ep, card->key, card->key_len, &peer->rkey);
    if (status != UTIL_OK) {
        goto out;
    }
    if (btl_rkey_ptr(peer->rkey, peer->base, &ptr) == UTIL_OK) {
        __atomic_store_n(&peer->ptr, (char *)ptr, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&peer->ep, ep, __ATOMIC_RELEASE);
out:
    rpipe_sym_leave();
    return status;
}

util_status_t rpipe_sym_amo_connect(rpipe_sym_t *sym, int pe, rpipe_sym_peer_t **peer_p)
{
    const rpipe_sym_card_t *card;
    rpipe_sym_peer_t *peer = &sym->peer[pe];
    util_status_t status = UTIL_OK;
    btl_ep_t *ep;

    rpipe_sym_enter();
    if (peer->amo_ep == NULL) {
        status = btl_ctx_net_ep(rpipe_state.btl, sym->ranks != NULL ? sym->ranks[pe] : pe, &ep);
        if (status == UTIL_OK) {
            card = (const rpipe_sym_card_t *)(sym->packed + (size_t)pe * sym->packed_stride);
            status = btl_rkey_unpack(ep, card->key, card->key_len, &peer->amo_rkey);
        }
        if (status == UTIL_OK) {
            __atomic_store_n(&peer->amo_ep, ep, __ATOMIC_RELEASE);
        }
    }
    rpipe_sym_leave();
    *peer_p = peer;
    return status;
}

util_status_t rpipe_sym_destroy(rpipe_sym_t *sym)
{
    util_status_t status;

    if (sym == NULL) {
        return UTIL_ERR_INVALID;
    }
    /* nobody may still be reaching into this segment */
    status = bootstrap_barrier();
    rpipe_sym_release(sym);
    return status;
}

void rpipe_sym_release(rpipe_sym_t *sym)
{
    for (int pe = 0; pe < sym->npeers; pe++) {
        if (sym->peer[pe].rkey != NULL) {
            btl_rkey_release(sym->peer[pe].rkey);
        }
        if (sym->peer[pe].amo_rkey != NULL) {
            btl_rkey_release(sym->peer[pe].amo_rkey);
        }
    }
    btl_mem_free(sym->mem);
    free(sym->packed);
    free(sym->ranks);
    free(sym->peer);
    free(sym);
}

util_status_t rpipe_sym_quiet(void)
{
    util_status_t status;

    rpipe_sym_enter();
    status = btl_ctx_quiet(rpipe_state.btl);
    rpipe_sym_leave();
    rpipe_sym_poll(); /* with nothing in flight a quiet may not drive the btl */
    return status;
}

/* Waits as every wait does (spin, then yield or nap by the policy): across
 * nodes a get may need its target's CPU (TCP), which may be this core's. The
 * backends fail an operation that outlives their bound. */
util_status_t rpipe_sym_comp_wait(btl_comp_t *comp)
{
    util_wait_t wait = UTIL_WAIT_INIT;
    util_status_t status;

    while ((status = btl_comp_test(comp)) == UTIL_IN_PROGRESS) {
        rpipe_sym_enter();
        status = btl_ctx_progress(rpipe_state.btl);
        rpipe_sym_leave();
        if (status < 0) {
            return status;
        }
        util_wait_relax(&wait);
    }
    return status;
}

util_status_t rpipe_sym_fence(void)
{
    util_status_t status;

    /* Atomics through the network to PEs whose memory is mapped here: a
     * store after the fence must wait for them to land (two paths to one
     * PE), so complete everything. */
    if (rpipe_sym_amo_network) {
        return rpipe_sym_quiet();
    }
    /* Else each PE has one path: stores into mapped peers are ordered by
     * the on-node iface's release fence, the network ifaces order theirs
     * (a quiet where they cannot do less). */
    rpipe_sym_enter();
    status = btl_ctx_fence(rpipe_state.btl);
    rpipe_sym_leave();
    return status;
}

void rpipe_sym_progress(void)
{
    rpipe_sym_enter();
    btl_ctx_progress(rpipe_state.btl);
    rpipe_sym_leave();
}

util_status_t rpipe_sym_amo_fetch_nbi(rpipe_sym_t *sym, int pe, size_t offset, btl_amo_op_t op,
                                      unsigned size, uint64_t operand, uint64_t compare,
                                      void *result)
{
    rpipe_sym_amo_route_t r;
    util_status_t status = rpipe_sym_amo_route(sym, pe, offset, &r);

    if (r.ptr != NULL) {
        uint64_t old = btl_cpu_amo_fetch(op, size, r.ptr, operand, compare);
        memcpy(result, &old, size); /* little-endian: the low bytes */
        rpipe_sym_poll();
        return UTIL_OK;
    }
    if (status != UTIL_OK) {
        return status;
    }
    rpipe_sym_enter();
    status = btl_amo_fetch_nbi(r.ep, op, size, r.raddr, r.rkey, operand, compare, result);
    rpipe_sym_leave();
    return status;
}
