#include "serve/exporter.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "render/live_view.h"
#include "render/scan_render.h"
#include "serve/page.h"
#include "render/track_render.h"
#include "track/track_scan.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/i18n.h"
#include "util/timefmt.h"

#define BODY_CAP (16u << 20)    /* far above 1024 GPUs with 64 holders each */

struct exporter {
        struct exporter_opts o;
        pthread_t thread;
        pthread_mutex_t m;
        pthread_cond_t c;               /* monotonic clock; signalled on stop */
        bool stop;
        struct exporter_bodies *cur;    /* guarded by m */
        struct sampler *sampler;
        /* the collection thread's own */
        struct metrics_counters counters;
        struct exporter_published pub;
        struct live_view *view;         /* the latest complete scan, for the page */
        struct live_history hist;
        double started;                 /* epoch seconds: the timelines start no earlier */
};

/* ---- bodies --------------------------------------------------------------------------------- */

void exporter_bodies_put(struct exporter_bodies *b)
{
        if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
                return;
        free(b->metrics[0]);
        free(b->metrics[1]);
        free(b->scan_json);
        free(b->page);
        free(b);
}

struct exporter_bodies *exporter_bodies_get(struct exporter *e)
{
        pthread_mutex_lock(&e->m);
        struct exporter_bodies *b = e->cur;
        atomic_fetch_add(&b->refs, 1);
        pthread_mutex_unlock(&e->m);
        return b;
}

double exporter_stale_after(const struct exporter *e)
{
        return e->o.stale_after_s;
}

void exporter_published_clear(struct exporter_published *p)
{
        free(p->gpus[0]);
        free(p->gpus[1]);
        free(p->scan_json);
        memset(p, 0, sizeof(*p));
}

int exporter_publish(struct exporter_published *p, const struct scan_result *res, double duration_s,
                     double finished, double data_mono, bool expose_cmdline, const char *walk)
{
        return exporter_publish_ledgers(p, res, duration_s, finished, data_mono, expose_cmdline, walk, NULL, NULL);
}

int exporter_publish_ledgers(struct exporter_published *p, const struct scan_result *res, double duration_s,
                             double finished, double data_mono, bool expose_cmdline, const char *walk,
                             const char *ledger_dir, const char *proc_root)
{
        struct buf g[2] = { BUF_INIT(BODY_CAP), BUF_INIT(BODY_CAP) };
        char *json = NULL;
        int e = 0;
        for (int f = 0; f < 2 && !e; f++)
                e = metrics_render_gpus(&g[f], res, 0, (enum metrics_format)f);
        if (!e) {
                json_t *doc = scan_json(res, expose_cmdline);
                struct track_scan *ts = doc && ledger_dir ? calloc(1, sizeof(*ts)) : NULL;
                if (ts && track_scan_collect(res, ledger_dir, proc_root ? proc_root : "/proc", ts) == 0)
                        track_scan_attach_json(doc, ts);
                track_scan_free(ts);
                free(ts);
                if (doc) {
                        json_object_set_new(doc, "walk", json_string(walk));
                        json_object_set_new(doc, "scan_duration_seconds", json_real(duration_s));
                        json = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
                        json_decref(doc);
                }
                e = json ? 0 : -ENOMEM;
        }
        if (e) {
                buf_free(&g[0]);
                buf_free(&g[1]);
                free(json);
                return e;
        }
        exporter_published_clear(p);
        p->have = true;
        for (int f = 0; f < 2; f++) {
                p->gpus_len[f] = g[f].len;
                p->gpus[f] = buf_steal(&g[f]);
        }
        p->scan_json = json;
        p->scan_json_len = strlen(json);
        p->duration_s = duration_s;
        p->finished = finished;
        p->data_mono = data_mono;
        return 0;
}

