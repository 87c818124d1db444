/* host_scan and host_proc_lookup on fixture trees (tests/fixtures/proc-*, described in their
 * README.md): containers, pods, Slurm, other PID namespaces, D state, zombies, exiting tasks,
 * kernel threads, hostile strings, matching by device number, FIFOs that would block forever,
 * permission denied, and bundles that read back into the same report. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/host.h"
#include "collect/host_internal.h"
#include "test_host_util.h"
#include "util/deadline.h"
#include "util/fileio.h"

#define FD HOST_VIA_FD
#define MM HOST_VIA_MMAP
#define ALL_TEXT (HOST_SKIP_MAPS | HOST_SKIP_CMDLINE | HOST_SKIP_ENVIRON)

static const char *const basic_dockers = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";

static struct host_report *scan_dir(const char *proc_root, const char *prefix, unsigned timeout_ms,
                                    const char *save_dir)
{
        struct host_opts o = { .proc_root = proc_root, .dev_prefix = prefix, .timeout_ms = timeout_ms,
                               .save_dir = save_dir, .read_env = true };
        struct host_report *r = NULL;
        assert_int_equal(host_scan(&o, &r), 0);
        assert_non_null(r);
        return r;
}

static struct host_report *scan_basic(void)
{
        return scan_dir(GV_FIXTURES "/proc-basic", NULL, 2000, NULL);
}

static void expect_user(const struct host_proc *p, uid_t uid)
{
        struct passwd *pw = getpwuid(uid);
        char num[32];
        snprintf(num, sizeof(num), "%u", (unsigned)uid);
        assert_int_equal(p->uid, uid);
        assert_string_equal(p->user, pw ? pw->pw_name : num);
}

static void test_basic_sets(void **state)
{
        (void)state;
        struct host_report *r = scan_basic();
        static const pid_t holders[] = { 100, 101, 102, 105, 106, 107, 108, 109, 110, 112, 113 };
        assert_int_equal(r->n_holders, sizeof(holders) / sizeof(holders[0]));
        for (size_t i = 0; i < r->n_holders; i++)
                assert_int_equal(r->holders[i].pid, holders[i]);
        assert_int_equal(r->n_unverified, 1);
        assert_int_equal(r->unverified[0].pid, 103);
        assert_int_equal(r->procs_scanned, 17);
        assert_int_equal(r->self_pidns_ino, 4026531836u);
        assert_true(r->initial_pidns);
        assert_int_equal(r->self_pid, 0);
        assert_true(r->btime == 1700000000.0);
        assert_int_equal(r->clk_tck, sysconf(_SC_CLK_TCK));
        assert_int_equal(r->euid, geteuid());
        assert_int_equal(r->n_nvidia_majors, 3);
        assert_int_equal(r->nvidia_majors[0], 195);
        assert_int_equal(r->nvidia_majors[1], 234);
        assert_int_equal(r->nvidia_majors[2], 237);
        assert_true(r->sample_time > 1.6e9);
        /* the only thing out of sight: the maps of the two D-state tasks */
        assert_int_equal(r->n_limits, 1);
        assert_string_equal(r->limits[0], "memory maps of 2 processes in D state (uninterruptible) were not read, so "
                                          "as not to hang behind them: a mapping they hold is not seen");
        host_report_free(r);
}

static void test_docker_main_process(void **state)
{
        (void)state;
        struct host_report *r = scan_basic();
        const struct host_proc *p = host_report_find(r, 100);
        assert_non_null(p);
        static const char *const names[] = { "nvidia-caps/nvidia-cap1", "nvidia-uvm", "nvidia0", "nvidiactl", NULL };
        static const unsigned via[] = { FD, FD | MM, FD | MM, FD | MM };
        th_assert_nodes(p, names, via);
        assert_true(host_proc_holds(p, "nvidiactl"));
        assert_false(host_proc_holds(p, "nvidia1"));
        assert_int_equal(p->ppid, 1);
        assert_int_equal(p->pgid, 100);
        assert_int_equal(p->sid, 100);
        assert_int_equal(p->state, 'S');
        assert_false(p->exiting);
        assert_false(p->kernel_thread);
        assert_int_equal(p->start_ticks, 123456);
        assert_true(p->start_time == 1700000000.0 + 123456.0 / (double)sysconf(_SC_CLK_TCK));
        assert_string_equal(p->wchan, "do_epoll_wait");
        expect_user(p, 0);
        assert_string_equal(p->comm, "python");
        assert_string_equal(p->cmdline, "python train.py --epochs 3");
        assert_int_equal(p->n_nspid, 1);
        assert_int_equal(p->nspid[0], 100);
        assert_int_equal(p->pidns_ino, 4026531836u);
        assert_string_equal(p->container_runtime, "docker");
        assert_string_equal(p->container_id, basic_dockers);
        assert_string_equal(p->k8s_pod_uid, "");
        assert_string_equal(p->systemd_unit, "");
        assert_int_equal(p->n_env, 3);
        assert_string_equal(host_proc_env(p, "CUDA_VISIBLE_DEVICES"), "0");
        assert_string_equal(host_proc_env(p, "LOCAL_RANK"), "0");
        assert_string_equal(host_proc_env(p, "RANK"), "0");
        assert_null(host_proc_env(p, "SECRET_TOKEN"));
        assert_int_equal(p->skipped, 0);
        host_report_free(r);
}

