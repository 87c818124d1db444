/* track_scan: the allocation ledgers of a scan's dead owners (`scan --ledger-dir DIR`).
 * For every GPU, every NVML-listed owner that is stale (dead) and has a ledger in DIR: what it
 * still had allocated on that GPU (matched by the GPU's UUID). Reads files; prints nothing. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

#include "model/ledger.h"
#include "track/ledger_read.h"

#define TRACK_SCAN_MAX 64               /* ledgers read per scan */

struct track_scan_entry {
        unsigned gpu_index;
        pid_t owner_pid;
        char file[96];                  /* name in the directory */
        struct track_ledger *ledger;    /* owned */
        struct track_summary summary;   /* on this GPU */
};

struct track_scan {
        const char *dir;
        size_t n;
        struct track_scan_entry e[TRACK_SCAN_MAX];
        char error[160];                /* the directory could not be read, or "" */
};

/* Fill ts from r's stale owners and the ledgers in dir (proc_root: to tell the dead from a
 * reused PID). Returns 0 (ts->error says what could not be read) or -ENOMEM. Free with
 * track_scan_free. */
int track_scan_collect(const struct scan_result *r, const char *dir, const char *proc_root, struct track_scan *ts);
void track_scan_free(struct track_scan *ts);
