/* Parsers of the host reader: stat, status, cgroup, maps lines, node names, /proc/devices,
 * btime, namespace links, the environment allow-list. No I/O. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collect/host_internal.h"

#define S(lit) (lit), (sizeof(lit) - 1)

/* --- stat ---------------------------------------------------------------------------------- */

static void test_stat_plain(void **state)
{
        (void)state;
        struct host_proc p = { 0 };
        static const char line[] = "4321 (python3) S 4000 4321 3999 34816 4321 4194560 5 0 0 0 1 2 0 0 20 0 "
                                   "3 0 987654 1000 20 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0\n";
        assert_int_equal(host_parse_stat(S(line), &p), 0);
        assert_int_equal(p.pid, 4321);
        assert_string_equal(p.comm, "python3");
        assert_int_equal(p.state, 'S');
        assert_int_equal(p.ppid, 4000);
        assert_int_equal(p.pgid, 4321);
        assert_int_equal(p.sid, 3999);
        assert_false(p.exiting);
        assert_false(p.kernel_thread);
        assert_int_equal(p.start_ticks, 987654);
        assert_int_equal(p.num_threads, 3);
        assert_int_equal(p.cpu_ticks, 3);       /* utime 1 + stime 2 */
        assert_true(p.rss_known);
        assert_int_equal(p.rss_pages, 20);
        host_proc_clear(&p);
}

static void test_stat_hostile_comm(void **state)
{
        (void)state;
        struct host_proc p = { 0 };
        /* a name with ") (", a newline, an escape sequence and a fake state: the fields start
         * after the LAST ')' */
        static const char line[] = "7 (a) R 1 2 3 (x\n\x1b[31m) D 9 7 7 0 -1 4194564 0 0 0 0 0 0 0 0 20 0 1 0 55 "
                                   "0 0 0\n";
        assert_int_equal(host_parse_stat(S(line), &p), 0);
        assert_string_equal(p.comm, "a) R 1 2 3 (x\n\x1b[31m");
        assert_int_equal(p.state, 'D');
        assert_int_equal(p.ppid, 9);
        assert_true(p.exiting);
        assert_int_equal(p.start_ticks, 55);
        host_proc_clear(&p);
        /* the 20 fields the parser needs, without rss (a fixture of an old format) */
        static const char short_line[] = "8 (b) S 1 8 8 0 -1 0 0 0 0 0 7 5 0 0 20 0 1 0 66\n";
        struct host_proc q = { 0 };
        assert_int_equal(host_parse_stat(S(short_line), &q), 0);
        assert_int_equal(q.start_ticks, 66);
        assert_int_equal(q.cpu_ticks, 12);
        assert_false(q.rss_known);
        host_proc_clear(&q);
}

static void test_stat_kthread(void **state)
{
        (void)state;
        struct host_proc p = { 0 };
        static const char line[] = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 2 0 0\n";
        assert_int_equal(host_parse_stat(S(line), &p), 0);
        assert_true(p.kernel_thread);
        assert_false(p.exiting);
        assert_int_equal(p.ppid, 0);
        host_proc_clear(&p);
}

