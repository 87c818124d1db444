#define _GNU_SOURCE 1
/* reclaim_run: the scan, the lock, syslog, the memory samples while acting, and the choice of
 * a mode (run/reclaim_run.h). The modes are in reclaim_processes.c, reclaim_cgroup.c and
 * reclaim_escalate.c. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "run/reclaim_internal.h"
#include "run/sources.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/escape.h"
#include "util/exit_status.h"
#include "util/i18n.h"
#include "util/stopsig.h"
#include "util/strf.h"

_Static_assert(RC_MAX_ANCESTORS >= HOST_MAX_ANCESTORS, "a bundle's ancestors fit");

#define SAMPLE_LINE_MS 1000

void (*reclaim_run_pause)(void *ctx, const char *stage);

void reclaim_report_clear_notes(struct reclaim_report *r)
{
        for (size_t i = 0; i < r->n_notes; i++)
                str_clear(&r->notes[i]);
        r->n_notes = 0;
}

void reclaim_report_clear(struct reclaim_report *r)
{
        reclaim_report_clear_notes(r);
        str_clear(&r->summary);
}

/* ---- small pieces ------------------------------------------------------------------------------ */

void rc_note(struct reclaim_report *rep, const char *fmt, ...)
{
        if (rep->n_notes >= RECLAIM_MAX_NOTES)
                return;
        va_list ap;
        va_start(ap, fmt);
        if (str_vsetf(&rep->notes[rep->n_notes], fmt, ap) == 0)
                rep->n_notes++;
        va_end(ap);
}

void rc_summary(struct reclaim_report *rep, int status, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        str_vsetf(&rep->summary, fmt, ap);
        va_end(ap);
        rep->exit_status = status;
}

void rc_error(const struct rc_ctx *x, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (x->io->error)
                x->io->error(x->io->ctx, msg);
}

void rc_out_plan(const struct rc_ctx *x, struct reclaim_report *rep)
{
        if (rep->plan_shown || !x->io->plan)
                return;
        rep->plan_shown = true;
        x->io->plan(x->io->ctx, rep);
}

void rc_out_report(const struct rc_ctx *x, struct reclaim_report *rep)
{
        if (x->io->report)
                x->io->report(x->io->ctx, rep);
}

void rc_stopped(struct reclaim_report *rep, double after_s)
{
        rep->stopped = stopsig_pending();
        rep->stopped_after_s = after_s;
        rep->exit_status = 128 + rep->stopped;
}

void rc_stopped_before_acting(struct reclaim_report *rep)
{
        rc_stopped(rep, 0);
        str_setf(&rep->summary, _("Stopped by %s before acting: nothing was signalled."),
                 stopsig_name(rep->stopped));
}

void rc_stopped_acting(struct reclaim_report *rep, const struct reclaim_action *acts, size_t n, double after_s)
{
        rc_stopped(rep, after_s);
        struct buf left = BUF_INIT(4096);
        size_t n_left = 0;
        for (size_t i = 0; i < n; i++)
                if (!reclaim_result_ended(acts[i].result) && n_left++ < 8)
                        buf_printf(&left, "%s%d", n_left > 1 ? ", " : "", (int)acts[i].pid);
        if (n_left > 8)
                buf_printf(&left, _(" and %zu more"), n_left - 8); /* the actions list them all */
        size_t ended = n - n_left;
        if (n_left)
                str_setf(&rep->summary, P_("Stopped by %s %.3g s after the first signal: %zu of %zu process ended; left: PID "
                                           "%s; no signal was sent after the stop.",
                                           "Stopped by %s %.3g s after the first signal: %zu of %zu processes ended; left: PID "
                                           "%s; no signal was sent after the stop.", n),
                         stopsig_name(rep->stopped), after_s, ended, n, buf_str(&left));
        else
                str_setf(&rep->summary, P_("Stopped by %s %.3g s after the first signal: %zu of %zu process ended; no signal was "
                                           "sent after the stop.",
                                           "Stopped by %s %.3g s after the first signal: %zu of %zu processes ended; no signal "
                                           "was sent after the stop.", n),
                         stopsig_name(rep->stopped), after_s, ended, n);
        buf_free(&left);
}

