#include "collect/kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "collect/kernel_text.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/parse.h"

/* ---- small character helpers --------------------------------------------------------------- */


static int hex_val(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Read exactly n decimal digits at p (p + n <= end). */
static bool take_digits(const char *p, const char *end, size_t n, int *ret)
{
        int v = 0;
        if ((size_t)(end - p) < n)
                return false;
        for (size_t i = 0; i < n; i++) {
                if (!kt_digit(p[i]))
                        return false;
                v = v * 10 + (p[i] - '0');
        }
        *ret = v;
        return true;
}

/* Append at most what fits under cap; sets *trunc when something was left out. */
static int append_capped(struct buf *b, const char *p, size_t n, size_t cap, bool *trunc)
{
        if (b->len >= cap) {
                if (n)
                        *trunc = true;
                return 0;
        }
        if (n > cap - b->len) {
                n = cap - b->len;
                *trunc = true;
        }
        return buf_append(b, p, n);
}

/* Decimal fraction digits at p ("859532" of ",859532"): exact up to 9 digits, the rest ignored.
 * Returns the position after the digits. */
static const char *take_frac(const char *p, const char *end, double *ret)
{
        uint64_t n = 0, scale = 1;
        for (; p < end && kt_digit(*p); p++) {
                if (scale < 1000000000ull) {
                        n = n * 10 + (uint64_t)(*p - '0');
                        scale *= 10;
                }
        }
        *ret = (double)n / (double)scale;
        return p;
}

/* ---- time ------------------------------------------------------------------------------------ */

static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
static const char wdays[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };

static int month_at(const char *p, const char *end)
{
        if (end - p < 3)
                return -1;
        for (int i = 0; i < 12; i++)
                if (memcmp(p, months[i], 3) == 0)
                        return i;
        return -1;
}

static bool wday_at(const char *p, const char *end)
{
        if (end - p < 3)
                return false;
        for (int i = 0; i < 7; i++)
                if (memcmp(p, wdays[i], 3) == 0)
                        return true;
        return false;
}

/* Days in month mon (0-11) of year (since 1900), by the Gregorian rules. */
static int month_days(int year, int mon)
{
        static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        int y = year + 1900;
        bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        return days[mon] + (mon == 1 && leap);
}

/* A date that exists: 2026-02-30 is refused, never normalised by mktime into March 2. */
static bool tm_valid(const struct tm *tm)
{
        return tm->tm_mon >= 0 && tm->tm_mon < 12 && tm->tm_mday >= 1 && tm->tm_mday <= month_days(tm->tm_year, tm->tm_mon) &&
               tm->tm_hour >= 0 && tm->tm_hour < 24 && tm->tm_min >= 0 && tm->tm_min < 60 &&
               tm->tm_sec >= 0 && tm->tm_sec <= 60 && tm->tm_year >= 70 && tm->tm_year < 8100;
}

static bool tm_to_epoch(struct tm *tm, bool utc, double *ret)
{
        if (!tm_valid(tm))
                return false;
        tm->tm_isdst = -1;
        time_t t = utc ? timegm(tm) : mktime(tm);
        if (t == (time_t)-1)
                return false;
        *ret = (double)t;
        return true;
}

/* "HH:MM:SS" at p. */
static bool take_hms(const char *p, const char *end, struct tm *tm)
{
        return end - p >= 8 && take_digits(p, end, 2, &tm->tm_hour) && p[2] == ':' &&
               take_digits(p + 3, end, 2, &tm->tm_min) && p[5] == ':' &&
               take_digits(p + 6, end, 2, &tm->tm_sec);
}

int kmsg_parse_iso8601(const char *s, size_t len, double *ret_epoch)
{
        const char *p = s, *end = s + len;
        struct tm tm = { 0 };
        int year, mon;
        if (!take_digits(p, end, 4, &year) || end - p < 10 || p[4] != '-' ||
            !take_digits(p + 5, end, 2, &mon) || p[7] != '-' || !take_digits(p + 8, end, 2, &tm.tm_mday))
                return -EINVAL;
        tm.tm_year = year - 1900;
        tm.tm_mon = mon - 1;
        p += 10;
        double frac = 0;
        bool utc = false;
        long offset = 0;
        if (end - p >= 6 && (*p == 'T' || *p == ' ' || *p == '_') && kt_digit(p[1]) && kt_digit(p[2]) &&
            p[3] == ':') {
                if (!take_digits(p + 1, end, 2, &tm.tm_hour) || !take_digits(p + 4, end, 2, &tm.tm_min))
                        return -EINVAL;
                p += 6;
                if (end - p >= 3 && p[0] == ':' && take_digits(p + 1, end, 2, &tm.tm_sec)) {
                        p += 3;
                        if (end - p >= 2 && (*p == '.' || *p == ',') && kt_digit(p[1]))
                                p = take_frac(p + 1, end, &frac);
                }
                if (p < end && (*p == 'Z' || *p == 'z')) {
                        utc = true;
                        p++;
                } else if (end - p >= 3 && (*p == '+' || *p == '-') && kt_digit(p[1]) && kt_digit(p[2])) {
                        int hh, mm = 0;
                        const char *q = p + 1;
                        take_digits(q, end, 2, &hh);
                        q += 2;
                        if (end - q >= 3 && *q == ':' && take_digits(q + 1, end, 2, &mm))
                                q += 3;
                        else if (take_digits(q, end, 2, &mm))
                                q += 2;
                        if (hh > 23 || mm > 59)
                                return -EINVAL;
                        offset = (hh * 3600L + mm * 60L) * (*p == '-' ? -1 : 1);
                        utc = true;
                        p = q;
                }
        }
        double t;
        if (!tm_to_epoch(&tm, utc, &t))
                return -EINVAL;
        *ret_epoch = t - (double)offset + frac;
        return (int)(p - s);
}

/* Seconds since boot "  123.456789" (spaces allowed before). */
static bool parse_mono(const char *p, const char *end, double *ret)
{
        while (p < end && *p == ' ')
                p++;
        uint64_t v = 0;
        const char *s = p;
        while (p < end && kt_digit(*p) && p - s < 12)
                v = v * 10 + (uint64_t)(*p++ - '0');
        if (p == s || p >= end || *p != '.' || p + 1 >= end || !kt_digit(p[1]))
                return false;
        double frac;
        p = take_frac(p + 1, end, &frac);
        if (p != end)
                return false;
        *ret = (double)v + frac;
        return true;
}

/* dmesg -T: "Mon Nov 30 10:11:12 2026" (day space-padded), local time. */
static bool parse_ctime(const char *p, const char *end, double *ret)
{
        struct tm tm = { 0 };
        if (end - p != 24 || !wday_at(p, end) || p[3] != ' ')
                return false;
        tm.tm_mon = month_at(p + 4, end);
        if (tm.tm_mon < 0 || p[7] != ' ')
                return false;
        const char *d = p + 8;
        if (*d == ' ' && kt_digit(d[1]))
                tm.tm_mday = d[1] - '0';
        else if (!take_digits(d, end, 2, &tm.tm_mday))
                return false;
        int year;
        if (d[2] != ' ' || !take_hms(d + 3, end, &tm) || d[11] != ' ' || !take_digits(d + 12, end, 4, &year))
                return false;
        tm.tm_year = year - 1900;
        return tm_to_epoch(&tm, false, ret);
}

/* syslog: "Nov 30 10:11:12 " (no year; the year is the one that puts the time not after now). */
static size_t parse_syslog_stamp(const char *p, const char *end, double now, bool *known, double *ret)
{
        struct tm tm = { 0 };
        tm.tm_mon = month_at(p, end);
        if (tm.tm_mon < 0 || end - p < 16 || p[3] != ' ')
                return 0;
        const char *d = p + 4;
        if (*d == ' ' && kt_digit(d[1]))
                tm.tm_mday = d[1] - '0';
        else if (!take_digits(d, end, 2, &tm.tm_mday))
                return 0;
        if (d[2] != ' ' || !take_hms(d + 3, end, &tm))
                return 0;
        const char *q = d + 11;
        double frac = 0;
        if (q + 1 < end && *q == '.' && kt_digit(q[1])) /* journalctl -o short-precise */
                q = take_frac(q + 1, end, &frac);
        if (q >= end || *q != ' ')
                return 0;
        *known = false;
        size_t used = (size_t)(q + 1 - p);
        time_t n = (time_t)now;
        struct tm nt;
        if (now < 0 || !localtime_r(&n, &nt))
                return used;
        struct tm try = tm;
        double t;
        try.tm_year = nt.tm_year;
        if (!tm_to_epoch(&try, false, &t))
                return used;
        if (t > now + 86400.0) { /* "Dec 31" read on Jan 1: last year */
                try = tm;
                try.tm_year = nt.tm_year - 1;
                if (!tm_to_epoch(&try, false, &t))
                        return used;
        }
        *known = true;
        *ret = t + frac;
        return used;
}

/* journalctl -o short-full: "Sat 2024-11-30 10:11:12 CET " (the zone is honoured only for UTC). */
static size_t parse_short_full(const char *p, const char *end, double *ret)
{
        if (end - p < 25 || !wday_at(p, end) || p[3] != ' ')
                return 0;
        const char *z = p + 24, *ze = z;
        while (ze < end && ze - z < 8 && ((*ze >= 'A' && *ze <= 'Z') || *ze == '+' || *ze == '-' || kt_digit(*ze)))
                ze++;
        if (ze == z || ze >= end || *ze != ' ' || p[23] != ' ')
                return 0;
        char stamp[21];
        memcpy(stamp, p + 4, 19);
        bool utc = ze - z == 3 && memcmp(z, "UTC", 3) == 0;
        stamp[19] = utc ? 'Z' : ' ';
        stamp[20] = '\0';
        double t;
        if (kmsg_parse_iso8601(stamp, utc ? 20 : 19, &t) != (utc ? 20 : 19))
                return 0;
        *ret = t;
        return (size_t)(ze + 1 - p);
}

int kmsg_boot_time(const char *proc_root, double *ret_epoch)
{
        struct timespec rt, bt;
        if (clock_gettime(CLOCK_REALTIME, &rt) == 0 && clock_gettime(CLOCK_BOOTTIME, &bt) == 0) {
                *ret_epoch = ((double)rt.tv_sec + rt.tv_nsec / 1e9) - ((double)bt.tv_sec + bt.tv_nsec / 1e9);
                return 0;
        }
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s/stat", proc_root ? proc_root : "/proc");
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        char *data = NULL;
        size_t len;
        int r = read_file_at(AT_FDCWD, path, 1 << 20, &data, &len);
        if (r < 0)
                return r;
        r = -ENOENT;
        for (char *line = data; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                uint64_t v;
                if (strncmp(line, "btime ", 6) == 0 && parse_u64(line + 6, &v) == 0) {
                        *ret_epoch = (double)v;
                        r = 0;
                        break;
                }
                line = nl ? nl + 1 : NULL;
        }
        free(data);
        return r;
}

/* ---- /dev/kmsg records --------------------------------------------------------------------- */

/* Is this "prio,seq,usec,flags...;" (the /dev/kmsg header)? Sets *ret_semi. */
static bool kmsg_header(const char *p, size_t len, size_t *ret_semi)
{
        size_t i = 0;
        for (int field = 0; field < 3; field++) {
                size_t start = i;
                while (i < len && i - start < 20 && kt_digit(p[i]))
                        i++;
                if (i == start || i >= len || p[i] != ',')
                        return false;
                i++;
        }
        for (; i < len && i < 256; i++) {
                if (p[i] == ';') {
                        *ret_semi = i;
                        return true;
                }
                if (p[i] == '\n')
                        return false;
        }
        return false;
}

/* Undo the kernel's \xNN escaping (bytes < 0x20 except tab, >= 0x7f and '\'). NUL becomes '?'. */
static int kmsg_unescape(struct buf *out, const char *p, size_t n, bool *trunc)
{
        int r = 0;
        for (size_t i = 0; i < n && r == 0; i++) {
                char c = p[i];
                if (c == '\\' && i + 3 < n && p[i + 1] == 'x' && hex_val(p[i + 2]) >= 0 &&
                    hex_val(p[i + 3]) >= 0) {
                        c = (char)(hex_val(p[i + 2]) * 16 + hex_val(p[i + 3]));
                        i += 3;
                }
                if (c == '\0')
                        c = '?';
                r = append_capped(out, &c, 1, KMSG_LINE_MAX, trunc);
        }
        return r;
}

int kmsg_parse_record(const char *buf, size_t len, const struct kmsg_time_opts *t,
                      struct buf *storage, struct kmsg_record *ret)
{
        size_t semi;
        if (!buf || !kmsg_header(buf, len, &semi))
                return -EINVAL;
        uint64_t v[3];
        const char *p = buf;
        for (int i = 0; i < 3; i++) {
                const char *e;
                if (parse_u64_prefix(p, 10, &v[i], &e) < 0 || *e != ',')
                        return -EINVAL;
                p = e + 1;
        }
        const char *msg = buf + semi + 1;
        const char *mend = memchr(msg, '\n', len - semi - 1);
        if (!mend)
                mend = buf + len;
        struct kmsg_record rec = { 0 };
        rec.seq_known = true;
        rec.seq = v[1];
        rec.prio = v[0] <= 0x7fffffff ? (int)v[0] : -1;
        rec.monotonic_known = true;
        rec.monotonic = (double)v[2] / 1e6;
        if (t && t->boot_time >= 0) {
                rec.time_known = true;
                rec.time = t->boot_time + rec.monotonic;
        }
        buf_reset(storage);
        int r = kmsg_unescape(storage, msg, (size_t)(mend - msg), &rec.truncated);
        size_t text_len = storage->len;
        bool raw_trunc = false;
        if (r == 0)
                r = buf_putc(storage, '\0');
        size_t raw_off = storage->len;
        if (r == 0) {
                size_t n = (size_t)(mend - buf);
                if (n > KMSG_LINE_MAX) {
                        n = KMSG_LINE_MAX;
                        raw_trunc = true;
                }
                r = buf_append(storage, buf, n);
        }
        if (r < 0)
                return r;
        rec.truncated = rec.truncated || raw_trunc;
        rec.text = storage->data;
        rec.text_len = text_len;
        rec.raw = storage->data + raw_off;
        rec.raw_len = storage->len - raw_off;
        *ret = rec;
        return 0;
}

/* ---- lines of saved logs ------------------------------------------------------------------- */

/* dmesg -x: "kern  :err   : "; *ret_kern says whether the facility is the kernel's. */
static size_t facility_prefix(const char *p, const char *end, bool *ret_kern)
{
        const char *q = p;
        *ret_kern = end - p >= 5 && memcmp(p, "kern ", 5) == 0;
        for (int part = 0; part < 2; part++) {
                const char *s = q;
                while (q < end && *q >= 'a' && *q <= 'z')
                        q++;
                if (q == s || q - s > 8)
                        return 0;
                while (q < end && *q == ' ')
                        q++;
                if (q >= end || *q != ':')
                        return 0;
                q++;
        }
        if (q >= end || *q != ' ')
                return 0;
        return (size_t)(q + 1 - p);
}

/* Talos: "192.168.11.119: kern: warning: " */
static size_t talos_prefix(const char *p, const char *end)
{
        const char *q = p;
        while (q < end && q - p < 64 && *q != ' ' && *q != ':')
                q++;
        if (q == p || end - q < 8 || memcmp(q, ": kern: ", 8) != 0)
                return 0;
        q += 8;
        const char *s = q;
        while (q < end && *q >= 'a' && *q <= 'z')
                q++;
        if (q == s || end - q < 2 || q[0] != ':' || q[1] != ' ')
                return 0;
        return (size_t)(q + 2 - p);
}

/* "host kernel: " (syslog tag) before any NVIDIA marker. */
static size_t kernel_tag(const char *p, const char *end)
{
        const char *lim = end - p > 200 ? p + 200 : end;
        const char *k = kt_find(p, lim, "kernel:");
        if (!k || (k > p && k[-1] != ' '))
                return 0;
        if (kt_find(p, k, "NVRM") || kt_find(p, k, "nvidia"))
                return 0;
        k += 7;
        if (k < end && *k == ' ')
                k++;
        return (size_t)(k - p);
}

/* Strip known prefixes from [p, end); fills times in rec; returns the message start. */
static const char *strip_prefixes(const char *p, const char *end, const struct kmsg_time_opts *t,
                                  struct kmsg_record *rec)
{
        double v;
        for (int iter = 0; iter < 10; iter++) {
                while (p < end && (*p == ' ' || *p == '\t'))
                        p++;
                if (p >= end)
                        break;
                size_t n;
                if (*p == '<') {
                        const char *q = p + 1;
                        int prio = 0;
                        while (q < end && q - p <= 4 && kt_digit(*q))
                                prio = prio * 10 + (*q++ - '0');
                        if (q > p + 1 && q < end && *q == '>') {
                                rec->prio = prio;
                                p = q + 1;
                                continue;
                        }
                        break;
                }
                if (*p == '[') {
                        const char *lim = end - p > 64 ? p + 64 : end;
                        const char *c = memchr(p, ']', (size_t)(lim - p));
                        if (!c)
                                break;
                        const char *in = p + 1;
                        bool ok = true;
                        if (parse_mono(in, c, &v)) {
                                rec->monotonic_known = true;
                                rec->monotonic = v;
                        } else if (parse_ctime(in, c, &v)) {
                                rec->time_known = true;
                                rec->time = v;
                        } else if (kmsg_parse_iso8601(in, (size_t)(c - in), &v) == (int)(c - in)) {
                                rec->time_known = true;
                                rec->time = v;
                        } else if ((c - in == 3 && memcmp(in, "\xe2\x80\xa6", 3) == 0) ||
                                   (c - in == 3 && memcmp(in, "...", 3) == 0)) {
                                /* documentation placeholder "[…]" */
                        } else {
                                ok = false;
                        }
                        if (!ok)
                                break;
                        p = c + 1;
                        if (p < end && *p == ':')
                                p++;
                        continue;
                }
                bool kern;
                if ((n = facility_prefix(p, end, &kern))) {
                        if (!kern)
                                rec->prio = 1 << 3; /* LOG_USER: written by a process, not the kernel */
                        p += n;
                        continue;
                }
                if (kt_digit(*p)) {
                        int k = kmsg_parse_iso8601(p, (size_t)(end - p), &v);
                        if (k > 10 && p + k < end && p[k] == ' ') {
                                rec->time_known = true;
                                rec->time = v;
                                p += k + 1;
                                continue;
                        }
                }
                bool known = false;
                if ((n = parse_syslog_stamp(p, end, t ? t->now : -1, &known, &v))) {
                        if (known) {
                                rec->time_known = true;
                                rec->time = v;
                        }
                        p += n;
                        continue;
                }
                if ((n = parse_short_full(p, end, &v))) {
                        rec->time_known = true;
                        rec->time = v;
                        p += n;
                        continue;
                }
                if ((n = talos_prefix(p, end)) || (n = kernel_tag(p, end))) {
                        p += n;
                        continue;
                }
                break;
        }
        return p;
}

int kmsg_parse_line(const char *line, size_t len, const struct kmsg_time_opts *t,
                    struct buf *storage, struct kmsg_record *ret, bool *ret_is_kmsg)
{
        size_t semi;
        if (ret_is_kmsg)
                *ret_is_kmsg = false;
        if (!line)
                return -EINVAL;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                len--;
        if (len == 0)
                return -EINVAL;
        if (kmsg_header(line, len, &semi)) {
                int r = kmsg_parse_record(line, len, t, storage, ret);
                if (r == 0 && ret_is_kmsg)
                        *ret_is_kmsg = true;
                return r;
        }
        struct kmsg_record rec = { 0 };
        rec.prio = -1;
        const char *end = line + len;
        const char *msg = strip_prefixes(line, end, t, &rec);
        if (!rec.time_known && rec.monotonic_known && t && t->boot_time >= 0) {
                rec.time_known = true;
                rec.time = t->boot_time + rec.monotonic;
        }
        buf_reset(storage);
        int r = 0;
        for (const char *q = msg; q < end && r == 0; q++) {
                char c = *q == '\0' ? '?' : *q;
                r = append_capped(storage, &c, 1, KMSG_LINE_MAX, &rec.truncated);
        }
        size_t text_len = storage->len;
        if (r == 0)
                r = buf_putc(storage, '\0');
        size_t raw_off = storage->len;
        if (r == 0) {
                size_t n = len > KMSG_LINE_MAX ? KMSG_LINE_MAX : len;
                if (n < len)
                        rec.truncated = true;
                r = buf_append(storage, line, n);
        }
        if (r < 0)
                return r;
        rec.text = storage->data;
        rec.text_len = text_len;
        rec.raw = storage->data + raw_off;
        rec.raw_len = storage->len - raw_off;
        *ret = rec;
        return 0;
}

/* ---- the reader ------------------------------------------------------------------------------ */

const char *kmsg_source_name(enum kmsg_source s)
{
        switch (s) {
        case KMSG_SRC_KMSG: return "kmsg";
        case KMSG_SRC_FILE: return "file";
        case KMSG_SRC_STDIN: return "stdin";
        }
        return "unknown";
}

static ssize_t default_read(int fd, void *b, size_t len, void *ctx)
{
        (void)ctx;
        return read(fd, b, len);
}

void kmsg_reader_init_fd(struct kmsg_reader *r, int fd, enum kmsg_source source, bool follow,
                         const struct kmsg_time_opts *t, kmsg_read_fn read_fn, void *read_ctx)
{
        memset(r, 0, sizeof(*r));
        r->fd = fd;
        r->source = source;
        r->follow = follow;
        if (t) {
                r->time = *t;
        } else {
                r->time.boot_time = -1;
                r->time.now = -1;
        }
        r->read_fn = read_fn ? read_fn : default_read;
        r->read_ctx = read_ctx;
        r->record_buf_size = KMSG_RECORD_BUF;
        r->line = BUF_INIT(KMSG_LINE_MAX + 1);
        r->head = BUF_INIT(2 * (KMSG_LINE_MAX + 1) * (KMSG_MAX_CONT_LINES + 1));
        r->out_text = BUF_INIT(0);
        r->out_raw = BUF_INIT(0);
        r->scratch = BUF_INIT(0);
        struct stat st;
        r->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
        va_list ap;
        if (!err || !errlen)
                return;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
}

void kmsg_open_error(int err, const char *path, char *out, size_t outlen)
{
        if (err == EACCES || err == EPERM)
                set_err(out, outlen,
                        _("cannot read %s: %s (not root, or kernel.dmesg_restrict=1). Run as root "
                          "(sudo ghostvram xid), or save the kernel log and pass it: "
                          "journalctl -k -o short-iso > FILE (or dmesg > FILE), then --kmsg FILE"),
                        path, strerror(err));
        else
                set_err(out, outlen, _("cannot open %s: %s (pass a saved kernel log with --kmsg FILE)"), path,
                        strerror(err));
}

int kmsg_reader_open_kmsg(struct kmsg_reader *r, const char *path, bool follow,
                          const struct kmsg_time_opts *t, char *err, size_t errlen)
{
        if (!path)
                path = "/dev/kmsg";
        memset(r, 0, sizeof(*r));
        r->fd = -1;
        int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                int e = errno;
                kmsg_open_error(e, path, err, errlen);
                return -e;
        }
        kmsg_reader_init_fd(r, fd, KMSG_SRC_KMSG, follow, t, NULL, NULL);
        r->owns_fd = true;
        return 0;
}

