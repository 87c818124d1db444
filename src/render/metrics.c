#include "render/metrics.h"

#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/parse.h"

const char metrics_content_type_004[] = "text/plain; version=0.0.4; charset=utf-8";
const char metrics_content_type_openmetrics[] = "application/openmetrics-text; version=1.0.0; charset=utf-8";

enum fam_type { FAM_GAUGE, FAM_COUNTER, FAM_INFO };

struct family {
        const char *name;       /* the family name: without _total (counters) or _info (info) */
        enum fam_type type;
        const char *unit;       /* OpenMetrics # UNIT (the name ends in _UNIT), or NULL */
        const char *help;
};

static const char *sample_suffix(enum fam_type t)
{
        return t == FAM_COUNTER ? "_total" : t == FAM_INFO ? "_info" : "";
}

/* The header of a family. 0.0.4 has no counter/info family names apart from the sample name
 * and no info type: it names the family after its samples and calls an info a gauge. */
static int family_header(struct buf *b, const struct family *f, enum metrics_format fmt)
{
        int e;
        if (fmt == METRICS_OPENMETRICS) {
                static const char *const tn[] = { "gauge", "counter", "info" };
                e = buf_printf(b, "# TYPE %s %s\n", f->name, tn[f->type]);
                if (!e && f->unit)
                        e = buf_printf(b, "# UNIT %s %s\n", f->name, f->unit);
                return e ? e : buf_printf(b, "# HELP %s %s\n", f->name, f->help);
        }
        const char *sfx = sample_suffix(f->type);
        e = buf_printf(b, "# HELP %s%s %s\n", f->name, sfx, f->help);
        return e ? e : buf_printf(b, "# TYPE %s%s %s\n", f->name, sfx, f->type == FAM_COUNTER ? "counter" : "gauge");
}

int metrics_label_value(struct buf *out, const char *s, size_t len)
{
        struct buf rep = BUF_INIT(4 * METRICS_LABEL_MAX + 16);
        if (len > 4 * METRICS_LABEL_MAX)
                len = 4 * METRICS_LABEL_MAX;    /* each input byte becomes at most 3 */
        int e = esc_utf8_repair(&rep, s ? s : "", s ? len : 0);
        if (e < 0)
                goto out;
        /* cut on a character boundary */
        size_t n = rep.len;
        if (n > METRICS_LABEL_MAX) {
                n = METRICS_LABEL_MAX;
                while (n > 0 && ((unsigned char)rep.data[n] & 0xc0) == 0x80)
                        n--;
        }
        for (size_t i = 0; i < n && !e; i++) {
                char c = rep.data[i];
                if (c == '\\')
                        e = buf_puts(out, "\\\\");
                else if (c == '"')
                        e = buf_puts(out, "\\\"");
                else if (c == '\n')
                        e = buf_puts(out, "\\n");
                else
                        e = buf_putc(out, c);
        }
out:
        buf_free(&rep);
        return e;
}

/* A label list under construction: {a="x",b="y"} */
struct labels {
        struct buf *b;
        int n;
        int e;
};

static void label(struct labels *l, const char *key, const char *value)
{
        if (l->e)
                return;
        l->e = buf_printf(l->b, "%s%s=\"", l->n++ ? "," : "{", key);
        if (!l->e)
                l->e = metrics_label_value(l->b, value, value ? strlen(value) : 0);
        if (!l->e)
                l->e = buf_putc(l->b, '"');
}

static void label_u(struct labels *l, const char *key, unsigned long long v)
{
        char s[24];
        snprintf(s, sizeof(s), "%llu", v);
        label(l, key, s);
}

static int labels_end(struct labels *l)
{
        if (!l->e && l->n)
                l->e = buf_putc(l->b, '}');
        return l->e;
}

/* A GPU's labels: `gpu` (its index: the label name dcgm-exporter and dashboards use), `uuid`
 * and `pci_bus_id` in the one form of every ghostvram output, "0000:1b:00.0". */
