/*
 * btl common code: the backend registry, the shared UNSUPPORTED stubs, the
 * per-peer context, and memory registered with every iface of a context.
 */
#include "btl/btl.h"
#include "btl/btl_inl.h"
#include "bootstrap/bootstrap.h"
#include "util/env.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- registry: one line per backend, preference order ---- */
#if RMB_HAVE_BTL_SHM
extern const btl_component_t btl_shm_component;
#endif
/* btl/ofi defines RMB_BTL_OFI_LINKED in btl/Makefile.include once its
 * sources are part of the build (configure may find libfabric earlier). */
#if RMB_HAVE_BTL_OFI && RMB_BTL_OFI_LINKED
extern const btl_component_t btl_ofi_component;
#endif
#if RMB_HAVE_BTL_UCX && RMB_BTL_UCX_LINKED
extern const btl_component_t btl_ucx_component;
#endif
#if RMB_HAVE_BTL_VERBS && RMB_BTL_VERBS_LINKED
extern const btl_component_t btl_verbs_component;
int btl_verbs_usable(void); /* an RDMA port is up (btl/verbs/btl_verbs.c) */
#endif
#if RMB_HAVE_MPI && RMB_BTL_MPI_LINKED
extern const btl_component_t btl_mpi_component;
int btl_mpi_usable(void); /* MPI runs in this process (btl/mpi/btl_mpi.c) */
#endif

static const btl_component_t *const btl_registry[] = {
#if RMB_HAVE_BTL_SHM
    &btl_shm_component,
#endif
#if RMB_HAVE_BTL_UCX && RMB_BTL_UCX_LINKED
    &btl_ucx_component, /* auto's network backend when built (docs/btl.md) */
#endif
#if RMB_HAVE_BTL_OFI && RMB_BTL_OFI_LINKED
    &btl_ofi_component,
#endif
#if RMB_HAVE_BTL_VERBS && RMB_BTL_VERBS_LINKED
    &btl_verbs_component,
#endif
#if RMB_HAVE_MPI && RMB_BTL_MPI_LINKED
    &btl_mpi_component,
#endif
    NULL /* keeps the array non-empty */
};

/* Built backends that can run now: btl/mpi only while MPI is initialized,
 * btl/verbs only where an RDMA device has an active port. */
static int btl_component_usable(const btl_component_t *comp)
{
#if RMB_HAVE_BTL_VERBS && RMB_BTL_VERBS_LINKED
    if (comp == &btl_verbs_component) {
        return btl_verbs_usable();
    }
#endif
#if RMB_HAVE_MPI && RMB_BTL_MPI_LINKED
    if (comp == &btl_mpi_component) {
        return btl_mpi_usable();
    }
#endif
    return comp != NULL;
}

int btl_component_count(void)
{
    int n = 0;

    for (int i = 0; btl_registry[i] != NULL; i++) {
        n += btl_component_usable(btl_registry[i]);
    }
    return n;
}

const btl_component_t *btl_component_at(int i)
{
    for (int k = 0; i >= 0 && btl_registry[k] != NULL; k++) {
        if (btl_component_usable(btl_registry[k]) && i-- == 0) {
            return btl_registry[k];
        }
    }
    return NULL;
}

const btl_component_t *btl_component_find(const char *name)
{
    for (int i = 0; btl_registry[i] != NULL; i++) {
        if (strcmp(btl_registry[i]->name, name) == 0 && btl_component_usable(btl_registry[i])) {
            return btl_registry[i];
        }
    }
    return NULL;
}

void btl_describe(btl_describe_func_t report, void *arg)
{
    for (int i = 0; btl_registry[i] != NULL; i++) {
        const btl_component_t *comp = btl_registry[i];

        report(arg, comp->name, "usable", comp->describe(report, arg) ? "yes" : "no");
    }
}

