#include "serve/page.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collect/xid.h"
#include "util/escape.h"
#include "util/i18n.h"

/* The one inline style. Its SHA-256 is in page_csp: change both together (t_serve_page checks
 * the hash the browser would compute; a mismatch leaves the page unstyled, never broken). */
const char page_style[] =
        "body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#1a1a1a;background:#fafafa}"
        "h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.15em;margin:1.2em 0 .3em}"
        ".status{padding:.3em .6em;border-radius:4px;background:#e8f5e9}.status.bad{background:#ffebee}"
        ".sim{color:#b71c1c;font-weight:bold}"
        ".verdict b{padding:0 .3em;border-radius:3px;background:#e8f5e9}.verdict.alarm b{background:#ffcdd2}"
        "svg.timeline{width:100%;max-width:760px;height:auto;background:#fff;border:1px solid #ddd}"
        ".axis{stroke:#999;stroke-width:1}.grid{stroke:#eee;stroke-width:1}.lbl{font-size:11px;fill:#555}"
        ".reserved{fill:#9e9e9e}.listed{fill:#43a047}.foreign{fill:#1e88e5}.ghost{fill:#e53935}.unattributed{fill:#fb8c00}.freeing{fill:#8e24aa}"
        ".legend span.sw{display:inline-block;width:.8em;height:.8em;margin:0 .3em 0 .8em}"
        ".legend .reserved{background:#9e9e9e}.legend .listed{background:#43a047}.legend .foreign{background:#1e88e5}"
        ".legend .ghost{background:#e53935}.legend .unattributed{background:#fb8c00}.legend .freeing{background:#8e24aa}"
        "table{border-collapse:collapse;margin:.5em 0;font-size:13px}th,td{border:1px solid #ddd;padding:.2em .5em;text-align:left;vertical-align:top}"
        "th{background:#eee}tr.ghost-holder td{background:#fff3f3}td.num{text-align:right}code{font-size:12px}"
        "footer{margin-top:2em;color:#666;font-size:12px}";

const char page_csp[] = "default-src 'none'; style-src 'sha256-C1uWlS/dBqTg/Jq0o5emrCHc0SthTYW1TjcHL56FB3U='; img-src 'none'; "
                        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

int page_esc(struct buf *out, const char *s, size_t len)
{
        struct buf u = BUF_INIT(0);
        int e = esc_utf8_repair(&u, s, len);
        for (size_t i = 0; !e && i < u.len; i++) {
                unsigned char c = (unsigned char)u.data[i];
                switch (c) {
                case '&':
                        e = buf_puts(out, "&amp;");
                        break;
                case '<':
                        e = buf_puts(out, "&lt;");
                        break;
                case '>':
                        e = buf_puts(out, "&gt;");
                        break;
                case '"':
                        e = buf_puts(out, "&quot;");
                        break;
                case '\'':
                        e = buf_puts(out, "&#39;");
                        break;
                default:
                        e = c < 0x20 || c == 0x7f ? buf_puts(out, "\xef\xbf\xbd") : buf_putc(out, (char)c);
                }
        }
        buf_free(&u);
        return e;
}

static int esc(struct buf *out, const char *s)
{
        return s ? page_esc(out, s, strlen(s)) : 0;
}

static void utc(double t, char *out, size_t n)
{
        if (t <= 0 || xid_format_rfc3339((double)(long long)t, out, n) < 0)
                snprintf(out, n, "%s", _("unknown"));
}

static unsigned long long mib_of(uint64_t bytes)
{
        return (unsigned long long)((bytes + (1u << 19)) >> 20);
}

static void mib(struct buf *out, uint64_t bytes)
{
        buf_printf(out, "%llu MiB", mib_of(bytes));
}

/* ---- the timeline ---------------------------------------------------------------------------- */

#define TL_W 760.0
#define TL_H 180.0
#define TL_LEFT 64.0
#define TL_RIGHT 8.0
#define TL_TOP 8.0
#define TL_BOTTOM 22.0

