/* Unit tests for run/top_run: top's collector started without argv or a terminal on a
 * simulated host made for the test (`ghostvram sim init`) with a real job (`ghostvram sim
 * run`), its frames read as the screen reads them (render/top_feed), and stopped: the thread
 * joined, every thread it started gone. */
#include <dirent.h>
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

#include "render/top_feed.h"
#include "run/sources.h"
#include "run/top_run.h"
#include "simstate.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/fileio.h"
#include "util/spawn.h"

#define MIB (1024ull * 1024ull)
#define JOB_MIB 1024

static char sim_dir[] = "/tmp/gv-test-toprun-XXXXXX";
static char driver_proc[256], dev_prefix[256];
static pid_t owner;

/* `ghostvram sim ARGS...` on the test's host: its exit status, its output into out. */
static int sim(const char *const args[], struct buf *out)
{
        return spawn_self(GV_BUILD_DIR "/ghostvram", args, out, false);
}

/* Two simulated GPUs; a job of JOB_MIB on GPU 0 (its owner alone). */
static int setup(void **state)
{
        (void)state;
        if (!mkdtemp(sim_dir))
                return -1;
        const char *const init[] = { "ghostvram", "sim", "init", sim_dir, "--gpus", "2", NULL };
        struct buf out = BUF_INIT(1 << 16);
        int r = sim(init, &out);
        buf_reset(&out);
        const char *const run[] = { "ghostvram", "sim", "run", sim_dir, "--gpu", "0", "--mib", "1024", "--workers", "0", NULL };
        if (r == 0)
                r = sim(run, &out);
        int pid = 0;
        if (r == 0 && (!out.data || sscanf(out.data, "owner %d", &pid) != 1 || pid <= 0))
                r = -ECHILD;
        buf_free(&out);
        if (r != 0) {
                fprintf(stderr, "the simulated host %s and its job: %d\n", sim_dir, r);
                return -1;
        }
        owner = pid;
        setenv("GHOSTVRAM_SIM", sim_dir, 1); /* the simulated library finds its state through it */
        snprintf(driver_proc, sizeof(driver_proc), "%s/proc/driver/nvidia", sim_dir);
        return simstate_dev_prefix(sim_dir, dev_prefix, sizeof(dev_prefix)) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
        (void)state;
        if (owner > 0)
                kill(owner, SIGKILL); /* the test's own job, started by setup */
        for (int i = 0; i < 100 && owner > 0 && kill(owner, 0) == 0; i++)
                usleep(20 * 1000);
        sim_host_remove(sim_dir);
        return 0;
}

/* The collector's options as top sets them on this host (top_run_sampler_opts: the /proc walk,
 * no kernel log, a 64 MiB floor), read through the test's sources. */
static struct sources src;

static struct top_run_opts opts(uint64_t interval_ms, struct top_run_hooks hooks)
{
        struct top_run_opts o = { .interval_ms = interval_ms, .hooks = hooks };
        char err[512] = "";
        sources_init(&src);
        src.holders = HOST_HOLDERS_PROC;
        assert_int_equal(sources_open(&src, sim_dir, err, sizeof(err)), 0);
        top_run_sampler_opts(&src, 64, false, false, &o.sampler);
        return o;
}

/* What top's sampler is asked: nvtop's figures and health, no confirming wait, the floor; the
 * whole walk only for one frame. */
static void test_sampler_opts(void **state)
{
        (void)state;
        struct top_run_opts o = opts(1000, (struct top_run_hooks){ 0 });
        const struct sampler_opts *s = &o.sampler;
        assert_true(s->facts.simulated && s->facts.gpu.telemetry && s->facts.gpu.health);
        assert_string_equal(s->facts.gpu.driver_proc_dir, driver_proc);
        assert_string_equal(s->facts.host.dev_prefix, dev_prefix);
        assert_false(s->facts.read_kernel);
        assert_int_equal(s->confirm_ms, 0);
        assert_int_equal(s->ledger.floor_min_bytes, 64ull << 20);
        assert_true(s->light);
        struct sampler_opts once;
        top_run_sampler_opts(&src, 1, true, true, &once);
        assert_false(once.light);
        assert_true(once.facts.read_kernel);
        assert_int_equal(once.ledger.floor_min_bytes, 1ull << 20);
}

/* This process's threads. */
static int threads(void)
{
        DIR *d = opendir("/proc/self/task");
        assert_non_null(d);
        int n = 0;
        for (struct dirent *e; (e = readdir(d));)
                n += e->d_name[0] != '.';
        closedir(d);
        return n;
}

