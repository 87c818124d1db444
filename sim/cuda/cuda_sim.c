/* The simulated libcuda.so.1: the CUDA driver API's names and ABI (src/track/cuda_abi.h) on the
 * simulated driver, so that the programs of the simulator allocate GPU memory the way a real
 * CUDA program does and ghostvram's allocation tracker (preload/) is tested on the very entry
 * points it interposes on a real host — by symbol, through cuGetProcAddress (both versions),
 * and through dlsym on a dlopen'ed handle. docs/simulator.md, "The simulated libcuda".
 *
 * What it does to the simulated host is what the real driver does to the real one:
 *   cuInit      opens DIR/dev/nvidiactl, nvidia-uvm and the node of every visible GPU
 *               (CUDA_VISIBLE_DEVICES) with O_CLOEXEC and maps each (one shared page);
 *               DIR is $GHOSTVRAM_SIM (unset: CUDA_ERROR_NO_DEVICE, as with no driver)
 *   cuCtxCreate makes the process's context; the driver registers it at its first allocation
 *               (sim_context_create on the process's own description of nvidiactl, charged
 *               with that allocation; a failed first allocation leaves no context behind)
 *   allocations charge the context (sim_context_charge), so NVML's process list and used
 *               memory follow them; frees credit it. Managed memory is not charged (the real
 *               driver charges UVM memory to no process). A VMM handle (cuMemCreate) is
 *               charged until it is released and unmapped.
 * One context per process, current on every thread. A forked child of an initialised process
 * gets CUDA_ERROR_NOT_INITIALIZED from every call, as CUDA does. Nothing is printed;
 * gvsim_last_error() gives the message of the last failure (CUDA's wording, for gv-simcuda). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "simstate.h"
#include "track/cuda_abi.h"
#include "util/parse.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_FDS (SIM_MAX_GPUS + 4)   /* nvidiactl, nvidia-uvm, the GPUs, 2 MIG capabilities */
#define MAX_ALLOCS 65536
#define VA_BASE 0x7f0000000000ull
#define VA_ALIGN ((uint64_t)2 << 20)

enum alloc_kind { A_MEM = 1, A_MANAGED, A_HANDLE, A_MAP };

struct alloc {
        uint64_t addr;                  /* device pointer, handle, or mapped va */
        uint64_t size;
        uint64_t handle;                /* A_MAP: the handle mapped */
        uint8_t kind;
        bool released;                  /* A_HANDLE: cuMemRelease'd, still mapped */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
        bool inited;
        pid_t pid;                      /* who initialised */
        char dir[PATH_MAX];
        struct sim_host host;
        unsigned nvis;
        unsigned visible[SIM_MAX_GPUS];
        int fds[MAX_FDS];               /* fds[0]: nvidiactl, the context's description */
        int nfds;
        int owners_fd;
        bool have_ctx;
        bool registered;                /* the driver knows the context (its first allocation) */
        unsigned ctx_id;
        CUdevice ctx_dev;
        uint64_t next_va;
        uint64_t next_handle;
        size_t n;
        struct alloc a[MAX_ALLOCS];
} st;
static char last_error[SIM_ERR_LEN];
static unsigned mig_gi = SIM_GI_NONE;   /* gvsim_set_mig_instance */
static bool mps_client;                 /* gvsim_set_mps_client */

