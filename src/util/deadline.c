#include "util/deadline.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct deadline_worker {
        pthread_mutex_t m;
        pthread_cond_t c;       /* monotonic clock */
        unsigned refs;          /* the runner and the thread */
        bool has_job, done, quit, abandoned;
        deadline_fn fn;
        void *arg;
        void (*free_arg)(void *);
        int result;
};

unsigned long long monotonic_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000ull;
}

void monotonic_after_ms(unsigned long long ms, struct timespec *ret)
{
        clock_gettime(CLOCK_MONOTONIC, ret);
        ret->tv_sec += (time_t)(ms / 1000);
        ret->tv_nsec += (long)(ms % 1000) * 1000000L;
        if (ret->tv_nsec >= 1000000000L) {
                ret->tv_sec++;
                ret->tv_nsec -= 1000000000L;
        }
}

double monotonic_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void worker_unref_locked(struct deadline_worker *w, bool *freed)
{
        *freed = --w->refs == 0;
}

static void worker_unref(struct deadline_worker *w)
{
        bool freed;
        pthread_mutex_lock(&w->m);
        worker_unref_locked(w, &freed);
        pthread_mutex_unlock(&w->m);
        if (freed) {
                pthread_cond_destroy(&w->c);
                pthread_mutex_destroy(&w->m);
                free(w);
        }
}

static void *worker_main(void *p)
{
        struct deadline_worker *w = p;
        pthread_mutex_lock(&w->m);
        for (;;) {
                while (!w->has_job && !w->quit)
                        pthread_cond_wait(&w->c, &w->m);
                if (!w->has_job)
                        break;
                pthread_mutex_unlock(&w->m);
                int res = w->fn(w->arg);
                pthread_mutex_lock(&w->m);
                w->result = res;
                w->has_job = false;
                w->done = true;
                if (w->abandoned) {
                        if (w->free_arg)
                                w->free_arg(w->arg);
                        break;
                }
                pthread_cond_broadcast(&w->c);
        }
        pthread_mutex_unlock(&w->m);
        worker_unref(w);
        return NULL;
}

static int worker_new(struct deadline_worker **ret)
{
        struct deadline_worker *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&w->c, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&w->m, NULL);
        w->refs = 2;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, 256 * 1024);
        pthread_t t;
        int e = pthread_create(&t, &a, worker_main, w);
        pthread_attr_destroy(&a);
        if (e) {
                pthread_cond_destroy(&w->c);
                pthread_mutex_destroy(&w->m);
                free(w);
                return -e;
        }
        *ret = w;
        return 0;
}

int deadline_run(struct deadline_runner *r, deadline_fn fn, void *arg, void (*free_arg)(void *),
                 unsigned timeout_ms, int *ret_result)
{
        if (!r->w) {
                int e = worker_new(&r->w);
                if (e < 0)
                        return e;
        }
        struct deadline_worker *w = r->w;
        if (!w)
                return -ENOMEM; /* not reached: worker_new sets it on success */
        struct timespec until;
        monotonic_after_ms(timeout_ms, &until);

        pthread_mutex_lock(&w->m);
        w->fn = fn;
        w->arg = arg;
        w->free_arg = free_arg;
        w->done = false;
        w->has_job = true;
        pthread_cond_broadcast(&w->c);
        int e = 0;
        while (!w->done && e != ETIMEDOUT)
                e = pthread_cond_timedwait(&w->c, &w->m, &until);
        if (w->done) {
                *ret_result = w->result;
                pthread_mutex_unlock(&w->m);
                return 0;
        }
        w->abandoned = true;
        pthread_mutex_unlock(&w->m);
        r->w = NULL;
        r->abandoned++;
        worker_unref(w);
        return -ETIMEDOUT;
}

void deadline_runner_done(struct deadline_runner *r)
{
        struct deadline_worker *w = r->w;
        if (!w)
                return;
        pthread_mutex_lock(&w->m);
        w->quit = true;
        pthread_cond_broadcast(&w->c);
        pthread_mutex_unlock(&w->m);
        r->w = NULL;
        worker_unref(w);
}

bool monotonic_wait_unless(pthread_mutex_t *m, pthread_cond_t *c, const bool *stop, unsigned long long ms)
{
        struct timespec until;
        monotonic_after_ms(ms, &until);
        pthread_mutex_lock(m);
        int r = 0;
        while (!*stop && r != ETIMEDOUT)
                r = pthread_cond_timedwait(c, m, &until);
        bool go_on = !*stop;
        pthread_mutex_unlock(m);
        return go_on;
}
