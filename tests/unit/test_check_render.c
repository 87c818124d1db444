/* Unit tests for render/check_render: the plugin's state per GPU, the status line, the
 * performance data and the long output, on hand-built scans. */
#include "facts_builder.h"

#include <errno.h>

#include "render/check_render.h"

static struct check_thresholds thresholds(const char *w, const char *c)
{
        struct check_thresholds t = { .have_warn = w != NULL, .have_crit = c != NULL };
        if (w)
                assert_int_equal(range_parse(w, &t.warn), 0);
        if (c)
                assert_int_equal(range_parse(c, &t.crit), 0);
        return t;
}

/* Render and return the output (static buffer) and the state. */
static const char *render(const struct scan_result *r, const struct check_thresholds *t, enum plugin_state *st)
{
        static char out[8192];
        struct buf b = BUF_INIT(0);
        assert_int_equal(check_render(&b, r, t, st), 0);
        snprintf(out, sizeof(out), "%s", buf_str(&b));
        buf_free(&b);
        return out;
}

/* GPU 1 of 2 holds a confirmed 2 GiB ghost of a killed job. */
static struct facts *two_gpus_ghost_on_1(void)
{
        struct facts *f = killed_job(2, 1, true);
        finish(f, NULL, 0);
        return f;
}

static void test_states_and_line(void **state)
{
        (void)state;
        struct facts *f = two_gpus_ghost_on_1();
        struct scan_result *r = build(f, f);
        enum plugin_state st;

        struct check_thresholds t = thresholds("0", "1024");
        const char *out = render(r, &t, &st);
        assert_int_equal(st, PLUGIN_CRITICAL);
        assert_int_equal(check_gpu_state(&r->gpus[0], &t), PLUGIN_OK);
        assert_int_equal(check_gpu_state(&r->gpus[1], &t), PLUGIN_CRITICAL);
        assert_true(check_ghost_mib(&r->gpus[1]) == 2048.0);
        const char *line1 = "GHOSTVRAM CRITICAL - GPU 1: 2048 MiB ghost (orphaned-holders, PIDs 31300 31301 31302); 1 GPU ok | ";
        assert_memory_equal(out, line1, strlen(line1));
        /* performance data: per GPU, bytes, thresholds converted from MiB */
        assert_non_null(strstr(out, "| 'gpu0_ghost'=0B;0;1073741824;0;85899345920 'gpu0_used'=0B;;;0;85899345920 "
                                    "'gpu0_listed'=0B;;;0;85899345920 'gpu0_foreign'=0B;;;0;85899345920 "
                                    "'gpu0_unattributed'=0B;;;0;85899345920 'gpu0_freeing'=0B;;;0;85899345920 "
                                    "'gpu0_reserved'=536870912B;;;0;85899345920 "
                                    "'gpu1_ghost'=2147483648B;0;1073741824;0;85899345920 'gpu1_used'=2147483648B;;;0;85899345920"));
        /* the status line ends with the perfdata; the long output names the next step */
        const char *nl = strchr(out, '\n');
        assert_non_null(nl);
        assert_non_null(strstr(nl, "\nGPU 1 orphaned-holders: 2048 MiB ghost held by 2 orphaned processes of a dead job. Next: free it safely"));
        assert_null(strchr(nl, '|'));   /* a '|' in long output would start performance data */
        assert_null(strstr(nl, "GPU 0 "));

        t = thresholds("0", "4096");
        render(r, &t, &st);
        assert_int_equal(st, PLUGIN_WARNING);
        out = render(r, &t, &st);
        assert_memory_equal(out, "GHOSTVRAM WARNING - GPU 1: 2048 MiB", 35);

        t = thresholds("4096", "8192");
        out = render(r, &t, &st);
        assert_int_equal(st, PLUGIN_OK);
        assert_memory_equal(out, "GHOSTVRAM OK - 2 GPUs ok | ", 27);

        /* inside ranges: alert when the ghost is between 1 and 3 GiB */
        t = thresholds("@1:1023", "@1024:3072");
        render(r, &t, &st);
        assert_int_equal(st, PLUGIN_CRITICAL);
        t = thresholds("@1024:3072", "@4096:");
        render(r, &t, &st);
        assert_int_equal(st, PLUGIN_WARNING);
        assert_int_equal(check_gpu_state(&r->gpus[0], &t), PLUGIN_OK);

        /* no thresholds: a ghost alone is OK, and the perfdata has empty warn/crit */
        t = thresholds(NULL, NULL);
        out = render(r, &t, &st);
        assert_int_equal(st, PLUGIN_OK);
        assert_non_null(strstr(out, "'gpu1_ghost'=2147483648B;;;0;85899345920"));

        /* --gpu 0: only GPU 0 counts */
        r->only_gpu = 0;
        t = thresholds("0", "1024");
        out = render(r, &t, &st);
        assert_int_equal(st, PLUGIN_OK);
        assert_memory_equal(out, "GHOSTVRAM OK - GPU 0: ok | 'gpu0_ghost'=0B;", 41);
        assert_null(strstr(out, "gpu1_"));
        r->only_gpu = 7;
        out = render(r, &t, &st);
        assert_int_equal(st, PLUGIN_UNKNOWN);
        assert_string_equal(out, "GHOSTVRAM UNKNOWN - no such GPU\n");
        scan_result_free(r);
        facts_destroy(f);
}

