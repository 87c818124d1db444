/* reclaim_print: what `ghostvram reclaim` prints while it works (render/reclaim_print.h). */
#include "render/reclaim_print.h"

#include <stdio.h>
#include <unistd.h>

#include "render/reclaim_render.h"
#include "util/i18n.h"

static void banner(const struct reclaim_print *p)
{
        if (p->banner)
                p->banner(p->banner_ctx);
}

static void on_scanning(void *ctx, uint64_t confirm_ms)
{
        const struct reclaim_print *p = ctx;
        banner(p);
        printf(_("Scanning (a ghost is confirmed by a second sample %.3g s after the first) ...\n\n"),
               (double)confirm_ms / 1000.0);
        fflush(stdout);
}

/* The plan, before acting: the first lines of the report. */
static void on_plan(void *ctx, const struct reclaim_report *rep)
{
        const struct reclaim_print *p = ctx;
        if (p->json_stream) {
                p->print_json(reclaim_stream_plan_json(rep));
                return;
        }
        banner(p);
        reclaim_stream_plan_text(stdout, rep, p->verbose);
        fflush(stdout);
}

static void on_action(void *ctx, const struct reclaim_action *a, enum reclaim_event ev, double t)
{
        const struct reclaim_print *p = ctx;
        if (p->json_stream) {
                p->print_json(reclaim_stream_action_json(a, ev, t));
                return;
        }
        reclaim_stream_action_text(stdout, a, ev, t);
        fflush(stdout);
}

static void on_sample(void *ctx, const struct recovery_gpu *g, bool before, double t)
{
        const struct reclaim_print *p = ctx;
        if (p->json_stream) {
                p->print_json(reclaim_stream_sample_json(g, before, t));
                return;
        }
        reclaim_stream_sample_text(stdout, g, before, p->poke, t);
        fflush(stdout);
}

static bool on_can_ask(void *ctx)
{
        const struct reclaim_print *p = ctx;
        return !p->json && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
}

static void on_show_plan(void *ctx, const struct reclaim_report *rep)
{
        const struct reclaim_print *p = ctx;
        reclaim_text(stdout, rep, p->verbose);
}

/* Ask on a terminal (never when stdin or stdout is not one). */
static bool on_ask(void *ctx, const char *question)
{
        (void)ctx;
        if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
                return false;
        printf("\n%s [y/N] ", question);
        fflush(stdout);
        char line[16];
        if (!fgets(line, sizeof(line), stdin))
                return false;
        return line[0] == 'y' || line[0] == 'Y';
}

static void on_line(void *ctx, const char *text)
{
        (void)ctx;
        printf("%s\n", text);
        fflush(stdout);
}

/* The report: what was done (the plan too, unless it went out before acting). */
static void on_report(void *ctx, const struct reclaim_report *rep)
{
        const struct reclaim_print *p = ctx;
        if (p->json) {
                p->print_json(reclaim_json(rep));
                return;
        }
        if (p->json_stream) {
                if (!rep->plan_shown && (rep->plan || rep->cgroup || rep->esc))
                        p->print_json(reclaim_stream_plan_json(rep));
                p->print_json(reclaim_stream_result_json(rep));
                return;
        }
        banner(p);
        reclaim_text(stdout, rep, p->verbose);
        fflush(stdout);
}

static void on_error(void *ctx, const char *msg)
{
        const struct reclaim_print *p = ctx;
        p->error(msg);
}

void reclaim_print_io(struct reclaim_io *io, struct reclaim_print *p)
{
        bool lines = !p->json; /* --json: the report only */
        *io = (struct reclaim_io){
                .ctx = p,
                .scanning = lines && !p->json_stream ? on_scanning : NULL,
                .plan = lines ? on_plan : NULL,
                .action = lines ? on_action : NULL,
                .sample = lines ? on_sample : NULL,
                .can_ask = on_can_ask,
                .show_plan = on_show_plan,
                .ask = on_ask,
                .line = on_line,
                .report = on_report,
                .error = on_error,
        };
}
