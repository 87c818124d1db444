/* xid_run: `ghostvram xid`'s use case (run/xid_run.h). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "collect/gpu_events.h"
#include "collect/gpu_spec.h"
#include "run/xid_run.h"
#include "util/i18n.h"
#include "util/parse.h"

void xid_run_opts_sources(struct xid_run_opts *o, const struct sources *src, bool verbose)
{
        o->verbose = verbose;
        o->sim_dir = src->simulated ? src->sim_dir : NULL;
        o->proc_root = src->proc_root;
        sources_gpu_opts(src, &o->gpu_opts);
}

int xid_run_since(struct xid_run_opts *o, const char *when, double now)
{
        if (xid_parse_since(when, now, &o->since) < 0)
                return -EINVAL;
        /* a time the kernel log cannot hold and JSON cannot write: not a filter */
        if (o->since < 0 || o->since > 253402300799.0)
                return -ERANGE;
        o->since_set = true;
        return 0;
}

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
        (void)sig;
        stop_flag = 1;
}

const volatile sig_atomic_t *xid_stop_on_signals(void)
{
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        return &stop_flag;
}

int xid_run_open(struct xid_run *x, const struct xid_run_opts *o, char *err, size_t errlen)
{
        memset(x, 0, sizeof(*x));
        x->o = o;
        x->rd.fd = -1;
        struct xid_source_opts so = {
                .kmsg_path = o->kmsg_path,
                .sim_dir = o->sim_dir,
                .proc_root = o->proc_root,
                .this_boot = o->this_boot,
        };
        int r = xid_source_open(&so, o->follow, &x->rd, &x->info, err, errlen);
        if (r < 0)
                return r;
        x->source = kmsg_source_name(x->info.source);
        return 0;
}

void xid_run_close(struct xid_run *x)
{
        kmsg_reader_close(&x->rd);
        gpu_report_free(x->report);
        x->report = NULL;
}

bool xid_run_keep(const struct xid_run_opts *o, const struct xid_event *e)
{
        if (!o->verbose && (e->kind == XID_KIND_OTHER || e->kind == XID_KIND_GPU_UUID))
                return false;
        if (o->since_set && (!e->time_known || e->time < o->since))
                return false;
        const struct xid_gpu_filter *g = &o->gpu;
        if (g->active) {
                if (g->by_index)
                        return e->gpu_index == (int)g->index;
                return e->kind != XID_KIND_SXID && e->pci_bus_id[0] && strncmp(e->pci_bus_id, g->pci, 10) == 0;
        }
        return true;
}

/* --gpu N: the driver must answer and list GPU N. 0, -ENODEV or -ENOENT with err. */
static int check_gpu_index(const struct xid_run *x, char *err, size_t errlen)
{
        const struct gpu_report *r = x->report;
        unsigned index = x->o->gpu.index;
        if (!r || !r->driver_present) {
                snprintf(err, errlen,
                         _("--gpu %u: GPU indexes come from the NVIDIA driver, which is not available "
                           "here (%s); pass the GPU's PCI bus id instead, e.g. --gpu 0000:3b:00.0"),
                         index, r && r->error[0] ? r->error : _("no report"));
                return -ENODEV;
        }
        for (size_t i = 0; i < r->n_gpus; i++)
                if (r->gpus[i].index == index)
                        return 0;
        snprintf(err, errlen, P_("--gpu %u: this host has %zu GPU", "--gpu %u: this host has %zu GPUs", r->n_gpus),
                 index, r->n_gpus);
        return -ENOENT;
}

/* Map PCI bus ids to this host's GPU indexes (the driver asked once); with --gpu N the driver
 * must answer. */
static int map_events(struct xid_run *x, struct xid_event *ev, size_t n, char *err, size_t errlen)
{
        if (!x->info.this_host && !x->o->gpu.by_index)
                return 0;
        if (!x->report && gpu_collect(&x->o->gpu_opts, &x->report) < 0)
                x->report = NULL;
        if (x->o->gpu.by_index) {
                int r = check_gpu_index(x, err, errlen);
                if (r < 0)
                        return r;
        }
        if (x->report && x->report->driver_present)
                xid_map_gpus(ev, n, x->report);
        return 0;
}

/* The index of the last driver load in ev (-1: none). */
static long last_load(const struct xid_event *ev, size_t n)
{
        for (size_t i = n; i-- > 0;)
                if (ev[i].kind == XID_KIND_DRIVER_LOAD)
                        return (long)i;
        return -1;
}

