/* xid: NVIDIA kernel events (NVRM Xid lines and the other NVRM/nvidia-* lines worth knowing)
 * parsed from kernel log records, explained from NVIDIA's Xid catalogue, and tied to GPUs.
 *
 * Everything here is pure: records in, events out; no I/O. The facts (line formats across
 * driver versions, the catalogue) come from the project's reference on Xids; docs/xid.md
 * says how each line shape is recognised. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/gpu.h"
#include "collect/kernel.h"
#include "util/buf.h"

#define XID_NONE (-1)

enum xid_kind {
        XID_KIND_XID = 0,               /* "NVRM: Xid (PCI:…): N, …" */
        XID_KIND_FALLEN_OFF_BUS,        /* "fallen off the bus" without an Xid line: counted as Xid 79 */
        XID_KIND_SXID,                  /* "nvidia-nvswitchN: SXid (…)": an NVSwitch, not a GPU Xid */
        XID_KIND_DRIVER_LOAD,           /* "NVRM: loading NVIDIA UNIX … Kernel Module  VERSION" */
        XID_KIND_INIT_FAILED,           /* RmInitAdapter failed, probe failed, GPU not supported */
        XID_KIND_API_MISMATCH,          /* user-space and kernel driver versions differ */
        XID_KIND_CRASH_DUMP,            /* "A GPU crash dump has been created" */
        XID_KIND_RC_WATCHDOG,           /* "RC watchdog: GPU is probably locked!" (before Xid 8) */
        XID_KIND_GSP_ERROR,             /* GSP heartbeat/RPC timeouts, CrashCat reports, rate limiting */
        XID_KIND_UVM_ERROR,             /* nvidia-uvm error prints */
        XID_KIND_GPU_UUID,              /* "NVRM: GPU at PCI:…: GPU-uuid" (before a GPU's first Xid) */
        XID_KIND_DRM,                   /* nvidia-drm: "NVIDIA-GPU dddd:bb:dd.f: DRM: …" (e.g. "Failed to
                                         * reclaim vram for pid N"), "[drm…] [nvidia-drm] …" */
        XID_KIND_OTHER,                 /* any other NVRM / nvidia-* line */
        XID_KIND_COUNT
};

struct xid_event {
        bool time_known;
        double time;                    /* epoch seconds */
        bool monotonic_known;
        double monotonic;               /* seconds since boot */
        bool seq_known;
        uint64_t seq;                   /* /dev/kmsg sequence number */
        enum xid_kind kind;
        int xid;                        /* Xid code, XID_NONE for non-Xid events (79 for fallen off the bus) */
        int caused_by;                  /* "caused by previous Xid N" (Xid 45, R575+), else XID_NONE */
        int sxid;                       /* NVSwitch SXid code, else XID_NONE */
        char pci_bus_id[16];            /* sysfs form "dddd:bb:dd.f", lower case; "" if unknown */
        int gpu_index;                  /* filled by xid_map_gpus; -1 unknown */
        int gpu_instance;               /* MIG "GPU-I:NN", -1 absent */
        int compute_instance;           /* MIG "GPU-CI:NN", -1 absent */
        bool pid_known;
        uint32_t pid;
        char process_name[64];          /* "" absent or "<unknown>" */
        char driver_version[32];        /* driver_load: "570.158.01" */
        char *message;                  /* the rest of the line (several lines joined by ' '); owned */
        char *raw;                      /* the input as read; owned */
        const char *source;             /* static label: "kmsg", "file", "stdin", "nvml", … */
};

/* Parse one record's text (one message; several lines joined by '\n' when the kernel printed
 * them in one printk) into *ret. Returns 1 with *ret filled (free with xid_event_free), 0 if
 * the text is not an NVIDIA line, or -ENOMEM. Metadata (time, seq, raw, source) is left
 * empty; xid_parser_feed fills it. */
int xid_parse_message(const char *text, size_t len, struct xid_event *ret);

/* Free the strings of one event (the struct itself belongs to the caller). NULL is fine. */
void xid_event_free(struct xid_event *e);
/* Deep copy. Returns 0 or -ENOMEM. */
int xid_event_copy(struct xid_event *dst, const struct xid_event *src);

