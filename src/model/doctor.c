/* doctor: the checks (docs/doctor.md). Facts in, findings out; nothing here reads a file. */
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/doctor.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/i18n.h"

#define GIB (1024.0 * 1024.0 * 1024.0)


/* Driver releases with a documented memory or teardown problem. Only rows with a source a
 * reader can open; none inferred. The range is [from, before). */
static const struct doctor_known_issue known_issues[] = {
        { { 390, 0, 0 }, { 390, 87, 0 }, false,
          N_("390 series before 390.87: a resource leak that could reduce performance after starting and "
          "stopping several OpenGL or Vulkan applications (fixed in 390.87)"),
          N_("upgrade to 390.87 or later in the branch"),
          "NVIDIA 390.87 release notes, quoted in https://github.com/LibreELEC/LibreELEC.tv/pull/2935" },
        { { 455, 23, 4 }, { 455, 23, 5 }, false,
          N_("455.23.04: page allocation failures in the kernel module at random points under memory load "
          "(NVIDIA published a patch in the forum thread)"),
          N_("upgrade to a later 455 or newer release"),
          "https://forums.developer.nvidia.com/t/455-23-04-page-allocation-failure-in-kernel-module-at-random-points/155250, "
          "via https://github.com/negativo17/nvidia-driver/issues/107" },
        { { 470, 0, 0 }, { 470, 74, 0 }, false,
          N_("470 series before 470.74: /proc/driver/nvidia/suspend could fail to preserve and restore video "
          "memory allocations when NVreg_TemporaryFilePath names an invalid path (fixed in 470.74)"),
          N_("upgrade to 470.74 or later, and point NVreg_TemporaryFilePath at a directory that exists"),
          "NVIDIA 470.74 release notes, quoted in https://github.com/smxi/sgfxi/pull/58" },
        { { 535, 161, 7 }, { 535, 161, 8 }, true,
          N_("535.161.07 open kernel modules: kernel memory reported leaked (kmemleak) after programs that "
          "cudaHostAlloc and copy to the GPU exit; not seen with the proprietary module of that version"),
          N_("use the proprietary module of this release or a later release, and watch MemAvailable across jobs"),
          "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/613 (open)" },
};

const struct doctor_known_issue *doctor_known_issues(size_t *ret_n)
{
        *ret_n = sizeof(known_issues) / sizeof(known_issues[0]);
        return known_issues;
}

const char *const doctor_prevention[] = {
        N_("End the whole job, not its leader. Forked workers (DataLoader, multiprocessing, torchrun "
        "ranks) inherit the CUDA context; killing the parent leaves them holding GPU memory. Kill "
        "the process group (kill -- -PGID) or, better, the cgroup (systemctl kill --kill-whom=all "
        "UNIT, or a scope made with systemd-run --scope), which also catches workers that called "
        "setsid()."),
        N_("Make workers die with their parent: prctl(PR_SET_PDEATHSIG, SIGKILL) right after fork in "
        "each worker (then check getppid() did not already change), so a killed launcher takes its "
        "workers with it."),
        N_("Prefer persistent workers (DataLoader(persistent_workers=True), one pool for the whole "
        "run) over forking new ones each epoch: fewer processes that can be orphaned, and none that "
        "inherit a context mid-teardown."),
        N_("Let the scheduler kill by cgroup: Slurm's proctrack/cgroup with TaskPlugin=task/cgroup, "
        "Kubernetes and systemd already do; a wrapper that only signals its child does not."),
        N_("CUDA_LAUNCH_BLOCKING=1 is a debugging aid, not a fix: it makes each kernel launch wait for "
        "completion so an error is reported at the call that caused it. It changes timing, not who "
        "holds memory; a ghost left by an orphaned worker stays a ghost, and the job runs slower."),
        N_("Release a framework's cache before measuring: torch.cuda.empty_cache() returns cached "
        "blocks to the driver; PYTORCH_CUDA_ALLOC_CONF (e.g. expandable_segments:True) shapes the "
        "cache; TensorFlow reserves nearly all memory unless tf.config.experimental."
        "set_memory_growth(gpu, True) is set. A cache belongs to a live process and goes when it "
        "exits: it is not a ghost."),
        N_("Keep nvidia-persistenced running on compute hosts: the driver stays initialised between "
        "jobs (faster starts, stable memory figures). It does not free a ghost: only ending the "
        "holder, or a GPU reset, does."),
        N_("Watch for it: `ghostvram watch --exec CMD` (CMD runs on each alert and clear, the finding in "
        "its environment) or the exporter's ghost gauge, and a daily cron `ghostvram doctor` mail; a "
        "ghost found minutes after a job is easier to explain than one found a week later."),
        NULL,
};

const char *doctor_level_name(enum doctor_level l)
{
        switch (l) {
        case DOCTOR_OK: return "ok";
        case DOCTOR_INFO: return "info";
        case DOCTOR_WARN: return "warn";
        case DOCTOR_UNKNOWN: return "unknown";
        }
        return "unknown";
}

/* ---- parsers ----------------------------------------------------------------------------- */

