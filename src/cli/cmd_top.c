/* top: a live, full-screen view (ncurses) of the memory of each GPU split into reserved /
 * listed / foreign / ghost / unattributed, the verdict, who holds the ghost, the Xid events.
 *
 * Two threads: the collector runs the sampler (run/scan_run.h) every --interval and publishes
 * a live view (render/live_view.h) under a mutex; the main thread owns the terminal, answers
 * keys every 100 ms and draws the latest view with its age. A hung driver call only ages the
 * view (the sampler's calls have deadlines, and while one is stuck no new one is made); the
 * keys keep answering. The terminal is restored on every exit: q, SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT, and a crash. */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>
#include <term.h>

#include "cli/cli.h"
#include "render/live_view.h"
#include "render/top_screen.h"
#include "run/scan_run.h"
#include "run/top_kill.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/escape.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/strf.h"
#include "util/timefmt.h"

#define PLAN_OUTPUT_MAX (256u << 10)

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
        struct sampler *sampler;
        pthread_t thread;
        pthread_mutex_t m;
        pthread_cond_t cv;              /* monotonic; signalled on stop */
        /* guarded by m */
        bool stop;
        struct live_view *view;
        struct live_history hist;
        char status[LIVE_STATUS_MAX];
        bool status_in_view;            /* the cycle that set status also made view */
        double cycle_started;           /* monotonic seconds, 0 while none runs */
        double started;                 /* monotonic seconds: when the collection started */
        bool utf8;                      /* the locale's codeset is UTF-8: glyphs, not "->" */
        unsigned gen;                   /* cycles finished */
        /* the reclaim worker (guarded by m): reclaim's plan (r, A), or a kill (k) */
        bool plan_running;
        char *plan_text;                /* finished output, taken by the UI */
        char plan_title[160];
        bool kill_done;                 /* plan_text is a kill's: kill_outcome says how it ended */
        struct top_kill kill;           /* the kill running or last run */
        enum top_kill_outcome kill_outcome;
        long clk_tck;
        int err_fd;                     /* while the screen is ours, stderr goes to this file */
        off_t err_seen;                 /* what the dialog already showed of it */
};

static volatile sig_atomic_t top_signal;

static void on_stop_signal(int sig)
{
        top_signal = sig;
}

/* A crash while curses owns the terminal: give the terminal back, then die of the same signal
 * (htop does the same). endwin is not async-signal-safe; the process is lost anyway. */
static volatile sig_atomic_t top_screen_on;

static void on_crash(int sig)
{
        if (top_screen_on)
                endwin();
        signal(sig, SIG_DFL);
        raise(sig);
}

static void crash_handlers(void)
{
        static const int sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
                struct sigaction old;
                /* a handler already there (a sanitizer's) stays */
                if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO))
                        signal(sigs[i], on_crash);
        }
}

/* ---- the collector --------------------------------------------------------------------------- */

static bool top_wait(void *ctx, uint64_t ms)
{
        struct top *t = ctx;
        struct timespec until;
        monotonic_after_ms(ms, &until);
        pthread_mutex_lock(&t->m);
        int r = 0;
        while (!t->stop && r != ETIMEDOUT)
                r = pthread_cond_timedwait(&t->cv, &t->m, &until);
        bool go_on = !t->stop;
        pthread_mutex_unlock(&t->m);
        return go_on;
}

static void *collector_main(void *arg)
{
        struct top *t = arg;
        for (;;) {
                unsigned long long t0 = monotonic_ms();
                pthread_mutex_lock(&t->m);
                t->cycle_started = monotonic_s();
                pthread_mutex_unlock(&t->m);
                struct sample smp;
                char status[LIVE_STATUS_MAX] = "";
                struct live_view *v = NULL;
                int r = sampler_cycle(t->sampler, &smp);
                if (r == -EINTR)
                        break;
                if (r < 0) {
                        snprintf(status, sizeof(status), _("collection failed: %s"), strerror(-r));
                } else {
                        live_sample_status(&smp, status, sizeof(status));
                        if (smp.published && smp.res &&
                            live_view_build(smp.res, true, smp.full, smp.duration_s, &v) == 0)
                                v->finished = smp.finished;
                }
                pthread_mutex_lock(&t->m);
                t->cycle_started = 0;
                if (r == 0)
                        live_history_add(&t->hist, v, smp.finished);
                if (v) {
                        live_view_cpu(v, t->view, t->clk_tck);
                        live_view_free(t->view);
                        t->view = v;
                }
                snprintf(t->status, sizeof(t->status), "%s", status);
                t->status_in_view = v != NULL;
                t->gen++;
                pthread_mutex_unlock(&t->m);
                unsigned long long spent = monotonic_ms() - t0;
                if (!top_wait(t, spent < t->interval_ms ? t->interval_ms - spent : 0))
                        break;
        }
        return NULL;
}

/* Start a thread with every signal blocked: the main thread alone takes SIGINT, SIGTERM,
 * SIGWINCH. Returns 0 or a negative errno. */
static int start_quiet_thread(pthread_t *th, void *(*fn)(void *), void *arg, bool detach)
{
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int r = -pthread_create(th, NULL, fn, arg);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!r && detach)
                pthread_detach(*th);
        return r;
}