/* Each event kept by the filters into d->shown; the others counted by why they were left out. */
static int dump_filter(const struct xid_run_opts *o, struct xid_dump *d)
{
        const struct xid_list *all = &d->all;
        if (all->n && !(d->shown = calloc(all->n, sizeof(*d->shown))))
                return -ENOMEM;
        long load = last_load(all->ev, all->n);
        for (size_t i = 0; i < all->n; i++) {
                const struct xid_event *e = &all->ev[i];
                if (!xid_run_keep(o, e)) {
                        if (!o->verbose && (e->kind == XID_KIND_OTHER || e->kind == XID_KIND_GPU_UUID))
                                d->hidden++;
                        else if (o->since_set && !e->time_known)
                                d->no_time++;
                        continue;
                }
                struct xid_assessment a;
                xid_event_assess(e, &a);
                d->by_sev[a.severity]++;
                d->shown[d->n_shown].e = e;
                d->shown[d->n_shown++].before_load = load < 0 ? -1 : (long)i < load;
        }
        return 0;
}

/* --gpu BUS-ID that no GPU the driver lists now has (kept on purpose: a GPU that fell off the
 * bus, an NVSwitch; said in case it is a typing error). */
static bool pci_unlisted(const struct xid_run *x)
{
        const struct gpu_report *r = x->report;
        const char *pci = x->o->gpu.pci;
        if (!pci[0] || !r || !r->driver_present)
                return false;
        for (size_t i = 0; i < r->n_gpus; i++) {
                char bus[32];
                if (pci_bus_id_normalize(r->gpus[i].pci_bus_id, bus, sizeof(bus)) == 0 && strcmp(bus, pci) == 0)
                        return false;
        }
        return true;
}

int xid_dump_run(struct xid_run *x, struct xid_dump *ret, char *err, size_t errlen)
{
        memset(ret, 0, sizeof(*ret));
        int r = x->info.no_log ? 0 : xid_read_all(&x->rd, x->source, &ret->all);
        if (r < 0) {
                snprintf(err, errlen, _("reading %s: %s"), x->info.path, strerror(-r));
                return r == -ENOENT ? -EIO : r;        /* -ENOENT says: no such GPU */
        }
        bool any_pci = false;
        for (size_t i = 0; i < ret->all.n; i++)
                any_pci = any_pci || ret->all.ev[i].pci_bus_id[0];
        if (any_pci || x->o->gpu.by_index) {
                r = map_events(x, ret->all.ev, ret->all.n, err, errlen);
                if (r < 0)
                        return r;
        }
        r = dump_filter(x->o, ret);
        if (r < 0) {
                snprintf(err, errlen, "%s", strerror(-r));
                return r;
        }
        ret->overruns = x->rd.overruns;
        ret->truncated = x->rd.truncated;
        ret->pci_unlisted = pci_unlisted(x);
        return 0;
}

void xid_dump_free(struct xid_dump *d)
{
        xid_list_free(&d->all);
        free(d->shown);
        d->shown = NULL;
        d->n_shown = 0;
}

/* ---- follow ------------------------------------------------------------------------------- */

/* A follow's state: the parser over the kernel's records, and live NVML critical-error events
 * (nvmlEventSetWait, on their own thread) merged in and labelled "nvml" (event.source). */
struct follow {
        struct xid_run *x;
        const struct xid_follow_cb *cb;
        struct gpu_events *nv;
        struct xid_parser ps;
        struct xid_list batch;
        unsigned long overruns;         /* the overruns reported so far */
};

/* Collect what NVML has sent into the batch (ordered by time with what is there). */
static int follow_merge_nvml(struct follow *f)
{
        if (!f->nv)
                return 0;
        struct xid_list got = { 0 };
        int r = gpu_events_read(f->nv, &got);
        if (r == 0)
                r = xid_list_merge(&f->batch, &got, "nvml");
        xid_list_free(&got);
        return r;
}

/* The batch's events tied to GPU indexes, the kept ones handed on; the batch emptied. */
static void follow_emit(struct follow *f)
{
        struct xid_run *x = f->x;
        struct xid_list *b = &f->batch;
        if (b->n && (x->info.this_host || x->o->gpu.by_index) && x->report && x->report->driver_present)
                xid_map_gpus(b->ev, b->n, x->report);
        for (size_t i = 0; i < b->n; i++)
                if (xid_run_keep(x->o, &b->ev[i]) && f->cb->event)
                        f->cb->event(f->cb->ctx, &b->ev[i], x->rd.overruns);
        if (f->cb->batch_end)
                f->cb->batch_end(f->cb->ctx);
        xid_list_free(b);
}

/* The next record, or the end of what there is: flushed, NVML's merged in, emitted. Returns
 * what kmsg_reader_next did (>0 a record, 0 the end of stdin, -EAGAIN none yet) or an error. */
static int follow_step(struct follow *f)
{
        struct kmsg_record rec;
        int r = f->x->info.no_log ? -EAGAIN : kmsg_reader_next(&f->x->rd, &rec);
        if (r > 0) {
                r = xid_parser_feed(&f->ps, &rec, &f->batch);
                if (r == 0 && f->batch.n)
                        follow_emit(f);
                if (r == 0)
                        return 1;
        }
        if (r == 0 || r == -EAGAIN) {
                int k = xid_parser_flush(&f->ps, &f->batch);
                if (k == 0)
                        k = follow_merge_nvml(f);
                if (k < 0)
                        r = k;
                follow_emit(f);
        }
        if (f->x->rd.overruns != f->overruns) {
                if (f->cb->lost)
                        f->cb->lost(f->cb->ctx, f->x->rd.overruns - f->overruns);
                f->overruns = f->x->rd.overruns;
        }
        return r;
}

