/* Unit tests for act/reclaim_act: the act against a fake system with a fake clock (targets that
 * end on SIGTERM, ignore it, sit in D state, exit by themselves, vanish, or whose PID was
 * reused), the start-time re-check on a fake /proc, memory recovery, the lock, and cgroup
 * resolution on a fake mount table. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "act/reclaim_act.h"
#include "util/fileio.h"

#define MIB (1024ull * 1024ull)
#define NEVER UINT64_MAX

/* ---- a fake system ------------------------------------------------------------------------------ */

struct fproc {
        pid_t pid;
        uint64_t start;         /* what /proc says now */
        char state;
        bool absent;            /* no such PID at all */
        uint64_t exit_at;       /* fake time of its end (NEVER) */
        uint64_t on_term_ms;    /* ends this long after SIGTERM (NEVER: ignores it) */
        uint64_t on_kill_ms;    /* ends this long after SIGKILL (NEVER: D state, never returns) */
        int eperm;
};

struct fsys {
        struct fproc p[8];
        size_t n;
        uint64_t now;
        bool nosys;
        int sent_fd[32], sent_sig[32];
        size_t n_sent;
        int opened[32];
        size_t n_opened;
        unsigned closes;
        void (*at_open)(struct fsys *);
};

static struct fproc *by_fd(struct fsys *f, int fd)
{
        return fd >= 100 && (size_t)(fd - 100) < f->n ? &f->p[fd - 100] : NULL;
}

static int f_pidfd_open(void *ctx, pid_t pid)
{
        struct fsys *f = ctx;
        if (f->nosys)
                return -ENOSYS;
        for (size_t i = 0; i < f->n; i++)
                if (f->p[i].pid == pid) {
                        if (f->p[i].absent || f->p[i].exit_at <= f->now)
                                return -ESRCH;
                        f->opened[f->n_opened++] = pid;
                        return 100 + (int)i;
                }
        if (pid == getpid())
                return 99; /* the support probe */
        return -ESRCH;
}

static int f_read_stat(void *ctx, pid_t pid, uint64_t *start, char *state)
{
        struct fsys *f = ctx;
        for (size_t i = 0; i < f->n; i++)
                if (f->p[i].pid == pid && !f->p[i].absent) {
                        *start = f->p[i].start;
                        *state = f->p[i].exit_at <= f->now ? 'Z' : f->p[i].state;
                        return 0;
                }
        return -ESRCH;
}

static int f_send(void *ctx, int fd, int sig)
{
        struct fsys *f = ctx;
        struct fproc *p = by_fd(f, fd);
        assert_non_null(p);
        if (p->eperm)
                return -EPERM;
        if (p->exit_at <= f->now)
                return -ESRCH;
        f->sent_fd[f->n_sent] = fd;
        f->sent_sig[f->n_sent++] = sig;
        uint64_t after = sig == SIGKILL ? p->on_kill_ms : sig == SIGTERM ? p->on_term_ms : NEVER;
        if (after != NEVER && f->now + after < p->exit_at)
                p->exit_at = f->now + after;
        return 0;
}

/* Advance the clock to the first exit among the fds, or by the timeout. */
static int f_wait(void *ctx, const int *fds, size_t n, bool *exited, unsigned timeout_ms)
{
        struct fsys *f = ctx;
        uint64_t first = NEVER;
        for (size_t i = 0; i < n; i++) {
                struct fproc *p = by_fd(f, fds[i]);
                if (p && p->exit_at < first)
                        first = p->exit_at;
        }
        if (first > f->now + timeout_ms) {
                f->now += timeout_ms;
                return 0;
        }
        if (first > f->now)
                f->now = first;
        int got = 0;
        for (size_t i = 0; i < n; i++) {
                struct fproc *p = by_fd(f, fds[i]);
                if (p && p->exit_at <= f->now) {
                        exited[i] = true;
                        got++;
                }
        }
        return got;
}

static uint64_t f_now(void *ctx)
{
        return ((struct fsys *)ctx)->now;
}

