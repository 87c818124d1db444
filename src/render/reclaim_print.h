/* reclaim_print: the reclaim_io (run/reclaim_run.h) of `ghostvram reclaim`: text on stdout as
 * it happens, or JSON lines (--json-stream), or only the report as one JSON document (--json);
 * the question on a terminal. */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "run/reclaim_run.h"

struct reclaim_print {
        bool json;              /* one document at the end, nothing before */
        bool json_stream;       /* a JSON line per event */
        bool verbose;
        bool poke;              /* the samples are timed from the poke's start */
        /* before the first text: the simulated host's (or bundle's) banner, once; may be NULL */
        void (*banner)(void *ctx);
        void *banner_ctx;
        /* writes a JSON document (and frees it) */
        int (*print_json)(json_t *doc);
        /* an error that ends reclaim without a report */
        void (*error)(const char *msg);
};

/* io's callbacks printing as p says (p is io's ctx: it must outlive the run). */
void reclaim_print_io(struct reclaim_io *io, struct reclaim_print *p);
