/* scan_run: how a scan is taken, shared by the commands that need one (scan, reclaim).
 *
 * scan_once: a sample, and when it shows a ghost or a stuck task, a confirming sample
 * `confirm_ms` later (the driver frees memory with a delay while a job tears down). Bundles
 * are read and written the same way (DIR/ for the first sample, DIR/confirm/ for the second);
 * the kernel lines a bundle recorded (DIR/kmsg) are read back with it.
 *
 * Nothing here prints. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/facts.h"
#include "model/ledger.h"

/* Sleep for ms, or return false early when the caller wants to stop. NULL: nanosleep. */
typedef bool (*scan_wait_fn)(void *ctx, uint64_t ms);

struct scan_once_opts {
        struct facts_opts facts;        /* the sources (GPU, /proc, kernel log) */
        struct ledger_opts ledger;
        uint64_t confirm_ms;            /* delay before the confirming sample; 0: one sample */
        const char *from_bundle;        /* read DIR/ and DIR/confirm/ instead of this host */
        const char *save_bundle;        /* record into DIR/ and DIR/confirm/ */
        scan_wait_fn wait;
        void *wait_ctx;
};

struct scan_once {
        struct facts *first, *second;   /* second: the confirming sample, or NULL */
        struct scan_result *res;        /* built on the last sample */
        double duration_s;              /* wall time including the confirmation delay */
};

/* Take one scan. Returns 0 and *ret (free with scan_once_free), -EINTR when wait asked to stop,
 * -ENOMEM, -ENAMETOOLONG for bundle paths, or the /proc walk's error when the proc root cannot
 * be read at all. */
int scan_once_run(const struct scan_once_opts *o, struct scan_once **ret);
void scan_once_free(struct scan_once *s);
