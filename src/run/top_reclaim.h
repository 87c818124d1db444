/* top_reclaim: `ghostvram top`'s reclaim worker. r shows reclaim's plan (`ghostvram reclaim
 * --dry-run`, A acts on a fresh one with --yes), k ends one process (run/top_kill.h): each runs
 * ghostvram again in a child, on a detached thread, so the screen keeps answering. One at a
 * time; the finished output waits in `text` for the screen to take it.
 *
 * The fields below `err_fd` are guarded by run's lock (run/top_run.h). Nothing here prints. */
#pragma once
#include <stdbool.h>
#include <sys/types.h>

#include "run/top_kill.h"
#include "run/top_run.h"

struct top_reclaim {
        struct top_run *run;            /* its lock guards the state below */
        const char *proc_root;          /* --proc ("/proc": not passed on) */
        const char *nvml_lib;           /* --nvml-lib to pass on, NULL: none (a simulated host's
                                         * is found again through GHOSTVRAM_SIM) */
        int err_fd;                     /* -1, or where stderr goes while the screen is ours:
                                         * its news is added to the output */
        off_t err_seen;                 /* what was added of it already */
        /* guarded by run's lock */
        bool running;
        char *text;                     /* finished output (heap), taken by the screen */
        char title[160];                /* the dialog's title for it */
        bool kill_done;                 /* text is a kill's: kill_outcome says how it ended */
        struct top_kill kill;           /* the kill running or last run */
        enum top_kill_outcome kill_outcome;
};

/* Start reclaim's plan for GPU focus (-1: every GPU), acting with act. NULL when it started,
 * else why not (a translated sentence: one is running, no memory, no thread). */
const char *top_reclaim_plan(struct top_reclaim *rc, int focus, bool act);
/* Start ending k's process (comm: its name, escaped, for the title). As above. */
const char *top_reclaim_kill(struct top_reclaim *rc, const struct top_kill *k, const char *comm);