/* ---- reclaim's plan: `ghostvram reclaim` in a child, on a worker thread ------------------- */

struct plan_job {
        struct top *t;
        char gpu[16];
        bool act;
};

static void *plan_main(void *arg)
{
        struct plan_job *j = arg;
        struct top *t = j->t;
        const char *args[16] = { "ghostvram", "reclaim", j->act ? "--yes" : "--dry-run" };
        size_t n = 3;
        if (j->gpu[0]) {
                args[n++] = "--gpu";
                args[n++] = j->gpu;
        }
        if (strcmp(t->c.proc_root, "/proc") != 0) {
                args[n++] = "--proc";
                args[n++] = t->c.proc_root;
        }
        if (!t->c.simulated && t->c.nvml_lib) {
                args[n++] = "--nvml-lib";
                args[n++] = t->c.nvml_lib;
        }
        args[n] = NULL;
        /* the child inherits this thread's mask: give it none */
        sigset_t none;
        sigemptyset(&none);
        pthread_sigmask(SIG_SETMASK, &none, NULL);
        struct buf out = BUF_INIT(PLAN_OUTPUT_MAX);
        int rc = cli_run_self(args, &out);
        /* what it wrote to stderr (the screen's stderr is a file meanwhile) */
        if (t->err_fd >= 0) {
                char chunk[4096];
                ssize_t got;
                while ((got = pread(t->err_fd, chunk, sizeof(chunk), t->err_seen)) > 0) {
                        buf_append(&out, chunk, (size_t)got);
                        t->err_seen += got;
                }
        }
        /* TRANSLATORS: the first %s%s%s is reclaim's options, e.g. "--dry-run --gpu 1" */
        buf_printf(&out, _("\n(ghostvram reclaim %s%s%s exited %d)\n"), j->act ? "--yes" : "--dry-run",
                   j->gpu[0] ? " --gpu " : "", j->gpu, rc);
        if (!j->act)
                buf_printf(&out, _("To act on a fresh plan with the same rules: press A here (root only, asks first),\n"
                                   "or run `sudo ghostvram reclaim%s%s --yes`.\n"),
                           j->gpu[0] ? " --gpu " : "", j->gpu);
        char *text = buf_steal(&out);
        buf_free(&out);
        pthread_mutex_lock(&t->m);
        free(t->plan_text);
        t->plan_text = text;
        t->plan_running = false;
        pthread_mutex_unlock(&t->m);
        free(j);
        return NULL;
}

static const char *plan_start(struct top *t, int focus, bool act)
{
        struct plan_job *j = calloc(1, sizeof(*j));
        if (!j)
                return _("out of memory");
        j->t = t;
        j->act = act;
        if (focus >= 0)
                snprintf(j->gpu, sizeof(j->gpu), "%d", focus);
        pthread_mutex_lock(&t->m);
        bool busy = t->plan_running;
        if (!busy) {
                t->plan_running = true;
                if (j->gpu[0])
                        snprintf(t->plan_title, sizeof(t->plan_title),
                                 act ? _("Reclaim (acting): GPU %s") : _("Reclaim plan (dry run): GPU %s"), j->gpu);
                else
                        snprintf(t->plan_title, sizeof(t->plan_title), "%s",
                                 act ? _("Reclaim (acting): every GPU") : _("Reclaim plan (dry run): every GPU"));
        }
        pthread_mutex_unlock(&t->m);
        if (busy) {
                free(j);
                return _("reclaim is still running");
        }
        pthread_t th;
        if (start_quiet_thread(&th, plan_main, j, true) < 0) {
                pthread_mutex_lock(&t->m);
                t->plan_running = false;
                pthread_mutex_unlock(&t->m);
                free(j);
                return _("cannot start reclaim");
        }
        return NULL;
}

/* ---- k: one process, through reclaim's rules (run/top_kill.h) ------------------------------------ */

static void *kill_main(void *arg)
{
        struct top *t = arg;
        pthread_mutex_lock(&t->m);
        struct top_kill k = t->kill;
        pthread_mutex_unlock(&t->m);
        char pid[16];
        const char *args[TOP_KILL_ARGS];
        top_kill_args(&k, pid, args);
        sigset_t none;
        sigemptyset(&none);
        pthread_sigmask(SIG_SETMASK, &none, NULL);
        struct top_kill_result res = { .outcome = TOP_KILL_ENDED, .text = NULL };
        if (!top_kill_same_process(&k, t->c.proc_root)) {
                str_setf(&res.text, _("PID %d is not the process you chose any more (it ended, or its number went to "
                                      "another process): nothing was sent.\n"),
                         (int)k.pid);
        } else {
                struct buf out = BUF_INIT(PLAN_OUTPUT_MAX);
                int rc = cli_run_self(args, &out);
                if (top_kill_judge(&k, out.data, out.len, rc, &res) < 0)
                        res = (struct top_kill_result){ .outcome = TOP_KILL_FAILED, .text = NULL };
                buf_free(&out);
        }
        pthread_mutex_lock(&t->m);
        free(t->plan_text);
        t->plan_text = res.text ? res.text : strdup(_("out of memory"));
        t->kill_done = true;
        t->kill_outcome = res.outcome;
        t->plan_running = false;
        pthread_mutex_unlock(&t->m);
        return NULL;
}