/* Copy the line of buf starting at p (at most cap-1 bytes) into out. */
static const char *next_line(const char *p, const char *end, char *out, size_t cap)
{
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        size_t n = (size_t)(e - p);
        if (n >= cap)
                n = cap - 1;
        memcpy(out, p, n);
        out[n] = '\0';
        return nl ? nl + 1 : end;
}

/* "535.161.07" -> 535, 161, 7 (missing parts are 0). 0 or -EINVAL (no leading number). */
static int version_split(const char *v, unsigned out[3])
{
        unsigned parts[3] = { 0, 0, 0 };
        const char *p = v;
        for (int i = 0; i < 3; i++) {
                uint64_t u;
                const char *e;
                if (parse_u64_prefix(p, 10, &u, &e) < 0 || e == p || u > 100000) {
                        if (i == 0)
                                return -EINVAL;
                        break;
                }
                parts[i] = (unsigned)u;
                if (*e != '.')
                        break;
                p = e + 1;
        }
        memcpy(out, parts, sizeof(parts));
        return 0;
}

int doctor_version_format(const unsigned v[3], char *ret, size_t len)
{
        char s[48];
        int n;
        if (v[2])
                n = snprintf(s, sizeof(s), "%u.%02u.%02u", v[0], v[1], v[2]);
        else if (v[1])
                n = snprintf(s, sizeof(s), "%u.%02u", v[0], v[1]);
        else
                n = snprintf(s, sizeof(s), "%u", v[0]);
        if (n < 0 || (size_t)n >= len)
                return -ENOBUFS;
        memcpy(ret, s, (size_t)n + 1);
        return 0;
}

static int version_cmp(const unsigned a[3], const unsigned b[3])
{
        for (int i = 0; i < 3; i++)
                if (a[i] != b[i])
                        return a[i] < b[i] ? -1 : 1;
        return 0;
}

int doctor_parse_module_version(const char *buf, size_t len, char *ret_ver, size_t verlen, bool *ret_open)
{
        /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.07  Wed Feb 28 ..." or
         * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build ..." */
        const char *end = buf + len, *p = buf;
        char line[512];
        while (p < end) {
                p = next_line(p, end, line, sizeof(line));
                if (strncmp(line, "NVRM version:", 13) != 0)
                        continue;
                const char *m = strstr(line, "Kernel Module");
                if (!m)
                        return -EINVAL;
                bool open = strstr(line, "Open Kernel Module") != NULL;
                /* the first token after "Kernel Module" (and "for ARCH") that starts with a digit */
                const char *t = m + strlen("Kernel Module");
                while (*t) {
                        while (*t == ' ' || *t == '\t')
                                t++;
                        size_t n = strcspn(t, " \t");
                        if (n && t[0] >= '0' && t[0] <= '9' && memchr(t, '.', n)) {
                                unsigned v[3];
                                char tok[64];
                                if (n >= sizeof(tok) || n >= verlen)
                                        return -EINVAL;
                                memcpy(tok, t, n);
                                tok[n] = '\0';
                                if (version_split(tok, v) < 0)
                                        return -EINVAL;
                                memcpy(ret_ver, tok, n + 1);
                                *ret_open = open;
                                return 0;
                        }
                        t += n;
                }
                return -EINVAL;
        }
        return -EINVAL;
}

int doctor_parse_modules(const char *buf, size_t len, const char *name, long *ret_refcount)
{
        /* "nvidia_uvm 1437696 2 - Live 0x0000000000000000 (PO)": name size refcount users state */
        const char *end = buf + len, *p = buf;
        char line[1024];
        size_t nl = strlen(name);
        while (p < end) {
                p = next_line(p, end, line, sizeof(line));
                if (strncmp(line, name, nl) != 0 || line[nl] != ' ')
                        continue;
                const char *q = line + nl + 1;
                uint64_t size, ref;
                const char *e;
                if (parse_u64_prefix(q, 10, &size, &e) < 0 || *e != ' ')
                        return -EINVAL;
                q = e + 1;
                if (parse_u64_prefix(q, 10, &ref, &e) < 0 || (*e != ' ' && *e != '\0') || ref > 1000000)
                        return -EINVAL;
                *ret_refcount = (long)ref;
                return 1;
        }
        return 0;
}

int doctor_parse_toolkit_mode(const char *buf, size_t len, char *ret_mode, size_t modelen)
{
        /* [nvidia-container-runtime] ... mode = "auto" (TOML; only that key of that table) */
        const char *end = buf + len, *p = buf;
        char line[512];
        bool in_runtime = false;
        if (modelen)
                ret_mode[0] = '\0';
        while (p < end) {
                p = next_line(p, end, line, sizeof(line));
                char *s = line;
                while (*s == ' ' || *s == '\t')
                        s++;
                if (*s == '[') {
                        in_runtime = strncmp(s, "[nvidia-container-runtime]", 26) == 0;
                        continue;
                }
                if (!in_runtime || strncmp(s, "mode", 4) != 0)
                        continue;
                s += 4;
                while (*s == ' ' || *s == '\t')
                        s++;
                if (*s != '=')
                        continue;
                s++;
                while (*s == ' ' || *s == '\t')
                        s++;
                if (*s != '"')
                        return -EINVAL;
                char *q = strchr(s + 1, '"');
                if (!q || (size_t)(q - s - 1) >= modelen)
                        return -EINVAL;
                memcpy(ret_mode, s + 1, (size_t)(q - s - 1));
                ret_mode[q - s - 1] = '\0';
                return 0;
        }
        return 0;
}

