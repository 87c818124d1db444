#define _GNU_SOURCE 1
/* reclaim: end the orphaned holders of a ghost safely and measure the memory coming back; or end
 * a finished job's whole cgroup; or, as last resorts, reset a GPU or reload nvidia_uvm. The
 * planning is act/reclaim_plan (pure), the acting act/reclaim_act, the escalations
 * act/escalate; this file wires options, the lock, syslog and the output. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "act/escalate.h"
#include "act/poke.h"
#include "act/reclaim_act.h"
#include "act/reclaim_plan.h"
#include "cli/cli.h"
#include "run/scan_run.h"
#include "render/reclaim_render.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/i18n.h"
#include "util/stopsig.h"
#include "simstate.h"

#define RC_MAX_PIDS 64
#define RC_MAX_ANCESTORS 64
_Static_assert(RC_MAX_ANCESTORS >= HOST_MAX_ANCESTORS, "a bundle's ancestors fit");
#define DEFAULT_POLICY "/etc/ghostvram/protected"
#define SAMPLE_MS 50

/* it acts on this host: no --save-bundle; --holders is the scan's business */
#define RECLAIM_ACCEPTS (CLI_JSON | CLI_VERBOSE | CLI_CALL_TIMEOUT | CLI_NVML_LIB | CLI_PROC | CLI_DEV_PREFIX | CLI_FROM_BUNDLE)

static void reclaim_usage(FILE *f)
{
        fputs(_("Usage: ghostvram reclaim [--gpu N] [--pid P...] [--cgroup PATH] [--yes]\n"
                "                         [--signal TERM] [--grace 5s] [--wait 60s]\n"
                "                         [--json | --json-stream]\n"
                "       ghostvram reclaim --reset-gpu --gpu N [--force] [--yes]\n"
                "       ghostvram reclaim --reload-uvm --force [--yes]\n"
                "       ghostvram reclaim --poke --gpu N [--force] [--cuda-lib PATH] [--yes]\n"
                "\n"
                "Free ghost GPU memory by ending the processes that really hold it (forked\n"
                "workers of a killed job that kept its /dev/nvidia* descriptors or mappings),\n"
                "and measure how long the memory takes to come back. The plan comes from a\n"
                "fresh scan (two samples, as `scan`). Without --yes nothing is changed.\n"
                "\n"), f);
        fputs(_("A process is a default target only if ALL of these hold:\n"
                "  - scan ties it, through a link to a dead owner, to a GPU with a confirmed\n"
                "    ghost (not merely a candidate when several GPUs have one);\n"
                "  - it holds or maps nvidia-uvm (a CUDA process, not a monitor);\n"
                "  - NVML lists it on no GPU, and no live listed owner shares its session or\n"
                "    its job;\n"
                "  - it is not PID 1 of any PID namespace, a kernel thread, ghostvram or one of\n"
                "    its ancestors, a GPU daemon (persistence daemon, MPS, DCGM, fabric\n"
                "    manager, device plugins), a display server, or in the site policy.\n"
                "Each target is opened with pidfd_open and its start time re-checked before any\n"
                "signal: a reused PID is never signalled. Signals go through the pidfd only.\n"
                "\n"), f);
        /* xgettext:no-c-format */
        fputs(_("Options:\n"
                "  --gpu ID             only the ghost of this GPU: an index, a UUID or a PCI\n"
                "                       bus id\n"
                "  --pid P[,P...]       exactly these processes, not the default targets (never\n"
                "                       PID 1, kernel threads, ghostvram or its ancestors; a\n"
                "                       process holding no NVIDIA device node, or another\n"
                "                       ghostvram, only with --force)\n"
                "  --cgroup PATH        end a finished job's whole cgroup (Slurm epilog, deleted\n"
                "                       pod): cgroup.kill, or SIGKILL to each member through a\n"
                "                       pidfd; refused while a live NVML-listed owner is inside\n"
                "  -y, --yes            act (without it: a dry run; a terminal is asked)\n"
                "  -n, --dry-run        never act, never ask\n"
                "  --signal SIG         first signal: TERM (default), INT, HUP, QUIT, USR1,\n"
                "                       USR2, KILL\n"
                "  --grace DURATION     then SIGKILL (default 5s; none: never, only the first\n"
                "                       signal)\n"
                "  --wait DURATION      stop waiting for processes and memory (default 60s)\n"
                "  --policy FILE        protected processes (default /etc/ghostvram/protected);\n"
                "                       lines: comm NAME | cgroup PREFIX | unit NAME; # comment\n"
                "  --reset-gpu          last resort: `nvidia-smi --gpu-reset -i BUS` of --gpu N;\n"
                "                       refused while anything holds the GPU, after an Xid 79,\n"
                "                       on MIG without --force; never run on a simulated host\n"
                "  --reload-uvm         last resort: unload and load nvidia_uvm (libkmod);\n"
                "                       needs --force and nobody holding nvidia-uvm\n"
                "  --poke               before a reset: a tiny CUDA client on --gpu N (cuInit, a\n"
                "                       context, 2 MiB allocated and freed) in a child killed\n"
                "                       at --call-timeout (default 10s here); the memory is\n"
                "                       measured before and for --wait after (default 3s here)\n"
                "                       (some drivers free a dead context's memory when the\n"
                "                       next client comes); refused while NVML lists live jobs\n"
                "                       on the GPU, unless --force\n"
                "  --cuda-lib PATH      the CUDA driver library --poke loads (default\n"
                "                       libcuda.so.1; the simulated one under GHOSTVRAM_SIM)\n"
                "  --force              allow --reset-gpu on MIG; required by --reload-uvm;\n"
                "                       lets --pid name a process without an NVIDIA node, or\n"
                "                       a ghostvram; lets --poke run beside live jobs\n"
                "  --confirm DURATION   delay before the scan's confirming sample (default 2s)\n"
                "  --noise-floor MIB    minimum ghost in MiB (default 64; 1% of the GPU if more)\n"),
              f);
        fputs(_("  --json-stream        one JSON object per line as it happens: plan, action,\n"
              "                       sample, result (docs/reclaim.md)\n"
              "  -v, --verbose        also list CUDA processes tied to no ghost\n"
              "  --from-bundle DIR    plan from a recorded bundle (never acts)\n"), f);
        cli_common_help(f, RECLAIM_ACCEPTS & ~(CLI_VERBOSE | CLI_FROM_BUNDLE));
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\n"
                "Examples:\n"
                "  sudo ghostvram reclaim                 # the plan: who gets SIGTERM, and why\n"
                "  sudo ghostvram reclaim --yes           # do it; memory before/after, time\n"
                "  sudo ghostvram reclaim --pid 31301,31302 --yes --grace 2s\n"
                "  sudo ghostvram reclaim --cgroup /slurm/uid_1000/job_42 --yes\n"
                "  sudo ghostvram reclaim --poke --gpu 3 --yes  # a new context: does it free it?\n"
                "  sudo ghostvram reclaim --reset-gpu --gpu 3   # what a reset would need\n"
                "\n"), f);
        fputs(_("The plan is printed before acting, then each signal, result and memory sample\n"
                "as it happens. SIGINT, SIGTERM or SIGHUP stop it: no signal is sent after\n"
                "that, the report says what was done and what is left, and it exits 128+N.\n"
                "Every action goes to syslog (LOG_AUTHPRIV) and the JSON. One reclaim at a\n"
                "time per host (a lock in /run/ghostvram). docs/reclaim.md: the rules, the\n"
                "policy file, the checks.\n"
                "\n"), f);
        fputs(_("Exit status: 0 memory recovered (or a dry run with a plan, or nothing to\n"
                "reclaim); 1 partial (a process did not end, the memory did not come back, or\n"
                "a ghost no process may be ended for); 2 usage error; 3 cannot act (not root\n"
                "for others' processes, no pidfd support, another reclaim running, --pid naming\n"
                "a process reclaim does not signal, a refused escalation or cgroup).\n"
                "--poke: 0 the poke gave memory back (or a dry run whose checks passed); 1 it\n"
                "ran and nothing changed, a CUDA call failed, or it hung and was killed; 3\n"
                "refused (live jobs without --force, MIG, a lost GPU) or no CUDA library.\n"
                "--yes is refused (exit 2) with --proc or --from-bundle: the plan would not\n"
                "come from this host's live /proc.\n"),
              f);
}

struct rc_opts {
        struct cli_common c;
        int only_gpu;
        const char *gpu_spec;   /* --gpu as given (an index is also in only_gpu) */
        pid_t pids[RC_MAX_PIDS];
        size_t n_pids;
        const char *cgroup;
        bool yes, dry_run, force, reset_gpu, reload_uvm, poke;
        const char *cuda_lib;   /* --cuda-lib */
        bool wait_given, call_timeout_given;
        bool json_stream;       /* --json-stream: JSON lines as it happens */
        bool proc_given;        /* --proc DIR */
        int signal;
        uint64_t grace_ms, wait_ms, confirm_ms;
        uint64_t floor_mib;
        bool floor_set;
        const char *policy;
};

/* ---- small pieces ------------------------------------------------------------------------------ */

static void note(struct reclaim_report *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct reclaim_report *rep, const char *fmt, ...)
{
        if (rep->n_notes >= RECLAIM_MAX_NOTES)
                return;
        va_list ap;
        va_start(ap, fmt);
        if (str_vsetf(&rep->notes[rep->n_notes], fmt, ap) == 0)
                rep->n_notes++;
        va_end(ap);
}

