/* Unit tests for run/watch_run: watch's use case called without argv, on hand-built samples
 * (facts_builder.h) fed one per cycle, with the heal and the output caught. The command itself
 * runs against the simulated driver in t_watch_*.sh. */
#define _GNU_SOURCE 1 /* asprintf */
#include "facts_builder.h"

#include <errno.h>
#include <unistd.h>

#include "collect/xid.h"
#include "run/watch_run.h"
#include "util/deadline.h"

#define MAX_CYCLES 16
#define MAX_LINES 64

struct script {
        struct scan_result *res[MAX_CYCLES];    /* NULL: a cycle with an error and no result */
        unsigned errors[MAX_CYCLES];
        const struct xid_event *xid[MAX_CYCLES];
        size_t n, next;
        char *lines[MAX_LINES];                 /* "EVENT|TEXT" */
        size_t n_lines;
        char warns[1024];
        unsigned heals, sampled;
        int heal_rc;
        const char *heal_json;
        int end;                                /* what the sampler says after the script (-EINTR) */
};

static int next(void *ctx, struct sample *s)
{
        struct script *sc = ctx;
        if (sc->next == sc->n)
                return sc->end ? sc->end : -EINTR; /* the end of the script: as a stop signal */
        size_t i = sc->next++;
        *s = (struct sample){ .res = sc->res[i], .published = sc->res[i] != NULL, .errors = sc->errors[i],
                              .why = sc->res[i] ? "" : "the driver did not answer", .new_events = sc->xid[i],
                              .n_new_events = sc->xid[i] ? 1 : 0, .kernel_error = "", .finished = T0 };
        return 0;
}

static void emit(void *ctx, const struct watch_line *l)
{
        struct script *sc = ctx;
        assert_true(sc->n_lines < MAX_LINES);
        char *s = NULL;
        assert_true(asprintf(&s, "%s|%s", l->event, l->text) > 0);
        sc->lines[sc->n_lines++] = s;
        /* a GPU's line names its GPU and ledger; xid and error name none */
        bool gpu_line = strcmp(l->event, "xid") && strcmp(l->event, "error");
        assert_true(gpu_line == (l->g != NULL && l->l != NULL));
        assert_true(!strcmp(l->event, "xid") == (l->xid != NULL));
}

static void warn(void *ctx, const char *fmt, ...)
{
        struct script *sc = ctx;
        va_list ap;
        va_start(ap, fmt);
        size_t len = strlen(sc->warns);
        vsnprintf(sc->warns + len, sizeof(sc->warns) - len, fmt, ap);
        va_end(ap);
}

static int heal(void *ctx, unsigned gpu, struct buf *out)
{
        struct script *sc = ctx;
        sc->heals++;
        assert_int_equal(gpu, 1);
        buf_append(out, sc->heal_json, strlen(sc->heal_json));
        return sc->heal_rc;
}

static void sampled(void *ctx, const struct sample *s)
{
        (void)s;
        ((struct script *)ctx)->sampled++;
}

static bool no_wait(void *ctx, uint64_t ms)
{
        (void)ctx;
        (void)ms;
        return true;
}

static struct watch_opts opts(struct script *sc)
{
        return (struct watch_opts){ .interval_ms = 1000, .threshold_bytes = 1024 * MIB, .for_ms = 0,
                                    .only_gpu = -1, .exec_timeout_ms = 30000, .reclaim_every_ms = 600000,
                                    .emit = emit, .warn = warn, .heal = heal, .sampled = sampled, .next = next,
                                    .wait = no_wait, .ctx = sc };
}

/* GPU 1 of 2 with the killed job's 2 GiB ghost (confirmed), or both GPUs clean. */
static struct facts *ghost_f, *clean_f;

static void add(struct script *sc, bool ghost)
{
        sc->res[sc->n++] = build(ghost ? ghost_f : clean_f, ghost ? ghost_f : clean_f);
}

static int setup(void **state)
{
        (void)state;
        ghost_f = killed_job(2, 1, true);
        finish(ghost_f, NULL, 0);
        clean_f = facts_new(2, true, 0);
        finish(clean_f, NULL, 0);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        facts_destroy(ghost_f);
        facts_destroy(clean_f);
        return 0;
}