static const char *kill_start(struct top *t, const struct top_kill *k, const char *comm)
{
        pthread_mutex_lock(&t->m);
        bool busy = t->plan_running;
        if (!busy) {
                t->plan_running = true;
                t->kill = *k;
                t->kill.proc_root = t->c.proc_root;
                t->kill.nvml_lib = t->c.simulated ? NULL : t->c.nvml_lib;
                snprintf(t->plan_title, sizeof(t->plan_title), _("SIG%s to PID %d (%.40s)%s"),
                         k->sig == SIGKILL ? "KILL" : "TERM", (int)k->pid, comm, k->force ? " --force" : "");
        }
        pthread_mutex_unlock(&t->m);
        if (busy)
                return _("reclaim is still running");
        pthread_t th;
        if (start_quiet_thread(&th, kill_main, t, true) < 0) {
                pthread_mutex_lock(&t->m);
                t->plan_running = false;
                pthread_mutex_unlock(&t->m);
                return _("cannot start reclaim");
        }
        return NULL;
}

/* ---- GPU selection ------------------------------------------------------------------------------- */

/* The GPU index --gpu names in v, or -1. */
static int resolve_gpu(const struct live_view *v, const char *arg)
{
        unsigned n;
        for (size_t i = 0; i < v->n_gpus; i++) {
                const struct live_gpu *g = &v->gpus[i];
                if ((parse_uint_range(arg, 0, 1u << 20, &n) == 0 && n == g->index) || !strcasecmp(arg, g->uuid))
                        return (int)g->index;
                char bus[32];
                if (g->bus[0] && pci_bus_id_normalize(arg, bus, sizeof(bus)) == 0 && !strcmp(bus, g->bus))
                        return (int)g->index;
        }
        return -1;
}

static int next_focus(const struct live_view *v, int focus)
{
        if (!v || !v->n_gpus)
                return -1;
        if (focus < 0)
                return (int)v->gpus[0].index;
        for (size_t i = 0; i + 1 < v->n_gpus; i++)
                if ((int)v->gpus[i].index == focus)
                        return (int)v->gpus[i + 1].index;
        return -1;
}

/* ---- painting ------------------------------------------------------------------------------------ */

enum { PAIR_KIND = 1, PAIR_BAD = PAIR_KIND + LIVE_KINDS, PAIR_WARN, PAIR_GOOD, PAIR_SEL };

static void colors_init(void)
{
        static const short kind_color[LIVE_KINDS] = { COLOR_WHITE, COLOR_GREEN, COLOR_BLUE, COLOR_RED, COLOR_YELLOW,
                                                      COLOR_MAGENTA };
        start_color();
        use_default_colors();
        for (int k = 0; k < LIVE_KINDS; k++)
                init_pair((short)(PAIR_KIND + k), kind_color[k], -1);
        init_pair(PAIR_BAD, COLOR_RED, -1);
        init_pair(PAIR_WARN, COLOR_YELLOW, -1);
        init_pair(PAIR_GOOD, COLOR_GREEN, -1);
        init_pair(PAIR_SEL, COLOR_BLACK, COLOR_CYAN);
}

static chtype attr_of(unsigned char a, bool color)
{
        if (a >= TA_KIND && a < TA_KIND + LIVE_KINDS)
                return color ? (chtype)COLOR_PAIR(PAIR_KIND + (a - TA_KIND)) | A_REVERSE
                             : a == TA_KIND + LIVE_GHOST ? A_BOLD : A_NORMAL;
        switch (a) {
        case TA_FREE:
        case TA_DIM:
                return A_DIM;
        case TA_BOLD:
                return A_BOLD;
        case TA_TITLE:
                return A_REVERSE;
        case TA_SELECTED:
                return color ? (chtype)COLOR_PAIR(PAIR_SEL) : A_REVERSE | A_BOLD;
        case TA_BAD:
                return color ? (chtype)COLOR_PAIR(PAIR_BAD) | A_BOLD : A_BOLD;
        case TA_WARN:
                return color ? (chtype)COLOR_PAIR(PAIR_WARN) | A_BOLD : A_BOLD;
        case TA_GOOD:
                return color ? (chtype)COLOR_PAIR(PAIR_GOOD) : A_NORMAL;
        default:
                return A_NORMAL;
        }
}

