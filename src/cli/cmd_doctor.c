/* ghostvram doctor: the host's setup against what makes ghost memory likely or hard to clear.
 * Gathers the facts (NVML with the health queries, the device-node holders, a few /proc and
 * /etc files) and prints model/doctor.c's findings. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "collect/gpu.h"
#include "collect/host.h"
#include "collect/shm.h"
#include "collect/xid.h"
#include "model/daemons.h"
#include "model/doctor.h"
#include "util/json_util.h"
#include "util/strf.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/i18n.h"

#define DOCTOR_FILE_MAX (256 * 1024) /* every file doctor reads is small; a bigger one is cut */

/* doctor looks at this host's setup: a bundle holds no module parameters or daemons */
#define DOCTOR_ACCEPTS ((CLI_COMMON_ALL & ~(CLI_SAVE_BUNDLE | CLI_FROM_BUNDLE)) | CLI_XID_WINDOW)


static void doctor_usage(FILE *f)
{
        fputs(_("Usage: ghostvram doctor [OPTIONS]\n\n"
                "Check this host's setup against what makes ghost GPU memory likely, or hard to\n"
                "clear, and say for each finding what was seen and what to do next.\n\n"), f);
        fputs(_("Checks (stable codes; docs/doctor.md explains each):\n"
                "  persistence-off, row-remap-pending, retired-pages-pending, ecc-uncorrectable,\n"
                "  reset-required, mig-pending, allocator-cache, gpu-unreachable, recent-xid\n"
                "  (per GPU);\n"
                "  driver-known-issue, uvm-not-loaded, uvm-in-use, module-params,\n"
                "  kernel-log-restricted, version-mismatch, container-toolkit, nvml-unavailable,\n"
                "  host-shm (host shared memory: host RAM, not GPU memory)\n\n"), f);
        /* CLI_GPU_HELP's line spelled out: a translation is found by the literal text */
        fputs(_("Options:\n"
                "  --gpu ID             only this GPU: an index, a UUID or a PCI bus id\n"
                "  --explain            also print how to prevent ghosts, and the table of driver\n"
                "                       releases with documented memory problems (with sources)\n"
                "  --cache-min SIZE     allocator-cache: a live process holding at least SIZE MiB\n"
                "                       (default 1024; 512M, 2G also accepted)\n"
                "  --root DIR           read the driver's files under DIR instead of /:\n"
                "                       proc/driver/nvidia, proc/modules, proc/sys/kernel,\n"
                "                       etc/nvidia-container-runtime, proc/meminfo,\n"
                "                       proc/sysvipc/shm, dev/shm (a copy from another host)\n"),
              f);
        fputs(_("  -v, --verbose        also show the evidence of checks that passed\n"), f);
        cli_common_help(f, DOCTOR_ACCEPTS & ~CLI_VERBOSE);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\nExamples:\n"
                "  sudo ghostvram doctor            # root sees every holder and the kernel log\n"
                "  ghostvram doctor --gpu 0000:3b:00.0 --explain\n"
                "  ghostvram doctor --json | jq '.findings[] | select(.level == \"warn\") | .code'\n\n"), f);
        fputs(_("Exit status: 0 nothing to act on; 1 a warning; 2 usage error; 3 the driver could\n"
                "not be inspected (no driver, no answer).\n"), f);
}

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

struct doctor_inputs {
        struct gpu_report *gpus;
        struct host_report *host;
        struct doctor_holder *holders;
        char *version, *params, *modules, *restrict_txt, *toolkit_cfg;
        size_t version_len, params_len, modules_len, restrict_len, toolkit_len;
        char toolkit_path[256];
        struct xid_list kernel;
        char kernel_error[KMSG_ERR_MAX + 64];
        struct shm_report *shm;
        struct cli_shm_paths shm_paths;
        char *shm_sysv_file;
};

