/* xid_render: `ghostvram xid`'s events, dumps and explanations as text and JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render/xid_render.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/i18n.h"
#include "util/json_util.h"
#include "util/strf.h"

/* ---- one event ------------------------------------------------------------------------------ */

static const char *sev_color(enum xid_severity s)
{
        switch (s) {
        case XID_SEV_CRITICAL: return "\033[1;31m";
        case XID_SEV_ERROR: return "\033[31m";
        case XID_SEV_WARNING: return "\033[33m";
        case XID_SEV_INFO: return "\033[2m";
        default: return "\033[35m";
        }
}

/* Hostile text (kernel messages carry process names) made safe for a terminal. */
static void put_escaped(FILE *f, const char *s)
{
        struct buf b = BUF_INIT(0);
        if (s && esc_terminal(&b, s, strlen(s)) == 0)
                fputs(buf_str(&b), f);
        buf_free(&b);
}

/* The length of the wide (CJK, full-width) character at p, two columns on a terminal; 0 when p
 * starts anything else. */
static size_t wide_char(const char *p)
{
        const unsigned char *u = (const unsigned char *)p;
        if ((u[0] & 0xF0) != 0xE0 || (u[1] & 0xC0) != 0x80 || (u[2] & 0xC0) != 0x80)
                return 0;
        unsigned cp = (u[0] & 0x0Fu) << 12 | (u[1] & 0x3Fu) << 6 | (u[2] & 0x3Fu);
        bool wide = (cp >= 0x2E80 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
                    (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) ||
                    (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0xFFE0 && cp <= 0xFFE6);
        return wide ? 3 : 0;
}

/* Whether p starts a full-width mark that closes a phrase (，。；：、）！？」』): Chinese text
 * never starts a line with one, so it stays on the line of the character before it. */
static bool closing_mark(const char *p)
{
        static const char *const marks[] = { "，", "。", "；", "：", "、", "）", "！", "？", "」", "』" };
        for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
                if (strncmp(p, marks[i], strlen(marks[i])) == 0)
                        return true;
        return false;
}

/* The columns of s as put_wrapped counts them: a wide character two, any other byte one (as
 * English text was always counted, so its lines break where they did). */
static int text_cols(const char *s, size_t n)
{
        int cols = 0;
        for (size_t i = 0; i < n;) {
                size_t w = wide_char(s + i);
                cols += w ? 2 : 1;
                i += w ? w : 1;
        }
        return cols;
}

/* The next piece that may not be split: one wide character (Chinese has no spaces between
 * words: a line may break between any two of its characters), or a run of anything else up
 * to a space or a wide character (a word, a command). */
static size_t wrap_piece(const char *p)
{
        size_t n = wide_char(p);
        if (n)
                return n;
        while (p[n] && p[n] != ' ' && !wide_char(p + n))
                n++;
        return n;
}

/* Print text wrapped at width columns, every line after the first indented by indent. */
static void put_wrapped(FILE *f, const char *label, const char *text, int indent, int width)
{
        int col = text_cols(label, strlen(label));
        fputs(label, f);
        for (; col < indent; col++)
                fputc(' ', f);
        const char *p = text ? text : "";
        bool space = true;      /* a space separates this piece from the one before (or the label) */
        while (*p) {
                while (*p == ' ') {
                        p++;
                        space = true;
                }
                size_t n = wrap_piece(p);
                if (n == 0)
                        break;
                int w = text_cols(p, n), gap = space ? 1 : 0;
                if (col > indent && col + gap + w > width && (space || !closing_mark(p))) {
                        fprintf(f, "\n%*s", indent, "");
                        col = indent;
                } else if (col > indent && gap) {
                        fputc(' ', f);
                        col++;
                }
                fwrite(p, 1, n, f);
                col += w;
                p += n;
                space = false;
        }
        fputc('\n', f);
}

static void format_time(const struct xid_event *e, char *out, size_t len)
{
        if (e->time_known) {
                time_t t = (time_t)e->time;
                struct tm tm;
                if (localtime_r(&t, &tm) && strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm))
                        return;
        }
        if (e->monotonic_known)
                snprintf(out, len, "[%12.6f]", e->monotonic);
        else
                snprintf(out, len, "(no time)");
}

