/* Unit tests for run/reclaim_run: reclaim's use case called without argv on a real temporary
 * simulated host (run/demo_run makes it, with the simulated job's real processes), what it says
 * caught by the test's reclaim_io. The command's own output and options: t_reclaim*.sh. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "run/demo_run.h"
#include "run/reclaim_run.h"
#include "run/sources.h"
#include "util/exit_status.h"
#include "util/pidfd.h"
#include "simstate.h"

#define MIB (1024ull * 1024ull)

static char tmp[] = "/tmp/gv-test-reclaim-XXXXXX";

/* What reclaim said, in order. */
struct heard {
        unsigned plans, reports, errors;
        unsigned plan_before_action;            /* plans heard before the first action */
        pid_t signalled[8], ended[8];
        int signals[8];
        size_t n_signalled, n_ended;
        unsigned before_samples, after_samples;
        uint64_t before_bytes, last_after_bytes;
        bool last_recovered;
        char summary[512], error[512], notes[2048];
        int exit_status;
        size_t plan_targets;
        pid_t plan_pids[8];
        bool dry_run;
};

static void h_plan(void *ctx, const struct reclaim_report *rep)
{
        struct heard *h = ctx;
        (void)rep;
        h->plans++;
        if (!h->n_signalled)
                h->plan_before_action++;
}

static void h_action(void *ctx, const struct reclaim_action *a, enum reclaim_event ev, double t)
{
        struct heard *h = ctx;
        assert_true(t >= 0);
        if (ev == RECLAIM_EV_SIGNAL && h->n_signalled < 8) {
                h->signals[h->n_signalled] = a->signals[a->n_signals - 1];
                h->signalled[h->n_signalled++] = a->pid;
        } else if (ev == RECLAIM_EV_RESULT && h->n_ended < 8 && reclaim_result_ended(a->result)) {
                h->ended[h->n_ended++] = a->pid;
        }
}

static void h_sample(void *ctx, const struct recovery_gpu *g, bool before, double t)
{
        struct heard *h = ctx;
        if (before) {
                h->before_samples++;
                h->before_bytes = g->before;
                assert_true(t == 0);
                return;
        }
        h->after_samples++;
        h->last_after_bytes = g->after;
        h->last_recovered = g->recovered;
}

static void h_report(void *ctx, const struct reclaim_report *rep)
{
        struct heard *h = ctx;
        h->reports++;
        snprintf(h->summary, sizeof(h->summary), "%s", rep->summary ? rep->summary : "");
        h->exit_status = rep->exit_status;
        h->dry_run = rep->dry_run;
        size_t at = 0;
        for (size_t i = 0; i < rep->n_notes && at < sizeof(h->notes); i++)
                at += (size_t)snprintf(h->notes + at, sizeof(h->notes) - at, "%s\n", rep->notes[i]);
        h->plan_targets = rep->plan ? rep->plan->n_targets : 0;
        for (size_t i = 0; rep->plan && i < rep->plan->n_targets && i < 8; i++)
                h->plan_pids[i] = rep->plan->targets[i].pid;
}

static void h_error(void *ctx, const char *msg)
{
        struct heard *h = ctx;
        h->errors++;
        snprintf(h->error, sizeof(h->error), "%s", msg);
}

static struct reclaim_io io_for(struct heard *h)
{
        memset(h, 0, sizeof(*h));
        return (struct reclaim_io){ .ctx = h, .plan = h_plan, .action = h_action, .sample = h_sample,
                                    .report = h_report, .error = h_error };
}

/* The options `GHOSTVRAM_SIM=DIR ghostvram reclaim` would hand over (its sources, a 2 s call
 * deadline, a 300 ms confirming wait). */
static struct reclaim_run_opts opts_for(const struct demo *d, struct sources *src)
{
        char err[512] = "";
        setenv("GHOSTVRAM_SIM", d->dir, 1);
        sources_init(src);
        src->timeout_ms = 2000;
        assert_int_equal(sources_open(src, d->dir, err, sizeof(err)), 0);
        struct reclaim_run_opts o;
        memset(&o, 0, sizeof(o));
        reclaim_run_from(&o, src);
        assert_true(o.simulated && o.so.facts.simulated && o.so.facts.read_kernel);
        assert_string_equal(o.sim_dir, d->dir);
        assert_null(o.ho.save_dir);
        o.so.confirm_ms = 300;
        o.only_gpu = -1;
        o.signal = SIGTERM;
        o.grace_ms = 2000;
        o.wait_ms = 5000;
        return o;
}

