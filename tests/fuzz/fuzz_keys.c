/*
 * libFuzzer target: decoding keys that come from another process.
 *   - Channel keys: btl_rkey_unpack, which decodes the packed memory key a
 *     peer publishes for a channel (per-iface parts, then the backend's own
 *     key), on a 1-PE job's endpoint to itself. Half of the inputs are a
 *     valid packed key of a real allocation with fuzzed bytes xor-ed in, so
 *     the backend's decoder is reached, not only the framing.
 *   - Bootstrap keys: the MPI bootstrap's decoder of a pushed key batch
 *     (bmpi_ingest). It is static, so this file compiles bootstrap_mpi.c in
 *     (the fuzz build has no MPI, so the library does not have it). Raw
 *     input must be accepted or refused with UTIL_ERR_RUNTIME; an encoded
 *     batch (bmpi_stage) must decode to exactly what was staged.
 */
#include "bootstrap/bootstrap_mpi.c"

#include "bootstrap/bootstrap.h"
#include "btl/btl.h"
#include "btl/btl_inl.h"

#define EXPECT(_cond, ...)                                                                         \
    do {                                                                                           \
        if (!(_cond)) {                                                                            \
            fprintf(stderr, "fuzz_keys: " __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define FUZZ_RANKS 4

static btl_ctx_t *fuzz_ctx;
static btl_ep_t *fuzz_ep;
static btl_mem_t *fuzz_mem;
static uint8_t fuzz_packed[BTL_RKEY_PACKED_MAX];
static size_t fuzz_packed_len;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    setenv("RMB_BOOTSTRAP", "singleton", 1);
    setenv("RMB_BTL", "shm", 1);
    EXPECT(btl_ctx_create(NULL, &fuzz_ctx) == UTIL_OK, "btl_ctx_create failed");
    EXPECT(btl_ctx_ep(fuzz_ctx, 0, &fuzz_ep) == UTIL_OK, "no endpoint to myself");
    EXPECT(btl_mem_alloc(fuzz_ctx, 4096, &fuzz_mem) == UTIL_OK, "btl_mem_alloc failed");
    EXPECT(btl_mem_pack(fuzz_mem, fuzz_packed, sizeof(fuzz_packed), &fuzz_packed_len) == UTIL_OK,
           "btl_mem_pack failed");
    bmpi_pushes_seen = calloc(FUZZ_RANKS, sizeof(uint64_t));
    EXPECT(bmpi_pushes_seen != NULL, "out of memory");
    return 0;
}

static void fuzz_rkey(const uint8_t *data, size_t size, int mutate_valid)
{
    uint8_t buf[BTL_RKEY_PACKED_MAX + 64];
    size_t len = size < sizeof(buf) ? size : sizeof(buf);
    btl_rkey_t *rkey = NULL;
    util_status_t status;

    if (mutate_valid) {
        len = fuzz_packed_len;
        memcpy(buf, fuzz_packed, len);
        for (size_t i = 0; i + 1 < size; i += 2) { /* pairs: offset, xor mask */
            buf[data[i] % len] ^= data[i + 1];
        }
        if (size % 2) { /* odd length: also truncate */
            len = data[size - 1] % (len + 1);
        }
    } else {
        memcpy(buf, data, len);
    }
    status = btl_rkey_unpack(fuzz_ep, buf, len, &rkey);
    if (status == UTIL_OK) {
        void *ptr;
        EXPECT(rkey != NULL && rkey->ep == fuzz_ep, "unpacked key without its endpoint");
        (void)btl_rkey_ptr(rkey, rkey->remote_base, &ptr);
        EXPECT(btl_rkey_release(rkey) == UTIL_OK, "release of an unpacked key failed");
    } else {
        EXPECT(status < 0, "btl_rkey_unpack: status %d without a key", status);
    }
}

/* Input: source rank, then raw batch bytes. */
static void fuzz_ingest_raw(const uint8_t *data, size_t size)
{
    util_status_t status;

    if (size < 1) {
        return;
    }
    status = bmpi_ingest(data[0] % FUZZ_RANKS, data + 1, size - 1);
    EXPECT(status == UTIL_OK || status == UTIL_ERR_RUNTIME, "bmpi_ingest: status %d", status);
    bmpi_table_clear();
}

/* Input: entries (key length, key bytes, value length, value bytes) to
 * stage, then decode; every staged key must read back its last value. */
static void fuzz_ingest_roundtrip(const uint8_t *data, size_t size)
{
    struct {
        char key[BOOTSTRAP_KEY_MAX];
        const uint8_t *value;
        size_t len;
    } ent[32];
    int n = 0;
    size_t pos = 0;

    while (pos + 2 <= size && n < 32) {
        size_t klen = 1 + data[pos++] % (BOOTSTRAP_KEY_MAX - 1), vlen;
        if (pos + klen + 1 > size) {
            break;
        }
        for (size_t i = 0; i < klen; i++) { /* printable, no NUL: a real key */
            ent[n].key[i] = (char)('!' + data[pos + i] % 94);
        }
        ent[n].key[klen] = '\0';
        pos += klen;
        vlen = data[pos++];
        vlen = vlen <= size - pos ? vlen : size - pos;
        ent[n].value = data + pos;
        ent[n].len = vlen;
        pos += vlen;
        EXPECT(bmpi_stage(ent[n].key, ent[n].value, vlen) == UTIL_OK, "bmpi_stage failed");
        n++;
    }
    EXPECT(bmpi_ingest(1, bmpi_staged, bmpi_staged_len) == UTIL_OK, "a staged batch was refused");
    for (int i = 0; i < n; i++) {
        int last = 1;
        bmpi_kv_t *kv = *bmpi_find(1, ent[i].key);
        for (int j = i + 1; j < n; j++) {
            last = last && strcmp(ent[j].key, ent[i].key) != 0;
        }
        EXPECT(kv != NULL, "key %s lost", ent[i].key);
        if (last) {
            EXPECT(kv->size == ent[i].len && memcmp(kv->value, ent[i].value, kv->size) == 0,
                   "key %s has another value after decoding", ent[i].key);
        }
    }
    bmpi_staged_len = 0;
    bmpi_table_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    switch (data[0] % 4) {
    case 0:
        fuzz_rkey(data + 1, size - 1, 0);
        break;
    case 1:
        fuzz_rkey(data + 1, size - 1, 1);
        break;
    case 2:
        fuzz_ingest_raw(data + 1, size - 1);
        break;
    default:
        fuzz_ingest_roundtrip(data + 1, size - 1);
        break;
    }
    return 0;
}