static void gpu_labels(struct labels *l, const struct gpu_info *g)
{
        label_u(l, "gpu", g->index);
        label(l, "uuid", g->uuid);
        label(l, "pci_bus_id", g->pci_bus_id);
}

static int sample_u64(struct buf *b, const struct family *f, struct labels *l, uint64_t v)
{
        (void)f;
        if (labels_end(l))
                return l->e;
        return buf_printf(b, " %llu\n", (unsigned long long)v);
}

static int sample_f(struct buf *b, struct labels *l, double v, int decimals)
{
        if (labels_end(l))
                return l->e;
        return buf_printf(b, " %.*f\n", decimals, v);
}

static int sample_start(struct buf *b, const struct family *f, struct labels *l)
{
        l->b = b;
        l->n = 0;
        l->e = buf_printf(b, "%s%s", f->name, sample_suffix(f->type));
        return l->e;
}

/* ---- the families ---------------------------------------------------------------------- */

static const struct family F_BUILD = { "ghostvram_build", FAM_INFO, NULL,
                                       "Version of ghostvram that produced these metrics." };
static const struct family F_TOTAL = { "ghostvram_gpu_memory_total_bytes", FAM_GAUGE, "bytes",
                                       "Total memory of the GPU (NVML)." };
static const struct family F_RESERVED = { "ghostvram_gpu_memory_reserved_bytes", FAM_GAUGE, "bytes",
                                          "Memory the driver reserves for itself, reported apart from used (NVML v2 memory query)." };
static const struct family F_USED = { "ghostvram_gpu_memory_used_bytes", FAM_GAUGE, "bytes",
                                      "Used memory split by kind: listed (live NVML-listed owners), foreign (owners in other PID namespaces), ghost (unexplained with evidence of a dead owner), unattributed (unexplained while live owners run), freeing (being released by the driver's teardown: never ghost). The kinds sum to NVML's used." };
static const struct family F_FLOOR = { "ghostvram_gpu_noise_floor_bytes", FAM_GAUGE, "bytes",
                                       "A ghost counts only above this floor (the larger of 64 MiB and 1% of the GPU)." };
static const struct family F_CONFIRMED = { "ghostvram_gpu_ghost_confirmed", FAM_GAUGE, NULL,
                                           "1 if the GPU's ghost is above the noise floor in two samples, else 0." };
static const struct family F_VERDICT = { "ghostvram_gpu_verdict", FAM_GAUGE, NULL,
                                         "The GPU's verdict: 1 for the current code, 0 for every other (docs/verdicts.md)." };
static const struct family F_NHOLDERS = { "ghostvram_gpu_attributed_holders", FAM_GAUGE, NULL,
                                          "Processes attributed to the GPU's ghost through a link (all of them, also those beyond the holder_info limit)." };
static const struct family F_HOLDER = { "ghostvram_holder", FAM_INFO, NULL,
                                        "A process attributed to a GPU's ghost, and the link that ties it (at most 64 per GPU)." };
static const struct family F_XID = { "ghostvram_xid_events", FAM_COUNTER, NULL,
                                     "NVRM Xid events read from the kernel log since ghostvram started (history is never replayed)." };
static const struct family F_DURATION = { "ghostvram_scan_duration_seconds", FAM_GAUGE, "seconds",
                                          "How long the latest completed scan took." };
static const struct family F_LAST = { "ghostvram_last_scan_timestamp_seconds", FAM_GAUGE, "seconds",
                                      "Unix time when the latest completed scan finished." };
static const struct family F_SCANS = { "ghostvram_scans", FAM_COUNTER, NULL,
                                       "Scans since start: mode full walked /proc, mode light re-checked only the NVML-listed PIDs." };
static const struct family F_ERRORS = { "ghostvram_scan_errors", FAM_COUNTER, NULL,
                                        "Scans that failed, by source: gpu (driver absent or not answering), host (/proc walk), kernel (kernel log)." };
static const struct family F_AGE = { "ghostvram_data_age_seconds", FAM_GAUGE, "seconds",
                                     "Seconds since the latest completed scan (grows while the driver hangs)." };
