/* demo: the ghost-memory story end to end on a temporary simulated host, told around the
 * steps of run/demo_run.c (the host, the job, the kill, the end) and scan and reclaim run as
 * they would be by hand. Everything it starts it stops, and the temporary host is removed. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "collect/sample.h"
#include "model/ledger.h"
#include "run/demo_run.h"
#include "util/escape.h"
#include "util/i18n.h"
#include "util/parse.h"

/* A stop signal (Ctrl-C, SIGTERM, SIGHUP) ends the story early; the cleanup still runs. */
static volatile sig_atomic_t demo_stop;

static void on_demo_stop(int sig)
{
        demo_stop = sig;
}

/* Has the reader of standard output gone away (`demo | head -1`)? SIGPIPE is ignored, so a
 * write fails instead of killing the demo before it cleans up; and a pipe or socket whose
 * reader left says so in poll() even when nothing was written since (a step's output written
 * by the child it ran). */
static bool demo_reader_gone(void)
{
        struct pollfd pf = { .fd = STDOUT_FILENO, .events = 0 };
        return poll(&pf, 1, 0) == 1 && (pf.revents & (POLLERR | POLLHUP));
}

/* Stop here? A signal, a reader that went away, or output that cannot be written. */
static bool demo_interrupted(void)
{
        fflush(stdout);
        return demo_stop || ferror(stdout) || demo_reader_gone();
}

