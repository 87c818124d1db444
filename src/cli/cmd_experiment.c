#define _GNU_SOURCE 1 /* environ */
/* experiment: reproduce the incident on purpose and measure it. A job allocates GPU memory and
 * forks workers; it is killed; the memory is sampled — what stays, for how long, what the
 * kernel logged — and, with --reclaim, the same after `ghostvram reclaim --yes`. Every process
 * it starts is stopped at the end. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "act/experiment.h"
#include "act/reclaim_act.h"
#include "cli/cli.h"
#include "util/json_util.h"
#include "render/reclaim_render.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/spawn.h"
#include "util/stopsig.h"

#define EXP_MAX_WORKERS 64
#define EXP_CUDA_CHILD "--cuda-job-child" /* internal: the job process of a real host */
#define EXP_MAX_REPEAT 100
#define EXP_MAX_SAMPLES 20000
#define SAMPLE_MS 50
#define MIB (1024ull * 1024ull)

/* SIGINT, SIGTERM, SIGHUP: util/stopsig's flag; the runs so far are reported, exit 128+N */
#define stop_requested stopsig_pending()

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

struct exp_opts {
        struct cli_common c;
        unsigned gpu, workers, repeat;
        uint64_t mib;
        int signal;
        bool reclaim;
        uint64_t wait_ms, confirm_ms;
};

/* One observation phase: used memory sampled until it is back at the baseline or the timeout. */
struct phase {
        bool measured;
        uint64_t residual;
        bool recovered;
        double recovery_s;
        json_t *samples;        /* [[seconds, used_bytes], ...] */
};

struct exp_run {
        pid_t owner;
        pid_t workers[EXP_MAX_WORKERS];
        unsigned n_workers;
        bool owner_is_child;
        int pidfds[EXP_MAX_WORKERS + 1];
        unsigned n_pidfds;
        uint64_t baseline, allocated;
        struct phase after_kill, after_reclaim;
        struct exp_kernel kernel;
        json_t *kernel_events;
        bool kernel_read;
        int reclaim_status;
        json_t *reclaim_doc;
        bool reclaimed;
        bool stopped;           /* a stop signal cut it short: not in the statistics */
};

/* ---- pieces ------------------------------------------------------------------------------------- */

static void sleep_ms(unsigned ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static int used_now(const struct gpu_opts *go, unsigned gpu, uint64_t *ret)
{
        struct gpu_report *rep = NULL;
        int r = gpu_collect(go, &rep);
        if (r < 0)
                return r;
        r = -ENODEV;
        for (size_t i = 0; i < rep->n_gpus; i++)
                if (rep->gpus[i].index == gpu && rep->gpus[i].memory_known) {
                        *ret = rep->gpus[i].used_bytes;
                        r = 0;
                }
        gpu_report_free(rep);
        return r;
}

/* Sample from t0 (monotonic ms) until used <= baseline + tolerance, or the timeout: the last
 * sample of a phase that did not recover is one taken at or after the timeout (the clock read
 * before the query, the time the sample is labelled with, decides — not the clock after a slow
 * query), so "not within N s" always rests on a sample at N s. */
static void observe(const struct gpu_opts *go, unsigned gpu, uint64_t baseline, uint64_t tol, uint64_t t0,
                    uint64_t timeout_ms, struct phase *ph)
{
        ph->measured = true;
        /* a long --wait is sampled less often, so that its samples never run out before it */
        uint64_t every = timeout_ms / (EXP_MAX_SAMPLES / 2) > SAMPLE_MS ? timeout_ms / (EXP_MAX_SAMPLES / 2) : SAMPLE_MS;
        ph->samples = json_array();
        for (unsigned n = 0; n < EXP_MAX_SAMPLES && !stop_requested; n++) {
                uint64_t used, elapsed = monotonic_ms() - t0;
                double t = (double)elapsed / 1000.0;
                if (used_now(go, gpu, &used) == 0) {
                        ph->residual = used > baseline ? used - baseline : 0;
                        json_t *s = json_array();
                        json_array_append_new(s, json_real(t));
                        json_array_append_new(s, json_integer((json_int_t)used));
                        json_array_append_new(ph->samples, s);
                        if (ph->residual <= tol) {
                                ph->recovered = true;
                                ph->recovery_s = t;
                                return;
                        }
                }
                if (elapsed >= timeout_ms)
                        return;
                uint64_t now = monotonic_ms() - t0;
                if (now < timeout_ms)
                        sleep_ms(timeout_ms - now < every ? timeout_ms - now : every);
        }
}

static int parse_job_lines(char *text, struct exp_run *run, char *err, size_t errlen)
{
        char *save = NULL;
        bool ready = false;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                unsigned pid;
                if (strncmp(line, "owner ", 6) == 0 && parse_uint_range(line + 6, 1, 0x7fffffff, &pid) == 0)
                        run->owner = (pid_t)pid;
                else if (strncmp(line, "worker ", 7) == 0 && parse_uint_range(line + 7, 1, 0x7fffffff, &pid) == 0 &&
                         run->n_workers < EXP_MAX_WORKERS)
                        run->workers[run->n_workers++] = (pid_t)pid;
                else if (strcmp(line, "ready") == 0)
                        ready = true;
                else if (strncmp(line, "error ", 6) == 0)
                        snprintf(err, errlen, "%s", line + 6);
        }
        return run->owner > 0 && (ready || !err[0]) ? 0 : -EIO;
}

