#define _GNU_SOURCE 1 /* environ */
/* watch: sample continuously, print a line when a GPU's verdict or ghost changes, raise an
 * alert when a confirmed ghost stays above a threshold for a while (and say when it clears),
 * and run a hook with the finding in its environment. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "run/scan_run.h"
#include "render/json_util.h"
#include "render/metrics.h"
#include "util/deadline.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/spawn.h"
#include "util/timefmt.h"

#define MIB (1024ull * 1024ull)
#define WATCH_MAX_GPUS 1024

#define WATCH_RECLAIMS_PER_HOUR 6

/* a watch records no bundle (a bundle is one scan's answers); its lines show no more with -v */
#define WATCH_ACCEPTS (CLI_COMMON_ALL & ~(CLI_SAVE_BUNDLE | CLI_FROM_BUNDLE | CLI_VERBOSE))

static void watch_usage(FILE *f)
{
        fputs(_("Usage: ghostvram watch [--interval 2s] [--threshold MIB] [--for DURATION]\n"
              "                       [--exec CMD] [--textfile DIR] [--gpu N] [OPTIONS]\n\n"
              "Sample every --interval and print a line when a GPU's verdict or ghost changes.\n"
              "When a GPU's confirmed ghost (above the noise floor in two consecutive samples)\n"
              "stays above --threshold for --for, print an ALERT line and run --exec; print a\n"
              "CLEAR line (and run --exec again) when it drops back.\n\n"), f);
        fprintf(f, _("Options:\n"
              "  --interval DURATION  time between samples (default 2s; 200ms to 1h)\n"
              "  --threshold MIB      alert above this confirmed ghost in MiB (default 0: any)\n"
              "  --for DURATION       ...held this long (default 30s; 0 = at once)\n"
              "  --exec CMD           run '/bin/sh -c CMD' on each alert and clear, with the\n"
              "                       finding in its environment (below); its output goes to\n"
              "                       ours; it is stopped (SIGTERM, then SIGKILL) after\n"
              "                       --exec-timeout\n"
              "  --exec-timeout DURATION\n"
              "                       default 30s\n"
              "  --textfile DIR       write DIR/ghostvram.prom after each sample\n"
              "                       (node_exporter's textfile collector)\n"
              "  --gpu ID             watch only this GPU: an index, a UUID or a PCI bus id\n"
              "  --count N            stop after N samples (default: until SIGINT/SIGTERM)\n"
              "  --reclaim            heal: while an alert stands, run 'ghostvram reclaim\n"
              "                       --gpu N --yes' (every safety rule of reclaim applies:\n"
              "                       a fresh two-sample scan, only linked orphans, pidfds,\n"
              "                       re-checked start times)\n"
              "  --reclaim-every DURATION\n"
              "                       at most one reclaim per GPU this often (default 10m),\n"
              "                       and at most %d per hour in all\n"), WATCH_RECLAIMS_PER_HOUR);
        /* xgettext:no-c-format */
        fputs(_("  --noise-floor MIB    minimum ghost in MiB (default 64; 1% of the GPU if\n"
              "                       larger)\n"
              "  --no-kernel          do not follow the kernel log (new Xid events are printed\n"
              "                       as they come; /dev/kmsg needs root or CAP_SYSLOG)\n"), f);
        cli_common_help(f, WATCH_ACCEPTS);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\nWith --json each line is a JSON object (event: state, alert, clear, xid,\n"
              "error).\n\n"), f);
        fputs(_("Hook environment: GHOSTVRAM_EVENT (alert or clear), GHOSTVRAM_GPU,\n"
              "GHOSTVRAM_UUID, GHOSTVRAM_PCI_BUS_ID, GHOSTVRAM_VERDICT, GHOSTVRAM_GHOST_BYTES,\n"
              "GHOSTVRAM_PIDS (space separated), GHOSTVRAM_THRESHOLD_BYTES, GHOSTVRAM_SINCE\n"
              "(Unix time the ghost went above the threshold), GHOSTVRAM_SUMMARY,\n"
              "GHOSTVRAM_NEXT_STEP.\n\n"), f);
        fputs(_("Examples:\n"
              "  sudo ghostvram watch --threshold 1024 --for 2m --reclaim\n"
              "  sudo ghostvram watch --threshold 1024 --for 2m \\\n"
              "       --exec 'logger -t ghostvram \"$GHOSTVRAM_SUMMARY\"'\n"
              "  ghostvram watch --interval 10s \\\n"
              "       --textfile /var/lib/node_exporter/textfile_collector\n\n"), f);
        fputs(_("Stop with SIGINT or SIGTERM: the sample in progress finishes, then it exits 0.\n"
              "Exit status: 0 stopped (after at least one good sample); 2 usage error; 3 could\n"
              "not start, or no sample ever succeeded (no driver, a driver that never\n"
              "answered).\n"), f);
}

