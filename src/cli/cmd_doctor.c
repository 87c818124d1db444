/* ghostvram doctor: the host's setup against what makes ghost memory likely or hard to clear.
 * Its options; the facts are gathered and judged by run/doctor_run.c, shown by
 * render/doctor_render.c. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "render/doctor_render.h"
#include "run/doctor_run.h"
#include "util/i18n.h"

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

/* What the command line gives: the use case's options, read into directly, and what only the
 * command needs. */
struct doctor_args {
        struct cli_common c;
        struct doctor_check_opts o;
        bool explain;
        uint64_t cache_mib;
        struct sources_shm_paths shm_paths;         /* what the use case's shm_opts point into */
        struct shm_opts shm;
};

static int doctor_gpu(void *ctx, const char *arg, const char *cmd)
{
        if (gpu_spec_check(arg) < 0) {
                cli_error(cmd, _("--gpu: '%s' is not a GPU index, UUID or PCI bus id"), arg);
                return -1;
        }
        ((struct doctor_args *)ctx)->o.gpu_spec = arg;
        return 0;
}

#define F(f) offsetof(struct doctor_args, f)
static const struct cli_opt doctor_table[] = {
        { "gpu", 'g', CO_FN, .fn = doctor_gpu },
        { "explain", 'E', CO_FLAG, F(explain) },
        { "cache-min", 'M', CO_MIB, F(cache_mib), 1, 1u << 24, N_("--cache-min: '%s' is not a size (e.g. 1024, 512M, 2G)") },
        { "root", 'R', CO_PATH, F(o.root) },
        { 0 },
};
#undef F

/* argv into a: EXIT_OK to go on, CLI_HELP, or the exit status of a usage error (said). */
static int doctor_parse(int argc, char **argv, struct doctor_args *a)
{
        const struct cli_parse p = { "doctor", "hv", doctor_table, a, &a->c, doctor_usage, .operands = true };
        int r = cli_parse(&p, argc, argv);
        if (r != EXIT_OK)
                return r;
        if (optind < argc) {
                cli_error("doctor", _("unexpected argument '%s' (see 'ghostvram help doctor')"), argv[optind]);
                return EXIT_USAGE;
        }
        if (cli_common_finish(&a->c, "doctor") < 0)
                return EXIT_USAGE;
        /* a root that is not there would read as a host without a driver */
        if (strcmp(a->o.root, "/") != 0 && cli_dir_arg("doctor", "--root", a->o.root) < 0)
                return EXIT_USAGE;
        return EXIT_OK;
}

int cmd_doctor(int argc, char **argv)
{
        static struct doctor_args a;
        memset(&a, 0, sizeof(a));
        cli_common_init(&a.c, DOCTOR_ACCEPTS);
        a.o.root = "/";
        a.cache_mib = 1024;
        int pr = doctor_parse(argc, argv, &a);
        if (pr != EXIT_OK)
                return pr == CLI_HELP ? EXIT_OK : pr;
        doctor_check_opts_sources(&a.o, &a.c.src, &a.shm_paths, &a.shm);
        a.o.cache_min_bytes = a.cache_mib << 20;
        struct doctor_check d;
        char err[1024] = "";
        int r = doctor_check(&a.o, &d, err, sizeof(err));
        if (r < 0) {
                cli_error("doctor", "%s", err);
                doctor_check_free(&d);
                return r == -ENOENT ? EXIT_USAGE : EXIT_INCOMPLETE;
        }
        const struct show s = cli_show(&a.c);
        doctor_show(&s, &d, a.c.src.simulated, a.explain);
        int status = d.exit_status;
        doctor_check_free(&d);
        return status;
}