static void inputs_free(struct doctor_inputs *in)
{
        gpu_report_free(in->gpus);
        host_report_free(in->host);
        free(in->holders);
        free(in->version);
        free(in->params);
        free(in->modules);
        free(in->restrict_txt);
        free(in->toolkit_cfg);
        xid_list_free(&in->kernel);
        shm_report_free(in->shm);
        free(in->shm_sysv_file);
}

/* Host shared memory (host-shm): ROOT's, the simulated host's, or this host's */
static int gather_shm(const struct cli_common *c, const char *root, struct doctor_inputs *in, struct doctor_facts *f)
{
        struct shm_opts o;
        if (!cli_common_shm_opts(c, root, &in->shm_paths, &o)) {
                f->shm_error = _("not read: the path is too long");
                return 0;
        }
        int r = shm_collect(&o, &in->shm);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                f->shm_error = _("neither meminfo, sysvipc/shm (under the /proc root) nor the /dev/shm directory could be "
                                 "read");
                return 0;
        }
        f->shm = in->shm;
        f->shm_ipcs = strcmp(o.proc_root, "/proc") == 0;
        if (str_setf(&in->shm_sysv_file, "%s/sysvipc/shm", o.proc_root) < 0)
                return -ENOMEM;
        f->shm_sysv_file = in->shm_sysv_file;
        return 0;
}

/* The kernel log, as scan reads it (recent-xid); a log that cannot be read is said, not fatal */
static void gather_kernel(const struct cli_common *c, struct doctor_inputs *in, struct doctor_facts *f)
{
        struct xid_source_opts ko = { .sim_dir = c->simulated ? c->sim_dir : NULL, .proc_root = c->proc_root };
        struct xid_source_info info;
        char err[KMSG_ERR_MAX] = "";
        memset(&info, 0, sizeof(info));
        f->now = in->gpus->sample_time;
        f->xid_window_s = c->xid_window_s;
        f->kernel_error = in->kernel_error;
        if (xid_collect(&ko, &in->kernel, &info, err, sizeof(err), NULL) < 0) {
                snprintf(in->kernel_error, sizeof(in->kernel_error), _("kernel log not read: %s"), err);
                return;
        }
        if (info.this_host)
                xid_map_gpus(in->kernel.ev, in->kernel.n, in->gpus);
        f->kernel = in->kernel.ev;
        f->n_kernel = in->kernel.n;
        f->kernel_read = true; /* a simulated host without DIR/kmsg: read, and empty */
        f->kernel_this_host = info.this_host;
}

