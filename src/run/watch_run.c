#define _GNU_SOURCE 1 /* environ */
#include "run/watch_run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "collect/xid.h"
#include "util/deadline.h"
#include "util/stopwait.h"
#include "util/spawn.h"
#include "util/strf.h"
#include "util/timefmt.h"

#define MIB (1024ull * 1024ull)

struct gpu_watch {
        bool seen;
        char verdict[24];
        unsigned long long ghost_mib;
        double above_since;     /* wall time the confirmed ghost went above the threshold; 0 if not */
        bool alerting;
};

struct watch {
        const struct watch_opts *o;
        double last_reclaim[WATCH_MAX_GPUS];    /* wall time of the last attempt per GPU */
        double reclaim_times[WATCH_RECLAIMS_PER_HOUR]; /* the last attempts, for the hourly cap */
        size_t n_reclaim_times;
        struct gpu_watch gpus[WATCH_MAX_GPUS];
        bool error_shown;
        struct watch_result *res;
};

static const char *verdict_of(const struct gpu_ledger *l)
{
        return l->n_findings ? l->findings[0].code : "unknown";
}

static uint64_t confirmed_ghost(const struct gpu_ledger *l)
{
        return l->inspected && l->ghost_confirmed ? l->ghost : 0;
}

static void pids_text(const struct gpu_ledger *l, char *out, size_t n)
{
        out[0] = '\0';
        size_t len = 0;
        const struct finding *fd = l->n_findings ? &l->findings[0] : NULL;
        for (size_t i = 0; fd && i < fd->n_pids; i++) {
                int w = snprintf(out + len, n - len, "%s%d", len ? " " : "", (int)fd->pids[i]);
                if (w < 0 || (size_t)w >= n - len)
                        break;
                len += (size_t)w;
        }
}

static void emit(const struct watch *w, const char *event, const struct gpu_info *g, const struct gpu_ledger *l,
                 const char *text, const struct xid_event *xe)
{
        struct watch_line line = { .event = event, .g = g, .l = l, .xid = xe, .text = text };
        w->o->emit(w->o->ctx, &line);
}

#define WARN(w, ...) ((w)->o->warn ? (w)->o->warn((w)->o->ctx, __VA_ARGS__) : (void)0)

/* The hook's environment: the finding, then exec. Built before the fork: this process has
 * threads (driver calls under a deadline), so the child runs only async-signal-safe calls. */
static pid_t hook_start(const struct watch *w, const char *event, const struct gpu_info *g,
                        const struct gpu_ledger *l, double since)
{
        char gpu_s[16], ghost_s[32], thr_s[32], since_s[32], pids[1024];
        const struct finding *fd = l->n_findings ? &l->findings[0] : NULL;
        snprintf(gpu_s, sizeof(gpu_s), "%u", g->index);
        snprintf(ghost_s, sizeof(ghost_s), "%llu", (unsigned long long)confirmed_ghost(l));
        snprintf(thr_s, sizeof(thr_s), "%llu", (unsigned long long)w->o->threshold_bytes);
        snprintf(since_s, sizeof(since_s), "%.0f", since);
        pids_text(l, pids, sizeof(pids));
        static const char *const names[] = {
                "GHOSTVRAM_EVENT", "GHOSTVRAM_GPU", "GHOSTVRAM_UUID", "GHOSTVRAM_PCI_BUS_ID", "GHOSTVRAM_VERDICT",
                "GHOSTVRAM_GHOST_BYTES", "GHOSTVRAM_PIDS", "GHOSTVRAM_THRESHOLD_BYTES", "GHOSTVRAM_SINCE",
                "GHOSTVRAM_SUMMARY", "GHOSTVRAM_NEXT_STEP",
        };
        const char *values[] = {
                event, gpu_s, g->uuid, g->pci_bus_id, verdict_of(l), ghost_s, pids, thr_s, since_s,
                fd ? str_or_empty(fd->summary) : "", fd ? str_or_empty(fd->next_step) : "",
        };
        char **envp = NULL;
        if (env_build(environ, names, values, sizeof(names) / sizeof(names[0]), &envp) < 0) {
                WARN(w, "--exec: out of memory");
                return -1;
        }
        char sh[] = "sh", dash_c[] = "-c";
        char *const argv[] = { sh, dash_c, (char *)w->o->exec, NULL };
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
                WARN(w, "--exec: cannot fork: %s", strerror(errno));
                env_free(envp);
                return -1;
        }
        if (pid == 0) {
                /* only async-signal-safe calls from here to execve */
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                signal(SIGPIPE, SIG_DFL);
                setpgid(0, 0); /* its own group: a timeout stops the hook and its children */
                int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (devnull >= 0) {
                        dup2(devnull, STDIN_FILENO);
                        close(devnull);
                }
                execve("/bin/sh", argv, envp);
                _exit(127);
        }
        env_free(envp);
        setpgid(pid, pid);
        return pid;
}