void rc_esc_copy(char *out, size_t n, const char *s)
{
        struct buf b = BUF_INIT(1024);
        if (s && esc_terminal(&b, s, strlen(s)) == 0)
                snprintf(out, n, "%s", buf_str(&b));
        else
                snprintf(out, n, "?");
        buf_free(&b);
}

static void rc_syslog(const struct reclaim_action *a, enum reclaim_event ev)
{
        char comm[96];
        rc_esc_copy(comm, sizeof(comm), a->comm);
        if (ev == RECLAIM_EV_SIGNAL) {
                const char *nm = reclaim_signal_name(a->signals[a->n_signals - 1]);
                syslog(LOG_NOTICE, "reclaim: SIG%s to PID %d (%s) through its pidfd", nm ? nm : "?", (int)a->pid, comm);
        } else {
                char detail[200];
                rc_esc_copy(detail, sizeof(detail), a->detail_en ? a->detail_en : a->detail); /* English */
                syslog(LOG_NOTICE, "reclaim: PID %d (%s): %s after %.2f s%s%s%s", (int)a->pid, comm,
                       reclaim_result_name(a->result), a->seconds, !str_empty(a->detail) ? " (" : "",
                       !str_empty(a->detail) ? detail : "", !str_empty(a->detail) ? ")" : "");
        }
}

/* The scan's wait for its confirming sample: cut short by a stop signal (the scan then fails
 * with -EINTR and nothing is done). */
static bool stop_wait(void *ctx, uint64_t ms)
{
        (void)ctx;
        return stopsig_sleep_ms(ms > UINT32_MAX ? UINT32_MAX : (unsigned)ms);
}

/* ---- the memory samples while acting --------------------------------------------------------------- */

static void out_sample(const struct sampler *s, const struct recovery_gpu *g, bool before, double t)
{
        const struct reclaim_io *io = s->x->io;
        if (io->sample)
                io->sample(io->ctx, g, before, t);
}

/* The lines of the sample just taken (last: the final one, said whatever the time). */
static void sampler_show(struct sampler *s, bool before, bool last)
{
        uint64_t now = monotonic_ms();
        double t = before ? 0 : (double)(now - s->t0) / 1000.0;
        for (size_t i = 0; i < s->n && !s->last_failed; i++) {
                struct recovery_gpu *g = &s->g[i];
                if (!g->expected && !s->x->o->verbose)
                        continue; /* a GPU that expects nothing back: in the report only */
                bool back = g->expected && g->recovered && !s->shown_back[i];
                if (last && !s->unsaid[i])
                        continue; /* the latest sample's line went out already */
                if (!before && !back && !last && s->shown[i] && now - s->shown[i] < SAMPLE_LINE_MS)
                        continue;
                if (!before && !g->after_known)
                        continue;
                if (before && !g->before_known)
                        continue;
                s->shown[i] = now;
                s->shown_back[i] |= back;
                s->unsaid[i] = false;
                out_sample(s, g, before, t);
        }
}

static void sampler_take(struct sampler *s, uint64_t t0)
{
        bool bad = recovery_sample(&s->go, s->g, s->n, t0) < 0;
        s->failed += bad;
        s->last_failed = bad;
        for (size_t i = 0; i < s->n; i++)
                s->unsaid[i] = !bad;
        sampler_show(s, t0 == 0, false);
}

void sampler_tick(void *ctx, uint64_t t_ms)
{
        struct sampler *s = ctx;
        if (!s->have_before) {
                sampler_take(s, 0);
                s->have_before = true;
                s->t0 = monotonic_ms(); /* the first signal follows */
                s->last = 0;
                return;
        }
        if (t_ms - s->last < RECLAIM_SAMPLE_MS - 10)
                return;
        s->last = t_ms;
        sampler_take(s, s->t0);
}

