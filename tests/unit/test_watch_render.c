/* Unit tests for render/watch_render: watch's lines as text and as JSON, on a hand-built scan
 * (the lines themselves are run/watch_run's: test_watch_run.c). */
#include "facts_builder.h"

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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_text_line),
                cmocka_unit_test(test_json_line),
                cmocka_unit_test(test_banner),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
