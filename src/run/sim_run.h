/* sim_run: the use cases of `ghostvram sim` (docs/simulator.md) beside the simulator's state
 * library (sim/state/simstate.h), without argv and without printing: where `sim init` may build
 * a host, a simulated CUDA job started and waited for until it reports, and what the driver
 * sees now for `sim status`. What is shown: render/sim_render.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "simstate.h"

#define SIM_RUN_TIMEOUT_MS 30000        /* how long a job has to report that it is ready */

/* How a use case ended: the command's exit status is the caller's. */
enum sim_outcome {
        SIM_DONE = 0,
        SIM_BAD_USAGE,                  /* not a simulated host, no such GPU */
        SIM_FAILED,                     /* the job or the host's files failed */
};

/* Where init may build a host: a new or an empty directory, never the root directory (its dev/
 * would be the host's /dev) nor one holding other files. 0 (missing, or empty), -EEXIST (a
 * simulated host is there), -ENOTDIR (not a directory: *ret_mode says what), -EPERM (the root
 * directory), -ENOTEMPTY (other files), or the negative errno of opening it. */
int sim_init_target(const char *dir, unsigned *ret_mode);
/* `sim init`: a simulated host built in dir (sim_init_dir) where sim_init_target allows it.
 * SIM_DONE, SIM_BAD_USAGE (a place init refuses, or a host already there) or SIM_FAILED (it
 * could not be built); err says why in one line ("DIR: not empty and ..."). */
enum sim_outcome sim_init_run(const char *dir, unsigned gpus, uint64_t memory_mib, uint64_t reserved_mib, char *err,
                              size_t len);

/* A simulated CUDA job (gv-simcuda) as `sim run` starts it. */
struct sim_job {
        const char *dir, *alloc;
        unsigned gpu, workers, gi, setsid_workers;
        uint64_t mib;
        bool have_gpu, close_fds, exec_child, worker_setsid, launcher, launcher_exits, busy, have_setsid_workers, mps;
};

/* What the job reports, line by line as it was written: its processes ("owner PID",
 * "worker PID", ...) and every error, of the job or of starting it (one line each). */
struct sim_job_cb {
        void (*process)(void *ctx, const char *line);
        void (*error)(void *ctx, const char *msg);
        void *ctx;
};

/* Start j in the background (its own session, output to DIR/jobs.log) and wait until it
 * reports ready, fails, or SIM_RUN_TIMEOUT_MS pass; a job that did not start is killed, a
 * launcher that exits once ready is waited for. SIM_DONE, SIM_BAD_USAGE or SIM_FAILED. */
enum sim_outcome sim_job_start(const struct sim_job *j, const struct sim_job_cb *cb);

/* What the simulated driver sees now (sim_observe), and its knobs. */
struct sim_status {
        struct sim_client *cl;
        struct sim_knobs *k;
        struct sim_observation *o;
        bool api_lock_held;             /* a hung call holds the driver's API lock */
        bool open;                      /* cl is open */
};

/* Read DIR's state into *ret. SIM_DONE, SIM_BAD_USAGE (not a simulated host) or SIM_FAILED;
 * err says why. Free ret with sim_status_free in every case. */
enum sim_outcome sim_status_read(const char *dir, struct sim_status *ret, char *err, size_t errlen);
void sim_status_free(struct sim_status *s);
