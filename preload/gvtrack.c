/* libghostvram-track.so: the allocation tracker that `ghostvram track` preloads (LD_PRELOAD).
 *
 * It interposes the CUDA driver API's allocation entry points and appends one fixed-size
 * record per allocation and free to a per-process ledger (src/track/ledger_format.h) before
 * the call returns, so that what a process had allocated survives its kill -9. The CUDA
 * runtime (>= 11.3) does not call those entry points by symbol: it dlopens libcuda.so.1, looks
 * up cuGetProcAddress with dlsym on that handle and fetches every other entry point through
 * it. So this library also interposes dlsym (for the cu* names it tracks) and both versions of
 * cuGetProcAddress, and hands back its own wrappers. docs/track.md.
 *
 * Rules of the hot path: no malloc, no lock (atomics only), one write() per record; the
 * ledger is opened lazily by the first allocation of a process (a forked child that never
 * allocates writes nothing; pthread_atfork drops the parent's ledger in the child). Nothing is
 * printed: a ledger that cannot be written costs the process nothing but the record. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "track/cuda_abi.h"
#include "track/ledger_format.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- the entry points we track: one slot each, holding the driver's own function ---------- */

enum slot_id {
        S_MEM_ALLOC,
        S_MEM_ALLOC_PITCH,
        S_MEM_ALLOC_MANAGED,
        S_MEM_ALLOC_ASYNC,
        S_MEM_ALLOC_ASYNC_PTSZ,
        S_MEM_ALLOC_POOL_ASYNC,
        S_MEM_ALLOC_POOL_ASYNC_PTSZ,
        S_MEM_FREE,
        S_MEM_FREE_ASYNC,
        S_MEM_FREE_ASYNC_PTSZ,
        S_MEM_CREATE,
        S_MEM_RELEASE,
        S_MEM_MAP,
        S_MEM_UNMAP,
        S_GET_PROC_ADDRESS,
        S_GET_PROC_ADDRESS_V2,
        S_N,
};

struct slot {
        const char *symbol;             /* the exported name */
        const char *base;               /* the name cuGetProcAddress is asked for */
        int min_version;                /* cuGetProcAddress's cudaVersion from which `symbol` is
                                         * what `base` means (older: another ABI, not tracked) */
        bool ptsz;                      /* the per-thread-default-stream variant */
        void *wrapper;                  /* ours */
        _Atomic(void *) real;           /* the driver's */
};

/* ---- process state ------------------------------------------------------------------------ */

enum { L_CLOSED, L_OPENING, L_OPEN, L_FAILED };

static char ledger_dir[PATH_MAX];       /* from GHOSTVRAM_LEDGER_DIR at load; "" = off */
static uint64_t session_id;
static atomic_int ledger_state = L_CLOSED;
static int ledger_fd = -1;
static atomic_ulong dropped;            /* records that could not be written */
static uintptr_t self_lo, self_hi;      /* this library's text: frames inside it are skipped */

#define MAX_MODULES 256
struct module {
        uintptr_t lo, hi;
};
static struct module modules[MAX_MODULES];      /* loaded objects already in this ledger */
static atomic_int n_modules;
static atomic_int modules_busy;
static atomic_int module_rescans;

#define MAX_DEVICES 64
static CUuuid dev_uuid[MAX_DEVICES];
static atomic_int dev_uuid_state[MAX_DEVICES];  /* 0 unknown, 1 filling, 2 known, 3 none */


static __thread pid_t my_tid;

/* glibc's dlsym, and the pieces of our own (at the end of the file) */
__attribute__((visibility("hidden"))) void *(*gvtrack_real_dlsym)(void *, const char *);
__attribute__((visibility("hidden"))) void *gvtrack_resolve_dlsym(void);
__attribute__((visibility("hidden"))) void *gvtrack_dlsym_hook(void *handle, const char *symbol);

/* name as the objects after this library define it (the driver, for the cu* names). */
static void *next_symbol(const char *name)
{
        void *(*real)(void *, const char *) = (void *(*)(void *, const char *))gvtrack_resolve_dlsym();
        return real ? real(RTLD_NEXT, name) : NULL;
}

/* ---- small async-signal-safe helpers ------------------------------------------------------- */

static size_t put_u64(char *out, uint64_t v)
{
        char tmp[24];
        size_t n = 0, k = 0;
        do {
                tmp[n++] = (char)('0' + v % 10);
                v /= 10;
        } while (v);
        while (n)
                out[k++] = tmp[--n];
        return k;
}

