/*
 * btl/shm: on-node peers through shared memory.
 *
 * Segments. btl_mem_alloc memory is a memfd (anonymous, mode 0600) mapped
 * MAP_SHARED here. A peer maps it by opening /proc/<owner pid>/fd/<fd>
 * (allowed for processes of the same user) when it unpacks the key, checks
 * the memfd's name "rmb-btl-<pid>-<serial>" to be sure the descriptor was
 * not reused, and closes the descriptor again. Nothing ever has a name in
 * /dev/shm, so a crash leaves nothing behind: the kernel frees a segment
 * once its last descriptor and mapping are gone.
 *
 * Other memory (stack, static data, malloc heap) is registered as a "cma"
 * range: put/get use process_vm_writev/readv (cross memory attach), and
 * atomics take the owner's per-iface lock, kept in a small control memfd
 * every peer maps at connect, around a read-modify-write through CMA. Such
 * atomics are atomic against every other btl atomic on that memory,
 * including the owner's own through its self ep. The owner itself reaches
 * its memory directly (a self ep is load/store for both kinds).
 *
 * Put and get are memcpy into the mapping; put_flag is memcpy then a
 * release store of the flag; atomics are __atomic builtins on the mapping.
 * Everything completes before the call returns, so fence is a release
 * fence, quiet a full fence and progress has nothing to do.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create, process_vm_readv/writev */
#endif
#include "btl/btl.h"
#include "btl/btl_cpu_amo.h"
#include "bootstrap/bootstrap.h"
#include "util/env.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#if HAVE_SYS_PRCTL_H
#include <sys/prctl.h>
#endif

#define BTL_SHM_CTRL_SIZE 4096

typedef enum { BTL_SHM_KIND_SEG = 1, BTL_SHM_KIND_CMA = 2 } btl_shm_kind_t;

/* The control page every peer maps: the lock for atomics on cma memory. */
typedef struct {
    uint32_t amo_lock;
} btl_shm_ctrl_t;

/* Published under "<key>.addr". */
typedef struct {
    int32_t pid;
    int32_t ctrl_fd;
    uint64_t ctrl_serial;
} btl_shm_addr_t;

/* Packed remote key. */
typedef struct {
    uint32_t kind;
    int32_t pid;
    int32_t fd;
    uint32_t pad;
    uint64_t serial;
    uint64_t seg_base; /* owner's address of the whole segment */
    uint64_t seg_size;
    uint64_t base; /* registered range */
    uint64_t len;
} btl_shm_packed_t;

typedef struct btl_shm_mr {
    btl_mr_t super;
    btl_shm_kind_t kind;
    int owned;    /* mem_alloc'd: fd open and mapping ours */
    int remapped; /* mem_remap'd: the mapping is caller memory */
    int fd;
    uint64_t serial;
    void *seg_base;
    size_t seg_size;
    struct btl_shm_mr *next; /* owned segments, for mem_reg lookups */
} btl_shm_mr_t;

typedef struct {
    btl_iface_t super;
    pid_t pid;
    int cma;
    uint64_t next_serial;
    int ctrl_fd;
    btl_shm_ctrl_t *ctrl;
    btl_shm_mr_t *segs;
} btl_shm_iface_t;

/* A peer segment mapped here; shared by every rkey naming it. */
typedef struct btl_shm_map {
    struct btl_shm_map *next;
    uint64_t serial;
    void *local;
    size_t size;
    int refs;
} btl_shm_map_t;

typedef struct {
    btl_ep_t super;
    pid_t pid;
    int self;
    btl_shm_ctrl_t *ctrl; /* the peer's control page */
    btl_shm_map_t *maps;
} btl_shm_ep_t;

typedef struct {
    btl_rkey_t super;
    btl_shm_map_t *map; /* NULL for self and cma */
    int amo_locked;     /* cma memory: atomics under the owner's lock */
} btl_shm_rkey_t;

static inline btl_shm_iface_t *btl_shm_iface(btl_iface_t *iface)
{
    return btl_container_of(iface, btl_shm_iface_t, super);
}

static inline btl_shm_ep_t *btl_shm_ep(btl_ep_t *ep)
{
    return btl_container_of(ep, btl_shm_ep_t, super);
}

static inline btl_shm_rkey_t *btl_shm_rkey(btl_rkey_t *rkey)
{
    return btl_container_of(rkey, btl_shm_rkey_t, super);
}

