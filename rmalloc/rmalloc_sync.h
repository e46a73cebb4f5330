/*
 * Shadow synchronization (thesis §3.4.3 Fig. 3.8, Table 3.1, §4.4,
 * Algorithms 2-11). Two endpoints, one per peer, keep a shadow instance in
 * step with the real one. rmalloc has no network code: an endpoint reaches
 * its peer only through the small transport below, which rpipe implements
 * over a btl and the tests implement in memory.
 *
 * Roles. The *producer* allocates (decides where a message goes) and learns
 * about frees; the *consumer* learns about allocations and frees them.
 * The direction says which of the two instances is the shadow:
 *   PUT: the producer writes into the consumer's memory, so the producer
 *        holds the shadow and the consumer the real (local) instance
 *        (Algorithms 4 and 6);
 *   GET: the consumer reads from the producer's memory, so the direction
 *        of the mirror flips: the producer holds the real instance and the
 *        consumer the shadow (Algorithms 5 and 7).
 * The protocol steps are the same in both directions; only the instance
 * that has memory mapped (rmalloc_vmem_ptr() != NULL) changes.
 *
 * Protocols (Table 3.1):
 *   CHANNEL (immediate, any heuristic): every allocation descriptor is
 *     pushed into the consumer's inbound ring, every free into the
 *     producer's, as it happens: one remote write of a stamped record,
 *     which the reader polls (the thesis adds a fetch-add on a head
 *     counter; the stamp makes it unnecessary).
 *   BLOCK (deferred, next-fit only): both instances are strict circular
 *     buffers (RMALLOC_VMEM_RING). The consumer accumulates the units it
 *     released, in allocation order, in a counter in its own sync buffer
 *     (sync_out_blocks, Alg. 9); the producer reads it (sync_in_blocks,
 *     Alg. 8) only when its shadow is full or above the watermark. The
 *     consumer learns allocations by placing the same sizes in the same
 *     order (rmalloc_sync_accept()), which gives the same offsets.
 *   TAG (deferred, any heuristic): bounded tag queues in the writer's sync
 *     buffer, one per direction (alloc tags in the producer's, free tags in
 *     the consumer's; Algorithms 10 and 11, as rings read by their stamps).
 *     A full queue pushes back (UTIL_ERR_NO_RESOURCE) until the reader
 *     reports the oldest tags taken. Frees of the consumer's oldest live
 *     message (post order) are counted instead of tagged, like BLOCK's
 *     counter; only frees out of that order are tags.
 * Each protocol is one file (rmalloc_sync_block.c, _tag.c, _channel.c)
 * that fills a table of operations per role; see rmalloc_sync_int.h.
 *
 * Non-blocking. No call waits. Results:
 *   UTIL_OK              done;
 *   UTIL_IN_PROGRESS     a transfer to the peer is in flight: call again
 *                        (or rmalloc_sync_progress()) to finish it;
 *   UTIL_ERR_NO_RESOURCE would block: no memory even after syncing `retries`
 *                        times, a full queue, or nothing new to take; retry
 *                        after the peer moved. Nothing was changed.
 * Other errors are real failures (bad descriptor: ERR_INVALID; the peer
 * broke the protocol: ERR_STATE; the transport's own errors).
 */
#ifndef RMALLOC_SYNC_H
#define RMALLOC_SYNC_H

#include "rmalloc/rmalloc_vmem.h"
#include "util/status.h"

#include <stddef.h>
#include <stdint.h>

/* ---- transport ------------------------------------------------------------
 * Offsets are bytes into the PEER's sync buffer (rmalloc_sync_buffer_size()
 * bytes, same layout on both sides). Each operation returns
 *   UTIL_OK              complete (read data is in buf, old value in *old_p);
 *   UTIL_IN_PROGRESS     issued; complete once flush() returns UTIL_OK
 *                        (buf and old_p must stay valid until then);
 *   UTIL_ERR_NO_RESOURCE not issued, retry later;
 *   another error        failure.
 * Operations issued on one context take effect at the peer in issue order.
 * write() copies its source at issue time (at most RMALLOC_SYNC_MAX_WRITE
 * bytes, like an inject). old_p may be NULL. */
