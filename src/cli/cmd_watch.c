/* watch: the command line of run/watch_run.c (sample continuously, a line when a GPU's verdict
 * or ghost changes, an alert when a confirmed ghost stays above a threshold for a while, its
 * clear, the hook, the heal): options, the heal as a child `ghostvram reclaim`, the textfile,
 * exit codes; the lines (text or JSON) are render/watch_render.c's. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "render/metrics.h"
#include "render/watch_render.h"
#include "run/scan_run.h"
#include "run/watch_run.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/timefmt.h"

#define MIB (1024ull * 1024ull)

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

struct watch {
        struct cli_common c;
        const char *textfile;
        struct metrics_counters counters;
};

/* One output line (render/watch_render.h). */
static void watch_print(void *ctx, const struct watch_line *wl)
{
        const struct watch *w = ctx;
        watch_line_print(stdout, wl, w->c.json, wall_clock_now());
}

static void watch_warn(void *ctx, const char *fmt, ...)
{
        (void)ctx;
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        cli_error("watch", "%s", msg);
}

/* The heal: `ghostvram reclaim --gpu N --yes --json` run as a child, with this watch's
 * sources (a fresh plan with all of reclaim's safety rules). */
static int watch_heal(void *ctx, unsigned index, struct buf *out)
{
        const struct watch *w = ctx;
        char gpu[16];
        snprintf(gpu, sizeof(gpu), "%u", index);
        const char *args[16] = { "ghostvram", "reclaim", "--gpu", gpu, "--yes", "--json" };
        size_t n = 6;
        if (strcmp(w->c.src.proc_root, "/proc") != 0) {
                args[n++] = "--proc";
                args[n++] = w->c.src.proc_root;
        }
        if (!w->c.src.simulated && w->c.src.nvml_lib) {
                args[n++] = "--nvml-lib";
                args[n++] = w->c.src.nvml_lib;
        }
        args[n] = NULL;
        return spawn_self(NULL, args, out, false);
}

/* After each cycle: the counters of the metrics, and --textfile. */
static void watch_sampled(void *ctx, const struct sample *s)
{
        struct watch *w = ctx;
        if (s->res) {
                if (s->full)
                        w->counters.scans_full++;
                else
                        w->counters.scans_light++;
        }
        w->counters.driver_up = s->res && !(s->errors & SCAN_ERR_GPU) && metrics_driver_answered(s->res->facts->gpu);
        if (s->errors & SCAN_ERR_GPU)
                w->counters.scan_errors[METRICS_SRC_GPU]++;
        if (s->errors & SCAN_ERR_HOST)
                w->counters.scan_errors[METRICS_SRC_HOST]++;
        if (!w->textfile || !s->res || !s->published)
                return;
        struct metrics_input mi = { .res = s->res, .counters = &w->counters, .scan_duration_s = s->duration_s,
                                    .last_scan_time = s->finished };
        int r = metrics_write_textfile(w->textfile, &mi);
        if (r < 0)
                cli_error("watch", "--textfile %s: %s", w->textfile, strerror(-r));
}

struct watch_args {
        struct watch w;
        struct watch_opts o;
        const char *gpu_spec;
        uint64_t floor_mib;
        bool no_kernel;
};

/* One of watch's own options into ctx (a struct watch_args): 1 taken, 0 not watch's own, -1 a
 * usage error (said). */
static int watch_option(void *ctx, int opt, const char *arg)
{
        struct watch_args *a = ctx;
        struct watch_opts *o = &a->o;
        uint64_t v;
        unsigned u;
        switch (opt) {
        case 'i':
                if (parse_duration_ms(arg, &o->interval_ms) < 0 || o->interval_ms < 200 || o->interval_ms > 3600000)
                        return cli_error("watch", "--interval: '%s' is not a duration from 200ms to 1h", arg), -1;
                return 1;
        case 'T':
                if (parse_u64(arg, &v) < 0 || v > (1ull << 30))
                        return cli_error("watch", "--threshold: '%s' is not a number of MiB", arg), -1;
                o->threshold_bytes = v * MIB;
                return 1;
        case 'f':
                if (parse_duration_ms(arg, &o->for_ms) < 0 || o->for_ms > 7 * 86400000ull)
                        return cli_error("watch", "--for: '%s' is not a duration up to 7d", arg), -1;
                return 1;
        case 'e':
                o->exec = arg;
                return 1;
        case 'E':
                if (parse_duration_ms(arg, &o->exec_timeout_ms) < 0 || o->exec_timeout_ms == 0 ||
                    o->exec_timeout_ms > 3600000)
                        return cli_error("watch", "--exec-timeout: '%s' is not a duration up to 1h", arg), -1;
                return 1;
        case 't':
                if (cli_path_arg("watch", "--textfile", arg) < 0)
                        return -1;
                a->w.textfile = arg;
                return 1;
        case 'g':
                if (gpu_spec_check(arg) < 0 || (parse_uint_range(arg, 0, 1023, &u) == 0 && u >= WATCH_MAX_GPUS))
                        return cli_error("watch", "--gpu: '%s' is not a GPU index (below %d), UUID or PCI bus id", arg,
                                         WATCH_MAX_GPUS), -1;
                a->gpu_spec = arg;
                return 1;
        case 'n':
                if (parse_u64(arg, &o->count) < 0 || o->count == 0)
                        return cli_error("watch", "--count: '%s' is not a positive number", arg), -1;
                return 1;
        case 'r':
                if (parse_duration_ms(arg, &o->reclaim_every_ms) < 0 || o->reclaim_every_ms < 1000)
                        return cli_error("watch", "--reclaim-every: '%s' is not a duration of at least 1s", arg), -1;
                return 1;
        case 'R':
                o->heal_enabled = true;
                return 1;
        case 'N':
                a->no_kernel = true;
                return 1;
        case 'F':
                if (parse_u64(arg, &a->floor_mib) < 0 || a->floor_mib > (1u << 24))
                        return cli_error("watch", "--noise-floor: '%s' is not a number of MiB", arg), -1;
                return 1;
        default:
                return 0;
        }
}

