/* nvml_sim: the stand-in libnvidia-ml.so.1 of the simulated driver.
 *
 * The same C ABI and symbol names as NVIDIA's library (src/collect/nvml_abi.h), built once
 * per driver generation (sim/CMakeLists.txt): which symbols exist cannot change at run
 * time, so each variant is its own library. It reads the simulated host named by
 * $GHOSTVRAM_SIM (a directory made by `ghostvram sim init`) on every call.
 * The model, each rule and its source: docs/simulator.md.
 *
 * Compile-time switches: SIM_VARIANT (name), SIM_V3_STRIDE (0: no _v3 symbols, 24, 32),
 * SIM_HAVE_V2API (the _v2 init/count/handle/PCI calls, PCI _v3, MIG mode,
 * EventSetWait_v2; absent in the legacy set), SIM_HAVE_PROCS_V2, SIM_HAVE_MPS,
 * SIM_HAVE_MEMORY_V2, SIM_HAVE_CONFCOMPUTE, SIM_HAVE_DETAIL_LIST; SIM_UNLOADABLE (tests only:
 * built without -z nodelete, and a hung call wakes every 10 ms, so a dlclose under it crashes).
 *
 * Where NVIDIA's own library was observed (scripts/fetch-nvidia-userspace, the oracle tests),
 * the stand-in does what it does: the NVML version answers before init; init is checked
 * before arguments; nvmlShutdown without init succeeds; the error strings are its strings. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect/nvml_abi.h"
#include "simstate.h"

#ifndef SIM_VARIANT
#error "SIM_VARIANT must name the driver variant"
#endif

#ifndef SIM_UNLOADABLE
#define SIM_UNLOADABLE 0
#endif

#define SIM_API __attribute__((visibility("default")))

/* The exported functions are the ABI: their declarations are the function-pointer types of
 * nvml_abi.h, and no header of ours may name them (a client must dlsym them). */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

/* nvmlConfComputeMemSizeInfo_t (535.43.02+): only its presence matters to clients */
typedef struct {
        unsigned long long protectedMemSizeKib;
        unsigned long long unprotectedMemSizeKib;
} sim_conf_compute_mem_t;

struct nvmlDevice_st {
        unsigned index;
        unsigned gi;                    /* a MIG device handle: its GPU instance; else SIM_GI_NONE */
};

struct nvmlEventSet_st {
        unsigned long long types[SIM_MAX_GPUS];
};

/* Everything below is guarded by sim_mu. */
static pthread_mutex_t sim_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned sim_refs;
static struct sim_client sim_cl;
static struct sim_knobs sim_k;
static struct sim_observation sim_obs;
static struct sim_proc sim_procs[SIM_MAX_CONTEXTS];
static struct nvmlDevice_st sim_devs[SIM_MAX_GPUS];
static struct nvmlDevice_st sim_migs[SIM_MAX_GPUS][SIM_MAX_MIG]; /* MIG device handles */
static const struct sim_variant *sim_var;

/* A wedged driver: the call never comes back (until the process is killed). */
static void __attribute__((noreturn)) sim_hang(void)
{
#if SIM_UNLOADABLE
        /* return into this library's code often: if a caller unloads it, this thread crashes */
        for (;;) {
                struct timespec ts = { 0, 10 * 1000000L };
                nanosleep(&ts, NULL);
        }
#else
        for (;;)
                sleep(3600);
#endif
}

/* A hung call, entered with sim_mu held. Under hang_holds_lock it takes the driver's API lock
 * first, as a call stuck in the kernel holding the RM lock does: every later call of any
 * process, on any GPU, then waits in sim_api_wait (an orphaned lock hangs all NVML calls:
 * open-gpu-kernel-modules#1333; a process stuck under the RM API lock blocks every other that
 * touches the GPU: #968). */
static void __attribute__((noreturn)) sim_hang_unlock(const char *dir)
{
        if (sim_k.hang_holds_lock)
                (void)sim_api_lock(dir, true);
        pthread_mutex_unlock(&sim_mu);
        sim_hang();
}

/* Before any work, a call waits while a hung call holds the API lock (knobs loaded). */
static void sim_api_wait(const char *dir)
{
        if (sim_k.hang_holds_lock)
                (void)sim_api_lock(dir, false);
}

static nvmlReturn_t sim_leave(nvmlReturn_t r)
{
        pthread_mutex_unlock(&sim_mu);
        return r;
}

/* A NULL output argument: the real library checks init first (observed on 535.261.03). */
static nvmlReturn_t sim_bad_arg(void)
{
        pthread_mutex_lock(&sim_mu);
        return sim_leave(sim_refs ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED);
}

/* Start a call that names no GPU: takes sim_mu (kept on NVML_SUCCESS). */
static nvmlReturn_t sim_enter(const char *fn)
{
        pthread_mutex_lock(&sim_mu);
        if (!sim_refs)
                return sim_leave(NVML_ERROR_UNINITIALIZED);
        if (sim_knobs_load(sim_cl.dir, &sim_k) < 0)
                return sim_leave(NVML_ERROR_UNKNOWN);
        sim_api_wait(sim_cl.dir);
        if (sim_knobs_hang(&sim_k, -1, fn))
                sim_hang_unlock(sim_cl.dir);
        return NVML_SUCCESS;
}

/* Which device a handle names: a GPU (*ret_gi = SIM_GI_NONE) or one of its MIG devices. Any
 * pointer may come in: compare addresses, not pointers into different objects. */
static bool sim_decode(nvmlDevice_t dev, unsigned *ret_gpu, unsigned *ret_gi)
{
        uintptr_t a = (uintptr_t)dev, base = (uintptr_t)sim_devs;
        if (a >= base && a < base + sim_cl.host.n_gpus * sizeof(sim_devs[0]) && (a - base) % sizeof(sim_devs[0]) == 0) {
                *ret_gpu = (unsigned)((a - base) / sizeof(sim_devs[0]));
                *ret_gi = SIM_GI_NONE;
                return true;
        }
        base = (uintptr_t)sim_migs;
        if (a < base || a >= base + sizeof(sim_migs) || (a - base) % sizeof(sim_migs[0][0]))
                return false;
        size_t i = (a - base) / sizeof(sim_migs[0][0]);
        if (i / SIM_MAX_MIG >= sim_cl.host.n_gpus)
                return false;
        *ret_gpu = (unsigned)(i / SIM_MAX_MIG);
        *ret_gi = (unsigned)(i % SIM_MAX_MIG) + 1;
        return true;
}

