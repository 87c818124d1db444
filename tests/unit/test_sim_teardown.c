/* sim/state teardown: the driver's side of a context's release — the watch that waits holding
 * no descriptor of nvidiactl, the waits on real forked holders (release, owner's death), the release record (earlier wins,
 * informative fields never drop a context), and the Xid 45 record that ghostvram's own kernel
 * log parser must read back. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdbool.h>
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

#include "collect/xid.h"
#include "simstate.h"

static char sim_dir[256];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st; (void)flag; (void)ftw;
        return remove(path);
}

static int setup(void **state)
{
        (void)state;
        snprintf(sim_dir, sizeof(sim_dir), "/tmp/gv-test-teardown-XXXXXX");
        if (!mkdtemp(sim_dir))
                return -1;
        return sim_init_dir(sim_dir, 2, 81559, 579) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
        (void)state;
        nftw(sim_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

static void path_of(char *out, size_t len, const char *name)
{
        snprintf(out, len, "%s/%s", sim_dir, name);
}

/* A child that creates a context on its own description of nvidiactl and holds it until
 * killed; returns its PID and the context id. With ret_worker, it also forks a worker that
 * inherits the description (the caller kills it). */
static pid_t spawn_holder(unsigned *ret_id, pid_t *ret_worker)
{
        int p[2];
        unsigned id = 0;
        pid_t worker = 0;
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char ctl[512], own[512], err[SIM_ERR_LEN];
                close(p[0]);
                path_of(ctl, sizeof(ctl), "dev/nvidiactl");
                path_of(own, sizeof(own), "owners");
                int cfd = open(ctl, O_RDWR | O_CLOEXEC), ofd = open(own, O_RDWR | O_CLOEXEC);
                if (cfd < 0 || ofd < 0 ||
                    sim_context_create(sim_dir, 0, 256ull << 20, cfd, ofd, &id, err, sizeof(err)) < 0)
                        _exit(1);
                if (ret_worker && (worker = fork()) == 0)
                        for (;;)
                                pause();
                (void)!write(p[1], &id, sizeof(id));
                (void)!write(p[1], &worker, sizeof(worker));
                for (;;)
                        pause();
        }
        close(p[1]);
        assert_int_equal(read(p[0], &id, sizeof(id)), (ssize_t)sizeof(id));
        assert_int_equal(read(p[0], &worker, sizeof(worker)), (ssize_t)sizeof(worker));
        close(p[0]);
        *ret_id = id;
        if (ret_worker)
                *ret_worker = worker;
        return pid;
}

/* Fork a child that waits on byte id of fd; returns its PID (exit 0: the wait returned 0). */
static pid_t spawn_waiter(int fd, unsigned id)
{
        pid_t w = fork();
        assert_true(w >= 0);
        if (w == 0) {
                alarm(10);
                _exit(sim_teardown_wait(fd, id) == 0 ? 0 : 1);
        }
        return w;
}

/* Fork a child that waits for context id's release with sim_ctx_release_wait; its PID (exit 0:
 * the wait returned 0) */
static pid_t spawn_release_waiter(unsigned id, bool no_inotify)
{
        pid_t w = fork();
        assert_true(w >= 0);
        if (w == 0) {
                struct sim_release_watch rw;
                alarm(10);
                if (sim_ctx_release_watch(sim_dir, &rw) < 0)
                        _exit(2);
                if (no_inotify) /* as when the user has no inotify instance left */
                        sim_ctx_release_unwatch(&rw);
                int r = sim_ctx_release_wait(&rw, id);
                sim_ctx_release_unwatch(&rw);
                _exit(r == 0 ? 0 : 1);
        }
        return w;
}

