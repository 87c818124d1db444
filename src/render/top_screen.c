#define _GNU_SOURCE 1 /* strcasestr */
#include "render/top_screen.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "util/buf.h"
#include "util/escape.h"
#include "util/i18n.h"

/* The non-ASCII characters ghostvram's own texts use, each one column wide: kept on a utf8
 * canvas (whatever the locale's wcwidth says of them), written in ASCII elsewhere. */
static const struct {
        uint32_t cp;
        const char *ascii;
} glyphs[] = {
        { 0x2192, "->" }, { 0x2190, "<-" }, { 0x2026, "..." }, { 0x2014, "-" },  { 0x2013, "-" },
        { 0x00b7, "." },  { 0x00d7, "x" },  { 0x2265, ">=" },  { 0x2264, "<=" }, { 0x2713, "ok" },
        { 0x2717, "x" },  { 0x2018, "'" },  { 0x2019, "'" },   { 0x201c, "\"" }, { 0x201d, "\"" },
        { 0x00b5, "u" },
};
#define N_GLYPHS (sizeof(glyphs) / sizeof(glyphs[0]))

size_t top_cell_utf8(uint32_t cp, char out[4])
{
        if (cp == TOP_CELL_WIDE_RIGHT)
                return 0;
        if (cp < 0x80) {
                out[0] = (char)cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char)(0xc0 | (cp >> 6));
                out[1] = (char)(0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                out[0] = (char)(0xe0 | (cp >> 12));
                out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char)(0x80 | (cp & 0x3f));
                return 3;
        }
        out[0] = (char)(0xf0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char)(0x80 | (cp & 0x3f));
        return 4;
}

/* One character of text as the canvas shows it. */
struct shaped {
        size_t len;                     /* its bytes in the text */
        uint32_t cp;                    /* what the cell holds ('?' for what cannot be shown) */
        const char *ascii;              /* or the ASCII it is written as (a glyph, not utf8) */
        int cols;                       /* the columns it takes: 1, 2 (wide), or strlen(ascii) */
};

/* The character at s (n bytes left, n > 0) as canvas c shows it: printable ASCII as it is, a
 * glyph (above) in one column or as its ASCII form, on a utf8 canvas any character the locale
 * prints in 1 or 2 columns (wcwidth: a Chinese character takes 2, as in the terminal), any other
 * (a control byte, a byte that starts no valid sequence, a combining or zero-width one) one '?'. */
static void shape(const struct top_canvas *c, const char *s, size_t n, struct shaped *o)
{
        const unsigned char *u = (const unsigned char *)s;
        o->ascii = NULL;
        o->cols = 1;
        o->len = 1;
        if (u[0] < 0x80) {
                o->cp = u[0] >= 0x20 && u[0] < 0x7f ? u[0] : '?';
                return;
        }
        size_t k = utf8_seq_len(u, n);
        uint32_t cp = k ? utf8_decode(u, k) : 0;
        o->len = k ? k : 1;
        o->cp = '?';
        if (!cp)
                return;
        for (size_t g = 0; g < N_GLYPHS; g++)
                if (glyphs[g].cp == cp) {
                        if (c->utf8)
                                o->cp = cp;
                        else {
                                o->ascii = glyphs[g].ascii;
                                o->cols = (int)strlen(o->ascii);
                        }
                        return;
                }
        int w = c->utf8 ? wcwidth((wchar_t)cp) : -1;
        if (w == 1 || w == 2) {
                o->cp = cp;
                o->cols = w;
        }
}

/* Characters no line starts with (closing punctuation: a cut before one would strand it), and
 * none ends with (opening brackets). */
static bool no_break_before(uint32_t cp)
{
        static const uint32_t close[] = { ',', '.', ';', ':', '!', '?', ')', ']', 0x3001, 0x3002, 0xff0c, 0xff0e,
                                          0xff1b, 0xff1a, 0xff01, 0xff1f, 0xff09, 0x300b, 0x300d, 0x300f, 0x3011 };
        for (size_t i = 0; i < sizeof(close) / sizeof(close[0]); i++)
                if (close[i] == cp)
                        return true;
        return false;
}

static bool no_break_after(uint32_t cp)
{
        return cp == 0xff08 || cp == 0x300a || cp == 0x300c || cp == 0x300e || cp == 0x3010;
}

/* The columns s[len] takes on c (as put writes it). */
static size_t text_cols(const struct top_canvas *c, const char *s, size_t len)
{
        size_t cols = 0;
        struct shaped sh;
        for (size_t i = 0; i < len; i += sh.len) {
                shape(c, s + i, len - i, &sh);
                cols += (size_t)sh.cols;
        }
        return cols;
}

/* The bytes of the longest start of s[len] (whole characters) that fits in room columns; *brk
 * gets the last place up to there (the end of that start included) where a line may end: before
 * a space, or beside a wide character (Chinese has no spaces: a line may end between any two of
 * its characters, but not before closing punctuation), 0 if there is none. */
static size_t text_fit(const struct top_canvas *c, const char *s, size_t len, size_t room, size_t *brk)
{
        size_t i = 0, cols = 0, b = 0;
        struct shaped sh, prev = { 0 };
        for (; i < len; i += sh.len) {
                shape(c, s + i, len - i, &sh);
                bool wide = sh.cols == 2 && !sh.ascii;
                if (i > 0 && (s[i] == ' ' || ((wide || (prev.cols == 2 && !prev.ascii)) && s[i - 1] != ' ' &&
                                              !no_break_before(sh.cp) && !no_break_after(prev.cp))))
                        b = i;
                if (cols + (size_t)sh.cols > room)
                        break;
                cols += (size_t)sh.cols;
                prev = sh;
        }
        *brk = b;
        return i;
}