struct gpu_watch {
        bool seen;
        char verdict[24];
        unsigned long long ghost_mib;
        double above_since;     /* wall time the confirmed ghost went above the threshold; 0 if not */
        bool alerting;
};

struct watch {
        struct cli_common c;
        bool reclaim;
        uint64_t reclaim_every_ms;
        double last_reclaim[WATCH_MAX_GPUS];    /* wall time of the last attempt per GPU */
        double reclaim_times[WATCH_RECLAIMS_PER_HOUR]; /* the last attempts, for the hourly cap */
        size_t n_reclaim_times;
        uint64_t interval_ms, for_ms, exec_timeout_ms, threshold_bytes, count;
        const char *exec;
        const char *textfile;
        int only_gpu;
        struct gpu_watch gpus[WATCH_MAX_GPUS];
        bool error_shown;
        struct metrics_counters counters;
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

/* One output line: text, or a JSON object with --json (the vocabulary of docs/json.md: a
 * GPU's index, uuid and pci_bus_id, PIDs as an array of numbers, the time twice). */
static void emit_xid(const struct watch *w, const char *event, const struct gpu_info *g, const struct gpu_ledger *l,
                     const char *text, const struct xid_event *xe)
{
        char ts[40];
        double now = wall_clock_now();
        if (rfc3339_format(now, false, ts, sizeof(ts)) < 0)
                ts[0] = '\0';
        if (w->c.json) {
                json_t *o = json_object();
                json_set(o, "schema_version", json_integer(GV_SCHEMA_VERSION));
                json_set_time(o, "time", now, 1);
                json_set(o, "event", json_string(event));
                if (g && l) {
                        const struct finding *fd = l->n_findings ? &l->findings[0] : NULL;
                        json_t *pids = json_array();
                        for (size_t i = 0; fd && i < fd->n_pids; i++)
                                json_array_append_new(pids, json_integer(fd->pids[i]));
                        json_set(o, "index", json_integer(g->index));
                        json_set(o, "uuid", g->uuid[0] ? json_text(g->uuid) : json_null());
                        json_set(o, "pci_bus_id", g->pci_bus_id[0] ? json_text(g->pci_bus_id) : json_null());
                        json_set(o, "verdict", json_string(verdict_of(l)));
                        json_set(o, "ghost_bytes", json_integer((json_int_t)l->ghost));
                        json_set(o, "ghost_confirmed", json_boolean(l->ghost_confirmed));
                        json_set(o, "pids", pids);
                }
                if (xe)
                        json_set(o, "kernel_event", xid_event_to_json(xe));
                json_set(o, "message", json_text(text));
                json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
                json_decref(o);
                fputc('\n', stdout);
        } else {
                printf("%s %s\n", ts, text);
        }
        fflush(stdout);
}

static void emit(const struct watch *w, const char *event, const struct gpu_info *g, const struct gpu_ledger *l,
                 const char *text)
{
        emit_xid(w, event, g, l, text, NULL);
}

/* Run the hook and wait for it at most exec_timeout_ms; its output goes to ours. Its
 * environment is built before the fork: this process has threads (driver calls under a
 * deadline), so the child runs only async-signal-safe calls until execve. */
static void run_hook(const struct watch *w, const char *event, const struct gpu_info *g, const struct gpu_ledger *l,
                     double since)
{
        if (!w->exec)
                return;
        char gpu_s[16], ghost_s[32], thr_s[32], since_s[32], pids[1024];
        const struct finding *fd = l->n_findings ? &l->findings[0] : NULL;
        snprintf(gpu_s, sizeof(gpu_s), "%u", g->index);
        snprintf(ghost_s, sizeof(ghost_s), "%llu", (unsigned long long)confirmed_ghost(l));
        snprintf(thr_s, sizeof(thr_s), "%llu", (unsigned long long)w->threshold_bytes);
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
                cli_error("watch", "--exec: out of memory");
                return;
        }
        char sh[] = "sh", dash_c[] = "-c";
        char *const argv[] = { sh, dash_c, (char *)w->exec, NULL };
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
                cli_error("watch", "--exec: cannot fork: %s", strerror(errno));
                env_free(envp);
                return;
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
        unsigned long long deadline = monotonic_ms() + w->exec_timeout_ms;
        int status = 0;
        int killed = 0; /* 1: SIGTERM sent, 2: SIGKILL sent */
        for (;;) {
                pid_t r = waitpid(pid, &status, WNOHANG);
                if (r == pid || (r < 0 && errno != EINTR))
                        break;
                unsigned long long now = monotonic_ms();
                if (now >= deadline && !killed) {
                        cli_error("watch", "--exec: the hook ran longer than %.3g s; stopping it",
                                  (double)w->exec_timeout_ms / 1000.0);
                        kill(-pid, SIGTERM);
                        killed = 1;
                        deadline = now + 2000;
                } else if (now >= deadline && killed == 1) {
                        kill(-pid, SIGKILL);
                        killed = 2;
                        deadline = now + 5000;
                } else if (now >= deadline) {
                        /* SIGKILL takes effect when a driver call returns: do not wait for ever */
                        cli_error("watch", "--exec: the hook (PID %d) did not end 5 s after SIGKILL; not waiting for it",
                                  (int)pid);
                        break;
                }
                struct timespec ts = { .tv_sec = 0, .tv_nsec = 20 * 1000000L };
                nanosleep(&ts, NULL);
        }
        if (!killed && WIFEXITED(status) && WEXITSTATUS(status) != 0)
                cli_error("watch", "--exec: the hook exited with status %d", WEXITSTATUS(status));
}

