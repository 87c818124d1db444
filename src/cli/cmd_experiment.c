/* experiment: the command line of run/experiment_run.c (reproduce the incident on purpose and
 * measure it): options, the GPU checked first (experiment_prepare), the table, JSON or the line
 * of a stop (render/experiment_render.c), exit codes. */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "act/reclaim_act.h"
#include "cli/cli.h"
#include "render/experiment_render.h"
#include "render/reclaim_render.h"
#include "run/experiment_run.h"
#include "util/i18n.h"
#include "util/stopsig.h"

#define EXP_ACCEPTS (CLI_JSON | CLI_CALL_TIMEOUT | CLI_NVML_LIB)

static void experiment_usage(FILE *f)
{
        fputs(_("Usage: ghostvram experiment [--gpu N] [--mib M] [--workers K] [--signal KILL]\n"
              "                            [--reclaim] [--repeat R] [--wait 10s] [--json]\n"
              "\n"
              "Reproduce the ghost on purpose and measure it. A job allocates M MiB on GPU N\n"
              "and forks K workers, which inherit its /dev/nvidia* descriptors and mappings\n"
              "as data-loader workers do; the job is killed with the signal; then NVML's\n"
              "used memory is sampled every 50 ms (a --wait over 500 s: 10,000 samples),\n"
              "until it is back or a last sample at --wait: the residual MiB, how long it\n"
              "takes to come back (or that it does not within --wait), and the kernel's NVIDIA\n"
              "events meanwhile (Xid 45, logged when a process with GPU work is killed, is\n"
              "shown apart from real errors). With --reclaim, the same after\n"
              "`ghostvram reclaim --yes --gpu N --pid WORKERS`, restricted to the workers\n"
              "it started. Prints a before/after table; with --repeat\n"
              "the median and the spread; --json has every raw sample.\n"
              "\n"), f);
        fputs(_("On a real host the job is a child of ghostvram using the CUDA driver API\n"
              "(libcuda.so.1, loaded at run time; --reclaim needs root). Under GHOSTVRAM_SIM\n"
              "it is the simulated application (`ghostvram sim run`). Every process the\n"
              "experiment starts is stopped at the end.\n"
              "\n"), f);
        fputs(_("Options:\n"
              "  --gpu ID             the GPU: an index, a UUID or a PCI bus id (default 0)\n"
              "  --mib M              the job's allocation (default 1024)\n"), f);
        fprintf(f, _("  --workers K          forked workers, 0-%d (default 2)\n"), EXP_MAX_WORKERS);
        fputs(_("  --signal SIG         how the job is killed: KILL (default), TERM, INT, ...\n"
              "  --reclaim            then run `ghostvram reclaim --yes --pid WORKERS` on the\n"
              "                       run's own workers only, and measure again\n"), f);
        fprintf(f, _("  --repeat R           runs, 1-%d (default 1)\n"), EXP_MAX_REPEAT);
        fputs(_("  --wait DURATION      how long to wait for the memory each time (default 10s)\n"
              "  --confirm DURATION   reclaim's confirming-sample delay (default 2s)\n"), f);
        cli_common_help(f, EXP_ACCEPTS & ~CLI_JSON);
        fputs(_("  --json               machine-readable, with the samples (schema_version)\n"), f);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\n"
              "Example:\n"
              "  ghostvram sim init /tmp/gpu\n"
              "  GHOSTVRAM_SIM=/tmp/gpu ghostvram experiment --reclaim --repeat 3\n"
              "\n"), f);
        fputs(_("Exit status: 0 measured (with --reclaim: the memory came back every time);\n"
              "1 with --reclaim, memory still held after reclaim in some run; 2 usage error;\n"
              "3 cannot run (no NVIDIA driver and no GHOSTVRAM_SIM, or the job did not\n"
              "start).\n"), f);
}

struct exp_cli {
        struct cli_common c;
        struct exp_opts o;
        const char *gpu_spec;
};

static int experiment_main(int argc, char **argv);

