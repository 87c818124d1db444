/* host_scan on this machine's real /proc, with live processes holding plain files under a
 * temporary prefix (like the simulated driver's device files):
 *  - differential: the (pid, file) pairs found must equal what fuser(1) reports for the same
 *    files (skipped only when fuser is not installed);
 *  - a scan as an unprivileged user reports what it could not see, as sentences;
 *  - processes that come and go during the walk are skipped silently;
 *  - a bundle of the live scan reads back into the same report. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/host.h"
#include "test_host_util.h"
#include "util/deadline.h"
#include "util/fileio.h"

extern char **environ;

#define FD HOST_VIA_FD
#define MM HOST_VIA_MMAP
#define MAX_KIDS 16

struct live {
        char tmp[64];
        char prefix[256];
        char ctl[256], gpu[256];
        pid_t kids[MAX_KIDS];
        unsigned n_kids;
        int ready[2];
        bool subreaper;         /* PR_SET_CHILD_SUBREAPER took: orphaned workers come back to us */
};

static void file_of(const char *path)
{
        char page[8192];
        memset(page, 'x', sizeof(page));
        assert_int_equal(write_file_atomic(path, page, sizeof(page)), 0);
}

/* Map path shared and keep only the mapping. */
static void map_only(const char *path)
{
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED)
                _exit(90);
        close(fd);
}

static int hold(const char *path, int flags)
{
        int fd = open(path, O_RDWR | flags);
        if (fd < 0)
                _exit(91);
        return fd;
}

static void signal_ready(struct live *l)
{
        if (write(l->ready[1], "r", 1) != 1)
                _exit(92);
}

static void wait_forever(void)
{
        for (;;)
                pause();
}

static void *idle_thread(void *arg)
{
        (void)arg;
        wait_forever();
        return NULL;
}

enum role { R_FD, R_MAP, R_BOTH, R_NOTHING, R_EXEC_CLOEXEC, R_EXEC_INHERIT, R_FORKED, R_ZOMBIE_LEADER };

static pid_t spawn(struct live *l, enum role role)
{
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid > 0) {
                setpgid(pid, pid);      /* as the child does: no window where it has none */
                l->kids[l->n_kids++] = pid;
                return pid;
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setpgid(0, 0);          /* a job of its own; a forked worker stays in it */
        switch (role) {
        case R_FD:
                hold(l->ctl, 0);
                break;
        case R_MAP:
                map_only(l->gpu);
                break;
        case R_BOTH:
                hold(l->ctl, 0);
                map_only(l->ctl);
                hold(l->gpu, 0);
                break;
        case R_NOTHING:
                break;
        case R_EXEC_CLOEXEC:
        case R_EXEC_INHERIT:
                /* CUDA opens its nodes close-on-exec: an exec'd child holds nothing */
                hold(role == R_EXEC_CLOEXEC ? l->gpu : l->ctl, role == R_EXEC_CLOEXEC ? O_CLOEXEC : 0);
                signal_ready(l);
                execlp("sleep", "sleep", "1000", (char *)NULL);
                _exit(93);
        case R_ZOMBIE_LEADER: {
                /* the main thread exits, a second thread keeps the process (and its fd table
                 * and address space) alive: the leader shows as a zombie */
                hold(l->ctl, O_CLOEXEC);
                map_only(l->gpu);
                pthread_t t;
                if (pthread_create(&t, NULL, idle_thread, NULL) != 0)
                        _exit(94);
                signal_ready(l);
                pthread_exit(NULL);
        }
        case R_FORKED: {
                /* the data-loader story: the owner forks a worker, then is killed; the worker
                 * keeps the inherited descriptor and mapping */
                hold(l->gpu, O_CLOEXEC);
                map_only(l->ctl);
                pid_t w = fork();
                if (w == 0) {
                        signal_ready(l);
                        wait_forever();
                }
                break;
        }
        }
        signal_ready(l);
        wait_forever();
        return 0;
}

