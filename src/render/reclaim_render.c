#include "render/reclaim_render.h"
#include "util/i18n.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <strings.h>

#include "util/json_util.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/timefmt.h"

#define MIB (1024.0 * 1024.0)

/* ---- JSON ----------------------------------------------------------------------------------------- */

static json_t *strings(char *const *lines, size_t n)
{
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append_new(a, json_text(lines[i]));
        return a;
}

static json_t *plan_json(const struct reclaim_plan *p)
{
        json_t *o = json_object();
        json_t *ts = json_array(), *ss = json_array();
        for (size_t i = 0; p && i < p->n_targets; i++) {
                const struct reclaim_target *t = &p->targets[i];
                json_t *j = json_object();
                json_set(j, "pid", json_integer(t->pid));
                json_set(j, "comm", json_text(t->comm));
                json_set(j, "gpu_index", t->gpu >= 0 ? json_integer(t->gpu) : json_null());
                json_set(j, "link", t->link != LINK_NONE ? json_string(link_name(t->link)) : json_null());
                json_set(j, "to_pid", t->to_pid ? json_integer(t->to_pid) : json_null());
                json_set(j, "explicit", json_boolean(t->explicit_pid));
                json_set(j, "state", json_stringn(&t->state, t->state ? 1 : 0));
                json_set(j, "uid", json_integer(t->uid));
                json_set(j, "start_ticks", json_integer((json_int_t)t->start_ticks));
                json_set(j, "why", json_text(t->why));
                json_set(j, "warning", !str_empty(t->warning) ? json_text(t->warning) : json_null());
                json_set(j, "family", t->family ? json_integer(t->family) : json_null());
                json_t *rest = json_array();
                for (unsigned k = 0; k < t->n_family_rest && k < 8; k++)
                        json_array_append_new(rest, json_integer(t->family_rest[k]));
                json_set(j, "family_rest_pids", rest);
                json_array_append_new(ts, j);
        }
        for (size_t i = 0; p && i < p->n_skipped; i++) {
                const struct reclaim_skip *s = &p->skipped[i];
                json_t *j = json_object();
                json_set(j, "pid", json_integer(s->pid));
                json_set(j, "comm", json_text(s->comm));
                json_set(j, "gpu_index", s->gpu >= 0 ? json_integer(s->gpu) : json_null());
                json_set(j, "rule", json_string(reclaim_rule_name(s->rule)));
                json_set(j, "reason", json_text(s->reason));
                json_array_append_new(ss, j);
        }
        json_set(o, "targets", ts);
        json_set(o, "skipped", ss);
        return o;
}

static const struct recovery_gpu *rec_of(const struct reclaim_report *r, unsigned index)
{
        for (size_t i = 0; r->rec && i < r->n_rec; i++)
                if (r->rec[i].index == index)
                        return &r->rec[i];
        return NULL;
}

static json_t *gpus_json(const struct reclaim_report *r)
{
        json_t *a = json_array();
        const struct reclaim_plan *p = r->plan;
        size_t n = p ? p->n_gpus : r->n_rec;
        for (size_t i = 0; i < n; i++) {
                unsigned index = p ? p->gpus[i].index : r->rec[i].index;
                const struct recovery_gpu *g = rec_of(r, index);
                json_t *j = json_object();
                json_set(j, "index", json_integer(index));
                if (p) {
                        json_set(j, "uuid", p->gpus[i].uuid[0] ? json_text(p->gpus[i].uuid) : json_null());
                        json_set(j, "pci_bus_id", p->gpus[i].pci_bus_id[0] ? json_text(p->gpus[i].pci_bus_id) : json_null());
                        json_set(j, "ghost_bytes", json_integer((json_int_t)p->gpus[i].ghost));
                        json_set(j, "ghost_confirmed", json_boolean(p->gpus[i].ghost_confirmed));
                }
                /* the dry run says what acting would expect back */
                json_set(j, "expected_bytes", g ? json_integer((json_int_t)g->expected)
                                              : p && p->gpus[i].n_targets && p->gpus[i].ghost_confirmed
                                                      ? json_integer((json_int_t)p->gpus[i].expected_bytes)
                                                      : json_null());
                if (g && g->before_known)
                        json_set(j, "before_bytes", json_integer((json_int_t)g->before));
                else if (p && p->gpus[i].inspected)
                        json_set(j, "before_bytes", json_integer((json_int_t)p->gpus[i].used));
                else
                        json_set(j, "before_bytes", json_null());
                json_set(j, "after_bytes", g && g->after_known ? json_integer((json_int_t)g->after) : json_null());
                json_set(j, "freed_bytes", g && g->after_known && g->before_known
                                                   ? json_integer((json_int_t)(g->before > g->after ? g->before - g->after : 0))
                                                   : json_null());
                /* a dry run recovers nothing: null, as for every figure it did not measure */
                json_set(j, "recovered", g && !r->dry_run ? json_boolean(g->expected > 0 ? g->recovered : true) : json_null());
                json_set(j, "recovery_seconds", g && g->recovered ? json_real(g->recovery_s) : json_null());
                json_array_append_new(a, j);
        }
        return a;
}

