/* Unit tests for act/poke's pure parts: the child's line written and read back (and garbage
 * refused), and the verdict from the poke's result and the memory before and after. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "act/poke.h"

#define MIB ((uint64_t)1 << 20)

static void test_line_round_trip(void **state)
{
        (void)state;
        struct poke_steps s = { .done = POKE_STEP_CONTEXT, .failed = POKE_STEP_CONTEXT, .cu_result = 2 };
        snprintf(s.error, sizeof(s.error), "out of\nmemory");
        char line[512];
        poke_steps_format(&s, line, sizeof(line));
        assert_string_equal(line, "poke done=3 failed=3 result=2 error=out of memory\n");
        char buf[600];
        snprintf(buf, sizeof(buf), "some noise\n%s", line);
        struct poke_steps r;
        assert_int_equal(poke_steps_parse(buf, strlen(buf), &r), 0);
        assert_int_equal(r.done, 3);
        assert_int_equal(r.failed, POKE_STEP_CONTEXT);
        assert_int_equal(r.cu_result, 2);
        assert_string_equal(r.error, "out of memory");
        assert_string_equal(poke_step_name(r.failed), "cuCtxCreate");
}

static void test_line_garbage(void **state)
{
        (void)state;
        struct poke_steps r;
        static const char *const bad[] = { "", "poke", "poke done=x failed=1 result=0 error=", "poke done=99 failed=-1 result=0 error=",
                                           "poke done=1 failed=42 result=0 error=" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(poke_steps_parse(bad[i], strlen(bad[i]), &r), -EBADMSG);
}

static struct poke_result ran(unsigned done, int failed)
{
        struct poke_result p = { .ran = true, .steps_known = true };
        p.steps.done = done;
        p.steps.failed = failed;
        return p;
}

static struct recovery_gpu mem(uint64_t before, uint64_t after)
{
        struct recovery_gpu g = { .before_known = true, .after_known = true, .before = before, .after = after };
        return g;
}

static void test_verdicts(void **state)
{
        (void)state;
        uint64_t freed;
        struct poke_result all = ran(POKE_STEP_COUNT, -1);
        struct recovery_gpu g = mem(1536 * MIB, 0);
        assert_int_equal(poke_judge(&all, &g, &freed), POKE_GAVE_BACK);
        assert_int_equal(freed, 1536 * MIB);
        g = mem(1536 * MIB, 1536 * MIB - 2 * MIB); /* noise: the poke's own 2 MiB */
        assert_int_equal(poke_judge(&all, &g, &freed), POKE_NOTHING);
        assert_int_equal(freed, 2 * MIB);
        g = mem(100 * MIB, 200 * MIB);             /* grew: nothing given back */
        assert_int_equal(poke_judge(&all, &g, &freed), POKE_NOTHING);
        assert_int_equal(freed, 0);
        struct poke_result init = ran(POKE_STEP_INIT, POKE_STEP_INIT);
        g = mem(1536 * MIB, 1536 * MIB);
        assert_int_equal(poke_judge(&init, &g, &freed), POKE_FAILED);
        struct poke_result nolib = ran(0, POKE_STEP_LOAD);
        assert_int_equal(poke_judge(&nolib, &g, &freed), POKE_NO_LIBRARY);
        struct poke_result hung = { .ran = true, .timed_out = true };
        assert_int_equal(poke_judge(&hung, &g, &freed), POKE_HUNG);
        g.after_known = false;
        assert_int_equal(poke_judge(&all, &g, &freed), POKE_UNMEASURED);
        assert_int_equal(poke_judge(&all, NULL, &freed), POKE_UNMEASURED);
        assert_string_equal(poke_verdict_name(POKE_GAVE_BACK), "gave-back");
        assert_string_equal(poke_verdict_name(POKE_NOTHING), "nothing-changed");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_line_round_trip),
                cmocka_unit_test(test_line_garbage),
                cmocka_unit_test(test_verdicts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