static void summary(struct reclaim_report *rep, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void summary(struct reclaim_report *rep, int status, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        str_vsetf(&rep->summary, fmt, ap);
        va_end(ap);
        rep->exit_status = status;
}

static bool banner_shown; /* the simulated host's banner went out (once) */

static void banner(const struct rc_opts *o)
{
        if (!banner_shown)
                cli_sim_banner(stdout, &o->c);
        banner_shown = true;
}

/* The plan, before acting: the first lines of the report. */
static void out_plan(const struct rc_opts *o, struct reclaim_report *rep)
{
        if (rep->plan_shown || o->c.json)
                return;
        rep->plan_shown = true;
        if (o->json_stream) {
                cli_print_json(reclaim_stream_plan_json(rep));
                return;
        }
        banner(o);
        reclaim_stream_plan_text(stdout, rep, o->c.verbose);
        fflush(stdout);
}

/* The report: what was done (the plan too, unless it went out before acting). */
static void out_report(const struct rc_opts *o, struct reclaim_report *rep)
{
        if (o->c.json) {
                cli_print_json(reclaim_json(rep));
                return;
        }
        if (o->json_stream) {
                if (!rep->plan_shown && (rep->plan || rep->cgroup || rep->esc))
                        cli_print_json(reclaim_stream_plan_json(rep));
                cli_print_json(reclaim_stream_result_json(rep));
                return;
        }
        banner(o);
        reclaim_text(stdout, rep, o->c.verbose);
        fflush(stdout);
}

/* A stop signal came: the report says so, and the exit status is 128+N. */
static void stopped(struct reclaim_report *rep, double after_s)
{
        rep->stopped = stopsig_pending();
        rep->stopped_after_s = after_s;
        rep->exit_status = 128 + rep->stopped;
}

static void stopped_before_acting(struct reclaim_report *rep)
{
        stopped(rep, 0);
        str_setf(&rep->summary, _("Stopped by %s before acting: nothing was signalled."),
                 stopsig_name(rep->stopped));
}

/* Stopped while acting: what ended, and the PIDs left (each one's line above says how). */
static void stopped_acting(struct reclaim_report *rep, const struct reclaim_action *acts, size_t n, double after_s)
{
        stopped(rep, after_s);
        struct buf left = BUF_INIT(4096);
        size_t n_left = 0;
        for (size_t i = 0; i < n; i++)
                if (!reclaim_result_ended(acts[i].result) && n_left++ < 8)
                        buf_printf(&left, "%s%d", n_left > 1 ? ", " : "", (int)acts[i].pid);
        if (n_left > 8)
                buf_printf(&left, _(" and %zu more"), n_left - 8); /* the actions list them all */
        size_t ended = n - n_left;
        if (n_left)
                str_setf(&rep->summary, P_("Stopped by %s %.3g s after the first signal: %zu of %zu process ended; left: PID "
                                           "%s; no signal was sent after the stop.",
                                           "Stopped by %s %.3g s after the first signal: %zu of %zu processes ended; left: PID "
                                           "%s; no signal was sent after the stop.", n),
                         stopsig_name(rep->stopped), after_s, ended, n, buf_str(&left));
        else
                str_setf(&rep->summary, P_("Stopped by %s %.3g s after the first signal: %zu of %zu process ended; no signal was "
                                           "sent after the stop.",
                                           "Stopped by %s %.3g s after the first signal: %zu of %zu processes ended; no signal "
                                           "was sent after the stop.", n),
                         stopsig_name(rep->stopped), after_s, ended, n);
        buf_free(&left);
}

/* Hostile text made safe for a log line. */
static void esc_copy(char *out, size_t n, const char *s)
{
        struct buf b = BUF_INIT(1024);
        if (s && esc_terminal(&b, s, strlen(s)) == 0)
                snprintf(out, n, "%s", buf_str(&b));
        else
                snprintf(out, n, "?");
        buf_free(&b);
}

static void rc_syslog(const struct reclaim_action *a, enum reclaim_event ev)
{
        char comm[96];
        esc_copy(comm, sizeof(comm), a->comm);
        if (ev == RECLAIM_EV_SIGNAL) {
                const char *nm = reclaim_signal_name(a->signals[a->n_signals - 1]);
                syslog(LOG_NOTICE, "reclaim: SIG%s to PID %d (%s) through its pidfd", nm ? nm : "?", (int)a->pid, comm);
        } else {
                char detail[200];
                esc_copy(detail, sizeof(detail), a->detail_en ? a->detail_en : a->detail); /* English */
                syslog(LOG_NOTICE, "reclaim: PID %d (%s): %s after %.2f s%s%s%s", (int)a->pid, comm,
                       reclaim_result_name(a->result), a->seconds, !str_empty(a->detail) ? " (" : "",
                       !str_empty(a->detail) ? detail : "", !str_empty(a->detail) ? ")" : "");
        }
}

/* The test build's pause hook (tests/hooks/test_hooks.c sets it; NULL in the shipped binary,
 * which carries no test hook at all). */
void (*cli_reclaim_pause)(void *ctx, const char *stage);

/* The scan's wait for its confirming sample: cut short by a stop signal (the scan then fails
 * with -EINTR and nothing is done). */
static bool stop_wait(void *ctx, uint64_t ms)
{
        (void)ctx;
        return stopsig_sleep_ms(ms > UINT32_MAX ? UINT32_MAX : (unsigned)ms);
}

/* Memory sampling while acting: the first call is the "before" sample. Each GPU's samples go
 * out as they come: the one before, then one a second at most, the one that shows the memory
 * back, and the last. */
#define SAMPLE_LINE_MS 1000

struct sampler {
        struct gpu_opts go;
        const struct rc_opts *o;        /* where the lines go (NULL: nowhere) */
        struct recovery_gpu *g;
        size_t n;
        bool have_before;
        uint64_t t0;            /* monotonic ms of the first signal */
        uint64_t last;
        unsigned failed;        /* samples the driver gave no figures for */
        bool last_failed;       /* the latest one: the driver stopped answering */
        uint64_t *shown;        /* per GPU: monotonic ms of the last line, 0 none */
        bool *shown_back;       /* per GPU: the line that says it is back went out */
        bool *unsaid;           /* per GPU: its latest sample has no line yet */
};

static void out_sample(const struct sampler *s, const struct recovery_gpu *g, bool before, double t)
{
        if (!s->o || s->o->c.json)
                return;
        if (s->o->json_stream) {
                cli_print_json(reclaim_stream_sample_json(g, before, t));
                return;
        }
        reclaim_stream_sample_text(stdout, g, before, s->o->poke, t);
        fflush(stdout);
}

/* The lines of the sample just taken (last: the final one, said whatever the time). */
static void sampler_show(struct sampler *s, bool before, bool last)
{
        uint64_t now = monotonic_ms();
        double t = before ? 0 : (double)(now - s->t0) / 1000.0;
        for (size_t i = 0; i < s->n && !s->last_failed; i++) {
                struct recovery_gpu *g = &s->g[i];
                if (!g->expected && !s->o->c.verbose)
                        continue; /* a GPU that expects nothing back: in the report only */
                bool back = g->expected && g->recovered && !s->shown_back[i];
                if (last && !s->unsaid[i])
                        continue; /* the latest sample's line went out already */
                if (!before && !back && !last && s->shown[i] && now - s->shown[i] < SAMPLE_LINE_MS)
                        continue;
                if (!before && !g->after_known)
                        continue;
                if (before && !g->before_known)
                        continue;
                s->shown[i] = now;
                s->shown_back[i] |= back;
                s->unsaid[i] = false;
                out_sample(s, g, before, t);
        }
}

static void sampler_take(struct sampler *s, uint64_t t0)
{
        bool bad = recovery_sample(&s->go, s->g, s->n, t0) < 0;
        s->failed += bad;
        s->last_failed = bad;
        for (size_t i = 0; i < s->n; i++)
                s->unsaid[i] = !bad;
        sampler_show(s, t0 == 0, false);
}

static void sampler_tick(void *ctx, uint64_t t_ms)
{
        struct sampler *s = ctx;
        if (!s->have_before) {
                sampler_take(s, 0);
                s->have_before = true;
                s->t0 = monotonic_ms(); /* the first signal follows */
                s->last = 0;
                return;
        }
        if (t_ms - s->last < SAMPLE_MS - 10)
                return;
        s->last = t_ms;
        sampler_take(s, s->t0);
}

/* Keep sampling until every GPU has its memory back, the timeout (from the first signal) or a
 * stop signal; the first sample right away: the processes have just ended. */
static void sampler_finish(struct sampler *s, uint64_t timeout_ms)
{
        if (!s->have_before)
                sampler_tick(s, 0);
        for (;;) {
                if (stopsig_pending())
                        break;
                sampler_take(s, s->t0);
                if (recovery_all_done(s->g, s->n) || monotonic_ms() - s->t0 >= timeout_ms)
                        break;
                stopsig_sleep_ms(SAMPLE_MS);
        }
        sampler_show(s, false, true);
}

static int sampler_init(struct sampler *s, const struct rc_opts *o, struct recovery_gpu *g, size_t n)
{
        memset(s, 0, sizeof(*s));
        cli_common_gpu_opts(&o->c, &s->go);
        s->go.memory_only = true;
        s->go.timeout_ms = o->c.timeout_ms < 1000 ? o->c.timeout_ms : 1000; /* a short deadline per call */
        s->o = o;
        s->g = g;
        s->n = n;
        s->shown = calloc(n ? n : 1, sizeof(*s->shown));
        s->shown_back = calloc(n ? n : 1, sizeof(*s->shown_back));
        s->unsaid = calloc(n ? n : 1, sizeof(*s->unsaid));
        return s->shown && s->shown_back && s->unsaid ? 0 : -ENOMEM;
}

static void sampler_done(struct sampler *s)
{
        free(s->shown);
        free(s->shown_back);
        free(s->unsaid);
        s->shown = NULL;
        s->shown_back = NULL;
        s->unsaid = NULL;
}

/* Seconds since the first signal (0 before it). */
static double sampler_elapsed(const struct sampler *s)
{
        return s->have_before ? (double)(monotonic_ms() - s->t0) / 1000.0 : 0;
}

/* Each signal and result: to syslog, and out as it happens (ctx: the sampler, whose clock
 * started at the first signal). */
static void rc_event(void *ctx, const struct reclaim_action *a, enum reclaim_event ev)
{
        const struct sampler *s = ctx;
        rc_syslog(a, ev);
        if (s->o->c.json)
                return;
        double t = sampler_elapsed(s);
        if (s->o->json_stream) {
                cli_print_json(reclaim_stream_action_json(a, ev, t));
                return;
        }
        reclaim_stream_action_text(stdout, a, ev, t);
        fflush(stdout);
}

/* ghostvram's ancestors: parent, its parent, ... (in our PID namespace). */
static size_t ancestors_of_self(const struct host_opts *ho, pid_t *out, size_t max)
{
        size_t n = 0;
        pid_t p = getppid();
        while (p > 0 && n < max) {
                out[n++] = p;
                if (p == 1)
                        break;
                struct host_proc hp;
                memset(&hp, 0, sizeof(hp));
                if (host_proc_lookup(ho, p, &hp) < 0)
                        break;
                pid_t pp = hp.ppid;
                host_proc_clear(&hp);
                if (pp == p)
                        break;
                p = pp;
        }
        return n;
}

static int load_policy(const struct rc_opts *o, struct reclaim_policy *pol)
{
        const char *path = o->policy ? o->policy : DEFAULT_POLICY;
        char *buf = NULL;
        size_t len = 0;
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
                cli_error("reclaim", _("--policy %s: a directory, not a policy file"), path);
                return -1;
        }
        int r = read_file_at(AT_FDCWD, path, 1 << 20, &buf, &len);
        if (r == -ENOENT && !o->policy)
                return 0; /* no site policy: the built-in names only */
        if (r < 0) {
                cli_error("reclaim", "--policy %s: %s", path, strerror(-r));
                return -1;
        }
        char err[320];
        r = reclaim_policy_parse(buf, len, path, pol, err, sizeof(err));
        free(buf);
        if (r < 0) {
                cli_error("reclaim", "%s", err);
                return -1;
        }
        return 0;
}

