/* track_render: allocation ledgers (`ghostvram track`, `scan --ledger-dir`) as JSON and text. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "track/ledger_read.h"
#include "track/track_scan.h"
#include "run/track_run.h"

#define TRACK_TOP_SITES 5

/* [{ "bytes", "allocations", "api", "via": "symbol"|"cuGetProcAddress", "frames": ["obj+0xOFF", ...] }]
 * for the first max sites of s. */
json_t *track_sites_json(const struct track_ledger *l, const struct track_summary *s, size_t max);
/* "SITE (X MiB in K)" for the first max sites, separated by "; ", the caller frame first and
 * at most `depth` frames each ("a ← b"). */
void track_sites_text(FILE *out, const struct track_ledger *l, const struct track_summary *s, size_t max,
                      unsigned depth);
/* gpus[].ledger of a scan: { "owner_pid", "outstanding_bytes", "allocations", "top_sites",
 * "file", "skipped_bytes", "torn_tail_bytes" } for GPU index (the first dead owner with a
 * ledger; NULL when none). */
json_t *track_scan_gpu_json(const struct track_scan *ts, unsigned gpu_index);
/* Add "ledger" to each element of a scan document's "gpus" that has one, and "ledger_dir". */
void track_scan_attach_json(json_t *doc, const struct track_scan *ts);
/* "  ledger: dead PID N still had X MiB in K allocations; top sites: ..." for GPU index. */
void track_scan_gpu_text(FILE *out, const struct track_scan *ts, unsigned gpu_index);
/* scan_text's per-GPU hook (ctx: a struct track_scan). */
void track_scan_text_hook(FILE *out, unsigned gpu_index, const void *ctx);

/* `ghostvram track`'s report of its session: CMD, how it ended, each tracked process with
 * what it still held (and where it was allocated), the leak summary. */
json_t *track_report_json(char *const *cmd, const struct track_end *end, const char *dir,
                          const struct track_report_proc *rp, size_t n);
void track_report_text(FILE *out, const struct track_end *end, const char *dir, const struct track_report_proc *rp,
                       size_t n);
/* The report to out: with json the document of track_report_json, indented, else
 * track_report_text. */
void track_report_print(FILE *out, bool json, char *const *cmd, const struct track_end *end, const char *dir,
                        const struct track_report_proc *rp, size_t n);
/* `ghostvram track --show FILE`: the ledger's header, counts and outstanding allocations. */
json_t *track_ledger_json(const char *path, const struct track_ledger *l, const struct track_summary *s);

/* ---- the command's runs ----------------------------------------------------------------------- */

/* `ghostvram track --show FILE`: the ledger as JSON through print_json; why it is none said
 * through say. 0, -ENOMEM (nothing read), or -1 (not a ledger, unreadable). */
int track_show_print(const char *path, int (*print_json)(json_t *doc), void (*say)(const char *msg));
/* track_execute's report (run/track_run.h): track_report_print as text, or JSON when *ctx (a
 * bool) is true. */
void track_report_cb(void *ctx, FILE *out, char *const *cmd, const struct track_prep *prep,
                     const struct track_result *res);