int kmsg_reader_open_file(struct kmsg_reader *r, const char *path, bool follow,
                          const struct kmsg_time_opts *t, char *err, size_t errlen)
{
        memset(r, 0, sizeof(*r));
        r->fd = -1;
        if (strcmp(path, "-") == 0) {
                kmsg_reader_init_fd(r, STDIN_FILENO, KMSG_SRC_STDIN, follow, t, NULL, NULL);
                return 0;
        }
        /* non-blocking: a FIFO must not block the open */
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                int e = errno;
                set_err(err, errlen, _("cannot open %s: %s"), path, strerror(e));
                return -e;
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int e = errno;
                close(fd);
                set_err(err, errlen, "%s: %s", path, strerror(e));
                return -e;
        }
        if (S_ISDIR(st.st_mode)) {
                close(fd);
                set_err(err, errlen, _("%s: is a directory, not a kernel log"), path);
                return -EISDIR;
        }
        if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 11) {
                /* /dev/kmsg under any name: one record per read, as the kernel gives them */
                kmsg_reader_init_fd(r, fd, KMSG_SRC_KMSG, follow, t, NULL, NULL);
                r->owns_fd = true;
                return 0;
        }
        if (!S_ISREG(st.st_mode)) {
                /* /dev/zero, /dev/urandom, a FIFO, a socket: endless or blocking, never a log */
                close(fd);
                set_err(err, errlen,
                        _("%s: not a regular file (%s): pass a saved kernel log (journalctl -k > FILE), "
                          "/dev/kmsg, or - for standard input"),
                        path, S_ISFIFO(st.st_mode) ? _("a FIFO") : S_ISCHR(st.st_mode) ? _("a character device") : _("a special file"));
                return -FILEIO_ENOTREG;
        }
        if (!follow && (uint64_t)st.st_size > KMSG_FILE_MAX) {
                close(fd);
                set_err(err, errlen, _("%s: too large (%llu MiB; at most %u MiB): cut it, e.g. journalctl -k -b > FILE"), path,
                        (unsigned long long)(st.st_size >> 20), KMSG_FILE_MAX >> 20);
                return -EFBIG;
        }
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0)
                (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        kmsg_reader_init_fd(r, fd, KMSG_SRC_FILE, follow, t, NULL, NULL);
        r->owns_fd = true;
        return 0;
}

