/* gpu_nvml: the NVML backend. dlopen()s libnvidia-ml.so.1 at run time (no nvml.h needed),
 * resolves every versioned symbol on its own and falls back, and runs each driver call on a
 * worker thread under a deadline, because a wedged GPU can block a call forever.
 * ABI facts and their sources: docs/nvml-abi.md (and src/collect/nvml_abi.h). */
#define _GNU_SOURCE 1 /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "collect/gpu.h"
#include "collect/gpu_procfs.h"
#include "collect/nvml_abi.h"
#include "util/deadline.h"

#define NV_PROC_SLACK 8         /* extra records in case the list grows between calls */
#define NV_PROC_TRIES 5
#define NV_PROC_MAX 65536
#define NV_MAX_RECORD 32        /* largest stride any driver uses: size buffers for it */

struct nv_lib {
        void *handle;
        nvmlInit_fn init_v2, init_v1;
        nvmlShutdown_fn shutdown;
        nvmlErrorString_fn error_string;
        nvmlSystemGetString_fn driver_version, nvml_version;
        nvmlDeviceGetCount_fn count_v2, count_v1;
        nvmlDeviceGetHandleByIndex_fn handle_v2, handle_v1;
        nvmlDeviceGetString_fn name, uuid;
        nvmlDeviceGetUInt_fn minor, persistence;
        nvmlDeviceGetPciInfo_fn pci_v3, pci_v2, pci_v1;
        nvmlDeviceGetMemoryInfo_fn mem_v1;
        nvmlDeviceGetMemoryInfo_v2_fn mem_v2;
        nvmlDeviceGetProcesses_fn procs[3][3];  /* [kind][0=v3,1=v2,2=v1] */
        void *conf_compute_mem;                 /* only probed: the R535 stride rule */
        void *detail_list;
        nvmlDeviceGetMigMode_fn mig_mode;
        nvmlDeviceGetUInt_fn mig_count, mig_gi, mig_ci;
        nvmlDeviceGetMigDeviceHandleByIndex_fn mig_handle;
        nvmlDeviceGetRemappedRows_fn remapped_rows;
        nvmlDeviceGetUInt_fn retired_pending;
        nvmlDeviceGetTotalEccErrors_fn ecc_total;
        nvmlDeviceGetUtilizationRates_fn util;
        nvmlDeviceGetTemperature_fn temp;
        nvmlDeviceGetUInt_fn power, power_limit, fan;
        nvmlDeviceGetClockInfo_fn clock, max_clock;
        nvmlDeviceGetPcieThroughput_fn pcie;
        nvmlDeviceGetCodecUtilization_fn enc, dec;
        nvmlDeviceGetProcessUtilization_fn proc_util;
};

static const char *const proc_sym[3][3] = {
        { "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
          "nvmlDeviceGetComputeRunningProcesses" },
        { "nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2",
          "nvmlDeviceGetGraphicsRunningProcesses" },
        { "nvmlDeviceGetMPSComputeRunningProcesses_v3", "nvmlDeviceGetMPSComputeRunningProcesses_v2",
          "nvmlDeviceGetMPSComputeRunningProcesses" },
};
static const unsigned proc_kind_bit[3] = { GPU_PROC_COMPUTE, GPU_PROC_GRAPHICS, GPU_PROC_MPS };
static const char *const proc_kind_name[3] = { "compute", "graphics", "mps" };

#define SYM(field, name) (*(void **)&lib->field = dlsym(lib->handle, name))

