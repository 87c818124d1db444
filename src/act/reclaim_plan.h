/* reclaim_plan: which processes `ghostvram reclaim` may signal, decided from a scan and a
 * policy. Pure: a scan result and options in, a plan out; no I/O, nothing printed. The rules
 * are written down in docs/reclaim.md; keep the two in step.
 *
 * A default target satisfies every one of:
 *   - scan attributed it, through a link to a dead owner, to a GPU whose ghost is confirmed
 *     (and that --gpu selects); a candidate of the hidden-owner rule with several ghost GPUs
 *     is not enough;
 *   - it holds or maps nvidia-uvm (every CUDA process does; monitors do not);
 *   - NVML lists it on no GPU (every GPU gave its process list);
 *   - the link has at least medium confidence (a weak link names it, --pid ends it);
 *   - no live NVML-listed owner shares its process group, session or job (cgroup, pod, Slurm
 *     job, container) — one rule with the ledger's (model/jobs.h): a cgroup/job that ghostvram
 *     itself runs in is the environment, not a job;
 *   - it is not PID 1 of its own namespace (innermost NSpid) nor of ours;
 *   - it is not protected: a kernel thread, ghostvram itself or one of its ancestors, a
 *     GPU daemon or display server (gpu_daemons in model/daemons.h), or a site policy entry.
 *   - the tie is proven (a link by number, or its description family's; not elimination alone);
 *   - its whole description family is a target: ending part of a family frees nothing, so a
 *     family with a member that may not be ended is left whole (family-kept).
 * An explicit --pid replaces the default targets; it may name anything except PID 1, a kernel
 * thread, ghostvram itself or an ancestor (and a process that is gone or a zombie); without
 * `force` also a process that holds no NVIDIA device node, any ghostvram process, a live owner
 * or a process that shares a live owner's open file description. The members of a target's
 * family it does not name are listed with the target (family_rest). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect/host.h"
#include "model/ledger.h"

/* Why a process is (not) a target. Stable codes: reclaim_rule_name(). */
enum reclaim_rule {
        RECLAIM_TARGET = 0,             /* it is one */
        RECLAIM_NOT_ATTRIBUTED,         /* holds nvidia-uvm, but no link ties it to a ghost */
        RECLAIM_GHOST_UNCONFIRMED,      /* its GPU's ghost is below the floor or was seen once */
        RECLAIM_CANDIDATE,              /* hidden-owner rule with several ghost GPUs: one candidate of many */
        RECLAIM_OTHER_GPU,              /* --gpu names another GPU */
        RECLAIM_NO_UVM,                 /* holds no nvidia-uvm: not a CUDA process */
        RECLAIM_NVML_LISTED,            /* NVML lists it: an owner, not an orphan */
        RECLAIM_SHARES_SESSION,         /* a live listed owner is in its session */
        RECLAIM_SHARES_JOB,             /* a live listed owner is in its job (cgroup, pod, ...) */
        RECLAIM_NS_INIT,                /* PID 1 of its own PID namespace (a container's init) */
        RECLAIM_PID1,
        RECLAIM_KTHREAD,
        RECLAIM_SELF,                   /* ghostvram itself */
        RECLAIM_ANCESTOR,               /* an ancestor of ghostvram (its shell, sudo, a scheduler) */
        RECLAIM_PROTECTED_NAME,         /* a GPU daemon, display server, device plugin, ... */
        RECLAIM_POLICY_COMM,            /* site policy: comm NAME */
        RECLAIM_POLICY_CGROUP,          /* site policy: cgroup PREFIX */
        RECLAIM_POLICY_UNIT,            /* site policy: unit NAME */
        RECLAIM_DEAD,                   /* a zombie, or exiting: nothing to signal */
        RECLAIM_NO_SUCH_PROCESS,        /* --pid names no process here */
        RECLAIM_NVML_BLIND,             /* a GPU gave no process list: "listed nowhere" cannot be checked */
        RECLAIM_WEAK_LINK,              /* attributed through a weak link only (low confidence) */
        RECLAIM_SHARES_GROUP,           /* a live listed owner is in its process group */
        RECLAIM_NO_DEVICE,              /* --pid names a process holding no NVIDIA device node (without --force) */
        RECLAIM_GHOSTVRAM,              /* --pid names a ghostvram process (serve, watch) (without --force) */
        RECLAIM_LIVE_OWNER,             /* --pid names a live NVML-listed owner: a running job (without --force) */
        RECLAIM_UNPROVEN,               /* tied by elimination only: no link to the dead owner, no shared description */
        RECLAIM_LIVE_FAMILY,            /* shares an open file description with a live owner: that job's (--pid: without --force) */
        RECLAIM_FAMILY_KEPT,            /* a member of its description family is not a target: ending the rest frees nothing */
        RECLAIM_RULE_COUNT
};

const char *reclaim_rule_name(enum reclaim_rule r);

/* ---- the site policy ------------------------------------------------------------------------ */

enum reclaim_policy_kind {
        RECLAIM_POLICY_KIND_COMM = 0,   /* comm NAME: process name (first 15 characters) or argv[0] */
        RECLAIM_POLICY_KIND_CGROUP,     /* cgroup PREFIX: that cgroup and everything below it */
        RECLAIM_POLICY_KIND_UNIT,       /* unit NAME: a systemd unit in the process's cgroup path */
};