static int write_whole(int fd, const void *p, size_t len)
{
        const char *b = p;
        while (len) {
                ssize_t n = write(fd, b, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -1;
                b += n;
                len -= (size_t)n;
        }
        return 0;
}

static uint64_t now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Field 22 (starttime) and field 4 (ppid) of this process's stat in /proc, read after the last
 * ')'. Opened as "PID/stat" relative to /proc, never as "/proc/self/stat": the same file on a
 * kernel, but qemu-user (the arm64 tests, docs/arm64.md) answers that path itself, with its own
 * start time (a few ticks off the kernel's), and the ledger's name must carry the kernel's,
 * which ghostvram compares with /proc/PID/stat to tell a live owner from a dead one. */
static int self_stat(uint64_t *start, uint32_t *ppid)
{
        char b[1024];
        int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -1;
        char name[32];
        snprintf(name, sizeof(name), "%d/stat", (int)getpid());
        int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
        close(dfd);
        if (fd < 0)
                return -1;
        ssize_t n = read(fd, b, sizeof(b) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        b[n] = '\0';
        char *p = strrchr(b, ')');
        if (!p)
                return -1;
        p++;
        /* p: " S ppid pgrp ..." — field 3 is the state; count fields from 3 */
        int field = 2;
        uint64_t v = 0;
        bool in = false;
        for (; *p; p++) {
                if (*p == ' ') {
                        if (in) {
                                if (field == 4)
                                        *ppid = (uint32_t)v;
                                if (field == 22) {
                                        *start = v;
                                        return 0;
                                }
                        }
                        in = false;
                        continue;
                }
                if (!in) {
                        in = true;
                        field++;
                        v = 0;
                }
                if (*p >= '0' && *p <= '9')
                        v = v * 10 + (uint64_t)(*p - '0');
        }
        return -1;
}

/* ---- the ledger file ------------------------------------------------------------------------ */

static void seal(struct gvl_record *r)
{
        if (!my_tid)
                my_tid = (pid_t)syscall(SYS_gettid);
        r->tid = (uint32_t)my_tid;
        r->check = gvl_check(r);
}

static int ledger_create(void)
{
        char path[PATH_MAX], tmp[PATH_MAX];
        uint64_t start = 0;
        uint32_t ppid = 0;
        pid_t pid = getpid();
        if (self_stat(&start, &ppid) < 0)
                return -1;
        size_t dl = strlen(ledger_dir);
        if (dl + 64 >= sizeof(path))
                return -1;
        memcpy(path, ledger_dir, dl);
        size_t k = dl;
        path[k++] = '/';
        k += put_u64(path + k, (uint64_t)pid);
        path[k++] = '-';
        k += put_u64(path + k, start);
        memcpy(path + k, GVL_SUFFIX, sizeof(GVL_SUFFIX));
        /* the same PID and start time: this process exec'd a new image after an earlier one
         * had allocated. The exec released every allocation: say so and go on in that file */
        int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
                struct gvl_record r = { .kind = GVL_EXEC, .device = -1, .time_ns = now_ns() };
                seal(&r);
                if (write_whole(fd, &r, sizeof(r)) < 0) {
                        close(fd);
                        return -1;
                }
                ledger_fd = fd;
                return 0;
        }
        /* a new file: the header goes into a temporary name first, so that a kill at any
         * instant leaves either no ledger or one with a whole header */
        memcpy(tmp, ledger_dir, dl);
        k = dl;
        memcpy(tmp + k, "/.", 2);
        k += 2;
        k += put_u64(tmp + k, (uint64_t)pid);
        tmp[k++] = '-';
        k += put_u64(tmp + k, start);
        memcpy(tmp + k, ".tmp", 5);
        (void)unlink(tmp); /* left by an earlier process with this PID and start: impossible
                            * unless the clock of boot ticks repeats; never block on it */
        fd = open(tmp, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -1;
        struct gvl_header h;
        memset(&h, 0, sizeof(h));
        memcpy(h.magic, GVL_MAGIC, sizeof(h.magic));
        h.version = GVL_VERSION;
        h.rec_size = GVL_REC_SIZE;
        h.pid = (uint32_t)pid;
        h.ppid = ppid;
        h.start_ticks = start;
        h.created_ns = now_ns();
        h.session = session_id;
        h.bom = GVL_BOM;
        int cfd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
        if (cfd >= 0) {
                ssize_t n = read(cfd, h.comm, sizeof(h.comm) - 1);
                if (n > 0 && h.comm[n - 1] == '\n')
                        h.comm[n - 1] = '\0';
                close(cfd);
        }
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe));
        if (n > 0) {
                size_t len = (size_t)n, keep = sizeof(h.exe) - 1;
                memcpy(h.exe, exe + (len > keep ? len - keep : 0), len > keep ? keep : len);
        }
        h.check = gvl_check(&h);
        if (write_whole(fd, &h, sizeof(h)) < 0 || rename(tmp, path) < 0) {
                close(fd);
                (void)unlink(tmp);
                return -1;
        }
        ledger_fd = fd;
        return 0;
}

/* The ledger's descriptor, opening it on the first record of this process; -1 if there is
 * none. Threads racing to open wait (bounded) for the one that does. */
static int ledger_get(void)
{
        int st = atomic_load_explicit(&ledger_state, memory_order_acquire);
        if (st == L_OPEN)
                return ledger_fd;
        if (st == L_FAILED || !ledger_dir[0])
                return -1;
        int expect = L_CLOSED;
        if (atomic_compare_exchange_strong(&ledger_state, &expect, L_OPENING)) {
                atomic_store_explicit(&n_modules, 0, memory_order_relaxed);
                int r = ledger_create();
                atomic_store_explicit(&ledger_state, r == 0 ? L_OPEN : L_FAILED, memory_order_release);
                return r == 0 ? ledger_fd : -1;
        }
        /* another thread (or a signal handler interrupted this one) is opening it */
        for (int i = 0; i < 100000; i++) {
                st = atomic_load_explicit(&ledger_state, memory_order_acquire);
                if (st == L_OPEN)
                        return ledger_fd;
                if (st == L_FAILED)
                        return -1;
                sched_yield();
        }
        return -1;
}

static void ledger_append(struct gvl_record *r)
{
        int fd = ledger_get();
        seal(r);
        if (fd < 0 || write_whole(fd, r, sizeof(*r)) < 0)
                atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
}

/* ---- loaded objects: what turns a return address into object+offset after the process died */

struct phdr_ctx {
        int fd;
};

/* The address span of a loaded object's segments (only the executable ones with exec_only). */
static bool object_span(const struct dl_phdr_info *info, bool exec_only, uintptr_t *ret_lo, uintptr_t *ret_hi)
{
        uintptr_t lo = UINTPTR_MAX, hi = 0;
        for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                if (ph->p_type != PT_LOAD || (exec_only && !(ph->p_flags & PF_X)))
                        continue;
                uintptr_t a = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
                if (a < lo)
                        lo = a;
                if (a + ph->p_memsz > hi)
                        hi = a + ph->p_memsz;
        }
        *ret_lo = lo;
        *ret_hi = hi;
        return hi > lo;
}