static CUresult fail(CUresult r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static CUresult fail(CUresult r, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(last_error, sizeof(last_error), fmt, ap);
        va_end(ap);
        return r;
}

/* Called with mu held: is this process's driver usable? */
static CUresult ready(void)
{
        if (!st.inited)
                return fail(CUDA_ERROR_NOT_INITIALIZED, "CUDA error: initialization error (cuInit not called)");
        if (st.pid != getpid())
                return fail(CUDA_ERROR_NOT_INITIALIZED,
                            "CUDA error: initialization error (CUDA was initialised before this process forked)");
        return CUDA_SUCCESS;
}

static CUresult ready_ctx(void)
{
        CUresult r = ready();
        if (r == CUDA_SUCCESS && !st.have_ctx)
                r = fail(CUDA_ERROR_INVALID_CONTEXT, "CUDA error: invalid device context");
        return r;
}

/* CUDA_VISIBLE_DEVICES: indices or GPU-UUID prefixes, comma-separated; like CUDA, parsing
 * stops at the first entry that names no device. Unset: every GPU. */
static unsigned visible_devices(const struct sim_host *h, unsigned *out)
{
        const char *env = getenv("CUDA_VISIBLE_DEVICES");
        unsigned n = 0;
        if (!env) {
                for (unsigned i = 0; i < h->n_gpus; i++)
                        out[n++] = i;
                return n;
        }
        char tok[128];
        while (*env && n < h->n_gpus) {
                size_t len = strcspn(env, ",");
                int found = -1;
                if (len < sizeof(tok)) {
                        memcpy(tok, env, len);
                        tok[len] = '\0';
                        unsigned idx;
                        if (parse_uint_range(tok, 0, h->n_gpus - 1, &idx) == 0)
                                found = (int)idx;
                        else if (strncmp(tok, "GPU-", 4) == 0)
                                for (unsigned i = 0; i < h->n_gpus; i++)
                                        if (strncmp(h->gpus[i].uuid, tok, len) == 0)
                                                found = (int)i;
                }
                for (unsigned i = 0; i < n; i++)
                        if (found >= 0 && out[i] == (unsigned)found)
                                found = -1; /* a repeated device ends the list too */
                if (found < 0)
                        break;
                out[n++] = (unsigned)found;
                env += len;
                if (*env == ',')
                        env++;
        }
        return n;
}

static int open_and_map(const char *dir, const char *node, int *ret_fd)
{
        char p[PATH_MAX];
        int n = snprintf(p, sizeof(p), "%s/dev/%s", dir, node);
        if (n < 0 || (size_t)n >= sizeof(p))
                return -ENAMETOOLONG;
        int fd = open(p, O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        void *m = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
                int e = -errno;
                close(fd);
                return e;
        }
        *ret_fd = fd;
        return 0;
}

/* `sim set hang=cuInit`: cuInit never returns, as on a wedged driver whose first client blocks
 * in its open or first ioctl (docs/simulator.md). Only that name: "any" is NVML's calls, and
 * the simulated jobs must still start under it. A SIGKILL ends the sleep, as it ends a real
 * client once its driver call returns. */
static void hang_if_asked(const char *dir)
{
        struct sim_knobs *k = malloc(sizeof(*k));
        bool hang = k && sim_knobs_load(dir, k) == 0 && strcmp(k->hang, "cuInit") == 0;
        free(k);
        while (hang)
                pause();
}

static CUresult init_locked(void)
{
        const char *dir = getenv("GHOSTVRAM_SIM");
        char node[32];
        int r;
        if (st.inited)
                return ready();
        if (!dir || !dir[0])
                return fail(CUDA_ERROR_NO_DEVICE, "CUDA error: no CUDA-capable device is detected (GHOSTVRAM_SIM is not set)");
        if (strlen(dir) >= sizeof(st.dir))
                return fail(CUDA_ERROR_INVALID_VALUE, "GHOSTVRAM_SIM is too long");
        r = sim_host_load(dir, &st.host);
        if (r < 0)
                return fail(CUDA_ERROR_NO_DEVICE, "%s is not a simulated host (%s)", dir, strerror(-r));
        hang_if_asked(dir);
        st.nvis = visible_devices(&st.host, st.visible);
        if (st.nvis == 0)
                return fail(CUDA_ERROR_NO_DEVICE, "CUDA error: no CUDA-capable device is detected (CUDA_VISIBLE_DEVICES)");
        st.nfds = 0;
        r = open_and_map(dir, "nvidiactl", &st.fds[st.nfds]);
        if (r == 0)
                r = open_and_map(dir, "nvidia-uvm", &st.fds[++st.nfds]);
        for (unsigned i = 0; r == 0 && i < st.nvis; i++) {
                snprintf(node, sizeof(node), "nvidia%u", st.host.gpus[st.visible[i]].minor);
                r = open_and_map(dir, node, &st.fds[++st.nfds]);
        }
        if (r < 0)
                return fail(CUDA_ERROR_OPERATING_SYSTEM, "cannot open the simulated device files in %s/dev: %s", dir,
                            strerror(-r));
        st.nfds++;
        char owners[PATH_MAX];
        snprintf(owners, sizeof(owners), "%s/owners", dir);
        st.owners_fd = open(owners, O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (st.owners_fd < 0)
                return fail(CUDA_ERROR_OPERATING_SYSTEM, "cannot open %s: %s", owners, strerror(errno));
        memcpy(st.dir, dir, strlen(dir) + 1);
        st.next_va = VA_BASE;
        st.next_handle = 1;
        st.pid = getpid();
        st.inited = true;
        return CUDA_SUCCESS;
}

EXPORT CUresult cuInit(unsigned int Flags);
CUresult cuInit(unsigned int Flags)
{
        if (Flags != 0)
                return fail(CUDA_ERROR_INVALID_VALUE, "cuInit: Flags must be 0");
        pthread_mutex_lock(&mu);
        CUresult r = init_locked();
        pthread_mutex_unlock(&mu);
        return r;
}

EXPORT CUresult cuDriverGetVersion(int *driverVersion);
CUresult cuDriverGetVersion(int *driverVersion)
{
        if (!driverVersion)
                return CUDA_ERROR_INVALID_VALUE;
        *driverVersion = 12060; /* the CUDA version of driver 560 (the `current` NVML variant) */
        return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGetCount(int *count)
{
        pthread_mutex_lock(&mu);
        CUresult r = ready();
        if (r == CUDA_SUCCESS && count)
                *count = (int)st.nvis;
        pthread_mutex_unlock(&mu);
        return count ? r : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
        pthread_mutex_lock(&mu);
        CUresult r = ready();
        if (r == CUDA_SUCCESS && (ordinal < 0 || (unsigned)ordinal >= st.nvis))
                r = fail(CUDA_ERROR_INVALID_DEVICE, "CUDA error: invalid device ordinal (GPU %d; %u visible)", ordinal,
                         st.nvis);
        if (r == CUDA_SUCCESS && device)
                *device = ordinal;
        pthread_mutex_unlock(&mu);
        return device ? r : CUDA_ERROR_INVALID_VALUE;
}

static int hexval(char c)
{
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The 16 bytes of "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (what NVML prints of them). */
static CUresult uuid_of(CUuuid *uuid, CUdevice dev)
{
        pthread_mutex_lock(&mu);
        CUresult r = ready();
        if (r == CUDA_SUCCESS && (dev < 0 || (unsigned)dev >= st.nvis))
                r = fail(CUDA_ERROR_INVALID_DEVICE, "CUDA error: invalid device %d", dev);
        if (r == CUDA_SUCCESS) {
                const char *s = st.host.gpus[st.visible[dev]].uuid;
                unsigned k = 0;
                if (strncmp(s, "GPU-", 4) == 0)
                        s += 4;
                for (; *s && k < 32; s++) {
                        if (*s == '-')
                                continue;
                        int v = hexval(*s);
                        if (v < 0)
                                break;
                        if (k % 2 == 0)
                                uuid->bytes[k / 2] = (char)(v << 4);
                        else
                                uuid->bytes[k / 2] = (char)(uuid->bytes[k / 2] | v);
                        k++;
                }
                if (k != 32)
                        r = fail(CUDA_ERROR_UNKNOWN, "GPU %d has no valid UUID", dev);
        }
        pthread_mutex_unlock(&mu);
        return r;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
        return uuid ? uuid_of(uuid, dev) : CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
        return uuid ? uuid_of(uuid, dev) : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
        pthread_mutex_lock(&mu);
        CUresult r = ready();
        if (r == CUDA_SUCCESS && (dev < 0 || (unsigned)dev >= st.nvis || !bytes))
                r = CUDA_ERROR_INVALID_VALUE;
        if (r == CUDA_SUCCESS)
                *bytes = (size_t)st.host.gpus[st.visible[dev]].total_bytes;
        pthread_mutex_unlock(&mu);
        return r;
}

/* Open (creating it when missing, as nvidia-modprobe does) a MIG capability node: a descriptor
 * only, CUDA does not map them. */
static int open_cap(const char *dir, unsigned minor, int *ret_fd)
{
        char p[PATH_MAX];
        int r = sim_mig_cap_path(dir, minor, p, sizeof(p));
        if (r < 0)
                return r;
        int fd = open(p, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0444);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
        (void)flags;
        if (!pctx)
                return CUDA_ERROR_INVALID_VALUE;
        pthread_mutex_lock(&mu);
        CUresult r = ready();
        if (r == CUDA_SUCCESS && (dev < 0 || (unsigned)dev >= st.nvis))
                r = fail(CUDA_ERROR_INVALID_DEVICE, "CUDA error: invalid device ordinal (GPU %d; %u visible)", dev, st.nvis);
        if (r == CUDA_SUCCESS && st.have_ctx)
                r = fail(CUDA_ERROR_NOT_SUPPORTED, "the simulated driver has one context per process");
        /* a MIG device: its GPU instance's and its compute instance's capabilities, as CUDA opens
         * them to reach it (the GPU's own node stays open too) */
        for (int ci = 0; r == CUDA_SUCCESS && mig_gi != SIM_GI_NONE && ci < 2; ci++) {
                unsigned minor = sim_mig_cap_minor(st.host.gpus[st.visible[dev]].minor, mig_gi, ci == 1);
                int e = st.nfds < MAX_FDS ? open_cap(st.dir, minor, &st.fds[st.nfds]) : -EMFILE;
                if (e < 0)
                        r = fail(CUDA_ERROR_OPERATING_SYSTEM, "cannot open the simulated device files in %s/dev: %s",
                                 st.dir, strerror(-e));
                else
                        st.nfds++;
        }
        if (r == CUDA_SUCCESS) {
                __atomic_store_n(&st.ctx_dev, dev, __ATOMIC_RELAXED);
                __atomic_store_n(&st.have_ctx, true, __ATOMIC_RELEASE);
                *pctx = (CUcontext)(uintptr_t)(dev + 1);
        }
        pthread_mutex_unlock(&mu);
        return r;
}

/* cuCtxDestroy_v2: what is still allocated is freed with the context (its charge credited, as
 * the driver frees a destroyed context's memory); the process may make a new one. */
static CUresult charge(int64_t delta);
EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx);
CUresult cuCtxDestroy_v2(CUcontext ctx)
{
        pthread_mutex_lock(&mu);
        CUresult r = ready_ctx();
        if (r == CUDA_SUCCESS && ctx != (CUcontext)(uintptr_t)(st.ctx_dev + 1))
                r = fail(CUDA_ERROR_INVALID_CONTEXT, "CUDA error: invalid device context");
        int64_t held = 0;
        for (size_t i = 0; r == CUDA_SUCCESS && i < st.n; i++)
                held += st.a[i].kind == A_MEM ? (int64_t)st.a[i].size : 0;
        if (r == CUDA_SUCCESS && held && st.registered)
                r = charge(-held);
        if (r == CUDA_SUCCESS) {
                st.n = 0;
                __atomic_store_n(&st.have_ctx, false, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&mu);
        return r;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuCtxGetDevice(CUdevice *device)
{
        /* no lock, as in the real driver (the current context is thread-local there): an
         * allocation tracker calls this after every allocation, and must not queue behind
         * another thread's allocation in flight. ctx_dev is written before have_ctx. */
        if (!device)
                return CUDA_ERROR_INVALID_VALUE;
        if (!__atomic_load_n(&st.have_ctx, __ATOMIC_ACQUIRE) || __atomic_load_n(&st.pid, __ATOMIC_RELAXED) != getpid())
                return CUDA_ERROR_INVALID_CONTEXT;
        *device = __atomic_load_n(&st.ctx_dev, __ATOMIC_RELAXED);
        return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void);
CUresult cuCtxSynchronize(void)
{
        pthread_mutex_lock(&mu);
        CUresult r = ready_ctx();
        pthread_mutex_unlock(&mu);
        return r;
}

/* ---- the allocation table (mu held) -------------------------------------------------------- */

static struct alloc *find(uint8_t kind, uint64_t addr)
{
        for (size_t i = 0; i < st.n; i++)
                if (st.a[i].kind == kind && st.a[i].addr == addr)
                        return &st.a[i];
        return NULL;
}

static void drop(struct alloc *a)
{
        *a = st.a[--st.n];
}

static CUresult charge(int64_t delta)
{
        char err[SIM_ERR_LEN];
        int e;
        if (delta == 0)
                return CUDA_SUCCESS;
        if (!st.registered) {
                /* the first allocation registers the context with the driver, charged with it
                 * (a failed first allocation leaves no context behind) */
                e = delta > 0 ? sim_context_create_ex(st.dir, st.visible[st.ctx_dev], mig_gi, mps_client, (uint64_t)delta,
                                                      st.fds[0], st.owners_fd, &st.ctx_id, err, sizeof(err))
                              : -EINVAL;
                if (e == 0)
                        st.registered = true;
        } else {
                e = sim_context_charge(st.dir, st.ctx_id, delta, st.owners_fd, err, sizeof(err));
        }
        if (e == 0)
                return CUDA_SUCCESS;
        return fail(e == -ENOMEM   ? CUDA_ERROR_OUT_OF_MEMORY
                    : e == -ENODEV ? CUDA_ERROR_INVALID_DEVICE
                                   : CUDA_ERROR_UNKNOWN,
                    "%s", err);
}

static CUresult alloc_locked(uint8_t kind, CUdeviceptr *dptr, size_t bytesize, bool charged)
{
        CUresult r = ready_ctx();
        if (r != CUDA_SUCCESS)
                return r;
        if (!dptr || bytesize == 0)
                return fail(CUDA_ERROR_INVALID_VALUE, "CUDA error: invalid argument");
        if (st.n >= MAX_ALLOCS)
                return fail(CUDA_ERROR_OUT_OF_MEMORY, "the simulated driver tracks at most %d allocations", MAX_ALLOCS);
        if (bytesize > ((uint64_t)1 << 44))
                return fail(CUDA_ERROR_OUT_OF_MEMORY, "CUDA error: out of memory");
        if (charged && (r = charge((int64_t)bytesize)) != CUDA_SUCCESS)
                return r;
        struct alloc *a = &st.a[st.n++];
        memset(a, 0, sizeof(*a));
        a->kind = kind;
        a->addr = st.next_va;
        a->size = bytesize;
        st.next_va += (bytesize + VA_ALIGN - 1) / VA_ALIGN * VA_ALIGN;
        *dptr = a->addr;
        return CUDA_SUCCESS;
}

static CUresult mem_alloc(uint8_t kind, CUdeviceptr *dptr, size_t bytesize, bool charged)
{
        pthread_mutex_lock(&mu);
        CUresult r = alloc_locked(kind, dptr, bytesize, charged);
        pthread_mutex_unlock(&mu);
        return r;
}

static CUresult mem_free(CUdeviceptr dptr)
{
        pthread_mutex_lock(&mu);
        CUresult r = ready_ctx();
        if (r != CUDA_SUCCESS)
                goto out;
        struct alloc *a = find(A_MEM, dptr);
        if (!a)
                a = find(A_MANAGED, dptr);
        if (!a) {
                r = fail(CUDA_ERROR_INVALID_VALUE, "CUDA error: invalid argument (no allocation at 0x%llx)", dptr);
                goto out;
        }
        if (a->kind == A_MEM)
                r = charge(-(int64_t)a->size);
        if (r == CUDA_SUCCESS)
                drop(a);
out:
        pthread_mutex_unlock(&mu);
        return r;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
        return mem_alloc(A_MEM, dptr, bytesize, true);
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                   unsigned int ElementSizeBytes);
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
        if (!pPitch || !WidthInBytes || !Height || (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
                return CUDA_ERROR_INVALID_VALUE;
        size_t pitch = (WidthInBytes + 511) / 512 * 512; /* rows aligned as the texture unit wants */
        if (Height > ((uint64_t)1 << 44) / pitch)
                return CUDA_ERROR_OUT_OF_MEMORY;
        CUresult r = mem_alloc(A_MEM, dptr, pitch * Height, true);
        if (r == CUDA_SUCCESS)
                *pPitch = pitch;
        return r;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
        (void)flags;
        /* UVM memory: the real driver charges it to no process (NVML's lists miss it) */
        return mem_alloc(A_MANAGED, dptr, bytesize, false);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
        (void)hStream; /* stream order: this driver has no work in flight */
        return mem_alloc(A_MEM, dptr, bytesize, true);
}
EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
        (void)hStream;
        return mem_alloc(A_MEM, dptr, bytesize, true);
}
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
        (void)pool;
        (void)hStream;
        return mem_alloc(A_MEM, dptr, bytesize, true);
}
EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
        (void)pool;
        (void)hStream;
        return mem_alloc(A_MEM, dptr, bytesize, true);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemFree_v2(CUdeviceptr dptr)
{
        return mem_free(dptr);
}
EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
        (void)hStream;
        return mem_free(dptr);
}
EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
        (void)hStream;
        return mem_free(dptr);
}

/* ---- virtual memory management --------------------------------------------------------------- */

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                            unsigned long long flags);
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
        if (!handle || !prop || flags != 0 || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
            prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || size == 0 || size % VA_ALIGN)
                return fail(CUDA_ERROR_INVALID_VALUE, "CUDA error: invalid argument (cuMemCreate)");
        pthread_mutex_lock(&mu);
        CUresult r = ready_ctx();
        if (r == CUDA_SUCCESS && prop->location.id != st.ctx_dev)
                r = fail(CUDA_ERROR_NOT_SUPPORTED, "the simulated driver allocates on the context's device only");
        if (r == CUDA_SUCCESS && st.n >= MAX_ALLOCS)
                r = fail(CUDA_ERROR_OUT_OF_MEMORY, "too many allocations");
        if (r == CUDA_SUCCESS)
                r = charge((int64_t)size);
        if (r == CUDA_SUCCESS) {
                struct alloc *a = &st.a[st.n++];
                memset(a, 0, sizeof(*a));
                a->kind = A_HANDLE;
                a->addr = st.next_handle++;
                a->size = size;
                *handle = a->addr;
        }
        pthread_mutex_unlock(&mu);
        return r;
}

