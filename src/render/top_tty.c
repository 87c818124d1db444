#include "render/top_tty.h"

#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>
#include <term.h>

#include "util/deadline.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/timefmt.h"

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
static void draw_locked(struct top_live *l, struct top_canvas *cv, struct top_state *s)
{
        top_run_lock(l->run);
        const struct live_view *v = l->feed->view;
        s->now = wall_clock_now();
        s->status = l->feed->status;
        s->status_in_view = l->feed->status_in_view;
        /* before the first view: since the collection started (a hung driver makes each cycle
         * short: "has not returned yet"), then the running cycle's time */
        double cycle = top_run_cycle_started(l->run);
        s->collecting_s = !v ? monotonic_s() - top_run_started(l->run) : cycle > 0 ? monotonic_s() - cycle : 0;
        if (l->gpu_arg && v) {
                s->focus = top_keys_resolve_gpu(v, l->gpu_arg);
                if (s->focus < 0)
                        s->message = _("--gpu names no GPU of this host: showing every GPU");
                l->gpu_arg = NULL;
        }
        top_draw(cv, v, &l->feed->hist, s);
        top_run_unlock(l->run);
}

/* The batch frames' width: $COLUMNS, the terminal's, or 120. */
static unsigned batch_cols(void)
{
        const char *cols_env = getenv("COLUMNS");
        unsigned cols = 120;
        struct winsize ws;
        if (cols_env)
                parse_uint_range(cols_env, 40, 1000, &cols);
        else if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40 && ws.ws_col <= 1000)
                cols = ws.ws_col;
        return cols;
}

/* The canvas as lines, without the blank ones at its end, and a blank line. */
static void print_canvas(const struct top_canvas *cv)
{
        char line[4096];
        int last = 0;
        for (int y = 0; y < cv->rows; y++) {
                top_canvas_line(cv, y, line, sizeof(line));
                if (line[0])
                        last = y;
        }
        for (int y = 0; y <= last; y++) {
                top_canvas_line(cv, y, line, sizeof(line));
                puts(line);
        }
        puts("");
        fflush(stdout);
}

int top_tty_batch(struct top_live *l, struct top_state *s)
{
        struct top_canvas cv = { 0 };
        unsigned cols = batch_cols();
        unsigned seen = 0, frames = 0;
        while (!top_signal) {
                top_run_lock(l->run);
                unsigned gen = top_run_gen(l->run);
                const struct live_view *v = l->feed->view;
                size_t rows = v ? 14 + 9 * v->n_gpus + v->n_rows : 12;
                top_run_unlock(l->run);
                if (gen == seen) {
                        struct timespec ts = { 0, 50 * 1000000L };
                        nanosleep(&ts, NULL);
                        continue;
                }
                seen = gen;
                if (top_canvas_resize(&cv, rows > 400 ? 400 : (int)rows, (int)cols) < 0)
                        break;
                cv.utf8 = l->utf8;
                draw_locked(l, &cv, s);
                print_canvas(&cv);
                if (l->iterations && ++frames >= l->iterations)
                        break;
        }
        top_canvas_free(&cv);
        return 0;
}

/* While curses owns the terminal nothing else may write to it: stderr (a child's, a library's)
 * goes to an unnamed temporary file, and comes back at the end. */
static int stderr_away(struct top_live *l)
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
        l->reclaim->err_fd = dup(fileno(f));
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

/* curses in the screen's modes: keys unbuffered and unechoed, a key wait of 100 ms, colour
 * unless NO_COLOR (into s). */
static void screen_modes(struct top_state *s)
{
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
}

/* The screen between keys, drawn when dirty or a second after the last frame. */
struct screen {
        struct top_canvas cv;
        struct top_ui u;
        unsigned samples, last_gen;
        bool dirty;
        double drawn;
};

/* What changed since the last look: the worker's output, a new sample. Returns false when
 * l->iterations samples were shown. */
static bool screen_follow(struct top_live *l, struct top_state *s, struct screen *sc)
{
        struct top_ui *u = &sc->u;
        bool had = u->plan != NULL;
        char *before = u->plan;
        bool running = top_keys_take_output(l, s, u);
        sc->dirty |= u->plan != before || had != (u->plan != NULL) || running;
        top_run_lock(l->run);
        if (top_run_gen(l->run) != sc->last_gen) {
                sc->last_gen = top_run_gen(l->run);
                sc->samples++;
                sc->dirty = true;
        }
        top_run_unlock(l->run);
        if (l->iterations && sc->samples > l->iterations)
                return false;
        s->dialog_title = l->reclaim->title;
        s->dialog_text = running ? _("running ghostvram reclaim (a fresh scan)...") : u->plan;
        if (u->confirm_plan)
                snprintf(u->msg, sizeof(u->msg), "%s",
                         _("Act on a fresh plan: end the processes it names? y: yes, any other key: no"));
        return true;
}

/* A frame when something changed (a sample, a key, reclaim's output, the size) or a second
 * passed (the sample's age, "collecting for"): not every 100 ms. */
static void screen_frame(struct top_live *l, struct top_state *s, struct screen *sc)
{
        if (!sc->dirty && monotonic_s() - sc->drawn < 1.0)
                return;
        draw_locked(l, &sc->cv, s);
        if (s->message != sc->u.msg) { /* draw_locked's own note (--gpu names no GPU) */
                snprintf(sc->u.msg, sizeof(sc->u.msg), "%s", s->message);
                s->message = sc->u.msg;
        }
        paint(&sc->cv, s->color);
        sc->drawn = monotonic_s();
        sc->dirty = false;
}

/* The loop: follow, draw, one key. Returns 0, or -1 when the grid cannot be sized. */
static int screen_run(struct top_live *l, struct top_state *s, struct screen *sc)
{
        sc->dirty = true;
        while (!top_signal && !sc->u.quit) {
                if ((sc->cv.rows != LINES || sc->cv.cols != COLS) && top_canvas_resize(&sc->cv, LINES, COLS) < 0)
                        return -1;
                sc->cv.utf8 = l->utf8;
                if (!screen_follow(l, s, sc))
                        break;
                screen_frame(l, s, sc);
                int ch = getch();
                if (ch == ERR)
                        continue;
                sc->dirty = true;
                top_keys_on_key(l, s, &sc->u, ch);
        }
        return 0;
}

int top_tty_screen(struct top_live *l, struct top_state *s)
{
        if (!initscr())
                return -1;
        int saved_err = stderr_away(l);
        top_screen_on = 1;
        crash_handlers();
        screen_modes(s);
        /* static, as top runs once a process: s points into it (message, filter) */
        static struct screen sc;
        memset(&sc, 0, sizeof(sc));
        s->message = sc.u.msg;
        s->filter = sc.u.filter;
        int rc = screen_run(l, s, &sc);
        top_screen_on = 0;
        endwin();
        stderr_back(saved_err);
        top_canvas_free(&sc.cv);
        free(sc.u.plan);
        return rc;
}

bool top_tty_addressable(void)
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
bool top_tty_charset(void)
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

void top_tty_signals(void)
{
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
