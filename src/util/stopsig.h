/* stopsig: SIGINT, SIGTERM and SIGHUP taken into a flag, so that a command that acts (reclaim,
 * experiment) stops between two steps, says what it did and what it left, and exits 128+N
 * instead of dying with its report unwritten.
 *
 * The handler only stores the signal number (async-signal-safe). It is installed without
 * SA_RESTART: a poll(2), nanosleep(2) or read(2) in progress returns EINTR, so bounded waits
 * wake at once and look at the flag. A signal ignored when the command started (a background
 * job of a non-interactive shell ignores SIGINT) stays ignored. */
#pragma once
#include <signal.h>
#include <stdbool.h>

struct stopsig_saved {
        struct sigaction old[3];
        bool caught[3];
};

/* Catch the stop signals not ignored at start; the old dispositions go to saved. */
void stopsig_catch(struct stopsig_saved *saved);
/* Give the old dispositions back (the flag stays). */
void stopsig_restore(const struct stopsig_saved *saved);
/* The first stop signal caught (SIGINT, SIGTERM, SIGHUP), 0 while none came. */
int stopsig_pending(void);
/* "SIGTERM" for a stop signal, "a signal" otherwise. */
const char *stopsig_name(int sig);
/* Sleep ms milliseconds, or less when a stop signal comes. Returns false when one came. */
bool stopsig_sleep_ms(unsigned ms);
