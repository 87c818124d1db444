/* ghostvram track: the command line of run/track_run.c (run a command with the allocation
 * tracker preloaded, docs/track.md): options, --show, the report and its file, exit codes. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "render/track_render.h"
#include "run/track_run.h"
#include "track/ledger_read.h"
#include "util/i18n.h"
#include "util/parse.h"

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

/* Close the --report file (not stderr); returns status. */
static int report_close(FILE *out, const char *path, int status)
{
        if (out != stderr && fclose(out) != 0)
                cli_error("track", "--report %s: %s", path, strerror(errno));
        return status;
}

/* --show FILE: the ledger's header, counts and outstanding allocations as JSON. */
static int track_show(const char *path)
{
        struct track_ledger *l = malloc(sizeof(*l));
        if (!l)
                return EXIT_INCOMPLETE;
        struct stat st;
        int r = stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? -EISDIR : track_ledger_load(AT_FDCWD, path, l);
        if (r == -EISDIR) {
                cli_error("track", "--show %s: a directory, not an allocation ledger (give one file of it)", path);
                free(l);
                return EXIT_FINDING;
        }
        if (r < 0) {
                cli_error("track", "%s: %s", path, r == -EBADMSG ? "not an allocation ledger (bad header)" : strerror(-r));
                free(l);
                return EXIT_FINDING;
        }
        struct track_summary *s = malloc(sizeof(*s));
        if (!s) {
                track_ledger_free(l);
                free(l);
                return EXIT_INCOMPLETE;
        }
        track_ledger_summary(l, NULL, s);
        json_t *o = track_ledger_json(path, l, s);
        cli_print_json(o);
        free(s);
        track_ledger_free(l);
        free(l);
        return EXIT_OK;
}

struct track_args {
        const char *dir, *preload, *report, *show;
        bool json;
        uint64_t max_age_ms, max_total_mib;
        char **cmd;     /* CMD [ARGS...] */
};

#define TRACK_GO_ON (-1) /* all parsed: run CMD (or show a->show) */

/* A path option's value: TRACK_GO_ON, or EXIT_USAGE for an empty path (said). */
static int path_option(const char *name, const char *arg)
{
        return cli_path_arg("track", name, arg) < 0 ? EXIT_USAGE : TRACK_GO_ON;
}

/* One option into a: TRACK_GO_ON, or the exit status of --help or a usage error (said). */
static int track_option(struct track_args *a, int opt, const char *arg, int argc, char **argv)
{
        switch (opt) {
        case 'h':
                track_usage(stdout);
                return EXIT_OK;
        case 'd':
                a->dir = arg;
                return path_option("--ledger-dir", arg);
        case 'p':
                a->preload = arg;
                return path_option("--preload", arg);
        case 'r':
                a->report = arg;
                return path_option("--report", arg);
        case 'j':
                a->json = true;
                return TRACK_GO_ON;
        case 'a':
                if (parse_duration_ms(arg, &a->max_age_ms) < 0)
                        return cli_error("track", "--max-age: '%s' is not a duration (e.g. 7d, 12h)", arg), EXIT_USAGE;
                return TRACK_GO_ON;
        case 't':
                if (parse_u64(arg, &a->max_total_mib) < 0 || a->max_total_mib > (1u << 24))
                        return cli_error("track", "--max-total: '%s' is not a number of MiB", arg), EXIT_USAGE;
                return TRACK_GO_ON;
        default:
                cli_bad_option("track", argc, argv, opt);
                return EXIT_USAGE;
        }
}

/* argv into a: TRACK_GO_ON, or the exit status of --help or a usage error (said). --show ends
 * the options: what follows it is not read. */
static int track_parse(int argc, char **argv, struct track_args *a)
{
        static const struct option opts[] = {
                { "ledger-dir", required_argument, NULL, 'd' },
                { "json", no_argument, NULL, 'j' },
                { "max-age", required_argument, NULL, 'a' },
                { "max-total", required_argument, NULL, 't' },
                { "preload", required_argument, NULL, 'p' },
                { "report", required_argument, NULL, 'r' },
                { "show", required_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        int opt;
        optind = 1;
        opterr = 0;     /* a bad option is said in one line (cli_bad_option) */
        /* '+': stop at the first non-option, CMD's own options are CMD's */
        while ((opt = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                if (opt == 's') {
                        a->show = optarg;
                        return cli_path_arg("track", "--show", optarg) < 0 ? EXIT_USAGE : TRACK_GO_ON;
                }
                int r = track_option(a, opt, optarg, argc, argv);
                if (r != TRACK_GO_ON)
                        return r;
        }
        if (optind >= argc) {
                cli_error("track", "no command to run (ghostvram track [OPTIONS] -- CMD [ARGS...])");
                return EXIT_USAGE;
        }
        a->cmd = argv + optind;
        return TRACK_GO_ON;
}

/* The --report file, opened before CMD runs (one that cannot be written loses nothing); stderr
 * without --report. NULL when it cannot be opened (said). */
static FILE *report_open(const char *path)
{
        if (!path)
                return stderr;
        struct stat sb;
        bool is_dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
        FILE *out = is_dir ? NULL : fopen(path, "we");
        if (!out)
                cli_error("track", "--report %s: %s", path, is_dir ? "a directory: give a file" : strerror(errno));
        return out;
}

int cmd_track(int argc, char **argv)
{
        struct track_args a = { .dir = TRACK_DEFAULT_DIR, .max_age_ms = 7ull * 24 * 3600 * 1000, .max_total_mib = 256 };
        int pr = track_parse(argc, argv, &a);
        if (pr != TRACK_GO_ON)
                return pr;
        if (a.show)
                return track_show(a.show);
        char err[PATH_MAX + 256] = "";
        struct track_prep_opts po = { .dir = a.dir, .preload = a.preload, .max_age_ms = a.max_age_ms,
                                      .max_total_mib = a.max_total_mib };
        struct track_prep prep;
        if (track_prepare(&po, &prep, err, sizeof(err)) < 0) {
                cli_error("track", "%s", err);
                return TRACK_EXIT_FAILED;
        }
        FILE *out = report_open(a.report);
        if (!out)
                return TRACK_EXIT_FAILED;
        struct track_result res;
        int r = track_run(&prep, a.cmd, &res, err, sizeof(err));
        if (r != 0) {
                cli_error("track", "%s", err);
                track_result_free(&res);
                return report_close(out, a.report, r > 0 ? r : res.end.status);
        }
        track_report_print(out, a.json, a.cmd, &res.end, prep.dir, res.procs, res.n);
        track_result_free(&res);
        return report_close(out, a.report, res.end.status);
}