/* Start a per-device call: validates the handle, applies hang, GPU lost, NOT_SUPPORTED. With
 * ret_gi, a MIG device handle is accepted too (*ret_gi its GPU instance, else SIM_GI_NONE);
 * without, a call on a MIG device handle is NOT_SUPPORTED (an assumption: the real library's
 * answer differs per call and is not documented for each). */
static nvmlReturn_t sim_dev_enter_mig(const char *fn, nvmlDevice_t dev, unsigned query, unsigned *ret_gpu,
                                      unsigned *ret_gi)
{
        unsigned gpu, gi;
        pthread_mutex_lock(&sim_mu);
        if (!sim_refs)
                return sim_leave(NVML_ERROR_UNINITIALIZED);
        if (!sim_decode(dev, &gpu, &gi))
                return sim_leave(NVML_ERROR_INVALID_ARGUMENT);
        if (sim_knobs_load(sim_cl.dir, &sim_k) < 0)
                return sim_leave(NVML_ERROR_UNKNOWN);
        sim_api_wait(sim_cl.dir);
        if (sim_knobs_hang(&sim_k, (int)gpu, fn))
                sim_hang_unlock(sim_cl.dir);
        if (sim_k.gpu[gpu].lost || sim_k.gpu[gpu].lost_handle)
                return sim_leave(NVML_ERROR_GPU_IS_LOST);
        /* a MIG device handle is valid while its instance exists */
        if (gi != SIM_GI_NONE && gi > sim_k.gpu[gpu].mig_instances)
                return sim_leave(NVML_ERROR_INVALID_ARGUMENT);
        if (gi != SIM_GI_NONE && !ret_gi)
                return sim_leave(NVML_ERROR_NOT_SUPPORTED);
        if (query & sim_k.gpu[gpu].notsup)
                return sim_leave(NVML_ERROR_NOT_SUPPORTED);
        *ret_gpu = gpu;
        if (ret_gi)
                *ret_gi = gi;
        return NVML_SUCCESS;
}

static nvmlReturn_t sim_dev_enter(const char *fn, nvmlDevice_t dev, unsigned query, unsigned *ret_gpu)
{
        return sim_dev_enter_mig(fn, dev, query, ret_gpu, NULL);
}

static nvmlReturn_t sim_copy_string(char *out, unsigned length, const char *s)
{
        size_t n = strlen(s);
        if (n + 1 > length)
                return NVML_ERROR_INSUFFICIENT_SIZE;
        memcpy(out, s, n + 1);
        return NVML_SUCCESS;
}

/* ---- init / shutdown ------------------------------------------------------------------- */

static nvmlReturn_t sim_init(const char *fn)
{
        const char *dir = getenv("GHOSTVRAM_SIM");
        nvmlReturn_t ret = NVML_SUCCESS;
        pthread_mutex_lock(&sim_mu);
        if (!dir || !*dir) {
                ret = NVML_ERROR_DRIVER_NOT_LOADED; /* no kernel module: no simulated host */
                goto out;
        }
        if (sim_knobs_load(dir, &sim_k) < 0) {
                ret = NVML_ERROR_DRIVER_NOT_LOADED;
                goto out;
        }
        sim_api_wait(dir);
        if (sim_knobs_hang(&sim_k, -1, fn))
                sim_hang_unlock(dir);
        if (sim_refs) {
                sim_refs++; /* init is reference-counted */
                goto out;
        }
        sim_var = sim_variant_find(SIM_VARIANT);
        if (sim_client_open(dir, &sim_cl) < 0) {
                ret = NVML_ERROR_DRIVER_NOT_LOADED;
                goto out;
        }
        /* the library must match the loaded kernel module ("API mismatch" after an upgrade) */
        if (!sim_var || strcmp(sim_k.driver, sim_var->name) != 0) {
                sim_client_close(&sim_cl);
                ret = NVML_ERROR_LIB_RM_VERSION_MISMATCH;
                goto out;
        }
        for (unsigned i = 0; i < SIM_MAX_GPUS; i++) {
                sim_devs[i].index = i;
                sim_devs[i].gi = SIM_GI_NONE;
                for (unsigned m = 0; m < SIM_MAX_MIG; m++)
                        sim_migs[i][m] = (struct nvmlDevice_st){ .index = i, .gi = m + 1 };
        }
        sim_refs = 1;
out:
        pthread_mutex_unlock(&sim_mu);
        return ret;
}

SIM_API nvmlReturn_t nvmlInit(void)
{
        return sim_init("nvmlInit");
}

#if SIM_HAVE_V2API
SIM_API nvmlReturn_t nvmlInit_v2(void)
{
        return sim_init("nvmlInit_v2");
}
#endif

/* Every driver since 418 exports it (pynvml's nvmlInit calls it), the legacy set included. */
SIM_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
        (void)flags; /* NO_GPUS / NO_ATTACH change nothing in the simulator */
        return sim_init("nvmlInitWithFlags");
}

SIM_API nvmlReturn_t nvmlShutdown(void)
{
        nvmlReturn_t r = sim_enter("nvmlShutdown");
        if (r == NVML_ERROR_UNINITIALIZED)
                return NVML_SUCCESS; /* without init, or after a failed one, as the real library */
        if (r)
                return r;
        if (--sim_refs == 0)
                sim_client_close(&sim_cl);
        return sim_leave(NVML_SUCCESS);
}

