#include "render/scan_render.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collect/gpu_json.h"
#include "collect/xid.h"
#include "config.h"
#include "util/json_util.h"
#include "render/metrics.h"
#include "render/proc_render.h"
#include "render/shm_render.h"
#include "render/snapshot.h"
#include "render/track_render.h"
#include "util/escape.h"
#include "util/i18n.h"

#define C_BOLD "\033[1m"
#define C_RED "\033[1;31m"
#define C_YEL "\033[33m"
#define C_GRN "\033[32m"
#define C_DIM "\033[2m"
#define C_OFF "\033[0m"

static const char *attribution_of(const struct gpu_ledger *l, const struct facts *f, pid_t pid,
                                  const struct attribution **ret)
{
        for (size_t a = 0; a < l->n_attr; a++)
                if (f->host->holders[l->attr[a].holder].pid == pid) {
                        if (ret)
                                *ret = &l->attr[a];
                        return l->attr[a].text;
                }
        return NULL;
}

static json_t *finding_json(const struct finding *fd)
{
        json_t *o = json_object();
        json_set(o, "code", json_string(fd->code));
        json_set(o, "confidence", json_string(confidence_name(fd->confidence)));
        json_set(o, "bytes", json_integer((json_int_t)fd->bytes));
        json_set(o, "summary", json_text(str_or_empty(fd->summary)));
        json_t *p = json_array();
        for (size_t i = 0; i < fd->n_pids; i++)
                json_array_append_new(p, json_integer(fd->pids[i]));
        json_set(o, "pids", p);
        json_t *e = json_array();
        for (size_t i = 0; i < fd->n_evidence; i++)
                json_array_append_new(e, json_text(fd->evidence[i]));
        json_set(o, "evidence", e);
        json_set(o, "next_step", json_text(str_or_empty(fd->next_step)));
        return o;
}

static json_t *process_json(const struct facts *f, const struct gpu_ledger *l, const struct owner *ow,
                            const struct host_proc *hp, const struct attribution *at, bool with_cmdline)
{
        json_t *o = json_object();
        json_set(o, "pid", json_integer(ow ? (json_int_t)ow->pid : (json_int_t)hp->pid));
        json_set(o, "nvml_listed", json_boolean(ow != NULL));
        json_set(o, "live_owner", json_boolean(ow && ow->cls == OWNER_LIVE));
        json_set(o, "owner_class", ow ? json_string(ow->cls == OWNER_LIVE      ? "live"
                                                    : ow->cls == OWNER_FOREIGN ? "foreign"
                                                    : ow->cls == OWNER_STALE   ? "stale"
                                                                               : "unknown")
                                      : json_null());
        json_set(o, "owner_status", ow ? json_text(ow->why) : json_null());
        if (at) {
                json_t *a = json_object();
                json_set(a, "link", json_string(link_name(at->link)));
                json_set(a, "to_pid", json_integer(at->to_pid));
                json_set(a, "text", json_text(at->text));
                json_set(a, "confidence", json_string(confidence_name(at->confidence)));
                json_set(a, "candidate", json_boolean(at->candidate));
                json_set(a, "tie", at->tie != JOB_TIE_NONE ? json_string(job_tie_name(at->tie)) : json_null());
                json_set(a, "tie_pid", at->tie != JOB_TIE_NONE ? json_integer(at->tie_pid) : json_null());
                const char *nd = NULL;
                json_set(a, "family", at->family ? json_integer(at->family) : json_null());
                json_set(a, "proof", json_boolean(at->proof));
                json_set(a, "default_target", json_boolean(ledger_default_target(f, at, &nd)));
                json_set(o, "attribution", a);
        } else {
                json_set(o, "attribution", json_null());
        }
        json_t *hj = hp ? host_proc_json(hp, with_cmdline) : NULL;
        static const char *const keys[] = { "devices", "via", "state", "ppid", "pgid", "sid", "user",
                                            "comm", "cmdline", "container" };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                json_t *v = hj ? json_object_get(hj, keys[i]) : NULL;
                json_set(o, keys[i], v ? json_incref(v) : json_null());
        }
        json_decref(hj);
        json_set(o, "used_bytes", ow && ow->used_known ? json_integer((json_int_t)ow->used_bytes) : json_null());
        /* MIG: the instance NVML listed the process in */
        json_set(o, "gpu_instance", ow && ow->gpu_instance != GPU_INSTANCE_NONE ? json_integer(ow->gpu_instance) : json_null());
        json_set(o, "compute_instance",
                 ow && ow->compute_instance != GPU_INSTANCE_NONE ? json_integer(ow->compute_instance) : json_null());
        (void)f;
        (void)l;
        return o;
}