void xid_event_text(FILE *f, const struct xid_event *e, bool before_load, bool color)
{
        struct xid_assessment a;
        xid_event_assess(e, &a);
        char ts[64];
        format_time(e, ts, sizeof(ts));
        char where[96];
        int w = 0;
        where[0] = '\0';
        if (e->gpu_index >= 0)
                w += snprintf(where + w, sizeof(where) - (size_t)w, "GPU %d ", e->gpu_index);
        if (e->pci_bus_id[0])
                w += snprintf(where + w, sizeof(where) - (size_t)w, "%s%s ",
                              e->kind == XID_KIND_SXID ? "NVSwitch " : "", e->pci_bus_id);
        if (e->gpu_instance >= 0)
                w += snprintf(where + w, sizeof(where) - (size_t)w, "MIG GI %d ", e->gpu_instance);
        if (e->compute_instance >= 0)
                w += snprintf(where + w, sizeof(where) - (size_t)w, "CI %d ", e->compute_instance);
        fprintf(f, "%s  %s%s", ts, where, where[0] ? " " : "");
        if (e->kind == XID_KIND_XID)
                fprintf(f, "Xid %d  ", e->xid);
        else if (e->kind == XID_KIND_FALLEN_OFF_BUS)
                fprintf(f, "Xid 79  ");
        else if (e->kind == XID_KIND_SXID)
                fprintf(f, "SXid %d  ", e->sxid);
        if (color)
                fprintf(f, "\033[1m%s\033[0m  %s%s\033[0m", _(a.title), sev_color(a.severity),
                        xid_severity_name(a.severity));
        else
                fprintf(f, "%s  %s", _(a.title), xid_severity_name(a.severity));
        if (before_load)
                fputs(_("  (before the last driver load)"), f);
        fputc('\n', f);
        if (e->message && *e->message) {
                fputs("    ", f);
                put_escaped(f, e->message);
                fputc('\n', f);
        }
        if (e->pid_known || e->process_name[0]) {
                fputs(_("    process: "), f);
                if (e->pid_known)
                        fprintf(f, "pid %u", e->pid);
                if (e->process_name[0]) {
                        fputs(e->pid_known ? " (" : "", f);
                        put_escaped(f, e->process_name);
                        fputs(e->pid_known ? ")" : "", f);
                }
                if (e->xid == 119)
                        fputs(_(" - made the call that timed out; not necessarily the culprit"), f);
                fputc('\n', f);
        }
        if (e->caused_by != XID_NONE)
                fprintf(f, _("    caused by Xid %d: follow that one (ghostvram xid explain %d)\n"), e->caused_by,
                        e->caused_by);
        if (e->kind == XID_KIND_DRIVER_LOAD && e->driver_version[0])
                fprintf(f, _("    driver %s\n"), e->driver_version);
        put_wrapped(f, "    ->", _(a.advice), 7, 96);
        if (a.note)
                put_wrapped(f, _("    note:"), _(a.note), 10, 96);
}

static json_t *event_json(const struct xid_event *e, int before_load)
{
        json_t *o = xid_event_to_json(e);
        if (o)
                json_object_set_new(o, "before_driver_load", before_load < 0 ? json_null() : json_boolean(before_load));
        return o;
}


/* ---- a dump --------------------------------------------------------------------------------- */

