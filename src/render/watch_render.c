/* watch_render: `ghostvram watch`'s lines, as text or JSON (docs/json.md). */
#include "render/watch_render.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "collect/xid.h"
#include "util/json_util.h"
#include "util/timefmt.h"

#define MIB (1024ull * 1024ull)

/* The GPU's part of a JSON line: index, uuid, pci_bus_id, the verdict, the ghost and the PIDs
 * of the first finding (an array of numbers). */
static void watch_gpu_json(json_t *o, const struct gpu_info *g, const struct gpu_ledger *l)
{
        const struct finding *fd = l->n_findings ? &l->findings[0] : NULL;
        json_t *pids = json_array();
        for (size_t i = 0; fd && i < fd->n_pids; i++)
                json_array_append_new(pids, json_integer(fd->pids[i]));
        json_set(o, "index", json_integer(g->index));
        json_set(o, "uuid", g->uuid[0] ? json_text(g->uuid) : json_null());
        json_set(o, "pci_bus_id", g->pci_bus_id[0] ? json_text(g->pci_bus_id) : json_null());
        json_set(o, "verdict", json_string(fd ? fd->code : "unknown"));
        json_set(o, "ghost_bytes", json_integer((json_int_t)l->ghost));
        json_set(o, "ghost_confirmed", json_boolean(l->ghost_confirmed));
        json_set(o, "pids", pids);
}

void watch_line_print(FILE *out, const struct watch_line *wl, bool json, double now)
{
        if (!json) {
                char ts[40];
                if (rfc3339_format(now, false, ts, sizeof(ts)) < 0)
                        ts[0] = '\0';
                fprintf(out, "%s %s\n", ts, wl->text);
                fflush(out);
                return;
        }
        json_t *o = json_object();
        json_set(o, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_set_time(o, "time", now, 1);
        json_set(o, "event", json_string(wl->event));
        if (wl->g && wl->l)
                watch_gpu_json(o, wl->g, wl->l);
        if (wl->xid)
                json_set(o, "kernel_event", xid_event_to_json(wl->xid));
        json_set(o, "message", json_text(wl->text));
        json_dumpf(o, out, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
        json_decref(o);
        fputc('\n', out);
        fflush(out);
}

void watch_banner_print(FILE *out, uint64_t interval_ms, uint64_t threshold_bytes, uint64_t for_ms, bool exec)
{
        fprintf(out, "watching every %.3g s; alert when a confirmed ghost stays above %llu MiB for %.3g s%s\n",
                (double)interval_ms / 1000.0, (unsigned long long)(threshold_bytes / MIB), (double)for_ms / 1000.0,
                exec ? " (then run --exec)" : "");
        fflush(out);
}

/* "ghostvram watch: MSG" on io's err, MSG cut as cli_error cuts it (1023 bytes). */
static void watch_say(const struct watch_io *io, const char *fmt, va_list ap)
{
        char msg[1024];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        fprintf(io->err ? io->err : stderr, "ghostvram watch: %s\n", msg);
}

static void watch_say_f(const struct watch_io *io, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void watch_say_f(const struct watch_io *io, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        watch_say(io, fmt, ap);
        va_end(ap);
}

static void watch_emit(void *ctx, const struct watch_line *wl)
{
        const struct watch_io *io = ctx;
        watch_line_print(stdout, wl, io->json, wall_clock_now());
}

/* A problem of the hook's, in at most 511 bytes as before. */
static void watch_warn(void *ctx, const char *fmt, ...)
{
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        watch_say_f(ctx, "%s", msg);
}

static int watch_heal(void *ctx, unsigned index, struct buf *out)
{
        const struct watch_io *io = ctx;
        return watch_heal_spawn(&io->heal, index, out);
}

void watch_count_sample(struct metrics_counters *c, const struct sample *s)
{
        if (s->res) {
                if (s->full)
                        c->scans_full++;
                else
                        c->scans_light++;
        }
        c->driver_up = s->res && !(s->errors & SCAN_ERR_GPU) && metrics_driver_answered(s->res->facts->gpu);
        if (s->errors & SCAN_ERR_GPU)
                c->scan_errors[METRICS_SRC_GPU]++;
        if (s->errors & SCAN_ERR_HOST)
                c->scan_errors[METRICS_SRC_HOST]++;
}

void watch_sampled(void *ctx, const struct sample *s)
{
        struct watch_io *io = ctx;
        watch_count_sample(&io->counters, s);
        if (!io->textfile || !s->res || !s->published)
                return;
        struct metrics_input mi = { .res = s->res, .counters = &io->counters, .scan_duration_s = s->duration_s,
                                    .last_scan_time = s->finished };
        int r = metrics_write_textfile(io->textfile, &mi);
        if (r < 0)
                watch_say_f(io, "--textfile %s: %s", io->textfile, strerror(-r));
}

void watch_io_attach(struct watch_io *io, struct watch_opts *o)
{
        o->emit = watch_emit;
        o->warn = watch_warn;
        o->heal = watch_heal;
        o->sampled = watch_sampled;
        o->ctx = io;
}

/* The first lines of a text watch: the show's banner, then watch_banner_print. */
static void watch_started(void *ctx)
{
        const struct watch_io *io = ctx;
        if (io->show->json)
                return;
        show_banner(io->show);
        watch_banner_print(stdout, io->o->interval_ms, io->o->threshold_bytes, io->o->for_ms, io->o->exec != NULL);
}

void watch_io_show(struct watch_io *io, struct watch_opts *o, const struct show *s, const struct sources *src)
{
        io->json = s->json;
        io->show = s;
        io->o = o;
        io->heal = watch_heal_src_of(src);
        watch_io_attach(io, o);
        o->started = watch_started;
}
