/*
 * Live messages in post order (see rmalloc_order.h).
 */
#include "rmalloc/rmalloc_order.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/* Drops the holes and moves the entries to the arrays' start. */
static void squeeze(rmalloc_order_t *o)
{
    size_t n = 0;

    for (size_t i = o->head; i != o->tail; i++)
        if (o->desc[i].id != 0) {
            o->seq[n] = o->seq[i];
            o->desc[n++] = o->desc[i];
        }
    o->head = 0;
    o->tail = n;
    o->holes = 0;
}

util_status_t rmalloc_order_grow(rmalloc_order_t *o)
{
    /* Full: reuse the room the front left, or the holes', if that frees a
     * quarter of the arrays; else grow. */
    if (o->head + o->holes >= o->cap / 4 + 1) {
        squeeze(o);
        return UTIL_OK;
    }
    size_t cap = o->cap ? o->cap * 2 : 64;
    uint64_t *seq = realloc(o->seq, cap * sizeof(*seq));
    if (seq != NULL) o->seq = seq;
    raddr_t *desc = seq ? realloc(o->desc, cap * sizeof(*desc)) : NULL;
    if (desc == NULL) {
        util_error("rmalloc: cannot grow the list of live messages to %zu", cap);
        return UTIL_ERR_NO_MEMORY;
    }
    o->desc = desc;
    o->cap = cap;
    return UTIL_OK;
}

size_t rmalloc_order_find(const rmalloc_order_t *o, uint64_t seq)
{
    size_t lo = o->head, hi = o->tail;

    if (lo == hi || seq < o->seq[lo]) return SIZE_MAX;
    /* Without holes squeezed out, seq sits at its distance from the front. */
    if (seq - o->seq[lo] < hi - lo && o->seq[lo + (size_t)(seq - o->seq[lo])] == seq)
        lo += (size_t)(seq - o->seq[lo]);
    else {
        while (hi - lo > 1) { /* seq[lo] <= seq < seq[hi] */
            size_t mid = lo + (hi - lo) / 2;
            if (o->seq[mid] <= seq)
                lo = mid;
            else
                hi = mid;
        }
    }
    return (o->seq[lo] == seq && o->desc[lo].id != 0) ? lo : SIZE_MAX;
}

void rmalloc_order_remove(rmalloc_order_t *o, size_t i)
{
    if (i == o->head) {
        rmalloc_order_pop_n(o, 1);
        return;
    }
    o->desc[i].id = 0;
    o->holes++;
    if (o->holes > 32 && o->holes * 2 > o->tail - o->head) squeeze(o);
}

void rmalloc_order_fini(rmalloc_order_t *o)
{
    free(o->seq);
    free(o->desc);
    memset(o, 0, sizeof(*o));
}
