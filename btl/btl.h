/*
 * btl: the byte-transfer layer. One interface (btl_ops_t) that every backend
 * fills: shm (on-node shared memory), ofi (libfabric), later verbs and MPI-3
 * RMA. Upper layers (rmalloc, rpipe) see only this header and btl_inl.h;
 * nothing above btl/ includes a backend header.
 *
 * Objects, lowest to highest:
 *   btl_component_t  a backend in the static registry (btl.c); opens ifaces.
 *   btl_iface_t      one backend instance inside a context; embeds its ops
 *                    table by value, so a call costs ep->iface->ops.X: two
 *                    loads and one indirect call.
 *   btl_ep_t         a connection to one peer through one iface; created
 *                    lazily on first use (btl_ctx_ep).
 *   btl_ctx_t        the per-job set of ifaces plus one ep slot per peer;
 *                    picks per peer: shm when the peer shares my node,
 *                    the network backend otherwise. RMB_BTL=auto|shm|ofi|...
 *                    forces one backend for every peer.
 *   btl_mem_t        memory registered with every iface of a context; its
 *                    packed remote key (btl_mem_pack) is opaque bytes the
 *                    owner hands to peers (through rmalloc, bootstrap, ...).
 *   btl_rkey_t       a peer's packed key unpacked for one ep. When the
 *                    peer's memory is load/store reachable (shm segments)
 *                    it carries a pointer delta, so a remote address turns
 *                    into a local pointer with one add (btl_rkey_ptr).
 *
 * Remote addresses are the owner's virtual addresses (uint64_t); backends
 * whose network wants offsets (FI_MR_VIRT_ADDR unset, MPI windows) subtract
 * the base recorded in their rkey.
 *
 * Completion: a data call with comp == NULL returns after local completion
 * (the source may be reused, or the fetched data is in place). With a
 * btl_comp_t it may return UTIL_IN_PROGRESS; the backend then counts the
 * operation in comp and marks it done from progress. Remote completion of
 * everything outstanding is btl_quiet / btl_ctx_quiet; btl_fence orders
 * earlier operations to one peer before later ones.
 *
 * Errors are util_status_t codes (util_status_string gives the text); the
 * btl never exits. A backend without an operation points its slot at a
 * shared btl_stub_* returning UTIL_ERR_UNSUPPORTED, never at NULL.
 *
 * Threading: one thread at a time per context (upper layers serialize).
 */
#ifndef BTL_H
#define BTL_H

#include "util/status.h"

#include <stddef.h>
#include <stdint.h>

#define BTL_MAX_IFACES      4   /* ifaces per context (shm + one network) */
#define BTL_RKEY_PACKED_MAX 256 /* bytes a packed key of a btl_mem_t may take */
#define BTL_PUT_REC_MAX     64  /* bytes of put_flag_rec's record */
#define BTL_NAME_MAX        16

/* Capability bits of an iface (btl_iface_caps). */
enum {
    BTL_CAP_LOAD_STORE = 1u << 0, /* peer memory from btl_mem_alloc is mapped: btl_rkey_ptr works */
    BTL_CAP_MEM_ALLOC = 1u << 1,  /* mem_alloc hands out memory peers can map */
    BTL_CAP_ANY_MEMORY = 1u << 2, /* any registered range (stack, static, heap) is reachable */
    BTL_CAP_AMO32 = 1u << 3,      /* 32-bit atomics are native (not emulated by the caller) */
    BTL_CAP_AMO64 = 1u << 4,
    BTL_CAP_FLAG_ORDERED =
        1u << 5,                   /* put_flag ordering is native (no wait for completion inside) */
    BTL_CAP_NONBLOCKING = 1u << 6, /* operations may really return UTIL_IN_PROGRESS */
    /* Network atomics are applied by the target's CPU with atomic
     * instructions (software providers), so they stay atomic together with
     * CPU atomics that on-node peers do on the same word. Without it (NIC
     * atomics), a word must be updated only through the network. */
    BTL_CAP_AMO_CPU = 1u << 7,
    /* Peers' operations land only while this PE calls the btl: the wire
     * needs the target's progress and no progress thread runs (turned off,
     * or the transport library cannot take a second thread). */
    BTL_CAP_PE_PROGRESS = 1u << 8
};

