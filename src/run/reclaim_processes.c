#define _GNU_SOURCE 1
/* reclaim_run, the processes mode: end the orphaned holders of a confirmed ghost (or exactly
 * --pid's) and measure the memory coming back. A plan made while a person answers a question
 * is made again from a fresh scan, and acted on only when it names the same processes. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "run/reclaim_internal.h"
#include "util/exit_status.h"
#include "util/i18n.h"
#include "util/stopsig.h"
#include "util/strf.h"

/* The targets a person confirmed on the terminal (PID and start time). */
struct confirmed {
        pid_t pid[RECLAIM_MAX_PIDS * 4];
        uint64_t start[RECLAIM_MAX_PIDS * 4];
        size_t n;
        bool set;
};

/* One run of the mode: what it made and must free. */
struct procs {
        struct host_proc extra[RECLAIM_MAX_PIDS];       /* facts of explicit PIDs that hold no node */
        size_t n_extra;
        struct confirmed conf;
        unsigned asked;
        struct reclaim_plan *plan;
        struct reclaim_action *acts;
        struct recovery_gpu *rec;
        size_t n_acts, n_rec;
        struct sampler sm;
};

/* Where a step leaves the mode. */
enum step {
        STEP_ON,        /* the next step */
        STEP_REPORT,    /* the summary is set: the report goes out */
        STEP_END,       /* the exit status is set, what was to be said is said */
        STEP_REPLAN,    /* the question was answered yes: scan and plan again */
};

static void confirmed_take(struct confirmed *c, const struct reclaim_plan *p)
{
        c->n = 0;
        c->set = true;
        for (size_t i = 0; i < p->n_targets && c->n < sizeof(c->pid) / sizeof(c->pid[0]); i++) {
                c->pid[c->n] = p->targets[i].pid;
                c->start[c->n++] = p->targets[i].start_ticks;
        }
}

/* Does the plan have exactly the confirmed targets (the same processes)? */
static bool confirmed_same(const struct confirmed *c, const struct reclaim_plan *p)
{
        if (!c->set || c->n != p->n_targets)
                return false;
        for (size_t i = 0; i < p->n_targets; i++) {
                bool found = false;
                for (size_t k = 0; k < c->n && !found; k++)
                        found = c->pid[k] == p->targets[i].pid && c->start[k] == p->targets[i].start_ticks;
                if (!found)
                        return false;
        }
        return true;
}

static void extra_clear(struct procs *ps)
{
        for (size_t i = 0; i < ps->n_extra; i++)
                host_proc_clear(&ps->extra[i]);
        ps->n_extra = 0;
}

/* The plan from the latest scan (x->res); -1 when out of memory (said). */
static int plan_make(struct rc_ctx *x, struct procs *ps, struct reclaim_report *rep)
{
        const struct reclaim_run_opts *o = x->o;
        for (size_t i = 0; i < o->n_pids; i++) {
                if (x->res->facts->host && host_report_find(x->res->facts->host, o->pids[i]))
                        continue;
                memset(&ps->extra[ps->n_extra], 0, sizeof(ps->extra[0]));
                if (host_proc_lookup(&o->ho, o->pids[i], &ps->extra[ps->n_extra]) == 0)
                        ps->n_extra++;
        }
        x->po.explicit_pids = o->pids;
        x->po.n_explicit = o->n_pids;
        x->po.extra = ps->extra;
        x->po.n_extra = ps->n_extra;
        if (reclaim_plan_build(x->res, &x->po, &ps->plan) < 0) {
                rc_error(x, _("out of memory"));
                return -1;
        }
        rep->plan = ps->plan;
        return 0;
}

