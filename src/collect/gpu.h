/* gpu: what the GPU driver says, behind a backend table (nvtop's extract_gpuinfo_common.h,
 * curl's vtls backends). Backends: "nvml" (dlopen of libnvidia-ml.so.1, or the simulated
 * driver's stand-in) and "bundle" (a saved reply, --from-bundle). The core never names a
 * vendor symbol; readers never print. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum gpu_proc_kind {
        GPU_PROC_COMPUTE = 1 << 0,
        GPU_PROC_GRAPHICS = 1 << 1,
        GPU_PROC_MPS = 1 << 2,
};

#define GPU_INSTANCE_NONE 0xFFFFFFFFu

struct gpu_proc {
        uint32_t pid;           /* as NVML returned it (see gpu_report.pid_mode) */
        uint64_t used_bytes;    /* valid if used_known */
        bool used_known;        /* false: NVML said "not available" */
        uint32_t gpu_instance;  /* GPU_INSTANCE_NONE outside MIG */
        uint32_t compute_instance;
        unsigned kinds;         /* enum gpu_proc_kind bits (a PID can be compute and graphics) */
};

#define GPU_MAX_MIG 8           /* MIG devices read per GPU (an A100/H100 has at most 7) */

/* A MIG device (one compute instance of a GPU instance) and its own memory figures. */
struct gpu_mig_device {
        uint32_t gpu_instance;
        uint32_t compute_instance;
        bool memory_known;
        uint64_t total_bytes, used_bytes; /* NVML's answer on the MIG device's handle */
};

enum gpu_status {
        GPU_OK = 0,
        GPU_LOST,               /* NVML_ERROR_GPU_IS_LOST */
        GPU_TIMEOUT,            /* the driver did not answer within the deadline */
        GPU_ERROR,              /* other failure; see error */
};

/* A query that failed or was not supported for one GPU. */
struct gpu_query_error {
        char query[32];         /* "memory", "processes", "persistence", ... */
        int nvml_code;          /* NVML return code, or -1 for a timeout */
        char message[96];
};

/* Memory health a reset settles (doctor): read only with gpu_opts.health. Each int is -1 when
 * unknown (not supported, no permission, an older driver). */
struct gpu_health {
        bool queried;
        int remap_pending;              /* nvmlDeviceGetRemappedRows isPending */
        int remap_failed;               /* ... failureOccurred */
        int retired_pending;            /* nvmlDeviceGetRetiredPagesPendingStatus */
        long long ecc_uncorrected;      /* volatile uncorrected ECC errors since the driver loaded */
        int mig_pending;                /* MIG mode: pending differs from current */
        bool reset_required;            /* a health query answered NVML_ERROR_RESET_REQUIRED */
};

/* One process's share of a GPU in the last sample period (nvmlDeviceGetProcessUtilization). */
struct gpu_proc_util {
        uint32_t pid;                   /* as NVML returned it (gpu_report.pid_mode) */
        unsigned sm, mem, enc, dec;     /* % */
};

#define GPU_MAX_PROC_UTIL 64            /* samples kept a GPU (more are not read) */

/* top's figures of a GPU (gpu_opts.telemetry), nvtop's: each -1 when the driver does not give
 * it (not supported, no permission, an older driver, not asked). */
struct gpu_telemetry {
        bool queried;
        int util_gpu, util_mem;         /* % of the last sample period */
        int temp_c;
        long long power_mw, power_limit_mw;
        int clock_sm_mhz, clock_mem_mhz, clock_sm_max_mhz, clock_mem_max_mhz;
        int fan_pct;
        long long pcie_tx_kbs, pcie_rx_kbs;
        int enc_pct, dec_pct;
        bool procs_known;               /* per-process samples answered (none: nothing ran) */
        struct gpu_proc_util procs[GPU_MAX_PROC_UTIL];
        size_t n_procs;
};

struct gpu_info {
        unsigned index;
        unsigned minor;         /* /dev/nvidia<minor> */
        bool minor_known;
        char name[96];
        char uuid[96];
        char pci_bus_id[32];    /* sysfs form dddd:bb:dd.f, lower case ("" if unknown) */

        bool memory_known;
        int memory_api;         /* 2: v2 (used excludes reserved), 1: v1 (used includes it) */
        uint64_t total_bytes, used_bytes, free_bytes;
        uint64_t reserved_bytes; /* valid if memory_api == 2 */

        int persistence;        /* -1 unknown, 0 off, 1 on */
        int mig_mode;           /* -1 unknown, 0 off, 1 on */
        int mig_pending_mode;   /* what MIG mode becomes at the next reset; -1 unknown */
        struct gpu_health health;
        struct gpu_telemetry tel;
        struct gpu_mig_device mig[GPU_MAX_MIG]; /* MIG mode: its MIG devices */
        size_t n_mig;