/* Atomic operations. Fetching calls return the old value. */
typedef enum {
    BTL_AMO_FETCH, /* fetch only (operand ignored) */
    BTL_AMO_SET,   /* store operand; fetching form is swap */
    BTL_AMO_SWAP,  /* fetching only: store operand, return old */
    BTL_AMO_CSWAP, /* fetching only: store operand if old == compare */
    BTL_AMO_ADD,
    BTL_AMO_AND,
    BTL_AMO_OR,
    BTL_AMO_XOR,
    BTL_AMO_LAST
} btl_amo_op_t;

typedef struct btl_ctx btl_ctx_t;
typedef struct btl_iface btl_iface_t;
typedef struct btl_ep btl_ep_t;
typedef struct btl_mr btl_mr_t;
typedef struct btl_mem btl_mem_t;
typedef struct btl_rkey btl_rkey_t;
typedef struct btl_component btl_component_t;

/* Completion counter for non-blocking operations. Backends add one to
 * posted for each operation that returned UTIL_IN_PROGRESS and one to
 * completed when it finished; the first error is kept in status. */
typedef struct btl_comp {
    uint64_t posted;
    uint64_t completed;
    util_status_t status;
} btl_comp_t;

/* put_flag's comp for a signal that only its receiver waits for (barrier and
 * collective flags into internal slots): the backend need not complete it
 * at quiet. Otherwise as NULL (complete locally on return). */
extern btl_comp_t btl_comp_signal;