int top_canvas_resize(struct top_canvas *c, int rows, int cols)
{
        if (rows < 1)
                rows = 1;
        if (cols < 1)
                cols = 1;
        size_t n = (size_t)rows * (size_t)cols;
        uint32_t *ch = malloc(n * sizeof(*ch));
        unsigned char *at = calloc(n, 1);
        if (!ch || !at) {
                free(ch);
                free(at);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                ch[i] = ' ';
        free(c->ch);
        free(c->at);
        c->ch = ch;
        c->at = at;
        c->rows = rows;
        c->cols = cols;
        return 0;
}

void top_canvas_free(struct top_canvas *c)
{
        free(c->ch);
        free(c->at);
        memset(c, 0, sizeof(*c));
}

void top_canvas_line(const struct top_canvas *c, int y, char *out, size_t outlen)
{
        size_t at = 0;
        if (y >= 0 && y < c->rows) {
                const uint32_t *row = c->ch + (size_t)y * (size_t)c->cols;
                size_t n = (size_t)c->cols;
                while (n && row[n - 1] == ' ')
                        n--;
                for (size_t i = 0; i < n; i++) {
                        char u[4];
                        size_t k = top_cell_utf8(row[i], u);
                        if (at + k >= outlen)
                                break;
                        memcpy(out + at, u, k);
                        at += k;
                }
        }
        out[at] = '\0';
}

/* Set a cell; the other half of a wide character it overwrites becomes a blank. */
static void cell(struct top_canvas *c, int y, int x, uint32_t ch, unsigned char at)
{
        if (x < 0 || x >= c->cols)
                return;
        size_t k = (size_t)y * (size_t)c->cols + (size_t)x;
        if (c->ch[k] == TOP_CELL_WIDE_RIGHT && ch != TOP_CELL_WIDE_RIGHT && x > 0)
                c->ch[k - 1] = ' ';
        if (x + 1 < c->cols && c->ch[k + 1] == TOP_CELL_WIDE_RIGHT)
                c->ch[k + 1] = ' ';
        c->ch[k] = ch;
        c->at[k] = at;
}

/* Write n bytes of text at (y, x), clipped to the row (a wide character that would cross the
 * edge is left out), each character as shape() shows it; returns the column after it. */
static int put(struct top_canvas *c, int y, int x, const char *s, size_t n, unsigned char at)
{
        if (y < 0 || y >= c->rows)
                return x;
        struct shaped sh;
        for (size_t i = 0; i < n && x < c->cols; i += sh.len) {
                shape(c, s + i, n - i, &sh);
                if (sh.ascii) {
                        for (const char *a = sh.ascii; *a; a++)
                                cell(c, y, x++, (unsigned char)*a, at);
                } else if (sh.cols == 2) {
                        if (x + 1 >= c->cols)
                                break;
                        cell(c, y, x, sh.cp, at);
                        cell(c, y, x + 1, TOP_CELL_WIDE_RIGHT, at);
                        x += 2;
                } else {
                        cell(c, y, x++, sh.cp, at);
                }
        }
        return x;
}

static int puts_at(struct top_canvas *c, int y, int x, const char *s, unsigned char at)
{
        return put(c, y, x, s, strlen(s), at);
}

static int printf_at(struct top_canvas *c, int y, int x, unsigned char at, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));
static int printf_at(struct top_canvas *c, int y, int x, unsigned char at, const char *fmt, ...)
{
        struct buf b = BUF_INIT(4096);
        va_list ap;
        va_start(ap, fmt);
        int e = buf_vprintf(&b, fmt, ap);
        va_end(ap);
        if (!e)
                x = put(c, y, x, buf_str(&b), b.len, at);
        buf_free(&b);
        return x;
}

/* How much of s[len] to show in room columns: all of it, or up to the last place a line may end
 * (a space, beside a Chinese character) that leaves room for "..." (a word longer than that is
 * cut where it must, the "..." still says so). */
static size_t fit_words(const struct top_canvas *c, const char *s, size_t len, size_t room, bool *ret_cut)
{
        size_t brk;
        *ret_cut = text_cols(c, s, len) > room;
        if (!*ret_cut)
                return len;
        if (room <= 3)
                return text_fit(c, s, len, room, &brk);
        size_t n = room - 3;
        size_t whole = text_fit(c, s, len, n, &brk);
        size_t w = brk;
        while (w > 0 && s[w - 1] == ' ')
                w--;
        return text_cols(c, s, w) > n / 2 ? w : whole;
}

/* Text already escaped for a terminal, at most maxw columns and the screen's: cut at a word, and
 * "..." says so. */
static int put_fitted(struct top_canvas *c, int y, int x, const char *s, size_t len, int maxw, unsigned char at)
{
        size_t room = (size_t)maxw;
        if (x >= 0 && x < c->cols && (size_t)(c->cols - x) < room)
                room = (size_t)(c->cols - x);
        bool cut;
        size_t n = fit_words(c, s, len, room, &cut);
        x = put(c, y, x, s, n, at);
        if (cut && room > 3)
                x = puts_at(c, y, x, "...", at);
        return x;
}

/* Text someone else controls: escaped for a terminal (no control byte survives), then shown as
 * put does (a character the terminal cannot show is a '?'), at most maxw columns and the
 * screen's. The screen is the one place a sentence is cut: at a word, and "..." says so. */
static int put_hostile(struct top_canvas *c, int y, int x, const char *s, int maxw, unsigned char at)
{
        if (!s || maxw <= 0)
                return x;
        struct buf b = BUF_INIT(4096);
        esc_terminal(&b, s, strnlen(s, 2048));
        x = put_fitted(c, y, x, buf_str(&b), b.len, maxw, at);
        buf_free(&b);
        return x;
}

/* Text someone else controls from (y, x) on, wrapped where a line may end (a space, beside a
 * Chinese character) onto at most max_lines lines, the later ones starting at column x too (a
 * command cut at the edge cannot be pasted); what the last line cannot hold is cut at a word
 * with "...". Returns the line after the last one written. */
static int put_wrapped(struct top_canvas *c, int y, int x, const char *s, int max_lines, unsigned char at)
{
        struct buf b = BUF_INIT(4096);
        esc_terminal(&b, s, strlen(s));
        const char *p = buf_str(&b);
        int w = c->cols - x;
        for (int line = 0; *p && line < max_lines && w > 0; line++, y++) {
                size_t n = strlen(p);
                if (line == max_lines - 1) {    /* the last line: cut at a word, "..." says so */
                        put_fitted(c, y, x, p, n, w, at);
                        y++;
                        break;
                }
                if (text_cols(c, p, n) > (size_t)w) {
                        size_t brk, whole = text_fit(c, p, n, (size_t)w, &brk);
                        n = brk ? brk : whole;  /* a word longer than the line is cut */
                }
                put(c, y, x, p, n, at);
                p += n;
                while (*p == ' ')
                        p++;
        }
        buf_free(&b);
        return y;
}

static void fill(struct top_canvas *c, int y, unsigned char at)
{
        for (int x = 0; y >= 0 && y < c->rows && x < c->cols; x++)
                c->at[(size_t)y * (size_t)c->cols + (size_t)x] = at;
}

/* TRANSLATORS: what top's process table is sorted by ("sort: memory") */
static const char *const sort_names[TOP_SORT_COUNT] = { N_("gpu"), N_("pid"), N_("memory"), N_("sm"),
                                                         N_("cpu"), N_("rss"), N_("time"), N_("user"),
                                                         N_("role"), N_("command") };

const char *top_sort_name(enum top_sort s)
{
        return (unsigned)s < TOP_SORT_COUNT ? sort_names[s] : "?";
}

static bool row_in_focus(const struct live_row *w, int focus)
{
        if (focus < 0 || w->gpu == focus)
                return true;
        if (w->gpu >= 0)
                return false;
        char want[16];
        snprintf(want, sizeof(want), "%d", focus);
        for (const char *p = w->gpus; *p;) {
                size_t n = strcspn(p, ",");
                if (n == strlen(want) && !strncmp(p, want, n))
                        return true;
                p += n + (p[n] == ',');
        }
        return false;
}

/* Does a row match the filter: digits name a PID exactly; other text is looked for (any case) in
 * its user, command, role or link? */
static bool row_matches(const struct live_row *w, const char *filter)
{
        if (!filter || !*filter)
                return true;
        if (strspn(filter, "0123456789") == strlen(filter)) {
                char pid[16];
                snprintf(pid, sizeof(pid), "%d", (int)w->pid);
                return !strcmp(pid, filter);
        }
        const char *fields[] = { w->user, w->comm, w->cmdline, w->role, w->link };
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
                if (fields[i] && strcasestr(fields[i], filter))
                        return true;
        return false;
}