/* Wait for the hook at most exec_timeout_ms, then SIGTERM its group, 2 s later SIGKILL, and
 * 5 s after that leave it (SIGKILL takes effect when a driver call returns). */
static void hook_wait(const struct watch *w, pid_t pid)
{
        unsigned long long deadline = monotonic_ms() + w->o->exec_timeout_ms;
        int status = 0;
        int killed = 0; /* 1: SIGTERM sent, 2: SIGKILL sent */
        for (;;) {
                pid_t r = waitpid(pid, &status, WNOHANG);
                if (r == pid || (r < 0 && errno != EINTR))
                        break;
                unsigned long long now = monotonic_ms();
                if (now >= deadline && !killed) {
                        WARN(w, "--exec: the hook ran longer than %.3g s; stopping it",
                             (double)w->o->exec_timeout_ms / 1000.0);
                        kill(-pid, SIGTERM);
                        killed = 1;
                        deadline = now + 2000;
                } else if (now >= deadline && killed == 1) {
                        kill(-pid, SIGKILL);
                        killed = 2;
                        deadline = now + 5000;
                } else if (now >= deadline) {
                        WARN(w, "--exec: the hook (PID %d) did not end 5 s after SIGKILL; not waiting for it", (int)pid);
                        break;
                }
                struct timespec ts = { .tv_sec = 0, .tv_nsec = 20 * 1000000L };
                nanosleep(&ts, NULL);
        }
        if (!killed && WIFEXITED(status) && WEXITSTATUS(status) != 0)
                WARN(w, "--exec: the hook exited with status %d", WEXITSTATUS(status));
}

static void run_hook(const struct watch *w, const char *event, const struct gpu_info *g, const struct gpu_ledger *l,
                     double since)
{
        if (!w->o->exec)
                return;
        pid_t pid = hook_start(w, event, g, l, since);
        if (pid > 0)
                hook_wait(w, pid);
}

/* May another reclaim run now? At most one per GPU per reclaim_every_ms, and at most
 * WATCH_RECLAIMS_PER_HOUR in any hour: a heal that does not heal must not become a loop. */
static bool reclaim_allowed(const struct watch *w, unsigned gpu, double now)
{
        if (w->last_reclaim[gpu] > 0 && (now - w->last_reclaim[gpu]) * 1000.0 < (double)w->o->reclaim_every_ms)
                return false;
        size_t recent = 0;
        for (size_t i = 0; i < w->n_reclaim_times; i++)
                recent += now - w->reclaim_times[i] < 3600.0;
        return recent < WATCH_RECLAIMS_PER_HOUR;
}

/* "; signalled PID a b …" from reclaim's JSON actions (those it sent a signal to), "" when
 * none: the line is the audit trail of what watch's heal ended. More PIDs than fit end
 * with " and N more". */
static void signalled_text(json_t *doc, char *out, size_t cap)
{
        size_t k, len = 0, more = 0;
        json_t *a;
        out[0] = '\0';
        json_array_foreach(json_object_get(doc, "actions"), k, a) {
                if (!json_array_size(json_object_get(a, "signals")))
                        continue;
                json_int_t pid = json_integer_value(json_object_get(a, "pid"));
                int n = snprintf(out + len, cap - len, "%s %lld", len ? "" : "; signalled PID", (long long)pid);
                if (n < 0 || (size_t)n >= cap - len - 16) {
                        out[len] = '\0';
                        more++;
                        continue;
                }
                len += (size_t)n;
        }
        if (more)
                snprintf(out + len, cap - len, " and %zu more", more);
}