/* --pid never names PID 1, a kernel thread, ghostvram or an ancestor: refuse it all. */
static bool refused_pids(const struct reclaim_run_opts *o, const struct reclaim_plan *plan, struct reclaim_report *rep)
{
        bool hard = false;
        for (size_t i = 0; plan->explicit_mode && i < plan->n_skipped; i++) {
                const struct reclaim_skip *s = &plan->skipped[i];
                if (s->rule == RECLAIM_PID1 || s->rule == RECLAIM_KTHREAD || s->rule == RECLAIM_SELF ||
                    s->rule == RECLAIM_ANCESTOR || s->rule == RECLAIM_NO_DEVICE || s->rule == RECLAIM_GHOSTVRAM ||
                    s->rule == RECLAIM_LIVE_OWNER || s->rule == RECLAIM_LIVE_FAMILY) {
                        char comm[96];
                        rc_esc_copy(comm, sizeof(comm), s->comm[0] ? s->comm : "?");
                        rc_note(rep, _("refused: --pid %d (%s): %s"), (int)s->pid, comm, s->reason);
                        hard = true;
                }
        }
        if (hard)
                rc_summary(rep, EXIT_INCOMPLETE, _("Nothing was signalled: --pid names a process reclaim does not signal%s."),
                           o->force ? "" : _(" (see why above)"));
        return hard;
}

/* Not root: only our own processes. */
static bool foreign_targets(const struct reclaim_plan *plan, struct reclaim_report *rep)
{
        uid_t euid = geteuid();
        bool foreign = false;
        for (size_t i = 0; euid != 0 && i < plan->n_targets; i++)
                if (plan->targets[i].uid != euid) {
                        rc_note(rep, _("PID %d belongs to uid %u: only root may signal other users' processes"),
                                (int)plan->targets[i].pid, (unsigned)plan->targets[i].uid);
                        foreign = true;
                }
        return foreign;
}

/* A confirmed ghost and no target: why, by what hides the holders (as scan says it), and
 * the last resorts only where every process could be seen. */
static void no_target_summary(struct reclaim_report *rep, const struct reclaim_run_opts *o, const struct scan_result *res,
                              const struct reclaim_plan *plan)
{
        const struct host_report *h = res->facts->host;
        char gpu[96] = "";
        if (o->gpu_spec)
                snprintf(gpu, sizeof(gpu), " --gpu %s", o->gpu_spec);
        if (!h || h->euid != 0) {
                rc_summary(rep, EXIT_FINDING,
                           _("A confirmed ghost, but not root: other users' processes are out of sight, and the holders "
                           "may be among them. Run `sudo ghostvram reclaim%s` before anything else (never reset a GPU "
                           "on this view)."), gpu);
                return;
        }
        if (!h->initial_pidns) {
                rc_summary(rep, EXIT_FINDING,
                           _("A confirmed ghost, but processes outside this PID namespace are out of sight: run reclaim "
                           "on the host (or a pod with hostPID: true / docker --pid=host): `sudo ghostvram reclaim%s`."),
                           gpu);
                return;
        }
        size_t shown = 0; /* the skipped lines the text shows */
        for (size_t i = 0; i < plan->n_skipped; i++)
                shown += o->verbose || plan->skipped[i].rule != RECLAIM_NOT_ATTRIBUTED;
        /* the poke first (a new context may make the driver finish a dead one's teardown), of the
         * named GPU or of the first with a confirmed ghost */
        int pg = o->only_gpu;
        for (size_t i = 0; pg < 0 && i < res->n_gpus; i++)
                if (res->gpus[i].ghost_confirmed)
                        pg = (int)res->gpus[i].index;
        if (shown)
                rc_summary(rep, EXIT_FINDING,
                           _("A confirmed ghost, but no process reclaim may end for it (see why above). Check "
                           "`ghostvram scan%s`; before the last resorts (--reset-gpu, --reload-uvm) try the poke: "
                           "`sudo ghostvram reclaim --poke --gpu %d`."), gpu, pg < 0 ? 0 : pg);
        else
                rc_summary(rep, EXIT_FINDING,
                           _("A confirmed ghost, but no process that holds it could be tied to it: `ghostvram scan%s "
                           "--verbose` says why; before the last resorts (--reset-gpu, --reload-uvm) try the poke: "
                           "`sudo ghostvram reclaim --poke --gpu %d`."), gpu, pg < 0 ? 0 : pg);
}

/* The answer was yes: the lock, then a fresh scan (the answer may have come minutes later) for
 * a plan acted on only if it is the one that was confirmed. */