static void nv_resolve(struct nv_lib *lib)
{
        SYM(init_v2, "nvmlInit_v2");
        SYM(init_v1, "nvmlInit");
        SYM(shutdown, "nvmlShutdown");
        SYM(error_string, "nvmlErrorString");
        SYM(driver_version, "nvmlSystemGetDriverVersion");
        SYM(nvml_version, "nvmlSystemGetNVMLVersion");
        SYM(count_v2, "nvmlDeviceGetCount_v2");
        SYM(count_v1, "nvmlDeviceGetCount");
        SYM(handle_v2, "nvmlDeviceGetHandleByIndex_v2");
        SYM(handle_v1, "nvmlDeviceGetHandleByIndex");
        SYM(name, "nvmlDeviceGetName");
        SYM(uuid, "nvmlDeviceGetUUID");
        SYM(minor, "nvmlDeviceGetMinorNumber");
        SYM(persistence, "nvmlDeviceGetPersistenceMode");
        SYM(pci_v3, "nvmlDeviceGetPciInfo_v3");
        SYM(pci_v2, "nvmlDeviceGetPciInfo_v2");
        SYM(pci_v1, "nvmlDeviceGetPciInfo");
        SYM(mem_v1, "nvmlDeviceGetMemoryInfo");
        SYM(mem_v2, "nvmlDeviceGetMemoryInfo_v2");
        SYM(mig_mode, "nvmlDeviceGetMigMode");
        SYM(mig_count, "nvmlDeviceGetMaxMigDeviceCount");
        SYM(mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
        SYM(mig_gi, "nvmlDeviceGetGpuInstanceId");
        SYM(mig_ci, "nvmlDeviceGetComputeInstanceId");
        SYM(remapped_rows, "nvmlDeviceGetRemappedRows");
        SYM(retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
        SYM(ecc_total, "nvmlDeviceGetTotalEccErrors");
        SYM(util, "nvmlDeviceGetUtilizationRates");
        SYM(temp, "nvmlDeviceGetTemperature");
        SYM(power, "nvmlDeviceGetPowerUsage");
        SYM(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
        SYM(fan, "nvmlDeviceGetFanSpeed");
        SYM(clock, "nvmlDeviceGetClockInfo");
        SYM(max_clock, "nvmlDeviceGetMaxClockInfo");
        SYM(pcie, "nvmlDeviceGetPcieThroughput");
        SYM(enc, "nvmlDeviceGetEncoderUtilization");
        SYM(dec, "nvmlDeviceGetDecoderUtilization");
        SYM(proc_util, "nvmlDeviceGetProcessUtilization");
        lib->conf_compute_mem = dlsym(lib->handle, "nvmlDeviceGetConfComputeMemSizeInfo");
        lib->detail_list = dlsym(lib->handle, "nvmlDeviceGetRunningProcessDetailList");
        for (int k = 0; k < 3; k++)
                for (int v = 0; v < 3; v++)
                        *(void **)&lib->procs[k][v] = dlsym(lib->handle, proc_sym[k][v]);
}

/* ---- calls under a deadline -------------------------------------------------------------
 * Every call runs as a heap job whose outputs live in the job itself: if the deadline passes,
 * the abandoned worker may still write into it later, and frees it. */

enum nv_op {
        OP_INIT, OP_SHUTDOWN, OP_DRIVER_VERSION, OP_NVML_VERSION, OP_COUNT, OP_HANDLE, OP_NAME,
        OP_UUID, OP_MINOR, OP_PERSISTENCE, OP_PCI, OP_MEM_V2, OP_MEM_V1, OP_PROCS, OP_MIG,
        OP_MIG_COUNT, OP_MIG_HANDLE, OP_MIG_GI, OP_MIG_CI, OP_REMAP, OP_RETIRED, OP_ECC, OP_TELEMETRY,
};

struct nv_job {
        enum nv_op op;
        struct nv_lib lib;      /* by value: an abandoned worker outlives the context */
        int slot;               /* nv_stuck slot: the GPU index, or NV_SLOT_GLOBAL */
        nvmlDevice_t dev;
        unsigned idx;
        void *fn;               /* for OP_PCI and OP_PROCS: which symbol */
        nvmlReturn_t ret;
        unsigned u1, u2, u3, u4;
        unsigned long long ull;
        char str[NVML_DEVICE_UUID_V2_BUFFER_SIZE]; /* >= every string query's buffer */
        nvmlPciInfo_t pci;
        nvmlMemory_t mem;
        nvmlMemory_v2_t mem2;
        unsigned count;
        unsigned char *records; /* OP_PROCS buffer, freed with the job */
        struct gpu_telemetry tel; /* OP_TELEMETRY */
        unsigned long long last_seen_us; /* OP_TELEMETRY: samples after this */
};

static void nv_job_free(void *p)
{
        struct nv_job *j = p;
        if (!j)
                return;
        free(j->records);
        free(j);
}

/* Every figure of struct gpu_telemetry in one job on the worker (one deadline for all). */
static void nv_telemetry_run(struct nv_job *j)
{
        const struct nv_lib *l = &j->lib;
        struct gpu_telemetry *t = &j->tel;
        unsigned a = 0, b = 0;
        nvmlUtilization_t u;
        nvmlDevice_t d = j->dev;
        t->queried = true;
        t->util_gpu = t->util_mem = -1;
        if (l->util && l->util(d, &u) == NVML_SUCCESS) {
                t->util_gpu = (int)u.gpu;
                t->util_mem = (int)u.memory;
        }
        t->temp_c = l->temp && l->temp(d, GV_NVML_TEMPERATURE_GPU, &a) == NVML_SUCCESS ? (int)a : -1;
        t->power_mw = l->power && l->power(d, &a) == NVML_SUCCESS ? (long long)a : -1;
        t->power_limit_mw = l->power_limit && l->power_limit(d, &a) == NVML_SUCCESS ? (long long)a : -1;
        t->fan_pct = l->fan && l->fan(d, &a) == NVML_SUCCESS ? (int)a : -1;
        t->clock_sm_mhz = l->clock && l->clock(d, GV_NVML_CLOCK_SM, &a) == NVML_SUCCESS ? (int)a : -1;
        t->clock_mem_mhz = l->clock && l->clock(d, GV_NVML_CLOCK_MEM, &a) == NVML_SUCCESS ? (int)a : -1;
        t->clock_sm_max_mhz = l->max_clock && l->max_clock(d, GV_NVML_CLOCK_SM, &a) == NVML_SUCCESS ? (int)a : -1;
        t->clock_mem_max_mhz = l->max_clock && l->max_clock(d, GV_NVML_CLOCK_MEM, &a) == NVML_SUCCESS ? (int)a : -1;
        t->pcie_tx_kbs = l->pcie && l->pcie(d, GV_NVML_PCIE_UTIL_TX_BYTES, &a) == NVML_SUCCESS ? (long long)a : -1;
        t->pcie_rx_kbs = l->pcie && l->pcie(d, GV_NVML_PCIE_UTIL_RX_BYTES, &a) == NVML_SUCCESS ? (long long)a : -1;
        t->enc_pct = l->enc && l->enc(d, &a, &b) == NVML_SUCCESS ? (int)a : -1;
        t->dec_pct = l->dec && l->dec(d, &a, &b) == NVML_SUCCESS ? (int)a : -1;
        if (!l->proc_util)
                return;
        nvmlProcessUtilizationSample_t smp[GPU_MAX_PROC_UTIL];
        unsigned n = GPU_MAX_PROC_UTIL;
        nvmlReturn_t r = l->proc_util(d, smp, &n, j->last_seen_us);
        t->procs_known = r == NVML_SUCCESS || r == NVML_ERROR_NOT_FOUND;
        for (unsigned i = 0; r == NVML_SUCCESS && i < n && i < GPU_MAX_PROC_UTIL; i++)
                t->procs[t->n_procs++] = (struct gpu_proc_util){ .pid = smp[i].pid, .sm = smp[i].smUtil,
                                                                 .mem = smp[i].memUtil, .enc = smp[i].encUtil,
                                                                 .dec = smp[i].decUtil };
}

static int nv_job_run(void *p)
{
        struct nv_job *j = p;
        const struct nv_lib *l = &j->lib;
        switch (j->op) {
        case OP_INIT: j->ret = l->init_v2 ? l->init_v2() : l->init_v1(); break;
        case OP_SHUTDOWN: j->ret = l->shutdown(); break;
        case OP_DRIVER_VERSION: j->ret = l->driver_version(j->str, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE); break;
        case OP_NVML_VERSION: j->ret = l->nvml_version(j->str, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE); break;
        case OP_COUNT: j->ret = l->count_v2 ? l->count_v2(&j->u1) : l->count_v1(&j->u1); break;
        case OP_HANDLE:
                /* v2 handle with v2 count, v1 with v1: mixing them can address the wrong GPU */
                j->ret = l->count_v2 && l->handle_v2 ? l->handle_v2(j->idx, &j->dev) : l->handle_v1(j->idx, &j->dev);
                break;
        case OP_NAME: j->ret = l->name(j->dev, j->str, NVML_DEVICE_NAME_V2_BUFFER_SIZE); break;
        case OP_UUID: j->ret = l->uuid(j->dev, j->str, NVML_DEVICE_UUID_V2_BUFFER_SIZE); break;
        case OP_MINOR: j->ret = l->minor(j->dev, &j->u1); break;
        case OP_PERSISTENCE: j->ret = l->persistence(j->dev, &j->u1); break;
        case OP_PCI: j->ret = ((nvmlDeviceGetPciInfo_fn)j->fn)(j->dev, &j->pci); break;
        case OP_MEM_V2:
                j->mem2.version = nvmlMemory_v2; /* sizeof | 2 << 24, never a bare 2 */
                j->ret = l->mem_v2(j->dev, &j->mem2);
                break;
        case OP_MEM_V1: j->ret = l->mem_v1(j->dev, &j->mem); break;
        case OP_PROCS: j->ret = ((nvmlDeviceGetProcesses_fn)j->fn)(j->dev, &j->count, j->records); break;
        case OP_MIG: j->ret = l->mig_mode(j->dev, &j->u1, &j->u2); break;
        case OP_MIG_COUNT: j->ret = l->mig_count(j->dev, &j->u1); break;
        case OP_MIG_HANDLE: j->ret = l->mig_handle(j->dev, j->idx, &j->dev); break;
        case OP_MIG_GI: j->ret = l->mig_gi(j->dev, &j->u1); break;
        case OP_MIG_CI: j->ret = l->mig_ci(j->dev, &j->u1); break;
        case OP_REMAP: j->ret = l->remapped_rows(j->dev, &j->u1, &j->u2, &j->u3, &j->u4); break;
        case OP_RETIRED: j->ret = l->retired_pending(j->dev, &j->u1); break;
        case OP_ECC:
                j->ret = l->ecc_total(j->dev, GV_NVML_MEMORY_ERROR_TYPE_UNCORRECTED, GV_NVML_VOLATILE_ECC, &j->ull);
                break;
        case OP_TELEMETRY:
                nv_telemetry_run(j);
                j->ret = NVML_SUCCESS;
                break;
        }
        return 0;
}

struct nv_ctx {
        struct nv_lib lib;
        struct deadline_runner runner;
        unsigned timeout_ms;
        unsigned timeouts;      /* calls that missed the deadline (or were not made: guarded) */
        unsigned guarded;       /* calls not made: an earlier one for the GPU is still stuck */
        unsigned abandoned;     /* calls made by this collection that missed the deadline */
        bool memory_only;       /* gpu_opts.memory_only */
        bool health;            /* gpu_opts.health */
        bool telemetry;         /* gpu_opts.telemetry */
};

/* Abandoned calls still inside the driver (may go below 0 for a moment: a call can return
 * between being abandoned and being counted). */
static atomic_int nv_stuck_calls;

/* One guard per GPU (and one for the calls that name no GPU): while a call is stuck in the
 * driver, the next call for the same GPU is not made — it would only leave one more thread
 * stuck — and is reported as not answered at once. So a hung driver holds at most one thread
 * per GPU, however often it is sampled. */
#define NV_SLOT_GLOBAL 1024
static atomic_bool nv_stuck[NV_SLOT_GLOBAL + 1];
/* When the stuck call of each slot was made (monotonic ms), to say for how long it hangs. */
static _Atomic unsigned long long nv_stuck_since[NV_SLOT_GLOBAL + 1];

static int nv_slot(int gpu)
{
        return gpu >= 0 && gpu < NV_SLOT_GLOBAL ? gpu : NV_SLOT_GLOBAL;
}

int gpu_nvml_stuck_calls(void)
{
        int n = atomic_load(&nv_stuck_calls);
        return n > 0 ? n : 0;
}

bool gpu_nvml_global_stuck(void)
{
        return atomic_load(&nv_stuck[NV_SLOT_GLOBAL]);
}

/* The worker frees an abandoned job when (if ever) the driver call returns. */
static void nv_job_free_abandoned(void *p)
{
        struct nv_job *j = p;
        atomic_store(&nv_stuck[j->slot], false);
        atomic_fetch_sub(&nv_stuck_calls, 1);
        nv_job_free(p);
}

/* Run job for GPU `gpu` (-1: a call that names no GPU); returns 0 when the call returned (its
 * status in j->ret), -ETIMEDOUT when the driver did not answer, or an earlier call for the same
 * GPU is still stuck (either way the job is no longer ours: do not touch it), or another
 * negative errno (the job is still ours). */
static int nv_call(struct nv_ctx *c, struct nv_job *j, int gpu)
{
        int res;
        j->lib = c->lib;
        j->slot = nv_slot(gpu);
        if (atomic_load(&nv_stuck[j->slot])) {
                c->timeouts++;
                c->guarded++;
                nv_job_free(j);
                return -ETIMEDOUT;
        }
        int slot = j->slot;     /* j belongs to the worker once abandoned */
        atomic_store(&nv_stuck_since[slot], monotonic_ms());
        atomic_store(&nv_stuck[slot], true);
        int r = deadline_run(&c->runner, nv_job_run, j, nv_job_free_abandoned, c->timeout_ms, &res);
        if (r == -ETIMEDOUT) {
                c->timeouts++;
                c->abandoned++;
                atomic_fetch_add(&nv_stuck_calls, 1);
        } else {
                atomic_store(&nv_stuck[slot], false);
        }
        return r;
}

static struct nv_job *nv_job_new(enum nv_op op, nvmlDevice_t dev)
{
        struct nv_job *j = calloc(1, sizeof(*j));
        if (j) {
                j->op = op;
                j->dev = dev;
        }
        return j;
}

static const char *nv_strerror(const struct nv_ctx *c, nvmlReturn_t r)
{
        const char *s = c->lib.error_string ? c->lib.error_string(r) : NULL;
        return s ? s : "unknown NVML error";
}

/* ---- process lists ----------------------------------------------------------------------- */

/* Which process-list symbol and record size to use (docs/nvml-abi.md, pitfall 2):
 * _v3 took a 32-byte record on 535.43.02-535.86.x only; elsewhere 24. Without a parseable
 * version, nvitop's rule: 32 if ConfComputeMemSizeInfo exists and RunningProcessDetailList
 * does not. Then _v2 (24, unchanged since 455), then v1 (16). */
static void nv_pick_proc_api(const struct nv_lib *l, const char *driver_version, int kind,
                             void **ret_fn, unsigned *ret_stride, char *api, size_t apilen)
{
        if (l->procs[kind][0]) {
                bool r535_early;
                if (driver_version_at_least(driver_version, 1, 0, 0))
                        r535_early = driver_version_at_least(driver_version, 535, 43, 0) &&
                                     !driver_version_at_least(driver_version, 535, 87, 0);
                else
                        r535_early = l->conf_compute_mem && !l->detail_list;
                *ret_fn = (void *)l->procs[kind][0];
                *ret_stride = r535_early ? 32 : 24;
                snprintf(api, apilen, "v3/%u", *ret_stride);
        } else if (l->procs[kind][1]) {
                *ret_fn = (void *)l->procs[kind][1];
                *ret_stride = 24;
                snprintf(api, apilen, "v2");
        } else if (l->procs[kind][2]) {
                *ret_fn = (void *)l->procs[kind][2];
                *ret_stride = 16;
                snprintf(api, apilen, "v1");
        } else {
                *ret_fn = NULL;
                *ret_stride = 0;
                snprintf(api, apilen, "none");
        }
}

static void nv_add_proc(struct gpu_info *g, const struct gpu_proc *p)
{
        for (size_t i = 0; i < g->n_procs; i++) {
                struct gpu_proc *q = &g->procs[i];
                if (q->pid == p->pid && q->gpu_instance == p->gpu_instance &&
                    q->compute_instance == p->compute_instance) {
                        /* the same process seen by two lists (C+G): one allocation, not two */
                        q->kinds |= p->kinds;
                        if (p->used_known && (!q->used_known || p->used_bytes > q->used_bytes)) {
                                q->used_bytes = p->used_bytes;
                                q->used_known = true;
                        }
                        return;
                }
        }
        struct gpu_proc *n = realloc(g->procs, (g->n_procs + 1) * sizeof(*n));
        if (!n)
                return;
        g->procs = n;
        g->procs[g->n_procs++] = *p;
}

static void nv_decode_records(struct gpu_info *g, const unsigned char *rec, unsigned count,
                              unsigned stride, unsigned kind_bit, unsigned *ret_bad)
{
        for (unsigned i = 0; i < count; i++) {
                const unsigned char *r = rec + (size_t)i * stride;
                struct gpu_proc p = { .gpu_instance = GPU_INSTANCE_NONE,
                                      .compute_instance = GPU_INSTANCE_NONE, .kinds = kind_bit };
                unsigned long long used;
                memcpy(&p.pid, r, 4);
                memcpy(&used, r + 8, 8);
                if (stride >= 24) {
                        memcpy(&p.gpu_instance, r + 16, 4);
                        memcpy(&p.compute_instance, r + 20, 4);
                }
                if (p.pid == 0 || p.pid == 0xFFFFFFFFu) {
                        (*ret_bad)++;   /* a stride mismatch shows as such PIDs */
                        continue;
                }
                p.used_known = used != NVML_VALUE_NOT_AVAILABLE_ULL;
                p.used_bytes = p.used_known ? used : 0;
                nv_add_proc(g, &p);
        }
}

/* Returns 0, or -ETIMEDOUT (the driver stopped answering for this GPU). */
static int nv_query_procs(struct nv_ctx *c, const char *driver_version, nvmlDevice_t dev, struct gpu_info *g)
{
        bool any = false;
        for (int kind = 0; kind < 3; kind++) {
                void *fn;
                unsigned stride;
                char api[sizeof(g->procs_api)];
                nv_pick_proc_api(&c->lib, driver_version, kind, &fn, &stride, api, sizeof(api));
                if (!fn)
                        continue;       /* MPS lists are absent before 470: not an error */
                if (kind == 0)
                        snprintf(g->procs_api, sizeof(g->procs_api), "%s", api);
                unsigned cap = 0;
                nvmlReturn_t ret = NVML_SUCCESS;
                unsigned bad = 0;
                bool done = false;
                for (int attempt = 0; attempt < NV_PROC_TRIES && !done; attempt++) {
                        struct nv_job *j = nv_job_new(OP_PROCS, dev);
                        if (!j)
                                return -ENOMEM;
                        j->fn = fn;
                        j->count = cap;
                        if (cap) {
                                j->records = calloc(cap, NV_MAX_RECORD);
                                if (!j->records) {
                                        nv_job_free(j);
                                        return -ENOMEM;
                                }
                        }
                        int r = nv_call(c, j, (int)g->index);
                        if (r == -ETIMEDOUT) {
                                gpu_info_add_error(g, proc_kind_name[kind], -1, "driver did not answer");
                                return r;
                        }
                        if (r < 0) {
                                nv_job_free(j);
                                return r;
                        }
                        ret = j->ret;
                        if (ret == NVML_SUCCESS && cap == 0 && attempt == 0 &&
                            (!g->memory_known || g->used_bytes > 0)) {
                                /* "nothing runs" from the sizing call: a process may have
                                 * started as it was made (the same race as a list that grows
                                 * between the two calls). An empty list on a GPU whose memory
                                 * is used reads as a ghost, so it is asked once more, with room
                                 * (SUCCESS with a buffer is the list itself); an idle GPU (none
                                 * used, memory read just before) costs no second call. */
                                cap = NV_PROC_SLACK;
                        } else if (ret == NVML_SUCCESS) {
                                /* a driver must not claim more records than we gave room for */
                                unsigned n = j->count <= cap ? j->count : cap;
                                nv_decode_records(g, j->records, n, stride, proc_kind_bit[kind], &bad);
                                done = true;
                        } else if (ret == NVML_ERROR_INSUFFICIENT_SIZE && j->count < NV_PROC_MAX) {
                                cap = j->count + NV_PROC_SLACK; /* the list grew: ask again */
                        } else {
                                done = true;
                        }
                        nv_job_free(j);
                }
                if (ret == NVML_SUCCESS) {
                        any = true;
                        if (bad)
                                gpu_info_add_error(g, proc_kind_name[kind], NVML_SUCCESS,
                                                   "implausible process records dropped (PID 0 or -1)");
                } else if (ret == NVML_ERROR_INSUFFICIENT_SIZE) {
                        gpu_info_add_error(g, proc_kind_name[kind], ret, "process list kept growing");
                } else if (ret == NVML_ERROR_GPU_IS_LOST) {
                        g->status = GPU_LOST;
                        return 0;
                } else {
                        gpu_info_add_error(g, proc_kind_name[kind], ret, nv_strerror(c, ret));
                }
        }
        g->procs_known = any;
        return 0;
}

/* ---- one GPU ----------------------------------------------------------------------------- */

/* Run a simple query; returns the NVML status, or -1 on a missed deadline (recorded). */
static int nv_simple(struct nv_ctx *c, struct gpu_info *g, struct nv_job *j, const char *what)
{
        if (!j)
                return NVML_ERROR_MEMORY;
        int r = nv_call(c, j, (int)g->index);
        if (r == -ETIMEDOUT) {
                gpu_info_add_error(g, what, -1, "driver did not answer");
                return -1;
        }
        return r < 0 ? NVML_ERROR_MEMORY : j->ret; /* the caller frees j */
}

static void nv_note(struct nv_ctx *c, struct gpu_info *g, const char *what, int ret)
{
        if (ret == NVML_ERROR_GPU_IS_LOST)
                g->status = GPU_LOST;
        else if (ret != NVML_SUCCESS && ret != -1)
                gpu_info_add_error(g, what, ret, nv_strerror(c, ret));
}

#define NV_TIMED_OUT(ret) ((ret) == -1)

/* Run a MIG query's job: its NVML status; -1 on a missed deadline (recorded; the job then
 * belongs to the worker); NVML_ERROR_MEMORY when it could not run. Unless -1, the caller still
 * owns j (NULL is fine) and frees it. */
static int nv_mig_call(struct nv_ctx *c, struct gpu_info *g, struct nv_job *j)
{
        if (!j)
                return NVML_ERROR_MEMORY;
        int r = nv_call(c, j, (int)g->index);
        if (r == -ETIMEDOUT) {
                gpu_info_add_error(g, "mig", -1, "driver did not answer");
                return -1;
        }
        return r < 0 ? NVML_ERROR_MEMORY : j->ret;
}

/* One call on a MIG device or GPU handle dev: op with index idx; the job comes back (or NULL,
 * with *ret -1 on a missed deadline). */
static struct nv_job *nv_mig_job(struct nv_ctx *c, struct gpu_info *g, enum nv_op op, nvmlDevice_t dev,
                                 unsigned idx, int *ret)
{
        struct nv_job *j = nv_job_new(op, dev);
        if (j)
                j->idx = idx;
        *ret = nv_mig_call(c, g, j);
        return NV_TIMED_OUT(*ret) ? NULL : j;
}

/* The MIG devices of a GPU in MIG mode, each with its ids and its own memory (per-instance
 * accounting: "per-instance information can be queried by using specific MIG device handles",
 * nvml.h). Indexes without a device (NOT_FOUND) are skipped. Returns 0 or -ETIMEDOUT. */
static int nv_query_mig(struct nv_ctx *c, nvmlDevice_t dev, struct gpu_info *g)
{
        int ret;
        if (!c->lib.mig_count || !c->lib.mig_handle || !c->lib.mig_gi || !c->lib.mig_ci)
                return 0;
        struct nv_job *j = nv_mig_job(c, g, OP_MIG_COUNT, dev, 0, &ret);
        if (NV_TIMED_OUT(ret))
                return -ETIMEDOUT;
        unsigned count = ret == NVML_SUCCESS ? j->u1 : 0;
        nv_job_free(j);
        for (unsigned i = 0; i < count && g->n_mig < GPU_MAX_MIG; i++) {
                struct gpu_mig_device m = { .gpu_instance = GPU_INSTANCE_NONE, .compute_instance = GPU_INSTANCE_NONE };
                j = nv_mig_job(c, g, OP_MIG_HANDLE, dev, i, &ret);
                if (NV_TIMED_OUT(ret))
                        return -ETIMEDOUT;
                nvmlDevice_t md = ret == NVML_SUCCESS ? j->dev : NULL;
                nv_job_free(j);
                if (!md)
                        continue;
                static const enum nv_op ops[] = { OP_MIG_GI, OP_MIG_CI, OP_MEM_V2, OP_MEM_V1 };
                for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
                        if ((ops[k] == OP_MEM_V2 && !c->lib.mem_v2) || (ops[k] == OP_MEM_V1 && (!c->lib.mem_v1 || m.memory_known)))
                                continue;
                        j = nv_mig_job(c, g, ops[k], md, 0, &ret);
                        if (NV_TIMED_OUT(ret))
                                return -ETIMEDOUT;
                        if (ret == NVML_SUCCESS && ops[k] == OP_MIG_GI)
                                m.gpu_instance = j->u1;
                        else if (ret == NVML_SUCCESS && ops[k] == OP_MIG_CI)
                                m.compute_instance = j->u1;
                        else if (ret == NVML_SUCCESS && ops[k] == OP_MEM_V2) /* no reservation of its own */
                                m = (struct gpu_mig_device){ m.gpu_instance, m.compute_instance, true, j->mem2.total,
                                                             j->mem2.used };
                        else if (ret == NVML_SUCCESS && ops[k] == OP_MEM_V1)
                                m = (struct gpu_mig_device){ m.gpu_instance, m.compute_instance, true, j->mem.total,
                                                             j->mem.used };
                        nv_job_free(j);
                }
                g->mig[g->n_mig++] = m;
        }
        return 0;
}

/* Row remapping, retired pages, volatile uncorrected ECC (doctor). NOT_SUPPORTED and the
 * like leave a field unknown; RESET_REQUIRED is itself the finding. Returns 0 or -ETIMEDOUT. */
static int nv_query_health(struct nv_ctx *c, nvmlDevice_t dev, struct gpu_info *g)
{
        static const struct {
                enum nv_op op;
                const char *what;
        } qs[] = { { OP_REMAP, "remapped_rows" }, { OP_RETIRED, "retired_pages" }, { OP_ECC, "ecc" } };
        struct gpu_health *h = &g->health;
        h->queried = true;
        for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
                if ((qs[i].op == OP_REMAP && !c->lib.remapped_rows) || (qs[i].op == OP_RETIRED && !c->lib.retired_pending) ||
                    (qs[i].op == OP_ECC && !c->lib.ecc_total))
                        continue;
                struct nv_job *j = nv_job_new(qs[i].op, dev);
                int ret = nv_simple(c, g, j, qs[i].what);
                if (NV_TIMED_OUT(ret))
                        return -ETIMEDOUT;
                if (ret == NVML_SUCCESS && qs[i].op == OP_REMAP) {
                        h->remap_pending = j->u3 != 0;
                        h->remap_failed = j->u4 != 0;
                } else if (ret == NVML_SUCCESS && qs[i].op == OP_RETIRED) {
                        h->retired_pending = j->u1 == NVML_FEATURE_ENABLED;
                } else if (ret == NVML_SUCCESS && qs[i].op == OP_ECC) {
                        h->ecc_uncorrected = j->ull > (unsigned long long)LLONG_MAX ? LLONG_MAX : (long long)j->ull;
                } else if (ret == NVML_ERROR_RESET_REQUIRED) {
                        h->reset_required = true;
                } else if (ret != NVML_ERROR_NOT_SUPPORTED) {
                        nv_note(c, g, qs[i].what, ret);
                }
                nv_job_free(j);
        }
        return 0;
}

/* The per-process samples of the last 2 s: longer than top's usual interval, so that a sample
 * period of the driver's (1/6 s to 1 s) always falls in it */
#define NV_PROC_UTIL_WINDOW_US 2000000ull

/* top's figures (struct gpu_telemetry), in one call under the deadline. Returns 0 or -ETIMEDOUT. */
static int nv_query_telemetry(struct nv_ctx *c, nvmlDevice_t dev, struct gpu_info *g)
{
        struct nv_job *j = nv_job_new(OP_TELEMETRY, dev);
        if (!j)
                return 0;
        struct timeval tv;
        gettimeofday(&tv, NULL);
        unsigned long long now_us = (unsigned long long)tv.tv_sec * 1000000ull + (unsigned long long)tv.tv_usec;
        j->last_seen_us = now_us > NV_PROC_UTIL_WINDOW_US ? now_us - NV_PROC_UTIL_WINDOW_US : 0;
        int r = nv_call(c, j, (int)g->index);
        if (r == -ETIMEDOUT)
                return -ETIMEDOUT;
        if (r == 0)
                g->tel = j->tel;
        nv_job_free(j);
        return 0;
}

/* A GPU with a call still stuck in the driver is not asked anything (it would only leave one
 * more thread stuck there, and its answers would wait behind that call): it is reported not
 * inspected at once, with how long its call has hung. The other GPUs are asked as usual. */
static bool nv_gpu_skipped(struct nv_ctx *c, unsigned idx, struct gpu_info *g)
{
        int slot = nv_slot((int)idx);
        if (!atomic_load(&nv_stuck[slot]))
                return false;
        unsigned long long since = atomic_load(&nv_stuck_since[slot]), now = monotonic_ms();
        c->timeouts++;
        c->guarded++;
        g->status = GPU_TIMEOUT;
        snprintf(g->status_message, sizeof(g->status_message),
                 "GPU %u: not inspected: a call on it has not returned for %.0f s (the driver hangs on this GPU)", idx,
                 now > since ? (double)(now - since) / 1000.0 : 0.0);
        gpu_info_add_error(g, "handle", -1, "not asked: an earlier call on this GPU is still stuck in the driver");
        return true;
}

/* What a GPU's report says before any answer: every optional fact unknown. */
static void nv_gpu_unknown(unsigned idx, struct gpu_info *g)
{
        g->index = idx;
        g->persistence = -1;
        g->mig_mode = -1;
        g->mig_pending_mode = -1;
        g->health = (struct gpu_health){ .remap_pending = -1, .remap_failed = -1, .retired_pending = -1,
                                         .ecc_uncorrected = -1, .mig_pending = -1 };
        gpu_telemetry_unknown(&g->tel);
}

/* GPU idx's handle in *ret_dev. Returns 0; -ETIMEDOUT on a missed deadline; -EIO when there is
 * none (g's status and message say why). */
static int nv_query_handle(struct nv_ctx *c, unsigned idx, struct gpu_info *g, nvmlDevice_t *ret_dev)
{
        struct nv_job *j = nv_job_new(OP_HANDLE, NULL);
        if (!j) {
                g->status = GPU_ERROR;
                snprintf(g->status_message, sizeof(g->status_message), "out of memory");
                return -EIO;
        }
        j->idx = idx;
        int ret = nv_simple(c, g, j, "handle");
        if (NV_TIMED_OUT(ret))
                return -ETIMEDOUT;
        nvmlDevice_t dev = j->dev;
        nv_job_free(j);
        if (ret != NVML_SUCCESS) {
                g->status = ret == NVML_ERROR_GPU_IS_LOST ? GPU_LOST : GPU_ERROR;
                snprintf(g->status_message, sizeof(g->status_message), "%s", nv_strerror(c, ret));
                return -EIO;
        }
        *ret_dev = dev;
        return 0;
}

/* A string of the GPU's (op: its name or UUID) into out. Returns 0 or -ETIMEDOUT. */
static int nv_query_string(struct nv_ctx *c, nvmlDevice_t dev, struct gpu_info *g, enum nv_op op, const char *what,
                           char *out, size_t outlen)
{
        struct nv_job *j = nv_job_new(op, dev);
        int ret = nv_simple(c, g, j, what);
        if (NV_TIMED_OUT(ret))
                return -ETIMEDOUT;
        if (ret == NVML_SUCCESS)
                snprintf(out, outlen, "%s", j->str);
        nv_note(c, g, what, ret);
        nv_job_free(j);
        return 0;
}

/* The PCI bus id, by the newest of the three calls the library has. Returns 0 or -ETIMEDOUT. */
static int nv_query_pci(struct nv_ctx *c, nvmlDevice_t dev, struct gpu_info *g)
{
        void *pci_fn = c->lib.pci_v3 ? (void *)c->lib.pci_v3 : c->lib.pci_v2 ? (void *)c->lib.pci_v2 : (void *)c->lib.pci_v1;
        if (!pci_fn)
                return 0;
        struct nv_job *j = nv_job_new(OP_PCI, dev);
        if (j)
                j->fn = pci_fn;
        int ret = nv_simple(c, g, j, "pci");
        if (NV_TIMED_OUT(ret))
                return -ETIMEDOUT;
        if (ret == NVML_SUCCESS) {
                char id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE + 1];
                /* busId[32] is only filled by _v3; busIdLegacy is at offset 0 in every layout */
                if (pci_fn == (void *)c->lib.pci_v3 && j->pci.busId[0])
                        snprintf(id, sizeof(id), "%.*s", (int)sizeof(j->pci.busId), j->pci.busId);
                else
                        snprintf(id, sizeof(id), "%.*s", (int)sizeof(j->pci.busIdLegacy), j->pci.busIdLegacy);
                if (pci_bus_id_normalize(id, g->pci_bus_id, sizeof(g->pci_bus_id)) < 0)
                        snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%04x:%02x:%02x.0",
                                 j->pci.domain & 0xffff, j->pci.bus & 0xff, j->pci.device & 0x1f);
        }
        nv_note(c, g, "pci", ret);
        nv_job_free(j);
        return 0;
}