/* Start the job: the simulated application, or a CUDA child on a real host. */
static int start_job(const struct exp_opts *o, struct exp_run *run, char *err, size_t errlen)
{
        char gpu_s[16], mib_s[32], wk_s[16];
        snprintf(gpu_s, sizeof(gpu_s), "%u", o->gpu);
        snprintf(mib_s, sizeof(mib_s), "%llu", (unsigned long long)o->mib);
        snprintf(wk_s, sizeof(wk_s), "%u", o->workers);
        if (o->c.simulated) {
                struct buf out = BUF_INIT(1 << 16);
                const char *const args[] = { "ghostvram", "sim", "run", o->c.sim_dir, "--gpu", gpu_s, "--mib", mib_s,
                                             "--workers", wk_s, NULL };
                int r = cli_run_self(args, &out);
                if (r != 0) {
                        snprintf(err, errlen, "the simulated job did not start (ghostvram sim run exit %d; see %s/jobs.log)",
                                 r, o->c.sim_dir);
                        buf_free(&out);
                        return -EIO;
                }
                r = out.data ? parse_job_lines(out.data, run, err, errlen) : -EIO;
                buf_free(&out);
                return r;
        }
        /* a fresh ghostvram runs the CUDA job (dlopen, cuInit, fork of workers): this process has
         * threads, so its child runs nothing but async-signal-safe calls until execve; the
         * arguments and the environment are made before the fork */
        char exe[4096];
        ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (el < 0)
                return -errno;
        exe[el] = '\0';
        static const char *const names[] = { "CUDA_DEVICE_ORDER" };
        static const char *const values[] = { "PCI_BUS_ID" }; /* CUDA ordinals = NVML indexes */
        char **envp = NULL;
        if (env_build(environ, names, values, 1, &envp) < 0)
                return -ENOMEM;
        char a0[] = "ghostvram", a1[] = "experiment", a2[] = EXP_CUDA_CHILD;
        char *const cargv[] = { a0, a1, a2, gpu_s, mib_s, wk_s, NULL };
        int p[2];
        pid_t pid;
        int fr = fork_pipe(p, &pid);
        if (fr < 0) {
                env_free(envp);
                return fr;
        }
        if (pid == 0) {
                /* the report pipe becomes fd 3, kept across exec */
                if (p[1] == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(p[1], 3) < 0)
                        _exit(126);
                execve(exe, cargv, envp);
                _exit(127);
        }
        env_free(envp);
        run->owner_is_child = true;
        struct buf out = BUF_INIT(1 << 16);
        unsigned long long deadline = monotonic_ms() + 120000; /* cuInit can take a while */
        while (fd_read_deadline(p[0], &out, deadline) == -EINTR && !stop_requested)
                ;
        close(p[0]);
        int r = out.data ? parse_job_lines(out.data, run, err, errlen) : -EIO;
        buf_free(&out);
        if (r < 0 && !err[0])
                snprintf(err, errlen, "the CUDA job did not report within 120 s");
        if (run->owner <= 0)
                run->owner = pid; /* so that it is stopped */
        return r;
}

