/* host_bpf: the holder walk done by the kernel's BPF iterators (src/bpf/holders.bpf.c): one
 * read of iter/task, iter/task_file and iter/task_vma gives every process of our PID namespace,
 * every descriptor and every mapping on a candidate file, without a syscall per process or per
 * descriptor. host_scan.c names what was found with the rule of its /proc walk.
 *
 * Needs: the skeletons built in (GV_HAVE_BPF), kernel BTF (/sys/kernel/btf/vmlinux), kernel 5.8
 * (task_file) and 5.12 (task_vma), CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN in the initial user
 * namespace, and no lockdown that forbids reading kernel memory. Any of them missing is an
 * error with a sentence, and the walk falls back to /proc. From Linux 5.17 the light skeleton
 * loads them (the kernel relocates them against its own BTF, in about 4 ms); before, the full
 * one (libbpf parses and searches the kernel's 5 MiB of BTF here, about 30 ms). */
#include "collect/host_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "config.h"
#include "util/i18n.h"

bool host_bpf_full_only;

#if GV_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <pthread.h>

#include "bpf/holders_bpf.h"
#include "holders.skel.h"
/* the light skeleton's generated code subtracts void pointers: not ours to fix */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpointer-arith"
#include "holders.lskel.h"
#pragma GCC diagnostic pop

/* Records from one iterator are at most this many bytes (a 40-byte record each). */
#define HOST_BPF_CAP (256u << 20)

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
        (void)level;
        (void)fmt;
        (void)ap;
        return 0;       /* library code does not print: errors come back as numbers */
}

static pthread_once_t print_once = PTHREAD_ONCE_INIT;

static void quiet_libbpf(void)
{
        libbpf_set_print(silent_print);
}

static uint64_t kdev(dev_t d)
{
        return ((uint64_t)major(d) << 20) | (uint64_t)minor(d);
}

static dev_t udev(uint64_t k)
{
        return makedev((unsigned)(k >> 20), (unsigned)(k & 0xfffff));
}

/* The iterators as loaded, by either skeleton. */
struct iters {
        struct holders_lbpf *light;
        struct holders_bpf *full;
        int tasks, files, vmas;         /* the programs' fds */
        int targets;                    /* the map's fd */
        struct gv_cfg *cfg;             /* the programs' .bss, mapped */
};

static void iters_free(struct iters *it)
{
        holders_lbpf__destroy(it->light);
        holders_bpf__destroy(it->full);
        memset(it, 0, sizeof(*it));
}

/* The light skeleton first: its loader program has the kernel do the CO-RE relocations
 * against its own BTF (Linux 5.17); else the full skeleton, with libbpf reading and searching
 * the kernel's BTF in this process (about 30 ms). 0, or the full skeleton's negative errno and
 * what failed in *ret_what. */
static int iters_load(struct iters *it, const char **ret_what)
{
        memset(it, 0, sizeof(*it));
        it->light = host_bpf_full_only ? NULL : holders_lbpf__open();
        if (it->light && holders_lbpf__load(it->light) == 0) {
                it->tasks = it->light->progs.gv_tasks.prog_fd;
                it->files = it->light->progs.gv_files.prog_fd;
                it->vmas = it->light->progs.gv_vmas.prog_fd;
                it->targets = it->light->maps.targets.map_fd;
                it->cfg = &it->light->bss->cfg;
                return 0;
        }
        holders_lbpf__destroy(it->light);
        it->light = NULL;
        it->full = holders_bpf__open();
        if (!it->full) {
                *ret_what = N_("BPF iterators not opened");
                return host_neg_errno();
        }
        int r = holders_bpf__load(it->full);
        if (r < 0) {
                *ret_what = N_("BPF iterators not loaded");
                return r;
        }
        it->tasks = bpf_program__fd(it->full->progs.gv_tasks);
        it->files = bpf_program__fd(it->full->progs.gv_files);
        it->vmas = bpf_program__fd(it->full->progs.gv_vmas);
        it->targets = bpf_map__fd(it->full->maps.targets);
        it->cfg = &it->full->bss->cfg;
        return 0;
}

