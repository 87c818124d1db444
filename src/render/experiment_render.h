/* experiment_render: what `ghostvram experiment` prints of run/experiment_run's runs. */
#pragma once
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "run/experiment_run.h"

/* The table: residual MiB and the time the memory took to come back, after the kill and
 * after reclaim (median [min–max] over n > 1 runs), with the kernel's events. */
void experiment_table(FILE *out, const struct exp_opts *o, const struct exp_run *runs, size_t n);
/* The JSON document (schema_version, runs, summary, stopped_by); NULL on ENOMEM. */
json_t *experiment_json(const struct exp_opts *o, const struct exp_run *runs, size_t n);
/* The line of a stop: the signal (sig), whether it came during a run, the runs done, and
 * whether every process the experiment started was stopped (after the table when there is
 * one). */
void experiment_stop_text(FILE *out, const struct exp_opts *o, const struct exp_result *res, int sig);
/* A run starts: "run RUN/OF ..." on stderr (exp_opts' progress, where the output is text). */
void experiment_progress(void *ctx, unsigned run, unsigned of);

/* The experiment's result as s says (render/show.h): the JSON document when every run was done
 * or a signal (stop) ended it; else the table of the runs completed, after the banner, and the
 * line of the stop. */
struct show;
void experiment_show(const struct show *s, const struct exp_opts *o, const struct exp_result *res, int stop);
