#define _GNU_SOURCE /* pthread_timedjoin_np */
#include "run/top_run.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/sources.h"
#include "util/deadline.h"

struct top_run {
        struct top_run_opts o;
        struct sampler *sampler;
        pthread_t thread;
        pthread_mutex_t m;
        pthread_cond_t cv;              /* monotonic; signalled on stop */
        /* guarded by m */
        bool stop;
        double cycle_started;           /* monotonic seconds, 0 while none runs */
        double started;                 /* monotonic seconds: when the collection started */
        unsigned gen;                   /* cycles finished */
};

/* The sampler's wait (and the pause between cycles): false as soon as stop is asked. */
static bool top_run_wait(void *ctx, uint64_t ms)
{
        struct top_run *tr = ctx;
        return monotonic_wait_unless(&tr->m, &tr->cv, &tr->stop, ms);
}

/* One cycle: the sample, the frame built, then published with the count under the lock.
 * Returns false when the sampler was asked to stop. */
static bool top_run_cycle(struct top_run *tr)
{
        pthread_mutex_lock(&tr->m);
        tr->cycle_started = monotonic_s();
        pthread_mutex_unlock(&tr->m);
        struct sample smp;
        int r = sampler_cycle(tr->sampler, &smp);
        if (r == -EINTR)
                return false;
        const struct top_run_hooks *h = &tr->o.hooks;
        void *frame = h->build ? h->build(h->ctx, r, &smp) : NULL;
        pthread_mutex_lock(&tr->m);
        tr->cycle_started = 0;
        if (h->publish)
                h->publish(h->ctx, r, &smp, frame);
        tr->gen++;
        pthread_mutex_unlock(&tr->m);
        return true;
}

static void *top_run_main(void *arg)
{
        struct top_run *tr = arg;
        for (;;) {
                unsigned long long t0 = monotonic_ms();
                if (!top_run_cycle(tr))
                        break;
                unsigned long long spent = monotonic_ms() - t0;
                if (!top_run_wait(tr, spent < tr->o.interval_ms ? tr->o.interval_ms - spent : 0))
                        break;
        }
        return NULL;
}

int top_run_thread(pthread_t *th, void *(*fn)(void *), void *arg, bool detach)
{
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int r = -pthread_create(th, NULL, fn, arg);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!r && detach)
                pthread_detach(*th);
        return r;
}

/* The lock and the condition (monotonic, as the waits' deadlines are). */
static void top_run_sync_init(struct top_run *tr)
{
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&tr->cv, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&tr->m, NULL);
}

static void top_run_free(struct top_run *tr)
{
        sampler_free(tr->sampler);
        pthread_cond_destroy(&tr->cv);
        pthread_mutex_destroy(&tr->m);
        free(tr);
}

int top_run_start(const struct top_run_opts *o, struct top_run **ret)
{
        struct top_run *tr = calloc(1, sizeof(*tr));
        if (!tr)
                return -ENOMEM;
        tr->o = *o;
        tr->o.sampler.wait = top_run_wait;
        tr->o.sampler.wait_ctx = tr;
        top_run_sync_init(tr);
        int r = sampler_new(&tr->o.sampler, &tr->sampler);
        tr->started = monotonic_s();
        if (r == 0)
                r = top_run_thread(&tr->thread, top_run_main, tr, false);
        if (r < 0) {
                top_run_free(tr);
                return r;
        }
        *ret = tr;
        return 0;
}

void top_run_lock(struct top_run *tr)
{
        pthread_mutex_lock(&tr->m);
}

void top_run_unlock(struct top_run *tr)
{
        pthread_mutex_unlock(&tr->m);
}

unsigned top_run_gen(const struct top_run *tr)
{
        return tr->gen;
}

double top_run_cycle_started(const struct top_run *tr)
{
        return tr->cycle_started;
}

double top_run_started(const struct top_run *tr)
{
        return tr->started;
}

bool top_run_stop(struct top_run *tr)
{
        if (!tr)
                return true;
        pthread_mutex_lock(&tr->m);
        tr->stop = true;
        bool in_cycle = tr->cycle_started > 0;
        pthread_cond_broadcast(&tr->cv);
        pthread_mutex_unlock(&tr->m);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 500 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        /* a cycle in progress may wait on the driver: give it a second more, then leave it
         * (the thread ends with the process) */
        if (in_cycle)
                until.tv_sec++;
        if (pthread_timedjoin_np(tr->thread, NULL, &until) != 0)
                return false;
        top_run_free(tr);
        return true;
}

void top_run_sampler_opts(const struct sources *src, uint64_t floor_mib, bool kernel, bool once,
                          struct sampler_opts *sop)
{
        struct scan_once_opts so;
        sources_scan_once_opts(src, &so);
        memset(sop, 0, sizeof(*sop));
        sop->facts = so.facts;
        sop->facts.read_kernel = kernel;
        sop->facts.gpu.telemetry = true;
        sop->facts.gpu.health = true;
        sop->ledger = so.ledger;
        sop->ledger.floor_min_bytes = floor_mib << 20;
        sop->confirm_ms = 0;
        sop->light = !once;
}