static void note_reclaim(struct watch *w, unsigned gpu, double now)
{
        w->last_reclaim[gpu] = now;
        if (w->n_reclaim_times == WATCH_RECLAIMS_PER_HOUR) {
                memmove(w->reclaim_times, w->reclaim_times + 1, sizeof(w->reclaim_times[0]) * (WATCH_RECLAIMS_PER_HOUR - 1));
                w->n_reclaim_times--;
        }
        w->reclaim_times[w->n_reclaim_times++] = now;
        w->res->heals++;
}

/* Heal the GPU with reclaim (a fresh plan with all of its safety rules) and say what it did. */
static void watch_reclaim(struct watch *w, const struct gpu_info *g, const struct gpu_ledger *l, double now)
{
        note_reclaim(w, l->index, now);
        struct buf out = BUF_INIT(1 << 20);
        int rc = w->o->heal(w->o->ctx, l->index, &out);
        json_error_t err;
        json_t *doc = out.len ? json_loadb(out.data, out.len, 0, &err) : NULL;
        buf_free(&out);
        uint64_t freed = 0;
        double secs = -1;
        size_t k;
        json_t *gj;
        json_array_foreach(json_object_get(doc, "gpus"), k, gj) {
                if (json_integer_value(json_object_get(gj, "index")) != (json_int_t)l->index)
                        continue;
                json_t *fb = json_object_get(gj, "freed_bytes");
                json_t *rs = json_object_get(gj, "recovery_seconds");
                freed = json_is_integer(fb) && json_integer_value(fb) > 0 ? (uint64_t)json_integer_value(fb) : 0;
                secs = json_is_number(rs) ? json_number_value(rs) : -1;
        }
        char sent[160];
        signalled_text(doc, sent, sizeof(sent));
        json_decref(doc);
        char line[480];
        if (rc == 0 && freed)
                snprintf(line, sizeof(line), "RECLAIM GPU %u: %llu MiB freed in %.3f s%s", l->index,
                         (unsigned long long)(freed / MIB), secs, sent);
        else
                snprintf(line, sizeof(line), "RECLAIM GPU %u: reclaim exited %d, %llu MiB freed%s%s", l->index, rc,
                         (unsigned long long)(freed / MIB),
                         rc == 3 ? " (it could not act: see 'ghostvram reclaim --gpu N')" : "", sent);
        emit(w, "reclaim", g, l, line, NULL);
}

/* A state line when the GPU's verdict or ghost (MiB) changed since the last line. */
static void watch_state(struct watch *w, struct gpu_watch *s, const struct gpu_info *g, const struct gpu_ledger *l)
{
        char line[640], pids[256];
        const char *v = verdict_of(l);
        unsigned long long mib = (unsigned long long)((l->ghost + MIB / 2) / MIB);
        if (s->seen && !strcmp(s->verdict, v) && s->ghost_mib == mib)
                return;
        pids_text(l, pids, sizeof(pids));
        const char *unconfirmed = l->ghost_confirmed ? "" : l->ghost ? " unconfirmed" : "";
        if (s->seen)
                snprintf(line, sizeof(line), "GPU %u %s, ghost %llu MiB%s (was %s, %llu MiB)%s%s", l->index, v, mib,
                         unconfirmed, s->verdict, s->ghost_mib, pids[0] ? " PIDs " : "", pids);
        else
                snprintf(line, sizeof(line), "GPU %u %s, ghost %llu MiB%s%s%s", l->index, v, mib, unconfirmed,
                         pids[0] ? " PIDs " : "", pids);
        emit(w, "state", g, l, line, NULL);
        s->seen = true;
        snprintf(s->verdict, sizeof(s->verdict), "%s", v);
        s->ghost_mib = mib;
}

/* Alert when the confirmed ghost held above the threshold long enough (and heal while it
 * stands); clear when it drops back. */