/* ---- findings ---------------------------------------------------------------------------- */

struct fl {
        struct doctor_finding *v;
        size_t n, cap;
        int err;
};

static struct doctor_finding *add(struct fl *l, const char *code, enum doctor_level level, int gpu)
{
        if (l->err)
                return NULL;
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 32;
                struct doctor_finding *n = realloc(l->v, cap * sizeof(*n));
                if (!n) {
                        l->err = -ENOMEM;
                        return NULL;
                }
                l->v = n;
                l->cap = cap;
        }
        struct doctor_finding *f = &l->v[l->n++];
        memset(f, 0, sizeof(*f));
        snprintf(f->code, sizeof(f->code), "%s", code);
        f->level = level;
        f->gpu = gpu;
        return f;
}

#define SET(f, field, ...)                                                                        \
        do {                                                                                      \
                if (f)                                                                            \
                        str_setf(&(f)->field, __VA_ARGS__);                                       \
        } while (0)

static bool gpu_selected(const struct doctor_facts *f, const struct gpu_info *g)
{
        return f->only_gpu < 0 || (unsigned)f->only_gpu == g->index;
}

static const char *persistenced_text(int p)
{
        return p == 1 ? _("nvidia-persistenced is running") : p == 0 ? _("nvidia-persistenced is not running")
                                                                      : _("whether nvidia-persistenced runs is unknown");
}

/* An Xid that pages in scan and check (the same rule) is one to act on here too */
static void check_recent_xid(const struct doctor_facts *f, const struct gpu_info *g, struct fl *l)
{
        struct xid_recent x = { 0 };
        struct doctor_finding *d;
        if (!f->kernel_read) {
                d = add(l, "recent-xid", DOCTOR_UNKNOWN, (int)g->index);
                SET(d, summary, _("GPU %u: whether it had a recent Xid could not be checked"), g->index);
                SET(d, evidence, "%s", f->kernel_error && *f->kernel_error ? f->kernel_error : _("the kernel log was not read"));
                SET(d, next_step, _("run as root (`sudo ghostvram doctor`), or read a saved log: `ghostvram xid --kmsg FILE`"));
                return;
        }
        if (!xid_recent_worst(f->kernel, f->n_kernel, g, f->kernel_this_host, NULL, f->now, f->xid_window_s, &x)) {
                d = add(l, "recent-xid", DOCTOR_OK, (int)g->index);
                SET(d, summary, _("GPU %u: no Xid of error severity or worse in the last %.0f s (--xid-window)"), g->index,
                    f->xid_window_s);
                return;
        }
        char when[40] = "";
        (void)xid_format_rfc3339(x.event->time, when, sizeof(when));
        d = add(l, "recent-xid", DOCTOR_WARN, (int)g->index);
        SET(d, summary, _("GPU %u: %s (%s): it pages"), g->index, x.summary, xid_severity_name(x.severity));
        SET(d, evidence, _("kernel log: Xid %d at %s for %s, after the driver's load and within the --xid-window (%.0f s)"),
            x.event->xid, when[0] ? when : _("(time unknown)"), x.event->pci_bus_id[0] ? x.event->pci_bus_id : _("this GPU"),
            f->xid_window_s);
        SET(d, next_step, "%s", x.next_step);
        xid_recent_clear(&x);
}

static void check_persistence(const struct doctor_facts *f, const struct gpu_info *g, struct fl *l)
{
        enum doctor_level lv = g->persistence == 0 ? DOCTOR_WARN : g->persistence == 1 ? DOCTOR_OK : DOCTOR_UNKNOWN;
        struct doctor_finding *d = add(l, "persistence-off", lv, (int)g->index);
        if (lv == DOCTOR_OK) {
                SET(d, summary, _("GPU %u: persistence mode is on"), g->index);
                SET(d, evidence, _("NVML persistence mode: enabled; %s"), persistenced_text(f->persistenced));
        } else if (lv == DOCTOR_UNKNOWN) {
                SET(d, summary, _("GPU %u: persistence mode could not be read"), g->index);
                SET(d, evidence, _("NVML did not answer the persistence query"));
        } else {
                SET(d, summary, _("GPU %u: persistence mode is off"), g->index);
                SET(d, evidence, _("NVML persistence mode: disabled; %s"), persistenced_text(f->persistenced));
                SET(d, next_step,
                    _("sudo systemctl enable --now nvidia-persistenced (or: sudo nvidia-smi -i %u -pm 1). It keeps the "
                    "driver initialised between jobs (quick starts, memory figures that do not reset when the last "
                    "client goes); it does not free a ghost: end the holder ('ghostvram reclaim') or reset the GPU"),
                    g->index);
        }
}

