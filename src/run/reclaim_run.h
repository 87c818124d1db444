/* reclaim_run: the use case of `ghostvram reclaim`, without argv and without printing.
 *
 * One scan (with its confirming sample), then one of five modes:
 *   processes   end the orphaned holders of a confirmed ghost (or exactly --pid's), through
 *               pidfds, SIGKILL after the grace, and measure the memory coming back;
 *   cgroup      end a finished job's whole cgroup (cgroup.kill), refused while a live owner or
 *               a protected process is inside;
 *   reset-gpu, reload-uvm   the last resorts, after their checks (act/escalate);
 *   poke        a new CUDA context on the GPU, which may make the driver finish a dead one's
 *               teardown (act/poke).
 * Without `yes` (or with dry_run) every mode stops at its plan. One reclaim at a time per host
 * (a lock); each signal and result goes to syslog. A stop signal (SIGINT, SIGTERM, ...) ends it
 * between two steps, with its report and the exit status 128+N.
 *
 * What a person sees while it acts is handed to the caller's reclaim_io: the plan right before
 * acting, each signal and result, the memory samples, a question on a terminal, the report.
 * The planning is act/reclaim_plan (pure), the acting act/reclaim_act, the escalations
 * act/escalate and act/poke; rendering is render/reclaim_render. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "act/escalate.h"
#include "act/poke.h"
#include "act/reclaim_act.h"
#include "act/reclaim_plan.h"
#include "run/scan_run.h"

#define RECLAIM_MAX_NOTES 16
#define RECLAIM_MAX_PIDS 64             /* --pid's list */
#define RECLAIM_SAMPLE_MS 50            /* between two memory samples while acting */

struct reclaim_cgroup_info {
        char path[512];                 /* the cgroup path (from the cgroup2 root) */
        char dir[1024];                 /* its directory */
        size_t n_pids;
        bool acted;
        struct reclaim_cgroup_result res;
};

/* reclaim --poke: which GPU, with what, and what the child did (docs/reclaim.md, "The poke"). */
struct reclaim_poke_info {
        unsigned index;
        char uuid[96];
        char pci_bus_id[32];
        const char *lib;
        uint64_t bytes;
        unsigned timeout_ms;
        bool ran;
        struct poke_result res;
        enum poke_verdict verdict;
        uint64_t freed;
};

struct reclaim_report {
        const char *mode;               /* "processes", "cgroup", "reset-gpu", "reload-uvm", "poke" */
        bool dry_run;
        bool simulated;
        int signal;
        unsigned grace_ms, timeout_ms;
        const struct reclaim_plan *plan;        /* may be NULL (escalations) */
        const struct reclaim_action *actions;
        size_t n_actions;
        const struct recovery_gpu *rec;         /* per GPU, after acting (NULL in a dry run) */
        size_t n_rec;
        const struct reclaim_cgroup_info *cgroup;
        const struct escalate_report *esc;
        const struct reclaim_poke_info *poke;   /* --poke (NULL otherwise) */
        bool esc_ran;
        int esc_status;                 /* the command's exit status when it ran */
        const char *esc_output;
        char *notes[RECLAIM_MAX_NOTES];         /* refusals, hints (heap strings, util/strf.h) */
        size_t n_notes;
        char *summary;
        int exit_status;
        bool plan_shown;                /* the plan went out before acting: the final text omits it */
        int stopped;                    /* the stop signal that ended it early (SIGINT, ...), 0 none */
        double stopped_after_s;         /* when, from the first signal (0: before any) */
};

/* Frees the report's notes and empties the list. */
void reclaim_report_clear_notes(struct reclaim_report *r);
/* Frees the report's notes and summary. */
void reclaim_report_clear(struct reclaim_report *r);

/* What reclaim says while it works. A NULL callback: that output is not wanted (--json wants
 * only the report). Each text callback writes and flushes at once: the lines are the record of
 * what was done, even when reclaim is killed the next moment. */
struct reclaim_io {
        void *ctx;
        /* acting: the scan is starting (its confirming sample takes confirm_ms) */
        void (*scanning)(void *ctx, uint64_t confirm_ms);
        /* the plan, right before acting (the report then omits it: rep->plan_shown) */
        void (*plan)(void *ctx, const struct reclaim_report *rep);
        /* a signal sent or a result, t seconds after the first signal */
        void (*action)(void *ctx, const struct reclaim_action *a, enum reclaim_event ev, double t);
        /* GPU g's used memory: g->before when `before`, else g->after, t s after the first signal */
        void (*sample)(void *ctx, const struct recovery_gpu *g, bool before, double t);
        /* a person can be asked (a terminal on both sides): the dry run's plan is shown, then
         * the question asked (true: yes) */
        bool (*can_ask)(void *ctx);
        void (*show_plan)(void *ctx, const struct reclaim_report *rep);
        bool (*ask)(void *ctx, const char *question);
        /* a line after the question (its answer's outcome) */
        void (*line)(void *ctx, const char *text);
        /* the end: what was done (and the plan, unless it went out before) */
        void (*report)(void *ctx, const struct reclaim_report *rep);
        /* an error that ends reclaim without a report */
        void (*error)(void *ctx, const char *msg);
};

struct reclaim_run_opts {
        struct scan_once_opts so;       /* the scan (confirm_ms, the noise floor set) */
        struct gpu_opts go;             /* the memory samples while acting */
        struct host_opts ho;            /* looking up single processes */
        bool simulated;
        const char *sim_dir;            /* simulated: the lock lives there */
        const char *proc_root;          /* said in errors */
        const char *from_bundle;        /* the plan of a recorded bundle: never acts */
        bool verbose;
        int only_gpu;                   /* --gpu as an index, -1 every GPU */
        const char *gpu_spec;           /* --gpu as given (said in next steps) */
        const pid_t *pids;              /* --pid */
        size_t n_pids;
        const char *cgroup;             /* --cgroup */
        bool yes, dry_run, force, reset_gpu, reload_uvm, poke;
        const char *cuda_lib;           /* --poke's library (NULL: found) */
        unsigned poke_timeout_ms;       /* the poke's deadline */
        int signal;
        uint64_t grace_ms;              /* RECLAIM_GRACE_NONE: no SIGKILL */
        uint64_t wait_ms;               /* for the processes to end and the memory to come back */
        const struct reclaim_policy *policy;
};

/* The options of o that come from where the facts come from: the scan's (its confirming wait
 * and noise floor then the caller's), the memory samples', the single process lookups' (never
 * saved into a bundle), the simulated host's lock, a bundle's plan that never acts. */
struct sources;
void reclaim_run_from(struct reclaim_run_opts *o, const struct sources *src);

/* Run reclaim. Returns the exit status (EXIT_OK, EXIT_FINDING, EXIT_INCOMPLETE, EXIT_USAGE for
 * a --gpu or --cgroup that does not exist, 128+N when stopped by signal N). */
int reclaim_run(const struct reclaim_run_opts *o, const struct reclaim_io *io);

/* The test build's pause hook (tests/hooks/test_hooks.c sets it; NULL in the shipped binary,
 * which carries no test hook at all): called at "plan" and "open" (see act/reclaim_act.h). */
extern void (*reclaim_run_pause)(void *ctx, const char *stage);
