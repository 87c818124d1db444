#define _GNU_SOURCE 1
/* reclaim_run, the cgroup mode: end a finished job's whole cgroup with cgroup.kill. Refused
 * while a live owner or a protected process is inside, or when the driver gives no process list
 * (a live owner inside could not be ruled out). */
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

/* One run of the mode: what it made and must free. */
struct cg {
        struct reclaim_cgroup_info ci;
        pid_t *pids;
        size_t np;
        struct recovery_gpu *rec;
        size_t n_rec;
        struct reclaim_action *acts;
        struct reclaim_plan *plan;
        struct sampler sm;
};

static const struct owner *live_owner(const struct scan_result *r, pid_t pid, unsigned *ret_gpu)
{
        for (size_t g = 0; g < r->n_gpus; g++)
                for (size_t k = 0; k < r->gpus[g].n_owners; k++)
                        if (r->gpus[g].owners[k].cls == OWNER_LIVE && (pid_t)r->gpus[g].owners[k].pid == pid) {
                                *ret_gpu = r->gpus[g].index;
                                return &r->gpus[g].owners[k];
                        }
        return NULL;
}

/* A member of --cgroup's cgroup into its plan: a target, or skipped by `rule`. */
static void cgroup_plan_add(struct reclaim_plan *p, const struct host_proc *hp, bool known, enum reclaim_rule rule,
                            int gpu, const char *why)
{
        if (rule != RECLAIM_TARGET) {
                struct reclaim_skip *k = &p->skipped[p->n_skipped++];
                k->pid = hp->pid;
                snprintf(k->comm, sizeof(k->comm), "%s", known && hp->comm ? hp->comm : "");
                k->gpu = gpu;
                k->rule = rule;
                str_setf(&k->reason, "%s", why);
                return;
        }
        struct reclaim_target *t = &p->targets[p->n_targets++];
        t->pid = hp->pid;
        t->start_ticks = known ? hp->start_ticks : 0;
        t->uid = known ? hp->uid : 0;
        t->state = known ? hp->state : '?';
        snprintf(t->comm, sizeof(t->comm), "%s", known && hp->comm ? hp->comm : "");
        t->gpu = -1;
        t->link = LINK_NONE;
        str_setf(&t->why, _("a member of the cgroup (cgroup.path)"));
}

/* --cgroup's directory and members; false when there is none (the report says why). */
static bool resolve(struct rc_ctx *x, struct cg *c, struct reclaim_report *rep)
{
        const char *cgroup = x->o->cgroup;
        struct reclaim_cgroup_info *ci = &c->ci;
        int r = reclaim_cgroup_resolve("/proc", cgroup, ci->dir, sizeof(ci->dir), ci->path, sizeof(ci->path));
        if (r < 0) {
                rep->cgroup = NULL;
                if (r == -ENOTSUP)
                        rc_summary(rep, EXIT_INCOMPLETE, _("Cannot act: no cgroup v2 hierarchy is mounted here (--cgroup needs cgroup2)."));
                else if (r == -EINVAL)
                        rc_summary(rep, EXIT_USAGE, _("--cgroup %s: refused: the root cgroup, or a path with '..'"), cgroup);
                else
                        rc_summary(rep, EXIT_USAGE, _("--cgroup %s: no such cgroup (%s)"), cgroup, strerror(-r));
                rc_error(x, "%s", str_or_empty(rep->summary)); /* an error goes to stderr too, not only into the report */
                return false;
        }
        r = reclaim_cgroup_pids(ci->dir, &c->pids, &c->np);
        if (r < 0) {
                rc_summary(rep, EXIT_INCOMPLETE, _("Cannot read %s/cgroup.procs: %s"), ci->dir, strerror(-r));
                rc_error(x, "%s", str_or_empty(rep->summary));
                return false;
        }
        ci->n_pids = c->np;
        return true;
}

/* No process list from the driver: a live owner inside could not be seen. */
static bool blind(const struct scan_result *res, const char *path, struct reclaim_report *rep)
{
        bool blind = false;
        for (size_t g = 0; g < res->facts->gpu->n_gpus; g++)
                if (!res->facts->gpu->gpus[g].procs_known) {
                        rc_note(rep, _("GPU %u: NVML gave no process list, so a live owner in %s could not be ruled out"),
                                res->facts->gpu->gpus[g].index, path);
                        blind = true;
                }
        return blind;
}