static void watch_alert(struct watch *w, struct gpu_watch *s, const struct gpu_info *g, const struct gpu_ledger *l,
                        double now)
{
        const struct watch_opts *o = w->o;
        char line[640], pids[256];
        const char *v = verdict_of(l);
        uint64_t ghost = confirmed_ghost(l);
        pids_text(l, pids, sizeof(pids));
        if (ghost <= o->threshold_bytes) {
                if (s->alerting) {
                        snprintf(line, sizeof(line), "CLEAR GPU %u: ghost %llu MiB, not above %llu MiB any more (%s)",
                                 l->index, (unsigned long long)(ghost / MIB),
                                 (unsigned long long)(o->threshold_bytes / MIB), v);
                        emit(w, "clear", g, l, line, NULL);
                        run_hook(w, "clear", g, l, s->above_since);
                }
                s->alerting = false;
                s->above_since = 0;
                return;
        }
        if (s->above_since == 0)
                s->above_since = now;
        if (!s->alerting && (now - s->above_since) * 1000.0 >= (double)o->for_ms) {
                s->alerting = true;
                snprintf(line, sizeof(line), "ALERT GPU %u: %llu MiB ghost above %llu MiB for %.0f s (%s%s%s)", l->index,
                         (unsigned long long)(ghost / MIB), (unsigned long long)(o->threshold_bytes / MIB),
                         now - s->above_since, v, pids[0] ? ", PIDs " : "", pids);
                emit(w, "alert", g, l, line, NULL);
                run_hook(w, "alert", g, l, s->above_since);
        }
        if (s->alerting && o->heal_enabled && o->heal && l->index < WATCH_MAX_GPUS &&
            reclaim_allowed(w, l->index, now))
                watch_reclaim(w, g, l, now);
}

/* Compare a sample with what was said before: state lines, alerts, clears, heals. */
static void watch_sample(struct watch *w, const struct scan_result *r)
{
        const struct gpu_report *gr = r->facts->gpu;
        double now = wall_clock_now();
        for (size_t i = 0; i < r->n_gpus && i < WATCH_MAX_GPUS; i++) {
                const struct gpu_ledger *l = &r->gpus[i];
                if (w->o->only_gpu >= 0 && (unsigned)w->o->only_gpu != l->index)
                        continue;
                struct gpu_watch *s = &w->gpus[l->index < WATCH_MAX_GPUS ? l->index : 0];
                watch_state(w, s, &gr->gpus[i], l);
                /* a GPU that did not answer this time says nothing of its ghost: an alert stays
                 * as it was (no CLEAR for a GPU that hangs) */
                if (l->inspected)
                        watch_alert(w, s, &gr->gpus[i], l, now);
        }
}

/* A new NVIDIA kernel event (never the history from before watch started). */
static void watch_xid(const struct watch *w, const struct xid_event *e)
{
        if (e->xid == XID_NONE || (w->o->only_gpu >= 0 && e->gpu_index >= 0 && e->gpu_index != w->o->only_gpu))
                return;
        struct xid_assessment a;
        xid_event_assess(e, &a);
        char gpu[48] = "";
        if (e->gpu_index >= 0)
                snprintf(gpu, sizeof(gpu), " on GPU %d", e->gpu_index);
        char line[400];
        snprintf(line, sizeof(line), "Xid %d%s (%s): %s; see 'ghostvram xid explain %d'", e->xid, gpu,
                 e->pci_bus_id[0] ? e->pci_bus_id : "PCI bus unknown", a.title ? a.title : "", e->xid);
        emit(w, "xid", NULL, NULL, line, e);
}

/* An error line when a sample has errors (once), and one when they clear. */
static void watch_errors(struct watch *w, const struct sample *s)
{
        if (s->errors && !w->error_shown) {
                const struct gpu_report *g = s->res ? s->res->facts->gpu : NULL;
                char line[600], hung[200];
                if (g && g->timed_out)
                        gpu_report_timeout_text(g, hung, sizeof(hung));
                snprintf(line, sizeof(line), "scan error: %s",
                         g && g->timed_out ? hung
                         : g && !g->driver_present ? (g->error[0] ? g->error : "no NVIDIA driver")
                                                   : s->why);
                emit(w, "error", NULL, NULL, line, NULL);
                snprintf(w->res->last_error, sizeof(w->res->last_error), "%s", line);
        } else if (!s->errors && w->error_shown) {
                emit(w, "error", NULL, NULL, "scan error cleared", NULL);
        }
        w->error_shown = s->errors != 0;
}

