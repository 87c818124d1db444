/* Unit tests for run/xid_run: xid's use case called without argv on a captured kernel log
 * (tests/fixtures/kmsg/dmesg.txt: its events are listed in test_xid_parse.c), dumped with
 * each filter and followed, and the errors of a log that cannot be read and of --gpu N
 * without a driver. The command's bytes are t_xid*.sh's. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "render/xid_render.h"
#include "run/xid_run.h"

#define DMESG GV_FIXTURES "/kmsg/dmesg.txt"

/* Options reading the fixture: not this host's log, so no driver is asked. */
static struct xid_run_opts fixture_opts(void)
{
        struct xid_run_opts o = { .kmsg_path = DMESG };
        o.gpu_opts.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
        o.gpu_opts.timeout_ms = 1000;
        return o;
}

/* Dump the fixture with o; the run stays open for the renderers (close it and free d). */
static void dump(const struct xid_run_opts *o, struct xid_run *x, struct xid_dump *d)
{
        char err[1024] = "";
        assert_int_equal(xid_run_open(x, o, err, sizeof(err)), 0);
        assert_string_equal(x->source, "file");
        assert_false(x->info.this_host);
        assert_int_equal(xid_dump_run(x, d, err, sizeof(err)), 0);
        assert_string_equal(err, "");
}

/* The shown events' codes (an Xid as its number, others by kind) joined by ' '. */
static void codes(const struct xid_dump *d, char *out, size_t len)
{
        size_t w = 0;
        out[0] = '\0';
        for (size_t i = 0; i < d->n_shown && w < len; i++) {
                const struct xid_event *e = d->shown[i].e;
                if (e->kind == XID_KIND_XID)
                        w += (size_t)snprintf(out + w, len - w, "%s%d", i ? " " : "", e->xid);
                else
                        w += (size_t)snprintf(out + w, len - w, "%s%s", i ? " " : "", xid_kind_name(e->kind));
        }
}

static void test_dump_all(void **state)
{
        (void)state;
        struct xid_run_opts o = fixture_opts();
        struct xid_run x;
        struct xid_dump d;
        dump(&o, &x, &d);
        char got[512];
        codes(&d, got, sizeof(got));
        assert_string_equal(got, "driver_load 13 13 45 31 48 63 119 gsp_error 79 crash_dump sxid 94");
        assert_int_equal(d.n_shown, 13);
        assert_int_equal(d.hidden, 6);          /* 5 other NVIDIA lines and the GPU's UUID line */
        assert_int_equal(d.no_time, 0);
        assert_int_equal(d.by_sev[XID_SEV_CRITICAL], 1);
        assert_int_equal(d.by_sev[XID_SEV_ERROR], 3);
        assert_int_equal(d.by_sev[XID_SEV_WARNING], 7);
        assert_int_equal(d.by_sev[XID_SEV_INFO], 2);
        /* the driver load is the log's first event shown: nothing came before it */
        for (size_t i = 0; i < d.n_shown; i++)
                assert_int_equal(d.shown[i].before_load, 0);
        const struct xid_event *last = d.shown[12].e;
        assert_string_equal(last->pci_bus_id, "0000:3b:00.0");
        assert_int_equal(last->gpu_instance, 5);
        assert_int_equal(last->compute_instance, 1);
        assert_int_equal(last->pid, 7194);
        assert_string_equal(d.shown[11].e->pci_bus_id, "0000:c5:00.0");        /* the NVSwitch's SXid */
        assert_int_equal(d.shown[11].e->sxid, 12028);
        /* the renderer's footer counts what the use case counted */
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        assert_non_null(m);
        xid_dump_text(m, &x, &d, false);
        fclose(m);
        assert_non_null(strstr(text, "\n13 events: 1 critical, 3 error, 7 warning, 2 info."));
        assert_non_null(strstr(text, "6 other NVIDIA lines not shown (-v shows them).\n"));
        free(text);
        xid_dump_free(&d);
        xid_run_close(&x);
}

static void test_dump_gpu_by_pci(void **state)
{
        (void)state;
        struct xid_run_opts o = fixture_opts();
        o.gpu.active = true;
        strcpy(o.gpu.pci, "0000:86:00.0");
        struct xid_run x;
        struct xid_dump d;
        dump(&o, &x, &d);
        char got[512];
        codes(&d, got, sizeof(got));
        assert_string_equal(got, "31 48 63");
        for (size_t i = 0; i < d.n_shown; i++)
                assert_string_equal(d.shown[i].e->pci_bus_id, "0000:86:00.0");
        assert_int_equal(d.shown[0].e->pid, 5151);
        assert_int_equal(d.by_sev[XID_SEV_CRITICAL] + d.by_sev[XID_SEV_ERROR] + d.by_sev[XID_SEV_WARNING] +
                                 d.by_sev[XID_SEV_INFO] + d.by_sev[XID_SEV_UNKNOWN],
                         3);
        assert_int_equal(d.hidden, 6);
        assert_false(d.pci_unlisted);   /* no driver asked: nothing to compare with */
        xid_dump_free(&d);
        xid_run_close(&x);
}

