/* The stand-in NVML library: each built variant dlopen'ed like ghostvram does, checked
 * against the ABI facts of docs/nvml-abi.md (symbol sets, struct versions, strides, the
 * two-call pattern) and the simulator's knobs. Contexts are made by real child processes
 * (sim_context_create), so liveness comes from real locks. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collect/nvml_abi.h"
#include "simstate.h"

#define MIB (1024ull * 1024ull)
#define MAX_SPAWNED 32

static char sim_dir[256];
static pid_t spawned[MAX_SPAWNED];
static size_t n_spawned;

/* ---- fixtures ------------------------------------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st; (void)flag; (void)ftw;
        return remove(path);
}

static int setup(void **state)
{
        (void)state;
        snprintf(sim_dir, sizeof(sim_dir), "/tmp/gv-test-sim-XXXXXX");
        if (!mkdtemp(sim_dir))
                return -1;
        if (sim_init_dir(sim_dir, 2, 81559, 579) < 0)
                return -1;
        setenv("GHOSTVRAM_SIM", sim_dir, 1);
        n_spawned = 0;
        return 0;
}

static void kill_pid(pid_t p)
{
        if (p > 0) {
                kill(p, SIGKILL);
                waitpid(p, NULL, WNOHANG);
        }
}

static int teardown(void **state)
{
        (void)state;
        for (size_t i = 0; i < n_spawned; i++)
                kill_pid(spawned[i]);
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
        n_spawned = 0;
        nftw(sim_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        unsetenv("GHOSTVRAM_SIM");
        return 0;
}

static void set_knobs(const char *first, ...)
{
        char *as[8];
        size_t n = 0;
        char err[SIM_ERR_LEN] = "";
        va_list ap;
        va_start(ap, first);
        for (const char *a = first; a && n < 8; a = va_arg(ap, const char *))
                as[n++] = (char *)a;
        va_end(ap);
        int r = sim_knobs_set(sim_dir, as, n, err, sizeof(err));
        if (r < 0)
                fail_msg("sim_knobs_set: %s", err);
}

/* This process's own descriptions of DIR/dev/nvidiactl and DIR/owners, opened as gv-simcuda
 * opens them (-1 each on failure). */
static void open_ctl_owners(int *ret_cfd, int *ret_ofd)
{
        char ctl[512], own[512];
        snprintf(ctl, sizeof(ctl), "%s/dev/nvidiactl", sim_dir);
        snprintf(own, sizeof(own), "%s/owners", sim_dir);
        *ret_cfd = open(ctl, O_RDWR | O_CLOEXEC);
        *ret_ofd = open(own, O_RDWR | O_CLOEXEC);
}

/* A real process that creates a context of mib MiB on gpu (in MIG GPU instance gi, or
 * SIM_GI_NONE) as gv-simcuda does and, with a worker, forks one after it that inherits the
 * descriptors. Returns the owner's PID. */
static pid_t spawn_ctx_gi(unsigned gpu, unsigned gi, unsigned mib, pid_t *ret_worker)
{
        int p[2];
        pid_t pids[2] = { 0, 0 };
        assert_int_equal(pipe(p), 0);
        pid_t owner = fork();
        assert_true(owner >= 0);
        if (owner == 0) {
                char err[SIM_ERR_LEN];
                unsigned id;
                int cfd, ofd;
                close(p[0]);
                open_ctl_owners(&cfd, &ofd);
                if (cfd < 0 || ofd < 0 ||
                    sim_context_create_gi(sim_dir, gpu, gi, (uint64_t)mib * MIB, cfd, ofd, &id, err, sizeof(err)) < 0)
                        _exit(1);
                pids[0] = getpid();
                if (ret_worker) {
                        pid_t w = fork();
                        if (w == 0) {
                                for (;;)
                                        pause();
                        }
                        pids[1] = w;
                }
                (void)!write(p[1], pids, sizeof(pids));
                for (;;)
                        pause();
        }
        close(p[1]);
        ssize_t n = read(p[0], pids, sizeof(pids));
        close(p[0]);
        assert_int_equal(n, (ssize_t)sizeof(pids));
        assert_int_equal(pids[0], owner);
        spawned[n_spawned++] = owner;
        if (ret_worker) {
                spawned[n_spawned++] = pids[1];
                *ret_worker = pids[1];
        }
        return owner;
}

static pid_t spawn_ctx(unsigned gpu, unsigned mib, pid_t *ret_worker)
{
        return spawn_ctx_gi(gpu, SIM_GI_NONE, mib, ret_worker);
}

/* Kill and wait for a process: ours to reap, or (a worker) until it is gone or a zombie whose
 * other threads are gone too: a multi-threaded process's leader turns zombie while its other
 * threads still exit, and the descriptors they share close with the last of them (qemu-user's
 * guests have a thread of qemu's: docs/arm64.md). */
static void kill_wait(pid_t p)
{
        kill(p, SIGKILL);
        if (waitpid(p, NULL, 0) == p)
                return;
        for (int i = 0; i < 500; i++) {
                char path[64], st[512];
                snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
                FILE *f = fopen(path, "r");
                if (!f)
                        return;
                size_t n = fread(st, 1, sizeof(st) - 1, f);
                fclose(f);
                st[n] = '\0';
                char *rp = strrchr(st, ')');
                unsigned long threads = 0;
                /* after ") ": state, then num_threads is the 18th field */
                if (rp && rp[1] == ' ' && rp[2] == 'Z' &&
                    sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %lu",
                           &threads) == 1 && threads <= 1)
                        return;
                usleep(10000);
        }
        fail_msg("process %d did not die", (int)p);
}

struct nv {
        void *h;
        nvmlDevice_t dev[2];
};

static void *nv_sym(struct nv *n, const char *name)
{
        void *p = dlsym(n->h, name);
        if (!p)
                fail_msg("%s missing", name);
        return p;
}

#define CALL(n, type, name, ...) (((type)nv_sym((n), name))(__VA_ARGS__))

/* dlopen variant (after making it the simulated host's driver) and init it. */
static void nv_open(struct nv *n, const char *variant)
{
        char path[512], knob[64];
        snprintf(knob, sizeof(knob), "driver=%s", variant);
        set_knobs(knob, NULL);
        snprintf(path, sizeof(path), "%s/sim/%s/libnvidia-ml.so.1", GV_BUILD_DIR, variant);
        n->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!n->h)
                fail_msg("dlopen %s: %s", path, dlerror());
        bool legacy = !dlsym(n->h, "nvmlInit_v2");
        assert_int_equal(CALL(n, nvmlInit_fn, legacy ? "nvmlInit" : "nvmlInit_v2"), NVML_SUCCESS);
        for (unsigned i = 0; i < 2; i++)
                assert_int_equal(CALL(n, nvmlDeviceGetHandleByIndex_fn,
                                      legacy ? "nvmlDeviceGetHandleByIndex" : "nvmlDeviceGetHandleByIndex_v2", i,
                                      &n->dev[i]),
                                 NVML_SUCCESS);
}

static void nv_close(struct nv *n)
{
        assert_int_equal(CALL(n, nvmlShutdown_fn, "nvmlShutdown"), NVML_SUCCESS);
        dlclose(n->h);
}

static nvmlReturn_t mem_v2(struct nv *n, unsigned gpu, unsigned version, nvmlMemory_v2_t *m)
{
        memset(m, 0, sizeof(*m));
        m->version = version;
        return CALL(n, nvmlDeviceGetMemoryInfo_v2_fn, "nvmlDeviceGetMemoryInfo_v2", n->dev[gpu], m);
}

static uint64_t used_v2(struct nv *n, unsigned gpu)
{
        nvmlMemory_v2_t m;
        assert_int_equal(mem_v2(n, gpu, nvmlMemory_v2, &m), NVML_SUCCESS);
        return m.used;
}