static void test_forked_worker_mapping_only(void **state)
{
        (void)state;
        struct host_report *r = scan_basic();
        const struct host_proc *p = host_report_find(r, 101);
        assert_non_null(p);
        /* no descriptor: the inherited mappings alone keep the nodes referenced, one of
         * them " (deleted)" */
        static const char *const names[] = { "nvidia-uvm", "nvidia0", NULL };
        static const unsigned via[] = { MM, MM };
        th_assert_nodes(p, names, via);
        assert_int_equal(p->ppid, 100);
        assert_int_equal(p->pgid, 100);
        assert_string_equal(p->comm, "pt_data_worker");
        assert_string_equal(p->container_id, basic_dockers);
        host_report_free(r);
}

static void test_dstate(void **state)
{
        (void)state;
        struct host_report *r = scan_basic();
        const struct host_proc *p = host_report_find(r, 102);
        assert_non_null(p);
        assert_int_equal(p->state, 'D');
        /* maps, cmdline and environ were not read: the nvidia0 mapping in the fixture's maps
         * and its "must-not-be-read" texts stay unseen */
        assert_int_equal(p->skipped, ALL_TEXT);
        assert_null(p->cmdline);
        assert_int_equal(p->n_env, 0);
        static const char *const names[] = { "nvidia-uvm", NULL };
        static const unsigned via[] = { FD };
        th_assert_nodes(p, names, via);
        assert_string_equal(p->wchan, "uvm_va_space_destroy");
        expect_user(p, 1000);
        assert_string_equal(p->container_runtime, "containerd");
        assert_string_equal(p->container_id, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
        assert_string_equal(p->k8s_pod_uid, "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b");

        /* the D-state task without descriptors cannot be verified either way */
        assert_null(host_report_find(r, 103));
        const struct host_proc *u = th_find(r->unverified, r->n_unverified, 103);
        assert_non_null(u);
        assert_int_equal(u->n_nodes, 0);
        assert_int_equal(u->skipped, ALL_TEXT);
        assert_string_equal(u->comm, "nccl_watchdog");
        assert_string_equal(u->wchan, "os_acquire_mutex");
        assert_string_equal(u->container_runtime, "cri-o");
        assert_string_equal(u->k8s_pod_uid, "7a6b5c4d-3e2f-1a0b-9c8d-7e6f5a4b3c2d");
        host_report_free(r);
}

static void test_nonholders_and_lookup(void **state)
{
        (void)state;
        struct host_report *r = scan_basic();
        /* init, kthreadd, a kernel thread whose fd/ a fixture filled anyway, a zombie, and a
         * shell whose descriptors and mappings only look like nvidia ones */
        static const pid_t none[] = { 1, 2, 50, 104, 111 };
        for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
                assert_null(host_report_find(r, none[i]));
                assert_null(th_find(r->unverified, r->n_unverified, none[i]));
        }
        host_report_free(r);

        struct host_opts o = { .proc_root = GV_FIXTURES "/proc-basic", .read_env = true };
        struct host_proc p;
        memset(&p, 0, sizeof(p));
        assert_int_equal(host_proc_lookup(&o, 104, &p), 0);
        assert_int_equal(p.pid, 104);
        assert_int_equal(p.state, 'Z');
        assert_int_equal(p.n_nodes, 0);
        assert_string_equal(p.comm, "python");
        assert_string_equal(p.cmdline, "");
        host_proc_clear(&p);

        assert_int_equal(host_proc_lookup(&o, 2, &p), 0);
        assert_true(p.kernel_thread);
        assert_int_equal(p.ppid, 0);
        assert_string_equal(p.comm, "kthreadd");
        host_proc_clear(&p);

        assert_int_equal(host_proc_lookup(&o, 50, &p), 0);
        assert_true(p.kernel_thread);
        assert_int_equal(p.n_nodes, 0);
        host_proc_clear(&p);

        assert_int_equal(host_proc_lookup(&o, 111, &p), 0);
        assert_int_equal(p.n_nodes, 0);
        assert_string_equal(p.cmdline, "-bash");
        assert_string_equal(p.systemd_unit, "session-3.scope");
        host_proc_clear(&p);

        /* a holder looked up gets the same nodes as in the walk */
        assert_int_equal(host_proc_lookup(&o, 101, &p), 0);
        assert_int_equal(th_via(&p, "nvidia0"), MM);
        host_proc_clear(&p);

        p.pid = 4242;
        assert_int_equal(host_proc_lookup(&o, 99999, &p), -ESRCH);
        assert_int_equal(p.pid, 4242);  /* untouched */
        assert_int_equal(host_proc_lookup(&o, 0, &p), -ESRCH);
        assert_int_equal(host_proc_lookup(&o, -5, &p), -ESRCH);
}

static void test_exiting_and_cgroupfs_docker(void **state)
{
        (void)state;
        struct host_report *r = scan_basic();
        const struct host_proc *p = host_report_find(r, 105);
        assert_non_null(p);
        assert_true(p->exiting);
        assert_int_equal(p->state, 'R');
        static const char *const names[] = { "nvidiactl", NULL };
        static const unsigned via[] = { FD };
        th_assert_nodes(p, names, via);
        assert_string_equal(p->wchan, "");      /* "0": not sleeping */
        /* cgroup v1 with a root v2 line: the name=systemd path is the one kept */
        assert_string_equal(p->cgroup, "/docker/9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0");
        assert_string_equal(p->container_runtime, "docker");
        assert_string_equal(p->container_id, "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0");
        /* no other running process of the tree is exiting (113 is a zombie leader) */
        for (size_t i = 0; i < r->n_holders; i++)
                assert_int_equal(r->holders[i].exiting, r->holders[i].pid == 105 || r->holders[i].pid == 113);
        host_report_free(r);
}