static void paint(const struct top_canvas *cv, bool color)
{
        for (int y = 0; y < cv->rows; y++) {
                move(y, 0);
                for (int x = 0; x < cv->cols; x++) {
                        size_t k = (size_t)y * (size_t)cv->cols + (size_t)x;
                        /* the last cell of the screen: addch there would scroll */
                        if (y == cv->rows - 1 && x == cv->cols - 1)
                                break;
                        uint32_t cp = cv->ch[k];
                        if (cp == TOP_CELL_WIDE_RIGHT)
                                continue;       /* the wide character before took this column */
                        if (cp < 0x80) {
                                addch((chtype)cp | attr_of(cv->at[k], color));
                                continue;
                        }
                        /* a wide character would end on the screen's last cell: left out */
                        if (y == cv->rows - 1 && x + 2 == cv->cols && k + 1 < (size_t)cv->rows * (size_t)cv->cols &&
                            cv->ch[k + 1] == TOP_CELL_WIDE_RIGHT)
                                break;
                        /* UTF-8 (the wide library, the locale set): curses moves one or two columns */
                        char u[5];
                        u[top_cell_utf8(cp, u)] = '\0';
                        attrset(attr_of(cv->at[k], color));
                        addstr(u);
                        attrset(A_NORMAL);
                }
        }
        refresh();
}

/* ---- the loops ------------------------------------------------------------------------------------ */

/* Draw the latest view into cv under the lock. */
static void draw_locked(struct top *t, struct top_canvas *cv, struct top_state *s)
{
        pthread_mutex_lock(&t->m);
        s->now = wall_clock_now();
        s->status = t->status;
        s->status_in_view = t->status_in_view;
        /* before the first view: since the collection started (a hung driver makes each cycle
         * short: "has not returned yet"), then the running cycle's time */
        s->collecting_s = !t->view ? monotonic_s() - t->started
                                   : t->cycle_started > 0 ? monotonic_s() - t->cycle_started : 0;
        if (t->gpu_arg && t->view) {
                s->focus = resolve_gpu(t->view, t->gpu_arg);
                if (s->focus < 0)
                        s->message = _("--gpu names no GPU of this host: showing every GPU");
                t->gpu_arg = NULL;
        }
        top_draw(cv, t->view, &t->hist, s);
        pthread_mutex_unlock(&t->m);
}

static int batch_loop(struct top *t, struct top_state *s)
{
        struct top_canvas cv = { 0 };
        const char *cols_env = getenv("COLUMNS");
        unsigned cols = 120;
        struct winsize ws;
        if (cols_env)
                parse_uint_range(cols_env, 40, 1000, &cols);
        else if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40 && ws.ws_col <= 1000)
                cols = ws.ws_col;
        unsigned seen = 0, frames = 0;
        while (!top_signal) {
                pthread_mutex_lock(&t->m);
                unsigned gen = t->gen;
                size_t rows = t->view ? 14 + 9 * t->view->n_gpus + t->view->n_rows : 12;
                pthread_mutex_unlock(&t->m);
                if (gen == seen) {
                        struct timespec ts = { 0, 50 * 1000000L };
                        nanosleep(&ts, NULL);
                        continue;
                }
                seen = gen;
                if (top_canvas_resize(&cv, rows > 400 ? 400 : (int)rows, (int)cols) < 0)
                        break;
                cv.utf8 = t->utf8;
                draw_locked(t, &cv, s);
                char line[4096];
                int last = 0;
                for (int y = 0; y < cv.rows; y++) {
                        top_canvas_line(&cv, y, line, sizeof(line));
                        if (line[0])
                                last = y;
                }
                for (int y = 0; y <= last; y++) {
                        top_canvas_line(&cv, y, line, sizeof(line));
                        puts(line);
                }
                puts("");
                fflush(stdout);
                if (t->iterations && ++frames >= t->iterations)
                        break;
        }
        top_canvas_free(&cv);
        return EXIT_OK;
}

static void dialog_scroll(struct top_state *s, int delta)
{
        if (delta < 0 && s->dialog_scroll < (size_t)-delta)
                s->dialog_scroll = 0;
        else
                s->dialog_scroll = (size_t)((long)s->dialog_scroll + delta);
}

/* While curses owns the terminal nothing else may write to it: stderr (a child's, a library's)
 * goes to an unnamed temporary file, and comes back at the end. */
static int stderr_away(struct top *t)
{
        FILE *f = tmpfile();
        int saved = f ? dup(STDERR_FILENO) : -1;
        if (saved < 0 || dup2(fileno(f), STDERR_FILENO) < 0) {
                if (saved >= 0)
                        close(saved);
                if (f)
                        fclose(f);
                return -1;
        }
        t->err_fd = dup(fileno(f));
        fclose(f);
        return saved;
}

static void stderr_back(int saved)
{
        if (saved < 0)
                return;
        dup2(saved, STDERR_FILENO);
        close(saved);
}

/* What the screen asks and remembers between keys. */
struct ui {
        char *plan;                     /* reclaim's output shown in the dialog */
        bool confirm_plan;              /* A was pressed: the next key decides */
        enum { ASK_NONE = 0, ASK_KILL, ASK_FORCE } ask;
        struct top_kill kill;           /* what k asks about, or ran last */
        char kill_comm[64];             /* escaped for the terminal */
        bool force_offered;             /* the last kill was refused for a live job: F asks again */
        pid_t still_pid;                /* the last kill's process, still there after SIGTERM */
        double still_start;
        bool filtering;                 /* / pressed: keys edit the filter */
        char filter[64];
        char msg[512];
};

