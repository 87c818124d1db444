/* watch_render: what `ghostvram watch` prints of run/watch_run's lines: a stamped text line, or
 * one JSON object a line with --json (docs/json.md), and the line it starts with. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "run/watch_run.h"

/* One line of wl at time now (epoch seconds) to out, flushed: "RFC3339 TEXT", or with json an
 * object with schema_version, time, event, the GPU's index, uuid, pci_bus_id, verdict,
 * ghost_bytes, ghost_confirmed and pids (when wl names a GPU), kernel_event and message. */
void watch_line_print(FILE *out, const struct watch_line *wl, bool json, double now);

/* The first line of a text watch, flushed: the interval, the alert's threshold and hold, and
 * whether --exec runs. */
void watch_banner_print(FILE *out, uint64_t interval_ms, uint64_t threshold_bytes, uint64_t for_ms, bool exec);
