#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "model/ledger.h"
#include "run/scan_run.h"
#include "render/scan_render.h"

#define SCAN_ACCEPTS (CLI_COMMON_ALL | CLI_XID_WINDOW)

static void scan_usage(FILE *f)
{
        fputs(_("Usage: ghostvram scan [OPTIONS]\n\n"
              "Account for every byte each GPU reports as used and name who holds the part\n"
              "that no live process explains:\n\n"
              "  used = listed + foreign + ghost + unattributed\n"
              "         (the driver's reservation apart)\n\n"
              "  listed        NVML processes alive here (a reused PID is not the owner)\n"
              "  foreign       owners in other PID namespaces (containers) the driver tells\n"
              "                us about\n"
              "  ghost         unexplained bytes with evidence of a dead owner: a PID that\n"
              "                no longer exists, or orphaned processes linked to it (forked\n"
              "                workers that kept the dead job's /dev/nvidia* descriptors or\n"
              "                mappings)\n"
              "  unattributed  unexplained bytes while live owners run (managed memory,\n"
              "                kernel clients, tenants we cannot see): never called a leak\n\n"), f);
        /* xgettext:no-c-format */
        fputs(_("A holder is tied to a GPU's ghost only through a link (same process group or\n"
              "session as the dead owner, its child, the same job), never because it has a\n"
              "device node open: CUDA opens every GPU's node and monitors hold them too.\n"
              "A ghost counts only above a noise floor (the larger of 64 MiB and 1% of the\n"
              "GPU) and in two samples a few seconds apart, because the driver frees memory\n"
              "with a delay while a job tears down.\n\n"
              "Host shared memory (/dev/shm, System V segments) is noted after the GPUs when\n"
              "it is large (1 GiB, or 10% of RAM if less): it is host RAM, never in\n"
              "nvidia-smi's used figure.\n\n"), f);
        /* xgettext:no-c-format */
        fputs(_("Options:\n"
              "  --gpu ID             report only this GPU: an index, a UUID or a PCI bus id\n"
              "                       (the account always looks at every GPU)\n"
              "  --confirm DURATION   wait this long before the confirming sample (default\n"
              "                       2s; 0 = one sample, nothing confirmed by time)\n"
              "  --noise-floor MIB    minimum ghost in MiB (default 64; 1% of the GPU if\n"
              "                       larger)\n"
              "  --kmsg FILE          read NVRM/Xid kernel events from a saved log (dmesg,\n"
              "                       journalctl -k, syslog; - for stdin) instead of /dev/kmsg\n"
              "  --no-kernel          do not read the kernel log\n"
              "  --ledger-dir DIR     read the allocation ledgers of `ghostvram track` in DIR:\n"
              "                       a dead owner's outstanding allocations and their call\n"
              "                       sites\n"
              "  --textfile DIR       also write DIR/ghostvram.prom for node_exporter's\n"
              "                       textfile collector (atomically; docs/metrics.md lists\n"
              "                       the metrics)\n"), f);
        cli_common_help(f, SCAN_ACCEPTS);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\nVerdicts (the first finding of a GPU; docs/verdicts.md explains each):\n"), f);
        /* the codes themselves, so that help never lists fewer than the ledger has */
        size_t col = 0;
        for (size_t i = 0; i < VERDICT_COUNT; i++) {
                bool last = i + 1 == VERDICT_COUNT;
                size_t w = strlen(verdict_listed(i)) + (last ? 0 : 1);
                if (col && col + 1 + w > 78) {
                        fputc('\n', f);
                        col = 0;
                }
                col += (size_t)fprintf(f, "%s%s%s", col ? " " : "  ", verdict_listed(i), last ? "" : ",");
        }
        fputs(_("\n\n"
              "Examples:\n"
              "  sudo ghostvram scan               # root sees every process and descriptor\n"
              "  ghostvram scan --gpu 1 --verbose  # also list holders that are not linked\n"
              "  ghostvram scan --json |\n"
              "    jq '.gpus[] | {index, verdict, ghost: .memory.ghost_bytes}'\n\n"), f);
        fputs(_("Exit status: 0 no ghost; 1 a confirmed ghost on some GPU, or an Xid of\n"
              "severity error (48, 95) within --xid-window; 2 usage error; 3 some GPU is\n"
              "lost, could not be inspected or had a critical Xid (79) within the window,\n"
              "or no driver. The worse wins: 3 over 1 (a ghost on one GPU never hides a\n"
              "lost one).\n"), f);
}