struct scale {
        double t0, t1, top_mib;
};

static double sx(const struct scale *s, double t)
{
        return TL_LEFT + (t - s->t0) / (s->t1 - s->t0) * (TL_W - TL_LEFT - TL_RIGHT);
}

static double sy(const struct scale *s, double mib)
{
        return TL_H - TL_BOTTOM - mib / s->top_mib * (TL_H - TL_TOP - TL_BOTTOM);
}

static double cum(const struct live_point *p, int upto)
{
        double v = 0;
        for (int k = 0; k < upto; k++)
                v += p->mib[k];
        return v;
}

#define TL_POINTS 240     /* drawn a timeline at most: one every 3 px */

/* The ring's points as drawn: all of them up to TL_POINTS, else one a bucket of consecutive
 * points, the one with the most ghost (a short ghost never vanishes in the thinning), or a
 * gap when the bucket holds one. Returns how many went into out. */
static size_t thin(const struct live_ring *r, struct live_point *out)
{
        size_t n = r ? r->n : 0, k = (n + TL_POINTS - 1) / TL_POINTS, m = 0;
        for (size_t i = 0; k && i < n; i += k) {
                const struct live_point *best = live_ring_at(r, i);
                for (size_t q = i; q < i + k && q < n; q++) {
                        const struct live_point *p = live_ring_at(r, q);
                        if (!p->valid || (best->valid && p->mib[LIVE_GHOST] >= best->mib[LIVE_GHOST]))
                                best = p;
                        if (!p->valid)
                                break;
                }
                out[m++] = *best;
        }
        return m;
}

/* Append "Lx,y" (or "Mx,y") with one decimal: a page holds thousands, printf is the cost. */
static int pt(struct buf *out, char cmd, double x, double y)
{
        char tmp[48];
        size_t n = 0;
        if (cmd != 'M')
                tmp[n++] = ' ';
        tmp[n++] = cmd;
        for (int c = 0; c < 2; c++) {
                double v = c ? y : x;
                long t = (long)(v * 10 + (v < 0 ? -0.5 : 0.5));
                if (t < 0) {
                        tmp[n++] = '-';
                        t = -t;
                }
                char d[24];
                size_t k = 0;
                long ip = t / 10;
                do
                        d[k++] = (char)('0' + ip % 10);
                while ((ip /= 10) && k < 20);
                while (k)
                        tmp[n++] = d[--k];
                tmp[n++] = '.';
                tmp[n++] = (char)('0' + t % 10);
                if (!c)
                        tmp[n++] = ',';
        }
        return buf_append(out, tmp, n);
}

/* One kind's band: a closed subpath per run of valid points (a gap breaks the band). */
static int band(struct buf *out, const struct live_point *pts, size_t n, const struct scale *s, int k)
{
        int e = 0;
        size_t i = 0;
        while (i < n && !e) {
                while (i < n && !pts[i].valid)
                        i++;
                size_t j = i;
                while (j < n && pts[j].valid)
                        j++;
                if (i == j)
                        break;
                /* upper edge forwards, lower edge backwards; a lone point is 2 px wide */
                for (size_t q = i; q < j && !e; q++) {
                        const struct live_point *p = &pts[q];
                        e = pt(out, q == i ? 'M' : 'L', sx(s, p->t), sy(s, cum(p, k + 1)));
                        if (!e && j - i == 1)
                                e = pt(out, 'L', sx(s, p->t) + 2, sy(s, cum(p, k + 1)));
                }
                for (size_t q = j; q-- > i && !e;) {
                        const struct live_point *p = &pts[q];
                        if (j - i == 1)
                                e = pt(out, 'L', sx(s, p->t) + 2, sy(s, cum(p, k)));
                        if (!e)
                                e = pt(out, 'L', sx(s, p->t), sy(s, cum(p, k)));
                }
                if (!e)
                        e = buf_puts(out, " Z ");
                i = j;
        }
        return e;
}