/* The selected row of the view as shown (focus, filter, order applied), copied: 0 when none. */
static int selected_row(struct top *t, const struct top_state *s, struct live_row *ret)
{
        size_t idx[LIVE_MAX_ROWS];
        int found = 0;
        pthread_mutex_lock(&t->m);
        size_t n = top_rows(t->view, s, idx, LIVE_MAX_ROWS);
        if (n) {
                *ret = t->view->rows[idx[s->selected < n ? s->selected : n - 1]];
                ret->role = ret->link = ret->detail = ret->cmdline = NULL; /* the view's, not ours */
                found = 1;
        }
        pthread_mutex_unlock(&t->m);
        return found;
}

/* k (F9, T) or K: ask before ending the selected process (TERM; KILL for K, or when SIGTERM
 * left it there). */
static void ask_kill(struct top *t, struct top_state *s, struct ui *u, bool kill9)
{
        struct live_row w;
        if (!selected_row(t, s, &w)) {
                snprintf(u->msg, sizeof(u->msg), "%s", _("no process selected"));
                return;
        }
        if (w.start_time <= 0 || w.state == '?') {
                snprintf(u->msg, sizeof(u->msg), _("PID %d is no process here (NVML still lists a dead owner): nothing to signal"),
                         (int)w.pid);
                return;
        }
        bool again = u->still_pid == w.pid && u->still_start == w.start_time;
        u->kill = (struct top_kill){ .pid = w.pid, .start_ticks = w.start_ticks, .sig = kill9 || again ? SIGKILL : SIGTERM };
        u->ask = ASK_KILL;
        u->force_offered = false;
        /* the name a process gave itself, escaped for the question and the dialog's title */
        struct buf b = BUF_INIT(sizeof(u->kill_comm) * 4);
        esc_terminal(&b, w.comm, strlen(w.comm));
        snprintf(u->kill_comm, sizeof(u->kill_comm), "%s", buf_str(&b));
        buf_free(&b);
        const char *comm = u->kill_comm;
        snprintf(u->msg, sizeof(u->msg),
                 _("SIG%s to PID %d (%s)? y: yes, through reclaim's checks (pidfd, start time; never PID 1, daemons or "
                   "ghostvram's ancestors); any other key: no"),
                 u->kill.sig == SIGKILL ? "KILL" : "TERM", (int)w.pid, comm);
}

/* A key while a question is open: y (or Y after F) answers it, any other key leaves it. */
static void answer(struct top *t, struct top_state *s, struct ui *u, int ch)
{
        if (u->confirm_plan) {
                u->confirm_plan = false;
                const char *why = ch == 'y' || ch == 'Y' ? plan_start(t, s->focus, true) : _("nothing done");
                if (ch == 'y' || ch == 'Y')
                        s->dialog = TOP_DIALOG_TEXT;
                snprintf(u->msg, sizeof(u->msg), "%s", why ? why : "");
                return;
        }
        bool yes = u->ask == ASK_FORCE ? ch == 'Y' : ch == 'y' || ch == 'Y';
        if (yes) {
                u->kill.force = u->ask == ASK_FORCE;
                const char *why = kill_start(t, &u->kill, u->kill_comm);
                snprintf(u->msg, sizeof(u->msg), "%s", why ? why : "");
                s->dialog = TOP_DIALOG_TEXT;
                s->dialog_scroll = 0;
        } else {
                snprintf(u->msg, sizeof(u->msg), "%s", _("nothing done"));
        }
        u->ask = ASK_NONE;
}

/* / : the filter is edited in place, the rows follow as it is typed (Enter keeps it, Esc clears). */
static void filter_key(struct top_state *s, struct ui *u, int ch)
{
        size_t n = strlen(u->filter);
        if (ch == 27) {
                u->filter[0] = '\0';
                u->filtering = false;
        } else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
                u->filtering = false;
        } else if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n) {
                u->filter[n - 1] = '\0';
        } else if (ch >= 0x20 && ch < 0x7f && n + 1 < sizeof(u->filter)) {
                u->filter[n] = (char)ch;
                u->filter[n + 1] = '\0';
        }
        s->filter = u->filter;
        s->selected = 0;
        if (u->filtering)
                snprintf(u->msg, sizeof(u->msg), _("filter: %s_   (Enter keeps it, Esc clears it)"), u->filter);
        else
                u->msg[0] = '\0';
}

static void move_selection(struct top_state *s, int delta)
{
        if (s->dialog) {
                dialog_scroll(s, delta);
                return;
        }
        if (delta < 0 && s->selected < (size_t)-delta)
                s->selected = 0;
        else
                s->selected = (size_t)((long)s->selected + delta);
}

