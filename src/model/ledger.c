/* ledger: the per-GPU account and its findings. Pure: reads two samples of facts, no I/O.
 * Every rule here is written down in docs/verdicts.md. */
#include "model/ledger.h"
#include "model/daemons.h"
#include "util/buf.h"
#include "util/i18n.h"
#include "util/strf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024ull * 1024ull)
/* a process started this long after the sample cannot own what the sample showed (ticks are 10 ms) */
#define START_SLACK_S 0.05

/* The verdict table, in order of importance (enum verdict): each verdict's code and tone. */
static const struct {
        const char *code;
        enum verdict_tone tone;
} verdicts[VERDICT_COUNT] = {
        [VERDICT_GPU_LOST] = { "gpu-lost", TONE_ALARM },
        [VERDICT_STUCK] = { "stuck-in-driver", TONE_ALARM },
        [VERDICT_ORPHANED] = { "orphaned-holders", TONE_ALARM },
        [VERDICT_DAEMON] = { "daemon-holder", TONE_ALARM },
        [VERDICT_STALE] = { "stale-owner", TONE_ALARM },
        [VERDICT_DRIVER_LEAK] = { "driver-leak", TONE_ALARM },
        [VERDICT_UNKNOWN] = { "unknown", TONE_DOUBT },
        [VERDICT_FREEING] = { "freeing", TONE_CALM },
        [VERDICT_INVISIBLE] = { "invisible-here", TONE_DOUBT },
        [VERDICT_FOREIGN] = { "foreign-namespace", TONE_CALM },
        [VERDICT_UNATTRIBUTED] = { "unattributed-live", TONE_CALM },
        [VERDICT_RESERVED_ONLY] = { "reserved-only", TONE_CALM },
        [VERDICT_OK] = { "ok", TONE_CALM },
};

/* The order the exporter's verdict series and the documentation list them in. */
static const enum verdict listing_order[VERDICT_COUNT] = {
        VERDICT_OK, VERDICT_RESERVED_ONLY, VERDICT_ORPHANED, VERDICT_STALE, VERDICT_FOREIGN, VERDICT_INVISIBLE,
        VERDICT_UNATTRIBUTED, VERDICT_STUCK, VERDICT_DAEMON, VERDICT_DRIVER_LEAK, VERDICT_GPU_LOST, VERDICT_UNKNOWN,
        VERDICT_FREEING,
};

const char *verdict_code(enum verdict v)
{
        return (unsigned)v < VERDICT_COUNT ? verdicts[v].code : "unknown";
}

const char *verdict_listed(size_t i)
{
        return i < VERDICT_COUNT ? verdicts[listing_order[i]].code : NULL;
}

enum verdict_tone verdict_tone(const char *code)
{
        for (size_t i = 0; code && i < VERDICT_COUNT; i++)
                if (strcmp(code, verdicts[i].code) == 0)
                        return verdicts[i].tone;
        return TONE_ALARM;
}

const char *confidence_name(enum confidence c)
{
        return c == CONF_HIGH ? "high" : c == CONF_MEDIUM ? "medium" : "low";
}

const char *link_name(enum link_kind k)
{
        switch (k) {
        case LINK_PGID: return "process-group";
        case LINK_SID: return "session";
        case LINK_PPID: return "parent";
        case LINK_JOB: return "job";
        case LINK_LEADER_GONE: return "leader-gone";
        case LINK_ORPHAN: return "orphan";
        case LINK_FAMILY: return "family";
        case LINK_ELIMINATION: return "elimination";
        case LINK_PID_ORDER: return "pid-order";
        default: return "none";
        }
}

void ledger_opts_default(struct ledger_opts *o)
{
        memset(o, 0, sizeof(*o));
        o->floor_min_bytes = 64 * MIB;
        o->floor_permille = 10;
        o->self_pid = getpid();
        o->xid_window_s = XID_WINDOW_DEFAULT_S;
}

/* ---- small helpers --------------------------------------------------------------------- */

bool ledger_holds_gpu_node(const struct host_proc *p, const struct gpu_info *g, bool *ret_exact)
{
        if (ret_exact)
                *ret_exact = g->minor_known;
        if (g->minor_known) {
                char name[24];
                snprintf(name, sizeof(name), "nvidia%u", g->minor);
                return host_proc_holds(p, name);
        }
        /* which node is this GPU's is not known: any GPU node (nvidia0, nvidia1, ...) */
        for (unsigned i = 0; i < p->n_nodes && i < HOST_MAX_NODES; i++) {
                const char *n = p->nodes[i].name;
                if (strncmp(n, "nvidia", 6) == 0 && n[6] >= '0' && n[6] <= '9')
                        return true;
        }
        return false;
}

static bool holds_uvm(const struct host_proc *p)
{
        return host_proc_holds(p, "nvidia-uvm");
}

/* The facts of a PID NVML lists on some GPU that is a live owner there (and that GPU's
 * position in r->gpus), or NULL. */
static const struct owner *live_owner_entry(const struct scan_result *r, pid_t pid, size_t *ret_g)
{
        for (size_t g = 0; g < r->n_gpus; g++)
                for (size_t k = 0; k < r->gpus[g].n_owners; k++)
                        if ((pid_t)r->gpus[g].owners[k].pid == pid && r->gpus[g].owners[k].cls == OWNER_LIVE) {
                                if (ret_g)
                                        *ret_g = g;
                                return &r->gpus[g].owners[k];
                        }
        return NULL;
}

bool ledger_is_live_owner(const struct scan_result *r, pid_t pid)
{
        return live_owner_entry(r, pid, NULL) != NULL;
}

bool ledger_live_owner_of(const struct scan_result *r, pid_t pid, unsigned *ret_gpu, uint64_t *ret_bytes)
{
        size_t g;
        const struct owner *ow = live_owner_entry(r, pid, &g);
        if (!ow)
                return false;
        if (ret_gpu)
                *ret_gpu = r->facts->gpu && g < r->facts->gpu->n_gpus ? r->facts->gpu->gpus[g].index : (unsigned)g;
        if (ret_bytes)
                *ret_bytes = ow->used_known ? ow->used_bytes : 0;
        return true;
}

bool ledger_listed_anywhere(const struct facts *f, pid_t pid, unsigned *ret_gpu)
{
        for (size_t g = 0; f->gpu && g < f->gpu->n_gpus; g++)
                for (size_t i = 0; i < f->gpu->gpus[g].n_procs; i++)
                        if ((pid_t)f->gpu->gpus[g].procs[i].pid == pid) {
                                if (ret_gpu)
                                        *ret_gpu = f->gpu->gpus[g].index;
                                return true;
                        }
        return false;
}

enum job_tie ledger_live_tie(const struct scan_result *r, const struct host_proc *p, const struct host_proc *env,
                             pid_t *ret_owner, const char **ret_what)
{
        pid_t fam_owner = ledger_family_live_owner(r, p);
        if (fam_owner) {
                if (ret_owner)
                        *ret_owner = fam_owner;
                if (ret_what)
                        *ret_what = "open file description";
                return JOB_TIE_FAMILY;
        }
        const struct facts *f = r->facts;
        const struct host_proc *owners[256];
        size_t n = 0;
        for (size_t g = 0; g < r->n_gpus; g++)
                for (size_t k = 0; k < r->gpus[g].n_owners && n < sizeof(owners) / sizeof(owners[0]); k++) {
                        if (r->gpus[g].owners[k].cls != OWNER_LIVE)
                                continue;
                        const struct pid_fact *pf = facts_pid(f, r->gpus[g].owners[k].pid);
                        if (pf && pf->present)
                                owners[n++] = &pf->proc;
                }
        if (!env && f->self_known)
                env = &f->self;
        return job_tie_to(p, owners, n, env, ret_owner, ret_what);
}

pid_t ledger_family_live_owner(const struct scan_result *r, const struct host_proc *p)
{
        const struct host_report *h = r->facts->host;
        if (!h || !p->family || h->family_source == HOST_FAMILIES_NONE)
                return 0;
        /* from the live owners (a few), not from the holders (many): called for every holder */
        for (size_t g = 0; g < r->n_gpus; g++)
                for (size_t k = 0; k < r->gpus[g].n_owners; k++) {
                        const struct owner *ow = &r->gpus[g].owners[k];
                        const struct host_proc *m = ow->cls == OWNER_LIVE ? host_report_find(h, (pid_t)ow->pid) : NULL;
                        if (m && m->pid != p->pid && m->family == p->family)
                                return m->pid;
                }
        return 0;
}

static struct finding *add_finding(struct gpu_ledger *l, enum verdict v, enum confidence c, uint64_t bytes)
{
        struct finding *n = realloc(l->findings, (l->n_findings + 1) * sizeof(*n));
        if (!n)
                return NULL;
        l->findings = n;
        struct finding *fd = &l->findings[l->n_findings++];
        memset(fd, 0, sizeof(*fd));
        fd->verdict = v;
        snprintf(fd->code, sizeof(fd->code), "%s", verdict_code(v));
        fd->confidence = c;
        fd->bytes = bytes;
        return fd;
}

static void finding_free(struct finding *fd)
{
        free(fd->summary);
        for (size_t i = 0; i < fd->n_evidence; i++)
                free(fd->evidence[i]);
        free(fd->next_step);
}