static bool handle_mapped(uint64_t h)
{
        for (size_t i = 0; i < st.n; i++)
                if (st.a[i].kind == A_MAP && st.a[i].handle == h)
                        return true;
        return false;
}

/* A released handle's memory goes with its last mapping (the VMM documentation's rule). */
static CUresult handle_settle(struct alloc *h)
{
        if (!h->released || handle_mapped(h->addr))
                return CUDA_SUCCESS;
        CUresult r = charge(-(int64_t)h->size);
        if (r == CUDA_SUCCESS)
                drop(h);
        return r;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
        pthread_mutex_lock(&mu);
        CUresult r = ready_ctx();
        if (r != CUDA_SUCCESS)
                goto out;
        struct alloc *h = find(A_HANDLE, handle);
        if (!h || h->released) {
                r = fail(CUDA_ERROR_INVALID_VALUE, "CUDA error: invalid handle");
                goto out;
        }
        h->released = true;
        r = handle_settle(h);
out:
        pthread_mutex_unlock(&mu);
        return r;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                         unsigned long long flags);
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
        pthread_mutex_lock(&mu);
        CUresult r = ready_ctx();
        if (r != CUDA_SUCCESS)
                goto out;
        struct alloc *h = find(A_HANDLE, handle);
        if (!h || h->released || flags || offset || size != h->size || !ptr || find(A_MAP, ptr)) {
                r = fail(CUDA_ERROR_INVALID_VALUE, "CUDA error: invalid argument (cuMemMap)");
                goto out;
        }
        if (st.n >= MAX_ALLOCS) {
                r = fail(CUDA_ERROR_OUT_OF_MEMORY, "too many allocations");
                goto out;
        }
        struct alloc *m = &st.a[st.n++];
        memset(m, 0, sizeof(*m));
        m->kind = A_MAP;
        m->addr = ptr;
        m->size = size;
        m->handle = handle;
