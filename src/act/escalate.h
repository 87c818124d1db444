/* escalate: the last resorts of `ghostvram reclaim` when no process can be ended to free the
 * memory — a GPU reset (--reset-gpu) and a reload of the nvidia_uvm module (--reload-uvm).
 * Each has a pure check that lists every reason to refuse, what would make it safe, and the
 * warnings; the actions (running nvidia-smi, libkmod) are apart. Nothing here prints.
 * docs/reclaim.md describes what each check looks at. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "model/ledger.h"
#include "util/buf.h"

#define ESC_MAX_LINES 24

/* The sentences are heap strings (util/strf.h); free them with escalate_report_clear. */
struct escalate_report {
        bool refuse;
        char *reasons[ESC_MAX_LINES];           /* why it is refused */
        size_t n_reasons;
        char *fixes[ESC_MAX_LINES];             /* what would make it safe */
        size_t n_fixes;
        char *warnings[ESC_MAX_LINES];
        size_t n_warnings;
        char *command;                          /* what it runs (or would run) */
};

/* Add a formatted sentence to lines (at most ESC_MAX_LINES; the same sentence twice is kept once):
 * how the checks fill reasons, fixes and warnings. */
void escalate_line(char **lines, size_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Free a checked report's sentences. The checks overwrite their out: clear a report they
 * filled before checking into it again. */
void escalate_report_clear(struct escalate_report *r);

struct escalate_reset_opts {
        unsigned gpu;
        bool force;             /* allow MIG (destroys every instance) */
        bool simulated;         /* GHOSTVRAM_SIM: never runs anything; refuses at the end */
        bool root;
        pid_t self_pid;
};

/* May GPU o->gpu be reset with `nvidia-smi --gpu-reset -i BUS`? Refused when: the GPU is not
 * in the scan or is lost / had an Xid 79 since the driver loaded (a reboot is needed); MIG is
 * on without force; any process holds its device node or is listed on it (daemons named with
 * the command that stops them); persistence mode is on; not root; a simulated host. Warns that
 * pre-Hopper GPUs on NVLink must be reset with their peers. Returns 0 (see out->refuse). */
int escalate_reset_check(const struct scan_result *r, const struct escalate_reset_opts *o,
                         struct escalate_report *out);

/* The state of nvidia_uvm on this host (/sys/module, /proc/devices). */
struct escalate_uvm_state {
        bool module_loaded;
        long refcnt;            /* -1 unknown */
        unsigned major;         /* character device major of nvidia-uvm, 0 unknown */
        bool have_kmod;         /* built with libkmod */
};

struct escalate_uvm_opts {
        bool force;             /* required */
        bool simulated;
        bool root;
        pid_t self_pid;
};

/* May nvidia_uvm be unloaded and loaded again? Refused on a simulated host, without libkmod,
 * when the module is not loaded, while anyone holds nvidia-uvm (every CUDA process does) or
 * the module is in use, without force, and when not root. Warns that the device's major
 * number may change. Returns 0 (see out->refuse). */
int escalate_uvm_check(const struct scan_result *r, const struct escalate_uvm_opts *o,
                       const struct escalate_uvm_state *st, struct escalate_report *out);

/* Read the module's state under sys_root ("/sys") and proc_root ("/proc"). Returns 0. */
int escalate_uvm_state_read(const char *sys_root, const char *proc_root, struct escalate_uvm_state *ret);

/* Unload and load nvidia_uvm again through libkmod. Returns 0, -ENOTSUP without libkmod, or a
 * negative errno with a sentence in err. */
int escalate_uvm_reload(char *err, size_t errlen);

/* Find an executable `name` in $PATH. Returns 0 or -ENOENT. */
int escalate_find_program(const char *name, char *out, size_t outlen);

/* How long a killed program may take to end (a reset stuck in the driver takes its SIGKILL only
 * when its driver call returns). */
#define ESCALATE_KILL_WAIT_MS 5000

/* Run argv[0] (a path; no shell), its output (stdout and stderr, capped) into out, waiting at
 * most timeout_ms for it to end — output closed or not — then SIGKILL through a pidfd and at most
 * ESCALATE_KILL_WAIT_MS more. Returns 0 with the exit status in *ret_status (128+N for signal
 * N), -ETIMEDOUT (killed at the deadline), -EDEADLK (still there after SIGKILL: *ret_stuck is
 * its PID, left unreaped), or a negative errno. */
int escalate_run(char *const argv[], unsigned timeout_ms, struct buf *out, int *ret_status, pid_t *ret_stuck);