int kmsg_reader_fd(const struct kmsg_reader *r)
{
        return r->fd;
}

void kmsg_reader_close(struct kmsg_reader *r)
{
        if (!r)
                return;
        if (r->owns_fd && r->fd >= 0)
                close(r->fd);
        r->fd = -1;
        r->owns_fd = false;
        free(r->rbuf);
        r->rbuf = NULL;
        free(r->chunk);
        r->chunk = NULL;
        buf_free(&r->line);
        buf_free(&r->head);
        buf_free(&r->out_text);
        buf_free(&r->out_raw);
        buf_free(&r->scratch);
}

static void fill_out(struct kmsg_reader *r, const struct kmsg_record *src, struct kmsg_record *ret)
{
        *ret = *src;
        ret->text = buf_str(&r->out_text);
        ret->text_len = r->out_text.len;
        ret->raw = buf_str(&r->out_raw);
        ret->raw_len = r->out_raw.len;
        r->records++;
        if (ret->truncated)
                r->truncated++;
}

static int next_record_kmsg(struct kmsg_reader *r, struct kmsg_record *ret)
{
        for (;;) {
                if (r->rbuf_alloc < r->record_buf_size) {
                        char *p = realloc(r->rbuf, r->record_buf_size);
                        if (!p)
                                return -ENOMEM;
                        r->rbuf = p;
                        r->rbuf_alloc = r->record_buf_size;
                }
                ssize_t n = r->read_fn(r->fd, r->rbuf, r->record_buf_size, r->read_ctx);
                if (n < 0) {
                        int e = errno;
                        if (e == EINTR)
                                continue;
                        if (e == EPIPE) {
                                r->overruns++;
                                continue;
                        }
                        if (e == EAGAIN)
                                return r->follow ? -EAGAIN : 0;
                        if (e == EINVAL && r->record_buf_size < KMSG_RECORD_BUF_MAX) {
                                r->record_buf_size *= 2; /* a record larger than our buffer */
                                continue;
                        }
                        return -e;
                }
                if (n == 0)
                        return r->follow ? -EAGAIN : 0;
                struct kmsg_record rec;
                size_t len = (size_t)n > r->record_buf_size ? r->record_buf_size : (size_t)n;
                if (kmsg_parse_record(r->rbuf, len, &r->time, &r->scratch, &rec) < 0)
                        continue; /* not a record: skip it, never stop on it */
                buf_reset(&r->out_text);
                buf_reset(&r->out_raw);
                if (buf_append(&r->out_text, rec.text, rec.text_len) < 0 ||
                    buf_append(&r->out_raw, rec.raw, rec.raw_len) < 0)
                        return -ENOMEM;
                fill_out(r, &rec, ret);
                return 1;
        }
}

