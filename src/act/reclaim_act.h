/* reclaim_act: carry out a reclaim plan and measure what comes back.
 *
 * Safety, in the order things happen (docs/reclaim.md):
 *   1. every target is opened with pidfd_open(2) first, then its start time is read from
 *      /proc/PID/stat and compared with the scan's: a PID that now names another process is
 *      never signalled (the pidfd pins the process that was opened; reading the start time
 *      after opening it closes the window between check and use);
 *   2. signals go only through the pidfd (pidfd_send_signal(2)); no kill(2) by number;
 *   3. exit is awaited on the pidfds (poll for POLLIN), SIGKILL after the grace period, and
 *      nothing waits past the timeout: a task in D state is reported stuck, not waited for.
 *
 * The system calls go through a table (struct reclaim_sys) so that tests can play processes
 * that exit by themselves, ignore SIGTERM, sit in D state or have their PID reused, with a
 * fake clock. Nothing here prints; every event goes to the caller's log function. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "act/reclaim_plan.h"
#include "collect/gpu.h"

enum reclaim_result {
        RECLAIM_RES_PENDING = 0,
        RECLAIM_RES_EXITED,             /* ended by itself after we opened it, before our signal */
        RECLAIM_RES_TERMINATED,         /* ended after the first signal, within the grace period */
        RECLAIM_RES_KILLED,             /* ended after SIGKILL */
        RECLAIM_RES_STUCK_IN_D,         /* still there at the timeout, in D state (in the driver) */
        RECLAIM_RES_SURVIVED,           /* still there at the timeout, not in D state */
        RECLAIM_RES_GONE,               /* gone (or a zombie) before we could open it: gone-before-signal */
        RECLAIM_RES_PID_REUSED,         /* the PID names another process now: not signalled */
        RECLAIM_RES_NOT_PERMITTED,      /* EPERM: not ours to signal */
        RECLAIM_RES_ERROR,
        RECLAIM_RES_LEFT,               /* a stop signal ended reclaim first: not (or no longer) waited for */
        RECLAIM_RES_COUNT
};

/* "exited", "terminated", "killed", "stuck-in-D", "survived", "gone-before-signal", "pid-reused",
 * "not-permitted", "error", "left", "pending". */
const char *reclaim_result_name(enum reclaim_result r);

/* reclaim_act_opts.grace_ms: only the first signal, never SIGKILL (top's kill: TERM, then KILL
 * only on a second confirmation) */
#define RECLAIM_GRACE_NONE 0xFFFFFFFFu
/* Did the process end (whatever ended it)? */
bool reclaim_result_ended(enum reclaim_result r);

/* The system calls the act uses. Every function returns 0 / a value, or a negative errno. */
struct reclaim_sys {
        void *ctx;
        int (*pidfd_open)(void *ctx, pid_t pid);
        /* start time (stat field 22) and state of pid; -ENOENT/-ESRCH when there is none */
        int (*read_stat)(void *ctx, pid_t pid, uint64_t *ret_start_ticks, char *ret_state);
        int (*send_signal)(void *ctx, int pidfd, int sig);
        /* wait up to timeout_ms for any of the pidfds to become readable (the process exited);
         * sets exited[i]; returns the number that did */
        int (*wait_exit)(void *ctx, const int *pidfds, size_t n, bool *exited, unsigned timeout_ms);
        uint64_t (*now_ms)(void *ctx);
        void (*close_fd)(void *ctx, int fd);
};

/* The real system: pidfd_open/pidfd_send_signal syscalls, /proc (proc_root, kept by
 * reference) for start times, poll(2), CLOCK_MONOTONIC. */
void reclaim_sys_real(struct reclaim_sys *s, const char *proc_root);

/* Is pidfd support there (pidfd_open on ourselves)? 0, or -ENOSYS. */
int reclaim_pidfd_supported(const struct reclaim_sys *s);