static json_t *action_json(const struct reclaim_action *x)
{
        json_t *j = json_object();
        json_set(j, "pid", json_integer(x->pid));
        json_set(j, "comm", json_text(x->comm));
        json_set(j, "gpu_index", x->gpu >= 0 ? json_integer(x->gpu) : json_null());
        const char *last = x->n_signals ? reclaim_signal_name(x->signals[x->n_signals - 1]) : NULL;
        json_set(j, "signal", last ? json_string(last) : json_null());
        json_t *sigs = json_array();
        for (unsigned k = 0; k < x->n_signals; k++) {
                const char *nm = reclaim_signal_name(x->signals[k]);
                json_array_append_new(sigs, nm ? json_string(nm) : json_integer(x->signals[k]));
        }
        json_set(j, "signals", sigs);
        json_set(j, "result", json_string(reclaim_result_name(x->result)));
        json_set(j, "seconds", json_real(x->seconds));
        json_set(j, "detail", !str_empty(x->detail) ? json_text(x->detail) : json_null());
        return j;
}

static json_t *actions_json(const struct reclaim_report *r)
{
        json_t *a = json_array();
        for (size_t i = 0; i < r->n_actions; i++)
                json_array_append_new(a, action_json(&r->actions[i]));
        return a;
}

/* What the report and the stream's plan line share: the mode, the options, the plan, the GPUs. */
static void head_json(json_t *o, const struct reclaim_report *r)
{
        json_set(o, "mode", json_string(r->mode));
        json_set(o, "dry_run", json_boolean(r->dry_run));
        json_set(o, "simulated", json_boolean(r->simulated));
        const char *sn = reclaim_signal_name(r->signal);
        json_set(o, "signal", sn ? json_string(sn) : json_null());
        json_set(o, "grace_seconds", r->grace_ms == RECLAIM_GRACE_NONE ? json_null() : json_real(r->grace_ms / 1000.0));
        json_set(o, "wait_seconds", json_real(r->timeout_ms / 1000.0));
        json_set(o, "plan", r->plan ? plan_json(r->plan) : json_null());
        json_set(o, "gpus", gpus_json(r));
}

