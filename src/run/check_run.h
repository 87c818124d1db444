/* check_run: `ghostvram check`'s scan under the plugin's time limit. The scan runs on a deadline
 * worker (util/deadline.h): a hung driver gives an answer in time instead of a hung check. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "run/scan_run.h"
#include "run/sources.h"

/* What check's command line gives the scan (the thresholds are render/check_render's). */
struct check_run_opts {
        uint64_t timeout_ms;            /* -t: the plugin's whole time limit */
        uint64_t confirm_ms;            /* the confirming sample's delay (0: one sample) */
        bool confirm_set;               /* --confirm given (else it shrinks to fit -t) */
        uint64_t floor_mib;             /* --noise-floor */
        bool no_kernel;                 /* --no-kernel */
        const char *gpu_spec;           /* --gpu, or NULL */
        int only_gpu;                   /* --gpu's index when it is one, else -1 */
};

/* check's defaults: -t 10 s, a confirming sample 2 s after the first, a noise floor of 64 MiB,
 * every GPU. */
void check_run_opts_default(struct check_run_opts *o);
/* -t covers the whole scan, the confirming wait included: a default wait shrinks to a quarter of
 * -t. 0, or -ERANGE for a --confirm given that leaves less than half of -t for the two samples. */
int check_run_settle(struct check_run_opts *o);

struct check_job {
        struct scan_once_opts o;
        struct scan_once *run;  /* the scan, when r is 0 */
        int r;                  /* scan_once_run's result */
};

/* A job scanning with o (copied); NULL on ENOMEM. */
struct check_job *check_job_new(const struct scan_once_opts *o);
/* The job and its scan; NULL is accepted. */
void check_job_free(struct check_job *j);
/* Run j's scan for at most timeout_ms: 0 when it finished (its result in j->r, the scan in
 * j->run); -ETIMEDOUT when it did not: j then belongs to the worker still inside the scan, which
 * frees it if the scan ever returns, and the caller leaves without waiting or touching j; or the
 * negative errno of a worker that could not start (j still the caller's). */
int check_job_run(struct check_job *j, unsigned timeout_ms);
/* A job for o's scan: base's sources and ledger (the common options'), one light scan with o's
 * confirmation, kernel log and noise floor, each driver or /proc call bounded by half of
 * o->timeout_ms (a hung driver then shows as the driver's own "did not answer" before the
 * whole check gives up). NULL on ENOMEM. */
struct check_job *check_job_make(const struct scan_once_opts *base, const struct check_run_opts *o);

/* check's whole scan: a job made from s (sources_scan_once_opts) and o, run for at most
 * o->timeout_ms. 0 with the finished scan in *ret (free it with check_job_free); or a negative
 * errno with the UNKNOWN line's sentence in why: -ETIMEDOUT (the worker, still inside the
 * driver, keeps the job: leave without waiting for it), -ENOMEM, the worker's that could not
 * start, or the scan's own. */
int check_scan(const struct sources *s, const struct check_run_opts *o, struct check_job **ret, char *why,
               size_t whylen);
