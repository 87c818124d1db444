/* timefmt: times as RFC 3339 text, the one form every JSON document and log line uses. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* epoch (seconds since 1970, UTC) as "2026-11-30T10:11:12Z"; with_fraction adds the
 * microseconds when there are any ("2026-11-30T10:11:12.250000Z"). 0, or -ERANGE for a time
 * outside 1970..9999, -ENOSPC when out is too small (32 bytes always suffice). */
int rfc3339_format(double epoch, bool with_fraction, char *out, size_t outlen);
/* The wall clock now, in seconds since 1970 (CLOCK_REALTIME). */
double wall_clock_now(void);