static bool shown(const struct scan_result *r, const struct gpu_ledger *l);

/* Are attributions a and b of l one family's (a holder without a family is its own)? */
static bool same_family(const struct gpu_ledger *l, size_t a, size_t b)
{
        return a == b || (l->attr[a].family && l->attr[b].family == l->attr[a].family);
}

/* Is attribution a the first of its family on l? */
static bool family_first(const struct gpu_ledger *l, size_t a)
{
        for (size_t b = 0; b < a; b++)
                if (same_family(l, a, b))
                        return false;
        return true;
}

/* The description families attributed on this GPU: one entry a family, its members, and the
 * tie of its strongest member (a link by number before a member tied through it). */
static json_t *families_json(const struct facts *f, const struct gpu_ledger *l)
{
        json_t *arr = json_array();
        for (size_t a = 0; a < l->n_attr; a++) {
                const struct attribution *at = &l->attr[a];
                if (!family_first(l, a))
                        continue;
                const struct attribution *lead = at;
                json_t *members = json_array();
                bool all_default = true;
                enum confidence c = at->confidence;
                for (size_t b = a; b < l->n_attr; b++) {
                        const struct attribution *m = &l->attr[b];
                        if (!same_family(l, a, b))
                                continue;
                        const char *nd = NULL;
                        json_array_append_new(members, json_integer(f->host->holders[m->holder].pid));
                        all_default &= ledger_default_target(f, m, &nd);
                        if (lead->link == LINK_FAMILY && m->link != LINK_FAMILY)
                                lead = m;
                        if (m->confidence < c)
                                c = m->confidence;
                }
                json_t *o = json_object();
                json_set(o, "family", at->family ? json_integer(at->family) : json_null());
                json_set(o, "member_pids", members);
                json_set(o, "link", json_string(link_name(lead->link)));
                json_set(o, "to_pid", json_integer(lead->to_pid));
                json_set(o, "confidence", json_string(confidence_name(c)));
                json_set(o, "default_target", json_boolean(all_default));
                json_set(o, "text", json_text(lead->text));
                json_array_append_new(arr, o);
        }
        return arr;
}

/* MIG: the ledger of each MIG device (null parts where its memory is not known) */
static json_t *mig_ledger_json(const struct gpu_ledger *l)
{
        json_t *a = json_array();
        for (size_t m = 0; m < l->n_mig; m++) {
                const struct mig_ledger *ml = &l->mig[m];
                json_t *o = json_object();
                bool k = ml->memory_known;
                json_set(o, "gpu_instance", json_integer(ml->gpu_instance));
                json_set(o, "compute_instance", json_integer(ml->compute_instance));
                json_set(o, "total_bytes", k ? json_integer((json_int_t)ml->total) : json_null());
                json_set(o, "used_bytes", k ? json_integer((json_int_t)ml->used) : json_null());
                json_set(o, "listed_bytes", k ? json_integer((json_int_t)ml->listed) : json_null());
                json_set(o, "foreign_bytes", k ? json_integer((json_int_t)ml->foreign) : json_null());
                json_set(o, "ghost_bytes", k ? json_integer((json_int_t)ml->ghost) : json_null());
                json_set(o, "unattributed_bytes", k ? json_integer((json_int_t)ml->unattributed) : json_null());
                json_set(o, "freeing_bytes", k ? json_integer((json_int_t)ml->freeing_bytes) : json_null());
                json_array_append_new(a, o);
        }
        return a;
}

#define GPU_KERNEL_EVENTS_MAX 20