static void check_health(const struct gpu_info *g, struct fl *l)
{
        const struct gpu_health *h = &g->health;
        struct doctor_finding *d;
        unsigned i = g->index;
        if (!h->queried)
                return;
        static const struct {
                const char *code;
                int off;
        } flags[] = {
                { "row-remap-pending", offsetof(struct gpu_health, remap_pending) },
                { "retired-pages-pending", offsetof(struct gpu_health, retired_pending) },
                { "mig-pending", offsetof(struct gpu_health, mig_pending) },
        };
        for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
                int v;
                memcpy(&v, (const char *)h + flags[k].off, sizeof(v));
                enum doctor_level lv = v == 1 ? DOCTOR_WARN : v == 0 ? DOCTOR_OK : DOCTOR_UNKNOWN;
                d = add(l, flags[k].code, lv, (int)i);
                if (k == 0) {
                        SET(d, summary, _("GPU %u: %s"), i, v == 1 ? _("a row remapping is pending") : v == 0 ? _("no row remapping pending") : _("row remapping not reported"));
                        SET(d, evidence, _("nvmlDeviceGetRemappedRows: isPending=%s%s"), v == 1 ? "1" : v == 0 ? "0" : _("unknown (not supported or no answer)"),
                            h->remap_failed == 1 ? _(", failureOccurred=1 (remapping failed: the GPU needs service)") : "");
                        if (v == 1)
                                SET(d, next_step, _("drain GPU %u, then reset it (sudo nvidia-smi -r -i %u) or reboot: the bad row is "
                                    "remapped only at reset, and until then its memory stays withheld"), i, i);
                } else if (k == 1) {
                        SET(d, summary, _("GPU %u: %s"), i, v == 1 ? _("retired pages wait for a reset") : v == 0 ? _("no page retirement pending") : _("page retirement not reported"));
                        SET(d, evidence, _("nvmlDeviceGetRetiredPagesPendingStatus: %s"), v == 1 ? _("enabled") : v == 0 ? _("disabled") : _("unknown (not supported: Ampere and later remap rows instead)"));
                        if (v == 1)
                                SET(d, next_step, _("drain GPU %u and reset it (sudo nvidia-smi -r -i %u) or reboot: pages are retired "
                                    "only then"), i, i);
                } else {
                        SET(d, summary, _("GPU %u: %s"), i, v == 1 ? _("a MIG mode change waits for a reset") : v == 0 ? _("no MIG mode change pending") : _("MIG mode not reported"));
                        SET(d, evidence, _("nvmlDeviceGetMigMode: current %s, pending %s"), g->mig_mode == 1 ? _("enabled") : g->mig_mode == 0 ? _("disabled") : _("unknown"),
                            g->mig_pending_mode == 1 ? _("enabled") : g->mig_pending_mode == 0 ? _("disabled") : _("unknown"));
                        if (v == 1)
                                SET(d, next_step, _("end every process on GPU %u, then reset it (sudo nvidia-smi -r -i %u): until then the "
                                    "memory layout is the old mode's"), i, i);
                }
        }
        enum doctor_level lv = h->ecc_uncorrected > 0 ? DOCTOR_WARN : h->ecc_uncorrected == 0 ? DOCTOR_OK : DOCTOR_UNKNOWN;
        d = add(l, "ecc-uncorrectable", lv, (int)i);
        SET(d, summary, _("GPU %u: %s"), i, lv == DOCTOR_WARN ? _("uncorrectable ECC errors since the driver loaded") : lv == DOCTOR_OK ? _("no uncorrectable ECC error") : _("ECC counters not reported"));
        if (h->ecc_uncorrected >= 0)
                SET(d, evidence, _("nvmlDeviceGetTotalEccErrors(uncorrected, volatile) = %lld"), h->ecc_uncorrected);
        else
                SET(d, evidence, _("nvmlDeviceGetTotalEccErrors: not supported (ECC off or a consumer GPU)"));
        if (lv == DOCTOR_WARN)
                SET(d, next_step, _("a reset is required anyway: drain GPU %u, reset it (sudo nvidia-smi -r -i %u) and see 'ghostvram "
                    "xid' for the Xid 48/63/64/94/95 that came with it; memory held by the failed context is freed by the reset"), i, i);
        d = add(l, "reset-required", h->reset_required ? DOCTOR_WARN : DOCTOR_OK, (int)i);
        SET(d, summary, _("GPU %u: %s"), i, h->reset_required ? _("the driver says this GPU needs a reset") : _("no reset required"));
        SET(d, evidence, "%s", h->reset_required ? _("health queries answered NVML_ERROR_RESET_REQUIRED (16)") : _("health queries answered normally"));
        if (h->reset_required)
                SET(d, next_step, _("drain GPU %u and reset it (sudo nvidia-smi -r -i %u; a reset needs every holder gone: "
                    "'ghostvram scan' lists them) or reboot"), i, i);
}