SIM_API const char *nvmlErrorString(nvmlReturn_t result)
{
        static const struct {
                int code;
                const char *text;
        } strings[] = {
                { NVML_SUCCESS, "Success" },
                { NVML_ERROR_UNINITIALIZED, "Uninitialized" },
                { NVML_ERROR_INVALID_ARGUMENT, "Invalid Argument" },
                { NVML_ERROR_NOT_SUPPORTED, "Not Supported" },
                { NVML_ERROR_NO_PERMISSION, "Insufficient Permissions" },
                { NVML_ERROR_ALREADY_INITIALIZED, "Already Initialized" },
                { NVML_ERROR_NOT_FOUND, "Not Found" },
                { NVML_ERROR_INSUFFICIENT_SIZE, "Insufficient Size" },
                { NVML_ERROR_INSUFFICIENT_POWER, "Insufficient External Power" },
                { NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded" },
                { NVML_ERROR_TIMEOUT, "Timeout" },
                { NVML_ERROR_IRQ_ISSUE, "Interrupt Request Issue" },
                { NVML_ERROR_LIBRARY_NOT_FOUND, "NVML Shared Library Not Found" },
                { NVML_ERROR_FUNCTION_NOT_FOUND, "Function Not Found" },
                { NVML_ERROR_CORRUPTED_INFOROM, "Corrupted infoROM" },
                { NVML_ERROR_GPU_IS_LOST, "GPU is lost" },
                { NVML_ERROR_RESET_REQUIRED, "GPU requires reset" },
                { NVML_ERROR_OPERATING_SYSTEM, "GPU access blocked by the operating system" },
                { NVML_ERROR_LIB_RM_VERSION_MISMATCH, "Driver/library version mismatch" },
                { NVML_ERROR_IN_USE, "In use by another client" },
                { NVML_ERROR_MEMORY, "Insufficient Memory" },
                /* 21-27 as the real 535.261.03 library words them; 28 and up "Unknown Error" */
                { NVML_ERROR_NO_DATA, "No data" },
                { 22, "vGPU ECC not supported" },
                { 23, "Insufficient Resources" },
                { 24, "Invalid Frequency" },
                { NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "Argument version mismatch" },
                { 26, "Requested functionality has been deprecated" },
                { 27, "System is not in ready state" },
        };
        for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
                if (strings[i].code == result)
                        return strings[i].text;
        return "Unknown Error";
}

/* ---- system ------------------------------------------------------------------------------ */

SIM_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
        if (!version)
                return sim_bad_arg();
        nvmlReturn_t r = sim_enter("nvmlSystemGetDriverVersion");
        if (r)
                return r;
        return sim_leave(sim_copy_string(version, length, sim_var->driver_version));
}

/* The library's own version: the real one answers before init and after a failed init (a
 * client can tell "library present, driver not loaded" that way). */
SIM_API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
        const struct sim_variant *var = sim_variant_find(SIM_VARIANT);
        if (!version)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (!var)
                return NVML_ERROR_UNKNOWN;
        return sim_copy_string(version, length, var->nvml_version);
}

/* ---- devices ------------------------------------------------------------------------------- */

static nvmlReturn_t sim_count(const char *fn, unsigned int *count)
{
        if (!count)
                return sim_bad_arg();
        nvmlReturn_t r = sim_enter(fn);
        if (r)
                return r;
        *count = sim_cl.host.n_gpus;
        return sim_leave(NVML_SUCCESS);
}

static nvmlReturn_t sim_handle(const char *fn, unsigned int index, nvmlDevice_t *device)
{
        if (!device)
                return sim_bad_arg();
        nvmlReturn_t r = sim_enter(fn);
        if (r)
                return r;
        if (index >= sim_cl.host.n_gpus)
                return sim_leave(NVML_ERROR_INVALID_ARGUMENT);
        if (sim_knobs_hang(&sim_k, (int)index, fn))
                sim_hang_unlock(sim_cl.dir);
        /* after Xid 79 the real driver often cannot even give the handle (gpu_lost_handle) */
        if (sim_k.gpu[index].lost_handle)
                return sim_leave(NVML_ERROR_GPU_IS_LOST);
        *device = &sim_devs[index];
        return sim_leave(NVML_SUCCESS);
}

SIM_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
        return sim_count("nvmlDeviceGetCount", deviceCount);
}

SIM_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
        return sim_handle("nvmlDeviceGetHandleByIndex", index, device);
}

#if SIM_HAVE_V2API
SIM_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
        return sim_count("nvmlDeviceGetCount_v2", deviceCount);
}

SIM_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
        return sim_handle("nvmlDeviceGetHandleByIndex_v2", index, device);
}
#endif

SIM_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
        unsigned gpu, gi;
        char mig[160];
        if (!name)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter_mig("nvmlDeviceGetName", device, 0, &gpu, &gi);
        if (r)
                return r;
        if (gi == SIM_GI_NONE)
                return sim_leave(sim_copy_string(name, length, sim_cl.host.gpus[gpu].name));
        /* "<GPU> MIG <slices>g.<GB>gb", the profile naming of the MIG user guide; 7 compute
         * slices split evenly */
        unsigned n = sim_k.gpu[gpu].mig_instances;
        uint64_t size = sim_mig_instance_total(&sim_cl.host, gpu, n);
        snprintf(mig, sizeof(mig), "%.96s MIG %ug.%llugb", sim_cl.host.gpus[gpu].name, 7 / n,
                 (unsigned long long)((size + (512ull << 20)) >> 30));
        return sim_leave(sim_copy_string(name, length, mig));
}

SIM_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
        unsigned gpu, gi;
        char mig[96];
        if (!uuid)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter_mig("nvmlDeviceGetUUID", device, 0, &gpu, &gi);
        if (r)
                return r;
        const char *u = sim_cl.host.gpus[gpu].uuid;
        if (gi == SIM_GI_NONE)
                return sim_leave(sim_copy_string(uuid, length, u));
        /* "MIG-" and a UUID of its own: the parent's with its last byte replaced by the instance */
        size_t ul = strlen(u);
        snprintf(mig, sizeof(mig), "MIG-%.*s%02x", ul > 6 ? (int)(ul - 6) : 0, u + 4, gi);
        return sim_leave(sim_copy_string(uuid, length, mig));
}

SIM_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
        unsigned gpu;
        if (!minorNumber)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter("nvmlDeviceGetMinorNumber", device, SIM_Q_MINOR, &gpu);
        if (r)
                return r;
        *minorNumber = sim_cl.host.gpus[gpu].minor;
        return sim_leave(NVML_SUCCESS);
}

/* PCI info. _v3 fills the 68-byte layout (NVML 9.0+). v1 and _v2 fill the old 52-byte
 * layout: busId[16] ("%04X:%02X:%02X.0"), the ids, then four reserved words, which sit
 * where busId[32] starts in the new layout — so only busIdLegacy is valid after them. */