static void watch_cycle(struct watch *w, const struct sample *s)
{
        for (size_t i = 0; i < s->n_new_events; i++)
                watch_xid(w, &s->new_events[i]);
        /* a GPU that did not answer (reported not inspected) leaves the others watched */
        w->res->any_ok |= s->res && s->published && !(s->errors & SCAN_ERR_HOST) &&
                          (!(s->errors & SCAN_ERR_GPU) || gpu_report_lists_all(s->res->facts->gpu));
        watch_errors(w, s);
        if (s->res && s->published)
                watch_sample(w, s->res);
        if (w->o->sampled)
                w->o->sampled(w->o->ctx, s);
}

static bool watch_wait(const struct watch_opts *o, uint64_t ms)
{
        if (o->wait)
                return o->wait(o->ctx, ms);
        struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        return true;
}

int watch_run(const struct watch_opts *o, struct sampler *smp, struct watch_result *ret)
{
        struct watch *w = calloc(1, sizeof(*w)); /* 1024 GPUs' state: not on the stack */
        if (!w)
                return -ENOMEM;
        memset(ret, 0, sizeof(*ret));
        w->o = o;
        w->res = ret;
        int r = 0;
        while (!o->count || ret->cycles < o->count) {
                unsigned long long t0 = monotonic_ms();
                struct sample s;
                r = o->next ? o->next(o->ctx, &s) : sampler_cycle(smp, &s);
                if (r < 0)
                        break;
                ret->cycles++;
                watch_cycle(w, &s);
                if (o->count && ret->cycles >= o->count)
                        break;
                unsigned long long spent = monotonic_ms() - t0;
                if (!watch_wait(o, spent < o->interval_ms ? o->interval_ms - spent : 0))
                        break;
        }
        free(w);
        return r == -EINTR ? 0 : r;
}

size_t watch_heal_args(const struct watch_heal_src *src, unsigned index, char gpu[16], const char *args[16])
{
        snprintf(gpu, 16, "%u", index);
        size_t n = 0;
        const char *fixed[] = { "ghostvram", "reclaim", "--gpu", gpu, "--yes", "--json" };
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
                args[n++] = fixed[i];
        if (strcmp(src->proc_root, "/proc") != 0) {
                args[n++] = "--proc";
                args[n++] = src->proc_root;
        }
        if (src->nvml_lib) {
                args[n++] = "--nvml-lib";
                args[n++] = src->nvml_lib;
        }
        args[n] = NULL;
        return n;
}

int watch_heal_spawn(const struct watch_heal_src *src, unsigned index, struct buf *out)
{
        char gpu[16];
        const char *args[16];
        watch_heal_args(src, index, gpu, args);
        return spawn_self(NULL, args, out, false);
}

void watch_sampler_opts(const struct sources *src, const struct watch_opts *o, uint64_t floor_mib, bool no_kernel,
                        struct sampler_opts *sp)
{
        struct scan_once_opts so;
        sources_scan_once_opts(src, &so);
        *sp = (struct sampler_opts){ .facts = so.facts, .ledger = so.ledger, .confirm_ms = o->interval_ms, .light = true,
                                     .wait = o->wait };
        sp->ledger.floor_min_bytes = floor_mib << 20;
        sp->facts.read_kernel = !no_kernel;
}

struct watch_heal_src watch_heal_src_of(const struct sources *src)
{
        return (struct watch_heal_src){ src->proc_root, src->simulated ? NULL : src->nvml_lib };
}

int watch_execute(struct watch_opts *o, const struct sources *src, uint64_t floor_mib, bool no_kernel, char *err,
                  size_t errlen)
{
        struct sampler_opts sp;
        watch_sampler_opts(src, o, floor_mib, no_kernel, &sp);
        struct sampler *smp = NULL;
        if (sampler_new(&sp, &smp) < 0) {
                snprintf(err, errlen, "out of memory");
                return -1;
        }
        stopwait_block();
        signal(SIGPIPE, SIG_IGN);
        if (o->started)
                o->started(o->ctx);
        struct watch_result res;
        int r = watch_run(o, smp, &res);
        sampler_free(smp);
        if (r < 0) {
                snprintf(err, errlen, "%s", strerror(-r));
                return -1;
        }
        /* a watch that never got one good sample watched nothing: say so, and not with 0 */
        if (!res.any_ok) {
                snprintf(err, errlen, "no sample succeeded%s%s", res.last_error[0] ? ": " : "", res.last_error);
                return -1;
        }
        return 0;
}