/* A growing list of events, capped: past max the oldest quarter is dropped (counted). */
#define XID_LIST_MAX 100000
struct xid_list {
        struct xid_event *ev;
        size_t n, alloc;
        size_t max;                     /* 0 means XID_LIST_MAX */
        unsigned long dropped;
};
/* Append *e, taking its strings. On error e is freed. Returns 0 or -ENOMEM. */
int xid_list_push(struct xid_list *l, struct xid_event *e);
void xid_list_free(struct xid_list *l);
/* Move every event of src into dst, labelled with `source`, keeping dst ordered by time
 * (events without a time go last, in arrival order). This is the hook for a second source
 * of events in --follow (live NVML critical-error events). src is left empty. Returns 0
 * or -ENOMEM. */
int xid_list_merge(struct xid_list *dst, struct xid_list *src, const char *source);

/* A stateful parser over a stream of records: joins messages that a log split over several
 * lines (syslog writes one line each), and drops companion lines that repeat an event
 * (the "GPU has fallen off the bus." line after its Xid 79, "rm_init_adapter failed" after
 * "RmInitAdapter failed!", a burst of GSP timeout lines). */
struct xid_parser {
        const char *source;
        /* a message whose first line came alone, waiting for its other lines */
        bool pending;
        int pending_more;               /* continuation lines still expected */
        struct xid_event pend;
        struct buf pend_text;
        /* the last event given out, for companion detection */
        bool last_valid;
        struct xid_event last;          /* strings not owned (NULL) */
        char last_gsp_tag[32];
        unsigned long records_since_last;
};
void xid_parser_init(struct xid_parser *p, const char *source);
/* Feed one record; events go to out. Returns 0 or -ENOMEM. */
int xid_parser_feed(struct xid_parser *p, const struct kmsg_record *rec, struct xid_list *out);
/* Give out what is pending (end of input, or a pause while following). */
int xid_parser_flush(struct xid_parser *p, struct xid_list *out);
void xid_parser_free(struct xid_parser *p);

/* Parse a whole saved log held in memory (the same decoding as --kmsg FILE), appending to out.
 * Returns 0 or a negative errno (-ENOMEM). */
int xid_parse_log(const char *buf, size_t len, const struct kmsg_time_opts *t, const char *source,
                  struct xid_list *out);

/* "dddd:bb:dd[.f]", "dddddddd:bb:dd.f", "bb:dd.f" at the start of s → "dddd:bb:dd.f" (function
 * 0 when absent). Returns characters used (> 0) or -EINVAL. */
int xid_pci_parse(const char *s, size_t len, char out[16]);

/* Set gpu_index of the events whose PCI bus id (domain:bus:device) is one of r's GPUs.
 * NVSwitch events are never mapped. Returns how many events got an index. */
size_t xid_map_gpus(struct xid_event *ev, size_t n, const struct gpu_report *r);

/* --since: a duration back from now ("90s", "30m", "2h", "1d"), "@EPOCH", or a date-time
 * ("2026-11-30", "2026-11-30 10:11", "2026-11-30T10:11:12Z", local time unless a zone is
 * given). Returns 0 and epoch seconds, or -EINVAL. */
int xid_parse_since(const char *s, double now, double *ret_epoch);

/* ---- the catalogue ------------------------------------------------------------------------- */

enum xid_severity {
        XID_SEV_UNKNOWN = 0,
        XID_SEV_INFO,
        XID_SEV_WARNING,
        XID_SEV_ERROR,
        XID_SEV_CRITICAL,
};

enum xid_action {
        XID_ACT_UNKNOWN = 0,            /* unknown code */
        XID_ACT_NONE,                   /* nothing to do */
        XID_ACT_RESTART_APP,
        XID_ACT_CHECK_APP,              /* the application passed bad data */
        XID_ACT_FOLLOW_OTHER,           /* secondary: follow the Xid that caused it */
        XID_ACT_RESET_GPU,
        XID_ACT_DRAIN_P2P,
        XID_ACT_DRAIN_AND_RESET,
        XID_ACT_REBOOT,
        XID_ACT_RESTART_VM,
        XID_ACT_CHECK_HARDWARE,
        XID_ACT_UPDATE_SOFTWARE,
        XID_ACT_BUG_REPORT,             /* collect nvidia-bug-report.sh before unloading */
        XID_ACT_CONTACT_SUPPORT,
        XID_ACT_SEE_MESSAGE,            /* the line itself says (Xid 154) */
};