/* May another reclaim run now? At most one per GPU per --reclaim-every, and at most
 * WATCH_RECLAIMS_PER_HOUR in any hour: a heal that does not heal must not become a loop. */
static bool reclaim_allowed(const struct watch *w, unsigned gpu, double now)
{
        if (w->last_reclaim[gpu] > 0 && (now - w->last_reclaim[gpu]) * 1000.0 < (double)w->reclaim_every_ms)
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

/* Heal GPU `gpu` by running ghostvram reclaim (a fresh plan with all of its safety rules). */
static void watch_reclaim(struct watch *w, const struct gpu_info *g, const struct gpu_ledger *l, double now)
{
        char gpu[16];
        snprintf(gpu, sizeof(gpu), "%u", l->index);
        const char *args[16] = { "ghostvram", "reclaim", "--gpu", gpu, "--yes", "--json" };
        size_t n = 6;
        if (strcmp(w->c.proc_root, "/proc") != 0) {
                args[n++] = "--proc";
                args[n++] = w->c.proc_root;
        }
        if (!w->c.simulated && w->c.nvml_lib) {
                args[n++] = "--nvml-lib";
                args[n++] = w->c.nvml_lib;
        }
        args[n] = NULL;
        w->last_reclaim[l->index] = now;
        if (w->n_reclaim_times == WATCH_RECLAIMS_PER_HOUR) {
                memmove(w->reclaim_times, w->reclaim_times + 1, sizeof(w->reclaim_times[0]) * (WATCH_RECLAIMS_PER_HOUR - 1));
                w->n_reclaim_times--;
        }
        w->reclaim_times[w->n_reclaim_times++] = now;

        struct buf out = BUF_INIT(1 << 20);
        int rc = cli_run_self(args, &out);
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
        emit(w, "reclaim", g, l, line);
}

/* Compare a sample with what was printed before; alert and clear. */
static void watch_sample(struct watch *w, const struct scan_result *r)
{
        const struct gpu_report *gr = r->facts->gpu;
        double now = wall_clock_now();
        char line[640], pids[256];
        for (size_t i = 0; i < r->n_gpus && i < WATCH_MAX_GPUS; i++) {
                const struct gpu_ledger *l = &r->gpus[i];
                const struct gpu_info *g = &gr->gpus[i];
                if (w->only_gpu >= 0 && (unsigned)w->only_gpu != l->index)
                        continue;
                struct gpu_watch *s = &w->gpus[l->index < WATCH_MAX_GPUS ? l->index : 0];
                const char *v = verdict_of(l);
                unsigned long long mib = (unsigned long long)((l->ghost + MIB / 2) / MIB);
                pids_text(l, pids, sizeof(pids));
                if (!s->seen || strcmp(s->verdict, v) != 0 || s->ghost_mib != mib) {
                        if (s->seen)
                                snprintf(line, sizeof(line), "GPU %u %s, ghost %llu MiB%s (was %s, %llu MiB)%s%s",
                                         l->index, v, mib, l->ghost_confirmed ? "" : l->ghost ? " unconfirmed" : "",
                                         s->verdict, s->ghost_mib, pids[0] ? " PIDs " : "", pids);
                        else
                                snprintf(line, sizeof(line), "GPU %u %s, ghost %llu MiB%s%s%s", l->index, v, mib,
                                         l->ghost_confirmed ? "" : l->ghost ? " unconfirmed" : "",
                                         pids[0] ? " PIDs " : "", pids);
                        emit(w, "state", g, l, line);
                        s->seen = true;
                        snprintf(s->verdict, sizeof(s->verdict), "%s", v);
                        s->ghost_mib = mib;
                }
                /* a GPU that did not answer this time says nothing of its ghost: an alert stays
                 * as it was (no CLEAR for a GPU that hangs) */
                if (!l->inspected)
                        continue;
                uint64_t ghost = confirmed_ghost(l);
                if (ghost > w->threshold_bytes) {
                        if (s->above_since == 0)
                                s->above_since = now;
                        if (!s->alerting && (now - s->above_since) * 1000.0 >= (double)w->for_ms) {
                                s->alerting = true;
                                snprintf(line, sizeof(line), "ALERT GPU %u: %llu MiB ghost above %llu MiB for %.0f s (%s%s%s)",
                                         l->index, (unsigned long long)(ghost / MIB),
                                         (unsigned long long)(w->threshold_bytes / MIB), now - s->above_since, v,
                                         pids[0] ? ", PIDs " : "", pids);
                                emit(w, "alert", g, l, line);
                                run_hook(w, "alert", g, l, s->above_since);
                        }
                        if (s->alerting && w->reclaim && l->index < WATCH_MAX_GPUS && reclaim_allowed(w, l->index, now))
                                watch_reclaim(w, g, l, now);
                } else {
                        if (s->alerting) {
                                snprintf(line, sizeof(line), "CLEAR GPU %u: ghost %llu MiB, not above %llu MiB any more (%s)",
                                         l->index, (unsigned long long)(ghost / MIB),
                                         (unsigned long long)(w->threshold_bytes / MIB), v);
                                emit(w, "clear", g, l, line);
                                run_hook(w, "clear", g, l, s->above_since);
                        }
                        s->alerting = false;
                        s->above_since = 0;
                }
        }
}

/* A new NVIDIA kernel event (never the history from before watch started). */
static void watch_xid(const struct watch *w, const struct xid_event *e)
{
        if (e->xid == XID_NONE || (w->only_gpu >= 0 && e->gpu_index >= 0 && e->gpu_index != w->only_gpu))
                return;
        struct xid_assessment a;
        xid_event_assess(e, &a);
        char gpu[48] = "";
        if (e->gpu_index >= 0)
                snprintf(gpu, sizeof(gpu), " on GPU %d", e->gpu_index);
        char line[400];
        snprintf(line, sizeof(line), "Xid %d%s (%s): %s; see 'ghostvram xid explain %d'", e->xid, gpu,
                 e->pci_bus_id[0] ? e->pci_bus_id : "PCI bus unknown", a.title ? a.title : "", e->xid);
        emit_xid(w, "xid", NULL, NULL, line, e);
}

int cmd_watch(int argc, char **argv)
{
        static const struct option opts[] = {
                CLI_COMMON_LONGOPTS,
                { "interval", required_argument, NULL, 'i' },
                { "threshold", required_argument, NULL, 'T' },
                { "for", required_argument, NULL, 'f' },
                { "exec", required_argument, NULL, 'e' },
                { "exec-timeout", required_argument, NULL, 'E' },
                { "textfile", required_argument, NULL, 't' },
                { "gpu", required_argument, NULL, 'g' },
                { "count", required_argument, NULL, 'n' },
                { "reclaim", no_argument, NULL, 'R' },
                { "reclaim-every", required_argument, NULL, 'r' },
                { "noise-floor", required_argument, NULL, 'F' },
                { "no-kernel", no_argument, NULL, 'N' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        static struct watch w;
        memset(&w, 0, sizeof(w));
        cli_common_init(&w.c, WATCH_ACCEPTS);
        w.interval_ms = 2000;
        w.reclaim_every_ms = 600000;
        w.for_ms = 30000;
        w.exec_timeout_ms = 30000;
        w.only_gpu = -1;
        const char *gpu_spec = NULL;
        uint64_t floor_mib = 64, v;
        bool reclaim = false, no_kernel = false;
        int opt;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
                unsigned u;
                switch (opt) {
                case 'h':
                        watch_usage(stdout);
                        return EXIT_OK;
                case 'i':
                        if (parse_duration_ms(optarg, &w.interval_ms) < 0 || w.interval_ms < 200 || w.interval_ms > 3600000) {
                                cli_error("watch", "--interval: '%s' is not a duration from 200ms to 1h", optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                case 'T':
                        if (parse_u64(optarg, &v) < 0 || v > (1ull << 30)) {
                                cli_error("watch", "--threshold: '%s' is not a number of MiB", optarg);
                                return EXIT_USAGE;
                        }
                        w.threshold_bytes = v * MIB;
                        continue;
                case 'f':
                        if (parse_duration_ms(optarg, &w.for_ms) < 0 || w.for_ms > 7 * 86400000ull) {
                                cli_error("watch", "--for: '%s' is not a duration up to 7d", optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                case 'e':
                        w.exec = optarg;
                        continue;
                case 'E':
                        if (parse_duration_ms(optarg, &w.exec_timeout_ms) < 0 || w.exec_timeout_ms == 0 ||
                            w.exec_timeout_ms > 3600000) {
                                cli_error("watch", "--exec-timeout: '%s' is not a duration up to 1h", optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                case 't':
                        if (cli_path_arg("watch", "--textfile", optarg) < 0)
                                return EXIT_USAGE;
                        w.textfile = optarg;
                        continue;
                case 'g':
                        if (cli_gpu_spec_check(optarg) < 0 ||
                            (parse_uint_range(optarg, 0, 1023, &u) == 0 && u >= WATCH_MAX_GPUS)) {
                                cli_error("watch", "--gpu: '%s' is not a GPU index (below %d), UUID or PCI bus id", optarg,
                                          WATCH_MAX_GPUS);
                                return EXIT_USAGE;
                        }
                        gpu_spec = optarg;
                        continue;
                case 'n':
                        if (parse_u64(optarg, &w.count) < 0 || w.count == 0) {
                                cli_error("watch", "--count: '%s' is not a positive number", optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                case 'r':
                        if (parse_duration_ms(optarg, &w.reclaim_every_ms) < 0 || w.reclaim_every_ms < 1000) {
                                cli_error("watch", "--reclaim-every: '%s' is not a duration of at least 1s", optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                case 'R':
                        reclaim = true;
                        continue;
                case 'N':
                        no_kernel = true;
                        continue;
                case 'F':
                        if (parse_u64(optarg, &floor_mib) < 0 || floor_mib > (1u << 24)) {
                                cli_error("watch", "--noise-floor: '%s' is not a number of MiB", optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                default:
                        break;
                }
                int r = cli_common_option(&w.c, opt, optarg, "watch");
                if (r < 0)
                        return EXIT_USAGE;
                if (r == 0) {
                        watch_usage(stderr);
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                cli_error("watch", "unexpected argument '%s' (see --help)", argv[optind]);
                return EXIT_USAGE;
        }
        w.reclaim = reclaim;
        if (cli_common_finish(&w.c, "watch") < 0)
                return EXIT_USAGE;
        /* a directory the metrics cannot go to is found before watching starts (exit 3, as scan's
         * failed write), not after every sample */
        if (w.textfile && cli_writable_dir_arg("watch", "--textfile", w.textfile) < 0)
                return EXIT_INCOMPLETE;
        /* as scan: a GPU this host does not have is a usage error, found before watching starts */
        int gr = cli_gpu_resolve(&w.c, gpu_spec, true, &w.only_gpu, "watch");
        if (gr != EXIT_OK)
                return gr;

        struct scan_once_opts so;
        cli_scan_once_opts(&w.c, &so);
        /* the first sample is confirmed by a second one an interval later, as every later one is */
        struct sampler_opts sp = { .facts = so.facts, .ledger = so.ledger, .confirm_ms = w.interval_ms,
                                   .light = true, .wait = cli_wait_signal };
        sp.ledger.floor_min_bytes = floor_mib << 20;
        sp.facts.read_kernel = !no_kernel;
        struct sampler *smp = NULL;
        if (sampler_new(&sp, &smp) < 0) {
                cli_error("watch", "out of memory");
                return EXIT_INCOMPLETE;
        }
        cli_block_stop_signals();
        signal(SIGPIPE, SIG_IGN);
        if (!w.c.json) {
                if (w.c.simulated)
                        cli_sim_banner(stdout, &w.c);
                printf("watching every %.3g s; alert when a confirmed ghost stays above %llu MiB for %.3g s%s\n",
                       (double)w.interval_ms / 1000.0, (unsigned long long)(w.threshold_bytes / MIB),
                       (double)w.for_ms / 1000.0, w.exec ? " (then run --exec)" : "");
                fflush(stdout);
        }
        int status = EXIT_OK;
        bool any_ok = false;    /* a sample with the driver's and /proc's answers */
        char last_error[600] = "";
        for (uint64_t n = 0; !w.count || n < w.count; n++) {
                unsigned long long t0 = monotonic_ms();
                struct sample s;
                int r = sampler_cycle(smp, &s);
                if (r == -EINTR)
                        break;
                if (r < 0) {
                        cli_error("watch", "%s", strerror(-r));
                        status = EXIT_INCOMPLETE;
                        break;
                }
                for (size_t i = 0; i < s.n_new_events; i++)
                        watch_xid(&w, &s.new_events[i]);
                if (s.res) {
                        if (s.full)
                                w.counters.scans_full++;
                        else
                                w.counters.scans_light++;
                }
                w.counters.driver_up = s.res && !(s.errors & SCAN_ERR_GPU) && metrics_driver_answered(s.res->facts->gpu);
                /* a GPU that did not answer (reported not inspected) leaves the others watched */
                any_ok |= s.res && s.published && !(s.errors & SCAN_ERR_HOST) &&
                          (!(s.errors & SCAN_ERR_GPU) || gpu_report_lists_all(s.res->facts->gpu));
                if (s.errors & SCAN_ERR_GPU)
                        w.counters.scan_errors[METRICS_SRC_GPU]++;
                if (s.errors & SCAN_ERR_HOST)
                        w.counters.scan_errors[METRICS_SRC_HOST]++;
                if (s.errors && !w.error_shown) {
                        const struct gpu_report *g = s.res ? s.res->facts->gpu : NULL;
                        char line[600], hung[200];
                        if (g && g->timed_out)
                                gpu_report_timeout_text(g, hung, sizeof(hung));
                        snprintf(line, sizeof(line), "scan error: %s",
                                 g && g->timed_out ? hung
                                 : g && !g->driver_present ? (g->error[0] ? g->error : "no NVIDIA driver")
                                                           : s.why);
                        emit(&w, "error", NULL, NULL, line);
                        snprintf(last_error, sizeof(last_error), "%s", line);
                } else if (!s.errors && w.error_shown) {
                        emit(&w, "error", NULL, NULL, "scan error cleared");
                }
                w.error_shown = s.errors != 0;
                if (s.res && s.published) {
                        watch_sample(&w, s.res);
                        if (w.textfile) {
                                struct metrics_input mi = { .res = s.res, .counters = &w.counters,
                                                            .scan_duration_s = s.duration_s, .last_scan_time = s.finished };
                                r = metrics_write_textfile(w.textfile, &mi);
                                if (r < 0)
                                        cli_error("watch", "--textfile %s: %s", w.textfile, strerror(-r));
                        }
                }
                if (w.count && n + 1 >= w.count)
                        break;
                unsigned long long spent = monotonic_ms() - t0;
                if (!cli_wait_signal(NULL, spent < w.interval_ms ? w.interval_ms - spent : 0))
                        break;
        }
        sampler_free(smp);
        /* a watch that never got one good sample watched nothing: say so, and not with 0 */
        if (status == EXIT_OK && !any_ok) {
                cli_error("watch", "no sample succeeded%s%s", last_error[0] ? ": " : "", last_error);
                status = EXIT_INCOMPLETE;
        }
        return status;
}
