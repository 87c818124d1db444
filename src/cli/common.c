#include <dirent.h>
#include <getopt.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "collect/gpu_json.h"
#include "collect/host.h"
#include "collect/kernel.h"
#include "collect/shm.h"
#include "collect/xid.h"
#include "util/json_util.h"
#include "util/i18n.h"
#include "run/scan_run.h"
#include "simstate.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/escape.h"
#include "util/stopsig.h"
#include "util/parse.h"
#include "util/spawn.h"

int cli_argc;
char **cli_argv;

void cli_common_init(struct cli_common *c, unsigned accepts)
{
        /* a bad option is reported by cli_common_option in one line (cli_bad_option), not by
         * getopt with the command's name as the program's */
        opterr = 0;
        memset(c, 0, sizeof(*c));
        c->accepts = accepts;
        c->timeout_now = "--call-timeout (the deadline for each driver call)";
        sources_init(&c->src);
}

static int call_timeout(void *ctx, const char *arg, const char *cmd)
{
        uint64_t ms;
        if (parse_duration_ms(arg, &ms) < 0 || ms == 0 || ms > 3600 * 1000) {
                cli_error(cmd, _("--call-timeout: '%s' is not a duration between 1ms and 1h (e.g. 5s, 500ms)"), arg);
                return -1;
        }
        ((struct cli_common *)ctx)->src.timeout_ms = (unsigned)ms;
        return 0;
}

static int xid_window(void *ctx, const char *arg, const char *cmd)
{
        uint64_t ms;
        if (parse_duration_ms(arg, &ms) < 0 || ms > 366ull * 24 * 3600 * 1000) {
                cli_error(cmd, _("--xid-window: '%s' is not a duration up to a year (e.g. 10m, 2h, 0 for never)"), arg);
                return -1;
        }
        ((struct cli_common *)ctx)->src.xid_window_s = (double)ms / 1000.0;
        return 0;
}

static int holders(void *ctx, const char *arg, const char *cmd)
{
        static const char *const how[] = { [HOST_HOLDERS_AUTO] = "auto", [HOST_HOLDERS_BPF] = "bpf",
                                           [HOST_HOLDERS_PROC] = "proc" };
        for (size_t i = 0; i < sizeof(how) / sizeof(how[0]); i++)
                if (how[i] && strcmp(arg, how[i]) == 0) {
                        ((struct cli_common *)ctx)->src.holders = (enum host_holders_mode)i;
                        return 0;
                }
        cli_error(cmd, _("--holders: '%s' is not auto, bpf or proc"), arg);
        return -1;
}

/* The common options: how each is read into struct cli_common (cli/optable), the CLI_* bit a
 * command accepts, and the help lines (80 columns, the description from column 24). */
#define C(f) offsetof(struct cli_common, f)
static const struct common_opt {
        struct cli_opt o;
        unsigned bit;
        const char *help;
} common_opts[] = {
        { { "json", CLI_OPT_JSON, CO_FLAG, C(json) }, CLI_JSON,
          N_("  --json               machine-readable output (schema_version inside)\n") },
        { { "verbose", 'v', CO_FLAG, C(verbose) }, CLI_VERBOSE,
          N_("  -v, --verbose        show more (every holder, every query error)\n") },
        { { "call-timeout", CLI_OPT_CALL_TIMEOUT, CO_FN, .fn = call_timeout }, CLI_CALL_TIMEOUT,
          N_("  --call-timeout DURATION\n"
          "                       deadline for each driver call and blocking /proc read\n"
          "                       (default 5s; a hung driver gives a message, never a hang)\n") },
        { { "nvml-lib", CLI_OPT_NVML_LIB, CO_PATH, C(src.nvml_lib) }, CLI_NVML_LIB,
          N_("  --nvml-lib PATH      load this NVML library instead of libnvidia-ml.so.1\n") },
        { { "proc", CLI_OPT_PROC, CO_PATH, C(src.proc_root) }, CLI_PROC,
          N_("  --proc DIR           read processes from DIR instead of /proc\n") },
        { { "dev-prefix", CLI_OPT_DEV_PREFIX, CO_PATH, C(src.dev_prefix) }, CLI_DEV_PREFIX,
          N_("  --dev-prefix PREFIX  device nodes start with PREFIX (default /dev/nvidia)\n") },
        { { "holders", CLI_OPT_HOLDERS, CO_FN, .fn = holders }, CLI_HOLDERS,
          N_("  --holders HOW        auto (default: BPF iterators when they load, else /proc),\n"
          "                       bpf (fail if they cannot load) or proc\n") },
        { { "save-bundle", CLI_OPT_SAVE_BUNDLE, CO_PATH, C(src.save_bundle) }, CLI_SAVE_BUNDLE,
          N_("  --save-bundle DIR    also record every answer read into DIR, a new or empty\n"
          "                       directory (for bug reports)\n") },
        { { "from-bundle", CLI_OPT_FROM_BUNDLE, CO_PATH, C(src.from_bundle) }, CLI_FROM_BUNDLE,
          N_("  --from-bundle DIR    read a recorded bundle instead of this host (its files\n"
          "                       must be plain files; nvml.json at most 32 MiB)\n") },
        { { "xid-window", CLI_OPT_XID_WINDOW, CO_FN, .fn = xid_window }, CLI_XID_WINDOW,
          N_("  --xid-window DURATION\n"
          "                       an Xid of error severity or worse (79, 48, 95, ...) this\n"
          "                       recent, after the driver's load, pages even while NVML\n"
          "                       answers (default 10m; 0 = never; docs/xid.md)\n") },
};
#undef C
#define N_COMMON (sizeof(common_opts) / sizeof(common_opts[0]))
_Static_assert(N_COMMON + 1 == CLI_COMMON_LONGOPTS_MAX, "cli_common_longopts writes the table and --timeout");