static int cmp_num(double a, double b)
{
        return a < b ? -1 : a > b ? 1 : 0;
}

/* The natural order of column s: numbers largest first (memory, SM, CPU, RSS, time), names
 * and IDs ascending. Negative: a before b. */
static int row_cmp(const struct live_row *a, const struct live_row *b, enum top_sort s)
{
        switch (s) {
        case TOP_SORT_PID:
                return cmp_num(a->pid, b->pid);
        case TOP_SORT_MEM:
                return cmp_num((double)b->listed_bytes, (double)a->listed_bytes);
        case TOP_SORT_SM:
                return cmp_num(b->sm_util, a->sm_util);
        case TOP_SORT_CPU:
                return cmp_num(b->cpu_pct, a->cpu_pct);
        case TOP_SORT_RSS:
                return cmp_num(b->rss_known ? (double)b->rss_bytes : -1, a->rss_known ? (double)a->rss_bytes : -1);
        case TOP_SORT_TIME: /* the longest running first: the earliest start */
                return cmp_num(a->start_time > 0 ? a->start_time : 1e18, b->start_time > 0 ? b->start_time : 1e18);
        case TOP_SORT_USER:
                return strcmp(a->user, b->user);
        case TOP_SORT_ROLE:
                if (a->ghost_holder != b->ghost_holder)
                        return a->ghost_holder ? -1 : 1;
                return strcmp(str_or_empty(a->role), str_or_empty(b->role));
        case TOP_SORT_COMMAND:
                return strcmp(a->cmdline ? a->cmdline : a->comm, b->cmdline ? b->cmdline : b->comm);
        default:
                return 0;
        }
}

/* Is a before b in the state's order? (ties keep the view's order: the sort is stable) */
static bool before(const struct live_row *a, const struct live_row *b, const struct top_state *s)
{
        int c = row_cmp(a, b, s->sort);
        return s->sort_reverse ? c > 0 : c < 0;
}

static bool row_shown(const struct live_row *w, const struct top_state *s)
{
        return row_in_focus(w, s->focus) && row_matches(w, s->filter);
}

size_t top_rows(const struct live_view *v, const struct top_state *s, size_t *idx, size_t max)
{
        if (s->tree)
                return top_rows_tree(v, s, idx, NULL, max);
        size_t n = 0;
        for (size_t i = 0; v && i < v->n_rows && n < max; i++) {
                if (!row_shown(&v->rows[i], s))
                        continue;
                /* insertion sort: a few hundred rows at most */
                size_t at = n;
                while (at > 0 && before(&v->rows[i], &v->rows[idx[at - 1]], s)) {
                        idx[at] = idx[at - 1];
                        at--;
                }
                idx[at] = i;
                n++;
        }
        return n;
}

/* The row a shown row hangs under in the tree: its parent process when that is a row, else the
 * owner its link names (a dead owner's row, a live job's owner), else none (-1). Rows of one PID
 * on several GPUs: the first. */
static long tree_parent(const struct live_view *v, const size_t *shown, size_t n, size_t i)
{
        const struct live_row *w = &v->rows[shown[i]];
        pid_t want[2] = { w->ppid, w->tie_pid };
        for (int k = 0; k < 2; k++)
                for (size_t j = 0; want[k] > 0 && j < n; j++)
                        if (j != i && v->rows[shown[j]].pid == want[k] && v->rows[shown[j]].pid != w->pid)
                                return (long)j;
        return -1;
}

/* Append shown[i] and, below it, its children in sort order (depth-first), each once. */
static size_t tree_walk(const struct live_view *v, const struct top_state *s, const size_t *shown, const long *parent,
                        size_t n, size_t i, unsigned depth, bool *placed, size_t *idx, unsigned *dep, size_t at,
                        size_t max)
{
        if (placed[i] || at >= max)
                return at;
        placed[i] = true;
        idx[at] = shown[i];
        if (dep)
                dep[at] = depth;
        at++;
        for (;;) {
                long best = -1;
                for (size_t j = 0; j < n; j++)
                        if (!placed[j] && parent[j] == (long)i &&
                            (best < 0 || before(&v->rows[shown[j]], &v->rows[shown[best]], s)))
                                best = (long)j;
                if (best < 0)
                        return at;
                at = tree_walk(v, s, shown, parent, n, (size_t)best, depth + 1 < 16 ? depth + 1 : 16, placed, idx, dep,
                               at, max);
        }
}

size_t top_rows_tree(const struct live_view *v, const struct top_state *s, size_t *idx, unsigned *depth,
                     size_t max)
{
        struct top_state flat = *s;
        flat.tree = false;
        size_t shown[LIVE_MAX_ROWS];
        size_t n = top_rows(v, &flat, shown, LIVE_MAX_ROWS);
        long parent[LIVE_MAX_ROWS];
        bool placed[LIVE_MAX_ROWS] = { false };
        for (size_t i = 0; i < n; i++)
                parent[i] = tree_parent(v, shown, n, i);
        /* a cycle (a PID reused as its own ancestor's parent): its first row becomes a root */
        for (size_t i = 0; i < n; i++) {
                long p = parent[i];
                for (size_t steps = 0; p >= 0 && steps <= n; steps++)
                        p = parent[p];
                if (p >= 0)
                        parent[i] = -1;
        }
        size_t at = 0;
        for (size_t i = 0; i < n; i++)
                if (parent[i] < 0)
                        at = tree_walk(v, s, shown, parent, n, i, 0, placed, idx, depth, at, max);
        for (size_t i = 0; i < n; i++) /* what a cycle left out */
                at = tree_walk(v, s, shown, parent, n, i, 0, placed, idx, depth, at, max);
        return at;
}

