#define _GNU_SOURCE 1
/* reclaim_run, the last resorts and the poke: --reset-gpu and --reload-uvm after their checks
 * (act/escalate), --poke's new CUDA context (act/poke); each measures the memory before and
 * after. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "run/reclaim_internal.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/exit_status.h"
#include "util/i18n.h"
#include "util/stopsig.h"
#include "util/strf.h"
#include "simstate.h"

/* The checks of --reset-gpu or --reload-uvm (pure: the same facts give the same report). */
static void esc_check(const struct rc_ctx *x, struct escalate_report *esc)
{
        const struct reclaim_run_opts *o = x->o;
        bool root = geteuid() == 0;
        if (o->reset_gpu) {
                struct escalate_reset_opts eo = { .gpu = (unsigned)o->only_gpu, .force = o->force,
                                                  .simulated = o->simulated, .root = root, .self_pid = x->po.self_pid };
                escalate_reset_check(x->res, &eo, esc);
        } else {
                struct escalate_uvm_state st;
                escalate_uvm_state_read("/sys", "/proc", &st);
                struct escalate_uvm_opts eo = { .force = o->force, .simulated = o->simulated, .root = root,
                                                .self_pid = x->po.self_pid };
                escalate_uvm_check(x->res, &eo, &st, esc);
        }
}

/* Each reason of a refusal to syslog, in English whatever the reader's language (the checks
 * again with translation off). */
static void esc_syslog(const struct rc_ctx *x, const struct escalate_report *esc, const char *mode)
{
        struct escalate_report en;
        memset(&en, 0, sizeof(en));
        const struct escalate_report *e = esc;
        if (i18n_active()) {
                i18n_thread_off(true);
                esc_check(x, &en);
                i18n_thread_off(false);
                e = &en;
        }
        for (size_t i = 0; i < e->n_reasons; i++)
                syslog(LOG_NOTICE, "reclaim: %s refused: %s", mode, e->reasons[i]);
        escalate_report_clear(&en);
}

/* The GPUs watched while a last resort or the poke runs: each expects its confirmed ghost back.
 * NULL when out of memory. */
static struct recovery_gpu *ghost_watch_list(const struct scan_result *res, int only_gpu, size_t *ret_n)
{
        pid_t none = 0;
        struct recovery_gpu *rec = rc_watch_list(res, only_gpu, &none, 0, ret_n);
        for (size_t i = 0; rec && i < *ret_n; i++)
                for (size_t g = 0; g < res->n_gpus; g++)
                        if (res->gpus[g].index == rec[i].index && res->gpus[g].ghost_confirmed)
                                recovery_init(&rec[i], rec[i].index, res->gpus[g].ghost, res->gpus[g].noise_floor);
        return rec;
}

/* nvidia-smi --gpu-reset on the GPU the checks named (its bus id ends esc->command). -1 when
 * there is no nvidia-smi (the summary says so): nothing ran. */
static int run_reset(const struct rc_ctx *x, const struct escalate_report *esc, struct buf *output,
                      struct reclaim_report *rep, int *cs, char *err, size_t errlen)
{
        char smi[PATH_MAX];
        if (escalate_find_program("nvidia-smi", smi, sizeof(smi)) < 0) {
                rc_summary(rep, EXIT_INCOMPLETE, _("Cannot act: nvidia-smi is not on PATH."));
                return -1;
        }
        const char *bus = strrchr(esc->command, ' ') + 1;
        char *argv[] = { smi, (char *)"--gpu-reset", (char *)"-i", (char *)bus, NULL };
        syslog(LOG_NOTICE, "reclaim: running %s", esc->command);
        pid_t stuck = 0;
        uint64_t wait_ms = x->o->wait_ms;
        int r = escalate_run(argv, (unsigned)wait_ms, output, cs, &stuck);
        rep->esc_ran = r == 0;
        rep->esc_status = *cs;
        rep->esc_output = buf_str(output);
        /* i18n: no: err goes to syslog as it is, and syslog lines stay English */
        if (r == -EDEADLK)
                snprintf(err, errlen,
                         "the reset did not finish within %.3g s and its process (PID %d) did not end %.3g s "
                         "after SIGKILL: stuck in the driver (D state); `cat /proc/%d/stack`, `ghostvram xid`, "
                         "then a reboot",
                         (double)wait_ms / 1000.0, (int)stuck, ESCALATE_KILL_WAIT_MS / 1000.0, (int)stuck);
        else if (r < 0)
                snprintf(err, errlen, "%s", r == -ETIMEDOUT ? "the reset did not finish in time (ended with SIGKILL)" : strerror(-r));
        return 0;
}

