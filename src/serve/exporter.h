/* exporter: the collecting side of `ghostvram serve`. A thread takes a sample every interval
 * (run/scan_run.h's sampler: NVML first, the /proc walk only when something is unexplained)
 * and renders every body a scrape can ask for right after it: the metrics in both formats and
 * the scan JSON. A scrape takes a reference to the latest bodies under a mutex and never waits
 * for a collection; a hung driver only makes the data age. It also keeps the live history
 * (render/live_view.h: LIVE_HISTORY_MAX points a GPU) that the HTML page draws. */
#pragma once
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/scan_run.h"
#include "render/live_view.h"
#include "render/metrics.h"

struct exporter_opts {
        struct sampler_opts sampler;
        uint64_t interval_ms;           /* between the starts of two collections */
        double stale_after_s;           /* /healthz answers 503 when the data is older */
        bool expose_cmdline;            /* command lines in /api/v1/scan (they can carry secrets) */
        const char *ledger_dir;         /* gpus[].ledger in /api/v1/scan (docs/track.md); NULL: none */
};

/* What a scrape serves: immutable once published, reference-counted. */
struct exporter_bodies {
        atomic_uint refs;
        char *metrics[2];               /* by enum metrics_format, without the scrape-time tail */
        size_t metrics_len[2];
        char *scan_json;                /* NULL until the first complete scan */
        size_t scan_json_len;
        bool have_data;                 /* a complete scan was published */
        double data_mono;               /* monotonic seconds when it finished */
        char status[LIVE_STATUS_MAX];   /* the latest collection's problem, "" if none */
        char *page;                     /* the HTML page (serve/page.h), NULL if it failed */
        size_t page_len;
};

struct exporter;

/* Start the collection thread. Returns 0, -ENOMEM or a pthread error. */
int exporter_start(const struct exporter_opts *o, struct exporter **ret);
/* Stop: wake the thread, let it finish the collection it is in, join it, free everything.
 * Bodies still referenced by scrapes stay valid until their last reference goes. */
void exporter_stop(struct exporter *e);

/* The latest bodies, with a reference the caller drops with exporter_bodies_put. Never NULL
 * after exporter_start (the first bodies exist before the first collection ends). */
struct exporter_bodies *exporter_bodies_get(struct exporter *e);
void exporter_bodies_put(struct exporter_bodies *b);
/* The staleness limit of /healthz. */
double exporter_stale_after(const struct exporter *e);

/* The latest complete scan, rendered once: its GPU series in both formats and its JSON. */
struct exporter_published {
        bool have;
        char *gpus[2];                  /* by enum metrics_format */
        size_t gpus_len[2];
        char *scan_json;
        size_t scan_json_len;
        double duration_s, finished, data_mono;
};

/* Render a complete scan into p (replacing what was there). walk is "full" or "light". Returns
 * 0, -ENOMEM or -E2BIG (p unchanged then). */
int exporter_publish(struct exporter_published *p, const struct scan_result *res, double duration_s,
                     double finished, double data_mono, bool expose_cmdline, const char *walk);
/* The same, with the allocation ledgers of dead owners found in ledger_dir attached to the scan
 * JSON as `scan --ledger-dir` does (NULL: none); proc_root tells the dead from the living. */
int exporter_publish_ledgers(struct exporter_published *p, const struct scan_result *res, double duration_s,
                             double finished, double data_mono, bool expose_cmdline, const char *walk,
                             const char *ledger_dir, const char *proc_root);
void exporter_published_clear(struct exporter_published *p);
/* Bodies from the latest complete scan and the current counters, with one reference; NULL on
 * ENOMEM. status: the latest collection's problem ("" or NULL if none). */
struct exporter_bodies *exporter_compose(const struct exporter_published *p, const struct metrics_counters *c,
                                         const char *status);
/* The scrape-time end of a /metrics body: the data age and, for OpenMetrics, "# EOF". A scrape
 * sends the bodies' metrics[fmt] followed by this (no copy of the big part). Writes at most
 * outlen bytes into out (EXPORTER_TAIL_MAX is enough) and the length into *ret_len; 0, or
 * -E2BIG if outlen is too small. */
#define EXPORTER_TAIL_MAX 512
int exporter_metrics_tail(const struct exporter_bodies *b, enum metrics_format fmt, double now_mono, char *out,
                          size_t outlen, size_t *ret_len);
