/* Unit tests for run/sources: what sources_open refuses (a bundle with --save-bundle, a
 * non-empty --save-bundle directory, a bundle that is not one, a --proc tree that is not there,
 * a GHOSTVRAM_SIM that is not a simulated host), what it completes for a simulated host made for
 * the test, and --gpu looked up there (sources_gpu_resolve). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "collect/sample.h"
#include "sim_host.h"

#include "run/sources.h"
#include "util/buf.h"
#include "util/exit_status.h"
#include "util/spawn.h"

static char dir[] = "/tmp/gv-test-sources-XXXXXX";
static char sim_dir[300];

static int setup(void **state)
{
        (void)state;
        if (!mkdtemp(dir))
                return -1;
        snprintf(sim_dir, sizeof(sim_dir), "%s/sim", dir);
        const char *const init[] = { "ghostvram", "sim", "init", sim_dir, "--gpus", "2", NULL };
        struct buf out = BUF_INIT(1 << 16);
        int r = spawn_self(GV_BUILD_DIR "/ghostvram", init, &out, false);
        buf_free(&out);
        setenv("GHOSTVRAM_SIM", sim_dir, 1); /* the simulated library finds its state through it */
        return r == 0 ? 0 : -1;
}

static int teardown(void **state)
{
        (void)state;
        sim_host_remove(dir);
        return 0;
}

/* sources_open on s: its return, the sentence said in err */
static int open_says(struct sources *s, const char *sim, const char *want)
{
        char err[1024] = "";
        int r = sources_open(s, sim, err, sizeof(err));
        assert_string_equal(err, want);
        return r;
}

static void test_refusals(void **state)
{
        (void)state;
        struct sources s;
        char want[1024], path[512];
        sources_init(&s);
        s.save_bundle = dir;
        s.from_bundle = dir;
        assert_int_equal(open_says(&s, NULL, "--save-bundle and --from-bundle cannot be used together"), -1);
        sources_init(&s);
        s.save_bundle = dir; /* holds sim/ */
        snprintf(want, sizeof(want), "--save-bundle %s: not empty: give a new or an empty directory (old files would mix "
                 "with this bundle)", dir);
        assert_int_equal(open_says(&s, NULL, want), -1);
        sources_init(&s);
        s.from_bundle = sim_dir;
        snprintf(want, sizeof(want), "--from-bundle %s: not a bundle (no nvml.json): record one with --save-bundle DIR",
                 sim_dir);
        assert_int_equal(open_says(&s, NULL, want), -1);
        sources_init(&s);
        snprintf(path, sizeof(path), "%s/no-proc", dir);
        s.proc_root = path;
        snprintf(want, sizeof(want), "--proc %s: no such directory", path);
        assert_int_equal(open_says(&s, NULL, want), -1);
        sources_init(&s);
        snprintf(want, sizeof(want), "GHOSTVRAM_SIM=%s: not a simulated host (No such file or directory); create one "
                 "with 'ghostvram sim init DIR'", path);
        assert_int_equal(open_says(&s, path, want), -1);
        assert_false(s.simulated);
}

static void test_simulated(void **state)
{
        (void)state;
        struct sources s;
        sources_init(&s);
        assert_int_equal(open_says(&s, sim_dir, ""), 0);
        assert_true(s.simulated);
        assert_string_equal(s.sim_dir, sim_dir);
        assert_ptr_equal(s.nvml_lib, s.sim_lib);
        assert_non_null(strstr(s.sim_lib, "libnvidia-ml"));
        assert_ptr_equal(s.dev_prefix, s.sim_prefix);
        assert_string_equal(s.proc_root, "/proc");
        struct gpu_opts go;
        sources_gpu_opts(&s, &go);
        char want[400];
        snprintf(want, sizeof(want), "%s/proc/driver/nvidia", sim_dir);
        assert_string_equal(go.driver_proc_dir, want);
        assert_int_equal(go.timeout_ms, 5000);
        struct host_opts ho;
        sources_host_opts(&s, &ho);
        assert_int_equal(ho.timeout_ms, 2000); /* a /proc read waits 2 s at most */
        struct facts_opts fo;
        sources_facts_opts(&s, &fo);
        assert_true(fo.simulated && !fo.read_kernel && !fo.save_bundle);
        assert_string_equal(fo.gpu.driver_proc_dir, want);
        assert_ptr_equal(fo.host.dev_prefix, s.sim_prefix);
        /* --gpu: an index unchecked, then checked against the host's two GPUs */
        int idx = 9;
        char err[256] = "";
        assert_int_equal(sources_gpu_resolve(&s, NULL, true, &idx, err, sizeof(err)), EXIT_OK);
        assert_int_equal(idx, -1);
        assert_int_equal(sources_gpu_resolve(&s, "7", false, &idx, err, sizeof(err)), EXIT_OK);
        assert_int_equal(idx, 7);
        assert_int_equal(sources_gpu_resolve(&s, "1", true, &idx, err, sizeof(err)), EXIT_OK);
        assert_int_equal(idx, 1);
        assert_int_equal(sources_gpu_resolve(&s, "7", true, &idx, err, sizeof(err)), EXIT_USAGE);
        assert_string_equal(err, "--gpu 7: this host has 2 GPUs");
        assert_int_equal(sources_gpu_resolve(&s, "0000:99:00.0", false, &idx, err, sizeof(err)), EXIT_USAGE);
        assert_int_equal(idx, -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_simulated),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