static enum step confirmed_yes(struct rc_ctx *x, struct procs *ps, struct reclaim_report *rep, int *status)
{
        if (x->lock_fd < 0 && rc_take_lock(x, rep) < 0)
                return STEP_REPORT;
        confirmed_take(&ps->conf, ps->plan);
        struct scan_once *fresh = NULL;
        struct scan_once_opts so = x->o->so;
        int sr = scan_once_run(&so, &fresh);
        if (sr < 0) {
                rc_error(x, _("cannot scan again (%s): %s"), x->o->proc_root, strerror(-sr));
                *status = EXIT_INCOMPLETE;
                return STEP_END;
        }
        scan_once_free(x->scan);
        x->scan = fresh;
        x->res = fresh->res;
        extra_clear(ps);
        rep->plan = NULL;
        reclaim_plan_free(ps->plan);
        ps->plan = NULL;
        reclaim_report_clear_notes(rep);
        x->acting = true;
        rep->dry_run = false;
        return STEP_REPLAN;
}

static void said(const struct rc_ctx *x, const char *text)
{
        if (x->io->line)
                x->io->line(x->io->ctx, text);
}

/* A dry run on a terminal: the plan, and the question whether to act on it. */
static enum step ask(struct rc_ctx *x, struct procs *ps, struct reclaim_report *rep, int *status)
{
        const struct reclaim_plan *plan = ps->plan;
        x->io->show_plan(x->io->ctx, rep); /* with its notes, which then go */
        reclaim_report_clear_notes(rep);
        char q[128];
        snprintf(q, sizeof(q), P_("Send SIG%s to these %zu process now?", "Send SIG%s to these %zu processes now?",
                                  plan->n_targets), reclaim_signal_name(x->o->signal), plan->n_targets);
        if (++ps->asked > 3) {
                rc_summary(rep, EXIT_INCOMPLETE, _("Nothing done: the plan kept changing; run reclaim again."));
                said(x, str_or_empty(rep->summary));
                *status = EXIT_INCOMPLETE;
                return STEP_END;
        }
        if (x->io->ask(x->io->ctx, q))
                return confirmed_yes(x, ps, rep, status);
        if (stopsig_pending()) {
                rc_stopped_before_acting(rep); /* ^C at the question */
                said(x, "");
                said(x, str_or_empty(rep->summary));
        } else {
                rc_summary(rep, EXIT_OK, _("Nothing done."));
                said(x, str_or_empty(rep->summary));
        }
        *status = rep->exit_status;
        return STEP_END;
}

/* The plan is made: refusals, nothing to do, the question, a dry run; STEP_ON to act. */
static enum step judge_plan(struct rc_ctx *x, struct procs *ps, struct reclaim_report *rep, int *status)
{
        const struct reclaim_run_opts *o = x->o;
        const struct reclaim_plan *plan = ps->plan;
        if (refused_pids(o, plan, rep))
                return STEP_REPORT;
        bool foreign = foreign_targets(plan, rep);
        if (ps->conf.set && !confirmed_same(&ps->conf, plan)) {
                /* the processes changed while the question was open: what was confirmed is
                 * not what would be signalled now */
                rc_note(rep, _("the plan changed while the question was open (scanned again after the answer): "
                               "this is the new plan"));
                x->acting = false;
                rep->dry_run = true;
        }
        if (plan->n_targets == 0) {
                if (plan->any_confirmed_ghost && !plan->explicit_mode)
                        no_target_summary(rep, o, x->res, plan);
                else
                        rc_summary(rep, EXIT_OK, _("Nothing to reclaim: %s."),
                                   plan->explicit_mode ? _("none of the named processes is here")
                                                       : _("no confirmed ghost held by a process"));
                return STEP_REPORT;
        }
        if (!x->acting && !o->dry_run && !o->from_bundle && !foreign && x->io->can_ask && x->io->can_ask(x->io->ctx))
                return ask(x, ps, rep, status);
        if (foreign) {
                rc_summary(rep, EXIT_INCOMPLETE, _("Cannot act: run as root (sudo ghostvram reclaim)."));
                return STEP_REPORT;
        }
        if (!x->acting && o->grace_ms == RECLAIM_GRACE_NONE) {
                rc_summary(rep, EXIT_OK, P_("Dry run: %zu process would get SIG%s (no SIGKILL: --grace none). Run again with --yes.",
                                            "Dry run: %zu processes would get SIG%s (no SIGKILL: --grace none). Run again with --yes.",
                                            plan->n_targets),
                           plan->n_targets, reclaim_signal_name(o->signal));
                return STEP_REPORT;
        }
        if (!x->acting) {
                rc_summary(rep, EXIT_OK, P_("Dry run: %zu process would get SIG%s (SIGKILL after %.3g s). Run again with --yes.",
                                            "Dry run: %zu processes would get SIG%s (SIGKILL after %.3g s). Run again with --yes.",
                                            plan->n_targets),
                           plan->n_targets, reclaim_signal_name(o->signal), (double)o->grace_ms / 1000.0);
                return STEP_REPORT;
        }
        if (stopsig_pending()) {
                rc_stopped_before_acting(rep);
                return STEP_REPORT;
        }
        return STEP_ON;
}

