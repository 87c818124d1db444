/* live_view: what the live views (`ghostvram top`, serve's page) show, as plain data that
 * outlives the sampler's result, and the bounded history they draw over time.
 *
 * A view is built from one scan result on the collecting thread and handed to the drawing
 * thread whole: per GPU the ledger's split of used memory, its verdict and evidence; one row a
 * process (NVML-listed owners, holders tied to a ghost, the other holders: monitors and
 * daemons); the NVIDIA kernel events of the GPUs. Strings a process controls (comm, cmdline,
 * user) are kept raw: each renderer escapes them for its medium (terminal, HTML).
 *
 * The history is a ring of LIVE_HISTORY_MAX points a GPU, one a cycle: a point is 32 bytes
 * (time, a flag, six MiB figures), so 720 points cost 22.5 KiB a GPU (8 GPUs: 180 KiB), and
 * the ring never grows past LIVE_MAX_GPUS GPUs. A cycle without a complete result (a hung
 * driver) adds a gap, so timelines show the hang as a hole instead of a line across it.
 *
 * Nothing here prints or does I/O. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect/gpu.h"
#include "model/ledger.h"

struct sample;

#define LIVE_HISTORY_MAX 720    /* points a GPU: 12 min at top's 1 s, 3 h at serve's 15 s */
#define LIVE_MAX_GPUS 64
#define LIVE_MAX_ROWS 512       /* process rows kept in a view */
#define LIVE_MAX_XID 32         /* kernel events kept in a view (the latest) */

/* The parts of used memory, in the order bars and timelines stack them (freeing: the ledger's
 * freeing_bytes, a teardown in progress, never ghost). */
enum live_kind { LIVE_RESERVED = 0, LIVE_LISTED, LIVE_FOREIGN, LIVE_GHOST, LIVE_UNATTRIBUTED, LIVE_FREEING, LIVE_KINDS };

/* "reserved", "listed", ... (a code, always English: _() of it is the reader's word) and the
 * letter a bar uses for it without colour (R L F G U ~). */
const char *live_kind_name(enum live_kind k);
char live_kind_letter(enum live_kind k);

struct live_gpu {
        unsigned index;
        char name[96], uuid[96], bus[32];
        bool inspected;                 /* memory known and the GPU answered */
        bool reserved_known;
        uint64_t total, used;           /* NVML's used, as scan says it: excludes the reservation (v2) */
        uint64_t kind[LIVE_KINDS];      /* bytes by enum live_kind */
        bool ghost_confirmed;
        char verdict[24];               /* stable code: ok, orphaned-holders, ... */
        char confidence[8];
        /* the sentences, on the heap (util/strf.h: NULL is the empty one), never cut */
        char *summary;
        char *evidence[LEDGER_MAX_EVIDENCE];
        size_t n_evidence;
        char *next_step;
        char *status;                   /* the GPU's own problem (NULL if none) */
        /* nvtop's figures (struct gpu_telemetry, -1 each one the driver does not give; queried
         * false: not asked) and the memory health a reset settles (-1 unknown) */
        struct gpu_telemetry tel;
        bool health_queried;
        long long ecc_uncorrected;
        int remap_pending, remap_failed, retired_pending;
        unsigned mig_instances;         /* MIG devices the driver lists (0: MIG off or none) */
};

struct live_row {
        pid_t pid;
        int gpu;                        /* the GPU it counts on, -1: none (a monitor of several) */
        char gpus[32];                  /* the GPUs whose nodes it holds: "0,1" ("" none known) */
        char user[64];
        char state;
        int64_t listed_bytes;           /* NVML's bytes for it, -1: not listed / not known */
        unsigned family;                /* its description family (host_proc.family), 0 for a listed PID that holds nothing */
        char *role;                     /* "owner", "dead owner", "worker of dead PID 31300", "monitor", ... */
        char *link;                     /* the attribution or the owner's status, NULL if none */
        char confidence[8];             /* of the attribution, "" if none */
        char *detail;                   /* nodes (fd/mmap), ppid, pgid, sid, container */
        bool ghost_holder;              /* tied to a GPU's ghost */
        char comm[64];                  /* raw */
        char *cmdline;                  /* raw; NULL unless asked for and read */
        double start_time;              /* epoch seconds, 0 unknown */
        uint64_t start_ticks;           /* stat field 22 (which process this PID is), 0 unknown */
        pid_t ppid, pgid;               /* 0 unknown */
        int sm_util, mem_util;          /* its share of its GPU (%), -1 unknown */
        uint64_t cpu_ticks;             /* user + system time, clock ticks (cpu_known) */
        bool cpu_known;
        uint64_t rss_bytes;             /* resident memory (rss_known) */
        bool rss_known;
        uint32_t mig_instance;          /* its MIG GPU instance (GPU_INSTANCE_NONE: none) */
        bool mps;                       /* NVML lists it as an MPS client */
        pid_t tie_pid;                  /* the owner its link names (a dead owner, a live job's), 0 none */
        double cpu_pct;                 /* CPU use since the previous view (live_view_cpu), -1 unknown */
};

