#define _GNU_SOURCE 1
/* reclaim: options, usage and exit codes; what reclaim says while it acts (text, JSON lines, or
 * one JSON document), the question on a terminal. The use case is run/reclaim_run: the scan,
 * the plan (act/reclaim_plan), the acting (act/reclaim_act), the escalations (act/escalate) and
 * the poke (act/poke); the rendering render/reclaim_render. */
#include <stddef.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "run/reclaim_run.h"
#include "render/reclaim_print.h"
#include "util/i18n.h"
#include "util/parse.h"

#define RC_MAX_PIDS RECLAIM_MAX_PIDS
#define DEFAULT_POLICY "/etc/ghostvram/protected"

/* it acts on this host: no --save-bundle; --holders is the scan's business */
#define RECLAIM_ACCEPTS (CLI_JSON | CLI_VERBOSE | CLI_CALL_TIMEOUT | CLI_NVML_LIB | CLI_PROC | CLI_DEV_PREFIX | CLI_FROM_BUNDLE)

static void reclaim_usage(FILE *f)
{
        fputs(_("Usage: ghostvram reclaim [--gpu N] [--pid P...] [--cgroup PATH] [--yes]\n"
                "                         [--signal TERM] [--grace 5s] [--wait 60s]\n"
                "                         [--json | --json-stream]\n"
                "       ghostvram reclaim --reset-gpu --gpu N [--force] [--yes]\n"
                "       ghostvram reclaim --reload-uvm --force [--yes]\n"
                "       ghostvram reclaim --poke --gpu N [--force] [--cuda-lib PATH] [--yes]\n"
                "\n"
                "Free ghost GPU memory by ending the processes that really hold it (forked\n"
                "workers of a killed job that kept its /dev/nvidia* descriptors or mappings),\n"
                "and measure how long the memory takes to come back. The plan comes from a\n"
                "fresh scan (two samples, as `scan`). Without --yes nothing is changed.\n"
                "\n"), f);
        fputs(_("A process is a default target only if ALL of these hold:\n"
                "  - scan ties it, through a link to a dead owner, to a GPU with a confirmed\n"
                "    ghost (not merely a candidate when several GPUs have one);\n"
                "  - it holds or maps nvidia-uvm (a CUDA process, not a monitor);\n"
                "  - NVML lists it on no GPU, and no live listed owner shares its session or\n"
                "    its job;\n"
                "  - it is not PID 1 of any PID namespace, a kernel thread, ghostvram or one of\n"
                "    its ancestors, a GPU daemon (persistence daemon, MPS, DCGM, fabric\n"
                "    manager, device plugins), a display server, or in the site policy.\n"
                "Each target is opened with pidfd_open and its start time re-checked before any\n"
                "signal: a reused PID is never signalled. Signals go through the pidfd only.\n"
                "\n"), f);
        /* xgettext:no-c-format */
        fputs(_("Options:\n"
                "  --gpu ID             only the ghost of this GPU: an index, a UUID or a PCI\n"
                "                       bus id\n"
                "  --pid P[,P...]       exactly these processes, not the default targets (never\n"
                "                       PID 1, kernel threads, ghostvram or its ancestors; a\n"
                "                       process holding no NVIDIA device node, or another\n"
                "                       ghostvram, only with --force)\n"
                "  --cgroup PATH        end a finished job's whole cgroup (Slurm epilog, deleted\n"
                "                       pod): cgroup.kill, or SIGKILL to each member through a\n"
                "                       pidfd; refused while a live NVML-listed owner is inside\n"
                "  -y, --yes            act (without it: a dry run; a terminal is asked)\n"
                "  -n, --dry-run        never act, never ask\n"
                "  --signal SIG         first signal: TERM (default), INT, HUP, QUIT, USR1,\n"
                "                       USR2, KILL\n"
                "  --grace DURATION     then SIGKILL (default 5s; none: never, only the first\n"
                "                       signal)\n"
                "  --wait DURATION      stop waiting for processes and memory (default 60s)\n"
                "  --policy FILE        protected processes (default /etc/ghostvram/protected);\n"
                "                       lines: comm NAME | cgroup PREFIX | unit NAME; # comment\n"
                "  --reset-gpu          last resort: `nvidia-smi --gpu-reset -i BUS` of --gpu N;\n"
                "                       refused while anything holds the GPU, after an Xid 79,\n"
                "                       on MIG without --force; never run on a simulated host\n"
                "  --reload-uvm         last resort: unload and load nvidia_uvm (libkmod);\n"
                "                       needs --force and nobody holding nvidia-uvm\n"
                "  --poke               before a reset: a tiny CUDA client on --gpu N (cuInit, a\n"
                "                       context, 2 MiB allocated and freed) in a child killed\n"
                "                       at --call-timeout (default 10s here); the memory is\n"
                "                       measured before and for --wait after (default 3s here)\n"
                "                       (some drivers free a dead context's memory when the\n"
                "                       next client comes); refused while NVML lists live jobs\n"
                "                       on the GPU, unless --force\n"
                "  --cuda-lib PATH      the CUDA driver library --poke loads (default\n"
                "                       libcuda.so.1; the simulated one under GHOSTVRAM_SIM)\n"
                "  --force              allow --reset-gpu on MIG; required by --reload-uvm;\n"
                "                       lets --pid name a process without an NVIDIA node, or\n"
                "                       a ghostvram; lets --poke run beside live jobs\n"
                "  --confirm DURATION   delay before the scan's confirming sample (default 2s)\n"
                "  --noise-floor MIB    minimum ghost in MiB (default 64; 1% of the GPU if more)\n"),
              f);
        fputs(_("  --json-stream        one JSON object per line as it happens: plan, action,\n"
              "                       sample, result (docs/reclaim.md)\n"
              "  -v, --verbose        also list CUDA processes tied to no ghost\n"
              "  --from-bundle DIR    plan from a recorded bundle (never acts)\n"), f);
        cli_common_help(f, RECLAIM_ACCEPTS & ~(CLI_VERBOSE | CLI_FROM_BUNDLE));
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\n"
                "Examples:\n"
                "  sudo ghostvram reclaim                 # the plan: who gets SIGTERM, and why\n"
                "  sudo ghostvram reclaim --yes           # do it; memory before/after, time\n"
                "  sudo ghostvram reclaim --pid 31301,31302 --yes --grace 2s\n"
                "  sudo ghostvram reclaim --cgroup /slurm/uid_1000/job_42 --yes\n"
                "  sudo ghostvram reclaim --poke --gpu 3 --yes  # a new context: does it free it?\n"
                "  sudo ghostvram reclaim --reset-gpu --gpu 3   # what a reset would need\n"
                "\n"), f);
        fputs(_("The plan is printed before acting, then each signal, result and memory sample\n"
                "as it happens. SIGINT, SIGTERM or SIGHUP stop it: no signal is sent after\n"
                "that, the report says what was done and what is left, and it exits 128+N.\n"
                "Every action goes to syslog (LOG_AUTHPRIV) and the JSON. One reclaim at a\n"
                "time per host (a lock in /run/ghostvram). docs/reclaim.md: the rules, the\n"
                "policy file, the checks.\n"
                "\n"), f);
        fputs(_("Exit status: 0 memory recovered (or a dry run with a plan, or nothing to\n"
                "reclaim); 1 partial (a process did not end, the memory did not come back, or\n"
                "a ghost no process may be ended for); 2 usage error; 3 cannot act (not root\n"
                "for others' processes, no pidfd support, another reclaim running, --pid naming\n"
                "a process reclaim does not signal, a refused escalation or cgroup).\n"
                "--poke: 0 the poke gave memory back (or a dry run whose checks passed); 1 it\n"
                "ran and nothing changed, a CUDA call failed, or it hung and was killed; 3\n"
                "refused (live jobs without --force, MIG, a lost GPU) or no CUDA library.\n"
                "--yes is refused (exit 2) with --proc or --from-bundle: the plan would not\n"
                "come from this host's live /proc.\n"),
              f);
}
/* What the command line gives: the use case's options, read into directly, and what only the
 * command needs. */