static void f_close(void *ctx, int fd)
{
        (void)fd;
        ((struct fsys *)ctx)->closes++;
}

static void f_pause(void *ctx, const char *stage)
{
        struct fsys *f = ctx;
        if (strcmp(stage, "open") == 0 && f->at_open)
                f->at_open(f);
}

static struct fproc *fproc_add(struct fsys *f, pid_t pid)
{
        struct fproc *p = &f->p[f->n++];
        memset(p, 0, sizeof(*p));
        p->pid = pid;
        p->start = 1000 + (uint64_t)pid;
        p->state = 'S';
        p->exit_at = NEVER;
        p->on_term_ms = 10;
        p->on_kill_ms = 1;
        return p;
}

struct run {
        struct fsys f;
        struct reclaim_sys sys;
        struct reclaim_plan plan;
        struct reclaim_target targets[8];
        struct reclaim_act_opts o;
        struct reclaim_action *acts;
        size_t n;
        unsigned logs;
};

static void count_log(void *ctx, const struct reclaim_action *a, enum reclaim_event ev)
{
        (void)a;
        (void)ev;
        ((struct run *)ctx)->logs++;
}

static struct run *run_new(void)
{
        struct run *r = calloc(1, sizeof(*r));
        r->sys = (struct reclaim_sys){ .ctx = &r->f, .pidfd_open = f_pidfd_open, .read_stat = f_read_stat,
                                       .send_signal = f_send, .wait_exit = f_wait, .now_ms = f_now,
                                       .close_fd = f_close };
        r->plan.targets = r->targets;
        r->o.sys = &r->sys;
        r->o.signal = SIGTERM;
        r->o.grace_ms = 500;
        r->o.timeout_ms = 2000;
        r->o.log = count_log;
        r->o.log_ctx = r;
        r->o.pause = f_pause;
        r->o.pause_ctx = &r->f;
        return r;
}

/* A target planned with the start time the fake /proc has now. */
static struct fproc *target_add(struct run *r, pid_t pid)
{
        struct fproc *p = fproc_add(&r->f, pid);
        struct reclaim_target *t = &r->targets[r->plan.n_targets++];
        memset(t, 0, sizeof(*t));
        t->pid = pid;
        t->start_ticks = p->start;
        t->state = 'S';
        t->gpu = 0;
        snprintf(t->comm, sizeof(t->comm), "worker%d", (int)pid);
        return p;
}

static int act(struct run *r)
{
        return reclaim_act_run(&r->plan, &r->o, &r->acts, &r->n);
}

static void run_free(struct run *r)
{
        reclaim_actions_free(r->acts, r->n);
        free(r);
}

static unsigned signals_to(const struct fsys *f, int fd, int *ret_sigs)
{
        unsigned n = 0;
        for (size_t i = 0; i < f->n_sent; i++)
                if (f->sent_fd[i] == fd)
                        ret_sigs[n++] = f->sent_sig[i];
        return n;
}

/* ---- the act ------------------------------------------------------------------------------------ */

static void test_terminated(void **state)
{
        (void)state;
        struct run *r = run_new();
        target_add(r, 301);
        target_add(r, 302)->on_term_ms = 30;
        assert_int_equal(act(r), 0);
        assert_int_equal(r->n, 2);
        assert_string_equal(reclaim_result_name(r->acts[0].result), "terminated");
        assert_string_equal(reclaim_result_name(r->acts[1].result), "terminated");
        assert_int_equal(r->acts[0].n_signals, 1);
        assert_int_equal(r->acts[0].signals[0], SIGTERM);
        assert_true(r->acts[0].seconds > 0.009 && r->acts[0].seconds < 0.011);
        assert_true(r->acts[1].seconds > 0.029 && r->acts[1].seconds < 0.031);
        assert_int_equal(r->f.n_sent, 2);
        assert_int_equal(r->logs, 4); /* a signal and a result each */
        assert_true(reclaim_result_ended(r->acts[0].result));
        run_free(r);
}

/* A stop signal at a time of the fake clock (stop_fsys->now >= stop_at_ms). */
static const struct fsys *stop_fsys;
static uint64_t stop_at_ms;