/* ---- shared stubs ---- */
void *btl_map_aligned(size_t size, int fd)
{
    size_t align = (size_t)sysconf(_SC_PAGESIZE), slack;
    char *reserved, *addr;

    while (align < size && align < ((size_t)1 << 30)) {
        align <<= 1;
    }
    /* reserve size + align of address space, then place the mapping on the
     * aligned address inside and give back the rest */
    reserved =
        mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) {
        return NULL;
    }
    addr = (char *)(((uintptr_t)reserved + align - 1) & ~(uintptr_t)(align - 1));
    if (mmap(addr, size, PROT_READ | PROT_WRITE,
             fd >= 0 ? MAP_SHARED | MAP_FIXED : MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, fd,
             0) == MAP_FAILED) {
        munmap(reserved, size + align);
        return NULL;
    }
    slack = (size_t)(addr - reserved);
    if (slack > 0) {
        munmap(reserved, slack);
    }
    if (align - slack > 0) {
        munmap(addr + size, align - slack);
    }
    return addr;
}

util_status_t btl_stub_mem_alloc(btl_iface_t *iface, size_t size, void **addr_p, btl_mr_t **mr_p)
{
    return UTIL_ERR_UNSUPPORTED;
}

util_status_t btl_stub_mem_remap(btl_iface_t *iface, void *addr, size_t size, btl_mr_t **mr_p)
{
    return UTIL_ERR_UNSUPPORTED;
}

btl_comp_t btl_comp_signal;

util_status_t btl_stub_put_flag(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp)
{
    return UTIL_ERR_UNSUPPORTED;
}

util_status_t btl_stub_get_flag(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp)
{
    return UTIL_ERR_UNSUPPORTED;
}

util_status_t btl_stub_amo_post(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                btl_rkey_t *rkey, uint64_t operand)
{
    return UTIL_ERR_UNSUPPORTED;
}

util_status_t btl_stub_amo_fetch(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                 btl_rkey_t *rkey, uint64_t operand, uint64_t compare,
                                 uint64_t *result_p)
{
    return UTIL_ERR_UNSUPPORTED;
}

util_status_t btl_amo_fetch_nbi_at_once(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                        uint64_t raddr, btl_rkey_t *rkey, uint64_t operand,
                                        uint64_t compare, void *result)
{
    uint64_t old = 0;
    util_status_t status =
        ep->iface->ops.amo_fetch(ep, op, size, raddr, rkey, operand, compare, &old);

    if (status == UTIL_OK) {
        memcpy(result, &old, size == 4 ? 4 : 8); /* little-endian: the low bytes */
    }
    return status;
}

util_status_t btl_stub_iface(btl_iface_t *iface)
{
    return UTIL_ERR_UNSUPPORTED;
}

util_status_t btl_stub_ep(btl_ep_t *ep)
{
    return UTIL_ERR_UNSUPPORTED;
}

/* ---- context ---- */
static unsigned btl_ctx_serial; /* contexts are created collectively, so it matches on every rank */

util_status_t btl_iface_key(const btl_iface_t *iface, const char *suffix, char *buf, size_t bufsize)
{
    int n = snprintf(buf, bufsize, "%s.%s", iface->key, suffix);

    if (n < 0 || (size_t)n >= bufsize) {
        util_error("btl: bootstrap key %s.%s too long", iface->key, suffix);
        return UTIL_ERR_OVERFLOW;
    }
    return UTIL_OK;
}

void btl_iface_base_init(btl_iface_t *iface, const btl_component_t *comp, btl_ctx_t *ctx, int index,
                         unsigned caps)
{
    iface->component = comp;
    iface->ctx = ctx;
    iface->index = index;
    iface->caps = caps;
    snprintf(iface->key, sizeof(iface->key), "btl%u.%s", ctx->serial, comp->name);
}

static util_status_t btl_ctx_open_iface(btl_ctx_t *ctx, const btl_component_t *comp)
{
    btl_iface_t *iface;
    int index = ctx->num_ifaces;
    util_status_t status;

    if (index >= BTL_MAX_IFACES) {
        util_error("btl: more than %d backends in one context", BTL_MAX_IFACES);
        return UTIL_ERR_OVERFLOW;
    }
    status = comp->iface_open(ctx, index, &iface);
    if (status != UTIL_OK) {
        return status;
    }
    ctx->ifaces[ctx->num_ifaces++] = iface;
    return UTIL_OK;
}