#define RMALLOC_SYNC_MAX_WRITE 64

typedef struct rmalloc_sync_ops {
    util_status_t (*read)(void *ctx, uint64_t offset, void *buf, size_t len);
    util_status_t (*write)(void *ctx, uint64_t offset, const void *buf, size_t len);
    util_status_t (*fetch_add)(void *ctx, uint64_t offset, uint64_t value, uint64_t *old_p);
    util_status_t (*cswap)(void *ctx, uint64_t offset, uint64_t expected, uint64_t desired,
                           uint64_t *old_p);
    util_status_t (*flush)(void *ctx); /* OK when nothing is in flight */
} rmalloc_sync_ops_t;

typedef struct {
    const rmalloc_sync_ops_t *ops;
    void *ctx; /* user context passed to every op */
} rmalloc_sync_transport_t;

/* ---- configuration -------------------------------------------------------- */
typedef enum {
    RMALLOC_SYNC_CHANNEL = 0, /* immediate */
    RMALLOC_SYNC_BLOCK,       /* deferred, next-fit */
    RMALLOC_SYNC_TAG,         /* deferred, any heuristic */
    RMALLOC_SYNC_PROTOCOL_COUNT
} rmalloc_sync_protocol_t;

typedef enum { RMALLOC_SYNC_PUT = 0, RMALLOC_SYNC_GET } rmalloc_sync_direction_t;
typedef enum { RMALLOC_SYNC_PRODUCER = 0, RMALLOC_SYNC_CONSUMER } rmalloc_sync_role_t;

/* Watermarks: pull frees once this fraction of the shadow is in use. */
#define RMALLOC_WATERMARK_HALF 0.5
#define RMALLOC_WATERMARK_FULL 1.0 /* only when an allocation fails */

typedef struct {
    rmalloc_sync_protocol_t protocol;
    rmalloc_sync_direction_t direction;
    rmalloc_sync_role_t role;
    rmalloc_heuristic_t heuristic; /* BLOCK requires next-fit */
    void *base;                    /* this side's memory if its instance
                                              is the real one, else ignored */
    uint64_t size;                 /* region bytes (same on both sides) */
    uint64_t unit;                 /* granularity (power of two) */
    uint32_t header_bytes;         /* poll header per allocation */
    double watermark;              /* 0 < w <= 1 */
    unsigned retries;              /* syncs per allocation before NO_RESOURCE */
    uint32_t queue_len;            /* tag queue / channel ring entries (rounded
                                              up to a power of two) */
    uint64_t seed;                 /* random-fit seed (same on both sides) */
} rmalloc_sync_config_t;

/* Counters for benchmarks and debugging. */
typedef struct {
    uint64_t reads, writes, atomics; /* transport operations issued */
    uint64_t pulls;                  /* sync_in rounds started */
    uint64_t pushed, applied;        /* tags/records sent, received */
    uint64_t backpressure;           /* NO_RESOURCE for a full queue/ring */
} rmalloc_sync_stats_t;

typedef struct rmalloc_sync_ep rmalloc_sync_ep_t;

/* Name of a protocol ("channel", "block", "tag"). */
const char *rmalloc_sync_protocol_name(rmalloc_sync_protocol_t protocol);

/* Fills defaults (next-fit, tag protocol, unit 64, FULL watermark, ...)
 * and then applies the RMB_RMALLOC_* environment rows. */
util_status_t rmalloc_sync_config_init(rmalloc_sync_config_t *config);

/* Parses "half", "full" or a fraction in (0, 1]. */
util_status_t rmalloc_sync_parse_watermark(const char *text, double *watermark_p);

/* Bytes of sync buffer each side must register for this configuration. */
size_t rmalloc_sync_buffer_size(const rmalloc_sync_config_t *config);

/* Creates an endpoint over this side's sync buffer (sync_buf, of
 * rmalloc_sync_buffer_size() bytes, 8-byte aligned; it is zeroed here, so
 * create both sides before either one talks). ERR_INVALID for a bad
 * configuration (e.g. BLOCK without next-fit). */