static nvmlReturn_t sim_pci(const char *fn, nvmlDevice_t device, nvmlPciInfo_t *pci, int version)
{
        unsigned gpu;
        if (!pci)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter(fn, device, SIM_Q_PCI, &gpu);
        if (r)
                return r;
        const struct sim_gpu *g = &sim_cl.host.gpus[gpu];
        snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.0", g->pci_domain & 0xFFFFu,
                 g->pci_bus, g->pci_device);
        pci->domain = g->pci_domain;
        pci->bus = g->pci_bus;
        pci->device = g->pci_device;
        pci->pciDeviceId = g->pci_device_id;
        pci->pciSubSystemId = g->pci_subsystem_id;
        if (version == 3)
                snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.0", g->pci_domain, g->pci_bus,
                         g->pci_device);
        else
                memset(pci->busId, 0, 16); /* reserved0..3 of the old layout; the rest untouched */
        return sim_leave(NVML_SUCCESS);
}

SIM_API nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
        return sim_pci("nvmlDeviceGetPciInfo", device, pci, 1);
}

#if SIM_HAVE_V2API
SIM_API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
        return sim_pci("nvmlDeviceGetPciInfo_v2", device, pci, 2);
}

SIM_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
        return sim_pci("nvmlDeviceGetPciInfo_v3", device, pci, 3);
}
#endif

/* Memory: allocated = what contexts alive or being freed hold + uncharged memory. A MIG
 * device's: its instance's share of the memory (no reservation of its own) and its contexts;
 * the GPU's: the sum over its instances. */
static nvmlReturn_t sim_memory(unsigned gpu, unsigned gi, uint64_t *total, uint64_t *reserved, uint64_t *used)
{
        if (sim_observe(&sim_cl, &sim_k, &sim_obs) < 0)
                return NVML_ERROR_UNKNOWN;
        if (gi != SIM_GI_NONE) {
                *total = sim_mig_instance_total(&sim_cl.host, gpu, sim_k.gpu[gpu].mig_instances);
                *reserved = 0;
                *used = sim_mig_used_bytes(&sim_cl.host, &sim_k, &sim_obs, gpu, gi);
                return NVML_SUCCESS;
        }
        *total = sim_cl.host.gpus[gpu].total_bytes;
        *reserved = sim_cl.host.gpus[gpu].reserved_bytes;
        *used = sim_used_bytes(&sim_cl.host, &sim_k, &sim_obs, gpu);
        return NVML_SUCCESS;
}

SIM_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
        unsigned gpu, gi;
        uint64_t total, reserved, used;
        if (!memory)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter_mig("nvmlDeviceGetMemoryInfo", device, SIM_Q_MEMORY, &gpu, &gi);
        if (r)
                return r;
        r = sim_memory(gpu, gi, &total, &reserved, &used);
        if (r == NVML_SUCCESS) {
                /* v1: used is "the sum of reserved and allocated"; used + free == total */
                memory->total = total;
                memory->used = reserved + used;
                memory->free = total - reserved - used;
        }
        return sim_leave(r);
}

#if SIM_HAVE_MEMORY_V2
SIM_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
        unsigned gpu, gi;
        uint64_t total, reserved, used;
        if (!memory)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter_mig("nvmlDeviceGetMemoryInfo_v2", device, SIM_Q_MEMORY_V2, &gpu, &gi);
        if (r)
                return r;
        /* the real driver answers a wrong version (e.g. a bare 2) with FUNCTION_NOT_FOUND
         * (nvidia-settings#78) */
        if (sim_k.strict_versions && memory->version != nvmlMemory_v2)
                return sim_leave(NVML_ERROR_FUNCTION_NOT_FOUND);
        r = sim_memory(gpu, gi, &total, &reserved, &used);
        if (r == NVML_SUCCESS) {
                memory->total = total;
                memory->reserved = reserved;
                memory->used = used; /* allocated only: total == reserved + used + free */
                memory->free = total - reserved - used;
        }
        return sim_leave(r);
}
#endif

SIM_API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, unsigned int *mode)
{
        unsigned gpu;
        if (!mode)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter("nvmlDeviceGetPersistenceMode", device, SIM_Q_PERSISTENCE, &gpu);
        if (r)
                return r;
        *mode = sim_k.gpu[gpu].persistence ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
        return sim_leave(NVML_SUCCESS);
}

#if SIM_HAVE_V2API
SIM_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
        unsigned gpu;
        if (!currentMode || !pendingMode)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter("nvmlDeviceGetMigMode", device, SIM_Q_MIG, &gpu);
        if (r)
                return r;
        *currentMode = *pendingMode = sim_mig_on(&sim_k.gpu[gpu]) ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
        if (sim_k.gpu[gpu].mig_pending) /* nvidia-smi -mig N set, no reset yet */
                *pendingMode = *currentMode == NVML_DEVICE_MIG_ENABLE ? NVML_DEVICE_MIG_DISABLE : NVML_DEVICE_MIG_ENABLE;
        return sim_leave(NVML_SUCCESS);
}

/* ---- MIG devices (450+): one per GPU instance, its compute instance 0 ----------------------
 * nvml.h: GetMaxMigDeviceCount "returns zero if MIG is not supported or enabled"; a MIG device
 * handle answers the memory and process queries for its instance only. */

SIM_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
        unsigned gpu;
        if (!count)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter("nvmlDeviceGetMaxMigDeviceCount", device, SIM_Q_MIG, &gpu);
        if (r)
                return r;
        *count = sim_mig_on(&sim_k.gpu[gpu]) ? SIM_MAX_MIG : 0; /* an H100 holds up to 7 */
        return sim_leave(NVML_SUCCESS);
}

SIM_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                         nvmlDevice_t *migDevice)
{
        unsigned gpu;
        if (!migDevice)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter("nvmlDeviceGetMigDeviceHandleByIndex", device, SIM_Q_MIG, &gpu);
        if (r)
                return r;
        if (!sim_mig_on(&sim_k.gpu[gpu]))
                return sim_leave(NVML_ERROR_NOT_SUPPORTED);
        if (index >= SIM_MAX_MIG)
                return sim_leave(NVML_ERROR_INVALID_ARGUMENT);
        /* nvml.h: NOT_FOUND "if no valid MIG device was found at index" */
        if (index >= sim_k.gpu[gpu].mig_instances)
                return sim_leave(NVML_ERROR_NOT_FOUND);
        *migDevice = &sim_migs[gpu][index];
        return sim_leave(NVML_SUCCESS);
}

SIM_API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
        unsigned gpu, gi;
        if (!isMigDevice)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter_mig("nvmlDeviceIsMigDeviceHandle", device, 0, &gpu, &gi);
        if (r)
                return r;
        *isMigDevice = gi != SIM_GI_NONE;
        return sim_leave(NVML_SUCCESS);
}

