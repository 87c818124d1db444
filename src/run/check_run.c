/* check_run: check's scan on a deadline worker. */
#include "run/check_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/deadline.h"
#include "util/i18n.h"

void check_run_opts_default(struct check_run_opts *o)
{
        *o = (struct check_run_opts){ .timeout_ms = 10000, .confirm_ms = 2000, .floor_mib = 64, .only_gpu = -1 };
}

int check_run_settle(struct check_run_opts *o)
{
        if (!o->confirm_set && o->confirm_ms > o->timeout_ms / 4)
                o->confirm_ms = o->timeout_ms / 4;
        return o->confirm_set && o->confirm_ms > o->timeout_ms / 2 ? -ERANGE : 0;
}

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

int check_scan(const struct sources *s, const struct check_run_opts *o, struct check_job **ret, char *why,
               size_t whylen)
{
        struct scan_once_opts base;
        sources_scan_once_opts(s, &base);
        struct check_job *j = check_job_make(&base, o);
        *ret = NULL;
        if (!j)
                return snprintf(why, whylen, "%s", _("out of memory")), -ENOMEM;
        int r = check_job_run(j, (unsigned)o->timeout_ms);
        if (r == -ETIMEDOUT)
                snprintf(why, whylen, _("no result within %.3g s: the NVIDIA driver or /proc did not answer (a hung driver? see 'ghostvram xid')"),
                         (double)o->timeout_ms / 1000.0);
        else if (r < 0)
                snprintf(why, whylen, _("cannot run the scan: %s"), strerror(-r));
        else if ((r = j->r) < 0)
                snprintf(why, whylen, _("cannot scan: %s"), strerror(-r));
        else
                *ret = j;
        if (r < 0 && r != -ETIMEDOUT)
                check_job_free(j);
        return r;
}
