/* reclaim rendering: the plan, what was done to each process, and what came back, as JSON
 * (docs/reclaim.md, docs/json.md) and as text for people. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "act/escalate.h"
#include "act/poke.h"
#include "act/reclaim_act.h"
#include "act/reclaim_plan.h"

#define RECLAIM_MAX_NOTES 16

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

/* "TERM", "KILL", ... for the signals reclaim accepts; NULL for others. */
const char *reclaim_signal_name(int sig);
/* Parse "TERM", "SIGTERM", "sigterm" or a number into a signal reclaim accepts (HUP, INT, QUIT,
 * USR1, USR2, TERM, KILL). Returns 0 or -EINVAL. */
int reclaim_signal_parse(const char *s, int *ret);

/* Free the report's notes and summary. */
/* Frees the report's notes and empties the list. */
void reclaim_report_clear_notes(struct reclaim_report *r);
void reclaim_report_clear(struct reclaim_report *r);

json_t *reclaim_json(const struct reclaim_report *r);
void reclaim_text(FILE *out, const struct reclaim_report *r, bool verbose);

/* ---- as it happens: one call per event, the caller writes each out and flushes at once --------
 * Text: the plan, then a line per signal, result and memory sample, stamped with the seconds
 * since the first signal. JSON lines (--json-stream): one object per line, with
 * schema_version, command "reclaim", event ("plan", "action", "sample", "result") and time. */

/* The plan, right before acting (text: the plan and the heading of the lines that follow). */
void reclaim_stream_plan_text(FILE *out, const struct reclaim_report *r, bool verbose);
json_t *reclaim_stream_plan_json(const struct reclaim_report *r);
/* A signal sent (ev RECLAIM_EV_SIGNAL) or a result (RECLAIM_EV_RESULT), t seconds after the first
 * signal. */
void reclaim_stream_action_text(FILE *out, const struct reclaim_action *a, enum reclaim_event ev, double t);
json_t *reclaim_stream_action_json(const struct reclaim_action *a, enum reclaim_event ev, double t);
/* GPU g's used memory (g->after; g->before when `before`) sampled t seconds after the first signal
 * (or the poke's start: `poke`). */
void reclaim_stream_sample_text(FILE *out, const struct recovery_gpu *g, bool before, bool poke, double t);
json_t *reclaim_stream_sample_json(const struct recovery_gpu *g, bool before, double t);
/* The last line of a JSON stream: the whole report (reclaim_json) with event "result". */
json_t *reclaim_stream_result_json(const struct reclaim_report *r);