static void open_pidfds(const struct reclaim_sys *s, struct exp_run *run)
{
        int fd = s->pidfd_open(s->ctx, run->owner);
        run->pidfds[run->n_pidfds++] = fd;
        for (unsigned i = 0; i < run->n_workers; i++)
                run->pidfds[run->n_pidfds++] = s->pidfd_open(s->ctx, run->workers[i]);
}

/* Stop every process of the run (through pidfds) and reap the one that is our child. */
/* SIGKILL to every process the run started; returns how many were not seen to end within 2 s
 * each (a task in D state ends only when its driver call returns). */
static unsigned stop_job(const struct reclaim_sys *s, struct exp_run *run)
{
        unsigned left = 0;
        for (unsigned i = 0; i < run->n_pidfds; i++)
                if (run->pidfds[i] >= 0)
                        s->send_signal(s->ctx, run->pidfds[i], SIGKILL);
        for (unsigned i = 0; i < run->n_pidfds; i++) {
                if (run->pidfds[i] < 0)
                        continue;
                /* 2 s in all: a signal (a second SIGHUP from timeout(1)'s process group, a ^C)
                 * wakes the wait early, and is no reason to report it left */
                bool gone = false;
                uint64_t until = s->now_ms(s->ctx) + 2000, now;
                while (!gone && (now = s->now_ms(s->ctx)) < until)
                        s->wait_exit(s->ctx, &run->pidfds[i], 1, &gone, (unsigned)(until - now));
                left += !gone;
                s->close_fd(s->ctx, run->pidfds[i]);
                run->pidfds[i] = -1;
        }
        if (run->owner_is_child && run->owner > 0)
                while (waitpid(run->owner, NULL, 0) < 0 && errno == EINTR)
                        ;
        run->owner_is_child = false;
        return left;
}

static void read_kernel(const struct exp_opts *o, struct xid_list *out, bool *ret_ok)
{
        struct xid_source_opts ko = { .sim_dir = o->c.simulated ? o->c.sim_dir : NULL, .proc_root = "/proc" };
        char err[KMSG_ERR_MAX];
        *ret_ok = xid_collect(&ko, out, NULL, err, sizeof(err), NULL) == 0;
}

/* `ghostvram reclaim --yes --gpu N --pid W1,W2...` as a separate process, restricted to the
 * workers this run started (never another job's processes); its JSON kept. */
static int run_reclaim(const struct exp_opts *o, struct exp_run *run)
{
        if (run->n_workers == 0)
                return 0; /* nothing of ours holds the memory: killing the owner was all */
        char pids_s[EXP_MAX_WORKERS * 12 + 1];
        size_t pl = 0;
        pids_s[0] = '\0';
        for (unsigned i = 0; i < run->n_workers; i++)
                pl += (size_t)snprintf(pids_s + pl, sizeof(pids_s) - pl, "%s%d", i ? "," : "", (int)run->workers[i]);
        char gpu_s[16], confirm_s[32], wait_s[32], grace_s[32], call_s[32];
        snprintf(gpu_s, sizeof(gpu_s), "%u", o->gpu);
        snprintf(grace_s, sizeof(grace_s), "%llums", (unsigned long long)(o->wait_ms > 4000 ? 2000 : o->wait_ms / 2));
        snprintf(confirm_s, sizeof(confirm_s), "%llums", (unsigned long long)o->confirm_ms);
        snprintf(wait_s, sizeof(wait_s), "%llums", (unsigned long long)o->wait_ms);
        snprintf(call_s, sizeof(call_s), "%ums", o->c.timeout_ms);
        const char *args[20] = { "ghostvram", "reclaim", "--yes", "--json", "--gpu", gpu_s, "--confirm", confirm_s,
                                 "--grace", grace_s, "--wait", wait_s, "--call-timeout", call_s, "--pid", pids_s };
        size_t n = 16;
        if (o->c.nvml_lib && !o->c.simulated) {
                args[n++] = "--nvml-lib";
                args[n++] = o->c.nvml_lib;
        }
        args[n] = NULL;
        struct buf out = BUF_INIT(8 << 20);
        run->reclaim_status = cli_run_self_stoppable(args, &out); /* a stop reaches reclaim: it reports */
        run->reclaimed = true;
        json_error_t e;
        run->reclaim_doc = out.data ? json_loads(out.data, 0, &e) : NULL;
        buf_free(&out);
        return run->reclaim_status;
}

