#include "util/parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int parse_u64_prefix(const char *s, int base, uint64_t *ret, const char **ret_end)
{
        if (!s || !(base == 10 || base == 16))
                return -EINVAL;
        const char *p = s;
        if (*p == '+')
                p++;
        if (base == 16 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
                p += 2;
        uint64_t v = 0;
        const char *start = p;
        for (;; p++) {
                int d;
                if (*p >= '0' && *p <= '9')
                        d = *p - '0';
                else if (base == 16 && *p >= 'a' && *p <= 'f')
                        d = *p - 'a' + 10;
                else if (base == 16 && *p >= 'A' && *p <= 'F')
                        d = *p - 'A' + 10;
                else
                        break;
                if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
                        return -ERANGE;
                v = v * (uint64_t)base + (uint64_t)d;
        }
        if (p == start)
                return -EINVAL;
        *ret = v;
        if (ret_end)
                *ret_end = p;
        return 0;
}

int parse_u64(const char *s, uint64_t *ret)
{
        const char *end;
        uint64_t v;
        int r = parse_u64_prefix(s, 10, &v, &end);
        if (r < 0)
                return r;
        if (*end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int parse_i64(const char *s, int64_t *ret)
{
        if (!s)
                return -EINVAL;
        bool neg = s[0] == '-';
        uint64_t v;
        int r = parse_u64(neg ? s + 1 : s, &v);
        if (r < 0)
                return r;
        if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
                return -ERANGE;
        *ret = neg ? (int64_t)(0 - v) : (int64_t)v;
        return 0;
}

int parse_uint_range(const char *s, unsigned min, unsigned max, unsigned *ret)
{
        uint64_t v;
        int r = parse_u64(s, &v);
        if (r < 0)
                return r;
        if (v < min || v > max)
                return -ERANGE;
        *ret = (unsigned)v;
        return 0;
}

/* A non-negative decimal with an optional fraction, then a unit. */
static int parse_scaled(const char *s, double *ret_val, const char **ret_unit)
{
        if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
                return -EINVAL;
        const char *p = s;
        double v = 0;
        bool digits = false;
        while (isdigit((unsigned char)*p)) {
                v = v * 10 + (*p++ - '0');
                digits = true;
                if (v > 1e15)
                        return -ERANGE;
        }
        if (*p == '.') {
                p++;
                double f = 0.1;
                while (isdigit((unsigned char)*p)) {
                        v += (*p++ - '0') * f;
                        f /= 10;
                        digits = true;
                }
        }
        if (!digits)
                return -EINVAL;
        *ret_val = v;
        *ret_unit = p;
        return 0;
}

struct unit {
        const char *name;
        double scale;
};

/* A number with one of the units (the empty name for none), scaled and checked against max. */
static int parse_with_units(const char *s, const struct unit *units, size_t n, double max, uint64_t *ret)
{
        double v;
        const char *u;
        int r = parse_scaled(s, &v, &u);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (strcmp(u, units[i].name) == 0) {
                        double x = v * units[i].scale;
                        if (x > max)
                                return -ERANGE;
                        *ret = (uint64_t)llround(x);
                        return 0;
                }
        }
        return -EINVAL;
}

int parse_duration_ms(const char *s, uint64_t *ret_ms)
{
        static const struct unit units[] = {
                { "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "sec", 1000 }, { "m", 60000 },
                { "min", 60000 }, { "h", 3600000 }, { "d", 86400000 },
        };
        return parse_with_units(s, units, sizeof(units) / sizeof(units[0]), 1e15, ret_ms);
}

int parse_size_mib(const char *s, uint64_t *ret_mib)
{
        static const struct unit units[] = {
                { "", 1 }, { "M", 1 }, { "MiB", 1 }, { "G", 1024 }, { "GiB", 1024 },
                { "T", 1048576 }, { "TiB", 1048576 },
        };
        return parse_with_units(s, units, sizeof(units) / sizeof(units[0]), 1e12, ret_mib);
}