/* One member into the plan; true when it makes the whole cgroup refused (a live owner or a
 * protected process). */
static bool member_add(struct rc_ctx *x, struct cg *c, size_t i, struct reclaim_report *rep)
{
        pid_t pid = c->pids[i];
        const char *path = c->ci.path;
        unsigned gpu = 0;
        bool refuse = false;
        const struct owner *ow = live_owner(x->res, pid, &gpu);
        struct host_proc hp;
        memset(&hp, 0, sizeof(hp));
        bool known = host_proc_lookup(&x->o->ho, pid, &hp) == 0;
        char comm[96];
        rc_esc_copy(comm, sizeof(comm), known ? hp.comm : "?");
        snprintf(c->acts[i].comm, sizeof(c->acts[i].comm), "%s", known && hp.comm ? hp.comm : "");
        if (ow) {
                rc_note(rep, _("PID %d (%s) in %s is a live owner on GPU %u (%llu MiB): the job is not finished"), (int)pid,
                        comm, path, gpu, (unsigned long long)(ow->used_bytes >> 20));
                refuse = true;
        }
        char *why STR_AUTOFREE = NULL;
        if (!known)
                hp.pid = pid;
        enum reclaim_rule rule = reclaim_protection(&hp, &x->po, &why);
        if (rule != RECLAIM_TARGET) {
                rc_note(rep, _("PID %d (%s) in %s: %s"), (int)pid, comm, path, why);
                refuse = true;
        }
        cgroup_plan_add(c->plan, &hp, known, ow ? RECLAIM_LIVE_OWNER : rule, ow ? (int)gpu : -1,
                        ow ? _("a live NVML-listed owner: the job is not finished") : why);
        host_proc_clear(&hp);
        return refuse;
}

/* The plan, as the other modes have one: the cgroup's members are the targets, those that
 * refuse it are the skipped (the GPUs as a default plan sees them). -1: out of memory. */
static int plan_make(struct rc_ctx *x, struct cg *c, struct reclaim_report *rep, bool *refuse)
{
        size_t np = c->np;
        c->acts = calloc(np ? np : 1, sizeof(*c->acts));
        if (!c->acts || reclaim_plan_build(x->res, &x->po, &c->plan) < 0)
                return -1;
        reclaim_plan_clear(c->plan);
        c->plan->targets = calloc(np ? np : 1, sizeof(*c->plan->targets));
        c->plan->skipped = calloc(np ? np : 1, sizeof(*c->plan->skipped));
        if (!c->plan->targets || !c->plan->skipped)
                return -1;
        bool blind_ = blind(x->res, c->ci.path, rep);
        *refuse = false;
        for (size_t i = 0; i < np; i++)
                *refuse |= member_add(x, c, i, rep);
        *refuse |= blind_;
        c->rec = rc_watch_list(x->res, x->o->only_gpu, c->pids, np, &c->n_rec);
        if (!c->rec)
                return -1;
        for (size_t i = 0; i < c->n_rec && i < c->plan->n_gpus; i++)
                c->plan->gpus[i].expected_bytes = c->rec[i].expected;
        rep->plan = c->plan;
        rep->rec = c->rec;
        rep->n_rec = c->n_rec;
        return 0;
}

/* After cgroup.kill: each member's result (killed, stuck in D, survived), to syslog and out. */
static void results(struct rc_ctx *x, struct cg *c)
{
        for (size_t i = 0; i < c->np; i++) {
                struct reclaim_action *a = &c->acts[i];
                pid_t pid = c->pids[i];
                a->pid = pid;
                a->gpu = -1;
                a->signals[a->n_signals++] = SIGKILL;
                uint64_t st;
                char state = '?';
                bool there = x->sys.read_stat(x->sys.ctx, pid, &st, &state) == 0 && state != 'Z' && state != 'X';
                /* still listed by the cgroup? (the PID may be someone else's by now) */
                pid_t *now = NULL;
                size_t nn = 0;
                bool member = false;
                if (there && reclaim_cgroup_pids(c->ci.dir, &now, &nn) == 0)
                        for (size_t k = 0; k < nn; k++)
                                member |= now[k] == pid;
                free(now);
                a->result = !member ? RECLAIM_RES_KILLED : state == 'D' ? RECLAIM_RES_STUCK_IN_D : RECLAIM_RES_SURVIVED;
                a->state = state;
                a->seconds = c->ci.res.seconds;
                if (a->result == RECLAIM_RES_SURVIVED && c->ci.res.stopped) {
                        a->result = RECLAIM_RES_LEFT;
                        reclaim_action_detailf(a, N_("still running when reclaim was stopped"));
                }
                rc_event(&c->sm, a, RECLAIM_EV_RESULT); /* syslog too */
        }
}