/* What names the GPU: its name, UUID, device minor and PCI bus id, each where the library has
 * the call. Returns 0 or -ETIMEDOUT. */
static int nv_query_names(struct nv_ctx *c, nvmlDevice_t dev, struct gpu_info *g)
{
        if (c->lib.name && nv_query_string(c, dev, g, OP_NAME, "name", g->name, sizeof(g->name)) == -ETIMEDOUT)
                return -ETIMEDOUT;
        if (c->lib.uuid && nv_query_string(c, dev, g, OP_UUID, "uuid", g->uuid, sizeof(g->uuid)) == -ETIMEDOUT)
                return -ETIMEDOUT;
        if (c->lib.minor) {
                struct nv_job *j = nv_job_new(OP_MINOR, dev);
                int ret = nv_simple(c, g, j, "minor");
                if (NV_TIMED_OUT(ret))
                        return -ETIMEDOUT;
                if (ret == NVML_SUCCESS) {
                        g->minor = j->u1;
                        g->minor_known = true;
                }
                nv_note(c, g, "minor", ret);
                nv_job_free(j);
        }
        return nv_query_pci(c, dev, g);
}

/* memory: v2 (reserved apart; used = what nvidia-smi shows), else v1 (used includes it).
 * Returns 0 or -ETIMEDOUT. */
