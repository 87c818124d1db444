/* xid_render: `ghostvram xid`'s output (docs/xid.md): events, a dump's footer, a follow's
 * lines, explanations of codes, as text for people (kernel text escaped, colour when asked)
 * and as JSON documents (schema_version inside). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "collect/xid.h"
#include "render/show.h"
#include "run/xid_run.h"

/* One event: time, GPU, code, title and severity, the message, the process, what to do. */
void xid_event_text(FILE *f, const struct xid_event *e, bool before_load, bool color);

/* A dump's document ({ schema_version, source, path, ..., events }); NULL when out of memory. */
json_t *xid_dump_json(const struct xid_run *x, const struct xid_dump *d);
/* A dump's events, then how many of each severity and what was left out (or why none). */
void xid_dump_text(FILE *f, const struct xid_run *x, const struct xid_dump *d, bool color);

/* "Following PATH ... (Ctrl-C stops)." and a blank line (nvml_gpus: xid_follow_cb's start). */
void xid_follow_header(FILE *f, const char *path, int nvml_gpus, const char *nvml_err);
/* One followed event: as text and a blank line, or one compact JSON object on a line. */
void xid_follow_event(FILE *f, const struct xid_event *e, const char *source, unsigned long overruns, bool json,
                      bool color);
/* "ghostvram xid: N kernel log record(s) overwritten ...". */
void xid_follow_lost(FILE *f, unsigned long lost);

/* `xid explain CODE...`: each code's explanation, separated by a blank line. */
void xid_explain_text(FILE *f, const unsigned *codes, size_t n);
/* { schema_version, explanations: [...] }; NULL when out of memory. */
json_t *xid_explain_doc(const unsigned *codes, size_t n);

/* ---- xid's answer on standard output ------------------------------------------------------- */

/* How it is shown: JSON or text (with colour), after the command's banner of a simulated host. */
struct xid_show {
        const struct xid_run *x;
        struct show out;
};

/* A dump (xid_dump_run's) shown: 0, or -1 (its JSON could not be made or written). */
int xid_dump_show(const struct xid_show *s, const struct xid_dump *d);
/* cb's callbacks (ctx: s) print a follow as it comes: its header (text), each event (text, or
 * one JSON object a line), flushed after each batch; the lost records said on stderr (text). */
void xid_follow_show(struct xid_follow_cb *cb, const struct xid_show *s);

/* cb's callbacks (ctx: s, whose x they set) show xid_execute's dump or follow as s->out says. */
void xid_execute_show(struct xid_execute_cb *cb, struct xid_show *s);
