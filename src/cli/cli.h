/* cli: shared pieces of the command-line front end. One file per command (cmd_*.c), each
 * exporting `int cmd_NAME(int argc, char **argv)` that returns the process exit status. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "collect/gpu.h"
#include "collect/gpu_spec.h"
#include "collect/host.h"
#include "render/show.h"
#include "run/sources.h"
#include "cli/optable.h"
#include "util/exit_status.h"
#include "util/fileio.h"
#include "util/spawn.h"
#include "util/stopwait.h"


/* The options the collecting commands share, parsed and described from one table
 * (cli/common.c). A command names the ones it accepts: only those are listed in its help; the
 * others are refused in one line, never ignored. */
enum {
        CLI_JSON = 1u << 0,
        CLI_VERBOSE = 1u << 1,
        CLI_CALL_TIMEOUT = 1u << 2,
        CLI_NVML_LIB = 1u << 3,
        CLI_PROC = 1u << 4,
        CLI_DEV_PREFIX = 1u << 5,
        CLI_HOLDERS = 1u << 6,
        CLI_SAVE_BUNDLE = 1u << 7,
        CLI_FROM_BUNDLE = 1u << 8,
        CLI_COMMON_ALL = (1u << 9) - 1,
        CLI_XID_WINDOW = 1u << 9,       /* the commands that judge kernel events: scan, check, doctor */
};

struct cli_common {
        unsigned accepts;       /* CLI_* of the options this command takes */
        unsigned given;         /* CLI_* of those the command line gave */
        /* what an old --timeout is called now in this command (cli_common_option's hint) */
        const char *timeout_now;
        bool json;
        bool verbose;
        struct sources src;     /* where the facts come from (run/sources.h) */
};

/* getopt_long values of the common options. CLI_OPT_TIMEOUT is the old name of
 * --call-timeout: refused with a hint, except in check, where -t/--timeout is the plugin's
 * time limit (the monitoring-plugins convention). */
#define CLI_OPT_BASE 0x1000
enum {
        CLI_OPT_NVML_LIB = CLI_OPT_BASE,
        CLI_OPT_PROC,
        CLI_OPT_DEV_PREFIX,
        CLI_OPT_CALL_TIMEOUT,
        CLI_OPT_JSON,
        CLI_OPT_SAVE_BUNDLE,
        CLI_OPT_FROM_BUNDLE,
        CLI_OPT_HOLDERS,
        CLI_OPT_TIMEOUT,
        CLI_OPT_XID_WINDOW,
};
/* The common options' getopt entries (every one in every command's getopt table, so that one
 * the command refuses is answered in words by cli_common_option, not as an unknown option),
 * and the old --timeout: written into t, their count returned (CLI_COMMON_LONGOPTS_MAX). */
#define CLI_COMMON_LONGOPTS_MAX 11
struct option;
size_t cli_common_longopts(struct option *t);

/* Defaults; accepts: the CLI_* options this command takes. */
void cli_common_init(struct cli_common *c, unsigned accepts);
/* Handle option `opt` if it is a common one: 1 handled, 0 not ours, -1 refused or a bad value
 * (printed in one line: an option this command does not accept, the old --timeout, an unknown
 * option). */
int cli_common_option(struct cli_common *c, int opt, const char *arg, const char *cmd);

/* Print the help lines of the common options in `which`, in the table's order. */
void cli_common_help(FILE *f, unsigned which);
/* After option parsing: sources_open with GHOSTVRAM_SIM; prints and returns -1 on error. */
int cli_common_finish(struct cli_common *c, const char *cmd);
/* --gpu SPEC (collect/gpu_spec.h: gpu_spec_check when parsed, gpu_spec_resolve in a report). */
#define CLI_GPU_HELP "  --gpu ID             only this GPU: an index, a UUID or a PCI bus id\n"
/* After cli_common_finish: sources_gpu_resolve, its reason said. */
int cli_gpu_resolve(const struct cli_common *c, const char *spec, bool check_index, int *ret_index, const char *cmd);

/* A path-valued option's (or argument's) value: "" is refused in one line. An empty path
 * means the current directory to some calls and, once "/NAME" is appended, the root directory to
 * others. Returns 0, or -1 (printed: "OPT: an empty path ..."). */
int cli_path_arg(const char *cmd, const char *opt, const char *arg);
/* A directory an option names must exist before the command starts: 0, or -1 (printed: "OPT DIR:
 * no such directory" or "not a directory (a file)"). */
int cli_dir_arg(const char *cmd, const char *opt, const char *dir);
/* The same, and one this process can create files in (--textfile): 0, or -1 (printed). */
int cli_writable_dir_arg(const char *cmd, const char *opt, const char *dir);
/* --kmsg FILE names a kernel log that can be opened ("-": standard input; /dev/kmsg; a regular
 * file): 0, or -1 (printed: "--kmsg why"). */
int cli_kmsg_check(const char *cmd, const char *path);

/* getopt_long with opterr = 0 and an optstring starting with ':' returned '?' or ':' (opt):
 * print one line naming the option and a hint to 'ghostvram help CMD', not the whole help. */
void cli_bad_option(const char *cmd, int argc, char **argv, int opt);
/* The command's argc/argv (argv[0] the command's name), set by main for cli_common_option. */
extern int cli_argc;
extern char **cli_argv;

/* Colour on a terminal unless NO_COLOR is set (https://no-color.org) or TERM=dumb. */
bool cli_use_color(FILE *f);
/* Print "ghostvram CMD: message" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* cli_error in the name of the command main runs (cli_argv[0]): a use case's say callback. */
void cli_say(const char *msg);
/* Banner printed by every command under GHOSTVRAM_SIM (text mode, to stderr-safe stdout). */
void cli_sim_banner(FILE *f, const struct cli_common *c);
/* Does argv ask for --json or --json-stream (before a "--")? Known before parsing, so usage errors
 * can be JSON, and so main keeps a JSON document's sentences English (i18n_off). */
bool cli_wants_json(int argc, char **argv);
/* Is arg one of argv's words before a "--" (argv[0], the command, not counted)? */
bool cli_has_arg(int argc, char **argv, const char *arg);
/* With --json, a command that ends with a non-zero status and printed no JSON document prints
 * one: {"schema_version": 1, "command", "error" (the latest cli_error message), "exit_status"}.
 * Nothing when a document was printed or status is 0. */
void cli_json_error_if_silent(const char *cmd, int status);

/* How a command shows its result (render/show.h), from its common options: JSON with --json
 * (cli_print_json), else text with colour on a terminal, detail with -v, after cli_sim_banner.
 * c must outlive the result. */
struct show cli_show(const struct cli_common *c);

/* Write a JSON document (jansson json_t*) to stdout with a newline; steals the reference. */
struct json_t;
int cli_print_json(struct json_t *doc);
/* From now on cli_print_json writes each document on one line and flushes it (a stream of
 * JSON lines, as reclaim --json-stream). */
void cli_json_lines(void);


int cmd_snapshot(int argc, char **argv);
int cmd_scan(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_xid(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_reclaim(int argc, char **argv);
int cmd_experiment(int argc, char **argv);
int cmd_track(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