static bool running(pid_t pid)
{
        struct reclaim_sys sys;
        reclaim_sys_real(&sys, "/proc");
        uint64_t start;
        char state = '?';
        return sys.read_stat(sys.ctx, pid, &start, &state) == 0 && state != 'Z' && state != 'X';
}

static void host(struct demo *d)
{
        memset(d, 0, sizeof(*d));
        d->self = GV_BUILD_DIR "/ghostvram";
        assert_int_equal(demo_host_create(d, tmp), 0);
}

/* The owner of a 1024 MiB job killed: its two workers keep the memory (the ghost). */
static void orphaned_job(struct demo *d)
{
        host(d);
        assert_int_equal(demo_job_start(d, 1024, 2), 0);
        assert_int_equal(demo_kill_owner(d), 0);
}

/* One test's host, options and what reclaim said. */
struct t {
        struct demo d;
        struct sources p;
        struct heard h;
        struct reclaim_run_opts o;
        struct reclaim_io io;
};

static struct t *begin(bool job)
{
        struct t *t = calloc(1, sizeof(*t));
        assert_non_null(t);
        if (job)
                orphaned_job(&t->d);
        else
                host(&t->d);
        t->o = opts_for(&t->d, &t->p);
        t->io = io_for(&t->h);
        return t;
}

static void end(struct t *t)
{
        assert_int_equal(demo_finish(&t->d, false), 0);
        free(t);
}

static bool has_pid(const pid_t *v, size_t n, pid_t pid)
{
        for (size_t i = 0; i < n; i++)
                if (v[i] == pid)
                        return true;
        return false;
}

/* Without yes: the plan names both workers, nothing is signalled, the report says so. */
static void test_dry_run(void **state)
{
        (void)state;
        struct t *t = begin(true);
        assert_int_equal(reclaim_run(&t->o, &t->io), EXIT_OK);
        assert_int_equal(t->h.reports, 1);
        assert_int_equal(t->h.errors, 0);
        assert_true(t->h.dry_run);
        assert_int_equal(t->h.plan_targets, 2);
        assert_true(has_pid(t->h.plan_pids, 2, t->d.procs[1].pid));
        assert_true(has_pid(t->h.plan_pids, 2, t->d.procs[2].pid));
        assert_string_equal(t->h.summary, "Dry run: 2 processes would get SIGTERM (SIGKILL after 2 s). Run again with --yes.");
        assert_int_equal(t->h.plans, 0);
        assert_int_equal(t->h.n_signalled, 0);
        assert_true(running(t->d.procs[1].pid));
        assert_true(running(t->d.procs[2].pid));
        end(t);
}

/* With yes: the plan goes out first, SIGTERM to each worker, both end, the 1024 MiB comes back
 * and the samples show it. */
static void test_acts(void **state)
{
        (void)state;
        struct t *t = begin(true);
        t->o.yes = true;
        assert_int_equal(reclaim_run(&t->o, &t->io), EXIT_OK);
        assert_int_equal(t->h.errors, 0);
        assert_string_equal(t->h.summary, "Memory recovered: 2 processes ended.");
        assert_false(t->h.dry_run);
        assert_int_equal(t->h.plans, 1);
        assert_int_equal(t->h.plan_before_action, 1);
        assert_int_equal(t->h.n_signalled, 2);
        assert_int_equal(t->h.signals[0], SIGTERM);
        assert_int_equal(t->h.signals[1], SIGTERM);
        assert_int_equal(t->h.n_ended, 2);
        for (size_t i = 1; i <= 2; i++) {
                assert_true(has_pid(t->h.signalled, 2, t->d.procs[i].pid));
                assert_true(has_pid(t->h.ended, 2, t->d.procs[i].pid));
                assert_false(running(t->d.procs[i].pid));
        }
        assert_int_equal(t->h.before_samples, 1);
        assert_true(t->h.before_bytes >= 1024 * MIB);
        assert_true(t->h.after_samples >= 1);
        assert_true(t->h.last_recovered);
        assert_true(t->h.last_after_bytes + 1024 * MIB <= t->h.before_bytes);
        end(t);
}