static void gather_host(const struct cli_common *c, const char *root, struct doctor_inputs *in,
                        struct doctor_facts *f)
{
        struct host_opts ho;
        cli_common_host_opts(c, &ho);
        ho.read_env = false;
        f->persistenced = -1;
        if (host_scan(&ho, &in->host) == 0) {
                in->holders = calloc(in->host->n_holders ? in->host->n_holders : 1, sizeof(*in->holders));
                f->persistenced = in->holders ? 0 : -1;
                for (size_t i = 0; in->holders && i < in->host->n_holders; i++) {
                        const struct host_proc *p = &in->host->holders[i];
                        struct doctor_holder *h = &in->holders[f->n_holders++];
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
                f->holders = in->holders;
        }
        if (read_rooted(root, "proc/driver/nvidia/version", &in->version, &in->version_len) == 0) {
                f->module_version_text = in->version;
                f->module_version_len = in->version_len;
        }
        if (read_rooted(root, "proc/driver/nvidia/params", &in->params, &in->params_len) == 0) {
                f->params_text = in->params;
                f->params_len = in->params_len;
        }
        f->uvm_loaded = -1;
        f->uvm_refcount = -1;
        if (read_rooted(root, "proc/modules", &in->modules, &in->modules_len) == 0) {
                long ref = -1;
                int r = doctor_parse_modules(in->modules, in->modules_len, "nvidia_uvm", &ref);
                if (r >= 0) {
                        f->uvm_loaded = r;
                        f->uvm_refcount = r ? ref : 0;
                }
        }
        f->dmesg_restrict = -1;
        if (read_rooted(root, "proc/sys/kernel/dmesg_restrict", &in->restrict_txt, &in->restrict_len) == 0) {
                unsigned v;
                char *nl = strchr(in->restrict_txt, '\n');
                if (nl)
                        *nl = '\0';
                if (parse_uint_range(in->restrict_txt, 0, 1, &v) == 0)
                        f->dmesg_restrict = (int)v;
        }
        f->is_root = geteuid() == 0;
        static const char *const cfg = "etc/nvidia-container-runtime/config.toml";
        static const char *const bins[] = { "usr/bin/nvidia-container-cli", "usr/bin/nvidia-ctk",
                                            "usr/local/bin/nvidia-ctk" };
        f->toolkit = 0;
        if (read_rooted(root, cfg, &in->toolkit_cfg, &in->toolkit_len) == 0) {
                f->toolkit = 1;
                f->toolkit_config = in->toolkit_cfg;
                f->toolkit_config_len = in->toolkit_len;
                snprintf(in->toolkit_path, sizeof(in->toolkit_path), "%s%s", strcmp(root, "/") ? root : "/", cfg);
        }
        for (size_t i = 0; !f->toolkit && i < sizeof(bins) / sizeof(bins[0]); i++)
                if (exists_rooted(root, bins[i])) {
                        f->toolkit = 1;
                        snprintf(in->toolkit_path, sizeof(in->toolkit_path), _("%s%s (no config.toml)"),
                                 strcmp(root, "/") ? root : "/", bins[i]);
                }
        f->toolkit_path = in->toolkit_path[0] ? in->toolkit_path : NULL;
}

static json_t *finding_json(const struct doctor_finding *d)
{
        json_t *o = json_object();
        if (!o)
                return NULL;
        json_object_set_new(o, "code", json_string(d->code));
        json_object_set_new(o, "level", json_string(doctor_level_name(d->level)));
        json_object_set_new(o, "gpu_index", d->gpu >= 0 ? json_integer(d->gpu) : json_null());
        json_object_set_new(o, "summary", json_string(str_or_empty(d->summary)));
        json_object_set_new(o, "evidence", json_string(str_or_empty(d->evidence)));
        json_object_set_new(o, "next_step", !str_empty(d->next_step) ? json_string(d->next_step) : json_null());
        if (!str_empty(d->source))
                json_object_set_new(o, "source", json_string(d->source));
        return o;
}

static json_t *known_issues_json(void)
{
        size_t n;
        const struct doctor_known_issue *t = doctor_known_issues(&n);
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++) {
                char from[48], before[48];
                (void)doctor_version_format(t[i].from, from, sizeof(from));
                (void)doctor_version_format(t[i].before, before, sizeof(before));
                json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:s, s:s, s:s}", "from", from, "before", before,
                                                   "open_module_only", t[i].open_module_only, "problem", t[i].problem,
                                                   "advice", t[i].advice, "source", t[i].source));
        }
        return a;
}

static void print_explain(FILE *out)
{
        fprintf(out, "%s", _("\nPreventing ghost memory\n"));
        for (size_t i = 0; doctor_prevention[i]; i++)
                fprintf(out, "\n  - %s\n", _(doctor_prevention[i]));
        size_t n;
        const struct doctor_known_issue *t = doctor_known_issues(&n);
        fprintf(out, "%s", _("\nDriver releases with documented memory problems (driver-known-issue)\n"));
        for (size_t i = 0; i < n; i++) {
                char from[48], before[48];
                (void)doctor_version_format(t[i].from, from, sizeof(from));
                (void)doctor_version_format(t[i].before, before, sizeof(before));
                if (t[i].open_module_only)
                        fprintf(out, _("\n  %s up to before %s (open kernel module): %s\n    next: %s\n    source: %s\n"),
                                from, before, _(t[i].problem), _(t[i].advice), t[i].source);
                else
                        fprintf(out, _("\n  %s up to before %s: %s\n    next: %s\n    source: %s\n"), from, before,
                                _(t[i].problem), _(t[i].advice), t[i].source);
        }
}

