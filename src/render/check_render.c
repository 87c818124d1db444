#include "render/check_render.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "collect/gpu_spec.h"
#include "util/i18n.h"

#define MIB (1024.0 * 1024.0)

const char *plugin_state_name(enum plugin_state s)
{
        switch (s) {
        case PLUGIN_OK: return "OK";
        case PLUGIN_WARNING: return "WARNING";
        case PLUGIN_CRITICAL: return "CRITICAL";
        default: return "UNKNOWN";
        }
}

static int state_rank(enum plugin_state s)
{
        switch (s) {
        case PLUGIN_OK: return 0;
        case PLUGIN_UNKNOWN: return 1;
        case PLUGIN_WARNING: return 2;
        default: return 3;
        }
}

enum plugin_state plugin_state_worse(enum plugin_state a, enum plugin_state b)
{
        return state_rank(a) >= state_rank(b) ? a : b;
}

double check_ghost_mib(const struct gpu_ledger *l)
{
        return l->inspected && l->ghost_confirmed ? (double)l->ghost / MIB : 0.0;
}

static const char *verdict_of(const struct gpu_ledger *l)
{
        return l->n_findings ? l->findings[0].code : "unknown";
}

/* The state of the GPU's memory: lost, the thresholds, a stuck task */
static enum plugin_state memory_state(const struct gpu_ledger *l, const struct check_thresholds *t)
{
        if (strcmp(verdict_of(l), "gpu-lost") == 0)
                return PLUGIN_CRITICAL;
        if (!ledger_judged(l))
                return PLUGIN_UNKNOWN;
        double v = check_ghost_mib(l);
        if (t->have_crit && range_alert(&t->crit, v))
                return PLUGIN_CRITICAL;
        if (t->have_warn && range_alert(&t->warn, v))
                return PLUGIN_WARNING;
        if (strcmp(verdict_of(l), "stuck-in-driver") == 0)
                return PLUGIN_WARNING;
        return PLUGIN_OK;
}

/* A recent Xid pages by the catalogue's severity: critical (reboot) CRITICAL, error WARNING */
static enum plugin_state xid_state(const struct gpu_ledger *l)
{
        if (!l->xid_paging)
                return PLUGIN_OK;
        return l->xid.severity >= XID_SEV_CRITICAL ? PLUGIN_CRITICAL : PLUGIN_WARNING;
}

enum plugin_state check_gpu_state(const struct gpu_ledger *l, const struct check_thresholds *t)
{
        return plugin_state_worse(memory_state(l, t), xid_state(l));
}

/* Text from the driver or the ledger in the plugin's output: one line, no '|' (it starts the
 * performance data), no control characters; whole (a cut sentence misleads, and out is capped). */
static int put_plain(struct buf *out, const char *s)
{
        int r = 0;
        for (size_t i = 0; s[i] && r == 0; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c == '|')
                        r = buf_puts(out, "\xc2\xa6");  /* U+00A6 BROKEN BAR: reads like a pipe */
                else if (c < 0x20 || c == 0x7f)
                        r = buf_putc(out, ' ');
                else
                        r = buf_putc(out, (char)c);
        }
        return r;
}

static bool counted(const struct scan_result *r, const struct gpu_ledger *l)
{
        return r->only_gpu < 0 || (unsigned)r->only_gpu == l->index;
}

/* The GPU's own status message without the "GPU N: " it may start with: the line has said it. */
static const char *status_text(const struct gpu_info *g, unsigned index)
{
        char pre[24];
        int n = snprintf(pre, sizeof(pre), "GPU %u: ", index);
        const char *m = g->status_message;
        return n > 0 && strncmp(m, pre, (size_t)n) == 0 ? m + n : m;
}