static const struct family F_DRIVER_UP = { "ghostvram_driver_up", FAM_GAUGE, NULL,
                                           "1 when the latest collection got answers from NVML (library loaded, kernel module up, no missed deadline), else 0." };

static int driver_up_sample(struct buf *b, bool up, enum metrics_format fmt)
{
        struct labels l;
        int e = family_header(b, &F_DRIVER_UP, fmt);
        if (!e) {
                sample_start(b, &F_DRIVER_UP, &l);
                e = sample_u64(b, &F_DRIVER_UP, &l, up ? 1 : 0);
        }
        return e;
}

static const char *const source_names[METRICS_N_SOURCES] = { "gpu", "host", "kernel" };

static const char *verdict_of(const struct gpu_ledger *l)
{
        return l->n_findings ? l->findings[0].code : "unknown";
}

int metrics_render_gpus(struct buf *b, const struct scan_result *r, unsigned max_holders_per_gpu,
                        enum metrics_format fmt)
{
        const struct gpu_report *gr = r->facts->gpu;
        struct labels l;
        int e;
#define EACH_INSPECTED for (size_t i = 0; i < r->n_gpus && !e; i++) if (r->gpus[i].inspected)
        e = family_header(b, &F_TOTAL, fmt);
        EACH_INSPECTED {
                sample_start(b, &F_TOTAL, &l);
                gpu_labels(&l, &gr->gpus[i]);
                e = sample_u64(b, &F_TOTAL, &l, r->gpus[i].total);
        }
        e = e ? e : family_header(b, &F_RESERVED, fmt);
        EACH_INSPECTED {
                if (!r->gpus[i].reserved_known)
                        continue;
                sample_start(b, &F_RESERVED, &l);
                gpu_labels(&l, &gr->gpus[i]);
                e = sample_u64(b, &F_RESERVED, &l, r->gpus[i].reserved);
        }
        e = e ? e : family_header(b, &F_USED, fmt);
        EACH_INSPECTED {
                const struct gpu_ledger *g = &r->gpus[i];
                const struct { const char *kind; uint64_t v; } kinds[] = {
                        { "listed", g->listed }, { "foreign", g->foreign },
                        { "ghost", g->ghost }, { "unattributed", g->unattributed },
                        { "freeing", g->freeing_bytes },
                };
                for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]) && !e; k++) {
                        sample_start(b, &F_USED, &l);
                        gpu_labels(&l, &gr->gpus[i]);
                        label(&l, "kind", kinds[k].kind);
                        e = sample_u64(b, &F_USED, &l, kinds[k].v);
                }
        }
        e = e ? e : family_header(b, &F_FLOOR, fmt);
        EACH_INSPECTED {
                sample_start(b, &F_FLOOR, &l);
                gpu_labels(&l, &gr->gpus[i]);
                e = sample_u64(b, &F_FLOOR, &l, r->gpus[i].noise_floor);
        }
        e = e ? e : family_header(b, &F_CONFIRMED, fmt);
        EACH_INSPECTED {
                sample_start(b, &F_CONFIRMED, &l);
                gpu_labels(&l, &gr->gpus[i]);
                e = sample_u64(b, &F_CONFIRMED, &l, r->gpus[i].ghost_confirmed);
        }
