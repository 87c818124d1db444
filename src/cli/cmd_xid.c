/* ghostvram xid: NVRM/Xid kernel events, explained and tied to GPUs and processes. Its options,
 * usage and exit codes; the log read, filtered and followed by run/xid_run.c, shown by
 * render/xid_render.c. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "collect/xid.h"
#include "render/xid_render.h"
#include "run/xid_run.h"
#include "util/i18n.h"
#include "util/parse.h"

/* xid reads the kernel log, not device nodes: no --dev-prefix, --holders or --save-bundle */
#define XID_ACCEPTS (CLI_JSON | CLI_VERBOSE | CLI_CALL_TIMEOUT | CLI_NVML_LIB | CLI_PROC | CLI_FROM_BUNDLE)

static void xid_usage(FILE *f)
{
        fputs(_("Usage: ghostvram xid [OPTIONS]\n"
              "       ghostvram xid explain CODE... [--json]\n\n"
              "List the NVIDIA driver's kernel events - Xid errors, 'GPU has fallen off the\n"
              "bus', GSP timeouts, failed initialisation, driver loads, NVSwitch SXids - with\n"
              "what each means and what to do, tied to GPU indexes and processes. Reads\n"
              "/dev/kmsg (root, or kernel.dmesg_restrict=0), or a saved log: raw dmesg,\n"
              "dmesg -T/-x, syslog, journalctl -k (short, short-iso, short-precise), raw\n"
              "/dev/kmsg records.\n\n"), f);
        fputs(_("Options:\n"
              "  --kmsg FILE          read a saved kernel log instead of /dev/kmsg ('-':\n"
              "                       stdin); a regular file of at most 256 MiB (FIFOs,\n"
              "                       /dev/zero refused)\n"
              "  --since WHEN         only events from WHEN on: a duration back from now (30m,\n"
              "                       2h, 1d), a date-time (2026-11-30, '2026-11-30 10:00',\n"
              "                       2026-11-30T10:00:00Z; local time unless a zone is\n"
              "                       given), @EPOCH, or 'now' (with --follow: only new\n"
              "                       events)\n"
              "  --gpu ID             only events of this GPU: an index or a UUID (need the\n"
              "                       driver), or a PCI bus id (0000:3b:00.0; works without\n"
              "                       one)\n"
              "  --follow, -f         keep reading and print new events as they come (Ctrl-C\n"
              "                       stops)\n"
              "  --this-boot          FILE comes from this host's current boot: turn its\n"
              "                       [seconds] stamps into wall-clock time as dmesg -T does,\n"
              "                       and name GPU indexes (always done for /dev/kmsg)\n"
              "  -v, --verbose        also show the other NVIDIA lines (serial numbers, GSP\n"
              "                       report bodies, nvidia-modeset, ...)\n"
              "  --json               machine-readable output (schema_version inside); with\n"
              "                       --follow one JSON object per line\n"
              "  --call-timeout DURATION\n"
              "                       deadline for each driver call when naming GPU indexes\n"
              "                       (default 5s)\n"), f);
        cli_common_help(f, XID_ACCEPTS & ~(CLI_JSON | CLI_VERBOSE | CLI_CALL_TIMEOUT | CLI_PROC | CLI_FROM_BUNDLE));
        fputs(_("  --proc DIR           read the boot time from DIR/stat instead of /proc/stat\n"
              "  --from-bundle DIR    name GPU indexes from a recorded bundle\n"), f);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\nExamples:\n"
              "  sudo ghostvram xid                       # everything in the kernel buffer\n"
              "  sudo ghostvram xid --since 2h --gpu 0\n"
              "  sudo ghostvram xid --follow --since now  # watch for new events\n"
              "  journalctl -k -o short-iso > k.log; ghostvram xid --kmsg k.log\n"
              "  dmesg | ghostvram xid --kmsg - --json |\n"
              "    jq '.events[] | select(.xid == 79)'\n"
              "  ghostvram xid explain 79                 # what Xid 79 means, what to do\n\n"), f);
        fputs(_("Environment: GHOSTVRAM_SIM=DIR reads the simulated host's kernel log DIR/kmsg\n"
              "(raw kmsg records or dmesg lines; none there: no events) instead of /dev/kmsg.\n"
              "NO_COLOR disables colour.\n\n"), f);
        fputs(_("Exit status: 0 events listed (or none found); 2 usage error or unreadable\n"
              "FILE; 3 /dev/kmsg cannot be read (not root, dmesg_restrict) or --gpu N without\n"
              "a driver.\n"), f);
}

static void explain_usage(FILE *f)
{
        fputs(_("Usage: ghostvram xid explain CODE... [--json]\n\n"
              "What an Xid code means, its likely cause, what to do, and whether a GPU reset\n"
              "or a reboot is needed, from NVIDIA's Xid catalog and ghostvram's notes.\n\n"), f);
        fputs(_("Examples:\n"
              "  ghostvram xid explain 79\n"
              "  ghostvram xid explain 45 48 --json\n"), f);
}

/* What xid was asked: the use case's options and --since's text. */
struct xid_cmd {
        struct cli_common c;
        struct xid_run_opts o;
        const char *since_arg;  /* --since WHEN, read once the options are */
};

/* "-1" is a code that is no Xid number, not an option: said so. */
static void explain_bad_option(const char *cmd, int argc, char **argv, int opt)
{
        const char *a = optind > 0 && optind <= argc ? argv[optind - 1] : "";
        if (a[0] == '-' && a[1] >= '0' && a[1] <= '9')
                cli_error("xid", _("explain: '%s' is not an Xid number (e.g. 79)"), a);
        else
                cli_bad_option(cmd, argc, argv, opt);
}

