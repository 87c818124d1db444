/* doctor_run: `ghostvram doctor`'s use case (run/doctor_run.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/gpu_spec.h"
#include "model/daemons.h"
#include "run/doctor_run.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/strf.h"

#define DOCTOR_FILE_MAX (256 * 1024) /* every file doctor reads is small; a bigger one is cut */

/* Read ROOT/rel into *ret (NUL-terminated, capped). 0 or a negative errno. */
static int read_rooted(const char *root, const char *rel, char **ret, size_t *ret_len)
{
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s/%s", strcmp(root, "/") ? root : "", rel);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        return read_file_at(AT_FDCWD, path, DOCTOR_FILE_MAX, ret, ret_len);
}

static bool exists_rooted(const char *root, const char *rel)
{
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s/%s", strcmp(root, "/") ? root : "", rel);
        return n > 0 && (size_t)n < sizeof(path) && access(path, F_OK) == 0;
}

void doctor_check_free(struct doctor_check *d)
{
        doctor_findings_free(d->findings, d->n_findings);
        gpu_report_free(d->gpus);
        host_report_free(d->host);
        free(d->holders);
        free(d->version);
        free(d->params);
        free(d->modules);
        free(d->restrict_txt);
        free(d->toolkit_cfg);
        xid_list_free(&d->kernel);
        shm_report_free(d->shm);
        free(d->shm_sysv_file);
        memset(d, 0, sizeof(*d));
}

/* Host shared memory (host-shm): where o->shm says. 0, or -ENOMEM. */
static int gather_shm(const struct doctor_check_opts *o, struct doctor_check *d)
{
        struct doctor_facts *f = &d->facts;
        if (!o->shm) {
                f->shm_error = _("not read: the path is too long");
                return 0;
        }
        int r = shm_collect(o->shm, &d->shm);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                f->shm_error = _("neither meminfo, sysvipc/shm (under the /proc root) nor the /dev/shm directory could be "
                                 "read");
                return 0;
        }
        f->shm = d->shm;
        f->shm_ipcs = strcmp(o->shm->proc_root, "/proc") == 0;
        if (str_setf(&d->shm_sysv_file, "%s/sysvipc/shm", o->shm->proc_root) < 0)
                return -ENOMEM;
        f->shm_sysv_file = d->shm_sysv_file;
        return 0;
}

/* The kernel log, as scan reads it (recent-xid); a log that cannot be read is said, not fatal */
static void gather_kernel(const struct doctor_check_opts *o, struct doctor_check *d)
{
        struct doctor_facts *f = &d->facts;
        struct xid_source_opts ko = { .sim_dir = o->sim_dir, .proc_root = o->proc_root };
        struct xid_source_info info;
        char err[KMSG_ERR_MAX] = "";
        memset(&info, 0, sizeof(info));
        f->now = d->gpus->sample_time;
        f->xid_window_s = o->xid_window_s;
        f->kernel_error = d->kernel_error;
        if (xid_collect(&ko, &d->kernel, &info, err, sizeof(err), NULL) < 0) {
                snprintf(d->kernel_error, sizeof(d->kernel_error), _("kernel log not read: %s"), err);
                return;
        }
        if (info.this_host)
                xid_map_gpus(d->kernel.ev, d->kernel.n, d->gpus);
        f->kernel = d->kernel.ev;
        f->n_kernel = d->kernel.n;
        f->kernel_read = true; /* a simulated host without DIR/kmsg: read, and empty */
        f->kernel_this_host = info.this_host;
}

/* The device nodes' holders (their names escaped for the terminal), whether they hold
 * nvidia-uvm, and whether nvidia-persistenced is one of them. */
static void gather_holders(const struct doctor_check_opts *o, struct doctor_check *d)
{
        struct doctor_facts *f = &d->facts;
        struct host_opts ho = o->host;
        ho.read_env = false;
        f->persistenced = -1;
        if (host_scan(&ho, &d->host) != 0)
                return;
        d->holders = calloc(d->host->n_holders ? d->host->n_holders : 1, sizeof(*d->holders));
        f->persistenced = d->holders ? 0 : -1;
        for (size_t i = 0; d->holders && i < d->host->n_holders; i++) {
                const struct host_proc *p = &d->host->holders[i];
                struct doctor_holder *h = &d->holders[f->n_holders++];
                h->pid = p->pid;
                const char *comm = p->comm ? p->comm : "?";
                struct buf b = BUF_INIT(128);
                if (esc_terminal(&b, comm, strlen(comm)) == 0)
                        snprintf(h->comm, sizeof(h->comm), "%s", buf_str(&b));
                buf_free(&b);
                for (unsigned k = 0; k < p->n_nodes; k++)
                        if (strcmp(p->nodes[k].name, "nvidia-uvm") == 0)
                                h->holds_uvm = true;
                if (proc_name_matches(p->comm, p->cmdline, "nvidia-persistenced"))
                        f->persistenced = 1;
        }
        f->holders = d->holders;
}

/* The nvidia module's version and parameters, nvidia_uvm in the module list, and
 * kernel.dmesg_restrict, under the root. */
