/* experiment: reproduce the ghost on purpose and measure it — the pieces that are not the
 * command's plumbing: the CUDA job of a real host (the driver API loaded at run time), the
 * statistics over repeated runs and the kernel events a run produced. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/xid.h"

/* ---- the job on a real host -------------------------------------------------------------------- */

/* Run in a process of its own (exec'd with CUDA_DEVICE_ORDER=PCI_BUS_ID in its environment,
 * never in the forked child of a threaded process): start a new session (a job as a scheduler starts it), load
 * libcuda.so.1 with dlopen, cuInit, take CUDA device `gpu` (with PCI_BUS_ID order the ordinal
 * is NVML's index), retain its primary context (else create one), cuMemAlloc_v2
 * `mib` MiB, then fork `workers` children that inherit the context's descriptors and mappings,
 * as data-loader workers do. Reports "owner PID", "worker PID"..., "ready" — or "error
 * MESSAGE" — on report_fd, closes it, and every process sleeps until killed. Never returns. */
void cuda_job_main(unsigned gpu, uint64_t mib, unsigned workers, int report_fd) __attribute__((noreturn));

/* ---- statistics ------------------------------------------------------------------------------- */

struct exp_stats {
        size_t n;
        double median, min, max;
};

/* Median (mean of the middle two for an even count), minimum and maximum of v[0..n). n == 0
 * gives n 0 and zeros. v is not changed. Returns 0 or -ENOMEM. */
int exp_stats_of(const double *v, size_t n, struct exp_stats *ret);

/* ---- kernel events of a run -------------------------------------------------------------------- */

struct exp_kernel {
        unsigned xid45;         /* expected after a kill: the driver tore the dead owner's channels down */
        unsigned errors;        /* other Xids and driver errors (GSP, watchdog, fallen off the bus, UVM) */
        unsigned other;         /* NVIDIA lines that are neither (driver load, GPU UUID, ...) */
        const struct xid_event *first_new;      /* into `after` */
        size_t n_new;
};

/* The events of `after` that `before` did not have: those with a later /dev/kmsg sequence
 * number when both have them, else those past before's count (a log only grows). */
void exp_kernel_delta(const struct xid_list *before, const struct xid_list *after, struct exp_kernel *ret);
