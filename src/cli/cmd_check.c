/* check: a monitoring plugin (Nagios, Icinga, Naemon, Sensu, Zabbix agent's system.run) by the
 * Monitoring Plugins Development Guidelines: one status line with performance data, exit
 * 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN. The whole scan runs under the -t deadline, so a hung
 * driver gives UNKNOWN in time instead of a hung check (run/check_run.h); the output is
 * render/check_render.h's. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "render/check_render.h"
#include "run/check_run.h"
#include "run/scan_run.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/range.h"

#define CHECK_DEFAULT_WARN "0"
#define CHECK_DEFAULT_CRIT "1024"
#define CHECK_DEFAULT_TIMEOUT_MS 10000

/* --json is refused in words: a plugin prints one status line; -v is taken, as the plugin
 * guidelines ask, and changes nothing */
#define CHECK_ACCEPTS ((CLI_COMMON_ALL & ~CLI_JSON) | CLI_XID_WINDOW)

static void check_usage(FILE *f)
{
        fputs(_("Usage: ghostvram check [-w RANGE] [-c RANGE] [-t SECONDS] [--gpu N] [OPTIONS]\n\n"
              "A monitoring plugin (Nagios, Icinga, Naemon, Sensu): scans like 'ghostvram\n"
              "scan' and prints one status line with performance data:\n\n"
              "  GHOSTVRAM WARNING - GPU 1: 2048 MiB ghost (orphaned-holders, PIDs 31301\n"
              "  31302); 7 GPUs ok | 'gpu0_ghost'=0B;0;1073741824;0;85899345920 ...\n"
              "  (one line)\n\n"), f);
        fputs(_("then one line per GPU that is not OK with the next step. The thresholds are\n"
              "ranges on the confirmed ghost of each GPU in MiB (a ghost above the noise\n"
              "floor in two samples; below it, or seen once, it is 0):\n\n"
              "  10       alert if < 0 or > 10        10:20    alert if < 10 or > 20\n"
              "  10:      alert if < 10               @10:20   alert if 10 <= value <= 20\n"
              "  ~:10     alert if > 10\n\n"), f);
        fprintf(f, _("Options:\n"
              "  -w, --warning RANGE  WARNING range in MiB (default %s: any confirmed\n"
              "                       ghost)\n"
              "  -c, --critical RANGE CRITICAL range in MiB (default %s: a ghost above\n"
              "                       1 GiB)\n"
              "  -t, --timeout SECONDS\n"
              "                       UNKNOWN if the scan has not finished by then (default\n"
              "                       10; also 500ms, 1m): the plugin's whole time limit. Each\n"
              "                       driver call gets at most half of it (and at most\n"
              "                       --call-timeout).\n"
              "  --gpu ID             only this GPU counts: an index, a UUID or a PCI bus id\n"
              "  --confirm DURATION   wait this long before the confirming sample (default\n"
              "                       2s, or a quarter of -t when that is less: -t covers the\n"
              "                       whole scan; 0 = one sample). A --confirm over half of\n"
              "                       -t is UNKNOWN.\n"
              "  --noise-floor MIB    minimum ghost in MiB (default 64; 1%% of the GPU if\n"
              "                       larger)\n"
              "  --no-kernel          do not read the kernel log (it turns a silent GPU with\n"
              "                       Xid 79 into gpu-lost; /dev/kmsg needs root or\n"
              "                       CAP_SYSLOG)\n"), CHECK_DEFAULT_WARN, CHECK_DEFAULT_CRIT);
        fputs(_("  -v, --verbose        accepted as plugins do; the output stays the same\n"), f);
        cli_common_help(f, CHECK_ACCEPTS & ~CLI_VERBOSE);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\nStates: CRITICAL when a GPU is lost, its ghost is in the critical range or\n"
              "it had a critical Xid (79) within --xid-window; WARNING when its ghost is in\n"
              "the warning range, a task is stuck in the driver or it had an Xid of severity\n"
              "error (48, 95) within the window;\n"
              "UNKNOWN when the scan did not finish within -t, there is no driver, a GPU\n"
              "could not be inspected, or the options are wrong; else OK. The worst GPU\n"
              "decides (CRITICAL > WARNING > UNKNOWN > OK).\n\n"), f);
        fputs(_("Examples:\n"
              "  ghostvram check                  # WARNING on any ghost, CRITICAL above 1 GiB\n"
              "  ghostvram check -w 512 -c 4096 -t 20\n"
              "  ghostvram check --gpu 3\n\n"), f);
        fputs(_("Exit status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (also for a usage\n"
              "error).\n"), f);
}

/* The ends of a threshold in MiB as whole bytes, as the performance data gives them (uint64):
 * each rounded to a byte; -ERANGE for an end of 2^64 bytes or more, or a non-zero one under
 * half a byte. */