/* One key of the screen (nvtop's and nvitop's first keys among them). */
static void on_key(struct top *t, struct top_state *s, struct ui *u, int ch)
{
        switch (ch) {
        case 'q': case 'Q': case KEY_F(10):
                top_signal = -1;
                break;
        case 27: /* Esc */
                s->dialog = TOP_DIALOG_NONE;
                break;
        case 'g':
                pthread_mutex_lock(&t->m);
                s->focus = next_focus(t->view, s->focus);
                pthread_mutex_unlock(&t->m);
                s->selected = 0;
                break;
        case 's': case KEY_F(6): case '>': case '.':
                s->sort = (enum top_sort)((s->sort + 1) % TOP_SORT_COUNT);
                s->tree = s->sort_reverse = false;
                break;
        case '<': case ',':
                s->sort = (enum top_sort)((s->sort + TOP_SORT_COUNT - 1) % TOP_SORT_COUNT);
                s->tree = s->sort_reverse = false;
                break;
        case 'I':
                s->sort_reverse = !s->sort_reverse;
                break;
        case 't': case KEY_F(5):
                s->tree = !s->tree;
                s->selected = 0;
                break;
        case '/': case KEY_F(3): case KEY_F(4):
                u->filtering = true;
                filter_key(s, u, -1);
                break;
        case 'k': case 'T': case KEY_F(9):
                ask_kill(t, s, u, false);
                break;
        case 'K':
                ask_kill(t, s, u, true);
                break;
        case 'F':
                if (u->force_offered) {
                        u->ask = ASK_FORCE;
                        snprintf(u->msg, sizeof(u->msg),
                                 _("End PID %d although it belongs to a running job (--force)? Y (capital): yes; any other key: no"),
                                 (int)u->kill.pid);
                }
                break;
        case KEY_UP: move_selection(s, -1); break;
        case KEY_DOWN: move_selection(s, 1); break;
        case KEY_PPAGE: move_selection(s, -10); break;
        case KEY_NPAGE: move_selection(s, 10); break;
        case KEY_HOME: move_selection(s, -(int)LIVE_MAX_ROWS); break;
        case KEY_END: move_selection(s, (int)LIVE_MAX_ROWS); break;
        case 'r': {
                const char *why = plan_start(t, s->focus, false);
                s->dialog = TOP_DIALOG_TEXT;
                s->dialog_scroll = 0;
                if (why)
                        snprintf(u->msg, sizeof(u->msg), "%s", why);
                break;
        }
        case 'A':
                if (s->dialog != TOP_DIALOG_TEXT || !u->plan)
                        snprintf(u->msg, sizeof(u->msg), "%s", _("A acts on reclaim's plan: press r first"));
                else if (geteuid() != 0)
                        snprintf(u->msg, sizeof(u->msg), "%s", _("acting needs root: run sudo ghostvram reclaim --gpu N --yes"));
                else
                        u->confirm_plan = true;
                break;
        case 'x':
                s->dialog = TOP_DIALOG_XID;
                s->dialog_scroll = 0;
                break;
        case '?': case 'h': case KEY_F(1):
                s->dialog = TOP_DIALOG_HELP;
                s->dialog_scroll = 0;
                break;
        default:
                break;
        }
}

/* Take what the reclaim worker finished (a plan or a kill) for the dialog. */
static bool take_output(struct top *t, struct top_state *s, struct ui *u)
{
        pthread_mutex_lock(&t->m);
        bool running = t->plan_running;
        if (t->plan_text) {
                free(u->plan);
                u->plan = t->plan_text;
                t->plan_text = NULL;
                s->dialog = TOP_DIALOG_TEXT;
                s->dialog_scroll = 0;
                if (t->kill_done) {
                        u->force_offered = t->kill_outcome == TOP_KILL_NEEDS_FORCE;
                        bool still = t->kill_outcome == TOP_KILL_STILL_THERE && t->kill.sig == SIGTERM;
                        u->still_pid = still ? t->kill.pid : 0;
                        u->still_start = 0;
                        for (size_t i = 0; still && t->view && i < t->view->n_rows; i++)
                                if (t->view->rows[i].pid == t->kill.pid)
                                        u->still_start = t->view->rows[i].start_time;
                }
                t->kill_done = false;
        }
        pthread_mutex_unlock(&t->m);
        return running;
}

