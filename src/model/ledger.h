/* ledger: per GPU, account for every byte NVML reports used and explain the unexplained part.
 *
 *   used = listed + foreign + ghost + unattributed        (the driver's reservation apart)
 *
 * and attribute the ghost to the processes that really hold it, only through links. The rules,
 * thresholds and confidence levels are documented in docs/verdicts.md; keep the two in step. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/facts.h"

enum confidence { CONF_LOW = 0, CONF_MEDIUM, CONF_HIGH };

enum link_kind {
        LINK_NONE = 0,
        LINK_PGID,              /* same process group as a dead owner (the owner led it) */
        LINK_SID,               /* same session as a dead owner */
        LINK_PPID,              /* child of a dead (zombie/exiting) owner */
        LINK_JOB,               /* same cgroup / pod / Slurm job as a dead owner */
        LINK_LEADER_GONE,       /* hidden owner: uvm holder, listed nowhere, its group/session leader gone */
};

struct attribution {
        size_t holder;          /* index into facts->host->holders */
        enum link_kind link;
        pid_t to_pid;           /* the dead owner (or the gone leader) */
        bool candidate;         /* hidden-owner rule with several ghost GPUs: one candidate of many */
        enum confidence confidence;
        char text[160];         /* "worker of dead PID 31300, same process group" */
};

#define LEDGER_MAX_EVIDENCE 8
#define LEDGER_MAX_PIDS 32

struct finding {
        char code[24];          /* stable: ok, orphaned-holders, stale-owner, ... */
        enum confidence confidence;
        uint64_t bytes;
        pid_t pids[LEDGER_MAX_PIDS];
        size_t n_pids;
        char summary[200];      /* one line for the headline */
        char evidence[LEDGER_MAX_EVIDENCE][200];
        size_t n_evidence;
        char next_step[320];    /* the exact next command, with a short why */
};

/* How an NVML-listed process counts. */
enum owner_class {
        OWNER_LIVE,             /* alive here, holds nvidiactl/nvidia-uvm, started before the sample */
        OWNER_FOREIGN,          /* lives in another PID namespace as far as we can tell */
        OWNER_STALE,            /* dead: no such process, zombie, exiting, or the PID was reused */
        OWNER_UNKNOWN,          /* not alive here, but we cannot tell dead from invisible */
};

struct owner {
        uint32_t pid;
        uint64_t used_bytes;
        bool used_known;
        enum owner_class cls;
        char why[96];           /* "no such process", "zombie", "PID reused by ..." */
};

struct gpu_ledger {
        unsigned index;
        bool inspected;         /* memory known and the GPU answered */
        uint64_t used, reserved, total;
        bool reserved_known;    /* v2 memory query */
        uint64_t listed, foreign, ghost, unattributed;
        uint64_t noise_floor;
        bool ghost_evidence;    /* a dead owner is evident */
        bool no_live_owner;     /* no NVML-listed owner is alive (here or in another namespace) */
        bool ghost_confirmed;   /* ghost above the floor in both samples */
        bool unexplained_steady; /* unexplained bytes above the floor in both samples */
        struct owner *owners;
        size_t n_owners;
        struct attribution *attr;
        size_t n_attr;
        struct finding *findings;       /* the first is the verdict */
        size_t n_findings;
};

struct ledger_opts {
        uint64_t floor_min_bytes;       /* default 64 MiB */
        unsigned floor_permille;        /* of total; default 10 (1 %) */
        bool two_samples;               /* `before` is a real earlier sample */
        pid_t self_pid;                 /* ghostvram itself: never attributed */
};

struct scan_result {
        const struct facts *facts;      /* the latest sample (not owned) */
        struct gpu_ledger *gpus;
        size_t n_gpus;
        bool full_visibility;           /* initial PID namespace, root, no limits */
        bool any_confirmed_ghost;
        bool any_uninspected;
        int only_gpu;                   /* -1: all; else report and exit status for this index only */
};

void ledger_opts_default(struct ledger_opts *o);
/* Build the ledger of `now`; `before` (may be NULL) is the earlier sample used to confirm
 * ghosts and stuck tasks. Returns 0 or -ENOMEM. */
int ledger_build(const struct facts *now, const struct facts *before, const struct ledger_opts *o,
                 struct scan_result **ret);
void scan_result_free(struct scan_result *r);

/* The ghost of GPU `index` in a sample without confirmation (used to decide on a 2nd sample). */
bool ledger_needs_confirmation(const struct scan_result *r);

const char *confidence_name(enum confidence c);
const char *link_name(enum link_kind k);
/* Every verdict code, for documentation and the exporter's verdict series. */
extern const char *const ledger_verdict_codes[];
extern const size_t ledger_n_verdict_codes;
