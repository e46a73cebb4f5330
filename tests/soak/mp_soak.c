/*
 * Soak tests for OpenSHMEM, launched as N PEs under oshrun:
 *   mp_soak amo TOTAL   TOTAL increments of one counter on PE 0, split over
 *                       all PEs (atomic_inc), and TOTAL/8 fetch_inc of a
 *                       second one whose returned values must be exactly
 *                       0..TOTAL/8-1, each once (sum and sum of squares);
 *   mp_soak dht TOTAL   all PEs insert TOTAL distinct keys at once into one
 *                       open-addressing hash table spread over the PEs
 *                       (compare_swap claims a slot, put stores the value);
 *                       afterwards every key is found once with its value
 *                       and the table holds exactly TOTAL entries.
 * Exits 0 only if every check passed on every PE.
 */
#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/common/mp_check.h"

static int me, npes, errors;

static long my_share(long total)
{
    return total / npes + (me < total % npes);
}

static void soak_amo(long total)
{
    static long counter, ticket;
    long fetches = my_share(total / 8), incs = my_share(total);
    long double sum = 0, sq = 0, n = total / 8;
    long double *all;
    static long double mine[2];

    shmem_barrier_all();
    for (long i = 0, f = 0; i < incs || f < fetches; i++) {
        if (i < incs) {
            shmem_long_atomic_inc(&counter, 0);
        }
        if ((i % 8 == 0 || i >= incs) && f < fetches) {
            long v = shmem_long_atomic_fetch_inc(&ticket, 0);
            CHECK(v >= 0 && v < n, "fetch_inc returned %ld, outside [0, %Lg)", v, n);
            sum += v;
            sq += (long double)v * v;
            f++;
        }
    }
    mine[0] = sum;
    mine[1] = sq;
    shmem_barrier_all();
    all = shmem_malloc(sizeof(long double) * 2 * (size_t)npes);
    for (int p = 0; p < npes; p++) {
        shmem_getmem(&all[2 * p], mine, sizeof(mine), p);
    }
    if (me == 0) {
        long double want_sum = n * (n - 1) / 2, want_sq = (n - 1) * n * (2 * n - 1) / 6;
        sum = sq = 0;
        for (int p = 0; p < npes; p++) {
            sum += all[2 * p];
            sq += all[2 * p + 1];
        }
        CHECK(counter == total, "counter %ld after %ld increments", counter, total);
        CHECK(ticket == (long)n, "ticket %ld after %ld fetch_inc", ticket, (long)n);
        CHECK(sum == want_sum && sq == want_sq,
              "fetch_inc values are not 0..%ld each once (sum %Lg, want %Lg)", (long)n - 1, sum,
              want_sum);
    }
    shmem_barrier_all();
    shmem_free(all);
}

/* Keys are 1..total; slot words hold key (0 = empty), values value_of(key). */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

static long value_of(long key)
{
    return key * 1000003L + 17;
}

typedef struct {
    long *keys, *values;
    long slots; /* per PE */
} dht_t;

/* Home of a key's probe number k: PE and slot. */
static void dht_where(const dht_t *t, long key, long k, int *pe_p, long *slot_p)
{
    uint64_t h = mix((uint64_t)key) + (uint64_t)k;
    *pe_p = (int)(h % (uint64_t)npes);
    *slot_p = (long)((h / (uint64_t)npes) % (uint64_t)t->slots);
}

static void dht_insert(dht_t *t, long key)
{
    for (long k = 0; k < t->slots * npes; k++) {
        int pe;
        long slot, old;

        dht_where(t, key, k, &pe, &slot);
        old = shmem_long_atomic_compare_swap(&t->keys[slot], 0, key, pe);
        if (old == 0) {
            shmem_long_p(&t->values[slot], value_of(key), pe);
            return;
        }
        CHECK(old != key, "key %ld was already in the table", key);
    }
    CHECK(0, "no free slot for key %ld", key);
}

static int dht_lookup(const dht_t *t, long key, long *value_p)
{
    for (long k = 0; k < t->slots * npes; k++) {
        int pe;
        long slot, got;

        dht_where(t, key, k, &pe, &slot);
        got = shmem_long_g(&t->keys[slot], pe);
        if (got == key) {
            *value_p = shmem_long_g(&t->values[slot], pe);
            return 1;
        }
        if (got == 0) {
            return 0;
        }
    }
    return 0;
}

static void soak_dht(long total)
{
    dht_t t;
    long first = 1, inserted = my_share(total), *count;
    long mine = 0;

    /* load factor 1/2 */
    t.slots = (2 * total + npes - 1) / npes;
    t.keys = shmem_calloc((size_t)t.slots, sizeof(long));
    t.values = shmem_calloc((size_t)t.slots, sizeof(long));
    count = shmem_calloc(1, sizeof(long));
    for (int p = 0; p < me; p++) {
        first += total / npes + (p < total % npes);
    }
    shmem_barrier_all();
    /* interleaved key order: PEs race for the same probe sequences */
    for (long i = 0; i < inserted; i++) {
        dht_insert(&t, first + i);
    }
    shmem_quiet();
    shmem_barrier_all();
    for (long s = 0; s < t.slots; s++) {
        mine += t.keys[s] != 0;
    }
    shmem_long_atomic_add(count, mine, 0);
    for (long i = 0; i < inserted; i++) {
        long key = first + (i * 7919) % inserted, value = -1; /* another order */
        CHECK(dht_lookup(&t, key, &value), "key %ld is lost", key);
        CHECK(value == value_of(key), "key %ld has value %ld, want %ld", key, value, value_of(key));
    }
    shmem_barrier_all();
    if (me == 0) {
        CHECK(*count == total, "table holds %ld keys, %ld were inserted", *count, total);
    }
    shmem_barrier_all();
    shmem_free(count);
    shmem_free(t.values);
    shmem_free(t.keys);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    long total = argc > 2 ? atol(argv[2]) : 0;
    static int all_errors;

    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (total <= 0 || (strcmp(mode, "amo") != 0 && strcmp(mode, "dht") != 0)) {
        if (me == 0) {
            fprintf(stderr, "usage: mp_soak amo|dht TOTAL\n");
        }
        shmem_finalize();
        return 2;
    }
    if (strcmp(mode, "amo") == 0) {
        soak_amo(total);
    } else {
        soak_dht(total);
    }
    shmem_int_atomic_add(&all_errors, errors, 0);
    shmem_barrier_all();
    if (me == 0) {
        printf("mp_soak %s %ld on %d PEs: %s\n", mode, total, npes, all_errors ? "FAILED" : "ok");
    }
    errors = shmem_int_g(&all_errors, 0);
    shmem_finalize();
    return errors != 0;
}
