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

#include "collect/sample.h"
#include "model/jobs.h"
#include "util/strf.h"         /* the sentences below */

enum confidence { CONF_LOW = 0, CONF_MEDIUM, CONF_HIGH };

enum link_kind {
        LINK_NONE = 0,
        LINK_PGID,              /* same process group as a dead owner (the owner led it) */
        LINK_SID,               /* same session as a dead owner */
        LINK_PPID,              /* child of a dead (zombie/exiting) owner */
        LINK_JOB,               /* same cgroup / pod / Slurm job as a dead owner */
        LINK_LEADER_GONE,       /* hidden owner: uvm holder, listed nowhere, its group/session leader gone */
        LINK_ORPHAN,            /* an unlisted CUDA process holding this GPU's node while a dead owner is listed */
        LINK_FAMILY,            /* shares an open file description with a holder linked to the dead owner */
        LINK_ELIMINATION,       /* the only free family left for the only dead owner nothing else explains */
        LINK_PID_ORDER,         /* the dead owner whose PID most closely precedes the family's lowest */
};

/* The verdicts, in order of importance: the first finding of a GPU is its verdict. The table in
 * ledger.c gives each its stable code; docs/verdicts.md gives each its rule. */
enum verdict {
        VERDICT_GPU_LOST = 0,
        VERDICT_STUCK,
        VERDICT_ORPHANED,
        VERDICT_DAEMON,
        VERDICT_STALE,
        VERDICT_DRIVER_LEAK,
        VERDICT_UNKNOWN,
        VERDICT_FREEING,
        VERDICT_INVISIBLE,
        VERDICT_FOREIGN,
        VERDICT_UNATTRIBUTED,
        VERDICT_RESERVED_ONLY,
        VERDICT_OK,
        VERDICT_COUNT
};

const char *verdict_code(enum verdict v);

/* How a verdict reads: nothing to do, a doubt (the answer is not known from here), or an alarm. */
enum verdict_tone {
        TONE_CALM,
        TONE_DOUBT,
        TONE_ALARM,
};
/* The tone of a verdict code (an unknown code is an alarm). */
enum verdict_tone verdict_tone(const char *code);
/* The i-th verdict code in the order the exporter's series and the documentation list them
 * (i < VERDICT_COUNT; NULL past the end). */
const char *verdict_listed(size_t i);

struct attribution {
        size_t holder;          /* index into facts->host->holders */
        enum link_kind link;
        pid_t to_pid;           /* the dead owner (or the gone leader) */
        bool candidate;         /* it may belong to several GPUs' ghosts: one candidate of many */
        enum confidence confidence;
        enum job_tie tie;       /* tied to a live owner too (session, job, group): never a default target */
        pid_t tie_pid;          /* that live owner */
        unsigned family;        /* the holder's description family (host_proc.family) */
        /* the tie is proven: a link by number, the family of such a link, or elimination with
         * the family's group or session leader gone; only such a tie makes a default target */
        bool proof;
        char *text;             /* "worker of dead PID 31300, same process group" (util/strf.h) */
};

#define LEDGER_MAX_EVIDENCE 8
#define LEDGER_MAX_PIDS 32

struct finding {
        enum verdict verdict;
        char code[24];          /* verdict_code(verdict): ok, orphaned-holders, stale-owner, ... */
        enum confidence confidence;
        uint64_t bytes;
        pid_t pids[LEDGER_MAX_PIDS];
        size_t n_pids;
        /* the sentences, on the heap (util/strf.h: NULL is the empty one), never cut */
        char *summary;          /* one line for the headline */
        char *evidence[LEDGER_MAX_EVIDENCE];
        size_t n_evidence;
        char *next_step;        /* the exact next command, with a short why */
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
        uint32_t gpu_instance;  /* MIG GPU / compute instance (GPU_INSTANCE_NONE outside MIG) */
        uint32_t compute_instance;
        char *why;              /* "no such process", "zombie", "PID reused by ..." (util/strf.h) */
        unsigned out_of_sight;  /* processes in its group or session whose files we cannot read */
        bool unseen;            /* alive here, but its GPU's node is not under the prefix */
};

/* MIG: one instance's share of the ledger, by the same rules as the GPU's (its used figure is
 * NVML's answer on the MIG device; owners count where NVML listed them). */
struct mig_ledger {
        uint32_t gpu_instance, compute_instance;
        bool memory_known;
        uint64_t total, used;
        uint64_t listed, foreign, ghost, unattributed;
        uint64_t freeing_bytes;         /* the GPU's teardown (gpu_ledger.freeing) */
};