out:
        pthread_mutex_unlock(&mu);
        return r;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
        pthread_mutex_lock(&mu);
        CUresult r = ready_ctx();
        if (r != CUDA_SUCCESS)
                goto out;
        struct alloc *m = find(A_MAP, ptr);
        if (!m || m->size != size) {
                r = fail(CUDA_ERROR_INVALID_VALUE, "CUDA error: invalid argument (cuMemUnmap)");
                goto out;
        }
        uint64_t h = m->handle;
        drop(m);
        struct alloc *ha = find(A_HANDLE, h);
        if (ha)
                r = handle_settle(ha);
out:
        pthread_mutex_unlock(&mu);
        return r;
}

/* ---- errors and entry points ------------------------------------------------------------------ */

EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr);
CUresult cuGetErrorString(CUresult error, const char **pStr)
{
        static const struct {
                CUresult code;
                const char *s;
        } names[] = {
                { CUDA_SUCCESS, "no error" },
                { CUDA_ERROR_INVALID_VALUE, "invalid argument" },
                { CUDA_ERROR_OUT_OF_MEMORY, "out of memory" },
                { CUDA_ERROR_NOT_INITIALIZED, "initialization error" },
                { CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected" },
                { CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal" },
                { CUDA_ERROR_INVALID_CONTEXT, "invalid device context" },
                { CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS" },
                { CUDA_ERROR_NOT_FOUND, "named symbol not found" },
                { CUDA_ERROR_NOT_SUPPORTED, "operation not supported" },
                { CUDA_ERROR_UNKNOWN, "unknown error" },
        };
        if (!pStr)
                return CUDA_ERROR_INVALID_VALUE;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (names[i].code == error) {
                        *pStr = names[i].s;
                        return CUDA_SUCCESS;
                }
        *pStr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *symbolStatus);

/* What cuGetProcAddress answers: the base name, from which CUDA version this function is what
 * it means, and whether it is the per-thread-default-stream variant. */
static const struct proc {
        const char *name;
        int since;
        int ptds;                       /* -1 either, 0 legacy stream, 1 per-thread */
        void *fn;
} procs[] = {
        { "cuInit", 2000, -1, (void *)cuInit },
        { "cuDriverGetVersion", 2020, -1, (void *)cuDriverGetVersion },
        { "cuDeviceGetCount", 2000, -1, (void *)cuDeviceGetCount },
        { "cuDeviceGet", 2000, -1, (void *)cuDeviceGet },
        { "cuDeviceGetUuid", 11040, -1, (void *)cuDeviceGetUuid_v2 },
        { "cuDeviceGetUuid", 9020, -1, (void *)cuDeviceGetUuid },
        { "cuDeviceTotalMem", 3020, -1, (void *)cuDeviceTotalMem_v2 },
        { "cuCtxCreate", 3020, -1, (void *)cuCtxCreate_v2 },
        { "cuCtxGetDevice", 2000, -1, (void *)cuCtxGetDevice },
        { "cuCtxSynchronize", 2000, -1, (void *)cuCtxSynchronize },
        { "cuMemAlloc", 3020, -1, (void *)cuMemAlloc_v2 },
        { "cuMemAllocPitch", 3020, -1, (void *)cuMemAllocPitch_v2 },
        { "cuMemAllocManaged", 6000, -1, (void *)cuMemAllocManaged },
        { "cuMemAllocAsync", 11020, 0, (void *)cuMemAllocAsync },
        { "cuMemAllocAsync", 11020, 1, (void *)cuMemAllocAsync_ptsz },
        { "cuMemAllocFromPoolAsync", 11020, 0, (void *)cuMemAllocFromPoolAsync },
        { "cuMemAllocFromPoolAsync", 11020, 1, (void *)cuMemAllocFromPoolAsync_ptsz },
        { "cuMemFree", 3020, -1, (void *)cuMemFree_v2 },
        { "cuMemFreeAsync", 11020, 0, (void *)cuMemFreeAsync },
        { "cuMemFreeAsync", 11020, 1, (void *)cuMemFreeAsync_ptsz },
        { "cuMemCreate", 10020, -1, (void *)cuMemCreate },
        { "cuMemRelease", 10020, -1, (void *)cuMemRelease },
        { "cuMemMap", 10020, -1, (void *)cuMemMap },
        { "cuMemUnmap", 10020, -1, (void *)cuMemUnmap },
        { "cuGetErrorString", 6000, -1, (void *)cuGetErrorString },
        { "cuGetProcAddress", 12000, -1, (void *)cuGetProcAddress_v2 },
        { "cuGetProcAddress", 11030, -1, (void *)cuGetProcAddress },
};

static CUresult proc_lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                            CUdriverProcAddressQueryResult *status)
{
        bool named = false;
        int want = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM ? 1 : 0;
        if (!symbol || !pfn)
                return CUDA_ERROR_INVALID_VALUE;
        *pfn = NULL;
        for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
                const struct proc *p = &procs[i];
                if (strcmp(p->name, symbol) != 0)
                        continue;
                named = true;
                if (version < p->since || (p->ptds >= 0 && p->ptds != want))
                        continue;
                *pfn = p->fn;
                if (status)
                        *status = CU_GET_PROC_ADDRESS_SUCCESS;
                return CUDA_SUCCESS;
        }
        if (status)
                *status = named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
        return proc_lookup(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
        return proc_lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* ---- the simulator's own calls (not CUDA) ------------------------------------------------------- */

/* The simulated context id of this process's context (for the teardown watcher). */
EXPORT CUresult gvsim_ctx_id(unsigned *id);
CUresult gvsim_ctx_id(unsigned *id)
{
        pthread_mutex_lock(&mu);
        CUresult r = ready_ctx();
        if (r == CUDA_SUCCESS && !st.registered)
                r = fail(CUDA_ERROR_INVALID_CONTEXT, "the context has no allocation yet");
        if (r == CUDA_SUCCESS && id)
                *id = st.ctx_id;
        pthread_mutex_unlock(&mu);
        return r;
}

/* The device descriptors cuInit opened (nvidiactl first), up to max; returns how many. For
 * gv-simcuda's --close-fds-in-workers: a worker that closes them keeps only the mappings. */
EXPORT int gvsim_device_fds(int *out, int max);
int gvsim_device_fds(int *out, int max)
{
        int n = 0;
        pthread_mutex_lock(&mu);
        for (int i = 0; st.inited && i < st.nfds && n < max; i++)
                out[n++] = st.fds[i];
        pthread_mutex_unlock(&mu);
        return n;
}

/* Run in MIG GPU instance gi (SIM_GI_NONE: none) — what CUDA_VISIBLE_DEVICES=MIG-... selects on
 * a real host. Before cuCtxCreate. */
EXPORT void gvsim_set_mig_instance(unsigned gi);
void gvsim_set_mig_instance(unsigned gi)
{
        pthread_mutex_lock(&mu);
        mig_gi = gi;
        pthread_mutex_unlock(&mu);
}

EXPORT void gvsim_set_mps_client(int on);
void gvsim_set_mps_client(int on)
{
        pthread_mutex_lock(&mu);
        mps_client = on != 0;
        pthread_mutex_unlock(&mu);
}

/* The message of the last failure, in CUDA's wording where CUDA has one. */
EXPORT const char *gvsim_last_error(void);
const char *gvsim_last_error(void)
{
        return last_error;
}