static void print_text(FILE *out, const struct doctor_finding *v, size_t n, bool color, bool verbose)
{
        static const char *const col[] = { "\033[32m", "\033[36m", "\033[33m", "\033[35m" };
        for (size_t i = 0; i < n; i++) {
                const struct doctor_finding *d = &v[i];
                char where[16];
                if (d->gpu >= 0)
                        snprintf(where, sizeof(where), "GPU %d", d->gpu);
                else
                        snprintf(where, sizeof(where), "host");
                fprintf(out, "%s%-7s%s %-6s %-22s %s\n", color ? col[d->level] : "", doctor_level_name(d->level),
                        color ? "\033[0m" : "", where, d->code, str_or_empty(d->summary));
                if (d->level == DOCTOR_OK && !verbose)
                        continue;
                if (!str_empty(d->evidence))
                        fprintf(out, _("                 evidence: %s\n"), d->evidence);
                if (!str_empty(d->next_step))
                        fprintf(out, _("                 next:     %s\n"), d->next_step);
                if (!str_empty(d->source))
                        fprintf(out, _("                 source:   %s\n"), d->source);
        }
}

struct doctor_args {
        struct cli_common c;
        const char *gpu_spec, *root;
        bool explain;
        uint64_t cache_mib;
};

#define DOCTOR_HELP (-1) /* --help was printed */