static int gpu_summary(struct buf *out, const struct scan_result *r, const struct gpu_ledger *l,
                       enum plugin_state st)
{
        const struct gpu_info *g = &r->facts->gpu->gpus[l - r->gpus];
        const char *v = verdict_of(l);
        int e = buf_printf(out, "GPU %u: ", l->index);
        if (strcmp(v, "gpu-lost") == 0)
                return e ? e : buf_puts(out, _("lost (the driver cannot reach it)"));
        if (!l->inspected) {
                struct buf why = BUF_INIT(0);
                e = e ? e : put_plain(&why, g->status_message[0] ? status_text(g, l->index) : _("no memory figures"));
                e = e ? e : buf_printf(out, _("not inspected (%s)"), buf_str(&why));
                buf_free(&why);
                return e;
        }
        if (!l->procs_known)
                return e ? e : buf_puts(out, _("no process list from the driver: whose memory it is cannot be told"));
        if (st == PLUGIN_OK && l->freeing_bytes)
                return e ? e : buf_printf(out, _("%.0f MiB freeing (the driver is releasing it; not a ghost)"),
                                          (double)l->freeing_bytes / MIB);
        if (st == PLUGIN_OK && !l->ghost_confirmed)
                return e ? e : buf_printf(out, "%s", v);
        e = e ? e : buf_printf(out, _("%.0f MiB ghost (%s"), check_ghost_mib(l), v);
        const struct finding *fd = l->n_findings ? &l->findings[0] : NULL;
        for (size_t i = 0; fd && i < fd->n_pids && i < 8 && !e; i++)
                e = buf_printf(out, "%s%d", i ? " " : _(", PIDs "), (int)fd->pids[i]);
        if (fd && fd->n_pids > 8 && !e)
                e = buf_printf(out, " +%zu", fd->n_pids - 8);
        return e ? e : buf_putc(out, ')');
}

/* The GPU's part of the status line: its memory's, then the Xid that pages */
static int gpu_part(struct buf *out, const struct scan_result *r, const struct gpu_ledger *l,
                    const struct check_thresholds *t)
{
        enum plugin_state mem = memory_state(l, t);
        if (!l->xid_paging)
                return gpu_summary(out, r, l, mem);
        int e = mem == PLUGIN_OK ? buf_printf(out, "GPU %u: ", l->index) : gpu_summary(out, r, l, mem);
        e = e || mem == PLUGIN_OK ? e : buf_puts(out, ", ");
        return e ? e : put_plain(out, str_or_empty(l->xid.summary));
}

/* A long-output line: "GPU N CODE: summary. Next: step" */
static int long_line(struct buf *out, unsigned index, const char *code, const char *summary, const char *next)
{
        int e = buf_printf(out, "GPU %u %s: ", index, code);
        e = e ? e : put_plain(out, str_or_empty(summary));
        if (!str_empty(next) && !e) {
                e = buf_puts(out, _(". Next: "));
                e = e ? e : put_plain(out, next);
        }
        return e ? e : buf_putc(out, '\n');
}

static int perf_range(struct buf *out, const struct range *rg, bool have)
{
        char s[96] = "";
        if (have && range_format(rg, MIB, s, sizeof(s)) < 0)
                return -ENOSPC;
        return buf_puts(out, s);
}

static int perfdata(struct buf *out, const struct scan_result *r, const struct check_thresholds *t)
{
        int e = 0;
        bool first = true;
        for (size_t i = 0; i < r->n_gpus && !e; i++) {
                const struct gpu_ledger *l = &r->gpus[i];
                if (!counted(r, l) || !l->inspected)
                        continue;
                unsigned long long tot = (unsigned long long)l->total;
                unsigned long long ghost = l->ghost_confirmed ? (unsigned long long)l->ghost : 0;
                e = buf_printf(out, "%s'gpu%u_ghost'=%lluB;", first ? "" : " ", l->index, ghost);
                first = false;
                e = e ? e : perf_range(out, &t->warn, t->have_warn);
                e = e ? e : buf_putc(out, ';');
                e = e ? e : perf_range(out, &t->crit, t->have_crit);
                e = e ? e : buf_printf(out, ";0;%llu", tot);
                const struct { const char *name; uint64_t v; bool show; } parts[] = {
                        { "used", l->used, true },
                        { "listed", l->listed, true },
                        { "foreign", l->foreign, true },
                        { "unattributed", l->unattributed, true },
                        { "freeing", l->freeing_bytes, true },
                        { "reserved", l->reserved, l->reserved_known },
                };
                for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]) && !e; k++)
                        if (parts[k].show)
                                e = buf_printf(out, " 'gpu%u_%s'=%lluB;;;0;%llu", l->index, parts[k].name,
                                               (unsigned long long)parts[k].v, tot);
        }
        return e;
}