static const char *const kind_fill[LIVE_KINDS] = { "#9e9e9e", "#43a047", "#1e88e5", "#e53935", "#fb8c00", "#8e24aa" };

/* The timeline spans the history, at least the last minute, but never from before serve
 * started (started 0: unknown). */
static int timeline(struct buf *out, const struct live_ring *r, const struct live_gpu *g, double now, double started)
{
        struct scale s = { .t0 = started > now - 60 ? started : now - 60, .t1 = now, .top_mib = r ? r->total_mib : 0 };
        struct live_point pts[TL_POINTS];
        size_t npts = thin(r, pts);
        size_t first_valid = r ? r->n : 0;
        for (size_t i = 0; r && i < r->n; i++) {
                const struct live_point *p = live_ring_at(r, i);
                if (i == 0 && p->t && p->t < s.t0)
                        s.t0 = p->t;
                if (p->valid && first_valid == r->n)
                        first_valid = i;
                if (p->valid && cum(p, LIVE_KINDS) > s.top_mib)
                        s.top_mib = cum(p, LIVE_KINDS);
        }
        if (s.top_mib < 1)
                s.top_mib = 1;
        if (s.t1 <= s.t0)
                s.t1 = s.t0 + 1;
        char a[40], b[40];
        utc(s.t0, a, sizeof(a));
        utc(s.t1, b, sizeof(b));
        int e = buf_printf(out,
                           "<svg class=\"timeline\" id=\"timeline-gpu%u\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
                           "xmlns=\"http://www.w3.org/2000/svg\" aria-labelledby=\"tl-title-%u\">"
                           "<title id=\"tl-title-%u\">",
                           g->index, TL_W, TL_H, g->index, g->index);
        if (!e)
                e = buf_printf(out, _("GPU %u memory by kind from %s to %s (%zu samples)"), g->index, a, b,
                               r ? r->n : (size_t)0);
        if (!e)
                e = buf_puts(out, "</title>\n");
        /* grid: 0, half and the top (the GPU's total) */
        for (int q = 0; q <= 2 && !e; q++) {
                double m = s.top_mib * q / 2.0;
                e = buf_printf(out,
                               "<line class=\"%s\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>"
                               "<text class=\"lbl\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.0f MiB</text>\n",
                               q ? "grid" : "axis", TL_LEFT, sy(&s, m), TL_W - TL_RIGHT, sy(&s, m), TL_LEFT - 4,
                               sy(&s, m) + 4, m);
        }
        if (!e)
                e = buf_printf(out,
                               "<text class=\"lbl\" x=\"%.0f\" y=\"%.0f\">%s</text>"
                               "<text class=\"lbl\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>\n",
                               TL_LEFT, TL_H - 6, a, TL_W - TL_RIGHT, TL_H - 6, b);
        const struct live_point *last = NULL;
        for (size_t i = r ? r->n : 0; i-- > 0;)
                if (live_ring_at(r, i)->valid) {
                        last = live_ring_at(r, i);
                        break;
                }
        for (int k = 0; k < LIVE_KINDS && !e && first_valid < (r ? r->n : 0); k++) {
                e = buf_printf(out, "<path class=\"series %s\" data-kind=\"%s\" fill=\"%s\" d=\"", live_kind_name(k),
                               live_kind_name(k), kind_fill[k]);
                /* a kind that is zero all along draws nothing (the element stays, empty) */
                bool any = false;
                for (size_t q = 0; q < npts && !any; q++)
                        any = pts[q].valid && pts[q].mib[k];
                if (!e && any)
                        e = band(out, pts, npts, &s, k);
                if (!e)
                        e = buf_puts(out, "\"><title>");
                if (!e)
                        e = buf_printf(out, _("%s: %u MiB now"), _(live_kind_name(k)), last ? last->mib[k] : 0);
                if (!e)
                        e = buf_puts(out, "</title></path>\n");
        }
        if (!e)
                e = buf_puts(out, "</svg>\n<p class=\"legend\">");
        for (int k = 0; k < LIVE_KINDS && !e; k++) {
                e = buf_printf(out, "<span class=\"sw %s\"></span>%s ", live_kind_name(k), _(live_kind_name(k)));
                if (!e)
                        mib(out, g->kind[k]);
        }
        return e ? e : buf_puts(out, "</p>\n");
}