static json_t *poke_json(const struct reclaim_poke_info *p)
{
        json_t *j = json_object();
        const struct poke_result *x = &p->res;
        json_set(j, "index", json_integer(p->index));
        json_set(j, "uuid", json_text(p->uuid));
        json_set(j, "pci_bus_id", p->pci_bus_id[0] ? json_string(p->pci_bus_id) : json_null());
        json_set(j, "library", p->lib ? json_text(p->lib) : json_null());
        json_set(j, "alloc_bytes", json_integer((json_int_t)p->bytes));
        json_set(j, "timeout_seconds", json_real(p->timeout_ms / 1000.0));
        json_set(j, "ran", json_boolean(p->ran));
        json_set_time(j, "start_time", x->started, p->ran);
        json_set(j, "seconds", p->ran ? json_real(x->seconds) : json_null());
        json_set(j, "timed_out", p->ran ? json_boolean(x->timed_out) : json_null());
        json_set(j, "stuck_pid", x->stuck_pid ? json_integer(x->stuck_pid) : json_null());
        json_set(j, "exit_status", p->ran && !x->timed_out ? json_integer(x->exit_status) : json_null());
        json_t *done = json_array();
        for (unsigned i = 0; x->steps_known && i < x->steps.done; i++)
                json_array_append_new(done, json_string(poke_step_name((int)i)));
        json_set(j, "steps_done", done);
        bool failed = x->steps_known && x->steps.failed >= 0;
        json_set(j, "failed_step", failed ? json_string(poke_step_name(x->steps.failed)) : json_null());
        json_set(j, "cuda_result", failed && x->steps.failed != POKE_STEP_LOAD ? json_integer(x->steps.cu_result) : json_null());
        json_set(j, "error", failed ? json_text(x->steps.error) : json_null());
        json_set(j, "verdict", p->ran ? json_string(poke_verdict_name(p->verdict)) : json_null());
        json_set(j, "freed_bytes", p->ran && p->verdict != POKE_UNMEASURED ? json_integer((json_int_t)p->freed) : json_null());
        return j;
}

