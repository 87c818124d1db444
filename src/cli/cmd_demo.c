/* demo: the ghost-memory story end to end on a temporary simulated host, told around the
 * steps of run/demo_run.c (the host, the job, the kill, the end; the stop signals) and scan
 * and reclaim run as they would be by hand; its text is render/demo_render.c's. Everything
 * it starts it stops, and the temporary host is removed. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "collect/sample.h"
#include "model/ledger.h"
#include "render/demo_render.h"
#include "run/demo_run.h"
#include "util/i18n.h"
#include "util/parse.h"

/* Stop here? A stop signal, a reader that went away, or output that cannot be written. */
static bool demo_interrupted(void)
{
        fflush(stdout);
        return demo_stop_signal() || ferror(stdout) || demo_reader_gone(STDOUT_FILENO);
}

/* What nvidia-smi would show for the simulated GPUs. */
static void smi_view(const char *simdir)
{
        setenv("GHOSTVRAM_SIM", simdir, 1);
        struct cli_common c;
        cli_common_init(&c, 0);
        if (cli_common_finish(&c, "demo") < 0)
                return;
        struct facts_opts fo = { .simulated = true };
        sources_gpu_opts(&c.src, &fo.gpu);
        sources_host_opts(&c.src, &fo.host);
        struct facts *f;
        if (facts_collect(&fo, &f) < 0)
                return;
        demo_smi_print(stdout, f);
        facts_free(f);
}

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

/* Steps 1 to 3: the job, its kill, nvidia-smi's view. False when the story stops here. */
static bool demo_story_job(struct demo *d, unsigned mib, unsigned workers)
{
        demo_step_print(stdout, 1, "a training job allocates GPU memory and forks data-loader workers");
        int r = demo_job_start(d, mib, workers);
        if (r < 0) {
                cli_error("demo", r == -ECHILD   ? "the simulated job did not report its processes"
                                  : r == -ENOSYS ? "this kernel has no pidfd_open (Linux 5.3+): the demo ends its "
                                                   "processes only through pidfds, so it starts none"
                                                 : "could not start the simulated job");
                return false;
        }
        demo_job_print(stdout, d, mib);
        smi_view(d->dir);
        if (demo_interrupted())
                return false;
        demo_step_print(stdout, 2, "the job is killed with kill -9");
        demo_kill_print(stdout, (int)d->procs[0].pid);
        r = demo_kill_owner(d);
        if (r < 0) {
                cli_error("demo", "could not signal the simulated job: %s", strerror(-r));
                return false;
        }
        if (demo_interrupted())
                return false;
        demo_step_print(stdout, 3, "nvidia-smi: the memory is still used, and the PID does not exist");
        smi_view(d->dir);
        demo_stuck_print(stdout);
        return !demo_interrupted();
}

/* The story; its exit status (EXIT_OK when scan found the ghost and reclaim got the memory
 * back). */
static int demo_story(struct demo *d, unsigned mib, unsigned workers)
{
        if (!demo_story_job(d, mib, workers))
                return EXIT_INCOMPLETE;
        demo_step_print(stdout, 4, "ghostvram scan names what holds the memory");
        demo_command_print(stdout, "ghostvram scan");
        const char *const scan_args[] = { "ghostvram", "scan", "--confirm", "1s", NULL };
        setenv("GHOSTVRAM_SIM", d->dir, 1);
        int sr = spawn_self(NULL, scan_args, NULL, false);
        if (demo_interrupted())
                return EXIT_INCOMPLETE;
        if (sr != 1) {
                cli_error("demo", "scan did not report the ghost (exit %d)", sr);
                return EXIT_INCOMPLETE;
        }
        demo_step_print(stdout, 5, "ghostvram reclaim ends them safely, and the memory comes back");
        demo_command_print(stdout, "sudo ghostvram reclaim --yes");
        const char *const reclaim_args[] = { "ghostvram", "reclaim", "--yes", "--confirm", "1s", NULL };
        int rr = spawn_self(NULL, reclaim_args, NULL, false);
        printf("\n");
        smi_view(d->dir);
        if (rr != 0 && !demo_interrupted())
                cli_error("demo", "reclaim did not get the memory back (exit %d)", rr);
        return rr == 0 ? EXIT_OK : EXIT_INCOMPLETE;
}