static int record_module(struct dl_phdr_info *info, size_t size, void *data)
{
        struct phdr_ctx *c = data;
        (void)size;
        uintptr_t lo, hi;
        if (!object_span(info, true, &lo, &hi))
                return 0;
        int n = atomic_load_explicit(&n_modules, memory_order_relaxed);
        for (int i = 0; i < n; i++)
                if (modules[i].lo == lo)
                        return 0;
        if (n >= MAX_MODULES)
                return 1;
        struct gvl_record r = { .kind = GVL_MODULE, .device = -1, .time_ns = now_ns() };
        /* the load bias: a symbol's file address is addr - base */
        r.addr = (uint64_t)info->dlpi_addr;
        r.aux = lo;
        r.size = hi - lo;
        const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : NULL;
        char exe[PATH_MAX];
        if (!name) {
                ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
                if (k <= 0)
                        return 0;
                exe[k] = '\0';
                name = exe;
        }
        size_t len = strlen(name), keep = sizeof(r.u.path) - 1;
        memcpy(r.u.path, name + (len > keep ? len - keep : 0), len > keep ? keep : len);
        seal(&r);
        if (write_whole(c->fd, &r, sizeof(r)) < 0)
                return 1;
        modules[n].lo = lo;
        modules[n].hi = hi;
        atomic_store_explicit(&n_modules, n + 1, memory_order_release);
        return 0;
}

static bool known_address(uintptr_t a)
{
        int n = atomic_load_explicit(&n_modules, memory_order_acquire);
        for (int i = 0; i < n; i++)
                if (a >= modules[i].lo && a < modules[i].hi)
                        return true;
        return false;
}

/* Make sure the objects that hold the frames are described in the ledger (once per object;
 * a frame in an object loaded later makes one more pass, at most 64 passes per process). */
static void note_modules(const uint64_t *frames, unsigned n)
{
        bool all = true;
        for (unsigned i = 0; i < n && all; i++)
                all = known_address((uintptr_t)frames[i]);
        if (all || atomic_load_explicit(&module_rescans, memory_order_relaxed) >= 64)
                return;
        int fd = ledger_get();
        if (fd < 0)
                return;
        int expect = 0;
        if (!atomic_compare_exchange_strong(&modules_busy, &expect, 1))
                return; /* another thread is at it; its pass covers the same objects */
        atomic_fetch_add_explicit(&module_rescans, 1, memory_order_relaxed);
        struct phdr_ctx c = { .fd = fd };
        dl_iterate_phdr(record_module, &c);
        atomic_store_explicit(&modules_busy, 0, memory_order_release);
}

/* ---- one record ------------------------------------------------------------------------------ */

/* Helpers of the driver that records need (not tracked): found by symbol, or next to a
 * tracked entry point found through dlsym on a handle or through cuGetProcAddress. */