/* The ops table: one per backend, filled with designated initializers. */
typedef struct btl_ops {
    /* Releases the iface and everything it owns (eps, mrs still open). */
    util_status_t (*iface_close)(btl_iface_t *iface);
    /* Lazy connect: reads peer's address (published by the component's
     * iface_open through the bootstrap) and makes an ep. */
    util_status_t (*ep_connect)(btl_iface_t *iface, int peer, btl_ep_t **ep_p);
    util_status_t (*ep_disconnect)(btl_ep_t *ep);

    /* Memory. mem_alloc hands out memory that peers can reach fast (shm:
     * a mapped segment); mem_reg registers memory someone else allocated.
     * mem_dereg undoes either (and frees what mem_alloc allocated). */
    util_status_t (*mem_alloc)(btl_iface_t *iface, size_t size, void **addr_p, btl_mr_t **mr_p);
    util_status_t (*mem_reg)(btl_iface_t *iface, void *addr, size_t size, btl_mr_t **mr_p);
    /* Makes caller memory (page-aligned range) reachable like mem_alloc'd
     * memory, keeping its contents (shm: remapped onto a segment); undone
     * by mem_dereg, which keeps the contents too. */
    util_status_t (*mem_remap)(btl_iface_t *iface, void *addr, size_t size, btl_mr_t **mr_p);
    util_status_t (*mem_dereg)(btl_mr_t *mr);
    /* Packed key: opaque bytes, at most BTL_RKEY_PACKED_MAX - 8. */
    util_status_t (*rkey_pack)(btl_mr_t *mr, void *buf, size_t bufsize, size_t *size_p);
    util_status_t (*rkey_unpack)(btl_ep_t *ep, const void *buf, size_t size, btl_rkey_t **rkey_p);
    util_status_t (*rkey_release)(btl_rkey_t *rkey);

    /* Data. lmem (may be NULL) is the local buffer's registration, for
     * networks that need one (FI_MR_LOCAL, verbs lkey); backends that need
     * one and get NULL bounce or register on the fly. */
    util_status_t (*put)(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem, uint64_t raddr,
                         btl_rkey_t *rkey, btl_comp_t *comp);
    util_status_t (*get)(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem, uint64_t raddr,
                         btl_rkey_t *rkey, btl_comp_t *comp);
    /* Payload, then the 8-byte flag at flag_raddr set to flag_value; a peer
     * that sees the flag sees the whole payload. flag_raddr is 8-byte
     * aligned. Local completion as for put. */
    util_status_t (*put_flag)(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                              uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                              btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp);
    /* put_flag that also writes rec_len (at most BTL_PUT_REC_MAX) bytes,
     * copied from rec, at rec_raddr: in the same message where the backend
     * sends messages. rec lands before the flag or after it; operations
     * issued after a fence land after both. NULL, or UTIL_ERR_UNSUPPORTED
     * where it cannot be one message: btl_put_flag_rec does put_flag, then
     * put. */
    util_status_t (*put_flag_rec)(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                  uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                  btl_rkey_t *flag_rkey, uint64_t flag_value, const void *rec,
                                  size_t rec_len, uint64_t rec_raddr, btl_rkey_t *rec_rkey);
    /* Get-side counterpart: reads the payload, and only after it is in dst
     * writes flag_value to the peer's flag (e.g. "buffer consumed"). */
    util_status_t (*get_flag)(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem, uint64_t raddr,
                              btl_rkey_t *rkey, uint64_t flag_raddr, btl_rkey_t *flag_rkey,
                              uint64_t flag_value, btl_comp_t *comp);

    /* Atomics on naturally aligned 4- or 8-byte integers (size 4 or 8).
     * amo_post: non-fetching ADD/AND/OR/XOR/SET; the value is copied, so it
     * completes locally at once. amo_fetch: every op; returns the old value
     * (zero-extended for size 4) in *result_p after the operation. */
    util_status_t (*amo_post)(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                              btl_rkey_t *rkey, uint64_t operand);
    /* put (complete locally on return) and amo_post that the backend may
     * hold back and send with later ones to the same peer as one message
     * (batched): they leave by the next progress or quiet of the iface, the
     * next other operation to ep, or shortly after the caller stops calling
     * the btl. For operations whose peer learns of them only through a
     * later quiet or a signal to it (OpenSHMEM's puts and non-fetching
     * atomics), not for a write someone polls for. NULL: put, amo_post. */
    util_status_t (*put_batch)(btl_ep_t *ep, const void *src, size_t len, uint64_t raddr,
                               btl_rkey_t *rkey);
    util_status_t (*amo_post_batch)(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                    btl_rkey_t *rkey, uint64_t operand);
    util_status_t (*amo_fetch)(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                               btl_rkey_t *rkey, uint64_t operand, uint64_t compare,
                               uint64_t *result_p);
    /* amo_fetch whose old value (size bytes) may land in *result only by
     * the next quiet of the iface, so that fetches to several peers fly
     * together (OpenSHMEM's fetching _nbi atomics). Backends that fetch at
     * once use btl_amo_fetch_nbi_at_once. */
    util_status_t (*amo_fetch_nbi)(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                   btl_rkey_t *rkey, uint64_t operand, uint64_t compare,
                                   void *result);

    /* Ordering to one peer: operations to ep issued after fence are
     * performed after those issued before it. */
    util_status_t (*fence)(btl_ep_t *ep);
    /* fence to every peer of the iface at once (a worker-wide fence, a
     * memory fence). NULL: fence on each connected ep. */
    util_status_t (*fence_all)(btl_iface_t *iface);
    /* Remote completion of every operation issued on the iface. */
    util_status_t (*quiet)(btl_iface_t *iface);
    /* Drives completions; returns UTIL_OK when idle. */
    util_status_t (*progress)(btl_iface_t *iface);
} btl_ops_t;

/* One fact a backend's describe reports about this machine, e.g. what
 * "provider", value "tcp;ofi_rxm (fabric 127.0.0.0/8, domain lo)". */
typedef void (*btl_describe_func_t)(void *arg, const char *backend, const char *what,
                                    const char *value);

/* A backend in the registry. iface_open is collective over the job: it
 * creates the iface and publishes its address with bootstrap_put under keys
 * built by btl_iface_key(); the context commits and fences once for all.
 * describe says what the backend could use on this machine now (devices,
 * providers, transports), one report call per fact, without a job or a
 * bootstrap (for oshinfo); it returns 1 when the backend could run here. */
