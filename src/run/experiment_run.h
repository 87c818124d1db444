/* experiment_run: the use case of `ghostvram experiment`, without argv and without printing.
 * A job allocates GPU memory and forks workers (the simulated application, `ghostvram sim run`,
 * or a CUDA job on a real host); its owner is killed; the GPU's used memory is sampled until it
 * is back at the baseline or the wait is over, with the kernel events the run produced; with
 * reclaim, the same after `ghostvram reclaim --yes --pid WORKERS`. Every process a run starts
 * is stopped (SIGKILL through pidfds) before the next. A stop signal (util/stopsig) ends it
 * early; the runs so far are kept. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "act/experiment.h"
#include "act/reclaim_act.h"
#include "collect/gpu.h"
#include "run/sources.h"

#define EXP_MAX_WORKERS 64
#define EXP_MAX_REPEAT 100
#define EXP_CUDA_CHILD "--cuda-job-child" /* internal: the job process of a real host */

struct exp_opts {
        unsigned gpu, workers, repeat;
        uint64_t mib;
        int signal;                     /* sent to the owner */
        bool reclaim;
        uint64_t wait_ms, confirm_ms;
        struct gpu_opts go;             /* the memory figures (memory_only) */
        bool simulated;
        const char *sim_dir;            /* with simulated */
        const char *nvml_lib;           /* passed on to reclaim (never with simulated) */
        unsigned call_timeout_ms;       /* reclaim's --call-timeout */
        const char *self;               /* the ghostvram to run (sim run, reclaim, the CUDA job);
                                         * NULL: this program */
        const struct reclaim_sys *sys;  /* pidfds, signals, the clock */
        void (*progress)(void *ctx, unsigned run, unsigned of); /* a run starts; may be NULL */
        void *ctx;
};

/* One observation phase: used memory sampled until it is back at the baseline or the timeout. */
struct phase {
        bool measured;
        uint64_t residual;
        bool recovered;
        double recovery_s;
        json_t *samples;        /* [[seconds, used_bytes], ...] */
};

struct exp_run {
        pid_t owner;
        pid_t workers[EXP_MAX_WORKERS];
        unsigned n_workers;
        bool owner_is_child;
        int pidfds[EXP_MAX_WORKERS + 1];
        unsigned n_pidfds;
        uint64_t baseline, allocated;
        struct phase after_kill, after_reclaim;
        struct exp_kernel kernel;
        json_t *kernel_events;
        bool kernel_read;
        int reclaim_status;
        json_t *reclaim_doc;
        bool reclaimed;
        bool stopped;           /* a stop signal cut it short: not in the statistics */
};

struct exp_result {
        struct exp_run *runs;   /* o->repeat of them; `done` were run */
        size_t done;
        size_t complete;        /* done, less a last one a stop cut short */
        unsigned left;          /* processes it started that did not end within 2 s of SIGKILL */
        bool unrecovered;       /* with reclaim: a run whose memory did not come back */
        char error[320];        /* why it ended early (-ENODEV, -EIO...), or "" */
};

/* Before the runs: does the driver answer (o->go)? 0 with the number of its GPUs in
 * *ret_n_gpus, or -ENODEV with why (the driver's error, or that there is none) in err. */
int experiment_probe(const struct exp_opts *o, size_t *ret_n_gpus, char *err, size_t errlen);

/* Before the runs, from the command line: o's sources from s (the driver's memory figures, a
 * simulated host, reclaim's library and call deadline), the GPU gpu_spec names (an index, a
 * UUID or a PCI bus id; NULL: o->gpu) into o->gpu, and the driver probed (experiment_probe).
 * EXIT_OK, or the exit status with its sentence in err: EXIT_USAGE (no such GPU) or
 * EXIT_INCOMPLETE (no driver, nothing to look a UUID up in). */
int experiment_prepare(struct exp_opts *o, const struct sources *s, const char *gpu_spec, char *err,
                       size_t errlen);

/* The CUDA job of a real host, exec'd by a run as `ghostvram experiment EXP_CUDA_CHILD GPU MIB
 * WORKERS` (argv from EXP_CUDA_CHILD on, argc 4) with its report on fd 3: cuda_job_main, which
 * never returns; EXIT_USAGE for arguments that are not numbers in range. */
int experiment_cuda_child(int argc, char **argv);

/* Run o->repeat runs. Returns 0 (also when a stop signal ended it: stopsig_pending() says),
 * or a negative errno with ret->error saying why (the runs before it are kept): -ENOSYS, and
 * nothing started, where pidfd_open is missing (Linux < 5.3). Free ret with exp_result_free. */
int experiment_run(const struct exp_opts *o, struct exp_result *ret);
void exp_result_free(struct exp_result *r, unsigned repeat);

/* The statistics of one phase (after the kill, or after reclaim) over the complete runs. */
struct exp_summary {
        struct exp_stats residual_mib, recovery_s;
        size_t recovered, runs;
        unsigned xid45, errors;
};
void exp_summarise(const struct exp_run *runs, size_t n, bool reclaim, struct exp_summary *ret);