static const struct cli_opt explain_table[] = {
        { "json", 'j', CO_FLAG, 0 },
        { 0 },
};

static int cmd_xid_explain(int argc, char **argv)
{
        bool json = false;
        const struct cli_parse p = { "xid explain", ":h", explain_table, &json, NULL, explain_usage, .operands = true,
                                     .bad_option = explain_bad_option };
        int r = cli_parse(&p, argc, argv);
        if (r != EXIT_OK)
                return r == CLI_HELP ? EXIT_OK : r;
        if (optind >= argc) {
                cli_error("xid", _("explain: which Xid? e.g. 'ghostvram xid explain 79'"));
                return EXIT_USAGE;
        }
        unsigned codes[64];
        size_t n = 0;
        for (int i = optind; i < argc; i++) {
                const char *a = argv[i];
                if (strncasecmp(a, "xid", 3) == 0)
                        a += 3;
                if (n == sizeof(codes) / sizeof(codes[0]) || parse_uint_range(a, 0, 1000000, &codes[n]) < 0) {
                        cli_error("xid", _("explain: '%s' is not an Xid number (e.g. 79)"), argv[i]);
                        return EXIT_USAGE;
                }
                n++;
        }
        if (json)
                return cli_print_json(xid_explain_doc(codes, n)) < 0 ? EXIT_INCOMPLETE : EXIT_OK;
        xid_explain_text(stdout, codes, n);
        return EXIT_OK;
}

static int xid_gpu(void *ctx, const char *arg, const char *cmd)
{
        struct xid_cmd *xc = ctx;
        if (xid_gpu_filter_parse(arg, &xc->o.gpu) == 0)
                return 0;
        cli_error(cmd, _("--gpu: '%s' is not a GPU index (0, 1, ...), a UUID or a PCI bus id (0000:3b:00.0)"), arg);
        return -1;
}

#define F(f) offsetof(struct xid_cmd, f)
static const struct cli_opt xid_table[] = {
        { "kmsg", 'k', CO_PATH, F(o.kmsg_path) },
        { "since", 's', CO_STR, F(since_arg) },
        { "gpu", 'g', CO_FN, .fn = xid_gpu },
        { "follow", 'f', CO_FLAG, F(o.follow) },
        { "this-boot", 'B', CO_FLAG, F(o.this_boot) },
        { 0 },
};
#undef F

/* --since WHEN into o.since: 0, or -1 (said). */
static int xid_since(struct xid_cmd *xc, const char *since_arg)
{
        int r = xid_run_since(&xc->o, since_arg, (double)time(NULL));
        if (r == -EINVAL)
                cli_error("xid", _("--since: '%s' is not a duration (30m, 2h, 1d), a date-time "
                                   "(2026-11-30, '2026-11-30 10:00', 2026-11-30T10:00:00Z), @EPOCH or 'now'"),
                          since_arg);
        else if (r < 0)
                cli_error("xid", _("--since: '%s' is outside 1970-01-01 .. 9999-12-31"), since_arg);
        return r;
}

/* After the options: the common ones applied, --gpu UUID looked up, the use case's options
 * completed. EXIT_OK or the status to exit with (said). */
static int xid_finish(struct xid_cmd *xc)
{
        if (cli_common_finish(&xc->c, "xid") < 0)
                return EXIT_USAGE;
        if (xc->o.gpu.uuid) { /* the same lookup as every command's --gpu */
                int idx, gr = cli_gpu_resolve(&xc->c, xc->o.gpu.uuid, true, &idx, "xid");
                if (gr != EXIT_OK)
                        return gr;
                xc->o.gpu.by_index = true;
                xc->o.gpu.index = (unsigned)idx;
        }
        xid_run_opts_sources(&xc->o, &xc->c.src, xc->c.verbose);
        return EXIT_OK;
}

/* Open the log and dump or follow it. */
static int xid_execute_said(const struct xid_cmd *xc)
{
        struct xid_show s = { .out = cli_show(&xc->c) };
        struct xid_execute_cb cb;
        xid_execute_show(&cb, &s);
        char err[KMSG_ERR_MAX + 16];
        enum xid_outcome end = xid_execute(&xc->o, &cb, err, sizeof(err));
        if (err[0])
                cli_error("xid", "%s", err);
        return end == XID_DONE ? EXIT_OK : end == XID_MISTAKE ? EXIT_USAGE : EXIT_INCOMPLETE;
}

int cmd_xid(int argc, char **argv)
{
        if (argc >= 2 && strcmp(argv[1], "explain") == 0)
                return cmd_xid_explain(argc - 1, argv + 1);
        struct xid_cmd xc;
        memset(&xc, 0, sizeof(xc));
        cli_common_init(&xc.c, XID_ACCEPTS);
        const struct cli_parse p = { "xid", "hvf", xid_table, &xc, &xc.c, xid_usage, .operands = true };
        int r = cli_parse(&p, argc, argv);
        if (r != EXIT_OK)
                return r == CLI_HELP ? EXIT_OK : r;
        if (optind < argc) {
                cli_error("xid", _("unexpected argument '%s' (see --help; 'ghostvram xid explain CODE' explains a code)"),
                          argv[optind]);
                return EXIT_USAGE;
        }
        if (xc.since_arg && xid_since(&xc, xc.since_arg) < 0)
                return EXIT_USAGE;
        int status = xid_finish(&xc);
        return status != EXIT_OK ? status : xid_execute_said(&xc);
}