static void script_free(struct script *sc)
{
        for (size_t i = 0; i < sc->n; i++)
                scan_result_free(sc->res[i]);
        for (size_t i = 0; i < sc->n_lines; i++)
                free(sc->lines[i]);
}

static void assert_line(const struct script *sc, size_t i, const char *event, const char *text_part)
{
        assert_true(i < sc->n_lines);
        size_t n = strlen(event);
        if (strncmp(sc->lines[i], event, n) != 0 || sc->lines[i][n] != '|' || !strstr(sc->lines[i] + n, text_part))
                fail_msg("line %zu is '%s', not %s with '%s'", i, sc->lines[i], event, text_part);
}

static const char HEALED[] = "{\"gpus\":[{\"index\":1,\"freed_bytes\":2147483648,\"recovery_seconds\":0.5}],"
                             "\"actions\":[{\"pid\":31301,\"signals\":[\"SIGTERM\"]},{\"pid\":31302,\"signals\":[]}]}";

/* clean, ghost ×3, clean: state lines, one alert, one heal (the pace), one clear */
static void test_alert_heal_clear(void **state)
{
        (void)state;
        struct script sc = { .heal_json = HEALED };
        add(&sc, false);
        for (int i = 0; i < 3; i++)
                add(&sc, true);
        add(&sc, false);
        struct watch_opts o = opts(&sc);
        o.heal_enabled = true;
        struct watch_result res;
        assert_int_equal(watch_run(&o, NULL, &res), 0);
        assert_int_equal(res.cycles, 5);
        assert_true(res.any_ok);
        assert_int_equal(res.heals, 1);
        assert_int_equal(sc.heals, 1);
        assert_int_equal(sc.sampled, 5);
        assert_int_equal(sc.n_lines, 7);
        assert_line(&sc, 0, "state", "GPU 0 ok, ghost 0 MiB");
        assert_line(&sc, 1, "state", "GPU 1 ok, ghost 0 MiB");
        assert_line(&sc, 2, "state", "GPU 1 orphaned-holders, ghost 2048 MiB (was ok, 0 MiB) PIDs 31300 31301 31302");
        assert_line(&sc, 3, "alert", "ALERT GPU 1: 2048 MiB ghost above 1024 MiB for 0 s (orphaned-holders, PIDs 31300 31301 31302)");
        assert_line(&sc, 4, "reclaim", "RECLAIM GPU 1: 2048 MiB freed in 0.500 s; signalled PID 31301");
        assert_line(&sc, 5, "state", "GPU 1 ok, ghost 0 MiB (was orphaned-holders, 2048 MiB)");
        assert_line(&sc, 6, "clear", "CLEAR GPU 1: ghost 0 MiB, not above 1024 MiB any more (ok)");
        assert_string_equal(sc.warns, "");
        script_free(&sc);
}

/* A heal that could not act says so (exit 3), and --count ends the run before the script. */
static void test_heal_fails_and_count(void **state)
{
        (void)state;
        struct script sc = { .heal_json = "not json", .heal_rc = 3 };
        for (int i = 0; i < 4; i++)
                add(&sc, true);
        struct watch_opts o = opts(&sc);
        o.heal_enabled = true;
        o.count = 2;
        struct watch_result res;
        assert_int_equal(watch_run(&o, NULL, &res), 0);
        assert_int_equal(res.cycles, 2);
        assert_int_equal(sc.next, 2);
        assert_int_equal(sc.n_lines, 4);
        assert_line(&sc, 3, "reclaim", "RECLAIM GPU 1: reclaim exited 3, 0 MiB freed (it could not act");
        script_free(&sc);
}

/* Not above the threshold, or not for long enough: state lines only, no alert, no heal. */
static void test_threshold_and_for(void **state)
{
        (void)state;
        struct script sc = { .heal_json = HEALED };
        add(&sc, true);
        add(&sc, true);
        struct watch_opts o = opts(&sc);
        o.heal_enabled = true;
        o.threshold_bytes = 2048 * MIB; /* the ghost is 2048 MiB: not above */
        struct watch_result res;
        assert_int_equal(watch_run(&o, NULL, &res), 0);
        assert_int_equal(sc.n_lines, 2);
        assert_int_equal(sc.heals, 0);

        struct script sc2 = { .heal_json = HEALED };
        add(&sc2, true);
        add(&sc2, true);
        o = opts(&sc2);
        o.for_ms = 3600000;
        assert_int_equal(watch_run(&o, NULL, &res), 0);
        assert_int_equal(sc2.n_lines, 2);
        assert_line(&sc2, 1, "state", "GPU 1 orphaned-holders, ghost 2048 MiB PIDs 31300 31301 31302");
        script_free(&sc);
        script_free(&sc2);
}

