/* serve_run: `ghostvram serve`'s use case without argv: the collection thread started
 * (serve/exporter.h), the HTTP side listening (serve/http.h), where it listens said in one
 * line, then both stopped when the wait says so. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "serve/exporter.h"
#include "serve/http.h"

struct serve_run_opts {
        struct exporter_opts exporter;
        struct http_opts http;          /* http.listen: checked by http_parse_listen */
        int family;                     /* the listen address's (AF_INET6: shown in brackets) */
        bool simulated;                 /* said in the listening line */
        FILE *out;                      /* the listening and stopping lines */
        /* wait ms (UINT64_MAX: for ever) or until asked to stop */
        bool (*wait)(void *ctx, uint64_t ms);
        void *ctx;
};

/* Which part could not start. */
enum serve_fail {
        SERVE_FAIL_NONE,
        SERVE_FAIL_COLLECTOR,   /* the collection thread */
        SERVE_FAIL_LISTEN,      /* the HTTP side */
};

/* Serve until o->wait returns: 0 once stopped, or the negative errno of the part in *ret_fail
 * that could not start (nothing is left running then). */
int serve_run(const struct serve_run_opts *o, enum serve_fail *ret_fail);