struct btl_component {
    const char *name; /* "shm", "ofi", ... (RMB_BTL values) */
    int on_node_only; /* reaches only peers on my node */
    util_status_t (*iface_open)(btl_ctx_t *ctx, int index, btl_iface_t **iface_p);
    int (*describe)(btl_describe_func_t report, void *arg);
};

/* A backend's struct from the base object embedded in it. */
#define btl_container_of(_ptr, _type, _member) ((_type *)((char *)(_ptr)-offsetof(_type, _member)))

/* Base objects. Backends embed these first and reach their own struct with
 * btl_container_of; fields are read by the inline dispatchers. */
struct btl_iface {
    btl_ops_t ops; /* by value: dispatch is two loads */
    const btl_component_t *component;
    btl_ctx_t *ctx;
    unsigned caps; /* BTL_CAP_* */
    int index;     /* slot in ctx and in btl_mem_t.mr[] */
    char key[32];  /* bootstrap key prefix, unique per ctx */
};

/* iface and peer are set by btl_ctx_connect after ops.ep_connect returns. */
struct btl_ep {
    btl_iface_t *iface;
    int peer;
};

struct btl_mr {
    btl_iface_t *iface;
    void *addr;
    size_t size;
};

/* ep is set by btl_rkey_unpack after ops.rkey_unpack returns; the backend
 * fills the rest (ls_valid = 0 unless the range is mapped here). */
struct btl_rkey {
    btl_ep_t *ep;
    uint64_t remote_base; /* owner's address of the registered range */
    uint64_t length;
    /* Load/store reachable: local pointer = remote address + ls_delta. */
    int ls_valid;
    intptr_t ls_delta;
};

/* Per-job context; fields are read by btl_ctx_ep (btl_inl.h). */
struct btl_ctx {
    int rank;
    int size;
    unsigned serial; /* n-th context of this process: key scope */
    int num_ifaces;
    btl_iface_t *ifaces[BTL_MAX_IFACES];
    int *iface_of;      /* per peer: index in ifaces[], -1 unreachable */
    btl_ep_t **eps;     /* per peer: NULL until first use */
    btl_ep_t **net_eps; /* per peer, through the network iface (btl_ctx_net_ep) */
};

/* Memory registered with every iface of a context. */
struct btl_mem {
    btl_ctx_t *ctx;
    void *addr;
    size_t size;
    int owner_iface; /* iface whose mem_alloc allocated it, -1 if registered */
    void *heap;      /* our fallback allocation, if any */
    size_t heap_size;
    btl_mr_t *mr[BTL_MAX_IFACES];
};

/* Maps size bytes (fd >= 0: that file, shared; -1: anonymous, private,
 * zero-filled) at an address aligned to the smallest power of two >= size,
 * at most 1 GiB. Memory allocated for peers is naturally aligned so that
 * the same offset in every rank's allocation has the same alignment (what
 * shmem_align needs of a symmetric heap). NULL on failure; munmap(addr,
 * size) releases it. */
void *btl_map_aligned(size_t size, int fd);

/* ---- shared stubs for slots a backend lacks (all return UNSUPPORTED) ---- */
util_status_t btl_stub_mem_alloc(btl_iface_t *iface, size_t size, void **addr_p, btl_mr_t **mr_p);
util_status_t btl_stub_mem_remap(btl_iface_t *iface, void *addr, size_t size, btl_mr_t **mr_p);
util_status_t btl_stub_put_flag(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp);
util_status_t btl_stub_get_flag(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp);
util_status_t btl_stub_amo_post(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                btl_rkey_t *rkey, uint64_t operand);
util_status_t btl_stub_amo_fetch(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                 btl_rkey_t *rkey, uint64_t operand, uint64_t compare,
                                 uint64_t *result_p);
