/* experiment_render: `ghostvram experiment`'s table and JSON document (docs/json.md). */
#include "render/experiment_render.h"

#include <stdio.h>
#include <string.h>

#include "render/reclaim_render.h"
#include "render/show.h"
#include "util/json_util.h"
#include "util/stopsig.h"

#define MIB (1024ull * 1024ull)

static json_t *phase_json(const struct phase *ph)
{
        if (!ph->measured)
                return json_null();
        json_t *o = json_object();
        json_set(o, "residual_bytes", json_integer((json_int_t)ph->residual));
        json_set(o, "recovered", json_boolean(ph->recovered));
        json_set(o, "recovery_seconds", ph->recovered ? json_real(ph->recovery_s) : json_null());
        json_set(o, "samples", json_incref(ph->samples));
        return o;
}

/* median, min and max of the runs, each times scale (MiB to bytes, or 1) */
static json_t *stats_json(const struct exp_stats *s, double scale)
{
        if (!s->n)
                return json_null();
        json_t *o = json_object();
        json_set(o, "median", json_real(s->median * scale));
        json_set(o, "min", json_real(s->min * scale));
        json_set(o, "max", json_real(s->max * scale));
        json_set(o, "n", json_integer((json_int_t)s->n));
        return o;
}

json_t *experiment_json(const struct exp_opts *o, const struct exp_run *runs, size_t n)
{
        json_t *doc = json_object();
        json_set(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_set(doc, "command", json_string("experiment"));
        json_set(doc, "simulated", json_boolean(o->simulated));
        json_set(doc, "gpu_index", json_integer(o->gpu));
        json_set(doc, "allocation_bytes", json_integer((json_int_t)(o->mib * MIB)));
        json_set(doc, "worker_count", json_integer(o->workers));
        const char *sn = reclaim_signal_name(o->signal);
        json_set(doc, "signal", sn ? json_string(sn) : json_null());
        json_set(doc, "reclaim", json_boolean(o->reclaim));
        json_set(doc, "repeat", json_integer(o->repeat));
        json_set(doc, "wait_seconds", json_real((double)o->wait_ms / 1000.0));
        json_t *ra = json_array();
        for (size_t i = 0; i < n; i++) {
                const struct exp_run *r = &runs[i];
                json_t *j = json_object();
                json_set(j, "run", json_integer((json_int_t)i + 1));
                json_set(j, "stopped", json_boolean(r->stopped));
                json_set(j, "owner_pid", json_integer(r->owner));
                json_t *w = json_array();
                for (unsigned k = 0; k < r->n_workers; k++)
                        json_array_append_new(w, json_integer(r->workers[k]));
                json_set(j, "worker_pids", w);
                json_set(j, "baseline_bytes", json_integer((json_int_t)r->baseline));
                json_set(j, "allocated_bytes", json_integer((json_int_t)r->allocated));
                json_set(j, "after_kill", phase_json(&r->after_kill));
                json_t *kj = json_object();
                json_set(kj, "read", json_boolean(r->kernel_read));
                json_set(kj, "xid45_count", json_integer(r->kernel.xid45));
                json_set(kj, "error_count", json_integer(r->kernel.errors));
                json_set(kj, "events", r->kernel_events ? json_incref(r->kernel_events) : json_array());
                json_set(j, "kernel", kj);
                if (r->reclaimed) {
                        json_t *rj = phase_json(&r->after_reclaim);
                        json_set(rj, "reclaim_exit_status", json_integer(r->reclaim_status));
                        json_t *g = NULL, *gs = r->reclaim_doc ? json_object_get(r->reclaim_doc, "gpus") : NULL;
                        size_t gi;
                        json_t *gv;
                        json_array_foreach(gs, gi, gv)
                                if (json_integer_value(json_object_get(gv, "index")) == (json_int_t)o->gpu)
                                        g = gv;
                        json_t *rs = g ? json_object_get(g, "recovery_seconds") : NULL;
                        json_set(rj, "reclaim_recovery_seconds", rs ? json_incref(rs) : json_null());
                        json_t *acts = r->reclaim_doc ? json_object_get(r->reclaim_doc, "actions") : NULL;
                        json_set(rj, "reclaim_actions", acts ? json_incref(acts) : json_array());
                        json_set(j, "after_reclaim", rj);
                } else {
                        json_set(j, "after_reclaim", json_null());
                }
                json_array_append_new(ra, j);
        }
        json_set(doc, "runs", ra);
        json_t *sum = json_object();
        for (int phase = 0; phase < (o->reclaim ? 2 : 1); phase++) {
                struct exp_summary s;
                exp_summarise(runs, n, phase == 1, &s);
                json_t *p = json_object();
                json_set(p, "residual_bytes_stats", stats_json(&s.residual_mib, (double)MIB));
                json_set(p, "recovery_seconds_stats", stats_json(&s.recovery_s, 1.0));
                json_set(p, "recovered_runs", json_integer((json_int_t)s.recovered));
                json_set(p, "run_count", json_integer((json_int_t)s.runs));
                if (phase == 0) {
                        json_set(p, "xid45_count", json_integer(s.xid45));
                        json_set(p, "kernel_error_count", json_integer(s.errors));
                }
                json_set(sum, phase ? "after_reclaim" : "after_kill", p);
        }
        json_set(doc, "summary", sum);
        const char *stop = reclaim_signal_name(stopsig_pending());
        json_set(doc, "stopped_by", stopsig_pending() && stop ? json_string(stop) : json_null());
        return doc;
}

/* "median [min–max]" (or the median alone) with `decimals` digits and a unit. */
static void stats_text(char *out, size_t n, const struct exp_stats *s, int decimals, const char *unit, bool spread)
{
        if (spread)
                snprintf(out, n, "%.*f [%.*f–%.*f]%s", decimals, s->median, decimals, s->min, decimals, s->max, unit);
        else
                snprintf(out, n, "%.*f%s", decimals, s->median, unit);
}

static void table_row(FILE *out, const struct exp_opts *o, const char *label, const struct exp_summary *s, bool spread,
                      const char *kernel)
{
        char res[128], rec[128];
        stats_text(res, sizeof(res), &s->residual_mib, 0, "", spread);
        if (s->recovered == s->runs && s->runs)
                stats_text(rec, sizeof(rec), &s->recovery_s, 3, " s", spread);
        else if (s->recovered)
                snprintf(rec, sizeof(rec), "%zu of %zu runs", s->recovered, s->runs);
        else
                snprintf(rec, sizeof(rec), "— (not within %.3g s)", (double)o->wait_ms / 1000.0);
        fprintf(out, "  %-26s %-22s %-28s %s\n", label, res, rec, kernel);
}

void experiment_table(FILE *out, const struct exp_opts *o, const struct exp_run *runs, size_t n)
{
        struct exp_summary k, r;
        exp_summarise(runs, n, false, &k);
        exp_summarise(runs, n, true, &r);
        const char *sn = reclaim_signal_name(o->signal);
        fprintf(out, "ghostvram experiment: GPU %u, a job of %llu MiB with %u worker%s, killed with SIG%s; %zu run%s%s\n\n",
               o->gpu, (unsigned long long)o->mib, o->workers, o->workers == 1 ? "" : "s", sn ? sn : "?", n,
               n == 1 ? "" : "s", n > 1 ? " (median [min–max])" : "");
        fprintf(out, "  %-26s %-22s %-28s %s\n", "", "residual MiB", "memory back after", "kernel");
        char kern[64], label[40];
        snprintf(label, sizeof(label), "after kill -%s", sn ? sn : "?");
        snprintf(kern, sizeof(kern), "Xid 45: %u, errors: %u", k.xid45, k.errors);
        table_row(out, o, label, &k, n > 1, kern);
        if (o->reclaim)
                table_row(out, o, "after ghostvram reclaim", &r, n > 1, "");
        bool any_kernel = false;
        for (size_t i = 0; i < n; i++)
                any_kernel |= runs[i].kernel_read;
        fprintf(out, "\n  residual: used memory above the baseline before the job; 'memory back after' counts from\n"
               "  the kill (the reclaim row: from reclaim's first signal, its own measurement).\n");
        if (!any_kernel)
                fprintf(out, "  kernel: the kernel log could not be read (not root?); no events counted.\n");
        else
                fprintf(out, "  kernel: Xid 45 is what killing a process with GPU work logs; errors are every other Xid\n"
                       "  or driver error logged during the run.\n");
}


void experiment_stop_text(FILE *out, const struct exp_opts *o, const struct exp_result *res, int sig)
{
        fprintf(out, "%sStopped by %s %s: %zu of %u run%s done; %s.\n", res->complete ? "\n" : "", stopsig_name(sig),
                res->done > res->complete ? "during a run (not counted)" : "between runs", res->complete, o->repeat,
                o->repeat == 1 ? "" : "s",
                res->left ? "some processes the experiment started did not end within 2 s of their SIGKILL "
                            "(in D state?)"
                          : "every process the experiment started was stopped");
}

void experiment_progress(void *ctx, unsigned run, unsigned of)
{
        (void)ctx;
        fprintf(stderr, "run %u/%u ...\n", run, of);
}

void experiment_show(const struct show *s, const struct exp_opts *o, const struct exp_result *res, int stop)
{
        if (s->json) {
                if (res->done || stop)
                        s->print_json(experiment_json(o, res->runs, res->done));
                return;
        }
        if (res->complete) {
                show_banner(s);
                experiment_table(stdout, o, res->runs, res->complete);
        }
        if (stop)
                experiment_stop_text(stdout, o, res, stop);
}