/* --pid 1 is refused whatever else is asked; nothing is signalled. */
static void test_pid1_refused(void **state)
{
        (void)state;
        struct t *t = begin(false);
        pid_t one = 1;
        t->o.pids = &one;
        t->o.n_pids = 1;
        assert_int_equal(reclaim_run(&t->o, &t->io), EXIT_INCOMPLETE);
        assert_non_null(strstr(t->h.notes, "refused: --pid 1 ("));
        assert_string_equal(t->h.summary, "Nothing was signalled: --pid names a process reclaim does not signal (see why above).");
        assert_int_equal(t->h.n_signalled, 0);
        end(t);
}

/* A GPU the host does not have: a usage error, said once, no report. */
static void test_no_such_gpu(void **state)
{
        (void)state;
        struct t *t = begin(false);
        t->o.only_gpu = 5;
        assert_int_equal(reclaim_run(&t->o, &t->io), EXIT_USAGE);
        assert_int_equal(t->h.errors, 1);
        assert_string_equal(t->h.error, "--gpu 5: this host has 2 GPUs");
        assert_int_equal(t->h.reports, 0);
        end(t);
}

/* An idle host: nothing to reclaim, and that is not a finding. */
static void test_nothing(void **state)
{
        (void)state;
        struct t *t = begin(false);
        assert_int_equal(reclaim_run(&t->o, &t->io), EXIT_OK);
        assert_string_equal(t->h.summary, "Nothing to reclaim: no confirmed ghost held by a process.");
        assert_int_equal(t->h.plan_targets, 0);
        end(t);
}

/* Another reclaim holds the host's lock: acting is refused before the scan, said in the report. */
static void test_lock_held(void **state)
{
        (void)state;
        struct t *t = begin(false);
        t->o.yes = true;
        char path[PATH_MAX];
        pid_t holder = 0;
        int fd = reclaim_lock(t->d.dir, path, sizeof(path), &holder);
        assert_true(fd >= 0);
        /* flock: a second open file of the same lock conflicts, in this process too */
        assert_int_equal(reclaim_run(&t->o, &t->io), EXIT_INCOMPLETE);
        close(fd);
        assert_string_equal(t->h.summary, "Cannot act: another reclaim is running.");
        char want[PATH_MAX + 128];
        snprintf(want, sizeof(want), "another reclaim is running as PID %d (lock %s)", (int)getpid(), path);
        assert_non_null(strstr(t->h.notes, want));
        assert_int_equal(t->h.n_signalled, 0);
        end(t);
}

/* Where pidfd_open is missing (Linux < 5.3; valgrind 3.19, scripts/valgrind-unit): reclaim
 * never signals by a bare PID, so acting is refused before anything is scanned. */
static void test_no_pidfd(void **state)
{
        (void)state;
        struct t *t = begin(false);
        t->o.yes = true;
        assert_int_equal(reclaim_run(&t->o, &t->io), EXIT_INCOMPLETE);
        assert_string_equal(t->h.summary, "Cannot act: no pidfd support.");
        assert_non_null(strstr(t->h.notes, "no pidfd_open (Linux 5.3+)"));
        end(t);
}

static int setup(void **state)
{
        (void)state;
        return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
        (void)state;
        rmdir(tmp);
        return 0;
}

int main(void)
{
        const struct CMUnitTest with_pidfd[] = {
                cmocka_unit_test(test_dry_run),
                cmocka_unit_test(test_acts),
                cmocka_unit_test(test_pid1_refused),
                cmocka_unit_test(test_no_such_gpu),
                cmocka_unit_test(test_nothing),
                cmocka_unit_test(test_lock_held),
        };
        const struct CMUnitTest without_pidfd[] = {
                cmocka_unit_test(test_no_pidfd),
                cmocka_unit_test(test_pid1_refused),
                cmocka_unit_test(test_no_such_gpu),
                cmocka_unit_test(test_nothing),
        };
        int self = pidfd_open_fd(getpid());
        if (self < 0)
                return cmocka_run_group_tests(without_pidfd, setup, teardown);
        close(self);
        return cmocka_run_group_tests(with_pidfd, setup, teardown);
}