static size_t btl_shm_page_round(size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t p = page > 0 ? (size_t)page : 4096;
    return (size + p - 1) & ~(p - 1);
}

/* ---- segments ---- */
static void btl_shm_memfd_name(char *buf, size_t bufsize, pid_t pid, uint64_t serial)
{
    snprintf(buf, bufsize, "rmb-btl-%d-%llu", (int)pid, (unsigned long long)serial);
}

static util_status_t btl_shm_seg_create(btl_shm_iface_t *iface, size_t size, int *fd_p,
                                        uint64_t *serial_p, void **addr_p)
{
    char name[64];
    uint64_t serial = iface->next_serial++;
    void *addr;
    int fd;

    btl_shm_memfd_name(name, sizeof(name), iface->pid, serial);
    fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) {
        util_error("btl/shm: memfd_create(%s): %m", name);
        return errno == EMFILE || errno == ENFILE ? UTIL_ERR_NO_RESOURCE : UTIL_ERR_IO;
    }
    /* Only our own user may open it through /proc (and only with ptrace
     * rights over us, which the kernel checks as well). */
    (void)fchmod(fd, 0600);
    if (ftruncate(fd, (off_t)size) != 0) {
        util_error("btl/shm: ftruncate(%s, %zu): %m", name, size);
        close(fd);
        return UTIL_ERR_NO_MEMORY;
    }
    addr = btl_map_aligned(size, fd);
    if (addr == NULL) {
        util_error("btl/shm: mmap(%s, %zu): %m", name, size);
        close(fd);
        return UTIL_ERR_NO_MEMORY;
    }
    *fd_p = fd;
    *serial_p = serial;
    *addr_p = addr;
    return UTIL_OK;
}

/* Maps a peer's memfd through /proc/<pid>/fd/<fd> after checking, by its
 * name, that the descriptor still is the segment the key describes. */
static util_status_t btl_shm_seg_attach(pid_t pid, int fd, uint64_t serial, size_t size,
                                        void **addr_p)
{
    char path[64], link[128], expect[96], name[64];
    struct stat st;
    ssize_t n;
    void *addr;
    int lfd;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
    btl_shm_memfd_name(name, sizeof(name), pid, serial);
    snprintf(expect, sizeof(expect), "/memfd:%s (deleted)", name);
    n = readlink(path, link, sizeof(link) - 1);
    if (n < 0) {
        util_error("btl/shm: readlink(%s): %m (peer exited, or another user?)", path);
        return errno == ENOENT ? UTIL_ERR_PEER_FAILED : UTIL_ERR_UNREACHABLE;
    }
    link[n] = '\0';
    if (strcmp(link, expect) != 0) {
        util_error("btl/shm: %s is \"%s\", expected \"%s\": stale key (segment freed?)", path, link,
                   expect);
        return UTIL_ERR_NOT_FOUND;
    }
    lfd = open(path, O_RDWR | O_CLOEXEC);
    if (lfd < 0) {
        util_error("btl/shm: open(%s): %m", path);
        return UTIL_ERR_UNREACHABLE;
    }
    if (fstat(lfd, &st) != 0 || (size_t)st.st_size < size) {
        util_error("btl/shm: %s is smaller than the key says (%zu bytes)", path, size);
        close(lfd);
        return UTIL_ERR_INVALID;
    }
    addr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, lfd, 0);
    close(lfd);
    if (addr == MAP_FAILED) {
        util_error("btl/shm: mmap of %s (%zu bytes): %m", path, size);
        return UTIL_ERR_NO_MEMORY;
    }
    *addr_p = addr;
    return UTIL_OK;
}

/* ---- cross memory attach (memory that is not a segment) ---- */
static util_status_t btl_shm_cma_status(int peer, const char *what)
{
    int err = errno;

    util_error("btl/shm: %s to peer %d: %s", what, peer, strerror(err));
    switch (err) {
    case ESRCH:
        return UTIL_ERR_PEER_FAILED;
    case EPERM:
        return UTIL_ERR_UNREACHABLE;
    case EFAULT:
        return UTIL_ERR_INVALID;
    case ENOMEM:
        return UTIL_ERR_NO_MEMORY;
    default:
        return UTIL_ERR_IO;
    }
}