struct live_xid {
        double time;                    /* epoch seconds, 0 unknown */
        int gpu;                        /* index, -1 unknown */
        int xid;                        /* code, or XID_NONE for other NVRM events */
        char title[120];
        char severity[16];
        uint32_t pid;                   /* 0: none named */
        char process[64];               /* raw */
};

struct live_view {
        double finished;                /* epoch seconds of the sample */
        double duration_s;
        bool full_walk;
        bool simulated;
        bool driver_present;
        char *driver;                   /* driver version, or why there is none (heap strings from
                                         * here on, util/strf.h: NULL is the empty one) */
        bool full_visibility;
        struct live_gpu *gpus;
        size_t n_gpus;
        struct live_row *rows;
        size_t n_rows;
        struct live_xid xids[LIVE_MAX_XID];
        size_t n_xids;                  /* oldest first */
        char *kernel_error;             /* why the kernel log is not read (NULL if it is) */
        char *limits[4];                /* what this scan could not see */
        size_t n_limits;
};

/* Build a view of r (its latest sample). with_cmdline keeps command lines. Returns 0 and *ret
 * (free with live_view_free), or -ENOMEM. */
int live_view_build(const struct scan_result *r, bool with_cmdline, bool full_walk, double duration_s,
                    struct live_view **ret);
void live_view_free(struct live_view *v);

/* Each row's CPU use (cpu_pct, 100 = one CPU busy) from its CPU time in prev, an earlier view:
 * the same process (PID and start time) in both, else -1; without prev (the first view), over
 * its life as ps(1) gives %CPU. clk_tck: sysconf(_SC_CLK_TCK). */
void live_view_cpu(struct live_view *v, const struct live_view *prev, long clk_tck);

/* Does this verdict code call for attention (a ghost, a stuck task, a lost GPU, ...)? The views
 * colour it and show its evidence; ok, reserved-only, unattributed-live, foreign-namespace and
 * freeing are calm. */
bool live_verdict_alarming(const char *code);

/* The GPU of a view with this index, or NULL. */
const struct live_gpu *live_view_gpu(const struct live_view *v, unsigned index);

/* Why a cycle of the sampler has no fresh result, or "" when it has one: the driver did not
 * answer in time, no driver, the walk failed, the kernel log is unreadable. Into out, of
 * LIVE_STATUS_MAX bytes: every status fits whole (a GPU's status message or the driver's error
 * and a few words; live_view.c checks it at build time). */
#define LIVE_STATUS_MAX 2048
void live_sample_status(const struct sample *s, char *out, size_t outlen);

/* ---- the history ---------------------------------------------------------------------- */

struct live_point {
        uint32_t t;                     /* epoch seconds */
        uint16_t valid;                 /* 0: a gap (no complete result that cycle) */
        int8_t util_gpu;                /* %, -1 unknown */
        int8_t util_mem;                /* %, -1 unknown */
        uint32_t mib[LIVE_KINDS];
};

struct live_ring {
        unsigned index;
        uint32_t total_mib;
        size_t head, n;                 /* the oldest point is at (head + MAX - n) % MAX */
        struct live_point pts[LIVE_HISTORY_MAX];
};

struct live_history {
        struct live_ring *gpus;         /* by position, LIVE_MAX_GPUS at most */
        size_t n_gpus;
};

/* Add a point a GPU: from v at time t, or a gap on every known GPU when v is NULL. A GPU
 * beyond LIVE_MAX_GPUS is not kept. Returns 0 or -ENOMEM. */
int live_history_add(struct live_history *h, const struct live_view *v, double t);
/* The ring of GPU index, or NULL. */
const struct live_ring *live_history_gpu(const struct live_history *h, unsigned index);
/* The i-th point of a ring, oldest first (i < r->n). */
const struct live_point *live_ring_at(const struct live_ring *r, size_t i);
/* The bytes the history holds now. */
size_t live_history_bytes(const struct live_history *h);
void live_history_free(struct live_history *h);