static int screen_loop(struct top *t, struct top_state *s)
{
        if (!initscr())
                return EXIT_INCOMPLETE;
        int saved_err = stderr_away(t);
        top_screen_on = 1;
        crash_handlers();
        cbreak();
        noecho();
        keypad(stdscr, TRUE);
        set_escdelay(25);
        curs_set(0);
        timeout(100);
        const char *nc = getenv("NO_COLOR");
        s->color = has_colors() && !(nc && *nc);
        if (s->color)
                colors_init();
        struct top_canvas cv = { 0 };
        static struct ui u;
        memset(&u, 0, sizeof(u));
        s->message = u.msg;
        s->filter = u.filter;
        unsigned samples = 0, last_gen = 0;
        int rc = EXIT_OK;
        /* a frame is drawn when something changed (a sample, a key, reclaim's output, the size)
         * or a second passed (the sample's age, "collecting for"): not every 100 ms */
        bool dirty = true;
        double drawn = 0;
        while (!top_signal) {
                if ((cv.rows != LINES || cv.cols != COLS) && top_canvas_resize(&cv, LINES, COLS) < 0) {
                        rc = EXIT_INCOMPLETE;
                        break;
                }
                cv.utf8 = t->utf8;
                bool had = u.plan != NULL;
                char *before = u.plan;
                bool running = take_output(t, s, &u);
                dirty |= u.plan != before || had != (u.plan != NULL) || running;
                pthread_mutex_lock(&t->m);
                if (t->gen != last_gen) {
                        last_gen = t->gen;
                        samples++;
                        dirty = true;
                }
                pthread_mutex_unlock(&t->m);
                if (t->iterations && samples > t->iterations)
                        break;
                s->dialog_title = t->plan_title;
                s->dialog_text = running ? _("running ghostvram reclaim (a fresh scan)...") : u.plan;
                if (u.confirm_plan)
                        snprintf(u.msg, sizeof(u.msg), "%s",
                                 _("Act on a fresh plan: end the processes it names? y: yes, any other key: no"));
                if (dirty || monotonic_s() - drawn >= 1.0) {
                        draw_locked(t, &cv, s);
                        if (s->message != u.msg) { /* draw_locked's own note (--gpu names no GPU) */
                                snprintf(u.msg, sizeof(u.msg), "%s", s->message);
                                s->message = u.msg;
                        }
                        paint(&cv, s->color);
                        drawn = monotonic_s();
                        dirty = false;
                }
                int ch = getch();
                if (ch == ERR)
                        continue;
                dirty = true;
                if (u.filtering) {
                        filter_key(s, &u, ch);
                        continue;
                }
                if (u.confirm_plan || u.ask != ASK_NONE) {
                        answer(t, s, &u, ch);
                        continue;
                }
                u.msg[0] = '\0';
                on_key(t, s, &u, ch);
        }
        top_screen_on = 0;
        endwin();
        stderr_back(saved_err);
        top_canvas_free(&cv);
        free(u.plan);
        return rc;
}

/* Can this terminal be driven full-screen (cursor addressing)? */
static bool terminal_addressable(void)
{
        int err = 0;
        if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
                return false;
        if (setupterm(NULL, STDOUT_FILENO, &err) != OK)
                return false;
        const char *cup = tigetstr("cup");
        bool ok = cup && cup != (char *)-1;
        del_curterm(cur_term);
        return ok;
}

/* The character type of the locale (ncursesw writes multibyte text only then; wcwidth counts
 * a Chinese character's two columns only then): only LC_CTYPE, so figures keep their C decimal
 * point (i18n_init chose LC_MESSAGES). Returns whether the terminal takes UTF-8: "→" is shown
 * then, elsewhere "->". A translated screen needs UTF-8 (main's output is UTF-8 in every
 * locale): C.UTF-8 when the locale's own codeset is another, English if that is missing. */
static bool top_charset(void)
{
        setlocale(LC_CTYPE, "");
        if (!strcmp(nl_langinfo(CODESET), "UTF-8"))
                return true;
        if (!i18n_active())
                return false;
        if (setlocale(LC_CTYPE, "C.UTF-8") && !strcmp(nl_langinfo(CODESET), "UTF-8"))
                return true;
        i18n_off();
        return false;
}

struct top_args {
        struct top *t;
        uint64_t floor_mib;
        bool batch, no_kernel;
};

/* One of top's own options into ctx (a struct top_args): 1 taken, 0 not top's own, -1 a usage
 * error (said). */
static int top_option(void *ctx, int opt, const char *arg)
{
        struct top_args *a = ctx;
        struct top *t = a->t;
        switch (opt) {
        case 'i':
                if (parse_duration_ms(arg, &t->interval_ms) < 0 || t->interval_ms < 200 || t->interval_ms > 3600000)
                        return cli_error("top", _("--interval: '%s' is not a duration from 200ms to 1h"), arg), -1;
                return 1;
        case 'd': {
                /* nvtop's and htop's -d: tenths of a second; a duration with its unit too */
                unsigned tenths;
                bool digits = arg[0] && strspn(arg, "0123456789") == strlen(arg);
                if (digits && parse_uint_range(arg, 2, 36000, &tenths) == 0)
                        t->interval_ms = (uint64_t)tenths * 100;
                else if (digits || parse_duration_ms(arg, &t->interval_ms) < 0 || t->interval_ms < 200 ||
                         t->interval_ms > 3600000)
                        return cli_error("top", _("-d: '%s' is not tenths of a second from 2 to 36000 (nvtop's -d 10 is 1 s), "
                                                  "nor a duration from 200ms to 1h"),
                                         arg), -1;
                return 1;
        }
        case '1':
                a->batch = true;
                t->iterations = 1;
                return 1;
        case 'g':
                t->gpu_arg = arg;
                return 1;
        case 'b':
                a->batch = true;
                return 1;
        case 'n':
                if (parse_uint_range(arg, 1, 1u << 30, &t->iterations) < 0)
                        return cli_error("top", _("--iterations: '%s' is not a positive number"), arg), -1;
                return 1;
        case 'F':
                if (parse_u64(arg, &a->floor_mib) < 0 || a->floor_mib > (1u << 24))
                        return cli_error("top", _("--noise-floor: '%s' is not a number of MiB"), arg), -1;
                return 1;
        case 'N':
                a->no_kernel = true;
                return 1;
        default:
                return 0;
        }
}

#define TOP_HELP (-1) /* --help was printed */

