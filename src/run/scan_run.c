#include "run/scan_run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "collect/shm.h"
#include "run/sources.h"
#include "track/track_scan.h"
#include "util/deadline.h"
#include "util/fileio.h"
#include "util/i18n.h"

#define MIB (1024ull * 1024ull)

static bool default_wait(void *ctx, uint64_t ms)
{
        (void)ctx;
        struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        return true;
}

static double wall_now(void)
{
        struct timeval tv;
        gettimeofday(&tv, NULL);
        return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* ---- one scan ---------------------------------------------------------------------------- */

/* The boot time a bundle's kernel lines were dated with (DIR/SUB/kmsg.boot), 0 when it does
 * not say (bundles made before it: this host's boot time, as then). */
static double bundle_boot_time(const char *dir, const char *sub)
{
        char path[4096], *data = NULL;
        size_t len = 0;
        double v = 0;
        int n = snprintf(path, sizeof(path), "%s/%s/kmsg.boot", dir, sub);
        if (n < 0 || (size_t)n >= sizeof(path) || read_file_at(AT_FDCWD, path, 64, &data, &len) < 0)
                return 0;
        char *end;
        errno = 0;
        v = strtod(data, &end);
        if (errno || end == data || (*end && *end != '\n') || !(v > 0 && v < 1e11))
                v = 0;
        free(data);
        return v;
}

/* One sample; bundle_sub/save_sub name the bundle's subdirectory ("." / NULL: the top);
 * with_kernel false leaves the kernel log to the caller. */
static int collect_sample(const struct scan_once_opts *o, const char *bundle_sub, const char *save_sub,
                          bool with_kernel, struct facts **ret)
{
        struct facts_opts fo = o->facts;
        fo.read_kernel = fo.read_kernel && with_kernel;
        char gpu_dir[4096], proc_dir[4096], save_dir[4096], kmsg_path[4096];
        int n;
        if (o->from_bundle) {
                n = snprintf(gpu_dir, sizeof(gpu_dir), "%s/%s", o->from_bundle, bundle_sub);
                if (n < 0 || (size_t)n >= sizeof(gpu_dir))
                        return -ENAMETOOLONG;
                n = snprintf(proc_dir, sizeof(proc_dir), "%s/%s/proc", o->from_bundle, bundle_sub);
                if (n < 0 || (size_t)n >= sizeof(proc_dir))
                        return -ENAMETOOLONG;
                fo.gpu.bundle_dir = gpu_dir;
                fo.host.proc_root = proc_dir;
                /* the kernel lines the bundle recorded (none: nothing was recorded) */
                n = snprintf(kmsg_path, sizeof(kmsg_path), "%s/%s/kmsg", o->from_bundle, bundle_sub);
                if (n < 0 || (size_t)n >= sizeof(kmsg_path))
                        return -ENAMETOOLONG;
                fo.read_kernel = fo.read_kernel && access(kmsg_path, R_OK) == 0;
                fo.kernel.kmsg_path = kmsg_path;
                fo.kernel.this_boot = true;
                fo.kernel.boot_time = bundle_boot_time(o->from_bundle, bundle_sub);
        }
        if (o->save_bundle) {
                n = save_sub ? snprintf(save_dir, sizeof(save_dir), "%s/%s", o->save_bundle, save_sub)
                             : snprintf(save_dir, sizeof(save_dir), "%s", o->save_bundle);
                if (n < 0 || (size_t)n >= sizeof(save_dir))
                        return -ENAMETOOLONG;
                fo.save_bundle = save_dir;
                fo.host.save_dir = save_dir;
        }
        return facts_collect(&fo, ret);
}

bool scan_bundle_has_confirm(const char *dir)
{
        char p[4096];
        int n = snprintf(p, sizeof(p), "%s/confirm/nvml.json", dir);
        if (n < 0 || (size_t)n >= sizeof(p))
                return false;
        FILE *t = fopen(p, "r");
        if (t)
                fclose(t);
        return t != NULL;
}

/* Does a sample of the listed owners alone (facts_opts.owners_only) answer the whole question?
 * Every GPU judged, every owner NVML lists alive here and holding what its context needs, and
 * the bytes charged to nobody within the noise floor: then no holder can change the verdict. */
static bool owners_explain_all(const struct scan_result *res)
{
        const struct facts *f = res->facts;
        if (!f->gpu->driver_present || f->gpu->timed_out || f->gpu->n_gpus == 0 || !f->host ||
            ledger_needs_confirmation(res) || res->n_gpus != f->gpu->n_gpus)
                return false;
        for (size_t g = 0; g < res->n_gpus; g++) {
                const struct gpu_ledger *l = &res->gpus[g];
                if (!ledger_judged(l) || l->ghost || l->foreign || l->unattributed > l->noise_floor)
                        return false;
                if (l->n_findings && l->findings[0].verdict != VERDICT_OK &&
                    l->findings[0].verdict != VERDICT_RESERVED_ONLY)
                        return false;
                for (size_t k = 0; k < l->n_owners; k++)
                        if (l->owners[k].cls != OWNER_LIVE || !l->owners[k].used_known)
                                return false;
        }
        return true;
}

/* scan and check on a live host: NVML, then the listed owners alone. 1 when they explain every
 * GPU (s->first and s->res set: no walk), 0 when s->first is a walk taken on the same NVML
 * answer and kernel events, or a negative errno. */
static int first_sample_light(const struct scan_once_opts *o, const struct ledger_opts *lo, struct scan_once *s)
{
        struct facts_opts fo = o->facts;
        struct facts *f = NULL;
        struct scan_result *res = NULL;
        fo.owners_only = true;
        int r = facts_collect(&fo, &f);
        if (r < 0)
                return r;
        r = ledger_build(f, NULL, lo, &res);
        if (r < 0) {
                facts_free(f);
                return r;
        }
        if (owners_explain_all(res)) {
                s->first = f;
                s->res = res;
                return 1;
        }
        scan_result_free(res);
        struct gpu_report *gpu = f->gpu;
        f->gpu = NULL;
        fo.owners_only = false;
        fo.read_kernel = false;
        r = facts_collect_from(&fo, gpu, &s->first);    /* takes gpu */
        if (r == 0)
                facts_take_kernel(s->first, f);
        facts_free(f);
        return r;
}

int scan_once_run(const struct scan_once_opts *o, struct scan_once **ret)
{
        double t0 = monotonic_s();
        struct scan_once *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        struct ledger_opts lo = o->ledger;
        lo.two_samples = false;
        int r;
        if (o->light && !o->from_bundle && !o->save_bundle) {
                r = first_sample_light(o, &lo, s);
                if (r < 0)
                        goto fail;
                if (r == 1)
                        goto done;
        } else {
                r = collect_sample(o, ".", NULL, true, &s->first);
                if (r < 0)
                        goto fail;
                /* ghostvram itself, never attributed: the one that recorded the bundle */
                if (o->from_bundle && s->first->host && s->first->host->self_saved)
                        lo.self_pid = s->first->host->self_pid;
        }
        r = ledger_build(s->first, NULL, &lo, &s->res);
        if (r < 0)
                goto fail;
        /* a ghost or a stuck task must be seen twice: the driver frees memory with a delay */
        bool confirm = ledger_needs_confirmation(s->res);
        if (confirm && o->from_bundle)
                confirm = scan_bundle_has_confirm(o->from_bundle);
        else if (confirm && o->confirm_ms)
                confirm = true;
        else
                confirm = false;
        if (!confirm)
                goto done;
        if (!o->from_bundle && !(o->wait ? o->wait : default_wait)(o->wait_ctx, o->confirm_ms)) {
                r = -EINTR;
                goto fail;
        }
        /* the kernel log was read with the first sample: the second takes its events */
        r = collect_sample(o, "confirm", "confirm", false, &s->second);
        if (r < 0)
                goto fail;
        facts_take_kernel(s->second, s->first);
        scan_result_free(s->res);
        s->res = NULL;
        lo.two_samples = true;
        r = ledger_build(s->second, s->first, &lo, &s->res);
        if (r < 0)
                goto fail;
done:
        s->duration_s = monotonic_s() - t0;
        *ret = s;
        return 0;
fail:
        scan_once_free(s);
        return r;
}

void scan_once_free(struct scan_once *s)
{
        if (!s)
                return;
        scan_result_free(s->res);
        facts_free(s->first);
        facts_free(s->second);
        free(s);
}

/* ---- the sampler's decisions ---------------------------------------------------------------- */

static bool holds_ctl_or_uvm(const struct host_proc *p)
{
        return host_proc_holds(p, "nvidiactl") || host_proc_holds(p, "nvidia-uvm");
}

static bool state_live(char st)
{
        return st != 'Z' && st != 'X' && st != 'D';
}

bool sampler_need_full(const struct gpu_report *gpu, const struct facts *full, const struct scan_result *last,
                       const struct ledger_opts *lo, unsigned cycles_since_full, unsigned full_every,
                       char **why)
{
        if (!full || !full->host) {
                str_setf(why, _("no earlier /proc walk"));
                return true;
        }
        if (!gpu->driver_present)
                return false;   /* nothing to explain without a driver */
        if (gpu->n_gpus != full->gpu->n_gpus) {
                str_setf(why, _("the number of GPUs changed"));
                return true;
        }
        if (last && ledger_needs_confirmation(last)) {
                str_setf(why, _("a ghost or a stuck task to follow"));
                return true;
        }
        if (full_every && cycles_since_full + 1 >= full_every) {
                str_setf(why, _("periodic walk (every %u cycles)"), full_every);
                return true;
        }
        for (size_t i = 0; i < gpu->n_gpus; i++) {
                const struct gpu_info *g = &gpu->gpus[i];
                if (!g->memory_known || g->status != GPU_OK)
                        continue;       /* the ledger cannot use /proc for it anyway */
                uint64_t charged = 0;
                for (size_t k = 0; k < g->n_procs; k++) {
                        const struct gpu_proc *p = &g->procs[k];
                        if (!p->used_known) {
                                str_setf(why, _("GPU %u: NVML gives no bytes for PID %u"), g->index, p->pid);
                                return true;
                        }
                        charged += p->used_bytes;
                        const struct pid_fact *pf = facts_pid(full, p->pid);
                        if (!pf || !pf->present || !pf->holder || !state_live(pf->proc.state) ||
                            pf->proc.exiting || !holds_ctl_or_uvm(&pf->proc)) {
                                str_setf(why, _("GPU %u: PID %u was not a live holder in the last walk"),
                                         g->index, p->pid);
                                return true;
                        }
                }
                uint64_t permille = g->total_bytes / 1000 * lo->floor_permille;
                uint64_t floor = permille > lo->floor_min_bytes ? permille : lo->floor_min_bytes;
                uint64_t unexplained = g->used_bytes > charged ? g->used_bytes - charged : 0;
                if (unexplained > floor) {
                        str_setf(why, _("GPU %u: %llu MiB not charged to a listed PID"), g->index,
                                 (unsigned long long)(unexplained / MIB));
                        return true;
                }
        }
        return false;
}

bool sampler_same_live_owner(const struct host_proc *then, const struct host_proc *now)
{
        return state_live(now->state) && !now->exiting && now->start_ticks == then->start_ticks;
}

/* ---- the sampler ------------------------------------------------------------------------------ */

/* The kernel log, followed: history read once, then what arrives. */
struct kernel_follow {
        bool open;
        struct kmsg_reader rd;
        struct xid_parser ps;
        struct xid_source_info info;
        struct xid_list history;        /* everything before this cycle (capped) */
        struct xid_list fresh;          /* what this cycle read */
        char error[256];
};

struct sampler {
        struct sampler_opts o;
        struct facts *last;             /* the latest sample; res is built on it */
        struct facts *full;             /* the latest sample with a walk (may be last) */
        struct scan_result *res;
        unsigned since_full;
        struct kernel_follow k;
        char *why;                      /* the latest cycle's sample.why */
};

/* Read every record there is now (following: -EAGAIN is the end for now) into out. */
static int kernel_read_new(struct kernel_follow *k, struct xid_list *out)
{
        struct kmsg_record rec;
        int r;
        while ((r = kmsg_reader_next(&k->rd, &rec)) > 0)
                if ((r = xid_parser_feed(&k->ps, &rec, out)) < 0)
                        return r;
        if (r == 0 || r == -EAGAIN)
                return xid_parser_flush(&k->ps, out);
        return r;
}

static void kernel_read_error(struct kernel_follow *k, int r)
{
        snprintf(k->error, sizeof(k->error), _("reading %.160s: %s"), k->info.path, strerror(-r));
}

static void kernel_open(struct kernel_follow *k, const struct xid_source_opts *o)
{
        k->history.max = k->fresh.max = SAMPLER_KERNEL_MAX;
        char err[KMSG_ERR_MAX] = "";
        int r = xid_source_open(o, true, &k->rd, &k->info, err, sizeof(err));
        if (r < 0) {
                snprintf(k->error, sizeof(k->error), _("kernel log not read: %s"), err[0] ? err : strerror(-r));
                return;
        }
        if (k->info.no_log)
                return;
        k->open = true;
        xid_parser_init(&k->ps, kmsg_source_name(k->info.source));
        r = kernel_read_new(k, &k->history);
        if (r < 0)
                kernel_read_error(k, r);
}

/* Move last cycle's events into the history and read the new ones. */
static int kernel_cycle(struct kernel_follow *k)
{
        int r = 0;
        for (size_t i = 0; i < k->fresh.n; i++) {
                if (r == 0)
                        r = xid_list_push(&k->history, &k->fresh.ev[i]); /* frees it on failure */
                else
                        xid_event_free(&k->fresh.ev[i]);
        }
        k->fresh.n = 0;
        if (r < 0 || !k->open)
                return r;
        r = kernel_read_new(k, &k->fresh);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                kernel_read_error(k, r);
        else
                k->error[0] = '\0';
        return 0;
}

/* Give a sample every event known (its own copies), as facts_collect's read_kernel would. */
static int kernel_inject(const struct kernel_follow *k, struct facts *f)
{
        const struct xid_list *lists[2] = { &k->history, &k->fresh };
        f->kernel.max = SAMPLER_KERNEL_MAX;
        for (size_t l = 0; l < 2; l++)
                for (size_t i = 0; i < lists[l]->n; i++) {
                        struct xid_event e;
                        if (xid_event_copy(&e, &lists[l]->ev[i]) < 0 || xid_list_push(&f->kernel, &e) < 0)
                                return -ENOMEM;
                }
        f->kernel_read = k->open;
        f->kernel_this_host = k->info.this_host;
        f->kernel_overruns = k->rd.overruns;
        snprintf(f->kernel_source, sizeof(f->kernel_source), "%s", k->open ? kmsg_source_name(k->info.source) : "");
        snprintf(f->kernel_error, sizeof(f->kernel_error), "%s", k->error);
        if (k->info.this_host)
                xid_map_gpus(f->kernel.ev, f->kernel.n, f->gpu);
        return 0;
}

int sampler_new(const struct sampler_opts *o, struct sampler **ret)
{
        struct sampler *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->o = *o;
        if (!s->o.full_every)
                s->o.full_every = 40;
        s->k.rd.fd = -1;
        if (o->facts.read_kernel)
                kernel_open(&s->k, &o->facts.kernel);
        /* the samples themselves never read the log whole: the follower gives them its events */
        s->o.facts.read_kernel = false;
        *ret = s;
        return 0;
}

void sampler_free(struct sampler *s)
{
        if (!s)
                return;
        scan_result_free(s->res);
        if (s->full != s->last)
                facts_free(s->full);
        facts_free(s->last);
        if (s->k.open)
                xid_parser_free(&s->k.ps);
        kmsg_reader_close(&s->k.rd);
        xid_list_free(&s->k.history);
        xid_list_free(&s->k.fresh);
        free(s->why);
        free(s);
}

static int push(void **arr, size_t *n, size_t size)
{
        void *p = realloc(*arr, (*n + 1) * size);
        if (!p)
                return -ENOMEM;
        *arr = p;
        memset((char *)p + *n * size, 0, size);
        (*n)++;
        return 0;
}

/* The facts of a cycle without a walk: NVML's report, and a fresh look at every listed PID,
 * which must still be the live holder the last walk saw. Returns 0 (gpu taken over), 1 when a
 * PID changed (why says which; gpu stays with the caller), or -ENOMEM. */
static int light_facts(struct sampler *s, struct gpu_report *gpu, char **why, struct facts **ret)
{
        const struct host_report *fh = s->full->host;
        struct facts *f = calloc(1, sizeof(*f));
        struct host_report *h = calloc(1, sizeof(*h));
        int r = -ENOMEM;
        if (!f || !h)
                goto fail;
        f->host = h;
        f->simulated = s->o.facts.simulated;
        h->self_pidns_ino = fh->self_pidns_ino;
        h->initial_pidns = fh->initial_pidns;
        h->euid = fh->euid;
        h->btime = fh->btime;
        h->clk_tck = fh->clk_tck;
        h->sample_time = wall_now();
        memcpy(h->nvidia_majors, fh->nvidia_majors, sizeof(h->nvidia_majors));
        h->n_nvidia_majors = fh->n_nvidia_majors;
        for (size_t i = 0; i < fh->n_limits; i++)
                if (host_report_add_limit(h, fh->limits[i], host_report_limit_text(fh, i)) < 0)
                        goto fail;
        for (size_t g = 0; g < gpu->n_gpus; g++)
                for (size_t k = 0; k < gpu->gpus[g].n_procs; k++) {
                        uint32_t pid = gpu->gpus[g].procs[k].pid;
                        if (facts_pid(f, pid))
                                continue;
                        const struct pid_fact *then = facts_pid(s->full, pid);
                        struct host_proc p;
                        memset(&p, 0, sizeof(p));
                        if (!then || pid > 0x7fffffffu || host_proc_lookup(&s->o.facts.host, (pid_t)pid, &p) < 0) {
                                str_setf(why, _("listed PID %u is gone"), pid);
                                r = 1;
                                goto fail;
                        }
                        if (!sampler_same_live_owner(&then->proc, &p)) {
                                str_setf(why, p.start_ticks != then->proc.start_ticks ? _("listed PID %u changed (state %c, PID reused)")
                                              : p.exiting ? _("listed PID %u changed (state %c, exiting)")
                                                          : _("listed PID %u changed (state %c)"),
                                         pid, p.state);
                                host_proc_clear(&p);
                                r = 1;
                                goto fail;
                        }
                        if (p.n_nodes == 0) {
                                memcpy(p.nodes, then->proc.nodes, sizeof(p.nodes));
                                p.n_nodes = then->proc.n_nodes;
                        }
                        if (push((void **)&h->holders, &h->n_holders, sizeof(*h->holders)) < 0 ||
                            push((void **)&f->pids, &f->n_pids, sizeof(*f->pids)) < 0) {
                                host_proc_clear(&p);
                                goto fail;
                        }
                        h->holders[h->n_holders - 1] = p;
                        struct pid_fact *pf = &f->pids[f->n_pids - 1];
                        pf->pid = pid;
                        pf->present = pf->holder = true;
                        facts_proc_copy(&pf->proc, &p);
                        h->procs_scanned++;
                }
        f->gpu = gpu;
        *ret = f;
        return 0;
fail:
        facts_free(f);          /* f->gpu is NULL here: the report stays with the caller */
        if (!f)
                host_report_free(h);
        return r;
}

/* A cycle that would walk: do the listed owners alone explain every GPU? 1 and *ret (gpu taken)
 * when they do, 0 when the walk is needed (*gpu stays with the caller), or -ENOMEM. Not while a
 * ghost is being followed, nor when the periodic walk is due. */
static int owners_cycle(struct sampler *s, struct gpu_report **gpu, struct facts **ret)
{
        const struct sampler_opts *o = &s->o;
        if ((s->res && ledger_needs_confirmation(s->res)) ||
            (s->full && o->full_every && s->since_full + 1 >= o->full_every))
                return 0;
        struct facts_opts fo = o->facts;
        struct facts *f = NULL;
        struct scan_result *res = NULL;
        fo.owners_only = true;
        int r = facts_collect_from(&fo, *gpu, &f);      /* takes *gpu, also on error */
        *gpu = NULL;
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        struct ledger_opts lo = o->ledger;
        lo.two_samples = false;
        r = kernel_inject(&s->k, f);
        if (r == 0)
                r = ledger_build(f, NULL, &lo, &res);
        if (r == 0 && owners_explain_all(res)) {
                scan_result_free(res);
                *ret = f;
                return 1;
        }
        scan_result_free(res);
        *gpu = f->gpu;
        f->gpu = NULL;
        facts_free(f);
        return r < 0 ? r : 0;
}

/* Forget the older samples once `now` is the latest (and, if walked, the latest walk). */
static void keep_latest(struct sampler *s, struct facts *now, bool walked)
{
        struct facts *old_last = s->last, *old_full = s->full;
        s->last = now;
        if (walked) {
                s->full = now;
                s->since_full = 0;
        } else {
                s->since_full++;
        }
        if (old_last && old_last != s->full)
                facts_free(old_last);
        if (old_full && old_full != s->full && old_full != old_last)
                facts_free(old_full);
}

/* The kernel log first: its events matter most while the driver hangs (Xid 79). The cycle's
 * new events go into ret. Returns 0 or -ENOMEM. */
static int cycle_kernel(struct sampler *s, struct sample *ret)
{
        if (kernel_cycle(&s->k) < 0)
                return -ENOMEM;
        if (s->k.info.this_host && s->last)     /* GPU indexes as the latest sample knew them */
                xid_map_gpus(s->k.fresh.ev, s->k.fresh.n, s->last->gpu);
        ret->new_events = s->k.fresh.ev;
        ret->n_new_events = s->k.fresh.n;
        return 0;
}

/* A walk's facts in *ret_now, from NVML's report gpu (taken; NULL: asked again). Returns 0, 1
 * when there are none (ret->errors and s->why say why), or -ENOMEM. */
static int cycle_walk(struct sampler *s, struct gpu_report *gpu, struct sample *ret, struct facts **ret_now)
{
        const struct sampler_opts *o = &s->o;
        if (!gpu)
                (void)gpu_collect(&o->facts.gpu, &gpu); /* judged by gpu itself */
        if (!gpu) {
                ret->errors = SCAN_ERR_GPU;
                str_setf(&s->why, _("the NVIDIA driver could not be asked again"));
                return 1;
        }
        int r = facts_collect_from(&o->facts, gpu, ret_now);   /* takes gpu */
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                ret->errors = SCAN_ERR_HOST;
                str_setf(&s->why, _("cannot read %s: %s"), o->facts.host.proc_root,
                         strerror(-r));
                return 1;
        }
        return 0;
}

