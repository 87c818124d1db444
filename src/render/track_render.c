/* track_render: see track_render.h. */
#include "render/track_render.h"

#include <string.h>

#include "util/json_util.h"
#include "render/proc_render.h"
#include "util/buf.h"
#include "util/escape.h"

json_t *track_sites_json(const struct track_ledger *l, const struct track_summary *s, size_t max)
{
        json_t *a = json_array();
        for (size_t i = 0; i < s->n_sites && i < max; i++) {
                const struct track_site *site = &s->sites[i];
                json_t *o = json_object();
                json_set(o, "bytes", json_integer((json_int_t)site->bytes));
                json_set(o, "allocations", json_integer((json_int_t)site->count));
                json_set(o, "api", json_string(track_api_name(site->api)));
                json_set(o, "via", json_string(site->procaddr ? "cuGetProcAddress" : "symbol"));
                json_t *fr = json_array();
                for (unsigned k = 0; k < site->nframes; k++) {
                        char name[128];
                        track_frame_name(l, site->frames[k], name, sizeof(name));
                        json_array_append_new(fr, json_text(name));
                }
                json_set(o, "frames", fr);
                /* the immediate caller, symbolised now (the ledger keeps addresses only) */
                if (site->nframes) {
                        char fn[256];
                        track_frame_symbol(l, site->frames[0], fn, sizeof(fn));
                        json_set(o, "function", json_text(fn));
                }
                json_array_append_new(a, o);
        }
        return a;
}

static void put_mib(FILE *out, uint64_t bytes)
{
        struct buf b = BUF_INIT(0);
        fmt_mib(&b, bytes);
        fputs(buf_str(&b), out);
        buf_free(&b);
}

static void put_esc(FILE *out, const char *s)
{
        struct buf b = BUF_INIT(0);
        esc_terminal(&b, s, strlen(s));
        fputs(buf_str(&b), out);
        buf_free(&b);
}

void track_sites_text(FILE *out, const struct track_ledger *l, const struct track_summary *s, size_t max,
                      unsigned depth)
{
        for (size_t i = 0; i < s->n_sites && i < max; i++) {
                const struct track_site *site = &s->sites[i];
                if (i)
                        fputs("; ", out);
                for (unsigned k = 0; k < site->nframes && k < depth; k++) {
                        char name[256];
                        if (k == 0)
                                track_frame_symbol(l, site->frames[k], name, sizeof(name));
                        else
                                track_frame_name(l, site->frames[k], name, sizeof(name));
                        if (k)
                                fputs(" <- ", out);
                        put_esc(out, name);
                }
                if (!site->nframes)
                        fputs("(no frames)", out);
                fputs(" (", out);
                put_mib(out, site->bytes);
                fprintf(out, " in %llu, %s%s)", (unsigned long long)site->count, track_api_name(site->api),
                        site->procaddr ? " via cuGetProcAddress" : "");
        }
        if (s->n_sites > max)
                fprintf(out, "; %zu more site%s", s->n_sites - max, s->n_sites - max == 1 ? "" : "s");
}

static const struct track_scan_entry *entry_for(const struct track_scan *ts, unsigned gpu_index)
{
        for (size_t i = 0; ts && i < ts->n; i++)
                if (ts->e[i].gpu_index == gpu_index && ts->e[i].ledger)
                        return &ts->e[i];
        return NULL;
}

json_t *track_scan_gpu_json(const struct track_scan *ts, unsigned gpu_index)
{
        const struct track_scan_entry *e = entry_for(ts, gpu_index);
        if (!e)
                return NULL;
        json_t *o = json_object();
        json_set(o, "owner_pid", json_integer(e->owner_pid));
        json_set(o, "outstanding_bytes", json_integer((json_int_t)e->summary.outstanding_bytes));
        json_set(o, "allocations", json_integer((json_int_t)e->summary.allocations));
        json_set(o, "top_sites", track_sites_json(e->ledger, &e->summary, TRACK_TOP_SITES));
        json_set(o, "file", json_text(e->file));
        json_set(o, "comm", json_textn(e->ledger->hdr.comm, strnlen(e->ledger->hdr.comm, sizeof(e->ledger->hdr.comm))));
        json_set_time(o, "last_record_time", (double)e->ledger->last_time_ns / 1e9, e->ledger->last_time_ns > 0);
        json_set(o, "skipped_bytes", json_integer((json_int_t)e->ledger->skipped_bytes));
        json_set(o, "torn_tail_bytes", json_integer((json_int_t)e->ledger->tail_bytes));
        return o;
}

void track_scan_attach_json(json_t *doc, const struct track_scan *ts)
{
        json_t *gs = json_object_get(doc, "gpus");
        size_t i;
        json_t *g;
        json_set(doc, "ledger_dir", json_text(ts->dir));
        json_set(doc, "ledger_error", ts->error[0] ? json_text(ts->error) : json_null());
        json_array_foreach(gs, i, g)
        {
                json_int_t idx = json_integer_value(json_object_get(g, "index"));
                json_t *lj = idx >= 0 ? track_scan_gpu_json(ts, (unsigned)idx) : NULL;
                json_set(g, "ledger", lj ? lj : json_null());
        }
}

void track_scan_gpu_text(FILE *out, const struct track_scan *ts, unsigned gpu_index)
{
        for (size_t i = 0; ts && i < ts->n; i++) {
                const struct track_scan_entry *e = &ts->e[i];
                if (e->gpu_index != gpu_index || !e->ledger)
                        continue;
                fprintf(out, "  ledger: dead PID %d still had ", (int)e->owner_pid);
                put_mib(out, e->summary.outstanding_bytes);
                fprintf(out, " in %llu allocation%s", (unsigned long long)e->summary.allocations,
                        e->summary.allocations == 1 ? "" : "s");
                if (e->summary.n_sites) {
                        fputs("; top sites: ", out);
                        track_sites_text(out, e->ledger, &e->summary, 3, 2);
                }
                fputc('\n', out);
        }
}

void track_scan_text_hook(FILE *out, unsigned gpu_index, const void *ctx)
{
        track_scan_gpu_text(out, ctx, gpu_index);
}