/* The latest NVIDIA kernel events of one GPU (at most GPU_KERNEL_EVENTS_MAX, oldest first). */
static size_t gpu_kernel_events(const struct facts *f, const struct gpu_info *g, const struct xid_event **out)
{
        size_t n = 0;
        for (size_t i = f->kernel.n; i-- > 0 && n < GPU_KERNEL_EVENTS_MAX;) {
                const struct xid_event *e = &f->kernel.ev[i];
                bool mine = f->kernel_this_host && e->gpu_index >= 0 ? (unsigned)e->gpu_index == g->index
                                                                      : e->pci_bus_id[0] && !strcmp(e->pci_bus_id, g->pci_bus_id);
                if (mine && e->kind != XID_KIND_SXID && e->kind != XID_KIND_OTHER && e->kind != XID_KIND_GPU_UUID)
                        out[n++] = e;
        }
        for (size_t i = 0; i < n / 2; i++) {
                const struct xid_event *t = out[i];
                out[i] = out[n - 1 - i];
                out[n - 1 - i] = t;
        }
        return n;
}

static json_t *gpu_kernel_events_json(const struct facts *f, const struct gpu_info *g)
{
        const struct xid_event *ev[GPU_KERNEL_EVENTS_MAX];
        size_t n = gpu_kernel_events(f, g, ev);
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append_new(a, xid_event_to_json(ev[i]));
        return a;
}

/* The Xid that pages (--xid-window), or null */
static json_t *recent_xid_json(const struct xid_recent *x)
{
        json_t *o = json_object();
        json_set(o, "kernel_event", xid_event_to_json(x->event));
        json_set(o, "severity", json_string(xid_severity_name(x->severity)));
        json_set(o, "action", json_string(xid_action_name(x->action)));
        json_set(o, "age_seconds", json_real(x->age_s));
        json_set(o, "summary", json_text(x->summary));
        json_set(o, "next_step", json_text(x->next_step));
        return o;
}

json_t *scan_json(const struct scan_result *r, bool with_cmdline)
{
        const struct facts *f = r->facts;
        json_t *doc = snapshot_json(f);
        json_t *gs = json_object_get(doc, "gpus");
        for (size_t i = 0; i < r->n_gpus; i++) {
                const struct gpu_ledger *l = &r->gpus[i];
                json_t *g = json_array_get(gs, i);
                json_t *m = json_object_get(g, "memory");
                json_set(m, "listed_bytes", l->inspected ? json_integer((json_int_t)l->listed) : json_null());
                json_set(m, "foreign_bytes", l->inspected ? json_integer((json_int_t)l->foreign) : json_null());
                json_set(m, "ghost_bytes", l->inspected ? json_integer((json_int_t)l->ghost) : json_null());
                json_set(m, "unattributed_bytes", l->inspected ? json_integer((json_int_t)l->unattributed) : json_null());
                json_set(m, "freeing_bytes", l->inspected ? json_integer((json_int_t)l->freeing_bytes) : json_null());
                json_set(m, "noise_floor_bytes", json_integer((json_int_t)l->noise_floor));
                json_set(g, "ghost_confirmed", json_boolean(l->ghost_confirmed));
                json_set(g, "mig_instances", mig_ledger_json(l));
                json_set(g, "verdict", json_string(l->n_findings ? l->findings[0].code : "unknown"));
                json_t *fa = json_array();
                for (size_t k = 0; k < l->n_findings; k++)
                        json_array_append_new(fa, finding_json(&l->findings[k]));
                json_set(g, "findings", fa);
                json_t *pa = json_array();
                for (size_t k = 0; k < l->n_owners; k++) {
                        const struct owner *ow = &l->owners[k];
                        const struct pid_fact *pf = facts_pid(f, ow->pid);
                        const struct host_proc *hp = pf && pf->present ? &pf->proc : NULL;
                        const struct attribution *at = NULL;
                        if (f->host)
                                attribution_of(l, f, (pid_t)ow->pid, &at);
                        json_array_append_new(pa, process_json(f, l, ow, hp, at, with_cmdline));
                }
                for (size_t a = 0; a < l->n_attr; a++) {
                        const struct host_proc *hp = &f->host->holders[l->attr[a].holder];
                        bool listed = false;
                        for (size_t k = 0; k < l->n_owners; k++)
                                listed |= (pid_t)l->owners[k].pid == hp->pid;
                        if (!listed)
                                json_array_append_new(pa, process_json(f, l, NULL, hp, &l->attr[a], with_cmdline));
                }
                json_set(g, "processes", pa);
                json_set(g, "families", families_json(f, l));
                json_set(g, "kernel_events", gpu_kernel_events_json(f, &f->gpu->gpus[i]));
                json_set(g, "recent_xid", l->xid_paging ? recent_xid_json(&l->xid) : json_null());
        }
        json_t *kj = json_object();
        json_set(kj, "read", json_boolean(f->kernel_read));
        json_set(kj, "source", f->kernel_read ? json_text(f->kernel_source) : json_null());
        json_set(kj, "error", f->kernel_error[0] ? json_text(f->kernel_error) : json_null());
        json_set(kj, "overruns", json_integer((json_int_t)f->kernel_overruns));
        json_set(kj, "event_count", json_integer((json_int_t)f->kernel.n));
        json_set(doc, "kernel", kj);
        for (size_t i = r->n_gpus; i-- > 0;)
                if (!shown(r, &r->gpus[i]))
                        json_array_remove(gs, i);
        json_set(doc, "full_visibility", json_boolean(r->full_visibility));
        json_set(doc, "exit_status", json_integer(scan_exit_status(r)));
        if (!with_cmdline) {
                size_t hi;
                json_t *h;
                json_array_foreach(json_object_get(doc, "holders"), hi, h)
                        json_object_set_new(h, "cmdline", json_null());
        }
        return doc;
}

