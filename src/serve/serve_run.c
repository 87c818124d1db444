/* serve_run: the exporter and the HTTP side, started, announced, stopped. */
#include "serve/serve_run.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>

#include "run/scan_run.h"
#include "util/i18n.h"
#include "util/stopwait.h"

/* "ADDR:PORT" as listened on (the port picked when it was 0), "[ADDR]:PORT" for IPv6. */
static void serve_address(const char *listen, int family, uint16_t port, char *out, size_t len)
{
        if (family == AF_INET6)
                snprintf(out, len, "[%.*s]:%u", (int)(strrchr(listen, ']') - listen - 1), listen + 1, port);
        else
                snprintf(out, len, "%.*s:%u", (int)(strrchr(listen, ':') - listen), listen, port);
}

int serve_run(const struct serve_run_opts *o, enum serve_fail *ret_fail)
{
        struct exporter *e = NULL;
        int r = exporter_start(&o->exporter, &e);
        if (r < 0) {
                *ret_fail = SERVE_FAIL_COLLECTOR;
                return r;
        }
        struct http_server *hs = NULL;
        r = http_server_start(&o->http, e, &hs);
        if (r < 0) {
                *ret_fail = SERVE_FAIL_LISTEN;
                exporter_stop(e);
                return r;
        }
        *ret_fail = SERVE_FAIL_NONE;
        char shown[128];
        serve_address(o->http.listen, o->family, http_server_port(hs), shown, sizeof(shown));
        /* i18n: no - scripts and service managers read the address from this line */
        fprintf(o->out, "ghostvram serve: listening on http://%s/metrics (collection every %.3g s%s; the page: http://%s/)\n",
                shown, (double)o->exporter.interval_ms / 1000.0, o->simulated ? ", SIMULATED HOST" : "", shown);
        fflush(o->out);
        o->wait(o->ctx, UINT64_MAX);
        fprintf(o->out, "ghostvram serve: %s\n", _("stopping"));
        fflush(o->out);
        http_server_stop(hs);
        exporter_stop(e);
        return 0;
}

void serve_run_opts_sources(struct serve_run_opts *ro, const struct sources *src, const struct serve_cmd_opts *c,
                            int family)
{
        struct exporter_opts *eo = &ro->exporter;
        struct scan_once_opts so;
        sources_scan_once_opts(src, &so);
        eo->sampler.facts = so.facts;
        eo->sampler.facts.read_kernel = !c->no_kernel;
        eo->sampler.ledger = so.ledger;
        eo->sampler.ledger.floor_min_bytes = c->floor_mib << 20;
        eo->sampler.confirm_ms = 2000;
        eo->sampler.light = true;
        double stale = c->stale_ms ? (double)c->stale_ms / 1000.0 : 4.0 * (double)eo->interval_ms / 1000.0;
        eo->stale_after_s = c->stale_ms || stale >= 60 ? stale : 60;
        ro->family = family;
        ro->simulated = src->simulated;
        ro->out = stdout;
        ro->wait = stopwait_ms;
}

int serve_execute(const struct serve_run_opts *ro, char *err, size_t errlen)
{
        /* one malloc arena beside the main one: every thread (collector, HTTP, deadline
         * workers, walkers) would get its own and keep its pages; serve allocates little and
         * rarely contends (bench/README.md, "chaos": the RSS before and after) */
        mallopt(M_ARENA_MAX, 2);
        /* only this thread takes SIGINT/SIGTERM; the threads started below inherit the mask */
        stopwait_block();
        signal(SIGPIPE, SIG_IGN);
        enum serve_fail fail;
        int r = serve_run(ro, &fail);
        if (r < 0 && fail == SERVE_FAIL_COLLECTOR)
                snprintf(err, errlen, _("cannot start the collection thread: %s"), strerror(-r));
        else if (r < 0)
                snprintf(err, errlen, _("cannot listen on %s: %s"), ro->http.listen, strerror(-r));
        return r < 0 ? -1 : 0;
}
