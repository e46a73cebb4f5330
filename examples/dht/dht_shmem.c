/*
 * dht_shmem: the distributed hash table over OpenSHMEM atomics.
 *   oshrun -n N examples/dht/dht_shmem [-p small|large] [-v volume] [-i inserts] [-S seed]
 *
 * The table (slots, collision heap, heap top) is symmetric. An insert is
 * done by the inserting PE on the owner's memory, as the MPI-3 atomic
 * version of §6.3.3 does: compare-and-swap the slot's key from 0; if the
 * slot was taken, fetch-and-increment the owner's heap top for an element,
 * put key and value there, swap the element in as the slot's chain head and
 * set its next to the old head. (-b is accepted and ignored: nothing is
 * batched.)
 */
#include "dht.h"

#include <shmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    dht_params_t p;
    dht_table_t table;
    void *mem;
    int64_t *heap_top;
    long heap_cap, errors = 0, *errs;
    double t0, t1, *times;
    int me, np, rc = 0;

    if (dht_parse(argc, argv, "dht_shmem", &p)) return 2;
    shmem_init();
    me = shmem_my_pe();
    np = shmem_n_pes();
    heap_cap = dht_heap_cap(&p, np); /* the same on every PE: symmetric sizes */
    if (heap_cap < 0) shmem_global_exit(1);
    mem = shmem_malloc((size_t)dht_table_bytes(p.volume, heap_cap));
    heap_top = shmem_malloc(sizeof(int64_t));
    errs = shmem_calloc((size_t)np, sizeof(long));
    times = shmem_calloc((size_t)np, sizeof(double));
    if (mem == NULL || heap_top == NULL || errs == NULL || times == NULL) {
        fprintf(stderr, "dht_shmem PE %d: out of symmetric memory\n", me);
        shmem_global_exit(1);
    }
    dht_table_init(&table, p.volume, heap_cap, mem, heap_top);
    shmem_barrier_all();
    /* warm-up: touch every PE once (remote keys are fetched on first use) */
    for (int q = 0; q < np; q++) (void)shmem_int64_atomic_fetch(heap_top, q);
    shmem_barrier_all();

    t0 = app_now();
    for (long i = 0; i < p.inserts; i++) {
        dht_req_t r = dht_make(&p, me, i);
        int o = dht_owner(r.key, np);
        dht_elem_t *s = &table.slot[dht_slot(r.key, p.volume)];
        int64_t old, idx, prev, kv[2];

        old = shmem_int64_atomic_compare_swap(&s->key, 0, r.key, o);
        if (old == 0) {
            shmem_int64_p(&s->value, r.value, o);
            continue;
        }
        idx = shmem_int64_atomic_fetch_inc(heap_top, o);
        if (idx >= heap_cap) {
            if (errors++ == 0) fprintf(stderr, "dht_shmem PE %d: PE %d's heap is full\n", me, o);
            continue;
        }
        kv[0] = r.key, kv[1] = r.value;
        shmem_int64_put(&table.heap[idx].key, kv, 2, o);
        prev = shmem_int64_atomic_swap(&s->next, idx, o);
        shmem_int64_atomic_set(&table.heap[idx].next, prev, o);
    }
    shmem_quiet();
    t1 = app_now();
    shmem_barrier_all();

    long mine_errs = errors + dht_verify(&p, &table, me, np);
    double mine_time = t1 - t0;
    shmem_long_p(&errs[me], mine_errs, 0);
    shmem_double_p(&times[me], mine_time, 0);
    shmem_barrier_all();
    p.batch = 0; /* one-sided: nothing batched */
    if (me == 0) rc = dht_report(&p, "shmem", np, errs, times);
    shmem_barrier_all();
    shmem_free(times);
    shmem_free(errs);
    shmem_free(heap_top);
    shmem_free(mem);
    shmem_finalize();
    return rc;
}