/* The first sample right away: the processes have just ended. */
void sampler_finish(struct sampler *s, uint64_t timeout_ms)
{
        if (!s->have_before)
                sampler_tick(s, 0);
        for (;;) {
                if (stopsig_pending())
                        break;
                sampler_take(s, s->t0);
                if (recovery_all_done(s->g, s->n) || monotonic_ms() - s->t0 >= timeout_ms)
                        break;
                stopsig_sleep_ms(RECLAIM_SAMPLE_MS);
        }
        sampler_show(s, false, true);
}

int sampler_init(struct sampler *s, const struct rc_ctx *x, struct recovery_gpu *g, size_t n)
{
        memset(s, 0, sizeof(*s));
        s->go = x->o->go;
        s->go.memory_only = true;
        s->go.timeout_ms = s->go.timeout_ms < 1000 ? s->go.timeout_ms : 1000; /* a short deadline per call */
        s->x = x;
        s->g = g;
        s->n = n;
        s->shown = calloc(n ? n : 1, sizeof(*s->shown));
        s->shown_back = calloc(n ? n : 1, sizeof(*s->shown_back));
        s->unsaid = calloc(n ? n : 1, sizeof(*s->unsaid));
        return s->shown && s->shown_back && s->unsaid ? 0 : -ENOMEM;
}

void sampler_done(struct sampler *s)
{
        free(s->shown);
        free(s->shown_back);
        free(s->unsaid);
        s->shown = NULL;
        s->shown_back = NULL;
        s->unsaid = NULL;
}

double sampler_elapsed(const struct sampler *s)
{
        return s->have_before ? (double)(monotonic_ms() - s->t0) / 1000.0 : 0;
}

void rc_event(void *ctx, const struct reclaim_action *a, enum reclaim_event ev)
{
        const struct sampler *s = ctx;
        rc_syslog(a, ev);
        const struct reclaim_io *io = s->x->io;
        if (io->action)
                io->action(io->ctx, a, ev, sampler_elapsed(s));
}

/* ---- what the modes share ------------------------------------------------------------------------ */

int rc_take_lock(struct rc_ctx *x, struct reclaim_report *rep)
{
        char path[PATH_MAX];
        pid_t holder = 0;
        int fd = reclaim_lock(x->o->simulated ? x->o->sim_dir : NULL, path, sizeof(path), &holder);
        if (fd == -EWOULDBLOCK) {
                if (holder)
                        rc_note(rep, _("another reclaim is running as PID %d (lock %s); one reclaim at a time per host"),
                                (int)holder, path);
                else
                        rc_note(rep, _("another reclaim is running (lock %s); one reclaim at a time per host"), path);
                rc_summary(rep, EXIT_INCOMPLETE, _("Cannot act: another reclaim is running."));
                return -1;
        }
        if (fd < 0) {
                rc_note(rep, _("cannot take the reclaim lock %s: %s"), path, strerror(-fd));
                rc_summary(rep, EXIT_INCOMPLETE, _("Cannot act: no lock."));
                return -1;
        }
        x->lock_fd = fd;
        return 0;
}

struct recovery_gpu *rc_watch_list(const struct scan_result *res, int only_gpu, const pid_t *pids, size_t n_pids,
                                   size_t *ret_n)
{
        struct recovery_gpu *g = calloc(res->n_gpus ? res->n_gpus : 1, sizeof(*g));
        size_t n = 0;
        if (!g)
                return NULL;
        for (size_t i = 0; i < res->n_gpus; i++) {
                const struct gpu_ledger *l = &res->gpus[i];
                if (only_gpu >= 0 && l->index != (unsigned)only_gpu)
                        continue;
                bool held = false;
                for (size_t a = 0; a < l->n_attr && l->ghost_confirmed; a++)
                        for (size_t k = 0; k < n_pids; k++)
                                held |= res->facts->host->holders[l->attr[a].holder].pid == pids[k];
                recovery_init(&g[n], l->index, held ? l->ghost : 0, l->noise_floor);
                if (l->inspected) {
                        g[n].before = l->used;
                        g[n].before_known = true;
                }
                n++;
        }
        *ret_n = n;
        return g;
}