static bool shown(const struct scan_result *r, const struct gpu_ledger *l)
{
        return r->only_gpu < 0 || (unsigned)r->only_gpu == l->index;
}

/* The worse condition wins: a GPU lost or not inspected (or no driver) is 3 even when another
 * GPU has a confirmed ghost (1) — a lost GPU must page, and a ghost must not hide it. */
int scan_exit_status(const struct scan_result *r)
{
        bool ghost = false, hard = !r->facts->gpu->driver_present, soft = false;
        for (size_t i = 0; i < r->n_gpus; i++) {
                const struct gpu_ledger *l = &r->gpus[i];
                if (!shown(r, l))
                        continue;
                ghost |= l->ghost_confirmed;
                /* a lost or uninspected GPU must page even beside a ghost; a GPU without a
                 * process list is unknown, which a confirmed ghost elsewhere outranks */
                hard |= !l->inspected || (l->n_findings && strcmp(l->findings[0].code, "gpu-lost") == 0);
                soft |= !l->procs_known || l->holders_unseen;
                /* a recent Xid pages even while NVML answers: a reboot's (79) as a lost GPU, a
                 * reset's (48, 95) as a finding */
                hard |= l->xid_paging && l->xid.severity >= XID_SEV_CRITICAL;
                ghost |= l->xid_paging;
        }
        return hard ? 3 : ghost ? 1 : soft ? 3 : 0;
}

static void put_esc(FILE *out, const char *s)
{
        struct buf b = BUF_INIT(0);
        if (s)
                esc_terminal(&b, s, strlen(s));
        fputs(buf_str(&b), out);
        buf_free(&b);
}

static void mib_str(char *out, size_t n, uint64_t bytes)
{
        struct buf b = BUF_INIT(0);
        fmt_mib(&b, bytes);
        snprintf(out, n, "%s", buf_str(&b));
        buf_free(&b);
}

/* "<indent>used U = listed L + foreign F + ghost G + unattributed N [+ freeing R]", in MiB, and a
 * newline: the freeing term only during a teardown (the bytes the verdict `freeing` names, never
 * counted as ghost); a ghost part that is not confirmed (below the floor, or seen once) says so,
 * beside a verdict that calls it no ghost. */
static void text_ledger_line(FILE *out, const char *indent, uint64_t used, uint64_t listed, uint64_t foreign,
                             uint64_t ghost, bool confirmed, uint64_t unattributed, uint64_t freeing)
{
        char u[32], li[32], fo[32], gh[32], un[32], fr[32];
        mib_str(u, sizeof(u), used);
        mib_str(li, sizeof(li), listed);
        mib_str(fo, sizeof(fo), foreign);
        mib_str(gh, sizeof(gh), ghost);
        mib_str(un, sizeof(un), unattributed);
        mib_str(fr, sizeof(fr), freeing);
        fprintf(out, _("%sused %s = listed %s + foreign %s + ghost %s%s + unattributed %s%s%s\n"), indent, u, li, fo, gh,
                ghost && !confirmed ? _(" (unconfirmed)") : "", un, freeing ? _(" + freeing ") : "", freeing ? fr : "");
}

