/* xid_run: the use case of `ghostvram xid` (docs/xid.md), without argv and without printing:
 * the kernel log opened, its NVIDIA events read, tied to this host's GPU indexes, filtered
 * (--since, --gpu, -v) and counted (xid_dump_run), or followed as they come, with NVML's
 * critical-error events merged in (xid_follow_run). Messages for an error are written to err;
 * what is shown is the caller's (render/xid_render.h). */
#pragma once
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "collect/gpu.h"
#include "collect/kernel.h"
#include "collect/xid.h"
#include "run/sources.h"

/* --gpu: an index, a PCI bus id, or a UUID (looked up to an index by the caller before a run). */
struct xid_gpu_filter {
        bool active;
        bool by_index;
        unsigned index;
        char pci[16];
        const char *uuid;
};

/* --gpu's value into *g (active): an index 0..1023, a PCI bus id (0000:3b:00.0), or a GPU- or
 * MIG- UUID (g->uuid points into s: looked up later). 0, or -EINVAL (none of these). */
int xid_gpu_filter_parse(const char *s, struct xid_gpu_filter *g);

struct xid_run_opts {
        const char *kmsg_path;          /* a saved log ("-": stdin); NULL: /dev/kmsg or the sim's */
        const char *sim_dir;            /* GHOSTVRAM_SIM's DIR, NULL when not simulated */
        const char *proc_root;          /* for the boot time (DIR/stat); NULL: /proc */
        bool follow;                    /* the reader is opened to follow */
        bool this_boot;                 /* a saved log of this boot: date its stamps, name GPUs */
        bool verbose;                   /* also the other NVIDIA lines */
        bool since_set;
        double since;                   /* epoch seconds */
        struct xid_gpu_filter gpu;
        struct gpu_opts gpu_opts;       /* how the driver is asked for GPU indexes */
};

/* o's sources (the simulated host's log, the boot time's /proc, the driver) and verbose. */
void xid_run_opts_sources(struct xid_run_opts *o, const struct sources *src, bool verbose);
/* --since WHEN (xid_parse_since, at now) into o: 0, -EINVAL (not a time) or -ERANGE (outside
 * 1970-01-01 .. 9999-12-31: the kernel log cannot hold it and JSON cannot write it). */
int xid_run_since(struct xid_run_opts *o, const char *when, double now);

/* How a run ended: done, the caller's mistake (a --kmsg FILE that cannot be read, --gpu N naming
 * no GPU), or a failure (the log or the driver could not be read, the answer not written). */
enum xid_outcome { XID_DONE, XID_MISTAKE, XID_FAILED };

/* SIGINT and SIGTERM set the flag returned (without SA_RESTART: a follow's poll returns). */
const volatile sig_atomic_t *xid_stop_on_signals(void);

/* One run: the open log and what was learnt of it. Zero it, then xid_run_open; always
 * xid_run_close. */
struct xid_run {
        const struct xid_run_opts *o;
        struct kmsg_reader rd;
        struct xid_source_info info;    /* info.path: what was opened, for messages */
        const char *source;             /* kmsg_source_name(info.source) */
        struct gpu_report *report;      /* the driver's GPUs, once asked (NULL: not asked, none) */
};

/* Open the log o names (x keeps o). 0, or a negative errno with err saying why (a --kmsg
 * FILE that cannot be read is the caller's usage error). */
int xid_run_open(struct xid_run *x, const struct xid_run_opts *o, char *err, size_t errlen);
void xid_run_close(struct xid_run *x);

/* Whether event e passes the filters of o. */
bool xid_run_keep(const struct xid_run_opts *o, const struct xid_event *e);

/* One event a dump shows: before_load is 1 when it came before the log's last driver load, 0
 * after it, -1 when the log has no driver load. */
struct xid_dump_event {
        const struct xid_event *e;
        int before_load;
};

/* What a dump found: the events kept (pointing into all), and what was left out. */
struct xid_dump {
        struct xid_list all;
        struct xid_dump_event *shown;
        size_t n_shown;
        size_t hidden;                  /* other NVIDIA lines, left out without -v */
        size_t no_time;                 /* events without a wall-clock time, left out by --since */
        unsigned long by_sev[XID_SEV_CRITICAL + 1];
        unsigned long overruns;         /* /dev/kmsg records overwritten before they were read */
        unsigned long truncated;        /* lines cut at the reader's limit */
        bool pci_unlisted;              /* --gpu BUS-ID names no GPU the driver lists now */
};

/* Read the whole log into *ret. 0, -ENOENT (--gpu N: this host has no such GPU), or another
 * negative errno (the log could not be read; --gpu N without a driver); err says why. Free
 * ret with xid_dump_free in every case. */
int xid_dump_run(struct xid_run *x, struct xid_dump *ret, char *err, size_t errlen);
void xid_dump_free(struct xid_dump *d);

/* What a follow reports as it goes (each may be NULL). */
struct xid_follow_cb {
        /* once, before the first event: how many GPUs send NVML events (-1: NVML's events
         * are not followed; nvml_err says why, "" when they were not asked for) */
        void (*start)(void *ctx, int nvml_gpus, const char *nvml_err);
        /* an event kept by the filters; overruns: the records overwritten so far */
        void (*event)(void *ctx, const struct xid_event *e, unsigned long overruns);
        /* after each batch of events (also an empty one) */
        void (*batch_end)(void *ctx);
        /* lost kernel log records overwritten since the last call */
        void (*lost)(void *ctx, unsigned long lost);
        void *ctx;
};

/* Follow the log until *stop, the end of standard input or an error. 0, -ENOENT (--gpu N:
 * no such GPU), or another negative errno; err says why (empty when a wait failed). */
int xid_follow_run(struct xid_run *x, const volatile sig_atomic_t *stop, const struct xid_follow_cb *cb, char *err,
                   size_t errlen);

/* `ghostvram xid`: the log o names opened, then dumped (cb->dump shows it: 0, or -1 when it
 * could not be written) or followed until SIGINT or SIGTERM (cb->follow fills the follow's
 * callbacks for the open run). XID_DONE, or XID_MISTAKE / XID_FAILED with err saying why (""
 * when nothing is to be said: the answer could not be written, a wait failed). */
struct xid_execute_cb {
        int (*dump)(void *ctx, const struct xid_run *x, const struct xid_dump *d);
        void (*follow)(void *ctx, const struct xid_run *x, struct xid_follow_cb *cb);
        void *ctx;
};
enum xid_outcome xid_execute(const struct xid_run_opts *o, const struct xid_execute_cb *cb, char *err, size_t errlen);
