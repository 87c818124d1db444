/* ghostvram sim: the simulated driver — create a simulated host, run jobs on it, set its
 * knobs, show its state. The model: docs/simulator.md. Options, usage and exit statuses here;
 * the simulator's state in sim/state, the job and the status read in run/sim_run.c, the
 * printing in render/sim_render.c. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "render/sim_render.h"
#include "run/sim_run.h"
#include "simstate.h"
#include "util/buf.h"
#include "util/i18n.h"
#include "util/parse.h"

static void sim_usage(FILE *f)
{
        fputs(_("Usage: ghostvram sim COMMAND DIR [OPTIONS]\n\n"
                "A simulated NVIDIA driver for tests, demos and learning. DIR holds a simulated\n"
                "host: GPUs, device files (DIR/dev/nvidia*), jobs' contexts and knobs. With\n"
                "GHOSTVRAM_SIM=DIR every ghostvram command reads it instead of the real driver,\n"
                "through a stand-in libnvidia-ml.so.1 with the real ABI.\n\n"), f);
        fputs(_("Commands:\n"
                "  init DIR [--gpus N] [--memory MiB] [--reserved MiB]\n"
                "                create a simulated host\n"
                "  run DIR --gpu I --mib M [--workers K] [--close-fds-in-workers]\n"
                "      [--exec-child] [--worker-setsid | --setsid-workers N]\n"
                "      [--launcher | --launcher-exits]\n"
                "      [--busy] [--mig-instance GI] [--mps] [--alloc ROUTE]\n"
                "                start a simulated CUDA job in the background; print its PIDs\n"
                "  set DIR KEY=VALUE...\n"
                "                driver generation, PID translation, faults ('sim set --help')\n"
                "  status DIR    GPUs, memory, contexts and their owners, as the driver sees them\n\n"), f);
        fputs(_("The rule it follows, like the real driver: a context's memory is freed only\n"
                "when the open file description it was created on is gone. Workers forked by a\n"
                "killed job keep it, through inherited descriptors or mappings alone, and\n"
                "nvidia-smi shows a PID that no longer exists.\n\n"), f);
        fputs(_("Example:\n"
                "  ghostvram sim init /tmp/gpu --gpus 2\n"
                "  ghostvram sim run /tmp/gpu --gpu 0 --mib 4096 --workers 2   # owner 1234 ...\n"
                "  kill -9 1234\n"
                "  GHOSTVRAM_SIM=/tmp/gpu ghostvram scan\n\n"), f);
        fputs(_("Run 'ghostvram sim COMMAND --help' for each command. Exit status: 0 done,\n"
                "1 failed (e.g. the job ran out of GPU memory), 2 bad usage.\n"), f);
}

static bool want_help(int argc, char **argv)
{
        for (int i = 1; i < argc; i++)
                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
                        return true;
        return false;
}

/* set and status take no option but --help: any other is refused in one line, never taken for
 * DIR or a KEY=VALUE. */
static int no_options(const char *cmd, int argc, char **argv)
{
        for (int i = 1; i < argc; i++)
                if (argv[i][0] == '-' && argv[i][1]) {
                        cli_error(cmd, "unknown option '%.*s'; see 'ghostvram help %s'", (int)strcspn(argv[i], "="),
                                  argv[i], cmd);
                        return -1;
                }
        return 0;
}

/* Where init may build a host (sim_init_target), its refusal said. 0, -EEXIST (a simulated
 * host is there: sim_init_dir says so) or -1 (printed). */
static int init_target_ok(const char *dir)
{
        if (cli_path_arg("sim init", "DIR", dir) < 0)
                return -1;
        unsigned mode = 0;
        int r = sim_init_target(dir, &mode);
        if (r == 0 || r == -EEXIST)
                return r;
        if (r == -ENOTDIR)
                cli_error("sim init", "%s: not a directory (%s)", dir, S_ISREG(mode) ? "a file" : file_kind(mode));
        else if (r == -EPERM)
                cli_error("sim init", "%s: refused: the root directory (its dev/ is this host's /dev); give a new or an "
                                      "empty directory", dir);
        else if (r == -ENOTEMPTY)
                cli_error("sim init", "%s: not empty and not a simulated host: give a new or an empty directory", dir);
        else
                cli_error("sim init", "%s: %s", dir, strerror(-r));
        return -1;
}