#define WATCH_HELP (-1) /* --help was printed */

/* argv into a: EXIT_OK to go on, WATCH_HELP, or the exit status of a usage error. */
static int watch_parse(int argc, char **argv, struct watch_args *a)
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
        int r = cli_options(argc, argv, "hv", opts, &a->w.c, "watch", watch_option, a, watch_usage);
        if (r != EXIT_OK)
                return r == CLI_HELP ? WATCH_HELP : r;
        if (cli_common_finish(&a->w.c, "watch") < 0)
                return EXIT_USAGE;
        /* a directory the metrics cannot go to is found before watching starts (exit 3, as scan's
         * failed write), not after every sample */
        if (a->w.textfile && cli_writable_dir_arg("watch", "--textfile", a->w.textfile) < 0)
                return EXIT_INCOMPLETE;
        /* as scan: a GPU this host does not have is a usage error, found before watching starts */
        return cli_gpu_resolve(&a->w.c, a->gpu_spec, true, &a->o.only_gpu, "watch");
}

int cmd_watch(int argc, char **argv)
{
        static struct watch_args a;
        memset(&a, 0, sizeof(a));
        cli_common_init(&a.w.c, WATCH_ACCEPTS);
        a.o = (struct watch_opts){ .interval_ms = 2000, .reclaim_every_ms = 600000, .for_ms = 30000,
                                   .exec_timeout_ms = 30000, .only_gpu = -1, .emit = watch_print,
                                   .warn = watch_warn, .heal = watch_heal, .sampled = watch_sampled,
                                   .wait = stopwait_ms, .ctx = &a.w };
        a.floor_mib = 64;
        int pr = watch_parse(argc, argv, &a);
        if (pr != EXIT_OK)
                return pr == WATCH_HELP ? EXIT_OK : pr;

        struct scan_once_opts so;
        sources_scan_once_opts(&a.w.c.src, &so);
        /* the first sample is confirmed by a second one an interval later, as every later one is */
        struct sampler_opts sp = { .facts = so.facts, .ledger = so.ledger, .confirm_ms = a.o.interval_ms,
                                   .light = true, .wait = stopwait_ms };
        sp.ledger.floor_min_bytes = a.floor_mib << 20;
        sp.facts.read_kernel = !a.no_kernel;
        struct sampler *smp = NULL;
        if (sampler_new(&sp, &smp) < 0) {
                cli_error("watch", "out of memory");
                return EXIT_INCOMPLETE;
        }
        stopwait_block();
        signal(SIGPIPE, SIG_IGN);
        if (!a.w.c.json) {
                if (a.w.c.src.simulated)
                        cli_sim_banner(stdout, &a.w.c);
                watch_banner_print(stdout, a.o.interval_ms, a.o.threshold_bytes, a.o.for_ms, a.o.exec != NULL);
        }
        struct watch_result res;
        int r = watch_run(&a.o, smp, &res);
        sampler_free(smp);
        if (r < 0) {
                cli_error("watch", "%s", strerror(-r));
                return EXIT_INCOMPLETE;
        }
        /* a watch that never got one good sample watched nothing: say so, and not with 0 */
        if (!res.any_ok) {
                cli_error("watch", "no sample succeeded%s%s", res.last_error[0] ? ": " : "", res.last_error);
                return EXIT_INCOMPLETE;
        }
        return EXIT_OK;
}
