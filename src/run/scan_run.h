/* scan_run: how a scan is taken, shared by the commands.
 *
 * scan_once: one scan as `ghostvram scan` and `ghostvram check` take it: a sample, and when
 * it shows a ghost or a stuck task, a confirming sample `confirm_ms` later (the driver frees
 * memory with a delay while a job tears down). Bundles are read and written the same way
 * (DIR/ for the first sample, DIR/confirm/ for the second).
 *
 * sampler: the continuous form for `watch` and `serve`. Each cycle takes a sample and builds
 * the ledger with the previous cycle's sample as the confirming one, so a ghost is confirmed
 * when two consecutive cycles see it. With `light`, a cycle looks at NVML first and walks
 * /proc only when it has to (docs/metrics.md, "What serve does each cycle"):
 *
 *   full walk when  - there is no earlier walk, or the GPU count changed;
 *                   - the previous result has a ghost or a stuck task to follow;
 *                   - some GPU's used memory is not charged to listed PIDs beyond the noise
 *                     floor, or NVML gives no per-process bytes;
 *                   - a listed PID was not a live holder in the last walk, or its re-check
 *                     shows it gone, a zombie, exiting, in D state or reused (start time);
 *                   - `full_every` cycles passed since the last walk.
 *   otherwise       the listed PIDs are re-checked one by one in /proc (their stale-owner
 *                   test) and the ledger is built from NVML plus those re-checks.
 *   and before any walk (unless a ghost is followed or the periodic walk is due) the listed
 *   owners alone are looked at (facts_opts.owners_only): when they explain every GPU, the
 *   cycle walks nothing. A healthy host is thus never walked, from the first cycle on.
 *
 * With facts.read_kernel the sampler follows the kernel log instead of reading it whole each
 * cycle: it reads what is there when it starts (history, which the ledger needs: an Xid 79
 * after the driver load), then only what arrived since; each sample's facts get every event
 * (history capped at SAMPLER_KERNEL_MAX) and the sample names the new ones.
 *
 * Nothing here prints. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/sample.h"
#include "model/ledger.h"

/* Sleep for ms, or return false early when the caller wants to stop. NULL: nanosleep. */
typedef bool (*scan_wait_fn)(void *ctx, uint64_t ms);

struct scan_once_opts {
        struct facts_opts facts;        /* the sources (GPU, /proc) */
        struct ledger_opts ledger;
        uint64_t confirm_ms;            /* delay before the confirming sample; 0: one sample */
        const char *from_bundle;        /* read DIR/ and DIR/confirm/ instead of this host */
        const char *save_bundle;        /* record into DIR/ and DIR/confirm/ */
        /* scan, check: no walk when the listed owners explain every GPU (their own fd tables
         * and maps are all that is read; holder_source "owners"); never with a bundle */
        bool light;
        scan_wait_fn wait;
        void *wait_ctx;
};

struct scan_once {
        struct facts *first, *second;   /* second: the confirming sample, or NULL */
        struct scan_result *res;        /* built on the last sample */
        double duration_s;              /* wall time including the confirmation delay */
};

/* Take one scan. Returns 0 and *ret (free with scan_once_free), -EINTR when wait asked to stop,
 * -ENOMEM, or the /proc walk's error when the proc root cannot be read at all. */
int scan_once_run(const struct scan_once_opts *o, struct scan_once **ret);
/* A bundle has a confirming sample (DIR/confirm) when DIR/confirm/nvml.json exists. */
bool scan_bundle_has_confirm(const char *dir);
void scan_once_free(struct scan_once *s);

/* ---- the continuous sampler --------------------------------------------------------------- */

enum scan_error_bits {
        SCAN_ERR_GPU = 1 << 0,          /* the driver is absent or did not answer in time */
        SCAN_ERR_HOST = 1 << 1,         /* the /proc walk failed */
        SCAN_ERR_KERNEL = 1 << 2,       /* the kernel log could not be read */
};

#define SAMPLER_KERNEL_MAX 4096         /* kernel events kept (the oldest quarter goes first) */