static void test_unconfirmed_is_ok(void **state)
{
        (void)state;
        struct facts *f = two_gpus_ghost_on_1();
        struct facts *before = facts_new(2, true, 0); /* the earlier sample had no ghost */
        struct scan_result *r = build(f, before);
        assert_false(r->gpus[1].ghost_confirmed);
        struct check_thresholds t = thresholds("0", "1024");
        enum plugin_state st;
        const char *out = render(r, &t, &st);
        assert_int_equal(st, PLUGIN_OK);
        assert_non_null(strstr(out, "'gpu1_ghost'=0B;0;1073741824;0;85899345920"));
        scan_result_free(r);
        facts_destroy(f);
        facts_destroy(before);
}

/* A teardown is OK, but named as freeing (never counted among the GPUs "ok"), with its bytes in
 * gpuN_freeing and none in the ghost. */
static void test_freeing_is_named(void **state)
{
        (void)state;
        struct facts *before = facts_new(2, true, 0);
        gpu_used(before, 0, 2 * GIB);
        nvml_proc(before, 0, 31300, 2 * GIB);
        finish(before, NULL, 0);
        struct facts *now = facts_new(2, true, 0);
        gpu_used(now, 0, 1536 * MIB);
        nvml_proc(now, 0, 31300, 1536 * MIB);
        finish(now, NULL, 0);
        struct scan_result *r = build(now, before);
        struct check_thresholds t = thresholds("0", "1024");
        enum plugin_state st;
        const char *out = render(r, &t, &st);
        assert_int_equal(st, PLUGIN_OK);
        const char *line = "GHOSTVRAM OK - GPU 0: 1536 MiB freeing (the driver is releasing it; not a ghost); 1 GPU ok | ";
        assert_memory_equal(out, line, strlen(line));
        assert_non_null(strstr(out, "'gpu0_ghost'=0B;"));
        assert_non_null(strstr(out, "'gpu0_freeing'=1610612736B;;;0;85899345920"));
        r->only_gpu = 0;
        out = render(r, &t, &st);
        line = "GHOSTVRAM OK - GPU 0: 1536 MiB freeing (the driver is releasing it; not a ghost) | ";
        assert_memory_equal(out, line, strlen(line));
        scan_result_free(r);
        facts_destroy(before);
        facts_destroy(now);
}

