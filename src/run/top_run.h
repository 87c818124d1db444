/* top_run: the collector of `ghostvram top`, without argv or a terminal.
 *
 * A thread runs the sampler (run/scan_run.h) every interval and hands each cycle to the
 * caller's hooks: `build` turns it into a frame outside the lock (whoever draws keeps the last
 * frame meanwhile), `publish` takes the frame under the lock, where readers find it. A hung
 * driver call only delays the next frame: the sampler's calls have deadlines, and while one is
 * stuck no new one is made. top_run_stop never waits long on such a call.
 *
 * The same lock guards whatever else the caller shares between its threads (top's reclaim
 * worker, run/top_reclaim.h). Nothing here prints. */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "run/scan_run.h"

struct top_run_hooks {
        /* On the collector thread, without the lock: the cycle's frame (NULL: none). r is
         * sampler_cycle's return; smp is filled when r is 0. */
        void *(*build)(void *ctx, int r, const struct sample *smp);
        /* Under the lock, right after build: make frame (NULL or build's) what readers see; it
         * owns frame from then on. smp as for build. */
        void (*publish)(void *ctx, int r, const struct sample *smp, void *frame);
        void *ctx;
};

struct top_run_opts {
        struct sampler_opts sampler;    /* its wait and wait_ctx are top_run's own */
        uint64_t interval_ms;           /* from the start of one cycle to the next */
        struct top_run_hooks hooks;
};

struct top_run;

/* Create the sampler and start the collector thread (every signal blocked in it). Returns 0
 * and *ret, or a negative errno (nothing left running). */
int top_run_start(const struct top_run_opts *o, struct top_run **ret);
/* The sampler's options of top's collector reading src: nvtop's figures (telemetry per GPU and
 * process) and ECC and row remapping too, a noise floor of floor_mib, the kernel log when
 * kernel, no confirming wait (the second cycle confirms, so the first screen comes at once), and
 * the whole walk only for a single frame (once: --once). */
struct sources;
void top_run_sampler_opts(const struct sources *src, uint64_t floor_mib, bool kernel, bool once,
                          struct sampler_opts *sop);

void top_run_lock(struct top_run *tr);
void top_run_unlock(struct top_run *tr);

/* Under the lock: the cycles finished (each one published); when the running cycle started
 * (monotonic seconds, 0 while none runs); when the collection started. */
unsigned top_run_gen(const struct top_run *tr);
double top_run_cycle_started(const struct top_run *tr);
double top_run_started(const struct top_run *tr);

/* Stop the collector: a wait between cycles ends at once; a cycle in progress is given 1.5 s
 * (it may be waiting on the driver), an idle thread 0.5 s. Returns true when the thread ended
 * and tr was freed (the hooks' frames are the caller's to free then), false when the thread
 * was left in a driver call: tr stays allocated, reachable by the caller, and the thread ends
 * with the process. NULL: true. */
bool top_run_stop(struct top_run *tr);

/* Start a thread with every signal blocked: the main thread alone takes SIGINT, SIGTERM,
 * SIGWINCH. Returns 0 or a negative errno. */
int top_run_thread(pthread_t *th, void *(*fn)(void *), void *arg, bool detach);