/* Decode the assembled head (line + continuation lines) into out_text/out_raw. */
static int emit_head(struct kmsg_reader *r, struct kmsg_record *ret)
{
        const char *h = buf_str(&r->head);
        size_t hlen = r->head.len;
        const char *nl = memchr(h, '\n', hlen);
        size_t first = nl ? (size_t)(nl - h) : hlen;
        struct kmsg_record rec;
        bool is_kmsg;
        r->head_valid = false;
        buf_reset(&r->out_text);
        buf_reset(&r->out_raw);
        int e = kmsg_parse_line(h, first, &r->time, &r->scratch, &rec, &is_kmsg);
        if (e < 0)
                return e == -EINVAL ? 0 : e;
        bool trunc = rec.truncated;
        if (buf_append(&r->out_text, rec.text, rec.text_len) < 0 ||
            buf_append(&r->out_raw, rec.raw, rec.raw_len) < 0)
                return -ENOMEM;
        /* continuation lines: indented text that belongs to the same message */
        for (const char *p = nl ? nl + 1 : NULL; p && p < h + hlen;) {
                const char *e2 = memchr(p, '\n', (size_t)(h + hlen - p));
                if (!e2)
                        e2 = h + hlen;
                const char *s = p;
                while (s < e2 && (*s == ' ' || *s == '\t'))
                        s++;
                if (append_capped(&r->out_text, "\n", 1, KMSG_LINE_MAX, &trunc) < 0 ||
                    append_capped(&r->out_text, s, (size_t)(e2 - s), KMSG_LINE_MAX, &trunc) < 0 ||
                    append_capped(&r->out_raw, "\n", 1, 2 * KMSG_LINE_MAX, &trunc) < 0 ||
                    append_capped(&r->out_raw, p, (size_t)(e2 - p), 2 * KMSG_LINE_MAX, &trunc) < 0)
                        return -ENOMEM;
                p = e2 + 1;
        }
        for (size_t i = 0; i < r->out_text.len; i++)
                if (r->out_text.data[i] == '\0')
                        r->out_text.data[i] = '?';
        rec.truncated = trunc;
        fill_out(r, &rec, ret);
        return 1;
}