/* What a last resort that ran came to. */
static void escalate_summary(struct reclaim_report *rep, const struct sampler *sm, int cs)
{
        if (stopsig_pending()) {
                rc_stopped(rep, sampler_elapsed(sm));
                str_setf(&rep->summary,
                         rep->esc_ran ? _("Stopped by %s after %s ran; the memory was not measured to the end.")
                                      : _("Stopped by %s after %s was started; the memory was not measured to the end."),
                         stopsig_name(rep->stopped), rep->mode);
        } else if (rep->esc_ran && cs == 0 && recovery_all_done(sm->g, sm->n))
                rc_summary(rep, EXIT_OK, _("Done: %s; memory recovered."), rep->mode);
        else
                rc_summary(rep, EXIT_FINDING,
                           rep->esc_ran && cs == 0 ? _("Partial: %s ran, but the memory did not come back.") : _("Partial: %s failed."),
                           rep->mode);
}

/* One run of a last resort or the poke: what it made and must free. */
struct esc_run {
        struct escalate_report esc;
        struct buf output;
        struct recovery_gpu *rec;
        size_t n_rec;
        struct sampler sm;
};

/* The end of a last resort or the poke: the report unless acting ran out of memory (r < 0);
 * the exit status. */
static int esc_run_end(const struct rc_ctx *x, struct esc_run *e, struct reclaim_report *rep, int r)
{
        int status = EXIT_INCOMPLETE;
        if (r == 0) {
                rc_out_report(x, rep);
                status = rep->exit_status;
        }
        rep->esc = NULL;
        rep->poke = NULL;
        rep->rec = NULL;
        escalate_report_clear(&e->esc);
        buf_free(&e->output);
        sampler_done(&e->sm);
        free(e->rec);
        return status;
}

/* The last resort itself, sampled before and after. -1: out of memory (nothing said). */
static int escalate_act(struct rc_ctx *x, struct esc_run *e, struct reclaim_report *rep)
{
        const struct reclaim_run_opts *o = x->o;
        e->rec = ghost_watch_list(x->res, o->reset_gpu ? o->only_gpu : -1, &e->n_rec);
        if (!e->rec || sampler_init(&e->sm, x, e->rec, e->n_rec) < 0)
                return -1;
        if (stopsig_pending()) {
                rc_stopped_before_acting(rep);
                return 0;
        }
        rc_out_plan(x, rep);
        sampler_tick(&e->sm, 0); /* before; NVML is shut down again after each sample */
        int cs = 0;
        char err[256] = "";
        if (o->reset_gpu) {
                if (run_reset(x, &e->esc, &e->output, rep, &cs, err, sizeof(err)) < 0)
                        return 0;
        } else {
                syslog(LOG_NOTICE, "reclaim: reloading nvidia_uvm");
                int r = escalate_uvm_reload(err, sizeof(err));
                rep->esc_ran = true;
                rep->esc_status = r < 0 ? 1 : 0;
                cs = rep->esc_status;
        }
        syslog(LOG_NOTICE, "reclaim: %s exit status %d%s%s", rep->mode, cs, err[0] ? ": " : "", err);
        sampler_finish(&e->sm, o->wait_ms);
        rep->rec = e->rec;
        rep->n_rec = e->n_rec;
        if (err[0])
                rc_note(rep, "%s", err);
        escalate_summary(rep, &e->sm, cs);
        return 0;
}

int rc_mode_escalate(struct rc_ctx *x, struct reclaim_report *rep)
{
        struct esc_run e = { .output = BUF_INIT(16384) };
        int r = 0;
        esc_check(x, &e.esc);
        rep->esc = &e.esc;
        esc_syslog(x, &e.esc, rep->mode);
        if (e.esc.refuse)
                rc_summary(rep, EXIT_INCOMPLETE, _("Refused: %s was not done (see why above)."), rep->mode);
        else if (!x->acting)
                rc_summary(rep, EXIT_OK, _("Dry run: every check passed; with --yes it runs: %s"), e.esc.command);
        else
                r = escalate_act(x, &e, rep);
        return esc_run_end(x, &e, rep, r);
}