static void wait_ready(struct live *l, unsigned n)
{
        for (unsigned i = 0; i < n; i++) {
                struct pollfd pfd = { .fd = l->ready[0], .events = POLLIN };
                assert_int_equal(poll(&pfd, 1, 10000), 1);     /* fail, never hang */
                char c;
                assert_int_equal(read(l->ready[0], &c, 1), 1);
        }
}

/* Wait until pid has exec'd `comm`. */
static void wait_comm(pid_t pid, const char *comm)
{
        char path[64], *data;
        size_t len;
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        for (int i = 0; i < 500; i++) {
                if (read_file_at(AT_FDCWD, path, 4096, &data, &len) == 0) {
                        bool ok = strncmp(data, comm, strlen(comm)) == 0;
                        free(data);
                        if (ok)
                                return;
                }
                usleep(10 * 1000);
        }
        fail_msg("pid %d never became %s", (int)pid, comm);
}

static int live_setup(void **state)
{
        struct live *l = calloc(1, sizeof(*l));
        assert_non_null(l);
        th_tmpdir(l->tmp);
        char dev[128];
        snprintf(dev, sizeof(dev), "%s/dev", l->tmp);
        assert_int_equal(mkdir(dev, 0755), 0);
        snprintf(l->prefix, sizeof(l->prefix), "%s/dev/nvidia", l->tmp);
        snprintf(l->ctl, sizeof(l->ctl), "%s/dev/nvidiactl", l->tmp);
        snprintf(l->gpu, sizeof(l->gpu), "%s/dev/nvidia0", l->tmp);
        file_of(l->ctl);
        file_of(l->gpu);
        assert_int_equal(pipe2(l->ready, O_CLOEXEC), 0);
        /* orphaned workers come back to us, so that they can be reaped. qemu-user (the arm64
         * tests, docs/arm64.md) does not pass this option through: EINVAL. Said, then the
         * orphans go to the kernel's choice (init, or an ancestor that is a subreaper). */
        l->subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
        if (!l->subreaper) {
                assert_int_equal(errno, EINVAL);
                fprintf(stderr, "note: PR_SET_CHILD_SUBREAPER is not supported here (qemu-user?): orphaned "
                                "workers are reparented by the kernel, not to this test\n");
        }
        *state = l;
        return 0;
}

/* Runs after a failed test too (cmocka calls it): kill every job started, reap without
 * blocking, for at most a few seconds. */
static int live_teardown(void **state)
{
        struct live *l = *state;
        for (unsigned i = 0; i < l->n_kids; i++)
                kill(-l->kids[i], SIGKILL);
        for (int i = 0; i < 500; i++) {
                pid_t w = waitpid(-1, NULL, WNOHANG);
                if (w < 0 && errno == ECHILD)
                        break;
                if (w <= 0)
                        usleep(10 * 1000);
        }
        close(l->ready[0]);
        close(l->ready[1]);
        th_rmrf(l->tmp);
        free(l);
        return 0;
}

struct pair {
        pid_t pid;
        char name[48];
};

static int pair_cmp(const void *a, const void *b)
{
        const struct pair *x = a, *y = b;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return strcmp(x->name, y->name);
}