static void test_stat_invalid(void **state)
{
        (void)state;
        static const struct { const char *s; } bad[] = {
                { "" },
                { "12 python S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n" },            /* no parentheses */
                { "12 (python S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n" },           /* no ')' */
                { "12 (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0\n" },            /* no starttime */
                { "12 (python) SS 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n" },         /* state */
                { "12 (python) S x 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n" },          /* ppid */
                { "12 (python) S 1 1 1 0 -1 0x4 0 0 0 0 0 0 0 0 20 0 1 0 5\n" },        /* flags */
                { "x (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n" },           /* pid */
                { "0 (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n" },           /* pid 0 */
                { "12 (python)S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n" },           /* separator */
                { "12 (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99999999999999999999\n" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct host_proc p = { .pid = 77, .state = '?' };
                assert_int_equal(host_parse_stat(bad[i].s, strlen(bad[i].s), &p), -EINVAL);
                /* output untouched on failure */
                assert_int_equal(p.pid, 77);
                assert_int_equal(p.state, '?');
                assert_null(p.comm);
        }
}

static void test_stat_not_terminated(void **state)
{
        (void)state;
        /* the parser must stop at len: the same line cut before starttime is invalid */
        static const char line[] = "5 (sh) S 1 5 5 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0\n";
        struct host_proc p = { 0 };
        size_t cut = (size_t)(strstr(line, " 77") - line);
        assert_int_equal(host_parse_stat(line, cut, &p), -EINVAL);
        assert_int_equal(host_parse_stat(line, cut + 3, &p), 0);
        assert_int_equal(p.start_ticks, 77);
        host_proc_clear(&p);
}

/* --- status -------------------------------------------------------------------------------- */

static void test_status(void **state)
{
        (void)state;
        struct host_proc p = { 0 };
        static const char s1[] = "Name:\tpython\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n"
                                 "NStgid:\t4879\t12\t1\nNSpid:\t4879\t12\t1\n";
        assert_int_equal(host_parse_status(S(s1), &p), 0);
        assert_int_equal(p.uid, 1000);          /* real, not effective */
        assert_int_equal(p.n_nspid, 3);
        assert_int_equal(p.nspid[0], 4879);
        assert_int_equal(p.nspid[1], 12);
        assert_int_equal(p.nspid[2], 1);

        /* no NSpid (kernel < 4.1): unknown chain */
        struct host_proc q = { 0 };
        assert_int_equal(host_parse_status(S("Name:\tx\nUid:\t0\t0\t0\t0\n"), &q), 0);
        assert_int_equal(q.n_nspid, 0);
        assert_int_equal(q.uid, 0);

        /* deeper than HOST_MAX_NSPID: the outermost are kept */
        struct host_proc r = { 0 };
        assert_int_equal(host_parse_status(S("Uid:\t5\t5\t5\t5\nNSpid:\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\n"), &r), 0);
        assert_int_equal(r.n_nspid, HOST_MAX_NSPID);
        assert_int_equal(r.nspid[HOST_MAX_NSPID - 1], 8);
}

static void test_status_invalid(void **state)
{
        (void)state;
        static const char *const bad[] = {
                "Name:\tx\n",                           /* no Uid */
                "Uid:\tabc\t0\t0\t0\n",
                "Uid:\n",
                "Uid:\t0\t0\t0\t0\nNSpid:\t12\tx\n",
                "Uid:\t0\t0\t0\t0\nNSpid:\t0\n",
                "Uid:\t4294967295\t0\t0\t0\n",          /* (uid_t)-1 is not a user */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct host_proc p = { .uid = 42 };
                assert_int_equal(host_parse_status(bad[i], strlen(bad[i]), &p), -EINVAL);
                assert_int_equal(p.uid, 42);
        }
}

/* --- cgroup -------------------------------------------------------------------------------- */

#define D64 "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

static const struct cg_case {
        const char *name, *in, *path, *runtime, *id, *pod, *slurm, *unit;
} cg_cases[] = {
        { "docker, systemd driver", "0::/system.slice/docker-" D64 ".scope\n",
          "/system.slice/docker-" D64 ".scope", "docker", D64, "", "", "" },
        { "docker, cgroupfs driver, hybrid (v2 root)",
          "12:memory:/docker/" D64 "\n1:name=systemd:/docker/" D64 "\n0::/\n", "/docker/" D64, "docker", D64, "", "", "" },
        { "containerd in a pod, systemd driver",
          "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f1e2d3c_4b5a_6978_8a9b_0c1d2e3f4a5b.slice/"
          "cri-containerd-" D64 ".scope\n",
          "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f1e2d3c_4b5a_6978_8a9b_0c1d2e3f4a5b.slice/"
          "cri-containerd-" D64 ".scope", "containerd", D64, "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", "", "" },
        { "cri-o in a guaranteed pod, systemd driver",
          "0::/kubepods.slice/kubepods-pod7a6b5c4d_3e2f_1a0b_9c8d_7e6f5a4b3c2d.slice/crio-" D64 ".scope\n",
          "/kubepods.slice/kubepods-pod7a6b5c4d_3e2f_1a0b_9c8d_7e6f5a4b3c2d.slice/crio-" D64 ".scope", "cri-o", D64,
          "7a6b5c4d-3e2f-1a0b-9c8d-7e6f5a4b3c2d", "", "" },
        { "cri-o monitor scope is neither container nor unit",
          "0::/kubepods.slice/kubepods-pod7a6b5c4d_3e2f_1a0b_9c8d_7e6f5a4b3c2d.slice/crio-conmon-" D64 ".scope\n",
          "/kubepods.slice/kubepods-pod7a6b5c4d_3e2f_1a0b_9c8d_7e6f5a4b3c2d.slice/crio-conmon-" D64 ".scope", "", "",
          "7a6b5c4d-3e2f-1a0b-9c8d-7e6f5a4b3c2d", "", "" },
        { "pod, cgroupfs driver (runtime unknown from the path)",
          "0::/kubepods/burstable/pod8d2c7f40-1b2a-4c3d-9e8f-0a1b2c3d4e5f/" D64 "\n",
          "/kubepods/burstable/pod8d2c7f40-1b2a-4c3d-9e8f-0a1b2c3d4e5f/" D64, "", D64,
          "8d2c7f40-1b2a-4c3d-9e8f-0a1b2c3d4e5f", "", "" },
        { "cri-o in a pod, cgroupfs driver",
          "11:pids:/kubepods/besteffort/pod8d2c7f40-1b2a-4c3d-9e8f-0a1b2c3d4e5f/crio-" D64 "\n",
          "/kubepods/besteffort/pod8d2c7f40-1b2a-4c3d-9e8f-0a1b2c3d4e5f/crio-" D64, "cri-o", D64,
          "8d2c7f40-1b2a-4c3d-9e8f-0a1b2c3d4e5f", "", "" },
        { "containerd's slice:runtime:id notation",
          "0::/system.slice/containerd.service/kubepods-burstable-pod0f1e2d3c_4b5a_6978_8a9b_0c1d2e3f4a5b.slice:"
          "cri-containerd:" D64 "\n",
          "/system.slice/containerd.service/kubepods-burstable-pod0f1e2d3c_4b5a_6978_8a9b_0c1d2e3f4a5b.slice:"
          "cri-containerd:" D64, "containerd", D64, "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", "", "containerd.service" },
        { "rootless podman",
          "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" D64 ".scope/container\n",
          "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" D64 ".scope/container", "podman", D64, "",
          "", "user@1000.service" },
        { "Slurm, cgroup v1", "12:devices:/slurm/uid_1000/job_4242/step_0/task_0\n1:name=systemd:/system.slice/slurmd.service\n",
          "/system.slice/slurmd.service", "", "", "", "4242", "slurmd.service" },
        { "Slurm, cgroup v2", "0::/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0\n",
          "/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0", "", "", "", "77", "slurmstepd.scope" },
        { "login session", "0::/user.slice/user-1000.slice/session-3.scope\n", "/user.slice/user-1000.slice/session-3.scope",
          "", "", "", "", "session-3.scope" },
        { "dockerd itself is a unit", "0::/system.slice/docker.service\n", "/system.slice/docker.service", "", "", "",
          "", "docker.service" },
        { "a too short id is not a container", "0::/system.slice/docker-abc.scope\n", "/system.slice/docker-abc.scope",
          "", "", "", "", "" },
        { "v1 only, no systemd line: first deep v1 path", "4:memory:/process_api/434aee587b31\n3:cpuset:/\n0::/\n",
          "/process_api/434aee587b31", "", "", "", "", "" },
        { "hostile path survives raw", "0::/system.slice/evil\x1b[2J\xff.service\n",
          "/system.slice/evil\x1b[2J\xff.service", "", "", "", "", "evil\x1b[2J\xff.service" },
        { "a path containing ':'", "0::/a:b/c.scope\n", "/a:b/c.scope", "", "", "", "", "c.scope" },
};

static void test_cgroup_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(cg_cases) / sizeof(cg_cases[0]); i++) {
                const struct cg_case *c = &cg_cases[i];
                struct host_proc p = { 0 };
                print_message("cgroup: %s\n", c->name);
                assert_int_equal(host_parse_cgroup(c->in, strlen(c->in), &p), 0);
                assert_string_equal(p.cgroup, c->path);
                assert_string_equal(p.container_runtime, c->runtime);
                assert_string_equal(p.container_id, c->id);
                assert_string_equal(p.k8s_pod_uid, c->pod);
                assert_string_equal(p.slurm_job, c->slurm);
                assert_string_equal(p.systemd_unit, c->unit);
                host_proc_clear(&p);
        }
}