/* "  next: " (bold on a terminal): the label of a next step */
static void put_next_label(FILE *out, bool color)
{
        fprintf(out, "  %s%s%s ", color ? C_BOLD : "", _("next:"), color ? C_OFF : "");
}

/* A finding's confidence in a sentence (confidence_name is the code JSON carries). */
static const char *confidence_word(enum confidence c)
{
        return c == CONF_HIGH ? _("high") : c == CONF_MEDIUM ? _("medium") : _("low");
}

static const char *verdict_color(const char *code)
{
        enum verdict_tone t = verdict_tone(code);
        return t == TONE_CALM ? C_GRN : t == TONE_DOUBT ? C_YEL : C_RED;
}

static void text_holder_line(FILE *out, const struct host_proc *hp, const char *why, bool color)
{
        struct buf b = BUF_INIT(0);
        buf_puts(&b, "    ");
        host_proc_summary_text(&b, hp, 60);
        fputs(buf_str(&b), out);
        if (why) {
                fprintf(out, "  %s— ", color ? C_BOLD : "");
                put_esc(out, why);
                fputs(color ? C_OFF : "", out);
        }
        buf_reset(&b);
        buf_puts(&b, "\n        ");
        host_proc_detail_text(&b, hp);
        fprintf(out, "%s\n", buf_str(&b));
        buf_free(&b);
}

/* The holders of a GPU's ghost, a description family at a time: "3 processes share an open
 * file description (family 2), tied to dead PID N by ...". A family of one is its line alone. */
static void text_families(FILE *out, const struct facts *f, const struct gpu_ledger *l, bool color)
{
        fprintf(out, "%s", _("  held by:\n"));
        for (size_t a = 0; a < l->n_attr; a++) {
                const struct attribution *at = &l->attr[a];
                if (!family_first(l, a))
                        continue;
                size_t n = 0;
                for (size_t b = a; b < l->n_attr; b++)
                        n += same_family(l, a, b);
                if (n > 1)
                        fprintf(out, _("    %zu processes share an open file description (family %u) that dead PID %d's "
                                       "memory can live on:\n"), n, at->family, (int)at->to_pid);
                for (size_t b = a; b < l->n_attr; b++)
                        if (same_family(l, a, b))
                                text_holder_line(out, &f->host->holders[l->attr[b].holder], l->attr[b].text, color);
        }
}

static bool holder_attributed(const struct scan_result *r, pid_t pid)
{
        for (size_t g = 0; g < r->n_gpus; g++)
                if (attribution_of(&r->gpus[g], r->facts, pid, NULL))
                        return true;
        return false;
}

/* The driver did not answer at all: a call stuck in it (holding its lock) holds up every other
 * caller, so the processes using it now are the leads — those in D state first, the likely
 * stuck ones. */
static void text_driver_hangs(FILE *out, const struct host_report *h, bool color, bool verbose)
{
        if (!h)
                return;
        size_t n_d = 0, shown = 0, limit = verbose ? SIZE_MAX : 10;
        for (size_t i = 0; i < h->n_holders; i++)
                n_d += h->holders[i].state == 'D';
        if (h->n_holders && n_d)
                fprintf(out, "%s", _("\nA task stuck in the driver (holding its lock) holds up every other caller. Processes "
                                     "using the driver now (in D state first: the likely stuck ones):\n"));
        else if (h->n_holders)
                fprintf(out, "%s", _("\nA task stuck in the driver (holding its lock) holds up every other caller. Processes "
                                     "using the driver now:\n"));
        else if (h->euid != 0)
                fprintf(out, "%s", _("\nNo process using the driver can be seen as this user (other users' descriptors are "
                                     "not readable): `sudo ghostvram scan` lists them, the stuck one among them.\n"));
        else
                fprintf(out, "%s", _("\nNo process holds an NVIDIA device file now.\n"));
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < h->n_holders && shown < limit; i++) {
                        const struct host_proc *hp = &h->holders[i];
                        if ((hp->state == 'D') != (pass == 0))
                                continue;
                        char why[96];
                        if (hp->wchan[0])
                                snprintf(why, sizeof(why), _("in D state, waiting in %.63s"), hp->wchan);
                        else
                                snprintf(why, sizeof(why), "%s", _("in D state"));
                        text_holder_line(out, hp, hp->state == 'D' ? why : NULL, color);
                        shown++;
                }
        if (shown < h->n_holders)
                fprintf(out, _("    and %zu more (--verbose or --json lists them)\n"), h->n_holders - shown);
        put_next_label(out, color);
        fprintf(out, _("%s`ghostvram xid` for the driver's errors; a task stuck in the driver cannot be "
                       "killed: when it stays, reset the GPU (`nvidia-smi -r`) or reboot\n"),
                n_d ? _("`sudo cat /proc/PID/stack` for each task in D state (where it waits); ") : "");
}

