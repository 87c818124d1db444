#include "render/top_keys.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curses.h>

#include "util/buf.h"
#include "util/escape.h"
#include "util/i18n.h"
#include "util/parse.h"

int top_keys_resolve_gpu(const struct live_view *v, const char *arg)
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

/* The GPU after focus in v (g), -1 after the last: every GPU. */
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

static void dialog_scroll(struct top_state *s, int delta)
{
        if (delta < 0 && s->dialog_scroll < (size_t)-delta)
                s->dialog_scroll = 0;
        else
                s->dialog_scroll = (size_t)((long)s->dialog_scroll + delta);
}

/* The selected row of the view as shown (focus, filter, order applied), copied: 0 when none. */
static int selected_row(struct top_live *l, const struct top_state *s, struct live_row *ret)
{
        size_t idx[LIVE_MAX_ROWS];
        int found = 0;
        top_run_lock(l->run);
        size_t n = top_rows(l->feed->view, s, idx, LIVE_MAX_ROWS);
        if (n) {
                *ret = l->feed->view->rows[idx[s->selected < n ? s->selected : n - 1]];
                ret->role = ret->link = ret->detail = ret->cmdline = NULL; /* the view's, not ours */
                found = 1;
        }
        top_run_unlock(l->run);
        return found;
}

/* k (F9, T) or K: ask before ending the selected process (TERM; KILL for K, or when SIGTERM
 * left it there). */
static void ask_kill(struct top_live *l, struct top_state *s, struct top_ui *u, bool kill9)
{
        struct live_row w;
        if (!selected_row(l, s, &w)) {
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
        u->ask = TOP_ASK_KILL;
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
static void answer(struct top_live *l, struct top_state *s, struct top_ui *u, int ch)
{
        if (u->confirm_plan) {
                u->confirm_plan = false;
                const char *why = ch == 'y' || ch == 'Y' ? top_reclaim_plan(l->reclaim, s->focus, true) : _("nothing done");
                if (ch == 'y' || ch == 'Y')
                        s->dialog = TOP_DIALOG_TEXT;
                snprintf(u->msg, sizeof(u->msg), "%s", why ? why : "");
                return;
        }
        bool yes = u->ask == TOP_ASK_FORCE ? ch == 'Y' : ch == 'y' || ch == 'Y';
        if (yes) {
                u->kill.force = u->ask == TOP_ASK_FORCE;
                const char *why = top_reclaim_kill(l->reclaim, &u->kill, u->kill_comm);
                snprintf(u->msg, sizeof(u->msg), "%s", why ? why : "");
                s->dialog = TOP_DIALOG_TEXT;
                s->dialog_scroll = 0;
        } else {
                snprintf(u->msg, sizeof(u->msg), "%s", _("nothing done"));
        }
        u->ask = TOP_ASK_NONE;
}

/* / : the filter is edited in place, the rows follow as it is typed (Enter keeps it, Esc clears). */
static void filter_key(struct top_state *s, struct top_ui *u, int ch)
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
static void command_key(struct top_live *l, struct top_state *s, struct top_ui *u, int ch)
{
        switch (ch) {
        case 'q': case 'Q': case KEY_F(10):
                u->quit = true;
                break;
        case 27: /* Esc */
                s->dialog = TOP_DIALOG_NONE;
                break;
        case 'g':
                top_run_lock(l->run);
                s->focus = next_focus(l->feed->view, s->focus);
                top_run_unlock(l->run);
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
                ask_kill(l, s, u, false);
                break;
        case 'K':
                ask_kill(l, s, u, true);
                break;
        case 'F':
                if (u->force_offered) {
                        u->ask = TOP_ASK_FORCE;
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
                const char *why = top_reclaim_plan(l->reclaim, s->focus, false);
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

bool top_keys_take_output(struct top_live *l, struct top_state *s, struct top_ui *u)
{
        struct top_reclaim *rc = l->reclaim;
        top_run_lock(l->run);
        bool running = rc->running;
        if (rc->text) {
                free(u->plan);
                u->plan = rc->text;
                rc->text = NULL;
                s->dialog = TOP_DIALOG_TEXT;
                s->dialog_scroll = 0;
                if (rc->kill_done) {
                        u->force_offered = rc->kill_outcome == TOP_KILL_NEEDS_FORCE;
                        bool still = rc->kill_outcome == TOP_KILL_STILL_THERE && rc->kill.sig == SIGTERM;
                        u->still_pid = still ? rc->kill.pid : 0;
                        u->still_start = 0;
                        const struct live_view *v = l->feed->view;
                        for (size_t i = 0; still && v && i < v->n_rows; i++)
                                if (v->rows[i].pid == rc->kill.pid)
                                        u->still_start = v->rows[i].start_time;
                }
                rc->kill_done = false;
        }
        top_run_unlock(l->run);
        return running;
}

void top_keys_on_key(struct top_live *l, struct top_state *s, struct top_ui *u, int ch)
{
        if (u->filtering) {
                filter_key(s, u, ch);
                return;
        }
        if (u->confirm_plan || u->ask != TOP_ASK_NONE) {
                answer(l, s, u, ch);
                return;
        }
        u->msg[0] = '\0';
        command_key(l, s, u, ch);
}