struct exporter_bodies *exporter_compose(const struct exporter_published *p, const struct metrics_counters *c,
                                         const char *status)
{
        struct exporter_bodies *b = calloc(1, sizeof(*b));
        if (!b)
                return NULL;
        atomic_init(&b->refs, 1);
        int e = 0;
        for (int f = 0; f < 2 && !e; f++) {
                struct buf m = BUF_INIT(BODY_CAP);
                e = metrics_render_build(&m, (enum metrics_format)f);
                if (!e && p->have)
                        e = buf_append(&m, p->gpus[f], p->gpus_len[f]);
                if (!e)
                        e = metrics_render_status(&m, p->have, p->duration_s, p->finished, c, (enum metrics_format)f);
                b->metrics_len[f] = m.len;
                b->metrics[f] = e ? NULL : buf_steal(&m);
                buf_free(&m);
                if (!e && !b->metrics[f])
                        e = -ENOMEM;
        }
        if (!e && p->have) {
                b->scan_json = malloc(p->scan_json_len + 2);
                if (b->scan_json) {
                        memcpy(b->scan_json, p->scan_json, p->scan_json_len);
                        b->scan_json[p->scan_json_len] = '\n';
                        b->scan_json[p->scan_json_len + 1] = '\0';
                        b->scan_json_len = p->scan_json_len + 1;
                } else {
                        e = -ENOMEM;
                }
        }
        if (e) {
                exporter_bodies_put(b);
                return NULL;
        }
        b->have_data = p->have;
        b->data_mono = p->data_mono;
        snprintf(b->status, sizeof(b->status), "%s", status ? status : "");
        return b;
}

int exporter_metrics_tail(const struct exporter_bodies *b, enum metrics_format fmt, double now_mono, char *out,
                          size_t outlen, size_t *ret_len)
{
        struct buf tail = BUF_INIT(outlen ? outlen - 1 : 0);
        int e = outlen ? metrics_render_tail(&tail, b->have_data, now_mono - b->data_mono, fmt) : -E2BIG;
        if (!e) {
                memcpy(out, buf_str(&tail), tail.len + 1);
                *ret_len = tail.len;
        }
        buf_free(&tail);
        return e;
}

/* ---- the collection thread ----------------------------------------------------------------- */

/* Sleep until ms passed or stop; false on stop. */
static bool exporter_wait(void *ctx, uint64_t ms)
{
        struct exporter *e = ctx;
        return monotonic_wait_unless(&e->m, &e->c, &e->stop, ms);
}

static void exporter_swap(struct exporter *e, struct exporter_bodies *b)
{
        pthread_mutex_lock(&e->m);
        struct exporter_bodies *old = e->cur;
        e->cur = b;
        pthread_mutex_unlock(&e->m);
        exporter_bodies_put(old);
}

/* After a cycle: keep the view of a complete result and add a point to the history (a gap
 * when the cycle has none). */
static void exporter_follow(struct exporter *e, const struct sample *smp)
{
        if (smp->published && smp->res) {
                struct live_view *v = NULL;
                if (live_view_build(smp->res, e->o.expose_cmdline, smp->full, smp->duration_s, &v) == 0) {
                        v->finished = smp->finished;
                        live_view_free(e->view);
                        e->view = v;
                }
                live_history_add(&e->hist, v, smp->finished);
        } else {
                live_history_add(&e->hist, NULL, smp->finished);
        }
}

static void exporter_page(struct exporter *e, struct exporter_bodies *b)
{
        struct buf page = BUF_INIT(BODY_CAP);
        struct page_opts po = {
                .refresh_s = (double)e->o.interval_ms / 1000.0,
                .expose_cmdline = e->o.expose_cmdline,
                .now = wall_clock_now(),
                .age_s = b->have_data ? monotonic_s() - b->data_mono : -1,
                .stale_after_s = e->o.stale_after_s,
                .status = b->status,
                .started = e->started,
        };
        if (page_render(&page, b->have_data ? e->view : NULL, &e->hist, &po) == 0) {
                b->page_len = page.len;
                b->page = buf_steal(&page);
        }
        buf_free(&page);
}