static int nv_query_memory(struct nv_ctx *c, nvmlDevice_t dev, struct gpu_info *g)
{
        struct nv_job *j;
        int ret;
        if (c->lib.mem_v2) {
                j = nv_job_new(OP_MEM_V2, dev);
                ret = nv_simple(c, g, j, "memory");
                if (NV_TIMED_OUT(ret))
                        return -ETIMEDOUT;
                if (ret == NVML_SUCCESS) {
                        g->memory_known = true;
                        g->memory_api = 2;
                        g->total_bytes = j->mem2.total;
                        g->reserved_bytes = j->mem2.reserved;
                        g->used_bytes = j->mem2.used;
                        g->free_bytes = j->mem2.free;
                } else if (ret != NVML_ERROR_GPU_IS_LOST) {
                        gpu_info_add_error(g, "memory_v2", ret, nv_strerror(c, ret));
                } else {
                        g->status = GPU_LOST;
                }
                nv_job_free(j);
        }
        if (!g->memory_known && c->lib.mem_v1 && g->status != GPU_LOST) {
                j = nv_job_new(OP_MEM_V1, dev);
                ret = nv_simple(c, g, j, "memory");
                if (NV_TIMED_OUT(ret))
                        return -ETIMEDOUT;
                if (ret == NVML_SUCCESS) {
                        g->memory_known = true;
                        g->memory_api = 1;
                        g->total_bytes = j->mem.total;
                        g->used_bytes = j->mem.used;
                        g->free_bytes = j->mem.free;
                }
                nv_note(c, g, "memory", ret);
                nv_job_free(j);
        }
        return 0;
}

