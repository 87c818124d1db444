#define _GNU_SOURCE 1 /* environ */
#include "run/experiment_run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect/gpu.h"
#include "collect/kernel.h"
#include "collect/xid.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/exit_status.h"
#include "util/fileio.h"
#include "util/parse.h"
#include "util/spawn.h"
#include "util/stopsig.h"

#define EXP_MAX_SAMPLES 20000
#define SAMPLE_MS 50
#define MIB (1024ull * 1024ull)

/* SIGINT, SIGTERM, SIGHUP: util/stopsig's flag; the runs so far are kept */
#define stop_requested stopsig_pending()

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
        if (o->simulated) {
                struct buf out = BUF_INIT(1 << 16);
                const char *const args[] = { "ghostvram", "sim", "run", o->sim_dir, "--gpu", gpu_s, "--mib", mib_s,
                                             "--workers", wk_s, NULL };
                int r = spawn_self(o->self, args, &out, false);
                if (r != 0) {
                        snprintf(err, errlen, "the simulated job did not start (ghostvram sim run exit %d; see %s/jobs.log)",
                                 r, o->sim_dir);
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
        if (o->self) {
                snprintf(exe, sizeof(exe), "%s", o->self);
        } else {
                ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
                if (el < 0)
                        return -errno;
                exe[el] = '\0';
        }
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
        struct xid_source_opts ko = { .sim_dir = o->simulated ? o->sim_dir : NULL, .proc_root = "/proc" };
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
        snprintf(call_s, sizeof(call_s), "%ums", o->call_timeout_ms);
        const char *args[20] = { "ghostvram", "reclaim", "--yes", "--json", "--gpu", gpu_s, "--confirm", confirm_s,
                                 "--grace", grace_s, "--wait", wait_s, "--call-timeout", call_s, "--pid", pids_s };
        size_t n = 16;
        if (o->nvml_lib && !o->simulated) {
                args[n++] = "--nvml-lib";
                args[n++] = o->nvml_lib;
        }
        args[n] = NULL;
        struct buf out = BUF_INIT(8 << 20);
        run->reclaim_status = spawn_self(o->self, args, &out, true); /* a stop reaches reclaim: it reports */
        run->reclaimed = true;
        json_error_t e;
        run->reclaim_doc = out.data ? json_loads(out.data, 0, &e) : NULL;
        buf_free(&out);
        return run->reclaim_status;
}

static int one_run(const struct exp_opts *o, struct exp_run *run, char *err, size_t errlen)
{
        const struct reclaim_sys *s = o->sys;
        const struct gpu_opts *go = &o->go;
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

void exp_summarise(const struct exp_run *runs, size_t n, bool reclaim, struct exp_summary *ret)
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

/* After a run: its processes stopped, and the memory let come back before the next. */
static int run_after(const struct exp_opts *o, struct exp_run *run, int r, struct exp_result *ret)
{
        ret->left += stop_job(o->sys, run);
        if (r < 0)
                return r;
        ret->done++;
        run->stopped = stop_requested;
        if (run->stopped)
                return 1;
        if (o->reclaim && !run->after_reclaim.recovered)
                ret->unrecovered = true;
        struct phase settle = { 0 };
        observe(&o->go, o->gpu, run->baseline, (o->mib * MIB) / 10, monotonic_ms(), o->wait_ms, &settle);
        json_decref(settle.samples);
        return 0;
}

int experiment_run(const struct exp_opts *o, struct exp_result *ret)
{
        memset(ret, 0, sizeof(*ret));
        ret->runs = calloc(o->repeat ? o->repeat : 1, sizeof(*ret->runs));
        if (!ret->runs)
                return -ENOMEM;
        /* the owner is killed, and every process stopped, through pidfds only: without them
         * nothing could be ended safely and the runs would measure a job left running */
        if (reclaim_pidfd_supported(o->sys) < 0) {
                snprintf(ret->error, sizeof(ret->error),
                         "this kernel has no pidfd_open (Linux 5.3+): the experiment never signals by bare PID, "
                         "so it starts nothing");
                return -ENOSYS;
        }
        int r = 0;
        for (unsigned i = 0; i < o->repeat && !stop_requested; i++) {
                struct exp_run *run = &ret->runs[i];
                for (unsigned k = 0; k < EXP_MAX_WORKERS + 1; k++)
                        run->pidfds[k] = -1;
                if (o->progress)
                        o->progress(o->ctx, i + 1, o->repeat);
                r = run_after(o, run, one_run(o, run, ret->error, sizeof(ret->error)), ret);
                if (r != 0)
                        break;
        }
        ret->complete = ret->done - (ret->done && ret->runs[ret->done - 1].stopped);
        if (r < 0 && stop_requested)
                return 0; /* stopped while the job started: nothing was measured */
        if (r < 0 && !ret->error[0])
                snprintf(ret->error, sizeof(ret->error), "%s", strerror(-r));
        return r < 0 ? r : 0;
}

void exp_result_free(struct exp_result *r, unsigned repeat)
{
        for (size_t i = 0; r->runs && i < repeat; i++) {
                json_decref(r->runs[i].after_kill.samples);
                json_decref(r->runs[i].after_reclaim.samples);
                json_decref(r->runs[i].kernel_events);
                json_decref(r->runs[i].reclaim_doc);
        }
        free(r->runs);
        r->runs = NULL;
}

int experiment_probe(const struct exp_opts *o, size_t *ret_n_gpus, char *err, size_t errlen)
{
        struct gpu_report *probe = NULL;
        int r = 0;
        if (gpu_collect(&o->go, &probe) < 0 || !probe->driver_present) {
                snprintf(err, errlen, "%s", probe && probe->error[0] ? probe->error : "no NVIDIA driver on this host");
                r = -ENODEV;
        } else {
                *ret_n_gpus = probe->n_gpus;
        }
        gpu_report_free(probe);
        return r;
}

int experiment_prepare(struct exp_opts *o, const struct sources *s, const char *gpu_spec, char *err,
                       size_t errlen)
{
        sources_gpu_opts(s, &o->go);
        o->go.memory_only = true;
        o->simulated = s->simulated;
        o->sim_dir = s->sim_dir;
        o->nvml_lib = s->nvml_lib;
        o->call_timeout_ms = s->timeout_ms;
        int gpu_index;
        int st = sources_gpu_resolve(s, gpu_spec, false, &gpu_index, err, errlen);
        if (st != EXIT_OK)
                return st;
        if (gpu_index >= 0)
                o->gpu = (unsigned)gpu_index;
        size_t n_gpus = 0;
        char why[512];
        if (experiment_probe(o, &n_gpus, why, sizeof(why)) < 0) {
                snprintf(err, errlen, "%s: the experiment needs an NVIDIA GPU, or a simulated host: "
                                      "`ghostvram sim init /tmp/gpu && GHOSTVRAM_SIM=/tmp/gpu ghostvram experiment`",
                         why);
                return EXIT_INCOMPLETE;
        }
        if (o->gpu >= n_gpus) {
                snprintf(err, errlen, "--gpu %u: this host has %zu GPU%s", o->gpu, n_gpus, n_gpus == 1 ? "" : "s");
                return EXIT_USAGE;
        }
        return EXIT_OK;
}

int experiment_cuda_child(int argc, char **argv)
{
        unsigned gpu, workers;
        uint64_t mib;
        if (argc != 4 || parse_uint_range(argv[1], 0, 1023, &gpu) < 0 || parse_u64(argv[2], &mib) < 0 ||
            parse_uint_range(argv[3], 0, EXP_MAX_WORKERS, &workers) < 0)
                return EXIT_USAGE;
        cuda_job_main(gpu, mib, workers, 3);
}
