/* run/top_kill: the reclaim command top runs for k, and what its JSON answer means. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "run/top_kill.h"
#include "util/strf.h"

static void test_args(void **state)
{
        (void)state;
        char pid[16];
        const char *a[TOP_KILL_ARGS];
        struct top_kill k = { .pid = 4242, .sig = SIGTERM, .proc_root = "/proc" };
        size_t n = top_kill_args(&k, pid, a);
        char joined[512] = "";
        for (size_t i = 0; i < n; i++)
                snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", i ? " " : "", a[i]);
        assert_string_equal(joined, "ghostvram reclaim --pid 4242 --grace none --wait 3s --confirm 200ms --yes --json "
                                    "--signal TERM");
        assert_null(a[n]);
        /* KILL, forced, another /proc and NVML library: each said */
        k = (struct top_kill){ .pid = 7, .sig = SIGKILL, .force = true, .proc_root = "/x/proc", .nvml_lib = "/l/n.so" };
        n = top_kill_args(&k, pid, a);
        joined[0] = '\0';
        for (size_t i = 0; i < n; i++)
                snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", i ? " " : "", a[i]);
        assert_string_equal(joined, "ghostvram reclaim --pid 7 --grace none --wait 3s --confirm 200ms --yes --json "
                                    "--signal KILL --force --proc /x/proc --nvml-lib /l/n.so");
        assert_true(n < TOP_KILL_ARGS);
}

static enum top_kill_outcome judge(const struct top_kill *k, const char *json, int rc, const char *want_text)
{
        struct top_kill_result r;
        assert_int_equal(top_kill_judge(k, json, json ? strlen(json) : 0, rc, &r), 0);
        assert_non_null(r.text);
        if (want_text && !strstr(r.text, want_text))
                fail_msg("no '%s' in: %s", want_text, r.text);
        enum top_kill_outcome o = r.outcome;
        str_clear(&r.text);
        return o;
}

static void test_judge(void **state)
{
        (void)state;
        struct top_kill k = { .pid = 31301, .sig = SIGTERM };
        /* ended by SIGTERM */
        assert_int_equal(judge(&k,
                               "{\"plan\":{\"targets\":[{\"pid\":31301}],\"skipped\":[]},\"actions\":[{\"pid\":31301,"
                               "\"comm\":\"python\",\"signal\":\"TERM\",\"result\":\"terminated\",\"seconds\":0.01,"
                               "\"detail\":null}],\"summary\":\"Memory recovered: 1 process ended.\",\"exit_status\":0}",
                               0, "PID 31301 (python): terminated after 0.01 s (signals: SIGTERM)"),
                         TOP_KILL_ENDED);
        /* it ignores SIGTERM: still there, k again sends SIGKILL */
        assert_int_equal(judge(&k,
                               "{\"plan\":{\"skipped\":[]},\"actions\":[{\"pid\":31301,\"comm\":\"python\",\"signal\":"
                               "\"TERM\",\"result\":\"survived\",\"seconds\":3,\"detail\":\"still there after its "
                               "signal (state S); no SIGKILL was sent (--grace none)\"}],\"exit_status\":1}",
                               1, "press k again to send SIGKILL"),
                         TOP_KILL_STILL_THERE);
        /* a live owner: refused, F asks again */
        const char *live = "{\"plan\":{\"skipped\":[{\"pid\":31301,\"rule\":\"live-owner\",\"reason\":\"NVML lists "
                           "it alive on GPU 0: a running job\"}]},\"actions\":[],\"exit_status\":3}";
        assert_int_equal(judge(&k, live, 3, "Press F to send SIGTERM anyway"), TOP_KILL_NEEDS_FORCE);
        /* the same with --force already: no third question */
        struct top_kill forced = k;
        forced.force = true;
        assert_int_equal(judge(&forced, live, 3, "PID 31301 was not signalled: NVML lists it alive"), TOP_KILL_REFUSED);
        /* PID 1: never */
        struct top_kill one = { .pid = 1, .sig = SIGTERM };
        assert_int_equal(judge(&one,
                               "{\"plan\":{\"skipped\":[{\"pid\":1,\"rule\":\"pid-1\",\"reason\":\"PID 1 (init) is "
                               "never signalled\"}]},\"actions\":[],\"exit_status\":3}",
                               3, "PID 1 (init) is never signalled"),
                         TOP_KILL_REFUSED);
        /* another process's entries are not ours */
        assert_int_equal(judge(&k,
                               "{\"plan\":{\"skipped\":[{\"pid\":9,\"rule\":\"live-owner\",\"reason\":\"x\"}]},"
                               "\"actions\":[],\"summary\":\"nothing\",\"exit_status\":0}",
                               0, "nothing"),
                         TOP_KILL_FAILED);
        /* reclaim refused the command line, or wrote no JSON at all */
        assert_int_equal(judge(&k, "{\"error\":\"--yes is refused with --proc\",\"exit_status\":2}", 2,
                               "--yes is refused with --proc"),
                         TOP_KILL_FAILED);
        assert_int_equal(judge(&k, "not json", 127, "exited 127 without a report"), TOP_KILL_FAILED);
        assert_int_equal(judge(&k, NULL, 1, "exited 1 without a report"), TOP_KILL_FAILED);
}

/* The PID top asked about still names the same process: its start time read again. */
static void test_same_process(void **state)
{
        (void)state;
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)getpid());
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        unsigned long long ticks = 0;
        const char *rp = strrchr(buf, ')');
        assert_non_null(rp);
        assert_int_equal(sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &ticks), 1);
        struct top_kill k = { .pid = getpid(), .start_ticks = ticks, .sig = SIGTERM };
        assert_true(top_kill_same_process(&k, "/proc"));
        k.start_ticks = ticks + 1;              /* the number went to another process */
        assert_false(top_kill_same_process(&k, "/proc"));
        k.start_ticks = 0;                      /* not known: reclaim's own check decides */
        assert_true(top_kill_same_process(&k, "/proc"));
        k = (struct top_kill){ .pid = 0x3ffffffe, .start_ticks = 1, .sig = SIGTERM }; /* no such process */
        assert_false(top_kill_same_process(&k, "/proc"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_args),
                cmocka_unit_test(test_judge),
                cmocka_unit_test(test_same_process),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
