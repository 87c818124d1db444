/* demo_render: the text of `ghostvram demo`'s story. */
#include "render/demo_render.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/escape.h"
#include "util/exit_status.h"
#include "util/spawn.h"

void demo_title_print(FILE *out, const char *dir)
{
        fprintf(out, "ghostvram demo — on a temporary SIMULATED host in %s (not a real GPU)\n", dir);
}

void demo_step_print(FILE *out, int n, const char *title)
{
        fprintf(out, "\n── %d. %s ", n, title);
        for (size_t i = strlen(title); i < 66; i++)
                fputs("─", out);
        fprintf(out, "\n\n");
        fflush(out);
}

void demo_job_print(FILE *out, const struct demo *d, unsigned mib)
{
        fprintf(out, "  $ python train.py     (simulated: PID %d allocates %u MiB on GPU 0)\n", (int)d->procs[0].pid,
                mib);
        for (size_t i = 1; i < d->n_procs; i++)
                fprintf(out, "    forked %s PID %d (inherits the job's /dev/nvidia* descriptors and mappings)\n",
                        d->procs[i].role, (int)d->procs[i].pid);
        fprintf(out, "\n");
}

void demo_kill_print(FILE *out, int pid)
{
        fprintf(out, "  $ kill -9 %d\n", pid);
}

void demo_stuck_print(FILE *out)
{
        fprintf(out, "\n  The usual next steps are a reboot, or `fuser -v /dev/nvidia*` and killing by hand.\n");
}

void demo_command_print(FILE *out, const char *cmdline)
{
        fprintf(out, "  $ %s\n\n", cmdline);
        fflush(out);
}

/* The process rows of nvidia-smi's view; how many there were. */
static size_t demo_smi_procs(FILE *out, const struct facts *f)
{
        size_t shown = 0;
        for (size_t i = 0; i < f->gpu->n_gpus; i++)
                for (size_t k = 0; k < f->gpu->gpus[i].n_procs; k++) {
                        const struct gpu_proc *p = &f->gpu->gpus[i].procs[k];
                        const struct pid_fact *pf = facts_pid(f, p->pid);
                        const char *name = pf && pf->present && pf->proc.comm ? pf->proc.comm : "No such process";
                        fprintf(out, "  |             %3zu   %-10u %-27.27s %6llu MiB |\n", i, p->pid, name,
                                (unsigned long long)(p->used_bytes >> 20));
                        shown++;
                }
        return shown;
}

void demo_smi_print(FILE *out, const struct facts *f)
{
        fprintf(out, "  $ nvidia-smi          (what it would print for the simulated GPUs)\n");
        fprintf(out, "  | GPU  Name                                 Memory-Usage           |\n");
        for (size_t i = 0; i < f->gpu->n_gpus; i++) {
                const struct gpu_info *g = &f->gpu->gpus[i];
                fprintf(out, "  | %3u  %-36.36s %6llu MiB / %6llu MiB |\n", g->index, g->name,
                        (unsigned long long)(g->used_bytes >> 20), (unsigned long long)(g->total_bytes >> 20));
        }
        fprintf(out, "  | Processes:  GPU   PID        Process name                GPU Memory |\n");
        if (!demo_smi_procs(out, f))
                fprintf(out, "  |  No running processes found                                        |\n");
}

void demo_kept_print(FILE *out, const char *dir)
{
        char *q = esc_shell_dup(dir);
        fprintf(out,
                "\nThe simulated host stays in %s with its processes; explore it with\n"
                "  GHOSTVRAM_SIM=%s ghostvram scan --verbose\n", dir, q ? q : dir);
        free(q);
}

void demo_over_print(FILE *out, const char *dir)
{
        fprintf(out, "\nDemo over: every process it started is stopped and %s is removed.\n", dir);
}

/* ---- the story on standard output, around run/demo_run's steps -------------------------------- */

