/* scan rendering: the ledger, verdicts and attributed holders, as JSON and as text. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "collect/shm.h"
#include "model/ledger.h"
#include "render/show.h"
#include "run/scan_run.h"
#include "track/track_scan.h"

/* The scan document: the snapshot's fields plus, per GPU, memory.{listed,foreign,ghost,
 * unattributed}_bytes, verdict, findings[], processes[]. */
json_t *scan_json(const struct scan_result *r, bool with_cmdline);
/* A headline per GPU, the breakdown, the attributed holders with their link, the next step. */
void scan_text(FILE *out, const struct scan_result *r, bool color, bool verbose);
/* scan_text with extra lines for each shown GPU after its NVML lines (hook may be NULL): the
 * allocation ledgers of dead owners (render/track_render.h). */
typedef void (*scan_gpu_text_hook)(FILE *out, unsigned gpu_index, const void *ctx);
void scan_text_hooked(FILE *out, const struct scan_result *r, bool color, bool verbose, scan_gpu_text_hook hook,
                      const void *ctx);
/* 1 if any GPU has a confirmed ghost, else 3 if any GPU could not be inspected, else 0. */
int scan_exit_status(const struct scan_result *r);

/* ---- `ghostvram scan`'s output: the result with what is shown beside it ----------------------
 * ts: the allocation ledgers of dead owners (--ledger-dir), shm: the host's shared memory, said
 * apart so that operators rule it out as GPU memory; either may be NULL. */
/* scan_json with "ledger" in each GPU that has one, "ledger_dir", and "host_shared_memory";
 * NULL on ENOMEM. */
json_t *scan_output_json(const struct scan_result *r, const struct track_scan *ts, const struct shm_report *shm);
/* scan_text with ts's ledgers under each GPU, then shm's note: 0, or -ENOMEM (the note). */
int scan_output_text(FILE *out, const struct scan_result *r, const struct track_scan *ts,
                     const struct shm_report *shm, bool color, bool verbose);

/* `ghostvram scan`'s answer: run's result with b beside it, shown as s says, then, with textfile,
 * DIR/ghostvram.prom written. 0, or -1 when a part could not be made or written (said through
 * say). */
int scan_answer(const struct show *s, const struct scan_once *run, const struct scan_beside *b, const char *textfile,
                void (*say)(const char *msg));
