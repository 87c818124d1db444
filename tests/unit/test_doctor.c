/* Unit tests for model/doctor: the parsers of /proc/driver/nvidia/version, /proc/modules and
 * the container toolkit's config.toml on real-format input and garbage; the known-issue table
 * (every row sourced, ranges well-formed, edges of each range, releases written as NVIDIA
 * writes them); the levels and exit status of the checks from facts alone (the paths the
 * simulator cannot reach: a user without kernel log access, an unreadable host). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model/doctor.h"

#define S(x) x, sizeof(x) - 1

static void test_module_version(void **state)
{
        (void)state;
        char v[64];
        bool open = true;
        assert_int_equal(doctor_parse_module_version(S("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 "
                                                       "19:39:15 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
                                                     v, sizeof(v), &open),
                         0);
        assert_string_equal(v, "535.183.01");
        assert_false(open);
        assert_int_equal(doctor_parse_module_version(S("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  "
                                                       "Release Build  (dvs-builder@U22-I3-AE18-23-3)  Tue Jun  3 2025\n"),
                                                     v, sizeof(v), &open),
                         0);
        assert_string_equal(v, "570.158.01");
        assert_true(open);
        /* aarch64, version after "for aarch64" */
        assert_int_equal(doctor_parse_module_version(S("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  550.54.15  Release Build\n"),
                                                     v, sizeof(v), &open), 0);
        assert_string_equal(v, "550.54.15");
        assert_int_equal(doctor_parse_module_version(S("GCC version: 12\n"), v, sizeof(v), &open), -EINVAL);
        assert_int_equal(doctor_parse_module_version(S("NVRM version: NVIDIA UNIX x86_64 Kernel Module\n"), v, sizeof(v), &open), -EINVAL);
        assert_int_equal(doctor_parse_module_version("", 0, v, sizeof(v), &open), -EINVAL);
        /* a version too long for the caller's buffer */
        char tiny[4];
        assert_int_equal(doctor_parse_module_version(S("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  x\n"), tiny,
                                                     sizeof(tiny), &open), -EINVAL);
}

static void test_modules(void **state)
{
        (void)state;
        static const char mods[] = "nvidia_drm 77824 4 - Live 0xffffffffc1a4f000 (PO)\n"
                                   "nvidia_uvm 1437696 2 - Live 0x0000000000000000 (PO)\n"
                                   "nvidia 56512512 93 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (PO)\n";
        long ref = -1;
        assert_int_equal(doctor_parse_modules(S(mods), "nvidia_uvm", &ref), 1);
        assert_int_equal(ref, 2);
        assert_int_equal(doctor_parse_modules(S(mods), "nvidia", &ref), 1);
        assert_int_equal(ref, 93);
        /* a prefix of a loaded module is not that module */
        assert_int_equal(doctor_parse_modules(S(mods), "nvidia_u", &ref), 0);
        assert_int_equal(doctor_parse_modules(S("nvidia_uvm x 2 - Live\n"), "nvidia_uvm", &ref), -EINVAL);
        assert_int_equal(doctor_parse_modules(S("nvidia_uvm 100\n"), "nvidia_uvm", &ref), -EINVAL);
        assert_int_equal(doctor_parse_modules("", 0, "nvidia_uvm", &ref), 0);
}

static void test_toolkit_mode(void **state)
{
        (void)state;
        char m[16];
        assert_int_equal(doctor_parse_toolkit_mode(S("[nvidia-container-cli]\nmode = \"x\"\n[nvidia-container-runtime]\n"
                                                     "#mode = \"legacy\"\n  mode = \"cdi\"\n"), m, sizeof(m)), 0);
        assert_string_equal(m, "cdi");
        assert_int_equal(doctor_parse_toolkit_mode(S("[nvidia-container-runtime]\nlog-level = \"info\"\n"), m, sizeof(m)), 0);
        assert_string_equal(m, "");
        assert_int_equal(doctor_parse_toolkit_mode(S("[nvidia-container-runtime]\nmode = cdi\n"), m, sizeof(m)), -EINVAL);
        assert_int_equal(doctor_parse_toolkit_mode(S("[nvidia-container-runtime]\nmode = \"a-very-long-mode-name\"\n"), m, sizeof(m)),
                         -EINVAL);
}