static int stop_at(void)
{
        return stop_fsys && stop_fsys->now >= stop_at_ms ? SIGTERM : 0;
}

static void test_stopped_during_grace_no_sigkill(void **state)
{
        (void)state;
        struct run *r = run_new();
        target_add(r, 301)->on_term_ms = NEVER; /* ignores SIGTERM */
        target_add(r, 302);                     /* ends 10 ms after it */
        stop_fsys = &r->f;
        stop_at_ms = r->f.now + 100;            /* within the 500 ms grace */
        r->o.stop = stop_at;
        assert_int_equal(act(r), 0);
        assert_string_equal(reclaim_result_name(r->acts[0].result), "left");
        assert_string_equal(r->acts[0].detail, "still running when reclaim was stopped (no further signal)");
        assert_string_equal(reclaim_result_name(r->acts[1].result), "terminated");
        assert_false(reclaim_result_ended(r->acts[0].result));
        assert_int_equal(r->f.n_sent, 2); /* the two SIGTERMs: no SIGKILL after the stop */
        for (size_t i = 0; i < r->f.n_sent; i++)
                assert_int_equal(r->f.sent_sig[i], SIGTERM);
        assert_true(r->acts[0].seconds >= 0.1 && r->acts[0].seconds < 0.2);
        stop_fsys = NULL;
        run_free(r);
}

static void test_stopped_before_signals(void **state)
{
        (void)state;
        struct run *r = run_new();
        target_add(r, 301);
        target_add(r, 302);
        stop_fsys = &r->f;
        stop_at_ms = 0; /* already there */
        r->o.stop = stop_at;
        assert_int_equal(act(r), 0);
        assert_int_equal(r->f.n_sent, 0);
        for (size_t i = 0; i < 2; i++) {
                assert_string_equal(reclaim_result_name(r->acts[i].result), "left");
                assert_string_equal(r->acts[i].detail, "not signalled: reclaim was stopped first");
        }
        stop_fsys = NULL;
        run_free(r);
}

static void test_ignores_sigterm_killed_after_grace(void **state)
{
        (void)state;
        struct run *r = run_new();
        target_add(r, 301)->on_term_ms = NEVER;
        target_add(r, 302); /* ends on SIGTERM: never gets SIGKILL */
        assert_int_equal(act(r), 0);
        assert_string_equal(reclaim_result_name(r->acts[0].result), "killed");
        assert_int_equal(r->acts[0].n_signals, 2);
        assert_int_equal(r->acts[0].signals[0], SIGTERM);
        assert_int_equal(r->acts[0].signals[1], SIGKILL);
        assert_true(r->acts[0].seconds >= 0.5 && r->acts[0].seconds < 0.6);
        int sigs[4];
        assert_int_equal(signals_to(&r->f, 101, sigs), 1);
        assert_int_equal(sigs[0], SIGTERM);
        assert_string_equal(reclaim_result_name(r->acts[1].result), "terminated");
        run_free(r);
}

static void test_d_state_bounded_by_timeout(void **state)
{
        (void)state;
        struct run *r = run_new();
        struct fproc *p = target_add(r, 301);
        p->on_term_ms = NEVER;
        p->on_kill_ms = NEVER; /* the SIGKILL stays queued: the driver call never returns */
        p->state = 'D';
        target_add(r, 302);
        assert_int_equal(act(r), 0);
        assert_string_equal(reclaim_result_name(r->acts[0].result), "stuck-in-D");
        assert_int_equal(r->acts[0].state, 'D');
        assert_non_null(strstr(r->acts[0].detail, "D state"));
        assert_int_equal(r->acts[0].n_signals, 2);
        assert_false(reclaim_result_ended(r->acts[0].result));
        /* it gave up at the timeout, not later */
        assert_true(r->f.now >= 2000 && r->f.now <= 2050);
        assert_true(r->acts[0].seconds >= 2.0 && r->acts[0].seconds < 2.06);
        assert_string_equal(reclaim_result_name(r->acts[1].result), "terminated");
        run_free(r);

        /* the same, not in D state: survived */
        r = run_new();
        p = target_add(r, 301);
        p->on_term_ms = p->on_kill_ms = NEVER;
        assert_int_equal(act(r), 0);
        assert_string_equal(reclaim_result_name(r->acts[0].result), "survived");
        run_free(r);
}

