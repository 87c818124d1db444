/* reclaim rendering: the plan, what was done to each process, and what came back, as JSON
 * (docs/reclaim.md, docs/json.md) and as text for people. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "run/reclaim_run.h"

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
