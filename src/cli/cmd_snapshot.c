#include <stdio.h>

#include "cli/cli.h"
#include "collect/sample.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "render/snapshot.h"

#define SNAPSHOT_ACCEPTS CLI_COMMON_ALL

static void snapshot_usage(FILE *f)
{
        fputs(_("Usage: ghostvram snapshot [OPTIONS]\n\n"
              "Show the raw facts, no verdicts: per GPU what NVML says (memory, the processes\n"
              "it lists, and what this host knows of each PID: alive, zombie, exiting, start\n"
              "time, holds device nodes), and every process holding an NVIDIA device node, by\n"
              "open descriptor or by memory mapping. 'ghostvram scan' turns these facts into\n"
              "verdicts.\n\n"), f);
        fputs(_("Options:\n"), f);
        cli_common_help(f, SNAPSHOT_ACCEPTS);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\nExamples:\n"
              "  sudo ghostvram snapshot                  # root sees every process\n"
              "  ghostvram snapshot --json | jq '.holders[].pid'\n"
              "  sudo ghostvram snapshot --save-bundle /tmp/gv-bundle  # for a bug report\n"
              "  ghostvram snapshot --from-bundle /tmp/gv-bundle\n\n"), f);
        fputs(_("Exit status: 0 facts shown; 2 usage error; 3 the driver or /proc could not be\n"
              "read.\n"), f);
}

int cmd_snapshot(int argc, char **argv)
{
        struct cli_common c;
        cli_common_init(&c, SNAPSHOT_ACCEPTS);
        /* snapshot has only the common options */
        const struct cli_parse p = { "snapshot", "hv", NULL, NULL, &c, snapshot_usage, .finish = true };
        int pr = cli_parse(&p, argc, argv);
        if (pr != EXIT_OK)
                return pr == CLI_HELP ? EXIT_OK : pr;

        struct facts_opts fo;
        sources_facts_opts(&c.src, &fo);
        struct facts *f;
        int r = facts_collect(&fo, &f);
        if (r < 0) {
                cli_error("snapshot", "cannot read %s: %s", c.src.proc_root, fileio_strerror(r));
                return EXIT_INCOMPLETE;
        }
        const struct show s = cli_show(&c);
        snapshot_show(&s, f);
        int status = f->gpu->driver_present ? EXIT_OK : EXIT_INCOMPLETE;
        facts_free(f);
        return status;
}