static util_status_t btl_shm_cma_check(btl_shm_rkey_t *rk, uint64_t raddr, size_t len)
{
    if (raddr < rk->super.remote_base || raddr + len > rk->super.remote_base + rk->super.length ||
        raddr + len < raddr) {
        util_error("btl/shm: [0x%llx, +%zu) outside the key's range [0x%llx, +%llu)",
                   (unsigned long long)raddr, len, (unsigned long long)rk->super.remote_base,
                   (unsigned long long)rk->super.length);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

static util_status_t btl_shm_cma_write(btl_ep_t *ep, btl_shm_rkey_t *rk, const void *src,
                                       size_t len, uint64_t raddr)
{
    btl_shm_ep_t *sep = btl_shm_ep(ep);
    util_status_t status = btl_shm_cma_check(rk, raddr, len);

    if (status != UTIL_OK) {
        return status;
    }
    while (len > 0) {
        struct iovec local = {(void *)(uintptr_t)src, len};
        struct iovec remote = {(void *)(uintptr_t)raddr, len};
        ssize_t n = process_vm_writev(sep->pid, &local, 1, &remote, 1, 0);
        if (n <= 0) {
            return btl_shm_cma_status(ep->peer, "process_vm_writev");
        }
        src = (const char *)src + n;
        raddr += (uint64_t)n;
        len -= (size_t)n;
    }
    return UTIL_OK;
}

static util_status_t btl_shm_cma_read(btl_ep_t *ep, btl_shm_rkey_t *rk, void *dst, size_t len,
                                      uint64_t raddr)
{
    btl_shm_ep_t *sep = btl_shm_ep(ep);
    util_status_t status = btl_shm_cma_check(rk, raddr, len);

    if (status != UTIL_OK) {
        return status;
    }
    while (len > 0) {
        struct iovec local = {dst, len};
        struct iovec remote = {(void *)(uintptr_t)raddr, len};
        ssize_t n = process_vm_readv(sep->pid, &local, 1, &remote, 1, 0);
        if (n <= 0) {
            return btl_shm_cma_status(ep->peer, "process_vm_readv");
        }
        dst = (char *)dst + n;
        raddr += (uint64_t)n;
        len -= (size_t)n;
    }
    return UTIL_OK;
}

/* ---- data ---- */
static util_status_t btl_shm_put(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                 uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    if (rkey->ls_valid) {
        memcpy((void *)(uintptr_t)(raddr + (uint64_t)rkey->ls_delta), src, len);
        return UTIL_OK;
    }
    return btl_shm_cma_write(ep, btl_shm_rkey(rkey), src, len, raddr);
}

static util_status_t btl_shm_get(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                 uint64_t raddr, btl_rkey_t *rkey, btl_comp_t *comp)
{
    if (rkey->ls_valid) {
        memcpy(dst, (const void *)(uintptr_t)(raddr + (uint64_t)rkey->ls_delta), len);
        return UTIL_OK;
    }
    return btl_shm_cma_read(ep, btl_shm_rkey(rkey), dst, len, raddr);
}

/* The flag store: release, so every earlier load and store of ours (the
 * payload) is visible before it. Through CMA a full fence first, then one
 * 8-byte aligned write. */
static util_status_t btl_shm_flag_store(btl_ep_t *ep, uint64_t flag_raddr, btl_rkey_t *flag_rkey,
                                        uint64_t value)
{
    if ((flag_raddr & 7) != 0) {
        util_error("btl/shm: flag address 0x%llx is not 8-byte aligned",
                   (unsigned long long)flag_raddr);
        return UTIL_ERR_INVALID;
    }
    if (flag_rkey->ls_valid) {
        __atomic_store_n((uint64_t *)(uintptr_t)(flag_raddr + (uint64_t)flag_rkey->ls_delta), value,
                         __ATOMIC_RELEASE);
        return UTIL_OK;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return btl_shm_cma_write(ep, btl_shm_rkey(flag_rkey), &value, sizeof(value), flag_raddr);
}

static util_status_t btl_shm_put_flag(btl_ep_t *ep, const void *src, size_t len, btl_mem_t *lmem,
                                      uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                      btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp)
{
    util_status_t status = btl_shm_put(ep, src, len, lmem, raddr, rkey, NULL);

    if (status != UTIL_OK) {
        return status;
    }
    return btl_shm_flag_store(ep, flag_raddr, flag_rkey, flag_value);
}

static util_status_t btl_shm_get_flag(btl_ep_t *ep, void *dst, size_t len, btl_mem_t *lmem,
                                      uint64_t raddr, btl_rkey_t *rkey, uint64_t flag_raddr,
                                      btl_rkey_t *flag_rkey, uint64_t flag_value, btl_comp_t *comp)
{
    util_status_t status = btl_shm_get(ep, dst, len, lmem, raddr, rkey, NULL);

    if (status != UTIL_OK) {
        return status;
    }
    return btl_shm_flag_store(ep, flag_raddr, flag_rkey, flag_value);
}

/* ---- atomics ---- */
static util_status_t btl_shm_amo_check(btl_amo_op_t op, unsigned size, uint64_t raddr)
{
    if ((size != 4 && size != 8) || (raddr & (size - 1)) != 0 || (unsigned)op >= BTL_AMO_LAST) {
        util_error("btl/shm: bad atomic (op %d, size %u, address 0x%llx)", (int)op, size,
                   (unsigned long long)raddr);
        return UTIL_ERR_INVALID;
    }
    return UTIL_OK;
}

/* cma memory: read-modify-write under the owner's lock. */
static util_status_t btl_shm_amo_locked(btl_ep_t *ep, btl_amo_op_t op, unsigned size,
                                        uint64_t raddr, btl_rkey_t *rkey, uint64_t operand,
                                        uint64_t compare, uint64_t *old_p)
{
    btl_shm_ep_t *sep = btl_shm_ep(ep);
    uint32_t *lock = &sep->ctrl->amo_lock;
    uint64_t old = 0, new_value;
    uint32_t old32, new32;
    util_status_t status;

    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE) != 0) {
        /* The holder may be descheduled (more PEs than cores): yield. */
        for (unsigned spins = 0; __atomic_load_n(lock, __ATOMIC_RELAXED) != 0; spins++) {
            if (spins >= 128) {
                sched_yield();
            }
        }
    }
    if (size == 4) {
        status = btl_shm_get(ep, &old32, 4, NULL, raddr, rkey, NULL);
        old = old32;
        compare = (uint32_t)compare;
        operand = (uint32_t)operand;
    } else {
        status = btl_shm_get(ep, &old, 8, NULL, raddr, rkey, NULL);
    }
    if (status == UTIL_OK && op != BTL_AMO_FETCH) {
        new_value = btl_amo_combine(op, old, operand, compare);
        if (size == 4) {
            new32 = (uint32_t)new_value;
            status = btl_shm_put(ep, &new32, 4, NULL, raddr, rkey, NULL);
        } else {
            status = btl_shm_put(ep, &new_value, 8, NULL, raddr, rkey, NULL);
        }
    }
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
    if (status == UTIL_OK) {
        *old_p = old;
    }
    return status;
}

static util_status_t btl_shm_amo_fetch(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                       btl_rkey_t *rkey, uint64_t operand, uint64_t compare,
                                       uint64_t *result_p)
{
    util_status_t status = btl_shm_amo_check(op, size, raddr);

    if (status != UTIL_OK) {
        return status;
    }
    if (rkey->ls_valid && !btl_shm_rkey(rkey)->amo_locked) {
        *result_p = btl_cpu_amo_fetch(
            op, size, (void *)(uintptr_t)(raddr + (uint64_t)rkey->ls_delta), operand, compare);
        return UTIL_OK;
    }
    return btl_shm_amo_locked(ep, op, size, raddr, rkey, operand, compare, result_p);
}

static util_status_t btl_shm_amo_post(btl_ep_t *ep, btl_amo_op_t op, unsigned size, uint64_t raddr,
                                      btl_rkey_t *rkey, uint64_t operand)
{
    util_status_t status = btl_shm_amo_check(op, size, raddr);
    uint64_t old;

    if (status != UTIL_OK) {
        return status;
    }
    if (op == BTL_AMO_FETCH || op == BTL_AMO_SWAP || op == BTL_AMO_CSWAP) {
        util_error("btl/shm: atomic op %d has no non-fetching form", (int)op);
        return UTIL_ERR_INVALID;
    }
    if (rkey->ls_valid && !btl_shm_rkey(rkey)->amo_locked) {
        btl_cpu_amo_post(op, size, (void *)(uintptr_t)(raddr + (uint64_t)rkey->ls_delta), operand);
        return UTIL_OK;
    }
    return btl_shm_amo_locked(ep, op, size, raddr, rkey, operand, 0, &old);
}

/* ---- ordering ---- */
static util_status_t btl_shm_fence(btl_ep_t *ep)
{
    __atomic_thread_fence(__ATOMIC_RELEASE);
    return UTIL_OK;
}

static util_status_t btl_shm_fence_all(btl_iface_t *iface)
{
    (void)iface;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    return UTIL_OK;
}

static util_status_t btl_shm_quiet(btl_iface_t *iface)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return UTIL_OK;
}

