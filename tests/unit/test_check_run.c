/* Unit tests for run/check_run: check's scan under the plugin's time limit, called without argv
 * on a simulated host made for the test (`ghostvram sim init`): a scan that finishes, and one
 * whose driver never answers, given up at the limit. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim_host.h"

#include "run/check_run.h"
#include "simstate.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/spawn.h"

static char sim_dir[] = "/tmp/gv-test-checkrun-XXXXXX";
static char driver_proc[256], dev_prefix[256];

/* `ghostvram sim ARGS...` on the test's host: its exit status. */
static int sim(const char *const args[])
{
        struct buf out = BUF_INIT(1 << 16);
        int r = spawn_self(GV_BUILD_DIR "/ghostvram", args, &out, false);
        buf_free(&out);
        return r;
}

static int setup(void **state)
{
        (void)state;
        if (!mkdtemp(sim_dir))
                return -1;
        const char *const init[] = { "ghostvram", "sim", "init", sim_dir, "--gpus", "1", NULL };
        if (sim(init) != 0) {
                fprintf(stderr, "ghostvram sim init %s failed\n", sim_dir);
                return -1;
        }
        setenv("GHOSTVRAM_SIM", sim_dir, 1); /* the simulated library finds its state through it */
        snprintf(driver_proc, sizeof(driver_proc), "%s/proc/driver/nvidia", sim_dir);
        return simstate_dev_prefix(sim_dir, dev_prefix, sizeof(dev_prefix)) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
        (void)state;
        sim_host_remove(sim_dir);
        return 0;
}

/* The scan's options as check sets them on this host (no kernel log). */
static struct scan_once_opts opts(void)
{
        struct scan_once_opts o = { .light = true };
        o.facts.simulated = true;
        o.facts.gpu.nvml_lib = GV_BUILD_DIR "/sim/current/libnvidia-ml.so.1";
        o.facts.gpu.timeout_ms = 2000;
        o.facts.gpu.driver_proc_dir = driver_proc;
        o.facts.host.proc_root = "/proc";
        o.facts.host.dev_prefix = dev_prefix;
        o.facts.host.timeout_ms = 2000;
        o.facts.host.holders = HOST_HOLDERS_PROC;
        ledger_opts_default(&o.ledger);
        return o;
}

static void test_finished(void **state)
{
        (void)state;
        struct scan_once_opts o = opts();
        struct check_job *j = check_job_new(&o);
        assert_non_null(j);
        assert_int_equal(check_job_run(j, 20000), 0);
        assert_int_equal(j->r, 0);
        assert_non_null(j->run);
        assert_true(j->run->res->facts->gpu->driver_present);
        assert_int_equal(j->run->res->facts->gpu->n_gpus, 1);
        check_job_free(j);
}

/* A driver whose every call hangs: the answer comes at the limit, long before the scan's own
 * per-call deadline; the worker frees the job when the scan gives up. */
static void test_driver_hangs(void **state)
{
        (void)state;
        const char *const hang[] = { "ghostvram", "sim", "set", sim_dir, "hang=any", NULL };
        assert_int_equal(sim(hang), 0);
        struct scan_once_opts o = opts();
        struct check_job *j = check_job_new(&o);
        assert_non_null(j);
        assert_int_equal(check_job_run(j, 300), -ETIMEDOUT);
        const char *const unhang[] = { "ghostvram", "sim", "set", sim_dir, "hang=none", NULL };
        assert_int_equal(sim(unhang), 0);
        usleep(2500 * 1000); /* the scan's own deadline (2 s) passes: the worker frees j */
}

/* check_job_make: one light scan with check's confirmation, kernel log and noise floor, each
 * call bounded by half the plugin's limit (never 0). */
static void test_job_make(void **state)
{
        (void)state;
        struct scan_once_opts base = opts();
        base.facts.read_kernel = true;
        struct check_run_opts o = { .timeout_ms = 3000, .confirm_ms = 500, .floor_mib = 100, .no_kernel = true };
        struct check_job *j = check_job_make(&base, &o);
        assert_non_null(j);
        assert_int_equal(j->o.confirm_ms, 500);
        assert_true(j->o.light);
        assert_false(j->o.facts.read_kernel);
        assert_int_equal(j->o.ledger.floor_min_bytes, 100ull << 20);
        assert_int_equal(j->o.facts.gpu.timeout_ms, 1500);
        assert_int_equal(j->o.facts.host.timeout_ms, 1500);
        check_job_free(j);
        o = (struct check_run_opts){ .timeout_ms = 1 };
        j = check_job_make(&base, &o);
        assert_non_null(j);
        assert_int_equal(j->o.facts.gpu.timeout_ms, 1);
        assert_int_equal(j->o.facts.host.timeout_ms, 1);
        assert_true(j->o.facts.read_kernel);
        check_job_free(j);
        o = (struct check_run_opts){ .timeout_ms = 60000 }; /* calls shorter than half: kept */
        j = check_job_make(&base, &o);
        assert_non_null(j);
        assert_int_equal(j->o.facts.gpu.timeout_ms, 2000);
        check_job_free(j);
}

/* check_scan: the job made from the sources (a simulated host opened as the command line opens
 * it), run under the limit, its finished scan kept. */
static void test_scan(void **state)
{
        (void)state;
        struct sources s;
        char why[512] = "";
        sources_init(&s);
        assert_int_equal(sources_open(&s, sim_dir, why, sizeof(why)), 0);
        struct check_run_opts o = { .timeout_ms = 20000, .floor_mib = 64, .no_kernel = true, .only_gpu = -1 };
        struct check_job *j = NULL;
        assert_int_equal(check_scan(&s, &o, &j, why, sizeof(why)), 0);
        assert_non_null(j);
        assert_true(j->run->res->facts->gpu->driver_present);
        assert_int_equal(j->run->res->facts->gpu->n_gpus, 1);
        check_job_free(j);
}

/* The defaults, and -t's budget: a default confirming wait shrinks to a quarter of -t; one given
 * may take up to half of it. */
static void test_settle(void **state)
{
        (void)state;
        struct check_run_opts o;
        check_run_opts_default(&o);
        assert_int_equal(o.timeout_ms, 10000);
        assert_int_equal(o.confirm_ms, 2000);
        assert_int_equal(o.floor_mib, 64);
        assert_int_equal(o.only_gpu, -1);
        assert_int_equal(check_run_settle(&o), 0);
        assert_int_equal(o.confirm_ms, 2000);
        o.timeout_ms = 4000;
        assert_int_equal(check_run_settle(&o), 0);
        assert_int_equal(o.confirm_ms, 1000);
        o = (struct check_run_opts){ .timeout_ms = 4000, .confirm_ms = 2000, .confirm_set = true };
        assert_int_equal(check_run_settle(&o), 0);
        assert_int_equal(o.confirm_ms, 2000);
        o.confirm_ms = 2001;
        assert_int_equal(check_run_settle(&o), -ERANGE);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_settle),
                cmocka_unit_test(test_job_make),
                cmocka_unit_test(test_scan),
                cmocka_unit_test(test_finished),
                cmocka_unit_test(test_driver_hangs),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