json_t *reclaim_json(const struct reclaim_report *r)
{
        json_t *o = json_object();
        json_set(o, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_set(o, "command", json_string("reclaim"));
        head_json(o, r);
        json_set(o, "actions", actions_json(r));
        if (r->cgroup) {
                json_t *c = json_object();
                json_set(c, "path", json_text(r->cgroup->path));
                json_set(c, "directory", json_text(r->cgroup->dir));
                json_set(c, "process_count", json_integer((json_int_t)r->cgroup->n_pids));
                json_set(c, "method", r->cgroup->acted ? json_string(r->cgroup->res.used_kill_file ? "cgroup.kill" : "pidfd")
                                                       : json_null());
                json_set(c, "rounds", json_integer(r->cgroup->res.rounds));
                json_set(c, "remaining", r->cgroup->acted ? json_integer((json_int_t)r->cgroup->res.remaining) : json_null());
                json_set(c, "seconds", r->cgroup->acted ? json_real(r->cgroup->res.seconds) : json_null());
                json_set(o, "cgroup", c);
        } else {
                json_set(o, "cgroup", json_null());
        }
        if (r->esc) {
                json_t *e = json_object();
                json_set(e, "kind", json_string(r->mode));
                json_set(e, "refused", json_boolean(r->esc->refuse));
                json_set(e, "reasons", strings(r->esc->reasons, r->esc->n_reasons));
                json_set(e, "fixes", strings(r->esc->fixes, r->esc->n_fixes));
                json_set(e, "warnings", strings(r->esc->warnings, r->esc->n_warnings));
                json_set(e, "command", json_text(str_or_empty(r->esc->command)));
                json_set(e, "ran", json_boolean(r->esc_ran));
                json_set(e, "exit_status", r->esc_ran ? json_integer(r->esc_status) : json_null());
                json_set(e, "output", r->esc_output ? json_text(r->esc_output) : json_null());
                json_set(o, "escalation", e);
        } else {
                json_set(o, "escalation", json_null());
        }
        json_set(o, "poke", r->poke ? poke_json(r->poke) : json_null());
        json_t *notes = json_array();
        for (size_t i = 0; i < r->n_notes; i++)
                json_array_append_new(notes, json_text(r->notes[i]));
        json_set(o, "notes", notes);
        json_set(o, "stopped_by", r->stopped ? json_string(reclaim_signal_name(r->stopped)) : json_null());
        json_set(o, "stopped_after_seconds", r->stopped ? json_real(r->stopped_after_s) : json_null());
        json_set(o, "summary", json_text(str_or_empty(r->summary)));
        json_set(o, "exit_status", json_integer(r->exit_status));
        return o;
}

/* ---- text ----------------------------------------------------------------------------------------- */

static void put_esc(FILE *out, const char *s)
{
        struct buf b = BUF_INIT(4096);
        if (s && esc_terminal(&b, s, strlen(s)) == 0)
                fputs(buf_str(&b), out);
        buf_free(&b);
}

static double mib(uint64_t b)
{
        return (double)b / MIB;
}

/* The lines under a target: its warning, and the members of its family that --pid left out. */
static void target_notes(FILE *out, const struct reclaim_target *t)
{
        if (!str_empty(t->warning)) {
                fprintf(out, _("      warning: "));
                put_esc(out, t->warning);
                fputc('\n', out);
        }
        if (t->n_family_rest) {
                fprintf(out, _("      keeps the memory with it: PID"));
                for (unsigned k = 0; k < t->n_family_rest && k < 8; k++)
                        fprintf(out, "%s %d", k ? "," : "", (int)t->family_rest[k]);
                fprintf(out, _("%s share its open file description and are not named: ending it alone frees nothing\n"),
                        t->n_family_rest > 8 ? _(" and more") : "");
        }
}

static bool gpu_listed(const struct reclaim_plan *p, int gpu)
{
        for (size_t g = 0; gpu >= 0 && g < p->n_gpus; g++)
                if (p->gpus[g].index == (unsigned)gpu)
                        return true;
        return false;
}

static void text_plan(FILE *out, const struct reclaim_report *r, bool verbose)
{
        const struct reclaim_plan *p = r->plan;
        for (size_t g = 0; g < p->n_gpus; g++) {
                const struct reclaim_gpu *pg = &p->gpus[g];
                if (!pg->n_targets && !pg->ghost_confirmed && !verbose)
                        continue;
                fprintf(out, _("  GPU %u  %s  used %.0f MiB, ghost %.0f MiB%s\n"), pg->index, pg->pci_bus_id, mib(pg->used),
                        mib(pg->ghost), pg->ghost_confirmed ? _(" (confirmed)") : "");
                for (size_t i = 0; i < p->n_targets; i++) {
                        const struct reclaim_target *t = &p->targets[i];
                        if (t->gpu != (int)pg->index)
                                continue;
                        fprintf(out, "    PID %-7d ", (int)t->pid);
                        put_esc(out, t->comm);
                        fprintf(out, _(" (state %c): "), t->state ? t->state : '?');
                        put_esc(out, t->why);
                        fputc('\n', out);
                        target_notes(out, t);
                }
        }
        bool header = false;
        for (size_t i = 0; i < p->n_targets; i++) {
                const struct reclaim_target *t = &p->targets[i];
                if (gpu_listed(p, t->gpu))
                        continue;
                if (t->gpu >= 0) {
                        /* tied to a GPU that --gpu does not select: said under its own GPU */
                        fprintf(out, _("  named by --pid, tied to GPU %d (not the one --gpu selects):\n"), t->gpu);
                } else if (!header) {
                        fprintf(out, _("  named by --pid, tied to no GPU:\n"));
                        header = true;
                }
                fprintf(out, _("    PID %-7d state %c  comm "), (int)t->pid, t->state ? t->state : '?');
                put_esc(out, t->comm);
                fputc('\n', out);
                target_notes(out, t);
        }
        bool heading = false;
        for (size_t i = 0; i < p->n_skipped; i++) {
                const struct reclaim_skip *s = &p->skipped[i];
                if (!verbose && s->rule == RECLAIM_NOT_ATTRIBUTED)
                        continue;
                if (!heading)
                        fprintf(out, _("  left alone:\n")); /* only above a line it heads */
                heading = true;
                fprintf(out, "    PID %-7d %-18s ", (int)s->pid, reclaim_rule_name(s->rule));
                put_esc(out, s->comm);
                fprintf(out, ": ");
                put_esc(out, s->reason);
                fputc('\n', out);
        }
}

/* What the poke's child did, in one line. */
static void text_poke(FILE *out, const struct reclaim_poke_info *p)
{
        const struct poke_result *x = &p->res;
        fprintf(out, _("poke of GPU %u (%s%s%s) with %s:\n"), p->index, p->uuid, p->pci_bus_id[0] ? ", " : "",
                p->pci_bus_id, p->lib ? p->lib : "?");
        if (!p->ran)
                return;
        if (x->timed_out) {
                fprintf(out, _("  hung: killed at the deadline after %.3g s%s\n"), x->seconds,
                        x->stuck_pid ? _(" (and still there: stuck in the driver)") : "");
                return;
        }
        if (!x->steps_known) {
                fprintf(out, _("  the child said nothing (exit status %d)\n"), x->exit_status);
                return;
        }
        fprintf(out, "  ");
        for (unsigned i = 0; i < x->steps.done; i++)
                fprintf(out, "%s%s ok", i ? ", " : "", poke_step_name((int)i));
        if (x->steps.failed >= 0) {
                fprintf(out, _("%sfailed at %s: "), x->steps.done ? "; " : "", poke_step_name(x->steps.failed));
                put_esc(out, x->steps.error);
        }
        fprintf(out, _("  (%.3f s; %.0f MiB allocated)\n"), x->seconds, mib(p->bytes));
}

/* The plan (unless it was streamed) or the cgroup, with what was done to the cgroup. */
static void text_plan_head(FILE *out, const struct reclaim_report *r, bool verbose)
{
        if (r->plan && !r->cgroup && !r->plan_shown) {
                fprintf(out, "%s\n", r->dry_run ? _("Plan (dry run: nothing is signalled without --yes):") : _("Plan:"));
                if (!r->plan->n_targets)
                        fprintf(out, _("  no process to signal\n"));
                text_plan(out, r, verbose);
        }
        if (r->cgroup && !r->plan_shown)        /* streamed, the header is said already */
                fprintf(out, P_("cgroup %s (%s): %zu process\n", "cgroup %s (%s): %zu processes\n", r->cgroup->n_pids),
                        r->cgroup->path, r->cgroup->dir, r->cgroup->n_pids);
        if (r->cgroup) {                        /* known only after acting: said here */
                if (r->cgroup->acted)
                        fprintf(out, _("  ended with %s%s; %zu left after %.2f s\n"),
                                r->cgroup->res.used_kill_file ? "cgroup.kill" : _("SIGKILL through pidfds"),
                                r->cgroup->res.used_kill_file ? "" : _(" (cgroup.kill is not available)"), r->cgroup->res.remaining,
                                r->cgroup->res.seconds);
        }
}

/* Lines of text, each after mark. */
static void text_marked(FILE *out, const char *mark, char *const *lines, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                fputs(mark, out);
                put_esc(out, lines[i]);
                fputc('\n', out);
        }
}

