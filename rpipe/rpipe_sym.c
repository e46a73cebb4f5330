/*
 * Symmetric segments: collective creation (every rank's packed key is
 * gathered once) and lazy per-peer connection. See rpipe_sym.h.
 */
#include "rpipe/rpipe_sym.h"
#include "rpipe/rpipe_inl.h"
#include "bootstrap/bootstrap.h"
#include "util/log.h"

#include "util/env.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t base;
    uint64_t size;
    uint64_t key_len;
    uint8_t  key[BTL_RKEY_PACKED_MAX];
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
    sym->packed        = (uint8_t *)all;
    sym->packed_stride = sizeof(*all);
    return UTIL_OK;
}

int rpipe_sym_amo_network;

/* RMB_AMO_NETWORK (see rpipe_sym.h, "the atomicity rule"). */
static util_status_t rpipe_sym_choose_amo(void)
{
    btl_iface_t *net = btl_ctx_net_iface(rpipe_state.btl);
    const char *how = "auto";

    util_env_get_string("RMB_AMO_NETWORK", &how);
    if (strcmp(how, "no") == 0) {
        rpipe_sym_amo_network = 0;
    } else if (strcmp(how, "yes") == 0) {
        rpipe_sym_amo_network = net != NULL;
    } else if (strcmp(how, "auto") == 0) {
        /* An open network iface serves some peer (auto opens one only across
         * nodes; RMB_BTL=mpi|ofi|verbs serves every peer with it, on one node
         * too), while my own atomics would be CPU ones on the same words. */
        rpipe_sym_amo_network = net != NULL && rpipe_state.size > 1 &&
                                !(btl_iface_caps(net) & BTL_CAP_AMO_CPU);
    } else {
        util_error("RMB_AMO_NETWORK is '%s'; use auto, yes or no", how);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

enum { RPIPE_SYM_ALLOC, RPIPE_SYM_REG, RPIPE_SYM_REMAP };

static util_status_t rpipe_sym_create(int how, void *addr, size_t size, rpipe_sym_t **sym_p)
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
    sym->npeers = rpipe_state.size;
    sym->size   = size;
    sym->peer   = calloc((size_t)sym->npeers, sizeof(*sym->peer));
    if (sym->peer == NULL) {
        free(sym);
        return UTIL_ERR_NO_MEMORY;
    }
    status = how == RPIPE_SYM_ALLOC ? btl_mem_alloc(rpipe_state.btl, size, &sym->mem)
           : how == RPIPE_SYM_REG   ? btl_mem_reg(rpipe_state.btl, addr, size, &sym->mem)
                                    : btl_mem_remap(rpipe_state.btl, addr, size, &sym->mem);
    if (status != UTIL_OK) {
        goto err_free;
    }
    sym->base = btl_mem_addr(sym->mem);
    status = rpipe_sym_publish(sym);
    if (status != UTIL_OK) {
        goto err_mem;
    }
    sym->peer[rpipe_state.rank].ptr = sym->base; /* myself: always plain memory */
    *sym_p = sym;
    return UTIL_OK;

err_mem:
    btl_mem_free(sym->mem);
err_free:
    free(sym->peer);
    free(sym);
    return status;
}

util_status_t rpipe_sym_alloc(size_t size, rpipe_sym_t **sym_p)
{
    return rpipe_sym_create(RPIPE_SYM_ALLOC, NULL, size, sym_p);
}

util_status_t rpipe_sym_reg(void *addr, size_t size, rpipe_sym_t **sym_p)
{
    return (addr == NULL) ? UTIL_ERR_INVALID : rpipe_sym_create(RPIPE_SYM_REG, addr, size, sym_p);
}

util_status_t rpipe_sym_static(void *addr, size_t size, rpipe_sym_t **sym_p)
{
    return (addr == NULL) ? UTIL_ERR_INVALID : rpipe_sym_create(RPIPE_SYM_REMAP, addr, size, sym_p);
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
    status = btl_ctx_ep(rpipe_state.btl, pe, &ep);
    if (status != UTIL_OK) {
        goto out;
    }
    card   = (const rpipe_sym_card_t *)(sym->packed + (size_t)pe * sym->packed_stride);
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
        status = btl_ctx_net_ep(rpipe_state.btl, pe, &ep);
        if (status == UTIL_OK) {
            card   = (const rpipe_sym_card_t *)(sym->packed + (size_t)pe * sym->packed_stride);
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
    free(sym->peer);
    free(sym);
    return status;
}

util_status_t rpipe_sym_quiet(void)
{
    util_status_t status;

    rpipe_sym_enter();
    status = btl_ctx_quiet(rpipe_state.btl);
    rpipe_sym_leave();
    return status;
}

util_status_t rpipe_sym_fence(void)
{
    /* Ordering per peer is implied by completing everything. */
    return rpipe_sym_quiet();
}

void rpipe_sym_progress(void)
{
    rpipe_sym_enter();
    btl_ctx_progress(rpipe_state.btl);
    rpipe_sym_leave();
}
