/* simstate: the simulated driver's state directory, shared by the stand-in NVML library
 * (sim/nvml), the simulated CUDA application (sim/app) and `ghostvram sim`.
 * The model and its rules: docs/simulator.md.
 *
 * Every file in the directory is small, line-based text, replaced atomically
 * (write_file_atomic); read-modify-write happens under flock(DIR/lock). Readers never need
 * the lock. Parsers skip what they do not understand: the NVML stand-in is loaded into
 * ghostvram and must never crash on a corrupt state file. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SIM_MAX_GPUS 16
#define SIM_MAX_CONTEXTS 1024
#define SIM_MAX_NSPID 8
#define SIM_HANG_LEN 64
#define SIM_DEV_FILE_SIZE 65536 /* every simulated device file: enough to mmap a page anywhere */
#define SIM_ERR_LEN 256
#define SIM_MAX_MIG 7                   /* GPU instances per GPU: an A100/H100 has at most 7 */
#define SIM_GI_NONE 0xFFFFFFFFu         /* a context outside MIG (NVML's "invalid instance id") */
#define SIM_GI_ANY 0xFFFFFFFEu          /* sim_proc_list_gi: every instance (the parent's list) */

/* The NVML library that a process reading the simulated host in `dir` must load (the variant
 * chosen by the `driver` knob). Returns 0 or a negative errno (-ENOENT: not a sim dir, or the
 * variant is not built). */
int simstate_library(const char *dir, char *out, size_t outlen);

/* The device-node prefix of the simulated host: "<dir>/dev/nvidia". */
int simstate_dev_prefix(const char *dir, char *out, size_t outlen);

/* Find a file of the simulator built or installed with this program: first
 * "<dir of /proc/self/exe>/sim/<rel>", then "<dir of /proc/self/exe>/<rel>", then
 * GV_SIM_LIBDIR_BUILD "/<rel>", then GV_SIM_LIBDIR_INSTALL "/<rel>". Returns 0 or -ENOENT. */
int simstate_find_file(const char *rel, char *out, size_t outlen);

/* ---- driver variants ------------------------------------------------------------------ */

struct sim_variant {
        const char *name;               /* directory under sim/: "current", "535.54.03", ... */
        const char *driver_version;     /* nvmlSystemGetDriverVersion */
        const char *nvml_version;       /* nvmlSystemGetNVMLVersion */
        bool translates_pids;           /* >= 535.113.01: PIDs in the caller's namespace */
        int v3_stride;                  /* 0: no _v3 symbols; else bytes per _v3 record */
        const char *summary;            /* one line for --help */
};

extern const struct sim_variant sim_variants[];
extern const size_t sim_n_variants;

/* The variant called `name` (its directory name or its driver version), or NULL. */
const struct sim_variant *sim_variant_find(const char *name);

/* ---- the simulated host: sim.conf and gpus -------------------------------------------- */

struct sim_gpu {
        unsigned index;
        unsigned minor;                 /* DIR/dev/nvidia<minor> */
        char name[96];
        char uuid[96];
        char pci_bus_id[32];            /* "00000000:1B:00.0" */
        unsigned pci_domain, pci_bus, pci_device;
        uint32_t pci_device_id;         /* (device << 16) | vendor */
        uint32_t pci_subsystem_id;
        uint64_t total_bytes;
        uint64_t reserved_bytes;
};

struct sim_host {
        unsigned long long host_pidns;  /* inode of the PID namespace `sim init` ran in */
        unsigned n_gpus;
        struct sim_gpu gpus[SIM_MAX_GPUS];
};

/* Create a simulated host in dir (created if missing; refused with -EEXIST when it already
 * holds one). n_gpus 1..SIM_MAX_GPUS; memory and reserved in MiB, reserved < memory. */
int sim_init_dir(const char *dir, unsigned n_gpus, uint64_t memory_mib, uint64_t reserved_mib);

/* Read sim.conf and gpus. Returns 0, -ENOENT (not a sim dir), -EBADMSG (corrupt). */
int sim_host_load(const char *dir, struct sim_host *ret);

/* ---- knobs ----------------------------------------------------------------------------- */

enum sim_pid_mode {
        SIM_PID_AUTO = 0,               /* whatever the driver variant does */
        SIM_PID_TRANSLATED,             /* >= 535.113.01 */
        SIM_PID_HOST,                   /* older drivers */
};