/* Re-check a target after opening its pidfd: 0 when its start time is still `expected`,
 * -ESRCH when it is gone (or a zombie), -ESTALE when the PID names another process (*detail, a
 * heap string replaced, says which start times). */
int reclaim_verify_start(const struct reclaim_sys *s, pid_t pid, uint64_t expected, char **detail);

struct reclaim_action {
        pid_t pid;
        char comm[64];
        int gpu;
        int signals[2];                 /* sent, in order (the first signal, then SIGKILL) */
        unsigned n_signals;
        enum reclaim_result result;
        double seconds;                 /* from the first signal of the act to the result */
        char state;                     /* last state seen ('?' unknown) */
        char *detail;                   /* on the heap (util/strf.h), NULL: nothing to say */
        char *detail_en;                /* the detail in English for syslog, NULL: detail is English */
};

/* Set a's detail: fmt, an English sentence marked N_(), in the reader's language, and in English
 * in detail_en where the two differ (syslog lines stay English). */
void reclaim_action_detailf(struct reclaim_action *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Free reclaim_act_run's actions and their details. */
void reclaim_actions_free(struct reclaim_action *a, size_t n);

enum reclaim_event {
        RECLAIM_EV_SIGNAL,              /* a signal was sent (action.signals[n_signals - 1]) */
        RECLAIM_EV_RESULT,              /* the action has its result */
};

struct reclaim_act_opts {
        const struct reclaim_sys *sys;
        int signal;                     /* the first signal (SIGTERM); SIGKILL skips the grace */
        unsigned grace_ms;              /* then SIGKILL; RECLAIM_GRACE_NONE: never (`--grace none`) */
        unsigned timeout_ms;            /* from the first signal: stop waiting for the processes */
        unsigned poll_ms;               /* wake-up period for tick (default 50) */
        void (*log)(void *ctx, const struct reclaim_action *a, enum reclaim_event ev);
        void *log_ctx;
        /* called between the checks and the first signal (stage "open") and before anything
         * is opened (stage "plan"): a test hook */
        void (*pause)(void *ctx, const char *stage);
        void *pause_ctx;
        /* called right before the first signal, then at least every poll_ms while waiting
         * (memory sampling); t_ms is the time since the first signal */
        void (*tick)(void *ctx, uint64_t t_ms);
        void *tick_ctx;
        /* non-zero (the signal's number) once the user asked to stop (stopsig_pending): no
         * signal is sent after it; what is not over is reported "left"; NULL: never */
        int (*stop)(void);
};

/* Act on every target of the plan. Returns 0 with the actions (one per target, in plan
 * order; free() them), or -ENOSYS (no pidfd support: nothing was signalled) / -ENOMEM. After a
 * stop (o->stop), the targets not over have the result RECLAIM_RES_LEFT and 0 is returned. */
int reclaim_act_run(const struct reclaim_plan *p, const struct reclaim_act_opts *o, struct reclaim_action **ret,
                    size_t *ret_n);

/* ---- memory recovery ------------------------------------------------------------------------ */

struct recovery_gpu {
        unsigned index;
        uint64_t expected;              /* bytes that should come back (the planned ghost); 0: none */
        uint64_t tolerance;             /* recovered when used <= before - expected + tolerance */
        bool before_known, after_known;
        uint64_t before, after;         /* used bytes before the first signal, at the end */
        bool recovered;
        double recovery_s;              /* valid if recovered (and expected > 0) */
        unsigned samples;
};

/* Set up the watch of one GPU: the ghost expected back and the tolerance (a tenth of it, at
 * most the noise floor). */
void recovery_init(struct recovery_gpu *g, unsigned index, uint64_t expected, uint64_t noise_floor);
/* Pure: one observation of used bytes t seconds after the first signal (t < 0: the "before"
 * sample). */
void recovery_observe(struct recovery_gpu *g, uint64_t used, double t);
/* Every GPU that expects memory back has it. */
bool recovery_all_done(const struct recovery_gpu *g, size_t n);

/* Sample used memory of the GPUs (memory-only NVML query, gpu_opts.timeout_ms per call) and
 * observe it: as the "before" sample when t0_ms is 0, else at the time the answer came
 * (monotonic ms since t0_ms: the memory was back by then at the latest). Returns 0, or
 * -ENODEV when the driver gave no figures. */
int recovery_sample(const struct gpu_opts *o, struct recovery_gpu *g, size_t n, uint64_t t0_ms);

/* ---- one reclaim at a time -------------------------------------------------------------------- */

/* Take the host's reclaim lock (flock, non-blocking): SIM_DIR/reclaim.lock under the simulator,
 * else /run/ghostvram/reclaim.lock; for a user other than root, when /run/ghostvram is not
 * theirs, $XDG_RUNTIME_DIR/reclaim.lock. Never a world-writable directory such as /tmp: the
 * directory must be a real directory, owned by us or root, writable by no one else (-EPERM),
 * and the lock our own plain file with one link, not a symlink (-ELOOP, -EPERM) — only then is it
 * truncated and our PID written into it. Returns the descriptor (keep it open while acting),
 * -EWOULDBLOCK when another reclaim holds it (*ret_holder: its PID, 0 unknown), or another
 * negative errno. The path tried last goes to path. */
int reclaim_lock(const char *sim_dir, char *path, size_t pathlen, pid_t *ret_holder);
/* The same checks and lock in one directory: DIR/reclaim.lock. */
int reclaim_lock_at(const char *dir, char *path, size_t pathlen, pid_t *ret_holder);

/* ---- a whole cgroup ---------------------------------------------------------------------------- */

/* Resolve --cgroup ARG (a directory under a cgroup2 mount, or a path from the cgroup2 root
 * such as /slurm/job_42) using mountinfo (/proc/self/mountinfo under proc_root). Returns 0
 * with the directory in fs and the cgroup path in rel, -ENOENT (no such cgroup), -ENOTSUP (no
 * cgroup2 mount) or -EINVAL (the root cgroup, or a path outside cgroup2). */
int reclaim_cgroup_resolve(const char *proc_root, const char *arg, char *fs, size_t fslen, char *rel, size_t rellen);

/* Every PID in the cgroup and below it (cgroup.procs), as seen from our PID namespace (0s
 * dropped). Returns 0 and a malloc'd array, or a negative errno. */
int reclaim_cgroup_pids(const char *fs, pid_t **ret, size_t *ret_n);

struct reclaim_cgroup_result {
        bool used_kill_file;            /* cgroup.kill (cgroup v2, Linux 5.14+) */
        unsigned rounds;                /* pidfd SIGKILL rounds of the fallback */
        size_t remaining;               /* PIDs still there at the timeout (or the stop) */
        double seconds;
        int stopped;                    /* the stop signal that ended the wait, 0 none */
};

/* End every process of the cgroup: "1" into cgroup.kill where it exists, else SIGKILL through
 * a pidfd to each PID in cgroup.procs (opened, then checked to still be in the cgroup),
 * repeated until the cgroup is empty; wait at most timeout_ms. Returns 0 (see ret->remaining)
 * or a negative errno (nothing could be done). `tick` and `stop` as in reclaim_act_opts (after
 * a stop, no further round of signals). */
int reclaim_cgroup_kill(const char *fs, const char *rel, const struct reclaim_sys *s, unsigned timeout_ms,
                        void (*tick)(void *ctx, uint64_t t_ms), void *tick_ctx, int (*stop)(void),
                        struct reclaim_cgroup_result *ret);

/* "TERM", "KILL", ... for the signals reclaim accepts; NULL for others. */
const char *reclaim_signal_name(int sig);
/* Parse "TERM", "SIGTERM", "sigterm" or a number into a signal reclaim accepts (HUP, INT, QUIT,
 * USR1, USR2, TERM, KILL). Returns 0 or -EINVAL. */
int reclaim_signal_parse(const char *s, int *ret);