static void test_table(void **state)
{
        (void)state;
        size_t n;
        const struct doctor_known_issue *t = doctor_known_issues(&n);
        assert_true(n >= 4);
        for (size_t i = 0; i < n; i++) {
                /* every row links its source, and its range is not empty */
                assert_non_null(strstr(t[i].source, "https://"));
                assert_true(t[i].problem[0] && t[i].advice[0]);
                bool less = false;
                for (int k = 0; k < 3 && !less; k++) {
                        if (t[i].from[k] != t[i].before[k]) {
                                assert_true(t[i].from[k] < t[i].before[k]);
                                less = true;
                        }
                }
                assert_true(less);
        }
}

/* The driver-known-issue finding of a host with the given driver version and module text,
 * NVML present: its level, and its evidence into ret_evidence when not NULL. */
static enum doctor_level known_issue(const char *nvml_version, const char *module_text, char *ret_evidence, size_t len)
{
        struct gpu_report r = { .driver_present = true };
        snprintf(r.driver_version, sizeof(r.driver_version), "%s", nvml_version);
        struct doctor_facts f = { .gpus = &r, .only_gpu = -1, .module_version_text = module_text,
                                  .module_version_len = module_text ? strlen(module_text) : 0, .dmesg_restrict = -1,
                                  .uvm_loaded = -1, .toolkit = -1 };
        struct doctor_finding *v;
        size_t n;
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        enum doctor_level l = DOCTOR_UNKNOWN;
        int hits = 0;
        for (size_t i = 0; i < n; i++)
                if (!strcmp(v[i].code, "driver-known-issue")) {
                        l = v[i].level;
                        if (ret_evidence)
                                snprintf(ret_evidence, len, "%s", v[i].evidence);
                        hits++;
                }
        doctor_findings_free(v, n);
        assert_int_equal(hits, 1);
        return l;
}

static enum doctor_level known_issue_level(const char *nvml_version, const char *module_text)
{
        return known_issue(nvml_version, module_text, NULL, 0);
}

/* Releases are written as NVIDIA writes them (535.161.07, not 535.161.7): in the table's
 * evidence, and by doctor_version_format (--explain, the JSON table). */