static void step(int n, const char *title)
{
        printf("\n── %d. %s ", n, title);
        for (size_t i = strlen(title); i < 66; i++)
                fputs("─", stdout);
        printf("\n\n");
        fflush(stdout);
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
        cli_common_gpu_opts(&c, &fo.gpu);
        cli_common_host_opts(&c, &fo.host);
        struct facts *f;
        if (facts_collect(&fo, &f) < 0)
                return;
        printf("  $ nvidia-smi          (what it would print for the simulated GPUs)\n");
        printf("  | GPU  Name                                 Memory-Usage           |\n");
        for (size_t i = 0; i < f->gpu->n_gpus; i++) {
                const struct gpu_info *g = &f->gpu->gpus[i];
                printf("  | %3u  %-36.36s %6llu MiB / %6llu MiB |\n", g->index, g->name,
                       (unsigned long long)(g->used_bytes >> 20), (unsigned long long)(g->total_bytes >> 20));
        }
        printf("  | Processes:  GPU   PID        Process name                GPU Memory |\n");
        size_t shown = 0;
        for (size_t i = 0; i < f->gpu->n_gpus; i++)
                for (size_t k = 0; k < f->gpu->gpus[i].n_procs; k++) {
                        const struct gpu_proc *p = &f->gpu->gpus[i].procs[k];
                        const struct pid_fact *pf = facts_pid(f, p->pid);
                        const char *name = pf && pf->present && pf->proc.comm ? pf->proc.comm : "No such process";
                        printf("  |             %3zu   %-10u %-27.27s %6llu MiB |\n", i, p->pid, name,
                               (unsigned long long)(p->used_bytes >> 20));
                        shown++;
                }
        if (!shown)
                printf("  |  No running processes found                                        |\n");
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

/* A stop signal ends the story early; SIGPIPE is ignored (a write fails instead). */
struct demo_signals {
        struct sigaction old_int, old_term, old_hup, old_pipe;
};

static void demo_signals_take(struct demo_signals *s)
{
        struct sigaction sa = { .sa_handler = on_demo_stop }, ign = { .sa_handler = SIG_IGN };
        sigemptyset(&sa.sa_mask);
        sigemptyset(&ign.sa_mask);
        sigaction(SIGINT, &sa, &s->old_int);
        sigaction(SIGTERM, &sa, &s->old_term);
        sigaction(SIGHUP, &sa, &s->old_hup);
        sigaction(SIGPIPE, &ign, &s->old_pipe);
}

static void demo_signals_restore(const struct demo_signals *s)
{
        sigaction(SIGINT, &s->old_int, NULL);
        sigaction(SIGTERM, &s->old_term, NULL);
        sigaction(SIGHUP, &s->old_hup, NULL);
        sigaction(SIGPIPE, &s->old_pipe, NULL);
}

/* Steps 1 to 3: the job, its kill, nvidia-smi's view. False when the story stops here. */
static bool demo_story_job(struct demo *d, unsigned mib, unsigned workers)
{
        step(1, "a training job allocates GPU memory and forks data-loader workers");
        int r = demo_job_start(d, mib, workers);
        if (r < 0) {
                cli_error("demo", r == -ECHILD   ? "the simulated job did not report its processes"
                                  : r == -ENOSYS ? "this kernel has no pidfd_open (Linux 5.3+): the demo ends its "
                                                   "processes only through pidfds, so it starts none"
                                                 : "could not start the simulated job");
                return false;
        }
        printf("  $ python train.py     (simulated: PID %d allocates %u MiB on GPU 0)\n", (int)d->procs[0].pid, mib);
        for (size_t i = 1; i < d->n_procs; i++)
                printf("    forked %s PID %d (inherits the job's /dev/nvidia* descriptors and mappings)\n",
                       d->procs[i].role, (int)d->procs[i].pid);
        printf("\n");
        smi_view(d->dir);
        if (demo_interrupted())
                return false;
        step(2, "the job is killed with kill -9");
        printf("  $ kill -9 %d\n", (int)d->procs[0].pid);
        r = demo_kill_owner(d);
        if (r < 0) {
                cli_error("demo", "could not signal the simulated job: %s", strerror(-r));
                return false;
        }
        if (demo_interrupted())
                return false;
        step(3, "nvidia-smi: the memory is still used, and the PID does not exist");
        smi_view(d->dir);
        printf("\n  The usual next steps are a reboot, or `fuser -v /dev/nvidia*` and killing by hand.\n");
        return !demo_interrupted();
}

/* The story; its exit status (EXIT_OK when scan found the ghost and reclaim got the memory
 * back). */
static int demo_story(struct demo *d, unsigned mib, unsigned workers)
{
        if (!demo_story_job(d, mib, workers))
                return EXIT_INCOMPLETE;
        step(4, "ghostvram scan names what holds the memory");
        printf("  $ ghostvram scan\n\n");
        fflush(stdout);
        const char *const scan_args[] = { "ghostvram", "scan", "--confirm", "1s", NULL };
        setenv("GHOSTVRAM_SIM", d->dir, 1);
        int sr = cli_run_self(scan_args, NULL);
        if (demo_interrupted())
                return EXIT_INCOMPLETE;
        if (sr != 1) {
                cli_error("demo", "scan did not report the ghost (exit %d)", sr);
                return EXIT_INCOMPLETE;
        }
        step(5, "ghostvram reclaim ends them safely, and the memory comes back");
        printf("  $ sudo ghostvram reclaim --yes\n\n");
        fflush(stdout);
        const char *const reclaim_args[] = { "ghostvram", "reclaim", "--yes", "--confirm", "1s", NULL };
        int rr = cli_run_self(reclaim_args, NULL);
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
        bool reader_gone = demo_reader_gone();
        if (demo_stop) {
                fprintf(stderr, "ghostvram demo: interrupted (signal %d): stopping its processes and removing %s\n",
                        (int)demo_stop, d->dir);
                status = 128 + (int)demo_stop;
        }
        int gone = demo_finish(d, keep);
        if (keep) {
                /* where the host is must not go down a closed pipe: it is left running */
                char *q = esc_shell_dup(d->dir);
                fprintf(reader_gone ? stderr : stdout,
                        "\nThe simulated host stays in %s with its processes; explore it with\n"
                        "  GHOSTVRAM_SIM=%s ghostvram scan --verbose\n", d->dir, q ? q : d->dir);
                free(q);
        } else if (gone < 0) {
                cli_error("demo", "could not remove %s: %s", d->dir, strerror(-gone));
        } else if (!demo_stop && !reader_gone) {
                printf("\nDemo over: every process it started is stopped and %s is removed.\n", d->dir);
        }
        fflush(stdout);
        if (!demo_stop && (reader_gone || demo_reader_gone())) {
                status = 128 + SIGPIPE; /* nothing said */
        } else if (!demo_stop && ferror(stdout)) {
                cli_error("demo", "could not write its story to standard output");
                status = EXIT_INCOMPLETE;
        }
        demo_signals_restore(saved);
        return status;
}

int cmd_demo(int argc, char **argv)
{
        static const struct option opts[] = {
                { "mib", required_argument, NULL, 'm' }, { "workers", required_argument, NULL, 'w' },
                { "keep", no_argument, NULL, 'k' },      { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        unsigned mib = 2048, workers = 2;
        bool keep = false;
        int opt;
        optind = 1;
        opterr = 0;     /* a bad option is said in one line (cli_bad_option) */
        while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (opt) {
                case 'm':
                        if (parse_uint_range(optarg, 1, 65536, &mib) < 0) {
                                cli_error("demo", "--mib: '%s' is not a size in MiB (1-65536)", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'w':
                        /* the story is the workers keeping the memory: at least one */
                        if (parse_uint_range(optarg, 1, DEMO_MAX_PROCS - 2, &workers) < 0) {
                                cli_error("demo", "--workers: '%s' is not a number from 1 to %d", optarg, DEMO_MAX_PROCS - 2);
                                return EXIT_USAGE;
                        }
                        break;
                case 'k': keep = true; break;
                case 'h': demo_usage(stdout); return EXIT_OK;
                default: cli_bad_option("demo", argc, argv, opt); return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                cli_error("demo", "unexpected argument '%s'; see 'ghostvram help demo'", argv[optind]);
                return EXIT_USAGE;
        }

        /* below the noise floor scan would not call the memory a ghost: refuse, in words */
        unsigned long long floor_mib = demo_floor_mib();
        if ((unsigned long long)mib <= floor_mib) {
                cli_error("demo", "--mib %u is under the noise floor of the simulated %u MiB GPU (%llu MiB, 1%% of its "
                                  "memory): scan does not call so little a ghost. Use --mib %llu or more.",
                          mib, DEMO_GPU_MIB, floor_mib, floor_mib + 1);
                return EXIT_USAGE;
        }
        /* every exit path below ends at `out`, which stops the processes and removes the host */
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
        printf("ghostvram demo — on a temporary SIMULATED host in %s (not a real GPU)\n", d.dir);
        int status = EXIT_INCOMPLETE;
        if (r < 0)
                cli_error("demo", "could not create the simulated host");
        else
                status = demo_story(&d, mib, workers);
        return demo_end(&d, keep, status, &saved);
}