/* The instance ids of a MIG device; a GPU's handle: NOT_SUPPORTED ("if device is not a MIG
 * device", nvml.h). */
static nvmlReturn_t sim_instance_id(const char *fn, nvmlDevice_t device, unsigned *id, bool compute)
{
        unsigned gpu, gi;
        if (!id)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter_mig(fn, device, 0, &gpu, &gi);
        if (r)
                return r;
        if (gi == SIM_GI_NONE)
                return sim_leave(NVML_ERROR_NOT_SUPPORTED);
        *id = compute ? 0 : gi;
        return sim_leave(NVML_SUCCESS);
}

SIM_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
        return sim_instance_id("nvmlDeviceGetGpuInstanceId", device, id, false);
}

SIM_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
        return sim_instance_id("nvmlDeviceGetComputeInstanceId", device, id, true);
}

SIM_API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device)
{
        unsigned gpu, gi;
        if (!device)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter_mig("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", migDevice, 0, &gpu, &gi);
        if (r)
                return r;
        if (gi == SIM_GI_NONE)
                return sim_leave(NVML_ERROR_INVALID_ARGUMENT); /* not a MIG device (an assumption) */
        *device = &sim_devs[gpu];
        return sim_leave(NVML_SUCCESS);
}
#endif

/* ---- process lists ------------------------------------------------------------------------ */

enum sim_kind { SIM_KIND_COMPUTE = 0, SIM_KIND_GRAPHICS = 1, SIM_KIND_MPS = 2 };

/* The current list for gpu (gi: a MIG device's instance, SIM_GI_NONE the GPU's own list) into
 * sim_procs; returns how many. Compute and MPS contexts exist in the simulator (an MPS client's,
 * `sim run --mps`, is in the MPS list only); the graphics list is empty. On a MIG GPU, the GPU's
 * own list is the aggregate "only if the caller has appropriate privileges" (nvml.h); others get
 * NO_PERMISSION, or an empty list (mig_unprivileged=empty). */
/* Every context's entry (compute and MPS) into sim_procs, as sim_list. */
static size_t sim_list_all(unsigned gpu, unsigned gi, nvmlReturn_t *ret)
{
        size_t n = 0;
        *ret = NVML_SUCCESS;
        if (gi == SIM_GI_NONE && sim_mig_on(&sim_k.gpu[gpu]) && !sim_mig_privileged(sim_cl.dir)) {
                if (sim_k.mig_unprivileged == SIM_MIG_VIEW_NO_PERMISSION)
                        *ret = NVML_ERROR_NO_PERMISSION;
                return 0;
        }
        if (sim_observe(&sim_cl, &sim_k, &sim_obs) < 0) {
                *ret = NVML_ERROR_UNKNOWN;
                return 0;
        }
        sim_proc_list_gi(&sim_cl, &sim_k, sim_pid_mode_effective(&sim_k, sim_var), &sim_obs, gpu,
                         gi == SIM_GI_NONE ? SIM_GI_ANY : gi, sim_procs, SIM_MAX_CONTEXTS, &n);
        return n < SIM_MAX_CONTEXTS ? n : SIM_MAX_CONTEXTS;
}

static size_t sim_list(unsigned gpu, unsigned gi, enum sim_kind kind, nvmlReturn_t *ret)
{
        if (kind == SIM_KIND_GRAPHICS) {
                *ret = NVML_SUCCESS;
                return 0;
        }
        size_t n = sim_list_all(gpu, gi, ret);
        /* this list's entries only, in order */
        size_t w = 0;
        for (size_t i = 0; i < n; i++)
                if (sim_procs[i].mps == (kind == SIM_KIND_MPS))
                        sim_procs[w++] = sim_procs[i];
        return w;
}

/* The two-call pattern: *count == 0 asks for the size (INSUFFICIENT_SIZE with the count, or
 * SUCCESS when nothing runs); a buffer too small gets INSUFFICIENT_SIZE and the count. The
 * list_growth knob makes the sizing call under-report, as if processes started between
 * the two calls. SUCCESS with *count 0 means nothing to write (a sizing call that saw
 * nothing: its buffer may be NULL). */
