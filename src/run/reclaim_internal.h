/* reclaim_run's own pieces, shared by its files (reclaim_run.c: the run, the sampler and what
 * the modes share; reclaim_processes.c, reclaim_cgroup.c, reclaim_escalate.c: the modes). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/reclaim_run.h"

#define RC_MAX_ANCESTORS 64

struct rc_ctx {
        const struct reclaim_run_opts *o;
        const struct reclaim_io *io;
        struct scan_once *scan;
        const struct scan_result *res;
        struct reclaim_plan_opts po;
        struct host_proc self;
        pid_t anc[RC_MAX_ANCESTORS];
        struct reclaim_sys sys;
        bool acting;
        int lock_fd;
};

/* Memory sampling while acting: the first call is the "before" sample. Each GPU's samples go
 * out as they come: the one before, then one a second at most, the one that shows the memory
 * back, and the last. */
struct sampler {
        struct gpu_opts go;
        const struct rc_ctx *x;         /* where the lines go */
        struct recovery_gpu *g;
        size_t n;
        bool have_before;
        uint64_t t0;            /* monotonic ms of the first signal */
        uint64_t last;
        unsigned failed;        /* samples the driver gave no figures for */
        bool last_failed;       /* the latest one: the driver stopped answering */
        uint64_t *shown;        /* per GPU: monotonic ms of the last line, 0 none */
        bool *shown_back;       /* per GPU: the line that says it is back went out */
        bool *unsaid;           /* per GPU: its latest sample has no line yet */
};

int sampler_init(struct sampler *s, const struct rc_ctx *x, struct recovery_gpu *g, size_t n);
void sampler_done(struct sampler *s);
/* act/reclaim_act's tick: the "before" sample first, then one each RECLAIM_SAMPLE_MS */
void sampler_tick(void *ctx, uint64_t t_ms);
/* Keep sampling until every GPU has its memory back, timeout_ms from the first signal, or a
 * stop signal; then the last lines. */
void sampler_finish(struct sampler *s, uint64_t timeout_ms);
/* Seconds since the first signal (0 before it). */
double sampler_elapsed(const struct sampler *s);

void rc_note(struct reclaim_report *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rc_summary(struct reclaim_report *rep, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void rc_error(const struct rc_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A stop signal came: the report says so, and the exit status is 128+N. */
void rc_stopped(struct reclaim_report *rep, double after_s);
void rc_stopped_before_acting(struct reclaim_report *rep);
/* Stopped while acting: what ended, and the PIDs left. */
void rc_stopped_acting(struct reclaim_report *rep, const struct reclaim_action *acts, size_t n, double after_s);
/* Each signal and result: to syslog, and to the caller (ctx: the sampler, whose clock started
 * at the first signal). */
void rc_event(void *ctx, const struct reclaim_action *a, enum reclaim_event ev);
/* The plan, before acting (once); the report at the end. */
void rc_out_plan(const struct rc_ctx *x, struct reclaim_report *rep);
void rc_out_report(const struct rc_ctx *x, struct reclaim_report *rep);
/* Hostile text made safe for a log line or a note. */
void rc_esc_copy(char *out, size_t n, const char *s);
/* Take the host's reclaim lock into x->lock_fd; -1 (the report says why) when it is held. */
int rc_take_lock(struct rc_ctx *x, struct reclaim_report *rep);
/* The GPUs to watch: those only_gpu selects; memory expected back where one of pids holds a
 * confirmed ghost. NULL when out of memory. */
struct recovery_gpu *rc_watch_list(const struct scan_result *res, int only_gpu, const pid_t *pids, size_t n_pids,
                                   size_t *ret_n);

int rc_mode_processes(struct rc_ctx *x, struct reclaim_report *rep);
int rc_mode_cgroup(struct rc_ctx *x, struct reclaim_report *rep);
int rc_mode_escalate(struct rc_ctx *x, struct reclaim_report *rep);
int rc_mode_poke(struct rc_ctx *x, struct reclaim_report *rep);