/* The cycle's facts in *ret_now from NVML's report gpu (taken): the listed PIDs re-checked, or
 * the listed owners alone when they explain everything, else a walk (*ret_walk). Returns 0, 1
 * when there are none (ret->errors and s->why say why), or a negative errno. */
static int cycle_facts(struct sampler *s, struct gpu_report *gpu, struct sample *ret, struct facts **ret_now,
                       bool *ret_walk)
{
        const struct sampler_opts *o = &s->o;
        int r;
        bool walk = !o->light || sampler_need_full(gpu, s->full, s->res, &o->ledger, s->since_full,
                                                   o->full_every, &s->why);
        if (!walk) {
                r = light_facts(s, gpu, &s->why, ret_now);
                if (r < 0) {
                        gpu_report_free(gpu);
                        return r;
                }
                walk = r == 1;
        }
        bool owners = false;
        if (walk && o->light) {
                r = owners_cycle(s, &gpu, ret_now);
                if (r < 0) {
                        gpu_report_free(gpu);
                        return r;
                }
                if (r == 1) {
                        walk = false;
                        owners = true;
                }
        }
        *ret_walk = walk;
        if (walk)
                return cycle_walk(s, gpu, ret, ret_now);
        if (owners)
                str_setf(&s->why, _("nothing unexplained: looked at the listed owners only"));
        else
                str_setf(&s->why, _("nothing unexplained: re-checked the listed PIDs"));
        return 0;
}

