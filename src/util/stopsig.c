#define _GNU_SOURCE 1
/* stopsig: the stop signals as a flag. See stopsig.h. */
#include "util/stopsig.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static const int stop_signals[3] = { SIGINT, SIGTERM, SIGHUP };
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
        if (!stop_signal)
                stop_signal = sig;
}

void stopsig_catch(struct stopsig_saved *saved)
{
        memset(saved, 0, sizeof(*saved));
        struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART: waits wake with EINTR */
        sigemptyset(&sa.sa_mask);
        for (int i = 0; i < 3; i++) {
                if (sigaction(stop_signals[i], NULL, &saved->old[i]) < 0 || saved->old[i].sa_handler == SIG_IGN)
                        continue;
                saved->caught[i] = sigaction(stop_signals[i], &sa, NULL) == 0;
        }
}

void stopsig_restore(const struct stopsig_saved *saved)
{
        for (int i = 0; i < 3; i++)
                if (saved->caught[i])
                        sigaction(stop_signals[i], &saved->old[i], NULL);
}

int stopsig_pending(void)
{
        return stop_signal;
}

const char *stopsig_name(int sig)
{
        switch (sig) {
        case SIGINT: return "SIGINT";
        case SIGTERM: return "SIGTERM";
        case SIGHUP: return "SIGHUP";
        default: return "a signal";
        }
}

bool stopsig_sleep_ms(unsigned ms)
{
        /* in steps of 100 ms at most: a signal that lands between the look at the flag and
         * nanosleep() waits one step, not the whole sleep */
        while (ms && !stop_signal) {
                unsigned step = ms < 100 ? ms : 100;
                struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)step * 1000000L };
                while (!stop_signal && nanosleep(&ts, &ts) < 0 && errno == EINTR)
                        ;
                ms -= step;
        }
        return !stop_signal;
}