static void syslog_acting(const struct reclaim_run_opts *o, const struct reclaim_plan *plan)
{
        unsigned euid = (unsigned)geteuid();
        if (o->grace_ms == RECLAIM_GRACE_NONE)
                syslog(LOG_NOTICE, "reclaim: uid %u acts on %zu process%s (SIG%s, no SIGKILL)", euid,
                       plan->n_targets, plan->n_targets == 1 ? "" : "es", reclaim_signal_name(o->signal));
        else
                syslog(LOG_NOTICE, "reclaim: uid %u acts on %zu process%s (SIG%s, grace %.3g s)", euid,
                       plan->n_targets, plan->n_targets == 1 ? "" : "es", reclaim_signal_name(o->signal),
                       (double)o->grace_ms / 1000.0);
}

/* Act on the plan: every selected GPU is watched; those whose ghost the targets hold expect it
 * back. STEP_ON when acted (the actions and samples are in ps). */
static enum step act(struct rc_ctx *x, struct procs *ps, struct reclaim_report *rep, int *status)
{
        const struct reclaim_run_opts *o = x->o;
        const struct reclaim_plan *plan = ps->plan;
        ps->rec = calloc(plan->n_gpus ? plan->n_gpus : 1, sizeof(*ps->rec));
        if (!ps->rec)
                return STEP_END;
        ps->n_rec = plan->n_gpus;
        for (size_t i = 0; i < ps->n_rec; i++) {
                const struct reclaim_gpu *pg = &plan->gpus[i];
                recovery_init(&ps->rec[i], pg->index, pg->n_targets && pg->ghost_confirmed ? pg->expected_bytes : 0,
                              pg->noise_floor);
        }
        if (sampler_init(&ps->sm, x, ps->rec, ps->n_rec) < 0)
                return STEP_END;
        rc_out_plan(x, rep); /* what is about to be done, before it is done */
        syslog_acting(o, plan);
        struct reclaim_act_opts ao = {
                .sys = &x->sys, .signal = o->signal, .grace_ms = (unsigned)o->grace_ms,
                .timeout_ms = (unsigned)o->wait_ms, .poll_ms = RECLAIM_SAMPLE_MS, .log = rc_event, .log_ctx = &ps->sm,
                .pause = reclaim_run_pause, .tick = sampler_tick, .tick_ctx = &ps->sm, .stop = stopsig_pending,
        };
        int r = reclaim_act_run(plan, &ao, &ps->acts, &ps->n_acts);
        if (r == -ENOSYS) {
                rc_note(rep, _("this kernel has no pidfd_open (Linux 5.3+): reclaim never signals by bare PID"));
                rc_summary(rep, EXIT_INCOMPLETE, _("Cannot act: no pidfd support."));
                return STEP_REPORT;
        }
        if (r < 0) {
                rc_error(x, "%s", strerror(-r));
                *status = EXIT_INCOMPLETE;
                return STEP_END;
        }
        sampler_finish(&ps->sm, o->wait_ms);
        rep->actions = ps->acts;
        rep->n_actions = ps->n_acts;
        rep->rec = ps->rec;
        rep->n_rec = ps->n_rec;
        return STEP_ON;
}

