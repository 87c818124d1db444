/* Unit tests for run/experiment_run: experiment's use case called without argv on a simulated
 * host made for the test (`ghostvram sim init`), with real processes: the simulated job, its
 * workers, and `ghostvram reclaim` run as the command runs them. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim_host.h"

#include "run/experiment_run.h"
#include "util/buf.h"
#include "util/exit_status.h"
#include "util/fileio.h"
#include "util/spawn.h"

#define MIB (1024ull * 1024ull)

static char sim_dir[] = "/tmp/gv-test-exp-XXXXXX";
static char driver_proc[256];
static struct reclaim_sys sys;

static int setup(void **state)
{
        (void)state;
        if (!mkdtemp(sim_dir))
                return -1;
        const char *const args[] = { "ghostvram", "sim", "init", sim_dir, "--gpus", "1", NULL };
        struct buf out = BUF_INIT(1 << 16);
        int r = spawn_self(GV_BUILD_DIR "/ghostvram", args, &out, false);
        buf_free(&out);
        if (r != 0) {
                fprintf(stderr, "ghostvram sim init %s: exit %d\n", sim_dir, r);
                return -1;
        }
        setenv("GHOSTVRAM_SIM", sim_dir, 1); /* for the sim run and the reclaim it starts */
        snprintf(driver_proc, sizeof(driver_proc), "%s/proc/driver/nvidia", sim_dir);
        reclaim_sys_real(&sys, "/proc");
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        sim_host_remove(sim_dir);
        return 0;
}

static struct exp_opts opts(unsigned workers, bool reclaim)
{
        struct exp_opts o = { .gpu = 0, .workers = workers, .repeat = 1, .mib = 1024, .signal = SIGKILL,
                              .reclaim = reclaim, .wait_ms = 1500, .confirm_ms = 300, .simulated = true,
                              .sim_dir = sim_dir, .call_timeout_ms = 2000, .self = GV_BUILD_DIR "/ghostvram",
                              .sys = &sys };
        o.go.nvml_lib = GV_BUILD_DIR "/sim/current/libnvidia-ml.so.1";
        o.go.timeout_ms = 2000;
        o.go.memory_only = true;
        o.go.driver_proc_dir = driver_proc;
        return o;
}

/* Ended: no such process, or a zombie its parent (init, a subreaper) has not reaped yet (read
 * as reclaim reads it: reclaim_sys's read_stat). */
static void assert_gone(pid_t pid)
{
        assert_true(pid > 0);
        uint64_t start;
        char state = '?';
        if (sys.read_stat(sys.ctx, pid, &start, &state) == 0 && state != 'Z' && state != 'X')
                fail_msg("PID %d is still running (state %c)", (int)pid, state);
}

/* The story: the owner killed, its worker keeps the memory (not back within the wait);
 * reclaim ends the worker and the memory comes back. Every process is gone after. */
static void test_worker_keeps_then_reclaim(void **state)
{
        (void)state;
        struct exp_opts o = opts(1, true);
        struct exp_result res;
        assert_int_equal(experiment_run(&o, &res), 0);
        assert_string_equal(res.error, "");
        assert_int_equal(res.done, 1);
        assert_int_equal(res.complete, 1);
        assert_int_equal(res.left, 0);
        assert_false(res.unrecovered);
        const struct exp_run *r = &res.runs[0];
        assert_int_equal(r->n_workers, 1);
        assert_true(r->allocated >= 1024 * MIB * 9 / 10 && r->allocated <= 1024 * MIB * 11 / 10);
        assert_true(r->after_kill.measured);
        assert_false(r->after_kill.recovered);
        assert_true(r->after_kill.residual >= 1024 * MIB * 9 / 10);
        assert_true(json_array_size(r->after_kill.samples) >= 2);
        assert_true(r->reclaimed);
        assert_int_equal(r->reclaim_status, 0);
        assert_non_null(r->reclaim_doc);
        assert_true(r->after_reclaim.measured);
        assert_true(r->after_reclaim.recovered);
        assert_true(r->after_reclaim.residual <= 1024 * MIB / 10);
        assert_gone(r->owner);
        assert_gone(r->workers[0]);

        struct exp_summary s;
        exp_summarise(res.runs, res.complete, true, &s);
        assert_int_equal(s.runs, 1);
        assert_int_equal(s.recovered, 1);
        exp_summarise(res.runs, res.complete, false, &s);
        assert_int_equal(s.recovered, 0);
        assert_true(s.residual_mib.median >= 900);
        exp_result_free(&res, o.repeat);
}