/* The persistence and MIG modes. Returns 0 or -ETIMEDOUT. */
static int nv_query_modes(struct nv_ctx *c, nvmlDevice_t dev, struct gpu_info *g)
{
        struct nv_job *j;
        int ret;
        if (c->lib.persistence) {
                j = nv_job_new(OP_PERSISTENCE, dev);
                ret = nv_simple(c, g, j, "persistence");
                if (NV_TIMED_OUT(ret))
                        return -ETIMEDOUT;
                if (ret == NVML_SUCCESS)
                        g->persistence = j->u1 == NVML_FEATURE_ENABLED;
                nv_note(c, g, "persistence", ret);
                nv_job_free(j);
        }
        if (c->lib.mig_mode) {
                j = nv_job_new(OP_MIG, dev);
                ret = nv_simple(c, g, j, "mig");
                if (NV_TIMED_OUT(ret))
                        return -ETIMEDOUT;
                if (ret == NVML_SUCCESS) {
                        g->mig_mode = j->u1 == NVML_DEVICE_MIG_ENABLE;
                        g->mig_pending_mode = j->u2 == NVML_DEVICE_MIG_ENABLE;
                        g->health.mig_pending = g->mig_mode != g->mig_pending_mode;
                } else if (ret == NVML_ERROR_NOT_SUPPORTED) {
                        g->mig_mode = g->mig_pending_mode = 0; /* a GPU without MIG is a GPU with MIG off */
                        g->health.mig_pending = 0;
                } else {
                        nv_note(c, g, "mig", ret);
                }
                nv_job_free(j);
        }
        return 0;
}