/* An escalation's checks (refused, done or passed), its command and what it said. */
static void text_escalation(FILE *out, const struct reclaim_report *r)
{
        bool items = r->esc->n_reasons || r->esc->n_fixes || r->esc->n_warnings || !str_empty(r->esc->command) ||
                     r->esc_ran;
        fprintf(out, items ? _("%s %s:\n") : _("%s %s.\n"), r->mode,
                r->esc->refuse ? _("refused") : r->esc_ran ? _("done") : _("checks passed"));
        text_marked(out, "  ✗ ", r->esc->reasons, r->esc->n_reasons);
        text_marked(out, "  → ", r->esc->fixes, r->esc->n_fixes);
        text_marked(out, "  ! ", r->esc->warnings, r->esc->n_warnings);
        if (!str_empty(r->esc->command))
                fprintf(out, _("  command: %s%s\n"), r->esc->command, r->esc_ran ? "" : _(" (not run)"));
        if (r->esc_ran) {
                fprintf(out, _("  exit status %d\n"), r->esc_status);
                if (r->esc_output && *r->esc_output) {
                        fprintf(out, _("  output: "));
                        put_esc(out, r->esc_output);
                        fputc('\n', out);
                }
        }
}

/* One action: the PID, its result, when, the signals sent and its command. */
static void text_action(FILE *out, const struct reclaim_action *a)
{
        char sigs[32] = "";
        size_t l = 0;
        for (unsigned k = 0; k < a->n_signals; k++) {
                const char *nm = reclaim_signal_name(a->signals[k]);
                int w = snprintf(sigs + l, sizeof(sigs) - l, "%s%s", k ? "," : "", nm ? nm : "?");
                if (w > 0 && (size_t)w < sizeof(sigs) - l)
                        l += (size_t)w;
        }
        fprintf(out, _("  PID %-7d %-18s after %7.3f s  signals %-9s "), (int)a->pid,
                reclaim_result_name(a->result), a->seconds, a->n_signals ? sigs : _("none"));
        put_esc(out, a->comm);
        if (!str_empty(a->detail)) {
                fprintf(out, "  (");
                put_esc(out, a->detail);
                fprintf(out, ")");
        }
        fputc('\n', out);
}