void scan_text(FILE *out, const struct scan_result *r, bool color, bool verbose)
{
        scan_text_hooked(out, r, color, verbose, NULL, NULL);
}

/* The driver did not answer or is not there: what it said, and what can be done. */
static void text_no_driver(FILE *out, const struct facts *f, bool color, bool verbose)
{
        const struct gpu_report *gr = f->gpu;
        fputs(_("NVIDIA driver: "), out);
        put_esc(out, gr->error[0] ? gr->error : _("not available"));
        fputc('\n', out);
        if (gr->timed_out) {
                text_driver_hangs(out, f->host, color, verbose);
                text_limits(out, f); /* what the list above could not see */
        } else if (!f->from_bundle && (!gr->library_found || gr->module_not_loaded)) {
                /* nothing to inspect here: a first try on a laptop or a CI runner */
                put_next_label(out, color);
                fprintf(out, "%s", _("without a GPU, `ghostvram demo` shows ghostvram at work on a simulated host "
                                     "(`ghostvram sim init DIR` builds one of your own)\n"));
        }
}

/* An inspected GPU's account: its ledger line, the driver's reservation and each MIG device's. */
static void text_account(FILE *out, const struct gpu_ledger *l)
{
        char rs[32], tot[32];
        text_ledger_line(out, "  ", l->used, l->listed, l->foreign, l->ghost, l->ghost_confirmed, l->unattributed,
                         l->freeing_bytes);
        mib_str(rs, sizeof(rs), l->reserved);
        mib_str(tot, sizeof(tot), l->total);
        if (l->reserved_known)
                fprintf(out, _("  (driver reservation %s apart; total %s)\n"), rs, tot);
        else
                fprintf(out, _("  (old driver: used includes the driver's reservation; total %s)\n"), tot);
        for (size_t m = 0; m < l->n_mig; m++) {
                const struct mig_ledger *ml = &l->mig[m];
                if (!ml->memory_known)
                        continue;
                mib_str(tot, sizeof(tot), ml->total);
                fprintf(out, _("    MIG GPU instance %u (compute instance %u, %s): "), ml->gpu_instance,
                        ml->compute_instance, tot);
                text_ledger_line(out, "", ml->used, ml->listed, ml->foreign, ml->ghost, l->ghost_confirmed, ml->unattributed,
                                 ml->freeing_bytes);
        }
}

/* The processes NVML lists (the live ones only with verbose). */
static void text_owners(FILE *out, const struct gpu_ledger *l, bool verbose)
{
        for (size_t k = 0; k < l->n_owners; k++) {
                const struct owner *ow = &l->owners[k];
                if (ow->cls == OWNER_LIVE && !verbose)
                        continue;
                char b[32];
                if (ow->used_known)
                        mib_str(b, sizeof(b), ow->used_bytes);
                else
                        snprintf(b, sizeof(b), "%s", _("bytes n/a"));
                if (ow->gpu_instance != GPU_INSTANCE_NONE)
                        fprintf(out, _("  NVML lists PID %u (%s, MIG GPU instance %u, compute instance %u): %s\n"),
                                ow->pid, b, ow->gpu_instance, ow->compute_instance, str_or_empty(ow->why));
                else
                        fprintf(out, _("  NVML lists PID %u (%s): %s\n"), ow->pid, b, str_or_empty(ow->why));
        }
}

