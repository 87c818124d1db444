/* demo_render: the text of `ghostvram demo`'s story. */
#include "render/demo_render.h"

#include <stdlib.h>
#include <string.h>

#include "util/escape.h"

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