struct gpu_ledger {
        unsigned index;
        bool inspected;         /* memory known and the GPU answered */
        uint64_t used, reserved, total;
        bool reserved_known;    /* v2 memory query */
        uint64_t listed, foreign, ghost, unattributed;
        /* while the driver tears a context down (freeing): the unexplained bytes, neither ghost
         * nor unattributed; used = listed + foreign + ghost + unattributed + freeing_bytes */
        uint64_t freeing_bytes;
        uint64_t noise_floor;
        bool ghost_evidence;    /* a dead owner is evident */
        bool no_live_owner;     /* no NVML-listed owner is alive (here or in another namespace) */
        bool ghost_confirmed;   /* ghost above the floor in both samples */
        bool unexplained_steady; /* unexplained bytes above the floor in both samples */
        bool procs_known;       /* NVML gave this GPU's process list */
        /* a listed owner is alive here, but the device node it would hold is not under the
         * prefix: who holds the GPU cannot be seen, so nothing is called a ghost (exit 3) */
        bool holders_unseen;
        bool freeing;           /* the driver is visibly releasing the unexplained bytes */
        uint64_t freed_bytes;   /* unexplained bytes that went away between the two samples */
        pid_t gone_holders[8];  /* holders of the earlier sample that hold nothing now (freeing) */
        unsigned n_gone_holders; /* how many (gone_holders has the first 8) */
        char gpu_ref[112];      /* how nvidia-smi -i addresses it: bus id, else UUID, else index */
        struct owner *owners;
        size_t n_owners;
        struct attribution *attr;
        size_t n_attr;
        struct finding *findings;       /* the first is the verdict */
        size_t n_findings;
        struct mig_ledger mig[GPU_MAX_MIG]; /* MIG mode: per MIG device */
        size_t n_mig;
        /* an Xid of error severity or worse within ledger_opts.xid_window_s and after the
         * driver's load, NVML answering or not: it pages (check WARNING or CRITICAL, scan's exit
         * status; docs/xid.md, "Recent Xids page") */
        bool xid_paging;
        struct xid_recent xid;
};

struct ledger_opts {
        uint64_t floor_min_bytes;       /* default 64 MiB */
        unsigned floor_permille;        /* of total; default 10 (1 %) */
        bool two_samples;               /* `before` is a real earlier sample */
        pid_t self_pid;                 /* ghostvram itself: never attributed */
        double confirm_gap_s;           /* seconds between the two samples (for the freeing rate) */
        double xid_window_s;            /* an Xid this recent pages (default XID_WINDOW_DEFAULT_S; 0: none) */
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

/* Could the GPU be judged: its memory known and its process list given? A GPU without a
 * process list is `unknown` (exit 3, UNKNOWN), whatever its memory says. */
static inline bool ledger_judged(const struct gpu_ledger *l)
{
        return l->inspected && l->procs_known;
}

/* The strongest tie of process p to a live NVML-listed owner of any GPU of r (jobs.h). env is
 * ghostvram's own process (the environment, which ties nothing); NULL: r's facts' own. */
enum job_tie ledger_live_tie(const struct scan_result *r, const struct host_proc *p, const struct host_proc *env,
                             pid_t *ret_owner, const char **ret_what);
/* Does NVML list pid on any GPU of f? *ret_gpu (may be NULL) gets the first GPU's index. */
bool ledger_listed_anywhere(const struct facts *f, pid_t pid, unsigned *ret_gpu);
/* Would reclaim take attribution a of f's holder by default, as far as the scan can tell (the
 * site policy and ghostvram's ancestors are reclaim's)? If not, *ret_why says why. */
bool ledger_default_target(const struct facts *f, const struct attribution *a, const char **ret_why);
/* A live owner that shares an open file description with holder p (its family), or 0. */
pid_t ledger_family_live_owner(const struct scan_result *r, const struct host_proc *p);
/* Is p a live owner (on any GPU) in r? */
bool ledger_is_live_owner(const struct scan_result *r, pid_t pid);
/* The same, with the GPU (its NVML index) where it is a live owner and what NVML charges it
 * there (0 when not said); the first such GPU. */
bool ledger_live_owner_of(const struct scan_result *r, pid_t pid, unsigned *ret_gpu, uint64_t *ret_bytes);
/* Does p hold GPU g's device node (/dev/nvidia<minor>)? When the minor is not known, any GPU
 * node counts (and *ret_exact, if given, is false). */
bool ledger_holds_gpu_node(const struct host_proc *p, const struct gpu_info *g, bool *ret_exact);
/* Build the ledger of `now`; `before` (may be NULL) is the earlier sample used to confirm
 * ghosts and stuck tasks. Returns 0 or -ENOMEM. */
int ledger_build(const struct facts *now, const struct facts *before, const struct ledger_opts *o,
                 struct scan_result **ret);
void scan_result_free(struct scan_result *r);

/* The ghost of GPU `index` in a sample without confirmation (used to decide on a 2nd sample). */
bool ledger_needs_confirmation(const struct scan_result *r);

/* The latest Xid 79 (fallen off the bus) of GPU gpu_index in f's kernel events that came after
 * the current driver's load, or NULL: what makes a GPU reset pointless (a reboot is needed). */
const struct xid_event *ledger_lost_event(const struct facts *f, unsigned gpu_index);

const char *confidence_name(enum confidence c);
const char *link_name(enum link_kind k);