static void test_cgroup_invalid(void **state)
{
        (void)state;
        struct host_proc p = { 0 };
        assert_int_equal(host_parse_cgroup(S(""), &p), -EINVAL);
        assert_int_equal(host_parse_cgroup(S("no colons here\n"), &p), -EINVAL);
        assert_null(p.cgroup);
}

/* --- maps ---------------------------------------------------------------------------------- */

static void test_maps_line(void **state)
{
        (void)state;
        static const struct {
                const char *line;
                const char *path;       /* NULL: none */
        } cases[] = {
                { "7f3a33000000-7f3a33200000 rw-s 00000000 00:05 139                       /dev/nvidia0", "/dev/nvidia0" },
                { "7f3a33000000-7f3a33200000 rw-s 00000000 00:05 139 /dev/nvidia0\n", "/dev/nvidia0" },
                { "7f0-7f1 r--p 00000000 fd:01 99    /home/u/my file (1).bin", "/home/u/my file (1).bin" },
                { "7f0-7f1 rw-s 00000000 00:05 151   /dev/nvidia-uvm (deleted)", "/dev/nvidia-uvm (deleted)" },
                { "55d0c1e4c000-55d0c1f6d000 rw-p 00000000 00:00 0                          [heap]", "[heap]" },
                { "7f3a2c000000-7f3a2c021000 rw-p 00000000 00:00 0 ", NULL },
                { "7f3a2c000000-7f3a2c021000 rw-p 00000000 00:00 0", NULL },
                { "7f3a2c000000-7f3a2c021000 rw-p 00000000 00:00", NULL },   /* malformed */
                { "garbage", NULL },
                { "", NULL },
                { "7f0-7f1 rw-s 00000000 zz:05 1 /dev/nvidia0", NULL },     /* bad device */
                { "7f0 rw-s 00000000 00:05 1 /dev/nvidia0", NULL },         /* no range */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                size_t pl = 12345;
                const char *p = host_maps_line_path(cases[i].line, strlen(cases[i].line), &pl);
                if (!cases[i].path) {
                        assert_null(p);
                        continue;
                }
                assert_non_null(p);
                assert_int_equal(pl, strlen(cases[i].path));
                assert_memory_equal(p, cases[i].path, pl);
        }
}

