#include "run/sources.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/gpu_json.h"
#include "collect/gpu_spec.h"
#include "collect/shm.h"
#include "collect/xid.h"
#include "run/scan_run.h"
#include "simstate.h"
#include "util/exit_status.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/parse.h"

void sources_init(struct sources *s)
{
        memset(s, 0, sizeof(*s));
        s->proc_root = "/proc";
        s->dev_prefix = "/dev/nvidia";
        s->timeout_ms = 5000;
        s->xid_window_s = XID_WINDOW_DEFAULT_S;
}

/* --save-bundle DIR: a new directory, or an empty one (an old bundle's files would mix with the
 * new ones and be taken for this host's). */
static int check_save_dir(const char *dir, char *err, size_t errlen)
{
        struct stat st;
        if (lstat(dir, &st) < 0) {
                if (errno == ENOENT)
                        return 0; /* created when the bundle is written */
                snprintf(err, errlen, "--save-bundle %s: %s", dir, strerror(errno));
                return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
                snprintf(err, errlen, _("--save-bundle %s: not a directory (%s): give a new or an empty directory"), dir,
                         S_ISREG(st.st_mode) ? "a file" : file_kind(st.st_mode));
                return -1;
        }
        DIR *d = opendir(dir);
        if (!d) {
                snprintf(err, errlen, "--save-bundle %s: %s", dir, strerror(errno));
                return -1;
        }
        struct dirent *e;
        bool empty = true;
        while (empty && (e = readdir(d)))
                empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
        closedir(d);
        if (!empty) {
                snprintf(err, errlen, _("--save-bundle %s: not empty: give a new or an empty directory (old files would mix "
                                        "with this bundle)"), dir);
                return -1;
        }
        return 0;
}

/* The bundle's files, and its confirming sample's when scan would read one, parse. */
static int bundle_readable(const char *dir, char *err, size_t errlen)
{
        char sub[4096], why[256];
        snprintf(sub, sizeof(sub), "%s/confirm", dir);
        for (int i = 0; i < (scan_bundle_has_confirm(dir) ? 2 : 1); i++) {
                const char *d = i ? sub : dir;
                if (gpu_bundle_check(d, why, sizeof(why)) < 0 || host_bundle_check(d, why, sizeof(why)) < 0) {
                        snprintf(err, errlen, "--from-bundle %s: %s%s", dir, i ? "confirm/" : "", why);
                        return -1;
                }
        }
        return 0;
}

/* A recorded bundle: its directory readable, its two files plain files that parse. Its proc/ is
 * read, with canonical node paths. */
static int open_bundle(struct sources *s, char *err, size_t errlen)
{
        int n = snprintf(s->bundle_proc, sizeof(s->bundle_proc), "%s/proc", s->from_bundle);
        if (n < 0 || (size_t)n >= sizeof(s->bundle_proc) || access(s->from_bundle, R_OK) < 0) {
                snprintf(err, errlen, _("--from-bundle %s: cannot read the bundle directory"), s->from_bundle);
                return -1;
        }
        /* its files are read only when they are plain files: a FIFO would block, a device never
         * end, a symlink point anywhere */
        static const char *const files[] = { "nvml.json", "host.json" };
        for (size_t i = 0; i < 2; i++) {
                char p[4096];
                struct stat st;
                snprintf(p, sizeof(p), "%s/%s", s->from_bundle, files[i]);
                if (lstat(p, &st) < 0) {
                        snprintf(err, errlen, _("--from-bundle %s: not a bundle (no %s): record one with --save-bundle DIR"),
                                 s->from_bundle, files[i]);
                        return -1;
                }
                if (!S_ISREG(st.st_mode)) {
                        snprintf(err, errlen, _("--from-bundle: %s is not a regular file (%s): not read"), p,
                                 file_kind(st.st_mode));
                        return -1;
                }
        }
        /* a damaged file is the user's input, said now, not a driver that failed */
        if (bundle_readable(s->from_bundle, err, errlen) < 0)
                return -1;
        s->proc_root = s->bundle_proc;
        s->dev_prefix = "/dev/nvidia"; /* bundles store canonical node paths */
        return 0;
}

/* GHOSTVRAM_SIM=DIR: the simulated host's NVML library, device nodes and driver files. */
static int open_sim(struct sources *s, const char *sim, char *err, size_t errlen)
{
        int r = simstate_library(sim, s->sim_lib, sizeof(s->sim_lib));
        if (r < 0) {
                snprintf(err, errlen, _("GHOSTVRAM_SIM=%s: not a simulated host (%s); create one with 'ghostvram sim init DIR'"),
                         sim, strerror(-r));
                return -1;
        }
        r = simstate_dev_prefix(sim, s->sim_prefix, sizeof(s->sim_prefix));
        if (r < 0) {
                snprintf(err, errlen, "GHOSTVRAM_SIM=%s: %s", sim, strerror(-r));
                return -1;
        }
        int n = snprintf(s->sim_driver_proc, sizeof(s->sim_driver_proc), "%s/proc/driver/nvidia", sim);
        if (n < 0 || (size_t)n >= sizeof(s->sim_driver_proc)) {
                snprintf(err, errlen, _("GHOSTVRAM_SIM=%s: path too long"), sim);
                return -1;
        }
        s->simulated = true;
        s->sim_dir = sim;
        if (!s->nvml_lib)
                s->nvml_lib = s->sim_lib;
        if (strcmp(s->dev_prefix, "/dev/nvidia") == 0)
                s->dev_prefix = s->sim_prefix;
        return 0;
}