/* ---- sections -------------------------------------------------------------------------------- */

static int gpu_section(struct buf *out, const struct live_gpu *g, const struct live_ring *r, const struct page_opts *o)
{
        buf_printf(out, "<section class=\"gpu\" id=\"gpu-%u\">\n<h2>GPU %u · ", g->index, g->index);
        esc(out, g->name[0] ? g->name : _("(name unknown)"));
        buf_puts(out, " · <code>");
        esc(out, g->bus[0] ? g->bus : g->uuid);
        buf_puts(out, "</code></h2>\n");
        if (!str_empty(g->status)) {
                buf_puts(out, "<p class=\"status bad\">");
                esc(out, g->status);
                buf_puts(out, "</p>\n");
        }
        buf_printf(out, "<p class=\"verdict%s\" data-verdict=\"", live_verdict_alarming(g->verdict) ? " alarm" : "");
        esc(out, g->verdict);
        buf_puts(out, "\"><b>");
        esc(out, g->verdict);
        buf_puts(out, "</b> ");
        esc(out, g->summary);
        if (g->confidence[0]) {
                buf_puts(out, " <i>");
                buf_printf(out, _("(%s confidence)"), _(g->confidence));
                buf_puts(out, "</i>");
        }
        buf_puts(out, "</p>\n");
        if (g->inspected) {
                buf_puts(out, "<p class=\"split\">");
                buf_printf(out, _("used %llu MiB"), mib_of(g->used));
                for (int k = LIVE_LISTED; k < LIVE_KINDS; k++) {
                        if (k == LIVE_FREEING && !g->kind[k])
                                continue;       /* as scan's equation: only during a teardown */
                        buf_printf(out, " %s %s ", k == LIVE_LISTED ? "=" : "+", _(live_kind_name(k)));
                        mib(out, g->kind[k]);
                }
                if (g->reserved_known)
                        buf_printf(out, _("; driver reservation %llu MiB apart"), mib_of(g->kind[LIVE_RESERVED]));
                buf_printf(out, _("; total %llu MiB"), mib_of(g->total));
                buf_puts(out, "</p>\n");
        }
        int e = timeline(out, r, g, o->now, o->started);
        if (g->n_evidence && live_verdict_alarming(g->verdict)) {
                buf_puts(out, "<ul class=\"evidence\">\n");
                for (size_t i = 0; i < g->n_evidence; i++) {
                        buf_puts(out, "<li>");
                        esc(out, g->evidence[i]);
                        buf_puts(out, "</li>\n");
                }
                buf_puts(out, "</ul>\n");
        }
        if (!str_empty(g->next_step) && live_verdict_alarming(g->verdict)) {
                buf_printf(out, "<p class=\"next\">%s<code>", _("Next: "));
                esc(out, g->next_step);
                buf_puts(out, "</code></p>\n");
        }
        return e ? e : buf_puts(out, "</section>\n");
}

