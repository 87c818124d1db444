#define _GNU_SOURCE 1
/* escalate: GPU reset and nvidia_uvm reload, with their checks. See escalate.h. */
#include "act/escalate.h"
#include "model/daemons.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "act/poke.h"
#include "act/reclaim_plan.h"
#include "collect/xid.h"
#include "config.h"
#include "util/deadline.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/pidfd.h"
#include "util/spawn.h"

#if GV_HAVE_LIBKMOD
#include <libkmod.h>
#endif

void escalate_line(char **lines, size_t *n, const char *fmt, ...)
{
        if (*n >= ESC_MAX_LINES)
                return;
        va_list ap;
        va_start(ap, fmt);
        int r = str_vsetf(&lines[*n], fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        /* the same advice twice helps nobody */
        for (size_t i = 0; i < *n; i++)
                if (strcmp(lines[i], lines[*n]) == 0) {
                        str_clear(&lines[*n]);
                        return;
                }
        (*n)++;
}

void escalate_report_clear(struct escalate_report *r)
{
        for (size_t i = 0; i < r->n_reasons; i++)
                free(r->reasons[i]);
        for (size_t i = 0; i < r->n_fixes; i++)
                free(r->fixes[i]);
        for (size_t i = 0; i < r->n_warnings; i++)
                free(r->warnings[i]);
        free(r->command);
        memset(r, 0, sizeof(*r));
}

#define REFUSE(out, ...)                                       \
        do {                                                   \
                (out)->refuse = true;                          \
                escalate_line((out)->reasons, &(out)->n_reasons, __VA_ARGS__); \
        } while (0)
#define FIX(out, ...) escalate_line((out)->fixes, &(out)->n_fixes, __VA_ARGS__)
#define WARN(out, ...) escalate_line((out)->warnings, &(out)->n_warnings, __VA_ARGS__)

/* Would `ghostvram reclaim --pid PID` (with --force or not) accept to end it? The plan's own
 * rules decide, so that the advice never names a command reclaim refuses. */
static bool reclaim_would_end(const struct scan_result *r, pid_t pid, pid_t self_pid, bool force)
{
        struct reclaim_plan_opts po = { .self_pid = self_pid, .explicit_pids = &pid, .n_explicit = 1,
                                        .only_gpu = -1, .force = force };
        struct reclaim_plan *p = NULL;
        if (reclaim_plan_build(r, &po, &p) < 0)
                return false;
        bool yes = p->n_targets == 1 && p->targets[0].pid == pid;
        reclaim_plan_free(p);
        return yes;
}

/* How to stop a process that holds a GPU, by what it is. */
static void stop_advice(struct escalate_report *out, const struct scan_result *r, const struct host_proc *h,
                        pid_t self_pid)
{
        const struct gpu_daemon *d = gpu_daemon_of(h);
        const char *comm = h->comm ? h->comm : "";
        if (d && strcmp(d->kind, "ghostvram") == 0)
                FIX(out, _("stop the running ghostvram (PID %d; `systemctl stop ghostvram` if it is `ghostvram serve`)"),
                    (int)h->pid);
        else if (d)
                FIX(out, "%s", _(d->stop));
        else if (reclaim_would_end(r, h->pid, self_pid, false))
                FIX(out, _("end PID %d (%s): stop its job, or `ghostvram reclaim --pid %d --yes`"), (int)h->pid, comm,
                    (int)h->pid);
        else if (reclaim_would_end(r, h->pid, self_pid, true))
                FIX(out, _("end PID %d (%s): it belongs to a live job, so let the job finish or stop it with its scheduler "
                         "(`ghostvram reclaim --pid %d --force --yes` ends it anyway, and the job with it)"),
                    (int)h->pid, comm, (int)h->pid);
        else
                FIX(out, _("end PID %d (%s): stop its job (reclaim never ends this process)"), (int)h->pid, comm);
}

static const struct gpu_info *gpu_of(const struct scan_result *r, unsigned index, const struct gpu_ledger **ret_l)
{
        for (size_t i = 0; i < r->n_gpus && r->facts->gpu && i < r->facts->gpu->n_gpus; i++)
                if (r->facts->gpu->gpus[i].index == index) {
                        *ret_l = &r->gpus[i];
                        return &r->facts->gpu->gpus[i];
                }
        return NULL;
}

/* Hopper (H100, H200, H800, GH200) and later reset one GPU at a time even on NVLink. */
static bool hopper_or_later(const char *name)
{
        static const char *const marks[] = { "H100", "H200", "H800", "H20", "GH200", "B100", "B200", "GB200", "B300",
                                             "GB300", "RTX PRO 6000 Blackwell" };
        for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
                if (name && strstr(name, marks[i]))
                        return true;
        return false;
}

int escalate_reset_check(const struct scan_result *r, const struct escalate_reset_opts *o,
                         struct escalate_report *out)
{
        memset(out, 0, sizeof(*out));
        const struct gpu_ledger *l = NULL;
        const struct gpu_info *g = gpu_of(r, o->gpu, &l);
        if (!g) {
                REFUSE(out, P_("GPU %u is not on this host (%zu GPU)", "GPU %u is not on this host (%zu GPUs)", r->n_gpus), o->gpu,
                       r->n_gpus);
                return 0;
        }
        const char *bus = g->pci_bus_id[0] ? g->pci_bus_id : "?";
        str_setf(&out->command, "nvidia-smi --gpu-reset -i %s", bus);

        const struct xid_event *lost = ledger_lost_event(r->facts, o->gpu);
        if (g->status == GPU_LOST || lost) {
                REFUSE(out,
                       lost ? _("GPU %u had an Xid 79 since the driver loaded: a reset does not bring back a GPU that fell "
                                "off the bus")
                            : _("GPU %u is lost (NVML: GPU_IS_LOST): a reset does not bring back a GPU that fell off the bus"),
                       o->gpu);
                FIX(out, _("drain the node and reboot it (`ghostvram xid explain 79`)"));
        }
        if (g->mig_mode == 1 && !o->force) {
                REFUSE(out, _("MIG is enabled on GPU %u: a reset destroys every GPU and compute instance, other tenants' too"),
                       o->gpu);
                FIX(out, _("stop the work in every MIG instance of GPU %u, then add --force"), o->gpu);
        } else if (g->mig_mode == 1) {
                WARN(out, _("MIG is enabled: the reset destroys every GPU and compute instance of GPU %u (--force)"), o->gpu);
        }
        /* whoever holds the GPU's node, or is listed on it */
        char node[32];
        snprintf(node, sizeof(node), "nvidia%u", g->minor_known ? g->minor : g->index);
        const struct host_report *h = r->facts->host;
        for (size_t i = 0; h && i < h->n_holders; i++) {
                const struct host_proc *hp = &h->holders[i];
                if (hp->pid == o->self_pid || !host_proc_holds(hp, node))
                        continue;
                REFUSE(out, _("PID %d (%s) holds /dev/%s"), (int)hp->pid, hp->comm ? hp->comm : "?", node);
                stop_advice(out, r, hp, o->self_pid);
        }
        for (size_t k = 0; l && k < l->n_owners; k++) {
                const struct owner *ow = &l->owners[k];
                if (ow->cls != OWNER_LIVE && ow->cls != OWNER_FOREIGN)
                        continue;
                if (h && host_report_find(h, (pid_t)ow->pid))
                        continue; /* named above */
                REFUSE(out, _("NVML lists PID %u on GPU %u (%s)"), ow->pid, o->gpu, str_or_empty(ow->why));
                FIX(out, _("end PID %u's job first"), ow->pid);
        }
        if (g->persistence == 1) {
                REFUSE(out, _("persistence mode is on for GPU %u: the driver keeps the GPU open"), o->gpu);
                FIX(out, _("turn it off: `nvidia-smi -pm 0 -i %s` (and `systemctl stop nvidia-persistenced` if the daemon runs)"),
                    bus);
        }
        if (!hopper_or_later(g->name))
                WARN(out, _("on NVLink systems before Hopper (e.g. A100/V100 HGX) GPUs must be reset together with their "
                          "NVLink peers: stop them all and run `nvidia-smi --gpu-reset` without -i"));
        WARN(out, _("ghostvram releases its own NVML session before the reset"));
        /* the guide's step before a reset: a new client may make the driver finish a dead
         * context's teardown (docs/reclaim.md, "The poke"); offered only where the poke's own
         * checks would let it run (no live job, no MIG, not lost) */
        struct escalate_report pk;
        const struct poke_check_opts po = { .gpu = o->gpu, .have_lib = true };
        if (poke_check(r, &po, &pk) == 0 && !pk.refuse)
                WARN(out, _("before a reset, try the poke (it ends nothing): `sudo ghostvram reclaim --poke --gpu %u` shows what it does"),
                     o->gpu);
        escalate_report_clear(&pk);
        if (!o->root && !o->simulated) {
                REFUSE(out, _("a GPU reset needs root"));
                FIX(out, _("run it as root: `sudo ghostvram reclaim --reset-gpu --gpu %u --yes`"), o->gpu);
        }
        if (o->simulated && !out->refuse) {
                REFUSE(out, _("simulated host: `%s` is not run (GHOSTVRAM_SIM resets nothing)"), out->command);
                FIX(out, _("on a real host every check above passed: the reset would run"));
        }
        return 0;
}

int escalate_uvm_check(const struct scan_result *r, const struct escalate_uvm_opts *o,
                       const struct escalate_uvm_state *st, struct escalate_report *out)
{
        memset(out, 0, sizeof(*out));
        /* what a user would paste (it is done through libkmod, not by running modprobe) */
        str_set(&out->command, "modprobe -r nvidia_uvm && modprobe nvidia_uvm");
        if (o->simulated) {
                REFUSE(out, _("simulated host: there is no nvidia_uvm module to reload (GHOSTVRAM_SIM)"));
        } else {
                if (!st->have_kmod) {
                        REFUSE(out, _("this ghostvram was built without libkmod"));
                        FIX(out, _("rebuild with libkmod-dev installed, or run `modprobe -r nvidia_uvm && modprobe nvidia_uvm`"));
                }
                if (!st->module_loaded)
                        REFUSE(out, _("nvidia_uvm is not loaded: there is nothing to reload"));
                else if (st->refcnt > 0)
                        REFUSE(out, _("nvidia_uvm is in use (reference count %ld)"), st->refcnt);
        }
        const struct host_report *h = r->facts->host;
        size_t holders = 0;
        for (size_t i = 0; h && i < h->n_holders; i++) {
                const struct host_proc *hp = &h->holders[i];
                if (hp->pid == o->self_pid || !host_proc_holds(hp, "nvidia-uvm"))
                        continue;
                if (holders++ < 8)
                        REFUSE(out, _("PID %d (%s) holds nvidia-uvm"), (int)hp->pid, hp->comm ? hp->comm : "?");
        }
        if (holders > 8)
                REFUSE(out, _("... and %zu more processes hold nvidia-uvm"), holders - 8);
        if (holders)
                FIX(out, _("every CUDA process holds nvidia-uvm: end them first (`ghostvram reclaim --yes`, or stop the jobs)"));
        if (!o->force) {
                REFUSE(out, _("--force is required: a reload cuts off every CUDA process and container on this host"));
                FIX(out, _("add --force once nothing uses CUDA on this host"));
        }
        if (!o->root && !o->simulated) {
                REFUSE(out, _("reloading a kernel module needs root"));
                FIX(out, _("run it as root"));
        }
        WARN(out, _("the nvidia-uvm device's major number may change on reload (now %u): containers started with the "
                  "old one lose access to /dev/nvidia-uvm until they restart"),
             st->major);
        return 0;
}

int escalate_uvm_state_read(const char *sys_root, const char *proc_root, struct escalate_uvm_state *ret)
{
        memset(ret, 0, sizeof(*ret));
        ret->refcnt = -1;
#if GV_HAVE_LIBKMOD
        ret->have_kmod = true;
#endif
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof(p), "%s/module/nvidia_uvm", sys_root ? sys_root : "/sys");
        ret->module_loaded = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
        snprintf(p, sizeof(p), "%s/module/nvidia_uvm/refcnt", sys_root ? sys_root : "/sys");
        char *buf = NULL;
        size_t len = 0;
        if (read_file_at(AT_FDCWD, p, 64, &buf, &len) == 0) {
                buf[strcspn(buf, "\n")] = '\0';
                uint64_t v;
                if (parse_u64(buf, &v) == 0 && v < LONG_MAX)
                        ret->refcnt = (long)v;
                free(buf);
        }
        snprintf(p, sizeof(p), "%s/devices", proc_root ? proc_root : "/proc");
        if (read_file_at(AT_FDCWD, p, 1 << 16, &buf, &len) == 0) {
                char *save = NULL;
                for (char *ln = strtok_r(buf, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
                        unsigned maj;
                        char name[64];
                        if (sscanf(ln, " %u %63s", &maj, name) == 2 && strcmp(name, "nvidia-uvm") == 0)
                                ret->major = maj;
                }
                free(buf);
        }
        return 0;
}

int escalate_uvm_reload(char *err, size_t errlen)
{
        /* i18n: no: err goes to syslog as it is, and syslog lines stay English */
#if GV_HAVE_LIBKMOD
        struct kmod_ctx *ctx = kmod_new(NULL, NULL);
        struct kmod_module *mod = NULL;
        int r;
        if (!ctx) {
                snprintf(err, errlen, "libkmod: cannot start");
                return -ENOMEM;
        }
        r = kmod_module_new_from_name(ctx, "nvidia_uvm", &mod);
        if (r < 0) {
                snprintf(err, errlen, "libkmod: nvidia_uvm: %s", strerror(-r));
                goto out;
        }
        r = kmod_module_remove_module(mod, 0);
        if (r < 0) {
                snprintf(err, errlen, "unloading nvidia_uvm failed: %s", strerror(-r));
                goto out;
        }
        r = kmod_module_probe_insert_module(mod, 0, NULL, NULL, NULL, NULL);
        if (r < 0)
                snprintf(err, errlen, "loading nvidia_uvm again failed: %s (run `modprobe nvidia_uvm`)", strerror(-r));
out:
        kmod_module_unref(mod);
        kmod_unref(ctx);
        return r < 0 ? r : 0;
#else
        snprintf(err, errlen, "built without libkmod");
        return -ENOTSUP;
#endif
}

int escalate_find_program(const char *name, char *out, size_t outlen)
{
        const char *path = getenv("PATH");
        if (!path || !*path)
                path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        while (*path) {
                size_t n = strcspn(path, ":");
                if (n > 0 && n < PATH_MAX) {
                        int w = snprintf(out, outlen, "%.*s/%s", (int)n, path, name);
                        if (w > 0 && (size_t)w < outlen && access(out, X_OK) == 0)
                                return 0;
                }
                path += n;
                if (*path == ':')
                        path++;
        }
        return -ENOENT;
}

/* Reap `pid` if it has exited, polling until deadline (monotonic ms). true when reaped. */
static bool reap_until(pid_t pid, unsigned long long deadline, int *st)
{
        for (;;) {
                pid_t w = waitpid(pid, st, WNOHANG);
                if (w == pid || (w < 0 && errno == ECHILD))
                        return true;
                if (monotonic_ms() >= deadline)
                        return false;
                struct timespec ts = { 0, 10 * 1000000L };
                nanosleep(&ts, NULL);
        }
}

int escalate_run(char *const argv[], unsigned timeout_ms, struct buf *out, int *ret_status, pid_t *ret_stuck)
{
        int p[2];
        pid_t pid;
        *ret_stuck = 0;
        int fr = fork_pipe(p, &pid);
        if (fr < 0)
                return fr;
        if (pid == 0) {
                /* only async-signal-safe calls until exec */
                int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (nul < 0 || dup2(nul, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
                        _exit(126);
                execv(argv[0], argv);
                _exit(127);
        }
        int pidfd = pidfd_open_fd(pid);
        unsigned long long deadline = monotonic_ms() + timeout_ms;
        struct buf sink = BUF_INIT(1 << 16);
        int r;
        while ((r = fd_read_deadline(p[0], out ? out : &sink, deadline)) == -EINTR)
                ;
        buf_free(&sink);
        close(p[0]);
        /* the output closed is not the program ended: wait for its exit, never past the deadline */
        int st = 0;
        bool killed = false;
        if (!reap_until(pid, deadline, &st)) {
                if (pidfd < 0)
                        return -ETIMEDOUT; /* no way to end it safely: not waited for */
                pidfd_signal(pidfd, SIGKILL); /* our own child */
                killed = true;
                /* a task in the driver (D state) takes the SIGKILL only when its call returns:
                 * wait a bounded while, then leave it and say so */
                if (!reap_until(pid, monotonic_ms() + ESCALATE_KILL_WAIT_MS, &st)) {
                        close(pidfd);
                        *ret_stuck = pid;
                        return -EDEADLK;
                }
        }
        if (pidfd >= 0)
                close(pidfd);
        if (killed)
                return -ETIMEDOUT;
        *ret_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        return 0;
}
