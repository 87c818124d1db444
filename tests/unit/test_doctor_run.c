/* Unit tests for run/doctor_run: doctor's use case called without argv on a simulated host
 * (`ghostvram sim init`, its NVML library) whose root holds the nvidia module's files, a kernel
 * log and host shared memory written here; the facts read back and the findings they give,
 * an empty root, and --gpu naming no GPU. (model/doctor.c's rules: test_doctor.c.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/cli.h"
#include "render/doctor_render.h"
#include "run/doctor_run.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/spawn.h"

static char root[] = "/tmp/gv-test-doctor-XXXXXX";
static char empty[] = "/tmp/gv-test-doctor-empty-XXXXXX";
static char prefix[256], driver_proc[256], shm_proc[256], shm_dir[256];

/* Write ROOT/rel (its directories made). */
static int put(const char *rel, const char *text)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        return -1;
                *s = '/';
        }
        FILE *f = fopen(path, "w");
        if (!f)
                return -1;
        fputs(text, f);
        return fclose(f);
}

static int setup(void **state)
{
        (void)state;
        if (!mkdtemp(root) || !mkdtemp(empty))
                return -1;
        const char *const args[] = { "ghostvram", "sim", "init", root, "--gpus", "2", NULL };
        struct buf out = BUF_INIT(1 << 16);
        int r = spawn_self(GV_BUILD_DIR "/ghostvram", args, &out, false);
        buf_free(&out);
        if (r != 0)
                return -1;
        setenv("GHOSTVRAM_SIM", root, 1); /* the simulated NVML library's host */
        snprintf(prefix, sizeof(prefix), "%s/dev/nvidia", root);
        snprintf(driver_proc, sizeof(driver_proc), "%s/proc/driver/nvidia", root);
        snprintf(shm_proc, sizeof(shm_proc), "%s/proc", root);
        snprintf(shm_dir, sizeof(shm_dir), "%s/dev/shm", root);
        /* the module of the simulated driver's release, nvidia_uvm used twice, a restricted
         * kernel log, the toolkit's program without its config, an Xid 48 of the first GPU */
        if (put("proc/driver/nvidia/version",
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  560.35.03  Fri Aug 16 21:39:15 UTC 2024\n"
                "GCC version:  gcc version 12.3.0\n") < 0 ||
            put("proc/driver/nvidia/params", "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\n") < 0 ||
            put("proc/modules", "nvidia_uvm 1593344 2 - Live 0x0000000000000000 (POE)\n"
                                "nvidia 56004608 48 nvidia_uvm, Live 0x0000000000000000 (POE)\n") < 0 ||
            put("proc/sys/kernel/dmesg_restrict", "1\n") < 0 || put("usr/bin/nvidia-ctk", "") < 0 ||
            put("kmsg", "[ 3301.500000] NVRM: Xid (PCI:0000:1b:00): 48, pid='<unknown>', name=<unknown>, An "
                        "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.\n") < 0 ||
            put("proc/meminfo", "MemTotal:       65536000 kB\nShmem:             10240 kB\n") < 0 ||
            mkdir(shm_dir, 0755) < 0)
                return -1;
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        remove_tree(root);
        remove_tree(empty);
        return 0;
}

/* The simulated host's options, as `GHOSTVRAM_SIM=ROOT ghostvram doctor --root ROOT` has them. */
static struct doctor_check_opts opts(const struct shm_opts *so)
{
        struct doctor_check_opts o = { .root = root, .sim_dir = root, .proc_root = "/proc", .xid_window_s = 600,
                                       .shm = so, .cache_min_bytes = 1024ull << 20,
                                       .gpu_resolve = gpu_spec_resolve };
        o.gpu.nvml_lib = GV_BUILD_DIR "/sim/current/libnvidia-ml.so.1";
        o.gpu.timeout_ms = 2000;
        o.gpu.driver_proc_dir = driver_proc;
        o.host.proc_root = "/proc";
        o.host.dev_prefix = prefix;
        o.host.timeout_ms = 2000;
        return o;
}

static const struct doctor_finding *find(const struct doctor_check *d, const char *code, int gpu)
{
        for (size_t i = 0; i < d->n_findings; i++)
                if (strcmp(d->findings[i].code, code) == 0 && d->findings[i].gpu == gpu)
                        return &d->findings[i];
        return NULL;
}