/* argv into t and a, the GPU and the terminal checked: EXIT_OK to go on, TOP_HELP, or the exit
 * status of a usage error (said). */
static int top_parse(int argc, char **argv, struct top *t, struct top_args *a)
{
        static const struct option opts[] = {
                CLI_COMMON_LONGOPTS,
                { "interval", required_argument, NULL, 'i' },
                { "gpu", required_argument, NULL, 'g' },
                { "batch", no_argument, NULL, 'b' },
                { "iterations", required_argument, NULL, 'n' },
                { "noise-floor", required_argument, NULL, 'F' },
                { "no-kernel", no_argument, NULL, 'N' },
                { "once", no_argument, NULL, '1' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        int r = cli_options(argc, argv, "hvbn:d:g:1", opts, &t->c, "top", top_option, a, top_usage);
        if (r != EXIT_OK)
                return r == CLI_HELP ? TOP_HELP : r;
        if (cli_common_finish(&t->c, "top") < 0)
                return EXIT_USAGE;
        /* a GPU the host does not have is a usage error, as in scan and watch (one driver query;
         * without a driver an index is kept and the screen says what is missing) */
        int gpu_index;
        int gr = cli_gpu_resolve(&t->c, t->gpu_arg, true, &gpu_index, "top");
        if (gr != EXIT_OK)
                return gr;
        if (!a->batch && !terminal_addressable()) {
                a->batch = true;
                if (isatty(STDERR_FILENO))
                        fprintf(stderr, "ghostvram top: %s\n", _("this terminal cannot move the cursor: plain frames follow"));
        }
        return EXIT_OK;
}

/* The collector thread's sampler options: nvtop's figures too. */
static void top_sampler_opts(struct top *t, const struct top_args *a, struct sampler_opts *sop)
{
        struct scan_once_opts so;
        cli_scan_once_opts(&t->c, &so);
        memset(sop, 0, sizeof(*sop));
        sop->facts = so.facts;
        sop->facts.read_kernel = !a->no_kernel;
        sop->facts.gpu.telemetry = true; /* nvtop's figures, per GPU and per process */
        sop->facts.gpu.health = true;    /* ECC and row remapping */
        sop->ledger = so.ledger;
        sop->ledger.floor_min_bytes = a->floor_mib << 20;
        sop->confirm_ms = 0;             /* the second cycle confirms: the first screen comes at once */
        sop->light = t->iterations != 1 || !a->batch; /* a single frame (--once) has the whole walk */
        sop->wait = top_wait;
        sop->wait_ctx = t;
}

/* The lock, the condition (monotonic) and the stop signals' handlers. */
static void top_sync_init(struct top *t)
{
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&t->cv, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&t->m, NULL);
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGQUIT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
}

/* The terminal is already restored: stop the collector, but never wait on a driver call for
 * long: past the deadline the process ends with the thread in it. */
static void top_stop_collector(struct top *t)
{
        pthread_mutex_lock(&t->m);
        t->stop = true;
        bool in_cycle = t->cycle_started > 0;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->m);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 500 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        /* a cycle in progress may wait on the driver: give it a second, then quit without it
         * (the thread ends with us) */
        if (in_cycle)
                until.tv_sec++;
        if (pthread_timedjoin_np(t->thread, NULL, &until) == 0) {
                sampler_free(t->sampler);
                live_view_free(t->view);
                live_history_free(&t->hist);
        }
}

int cmd_top(int argc, char **argv)
{
        /* static: a collector abandoned in a driver call keeps what it uses reachable until the
         * process ends (top runs once a process) */
        static struct top t;
        memset(&t, 0, sizeof(t));
        t.err_fd = -1;
        cli_common_init(&t.c, TOP_ACCEPTS);
        t.interval_ms = 1000;
        struct top_args a = { .t = &t, .floor_mib = 64 };
        int pr = top_parse(argc, argv, &t, &a);
        if (pr != EXIT_OK)
                return pr == TOP_HELP ? EXIT_OK : pr;
        t.utf8 = top_charset();
        t.clk_tck = sysconf(_SC_CLK_TCK);
        struct sampler_opts sop;
        top_sampler_opts(&t, &a, &sop);
        top_sync_init(&t);
        int r = sampler_new(&sop, &t.sampler);
        t.started = monotonic_s();
        if (r == 0)
                r = start_quiet_thread(&t.thread, collector_main, &t, false);
        if (r < 0) {
                cli_error("top", _("cannot start the collection: %s"), strerror(-r));
                sampler_free(t.sampler);
                return EXIT_INCOMPLETE;
        }
        struct top_state s;
        memset(&s, 0, sizeof(s));
        s.interval_s = (double)t.interval_ms / 1000.0;
        s.stale_after_s = 3 * s.interval_s + 1;
        s.focus = -1;
        s.message = "";
        int rc = a.batch ? batch_loop(&t, &s) : screen_loop(&t, &s);
        if (rc == EXIT_INCOMPLETE && !a.batch)
                cli_error("top", _("cannot start the terminal (TERM=%s)"), getenv("TERM") ? getenv("TERM") : "");
        top_stop_collector(&t);
        return rc;
}