static void test_maps_line_fields(void **state)
{
        (void)state;
        struct host_maps_line m;
        static const char line[] = "7f0-7f1 rw-s 00000000 103:0a 4026 /dev/nvidia-uvm (deleted)\n";
        assert_int_equal(host_parse_maps_line(S(line), &m), 0);
        assert_int_equal(m.dev_major, 0x103);
        assert_int_equal(m.dev_minor, 0x0a);
        assert_int_equal(m.ino, 4026);
        assert_true(m.deleted);
        assert_int_equal(m.pathlen, strlen("/dev/nvidia-uvm"));
        assert_memory_equal(m.path, "/dev/nvidia-uvm", m.pathlen);
        assert_int_equal(host_parse_maps_line(S("7f0-7f1 rw-p 00000000 00:00 0"), &m), 0);
        assert_null(m.path);
        assert_int_equal(m.ino, 0);
}

/* A maps text whose areas go back, or overlap the one before, was read while the process
 * changed its mappings; one in order was not (a line cut at the cap is no sign of either). */
static void test_maps_ordered(void **state)
{
        (void)state;
        static const struct {
                const char *text;
                bool ordered;
        } cases[] = {
                { "", true },
                { "1000-2000 r--p 00000000 00:00 0\n2000-3000 rw-p 00000000 00:00 0\n", true },
                { "1000-2000 r--p 00000000 00:00 0\n3000-4000 rw-s 00000000 00:05 139 /dev/nvidia0\n7ff0", true },
                { "1000-2000 r--p 00000000 00:00 0\n1800-3000 rw-p 00000000 00:00 0\n", false },
                { "5000-6000 r--p 00000000 00:00 0\n1000-2000 rw-p 00000000 00:00 0\n", false },
                { "2000-1000 r--p 00000000 00:00 0\n", false },
                { "garbage\n1000-2000 r--p 0 00:00 0\n", true },
                { "7f3a33200000-7f3a33201000 rw-s 0 00:05 140 /dev/nvidiactl\n"
                  "7f3a30c3a000-7f3a30c3b000 rw-s 0 00:1a 4 /dev/shm/x (deleted)\n", false },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                print_message("case %zu\n", i);
                assert_int_equal(host_maps_ordered(cases[i].text, strlen(cases[i].text)), cases[i].ordered);
        }
}

