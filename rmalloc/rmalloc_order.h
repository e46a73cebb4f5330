/*
 * The live messages of a tag-sync endpoint in post order (the order the
 * producer published them, which is the order the consumer takes them).
 *
 * Both ends keep one: the consumer frees the oldest live message by
 * counting it (no tag, and no need for the producer's names), and the
 * producer, reading the count, releases its own oldest live messages. A
 * message freed out of order leaves a hole, found by its post sequence
 * (binary search; the sequences only grow). Holes are dropped when they
 * reach the front, and squeezed out once they are most of the list, so a
 * list holds O(live messages) entries even while the oldest one is held
 * for good. Sequences and descriptors are separate arrays, so that a run
 * of oldest messages is an array of descriptors (rmalloc_vmem_free_n).
 */
#ifndef RMALLOC_ORDER_H
#define RMALLOC_ORDER_H

#include "rmalloc/rmalloc_desc.h"
#include "util/status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t *seq;          /* post sequences */
    raddr_t *desc;          /* this side's descriptors; id 0 once freed (a hole) */
    size_t cap, head, tail; /* desc[head] is live unless head == tail */
    size_t holes;           /* in (head, tail) */
} rmalloc_order_t;

util_status_t rmalloc_order_grow(rmalloc_order_t *o);

/* Room for one more push without allocating. */
static inline util_status_t rmalloc_order_reserve(rmalloc_order_t *o)
{
    return (o->tail < o->cap) ? UTIL_OK : rmalloc_order_grow(o);
}

/* Appends a live message; seq must exceed every sequence pushed before.
 * Call rmalloc_order_reserve() first. */
static inline void rmalloc_order_push(rmalloc_order_t *o, uint64_t seq, const raddr_t *desc)
{
    o->seq[o->tail] = seq;
    o->desc[o->tail] = *desc;
    o->tail++;
}

/* Live messages. */
static inline size_t rmalloc_order_live(const rmalloc_order_t *o)
{
    return o->tail - o->head - o->holes;
}

/* Post sequence of the oldest live message; the list must not be empty. */
static inline uint64_t rmalloc_order_front_seq(const rmalloc_order_t *o)
{
    return o->seq[o->head];
}

/* The oldest live messages before the first hole, at most max of them:
 * their count, and their descriptors at *descs_p. */
static inline size_t rmalloc_order_run(const rmalloc_order_t *o, size_t max,
                                       const raddr_t **descs_p)
{
    size_t n = o->tail - o->head;

    if (n > max) n = max;
    if (o->holes)
        for (size_t i = 1; i < n; i++)
            if (o->desc[o->head + i].id == 0) {
                n = i;
                break;
            }
    *descs_p = &o->desc[o->head];
    return n;
}

/* Removes the n oldest live messages (a run: no hole among them). */
static inline void rmalloc_order_pop_n(rmalloc_order_t *o, size_t n)
{
    o->head += n;
    while (o->head != o->tail && o->desc[o->head].id == 0) {
        o->head++;
        o->holes--;
    }
}

/* Index of the live message with this post sequence, or SIZE_MAX. */
size_t rmalloc_order_find(const rmalloc_order_t *o, uint64_t seq);

/* Removes the live message at index i (from rmalloc_order_find()). */
void rmalloc_order_remove(rmalloc_order_t *o, size_t i);

void rmalloc_order_fini(rmalloc_order_t *o);

#endif
