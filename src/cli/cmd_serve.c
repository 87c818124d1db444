/* serve: a Prometheus exporter. Collection runs on its own thread on its own schedule; HTTP
 * answers from what the last collection rendered (serve/exporter.h, serve/http.h; both run by
 * serve/serve_run.h). Options, usage and exit codes here. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "serve/http.h"
#include "serve/serve_run.h"
#include "util/i18n.h"

/* the answers are HTTP documents: no --json, no -v, no bundle (one scan's answers) */
#define SERVE_ACCEPTS (CLI_CALL_TIMEOUT | CLI_NVML_LIB | CLI_PROC | CLI_DEV_PREFIX | CLI_HOLDERS)

static void serve_usage(FILE *f)
{
        fputs(_("Usage: ghostvram serve [--listen ADDR:PORT] [--interval DURATION]\n"
              "                       [--expose-cmdline] [OPTIONS]\n\n"
              "A Prometheus exporter. A collection thread scans every --interval; each scrape\n"
              "gets the latest result at once, so a hung driver makes the data age\n"
              "(ghostvram_data_age_seconds, /healthz) instead of hanging a scrape.\n"
              "Read-only: only GET and HEAD.\n\n"), f);
        fputs(_("  GET /metrics      Prometheus text format 0.0.4; OpenMetrics 1.0.0 when the\n"
              "                    Accept header asks for application/openmetrics-text\n"
              "                    (docs/metrics.md)\n"
              "  GET /healthz      200 while the data is fresh, 503 once older than\n"
              "                    --stale-after (the exporter's health, not the driver's:\n"
              "                    that is the gauge ghostvram_driver_up, 0 when NVML did not\n"
              "                    answer)\n"
              "  GET /api/v1/scan  the latest scan as JSON (command lines only with\n"
              "                    --expose-cmdline)\n"
              "  GET /             a page: per-GPU memory timelines by kind (the last 720\n"
              "                    collections), verdicts, holders, Xid events; no script,\n"
              "                    strict CSP\n\n"), f);
        fputs(_("Each collection reads NVML and re-checks the PIDs it lists in /proc; the full\n"
              "/proc walk runs only when some memory is unexplained, a listed PID changed, a\n"
              "ghost is being followed, or every 40th cycle (docs/metrics.md, \"What serve\n"
              "does each cycle\"). The kernel log is followed from the start:\n"
              "ghostvram_xid_events_total counts only new Xid events.\n\n"), f);
        /* xgettext:no-c-format */
        fputs(_("Options:\n"
              "  --listen ADDR:PORT   where to listen (default 127.0.0.1:9835; :9835 every\n"
              "                       address, localhost:9835 the loopback; [::1]:9835 for\n"
              "                       IPv6; 0.0.0.0:9835 for every interface; port 0 picks a\n"
              "                       free one)\n"
              "  --interval DURATION  time between collections (default 15s; 1s to 1h)\n"
              "  --stale-after DURATION\n"
              "                       /healthz answers 503 when the data is older (default\n"
              "                       4 intervals, at least 60s)\n"
              "  --expose-cmdline     include command lines in /api/v1/scan and the page\n"
              "                       (they can carry secrets)\n"
              "  --ledger-dir DIR     /api/v1/scan also carries the allocation ledgers of dead\n"
              "                       owners (gpus[].ledger; `ghostvram track`, docs/track.md)\n"
              "  --max-connections N  concurrent connections (default 64; more wait in the\n"
              "                       backlog)\n"
              "  --noise-floor MIB    minimum ghost in MiB (default 64; 1% of the GPU if\n"
              "                       larger)\n"
              "  --no-kernel          do not follow the kernel log (no Xid counts; /dev/kmsg\n"
              "                       needs root or CAP_SYSLOG)\n"), f);
        cli_common_help(f, SERVE_ACCEPTS);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\nStop with SIGINT or SIGTERM: the collection in progress finishes, then it exits\n"
              "0.\n\n"), f);
        fputs(_("Examples:\n"
              "  sudo ghostvram serve\n"
              "  ghostvram serve --listen '[::1]:9835' --interval 30s\n"
              "  curl -s localhost:9835/metrics | grep ghostvram_gpu_memory_used_bytes\n\n"), f);
        fputs(_("Exit status: 0 stopped by a signal; 2 usage error; 3 could not listen or start.\n"), f);
}

/* What the command line gives: the use case's options, read into directly, and what only the
 * command needs. */
struct serve_args {
        struct cli_common c;
        struct serve_run_opts ro;
        struct serve_cmd_opts o;
};

#define F(f) offsetof(struct serve_args, f)
static const struct cli_opt serve_table[] = {
        { "listen", 'l', CO_STR, F(ro.http.listen) },
        { "interval", 'i', CO_MS, F(ro.exporter.interval_ms), 1000, 3600000,
          N_("--interval: '%s' is not a duration from 1s to 1h") },
        { "stale-after", 's', CO_MS, F(o.stale_ms), 1000, UINT64_MAX, N_("--stale-after: '%s' is not a duration of at least 1s") },
        { "expose-cmdline", 'x', CO_FLAG, F(ro.exporter.expose_cmdline) },
        { "ledger-dir", 'L', CO_PATH, F(ro.exporter.ledger_dir) },
        { "max-connections", 'm', CO_UINT, F(ro.http.max_connections), 1, 4096,
          N_("--max-connections: '%s' is not a number from 1 to 4096") },
        { "noise-floor", 'F', CO_U64, F(o.floor_mib), 0, 1u << 24, N_("--noise-floor: '%s' is not a number of MiB") },
        { "no-kernel", 'N', CO_FLAG, F(o.no_kernel) },
        { 0 },
};

/* argv into a, the address checked: EXIT_OK to go on, CLI_HELP, or the exit status of a usage
 * error (said). */
static int serve_parse(int argc, char **argv, struct serve_args *a, struct sockaddr_storage *ss)
{
        const struct cli_parse p = { "serve", "hv", serve_table, a, &a->c, serve_usage, .finish = true };
        int r = cli_parse(&p, argc, argv);
        if (r != EXIT_OK)
                return r;
        /* found at start, not as an empty ledger section in every answer */
        if (a->ro.exporter.ledger_dir && cli_dir_arg("serve", "--ledger-dir", a->ro.exporter.ledger_dir) < 0)
                return EXIT_USAGE;
        socklen_t sslen;
        if (http_parse_listen(a->ro.http.listen, ss, &sslen) < 0) {
                cli_error("serve", _("--listen: '%s' is not ADDR:PORT (e.g. 127.0.0.1:9835, [::1]:9835)"), a->ro.http.listen);
                return EXIT_USAGE;
        }
        return EXIT_OK;
}

int cmd_serve(int argc, char **argv)
{
        static struct serve_args a;
        memset(&a, 0, sizeof(a));
        cli_common_init(&a.c, SERVE_ACCEPTS);
        a.ro.http.listen = "127.0.0.1:9835";
        a.ro.exporter.interval_ms = 15000;
        a.o.floor_mib = 64;
        a.ro.http.max_connections = 64;
        struct sockaddr_storage ss;
        int pr = serve_parse(argc, argv, &a, &ss);
        if (pr != EXIT_OK)
                return pr == CLI_HELP ? EXIT_OK : pr;
        serve_run_opts_sources(&a.ro, &a.c.src, &a.o, ss.ss_family);
        char err[4200];
        if (serve_execute(&a.ro, err, sizeof(err)) < 0) {
                cli_error("serve", "%s", err);
                return EXIT_INCOMPLETE;
        }
        return EXIT_OK;
}