/* The main thread exited (pthread_exit), other threads run: the leader is a zombie with empty
 * fd/ and maps, and what the process holds shows through a live thread's task/TID/. */
static void test_zombie_leader_with_threads(void **state)
{
        (void)state;
        struct host_report *r = scan_basic();
        const struct host_proc *p = host_report_find(r, 113);
        assert_non_null(p);
        assert_int_equal(p->state, 'Z');
        assert_true(p->exiting);
        assert_int_equal(p->num_threads, 3);
        static const char *const names[] = { "nvidia-uvm", "nvidia0", NULL };
        static const unsigned via[] = { MM, FD };
        th_assert_nodes(p, names, via);
        assert_int_equal(p->skipped, 0);
        host_report_free(r);
}

static void test_other_pidns_podman(void **state)
{
        (void)state;
        struct host_report *r = scan_basic();
        const struct host_proc *p = host_report_find(r, 106);
        assert_non_null(p);
        assert_int_equal(p->n_nspid, 3);
        assert_int_equal(p->nspid[0], 106);
        assert_int_equal(p->nspid[1], 7);
        assert_int_equal(p->nspid[2], 1);
        assert_int_equal(p->pidns_ino, 4026532999u);
        expect_user(p, 4242);
        assert_string_equal(p->container_runtime, "podman");
        assert_string_equal(p->container_id, "1111222233334444555566667777888899990000aaaabbbbccccddddeeeeffff");
        assert_string_equal(p->systemd_unit, "user@4242.service");
        static const char *const names[] = { "nvidia0", NULL };
        static const unsigned via[] = { MM };
        th_assert_nodes(p, names, via);
        host_report_free(r);
}

static void test_hostile_strings(void **state)
{
        (void)state;
        struct host_report *r = scan_basic();
        const struct host_proc *p = host_report_find(r, 107);
        assert_non_null(p);
        /* raw, byte for byte: escaping is the renderer's job */
        assert_string_equal(p->comm, "ev\x1b[31mil) (x\ny");
        static const char cmd[] = "./run --name=\x1b]0;pwned\x07 line1\nline2 \xff\xfe\xc3\x28";
        assert_memory_equal(p->cmdline, cmd, sizeof(cmd));
        assert_string_equal(p->cgroup, "/system.slice/evil\x1b[2J.service");
        assert_string_equal(p->systemd_unit, "evil\x1b[2J.service");
        assert_int_equal(p->ppid, 1);   /* fields after the last ')' */
        assert_int_equal(p->start_ticks, 300100);
        host_report_free(r);
}

static void test_slurm_k8s_env(void **state)
{
        (void)state;
        struct host_report *r = scan_basic();
        const struct host_proc *p = host_report_find(r, 108);
        assert_non_null(p);
        assert_string_equal(p->slurm_job, "4242");
        assert_string_equal(p->systemd_unit, "slurmd.service");
        static const char *const n108[] = { "nvidia-caps/nvidia-cap2", "nvidiactl", NULL };
        static const unsigned v108[] = { FD, FD };
        th_assert_nodes(p, n108, v108);

        p = host_report_find(r, 109);
        assert_non_null(p);
        assert_string_equal(p->slurm_job, "77");
        assert_string_equal(p->systemd_unit, "slurmstepd.scope");
        assert_int_equal(th_via(p, "nvidia1"), FD);

        p = host_report_find(r, 110);
        assert_non_null(p);
        assert_string_equal(p->k8s_pod_uid, "8d2c7f40-1b2a-4c3d-9e8f-0a1b2c3d4e5f");
        assert_string_equal(p->container_id, "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00");
        assert_string_equal(p->container_runtime, "");
        static const char *const n110[] = { "nvidia-modeset", "nvidia0", NULL };
        static const unsigned v110[] = { FD, FD };
        th_assert_nodes(p, n110, v110);

        p = host_report_find(r, 112);
        assert_non_null(p);
        assert_int_equal(p->n_env, 4);
        assert_string_equal(host_proc_env(p, "KUBERNETES_POD_NAME"), "trainer-0");
        assert_string_equal(host_proc_env(p, "RANK"), "1");
        assert_string_equal(host_proc_env(p, "SLURM_JOB_ID"), "55");
        assert_string_equal(host_proc_env(p, "NVIDIA_VISIBLE_DEVICES"), "all");
        assert_null(host_proc_env(p, "CUDA_VISIBLE_DEVICES"));  /* 5000 bytes: over the cap */
        assert_null(host_proc_env(p, "AWS_SECRET_ACCESS_KEY"));
        assert_string_equal(p->systemd_unit, "trainer.service");
        host_report_free(r);

        /* read_env off: nothing from the environment at all */
        struct host_opts o = { .proc_root = GV_FIXTURES "/proc-basic" };
        assert_int_equal(host_scan(&o, &r), 0);
        for (size_t i = 0; i < r->n_holders; i++) {
                assert_int_equal(r->holders[i].n_env, 0);
                assert_int_equal(r->holders[i].skipped & HOST_SKIP_ENVIRON, 0);
        }
        assert_int_equal(host_report_find(r, 102)->skipped, HOST_SKIP_MAPS | HOST_SKIP_CMDLINE);
        host_report_free(r);
}