static util_status_t btl_shm_progress(btl_iface_t *iface)
{
    return UTIL_OK;
}

/* ---- memory registration ---- */
static util_status_t btl_shm_mem_alloc(btl_iface_t *iface, size_t size, void **addr_p,
                                       btl_mr_t **mr_p)
{
    btl_shm_iface_t *siface = btl_shm_iface(iface);
    btl_shm_mr_t *mr;
    util_status_t status;

    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    mr->seg_size = btl_shm_page_round(size);
    status = btl_shm_seg_create(siface, mr->seg_size, &mr->fd, &mr->serial, &mr->seg_base);
    if (status != UTIL_OK) {
        free(mr);
        return status;
    }
    mr->super.iface = iface;
    mr->super.addr = mr->seg_base;
    mr->super.size = size;
    mr->kind = BTL_SHM_KIND_SEG;
    mr->owned = 1;
    mr->next = siface->segs;
    siface->segs = mr;
    *addr_p = mr->seg_base;
    *mr_p = &mr->super;
    return UTIL_OK;
}

/* Turns caller memory (page-aligned) into a segment mapped at the same
 * address with the same contents, so peers can map it like mem_alloc'd
 * memory: a program's static data becomes load/store reachable. */
static util_status_t btl_shm_mem_remap(btl_iface_t *iface, void *addr, size_t size, btl_mr_t **mr_p)
{
    btl_shm_iface_t *siface = btl_shm_iface(iface);
    size_t page = btl_shm_page_round(1);
    btl_shm_mr_t *mr;
    util_status_t status;
    void *seg;

    if (((uintptr_t)addr % page) != 0 || (size % page) != 0 || size == 0) {
        return UTIL_ERR_INVALID;
    }
    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    status = btl_shm_seg_create(siface, size, &mr->fd, &mr->serial, &seg);
    if (status != UTIL_OK) {
        free(mr);
        return status;
    }
    /* The kernel copies the contents: a program's static data holds
     * AddressSanitizer's redzones between globals, which a memcpy here
     * would report (a raw syscall is not intercepted). Nothing else of this
     * process may write the range in between: callers remap at
     * initialization, before they start threads touching it. */
    for (size_t done = 0; done < size;) {
        long n = syscall(SYS_pwrite64, mr->fd, (const char *)addr + done, size - done, (off_t)done);
        if (n <= 0) {
            util_error("btl/shm: cannot copy %p (+%zu) into shared memory: %m", addr, size);
            munmap(seg, size);
            close(mr->fd);
            free(mr);
            return UTIL_ERR_IO;
        }
        done += (size_t)n;
    }
    if (mmap(addr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mr->fd, 0) == MAP_FAILED) {
        util_error("btl/shm: cannot remap %p (+%zu) as shared memory: %m", addr, size);
        munmap(seg, size);
        close(mr->fd);
        free(mr);
        return UTIL_ERR_IO;
    }
    munmap(seg, size);
    mr->super.iface = iface;
    mr->super.addr = addr;
    mr->super.size = size;
    mr->kind = BTL_SHM_KIND_SEG;
    mr->owned = 1;
    mr->remapped = 1;
    mr->seg_base = addr;
    mr->seg_size = size;
    mr->next = siface->segs;
    siface->segs = mr;
    *mr_p = &mr->super;
    return UTIL_OK;
}