/* A thread is in the driver when its wchan or kernel stack names a function of the nvidia
 * modules; a wait elsewhere in the kernel (a futex, a pipe, the mmap lock itself) is not. */
static void test_names_driver(void **state)
{
        (void)state;
        static const struct {
                const char *text;
                bool driver;
        } cases[] = {
                { "uvm_va_space_destroy", true },
                { "nvidia_close\n", true },
                { "os_acquire_mutex", true },
                { "_nv012345rm", true },
                { "[<0>] rwsem_down_write_slowpath+0x2a1/0x540\n[<0>] nvkms_ioctl+0x10/0x40 [nvidia_modeset]\n", true },
                { "[<0>] __schedule+0x2d1/0x8a0\n[<0>] some_helper+0x1/0x2 [nvidia_uvm]\n", true },
                { "[<0>] futex_wait_queue+0x60/0x90\n[<0>] do_futex+0x11e/0x1a0\n", false },
                { "rwsem_down_read_slowpath", false },
                { "pipe_read", false },
                { "do_nanosleep", false },
                { "0", false },
                { "", false },
                { "[<0>] envy_thing+0x1/0x2 [envy]\n", false },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                print_message("case %zu: %s\n", i, cases[i].text);
                assert_int_equal(host_names_driver(cases[i].text, strlen(cases[i].text)), cases[i].driver);
        }
}

/* --- device nodes -------------------------------------------------------------------------- */

static void test_node_name(void **state)
{
        (void)state;
        char out[48];
        assert_int_equal(host_node_name("/dev/nvidia-uvm", "/dev/nvidia", out, sizeof(out)), 0);
        assert_string_equal(out, "nvidia-uvm");
        assert_int_equal(host_node_name("/x/dev/nvidia-uvm", "/x/dev/nvidia", out, sizeof(out)), 0);
        assert_string_equal(out, "nvidia-uvm");
        assert_int_equal(host_node_name("/x/dev/nvidia-caps/nvidia-cap1", "/x/dev/nvidia", out, sizeof(out)), 0);
        assert_string_equal(out, "nvidia-caps/nvidia-cap1");
        assert_int_equal(host_node_name("/dev/nvidia", "/dev/nvidia", out, sizeof(out)), 0);
        assert_string_equal(out, "nvidia");
        assert_int_equal(host_node_name("/dev/null", "/dev/nvidia", out, sizeof(out)), -EINVAL);
        assert_int_equal(host_node_name("/dev/nvidia0", "", out, sizeof(out)), -EINVAL);
        assert_int_equal(host_node_name("/dev/nvidia-uvm-tools", "/dev/nvidia", out, 8), -EINVAL);
}

