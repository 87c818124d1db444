#include "render/live_view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/gpu_json.h"
#include "collect/xid.h"
#include "model/daemons.h"
#include "render/proc_render.h"
#include "run/scan_run.h"
#include "util/buf.h"
#include "util/i18n.h"

/* codes (the page's CSS classes, data-kind); a reader sees _(name): marked for translation */
static const char *const kind_names[LIVE_KINDS] = { N_("reserved"), N_("listed"),       N_("foreign"),
                                                    N_("ghost"),    N_("unattributed"), N_("freeing") };

const char *live_kind_name(enum live_kind k)
{
        return (unsigned)k < LIVE_KINDS ? kind_names[k] : "?";
}

char live_kind_letter(enum live_kind k)
{
        return (unsigned)k < LIVE_KINDS ? "RLFGU~"[k] : '?';
}

/* Copy src into dst[n], cut if longer (the views show the start of long texts). */
static void copy(char *dst, size_t n, const char *src)
{
        size_t i = 0;
        for (; src && i + 1 < n && src[i]; i++)
                dst[i] = src[i];
        dst[i] = '\0';
}

_Static_assert(LIVE_STATUS_MAX > sizeof(((struct gpu_info *)0)->status_message) + 64 &&
                       LIVE_STATUS_MAX > sizeof(((struct gpu_report *)0)->error) + 64 &&
                       LIVE_STATUS_MAX > sizeof(((struct facts *)0)->kernel_error) + 64,
               "a sampler's status fits LIVE_STATUS_MAX whole");

void live_sample_status(const struct sample *s, char *out, size_t outlen)
{
        out[0] = '\0';
        if (s->errors == SCAN_ERR_KERNEL) {
                snprintf(out, outlen, "%s", s->kernel_error);
                return;
        }
        if (!s->errors)
                return;
        const struct gpu_report *g = s->res ? s->res->facts->gpu : NULL;
        if (g && g->timed_out)
                gpu_report_timeout_text(g, out, outlen);
        else if (g && !g->driver_present)
                snprintf(out, outlen, _("no NVIDIA driver: %s"), g->error[0] ? g->error : _("not available"));
        else
                snprintf(out, outlen, "%s", s->why);
}

bool live_verdict_alarming(const char *code)
{
        return verdict_tone(code) != TONE_CALM;
}

/* ---- the view ------------------------------------------------------------------------------ */

static void gpu_of(struct live_gpu *o, const struct gpu_info *g, const struct gpu_ledger *l)
{
        o->index = g->index;
        copy(o->name, sizeof(o->name), g->name);
        copy(o->uuid, sizeof(o->uuid), g->uuid);
        copy(o->bus, sizeof(o->bus), g->pci_bus_id);
        o->inspected = l->inspected;
        o->reserved_known = l->reserved_known;
        o->total = l->total;
        o->used = l->used;
        o->kind[LIVE_RESERVED] = l->reserved_known ? l->reserved : 0;
        o->kind[LIVE_LISTED] = l->listed;
        o->kind[LIVE_FOREIGN] = l->foreign;
        o->kind[LIVE_GHOST] = l->ghost;
        o->kind[LIVE_UNATTRIBUTED] = l->unattributed;
        o->kind[LIVE_FREEING] = l->freeing_bytes;
        o->ghost_confirmed = l->ghost_confirmed;
        const struct finding *v = l->n_findings ? &l->findings[0] : NULL;
        copy(o->verdict, sizeof(o->verdict), v ? v->code : "unknown");
        copy(o->confidence, sizeof(o->confidence), v ? confidence_name(v->confidence) : "");
        if (v) {
                str_set(&o->summary, v->summary);
                for (size_t e = 0; e < v->n_evidence && e < LEDGER_MAX_EVIDENCE; e++)
                        str_set(&o->evidence[e], v->evidence[e]);
                o->n_evidence = v->n_evidence < LEDGER_MAX_EVIDENCE ? v->n_evidence : LEDGER_MAX_EVIDENCE;
                str_set(&o->next_step, v->next_step);
        }
        if (g->status != GPU_OK)
                str_set(&o->status, g->status_message[0] ? g->status_message : gpu_status_name(g->status));
        if (g->tel.queried)
                o->tel = g->tel;
        else
                gpu_telemetry_unknown(&o->tel);
        o->health_queried = g->health.queried;
        o->ecc_uncorrected = g->health.queried ? g->health.ecc_uncorrected : -1;
        o->remap_pending = g->health.queried ? g->health.remap_pending : -1;
        o->remap_failed = g->health.queried ? g->health.remap_failed : -1;
        o->retired_pending = g->health.queried ? g->health.retired_pending : -1;
        o->mig_instances = g->mig_mode == 1 ? (unsigned)g->n_mig : 0;
}

