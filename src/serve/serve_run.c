/* serve_run: the exporter and the HTTP side, started, announced, stopped. */
#include "serve/serve_run.h"

#include <string.h>
#include <sys/socket.h>

#include "util/i18n.h"

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