/* The queries after the GPU's names, memory and modes: processes, MIG devices, health and
 * telemetry, each where it was asked for. Returns 0, -ETIMEDOUT, or -ENODEV when the GPU was
 * found lost. */
static int nv_query_rest(struct nv_ctx *c, const char *driver_version, nvmlDevice_t dev, struct gpu_info *g)
{
        if (nv_query_procs(c, driver_version, dev, g) == -ETIMEDOUT)
                return -ETIMEDOUT;
        if (g->status == GPU_LOST)
                return -ENODEV;
        if (g->mig_mode == 1 && nv_query_mig(c, dev, g) == -ETIMEDOUT)
                return -ETIMEDOUT;
        if (c->health && nv_query_health(c, dev, g) == -ETIMEDOUT)
                return -ETIMEDOUT;
        if (c->telemetry && nv_query_telemetry(c, dev, g) == -ETIMEDOUT)
                return -ETIMEDOUT;
        /* MIG: a GPU's own lists give the aggregate "only if the caller has appropriate
         * privileges" (nvml.h); the rest may get NO_PERMISSION (no list: said above) or an
         * empty list, which then proves nothing (docs/verdicts.md, MIG) */
        if (g->mig_mode == 1 && g->procs_known && g->n_procs == 0 && geteuid() != 0) {
                g->procs_known = false;
                gpu_info_add_error(g, "processes", NVML_SUCCESS,
                                   "MIG mode: an empty list given to a caller that is not root proves nothing");
        }
        return 0;
}