static _Atomic(void *) aux_ctx_get_device, aux_device_get_uuid;

static void aux_set(_Atomic(void *) *slot, void *p)
{
        void *expect = NULL;
        if (p)
                atomic_compare_exchange_strong(slot, &expect, p);
}

static void *aux_get(_Atomic(void *) *slot, const char *sym, const char *sym2)
{
        void *p = atomic_load_explicit(slot, memory_order_acquire);
        if (p)
                return p;
        p = next_symbol(sym);
        if (!p && sym2)
                p = next_symbol(sym2);
        aux_set(slot, p);
        return p;
}

/* The UUID of device d into r (cached per device; filled once by whichever thread comes). */
static void fill_uuid(struct gvl_record *r, int d)
{
        if (d < 0 || d >= MAX_DEVICES)
                return;
        int st = atomic_load_explicit(&dev_uuid_state[d], memory_order_acquire);
        int expect = 0;
        if (st == 0 && atomic_compare_exchange_strong(&dev_uuid_state[d], &expect, 1)) {
                cu_device_get_uuid_fn u =
                        (cu_device_get_uuid_fn)aux_get(&aux_device_get_uuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
                bool ok = u && u(&dev_uuid[d], d) == CUDA_SUCCESS;
                st = ok ? 2 : 3;
                atomic_store_explicit(&dev_uuid_state[d], st, memory_order_release);
        }
        if (st == 2)
                memcpy(r->u.site.uuid, dev_uuid[d].bytes, 16);
}

static int current_device(void)
{
        cu_ctx_get_device_fn get = (cu_ctx_get_device_fn)aux_get(&aux_ctx_get_device, "cuCtxGetDevice", NULL);
        CUdevice d = -1;
        if (!get || get(&d) != CUDA_SUCCESS || d < 0)
                return -1;
        return d;
}

static void record(uint8_t kind, uint8_t api, bool procaddr, uint64_t addr, uint64_t size, uint64_t aux, int device)
{
        if (!ledger_dir[0])
                return;
        struct gvl_record r;
        memset(&r, 0, sizeof(r));
        r.kind = kind;
        r.api = api;
        r.flags = procaddr ? GVL_F_PROCADDR : 0;
        r.time_ns = now_ns();
        r.addr = addr;
        r.size = size;
        r.aux = aux;
        r.device = -1;
        if (kind == GVL_ALLOC || kind == GVL_CREATE) {
                void *bt[GVL_FRAMES + 6];
                int n = backtrace(bt, GVL_FRAMES + 6);
                /* the caller's frames start after our own last one (before ours there may be
                 * an interceptor of backtrace itself, ASan's for one) */
                int first = 0;
                for (int i = 0; i < n; i++)
                        if ((uintptr_t)bt[i] >= self_lo && (uintptr_t)bt[i] < self_hi)
                                first = i + 1;
                unsigned k = 0;
                for (int i = first; i < n && k < GVL_FRAMES; i++)
                        r.u.site.frames[k++] = (uintptr_t)bt[i];
                r.nframes = (uint8_t)k;
                r.device = device >= 0 ? device : current_device();
                fill_uuid(&r, r.device);
                if (ledger_get() >= 0)
                        note_modules(r.u.site.frames, k);
        }
        ledger_append(&r);
}

/* ---- the real functions ------------------------------------------------------------------------ */

static struct slot slots[S_N];

static void *real_of(enum slot_id s)
{
        void *p = atomic_load_explicit(&slots[s].real, memory_order_acquire);
        if (p)
                return p;
        p = next_symbol(slots[s].symbol);
        if (p && p != slots[s].wrapper) {
                void *expect = NULL;
                atomic_compare_exchange_strong(&slots[s].real, &expect, p);
                return atomic_load(&slots[s].real);
        }
        return NULL;
}

#define REAL(s, type) ((type)real_of(s))

/* ---- the wrappers ---------------------------------------------------------------------------------
 * Each entry point has two: the one exported under the driver's name (called by symbol) and a
 * "_pa" twin returned by cuGetProcAddress and dlsym, which marks its records GVL_F_PROCADDR. */

#define WRAP(name, slot, api, kind, params, args, cond, addrexpr, sizeexpr)                      \
        static CUresult name##_impl(bool pa, params)                                         \
        {                                                                                    \
                CUresult (*f)(params) = REAL(slot, CUresult(*)(params));                     \
                if (!f)                                                                      \
                        return CUDA_ERROR_NOT_INITIALIZED;                                   \
                CUresult r = f(args);                                                        \
                if (r == CUDA_SUCCESS && (cond))                                             \
                        record(kind, api, pa, (addrexpr), (sizeexpr), 0, -1);                \
                return r;                                                                    \
        }                                                                                    \
        EXPORT CUresult name(params);                                                        \
        CUresult name(params) { return name##_impl(false, args); }                           \
        static CUresult name##_pa(params) { return name##_impl(true, args); }
#define WRAP_ALLOC(name, slot, api, params, args, sizeexpr) \
        WRAP(name, slot, api, GVL_ALLOC, P(params), P(args), dptr != NULL, *dptr, sizeexpr)
#define WRAP_FREE(name, slot, api, params, args) WRAP(name, slot, api, GVL_FREE, P(params), P(args), true, dptr, 0)

#define P(...) __VA_ARGS__

WRAP_ALLOC(cuMemAlloc_v2, S_MEM_ALLOC, GVL_API_MEM_ALLOC, P(CUdeviceptr *dptr, size_t bytesize), P(dptr, bytesize),
           bytesize)
WRAP_ALLOC(cuMemAllocManaged, S_MEM_ALLOC_MANAGED, GVL_API_MEM_ALLOC_MANAGED,
           P(CUdeviceptr *dptr, size_t bytesize, unsigned int flags), P(dptr, bytesize, flags), bytesize)
WRAP_ALLOC(cuMemAllocAsync, S_MEM_ALLOC_ASYNC, GVL_API_MEM_ALLOC_ASYNC,
           P(CUdeviceptr *dptr, size_t bytesize, CUstream hStream), P(dptr, bytesize, hStream), bytesize)
WRAP_ALLOC(cuMemAllocAsync_ptsz, S_MEM_ALLOC_ASYNC_PTSZ, GVL_API_MEM_ALLOC_ASYNC,
           P(CUdeviceptr *dptr, size_t bytesize, CUstream hStream), P(dptr, bytesize, hStream), bytesize)
WRAP_ALLOC(cuMemAllocFromPoolAsync, S_MEM_ALLOC_POOL_ASYNC, GVL_API_MEM_ALLOC_POOL_ASYNC,
           P(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
           P(dptr, bytesize, pool, hStream), bytesize)
WRAP_ALLOC(cuMemAllocFromPoolAsync_ptsz, S_MEM_ALLOC_POOL_ASYNC_PTSZ, GVL_API_MEM_ALLOC_POOL_ASYNC,
           P(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
           P(dptr, bytesize, pool, hStream), bytesize)
/* the pitch is known only after the call: the size is what the driver reserved */
WRAP_ALLOC(cuMemAllocPitch_v2, S_MEM_ALLOC_PITCH, GVL_API_MEM_ALLOC_PITCH,
           P(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes),
           P(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes), (pPitch ? *pPitch : WidthInBytes) * Height)

WRAP_FREE(cuMemFree_v2, S_MEM_FREE, GVL_API_MEM_FREE, P(CUdeviceptr dptr), P(dptr))
WRAP_FREE(cuMemFreeAsync, S_MEM_FREE_ASYNC, GVL_API_MEM_FREE_ASYNC, P(CUdeviceptr dptr, CUstream hStream),
          P(dptr, hStream))
WRAP_FREE(cuMemFreeAsync_ptsz, S_MEM_FREE_ASYNC_PTSZ, GVL_API_MEM_FREE_ASYNC, P(CUdeviceptr dptr, CUstream hStream),
          P(dptr, hStream))

static CUresult mem_create(bool pa, CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                           unsigned long long flags)
{
        cu_mem_create_fn f = REAL(S_MEM_CREATE, cu_mem_create_fn);
        if (!f)
                return CUDA_ERROR_NOT_INITIALIZED;
        CUresult r = f(handle, size, prop, flags);
        if (r == CUDA_SUCCESS && handle) {
                int dev = prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
                record(GVL_CREATE, GVL_API_MEM_CREATE, pa, *handle, size, 0, dev);
        }
        return r;
}
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                            unsigned long long flags);
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
        return mem_create(false, handle, size, prop, flags);
}
static CUresult cuMemCreate_pa(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                               unsigned long long flags)
{
        return mem_create(true, handle, size, prop, flags);
}

static CUresult mem_release(bool pa, CUmemGenericAllocationHandle handle)
{
        cu_mem_release_fn f = REAL(S_MEM_RELEASE, cu_mem_release_fn);
        if (!f)
                return CUDA_ERROR_NOT_INITIALIZED;
        CUresult r = f(handle);
        if (r == CUDA_SUCCESS)
                record(GVL_RELEASE, GVL_API_MEM_RELEASE, pa, handle, 0, 0, -1);
        return r;
}
EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle) { return mem_release(false, handle); }
static CUresult cuMemRelease_pa(CUmemGenericAllocationHandle handle) { return mem_release(true, handle); }

static CUresult mem_map(bool pa, CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                        unsigned long long flags)
{
        cu_mem_map_fn f = REAL(S_MEM_MAP, cu_mem_map_fn);
        if (!f)
                return CUDA_ERROR_NOT_INITIALIZED;
        CUresult r = f(ptr, size, offset, handle, flags);
        if (r == CUDA_SUCCESS)
                record(GVL_MAP, GVL_API_MEM_MAP, pa, ptr, size, handle, -1);
        return r;
}
EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                         unsigned long long flags);
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
        return mem_map(false, ptr, size, offset, handle, flags);
}
static CUresult cuMemMap_pa(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags)
{
        return mem_map(true, ptr, size, offset, handle, flags);
}

