/* serve_run: `ghostvram serve`'s use case without argv: the collection thread started
 * (serve/exporter.h), the HTTP side listening (serve/http.h), where it listens said in one
 * line, then both stopped when the wait says so. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "run/sources.h"
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

/* What serve's own options give beside ro's. */
struct serve_cmd_opts {
        uint64_t stale_ms;              /* /healthz's limit; 0: 4 intervals, at least 60 s */
        uint64_t floor_mib;             /* the ghost's noise floor */
        bool no_kernel;                 /* do not follow the kernel log */
};
/* The rest of ro: the collection thread's sampler on src's sources with c's, the staleness
 * limit, the listen address's family, the lines to stdout, stopwait_ms as the wait. */
void serve_run_opts_sources(struct serve_run_opts *ro, const struct sources *src, const struct serve_cmd_opts *c,
                            int family);
/* `ghostvram serve`: one malloc arena beside the main one, the stop signals taken (in this thread
 * and the ones it starts), SIGPIPE ignored, then serve_run. 0 once stopped, or -1 with err saying
 * which part could not start and why. */
int serve_execute(const struct serve_run_opts *ro, char *err, size_t errlen);