static nvmlReturn_t sim_count_check(unsigned gpu, size_t n, unsigned *count, const void *infos)
{
        if (*count == 0) {
                size_t growth = sim_k.gpu[gpu].list_growth;
                size_t seen = n > growth ? n - growth : 0;
                *count = (unsigned)seen;
                return seen ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
        }
        if (*count < n) {
                *count = (unsigned)n;
                return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        return infos ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* What a real driver may leave in the 4 padding bytes after `pid`: nothing defines them, so
 * a client that reads a record at the wrong stride gets huge numbers, as on real hosts. */
#define SIM_PADDING_BYTE 0xA5

/* Write one record of `stride` bytes: 16 (v1), 24 (v2 and _v3 mostly), 32 (535.43-535.86). */
static void sim_record(unsigned char *dst, size_t stride, const struct sim_proc *p)
{
        nvmlProcessDetail_v1_t d;
        memset(&d, SIM_PADDING_BYTE, sizeof(d));
        d.pid = p->pid;
        d.usedGpuMemory = p->bytes;
        /* "If MIG is enabled, stores a valid GPU instance ID" (nvml.h); else 0xFFFFFFFF */
        d.gpuInstanceId = p->gi == SIM_GI_NONE ? NVML_INSTANCE_ID_INVALID : p->gi;
        d.computeInstanceId = p->gi == SIM_GI_NONE ? NVML_INSTANCE_ID_INVALID : 0;
        d.usedGpuCcProtectedMemory = 0;
        memcpy(dst, &d, stride);
}

static nvmlReturn_t sim_procs_call(const char *fn, nvmlDevice_t device, unsigned int *count, void *infos,
                                   size_t stride, enum sim_kind kind)
{
        unsigned gpu, gi;
        if (!count)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter_mig(fn, device, SIM_Q_PROCESSES, &gpu, &gi);
        if (r)
                return r;
        size_t n = sim_list(gpu, gi, kind, &r);
        if (r)
                return sim_leave(r);
        r = sim_count_check(gpu, n, count, infos);
        if (r || n == 0 || *count == 0) {
                if (r == NVML_SUCCESS)
                        *count = 0;
                return sim_leave(r);
        }
        for (size_t i = 0; i < n; i++)
                sim_record((unsigned char *)infos + i * stride, stride, &sim_procs[i]);
        *count = (unsigned)n;
        return sim_leave(NVML_SUCCESS);
}

#define SIM_PROCS_FN(name, stride, kind)                                                          \
        SIM_API nvmlReturn_t name(nvmlDevice_t device, unsigned int *infoCount, void *infos)   \
        {                                                                                         \
                return sim_procs_call(#name, device, infoCount, infos, stride, kind);             \
        }

SIM_PROCS_FN(nvmlDeviceGetComputeRunningProcesses, sizeof(nvmlProcessInfo_v1_t), SIM_KIND_COMPUTE)
SIM_PROCS_FN(nvmlDeviceGetGraphicsRunningProcesses, sizeof(nvmlProcessInfo_v1_t), SIM_KIND_GRAPHICS)
#if SIM_HAVE_PROCS_V2
SIM_PROCS_FN(nvmlDeviceGetComputeRunningProcesses_v2, sizeof(nvmlProcessInfo_v2_t), SIM_KIND_COMPUTE)
SIM_PROCS_FN(nvmlDeviceGetGraphicsRunningProcesses_v2, sizeof(nvmlProcessInfo_v2_t), SIM_KIND_GRAPHICS)
#endif
#if SIM_HAVE_MPS
SIM_PROCS_FN(nvmlDeviceGetMPSComputeRunningProcesses, sizeof(nvmlProcessInfo_v1_t), SIM_KIND_MPS)
SIM_PROCS_FN(nvmlDeviceGetMPSComputeRunningProcesses_v2, sizeof(nvmlProcessInfo_v2_t), SIM_KIND_MPS)
#endif
#if SIM_V3_STRIDE
SIM_PROCS_FN(nvmlDeviceGetComputeRunningProcesses_v3, SIM_V3_STRIDE, SIM_KIND_COMPUTE)
SIM_PROCS_FN(nvmlDeviceGetGraphicsRunningProcesses_v3, SIM_V3_STRIDE, SIM_KIND_GRAPHICS)
SIM_PROCS_FN(nvmlDeviceGetMPSComputeRunningProcesses_v3, SIM_V3_STRIDE, SIM_KIND_MPS)
#endif

#if SIM_HAVE_DETAIL_LIST
SIM_API nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device, nvmlProcessDetailList_v1_t *plist)
{
        unsigned gpu, gi;
        if (!plist)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter_mig("nvmlDeviceGetRunningProcessDetailList", device, SIM_Q_PROCESSES, &gpu, &gi);
        if (r)
                return r;
        if (sim_k.strict_versions && plist->version != nvmlProcessDetailList_v1)
                return sim_leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
        if (plist->mode > SIM_KIND_MPS)
                return sim_leave(NVML_ERROR_INVALID_ARGUMENT);
        size_t n = sim_list(gpu, gi, (enum sim_kind)plist->mode, &r);
        if (r)
                return sim_leave(r);
        r = sim_count_check(gpu, n, &plist->numProcArrayEntries, plist->procArray);
        if (r || n == 0 || plist->numProcArrayEntries == 0) {
                if (r == NVML_SUCCESS)
                        plist->numProcArrayEntries = 0;
                return sim_leave(r);
        }
        for (size_t i = 0; i < n; i++)
                sim_record((unsigned char *)&plist->procArray[i], sizeof(nvmlProcessDetail_v1_t), &sim_procs[i]);
        plist->numProcArrayEntries = (unsigned)n;
        return sim_leave(NVML_SUCCESS);
}
#endif

#if SIM_HAVE_CONFCOMPUTE
SIM_API nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t device, sim_conf_compute_mem_t *info)
{
        unsigned gpu;
        if (!info)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter("nvmlDeviceGetConfComputeMemSizeInfo", device, 0, &gpu);
        if (r)
                return r;
        return sim_leave(NVML_ERROR_NOT_SUPPORTED); /* confidential computing is off */
}
#endif

/* ---- telemetry: what monitors such as nvtop need before they show a GPU -------------------------
 * nvtop 3.0.1 resolves these and reports "No GPU to monitor" when one is missing; it checks
 * every return code. The values are those of an idle H100 SXM (no fan: NOT_SUPPORTED, as
 * there). Nothing in the simulator computes: utilization stays 0, which is what a GPU whose
 * memory is held by sleeping workers of a killed job shows. */

/* ---- memory health (R450+ row remapping, retired pages, ECC counters) ----------------------
 * nvml.h: GetRemappedRows "isPending: reference in which to return if there is a pending
 * remapping. A reset will be required to actually remap the row"; RetiredPagesPendingStatus
 * "pages retired but not yet retired... until the next reboot/reset". The reset_required knob
 * makes them answer NVML_ERROR_RESET_REQUIRED, as a GPU that needs a reset does. */

static nvmlReturn_t sim_health_enter(const char *fn, nvmlDevice_t device, unsigned *gpu)
{
        nvmlReturn_t r = sim_dev_enter(fn, device, SIM_Q_HEALTH, gpu);
        if (r)
                return r;
        if (sim_k.gpu[*gpu].reset_required)
                return sim_leave(NVML_ERROR_RESET_REQUIRED);
        return NVML_SUCCESS;
}

SIM_API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                               unsigned int *isPending, unsigned int *failureOccurred)
{
        unsigned gpu;
        if (!corrRows || !uncRows || !isPending || !failureOccurred)
                return sim_bad_arg();
        nvmlReturn_t r = sim_health_enter("nvmlDeviceGetRemappedRows", device, &gpu);
        if (r)
                return r;
        bool pending = sim_k.gpu[gpu].remap_pending;
        *corrRows = 0;
        *uncRows = pending ? 1 : 0;
        *isPending = pending;
        *failureOccurred = 0;
        return sim_leave(NVML_SUCCESS);
}

SIM_API nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, unsigned int *isPending)
{
        unsigned gpu;
        if (!isPending)
                return sim_bad_arg();
        nvmlReturn_t r = sim_health_enter("nvmlDeviceGetRetiredPagesPendingStatus", device, &gpu);
        if (r)
                return r;
        *isPending = sim_k.gpu[gpu].retired_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
        return sim_leave(NVML_SUCCESS);
}