enum xid_reset {
        XID_RESET_UNKNOWN = 0,
        XID_RESET_NO,
        XID_RESET_WHEN_CONVENIENT,
        XID_RESET_GPU,
        XID_RESET_REBOOT,
        XID_RESET_DEPENDS,
};

/* One row of NVIDIA's Xid catalog (sheet "Xids") with the pre-Ampere name and causes;
 * the strings are the reference's cells, "-" for an empty cell. */
struct xid_info {
        unsigned code;
        const char *mnemonic;
        const char *description;
        const char *applies_to;
        const char *immediate;          /* resolution bucket, e.g. "RESET_GPU" */
        const char *investigatory;
        const char *xid154;             /* "Xid 154 linkage" */
        const char *old_name;           /* pre-Ampere doc name, "(same)" */
        const char *causes;             /* "HW/Drv/App/SysMem/Bus/Therm/FB" flags */
};

/* What ghostvram tells about a code. */
struct xid_explanation {
        int code;
        const struct xid_info *info;    /* NULL: not in the catalogue */
        const char *name;               /* short name to show */
        const char *meaning;            /* what it means */
        const char *cause;              /* likely cause (NULL: expand info->causes) */
        const char *todo;               /* what to do */
        const char *note;               /* ghostvram-specific note, or NULL */
        enum xid_severity severity;
        enum xid_action action;
        enum xid_reset reset;
};

/* The row for `code`, or NULL. */
const struct xid_info *xid_catalog_lookup(int code);
/* All rows, ordered by code. */
const struct xid_info *xid_catalog_all(size_t *ret_n);
/* Fill *ret for any code (unknown codes get severity/action unknown and say so). The catalogue's
 * sentences (here, in xid_assessment, xid_action_text, xid_reset_text, xid_bucket_text and the
 * rows' descriptions) are English msgids: a text printer shows _(s), JSON the string itself. */
void xid_explain(int code, struct xid_explanation *ret);
/* Expand "HW/Drv/…" into words ("hardware error, driver error, …") in the reader's language
 * (English where translation is off: JSON). Returns 0 or -errno. */
int xid_causes_text(const char *flags, struct buf *out);
/* What a resolution bucket ("RESET_GPU", "WORKFLOW_XID_48", …) asks for, in words; NULL if unknown. */
const char *xid_bucket_text(const char *bucket);

/* Severity, action and advice of one event: the catalogue for Xids (Xid 154: the action
 * its message names), per kind otherwise. title is a short name ("GPU has fallen off the
 * bus"); advice is one sentence; note is the ghostvram-specific note or NULL. */
struct xid_assessment {
        enum xid_severity severity;
        enum xid_action action;
        const char *title;
        const char *advice;
        const char *note;
};
void xid_event_assess(const struct xid_event *e, struct xid_assessment *ret);

const char *xid_kind_name(enum xid_kind k);
const char *xid_severity_name(enum xid_severity s);
const char *xid_action_name(enum xid_action a);   /* "reset_gpu", … (JSON) */
const char *xid_action_text(enum xid_action a);   /* a sentence */
const char *xid_reset_text(enum xid_reset r);

/* ---- recent events that page ------------------------------------------------------------- */

/* Does e concern GPU g? By g's index when by_index (the log is this host's: xid_map_gpus
 * numbered its events) and e has one, else by PCI bus id. NVSwitch events concern no GPU. */
bool xid_event_on_gpu(const struct xid_event *e, const struct gpu_info *g, bool by_index);
/* Is a later than b in the log? seq within one source, else monotonic, else wall time; true
 * when it cannot be told (an event is not called history on a guess). */
bool xid_event_after(const struct xid_event *a, const struct xid_event *b);
/* The latest "loading NVIDIA ... Kernel Module" line of ev[0..n), or NULL. */
const struct xid_event *xid_driver_load(const struct xid_event *ev, size_t n);

/* --xid-window: how long an Xid pages (`check`, `scan`'s exit status, `doctor`). Ten minutes:
 * longer than the usual check interval (1-5 min), so every check sees a fresh event at least
 * once, and short enough that an Xid a GPU reset has dealt with stops paging on its own (a
 * reset does not reload the driver, so "since the driver's load" would page until a reboot).
 * docs/xid.md, "Recent Xids page". */
