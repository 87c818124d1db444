/* top: a live, full-screen view (ncurses) of the memory of each GPU split into reserved /
 * listed / foreign / ghost / unattributed, the verdict, who holds the ghost, the Xid events.
 *
 * Options and exit codes here; the collector is run/top_run.h (fed into render/top_feed.h),
 * the screen and its keys render/top_tty.h and render/top_keys.h, reclaim's plan and the kill
 * key run/top_reclaim.h. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "render/top_feed.h"
#include "render/top_keys.h"
#include "render/top_screen.h"
#include "render/top_tty.h"
#include "run/top_reclaim.h"
#include "run/top_run.h"
#include "util/i18n.h"
#include "util/parse.h"

/* a live view: no JSON, no bundle, nothing more to show with -v */
#define TOP_ACCEPTS (CLI_CALL_TIMEOUT | CLI_NVML_LIB | CLI_PROC | CLI_DEV_PREFIX | CLI_HOLDERS)

static void top_usage(FILE *f)
{
        fputs(_("Usage: ghostvram top [--interval DURATION | -d TENTHS] [-g N|UUID|BUS]\n"
              "                     [--batch | --once] [OPTIONS]\n\n"
              "A live view, like nvtop, of what holds GPU memory: per GPU a bar of used memory\n"
              "split into reserved (R) / listed (L) / foreign (F) / ghost (G) / unattributed\n"
              "(U) / freeing (~, a teardown in progress), the verdict and its confidence;\n"
              "nvtop's figures (utilisation, memory utilisation, temperature, power, clocks,\n"
              "fan, PCIe, encoder and decoder, ECC and row remapping: n/a where the driver\n"
              "gives none) and graphs of utilisation and used memory beside the ghost's; the\n"
              "processes (owners, workers of a dead owner, monitors, daemons, MIG instances,\n"
              "MPS clients) with their GPU share, CPU, resident memory, running time, link\n"
              "and evidence; the NVIDIA kernel events. A hung driver never freezes it: the\n"
              "last sample stays, aged, with the reason.\n\n"), f);
        fputs(_("Keys (nvtop's, htop's and nvitop's): q F10 quit  g next GPU  up/down PgUp/PgDn\n"
              "Home/End select  s F6 > next sort column, < previous, I reverse  t F5 tree\n"
              "/ F3 filter (Enter keeps it, Esc clears it)  k F9 T SIGTERM the selected\n"
              "process, K SIGKILL (asked first; through reclaim's checks, logged; a live\n"
              "job's process only after a second confirmation, F then Y)  r reclaim's plan\n"
              "(dry run; A then y acts, as root)  x Xid events  ? h F1 help  Esc close\n\n"), f);
        /* xgettext:no-c-format */
        fputs(_("Options:\n"
              "  --interval DURATION  time between samples (default 1s; 200ms to 1h)\n"
              "  -d TENTHS            the same in tenths of a second, as nvtop's and htop's -d\n"
              "                       (-d 10 is 1 s; a duration such as 2s is taken too)\n"
              "  -g, --gpu N|UUID|BUS show this GPU (index, UUID or PCI bus id); g cycles\n"
              "  --batch              print plain frames instead of a full screen (also when\n"
              "                       the output is not a terminal or the terminal cannot move\n"
              "                       the cursor, e.g. TERM=dumb)\n"
              "  -1, --once           one frame to standard output, then exit (nvitop's -1)\n"
              "  --iterations N       stop after N frames (batch) or N samples\n"
              "  --noise-floor MIB    minimum ghost in MiB (default 64; 1% of the GPU if\n"
              "                       larger)\n"
              "  --no-kernel          do not follow the kernel log (no Xid events)\n"), f);
        cli_common_help(f, TOP_ACCEPTS);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\nColour: off with NO_COLOR, on a monochrome terminal, or in batch mode (letters\n"
              "then).\n"), f);
        fputs(_("Exit status: 0 quit or stopped by a signal; 2 usage error; 3 could not start.\n"), f);
}

struct top {
        struct cli_common c;
        uint64_t interval_ms;
        const char *gpu_arg;
        unsigned iterations;
        uint64_t floor_mib;
        bool batch, no_kernel;
        struct top_feed feed;           /* guarded by the collector's lock */
        struct top_reclaim reclaim;
        struct top_live live;
};

/* nvtop's and htop's -d: tenths of a second; a duration with its unit too */
static int top_tenths(void *ctx, const char *arg, const char *cmd)
{
        struct top *t = ctx;
        unsigned tenths;
        bool digits = arg[0] && strspn(arg, "0123456789") == strlen(arg);
        if (digits && parse_uint_range(arg, 2, 36000, &tenths) == 0)
                t->interval_ms = (uint64_t)tenths * 100;
        else if (digits || parse_duration_ms(arg, &t->interval_ms) < 0 || t->interval_ms < 200 ||
                 t->interval_ms > 3600000)
                return cli_error(cmd, _("-d: '%s' is not tenths of a second from 2 to 36000 (nvtop's -d 10 is 1 s), "
                                        "nor a duration from 200ms to 1h"),
                                 arg), -1;
        return 0;
}