static void check_allocator_cache(const struct doctor_facts *f, const struct gpu_info *g, struct fl *l)
{
        bool any = false;
        for (size_t k = 0; k < g->n_procs; k++) {
                const struct gpu_proc *p = &g->procs[k];
                if (!p->used_known || p->used_bytes < f->cache_min_bytes)
                        continue;
                const struct doctor_holder *h = NULL;
                for (size_t j = 0; j < f->n_holders && !h; j++)
                        if ((uint32_t)f->holders[j].pid == p->pid)
                                h = &f->holders[j];
                if (!h)
                        continue; /* not alive here: scan's business, not a cache */
                any = true;
                struct doctor_finding *d = add(l, "allocator-cache", DOCTOR_INFO, (int)g->index);
                SET(d, summary, _("GPU %u: live PID %u (%s) holds %.1f GiB: if it is idle, that is most likely a framework's "
                    "caching allocator, not a leak"), g->index, p->pid, h->comm, (double)p->used_bytes / GIB);
                SET(d, evidence, _("NVML charges PID %u with %llu bytes; the process is alive"), p->pid,
                    (unsigned long long)p->used_bytes);
                SET(d, next_step,
                    _("inside the process: torch.cuda.empty_cache() (compare torch.cuda.memory_allocated() with "
                    "memory_reserved(): the difference is cache), PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; "
                    "TensorFlow: tf.config.experimental.set_memory_growth(gpu, True) before first use. A cache stays flat "
                    "and goes when the process exits; a leak grows each step ('ghostvram watch' shows which)"));
        }
        if (!any) {
                struct doctor_finding *d = add(l, "allocator-cache", DOCTOR_OK, (int)g->index);
                SET(d, summary, _("GPU %u: no live process holds %.1f GiB or more"), g->index, (double)f->cache_min_bytes / GIB);
                SET(d, evidence, P_("%zu process listed by NVML", "%zu processes listed by NVML", g->n_procs), g->n_procs);
        }
}

static void check_uvm(const struct doctor_facts *f, struct fl *l)
{
        struct doctor_finding *d;
        if (f->uvm_loaded < 0) {
                d = add(l, "uvm-not-loaded", DOCTOR_UNKNOWN, -1);
                SET(d, summary, _("whether nvidia_uvm is loaded is unknown"));
                SET(d, evidence, _("/proc/modules could not be read"));
                return;
        }
        if (f->uvm_loaded == 0) {
                d = add(l, "uvm-not-loaded", DOCTOR_WARN, -1);
                SET(d, summary, _("the nvidia_uvm kernel module is not loaded"));
                SET(d, evidence, _("no nvidia_uvm line in /proc/modules"));
                SET(d, next_step, _("sudo modprobe nvidia-uvm (and list it in /etc/modules-load.d/): CUDA needs it; outside a "
                    "container the first CUDA program loads it through the setuid nvidia-modprobe, inside one it must "
                    "already be loaded on the host"));
                return;
        }
        d = add(l, "uvm-not-loaded", DOCTOR_OK, -1);
        SET(d, summary, _("nvidia_uvm is loaded"));
        SET(d, evidence, _("/proc/modules: nvidia_uvm, use count %ld"), f->uvm_refcount);
        size_t n = 0;
        struct buf who = BUF_INIT(0);
        for (size_t i = 0; i < f->n_holders; i++) {
                if (!f->holders[i].holds_uvm)
                        continue;
                n++;
                buf_printf(&who, "%s%d (%s)", who.len ? ", " : "", (int)f->holders[i].pid, f->holders[i].comm);
        }
        bool used = n > 0 || f->uvm_refcount > 0;
        d = add(l, "uvm-in-use", used ? DOCTOR_INFO : DOCTOR_OK, -1);
        if (!used) {
                SET(d, summary, _("nvidia_uvm is not in use: it could be reloaded"));
                SET(d, evidence, _("use count 0; no process holds /dev/nvidia-uvm"));
                buf_free(&who);
                return;
        }
        SET(d, summary, P_("nvidia_uvm is in use (%zu process hold /dev/nvidia-uvm)",
                           "nvidia_uvm is in use (%zu processes hold /dev/nvidia-uvm)", n), n);
        if (n)
                SET(d, evidence, _("use count %ld; holders: %s"), f->uvm_refcount, buf_str(&who));
        else
                SET(d, evidence, _("use count %ld"), f->uvm_refcount);
        buf_free(&who);
        SET(d, next_step, _("do not reload it to clear a ghost: 'modprobe -r nvidia_uvm' fails while it is used, and "
            "ending these processes breaks their CUDA contexts (their jobs die). End the ghost's own holders "
            "('ghostvram reclaim') instead"));
}