/* The first cycle's confirming sample, confirm_ms after it: its result replaces *res and its
 * facts *now (a walk: *walk), unless it could not be taken. Returns 0, or a negative errno
 * (*res and *now are the caller's to free). */
static int cycle_confirm(struct sampler *s, const struct ledger_opts *lo, struct facts **now,
                         struct scan_result **res, bool *walk)
{
        const struct sampler_opts *o = &s->o;
        scan_wait_fn wait = o->wait ? o->wait : default_wait;
        struct facts *second = NULL;
        if (!wait(o->wait_ctx, o->confirm_ms))
                return -EINTR;
        int r = facts_collect(&o->facts, &second);
        if (r == 0)
                r = kernel_inject(&s->k, second);
        if (r == 0) {
                struct scan_result *res2 = NULL;
                r = ledger_build(second, *now, lo, &res2);
                if (r < 0) {
                        facts_free(second);
                        return r;
                }
                scan_result_free(*res);
                *res = res2;
                facts_free(*now);
                *now = second;
                *walk = true;
                return 0;
        }
        facts_free(second); /* a part it did take, before the part that failed */
        /* a walk that failed now keeps the first sample's (unconfirmed) result */
        return r == -ENOMEM ? r : 0;
}

/* The cycle's result kept as the latest, and said in ret. */
static void cycle_publish(struct sampler *s, struct facts *now, struct scan_result *res, bool walk,
                          struct sample *ret)
{
        scan_result_free(s->res);
        s->res = res;
        keep_latest(s, now, walk);
        ret->res = res;
        ret->full = walk;
        if (!now->gpu->driver_present || now->gpu->timed_out)
                ret->errors |= SCAN_ERR_GPU;
        /* a GPU that did not answer is in the result as not inspected, with the reason: the
         * others are still shown. Not when a call that names no GPU missed its deadline */
        ret->published = !now->gpu->timed_out || gpu_report_lists_all(now->gpu);
}

