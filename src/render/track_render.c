/* track_render: see track_render.h. */
#include "render/track_render.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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

/* s, at most max bytes (a fixed-size field), escaped for the terminal */
static void put_esc_n(FILE *out, const char *s, size_t max)
{
        struct buf b = BUF_INIT(0);
        esc_terminal(&b, s, strnlen(s, max));
        fputs(buf_str(&b), out);
        buf_free(&b);
}

static void put_esc(FILE *out, const char *s)
{
        put_esc_n(out, s, strlen(s));
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

json_t *track_report_json(char *const *cmd, const struct track_end *end, const char *dir,
                          const struct track_report_proc *rp, size_t n)
{
        json_t *doc = json_object();
        json_set(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_t *c = json_array();
        for (char *const *a = cmd; *a; a++)
                json_array_append_new(c, json_text(*a));
        json_set(doc, "command", json_string("track"));
        json_set(doc, "argv", c);
        json_set(doc, "exit_status", json_integer(end->status));
        json_set(doc, "forwarded_signal", end->signal ? json_string(track_stop_signal_name(end->signal)) : json_null());
        json_set(doc, "command_running", json_boolean(end->running));
        json_set(doc, "ledger_dir", json_text(dir));
        uint64_t leaked = 0, leaked_n = 0;
        json_t *pa = json_array();
        for (size_t i = 0; i < n; i++) {
                const struct track_report_proc *p = &rp[i];
                json_t *o = json_object();
                json_set(o, "pid", json_integer(p->l->hdr.pid));
                json_set(o, "ppid", json_integer(p->l->hdr.ppid));
                json_set(o, "comm", json_textn(p->l->hdr.comm, strnlen(p->l->hdr.comm, sizeof(p->l->hdr.comm))));
                json_set(o, "alive", json_boolean(p->alive));
                json_set(o, "file", json_text(p->file));
                json_set(o, "allocs", json_integer((json_int_t)p->l->allocs));
                json_set(o, "frees", json_integer((json_int_t)p->l->frees));
                json_set(o, "outstanding_bytes", json_integer((json_int_t)p->s.outstanding_bytes));
                json_set(o, "allocations", json_integer((json_int_t)p->s.allocations));
                json_set(o, "sites", track_sites_json(p->l, &p->s, TRACK_SITES_MAX));
                json_set(o, "skipped_bytes", json_integer((json_int_t)p->l->skipped_bytes));
                json_set(o, "torn_tail_bytes", json_integer((json_int_t)p->l->tail_bytes));
                json_array_append_new(pa, o);
                if (!p->alive) {
                        leaked += p->s.outstanding_bytes;
                        leaked_n += p->s.allocations;
                }
        }
        json_set(doc, "processes", pa);
        json_set(doc, "leaked_bytes", json_integer((json_int_t)leaked));
        json_set(doc, "leaked_allocations", json_integer((json_int_t)leaked_n));
        return doc;
}

void track_report_text(FILE *out, const struct track_end *end, const char *dir, const struct track_report_proc *rp,
                       size_t n)
{
        uint64_t leaked = 0, leaked_n = 0;
        unsigned running = 0;
        for (size_t i = 0; i < n; i++) {
                const struct track_report_proc *p = &rp[i];
                struct buf mib = BUF_INIT(0);
                fmt_mib(&mib, p->s.outstanding_bytes);
                fprintf(out, "PID %u (", p->l->hdr.pid);
                put_esc_n(out, p->l->hdr.comm, sizeof(p->l->hdr.comm));
                if (p->alive) {
                        running++;
                        fprintf(out, ") still runs: %s in %llu allocation%s so far (ledger %s/%s)\n", buf_str(&mib),
                                (unsigned long long)p->s.allocations, p->s.allocations == 1 ? "" : "s", dir, p->file);
                } else if (p->s.allocations) {
                        leaked += p->s.outstanding_bytes;
                        leaked_n += p->s.allocations;
                        fprintf(out, ") exited with %s in %llu allocation%s never freed:\n", buf_str(&mib),
                                (unsigned long long)p->s.allocations, p->s.allocations == 1 ? "" : "s");
                } else {
                        fprintf(out, ") freed all %llu allocation%s\n", (unsigned long long)p->l->allocs,
                                p->l->allocs == 1 ? "" : "s");
                }
                buf_free(&mib);
                for (size_t k = 0; !p->alive && k < p->s.n_sites; k++) {
                        struct track_summary one = p->s;
                        one.sites[0] = p->s.sites[k];
                        one.n_sites = 1;
                        fputs("    ", out);
                        track_sites_text(out, p->l, &one, 1, GVL_FRAMES);
                        fputc('\n', out);
                }
        }
        struct buf mib = BUF_INIT(0);
        fmt_mib(&mib, leaked);
        fprintf(out, "LEAK SUMMARY: %s (%llu bytes) leaked in %llu allocation%s by %zu tracked process%s",
                buf_str(&mib), (unsigned long long)leaked, (unsigned long long)leaked_n, leaked_n == 1 ? "" : "s", n,
                n == 1 ? "" : "es");
        if (running) {
                char *q = esc_shell_dup(dir);
                fprintf(out, "; %u still running (`ghostvram scan --ledger-dir %s` once they are gone)", running,
                        q ? q : dir);
                free(q);
        }
        if (end->running)
                fprintf(out, "; %s passed on to the command, which still runs %d s later (PID %d); exit status %d\n",
                        track_stop_signal_name(end->signal), TRACK_STOP_WAIT_MS / 1000, (int)end->child, end->status);
        else if (end->signal)
                fprintf(out, "; %s passed on to the command; command exit status %d\n", track_stop_signal_name(end->signal),
                        end->status);
        else
                fprintf(out, "; command exit status %d\n", end->status);
        buf_free(&mib);
}

/* --show FILE's document: a ledger's header, counts and outstanding allocations. */
json_t *track_ledger_json(const char *path, const struct track_ledger *l, const struct track_summary *s)
{
        json_t *o = json_object();
        json_set(o, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_set(o, "file", json_text(path));
        json_set(o, "pid", json_integer(l->hdr.pid));
        json_set(o, "ppid", json_integer(l->hdr.ppid));
        json_set(o, "start_ticks", json_integer((json_int_t)l->hdr.start_ticks));
        /* a 64-bit identifier: text, as JSON numbers past 2^53 lose digits in most readers */
        char session[24];
        snprintf(session, sizeof(session), "%016llx", (unsigned long long)l->hdr.session);
        json_set(o, "session", l->hdr.session ? json_string(session) : json_null());
        json_set(o, "comm", json_textn(l->hdr.comm, strnlen(l->hdr.comm, sizeof(l->hdr.comm))));
        json_set(o, "exe", json_textn(l->hdr.exe, strnlen(l->hdr.exe, sizeof(l->hdr.exe))));
        json_set(o, "records", json_integer((json_int_t)l->records));
        json_set(o, "skipped_bytes", json_integer((json_int_t)l->skipped_bytes));
        json_set(o, "torn_tail_bytes", json_integer((json_int_t)l->tail_bytes));
        json_set(o, "gave_up", json_boolean(l->gave_up));
        json_set(o, "allocs", json_integer((json_int_t)l->allocs));
        json_set(o, "frees", json_integer((json_int_t)l->frees));
        json_set(o, "unmatched_frees", json_integer((json_int_t)l->unmatched_frees));
        json_set(o, "execs", json_integer((json_int_t)l->execs));
        json_set(o, "modules", json_integer((json_int_t)l->n_modules));
        json_set(o, "outstanding_bytes", json_integer((json_int_t)s->outstanding_bytes));
        json_set(o, "allocations", json_integer((json_int_t)s->allocations));
        json_set(o, "sites", track_sites_json(l, s, TRACK_SITES_MAX));
        return o;
}

void track_report_print(FILE *out, bool json, char *const *cmd, const struct track_end *end, const char *dir,
                        const struct track_report_proc *rp, size_t n)
{
        if (!json) {
                track_report_text(out, end, dir, rp, n);
                return;
        }
        json_t *doc = track_report_json(cmd, end, dir, rp, n);
        char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_ENSURE_ASCII) : NULL;
        if (text)
                fprintf(out, "%s\n", text);
        free(text);
        json_decref(doc);
}

/* ---- the command's runs ----------------------------------------------------------------------- */

int track_show_print(const char *path, int (*print_json)(json_t *doc), void (*say)(const char *msg))
{
        struct track_show *sh = track_show_new();
        if (!sh)
                return -ENOMEM;
        char msg[PATH_MAX + 256];
        int r = track_show_load(sh, path);
        if (r == -EISDIR)
                snprintf(msg, sizeof(msg), "--show %s: a directory, not an allocation ledger (give one file of it)", path);
        else if (r < 0)
                snprintf(msg, sizeof(msg), "%s: %s", path,
                         r == -EBADMSG ? "not an allocation ledger (bad header)" : strerror(-r));
        else
                print_json(track_ledger_json(path, &sh->l, &sh->s));
        if (r < 0)
                say(msg);
        track_show_free(sh);
        return r < 0 ? -1 : 0;
}

void track_report_cb(void *ctx, FILE *out, char *const *cmd, const struct track_prep *prep,
                     const struct track_result *res)
{
        track_report_print(out, *(const bool *)ctx, cmd, &res->end, prep->dir, res->procs, res->n);
}