int sources_open(struct sources *s, const char *sim_env, char *err, size_t errlen)
{
        if (s->save_bundle && s->from_bundle) {
                snprintf(err, errlen, "%s", _("--save-bundle and --from-bundle cannot be used together"));
                return -1;
        }
        if (s->save_bundle && check_save_dir(s->save_bundle, err, errlen) < 0)
                return -1;
        if (s->from_bundle)
                return open_bundle(s, err, errlen);
        /* a process tree that is not there would read as a host without processes */
        char why[256];
        if (strcmp(s->proc_root, "/proc") != 0 && dir_why(s->proc_root, why, sizeof(why)) < 0) {
                snprintf(err, errlen, "--proc %s: %s", s->proc_root, why);
                return -1;
        }
        return sim_env && *sim_env ? open_sim(s, sim_env, err, errlen) : 0;
}

int sources_gpu_resolve(const struct sources *s, const char *spec, bool check_index, int *ret_index, char *err,
                        size_t errlen)
{
        unsigned u;
        *ret_index = -1;
        if (!spec)
                return EXIT_OK;
        bool numeric = parse_uint_range(spec, 0, 1023, &u) == 0;
        if (numeric && !check_index) {
                *ret_index = (int)u; /* the caller checks it against its own sample */
                return EXIT_OK;
        }
        struct gpu_opts o;
        struct gpu_report *r = NULL;
        sources_gpu_opts(s, &o);
        if (gpu_collect(&o, &r) < 0) {
                snprintf(err, errlen, "%s", _("out of memory"));
                return EXIT_INCOMPLETE;
        }
        int status = EXIT_OK;
        if (!r->driver_present || r->timed_out) {
                if (numeric) {
                        *ret_index = (int)u; /* the caller reports the driver itself */
                } else {
                        snprintf(err, errlen, _("--gpu %s: the driver cannot be asked which GPU that is (%s)"), spec,
                                 r->error[0] ? r->error : "no answer");
                        status = EXIT_INCOMPLETE;
                }
        } else if (gpu_spec_resolve(spec, r, &u) == 0) {
                *ret_index = (int)u;
        } else {
                snprintf(err, errlen, P_("--gpu %s: this host has %zu GPU", "--gpu %s: this host has %zu GPUs", r->n_gpus), spec,
                         r->n_gpus);
                status = EXIT_USAGE;
        }
        gpu_report_free(r);
        return status;
}

void sources_gpu_opts(const struct sources *s, struct gpu_opts *o)
{
        memset(o, 0, sizeof(*o));
        o->nvml_lib = s->nvml_lib;
        o->timeout_ms = s->timeout_ms;
        o->bundle_dir = s->from_bundle;
        o->driver_proc_dir = s->simulated ? s->sim_driver_proc : NULL;
}

void sources_host_opts(const struct sources *s, struct host_opts *o)
{
        memset(o, 0, sizeof(*o));
        o->proc_root = s->proc_root;
        o->dev_prefix = s->dev_prefix;
        o->timeout_ms = s->timeout_ms < 2000 ? s->timeout_ms : 2000;
        o->save_dir = s->save_bundle;
        o->read_env = true;
        o->holders = s->holders;
}

void sources_facts_opts(const struct sources *s, struct facts_opts *o)
{
        memset(o, 0, sizeof(*o));
        o->save_bundle = s->save_bundle;
        o->simulated = s->simulated;
        sources_gpu_opts(s, &o->gpu);
        sources_host_opts(s, &o->host);
}

bool sources_shm_opts(const struct sources *s, const char *root, struct sources_shm_paths *p, struct shm_opts *o)
{
        memset(o, 0, sizeof(*o));
        if (s->from_bundle)
                return false;
        const char *base = root && strcmp(root, "/") ? root : s->simulated ? s->sim_dir : NULL;
        if (base) {
                int n1 = snprintf(p->proc, sizeof(p->proc), "%s/proc", base);
                int n2 = snprintf(p->dir, sizeof(p->dir), "%s/dev/shm", base);
                if (n1 < 0 || (size_t)n1 >= sizeof(p->proc) || n2 < 0 || (size_t)n2 >= sizeof(p->dir))
                        return false;
                o->proc_root = p->proc;
                o->shm_dir = p->dir;
        } else {
                o->proc_root = s->proc_root;
                o->shm_dir = strcmp(s->proc_root, "/proc") == 0 ? "/dev/shm" : NULL;
        }
        o->timeout_ms = s->timeout_ms < 1000 ? s->timeout_ms : 1000;
        return true;
}

void sources_scan_once_opts(const struct sources *s, struct scan_once_opts *o)
{
        memset(o, 0, sizeof(*o));
        o->facts.simulated = s->simulated;
        sources_gpu_opts(s, &o->facts.gpu);
        sources_host_opts(s, &o->facts.host);
        ledger_opts_default(&o->ledger);
        o->ledger.xid_window_s = s->xid_window_s;
        o->confirm_ms = 2000;
        o->from_bundle = s->from_bundle;
        o->save_bundle = s->save_bundle;
        o->facts.read_kernel = true;
        o->facts.kernel.sim_dir = s->simulated ? s->sim_dir : NULL;
        o->facts.kernel.proc_root = s->proc_root;
}