/* ---- the run ------------------------------------------------------------------------------------ */

/* ghostvram's ancestors: parent, its parent, ... (in our PID namespace). */
static size_t ancestors_of_self(const struct host_opts *ho, pid_t *out, size_t max)
{
        size_t n = 0;
        pid_t p = getppid();
        while (p > 0 && n < max) {
                out[n++] = p;
                if (p == 1)
                        break;
                struct host_proc hp;
                memset(&hp, 0, sizeof(hp));
                if (host_proc_lookup(ho, p, &hp) < 0)
                        break;
                pid_t pp = hp.ppid;
                host_proc_clear(&hp);
                if (pp == p)
                        break;
                p = pp;
        }
        return n;
}

/* Who ghostvram is, for the plan's protections: this process, or, from a bundle, the ghostvram
 * that recorded it (as far as the bundle kept it). */
static void plan_self(struct rc_ctx *x)
{
        const struct reclaim_run_opts *o = x->o;
        x->po.policy = o->policy;
        x->po.ancestors = x->anc;
        if (o->from_bundle) {
                const struct facts *bf = x->res->facts;
                const struct host_report *bh = bf->host;
                x->po.self_pid = bh ? bh->self_pid : 0;
                x->po.n_ancestors = bh ? bh->n_self_ancestors : 0;
                if (x->po.n_ancestors)
                        memcpy(x->anc, bh->self_ancestors, x->po.n_ancestors * sizeof(x->anc[0]));
                x->po.self_proc = bf->self_known ? &bf->self : NULL;
        } else {
                bool have_self = host_proc_lookup(&o->ho, getpid(), &x->self) == 0;
                x->po.self_pid = getpid();
                x->po.n_ancestors = ancestors_of_self(&o->ho, x->anc, RC_MAX_ANCESTORS);
                x->po.self_proc = have_self ? &x->self : NULL;
        }
        x->po.only_gpu = o->only_gpu;
        x->po.force = o->force;
}

/* Before the scan, when acting: pidfds, then the lock. -1: the report is out. */
static int prepare_acting(struct rc_ctx *x, struct reclaim_report *rep)
{
        if (reclaim_pidfd_supported(&x->sys) < 0) {
                rc_note(rep, _("this kernel has no pidfd_open (Linux 5.3+): reclaim never signals by bare PID"));
                rc_summary(rep, EXIT_INCOMPLETE, _("Cannot act: no pidfd support."));
                rc_out_report(x, rep);
                return -1;
        }
        if (rc_take_lock(x, rep) < 0) {
                rc_out_report(x, rep);
                return -1;
        }
        return 0;
}

/* The scan the plan is made from. Returns 0, or the exit status (said) when there is none. */
static int scan(struct rc_ctx *x, struct reclaim_report *rep)
{
        const struct reclaim_run_opts *o = x->o;
        struct scan_once_opts so = o->so;
        so.wait = stop_wait;
        if (x->acting && x->io->scanning)
                x->io->scanning(x->io->ctx, so.confirm_ms); /* a first line at once */
        int r = scan_once_run(&so, &x->scan);
        if (r < 0 && stopsig_pending()) {
                rc_stopped_before_acting(rep);
                rc_out_report(x, rep);
                return rep->exit_status;
        }
        if (r < 0) {
                rc_error(x, _("cannot scan (%s): %s"), o->proc_root, strerror(-r));
                return EXIT_INCOMPLETE;
        }
        x->res = x->scan->res;
        const struct gpu_report *gr = x->res->facts->gpu;
        if (!gr->driver_present && !o->from_bundle) {
                rc_error(x, "%s", gr->error[0] ? gr->error : _("no NVIDIA driver"));
                return EXIT_INCOMPLETE;
        }
        if (o->only_gpu >= 0 && gr->driver_present && (size_t)o->only_gpu >= gr->n_gpus) {
                rc_error(x, P_("--gpu %d: this host has %zu GPU", "--gpu %d: this host has %zu GPUs", gr->n_gpus), o->only_gpu,
                         gr->n_gpus);
                return EXIT_USAGE;
        }
        return 0;
}