static CUresult mem_unmap(bool pa, CUdeviceptr ptr, size_t size)
{
        cu_mem_unmap_fn f = REAL(S_MEM_UNMAP, cu_mem_unmap_fn);
        if (!f)
                return CUDA_ERROR_NOT_INITIALIZED;
        CUresult r = f(ptr, size);
        if (r == CUDA_SUCCESS)
                record(GVL_UNMAP, GVL_API_MEM_UNMAP, pa, ptr, size, 0, -1);
        return r;
}
EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) { return mem_unmap(false, ptr, size); }
static CUresult cuMemUnmap_pa(CUdeviceptr ptr, size_t size) { return mem_unmap(true, ptr, size); }

/* ---- cuGetProcAddress: hand out our wrappers for what we track -------------------------------- */

/* The wrapper for `p`, the driver's answer to (symbol, cudaVersion, flags), or p itself. */
static void *hook_answer(const char *symbol, int version, cuuint64_t flags, void *p)
{
        if (!p || !symbol || symbol[0] != 'c' || symbol[1] != 'u')
                return p;
        bool ptsz = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
        int best = -1;
        for (int s = 0; s < S_N; s++) {
                const struct slot *sl = &slots[s];
                bool named = strcmp(symbol, sl->symbol) == 0 ||
                             (strcmp(symbol, sl->base) == 0 && version >= sl->min_version);
                if (!named)
                        continue;
                void *real = real_of((enum slot_id)s);
                if (real == p)
                        return sl->wrapper; /* the very function we wrap */
                if (!real && best < 0 && sl->ptsz == ptsz)
                        best = s;
                if (!real && best < 0 && !strcmp(symbol, sl->symbol))
                        best = s;
        }
        if (best < 0)
                return p; /* another ABI version of the name, or a function not tracked */
        void *expect = NULL;
        if (atomic_compare_exchange_strong(&slots[best].real, &expect, p) || expect == p)
                return slots[best].wrapper;
        return p;
}