/* Wait for more: poll the kernel's fd or a pipe; a regular file is looked at again. */
static int follow_wait(const struct xid_run *x)
{
        struct pollfd pfd = { .fd = x->info.no_log || x->rd.regular ? -1 : kmsg_reader_fd(&x->rd), .events = POLLIN };
        if (poll(&pfd, 1, pfd.fd < 0 ? 250 : 1000) < 0 && errno != EINTR)
                return -errno;
        return 0;
}

int xid_follow_run(struct xid_run *x, const volatile sig_atomic_t *stop, const struct xid_follow_cb *cb, char *err,
                   size_t errlen)
{
        if (errlen)
                err[0] = '\0';
        int r = map_events(x, NULL, 0, err, errlen);
        if (r < 0)
                return r;
        struct follow f = { .x = x, .cb = cb };
        char nverr[256] = "";
        /* this host's log: also listen to NVML's critical-error events */
        if (!x->o->kmsg_path && gpu_events_open(&x->o->gpu_opts, &f.nv, nverr, sizeof(nverr)) < 0)
                f.nv = NULL;
        if (cb->start)
                cb->start(cb->ctx, f.nv ? (int)gpu_events_gpus(f.nv) : -1, nverr);
        xid_parser_init(&f.ps, x->source);
        int status = 0;
        while (!*stop) {
                r = follow_step(&f);
                if (r > 0)
                        continue;
                if (r == 0)
                        break;  /* standard input ended */
                if (r != -EAGAIN) {
                        snprintf(err, errlen, _("reading %s: %s"), x->info.path, strerror(-r));
                        status = r == -ENOENT ? -EIO : r;
                        break;
                }
                if ((status = follow_wait(x)) < 0)
                        break;
        }
        xid_parser_free(&f.ps);
        xid_list_free(&f.batch);
        gpu_events_close(f.nv);
        return status;
}

int xid_gpu_filter_parse(const char *s, struct xid_gpu_filter *g)
{
        memset(g, 0, sizeof(*g));
        g->active = true;
        if (parse_uint_range(s, 0, 1023, &g->index) == 0) {
                g->by_index = true;
                return 0;
        }
        size_t len = strlen(s);
        if (xid_pci_parse(s, len, g->pci) == (int)len)
                return 0;
        if ((strncasecmp(s, "GPU-", 4) == 0 || strncasecmp(s, "MIG-", 4) == 0) && gpu_spec_check(s) == 0) {
                g->uuid = s;
                return 0;
        }
        return -EINVAL;
}

static enum xid_outcome dump(const struct xid_execute_cb *cb, struct xid_run *x, char *err, size_t errlen)
{
        struct xid_dump d;
        enum xid_outcome end = XID_DONE;
        int r = xid_dump_run(x, &d, err, errlen);
        if (r < 0)
                end = r == -ENOENT ? XID_MISTAKE : XID_FAILED;
        else if (cb->dump(cb->ctx, x, &d) < 0)
                end = XID_FAILED;
        xid_dump_free(&d);
        return end;
}

/* Follow until SIGINT or SIGTERM (taken from now on). */
static enum xid_outcome follow(const struct xid_execute_cb *cb, struct xid_run *x, char *err, size_t errlen)
{
        const volatile sig_atomic_t *stop = xid_stop_on_signals();
        struct xid_follow_cb fcb;
        cb->follow(cb->ctx, x, &fcb);
        int r = xid_follow_run(x, stop, &fcb, err, errlen);
        return r >= 0 ? XID_DONE : r == -ENOENT ? XID_MISTAKE : XID_FAILED;
}

enum xid_outcome xid_execute(const struct xid_run_opts *o, const struct xid_execute_cb *cb, char *err, size_t errlen)
{
        struct xid_run x;
        char why[KMSG_ERR_MAX] = "";
        enum xid_outcome end;
        err[0] = '\0';
        if (xid_run_open(&x, o, why, sizeof(why)) < 0) {
                /* a saved log that cannot be read is the caller's mistake */
                snprintf(err, errlen, "%s%s", o->kmsg_path ? "--kmsg " : "", why);
                end = o->kmsg_path ? XID_MISTAKE : XID_FAILED;
        } else {
                size_t n = errlen < KMSG_ERR_MAX ? errlen : KMSG_ERR_MAX; /* as long as before */
                end = o->follow ? follow(cb, &x, err, n) : dump(cb, &x, err, n);
        }
        xid_run_close(&x);
        return end;
}
