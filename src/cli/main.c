/* ghostvram: find, explain and free GPU memory that nvidia-smi cannot attribute. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "act/poke.h"
#include "cli/cli.h"
#include "config.h"
#include "util/i18n.h"

static const struct command {
        const char *name;
        int (*fn)(int argc, char **argv);
        const char *summary;
} commands[] = {
        /* summaries of at most 67 characters: `ghostvram --help` fits 80 columns */
        { "scan", cmd_scan, N_("account for every byte each GPU uses; name who holds the ghost") },
        { "snapshot", cmd_snapshot, N_("the raw facts: what NVML says and every holder of a device node") },
        { "check", cmd_check, N_("a monitoring plugin (Nagios/Icinga): one status line, exit 0/1/2/3") },
        { "watch", cmd_watch, N_("sample continuously; print changes, alert on a lasting ghost") },
        { "top", cmd_top, N_("a live view of GPU memory, its ghost and who holds it (like nvtop)") },
        { "serve", cmd_serve, N_("Prometheus exporter and a page of memory timelines (read-only)") },
        { "xid", cmd_xid, N_("NVRM/Xid kernel events, explained and tied to GPUs and processes") },
        { "reclaim", cmd_reclaim, N_("end a ghost's orphaned holders safely; time the memory coming back") },
        { "experiment", cmd_experiment, N_("reproduce the ghost on purpose; measure residual and recovery time") },
        { "doctor", cmd_doctor, N_("check the setup: persistence, uvm, driver bugs, pending resets") },
        { "demo", cmd_demo, N_("the ghost-memory story end to end on a temporary simulated host") },
        { "track", cmd_track, N_("run a command with a ledger that survives kill -9; report leaks") },
        { "sim", cmd_sim, N_("the simulated driver: make a host, run jobs, set knobs (tests)") },
};

static void usage(FILE *f)
{
        fprintf(f, "%s", _("Usage: ghostvram COMMAND [OPTIONS]\n\n"
                   "nvidia-smi says GPU memory is used but shows no process, or a PID that does not\n"
                   "exist. ghostvram accounts for every byte, names what really holds it (forked\n"
                   "workers of a killed job, tasks stuck in the driver, other containers, daemons)\n"
                   "and says what to do next.\n\nCommands:\n"));
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                fprintf(f, "  %-10s %s\n", commands[i].name, _(commands[i].summary));
        fprintf(f, "%s", _("\nRun 'ghostvram help COMMAND' for a command's options.\n"
                   "Environment: GHOSTVRAM_SIM=DIR reads a simulated host (see 'ghostvram sim\n"
                   "--help'); NO_COLOR or TERM=dumb disables colour.\n"
                   "Start here: 'sudo ghostvram scan' (root sees every process).\n"));
}

int main(int argc, char **argv)
{
        i18n_init();
        if (argc < 2) {
                usage(stderr);
                return EXIT_USAGE;
        }
        const char *cmd = argv[1];
        if (strcmp(cmd, "__poke") == 0) /* reclaim --poke's child (act/poke.c), exec'd with a deadline */
                return poke_child_main(argc - 1, argv + 1);
        bool is_help = strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0;
        if (strcmp(cmd, "help") == 0 && argc >= 3) {
                /* ghostvram help CMD: the command's own --help; help SUB for the commands with
                 * subcommands (sim init, xid explain) */
                if (strcmp(argv[2], "help") == 0 && argc == 3) {
                        usage(stdout);
                        return EXIT_OK;
                }
                for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
                        if (strcmp(argv[2], commands[i].name) != 0)
                                continue;
                        bool subs = strcmp(argv[2], "sim") == 0 || strcmp(argv[2], "xid") == 0;
                        if (argc > (subs ? 4 : 3)) {
                                fprintf(stderr, "ghostvram help: unexpected argument '%s'; run 'ghostvram help %s'\n",
                                        argv[subs ? 4 : 3], argv[2]);
                                return EXIT_USAGE;
                        }
                        /* the subcommands that have a help of their own */
                        static const char *const sim_subs[] = { "init", "run", "set", "status", NULL };
                        static const char *const xid_subs[] = { "explain", NULL };
                        if (argc == 4) {
                                const char *const *known = strcmp(argv[2], "sim") == 0 ? sim_subs : xid_subs;
                                bool found = false;
                                for (size_t k = 0; known[k]; k++)
                                        found |= strcmp(argv[3], known[k]) == 0;
                                if (!found) {
                                        fprintf(stderr, "ghostvram help: %s has no subcommand '%s'; run 'ghostvram help %s'\n",
                                                argv[2], argv[3], argv[2]);
                                        return EXIT_USAGE;
                                }
                        }
                        char *args[] = { argv[2], argc == 4 ? argv[3] : (char *)"--help", (char *)"--help", NULL };
                        cli_argc = argc == 4 ? 3 : 2;
                        cli_argv = args;
                        return commands[i].fn(cli_argc, args);
                }
                fprintf(stderr, _("ghostvram: no command '%s'; run 'ghostvram help' for the list\n"), argv[2]);
                return EXIT_USAGE;
        }
        bool is_version = strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0;
        if ((is_help || is_version) && argc > 2) {
                fprintf(stderr, _("ghostvram: unexpected argument '%s' after %s; run 'ghostvram help'\n"), argv[2], cmd);
                return EXIT_USAGE;
        }
        if (is_help) {
                usage(stdout);
                return EXIT_OK;
        }
        if (is_version) {
                printf("ghostvram %s\n", GV_VERSION);
                return EXIT_OK;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
                if (strcmp(cmd, commands[i].name) != 0)
                        continue;
                /* --version after any command, as before it */
                for (int k = 2; k < argc && strcmp(argv[k], "--") != 0; k++)
                        if (strcmp(argv[k], "--version") == 0) {
                                printf("ghostvram %s\n", GV_VERSION);
                                return EXIT_OK;
                        }
                /* a document for programs: its sentences are English in every language */
                if (cli_wants_json(argc - 1, argv + 1))
                        i18n_off();
                cli_argc = argc - 1;
                cli_argv = argv + 1;
                return commands[i].fn(argc - 1, argv + 1);
        }
        fprintf(stderr, _("ghostvram: unknown command '%s'; run 'ghostvram help' for the list\n"), cmd);
        return EXIT_USAGE;
}