int sampler_cycle(struct sampler *s, struct sample *ret)
{
        double t0 = monotonic_s();
        memset(ret, 0, sizeof(*ret));
        str_clear(&s->why);
        ret->why = "";
        const struct sampler_opts *o = &s->o;
        struct gpu_report *gpu = NULL;
        struct facts *now = NULL;
        struct scan_result *res = NULL;
        bool walk = false;
        int r;

        if (cycle_kernel(s, ret) < 0)
                return -ENOMEM;
        if (!o->facts.gpu.bundle_dir && gpu_nvml_global_stuck()) {
                /* no GPU can be listed until that call returns, and calling again would leave one
                 * more thread stuck in the driver; a call stuck on one GPU only makes the backend
                 * skip that GPU (gpu_nvml_stuck_calls) */
                ret->errors = SCAN_ERR_GPU;
                str_setf(&s->why, _("the NVIDIA driver has not returned from an earlier call yet (it hangs)"));
                goto finish;
        }
        r = gpu_collect(&o->facts.gpu, &gpu);
        if (r < 0)
                return r;
        if (s->k.info.this_host)
                xid_map_gpus(s->k.fresh.ev, s->k.fresh.n, gpu);
        r = cycle_facts(s, gpu, ret, &now, &walk);
        if (r < 0)
                return r;
        if (r == 1)
                goto finish;
        r = kernel_inject(&s->k, now);
        if (r < 0)
                goto fail;
        struct ledger_opts lo = o->ledger;
        /* the previous cycle confirms; the first one has none: a sample confirm_ms later does */
        lo.two_samples = s->last != NULL || o->confirm_ms > 0;
        r = ledger_build(now, s->last, &lo, &res);
        if (r < 0)
                goto fail;
        if (!s->last && o->confirm_ms && ledger_needs_confirmation(res)) {
                r = cycle_confirm(s, &lo, &now, &res, &walk);
                if (r < 0)
                        goto fail;
        }
        cycle_publish(s, now, res, walk, ret);
finish:
        ret->why = str_or_empty(s->why);
        if (s->k.error[0])
                ret->errors |= SCAN_ERR_KERNEL;
        ret->kernel_error = s->k.error;
        ret->finished = wall_now();
        ret->duration_s = monotonic_s() - t0;
        return 0;
fail:
        scan_result_free(res);
        facts_free(now);
        return r;
}