/* A descriptor of nvidiactl for the probes (the test is a reader, not the watcher) */
static int ctl_open(void)
{
        char ctl[512];
        path_of(ctl, sizeof(ctl), "dev/nvidiactl");
        int fd = open(ctl, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

static void assert_waiter_done(pid_t w)
{
        int st = 0;
        assert_int_equal(waitpid(w, &st, 0), w);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static bool ctx_locked(int fd, unsigned id)
{
        struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = id, .l_len = 1 };
        assert_int_equal(fcntl(fd, F_OFD_GETLK, &fl), 0);
        return fl.l_type != F_UNLCK;
}

/* The owner's death wakes a waiter on DIR/owners although a worker keeps the context alive;
 * the release wakes the one on nvidiactl only when the worker goes too. */
static void test_wait_owner_death(void **state)
{
        (void)state;
        unsigned id;
        pid_t worker;
        pid_t owner = spawn_holder(&id, &worker);
        int ctl = ctl_open(), own = sim_owners_open(sim_dir);
        assert_true(own >= 0);
        pid_t wo = spawn_waiter(own, id), wc = spawn_release_waiter(id, false);
        usleep(200 * 1000);
        assert_int_equal(waitpid(wo, NULL, WNOHANG), 0);
        kill(owner, SIGKILL);
        waitpid(owner, NULL, 0);
        assert_waiter_done(wo);
        usleep(200 * 1000);
        assert_int_equal(waitpid(wc, NULL, WNOHANG), 0);
        assert_true(ctx_locked(ctl, id));
        kill(worker, SIGKILL);
        assert_waiter_done(wc);
        assert_false(ctx_locked(ctl, id));
        close(ctl);
        close(own);
}

/* The watch holds no descriptor and no mapping of the node (the real driver's teardown is
 * no holder), only an inotify descriptor; it finds the node in /proc/locks by the inode */
static void test_release_watch_holds_nothing(void **state)
{
        (void)state;
        char dev[512], key[64];
        struct stat st, fst;
        struct sim_release_watch rw;
        path_of(dev, sizeof(dev), "dev/nvidiactl");
        assert_int_equal(stat(dev, &st), 0);
        assert_int_equal(sim_ctx_release_watch(sim_dir, &rw), 0);
        assert_true(rw.fd >= 0);
        snprintf(key, sizeof(key), ":%llu", (unsigned long long)st.st_ino);
        size_t kl = strlen(rw.key), il = strlen(key);
        assert_true(kl > il && strcmp(rw.key + kl - il, key) == 0);
        for (int fd = 0; fd < 1024; fd++)
                if (fstat(fd, &fst) == 0)
                        assert_false(fst.st_dev == st.st_dev && fst.st_ino == st.st_ino);
        FILE *m = fopen("/proc/self/maps", "r");
        char line[1024];
        assert_non_null(m);
        while (fgets(line, sizeof(line), m))
                assert_null(strstr(line, dev));
        fclose(m);
        /* no context: released at once */
        assert_int_equal(sim_ctx_release_wait(&rw, 4242), 0);
        sim_ctx_release_unwatch(&rw);
        assert_int_equal(rw.fd, -1);
}

/* One release, waited for with the inotify watch or without it (every 10 ms) */
static void wait_wakes_at_release(bool no_inotify)
{
        unsigned id;
        pid_t holder = spawn_holder(&id, NULL);
        int fd = ctl_open();
        pid_t w = spawn_release_waiter(id, no_inotify);
        /* the holder lives: the waiter must still be blocked, holding no conflicting lock
         * meanwhile (a reader's probe sees the context's) */
        usleep(200 * 1000);
        assert_int_equal(waitpid(w, NULL, WNOHANG), 0);
        assert_true(ctx_locked(fd, id));
        uint64_t killed = sim_now_ms();
        kill(holder, SIGKILL);
        waitpid(holder, NULL, 0);
        assert_waiter_done(w);
        assert_true(sim_now_ms() - killed < 5000);
        /* and nothing stays locked behind it */
        assert_false(ctx_locked(fd, id));
        close(fd);
}

static void test_wait_wakes_at_release(void **state)
{
        (void)state;
        wait_wakes_at_release(false);
        wait_wakes_at_release(true);
}

static void test_context_mark(void **state)
{
        (void)state;
        unsigned id;
        struct sim_ctx c;
        pid_t holder = spawn_holder(&id, NULL);
        /* the watcher's PID, a release time, a later one (ignored), an earlier one (kept) */
        static const struct {
                pid_t watcher;
                uint64_t released, want_released;
        } steps[] = {
                { 0, 0, 0 }, { 4242, 0, 0 }, { 0, 5000, 5000 }, { 0, 6000, 5000 }, { 0, 4000, 4000 },
        };
        for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
                if (i > 0)
                        assert_int_equal(sim_context_mark(sim_dir, id, steps[i].watcher, steps[i].released), 0);
                assert_int_equal(sim_context_get(sim_dir, id, &c), 0);
                assert_int_equal(c.watcher, i > 0 ? 4242 : 0);
                assert_int_equal(c.released_ms, steps[i].want_released);
        }
        assert_int_equal(sim_context_mark(sim_dir, id + 1, 1, 1), -ENOENT);
        assert_int_equal(sim_context_get(sim_dir, id + 1, &c), -ENOENT);
        kill(holder, SIGKILL);
        waitpid(holder, NULL, 0);
}

static void test_bad_watcher_keeps_context(void **state)
{
        (void)state;
        char p[512];
        struct sim_ctx c;
        path_of(p, sizeof(p), "contexts");
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs("next=3\n"
              "ctx=1 gpu=0 bytes=1048576 ownerns=1 procns=1 nspid=10 created=1 released=0 watcher=zz\n"
              "ctx=2 gpu=1 bytes=1048576 ownerns=1 procns=1 nspid=11 created=1 released=0\n",
              f);
        fclose(f);
        assert_int_equal(sim_context_get(sim_dir, 1, &c), 0);
        assert_int_equal(c.watcher, 0);
        assert_int_equal(c.nspid[0], 10);
        assert_int_equal(sim_context_get(sim_dir, 2, &c), 0);
        assert_int_equal(c.watcher, 0);
}

static void test_kmsg_xid(void **state)
{
        (void)state;
        struct sim_host h;
        char p[512];
        assert_int_equal(sim_host_load(sim_dir, &h), 0);
        path_of(p, sizeof(p), "kmsg");
        /* a log written by hand (a driver load line): the next record follows its sequence */
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs("6,100,4000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  560.35.03  Release Build\n", f);
        fclose(f);
        assert_int_equal(sim_kmsg_xid(sim_dir, &h.gpus[1], 45, 1234, "python3", "Ch 00000010"), 0);
        assert_int_equal(sim_kmsg_xid(sim_dir, &h.gpus[0], 45, 77, "ev\x1bil\\n", "Ch 00000010"), 0);

        char buf[4096];
        f = fopen(p, "r");
        assert_non_null(f);
        size_t len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = '\0';
        char *l2 = strchr(buf, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
        assert_true(strncmp(l2, "3,101,", 6) == 0);
        assert_non_null(strstr(l2, ",-;NVRM: Xid (PCI:0000:43:00): 45, pid=1234, name=python3, Ch 00000010\n"));
        assert_true(strncmp(l3, "3,102,", 6) == 0);
        /* unprintable bytes and the backslash escaped as /dev/kmsg does */
        assert_non_null(strstr(l3, "): 45, pid=77, name=ev\\x1bil\\x5cn, Ch 00000010\n"));

        /* ghostvram's own parser reads them back */
        struct kmsg_time_opts t = { .boot_time = 1e9, .now = -1 };
        struct xid_list l = { 0 };
        assert_int_equal(xid_parse_log(buf, len, &t, "file", &l), 0);
        size_t n45 = 0;
        for (size_t i = 0; i < l.n; i++) {
                const struct xid_event *e = &l.ev[i];
                if (e->xid != 45)
                        continue;
                n45++;
                assert_true(e->pid_known && e->seq_known);
                if (e->pid == 1234) {
                        assert_string_equal(e->pci_bus_id, "0000:43:00.0");
                        assert_string_equal(e->process_name, "python3");
                        assert_int_equal(e->seq, 101);
                }
        }
        assert_int_equal(n45, 2);
        xid_list_free(&l);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_release_watch_holds_nothing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wait_wakes_at_release, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wait_owner_death, setup, teardown),
                cmocka_unit_test_setup_teardown(test_context_mark, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_watcher_keeps_context, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kmsg_xid, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
