#define _GNU_SOURCE 1
/* stopwait: SIGINT and SIGTERM blocked and waited for (util/stopwait.h). */
#include "util/stopwait.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "util/deadline.h"

static bool stop_seen;

void stopwait_block(void)
{
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
}

bool stopwait_ms(void *unused, uint64_t ms)
{
        (void)unused;
        if (stop_seen)
                return false;
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        unsigned long long until = monotonic_ms() + (ms == UINT64_MAX ? 0 : ms);
        for (;;) {
                int sig;
                if (ms == UINT64_MAX) {
                        sig = sigwaitinfo(&set, NULL);
                } else {
                        unsigned long long now = monotonic_ms();
                        unsigned long long left = until > now ? until - now : 0; /* 0: poll once */
                        struct timespec ts = { .tv_sec = (time_t)(left / 1000), .tv_nsec = (long)(left % 1000) * 1000000L };
                        sig = sigtimedwait(&set, NULL, &ts);
                        if (sig < 0 && errno == EAGAIN)
                                return true;
                }
                if (sig == SIGINT || sig == SIGTERM) {
                        stop_seen = true;
                        return false;
                }
                /* EINTR (another signal): keep waiting */
        }
}

bool stopwait_requested(void)
{
        if (stop_seen)
                return true;
        sigset_t pend;
        if (sigpending(&pend) == 0 && (sigismember(&pend, SIGINT) == 1 || sigismember(&pend, SIGTERM) == 1))
                return !stopwait_ms(NULL, 0);
        return false;
}