#define XID_WINDOW_DEFAULT_S 600.0

/* A recent Xid of one GPU that pages. */
struct xid_recent {
        const struct xid_event *event;  /* into the caller's list */
        enum xid_severity severity;     /* XID_SEV_ERROR (WARNING) or XID_SEV_CRITICAL */
        enum xid_action action;
        double age_s;                   /* at `now`; 0 for a stamp slightly ahead of the clock */
        char *summary;                  /* "Xid 79 (GPU has fallen off the bus) 5 s ago" (util/strf.h) */
        char *next_step;                /* what to do, with a runnable command (util/strf.h) */
};
/* Frees the sentences of r (xid_recent_worst's) and empties them. */
void xid_recent_clear(struct xid_recent *r);
/* The Xid of GPU g in ev[0..n) that pages: an Xid line (or fallen off the bus) whose severity
 * is error or critical (xid_event_assess), after the latest driver load in ev (an earlier one
 * is history), and at most window_s old at `now` (epoch seconds; an event without a wall time
 * cannot be placed and does not page). The most severe wins, then the latest. gpu_ref is how
 * nvidia-smi -i names the GPU for the next step (NULL: gpu_info_ref's). Returns true and fills
 * *ret (its sentences on the heap: xid_recent_clear), or false (window_s <= 0: never). */
bool xid_recent_worst(const struct xid_event *ev, size_t n, const struct gpu_info *g, bool by_index,
                      const char *gpu_ref, double now, double window_s, struct xid_recent *ret);

/* JSON for one event (schema_version 1 fields, see docs/xid.md); NULL on ENOMEM.
 * Text fields are repaired to valid UTF-8. */
struct json_t;
struct json_t *xid_event_to_json(const struct xid_event *e);
/* JSON for a catalogue explanation (`xid explain --json`). */
struct json_t *xid_explanation_to_json(const struct xid_explanation *x);
/* RFC 3339 UTC ("2026-11-30T10:11:12Z", fraction when there is one) into out. */
int xid_format_rfc3339(double epoch, char *out, size_t outlen);

/* ---- reading a kernel log into events (I/O: this part opens files) ------------------------ */

struct xid_source_opts {
        const char *kmsg_path;          /* a saved log, "-" for stdin; NULL: the default below */
        const char *sim_dir;            /* GHOSTVRAM_SIM: the default is sim_dir/kmsg (none there: no log) */
        const char *kmsg_dev;           /* NULL: /dev/kmsg */
        const char *proc_root;          /* for the boot time fallback (/proc/stat btime); NULL: /proc */
        bool this_boot;                 /* a saved log is from this boot: date its [seconds] stamps */
        double boot_time;               /* > 0: with this_boot, date them with this boot time (a
                                         * bundle's, as recorded) rather than this host's */
};

struct xid_source_info {
        enum kmsg_source source;
        char path[4096];                /* what was opened, for messages ("standard input" for -) */
        bool no_log;                    /* GHOSTVRAM_SIM without DIR/kmsg: nothing to read */
        bool this_host;                 /* /dev/kmsg, the simulated host or this_boot: GPU indexes apply */
        double boot_time;               /* what the stamps were dated with (epoch s), -1: not dated */
};

/* Open the kernel log the options name. Returns 0 (the reader is open, or info->no_log), or a
 * negative errno with one line in err (-EACCES/-EPERM for /dev/kmsg: why, and the
 * alternatives). Never prints or exits: a caller such as scan can go on without it. */
int xid_source_open(const struct xid_source_opts *o, bool follow, struct kmsg_reader *rd,
                    struct xid_source_info *info, char *err, size_t errlen);

/* Read every record of an open reader (to its end) into events labelled `source`.
 * Returns 0 or a negative errno. */
int xid_read_all(struct kmsg_reader *rd, const char *source, struct xid_list *out);

/* xid_source_open + xid_read_all + close, for callers that want the events of the default log
 * (scan). info and ret_overruns (EPIPE count of /dev/kmsg) may be NULL. On an error err holds
 * one line and out is left as it was (events read before a read error stay in it). */
int xid_collect(const struct xid_source_opts *o, struct xid_list *out, struct xid_source_info *info,
                char *err, size_t errlen, unsigned long *ret_overruns);