static void btl_ctx_free(btl_ctx_t *ctx)
{
    free(ctx->net_eps);
    free(ctx->eps);
    free(ctx->iface_of);
    free(ctx);
}

#if RMB_HAVE_BTL_VERBS && RMB_BTL_VERBS_LINKED
static const char btl_verbs_hint[] = "; verbs needs an RDMA device with an active port and "
                                     "this machine has none (see ibv_devinfo)";
#else
static const char btl_verbs_hint[] = "; verbs: libibverbs-dev was missing at configure";
#endif

/* RMB_BTL_NET: the network backend auto uses off-node (NULL: the first
 * built one). */
static util_status_t btl_ctx_net_choice(const btl_component_t **net_p)
{
    const char *name;
    const btl_component_t *comp;
    util_status_t status = util_env_get_string("RMB_BTL_NET", &name);

    *net_p = NULL;
    if (status != UTIL_OK || strcmp(name, "auto") == 0 || name[0] == '\0') {
        return status;
    }
    comp = btl_component_find(name);
    if (comp == NULL || comp->on_node_only) {
        util_error("RMB_BTL_NET=\"%s\": not a network backend of this build (ucx, ofi, verbs, "
                   "mpi when built and usable; or auto)%s",
                   name, strcmp(name, "verbs") == 0 ? btl_verbs_hint : "");
        return comp == NULL ? UTIL_ERR_UNSUPPORTED : UTIL_ERR_INVALID;
    }
    *net_p = comp;
    return UTIL_OK;
}

static util_status_t btl_ctx_choose(btl_ctx_t *ctx, const char *choice)
{
    const btl_component_t *comp, *net;
    int my_node = bootstrap_node_id();
    int multi_node = bootstrap_num_nodes() > 1;
    int local_iface = -1, net_iface = -1;
    util_status_t status;

    if (strcmp(choice, "auto") != 0) {
        comp = btl_component_find(choice);
        if (comp == NULL) {
            util_error("RMB_BTL=\"%s\": no such backend in this build (%d built; try auto)%s",
                       choice, btl_component_count(),
                       strcmp(choice, "mpi") == 0     ? "; mpi needs MPI running: an MPI program, "
                                                        "or RMB_BOOTSTRAP=mpi under mpirun"
                       : strcmp(choice, "verbs") == 0 ? btl_verbs_hint
                       : strcmp(choice, "ucx") == 0   ? "; ucx: libucx-dev was missing at configure"
                                                      : "");
            return UTIL_ERR_UNSUPPORTED;
        }
        if (comp->on_node_only && multi_node) {
            util_error("RMB_BTL=%s cannot reach peers on other nodes (%d nodes)", choice,
                       bootstrap_num_nodes());
            return UTIL_ERR_UNREACHABLE;
        }
        status = btl_ctx_open_iface(ctx, comp);
        if (status != UTIL_OK) {
            return status;
        }
        for (int peer = 0; peer < ctx->size; peer++) {
            ctx->iface_of[peer] = 0;
        }
        return UTIL_OK;
    }

    /* auto: the first on-node backend for my node; when the job spans
     * nodes, the network backend RMB_BTL_NET names, else the first one in
     * registry order. Every rank takes the same decisions. */
    status = btl_ctx_net_choice(&net);
    if (status != UTIL_OK) {
        return status;
    }
    for (int i = 0; (comp = btl_component_at(i)) != NULL; i++) {
        if (comp->on_node_only && local_iface < 0) {
            status = btl_ctx_open_iface(ctx, comp);
            if (status != UTIL_OK) {
                return status;
            }
            local_iface = ctx->num_ifaces - 1;
        } else if (!comp->on_node_only && multi_node && net_iface < 0 &&
                   (net == NULL || net == comp)) {
            status = btl_ctx_open_iface(ctx, comp);
            if (status != UTIL_OK) {
                return status;
            }
            net_iface = ctx->num_ifaces - 1;
        }
    }
    for (int peer = 0; peer < ctx->size; peer++) {
        int on_node = bootstrap_node_of(peer) == my_node;
        ctx->iface_of[peer] = (on_node && local_iface >= 0) ? local_iface : net_iface;
    }
    return UTIL_OK;
}