static void test_simulated_root(void **state)
{
        (void)state;
        struct shm_opts so = { .proc_root = shm_proc, .shm_dir = shm_dir, .timeout_ms = 1000 };
        struct doctor_check_opts o = opts(&so);
        struct doctor_check d;
        char err[1024] = "";
        assert_int_equal(doctor_check(&o, &d, err, sizeof(err)), 0);
        const struct doctor_facts *f = &d.facts;
        /* the driver: two GPUs, every one judged */
        assert_true(d.gpus->driver_present);
        assert_string_equal(d.gpus->driver_version, "560.35.03");
        assert_int_equal(d.gpus->n_gpus, 2);
        assert_int_equal(f->only_gpu, -1);
        /* the module's files under the root */
        assert_int_equal(f->uvm_loaded, 1);
        assert_int_equal(f->uvm_refcount, 2);
        assert_int_equal(f->dmesg_restrict, 1);
        assert_non_null(strstr(f->module_version_text, "560.35.03"));
        assert_non_null(strstr(f->params_text, "ModifyDeviceFiles: 1"));
        assert_int_equal(f->toolkit, 1);
        /* the file as it is found: ROOT/usr/bin/nvidia-ctk */
        char ctk[600];
        snprintf(ctk, sizeof(ctk), "%s/usr/bin/nvidia-ctk (no config.toml)", root);
        assert_string_equal(f->toolkit_path, ctk);
        char want[512];
        assert_null(f->toolkit_config);
        /* the simulated host's kernel log: its Xid tied to the GPU at its bus id */
        assert_true(f->kernel_read);
        assert_true(f->kernel_this_host);
        assert_int_equal(f->n_kernel, 1);
        assert_int_equal(f->kernel[0].xid, 48);
        assert_string_equal(f->kernel[0].pci_bus_id, "0000:1b:00.0");
        assert_int_equal(f->kernel[0].gpu_index, 0);
        /* host shared memory from the root's meminfo and dev/shm */
        assert_non_null(f->shm);
        assert_false(f->shm_ipcs);
        snprintf(want, sizeof(want), "%s/proc/sysvipc/shm", root);
        assert_string_equal(f->shm_sysv_file, want);
        assert_int_equal(f->persistenced, 0);   /* nobody holds the simulated nodes */
        /* the findings those facts give */
        assert_int_equal(find(&d, "version-mismatch", -1)->level, DOCTOR_OK);
        assert_int_equal(find(&d, "uvm-not-loaded", -1)->level, DOCTOR_OK);
        assert_int_equal(find(&d, "kernel-log-restricted", -1)->level, geteuid() == 0 ? DOCTOR_OK : DOCTOR_WARN);
        assert_int_equal(find(&d, "persistence-off", 1)->level, DOCTOR_OK);
        assert_non_null(find(&d, "recent-xid", 0));
        assert_int_equal(d.exit_status, doctor_exit_status(f, d.findings, d.n_findings));
        /* the document says what was found */
        json_t *doc = doctor_json(&d, true, false);
        assert_non_null(doc);
        assert_string_equal(json_string_value(json_object_get(doc, "driver_version")), "560.35.03");
        assert_int_equal(json_array_size(json_object_get(doc, "findings")), d.n_findings);
        assert_int_equal(json_integer_value(json_object_get(doc, "exit_status")), d.exit_status);
        json_decref(doc);
        doctor_check_free(&d);
}

/* A root with none of the module's files: each fact unknown, not an error. */
static void test_empty_root(void **state)
{
        (void)state;
        struct doctor_check_opts o = opts(NULL);
        o.root = empty;
        struct doctor_check d;
        char err[1024] = "";
        assert_int_equal(doctor_check(&o, &d, err, sizeof(err)), 0);
        assert_int_equal(d.facts.uvm_loaded, -1);
        assert_int_equal(d.facts.uvm_refcount, -1);
        assert_int_equal(d.facts.dmesg_restrict, -1);
        assert_null(d.facts.module_version_text);
        assert_null(d.facts.params_text);
        assert_int_equal(d.facts.toolkit, 0);
        assert_null(d.facts.toolkit_path);
        assert_null(d.facts.shm);
        assert_string_equal(d.facts.shm_error, "not read: the path is too long");
        assert_int_equal(find(&d, "uvm-not-loaded", -1)->level, DOCTOR_UNKNOWN);
        assert_int_equal(find(&d, "host-shm", -1)->level, DOCTOR_UNKNOWN);
        doctor_check_free(&d);
}

/* --gpu naming no GPU of the host: -ENOENT, said with the host's count. */
static void test_gpu_not_here(void **state)
{
        (void)state;
        struct doctor_check_opts o = opts(NULL);
        o.gpu_spec = "7";
        struct doctor_check d;
        char err[1024] = "";
        assert_int_equal(doctor_check(&o, &d, err, sizeof(err)), -ENOENT);
        assert_string_equal(err, "--gpu 7: this host has 2 GPUs");
        doctor_check_free(&d);

        o.gpu_spec = "0000:43:00.0";    /* the second GPU, by its bus id */
        assert_int_equal(doctor_check(&o, &d, err, sizeof(err)), 0);
        assert_int_equal(d.facts.only_gpu, 1);
        assert_null(find(&d, "persistence-off", 0));
        assert_non_null(find(&d, "persistence-off", 1));
        doctor_check_free(&d);
}

/* --root DIR/ (a trailing '/', as a shell's completion gives it): the same path, one '/'. */
static void test_root_trailing_slash(void **state)
{
        (void)state;
        char slashed[sizeof(root) + 2];
        snprintf(slashed, sizeof(slashed), "%s//", root);
        struct doctor_check_opts o = opts(NULL);
        o.root = slashed;
        struct doctor_check d;
        char err[1024] = "";
        assert_int_equal(doctor_check(&o, &d, err, sizeof(err)), 0);
        char ctk[600];
        snprintf(ctk, sizeof(ctk), "%s/usr/bin/nvidia-ctk (no config.toml)", root);
        assert_string_equal(d.facts.toolkit_path, ctk);
        doctor_check_free(&d);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_simulated_root),
                cmocka_unit_test(test_empty_root),
                cmocka_unit_test(test_gpu_not_here),
                cmocka_unit_test(test_root_trailing_slash),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