struct rc_opts {
        struct cli_common c;
        struct reclaim_run_opts ro;
        pid_t pids[RC_MAX_PIDS];
        bool wait_given, json_stream;
        uint64_t confirm_ms, floor_mib;
        bool floor_set;
        const char *policy;
};

static int parse_pids(struct rc_opts *o, const char *arg)
{
        char tmp[RC_MAX_PIDS * 12];
        if (snprintf(tmp, sizeof(tmp), "%s", arg) >= (int)sizeof(tmp))
                return -1;
        /* every item a PID: "" (an empty variable), "1,,2" and "1," are refused, never taken
         * for "no --pid" (the default targets) */
        char *rest = tmp;
        do {
                char *t = strsep(&rest, ",");
                unsigned v;
                if (parse_uint_range(t, 1, INT_MAX, &v) < 0 || o->ro.n_pids >= RC_MAX_PIDS)
                        return -1;
                o->pids[o->ro.n_pids++] = (pid_t)v;
        } while (rest);
        return 0;
}

/* ---- what reclaim says (render/reclaim_print) --------------------------------------------------- */

static bool banner_shown; /* the simulated host's banner went out (once) */

static void banner(void *ctx)
{
        const struct rc_opts *o = ctx;
        if (!banner_shown)
                cli_sim_banner(stdout, &o->c);
        banner_shown = true;
}

