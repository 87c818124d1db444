/* Unit tests for util/range: every form of the Monitoring Plugins threshold syntax, the
 * alert decision at and around each end, invalid input, and the performance-data form. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util/range.h"

struct probe {
        double value;
        bool alert;
};

static void check_range(const char *text, const struct probe *p, size_t n)
{
        struct range r;
        assert_int_equal(range_parse(text, &r), 0);
        for (size_t i = 0; i < n; i++) {
                if (range_alert(&r, p[i].value) != p[i].alert)
                        fail_msg("range '%s', value %g: expected %s", text, p[i].value, p[i].alert ? "alert" : "no alert");
        }
}

static void test_forms(void **state)
{
        (void)state;
        /* 10: outside 0..10 */
        const struct probe plain[] = { { -1, true }, { -0.001, true }, { 0, false }, { 5, false }, { 10, false },
                                       { 10.001, true }, { 1e12, true } };
        check_range("10", plain, sizeof(plain) / sizeof(plain[0]));
        /* 10: -> below 10 */
        const struct probe open_end[] = { { -5, true }, { 9.999, true }, { 10, false }, { 1e15, false } };
        check_range("10:", open_end, sizeof(open_end) / sizeof(open_end[0]));
        /* ~:10 -> above 10 */
        const struct probe open_start[] = { { -1e15, false }, { 0, false }, { 10, false }, { 10.5, true } };
        check_range("~:10", open_start, sizeof(open_start) / sizeof(open_start[0]));
        /* 10:20 -> outside */
        const struct probe between[] = { { 9, true }, { 10, false }, { 15, false }, { 20, false }, { 21, true } };
        check_range("10:20", between, sizeof(between) / sizeof(between[0]));
        /* @10:20 -> inside, ends included */
        const struct probe inside[] = { { 9.99, false }, { 10, true }, { 15, true }, { 20, true }, { 20.01, false } };
        check_range("@10:20", inside, sizeof(inside) / sizeof(inside[0]));
        /* @10 -> inside 0..10 */
        const struct probe inside0[] = { { -1, false }, { 0, true }, { 10, true }, { 11, false } };
        check_range("@10", inside0, sizeof(inside0) / sizeof(inside0[0]));
        /* 0: the default warning of check: anything above 0 */
        const struct probe zero[] = { { 0, false }, { 0.5, true }, { 64, true } };
        check_range("0", zero, sizeof(zero) / sizeof(zero[0]));
        /* negative and fractional ends */
        const struct probe neg[] = { { -6, true }, { -5, false }, { -1, false }, { 0, true } };
        check_range("-5:-1", neg, sizeof(neg) / sizeof(neg[0]));
        const struct probe frac[] = { { 1.4, true }, { 1.5, false }, { 2.5, false }, { 2.51, true } };
        check_range("1.5:2.5", frac, sizeof(frac) / sizeof(frac[0]));
        const struct probe inside_open[] = { { 4, false }, { 5, true }, { 1e9, true } };
        check_range("@5:", inside_open, sizeof(inside_open) / sizeof(inside_open[0]));

        struct range r;
        assert_int_equal(range_parse("~:10", &r), 0);
        assert_true(r.start_inf && !r.end_inf && !r.inside);
        assert_true(r.end == 10);
        assert_int_equal(range_parse("10:", &r), 0);
        assert_true(!r.start_inf && r.end_inf && r.start == 10);
        assert_int_equal(range_parse("@10:20", &r), 0);
        assert_true(r.inside && r.start == 10 && r.end == 20);
}

static void test_invalid(void **state)
{
        (void)state;
        static const char *const bad[] = {
                "", "@", "abc", "10:5", "1e3", "inf", "nan", "-inf:0", "~", "~:", "@~:", "10:20:30", ":10", "10::",
                " 10", "10 ", "0x10", "1.2.3", "-", "+", ".", "10:abc", "@@10", "~10", "10:~", "5:-5",
                "99999999999999999999999999999999999999999999999999999999999999999999",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct range r = { .start = 42, .end = 43 };
                if (range_parse(bad[i], &r) != -EINVAL)
                        fail_msg("'%s' was accepted", bad[i]);
                assert_true(r.start == 42 && r.end == 43); /* untouched on failure */
        }
        struct range r;
        assert_int_equal(range_parse(NULL, &r), -EINVAL);
}

static void test_format(void **state)
{
        (void)state;
        static const struct { const char *in, *out; } cases[] = {
                { "10", "10485760" }, { "0", "0" }, { "10:", "10485760:" }, { "~:10", "~:10485760" },
                { "10:20", "10485760:20971520" }, { "@10:20", "@10485760:20971520" }, { "@10", "@10485760" },
                { "0.5", "524288" }, { "-1:1", "-1048576:1048576" },
                /* beyond 2^53 still whole bytes, never 1.04858e+19 */
                { "10000000000000", "10485760000000000000" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct range r;
                char out[64];
                assert_int_equal(range_parse(cases[i].in, &r), 0);
                assert_int_equal(range_format(&r, 1024.0 * 1024.0, out, sizeof(out)), 0);
                assert_string_equal(out, cases[i].out);
        }
        struct range r;
        char tiny[4];
        assert_int_equal(range_parse("10:20", &r), 0);
        assert_int_equal(range_format(&r, 1024.0 * 1024.0, tiny, sizeof(tiny)), -ENOSPC);
        /* unscaled, the form reads back to the same range */
        char out[64];
        struct range back;
        assert_int_equal(range_format(&r, 1.0, out, sizeof(out)), 0);
        assert_string_equal(out, "10:20");
        assert_int_equal(range_parse(out, &back), 0);
        assert_true(back.start == r.start && back.end == r.end && back.inside == r.inside &&
                    back.start_inf == r.start_inf && back.end_inf == r.end_inf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_forms),
                cmocka_unit_test(test_invalid),
                cmocka_unit_test(test_format),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