static void test_lost_unknown_and_hostile_text(void **state)
{
        (void)state;
        struct facts *f = facts_new(3, true, 0);
        f->gpu->gpus[1].status = GPU_LOST;
        f->gpu->gpus[1].memory_known = false;
        f->gpu->gpus[2].status = GPU_TIMEOUT;
        f->gpu->gpus[2].memory_known = false;
        /* the driver's message names the GPU: the line says "GPU 2:" once */
        snprintf(f->gpu->gpus[2].status_message, sizeof(f->gpu->gpus[2].status_message),
                 "GPU 2: driver said a|b\nnext line\x1b[31m");
        struct scan_result *r = build(f, NULL);
        struct check_thresholds t = thresholds("0", "1024");
        enum plugin_state st;
        const char *out = render(r, &t, &st);
        assert_int_equal(st, PLUGIN_CRITICAL);
        assert_int_equal(check_gpu_state(&r->gpus[1], &t), PLUGIN_CRITICAL);
        assert_int_equal(check_gpu_state(&r->gpus[2], &t), PLUGIN_UNKNOWN);
        const char *want = "GHOSTVRAM CRITICAL - GPU 1: lost (the driver cannot reach it); "
                           "GPU 2: not inspected (driver said a\xc2\xa6" "b next line [31m); 1 GPU ok | 'gpu0_ghost'=0B;";
        assert_memory_equal(out, want, strlen(want));
        /* the first line carries no raw control character and only one '|' */
        const char *nl = strchr(out, '\n');
        size_t pipes = 0;
        for (const char *p = out; p < nl; p++) {
                assert_true((unsigned char)*p >= 0x20);
                pipes += *p == '|';
        }
        assert_int_equal(pipes, 1);
        scan_result_free(r);

        /* only the unknown GPU: UNKNOWN */
        r = build(f, NULL);
        r->only_gpu = 2;
        render(r, &t, &st);
        assert_int_equal(st, PLUGIN_UNKNOWN);
        scan_result_free(r);

        /* no driver */
        f->gpu->driver_present = false;
        snprintf(f->gpu->error, sizeof(f->gpu->error), "no NVIDIA driver on this host");
        r = build(f, NULL);
        out = render(r, &t, &st);
        assert_int_equal(st, PLUGIN_UNKNOWN);
        assert_string_equal(out, "GHOSTVRAM UNKNOWN - no NVIDIA driver on this host\n");
        scan_result_free(r);
        facts_destroy(f);
}

static void test_worse(void **state)
{
        (void)state;
        assert_int_equal(plugin_state_worse(PLUGIN_OK, PLUGIN_UNKNOWN), PLUGIN_UNKNOWN);
        assert_int_equal(plugin_state_worse(PLUGIN_UNKNOWN, PLUGIN_WARNING), PLUGIN_WARNING);
        assert_int_equal(plugin_state_worse(PLUGIN_CRITICAL, PLUGIN_UNKNOWN), PLUGIN_CRITICAL);
        assert_int_equal(plugin_state_worse(PLUGIN_WARNING, PLUGIN_CRITICAL), PLUGIN_CRITICAL);
        assert_int_equal(plugin_state_worse(PLUGIN_OK, PLUGIN_OK), PLUGIN_OK);
        assert_string_equal(plugin_state_name(PLUGIN_WARNING), "WARNING");
        struct buf b = BUF_INIT(0);
        assert_int_equal(check_render_unknown(&b, "no result within 10 s | hung"), 0);
        assert_string_equal(buf_str(&b), "GHOSTVRAM UNKNOWN - no result within 10 s \xc2\xa6 hung\n");
        buf_free(&b);
}

/* check_print writes what check_render makes, and the state; check_print_unknown the line of
 * check_render_unknown. */
static void test_print(void **state)
{
        (void)state;
        struct facts *f = two_gpus_ghost_on_1();
        struct scan_result *r = build(f, f);
        struct check_thresholds t = thresholds("0", "1024");
        enum plugin_state st = PLUGIN_OK, printed = PLUGIN_OK;
        const char *want = render(r, &t, &st);
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);
        assert_non_null(out);
        assert_int_equal(check_print(out, r, &t, &printed), 0);
        check_print_unknown(out, "no driver");
        fclose(out);
        assert_int_equal(printed, st);
        assert_memory_equal(text, want, strlen(want));
        assert_string_equal(text + strlen(want), "GHOSTVRAM UNKNOWN - no driver\n");
        free(text);
        scan_result_free(r);
        facts_destroy(f);
}

/* The thresholds' ends become whole bytes as the performance data prints them; an end that
 * cannot be one (2^64 bytes or more, a non-zero one under half a byte) is refused. */