/* Queries that the notsup knob can make return NVML_ERROR_NOT_SUPPORTED. */
enum sim_query {
        SIM_Q_MEMORY = 1u << 0,         /* nvmlDeviceGetMemoryInfo (v1) */
        SIM_Q_MEMORY_V2 = 1u << 1,
        SIM_Q_PROCESSES = 1u << 2,      /* every process-list call */
        SIM_Q_PERSISTENCE = 1u << 3,
        SIM_Q_MIG = 1u << 4,
        SIM_Q_PCI = 1u << 5,
        SIM_Q_MINOR = 1u << 6,
        SIM_Q_EVENTS = 1u << 7,         /* nvmlDeviceRegisterEvents */
        SIM_Q_HEALTH = 1u << 8,         /* RemappedRows, RetiredPagesPendingStatus, TotalEccErrors */
};

/* The figures top shows of a GPU (nvtop's): each settable, or "na" (NOT_SUPPORTED). The
 * defaults are an idle H100 SXM (no fan). */
enum sim_metric {
        SIM_M_UTIL_GPU = 0,     /* % (nvmlDeviceGetUtilizationRates .gpu) */
        SIM_M_UTIL_MEM,         /* % (.memory) */
        SIM_M_TEMP,             /* degrees C */
        SIM_M_POWER,            /* W (NVML answers mW) */
        SIM_M_POWER_LIMIT,      /* W */
        SIM_M_CLOCK_SM,         /* MHz */
        SIM_M_CLOCK_MEM,        /* MHz */
        SIM_M_FAN,              /* % */
        SIM_M_PCIE_TX,          /* KB/s */
        SIM_M_PCIE_RX,          /* KB/s */
        SIM_M_ENC,              /* % */
        SIM_M_DEC,              /* % */
        SIM_M_COUNT
};

struct sim_metric_knob {
        bool set;               /* else the default */
        bool na;                /* NOT_SUPPORTED */
        unsigned value;
};

/* The knob's name ("util_gpu", ...) and its default (na: NOT_SUPPORTED) of a metric. */
const char *sim_metric_name(enum sim_metric m);
/* The value NVML answers for metric m of a GPU's knobs (its unit as NVML's: mW for power),
 * false when NOT_SUPPORTED. */
bool sim_metric_value(const struct sim_metric_knob *k, enum sim_metric m, unsigned *ret);

struct sim_gpu_knobs {
        struct sim_metric_knob metric[SIM_M_COUNT];
        bool lost;
        bool lost_handle;               /* getting the handle fails too (implies lost) */
        unsigned notsup;                /* enum sim_query bits */
        char hang[SIM_HANG_LEN];        /* NVML function name, "any", or "" */
        uint64_t uncharged_mib;
        uint64_t leaked_mib;            /* a dead context's memory the driver kept (a driver leak) */
        bool flush_on_new_context;      /* the next context made on this GPU frees leaked_mib */
        unsigned list_growth;
        bool persistence;
        bool mig;
        unsigned mig_instances;         /* GPU instances (GI ids 1..N, one CI 0 each); implies MIG on */
        int xid_event;                  /* pending Xid to deliver once, -1 none */
        bool remap_pending;             /* a row remapping waits for a GPU reset */
        bool retired_pending;           /* retired pages wait for a reset (pre-Ampere mechanism) */
        uint64_t ecc_uncorrected;       /* volatile uncorrected ECC errors */
        bool mig_pending;               /* MIG mode changes at the next reset */
        bool reset_required;            /* the health queries answer NVML_ERROR_RESET_REQUIRED */
};

/* What a caller without MIG monitoring privileges gets from a MIG GPU's parent-device
 * process lists (docs/simulator.md, MIG). */
enum sim_mig_view {
        SIM_MIG_VIEW_NO_PERMISSION = 0, /* NVML_ERROR_NO_PERMISSION */
        SIM_MIG_VIEW_EMPTY,             /* SUCCESS with no process */
};

struct sim_knobs {
        char driver[24];                /* variant name */
        enum sim_pid_mode pid_mode;
        bool hidden_owner;
        uint64_t free_delay_ms_per_gib;
        bool strict_versions;
        char hang[SIM_HANG_LEN];        /* for calls that name no GPU */
        bool hang_holds_lock;           /* a hung call holds DIR/driver/api.lock */
        enum sim_mig_view mig_unprivileged;
        struct sim_gpu_knobs gpu[SIM_MAX_GPUS];
};

