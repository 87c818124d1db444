#include "util/range.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole decimal number ([-+]digits[.digits]), no exponent, no hex, no "inf"/"nan". */
static int parse_number(const char *s, size_t len, double *ret)
{
        char tmp[64];
        if (len == 0 || len >= sizeof(tmp))
                return -EINVAL;
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        size_t i = 0;
        if (tmp[i] == '-' || tmp[i] == '+')
                i++;
        size_t digits = 0, dots = 0;
        for (; tmp[i]; i++) {
                if (tmp[i] >= '0' && tmp[i] <= '9')
                        digits++;
                else if (tmp[i] == '.' && dots++ == 0)
                        continue;
                else
                        return -EINVAL;
        }
        if (digits == 0)
                return -EINVAL;
        char *end;
        errno = 0;
        double v = strtod(tmp, &end);
        if (errno || *end || !isfinite(v))
                return -EINVAL;
        *ret = v;
        return 0;
}

int range_parse(const char *s, struct range *ret)
{
        struct range r = { 0 };
        if (!s)
                return -EINVAL;
        if (*s == '@') {
                r.inside = true;
                s++;
        }
        if (!*s)
                return -EINVAL;
        const char *colon = strchr(s, ':');
        if (!colon) {
                /* "N": 0..N */
                if (parse_number(s, strlen(s), &r.end) < 0)
                        return -EINVAL;
                r.start = 0;
        } else {
                size_t slen = (size_t)(colon - s);
                if (slen == 1 && s[0] == '~')
                        r.start_inf = true;
                else if (parse_number(s, slen, &r.start) < 0)
                        return -EINVAL;     /* an empty start is not allowed: write 0: or ~: */
                const char *e = colon + 1;
                if (!*e)
                        r.end_inf = true;
                else if (parse_number(e, strlen(e), &r.end) < 0)
                        return -EINVAL;
        }
        if (r.start_inf && r.end_inf)
                return -EINVAL;         /* "~:" alerts on nothing (or everything with @) */
        if (!r.start_inf && !r.end_inf && r.start > r.end)
                return -EINVAL;
        *ret = r;
        return 0;
}

bool range_alert(const struct range *r, double value)
{
        bool in = (r->start_inf || value >= r->start) && (r->end_inf || value <= r->end);
        return r->inside ? in : !in;
}

static int fmt_num(char *out, size_t outlen, double v)
{
        int n;
        /* a whole number is printed whole up to 2^64 (bytes in performance data), never as
         * 1.04858e+26 */
        if (v == floor(v) && fabs(v) < 18446744073709551616.0)
                n = snprintf(out, outlen, "%.0f", v);
        else
                n = snprintf(out, outlen, "%.6g", v);
        return n < 0 || (size_t)n >= outlen ? -ENOSPC : 0;
}

int range_format(const struct range *r, double scale, char *out, size_t outlen)
{
        char a[40] = "", b[40] = "";
        if (!r->start_inf && fmt_num(a, sizeof(a), r->start * scale) < 0)
                return -ENOSPC;
        if (!r->end_inf && fmt_num(b, sizeof(b), r->end * scale) < 0)
                return -ENOSPC;
        int n;
        if (!r->start_inf && r->start == 0 && !r->end_inf)
                n = snprintf(out, outlen, "%s%s", r->inside ? "@" : "", b);
        else
                n = snprintf(out, outlen, "%s%s:%s", r->inside ? "@" : "", r->start_inf ? "~" : a, b);
        return n < 0 || (size_t)n >= outlen ? -ENOSPC : 0;
}