/* Run one iterator program to the end; its records are appended to *buf. */
static int read_iter(int prog_fd, struct buf *out)
{
        int link = bpf_link_create(prog_fd, 0, BPF_TRACE_ITER, NULL);
        if (link < 0)
                return link;
        int r = 0;
        int fd = bpf_iter_create(link);
        if (fd < 0) {
                r = fd;
                goto out;
        }
        char chunk[65536];
        for (;;) {
                ssize_t k = read(fd, chunk, sizeof(chunk));
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = host_neg_errno();
                        break;
                }
                if (k == 0)
                        break;
                if (buf_append(out, chunk, (size_t)k) < 0) {
                        r = -E2BIG;
                        break;
                }
        }
        close(fd);
out:
        close(link);
        return r;
}

static void say(char **err, int e, const char *what)
{
        const char *why = e == -EPERM || e == -EACCES ? _("needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, in the initial user namespace (or lockdown forbids it)")
                        : e == -ENOENT || e == -ESRCH ? _("the kernel has no BTF or lacks the task_file/task_vma iterators (Linux 5.8/5.12)")
                        : e == -EINVAL || e == -ENOTSUP || e == -EOPNOTSUPP ? _("the kernel does not support the iterators (Linux 5.12 with BTF needed)")
                        : strerror(-e);
        str_setf(err, "%s: %s", _(what), why);
}

/* One target file in the programs' configuration and map: its filesystem, its character
 * device's major, its dev:ino and (a character device) its device number. */
static int add_target(const struct iters *it, const struct host_bpf_target *t, char **err)
{
        struct gv_cfg *cfg = it->cfg;
        uint32_t one = 1;
        uint32_t sd = (uint32_t)kdev(t->dev);
        unsigned d;
        for (d = 0; d < cfg->n_s_devs && cfg->s_devs[d] != sd; d++)
                ;
        if (d == cfg->n_s_devs) {
                if (d == GV_MAX_SDEVS) {
                        str_setf(err, _("BPF iterators not used: device nodes on more than %d filesystems"),
                                 GV_MAX_SDEVS);
                        return -E2BIG;
                }
                cfg->s_devs[cfg->n_s_devs++] = sd;
        }
        if (t->chr && major(t->rdev) < GV_MAX_MAJOR)
                cfg->chr_majors[major(t->rdev)] = 1;
        struct gv_key k = { .dev = kdev(t->dev), .ino = (uint64_t)t->ino };
        int r = bpf_map_update_elem(it->targets, &k, &one, BPF_ANY);
        if (r == 0 && t->chr) {
                k = (struct gv_key){ .dev = kdev(t->rdev), .ino = GV_KEY_RDEV };
                r = bpf_map_update_elem(it->targets, &k, &one, BPF_ANY);
        }
        if (r < 0)
                say(err, r, N_("BPF map not filled"));
        return r;
}

/* What the programs look for: the spec's target files and nvidia majors. */
static int fill_targets(const struct iters *it, const struct host_bpf_spec *s, char **err)
{
        uint32_t one = 1;
        for (size_t i = 0; i < s->n_targets; i++) {
                int r = add_target(it, &s->targets[i], err);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < s->n_majors; i++) {
                struct gv_key k = { .dev = s->majors[i], .ino = GV_KEY_MAJOR };
                if (s->majors[i] < GV_MAX_MAJOR)
                        it->cfg->chr_majors[s->majors[i]] = 1;
                int r = bpf_map_update_elem(it->targets, &k, &one, BPF_ANY);
                if (r < 0) {
                        say(err, r, N_("BPF map not filled"));
                        return r;
                }
        }
        return 0;
}