#undef EACH_INSPECTED
        /* every GPU has a verdict, inspected or not */
        e = e ? e : family_header(b, &F_VERDICT, fmt);
        for (size_t i = 0; i < r->n_gpus && !e; i++) {
                const char *v = verdict_of(&r->gpus[i]);
                for (size_t k = 0; k < VERDICT_COUNT && !e; k++) {
                        sample_start(b, &F_VERDICT, &l);
                        gpu_labels(&l, &gr->gpus[i]);
                        label(&l, "verdict", verdict_listed(k));
                        e = sample_u64(b, &F_VERDICT, &l, strcmp(v, verdict_listed(k)) == 0);
                }
        }
        e = e ? e : family_header(b, &F_NHOLDERS, fmt);
        for (size_t i = 0; i < r->n_gpus && !e; i++) {
                if (!r->gpus[i].inspected)
                        continue;
                sample_start(b, &F_NHOLDERS, &l);
                gpu_labels(&l, &gr->gpus[i]);
                e = sample_u64(b, &F_NHOLDERS, &l, r->gpus[i].n_attr);
        }
        unsigned max = max_holders_per_gpu ? max_holders_per_gpu : METRICS_HOLDERS_PER_GPU;
        e = e ? e : family_header(b, &F_HOLDER, fmt);
        for (size_t i = 0; i < r->n_gpus && !e; i++) {
                const struct gpu_ledger *g = &r->gpus[i];
                for (size_t a = 0; a < g->n_attr && a < max && !e; a++) {
                        const struct host_proc *hp = &r->facts->host->holders[g->attr[a].holder];
                        sample_start(b, &F_HOLDER, &l);
                        gpu_labels(&l, &gr->gpus[i]);
                        label_u(&l, "pid", (unsigned long long)hp->pid);
                        label(&l, "comm", hp->comm);
                        label(&l, "user", hp->user);
                        label(&l, "container_id", hp->container_id);
                        label(&l, "k8s_pod_uid", hp->k8s_pod_uid);
                        label(&l, "slurm_job", hp->slurm_job);
                        label(&l, "attribution", link_name(g->attr[a].link));
                        e = sample_u64(b, &F_HOLDER, &l, 1);
                }
        }
        return e;
}

int metrics_render_build(struct buf *b, enum metrics_format fmt)
{
        struct labels l;
        int e = family_header(b, &F_BUILD, fmt);
        if (!e) {
                sample_start(b, &F_BUILD, &l);
                label(&l, "version", GV_VERSION);
                e = sample_u64(b, &F_BUILD, &l, 1);
        }
        return e;
}

int metrics_render_status(struct buf *b, bool have_scan, double scan_duration_s, double last_scan_time,
                          const struct metrics_counters *c, enum metrics_format fmt)
{
        struct labels l;
        int e = 0;
        if (have_scan) {
                e = family_header(b, &F_DURATION, fmt);
                if (!e) {
                        sample_start(b, &F_DURATION, &l);
                        e = sample_f(b, &l, scan_duration_s, 6);
                }
                e = e ? e : family_header(b, &F_LAST, fmt);
                if (!e) {
                        sample_start(b, &F_LAST, &l);
                        e = sample_f(b, &l, last_scan_time, 3);
                }
        }
        if (!c || e)
                return e;
        e = driver_up_sample(b, c->driver_up, fmt);
        /* the Xid family is there from the start, with a sample per code seen since start */
        e = family_header(b, &F_XID, fmt);
        for (size_t i = 0; i < c->n_xid && !e; i++) {
                sample_start(b, &F_XID, &l);
                label_u(&l, "xid", c->xid[i].xid);
                e = sample_u64(b, &F_XID, &l, c->xid[i].count);
        }
        e = e ? e : family_header(b, &F_SCANS, fmt);
        if (!e) {
                sample_start(b, &F_SCANS, &l);
                label(&l, "mode", "full");
                e = sample_u64(b, &F_SCANS, &l, c->scans_full);
        }
        if (!e) {
                sample_start(b, &F_SCANS, &l);
                label(&l, "mode", "light");
                e = sample_u64(b, &F_SCANS, &l, c->scans_light);
        }
        e = e ? e : family_header(b, &F_ERRORS, fmt);
        for (size_t s = 0; s < METRICS_N_SOURCES && !e; s++) {
                sample_start(b, &F_ERRORS, &l);
                label(&l, "source", source_names[s]);
                e = sample_u64(b, &F_ERRORS, &l, c->scan_errors[s]);
        }
        return e;
}

