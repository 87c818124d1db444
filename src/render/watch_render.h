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
};
/* o's emit, warn, heal and sampled, with io as their ctx. */
void watch_io_attach(struct watch_io *io, struct watch_opts *o);
/* A sample into the counters: scans (full or light), driver_up, the GPU's and the host's
 * errors (a watch counts no kernel errors and no Xids). */
void watch_count_sample(struct metrics_counters *c, const struct sample *s);
/* After each cycle (watch_opts.sampled, ctx a struct watch_io): the counters, then with a
 * textfile and a published result, the metrics written (a failure said on err). */
void watch_sampled(void *ctx, const struct sample *s);

/* `ghostvram watch` on src's sources (watch_sampler_opts: floor_mib, no_kernel): io attached to o
 * (its lines as s says), the stop signals taken, the first lines (s's banner, then
 * watch_banner_print), then watch_run. 0 once stopped after a good sample; -1 with err saying why
 * when it could not start, failed, or no sample succeeded. */
int watch_execute(const struct show *s, struct watch_opts *o, struct watch_io *io, const struct sources *src,
                  uint64_t floor_mib, bool no_kernel, char *err, size_t errlen);