/* ---- init ------------------------------------------------------------------------------- */

/* a help in sections, each translated whole; NULL ends it */
static void sim_put_help(const char *const *sections)
{
        for (size_t i = 0; sections[i]; i++)
                fputs(_(sections[i]), stdout);
}

static const char *const sim_init_help[] = {
        N_("Usage: ghostvram sim init DIR [--gpus N] [--memory MiB] [--reserved MiB]\n\n"
        "Create a simulated host in DIR (created if missing; must not hold one yet):\n"
        "N GPUs \"NVIDIA H100 80GB HBM3 (simulated)\" with distinct UUIDs and PCI bus\n"
        "ids; device files DIR/dev/nvidiactl, nvidia-uvm, nvidia0..N-1; no jobs;\n"
        "default knobs.\n\n"),
        N_("  --gpus N          number of GPUs, 1 to 16 (default 2)\n"
        "  --memory SIZE     memory per GPU (default 81559 MiB, an H100 80GB; 2GiB ok)\n"
        "  --reserved SIZE   memory the driver reserves per GPU (default 579 MiB):\n"
        "                    apart in nvmlDeviceGetMemoryInfo_v2, inside v1's 'used'\n\n"),
        N_("Then: ghostvram sim run DIR ..., or GHOSTVRAM_SIM=DIR ghostvram scan\n"),
        NULL,
};