/* ---- symbol sets ------------------------------------------------------------------------------ */

static void test_symbols_per_variant(void **state)
{
        (void)state;
        static const char *const variants[] = { "current", "535.54.03", "535.98", "470.42.01", "440.33.01" };
        /* 1 = present, per variant in the order above (docs/nvml-abi.md §6) */
        static const struct {
                const char *sym;
                int present[5];
        } table[] = {
                { "nvmlInit", { 1, 1, 1, 1, 1 } },
                { "nvmlInit_v2", { 1, 1, 1, 1, 0 } },
                { "nvmlInitWithFlags", { 1, 1, 1, 1, 1 } }, /* every driver since 418 */
                { "nvmlShutdown", { 1, 1, 1, 1, 1 } },
                { "nvmlErrorString", { 1, 1, 1, 1, 1 } },
                { "nvmlSystemGetDriverVersion", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetCount", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetCount_v2", { 1, 1, 1, 1, 0 } },
                { "nvmlDeviceGetHandleByIndex_v2", { 1, 1, 1, 1, 0 } },
                { "nvmlDeviceGetPciInfo", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetPciInfo_v3", { 1, 1, 1, 1, 0 } },
                { "nvmlDeviceGetMemoryInfo", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetMemoryInfo_v2", { 1, 1, 1, 0, 0 } },
                { "nvmlDeviceGetComputeRunningProcesses", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetComputeRunningProcesses_v2", { 1, 1, 1, 1, 0 } },
                { "nvmlDeviceGetComputeRunningProcesses_v3", { 1, 1, 0, 0, 0 } },
                { "nvmlDeviceGetMPSComputeRunningProcesses", { 1, 1, 1, 1, 0 } },
                { "nvmlDeviceGetMPSComputeRunningProcesses_v2", { 1, 1, 1, 1, 0 } },
                { "nvmlDeviceGetRunningProcessDetailList", { 1, 0, 0, 0, 0 } },
                { "nvmlDeviceGetConfComputeMemSizeInfo", { 1, 1, 1, 0, 0 } },
                { "nvmlDeviceGetMigMode", { 1, 1, 1, 1, 0 } },
                /* the MIG device API, with MIG in 450 */
                { "nvmlDeviceGetMaxMigDeviceCount", { 1, 1, 1, 1, 0 } },
                { "nvmlDeviceGetMigDeviceHandleByIndex", { 1, 1, 1, 1, 0 } },
                { "nvmlDeviceIsMigDeviceHandle", { 1, 1, 1, 1, 0 } },
                { "nvmlDeviceGetGpuInstanceId", { 1, 1, 1, 1, 0 } },
                { "nvmlDeviceGetComputeInstanceId", { 1, 1, 1, 1, 0 } },
                { "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", { 1, 1, 1, 1, 0 } },
                { "nvmlEventSetWait_v2", { 1, 1, 1, 1, 0 } },
                { "nvmlEventSetWait", { 1, 1, 1, 1, 1 } },
                /* what nvtop needs besides the above (t_oracle_nvtop.sh) */
                { "nvmlDeviceGetClockInfo", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetMaxClockInfo", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetCurrPcieLinkGeneration", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetCurrPcieLinkWidth", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetMaxPcieLinkGeneration", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetMaxPcieLinkWidth", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetPcieThroughput", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetTemperature", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetTemperatureThreshold", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetFanSpeed", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetPowerUsage", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetEnforcedPowerLimit", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetUtilizationRates", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetEncoderUtilization", { 1, 1, 1, 1, 1 } },
                { "nvmlDeviceGetDecoderUtilization", { 1, 1, 1, 1, 1 } },
                /* the state code inside must not leak out */
                { "sim_observe", { 0, 0, 0, 0, 0 } },
                { "parse_u64", { 0, 0, 0, 0, 0 } },
        };
        for (size_t v = 0; v < 5; v++) {
                char path[512];
                snprintf(path, sizeof(path), "%s/sim/%s/libnvidia-ml.so.1", GV_BUILD_DIR, variants[v]);
                void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                if (!h)
                        fail_msg("dlopen %s: %s", path, dlerror());
                for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                        bool has = dlsym(h, table[i].sym) != NULL;
                        if (has != (bool)table[i].present[v])
                                fail_msg("%s: %s should be %s", variants[v], table[i].sym,
                                         table[i].present[v] ? "present" : "absent");
                }
                dlclose(h);
        }
}

static void test_versions_and_mismatch(void **state)
{
        (void)state;
        static const char *const v[][3] = {
                { "current", "560.35.03", "12.560.35.03" },   { "535.54.03", "535.54.03", "12.535.54.03" },
                { "535.98", "535.98", "12.535.98" },          { "470.42.01", "470.42.01", "11.470.42.01" },
                { "440.33.01", "440.33.01", "10.440.33.01" },
        };
        for (size_t i = 0; i < 5; i++) {
                struct nv n;
                char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
                nv_open(&n, v[i][0]);
                assert_int_equal(CALL(&n, nvmlSystemGetString_fn, "nvmlSystemGetDriverVersion", buf, sizeof(buf)),
                                 NVML_SUCCESS);
                assert_string_equal(buf, v[i][1]);
                assert_int_equal(CALL(&n, nvmlSystemGetString_fn, "nvmlSystemGetNVMLVersion", buf, sizeof(buf)),
                                 NVML_SUCCESS);
                assert_string_equal(buf, v[i][2]);
                assert_int_equal(CALL(&n, nvmlSystemGetString_fn, "nvmlSystemGetDriverVersion", buf, 4),
                                 NVML_ERROR_INSUFFICIENT_SIZE);
                nv_close(&n);
        }
        /* a library that is not the loaded driver's: "Driver/library version mismatch" */
        set_knobs("driver=535.98", NULL);
        char path[512];
        snprintf(path, sizeof(path), "%s/sim/current/libnvidia-ml.so.1", GV_BUILD_DIR);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        assert_non_null(h);
        nvmlInit_fn init = (nvmlInit_fn)dlsym(h, "nvmlInit_v2");
        nvmlErrorString_fn es = (nvmlErrorString_fn)dlsym(h, "nvmlErrorString");
        nvmlDeviceGetCount_fn count = (nvmlDeviceGetCount_fn)dlsym(h, "nvmlDeviceGetCount_v2");
        nvmlShutdown_fn shutdown = (nvmlShutdown_fn)dlsym(h, "nvmlShutdown");
        nvmlSystemGetString_fn nvml_version = (nvmlSystemGetString_fn)dlsym(h, "nvmlSystemGetNVMLVersion");
        unsigned n_gpus = 0;
        char buf[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
        /* before init, as NVIDIA's 535.261.03 library does: init is checked before arguments,
         * shutdown succeeds, the library's own version answers */
        assert_int_equal(count(&n_gpus), NVML_ERROR_UNINITIALIZED);
        assert_int_equal(count(NULL), NVML_ERROR_UNINITIALIZED);
        assert_int_equal(shutdown(), NVML_SUCCESS);
        assert_int_equal(nvml_version(buf, sizeof(buf)), NVML_SUCCESS);
        assert_string_equal(buf, "12.560.35.03");
        assert_int_equal(nvml_version(buf, 4), NVML_ERROR_INSUFFICIENT_SIZE);
        assert_int_equal(nvml_version(NULL, sizeof(buf)), NVML_ERROR_INVALID_ARGUMENT);
        assert_int_equal(init(), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
        /* and after a failed init */
        assert_int_equal(count(NULL), NVML_ERROR_UNINITIALIZED);
        assert_int_equal(shutdown(), NVML_SUCCESS);
        assert_int_equal(nvml_version(buf, sizeof(buf)), NVML_SUCCESS);
        assert_string_equal(es(NVML_ERROR_NO_DATA), "No data");
        assert_string_equal(es(27), "System is not in ready state");
        assert_string_equal(es(28), "Unknown Error");
        assert_string_equal(es(NVML_ERROR_LIB_RM_VERSION_MISMATCH), "Driver/library version mismatch");
        assert_string_equal(es(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
        /* no simulated host: no driver */
        unsetenv("GHOSTVRAM_SIM");
        assert_int_equal(init(), NVML_ERROR_DRIVER_NOT_LOADED);
        dlclose(h);
}

/* ---- memory ------------------------------------------------------------------------------------ */

static void test_memory_versions(void **state)
{
        (void)state;
        struct nv n;
        nvmlMemory_v2_t m;
        nvmlMemory_t m1;
        spawn_ctx(0, 1024, NULL);
        nv_open(&n, "current");
        /* a bare 2 is what nvtop sends: the real driver says FUNCTION_NOT_FOUND */
        assert_int_equal(mem_v2(&n, 0, 2, &m), NVML_ERROR_FUNCTION_NOT_FOUND);
        assert_int_equal(mem_v2(&n, 0, 0x02000028u, &m), NVML_SUCCESS);
        assert_int_equal(m.total, 81559 * MIB);
        assert_int_equal(m.reserved, 579 * MIB);
        assert_int_equal(m.used, 1024 * MIB);
        assert_int_equal(m.total, m.reserved + m.used + m.free);
        /* v1: used includes the reservation, used + free == total */
        assert_int_equal(CALL(&n, nvmlDeviceGetMemoryInfo_fn, "nvmlDeviceGetMemoryInfo", n.dev[0], &m1), NVML_SUCCESS);
        assert_int_equal(m1.used, (579 + 1024) * MIB);
        assert_int_equal(m1.total, m1.used + m1.free);
        assert_int_equal(used_v2(&n, 1), 0);
        set_knobs("strict_versions=off", NULL);
        assert_int_equal(mem_v2(&n, 0, 2, &m), NVML_SUCCESS);
        assert_int_equal(m.used, 1024 * MIB);
        nv_close(&n);
}

static void test_uncharged_memory(void **state)
{
        (void)state;
        struct nv n;
        nvmlMemory_t m1;
        unsigned count = 0;
        set_knobs("uncharged_mib=1:300", NULL);
        nv_open(&n, "current");
        assert_int_equal(used_v2(&n, 1), 300 * MIB);
        assert_int_equal(used_v2(&n, 0), 0);
        assert_int_equal(CALL(&n, nvmlDeviceGetMemoryInfo_fn, "nvmlDeviceGetMemoryInfo", n.dev[1], &m1), NVML_SUCCESS);
        assert_int_equal(m1.used, (579 + 300) * MIB);
        /* nobody is charged for it */
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, "nvmlDeviceGetComputeRunningProcesses_v3", n.dev[1],
                              &count, NULL),
                         NVML_SUCCESS);
        assert_int_equal(count, 0);
        nv_close(&n);
}

/* ---- PCI --------------------------------------------------------------------------------------- */

static void test_pci(void **state)
{
        (void)state;
        struct nv n;
        nvmlPciInfo_t p;
        nv_open(&n, "current");
        assert_int_equal(CALL(&n, nvmlDeviceGetPciInfo_fn, "nvmlDeviceGetPciInfo_v3", n.dev[0], &p), NVML_SUCCESS);
        assert_string_equal(p.busId, "00000000:1B:00.0");
        assert_string_equal(p.busIdLegacy, "0000:1B:00.0");
        assert_int_equal(p.bus, 0x1B);
        assert_int_equal(p.pciDeviceId, 0x233010DEu);
        assert_int_equal(CALL(&n, nvmlDeviceGetPciInfo_fn, "nvmlDeviceGetPciInfo_v3", n.dev[1], &p), NVML_SUCCESS);
        assert_string_equal(p.busId, "00000000:43:00.0");
        /* _v2 fills the old 52-byte layout: busIdLegacy is valid, busId is not */
        memset(&p, 0x5A, sizeof(p));
        assert_int_equal(CALL(&n, nvmlDeviceGetPciInfo_fn, "nvmlDeviceGetPciInfo_v2", n.dev[1], &p), NVML_SUCCESS);
        assert_string_equal(p.busIdLegacy, "0000:43:00.0");
        assert_int_equal(p.busId[0], 0);
        assert_int_equal((unsigned char)p.busId[20], 0x5A); /* past 52 bytes: untouched */
        /* handles that are not ours */
        char name[96];
        assert_int_equal(CALL(&n, nvmlDeviceGetString_fn, "nvmlDeviceGetName", (nvmlDevice_t)(void *)name, name,
                              sizeof(name)),
                         NVML_ERROR_INVALID_ARGUMENT);
        assert_int_equal(CALL(&n, nvmlDeviceGetString_fn, "nvmlDeviceGetName",
                              (nvmlDevice_t)(void *)((char *)n.dev[0] + 1), name, sizeof(name)),
                         NVML_ERROR_INVALID_ARGUMENT);
        nvmlDevice_t d3;
        assert_int_equal(CALL(&n, nvmlDeviceGetHandleByIndex_fn, "nvmlDeviceGetHandleByIndex_v2", 2, &d3),
                         NVML_ERROR_INVALID_ARGUMENT);
        nv_close(&n);

        nv_open(&n, "440.33.01");
        assert_int_equal(CALL(&n, nvmlDeviceGetPciInfo_fn, "nvmlDeviceGetPciInfo", n.dev[0], &p), NVML_SUCCESS);
        assert_string_equal(p.busIdLegacy, "0000:1B:00.0");
        nv_close(&n);
}

/* ---- process lists ------------------------------------------------------------------------------ */

static uint32_t rec_u32(const unsigned char *b, size_t off)
{
        uint32_t v;
        memcpy(&v, b + off, sizeof(v));
        return v;
}

static uint64_t rec_u64(const unsigned char *b, size_t off)
{
        uint64_t v;
        memcpy(&v, b + off, sizeof(v));
        return v;
}

/* Query sym on gpu 0 with room for `room` records and check two owners at `stride`. */
static void check_records(struct nv *n, const char *sym, size_t stride, pid_t a, pid_t b)
{
        unsigned char buf[8 * 32];
        unsigned count = 8;
        memset(buf, 0xEE, sizeof(buf));
        assert_int_equal(CALL(n, nvmlDeviceGetProcesses_fn, sym, n->dev[0], &count, buf), NVML_SUCCESS);
        assert_int_equal(count, 2);
        assert_int_equal(rec_u32(buf, 0), (uint32_t)a);
        assert_int_equal(rec_u64(buf, 8), 1024 * MIB);
        assert_int_equal(rec_u32(buf, stride), (uint32_t)b);
        assert_int_equal(rec_u64(buf, stride + 8), 2048 * MIB);
        if (stride >= 24) {
                assert_int_equal(rec_u32(buf, 16), NVML_INSTANCE_ID_INVALID);
                assert_int_equal(rec_u32(buf, stride + 20), NVML_INSTANCE_ID_INVALID);
        }
        if (stride == 32)
                assert_int_equal(rec_u64(buf, 24), 0); /* usedGpuCcProtectedMemory */
        /* the padding after pid is not zeroed, as a real driver need not */
        assert_int_equal(rec_u32(buf, 4), 0xA5A5A5A5u);
        assert_int_equal(rec_u32(buf, stride + 4), 0xA5A5A5A5u);
        assert_int_equal(buf[2 * stride], 0xEE);       /* nothing written past the last record */
}

static void test_two_call_pattern(void **state)
{
        (void)state;
        struct nv n;
        unsigned char buf[4 * 24];
        unsigned count = 0;
        pid_t a = spawn_ctx(0, 1024, NULL);
        pid_t b = spawn_ctx(0, 2048, NULL);
        nv_open(&n, "current");
        const char *sym = "nvmlDeviceGetComputeRunningProcesses_v3";
        /* sizing call: INSUFFICIENT_SIZE with the count, infos may be NULL */
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, sym, n.dev[0], &count, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
        assert_int_equal(count, 2);
        count = 1;
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, sym, n.dev[0], &count, buf), NVML_ERROR_INSUFFICIENT_SIZE);
        assert_int_equal(count, 2);
        count = 4;
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, sym, n.dev[0], &count, NULL), NVML_ERROR_INVALID_ARGUMENT);
        check_records(&n, sym, 24, a, b);
        check_records(&n, "nvmlDeviceGetComputeRunningProcesses_v2", 24, a, b);
        check_records(&n, "nvmlDeviceGetComputeRunningProcesses", 16, a, b);
        /* nothing on GPU 1, nothing graphics or MPS: SUCCESS with 0 */
        count = 0;
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, sym, n.dev[1], &count, NULL), NVML_SUCCESS);
        assert_int_equal(count, 0);
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, "nvmlDeviceGetGraphicsRunningProcesses_v3", n.dev[0],
                              &count, NULL),
                         NVML_SUCCESS);
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, "nvmlDeviceGetMPSComputeRunningProcesses_v3", n.dev[0],
                              &count, NULL),
                         NVML_SUCCESS);
        assert_int_equal(count, 0);
        nv_close(&n);
}

