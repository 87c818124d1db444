/* top_kill: ending one process from `ghostvram top` (k, F9, T, K), by reclaim's own rules.
 *
 * top never signals anything itself: it runs `ghostvram reclaim --pid P --signal SIG --grace none
 * --yes --json` in a child, so the process is opened through a pidfd, its start time re-checked,
 * PID 1, kernel threads, daemons, ghostvram and its ancestors are refused, and the act is logged
 * to syslog as every reclaim is. A live NVML-listed owner, a member of its description family or
 * another ghostvram is refused too unless the user confirms it a second time, saying so
 * (`--force`). SIGTERM never turns into SIGKILL by itself (`--grace none`): a process still there
 * is offered SIGKILL on the next k.
 *
 * This file builds the command and reads its JSON answer into what top says; no I/O. */
#pragma once
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct top_kill {
        pid_t pid;
        uint64_t start_ticks;           /* the process the user saw (stat field 22), 0 unknown */
        int sig;                        /* SIGTERM or SIGKILL */
        bool force;                     /* the second confirmation of a live job's process */
        const char *proc_root;          /* --proc when not "/proc" (reclaim then refuses --yes) */
        const char *nvml_lib;           /* --nvml-lib, NULL: none */
};

enum top_kill_outcome {
        TOP_KILL_ENDED = 0,             /* it ended (or was gone already) */
        TOP_KILL_STILL_THERE,           /* signalled, still there at the wait's end: SIGKILL next */
        TOP_KILL_NEEDS_FORCE,           /* a live job's process (owner, its family, a ghostvram): ask again */
        TOP_KILL_REFUSED,               /* reclaim never signals it (PID 1, a daemon, an ancestor, ...) */
        TOP_KILL_FAILED,                /* reclaim could not act (not root, no pidfd, ...) or said nothing */
};

struct top_kill_result {
        enum top_kill_outcome outcome;
        char *text;                     /* the dialog's lines, on the heap (util/strf.h) */
};

#define TOP_KILL_ARGS 20

/* reclaim's arguments for k into args (NULL-terminated; at most TOP_KILL_ARGS with the NULL);
 * pid_buf keeps the PID's digits. Returns how many. */
size_t top_kill_args(const struct top_kill *k, char pid_buf[16], const char *args[TOP_KILL_ARGS]);

/* Is the process the user confirmed still the one with that PID (its start time, read from
 * proc_root/PID/stat, the same)? A PID given to another process since the view was taken is
 * never handed to reclaim. true when start_ticks is unknown (0). */
bool top_kill_same_process(const struct top_kill *k, const char *proc_root);

/* What reclaim's JSON document (json, len bytes; its exit status rc) says of k's process, into
 * *ret (free ret->text with str_clear). 0 or -ENOMEM. */
int top_kill_judge(const struct top_kill *k, const char *json, size_t len, int rc, struct top_kill_result *ret);