/* Wait (20 s at most) until `gen` cycles finished and the feed has a view; false if not. */
static bool wait_frames(struct top_run *tr, const struct top_feed *f, unsigned gen)
{
        for (int i = 0; i < 400; i++) {
                top_run_lock(tr);
                bool ready = top_run_gen(tr) >= gen && f->view;
                top_run_unlock(tr);
                if (ready)
                        return true;
                usleep(50 * 1000);
        }
        return false;
}

/* A frame holds the host: two GPUs, the job's MiB used on GPU 0 and charged to its owner, who
 * is a row with its PID; the second frame comes an interval later; stop joins the thread. */
static void test_frames(void **state)
{
        (void)state;
        int before = threads();
        struct top_feed feed = { .clk_tck = sysconf(_SC_CLK_TCK) };
        struct top_run_opts o = opts(200, top_feed_hooks(&feed));
        struct top_run *tr = NULL;
        assert_int_equal(top_run_start(&o, &tr), 0);
        assert_true(wait_frames(tr, &feed, 2));
        top_run_lock(tr);
        const struct live_view *v = feed.view;
        assert_true(v->simulated);
        assert_true(v->driver_present);
        assert_int_equal(v->n_gpus, 2);
        const struct live_gpu *g0 = live_view_gpu(v, 0), *g1 = live_view_gpu(v, 1);
        assert_non_null(g0);
        assert_non_null(g1);
        assert_true(g0->inspected);
        assert_true(g0->used >= JOB_MIB * MIB * 9 / 10 && g0->used <= JOB_MIB * MIB * 11 / 10);
        assert_int_equal(g0->kind[LIVE_GHOST], 0);
        assert_string_equal(g0->verdict, "ok");
        assert_int_equal(g1->used, 0);
        const struct live_row *w = NULL;
        for (size_t i = 0; i < v->n_rows; i++)
                if (v->rows[i].pid == owner)
                        w = &v->rows[i];
        assert_non_null(w);
        assert_int_equal(w->gpu, 0);
        assert_int_equal(w->listed_bytes, (int64_t)g0->used);
        assert_string_equal(feed.status, "");
        assert_true(feed.status_in_view);
        assert_non_null(live_history_gpu(&feed.hist, 0));
        assert_true(top_run_cycle_started(tr) == 0 || top_run_cycle_started(tr) >= top_run_started(tr));
        top_run_unlock(tr);
        assert_true(top_run_stop(tr));
        top_feed_free(&feed);
        assert_int_equal(threads(), before);
}

struct counts {
        unsigned built, published, failed;
        size_t gpus;                    /* the last result's */
};

static void *count_build(void *ctx, int r, const struct sample *smp)
{
        struct counts *c = ctx;
        c->built++;
        c->failed += r != 0 || !smp->published || !smp->res;
        if (r == 0 && smp->res)
                c->gpus = smp->res->n_gpus;
        return NULL;
}

static void count_publish(void *ctx, int r, const struct sample *smp, void *frame)
{
        (void)r;
        (void)smp;
        struct counts *c = ctx;
        assert_null(frame);
        c->published++;
}

/* A long interval: one cycle, then the wait between cycles ends at once on stop. */
static void test_stop_in_wait(void **state)
{
        (void)state;
        int before = threads();
        struct counts c = { 0 };
        struct top_run_opts o = opts(3600 * 1000, (struct top_run_hooks){ count_build, count_publish, &c });
        struct top_run *tr = NULL;
        assert_int_equal(top_run_start(&o, &tr), 0);
        unsigned gen = 0;
        for (int i = 0; i < 400 && !gen; i++) {
                usleep(50 * 1000);
                top_run_lock(tr);
                gen = top_run_gen(tr);
                top_run_unlock(tr);
        }
        assert_int_equal(gen, 1);
        double t0 = monotonic_s();
        assert_true(top_run_stop(tr));
        assert_true(monotonic_s() - t0 < 0.5);
        assert_int_equal(c.built, 1);
        assert_int_equal(c.published, 1);
        assert_int_equal(c.failed, 0);
        assert_int_equal(c.gpus, 2);
        assert_int_equal(threads(), before);
}

/* NULL is stopped already. */
static void test_stop_null(void **state)
{
        (void)state;
        assert_true(top_run_stop(NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sampler_opts),
                cmocka_unit_test(test_frames),
                cmocka_unit_test(test_stop_in_wait),
                cmocka_unit_test(test_stop_null),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