static const char devices[] = "Character devices:\n  1 mem\n  4 /dev/vc/0\n136 pts\n195 nvidia-frontend\n"
                              "234 nvidia-caps\n237 nvidia-uvm\n240 nvidia-nvswitch\n254 gpiochip\n\n"
                              "Block devices:\n  8 sd\n196 nvidia-block\n";

static void test_devices(void **state)
{
        (void)state;
        struct host_majors m;
        assert_int_equal(host_parse_devices(S(devices), &m), 0);
        assert_int_equal(m.n, 4);
        assert_int_equal(m.m[0].major, 195);
        assert_int_equal(m.m[0].kind, HOST_DRV_FRONTEND);
        assert_int_equal(m.m[1].major, 234);
        assert_int_equal(m.m[1].kind, HOST_DRV_CAPS);
        assert_int_equal(m.m[2].major, 237);
        assert_int_equal(m.m[2].kind, HOST_DRV_UVM);
        assert_int_equal(m.m[3].kind, HOST_DRV_OTHER);
        assert_string_equal(m.m[3].name, "nvidia-nvswitch");

        /* no driver loaded: a valid, empty answer */
        assert_int_equal(host_parse_devices(S("Character devices:\n  1 mem\n\nBlock devices:\n"), &m), 0);
        assert_int_equal(m.n, 0);
        /* "nvidia" alone (newer drivers) is the frontend too */
        assert_int_equal(host_parse_devices(S("Character devices:\n195 nvidia\n"), &m), 0);
        assert_int_equal(m.m[0].kind, HOST_DRV_FRONTEND);
        m.n = 99;
        assert_int_equal(host_parse_devices(S("1 mem\n195 nvidia\n"), &m), -EINVAL);
        assert_int_equal(m.n, 99);
}

