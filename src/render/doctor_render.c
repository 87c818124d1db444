/* doctor_render: `ghostvram doctor`'s findings as text and JSON, and --explain's prevention
 * and table of driver releases. */
#include <stdio.h>
#include <string.h>

#include "render/doctor_render.h"
#include "util/i18n.h"
#include "util/json_util.h"
#include "util/strf.h"

static json_t *finding_json(const struct doctor_finding *d)
{
        json_t *o = json_object();
        if (!o)
                return NULL;
        json_object_set_new(o, "code", json_string(d->code));
        json_object_set_new(o, "level", json_string(doctor_level_name(d->level)));
        json_object_set_new(o, "gpu_index", d->gpu >= 0 ? json_integer(d->gpu) : json_null());
        json_object_set_new(o, "summary", json_string(str_or_empty(d->summary)));
        json_object_set_new(o, "evidence", json_string(str_or_empty(d->evidence)));
        json_object_set_new(o, "next_step", !str_empty(d->next_step) ? json_string(d->next_step) : json_null());
        if (!str_empty(d->source))
                json_object_set_new(o, "source", json_string(d->source));
        return o;
}

static json_t *known_issues_json(void)
{
        size_t n;
        const struct doctor_known_issue *t = doctor_known_issues(&n);
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++) {
                char from[48], before[48];
                (void)doctor_version_format(t[i].from, from, sizeof(from));
                (void)doctor_version_format(t[i].before, before, sizeof(before));
                json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:s, s:s, s:s}", "from", from, "before", before,
                                                   "open_module_only", t[i].open_module_only, "problem", t[i].problem,
                                                   "advice", t[i].advice, "source", t[i].source));
        }
        return a;
}

void doctor_explain_text(FILE *out)
{
        fprintf(out, "%s", _("\nPreventing ghost memory\n"));
        for (size_t i = 0; doctor_prevention[i]; i++)
                fprintf(out, "\n  - %s\n", _(doctor_prevention[i]));
        size_t n;
        const struct doctor_known_issue *t = doctor_known_issues(&n);
        fprintf(out, "%s", _("\nDriver releases with documented memory problems (driver-known-issue)\n"));
        for (size_t i = 0; i < n; i++) {
                char from[48], before[48];
                (void)doctor_version_format(t[i].from, from, sizeof(from));
                (void)doctor_version_format(t[i].before, before, sizeof(before));
                if (t[i].open_module_only)
                        fprintf(out, _("\n  %s up to before %s (open kernel module): %s\n    next: %s\n    source: %s\n"),
                                from, before, _(t[i].problem), _(t[i].advice), t[i].source);
                else
                        fprintf(out, _("\n  %s up to before %s: %s\n    next: %s\n    source: %s\n"), from, before,
                                _(t[i].problem), _(t[i].advice), t[i].source);
        }
}

void doctor_text(FILE *out, const struct doctor_finding *v, size_t n, bool color, bool verbose)
{
        static const char *const col[] = { "\033[32m", "\033[36m", "\033[33m", "\033[35m" };
        for (size_t i = 0; i < n; i++) {
                const struct doctor_finding *d = &v[i];
                char where[16];
                if (d->gpu >= 0)
                        snprintf(where, sizeof(where), "GPU %d", d->gpu);
                else
                        snprintf(where, sizeof(where), "host");
                fprintf(out, "%s%-7s%s %-6s %-22s %s\n", color ? col[d->level] : "", doctor_level_name(d->level),
                        color ? "\033[0m" : "", where, d->code, str_or_empty(d->summary));
                if (d->level == DOCTOR_OK && !verbose)
                        continue;
                if (!str_empty(d->evidence))
                        fprintf(out, _("                 evidence: %s\n"), d->evidence);
                if (!str_empty(d->next_step))
                        fprintf(out, _("                 next:     %s\n"), d->next_step);
                if (!str_empty(d->source))
                        fprintf(out, _("                 source:   %s\n"), d->source);
        }
}

/* The JSON document of the findings (and, with --explain, the prevention and known issues). */
json_t *doctor_json(const struct doctor_check *d, bool simulated, bool explain)
{
        const struct doctor_finding *v = d->findings;
        size_t n = d->n_findings;
        json_t *doc = json_object();
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < n; i++)
                json_array_append_new(arr, finding_json(&v[i]));
        if (!doc) {
                json_decref(arr);
                return NULL;
        }
        json_object_set_new(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_object_set_new(doc, "command", json_string("doctor"));
        json_object_set_new(doc, "simulated", json_boolean(simulated));
        json_object_set_new(doc, "driver_version",
                            d->gpus->driver_version[0] ? json_string(d->gpus->driver_version) : json_null());
        json_object_set_new(doc, "exit_status", json_integer(d->exit_status));
        json_object_set_new(doc, "findings", arr ? arr : json_array());
        if (explain) {
                json_t *p = json_array();
                for (size_t i = 0; p && doctor_prevention[i]; i++)
                        json_array_append_new(p, json_string(doctor_prevention[i]));
                json_object_set_new(doc, "prevention", p ? p : json_array());
                json_object_set_new(doc, "known_issues", known_issues_json());
        }
        return doc;
}


void doctor_show(const struct show *s, const struct doctor_check *d, bool simulated, bool explain)
{
        if (s->json) {
                s->print_json(doctor_json(d, simulated, explain));
                return;
        }
        show_banner(s);
        doctor_text(stdout, d->findings, d->n_findings, s->color, s->verbose);
        if (explain)
                doctor_explain_text(stdout);
}