/* argv into a: EXIT_OK to go on, DOCTOR_HELP, or the exit status of a usage error (said). */
static int doctor_parse(int argc, char **argv, struct doctor_args *a)
{
        static const struct option opts[] = {
                CLI_COMMON_LONGOPTS,
                { "gpu", required_argument, NULL, 'g' },
                { "explain", no_argument, NULL, 'E' },
                { "cache-min", required_argument, NULL, 'M' },
                { "root", required_argument, NULL, 'R' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        int opt;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
                switch (opt) {
                case 'h':
                        doctor_usage(stdout);
                        return DOCTOR_HELP;
                case 'g':
                        if (cli_gpu_spec_check(optarg) < 0) {
                                cli_error("doctor", _("--gpu: '%s' is not a GPU index, UUID or PCI bus id"), optarg);
                                return EXIT_USAGE;
                        }
                        a->gpu_spec = optarg;
                        continue;
                case 'E':
                        a->explain = true;
                        continue;
                case 'M':
                        if (parse_size_mib(optarg, &a->cache_mib) < 0 || a->cache_mib == 0 || a->cache_mib > (1u << 24)) {
                                cli_error("doctor", _("--cache-min: '%s' is not a size (e.g. 1024, 512M, 2G)"), optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                case 'R':
                        if (cli_path_arg("doctor", "--root", optarg) < 0)
                                return EXIT_USAGE;
                        a->root = optarg;
                        continue;
                default:
                        break;
                }
                int r = cli_common_option(&a->c, opt, optarg, "doctor");
                if (r < 0)
                        return EXIT_USAGE;
                if (r == 0) {
                        cli_error("doctor", _("%s is not an option of doctor (see 'ghostvram help doctor')"), argv[optind - 1]);
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                cli_error("doctor", _("unexpected argument '%s' (see 'ghostvram help doctor')"), argv[optind]);
                return EXIT_USAGE;
        }
        if (cli_common_finish(&a->c, "doctor") < 0)
                return EXIT_USAGE;
        /* a root that is not there would read as a host without a driver */
        if (strcmp(a->root, "/") != 0 && cli_dir_arg("doctor", "--root", a->root) < 0)
                return EXIT_USAGE;
        return EXIT_OK;
}

/* The facts doctor judges: the driver's, the host's, the kernel log's, shared memory's.
 * EXIT_OK, or the exit status (said; in freed). */
static int doctor_gather(const struct doctor_args *a, struct doctor_inputs *in, struct doctor_facts *f)
{
        struct gpu_opts go;
        cli_common_gpu_opts(&a->c, &go);
        go.health = true;
        if (gpu_collect(&go, &in->gpus) < 0) {
                cli_error("doctor", _("out of memory"));
                return EXIT_INCOMPLETE;
        }
        f->gpus = in->gpus;
        if (a->gpu_spec && in->gpus->driver_present) {
                unsigned idx;
                if (cli_gpu_spec_resolve(a->gpu_spec, in->gpus, &idx) < 0) {
                        cli_error("doctor", P_("--gpu %s: this host has %zu GPU", "--gpu %s: this host has %zu GPUs",
                                               in->gpus->n_gpus), a->gpu_spec, in->gpus->n_gpus);
                        inputs_free(in);
                        return EXIT_USAGE;
                }
                f->only_gpu = (int)idx;
        }
        gather_host(&a->c, a->root, in, f);
        gather_kernel(&a->c, in, f);
        if (gather_shm(&a->c, a->root, in, f) < 0) {
                cli_error("doctor", "out of memory");
                inputs_free(in);
                return EXIT_INCOMPLETE;
        }
        return EXIT_OK;
}

/* The JSON document of the findings (and, with --explain, the prevention and known issues). */
static json_t *doctor_json(const struct doctor_args *a, const struct doctor_inputs *in, const struct doctor_finding *v,
                           size_t n, int status)
{
        json_t *doc = json_object();
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < n; i++)
                json_array_append_new(arr, finding_json(&v[i]));
        if (!doc) {
                json_decref(arr);
                return NULL;
        }
        json_object_set_new(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_object_set_new(doc, "command", json_string("doctor"));
        json_object_set_new(doc, "simulated", json_boolean(a->c.simulated));
        json_object_set_new(doc, "driver_version",
                            in->gpus->driver_version[0] ? json_string(in->gpus->driver_version) : json_null());
        json_object_set_new(doc, "exit_status", json_integer(status));
        json_object_set_new(doc, "findings", arr ? arr : json_array());
        if (a->explain) {
                json_t *p = json_array();
                for (size_t i = 0; p && doctor_prevention[i]; i++)
                        json_array_append_new(p, json_string(doctor_prevention[i]));
                json_object_set_new(doc, "prevention", p ? p : json_array());
                json_object_set_new(doc, "known_issues", known_issues_json());
        }
        return doc;
}

int cmd_doctor(int argc, char **argv)
{
        static struct doctor_args a;
        memset(&a, 0, sizeof(a));
        cli_common_init(&a.c, DOCTOR_ACCEPTS);
        a.root = "/";
        a.cache_mib = 1024;
        int pr = doctor_parse(argc, argv, &a);
        if (pr != EXIT_OK)
                return pr == DOCTOR_HELP ? EXIT_OK : pr;
        struct doctor_inputs in = { 0 };
        struct doctor_facts f = { .only_gpu = -1, .cache_min_bytes = a.cache_mib << 20 };
        int gr = doctor_gather(&a, &in, &f);
        if (gr != EXIT_OK)
                return gr;
        struct doctor_finding *v = NULL;
        size_t n = 0;
        if (doctor_run(&f, &v, &n) < 0) {
                cli_error("doctor", _("out of memory"));
                inputs_free(&in);
                return EXIT_INCOMPLETE;
        }
        int status = doctor_exit_status(&f, v, n);
        if (a.c.json) {
                cli_print_json(doctor_json(&a, &in, v, n, status));
        } else {
                cli_sim_banner(stdout, &a.c);
                print_text(stdout, v, n, cli_use_color(stdout), a.c.verbose);
                if (a.explain)
                        print_explain(stdout);
        }
        doctor_findings_free(v, n);
        inputs_free(&in);
        return status;
}
