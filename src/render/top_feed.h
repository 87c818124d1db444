/* top_feed: what `ghostvram top` shows of the collector's cycles (run/top_run.h): the latest
 * live view, the history its graphs draw, and the latest cycle's problem. Its hooks turn each
 * cycle into them; readers hold top_run's lock. */
#pragma once
#include <stdbool.h>

#include "render/live_view.h"
#include "run/top_run.h"

struct top_feed {
        long clk_tck;                   /* sysconf(_SC_CLK_TCK), for the rows' CPU use */
        struct live_view *view;         /* NULL until a cycle published one */
        struct live_history hist;
        char status[LIVE_STATUS_MAX];   /* the latest cycle's problem ("" none) */
        bool status_in_view;            /* the cycle that set status also made view */
};

/* The hooks that feed f (f zeroed but for clk_tck). */
struct top_run_hooks top_feed_hooks(struct top_feed *f);
/* The view and the history (once the collector has stopped). */
void top_feed_free(struct top_feed *f);
