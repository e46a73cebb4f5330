/*
 * Soak tests (docs/hardening.md): many operations from all PEs at once,
 * with exact end results.
 *   - atomics: contended increments and fetch_inc on PE 0 (tests/soak/mp_soak amo);
 *   - DHT: all PEs insert into one hash table at once, nothing is lost (mp_soak dht);
 *   - channels: messages of random sizes (1-96 bytes) through 256-byte rpipe
 *     channels arrive complete and in order (tests/rpipe/mp_rpipe stream/irregular).
 * The default counts keep make check short; SOAK=long (make soak) runs the
 * full ones: 10^7 increments, 10^6 keys, 10^6 messages per channel.
 * Counts are divided by TEST_TIME_SCALE in slow builds (sanitizers).
 */
#include "tests/common/mp_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int soak_long(void)
{
    const char *mode = getenv("SOAK");
    return mode != NULL && strcmp(mode, "long") == 0;
}

/* Short count, or the long one with SOAK=long; scaled for slow builds. */
static long soak_count(long short_count, long long_count)
{
    return soak_long() ? long_count : mp_scaled_count(short_count);
}

static void soak_run(int np, const char *prog, const char *const args[], double limit_s)
{
    char *before = mp_shm_snapshot();
    double elapsed = 0;
    int status = mp_run(mp_oshrun_argv(np, 1, prog, args), limit_s, &elapsed);

    printf("%s %s %s on %d PEs: status %d, %.1f s\n", prog, args[0], args[1], np, status, elapsed);
    ck_assert_int_eq(status, 0);
    ck_assert_int_eq(mp_count_alive(prog), 0);
    ck_assert_int_eq(mp_shm_new_entries(before), 0);
    free(before);
}

START_TEST(test_amo)
{
    char total[32];
    const char *args[] = {"amo", total, NULL};

    snprintf(total, sizeof(total), "%ld", soak_count(1000000, 10000000));
    soak_run(4, "soak/mp_soak", args, soak_long() ? 3600 : 120);
}
END_TEST

START_TEST(test_dht)
{
    char total[32];
    const char *args[] = {"dht", total, NULL};

    snprintf(total, sizeof(total), "%ld", soak_count(100000, 1000000));
    soak_run(4, "soak/mp_soak", args, soak_long() ? 3600 : 120);
}
END_TEST

/* Two pairs stream at once: put/block in order, get/tag with the receiver
 * freeing out of order. */
START_TEST(test_channels)
{
    static const char *const variants[2][4] = {{"stream", "put", "block", "next"},
                                               {"irregular", "get", "tag", "first"}};
    char count[32];
    const char *args[] = {variants[_i][0], variants[_i][1], variants[_i][2],
                          variants[_i][3], count,           NULL};

    snprintf(count, sizeof(count), "%ld", soak_count(50000, 1000000));
    soak_run(4, "rpipe/mp_rpipe", args, soak_long() ? 3600 : 120);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("soak");
    TCase *tc = tcase_create("soak");

    tcase_set_timeout(tc, soak_long() ? 4000 : 150);
    tcase_add_test(tc, test_amo);
    tcase_add_test(tc, test_dht);
    tcase_add_loop_test(tc, test_channels, 0, 2);
    suite_add_tcase(s, tc);
    return mp_run_suite(s);
}
