/* range: threshold ranges of the Monitoring Plugins Development Guidelines
 * (https://www.monitoring-plugins.org/doc/guidelines.html#THRESHOLDFORMAT).
 *
 *   10       alert if the value is < 0 or > 10       (outside 0..10)
 *   10:      alert if < 10                            (outside 10..+inf)
 *   ~:10     alert if > 10                            (outside -inf..10)
 *   10:20    alert if < 10 or > 20                    (outside 10..20)
 *   @10:20   alert if >= 10 and <= 20                 (inside 10..20)
 *
 * The ends are inclusive; "~" is minus infinity and an empty end is plus infinity. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct range {
        double start, end;
        bool start_inf;         /* "~": no lower end */
        bool end_inf;           /* "10:": no upper end */
        bool inside;            /* "@": alert inside the range instead of outside */
};

/* Parse a range. Returns 0, or -EINVAL for anything else (empty, junk, start > end, NaN,
 * infinities written as numbers). *ret is written only on success. */
int range_parse(const char *s, struct range *ret);

/* Does value raise an alert against r? */
bool range_alert(const struct range *r, double value);

/* The range in the guidelines' syntax, with both ends multiplied by scale (thresholds in MiB
 * shown in bytes in performance data). Returns 0 or -ENOSPC. */
int range_format(const struct range *r, double scale, char *out, size_t outlen);