/* A GPU that did not answer keeps its alert (no clear); --gpu watches one GPU only. */
static void test_uninspected_keeps_alert(void **state)
{
        (void)state;
        struct script sc = { 0 };
        add(&sc, true);
        add(&sc, false);
        sc.res[1]->gpus[1].inspected = false;
        add(&sc, false);
        struct watch_opts o = opts(&sc);
        o.only_gpu = 1;
        struct watch_result res;
        assert_int_equal(watch_run(&o, NULL, &res), 0);
        assert_int_equal(sc.n_lines, 4);
        assert_line(&sc, 0, "state", "GPU 1 orphaned-holders");
        assert_line(&sc, 1, "alert", "ALERT GPU 1");
        assert_line(&sc, 2, "state", "GPU 1 ok, ghost 0 MiB (was orphaned-holders");
        assert_line(&sc, 3, "clear", "CLEAR GPU 1"); /* only when it answered again */
        script_free(&sc);
}

/* Errors: one line when they start, one when they clear; no good sample at all is said. */
static void test_errors(void **state)
{
        (void)state;
        struct script sc = { 0 };
        sc.n = 2; /* two cycles without a result */
        sc.errors[0] = sc.errors[1] = SCAN_ERR_GPU;
        add(&sc, false);
        struct watch_opts o = opts(&sc);
        struct watch_result res;
        assert_int_equal(watch_run(&o, NULL, &res), 0);
        assert_true(res.any_ok);
        assert_int_equal(sc.n_lines, 4);
        assert_line(&sc, 0, "error", "scan error: the driver did not answer");
        assert_line(&sc, 1, "error", "scan error cleared");
        assert_string_equal(res.last_error, "scan error: the driver did not answer");

        struct script bad = { 0 };
        bad.n = 1;
        bad.errors[0] = SCAN_ERR_GPU;
        o = opts(&bad);
        assert_int_equal(watch_run(&o, NULL, &res), 0);
        assert_false(res.any_ok);
        script_free(&sc);
        script_free(&bad);
}

/* The sampler failing (out of memory) ends the run with its error, after the cycles done. */
static void test_sampler_error(void **state)
{
        (void)state;
        struct script sc = { .end = -ENOMEM };
        add(&sc, false);
        struct watch_opts o = opts(&sc);
        struct watch_result res;
        assert_int_equal(watch_run(&o, NULL, &res), -ENOMEM);
        assert_int_equal(res.cycles, 1);
        assert_true(res.any_ok);
        assert_int_equal(sc.n_lines, 2);
        script_free(&sc);
}

/* A new kernel event is a line; with --gpu, one on another GPU is not. */
static void test_xid(void **state)
{
        (void)state;
        const char *text = "NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, GPU has fallen off the bus.";
        struct xid_event e;
        assert_int_equal(xid_parse_message(text, strlen(text), &e), 1);
        e.gpu_index = 0;
        struct script sc = { 0 };
        sc.n = 1;
        sc.xid[0] = &e;
        struct watch_opts o = opts(&sc);
        struct watch_result res;
        assert_int_equal(watch_run(&o, NULL, &res), 0);
        assert_int_equal(sc.n_lines, 1);
        assert_line(&sc, 0, "xid", "Xid 79 on GPU 0 (0000:1b:00.0): ");
        assert_non_null(strstr(sc.lines[0], "see 'ghostvram xid explain 79'"));
        script_free(&sc);

        struct script other = { 0 };
        other.n = 1;
        other.xid[0] = &e;
        o = opts(&other);
        o.only_gpu = 1;
        assert_int_equal(watch_run(&o, NULL, &res), 0);
        assert_int_equal(other.n_lines, 0);
        xid_event_free(&e);
}