/* One kernel event: "    TIME Xid N TITLE (pid P NAME)". */
static void text_kernel_event(FILE *out, const struct xid_event *e)
{
        struct xid_assessment as;
        xid_event_assess(e, &as);
        char when[40] = "";
        if (e->time_known)
                xid_format_rfc3339(e->time, when, sizeof(when));
        fprintf(out, "    %s ", when[0] ? when : _("(time unknown)"));
        if (e->xid != XID_NONE)
                fprintf(out, "Xid %d ", e->xid);
        put_esc(out, as.title ? as.title : xid_kind_name(e->kind));
        if (e->pid_known) {
                fprintf(out, " (pid %u", e->pid);
                if (e->process_name[0]) {
                        fputc(' ', out);
                        put_esc(out, e->process_name);
                }
                fputc(')', out);
        }
        fputc('\n', out);
}

/* The GPU's recent kernel events: the last 3, or all with verbose. */
static void text_kernel_events(FILE *out, const struct facts *f, const struct gpu_info *g, bool verbose)
{
        const struct xid_event *ev[GPU_KERNEL_EVENTS_MAX];
        size_t nev = gpu_kernel_events(f, g, ev);
        size_t first = nev > 3 && !verbose ? nev - 3 : 0;
        if (nev)
                fprintf(out, P_("  kernel: %zu recent NVIDIA event%s\n", "  kernel: %zu recent NVIDIA events%s\n", nev), nev,
                        first ? _(" (the last 3; --verbose for more, `ghostvram xid --gpu N` for all)") : "");
        for (size_t k = first; k < nev; k++)
                text_kernel_event(out, ev[k]);
}

/* The findings: the first one's evidence and next step, the others as "also" (their evidence
 * and next step too with verbose). */
static void text_findings(FILE *out, const struct gpu_ledger *l, bool color, bool verbose)
{
        for (size_t k = 0; k < l->n_findings; k++) {
                const struct finding *fd = &l->findings[k];
                if (k > 0) {
                        fprintf(out, _("  also %s: "), fd->code);
                        put_esc(out, fd->summary);
                        fprintf(out, " [%s]\n", confidence_word(fd->confidence));
                }
                if (strcmp(fd->code, "ok") == 0)
                        continue;
                if (k == 0 || verbose)
                        for (size_t e = 0; e < fd->n_evidence; e++) {
                                fputs("    · ", out);
                                put_esc(out, fd->evidence[e]);
                                fputc('\n', out);
                        }
                if (k == 0 || verbose) {
                        put_next_label(out, color);
                        put_esc(out, fd->next_step);
                        fputc('\n', out);
                }
        }
}

/* A recent Xid that pages, and its next step. */
static void text_xid_paging(FILE *out, const struct gpu_ledger *l, bool color)
{
        fprintf(out, "  %s", color ? C_BOLD : "");
        fprintf(out, _("recent %s:"), xid_severity_name(l->xid.severity));
        fprintf(out, "%s ", color ? C_OFF : "");
        fprintf(out, _("%s: it pages (--xid-window)\n"), str_or_empty(l->xid.summary));
        put_next_label(out, color);
        fprintf(out, "%s\n", str_or_empty(l->xid.next_step));
}

/* One GPU: its header and verdict, the account, the listed processes, what the hook adds, the
 * holders, the kernel's events, the findings and a paging Xid. */
static void text_gpu(FILE *out, const struct scan_result *r, size_t i, bool color, bool verbose, scan_gpu_text_hook hook,
                     const void *ctx)
{
        const struct facts *f = r->facts;
        const struct gpu_ledger *l = &r->gpus[i];
        const struct gpu_info *g = &f->gpu->gpus[i];
        const struct finding *v = l->n_findings ? &l->findings[0] : NULL;
        text_gpu_header(out, g, color);
        if (v) {
                fprintf(out, "  %s%s%s  ", color ? verdict_color(v->code) : "", v->code, color ? C_OFF : "");
                put_esc(out, v->summary);
                fprintf(out, _("  [%s confidence]\n"), confidence_word(v->confidence));
        }
        if (l->inspected)
                text_account(out, l);
        text_owners(out, l, verbose);
        if (hook)
                hook(out, l->index, ctx);
        if (l->n_attr)
                text_families(out, f, l, color);
        text_kernel_events(out, f, g, verbose);
        text_findings(out, l, color, verbose);
        if (l->xid_paging)
                text_xid_paging(out, l, color);
}

