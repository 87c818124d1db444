/* ledger_read: reading back the allocation ledgers that `ghostvram track`'s preload library
 * writes (format: track/ledger_format.h; docs/track.md).
 *
 * The parser takes bytes and does no I/O (a ledger file is hostile input: another user may
 * have written it, a crash may have torn it); it replays the records into the set of
 * allocations still outstanding. The directory functions list, choose and prune files. Nothing
 * here prints. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "track/ledger_format.h"

#define TRACK_LIVE_MAX (1u << 17)       /* outstanding allocations kept per ledger */
#define TRACK_MODULES_MAX 512
#define TRACK_RESYNC_MAX ((uint64_t)16 << 20)   /* bytes skipped looking for a record, then stop */
#define TRACK_FILE_MAX ((uint64_t)1 << 30)      /* bytes of one file read at most */
#define TRACK_DIR_FILES_MAX 4096        /* ledger files looked at per directory */
#define TRACK_SITES_MAX 64

enum track_class { TC_MEM = 1, TC_HANDLE, TC_MAP };

struct track_alloc {
        uint64_t addr;                  /* device pointer, handle, or mapped address */
        uint64_t size;
        uint64_t handle;                /* TC_MAP: the handle mapped */
        uint64_t time_ns;
        uint64_t frames[GVL_FRAMES];
        uint8_t uuid[16];
        int32_t device;
        uint32_t maps;                  /* TC_HANDLE: live mappings */
        uint8_t cls;                    /* enum track_class; 0: empty slot */
        uint8_t api;
        uint8_t flags;
        uint8_t nframes;
        bool released;                  /* TC_HANDLE: released, still mapped */
};

struct track_module {
        uint64_t bias;                  /* load bias: file address = address - bias */
        uint64_t lo, hi;                /* executable span */
        char path[81];
};

struct track_ledger {
        struct gvl_header hdr;
        bool have_header;
        uint64_t records;               /* valid records replayed */
        uint64_t skipped_bytes;         /* bytes that were no record (torn, zero-filled) */
        uint64_t tail_bytes;            /* an incomplete record at the end (killed mid-write) */
        bool gave_up;                   /* more than TRACK_RESYNC_MAX bytes of garbage */
        bool live_full;                 /* TRACK_LIVE_MAX reached: some allocations not kept */
        uint64_t allocs, frees, unmatched_frees, execs;
        uint64_t last_time_ns;
        /* outstanding allocations: an open-addressing table */
        struct track_alloc *slots;
        size_t cap, n;
        struct track_module modules[TRACK_MODULES_MAX];
        size_t n_modules;
        /* the parser's carry between feeds */
        uint8_t pend[GVL_REC_SIZE];
        size_t npend;
};

/* Start an empty ledger (no header yet). */
void track_ledger_init(struct track_ledger *l);
/* Feed bytes of a ledger file, in order, in any chunks. The first GVL_REC_SIZE bytes must be
 * a valid header. Returns 0, -EBADMSG (no valid header: not a ledger, or another version or
 * byte order), -ENOMEM. Bad records are skipped and counted, never an error. */
int track_ledger_feed(struct track_ledger *l, const void *buf, size_t len);
/* After the last feed: what is left in the carry is an incomplete record (tail_bytes). */
void track_ledger_finish(struct track_ledger *l);
/* Parse a whole buffer (init, feed, finish). On error *l is freed and left empty. */
int track_ledger_parse(const void *buf, size_t len, struct track_ledger *l);
void track_ledger_free(struct track_ledger *l);

/* One call site: allocations still outstanding grouped by their chain of return addresses. */
struct track_site {
        uint64_t frames[GVL_FRAMES];
        unsigned nframes;
        uint64_t bytes;
        uint64_t count;
        uint8_t api;
        bool procaddr;
};

struct track_summary {
        uint64_t outstanding_bytes;
        uint64_t allocations;
        size_t n_sites;                 /* all sites, sorted by bytes (largest first) */
        struct track_site sites[TRACK_SITES_MAX];
        uint64_t other_sites_bytes;     /* sites beyond TRACK_SITES_MAX */
};

/* What l still had allocated; with uuid (16 bytes) only on that device. Managed memory counts
 * (the driver frees it with the context too). */
void track_ledger_summary(const struct track_ledger *l, const uint8_t *uuid, struct track_summary *ret);

/* "object+0xOFFSET" of a return address, from the ledger's module records (the offset is the
 * file address, what addr2line and the object's symbol table use), or "0xADDR". */
void track_frame_name(const struct track_ledger *l, uint64_t addr, char *out, size_t outlen);
/* "object!function+0xOFFSET" when the object (its path as the ledger recorded it) is readable
 * and its symbol table covers the address (reads the file: for reports only), else what
 * track_frame_name gives. */
void track_frame_symbol(const struct track_ledger *l, uint64_t addr, char *out, size_t outlen);
/* The entry point's name for a record's api. */
const char *track_api_name(uint8_t api);

/* The 16 bytes of "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (NVML's UUID form). Returns 0 or
 * -EINVAL. */
int track_uuid_parse(const char *s, uint8_t out[16]);

/* ---- files and directories --------------------------------------------------------------- */

/* Read and parse DIR/NAME (O_NOFOLLOW, a regular file, at most TRACK_FILE_MAX bytes). */
int track_ledger_load(int dirfd, const char *name, struct track_ledger *l);

/* Does "NAME" look like a ledger's name? Writes its PID and start ticks. */
bool track_ledger_name(const char *name, pid_t *ret_pid, uint64_t *ret_start);

/* Is PID with this start time (clock ticks since boot) alive, looking in proc_root? */
bool track_process_alive(const char *proc_root, pid_t pid, uint64_t start_ticks);

/* The ledger of dead PID pid in dir: of the files "<pid>-<start>.gvl" whose process is not
 * alive, the most recently modified. Writes its name. Returns 0, -ENOENT, or a negative errno. */
int track_find_dead(const char *dir, const char *proc_root, pid_t pid, char *ret_name, size_t namelen);

struct track_prune_opts {
        uint64_t max_age_s;             /* ledgers of dead processes older than this go */
        uint64_t max_total_bytes;       /* then the oldest dead ones until the rest fits (live
                                         * processes' ledgers do not count) */
        const char *proc_root;
};
struct track_prune_result {
        unsigned removed;
        uint64_t removed_bytes;
        uint64_t kept_bytes;            /* of dead processes */
};
/* Remove old ledgers of dead processes from dir (and temporary files older than a minute).
 * Ledgers of live processes are never removed. At most TRACK_DIR_FILES_MAX files are looked at.
 * Returns 0 or a negative errno (the directory cannot be read). */
int track_prune(const char *dir, const struct track_prune_opts *o, struct track_prune_result *ret);