json_t *xid_dump_json(const struct xid_run *x, const struct xid_dump *d)
{
        json_t *doc = json_object(), *arr = json_array();
        if (!doc || !arr) {
                json_decref(doc);
                json_decref(arr);
                return NULL;
        }
        for (size_t i = 0; i < d->n_shown; i++)
                json_array_append_new(arr, event_json(d->shown[i].e, d->shown[i].before_load));
        json_object_set_new(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_object_set_new(doc, "source", json_string(x->source));
        json_object_set_new(doc, "path", json_string(x->info.path));
        json_object_set_new(doc, "overruns", json_integer((json_int_t)d->overruns));
        json_object_set_new(doc, "truncated_lines", json_integer((json_int_t)d->truncated));
        json_object_set_new(doc, "dropped", json_integer((json_int_t)d->all.dropped));
        json_object_set_new(doc, "hidden", json_integer((json_int_t)d->hidden));
        json_object_set_new(doc, "untimed_events", json_integer((json_int_t)d->no_time));
        json_set_time(doc, "since", x->o->since, x->o->since_set);
        json_object_set_new(doc, "events", arr);
        return doc;
}

/* No event shown: why there may be none, and where older ones are. */
static void dump_none(FILE *f, const struct xid_run *x, const struct xid_dump *d)
{
        if (x->o->since_set)
                fprintf(f, _("No NVIDIA kernel events in %s since the given time.\n"), x->info.path);
        else
                fprintf(f, _("No NVIDIA kernel events in %s.\n"), x->info.path);
        if (x->info.no_log)
                fprintf(f, _("(The simulated host has no kernel log: write one to %s.)\n"), x->info.path);
        if (d->pci_unlisted)
                fprintf(f, _("(No GPU the driver lists now is at %s: a GPU that fell off the bus, or an\n"
                             "NVSwitch, still has its events here; check the bus id otherwise.)\n"),
                        x->o->gpu.pci);
        else if (x->info.source == KMSG_SRC_KMSG)
                fprintf(f, "%s", _("/dev/kmsg holds only the recent kernel log; for older events:\n"
                                   "  journalctl -k -o short-iso > k.log; ghostvram xid --kmsg k.log\n"));
}

/* The lines after the events: how many of each severity, and what was left out. */
static void dump_footer(FILE *f, const struct xid_run *x, const struct xid_dump *d)
{
        if (d->n_shown == 0) {
                dump_none(f, x, d);
        } else {
                fprintf(f, P_("\n%zu event:", "\n%zu events:", d->n_shown), d->n_shown);
                bool first = true;
                for (int s = XID_SEV_CRITICAL; s >= XID_SEV_UNKNOWN; s--) {
                        if (!d->by_sev[s])
                                continue;
                        fprintf(f, "%s %lu %s", first ? "" : ",", d->by_sev[s], xid_severity_name((enum xid_severity)s));
                        first = false;
                }
                fprintf(f, "%s", _(". Explain a code: ghostvram xid explain CODE\n"));
        }
        if (d->hidden)
                fprintf(f, P_("%zu other NVIDIA line not shown (-v shows them).\n",
                              "%zu other NVIDIA lines not shown (-v shows them).\n", d->hidden), d->hidden);
        if (d->no_time)
                fprintf(f, P_("%zu event without a wall-clock time left out by --since%s.\n",
                              "%zu events without a wall-clock time left out by --since%s.\n", d->no_time), d->no_time,
                        x->info.source == KMSG_SRC_KMSG ? "" : _(" (--this-boot dates [seconds] stamps from this boot)"));
        if (d->overruns)
                fprintf(f, P_("%lu kernel log record was overwritten before they could be read.\n",
                              "%lu kernel log records were overwritten before they could be read.\n", d->overruns),
                        d->overruns);
        if (d->all.dropped)
                fprintf(f, _("%lu oldest events dropped (more than %d).\n"), d->all.dropped, XID_LIST_MAX);
}

void xid_dump_text(FILE *f, const struct xid_run *x, const struct xid_dump *d, bool color)
{
        for (size_t i = 0; i < d->n_shown; i++) {
                if (i)
                        fputc('\n', f);
                xid_event_text(f, d->shown[i].e, d->shown[i].before_load > 0, color);
        }
        dump_footer(f, x, d);
}

/* ---- a follow ------------------------------------------------------------------------------- */

void xid_follow_header(FILE *f, const char *path, int nvml_gpus, const char *nvml_err)
{
        if (nvml_gpus >= 0)
                fprintf(f, P_("Following %s and NVML critical-error events of %u GPU (Ctrl-C stops).\n",
                              "Following %s and NVML critical-error events of %u GPUs (Ctrl-C stops).\n",
                              (unsigned)nvml_gpus),
                        path, (unsigned)nvml_gpus);
        else
                fprintf(f, _("Following %s (Ctrl-C stops).\n"), path);
        if (nvml_gpus < 0 && nvml_err && nvml_err[0]) {
                struct buf b = BUF_INIT(0);
                esc_terminal(&b, nvml_err, strlen(nvml_err));
                fprintf(f, "(%s)\n", buf_str(&b));
                buf_free(&b);
        }
        fputc('\n', f);
        fflush(f);
}

void xid_follow_event(FILE *f, const struct xid_event *e, const char *source, unsigned long overruns, bool json,
                      bool color)
{
        if (!json) {
                xid_event_text(f, e, false, color);
                fputc('\n', f);
                return;
        }
        json_t *o = json_object();
        if (!o)
                return;
        json_object_set_new(o, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_object_set_new(o, "source", json_string(e->source ? e->source : source));
        json_object_set_new(o, "overruns", json_integer((json_int_t)overruns));
        json_object_set_new(o, "kernel_event", event_json(e, -1));
        json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
        fputc('\n', f);
        json_decref(o);
}

void xid_follow_lost(FILE *f, unsigned long lost)
{
        fprintf(f, _("ghostvram xid: %lu kernel log record(s) overwritten before they could be read\n"), lost);
}

/* ---- explain -------------------------------------------------------------------------------- */

/* The NVIDIA catalogue's row of x (x->info set): its cells quoted as NVIDIA wrote them, the
 * buckets in words; then the pre-Ampere document's name and causes. */
static void explain_catalog(FILE *f, const struct xid_explanation *x)
{
        struct buf cat = BUF_INIT(0), causes = BUF_INIT(0);
        const char *it = xid_bucket_text(x->info->immediate);
        const char *iv = xid_bucket_text(x->info->investigatory);
        buf_printf(&cat, _("\"%s\"; applies to %s; immediate action %s"), x->info->description,
                   x->info->applies_to, x->info->immediate);
        if (it)
                buf_printf(&cat, _(" (%s)"), _(it));
        buf_printf(&cat, _("; investigatory %s"), x->info->investigatory);
        if (iv)
                buf_printf(&cat, _(" (%s)"), _(iv));
        if (strcmp(x->info->xid154, "-") != 0)
                buf_printf(&cat, _("; also raises Xid 154 (%s)"), x->info->xid154);
        buf_puts(&cat, ".");
        put_wrapped(f, _("NVIDIA catalog"), buf_str(&cat), 16, 96);
        buf_reset(&cat);
        xid_causes_text(x->info->causes, &causes);
        const char *old = x->info->old_name;
        if (strcmp(old, "(same)") == 0)
                buf_puts(&cat, _("same name"));
        else if (strcmp(old, "-") == 0)
                buf_puts(&cat, _("not listed"));
        else
                buf_printf(&cat, "\"%s\"", old);
        buf_printf(&cat, _("; possible causes: %s."), buf_str(&causes));
        put_wrapped(f, _("Pre-Ampere doc"), buf_str(&cat), 16, 96);
        buf_free(&cat);
        buf_free(&causes);
}

/* One code's explanation: its name, meaning, cause, what to do, reset, severity, notes. */
static void explain_one(FILE *f, const struct xid_explanation *x)
{
        fprintf(f, _("Xid %d: %s\n"), x->code, _(x->name));
        if (x->info)
                fprintf(f, "  %s\n", x->info->mnemonic);
        fputc('\n', f);
        struct buf causes = BUF_INIT(0);
        if (!x->cause && x->info)
                xid_causes_text(x->info->causes, &causes);
        put_wrapped(f, _("What it means"), x->meaning ? _(x->meaning) : x->info ? _(x->info->description) : "-", 16,
                    96);
        put_wrapped(f, _("Likely cause"), x->cause ? _(x->cause) : buf_str(&causes), 16, 96);
        put_wrapped(f, _("What to do"), _(x->todo), 16, 96);
        put_wrapped(f, _("Reset/reboot"), _(xid_reset_text(x->reset)), 16, 96);
        char *sev = NULL;
        str_setf(&sev, _("%s (action: %s)"), xid_severity_name(x->severity), xid_action_name(x->action));
        put_wrapped(f, _("Severity"), sev, 16, 96);
        free(sev);
        if (x->note)
                put_wrapped(f, "ghostvram", _(x->note), 16, 96);
        if (x->info)
                explain_catalog(f, x);
        buf_free(&causes);
}

void xid_explain_text(FILE *f, const unsigned *codes, size_t n)
{
        for (size_t k = 0; k < n; k++) {
                struct xid_explanation x;
                xid_explain((int)codes[k], &x);
                if (k)
                        fputc('\n', f);
                explain_one(f, &x);
        }
}

json_t *xid_explain_doc(const unsigned *codes, size_t n)
{
        json_t *arr = json_array();
        for (size_t k = 0; k < n; k++) {
                struct xid_explanation x;
                xid_explain((int)codes[k], &x);
                json_array_append_new(arr, xid_explanation_to_json(&x));
        }
        json_t *doc = json_object();
        if (!doc) {
                json_decref(arr);
                return NULL;
        }
        json_object_set_new(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_object_set_new(doc, "explanations", arr);
        return doc;
}

/* ---- xid's answer on standard output ------------------------------------------------------- */

int xid_dump_show(const struct xid_show *s, const struct xid_dump *d)
{
        if (s->out.json) {
                json_t *doc = xid_dump_json(s->x, d);
                return !doc || s->out.print_json(doc) < 0 ? -1 : 0;
        }
        show_banner(&s->out);
        xid_dump_text(stdout, s->x, d, s->out.color);
        return 0;
}

static void follow_start(void *ctx, int nvml_gpus, const char *nvml_err)
{
        const struct xid_show *s = ctx;
        if (s->out.json)
                return;
        show_banner(&s->out);
        xid_follow_header(stdout, s->x->info.path, nvml_gpus, nvml_err);
}

static void follow_event(void *ctx, const struct xid_event *e, unsigned long overruns)
{
        const struct xid_show *s = ctx;
        xid_follow_event(stdout, e, s->x->source, overruns, s->out.json, s->out.color);
}

static void follow_batch_end(void *ctx)
{
        (void)ctx;
        fflush(stdout);
}

static void follow_lost(void *ctx, unsigned long lost)
{
        const struct xid_show *s = ctx;
        if (!s->out.json)
                xid_follow_lost(stderr, lost);
}

void xid_follow_show(struct xid_follow_cb *cb, const struct xid_show *s)
{
        *cb = (struct xid_follow_cb){ .start = follow_start, .event = follow_event, .batch_end = follow_batch_end,
                                      .lost = follow_lost, .ctx = (void *)s };
}

static int execute_dump(void *ctx, const struct xid_run *x, const struct xid_dump *d)
{
        struct xid_show *s = ctx;
        s->x = x;
        return xid_dump_show(s, d);
}

static void execute_follow(void *ctx, const struct xid_run *x, struct xid_follow_cb *cb)
{
        struct xid_show *s = ctx;
        s->x = x;
        xid_follow_show(cb, s);
}

void xid_execute_show(struct xid_execute_cb *cb, struct xid_show *s)
{
        *cb = (struct xid_execute_cb){ .dump = execute_dump, .follow = execute_follow, .ctx = s };
}