static void nv_collect_gpu(struct nv_ctx *c, const char *driver_version, unsigned idx, struct gpu_info *g)
{
        nv_gpu_unknown(idx, g);
        if (nv_gpu_skipped(c, idx, g))
                return;
        nvmlDevice_t dev = NULL;
        int r = nv_query_handle(c, idx, g, &dev);
        if (r == -ETIMEDOUT)
                goto timeout;
        if (r < 0)
                return;
        if (!c->memory_only && nv_query_names(c, dev, g) == -ETIMEDOUT)
                goto timeout;
        if (nv_query_memory(c, dev, g) == -ETIMEDOUT)
                goto timeout;
        if (g->status == GPU_LOST)
                goto lost;
        if (!c->memory_only && nv_query_modes(c, dev, g) == -ETIMEDOUT)
                goto timeout;
        if (g->status == GPU_LOST)
                goto lost;
        if (c->memory_only)
                return;
        r = nv_query_rest(c, driver_version, dev, g);
        if (r == -ETIMEDOUT)
                goto timeout;
        if (r == -ENODEV)
                goto lost;
        return;

lost:
        snprintf(g->status_message, sizeof(g->status_message),
                 "GPU %u: GPU is lost (NVML_ERROR_GPU_IS_LOST): fallen off the bus or otherwise inaccessible", idx);
        return;
timeout:
        g->status = GPU_TIMEOUT;
        snprintf(g->status_message, sizeof(g->status_message), "GPU %u: driver did not answer within %.3g s",
                 idx, c->timeout_ms / 1000.0);
}

/* ---- names from the kernel module -------------------------------------------------------- */

/* The module's files are answered by the driver too (the UUID and VBIOS lines ask it), so they
 * are read under the deadline, and not again while an earlier read is stuck. */
static atomic_bool nv_procfs_stuck;

struct nv_procfs_job {
        char dir[4096];
        struct gpu_procfs_entry e[GPU_PROCFS_MAX];
        int n;
};

static int nv_procfs_run(void *p)
{
        struct nv_procfs_job *j = p;
        j->n = gpu_procfs_read(j->dir[0] ? j->dir : NULL, j->e, GPU_PROCFS_MAX);
        return 0;
}

static void nv_procfs_free_abandoned(void *p)
{
        atomic_store(&nv_procfs_stuck, false);
        free(p);
}

/* A GPU NVML could not name (its handle is lost, or it was skipped for a stuck call) gets its
 * bus id and UUID from /proc/driver/nvidia/gpus, so that --gpu BUS-ID or UUID still finds it. */
static void nv_fill_from_procfs(struct nv_ctx *c, const struct gpu_opts *o, struct gpu_report *rep)
{
        bool unnamed = false;
        if (c->memory_only)
                return; /* names are not asked for: nothing is missing */
        for (size_t i = 0; i < rep->n_gpus; i++)
                unnamed |= !rep->gpus[i].pci_bus_id[0];
        if (!unnamed || atomic_load(&nv_procfs_stuck))
                return;
        struct nv_procfs_job *j = calloc(1, sizeof(*j));
        if (!j)
                return;
        if (o->driver_proc_dir)
                snprintf(j->dir, sizeof(j->dir), "%s", o->driver_proc_dir);
        int res;
        atomic_store(&nv_procfs_stuck, true);
        int r = deadline_run(&c->runner, nv_procfs_run, j, nv_procfs_free_abandoned, c->timeout_ms, &res);
        if (r == -ETIMEDOUT)
                return; /* the worker frees j */
        atomic_store(&nv_procfs_stuck, false);
        if (r == 0 && j->n > 0)
                gpu_procfs_fill(rep, j->e, (size_t)j->n);
        free(j);
}

/* ---- the backend ------------------------------------------------------------------------ */

static int nv_open(const struct gpu_opts *o, struct gpu_report *rep, struct nv_lib *lib)
{
        const char *cands[2] = { "libnvidia-ml.so.1", "libnvidia-ml.so" };
        int n = 2;
        if (o->nvml_lib) {
                cands[0] = o->nvml_lib;
                n = 1;
        }
        const char *err = NULL;
        for (int i = 0; i < n && !lib->handle; i++) {
                lib->handle = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
                if (lib->handle)
                        snprintf(rep->library, sizeof(rep->library), "%s", cands[i]);
                else
                        err = dlerror();
        }
        if (!lib->handle) {
                if (o->nvml_lib)
                        snprintf(rep->error, sizeof(rep->error), "cannot load NVML library %.100s: %.120s", o->nvml_lib,
                                 err ? err : "unknown error");
                else
                        snprintf(rep->error, sizeof(rep->error),
                                 "no NVIDIA driver on this host (libnvidia-ml.so.1 not found)");
                return -ENOENT;
        }
        nv_resolve(lib);
        if ((!lib->init_v2 && !lib->init_v1) || (!lib->count_v2 && !lib->count_v1) ||
            (!lib->handle_v2 && !lib->handle_v1) || !lib->shutdown) {
                snprintf(rep->error, sizeof(rep->error), "%.200s is not a usable NVML library (nvmlInit missing)",
                         rep->library);
                dlclose(lib->handle);
                lib->handle = NULL;
                return -ENOENT;
        }
        return 0;
}

/* The file the library was loaded from, resolved (libnvidia-ml.so.550.54.15 names the
 * version), else the name it was opened by. */
static void nv_library_path(const struct nv_lib *lib, const char *name, char *out, size_t outlen)
{
        Dl_info info;
        char real[4096];
        if (lib->init_v1 && dladdr(*(void **)&lib->init_v1, &info) && info.dli_fname &&
            realpath(info.dli_fname, real))
                snprintf(out, outlen, "%.150s", real);
        else if (lib->init_v2 && dladdr(*(void **)&lib->init_v2, &info) && info.dli_fname && realpath(info.dli_fname, real))
                snprintf(out, outlen, "%.150s", real);
        else
                snprintf(out, outlen, "%s", name);
}

/* A version string from a call that names no GPU (op), into out; out is left as it is when
 * the call fails. */
static void nv_query_version(struct nv_ctx *c, enum nv_op op, char *out, size_t outlen)
{
        struct nv_job *j = nv_job_new(op, NULL);
        int r = j ? nv_call(c, j, -1) : -ENOMEM;
        if (r == 0 && j->ret == NVML_SUCCESS)
                snprintf(out, outlen, "%.79s", j->str);
        if (r != -ETIMEDOUT)
                nv_job_free(j); /* a job that missed its deadline is the worker's */
}

/* Why nvmlInit failed (ir), in rep->error; lib_version is the library's own version. */
static void nv_init_error(struct nv_ctx *c, struct gpu_report *rep, nvmlReturn_t ir, const char *lib_version)
{
        if (ir == NVML_ERROR_DRIVER_NOT_LOADED) {
                /* the library is installed, the kernel module is not loaded: not the same
                 * as a host without a driver, and it has its own next steps */
                rep->module_not_loaded = true;
                snprintf(rep->nvml_version, sizeof(rep->nvml_version), "%s", lib_version);
                char where[160];
                nv_library_path(&c->lib, rep->library, where, sizeof(where));
                snprintf(rep->error, sizeof(rep->error),
                         "NVIDIA driver library found (%.300s%s%.30s) but the kernel module is not loaded: "
                         "`sudo modprobe nvidia`; after a driver upgrade, reboot; if it fails, `dkms status`",
                         where, lib_version[0] ? ", NVML " : "", lib_version);
        }
        else if (ir == NVML_ERROR_LIB_RM_VERSION_MISMATCH &&
                 snprintf(rep->nvml_version, sizeof(rep->nvml_version), "%s", lib_version) >= 0)
                snprintf(rep->error, sizeof(rep->error),
                         "NVML library and kernel driver versions differ (driver upgraded without reboot?)");
        else
                snprintf(rep->error, sizeof(rep->error), "NVML could not start: %s", nv_strerror(c, ir));
}