static void text_actions(FILE *out, const struct reclaim_report *r)
{
        const char *sn = reclaim_signal_name(r->signal);
        if (r->grace_ms == RECLAIM_GRACE_NONE)
                fprintf(out, _("\nActions (signals through pidfds; SIG%s, no SIGKILL):\n"), sn ? sn : "?");
        else
                fprintf(out, _("\nActions (signals through pidfds; SIG%s, then SIGKILL after %.3g s):\n"), sn ? sn : "?",
                        r->grace_ms / 1000.0);
        for (size_t i = 0; i < r->n_actions; i++)
                text_action(out, &r->actions[i]);
}

/* Each GPU's memory before and after, and whether it came back in time. */
static void text_memory(FILE *out, const struct reclaim_report *r, bool verbose)
{
        fprintf(out, _("\nMemory (NVML used, sampled every 50 ms):\n"));
        for (size_t i = 0; i < r->n_rec; i++) {
                const struct recovery_gpu *g = &r->rec[i];
                if (!g->after_known)
                        continue; /* a dry run: nothing measured */
                uint64_t freed = g->before > g->after ? g->before - g->after : 0;
                if (!g->expected && !freed && !verbose)
                        continue;
                fprintf(out, _("  GPU %u  %.0f MiB → %.0f MiB  freed %.0f MiB"), g->index, mib(g->before), mib(g->after),
                        mib(freed));
                if (g->expected && g->recovered)
                        fprintf(out, _("  back in %.3f s\n"), g->recovery_s);
                else if (g->expected && r->stopped)
                        fprintf(out, _("  not back yet when reclaim was stopped after %.3g s (expected %.0f MiB)\n"),
                                r->stopped_after_s, mib(g->expected));
                else if (g->expected)
                        fprintf(out, _("  NOT back within %.3g s (expected %.0f MiB)\n"), r->timeout_ms / 1000.0,
                                mib(g->expected));
                else
                        fputc('\n', out);
        }
}

void reclaim_text(FILE *out, const struct reclaim_report *r, bool verbose)
{
        text_plan_head(out, r, verbose);
        if (r->esc)
                text_escalation(out, r);
        if (r->poke)
                text_poke(out, r->poke);
        if (r->n_actions)
                text_actions(out, r);
        if (r->rec && r->n_rec)
                text_memory(out, r, verbose);
        for (size_t i = 0; i < r->n_notes; i++) {
                fprintf(out, "%s", i == 0 ? "\n" : "");
                put_esc(out, r->notes[i]);
                fputc('\n', out);
        }
        if (!str_empty(r->summary))
                fprintf(out, "\n%s\n", r->summary);
}

/* ---- as it happens ------------------------------------------------------------------------------ */