static void test_range_in_bytes(void **state)
{
        (void)state;
        struct range r;
        assert_int_equal(range_parse("0.00000072:10", &r), 0); /* 0.75 byte: 1 byte */
        assert_int_equal(check_range_in_bytes(&r), 0);
        assert_true(r.start * 1048576.0 == 1.0);
        assert_true(r.end == 10.0);
        assert_int_equal(range_parse("1.5000002", &r), 0); /* 1572864.2 bytes: rounded down */
        assert_int_equal(check_range_in_bytes(&r), 0);
        assert_true(r.end * 1048576.0 == 1572864.0);
        assert_int_equal(range_parse("~:20000000000000", &r), 0); /* 2^64 bytes is 1.76e13 MiB */
        assert_int_equal(check_range_in_bytes(&r), -ERANGE);
        assert_int_equal(range_parse("0.0000001", &r), 0); /* 0.1 byte: not a byte, not 0 */
        assert_int_equal(check_range_in_bytes(&r), -ERANGE);
        assert_int_equal(range_parse("@10:", &r), 0);      /* an open end stays open */
        assert_int_equal(check_range_in_bytes(&r), 0);
        assert_true(r.end_inf && r.start == 10.0);
}

/* check_report's output to a memory stream, into text (free it): the state. */
static int report(struct scan_result *r, const struct check_run_opts *o, char **text)
{
        size_t len = 0;
        FILE *out = open_memstream(text, &len);
        assert_non_null(out);
        struct check_thresholds t = thresholds("0", "1024");
        int st = check_report(out, r, o, &t);
        fclose(out);
        return st;
}

/* --gpu: an index the host lacks, a bus id it lacks, and one it has (only that GPU counts). */
/* The default thresholds: WARNING on any confirmed ghost, CRITICAL above 1 GiB. */
static void test_thresholds_default(void **state)
{
        (void)state;
        struct check_thresholds t;
        check_thresholds_default(&t);
        assert_true(t.have_warn && t.have_crit);
        assert_false(range_alert(&t.warn, 0));
        assert_true(range_alert(&t.warn, 1));
        assert_false(range_alert(&t.crit, 1024));
        assert_true(range_alert(&t.crit, 1025));
}

static void test_report_gpu(void **state)
{
        (void)state;
        struct facts *f = two_gpus_ghost_on_1();
        struct scan_result *r = build(f, f);
        char *text = NULL;
        struct check_run_opts o = { .gpu_spec = "5", .only_gpu = 5 };
        assert_int_equal(report(r, &o, &text), PLUGIN_UNKNOWN);
        assert_string_equal(text, "GHOSTVRAM UNKNOWN - --gpu 5: this host has 2 GPUs\n");
        free(text);
        o = (struct check_run_opts){ .gpu_spec = "0000:99:00.0", .only_gpu = -1 };
        assert_int_equal(report(r, &o, &text), PLUGIN_UNKNOWN);
        assert_string_equal(text, "GHOSTVRAM UNKNOWN - --gpu 0000:99:00.0: no such GPU on this host\n");
        free(text);
        o = (struct check_run_opts){ .gpu_spec = "0000:1b:00.0", .only_gpu = -1 }; /* GPU 0: no ghost */
        assert_int_equal(report(r, &o, &text), PLUGIN_OK);
        assert_int_equal(r->only_gpu, 0);
        assert_non_null(strstr(text, "GHOSTVRAM OK - GPU 0: ok | 'gpu0_ghost'=0B;"));
        assert_null(strstr(text, "gpu1_"));
        free(text);
        o = (struct check_run_opts){ .only_gpu = -1 };
        assert_int_equal(report(r, &o, &text), PLUGIN_CRITICAL);
        free(text);
        f->gpu->driver_present = false; /* no driver: no GPU to look a bus id up in */
        o = (struct check_run_opts){ .gpu_spec = "0000:1b:00.0", .only_gpu = -1 };
        assert_int_equal(report(r, &o, &text), PLUGIN_UNKNOWN);
        assert_string_equal(text, "GHOSTVRAM UNKNOWN - --gpu 0000:1b:00.0: no such GPU on this host\n");
        free(text);
        scan_result_free(r);
        facts_destroy(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_states_and_line),
                cmocka_unit_test(test_unconfirmed_is_ok),
                cmocka_unit_test(test_freeing_is_named),
                cmocka_unit_test(test_lost_unknown_and_hostile_text),
                cmocka_unit_test(test_worse),
                cmocka_unit_test(test_print),
                cmocka_unit_test(test_range_in_bytes),
                cmocka_unit_test(test_report_gpu),
                cmocka_unit_test(test_thresholds_default),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