util_status_t btl_stub_iface(btl_iface_t *iface); /* for fence-less quiet/progress */
/* amo_fetch_nbi through the iface's amo_fetch: done on return. */
util_status_t btl_amo_fetch_nbi_at_once(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                        uint64_t raddr, btl_rkey_t *rkey, uint64_t operand,
                                        uint64_t compare, void *result);
util_status_t btl_stub_ep(btl_ep_t *ep);

/* ---- registry ---- */
/* Backends built into this library, in preference order (shm first). */
int btl_component_count(void);
const btl_component_t *btl_component_at(int i);
const btl_component_t *btl_component_find(const char *name);
/* Every backend built into this library, usable now or not: its describe
 * facts, then ("usable", "yes"/"no"). */
void btl_describe(btl_describe_func_t report, void *arg);

/* ---- context (collective calls say so) ---- */
/* Collective. Calls bootstrap_init (counted), opens the ifaces chosen by
 * RMB_BTL (or by force, when not NULL: "shm", "ofi", "auto") and publishes
 * their addresses. UTIL_ERR_UNSUPPORTED when the forced backend is not
 * built; UTIL_ERR_UNREACHABLE when it cannot reach every peer (shm forced
 * on a multi-node job). */
util_status_t btl_ctx_create(const char *force, btl_ctx_t **ctx_p);
/* Collective. Barrier, then disconnects, closes, bootstrap_finalize. */
util_status_t btl_ctx_destroy(btl_ctx_t *ctx);
/* Connects to peer on first use (slow path of btl_ctx_ep in btl_inl.h). */
util_status_t btl_ctx_connect(btl_ctx_t *ctx, int peer, btl_ep_t **ep_p);
/* The context's network iface (the first one not limited to on-node
 * peers), or NULL. */
btl_iface_t *btl_ctx_net_iface(const btl_ctx_t *ctx);
/* An endpoint to any peer, myself included, through the network iface
 * even where another iface serves the peer: for atomics that must all go
 * through one agent (BTL_CAP_AMO_CPU absent). UTIL_ERR_UNSUPPORTED when
 * the context has no network iface. */
util_status_t btl_ctx_net_ep(btl_ctx_t *ctx, int peer, btl_ep_t **ep_p);
int btl_ctx_num_ifaces(const btl_ctx_t *ctx);
btl_iface_t *btl_ctx_iface(const btl_ctx_t *ctx, int i);
/* Backend serving peer ("shm", "ofi"); NULL if none. */
const char *btl_ctx_backend_of(btl_ctx_t *ctx, int peer);
/* BTL_CAP_* of the iface serving peer, known before any connection; 0 if
 * none serves it. */
unsigned btl_ctx_peer_caps(const btl_ctx_t *ctx, int peer);
/* Ordering on every iface: operations to any peer issued after it are
 * performed at that peer after those issued before it (OpenSHMEM's fence),
 * without waiting for their completion where the backend can. */
util_status_t btl_ctx_fence(btl_ctx_t *ctx);
/* Quiet / progress on every iface. */
util_status_t btl_ctx_quiet(btl_ctx_t *ctx);
util_status_t btl_ctx_progress(btl_ctx_t *ctx);
/* Waits (with progress) until comp has no outstanding operation; returns
 * its status. */
util_status_t btl_ctx_comp_wait(btl_ctx_t *ctx, btl_comp_t *comp);

/* Backends call this first in iface_open: fills the base fields, among
 * them the bootstrap key prefix "btl<ctx serial>.<name>". */
void btl_iface_base_init(btl_iface_t *iface, const btl_component_t *comp, btl_ctx_t *ctx, int index,
                         unsigned caps);
/* Bootstrap key "<iface key>.<suffix>" for an iface's published values. */
util_status_t btl_iface_key(const btl_iface_t *iface, const char *suffix, char *buf,
                            size_t bufsize);

/* ---- memory ---- */
/* Allocates size bytes that every iface can reach fast (shm segment when
 * shm is in the context, page-aligned heap otherwise) and registers them. */
