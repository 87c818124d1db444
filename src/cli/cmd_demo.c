/* demo: the ghost-memory story end to end on a temporary simulated host: its options, usage and
 * exit codes. The acting steps are run/demo_run.c's (the host, the job, the kill, the end; the
 * stop signals), the story told around them, with scan and reclaim run as they would be by
 * hand, render/demo_render.c's. Everything it starts it stops, and the temporary host is
 * removed. */
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "render/demo_render.h"
#include "run/demo_run.h"
#include "util/i18n.h"
#include "util/parse.h"

static void demo_usage(FILE *f)
{
        fputs(_("Usage: ghostvram demo [--mib M] [--workers K] [--keep]\n\n"
                   "The ghost-memory story end to end on a temporary simulated host (nothing\n"
                   "on this machine's GPUs is touched):\n"
                   "  1. a training job allocates M MiB (default 2048) on GPU 0 and forks K\n"
                   "     data-loader workers (default 2), which inherit its /dev/nvidia*\n"
                   "     descriptors and mappings;\n"
                   "  2. the job is killed with kill -9;\n"
                   "  3. nvidia-smi's view: the memory is still used, the owner's PID does not\n"
                   "     exist;\n"
                   "  4. ghostvram scan finds the ghost and names the workers with their link;\n"
                   "  5. ghostvram reclaim --yes ends them through pidfds (after re-checking\n"
                   "     each one's start time) and reports the memory back and the time it\n"
                   "     took.\n"), f);
        fputs(_("Every process the demo starts is stopped at the end and the host removed\n"
                   "(--keep leaves it for exploring with GHOSTVRAM_SIM=DIR) — also when it is\n"
                   "interrupted (Ctrl-C, SIGTERM, SIGHUP: exit 128+signal) or its reader goes\n"
                   "away (`demo | head`: quietly, exit 141 as for SIGPIPE). The host is made in\n"
                   "$TMPDIR (default /tmp).\n"), f);
        fprintf(f, _("--mib must be above the noise floor of the simulated 80 GB GPU (816 MiB,\n"
                   "1%% of its memory): scan does not call less a ghost (exit 2).\n"));
}

struct demo_args {
        unsigned mib, workers;
        bool keep;
};

/* the story is the workers keeping the memory: at least one */
static int demo_workers(void *ctx, const char *arg, const char *cmd)
{
        if (parse_uint_range(arg, 1, DEMO_MAX_PROCS - 2, &((struct demo_args *)ctx)->workers) == 0)
                return 0;
        cli_error(cmd, "--workers: '%s' is not a number from 1 to %d", arg, DEMO_MAX_PROCS - 2);
        return -1;
}

#define F(f) offsetof(struct demo_args, f)
static const struct cli_opt demo_table[] = {
        { "mib", 'm', CO_UINT, F(mib), 1, 65536, "--mib: '%s' is not a size in MiB (1-65536)" },
        { "workers", 'w', CO_FN, .fn = demo_workers },
        { "keep", 'k', CO_FLAG, F(keep) },
        { 0 },
};
#undef F

#define DEMO_GO_ON (-1) /* all parsed: tell the story */

/* argv into a: DEMO_GO_ON, or the exit status of --help or a usage error (said). */
static int demo_parse(int argc, char **argv, struct demo_args *a)
{
        const struct cli_parse p = { "demo", ":h", demo_table, a, NULL, demo_usage, .operands = true };
        int r = cli_parse(&p, argc, argv);
        if (r != EXIT_OK)
                return r == CLI_HELP ? EXIT_OK : r;
        if (optind < argc) {
                cli_error("demo", "unexpected argument '%s'; see 'ghostvram help demo'", argv[optind]);
                return EXIT_USAGE;
        }
        /* below the noise floor scan would not call the memory a ghost: refuse, in words */
        unsigned long long floor_mib = demo_floor_mib();
        if ((unsigned long long)a->mib <= floor_mib) {
                cli_error("demo", "--mib %u is under the noise floor of the simulated %u MiB GPU (%llu MiB, 1%% of its "
                                  "memory): scan does not call so little a ghost. Use --mib %llu or more.",
                          a->mib, DEMO_GPU_MIB, floor_mib, floor_mib + 1);
                return EXIT_USAGE;
        }
        return DEMO_GO_ON;
}

int cmd_demo(int argc, char **argv)
{
        struct demo_args a = { .mib = 2048, .workers = 2 };
        int pr = demo_parse(argc, argv, &a);
        if (pr != DEMO_GO_ON)
                return pr;
        return demo_execute(a.mib, a.workers, a.keep, cli_say);
}