/* A row's share of its GPU from the driver's per-process samples (NVML's PID, as the row's). */
static void row_util(struct live_row *w, const struct facts *f)
{
        w->sm_util = w->mem_util = -1;
        for (size_t g = 0; w->gpu >= 0 && g < f->gpu->n_gpus; g++) {
                const struct gpu_info *gi = &f->gpu->gpus[g];
                if ((int)gi->index != w->gpu || !gi->tel.queried || !gi->tel.procs_known)
                        continue;
                w->sm_util = w->mem_util = 0; /* known: a process with no sample ran nothing */
                for (size_t k = 0; k < gi->tel.n_procs; k++)
                        if ((pid_t)gi->tel.procs[k].pid == w->pid) {
                                w->sm_util = (int)gi->tel.procs[k].sm;
                                w->mem_util = (int)gi->tel.procs[k].mem;
                        }
        }
}

/* A listed owner's MIG instance and MPS client mark, from NVML's record. */
static void row_listing(struct live_row *w, const struct gpu_info *gi)
{
        for (size_t k = 0; gi && k < gi->n_procs; k++)
                if ((pid_t)gi->procs[k].pid == w->pid) {
                        w->mig_instance = gi->procs[k].gpu_instance;
                        w->mps |= (gi->procs[k].kinds & GPU_PROC_MPS) != 0;
                }
}

/* The facts of a process into a row (the role and link are the caller's). */
static int row_proc(struct live_row *w, const struct host_proc *hp, const struct scan_result *r, bool with_cmdline)
{
        w->pid = hp->pid;
        w->state = hp->state;
        w->family = hp->family;
        copy(w->user, sizeof(w->user), hp->user);
        copy(w->comm, sizeof(w->comm), hp->comm);
        w->start_time = hp->start_time;
        w->start_ticks = hp->start_ticks;
        w->ppid = hp->ppid;
        w->pgid = hp->pgid;
        w->cpu_ticks = hp->cpu_ticks;
        w->cpu_known = true;
        w->rss_known = hp->rss_known;
        w->rss_bytes = hp->rss_pages * (uint64_t)sysconf(_SC_PAGESIZE);
        if (with_cmdline && hp->cmdline) {
                w->cmdline = strdup(hp->cmdline);
                if (!w->cmdline)
                        return -ENOMEM;
        }
        struct buf b = BUF_INIT(4096);
        host_proc_detail_text(&b, hp);
        str_set(&w->detail, buf_str(&b));
        buf_free(&b);
        /* the GPUs whose nodes it holds */
        size_t at = 0;
        for (size_t g = 0; g < r->facts->gpu->n_gpus && at + 12 < sizeof(w->gpus); g++) {
                bool exact = false;
                const struct gpu_info *gi = &r->facts->gpu->gpus[g];
                if (ledger_holds_gpu_node(hp, gi, &exact) && exact)
                        at += (size_t)snprintf(w->gpus + at, sizeof(w->gpus) - at, "%s%u", at ? "," : "", gi->index);
        }
        return 0;
}

static struct live_row *row_new(struct live_view *v)
{
        if (v->n_rows == LIVE_MAX_ROWS)
                return NULL;
        struct live_row *w = &v->rows[v->n_rows++];
        memset(w, 0, sizeof(*w));
        w->gpu = -1;
        w->listed_bytes = -1;
        w->state = '?';
        w->sm_util = w->mem_util = -1;
        w->mig_instance = GPU_INSTANCE_NONE;
        w->cpu_pct = -1;
        return w;
}

static const char *owner_role(enum owner_class c)
{
        switch (c) {
        case OWNER_LIVE:
                return _("owner");
        case OWNER_FOREIGN:
                return _("owner, other namespace");
        case OWNER_STALE:
                return _("dead owner");
        default:
                return _("owner, not visible");
        }
}

static bool attributed_anywhere(const struct scan_result *r, pid_t pid)
{
        for (size_t g = 0; g < r->n_gpus; g++)
                for (size_t a = 0; a < r->gpus[g].n_attr; a++)
                        if (r->facts->host->holders[r->gpus[g].attr[a].holder].pid == pid)
                                return true;
        return false;
}