int metrics_render(struct buf *b, const struct metrics_input *in, enum metrics_format fmt)
{
        int e = metrics_render_build(b, fmt);
        if (!e && in->res)
                e = metrics_render_gpus(b, in->res, in->max_holders_per_gpu, fmt);
        if (!e)
                e = metrics_render_status(b, in->res != NULL, in->scan_duration_s, in->last_scan_time,
                                          in->counters, fmt);
        if (!e && !in->counters && in->res) /* one-shot (scan --textfile): from the result itself */
                e = driver_up_sample(b, metrics_driver_answered(in->res->facts->gpu), fmt);
        return e;
}

int metrics_render_tail(struct buf *b, bool have_data, double data_age_s, enum metrics_format fmt)
{
        int e = 0;
        if (have_data) {
                struct labels l;
                e = family_header(b, &F_AGE, fmt);
                if (!e) {
                        sample_start(b, &F_AGE, &l);
                        e = sample_f(b, &l, data_age_s < 0 ? 0 : data_age_s, 3);
                }
        }
        if (!e && fmt == METRICS_OPENMETRICS)
                e = buf_puts(b, "# EOF\n");
        return e;
}

void metrics_count_xid(struct metrics_counters *c, unsigned xid, uint64_t n)
{
        for (size_t i = 0; i < c->n_xid; i++)
                if (c->xid[i].xid == xid) {
                        c->xid[i].count += n;
                        return;
                }
        if (c->n_xid >= METRICS_MAX_XID)
                return;
        c->xid[c->n_xid].xid = xid;
        c->xid[c->n_xid].count = n;
        c->n_xid++;
}

/* ---- content negotiation ----------------------------------------------------------------- */

/* q of one media range "type/sub;a=b;q=0.5" (1.0 without q; 0 if unparseable). */
static double media_q(const char *p, size_t len)
{
        const char *end = p + len;
        for (const char *s = memchr(p, ';', len); s && s < end; s = memchr(s + 1, ';', (size_t)(end - s - 1))) {
                const char *k = s + 1;
                while (k < end && (*k == ' ' || *k == '\t'))
                        k++;
                if (end - k >= 2 && (k[0] == 'q' || k[0] == 'Q') && k[1] == '=') {
                        char tmp[16];
                        size_t n = 0;
                        for (k += 2; k < end && n < sizeof(tmp) - 1 && *k != ';' && *k != ' '; k++)
                                tmp[n++] = *k;
                        tmp[n] = '\0';
                        char *stop;
                        double q = strtod(tmp, &stop);
                        if (stop == tmp || *stop || q < 0 || q > 1)
                                return 0;
                        return q;
                }
        }
        return 1.0;
}

static bool media_is(const char *p, size_t len, const char *type)
{
        while (len && (*p == ' ' || *p == '\t')) {
                p++;
                len--;
        }
        size_t n = strlen(type);
        if (len < n || strncasecmp(p, type, n) != 0)
                return false;
        return len == n || p[n] == ';' || p[n] == ' ' || p[n] == '\t';
}

bool metrics_accept_openmetrics(const char *accept)
{
        if (!accept)
                return false;
        double q_om = -1, q_text = -1;
        const char *p = accept;
        size_t guard = 0;
        while (*p && guard++ < 64) {
                const char *comma = strchr(p, ',');
                size_t len = comma ? (size_t)(comma - p) : strlen(p);
                double q = media_q(p, len);
                if (media_is(p, len, "application/openmetrics-text")) {
                        if (q > q_om)
                                q_om = q;
                } else if (media_is(p, len, "text/plain")) {
                        if (q > q_text)
                                q_text = q;
                }
                if (!comma)
                        break;
                p = comma + 1;
        }
        return q_om > 0 && q_om >= q_text;
}

int metrics_write_textfile(const char *dir, const struct metrics_input *in)
{
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s/ghostvram.prom", dir);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        struct buf b = BUF_INIT(16u << 20);
        int e = metrics_render(&b, in, METRICS_TEXT_004);
        if (!e)
                e = write_file_atomic(path, b.data ? b.data : "", b.len);
        buf_free(&b);
        return e;
}

bool metrics_driver_answered(const struct gpu_report *g)
{
        return g && g->driver_present && !g->timed_out && strcmp(g->backend, "nvml") == 0;
}