static int sim_cmd_init(int argc, char **argv)
{
        static const struct option opts[] = {
                { "gpus", required_argument, NULL, 'g' },
                { "memory", required_argument, NULL, 'm' },
                { "reserved", required_argument, NULL, 'r' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        unsigned gpus = 2;
        uint64_t memory = 81559, reserved = 579;
        int c;
        optind = 1;
        opterr = 0;     /* a bad option is said in one line (cli_bad_option) */
        while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (c) {
                case 'g':
                        if (parse_uint_range(optarg, 1, SIM_MAX_GPUS, &gpus) < 0) {
                                cli_error("sim init", "--gpus: '%s' is not a number from 1 to %d", optarg,
                                          SIM_MAX_GPUS);
                                return EXIT_USAGE;
                        }
                        break;
                case 'm':
                        if (parse_size_mib(optarg, &memory) < 0 || memory < 1 || memory > ((uint64_t)1 << 24)) {
                                cli_error("sim init", "--memory: '%s' is not a size from 1 MiB to 16 TiB", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'r':
                        if (parse_size_mib(optarg, &reserved) < 0) {
                                cli_error("sim init", "--reserved: '%s' is not a size (e.g. 579, 1GiB)", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'h': sim_put_help(sim_init_help); return EXIT_OK;
                default: cli_bad_option("sim init", argc, argv, c); return EXIT_USAGE;
                }
        }
        if (optind != argc - 1) {
                cli_error("sim init", "expected one DIR (see 'ghostvram sim init --help')");
                return EXIT_USAGE;
        }
        const char *dir = argv[optind];
        if (reserved >= memory) {
                cli_error("sim init", "--reserved (%llu MiB) must be less than --memory (%llu MiB)",
                          (unsigned long long)reserved, (unsigned long long)memory);
                return EXIT_USAGE;
        }
        int r = init_target_ok(dir);
        if (r == -1)
                return EXIT_USAGE;
        r = sim_init_dir(dir, gpus, memory, reserved);
        if (r == -EEXIST) {
                cli_error("sim init", "%s already holds a simulated host; remove it first", dir);
                return EXIT_USAGE;
        }
        if (r < 0) {
                cli_error("sim init", "cannot create a simulated host in %s: %s", dir, strerror(-r));
                return EXIT_FINDING;
        }
        sim_init_text(stdout, dir, gpus, memory, reserved);
        return EXIT_OK;
}

/* ---- run --------------------------------------------------------------------------------- */

static const char *const sim_run_help[] = {
        N_("Usage: ghostvram sim run DIR --gpu I --mib M [--workers K]\n"
        "                         [--close-fds-in-workers] [--exec-child]\n"
        "                         [--worker-setsid | --setsid-workers N]\n"
        "                         [--launcher | --launcher-exits]\n"
        "                         [--busy] [--mig-instance GI] [--mps] [--alloc ROUTE]\n\n"
        "Start a simulated CUDA job in the background; return once its context exists.\n"
        "The owner opens DIR/dev/nvidiactl, nvidia-uvm and every visible nvidiaN\n"
        "close-on-exec and maps them, like the CUDA runtime; its context charges M MiB\n"
        "to GPU I, listed under the owner's PID. It starts a new session (setsid), like\n"
        "a job a scheduler launches: 'kill -- -PGID' ends the whole job. Prints one line\n"
        "per process: 'launcher PID' (with a launcher), 'owner PID', 'worker PID'...,\n"
        "'child PID'. They sleep until killed. The driver's teardown of the context is\n"
        "no process of the job: it frees the memory when the last descriptor or mapping\n"
        "goes, gradually over the free delay (free_delay_ms_per_gib, 'sim set --help').\n\n"),
        N_("  --gpu I                 CUDA device ordinal (of CUDA_VISIBLE_DEVICES if set;\n"
        "                          the variable passes to the job)\n"
        "  --mib SIZE              GPU memory of the context (must fit in free memory)\n"
        "  --workers K             fork K workers (0-64) after the context exists: they\n"
        "                          inherit descriptors and mappings (data-loader workers)\n"
        "  --close-fds-in-workers  workers close their device descriptors, keep mappings\n"
        "  --exec-child            also fork a child that execs 'sleep': it holds nothing\n"
        "  --worker-setsid         each worker calls setsid() after the fork: its own\n"
        "                          session and group, still holding what it inherited\n"
        "  --setsid-workers N      only the first N workers call setsid(); the others\n"
        "                          stay in the owner's group and session\n"
        "  --launcher              a launcher (torchrun, a shell script) starts the job:\n"
        "                          it leads the session and group, holds no device file,\n"
        "                          forks the owner (in its group) and reaps its children\n"
        "  --launcher-exits        a launcher that exits once the job is ready: the owner\n"
        "                          is reparented, the workers' group has no leader\n"
        "  --busy                  the job has GPU work pending: when the owner dies the\n"
        "                          driver stops its channels and logs Xid 45 in DIR/kmsg\n"
        "  --mig-instance GI       run in MIG GPU instance GI (1..N of\n"
        "                          mig_instances=GPU:N): the job also opens the\n"
        "                          instance's capability nodes\n"
        "                          DIR/dev/nvidia-caps/nvidia-capK; its context charges\n"
        "                          that instance (required on a GPU with MIG instances)\n"
        "  --mps                   the job is a client of the MPS server: NVML lists its\n"
        "                          context in the MPS list\n"
        "                          (nvmlDeviceGetMPSComputeRunningProcesses), not the\n"
        "                          compute list\n"
        "  --alloc ROUTE           how the owner allocates through the simulated\n"
        "                          libcuda.so.1: symbol (default: one cuMemAlloc_v2),\n"
        "                          mixed (half by symbol, half through\n"
        "                          cuGetProcAddress_v2), procaddr, procaddr-v1, dlsym,\n"
        "                          vmm, async (docs/track.md)\n\n"),
        N_("Exit status: 0 started, 1 the job failed (out of memory, GPU lost), 2 bad usage.\n"),
        NULL,
};

/* One option into a: 1 taken, 0 --help printed, -1 a usage error (said). */
static int sim_run_option(struct sim_job *a, int c, const char *arg, int argc, char **argv)
{
        const char *cmd = "sim run";
        switch (c) {
        case 'g':
                if (parse_uint_range(arg, 0, SIM_MAX_GPUS - 1, &a->gpu) < 0)
                        return cli_error(cmd, "--gpu: '%s' is not a GPU index", arg), -1;
                a->have_gpu = true;
                return 1;
        case 'm':
                if (parse_size_mib(arg, &a->mib) < 0 || a->mib == 0 || a->mib > ((uint64_t)1 << 24))
                        return cli_error(cmd, "--mib: '%s' is not a size from 1 MiB to 16 TiB", arg), -1;
                return 1;
        case 'w':
                if (parse_uint_range(arg, 0, 64, &a->workers) < 0)
                        return cli_error(cmd, "--workers: '%s' is not a number from 0 to 64", arg), -1;
                return 1;
        case 'c': a->close_fds = true; return 1;
        case 'x': a->exec_child = true; return 1;
        case 's': a->worker_setsid = true; return 1;
        case 'S':
                if (parse_uint_range(arg, 0, 64, &a->setsid_workers) < 0)
                        return cli_error(cmd, "--setsid-workers: '%s' is not a number from 0 to 64", arg), -1;
                a->have_setsid_workers = true;
                return 1;
        case 'l': a->launcher = true; return 1;
        case 'e': a->launcher_exits = true; return 1;
        case 'b': a->busy = true; return 1;
        case 'M': a->mps = true; return 1;
        case 'a':
                if (strcmp(arg, "mixed") && strcmp(arg, "symbol") && strcmp(arg, "procaddr") && strcmp(arg, "procaddr-v1") &&
                    strcmp(arg, "dlsym") && strcmp(arg, "vmm") && strcmp(arg, "async"))
                        return cli_error(cmd, "--alloc: '%s' is not a route (see --help)", arg), -1;
                a->alloc = arg;
                return 1;
        case 'i':
                if (parse_uint_range(arg, 1, SIM_MAX_MIG, &a->gi) < 0)
                        return cli_error(cmd, "--mig-instance: '%s' is not a GPU instance from 1 to %u", arg, SIM_MAX_MIG), -1;
                return 1;
        case 'h': sim_put_help(sim_run_help); return 0;
        default: cli_bad_option(cmd, argc, argv, c); return -1;
        }
}

#define SIM_RUN_HELP (-1) /* --help was printed */

/* argv into a (its option table: sim_cmd_run's): EXIT_OK, SIM_RUN_HELP, or EXIT_USAGE (said). */
static int sim_run_parse(int argc, char **argv, const struct option *opts, struct sim_job *a)
{
        const char *cmd = "sim run";
        int c;
        optind = 1;
        opterr = 0;     /* a bad option is said in one line (cli_bad_option) */
        while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                int r = sim_run_option(a, c, optarg, argc, argv);
                if (r <= 0)
                        return r == 0 ? SIM_RUN_HELP : EXIT_USAGE;
        }
        if (a->worker_setsid && a->have_setsid_workers) {
                cli_error(cmd, "--worker-setsid and --setsid-workers cannot be used together: choose one");
                return EXIT_USAGE;
        }
        if (a->launcher && a->launcher_exits) {
                cli_error(cmd, "--launcher and --launcher-exits cannot be used together: choose one");
                return EXIT_USAGE;
        }
        a->launcher |= a->launcher_exits;
        if (optind != argc - 1 || !a->have_gpu || !a->mib) {
                cli_error(cmd, "expected DIR, --gpu and --mib (see 'ghostvram sim run --help')");
                return EXIT_USAGE;
        }
        a->dir = argv[optind];
        return cli_path_arg(cmd, "DIR", a->dir) < 0 ? EXIT_USAGE : EXIT_OK;
}

/* The job's report: its processes on standard output, its errors said. */
static void run_process_line(void *ctx, const char *line)
{
        (void)ctx;
        printf("%s\n", line);
}

static void run_error(void *ctx, const char *msg)
{
        (void)ctx;
        cli_error("sim run", "%s", msg);
}

static int sim_cmd_run(int argc, char **argv)
{
        static const struct option opts[] = {
                { "gpu", required_argument, NULL, 'g' },
                { "mib", required_argument, NULL, 'm' },
                { "workers", required_argument, NULL, 'w' },
                { "close-fds-in-workers", no_argument, NULL, 'c' },
                { "exec-child", no_argument, NULL, 'x' },
                { "worker-setsid", no_argument, NULL, 's' },
                { "setsid-workers", required_argument, NULL, 'S' },
                { "launcher", no_argument, NULL, 'l' },
                { "launcher-exits", no_argument, NULL, 'e' },
                { "busy", no_argument, NULL, 'b' },
                { "mig-instance", required_argument, NULL, 'i' },
                { "mps", no_argument, NULL, 'M' },
                { "alloc", required_argument, NULL, 'a' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct sim_job a = { 0 };
        int pr = sim_run_parse(argc, argv, opts, &a);
        if (pr != EXIT_OK)
                return pr == SIM_RUN_HELP ? EXIT_OK : pr;
        struct sim_job_cb cb = { .process = run_process_line, .error = run_error };
        enum sim_outcome r = sim_job_start(&a, &cb);
        fflush(stdout);
        return r == SIM_DONE ? EXIT_OK : r == SIM_BAD_USAGE ? EXIT_USAGE : EXIT_FINDING;
}

/* ---- set ---------------------------------------------------------------------------------- */

static int sim_cmd_set(int argc, char **argv)
{
        if (want_help(argc, argv)) {
                struct buf b = BUF_INIT(1 << 16);
                sim_knobs_help(&b);
                fputs(_("Usage: ghostvram sim set DIR KEY=VALUE [KEY=VALUE...]\n\n"
                       "Change the simulated driver. Knobs marked [GPU:] apply to every GPU, or to\n"
                       "one with KEY=GPU:VALUE; KEY=default (or KEY=GPU:default) removes a setting.\n"
                       "They take effect at the next NVML call. All are checked before any is written.\n\n"),
                      stdout);
                /* the knobs' list is made from the simulator's table (sim_knobs_help) */
                fputs(_("Knobs:\n"), stdout);
                printf("%s\n", buf_str(&b));
                fputs(_("Examples:\n"
                       "  ghostvram sim set /tmp/gpu driver=535.98 pid_mode=host\n"
                       "  ghostvram sim set /tmp/gpu hang=1:nvmlDeviceGetMemoryInfo_v2\n"
                       "  ghostvram sim set /tmp/gpu notsup=persistence,memory_v2 uncharged_mib=0:300\n"
                       "  ghostvram sim set /tmp/gpu free_delay_ms_per_gib=2000 xid_event=0:79\n"),
                      stdout);
                buf_free(&b);
                return EXIT_OK;
        }
        if (no_options("sim set", argc, argv) < 0)
                return EXIT_USAGE;
        if (argc < 3) {
                cli_error("sim set", "expected DIR and at least one KEY=VALUE (see 'ghostvram sim set --help')");
                return EXIT_USAGE;
        }
        if (cli_path_arg("sim set", "DIR", argv[1]) < 0)
                return EXIT_USAGE;
        char err[SIM_ERR_LEN] = "";
        int r = sim_knobs_set(argv[1], argv + 2, (size_t)(argc - 2), err, sizeof(err));
        if (r < 0) {
                cli_error("sim set", "%s", err[0] ? err : strerror(-r));
                return r == -EINVAL || r == -ENOENT || r == -EBADMSG ? EXIT_USAGE : EXIT_FINDING;
        }
        return EXIT_OK;
}

/* ---- status ------------------------------------------------------------------------------- */

static int sim_cmd_status(int argc, char **argv)
{
        if (want_help(argc, argv)) {
                fputs(_("Usage: ghostvram sim status DIR\n\n"
                       "What the simulated driver sees now, from this process's PID namespace:\n"
                       "per GPU its memory (as the v2 query reports it) and faults, and each\n"
                       "context with its owner (alive, dead, or in another PID namespace), or\n"
                       "released and waiting for the free delay.\n"), stdout);
                return EXIT_OK;
        }
        if (no_options("sim status", argc, argv) < 0)
                return EXIT_USAGE;
        if (argc != 2) {
                cli_error("sim status", "expected one DIR");
                return EXIT_USAGE;
        }
        if (cli_path_arg("sim status", "DIR", argv[1]) < 0)
                return EXIT_USAGE;
        struct sim_status st;
        char err[1024] = "";
        enum sim_outcome r = sim_status_read(argv[1], &st, err, sizeof(err));
        if (r == SIM_DONE)
                sim_status_text(stdout, argv[1], &st);
        else
                cli_error("sim status", "%s", err);
        sim_status_free(&st);
        return r == SIM_DONE ? EXIT_OK : r == SIM_BAD_USAGE ? EXIT_USAGE : EXIT_FINDING;
}

int cmd_sim(int argc, char **argv)
{
        static const struct {
                const char *name;
                int (*fn)(int, char **);
        } subs[] = {
                { "init", sim_cmd_init },
                { "run", sim_cmd_run },
                { "set", sim_cmd_set },
                { "status", sim_cmd_status },
        };
        if (argc < 2) {
                sim_usage(stderr);
                return EXIT_USAGE;
        }
        if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
                sim_usage(stdout);
                return EXIT_OK;
        }
        for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
                if (!strcmp(argv[1], subs[i].name))
                        return subs[i].fn(argc - 1, argv + 1);
        cli_error("sim", "unknown command '%s'", argv[1]);
        sim_usage(stderr);
        return EXIT_USAGE;
}