static bool line_is_cont(const struct buf *l)
{
        return l->len > 0 && (l->data[0] == ' ' || l->data[0] == '\t');
}

static bool line_blank(const struct buf *l)
{
        for (size_t i = 0; i < l->len; i++)
                if (l->data[i] != ' ' && l->data[i] != '\t' && l->data[i] != '\r')
                        return false;
        return true;
}

/* Take a complete line into r->head (or as continuation). Returns 1 if a record came out. */
static int take_line(struct kmsg_reader *r, struct kmsg_record *ret)
{
        int out = 0;
        struct buf *l = &r->line;
        while (l->len > 0 && l->data[l->len - 1] == '\r')
                l->data[--l->len] = '\0';
        if (r->line_overflow)
                r->truncated++;
        r->line_overflow = false;
        if (line_blank(l))
                goto out;
        if (line_is_cont(l) && r->head_valid) {
                if (r->head_is_kmsg)
                        goto out; /* KEY=value dictionary of a kmsg record */
                if (r->head_conts < KMSG_MAX_CONT_LINES) {
                        if (buf_putc(&r->head, '\n') < 0 || buf_append(&r->head, l->data, l->len) < 0)
                                return -ENOMEM;
                        r->head_conts++;
                }
                goto out;
        }
        if (r->head_valid) {
                out = emit_head(r, ret);
                if (out < 0)
                        return out;
        }
        buf_reset(&r->head);
        if (buf_append(&r->head, l->data, l->len) < 0)
                return -ENOMEM;
        size_t semi;
        r->head_is_kmsg = kmsg_header(l->data, l->len, &semi);
        r->head_valid = true;
        r->head_conts = 0;
out:
        buf_reset(l);
        return out;
}