static void exit_301_now(struct fsys *f)
{
        f->p[0].exit_at = f->now;
}

static void test_exits_by_itself(void **state)
{
        (void)state;
        struct run *r = run_new();
        target_add(r, 301);
        target_add(r, 302);
        r->f.at_open = exit_301_now; /* ends after it was opened and checked, before the signal */
        assert_int_equal(act(r), 0);
        assert_string_equal(reclaim_result_name(r->acts[0].result), "exited");
        assert_int_equal(r->acts[0].n_signals, 0);
        int sigs[4];
        assert_int_equal(signals_to(&r->f, 100, sigs), 0);
        assert_string_equal(reclaim_result_name(r->acts[1].result), "terminated");
        run_free(r);
}

static void test_gone_before_signal(void **state)
{
        (void)state;
        struct run *r = run_new();
        target_add(r, 301)->absent = true;
        struct fproc *z = target_add(r, 302);
        z->exit_at = 0; /* a zombie already */
        target_add(r, 303);
        assert_int_equal(act(r), 0);
        assert_string_equal(reclaim_result_name(r->acts[0].result), "gone-before-signal");
        assert_string_equal(reclaim_result_name(r->acts[1].result), "gone-before-signal");
        assert_string_equal(reclaim_result_name(r->acts[2].result), "terminated");
        assert_int_equal(r->f.n_sent, 1);
        assert_int_equal(r->f.sent_fd[0], 102);
        run_free(r);
}

static void test_pid_reused_never_signalled(void **state)
{
        (void)state;
        struct run *r = run_new();
        struct fproc *p = target_add(r, 301);
        p->start += 4242; /* the PID now names a process that started later */
        target_add(r, 302);
        assert_int_equal(act(r), 0);
        assert_string_equal(reclaim_result_name(r->acts[0].result), "pid-reused");
        assert_non_null(strstr(r->acts[0].detail, "another process"));
        int sigs[4];
        assert_int_equal(signals_to(&r->f, 100, sigs), 0);
        /* the reused PID's process lives on */
        assert_true(p->exit_at == NEVER);
        assert_string_equal(reclaim_result_name(r->acts[1].result), "terminated");
        /* every signal went to an opened, verified target */
        for (size_t i = 0; i < r->f.n_sent; i++)
                assert_int_equal(r->f.sent_fd[i], 101);
        run_free(r);
}

static void test_not_permitted_and_kill_first(void **state)
{
        (void)state;
        struct run *r = run_new();
        target_add(r, 301)->eperm = 1;
        assert_int_equal(act(r), 0);
        assert_string_equal(reclaim_result_name(r->acts[0].result), "not-permitted");
        assert_false(reclaim_result_ended(r->acts[0].result));
        run_free(r);

        r = run_new();
        r->o.signal = SIGKILL;
        target_add(r, 301)->on_term_ms = NEVER;
        assert_int_equal(act(r), 0);
        assert_string_equal(reclaim_result_name(r->acts[0].result), "killed");
        assert_int_equal(r->acts[0].n_signals, 1);
        assert_int_equal(r->acts[0].signals[0], SIGKILL);
        assert_true(r->acts[0].seconds < 0.01);
        run_free(r);
}

static void test_no_pidfd_support(void **state)
{
        (void)state;
        struct run *r = run_new();
        target_add(r, 301);
        r->f.nosys = true;
        assert_int_equal(act(r), -ENOSYS);
        assert_int_equal(r->f.n_sent, 0);
        run_free(r);
}

/* ---- the re-check on a fake /proc ----------------------------------------------------------------- */

