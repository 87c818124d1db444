/* ledger: the per-GPU account and its findings. Pure: reads two samples of facts, no I/O.
 * Every rule here is written down in docs/verdicts.md. */
#include "model/ledger.h"
#include "model/daemons.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024ull * 1024ull)
/* a process started this long after the sample cannot own what the sample showed (ticks are 10 ms) */
#define START_SLACK_S 0.05

const char *const ledger_verdict_codes[] = {
        "ok", "reserved-only", "orphaned-holders", "stale-owner", "foreign-namespace", "invisible-here",
        "unattributed-live", "stuck-in-driver", "daemon-holder", "driver-leak", "gpu-lost", "unknown",
};
const size_t ledger_n_verdict_codes = sizeof(ledger_verdict_codes) / sizeof(ledger_verdict_codes[0]);

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
        default: return "none";
        }
}

void ledger_opts_default(struct ledger_opts *o)
{
        memset(o, 0, sizeof(*o));
        o->floor_min_bytes = 64 * MIB;
        o->floor_permille = 10;
        o->self_pid = getpid();
}

/* ---- small helpers --------------------------------------------------------------------- */

static bool proc_holds_ctl_or_uvm(const struct host_proc *p)
{
        return host_proc_holds(p, "nvidiactl") || host_proc_holds(p, "nvidia-uvm");
}

static bool same_job(const struct host_proc *a, const struct host_proc *b)
{
        if (a->k8s_pod_uid[0] && strcmp(a->k8s_pod_uid, b->k8s_pod_uid) == 0)
                return true;
        if (a->slurm_job[0] && strcmp(a->slurm_job, b->slurm_job) == 0)
                return true;
        if (a->container_id[0] && strcmp(a->container_id, b->container_id) == 0)
                return true;
        /* a job's own cgroup, not a catch-all like a user slice */
        if (a->cgroup && b->cgroup && strcmp(a->cgroup, b->cgroup) == 0 &&
            (strstr(a->cgroup, ".scope") || strstr(a->cgroup, "job_")))
                return true;
        return false;
}

static bool listed_anywhere(const struct facts *f, pid_t pid)
{
        for (size_t g = 0; g < f->gpu->n_gpus; g++)
                for (size_t i = 0; i < f->gpu->gpus[g].n_procs; i++)
                        if ((pid_t)f->gpu->gpus[g].procs[i].pid == pid)
                                return true;
        return false;
}

static struct finding *add_finding(struct gpu_ledger *l, const char *code, enum confidence c, uint64_t bytes)
{
        struct finding *n = realloc(l->findings, (l->n_findings + 1) * sizeof(*n));
        if (!n)
                return NULL;
        l->findings = n;
        struct finding *fd = &l->findings[l->n_findings++];
        memset(fd, 0, sizeof(*fd));
        snprintf(fd->code, sizeof(fd->code), "%s", code);
        fd->confidence = c;
        fd->bytes = bytes;
        return fd;
}