struct scan_args {
        struct cli_common c;
        const char *gpu_spec;
        struct scan_cmd_opts o;
};

#define F(f) offsetof(struct scan_args, f)
static const struct cli_opt scan_table[] = {
        { "gpu", 'g', CO_GPU, F(gpu_spec) },
        { "confirm", 'C', CO_MS, F(o.confirm_ms), 0, 600000, N_("--confirm: '%s' is not a duration up to 10m (e.g. 2s, 500ms, 0)") },
        { "noise-floor", 'F', CO_U64, F(o.floor_mib), 0, 1u << 24, N_("--noise-floor: '%s' is not a number of MiB"),
          CO_SEEN(F(o.floor_set)) },
        { "kmsg", 'K', CO_PATH, F(o.kmsg) },
        { "no-kernel", 'N', CO_FLAG, F(o.no_kernel) },
        { "textfile", 'T', CO_PATH, F(o.textfile) },
        { "ledger-dir", 'L', CO_PATH, F(o.ledger_dir) },
        { 0 },
};
#undef F

/* argv into a, and the checks made before scanning: EXIT_OK to go on, CLI_HELP, or the exit
 * status of a usage error (said). */
static int scan_parse(int argc, char **argv, struct scan_args *a)
{
        const struct cli_parse p = { "scan", "hv", scan_table, a, &a->c, scan_usage, .finish = true };
        int r = cli_parse(&p, argc, argv);
        if (r != EXIT_OK)
                return r;
        /* a log that cannot be read is the caller's mistake, said before the scan (as xid does),
         * not a note in the report */
        if (a->o.kmsg && !a->o.no_kernel && cli_kmsg_check("scan", a->o.kmsg) < 0)
                return EXIT_USAGE;
        /* so are a ledger directory that is not there (2, as serve) and a textfile directory the
         * metrics cannot go to (3, as the failed write it would be; watch says the same) */
        if (a->o.ledger_dir && cli_dir_arg("scan", "--ledger-dir", a->o.ledger_dir) < 0)
                return EXIT_USAGE;
        if (a->o.textfile && cli_writable_dir_arg("scan", "--textfile", a->o.textfile) < 0)
                return EXIT_INCOMPLETE;
        return EXIT_OK;
}

/* The result with the allocation ledgers and host shared memory beside it, and --textfile:
 * status, or EXIT_INCOMPLETE when a part could not be made. */
static int scan_print(const struct scan_args *a, const struct scan_once *run, int status)
{
        struct scan_beside b;
        if (scan_beside_collect(run->res, &a->c.src, a->o.ledger_dir, &b, cli_say) < 0)
                status = EXIT_INCOMPLETE;
        const struct show s = cli_show(&a->c);
        if (scan_answer(&s, run, &b, a->o.textfile, cli_say) < 0)
                status = EXIT_INCOMPLETE;
        scan_beside_free(&b);
        return status;
}

int cmd_scan(int argc, char **argv)
{
        static struct scan_args a;
        memset(&a, 0, sizeof(a));
        cli_common_init(&a.c, SCAN_ACCEPTS);
        a.o.confirm_ms = 2000;
        int pr = scan_parse(argc, argv, &a);
        if (pr != EXIT_OK)
                return pr == CLI_HELP ? EXIT_OK : pr;
        int only_gpu = -1;
        int gr = cli_gpu_resolve(&a.c, a.gpu_spec, false, &only_gpu, "scan");
        if (gr != EXIT_OK)
                return gr;
        struct scan_once_opts so;
        scan_cmd_once_opts(&a.c.src, &a.o, &so);
        struct scan_once *run = NULL;
        int r = scan_once_run(&so, &run);
        if (r < 0) {
                cli_error("scan", _("cannot read %s: %s"), a.c.src.proc_root, fileio_strerror(r));
                return EXIT_INCOMPLETE;
        }
        struct scan_result *res = run->res;
        if (res->facts->gpu->driver_present && only_gpu >= 0 && (size_t)only_gpu >= res->facts->gpu->n_gpus) {
                cli_error("scan", P_("--gpu %d: this host has %zu GPU", "--gpu %d: this host has %zu GPUs", res->facts->gpu->n_gpus),
                          only_gpu, res->facts->gpu->n_gpus);
                scan_once_free(run);
                return EXIT_USAGE;
        }
        res->only_gpu = only_gpu;
        int status = scan_print(&a, run, scan_exit_status(res));
        scan_once_free(run);
        return status;
}