static void test_v3_stride_32(void **state)
{
        (void)state;
        struct nv n;
        pid_t a = spawn_ctx(0, 1024, NULL);
        pid_t b = spawn_ctx(0, 2048, NULL);
        nv_open(&n, "535.54.03");
        check_records(&n, "nvmlDeviceGetComputeRunningProcesses_v3", 32, a, b);
        check_records(&n, "nvmlDeviceGetComputeRunningProcesses_v2", 24, a, b);
        nv_close(&n);
        /* the v3_stride knob picks the matching generation */
        set_knobs("v3_stride=24", NULL);
        struct sim_knobs k;
        assert_int_equal(sim_knobs_load(sim_dir, &k), 0);
        assert_string_equal(k.driver, "current");
        set_knobs("v3_stride=none", NULL);
        assert_int_equal(sim_knobs_load(sim_dir, &k), 0);
        assert_string_equal(k.driver, "535.98");
}

static void test_detail_list(void **state)
{
        (void)state;
        struct nv n;
        nvmlProcessDetail_v1_t recs[4];
        pid_t a = spawn_ctx(1, 512, NULL);
        nv_open(&n, "current");
        nvmlDeviceGetRunningProcessDetailList_fn fn =
                (nvmlDeviceGetRunningProcessDetailList_fn)nv_sym(&n, "nvmlDeviceGetRunningProcessDetailList");
        nvmlProcessDetailList_v1_t l = { .version = 1, .mode = 0 };
        assert_int_equal(fn(n.dev[1], &l), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
        l.version = 0x01000018u;
        assert_int_equal(fn(n.dev[1], &l), NVML_ERROR_INSUFFICIENT_SIZE);
        assert_int_equal(l.numProcArrayEntries, 1);
        l.numProcArrayEntries = 4;
        l.procArray = recs;
        assert_int_equal(fn(n.dev[1], &l), NVML_SUCCESS);
        assert_int_equal(l.numProcArrayEntries, 1);
        assert_int_equal(recs[0].pid, (unsigned)a);
        assert_int_equal(recs[0].usedGpuMemory, 512 * MIB);
        assert_int_equal(recs[0].gpuInstanceId, NVML_INSTANCE_ID_INVALID);
        l.mode = 1; /* graphics */
        l.numProcArrayEntries = 4;
        assert_int_equal(fn(n.dev[1], &l), NVML_SUCCESS);
        assert_int_equal(l.numProcArrayEntries, 0);
        nv_close(&n);
}

static void test_list_growth(void **state)
{
        (void)state;
        struct nv n;
        unsigned char buf[4 * 24];
        unsigned count = 0;
        spawn_ctx(0, 100, NULL);
        spawn_ctx(0, 200, NULL);
        set_knobs("list_growth=0:1", NULL);
        nv_open(&n, "current");
        const char *sym = "nvmlDeviceGetComputeRunningProcesses_v2";
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, sym, n.dev[0], &count, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
        assert_int_equal(count, 1); /* under-reported */
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, sym, n.dev[0], &count, buf), NVML_ERROR_INSUFFICIENT_SIZE);
        assert_int_equal(count, 2); /* the real count */
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, sym, n.dev[0], &count, buf), NVML_SUCCESS);
        assert_int_equal(count, 2);
        /* growing by more than the list: the sizing call sees nothing, so it answers "nothing
         * runs" and writes nowhere (the NULL buffer of a sizing call used to be written) */
        set_knobs("list_growth=0:3", NULL);
        count = 0;
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, sym, n.dev[0], &count, NULL), NVML_SUCCESS);
        assert_int_equal(count, 0);
        nvmlProcessDetailList_v1_t l = { .version = 0x01000018u };
        assert_int_equal(CALL(&n, nvmlDeviceGetRunningProcessDetailList_fn, "nvmlDeviceGetRunningProcessDetailList",
                              n.dev[0], &l),
                         NVML_SUCCESS);
        assert_int_equal(l.numProcArrayEntries, 0);
        nv_close(&n);
}

