/* sample: one sample of the raw facts, collected through the backends (the GPU driver or a
 * bundle, the /proc walk, the kernel log); the model judges it without any I/O. */
#include "collect/sample.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/gpu_json.h"
#include "util/fileio.h"
#include "util/i18n.h"

void facts_proc_copy(struct host_proc *dst, const struct host_proc *src)
{
        *dst = *src;
        dst->comm = src->comm ? strdup(src->comm) : NULL;
        dst->cmdline = src->cmdline ? strdup(src->cmdline) : NULL;
        dst->cgroup = src->cgroup ? strdup(src->cgroup) : NULL;
        for (unsigned i = 0; i < src->n_env && i < HOST_MAX_ENV; i++)
                dst->env[i].value = src->env[i].value ? strdup(src->env[i].value) : NULL;
}

const struct pid_fact *facts_pid(const struct facts *f, uint32_t pid)
{
        for (size_t i = 0; i < f->n_pids; i++)
                if (f->pids[i].pid == pid)
                        return &f->pids[i];
        return NULL;
}

static int facts_add_pid(struct facts *f, const struct host_opts *ho, uint32_t pid)
{
        if (facts_pid(f, pid))
                return 0;
        struct pid_fact *n = realloc(f->pids, (f->n_pids + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        f->pids = n;
        struct pid_fact *pf = &f->pids[f->n_pids++];
        memset(pf, 0, sizeof(*pf));
        pf->pid = pid;
        const struct host_proc *h = f->host ? host_report_find(f->host, (pid_t)pid) : NULL;
        if (h) {
                pf->present = true;
                pf->holder = true;
                facts_proc_copy(&pf->proc, h);
                return 0;
        }
        if (!f->host || pid > (uint32_t)0x7fffffff)
                return 0;
        int r = host_proc_lookup(ho, (pid_t)pid, &pf->proc);
        pf->present = r == 0;
        return 0;
}

static int facts_add_leader(struct facts *f, const struct host_opts *ho, pid_t pid)
{
        if (pid <= 0 || host_report_find(f->host, pid))
                return 0;
        for (size_t i = 0; i < f->n_leaders; i++)
                if (f->leaders[i].pid == pid)
                        return 0;
        struct pid_presence *n = realloc(f->leaders, (f->n_leaders + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        f->leaders = n;
        struct host_proc p;
        memset(&p, 0, sizeof(p));
        bool present = host_proc_lookup(ho, pid, &p) == 0;
        f->leaders[f->n_leaders++] = (struct pid_presence){ .pid = pid, .present = present,
                                                            .state = present ? p.state : '?' };
        if (present)
                host_proc_clear(&p);
        return 0;
}

void facts_take_kernel(struct facts *dst, struct facts *src)
{
        xid_list_free(&dst->kernel);
        dst->kernel = src->kernel;
        memset(&src->kernel, 0, sizeof(src->kernel));
        dst->kernel_read = src->kernel_read;
        dst->kernel_this_host = src->kernel_this_host;
        dst->kernel_overruns = src->kernel_overruns;
        dst->kernel_boot_time = src->kernel_boot_time;
        memcpy(dst->kernel_source, src->kernel_source, sizeof(dst->kernel_source));
        memcpy(dst->kernel_error, src->kernel_error, sizeof(dst->kernel_error));
        if (dst->kernel_this_host)
                xid_map_gpus(dst->kernel.ev, dst->kernel.n, dst->gpu);
}

bool facts_pid_alive(const struct facts *f, pid_t pid)
{
        const struct host_proc *h = f->host ? host_report_find(f->host, pid) : NULL;
        if (h)
                return h->state != 'Z';
        const struct pid_fact *pf = pid > 0 ? facts_pid(f, (uint32_t)pid) : NULL;
        if (pf)
                return pf->present && pf->proc.state != 'Z';
        for (size_t i = 0; i < f->n_leaders; i++)
                if (f->leaders[i].pid == pid)
                        return f->leaders[i].present && f->leaders[i].state != 'Z';
        return false;
}

/* A bundle keeps the NVIDIA lines of the kernel log as they were read, as a saved log that
 * --from-bundle reads back (DIR/kmsg), and the boot time their stamps were dated with
 * (DIR/kmsg.boot): read back on another host, or a moment later here (the boot time is
 * derived from two clocks, a microsecond apart from one reading to the next), the events keep
 * the times the judgement saw. */
static int save_kernel(const struct facts *f, const char *dir)
{
        struct buf b = BUF_INIT(0);
        for (size_t i = 0; i < f->kernel.n; i++) {
                const char *raw = f->kernel.ev[i].raw;
                if (!raw || !*raw)
                        continue;
                if (buf_puts(&b, raw) < 0 || buf_putc(&b, '\n') < 0) {
                        buf_free(&b);
                        return -ENOMEM;
                }
        }
        char path[4096];
        snprintf(path, sizeof(path), "%s/kmsg", dir);
        int r = write_file_atomic(path, buf_str(&b), b.len);
        buf_free(&b);
        if (r < 0 || f->kernel_boot_time <= 0)
                return r;
        char boot[64];
        int n = snprintf(boot, sizeof(boot), "%.17g\n", f->kernel_boot_time);
        snprintf(path, sizeof(path), "%s/kmsg.boot", dir);
        return write_file_atomic(path, boot, (size_t)n);
}

static void read_kernel(struct facts *f, const struct facts_opts *o)
{
        struct xid_source_info info;
        memset(&info, 0, sizeof(info));
        char err[KMSG_ERR_MAX] = "";
        int r = xid_collect(&o->kernel, &f->kernel, &info, err, sizeof(err), &f->kernel_overruns);
        if (r < 0) {
                /* scan goes on without the kernel's side, and says so */
                snprintf(f->kernel_error, sizeof(f->kernel_error), _("kernel log not read: %s"),
                         err[0] ? err : strerror(-r));
                return;
        }
        f->kernel_error[0] = '\0';
        f->kernel_read = !info.no_log;
        f->kernel_this_host = info.this_host;
        f->kernel_boot_time = info.boot_time;
        snprintf(f->kernel_source, sizeof(f->kernel_source), "%s", kmsg_source_name(info.source));
        if (info.this_host)
                xid_map_gpus(f->kernel.ev, f->kernel.n, f->gpu);
}

/* The host side of an owners-only sample: the PIDs every GPU lists, and nobody else. */
static int scan_listed(const struct gpu_report *gpu, const struct host_opts *ho, struct host_report **ret)
{
        size_t n = 0;
        for (size_t g = 0; g < gpu->n_gpus; g++)
                n += gpu->gpus[g].n_procs;
        pid_t *pids = calloc(n ? n : 1, sizeof(*pids));
        if (!pids)
                return -ENOMEM;
        n = 0;
        for (size_t g = 0; g < gpu->n_gpus; g++)
                for (size_t i = 0; i < gpu->gpus[g].n_procs; i++)
                        if (gpu->gpus[g].procs[i].pid <= (uint32_t)0x7fffffff)
                                pids[n++] = (pid_t)gpu->gpus[g].procs[i].pid;
        int r = host_scan_pids(ho, pids, n, ret);
        free(pids);
        return r;
}

int facts_collect(const struct facts_opts *o, struct facts **ret)
{
        struct gpu_report *gpu = NULL;
        int r = gpu_collect(&o->gpu, &gpu);
        if (r < 0)
                return r;
        return facts_collect_from(o, gpu, ret);
}

int facts_collect_from(const struct facts_opts *o, struct gpu_report *gpu, struct facts **ret)
{
        struct facts *f = calloc(1, sizeof(*f));
        int r;
        if (!f) {
                gpu_report_free(gpu);
                return -ENOMEM;
        }
        f->simulated = o->simulated;
        f->from_bundle = o->gpu.bundle_dir != NULL;
        f->gpu = gpu;
        if (o->save_bundle) {
                r = gpu_report_save_bundle(f->gpu, o->save_bundle);
                if (r < 0)
                        goto fail;
        }
        if (o->owners_only) {
                r = scan_listed(f->gpu, &o->host, &f->host);
                if (r < 0)
                        goto fail;
        } else if (!o->skip_host) {
                r = host_scan(&o->host, &f->host);
                if (r < 0)
                        goto fail;
        }
        for (size_t g = 0; g < f->gpu->n_gpus; g++) {
                const struct gpu_info *gi = &f->gpu->gpus[g];
                for (size_t i = 0; i < gi->n_procs; i++) {
                        r = facts_add_pid(f, &o->host, gi->procs[i].pid);
                        if (r < 0)
                                goto fail;
                }
        }
        if (o->read_kernel) {
                read_kernel(f, o);
                if (o->save_bundle && f->kernel_read && (r = save_kernel(f, o->save_bundle)) < 0)
                        goto fail;
        }
        /* our own facts, only from the live /proc (a fixture tree's PIDs are not ours), or as a
         * bundle recorded them (the walk that recorded it saved the recording process's) */
        if (f->host && !o->owners_only && !f->from_bundle && (!o->host.proc_root || strcmp(o->host.proc_root, "/proc") == 0)) {
                struct host_opts so = o->host;
                so.save_dir = NULL;
                f->self_known = host_proc_lookup(&so, getpid(), &f->self) == 0;
        } else if (f->host && !o->owners_only && f->from_bundle && f->host->self_saved) {
                f->self_known = host_proc_lookup(&o->host, f->host->self_pid, &f->self) == 0;
        }
        for (size_t i = 0; f->host && !o->owners_only && i < f->host->n_holders; i++) {
                const struct host_proc *h = &f->host->holders[i];
                r = facts_add_leader(f, &o->host, h->pgid);
                if (r == 0)
                        r = facts_add_leader(f, &o->host, h->sid);
                /* and its parent: a family whose parents all live was started by a live process */
                if (r == 0 && h->ppid > 1)
                        r = facts_add_leader(f, &o->host, h->ppid);
                if (r < 0)
                        goto fail;
        }
        *ret = f;
        return 0;
fail:
        facts_free(f);
        return r;
}

void facts_free(struct facts *f)
{
        if (!f)
                return;
        gpu_report_free(f->gpu);
        host_report_free(f->host);
        for (size_t i = 0; i < f->n_pids; i++)
                host_proc_clear(&f->pids[i].proc);
        free(f->pids);
        free(f->leaders);
        if (f->self_known)
                host_proc_clear(&f->self);
        xid_list_free(&f->kernel);
        free(f);
}