static void write_stat(const char *root, int pid, unsigned long long start, char state)
{
        char dir[512], path[600], line[512];
        snprintf(dir, sizeof(dir), "%s/%d", root, pid);
        mkdir(dir, 0755);
        snprintf(path, sizeof(path), "%s/stat", dir);
        /* 52 fields; the start time is field 22 */
        snprintf(line, sizeof(line),
                 "%d (py (worker)) %c 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0 "
                 "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                 pid, state, pid, pid, start);
        assert_int_equal(write_file_atomic(path, line, strlen(line)), 0);
}

static void test_verify_start_fake_proc(void **state)
{
        (void)state;
        char root[] = "/tmp/gv-proc-XXXXXX";
        assert_non_null(mkdtemp(root));
        write_stat(root, 4242, 123456, 'S');
        write_stat(root, 4243, 777, 'Z');
        struct reclaim_sys s;
        reclaim_sys_real(&s, root);
        char *detail = NULL;
        assert_int_equal(reclaim_verify_start(&s, 4242, 123456, &detail), 0);
        assert_int_equal(reclaim_verify_start(&s, 4242, 123400, &detail), -ESTALE);
        assert_string_equal(detail, "PID 4242 started at tick 123456, the scan's process at tick 123400: another process");
        assert_int_equal(reclaim_verify_start(&s, 4243, 777, &detail), -ESRCH);
        assert_int_equal(reclaim_verify_start(&s, 4244, 1, &detail), -ESRCH);
        free(detail);
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
        assert_int_equal(system(cmd), 0);
}

/* The real system against a real child: opened, re-checked, SIGTERM through the pidfd. */
static void test_real_child(void **state)
{
        (void)state;
        struct reclaim_sys probe;
        reclaim_sys_real(&probe, "/proc");
        if (reclaim_pidfd_supported(&probe) < 0)
                skip(); /* no pidfd_open here (an old kernel, or valgrind, which does not know it) */
        pid_t pid = fork();
        if (pid == 0) {
                pause();
                _exit(0);
        }
        struct reclaim_sys s;
        reclaim_sys_real(&s, "/proc");
        uint64_t start = 0;
        char st = '?';
        for (int i = 0; i < 100 && (s.read_stat(s.ctx, pid, &start, &st) < 0 || st == '?'); i++)
                usleep(1000);
        struct reclaim_target t = { .pid = pid, .start_ticks = start, .gpu = -1 };
        struct reclaim_plan p = { .targets = &t, .n_targets = 1 };
        struct reclaim_act_opts o = { .sys = &s, .signal = SIGTERM, .grace_ms = 1000, .timeout_ms = 3000 };
        struct reclaim_action *a = NULL;
        size_t n = 0;
        assert_int_equal(reclaim_act_run(&p, &o, &a, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(reclaim_result_name(a[0].result), "terminated");
        int wst;
        assert_int_equal(waitpid(pid, &wst, 0), pid);
        assert_true(WIFSIGNALED(wst) && WTERMSIG(wst) == SIGTERM);
        reclaim_actions_free(a, n);

        /* a plan whose start time does not match: the child is left alone */
        pid = fork();
        if (pid == 0) {
                pause();
                _exit(0);
        }
        t.pid = pid;
        t.start_ticks = 1;
        assert_int_equal(reclaim_act_run(&p, &o, &a, &n), 0);
        assert_string_equal(reclaim_result_name(a[0].result), "pid-reused");
        assert_int_equal(kill(pid, 0), 0);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        reclaim_actions_free(a, n);
}

/* ---- memory recovery ------------------------------------------------------------------------------- */

static void test_recovery(void **state)
{
        (void)state;
        struct recovery_gpu g;
        recovery_init(&g, 1, 1024 * MIB, 800 * MIB);
        assert_true(g.tolerance == 1024 * MIB / 10);
        recovery_observe(&g, 3072 * MIB, -1); /* before: a live job's 2 GiB + the 1 GiB ghost */
        recovery_observe(&g, 3072 * MIB, 0.05);
        assert_false(g.recovered);
        recovery_observe(&g, 2560 * MIB, 0.10); /* half of it */
        assert_false(g.recovered);
        assert_false(recovery_all_done(&g, 1));
        recovery_observe(&g, 2048 * MIB, 0.15);
        assert_true(g.recovered);
        assert_true(g.recovery_s > 0.149 && g.recovery_s < 0.151);
        recovery_observe(&g, 2000 * MIB, 0.20);
        assert_true(g.recovery_s < 0.151); /* the first time counts */
        assert_true(g.after == 2000 * MIB);
        assert_int_equal(g.samples, 4);
        assert_true(recovery_all_done(&g, 1));
        /* nothing expected: done from the start, never "recovered" */
        struct recovery_gpu z;
        recovery_init(&z, 0, 0, 800 * MIB);
        recovery_observe(&z, 100, -1);
        recovery_observe(&z, 100, 1);
        assert_false(z.recovered);
        assert_true(recovery_all_done(&z, 1));
        /* a small ghost: the tolerance is a tenth of it, not the noise floor */
        recovery_init(&z, 0, 100 * MIB, 800 * MIB);
        recovery_observe(&z, 100 * MIB, -1);
        recovery_observe(&z, 50 * MIB, 0.1);
        assert_false(z.recovered);
        recovery_observe(&z, 5 * MIB, 0.2);
        assert_true(z.recovered);
}

/* ---- the lock --------------------------------------------------------------------------------------- */

static void test_lock(void **state)
{
        (void)state;
        char dir[] = "/tmp/gv-lock-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[512];
        pid_t holder = -1;
        int fd = reclaim_lock(dir, path, sizeof(path), &holder);
        assert_true(fd >= 0);
        char want[600];
        snprintf(want, sizeof(want), "%s/reclaim.lock", dir);
        assert_string_equal(path, want);
        /* a second reclaim (another open file description) is refused and told who holds it */
        assert_int_equal(reclaim_lock(dir, path, sizeof(path), &holder), -EWOULDBLOCK);
        assert_int_equal(holder, getpid());
        close(fd);
        fd = reclaim_lock(dir, path, sizeof(path), &holder);
        assert_true(fd >= 0);
        close(fd);
        unlink(want);
        rmdir(dir);
}

/* Never follow or truncate a file in a directory others can write into (a world-writable /tmp),
 * nor a symlink or a hard link planted where the lock goes. */
static void test_lock_unsafe_places(void **state)
{
        (void)state;
        char dir[] = "/tmp/gv-lock-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char victim[600], lock[600], path[512];
        snprintf(victim, sizeof(victim), "%s/victim", dir);
        snprintf(lock, sizeof(lock), "%s/reclaim.lock", dir);
        assert_int_equal(write_file_atomic(victim, "precious\n", 9), 0);
        pid_t holder;
        /* world-writable (and sticky, like /tmp): refused, nothing created */
        assert_int_equal(chmod(dir, 01777), 0);
        assert_int_equal(reclaim_lock_at(dir, path, sizeof(path), &holder), -EPERM);
        assert_int_equal(access(lock, F_OK), -1);
        assert_int_equal(chmod(dir, 0700), 0);
        /* a symlink planted at the lock's name: not followed, the target untouched */
        assert_int_equal(symlink(victim, lock), 0);
        assert_int_equal(reclaim_lock_at(dir, path, sizeof(path), &holder), -ELOOP);
        unlink(lock);
        /* a hard link to another file: not truncated */
        assert_int_equal(link(victim, lock), 0);
        assert_int_equal(reclaim_lock_at(dir, path, sizeof(path), &holder), -EPERM);
        unlink(lock);
        char *txt = NULL;
        size_t len = 0;
        assert_int_equal(read_file_at(AT_FDCWD, victim, 64, &txt, &len), 0);
        assert_string_equal(txt, "precious\n");
        free(txt);
        /* a symlink as the directory itself: refused */
        char sl[600];
        snprintf(sl, sizeof(sl), "%s/dirlink", dir);
        assert_int_equal(symlink(dir, sl), 0);
        assert_int_equal(reclaim_lock_at(sl, path, sizeof(path), &holder), -ENOTDIR);
        unlink(sl);
        /* the same directory, safe: the lock is taken */
        int fd = reclaim_lock_at(dir, path, sizeof(path), &holder);
        assert_true(fd >= 0);
        close(fd);
        unlink(lock);
        unlink(victim);
        rmdir(dir);
}

/* ---- cgroups on a fake mount table ------------------------------------------------------------------ */

static void put(const char *path, const char *text)
{
        assert_int_equal(write_file_atomic(path, text, strlen(text)), 0);
}

static void test_cgroup_resolve_and_pids(void **state)
{
        (void)state;
        char root[] = "/tmp/gv-cg-XXXXXX";
        assert_non_null(mkdtemp(root));
        char p[1024], mnt[600], fs[1024], rel[1024];
        snprintf(p, sizeof(p), "%s/self", root);
        mkdir(p, 0755);
        snprintf(mnt, sizeof(mnt), "%s/cg root", root); /* a space: escaped as \040 in mountinfo */
        mkdir(mnt, 0755);
        char mi[2048];
        snprintf(mi, sizeof(mi),
                 "22 1 0:20 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
                 "30 22 0:26 / %s/cg\\040root rw,nosuid shared:9 - cgroup2 cgroup2 rw\n", root);
        snprintf(p, sizeof(p), "%s/self/mountinfo", root);
        put(p, mi);
        snprintf(p, sizeof(p), "%s/job_42", mnt);
        mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/job_42/cgroup.procs", mnt);
        put(p, "101\n102\n0\n");
        snprintf(p, sizeof(p), "%s/job_42/step_0", mnt);
        mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/job_42/step_0/cgroup.procs", mnt);
        put(p, "103\n101\n");
        snprintf(p, sizeof(p), "%s/cgroup.procs", mnt);
        put(p, "1\n");

        assert_int_equal(reclaim_cgroup_resolve(root, "/job_42", fs, sizeof(fs), rel, sizeof(rel)), 0);
        snprintf(p, sizeof(p), "%s/job_42", mnt);
        assert_string_equal(fs, p);
        assert_string_equal(rel, "/job_42");
        /* the directory itself, and a relative path, with a trailing slash */
        assert_int_equal(reclaim_cgroup_resolve(root, p, fs, sizeof(fs), rel, sizeof(rel)), 0);
        assert_string_equal(rel, "/job_42");
        assert_int_equal(reclaim_cgroup_resolve(root, "job_42/", fs, sizeof(fs), rel, sizeof(rel)), 0);
        assert_string_equal(rel, "/job_42");
        /* refused: the root, a way out, nothing there */
        assert_int_equal(reclaim_cgroup_resolve(root, "/", fs, sizeof(fs), rel, sizeof(rel)), -EINVAL);
        assert_int_equal(reclaim_cgroup_resolve(root, mnt, fs, sizeof(fs), rel, sizeof(rel)), -EINVAL);
        assert_int_equal(reclaim_cgroup_resolve(root, "/job_42/../..", fs, sizeof(fs), rel, sizeof(rel)), -EINVAL);
        assert_int_equal(reclaim_cgroup_resolve(root, "/job_7", fs, sizeof(fs), rel, sizeof(rel)), -ENOENT);

        pid_t *pids = NULL;
        size_t n = 0;
        snprintf(p, sizeof(p), "%s/job_42", mnt);
        assert_int_equal(reclaim_cgroup_pids(p, &pids, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(pids[0], 101);
        assert_int_equal(pids[1], 102);
        assert_int_equal(pids[2], 103);
        free(pids);

        /* no cgroup2 mount at all */
        snprintf(p, sizeof(p), "%s/self/mountinfo", root);
        put(p, "22 1 0:20 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n");
        assert_int_equal(reclaim_cgroup_resolve(root, "/job_42", fs, sizeof(fs), rel, sizeof(rel)), -ENOTSUP);
        char cmd[1200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

/* Without cgroup.kill: SIGKILL through a pidfd to each member, checked to still be in the cgroup
 * (its /proc/PID/cgroup, here a fake /proc), round after round until cgroup.procs is empty. */
struct cg_tick {
        pid_t member;
        char procs[700];
};

static void cg_tick(void *ctx, uint64_t t_ms)
{
        (void)t_ms;
        struct cg_tick *c = ctx;
        int st;
        if (c->member > 0 && waitpid(c->member, &st, WNOHANG) == c->member) {
                /* the kernel would drop it from cgroup.procs: do what it does */
                assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
                c->member = -1;
                put(c->procs, "");
        }
}

static void test_cgroup_kill_fallback(void **state)
{
        (void)state;
        struct reclaim_sys probe;
        reclaim_sys_real(&probe, "/proc");
        if (reclaim_pidfd_supported(&probe) < 0)
                skip();
        char root[] = "/tmp/gv-cgk-XXXXXX";
        assert_non_null(mkdtemp(root));
        pid_t member = fork();
        if (member == 0) {
                pause();
                _exit(0);
        }
        pid_t stranger = fork(); /* listed by cgroup.procs, but its /proc says elsewhere: a reused PID */
        if (stranger == 0) {
                pause();
                _exit(0);
        }
        char fs[100], p[200], proc[100];
        snprintf(fs, sizeof(fs), "%s/job_9", root);
        mkdir(fs, 0755);
        snprintf(proc, sizeof(proc), "%s/proc", root);
        mkdir(proc, 0755);
        struct cg_tick c = { .member = member };
        snprintf(c.procs, sizeof(c.procs), "%s/cgroup.procs", fs);
        char list[64];
        snprintf(list, sizeof(list), "%d\n", (int)member);
        put(c.procs, list);
        snprintf(p, sizeof(p), "%s/%d", proc, (int)member);
        mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/%d/cgroup", proc, (int)member);
        put(p, "1:name=systemd:/\n0::/job_9\n");
        snprintf(p, sizeof(p), "%s/%d", proc, (int)stranger);
        mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/%d/cgroup", proc, (int)stranger);
        put(p, "0::/job_90\n"); /* a prefix of the name, not the cgroup */
        snprintf(p, sizeof(p), "%s/job_9/sub", root);
        mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/job_9/sub/cgroup.procs", root);
        snprintf(list, sizeof(list), "%d\n", (int)stranger);
        put(p, list);

        struct reclaim_sys s;
        reclaim_sys_real(&s, proc);
        struct reclaim_cgroup_result res;
        assert_int_equal(reclaim_cgroup_kill(fs, "/job_9", &s, 1500, cg_tick, &c, NULL, &res), 0);
        assert_false(res.used_kill_file);
        assert_true(res.rounds >= 1);
        assert_int_equal(c.member, -1);         /* killed with SIGKILL and reaped */
        assert_int_equal(kill(stranger, 0), 0); /* never signalled */
        assert_int_equal(res.remaining, 1);     /* it stays listed: the timeout ended the wait */
        assert_true(res.seconds >= 1.5 && res.seconds < 3);
        kill(stranger, SIGKILL);
        waitpid(stranger, NULL, 0);
        char cmd[700];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_terminated),
                cmocka_unit_test(test_ignores_sigterm_killed_after_grace),
                cmocka_unit_test(test_stopped_during_grace_no_sigkill),
                cmocka_unit_test(test_stopped_before_signals),
                cmocka_unit_test(test_d_state_bounded_by_timeout),
                cmocka_unit_test(test_exits_by_itself),
                cmocka_unit_test(test_gone_before_signal),
                cmocka_unit_test(test_pid_reused_never_signalled),
                cmocka_unit_test(test_not_permitted_and_kill_first),
                cmocka_unit_test(test_no_pidfd_support),
                cmocka_unit_test(test_verify_start_fake_proc),
                cmocka_unit_test(test_real_child),
                cmocka_unit_test(test_recovery),
                cmocka_unit_test(test_lock),
                cmocka_unit_test(test_lock_unsafe_places),
                cmocka_unit_test(test_cgroup_resolve_and_pids),
                cmocka_unit_test(test_cgroup_kill_fallback),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
