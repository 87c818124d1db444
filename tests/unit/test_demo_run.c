/* Unit tests for run/demo_run: the demo's acting steps called without argv, on a real
 * temporary simulated host with the simulated job's real processes (the story around them:
 * t_demo.sh). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "act/reclaim_act.h"
#include "collect/sample.h"
#include "run/demo_run.h"
#include "util/pidfd.h"

static char tmp[] = "/tmp/gv-test-demo-XXXXXX";

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

/* Running, or not: gone, or a zombie not reaped yet (its parent is init or a subreaper); read
 * as reclaim reads it (reclaim_sys's read_stat). */
static bool running(pid_t pid)
{
        struct reclaim_sys sys;
        reclaim_sys_real(&sys, "/proc");
        uint64_t start;
        char state = '?';
        return sys.read_stat(sys.ctx, pid, &start, &state) == 0 && state != 'Z' && state != 'X';
}

static void start(struct demo *d, unsigned workers)
{
        memset(d, 0, sizeof(*d));
        d->self = GV_BUILD_DIR "/ghostvram";
        assert_int_equal(demo_host_create(d, tmp), 0);
        assert_int_equal(strncmp(d->dir, tmp, strlen(tmp)), 0);
        assert_non_null(strstr(d->dir, "/ghostvram-demo-"));
        assert_int_equal(demo_job_start(d, 1024, workers), 0);
        assert_int_equal(d->n_procs, 1 + workers);
        assert_string_equal(d->procs[0].role, "owner");
        for (size_t i = 0; i < d->n_procs; i++) {
                assert_true(d->procs[i].pidfd >= 0);
                assert_true(running(d->procs[i].pid));
        }
        for (size_t i = 1; i < d->n_procs; i++)
                assert_string_equal(d->procs[i].role, "worker");
}

/* The owner is killed and its workers live on; the end stops them and removes the host. */
static void test_story_steps(void **state)
{
        (void)state;
        struct demo d;
        start(&d, 2);
        assert_int_equal(demo_kill_owner(&d), 0);
        assert_false(running(d.procs[0].pid));
        assert_true(running(d.procs[1].pid));
        assert_true(running(d.procs[2].pid));
        pid_t workers[2] = { d.procs[1].pid, d.procs[2].pid };
        assert_int_equal(demo_finish(&d, false), 0);
        assert_false(running(workers[0]));
        assert_false(running(workers[1]));
        struct stat st;
        assert_int_equal(stat(d.dir, &st), -1);
        assert_int_equal(errno, ENOENT);
        for (size_t i = 0; i < d.n_procs; i++)
                assert_int_equal(d.procs[i].pidfd, -1);
}

/* nvidia-smi's view: the host's GPUs as the commands read them under GHOSTVRAM_SIM, the killed
 * owner still listed on GPU 0; a directory that holds no host is said to be none. */
static void test_smi_facts(void **state)
{
        (void)state;
        struct demo d;
        start(&d, 1);
        assert_int_equal(demo_kill_owner(&d), 0);
        struct facts *f = NULL;
        char err[1024] = "";
        assert_int_equal(demo_smi_facts(d.dir, &f, err, sizeof(err)), 0);
        assert_string_equal(getenv("GHOSTVRAM_SIM"), d.dir);
        assert_true(f->gpu->driver_present);
        assert_int_equal(f->gpu->n_gpus, 2);
        assert_int_equal(f->gpu->gpus[0].n_procs, 1);
        assert_int_equal(f->gpu->gpus[0].procs[0].pid, d.procs[0].pid);
        facts_free(f);
        assert_int_equal(demo_finish(&d, false), 0);
        assert_int_equal(demo_smi_facts(tmp, &f, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "not a simulated host"));
        assert_non_null(strstr(err, tmp));
        unsetenv("GHOSTVRAM_SIM");
}

/* --keep: the processes and the host stay (stopped here by the test). */
static void test_keep(void **state)
{
        (void)state;
        struct demo d;
        start(&d, 1);
        assert_int_equal(demo_finish(&d, true), 0);
        assert_true(running(d.procs[0].pid));
        assert_true(running(d.procs[1].pid));
        struct stat st;
        assert_int_equal(stat(d.dir, &st), 0);
        kill(d.procs[0].pid, SIGKILL); /* the test's own processes, a moment old */
        kill(d.procs[1].pid, SIGKILL);
        for (int i = 0; i < 100 && (running(d.procs[0].pid) || running(d.procs[1].pid)); i++)
                usleep(20 * 1000);
        d.n_procs = 0;
        assert_int_equal(demo_finish(&d, false), 0); /* removes the host */
        assert_int_equal(stat(d.dir, &st), -1);
}

/* A temporary directory that cannot be made: said, nothing started. */
static void test_no_tmpdir(void **state)
{
        (void)state;
        struct demo d;
        memset(&d, 0, sizeof(d));
        d.self = GV_BUILD_DIR "/ghostvram";
        assert_int_equal(demo_host_create(&d, "/nonexistent-gv-dir"), -ENOENT);
        assert_string_equal(d.dir, "");
        assert_int_equal(d.n_procs, 0);
}

/* The noise floor of the simulated 80 GB GPU: 1% of 81559 MiB. */
static void test_floor(void **state)
{
        (void)state;
        assert_int_equal(demo_floor_mib(), 816);
}

/* Where pidfd_open is missing (Linux < 5.3; valgrind 3.19 does not know the system call,
 * scripts/valgrind-unit): no job is started, and the host is removed. */
static void test_no_pidfd(void **state)
{
        (void)state;
        struct demo d;
        memset(&d, 0, sizeof(d));
        d.self = GV_BUILD_DIR "/ghostvram";
        assert_int_equal(demo_host_create(&d, tmp), 0);
        assert_int_equal(demo_job_start(&d, 1024, 2), -ENOSYS);
        assert_int_equal(d.n_procs, 0);
        assert_int_equal(demo_finish(&d, false), 0);
        struct stat st;
        assert_int_equal(stat(d.dir, &st), -1);
}

/* The reader of a pipe going away is seen without writing to it. */
static void test_reader_gone(void **state)
{
        (void)state;
        int p[2];
        assert_int_equal(pipe(p), 0);
        assert_false(demo_reader_gone(p[1]));
        close(p[0]);
        assert_true(demo_reader_gone(p[1]));
        close(p[1]);
}

int main(void)
{
        const struct CMUnitTest with_pidfd[] = {
                cmocka_unit_test(test_story_steps),
                cmocka_unit_test(test_keep),
                cmocka_unit_test(test_smi_facts),
                cmocka_unit_test(test_no_tmpdir),
                cmocka_unit_test(test_floor),
                cmocka_unit_test(test_reader_gone),
        };
        const struct CMUnitTest without_pidfd[] = {
                cmocka_unit_test(test_no_pidfd),
                cmocka_unit_test(test_no_tmpdir),
                cmocka_unit_test(test_floor),
                cmocka_unit_test(test_reader_gone),
        };
        int self = pidfd_open_fd(getpid());
        if (self < 0)
                return cmocka_run_group_tests(without_pidfd, setup, teardown);
        close(self);
        return cmocka_run_group_tests(with_pidfd, setup, teardown);
}
