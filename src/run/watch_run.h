/* watch_run: the use case of `ghostvram watch`, without argv and without printing.
 *
 * Each cycle takes a sample (the continuous sampler of run/scan_run.h, or o->next in tests)
 * and turns it into lines handed to o->emit:
 *   state   a GPU's verdict or ghost (MiB) changed, or the GPU is seen for the first time;
 *   alert   a GPU's confirmed ghost stayed above the threshold for o->for_ms (then the hook);
 *   clear   an alerting GPU's confirmed ghost is not above it any more (then the hook);
 *   reclaim with o->heal_enabled, while an alert stands: o->heal ran reclaim on the GPU, at
 *           most once per GPU per o->reclaim_every_ms and WATCH_RECLAIMS_PER_HOUR in all;
 *   xid     a new NVIDIA kernel event (never the history from before the run);
 *   error   the sample had errors (once, until they clear: "scan error cleared").
 * A GPU that did not answer keeps its alert as it was (no clear for a GPU that hangs).
 *
 * The hook (o->exec) runs as '/bin/sh -c EXEC' in its own process group with the finding in
 * its environment (GHOSTVRAM_*), stopped by SIGTERM then SIGKILL after o->exec_timeout_ms. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/scan_run.h"
#include "run/sources.h"
#include "util/buf.h"

#define WATCH_MAX_GPUS 1024
#define WATCH_RECLAIMS_PER_HOUR 6

struct watch_line {
        const char *event;              /* state, alert, clear, reclaim, xid, error */
        const struct gpu_info *g;       /* the GPU (NULL for xid and error) */
        const struct gpu_ledger *l;     /* its ledger (NULL for xid and error) */
        const struct xid_event *xid;    /* xid only */
        const char *text;               /* the line, in English (a log line, as the JSON's) */
};

struct watch_opts {
        uint64_t interval_ms;           /* between the starts of two cycles */
        uint64_t threshold_bytes;       /* alert above this confirmed ghost */
        uint64_t for_ms;                /* ...held this long */
        uint64_t count;                 /* stop after this many cycles; 0: until wait says stop */
        int only_gpu;                   /* -1: every GPU */
        const char *exec;               /* the hook, or NULL */
        uint64_t exec_timeout_ms;
        bool heal_enabled;              /* --reclaim */
        uint64_t reclaim_every_ms;

        /* one line to show (never NULL) */
        void (*emit)(void *ctx, const struct watch_line *line);
        /* a problem of the hook's or the caller's (the hook timed out, exited non-zero) */
        void (*warn)(void *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
        /* run `ghostvram reclaim --gpu GPU --yes --json`, its JSON document into *out; returns
         * its exit status (needed with heal_enabled) */
        int (*heal)(void *ctx, unsigned gpu, struct buf *out);
        /* after each cycle with a sample (metrics, counters); may be NULL */
        void (*sampled)(void *ctx, const struct sample *s);
        void (*started)(void *ctx);     /* watch_execute: once, before the first sample (NULL: none) */
        /* the next sample; NULL: the sampler's cycle. Returns as sampler_cycle. */
        int (*next)(void *ctx, struct sample *s);
        /* sleep ms, false when asked to stop; NULL: nanosleep */
        bool (*wait)(void *ctx, uint64_t ms);
        void *ctx;
};

struct watch_result {
        bool any_ok;                    /* a sample with the driver's and /proc's answers */
        char last_error[600];           /* the last "scan error: ..." line, or "" */
        uint64_t cycles;
        unsigned heals;                 /* reclaims run */
};

/* Run until o->count cycles, a stop (wait or the sampler: -EINTR) or an error. smp is the
 * sampler (NULL with o->next). Returns 0 (stopped), or the sampler's negative errno. */
int watch_run(const struct watch_opts *o, struct sampler *smp, struct watch_result *ret);

/* Where the heal reads from: the watch's own sources. */
struct watch_heal_src {
        const char *proc_root;          /* passed as --proc when it is not "/proc" */
        const char *nvml_lib;           /* passed as --nvml-lib; NULL: none (a simulated host's
                                         * library is found through GHOSTVRAM_SIM) */
};
/* The heal's argv (NULL-terminated in args): `ghostvram reclaim --gpu INDEX --yes --json`, then
 * --proc and --nvml-lib as src says; gpu holds INDEX's digits. Returns the number of arguments. */
size_t watch_heal_args(const struct watch_heal_src *src, unsigned index, char gpu[16], const char *args[16]);
/* The heal: watch_heal_args run as a child of this binary (a fresh plan with all of reclaim's
 * safety rules), its JSON document into *out. Returns its exit status (spawn_self). */
int watch_heal_spawn(const struct watch_heal_src *src, unsigned index, struct buf *out);

/* `ghostvram watch` on src's sources (watch_sampler_opts: floor_mib, no_kernel): the stop
 * signals taken, o->started, then watch_run. 0 once stopped after a good sample; -1 with err
 * saying why when it could not start, failed, or no sample succeeded. */
int watch_execute(struct watch_opts *o, const struct sources *src, uint64_t floor_mib, bool no_kernel, char *err,
                  size_t errlen);

/* The sampler of a watch on src: the first sample confirmed by a second one an interval later,
 * as every later one is; light cycles; the ghost's noise floor floor_mib; the kernel log followed
 * unless no_kernel; o->wait between samples. */
void watch_sampler_opts(const struct sources *src, const struct watch_opts *o, uint64_t floor_mib, bool no_kernel,
                        struct sampler_opts *sp);
/* The heal reads from src's /proc, and its library unless simulated (found through GHOSTVRAM_SIM). */
struct watch_heal_src watch_heal_src_of(const struct sources *src);
