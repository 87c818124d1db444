#define _GNU_SOURCE 1 /* pipe2 */
/* demo: the ghost-memory story end to end on a temporary simulated host. Everything it starts
 * it stops, and the temporary host is removed. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "collect/sample.h"
#include "model/ledger.h"
#include "render/proc_render.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/pidfd.h"

#define DEMO_MAX_PROCS 8
#define DEMO_GPU_MIB 81559 /* the simulated GPU: an H100 80GB, as `sim init` makes it */

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

struct demo_proc {
        char role[16];
        pid_t pid;
        int pidfd;
};

static int demo_signal(const struct demo_proc *p, int sig)
{
        if (p->pidfd >= 0)
                return pidfd_signal(p->pidfd, sig);
        return -EBADF; /* never signal by a bare PID: it may have been reused */
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

static void pause_s(double s)
{
        struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };
        nanosleep(&ts, NULL);
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
        struct ledger_opts lo;
        ledger_opts_default(&lo);
        uint64_t floor_b = (uint64_t)DEMO_GPU_MIB * 1048576 / 1000 * lo.floor_permille;
        if (floor_b < lo.floor_min_bytes)
                floor_b = lo.floor_min_bytes;
        uint64_t floor_mib = (floor_b + 1048575) / 1048576;
        if ((uint64_t)mib <= floor_mib) {
                cli_error("demo", "--mib %u is under the noise floor of the simulated %u MiB GPU (%llu MiB, 1%% of its "
                                  "memory): scan does not call so little a ghost. Use --mib %llu or more.",
                          mib, DEMO_GPU_MIB, (unsigned long long)floor_mib, (unsigned long long)floor_mib + 1);
                return EXIT_USAGE;
        }

        /* every exit path below ends at `out`, which stops the processes and removes the host */
        struct sigaction sa = { .sa_handler = on_demo_stop }, ign = { .sa_handler = SIG_IGN };
        sigemptyset(&sa.sa_mask);
        sigemptyset(&ign.sa_mask);
        struct sigaction old_int, old_term, old_hup, old_pipe;
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
        sigaction(SIGHUP, &sa, &old_hup);
        sigaction(SIGPIPE, &ign, &old_pipe);

        const char *tmp = getenv("TMPDIR");
        char dir[4096];
        if (snprintf(dir, sizeof(dir), "%s/ghostvram-demo-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp") >= (int)sizeof(dir))
                snprintf(dir, sizeof(dir), "/tmp/ghostvram-demo-XXXXXX");
        if (!mkdtemp(dir)) {
                cli_error("demo", "cannot create a temporary directory %s: %s", dir, strerror(errno));
                sigaction(SIGINT, &old_int, NULL);
                sigaction(SIGTERM, &old_term, NULL);
                sigaction(SIGHUP, &old_hup, NULL);
                sigaction(SIGPIPE, &old_pipe, NULL);
                return EXIT_INCOMPLETE;
        }
        struct demo_proc procs[DEMO_MAX_PROCS];
        size_t n_procs = 0;
        int status = EXIT_INCOMPLETE;
        char mibs[16], wks[16];
        snprintf(mibs, sizeof(mibs), "%u", mib);
        snprintf(wks, sizeof(wks), "%u", workers);

        printf("ghostvram demo — on a temporary SIMULATED host in %s (not a real GPU)\n", dir);
        step(1, "a training job allocates GPU memory and forks data-loader workers");
        const char *const init_args[] = { "ghostvram", "sim", "init", dir, "--gpus", "2", NULL };
        struct buf out = BUF_INIT(4096);
        if (cli_run_self(init_args, &out) != 0) {
                cli_error("demo", "could not create the simulated host");
                buf_free(&out);
                goto out;
        }
        buf_reset(&out);
        const char *const run_args[] = { "ghostvram", "sim", "run", dir, "--gpu", "0", "--mib", mibs, "--workers", wks, NULL };
        int r = cli_run_self(run_args, &out);
        if (r != 0) {
                cli_error("demo", "could not start the simulated job");
                buf_free(&out);
                goto out;
        }
        /* "owner PID" / "worker PID" lines */
        char *save = NULL;
        for (char *line = strtok_r(out.data, "\n", &save); line && n_procs < DEMO_MAX_PROCS;
             line = strtok_r(NULL, "\n", &save)) {
                char role[16];
                int pid;
                if (sscanf(line, "%15s %d", role, &pid) != 2 || pid <= 0)
                        continue;
                struct demo_proc *p = &procs[n_procs++];
                snprintf(p->role, sizeof(p->role), "%s", role);
                p->pid = pid;
                p->pidfd = pidfd_open_fd(pid);
        }
        buf_free(&out);
        if (n_procs == 0 || strcmp(procs[0].role, "owner") != 0) {
                cli_error("demo", "the simulated job did not report its processes");
                goto out;
        }
        printf("  $ python train.py     (simulated: PID %d allocates %u MiB on GPU 0)\n", (int)procs[0].pid, mib);
        for (size_t i = 1; i < n_procs; i++)
                printf("    forked %s PID %d (inherits the job's /dev/nvidia* descriptors and mappings)\n",
                       procs[i].role, (int)procs[i].pid);
        printf("\n");
        smi_view(dir);
        if (demo_interrupted())
                goto out;

        step(2, "the job is killed with kill -9");
        printf("  $ kill -9 %d\n", (int)procs[0].pid);
        int sr_ = demo_signal(&procs[0], SIGKILL);
        if (sr_ < 0) {
                cli_error("demo", "could not signal the simulated job: %s", strerror(-sr_));
                goto out;
        }
        for (int i = 0; i < 50 && kill(procs[0].pid, 0) == 0; i++)
                pause_s(0.1); /* wait until it is gone (its parent, init, reaps it) */

        if (demo_interrupted())
                goto out;
        step(3, "nvidia-smi: the memory is still used, and the PID does not exist");
        smi_view(dir);
        printf("\n  The usual next steps are a reboot, or `fuser -v /dev/nvidia*` and killing by hand.\n");
        if (demo_interrupted())
                goto out;

        step(4, "ghostvram scan names what holds the memory");
        printf("  $ ghostvram scan\n\n");
        fflush(stdout);
        const char *const scan_args[] = { "ghostvram", "scan", "--confirm", "1s", NULL };
        setenv("GHOSTVRAM_SIM", dir, 1);
        int sr = cli_run_self(scan_args, NULL);
        if (demo_interrupted())
                goto out;
        if (sr != 1) {
                cli_error("demo", "scan did not report the ghost (exit %d)", sr);
                goto out;
        }

        step(5, "ghostvram reclaim ends them safely, and the memory comes back");
        printf("  $ sudo ghostvram reclaim --yes\n\n");
        fflush(stdout);
        const char *const reclaim_args[] = { "ghostvram", "reclaim", "--yes", "--confirm", "1s", NULL };
        int rr = cli_run_self(reclaim_args, NULL);
        printf("\n");
        smi_view(dir);
        /* the demo succeeds when scan found the ghost and reclaim got the memory back */
        status = rr == 0 ? EXIT_OK : EXIT_INCOMPLETE;
        if (rr != 0 && !demo_interrupted())
                cli_error("demo", "reclaim did not get the memory back (exit %d)", rr);

out:
        fflush(stdout);
        bool reader_gone = demo_reader_gone();
        if (demo_stop) {
                fprintf(stderr, "ghostvram demo: interrupted (signal %d): stopping its processes and removing %s\n",
                        (int)demo_stop, dir);
                status = 128 + (int)demo_stop;
        }
        for (size_t i = 0; i < n_procs; i++)
                if (!keep)
                        demo_signal(&procs[i], SIGKILL);
        /* wait (bounded) until they are gone: a pidfd becomes readable when its process exits */
        for (size_t i = 0; i < n_procs; i++) {
                if (procs[i].pidfd < 0)
                        continue;
                if (!keep) {
                        struct pollfd pf = { .fd = procs[i].pidfd, .events = POLLIN };
                        while (poll(&pf, 1, 1000) < 0 && errno == EINTR)
                                ;
                }
                close(procs[i].pidfd);
        }
        if (keep) {
                /* where the host is must not go down a closed pipe: it is left running */
                char *q = esc_shell_dup(dir);
                fprintf(reader_gone ? stderr : stdout,
                        "\nThe simulated host stays in %s with its processes; explore it with\n"
                        "  GHOSTVRAM_SIM=%s ghostvram scan --verbose\n", dir, q ? q : dir);
                free(q);
        } else {
                /* in this process (no fork of a threaded process): depth first, no symlink
                 * followed. The simulated driver's teardown watchers record the release of the
                 * contexts as the jobs die, and may write into the host meanwhile: again until it
                 * is gone (2 s at most) */
                int gone = -1;
                for (int i = 0; i < 40 && (gone = nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS)) < 0; i++) {
                        struct timespec ts = { 0, 50 * 1000000L };
                        nanosleep(&ts, NULL);
                }
                if (gone < 0)
                        cli_error("demo", "could not remove %s: %s", dir, strerror(errno));
                if (!demo_stop && !reader_gone)
                        printf("\nDemo over: every process it started is stopped and %s is removed.\n", dir);
        }
        fflush(stdout);
        if (!demo_stop && (reader_gone || demo_reader_gone())) {
                /* as `yes | head -1`: nothing said, and the status of a SIGPIPE (128+N, as for
                 * the signals above) */
                status = 128 + SIGPIPE;
        } else if (!demo_stop && ferror(stdout)) {
                cli_error("demo", "could not write its story to standard output");
                status = EXIT_INCOMPLETE;
        }
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGHUP, &old_hup, NULL);
        sigaction(SIGPIPE, &old_pipe, NULL);
        return status;
}