static void test_majors_name(void **state)
{
        (void)state;
        struct host_majors m;
        char out[48];
        assert_int_equal(host_parse_devices(S(devices), &m), 0);
        static const struct { unsigned major, minor; const char *name; } cases[] = {
                { 195, 0, "nvidia0" }, { 195, 7, "nvidia7" }, { 195, 255, "nvidiactl" },
                { 195, 254, "nvidia-modeset" }, { 237, 0, "nvidia-uvm" }, { 237, 1, "nvidia-uvm-tools" },
                { 234, 1, "nvidia-caps/nvidia-cap1" }, { 234, 2, "nvidia-caps/nvidia-cap2" },
                { 240, 3, "nvidia-nvswitch:3" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                assert_int_equal(host_majors_name(&m, cases[i].major, cases[i].minor, out, sizeof(out)), 0);
                assert_string_equal(out, cases[i].name);
        }
        assert_int_equal(host_majors_name(&m, 1, 3, out, sizeof(out)), -ENOENT);
        assert_int_equal(host_majors_name(&m, 196, 0, out, sizeof(out)), -ENOENT);   /* block, not char */
}

static void test_btime_and_ns(void **state)
{
        (void)state;
        uint64_t v = 7;
        assert_int_equal(host_parse_btime(S("cpu 1 2 3\nbtime 1700000000\nprocesses 5\n"), &v), 0);
        assert_int_equal(v, 1700000000);
        v = 7;
        assert_int_equal(host_parse_btime(S("cpu 1 2 3\n"), &v), -EINVAL);
        assert_int_equal(host_parse_btime(S("btime x\n"), &v), -EINVAL);
        assert_int_equal(v, 7);

        assert_int_equal(host_parse_ns_link(S("pid:[4026531836]"), &v), 0);
        assert_int_equal(v, HOST_PROC_PID_INIT_INO);
        assert_int_equal(host_parse_ns_link(S("pid:[4026532999]\n"), &v), 0);
        assert_int_equal(v, 4026532999u);
        assert_int_equal(host_parse_ns_link(S("pid:[]"), &v), -EINVAL);
        assert_int_equal(host_parse_ns_link(S("4026531836"), &v), -EINVAL);
        assert_int_equal(host_parse_ns_link(S("[4026531836]"), &v), -EINVAL);
        assert_int_equal(host_parse_ns_link(S("pid:[12x]"), &v), -EINVAL);
}

/* --- environment --------------------------------------------------------------------------- */

static void test_environ_allowlist(void **state)
{
        (void)state;
        char big[HOST_CAP_ENV_VALUE + 64];
        memset(big, '1', sizeof(big));
        struct buf env = BUF_INIT(0);
        assert_int_equal(buf_append(&env, S("PATH=/usr/bin\0CUDA_VISIBLE_DEVICES=0,1\0AWS_SECRET_ACCESS_KEY=abc\0"
                                            "RANK=3\0RANK=4\0JUNK\0LOCAL_RANK=\0TORCHELASTIC_RUN_ID=r1\0")), 0);
        assert_int_equal(buf_puts(&env, "NVIDIA_VISIBLE_DEVICES="), 0);
        assert_int_equal(buf_append(&env, big, sizeof(big)), 0);
        assert_int_equal(buf_append(&env, S("\0SLURM_JOB_ID=9")), 0);   /* no final NUL */

        struct host_proc p = { 0 };
        struct buf saved = BUF_INIT(0);
        assert_int_equal(host_parse_environ(env.data, env.len, &p, &saved), 0);
        assert_int_equal(p.n_env, 5);
        assert_string_equal(host_proc_env(&p, "CUDA_VISIBLE_DEVICES"), "0,1");
        assert_string_equal(host_proc_env(&p, "RANK"), "3");   /* the first, like getenv() */
        assert_string_equal(host_proc_env(&p, "LOCAL_RANK"), "");
        assert_string_equal(host_proc_env(&p, "TORCHELASTIC_RUN_ID"), "r1");
        assert_string_equal(host_proc_env(&p, "SLURM_JOB_ID"), "9");
        assert_null(host_proc_env(&p, "AWS_SECRET_ACCESS_KEY"));
        assert_null(host_proc_env(&p, "PATH"));
        assert_null(host_proc_env(&p, "NVIDIA_VISIBLE_DEVICES"));       /* longer than the cap */
        static const char want[] = "CUDA_VISIBLE_DEVICES=0,1\0RANK=3\0LOCAL_RANK=\0TORCHELASTIC_RUN_ID=r1\0SLURM_JOB_ID=9";
        assert_int_equal(saved.len, sizeof(want));
        assert_memory_equal(saved.data, want, sizeof(want));
        assert_null(memmem(saved.data, saved.len, "SECRET", 6));

        /* a second parse replaces the first */
        assert_int_equal(host_parse_environ(S("RANK=9\0"), &p, NULL), 0);
        assert_int_equal(p.n_env, 1);
        assert_string_equal(host_proc_env(&p, "RANK"), "9");
        host_proc_clear(&p);
        buf_free(&env);
        buf_free(&saved);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stat_plain),
                cmocka_unit_test(test_stat_hostile_comm),
                cmocka_unit_test(test_stat_kthread),
                cmocka_unit_test(test_stat_invalid),
                cmocka_unit_test(test_stat_not_terminated),
                cmocka_unit_test(test_status),
                cmocka_unit_test(test_status_invalid),
                cmocka_unit_test(test_cgroup_table),
                cmocka_unit_test(test_cgroup_invalid),
                cmocka_unit_test(test_maps_line),
                cmocka_unit_test(test_maps_line_fields),
                cmocka_unit_test(test_maps_ordered),
                cmocka_unit_test(test_names_driver),
                cmocka_unit_test(test_node_name),
                cmocka_unit_test(test_devices),
                cmocka_unit_test(test_majors_name),
                cmocka_unit_test(test_btime_and_ns),
                cmocka_unit_test(test_environ_allowlist),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