/* ---- faults ---------------------------------------------------------------------------------------- */

static void test_gpu_lost_and_notsup(void **state)
{
        (void)state;
        struct nv n;
        nvmlMemory_v2_t m;
        char name[96];
        unsigned mode, count = 0;
        set_knobs("gpu_lost=1:on", "notsup=persistence,memory_v2", "notsup=0:processes", NULL);
        nv_open(&n, "current");
        assert_int_equal(mem_v2(&n, 1, nvmlMemory_v2, &m), NVML_ERROR_GPU_IS_LOST);
        assert_int_equal(CALL(&n, nvmlDeviceGetString_fn, "nvmlDeviceGetName", n.dev[1], name, sizeof(name)),
                         NVML_ERROR_GPU_IS_LOST);
        assert_int_equal(CALL(&n, nvmlDeviceGetString_fn, "nvmlDeviceGetName", n.dev[0], name, sizeof(name)),
                         NVML_SUCCESS);
        assert_string_equal(name, "NVIDIA H100 80GB HBM3 (simulated)");
        /* GPU 0: its own notsup line replaced the every-GPU one */
        assert_int_equal(CALL(&n, nvmlDeviceGetProcesses_fn, "nvmlDeviceGetComputeRunningProcesses_v3", n.dev[0],
                              &count, NULL),
                         NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(mem_v2(&n, 0, nvmlMemory_v2, &m), NVML_SUCCESS);
        /* gpu_lost keeps handles valid; gpu_lost_handle makes the lookup fail too */
        nvmlDevice_t h = NULL;
        assert_int_equal(CALL(&n, nvmlDeviceGetHandleByIndex_fn, "nvmlDeviceGetHandleByIndex_v2", 1, &h), NVML_SUCCESS);
        assert_ptr_equal(h, n.dev[1]);
        set_knobs("gpu_lost=1:on", "gpu_lost_handle=1:on", "notsup=persistence,memory_v2", "notsup=0:processes", NULL);
        h = NULL;
        assert_int_equal(CALL(&n, nvmlDeviceGetHandleByIndex_fn, "nvmlDeviceGetHandleByIndex_v2", 1, &h),
                         NVML_ERROR_GPU_IS_LOST);
        assert_null(h);
        assert_int_equal(CALL(&n, nvmlDeviceGetHandleByIndex_fn, "nvmlDeviceGetHandleByIndex_v2", 0, &h), NVML_SUCCESS);
        assert_int_equal(CALL(&n, nvmlDeviceGetCount_fn, "nvmlDeviceGetCount_v2", &count), NVML_SUCCESS);
        assert_int_equal(count, 2); /* still counted */
        set_knobs("gpu_lost=off", NULL); /* gpu_lost_handle implies gpu_lost */
        assert_int_equal(mem_v2(&n, 1, nvmlMemory_v2, &m), NVML_ERROR_GPU_IS_LOST);
        set_knobs("gpu_lost_handle=default", NULL);
        assert_int_equal(mem_v2(&n, 1, nvmlMemory_v2, &m), NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetPersistenceMode", n.dev[1], &mode),
                         NVML_ERROR_NOT_SUPPORTED);
        set_knobs("notsup=none", "persistence=1:off", "mig=0:on", NULL);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetPersistenceMode", n.dev[1], &mode), NVML_SUCCESS);
        assert_int_equal(mode, 0);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetPersistenceMode", n.dev[0], &mode), NVML_SUCCESS);
        assert_int_equal(mode, 1);
        unsigned cur = 9, pend = 9;
        assert_int_equal(CALL(&n, nvmlDeviceGetMigMode_fn, "nvmlDeviceGetMigMode", n.dev[0], &cur, &pend), NVML_SUCCESS);
        assert_int_equal(cur, 1);
        assert_int_equal(CALL(&n, nvmlDeviceGetMigMode_fn, "nvmlDeviceGetMigMode", n.dev[1], &cur, &pend), NVML_SUCCESS);
        assert_int_equal(cur, 0);
        nv_close(&n);
}

/* In a child (a hung call cannot be cancelled): does `fn` on gpu return within wait_ms? */
static bool call_returns(const char *fn, unsigned gpu, unsigned wait_ms)
{
        pid_t c = fork();
        assert_true(c >= 0);
        if (c == 0) {
                struct nv n;
                char path[512];
                snprintf(path, sizeof(path), "%s/sim/current/libnvidia-ml.so.1", GV_BUILD_DIR);
                n.h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                if (!n.h || ((nvmlInit_fn)dlsym(n.h, "nvmlInit_v2"))() != NVML_SUCCESS ||
                    ((nvmlDeviceGetHandleByIndex_fn)dlsym(n.h, "nvmlDeviceGetHandleByIndex_v2"))(gpu, &n.dev[0]))
                        _exit(3);
                nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };
                int r = !strcmp(fn, "memory_v2") ? mem_v2(&n, 0, nvmlMemory_v2, &m)
                                                 : ((nvmlDeviceGetString_fn)dlsym(n.h, "nvmlDeviceGetName"))(
                                                           n.dev[0], (char *)&m, sizeof(m));
                _exit(r == NVML_SUCCESS ? 0 : 4);
        }
        for (unsigned t = 0; t < wait_ms; t += 10) {
                int st;
                if (waitpid(c, &st, WNOHANG) == c) {
                        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
                        return true;
                }
                usleep(10000);
        }
        kill(c, SIGKILL);
        waitpid(c, NULL, 0);
        return false;
}

