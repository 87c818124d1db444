/* check: a monitoring plugin (Nagios, Icinga, Naemon, Sensu, Zabbix agent's system.run) by the
 * Monitoring Plugins Development Guidelines: one status line with performance data, exit
 * 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN. The whole scan runs under the -t deadline, so a hung
 * driver gives UNKNOWN in time instead of a hung check (run/check_run.h); the output is
 * render/check_render.h's. */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "render/check_render.h"
#include "run/check_run.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/range.h"

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

/* A sentence as the plugin's UNKNOWN line on stdout: PLUGIN_UNKNOWN. */
#define unknown(...) check_print_unknownf(stdout, __VA_ARGS__)

/* What the command line gives: the use case's options, read into directly, the thresholds, and
 * whether a bad value was already said. */
struct check_args {
        struct cli_common c;
        struct check_thresholds t;
        struct check_run_opts ro;
        bool json, said;
};

/* A bad value of check's own options: said as an UNKNOWN line on stdout (the plugin's output,
 * nothing on stderr); cli_parse's say, so that it knows it was said. */
static void check_say(void *ctx, const char *sentence)
{
        check_print_unknownf(stdout, "%s", sentence);
        ((struct check_args *)ctx)->said = true;
}

/* -w and -c: a range (util/range.h) whose ends are whole bytes; 0, or -1 (said). */
static int ck_range(struct check_args *a, const char *arg, const char *opt, struct range *r)
{
        char s[512];
        if (range_parse(arg, r) < 0)
                snprintf(s, sizeof(s), _("invalid range '%s' (e.g. 10, 10:, ~:10, 10:20, @10:20)"), arg);
        else if (check_range_in_bytes(r) < 0)
                snprintf(s, sizeof(s), _("%s: '%s' is not a number of MiB from 1 byte up to 2^64 bytes (16 EiB)"), opt, arg);
        else
                return 0;
        check_say(a, s);
        return -1;
}

static int ck_warn(void *ctx, const char *arg, const char *cmd)
{
        (void)cmd;
        return ck_range(ctx, arg, "-w", &((struct check_args *)ctx)->t.warn);
}

static int ck_crit(void *ctx, const char *arg, const char *cmd)
{
        (void)cmd;
        return ck_range(ctx, arg, "-c", &((struct check_args *)ctx)->t.crit);
}

/* --gpu's index, when it is one, for the scan (a UUID or bus id is looked up in its result) */
static int ck_gpu(void *ctx, const char *arg, const char *cmd)
{
        unsigned u;
        (void)cmd;
        if (parse_uint_range(arg, 0, 1023, &u) == 0)
                ((struct check_args *)ctx)->ro.only_gpu = (int)u;
        return 0;
}

static int ck_json(void *ctx, const char *arg, const char *cmd)
{
        (void)arg, (void)cmd;
        check_say(ctx, _("check prints a plugin status line; use 'ghostvram scan --json' for JSON"));
        return -1;
}

/* A bad value is an UNKNOWN line (check_say, cli_parse's say).
 * -t and --timeout are the plugin's time limit (the common options refuse --timeout): the
 * common option's code, so that the long name, also theirs, stays one option to getopt
 * (--time is --timeout), and 't' its alias. --json, refused in check's words, likewise. */
#define F(f) offsetof(struct check_args, f)
static const struct cli_opt check_table[] = {
        { "warning", 'w', CO_FN, .fn = ck_warn },
        { "critical", 'c', CO_FN, .fn = ck_crit },
        { "timeout", CLI_OPT_TIMEOUT, CO_MS, F(ro.timeout_ms), 1, 3600 * 1000,
          N_("-t: '%s' is not a number of seconds up to 3600"), .alias = 't' },
        { "gpu", 'g', CO_GPU, F(ro.gpu_spec), .fn = ck_gpu },
        { "confirm", 'C', CO_MS, F(ro.confirm_ms), 0, 600000, N_("--confirm: '%s' is not a duration up to 10m"),
          CO_SEEN(F(ro.confirm_set)) },
        { "noise-floor", 'F', CO_U64, F(ro.floor_mib), 0, 1u << 24, N_("--noise-floor: '%s' is not a number of MiB") },
        { "no-kernel", 'N', CO_FLAG, F(ro.no_kernel) },
        { "json", CLI_OPT_JSON, CO_FLAG, F(json), .fn = ck_json },
        { 0 },
};

#define CHECK_GO_ON (-1) /* all parsed: go on */

/* argv into a, and the time budget settled: CHECK_GO_ON, or the plugin state to exit with. */
static int check_parse(int argc, char **argv, struct check_args *a)
{
        const struct cli_parse p = { "check", "hvw:c:t:", check_table, a, &a->c, check_usage, .operands = true,
                                     .say = check_say };
        int r = cli_parse(&p, argc, argv);
        if (r == CLI_HELP)
                return PLUGIN_OK;
        if (r != EXIT_OK) /* a common option's or an unknown one's: said on stderr */
                return a->said ? PLUGIN_UNKNOWN : unknown("%s", _("invalid option (see ghostvram check --help)"));
        if (optind < argc)
                return unknown(_("unexpected argument '%s' (see --help)"), argv[optind]);
        if (cli_common_finish(&a->c, "check") < 0)
                return unknown("%s", _("invalid option (see the message above)"));
        const struct check_run_opts *o = &a->ro;
        if (check_run_settle(&a->ro) < 0)
                return unknown(_("-t %.3g s is too short for --confirm %.3g s: the scan takes two samples that far apart; "
                               "give -t of at least %.3g s, or a shorter --confirm"),
                               (double)o->timeout_ms / 1000.0, (double)o->confirm_ms / 1000.0,
                               2.0 * (double)o->confirm_ms / 1000.0);
        return CHECK_GO_ON;
}

int cmd_check(int argc, char **argv)
{
        static struct check_args a;
        memset(&a, 0, sizeof(a));
        cli_common_init(&a.c, CHECK_ACCEPTS);
        check_thresholds_default(&a.t);
        check_run_opts_default(&a.ro);
        int pr = check_parse(argc, argv, &a);
        if (pr != CHECK_GO_ON)
                return pr;
        struct check_job *j;
        char why[512];
        int r = check_scan(&a.c.src, &a.ro, &j, why, sizeof(why));
        if (r == -ETIMEDOUT) {
                unknown("%s", why);
                fflush(stdout);
                _exit(PLUGIN_UNKNOWN); /* the scan's worker is still inside the driver: no waiting for it */
        }
        if (r < 0)
                return unknown("%s", why);
        int st = check_report(stdout, j->run->res, &a.ro, &a.t);
        check_job_free(j);
        return st;
}