static json_t *event_json(const char *event)
{
        json_t *o = json_object();
        json_set(o, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_set(o, "command", json_string("reclaim"));
        json_set(o, "event", json_string(event));
        json_set_time(o, "time", wall_clock_now(), 1);
        return o;
}

void reclaim_stream_plan_text(FILE *out, const struct reclaim_report *r, bool verbose)
{
        const char *sn = reclaim_signal_name(r->signal);
        if (r->cgroup) {
                fprintf(out, P_("cgroup %s (%s): %zu process\n", "cgroup %s (%s): %zu processes\n", r->cgroup->n_pids),
                        r->cgroup->path, r->cgroup->dir, r->cgroup->n_pids);
                fprintf(out, _("\nActing (cgroup.kill, else SIGKILL through pidfds; memory sampled every 50 ms):\n"));
                return;
        }
        if (r->plan) {
                fprintf(out, "%s\n", _("Plan:"));
                text_plan(out, r, verbose);
                if (r->grace_ms == RECLAIM_GRACE_NONE)
                        fprintf(out, _("\nActing (SIG%s through pidfds, no SIGKILL; memory sampled every 50 ms, a line "
                                     "each second):\n"),
                                sn ? sn : "?");
                else
                        fprintf(out, _("\nActing (SIG%s through pidfds, SIGKILL after %.3g s; memory sampled every 50 ms, "
                                     "a line each second):\n"),
                                sn ? sn : "?", r->grace_ms / 1000.0);
        }
}

json_t *reclaim_stream_plan_json(const struct reclaim_report *r)
{
        json_t *o = event_json("plan");
        head_json(o, r);
        return o;
}

void reclaim_stream_action_text(FILE *out, const struct reclaim_action *a, enum reclaim_event ev, double t)
{
        fprintf(out, "  [%7.3f s] ", t);
        if (ev == RECLAIM_EV_SIGNAL) {
                const char *nm = reclaim_signal_name(a->signals[a->n_signals - 1]);
                fprintf(out, _("SIG%s to PID %d ("), nm ? nm : "?", (int)a->pid);
                put_esc(out, a->comm);
                fprintf(out, _(") through its pidfd\n"));
                return;
        }
        /* TRANSLATORS: "PID 31301 (" then the process's name, then "): terminated" (a result code) */
        fprintf(out, _("PID %d ("), (int)a->pid);
        put_esc(out, a->comm);
        fprintf(out, _("): %s"), reclaim_result_name(a->result));
        if (!str_empty(a->detail)) {
                fputs(_(" ("), out);
                put_esc(out, a->detail);
                fputs(_(")"), out);
        }
        fputc('\n', out);
}

json_t *reclaim_stream_action_json(const struct reclaim_action *a, enum reclaim_event ev, double t)
{
        json_t *o = event_json("action");
        json_set(o, "action", json_string(ev == RECLAIM_EV_SIGNAL ? "signal" : "result"));
        json_set(o, "elapsed_seconds", json_real(t));
        json_t *x = action_json(a);
        json_object_update(o, x);
        json_decref(x);
        return o;
}

void reclaim_stream_sample_text(FILE *out, const struct recovery_gpu *g, bool before, bool poke, double t)
{
        fprintf(out, _("  [%7.3f s] GPU %u: %.0f MiB used"), t, g->index, mib(before ? g->before : g->after));
        if (before)
                fputs(poke ? _(" before the poke") : _(" before the first signal"), out);
        else if (g->expected && g->recovered)
                fprintf(out, _(": back (%.0f MiB freed)"), mib(g->before > g->after ? g->before - g->after : 0));
        else if (g->expected)
                fprintf(out, _(" (%.0f MiB expected back)"), mib(g->expected));
        fputc('\n', out);
}

json_t *reclaim_stream_sample_json(const struct recovery_gpu *g, bool before, double t)
{
        json_t *o = event_json("sample");
        json_set(o, "gpu_index", json_integer(g->index));
        json_set(o, "before", json_boolean(before));
        json_set(o, "elapsed_seconds", json_real(t));
        json_set(o, "used_bytes", json_integer((json_int_t)(before ? g->before : g->after)));
        json_set(o, "expected_bytes", json_integer((json_int_t)g->expected));
        json_set(o, "recovered", before ? json_null() : json_boolean(g->expected > 0 ? g->recovered : true));
        return o;
}

json_t *reclaim_stream_result_json(const struct reclaim_report *r)
{
        json_t *o = event_json("result");
        json_t *doc = reclaim_json(r);
        json_object_del(doc, "schema_version");
        json_object_del(doc, "command");
        json_object_update(o, doc);
        json_decref(doc);
        return o;
}
