/* check_run: `ghostvram check`'s scan under the plugin's time limit. The scan runs on a deadline
 * worker (util/deadline.h): a hung driver gives an answer in time instead of a hung check. */
#pragma once
#include "run/scan_run.h"

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