static int parse_pids(struct rc_opts *o, const char *arg)
{
        char tmp[RC_MAX_PIDS * 12];
        if (snprintf(tmp, sizeof(tmp), "%s", arg) >= (int)sizeof(tmp))
                return -1;
        /* every item a PID: "" (an empty variable), "1,,2" and "1," are refused, never taken
         * for "no --pid" (the default targets) */
        char *rest = tmp;
        do {
                char *t = strsep(&rest, ",");
                unsigned v;
                if (parse_uint_range(t, 1, INT_MAX, &v) < 0 || o->n_pids >= RC_MAX_PIDS)
                        return -1;
                o->pids[o->n_pids++] = (pid_t)v;
        } while (rest);
        return 0;
}

/* Ask on a terminal (never when stdin or stdout is not one). */
static bool confirm_on_tty(const char *question)
{
        if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
                return false;
        printf("\n%s [y/N] ", question);
        fflush(stdout);
        char line[16];
        if (!fgets(line, sizeof(line), stdin))
                return false;
        return line[0] == 'y' || line[0] == 'Y';
}

static const struct owner *live_owner(const struct scan_result *r, pid_t pid, unsigned *ret_gpu)
{
        for (size_t g = 0; g < r->n_gpus; g++)
                for (size_t k = 0; k < r->gpus[g].n_owners; k++)
                        if (r->gpus[g].owners[k].cls == OWNER_LIVE && (pid_t)r->gpus[g].owners[k].pid == pid) {
                                *ret_gpu = r->gpus[g].index;
                                return &r->gpus[g].owners[k];
                        }
        return NULL;
}

/* The GPUs to watch: those --gpu selects; memory expected back where a target holds the ghost. */
static struct recovery_gpu *watch_list(const struct scan_result *res, int only_gpu, const pid_t *pids, size_t n_pids,
                                       size_t *ret_n)
{
        struct recovery_gpu *g = calloc(res->n_gpus ? res->n_gpus : 1, sizeof(*g));
        size_t n = 0;
        if (!g)
                return NULL;
        for (size_t i = 0; i < res->n_gpus; i++) {
                const struct gpu_ledger *l = &res->gpus[i];
                if (only_gpu >= 0 && l->index != (unsigned)only_gpu)
                        continue;
                bool held = false;
                for (size_t a = 0; a < l->n_attr && l->ghost_confirmed; a++)
                        for (size_t k = 0; k < n_pids; k++)
                                held |= res->facts->host->holders[l->attr[a].holder].pid == pids[k];
                recovery_init(&g[n], l->index, held ? l->ghost : 0, l->noise_floor);
                if (l->inspected) {
                        g[n].before = l->used;
                        g[n].before_known = true;
                }
                n++;
        }
        *ret_n = n;
        return g;
}

/* ---- the modes ----------------------------------------------------------------------------------- */

struct rc_ctx {
        struct rc_opts *o;
        struct scan_once *scan;
        const struct scan_result *res;
        struct reclaim_plan_opts po;
        struct host_proc self;
        pid_t anc[RC_MAX_ANCESTORS];
        struct reclaim_policy policy;
        struct reclaim_sys sys;
        bool acting;
        int lock_fd;
        struct scan_once_opts so;       /* to scan again after the terminal's confirmation */
};

/* The targets a person confirmed on the terminal (PID and start time). */
struct confirmed {
        pid_t pid[RC_MAX_PIDS * 4];
        uint64_t start[RC_MAX_PIDS * 4];
        size_t n;
        bool set;
};

static void confirmed_take(struct confirmed *c, const struct reclaim_plan *p)
{
        c->n = 0;
        c->set = true;
        for (size_t i = 0; i < p->n_targets && c->n < sizeof(c->pid) / sizeof(c->pid[0]); i++) {
                c->pid[c->n] = p->targets[i].pid;
                c->start[c->n++] = p->targets[i].start_ticks;
        }
}

/* Does the plan have exactly the confirmed targets (the same processes)? */
static bool confirmed_same(const struct confirmed *c, const struct reclaim_plan *p)
{
        if (!c->set || c->n != p->n_targets)
                return false;
        for (size_t i = 0; i < p->n_targets; i++) {
                bool found = false;
                for (size_t k = 0; k < c->n && !found; k++)
                        found = c->pid[k] == p->targets[i].pid && c->start[k] == p->targets[i].start_ticks;
                if (!found)
                        return false;
        }
        return true;
}

static int take_lock(struct rc_ctx *x, struct reclaim_report *rep)
{
        char path[PATH_MAX];
        pid_t holder = 0;
        int fd = reclaim_lock(x->o->c.simulated ? x->o->c.sim_dir : NULL, path, sizeof(path), &holder);
        if (fd == -EWOULDBLOCK) {
                if (holder)
                        note(rep, _("another reclaim is running as PID %d (lock %s); one reclaim at a time per host"),
                             (int)holder, path);
                else
                        note(rep, _("another reclaim is running (lock %s); one reclaim at a time per host"), path);
                summary(rep, EXIT_INCOMPLETE, _("Cannot act: another reclaim is running."));
                return -1;
        }
        if (fd < 0) {
                note(rep, _("cannot take the reclaim lock %s: %s"), path, strerror(-fd));
                summary(rep, EXIT_INCOMPLETE, _("Cannot act: no lock."));
                return -1;
        }
        x->lock_fd = fd;
        return 0;
}

/* A confirmed ghost and no target: why, by what hides the holders (as scan says it), and
 * the last resorts only where every process could be seen. */
static void no_target_summary(struct reclaim_report *rep, const struct rc_opts *o, const struct scan_result *res,
                              const struct reclaim_plan *plan)
{
        const struct host_report *h = res->facts->host;
        char gpu[96] = "";
        if (o->gpu_spec)
                snprintf(gpu, sizeof(gpu), " --gpu %s", o->gpu_spec);
        if (!h || h->euid != 0) {
                summary(rep, EXIT_FINDING,
                        _("A confirmed ghost, but not root: other users' processes are out of sight, and the holders "
                        "may be among them. Run `sudo ghostvram reclaim%s` before anything else (never reset a GPU "
                        "on this view)."), gpu);
                return;
        }
        if (!h->initial_pidns) {
                summary(rep, EXIT_FINDING,
                        _("A confirmed ghost, but processes outside this PID namespace are out of sight: run reclaim "
                        "on the host (or a pod with hostPID: true / docker --pid=host): `sudo ghostvram reclaim%s`."),
                        gpu);
                return;
        }
        size_t shown = 0; /* the skipped lines the text shows */
        for (size_t i = 0; i < plan->n_skipped; i++)
                shown += o->c.verbose || plan->skipped[i].rule != RECLAIM_NOT_ATTRIBUTED;
        /* the poke first (a new context may make the driver finish a dead one's teardown), of the
         * named GPU or of the first with a confirmed ghost */
        int pg = o->only_gpu;
        for (size_t i = 0; pg < 0 && i < res->n_gpus; i++)
                if (res->gpus[i].ghost_confirmed)
                        pg = (int)res->gpus[i].index;
        if (shown)
                summary(rep, EXIT_FINDING,
                        _("A confirmed ghost, but no process reclaim may end for it (see why above). Check "
                        "`ghostvram scan%s`; before the last resorts (--reset-gpu, --reload-uvm) try the poke: "
                        "`sudo ghostvram reclaim --poke --gpu %d`."), gpu, pg < 0 ? 0 : pg);
        else
                summary(rep, EXIT_FINDING,
                        _("A confirmed ghost, but no process that holds it could be tied to it: `ghostvram scan%s "
                        "--verbose` says why; before the last resorts (--reset-gpu, --reload-uvm) try the poke: "
                        "`sudo ghostvram reclaim --poke --gpu %d`."), gpu, pg < 0 ? 0 : pg);
}