util_status_t btl_ctx_create(const char *force, btl_ctx_t **ctx_p)
{
    btl_ctx_t *ctx;
    const char *choice = force;
    util_status_t status;

    status = bootstrap_init();
    if (status != UTIL_OK) {
        return status;
    }
    if (choice == NULL) {
        status = util_env_get_string("RMB_BTL", &choice);
        if (status != UTIL_OK) {
            goto err_bootstrap;
        }
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        status = UTIL_ERR_NO_MEMORY;
        goto err_bootstrap;
    }
    ctx->rank = bootstrap_rank();
    ctx->size = bootstrap_size();
    ctx->serial = btl_ctx_serial++;
    ctx->iface_of = malloc(sizeof(int) * (size_t)ctx->size);
    ctx->eps = calloc((size_t)ctx->size, sizeof(btl_ep_t *));
    ctx->net_eps = calloc((size_t)ctx->size, sizeof(btl_ep_t *));
    if (ctx->iface_of == NULL || ctx->eps == NULL || ctx->net_eps == NULL) {
        status = UTIL_ERR_NO_MEMORY;
        goto err_free;
    }
    status = btl_ctx_choose(ctx, choice);
    if (status != UTIL_OK) {
        goto err_close;
    }
    /* One publication round for every iface's address. */
    status = bootstrap_commit();
    if (status != UTIL_OK) {
        goto err_close;
    }
    status = bootstrap_fence();
    if (status != UTIL_OK) {
        goto err_close;
    }
    util_debug("btl: context %u with %d backend(s), first %s", ctx->serial, ctx->num_ifaces,
               ctx->num_ifaces > 0 ? ctx->ifaces[0]->component->name : "none");
    *ctx_p = ctx;
    return UTIL_OK;

err_close:
    while (ctx->num_ifaces > 0) {
        btl_iface_t *iface = ctx->ifaces[--ctx->num_ifaces];
        iface->ops.iface_close(iface);
    }
err_free:
    btl_ctx_free(ctx);
err_bootstrap:
    bootstrap_finalize();
    return status;
}

util_status_t btl_ctx_destroy(btl_ctx_t *ctx)
{
    util_status_t status, first = UTIL_OK;

    /* Nobody may still be reaching into memory we are about to unmap. */
    status = btl_ctx_quiet(ctx);
    if (status != UTIL_OK) {
        first = status;
    }
    status = bootstrap_barrier();
    if (status != UTIL_OK && first == UTIL_OK) {
        first = status;
    }
    for (int peer = 0; peer < ctx->size; peer++) {
        btl_ep_t *eps[2] = {ctx->eps[peer], ctx->net_eps[peer]};
        for (int k = 0; k < 2; k++) {
            if (eps[k] != NULL && (k == 0 || eps[k] != eps[0])) {
                status = eps[k]->iface->ops.ep_disconnect(eps[k]);
                if (status != UTIL_OK && first == UTIL_OK) {
                    first = status;
                }
            }
        }
    }
    while (ctx->num_ifaces > 0) {
        btl_iface_t *iface = ctx->ifaces[--ctx->num_ifaces];
        status = iface->ops.iface_close(iface);
        if (status != UTIL_OK && first == UTIL_OK) {
            first = status;
        }
    }
    btl_ctx_free(ctx);
    status = bootstrap_finalize();
    if (status != UTIL_OK && first == UTIL_OK) {
        first = status;
    }
    return first;
}