static void holders_table(struct buf *out, const struct live_view *v, bool expose_cmdline)
{
        buf_puts(out, "<h2 id=\"holders\">");
        buf_printf(out, _("Processes (%zu)"), v->n_rows);
        buf_puts(out, "</h2>\n");
        if (!v->n_rows) {
                buf_printf(out, "<p>%s</p>\n", _("No process holds an NVIDIA device node or is listed by NVML."));
                return;
        }
        /* i18n: no: names (GPU, PID, NVML MiB); the headers in words are translated */
        buf_printf(out, "<table id=\"holders-table\"><thead><tr><th>GPU</th><th>PID</th><th>%s</th><th>%s</th>"
                        "<th>NVML MiB</th><th>%s</th><th>%s</th><th>%s</th><th>%s</th>"
                        "</tr></thead><tbody>\n",
                   /* TRANSLATORS: the page's process table headers */
                   _("user"), _("state"), _("role"), _("link / status"), _("device nodes"),
                   expose_cmdline ? _("command line") : _("command"));
        for (size_t i = 0; i < v->n_rows; i++) {
                const struct live_row *w = &v->rows[i];
                buf_printf(out, "<tr class=\"holder%s\" data-pid=\"%d\" data-role=\"", w->ghost_holder ? " ghost-holder" : "",
                           (int)w->pid);
                esc(out, w->role);
                buf_puts(out, "\"><td>");
                if (w->gpu >= 0)
                        buf_printf(out, "%d", w->gpu);
                else
                        esc(out, w->gpus);
                buf_printf(out, "</td><td class=\"num\">%d</td><td>", (int)w->pid);
                esc(out, w->user);
                buf_puts(out, "</td><td>");
                if (w->state > ' ' && w->state < 0x7f && w->state != '<' && w->state != '&')
                        buf_putc(out, w->state);
                buf_puts(out, "</td><td class=\"num\">");
                if (w->listed_bytes >= 0)
                        buf_printf(out, "%lld", (long long)((w->listed_bytes + (1 << 19)) >> 20));
                buf_puts(out, "</td><td class=\"role\">");
                esc(out, w->role);
                /* the processes that share an open file description keep the same contexts */
                if (w->family) {
                        buf_puts(out, " <small class=\"family\">");
                        buf_printf(out, _("family %u"), w->family);
                        buf_puts(out, "</small>");
                }
                buf_puts(out, "</td><td>");
                esc(out, w->link);
                if (w->confidence[0])
                        buf_printf(out, " <i>(%s)</i>", _(w->confidence));
                buf_puts(out, "</td><td><code>");
                esc(out, w->detail);
                buf_puts(out, "</code></td><td><code>");
                esc(out, expose_cmdline && w->cmdline ? w->cmdline : w->comm);
                buf_puts(out, "</code></td></tr>\n");
        }
        buf_puts(out, "</tbody></table>\n");
}

static void xid_table(struct buf *out, const struct live_view *v)
{
        buf_printf(out, "<h2 id=\"xid\">%s</h2>\n", _("Recent NVIDIA kernel events"));
        if (!str_empty(v->kernel_error)) {
                buf_printf(out, "<p class=\"status bad\">%s", _("The kernel log is not read: "));
                esc(out, v->kernel_error);
                buf_puts(out, "</p>\n");
        }
        if (!v->n_xids) {
                buf_printf(out, "<p id=\"xid-none\">%s</p>\n", _("None for these GPUs."));
                return;
        }
        /* i18n: no: names (GPU, Xid); the headers in words are translated */
        buf_printf(out, "<table id=\"xid-table\"><thead><tr><th>%s</th><th>GPU</th><th>Xid</th><th>%s</th>"
                        "<th>%s</th><th>%s</th></tr></thead><tbody>\n",
                   /* TRANSLATORS: the page's kernel event table headers */
                   _("time (UTC)"), _("what"), _("severity"), _("process"));
        for (size_t i = v->n_xids; i-- > 0;) {
                const struct live_xid *x = &v->xids[i];
                char t[40];
                utc(x->time, t, sizeof(t));
                buf_printf(out, "<tr class=\"xid\" data-xid=\"%d\"><td>%s</td><td>", x->xid, t);
                if (x->gpu >= 0)
                        buf_printf(out, "%d", x->gpu);
                buf_puts(out, "</td><td>");
                if (x->xid != XID_NONE)
                        buf_printf(out, "%d", x->xid);
                buf_puts(out, "</td><td>");
                esc(out, x->title);
                buf_puts(out, "</td><td>");
                esc(out, x->severity);
                buf_puts(out, "</td><td>");
                if (x->pid) {
                        buf_printf(out, "%u ", x->pid);
                        esc(out, x->process);
                }
                buf_puts(out, "</td></tr>\n");
        }
        buf_puts(out, "</tbody></table>\n");
}