size_t cli_common_longopts(struct option *t)
{
        size_t n = 0;
        for (; n < N_COMMON; n++)
                t[n] = (struct option){ common_opts[n].o.name, common_opts[n].o.kind == CO_FLAG ? no_argument
                                                                                               : required_argument,
                                        NULL, common_opts[n].o.val };
        /* the old name of --call-timeout: refused with a hint (cli_common_option) */
        t[n++] = (struct option){ "timeout", required_argument, NULL, CLI_OPT_TIMEOUT };
        return n;
}

void cli_common_help(FILE *f, unsigned which)
{
        for (size_t i = 0; i < N_COMMON; i++)
                if (which & common_opts[i].bit)
                        fputs(_(common_opts[i].help), f);
}

static char last_error[1024];   /* the latest cli_error message, for a JSON error document */
static bool json_printed;       /* a JSON document went to stdout */
static bool json_lines;         /* one compact document a line, flushed (a --json-stream) */

void cli_json_lines(void)
{
        json_lines = true;
}

void cli_say(const char *msg)
{
        cli_error(cli_argv ? cli_argv[0] : "", "%s", msg);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(last_error, sizeof(last_error), fmt, ap);
        va_end(ap);
        fprintf(stderr, "ghostvram %s: %s\n", cmd, last_error);
}

bool cli_has_arg(int argc, char **argv, const char *arg)
{
        for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
                if (strcmp(argv[i], arg) == 0)
                        return true;
        return false;
}

bool cli_wants_json(int argc, char **argv)
{
        return cli_has_arg(argc, argv, "--json") || cli_has_arg(argc, argv, "--json-stream");
}

