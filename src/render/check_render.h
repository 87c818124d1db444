/* check_render: the scan as a monitoring plugin's output (Monitoring Plugins Development
 * Guidelines, https://www.monitoring-plugins.org/doc/guidelines.html): one status line
 *
 *   GHOSTVRAM CRITICAL - GPU 1: 2048 MiB ghost (orphaned-holders, PIDs 31301 31302); 1 GPU ok | perfdata
 *
 * then, for each GPU that is not OK, a long-output line with the next step. Performance data
 * is in bytes ('B'), one set per GPU: 'gpuN_ghost'=VALUE;WARN;CRIT;0;TOTAL and the other parts
 * of the ledger. Thresholds are ranges (util/range.h) on the confirmed ghost in MiB. */
#pragma once
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "model/ledger.h"
#include "run/check_run.h"
#include "util/buf.h"
#include "util/range.h"

enum plugin_state {
        PLUGIN_OK = 0,
        PLUGIN_WARNING = 1,
        PLUGIN_CRITICAL = 2,
        PLUGIN_UNKNOWN = 3,
};

struct check_thresholds {
        struct range warn, crit;
        bool have_warn, have_crit;
};

#define CHECK_DEFAULT_WARN "0"           /* any confirmed ghost */
#define CHECK_DEFAULT_CRIT "1024"       /* a ghost above 1 GiB */
/* WARNING on CHECK_DEFAULT_WARN, CRITICAL on CHECK_DEFAULT_CRIT. */
void check_thresholds_default(struct check_thresholds *t);

const char *plugin_state_name(enum plugin_state s);
/* The worse of two states: CRITICAL > WARNING > UNKNOWN > OK. */
enum plugin_state plugin_state_worse(enum plugin_state a, enum plugin_state b);

/* The ghost a threshold is compared with, in MiB: the ledger's ghost if it is confirmed
 * (above the noise floor in two samples), else 0. */
double check_ghost_mib(const struct gpu_ledger *l);

/* State of one GPU: CRITICAL if lost or the critical range alerts, WARNING if the warning range
 * alerts or a task is stuck in the driver, UNKNOWN if it could not be inspected, else OK. */
enum plugin_state check_gpu_state(const struct gpu_ledger *l, const struct check_thresholds *t);

/* Append the whole plugin output (status line with performance data, long output) to out and
 * return the state through *ret_state. Only r->only_gpu counts when it is set. Returns 0 or a
 * negative errno of the buffer. */
int check_render(struct buf *out, const struct scan_result *r, const struct check_thresholds *t,
                 enum plugin_state *ret_state);

/* The UNKNOWN output when no result came (timeout, no driver): "GHOSTVRAM UNKNOWN - why". */
int check_render_unknown(struct buf *out, const char *why);

/* check_render to out: 0 with the state in *ret_state, or a negative errno of the buffer
 * (nothing written). */
int check_print(FILE *out, const struct scan_result *r, const struct check_thresholds *t,
                enum plugin_state *ret_state);
/* check_render_unknown to out. */
void check_print_unknown(FILE *out, const char *why);
/* check_print_unknown of the sentence fmt makes (cut at 511 bytes): PLUGIN_UNKNOWN. */
int check_print_unknownf(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int check_print_unknownv(FILE *out, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* A threshold's ends in MiB made whole bytes, as the performance data gives them (uint64):
 * each rounded to a byte. 0, or -ERANGE for an end of 2^64 bytes or more, or a non-zero one
 * under half a byte. */
int check_range_in_bytes(struct range *r);

/* The output of a finished scan sr to out: only the GPU o names counts (a UUID or PCI bus id
 * looked up in sr's GPUs; sr->only_gpu set), its status line and the plugin state; an UNKNOWN
 * line when sr's host has no such GPU or the output is too large. */
int check_report(FILE *out, struct scan_result *sr, const struct check_run_opts *o, const struct check_thresholds *t);
