/* track_run: the use case of `ghostvram track` (docs/track.md), without argv and without
 * printing. In two steps, so that the caller can open its report's file between them (a report
 * that cannot be written is found before CMD runs):
 *   track_prepare  the ledger directory (made when missing), the tracker library (found and
 *                  checked to be preloadable here), old ledgers pruned, a new session number;
 *   track_run      CMD run with the tracker preloaded (LD_PRELOAD, the directory and session in
 *                  its environment, made before the fork), stop signals passed on while it runs,
 *                  then this session's ledgers read back. */
#pragma once
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "track/ledger_read.h"

#define TRACK_DEFAULT_DIR "/run/ghostvram/ledger"
#define TRACK_LIB_NAME "libghostvram-track.so"
#define TRACK_REPORT_MAX 256            /* ledgers in one leak report */
/* After passing a stop signal on to CMD, how long track waits for CMD before it reports
 * without it: shorter than the grace a supervisor gives before its SIGKILL (docker stop: 10 s,
 * Slurm's KillWait: 30 s, systemd: 90 s), so that the report is written. */
#define TRACK_STOP_WAIT_MS 5000

/* Exit statuses of track itself (CMD's own are passed through). */
#define TRACK_EXIT_FAILED 125           /* no ledger directory, no tracker library */
#define TRACK_EXIT_NOT_RUN 127          /* CMD could not be run */

struct track_prep_opts {
        const char *dir;                /* the ledger directory (TRACK_DEFAULT_DIR) */
        const char *preload;            /* the tracker library; NULL: $GHOSTVRAM_TRACK_LIB, or
                                         * beside this program, ../lib/ghostvram, ../lib64/ghostvram */
        uint64_t max_age_ms;            /* ledgers older than this are pruned */
        uint64_t max_total_mib;         /* ...and the oldest past this total */
};

struct track_prep {
        char dir[PATH_MAX];             /* the ledger directory's real path */
        char lib[PATH_MAX];             /* the tracker library's real path */
        uint64_t session;               /* never 0; below 2^62 */
};

/* How CMD's run ended: the report says it, and track exits with status. */
struct track_end {
        int status;     /* CMD's (128+N when signal N ended it); 128+signal when it still runs */
        int signal;     /* the first stop signal a process sent track (passed on to CMD); 0 none */
        bool running;   /* CMD still ran TRACK_STOP_WAIT_MS after that signal */
        pid_t child;
};

/* One ledger of the session: its process, what it still holds, whether it still runs. */
struct track_report_proc {
        char file[96];
        struct track_ledger *l;
        struct track_summary s;
        bool alive;
};

struct track_result {
        struct track_end end;
        struct track_report_proc *procs;        /* free with track_result_free */
        size_t n;
        /* the stop signals stay blocked until track_result_free: one that comes after CMD
         * ended (while the report is written) is taken and dropped, never ends track before
         * its report */
        bool signals_taken;
        sigset_t sig_set, sig_old_mask;
        struct sigaction sig_old_chld;
};

/* 0 and *ret, or a negative errno with err saying why (track exits TRACK_EXIT_FAILED). */
int track_prepare(const struct track_prep_opts *o, struct track_prep *ret, char *err, size_t errlen);
/* Run cmd (cmd[0] searched in PATH) and read the session's ledgers. Returns 0 with *ret (also
 * when CMD failed: ret->end.status), TRACK_EXIT_NOT_RUN when CMD could not be executed,
 * TRACK_EXIT_FAILED, or a negative errno when CMD ran but its ledgers could not be read; err
 * says why. Always free ret with track_result_free (also on an error). */
int track_run(const struct track_prep *p, char *const cmd[], struct track_result *ret, char *err, size_t errlen);
/* The ledgers freed; the stop signals still pending taken (CMD has had its signal, or is gone),
 * then the signal mask and SIGCHLD's disposition given back as they were before track_run. */
void track_result_free(struct track_result *r);

/* "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", or "a signal". */
const char *track_stop_signal_name(int sig);

/* ---- --show FILE ----------------------------------------------------------------------------- */

/* One ledger file as --show reads it: what it holds, summed up. */
struct track_show {
        struct track_ledger l;
        struct track_summary s;
        bool loaded;                    /* l holds what was read (track_show_free frees it) */
};

/* An empty one; NULL when out of memory. Free with track_show_free. */
struct track_show *track_show_new(void);
/* path read into sh and summed up: 0, -EISDIR (a directory, not one ledger file of it),
 * -EBADMSG (not an allocation ledger: a bad header), or the negative errno of reading it. */
int track_show_load(struct track_show *sh, const char *path);
void track_show_free(struct track_show *sh);

/* ---- the report's file ------------------------------------------------------------------------- */

/* The --report file, opened before CMD runs (one that cannot be written loses nothing); stderr
 * without path. NULL when it cannot be opened: err says why ("--report PATH: ..."). */
FILE *track_report_open(const char *path, char *err, size_t len);
/* Close out when it is a --report file (not stderr): 0, or -1 with err ("--report PATH: ..."). */
int track_report_close(FILE *out, const char *path, char *err, size_t len);

/* `ghostvram track -- CMD`: the ledger directory and the tracker prepared (o), the report's file
 * opened (report; NULL: stderr), CMD run and what it left reported through cb->report (into
 * the report's file), each problem said through cb->say. Returns the status track exits with:
 * CMD's, or TRACK_EXIT_* when track failed. */
struct track_execute_cb {
        void (*report)(void *ctx, FILE *out, char *const *cmd, const struct track_prep *prep,
                       const struct track_result *res);
        void *ctx;
        void (*say)(const char *msg);
};
int track_execute(const struct track_prep_opts *o, const char *report, char *const *cmd,
                  const struct track_execute_cb *cb);