int check_render(struct buf *out, const struct scan_result *r, const struct check_thresholds *t,
                 enum plugin_state *ret_state)
{
        const struct gpu_report *gr = r->facts->gpu;
        if (!gr->driver_present) {
                *ret_state = PLUGIN_UNKNOWN;
                return check_render_unknown(out, gr->error[0] ? gr->error : _("no NVIDIA driver"));
        }
        enum plugin_state st = PLUGIN_OK;
        size_t n_counted = 0, n_ok = 0, n_freeing = 0;     /* freeing: OK, but named, never "ok" */
        for (size_t i = 0; i < r->n_gpus; i++) {
                if (!counted(r, &r->gpus[i]))
                        continue;
                n_counted++;
                enum plugin_state s = check_gpu_state(&r->gpus[i], t);
                n_ok += s == PLUGIN_OK && !r->gpus[i].freeing_bytes;
                n_freeing += s == PLUGIN_OK && r->gpus[i].freeing_bytes;
                st = plugin_state_worse(st, s);
        }
        if (n_counted == 0) {
                *ret_state = PLUGIN_UNKNOWN;
                return check_render_unknown(out, r->only_gpu >= 0 ? _("no such GPU") : _("no GPU found"));
        }
        int e = buf_printf(out, "GHOSTVRAM %s - ", plugin_state_name(st));
        /* the GPUs that are not OK, worst first, then how many are OK */
        static const enum plugin_state order[] = { PLUGIN_CRITICAL, PLUGIN_WARNING, PLUGIN_UNKNOWN };
        bool any = false;
        for (size_t o = 0; o < 3 && !e; o++)
                for (size_t i = 0; i < r->n_gpus && !e; i++) {
                        const struct gpu_ledger *l = &r->gpus[i];
                        enum plugin_state s = check_gpu_state(l, t);
                        if (!counted(r, l) || s != order[o])
                                continue;
                        e = any ? buf_puts(out, "; ") : 0;
                        e = e ? e : gpu_part(out, r, l, t);
                        any = true;
                }
        if (!e && (n_ok || n_freeing)) {
                if (r->only_gpu >= 0) {
                        for (size_t i = 0; i < r->n_gpus && !e; i++)
                                if (counted(r, &r->gpus[i]))
                                        e = gpu_summary(out, r, &r->gpus[i], PLUGIN_OK);
                } else {
                        for (size_t i = 0; i < r->n_gpus && !e; i++) {
                                const struct gpu_ledger *l = &r->gpus[i];
                                if (!l->freeing_bytes || check_gpu_state(l, t) != PLUGIN_OK)
                                        continue;
                                e = any ? buf_puts(out, "; ") : 0;
                                e = e ? e : gpu_summary(out, r, l, PLUGIN_OK);
                                any = true;
                        }
                        if (!e && n_ok)
                                e = buf_printf(out, P_("%s%zu GPU ok", "%s%zu GPUs ok", n_ok), any ? "; " : "", n_ok);

                }
        }
        e = e ? e : buf_puts(out, " | ");
        e = e ? e : perfdata(out, r, t);
        e = e ? e : buf_putc(out, '\n');
        /* long output: what to do on each GPU that is not OK */
        for (size_t i = 0; i < r->n_gpus && !e; i++) {
                const struct gpu_ledger *l = &r->gpus[i];
                if (!counted(r, l) || check_gpu_state(l, t) == PLUGIN_OK)
                        continue;
                const struct finding *fd = l->n_findings ? &l->findings[0] : NULL;
                if (fd && memory_state(l, t) != PLUGIN_OK)
                        e = long_line(out, l->index, fd->code, fd->summary, fd->next_step);
                if (l->xid_paging && !e) {
                        char code[16];
                        snprintf(code, sizeof(code), "xid-%d", l->xid.event->xid);
                        e = long_line(out, l->index, code, l->xid.summary, l->xid.next_step);
                }
        }
        if (!e)
                *ret_state = st;
        return e;
}