/* Undoes a remap: private memory again, contents kept (the program goes on
 * using its static data after the library is finalized). A private mapping
 * of the segment's own file keeps the contents without copying them (and
 * without touching sanitizer redzones); later writes stay in this process. */
static void btl_shm_unremap(btl_shm_mr_t *mr)
{
    if (mmap(mr->seg_base, mr->seg_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, mr->fd,
             0) == MAP_FAILED) {
        util_warn("btl/shm: cannot restore %p as private memory; it stays shared", mr->seg_base);
    }
}

static util_status_t btl_shm_mem_reg(btl_iface_t *iface, void *addr, size_t size, btl_mr_t **mr_p)
{
    btl_shm_iface_t *siface = btl_shm_iface(iface);
    uintptr_t start = (uintptr_t)addr;
    btl_shm_mr_t *mr, *seg;

    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    mr->super.iface = iface;
    mr->super.addr = addr;
    mr->super.size = size;
    mr->fd = -1;
    /* Inside one of our segments: peers map that segment. */
    for (seg = siface->segs; seg != NULL; seg = seg->next) {
        uintptr_t base = (uintptr_t)seg->seg_base;
        if (start >= base && start + size <= base + seg->seg_size) {
            mr->kind = BTL_SHM_KIND_SEG;
            mr->fd = seg->fd;
            mr->serial = seg->serial;
            mr->seg_base = seg->seg_base;
            mr->seg_size = seg->seg_size;
            *mr_p = &mr->super;
            return UTIL_OK;
        }
    }
    if (!siface->cma) {
        util_error("btl/shm: %p (+%zu) is not btl memory and RMB_BTL_SHM_CMA is off", addr, size);
        free(mr);
        return UTIL_ERR_UNSUPPORTED;
    }
    mr->kind = BTL_SHM_KIND_CMA;
    *mr_p = &mr->super;
    return UTIL_OK;
}