/* nvmlInit under the deadline. Returns 0 when NVML started, else -1 (rep->error says why when
 * it can). */
static int nv_init(struct nv_ctx *c, struct gpu_report *rep, const char *lib_version)
{
        struct nv_job *j = c->timeouts ? NULL : nv_job_new(OP_INIT, NULL);
        int r = j ? nv_call(c, j, -1) : c->timeouts ? -ETIMEDOUT : -ENOMEM;
        if (r == -ETIMEDOUT) {
                if (c->guarded)
                        snprintf(rep->error, sizeof(rep->error),
                                 "the NVIDIA driver did not answer: an earlier call is still stuck in it (nvmlInit)");
                else
                        snprintf(rep->error, sizeof(rep->error), "the NVIDIA driver did not answer within %.3g s (nvmlInit)",
                                 c->timeout_ms / 1000.0);
                return -1;
        }
        if (r < 0) {
                snprintf(rep->error, sizeof(rep->error), "nvmlInit was not called: no thread could be started for it (%s)",
                         strerror(-r));
                nv_job_free(j);
                return -1;
        }
        nvmlReturn_t ir = j->ret;
        nv_job_free(j);
        if (ir != NVML_SUCCESS) {
                nv_init_error(c, rep, ir, lib_version);
                return -1;
        }
        return 0;
}

/* The driver's and NVML's versions, and from the driver's whether PIDs come translated. */
static void nv_driver_facts(struct nv_ctx *c, struct gpu_report *rep)
{
        if (c->lib.driver_version)
                nv_query_version(c, OP_DRIVER_VERSION, rep->driver_version, sizeof(rep->driver_version));
        if (c->lib.nvml_version && !c->timeouts)
                nv_query_version(c, OP_NVML_VERSION, rep->nvml_version, sizeof(rep->nvml_version));
        /* 535.113.01 and later translate PIDs into the caller's namespace */
        if (rep->driver_version[0] && driver_version_at_least(rep->driver_version, 1, 0, 0))
                rep->pid_mode = driver_version_at_least(rep->driver_version, 535, 113, 1) ? GPU_PID_TRANSLATED
                                                                                           : GPU_PID_HOST;
}

/* How many GPUs the driver has, in *ret_count. Returns 0, or -1 with rep->error set. */
static int nv_count(struct nv_ctx *c, struct gpu_report *rep, unsigned *ret_count)
{
        struct nv_job *j = c->timeouts ? NULL : nv_job_new(OP_COUNT, NULL);
        int r = j ? nv_call(c, j, -1) : -ETIMEDOUT;
        if (r < 0) {
                if (r != -ETIMEDOUT)
                        free(j);
                snprintf(rep->error, sizeof(rep->error), "the NVIDIA driver did not answer within %.3g s",
                         c->timeout_ms / 1000.0);
                return -1;
        }
        unsigned count = j->u1;
        nvmlReturn_t cr = j->ret;
        nv_job_free(j);
        if (cr != NVML_SUCCESS) {
                snprintf(rep->error, sizeof(rep->error), "NVML could not count GPUs: %s", nv_strerror(c, cr));
                return -1;
        }
        *ret_count = count;
        return 0;
}

/* Each of rep's GPUs in turn; once two in a row missed their deadline, the rest are not asked. */
static void nv_collect_gpus(struct nv_ctx *c, struct gpu_report *rep)
{
        /* GPUs in a row whose calls missed their deadline now (a GPU skipped for a call stuck
         * earlier cost nothing and does not count) */
        unsigned consecutive_timeouts = 0;
        for (unsigned i = 0; i < rep->n_gpus; i++) {
                struct gpu_info *g = &rep->gpus[i];
                if (consecutive_timeouts >= 2 && !atomic_load(&nv_stuck[nv_slot((int)i)])) {
                        /* the driver is wedged as a whole: do not spend a deadline per call on each GPU */
                        g->index = i;
                        g->persistence = g->mig_mode = -1;
                        g->status = GPU_TIMEOUT;
                        snprintf(g->status_message, sizeof(g->status_message),
                                 "GPU %u: not queried: the driver stopped answering on earlier GPUs", i);
                        continue;
                }
                unsigned abandoned = c->abandoned;
                nv_collect_gpu(c, rep->driver_version, i, g);
                if (c->abandoned > abandoned)
                        consecutive_timeouts++;
                else if (g->status != GPU_TIMEOUT)
                        consecutive_timeouts = 0;
        }
}

/* The end of a collection: NVML's shutdown when it may be, the deadline's worker, the library;
 * frees c. */
static void nv_close(struct nv_ctx *c, bool initialised)
{
        /* No shutdown after a call this collection abandoned: the call may still be running in
         * the library, and the init reference it keeps is what keeps the library up under it.
         * A GPU skipped for a call stuck earlier made no call: the init of that earlier
         * collection still stands, so this one's is given back. */
        if (initialised && !c->abandoned) {
                struct nv_job *j = nv_job_new(OP_SHUTDOWN, NULL);
                if (j && nv_call(c, j, -1) != -ETIMEDOUT)
                        nv_job_free(j);
        }
        deadline_runner_done(&c->runner);
        /* a worker stuck inside the library must keep its code mapped: only dlclose when none is */
        if (c->lib.handle && !c->runner.abandoned)
                dlclose(c->lib.handle);
        free(c);
}

static int nvml_collect(const struct gpu_opts *o, struct gpu_report **ret)
{
        struct gpu_report *rep = calloc(1, sizeof(*rep));
        struct nv_ctx *c = calloc(1, sizeof(*c));
        if (!rep || !c) {
                free(rep);
                free(c);
                return -ENOMEM;
        }
        struct timeval tv;
        gettimeofday(&tv, NULL);
        rep->sample_time = (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
        snprintf(rep->backend, sizeof(rep->backend), "nvml");
        c->timeout_ms = o->timeout_ms ? o->timeout_ms : 5000;
        c->memory_only = o->memory_only;
        c->health = o->health && !o->memory_only;
        c->telemetry = o->telemetry && !o->memory_only;
        bool initialised = false;

        if (nv_open(o, rep, &c->lib) < 0) {
                snprintf(rep->backend, sizeof(rep->backend), "none");
                goto out;
        }
        /* the library's own version, which NVML gives before nvmlInit (and without a kernel
         * module): it says which driver is installed when the module is not loaded */
        char lib_version[80] = "";
        if (c->lib.nvml_version)
                nv_query_version(c, OP_NVML_VERSION, lib_version, sizeof(lib_version));
        rep->library_found = true;
        if (nv_init(c, rep, lib_version) < 0)
                goto out;
        initialised = true;
        rep->driver_present = true;
        nv_driver_facts(c, rep);

        unsigned count;
        if (nv_count(c, rep, &count) < 0)
                goto out;
        if (count > 1024)
                count = 1024;
        rep->gpus = calloc(count ? count : 1, sizeof(*rep->gpus));
        if (!rep->gpus) {
                gpu_report_free(rep);
                rep = NULL;
                goto out;
        }
        rep->n_gpus = count;
        nv_collect_gpus(c, rep);
        nv_fill_from_procfs(c, o, rep);

out:
        if (rep)
                rep->timed_out = c->timeouts > 0;
        nv_close(c, initialised);
        if (!rep)
                return -ENOMEM;
        *ret = rep;
        return 0;
}

const struct gpu_backend gpu_backend_nvml = {
        .name = "nvml",
        .collect = nvml_collect,
};
