/*
 * dht: the distributed hash table of the thesis's §5.2.3 / §6.3.3 (after
 * Gerstenberger et al.), shared by its four variants (dht_rpipe, dht_shmem,
 * dht_mpi, dht_mpi_rma).
 *
 * Every PE owns a local volume of `volume` slots plus a collision heap.
 * Every PE inserts `inserts` random keys; a key belongs to PE
 * dht_owner(key) and to slot dht_slot(key) there. An insert fills the slot
 * when it is empty, else it takes a heap element and links it at the head
 * of the slot's chain. The table layout below is the same in every
 * variant: the active-message ones (rpipe, MPI two-sided) ship the key to
 * its owner, which calls dht_local_insert; the one-sided ones (OpenSHMEM,
 * MPI-3 RMA) do the same steps remotely with compare-and-swap,
 * fetch-and-increment and swap.
 *
 * Verification does not depend on arrival order: every PE walks its table,
 * checks that each element sits where its key belongs, and compares the
 * number of elements and an order-free sum over them with what the serial
 * reference (all PEs' inserts, regenerated) says it must hold.
 */
#ifndef EXAMPLES_DHT_H
#define EXAMPLES_DHT_H

#include "../app_common.h"

#include <stdint.h>

typedef struct dht_params {
    long volume;  /* slots per PE */
    long inserts; /* inserts per PE */
    int batch;    /* active-message variants: inserts per message */
    uint64_t seed;
} dht_params_t;

/* A slot or heap element. key 0 is an empty slot; next is a heap index or
 * -1. int64_t words, so that the one-sided variants can use 64-bit atomics
 * on each field. */
typedef struct dht_elem {
    int64_t key;
    int64_t value;
    int64_t next;
} dht_elem_t;

/* One PE's part: volume slots, then heap_cap heap elements; heap_top is the
 * next free heap element. */
typedef struct dht_table {
    long volume, heap_cap;
    dht_elem_t *slot;
    dht_elem_t *heap;
    int64_t *heap_top;
} dht_table_t;

/* An insert request as the active-message variants ship it. */
typedef struct dht_req {
    int64_t key;
    int64_t value;
} dht_req_t;

/* Parses [-p small|large] [-v volume] [-i inserts] [-b batch] [-S seed];
 * prints the usage line and returns -1 on bad arguments. */
int dht_parse(int argc, char **argv, const char *prog, dht_params_t *p);

/* Insert i of PE pe: a random non-zero key and a unique value. */
dht_req_t dht_make(const dht_params_t *p, int pe, long i);
int dht_owner(int64_t key, int np);
long dht_slot(int64_t key, long volume);

/* Heap elements a PE needs at most: the largest number of keys any PE
 * owns (from regenerating everyone's inserts), the same on every PE so that
 * symmetric tables have one size. -1: out of memory. */
long dht_heap_cap(const dht_params_t *p, int np);

/* Empties a table laid over the given memory (slot, heap, heap_top). */
void dht_table_init(dht_table_t *t, long volume, long heap_cap, void *slots_and_heap,
                    int64_t *heap_top);
/* Bytes of a table's slots and heap (they are contiguous). */
long dht_table_bytes(long volume, long heap_cap);

/* The kernel of the active-message variants: insert at the owner. Returns
 * -1 when the heap is full. */
int dht_local_insert(dht_table_t *t, int64_t key, int64_t value);

/* Walks PE me's table and compares it with the serial reference; prints
 * what is wrong (at most a few lines) and returns the number of errors. */
long dht_verify(const dht_params_t *p, const dht_table_t *t, int me, int np);

/* Rank 0: prints the result line with the slowest PE's time and the insert
 * rate; errs[np] are dht_verify's results. Returns 0 PASS, 1 FAIL. */
int dht_report(const dht_params_t *p, const char *variant, int np, const long *errs,
               const double *times);

#endif