/* ---- output ------------------------------------------------------------------------------------- */

static json_t *phase_json(const struct phase *ph)
{
        if (!ph->measured)
                return json_null();
        json_t *o = json_object();
        json_set(o, "residual_bytes", json_integer((json_int_t)ph->residual));
        json_set(o, "recovered", json_boolean(ph->recovered));
        json_set(o, "recovery_seconds", ph->recovered ? json_real(ph->recovery_s) : json_null());
        json_set(o, "samples", json_incref(ph->samples));
        return o;
}

/* median, min and max of the runs, each times scale (MiB to bytes, or 1) */
static json_t *stats_json(const struct exp_stats *s, double scale)
{
        if (!s->n)
                return json_null();
        json_t *o = json_object();
        json_set(o, "median", json_real(s->median * scale));
        json_set(o, "min", json_real(s->min * scale));
        json_set(o, "max", json_real(s->max * scale));
        json_set(o, "n", json_integer((json_int_t)s->n));
        return o;
}

struct exp_summary {
        struct exp_stats residual_mib, recovery_s;
        size_t recovered, runs;
        unsigned xid45, errors;
};

static void summarise(const struct exp_run *runs, size_t n, bool reclaim, struct exp_summary *ret)
{
        memset(ret, 0, sizeof(*ret));
        double res[EXP_MAX_REPEAT], rec[EXP_MAX_REPEAT];
        size_t nr = 0, nc = 0;
        for (size_t i = 0; i < n; i++) {
                const struct phase *ph = reclaim ? &runs[i].after_reclaim : &runs[i].after_kill;
                if (!ph->measured || runs[i].stopped)
                        continue;
                res[nr++] = (double)ph->residual / (double)MIB;
                if (ph->recovered)
                        rec[nc++] = ph->recovery_s;
                ret->xid45 += runs[i].kernel.xid45;
                ret->errors += runs[i].kernel.errors;
        }
        exp_stats_of(res, nr, &ret->residual_mib);
        exp_stats_of(rec, nc, &ret->recovery_s);
        ret->recovered = nc;
        ret->runs = nr;
}

/* "median [min–max]" (or the median alone) with `decimals` digits and a unit. */
static void stats_text(char *out, size_t n, const struct exp_stats *s, int decimals, const char *unit, bool spread)
{
        if (spread)
                snprintf(out, n, "%.*f [%.*f–%.*f]%s", decimals, s->median, decimals, s->min, decimals, s->max, unit);
        else
                snprintf(out, n, "%.*f%s", decimals, s->median, unit);
}

static void table_row(const struct exp_opts *o, const char *label, const struct exp_summary *s, bool spread,
                      const char *kernel)
{
        char res[128], rec[128];
        stats_text(res, sizeof(res), &s->residual_mib, 0, "", spread);
        if (s->recovered == s->runs && s->runs)
                stats_text(rec, sizeof(rec), &s->recovery_s, 3, " s", spread);
        else if (s->recovered)
                snprintf(rec, sizeof(rec), "%zu of %zu runs", s->recovered, s->runs);
        else
                snprintf(rec, sizeof(rec), "— (not within %.3g s)", (double)o->wait_ms / 1000.0);
        printf("  %-26s %-22s %-28s %s\n", label, res, rec, kernel);
}

static void table(const struct exp_opts *o, const struct exp_run *runs, size_t n)
{
        struct exp_summary k, r;
        summarise(runs, n, false, &k);
        summarise(runs, n, true, &r);
        const char *sn = reclaim_signal_name(o->signal);
        printf("ghostvram experiment: GPU %u, a job of %llu MiB with %u worker%s, killed with SIG%s; %zu run%s%s\n\n",
               o->gpu, (unsigned long long)o->mib, o->workers, o->workers == 1 ? "" : "s", sn ? sn : "?", n,
               n == 1 ? "" : "s", n > 1 ? " (median [min–max])" : "");
        printf("  %-26s %-22s %-28s %s\n", "", "residual MiB", "memory back after", "kernel");
        char kern[64], label[40];
        snprintf(label, sizeof(label), "after kill -%s", sn ? sn : "?");
        snprintf(kern, sizeof(kern), "Xid 45: %u, errors: %u", k.xid45, k.errors);
        table_row(o, label, &k, n > 1, kern);
        if (o->reclaim)
                table_row(o, "after ghostvram reclaim", &r, n > 1, "");
        bool any_kernel = false;
        for (size_t i = 0; i < n; i++)
                any_kernel |= runs[i].kernel_read;
        printf("\n  residual: used memory above the baseline before the job; 'memory back after' counts from\n"
               "  the kill (the reclaim row: from reclaim's first signal, its own measurement).\n");
        if (!any_kernel)
                printf("  kernel: the kernel log could not be read (not root?); no events counted.\n");
        else
                printf("  kernel: Xid 45 is what killing a process with GPU work logs; errors are every other Xid\n"
                       "  or driver error logged during the run.\n");
}

