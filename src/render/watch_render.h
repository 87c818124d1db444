/* watch_render: what `ghostvram watch` prints of run/watch_run's lines: a stamped text line, or
 * one JSON object a line with --json (docs/json.md), and the line it starts with. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "render/metrics.h"
#include "render/show.h"
#include "run/watch_run.h"

/* One line of wl at time now (epoch seconds) to out, flushed: "RFC3339 TEXT", or with json an
 * object with schema_version, time, event, the GPU's index, uuid, pci_bus_id, verdict,
 * ghost_bytes, ghost_confirmed and pids (when wl names a GPU), kernel_event and message. */
void watch_line_print(FILE *out, const struct watch_line *wl, bool json, double now);

/* The first line of a text watch, flushed: the interval, the alert's threshold and hold, and
 * whether --exec runs. */
void watch_banner_print(FILE *out, uint64_t interval_ms, uint64_t threshold_bytes, uint64_t for_ms, bool exec);

/* What a watch does beside its lines, as run/watch_run's callbacks (watch_io_attach): each line
 * printed (watch_line_print to stdout), a warning said on err, the heal run
 * (watch_heal_spawn), and after each sample the metrics' counters and --textfile. */
struct watch_io {
        bool json;
        const char *textfile;           /* --textfile DIR: DIR/ghostvram.prom after each published
                                         * sample; NULL: none */
        struct watch_heal_src heal;
        FILE *err;                      /* "ghostvram watch: ..." lines (NULL: stderr) */
        struct metrics_counters counters;
        const struct show *show;        /* watch_io_show's */
        const struct watch_opts *o;
};
/* o's emit, warn, heal and sampled, with io as their ctx. */
void watch_io_attach(struct watch_io *io, struct watch_opts *o);
/* A sample into the counters: scans (full or light), driver_up, the GPU's and the host's
 * errors (a watch counts no kernel errors and no Xids). */
void watch_count_sample(struct metrics_counters *c, const struct sample *s);
/* After each cycle (watch_opts.sampled, ctx a struct watch_io): the counters, then with a
 * textfile and a published result, the metrics written (a failure said on err). */
void watch_sampled(void *ctx, const struct sample *s);

/* io as o's callbacks (watch_io_attach), its lines and first lines (o->started: s's banner, then
 * watch_banner_print) as s says, the heal with src's /proc and NVML library. s and o must outlive
 * the watch. */
void watch_io_show(struct watch_io *io, struct watch_opts *o, const struct show *s, const struct sources *src);