util_status_t btl_mem_alloc(btl_ctx_t *ctx, size_t size, btl_mem_t **mem_p);
/* Registers caller memory (heap, stack, static data) with every iface. */
util_status_t btl_mem_reg(btl_ctx_t *ctx, void *addr, size_t size, btl_mem_t **mem_p);
/* Like btl_mem_reg for a page-aligned range, but first lets an iface that
 * can (shm) remap it so that peers reach it as fast as btl_mem_alloc
 * memory; the contents are kept, and kept again by btl_mem_free. For a
 * program's static data, at initialization. */
util_status_t btl_mem_remap(btl_ctx_t *ctx, void *addr, size_t size, btl_mem_t **mem_p);
/* Deregisters, and frees what btl_mem_alloc allocated. */
util_status_t btl_mem_free(btl_mem_t *mem);
static inline void *btl_mem_addr(const btl_mem_t *mem)
{
    return mem->addr;
}
/* Packs the keys of every iface: at most BTL_RKEY_PACKED_MAX bytes. */
util_status_t btl_mem_pack(const btl_mem_t *mem, void *buf, size_t bufsize, size_t *size_p);
/* Unpacks the part of a peer's packed key that ep's iface understands. */
util_status_t btl_rkey_unpack(btl_ep_t *ep, const void *buf, size_t size, btl_rkey_t **rkey_p);
util_status_t btl_rkey_release(btl_rkey_t *rkey);

/* ---- completion counters ---- */
static inline void btl_comp_init(btl_comp_t *comp)
{
    comp->posted = 0;
    comp->completed = 0;
    comp->status = UTIL_OK;
}

/* UTIL_OK when done, UTIL_IN_PROGRESS, or the first error. */
static inline util_status_t btl_comp_test(const btl_comp_t *comp)
{
    if (comp->status != UTIL_OK) return comp->status;
    return (__atomic_load_n(&comp->completed, __ATOMIC_ACQUIRE) == comp->posted) ? UTIL_OK
                                                                                 : UTIL_IN_PROGRESS;
}

/* ---- dispatchers: one line each ---- */
static inline unsigned btl_iface_caps(const btl_iface_t *iface)
{
    return iface->caps;
}
static inline unsigned btl_ep_caps(const btl_ep_t *ep)
{
    return ep->iface->caps;
}
static inline const char *btl_ep_backend(const btl_ep_t *ep)
{
    return ep->iface->component->name;
}

/* Direct pointer to a peer's remote address when its memory is load/store
 * reachable through this rkey; UTIL_ERR_UNSUPPORTED otherwise. */
static inline util_status_t btl_rkey_ptr(const btl_rkey_t *rkey, uint64_t raddr, void **ptr_p)
{
    if (!rkey->ls_valid) return UTIL_ERR_UNSUPPORTED;
    *ptr_p = (void *)(uintptr_t)(raddr + (uint64_t)rkey->ls_delta);
    return UTIL_OK;
}

/* Blocking to local completion. */
static inline util_status_t btl_put(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                    uint64_t raddr, btl_rkey_t *rkey)
{
    return ep->iface->ops.put(ep, src, len, lmem, raddr, rkey, NULL);
}

static inline util_status_t btl_get(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                    uint64_t raddr, btl_rkey_t *rkey)
{
    return ep->iface->ops.get(ep, dst, len, lmem, raddr, rkey, NULL);
}

/* Non-blocking: UTIL_OK (done), UTIL_IN_PROGRESS (counted in comp) or an error. */
static inline util_status_t btl_put_nb(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                       uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    return ep->iface->ops.put(ep, src, len, lmem, raddr, rkey, comp);
}

static inline util_status_t btl_get_nb(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                       uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    return ep->iface->ops.get(ep, dst, len, lmem, raddr, rkey, comp);
}

/* Notified flag: payload, then flag (see btl_ops_t.put_flag). comp as above. */
static inline util_status_t btl_put_flag(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                         uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                         btl_rkey_t *flag_rkey, uint64_t flag_value,
                                         btl_comp_t *comp)
{
    return ep->iface->ops.put_flag(ep, src, len, lmem, raddr, rkey, flag_raddr, flag_rkey,
                                   flag_value, comp);
}