static int next_record_lines(struct kmsg_reader *r, struct kmsg_record *ret)
{
        if (!r->chunk) {
                r->chunk = malloc(65536);
                if (!r->chunk)
                        return -ENOMEM;
        }
        for (;;) {
                /* split what was read */
                while (r->chunk_off < r->chunk_len) {
                        const char *p = r->chunk + r->chunk_off;
                        size_t avail = r->chunk_len - r->chunk_off;
                        const char *nl = memchr(p, '\n', avail);
                        size_t n = nl ? (size_t)(nl - p) : avail;
                        bool trunc = false;
                        if (append_capped(&r->line, p, n, KMSG_LINE_MAX, &trunc) < 0)
                                return -ENOMEM;
                        if (trunc)
                                r->line_overflow = true;
                        r->chunk_off += n + (nl ? 1 : 0);
                        if (!nl)
                                break;
                        int k = take_line(r, ret);
                        if (k != 0)
                                return k;
                }
                r->chunk_off = r->chunk_len = 0;
                if (r->eof) {
                        if (r->line.len > 0) {
                                int k = take_line(r, ret);
                                if (k != 0)
                                        return k;
                        }
                        if (r->head_valid) {
                                int k = emit_head(r, ret);
                                if (k != 0)
                                        return k;
                        }
                        return 0;
                }
                if (r->follow && !r->regular && r->read_fn == default_read) {
                        /* a pipe being followed: never block in read(), say "nothing yet" */
                        struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
                        int k = poll(&pfd, 1, 0);
                        if (k < 0 && errno != EINTR)
                                return -errno;
                        if (k <= 0) {
                                if (r->head_valid) {
                                        int e = emit_head(r, ret);
                                        if (e != 0)
                                                return e;
                                }
                                return -EAGAIN;
                        }
                }
                ssize_t n = r->read_fn(r->fd, r->chunk, 65536, r->read_ctx);
                if (n > 0) {
                        r->chunk_len = (size_t)n > 65536 ? 65536 : (size_t)n;
                        r->bytes += r->chunk_len;
                        if (!r->follow && r->bytes > KMSG_FILE_MAX)
                                return -EFBIG; /* a log read whole has a size cap (stdin too) */
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                bool again = n < 0 && errno == EAGAIN;
                if (n < 0 && !again)
                        return -errno;
                /* nothing more for now: a followed file or a non-blocking pipe waits, the rest ends */
                if (r->follow && (again || r->regular)) {
                        if (r->head_valid) {
                                int k = emit_head(r, ret);
                                if (k != 0)
                                        return k;
                        }
                        return -EAGAIN;
                }
                r->eof = true;
        }
}

int kmsg_reader_next(struct kmsg_reader *r, struct kmsg_record *ret)
{
        return r->source == KMSG_SRC_KMSG ? next_record_kmsg(r, ret) : next_record_lines(r, ret);
}