static void evidence(struct finding *fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void evidence(struct finding *fd, const char *fmt, ...)
{
        if (!fd || fd->n_evidence >= LEDGER_MAX_EVIDENCE)
                return;
        va_list ap;
        va_start(ap, fmt);
        if (str_vsetf(&fd->evidence[fd->n_evidence], fmt, ap) == 0)
                fd->n_evidence++;
        va_end(ap);
}

static void finding_pid(struct finding *fd, pid_t pid)
{
        if (!fd || fd->n_pids >= LEDGER_MAX_PIDS)
                return;
        for (size_t i = 0; i < fd->n_pids; i++)
                if (fd->pids[i] == pid)
                        return;
        fd->pids[fd->n_pids++] = pid;
}

static unsigned long long mib(uint64_t b)
{
        return (unsigned long long)((b + MIB / 2) / MIB);
}

/* ---- owners ----------------------------------------------------------------------------- */

/* How NVML-listed process p of GPU g counts. A live owner of g is alive here, not exiting,
 * started before the sample, and holds what a context on g needs: g's node and, for a compute
 * context, nvidia-uvm (every CUDA process opens it; monitors do not). */
static void classify_owner(const struct facts *f, const struct gpu_info *g, const struct gpu_proc *p,
                           struct owner *o)
{
        const struct pid_fact *pf = facts_pid(f, p->pid);
        const struct host_report *h = f->host;
        bool initial = h && h->initial_pidns;
        bool host_pids = !initial && f->gpu->pid_mode == GPU_PID_HOST;
        o->pid = p->pid;
        o->used_bytes = p->used_bytes;
        o->used_known = p->used_known;
        o->gpu_instance = p->gpu_instance;
        o->compute_instance = p->compute_instance;

        if (pf && pf->present) {
                const struct host_proc *hp = &pf->proc;
                const char *comm = hp->comm ? hp->comm : "?";
                bool exact = true;
                bool node = ledger_holds_gpu_node(hp, g, &exact);
                bool graphics_only = p->kinds && !(p->kinds & (GPU_PROC_COMPUTE | GPU_PROC_MPS));
                bool uvm = holds_uvm(hp) || graphics_only;
                bool unreadable = (hp->skipped & HOST_SKIP_FDS) && hp->n_nodes == 0;
                if (hp->state == 'Z' || hp->state == 'X') {
                        o->cls = OWNER_STALE;
                        str_setf(&o->why, _("zombie (dead, not yet reaped)"));
                } else if (hp->exiting) {
                        o->cls = OWNER_STALE;
                        str_setf(&o->why, _("exiting (state %c)"), hp->state);
                } else if (hp->start_time > f->gpu->sample_time + START_SLACK_S && f->gpu->sample_time > 0) {
                        o->cls = OWNER_STALE;
                        str_setf(&o->why, _("PID reused: this process started after the sample"));
                } else if (unreadable) {
                        /* another user's process: what it holds is out of sight; it may well be the owner */
                        o->cls = OWNER_LIVE;
                        str_setf(&o->why, _("alive here (its descriptors are unreadable to this user)"));
                } else if ((!node || !uvm) && h && h->nodes_known &&
                           ((g->minor_known && !host_report_has_gpu_node(h, g->minor)) || (!uvm && !h->uvm_node))) {
                        /* the node it would hold is not under the device prefix: nobody can be
                         * seen holding it, so holding none says nothing about this process */
                        o->cls = OWNER_UNKNOWN;
                        o->unseen = true;
                        if (g->minor_known && !host_report_has_gpu_node(h, g->minor))
                                str_setf(&o->why, "%s", _("alive here; no GPU device node under the prefix to see it hold"));
                        else
                                str_setf(&o->why, "%s", _("alive here; no nvidia-uvm device node under the prefix to see it hold"));
                } else if (!node || !uvm) {
                        if (host_pids) {
                                /* in host-PID mode inside a container the number may be anyone's */
                                o->cls = OWNER_FOREIGN;
                                str_setf(&o->why, _("host PID from another namespace"));
                        } else if (!uvm) {
                                o->cls = OWNER_STALE;
                                str_setf(&o->why, _("PID reused by %s, which holds no nvidia-uvm (not a CUDA process)"),
                                         comm);
                        } else {
                                o->cls = OWNER_STALE;
                                str_setf(&o->why, _("PID reused by %s, a CUDA process that holds no /dev/nvidia%u"),
                                         comm, g->minor);
                        }
                } else {
                        o->cls = OWNER_LIVE;
                        str_setf(&o->why, _("alive here"));
                }
                return;
        }
        if (initial) {
                o->cls = OWNER_STALE;   /* the initial namespace sees every PID */
                str_setf(&o->why, _("no such process"));
        } else if (host_pids) {
                o->cls = OWNER_FOREIGN;
                str_setf(&o->why, _("not in this PID namespace (the driver lists host PIDs)"));
        } else {
                /* outside the initial namespace an absent PID may be dead or out of sight; it
                 * becomes stale only if its process group or session is still here (below) */
                o->cls = OWNER_UNKNOWN;
                str_setf(&o->why, _("no such process in this PID namespace"));
        }
}

/* ---- attribution ------------------------------------------------------------------------ */

static struct attribution *add_attr(struct gpu_ledger *l, size_t holder, enum link_kind k, pid_t to, bool candidate,
                                    enum confidence c, const char *text)
{
        for (size_t i = 0; i < l->n_attr; i++)
                if (l->attr[i].holder == holder)
                        return &l->attr[i]; /* the first (strongest) link wins */
        char *own = strdup(text);
        struct attribution *n = own ? realloc(l->attr, (l->n_attr + 1) * sizeof(*n)) : NULL;
        if (!n) {
                free(own);
                return NULL;
        }
        l->attr = n;
        struct attribution *a = &l->attr[l->n_attr++];
        memset(a, 0, sizeof(*a));
        a->holder = holder;
        a->link = k;
        a->to_pid = to;
        a->candidate = candidate;
        a->confidence = c;
        a->text = own;
        return a;
}

/* Holders that can be attributed at all: not ourselves, not a kernel thread, not a daemon, not
 * a live owner on any GPU. */
static bool attributable(const struct scan_result *res, const struct ledger_opts *o, const struct host_proc *h)
{
        if (h->pid == o->self_pid || h->kernel_thread || gpu_daemon_of(h))
                return false;
        return !ledger_is_live_owner(res, h->pid);
}

/* A tie's name in a sentence: the job's kind (pod, Slurm job, ...) or the tie's, in the
 * reader's language (job_tie_name is the code JSON carries, the same words in English). */
static const char *tie_noun(enum job_tie tie, const char *what)
{
        if (tie == JOB_TIE_JOB && what)
                return _(what);
        switch (tie) {
        case JOB_TIE_PARENT: return _("parent");
        case JOB_TIE_GROUP: return _("process-group");
        case JOB_TIE_SESSION: return _("session");
        case JOB_TIE_JOB: return _("job");
        case JOB_TIE_FAMILY: return _("description");
        default: return job_tie_name(tie);
        }
}

/* A tie to a live owner (group, session, job) is said in the link's text and caps its
 * confidence at medium. */
static void tie_note(char **text, enum job_tie tie, const char *what, pid_t live, enum confidence *c)
{
        if (tie == JOB_TIE_NONE)
                return;
        str_addf(text, _("; shares its %s with live PID %d"), tie_noun(tie, what), (int)live);
        if (*c > CONF_MEDIUM)
                *c = CONF_MEDIUM;
}

/* Links by number to the GPU's dead (or unknown) listed owners: the holder's process group or
 * session is the dead PID, or the owner is still a zombie/exiting and is its parent or shares its
 * job. The holder must hold this GPU's node. A worker of a live owner (its parent) never is one;
 * another tie to a live owner (group, session, job) is noted and caps the confidence. */
static int attribute_linked(const struct scan_result *res, const struct ledger_opts *o, struct gpu_ledger *l,
                            const struct gpu_info *g)
{
        const struct facts *f = res->facts;
        const struct host_report *h = f->host;
        if (!h)
                return 0;
        for (size_t k = 0; k < l->n_owners; k++) {
                struct owner *ow = &l->owners[k];
                const struct pid_fact *pf = facts_pid(f, ow->pid);
                /* an absent "foreign" PID of a host-PID driver whose group is here is ours, dead */
                bool absent_foreign = ow->cls == OWNER_FOREIGN && !(pf && pf->present);
                if (ow->cls != OWNER_STALE && ow->cls != OWNER_UNKNOWN && !absent_foreign)
                        continue;
                size_t before = l->n_attr;
                pid_t dead = (pid_t)ow->pid;
                /* a reused PID belongs to someone else: only group/session links by number hold */
                bool owner_facts = pf && pf->present && (pf->proc.state == 'Z' || pf->proc.exiting);
                for (size_t i = 0; i < h->n_holders; i++) {
                        const struct host_proc *hp = &h->holders[i];
                        if (hp->pid == dead || !attributable(res, o, hp) || !ledger_holds_gpu_node(hp, g, NULL))
                                continue;
                        bool uvm = holds_uvm(hp);
                        enum confidence c = uvm ? CONF_HIGH : CONF_MEDIUM;
                        char *text = NULL;
                        enum link_kind kind = LINK_NONE;
                        if (hp->pgid == dead) {
                                kind = LINK_PGID;
                                str_setf(&text, _("worker of dead PID %d, same process group"), (int)dead);
                        } else if (hp->sid == dead) {
                                kind = LINK_SID;
                                str_setf(&text, _("worker of dead PID %d, same session"), (int)dead);
                        } else if (owner_facts && hp->ppid == dead) {
                                kind = LINK_PPID;
                                str_setf(&text, _("child of dead PID %d"), (int)dead);
                        } else if (owner_facts && job_same(hp, &pf->proc, f->self_known ? &f->self : NULL, NULL)) {
                                kind = LINK_JOB;
                                c = CONF_MEDIUM;
                                str_setf(&text, _("same job as dead PID %d"), (int)dead);
                        }
                        if (kind == LINK_NONE)
                                continue;
                        if (!text)
                                return -ENOMEM; /* a link without its sentence is not dropped silently */
                        pid_t live = 0;
                        const char *what = NULL;
                        enum job_tie tie = ledger_live_tie(res, hp, NULL, &live, &what);
                        if (tie == JOB_TIE_PARENT || tie == JOB_TIE_FAMILY) {
                                free(text);
                                continue; /* a live owner's worker, or its family's member, is never an orphan */
                        }
                        tie_note(&text, tie, what, live, &c);
                        struct attribution *a = add_attr(l, i, kind, dead, false, c, text);
                        free(text);
                        if (!a)
                                return -ENOMEM;
                        a->tie = tie;
                        a->tie_pid = live;
                        a->proof = true;
                }
                if (ow->cls != OWNER_STALE && l->n_attr > before) {
                        /* its process group or session is here and it is not: it is dead */
                        ow->cls = OWNER_STALE;
                        str_setf(&ow->why, _("no such process; its process group is still here"));
                }
                /* processes we cannot inspect (another user's) in its group or session */
                ow->out_of_sight = 0;
                bool gone = !(pf && pf->present) || owner_facts;
                for (size_t i = 0; gone && i < h->n_opaque; i++)
                        ow->out_of_sight += h->opaque[i].pgid == dead || h->opaque[i].sid == dead;
                if (ow->cls != OWNER_STALE && ow->out_of_sight) {
                        ow->cls = OWNER_STALE;
                        str_setf(&ow->why, _("no such process; its process group is still here, out of sight"));
                }
        }
        return 0;
}

static bool has_owner(const struct gpu_ledger *l, enum owner_class c)
{
        for (size_t k = 0; k < l->n_owners; k++)
                if (l->owners[k].cls == c)
                        return true;
        return false;
}

static bool attributed_here(const struct gpu_ledger *l, size_t holder)
{
        for (size_t a = 0; a < l->n_attr; a++)
                if (l->attr[a].holder == holder)
                        return true;
        return false;
}

/* Why GPU l may hold memory of a dead job whose processes no link by number names. */
enum orphan_mode {
        ORPHAN_NONE = 0,
        ORPHAN_STALE_LISTED,    /* a dead owner is listed: unlisted CUDA holders of its node are suspects */
        ORPHAN_HIDDEN,          /* the driver hides dead owners and bytes are unexplained */
        ORPHAN_HOST_PIDS,       /* a host-PID driver inside a container lists PIDs not seen here */
};

static enum orphan_mode gpu_orphan_mode(const struct scan_result *res, const struct gpu_ledger *l, bool driver_lists_dead)
{
        const struct facts *f = res->facts;
        bool initial = f->host && f->host->initial_pidns;
        if (!l->inspected || !l->procs_known)
                return ORPHAN_NONE;
        /* a listed PID that is dead, or absent here and not known to be elsewhere */
        if (has_owner(l, OWNER_STALE) || has_owner(l, OWNER_UNKNOWN))
                return ORPHAN_STALE_LISTED;
        if (!initial && f->gpu->pid_mode == GPU_PID_HOST) {
                for (size_t k = 0; k < l->n_owners; k++) {
                        const struct pid_fact *pf = facts_pid(f, l->owners[k].pid);
                        if (l->owners[k].cls == OWNER_FOREIGN && !(pf && pf->present))
                                return ORPHAN_HOST_PIDS;
                }
                return ORPHAN_NONE;
        }
        uint64_t explained = 0;
        for (size_t k = 0; k < l->n_owners; k++)
                if ((l->owners[k].cls == OWNER_LIVE || l->owners[k].cls == OWNER_FOREIGN) && l->owners[k].used_known)
                        explained += l->owners[k].used_bytes;
        /* with the v1 query used includes the driver's reservation: unexplained bytes prove nothing */
        if (!driver_lists_dead && l->reserved_known && l->used > explained && l->used - explained > l->noise_floor)
                return ORPHAN_HIDDEN;
        return ORPHAN_NONE;
}

/* A process-group or session leader of p that is gone, or 0. */
static pid_t gone_leader(const struct facts *f, const struct host_proc *p, const char **ret_what)
{
        if (p->pgid > 0 && p->pgid != p->pid && !facts_pid_alive(f, p->pgid)) {
                *ret_what = N_("process group");
                return p->pgid;
        }
        if (p->sid > 0 && p->sid != p->pid && !facts_pid_alive(f, p->sid)) {
                *ret_what = N_("session");
                return p->sid;
        }
        return 0;
}

/* ---- description families ---------------------------------------------------------------- */

/* A holder's family key: its family number, or one of its own when the report has none. */
static size_t fam_key(const struct host_report *h, size_t i)
{
        return h->holders[i].family ? h->holders[i].family : h->n_families + 1 + i;
}

static size_t fam_count(const struct host_report *h)
{
        return h->n_families + h->n_holders + 1;
}

/* What the rules need to know of one family (docs/verdicts.md, "Description families"). */
struct fam_info {
        bool present;
        bool bound;             /* a member is attributed, NVML-listed, a daemon, ourselves, or tied to a live owner */
        bool ctl, uvm;          /* a member holds nvidiactl / nvidia-uvm */
        bool orphaned;          /* a member's parent is PID 1 or gone: it outlived who started it */
        pid_t min_pid;
        pid_t gone;             /* a member's process-group or session leader that is gone */
        const char *gone_what;
        bool done;              /* given a tie by (c) or (d) */
        bool blind;             /* it holds the node of a GPU that gives no process list: it may be
                                 * that GPU's live job, so no rule but a link by number names it */
};

/* A free family: it keeps a context, nothing binds it, and it outlived who started it. */
static bool fam_free(const struct fam_info *x)
{
        return x->present && !x->bound && x->ctl && x->uvm && x->orphaned;
}

/* Members of family key k that hold GPU g's node. */
static bool fam_holds_gpu(const struct host_report *h, size_t k, const struct gpu_info *g)
{
        for (size_t i = 0; i < h->n_holders; i++)
                if (fam_key(h, i) == k && ledger_holds_gpu_node(&h->holders[i], g, NULL))
                        return true;
        return false;
}

/* A GPU that gives no process list and whose node p holds, or NULL: p may be that GPU's live
 * job, so only a link by number names it (docs/verdicts.md, "Description families"). */
static const struct gpu_ledger *blind_gpu(const struct scan_result *res, const struct host_proc *p)
{
        const struct facts *f = res->facts;
        for (size_t g = 0; g < res->n_gpus && f->gpu && g < f->gpu->n_gpus; g++)
                if (res->gpus[g].inspected && !res->gpus[g].procs_known &&
                    ledger_holds_gpu_node(p, &f->gpu->gpus[g], NULL))
                        return &res->gpus[g];
        return NULL;
}

static void fam_survey(const struct scan_result *res, const struct ledger_opts *o, struct fam_info *fi)
{
        const struct facts *f = res->facts;
        const struct host_report *h = f->host;
        bool any_ctl = false;
        for (size_t i = 0; i < h->n_holders; i++)
                any_ctl |= host_proc_holds(&h->holders[i], "nvidiactl");
        for (size_t i = 0; i < h->n_holders; i++) {
                const struct host_proc *hp = &h->holders[i];
                struct fam_info *x = &fi[fam_key(h, i)];
                bool linked = false;
                for (size_t g = 0; g < res->n_gpus; g++)
                        linked |= attributed_here(&res->gpus[g], i);
                if (!x->present)
                        x->min_pid = hp->pid;
                x->present = true;
                x->bound |= linked || !attributable(res, o, hp) || ledger_listed_anywhere(f, hp->pid, NULL) ||
                            ledger_live_tie(res, hp, NULL, NULL, NULL) != JOB_TIE_NONE;
                /* a host whose nodes include no nvidiactl (a fixture) keeps contexts on the GPU nodes */
                x->ctl |= host_proc_holds(hp, "nvidiactl") || !any_ctl;
                x->uvm |= holds_uvm(hp);
                x->blind |= blind_gpu(res, hp) != NULL;
                x->bound |= x->blind;
                x->orphaned |= hp->ppid <= 1 || !facts_pid_alive(f, hp->ppid);
                const char *what = NULL;
                pid_t gone = gone_leader(f, hp, &what);
                if (gone && !x->gone) {
                        x->gone = gone;
                        x->gone_what = what;
                }
        }
}

/* A dead listed owner no holder explains yet, and a GPU it is listed on. */
struct left_owner {
        size_t gpu;
        pid_t pid;
};

/* Attribute every attributable member of family k on GPU gi with one link. */
static int fam_attr(struct scan_result *res, const struct ledger_opts *o, size_t gi, size_t k, enum link_kind kind,
                    pid_t to, bool candidate, enum confidence c, bool proof, const char *text)
{
        const struct host_report *h = res->facts->host;
        struct gpu_ledger *l = &res->gpus[gi];
        for (size_t i = 0; i < h->n_holders; i++) {
                if (fam_key(h, i) != k || !attributable(res, o, &h->holders[i]))
                        continue;
                struct attribution *a = add_attr(l, i, kind, to, candidate, c, text);
                if (!a)
                        return -ENOMEM;
                a->proof = proof;
        }
        /* a listed PID absent here whose job's processes are here is dead, not out of sight */
        for (size_t w = 0; w < l->n_owners; w++)
                if ((pid_t)l->owners[w].pid == to && l->owners[w].cls == OWNER_UNKNOWN) {
                        l->owners[w].cls = OWNER_STALE;
                        str_setf(&l->owners[w].why,
                                 _("no such process in this PID namespace; a process family here holds this GPU"));
                }
        return 0;
}

/* (a) A member linked by number ties its whole family: the others share the description the
 * dead owner's context lives on (or one of the job's), whether or not they hold the GPU's node
 * (a descriptor taken with pidfd_getfd or SCM_RIGHTS may be nvidiactl's alone). */
static int attribute_family(struct scan_result *res, const struct ledger_opts *o, size_t gi)
{
        const struct host_report *h = res->facts->host;
        struct gpu_ledger *l = &res->gpus[gi];
        if (!h || h->family_source == HOST_FAMILIES_NONE)
                return 0;
        size_t n0 = l->n_attr;
        for (size_t a = 0; a < n0; a++) {
                struct attribution src = l->attr[a];
                if (!src.proof)
                        continue;
                size_t k = fam_key(h, src.holder);
                for (size_t i = 0; i < h->n_holders; i++) {
                        const struct host_proc *hp = &h->holders[i];
                        if (fam_key(h, i) != k || attributed_here(l, i) || !attributable(res, o, hp))
                                continue;
                        pid_t live = 0;
                        const char *what = NULL;
                        enum job_tie tie = ledger_live_tie(res, hp, NULL, &live, &what);
                        if (tie == JOB_TIE_PARENT || tie == JOB_TIE_FAMILY)
                                continue;
                        enum confidence c = src.confidence;
                        char *text = NULL;
                        str_setf(&text, _("shares an open file description with PID %d (%s)"),
                                 (int)h->holders[src.holder].pid, link_name(src.link));
                        tie_note(&text, tie, what, live, &c);
                        struct attribution *na = text ? add_attr(l, i, LINK_FAMILY, src.to_pid, false, c, text) : NULL;
                        free(text);
                        if (!na)
                                return -ENOMEM;
                        na->tie = tie;
                        na->tie_pid = live;
                        na->proof = true;
                }
        }
        return 0;
}

/* The dead listed owners that no holder explains, on GPUs where a dead owner is listed. */
static size_t left_owners(const struct scan_result *res, const enum orphan_mode *mode, size_t ng, struct left_owner *lo,
                          size_t max, size_t *ret_distinct, pid_t *ret_one)
{
        size_t n = 0, distinct = 0;
        for (size_t g = 0; g < ng; g++) {
                const struct gpu_ledger *l = &res->gpus[g];
                if (mode[g] != ORPHAN_STALE_LISTED)
                        continue;
                for (size_t k = 0; k < l->n_owners && n < max; k++) {
                        const struct owner *ow = &l->owners[k];
                        if (ow->cls != OWNER_STALE && ow->cls != OWNER_UNKNOWN)
                                continue;
                        bool explained = false;
                        for (size_t a = 0; a < l->n_attr; a++)
                                explained |= l->attr[a].to_pid == (pid_t)ow->pid;
                        if (explained)
                                continue;
                        bool seen = false;
                        for (size_t j = 0; j < n; j++)
                                seen |= lo[j].pid == (pid_t)ow->pid;
                        if (!seen && !distinct++)
                                *ret_one = (pid_t)ow->pid;
                        lo[n++] = (struct left_owner){ g, (pid_t)ow->pid };
                }
        }
        *ret_distinct = distinct;
        return n;
}

/* (c) elimination and (d) PID order, for the free families: those that keep a context (a member
 * holds nvidiactl and one nvidia-uvm), none of whose members is attributed, listed by NVML, a
 * daemon or tied to a live owner, and that outlived who started them. */
static int attribute_free_families(struct scan_result *res, const struct ledger_opts *o, const enum orphan_mode *mode,
                                   size_t ng, struct fam_info *fi)
{
        const struct facts *f = res->facts;
        const struct host_report *h = f->host;
        struct left_owner lo[256];
        size_t distinct = 0;
        pid_t one = 0;
        size_t nlo = left_owners(res, mode, ng, lo, sizeof(lo) / sizeof(lo[0]), &distinct, &one);
        if (!nlo)
                return 0;
        size_t nk = fam_count(h), n_free = 0, the_free = 0;
        for (size_t k = 1; k < nk; k++) {
                struct fam_info *x = &fi[k];
                if (!fam_free(x))
                        continue;
                bool on = false;
                for (size_t j = 0; j < nlo && !on; j++)
                        on = fam_holds_gpu(h, k, &f->gpu->gpus[lo[j].gpu]);
                if (on && !n_free++)
                        the_free = k;
        }
        char *text = NULL;
        int r = 0;
        if (distinct == 1 && n_free == 1) {
                struct fam_info *x = &fi[the_free];
                str_setf(&text, _("by elimination: the only family no link explains, for dead PID %d, "
                                 "the only dead owner left"), (int)one);
                if (x->gone)
                        str_addf(&text, _("; its %s leader (PID %d) is gone"), _(x->gone_what),
                                 (int)x->gone);
                for (size_t j = 0; j < nlo && r == 0; j++)
                        if (!text || (fam_holds_gpu(h, the_free, &f->gpu->gpus[lo[j].gpu]) &&
                            fam_attr(res, o, lo[j].gpu, the_free, LINK_ELIMINATION, one, false, CONF_MEDIUM, x->gone != 0, text) < 0))
                                r = -ENOMEM;
                x->done = true;
                free(text);
                return r;
        }
        for (size_t k = 1; k < nk; k++) {
                struct fam_info *x = &fi[k];
                if (!fam_free(x))
                        continue;
                /* Linux gives out PIDs upward: the job's processes came after its owner */
                pid_t best = 0;
                for (size_t j = 0; j < nlo; j++)
                        if (lo[j].pid < x->min_pid && lo[j].pid > best)
                                best = lo[j].pid;
                if (!best)
                        continue;
                if (str_setf(&text, _("likely dead PID %d's: its lowest PID, %d, is the next after it among the dead "
                             "owners (PID order only)"), (int)best, (int)x->min_pid) < 0) {
                        r = -ENOMEM;    /* (text keeps the last family's sentence: not to be used) */
                        break;
                }
                for (size_t j = 0; j < nlo && r == 0; j++)
                        if (lo[j].pid == best && fam_holds_gpu(h, k, &f->gpu->gpus[lo[j].gpu]) &&
                            fam_attr(res, o, lo[j].gpu, k, LINK_PID_ORDER, best, false, CONF_LOW, false, text) < 0)
                                r = -ENOMEM;
                x->done = true;
        }
        free(text);
        return r;
}

/* Each GPU's orphan mode, for 64 GPUs at most; returns how many GPUs have one. */
static size_t orphan_modes(const struct scan_result *res, enum orphan_mode *mode)
{
        bool driver_lists_dead = false;
        for (size_t g = 0; g < res->n_gpus; g++)
                driver_lists_dead |= has_owner(&res->gpus[g], OWNER_STALE);
        size_t ng = res->n_gpus < 64 ? res->n_gpus : 64;
        for (size_t g = 0; g < ng; g++)
                mode[g] = gpu_orphan_mode(res, &res->gpus[g], driver_lists_dead);
        return ng;
}

/* Holder i may be an orphan: a CUDA process of a family that keeps a context and that no rule
 * has placed, attributed nowhere, listed nowhere and tied to no live owner. */
static bool orphan_suspect(const struct scan_result *res, const struct ledger_opts *o, const struct fam_info *fi,
                           size_t i)
{
        const struct host_report *h = res->facts->host;
        const struct host_proc *hp = &h->holders[i];
        const struct fam_info *x = &fi[fam_key(h, i)];
        /* a family that holds no nvidiactl keeps no context (they live on its descriptions) */
        if (!holds_uvm(hp) || !x->ctl || x->done || x->blind || !attributable(res, o, hp) ||
            ledger_listed_anywhere(res->facts, hp->pid, NULL))
                return false;
        bool linked = false;
        for (size_t g = 0; g < res->n_gpus; g++)
                linked |= attributed_here(&res->gpus[g], i);
        return !linked && ledger_live_tie(res, hp, NULL, NULL, NULL) == JOB_TIE_NONE;
}

/* An orphan suspect, as orphan_link needs it. */
struct orphan {
        size_t holder;          /* its index in the host's holders */
        pid_t gone;             /* its group or session leader, gone; 0 when none is */
        const char *lwhat;      /* which of the two leaders gone is */
        size_t n_on;            /* the GPUs it qualifies on */
};

/* The listed owners of l that are absent here, by mode: how many, and the first in *ret_to. */
static size_t absent_owners(const struct gpu_ledger *l, enum orphan_mode mode, pid_t *ret_to)
{
        size_t n_absent = 0;
        for (size_t k = 0; k < l->n_owners; k++) {
                bool absent = mode == ORPHAN_HOST_PIDS
                                      ? l->owners[k].cls == OWNER_FOREIGN
                                      : l->owners[k].cls == OWNER_STALE || l->owners[k].cls == OWNER_UNKNOWN;
                if (absent && !n_absent++)
                        *ret_to = (pid_t)l->owners[k].pid;
        }
        return n_absent;
}

/* The suspect's link on GPU gpu, whose orphan mode is mode: to the dead listed owner, or to
 * its gone leader. */
static int orphan_link(struct scan_result *res, enum orphan_mode mode, size_t gpu, const struct orphan *op)
{
        struct gpu_ledger *l = &res->gpus[gpu];
        const struct gpu_info *gi = &res->facts->gpu->gpus[gpu];
        pid_t gone = op->gone;
        char *text = NULL, node[24];
        snprintf(node, sizeof(node), "/dev/nvidia%u", gi->minor);
        enum link_kind kind;
        enum confidence c;
        pid_t to = 0;
        size_t n_absent = absent_owners(l, mode, &to);
        if (mode == ORPHAN_STALE_LISTED) {
                kind = LINK_ORPHAN;
                c = gone ? CONF_MEDIUM : CONF_LOW;
                if (gone)
                        str_setf(&text,
                                 _("unlisted CUDA process holding %s while dead PID %d is listed; the leader of its %s (PID %d) is gone"),
                                 gi->minor_known ? node : _("a GPU node"), (int)to, _(op->lwhat), (int)gone);
                else
                        str_setf(&text, _("unlisted CUDA process holding %s while dead PID %d is listed"),
                                 gi->minor_known ? node : _("a GPU node"), (int)to);
        } else {
                kind = LINK_LEADER_GONE;
                c = mode == ORPHAN_HOST_PIDS && n_absent > 1 ? CONF_LOW : CONF_MEDIUM;
                to = gone;
                str_setf(&text, _("holds nvidia-uvm and %s, listed by NVML nowhere; leader of its %s (PID %d) is gone"),
                         gi->minor_known ? node : _("a GPU node"), _(op->lwhat), (int)gone);
        }
        if (op->n_on > 1) {
                c = CONF_LOW;
                str_addf(&text, _(" (candidate: it holds %zu GPUs with a ghost)"), op->n_on);
        }
        struct attribution *na = text ? add_attr(l, op->holder, kind, to, op->n_on > 1, c, text) : NULL;
        free(text);
        if (!na)
                return -ENOMEM;
        /* the hidden owner's only suspect (medium) is proof enough for a default target */
        na->proof = kind == LINK_LEADER_GONE && op->n_on == 1 && c >= CONF_MEDIUM;
        return 0;
}

/* Suspect i's links, on each GPU whose node it holds and whose memory a dead job evidently holds
 * (where the driver does not list the dead owner, only when its leader is gone). */
static int attribute_orphan(struct scan_result *res, const enum orphan_mode *mode, size_t ng, size_t i)
{
        const struct facts *f = res->facts;
        const struct host_proc *hp = &f->host->holders[i];
        struct orphan op = { .holder = i };
        op.gone = gone_leader(f, hp, &op.lwhat);
        size_t on[64];
        for (size_t g = 0; g < ng; g++) {
                if (mode[g] == ORPHAN_NONE || !ledger_holds_gpu_node(hp, &f->gpu->gpus[g], NULL))
                        continue;
                if (mode[g] != ORPHAN_STALE_LISTED && !op.gone)
                        continue;
                on[op.n_on++] = g;
        }
        for (size_t j = 0; j < op.n_on; j++)
                if (orphan_link(res, mode[on[j]], on[j], &op) < 0)
                        return -ENOMEM;
        return 0;
}

/* listed PIDs absent here that orphans here point to are a dead job's: with a translating
 * driver stale; in a container with a host-PID driver not foreign "not a leak" but unknown,
 * their bytes a ghost */
static void reclass_absent_owners(struct scan_result *res, const enum orphan_mode *mode, size_t ng)
{
        for (size_t g = 0; g < ng; g++) {
                struct gpu_ledger *l = &res->gpus[g];
                if (mode[g] == ORPHAN_STALE_LISTED && l->n_attr)
                        for (size_t k = 0; k < l->n_owners; k++)
                                if (l->owners[k].cls == OWNER_UNKNOWN) {
                                        l->owners[k].cls = OWNER_STALE;
                                        str_setf(&l->owners[k].why,
                                                 _("no such process in this PID namespace; an orphan here holds this GPU"));
                                }
                if (mode[g] != ORPHAN_HOST_PIDS || !l->n_attr)
                        continue;
                for (size_t k = 0; k < l->n_owners; k++) {
                        const struct pid_fact *pf = facts_pid(res->facts, l->owners[k].pid);
                        if (l->owners[k].cls != OWNER_FOREIGN || (pf && pf->present))
                                continue;
                        l->owners[k].cls = OWNER_UNKNOWN;
                        str_setf(&l->owners[k].why,
                                 _("not in this PID namespace; orphans of a dead job here hold this GPU"));
                }
        }
}

/* Orphans that no link by number names: an unlisted CUDA process (nvidia-uvm) holding a GPU's
 * node, tied to no live owner and linked to no other dead owner, on a GPU whose memory a dead job
 * evidently holds (orphan_mode). Where the driver does not list the dead owner (hidden, or host
 * PIDs seen from a container) its group or session leader must be gone too. A holder that
 * qualifies on several GPUs is a candidate (low) on each. */
static int attribute_orphans(struct scan_result *res, const struct ledger_opts *o)
{
        const struct host_report *h = res->facts->host;
        if (!h)
                return 0;
        enum orphan_mode mode[64];
        size_t ng = orphan_modes(res, mode);
        struct fam_info *fi = calloc(fam_count(h), sizeof(*fi));
        if (!fi)
                return -ENOMEM;
        fam_survey(res, o, fi);
        int e = attribute_free_families(res, o, mode, ng, fi);
        if (e < 0) {
                free(fi);
                return e;
        }
        for (size_t g = 0; g < ng; g++) {
                /* where links already name the dead job's processes, an unrelated CUDA process
                 * is no suspect */
                if (mode[g] == ORPHAN_STALE_LISTED && res->gpus[g].n_attr)
                        mode[g] = ORPHAN_NONE;
        }
        for (size_t i = 0; i < h->n_holders; i++)
                if (orphan_suspect(res, o, fi, i) && attribute_orphan(res, mode, ng, i) < 0) {
                        free(fi);
                        return -ENOMEM;
                }
        reclass_absent_owners(res, mode, ng);
        free(fi);
        return 0;
}

/* ---- stuck tasks ------------------------------------------------------------------------ */

static const struct host_proc *unverified_find(const struct host_report *h, pid_t pid)
{
        for (size_t i = 0; h && i < h->n_unverified; i++)
                if (h->unverified[i].pid == pid)
                        return &h->unverified[i];
        return NULL;
}

static bool wchan_in_nvidia(const char *w)
{
        return w && (strstr(w, "nv") || strstr(w, "uvm") || strstr(w, "os_") || strstr(w, "rm_"));
}

/* A task in D state now (and, with two samples, before) that belongs to this GPU: a stale
 * owner that is still present, or an attributed holder, or a live owner. */
static void find_stuck(const struct facts *now, const struct facts *before, const struct ledger_opts *o,
                       struct gpu_ledger *l, struct finding **ret_fd)
{
        pid_t cand[64];
        size_t n = 0;
        for (size_t k = 0; k < l->n_owners && n < 64; k++) {
                const struct pid_fact *pf = facts_pid(now, l->owners[k].pid);
                if (pf && pf->present && pf->proc.state == 'D')
                        cand[n++] = (pid_t)pf->pid;
        }
        for (size_t a = 0; a < l->n_attr && n < 64; a++) {
                const struct host_proc *hp = &now->host->holders[l->attr[a].holder];
                if (hp->state == 'D')
                        cand[n++] = hp->pid;
        }
        /* tasks in D whose maps could not be read (they may map a device): in a dead owner's
         * process group or session */
        for (size_t u = 0; now->host && u < now->host->n_unverified && n < 64; u++) {
                const struct host_proc *up = &now->host->unverified[u];
                for (size_t k = 0; up->state == 'D' && k < l->n_owners; k++)
                        if (l->owners[k].cls == OWNER_STALE &&
                            (up->pgid == (pid_t)l->owners[k].pid || up->sid == (pid_t)l->owners[k].pid)) {
                                cand[n++] = up->pid;
                                break;
                        }
        }
        for (size_t i = 0; i < n; i++) {
                pid_t pid = cand[i];
                const struct host_proc *hp = now->host ? host_report_find(now->host, pid) : NULL;
                const struct pid_fact *pf = facts_pid(now, (uint32_t)pid);
                if (!hp && pf)
                        hp = &pf->proc;
                if (!hp)
                        hp = unverified_find(now->host, pid);
                if (!hp)
                        continue;
                bool twice = false;
                if (o->two_samples && before) {
                        const struct host_proc *bp = before->host ? host_report_find(before->host, pid) : NULL;
                        const struct pid_fact *bf = facts_pid(before, (uint32_t)pid);
                        if (!bp && bf && bf->present)
                                bp = &bf->proc;
                        if (!bp)
                                bp = unverified_find(before->host, pid);
                        twice = bp && bp->state == 'D' && bp->start_ticks == hp->start_ticks;
                }
                bool nv = wchan_in_nvidia(hp->wchan);
                enum confidence c = twice ? (nv ? CONF_HIGH : CONF_MEDIUM) : CONF_LOW;
                if (!*ret_fd) {
                        *ret_fd = add_finding(l, VERDICT_STUCK, c, l->ghost);
                        if (!*ret_fd)
                                return;
                }
                struct finding *fd = *ret_fd;
                if (c > fd->confidence)
                        fd->confidence = c;
                finding_pid(fd, pid);
                if (hp->wchan[0])
                        evidence(fd, twice ? _("PID %d is in D state (uninterruptible) in both samples, waiting in %s")
                                           : _("PID %d is in D state (uninterruptible) in one sample (a suspect, not confirmed), waiting in %s"),
                                 (int)pid, hp->wchan);
                else
                        evidence(fd, twice ? _("PID %d is in D state (uninterruptible) in both samples")
                                           : _("PID %d is in D state (uninterruptible) in one sample (a suspect, not confirmed)"),
                                 (int)pid);
                if (hp->wchan[0] && !nv)
                        evidence(fd, _("its wait (%s) is not visibly inside the nvidia modules"), hp->wchan);
        }
}

/* ---- the kernel's side ---------------------------------------------------------------- */

static void event_when(const struct xid_event *e, char *out, size_t n)
{
        if (!e->time_known || xid_format_rfc3339(e->time, out, n) < 0)
                snprintf(out, n, "%s", e->monotonic_known ? _("(boot-relative time)") : _("(time unknown)"));
}

/* The latest Xid 79 / fallen-off-the-bus of GPU g since the driver's load, or NULL. */
static const struct xid_event *lost_event(const struct facts *f, const struct gpu_info *g, bool *ret_old)
{
        const struct xid_event *load = xid_driver_load(f->kernel.ev, f->kernel.n), *lost = NULL;
        *ret_old = false;
        for (size_t i = 0; i < f->kernel.n; i++) {
                const struct xid_event *e = &f->kernel.ev[i];
                if (e->xid != 79 || !xid_event_on_gpu(e, g, f->kernel_this_host))
                        continue;
                if (load && !xid_event_after(e, load)) {
                        *ret_old = true; /* before the current driver load: history */
                        continue;
                }
                lost = e;
        }
        return lost;
}

/* Kernel events as evidence: Xid 45 for a dead owner confirms its death, an Xid naming a dead
 * owner tells what it was, Xid 119/120 and GSP timeouts support a stuck task. */
static void kernel_evidence(const struct facts *f, const struct gpu_ledger *l, const struct gpu_info *g,
                            struct finding *main_fd, struct finding *stuck)
{
        const struct xid_event *load = xid_driver_load(f->kernel.ev, f->kernel.n);
        for (size_t i = 0; i < f->kernel.n; i++) {
                const struct xid_event *e = &f->kernel.ev[i];
                if (!xid_event_on_gpu(e, g, f->kernel_this_host) || (load && !xid_event_after(e, load)))
                        continue;
                char when[40];
                event_when(e, when, sizeof(when));
                bool dead_owner = false;
                for (size_t k = 0; e->pid_known && k < l->n_owners; k++)
                        dead_owner |= l->owners[k].pid == e->pid && l->owners[k].cls == OWNER_STALE;
                bool named = e->process_name[0] != 0;
                if (dead_owner && main_fd && e->xid == 45 && named)
                        evidence(main_fd, _("kernel: Xid 45 at %s for PID %u (%s): the driver tore its channels down (it was killed)"),
                                 when, e->pid, e->process_name);
                else if (dead_owner && main_fd && e->xid == 45)
                        evidence(main_fd, _("kernel: Xid 45 at %s for PID %u: the driver tore its channels down (it was killed)"),
                                 when, e->pid);
                else if (dead_owner && main_fd && e->kind == XID_KIND_DRM)
                        evidence(main_fd, _("kernel: nvidia-drm at %s: %s (the dead owner PID %u)"), when,
                                 e->message ? e->message : _("a DRM message"), e->pid);
                else if (dead_owner && main_fd && e->xid != XID_NONE && named)
                        evidence(main_fd, _("kernel: Xid %d at %s named the dead owner PID %u (%s)"), e->xid, when, e->pid,
                                 e->process_name);
                else if (dead_owner && main_fd && e->xid != XID_NONE)
                        evidence(main_fd, _("kernel: Xid %d at %s named the dead owner PID %u"), e->xid, when, e->pid);
                bool hang = e->xid == 119 || e->xid == 120 || e->kind == XID_KIND_GSP_ERROR || e->kind == XID_KIND_RC_WATCHDOG;
                if (hang && stuck) {
                        evidence(stuck, _("kernel: %s at %s%s"), e->xid != XID_NONE ? _("a GSP/driver timeout (Xid)") : _("a GSP error"), when,
                                 e->xid == 119 && e->pid_known ? _("; its pid= is whoever made the timed-out call, not necessarily the stuck task") : "");
                        if (stuck->confidence == CONF_LOW)
                                stuck->confidence = CONF_MEDIUM;
                        stuck = NULL; /* one line is enough */
                }
        }
}

/* ---- the account ------------------------------------------------------------------------ */

/* MIG: each MIG device's used memory split by the owners NVML listed in its instance, with the
 * GPU's evidence of a dead owner (per-instance accounting; docs/verdicts.md, MIG). */
static void account_mig(const struct facts *f, struct gpu_ledger *l)
{
        const struct gpu_info *g = NULL;
        for (size_t i = 0; f->gpu && i < f->gpu->n_gpus; i++)
                if (f->gpu->gpus[i].index == l->index)
                        g = &f->gpu->gpus[i];
        l->n_mig = 0;
        for (size_t m = 0; g && m < g->n_mig && m < GPU_MAX_MIG; m++) {
                const struct gpu_mig_device *d = &g->mig[m];
                struct mig_ledger *ml = &l->mig[l->n_mig++];
                uint64_t listed = 0, foreign = 0, stale = 0;
                memset(ml, 0, sizeof(*ml));
                ml->gpu_instance = d->gpu_instance;
                ml->compute_instance = d->compute_instance;
                ml->memory_known = d->memory_known;
                ml->total = d->total_bytes;
                ml->used = d->memory_known ? d->used_bytes : 0;
                for (size_t k = 0; l->procs_known && k < l->n_owners; k++) {
                        const struct owner *ow = &l->owners[k];
                        if (ow->gpu_instance != d->gpu_instance || !ow->used_known)
                                continue;
                        listed += ow->cls == OWNER_LIVE ? ow->used_bytes : 0;
                        foreign += ow->cls == OWNER_FOREIGN ? ow->used_bytes : 0;
                        stale += ow->cls == OWNER_STALE ? ow->used_bytes : 0;
                }
                ml->listed = listed < ml->used ? listed : ml->used;
                ml->foreign = foreign < ml->used - ml->listed ? foreign : ml->used - ml->listed;
                uint64_t unexplained = ml->used - ml->listed - ml->foreign;
                ml->ghost = l->ghost_evidence ? (stale < unexplained ? stale : unexplained) : 0;
                ml->unattributed = unexplained - ml->ghost;
        }
}

/* Split used into the four kinds (after attribution). Sets ghost_evidence and no_live_owner. */
static void account(const struct facts *f, struct gpu_ledger *l)
{
        uint64_t listed = 0, foreign = 0, stale = 0, unknown = 0;
        bool stale_known = true, any_live = false, any_stale = false, hidden = false;
        for (size_t k = 0; k < l->n_owners; k++) {
                const struct owner *ow = &l->owners[k];
                uint64_t b = ow->used_known ? ow->used_bytes : 0;
                switch (ow->cls) {
                case OWNER_LIVE: listed += b; any_live = true; break;
                case OWNER_FOREIGN: foreign += b; any_live = true; break;
                case OWNER_STALE: stale += b; stale_known &= ow->used_known; any_stale = true; break;
                case OWNER_UNKNOWN: unknown += b; break;
                }
        }
        for (size_t a = 0; a < l->n_attr; a++)
                hidden |= l->attr[a].link == LINK_LEADER_GONE;
        /* never account for more than the driver says is used */
        listed = listed < l->used ? listed : l->used;
        foreign = foreign < l->used - listed ? foreign : l->used - listed;
        uint64_t unexplained = l->used - listed - foreign;
        l->listed = listed;
        l->foreign = foreign;
        bool initial = f->host && f->host->initial_pidns;
        l->no_live_owner = !any_live;
        /* evidence of a dead owner: a stale PID, orphans of a hidden one, or no live owner at all
         * (only where we would see one, and not with a v1 driver whose used figure includes the
         * driver's reservation). Without a process list nothing can be told. */
        l->ghost_evidence = l->procs_known && !l->holders_unseen &&
                            (any_stale || hidden || (!any_live && initial && l->reserved_known && unexplained > 0));
        if (!l->ghost_evidence)
                l->ghost = 0;
        else if (any_stale && stale_known)
                l->ghost = stale < unexplained ? stale : unexplained; /* what the dead PIDs held; the rest is uncharged */
        else if (hidden && unknown)
                l->ghost = unknown < unexplained ? unknown : unexplained;
        else
                l->ghost = unexplained;
        l->unattributed = unexplained - l->ghost;
        account_mig(f, l);
}

/* A teardown: the unexplained bytes are the driver's to free, neither ghost nor unattributed
 * (one figure, one meaning: the verdict, the equation and the metrics call them freeing). */
static void move_to_freeing(struct gpu_ledger *l)
{
        l->freeing_bytes = l->ghost + l->unattributed;
        l->ghost = l->unattributed = 0;
        for (size_t m = 0; m < l->n_mig; m++) {
                struct mig_ledger *ml = &l->mig[m];
                ml->freeing_bytes = ml->ghost + ml->unattributed;
                ml->ghost = ml->unattributed = 0;
        }
}

static void headline(struct finding *fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void headline(struct finding *fd, const char *fmt, ...)
{
        if (!fd)
                return;
        va_list ap;
        va_start(ap, fmt);
        str_vsetf(&fd->summary, fmt, ap);
        va_end(ap);
}

static void next_step(struct finding *fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void next_step(struct finding *fd, const char *fmt, ...)
{
        if (!fd)
                return;
        va_list ap;
        va_start(ap, fmt);
        str_vsetf(&fd->next_step, fmt, ap);
        va_end(ap);
}

static void stale_evidence(struct finding *fd, const struct gpu_ledger *l)
{
        for (size_t k = 0; k < l->n_owners; k++) {
                const struct owner *ow = &l->owners[k];
                if (ow->cls != OWNER_STALE && !(ow->cls == OWNER_UNKNOWN && l->ghost_evidence))
                        continue;
                finding_pid(fd, (pid_t)ow->pid);
                if (ow->used_known)
                        evidence(fd, _("NVML lists PID %u with %llu MiB: %s"), ow->pid, mib(ow->used_bytes), str_or_empty(ow->why));
                else
                        evidence(fd, _("NVML lists PID %u: %s"), ow->pid, str_or_empty(ow->why));
        }
}

/* What keeps this scan from seeing every holder, most fundamental first. */
enum visibility { VIS_FULL = 0, VIS_NOT_ROOT, VIS_NOT_INITIAL, VIS_LIMITS };

static enum visibility visibility_of(const struct host_report *h)
{
        if (!h || h->euid != 0)
                return VIS_NOT_ROOT;
        if (!h->initial_pidns)
                return VIS_NOT_INITIAL;
        return h->n_limits ? VIS_LIMITS : VIS_FULL;
}

/* The next step when a holder may be out of sight, by what hides it. */
static void look_further(struct finding *fd, enum visibility v, unsigned index)
{
        switch (v) {
        case VIS_NOT_ROOT:
                next_step(fd, _("other users' processes are out of sight: run `sudo ghostvram scan --gpu %u` before anything else (never reset a GPU on this view)"),
                          index);
                break;
        case VIS_NOT_INITIAL:
                next_step(fd, _("processes outside this PID namespace are out of sight: run on the host (or a pod with hostPID: true / docker --pid=host): `sudo ghostvram scan --gpu %u`"),
                          index);
                break;
        default:
                next_step(fd, _("some processes could not be inspected: `ghostvram scan --gpu %u --verbose` lists what (a task stuck in the driver, a deadline); then `ghostvram xid`"),
                          index);
                break;
        }
}

static void partial_evidence(struct finding *fd, enum visibility v)
{
        if (v == VIS_NOT_ROOT)
                evidence(fd, _("not root: other users' descriptors are unreadable, a holder may be out of sight"));
        else if (v == VIS_NOT_INITIAL)
                evidence(fd, _("not in the initial PID namespace: processes outside it are out of sight"));
        else if (v == VIS_LIMITS)
                evidence(fd, _("visibility is partial (see limits): a holder may be out of sight"));
}

/* An unattributed CUDA process (nvidia-uvm) holding this GPU's node that is no live owner: no
 * link names it, yet it may hold the ghost (a worker tied to a live job of another GPU). */
static bool unlinked_cuda_holder(const struct scan_result *res, const struct gpu_ledger *l, const struct gpu_info *g,
                                 const struct ledger_opts *o, size_t i)
{
        const struct host_proc *hp = &res->facts->host->holders[i];
        return hp->pid != o->self_pid && !attributed_here(l, i) && holds_uvm(hp) && !gpu_daemon_of(hp) &&
               !ledger_is_live_owner(res, hp->pid) && ledger_holds_gpu_node(hp, g, NULL);
}

static unsigned count_unlinked_cuda(const struct scan_result *res, const struct gpu_ledger *l, const struct gpu_info *g,
                                    const struct ledger_opts *o)
{
        unsigned n = 0;
        for (size_t i = 0; res->facts->host && i < res->facts->host->n_holders; i++)
                n += unlinked_cuda_holder(res, l, g, o, i);
        return n;
}

/* Why no orphan rule names them: unlinked CUDA processes that also hold the node of a GPU that
 * gives no process list, whose live job each may be. */
static void blind_evidence(struct finding *fd, const struct scan_result *res, const struct gpu_ledger *l,
                           const struct gpu_info *g, const struct ledger_opts *o)
{
        const struct gpu_ledger *b = NULL;
        unsigned n = 0;
        for (size_t i = 0; res->facts->host && i < res->facts->host->n_holders; i++) {
                const struct gpu_ledger *bi =
                        unlinked_cuda_holder(res, l, g, o, i) ? blind_gpu(res, &res->facts->host->holders[i]) : NULL;
                if (bi && !n++)
                        b = bi;
        }
        if (b)
                evidence(fd, P_("GPU %u gives no process list and %u unlinked CUDA process holds its node too: each may be that GPU's live job, so only a link by number ties one to the dead owner",
                                "GPU %u gives no process list and %u unlinked CUDA processes hold its node too: each may be that GPU's live job, so only a link by number ties one to the dead owner",
                                n),
                         b->index, n);
}

/* Holders of this GPU's node that are not attributed (daemons, monitors, CUDA processes no link
 * names): a reset waits for them. Named as such, never as holders of the ghost. */
static void reset_blockers(struct finding *fd, const struct scan_result *res, const struct gpu_ledger *l,
                           const struct gpu_info *g, const struct ledger_opts *o)
{
        const struct host_report *h = res->facts->host;
        unsigned n = 0;
        for (size_t i = 0; h && i < h->n_holders && n < 4; i++) {
                const struct host_proc *hp = &h->holders[i];
                if (hp->pid == o->self_pid || attributed_here(l, i) || !ledger_holds_gpu_node(hp, g, NULL))
                        continue;
                const struct gpu_daemon *d = gpu_daemon_of(hp);
                if (d && strcmp(d->kind, "ghostvram") == 0)
                        continue;
                pid_t live = 0;
                const char *what = NULL;
                enum job_tie tie = ledger_live_tie(res, hp, NULL, &live, &what);
                if (d)
                        evidence(fd, _("PID %d (%s, a %s) holds /dev/nvidia%u but not the ghost; a GPU reset needs it stopped: %s"),
                                 (int)hp->pid, hp->comm ? hp->comm : "?", _(d->kind), g->minor, _(d->stop));
                else if (ledger_is_live_owner(res, hp->pid))
                        evidence(fd, _("PID %d (%s), a live owner, holds /dev/nvidia%u: a GPU reset needs it gone"),
                                 (int)hp->pid, hp->comm ? hp->comm : "?", g->minor);
                else if (holds_uvm(hp) && tie != JOB_TIE_NONE)
                        evidence(fd, _("PID %d (%s) holds /dev/nvidia%u and nvidia-uvm with no link to the dead owner (%s of live PID %d): it may hold the ghost; a GPU reset needs it gone"),
                                 (int)hp->pid, hp->comm ? hp->comm : "?", g->minor,
                                 tie == JOB_TIE_PARENT ? _("a child") : tie_noun(tie, what), (int)live);
                else if (holds_uvm(hp))
                        evidence(fd, _("PID %d (%s) holds /dev/nvidia%u and nvidia-uvm with no link to the dead owner: it may hold the ghost; a GPU reset needs it gone"),
                                 (int)hp->pid, hp->comm ? hp->comm : "?", g->minor);
                else
                        evidence(fd, _("PID %d (%s) holds /dev/nvidia%u without nvidia-uvm (a monitor?); a GPU reset needs it gone"),
                                 (int)hp->pid, hp->comm ? hp->comm : "?", g->minor);
                n++;
        }
}

/* Would reclaim take attribution a by default (docs/reclaim.md)? The site policy and the
 * ancestors are reclaim's to check; this is what the scan can tell. */
bool ledger_default_target(const struct facts *f, const struct attribution *a, const char **ret_why)
{
        const struct host_proc *hp = &f->host->holders[a->holder];
        if (a->candidate)
                *ret_why = _("it holds several GPUs with a ghost");
        else if (a->confidence < CONF_MEDIUM)
                *ret_why = _("the link is weak");
        else if (a->tie != JOB_TIE_NONE)
                *ret_why = _("it is tied to a live owner");
        else if (!a->proof)
                *ret_why = a->link == LINK_ELIMINATION ? _("it is tied by elimination only") : _("the link is weak");
        else if (!holds_uvm(hp) && a->link != LINK_FAMILY)
                *ret_why = _("it holds no nvidia-uvm");
        else if (hp->n_nspid > 1 && hp->nspid[hp->n_nspid - 1] == 1)
                *ret_why = _("it is a container's init");
        else
                return true;
        return false;
}

/* PIDs as text, for evidence and next steps: every one of them (a command that names some
 * would leave the rest holding the memory). Append pid, after sep unless it is the first. */
static void pid_text_add(struct buf *t, const char *sep, pid_t pid)
{
        buf_printf(t, "%s%d", t->len ? sep : "", (int)pid);
}

/* A CUDA process in sight that holds g's node, is listed on no GPU, is tied to no live listed job,
 * is not attributed to another GPU's dead job and cannot be the live job of a GPU without a
 * process list: the only explanation left for it is g's memory (a job the driver's list missed
 * here, or a dead job's worker). */
static bool unexplained_cuda_holder(const struct scan_result *res, const struct gpu_ledger *l, const struct gpu_info *g,
                                    const struct ledger_opts *o, size_t i)
{
        const struct host_proc *hp = &res->facts->host->holders[i];
        if (!unlinked_cuda_holder(res, l, g, o, i) || ledger_live_tie(res, hp, NULL, NULL, NULL) != JOB_TIE_NONE ||
            blind_gpu(res, hp))
                return false;
        for (size_t k = 0; k < res->n_gpus; k++)
                if (attributed_here(&res->gpus[k], i))
                        return false; /* a dead job's on another GPU */
        return true;
}

/* Not in the initial PID namespace, nothing listed alive, memory used: the driver drops the owners
 * it cannot show here, so they are likely out of sight. Unless CUDA processes in sight have no
 * other explanation than this GPU (unexplained_cuda_holder): then it is unknown which, and both
 * are said. */
static void invisible_here(const struct scan_result *res, struct gpu_ledger *l, const struct gpu_info *g,
                           const struct ledger_opts *o)
{
        const struct host_report *h = res->facts->host;
        unsigned here = 0;
        for (size_t i = 0; h && i < h->n_holders; i++)
                here += unexplained_cuda_holder(res, l, g, o, i);
        if (!here) {
                struct finding *iv = add_finding(l, VERDICT_INVISIBLE, CONF_MEDIUM, l->unattributed);
                headline(iv, _("%llu MiB used by processes this PID namespace cannot see"), mib(l->unattributed + l->ghost));
                evidence(iv, _("not in the initial PID namespace, and the driver drops owners that are not visible here"));
                next_step(iv, _("run on the host (or a pod with hostPID: true / docker --pid=host): `sudo ghostvram scan --gpu %u`"), l->index);
                return;
        }
        struct finding *fd = add_finding(l, VERDICT_UNKNOWN, CONF_LOW, l->unattributed + l->ghost);
        headline(fd, P_("%llu MiB used and nothing listed: held out of sight of this PID namespace, or by the %u CUDA process here that holds the GPU unlisted",
                        "%llu MiB used and nothing listed: held out of sight of this PID namespace, or by one of the %u CUDA processes here that hold the GPU unlisted",
                        here),
                 mib(l->unattributed + l->ghost), here);
        evidence(fd, _("not in the initial PID namespace, and the driver drops owners that are not visible here"));
        for (size_t i = 0; h && i < h->n_holders; i++) {
                const struct host_proc *hp = &h->holders[i];
                if (!unexplained_cuda_holder(res, l, g, o, i))
                        continue;
                finding_pid(fd, hp->pid);
                evidence(fd, _("PID %d (%s) holds /dev/nvidia%u and nvidia-uvm, is listed on no GPU and tied to no listed job"),
                         (int)hp->pid, hp->comm ? hp->comm : "?", g->minor);
        }
        next_step(fd, _("scan again in a minute (`ghostvram scan --gpu %u`); if it stays, run on the host (or a pod with hostPID: true / docker --pid=host): `sudo ghostvram scan --gpu %u`"),
                  l->index, l->index);
}

/* What the steps of explain_gpu share about one GPU. */
struct explain {
        const struct facts *now, *before;
        const struct ledger_opts *o;
        struct scan_result *res;
        struct gpu_ledger *l;
        const struct gpu_info *g;
        const struct host_report *h;
        enum visibility vis;
        const char *ref, *ref_note; /* the GPU as nvidia-smi -i takes it, and what that ref is */
};

static void explain_lost(const struct explain *x, const struct xid_event *lost)
{
        struct gpu_ledger *l = x->l;
        const struct gpu_info *g = x->g;
        struct finding *fd = add_finding(l, VERDICT_GPU_LOST, g->status == GPU_LOST ? CONF_HIGH : CONF_MEDIUM, l->used);
        headline(fd, _("GPU is lost: the driver cannot reach it (fallen off the bus)"));
        evidence(fd, _("NVML: %s"), g->status_message[0] ? g->status_message : "GPU_IS_LOST");
        if (lost) {
                char when[40];
                event_when(lost, when, sizeof(when));
                evidence(fd, _("kernel: Xid 79 (GPU has fallen off the bus) at %s, after the driver's load"), when);
        }
        next_step(fd, _("drain the node and reboot it; a GPU reset does not bring back a lost GPU (`ghostvram xid explain 79`)"));
}

static void explain_uninspected(const struct explain *x)
{
        const struct gpu_info *g = x->g;
        struct finding *fd = add_finding(x->l, VERDICT_UNKNOWN, CONF_LOW, 0);
        headline(fd, _("could not inspect this GPU"));
        evidence(fd, "%s", g->status_message[0] ? g->status_message : _("memory figures not available"));
        for (size_t e = 0; e < g->n_errors && e < 3; e++)
                evidence(fd, _("query %s: %s"), g->errors[e].query, g->errors[e].message);
        next_step(fd, _("check the driver with `nvidia-smi -q -i %s`%s and the kernel log (`ghostvram xid`); re-run with --call-timeout 30s"),
                  x->ref, x->ref_note);
}

/* a MIG GPU's own lists are the aggregate of its instances only for a privileged caller
 * (nvml.h): NO_PERMISSION, or an empty list, for anyone else */
static void explain_mig_unlisted(const struct explain *x)
{
        struct gpu_ledger *l = x->l;
        const struct gpu_info *g = x->g;
        const struct host_report *h = x->h;
        struct finding *fd = add_finding(l, VERDICT_UNKNOWN, CONF_LOW, l->used);
        headline(fd, _("%llu MiB used on a MIG GPU, but NVML gives its process list only to a privileged caller: whose it is cannot be told"),
                 mib(l->used));
        for (size_t e = 0; e < g->n_errors && e < 3; e++)
                if (e == 0 || strcmp(g->errors[e].message, g->errors[e - 1].message) != 0)
                        evidence(fd, _("query %s: %s"), g->errors[e].query, g->errors[e].message);
        evidence(fd, _("MIG mode: the GPU's own process lists cover its instances only for root or a holder of the mig/monitor capability (/dev/nvidia-caps/nvidia-cap2)%s"),
                 h && h->euid != 0 ? _("; this scan does not run as root") : "");
        for (size_t m = 0; m < l->n_mig; m++)
                if (l->mig[m].memory_known && l->mig[m].used)
                        evidence(fd, _("MIG GPU instance %u (compute instance %u): %llu MiB used of %llu MiB"),
                                 l->mig[m].gpu_instance, l->mig[m].compute_instance, mib(l->mig[m].used),
                                 mib(l->mig[m].total));
        next_step(fd, _("re-run as root: `sudo ghostvram scan --gpu %u`; nothing is reclaimed on this GPU without a process list"),
                  g->index);
}

static void explain_unlisted(const struct explain *x)
{
        struct gpu_ledger *l = x->l;
        const struct gpu_info *g = x->g;
        struct finding *fd = add_finding(l, VERDICT_UNKNOWN, CONF_LOW, l->used);
        headline(fd, _("%llu MiB used, but NVML gives no process list for this GPU: whose it is cannot be told"),
                 mib(l->used));
        bool said = false;
        for (size_t e = 0; e < g->n_errors && e < 3; e++)
                if (strcmp(g->errors[e].query, "processes") == 0) {
                        evidence(fd, _("query processes: %s"), g->errors[e].message);
                        said = true;
                }
        if (!said)
                evidence(fd, _("the process list was not available"));
        evidence(fd, _("GeForce boards, some vGPU profiles and old drivers do not report processes; a hung driver does not answer"));
        next_step(fd, _("nothing is reclaimed on this GPU without a process list; `sudo fuser -v /dev/nvidia%u` shows who holds its node, and `ghostvram xid` the driver's side"),
                  g->minor);
}

/* a listed owner runs, but no node of the GPU is where we look: neither "stale" nor "ok" can be
 * told */
static void explain_holders_unseen(const struct explain *x)
{
        struct gpu_ledger *l = x->l;
        struct finding *fd = add_finding(l, VERDICT_UNKNOWN, CONF_LOW, l->used);
        headline(fd, _("%llu MiB used by listed processes that are alive, but who holds the GPU cannot be seen"),
                 mib(l->used));
        evidence(fd, _("no device node of this GPU (nvidia%u, nvidia-uvm) under the device prefix: a holder cannot be seen"),
                 x->g->minor);
        next_step(fd, _("run without --dev-prefix, or give the prefix its nodes are under (e.g. /dev/nvidia)"));
}

/* The verdicts that leave nothing more to say of a GPU: lost, not inspected, no process list,
 * its holders out of sight. True when one was given. */
static bool explain_blocked(const struct explain *x, const struct xid_event *lost)
{
        const struct gpu_ledger *l = x->l;
        const struct gpu_info *g = x->g;
        /* Xid 79 means lost only if it came after the driver's load and NVML does not answer normally */
        if (g->status == GPU_LOST || (lost && g->status != GPU_OK))
                explain_lost(x, lost);
        else if (!l->inspected)
                explain_uninspected(x);
        else if (!l->procs_known && g->mig_mode == 1)
                explain_mig_unlisted(x);
        else if (!l->procs_known)
                explain_unlisted(x);
        else if (l->holders_unseen)
                explain_holders_unseen(x);
        else
                return false;
        return true;
}

/* A task holding the GPU stuck in the driver: its finding, and whether there is one. */
static bool explain_stuck(const struct explain *x)
{
        struct finding *stuck = NULL;
        find_stuck(x->now, x->before, x->o, x->l, &stuck);
        if (!stuck)
                return false;
        headline(stuck, "%s", stuck->confidence == CONF_LOW
                                      ? _("suspect: a task holding this GPU is stuck in the driver (one sample)")
                                      : _("stuck: a task holding this GPU is stuck in the driver"));
        next_step(stuck, _("a stuck task exits only when its driver call returns: look at `cat /proc/%d/stack` and `ghostvram xid`; if it stays, reset the GPU (`sudo nvidia-smi --gpu-reset -i %s`%s) or reboot"),
                  (int)stuck->pids[0], x->ref, x->ref_note);
        return true;
}

/* The dead owners the attributed holders are tied to, each counted once. */
static size_t dead_jobs(const struct gpu_ledger *l)
{
        size_t jobs = 0;
        for (size_t a = 0; a < l->n_attr; a++) {
                bool seen = false;
                for (size_t b = 0; b < a && !seen; b++)
                        seen = l->attr[b].to_pid == l->attr[a].to_pid;
                jobs += !seen;
        }
        return jobs;
}

/* The orphans' PIDs on fd, and the next step: reclaim's default, or each process checked first
 * when one of them is no default target. */
static void orphaned_next_step(const struct explain *x, struct finding *fd)
{
        const struct gpu_ledger *l = x->l;
        struct buf pl = BUF_INIT(0), pp = BUF_INIT(0);
        const char *why = NULL;
        bool all_default = true;
        for (size_t a = 0; a < l->n_attr; a++) {
                const struct host_proc *hp = &x->h->holders[l->attr[a].holder];
                finding_pid(fd, hp->pid); /* the links are in the processes, with each holder */
                pid_text_add(&pl, " ", hp->pid);
                pid_text_add(&pp, ",", hp->pid);
                const char *wy = NULL;
                if (!ledger_default_target(x->now, &l->attr[a], &wy)) {
                        all_default = false;
                        if (!why)
                                why = wy;
                }
        }
        if (l->freed_bytes)
                evidence(fd, _("used fell by %llu MiB between the samples: part of it is being freed"), mib(l->freed_bytes));
        if (all_default)
                next_step(fd, _("free it safely (each process re-checked, signalled through a pidfd, the memory measured): `sudo ghostvram reclaim --gpu %u` shows the plan, add --yes to act (by hand: kill -TERM %s)"),
                          l->index, buf_str(&pl));
        else
                next_step(fd, _("check each process first (%s, so reclaim does not end it by default); then `sudo ghostvram reclaim --gpu %u --pid %s` shows the plan, add --yes to act"),
                          why ? why : _("not a default target"), l->index, buf_str(&pp));
        buf_free(&pl);
        buf_free(&pp);
}

/* A confirmed ghost that links name the holders of. */
static struct finding *explain_orphaned(const struct explain *x)
{
        struct gpu_ledger *l = x->l;
        enum confidence c = CONF_HIGH;
        for (size_t a = 0; a < l->n_attr; a++)
                if (l->attr[a].confidence < c)
                        c = l->attr[a].confidence;
        struct finding *fd = add_finding(l, VERDICT_ORPHANED, c, l->ghost);
        size_t jobs = dead_jobs(l);
        if (jobs > 1)
                headline(fd, _("%llu MiB ghost held by %zu orphaned processes of %zu dead jobs"), mib(l->ghost),
                         l->n_attr, jobs);
        else
                headline(fd, P_("%llu MiB ghost held by %zu orphaned process of a dead job",
                                "%llu MiB ghost held by %zu orphaned processes of a dead job", l->n_attr),
                         mib(l->ghost), l->n_attr);
        stale_evidence(fd, l);
        orphaned_next_step(x, fd);
        return fd;
}

/* The holders of the earlier sample that hold nothing now (eight named at most). */
static void gone_holders_evidence(struct finding *fd, const struct gpu_ledger *l)
{
        struct buf gl = BUF_INIT(0);
        size_t shown = l->n_gone_holders < 8 ? l->n_gone_holders : 8;
        for (size_t k = 0; k < shown; k++)
                pid_text_add(&gl, ", ", l->gone_holders[k]);
        evidence(fd, P_("PID %s%s held it in the earlier sample and holds nothing now: the driver frees a "
                        "context after its last holder goes",
                        "PIDs %s%s held it in the earlier sample and hold nothing now: the driver frees a "
                        "context after its last holder goes", l->n_gone_holders),
                 buf_str(&gl), l->n_gone_holders > shown ? _(" and more") : "");
        buf_free(&gl);
}

/* Memory no process holds that the driver is still releasing. */
static struct finding *explain_freeing(const struct explain *x)
{
        struct gpu_ledger *l = x->l;
        struct finding *fd = add_finding(l, VERDICT_FREEING, CONF_MEDIUM, l->freeing_bytes);
        headline(fd, _("%llu MiB still being released by the driver"), mib(l->freeing_bytes));
        stale_evidence(fd, l);
        if (l->freed_bytes)
                evidence(fd, l->freed_bytes < MIB ? _("used fell by %llu MiB between the two samples (less than 1 MiB: a slow teardown)")
                                                  : _("used fell by %llu MiB between the two samples"),
                         mib(l->freed_bytes));
        for (size_t k = 0; k < l->n_owners; k++) {
                const struct pid_fact *pf = facts_pid(x->now, l->owners[k].pid);
                if (pf && pf->present && pf->proc.exiting && !strchr("DZX", pf->proc.state))
                        evidence(fd, _("the owner PID %u is exiting: the driver is tearing its context down"), l->owners[k].pid);
        }
        if (l->n_gone_holders)
                gone_holders_evidence(fd, l);
        evidence(fd, _("no process holds it: not a ghost while it keeps falling"));
        next_step(fd, _("nothing to do yet: re-run `ghostvram scan --gpu %u` in a minute; if it stops falling, it is a ghost"), l->index);
        return fd;
}

/* a daemon that keeps a dead client's memory (MPS server, display server): its finding, or NULL
 * when none holds the GPU */
static struct finding *ghost_daemons(const struct explain *x)
{
        struct gpu_ledger *l = x->l;
        const struct gpu_info *g = x->g;
        const struct host_report *h = x->h;
        struct finding *fd = NULL;
        for (size_t i = 0; h && i < h->n_holders; i++) {
                const struct gpu_daemon *d = gpu_daemon_of(&h->holders[i]);
                if (!d || !d->holds_memory || !ledger_holds_gpu_node(&h->holders[i], g, NULL))
                        continue;
                if (!fd) {
                        fd = add_finding(l, VERDICT_DAEMON, CONF_LOW, l->ghost);
                        headline(fd, _("%llu MiB ghost; no orphan found, but a daemon that can keep client memory holds the GPU"),
                                 mib(l->ghost));
                        stale_evidence(fd, l);
                }
                finding_pid(fd, h->holders[i].pid);
                evidence(fd, _("PID %d (%s) is a %s holding /dev/nvidia%u; it can keep a dead client's memory"),
                         (int)h->holders[i].pid, h->holders[i].comm ? h->holders[i].comm : "?", _(d->kind), g->minor);
                if (str_empty(fd->next_step) || strcmp(d->kind, "MPS") == 0)
                        next_step(fd, _("%s; then `ghostvram scan --gpu %u`"), _(d->stop), l->index);
        }
        return fd;
}

static void stale_headline(const struct explain *x, struct finding *fd, unsigned unlinked)
{
        const struct gpu_ledger *l = x->l;
        enum visibility vis = x->vis;
        if (unlinked)
                headline(fd, P_("%llu MiB ghost: NVML lists a dead process; %u CUDA process holds the GPU with no link to it",
                                "%llu MiB ghost: NVML lists a dead process; %u CUDA processes hold the GPU with no link to it",
                                unlinked),
                         mib(l->ghost), unlinked);
        else if (vis == VIS_FULL)
                headline(fd, _("%llu MiB ghost: NVML lists a dead process and nothing here holds the GPU"), mib(l->ghost));
        else
                headline(fd, vis == VIS_NOT_ROOT ? _("%llu MiB ghost: NVML lists a dead process and no holder is visible to this user")
                             : vis == VIS_NOT_INITIAL ? _("%llu MiB ghost: NVML lists a dead process and no holder is visible in this PID namespace")
                                                      : _("%llu MiB ghost: NVML lists a dead process and no holder is visible (partial visibility)"),
                         mib(l->ghost));
}

static void stale_next_step(const struct explain *x, struct finding *fd, unsigned unlinked)
{
        const struct gpu_ledger *l = x->l;
        if (unlinked) {
                reset_blockers(fd, x->res, l, x->g, x->o);
                next_step(fd, _("look at the CUDA processes named above first (`ghostvram scan --gpu %u --verbose`): if one belongs to the dead job, `sudo ghostvram reclaim --gpu %u --pid PID` ends it; a GPU reset would need them all gone"),
                          l->index, l->index);
        } else if (x->vis == VIS_FULL) {
                reset_blockers(fd, x->res, l, x->g, x->o);
                next_step(fd, _("the driver has not finished tearing the context down: wait a minute and re-run `ghostvram scan --gpu %u`; if it stays, check `ghostvram xid` and try the poke (a new context; some drivers then finish the teardown): `sudo ghostvram reclaim --poke --gpu %u` shows what it does, add --yes to run it; if nothing changes, reset the GPU: `sudo nvidia-smi --gpu-reset -i %s`%s"),
                          l->index, l->index, x->ref, x->ref_note);
        } else {
                look_further(fd, x->vis, l->index);
        }
}

/* A confirmed ghost that NVML charges to a dead listed process no holder is linked to. */
static struct finding *ghost_stale(const struct explain *x, unsigned unlinked)
{
        struct gpu_ledger *l = x->l;
        enum visibility vis = x->vis;
        enum confidence c = vis == VIS_FULL && !unlinked ? CONF_HIGH : vis == VIS_NOT_ROOT ? CONF_LOW : CONF_MEDIUM;
        struct finding *fd = add_finding(l, VERDICT_STALE, c, l->ghost);
        stale_headline(x, fd, unlinked);

        /* why the headline's CUDA processes have no link, before the list of dead PIDs */
        blind_evidence(fd, x->res, l, x->g, x->o);
        stale_evidence(fd, l);
        evidence(fd, _("no visible process holds /dev/nvidia%u with a link to the dead owner"), x->g->minor);
        for (size_t k = 0; k < l->n_owners; k++)
                if (l->owners[k].cls == OWNER_STALE && l->owners[k].out_of_sight)
                        evidence(fd, P_("%u process in dead PID %u's process group or session cannot be inspected by this user: likely the holders",
                                        "%u processes in dead PID %u's process group or session cannot be inspected by this user: likely the holders",
                                        l->owners[k].out_of_sight),
                                 l->owners[k].out_of_sight, l->owners[k].pid);
        partial_evidence(fd, vis);
        stale_next_step(x, fd, unlinked);
        return fd;
}

static struct finding *ghost_driver_leak(const struct explain *x)
{
        struct gpu_ledger *l = x->l;
        struct finding *fd = add_finding(l, VERDICT_DRIVER_LEAK, CONF_MEDIUM, l->ghost);
        headline(fd, _("%llu MiB used with no owner and no holder: held by the driver"), mib(l->ghost));
        evidence(fd, _("no live owner, no process holds an NVIDIA device node for it, no task stuck in the driver"));
        evidence(fd, _("full visibility: initial PID namespace, root, nothing hidden"));
        reset_blockers(fd, x->res, l, x->g, x->o);
        next_step(fd, _("first try the poke (a new context; some drivers then finish a dead one's teardown): `sudo ghostvram reclaim --poke --gpu %u` shows what it does, add --yes to run it; if nothing changes, only a GPU reset or a module reload frees it: stop GPU users (and nvidia-persistenced), then `sudo nvidia-smi --gpu-reset -i %s`%s"),
                  l->index, x->ref, x->ref_note);
        return fd;
}

static struct finding *ghost_unlinked(const struct explain *x, unsigned unlinked)
{
        struct gpu_ledger *l = x->l;
        struct finding *fd = add_finding(l, VERDICT_UNKNOWN, CONF_LOW, l->ghost);
        headline(fd, P_("%llu MiB unexplained; %u CUDA process holds the GPU with no link to a dead owner",
                        "%llu MiB unexplained; %u CUDA processes hold the GPU with no link to a dead owner", unlinked),
                 mib(l->ghost), unlinked);

        evidence(fd, _("not a driver leak while a CUDA process holds the GPU's node"));
        blind_evidence(fd, x->res, l, x->g, x->o);
        partial_evidence(fd, x->vis);
        reset_blockers(fd, x->res, l, x->g, x->o);
        next_step(fd, _("look at the CUDA processes named above (`ghostvram scan --gpu %u --verbose`): if one is a dead job's, `sudo ghostvram reclaim --gpu %u --pid PID` ends it"),
                  l->index, l->index);
        return fd;
}

static struct finding *ghost_out_of_sight(const struct explain *x)
{
        struct gpu_ledger *l = x->l;
        struct finding *fd = add_finding(l, VERDICT_UNKNOWN, CONF_LOW, l->ghost);
        headline(fd, _("%llu MiB unexplained and no holder in sight (partial visibility)"), mib(l->ghost));
        evidence(fd, _("not a driver leak: part of the host is out of sight"));
        partial_evidence(fd, x->vis);
        reset_blockers(fd, x->res, l, x->g, x->o);
        look_further(fd, x->vis, l->index);
        return fd;
}

/* A confirmed ghost no link explains: a daemon, a dead listed owner, the driver, unlinked CUDA
 * processes or what is out of sight; NULL when a stuck task is the only explanation. */
static struct finding *explain_ghost(const struct explain *x, bool stuck)
{
        struct finding *fd = ghost_daemons(x);
        bool stale = has_owner(x->l, OWNER_STALE);
        unsigned unlinked = count_unlinked_cuda(x->res, x->l, x->g, x->o);
        if (!fd && stale)
                fd = ghost_stale(x, unlinked);
        else if (!fd && !stuck && x->vis == VIS_FULL && !unlinked)
                fd = ghost_driver_leak(x);
        else if (!fd && !stuck && unlinked)
                fd = ghost_unlinked(x, unlinked);
        else if (!fd && !stuck)
                fd = ghost_out_of_sight(x);
        return fd;
}

/* What a dead job's finding leaves unexplained: the bytes no listed PID held. */
static void beyond_dead_evidence(struct finding *fd, const struct gpu_ledger *l)
{
        if (!fd || !l->ghost_evidence || l->unattributed == 0 ||
            (fd->verdict != VERDICT_ORPHANED && fd->verdict != VERDICT_STALE))
                return;
        if (!l->reserved_known)
                evidence(fd, _("%llu MiB more are used than the dead PIDs held: likely the driver's reservation (this driver's v1 memory query counts it as used)"),
                         mib(l->unattributed));
        else
                evidence(fd, _("%llu MiB more are used than the dead PIDs held: charged to no process (managed memory, kernel clients)"),
                         mib(l->unattributed));
}

/* The findings beside the main one: owners out of sight of this PID namespace, in other PID
 * namespaces, bytes charged to no process while jobs run, an old driver's reservation. */
static void explain_aside(const struct explain *x)
{
        struct gpu_ledger *l = x->l;
        bool no_live = l->no_live_owner;
        bool initial = x->h && x->h->initial_pidns;
        if (!initial && x->now->gpu->pid_mode != GPU_PID_HOST && no_live && l->unattributed + l->ghost > l->noise_floor &&
            l->unexplained_steady && !l->ghost_confirmed && !l->freeing)
                invisible_here(x->res, l, x->g, x->o);
        if (l->foreign > 0) {
                struct finding *ff = add_finding(l, VERDICT_FOREIGN, CONF_MEDIUM, l->foreign);
                headline(ff, _("%llu MiB owned by processes in other PID namespaces"), mib(l->foreign));
                for (size_t k = 0; k < l->n_owners; k++)
                        if (l->owners[k].cls == OWNER_FOREIGN) {
                                finding_pid(ff, (pid_t)l->owners[k].pid);
                                evidence(ff, _("NVML lists PID %u: %s"), l->owners[k].pid, str_or_empty(l->owners[k].why));
                        }
                next_step(ff, _("not a leak; to name them, run on the host: `sudo ghostvram scan --gpu %u`"), l->index);
        }
        if (l->unattributed > l->noise_floor && !no_live) {
                struct finding *uf = add_finding(l, VERDICT_UNATTRIBUTED, CONF_MEDIUM, l->unattributed);
                headline(uf, _("%llu MiB not charged to any listed process while jobs run"), mib(l->unattributed));
                evidence(uf, _("live owners exist and nothing points to a dead one"));
                evidence(uf, _("NVML does not charge managed (UVM) memory or kernel clients to a process"));
                next_step(uf, _("nothing to do: this is not a leak. If it grows while the jobs stay the same, watch it: `ghostvram scan --gpu %u --json`"), l->index);
        }
        if (!l->reserved_known && l->n_owners == 0 && !l->ghost_confirmed) {
                struct finding *rf = add_finding(l, VERDICT_RESERVED_ONLY, CONF_MEDIUM, l->used);
                headline(rf, _("%llu MiB used on an idle GPU: the driver's own reservation (old driver)"), mib(l->used));
                evidence(rf, _("this driver has only the v1 memory query, whose used figure includes the driver's reservation"));
                next_step(rf, _("nothing to do; a driver of the R510 series or later reports the reservation apart"));
        }
}

/* The kernel's evidence on the main finding and the stuck task's, then "ok" when nothing (or
 * only a one-sample suspect) was found. */
static void explain_close(const struct explain *x, bool old_lost)
{
        struct gpu_ledger *l = x->l;
        /* findings may have moved (realloc) since they were added: look them up again */
        struct finding *main_fd = NULL, *stuck = NULL;
        for (size_t k = 0; k < l->n_findings; k++) {
                if (l->findings[k].verdict == VERDICT_STUCK)
                        stuck = &l->findings[k];
                else if (!main_fd)
                        main_fd = &l->findings[k];
        }
        kernel_evidence(x->now, l, x->g, main_fd, stuck);
        /* nothing found but (maybe) a one-sample suspect: the GPU is fine; the sort puts ok first */
        if (l->n_findings == 0 || (stuck && l->n_findings == 1 && stuck->confidence == CONF_LOW)) {
                struct finding *ok = add_finding(l, VERDICT_OK, CONF_HIGH, 0);
                if (!l->ghost)
                        headline(ok, _("every byte accounted for"));
                else if (l->ghost <= l->noise_floor)
                        headline(ok, _("no ghost: %llu MiB unexplained, below the noise floor (%llu MiB)"), mib(l->ghost),
                                 mib(l->noise_floor));
                else
                        headline(ok, _("no ghost yet: %llu MiB unexplained, not in the earlier sample"), mib(l->ghost));
                next_step(ok, _("nothing to do"));
        }
        if (old_lost)
                evidence(&l->findings[l->n_findings - 1], _("kernel: an Xid 79 for this GPU predates the current driver load: history; NVML answers now"));
}

/* The findings of one GPU: a verdict that leaves nothing more to say, else a stuck task, the
 * main verdict (orphaned, freeing, or a ghost no link explains), the findings beside it, the
 * kernel's evidence and "ok". */
static void explain_gpu(const struct facts *now, const struct facts *before, const struct ledger_opts *o,
                        struct scan_result *res, struct gpu_ledger *l, const struct gpu_info *g)
{
        struct explain x = {
                .now = now, .before = before, .o = o, .res = res, .l = l, .g = g, .h = now->host,
                .vis = visibility_of(now->host), .ref = l->gpu_ref,
                .ref_note = g->pci_bus_id[0] ? "" : g->uuid[0] ? _(" (by UUID: the PCI bus id is not known)")
                                                                : _(" (by index: neither PCI bus id nor UUID is known)"),
        };
        bool old_lost;
        const struct xid_event *lost = lost_event(now, g, &old_lost);
        l->xid_paging = xid_recent_worst(now->kernel.ev, now->kernel.n, g, now->kernel_this_host, x.ref,
                                         now->gpu->sample_time, o->xid_window_s, &l->xid);
        if (explain_blocked(&x, lost))
                return;
        bool stuck = explain_stuck(&x);
        struct finding *fd = NULL;
        if (l->ghost_confirmed && l->n_attr)
                fd = explain_orphaned(&x);
        else if (l->freeing)
                fd = explain_freeing(&x);
        else if (l->ghost_confirmed)
                fd = explain_ghost(&x, stuck);
        beyond_dead_evidence(fd, l);
        explain_aside(&x);
        explain_close(&x, old_lost);
}

static int finding_cmp(const void *a, const void *b)
{
        const struct finding *x = a, *y = b;
        /* a one-sample suspicion of a stuck task does not outrank a confirmed finding */
        int rx = (int)x->verdict, ry = (int)y->verdict;
        if (x->verdict == VERDICT_STUCK && x->confidence == CONF_LOW)
                rx = VERDICT_COUNT;
        if (y->verdict == VERDICT_STUCK && y->confidence == CONF_LOW)
                ry = VERDICT_COUNT;
        return rx - ry;
}

static const struct gpu_ledger *ledger_of(const struct scan_result *r, unsigned index)
{
        for (size_t i = 0; r && i < r->n_gpus; i++)
                if (r->gpus[i].index == index && r->gpus[i].inspected)
                        return &r->gpus[i];
        return NULL;
}

/* Step 1 of ledger_build for GPU g: its figures, noise floor and every listed process. */
static int list_owners(const struct facts *now, const struct ledger_opts *o, const struct gpu_info *g,
                       struct gpu_ledger *l)
{
        l->index = g->index;
        l->inspected = g->memory_known && g->status == GPU_OK;
        l->procs_known = g->procs_known;
        l->used = g->used_bytes;
        l->total = g->total_bytes;
        l->reserved = g->reserved_bytes;
        l->reserved_known = g->memory_api == 2;
        gpu_info_ref(g, l->gpu_ref, sizeof(l->gpu_ref));
        uint64_t pf = g->total_bytes / 1000 * o->floor_permille;
        l->noise_floor = pf > o->floor_min_bytes ? pf : o->floor_min_bytes;
        if (g->n_procs) {
                l->owners = calloc(g->n_procs, sizeof(*l->owners));
                if (!l->owners)
                        return -ENOMEM;
        }
        for (size_t k = 0; k < g->n_procs; k++) {
                classify_owner(now, g, &g->procs[k], &l->owners[l->n_owners]);
                l->holders_unseen |= l->owners[l->n_owners++].unseen;
        }
        return 0;
}

/* Step 3 of ledger_build for an inspected GPU: the account, the two-sample confirmation and the
 * teardown, in one place. pl is the earlier sample's ledger of this GPU (NULL when none). */
static void confirm_gpu(const struct facts *now, const struct facts *before, const struct ledger_opts *o,
                        const struct gpu_ledger *pl, struct gpu_ledger *l)
{
        account(now, l);
        uint64_t unexplained = l->ghost + l->unattributed;
        uint64_t pl_unexplained = pl ? pl->ghost + pl->unattributed + pl->freeing_bytes : 0;
        if (pl_unexplained > unexplained)
                l->freed_bytes = pl_unexplained - unexplained;
        bool exiting = false;
        for (size_t k = 0; k < l->n_owners; k++) {
                const struct pid_fact *pf = facts_pid(now, l->owners[k].pid);
                /* exiting, not yet a zombie (which holds no file) and not stuck (D) */
                exiting |= l->owners[k].cls == OWNER_STALE && pf && pf->present && pf->proc.exiting &&
                           !strchr("DZX", pf->proc.state);
        }
        /* the earlier sample's holders of this GPU's memory hold nothing now, and this
         * sample's walk would have seen them: the driver's teardown starts when the last
         * one goes, so the first sample after it still shows the memory (and a PID namespace
         * cannot tell it from an owner out of sight) */
        bool holders_left = pl && pl->n_attr && !l->n_attr && before && before->host && now->host &&
                            now->host->holder_source != HOST_SOURCE_OWNERS && !l->holders_unseen;
        for (size_t a = 0; holders_left && a < pl->n_attr; a++) {
                if (l->n_gone_holders < sizeof(l->gone_holders) / sizeof(l->gone_holders[0]))
                        l->gone_holders[l->n_gone_holders] = before->host->holders[pl->attr[a].holder].pid;
                l->n_gone_holders++;
        }
        /* memory no process holds that keeps falling, an owner visibly exiting, or holders
         * that have just gone: a teardown in progress, not a ghost. Below the noise floor
         * too (the tail of a teardown is no "every byte accounted for"), once a whole MiB
         * fell: not a jitter of the used figure */
        bool falling = l->freed_bytes && (unexplained > l->noise_floor || l->freed_bytes >= MIB);
        l->freeing = (l->ghost_evidence || l->no_live_owner) && unexplained && !l->n_attr &&
                     (falling || exiting || holders_left);
        if (l->freeing)
                move_to_freeing(l);
        /* confirmed only if the earlier sample showed it too */
        if (l->ghost_evidence && l->ghost > l->noise_floor && !l->freeing)
                l->ghost_confirmed = !o->two_samples || (pl && pl->ghost + pl->freeing_bytes > l->noise_floor);
        l->unexplained_steady = !o->two_samples || (pl && pl_unexplained > l->noise_floor);
}

int ledger_build(const struct facts *now, const struct facts *before, const struct ledger_opts *o,
                 struct scan_result **ret)
{
        struct scan_result *res = calloc(1, sizeof(*res));
        struct scan_result *prev = NULL;
        if (!res)
                return -ENOMEM;
        res->facts = now;
        res->only_gpu = -1;
        res->full_visibility = visibility_of(now->host) == VIS_FULL;
        res->n_gpus = now->gpu->n_gpus;
        res->gpus = calloc(res->n_gpus ? res->n_gpus : 1, sizeof(*res->gpus));
        if (!res->gpus)
                goto nomem;
        if (before && o->two_samples) {
                struct ledger_opts po = *o;
                po.two_samples = false;
                if (ledger_build(before, NULL, &po, &prev) < 0)
                        goto nomem;
        }

        /* 1. every listed process, per GPU */
        for (size_t i = 0; i < res->n_gpus; i++)
                if (list_owners(now, o, &now->gpu->gpus[i], &res->gpus[i]) < 0)
                        goto nomem;
        /* 2. links by number to listed dead owners, then orphans no number names */
        for (size_t i = 0; i < res->n_gpus; i++)
                if (res->gpus[i].inspected && (attribute_linked(res, o, &res->gpus[i], &now->gpu->gpus[i]) < 0 ||
                                               attribute_family(res, o, i) < 0))
                        goto nomem;
        if (attribute_orphans(res, o) < 0)
                goto nomem;
        for (size_t i = 0; now->host && i < res->n_gpus; i++)
                for (size_t a = 0; a < res->gpus[i].n_attr; a++)
                        res->gpus[i].attr[a].family = now->host->holders[res->gpus[i].attr[a].holder].family;
        /* 3. the account, the two-sample confirmation and the teardown */
        for (size_t i = 0; i < res->n_gpus; i++) {
                struct gpu_ledger *l = &res->gpus[i];
                if (l->inspected)
                        confirm_gpu(now, before, o, o->two_samples ? ledger_of(prev, l->index) : NULL, l);
        }
        for (size_t i = 0; i < res->n_gpus; i++) {
                struct gpu_ledger *l = &res->gpus[i];
                explain_gpu(now, before, o, res, l, &now->gpu->gpus[i]);
                if (l->n_findings > 1)
                        qsort(l->findings, l->n_findings, sizeof(*l->findings), finding_cmp);
                res->any_confirmed_ghost |= l->ghost_confirmed;
                res->any_uninspected |= !l->inspected || !l->procs_known;
        }
        scan_result_free(prev);
        *ret = res;
        return 0;
nomem:
        scan_result_free(prev);
        scan_result_free(res);
        return -ENOMEM;
}

bool ledger_needs_confirmation(const struct scan_result *r)
{
        for (size_t i = 0; i < r->n_gpus; i++) {
                const struct gpu_ledger *l = &r->gpus[i];
                if (l->ghost_evidence && l->ghost > l->noise_floor)
                        return true;
                /* unexplained with nothing alive: a teardown in progress looks like this too */
                if (l->no_live_owner && l->ghost + l->unattributed > l->noise_floor)
                        return true;
                /* a teardown seen in one sample (an owner exiting): followed until it ends */
                if (l->freeing)
                        return true;
                for (size_t k = 0; k < l->n_findings; k++)
                        if (l->findings[k].verdict == VERDICT_STUCK)
                                return true;
        }
        return false;
}

void scan_result_free(struct scan_result *r)
{
        if (!r)
                return;
        for (size_t i = 0; i < r->n_gpus; i++) {
                struct gpu_ledger *l = &r->gpus[i];
                for (size_t k = 0; k < l->n_owners; k++)
                        free(l->owners[k].why);
                for (size_t k = 0; k < l->n_attr; k++)
                        free(l->attr[k].text);
                for (size_t k = 0; k < l->n_findings; k++)
                        finding_free(&l->findings[k]);
                xid_recent_clear(&l->xid);
                free(l->owners);
                free(l->attr);
                free(l->findings);
        }
        free(r->gpus);
        free(r);
}

const struct xid_event *ledger_lost_event(const struct facts *f, unsigned gpu_index)
{
        for (size_t i = 0; f->gpu && i < f->gpu->n_gpus; i++)
                if (f->gpu->gpus[i].index == gpu_index) {
                        bool old;
                        return lost_event(f, &f->gpu->gpus[i], &old);
                }
        return NULL;
}