static util_status_t btl_shm_mem_dereg(btl_mr_t *mr_base)
{
    btl_shm_mr_t *mr = btl_container_of(mr_base, btl_shm_mr_t, super);
    btl_shm_iface_t *siface = btl_shm_iface(mr->super.iface);

    if (mr->owned) {
        for (btl_shm_mr_t **pp = &siface->segs; *pp != NULL; pp = &(*pp)->next) {
            if (*pp == mr) {
                *pp = mr->next;
                break;
            }
        }
        if (mr->remapped) {
            btl_shm_unremap(mr);
        } else {
            munmap(mr->seg_base, mr->seg_size);
        }
        close(mr->fd);
    }
    free(mr);
    return UTIL_OK;
}

static util_status_t btl_shm_rkey_pack(btl_mr_t *mr_base, void *buf, size_t bufsize, size_t *size_p)
{
    btl_shm_mr_t *mr = btl_container_of(mr_base, btl_shm_mr_t, super);
    btl_shm_packed_t packed;

    if (bufsize < sizeof(packed)) {
        return UTIL_ERR_TRUNCATED;
    }
    memset(&packed, 0, sizeof(packed));
    packed.kind = mr->kind;
    packed.pid = (int32_t)btl_shm_iface(mr->super.iface)->pid;
    packed.fd = mr->fd;
    packed.serial = mr->serial;
    packed.seg_base = (uint64_t)(uintptr_t)mr->seg_base;
    packed.seg_size = mr->seg_size;
    packed.base = (uint64_t)(uintptr_t)mr->super.addr;
    packed.len = mr->super.size;
    memcpy(buf, &packed, sizeof(packed));
    *size_p = sizeof(packed);
    return UTIL_OK;
}

static util_status_t btl_shm_rkey_unpack(btl_ep_t *ep, const void *buf, size_t size,
                                         btl_rkey_t **rkey_p)
{
    btl_shm_ep_t *sep = btl_shm_ep(ep);
    btl_shm_packed_t packed;
    btl_shm_rkey_t *rk;
    btl_shm_map_t *map;
    util_status_t status;

    if (size != sizeof(packed)) {
        util_error("btl/shm: packed key from peer %d has %zu bytes, expected %zu", ep->peer, size,
                   sizeof(packed));
        return UTIL_ERR_INVALID;
    }
    memcpy(&packed, buf, sizeof(packed));
    if (packed.pid != (int32_t)sep->pid ||
        (packed.kind != BTL_SHM_KIND_SEG && packed.kind != BTL_SHM_KIND_CMA)) {
        util_error("btl/shm: key does not belong to peer %d (pid %d, kind %u)", ep->peer,
                   (int)packed.pid, packed.kind);
        return UTIL_ERR_INVALID;
    }
    rk = calloc(1, sizeof(*rk));
    if (rk == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    rk->super.remote_base = packed.base;
    rk->super.length = packed.len;
    if (sep->self) {
        /* Our own memory: reachable directly, whatever its kind. */
        rk->super.ls_valid = 1;
        rk->super.ls_delta = 0;
        rk->amo_locked = packed.kind == BTL_SHM_KIND_CMA;
    } else if (packed.kind == BTL_SHM_KIND_CMA) {
        rk->amo_locked = 1;
    } else {
        for (map = sep->maps; map != NULL && map->serial != packed.serial; map = map->next) {
        }
        if (map == NULL) {
            map = calloc(1, sizeof(*map));
            if (map == NULL) {
                status = UTIL_ERR_NO_MEMORY;
                goto err_free;
            }
            status = btl_shm_seg_attach(sep->pid, packed.fd, packed.serial, packed.seg_size,
                                        &map->local);
            if (status != UTIL_OK) {
                free(map);
                goto err_free;
            }
            map->serial = packed.serial;
            map->size = packed.seg_size;
            map->next = sep->maps;
            sep->maps = map;
        }
        map->refs++;
        rk->map = map;
        rk->super.ls_valid = 1;
        rk->super.ls_delta = (intptr_t)((uintptr_t)map->local - (uintptr_t)packed.seg_base);
    }
    *rkey_p = &rk->super;
    return UTIL_OK;

err_free:
    free(rk);
    return status;
}

static void btl_shm_map_unlink(btl_shm_ep_t *sep, btl_shm_map_t *map)
{
    for (btl_shm_map_t **pp = &sep->maps; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == map) {
            *pp = map->next;
            break;
        }
    }
    munmap(map->local, map->size);
    free(map);
}

