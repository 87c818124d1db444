/* top_keys: what a key does on `ghostvram top`'s screen: the selection, sort, tree, filter and
 * dialogs (struct top_state), and the questions before reclaim's plan acts or a process is
 * ended (run/top_reclaim.h). The screen loop (render/top_tty.h) reads the keys and draws. */
#pragma once
#include <stdbool.h>
#include <sys/types.h>

#include "render/top_feed.h"
#include "render/top_screen.h"
#include "run/top_kill.h"
#include "run/top_reclaim.h"
#include "run/top_run.h"

/* What the screen works with: the collector, what it feeds (under run's lock), the worker. */
struct top_live {
        struct top_run *run;
        struct top_feed *feed;
        struct top_reclaim *reclaim;
        const char *gpu_arg;            /* --gpu, until the first view resolves it */
        unsigned iterations;            /* stop after N samples (frames in batch), 0: never */
        bool utf8;                      /* the locale's codeset is UTF-8: glyphs, not "->" */
};

/* What the screen asks and remembers between keys. */
struct top_ui {
        char *plan;                     /* reclaim's output shown in the dialog */
        bool confirm_plan;              /* A was pressed: the next key decides */
        enum { TOP_ASK_NONE = 0, TOP_ASK_KILL, TOP_ASK_FORCE } ask;
        struct top_kill kill;           /* what k asks about, or ran last */
        char kill_comm[64];             /* escaped for the terminal */
        bool force_offered;             /* the last kill was refused for a live job: F asks again */
        pid_t still_pid;                /* the last kill's process, still there after SIGTERM */
        double still_start;
        bool filtering;                 /* / pressed: keys edit the filter */
        char filter[64];
        char msg[512];
        bool quit;                      /* q, F10 */
};

/* One key (a curses code): to the filter while it is edited, to an open question, else as a
 * command (nvtop's, htop's and nvitop's keys). */
void top_keys_on_key(struct top_live *l, struct top_state *s, struct top_ui *u, int ch);
/* Take what the reclaim worker finished (a plan or a kill) into the dialog. Returns whether
 * it is running. */
bool top_keys_take_output(struct top_live *l, struct top_state *s, struct top_ui *u);
/* The GPU index --gpu (arg: an index, UUID or PCI bus id) names in v, or -1. */
int top_keys_resolve_gpu(const struct live_view *v, const char *arg);