static void gather_module(const char *root, struct doctor_check *d)
{
        struct doctor_facts *f = &d->facts;
        if (read_rooted(root, "proc/driver/nvidia/version", &d->version, &d->version_len) == 0) {
                f->module_version_text = d->version;
                f->module_version_len = d->version_len;
        }
        if (read_rooted(root, "proc/driver/nvidia/params", &d->params, &d->params_len) == 0) {
                f->params_text = d->params;
                f->params_len = d->params_len;
        }
        f->uvm_loaded = -1;
        f->uvm_refcount = -1;
        if (read_rooted(root, "proc/modules", &d->modules, &d->modules_len) == 0) {
                long ref = -1;
                int r = doctor_parse_modules(d->modules, d->modules_len, "nvidia_uvm", &ref);
                if (r >= 0) {
                        f->uvm_loaded = r;
                        f->uvm_refcount = r ? ref : 0;
                }
        }
        f->dmesg_restrict = -1;
        if (read_rooted(root, "proc/sys/kernel/dmesg_restrict", &d->restrict_txt, &d->restrict_len) == 0) {
                unsigned v;
                char *nl = strchr(d->restrict_txt, '\n');
                if (nl)
                        *nl = '\0';
                if (parse_uint_range(d->restrict_txt, 0, 1, &v) == 0)
                        f->dmesg_restrict = (int)v;
        }
}

/* The NVIDIA Container Toolkit under the root: its config.toml, else one of its programs. */
/* How much of --root DIR goes before "/path": DIR without its trailing '/' ("/" is none of it). */
static int root_len(const char *root)
{
        size_t n = strlen(root);
        while (n && root[n - 1] == '/')
                n--;
        return (int)n;
}

static void gather_toolkit(const char *root, struct doctor_check *d)
{
        struct doctor_facts *f = &d->facts;
        static const char *const cfg = "etc/nvidia-container-runtime/config.toml";
        static const char *const bins[] = { "usr/bin/nvidia-container-cli", "usr/bin/nvidia-ctk",
                                            "usr/local/bin/nvidia-ctk" };
        f->toolkit = 0;
        if (read_rooted(root, cfg, &d->toolkit_cfg, &d->toolkit_len) == 0) {
                f->toolkit = 1;
                f->toolkit_config = d->toolkit_cfg;
                f->toolkit_config_len = d->toolkit_len;
                snprintf(d->toolkit_path, sizeof(d->toolkit_path), "%.*s/%s", root_len(root), root, cfg);
        }
        for (size_t i = 0; !f->toolkit && i < sizeof(bins) / sizeof(bins[0]); i++)
                if (exists_rooted(root, bins[i])) {
                        f->toolkit = 1;
                        snprintf(d->toolkit_path, sizeof(d->toolkit_path), _("%.*s/%s (no config.toml)"),
                                 root_len(root), root, bins[i]);
                }
        f->toolkit_path = d->toolkit_path[0] ? d->toolkit_path : NULL;
}

/* The driver's report with the health queries, and --gpu found in it. */
static int gather_gpus(const struct doctor_check_opts *o, struct doctor_check *d, char *err, size_t errlen)
{
        struct gpu_opts go = o->gpu;
        go.health = true;
        if (gpu_collect(&go, &d->gpus) < 0) {
                snprintf(err, errlen, "%s", _("out of memory"));
                return -ENOMEM;
        }
        d->facts.gpus = d->gpus;
        if (o->gpu_spec && d->gpus->driver_present) {
                unsigned idx;
                if (o->gpu_resolve(o->gpu_spec, d->gpus, &idx) < 0) {
                        snprintf(err, errlen, P_("--gpu %s: this host has %zu GPU", "--gpu %s: this host has %zu GPUs",
                                                 d->gpus->n_gpus), o->gpu_spec, d->gpus->n_gpus);
                        return -ENOENT;
                }
                d->facts.only_gpu = (int)idx;
        }
        return 0;
}

int doctor_check(const struct doctor_check_opts *o, struct doctor_check *ret, char *err, size_t errlen)
{
        memset(ret, 0, sizeof(*ret));
        ret->facts.only_gpu = -1;
        ret->facts.cache_min_bytes = o->cache_min_bytes;
        int r = gather_gpus(o, ret, err, errlen);
        if (r < 0)
                return r;
        gather_holders(o, ret);
        gather_module(o->root, ret);
        ret->facts.is_root = geteuid() == 0;
        gather_toolkit(o->root, ret);
        gather_kernel(o, ret);
        if (gather_shm(o, ret) < 0) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        if (doctor_run(&ret->facts, &ret->findings, &ret->n_findings) < 0) {
                snprintf(err, errlen, "%s", _("out of memory"));
                return -ENOMEM;
        }
        ret->exit_status = doctor_exit_status(&ret->facts, ret->findings, ret->n_findings);
        return 0;
}

void doctor_check_opts_sources(struct doctor_check_opts *o, const struct sources *src, struct sources_shm_paths *sp,
                               struct shm_opts *shm)
{
        sources_gpu_opts(src, &o->gpu);
        sources_host_opts(src, &o->host);
        o->sim_dir = src->simulated ? src->sim_dir : NULL;
        o->proc_root = src->proc_root;
        o->xid_window_s = src->xid_window_s;
        o->shm = sources_shm_opts(src, o->root, sp, shm) ? shm : NULL;
        o->gpu_resolve = gpu_spec_resolve;
}