util_status_t btl_ctx_connect(btl_ctx_t *ctx, int peer, btl_ep_t **ep_p)
{
    btl_iface_t *iface;
    btl_ep_t *ep;
    util_status_t status;

    if (peer < 0 || peer >= ctx->size) {
        util_error("btl: peer %d out of range (job has %d)", peer, ctx->size);
        return UTIL_ERR_INVALID;
    }
    if (ctx->eps[peer] != NULL) {
        *ep_p = ctx->eps[peer];
        return UTIL_OK;
    }
    if (ctx->iface_of[peer] < 0) {
        util_error("btl: no backend reaches peer %d (node %d; set RMB_BTL or build btl/ofi)", peer,
                   bootstrap_node_of(peer));
        return UTIL_ERR_UNREACHABLE;
    }
    iface = ctx->ifaces[ctx->iface_of[peer]];
    status = iface->ops.ep_connect(iface, peer, &ep);
    if (status != UTIL_OK) {
        return status;
    }
    ep->iface = iface;
    ep->peer = peer;
    ctx->eps[peer] = ep;
    *ep_p = ep;
    return UTIL_OK;
}

btl_iface_t *btl_ctx_net_iface(const btl_ctx_t *ctx)
{
    for (int i = 0; i < ctx->num_ifaces; i++) {
        if (!ctx->ifaces[i]->component->on_node_only) {
            return ctx->ifaces[i];
        }
    }
    return NULL;
}

util_status_t btl_ctx_net_ep(btl_ctx_t *ctx, int peer, btl_ep_t **ep_p)
{
    btl_iface_t *iface = btl_ctx_net_iface(ctx);
    btl_ep_t *ep;
    util_status_t status;

    if (peer < 0 || peer >= ctx->size) {
        return UTIL_ERR_INVALID;
    }
    if (ctx->net_eps[peer] != NULL) {
        *ep_p = ctx->net_eps[peer];
        return UTIL_OK;
    }
    if (iface == NULL) {
        return UTIL_ERR_UNSUPPORTED;
    }
    if (ctx->eps[peer] != NULL && ctx->eps[peer]->iface == iface) {
        ep = ctx->eps[peer]; /* the peer's own endpoint is already the network one */
    } else {
        status = iface->ops.ep_connect(iface, peer, &ep);
        if (status != UTIL_OK) {
            return status;
        }
        ep->iface = iface;
        ep->peer = peer;
    }
    ctx->net_eps[peer] = ep;
    *ep_p = ep;
    return UTIL_OK;
}

int btl_ctx_num_ifaces(const btl_ctx_t *ctx)
{
    return ctx->num_ifaces;
}

btl_iface_t *btl_ctx_iface(const btl_ctx_t *ctx, int i)
{
    return (i >= 0 && i < ctx->num_ifaces) ? ctx->ifaces[i] : NULL;
}

const char *btl_ctx_backend_of(btl_ctx_t *ctx, int peer)
{
    if (peer < 0 || peer >= ctx->size || ctx->iface_of[peer] < 0) {
        return NULL;
    }
    return ctx->ifaces[ctx->iface_of[peer]]->component->name;
}

unsigned btl_ctx_peer_caps(const btl_ctx_t *ctx, int peer)
{
    if (peer < 0 || peer >= ctx->size || ctx->iface_of[peer] < 0) {
        return 0;
    }
    return ctx->ifaces[ctx->iface_of[peer]]->caps;
}

util_status_t btl_ctx_fence(btl_ctx_t *ctx)
{
    for (int i = 0; i < ctx->num_ifaces; i++) {
        btl_iface_t *iface = ctx->ifaces[i];
        util_status_t status = UTIL_OK;

        if (iface->ops.fence_all != NULL) {
            status = iface->ops.fence_all(iface);
        }
        for (int p = 0; iface->ops.fence_all == NULL && p < ctx->size && status == UTIL_OK; p++) {
            btl_ep_t *ep = ctx->eps[p], *net = ctx->net_eps[p];

            if (ep != NULL && ep->iface == iface) {
                status = btl_fence(ep);
            }
            if (status == UTIL_OK && net != NULL && net != ep && net->iface == iface) {
                status = btl_fence(net);
            }
        }
        if (status != UTIL_OK) {
            return status;
        }
    }
    return UTIL_OK;
}

util_status_t btl_ctx_quiet(btl_ctx_t *ctx)
{
    for (int i = 0; i < ctx->num_ifaces; i++) {
        util_status_t status = btl_quiet(ctx->ifaces[i]);
        if (status != UTIL_OK) {
            return status;
        }
    }
    return UTIL_OK;
}