/* ---- the command ------------------------------------------------------------------------------------ */

static int rc_pid(void *ctx, const char *arg, const char *cmd)
{
        if (parse_pids(ctx, arg) == 0)
                return 0;
        cli_error(cmd, _("--pid: '%s' is not a PID or a comma-separated list of PIDs (at most %d)"), arg, RC_MAX_PIDS);
        return -1;
}

static int rc_signal(void *ctx, const char *arg, const char *cmd)
{
        struct rc_opts *o = ctx;
        if (reclaim_signal_parse(arg, &o->ro.signal) == 0)
                return 0;
        cli_error(cmd, _("--signal: '%s' is not one of TERM, INT, HUP, QUIT, USR1, USR2, KILL"), arg);
        return -1;
}

static int rc_grace(void *ctx, const char *arg, const char *cmd)
{
        struct rc_opts *o = ctx;
        if (!strcmp(arg, "none")) {
                o->ro.grace_ms = RECLAIM_GRACE_NONE;
                return 0;
        }
        if (parse_duration_ms(arg, &o->ro.grace_ms) == 0 && o->ro.grace_ms <= 3600 * 1000)
                return 0;
        cli_error(cmd, _("--grace: '%s' is not a duration up to 1h (e.g. 5s, 500ms) or none"), arg);
        return -1;
}

static int rc_json_stream(void *ctx, const char *arg, const char *cmd)
{
        (void)ctx, (void)arg, (void)cmd;
        cli_json_lines(); /* also when abbreviated */
        return 0;
}

#define F(f) offsetof(struct rc_opts, f)
static const struct cli_opt rc_table[] = {
        { "gpu", 'g', CO_GPU, F(ro.gpu_spec) },
        { "pid", 'p', CO_FN, .fn = rc_pid },
        { "cgroup", 'c', CO_PATH, F(ro.cgroup) },
        { "yes", 'y', CO_FLAG, F(ro.yes) },
        { "dry-run", 'n', CO_FLAG, F(ro.dry_run) },
        { "signal", 's', CO_FN, .fn = rc_signal },
        { "grace", 'G', CO_FN, .fn = rc_grace },
        { "wait", 'W', CO_MS, F(ro.wait_ms), 1, 3600 * 1000, N_("--wait: '%s' is not a duration between 1ms and 1h (e.g. 60s)"),
          CO_SEEN(F(wait_given)) },
        { "policy", 'P', CO_PATH, F(policy) },
        { "reset-gpu", 'R', CO_FLAG, F(ro.reset_gpu) },
        { "reload-uvm", 'U', CO_FLAG, F(ro.reload_uvm) },
        { "force", 'f', CO_FLAG, F(ro.force) },
        { "confirm", 'C', CO_MS, F(confirm_ms), 0, 600000, N_("--confirm: '%s' is not a duration up to 10m (e.g. 2s, 500ms, 0)") },
        { "noise-floor", 'F', CO_U64, F(floor_mib), 0, 1u << 24, N_("--noise-floor: '%s' is not a number of MiB"),
          CO_SEEN(F(floor_set)) },
        { "json-stream", 'J', CO_FLAG, F(json_stream), .fn = rc_json_stream },
        { "poke", 'K', CO_FLAG, F(ro.poke) },
        { "cuda-lib", 'L', CO_PATH, F(ro.cuda_lib) },
        { 0 },
};
#undef F