struct sampler_opts {
        struct facts_opts facts;        /* read_kernel: follow the log facts.kernel names */
        struct ledger_opts ledger;
        uint64_t confirm_ms;            /* first cycle only: delay before a confirming sample */
        bool light;                     /* allow NVML-only cycles (see above) */
        unsigned full_every;            /* with light: a walk at least every N cycles (0: 40) */
        scan_wait_fn wait;
        void *wait_ctx;
};

struct sample {
        const struct scan_result *res;  /* NULL when the cycle produced nothing; owned by the
                                         * sampler, valid until the next cycle */
        bool full;                      /* this cycle walked /proc */
        bool published;                 /* a result to show: the driver listed every GPU (a GPU
                                         * that did not answer is in it as not inspected, its
                                         * status saying why; errors has SCAN_ERR_GPU then) */
        const char *why;                /* why it walked, or why there is no result ("" none; the
                                         * sampler's, valid until the next cycle) */
        unsigned errors;                /* enum scan_error_bits */
        const struct xid_event *new_events;     /* kernel events that arrived since the last cycle
                                                 * (never the history before the sampler started) */
        size_t n_new_events;
        const char *kernel_error;       /* why the kernel log is not read, or "" */
        double finished;                /* epoch seconds */
        double duration_s;
};

struct sampler;

/* Create a sampler; with facts.read_kernel it opens the kernel log and reads its history now
 * (a log that cannot be opened is reported by every cycle, SCAN_ERR_KERNEL). Returns 0 or
 * -ENOMEM. */
int sampler_new(const struct sampler_opts *o, struct sampler **ret);
/* One cycle. Returns 0 and fills *ret (also when the cycle found errors: see ret->errors and
 * ret->res), -EINTR when wait asked to stop, or -ENOMEM. */
int sampler_cycle(struct sampler *s, struct sample *ret);
void sampler_free(struct sampler *s);

/* The sampler's decisions, without I/O (for tests). Why the cycle with the new NVML sample
 * `gpu` needs a /proc walk, into *why (a heap string replaced, util/strf.h; returns true), or
 * false when re-checking the listed PIDs is enough. `full` is the last sample with a walk,
 * `last` the latest result. */
bool sampler_need_full(const struct gpu_report *gpu, const struct facts *full, const struct scan_result *last,
                       const struct ledger_opts *lo, unsigned cycles_since_full, unsigned full_every,
                       char **why);
/* Is `now` (a fresh look at a listed PID) still the live owner `then` seen by the walk? */
bool sampler_same_live_owner(const struct host_proc *then, const struct host_proc *now);

/* ---- `ghostvram scan` ----------------------------------------------------------------------- */

/* What scan's own options ask of the scan and of what is shown beside it. */
struct scan_cmd_opts {
        uint64_t confirm_ms;            /* before the confirming sample */
        uint64_t floor_mib;             /* the ghost's noise floor, when floor_set */
        bool floor_set;
        bool no_kernel;                 /* do not read the kernel log */
        const char *kmsg;               /* a saved kernel log instead of /dev/kmsg */
        const char *ledger_dir;         /* `ghostvram track`'s ledgers (NULL: none) */
        const char *textfile;           /* DIR of ghostvram.prom (NULL: none) */
};

/* The scan's options: src's with o's. */
struct sources;
void scan_cmd_once_opts(const struct sources *src, const struct scan_cmd_opts *o, struct scan_once_opts *so);

/* What scan shows beside its result: the ledgers of dead owners, the host's shared memory (either
 * NULL: not asked, a bundle, or not made). */
struct track_scan;
struct shm_report;
struct scan_beside {
        struct track_scan *ts;
        struct shm_report *shm;
};
/* Collect it for res; each problem is one sentence given to say. 0, or -ENOMEM (a part could not
 * be made). Free b with scan_beside_free in every case. */
int scan_beside_collect(const struct scan_result *res, const struct sources *src, const char *ledger_dir,
                        struct scan_beside *b, void (*say)(const char *msg));
void scan_beside_free(struct scan_beside *b);
