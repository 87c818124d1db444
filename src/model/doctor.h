/* doctor: checks of a host's setup against what makes ghost GPU memory more likely or harder
 * to clear (persistence, nvidia_uvm, driver releases with documented memory problems, pending
 * row remapping, module parameters, kernel log access, version skew, the container toolkit,
 * framework caches). Facts in, findings out: no I/O here, the CLI gathers the facts. Each
 * finding has a stable code, evidence and the exact next step (docs/doctor.md). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect/gpu.h"
#include "collect/shm.h"
#include "collect/xid.h"
#include "util/strf.h"

enum doctor_level {
        DOCTOR_OK = 0,          /* checked, fine */
        DOCTOR_INFO,            /* worth knowing; not a problem by itself */
        DOCTOR_WARN,            /* act on it (exit status 1) */
        DOCTOR_UNKNOWN,         /* could not be checked (evidence says why) */
};

/* The sentences are on the heap (util/strf.h: NULL is the empty one), never cut. */
struct doctor_finding {
        char code[32];          /* stable: "persistence-off", "row-remap-pending", ... */
        enum doctor_level level;
        int gpu;                /* GPU index, or -1 for the host */
        char *summary;
        char *evidence;
        char *next_step;        /* NULL when nothing is to be done */
        char *source;           /* driver-known-issue: where the problem is documented */
};

/* A process that holds a device node, as the host scan saw it. */
struct doctor_holder {
        pid_t pid;
        char comm[32];
        bool holds_uvm;         /* /dev/nvidia-uvm open */
};

/* What the CLI read; every field has an "unknown" value. */
struct doctor_facts {
        const struct gpu_report *gpus;  /* NULL: NVML could not be asked */
        int only_gpu;                   /* -1: every GPU */
        int persistenced;               /* nvidia-persistenced runs: 1, 0, -1 unknown */
        int uvm_loaded;                 /* nvidia_uvm in /proc/modules: 1, 0, -1 unknown */
        long uvm_refcount;              /* its use count (-1 unknown) */
        const struct doctor_holder *holders;
        size_t n_holders;
        const char *module_version_text; /* /proc/driver/nvidia/version, NULL unknown */
        size_t module_version_len;
        const char *params_text;        /* /proc/driver/nvidia/params, NULL unknown */
        size_t params_len;
        int dmesg_restrict;             /* kernel.dmesg_restrict: 0, 1, -1 unknown */
        bool is_root;
        int toolkit;                    /* NVIDIA Container Toolkit installed: 1, 0, -1 unknown */
        const char *toolkit_config;     /* config.toml text, NULL when absent */
        size_t toolkit_config_len;
        const char *toolkit_path;       /* where it was found (binary or config) */
        uint64_t cache_min_bytes;       /* allocator-cache: a live process holding this much */
        /* recent-xid: the NVIDIA kernel events (kernel_read false: the log could not be read,
         * kernel_error says why), judged as scan and check judge them (xid_recent_worst) */
        const struct xid_event *kernel;
        size_t n_kernel;
        bool kernel_read;
        bool kernel_this_host;          /* GPU indexes of the events apply */
        const char *kernel_error;
        double now;                     /* epoch seconds: the events' ages */
        double xid_window_s;            /* --xid-window (0: nothing pages) */
        /* host-shm: host shared memory (NULL: not read, shm_error says why), and whether its
         * SysV segments can be listed with ipcs (the live /proc; else the file is shown) */
        const struct shm_report *shm;
        const char *shm_error;
        bool shm_ipcs;
        const char *shm_sysv_file;      /* the sysvipc/shm file read, for the next step */
};

/* A driver release with a documented memory or teardown problem. Versions compare as
 * major.minor.patch; the row applies to from <= v < before. */
struct doctor_known_issue {
        unsigned from[3], before[3];
        bool open_module_only;          /* only the open kernel modules were affected */
        const char *problem;
        const char *advice;
        const char *source;             /* release notes or an issue thread */
};

/* The table, and its length. */
const struct doctor_known_issue *doctor_known_issues(size_t *ret_n);

/* A release as NVIDIA writes it into ret (len bytes): minor and patch have two digits at
 * least, a 0 patch (and a 0 minor with it) is left out: {535, 161, 7} "535.161.07", {470, 74, 0}
 * "470.74", {390, 0, 0} "390". 0, or -ENOBUFS (ret not written) when it does not fit. */
int doctor_version_format(const unsigned v[3], char *ret, size_t len);

/* Run every check. *ret is an array of *ret_n findings (free with doctor_findings_free). 0 or
 * -ENOMEM. */
int doctor_run(const struct doctor_facts *f, struct doctor_finding **ret, size_t *ret_n);
void doctor_findings_free(struct doctor_finding *v, size_t n);

/* 0 nothing to act on, 1 a warning, 3 the driver could not be inspected. */
int doctor_exit_status(const struct doctor_facts *f, const struct doctor_finding *v, size_t n);

/* "ok", "info", "warn", "unknown". */
const char *doctor_level_name(enum doctor_level l);

/* /proc/driver/nvidia/version: the kernel module's version ("535.161.07") and whether it is
 * the open kernel module. 0, or -EINVAL when no version is in buf. */
int doctor_parse_module_version(const char *buf, size_t len, char *ret_ver, size_t verlen, bool *ret_open);

/* /proc/modules: is `name` loaded, and its use count. 1 loaded, 0 not; -EINVAL malformed. */
int doctor_parse_modules(const char *buf, size_t len, const char *name, long *ret_refcount);

/* NVIDIA Container Toolkit config.toml: the nvidia-container-runtime mode ("auto", "legacy",
 * "cdi", "csv"), "" when not set. 0 or -EINVAL. */
int doctor_parse_toolkit_mode(const char *buf, size_t len, char *ret_mode, size_t modelen);

/* The prevention advice of `doctor --explain`, one paragraph a string, NULL-terminated. */
extern const char *const doctor_prevention[];