static int mode_processes(struct rc_ctx *x, struct reclaim_report *rep)
{
        struct rc_opts *o = x->o;
        const struct scan_result *res = x->res;
        struct host_opts ho;
        cli_common_host_opts(&o->c, &ho);
        ho.save_dir = NULL;
        /* facts of explicit PIDs that hold no node */
        struct host_proc extra[RC_MAX_PIDS];
        size_t n_extra = 0;
        struct confirmed conf;
        memset(&conf, 0, sizeof(conf));
        unsigned asked = 0;
        struct reclaim_plan *plan = NULL;
        struct reclaim_action *acts = NULL;
        struct recovery_gpu *rec = NULL;
        size_t n_acts = 0, n_rec = 0;
        int status = EXIT_INCOMPLETE;
        struct sampler sm;
        memset(&sm, 0, sizeof(sm));
replan:
        for (size_t i = 0; i < o->n_pids; i++) {
                if (res->facts->host && host_report_find(res->facts->host, o->pids[i]))
                        continue;
                memset(&extra[n_extra], 0, sizeof(extra[0]));
                if (host_proc_lookup(&ho, o->pids[i], &extra[n_extra]) == 0)
                        n_extra++;
        }
        x->po.explicit_pids = o->pids;
        x->po.n_explicit = o->n_pids;
        x->po.extra = extra;
        x->po.n_extra = n_extra;
        if (reclaim_plan_build(res, &x->po, &plan) < 0) {
                cli_error("reclaim", _("out of memory"));
                goto out;
        }
        rep->plan = plan;

        /* --pid never names PID 1, a kernel thread, ghostvram or an ancestor: refuse it all */
        bool hard = false;
        for (size_t i = 0; plan->explicit_mode && i < plan->n_skipped; i++) {
                const struct reclaim_skip *s = &plan->skipped[i];
                if (s->rule == RECLAIM_PID1 || s->rule == RECLAIM_KTHREAD || s->rule == RECLAIM_SELF ||
                    s->rule == RECLAIM_ANCESTOR || s->rule == RECLAIM_NO_DEVICE || s->rule == RECLAIM_GHOSTVRAM ||
                    s->rule == RECLAIM_LIVE_OWNER || s->rule == RECLAIM_LIVE_FAMILY) {
                        char comm[96];
                        esc_copy(comm, sizeof(comm), s->comm[0] ? s->comm : "?");
                        note(rep, _("refused: --pid %d (%s): %s"), (int)s->pid, comm, s->reason);
                        hard = true;
                }
        }
        if (hard) {
                summary(rep, EXIT_INCOMPLETE, _("Nothing was signalled: --pid names a process reclaim does not signal%s."),
                        o->force ? "" : _(" (see why above)"));
                goto done;
        }
        /* not root: only our own processes */
        uid_t euid = geteuid();
        bool foreign = false;
        for (size_t i = 0; euid != 0 && i < plan->n_targets; i++)
                if (plan->targets[i].uid != euid) {
                        note(rep, _("PID %d belongs to uid %u: only root may signal other users' processes"),
                             (int)plan->targets[i].pid, (unsigned)plan->targets[i].uid);
                        foreign = true;
                }
        if (conf.set && !confirmed_same(&conf, plan)) {
                /* the processes changed while the question was open: what was confirmed is
                 * not what would be signalled now */
                note(rep, _("the plan changed while the question was open (scanned again after the answer): "
                          "this is the new plan"));
                x->acting = false;
                rep->dry_run = true;
        }
        if (plan->n_targets == 0) {
                if (plan->any_confirmed_ghost && !plan->explicit_mode) {
                        no_target_summary(rep, o, res, plan);
                } else {
                        summary(rep, EXIT_OK, _("Nothing to reclaim: %s."),
                                plan->explicit_mode ? _("none of the named processes is here") : _("no confirmed ghost held by a process"));
                }
                goto done;
        }
        if (!x->acting && !o->dry_run && !o->c.json && !o->c.from_bundle && !foreign && isatty(STDIN_FILENO) &&
            isatty(STDOUT_FILENO)) {
                reclaim_text(stdout, rep, o->c.verbose);
                reclaim_report_clear_notes(rep);
                char q[128];
                snprintf(q, sizeof(q), P_("Send SIG%s to these %zu process now?", "Send SIG%s to these %zu processes now?",
                                           plan->n_targets), reclaim_signal_name(o->signal), plan->n_targets);
                if (++asked > 3) {
                        summary(rep, EXIT_INCOMPLETE, _("Nothing done: the plan kept changing; run reclaim again."));
                        printf("%s\n", str_or_empty(rep->summary));
                        status = EXIT_INCOMPLETE;
                        goto out;
                }
                if (confirm_on_tty(q)) {
                        if (x->lock_fd < 0 && take_lock(x, rep) < 0)
                                goto done;
                        /* the answer may have come minutes later: plan again from a fresh scan
                         * and act only if it is the plan that was confirmed */
                        confirmed_take(&conf, plan);
                        struct scan_once *fresh = NULL;
                        int sr = scan_once_run(&x->so, &fresh);
                        if (sr < 0) {
                                cli_error("reclaim", _("cannot scan again (%s): %s"), o->c.proc_root, strerror(-sr));
                                goto out;
                        }
                        scan_once_free(x->scan);
                        x->scan = fresh;
                        x->res = res = fresh->res;
                        for (size_t i = 0; i < n_extra; i++)
                                host_proc_clear(&extra[i]);
                        n_extra = 0;
                        rep->plan = NULL;
                        reclaim_plan_free(plan);
                        plan = NULL;
                        reclaim_report_clear_notes(rep);
                        x->acting = true;
                        rep->dry_run = false;
                        goto replan;
                } else if (stopsig_pending()) {
                        stopped_before_acting(rep); /* ^C at the question */
                        printf("\n%s\n", str_or_empty(rep->summary));
                        status = rep->exit_status;
                        goto out;
                } else {
                        summary(rep, EXIT_OK, _("Nothing done."));
                        printf("%s\n", str_or_empty(rep->summary));
                        status = EXIT_OK;
                        goto out;
                }
        }
        if (foreign) {
                summary(rep, EXIT_INCOMPLETE, _("Cannot act: run as root (sudo ghostvram reclaim)."));
                goto done;
        }
        if (!x->acting && o->grace_ms == RECLAIM_GRACE_NONE) {
                summary(rep, EXIT_OK, P_("Dry run: %zu process would get SIG%s (no SIGKILL: --grace none). Run again with --yes.",
                           "Dry run: %zu processes would get SIG%s (no SIGKILL: --grace none). Run again with --yes.",
                           plan->n_targets),
                        plan->n_targets, reclaim_signal_name(o->signal));
                goto done;
        }
        if (!x->acting) {
                summary(rep, EXIT_OK, P_("Dry run: %zu process would get SIG%s (SIGKILL after %.3g s). Run again with --yes.",
                           "Dry run: %zu processes would get SIG%s (SIGKILL after %.3g s). Run again with --yes.",
                           plan->n_targets),
                        plan->n_targets, reclaim_signal_name(o->signal),
                        (double)o->grace_ms / 1000.0);
                goto done;
        }

        if (stopsig_pending()) {
                stopped_before_acting(rep);
                goto done;
        }

        /* act: every selected GPU is watched; those whose ghost the targets hold expect it back */
        rec = calloc(plan->n_gpus ? plan->n_gpus : 1, sizeof(*rec));
        if (!rec)
                goto out;
        n_rec = plan->n_gpus;
        for (size_t i = 0; i < n_rec; i++) {
                const struct reclaim_gpu *pg = &plan->gpus[i];
                recovery_init(&rec[i], pg->index, pg->n_targets && pg->ghost_confirmed ? pg->expected_bytes : 0, pg->noise_floor);
        }
        if (sampler_init(&sm, o, rec, n_rec) < 0)
                goto out;
        out_plan(o, rep); /* what is about to be done, before it is done */
        if (o->grace_ms == RECLAIM_GRACE_NONE)
                syslog(LOG_NOTICE, "reclaim: uid %u acts on %zu process%s (SIG%s, no SIGKILL)", (unsigned)euid,
                       plan->n_targets, plan->n_targets == 1 ? "" : "es", reclaim_signal_name(o->signal));
        else
                syslog(LOG_NOTICE, "reclaim: uid %u acts on %zu process%s (SIG%s, grace %.3g s)", (unsigned)euid,
                       plan->n_targets, plan->n_targets == 1 ? "" : "es", reclaim_signal_name(o->signal),
                       (double)o->grace_ms / 1000.0);
        struct reclaim_act_opts ao = {
                .sys = &x->sys, .signal = o->signal, .grace_ms = (unsigned)o->grace_ms,
                .timeout_ms = (unsigned)o->wait_ms, .poll_ms = SAMPLE_MS, .log = rc_event, .log_ctx = &sm,
                .pause = cli_reclaim_pause, .tick = sampler_tick, .tick_ctx = &sm, .stop = stopsig_pending,
        };
        int r = reclaim_act_run(plan, &ao, &acts, &n_acts);
        if (r == -ENOSYS) {
                note(rep, _("this kernel has no pidfd_open (Linux 5.3+): reclaim never signals by bare PID"));
                summary(rep, EXIT_INCOMPLETE, _("Cannot act: no pidfd support."));
                goto done;
        }
        if (r < 0) {
                cli_error("reclaim", "%s", strerror(-r));
                goto out;
        }
        sampler_finish(&sm, o->wait_ms);
        rep->actions = acts;
        rep->n_actions = n_acts;
        rep->rec = rec;
        rep->n_rec = n_rec;
        size_t ended = 0, denied = 0;
        for (size_t i = 0; i < n_acts; i++) {
                ended += reclaim_result_ended(acts[i].result);
                denied += acts[i].result == RECLAIM_RES_NOT_PERMITTED;
        }
        if (stopsig_pending()) {
                stopped_acting(rep, acts, n_acts, sampler_elapsed(&sm));
                goto done;
        }
        for (size_t i = 0; i < n_rec; i++)
                if (rec[i].expected)
                        syslog(LOG_NOTICE, "reclaim: GPU %u: %llu MiB -> %llu MiB, %s", rec[i].index,
                               (unsigned long long)(rec[i].before >> 20), (unsigned long long)(rec[i].after >> 20),
                               rec[i].recovered ? "recovered" : "not recovered by the timeout");
        bool back = recovery_all_done(rec, n_rec);
        /* "recovered" only about memory the plan set out to free (a target's confirmed ghost) */
        bool expected = false;
        for (size_t i = 0; i < n_rec; i++)
                expected |= rec[i].expected > 0;
        if (denied == n_acts && n_acts)
                summary(rep, EXIT_INCOMPLETE, _("Cannot act: not permitted to signal these processes (run as root)."));
        else if (ended == n_acts && !expected)
                summary(rep, plan->any_confirmed_ghost ? EXIT_FINDING : EXIT_OK,
                        P_("%zu process ended; none held a confirmed ghost, so no memory was expected back%s.",
                           "%zu processes ended; none held a confirmed ghost, so no memory was expected back%s.", ended),
                        ended, plan->any_confirmed_ghost ? _(" (the ghost is still there)") : "");
        else if (ended == n_acts && back)
                summary(rep, EXIT_OK, P_("Memory recovered: %zu process ended.", "Memory recovered: %zu processes ended.", ended),
                        ended);
        else if (ended == n_acts && sm.last_failed)
                summary(rep, EXIT_FINDING,
                        _("Partial: every process ended, but the NVIDIA driver stopped answering the memory queries "
                        "(%u unanswered): whether the memory came back is unknown. A hung GPU? `ghostvram xid`."),
                        sm.failed);
        else if (ended == n_acts)
                summary(rep, EXIT_FINDING, _("Partial: every process ended, but the memory did not come back within %.3g s."),
                        (double)o->wait_ms / 1000.0);
        else
                summary(rep, EXIT_FINDING, P_("Partial: %zu of %zu process ended%s.", "Partial: %zu of %zu processes ended%s.", n_acts),
                        ended, n_acts, back ? "" : _("; memory not fully back"));
done:
        out_report(o, rep);
        status = rep->exit_status;
out:
        for (size_t i = 0; i < n_extra; i++)
                host_proc_clear(&extra[i]);
        rep->plan = NULL;
        rep->actions = NULL;
        rep->rec = NULL;
        reclaim_plan_free(plan);
        sampler_done(&sm);
        reclaim_actions_free(acts, n_acts);
        free(rec);
        return status;
}