/* No worker: the memory comes back when the owner dies; two runs, no reclaim. */
static void test_no_worker_two_runs(void **state)
{
        (void)state;
        struct exp_opts o = opts(0, false);
        o.repeat = 2;
        struct exp_result res;
        assert_int_equal(experiment_run(&o, &res), 0);
        assert_int_equal(res.done, 2);
        for (size_t i = 0; i < 2; i++) {
                const struct exp_run *r = &res.runs[i];
                assert_true(r->after_kill.recovered);
                assert_true(r->after_kill.recovery_s < 1.5);
                assert_false(r->reclaimed);
                assert_false(r->after_reclaim.measured);
                assert_gone(r->owner);
        }
        assert_true(res.runs[0].owner != res.runs[1].owner);
        exp_result_free(&res, o.repeat);
}

/* A GPU the host does not have: the run fails and says why. */
static void test_no_such_gpu(void **state)
{
        (void)state;
        struct exp_opts o = opts(0, false);
        o.gpu = 5;
        struct exp_result res;
        assert_int_equal(experiment_run(&o, &res), -ENODEV);
        assert_string_equal(res.error, "GPU 5: no memory figures from the driver");
        assert_int_equal(res.done, 0);
        exp_result_free(&res, o.repeat);
}

/* The probe before the runs: the simulated host's one GPU; a library that is not there is no
 * driver, with the loader's words. */
static void test_probe(void **state)
{
        (void)state;
        struct exp_opts o = opts(0, false);
        size_t n = 0;
        char why[512] = "";
        assert_int_equal(experiment_probe(&o, &n, why, sizeof(why)), 0);
        assert_int_equal(n, 1);
        o.go.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
        n = 7;
        assert_int_equal(experiment_probe(&o, &n, why, sizeof(why)), -ENODEV);
        assert_int_equal(n, 7);
        assert_true(why[0] != '\0');
}

/* experiment_prepare: the simulated host's sources in the options, --gpu looked up (an index
 * past the host's GPUs is a usage error, as is a UUID it does not have), the driver probed. */
static void test_prepare(void **state)
{
        (void)state;
        struct sources s;
        char err[1024] = "";
        sources_init(&s);
        assert_int_equal(sources_open(&s, sim_dir, err, sizeof(err)), 0);
        struct exp_opts o = { .gpu = 3 };
        assert_int_equal(experiment_prepare(&o, &s, "0", err, sizeof(err)), EXIT_OK);
        assert_int_equal(o.gpu, 0);
        assert_true(o.simulated);
        assert_string_equal(o.sim_dir, sim_dir);
        assert_true(o.go.memory_only);
        assert_int_equal(o.call_timeout_ms, s.timeout_ms);
        assert_int_equal(experiment_prepare(&o, &s, "1", err, sizeof(err)), EXIT_USAGE);
        assert_string_equal(err, "--gpu 1: this host has 1 GPU");
        assert_int_equal(experiment_prepare(&o, &s, "GPU-00000000-0000-0000-0000-000000000000", err, sizeof(err)),
                         EXIT_USAGE);
        s.nvml_lib = "/proc/gv-no/libnvidia-ml.so.1";
        assert_int_equal(experiment_prepare(&o, &s, NULL, err, sizeof(err)), EXIT_INCOMPLETE);
        assert_non_null(strstr(err, ": the experiment needs an NVIDIA GPU, or a simulated host"));
}

/* Where pidfd_open is missing (Linux < 5.3; valgrind 3.19 does not know the system call,
 * scripts/valgrind-unit): nothing is started, and the error says why. */
static void test_no_pidfd(void **state)
{
        (void)state;
        struct exp_opts o = opts(1, true);
        struct exp_result res;
        assert_int_equal(experiment_run(&o, &res), -ENOSYS);
        assert_non_null(strstr(res.error, "no pidfd_open (Linux 5.3+)"));
        assert_int_equal(res.done, 0);
        exp_result_free(&res, o.repeat);
}

int main(void)
{
        const struct CMUnitTest with_pidfd[] = {
                cmocka_unit_test(test_worker_keeps_then_reclaim),
                cmocka_unit_test(test_no_worker_two_runs),
                cmocka_unit_test(test_no_such_gpu),
                cmocka_unit_test(test_probe),
                cmocka_unit_test(test_prepare),
        };
        const struct CMUnitTest without_pidfd[] = {
                cmocka_unit_test(test_no_pidfd),
                cmocka_unit_test(test_probe),
                cmocka_unit_test(test_prepare),
        };
        struct reclaim_sys probe;
        reclaim_sys_real(&probe, "/proc");
        if (reclaim_pidfd_supported(&probe) < 0)
                return cmocka_run_group_tests(without_pidfd, setup, teardown);
        return cmocka_run_group_tests(with_pidfd, setup, teardown);
}
