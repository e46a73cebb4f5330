/*
 * Runs a libFuzzer target without libFuzzer (any compiler): on every file
 * named on the command line, then on FUZZ_REPLAY_INPUTS (default 2000)
 * pseudo-random inputs of 0..1024 bytes from a fixed seed (FUZZ_REPLAY_SEED),
 * so make check exercises the target's checks in every build, sanitizer
 * builds included. The target aborts on a failed check.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static uint64_t replay_next(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * UINT64_C(2685821657736338717);
}

int main(int argc, char **argv)
{
    static uint8_t buf[1024];
    const char *inputs = getenv("FUZZ_REPLAY_INPUTS"), *seed = getenv("FUZZ_REPLAY_SEED");
    long count = inputs ? atol(inputs) : 2000;
    uint64_t state = seed ? strtoull(seed, NULL, 0) : UINT64_C(20261122);

    if (LLVMFuzzerInitialize != NULL) {
        LLVMFuzzerInitialize(&argc, &argv);
    }
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        size_t n;

        if (f == NULL) {
            fprintf(stderr, "fuzz_replay: cannot open %s\n", argv[i]);
            return 2;
        }
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
    }
    state = state ? state : 1;
    for (long k = 0; k < count; k++) {
        size_t n = (size_t)(replay_next(&state) % (sizeof(buf) + 1));
        for (size_t j = 0; j < n; j += 8) {
            uint64_t r = replay_next(&state);
            for (size_t b = 0; b < 8 && j + b < n; b++) {
                buf[j + b] = (uint8_t)(r >> (8 * b));
            }
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("%s: %d files and %ld random inputs passed\n", argv[0], argc - 1, count);
    return 0;
}