/* A member of --cgroup's cgroup into its plan: a target, or skipped by `rule`. */
static void cgroup_plan_add(struct reclaim_plan *p, const struct host_proc *hp, bool known, enum reclaim_rule rule,
                            int gpu, const char *why)
{
        if (rule != RECLAIM_TARGET) {
                struct reclaim_skip *k = &p->skipped[p->n_skipped++];
                k->pid = hp->pid;
                snprintf(k->comm, sizeof(k->comm), "%s", known && hp->comm ? hp->comm : "");
                k->gpu = gpu;
                k->rule = rule;
                str_setf(&k->reason, "%s", why);
                return;
        }
        struct reclaim_target *t = &p->targets[p->n_targets++];
        t->pid = hp->pid;
        t->start_ticks = known ? hp->start_ticks : 0;
        t->uid = known ? hp->uid : 0;
        t->state = known ? hp->state : '?';
        snprintf(t->comm, sizeof(t->comm), "%s", known && hp->comm ? hp->comm : "");
        t->gpu = -1;
        t->link = LINK_NONE;
        str_setf(&t->why, _("a member of the cgroup (cgroup.path)"));
}

static int mode_cgroup(struct rc_ctx *x, struct reclaim_report *rep)
{
        struct rc_opts *o = x->o;
        const struct scan_result *res = x->res;
        struct reclaim_cgroup_info ci;
        memset(&ci, 0, sizeof(ci));
        rep->cgroup = &ci;
        int status = EXIT_INCOMPLETE;
        pid_t *pids = NULL;
        size_t np = 0;
        struct recovery_gpu *rec = NULL;
        struct reclaim_action *acts = NULL;
        struct reclaim_plan *plan = NULL;
        struct sampler sm;
        memset(&sm, 0, sizeof(sm));
        size_t n_rec = 0;
        int r = reclaim_cgroup_resolve("/proc", o->cgroup, ci.dir, sizeof(ci.dir), ci.path, sizeof(ci.path));
        if (r < 0) {
                rep->cgroup = NULL;
                if (r == -ENOTSUP)
                        summary(rep, EXIT_INCOMPLETE, _("Cannot act: no cgroup v2 hierarchy is mounted here (--cgroup needs cgroup2)."));
                else if (r == -EINVAL)
                        summary(rep, EXIT_USAGE, _("--cgroup %s: refused: the root cgroup, or a path with '..'"), o->cgroup);
                else
                        summary(rep, EXIT_USAGE, _("--cgroup %s: no such cgroup (%s)"), o->cgroup, strerror(-r));
                cli_error("reclaim", "%s", str_or_empty(rep->summary)); /* an error goes to stderr too, not only into the report */
                goto done;
        }
        r = reclaim_cgroup_pids(ci.dir, &pids, &np);
        if (r < 0) {
                summary(rep, EXIT_INCOMPLETE, _("Cannot read %s/cgroup.procs: %s"), ci.dir, strerror(-r));
                cli_error("reclaim", "%s", str_or_empty(rep->summary));
                goto done;
        }
        ci.n_pids = np;
        acts = calloc(np ? np : 1, sizeof(*acts));
        /* the plan, as the other modes have one: the cgroup's members are the targets, those
         * that refuse it are the skipped (the GPUs as a default plan sees them) */
        if (!acts || reclaim_plan_build(res, &x->po, &plan) < 0)
                goto out;
        reclaim_plan_clear(plan);
        plan->targets = calloc(np ? np : 1, sizeof(*plan->targets));
        plan->skipped = calloc(np ? np : 1, sizeof(*plan->skipped));
        if (!plan->targets || !plan->skipped)
                goto out;
        /* no process list from the driver: a live owner inside could not be seen */
        bool blind = false;
        for (size_t g = 0; g < res->facts->gpu->n_gpus; g++)
                if (!res->facts->gpu->gpus[g].procs_known) {
                        note(rep, _("GPU %u: NVML gave no process list, so a live owner in %s could not be ruled out"),
                             res->facts->gpu->gpus[g].index, ci.path);
                        blind = true;
                }
        /* refuse while a live owner or a protected process is inside */
        struct host_opts ho;
        cli_common_host_opts(&o->c, &ho);
        ho.save_dir = NULL;
        bool refuse = false;
        for (size_t i = 0; i < np; i++) {
                unsigned gpu = 0;
                const struct owner *ow = live_owner(res, pids[i], &gpu);
                struct host_proc hp;
                memset(&hp, 0, sizeof(hp));
                bool known = host_proc_lookup(&ho, pids[i], &hp) == 0;
                char comm[96];
                esc_copy(comm, sizeof(comm), known ? hp.comm : "?");
                snprintf(acts[i].comm, sizeof(acts[i].comm), "%s", known && hp.comm ? hp.comm : "");
                if (ow) {
                        note(rep, _("PID %d (%s) in %s is a live owner on GPU %u (%llu MiB): the job is not finished"), (int)pids[i],
                             comm, ci.path, gpu, (unsigned long long)(ow->used_bytes >> 20));
                        refuse = true;
                }
                char *why STR_AUTOFREE = NULL;
                if (!known)
                        hp.pid = pids[i];
                enum reclaim_rule rule = reclaim_protection(&hp, &x->po, &why);
                if (rule != RECLAIM_TARGET) {
                        note(rep, _("PID %d (%s) in %s: %s"), (int)pids[i], comm, ci.path, why);
                        refuse = true;
                }
                cgroup_plan_add(plan, &hp, known, ow ? RECLAIM_LIVE_OWNER : rule, ow ? (int)gpu : -1,
                                ow ? _("a live NVML-listed owner: the job is not finished") : why);
                host_proc_clear(&hp);
        }
        refuse |= blind;
        rec = watch_list(res, o->only_gpu, pids, np, &n_rec);
        if (!rec)
                goto out;
        for (size_t i = 0; i < n_rec && i < plan->n_gpus; i++)
                plan->gpus[i].expected_bytes = rec[i].expected;
        rep->plan = plan;
        rep->rec = rec;
        rep->n_rec = n_rec;
        if (refuse) {
                summary(rep, EXIT_INCOMPLETE, _("Refused: nothing in %s was signalled. End the live job's owner first, or let "
                                              "the job finish."), ci.path);
                goto done;
        }
        if (np == 0) {
                summary(rep, EXIT_OK, _("Nothing to reclaim: %s holds no process."), ci.path);
                goto done;
        }
        if (!x->acting) {
                for (size_t i = 0; i < np && i < 10; i++)
                        note(rep, _("would end PID %d"), (int)pids[i]);
                summary(rep, EXIT_OK, P_("Dry run: %zu process in %s would be ended (cgroup.kill). Run again with --yes.",
                           "Dry run: %zu processes in %s would be ended (cgroup.kill). Run again with --yes.", np),
                        np, ci.path);
                goto done;
        }
        for (size_t i = 0; i < n_rec; i++)
                rec[i].before_known = false;
        if (sampler_init(&sm, o, rec, n_rec) < 0)
                goto out;
        syslog(LOG_NOTICE, "reclaim: uid %u ends cgroup %s (%zu processes)", (unsigned)geteuid(), ci.path, np);
        if (cli_reclaim_pause)
                cli_reclaim_pause(NULL, "open");
        if (stopsig_pending()) {
                stopped_before_acting(rep);
                goto done;
        }
        out_plan(o, rep);
        r = reclaim_cgroup_kill(ci.dir, ci.path, &x->sys, (unsigned)o->wait_ms, sampler_tick, &sm, stopsig_pending,
                                &ci.res);
        if (r < 0) {
                summary(rep, EXIT_INCOMPLETE, _("Cannot act on %s: %s"), ci.path, strerror(-r));
                goto done;
        }
        ci.acted = true;
        sampler_finish(&sm, o->wait_ms);
        for (size_t i = 0; i < np; i++) {
                struct reclaim_action *a = &acts[i];
                a->pid = pids[i];
                a->gpu = -1;
                a->signals[a->n_signals++] = SIGKILL;
                uint64_t st;
                char state = '?';
                bool there = x->sys.read_stat(x->sys.ctx, pids[i], &st, &state) == 0 && state != 'Z' && state != 'X';
                /* still listed by the cgroup? (the PID may be someone else's by now) */
                pid_t *now = NULL;
                size_t nn = 0;
                bool member = false;
                if (there && reclaim_cgroup_pids(ci.dir, &now, &nn) == 0)
                        for (size_t k = 0; k < nn; k++)
                                member |= now[k] == pids[i];
                free(now);
                a->result = !member ? RECLAIM_RES_KILLED : state == 'D' ? RECLAIM_RES_STUCK_IN_D : RECLAIM_RES_SURVIVED;
                a->state = state;
                a->seconds = ci.res.seconds;
                if (a->result == RECLAIM_RES_SURVIVED && ci.res.stopped) {
                        a->result = RECLAIM_RES_LEFT;
                        reclaim_action_detailf(a, N_("still running when reclaim was stopped"));
                }
                rc_event(&sm, a, RECLAIM_EV_RESULT); /* syslog too */
        }
        rep->actions = acts;
        rep->n_actions = np;
        bool back = recovery_all_done(rec, n_rec);
        if (stopsig_pending())
                stopped_acting(rep, acts, np, sampler_elapsed(&sm));
        else if (ci.res.remaining == 0 && back)
                summary(rep, EXIT_OK, _("Memory recovered: cgroup %s is empty."), ci.path);
        else
                summary(rep, EXIT_FINDING, P_("Partial: %zu process left in %s%s.", "Partial: %zu processes left in %s%s.", ci.res.remaining),
                        ci.res.remaining, ci.path, back ? "" : _("; memory not fully back"));
done:
        out_report(o, rep);
        status = rep->exit_status;
out:
        rep->cgroup = NULL;
        rep->rec = NULL;
        rep->actions = NULL;
        rep->plan = NULL;
        reclaim_plan_free(plan);
        sampler_done(&sm);
        free(pids);
        free(rec);
        reclaim_actions_free(acts, np);
        return status;
}