/* The options that go together, and those that do not: 0, or -1 (said). */
static int rc_combinations(const struct rc_opts *opts)
{
        const char *cmd = "reclaim";
        const struct reclaim_run_opts *o = &opts->ro;
        bool modes = o->reset_gpu + o->reload_uvm > 1 || ((o->reset_gpu || o->reload_uvm) && (o->cgroup || o->n_pids));
        if (CLI_RULES(cmd,
                      { !o->poke && o->grace_ms != RECLAIM_GRACE_NONE && o->grace_ms >= o->wait_ms && o->signal != SIGKILL,
                        N_("--grace must be shorter than --wait") },
                      { o->cgroup && o->n_pids, N_("--cgroup and --pid cannot be used together") },
                      { modes, N_("--reset-gpu, --reload-uvm, --cgroup and --pid are separate modes: use one") },
                      { o->poke && (o->reset_gpu || o->reload_uvm || o->cgroup || o->n_pids),
                        N_("--poke, --reset-gpu, --reload-uvm, --cgroup and --pid are separate modes: use one") },
                      { o->poke && !o->gpu_spec, N_("--poke needs --gpu N (the GPU to poke)") },
                      { o->cuda_lib && !o->poke, N_("--cuda-lib is the library --poke loads: add --poke") },
                      { o->reset_gpu && !o->gpu_spec, N_("--reset-gpu needs --gpu N (the GPU to reset)") }) < 0)
                return -1;
        /* acting re-checks start times in the live /proc: a plan from elsewhere is not this host's */
        if (o->yes && ((opts->c.given & CLI_PROC) || opts->c.src.from_bundle)) {
                cli_error(cmd, _("--yes cannot be used with %s: the plan would not come from this host's live /proc "
                               "(start times are re-checked there); drop --yes to see the plan"),
                          opts->c.src.from_bundle ? "--from-bundle" : "--proc");
                return -1;
        }
        return CLI_RULES(cmd, { o->yes && o->dry_run, N_("--yes and --dry-run contradict each other") },
                         { opts->json_stream && opts->c.json,
                           N_("--json (one document at the end) and --json-stream (a line per event) exclude each other") });
}

static int reclaim_main(int argc, char **argv);

/* With --json every error is JSON on stdout too (the message stays on stderr); with
 * --json-stream it is one line, as every line of the stream. */
int cmd_reclaim(int argc, char **argv)
{
        bool stream = cli_has_arg(argc, argv, "--json-stream");
        if (stream)
                cli_json_lines();
        int status = reclaim_main(argc, argv);
        if (cli_wants_json(argc, argv) || stream)
                cli_json_error_if_silent("reclaim", status);
        return status;
}

/* The use case's options that come from the common ones and the defaults that depend on others
 * (the wait of --poke defaults to its own). */
static void run_opts(struct rc_opts *o, const struct reclaim_policy *pol)
{
        struct reclaim_run_opts *ro = &o->ro;
        reclaim_run_from(ro, &o->c.src);
        ro->so.confirm_ms = o->confirm_ms;
        if (o->floor_set)
                ro->so.ledger.floor_min_bytes = o->floor_mib << 20;
        ro->verbose = o->c.verbose;
        ro->pids = o->pids;
        ro->poke_timeout_ms = (o->c.given & CLI_CALL_TIMEOUT) ? o->c.src.timeout_ms : POKE_DEFAULT_TIMEOUT_MS;
        if (ro->poke && !o->wait_given)
                ro->wait_ms = POKE_DEFAULT_WAIT_MS;
        ro->policy = pol;
}

static int reclaim_main(int argc, char **argv)
{
        struct rc_opts o;
        memset(&o, 0, sizeof(o));
        cli_common_init(&o.c, RECLAIM_ACCEPTS);
        o.c.timeout_now = _("--wait (how long to wait for the processes to end and the memory to come back)");
        o.ro.only_gpu = -1;
        o.ro.signal = SIGTERM;
        o.ro.grace_ms = 5000;
        o.ro.wait_ms = 60000;
        o.confirm_ms = 2000;
        const struct cli_parse p = { "reclaim", "hvyn", rc_table, &o, &o.c, reclaim_usage };
        int r = cli_parse(&p, argc, argv);
        if (r != EXIT_OK)
                return r == CLI_HELP ? EXIT_OK : r;
        if (rc_combinations(&o) < 0 || cli_common_finish(&o.c, "reclaim") < 0)
                return EXIT_USAGE;
        /* an index is checked against the scan's sample; a UUID or PCI bus id is looked up */
        int gr = cli_gpu_resolve(&o.c, o.ro.gpu_spec, false, &o.ro.only_gpu, "reclaim");
        if (gr != EXIT_OK)
                return gr;
        struct reclaim_policy pol;
        char err[1024];
        if (reclaim_policy_load(o.policy ? o.policy : DEFAULT_POLICY, o.policy, &pol, err, sizeof(err)) < 0) {
                cli_error("reclaim", "%s", err);
                reclaim_policy_free(&pol);
                return EXIT_USAGE;
        }
        run_opts(&o, &pol);
        struct reclaim_print pr = { .json = o.c.json, .json_stream = o.json_stream, .verbose = o.c.verbose,
                                    .poke = o.ro.poke, .banner = banner, .banner_ctx = &o, .print_json = cli_print_json,
                                    .error = cli_say };
        struct reclaim_io io;
        reclaim_print_io(&io, &pr);
        int status = reclaim_run(&o.ro, &io);
        reclaim_policy_free(&pol);
        return status;
}