/* One error line to error (formatted as cli_error would: at most 1023 bytes). */
static void say(demo_error_fn *error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(demo_error_fn *error, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        error(msg);
}

/* Stop here? A stop signal, a reader that went away, or output that cannot be written. */
static bool demo_interrupted(void)
{
        fflush(stdout);
        return demo_stop_signal() || ferror(stdout) || demo_reader_gone(STDOUT_FILENO);
}

/* What nvidia-smi would show for the simulated GPUs. */
static void smi_view(const char *simdir, demo_error_fn *error)
{
        struct facts *f;
        char err[1024] = "";
        int r = demo_smi_facts(simdir, &f, err, sizeof(err));
        if (r == -1)
                error(err);
        if (r < 0)
                return;
        demo_smi_print(stdout, f);
        facts_free(f);
}

/* Steps 1 to 3: the job, its kill, nvidia-smi's view. False when the story stops here. */
static bool demo_story_job(struct demo *d, unsigned mib, unsigned workers, demo_error_fn *error)
{
        demo_step_print(stdout, 1, "a training job allocates GPU memory and forks data-loader workers");
        int r = demo_job_start(d, mib, workers);
        if (r < 0) {
                error(r == -ECHILD   ? "the simulated job did not report its processes"
                      : r == -ENOSYS ? "this kernel has no pidfd_open (Linux 5.3+): the demo ends its "
                                       "processes only through pidfds, so it starts none"
                                     : "could not start the simulated job");
                return false;
        }
        demo_job_print(stdout, d, mib);
        smi_view(d->dir, error);
        if (demo_interrupted())
                return false;
        demo_step_print(stdout, 2, "the job is killed with kill -9");
        demo_kill_print(stdout, (int)d->procs[0].pid);
        r = demo_kill_owner(d);
        if (r < 0) {
                say(error, "could not signal the simulated job: %s", strerror(-r));
                return false;
        }
        if (demo_interrupted())
                return false;
        demo_step_print(stdout, 3, "nvidia-smi: the memory is still used, and the PID does not exist");
        smi_view(d->dir, error);
        demo_stuck_print(stdout);
        return !demo_interrupted();
}

int demo_story(struct demo *d, unsigned mib, unsigned workers, demo_error_fn *error)
{
        if (!demo_story_job(d, mib, workers, error))
                return EXIT_INCOMPLETE;
        demo_step_print(stdout, 4, "ghostvram scan names what holds the memory");
        demo_command_print(stdout, "ghostvram scan");
        const char *const scan_args[] = { "ghostvram", "scan", "--confirm", "1s", NULL };
        setenv("GHOSTVRAM_SIM", d->dir, 1);
        int sr = spawn_self(NULL, scan_args, NULL, false);
        if (demo_interrupted())
                return EXIT_INCOMPLETE;
        if (sr != 1) {
                say(error, "scan did not report the ghost (exit %d)", sr);
                return EXIT_INCOMPLETE;
        }
        demo_step_print(stdout, 5, "ghostvram reclaim ends them safely, and the memory comes back");
        demo_command_print(stdout, "sudo ghostvram reclaim --yes");
        const char *const reclaim_args[] = { "ghostvram", "reclaim", "--yes", "--confirm", "1s", NULL };
        int rr = spawn_self(NULL, reclaim_args, NULL, false);
        printf("\n");
        smi_view(d->dir, error);
        if (rr != 0 && !demo_interrupted())
                say(error, "reclaim did not get the memory back (exit %d)", rr);
        return rr == 0 ? EXIT_OK : EXIT_INCOMPLETE;
}

int demo_end(struct demo *d, bool keep, int status, const struct demo_signals *saved, demo_error_fn *error)
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
                say(error, "could not remove %s: %s", d->dir, strerror(-gone));
        } else if (!stop && !reader_gone) {
                demo_over_print(stdout, d->dir);
        }
        fflush(stdout);
        if (!stop && (reader_gone || demo_reader_gone(STDOUT_FILENO))) {
                status = 128 + SIGPIPE; /* nothing said */
        } else if (!stop && ferror(stdout)) {
                error("could not write its story to standard output");
                status = EXIT_INCOMPLETE;
        }
        demo_signals_restore(saved);
        return status;
}

int demo_execute(unsigned mib, unsigned workers, bool keep, demo_error_fn *error)
{
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
                char msg[8192];
                snprintf(msg, sizeof(msg), "cannot create a temporary directory in %s: %s",
                         tmp && tmp[0] == '/' ? tmp : "/tmp", strerror(-r));
                error(msg);
                demo_signals_restore(&saved);
                return EXIT_INCOMPLETE;
        }
        demo_title_print(stdout, d.dir);
        int status = EXIT_INCOMPLETE;
        if (r < 0)
                error("could not create the simulated host");
        else
                status = demo_story(&d, mib, workers, error);
        return demo_end(&d, keep, status, &saved, error);
}