/* The checks of --reset-gpu or --reload-uvm (pure: the same facts give the same report). */
static void esc_check(const struct rc_ctx *x, struct escalate_report *esc)
{
        const struct rc_opts *o = x->o;
        bool root = geteuid() == 0;
        if (o->reset_gpu) {
                struct escalate_reset_opts eo = { .gpu = (unsigned)o->only_gpu, .force = o->force,
                                                  .simulated = o->c.simulated, .root = root, .self_pid = x->po.self_pid };
                escalate_reset_check(x->res, &eo, esc);
        } else {
                struct escalate_uvm_state st;
                escalate_uvm_state_read("/sys", "/proc", &st);
                struct escalate_uvm_opts eo = { .force = o->force, .simulated = o->c.simulated, .root = root,
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

static int mode_escalate(struct rc_ctx *x, struct reclaim_report *rep)
{
        struct rc_opts *o = x->o;
        const struct scan_result *res = x->res;
        struct escalate_report esc;
        struct buf output = BUF_INIT(16384);
        struct recovery_gpu *rec = NULL;
        size_t n_rec = 0;
        int status = EXIT_INCOMPLETE;
        struct sampler sm;
        memset(&sm, 0, sizeof(sm));
        esc_check(x, &esc);
        rep->esc = &esc;
        esc_syslog(x, &esc, rep->mode);
        if (esc.refuse) {
                summary(rep, EXIT_INCOMPLETE, _("Refused: %s was not done (see why above)."), rep->mode);
                goto done;
        }
        if (!x->acting) {
                summary(rep, EXIT_OK, _("Dry run: every check passed; with --yes it runs: %s"), esc.command);
                goto done;
        }
        pid_t none = 0;
        rec = watch_list(res, o->reset_gpu ? o->only_gpu : -1, &none, 0, &n_rec);
        if (!rec)
                goto out;
        for (size_t i = 0; i < n_rec; i++) {
                const struct gpu_ledger *l = NULL;
                for (size_t g = 0; g < res->n_gpus; g++)
                        if (res->gpus[g].index == rec[i].index)
                                l = &res->gpus[g];
                if (l && l->ghost_confirmed)
                        recovery_init(&rec[i], rec[i].index, l->ghost, l->noise_floor);
        }
        if (sampler_init(&sm, o, rec, n_rec) < 0)
                goto out;
        if (stopsig_pending()) {
                stopped_before_acting(rep);
                goto done;
        }
        out_plan(o, rep);
        sampler_tick(&sm, 0); /* before; NVML is shut down again after each sample */
        int cs = 0;
        char err[256] = "";
        if (o->reset_gpu) {
                char smi[PATH_MAX];
                if (escalate_find_program("nvidia-smi", smi, sizeof(smi)) < 0) {
                        summary(rep, EXIT_INCOMPLETE, _("Cannot act: nvidia-smi is not on PATH."));
                        goto done;
                }
                const char *bus = strrchr(esc.command, ' ') + 1;
                char *argv[] = { smi, (char *)"--gpu-reset", (char *)"-i", (char *)bus, NULL };
                syslog(LOG_NOTICE, "reclaim: running %s", esc.command);
                pid_t stuck = 0;
                int r = escalate_run(argv, (unsigned)o->wait_ms, &output, &cs, &stuck);
                rep->esc_ran = r == 0;
                rep->esc_status = cs;
                rep->esc_output = buf_str(&output);
                /* i18n: no: err goes to syslog as it is, and syslog lines stay English */
                if (r == -EDEADLK)
                        snprintf(err, sizeof(err),
                                 "the reset did not finish within %.3g s and its process (PID %d) did not end %.3g s "
                                 "after SIGKILL: stuck in the driver (D state); `cat /proc/%d/stack`, `ghostvram xid`, "
                                 "then a reboot",
                                 (double)o->wait_ms / 1000.0, (int)stuck, ESCALATE_KILL_WAIT_MS / 1000.0, (int)stuck);
                else if (r < 0)
                        snprintf(err, sizeof(err), "%s",
                                 r == -ETIMEDOUT ? "the reset did not finish in time (ended with SIGKILL)" : strerror(-r));
        } else {
                syslog(LOG_NOTICE, "reclaim: reloading nvidia_uvm");
                int r = escalate_uvm_reload(err, sizeof(err));
                rep->esc_ran = true;
                rep->esc_status = r < 0 ? 1 : 0;
                cs = rep->esc_status;
        }
        syslog(LOG_NOTICE, "reclaim: %s exit status %d%s%s", rep->mode, cs, err[0] ? ": " : "", err);
        sampler_finish(&sm, o->wait_ms);
        rep->rec = rec;
        rep->n_rec = n_rec;
        if (err[0])
                note(rep, "%s", err);
        if (stopsig_pending()) {
                stopped(rep, sampler_elapsed(&sm));
                str_setf(&rep->summary,
                         rep->esc_ran ? _("Stopped by %s after %s ran; the memory was not measured to the end.")
                                      : _("Stopped by %s after %s was started; the memory was not measured to the end."),
                         stopsig_name(rep->stopped), rep->mode);
        } else if (rep->esc_ran && cs == 0 && recovery_all_done(rec, n_rec))
                summary(rep, EXIT_OK, _("Done: %s; memory recovered."), rep->mode);
        else
                summary(rep, EXIT_FINDING,
                        rep->esc_ran && cs == 0 ? _("Partial: %s ran, but the memory did not come back.") : _("Partial: %s failed."),
                        rep->mode);
done:
        out_report(o, rep);
        status = rep->exit_status;
out:
        rep->esc = NULL;
        rep->rec = NULL;
        escalate_report_clear(&esc);
        buf_free(&output);
        sampler_done(&sm);
        free(rec);
        return status;
}

/* The CUDA driver library the poke loads: --cuda-lib, the simulated one on a simulated host
 * (found as the NVML stand-in is: simstate_find_file), else libcuda.so.1 by the loader's search.
 * false when a named file is not there (the child would fail to load it). */
static bool poke_library(const struct rc_opts *o, char *out, size_t outlen)
{
        if (o->cuda_lib) {
                snprintf(out, outlen, "%s", o->cuda_lib);
                return !strchr(o->cuda_lib, '/') || access(o->cuda_lib, R_OK) == 0;
        }
        if (o->c.simulated) {
                if (simstate_find_file("cuda/libcuda.so.1", out, outlen) == 0)
                        return true;
                snprintf(out, outlen, "%s", "cuda/libcuda.so.1 (simulated)");
                return false;
        }
        snprintf(out, outlen, "%s", "libcuda.so.1");
        return true;
}

/* The summary of a poke that ran, by its verdict; the next step is the escalation's dry run. */
static void poke_summary(struct reclaim_report *rep, const struct reclaim_poke_info *pi, const struct rc_opts *o)
{
        const char *gpu = o->gpu_spec;
        switch (pi->verdict) {
        case POKE_GAVE_BACK:
                summary(rep, EXIT_OK, _("The poke gave back %.0f MiB on GPU %u."), (double)pi->freed / (1 << 20), pi->index);
                return;
        case POKE_NO_LIBRARY:
                summary(rep, EXIT_INCOMPLETE, _("Cannot poke: the CUDA driver library %s could not be loaded (%s)."),
                        pi->lib, pi->res.steps.error);
                return;
        case POKE_HUNG:
                summary(rep, EXIT_FINDING,
                        _("The poke hung in the driver and was killed after %.3g s: the driver does not answer a new "
                          "client. Next: `ghostvram xid`, then `sudo ghostvram reclaim --reset-gpu --gpu %s` (a dry "
                          "run: what a reset needs)."), pi->res.seconds, gpu);
                return;
        case POKE_FAILED:
                summary(rep, EXIT_FINDING,
                        _("The poke made no context (%s failed) and nothing changed. Next: `sudo ghostvram reclaim "
                          "--reset-gpu --gpu %s` (a dry run: what a reset needs)."),
                        poke_step_name(pi->res.steps.failed), gpu);
                return;
        case POKE_UNMEASURED:
                summary(rep, EXIT_FINDING, _("The poke ran, but the driver gave no memory figure to compare."));
                return;
        case POKE_NOTHING:
        default:
                summary(rep, EXIT_FINDING,
                        _("Nothing changed: the driver keeps the memory after a new context. Next: `sudo ghostvram "
                          "reclaim --reset-gpu --gpu %s` (a dry run: what a reset needs), then --reload-uvm."),
                        gpu);
                return;
        }
}

/* --poke: check, then (with --yes) sample, run the child, sample until the memory is back or
 * --wait ends, and judge. */
static int mode_poke(struct rc_ctx *x, struct reclaim_report *rep)
{
        struct rc_opts *o = x->o;
        const struct scan_result *res = x->res;
        struct escalate_report esc;
        struct reclaim_poke_info pi;
        struct recovery_gpu *rec = NULL;
        size_t n_rec = 0;
        int status = EXIT_INCOMPLETE;
        struct sampler sm;
        memset(&sm, 0, sizeof(sm));
        memset(&pi, 0, sizeof(pi));
        char lib[PATH_MAX];
        bool have_lib = poke_library(o, lib, sizeof(lib));
        pi.index = (unsigned)o->only_gpu;
        pi.lib = lib;
        pi.bytes = POKE_DEFAULT_BYTES;
        pi.timeout_ms = o->call_timeout_given ? o->c.timeout_ms : POKE_DEFAULT_TIMEOUT_MS;
        const struct gpu_report *gr = res->facts->gpu;
        for (size_t i = 0; gr && i < gr->n_gpus; i++)
                if (gr->gpus[i].index == pi.index) {
                        snprintf(pi.uuid, sizeof(pi.uuid), "%s", gr->gpus[i].uuid);
                        snprintf(pi.pci_bus_id, sizeof(pi.pci_bus_id), "%s", gr->gpus[i].pci_bus_id);
                }
        struct poke_check_opts co = { .gpu = pi.index, .force = o->force, .have_lib = have_lib, .lib = lib };
        poke_check(res, &co, &esc);
        if (!pi.uuid[0] && !esc.refuse) {
                esc.refuse = true;
                str_setf(&esc.reasons[esc.n_reasons++], _("NVML gives no UUID for GPU %u: the poke cannot name it to CUDA"),
                         pi.index);
        }
        rep->esc = &esc;
        rep->poke = &pi;
        for (size_t i = 0; i < esc.n_reasons; i++)
                syslog(LOG_NOTICE, "reclaim: poke refused: %s", esc.reasons[i]);
        if (esc.refuse) {
                summary(rep, EXIT_INCOMPLETE, _("Refused: the poke was not done (see why above)."));
                goto done;
        }
        if (!x->acting) {
                summary(rep, EXIT_OK,
                        _("Dry run: every check passed; with --yes a child makes a CUDA context on GPU %u, allocates "
                          "%.0f MiB, frees it, and the memory is measured before and after."),
                        pi.index, (double)pi.bytes / (1 << 20));
                goto done;
        }
        pid_t none = 0;
        rec = watch_list(res, o->only_gpu, &none, 0, &n_rec);
        if (!rec || sampler_init(&sm, o, rec, n_rec) < 0)
                goto out;
        for (size_t i = 0; i < n_rec; i++)
                for (size_t g = 0; g < res->n_gpus; g++)
                        if (res->gpus[g].index == rec[i].index && res->gpus[g].ghost_confirmed)
                                recovery_init(&rec[i], rec[i].index, res->gpus[g].ghost, res->gpus[g].noise_floor);
        char exe[PATH_MAX];
        ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (el < 0) {
                summary(rep, EXIT_INCOMPLETE, "Cannot act: /proc/self/exe: %s.", strerror(errno));
                goto done;
        }
        exe[el] = '\0';
        out_plan(o, rep);
        sampler_tick(&sm, 0); /* before */
        syslog(LOG_NOTICE, "reclaim: poke of GPU %u (%s) with %s", pi.index, pi.uuid, lib);
        struct poke_run_opts ro = { .exe = exe, .lib = lib, .uuid = pi.uuid, .bytes = pi.bytes, .timeout_ms = pi.timeout_ms };
        int r = poke_run(&ro, &pi.res);
        if (r < 0) {
                summary(rep, EXIT_INCOMPLETE, "Cannot act: the poke could not start: %s.", strerror(-r));
                goto done;
        }
        pi.ran = true;
        rep->esc_ran = true;
        rep->esc_status = pi.res.exit_status;
        syslog(LOG_NOTICE, "reclaim: poke of GPU %u: %s after %.2f s", pi.index,
               pi.res.timed_out ? "killed at the deadline" : pi.res.steps_known && pi.res.steps.failed < 0 ? "done" : "failed",
               pi.res.seconds);
        sm.t0 = monotonic_ms(); /* --wait counts from the end of the poke */
        sampler_finish(&sm, o->wait_ms);
        rep->rec = rec;
        rep->n_rec = n_rec;
        pi.verdict = poke_judge(&pi.res, n_rec ? &rec[0] : NULL, &pi.freed);
        if (stopsig_pending()) {
                stopped(rep, sampler_elapsed(&sm));
                str_setf(&rep->summary, _("Stopped by %s after the poke; the memory was not measured to the end."),
                         stopsig_name(rep->stopped));
        } else {
                poke_summary(rep, &pi, o);
        }
done:
        out_report(o, rep);
        status = rep->exit_status;
out:
        rep->esc = NULL;
        rep->poke = NULL;
        rep->rec = NULL;
        escalate_report_clear(&esc);
        sampler_done(&sm);
        free(rec);
        return status;
}

/* The child of --poke (`ghostvram __poke LIB UUID BYTES`, exec'd by poke_run, never typed): the
 * steps' line on stdout. Exit 0 when every step was done, 1 otherwise, 2 on bad arguments. */
int cmd_poke_child(int argc, char **argv)
{
        uint64_t bytes;
        if (argc != 4 || parse_u64(argv[3], &bytes) < 0 || bytes == 0 || bytes > ((uint64_t)1 << 30))
                return EXIT_USAGE;
        struct poke_steps st;
        int r = poke_child_run(argv[1], argv[2], bytes, &st);
        char line[512];
        poke_steps_format(&st, line, sizeof(line));
        fputs(line, stdout);
        fflush(stdout);
        return r == 0 ? EXIT_OK : EXIT_FINDING;
}

/* ---- the command ------------------------------------------------------------------------------------ */

/* One of reclaim's own options into o: 1 taken, 0 not reclaim's own, -1 a usage error (said). */
static int rc_option(struct rc_opts *o, int opt, const char *arg)
{
        const char *cmd = "reclaim";
        unsigned u;
        uint64_t v;
        switch (opt) {
        case 'g':
                if (cli_gpu_spec_check(arg) < 0) {
                        cli_error(cmd, _("--gpu: '%s' is not a GPU index, UUID or PCI bus id"), arg);
                        return -1;
                }
                o->gpu_spec = arg;
                if (parse_uint_range(arg, 0, 1023, &u) == 0)
                        o->only_gpu = (int)u;
                return 1;
        case 'p':
                if (parse_pids(o, arg) < 0) {
                        cli_error(cmd, _("--pid: '%s' is not a PID or a comma-separated list of PIDs (at most %d)"),
                                  arg, RC_MAX_PIDS);
                        return -1;
                }
                return 1;
        case 'c':
                if (cli_path_arg(cmd, "--cgroup", arg) < 0)
                        return -1;
                o->cgroup = arg;
                return 1;
        case 'y': o->yes = true; return 1;
        case 'n': o->dry_run = true; return 1;
        case 's':
                if (reclaim_signal_parse(arg, &o->signal) < 0) {
                        cli_error(cmd, _("--signal: '%s' is not one of TERM, INT, HUP, QUIT, USR1, USR2, KILL"), arg);
                        return -1;
                }
                return 1;
        case 'G':
                if (!strcmp(arg, "none")) {
                        o->grace_ms = RECLAIM_GRACE_NONE;
                        return 1;
                }
                if (parse_duration_ms(arg, &o->grace_ms) < 0 || o->grace_ms > 3600 * 1000) {
                        cli_error(cmd, _("--grace: '%s' is not a duration up to 1h (e.g. 5s, 500ms) or none"), arg);
                        return -1;
                }
                return 1;
        case 'W':
                if (parse_duration_ms(arg, &o->wait_ms) < 0 || o->wait_ms == 0 ||
                    o->wait_ms > 3600 * 1000) {
                        cli_error(cmd, _("--wait: '%s' is not a duration between 1ms and 1h (e.g. 60s)"), arg);
                        return -1;
                }
                o->wait_given = true;
                return 1;
        case 'K': o->poke = true; return 1;
        case 'L':
                if (cli_path_arg(cmd, "--cuda-lib", arg) < 0)
                        return -1;
                o->cuda_lib = arg;
                return 1;
        case 'P':
                if (cli_path_arg(cmd, "--policy", arg) < 0)
                        return -1;
                o->policy = arg;
                return 1;
        case 'J': o->json_stream = true; cli_json_lines(); return 1; /* also when abbreviated */
        case 'R': o->reset_gpu = true; return 1;
        case 'U': o->reload_uvm = true; return 1;
        case 'f': o->force = true; return 1;
        case 'C':
                if (parse_duration_ms(arg, &o->confirm_ms) < 0 || o->confirm_ms > 600000) {
                        cli_error(cmd, _("--confirm: '%s' is not a duration up to 10m (e.g. 2s, 500ms, 0)"), arg);
                        return -1;
                }
                return 1;
        case 'F':
                if (parse_u64(arg, &v) < 0 || v > (1u << 24)) {
                        cli_error(cmd, _("--noise-floor: '%s' is not a number of MiB"), arg);
                        return -1;
                }
                o->floor_mib = v;
                o->floor_set = true;
                return 1;
        default:
                return 0;
        }
}

/* The options that go together, and those that do not: 0, or -1 (said). */
static int rc_combinations(const struct rc_opts *o)
{
        const char *cmd = "reclaim";
        if (!o->poke && o->grace_ms != RECLAIM_GRACE_NONE && o->grace_ms >= o->wait_ms && o->signal != SIGKILL) {
                cli_error(cmd, _("--grace must be shorter than --wait"));
                return -1;
        }
        if (o->cgroup && o->n_pids) {
                cli_error(cmd, _("--cgroup and --pid cannot be used together"));
                return -1;
        }
        if (o->reset_gpu + o->reload_uvm > 1 || ((o->reset_gpu || o->reload_uvm) && (o->cgroup || o->n_pids))) {
                cli_error(cmd, _("--reset-gpu, --reload-uvm, --cgroup and --pid are separate modes: use one"));
                return -1;
        }
        if (o->poke && (o->reset_gpu || o->reload_uvm || o->cgroup || o->n_pids)) {
                cli_error(cmd, _("--poke, --reset-gpu, --reload-uvm, --cgroup and --pid are separate modes: use one"));
                return -1;
        }
        if (o->poke && !o->gpu_spec) {
                cli_error(cmd, _("--poke needs --gpu N (the GPU to poke)"));
                return -1;
        }
        if (o->cuda_lib && !o->poke) {
                cli_error(cmd, _("--cuda-lib is the library --poke loads: add --poke"));
                return -1;
        }
        if (o->reset_gpu && !o->gpu_spec) {
                cli_error(cmd, _("--reset-gpu needs --gpu N (the GPU to reset)"));
                return -1;
        }
        /* acting re-checks start times in the live /proc: a plan from elsewhere is not this host's */
        if (o->yes && (o->proc_given || o->c.from_bundle)) {
                cli_error(cmd, _("--yes cannot be used with %s: the plan would not come from this host's live /proc "
                               "(start times are re-checked there); drop --yes to see the plan"),
                          o->c.from_bundle ? "--from-bundle" : "--proc");
                return -1;
        }
        if (o->yes && o->dry_run) {
                cli_error(cmd, _("--yes and --dry-run contradict each other"));
                return -1;
        }
        if (o->json_stream && o->c.json) {
                cli_error(cmd, _("--json (one document at the end) and --json-stream (a line per event) exclude each other"));
                return -1;
        }
        return 0;
}

static int parse_args(int argc, char **argv, struct rc_opts *o)
{
        static const struct option opts[] = {
                { "gpu", required_argument, NULL, 'g' },
                { "pid", required_argument, NULL, 'p' },
                { "cgroup", required_argument, NULL, 'c' },
                { "yes", no_argument, NULL, 'y' },
                { "dry-run", no_argument, NULL, 'n' },
                { "signal", required_argument, NULL, 's' },
                { "grace", required_argument, NULL, 'G' },
                { "wait", required_argument, NULL, 'W' },
                { "policy", required_argument, NULL, 'P' },
                { "reset-gpu", no_argument, NULL, 'R' },
                { "reload-uvm", no_argument, NULL, 'U' },
                { "force", no_argument, NULL, 'f' },
                { "confirm", required_argument, NULL, 'C' },
                { "noise-floor", required_argument, NULL, 'F' },
                { "json-stream", no_argument, NULL, 'J' },
                { "poke", no_argument, NULL, 'K' },
                { "cuda-lib", required_argument, NULL, 'L' },
                CLI_COMMON_LONGOPTS,
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        const char *cmd = "reclaim";
        int opt;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "hvyn", opts, NULL)) != -1) {
                if (opt == 'h') {
                        reclaim_usage(stdout);
                        return 1;
                }
                int r = rc_option(o, opt, optarg);
                if (r > 0)
                        continue;
                if (r < 0)
                        return -1;
                if (opt == CLI_OPT_PROC)
                        o->proc_given = true;
                if (opt == CLI_OPT_CALL_TIMEOUT)
                        o->call_timeout_given = true;
                r = cli_common_option(&o->c, opt, optarg, cmd);
                if (r < 0)
                        return -1;
                if (r == 0) {
                        reclaim_usage(stderr);
                        cli_error(cmd, _("invalid option '%s' (see --help)"), argv[optind - 1]);
                        return -1;
                }
        }
        if (optind < argc) {
                cli_error(cmd, _("unexpected argument '%s' (see --help)"), argv[optind]);
                return -1;
        }
        return rc_combinations(o);
}

static int reclaim_main(int argc, char **argv);

static bool wants_json_stream(int argc, char **argv)
{
        for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
                if (strcmp(argv[i], "--json-stream") == 0)
                        return true;
        return false;
}

/* With --json every error is JSON on stdout too (the message stays on stderr); with
 * --json-stream it is one line, as every line of the stream. */
int cmd_reclaim(int argc, char **argv)
{
        bool stream = wants_json_stream(argc, argv);
        if (stream)
                cli_json_lines();
        int status = reclaim_main(argc, argv);
        if (cli_wants_json(argc, argv) || stream)
                cli_json_error_if_silent("reclaim", status);
        return status;
}

static int reclaim_main(int argc, char **argv)
{
        struct rc_opts o;
        memset(&o, 0, sizeof(o));
        cli_common_init(&o.c, RECLAIM_ACCEPTS);
        o.c.timeout_now = _("--wait (how long to wait for the processes to end and the memory to come back)");
        o.only_gpu = -1;
        o.signal = SIGTERM;
        o.grace_ms = 5000;
        o.wait_ms = 60000;
        o.confirm_ms = 2000;
        int r = parse_args(argc, argv, &o);
        if (r != 0)
                return r > 0 ? EXIT_OK : EXIT_USAGE;
        if (cli_common_finish(&o.c, "reclaim") < 0)
                return EXIT_USAGE;
        if (o.gpu_spec && o.only_gpu < 0) { /* a UUID or PCI bus id */
                int gr = cli_gpu_resolve(&o.c, o.gpu_spec, false, &o.only_gpu, "reclaim");
                if (gr != EXIT_OK)
                        return gr;
        }

        struct rc_ctx x;
        memset(&x, 0, sizeof(x));
        x.o = &o;
        x.lock_fd = -1;
        struct reclaim_report rep;
        memset(&rep, 0, sizeof(rep));
        rep.mode = o.cgroup ? "cgroup" : o.reset_gpu ? "reset-gpu" : o.reload_uvm ? "reload-uvm" : o.poke ? "poke" : "processes";
        if (o.poke && !o.wait_given)
                o.wait_ms = POKE_DEFAULT_WAIT_MS;
        rep.simulated = o.c.simulated;
        rep.signal = o.cgroup ? SIGKILL : o.signal;
        rep.grace_ms = (unsigned)o.grace_ms;
        rep.timeout_ms = (unsigned)o.wait_ms;
        int status = EXIT_INCOMPLETE;
        if (load_policy(&o, &x.policy) < 0) {
                reclaim_policy_free(&x.policy);
                return EXIT_USAGE;
        }
        /* from here a stop signal ends reclaim between two steps, with its report */
        struct stopsig_saved saved_signals;
        stopsig_catch(&saved_signals);
        /* a reader that goes away (`reclaim --yes | head`, an Epilog killed at its time limit)
         * must not end reclaim between a signal and its SIGKILL: the act goes on, bounded, and
         * syslog keeps its record; only the lines are lost */
        struct sigaction pipe_ign = { .sa_handler = SIG_IGN }, pipe_old;
        sigemptyset(&pipe_ign.sa_mask);
        sigaction(SIGPIPE, &pipe_ign, &pipe_old);
        x.acting = o.yes && !o.dry_run && !o.c.from_bundle;
        rep.dry_run = !x.acting;
        reclaim_sys_real(&x.sys, "/proc");
        openlog("ghostvram", LOG_PID, LOG_AUTHPRIV);
        if (x.acting) {
                if (reclaim_pidfd_supported(&x.sys) < 0) {
                        note(&rep, _("this kernel has no pidfd_open (Linux 5.3+): reclaim never signals by bare PID"));
                        summary(&rep, EXIT_INCOMPLETE, _("Cannot act: no pidfd support."));
                        out_report(&o, &rep);
                        status = EXIT_INCOMPLETE;
                        goto out;
                }
                if (take_lock(&x, &rep) < 0) {
                        out_report(&o, &rep);
                        status = EXIT_INCOMPLETE;
                        goto out;
                }
        }

        struct scan_once_opts so;
        cli_scan_once_opts(&o.c, &so);
        so.confirm_ms = o.confirm_ms;
        so.wait = stop_wait;
        if (o.floor_set)
                so.ledger.floor_min_bytes = o.floor_mib << 20;
        if (x.acting && !o.c.json && !o.json_stream) {
                /* a first line at once: the scan's confirming sample takes --confirm */
                banner(&o);
                printf(_("Scanning (a ghost is confirmed by a second sample %.3g s after the first) ...\n\n"),
                       (double)o.confirm_ms / 1000.0);
                fflush(stdout);
        }
        r = scan_once_run(&so, &x.scan);
        if (r < 0 && stopsig_pending()) {
                stopped_before_acting(&rep);
                out_report(&o, &rep);
                status = rep.exit_status;
                goto out;
        }
        if (r < 0) {
                cli_error("reclaim", _("cannot scan (%s): %s"), o.c.proc_root, strerror(-r));
                goto out;
        }
        x.res = x.scan->res;
        x.so = so;
        const struct gpu_report *gr = x.res->facts->gpu;
        if (!gr->driver_present && !o.c.from_bundle) {
                cli_error("reclaim", "%s", gr->error[0] ? gr->error : _("no NVIDIA driver"));
                goto out;
        }
        if (o.only_gpu >= 0 && gr->driver_present && (size_t)o.only_gpu >= gr->n_gpus) {
                cli_error("reclaim", P_("--gpu %d: this host has %zu GPU", "--gpu %d: this host has %zu GPUs", gr->n_gpus), o.only_gpu,
                          gr->n_gpus);
                status = EXIT_USAGE;
                goto out;
        }
        struct host_opts ho;
        cli_common_host_opts(&o.c, &ho);
        ho.save_dir = NULL;
        memset(&x.self, 0, sizeof(x.self));
        x.po.policy = &x.policy;
        x.po.ancestors = x.anc;
        if (o.c.from_bundle) {
                /* the plan of the ghostvram that recorded it, as far as the bundle kept it */
                const struct facts *bf = x.res->facts;
                const struct host_report *bh = bf->host;
                x.po.self_pid = bh ? bh->self_pid : 0;
                x.po.n_ancestors = bh ? bh->n_self_ancestors : 0;
                if (x.po.n_ancestors)
                        memcpy(x.anc, bh->self_ancestors, x.po.n_ancestors * sizeof(x.anc[0]));
                x.po.self_proc = bf->self_known ? &bf->self : NULL;
        } else {
                bool have_self = host_proc_lookup(&ho, getpid(), &x.self) == 0;
                x.po.self_pid = getpid();
                x.po.n_ancestors = ancestors_of_self(&ho, x.anc, RC_MAX_ANCESTORS);
                x.po.self_proc = have_self ? &x.self : NULL;
        }
        x.po.only_gpu = o.only_gpu;
        x.po.force = o.force;

        if (o.cgroup)
                status = mode_cgroup(&x, &rep);
        else if (o.reset_gpu || o.reload_uvm)
                status = mode_escalate(&x, &rep);
        else if (o.poke)
                status = mode_poke(&x, &rep);
        else
                status = mode_processes(&x, &rep);
        host_proc_clear(&x.self);
out:
        scan_once_free(x.scan);
        reclaim_policy_free(&x.policy);
        if (x.lock_fd >= 0)
                close(x.lock_fd);
        closelog();
        reclaim_report_clear(&rep);
        stopsig_restore(&saved_signals);
        sigaction(SIGPIPE, &pipe_old, NULL);
        return status;
}
