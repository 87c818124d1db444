/* Unit tests for render/watch_render: watch's lines as text and as JSON, on a hand-built scan
 * (the lines themselves are run/watch_run's: test_watch_run.c). */
#include "facts_builder.h"

#include <unistd.h>

#include <jansson.h>

#include "render/watch_render.h"

/* What call writes to `out` (a memory stream), into text (free it). */
#define CAPTURE(text, call)                                                     \
        do {                                                                    \
                size_t len_ = 0;                                                \
                FILE *out = open_memstream(&(text), &len_);                     \
                assert_non_null(out);                                           \
                call;                                                           \
                fclose(out);                                                    \
        } while (0)

static void test_text_line(void **state)
{
        (void)state;
        struct watch_line wl = { .event = "error", .text = "GPU 0: no answer" };
        char *text = NULL;
        CAPTURE(text, watch_line_print(out, &wl, false, 1700000000.0));
        /* an RFC 3339 time, a space, the line */
        assert_non_null(strchr(text, 'T'));
        const char *sp = strchr(text, ' ');
        assert_non_null(sp);
        assert_string_equal(sp, " GPU 0: no answer\n");
        free(text);
}

static void test_json_line(void **state)
{
        (void)state;
        struct facts *f = killed_job(2, 1, true);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        struct watch_line wl = { .event = "alert", .g = &f->gpu->gpus[1], .l = &r->gpus[1], .text = "ALERT" };
        char *text = NULL;
        CAPTURE(text, watch_line_print(out, &wl, true, 1700000000.0));
        /* one line, one object */
        assert_ptr_equal(strchr(text, '\n'), text + strlen(text) - 1);
        json_error_t err;
        json_t *o = json_loads(text, 0, &err);
        assert_non_null(o);
        assert_string_equal(json_string_value(json_object_get(o, "event")), "alert");
        assert_int_equal(json_integer_value(json_object_get(o, "index")), 1);
        assert_string_equal(json_string_value(json_object_get(o, "verdict")), "orphaned-holders");
        assert_int_equal(json_integer_value(json_object_get(o, "ghost_bytes")), (json_int_t)(2 * GIB));
        assert_true(json_is_true(json_object_get(o, "ghost_confirmed")));
        json_t *pids = json_object_get(o, "pids");
        assert_true(json_is_array(pids) && json_array_size(pids) > 0);
        assert_string_equal(json_string_value(json_object_get(o, "message")), "ALERT");
        assert_null(json_object_get(o, "kernel_event"));
        json_decref(o);
        free(text);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_banner(void **state)
{
        (void)state;
        char *text = NULL;
        CAPTURE(text, watch_banner_print(out, 2000, 1024 * MIB, 30000, true));
        assert_string_equal(text, "watching every 2 s; alert when a confirmed ghost stays above 1024 MiB for 30 s "
                                  "(then run --exec)\n");
        free(text);
}

/* The counters of a watch's metrics: a result counts as a full or a light scan; driver_up
 * follows NVML's answer; the GPU's and the host's errors are counted (not the kernel's). */
static void test_count_sample(void **state)
{
        (void)state;
        struct facts *f = killed_job(2, 1, true);
        finish(f, NULL, 0);
        snprintf(f->gpu->backend, sizeof(f->gpu->backend), "nvml");
        struct scan_result *r = build(f, f);
        struct metrics_counters c = { 0 };
        struct sample s = { .res = r, .full = true };
        watch_count_sample(&c, &s);
        assert_int_equal(c.scans_full, 1);
        assert_true(c.driver_up);
        s = (struct sample){ .res = r, .errors = SCAN_ERR_GPU | SCAN_ERR_HOST | SCAN_ERR_KERNEL };
        watch_count_sample(&c, &s);
        assert_int_equal(c.scans_light, 1);
        assert_false(c.driver_up);
        assert_int_equal(c.scan_errors[METRICS_SRC_GPU], 1);
        assert_int_equal(c.scan_errors[METRICS_SRC_HOST], 1);
        assert_int_equal(c.scan_errors[METRICS_SRC_KERNEL], 0);
        s = (struct sample){ .res = NULL };
        watch_count_sample(&c, &s);
        assert_int_equal(c.scans_full + c.scans_light, 2);
        assert_false(c.driver_up);
        scan_result_free(r);
        facts_destroy(f);
}

/* After a published sample, --textfile gets DIR/ghostvram.prom with the counters; a directory
 * it cannot be written to is said in one line ("ghostvram watch: --textfile DIR: why"). */
static void test_sampled_textfile(void **state)
{
        (void)state;
        struct facts *f = killed_job(2, 1, true);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        char dir[] = "/tmp/gv-test-watchtf-XXXXXX", path[64];
        assert_non_null(mkdtemp(dir));
        struct watch_io io = { .textfile = dir };
        struct watch_opts o = { 0 };
        watch_io_attach(&io, &o);
        assert_ptr_equal(o.ctx, &io);
        assert_true(o.sampled == watch_sampled && o.emit && o.warn && o.heal);
        struct sample s = { .res = r, .full = true, .published = false };
        o.sampled(o.ctx, &s);
        snprintf(path, sizeof(path), "%s/ghostvram.prom", dir);
        assert_int_equal(access(path, F_OK), -1); /* nothing published: not written */
        s.published = true;
        o.sampled(o.ctx, &s);
        assert_int_equal(io.counters.scans_full, 2);
        FILE *in = fopen(path, "r");
        assert_non_null(in);
        char line[512];
        bool scans = false;
        while (fgets(line, sizeof(line), in))
                scans = scans || strncmp(line, "ghostvram_scans_total{mode=\"full\"} 2", 36) == 0;
        fclose(in);
        assert_true(scans);
        unlink(path);
        rmdir(dir);
        char *text = NULL;
        CAPTURE(text, (io.err = out, io.textfile = dir, o.sampled(o.ctx, &s)));
        char want[128];
        snprintf(want, sizeof(want), "ghostvram watch: --textfile %s: No such file or directory\n", dir);
        assert_string_equal(text, want);
        free(text);
        scan_result_free(r);
        facts_destroy(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_text_line),
                cmocka_unit_test(test_json_line),
                cmocka_unit_test(test_banner),
                cmocka_unit_test(test_count_sample),
                cmocka_unit_test(test_sampled_textfile),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