/* Is MIG mode on for this GPU (the mig knob, or instances configured)? */
static inline bool sim_mig_on(const struct sim_gpu_knobs *gk)
{
        return gk->mig || gk->mig_instances > 0;
}

/* Defaults, then DIR/knobs applied line by line (unknown or invalid lines are skipped). */
int sim_knobs_load(const char *dir, struct sim_knobs *ret);

/* Validate "KEY=VALUE" (or "KEY=GPU:VALUE") against a host with n_gpus GPUs. On error
 * returns -EINVAL and writes a message into err. */
int sim_knob_check(const char *assignment, unsigned n_gpus, char *err, size_t errlen);

/* Validate all assignments, then apply them to DIR/knobs in one atomic write under the
 * lock. Returns 0, -EINVAL (message in err) or another negative errno. */
int sim_knobs_set(const char *dir, char **assignments, size_t n, char *err, size_t errlen);

/* Consume the pending xid_event of gpu, if any (delivered once). Returns 1 and the code, 0
 * when none is pending, or a negative errno. */
int sim_event_take(const char *dir, unsigned gpu, unsigned *ret_code);

/* True if the hang knob names `fn` (or "any") for gpu (-1: a call that names no GPU). */
bool sim_knobs_hang(const struct sim_knobs *k, int gpu, const char *fn);

/* The pid mode in force for a library of variant `v` (the knob wins over the variant). */
enum sim_pid_mode sim_pid_mode_effective(const struct sim_knobs *k, const struct sim_variant *v);

/* Print every knob with its values and meaning (for --help). */
struct buf;
int sim_knobs_help(struct buf *out);

/* ---- contexts --------------------------------------------------------------------------- */

struct sim_ctx {
        unsigned id;                    /* = the locked byte in dev/nvidiactl and in owners */
        unsigned gpu;
        unsigned gi;                    /* MIG GPU instance id, SIM_GI_NONE outside MIG */
        bool mps;                       /* made through the MPS server: an MPS client's */
        uint64_t bytes;
        unsigned long long owner_pidns; /* the owner's PID namespace inode */
        unsigned long long proc_pidns;  /* namespace of the /proc the owner saw (0 unknown) */
        unsigned n_nspid;
        pid_t nspid[SIM_MAX_NSPID];     /* NSpid: [0] in proc_pidns ... [n-1] in owner_pidns */
        uint64_t created_ms;            /* CLOCK_REALTIME */
        uint64_t released_ms;           /* when its description was released (the teardown
                                         * watcher's record, else the first reader's); 0 not yet */
        pid_t watcher;                  /* the teardown watcher's PID (0: none recorded) */
};

enum sim_ctx_state {
        SIM_CTX_ALIVE,                  /* its open file description exists */
        SIM_CTX_RELEASING,              /* released, memory freed after the free delay */
        SIM_CTX_FREED,
};

struct sim_ctx_view {
        struct sim_ctx ctx;
        enum sim_ctx_state state;
        bool owner_alive;               /* the owner's POSIX lock is held */
        pid_t owner_pid_here;           /* owner PID in the caller's namespace (0: not visible) */
        uint64_t free_in_ms;            /* RELEASING: time left */
        uint64_t charged_bytes;         /* what it still holds: bytes, falling linearly to 0
                                         * over the free delay while RELEASING */
};

/* What the driver sees right now. */
struct sim_observation {
        size_t n;
        struct sim_ctx_view ctx[SIM_MAX_CONTEXTS];
        uint64_t charged_bytes[SIM_MAX_GPUS];   /* contexts alive or releasing */
        uint64_t mig_charged[SIM_MAX_GPUS][SIM_MAX_MIG]; /* the same, per GPU instance (id - 1) */
};

/* The caller's side of the driver: its own descriptions of nvidiactl and owners (like the
 * real NVML, which opens /dev/nvidiactl), its PID namespace. */
struct sim_client {
        char dir[4096];
        struct sim_host host;
        int ctl_fd;
        int owners_fd;
        unsigned long long pidns;
};

/* Open the client side for dir. Returns 0, -ENOENT (not a sim dir) or a negative errno. */
int sim_client_open(const char *dir, struct sim_client *c);
/* Close the client's descriptors (idempotent; NULL is fine). */
void sim_client_close(struct sim_client *c);

/* Look at every context: liveness from the OFD lock on nvidiactl, owner from the POSIX lock
 * on owners. Records the first time a context is seen released when its teardown watcher has
 * not (a fallback: the watcher records the kernel's release) and forgets freed ones (under
 * the lock; silently skipped when the directory is read-only). */