/* fuser FILE: the PIDs it prints on stdout (access letters go to stderr). */
static unsigned fuser_pids(const char *file, pid_t *out, unsigned max)
{
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        char *argv[] = { (char *)"fuser", (char *)file, NULL };
        pid_t pid;
        assert_int_equal(posix_spawnp(&pid, "fuser", &fa, NULL, argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        char buf[65536];
        size_t len = 0;
        ssize_t n;
        while ((n = read(p[0], buf + len, sizeof(buf) - 1 - len)) > 0)
                len += (size_t)n;
        close(p[0]);
        buf[len] = '\0';
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        unsigned k = 0;
        char *save = NULL;
        for (char *t = strtok_r(buf, " \t\n", &save); t && k < max; t = strtok_r(NULL, " \t\n", &save))
                out[k++] = (pid_t)atol(t);
        return k;
}

static bool have_fuser(void)
{
        return system("command -v fuser >/dev/null 2>&1") == 0;
}

static void test_differential_fuser(void **state)
{
        if (!have_fuser())
                skip();
        struct live *l = *state;
        pid_t a = spawn(l, R_FD);
        pid_t b = spawn(l, R_MAP);
        pid_t c = spawn(l, R_BOTH);
        pid_t d = spawn(l, R_NOTHING);
        pid_t e1 = spawn(l, R_EXEC_CLOEXEC);
        pid_t e2 = spawn(l, R_EXEC_INHERIT);
        pid_t g = spawn(l, R_FORKED);
        /* 4 plain children, 2 exec'd ones (once, before exec), the forking owner and its worker */
        wait_ready(l, 8);
        wait_comm(e1, "sleep");
        wait_comm(e2, "sleep");
        /* kill the owner; its worker lives on with what it inherited */
        assert_int_equal(kill(g, SIGKILL), 0);
        assert_int_equal(waitpid(g, NULL, 0), g);

        struct host_opts o = { .dev_prefix = l->prefix, .timeout_ms = 2000 };
        struct host_report *r;
        assert_int_equal(host_scan(&o, &r), 0);
        assert_int_equal(r->self_pid, getpid());

        struct pair ours[64] = { { 0 } }, theirs[64] = { { 0 } };
        size_t n_ours = 0, n_theirs = 0;
        for (size_t i = 0; i < r->n_holders; i++)
                for (unsigned k = 0; k < r->holders[i].n_nodes && n_ours < 64; k++) {
                        ours[n_ours].pid = r->holders[i].pid;
                        snprintf(ours[n_ours].name, sizeof(ours[0].name), "%s", r->holders[i].nodes[k].name);
                        n_ours++;
                }
        static const char *const names[] = { "nvidiactl", "nvidia0" };
        for (size_t f = 0; f < 2; f++) {
                pid_t pids[64];
                unsigned n = fuser_pids(f == 0 ? l->ctl : l->gpu, pids, 64);
                for (unsigned k = 0; k < n && n_theirs < 64; k++) {
                        theirs[n_theirs].pid = pids[k];
                        snprintf(theirs[n_theirs].name, sizeof(theirs[0].name), "%s", names[f]);
                        n_theirs++;
                }
        }
        qsort(ours, n_ours, sizeof(ours[0]), pair_cmp);
        qsort(theirs, n_theirs, sizeof(theirs[0]), pair_cmp);
        for (size_t i = 0; i < n_ours; i++)
                print_message("ghostvram: %d %s\n", (int)ours[i].pid, ours[i].name);
        for (size_t i = 0; i < n_theirs; i++)
                print_message("fuser:     %d %s\n", (int)theirs[i].pid, theirs[i].name);
        assert_int_equal(n_ours, n_theirs);
        for (size_t i = 0; i < n_ours; i++) {
                assert_int_equal(ours[i].pid, theirs[i].pid);
                assert_string_equal(ours[i].name, theirs[i].name);
        }

        /* and the answer itself, with the way each is held */
        const struct host_proc *p;
        assert_non_null(p = host_report_find(r, a));
        assert_int_equal(p->n_nodes, 1);
        assert_int_equal(th_via(p, "nvidiactl"), FD);
        assert_non_null(p = host_report_find(r, b));
        assert_int_equal(p->n_nodes, 1);
        assert_int_equal(th_via(p, "nvidia0"), MM);
        assert_non_null(p = host_report_find(r, c));
        assert_int_equal(th_via(p, "nvidiactl"), FD | MM);
        assert_int_equal(th_via(p, "nvidia0"), FD);
        assert_null(host_report_find(r, d));
        assert_null(host_report_find(r, e1));
        assert_non_null(p = host_report_find(r, e2));
        assert_int_equal(th_via(p, "nvidiactl"), FD);
        assert_string_equal(p->comm, "sleep");
        assert_string_equal(p->cmdline, "sleep 1000");
        /* the orphaned worker: reparented to us (subreaper; else away from its dead owner), same
         * process group as its dead owner */
        const struct host_proc *w = NULL;
        for (size_t i = 0; i < r->n_holders; i++)
                if (r->holders[i].pgid == g && r->holders[i].pid != g &&
                    (l->subreaper ? r->holders[i].ppid == getpid() : r->holders[i].ppid != g) &&
                    th_via(&r->holders[i], "nvidia0") == FD && th_via(&r->holders[i], "nvidiactl") == MM)
                        w = &r->holders[i];
        assert_non_null(w);
        assert_int_equal(r->n_holders, 5);
        for (size_t i = 0; i < r->n_holders; i++) {
                p = &r->holders[i];
                assert_int_equal(p->uid, getuid());
                assert_true(p->start_time > r->btime);
                assert_true(p->start_time <= r->sample_time + 1);
                assert_int_equal(p->pidns_ino, r->self_pidns_ino);
                assert_true(p->n_nspid >= 1);
                assert_int_equal(p->nspid[0], p->pid);
        }
        host_report_free(r);
}

/* Threads an emulator adds to a process: qemu-user (the arm64 tests, docs/arm64.md) runs an RCU
 * thread of its own in each guest process. Told by the exe link of another process's threads
 * (a zombie leader has none of its own), which qemu does not answer for its guest (it answers
 * only its own /proc entries): it names the emulator. */
static int emulator_threads(pid_t pid)
{
        char path[64], exe[PATH_MAX];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *d = opendir(path);
        ssize_t n = -1;
        for (struct dirent *e; d && n <= 0 && (e = readdir(d));) {
                if (e->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "/proc/%d/task/%.20s/exe", (int)pid, e->d_name);
                n = readlink(path, exe, sizeof(exe) - 1);
        }
        if (d)
                closedir(d);
        if (n <= 0)
                return 0;
        exe[n] = '\0';
        const char *base = strrchr(exe, '/');
        if (!strstr(base ? base + 1 : exe, "qemu"))
                return 0;
        fprintf(stderr, "note: PID %d runs under %s (qemu-user): one thread more than its own\n", (int)pid, exe);
        return 1;
}

/* A bundle of a live scan (nodes under a temporary prefix) read back with /dev/nvidia. */
static void test_live_bundle(void **state)
{
        struct live *l = *state;
        spawn(l, R_FD);
        spawn(l, R_MAP);
        spawn(l, R_BOTH);
        wait_ready(l, 3);
        char save[128], bproc[256];
        snprintf(save, sizeof(save), "%s/bundle", l->tmp);
        struct host_opts o = { .dev_prefix = l->prefix, .save_dir = save, .read_env = true, .timeout_ms = 2000 };
        struct host_report *r, *b;
        assert_int_equal(host_scan(&o, &r), 0);
        assert_int_equal(r->n_holders, 3);
        snprintf(bproc, sizeof(bproc), "%s/proc", save);
        struct host_opts bo = { .proc_root = bproc, .dev_prefix = "/dev/nvidia", .read_env = true };
        assert_int_equal(host_scan(&bo, &b), 0);
        th_assert_same_report(r, b);

        /* what the judgement uses beyond the holders: our own process, by its files (a lookup
         * of self_pid), our ancestors and the processes out of sight, by number */
        assert_true(r->self_saved);
        assert_int_equal(r->self_pid, getpid());
        assert_true(r->n_self_ancestors >= 1);
        assert_int_equal(r->self_ancestors[0], getppid());
        assert_true(b->self_saved);
        assert_int_equal(b->self_pid, r->self_pid);
        assert_int_equal(b->n_self_ancestors, r->n_self_ancestors);
        assert_memory_equal(b->self_ancestors, r->self_ancestors, r->n_self_ancestors * sizeof(pid_t));
        assert_int_equal(b->n_opaque, r->n_opaque);
        if (r->n_opaque)
                assert_memory_equal(b->opaque, r->opaque, r->n_opaque * sizeof(*r->opaque));
        struct host_proc live_self, saved_self;
        assert_int_equal(host_proc_lookup(&o, getpid(), &live_self), 0);
        assert_int_equal(host_proc_lookup(&bo, b->self_pid, &saved_self), 0);
        assert_int_equal(saved_self.sid, live_self.sid);
        assert_int_equal(saved_self.pgid, live_self.pgid);
        th_assert_str_or_null(saved_self.cgroup, live_self.cgroup);
        assert_null(host_report_find(b, getpid()));    /* a lookup, not one of the walk's holders */
        host_proc_clear(&live_self);
        host_proc_clear(&saved_self);
        host_report_free(b);
        host_report_free(r);
}

static void test_zombie_leader(void **state)
{
        struct live *l = *state;
        pid_t z = spawn(l, R_ZOMBIE_LEADER);
        wait_ready(l, 1);
        /* wait until the leader is a zombie */
        char path[64], *data = NULL;
        size_t len;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)z);
        for (int i = 0; i < 500; i++) {
                free(data);
                data = NULL;
                if (read_file_at(AT_FDCWD, path, 4096, &data, &len) == 0 && strstr(data, ") Z "))
                        break;
                usleep(10 * 1000);
        }
        assert_non_null(data);
        assert_non_null(strstr(data, ") Z "));
        free(data);
        /* read_env: its environ gives ESRCH (no address space), which is not "vanished" */
        struct host_opts o = { .dev_prefix = l->prefix, .timeout_ms = 2000, .read_env = true };
        struct host_report *r;
        assert_int_equal(host_scan(&o, &r), 0);
        const struct host_proc *p = host_report_find(r, z);
        assert_non_null(p);
        assert_int_equal(p->state, 'Z');
        assert_int_equal(p->num_threads, 2 + emulator_threads(z));
        assert_int_equal(p->n_nodes, 2);
        assert_int_equal(th_via(p, "nvidiactl"), FD);
        assert_int_equal(th_via(p, "nvidia0"), MM);
        host_report_free(r);
}

