/* ghostvram track: the command line of run/track_run.c (run a command with the allocation
 * tracker preloaded, docs/track.md): options, usage, exit codes; --show's ledger is read by
 * run/track_run.c, the report and --show's JSON made by render/track_render.c. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "render/track_render.h"
#include "run/track_run.h"
#include "util/i18n.h"

static void track_usage(FILE *f)
{
        fputs(_("Usage: ghostvram track [OPTIONS] -- CMD [ARGS...]\n\n"
              "Run CMD with ghostvram's allocation tracker preloaded (LD_PRELOAD). Every GPU\n"
              "memory allocation and free made through the CUDA driver API (cuMemAlloc_v2,\n"
              "cuMemAllocPitch_v2, cuMemAllocManaged, cuMemAllocAsync,\n"
              "cuMemAllocFromPoolAsync, cuMemFree_v2, cuMemFreeAsync,\n"
              "cuMemCreate/Release/Map/Unmap; also when the CUDA runtime fetches them through\n"
              "cuGetProcAddress) is appended to a per-process ledger file before the call\n"
              "returns, with its device, size and call site. A ledger survives kill -9:\n"
              "`ghostvram scan --ledger-dir DIR` then says what a dead owner still had\n"
              "allocated and where.\n\n"), f);
        fputs(_("When CMD exits, track reports what its processes left allocated by call site\n"
              "(the leak check) and exits with CMD's status. Processes of CMD that still run\n"
              "(a daemonised job) are listed; their ledgers stay in DIR. SIGINT, SIGTERM,\n"
              "SIGHUP or SIGQUIT sent to track by a process is passed on to CMD (the\n"
              "terminal's ^C already reaches it); track waits for CMD at most 5 s more, then\n"
              "reports.\n\n"), f);
        fprintf(f, _("Options:\n"
              "  --ledger-dir DIR     where ledgers go (default %s;\n"
              "                       created)\n"
              "  --json               the report as JSON (schema_version inside)\n"
              "  --report FILE        write the report to FILE instead of standard error\n"
              "                       (CMD's standard output stays CMD's)\n"
              "  --max-age DURATION   prune ledgers of dead processes older than this\n"
              "                       (default 7d)\n"
              "  --max-total SIZE     then keep at most SIZE MiB of them, oldest go first\n"
              "                       (default 256)\n"
              "  --show FILE          print what one ledger file holds (JSON) and exit:\n"
              "                       0 a ledger, 1 not one\n"
              "  --preload PATH       the tracker library (default: %s\n"
              "                       next to ghostvram, or in ../lib/ghostvram/)\n"),
                TRACK_DEFAULT_DIR, TRACK_LIB_NAME);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\nExamples:\n"
              "  ghostvram track -- python train.py\n"
              "  ghostvram track --ledger-dir /tmp/l -- \\\n"
              "      torchrun --nproc-per-node 8 train.py\n"
              "  ghostvram scan --ledger-dir /run/ghostvram/ledger   # after a kill -9\n\n"), f);
        fputs(_("Exit status: CMD's (128+N when a signal N ended it); 128+N when track passed\n"
              "signal N on and CMD still ran 5 s later; 2 usage error; 125 track itself\n"
              "failed (no ledger directory, no tracker library); 127 CMD could not be run.\n"),
              f);
}

/* --show FILE: the ledger's header, counts and outstanding allocations as JSON. */
static int track_show(const char *path)
{
        int r = track_show_print(path, cli_print_json, cli_say);
        return r == -ENOMEM ? EXIT_INCOMPLETE : r < 0 ? EXIT_FINDING : EXIT_OK;
}

struct track_args {
        struct track_prep_opts po;
        const char *report, *show;
        bool json;
};

#define F(f) offsetof(struct track_args, f)
static const struct cli_opt track_table[] = {
        { "ledger-dir", 'd', CO_PATH, F(po.dir) },
        { "json", 'j', CO_FLAG, F(json) },
        { "max-age", 'a', CO_MS, F(po.max_age_ms), 0, UINT64_MAX, "--max-age: '%s' is not a duration (e.g. 7d, 12h)" },
        { "max-total", 't', CO_U64, F(po.max_total_mib), 0, 1u << 24, "--max-total: '%s' is not a number of MiB" },
        { "preload", 'p', CO_PATH, F(po.preload) },
        { "report", 'r', CO_PATH, F(report) },
        /* --show ends the options: what follows it is not read */
        { "show", 's', CO_PATH, F(show), .last = true },
        { 0 },
};
#undef F

int cmd_track(int argc, char **argv)
{
        struct track_args a = { .po = { .dir = TRACK_DEFAULT_DIR, .max_age_ms = 7ull * 24 * 3600 * 1000, .max_total_mib = 256 } };
        /* '+': stop at the first non-option, CMD's own options are CMD's */
        const struct cli_parse p = { "track", "+:h", track_table, &a, NULL, track_usage, .operands = true };
        int pr = cli_parse(&p, argc, argv);
        if (pr != EXIT_OK)
                return pr == CLI_HELP ? EXIT_OK : pr;
        if (a.show)
                return track_show(a.show);
        if (optind >= argc) {
                cli_error("track", "no command to run (ghostvram track [OPTIONS] -- CMD [ARGS...])");
                return EXIT_USAGE;
        }
        const struct track_execute_cb cb = { track_report_cb, &a.json, cli_say };
        return track_execute(&a.po, a.report, argv + optind /* CMD [ARGS...] */, &cb);
}
