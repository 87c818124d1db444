/* watch: the command line of run/watch_run.c (sample continuously, a line when a GPU's verdict
 * or ghost changes, an alert when a confirmed ghost stays above a threshold for a while, its
 * clear, the hook, the heal): options, usage, exit codes; the lines (text or JSON), the metrics
 * of --textfile and the heal's child `ghostvram reclaim` are render/watch_render.c's (watch_io). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "render/watch_render.h"
#include "run/watch_run.h"
#include "util/i18n.h"
#include "util/parse.h"

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

/* What the command line gives: the use case's options, read into directly, and what only the
 * command needs. */
struct watch_args {
        struct cli_common c;
        struct watch_opts o;
        struct watch_io io;
        const char *gpu_spec;
        uint64_t threshold_mib, floor_mib;
        bool no_kernel;
};

/* --interval and --noise-floor keep their English sentences (CO_FN: the table's would be
 * translated, and other commands' translations have the same words) */
static int w_interval(void *ctx, const char *arg, const char *cmd)
{
        struct watch_opts *o = &((struct watch_args *)ctx)->o;
        if (parse_duration_ms(arg, &o->interval_ms) == 0 && o->interval_ms >= 200 && o->interval_ms <= 3600000)
                return 0;
        cli_error(cmd, "--interval: '%s' is not a duration from 200ms to 1h", arg);
        return -1;
}

static int w_floor(void *ctx, const char *arg, const char *cmd)
{
        struct watch_args *a = ctx;
        if (parse_u64(arg, &a->floor_mib) == 0 && a->floor_mib <= (1u << 24))
                return 0;
        cli_error(cmd, "--noise-floor: '%s' is not a number of MiB", arg);
        return -1;
}

static int w_gpu(void *ctx, const char *arg, const char *cmd)
{
        unsigned u;
        if (gpu_spec_check(arg) < 0 || (parse_uint_range(arg, 0, 1023, &u) == 0 && u >= WATCH_MAX_GPUS)) {
                cli_error(cmd, "--gpu: '%s' is not a GPU index (below %d), UUID or PCI bus id", arg, WATCH_MAX_GPUS);
                return -1;
        }
        ((struct watch_args *)ctx)->gpu_spec = arg;
        return 0;
}

#define F(f) offsetof(struct watch_args, f)
static const struct cli_opt watch_table[] = {
        { "interval", 'i', CO_FN, .fn = w_interval },
        { "threshold", 'T', CO_U64, F(threshold_mib), 0, 1ull << 30, "--threshold: '%s' is not a number of MiB" },
        { "for", 'f', CO_MS, F(o.for_ms), 0, 7 * 86400000ull, "--for: '%s' is not a duration up to 7d" },
        { "exec", 'e', CO_STR, F(o.exec) },
        { "exec-timeout", 'E', CO_MS, F(o.exec_timeout_ms), 1, 3600000, "--exec-timeout: '%s' is not a duration up to 1h" },
        { "textfile", 't', CO_PATH, F(io.textfile) },
        { "gpu", 'g', CO_FN, .fn = w_gpu },
        { "count", 'n', CO_U64, F(o.count), 1, UINT64_MAX, "--count: '%s' is not a positive number" },
        { "reclaim", 'R', CO_FLAG, F(o.heal_enabled) },
        { "reclaim-every", 'r', CO_MS, F(o.reclaim_every_ms), 1000, UINT64_MAX,
          "--reclaim-every: '%s' is not a duration of at least 1s" },
        { "noise-floor", 'F', CO_FN, .fn = w_floor },
        { "no-kernel", 'N', CO_FLAG, F(no_kernel) },
        { 0 },
};

/* argv into a: EXIT_OK to go on, CLI_HELP, or the exit status of a usage error. */
static int watch_parse(int argc, char **argv, struct watch_args *a)
{
        const struct cli_parse p = { "watch", "hv", watch_table, a, &a->c, watch_usage, .finish = true };
        int r = cli_parse(&p, argc, argv);
        if (r != EXIT_OK)
                return r;
        a->o.threshold_bytes = a->threshold_mib * MIB;
        /* a directory the metrics cannot go to is found before watching starts (exit 3, as scan's
         * failed write), not after every sample */
        if (a->io.textfile && cli_writable_dir_arg("watch", "--textfile", a->io.textfile) < 0)
                return EXIT_INCOMPLETE;
        /* as scan: a GPU this host does not have is a usage error, found before watching starts */
        return cli_gpu_resolve(&a->c, a->gpu_spec, true, &a->o.only_gpu, "watch");
}

int cmd_watch(int argc, char **argv)
{
        static struct watch_args a;
        memset(&a, 0, sizeof(a));
        cli_common_init(&a.c, WATCH_ACCEPTS);
        a.o = (struct watch_opts){ .interval_ms = 2000, .reclaim_every_ms = 600000, .for_ms = 30000,
                                   .exec_timeout_ms = 30000, .only_gpu = -1, .wait = stopwait_ms };
        a.floor_mib = 64;
        int pr = watch_parse(argc, argv, &a);
        if (pr != EXIT_OK)
                return pr == CLI_HELP ? EXIT_OK : pr;
        const struct show s = cli_show(&a.c);
        char err[700];
        watch_io_show(&a.io, &a.o, &s, &a.c.src);
        if (watch_execute(&a.o, &a.c.src, a.floor_mib, a.no_kernel, err, sizeof(err)) < 0) {
                cli_error("watch", "%s", err);
                return EXIT_INCOMPLETE;
        }
        return EXIT_OK;
}
