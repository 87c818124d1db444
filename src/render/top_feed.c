#include "render/top_feed.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/i18n.h"

/* A cycle's view (a published result's), built outside the lock. */
static void *top_feed_build(void *ctx, int r, const struct sample *smp)
{
        (void)ctx;
        struct live_view *v = NULL;
        if (r == 0 && smp->published && smp->res &&
            live_view_build(smp->res, true, smp->full, smp->duration_s, &v) == 0)
                v->finished = smp->finished;
        return v;
}

/* Under the lock: the point of the history, the new view (its CPU use from the one it
 * replaces) and the cycle's problem. */
static void top_feed_publish(void *ctx, int r, const struct sample *smp, void *frame)
{
        struct top_feed *f = ctx;
        struct live_view *v = frame;
        if (r < 0)
                snprintf(f->status, sizeof(f->status), _("collection failed: %s"), strerror(-r));
        else
                live_sample_status(smp, f->status, sizeof(f->status));
        if (r == 0)
                live_history_add(&f->hist, v, smp->finished);
        if (v) {
                live_view_cpu(v, f->view, f->clk_tck);
                live_view_free(f->view);
                f->view = v;
        }
        f->status_in_view = v != NULL;
}

struct top_run_hooks top_feed_hooks(struct top_feed *f)
{
        return (struct top_run_hooks){ .build = top_feed_build, .publish = top_feed_publish, .ctx = f };
}

void top_feed_free(struct top_feed *f)
{
        live_view_free(f->view);
        f->view = NULL;
        live_history_free(&f->hist);
}
