/* metrics: the scan as Prometheus metrics, in the text exposition format 0.0.4 and in
 * OpenMetrics 1.0.0. Names, labels and meanings are documented in docs/metrics.md; they are a
 * contract, keep both in step. Every GPU series carries gpu, uuid and pci_bus_id (the PCI bus
 * id as everywhere in ghostvram, 0000:1b:00.0). Label values are repaired
 * to valid UTF-8 and escaped, so a hostile process name cannot break a scrape. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/ledger.h"
#include "util/buf.h"

enum metrics_format {
        METRICS_TEXT_004,       /* text/plain; version=0.0.4 */
        METRICS_OPENMETRICS,    /* application/openmetrics-text; version=1.0.0 */
};

enum metrics_source {
        METRICS_SRC_GPU,        /* the driver did not answer, or is absent */
        METRICS_SRC_HOST,       /* the /proc walk failed */
        METRICS_SRC_KERNEL,     /* the kernel log could not be read */
        METRICS_N_SOURCES,
};

#define METRICS_MAX_XID 64
#define METRICS_HOLDERS_PER_GPU 64
#define METRICS_LABEL_MAX 256   /* bytes of a label value after repair, before escaping */

/* Cumulative figures of a long-running exporter (serve, watch). */
struct metrics_counters {
        bool driver_up;                 /* ghostvram_driver_up: the latest collection got NVML's answers */
        uint64_t scan_errors[METRICS_N_SOURCES];
        uint64_t scans_full, scans_light;
        struct {
                unsigned xid;
                uint64_t count;
        } xid[METRICS_MAX_XID];     /* Xid events seen since start (never history) */
        size_t n_xid;
};

struct metrics_input {
        const struct scan_result *res;          /* NULL: no result yet (only the process series) */
        const struct metrics_counters *counters; /* NULL: no counters (one-shot `scan --textfile`) */
        double scan_duration_s;                 /* of the scan that made res */
        double last_scan_time;                  /* epoch seconds when it finished */
        unsigned max_holders_per_gpu;           /* 0: METRICS_HOLDERS_PER_GPU */
};

/* Content types of the two formats. */
extern const char metrics_content_type_004[];
extern const char metrics_content_type_openmetrics[];

/* The pieces metrics_render puts together, for callers that cache the GPU part (serve):
 * build info; every GPU series of a result; the scan's duration and time and the counters. */
int metrics_render_build(struct buf *out, enum metrics_format fmt);
int metrics_render_gpus(struct buf *out, const struct scan_result *res, unsigned max_holders_per_gpu,
                        enum metrics_format fmt);
int metrics_render_status(struct buf *out, bool have_scan, double scan_duration_s, double last_scan_time,
                          const struct metrics_counters *c, enum metrics_format fmt);

/* Append the metrics of `in` to out (without ghostvram_data_age_seconds and without the
 * OpenMetrics "# EOF": metrics_render_tail adds them at scrape time). Returns 0 or a negative
 * errno of the buffer (-E2BIG at its cap). */
int metrics_render(struct buf *out, const struct metrics_input *in, enum metrics_format fmt);

/* Append ghostvram_data_age_seconds (only when have_data) and, for OpenMetrics, "# EOF". */
int metrics_render_tail(struct buf *out, bool have_data, double data_age_s, enum metrics_format fmt);

/* Append s (len bytes, any content) as a label value: invalid UTF-8 and NUL repaired to
 * U+FFFD, cut at METRICS_LABEL_MAX bytes on a character boundary, then \\ \" \n escaped. */
int metrics_label_value(struct buf *out, const char *s, size_t len);

/* Does an HTTP Accept header ask for OpenMetrics? True when application/openmetrics-text is
 * acceptable (q > 0) and preferred at least as much as text/plain. */
bool metrics_accept_openmetrics(const char *accept);

/* Did this collection get answers from NVML (loaded, initialised, no missed deadline)? The
 * value of ghostvram_driver_up. A bundle is not a driver: false. */
struct gpu_report;
bool metrics_driver_answered(const struct gpu_report *g);

/* Add n Xid events of code xid to the counters (capped at METRICS_MAX_XID codes). */
void metrics_count_xid(struct metrics_counters *c, unsigned xid, uint64_t n);

/* Write the metrics of `in` (text format 0.0.4, no sample timestamps, no data age: node_exporter
 * reports the file's mtime) to DIR/ghostvram.prom for node_exporter's textfile collector,
 * atomically: a temporary name that does not end in .prom, then rename. Returns 0 or a negative
 * errno. */
int metrics_write_textfile(const char *dir, const struct metrics_input *in);
