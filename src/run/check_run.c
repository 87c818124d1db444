/* check_run: check's scan on a deadline worker. */
#include "run/check_run.h"

#include <errno.h>
#include <stdlib.h>

#include "util/deadline.h"

struct check_job *check_job_new(const struct scan_once_opts *o)
{
        struct check_job *j = calloc(1, sizeof(*j));
        if (j)
                j->o = *o;
        return j;
}

void check_job_free(struct check_job *j)
{
        if (!j)
                return;
        scan_once_free(j->run);
        free(j);
}

static int check_job_scan(void *arg)
{
        struct check_job *j = arg;
        j->r = scan_once_run(&j->o, &j->run);
        return j->r;
}

/* Called by an abandoned worker when (if ever) the scan returns after the deadline. */
static void check_job_free_arg(void *arg)
{
        check_job_free(arg);
}

int check_job_run(struct check_job *j, unsigned timeout_ms)
{
        struct deadline_runner runner = { 0 };
        int res = 0;
        int r = deadline_run(&runner, check_job_scan, j, check_job_free_arg, timeout_ms, &res);
        if (r == -ETIMEDOUT)
                return r;       /* the worker, still inside the scan, is left to it */
        deadline_runner_done(&runner);
        return r;
}

struct check_job *check_job_make(const struct scan_once_opts *base, const struct check_run_opts *o)
{
        struct scan_once_opts so = *base;
        so.confirm_ms = o->confirm_ms;
        so.light = true;        /* nothing unexplained: no walk */
        so.facts.read_kernel = !o->no_kernel;
        so.ledger.floor_min_bytes = o->floor_mib << 20;
        unsigned half = (unsigned)(o->timeout_ms / 2 ? o->timeout_ms / 2 : 1);
        if (so.facts.gpu.timeout_ms > o->timeout_ms / 2)
                so.facts.gpu.timeout_ms = half;
        if (so.facts.host.timeout_ms > o->timeout_ms / 2)
                so.facts.host.timeout_ms = half;
        return check_job_new(&so);
}