/* Without root: other users' fd tables and maps are out of sight, and the report says so. */
static int nobody_child(void)
{
        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                return 10;
        struct host_opts o = { .timeout_ms = 2000 };
        struct host_report *r;
        if (host_scan(&o, &r) < 0)
                return 11;
        if (r->euid != 65534)
                return 12;
        if (!th_has_limit(r, "owned by other users could not be read (not root)"))
                return 13;
        bool fds = false, maps = false;
        for (size_t i = 0; i < r->n_limits; i++) {
                fds |= strncmp(r->limits[i], "fd tables of ", 13) == 0;
                maps |= strncmp(r->limits[i], "memory maps of ", 15) == 0;
        }
        if (!fds || !maps)
                return 14;
        host_report_free(r);
        return 0;
}

static void test_not_root(void **state)
{
        (void)state;
        if (geteuid() != 0)
                skip();
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(nobody_child());
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* Processes that exit while the walk runs are skipped silently: no error, no limit. */
static void test_churn(void **state)
{
        (void)state;
        pid_t churner = fork();
        assert_true(churner >= 0);
        if (churner == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (;;) {
                        pid_t k = fork();
                        if (k == 0)
                                _exit(0);
                        if (k > 0)
                                waitpid(k, NULL, 0);
                }
        }
        struct host_opts o = { .timeout_ms = 2000 };
        for (int i = 0; i < 20; i++) {
                struct host_report *r;
                assert_int_equal(host_scan(&o, &r), 0);
                for (size_t k = 0; k < r->n_limits; k++) {
                        assert_null(strstr(r->limits[k], "No such"));
                        assert_null(strstr(r->limits[k], "could not be inspected"));
                }
                host_report_free(r);
        }
        kill(churner, SIGKILL);
        assert_int_equal(waitpid(churner, NULL, 0), churner);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_differential_fuser, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_live_bundle, live_setup, live_teardown),
                cmocka_unit_test_setup_teardown(test_zombie_leader, live_setup, live_teardown),
                cmocka_unit_test(test_not_root),
                cmocka_unit_test(test_churn),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