static int rows_of_gpu(struct live_view *v, const struct scan_result *r, const struct gpu_ledger *l, bool with_cmdline)
{
        const struct facts *f = r->facts;
        for (size_t k = 0; k < l->n_owners; k++) {
                const struct owner *ow = &l->owners[k];
                struct live_row *w = row_new(v);
                if (!w)
                        return 0;
                const struct pid_fact *pf = facts_pid(f, ow->pid);
                if (pf && pf->present && row_proc(w, &pf->proc, r, with_cmdline) < 0)
                        return -ENOMEM;
                w->pid = (pid_t)ow->pid;
                w->gpu = (int)l->index;
                w->listed_bytes = ow->used_known ? (int64_t)ow->used_bytes : -1;
                for (size_t g = 0; g < f->gpu->n_gpus; g++)
                        if (f->gpu->gpus[g].index == l->index)
                                row_listing(w, &f->gpu->gpus[g]);
                if (w->mps && ow->cls == OWNER_LIVE)
                        str_set(&w->role, _("owner, MPS client"));
                else
                        str_set(&w->role, owner_role(ow->cls));
                str_set(&w->link, ow->why);
                w->ghost_holder = false;
        }
        for (size_t a = 0; f->host && a < l->n_attr; a++) {
                const struct attribution *at = &l->attr[a];
                const struct host_proc *hp = &f->host->holders[at->holder];
                bool listed = false;
                for (size_t k = 0; k < l->n_owners; k++)
                        listed |= (pid_t)l->owners[k].pid == hp->pid;
                struct live_row *w = NULL;
                for (size_t i = 0; listed && i < v->n_rows; i++)
                        if (v->rows[i].pid == hp->pid && v->rows[i].gpu == (int)l->index)
                                w = &v->rows[i];
                if (!w) {
                        w = row_new(v);
                        if (!w)
                                return 0;
                        if (row_proc(w, hp, r, with_cmdline) < 0)
                                return -ENOMEM;
                        w->gpu = (int)l->index;
                }
                /* scan's link and confidence, never a stronger word */
                if (at->link == LINK_LEADER_GONE)
                        str_setf(&w->role, _("holder, leader %d gone"), (int)at->to_pid);
                else if (at->link == LINK_ELIMINATION)
                        str_setf(&w->role, _("elimination: dead PID %d"), (int)at->to_pid);
                else if (at->link == LINK_PID_ORDER)
                        str_setf(&w->role, _("PID order: dead PID %d"), (int)at->to_pid);
                else if (at->link == LINK_ORPHAN || at->candidate || !at->proof)
                        str_setf(&w->role, _("candidate, dead PID %d"), (int)at->to_pid);
                else
                        str_setf(&w->role, _("worker of dead PID %d"), (int)at->to_pid);
                str_set(&w->link, at->text);
                copy(w->confidence, sizeof(w->confidence), confidence_name(at->confidence));
                w->ghost_holder = true;
                w->tie_pid = at->to_pid;
        }
        return 0;
}

static bool event_shown(const struct facts *f, const struct xid_event *e)
{
        if (e->kind == XID_KIND_SXID || e->kind == XID_KIND_OTHER || e->kind == XID_KIND_GPU_UUID)
                return false;
        for (size_t g = 0; g < f->gpu->n_gpus; g++) {
                const struct gpu_info *gi = &f->gpu->gpus[g];
                if (f->kernel_this_host && e->gpu_index >= 0 ? (unsigned)e->gpu_index == gi->index
                                                              : e->pci_bus_id[0] && !strcmp(e->pci_bus_id, gi->pci_bus_id))
                        return true;
        }
        return false;
}

static int event_gpu(const struct facts *f, const struct xid_event *e)
{
        if (f->kernel_this_host && e->gpu_index >= 0)
                return e->gpu_index;
        for (size_t g = 0; g < f->gpu->n_gpus; g++)
                if (e->pci_bus_id[0] && !strcmp(e->pci_bus_id, f->gpu->gpus[g].pci_bus_id))
                        return (int)f->gpu->gpus[g].index;
        return -1;
}

static void xids_of(struct live_view *v, const struct facts *f)
{
        size_t idx[LIVE_MAX_XID], n = 0;
        for (size_t i = f->kernel.n; i-- > 0 && n < LIVE_MAX_XID;)
                if (event_shown(f, &f->kernel.ev[i]))
                        idx[n++] = i;
        for (size_t k = 0; k < n; k++) {
                const struct xid_event *e = &f->kernel.ev[idx[n - 1 - k]];
                struct live_xid *x = &v->xids[k];
                struct xid_assessment as;
                xid_event_assess(e, &as);
                x->time = e->time_known ? e->time : 0;
                x->gpu = event_gpu(f, e);
                x->xid = e->xid;
                copy(x->title, sizeof(x->title), as.title ? as.title : xid_kind_name(e->kind));
                copy(x->severity, sizeof(x->severity), xid_severity_name(as.severity));
                x->pid = e->pid_known ? e->pid : 0;
                copy(x->process, sizeof(x->process), e->process_name);
        }
        v->n_xids = n;
}