util_status_t rmalloc_sync_create(const rmalloc_sync_config_t *config, void *sync_buf,
                                  const rmalloc_sync_transport_t *transport,
                                  rmalloc_sync_ep_t **ep_p);

/* Destroys the endpoint and its instance (not the buffers). Call
 * rmalloc_sync_progress() until it returns UTIL_OK first, so that no
 * transfer still targets the endpoint's landing buffers. */
void rmalloc_sync_destroy(rmalloc_sync_ep_t *ep);

/* The endpoint's allocator instance (local or shadow). */
rmalloc_vmem_t *rmalloc_sync_vmem(rmalloc_sync_ep_t *ep);

/* The peer's sync buffer where it is mapped here (load/store reachable), or
 * NULL. Reads of it then are loads: a poll that finds nothing new costs one
 * load instead of a transfer of the whole tag window. Writes and atomics
 * still go through the transport (they must be ordered with its other
 * operations), except one: in tag mode a store there tells the peer that its
 * tags are loaded here, so it may write them without their checksum. */
void rmalloc_sync_set_peer_view(rmalloc_sync_ep_t *ep, void *peer_buf);

/* Consumer waiting for the next allocation (rmalloc_sync_next() said
 * NO_RESOURCE): a word in local or mapped memory that changes when one may
 * have arrived, for a caller that polls with loads; NULL when there is none
 * (block protocol: the caller knows the place itself; tag protocol without
 * a peer view). */
const uint64_t *rmalloc_sync_poll_word(const rmalloc_sync_ep_t *ep);

/* Counters since creation. */
void rmalloc_sync_get_stats(const rmalloc_sync_ep_t *ep, rmalloc_sync_stats_t *stats_p);

/* Producer: the ring the next allocation of `payload` bytes (no alignment)
 * may be placed in directly, with the units it takes; NULL when
 * rmalloc_sync_alloc() must run its steps (a read in flight, a watermark
 * below FULL, no ring). An allocation placed there (rmalloc_ring_alloc_inl)
 * is the one rmalloc_sync_alloc() would have made (channel protocol: made
 * without applying the frees that arrived, which wait until the ring
 * refuses; they would not have moved it); where the ring refuses, call
 * rmalloc_sync_alloc(), which pulls frees. */
struct rmalloc_ring *rmalloc_sync_alloc_ring(const rmalloc_sync_ep_t *ep, uint64_t payload,
                                             uint64_t *units_p);

/* Block protocol, either end: the instance's ring (a strict ring for the
 * endpoint's life: RMALLOC_VMEM_RING); NULL in the other protocols. For
 * rpipe's inline steps on it: rmalloc_ring_find() is the producer's post
 * check and the consumer's liveness check, and rmalloc_ring_alloc_inl()
 * with the alignment given to rmalloc_sync_accept() is the placement it
 * makes (where it refuses, call rmalloc_sync_accept(), which reports why). */
struct rmalloc_ring *rmalloc_sync_block_ring(const rmalloc_sync_ep_t *ep);

/* Block protocol, producer: rmalloc_sync_alloc_ring() would hand out the
 * ring (rmalloc_sync_block_ring) now, for whatever size fits it: no read in
 * flight and a watermark of FULL. */
int rmalloc_sync_block_alloc_ready(const rmalloc_sync_ep_t *ep);

/* Block protocol, consumer: `units` were released in allocation order by
 * a free the caller made on the ring itself (rmalloc_ring_free_oldest_inl,
 * instead of rmalloc_sync_free()): adds them to the count the producer
 * reads. */
void rmalloc_sync_block_released(rmalloc_sync_ep_t *ep, uint64_t units);

/* Producer: allocates payload bytes (Alg. 3): pulls frees from the
 * consumer at the watermark and, when nothing fits, up to `retries` times.
 * Call rmalloc_sync_post() once the consumer may see the allocation. */
util_status_t rmalloc_sync_alloc(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                 raddr_t *desc_p);