static void evidence(struct finding *fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void evidence(struct finding *fd, const char *fmt, ...)
{
        if (!fd || fd->n_evidence >= LEDGER_MAX_EVIDENCE)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(fd->evidence[fd->n_evidence++], sizeof(fd->evidence[0]), fmt, ap);
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

static void classify_owner(const struct facts *f, const struct gpu_proc *p, struct owner *o)
{
        const struct pid_fact *pf = facts_pid(f, p->pid);
        const struct host_report *h = f->host;
        bool initial = h && h->initial_pidns;
        o->pid = p->pid;
        o->used_bytes = p->used_bytes;
        o->used_known = p->used_known;

        if (pf && pf->present) {
                const struct host_proc *hp = &pf->proc;
                if (hp->state == 'Z' || hp->state == 'X') {
                        o->cls = OWNER_STALE;
                        snprintf(o->why, sizeof(o->why), "zombie (dead, not yet reaped)");
                } else if (hp->exiting) {
                        o->cls = OWNER_STALE;
                        snprintf(o->why, sizeof(o->why), "exiting (state %c)", hp->state);
                } else if (hp->start_time > f->gpu->sample_time + START_SLACK_S && f->gpu->sample_time > 0) {
                        o->cls = OWNER_STALE;
                        snprintf(o->why, sizeof(o->why), "PID reused: this process started after the sample");
                } else if (!proc_holds_ctl_or_uvm(hp)) {
                        /* in host-PID mode inside a container the number may be anyone's */
                        if (!initial && f->gpu->pid_mode == GPU_PID_HOST) {
                                o->cls = OWNER_FOREIGN;
                                snprintf(o->why, sizeof(o->why), "host PID from another namespace");
                        } else {
                                o->cls = OWNER_STALE;
                                snprintf(o->why, sizeof(o->why), "PID reused: this process holds no nvidiactl/nvidia-uvm");
                        }
                } else {
                        o->cls = OWNER_LIVE;
                        snprintf(o->why, sizeof(o->why), "alive here");
                }
                return;
        }
        if (initial) {
                o->cls = OWNER_STALE;   /* the initial namespace sees every PID */
                snprintf(o->why, sizeof(o->why), "no such process");
        } else if (f->gpu->pid_mode == GPU_PID_HOST) {
                o->cls = OWNER_FOREIGN;
                snprintf(o->why, sizeof(o->why), "not in this PID namespace (the driver lists host PIDs)");
        } else {
                /* outside the initial namespace an absent PID may be dead or out of sight; it
                 * becomes stale only if its process group or session is still here (below) */
                o->cls = OWNER_UNKNOWN;
                snprintf(o->why, sizeof(o->why), "no such process in this PID namespace");
        }
}

/* ---- attribution ------------------------------------------------------------------------ */

static int add_attr(struct gpu_ledger *l, size_t holder, enum link_kind k, pid_t to, bool candidate,
                    enum confidence c, const char *text)
{
        for (size_t i = 0; i < l->n_attr; i++)
                if (l->attr[i].holder == holder)
                        return 0; /* the first (strongest) link wins */
        struct attribution *n = realloc(l->attr, (l->n_attr + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        l->attr = n;
        struct attribution *a = &l->attr[l->n_attr++];
        memset(a, 0, sizeof(*a));
        a->holder = holder;
        a->link = k;
        a->to_pid = to;
        a->candidate = candidate;
        a->confidence = c;
        snprintf(a->text, sizeof(a->text), "%s", text);
        return 0;
}

/* Holders that can be attributed at all: not ourselves, not a live listed owner, not a daemon,
 * not a kernel thread. */
static bool attributable(const struct facts *f, const struct ledger_opts *o, const struct host_proc *h)
{
        if (h->pid == o->self_pid || h->kernel_thread || gpu_daemon_of(h))
                return false;
        const struct pid_fact *pf = facts_pid(f, (uint32_t)h->pid);
        if (pf && pf->present && pf->proc.state != 'Z' && !pf->proc.exiting)
                return false; /* NVML lists it and it is alive: an owner, not an orphan */
        return true;
}

static int attribute_linked(const struct facts *f, const struct ledger_opts *o, struct gpu_ledger *l)
{
        const struct host_report *h = f->host;
        if (!h)
                return 0;
        for (size_t k = 0; k < l->n_owners; k++) {
                struct owner *ow = &l->owners[k];
                if (ow->cls != OWNER_STALE && ow->cls != OWNER_UNKNOWN)
                        continue;
                size_t before = l->n_attr;
                pid_t dead = (pid_t)ow->pid;
                const struct pid_fact *pf = facts_pid(f, ow->pid);
                /* a reused PID belongs to someone else: only group/session links by number hold */
                bool owner_facts = pf && pf->present && (pf->proc.state == 'Z' || pf->proc.exiting);
                for (size_t i = 0; i < h->n_holders; i++) {
                        const struct host_proc *hp = &h->holders[i];
                        if (hp->pid == dead || !attributable(f, o, hp))
                                continue;
                        bool uvm = host_proc_holds(hp, "nvidia-uvm");
                        enum confidence c = uvm ? CONF_HIGH : CONF_MEDIUM;
                        char text[160];
                        int r = 0;
                        if (hp->pgid == dead) {
                                snprintf(text, sizeof(text), "worker of dead PID %d, same process group", (int)dead);
                                r = add_attr(l, i, LINK_PGID, dead, false, c, text);
                        } else if (hp->sid == dead) {
                                snprintf(text, sizeof(text), "worker of dead PID %d, same session", (int)dead);
                                r = add_attr(l, i, LINK_SID, dead, false, c, text);
                        } else if (owner_facts && hp->ppid == dead) {
                                snprintf(text, sizeof(text), "child of dead PID %d", (int)dead);
                                r = add_attr(l, i, LINK_PPID, dead, false, c, text);
                        } else if (owner_facts && same_job(hp, &pf->proc)) {
                                snprintf(text, sizeof(text), "same job as dead PID %d", (int)dead);
                                r = add_attr(l, i, LINK_JOB, dead, false, CONF_MEDIUM, text);
                        }
                        if (r < 0)
                                return r;
                }
                if (ow->cls == OWNER_UNKNOWN && l->n_attr > before) {
                        /* its process group or session is here and it is not: it is dead */
                        ow->cls = OWNER_STALE;
                        snprintf(ow->why, sizeof(ow->why), "no such process; its process group is still here");
                }
        }
        return 0;
}

/* Hidden-owner rule: the driver does not list dead owners. A holder of nvidia-uvm that no NVML
 * list names and whose process-group or session leader is gone is a candidate. */
static int attribute_hidden(const struct facts *f, const struct ledger_opts *o, struct gpu_ledger *l,
                            unsigned n_ghost_gpus)
{
        const struct host_report *h = f->host;
        if (!h)
                return 0;
        for (size_t i = 0; i < h->n_holders; i++) {
                const struct host_proc *hp = &h->holders[i];
                if (!host_proc_holds(hp, "nvidia-uvm") || !attributable(f, o, hp) ||
                    listed_anywhere(f, hp->pid))
                        continue;
                pid_t gone = 0;
                const char *what = NULL;
                if (hp->pgid > 0 && hp->pgid != hp->pid && !facts_pid_alive(f, hp->pgid)) {
                        gone = hp->pgid;
                        what = "process group";
                } else if (hp->sid > 0 && hp->sid != hp->pid && !facts_pid_alive(f, hp->sid)) {
                        gone = hp->sid;
                        what = "session";
                }
                if (!gone)
                        continue;
                char text[160];
                bool only = n_ghost_gpus <= 1;
                snprintf(text, sizeof(text), "holds nvidia-uvm, listed by NVML nowhere; leader of its %s (PID %d) is gone%s",
                         what, (int)gone, only ? "" : " (candidate: several GPUs have a ghost)");
                int r = add_attr(l, i, LINK_LEADER_GONE, gone, !only, only ? CONF_MEDIUM : CONF_LOW, text);
                if (r < 0)
                        return r;
        }
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
                        *ret_fd = add_finding(l, "stuck-in-driver", c, l->ghost);
                        if (!*ret_fd)
                                return;
                }
                struct finding *fd = *ret_fd;
                if (c > fd->confidence)
                        fd->confidence = c;
                finding_pid(fd, pid);
                evidence(fd, "PID %d is in D state (uninterruptible)%s%s%s", (int)pid,
                         twice ? " in both samples" : " in one sample (a suspect, not confirmed)",
                         hp->wchan[0] ? ", waiting in " : "", hp->wchan[0] ? hp->wchan : "");
                if (hp->wchan[0] && !nv)
                        evidence(fd, "its wait (%s) is not visibly inside the nvidia modules", hp->wchan);
        }
}

/* ---- the kernel's side ---------------------------------------------------------------- */

/* Is a later than b in the log? seq within one source, else monotonic, else wall time. */
static bool event_after(const struct xid_event *a, const struct xid_event *b)
{
        if (a->seq_known && b->seq_known)
                return a->seq > b->seq;
        if (a->monotonic_known && b->monotonic_known)
                return a->monotonic > b->monotonic;
        if (a->time_known && b->time_known)
                return a->time > b->time;
        return true; /* cannot tell: do not call it history */
}

/* The latest "loading NVIDIA ... Kernel Module" line, or NULL. */
static const struct xid_event *driver_load(const struct facts *f)
{
        const struct xid_event *load = NULL;
        for (size_t i = 0; i < f->kernel.n; i++)
                if (f->kernel.ev[i].kind == XID_KIND_DRIVER_LOAD && (!load || event_after(&f->kernel.ev[i], load)))
                        load = &f->kernel.ev[i];
        return load;
}

static bool event_on_gpu(const struct facts *f, const struct xid_event *e, const struct gpu_info *g)
{
        if (e->kind == XID_KIND_SXID)
                return false;
        if (f->kernel_this_host && e->gpu_index >= 0)
                return (unsigned)e->gpu_index == g->index;
        return e->pci_bus_id[0] && g->pci_bus_id[0] && strcmp(e->pci_bus_id, g->pci_bus_id) == 0;
}

static void event_when(const struct xid_event *e, char *out, size_t n)
{
        if (!e->time_known || xid_format_rfc3339(e->time, out, n) < 0)
                snprintf(out, n, "%s", e->monotonic_known ? "(boot-relative time)" : "(time unknown)");
}

/* The latest Xid 79 / fallen-off-the-bus of GPU g since the driver's load, or NULL. */
static const struct xid_event *lost_event(const struct facts *f, const struct gpu_info *g, bool *ret_old)
{
        const struct xid_event *load = driver_load(f), *lost = NULL;
        *ret_old = false;
        for (size_t i = 0; i < f->kernel.n; i++) {
                const struct xid_event *e = &f->kernel.ev[i];
                if (e->xid != 79 || !event_on_gpu(f, e, g))
                        continue;
                if (load && !event_after(e, load)) {
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
        const struct xid_event *load = driver_load(f);
        for (size_t i = 0; i < f->kernel.n; i++) {
                const struct xid_event *e = &f->kernel.ev[i];
                if (!event_on_gpu(f, e, g) || (load && !event_after(e, load)))
                        continue;
                char when[40];
                event_when(e, when, sizeof(when));
                bool dead_owner = false;
                for (size_t k = 0; e->pid_known && k < l->n_owners; k++)
                        dead_owner |= l->owners[k].pid == e->pid && l->owners[k].cls == OWNER_STALE;
                if (dead_owner && main_fd && e->xid == 45)
                        evidence(main_fd, "kernel: Xid 45 at %s for PID %u%s%s%s: the driver tore its channels down (it was killed)",
                                 when, e->pid, e->process_name[0] ? " (" : "", e->process_name, e->process_name[0] ? ")" : "");
                else if (dead_owner && main_fd && e->xid != XID_NONE)
                        evidence(main_fd, "kernel: Xid %d at %s named the dead owner PID %u%s%s%s", e->xid, when, e->pid,
                                 e->process_name[0] ? " (" : "", e->process_name, e->process_name[0] ? ")" : "");
                bool hang = e->xid == 119 || e->xid == 120 || e->kind == XID_KIND_GSP_ERROR || e->kind == XID_KIND_RC_WATCHDOG;
                if (hang && stuck) {
                        evidence(stuck, "kernel: %s at %s%s", e->xid != XID_NONE ? "a GSP/driver timeout (Xid)" : "a GSP error", when,
                                 e->xid == 119 && e->pid_known ? "; its pid= is whoever made the timed-out call, not necessarily the stuck task" : "");
                        if (stuck->confidence == CONF_LOW)
                                stuck->confidence = CONF_MEDIUM;
                        stuck = NULL; /* one line is enough */
                }
        }
}

/* ---- the account ------------------------------------------------------------------------ */

/* Split used into the four kinds. Sets ghost_evidence. */
static void account(const struct facts *f, struct gpu_ledger *l, bool *ret_no_live)
{
        uint64_t listed = 0, foreign = 0, stale = 0, unknown = 0;
        bool stale_known = false, any_live = false, any_stale = false;
        for (size_t k = 0; k < l->n_owners; k++) {
                const struct owner *ow = &l->owners[k];
                uint64_t b = ow->used_known ? ow->used_bytes : 0;
                switch (ow->cls) {
                case OWNER_LIVE: listed += b; any_live = true; break;
                case OWNER_FOREIGN: foreign += b; any_live = true; break;
                case OWNER_STALE: stale += b; stale_known |= ow->used_known; any_stale = true; break;
                case OWNER_UNKNOWN: unknown += b; break;
                }
        }
        (void)unknown;
        /* never account for more than the driver says is used */
        listed = listed < l->used ? listed : l->used;
        foreign = foreign < l->used - listed ? foreign : l->used - listed;
        uint64_t unexplained = l->used - listed - foreign;
        l->listed = listed;
        l->foreign = foreign;
        bool initial = f->host && f->host->initial_pidns;
        bool old_v1 = l->reserved_known == false;
        /* evidence of a dead owner: a stale PID, or no live owner at all (only where we would see
         * one, and not with a v1 driver whose used figure includes the driver's reservation) */
        bool no_live = !any_live;
        *ret_no_live = no_live;
        l->ghost_evidence = any_stale || (no_live && initial && !old_v1 && unexplained > 0);
        if (!l->ghost_evidence) {
                l->ghost = 0;
                l->unattributed = unexplained;
        } else if (any_stale && stale_known && any_live) {
                /* live owners too: what the stale PIDs held is ghost, the rest uncharged */
                l->ghost = stale < unexplained ? stale : unexplained;
                l->unattributed = unexplained - l->ghost;
        } else {
                l->ghost = unexplained;
                l->unattributed = 0;
        }
}

static void headline(struct finding *fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void headline(struct finding *fd, const char *fmt, ...)
{
        if (!fd)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(fd->summary, sizeof(fd->summary), fmt, ap);
        va_end(ap);
}

static void next_step(struct finding *fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void next_step(struct finding *fd, const char *fmt, ...)
{
        if (!fd)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(fd->next_step, sizeof(fd->next_step), fmt, ap);
        va_end(ap);
}

static void stale_evidence(struct finding *fd, const struct gpu_ledger *l)
{
        for (size_t k = 0; k < l->n_owners; k++) {
                const struct owner *ow = &l->owners[k];
                if (ow->cls != OWNER_STALE)
                        continue;
                finding_pid(fd, (pid_t)ow->pid);
                if (ow->used_known)
                        evidence(fd, "NVML lists PID %u with %llu MiB: %s", ow->pid, mib(ow->used_bytes), ow->why);
                else
                        evidence(fd, "NVML lists PID %u: %s", ow->pid, ow->why);
        }
}

static void explain_gpu(const struct facts *now, const struct facts *before, const struct ledger_opts *o,
                        struct scan_result *res, struct gpu_ledger *l, const struct gpu_info *g)
{
        bool no_live = l->no_live_owner;
        const struct host_report *h = now->host;
        bool initial = h && h->initial_pidns;
        char bus[40];
        snprintf(bus, sizeof(bus), "%s", g->pci_bus_id[0] ? g->pci_bus_id : "");
        struct finding *fd = NULL;

        bool old_lost;
        const struct xid_event *lost = lost_event(now, g, &old_lost);
        /* Xid 79 means lost only if it came after the driver's load and NVML does not answer normally */
        if (g->status == GPU_LOST || (lost && g->status != GPU_OK)) {
                fd = add_finding(l, "gpu-lost", g->status == GPU_LOST ? CONF_HIGH : CONF_MEDIUM, l->used);
                headline(fd, "GPU is lost: the driver cannot reach it (fallen off the bus)");
                evidence(fd, "NVML: %s", g->status_message[0] ? g->status_message : "GPU_IS_LOST");
                if (lost) {
                        char when[40];
                        event_when(lost, when, sizeof(when));
                        evidence(fd, "kernel: Xid 79 (GPU has fallen off the bus) at %s, after the driver's load", when);
                }
                next_step(fd, "drain the node and reboot it; a GPU reset does not bring back a lost GPU (`ghostvram xid explain 79`)");
                return;
        }
        if (!l->inspected) {
                fd = add_finding(l, "unknown", CONF_LOW, 0);
                headline(fd, "could not inspect this GPU");
                evidence(fd, "%s", g->status_message[0] ? g->status_message : "memory figures not available");
                for (size_t e = 0; e < g->n_errors && e < 3; e++)
                        evidence(fd, "query %s: %s", g->errors[e].query, g->errors[e].message);
                next_step(fd, "check the driver with `nvidia-smi -q -i %s` and the kernel log (`ghostvram xid`); re-run with --timeout 30s",
                          bus[0] ? bus : "0");
                return;
        }

        struct finding *stuck = NULL;
        find_stuck(now, before, o, l, &stuck);
        if (stuck) {
                headline(stuck, "%s: a task holding this GPU is stuck in the driver%s",
                         stuck->confidence == CONF_LOW ? "suspect" : "stuck",
                         stuck->confidence == CONF_LOW ? " (one sample)" : "");
                next_step(stuck, "a stuck task exits only when its driver call returns: look at `cat /proc/%d/stack` and `ghostvram xid`; if it stays, reset the GPU (`sudo nvidia-smi --gpu-reset -i %s`) or reboot",
                          (int)stuck->pids[0], bus[0] ? bus : "0");
        }

        if (l->ghost_confirmed && l->n_attr) {
                enum confidence c = CONF_HIGH;
                for (size_t a = 0; a < l->n_attr; a++)
                        if (l->attr[a].confidence < c)
                                c = l->attr[a].confidence;
                fd = add_finding(l, "orphaned-holders", c, l->ghost);
                headline(fd, "%llu MiB ghost held by %zu orphaned process%s of a dead job", mib(l->ghost), l->n_attr,
                         l->n_attr == 1 ? "" : "es");
                stale_evidence(fd, l);
                struct { char s[256]; size_t len; } pl = { "", 0 };
                for (size_t a = 0; a < l->n_attr; a++) {
                        const struct host_proc *hp = &h->holders[l->attr[a].holder];
                        finding_pid(fd, hp->pid); /* the links are in the processes, with each holder */
                        int w = snprintf(pl.s + pl.len, sizeof(pl.s) - pl.len, " %d", (int)hp->pid);
                        if (w > 0 && (size_t)w < sizeof(pl.s) - pl.len)
                                pl.len += (size_t)w;
                }
                next_step(fd, "free it safely (each process re-checked, signalled through a pidfd, the memory measured): `sudo ghostvram reclaim --gpu %u` shows the plan, add --yes to act (by hand: kill -TERM%s)",
                          l->index, pl.s);
        } else if (l->ghost_confirmed) {
                /* a daemon that keeps a dead client's memory? */
                for (size_t i = 0; h && i < h->n_holders; i++) {
                        const struct gpu_daemon *d = gpu_daemon_of(&h->holders[i]);
                        if (!d || strcmp(d->kind, "ghostvram") == 0)
                                continue;
                        if (!fd) {
                                fd = add_finding(l, "daemon-holder", CONF_LOW, l->ghost);
                                headline(fd, "%llu MiB ghost; no orphan found, but a daemon holds the GPU", mib(l->ghost));
                                stale_evidence(fd, l);
                        }
                        finding_pid(fd, h->holders[i].pid);
                        evidence(fd, "PID %d (%s) is a %s holding device nodes; it can keep a dead client's memory",
                                 (int)h->holders[i].pid, h->holders[i].comm ? h->holders[i].comm : "?", d->kind);
                        if (!fd->next_step[0] || strcmp(d->kind, "MPS") == 0)
                                next_step(fd, "%s; then `ghostvram scan --gpu %u`", d->stop, l->index);
                }
                bool stale = false;
                for (size_t k = 0; k < l->n_owners; k++)
                        stale |= l->owners[k].cls == OWNER_STALE;
                if (!fd && stale) {
                        fd = add_finding(l, "stale-owner", initial ? CONF_HIGH : CONF_MEDIUM, l->ghost);
                        headline(fd, "%llu MiB ghost: NVML lists a dead process and nothing here holds the GPU", mib(l->ghost));
                        stale_evidence(fd, l);
                        evidence(fd, "no process holds an NVIDIA device node linked to the dead owner");
                        if (!res->full_visibility)
                                evidence(fd, "visibility is partial (see limits): a holder may be out of sight");
                        next_step(fd, "the driver has not finished tearing the context down: wait a minute and re-run `ghostvram scan --gpu %u`; if it stays, check `ghostvram xid`, then reset the GPU: `sudo nvidia-smi --gpu-reset -i %s`",
                                  l->index, bus[0] ? bus : "0");
                } else if (!fd && !stuck && res->full_visibility) {
                        fd = add_finding(l, "driver-leak", CONF_MEDIUM, l->ghost);
                        headline(fd, "%llu MiB used with no owner and no holder: held by the driver", mib(l->ghost));
                        evidence(fd, "no live owner, no process holds an NVIDIA device node for it, no task stuck in the driver");
                        evidence(fd, "full visibility: initial PID namespace, root, nothing hidden");
                        next_step(fd, "only a GPU reset or a module reload frees it: stop GPU users (and nvidia-persistenced), then `sudo nvidia-smi --gpu-reset -i %s`",
                                  bus[0] ? bus : "0");
                } else if (!fd && !stuck) {
                        fd = add_finding(l, "unknown", CONF_LOW, l->ghost);
                        headline(fd, "%llu MiB unexplained and no holder in sight (partial visibility)", mib(l->ghost));
                        evidence(fd, "not a driver leak: part of the host is out of sight (see limits)");
                        next_step(fd, "re-run as root in the host's PID namespace: `sudo ghostvram scan --gpu %u`", l->index);
                }
        }

        if (!initial && now->gpu->pid_mode != GPU_PID_HOST && no_live && l->unattributed + l->ghost > l->noise_floor &&
            l->unexplained_steady && !l->ghost_confirmed) {
                struct finding *iv = add_finding(l, "invisible-here", CONF_MEDIUM, l->unattributed);
                headline(iv, "%llu MiB used by processes this PID namespace cannot see", mib(l->unattributed + l->ghost));
                evidence(iv, "not in the initial PID namespace, and the driver drops owners that are not visible here");
                next_step(iv, "run on the host (or a pod with hostPID: true / docker --pid=host): `sudo ghostvram scan --gpu %u`", l->index);
        }
        if (l->foreign > 0) {
                struct finding *ff = add_finding(l, "foreign-namespace", CONF_MEDIUM, l->foreign);
                headline(ff, "%llu MiB owned by processes in other PID namespaces", mib(l->foreign));
                for (size_t k = 0; k < l->n_owners; k++)
                        if (l->owners[k].cls == OWNER_FOREIGN) {
                                finding_pid(ff, (pid_t)l->owners[k].pid);
                                evidence(ff, "NVML lists PID %u: %s", l->owners[k].pid, l->owners[k].why);
                        }
                next_step(ff, "not a leak; to name them, run on the host: `sudo ghostvram scan --gpu %u`", l->index);
        }
        if (l->unattributed > l->noise_floor && !no_live) {
                struct finding *uf = add_finding(l, "unattributed-live", CONF_MEDIUM, l->unattributed);
                headline(uf, "%llu MiB not charged to any listed process while jobs run", mib(l->unattributed));
                evidence(uf, "live owners exist and nothing points to a dead one");
                evidence(uf, "NVML does not charge managed (UVM) memory or kernel clients to a process");
                next_step(uf, "nothing to do: this is not a leak. If it grows while the jobs stay the same, watch it: `ghostvram scan --gpu %u --json`", l->index);
        }
        if (!l->reserved_known && l->n_owners == 0 && !l->ghost_confirmed) {
                struct finding *rf = add_finding(l, "reserved-only", CONF_MEDIUM, l->used);
                headline(rf, "%llu MiB used on an idle GPU: the driver's own reservation (old driver)", mib(l->used));
                evidence(rf, "this driver has only the v1 memory query, whose used figure includes the driver's reservation");
                next_step(rf, "nothing to do; a driver of the R510 series or later reports the reservation apart");
        }
        /* findings may have moved (realloc) since `stuck` was taken: look them up again */
        struct finding *main_fd = NULL;
        stuck = NULL;
        for (size_t k = 0; k < l->n_findings; k++) {
                if (strcmp(l->findings[k].code, "stuck-in-driver") == 0)
                        stuck = &l->findings[k];
                else if (!main_fd)
                        main_fd = &l->findings[k];
        }
        kernel_evidence(now, l, g, main_fd, stuck);
        /* nothing found but (maybe) a one-sample suspect: the GPU is fine; the sort puts ok first */
        if (l->n_findings == 0 || (stuck && l->n_findings == 1 && stuck->confidence == CONF_LOW)) {
                struct finding *ok = add_finding(l, "ok", CONF_HIGH, 0);
                headline(ok, "every byte accounted for%s",
                         l->ghost ? " (a residue below the noise floor or not seen twice is not a ghost)" : "");
                next_step(ok, "nothing to do");
        }
        if (old_lost)
                evidence(&l->findings[l->n_findings - 1], "kernel: an Xid 79 for this GPU predates the current driver load: history; NVML answers now");
}

/* Order of importance of verdicts: the first finding of a GPU is its verdict. */
static int verdict_rank(const char *code)
{
        static const char *const order[] = { "gpu-lost", "stuck-in-driver", "orphaned-holders", "daemon-holder",
                                             "stale-owner", "driver-leak", "unknown", "invisible-here",
                                             "foreign-namespace", "unattributed-live", "reserved-only", "ok" };
        for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
                if (strcmp(order[i], code) == 0)
                        return (int)i;
        return 99;
}

static int finding_cmp(const void *a, const void *b)
{
        const struct finding *x = a, *y = b;
        /* a one-sample suspicion of a stuck task does not outrank a confirmed finding */
        int rx = verdict_rank(x->code), ry = verdict_rank(y->code);
        if (strcmp(x->code, "stuck-in-driver") == 0 && x->confidence == CONF_LOW)
                rx = 50;
        if (strcmp(y->code, "stuck-in-driver") == 0 && y->confidence == CONF_LOW)
                ry = 50;
        return rx - ry;
}

static uint64_t ghost_of(const struct scan_result *r, unsigned index)
{
        for (size_t i = 0; r && i < r->n_gpus; i++)
                if (r->gpus[i].index == index)
                        return r->gpus[i].ghost;
        return 0;
}

static uint64_t unexplained_of(const struct scan_result *r, unsigned index)
{
        for (size_t i = 0; r && i < r->n_gpus; i++)
                if (r->gpus[i].index == index)
                        return r->gpus[i].ghost + r->gpus[i].unattributed;
        return 0;
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
        const struct host_report *h = now->host;
        res->full_visibility = h && h->initial_pidns && h->euid == 0 && h->n_limits == 0;
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

        for (size_t i = 0; i < res->n_gpus; i++) {
                const struct gpu_info *g = &now->gpu->gpus[i];
                struct gpu_ledger *l = &res->gpus[i];
                l->index = g->index;
                l->inspected = g->memory_known && g->status == GPU_OK;
                l->used = g->used_bytes;
                l->total = g->total_bytes;
                l->reserved = g->reserved_bytes;
                l->reserved_known = g->memory_api == 2;
                uint64_t pf = g->total_bytes / 1000 * o->floor_permille;
                l->noise_floor = pf > o->floor_min_bytes ? pf : o->floor_min_bytes;
                if (g->n_procs) {
                        l->owners = calloc(g->n_procs, sizeof(*l->owners));
                        if (!l->owners)
                                goto nomem;
                }
                for (size_t k = 0; k < g->n_procs; k++)
                        classify_owner(now, &g->procs[k], &l->owners[l->n_owners++]);
                if (!l->inspected)
                        continue;
                account(now, l, &l->no_live_owner);
        }
        /* GPUs whose unexplained bytes may belong to a hidden dead owner: a ghost already, or
         * nothing alive and no dead owner listed (the driver may hide dead owners) */
        unsigned n_ghost_gpus = 0;
        for (size_t i = 0; i < res->n_gpus; i++) {
                struct gpu_ledger *l = &res->gpus[i];
                n_ghost_gpus += l->inspected && l->ghost + (l->no_live_owner ? l->unattributed : 0) > l->noise_floor;
        }
        for (size_t i = 0; i < res->n_gpus; i++) {
                struct gpu_ledger *l = &res->gpus[i];
                if (!l->inspected)
                        continue;
                if (attribute_linked(now, o, l) < 0)
                        goto nomem;
                account(now, l, &l->no_live_owner); /* owners may have become stale */
                bool stale_listed = false;
                for (size_t k = 0; k < l->n_owners; k++)
                        stale_listed |= l->owners[k].cls == OWNER_STALE;
                /* the hidden-owner rule applies where no dead owner is listed and nothing alive
                 * explains the bytes; the orphans it finds are evidence of a dead owner */
                if (!stale_listed && l->no_live_owner && l->ghost + l->unattributed > l->noise_floor) {
                        if (attribute_hidden(now, o, l, n_ghost_gpus) < 0)
                                goto nomem;
                        if (l->n_attr && !l->ghost_evidence) {
                                l->ghost_evidence = true;
                                l->ghost += l->unattributed;
                                l->unattributed = 0;
                        }
                }
                /* confirmed only if the earlier sample showed it too */
                if (l->ghost_evidence && l->ghost > l->noise_floor)
                        l->ghost_confirmed = !o->two_samples || ghost_of(prev, l->index) > l->noise_floor;
                l->unexplained_steady = !o->two_samples || unexplained_of(prev, l->index) > l->noise_floor;
        }
        for (size_t i = 0; i < res->n_gpus; i++) {
                struct gpu_ledger *l = &res->gpus[i];
                explain_gpu(now, before, o, res, l, &now->gpu->gpus[i]);
                if (l->n_findings > 1)
                        qsort(l->findings, l->n_findings, sizeof(*l->findings), finding_cmp);
                res->any_confirmed_ghost |= l->ghost_confirmed;
                res->any_uninspected |= !l->inspected;
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
                for (size_t k = 0; k < l->n_findings; k++)
                        if (strcmp(l->findings[k].code, "stuck-in-driver") == 0)
                                return true;
        }
        return false;
}

void scan_result_free(struct scan_result *r)
{
        if (!r)
                return;
        for (size_t i = 0; i < r->n_gpus; i++) {
                free(r->gpus[i].owners);
                free(r->gpus[i].attr);
                free(r->gpus[i].findings);
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