/* ---- the poke ------------------------------------------------------------------------------------ */

/* The CUDA driver library the poke loads: --cuda-lib, the simulated one on a simulated host
 * (found as the NVML stand-in is: simstate_find_file), else libcuda.so.1 by the loader's search.
 * false when a named file is not there (the child would fail to load it). */
static bool poke_library(const struct reclaim_run_opts *o, char *out, size_t outlen)
{
        if (o->cuda_lib) {
                snprintf(out, outlen, "%s", o->cuda_lib);
                return !strchr(o->cuda_lib, '/') || access(o->cuda_lib, R_OK) == 0;
        }
        if (o->simulated) {
                if (simstate_find_file("cuda/libcuda.so.1", out, outlen) == 0)
                        return true;
                snprintf(out, outlen, "%s", "cuda/libcuda.so.1 (simulated)");
                return false;
        }
        snprintf(out, outlen, "%s", "libcuda.so.1");
        return true;
}

/* The summary of a poke that ran, by its verdict; the next step is the escalation's dry run. */
static void poke_summary(struct reclaim_report *rep, const struct reclaim_poke_info *pi, const char *gpu)
{
        switch (pi->verdict) {
        case POKE_GAVE_BACK:
                rc_summary(rep, EXIT_OK, _("The poke gave back %.0f MiB on GPU %u."), (double)pi->freed / (1 << 20), pi->index);
                return;
        case POKE_NO_LIBRARY:
                rc_summary(rep, EXIT_INCOMPLETE, _("Cannot poke: the CUDA driver library %s could not be loaded (%s)."),
                           pi->lib, pi->res.steps.error);
                return;
        case POKE_HUNG:
                rc_summary(rep, EXIT_FINDING,
                           _("The poke hung in the driver and was killed after %.3g s: the driver does not answer a new "
                             "client. Next: `ghostvram xid`, then `sudo ghostvram reclaim --reset-gpu --gpu %s` (a dry "
                             "run: what a reset needs)."), pi->res.seconds, gpu);
                return;
        case POKE_FAILED:
                rc_summary(rep, EXIT_FINDING,
                           _("The poke made no context (%s failed) and nothing changed. Next: `sudo ghostvram reclaim "
                             "--reset-gpu --gpu %s` (a dry run: what a reset needs)."),
                           poke_step_name(pi->res.steps.failed), gpu);
                return;
        case POKE_UNMEASURED:
                rc_summary(rep, EXIT_FINDING, _("The poke ran, but the driver gave no memory figure to compare."));
                return;
        case POKE_NOTHING:
        default:
                rc_summary(rep, EXIT_FINDING,
                           _("Nothing changed: the driver keeps the memory after a new context. Next: `sudo ghostvram "
                             "reclaim --reset-gpu --gpu %s` (a dry run: what a reset needs), then --reload-uvm."),
                           gpu);
                return;
        }
}

/* The poke's GPU, library and limits, and its checks (a refusal's reasons to syslog). */
static void poke_check_all(const struct rc_ctx *x, struct reclaim_poke_info *pi, char *lib, size_t liblen,
                           struct escalate_report *esc)
{
        const struct reclaim_run_opts *o = x->o;
        bool have_lib = poke_library(o, lib, liblen);
        pi->index = (unsigned)o->only_gpu;
        pi->lib = lib;
        pi->bytes = POKE_DEFAULT_BYTES;
        pi->timeout_ms = o->poke_timeout_ms;
        const struct gpu_report *gr = x->res->facts->gpu;
        for (size_t i = 0; gr && i < gr->n_gpus; i++)
                if (gr->gpus[i].index == pi->index) {
                        snprintf(pi->uuid, sizeof(pi->uuid), "%s", gr->gpus[i].uuid);
                        snprintf(pi->pci_bus_id, sizeof(pi->pci_bus_id), "%s", gr->gpus[i].pci_bus_id);
                }
        struct poke_check_opts co = { .gpu = pi->index, .force = o->force, .have_lib = have_lib, .lib = lib };
        poke_check(x->res, &co, esc);
        if (!pi->uuid[0] && !esc->refuse) {
                esc->refuse = true;
                str_setf(&esc->reasons[esc->n_reasons++], _("NVML gives no UUID for GPU %u: the poke cannot name it to CUDA"),
                         pi->index);
        }
        for (size_t i = 0; i < esc->n_reasons; i++)
                syslog(LOG_NOTICE, "reclaim: poke refused: %s", esc->reasons[i]);
}

