/* top_screen: the screen of `ghostvram top`, drawn into a plain character grid (a canvas of
 * character cells, each with an attribute) from a live view and its history. The command paints
 * the grid with ncurses, or prints it as lines where the terminal cannot address the cursor;
 * tests read it directly. Nothing here prints or calls curses.
 *
 * Without colour, bars are letters (R reserved, L listed, F foreign, G ghost, U unattributed,
 * '.' free); with colour the same cells carry the kind's attribute and the painter fills them.
 * Every string a process, the kernel or the driver controls goes through the terminal escaper.
 * A cell is one column holding one character's code point. On a utf8 canvas (the locale's
 * codeset is UTF-8) a printable character keeps the columns wcwidth gives it: a wide one (a
 * Chinese character, full-width punctuation) takes two cells, the second TOP_CELL_WIDE_RIGHT.
 * Elsewhere the few characters ghostvram's own texts use (→ … — · × ≥ ≤ ✓ ✗, quotes) are written
 * as ASCII ("->", "..."); any other character, and one the locale cannot print, becomes one
 * '?'. Text is fitted and cut in columns, never in bytes. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "render/live_view.h"

enum top_attr {
        TA_NONE = 0,
        TA_KIND,                        /* TA_KIND + enum live_kind: a bar cell of that kind */
        TA_FREE = TA_KIND + LIVE_KINDS, /* the free part of a bar */
        TA_BOLD,
        TA_DIM,
        TA_TITLE,                       /* the top line and table headers */
        TA_SELECTED,                    /* the selected row */
        TA_BAD,                         /* an alarming verdict, a stale sample, an error */
        TA_WARN,
        TA_GOOD,
        TA_COUNT
};

struct top_canvas {
        int rows, cols;
        uint32_t *ch;                   /* rows * cols cells: code points, TOP_CELL_WIDE_RIGHT */
        unsigned char *at;
        bool utf8;                      /* the terminal shows UTF-8: every printable character */
};

/* The right half of the wide character in the cell before it (it writes nothing). */
#define TOP_CELL_WIDE_RIGHT 0u

/* A cell as UTF-8 into out (no NUL); returns its length, 0 for TOP_CELL_WIDE_RIGHT. */
size_t top_cell_utf8(uint32_t cell, char out[4]);

/* Size the canvas (cleared to spaces). Returns 0 or -ENOMEM (the canvas unchanged). */
int top_canvas_resize(struct top_canvas *c, int rows, int cols);
void top_canvas_free(struct top_canvas *c);
/* Row y as a string without its trailing blanks (into out[outlen], UTF-8; a character that
 * does not fit is left out). */
void top_canvas_line(const struct top_canvas *c, int y, char *out, size_t outlen);

/* The process table's columns, each a sort key (s / F6 next, < > move, I reverses). */
enum top_sort {
        TOP_SORT_GPU = 0, TOP_SORT_PID, TOP_SORT_MEM, TOP_SORT_SM, TOP_SORT_CPU, TOP_SORT_RSS, TOP_SORT_TIME,
        TOP_SORT_USER, TOP_SORT_ROLE, TOP_SORT_COMMAND, TOP_SORT_COUNT
};
const char *top_sort_name(enum top_sort s);

enum top_dialog { TOP_DIALOG_NONE = 0, TOP_DIALOG_HELP, TOP_DIALOG_XID, TOP_DIALOG_TEXT };

struct top_state {
        bool color;
        double now;                     /* epoch seconds */
        double interval_s;
        int focus;                      /* a GPU index, -1: every GPU */
        enum top_sort sort;
        bool sort_reverse;
        const char *filter;             /* digits: the row of that PID; other text: rows whose user,
                                         * command, role or link holds it (any case); NULL or "":
                                         * every row */
        bool tree;                      /* rows as a tree: a process under its parent, a job's
                                         * workers under the owner their link names */
        size_t selected;                /* position in the sorted, filtered rows */
        size_t dialog_scroll;
        enum top_dialog dialog;
        const char *dialog_title;       /* TOP_DIALOG_TEXT: a title and lines (our own text) */
        const char *dialog_text;
        const char *status;             /* the latest cycle's problem ("" none) */
        bool status_in_view;            /* that cycle's result is the view shown, its problem a
                                         * GPU not inspected: the sample itself is not stale */
        double collecting_s;            /* how long the running collection has taken (0: none) */
        double stale_after_s;
        const char *message;            /* a one-line note at the bottom ("" none) */
};

/* The rows shown (GPU focus and filter applied), sorted (or as a tree), as indexes into
 * v->rows; returns how many (at most max). depth (may be NULL) gets each one's depth in the
 * tree (0 outside tree mode). */
size_t top_rows(const struct live_view *v, const struct top_state *s, size_t *idx, size_t max);
size_t top_rows_tree(const struct live_view *v, const struct top_state *s, size_t *idx, unsigned *depth,
                     size_t max);

/* "1.5G", "640M", "12K" (binary units), into out. */
void top_size_text(uint64_t bytes, char *out, size_t n);
/* A process's running time as ps writes it: "59:59" (minutes:seconds), "23:59:59", "3-04:05:06". */
void top_elapsed_text(double seconds, char *out, size_t n);

/* Draw the whole screen. v may be NULL (nothing collected yet). */
void top_draw(struct top_canvas *c, const struct live_view *v, const struct live_history *h,
              const struct top_state *s);

/* The ghost of a whole ring as `width` sparkline characters from " .:-=+*#" ('_' none), scaled
 * to its largest ghost: each character the most ghost of its share of the points (a short
 * ghost never vanishes), '?' where they are all gaps (the driver hung). Right-aligned; writes
 * width bytes and a NUL. */
void top_sparkline(const struct live_ring *r, char *out, size_t width);

/* A percent over a ring as `width` characters from "_.:-=+*#" (0-12% ... 88-100%), each the
 * highest of its share of the points, '?' where none has it (a gap, or the driver does not
 * give it): the GPU's utilisation, or its used memory of the total (nvtop's two graphs). */
enum { TOP_SPARK_UTIL = -1, TOP_SPARK_USED = -2 };
void top_percent_sparkline(const struct live_ring *r, int which, char *out, size_t width);