static void check_known_issue(const char *ver, bool open, struct fl *l)
{
        size_t n;
        const struct doctor_known_issue *t = doctor_known_issues(&n);
        unsigned v[3];
        struct doctor_finding *d;
        if (!ver[0] || version_split(ver, v) < 0) {
                d = add(l, "driver-known-issue", DOCTOR_UNKNOWN, -1);
                SET(d, summary, _("the driver version is unknown: not compared with the table"));
                SET(d, evidence, _("neither NVML nor /proc/driver/nvidia/version gave a version"));
                return;
        }
        bool hit = false;
        for (size_t i = 0; i < n; i++) {
                if (version_cmp(v, t[i].from) < 0 || version_cmp(v, t[i].before) >= 0)
                        continue;
                if (t[i].open_module_only && !open)
                        continue;
                hit = true;
                char from[48], before[48];
                (void)doctor_version_format(t[i].from, from, sizeof(from));
                (void)doctor_version_format(t[i].before, before, sizeof(before));
                d = add(l, "driver-known-issue", DOCTOR_WARN, -1);
                SET(d, summary, _("driver %s: %s"), ver, _(t[i].problem));
                if (open)
                        SET(d, evidence, _("running driver %s (open kernel module) is in %s up to before %s"), ver, from,
                            before);
                else
                        SET(d, evidence, _("running driver %s is in %s up to before %s"), ver, from, before);
                SET(d, next_step, "%s", _(t[i].advice));
                SET(d, source, "%s", t[i].source);
        }
        if (!hit) {
                d = add(l, "driver-known-issue", DOCTOR_OK, -1);
                SET(d, summary, _("driver %s is not in the table of releases with documented memory problems"), ver);
                SET(d, evidence, _("%zu sourced rows compared ('ghostvram doctor --explain' lists them)"), n);
        }
}

/* Module parameters worth knowing when GPU memory looks wrong (names as in the params file;
 * the modprobe option adds NVreg_). */
static const struct {
        const char *name;
        const char *meaning;
} param_notes[] = {
        { "PreserveVideoMemoryAllocations",
          N_("1: on suspend all video memory is saved to TemporaryFilePath and restored on resume (needed by "
          "nvidia-suspend.service); 0: only what the driver needs. Unrelated to a killed job's memory") },
        { "TemporaryFilePath", N_("where suspend saves video memory (needs room for all of it); empty: /tmp") },
        { "RestrictProfilingToAuthUsers",
          N_("1: only administrators may read GPU performance counters (Nsight, CUPTI: ERR_NVGPUCTRPERM otherwise)") },
        { "EnableGpuFirmware", N_("GSP firmware (R525+): GSP RPC timeouts show as Xid 119/120") },
        { "ModifyDeviceFiles", N_("1: the driver creates and fixes /dev/nvidia* itself (DeviceFileUID/GID/Mode)") },
        { "DeviceFileMode", N_("permissions of /dev/nvidia*: who can open a GPU at all") },
        { "NVLinkDisable", N_("1: NVLink off (P2P over PCIe only)") },
        { "EnableStreamMemOPs", N_("1: CUDA stream memory operations allowed (cuStreamWaitValue)") },
};

static void check_params(const struct doctor_facts *f, struct fl *l)
{
        struct doctor_finding *d;
        if (!f->params_text) {
                d = add(l, "module-params", DOCTOR_UNKNOWN, -1);
                SET(d, summary, _("the nvidia module's parameters could not be read"));
                SET(d, evidence, _("/proc/driver/nvidia/params is missing (module not loaded?)"));
                return;
        }
        struct buf ev = BUF_INIT(0), expl = BUF_INIT(0);
        unsigned found = 0;
        for (size_t i = 0; i < sizeof(param_notes) / sizeof(param_notes[0]); i++) {
                const char *end = f->params_text + f->params_len, *p = f->params_text;
                char line[256];
                size_t nl = strlen(param_notes[i].name);
                while (p < end) {
                        p = next_line(p, end, line, sizeof(line));
                        if (strncmp(line, param_notes[i].name, nl) != 0 || line[nl] != ':')
                                continue;
                        const char *val = line + nl + 1;
                        while (*val == ' ')
                                val++;
                        found++;
                        buf_printf(&ev, "%s%s=%s", ev.len ? ", " : "", param_notes[i].name, val);
                        buf_printf(&expl, "%s%s: %s", expl.len ? "; " : "", param_notes[i].name, _(param_notes[i].meaning));
                        break;
                }
        }
        d = add(l, "module-params", DOCTOR_INFO, -1);
        SET(d, summary, P_("%u nvidia module parameter explained", "%u nvidia module parameters explained", found), found);
        SET(d, evidence, _("/proc/driver/nvidia/params: %s"), found ? buf_str(&ev) : _("none of the known ones"));
        if (found)
                SET(d, next_step, "%s", buf_str(&expl));
        buf_free(&ev);
        buf_free(&expl);
}

static void check_dmesg(const struct doctor_facts *f, struct fl *l)
{
        enum doctor_level lv = f->dmesg_restrict < 0 ? DOCTOR_UNKNOWN
                             : f->dmesg_restrict == 1 && !f->is_root ? DOCTOR_WARN : DOCTOR_OK;
        struct doctor_finding *d = add(l, "kernel-log-restricted", lv, -1);
        if (lv == DOCTOR_UNKNOWN) {
                SET(d, summary, _("kernel.dmesg_restrict could not be read"));
                SET(d, evidence, _("/proc/sys/kernel/dmesg_restrict missing"));
                return;
        }
        if (f->is_root)
                SET(d, evidence, _("kernel.dmesg_restrict = %d; running as root"), f->dmesg_restrict);
        else
                SET(d, evidence, _("kernel.dmesg_restrict = %d; running as a user"), f->dmesg_restrict);
        if (lv == DOCTOR_WARN) {
                SET(d, summary, _("the kernel log is closed to this user: Xid events are invisible to 'ghostvram xid' and scan"));
                SET(d, next_step, _("run as root (sudo ghostvram xid), or add the user to group adm or systemd-journal and use "
                    "`journalctl -k -o short-iso | ghostvram xid --kmsg -`; host-wide: sudo sysctl kernel.dmesg_restrict=0"));
        } else {
                SET(d, summary, _("the kernel log is readable here"));
        }
}