/* What acting came to: the summary, and each GPU's memory to syslog. */
static void result_summary(const struct reclaim_run_opts *o, const struct procs *ps, struct reclaim_report *rep)
{
        const struct recovery_gpu *rec = ps->rec;
        size_t n_acts = ps->n_acts, ended = 0, denied = 0;
        for (size_t i = 0; i < n_acts; i++) {
                ended += reclaim_result_ended(ps->acts[i].result);
                denied += ps->acts[i].result == RECLAIM_RES_NOT_PERMITTED;
        }
        if (stopsig_pending()) {
                rc_stopped_acting(rep, ps->acts, n_acts, sampler_elapsed(&ps->sm));
                return;
        }
        for (size_t i = 0; i < ps->n_rec; i++)
                if (rec[i].expected)
                        syslog(LOG_NOTICE, "reclaim: GPU %u: %llu MiB -> %llu MiB, %s", rec[i].index,
                               (unsigned long long)(rec[i].before >> 20), (unsigned long long)(rec[i].after >> 20),
                               rec[i].recovered ? "recovered" : "not recovered by the timeout");
        bool back = recovery_all_done(rec, ps->n_rec);
        /* "recovered" only about memory the plan set out to free (a target's confirmed ghost) */
        bool expected = false;
        for (size_t i = 0; i < ps->n_rec; i++)
                expected |= rec[i].expected > 0;
        bool ghost = ps->plan->any_confirmed_ghost;
        if (denied == n_acts && n_acts)
                rc_summary(rep, EXIT_INCOMPLETE, _("Cannot act: not permitted to signal these processes (run as root)."));
        else if (ended == n_acts && !expected)
                rc_summary(rep, ghost ? EXIT_FINDING : EXIT_OK,
                           P_("%zu process ended; none held a confirmed ghost, so no memory was expected back%s.",
                              "%zu processes ended; none held a confirmed ghost, so no memory was expected back%s.", ended),
                           ended, ghost ? _(" (the ghost is still there)") : "");
        else if (ended == n_acts && back)
                rc_summary(rep, EXIT_OK, P_("Memory recovered: %zu process ended.", "Memory recovered: %zu processes ended.", ended),
                           ended);
        else if (ended == n_acts && ps->sm.last_failed)
                rc_summary(rep, EXIT_FINDING,
                           _("Partial: every process ended, but the NVIDIA driver stopped answering the memory queries "
                           "(%u unanswered): whether the memory came back is unknown. A hung GPU? `ghostvram xid`."),
                           ps->sm.failed);
        else if (ended == n_acts)
                rc_summary(rep, EXIT_FINDING, _("Partial: every process ended, but the memory did not come back within %.3g s."),
                           (double)o->wait_ms / 1000.0);
        else
                rc_summary(rep, EXIT_FINDING, P_("Partial: %zu of %zu process ended%s.", "Partial: %zu of %zu processes ended%s.", n_acts),
                           ended, n_acts, back ? "" : _("; memory not fully back"));
}

/* Plan (again, after a yes on the terminal), judge, act, sum up. */
static enum step run_steps(struct rc_ctx *x, struct procs *ps, struct reclaim_report *rep, int *status)
{
        enum step s;
        do {
                if (plan_make(x, ps, rep) < 0)
                        return STEP_END;
                s = judge_plan(x, ps, rep, status);
        } while (s == STEP_REPLAN);
        if (s != STEP_ON)
                return s;
        s = act(x, ps, rep, status);
        if (s != STEP_ON)
                return s;
        result_summary(x->o, ps, rep);
        return STEP_REPORT;
}

int rc_mode_processes(struct rc_ctx *x, struct reclaim_report *rep)
{
        struct procs *ps = calloc(1, sizeof(*ps));
        if (!ps) {
                rc_error(x, _("out of memory"));
                return EXIT_INCOMPLETE;
        }
        int status = EXIT_INCOMPLETE;
        if (run_steps(x, ps, rep, &status) == STEP_REPORT) {
                rc_out_report(x, rep);
                status = rep->exit_status;
        }
        extra_clear(ps);
        rep->plan = NULL;
        rep->actions = NULL;
        rep->rec = NULL;
        reclaim_plan_free(ps->plan);
        sampler_done(&ps->sm);
        reclaim_actions_free(ps->acts, ps->n_acts);
        free(ps->rec);
        free(ps);
        return status;
}