/* Nodes made inside containers: other paths, other inodes, the driver's device number. In
 * proc-devnum the memory devices' major (1) is declared an nvidia driver, so /dev/null (1:3),
 * /dev/zero (1:5) and /dev/urandom (1:9) stand for nvidia3, nvidia5 and nvidia9. A mapping is
 * matched by the (st_dev, st_ino) of a host node under the prefix. */
static void test_devnum_and_devino(void **state)
{
        (void)state;
        char tmp[64], tree[256], prefix[512], path[1024], save[512];
        th_tmpdir(tmp);
        th_copy_fixture("proc-devnum", tmp, tree);
        snprintf(path, sizeof(path), "%s/dev", tmp);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/dev/nvidiactl", tmp);
        assert_int_equal(write_file_atomic(path, "x", 1), 0);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        snprintf(prefix, sizeof(prefix), "%s/dev/nvidia", tmp);
        /* a mapping whose path is a container's: only the inode ties it to the host node */
        char line[512];
        int n = snprintf(line, sizeof(line), "7f0000000000-7f0000001000 rw-s 00000000 %x:%x %llu /run/ctr/rootfs/dev/ctl\n",
                         major(st.st_dev), minor(st.st_dev), (unsigned long long)st.st_ino);
        snprintf(path, sizeof(path), "%s/201/maps", tree);
        FILE *f = fopen(path, "a");
        assert_non_null(f);
        assert_int_equal(fwrite(line, 1, (size_t)n, f), (size_t)n);
        fclose(f);

        snprintf(save, sizeof(save), "%s/bundle", tmp);
        struct host_report *r = scan_dir(tree, prefix, 2000, save);
        assert_int_equal(r->n_holders, 2);
        static const char *const n200[] = { "nvidia3", "nvidia5", NULL };
        static const unsigned v200[] = { FD, FD };
        th_assert_nodes(&r->holders[0], n200, v200);
        static const char *const n201[] = { "nvidia9", "nvidiactl", NULL };
        static const unsigned v201[] = { FD, MM };
        th_assert_nodes(&r->holders[1], n201, v201);
        assert_null(host_report_find(r, 202));
        assert_int_equal(r->n_limits, 0);
        assert_int_equal(r->self_pidns_ino, 0);         /* the tree has no self/ */
        assert_false(r->initial_pidns);

        /* the bundle names them by canonical /dev paths and reads back the same */
        char link[256];
        snprintf(path, sizeof(path), "%s/proc/200/fd/3", save);
        ssize_t k = readlink(path, link, sizeof(link) - 1);
        assert_true(k > 0);
        link[k] = '\0';
        assert_string_equal(link, "/dev/nvidia3");
        snprintf(path, sizeof(path), "%s/proc", save);
        struct host_report *b = scan_dir(path, "/dev/nvidia", 2000, NULL);
        th_assert_same_report(r, b);
        host_report_free(b);
        host_report_free(r);
        th_rmrf(tmp);
}

static void make_fifo(const char *tree, pid_t pid, const char *file)
{
        char path[1024];
        snprintf(path, sizeof(path), "%s/%d/%s", tree, (int)pid, file);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkfifo(path, 0644), 0);
}

static void unblock_fifo(const char *tree, pid_t pid, const char *file)
{
        char path[1024];
        snprintf(path, sizeof(path), "%s/%d/%s", tree, (int)pid, file);
        th_unblock_fifo(path);
}

/* A maps or cmdline that never answers (a FIFO without a writer stands in for a task whose
 * mmap lock is held by a thread stuck in the driver): the scan ends within its deadline and
 * says what it skipped. */
static void test_fifo_does_not_hang(void **state)
{
        (void)state;
        char tmp[64], tree[256], save[512], bproc[1024];
        th_tmpdir(tmp);
        th_copy_fixture("proc-basic", tmp, tree);
        make_fifo(tree, 100, "maps");
        make_fifo(tree, 107, "cmdline");
        snprintf(save, sizeof(save), "%s/bundle", tmp);

        double t0 = monotonic_s();
        struct host_report *r = scan_dir(tree, NULL, 500, save);
        double took = monotonic_s() - t0;
        print_message("scan with two blocked reads took %.3f s\n", took);
        assert_true(took < 3.0);
        assert_true(took >= 0.9);       /* it did wait for both deadlines */

        const struct host_proc *p = host_report_find(r, 100);
        assert_non_null(p);
        /* maps missed its deadline; the other reads behind the same lock were skipped */
        assert_int_equal(p->skipped, ALL_TEXT);
        assert_null(p->cmdline);
        static const char *const n100[] = { "nvidia-caps/nvidia-cap1", "nvidia-uvm", "nvidia0", "nvidiactl", NULL };
        static const unsigned v100[] = { FD, FD, FD, FD };
        th_assert_nodes(p, n100, v100);
        assert_string_equal(p->comm, "python");         /* stat was read */

        p = host_report_find(r, 107);
        assert_non_null(p);
        assert_int_equal(p->skipped, HOST_SKIP_CMDLINE | HOST_SKIP_ENVIRON);
        assert_null(p->cmdline);
        assert_int_equal(th_via(p, "nvidia0"), FD);
        assert_true(th_has_limit(r, "reading the memory maps of 1 process did not finish within the deadline"));
        /* no thread of it is in the driver (it has no task/ here): the driver is not blamed */
        assert_true(th_has_limit(r, "stayed locked; no thread of it was seen in the driver"));
        assert_false(th_has_limit(r, "stuck in the driver"));
        assert_true(th_has_limit(r, "reading the command line or environment of 1 process did not finish"));

        /* the bundle records the skips, and reading it back gives the same report */
        snprintf(bproc, sizeof(bproc), "%s/proc", save);
        struct host_report *b = scan_dir(bproc, "/dev/nvidia", 500, NULL);
        th_assert_same_report(r, b);
        host_report_free(b);
        host_report_free(r);

        unblock_fifo(tree, 100, "maps");
        unblock_fifo(tree, 107, "cmdline");
        usleep(100 * 1000);
        th_rmrf(tmp);
}