static void check_version(const struct doctor_facts *f, const char *modver, struct fl *l)
{
        const struct gpu_report *r = f->gpus;
        char lib[80] = "";
        /* NVML's own version is "CUDA_MAJOR.DRIVER_VERSION" ("12.535.161.07") */
        if (r && r->nvml_version[0]) {
                const char *dot = strchr(r->nvml_version, '.');
                snprintf(lib, sizeof(lib), "%s", dot ? dot + 1 : r->nvml_version);
        } else if (r && r->driver_version[0]) {
                snprintf(lib, sizeof(lib), "%s", r->driver_version);
        }
        struct doctor_finding *d;
        if (!lib[0] || !modver[0]) {
                d = add(l, "version-mismatch", DOCTOR_UNKNOWN, -1);
                SET(d, summary, _("library and kernel module versions could not both be read"));
                SET(d, evidence, _("NVML library: %s; kernel module: %s"), lib[0] ? lib : _("unknown"), modver[0] ? modver : _("unknown"));
                return;
        }
        bool same = strcmp(lib, modver) == 0;
        d = add(l, "version-mismatch", same ? DOCTOR_OK : DOCTOR_WARN, -1);
        SET(d, evidence, _("NVML library %s; kernel module %s (/proc/driver/nvidia/version)"), lib, modver);
        if (same) {
                SET(d, summary, _("the NVML library and the kernel module are the same version"));
        } else {
                SET(d, summary, _("the NVML library (%s) and the loaded kernel module (%s) differ"), lib, modver);
                SET(d, next_step, _("the driver was upgraded without a reboot: reboot (or stop every GPU user, then "
                    "'sudo modprobe -r nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia'); until then "
                    "NVML fails with 'Driver/library version mismatch'"));
        }
}

static void check_toolkit(const struct doctor_facts *f, struct fl *l)
{
        struct doctor_finding *d;
        if (f->toolkit < 0) {
                d = add(l, "container-toolkit", DOCTOR_UNKNOWN, -1);
                SET(d, summary, _("whether the NVIDIA Container Toolkit is installed is unknown"));
                SET(d, evidence, _("its configuration directory could not be read"));
                return;
        }
        if (f->toolkit == 0) {
                d = add(l, "container-toolkit", DOCTOR_OK, -1);
                SET(d, summary, _("the NVIDIA Container Toolkit is not installed"));
                SET(d, evidence, _("no nvidia-container-toolkit config.toml, no nvidia-container-cli"));
                return;
        }
        char mode[32] = "";
        if (f->toolkit_config && doctor_parse_toolkit_mode(f->toolkit_config, f->toolkit_config_len, mode, sizeof(mode)) < 0)
                snprintf(mode, sizeof(mode), "unreadable");
        d = add(l, "container-toolkit", DOCTOR_INFO, -1);
        SET(d, summary, _("the NVIDIA Container Toolkit is installed (mode %s)"), mode[0] ? mode : _("auto (default)"));
        SET(d, evidence, "%s", f->toolkit_path ? f->toolkit_path : _("found"));
        SET(d, next_step, _("containers see their own PID namespace: a holder in a container shows in nvidia-smi with a host "
            "PID or none; run 'sudo ghostvram scan' on the host to attribute it to its container%s"),
            !strcmp(mode, "cdi") ? _("; CDI mode: devices come from the generated spec (nvidia-ctk cdi generate after a "
                                    "driver upgrade)") : "");
}

/* "`ls -laS '/dev/shm'` (the files, largest first, and their owners) and `ipcs -m -p` (...)" */
static int shm_next_step(const struct doctor_facts *f, char **ret)
{
        const struct shm_report *r = f->shm;
        char *dir STR_AUTOFREE = esc_shell_dup(r->dir_read ? r->dir.path : "/dev/shm");
        char *file STR_AUTOFREE = esc_shell_dup(f->shm_sysv_file ? f->shm_sysv_file : "/proc/sysvipc/shm");
        if (!dir || !file)
                return -ENOMEM;
        int e = str_setf(ret, _("see who keeps it: `ls -laS %s` (the files, largest first, and their owners)"), dir);
        if (e == 0 && f->shm_ipcs)
                e = str_addf(ret, _(" and `ipcs -m -p` (System V segments: creator and last PIDs; `ipcs -m` their owners "
                                    "and sizes)"));
        else if (e == 0)
                e = str_addf(ret, _(" and `cat %s` (System V segments)"), file);
        if (e == 0)
                e = str_addf(ret, _("; it is freed when its files are removed and its segments detached and removed "
                                    "(ipcrm), never by a GPU reset. GPU memory is what 'ghostvram scan' accounts for"));
        return e;
}