/* --once: one frame, in batch mode */
static int top_once(void *ctx, const char *arg, const char *cmd)
{
        struct top *t = ctx;
        (void)arg, (void)cmd;
        t->iterations = 1;
        return 0;
}

#define F(f) offsetof(struct top, f)
static const struct cli_opt top_table[] = {
        { "interval", 'i', CO_MS, F(interval_ms), 200, 3600000, N_("--interval: '%s' is not a duration from 200ms to 1h") },
        { "gpu", 'g', CO_STR, F(gpu_arg) },
        { "batch", 'b', CO_FLAG, F(batch) },
        { "iterations", 'n', CO_UINT, F(iterations), 1, 1u << 30, N_("--iterations: '%s' is not a positive number") },
        { "noise-floor", 'F', CO_U64, F(floor_mib), 0, 1u << 24, N_("--noise-floor: '%s' is not a number of MiB") },
        { "no-kernel", 'N', CO_FLAG, F(no_kernel) },
        { "once", '1', CO_FLAG, F(batch), .fn = top_once },
        { "d", 'd', CO_FN, .fn = top_tenths, .short_only = true },
        { 0 },
};
#undef F

/* argv into t, the GPU and the terminal checked: EXIT_OK to go on, CLI_HELP, or the exit
 * status of a usage error (said). */
static int top_parse(int argc, char **argv, struct top *t)
{
        const struct cli_parse p = { "top", "hvbn:d:g:1", top_table, t, &t->c, top_usage, .finish = true };
        int r = cli_parse(&p, argc, argv);
        if (r != EXIT_OK)
                return r;
        /* a GPU the host does not have is a usage error, as in scan and watch (one driver query;
         * without a driver an index is kept and the screen says what is missing) */
        int gpu_index;
        int gr = cli_gpu_resolve(&t->c, t->gpu_arg, true, &gpu_index, "top");
        if (gr != EXIT_OK)
                return gr;
        if (!t->batch && !top_tty_addressable()) {
                t->batch = true;
                if (isatty(STDERR_FILENO))
                        fprintf(stderr, "ghostvram top: %s\n", _("this terminal cannot move the cursor: plain frames follow"));
        }
        return EXIT_OK;
}

/* The collector, fed into t->feed; t->live and t->reclaim around it. 0 or a negative errno. */
static int top_start(struct top *t)
{
        struct top_run_opts o = { .interval_ms = t->interval_ms };
        top_run_sampler_opts(&t->c.src, t->floor_mib, !t->no_kernel, t->iterations == 1 && t->batch, &o.sampler);
        t->feed.clk_tck = sysconf(_SC_CLK_TCK);
        o.hooks = top_feed_hooks(&t->feed);
        int r = top_run_start(&o, &t->live.run);
        if (r < 0)
                return r;
        t->reclaim = (struct top_reclaim){ .run = t->live.run, .proc_root = t->c.src.proc_root,
                                           .nvml_lib = t->c.src.simulated ? NULL : t->c.src.nvml_lib, .err_fd = -1 };
        t->live.feed = &t->feed;
        t->live.reclaim = &t->reclaim;
        t->live.gpu_arg = t->gpu_arg;
        t->live.iterations = t->iterations;
        return 0;
}

int cmd_top(int argc, char **argv)
{
        /* static: a collector abandoned in a driver call keeps what it uses reachable until the
         * process ends (top runs once a process) */
        static struct top t;
        memset(&t, 0, sizeof(t));
        cli_common_init(&t.c, TOP_ACCEPTS);
        t.interval_ms = 1000;
        t.floor_mib = 64;
        int pr = top_parse(argc, argv, &t);
        if (pr != EXIT_OK)
                return pr == CLI_HELP ? EXIT_OK : pr;
        t.live.utf8 = top_tty_charset();
        top_tty_signals();
        int r = top_start(&t);
        if (r < 0) {
                cli_error("top", _("cannot start the collection: %s"), strerror(-r));
                return EXIT_INCOMPLETE;
        }
        struct top_state s;
        memset(&s, 0, sizeof(s));
        s.interval_s = (double)t.interval_ms / 1000.0;
        s.stale_after_s = 3 * s.interval_s + 1;
        s.focus = -1;
        s.message = "";
        int rc = t.batch ? top_tty_batch(&t.live, &s) : top_tty_screen(&t.live, &s);
        if (rc < 0 && !t.batch)
                cli_error("top", _("cannot start the terminal (TERM=%s)"), getenv("TERM") ? getenv("TERM") : "");
        /* the terminal is restored: stop the collector, never waiting on a driver call for long */
        if (top_run_stop(t.live.run))
                top_feed_free(&t.feed);
        return rc < 0 ? EXIT_INCOMPLETE : EXIT_OK;
}
