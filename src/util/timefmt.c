#include "util/timefmt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

int rfc3339_format(double epoch, bool with_fraction, char *out, size_t outlen)
{
        if (!isfinite(epoch) || epoch < 0 || epoch > 253402300799.0)
                return -ERANGE;
        time_t t = (time_t)floor(epoch);
        long us = with_fraction ? lround((epoch - floor(epoch)) * 1e6) : 0;
        if (us >= 1000000) {
                t++;
                us = 0;
        }
        struct tm tm;
        if (!gmtime_r(&t, &tm))
                return -ERANGE;
        char base[32];
        if (strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                return -ERANGE;
        int n = us ? snprintf(out, outlen, "%s.%06ldZ", base, us) : snprintf(out, outlen, "%sZ", base);
        return n < 0 || (size_t)n >= outlen ? -ENOSPC : 0;
}

double wall_clock_now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
