/* page: the HTML page `ghostvram serve` answers at `/`. One self-contained document: no
 * script, no external style, font or image; an inline style whose hash the Content-Security-
 * Policy names, and inline SVG. Per GPU a stacked timeline of memory by kind (reserved, listed,
 * foreign, ghost, unattributed, freeing) from the live history, the verdict with its evidence and next
 * step; then the holders table and the recent NVIDIA kernel events. It refreshes itself with a
 * <meta http-equiv="refresh"> (works with JavaScript off). Every string a process or the kernel
 * controls is HTML-escaped; command lines appear only with expose_cmdline.
 *
 * Rendered on the collection thread after each cycle (a request never renders). No I/O. */
#pragma once
#include <stdbool.h>

#include "render/live_view.h"
#include "util/buf.h"

struct page_opts {
        double refresh_s;               /* the page reloads itself after this long */
        bool expose_cmdline;            /* rows carry command lines (the view must have them) */
        double now;                     /* epoch seconds: when it is rendered */
        double age_s;                   /* how old the view's data is; < 0: no data yet */
        double stale_after_s;           /* older data is flagged stale */
        const char *status;             /* the latest collection's problem, "" or NULL if none */
        double started;                 /* epoch seconds serve started (0: unknown): no timeline
                                         * starts before it */
};

/* The Content-Security-Policy the page needs (the hash of its one inline style). */
extern const char page_csp[];
/* The page's inline style (for the test that checks page_csp's hash). */
extern const char page_style[];

/* Render the page into out (appended). v may be NULL (no data yet). Returns 0, -ENOMEM or
 * -E2BIG (out's cap; the page is then taken back out). The largest page (64 GPUs of 240 drawn
 * points, 512 rows) is under 3 MB: give out a cap well above that (serve: 16 MiB), since an
 * append that fails midway is only seen by the last one. */
int page_render(struct buf *out, const struct live_view *v, const struct live_history *h, const struct page_opts *o);

/* Append s (len bytes) escaped for HTML text and attribute values: invalid UTF-8 and control
 * characters become U+FFFD, & < > " ' become entities. Returns 0 or -ENOMEM / -E2BIG. */
int page_esc(struct buf *out, const char *s, size_t len);