#define RECLAIM_POLICY_VALUE_MAX 256
#define RECLAIM_POLICY_MAX_ENTRIES 1024

struct reclaim_policy_entry {
        enum reclaim_policy_kind kind;
        char value[RECLAIM_POLICY_VALUE_MAX];
        unsigned line;
};

struct reclaim_policy {
        struct reclaim_policy_entry *entries;
        size_t n;
        char source[256];               /* the file it came from ("" if none) */
};

/* Parse a policy file's content: one "comm NAME", "cgroup PREFIX" or "unit NAME" a line;
 * blank lines and '#' comments (a whole line, or after whitespace) are skipped. Appends to p
 * (zero it first). Returns 0, -EINVAL with "SOURCE:LINE: what is wrong" in err, or -ENOMEM /
 * -E2BIG (more than RECLAIM_POLICY_MAX_ENTRIES). */
int reclaim_policy_parse(const char *buf, size_t len, const char *source, struct reclaim_policy *p,
                         char *err, size_t errlen);
void reclaim_policy_free(struct reclaim_policy *p);
/* Read and parse the policy file at path (at most 1 MiB) into p (zeroed first). A missing file
 * is no policy (0) unless given (the user named it). Returns 0, or -1 with the reason in err
 * ("--policy PATH: ..." or parse's "SOURCE:LINE: ..."); free p either way. */
int reclaim_policy_load(const char *path, bool given, struct reclaim_policy *p, char *err, size_t errlen);


/* ---- the plan ------------------------------------------------------------------------------- */

struct reclaim_plan_opts {
        const struct reclaim_policy *policy;    /* site policy, may be NULL */
        pid_t self_pid;
        const pid_t *ancestors;                 /* ghostvram's parent, its parent, ... */
        size_t n_ancestors;
        const struct host_proc *self_proc;      /* our own facts (cgroup, job), may be NULL */
        const pid_t *explicit_pids;             /* --pid: exactly these (none: default targets) */
        size_t n_explicit;
        const struct host_proc *extra;          /* facts of explicit PIDs that hold no node */
        size_t n_extra;
        int only_gpu;                           /* --gpu N, -1 for all */
        bool force;                             /* --force: --pid may name a process holding no
                                                 * NVIDIA node, or another ghostvram */
};

struct reclaim_target {
        pid_t pid;
        uint64_t start_ticks;           /* from the scan: re-checked before any signal */
        uid_t uid;
        char state;
        char comm[64];                  /* raw (hostile) text */
        int gpu;                        /* the GPU whose ghost it holds, -1 if not attributed */
        enum link_kind link;
        pid_t to_pid;                   /* the dead owner (or gone leader) */
        bool explicit_pid;              /* named by --pid */
        unsigned family;                /* its description family (host_proc.family), 0 if none */
        pid_t family_rest[8];           /* --pid: members of its family it does not name (they keep the memory) */
        unsigned n_family_rest;         /* how many (family_rest has the first 8) */
        char *why;                      /* on the heap (util/strf.h), as every sentence here */
        char *warning;                  /* NULL or e.g. D state, protected but named by --pid */
};

struct reclaim_skip {
        pid_t pid;
        char comm[64];
        int gpu;                        /* -1 when not tied to a GPU */
        enum reclaim_rule rule;
        char *reason;
};

struct reclaim_gpu {
        unsigned index;
        char uuid[96];
        char pci_bus_id[32];
        bool inspected;
        uint64_t used, ghost, noise_floor;
        bool ghost_confirmed;
        unsigned n_targets;             /* targets attributed to it */
        /* what ending them should give back: the bytes NVML charged the dead owners they are
         * tied to (the ghost when that is not known, as for a hidden owner) */
        uint64_t expected_bytes;
};

struct reclaim_plan {
        struct reclaim_target *targets;
        size_t n_targets;
        struct reclaim_skip *skipped;
        size_t n_skipped;
        struct reclaim_gpu *gpus;       /* every GPU --gpu selects */
        size_t n_gpus;
        bool any_confirmed_ghost;       /* on a selected GPU */
        bool explicit_mode;
};

/* Build the plan. Returns 0 and *ret (free with reclaim_plan_free) or -ENOMEM. */
int reclaim_plan_build(const struct scan_result *r, const struct reclaim_plan_opts *o, struct reclaim_plan **ret);
void reclaim_plan_free(struct reclaim_plan *p);
/* Empty p of its targets and skipped entries (their sentences freed), its GPUs kept. */
void reclaim_plan_clear(struct reclaim_plan *p);

/* Is p protected whatever the options say (PID 1, kernel thread, ghostvram or an ancestor),
 * or by name/policy? Returns the rule (RECLAIM_TARGET when none) and a sentence in *why (a heap
 * string, util/strf.h, replaced; the caller frees it). Used by the plan and by --cgroup (which
 * refuses a cgroup holding such a process). */
enum reclaim_rule reclaim_protection(const struct host_proc *p, const struct reclaim_plan_opts *o, char **why);