util_status_t btl_ctx_progress(btl_ctx_t *ctx)
{
    for (int i = 0; i < ctx->num_ifaces; i++) {
        util_status_t status = btl_progress(ctx->ifaces[i]);
        if (status < 0) {
            return status;
        }
    }
    return UTIL_OK;
}

util_status_t btl_ctx_comp_wait(btl_ctx_t *ctx, btl_comp_t *comp)
{
    util_status_t status;

    while ((status = btl_comp_test(comp)) == UTIL_IN_PROGRESS) {
        status = btl_ctx_progress(ctx);
        if (status < 0) {
            return status;
        }
    }
    return status;
}

/* ---- memory ---- */
static util_status_t btl_mem_reg_others(btl_mem_t *mem)
{
    btl_ctx_t *ctx = mem->ctx;

    for (int i = 0; i < ctx->num_ifaces; i++) {
        btl_iface_t *iface = ctx->ifaces[i];
        util_status_t status;

        if (mem->mr[i] != NULL) {
            continue;
        }
        status = iface->ops.mem_reg(iface, mem->addr, mem->size, &mem->mr[i]);
        if (status != UTIL_OK) {
            return status;
        }
    }
    return UTIL_OK;
}

static void btl_mem_release(btl_mem_t *mem)
{
    for (int i = mem->ctx->num_ifaces - 1; i >= 0; i--) {
        if (mem->mr[i] != NULL) {
            mem->ctx->ifaces[i]->ops.mem_dereg(mem->mr[i]);
        }
    }
    if (mem->heap != NULL) {
        munmap(mem->heap, mem->heap_size);
    }
    free(mem);
}

