/* facts: one sample of the raw facts — what the driver says (gpu), who holds device nodes
 * (host), and what this host knows of every PID the driver lists. No judgement here: the
 * ledger and findings (model/ledger.h) are built on top. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/gpu.h"
#include "collect/host.h"
#include "collect/xid.h"

/* What this host knows of a PID that NVML lists. */
struct pid_fact {
        uint32_t pid;
        bool present;           /* a process with this PID exists in our /proc */
        struct host_proc proc;  /* valid if present (a copy; nodes filled if it is a holder) */
        bool holder;            /* it holds at least one device node */
};

/* Whether a process-group or session leader of a holder still exists (hidden-owner rule). */
struct pid_presence {
        pid_t pid;
        bool present;
        char state;
};

struct facts {
        struct gpu_report *gpu;
        struct host_report *host;
        struct pid_fact *pids;  /* every distinct PID listed on any GPU */
        size_t n_pids;
        struct pid_presence *leaders;
        size_t n_leaders;
        struct xid_list kernel;         /* NVIDIA kernel events (empty if not read) */
        bool kernel_read;               /* a kernel log was read */
        bool kernel_this_host;          /* its GPU indexes apply to this sample */
        char kernel_source[64];         /* "kmsg", "file", ... */
        char kernel_error[KMSG_ERR_MAX + 64]; /* why the kernel log could not be read ("" if it was) */
        unsigned long kernel_overruns;
        double kernel_boot_time;        /* the boot time its stamps were dated with, <= 0: none */
        bool simulated;
        bool from_bundle;
        /* ghostvram's own process in the live /proc (its cgroup, job): the environment it runs
         * in ties nothing (model/jobs.h). From a bundle: the recording process, where the bundle
         * kept it (host->self_saved). Not known from a --proc tree. */
        struct host_proc self;
        bool self_known;
};

struct facts_opts {
        struct gpu_opts gpu;
        struct host_opts host;
        const char *save_bundle;        /* record what was read into this directory */
        bool simulated;
        bool skip_host;                 /* NVML only (e.g. nothing unexplained) */
        /* No walk: look only at the PIDs NVML lists (host_scan_pids); no process-group or
         * session leaders and no facts of our own either (they matter only to holders that are
         * not listed, which this sample does not know). For "is everything explained?". */
        bool owners_only;
        bool read_kernel;               /* also read the kernel log (kernel below) */
        struct xid_source_opts kernel;
};

/* Collect one sample: GPU first (its shutdown closes our own device nodes), then the /proc walk,
 * then the NVML PIDs. Returns 0 (errors of the sources are inside the report) or -ENOMEM / the
 * host walk's error when proc_root cannot be read at all. */
int facts_collect(const struct facts_opts *o, struct facts **ret);
/* The same around a GPU report already collected with o->gpu (taken over, also on error): the
 * continuous commands look at NVML first and walk /proc only when they need to. */
int facts_collect_from(const struct facts_opts *o, struct gpu_report *gpu, struct facts **ret);
void facts_free(struct facts *f);

/* Move src's kernel events (and what is known of its kernel log) into dst, which read none:
 * a confirming sample a few seconds later does not read and parse the whole log again. */
void facts_take_kernel(struct facts *dst, struct facts *src);

/* Is pid alive (present and not a zombie) in this sample? Looks at holders, NVML PIDs and
 * leaders; unknown PIDs count as absent. */
bool facts_pid_alive(const struct facts *f, pid_t pid);

/* A deep copy of a process's facts (its strings duplicated; free with host_proc_clear). A
 * string that cannot be duplicated is left NULL, as an unread one is. */
void facts_proc_copy(struct host_proc *dst, const struct host_proc *src);

/* The fact for an NVML PID, or NULL. */
const struct pid_fact *facts_pid(const struct facts *f, uint32_t pid);