/* The same blocked maps, with a thread of the process waiting in the nvidia modules (its wchan
 * names one of their functions): now the limit says the driver holds the lock. */
static void test_fifo_thread_in_driver(void **state)
{
        (void)state;
        char tmp[64], tree[256];
        th_tmpdir(tmp);
        th_copy_fixture("proc-basic", tmp, tree);
        make_fifo(tree, 100, "maps");
        /* two threads: one waits on a futex, the other in the UVM module */
        th_sh("mkdir -p '%s/100/task/100' '%s/100/task/101' && printf futex_wait_queue >'%s/100/task/101/wchan' && "
              "printf uvm_va_space_mm_shutdown >'%s/100/task/100/wchan'", tree, tree, tree, tree);

        struct host_report *r = scan_dir(tree, NULL, 300, NULL);
        assert_true(th_has_limit(r, "reading the memory maps of 1 process did not finish within the deadline (the "
                                    "address space stayed locked while a thread of it waits in the driver"));
        assert_false(th_has_limit(r, "no thread of it was seen in the driver"));
        host_report_free(r);

        unblock_fifo(tree, 100, "maps");
        usleep(100 * 1000);
        th_rmrf(tmp);
}

/* Every maps blocks: after a few deadlines' worth of waiting the rest get a short one. */
static void test_fifo_wait_budget(void **state)
{
        (void)state;
        char tmp[64], tree[256];
        th_tmpdir(tmp);
        th_copy_fixture("proc-basic", tmp, tree);
        static const pid_t read_maps[] = { 1, 100, 101, 105, 106, 107, 108, 109, 110, 111, 112 };
        size_t n = sizeof(read_maps) / sizeof(read_maps[0]);
        for (size_t i = 0; i < n; i++)
                make_fifo(tree, read_maps[i], "maps");

        double t0 = monotonic_s();
        struct host_report *r = scan_dir(tree, NULL, 500, NULL);
        double took = monotonic_s() - t0;
        print_message("scan with %zu blocked maps took %.3f s (without a budget: %.1f s)\n", n, took, 0.5 * (double)n);
        assert_true(took < 3.3);
        assert_true(th_has_limit(r, "reading the memory maps of 11 processes did not finish"));
        /* holders by descriptor are still found; the rest cannot be verified */
        static const pid_t holders[] = { 100, 102, 105, 107, 108, 109, 110, 112, 113 };
        assert_int_equal(r->n_holders, sizeof(holders) / sizeof(holders[0]));
        for (size_t i = 0; i < r->n_holders; i++)
                assert_int_equal(r->holders[i].pid, holders[i]);
        static const pid_t unverified[] = { 1, 101, 103, 106, 111 };
        assert_int_equal(r->n_unverified, sizeof(unverified) / sizeof(unverified[0]));
        for (size_t i = 0; i < r->n_unverified; i++)
                assert_int_equal(r->unverified[i].pid, unverified[i]);
        host_report_free(r);
        for (size_t i = 0; i < n; i++)
                unblock_fifo(tree, read_maps[i], "maps");
        usleep(100 * 1000);
        th_rmrf(tmp);
}

/* Permission denied, for real: the tests run as root, so a child drops to nobody and scans a
 * copy whose 100/fd is mode 000 (an fd table of another user's process), whose 111 is mode 000
 * (hidepid=noaccess) and whose self/mountinfo declares hidepid=invisible. Checks are done in
 * the child; its exit status says which one failed. */
static int eacces_child(const char *tree)
{
        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                return 10;
        struct host_opts o = { .proc_root = tree, .read_env = true, .timeout_ms = 2000 };
        struct host_report *r;
        if (host_scan(&o, &r) < 0)
                return 11;
        const struct host_proc *p = host_report_find(r, 100);
        if (!p)
                return 12;
        if (!(p->skipped & HOST_SKIP_FDS))
                return 13;
        /* still a holder, through its mappings */
        if (p->n_nodes != 3 || th_via(p, "nvidia-uvm") != MM || th_via(p, "nvidia0") != MM ||
            th_via(p, "nvidiactl") != MM)
                return 14;
        if (!th_has_limit(r, "fd tables of 1 process owned by other users could not be read (not root)"))
                return 15;
        if (r->euid != 65534)
                return 16;
        /* a /proc/PID that cannot be opened at all (hidepid=noaccess does that) */
        if (!th_has_limit(r, "1 process could not be inspected at all (permission denied)") ||
            host_report_find(r, 111))
                return 17;
        /* the tree's self/mountinfo says it is a proc mount with hidepid=invisible */
        char want[600];
        snprintf(want, sizeof(want), "%s is mounted with hidepid=invisible: processes of other users are not "
                 "listed (not root)", tree);
        if (!th_has_limit(r, want))
                return 18;
        host_report_free(r);
        struct host_proc p111;
        if (host_proc_lookup(&o, 111, &p111) != -EACCES)
                return 19;
        return 0;
}

