/* serve: a Prometheus exporter. Collection runs on its own thread on its own schedule; HTTP
 * answers from what the last collection rendered (serve/exporter.h, serve/http.h; both run by
 * serve/serve_run.h). Options, usage and exit codes here. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "run/scan_run.h"
#include "serve/http.h"
#include "serve/serve_run.h"
#include "util/i18n.h"
#include "util/parse.h"

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

struct serve_args {
        struct cli_common c;
        const char *listen;
        uint64_t interval_ms, stale_ms, floor_mib;
        unsigned max_conns;
        bool expose, no_kernel;
        const char *ledger_dir;
};

/* One of serve's own options into ctx (a struct serve_args): 1 taken, 0 not serve's own, -1 a
 * usage error (said). */
static int serve_option(void *ctx, int opt, const char *arg)
{
        struct serve_args *a = ctx;
        switch (opt) {
        case 'l':
                a->listen = arg;
                return 1;
        case 'i':
                if (parse_duration_ms(arg, &a->interval_ms) < 0 || a->interval_ms < 1000 || a->interval_ms > 3600000)
                        return cli_error("serve", _("--interval: '%s' is not a duration from 1s to 1h"), arg), -1;
                return 1;
        case 's':
                if (parse_duration_ms(arg, &a->stale_ms) < 0 || a->stale_ms < 1000)
                        return cli_error("serve", _("--stale-after: '%s' is not a duration of at least 1s"), arg), -1;
                return 1;
        case 'x':
                a->expose = true;
                return 1;
        case 'L':
                if (cli_path_arg("serve", "--ledger-dir", arg) < 0)
                        return -1;
                a->ledger_dir = arg;
                return 1;
        case 'N':
                a->no_kernel = true;
                return 1;
        case 'm':
                if (parse_uint_range(arg, 1, 4096, &a->max_conns) < 0)
                        return cli_error("serve", _("--max-connections: '%s' is not a number from 1 to 4096"), arg), -1;
                return 1;
        case 'F':
                if (parse_u64(arg, &a->floor_mib) < 0 || a->floor_mib > (1u << 24))
                        return cli_error("serve", _("--noise-floor: '%s' is not a number of MiB"), arg), -1;
                return 1;
        default:
                return 0;
        }
}

#define SERVE_HELP (-1) /* --help was printed */

/* argv into a, the address checked: EXIT_OK to go on, SERVE_HELP, or the exit status of a usage
 * error (said). */
static int serve_parse(int argc, char **argv, struct serve_args *a, struct sockaddr_storage *ss)
{
        static const struct option opts[] = {
                CLI_COMMON_LONGOPTS,
                { "listen", required_argument, NULL, 'l' },
                { "interval", required_argument, NULL, 'i' },
                { "stale-after", required_argument, NULL, 's' },
                { "expose-cmdline", no_argument, NULL, 'x' },
                { "ledger-dir", required_argument, NULL, 'L' },
                { "max-connections", required_argument, NULL, 'm' },
                { "noise-floor", required_argument, NULL, 'F' },
                { "no-kernel", no_argument, NULL, 'N' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        int r = cli_options(argc, argv, "hv", opts, &a->c, "serve", serve_option, a, serve_usage);
        if (r != EXIT_OK)
                return r == CLI_HELP ? SERVE_HELP : r;
        if (cli_common_finish(&a->c, "serve") < 0)
                return EXIT_USAGE;
        /* found at start, not as an empty ledger section in every answer */
        if (a->ledger_dir && cli_dir_arg("serve", "--ledger-dir", a->ledger_dir) < 0)
                return EXIT_USAGE;
        socklen_t sslen;
        if (http_parse_listen(a->listen, ss, &sslen) < 0) {
                cli_error("serve", _("--listen: '%s' is not ADDR:PORT (e.g. 127.0.0.1:9835, [::1]:9835)"), a->listen);
                return EXIT_USAGE;
        }
        return EXIT_OK;
}

/* serve_run's options from the command line: the collection thread's and the HTTP side's. */
static void serve_run_opts(const struct serve_args *a, int family, struct serve_run_opts *ro)
{
        memset(ro, 0, sizeof(*ro));
        struct exporter_opts *eo = &ro->exporter;
        struct scan_once_opts so;
        sources_scan_once_opts(&a->c.src, &so);
        eo->sampler.facts = so.facts;
        eo->sampler.facts.read_kernel = !a->no_kernel;
        eo->sampler.ledger = so.ledger;
        eo->sampler.ledger.floor_min_bytes = a->floor_mib << 20;
        eo->sampler.confirm_ms = 2000;
        eo->sampler.light = true;
        eo->interval_ms = a->interval_ms;
        double stale = a->stale_ms ? (double)a->stale_ms / 1000.0 : 4.0 * (double)a->interval_ms / 1000.0;
        eo->stale_after_s = a->stale_ms || stale >= 60 ? stale : 60;
        eo->expose_cmdline = a->expose;
        eo->ledger_dir = a->ledger_dir;
        ro->http = (struct http_opts){ .listen = a->listen, .max_connections = a->max_conns };
        ro->family = family;
        ro->simulated = a->c.src.simulated;
        ro->out = stdout;
        ro->wait = stopwait_ms;
}

int cmd_serve(int argc, char **argv)
{
        static struct serve_args a;
        memset(&a, 0, sizeof(a));
        cli_common_init(&a.c, SERVE_ACCEPTS);
        a.listen = "127.0.0.1:9835";
        a.interval_ms = 15000;
        a.floor_mib = 64;
        a.max_conns = 64;
        struct sockaddr_storage ss;
        int pr = serve_parse(argc, argv, &a, &ss);
        if (pr != EXIT_OK)
                return pr == SERVE_HELP ? EXIT_OK : pr;
        struct serve_run_opts ro;
        serve_run_opts(&a, ss.ss_family, &ro);
        /* one malloc arena beside the main one: every thread (collector, HTTP, deadline
         * workers, walkers) would get its own and keep its pages; serve allocates little and
         * rarely contends (bench/README.md, "chaos": the RSS before and after) */
        mallopt(M_ARENA_MAX, 2);
        /* only this thread takes SIGINT/SIGTERM; the threads started below inherit the mask */
        stopwait_block();
        signal(SIGPIPE, SIG_IGN);
        enum serve_fail fail;
        int r = serve_run(&ro, &fail);
        if (r < 0 && fail == SERVE_FAIL_COLLECTOR)
                cli_error("serve", _("cannot start the collection thread: %s"), strerror(-r));
        else if (r < 0)
                cli_error("serve", _("cannot listen on %s: %s"), a.listen, strerror(-r));
        return r < 0 ? EXIT_INCOMPLETE : EXIT_OK;
}