static CUresult get_proc_address(bool v2, const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *status)
{
        CUresult r;
        if (v2) {
                cu_get_proc_address_v2_fn f = REAL(S_GET_PROC_ADDRESS_V2, cu_get_proc_address_v2_fn);
                if (!f)
                        return CUDA_ERROR_NOT_INITIALIZED;
                r = f(symbol, pfn, cudaVersion, flags, status);
        } else {
                cu_get_proc_address_fn f = REAL(S_GET_PROC_ADDRESS, cu_get_proc_address_fn);
                if (!f)
                        return CUDA_ERROR_NOT_INITIALIZED;
                r = f(symbol, pfn, cudaVersion, flags);
        }
        if (r != CUDA_SUCCESS || !pfn || !*pfn)
                return r;
        void *answer = hook_answer(symbol, cudaVersion, flags, *pfn);
        if (answer != *pfn && !atomic_load(&aux_ctx_get_device)) {
                /* the helpers records need, from the same driver (the runtime's libcuda may
                 * not be in the global scope, where RTLD_NEXT looks) */
                static const char *const aux[] = { "cuCtxGetDevice", "cuDeviceGetUuid" };
                for (int i = 0; i < 2; i++) {
                        void *q = NULL;
                        CUdriverProcAddressQueryResult st;
                        cu_get_proc_address_v2_fn f2 = REAL(S_GET_PROC_ADDRESS_V2, cu_get_proc_address_v2_fn);
                        cu_get_proc_address_fn f1 = REAL(S_GET_PROC_ADDRESS, cu_get_proc_address_fn);
                        CUresult e = v2 && f2 ? f2(aux[i], &q, cudaVersion, 0, &st)
                                     : f1    ? f1(aux[i], &q, cudaVersion, 0)
                                             : CUDA_ERROR_NOT_FOUND;
                        if (e == CUDA_SUCCESS)
                                aux_set(i == 0 ? &aux_ctx_get_device : &aux_device_get_uuid, q);
                }
        }
        *pfn = answer;
        return r;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
        return get_proc_address(false, symbol, pfn, cudaVersion, flags, NULL);
}
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *symbolStatus);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
        return get_proc_address(true, symbol, pfn, cudaVersion, flags, symbolStatus);
}