static void report_init(const struct reclaim_run_opts *o, const struct rc_ctx *x, struct reclaim_report *rep)
{
        memset(rep, 0, sizeof(*rep));
        rep->mode = o->cgroup ? "cgroup" : o->reset_gpu ? "reset-gpu" : o->reload_uvm ? "reload-uvm" : o->poke ? "poke" : "processes";
        rep->simulated = o->simulated;
        rep->signal = o->cgroup ? SIGKILL : o->signal;
        rep->grace_ms = (unsigned)o->grace_ms;
        rep->timeout_ms = (unsigned)o->wait_ms;
        rep->dry_run = !x->acting;
}

/* The scan, who ghostvram is, then the mode. */
static int run_mode(struct rc_ctx *x, struct reclaim_report *rep)
{
        const struct reclaim_run_opts *o = x->o;
        if (x->acting && prepare_acting(x, rep) < 0)
                return EXIT_INCOMPLETE;
        int status = scan(x, rep);
        if (status != 0)
                return status;
        plan_self(x);
        if (o->cgroup)
                status = rc_mode_cgroup(x, rep);
        else if (o->reset_gpu || o->reload_uvm)
                status = rc_mode_escalate(x, rep);
        else if (o->poke)
                status = rc_mode_poke(x, rep);
        else
                status = rc_mode_processes(x, rep);
        host_proc_clear(&x->self);
        return status;
}

int reclaim_run(const struct reclaim_run_opts *o, const struct reclaim_io *io)
{
        struct rc_ctx x;
        memset(&x, 0, sizeof(x));
        x.o = o;
        x.io = io;
        x.lock_fd = -1;
        x.acting = o->yes && !o->dry_run && !o->from_bundle;
        struct reclaim_report rep;
        report_init(o, &x, &rep);
        /* from here a stop signal ends reclaim between two steps, with its report */
        struct stopsig_saved saved_signals;
        stopsig_catch(&saved_signals);
        /* a reader that goes away (`reclaim --yes | head`, an Epilog killed at its time limit)
         * must not end reclaim between a signal and its SIGKILL: the act goes on, bounded, and
         * syslog keeps its record; only the lines are lost */
        struct sigaction pipe_ign = { .sa_handler = SIG_IGN }, pipe_old;
        sigemptyset(&pipe_ign.sa_mask);
        sigaction(SIGPIPE, &pipe_ign, &pipe_old);
        reclaim_sys_real(&x.sys, "/proc");
        openlog("ghostvram", LOG_PID, LOG_AUTHPRIV);
        int status = run_mode(&x, &rep);
        scan_once_free(x.scan);
        if (x.lock_fd >= 0)
                close(x.lock_fd);
        closelog();
        reclaim_report_clear(&rep);
        stopsig_restore(&saved_signals);
        sigaction(SIGPIPE, &pipe_old, NULL);
        return status;
}

void reclaim_run_from(struct reclaim_run_opts *o, const struct sources *src)
{
        sources_scan_once_opts(src, &o->so);
        sources_gpu_opts(src, &o->go);
        sources_host_opts(src, &o->ho);
        o->ho.save_dir = NULL;
        o->simulated = src->simulated;
        o->sim_dir = src->sim_dir;
        o->proc_root = src->proc_root;
        o->from_bundle = src->from_bundle;
}