        bool procs_known;
        char procs_api[24];     /* e.g. "v3/24", "v3/32", "v2", "v1", "detail-list" */
        struct gpu_proc *procs;
        size_t n_procs;

        enum gpu_status status;
        char status_message[512];       /* the driver's words and ours: each part whole */
        struct gpu_query_error *errors;
        size_t n_errors;
};

enum gpu_pid_mode {
        GPU_PID_UNKNOWN = 0,
        GPU_PID_TRANSLATED,     /* >= 535.113.01: PIDs in the caller's namespace, others dropped */
        GPU_PID_HOST,           /* older drivers: host PIDs */
};

struct gpu_report {
        bool driver_present;    /* false: no library, or no kernel driver */
        bool library_found;     /* the NVML library was loaded (driver_present may still be false) */
        bool module_not_loaded; /* the library is there, the kernel module is not (NVML error 9) */
        char backend[16];       /* "nvml", "bundle", "none" */
        char library[256];      /* the library that was loaded */
        char driver_version[80];
        char nvml_version[80];
        enum gpu_pid_mode pid_mode;
        char error[512];        /* why the driver is absent or unusable */
        double sample_time;     /* wall clock (epoch seconds) of the sample */
        bool timed_out;         /* some driver call missed its deadline (the driver hangs) */
        struct gpu_info *gpus;
        size_t n_gpus;
};

struct gpu_opts {
        const char *nvml_lib;   /* NULL: libnvidia-ml.so.1, then libnvidia-ml.so */
        unsigned timeout_ms;    /* deadline per driver call (default 5000) */
        const char *bundle_dir; /* read from a bundle instead of the driver */
        bool memory_only;       /* only memory figures (no names, PCI, modes, processes): cheap
                                 * enough to sample every few tens of milliseconds */
        const char *driver_proc_dir; /* the nvidia module's /proc directory (NULL:
                                      * /proc/driver/nvidia), for the bus id and UUID of a GPU
                                      * NVML cannot name (collect/gpu_procfs.h) */
        bool health;            /* also read struct gpu_health (row remapping, retired pages,
                                 * ECC): doctor and top */
        bool telemetry;         /* also read struct gpu_telemetry (utilisation, temperature,
                                 * power, clocks, fan, PCIe, codecs, per-process use): top */
};

/* The backend table. */
struct gpu_backend {
        const char *name;
        /* Fill *ret (allocated by the callee, free with gpu_report_free). Returns 0 when a report
         * was produced, even one that says "no driver"; a negative errno only for ENOMEM and
         * similar failures of our own. */
        int (*collect)(const struct gpu_opts *o, struct gpu_report **ret);
};

extern const struct gpu_backend gpu_backend_nvml;
extern const struct gpu_backend gpu_backend_bundle;

/* Driver calls that missed their deadline and have not returned yet, in this process (at most
 * one a GPU and one for the calls that name no GPU: while a GPU's call is stuck, that GPU is
 * not asked again and is reported not inspected; the other GPUs are). */
int gpu_nvml_stuck_calls(void);
/* A call that names no GPU (init, count, driver version) is stuck: no GPU can be listed until
 * it returns, and a continuous command does not ask at all meanwhile. */
bool gpu_nvml_global_stuck(void);

/* The driver answered every call that names no GPU: every GPU it has is in the report, those
 * it did not answer for with status GPU_TIMEOUT (or GPU_LOST, GPU_ERROR) and the reason. False
 * without a driver, and when init or the GPU count missed the deadline. */
bool gpu_report_lists_all(const struct gpu_report *r);

/* What did not answer in a report with timed_out, in one line for a status or an error line:
 * the first GPU that did not answer, with its reason (and how many more), or that the driver
 * as a whole did not. */
void gpu_report_timeout_text(const struct gpu_report *r, char *out, size_t outlen);

/* Collect with the backend the options ask for. */
int gpu_collect(const struct gpu_opts *o, struct gpu_report **ret);
void gpu_report_free(struct gpu_report *r);

/* Record a query error on a GPU (capped at 16 per GPU). */
/* How nvidia-smi -i addresses g: its PCI bus id, else its UUID, else its index. */
void gpu_info_ref(const struct gpu_info *g, char *out, size_t n);
void gpu_info_add_error(struct gpu_info *g, const char *query, int nvml_code, const char *message);

/* Every figure of t unknown (-1), not queried. */
void gpu_telemetry_unknown(struct gpu_telemetry *t);

/* "0000:3B:00.0" or "00000000:3B:00.0" -> "0000:3b:00.0". Returns 0 or -EINVAL. */
int pci_bus_id_normalize(const char *in, char *out, size_t outlen);

/* Is NVML driver version `v` at least major.minor.patch? Unparseable versions return false. */
bool driver_version_at_least(const char *v, unsigned major, unsigned minor, unsigned patch);
