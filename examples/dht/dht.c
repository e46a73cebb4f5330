/*
 * dht: keys, table, local insert, verification shared by the four
 * variants (see dht.h).
 */
#include "dht.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [-p small|large] [-v volume_per_pe] [-i inserts_per_pe] [-b batch] "
            "[-S seed]\n",
            prog);
}

int dht_parse(int argc, char **argv, const char *prog, dht_params_t *p)
{
    long v;
    int c;

    /* the thesis's local volumes: 10,000 (small) and 1 million (large) */
    p->volume = 10000;
    p->inserts = 10000;
    p->batch = 16;
    p->seed = 7;
    opterr = 0;
    while ((c = getopt(argc, argv, "p:v:i:b:S:")) != -1) {
        switch (c) {
        case 'p':
            if (!strcmp(optarg, "small")) {
                p->volume = 10000, p->inserts = 10000;
            } else if (!strcmp(optarg, "large")) {
                p->volume = 1000000, p->inserts = 1000000;
            } else {
                goto bad;
            }
            break;
        case 'v':
            if (app_parse_long(optarg, 1, 1L << 32, &v)) goto bad;
            p->volume = v;
            break;
        case 'i':
            if (app_parse_long(optarg, 0, 1L << 32, &v)) goto bad;
            p->inserts = v;
            break;
        case 'b':
            if (app_parse_long(optarg, 1, 4096, &v)) goto bad;
            p->batch = (int)v;
            break;
        case 'S':
            if (app_parse_long(optarg, 0, 1L << 62, &v)) goto bad;
            p->seed = (uint64_t)v;
            break;
        default:
            goto bad;
        }
    }
    if (optind == argc) return 0;
bad:
    usage(prog);
    return -1;
}

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

dht_req_t dht_make(const dht_params_t *p, int pe, long i)
{
    dht_req_t r;

    /* positive (the top bit clear) and non-zero: 0 marks an empty slot */
    r.key = (int64_t)((mix(p->seed ^ mix((uint64_t)pe << 40 ^ (uint64_t)i)) >> 1) | 1);
    r.value = (int64_t)((uint64_t)pe << 40 | (uint64_t)i);
    return r;
}

int dht_owner(int64_t key, int np)
{
    return (int)(((uint64_t)key >> 40) % (uint64_t)np);
}

long dht_slot(int64_t key, long volume)
{
    return (long)((uint64_t)key % (uint64_t)volume);
}

long dht_heap_cap(const dht_params_t *p, int np)
{
    long *n = calloc((size_t)np, sizeof(long)), max = 1;

    if (n == NULL) return -1;
    for (int r = 0; r < np; r++) {
        for (long i = 0; i < p->inserts; i++) n[dht_owner(dht_make(p, r, i).key, np)]++;
    }
    for (int r = 0; r < np; r++) {
        if (n[r] > max) max = n[r];
    }
    free(n);
    return max;
}

long dht_table_bytes(long volume, long heap_cap)
{
    return (volume + heap_cap) * (long)sizeof(dht_elem_t);
}

void dht_table_init(dht_table_t *t, long volume, long heap_cap, void *slots_and_heap,
                    int64_t *heap_top)
{
    t->volume = volume;
    t->heap_cap = heap_cap;
    t->slot = slots_and_heap;
    t->heap = t->slot + volume;
    t->heap_top = heap_top;
    for (long i = 0; i < volume + heap_cap; i++) t->slot[i] = (dht_elem_t){0, 0, -1};
    *heap_top = 0;
}

int dht_local_insert(dht_table_t *t, int64_t key, int64_t value)
{
    dht_elem_t *s = &t->slot[dht_slot(key, t->volume)];
    int64_t idx;

    if (s->key == 0) {
        s->key = key;
        s->value = value;
        return 0;
    }
    idx = (*t->heap_top)++;
    if (idx >= t->heap_cap) return -1;
    t->heap[idx] = (dht_elem_t){key, value, s->next};
    s->next = idx;
    return 0;
}

/* Order-free fingerprint of an element. */
static uint64_t elem_hash(int64_t key, int64_t value)
{
    return mix((uint64_t)key ^ mix((uint64_t)value));
}

long dht_verify(const dht_params_t *p, const dht_table_t *t, int me, int np)
{
    uint64_t sum = 0, want_sum = 0;
    long count = 0, want = 0, errs = 0;

    for (long pos = 0; pos < t->volume; pos++) {
        const dht_elem_t *e = &t->slot[pos];
        long hops = 0;

        if (e->key == 0) {
            if (e->next != -1 && errs++ < 3) {
                fprintf(stderr, "dht PE %d: empty slot %ld has a chain\n", me, pos);
            }
            continue;
        }
        for (;;) {
            if ((dht_slot(e->key, t->volume) != pos || dht_owner(e->key, np) != me) && errs++ < 3) {
                fprintf(stderr, "dht PE %d: key %lld in slot %ld does not belong there\n", me,
                        (long long)e->key, pos);
            }
            sum += elem_hash(e->key, e->value);
            count++;
            if (e->next == -1) break;
            if (e->next < 0 || e->next >= *t->heap_top || ++hops > t->heap_cap) {
                if (errs++ < 3) fprintf(stderr, "dht PE %d: bad chain in slot %ld\n", me, pos);
                break;
            }
            e = &t->heap[e->next];
        }
    }
    for (int r = 0; r < np; r++) {
        for (long i = 0; i < p->inserts; i++) {
            dht_req_t q = dht_make(p, r, i);
            if (dht_owner(q.key, np) != me) continue;
            want_sum += elem_hash(q.key, q.value);
            want++;
        }
    }
    if (count != want || sum != want_sum) {
        if (errs++ < 3) {
            fprintf(stderr,
                    "dht PE %d: holds %ld elements (fingerprint %016llx), serial reference %ld "
                    "(%016llx)\n",
                    me, count, (unsigned long long)sum, want, (unsigned long long)want_sum);
        }
    }
    return errs;
}

int dht_report(const dht_params_t *p, const char *variant, int np, const long *errs,
               const double *times)
{
    double tmax = 0.0;
    long bad = 0;

    for (int r = 0; r < np; r++) {
        bad += errs[r];
        if (times[r] > tmax) tmax = times[r];
    }
    printf("dht %s np=%d volume=%ld inserts=%ld batch=%d time_s=%.6f inserts_per_s=%.0f check=%s\n",
           variant, np, p->volume, p->inserts, p->batch, tmax,
           tmax > 0.0 ? (double)np * (double)p->inserts / tmax : 0.0, bad ? "FAIL" : "PASS");
    fflush(stdout);
    return bad ? 1 : 0;
}