/* Producer: publishes an allocation to the consumer (alloc tag or channel
 * record; no-op for BLOCK). PUT: right after the put is issued; GET: once
 * the data is written (Alg. 7). NO_RESOURCE: the queue is full, retry. */
util_status_t rmalloc_sync_post(rmalloc_sync_ep_t *ep, const raddr_t *desc);

/* Producer: runs one sync_in round now (frees from the consumer).
 * Consumer (TAG, CHANNEL): takes what the producer posted so far into the
 * list rmalloc_sync_next() hands out, ahead of it, so that the producer's
 * queue has room while this side reads nothing (a barrier); BLOCK
 * consumers have nothing to take: UTIL_ERR_INVALID.
 * OK once applied (perhaps nothing new), IN_PROGRESS while in flight. */
util_status_t rmalloc_sync_pull(rmalloc_sync_ep_t *ep);

/* Consumer, CHANNEL and TAG: the next allocation the producer posted, as a
 * descriptor of this side's instance. NO_RESOURCE: nothing new yet. */
util_status_t rmalloc_sync_next(rmalloc_sync_ep_t *ep, raddr_t *desc_p);

/* Consumer, TAG and CHANNEL with next-fit, nothing claimed and untaken:
 * where the next allocation most likely is (right after the last one, of
 * the same size). NO_RESOURCE when there is no guess to make. */
util_status_t rmalloc_sync_guess(const rmalloc_sync_ep_t *ep, uint64_t *start_p, uint64_t *units_p,
                                 uint64_t *payload_p);

/* Consumer: takes the next allocation before its tag or record arrived,
 * because the caller verified that it is there (rpipe: the message's flag,
 * which names place, size and sequence number). TAG: its tag is skipped,
 * and it may be freed at once (frees name it by its post sequence).
 * CHANNEL: the record, when it comes, must match (else ERR_STATE) and
 * brings the names a free needs; until then rmalloc_sync_free() of it
 * answers NO_RESOURCE. ERR_INVALID when [start, +units) is claimed
 * already. */
util_status_t rmalloc_sync_take_early(rmalloc_sync_ep_t *ep, uint64_t start, uint64_t units,
                                      uint64_t payload, raddr_t *desc_p);

/* Consumer, BLOCK: mirrors the producer's next allocation of payload bytes
 * (size read from the message header); it lands on the producer's offset.
 * ERR_STATE if it cannot (the peers disagree). */
util_status_t rmalloc_sync_accept(rmalloc_sync_ep_t *ep, uint64_t payload, uint64_t align,
                                  raddr_t *desc_p);

/* Consumer: releases an allocation and syncs it out (Alg. 6/7, 9, 10).
 * NO_RESOURCE: the free queue/ring is full, nothing changed, retry. */
util_status_t rmalloc_sync_free(rmalloc_sync_ep_t *ep, const raddr_t *desc);

/* Both roles: completes transfers in flight and applies their results. */
util_status_t rmalloc_sync_progress(rmalloc_sync_ep_t *ep);

/* Two words of each sync buffer that no protocol uses, for a handshake of
 * the caller's own between the two ends (rpipe's barrier: "this end holds
 * posts back" and the answer "taken ahead, done"). tell writes value into
 * the peer's word like any sync write: after the endpoint's earlier writes
 * (UTIL_OK; IN_PROGRESS: completes with rmalloc_sync_progress;
 * NO_RESOURCE: not issued, retry). told loads what the peer last wrote into
 * this side's word (0 until it writes). */
typedef enum { RMALLOC_SYNC_WORD_HELD = 0, RMALLOC_SYNC_WORD_ANSWER } rmalloc_sync_word_t;
util_status_t rmalloc_sync_tell(rmalloc_sync_ep_t *ep, rmalloc_sync_word_t word, uint64_t value);
uint64_t rmalloc_sync_told(rmalloc_sync_ep_t *ep, rmalloc_sync_word_t word);

/* 1 while a read of the peer's buffer is in flight, or landed and not yet
 * applied (rmalloc_sync_progress applies it): posts and frees wait for it. */
int rmalloc_sync_reading(const rmalloc_sync_ep_t *ep);

#endif