int page_render(struct buf *out, const struct live_view *v, const struct live_history *h, const struct page_opts *o)
{
        size_t start = out->len;
        unsigned refresh = o->refresh_s >= 1 && o->refresh_s < 86400 ? (unsigned)o->refresh_s : 15;
        buf_printf(out,
                   "<!DOCTYPE html>\n<html lang=\"%s\"><head><meta charset=\"utf-8\">"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                   "<meta http-equiv=\"refresh\" content=\"%u\">"
                   "<title>%s</title><style>%s</style></head>\n<body>\n"
                   "<header><h1>%s</h1>\n",
                   /* TRANSLATORS: the language tag (BCP 47) of this translation, for the page's
                    * <html lang>: "zh-CN" for simplified Chinese */
                   _("en"), refresh, _("ghostvram: GPU memory"), page_style, _("ghostvram · GPU memory, and who holds it"));
        char now[40], at[40];
        utc(o->now, now, sizeof(now));
        bool stale = o->age_s < 0 || o->age_s > o->stale_after_s;
        bool bad = stale || (o->status && o->status[0]);
        buf_printf(out, "<p class=\"status%s\" id=\"status\">", bad ? " bad" : "");
        if (!v || o->age_s < 0) {
                buf_puts(out, _("No data yet"));
        } else {
                utc(v->finished, at, sizeof(at));
                buf_printf(out, stale ? _("Data from %s, %.1f s old at %s (stale)") : _("Data from %s, %.1f s old at %s"),
                           at, o->age_s, now);
        }
        if (o->status && o->status[0]) {
                /* TRANSLATORS: follows the sentence before, with its full stop */
                buf_puts(out, _(". Latest collection: "));
                esc(out, o->status);
        }
        buf_printf(out, _(". This page reloads every %u s."), refresh);
        buf_puts(out, "</p>\n");
        if (v && v->simulated)
                buf_printf(out, "<p class=\"sim\">%s</p>\n", _("SIMULATED HOST (GHOSTVRAM_SIM): not a real driver."));
        if (v && !v->full_visibility)
                buf_printf(out, "<p>%s</p>\n",
                           _("Not everything is visible from here (not root, or another PID namespace); "
                             "see the limits below."));
        buf_puts(out, "</header>\n<main>\n");
        if (v && !v->driver_present) {
                buf_printf(out, "<p class=\"status bad\">%s", _("NVIDIA driver: "));
                esc(out, v->driver);
                buf_puts(out, "</p>\n");
        }
        int e = 0;
        for (size_t i = 0; v && i < v->n_gpus && !e; i++)
                e = gpu_section(out, &v->gpus[i], live_history_gpu(h, v->gpus[i].index), o);
        if (v && !e) {
                holders_table(out, v, o->expose_cmdline);
                xid_table(out, v);
                if (v->n_limits) {
                        buf_printf(out, "<h2>%s</h2>\n<ul>\n", _("Limits of this result"));
                        for (size_t i = 0; i < v->n_limits; i++) {
                                buf_puts(out, "<li>");
                                esc(out, v->limits[i]);
                                buf_puts(out, "</li>\n");
                        }
                        buf_puts(out, "</ul>\n");
                }
        }
        if (!e)
                e = buf_puts(out, "</main>\n<footer>ghostvram serve · <a href=\"/metrics\">/metrics</a> · "
                                  "<a href=\"/healthz\">/healthz</a> · <a href=\"/api/v1/scan\">/api/v1/scan</a> · ");
        if (!e)
                e = buf_printf(out, _("timelines keep the last %u samples a GPU (%zu KiB now)"), LIVE_HISTORY_MAX,
                               h ? (live_history_bytes(h) + 1023) / 1024 : 0);
        if (!e)
                e = buf_puts(out, "</footer>\n</body></html>\n");
        if (e) {
                /* a cut page is worse than none */
                out->len = start;
                if (out->data)
                        out->data[start] = '\0';
        }
        return e;
}