/* With --json every error is JSON on stdout too (the message stays on stderr). */
int cmd_experiment(int argc, char **argv)
{
        int status = experiment_main(argc, argv);
        if (cli_wants_json(argc, argv))
                cli_json_error_if_silent("experiment", status);
        return status;
}

static int exp_signal(void *ctx, const char *arg, const char *cmd)
{
        struct exp_cli *x = ctx;
        if (reclaim_signal_parse(arg, &x->o.signal) == 0)
                return 0;
        return cli_error(cmd, "--signal: '%s' is not one of KILL, TERM, INT, HUP, QUIT, USR1, USR2", arg), -1;
}

#define F(f) offsetof(struct exp_cli, f)
static const struct cli_opt exp_table[] = {
        { "gpu", 'g', CO_GPU, F(gpu_spec) },
        { "mib", 'm', CO_MIB, F(o.mib), 1, 1u << 24, "--mib: '%s' is not a size from 1 MiB to 16 TiB" },
        { "workers", 'w', CO_UINT, F(o.workers), 0, EXP_MAX_WORKERS, "--workers: '%s' is not a number from 0 to %llu" },
        { "signal", 's', CO_FN, .fn = exp_signal },
        { "reclaim", 'r', CO_FLAG, F(o.reclaim) },
        { "repeat", 'R', CO_UINT, F(o.repeat), 1, EXP_MAX_REPEAT, "--repeat: '%s' is not a number from 1 to %llu" },
        { "wait", 'W', CO_MS, F(o.wait_ms), 1, 3600000, "--wait: '%s' is not a duration between 1ms and 1h" },
        { "confirm", 'C', CO_MS, F(o.confirm_ms), 0, 600000, "--confirm: '%s' is not a duration up to 10m" },
        { 0 },
};
#undef F

/* argv into x: EXIT_OK to go on, CLI_HELP, or the exit status of a usage error. */
static int exp_parse(int argc, char **argv, struct exp_cli *x)
{
        const struct cli_parse p = { "experiment", "h", exp_table, x, &x->c, experiment_usage, .english = true,
                                     .finish = true };
        return cli_parse(&p, argc, argv);
}

/* The table or the JSON document, and the line of a stop. */
static int experiment_main(int argc, char **argv)
{
        /* the CUDA job of a real host, run by a run in a fresh process: report fd 3 */
        if (argc == 5 && strcmp(argv[1], EXP_CUDA_CHILD) == 0)
                return experiment_cuda_child(argc - 1, argv + 1);
        static struct exp_cli x;
        memset(&x, 0, sizeof(x));
        cli_common_init(&x.c, EXP_ACCEPTS);
        x.c.timeout_now = "--wait (how long to wait for the memory each time)";
        x.o = (struct exp_opts){ .mib = 1024, .workers = 2, .repeat = 1, .signal = SIGKILL, .wait_ms = 10000,
                                 .confirm_ms = 2000 };
        int status = exp_parse(argc, argv, &x);
        if (status != EXIT_OK)
                return status == CLI_HELP ? EXIT_OK : status;
        if (!x.c.json)
                x.o.progress = experiment_progress;
        char err[1024];
        status = experiment_prepare(&x.o, &x.c.src, x.gpu_spec, err, sizeof(err));
        if (status != EXIT_OK)
                return cli_error("experiment", "%s", err), status;

        struct stopsig_saved saved_signals;
        stopsig_catch(&saved_signals);
        struct reclaim_sys sys;
        reclaim_sys_real(&sys, "/proc");
        x.o.sys = &sys;
        struct exp_result res;
        int r = experiment_run(&x.o, &res);
        if (r < 0 && (r != -ENOMEM || res.runs))
                cli_error("experiment", "%s", res.error);
        status = r < 0 ? EXIT_INCOMPLETE : res.unrecovered ? EXIT_FINDING : EXIT_OK;
        if (stopsig_pending())
                status = 128 + stopsig_pending();
        if (res.runs) {
                const struct show sh = cli_show(&x.c);
                experiment_show(&sh, &x.o, &res, stopsig_pending());
        }
        fflush(stdout);
        exp_result_free(&res, x.o.repeat);
        stopsig_restore(&saved_signals);
        return status;
}