util_status_t btl_mem_alloc(btl_ctx_t *ctx, size_t size, btl_mem_t **mem_p)
{
    btl_mem_t *mem;
    util_status_t status;

    if (size == 0) {
        return UTIL_ERR_INVALID;
    }
    mem = calloc(1, sizeof(*mem));
    if (mem == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    mem->ctx = ctx;
    mem->size = size;
    mem->owner_iface = -1;
    /* The first iface able to hand out shareable memory allocates it. */
    for (int i = 0; i < ctx->num_ifaces && mem->owner_iface < 0; i++) {
        btl_iface_t *iface = ctx->ifaces[i];
        status = iface->ops.mem_alloc(iface, size, &mem->addr, &mem->mr[i]);
        if (status == UTIL_OK) {
            mem->owner_iface = i;
        } else if (status != UTIL_ERR_UNSUPPORTED) {
            goto err_free;
        }
    }
    if (mem->owner_iface < 0) {
        mem->heap = btl_map_aligned(size, -1); /* zero-filled, committed when touched */
        if (mem->heap == NULL) {
            status = UTIL_ERR_NO_MEMORY;
            goto err_free;
        }
        mem->heap_size = size;
        mem->addr = mem->heap;
    }
    status = btl_mem_reg_others(mem);
    if (status != UTIL_OK) {
        goto err_free;
    }
    *mem_p = mem;
    return UTIL_OK;

err_free:
    btl_mem_release(mem);
    return status;
}

/* Registers caller memory with every iface; with remap, the first iface
 * that can remap it (shm) does so first and the others register the result. */
static util_status_t btl_mem_wrap(btl_ctx_t *ctx, void *addr, size_t size, int remap,
                                  btl_mem_t **mem_p)
{
    btl_mem_t *mem;
    util_status_t status;

    if (addr == NULL || size == 0) {
        return UTIL_ERR_INVALID;
    }
    mem = calloc(1, sizeof(*mem));
    if (mem == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    mem->ctx = ctx;
    mem->addr = addr;
    mem->size = size;
    mem->owner_iface = -1;
    for (int i = 0; remap && i < ctx->num_ifaces && mem->owner_iface < 0; i++) {
        btl_iface_t *iface = ctx->ifaces[i];
        status = iface->ops.mem_remap(iface, addr, size, &mem->mr[i]);
        if (status == UTIL_OK) {
            mem->owner_iface = i;
        } else if (status != UTIL_ERR_UNSUPPORTED) {
            btl_mem_release(mem);
            return status;
        }
    }
    status = btl_mem_reg_others(mem);
    if (status != UTIL_OK) {
        btl_mem_release(mem);
        return status;
    }
    *mem_p = mem;
    return UTIL_OK;
}

util_status_t btl_mem_reg(btl_ctx_t *ctx, void *addr, size_t size, btl_mem_t **mem_p)
{
    return btl_mem_wrap(ctx, addr, size, 0, mem_p);
}

util_status_t btl_mem_remap(btl_ctx_t *ctx, void *addr, size_t size, btl_mem_t **mem_p)
{
    return btl_mem_wrap(ctx, addr, size, 1, mem_p);
}

util_status_t btl_mem_free(btl_mem_t *mem)
{
    if (mem != NULL) {
        btl_mem_release(mem);
    }
    return UTIL_OK;
}

/* Packed format: u8 count, then per iface: u8 name length, name, u16 key
 * length (native order: peers run the same build), key bytes. */
util_status_t btl_mem_pack(const btl_mem_t *mem, void *buf, size_t bufsize, size_t *size_p)
{
    uint8_t *out = buf;
    size_t pos = 1;
    btl_ctx_t *ctx = mem->ctx;

    if (bufsize < 1) {
        return UTIL_ERR_TRUNCATED;
    }
    out[0] = (uint8_t)ctx->num_ifaces;
    for (int i = 0; i < ctx->num_ifaces; i++) {
        btl_iface_t *iface = ctx->ifaces[i];
        size_t name_len = strlen(iface->component->name);
        size_t key_len;
        uint16_t key_len16;
        util_status_t status;

        if (pos + 1 + name_len + 2 > bufsize) {
            return UTIL_ERR_TRUNCATED;
        }
        out[pos++] = (uint8_t)name_len;
        memcpy(out + pos, iface->component->name, name_len);
        pos += name_len;
        status = iface->ops.rkey_pack(mem->mr[i], out + pos + 2, bufsize - pos - 2, &key_len);
        if (status != UTIL_OK) {
            return status;
        }
        key_len16 = (uint16_t)key_len;
        memcpy(out + pos, &key_len16, 2);
        pos += 2 + key_len;
    }
    *size_p = pos;
    return UTIL_OK;
}

util_status_t btl_rkey_unpack(btl_ep_t *ep, const void *buf, size_t size, btl_rkey_t **rkey_p)
{
    const uint8_t *in = buf;
    const char *want = ep->iface->component->name;
    size_t want_len = strlen(want);
    size_t pos = 1;
    btl_rkey_t *rkey;
    util_status_t status;

    if (size < 1) {
        return UTIL_ERR_INVALID;
    }
    for (unsigned n = 0; n < in[0]; n++) {
        size_t name_len;
        uint16_t key_len;

        if (pos + 1 > size || pos + 1 + in[pos] + 2 > size) {
            return UTIL_ERR_INVALID;
        }
        name_len = in[pos++];
        memcpy(&key_len, in + pos + name_len, 2);
        if (pos + name_len + 2 + key_len > size) {
            return UTIL_ERR_INVALID;
        }
        if (name_len == want_len && memcmp(in + pos, want, name_len) == 0) {
            status = ep->iface->ops.rkey_unpack(ep, in + pos + name_len + 2, key_len, &rkey);
            if (status != UTIL_OK) {
                return status;
            }
            rkey->ep = ep;
            *rkey_p = rkey;
            return UTIL_OK;
        }
        pos += name_len + 2 + key_len;
    }
    util_error("btl: packed key from peer %d has no %s part", ep->peer, want);
    return UTIL_ERR_NOT_FOUND;
}

util_status_t btl_rkey_release(btl_rkey_t *rkey)
{
    if (rkey == NULL) {
        return UTIL_OK;
    }
    return rkey->ep->iface->ops.rkey_release(rkey);
}