int live_view_build(const struct scan_result *r, bool with_cmdline, bool full_walk, double duration_s,
                    struct live_view **ret)
{
        const struct facts *f = r->facts;
        struct live_view *v = calloc(1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        v->gpus = calloc(r->n_gpus ? r->n_gpus : 1, sizeof(*v->gpus));
        v->rows = calloc(LIVE_MAX_ROWS, sizeof(*v->rows));
        int e = v->gpus && v->rows ? 0 : -ENOMEM;
        v->finished = f->host && f->host->sample_time > 0 ? f->host->sample_time : 0;
        v->duration_s = duration_s;
        v->full_walk = full_walk;
        v->simulated = f->simulated;
        v->driver_present = f->gpu->driver_present;
        str_set(&v->driver, f->gpu->driver_present ? f->gpu->driver_version : f->gpu->error);
        v->full_visibility = r->full_visibility;
        str_set(&v->kernel_error, f->kernel_error);
        for (size_t i = 0; !e && i < r->n_gpus && i < f->gpu->n_gpus; i++) {
                gpu_of(&v->gpus[v->n_gpus++], &f->gpu->gpus[i], &r->gpus[i]);
                e = rows_of_gpu(v, r, &r->gpus[i], with_cmdline);
        }
        /* the other holders: monitors, daemons, CUDA processes tied to no ghost */
        for (size_t i = 0; !e && f->host && i < f->host->n_holders; i++) {
                const struct host_proc *hp = &f->host->holders[i];
                if (attributed_anywhere(r, hp->pid) || ledger_listed_anywhere(f, hp->pid, NULL))
                        continue;
                struct live_row *w = row_new(v);
                if (!w)
                        break;
                e = row_proc(w, hp, r, with_cmdline);
                const struct gpu_daemon *d = gpu_daemon_of(hp);
                pid_t owner = 0;
                const char *what = NULL;
                enum job_tie tie = d ? JOB_TIE_NONE : ledger_live_tie(r, hp, NULL, &owner, &what);
                if (tie != JOB_TIE_NONE) {
                        /* a live job's worker: its memory is charged to the owner NVML lists */
                        str_setf(&w->role, _("worker of live PID %d"), (int)owner);
                        w->tie_pid = owner;
                        str_setf(&w->link, _("tied to live owner %d (%s): its memory counts as listed"),
                                 (int)owner, what ? what : job_tie_name(tie));
                        continue;
                }
                str_set(&w->role,
                     d ? d->kind : host_proc_holds(hp, "nvidia-uvm") ? _("CUDA process, not listed") : _("monitor"));
                str_set(&w->link, d ? _("a GPU daemon: never counted, never ended by reclaim")
                                                 : _("holds device nodes; no link to a ghost"));
        }
        for (size_t i = 0; i < v->n_rows; i++)
                row_util(&v->rows[i], f);
        for (size_t i = 0; f->host && i < f->host->n_limits && v->n_limits < 4; i++)
                str_set(&v->limits[v->n_limits++], host_report_limit_text(f->host, i));
        if (!e)
                xids_of(v, f);
        if (e) {
                live_view_free(v);
                return e;
        }
        *ret = v;
        return 0;
}

void live_view_cpu(struct live_view *v, const struct live_view *prev, long clk_tck)
{
        double dt = prev ? v->finished - prev->finished : 0;
        for (size_t i = 0; i < v->n_rows; i++) {
                struct live_row *w = &v->rows[i];
                /* the first view: over the process's life, as ps(1) says it */
                double life = v->finished - w->start_time;
                w->cpu_pct = !prev && w->cpu_known && w->start_time > 0 && life > 0.05 && clk_tck > 0
                                     ? (double)w->cpu_ticks / (double)clk_tck / life * 100.0
                                     : -1;
                for (size_t k = 0; dt > 0.05 && clk_tck > 0 && w->cpu_known && k < prev->n_rows; k++) {
                        const struct live_row *o = &prev->rows[k];
                        if (o->pid != w->pid || !o->cpu_known || o->start_time != w->start_time || o->cpu_ticks > w->cpu_ticks)
                                continue;
                        w->cpu_pct = (double)(w->cpu_ticks - o->cpu_ticks) / (double)clk_tck / dt * 100.0;
                        break;
                }
        }
}

void live_view_free(struct live_view *v)
{
        if (!v)
                return;
        for (size_t i = 0; i < v->n_rows; i++) {
                struct live_row *w = &v->rows[i];
                free(w->cmdline);
                free(w->role);
                free(w->link);
                free(w->detail);
        }
        for (size_t i = 0; i < v->n_gpus; i++) {
                struct live_gpu *g = &v->gpus[i];
                free(g->summary);
                for (size_t e = 0; e < g->n_evidence; e++)
                        free(g->evidence[e]);
                free(g->next_step);
                free(g->status);
        }
        for (size_t i = 0; i < v->n_limits; i++)
                free(v->limits[i]);
        free(v->driver);
        free(v->kernel_error);
        free(v->rows);
        free(v->gpus);
        free(v);
}

const struct live_gpu *live_view_gpu(const struct live_view *v, unsigned index)
{
        for (size_t i = 0; v && i < v->n_gpus; i++)
                if (v->gpus[i].index == index)
                        return &v->gpus[i];
        return NULL;
}

/* ---- the history ---------------------------------------------------------------------------- */

static struct live_ring *ring_for(struct live_history *h, unsigned index, int *err)
{
        for (size_t i = 0; i < h->n_gpus; i++)
                if (h->gpus[i].index == index)
                        return &h->gpus[i];
        if (h->n_gpus == LIVE_MAX_GPUS)
                return NULL;
        struct live_ring *n = realloc(h->gpus, (h->n_gpus + 1) * sizeof(*n));
        if (!n) {
                *err = -ENOMEM;
                return NULL;
        }
        h->gpus = n;
        struct live_ring *r = &h->gpus[h->n_gpus++];
        memset(r, 0, sizeof(*r));
        r->index = index;
        return r;
}

static void ring_push(struct live_ring *r, const struct live_point *p)
{
        r->pts[r->head] = *p;
        r->head = (r->head + 1) % LIVE_HISTORY_MAX;
        if (r->n < LIVE_HISTORY_MAX)
                r->n++;
}

static uint32_t to_mib(uint64_t bytes)
{
        uint64_t m = (bytes + (1u << 19)) >> 20;
        return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

int live_history_add(struct live_history *h, const struct live_view *v, double t)
{
        struct live_point p;
        memset(&p, 0, sizeof(p));
        p.t = t > 0 && t < 4294967295.0 ? (uint32_t)t : 0;
        if (!v) {
                for (size_t i = 0; i < h->n_gpus; i++)
                        ring_push(&h->gpus[i], &p);
                return 0;
        }
        int err = 0;
        for (size_t i = 0; i < v->n_gpus; i++) {
                const struct live_gpu *g = &v->gpus[i];
                struct live_ring *r = ring_for(h, g->index, &err);
                if (!r) {
                        if (err)
                                return err;
                        continue;
                }
                struct live_point q = p;
                q.valid = g->inspected;
                q.util_gpu = (int8_t)(g->tel.queried && g->tel.util_gpu >= 0 && g->tel.util_gpu <= 100 ? g->tel.util_gpu : -1);
                q.util_mem = (int8_t)(g->tel.queried && g->tel.util_mem >= 0 && g->tel.util_mem <= 100 ? g->tel.util_mem : -1);
                for (int k = 0; k < LIVE_KINDS && g->inspected; k++)
                        q.mib[k] = to_mib(g->kind[k]);
                if (g->inspected)
                        r->total_mib = to_mib(g->total);
                ring_push(r, &q);
        }
        return 0;
}

const struct live_ring *live_history_gpu(const struct live_history *h, unsigned index)
{
        for (size_t i = 0; h && i < h->n_gpus; i++)
                if (h->gpus[i].index == index)
                        return &h->gpus[i];
        return NULL;
}

const struct live_point *live_ring_at(const struct live_ring *r, size_t i)
{
        return &r->pts[(r->head + LIVE_HISTORY_MAX - r->n + i) % LIVE_HISTORY_MAX];
}

size_t live_history_bytes(const struct live_history *h)
{
        return h->n_gpus * sizeof(*h->gpus);
}

void live_history_free(struct live_history *h)
{
        free(h->gpus);
        h->gpus = NULL;
        h->n_gpus = 0;
}