int sim_observe(struct sim_client *c, const struct sim_knobs *k, struct sim_observation *o);

struct sim_proc {
        unsigned pid;
        uint64_t bytes;
        unsigned gi;                    /* GPU instance id, SIM_GI_NONE outside MIG */
        bool mps;                       /* an MPS client's contexts (the MPS list's), else compute */
};

/* The process list of gpu as the driver reports it to this caller (one entry per PID and GPU
 * instance, bytes summed). Writes at most max entries and the full count to *ret_n. */
void sim_proc_list(const struct sim_client *c, const struct sim_knobs *k, enum sim_pid_mode mode,
                   const struct sim_observation *o, unsigned gpu, struct sim_proc *out, size_t max,
                   size_t *ret_n);
/* The same for the contexts of GPU instance gi only (SIM_GI_ANY: every context, the parent's
 * list). */
void sim_proc_list_gi(const struct sim_client *c, const struct sim_knobs *k, enum sim_pid_mode mode,
                      const struct sim_observation *o, unsigned gpu, unsigned gi, struct sim_proc *out,
                      size_t max, size_t *ret_n);

/* Used bytes of gpu as NVML's v2 query reports them (allocated, reserved apart). On a MIG GPU
 * that is the sum over its instances (plus uncharged and leaked memory). */
uint64_t sim_used_bytes(const struct sim_host *h, const struct sim_knobs *k,
                        const struct sim_observation *o, unsigned gpu);

/* ---- MIG ---------------------------------------------------------------------------------- */

/* Memory of each of the n GPU instances of gpu: the allocatable memory (total - reserved)
 * split evenly, rounded down to a MiB. 0 when n is 0. */
uint64_t sim_mig_instance_total(const struct sim_host *h, unsigned gpu, unsigned n);

/* Used bytes of GPU instance gi (1..mig_instances) of gpu: its contexts, capped at its size. */
uint64_t sim_mig_used_bytes(const struct sim_host *h, const struct sim_knobs *k,
                            const struct sim_observation *o, unsigned gpu, unsigned gi);

/* Minor number of the capability node of GPU instance gi on the GPU with minor gpu_minor
 * (its "access" capability; ci: its compute instance 0's), as /proc/driver/nvidia-caps/mig-minors
 * numbers them: config 1, monitor 2, then gpuM/giG/access = 3 + 135 M + 9 G, ciC = that + 1 + C. */
unsigned sim_mig_cap_minor(unsigned gpu_minor, unsigned gi, bool ci);

/* "<dir>/dev/nvidia-caps/nvidia-cap<minor>". Returns 0 or -ENAMETOOLONG. */
int sim_mig_cap_path(const char *dir, unsigned minor, char *out, size_t outlen);

#define SIM_MIG_CAP_MONITOR 2           /* mig/monitor: see every instance from the parent */

/* May this process see a MIG GPU's aggregate process lists? Root (the real driver: CAP_SYS_ADMIN
 * implies every capability), or read access to the mig/monitor capability node, decided by the
 * kernel's permission check on DIR/dev/nvidia-caps/nvidia-cap2 (created 0400 by sim init). */
bool sim_mig_privileged(const char *dir);

/* Create a context of `bytes` on gpu for the calling process: takes an OFD write lock on
 * byte <id> of ctl_fd (the caller's own open description of dev/nvidiactl) and a POSIX
 * write lock on byte <id> of owners_fd, records the owner's NSpid and namespaces.
 * Returns 0 and the id, -ENOMEM when the GPU lacks free memory, -ENODEV for a bad or lost
 * GPU, or another negative errno; a message goes to err. */
int sim_context_create(const char *dir, unsigned gpu, uint64_t bytes, int ctl_fd, int owners_fd,
                       unsigned *ret_id, char *err, size_t errlen);
/* The same in GPU instance gi of gpu (SIM_GI_NONE: outside MIG). On a GPU with MIG instances a
 * context needs an instance (-ENODEV otherwise, and for an instance that does not exist); it
 * must fit in that instance's free memory (-ENOMEM). */
int sim_context_create_gi(const char *dir, unsigned gpu, unsigned gi, uint64_t bytes, int ctl_fd,
                          int owners_fd, unsigned *ret_id, char *err, size_t errlen);
/* The same for an MPS client (mps): NVML lists the context under the client's PID in the MPS
 * compute list (nvmlDeviceGetMPSComputeRunningProcesses), not in the compute list. */
