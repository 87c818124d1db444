/* deadline: run a call that may block forever (a hung driver, a /proc file of a task stuck
 * in the driver) on a worker thread and stop waiting for it after a deadline.
 *
 * A call that misses its deadline cannot be cancelled: its worker is abandoned and keeps
 * running; the argument then belongs to that worker, which frees it with free_arg when (if
 * ever) the call returns. The next call gets a fresh worker. */
#pragma once
#include <pthread.h>
#include <stdbool.h>

typedef int (*deadline_fn)(void *arg);

struct deadline_worker;

struct deadline_runner {
        struct deadline_worker *w;  /* current worker, NULL until first use */
        unsigned abandoned;         /* how many calls missed their deadline */
};

/* Run fn(arg) with a deadline of timeout_ms. On completion returns 0 and stores fn's
 * result in *ret_result; the caller keeps arg. On a missed deadline returns -ETIMEDOUT and
 * arg is handed to the worker (free_arg may be NULL if arg is static). Other errors
 * (-ENOMEM, -EAGAIN from pthread_create) leave arg with the caller and run nothing. */
int deadline_run(struct deadline_runner *r, deadline_fn fn, void *arg, void (*free_arg)(void *),
                 unsigned timeout_ms, int *ret_result);

/* Stop the current worker if it is idle. An abandoned worker is left alone. */
void deadline_runner_done(struct deadline_runner *r);

/* The CLOCK_MONOTONIC time ms milliseconds from now, for pthread_cond_timedwait on a
 * condition variable that uses the monotonic clock. */
struct timespec;
void monotonic_after_ms(unsigned long long ms, struct timespec *ret);

/* Wait on c (a condition variable on the monotonic clock, with its mutex m) until ms have
 * passed or *stop is set (read under m; whoever sets it signals c). Returns !*stop: false as soon
 * as stop is asked. */
bool monotonic_wait_unless(pthread_mutex_t *m, pthread_cond_t *c, const bool *stop, unsigned long long ms);

/* Monotonic milliseconds, for measuring. */
unsigned long long monotonic_ms(void);
double monotonic_s(void);