static void test_hang(void **state)
{
        (void)state;
        set_knobs("hang=1:nvmlDeviceGetMemoryInfo_v2", NULL);
        assert_true(call_returns("memory_v2", 0, 5000));
        assert_false(call_returns("memory_v2", 1, 1000));
        assert_true(call_returns("name", 1, 5000));
        set_knobs("hang=any", NULL);
        assert_false(call_returns("name", 0, 1000));
        set_knobs("hang=none", NULL);
        assert_true(call_returns("name", 0, 5000));
}

static void test_events(void **state)
{
        (void)state;
        struct nv n;
        nvmlEventSet_t set;
        nvmlEventData_t d;
        nv_open(&n, "current");
        assert_int_equal(CALL(&n, nvmlEventSetCreate_fn, "nvmlEventSetCreate", &set), NVML_SUCCESS);
        assert_int_equal(CALL(&n, nvmlDeviceRegisterEvents_fn, "nvmlDeviceRegisterEvents", n.dev[1],
                              NVML_EVENT_TYPE_XID_CRITICAL_ERROR, set),
                         NVML_SUCCESS);
        assert_int_equal(CALL(&n, nvmlEventSetWait_fn, "nvmlEventSetWait_v2", set, &d, 50), NVML_ERROR_TIMEOUT);
        set_knobs("xid_event=0:48", "xid_event=1:79", NULL);
        memset(&d, 0, sizeof(d));
        assert_int_equal(CALL(&n, nvmlEventSetWait_fn, "nvmlEventSetWait_v2", set, &d, 2000), NVML_SUCCESS);
        assert_ptr_equal(d.device, n.dev[1]);
        assert_int_equal(d.eventType, NVML_EVENT_TYPE_XID_CRITICAL_ERROR);
        assert_int_equal(d.eventData, 79);
        assert_int_equal(d.gpuInstanceId, NVML_INSTANCE_ID_INVALID);
        /* delivered once; GPU 0's event is not for this set */
        assert_int_equal(CALL(&n, nvmlEventSetWait_fn, "nvmlEventSetWait_v2", set, &d, 100), NVML_ERROR_TIMEOUT);
        struct sim_knobs k;
        assert_int_equal(sim_knobs_load(sim_dir, &k), 0);
        assert_int_equal(k.gpu[1].xid_event, -1);
        assert_int_equal(k.gpu[0].xid_event, 48);
        assert_int_equal(CALL(&n, nvmlEventSetFree_fn, "nvmlEventSetFree", set), NVML_SUCCESS);
        nv_close(&n);

        /* before 450: 24-byte event data */
        nv_open(&n, "440.33.01");
        assert_int_equal(CALL(&n, nvmlEventSetCreate_fn, "nvmlEventSetCreate", &set), NVML_SUCCESS);
        /* single-bit ECC is not simulated: NOT_SUPPORTED, and nvml.h says none of the requested
         * types is then registered - the Xid bit neither */
        assert_int_equal(CALL(&n, nvmlDeviceRegisterEvents_fn, "nvmlDeviceRegisterEvents", n.dev[0],
                              NVML_EVENT_TYPE_XID_CRITICAL_ERROR | 0x1ull, set),
                         NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(CALL(&n, nvmlEventSetWait_fn, "nvmlEventSetWait", set, &d, 100), NVML_ERROR_TIMEOUT);
        assert_int_equal(CALL(&n, nvmlDeviceRegisterEvents_fn, "nvmlDeviceRegisterEvents", n.dev[0],
                              NVML_EVENT_TYPE_XID_CRITICAL_ERROR, set),
                         NVML_SUCCESS);
        memset(&d, 0x5A, sizeof(d));
        assert_int_equal(CALL(&n, nvmlEventSetWait_fn, "nvmlEventSetWait", set, &d, 2000), NVML_SUCCESS);
        assert_int_equal(d.eventData, 48);
        assert_int_equal(d.gpuInstanceId, 0x5A5A5A5Au);
        assert_int_equal(CALL(&n, nvmlEventSetFree_fn, "nvmlEventSetFree", set), NVML_SUCCESS);
        nv_close(&n);
}

/* ---- lifetime and owners ----------------------------------------------------------------------- */

static unsigned listed(struct nv *n, unsigned gpu, unsigned *ret_pid)
{
        unsigned char buf[8 * 24];
        unsigned count = 8;
        assert_int_equal(CALL(n, nvmlDeviceGetProcesses_fn, "nvmlDeviceGetComputeRunningProcesses_v3", n->dev[gpu],
                              &count, buf),
                         NVML_SUCCESS);
        if (count)
                *ret_pid = rec_u32(buf, 0);
        return count;
}

static uint64_t realtime_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* What 1 GiB released ms ago with a delay of 1500 ms still holds. */
static uint64_t left_after(uint64_t ms)
{
        return ms >= 1500 ? 0 : 1024 * MIB * (1500 - ms) / 1500;
}

static void test_dead_owner_and_free_delay(void **state)
{
        (void)state;
        struct nv n;
        pid_t worker;
        unsigned pid = 0;
        pid_t owner = spawn_ctx(0, 1024, &worker);
        set_knobs("free_delay_ms_per_gib=1500", NULL);
        nv_open(&n, "current");
        assert_int_equal(listed(&n, 0, &pid), 1);
        assert_int_equal(pid, (unsigned)owner);
        kill_wait(owner);
        /* the worker's inherited descriptor keeps the context: a stale PID with its bytes */
        assert_int_equal(listed(&n, 0, &pid), 1);
        assert_int_equal(pid, (unsigned)owner);
        assert_int_equal(used_v2(&n, 0), 1024 * MIB);
        set_knobs("hidden_owner=on", NULL);
        assert_int_equal(listed(&n, 0, &pid), 0);
        assert_int_equal(used_v2(&n, 0), 1024 * MIB);
        set_knobs("hidden_owner=off", "pid_mode=host", NULL);
        assert_int_equal(listed(&n, 0, &pid), 1);
        assert_int_equal(pid, (unsigned)owner);
        kill_wait(worker);
        /* released with no teardown watcher (the context was made directly): the first reader
         * times the release; the memory falls linearly to 0 over 1.5 s (1 GiB x 1500 ms). Each
         * read is bounded by the times taken around it (the sim's clock: CLOCK_REALTIME), so a
         * loaded or emulated machine (qemu-user, docs/arm64.md) that reads later still checks the
         * exact line: left(a) = 1024 MiB x (1 - a / 1500 ms), a the time since the release. */
        uint64_t t0 = realtime_ms();
        assert_int_equal(listed(&n, 0, &pid), 0);
        uint64_t first = used_v2(&n, 0);
        uint64_t t1 = realtime_ms();
        assert_true(first <= 1024 * MIB && first + MIB >= left_after(t1 - t0));
        usleep(700 * 1000);
        uint64_t t2 = realtime_ms();
        uint64_t mid = used_v2(&n, 0);
        uint64_t t3 = realtime_ms();
        /* released between t0 and t1, read between t2 and t3 */
        assert_true(mid + MIB >= left_after(t3 - t0) && mid <= left_after(t2 - t1) + MIB);
        if (t3 - t0 < 1400)
                assert_true(mid < first && mid > 0);
        while (realtime_ms() - t1 < 1600)
                usleep(100 * 1000);
        assert_int_equal(used_v2(&n, 0), 0);
        nv_close(&n);
}

/* A CUDA program that asks NVML about itself (as PyTorch does) sees its own PID. */
static void test_owner_asks_about_itself(void **state)
{
        (void)state;
        char err[SIM_ERR_LEN];
        unsigned id, pid = 0;
        int cfd, ofd;
        struct nv n;
        open_ctl_owners(&cfd, &ofd);
        assert_true(cfd >= 0 && ofd >= 0);
        assert_int_equal(sim_context_create(sim_dir, 0, 64 * MIB, cfd, ofd, &id, err, sizeof(err)), 0);
        nv_open(&n, "current");
        set_knobs("hidden_owner=on", NULL); /* alive owners are listed whatever this says */
        assert_int_equal(listed(&n, 0, &pid), 1);
        assert_int_equal(pid, (unsigned)getpid());
        nv_close(&n);
        close(cfd); /* the description goes: the context with it */
        close(ofd);
        nv_open(&n, "current");
        assert_int_equal(used_v2(&n, 0), 0);
        nv_close(&n);
}

static void test_out_of_memory(void **state)
{
        (void)state;
        char err[SIM_ERR_LEN];
        unsigned id;
        int cfd, ofd;
        spawn_ctx(1, 80000, NULL);
        open_ctl_owners(&cfd, &ofd);
        assert_true(cfd >= 0 && ofd >= 0);
        /* 81559 - 579 reserved - 80000 = 980 MiB free */
        assert_int_equal(sim_context_create(sim_dir, 1, 981 * MIB, cfd, ofd, &id, err, sizeof(err)), -ENOMEM);
        assert_non_null(strstr(err, "out of memory"));
        assert_non_null(strstr(err, "980 MiB is free"));
        assert_int_equal(sim_context_create(sim_dir, 2, MIB, cfd, ofd, &id, err, sizeof(err)), -ENODEV);
        close(cfd);
        close(ofd);
}

/* ---- MIG ------------------------------------------------------------------------------------ */

typedef nvmlReturn_t (*mig_handle_fn)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*mig_parent_fn)(nvmlDevice_t, nvmlDevice_t *);