static void test_permission_denied(void **state)
{
        (void)state;
        if (geteuid() != 0)
                skip();
        char tmp[64], tree[256], fd[512];
        th_tmpdir(tmp);
        th_copy_fixture("proc-basic", tmp, tree);
        snprintf(fd, sizeof(fd), "%s/100/fd", tree);
        assert_int_equal(chmod(fd, 0), 0);
        snprintf(fd, sizeof(fd), "%s/111", tree);
        assert_int_equal(chmod(fd, 0), 0);
        char real[PATH_MAX], mi[PATH_MAX + 128];
        assert_non_null(realpath(tree, real));
        int n = snprintf(mi, sizeof(mi), "25 1 0:23 / %s rw,nosuid,nodev,noexec,relatime shared:13 - proc proc "
                         "rw,hidepid=invisible\n", real);
        snprintf(fd, sizeof(fd), "%s/self/mountinfo", tree);
        assert_int_equal(write_file_atomic(fd, mi, (size_t)n), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(eacces_child(tree));
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        th_rmrf(tmp);
}

static void read_text(const char *path, char **data, size_t *len)
{
        assert_int_equal(read_file_at(AT_FDCWD, path, 1u << 20, data, len), 0);
}

/* Save a bundle (a walk plus lookups), read it back: the same report, and only what was
 * needed was kept. */
static void test_bundle_roundtrip(void **state)
{
        (void)state;
        char tmp[64], save[256], path[1024], bproc[1024];
        th_tmpdir(tmp);
        snprintf(save, sizeof(save), "%s/bundle", tmp);
        struct host_opts o = { .proc_root = GV_FIXTURES "/proc-basic", .read_env = true, .save_dir = save };
        struct host_report *r;
        assert_int_equal(host_scan(&o, &r), 0);
        struct host_proc z, s, h;
        memset(&z, 0, sizeof(z));
        memset(&s, 0, sizeof(s));
        memset(&h, 0, sizeof(h));
        assert_int_equal(host_proc_lookup(&o, 104, &z), 0);     /* an NVML PID that holds nothing */
        assert_int_equal(host_proc_lookup(&o, 111, &s), 0);
        assert_int_equal(host_proc_lookup(&o, 100, &h), 0);     /* a holder looked up again */

        snprintf(bproc, sizeof(bproc), "%s/proc", save);
        struct host_opts bo = { .proc_root = bproc, .dev_prefix = "/dev/nvidia", .read_env = true };
        struct host_report *b;
        assert_int_equal(host_scan(&bo, &b), 0);
        th_assert_same_report(r, b);
        struct host_proc z2, s2, h2;
        memset(&z2, 0, sizeof(z2));
        memset(&s2, 0, sizeof(s2));
        memset(&h2, 0, sizeof(h2));
        assert_int_equal(host_proc_lookup(&bo, 104, &z2), 0);
        assert_int_equal(host_proc_lookup(&bo, 111, &s2), 0);
        assert_int_equal(host_proc_lookup(&bo, 100, &h2), 0);
        th_assert_same_proc(&z, &z2);
        th_assert_same_proc(&s, &s2);
        th_assert_same_proc(&h, &h2);
        assert_int_equal(host_proc_lookup(&bo, 1, &z2), -ESRCH);        /* not saved */
        host_proc_clear(&z);
        host_proc_clear(&s);
        host_proc_clear(&h);
        host_proc_clear(&z2);
        host_proc_clear(&s2);
        host_proc_clear(&h2);

        char *data;
        size_t len;
        /* environ: the allow-list only */
        snprintf(path, sizeof(path), "%s/proc/100/environ", save);
        read_text(path, &data, &len);
        static const char env[] = "CUDA_VISIBLE_DEVICES=0\0LOCAL_RANK=0\0RANK=0";
        assert_int_equal(len, sizeof(env));
        assert_memory_equal(data, env, sizeof(env));
        free(data);
        /* maps: the matched lines only */
        snprintf(path, sizeof(path), "%s/proc/101/maps", save);
        read_text(path, &data, &len);
        assert_string_equal(data, "7f3a31000000-7f3a32000000 rw-s 00000000 00:05 151                       "
                                  "/dev/nvidia-uvm (deleted)\n"
                                  "7f3a33000000-7f3a33200000 rw-s 00000000 00:05 139                       "
                                  "/dev/nvidia0\n");
        free(data);
        /* fd: the matched descriptors only, as links to canonical paths */
        char link[128];
        snprintf(path, sizeof(path), "%s/proc/100/fd/8", save);
        ssize_t k = readlink(path, link, sizeof(link) - 1);
        assert_true(k > 0);
        link[k] = '\0';
        assert_string_equal(link, "/dev/nvidia-caps/nvidia-cap1");
        snprintf(path, sizeof(path), "%s/proc/100/fd/7", save);
        assert_int_equal(access(path, F_OK), -1);
        /* skipped files are not there at all */
        snprintf(path, sizeof(path), "%s/proc/102/maps", save);
        assert_int_equal(access(path, F_OK), -1);
        snprintf(path, sizeof(path), "%s/proc/102/cmdline", save);
        assert_int_equal(access(path, F_OK), -1);
        /* non-holders not looked up are not saved */
        snprintf(path, sizeof(path), "%s/proc/1", save);
        assert_int_equal(access(path, F_OK), -1);
        snprintf(path, sizeof(path), "%s/proc/stat", save);
        read_text(path, &data, &len);
        assert_string_equal(data, "btime 1700000000\n");
        free(data);
        snprintf(path, sizeof(path), "%s/proc/102/ns/pid", save);
        read_text(path, &data, &len);
        assert_string_equal(data, "pid:[4026531836]\n");
        free(data);
        snprintf(path, sizeof(path), "%s/host.json", save);
        read_text(path, &data, &len);
        assert_non_null(strstr(data, "\"format\": \"ghostvram-host-bundle\""));
        assert_non_null(strstr(data, "\"104\": {\n      \"role\": \"lookup\""));
        /* a holder's family: a fixture tree is never compared with kcmp (its PIDs are no processes) */
        assert_non_null(strstr(data, "\"100\": {\n      \"family\": 1,\n      \"family_note\": 3,\n      \"role\": \"holder\""));
        assert_non_null(strstr(data, "\"103\": {\n      \"role\": \"unverified\""));
        assert_null(strstr(data, "hunter2"));
        free(data);

        host_report_free(b);
        host_report_free(r);
        th_rmrf(tmp);
}

/* No walk: only the PIDs asked for are looked at; holders and unverified among them as the walk
 * classes them, the absent and the non-holders left out, the source said. */
static void test_scan_pids(void **state)
{
        (void)state;
        struct host_report *full = scan_basic();
        struct host_opts o = { .proc_root = GV_FIXTURES "/proc-basic", .timeout_ms = 2000, .read_env = true };
        static const pid_t pids[] = { 100, 111, 103, 99999, 100, 0 };
        struct host_report *r = NULL;
        assert_int_equal(host_scan_pids(&o, pids, sizeof(pids) / sizeof(pids[0]), &r), 0);
        assert_int_equal(r->holder_source, HOST_SOURCE_OWNERS);
        assert_string_equal(host_holder_source_name(r->holder_source), "owners");
        assert_int_equal(r->procs_scanned, 4);  /* 100, 111, 103, 99999: duplicates and 0 not counted */
        assert_int_equal(r->n_holders, 1);
        assert_int_equal(r->holders[0].pid, 100);
        const struct host_proc *w = host_report_find(full, 100);
        assert_non_null(w);
        assert_int_equal(r->holders[0].n_nodes, w->n_nodes);
        for (unsigned i = 0; i < w->n_nodes; i++) {
                assert_string_equal(r->holders[0].nodes[i].name, w->nodes[i].name);
                assert_int_equal(r->holders[0].nodes[i].via, w->nodes[i].via);
        }
        assert_int_equal(r->n_unverified, 1);
        assert_int_equal(r->unverified[0].pid, 103);
        assert_null(host_report_find(r, 111));
        assert_int_equal(r->n_nvidia_majors, 3);
        host_report_free(r);
        assert_int_equal(full->holder_source, HOST_SOURCE_PROC);
        host_report_free(full);
        /* a bundle records a walk: not without one */
        o.save_dir = "/nonexistent";
        r = NULL;
        assert_int_equal(host_scan_pids(&o, pids, 1, &r), -EINVAL);
        assert_null(r);
}

static void test_bad_roots(void **state)
{
        (void)state;
        struct host_report *r = (struct host_report *)0x1;
        struct host_opts o = { .proc_root = "/nonexistent/proc" };
        assert_int_equal(host_scan(&o, &r), -ENOENT);
        assert_ptr_equal(r, (struct host_report *)0x1);
        o.proc_root = GV_FIXTURES "/proc-basic/stat";
        assert_int_equal(host_scan(&o, &r), -ENOTDIR);

        /* a damaged bundle is an error, not a silent empty report */
        char tmp[64], path[1024];
        th_tmpdir(tmp);
        snprintf(path, sizeof(path), "%s/proc", tmp);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/host.json", tmp);
        assert_int_equal(write_file_atomic(path, "{ not json", 10), 0);
        snprintf(path, sizeof(path), "%s/proc", tmp);
        o.proc_root = path;
        assert_int_equal(host_scan(&o, &r), -EBADMSG);
        /* somebody else's host.json: not a bundle */
        char js[512];
        snprintf(js, sizeof(js), "%s/host.json", tmp);
        assert_int_equal(write_file_atomic(js, "{\"x\": 1}", 8), 0);
        assert_int_equal(host_scan(&o, &r), 0);
        assert_int_equal(r->n_holders, 0);
        assert_int_equal(r->procs_scanned, 0);
        assert_true(th_has_limit(r, "devices could not be read"));
        host_report_free(r);
        th_rmrf(tmp);
}

/* A bundle's families: read back as saved; a family or note out of range is a damaged bundle. */
static void test_bundle_families_parse(void **state)
{
        (void)state;
        static const char head[] = "{\"format\": \"ghostvram-host-bundle\", \"version\": 1, \"clk_tck\": 100, \"euid\": 0, "
                                   "\"initial_pidns\": true, \"limits\": [], \"procs_scanned\": 3, \"sample_time\": 1.5, "
                                   "\"self_pid\": 7, \"self_pidns_ino\": 4026531836, \"procs\": {\"100\": {\"role\": \"holder\", "
                                   "\"skipped\": 0, \"user\": \"root\"";
        static const struct {
                const char *tail;
                int ret;
                unsigned family, note;
        } cases[] = {
                { "}}}", 0, 0, 0 },                                     /* a bundle made before families */
                { ", \"family\": 2, \"family_note\": 1}}}", 0, 2, HOST_FAMILY_MAPPING_ONLY },
                { ", \"family\": 3}}}", 0, 3, HOST_FAMILY_COMPARED },
                { ", \"family\": -1}}}", -EBADMSG, 0, 0 },
                { ", \"family\": \"2\"}}}", -EBADMSG, 0, 0 },
                { ", \"family\": 2, \"family_note\": 99}}}", -EBADMSG, 0, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char doc[1024], err[256] = "";
                snprintf(doc, sizeof(doc), "%s%s", head, cases[i].tail);
                struct host_bundle_in *b = NULL;
                assert_int_equal(host_bundle_parse(doc, strlen(doc), &b, err, sizeof(err)), cases[i].ret);
                if (cases[i].ret < 0) {
                        assert_null(b);
                        assert_non_null(strstr(err, "host.json"));
                        continue;
                }
                assert_non_null(b);
                assert_int_equal(b->n_procs, 1);
                assert_int_equal(b->procs[0].family, cases[i].family);
                assert_int_equal(b->procs[0].family_note, cases[i].note);
                host_bundle_in_free(b);
        }
}

/* ghostvram's own process and the processes out of sight, as host.json keeps them; absent in
 * older bundles, which read as before. */
static void test_bundle_self_parse(void **state)
{
        (void)state;
        static const char head[] = "{\"format\": \"ghostvram-host-bundle\", \"version\": 1, \"clk_tck\": 100, \"euid\": 0, "
                                   "\"initial_pidns\": true, \"limits\": [], \"procs_scanned\": 3, \"sample_time\": 1.5, "
                                   "\"self_pid\": 7, \"self_pidns_ino\": 4026531836, \"procs\": {}";
        static const struct {
                const char *tail;
                int ret;
                bool saved;
                unsigned n_anc;
                size_t n_opaque;
        } cases[] = {
                { "}", 0, false, 0, 0 },                                /* a bundle made before them */
                { ", \"self_saved\": true, \"self_ancestors\": [6, 5, 1], \"opaque\": [[40, 40, 1], [41, 0, 0]]}",
                  0, true, 3, 2 },
                { ", \"self_saved\": true, \"self_ancestors\": []}", 0, true, 0, 0 },
                { ", \"self_ancestors\": [0]}", -EBADMSG, false, 0, 0 },
                { ", \"self_ancestors\": \"6\"}", -EBADMSG, false, 0, 0 },
                { ", \"opaque\": [[40, 40]]}", -EBADMSG, false, 0, 0 },
                { ", \"opaque\": [[0, 1, 1]]}", -EBADMSG, false, 0, 0 },
                { ", \"opaque\": [[40, -1, 1]]}", -EBADMSG, false, 0, 0 },
                { ", \"opaque\": {}}", -EBADMSG, false, 0, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char doc[1024], err[256] = "";
                snprintf(doc, sizeof(doc), "%s%s", head, cases[i].tail);
                struct host_bundle_in *b = NULL;
                print_message("case %zu\n", i);
                assert_int_equal(host_bundle_parse(doc, strlen(doc), &b, err, sizeof(err)), cases[i].ret);
                if (cases[i].ret < 0) {
                        assert_null(b);
                        continue;
                }
                assert_non_null(b);
                assert_int_equal(b->self_saved, cases[i].saved);
                assert_int_equal(b->n_self_ancestors, cases[i].n_anc);
                assert_int_equal(b->n_opaque, cases[i].n_opaque);
                if (cases[i].n_anc == 3)
                        assert_true(b->self_ancestors[0] == 6 && b->self_ancestors[2] == 1);
                if (cases[i].n_opaque == 2)
                        assert_true(b->opaque[0].pid == 40 && b->opaque[0].sid == 1 && b->opaque[1].pgid == 0);
                host_bundle_in_free(b);
        }
        /* more ancestors than a report holds */
        char doc[4096];
        int n = snprintf(doc, sizeof(doc), "%s, \"self_ancestors\": [", head);
        for (int k = 0; k <= HOST_MAX_ANCESTORS; k++)
                n += snprintf(doc + n, sizeof(doc) - (size_t)n, "%s%d", k ? ", " : "", k + 2);
        snprintf(doc + n, sizeof(doc) - (size_t)n, "]}");
        struct host_bundle_in *b = NULL;
        char err[256];
        assert_int_equal(host_bundle_parse(doc, strlen(doc), &b, err, sizeof(err)), -EBADMSG);
        assert_null(b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_basic_sets),
                cmocka_unit_test(test_docker_main_process),
                cmocka_unit_test(test_forked_worker_mapping_only),
                cmocka_unit_test(test_dstate),
                cmocka_unit_test(test_nonholders_and_lookup),
                cmocka_unit_test(test_exiting_and_cgroupfs_docker),
                cmocka_unit_test(test_zombie_leader_with_threads),
                cmocka_unit_test(test_other_pidns_podman),
                cmocka_unit_test(test_hostile_strings),
                cmocka_unit_test(test_slurm_k8s_env),
                cmocka_unit_test(test_devnum_and_devino),
                cmocka_unit_test(test_fifo_does_not_hang),
                cmocka_unit_test(test_fifo_thread_in_driver),
                cmocka_unit_test(test_fifo_wait_budget),
                cmocka_unit_test(test_permission_denied),
                cmocka_unit_test(test_bundle_roundtrip),
                cmocka_unit_test(test_bundle_families_parse),
                cmocka_unit_test(test_bundle_self_parse),
                cmocka_unit_test(test_scan_pids),
                cmocka_unit_test(test_bad_roots),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