/* cgroup.kill, the memory measured, the summary. -1: out of memory (nothing said). */
static int kill_all(struct rc_ctx *x, struct cg *c, struct reclaim_report *rep)
{
        const struct reclaim_run_opts *o = x->o;
        const char *path = c->ci.path;
        for (size_t i = 0; i < c->n_rec; i++)
                c->rec[i].before_known = false;
        if (sampler_init(&c->sm, x, c->rec, c->n_rec) < 0)
                return -1;
        syslog(LOG_NOTICE, "reclaim: uid %u ends cgroup %s (%zu processes)", (unsigned)geteuid(), path, c->np);
        if (reclaim_run_pause)
                reclaim_run_pause(NULL, "open");
        if (stopsig_pending()) {
                rc_stopped_before_acting(rep);
                return 0;
        }
        rc_out_plan(x, rep);
        int r = reclaim_cgroup_kill(c->ci.dir, path, &x->sys, (unsigned)o->wait_ms, sampler_tick, &c->sm, stopsig_pending,
                                    &c->ci.res);
        if (r < 0) {
                rc_summary(rep, EXIT_INCOMPLETE, _("Cannot act on %s: %s"), path, strerror(-r));
                return 0;
        }
        c->ci.acted = true;
        sampler_finish(&c->sm, o->wait_ms);
        results(x, c);
        rep->actions = c->acts;
        rep->n_actions = c->np;
        bool back = recovery_all_done(c->rec, c->n_rec);
        size_t left = c->ci.res.remaining;
        if (stopsig_pending())
                rc_stopped_acting(rep, c->acts, c->np, sampler_elapsed(&c->sm));
        else if (left == 0 && back)
                rc_summary(rep, EXIT_OK, _("Memory recovered: cgroup %s is empty."), path);
        else
                rc_summary(rep, EXIT_FINDING, P_("Partial: %zu process left in %s%s.", "Partial: %zu processes left in %s%s.", left),
                           left, path, back ? "" : _("; memory not fully back"));
        return 0;
}

/* -1: out of memory; 0: the report is to go out. */
static int cgroup_steps(struct rc_ctx *x, struct cg *c, struct reclaim_report *rep)
{
        if (!resolve(x, c, rep))
                return 0;
        bool refuse;
        if (plan_make(x, c, rep, &refuse) < 0)
                return -1;
        const char *path = c->ci.path;
        if (refuse) {
                rc_summary(rep, EXIT_INCOMPLETE, _("Refused: nothing in %s was signalled. End the live job's owner first, or let "
                                                   "the job finish."), path);
                return 0;
        }
        if (c->np == 0) {
                rc_summary(rep, EXIT_OK, _("Nothing to reclaim: %s holds no process."), path);
                return 0;
        }
        if (!x->acting) {
                for (size_t i = 0; i < c->np && i < 10; i++)
                        rc_note(rep, _("would end PID %d"), (int)c->pids[i]);
                rc_summary(rep, EXIT_OK, P_("Dry run: %zu process in %s would be ended (cgroup.kill). Run again with --yes.",
                                            "Dry run: %zu processes in %s would be ended (cgroup.kill). Run again with --yes.", c->np),
                           c->np, path);
                return 0;
        }
        return kill_all(x, c, rep);
}

int rc_mode_cgroup(struct rc_ctx *x, struct reclaim_report *rep)
{
        struct cg *c = calloc(1, sizeof(*c));
        if (!c)
                return EXIT_INCOMPLETE;
        rep->cgroup = &c->ci;
        int status = EXIT_INCOMPLETE;
        if (cgroup_steps(x, c, rep) == 0) {
                rc_out_report(x, rep);
                status = rep->exit_status;
        }
        rep->cgroup = NULL;
        rep->rec = NULL;
        rep->actions = NULL;
        rep->plan = NULL;
        reclaim_plan_free(c->plan);
        sampler_done(&c->sm);
        free(c->pids);
        free(c->rec);
        reclaim_actions_free(c->acts, c->np);
        free(c);
        return status;
}