/* Records of a process-list call on dev: count, and pid/bytes/GI/CI of each (stride 24). */
static nvmlReturn_t mig_list(struct nv *n, const char *sym, nvmlDevice_t dev, unsigned *count, unsigned char *buf)
{
        *count = 8;
        memset(buf, 0, 8 * 24);
        return CALL(n, nvmlDeviceGetProcesses_fn, sym, dev, count, buf);
}

static void mig_record(const unsigned char *buf, unsigned i, unsigned *pid, uint64_t *bytes, unsigned *gi, unsigned *ci)
{
        memcpy(pid, buf + i * 24, 4);
        memcpy(bytes, buf + i * 24 + 8, 8);
        memcpy(gi, buf + i * 24 + 16, 4);
        memcpy(ci, buf + i * 24 + 20, 4);
}

/* In a child that dropped root for nobody: what the parent's and a MIG device's compute lists
 * answer. Exit status: 10 + the parent list's NVML code, plus 100 if the MIG device gave its
 * one process, plus 50 if the parent gave both. */
static int mig_unprivileged_probe(struct nv *n, nvmlDevice_t mig)
{
        pid_t c = fork();
        assert_true(c >= 0);
        if (c == 0) {
                unsigned char buf[8 * 24];
                unsigned count;
                if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                        _exit(1);
                nvmlReturn_t r = mig_list(n, "nvmlDeviceGetComputeRunningProcesses_v3", n->dev[0], &count, buf);
                int code = 10 + (int)r + (r == NVML_SUCCESS && count == 2 ? 50 : 0);
                if (r == NVML_SUCCESS && count != 0 && count != 2)
                        _exit(2);
                r = mig_list(n, "nvmlDeviceGetComputeRunningProcesses_v3", mig, &count, buf);
                _exit(code + (r == NVML_SUCCESS && count == 1 ? 100 : 0));
        }
        int st;
        assert_int_equal(waitpid(c, &st, 0), c);
        assert_true(WIFEXITED(st));
        return WEXITSTATUS(st);
}