static void *exporter_main(void *arg)
{
        struct exporter *e = arg;
        /* what programs read is English in every language: the metrics, /api/v1/scan, /healthz's
         * status, and the findings the scan JSON carries (the page shows them too); only the
         * page's own view and text are in the reader's language (docs/i18n.md) */
        i18n_thread_off(true);
        for (;;) {
                unsigned long long t0 = monotonic_ms();
                struct sample smp;
                char status[LIVE_STATUS_MAX];
                int r = sampler_cycle(e->sampler, &smp);
                if (r == -EINTR)
                        break;
                /* ghostvram_driver_up: NVML answered this cycle (a cycle skipped by the hung
                 * driver guard, or without a driver, did not) */
                e->counters.driver_up = r >= 0 && smp.res && !(smp.errors & SCAN_ERR_GPU) &&
                                        metrics_driver_answered(smp.res->facts->gpu);
                if (r < 0) {
                        snprintf(status, sizeof(status), "collection failed: %s", strerror(-r));
                } else {
                        if (smp.res && smp.full)
                                e->counters.scans_full++;
                        else if (smp.res)
                                e->counters.scans_light++;
                        if (smp.errors & SCAN_ERR_GPU)
                                e->counters.scan_errors[METRICS_SRC_GPU]++;
                        if (smp.errors & SCAN_ERR_HOST)
                                e->counters.scan_errors[METRICS_SRC_HOST]++;
                        if (smp.errors & SCAN_ERR_KERNEL)
                                e->counters.scan_errors[METRICS_SRC_KERNEL]++;
                        /* Xid events that arrived since the last cycle: never the history */
                        for (size_t i = 0; i < smp.n_new_events; i++)
                                if (smp.new_events[i].xid != XID_NONE)
                                        metrics_count_xid(&e->counters, (unsigned)smp.new_events[i].xid, 1);
                        if (smp.published && smp.res)
                                exporter_publish_ledgers(&e->pub, smp.res, smp.duration_s, smp.finished, monotonic_s(),
                                                         e->o.expose_cmdline, smp.full ? "full" : "light",
                                                         e->o.ledger_dir, e->o.sampler.facts.host.proc_root);
                        live_sample_status(&smp, status, sizeof(status));
                        i18n_thread_off(false);
                        exporter_follow(e, &smp);
                        i18n_thread_off(true);
                }
                struct exporter_bodies *b = exporter_compose(&e->pub, &e->counters, status);
                if (b) {
                        i18n_thread_off(false);
                        exporter_page(e, b);
                        i18n_thread_off(true);
                        exporter_swap(e, b);
                }
                /* a cycle's scratch (samples, walks, rendered bodies) is freed by now; hand the
                 * free pages of every malloc arena back, or each thread's arena keeps its
                 * high-water mark resident for the daemon's lifetime (bench/README.md, chaos) */
                malloc_trim(0);
                unsigned long long spent = monotonic_ms() - t0;
                uint64_t left = spent < e->o.interval_ms ? e->o.interval_ms - spent : 0;
                if (!exporter_wait(e, left))
                        break;
        }
        return NULL;
}

int exporter_start(const struct exporter_opts *o, struct exporter **ret)
{
        struct exporter *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->o = *o;
        e->started = wall_clock_now();
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&e->c, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&e->m, NULL);
        struct sampler_opts so = o->sampler;
        so.wait = exporter_wait;
        so.wait_ctx = e;
        int r = sampler_new(&so, &e->sampler);
        if (r == 0) {
                e->cur = exporter_compose(&e->pub, &e->counters, "starting: the first collection is running");
                r = e->cur ? 0 : -ENOMEM;
                if (e->cur)
                        exporter_page(e, e->cur);
        }
        if (r == 0) {
                r = -pthread_create(&e->thread, NULL, exporter_main, e);
                if (r == 0) {
                        *ret = e;
                        return 0;
                }
        }
        exporter_bodies_put(e->cur);
        sampler_free(e->sampler);
        pthread_cond_destroy(&e->c);
        pthread_mutex_destroy(&e->m);
        free(e);
        return r;
}

void exporter_stop(struct exporter *e)
{
        if (!e)
                return;
        pthread_mutex_lock(&e->m);
        e->stop = true;
        pthread_cond_broadcast(&e->c);
        pthread_mutex_unlock(&e->m);
        pthread_join(e->thread, NULL);
        sampler_free(e->sampler);
        exporter_published_clear(&e->pub);
        live_view_free(e->view);
        live_history_free(&e->hist);
        exporter_bodies_put(e->cur);
        pthread_cond_destroy(&e->c);
        pthread_mutex_destroy(&e->m);
        free(e);
}
