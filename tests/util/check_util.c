/* Unit tests of util/: status strings and the strict environment parsers. */
#include "util/env.h"
#include "util/status.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_status_strings)
{
    ck_assert_str_eq(util_status_string(UTIL_OK), "success");
    ck_assert_str_eq(util_status_string(UTIL_ERR_NO_MEMORY), "out of memory");
    ck_assert_str_eq(util_status_name(UTIL_ERR_TIMEOUT), "UTIL_ERR_TIMEOUT");
    ck_assert_str_eq(util_status_string((util_status_t)-999), "unknown status");
    ck_assert_str_eq(util_status_name((util_status_t)77), "UTIL_UNKNOWN");
    ck_assert_int_eq(UTIL_OK, 0);
    ck_assert_int_gt(UTIL_IN_PROGRESS, 0);
    ck_assert_int_lt(UTIL_ERR_INVALID, 0);
}
END_TEST

START_TEST(test_parse_bool)
{
    int v = -1;
    const char *yes[] = {"1", "yes", "YES", "true", "on", "y"};
    const char *no[] = {"0", "no", "False", "off", "n"};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        v = -1;
        ck_assert_int_eq(util_env_parse_bool(yes[i], &v), UTIL_OK);
        ck_assert_int_eq(v, 1);
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        v = -1;
        ck_assert_int_eq(util_env_parse_bool(no[i], &v), UTIL_OK);
        ck_assert_int_eq(v, 0);
    }
    v = 42;
    ck_assert_int_eq(util_env_parse_bool("2", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_bool("", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_bool("yess", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(v, 42); /* outputs untouched on error */
}
END_TEST

START_TEST(test_parse_size)
{
    size_t v = 0;

    ck_assert_int_eq(util_env_parse_size("4096", &v), UTIL_OK);
    ck_assert_uint_eq(v, 4096);
    ck_assert_int_eq(util_env_parse_size("4K", &v), UTIL_OK);
    ck_assert_uint_eq(v, 4096);
    ck_assert_int_eq(util_env_parse_size("64m", &v), UTIL_OK);
    ck_assert_uint_eq(v, 64UL << 20);
    ck_assert_int_eq(util_env_parse_size("2G", &v), UTIL_OK);
    ck_assert_uint_eq(v, 2UL << 30);
    ck_assert_int_eq(util_env_parse_size("1T", &v), UTIL_OK);
    ck_assert_uint_eq(v, 1UL << 40);
    ck_assert_int_eq(util_env_parse_size("3KiB", &v), UTIL_OK);
    ck_assert_uint_eq(v, 3072);
    ck_assert_int_eq(util_env_parse_size("10MB", &v), UTIL_OK);
    ck_assert_uint_eq(v, 10UL << 20);
    v = 7;
    ck_assert_int_eq(util_env_parse_size("-1", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_size("12Q", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_size("", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_size("K", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_size("99999999999999999999", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_size("16777216T", &v), UTIL_ERR_INVALID); /* overflows */
    ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_parse_int)
{
    long v = 0;

    ck_assert_int_eq(util_env_parse_int("-12", &v), UTIL_OK);
    ck_assert_int_eq(v, -12);
    ck_assert_int_eq(util_env_parse_int("0x10", &v), UTIL_OK);
    ck_assert_int_eq(v, 16);
    ck_assert_int_eq(util_env_parse_int("12abc", &v), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_parse_int("", &v), UTIL_ERR_INVALID);
}
END_TEST

START_TEST(test_env_getters)
{
    const char *text = NULL;
    int flag = -1;

    unsetenv("RMB_INFO");
    ck_assert_int_eq(util_env_get_bool("RMB_INFO", &flag), UTIL_OK);
    ck_assert_int_eq(flag, 0); /* the row's default */
    setenv("RMB_INFO", "yes", 1);
    ck_assert_int_eq(util_env_get_bool("RMB_INFO", &flag), UTIL_OK);
    ck_assert_int_eq(flag, 1);
    setenv("RMB_INFO", "maybe", 1);
    flag = 5;
    ck_assert_int_eq(util_env_get_bool("RMB_INFO", &flag), UTIL_ERR_INVALID);
    ck_assert_int_eq(flag, 5);
    unsetenv("RMB_INFO");
    ck_assert_int_eq(util_env_get_string("RMB_LOG_LEVEL", &text), UTIL_OK);
    ck_assert_str_eq(text, "warn");
    /* A name without a row, or a row of another type, is refused. */
    ck_assert_int_eq(util_env_get_bool("RMB_NO_SUCH_VARIABLE", &flag), UTIL_ERR_INVALID);
    ck_assert_int_eq(util_env_get_bool("RMB_LOG_LEVEL", &flag), UTIL_ERR_INVALID);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("core");
    SRunner *r = srunner_create(s);
    int failed;

    tcase_add_test(tc, test_status_strings);
    tcase_add_test(tc, test_parse_bool);
    tcase_add_test(tc, test_parse_size);
    tcase_add_test(tc, test_parse_int);
    tcase_add_test(tc, test_env_getters);
    suite_add_tcase(s, tc);
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