/* The three iterators' records, appended to b. */
static int read_iters(const struct iters *it, struct buf *b, char **err)
{
        struct gv_cfg *cfg = it->cfg;
        /* tasks first: a process that starts later has no records and is not one */
        int r = read_iter(it->tasks, b);
        if (r == 0)
                r = read_iter(it->files, b);
        if (r == 0) {
                cfg->last_seen = 0;
                cfg->last_tid = 0;
                cfg->last_pid = 0;
                r = read_iter(it->vmas, b);
        }
        if (r < 0)
                say(err, r, N_("BPF iterators not read"));
        return r;
}

/* One record into res: a task (or one whose address space was read), and a descriptor or
 * mapping on a target file. */
static int add_record(struct host_bpf_result *res, const struct gv_rec *g)
{
        if (g->kind == GV_REC_TASK || g->kind == GV_REC_VMA_SEEN || (g->kind == GV_REC_VMA && g->b == 1)) {
                if (host_grow(&res->tasks, &res->tasks_alloc, res->n_tasks, sizeof(*res->tasks)) < 0)
                        return -ENOMEM;
                struct host_bpf_task *t = &res->tasks[res->n_tasks++];
                memset(t, 0, sizeof(*t));
                t->pid = (pid_t)g->pid;
                t->seen_only = g->kind != GV_REC_TASK;
                if (g->kind == GV_REC_TASK) {
                        t->flags = g->a;
                        t->state = g->b;
                        t->has_mm = g->dev != 0;
                        t->exit_state = (unsigned)g->ino;
                }
        }
        if (g->kind != GV_REC_FD && g->kind != GV_REC_VMA)
                return 0;
        if (host_grow(&res->hits, &res->hits_alloc, res->n_hits, sizeof(*res->hits)) < 0)
                return -ENOMEM;
        struct host_bpf_hit *h = &res->hits[res->n_hits++];
        memset(h, 0, sizeof(*h));
        h->pid = (pid_t)g->pid;
        h->via = g->kind == GV_REC_FD ? HOST_VIA_FD : HOST_VIA_MMAP;
        h->fd = (int)g->a;
        h->chr = g->b == 1;
        h->dev = udev(g->dev);
        h->ino = (ino_t)g->ino;
        h->rdev = udev(g->rdev);
        h->file = g->file;
        return 0;
}

int host_bpf_collect(const struct host_bpf_spec *s, struct host_bpf_result *ret, char **err)
{
        struct iters it;
        struct buf b = BUF_INIT(HOST_BPF_CAP);
        struct host_bpf_result res;
        int r;
        memset(&it, 0, sizeof(it));
        memset(&res, 0, sizeof(res));
        pthread_once(&print_once, quiet_libbpf);
        if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
                r = -ENOENT;
                str_setf(err, "%s", _("BPF iterators not loaded: the kernel exposes no BTF (/sys/kernel/btf/vmlinux)"));
                goto out;
        }
        const char *what = "";
        r = iters_load(&it, &what);
        if (r < 0) {
                say(err, r, what);
                goto out;
        }
        r = fill_targets(&it, s, err);
        if (r < 0)
                goto out;
        r = read_iters(&it, &b, err);
        if (r < 0)
                goto out;
        size_t n = b.len / sizeof(struct gv_rec);
        for (size_t i = 0; i < n; i++) {
                struct gv_rec g;
                memcpy(&g, b.data + i * sizeof(g), sizeof(g));
                r = add_record(&res, &g);
                if (r < 0)
                        goto out;
        }
        *ret = res;
        memset(&res, 0, sizeof(res));
        r = 0;
out:
        iters_free(&it);
        buf_free(&b);
        host_bpf_result_free(&res);
        return r;
}

#else

int host_bpf_collect(const struct host_bpf_spec *s, struct host_bpf_result *ret, char **err)
{
        (void)s;
        (void)ret;
        str_setf(err, "%s", _("BPF iterators not built in (configured with -DGV_BPF=OFF)"));
        return -EOPNOTSUPP;
}

#endif

void host_bpf_result_free(struct host_bpf_result *r)
{
        if (!r)
                return;
        free(r->tasks);
        free(r->hits);
        memset(r, 0, sizeof(*r));
}