static struct slot slots[S_N] = {
        [S_MEM_ALLOC] = { "cuMemAlloc_v2", "cuMemAlloc", 3020, false, (void *)cuMemAlloc_v2_pa, NULL },
        [S_MEM_ALLOC_PITCH] = { "cuMemAllocPitch_v2", "cuMemAllocPitch", 3020, false, (void *)cuMemAllocPitch_v2_pa, NULL },
        [S_MEM_ALLOC_MANAGED] = { "cuMemAllocManaged", "cuMemAllocManaged", 0, false, (void *)cuMemAllocManaged_pa, NULL },
        [S_MEM_ALLOC_ASYNC] = { "cuMemAllocAsync", "cuMemAllocAsync", 0, false, (void *)cuMemAllocAsync_pa, NULL },
        [S_MEM_ALLOC_ASYNC_PTSZ] = { "cuMemAllocAsync_ptsz", "cuMemAllocAsync", 0, true, (void *)cuMemAllocAsync_ptsz_pa, NULL },
        [S_MEM_ALLOC_POOL_ASYNC] = { "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 0, false,
                                     (void *)cuMemAllocFromPoolAsync_pa, NULL },
        [S_MEM_ALLOC_POOL_ASYNC_PTSZ] = { "cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync", 0, true,
                                          (void *)cuMemAllocFromPoolAsync_ptsz_pa, NULL },
        [S_MEM_FREE] = { "cuMemFree_v2", "cuMemFree", 3020, false, (void *)cuMemFree_v2_pa, NULL },
        [S_MEM_FREE_ASYNC] = { "cuMemFreeAsync", "cuMemFreeAsync", 0, false, (void *)cuMemFreeAsync_pa, NULL },
        [S_MEM_FREE_ASYNC_PTSZ] = { "cuMemFreeAsync_ptsz", "cuMemFreeAsync", 0, true, (void *)cuMemFreeAsync_ptsz_pa, NULL },
        [S_MEM_CREATE] = { "cuMemCreate", "cuMemCreate", 0, false, (void *)cuMemCreate_pa, NULL },
        [S_MEM_RELEASE] = { "cuMemRelease", "cuMemRelease", 0, false, (void *)cuMemRelease_pa, NULL },
        [S_MEM_MAP] = { "cuMemMap", "cuMemMap", 0, false, (void *)cuMemMap_pa, NULL },
        [S_MEM_UNMAP] = { "cuMemUnmap", "cuMemUnmap", 0, false, (void *)cuMemUnmap_pa, NULL },
        /* cuGetProcAddress itself, asked through itself: "cuGetProcAddress" means _v2 from 12.0 */
        [S_GET_PROC_ADDRESS] = { "cuGetProcAddress", "cuGetProcAddress", 0, false, (void *)cuGetProcAddress, NULL },
        [S_GET_PROC_ADDRESS_V2] = { "cuGetProcAddress_v2", "cuGetProcAddress", 12000, false, (void *)cuGetProcAddress_v2,
                                    NULL },
};

/* ---- dlsym: the runtime finds cuGetProcAddress with dlsym on its libcuda handle ----------------
 *
 * dlsym(RTLD_NEXT, name) answers relative to its caller, which glibc takes from its return
 * address. Sanitizers and other interposers resolve their "real" functions that way, often
 * before any constructor of ours has run; answered from a C wrapper it would be relative to this
 * library and hand them their own interceptors (ASan then spins at start-up). So on x86-64 the
 * exported dlsym is a few instructions that jump — not call — to glibc's dlsym for RTLD_NEXT,
 * leaving the caller's return address in place, and to the C hook below for every other handle
 * (a handle's lookup does not depend on the caller). On aarch64 (GH200/GB200 nodes) the same in
 * A64: the caller's return address is the link register x30, kept by branching with br (glibc's
 * dlsym reads it as __builtin_return_address(0)); x16 carries the target, the register a
 * BTI landing pad ("bti c", which glibc's functions start with) accepts from br. Elsewhere dlsym
 * is not interposed: the cuGetProcAddress route is then tracked when the program calls it by
 * symbol. */


/* glibc's dlsym (>= 2.34 in libc as GLIBC_2.34; older ones in libdl). Also called from dlsym
 * itself: another library's constructor may call dlsym before ours has run. */