/* Host shared memory is host RAM: said apart so that nobody reads free's "shared" as the GPU's */
static void check_shm(const struct doctor_facts *f, struct fl *l)
{
        const struct shm_report *r = f->shm;
        struct doctor_finding *d;
        if (!r) {
                d = add(l, "host-shm", DOCTOR_UNKNOWN, -1);
                SET(d, summary, _("how much host shared memory is in use is unknown"));
                SET(d, evidence, "%s", f->shm_error ? f->shm_error : _("not read"));
                return;
        }
        char *desc STR_AUTOFREE = NULL, *tot STR_AUTOFREE = NULL, *thr STR_AUTOFREE = NULL;
        if (shm_describe(r, &desc) < 0 || shm_size_text(r->total, &tot) < 0 || shm_size_text(r->threshold, &thr) < 0) {
                l->err = -ENOMEM;
                return;
        }
        d = add(l, "host-shm", r->large ? DOCTOR_INFO : DOCTOR_OK, -1);
        if (r->large)
                SET(d, summary, _("host shared memory is %s, over the %s threshold: host RAM, not GPU memory; nvidia-smi's used "
                                  "figure does not include it"), tot, thr);
        else
                SET(d, summary, _("host shared memory is %s, below %s"), tot, thr);
        SET(d, evidence, _("%s; %s; large means at least 1 GiB, or 10%% of MemTotal when that is less; free -h counts it "
                           "under shared and buff/cache"), desc,
            r->total_from_meminfo ? _("the figure is Shmem in /proc/meminfo, the kernel's total (tmpfs, System V and "
                                      "shared anonymous memory)")
                                  : _("the figure is the sum of the parts (no Shmem line was read)"));
        if (r->large && d && shm_next_step(f, &d->next_step) < 0)
                l->err = -ENOMEM;
}

int doctor_run(const struct doctor_facts *f, struct doctor_finding **ret, size_t *ret_n)
{
        struct fl l = { 0 };
        const struct gpu_report *r = f->gpus;
        char modver[64] = "";
        bool open = false;
        if (f->module_version_text &&
            doctor_parse_module_version(f->module_version_text, f->module_version_len, modver, sizeof(modver), &open) < 0)
                modver[0] = '\0';

        /* NVML as a whole: absent, or silent before it named any GPU (a GPU that alone did not
         * answer is that GPU's gpu-unreachable below; the other GPUs' checks still run) */
        if (!r || !r->driver_present || (r->timed_out && r->n_gpus == 0)) {
                struct doctor_finding *d = add(&l, "nvml-unavailable", DOCTOR_UNKNOWN, -1);
                SET(d, summary, _("the GPUs could not be inspected through NVML"));
                SET(d, evidence, "%s", r && r->error[0] ? r->error : r && r->timed_out ? _("the driver did not answer in time") : _("no NVML report"));
                SET(d, next_step, _("fix the driver first (see the evidence); the checks of the GPUs were not run"));
        }
        if (r) {
                for (size_t i = 0; i < r->n_gpus; i++) {
                        const struct gpu_info *g = &r->gpus[i];
                        if (!gpu_selected(f, g))
                                continue;
                        if (g->status != GPU_OK) {
                                /* lost: a fact to act on; no answer in time: could not inspect */
                                struct doctor_finding *d = add(&l, "gpu-unreachable",
                                                               g->status == GPU_TIMEOUT ? DOCTOR_UNKNOWN : DOCTOR_WARN,
                                                               (int)g->index);
                                SET(d, summary, _("GPU %u could not be inspected"), g->index);
                                SET(d, evidence, "%s", g->status_message);
                                SET(d, next_step, _("see 'ghostvram scan' and 'ghostvram xid' for GPU %u (a lost GPU needs a reset or a "
                                    "reboot)"), g->index);
                                check_recent_xid(f, g, &l);
                                continue;
                        }
                        check_persistence(f, g, &l);
                        check_health(g, &l);
                        check_allocator_cache(f, g, &l);
                        check_recent_xid(f, g, &l);
                }
        }
        const char *ver = r && r->driver_version[0] ? r->driver_version : modver;
        check_known_issue(ver, open, &l);
        check_uvm(f, &l);
        check_params(f, &l);
        check_dmesg(f, &l);
        check_version(f, modver, &l);
        check_toolkit(f, &l);
        check_shm(f, &l);
        if (l.err) {
                doctor_findings_free(l.v, l.n);
                return l.err;
        }
        *ret = l.v;
        *ret_n = l.n;
        return 0;
}

void doctor_findings_free(struct doctor_finding *v, size_t n)
{
        for (size_t i = 0; v && i < n; i++) {
                free(v[i].summary);
                free(v[i].evidence);
                free(v[i].next_step);
                free(v[i].source);
        }
        free(v);
}

int doctor_exit_status(const struct doctor_facts *f, const struct doctor_finding *v, size_t n)
{
        if (!f->gpus || !f->gpus->driver_present || f->gpus->timed_out)
                return 3;
        for (size_t i = 0; i < n; i++)
                if (v[i].level == DOCTOR_WARN)
                        return 1;
        return 0;
}