static void test_version_format(void **state)
{
        (void)state;
        static const struct {
                unsigned v[3];
                const char *want;
        } cases[] = {
                { { 535, 161, 7 }, "535.161.07" }, { { 535, 161, 8 }, "535.161.08" }, { { 455, 23, 4 }, "455.23.04" },
                { { 470, 74, 0 }, "470.74" },      { { 510, 6, 0 }, "510.06" },       { { 550, 54, 15 }, "550.54.15" },
                { { 390, 0, 0 }, "390" },          { { 340, 108, 0 }, "340.108" },
                { { 4294967295u, 4294967295u, 4294967295u }, "4294967295.4294967295.4294967295" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char out[48];
                assert_int_equal(doctor_version_format(cases[i].v, out, sizeof(out)), 0);
                assert_string_equal(out, cases[i].want);
        }
        /* too small a buffer: -ENOBUFS, nothing written */
        char tiny[10] = "untouched";
        assert_int_equal(doctor_version_format(cases[0].v, tiny, sizeof(tiny)), -ENOBUFS);
        assert_string_equal(tiny, "untouched");
        char fits[11];
        assert_int_equal(doctor_version_format(cases[0].v, fits, sizeof(fits)), 0);
        assert_string_equal(fits, "535.161.07");

        char ev[512];
        assert_int_equal(known_issue("535.161.07", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.161.07  x\n",
                                     ev, sizeof(ev)),
                         DOCTOR_WARN);
        assert_string_equal(ev, "running driver 535.161.07 (open kernel module) is in 535.161.07 up to before 535.161.08");
        assert_int_equal(known_issue("455.23.04", NULL, ev, sizeof(ev)), DOCTOR_WARN);
        assert_string_equal(ev, "running driver 455.23.04 is in 455.23.04 up to before 455.23.05");
        assert_int_equal(known_issue("470.63.01", NULL, ev, sizeof(ev)), DOCTOR_WARN);
        assert_string_equal(ev, "running driver 470.63.01 is in 470 up to before 470.74");
}

static void test_table_edges(void **state)
{
        (void)state;
        assert_int_equal(known_issue_level("390.48", NULL), DOCTOR_WARN);
        assert_int_equal(known_issue_level("390.86", NULL), DOCTOR_WARN);
        assert_int_equal(known_issue_level("390.87", NULL), DOCTOR_OK);
        assert_int_equal(known_issue_level("389.99", NULL), DOCTOR_OK);
        assert_int_equal(known_issue_level("455.23.04", NULL), DOCTOR_WARN);
        assert_int_equal(known_issue_level("455.23.05", NULL), DOCTOR_OK);
        assert_int_equal(known_issue_level("470.63.01", NULL), DOCTOR_WARN);
        assert_int_equal(known_issue_level("470.74", NULL), DOCTOR_OK);
        /* open-module-only row: needs the module text to say "Open Kernel Module" */
        assert_int_equal(known_issue_level("535.161.07", NULL), DOCTOR_OK);
        assert_int_equal(known_issue_level("535.161.07", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.07  x\n"),
                         DOCTOR_OK);
        assert_int_equal(known_issue_level("535.161.07",
                                           "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.161.07  Release Build\n"),
                         DOCTOR_WARN);
        assert_int_equal(known_issue_level("535.161.08", NULL), DOCTOR_OK);
        assert_int_equal(known_issue_level("", NULL), DOCTOR_UNKNOWN);
        assert_int_equal(known_issue_level("garbage", NULL), DOCTOR_UNKNOWN);
}

static const struct doctor_finding *find(const struct doctor_finding *v, size_t n, const char *code)
{
        for (size_t i = 0; i < n; i++)
                if (!strcmp(v[i].code, code))
                        return &v[i];
        return NULL;
}

static void test_levels_and_exit(void **state)
{
        (void)state;
        struct gpu_report r = { .driver_present = true };
        snprintf(r.driver_version, sizeof(r.driver_version), "560.35.03");
        struct doctor_facts f = { .gpus = &r, .only_gpu = -1, .dmesg_restrict = 1, .is_root = false, .uvm_loaded = 1,
                                  .uvm_refcount = 0, .toolkit = 0 };
        struct doctor_finding *v;
        size_t n;
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        const struct doctor_finding *d = find(v, n, "kernel-log-restricted");
        assert_non_null(d);
        assert_int_equal(d->level, DOCTOR_WARN);
        assert_non_null(strstr(d->next_step, "adm"));
        d = find(v, n, "uvm-in-use");
        assert_non_null(d);
        assert_int_equal(d->level, DOCTOR_OK);
        assert_int_equal(doctor_exit_status(&f, v, n), 1);
        doctor_findings_free(v, n);

        f.is_root = true;
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        assert_int_equal(find(v, n, "kernel-log-restricted")->level, DOCTOR_OK);
        /* version-mismatch unknown (no module text), params unknown: not warnings */
        assert_int_equal(find(v, n, "version-mismatch")->level, DOCTOR_UNKNOWN);
        assert_int_equal(doctor_exit_status(&f, v, n), 0);
        doctor_findings_free(v, n);

        /* one GPU of two did not answer: that GPU is unknown, the other's checks ran, and NVML
         * as a whole is not called unavailable */
        {
                struct gpu_info two[2];
                memset(two, 0, sizeof(two));
                two[0].persistence = two[1].persistence = 1;
                two[0].mig_mode = two[1].mig_mode = -1;
                two[1].index = 1;
                two[1].status = GPU_TIMEOUT;
                snprintf(two[1].status_message, sizeof(two[1].status_message), "GPU 1: driver did not answer within 0.3 s");
                struct gpu_info *saved = r.gpus;
                size_t saved_n = r.n_gpus;
                r.gpus = two;
                r.n_gpus = 2;
                r.timed_out = true;
                assert_int_equal(doctor_run(&f, &v, &n), 0);
                assert_null(find(v, n, "nvml-unavailable"));
                d = find(v, n, "gpu-unreachable");
                assert_non_null(d);
                assert_int_equal(d->gpu, 1);
                assert_int_equal(d->level, DOCTOR_UNKNOWN);
                bool gpu0_checked = false;
                for (size_t i = 0; i < n; i++)
                        gpu0_checked |= v[i].gpu == 0;
                assert_true(gpu0_checked);
                assert_int_equal(doctor_exit_status(&f, v, n), 3);
                doctor_findings_free(v, n);
                r.gpus = saved;
                r.n_gpus = saved_n;
                r.timed_out = false;
        }

        /* no driver: 3 whatever else is found */
        r.driver_present = false;
        snprintf(r.error, sizeof(r.error), "no NVIDIA driver on this host (libnvidia-ml.so.1 not found)");
        f.is_root = false;
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        d = find(v, n, "nvml-unavailable");
        assert_non_null(d);
        assert_string_equal(d->evidence, r.error);
        assert_int_equal(doctor_exit_status(&f, v, n), 3);
        doctor_findings_free(v, n);
        f.gpus = NULL;
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        assert_int_equal(doctor_exit_status(&f, v, n), 3);
        doctor_findings_free(v, n);
}

/* host-shm: info when host shared memory is large (never a warning: no GPU action frees it),
 * ok below the rule, unknown when nothing was read; the next step names the live host's ipcs or
 * the file that was read */
static void test_host_shm(void **state)
{
        (void)state;
        struct gpu_report r = { .driver_present = true };
        struct doctor_facts f = { .gpus = &r, .only_gpu = -1, .dmesg_restrict = 0, .uvm_loaded = 1, .toolkit = 0 };
        struct shm_seg seg = { .cpid = 4242, .rss_known = true, .rss = SHM_GIB / 4 };
        struct shm_report sr = { .meminfo_read = true, .mem_total_known = true, .mem_total = 64 * SHM_GIB,
                                 .shmem_known = true, .shmem = 6 * SHM_GIB + SHM_GIB / 4, .sysv_read = true,
                                 .dir_read = true };
        sr.sysv.segs = &seg;
        sr.sysv.n = sr.sysv.n_total = 1;
        sr.sysv.bytes = SHM_GIB / 4;
        sr.dir.path = (char *)"/dev/shm";
        sr.dir.used = 6 * SHM_GIB;
        sr.dir.files = 3;
        sr.dir.n_owners = 1;
        snprintf(sr.dir.owners[0].user, sizeof(sr.dir.owners[0].user), "alice");
        sr.dir.complete = true;
        shm_judge(&sr);
        f.shm = &sr;
        f.shm_ipcs = true;
        struct doctor_finding *v;
        size_t n;
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        const struct doctor_finding *d = find(v, n, "host-shm");
        assert_non_null(d);
        assert_int_equal(d->level, DOCTOR_INFO);
        assert_int_equal(d->gpu, -1);
        assert_string_equal(d->summary, "host shared memory is 6.2 GiB, over the 1.0 GiB threshold: host RAM, not GPU "
                                        "memory; nvidia-smi's used figure does not include it");
        assert_non_null(strstr(d->evidence, "host shared memory 6.2 GiB (/dev/shm 6.0 GiB: 3 files of user alice; SysV "
                                            "256.0 MiB: 1 segment of PID 4242)"));
        assert_non_null(strstr(d->evidence, "Shmem in /proc/meminfo"));
        assert_non_null(strstr(d->next_step, "`ls -laS /dev/shm`"));
        assert_non_null(strstr(d->next_step, "`ipcs -m -p`"));
        assert_int_equal(doctor_exit_status(&f, v, n), 0);
        doctor_findings_free(v, n);

        /* another root: the file that was read, quoted for the shell */
        f.shm_ipcs = false;
        f.shm_sysv_file = "/srv/copy of host/proc/sysvipc/shm";
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        d = find(v, n, "host-shm");
        assert_non_null(strstr(d->next_step, "`cat '/srv/copy of host/proc/sysvipc/shm'`"));
        assert_null(strstr(d->next_step, "ipcs -m -p"));
        doctor_findings_free(v, n);

        sr.shmem = SHM_GIB / 2;
        shm_judge(&sr);
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        d = find(v, n, "host-shm");
        assert_int_equal(d->level, DOCTOR_OK);
        assert_string_equal(d->summary, "host shared memory is 512.0 MiB, below 1.0 GiB");
        assert_null(d->next_step);
        doctor_findings_free(v, n);

        f.shm = NULL;
        f.shm_error = "nothing could be read";
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        d = find(v, n, "host-shm");
        assert_int_equal(d->level, DOCTOR_UNKNOWN);
        assert_string_equal(d->evidence, "nothing could be read");
        doctor_findings_free(v, n);
}

/* recent-xid: per GPU, the scan's rule on the kernel's events; unknown without a log */
static void test_recent_xid(void **state)
{
        (void)state;
        struct gpu_info two[2];
        memset(two, 0, sizeof(two));
        for (unsigned i = 0; i < 2; i++) {
                two[i].index = i;
                two[i].persistence = 1;
                two[i].mig_mode = -1;
                snprintf(two[i].pci_bus_id, sizeof(two[i].pci_bus_id), i ? "0000:43:00.0" : "0000:1b:00.0");
        }
        struct gpu_report r = { .driver_present = true, .gpus = two, .n_gpus = 2 };
        struct xid_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.kind = XID_KIND_XID;
        ev.xid = 79;
        ev.caused_by = ev.sxid = XID_NONE;
        ev.gpu_index = -1;
        ev.time_known = true;
        ev.time = 1800000000.0 - 5;
        snprintf(ev.pci_bus_id, sizeof(ev.pci_bus_id), "0000:43:00.0");
        struct doctor_facts f = { .gpus = &r, .only_gpu = -1, .dmesg_restrict = 0, .is_root = true, .uvm_loaded = 1,
                                  .uvm_refcount = 0, .toolkit = 0, .now = 1800000000.0, .xid_window_s = 600,
                                  .kernel_error = "kernel log not read: /dev/kmsg: Permission denied" };
        struct doctor_finding *v;
        size_t n;
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        const struct doctor_finding *d = find(v, n, "recent-xid");
        assert_non_null(d);
        assert_int_equal(d->level, DOCTOR_UNKNOWN);
        assert_string_equal(d->evidence, f.kernel_error);
        assert_int_equal(doctor_exit_status(&f, v, n), 0);
        doctor_findings_free(v, n);

        f.kernel_read = true;
        f.kernel = &ev;
        f.n_kernel = 1;
        for (int lost = 0; lost < 2; lost++) {
                two[1].status = lost ? GPU_LOST : GPU_OK; /* lost: beside gpu-unreachable */
                assert_int_equal(doctor_run(&f, &v, &n), 0);
                size_t warned = 0;
                for (size_t i = 0; i < n; i++) {
                        if (strcmp(v[i].code, "recent-xid"))
                                continue;
                        assert_int_equal(v[i].level, v[i].gpu == 1 ? DOCTOR_WARN : DOCTOR_OK);
                        if (v[i].gpu != 1)
                                continue;
                        warned++;
                        assert_string_equal(v[i].summary, "GPU 1: Xid 79 (GPU has fallen off the bus) 5 s ago (critical): it pages");
                        assert_non_null(strstr(v[i].next_step, "reboot"));
                }
                assert_int_equal(warned, 1);
                assert_int_equal(doctor_exit_status(&f, v, n), 1);
                doctor_findings_free(v, n);
        }
        f.xid_window_s = 2;
        two[1].status = GPU_OK;
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        assert_int_equal(doctor_exit_status(&f, v, n), 0);
        doctor_findings_free(v, n);
}

static void test_prevention(void **state)
{
        (void)state;
        size_t n = 0;
        bool launch_blocking = false, pdeathsig = false;
        for (; doctor_prevention[n]; n++) {
                launch_blocking |= strstr(doctor_prevention[n], "CUDA_LAUNCH_BLOCKING") != NULL;
                pdeathsig |= strstr(doctor_prevention[n], "PR_SET_PDEATHSIG") != NULL;
        }
        assert_true(n >= 6);
        assert_true(launch_blocking && pdeathsig);
}

/* 32 processes hold nvidia-uvm: every one is named, whole (the evidence stopped at 512 bytes) */
static void test_long_texts_arrive_whole(void **state)
{
        (void)state;
        struct gpu_report r = { .driver_present = true };
        snprintf(r.driver_version, sizeof(r.driver_version), "560.35.03");
        struct doctor_holder hs[32];
        for (int i = 0; i < 32; i++) {
                hs[i] = (struct doctor_holder){ .pid = 4194300 + i, .holds_uvm = true };
                snprintf(hs[i].comm, sizeof(hs[i].comm), "pt_data_worker_%02d", i);
        }
        struct doctor_facts f = { .gpus = &r, .only_gpu = -1, .dmesg_restrict = 0, .is_root = true, .uvm_loaded = 1,
                                  .uvm_refcount = 32, .toolkit = 0, .holders = hs, .n_holders = 32 };
        struct doctor_finding *v;
        size_t n;
        assert_int_equal(doctor_run(&f, &v, &n), 0);
        const struct doctor_finding *d = find(v, n, "uvm-in-use");
        assert_non_null(d);
        assert_non_null(strstr(d->evidence, "holders: 4194300 (pt_data_worker_00), 4194301 (pt_data_worker_01)"));
        const char *end = "4194330 (pt_data_worker_30), 4194331 (pt_data_worker_31)";
        size_t len = strlen(d->evidence);
        assert_true(len > strlen(end));
        assert_string_equal(d->evidence + len - strlen(end), end);
        doctor_findings_free(v, n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_module_version), cmocka_unit_test(test_modules),
                cmocka_unit_test(test_toolkit_mode),   cmocka_unit_test(test_table),
                cmocka_unit_test(test_table_edges),    cmocka_unit_test(test_levels_and_exit),
                cmocka_unit_test(test_long_texts_arrive_whole),
                cmocka_unit_test(test_prevention),     cmocka_unit_test(test_version_format),
                cmocka_unit_test(test_recent_xid),      cmocka_unit_test(test_host_shm),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
