/* ghostvram track: the command line of run/track_run.c (run a command with the allocation
 * tracker preloaded, docs/track.md): options, --show, the report and its file, exit codes. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/json_util.h"
#include "render/proc_render.h"
#include "render/track_render.h"
#include "run/track_run.h"
#include "track/ledger_read.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/spawn.h"

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

int cmd_track(int argc, char **argv)
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
        const char *dir_arg = TRACK_DEFAULT_DIR, *preload_arg = NULL, *report_path = NULL;
        bool json = false;
        uint64_t max_age_ms = 7ull * 24 * 3600 * 1000, max_total_mib = 256;
        int opt;
        optind = 1;
        opterr = 0;     /* a bad option is said in one line (cli_bad_option) */
        /* '+': stop at the first non-option, CMD's own options are CMD's */
        while ((opt = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                switch (opt) {
                case 'h':
                        track_usage(stdout);
                        return EXIT_OK;
                case 'd':
                        if (cli_path_arg("track", "--ledger-dir", optarg) < 0)
                                return EXIT_USAGE;
                        dir_arg = optarg;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'a':
                        if (parse_duration_ms(optarg, &max_age_ms) < 0) {
                                cli_error("track", "--max-age: '%s' is not a duration (e.g. 7d, 12h)", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 't':
                        if (parse_u64(optarg, &max_total_mib) < 0 || max_total_mib > (1u << 24)) {
                                cli_error("track", "--max-total: '%s' is not a number of MiB", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'p':
                        if (cli_path_arg("track", "--preload", optarg) < 0)
                                return EXIT_USAGE;
                        preload_arg = optarg;
                        break;
                case 'r':
                        if (cli_path_arg("track", "--report", optarg) < 0)
                                return EXIT_USAGE;
                        report_path = optarg;
                        break;
                case 's':
                        if (cli_path_arg("track", "--show", optarg) < 0)
                                return EXIT_USAGE;
                        return track_show(optarg);
                default:
                        cli_bad_option("track", argc, argv, opt);
                        return EXIT_USAGE;
                }
        }
        if (optind >= argc) {
                cli_error("track", "no command to run (ghostvram track [OPTIONS] -- CMD [ARGS...])");
                return EXIT_USAGE;
        }
        char **cmd = argv + optind;

        char err[PATH_MAX + 256] = "";
        struct track_prep_opts po = { .dir = dir_arg, .preload = preload_arg, .max_age_ms = max_age_ms,
                                      .max_total_mib = max_total_mib };
        struct track_prep prep;
        if (track_prepare(&po, &prep, err, sizeof(err)) < 0) {
                cli_error("track", "%s", err);
                return TRACK_EXIT_FAILED;
        }
        /* the report's file is opened before CMD runs: one that cannot be written loses nothing */
        FILE *out = stderr;
        if (report_path) {
                struct stat sb;
                bool is_dir = stat(report_path, &sb) == 0 && S_ISDIR(sb.st_mode);
                out = is_dir ? NULL : fopen(report_path, "we");
                if (!out) {
                        cli_error("track", "--report %s: %s", report_path, is_dir ? "a directory: give a file" : strerror(errno));
                        return TRACK_EXIT_FAILED;
                }
        }
        struct track_result res;
        int r = track_run(&prep, cmd, &res, err, sizeof(err));
        if (r != 0) {
                cli_error("track", "%s", err);
                track_result_free(&res);
                return report_close(out, report_path, r > 0 ? r : res.end.status);
        }
        if (json) {
                json_t *doc = track_report_json(cmd, &res.end, prep.dir, res.procs, res.n);
                char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_ENSURE_ASCII) : NULL;
                if (text)
                        fprintf(out, "%s\n", text);
                free(text);
                json_decref(doc);
        } else {
                track_report_text(out, &res.end, prep.dir, res.procs, res.n);
        }
        track_result_free(&res);
        return report_close(out, report_path, res.end.status);
}