int sim_context_create_ex(const char *dir, unsigned gpu, unsigned gi, bool mps, uint64_t bytes, int ctl_fd,
                          int owners_fd, unsigned *ret_id, char *err, size_t errlen);

/* Charge (delta > 0) or credit (delta < 0) context id's bytes: what the simulated libcuda.so.1
 * does for each allocation and free. owners_fd is the owner's own descriptor of DIR/owners
 * (used for lock probes, never closed: closing any descriptor of that file would drop the
 * owner's lock). Returns 0, -ENOMEM when the GPU lacks free memory (CUDA's message in err),
 * -ENODEV for a lost GPU, -ENOENT for an unknown context, or another negative errno. */
int sim_context_charge(const char *dir, unsigned id, int64_t delta, int owners_fd, char *err, size_t errlen);

/* Context `id` as DIR/contexts has it. Returns 0, -ENOENT (unknown or forgotten) or a
 * negative errno. */
int sim_context_get(const char *dir, unsigned id, struct sim_ctx *ret);

/* Under the lock: record the teardown watcher's PID (when watcher > 0) and the release time
 * (when released_ms > 0 and no earlier time is recorded) of context id. Returns 0, -ENOENT
 * (unknown or already forgotten) or a negative errno. */
int sim_context_mark(const char *dir, unsigned id, pid_t watcher, uint64_t released_ms);

/* ---- teardown (the driver's side of a release) ------------------------------------------ */

/* The driver's API lock (DIR/driver/api.lock), which a hung call holds under the
 * hang_holds_lock knob. exclusive: take it and return its descriptor (held until closed or
 * the process ends); shared: wait until no hung call holds it, then return 0. Or a negative
 * errno. */
int sim_api_lock(const char *dir, bool exclusive);
/* Does a hung call hold that lock now? (a try, never a wait) */
bool sim_api_lock_held(const char *dir);

/* Waiting for a context's release without holding nvidiactl (the real driver's teardown is no
 * process, and a holder walk matches the node's inode by any path): sim_ctx_release_watch
 * finds the node in /proc/locks (by a lock of its own on a description it closes at once) and
 * starts an inotify watch on it (fd -1 when no inotify instance or watch is left: the wait then
 * looks every 10 ms); sim_ctx_release_wait blocks until context id's OFD write
 * lock is gone (its description released: the lock goes in the same __fput that reports the
 * close), holding no descriptor of the node meanwhile. 0 or a negative errno each. */
struct sim_release_watch {
        int fd;                 /* the inotify descriptor */
        char key[64];           /* "MAJ:MIN:INO" as /proc/locks prints nvidiactl */
};
int sim_ctx_release_watch(const char *dir, struct sim_release_watch *w);
int sim_ctx_release_wait(struct sim_release_watch *w, unsigned id);
void sim_ctx_release_unwatch(struct sim_release_watch *w);

/* Block until nobody else holds a write lock on byte id of fd (an F_OFD_SETLKW read lock,
 * dropped again at once). On nvidiactl: until context id's open file description is released
 * (its OFD lock goes in the same __fput) — while holding fd, which a holder walk sees. On
 * DIR/owners (opened O_RDONLY): until the context's owner has died (its POSIX lock goes when
 * it exits). Returns 0 or a negative
 * errno (-EINTR: a signal with a handler interrupted the wait). */
int sim_teardown_wait(int fd, unsigned id);

/* DIR/owners opened O_RDONLY|O_CLOEXEC, to wait for an owner's death. Returns the descriptor
 * or a negative errno. */
int sim_owners_open(const char *dir);

/* Append a kernel log record "3,SEQ,USEC,-;NVRM: Xid (PCI:DDDD:BB:DD): XID, pid=PID,
 * name=NAME, MSG" to DIR/kmsg, in /dev/kmsg's format (what ghostvram reads for a simulated
 * host): SEQ one past the file's last record, USEC CLOCK_BOOTTIME. Under the lock. Returns
 * 0 or a negative errno. */
int sim_kmsg_xid(const char *dir, const struct sim_gpu *g, unsigned xid, pid_t pid, const char *name,
                 const char *msg);

/* Milliseconds of CLOCK_REALTIME (shared by processes, and meaningful across reboots of a
 * kept state directory, unlike CLOCK_MONOTONIC). */
uint64_t sim_now_ms(void);
/* Inode of the PID namespace of `who` ("self" or "1") seen through /proc, 0 if unknown. */
unsigned long long sim_pidns_of(const char *who);