static json_t *experiment_json(const struct exp_opts *o, const struct exp_run *runs, size_t n)
{
        json_t *doc = json_object();
        json_set(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_set(doc, "command", json_string("experiment"));
        json_set(doc, "simulated", json_boolean(o->c.simulated));
        json_set(doc, "gpu_index", json_integer(o->gpu));
        json_set(doc, "allocation_bytes", json_integer((json_int_t)(o->mib * MIB)));
        json_set(doc, "worker_count", json_integer(o->workers));
        const char *sn = reclaim_signal_name(o->signal);
        json_set(doc, "signal", sn ? json_string(sn) : json_null());
        json_set(doc, "reclaim", json_boolean(o->reclaim));
        json_set(doc, "repeat", json_integer(o->repeat));
        json_set(doc, "wait_seconds", json_real((double)o->wait_ms / 1000.0));
        json_t *ra = json_array();
        for (size_t i = 0; i < n; i++) {
                const struct exp_run *r = &runs[i];
                json_t *j = json_object();
                json_set(j, "run", json_integer((json_int_t)i + 1));
                json_set(j, "stopped", json_boolean(r->stopped));
                json_set(j, "owner_pid", json_integer(r->owner));
                json_t *w = json_array();
                for (unsigned k = 0; k < r->n_workers; k++)
                        json_array_append_new(w, json_integer(r->workers[k]));
                json_set(j, "worker_pids", w);
                json_set(j, "baseline_bytes", json_integer((json_int_t)r->baseline));
                json_set(j, "allocated_bytes", json_integer((json_int_t)r->allocated));
                json_set(j, "after_kill", phase_json(&r->after_kill));
                json_t *kj = json_object();
                json_set(kj, "read", json_boolean(r->kernel_read));
                json_set(kj, "xid45_count", json_integer(r->kernel.xid45));
                json_set(kj, "error_count", json_integer(r->kernel.errors));
                json_set(kj, "events", r->kernel_events ? json_incref(r->kernel_events) : json_array());
                json_set(j, "kernel", kj);
                if (r->reclaimed) {
                        json_t *rj = phase_json(&r->after_reclaim);
                        json_set(rj, "reclaim_exit_status", json_integer(r->reclaim_status));
                        json_t *g = NULL, *gs = r->reclaim_doc ? json_object_get(r->reclaim_doc, "gpus") : NULL;
                        size_t gi;
                        json_t *gv;
                        json_array_foreach(gs, gi, gv)
                                if (json_integer_value(json_object_get(gv, "index")) == (json_int_t)o->gpu)
                                        g = gv;
                        json_t *rs = g ? json_object_get(g, "recovery_seconds") : NULL;
                        json_set(rj, "reclaim_recovery_seconds", rs ? json_incref(rs) : json_null());
                        json_t *acts = r->reclaim_doc ? json_object_get(r->reclaim_doc, "actions") : NULL;
                        json_set(rj, "reclaim_actions", acts ? json_incref(acts) : json_array());
                        json_set(j, "after_reclaim", rj);
                } else {
                        json_set(j, "after_reclaim", json_null());
                }
                json_array_append_new(ra, j);
        }
        json_set(doc, "runs", ra);
        json_t *sum = json_object();
        for (int phase = 0; phase < (o->reclaim ? 2 : 1); phase++) {
                struct exp_summary s;
                summarise(runs, n, phase == 1, &s);
                json_t *p = json_object();
                json_set(p, "residual_bytes_stats", stats_json(&s.residual_mib, (double)MIB));
                json_set(p, "recovery_seconds_stats", stats_json(&s.recovery_s, 1.0));
                json_set(p, "recovered_runs", json_integer((json_int_t)s.recovered));
                json_set(p, "run_count", json_integer((json_int_t)s.runs));
                if (phase == 0) {
                        json_set(p, "xid45_count", json_integer(s.xid45));
                        json_set(p, "kernel_error_count", json_integer(s.errors));
                }
                json_set(sum, phase ? "after_reclaim" : "after_kill", p);
        }
        json_set(doc, "summary", sum);
        const char *stop = reclaim_signal_name(stopsig_pending());
        json_set(doc, "stopped_by", stopsig_pending() && stop ? json_string(stop) : json_null());
        return doc;
}

/* ---- the command ---------------------------------------------------------------------------------- */

static int one_run(const struct exp_opts *o, const struct reclaim_sys *s, const struct gpu_opts *go, struct exp_run *run,
                   char *err, size_t errlen)
{
        uint64_t tol = (o->mib * MIB) / 10;
        if (used_now(go, o->gpu, &run->baseline) < 0) {
                snprintf(err, errlen, "GPU %u: no memory figures from the driver", o->gpu);
                return -ENODEV;
        }
        int r = start_job(o, run, err, errlen);
        if (run->owner > 0)
                open_pidfds(s, run);
        if (r < 0)
                return r;
        /* the allocation shows */
        uint64_t used = run->baseline;
        for (int i = 0; i < 200 && !stop_requested; i++) {
                if (used_now(go, o->gpu, &used) == 0 && used >= run->baseline + o->mib * MIB - tol)
                        break;
                sleep_ms(SAMPLE_MS);
        }
        run->allocated = used > run->baseline ? used - run->baseline : 0;
        struct xid_list kb = { 0 }, ka = { 0 };
        bool kb_ok = false, ka_ok = false;
        read_kernel(o, &kb, &kb_ok);

        /* kill the job's owner, as a scheduler or the OOM killer would */
        uint64_t t0 = monotonic_ms();
        if (run->pidfds[0] >= 0 && s->send_signal(s->ctx, run->pidfds[0], o->signal) == 0) {
                bool gone = false;
                s->wait_exit(s->ctx, &run->pidfds[0], 1, &gone, 5000);
                if (run->owner_is_child && gone) {
                        while (waitpid(run->owner, NULL, 0) < 0 && errno == EINTR)
                                ;
                        run->owner_is_child = false;
                }
        }
        observe(go, o->gpu, run->baseline, tol, t0, o->wait_ms, &run->after_kill);
        read_kernel(o, &ka, &ka_ok);
        run->kernel_read = kb_ok && ka_ok;
        if (run->kernel_read) {
                exp_kernel_delta(&kb, &ka, &run->kernel);
                run->kernel_events = json_array();
                for (size_t i = 0; i < run->kernel.n_new && i < 50; i++)
                        json_array_append_new(run->kernel_events, xid_event_to_json(&run->kernel.first_new[i]));
        }
        xid_list_free(&kb);
        xid_list_free(&ka);
        if (o->reclaim && !stop_requested) {
                run_reclaim(o, run);
                observe(go, o->gpu, run->baseline, tol, monotonic_ms(), o->wait_ms, &run->after_reclaim);
                /* the reclaim's own measurement is the recovery time: it starts at its first signal */
                json_t *gs = run->reclaim_doc ? json_object_get(run->reclaim_doc, "gpus") : NULL;
                size_t gi;
                json_t *gv;
                json_array_foreach(gs, gi, gv) {
                        json_t *rs = json_object_get(gv, "recovery_seconds");
                        if (json_integer_value(json_object_get(gv, "index")) == (json_int_t)o->gpu && json_is_number(rs) &&
                            run->after_reclaim.recovered)
                                run->after_reclaim.recovery_s = json_number_value(rs);
                }
        }
        return 0;
}

static int experiment_main(int argc, char **argv);

/* With --json every error is JSON on stdout too (the message stays on stderr). */
int cmd_experiment(int argc, char **argv)
{
        int status = experiment_main(argc, argv);
        if (cli_wants_json(argc, argv))
                cli_json_error_if_silent("experiment", status);
        return status;
}

static int experiment_main(int argc, char **argv)
{
        /* the CUDA job of a real host, run by start_job in a fresh process: report fd 3 */
        if (argc == 5 && strcmp(argv[1], EXP_CUDA_CHILD) == 0) {
                unsigned gpu, workers;
                uint64_t mib;
                if (parse_uint_range(argv[2], 0, 1023, &gpu) < 0 || parse_u64(argv[3], &mib) < 0 ||
                    parse_uint_range(argv[4], 0, EXP_MAX_WORKERS, &workers) < 0)
                        return EXIT_USAGE;
                cuda_job_main(gpu, mib, workers, 3);
        }
        static const struct option opts[] = {
                { "gpu", required_argument, NULL, 'g' },     { "mib", required_argument, NULL, 'm' },
                { "workers", required_argument, NULL, 'w' }, { "signal", required_argument, NULL, 's' },
                { "reclaim", no_argument, NULL, 'r' },        { "repeat", required_argument, NULL, 'R' },
                { "wait", required_argument, NULL, 'W' },    { "confirm", required_argument, NULL, 'C' },
                CLI_COMMON_LONGOPTS,
                { "help", no_argument, NULL, 'h' },          { 0 },
        };
        struct exp_opts o;
        memset(&o, 0, sizeof(o));
        cli_common_init(&o.c, EXP_ACCEPTS);
        o.c.timeout_now = "--wait (how long to wait for the memory each time)";
        o.mib = 1024;
        o.workers = 2;
        o.repeat = 1;
        o.signal = SIGKILL;
        o.wait_ms = 10000;
        o.confirm_ms = 2000;
        const char *cmd = "experiment";
        const char *gpu_spec = NULL;
        int opt;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (opt) {
                case 'h': experiment_usage(stdout); return EXIT_OK;
                case 'g':
                        if (cli_gpu_spec_check(optarg) < 0) {
                                cli_error(cmd, "--gpu: '%s' is not a GPU index, UUID or PCI bus id", optarg);
                                return EXIT_USAGE;
                        }
                        gpu_spec = optarg;
                        continue;
                case 'm':
                        if (parse_size_mib(optarg, &o.mib) < 0 || o.mib == 0 || o.mib > (1u << 24)) {
                                cli_error(cmd, "--mib: '%s' is not a size from 1 MiB to 16 TiB", optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                case 'w':
                        if (parse_uint_range(optarg, 0, EXP_MAX_WORKERS, &o.workers) < 0) {
                                cli_error(cmd, "--workers: '%s' is not a number from 0 to %d", optarg, EXP_MAX_WORKERS);
                                return EXIT_USAGE;
                        }
                        continue;
                case 's':
                        if (reclaim_signal_parse(optarg, &o.signal) < 0) {
                                cli_error(cmd, "--signal: '%s' is not one of KILL, TERM, INT, HUP, QUIT, USR1, USR2", optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                case 'r': o.reclaim = true; continue;
                case 'R':
                        if (parse_uint_range(optarg, 1, EXP_MAX_REPEAT, &o.repeat) < 0) {
                                cli_error(cmd, "--repeat: '%s' is not a number from 1 to %d", optarg, EXP_MAX_REPEAT);
                                return EXIT_USAGE;
                        }
                        continue;
                case 'W':
                        if (parse_duration_ms(optarg, &o.wait_ms) < 0 || o.wait_ms == 0 || o.wait_ms > 3600000) {
                                cli_error(cmd, "--wait: '%s' is not a duration between 1ms and 1h", optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                case 'C':
                        if (parse_duration_ms(optarg, &o.confirm_ms) < 0 || o.confirm_ms > 600000) {
                                cli_error(cmd, "--confirm: '%s' is not a duration up to 10m", optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                default:
                        break;
                }
                int r = cli_common_option(&o.c, opt, optarg, cmd);
                if (r <= 0) {
                        if (r == 0) {
                                experiment_usage(stderr);
                                cli_error(cmd, "invalid option '%s' (see --help)", argv[optind - 1]);
                        }
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                cli_error(cmd, "unexpected argument '%s' (see --help)", argv[optind]);
                return EXIT_USAGE;
        }
        if (cli_common_finish(&o.c, cmd) < 0)
                return EXIT_USAGE;
        /* --gpu as every command takes it: an index, a UUID or a PCI bus id */
        int gpu_index;
        int gr = cli_gpu_resolve(&o.c, gpu_spec, false, &gpu_index, cmd);
        if (gr != EXIT_OK)
                return gr;
        if (gpu_index >= 0)
                o.gpu = (unsigned)gpu_index;

        struct gpu_opts go;
        cli_common_gpu_opts(&o.c, &go);
        go.memory_only = true;
        struct gpu_report *probe = NULL;
        if (gpu_collect(&go, &probe) < 0 || !probe->driver_present) {
                cli_error(cmd, "%s: the experiment needs an NVIDIA GPU, or a simulated host: "
                               "`ghostvram sim init /tmp/gpu && GHOSTVRAM_SIM=/tmp/gpu ghostvram experiment`",
                          probe && probe->error[0] ? probe->error : "no NVIDIA driver on this host");
                gpu_report_free(probe);
                return EXIT_INCOMPLETE;
        }
        if (o.gpu >= probe->n_gpus) {
                cli_error(cmd, "--gpu %u: this host has %zu GPU%s", o.gpu, probe->n_gpus, probe->n_gpus == 1 ? "" : "s");
                gpu_report_free(probe);
                return EXIT_USAGE;
        }
        gpu_report_free(probe);

        struct stopsig_saved saved_signals;
        stopsig_catch(&saved_signals);
        struct reclaim_sys sys;
        reclaim_sys_real(&sys, "/proc");
        struct exp_run *runs = calloc(o.repeat, sizeof(*runs));
        if (!runs)
                return EXIT_INCOMPLETE;
        int status = EXIT_OK;
        size_t done = 0;
        unsigned left = 0;      /* processes it started that did not end when stopped */
        char err[320] = "";
        for (unsigned i = 0; i < o.repeat && !stop_requested; i++) {
                struct exp_run *run = &runs[i];
                for (unsigned k = 0; k < EXP_MAX_WORKERS + 1; k++)
                        run->pidfds[k] = -1;
                if (!o.c.json)
                        fprintf(stderr, "run %u/%u ...\n", i + 1, o.repeat);
                int r = one_run(&o, &sys, &go, run, err, sizeof(err));
                left += stop_job(&sys, run);
                if (r < 0 && stop_requested)
                        break; /* stopped while the job started: nothing was measured */
                if (r < 0) {
                        cli_error(cmd, "%s", err[0] ? err : strerror(-r));
                        status = EXIT_INCOMPLETE;
                        break;
                }
                done++;
                run->stopped = stop_requested;
                if (run->stopped)
                        break;
                if (o.reclaim && !run->after_reclaim.recovered)
                        status = EXIT_FINDING;
                /* let the memory come back before the next run */
                struct phase settle = { 0 };
                observe(&go, o.gpu, run->baseline, (o.mib * MIB) / 10, monotonic_ms(), o.wait_ms, &settle);
                json_decref(settle.samples);
        }
        size_t complete = done - (done && runs[done - 1].stopped);
        if (stop_requested)
                status = 128 + stop_requested;
        if (o.c.json && (done || stop_requested)) {
                cli_print_json(experiment_json(&o, runs, done));
        } else if (!o.c.json) {
                if (complete) {
                        cli_sim_banner(stdout, &o.c);
                        table(&o, runs, complete);
                }
                if (stop_requested)
                        printf("%sStopped by %s %s: %zu of %u run%s done; %s.\n", complete ? "\n" : "",
                               stopsig_name(stop_requested),
                               done > complete ? "during a run (not counted)" : "between runs", complete, o.repeat,
                               o.repeat == 1 ? "" : "s",
                               left ? "some processes the experiment started did not end within 2 s of their SIGKILL "
                                      "(in D state?)"
                                    : "every process the experiment started was stopped");
        }
        fflush(stdout);
        for (size_t i = 0; i < o.repeat; i++) {
                json_decref(runs[i].after_kill.samples);
                json_decref(runs[i].after_reclaim.samples);
                json_decref(runs[i].kernel_events);
                json_decref(runs[i].reclaim_doc);
        }
        free(runs);
        stopsig_restore(&saved_signals);
        return status;
}