/* put_flag with a small record for another place (see btl_ops_t.put_flag_rec),
 * or without one (rec_len 0); complete locally on return. */
static inline util_status_t btl_put_flag_rec(btl_ep_t *ep, const void *src, size_t len,
                                             btl_mem_t *lmem, uint64_t raddr, btl_rkey_t *rkey,
                                             uint64_t flag_raddr, btl_rkey_t *flag_rkey,
                                             uint64_t flag_value, const void *rec, size_t rec_len,
                                             uint64_t rec_raddr, btl_rkey_t *rec_rkey)
{
    util_status_t status = UTIL_ERR_UNSUPPORTED;

    if (rec_len != 0 && ep->iface->ops.put_flag_rec != NULL) {
        status = ep->iface->ops.put_flag_rec(ep, src, len, lmem, raddr, rkey, flag_raddr, flag_rkey,
                                             flag_value, rec, rec_len, rec_raddr, rec_rkey);
    }
    if (status != UTIL_ERR_UNSUPPORTED) {
        return status;
    }
    status = btl_put_flag(ep, src, len, lmem, raddr, rkey, flag_raddr, flag_rkey, flag_value, NULL);
    return status == UTIL_OK && rec_len != 0 ? btl_put(ep, rec, rec_len, NULL, rec_raddr, rec_rkey)
                                             : status;
}

static inline util_status_t btl_get_flag(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                         uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                         btl_rkey_t *flag_rkey, uint64_t flag_value,
                                         btl_comp_t *comp)
{
    return ep->iface->ops.get_flag(ep, dst, len, lmem, raddr, rkey, flag_raddr, flag_rkey,
                                   flag_value, comp);
}

/* Atomics: size is 4 or 8. Non-fetching: ADD, AND, OR, XOR, SET. */
static inline util_status_t btl_amo_post(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                         uint64_t raddr, btl_rkey_t *rkey, uint64_t operand)
{
    return ep->iface->ops.amo_post(ep, op, size, raddr, rkey, operand);
}

/* Batched put and amo_post (see btl_ops_t.put_batch). */
static inline util_status_t btl_put_batch(btl_ep_t *ep, const void *src, size_t len, uint64_t raddr,
                                          btl_rkey_t *rkey)
{
    if (ep->iface->ops.put_batch != NULL) {
        return ep->iface->ops.put_batch(ep, src, len, raddr, rkey);
    }
    return ep->iface->ops.put(ep, src, len, NULL, raddr, rkey, NULL);
}

static inline util_status_t btl_amo_post_batch(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                               uint64_t raddr, btl_rkey_t *rkey, uint64_t operand)
{
    if (ep->iface->ops.amo_post_batch != NULL) {
        return ep->iface->ops.amo_post_batch(ep, op, size, raddr, rkey, operand);
    }
    return ep->iface->ops.amo_post(ep, op, size, raddr, rkey, operand);
}

/* Fetching: every op; *result_p gets the old value. */
static inline util_status_t btl_amo_fetch(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                          uint64_t raddr, btl_rkey_t *rkey, uint64_t operand,
                                          uint64_t compare, uint64_t *result_p)
{
    return ep->iface->ops.amo_fetch(ep, op, size, raddr, rkey, operand, compare, result_p);
}

/* Fetching, the old value in *result (size bytes) by the next quiet. */
static inline util_status_t btl_amo_fetch_nbi(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                              uint64_t raddr, btl_rkey_t *rkey, uint64_t operand,
                                              uint64_t compare, void *result)
{
    return ep->iface->ops.amo_fetch_nbi(ep, op, size, raddr, rkey, operand, compare, result);
}

static inline util_status_t btl_fence(btl_ep_t *ep)
{
    return ep->iface->ops.fence(ep);
}
static inline util_status_t btl_quiet(btl_iface_t *iface)
{
    return iface->ops.quiet(iface);
}
static inline util_status_t btl_progress(btl_iface_t *iface)
{
    return iface->ops.progress(iface);
}

#endif