SIM_API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, unsigned int errorType, unsigned int counterType,
                                                 unsigned long long *eccCounts)
{
        unsigned gpu;
        if (!eccCounts || errorType > 1 || counterType > 1)
                return sim_bad_arg();
        nvmlReturn_t r = sim_health_enter("nvmlDeviceGetTotalEccErrors", device, &gpu);
        if (r)
                return r;
        /* only uncorrected errors are modelled; volatile and aggregate alike */
        *eccCounts = errorType == GV_NVML_MEMORY_ERROR_TYPE_UNCORRECTED ? sim_k.gpu[gpu].ecc_uncorrected : 0;
        return sim_leave(NVML_SUCCESS);
}

/* nvmlUtilization_t: two unsigned ints, percent over the last sample period */
typedef struct {
        unsigned int gpu;
        unsigned int memory;
} sim_utilization_t;

/* nvmlProcessUtilizationSample_t */
typedef struct {
        unsigned int pid;
        unsigned long long timeStamp;
        unsigned int smUtil;
        unsigned int memUtil;
        unsigned int encUtil;
        unsigned int decUtil;
} sim_proc_util_t;

/* nvmlClockType_t: graphics 0, SM 1, memory 2, video 3. The SM and memory clocks are knobs
 * (clock_sm, clock_mem); graphics follows SM, video is fixed. */
static const unsigned sim_max_clock_mhz[4] = { 1980, 1980, 2619, 1755 };

/* One unsigned value of a device, or NOT_SUPPORTED when value is NULL. */
static nvmlReturn_t sim_dev_uint(const char *fn, nvmlDevice_t device, unsigned int *out, const unsigned *value)
{
        unsigned gpu;
        if (!out)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter(fn, device, 0, &gpu);
        if (r)
                return r;
        if (!value)
                return sim_leave(NVML_ERROR_NOT_SUPPORTED);
        *out = *value;
        return sim_leave(NVML_SUCCESS);
}

/* A metric of the GPU's knobs (docs/simulator.md: util_gpu, temp, ...): its value in NVML's unit,
 * or NOT_SUPPORTED when set to na. */
static nvmlReturn_t sim_metric(const char *fn, nvmlDevice_t device, unsigned int *out, enum sim_metric m)
{
        unsigned gpu;
        if (!out)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter(fn, device, 0, &gpu);
        if (r)
                return r;
        return sim_leave(sim_metric_value(&sim_k.gpu[gpu].metric[m], m, out) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED);
}

#define SIM_UINT_FN(name, value)                                                                  \
        SIM_API nvmlReturn_t name(nvmlDevice_t device, unsigned int *out)                         \
        {                                                                                         \
                static const unsigned v = value;                                                  \
                return sim_dev_uint(#name, device, out, &v);                                      \
        }

SIM_UINT_FN(nvmlDeviceGetCurrPcieLinkGeneration, 5)
SIM_UINT_FN(nvmlDeviceGetMaxPcieLinkGeneration, 5)
SIM_UINT_FN(nvmlDeviceGetCurrPcieLinkWidth, 16)
SIM_UINT_FN(nvmlDeviceGetMaxPcieLinkWidth, 16)

SIM_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
        return sim_metric("nvmlDeviceGetPowerUsage", device, power, SIM_M_POWER); /* mW */
}

SIM_API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
        return sim_metric("nvmlDeviceGetEnforcedPowerLimit", device, limit, SIM_M_POWER_LIMIT); /* mW */
}

SIM_API nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *speed)
{
        return sim_metric("nvmlDeviceGetFanSpeed", device, speed, SIM_M_FAN);
}

SIM_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type, unsigned int *clock)
{
        if (type == 0 || type == 1)
                return sim_metric("nvmlDeviceGetClockInfo", device, clock, SIM_M_CLOCK_SM);
        if (type == 2)
                return sim_metric("nvmlDeviceGetClockInfo", device, clock, SIM_M_CLOCK_MEM);
        static const unsigned video = 765;
        return sim_dev_uint("nvmlDeviceGetClockInfo", device, clock, type == 3 ? &video : NULL);
}

SIM_API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, unsigned int type, unsigned int *clock)
{
        return sim_dev_uint("nvmlDeviceGetMaxClockInfo", device, clock, type < 4 ? &sim_max_clock_mhz[type] : NULL);
}

SIM_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensorType, unsigned int *temp)
{
        if (sensorType != 0) /* NVML_TEMPERATURE_GPU is the only sensor */
                return sim_dev_uint("nvmlDeviceGetTemperature", device, temp, NULL);
        return sim_metric("nvmlDeviceGetTemperature", device, temp, SIM_M_TEMP);
}

/* nvmlTemperatureThresholds_t: shutdown 0, slowdown 1, memory max 2, GPU max 3 */
SIM_API nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, unsigned int thresholdType,
                                                      unsigned int *temp)
{
        static const unsigned c[4] = { 92, 89, 95, 87 };
        return sim_dev_uint("nvmlDeviceGetTemperatureThreshold", device, temp, thresholdType < 4 ? &c[thresholdType] : NULL);
}

/* nvmlPcieUtilCounter_t: TX 0, RX 1; KB/s */
SIM_API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, unsigned int counter, unsigned int *value)
{
        if (counter > 1)
                return sim_dev_uint("nvmlDeviceGetPcieThroughput", device, value, NULL);
        return sim_metric("nvmlDeviceGetPcieThroughput", device, value, counter ? SIM_M_PCIE_RX : SIM_M_PCIE_TX);
}

/* Enter fn on device and read its util_gpu and util_mem knobs: one call answers both, so
 * NOT_SUPPORTED when either is na (the lock is left then; held on success). */
static nvmlReturn_t sim_util_enter(const char *fn, nvmlDevice_t device, unsigned *ret_gpu, unsigned *ret_g,
                                   unsigned *ret_m)
{
        nvmlReturn_t r = sim_dev_enter(fn, device, 0, ret_gpu);
        if (r)
                return r;
        const struct sim_metric_knob *mk = sim_k.gpu[*ret_gpu].metric;
        if (!sim_metric_value(&mk[SIM_M_UTIL_GPU], SIM_M_UTIL_GPU, ret_g) ||
            !sim_metric_value(&mk[SIM_M_UTIL_MEM], SIM_M_UTIL_MEM, ret_m))
                return sim_leave(NVML_ERROR_NOT_SUPPORTED);
        return NVML_SUCCESS;
}