void top_size_text(uint64_t bytes, char *out, size_t n)
{
        static const char units[] = "KMGTP";
        if (!bytes) {
                snprintf(out, n, "0");
                return;
        }
        double v = (double)bytes / 1024.0;
        int u = 0;
        while (v >= 1000.0 && u < 4) {
                v /= 1024.0;
                u++;
        }
        snprintf(out, n, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

void top_elapsed_text(double seconds, char *out, size_t n)
{
        unsigned long long t = seconds > 0 ? (unsigned long long)seconds : 0;
        unsigned long long d = t / 86400, h = t / 3600 % 24, m = t / 60 % 60, sec = t % 60;
        if (d)
                snprintf(out, n, "%llu-%02llu:%02llu:%02llu", d, h, m, sec);
        else if (h)
                snprintf(out, n, "%llu:%02llu:%02llu", h, m, sec);
        else
                snprintf(out, n, "%llu:%02llu", m, sec);
}

void top_sparkline(const struct live_ring *r, char *out, size_t width)
{
        static const char levels[] = " .:-=+*#";
        size_t n = r ? r->n : 0, k = n ? (n + width - 1) / width : 1, cols = n ? (n + k - 1) / k : 0;
        uint32_t top = 0;
        for (size_t i = 0; i < n; i++) {
                const struct live_point *p = live_ring_at(r, i);
                if (p->valid && p->mib[LIVE_GHOST] > top)
                        top = p->mib[LIVE_GHOST];
        }
        memset(out, ' ', width);
        /* the newest column ends at the right edge; each column is the most ghost of its k points */
        for (size_t c = 0; c < cols; c++) {
                size_t back = (cols - c) * k, from = back < n ? n - back : 0, to = n - (cols - 1 - c) * k;
                bool any = false;
                uint32_t most = 0;
                for (size_t i = from; i < to; i++) {
                        const struct live_point *p = live_ring_at(r, i);
                        if (p->valid) {
                                any = true;
                                if (p->mib[LIVE_GHOST] > most)
                                        most = p->mib[LIVE_GHOST];
                        }
                }
                out[width - cols + c] = !any ? '?' : !most ? '_' : levels[1 + (size_t)most * 6 / (top ? top : 1)];
        }
        out[width] = '\0';
}

/* The percent of a point: the GPU's utilisation (kind -1) or its used memory of the total
 * (kind -2), -1 when the point has none. */
static int point_pct(const struct live_ring *r, const struct live_point *p, int which)
{
        if (!p->valid)
                return -1;
        if (which == TOP_SPARK_UTIL)
                return p->util_gpu;
        uint64_t used = 0;
        for (int k = LIVE_LISTED; k < LIVE_KINDS; k++)
                used += p->mib[k];
        return r->total_mib ? (int)(used * 100 / r->total_mib) : -1;
}

void top_percent_sparkline(const struct live_ring *r, int which, char *out, size_t width)
{
        static const char levels[] = "_.:-=+*#";
        size_t n = r ? r->n : 0, k = n ? (n + width - 1) / width : 1, cols = n ? (n + k - 1) / k : 0;
        memset(out, ' ', width);
        for (size_t c = 0; c < cols; c++) {
                size_t back = (cols - c) * k, from = back < n ? n - back : 0, to = n - (cols - 1 - c) * k;
                int most = -1;
                for (size_t i = from; i < to; i++) {
                        int v = point_pct(r, live_ring_at(r, i), which);
                        if (v > most)
                                most = v;
                }
                out[width - cols + c] = most < 0 ? '?' : levels[most >= 100 ? 7 : (size_t)most * 8 / 100];
        }
        out[width] = '\0';
}

static unsigned long long mib(uint64_t bytes)
{
        return (unsigned long long)((bytes + (1u << 19)) >> 20);
}

static void hhmmss(double t, char *out, size_t n)
{
        time_t s = (time_t)t;
        struct tm tm;
        if (t <= 0 || !gmtime_r(&s, &tm))
                snprintf(out, n, "--:--:--");
        else
                strftime(out, n, "%H:%M:%S", &tm);
}

/* A bar of width w: reserved, listed, foreign, ghost, unattributed, then free. */
static void bar(struct top_canvas *c, int y, int x, int w, const struct live_gpu *g, bool color)
{
        put(c, y, x++, "[", 1, TA_NONE);
        int filled = 0;
        double total = g->total ? (double)g->total : 1;
        double acc = 0;
        for (int k = 0; k < LIVE_KINDS && g->inspected; k++) {
                acc += (double)g->kind[k];
                int upto = (int)(acc / total * w + 0.5);
                if (g->kind[k] && upto == filled && filled < w)
                        upto = filled + 1;      /* anything present shows */
                if (upto > w)
                        upto = w;
                char ch = color ? ' ' : live_kind_letter(k);
                for (; filled < upto; filled++)
                        put(c, y, x + filled, &ch, 1, (unsigned char)(TA_KIND + k));
        }
        for (; filled < w; filled++)
                put(c, y, x + filled, g->inspected ? "." : "?", 1, TA_FREE);
        put(c, y, x + w, "]", 1, TA_NONE);
}

/* The figures beside a GPU's bar: used as scan, the page and the metrics say it (NVML's, the
 * reservation apart), the ghost, the freeing; then the reservation (dim). "" if not inspected. */
static void figures(const struct live_gpu *g, char *fig, size_t figlen, char *res, size_t reslen)
{
        fig[0] = res[0] = '\0';
        if (!g->inspected)
                return;
        int n = snprintf(fig, figlen,
                         g->ghost_confirmed ? _("used %llu/%llu MiB  ghost %llu MiB (confirmed)")
                                            : _("used %llu/%llu MiB  ghost %llu MiB"),
                         mib(g->used), mib(g->total), mib(g->kind[LIVE_GHOST]));
        if (g->kind[LIVE_FREEING] && n >= 0 && (size_t)n < figlen)
                snprintf(fig + n, figlen - (size_t)n, _("  freeing %llu MiB"), mib(g->kind[LIVE_FREEING]));
        if (g->reserved_known)
                snprintf(res, reslen, _("  reserved %llu MiB apart"), mib(g->kind[LIVE_RESERVED]));
        else
                snprintf(res, reslen, "%s", _("  (old driver: reservation included)"));
}

/* the figures' buffers: every translation of them fits (UTF-8: 3 bytes a Chinese character) */
#define FIG_MAX 256
#define RES_MAX 128

/* TRANSLATORS: a confidence level, as in "(high confidence)" */
static const char *const confidence_words[] __attribute__((unused)) = { N_("high"), N_("medium"), N_("low") };

/* "n/a" for a figure the driver does not give (-1) */
static void fig_int(char *out, size_t n, long long v, const char *unit)
{
        if (v < 0)
                snprintf(out, n, "n/a");
        else
                snprintf(out, n, "%lld%s", v, unit);
}

/* KB/s as NVML gives it: "512 KB/s", "12 MB/s", "3.1 GB/s" */
static void fig_rate(char *out, size_t n, long long kbs)
{
        if (kbs < 0)
                snprintf(out, n, "n/a");
        else if (kbs < 1000)
                snprintf(out, n, "%lld KB/s", kbs);
        else if (kbs < 1000000)
                snprintf(out, n, "%lld MB/s", kbs / 1000);
        else
                snprintf(out, n, "%.1f GB/s", (double)kbs / 1e6);
}

#define TEL_ITEMS 10
#define TEL_ITEM_MAX 64

/* nvtop's figures of a GPU as items ("GPU 60%", "TEMP 58C", ...), each "n/a" where the driver
 * does not give it; *bad marks the items that call for attention (a pending remap, ECC errors). */
static size_t telemetry_items(const struct live_gpu *g, char it[TEL_ITEMS][TEL_ITEM_MAX], bool bad[TEL_ITEMS])
{
        const struct gpu_telemetry *t = &g->tel;
        char a[24], b[24];
        size_t n = 0;
        memset(bad, 0, sizeof(bool) * TEL_ITEMS);
        fig_int(a, sizeof(a), t->util_gpu, "%");
        fig_int(b, sizeof(b), t->util_mem, "%");
        snprintf(it[n++], TEL_ITEM_MAX, "GPU %s  MEM %s", a, b);
        fig_int(a, sizeof(a), t->temp_c, "C");
        snprintf(it[n++], TEL_ITEM_MAX, "TEMP %s", a);
        fig_int(a, sizeof(a), t->power_mw < 0 ? -1 : (t->power_mw + 500) / 1000, "");
        fig_int(b, sizeof(b), t->power_limit_mw < 0 ? -1 : (t->power_limit_mw + 500) / 1000, " W");
        snprintf(it[n++], TEL_ITEM_MAX, "POW %s/%s", a, b);
        fig_int(a, sizeof(a), t->clock_sm_mhz, "");
        fig_int(b, sizeof(b), t->clock_mem_mhz, " MHz");
        snprintf(it[n++], TEL_ITEM_MAX, "CLK %s/%s", a, b);
        fig_int(a, sizeof(a), t->fan_pct, "%");
        snprintf(it[n++], TEL_ITEM_MAX, "FAN %s", a);
        fig_rate(a, sizeof(a), t->pcie_rx_kbs);
        fig_rate(b, sizeof(b), t->pcie_tx_kbs);
        snprintf(it[n++], TEL_ITEM_MAX, "PCIe RX %s TX %s", a, b);
        fig_int(a, sizeof(a), t->enc_pct, "%");
        fig_int(b, sizeof(b), t->dec_pct, "%");
        snprintf(it[n++], TEL_ITEM_MAX, "ENC %s DEC %s", a, b);
        fig_int(a, sizeof(a), g->ecc_uncorrected, "");
        bad[n] = g->ecc_uncorrected > 0;
        snprintf(it[n++], TEL_ITEM_MAX, "ECC %s", a);
        bad[n] = g->remap_pending > 0 || g->remap_failed > 0 || g->retired_pending > 0;
        snprintf(it[n++], TEL_ITEM_MAX, "REMAP %s",
                 g->remap_failed > 0 ? "failed" : g->remap_pending > 0 || g->retired_pending > 0 ? "pending"
                 : g->remap_pending < 0 ? "n/a" : "no");
        if (g->mig_instances)
                snprintf(it[n++], TEL_ITEM_MAX, "MIG %u", g->mig_instances);
        return n;
}

/* The figures, as many lines as they need (at most 2), items never cut. Returns the next y. */
static int telemetry_lines(struct top_canvas *c, int y, const struct live_gpu *g)
{
        char it[TEL_ITEMS][TEL_ITEM_MAX];
        bool bad[TEL_ITEMS];
        size_t n = telemetry_items(g, it, bad);
        int x = 2, lines = 1;
        for (size_t i = 0; i < n; i++) {
                int w = (int)strlen(it[i]);
                if (x > 2 && x + w > c->cols) {
                        if (++lines > 2)
                                break;
                        y++;
                        x = 2;
                }
                x = puts_at(c, y, x, it[i], bad[i] ? TA_BAD : TA_NONE) + 2;
        }
        return y + 1;
}

/* nvtop's graphs: the utilisation and the used memory over the ring, beside the figures now. */
static int history_line(struct top_canvas *c, int y, const struct live_gpu *g, const struct live_ring *r)
{
        char spark[32], now[16];
        top_percent_sparkline(r, TOP_SPARK_UTIL, spark, 24);
        int x = puts_at(c, y, 2, _("util  "), TA_DIM);
        x = put(c, y, x, spark, 24, TA_BOLD);
        if (g->tel.util_gpu >= 0)
                snprintf(now, sizeof(now), " %3d%%", g->tel.util_gpu);
        else
                snprintf(now, sizeof(now), "  n/a");
        x = puts_at(c, y, x, now, TA_NONE);
        top_percent_sparkline(r, TOP_SPARK_USED, spark, 24);
        x = puts_at(c, y, x + 3, _("used  "), TA_DIM);
        x = put(c, y, x, spark, 24, TA_BOLD);
        printf_at(c, y, x, TA_NONE, " %3llu%%", g->total ? (unsigned long long)(g->used * 100 / g->total) : 0ull);
        return y + 1;
}

static int gpu_block(struct top_canvas *c, int y, const struct live_gpu *g, const struct live_ring *r,
                     const struct top_state *s, bool detail, int room, bool compact)
{
        int x = printf_at(c, y, 0, TA_BOLD, "GPU %u ", g->index);
        x = put_hostile(c, y, x, g->name, 40, TA_NONE);
        x = put(c, y, x, "  ", 2, TA_NONE);
        x = put_hostile(c, y, x, g->bus[0] ? g->bus : g->uuid, 40, TA_DIM);
        x = put(c, y, x, "  ", 2, TA_NONE);
        x = put_hostile(c, y, x, g->verdict, 24, live_verdict_alarming(g->verdict) ? TA_BAD : TA_GOOD);
        if (g->confidence[0])
                printf_at(c, y, x, TA_NONE, _(" (%s confidence)"), _(g->confidence));
        y++;
        char fig[FIG_MAX], res[RES_MAX];
        figures(g, fig, sizeof(fig), res, sizeof(res));
        /* the bar leaves the figures their room (room: the longest of the GPUs', so that every
         * bar has the same width): 60 cells at most, 20 (or what is left) at least */
        int w = c->cols - 5 - room;
        int least = c->cols - 44 < 20 ? c->cols - 44 : 20;
        if (w > 60)
                w = 60;
        if (least < 10)
                least = 10;
        if (w < least)
                w = least;
        bar(c, y, 2, w, g, s->color);
        if (g->inspected) {
                x = puts_at(c, y, w + 5, fig, TA_NONE);
                puts_at(c, y, x, res, TA_DIM);
        } else
                put_hostile(c, y, w + 5, !str_empty(g->status) ? g->status : _("not inspected"), c->cols, TA_BAD);
        y++;
        if (g->tel.queried)
                y = telemetry_lines(c, y, g);
        if (g->tel.queried && !compact)
                y = history_line(c, y, g, r);
        char spark[32];
        top_sparkline(r, spark, 24);
        x = puts_at(c, y, 2, _("ghost "), TA_DIM);
        x = put(c, y, x, spark, 24, TA_BOLD);
        double span = r && r->n > 1 ? (double)live_ring_at(r, r->n - 1)->t - live_ring_at(r, 0)->t : 0;
        x = printf_at(c, y, x, TA_DIM, span >= 120 ? " %3.0fm  " : " %3.0fs  ", span >= 120 ? span / 60 : span);
        put_hostile(c, y, x, g->summary, c->cols - x, TA_NONE);
        y++;
        if (detail && live_verdict_alarming(g->verdict)) {
                for (size_t e = 0; e < g->n_evidence && e < 4; e++, y++) {
                        x = puts_at(c, y, 4, "- ", TA_DIM);
                        put_hostile(c, y, x, g->evidence[e], c->cols - x, TA_NONE);
                }
                if (!str_empty(g->next_step)) {
                        x = puts_at(c, y, 2, _("next: "), TA_BOLD);
                        y = put_wrapped(c, y, x, g->next_step, 4, TA_NONE);
                }
        }
        return y;
}

static void dialog(struct top_canvas *c, const struct live_view *v, const struct top_state *s)
{
        int top = 2, left = 3, h = c->rows - 4, w = c->cols - 6;
        if (h < 5 || w < 20)
                return;
        const char *title = "";
        struct buf text = BUF_INIT(1 << 20);
        switch (s->dialog) {
        case TOP_DIALOG_HELP:
                title = _("Help");
                buf_puts(&text, _("ghostvram top: used GPU memory split into what NVML charges to live processes\n"
                                "(listed), to processes of other PID namespaces (foreign), ghost (a dead owner's\n"
                                "memory still held, e.g. by forked workers) and unattributed; the driver's\n"
                                "reservation apart.\n\n"
                                "Bar: R reserved  L listed  F foreign  G ghost  U unattributed  ~ freeing (the driver\n"
                                "     is tearing a context down: not a ghost)  . free\n"
                                "Sparkline: the ghost over the last samples (_ none, ? no data: the driver hung)\n\n"
                                "Figures: GPU and MEM utilisation, TEMP, POW draw/limit, CLK SM/memory, FAN,\n"
                                "PCIe RX/TX, ENC/DEC, ECC (uncorrected since the driver loaded), REMAP (rows\n"
                                "waiting for a reset); n/a: the driver gives none. Graphs: util and used memory.\n\n"
                                "Keys:\n"
                                "  q F10      quit\n"
                                "  g          next GPU (then every GPU again)\n"
                                "  up/down    select a process (its evidence shows at the bottom); PgUp/PgDn,\n"
                                "             Home/End\n"
                                "  s F6 >     sort by the next column (gpu, pid, memory, sm, cpu, rss, time, user,\n"
                                "             role, command); < the previous; I reverses\n"
                                "  t F5       tree: a process under its parent, a job's workers under its owner\n"
                                "  / F3       filter: a PID, or text of user, command, role, link (Enter keeps, Esc clears)\n"
                                "  k F9 T     SIGTERM the selected process (K: SIGKILL), asked first, through\n"
                                "             reclaim's checks (pidfd, start time; never PID 1, daemons or\n"
                                "             ghostvram's ancestors), logged to syslog; a live job's process\n"
                                "             only after a second confirmation (F, then Y); still there after\n"
                                "             SIGTERM: k again offers SIGKILL\n"
                                "  r          reclaim's plan for the GPU in view (a dry run); from there A acts,\n"
                                "             after an explicit confirmation, and only as root\n"
                                "  x          the recent NVIDIA kernel events (Xid)\n"
                                "  ? h F1     this help\n"
                                "  Esc        close a dialog\n\n"
                                "A hung driver never freezes the screen: the last sample stays, aged, with the\n"
                                "reason, while a new one is collected.\n"));
                break;
        case TOP_DIALOG_XID:
                title = _("Recent NVIDIA kernel events (newest first)");
                for (size_t i = v ? v->n_xids : 0; i-- > 0;) {
                        const struct live_xid *e = &v->xids[i];
                        char t[16];
                        hhmmss(e->time, t, sizeof(t));
                        /* i18n: no: a time and a GPU index */
                        buf_printf(&text, "%s UTC  GPU %d  ", t, e->gpu);
                        if (e->xid >= 0)
                                buf_printf(&text, "Xid %d  ", e->xid);
                        esc_terminal(&text, e->title, strlen(e->title));
                        buf_printf(&text, " [%s]", e->severity);
                        if (e->pid) {
                                buf_printf(&text, "  pid %u ", e->pid);
                                esc_terminal(&text, e->process, strlen(e->process));
                        }
                        buf_putc(&text, '\n');
                }
                if (!v || !v->n_xids)
                        buf_printf(&text, "%s\n", _("None for these GPUs."));
                if (v && !str_empty(v->kernel_error)) {
                        buf_printf(&text, "\n%s", _("The kernel log is not read: "));
                        esc_terminal(&text, v->kernel_error, strlen(v->kernel_error));
                        buf_putc(&text, '\n');
                }
                break;
        default:
                title = s->dialog_title ? s->dialog_title : "";
                buf_puts(&text, s->dialog_text ? s->dialog_text : "");
        }
        for (int y = top; y < top + h; y++) {
                for (int x = left; x < left + w; x++)
                        put(c, y, x, " ", 1, TA_NONE);
                put(c, y, left, "|", 1, TA_TITLE);
                put(c, y, left + w - 1, "|", 1, TA_TITLE);
        }
        for (int x = left; x < left + w; x++) {
                put(c, top, x, "-", 1, TA_TITLE);
                put(c, top + h - 1, x, "-", 1, TA_TITLE);
        }
        printf_at(c, top, left + 2, TA_TITLE, " %s ", title);
        printf_at(c, top + h - 1, left + 2, TA_TITLE, "%s", _(" Esc close  up/down scroll "));
        /* the lines, from dialog_scroll on */
        const char *p = buf_str(&text);
        size_t line = 0;
        int y = top + 1;
        while (*p && y < top + h - 1) {
                size_t n = strcspn(p, "\n");
                if (line++ >= s->dialog_scroll) {
                        size_t brk;
                        put(c, y, left + 2, p, text_fit(c, p, n, (size_t)(w - 4), &brk), TA_NONE);
                        y++;
                }
                p += n + (p[n] == '\n');
        }
        buf_free(&text);
}

/* The figure columns after NVML MiB, each shown when the terminal leaves the role and the
 * command their room (36 columns): %SM first, then %CPU, RSS, TIME (nvitop's order). */
enum { COL_SM = 0, COL_CPU, COL_RSS, COL_TIME, COL_FIGS };
static const struct {
        const char *label;
        int w;                          /* right-aligned in w columns, one blank before */
} fig_cols[COL_FIGS] = { { "%SM", 4 }, { "%CPU", 5 }, { "RSS", 6 }, { "TIME", 10 } };

struct table_layout {
        bool show[COL_FIGS];
        int role_x;                     /* where ROLE starts; LINK / COMMAND 27 columns later */
};

static void table_layout(const struct top_canvas *c, struct table_layout *l)
{
        int x = 36; /* after NVML MiB (27..34) and a blank */
        for (int k = 0; k < COL_FIGS; k++) {
                l->show[k] = c->cols - (x + fig_cols[k].w + 1) >= 36;
                if (l->show[k])
                        x += fig_cols[k].w + 1;
                else
                        break;
        }
        for (int k = 0; k < COL_FIGS; k++)
                if (!l->show[k])
                        for (; k < COL_FIGS; k++)
                                l->show[k] = false;
        l->role_x = x + 1;
}

/* The process table's header, each label where its column starts (wide labels counted in
 * columns): PID right-aligned in 7, USER at 8, S at 19, GPU at 21, NVML MiB right-aligned in
 * 27..34, then the figure columns the width allows, ROLE, LINK / COMMAND 27 columns later, as
 * the rows lay them out. */
static void table_header(struct top_canvas *c, int y, const struct table_layout *l)
{
        static const struct {
                int x, w;               /* w > 0: right-aligned in w columns */
                const char *label;
                bool words;             /* translated (PID, S, GPU, NVML MiB read the same in every language) */
        } cols[] = {
                { 0, 7, "PID", false },  { 8, 0, N_("USER"), true },   { 19, 0, "S", false },
                { 21, 0, "GPU", false }, { 27, 8, "NVML MiB", false },
        };
        for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
                const char *lab = cols[i].words ? _(cols[i].label) : cols[i].label;
                int w = (int)text_cols(c, lab, strlen(lab));
                put(c, y, cols[i].w > w ? cols[i].x + cols[i].w - w : cols[i].x, lab, strlen(lab), TA_TITLE);
        }
        int x = 36;
        for (int k = 0; k < COL_FIGS && l->show[k]; k++) {
                x += fig_cols[k].w;
                puts_at(c, y, x - (int)strlen(fig_cols[k].label), fig_cols[k].label, TA_TITLE);
                x++;
        }
        puts_at(c, y, l->role_x, _("ROLE"), TA_TITLE);
        puts_at(c, y, l->role_x + 27, _("LINK / COMMAND"), TA_TITLE);
}

/* The figure columns of a row (GPU, NVML MiB, then those the layout shows) as the header lays
 * them out: "-" for what is not known. */
static void row_figures(const struct live_row *w, double now, const struct table_layout *l, char *out, size_t n)
{
        char gpu[24], mem[24], f[COL_FIGS][24];
        if (w->gpu >= 0 && w->mig_instance != GPU_INSTANCE_NONE)
                snprintf(gpu, sizeof(gpu), "%d/%u", w->gpu, w->mig_instance);
        else if (w->gpu >= 0)
                snprintf(gpu, sizeof(gpu), "%d", w->gpu);
        else
                snprintf(gpu, sizeof(gpu), "%.5s", w->gpus[0] ? w->gpus : "-");
        if (w->listed_bytes >= 0)
                snprintf(mem, sizeof(mem), "%llu", mib((uint64_t)w->listed_bytes));
        else
                snprintf(mem, sizeof(mem), "-");
        for (int k = 0; k < COL_FIGS; k++)
                snprintf(f[k], sizeof(f[k]), "-");
        if (w->sm_util >= 0)
                snprintf(f[COL_SM], sizeof(f[COL_SM]), "%d", w->sm_util > 999 ? 999 : w->sm_util);
        if (w->cpu_pct >= 0)
                snprintf(f[COL_CPU], sizeof(f[COL_CPU]), "%.1f", w->cpu_pct > 9999 ? 9999.0 : w->cpu_pct);
        if (w->rss_known)
                top_size_text(w->rss_bytes, f[COL_RSS], sizeof(f[COL_RSS]));
        if (w->start_time > 0 && now >= w->start_time)
                top_elapsed_text(now - w->start_time, f[COL_TIME], sizeof(f[COL_TIME]));
        int at = snprintf(out, n, "%-5.5s %8s ", gpu, mem);
        for (int k = 0; k < COL_FIGS && l->show[k] && at > 0 && (size_t)at < n; k++)
                at += snprintf(out + at, n - (size_t)at, "%*s ", fig_cols[k].w, f[k]);
}

/* Line 0: what this is and the keys. */
static void draw_title(struct top_canvas *c, const struct live_view *v, const struct top_state *s)
{
        fill(c, 0, TA_TITLE);
        int x = puts_at(c, 0, 0, "ghostvram top", TA_TITLE);
        if (v && v->simulated)
                x = puts_at(c, 0, x, _("  SIMULATED HOST"), TA_TITLE);
        if (s->focus >= 0)
                x = printf_at(c, 0, x, TA_TITLE, "  GPU %d", s->focus);
        const char *keys = _("q quit  g gpu  s sort  t tree  / filter  k kill  r reclaim  x xid  ? help");
        int keys_w = (int)text_cols(c, keys, strlen(keys));
        if (c->cols - keys_w <= x + 2) { /* a narrow terminal: the first keys; ? lists them all */
                keys = _("q quit  g gpu  s sort  r reclaim  x xid  ? help");
                keys_w = (int)text_cols(c, keys, strlen(keys));
        }
        if (c->cols - keys_w > x + 2)
                puts_at(c, 0, c->cols - keys_w, keys, TA_TITLE);
}

/* Lines 1 and 2: how fresh the sample is, and why not or what it lacks; then the driver's
 * absence. Returns the next line. */
static int draw_freshness(struct top_canvas *c, const struct live_view *v, const struct top_state *s)
{
        double age = v && v->finished > 0 ? s->now - v->finished : -1;
        bool stale = !v || age > s->stale_after_s || (s->status && s->status[0] && !s->status_in_view);
        char t[16];
        int x;
        if (!v) {
                printf_at(c, 1, 0, TA_WARN, _("waiting for the first sample (collecting for %.1f s)"), s->collecting_s);
        } else {
                hhmmss(v->finished, t, sizeof(t));
                x = printf_at(c, 1, 0, stale ? TA_BAD : TA_NONE,
                              stale ? _("STALE sample %s UTC, %.1f s old") : _("sample %s UTC, %.1f s old"), t,
                              age < 0 ? 0 : age);
                printf_at(c, 1, x, TA_DIM,
                          v->full_walk ? _("  every %.3g s  full walk %.0f ms") : _("  every %.3g s  light walk %.0f ms"),
                          s->interval_s, v->duration_s * 1000);
        }
        x = 0;
        /* without a driver the line below says it: once */
        bool status_said = v && !v->driver_present && s->status_in_view;
        if (s->status && s->status[0] && !status_said)
                x = put_hostile(c, 2, 0, s->status, c->cols, TA_BAD);
        if (v && s->collecting_s > s->interval_s + 0.5)
                printf_at(c, 2, x ? x + 2 : 0, TA_WARN, _("(collecting for %.0f s; keys still work)"), s->collecting_s);
        int y = 3;
        if (v && !v->driver_present) {
                x = puts_at(c, y, 0, _("NVIDIA driver: "), TA_BAD);
                put_hostile(c, y++, x, v->driver, c->cols - x, TA_BAD);
        }
        return y;
}

/* The GPUs in view from line y, their figures aligned. Returns the next line. */
static int draw_gpus(struct top_canvas *c, int y, const struct live_view *v, const struct live_history *h,
                     const struct top_state *s)
{
        size_t shown = 0;
        int fig_room = 0;
        for (size_t i = 0; v && i < v->n_gpus; i++) {
                char fig[FIG_MAX], res[RES_MAX];
                figures(&v->gpus[i], fig, sizeof(fig), res, sizeof(res));
                int cols = (int)(text_cols(c, fig, strlen(fig)) + text_cols(c, res, strlen(res)));
                if (cols > fig_room)
                        fig_room = cols;
        }
        /* the graphs' line only where the GPUs leave the processes room (nvtop drops its graphs too) */
        size_t in_view = s->focus >= 0 ? 1 : v ? v->n_gpus : 0;
        bool compact = (int)(in_view * 6 + 14) > c->rows;
        for (size_t i = 0; v && i < v->n_gpus && y < c->rows - 6; i++) {
                const struct live_gpu *g = &v->gpus[i];
                if (s->focus >= 0 && (int)g->index != s->focus)
                        continue;
                y = gpu_block(c, y, g, live_history_gpu(h, g->index), s, s->focus >= 0, fig_room, compact);
                shown++;
        }
        if (v && s->focus >= 0 && !shown)
                printf_at(c, y++, 0, TA_BAD, _("GPU %d is not in this sample"), s->focus);
        return y;
}

/* The process table's header on line y, with the sort where there is room. */
static void draw_table_header(struct top_canvas *c, int y, const struct table_layout *lay, const struct top_state *s)
{
        fill(c, y, TA_TITLE);
        table_header(c, y, lay);
        if (c->cols >= 110) {
                char what[64];
                snprintf(what, sizeof(what), "%s%s", s->tree ? _("tree") : _(top_sort_name(s->sort)),
                         !s->tree && s->sort_reverse ? " ^" : "");
                int ww = (int)text_cols(c, what, strlen(what));
                printf_at(c, y, c->cols - 8 - ww, TA_TITLE, _("sort: %s"), what);
        }
}

/* One process row on line y (depth: its depth in the tree; kin: of the selected process's
 * family, its PID in bold). */
static void draw_row(struct top_canvas *c, int y, const struct live_row *w, const struct table_layout *lay,
                     const struct top_state *s, unsigned depth, bool selected, bool kin)
{
        unsigned char at = selected ? TA_SELECTED : w->ghost_holder ? TA_BAD : TA_NONE;
        if (selected)
                fill(c, y, TA_SELECTED);
        char figs[128];
        row_figures(w, s->now, lay, figs, sizeof(figs));
        int x = printf_at(c, y, 0, kin ? TA_BOLD : at, "%7d ", (int)w->pid);
        put_hostile(c, y, x, w->user[0] ? w->user : "?", 10, at);
        printf_at(c, y, x + 11, at, "%c %s", w->state > ' ' && w->state < 0x7f ? w->state : '?', figs);
        x = lay->role_x;
        int indent = s->tree && depth ? (int)depth * 3 : 0;
        int rx = x;
        if (indent)
                rx = puts_at(c, y, x + indent - 3, "`- ", TA_DIM);
        rx = put_hostile(c, y, rx, w->role, 26, at); /* a nested row's command moves right */
        x = rx < x + 27 ? x + 27 : rx + 1;
        x = put_hostile(c, y, x, w->comm[0] ? w->comm : "", 16, at);
        x = put(c, y, x, "  ", 2, at);
        put_hostile(c, y, x, w->cmdline ? w->cmdline : "", c->cols - x, at);
}

/* The selected row's evidence on lines y and y + 1. */
static void draw_evidence(struct top_canvas *c, int y, const struct live_row *w)
{
        int x = printf_at(c, y, 0, TA_BOLD, "PID %d: ", (int)w->pid);
        x = put_hostile(c, y, x, !str_empty(w->link) ? w->link : w->role, c->cols - x, TA_NONE);
        if (w->confidence[0])
                x = printf_at(c, y, x, TA_NONE, _(" (%s confidence)"), _(w->confidence));
        if (w->family)
                printf_at(c, y, x, TA_DIM, _("  family %u (its members' PIDs in bold)"), w->family);
        x = puts_at(c, y + 1, 2, "", TA_NONE);
        put_hostile(c, y + 1, x, w->detail, c->cols - x, TA_DIM);
}

/* The processes from line y (the header, the rows that fit above `bottom`, the selected one
 * kept in view), then the selected row's evidence at bottom. */
static void draw_processes(struct top_canvas *c, int y, int bottom, const struct live_view *v, const struct top_state *s)
{
        size_t idx[LIVE_MAX_ROWS];
        unsigned depth[LIVE_MAX_ROWS] = { 0 };
        size_t n = s->tree ? top_rows_tree(v, s, idx, depth, LIVE_MAX_ROWS) : top_rows(v, s, idx, LIVE_MAX_ROWS);
        struct table_layout lay;
        table_layout(c, &lay);
        draw_table_header(c, y++, &lay, s);
        int room = bottom - y;
        size_t sel = n && s->selected >= n ? n - 1 : s->selected;
        size_t first = room > 0 && sel >= (size_t)room ? sel - (size_t)room + 1 : 0;
        /* the selected process's family: they share an open file description, so they keep the
         * same contexts (ended together or not at all); its PIDs in bold */
        unsigned sel_family = n ? v->rows[idx[sel]].family : 0;
        for (size_t k = first; k < n && y < bottom; k++, y++) {
                const struct live_row *w = &v->rows[idx[k]];
                draw_row(c, y, w, &lay, s, depth[k], k == sel, sel_family && w->family == sel_family && k != sel);
        }
        if (!n && s->filter && *s->filter && v && v->n_rows)
                printf_at(c, y, 2, TA_DIM, _("no process matches the filter '%s' (/ to change it, Esc in it to clear)"),
                          s->filter);
        else if (!n)
                puts_at(c, y, 2, v ? _("no process holds an NVIDIA device node or is listed by NVML") : "", TA_DIM);
        if (n)
                draw_evidence(c, bottom, &v->rows[idx[sel]]);
}

/* The latest kernel event of the GPUs in view, on line y. */
static void draw_last_xid(struct top_canvas *c, int y, const struct live_view *v, const struct top_state *s)
{
        for (size_t i = v ? v->n_xids : 0; i-- > 0;) {
                const struct live_xid *e = &v->xids[i];
                if (s->focus >= 0 && e->gpu != s->focus)
                        continue;
                char t[16];
                hhmmss(e->time, t, sizeof(t));
                int x = printf_at(c, y, 0, TA_WARN, _("kernel %s GPU %d "), t, e->gpu);
                if (e->xid >= 0)
                        x = printf_at(c, y, x, TA_WARN, "Xid %d ", e->xid);
                x = put_hostile(c, y, x, e->title, 40, TA_NONE);
                if (e->pid)
                        x = printf_at(c, y, x, TA_NONE, " (pid %u)", e->pid);
                printf_at(c, y, x, TA_DIM, P_("  %zu event: x", "  %zu events: x", v->n_xids), v->n_xids);
                break;
        }
}

void top_draw(struct top_canvas *c, const struct live_view *v, const struct live_history *h,
              const struct top_state *s)
{
        for (size_t i = 0; i < (size_t)c->rows * (size_t)c->cols; i++)
                c->ch[i] = ' ';
        memset(c->at, 0, (size_t)c->rows * (size_t)c->cols);
        draw_title(c, v, s);
        int y = draw_freshness(c, v, s);
        y = draw_gpus(c, y, v, h, s);
        int bottom = c->rows - 4;       /* the selected row's evidence, the last Xid, a note */
        draw_processes(c, y + 1, bottom, v, s);
        draw_last_xid(c, bottom + 2, v, s);
        if (s->message && s->message[0])
                put_hostile(c, bottom + 3, 0, s->message, c->cols, TA_WARN);
        else if (!s->color)
                puts_at(c, bottom + 3, 0,
                        _("bar: R reserved  L listed  F foreign  G ghost  U unattributed  ~ freeing  . free"), TA_DIM);
        if (s->dialog != TOP_DIALOG_NONE)
                dialog(c, v, s);
}