static void test_mig(void **state)
{
        (void)state;
        struct nv n;
        unsigned char buf[8 * 24];
        unsigned count, v, cur, pend, pid, gi, ci;
        uint64_t bytes;
        nvmlMemory_v2_t m;
        nvmlMemory_t m1;
        nvmlDevice_t mig[2], parent;
        char err[SIM_ERR_LEN], uuid[96];
        unsigned id;

        set_knobs("mig_instances=0:2", NULL);
        /* under MIG a context needs an instance that exists, and fits in that instance */
        int cfd, ofd;
        open_ctl_owners(&cfd, &ofd);
        assert_true(cfd >= 0 && ofd >= 0);
        assert_int_equal(sim_context_create(sim_dir, 0, 64 * MIB, cfd, ofd, &id, err, sizeof(err)), -ENODEV);
        assert_non_null(strstr(err, "MIG mode"));
        assert_int_equal(sim_context_create_gi(sim_dir, 0, 3, 64 * MIB, cfd, ofd, &id, err, sizeof(err)), -ENODEV);
        assert_int_equal(sim_context_create_gi(sim_dir, 1, 1, 64 * MIB, cfd, ofd, &id, err, sizeof(err)), -ENODEV);
        /* (81559 - 579) / 2 = 40490 MiB an instance */
        assert_int_equal(sim_context_create_gi(sim_dir, 0, 1, 40491 * MIB, cfd, ofd, &id, err, sizeof(err)), -ENOMEM);
        assert_non_null(strstr(err, "MIG instance 1 has a total capacity of 40490 MiB"));
        close(cfd);
        close(ofd);

        pid_t worker;
        pid_t a = spawn_ctx_gi(0, 1, 1024, &worker);
        pid_t b = spawn_ctx_gi(0, 2, 2048, NULL);
        nv_open(&n, "current");

        assert_int_equal(CALL(&n, nvmlDeviceGetMigMode_fn, "nvmlDeviceGetMigMode", n.dev[0], &cur, &pend), NVML_SUCCESS);
        assert_int_equal(cur, NVML_DEVICE_MIG_ENABLE);
        assert_int_equal(pend, NVML_DEVICE_MIG_ENABLE);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetMaxMigDeviceCount", n.dev[0], &v), NVML_SUCCESS);
        assert_int_equal(v, 7);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetMaxMigDeviceCount", n.dev[1], &v), NVML_SUCCESS);
        assert_int_equal(v, 0); /* "zero if MIG is not supported or enabled" */
        for (unsigned i = 0; i < 2; i++)
                assert_int_equal(CALL(&n, mig_handle_fn, "nvmlDeviceGetMigDeviceHandleByIndex", n.dev[0], i, &mig[i]),
                                 NVML_SUCCESS);
        assert_int_equal(CALL(&n, mig_handle_fn, "nvmlDeviceGetMigDeviceHandleByIndex", n.dev[0], 2, &parent),
                         NVML_ERROR_NOT_FOUND);
        assert_int_equal(CALL(&n, mig_handle_fn, "nvmlDeviceGetMigDeviceHandleByIndex", n.dev[1], 0, &parent),
                         NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceIsMigDeviceHandle", mig[1], &v), NVML_SUCCESS);
        assert_int_equal(v, 1);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceIsMigDeviceHandle", n.dev[0], &v), NVML_SUCCESS);
        assert_int_equal(v, 0);
        for (unsigned i = 0; i < 2; i++) {
                assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetGpuInstanceId", mig[i], &v), NVML_SUCCESS);
                assert_int_equal(v, i + 1);
                assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetComputeInstanceId", mig[i], &v),
                                 NVML_SUCCESS);
                assert_int_equal(v, 0);
                assert_int_equal(CALL(&n, mig_parent_fn, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", mig[i], &parent),
                                 NVML_SUCCESS);
                assert_ptr_equal(parent, n.dev[0]);
        }
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetGpuInstanceId", n.dev[0], &v),
                         NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(CALL(&n, mig_parent_fn, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", n.dev[0], &parent),
                         NVML_ERROR_INVALID_ARGUMENT);
        /* a parent-only query on a MIG device */
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetPersistenceMode", mig[0], &v),
                         NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(CALL(&n, nvmlDeviceGetString_fn, "nvmlDeviceGetUUID", mig[0], uuid, sizeof(uuid)), NVML_SUCCESS);
        assert_int_equal(strncmp(uuid, "MIG-", 4), 0);
        assert_int_equal(strlen(uuid), 40);

        /* memory: each instance its share and its contexts; the GPU the sum */
        assert_int_equal(CALL(&n, nvmlDeviceGetMemoryInfo_v2_fn, "nvmlDeviceGetMemoryInfo_v2", mig[0],
                              (memset(&m, 0, sizeof(m)), m.version = nvmlMemory_v2, &m)),
                         NVML_SUCCESS);
        assert_int_equal(m.total, 40490 * MIB);
        assert_int_equal(m.reserved, 0);
        assert_int_equal(m.used, 1024 * MIB);
        assert_int_equal(m.free, (40490 - 1024) * MIB);
        assert_int_equal(CALL(&n, nvmlDeviceGetMemoryInfo_fn, "nvmlDeviceGetMemoryInfo", mig[1], &m1), NVML_SUCCESS);
        assert_int_equal(m1.used, 2048 * MIB);
        assert_int_equal(m1.total, 40490 * MIB);
        assert_int_equal(used_v2(&n, 0), 3072 * MIB);

        /* the GPU's own lists (root): both, with their instance ids; a MIG device's: its own */
        assert_int_equal(mig_list(&n, "nvmlDeviceGetComputeRunningProcesses_v3", n.dev[0], &count, buf), NVML_SUCCESS);
        assert_int_equal(count, 2);
        for (unsigned i = 0; i < 2; i++) {
                mig_record(buf, i, &pid, &bytes, &gi, &ci);
                assert_int_equal(pid, (unsigned)(gi == 1 ? a : b));
                assert_int_equal(bytes, (gi == 1 ? 1024 : 2048) * MIB);
                assert_int_equal(ci, 0);
        }
        assert_int_equal(mig_list(&n, "nvmlDeviceGetComputeRunningProcesses_v2", mig[1], &count, buf), NVML_SUCCESS);
        assert_int_equal(count, 1);
        mig_record(buf, 0, &pid, &bytes, &gi, &ci);
        assert_int_equal(pid, (unsigned)b);
        assert_int_equal(gi, 2);
        assert_int_equal(ci, 0);

        /* the owner killed, its worker keeps the context: the dead PID stays listed in its instance */
        kill_wait(a);
        assert_int_equal(mig_list(&n, "nvmlDeviceGetComputeRunningProcesses_v3", mig[0], &count, buf), NVML_SUCCESS);
        assert_int_equal(count, 1);
        mig_record(buf, 0, &pid, &bytes, &gi, &ci);
        assert_int_equal(pid, (unsigned)a);
        assert_int_equal(gi, 1);
        assert_int_equal(used_v2(&n, 0), 3072 * MIB);

        /* without the MIG monitor capability: NO_PERMISSION from the GPU's lists (or an empty
         * list), its MIG devices still answer; the capability node readable: the aggregate */
        assert_int_equal(chmod(sim_dir, 0755), 0);
        assert_int_equal(mig_unprivileged_probe(&n, mig[0]), 110 + NVML_ERROR_NO_PERMISSION);
        set_knobs("mig_unprivileged=empty", NULL);
        assert_int_equal(mig_unprivileged_probe(&n, mig[0]), 110 + NVML_SUCCESS);
        char cap[600];
        snprintf(cap, sizeof(cap), "%s/dev/nvidia-caps/nvidia-cap2", sim_dir);
        assert_int_equal(chmod(cap, 0444), 0);
        assert_int_equal(mig_unprivileged_probe(&n, mig[0]), 160 + NVML_SUCCESS);

        /* the instance gone (mig_instances lowered): its handle is no longer valid */
        set_knobs("mig_instances=0:1", NULL);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetGpuInstanceId", mig[1], &v),
                         NVML_ERROR_INVALID_ARGUMENT);
        nv_close(&n);
        kill_wait(worker);
        kill_wait(b);
}

static void test_corrupt_state(void **state)
{
        (void)state;
        struct nv n;
        char p[512];
        static const char junk[] = "next=zz\nctx=1 gpu=99 bytes=1\nctx=\n\x01\x02garbage\nctx=5 gpu=0\n";
        snprintf(p, sizeof(p), "%s/contexts", sim_dir);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fwrite(junk, 1, sizeof(junk) - 1, f);
        fclose(f);
        snprintf(p, sizeof(p), "%s/knobs", sim_dir);
        f = fopen(p, "w");
        assert_non_null(f);
        fputs("hang=\nnotsup=bogus\ngpu_lost=99:on\n=\nfree_delay_ms_per_gib=-1\n", f);
        fclose(f);
        set_knobs("driver=current", NULL);
        nv_open(&n, "current");
        assert_int_equal(used_v2(&n, 0), 0);
        unsigned pid;
        assert_int_equal(listed(&n, 0, &pid), 0);
        nv_close(&n);
        char err[SIM_ERR_LEN];
        assert_int_equal(sim_knob_check("gpu_lost=2:on", 2, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "no GPU 2"));
        assert_int_equal(sim_knob_check("hang=nvmlBogus", 2, err, sizeof(err)), -EINVAL);
        assert_int_equal(sim_knob_check("driver=999.1", 2, err, sizeof(err)), -EINVAL);
        assert_int_equal(sim_knob_check("xid_event=79", 2, err, sizeof(err)), -EINVAL);
        assert_int_equal(sim_knob_check("pid_mode=0:host", 2, err, sizeof(err)), -EINVAL);
        assert_int_equal(sim_knob_check("nosuch=1", 2, err, sizeof(err)), -EINVAL);
        assert_int_equal(sim_knob_check("notsup=1:memory,events", 2, err, sizeof(err)), 0);
}

/* top's figures: the knobs' values in NVML's units, na as NOT_SUPPORTED, the defaults of an
 * idle H100 SXM (no fan), and each process's share of the GPU (two-call pattern, NOT_FOUND when
 * nothing ran). */
static void test_metrics(void **state)
{
        (void)state;
        struct nv n;
        unsigned v = 0, period = 0, count = 0;
        nvmlUtilization_t u;
        pid_t owner = spawn_ctx(0, 1024, NULL);
        pid_t other = spawn_ctx(0, 512, NULL);
        nv_open(&n, "current");
        /* defaults */
        assert_int_equal(CALL(&n, nvmlDeviceGetTemperature_fn, "nvmlDeviceGetTemperature", n.dev[1], GV_NVML_TEMPERATURE_GPU, &v),
                         NVML_SUCCESS);
        assert_int_equal(v, 33);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetFanSpeed", n.dev[1], &v), NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetPowerUsage", n.dev[1], &v), NVML_SUCCESS);
        assert_int_equal(v, 71000);
        assert_int_equal(CALL(&n, nvmlDeviceGetProcessUtilization_fn, "nvmlDeviceGetProcessUtilization", n.dev[0], NULL,
                              &count, 0ull),
                         NVML_ERROR_NOT_FOUND); /* util 0: nothing ran */
        set_knobs("util_gpu=0:60", "util_mem=0:13", "temp=0:58", "power=0:250", "clock_sm=0:1410", "fan=0:40",
                  "pcie_rx=0:3000", NULL);
        set_knobs("dec=0:7", NULL);
        assert_int_equal(CALL(&n, nvmlDeviceGetUtilizationRates_fn, "nvmlDeviceGetUtilizationRates", n.dev[0], &u),
                         NVML_SUCCESS);
        assert_true(u.gpu == 60 && u.memory == 13);
        assert_int_equal(CALL(&n, nvmlDeviceGetTemperature_fn, "nvmlDeviceGetTemperature", n.dev[0], GV_NVML_TEMPERATURE_GPU, &v),
                         NVML_SUCCESS);
        assert_int_equal(v, 58);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetPowerUsage", n.dev[0], &v), NVML_SUCCESS);
        assert_int_equal(v, 250000); /* mW */
        assert_int_equal(CALL(&n, nvmlDeviceGetClockInfo_fn, "nvmlDeviceGetClockInfo", n.dev[0], GV_NVML_CLOCK_SM, &v),
                         NVML_SUCCESS);
        assert_int_equal(v, 1410);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetFanSpeed", n.dev[0], &v), NVML_SUCCESS);
        assert_int_equal(v, 40);
        assert_int_equal(CALL(&n, nvmlDeviceGetPcieThroughput_fn, "nvmlDeviceGetPcieThroughput", n.dev[0],
                              GV_NVML_PCIE_UTIL_RX_BYTES, &v),
                         NVML_SUCCESS);
        assert_int_equal(v, 3000);
        assert_int_equal(CALL(&n, nvmlDeviceGetCodecUtilization_fn, "nvmlDeviceGetDecoderUtilization", n.dev[0], &v, &period),
                         NVML_SUCCESS);
        assert_true(v == 7 && period > 0);
        /* per process: the count first, then each of the two owners gets half */
        count = 0;
        assert_int_equal(CALL(&n, nvmlDeviceGetProcessUtilization_fn, "nvmlDeviceGetProcessUtilization", n.dev[0], NULL,
                              &count, 0ull),
                         NVML_ERROR_INSUFFICIENT_SIZE);
        assert_int_equal(count, 2);
        nvmlProcessUtilizationSample_t smp[4];
        count = 4;
        assert_int_equal(CALL(&n, nvmlDeviceGetProcessUtilization_fn, "nvmlDeviceGetProcessUtilization", n.dev[0], smp,
                              &count, 0ull),
                         NVML_SUCCESS);
        assert_int_equal(count, 2);
        bool seen_owner = false, seen_other = false;
        for (unsigned i = 0; i < count; i++) {
                assert_true(smp[i].smUtil == 30 && smp[i].memUtil == 6 && smp[i].timeStamp > 0);
                seen_owner |= smp[i].pid == (unsigned)owner;
                seen_other |= smp[i].pid == (unsigned)other;
        }
        assert_true(seen_owner && seen_other);
        /* na: NOT_SUPPORTED, the rest still answers */
        set_knobs("temp=0:na", "util_mem=0:na", NULL);
        assert_int_equal(CALL(&n, nvmlDeviceGetTemperature_fn, "nvmlDeviceGetTemperature", n.dev[0], GV_NVML_TEMPERATURE_GPU, &v),
                         NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(CALL(&n, nvmlDeviceGetUtilizationRates_fn, "nvmlDeviceGetUtilizationRates", n.dev[0], &u),
                         NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(CALL(&n, nvmlDeviceGetUInt_fn, "nvmlDeviceGetPowerUsage", n.dev[0], &v), NVML_SUCCESS);
        /* bad values are refused by sim set */
        char err[SIM_ERR_LEN];
        assert_int_equal(sim_knob_check("temp=0:hot", 2, err, sizeof(err)), -EINVAL);
        assert_int_equal(sim_knob_check("util_gpu=101", 2, err, sizeof(err)), -EINVAL);
        assert_int_equal(sim_knob_check("fan=1:na", 2, err, sizeof(err)), 0);
        nv_close(&n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_symbols_per_variant, setup, teardown),
                cmocka_unit_test_setup_teardown(test_versions_and_mismatch, setup, teardown),
                cmocka_unit_test_setup_teardown(test_memory_versions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_uncharged_memory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pci, setup, teardown),
                cmocka_unit_test_setup_teardown(test_two_call_pattern, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v3_stride_32, setup, teardown),
                cmocka_unit_test_setup_teardown(test_detail_list, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_growth, setup, teardown),
                cmocka_unit_test_setup_teardown(test_gpu_lost_and_notsup, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hang, setup, teardown),
                cmocka_unit_test_setup_teardown(test_events, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dead_owner_and_free_delay, setup, teardown),
                cmocka_unit_test_setup_teardown(test_owner_asks_about_itself, setup, teardown),
                cmocka_unit_test_setup_teardown(test_out_of_memory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mig, setup, teardown),
                cmocka_unit_test_setup_teardown(test_corrupt_state, setup, teardown),
                cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