void *gvtrack_resolve_dlsym(void)
{
        static const char *const versions[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0" };
        void *(*f)(void *, const char *) = __atomic_load_n(&gvtrack_real_dlsym, __ATOMIC_ACQUIRE);
        for (size_t i = 0; !f && i < sizeof(versions) / sizeof(versions[0]); i++)
                f = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", versions[i]);
        if (f)
                __atomic_store_n(&gvtrack_real_dlsym, f, __ATOMIC_RELEASE);
        return (void *)f;
}

void *gvtrack_dlsym_hook(void *handle, const char *symbol)
{
        void *(*real)(void *, const char *) = (void *(*)(void *, const char *))gvtrack_resolve_dlsym();
        if (!real)
                return NULL;
        void *p = real(handle, symbol);
        if (!p || symbol[0] != 'c' || symbol[1] != 'u' || handle == RTLD_DEFAULT)
                return p;
        for (int s = 0; s < S_N; s++) {
                if (strcmp(symbol, slots[s].symbol) != 0)
                        continue;
                if ((uintptr_t)p >= self_lo && (uintptr_t)p < self_hi)
                        return p; /* found ourselves */
                aux_set(&aux_ctx_get_device, real(handle, "cuCtxGetDevice"));
                void *u = real(handle, "cuDeviceGetUuid_v2");
                aux_set(&aux_device_get_uuid, u ? u : real(handle, "cuDeviceGetUuid"));
                void *expect = NULL;
                if (atomic_compare_exchange_strong(&slots[s].real, &expect, p) || expect == p)
                        return slots[s].wrapper;
                return p;
        }
        return p;
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "        cmpq $-1, %rdi\n"                    /* RTLD_NEXT ((void *)-1l) */
        "        jne 2f\n"
        "        movq gvtrack_real_dlsym(%rip), %rax\n"
        "        testq %rax, %rax\n"
        "        jnz 1f\n"
        "        pushq %rdi\n"
        "        pushq %rsi\n"
        "        subq $8, %rsp\n"                     /* 16-byte alignment for the call */
        "        call gvtrack_resolve_dlsym\n"
        "        addq $8, %rsp\n"
        "        popq %rsi\n"
        "        popq %rdi\n"
        "        testq %rax, %rax\n"
        "        jz 3f\n"
        "1:      jmp *%rax\n"                         /* the caller's return address stays */
        "2:      jmp gvtrack_dlsym_hook\n"
        "3:      xorl %eax, %eax\n"
        "        ret\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        ".p2align 2\n"
        "dlsym:\n"
        "        hint #34\n"                          /* bti c (a no-op without BTI) */
        "        cmn x0, #1\n"                        /* RTLD_NEXT ((void *)-1l) */
        "        b.ne 2f\n"
        "        adrp x16, gvtrack_real_dlsym\n"
        "        ldr x16, [x16, #:lo12:gvtrack_real_dlsym]\n"
        "        cbnz x16, 1f\n"
        "        stp x29, x30, [sp, #-32]!\n"         /* the caller's x30, and 16-byte alignment */
        "        mov x29, sp\n"
        "        stp x0, x1, [sp, #16]\n"
        "        bl gvtrack_resolve_dlsym\n"
        "        mov x16, x0\n"
        "        ldp x0, x1, [sp, #16]\n"
        "        ldp x29, x30, [sp], #32\n"
        "        cbz x16, 3f\n"
        "1:      br x16\n"                            /* the caller's return address stays in x30 */
        "2:      b gvtrack_dlsym_hook\n"
        "3:      mov x0, #0\n"
        "        ret\n"
        ".size dlsym, .-dlsym\n");
#endif

/* ---- set-up ------------------------------------------------------------------------------------ */

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
        (void)size;
        uintptr_t me = (uintptr_t)data, lo, hi;
        if (object_span(info, false, &lo, &hi) && me >= lo && me < hi) {
                self_lo = lo;
                self_hi = hi;
                return 1;
        }
        return 0;
}

static void atfork_child(void)
{
        /* the parent's ledger is not ours: a child that allocates opens its own */
        if (ledger_fd >= 0)
                close(ledger_fd);
        ledger_fd = -1;
        my_tid = 0;
        atomic_store(&n_modules, 0);
        atomic_store(&module_rescans, 0);
        atomic_store(&modules_busy, 0);
        atomic_store(&ledger_state, L_CLOSED);
}

__attribute__((constructor)) static void gvtrack_init(void)
{
        (void)gvtrack_resolve_dlsym();
        dl_iterate_phdr(find_self, (void *)(uintptr_t)&gvtrack_init);
        const char *d = getenv(GVL_ENV_DIR);
        if (d && d[0] == '/' && strlen(d) < sizeof(ledger_dir) - 64)
                memcpy(ledger_dir, d, strlen(d) + 1);
        const char *s = getenv(GVL_ENV_SESSION);
        uint64_t v = 0;
        for (; s && *s >= '0' && *s <= '9' && v < UINT64_MAX / 10; s++)
                v = v * 10 + (uint64_t)(*s - '0');
        session_id = v;
        /* the first backtrace() loads the unwinder (malloc, locks): do it here, not in the
         * middle of an allocation */
        void *bt[2];
        (void)backtrace(bt, 2);
        pthread_atfork(NULL, NULL, atfork_child);
}

/* For tests: records that could not be written since the process started. */
EXPORT unsigned long ghostvram_track_dropped(void);
unsigned long ghostvram_track_dropped(void)
{
        return atomic_load(&dropped);
}