/* The holders no ghost is linked to: listed with verbose (and how holders were found), else
 * counted. */
static void text_other_holders(FILE *out, const struct scan_result *r, bool color, bool verbose)
{
        const struct facts *f = r->facts;
        size_t other = 0;
        for (size_t i = 0; f->host && i < f->host->n_holders; i++)
                other += !holder_attributed(r, f->host->holders[i].pid);
        if (verbose && f->host && f->host->holder_source == HOST_SOURCE_OWNERS) {
                fprintf(out, "%s", _("\nHolders: not walked (the listed owners explain every GPU; only their descriptors were read).\n"));
        } else if (verbose && f->host) {
                fprintf(out, _("\nHolders found by %s%s%s.\n"), host_holder_source_name(f->host->holder_source),
                        !str_empty(f->host->bpf_error) ? _("; BPF iterators not used: ") : "", str_or_empty(f->host->bpf_error));
                fprintf(out, "%s", _("\nOther holders of NVIDIA device nodes (not linked to a ghost; never counted):\n"));
                for (size_t i = 0; i < f->host->n_holders; i++)
                        if (!holder_attributed(r, f->host->holders[i].pid))
                                text_holder_line(out, &f->host->holders[i], NULL, color);
                if (!other)
                        fprintf(out, "%s", _("    none\n"));
        } else {
                if (other)
                        fprintf(out, P_("\n%zu other process holds device nodes without a link to a ghost (--verbose lists them).\n",
                                        "\n%zu other processes hold device nodes without a link to a ghost (--verbose lists them).\n",
                                        other),
                                other);

        }
}

void scan_text_hooked(FILE *out, const struct scan_result *r, bool color, bool verbose, scan_gpu_text_hook hook,
                      const void *ctx)
{
        const struct facts *f = r->facts;
        if (!f->gpu->driver_present) {
                text_no_driver(out, f, color, verbose);
                return;
        }
        for (size_t i = 0; i < r->n_gpus; i++) {
                if (!shown(r, &r->gpus[i]))
                        continue;
                if (i && r->only_gpu < 0)
                        fputc('\n', out);
                text_gpu(out, r, i, color, verbose, hook, ctx);
        }
        text_other_holders(out, r, color, verbose);
        text_limits(out, f);
}

json_t *scan_output_json(const struct scan_result *r, const struct track_scan *ts, const struct shm_report *shm)
{
        json_t *doc = scan_json(r, true);
        if (ts)
                track_scan_attach_json(doc, ts);
        if (doc && shm)
                json_object_set_new(doc, "host_shared_memory", shm_json(shm));
        return doc;
}

int scan_output_text(FILE *out, const struct scan_result *r, const struct track_scan *ts,
                     const struct shm_report *shm, bool color, bool verbose)
{
        scan_text_hooked(out, r, color, verbose, ts ? track_scan_text_hook : NULL, ts);
        return shm_note_text(out, shm, color) < 0 ? -ENOMEM : 0;
}

int scan_answer(const struct show *s, const struct scan_once *run, const struct scan_beside *b, const char *textfile,
                void (*say)(const char *msg))
{
        int r = 0;
        if (s->json) {
                s->print_json(scan_output_json(run->res, b->ts, b->shm));
        } else {
                show_banner(s);
                if (scan_output_text(stdout, run->res, b->ts, b->shm, s->color, s->verbose) < 0) {
                        say("out of memory");
                        r = -1;
                }
        }
        if (textfile) {
                struct metrics_input mi = { .res = run->res, .scan_duration_s = run->duration_s,
                                            .last_scan_time = run->res->facts->gpu->sample_time };
                int w = metrics_write_textfile(textfile, &mi);
                if (w < 0) {
                        char msg[4200];
                        snprintf(msg, sizeof(msg), _("--textfile %s: cannot write ghostvram.prom: %s"), textfile,
                                 strerror(-w));
                        say(msg);
                        r = -1;
                }
        }
        return r;
}