/* Every process stopped and the host removed (or kept with --keep); what is said, and the
 * exit status: 128+N after a stop signal, 141 when the reader went away (as `yes | head -1`). */
static int demo_end(struct demo *d, bool keep, int status, const struct demo_signals *saved)
{
        fflush(stdout);
        bool reader_gone = demo_reader_gone(STDOUT_FILENO);
        int stop = demo_stop_signal();
        if (stop) {
                fprintf(stderr, "ghostvram demo: interrupted (signal %d): stopping its processes and removing %s\n",
                        stop, d->dir);
                status = 128 + stop;
        }
        int gone = demo_finish(d, keep);
        if (keep) {
                /* where the host is must not go down a closed pipe: it is left running */
                demo_kept_print(reader_gone ? stderr : stdout, d->dir);
        } else if (gone < 0) {
                cli_error("demo", "could not remove %s: %s", d->dir, strerror(-gone));
        } else if (!stop && !reader_gone) {
                demo_over_print(stdout, d->dir);
        }
        fflush(stdout);
        if (!stop && (reader_gone || demo_reader_gone(STDOUT_FILENO))) {
                status = 128 + SIGPIPE; /* nothing said */
        } else if (!stop && ferror(stdout)) {
                cli_error("demo", "could not write its story to standard output");
                status = EXIT_INCOMPLETE;
        }
        demo_signals_restore(saved);
        return status;
}

struct demo_args {
        unsigned mib, workers;
        bool keep;
};

#define DEMO_GO_ON (-1) /* all parsed: tell the story */

/* argv into a: DEMO_GO_ON, or the exit status of --help or a usage error (said). */
static int demo_parse(int argc, char **argv, struct demo_args *a)
{
        static const struct option opts[] = {
                { "mib", required_argument, NULL, 'm' }, { "workers", required_argument, NULL, 'w' },
                { "keep", no_argument, NULL, 'k' },      { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        int opt;
        optind = 1;
        opterr = 0;     /* a bad option is said in one line (cli_bad_option) */
        while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (opt) {
                case 'm':
                        if (parse_uint_range(optarg, 1, 65536, &a->mib) < 0) {
                                cli_error("demo", "--mib: '%s' is not a size in MiB (1-65536)", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'w':
                        /* the story is the workers keeping the memory: at least one */
                        if (parse_uint_range(optarg, 1, DEMO_MAX_PROCS - 2, &a->workers) < 0) {
                                cli_error("demo", "--workers: '%s' is not a number from 1 to %d", optarg, DEMO_MAX_PROCS - 2);
                                return EXIT_USAGE;
                        }
                        break;
                case 'k': a->keep = true; break;
                case 'h': demo_usage(stdout); return EXIT_OK;
                default: cli_bad_option("demo", argc, argv, opt); return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                cli_error("demo", "unexpected argument '%s'; see 'ghostvram help demo'", argv[optind]);
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
        /* below the noise floor scan would not call the memory a ghost: refuse, in words */
        unsigned long long floor_mib = demo_floor_mib();
        if ((unsigned long long)a.mib <= floor_mib) {
                cli_error("demo", "--mib %u is under the noise floor of the simulated %u MiB GPU (%llu MiB, 1%% of its "
                                  "memory): scan does not call so little a ghost. Use --mib %llu or more.",
                          a.mib, DEMO_GPU_MIB, floor_mib, floor_mib + 1);
                return EXIT_USAGE;
        }
        /* the stop signals are taken from here and every path below gives them back; demo_end also
         * stops the processes and removes the host */
        struct demo_signals saved;
        demo_signals_take(&saved);
        static struct demo d;
        memset(&d, 0, sizeof(d));
        const char *tmp = getenv("TMPDIR");
        int r = demo_host_create(&d, tmp);
        if (r < 0 && !d.dir[0]) {
                /* the directory it tried: an absolute $TMPDIR, else /tmp (demo_host_create) */
                cli_error("demo", "cannot create a temporary directory in %s: %s", tmp && tmp[0] == '/' ? tmp : "/tmp",
                          strerror(-r));
                demo_signals_restore(&saved);
                return EXIT_INCOMPLETE;
        }
        demo_title_print(stdout, d.dir);
        int status = EXIT_INCOMPLETE;
        if (r < 0)
                cli_error("demo", "could not create the simulated host");
        else
                status = demo_story(&d, a.mib, a.workers);
        return demo_end(&d, a.keep, status, &saved);
}