void cli_json_error_if_silent(const char *cmd, int status)
{
        if (json_printed || status == 0)
                return;
        json_t *doc = json_object();
        if (!doc)
                return;
        json_object_set_new(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_object_set_new(doc, "command", json_string(cmd));
        json_object_set_new(doc, "error", json_string(last_error[0] ? last_error : "failed (see standard error)"));
        json_object_set_new(doc, "exit_status", json_integer(status));
        cli_print_json(doc);
        fflush(stdout);
}

int cli_common_option(struct cli_common *c, int opt, const char *arg, const char *cmd)
{
        if (opt == CLI_OPT_TIMEOUT) {
                /* it meant other things in other commands: refused, never reinterpreted */
                cli_error(cmd, _("--timeout is now %s"), c->timeout_now);
                return -1;
        }
        if (opt == '?' || opt == ':') {
                cli_bad_option(cmd, cli_argc, cli_argv, opt);
                return -1;
        }
        for (size_t i = 0; i < N_COMMON; i++) {
                if (common_opts[i].o.val != opt)
                        continue;
                if (!(c->accepts & common_opts[i].bit)) {
                        char name[64];
                        snprintf(name, sizeof(name), "--%s", common_opts[i].o.name);
                        cli_error(cmd, _("option '%s' is not accepted by %s; see 'ghostvram help %s'"), name, cmd, cmd);
                        return -1;
                }
                if (cli_opt_take(&common_opts[i].o, c, cmd, arg) < 0)
                        return -1;
                c->given |= common_opts[i].bit;
                return 1;
        }
        return 0;
}

int cli_path_arg(const char *cmd, const char *opt, const char *arg)
{
        if (arg && *arg)
                return 0;
        cli_error(cmd, _("%s: an empty path; see 'ghostvram help %s'"), opt, cmd);
        return -1;
}

int cli_dir_arg(const char *cmd, const char *opt, const char *dir)
{
        char why[256];
        if (cli_path_arg(cmd, opt, dir) < 0)
                return -1;
        if (dir_why(dir, why, sizeof(why)) < 0) {
                cli_error(cmd, "%s %s: %s", opt, dir, why);
                return -1;
        }
        return 0;
}

int cli_writable_dir_arg(const char *cmd, const char *opt, const char *dir)
{
        if (cli_dir_arg(cmd, opt, dir) < 0)
                return -1;
        if (access(dir, W_OK | X_OK) < 0) {
                cli_error(cmd, "%s %s: %s", opt, dir, strerror(errno));
                return -1;
        }
        return 0;
}

int cli_kmsg_check(const char *cmd, const char *path)
{
        struct kmsg_reader rd;
        struct kmsg_time_opts t = { .boot_time = -1 };
        char err[512] = "";
        if (cli_path_arg(cmd, "--kmsg", path) < 0)
                return -1;
        if (strcmp(path, "-") == 0)
                return 0; /* standard input: nothing to open yet */
        if (kmsg_reader_open_file(&rd, path, false, &t, err, sizeof(err)) < 0) {
                cli_error(cmd, "--kmsg %s", err);
                return -1;
        }
        kmsg_reader_close(&rd);
        return 0;
}

int cli_common_finish(struct cli_common *c, const char *cmd)
{
        char err[1024];
        if (sources_open(&c->src, getenv("GHOSTVRAM_SIM"), err, sizeof(err)) == 0)
                return 0;
        cli_error(cmd, "%s", err);
        return -1;
}

int cli_gpu_resolve(const struct cli_common *c, const char *spec, bool check_index, int *ret_index, const char *cmd)
{
        char err[1024];
        int status = sources_gpu_resolve(&c->src, spec, check_index, ret_index, err, sizeof(err));
        if (status != EXIT_OK)
                cli_error(cmd, "%s", err);
        return status;
}

void cli_bad_option(const char *cmd, int argc, char **argv, int opt)
{
        char name[64];
        const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        /* a long option is named as typed (getopt's optopt then holds its value, not a letter) */
        if (strncmp(arg, "--", 2) == 0 || !optopt || optopt > 127)
                snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg, "="), arg);
        else
                snprintf(name, sizeof(name), "-%c", optopt);
        /* getopt without a leading ':' in optstring says '?' for a missing value too, with
         * optopt set to the option (0 for an unknown long option) */
        if (opt == '?' && optopt && strncmp(arg, "--", 2) == 0 && strchr(arg, '='))
                /* "--json=yes": getopt's '?' for a value given to an option that takes none */
                cli_error(cmd, _("option '%s' takes no value; see 'ghostvram help %s'"), name, cmd);
        else if (opt == ':' || (optopt && strncmp(arg, "--", 2) == 0))
                cli_error(cmd, _("option '%s' needs a value; see 'ghostvram help %s'"), name, cmd);
        else if (optopt && optopt <= 127)
                /* getopt does not tell an unknown letter from one missing its value */
                cli_error(cmd, _("option '%s' is unknown or needs a value; see 'ghostvram help %s'"), name, cmd);
        else
                cli_error(cmd, _("unknown option '%s'; see 'ghostvram help %s'"), name, cmd);
}

bool cli_use_color(FILE *f)
{
        const char *nc = getenv("NO_COLOR");
        if (nc && *nc)
                return false;
        const char *term = getenv("TERM");
        if (term && strcmp(term, "dumb") == 0)
                return false;
        return isatty(fileno(f));
}

void cli_sim_banner(FILE *f, const struct cli_common *c)
{
        /* quoted as a shell word: GHOSTVRAM_SIM=... is pasted, and a newline must not end the line */
        char *q = esc_shell_dup(c->src.simulated ? c->src.sim_dir : c->src.from_bundle ? c->src.from_bundle : "");
        if (c->src.simulated)
                fprintf(f, _("*** SIMULATED HOST (GHOSTVRAM_SIM=%s): not a real GPU ***\n\n"), q ? q : c->src.sim_dir);
        else if (c->src.from_bundle)
                fprintf(f, _("*** RECORDED BUNDLE %s: facts as they were when it was saved ***\n\n"), q ? q : c->src.from_bundle);
        free(q);
}

int cli_print_json(json_t *doc)
{
        if (!doc)
                return -ENOMEM;
        int r = json_dumpf(doc, stdout, (json_lines ? JSON_COMPACT : JSON_INDENT(2)) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
        json_decref(doc);
        json_printed = true;
        fputc('\n', stdout);
        if (json_lines)
                fflush(stdout);
        return r < 0 ? -EIO : 0;
}

static void show_sim_banner(void *ctx)
{
        cli_sim_banner(stdout, ctx);
}

struct show cli_show(const struct cli_common *c)
{
        return (struct show){ .json = c->json, .color = !c->json && cli_use_color(stdout), .verbose = c->verbose,
                              .banner = show_sim_banner, .banner_ctx = (void *)c, .print_json = cli_print_json };
}