SIM_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, sim_utilization_t *utilization)
{
        unsigned gpu, g, m;
        if (!utilization)
                return sim_bad_arg();
        nvmlReturn_t r = sim_util_enter("nvmlDeviceGetUtilizationRates", device, &gpu, &g, &m);
        if (r)
                return r;
        utilization->gpu = g;
        utilization->memory = m;
        return sim_leave(NVML_SUCCESS);
}

static nvmlReturn_t sim_codec(const char *fn, nvmlDevice_t device, unsigned *utilization, unsigned *period_us,
                              enum sim_metric m)
{
        if (!period_us)
                return sim_bad_arg();
        nvmlReturn_t r = sim_metric(fn, device, utilization, m);
        if (r == NVML_SUCCESS)
                *period_us = 167000;
        return r;
}

SIM_API nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                    unsigned int *samplingPeriodUs)
{
        return sim_codec("nvmlDeviceGetEncoderUtilization", device, utilization, samplingPeriodUs, SIM_M_ENC);
}

SIM_API nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                    unsigned int *samplingPeriodUs)
{
        return sim_codec("nvmlDeviceGetDecoderUtilization", device, utilization, samplingPeriodUs, SIM_M_DEC);
}

/* Per-process utilisation (nvml.h: samples NULL asks for the count, INSUFFICIENT_SIZE with it;
 * NOT_FOUND when no process ran since lastSeenTimeStamp). The model: each process the GPU's
 * compute and MPS lists name (as this caller sees them) gets an equal share of util_gpu and
 * util_mem (integer division); with both at 0 nothing ran: NOT_FOUND. */
SIM_API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, sim_proc_util_t *utilization,
                                                     unsigned int *processSamplesCount,
                                                     unsigned long long lastSeenTimeStamp)
{
        unsigned gpu, g = 0, m = 0;
        (void)lastSeenTimeStamp;
        if (!processSamplesCount)
                return sim_bad_arg();
        nvmlReturn_t r = sim_util_enter("nvmlDeviceGetProcessUtilization", device, &gpu, &g, &m);
        if (r)
                return r;
        nvmlReturn_t lr;
        size_t n = sim_list_all(gpu, SIM_GI_NONE, &lr); /* MPS clients run kernels too */
        if (lr != NVML_SUCCESS)
                return sim_leave(lr);
        if (n == 0 || (g == 0 && m == 0))
                return sim_leave(NVML_ERROR_NOT_FOUND);
        if (!utilization || *processSamplesCount < n) {
                *processSamplesCount = (unsigned)n;
                return sim_leave(NVML_ERROR_INSUFFICIENT_SIZE);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        for (size_t i = 0; i < n; i++)
                utilization[i] = (sim_proc_util_t){ .pid = sim_procs[i].pid,
                                                    .timeStamp = (unsigned long long)ts.tv_sec * 1000000ull +
                                                                 (unsigned long long)ts.tv_nsec / 1000u,
                                                    .smUtil = g / (unsigned)n, .memUtil = m / (unsigned)n };
        *processSamplesCount = (unsigned)n;
        return sim_leave(NVML_SUCCESS);
}

/* ---- events --------------------------------------------------------------------------------- */

SIM_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
        if (!set)
                return sim_bad_arg();
        nvmlReturn_t r = sim_enter("nvmlEventSetCreate");
        if (r)
                return r;
        *set = calloc(1, sizeof(**set));
        return sim_leave(*set ? NVML_SUCCESS : NVML_ERROR_MEMORY);
}

SIM_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)
{
        unsigned gpu;
        if (!set)
                return sim_bad_arg();
        nvmlReturn_t r = sim_dev_enter("nvmlDeviceRegisterEvents", device, SIM_Q_EVENTS, &gpu);
        if (r)
                return r;
        /* only Xid critical errors are simulated. nvml.h: "If NOT_SUPPORTED is returned, none of
         * the requested event types are registered" - so a mask with any other bit registers
         * nothing, not even its Xid bit. */
        if (eventTypes & ~NVML_EVENT_TYPE_XID_CRITICAL_ERROR)
                return sim_leave(NVML_ERROR_NOT_SUPPORTED);
        set->types[gpu] |= eventTypes;
        return sim_leave(NVML_SUCCESS);
}

/* Poll the knobs for a pending xid_event of a registered GPU; deliver it once. */
static nvmlReturn_t sim_event_wait(const char *fn, nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeoutms,
                                   size_t size)
{
        if (!set || !data)
                return sim_bad_arg();
        uint64_t start = sim_now_ms();
        for (;;) {
                nvmlReturn_t r = sim_enter(fn);
                if (r)
                        return r;
                for (unsigned g = 0; g < sim_cl.host.n_gpus; g++) {
                        unsigned code;
                        if (!(set->types[g] & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))
                                continue;
                        if (sim_knobs_hang(&sim_k, (int)g, fn))
                                sim_hang_unlock(sim_cl.dir);
                        if (sim_k.gpu[g].xid_event < 0 || sim_event_take(sim_cl.dir, g, &code) != 1)
                                continue;
                        nvmlEventData_t d = {
                                .device = &sim_devs[g],
                                .eventType = NVML_EVENT_TYPE_XID_CRITICAL_ERROR,
                                .eventData = code,
                                .gpuInstanceId = NVML_INSTANCE_ID_INVALID,
                                .computeInstanceId = NVML_INSTANCE_ID_INVALID,
                        };
                        memcpy(data, &d, size); /* the pre-450 struct has only the first three fields */
                        return sim_leave(NVML_SUCCESS);
                }
                pthread_mutex_unlock(&sim_mu);
                uint64_t now = sim_now_ms();
                if (now < start || now - start >= timeoutms)
                        return NVML_ERROR_TIMEOUT;
                uint64_t left = timeoutms - (now - start);
                struct timespec ts = { 0, (long)(left < 20 ? left : 20) * 1000000L };
                nanosleep(&ts, NULL);
        }
}

#if SIM_HAVE_V2API
SIM_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
        return sim_event_wait("nvmlEventSetWait_v2", set, data, timeoutms, sizeof(nvmlEventData_t));
}
#endif

SIM_API nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
        return sim_event_wait("nvmlEventSetWait", set, data, timeoutms, offsetof(nvmlEventData_t, gpuInstanceId));
}

SIM_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
        if (!set)
                return sim_bad_arg();
        nvmlReturn_t r = sim_enter("nvmlEventSetFree");
        if (r)
                return r;
        free(set);
        return sim_leave(NVML_SUCCESS);
}