static int range_in_bytes(struct range *r)
{
        double *ends[2] = { r->start_inf ? NULL : &r->start, r->end_inf ? NULL : &r->end };
        for (size_t i = 0; i < 2; i++) {
                if (!ends[i])
                        continue;
                double b = *ends[i] * 1048576.0, whole = round(b);
                if (fabs(b) >= 18446744073709551616.0 || (whole == 0 && b != 0))
                        return -ERANGE;
                *ends[i] = whole / 1048576.0;
        }
        return 0;
}

static int unknown(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int unknown(const char *fmt, ...)
{
        char why[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        check_print_unknown(stdout, why);
        return PLUGIN_UNKNOWN;
}

struct check_args {
        struct cli_common c;
        struct check_thresholds t;
        uint64_t timeout_ms, confirm_ms, floor_mib;
        bool confirm_set, no_kernel;
        int only_gpu;
        const char *gpu_spec;
};

#define CHECK_GO_ON (-1) /* an option taken, or all parsed: go on */

/* One option into a: CHECK_GO_ON, or the plugin state to exit with (said). */
static int check_option(struct check_args *a, int opt, const char *arg)
{
        unsigned u;
        switch (opt) {
        case 'h':
                check_usage(stdout);
                return PLUGIN_OK;
        case 'w':
        case 'c':
                if (range_parse(arg, opt == 'w' ? &a->t.warn : &a->t.crit) < 0)
                        return unknown(_("invalid range '%s' (e.g. 10, 10:, ~:10, 10:20, @10:20)"), arg);
                if (range_in_bytes(opt == 'w' ? &a->t.warn : &a->t.crit) < 0)
                        return unknown(_("%s: '%s' is not a number of MiB from 1 byte up to 2^64 bytes (16 EiB)"),
                                       opt == 'w' ? "-w" : "-c", arg);
                return CHECK_GO_ON;
        case 't':
        case CLI_OPT_TIMEOUT:   /* the plugin's time limit, as monitoring plugins spell it */
                if (parse_duration_ms(arg, &a->timeout_ms) < 0 || a->timeout_ms == 0 || a->timeout_ms > 3600 * 1000)
                        return unknown(_("-t: '%s' is not a number of seconds up to 3600"), arg);
                return CHECK_GO_ON;
        case 'g':
                if (gpu_spec_check(arg) < 0)
                        return unknown(_("--gpu: '%s' is not a GPU index, UUID or PCI bus id"), arg);
                a->gpu_spec = arg;
                if (parse_uint_range(arg, 0, 1023, &u) == 0)
                        a->only_gpu = (int)u;
                return CHECK_GO_ON;
        case 'C':
                if (parse_duration_ms(arg, &a->confirm_ms) < 0 || a->confirm_ms > 600000)
                        return unknown(_("--confirm: '%s' is not a duration up to 10m"), arg);
                a->confirm_set = true;
                return CHECK_GO_ON;
        case 'F':
                if (parse_u64(arg, &a->floor_mib) < 0 || a->floor_mib > (1u << 24))
                        return unknown(_("--noise-floor: '%s' is not a number of MiB"), arg);
                return CHECK_GO_ON;
        case 'N':
                a->no_kernel = true;
                return CHECK_GO_ON;
        case CLI_OPT_JSON:
                return unknown("%s", _("check prints a plugin status line; use 'ghostvram scan --json' for JSON"));
        default: {
                int r = cli_common_option(&a->c, opt, arg, "check");
                if (r > 0)
                        return CHECK_GO_ON;
                if (r == 0)
                        check_usage(stderr);
                return unknown("%s", _("invalid option (see ghostvram check --help)"));
        }
        }
}

/* argv into a, and the time budget settled: CHECK_GO_ON, or the plugin state to exit with. */
static int check_parse(int argc, char **argv, struct check_args *a)
{
        static const struct option opts[] = {
                CLI_COMMON_LONGOPTS,
                { "warning", required_argument, NULL, 'w' },
                { "critical", required_argument, NULL, 'c' },
                { "gpu", required_argument, NULL, 'g' },
                { "confirm", required_argument, NULL, 'C' },
                { "noise-floor", required_argument, NULL, 'F' },
                { "no-kernel", no_argument, NULL, 'N' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        int opt;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "hvw:c:t:", opts, NULL)) != -1) {
                int r = check_option(a, opt, optarg);
                if (r != CHECK_GO_ON)
                        return r;
        }
        if (optind < argc)
                return unknown(_("unexpected argument '%s' (see --help)"), argv[optind]);
        if (cli_common_finish(&a->c, "check") < 0)
                return unknown("%s", _("invalid option (see the message above)"));
        /* -t covers the whole scan, the confirming wait included: the default wait shrinks to a
         * quarter of -t; a --confirm given that leaves less than half of -t for the two samples is
         * refused, in words */
        if (!a->confirm_set && a->confirm_ms > a->timeout_ms / 4)
                a->confirm_ms = a->timeout_ms / 4;
        if (a->confirm_set && a->confirm_ms > a->timeout_ms / 2)
                return unknown(_("-t %.3g s is too short for --confirm %.3g s: the scan takes two samples that far apart; "
                               "give -t of at least %.3g s, or a shorter --confirm"),
                               (double)a->timeout_ms / 1000.0, (double)a->confirm_ms / 1000.0,
                               2.0 * (double)a->confirm_ms / 1000.0);
        return CHECK_GO_ON;
}

/* The scan's job, its sources bounded by the plugin's time limit. */
static struct check_job *check_job_make(const struct check_args *a)
{
        struct scan_once_opts o;
        sources_scan_once_opts(&a->c.src, &o);
        o.confirm_ms = a->confirm_ms;
        o.light = true;         /* nothing unexplained: no walk */
        o.facts.read_kernel = !a->no_kernel;
        o.ledger.floor_min_bytes = a->floor_mib << 20;
        /* a single driver call gets at most half the budget: a hung driver then shows as the
         * driver's own "did not answer" before the whole check gives up */
        if (o.facts.gpu.timeout_ms > a->timeout_ms / 2)
                o.facts.gpu.timeout_ms = (unsigned)(a->timeout_ms / 2 ? a->timeout_ms / 2 : 1);
        if (o.facts.host.timeout_ms > a->timeout_ms / 2)
                o.facts.host.timeout_ms = (unsigned)(a->timeout_ms / 2 ? a->timeout_ms / 2 : 1);
        return check_job_new(&o);
}

/* The status line of a finished scan (the job freed): the plugin state. */
static int check_report(struct check_args *a, struct check_job *j)
{
        struct scan_result *sr = j->run->res;
        int only_gpu = a->only_gpu;
        if (a->gpu_spec && only_gpu < 0) { /* a UUID or PCI bus id: looked up in this scan's GPUs */
                unsigned idx;
                if (!sr->facts->gpu->driver_present || gpu_spec_resolve(a->gpu_spec, sr->facts->gpu, &idx) < 0) {
                        check_job_free(j);
                        return unknown(_("--gpu %.100s: no such GPU on this host"), a->gpu_spec);
                }
                only_gpu = (int)idx;
        }
        if (sr->facts->gpu->driver_present && only_gpu >= 0 && (size_t)only_gpu >= sr->facts->gpu->n_gpus) {
                size_t n = sr->facts->gpu->n_gpus;
                check_job_free(j);
                return unknown(P_("--gpu %d: this host has %zu GPU", "--gpu %d: this host has %zu GPUs", n), only_gpu, n);
        }
        sr->only_gpu = only_gpu;
        enum plugin_state st = PLUGIN_UNKNOWN;
        int r = check_print(stdout, sr, &a->t, &st);
        check_job_free(j);
        return r < 0 ? unknown("%s", _("output too large")) : (int)st;
}

int cmd_check(int argc, char **argv)
{
        static struct check_args a;
        memset(&a, 0, sizeof(a));
        cli_common_init(&a.c, CHECK_ACCEPTS);
        a.t = (struct check_thresholds){ .have_warn = true, .have_crit = true };
        range_parse(CHECK_DEFAULT_WARN, &a.t.warn);
        range_parse(CHECK_DEFAULT_CRIT, &a.t.crit);
        a.timeout_ms = CHECK_DEFAULT_TIMEOUT_MS;
        a.confirm_ms = 2000;
        a.floor_mib = 64;
        a.only_gpu = -1;
        int pr = check_parse(argc, argv, &a);
        if (pr != CHECK_GO_ON)
                return pr;
        struct check_job *j = check_job_make(&a);
        if (!j)
                return unknown("%s", _("out of memory"));
        int r = check_job_run(j, (unsigned)a.timeout_ms);
        if (r == -ETIMEDOUT) {
                unknown(_("no result within %.3g s: the NVIDIA driver or /proc did not answer (a hung driver? see 'ghostvram xid')"),
                        (double)a.timeout_ms / 1000.0);
                fflush(stdout);
                /* the scan's worker is still inside the driver: leave without waiting for it */
                _exit(PLUGIN_UNKNOWN);
        }
        if (r < 0) {
                check_job_free(j);
                return unknown(_("cannot run the scan: %s"), strerror(-r));
        }
        if (j->r < 0) {
                int e = j->r;
                check_job_free(j);
                return unknown(_("cannot scan: %s"), strerror(-e));
        }
        return check_report(&a, j);
}