/* The hook gets the finding in its environment; one that runs too long is stopped. */
static void test_hook(void **state)
{
        (void)state;
        char dir[] = "/tmp/gv-test-watch-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char out[128], cmd[256];
        snprintf(out, sizeof(out), "%s/hook", dir);
        snprintf(cmd, sizeof(cmd), "echo \"$GHOSTVRAM_EVENT $GHOSTVRAM_GPU $GHOSTVRAM_VERDICT $GHOSTVRAM_GHOST_BYTES "
                 "$GHOSTVRAM_PIDS $GHOSTVRAM_THRESHOLD_BYTES\" >> %s", out);
        struct script sc = { 0 };
        add(&sc, true);
        add(&sc, false);
        struct watch_opts o = opts(&sc);
        o.exec = cmd;
        struct watch_result res;
        assert_int_equal(watch_run(&o, NULL, &res), 0);
        char buf[512] = "";
        FILE *f = fopen(out, "r");
        assert_non_null(f);
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        assert_string_equal(buf, "alert 1 orphaned-holders 2147483648 31300 31301 31302 1073741824\n"
                                 "clear 1 ok 0  1073741824\n");
        unlink(out);
        rmdir(dir);
        script_free(&sc);

        struct script slow = { 0 };
        add(&slow, true);
        o = opts(&slow);
        o.exec = "sleep 30";
        o.exec_timeout_ms = 100;
        unsigned long long t0 = monotonic_ms();
        assert_int_equal(watch_run(&o, NULL, &res), 0);
        assert_true(monotonic_ms() - t0 < 5000);
        assert_non_null(strstr(slow.warns, "--exec: the hook ran longer than 0.1 s; stopping it"));
        script_free(&slow);
}

/* The heal's command line: reclaim of the GPU with --yes --json, and the watch's sources when
 * they are not the defaults. */
static void test_heal_args(void **state)
{
        (void)state;
        char gpu[16];
        const char *args[16];
        struct watch_heal_src src = { .proc_root = "/proc" };
        assert_int_equal(watch_heal_args(&src, 3, gpu, args), 6);
        const char *want[] = { "ghostvram", "reclaim", "--gpu", "3", "--yes", "--json" };
        for (size_t i = 0; i < 6; i++)
                assert_string_equal(args[i], want[i]);
        assert_null(args[6]);
        src = (struct watch_heal_src){ .proc_root = "/tmp/proc", .nvml_lib = "/opt/libnvidia-ml.so.1" };
        assert_int_equal(watch_heal_args(&src, 1023, gpu, args), 10);
        assert_string_equal(args[3], "1023");
        assert_string_equal(args[6], "--proc");
        assert_string_equal(args[7], "/tmp/proc");
        assert_string_equal(args[8], "--nvml-lib");
        assert_string_equal(args[9], "/opt/libnvidia-ml.so.1");
        assert_null(args[10]);
}

/* The sampler's options from the sources and the watch's own: confirmed an interval later. */
static void test_sampler_opts(void **state)
{
        (void)state;
        struct sources src;
        sources_init(&src);
        src.proc_root = "/tmp/gv-proc";
        src.nvml_lib = "/tmp/libnvidia-ml.so.1";
        struct watch_opts o = { .interval_ms = 500 };
        struct sampler_opts sp;
        watch_sampler_opts(&src, &o, 3, true, &sp);
        assert_int_equal(sp.confirm_ms, 500);
        assert_true(sp.light);
        assert_false(sp.facts.read_kernel);
        assert_int_equal(sp.ledger.floor_min_bytes, 3u << 20);
        assert_string_equal(sp.facts.host.proc_root, "/tmp/gv-proc");
        struct watch_heal_src h = watch_heal_src_of(&src);
        assert_string_equal(h.nvml_lib, "/tmp/libnvidia-ml.so.1");
        src.simulated = true;
        h = watch_heal_src_of(&src);
        assert_null(h.nvml_lib);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_alert_heal_clear), cmocka_unit_test(test_heal_fails_and_count),
                cmocka_unit_test(test_threshold_and_for), cmocka_unit_test(test_uninspected_keeps_alert),
                cmocka_unit_test(test_errors),           cmocka_unit_test(test_xid),
                cmocka_unit_test(test_sampler_error),
                cmocka_unit_test(test_hook),
                cmocka_unit_test(test_heal_args),
                cmocka_unit_test(test_sampler_opts),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