static util_status_t btl_shm_rkey_release(btl_rkey_t *rkey)
{
    btl_shm_rkey_t *rk = btl_shm_rkey(rkey);

    if (rk->map != NULL && --rk->map->refs == 0) {
        btl_shm_map_unlink(btl_shm_ep(rkey->ep), rk->map);
    }
    free(rk);
    return UTIL_OK;
}

/* ---- endpoints ---- */
static util_status_t btl_shm_ep_connect(btl_iface_t *iface, int peer, btl_ep_t **ep_p)
{
    btl_shm_iface_t *siface = btl_shm_iface(iface);
    btl_shm_addr_t addr;
    btl_shm_ep_t *sep;
    char key[BOOTSTRAP_KEY_MAX];
    size_t got;
    void *ctrl;
    util_status_t status;

    sep = calloc(1, sizeof(*sep));
    if (sep == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    if (peer == iface->ctx->rank) {
        sep->self = 1;
        sep->pid = siface->pid;
        sep->ctrl = siface->ctrl;
        *ep_p = &sep->super;
        return UTIL_OK;
    }
    status = btl_iface_key(iface, "addr", key, sizeof(key));
    if (status != UTIL_OK) {
        goto err_free;
    }
    status = bootstrap_get(peer, key, &addr, sizeof(addr), &got);
    if (status != UTIL_OK || got != sizeof(addr)) {
        util_error("btl/shm: no address for peer %d (%s): %s", peer, key,
                   util_status_string(status));
        status = status != UTIL_OK ? status : UTIL_ERR_INVALID;
        goto err_free;
    }
    status = btl_shm_seg_attach(addr.pid, addr.ctrl_fd, addr.ctrl_serial, BTL_SHM_CTRL_SIZE, &ctrl);
    if (status != UTIL_OK) {
        goto err_free;
    }
    sep->pid = addr.pid;
    sep->ctrl = ctrl;
    *ep_p = &sep->super;
    return UTIL_OK;

err_free:
    free(sep);
    return status;
}

static util_status_t btl_shm_ep_disconnect(btl_ep_t *ep)
{
    btl_shm_ep_t *sep = btl_shm_ep(ep);

    if (sep->maps != NULL) {
        util_debug("btl/shm: peer %d: unmapping segments whose rkeys were not released", ep->peer);
    }
    while (sep->maps != NULL) {
        btl_shm_map_unlink(sep, sep->maps);
    }
    if (!sep->self) {
        munmap(sep->ctrl, BTL_SHM_CTRL_SIZE);
    }
    free(sep);
    return UTIL_OK;
}

/* ---- iface ---- */
static util_status_t btl_shm_iface_close(btl_iface_t *iface)
{
    btl_shm_iface_t *siface = btl_shm_iface(iface);

    if (siface->segs != NULL) {
        util_debug("btl/shm: closing with segments still allocated");
    }
    munmap(siface->ctrl, BTL_SHM_CTRL_SIZE);
    close(siface->ctrl_fd);
    free(siface);
    return UTIL_OK;
}

static const btl_ops_t btl_shm_ops = {
    .iface_close = btl_shm_iface_close,
    .ep_connect = btl_shm_ep_connect,
    .ep_disconnect = btl_shm_ep_disconnect,
    .mem_alloc = btl_shm_mem_alloc,
    .mem_reg = btl_shm_mem_reg,
    .mem_remap = btl_shm_mem_remap,
    .mem_dereg = btl_shm_mem_dereg,
    .rkey_pack = btl_shm_rkey_pack,
    .rkey_unpack = btl_shm_rkey_unpack,
    .rkey_release = btl_shm_rkey_release,
    .put = btl_shm_put,
    .get = btl_shm_get,
    .put_flag = btl_shm_put_flag,
    .get_flag = btl_shm_get_flag,
    .amo_post = btl_shm_amo_post,
    .amo_fetch = btl_shm_amo_fetch,
    .amo_fetch_nbi = btl_amo_fetch_nbi_at_once,
    .fence = btl_shm_fence,
    .fence_all = btl_shm_fence_all,
    .quiet = btl_shm_quiet,
    .progress = btl_shm_progress,
};

static util_status_t btl_shm_iface_open(btl_ctx_t *ctx, int index, btl_iface_t **iface_p);

/* Segments are memfds; copies outside them use cross memory attach, which
 * containers (seccomp) and ptrace policies may forbid: try both here. */
static int btl_shm_describe(btl_describe_func_t report, void *arg)
{
    int fd = memfd_create("rmb-describe", MFD_CLOEXEC), word = 1, copy = 0;
    struct iovec local = {&copy, sizeof(copy)}, remote = {&word, sizeof(word)};
    int cma =
        process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof(word) && copy == 1;

    report(arg, "shm", "segments", fd >= 0 ? "memfd_create: works" : "memfd_create: fails");
    report(arg, "shm", "copies",
           cma ? "process_vm_readv/writev (cross memory attach): works"
               : "process_vm_readv/writev (cross memory attach): fails");
    if (fd >= 0) {
        close(fd);
    }
    return fd >= 0;
}

const btl_component_t btl_shm_component = {
    .name = "shm",
    .on_node_only = 1,
    .iface_open = btl_shm_iface_open,
    .describe = btl_shm_describe,
};

static util_status_t btl_shm_iface_open(btl_ctx_t *ctx, int index, btl_iface_t **iface_p)
{
    btl_shm_iface_t *siface;
    btl_shm_addr_t addr;
    char key[BOOTSTRAP_KEY_MAX];
    void *ctrl;
    util_status_t status;

    siface = calloc(1, sizeof(*siface));
    if (siface == NULL) {
        return UTIL_ERR_NO_MEMORY;
    }
    siface->super.ops = btl_shm_ops;
    btl_iface_base_init(&siface->super, &btl_shm_component, ctx, index,
                        BTL_CAP_LOAD_STORE | BTL_CAP_MEM_ALLOC | BTL_CAP_AMO32 | BTL_CAP_AMO64 |
                            BTL_CAP_FLAG_ORDERED);
    siface->pid = getpid();
    status = util_env_get_bool("RMB_BTL_SHM_CMA", &siface->cma);
    if (status != UTIL_OK) {
        goto err_free;
    }
    if (siface->cma) {
        siface->super.caps |= BTL_CAP_ANY_MEMORY;
#if HAVE_SYS_PRCTL_H && defined(PR_SET_PTRACER)
        /* Under Yama ptrace_scope 1 CMA between siblings needs this;
         * elsewhere it fails harmlessly. */
        (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    }
    status =
        btl_shm_seg_create(siface, BTL_SHM_CTRL_SIZE, &siface->ctrl_fd, &addr.ctrl_serial, &ctrl);
    if (status != UTIL_OK) {
        goto err_free;
    }
    siface->ctrl = ctrl;
    addr.pid = (int32_t)siface->pid;
    addr.ctrl_fd = siface->ctrl_fd;
    status = btl_iface_key(&siface->super, "addr", key, sizeof(key));
    if (status != UTIL_OK) {
        goto err_ctrl;
    }
    status = bootstrap_put(key, &addr, sizeof(addr));
    if (status != UTIL_OK) {
        goto err_ctrl;
    }
    *iface_p = &siface->super;
    return UTIL_OK;

err_ctrl:
    munmap(siface->ctrl, BTL_SHM_CTRL_SIZE);
    close(siface->ctrl_fd);
err_free:
    free(siface);
    return status;
}