/* The child run, sampled before and after: --wait counts from the end of the poke. -1: out of
 * memory (nothing said). */
static int poke_act(struct rc_ctx *x, struct esc_run *e, struct reclaim_poke_info *pi, struct reclaim_report *rep)
{
        const struct reclaim_run_opts *o = x->o;
        e->rec = ghost_watch_list(x->res, o->only_gpu, &e->n_rec);
        if (!e->rec || sampler_init(&e->sm, x, e->rec, e->n_rec) < 0)
                return -1;
        char exe[PATH_MAX];
        ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (el < 0) {
                rc_summary(rep, EXIT_INCOMPLETE, "Cannot act: /proc/self/exe: %s.", strerror(errno));
                return 0;
        }
        exe[el] = '\0';
        rc_out_plan(x, rep);
        sampler_tick(&e->sm, 0); /* before */
        syslog(LOG_NOTICE, "reclaim: poke of GPU %u (%s) with %s", pi->index, pi->uuid, pi->lib);
        struct poke_run_opts ro = { .exe = exe, .lib = pi->lib, .uuid = pi->uuid, .bytes = pi->bytes,
                                    .timeout_ms = pi->timeout_ms };
        int r = poke_run(&ro, &pi->res);
        if (r < 0) {
                rc_summary(rep, EXIT_INCOMPLETE, "Cannot act: the poke could not start: %s.", strerror(-r));
                return 0;
        }
        pi->ran = true;
        rep->esc_ran = true;
        rep->esc_status = pi->res.exit_status;
        syslog(LOG_NOTICE, "reclaim: poke of GPU %u: %s after %.2f s", pi->index,
               pi->res.timed_out ? "killed at the deadline" : pi->res.steps_known && pi->res.steps.failed < 0 ? "done" : "failed",
               pi->res.seconds);
        e->sm.t0 = monotonic_ms();
        sampler_finish(&e->sm, o->wait_ms);
        rep->rec = e->rec;
        rep->n_rec = e->n_rec;
        pi->verdict = poke_judge(&pi->res, e->n_rec ? &e->rec[0] : NULL, &pi->freed);
        if (stopsig_pending()) {
                rc_stopped(rep, sampler_elapsed(&e->sm));
                str_setf(&rep->summary, _("Stopped by %s after the poke; the memory was not measured to the end."),
                         stopsig_name(rep->stopped));
        } else {
                poke_summary(rep, pi, o->gpu_spec);
        }
        return 0;
}

/* --poke: check, then (with --yes) sample, run the child, sample until the memory is back or
 * --wait ends, and judge. */
int rc_mode_poke(struct rc_ctx *x, struct reclaim_report *rep)
{
        struct esc_run e = { .output = BUF_INIT(64) };
        struct reclaim_poke_info pi;
        memset(&pi, 0, sizeof(pi));
        char lib[PATH_MAX];
        int r = 0;
        poke_check_all(x, &pi, lib, sizeof(lib), &e.esc);
        rep->esc = &e.esc;
        rep->poke = &pi;
        if (e.esc.refuse)
                rc_summary(rep, EXIT_INCOMPLETE, _("Refused: the poke was not done (see why above)."));
        else if (!x->acting)
                rc_summary(rep, EXIT_OK,
                           _("Dry run: every check passed; with --yes a child makes a CUDA context on GPU %u, allocates "
                             "%.0f MiB, frees it, and the memory is measured before and after."),
                           pi.index, (double)pi.bytes / (1 << 20));
        else
                r = poke_act(x, &e, &pi, rep);
        return esc_run_end(x, &e, rep, r);
}