int check_render_unknown(struct buf *out, const char *why)
{
        int e = buf_puts(out, "GHOSTVRAM UNKNOWN - "); /* i18n: no (the plugin status) */
        e = e ? e : put_plain(out, why);
        return e ? e : buf_putc(out, '\n');
}

int check_print(FILE *out, const struct scan_result *r, const struct check_thresholds *t,
                enum plugin_state *ret_state)
{
        struct buf b = BUF_INIT(1u << 20);
        int e = check_render(&b, r, t, ret_state);
        if (e >= 0)
                fputs(buf_str(&b), out);
        buf_free(&b);
        return e < 0 ? e : 0;
}

void check_print_unknown(FILE *out, const char *why)
{
        struct buf b = BUF_INIT(4096);
        check_render_unknown(&b, why);
        fputs(buf_str(&b), out);
        buf_free(&b);
}

int check_print_unknownv(FILE *out, const char *fmt, va_list ap)
{
        char why[512];
        vsnprintf(why, sizeof(why), fmt, ap);
        check_print_unknown(out, why);
        return PLUGIN_UNKNOWN;
}

int check_print_unknownf(FILE *out, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = check_print_unknownv(out, fmt, ap);
        va_end(ap);
        return r;
}

int check_range_in_bytes(struct range *r)
{
        double *ends[2] = { r->start_inf ? NULL : &r->start, r->end_inf ? NULL : &r->end };
        for (size_t i = 0; i < 2; i++) {
                if (!ends[i])
                        continue;
                double b = *ends[i] * 1048576.0, whole = round(b);
                if (fabs(b) >= 18446744073709551616.0 || (whole == 0 && b != 0))
                        return -ERANGE;
                *ends[i] = whole / 1048576.0;
        }
        return 0;
}

int check_report(FILE *out, struct scan_result *sr, const struct check_run_opts *o, const struct check_thresholds *t)
{
        const struct gpu_report *gpu = sr->facts->gpu;
        int only_gpu = o->only_gpu;
        if (o->gpu_spec && only_gpu < 0) { /* a UUID or PCI bus id: looked up in this scan's GPUs */
                unsigned idx;
                if (!gpu->driver_present || gpu_spec_resolve(o->gpu_spec, gpu, &idx) < 0)
                        return check_print_unknownf(out, _("--gpu %.100s: no such GPU on this host"), o->gpu_spec);
                only_gpu = (int)idx;
        }
        if (gpu->driver_present && only_gpu >= 0 && (size_t)only_gpu >= gpu->n_gpus)
                return check_print_unknownf(out, P_("--gpu %d: this host has %zu GPU", "--gpu %d: this host has %zu GPUs",
                                                    gpu->n_gpus),
                                            only_gpu, gpu->n_gpus);
        sr->only_gpu = only_gpu;
        enum plugin_state st = PLUGIN_UNKNOWN;
        int r = check_print(out, sr, t, &st);
        return r < 0 ? check_print_unknownf(out, "%s", _("output too large")) : (int)st;
}

void check_thresholds_default(struct check_thresholds *t)
{
        *t = (struct check_thresholds){ .have_warn = true, .have_crit = true };
        range_parse(CHECK_DEFAULT_WARN, &t->warn);
        range_parse(CHECK_DEFAULT_CRIT, &t->crit);
}