static void test_dump_verbose_and_since(void **state)
{
        (void)state;
        struct xid_run_opts o = fixture_opts();
        o.verbose = true;
        struct xid_run x;
        struct xid_dump d;
        dump(&o, &x, &d);
        assert_int_equal(d.n_shown, 19);
        assert_int_equal(d.hidden, 0);
        xid_dump_free(&d);
        xid_run_close(&x);

        /* [seconds] stamps of another boot have no wall-clock time: --since leaves them out */
        o = fixture_opts();
        o.since_set = true;
        o.since = 1000.0;
        dump(&o, &x, &d);
        assert_int_equal(d.n_shown, 0);
        assert_int_equal(d.no_time, 13);
        assert_int_equal(d.hidden, 6);
        xid_dump_free(&d);
        xid_run_close(&x);
}

/* ---- follow ------------------------------------------------------------------------------- */

struct seen {
        volatile sig_atomic_t stop;
        int starts, nvml_gpus;
        char codes[512];
        size_t w, n;
};

static void on_start(void *ctx, int nvml_gpus, const char *nvml_err)
{
        struct seen *s = ctx;
        s->starts++;
        s->nvml_gpus = nvml_gpus;
        assert_string_equal(nvml_err, "");      /* NVML is not asked for a saved log */
}

static void on_event(void *ctx, const struct xid_event *e, unsigned long overruns)
{
        struct seen *s = ctx;
        assert_int_equal(overruns, 0);
        if (e->kind == XID_KIND_XID)
                s->w += (size_t)snprintf(s->codes + s->w, sizeof(s->codes) - s->w, "%s%d", s->n ? " " : "", e->xid);
        if (++s->n == 3)
                s->stop = 1;    /* the log is a regular file, followed as tail -f: stop here */
}

static void test_follow_file(void **state)
{
        (void)state;
        struct xid_run_opts o = fixture_opts();
        o.follow = true;
        o.gpu.active = true;
        strcpy(o.gpu.pci, "0000:86:00.0");
        struct xid_run x;
        char err[1024] = "";
        assert_int_equal(xid_run_open(&x, &o, err, sizeof(err)), 0);
        struct seen s = { .stop = 0 };
        struct xid_follow_cb cb = { .start = on_start, .event = on_event, .ctx = &s };
        assert_int_equal(xid_follow_run(&x, &s.stop, &cb, err, sizeof(err)), 0);
        assert_int_equal(s.starts, 1);
        assert_int_equal(s.nvml_gpus, -1);
        assert_string_equal(s.codes, "31 48 63");
        xid_run_close(&x);
}

/* ---- errors ------------------------------------------------------------------------------- */

static void test_errors(void **state)
{
        (void)state;
        /* a saved log that is not there */
        struct xid_run_opts o = fixture_opts();
        o.kmsg_path = GV_FIXTURES "/kmsg/no-such-log.txt";
        struct xid_run x;
        char err[1024] = "";
        assert_true(xid_run_open(&x, &o, err, sizeof(err)) < 0);
        assert_non_null(strstr(err, "no-such-log.txt"));
        xid_run_close(&x);

        /* --gpu N: indexes come from the driver, and there is none */
        o = fixture_opts();
        o.gpu.active = o.gpu.by_index = true;
        o.gpu.index = 0;
        err[0] = '\0';
        assert_int_equal(xid_run_open(&x, &o, err, sizeof(err)), 0);
        struct xid_dump d;
        assert_int_equal(xid_dump_run(&x, &d, err, sizeof(err)), -ENODEV);
        assert_non_null(strstr(err, "--gpu 0: GPU indexes come from the NVIDIA driver, which is not available here"));
        xid_dump_free(&d);
        xid_run_close(&x);
}

/* --gpu's value: an index, a PCI bus id, a GPU-/MIG- UUID (looked up later); nothing else. */
static void test_gpu_filter(void **state)
{
        (void)state;
        struct xid_gpu_filter g;
        assert_int_equal(xid_gpu_filter_parse("3", &g), 0);
        assert_true(g.active && g.by_index);
        assert_int_equal(g.index, 3);
        assert_int_equal(xid_gpu_filter_parse("0000:3b:00.0", &g), 0);
        assert_true(g.active && !g.by_index && !g.uuid);
        assert_true(g.pci[0] != '\0');
        const char *uuid = "GPU-12345678-1234-1234-1234-123456789abc";
        assert_int_equal(xid_gpu_filter_parse(uuid, &g), 0);
        assert_ptr_equal(g.uuid, uuid);
        assert_int_equal(xid_gpu_filter_parse("1024", &g), -EINVAL);
        assert_int_equal(xid_gpu_filter_parse("GPU-zz", &g), -EINVAL);
        assert_int_equal(xid_gpu_filter_parse("", &g), -EINVAL);
}

/* --since: a time from 1970 to 9999 filters; what is no time, or outside, is refused. */
static void test_since(void **state)
{
        (void)state;
        struct xid_run_opts o = fixture_opts();
        assert_int_equal(xid_run_since(&o, "@100", 1e9), 0);
        assert_true(o.since_set);
        assert_true(o.since == 100.0);
        o = fixture_opts();
        assert_int_equal(xid_run_since(&o, "2h", 1e9), 0);
        assert_true(o.since == 1e9 - 7200);
        assert_int_equal(xid_run_since(&o, "x", 1e9), -EINVAL);
        o = fixture_opts();
        assert_int_equal(xid_run_since(&o, "@999999999999", 1e9), -ERANGE);
        assert_false(o.since_set);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dump_all),
                cmocka_unit_test(test_dump_gpu_by_pci),
                cmocka_unit_test(test_dump_verbose_and_since),
                cmocka_unit_test(test_follow_file),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_gpu_filter),
                cmocka_unit_test(test_since),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