/* ---- `ghostvram scan` ----------------------------------------------------------------------- */

void scan_cmd_once_opts(const struct sources *src, const struct scan_cmd_opts *o, struct scan_once_opts *so)
{
        sources_scan_once_opts(src, so);
        if (o->floor_set)
                so->ledger.floor_min_bytes = o->floor_mib << 20;
        so->confirm_ms = o->confirm_ms;
        so->light = true;       /* nothing unexplained: no walk */
        so->facts.read_kernel = !o->no_kernel;
        so->facts.kernel.kmsg_path = o->kmsg;
}

int scan_beside_collect(const struct scan_result *res, const struct sources *src, const char *ledger_dir,
                        struct scan_beside *b, void (*say)(const char *msg))
{
        int r = 0;
        memset(b, 0, sizeof(*b));
        if (ledger_dir) {
                b->ts = calloc(1, sizeof(*b->ts));
                if (!b->ts || track_scan_collect(res, ledger_dir, src->proc_root, b->ts) < 0) {
                        char msg[4200];
                        snprintf(msg, sizeof(msg), _("--ledger-dir %s: out of memory"), ledger_dir);
                        say(msg);
                        r = -ENOMEM;
                } else if (b->ts->error[0]) {
                        say(b->ts->error);
                }
        }
        /* host shared memory, said apart: operators rule it out as GPU memory (free's "shared") */
        struct sources_shm_paths sp;
        struct shm_opts sho;
        if (sources_shm_opts(src, NULL, &sp, &sho) && shm_collect(&sho, &b->shm) == -ENOMEM) {
                say("out of memory");
                r = -ENOMEM;
        }
        return r;
}

void scan_beside_free(struct scan_beside *b)
{
        shm_report_free(b->shm);
        track_scan_free(b->ts);
        free(b->ts);
}
