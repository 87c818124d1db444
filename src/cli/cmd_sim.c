/* ghostvram sim: the simulated driver — create a simulated host, run jobs on it, set its
 * knobs, show its state. The model: docs/simulator.md. Options, usage and exit statuses here;
 * the simulator's state in sim/state, the host built, the job and the status read in
 * run/sim_run.c, the printing in render/sim_render.c. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* set and status take no option but --help: -h or --help anywhere prints usage's help (CLI_HELP);
 * any other option is refused in one line (EXIT_USAGE), never taken for DIR or a KEY=VALUE. */
static int sim_plain_args(const char *cmd, int argc, char **argv, void (*usage)(FILE *f))
{
        for (int i = 1; i < argc; i++)
                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
                        return usage(stdout), CLI_HELP;
        for (int i = 1; i < argc; i++)
                if (argv[i][0] == '-' && argv[i][1]) {
                        cli_error(cmd, "unknown option '%.*s'; see 'ghostvram help %s'", (int)strcspn(argv[i], "="),
                                  argv[i], cmd);
                        return EXIT_USAGE;
                }
        return EXIT_OK;
}

/* ---- init ------------------------------------------------------------------------------- */

/* A sentence's number from the simulator's limits, spelled in the sentence itself (one %s). */
#define SIM_STR_(x) #x
#define SIM_STR(x) SIM_STR_(x)

static void sim_init_usage(FILE *f)
{
        fputs(_("Usage: ghostvram sim init DIR [--gpus N] [--memory MiB] [--reserved MiB]\n\n"
        "Create a simulated host in DIR (created if missing; must not hold one yet):\n"
        "N GPUs \"NVIDIA H100 80GB HBM3 (simulated)\" with distinct UUIDs and PCI bus\n"
        "ids; device files DIR/dev/nvidiactl, nvidia-uvm, nvidia0..N-1; no jobs;\n"
        "default knobs.\n\n"), f);
        fputs(_("  --gpus N          number of GPUs, 1 to 16 (default 2)\n"
        "  --memory SIZE     memory per GPU (default 81559 MiB, an H100 80GB; 2GiB ok)\n"
        "  --reserved SIZE   memory the driver reserves per GPU (default 579 MiB):\n"
        "                    apart in nvmlDeviceGetMemoryInfo_v2, inside v1's 'used'\n\n"), f);
        fputs(_("Then: ghostvram sim run DIR ..., or GHOSTVRAM_SIM=DIR ghostvram scan\n"), f);
}

struct sim_init_args {
        unsigned gpus;
        uint64_t memory, reserved;
};

static int sim_cmd_init(int argc, char **argv)
{
#define F(f) offsetof(struct sim_init_args, f)
        static const struct cli_opt table[] = {
                { "gpus", 'g', CO_UINT, F(gpus), 1, SIM_MAX_GPUS,
                  "--gpus: '%s' is not a number from 1 to " SIM_STR(SIM_MAX_GPUS) },
                { "memory", 'm', CO_MIB, F(memory), 1, (uint64_t)1 << 24, "--memory: '%s' is not a size from 1 MiB to 16 TiB" },
                { "reserved", 'r', CO_MIB, F(reserved), 0, UINT64_MAX, "--reserved: '%s' is not a size (e.g. 579, 1GiB)" },
                { 0 },
        };
#undef F
        struct sim_init_args a = { .gpus = 2, .memory = 81559, .reserved = 579 };
        const struct cli_parse p = { "sim init", ":h", table, &a, NULL, sim_init_usage, .operands = true };
        int r = cli_parse(&p, argc, argv);
        if (r != EXIT_OK)
                return r == CLI_HELP ? EXIT_OK : r;
        if (optind != argc - 1) {
                cli_error("sim init", "expected one DIR (see 'ghostvram sim init --help')");
                return EXIT_USAGE;
        }
        const char *dir = argv[optind];
        if (a.reserved >= a.memory) {
                cli_error("sim init", "--reserved (%llu MiB) must be less than --memory (%llu MiB)",
                          (unsigned long long)a.reserved, (unsigned long long)a.memory);
                return EXIT_USAGE;
        }
        if (cli_path_arg("sim init", "DIR", dir) < 0)
                return EXIT_USAGE;
        char err[1024 + 4096];
        enum sim_outcome o = sim_init_run(dir, a.gpus, a.memory, a.reserved, err, sizeof(err));
        if (o != SIM_DONE) {
                cli_error("sim init", "%s", err);
                return o == SIM_BAD_USAGE ? EXIT_USAGE : EXIT_FINDING;
        }
        sim_init_text(stdout, dir, a.gpus, a.memory, a.reserved);
        return EXIT_OK;
}

/* ---- run --------------------------------------------------------------------------------- */

static void sim_run_usage(FILE *f)
{
        fputs(_("Usage: ghostvram sim run DIR --gpu I --mib M [--workers K]\n"
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
        "goes, gradually over the free delay (free_delay_ms_per_gib, 'sim set --help').\n\n"), f);
        fputs(_("  --gpu I                 CUDA device ordinal (of CUDA_VISIBLE_DEVICES if set;\n"
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
        "                          vmm, async (docs/track.md)\n\n"), f);
        fputs(_("Exit status: 0 started, 1 the job failed (out of memory, GPU lost), 2 bad usage.\n"), f);
}

static int sim_run_alloc(void *ctx, const char *arg, const char *cmd)
{
        static const char *const routes[] = { "mixed", "symbol", "procaddr", "procaddr-v1", "dlsym", "vmm", "async" };
        for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
                if (!strcmp(arg, routes[i])) {
                        ((struct sim_job *)ctx)->alloc = arg;
                        return 0;
                }
        cli_error(cmd, "--alloc: '%s' is not a route (see --help)", arg);
        return -1;
}

/* The options that go together, and those that do not, then DIR: EXIT_OK or EXIT_USAGE (said). */
static int sim_run_check(int argc, char **argv, struct sim_job *a)
{
        const char *cmd = "sim run";
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

/* The job's errors said (its processes are sim_job_line's, on standard output). */
static void run_error(void *ctx, const char *msg)
{
        (void)ctx;
        cli_error("sim run", "%s", msg);
}

static int sim_cmd_run(int argc, char **argv)
{
#define F(f) offsetof(struct sim_job, f)
        static const struct cli_opt table[] = {
                { "gpu", 'g', CO_UINT, F(gpu), 0, SIM_MAX_GPUS - 1, "--gpu: '%s' is not a GPU index", CO_SEEN(F(have_gpu)) },
                { "mib", 'm', CO_MIB, F(mib), 1, (uint64_t)1 << 24, "--mib: '%s' is not a size from 1 MiB to 16 TiB" },
                { "workers", 'w', CO_UINT, F(workers), 0, 64, "--workers: '%s' is not a number from 0 to 64" },
                { "close-fds-in-workers", 'c', CO_FLAG, F(close_fds) },
                { "exec-child", 'x', CO_FLAG, F(exec_child) },
                { "worker-setsid", 's', CO_FLAG, F(worker_setsid) },
                { "setsid-workers", 'S', CO_UINT, F(setsid_workers), 0, 64,
                  "--setsid-workers: '%s' is not a number from 0 to 64", CO_SEEN(F(have_setsid_workers)) },
                { "launcher", 'l', CO_FLAG, F(launcher) },
                { "launcher-exits", 'e', CO_FLAG, F(launcher_exits) },
                { "busy", 'b', CO_FLAG, F(busy) },
                { "mig-instance", 'i', CO_UINT, F(gi), 1, SIM_MAX_MIG,
                  "--mig-instance: '%s' is not a GPU instance from 1 to " SIM_STR(SIM_MAX_MIG) },
                { "mps", 'M', CO_FLAG, F(mps) },
                { "alloc", 'a', CO_FN, .fn = sim_run_alloc },
                { 0 },
        };
#undef F
        struct sim_job a = { 0 };
        const struct cli_parse p = { "sim run", ":h", table, &a, NULL, sim_run_usage, .operands = true };
        int pr = cli_parse(&p, argc, argv);
        if (pr != EXIT_OK)
                return pr == CLI_HELP ? EXIT_OK : pr;
        if (sim_run_check(argc, argv, &a) != EXIT_OK)
                return EXIT_USAGE;
        struct sim_job_cb cb = { .process = sim_job_line, .error = run_error, .ctx = stdout };
        enum sim_outcome r = sim_job_start(&a, &cb);
        fflush(stdout);
        return r == SIM_DONE ? EXIT_OK : r == SIM_BAD_USAGE ? EXIT_USAGE : EXIT_FINDING;
}

/* ---- set ---------------------------------------------------------------------------------- */

static void sim_set_usage(FILE *f)
{
        struct buf b = BUF_INIT(1 << 16);
        sim_knobs_help(&b);
        fputs(_("Usage: ghostvram sim set DIR KEY=VALUE [KEY=VALUE...]\n\n"
               "Change the simulated driver. Knobs marked [GPU:] apply to every GPU, or to\n"
               "one with KEY=GPU:VALUE; KEY=default (or KEY=GPU:default) removes a setting.\n"
               "They take effect at the next NVML call. All are checked before any is written.\n\n"),
              f);
        /* the knobs' list is made from the simulator's table (sim_knobs_help) */
        fputs(_("Knobs:\n"), f);
        fprintf(f, "%s\n", buf_str(&b));
        fputs(_("Examples:\n"
               "  ghostvram sim set /tmp/gpu driver=535.98 pid_mode=host\n"
               "  ghostvram sim set /tmp/gpu hang=1:nvmlDeviceGetMemoryInfo_v2\n"
               "  ghostvram sim set /tmp/gpu notsup=persistence,memory_v2 uncharged_mib=0:300\n"
               "  ghostvram sim set /tmp/gpu free_delay_ms_per_gib=2000 xid_event=0:79\n"),
              f);
        buf_free(&b);
}

static int sim_cmd_set(int argc, char **argv)
{
        int r = sim_plain_args("sim set", argc, argv, sim_set_usage);
        if (r != EXIT_OK)
                return r == CLI_HELP ? EXIT_OK : r;
        if (argc < 3) {
                cli_error("sim set", "expected DIR and at least one KEY=VALUE (see 'ghostvram sim set --help')");
                return EXIT_USAGE;
        }
        if (cli_path_arg("sim set", "DIR", argv[1]) < 0)
                return EXIT_USAGE;
        char err[SIM_ERR_LEN] = "";
        r = sim_knobs_set(argv[1], argv + 2, (size_t)(argc - 2), err, sizeof(err));
        if (r < 0) {
                cli_error("sim set", "%s", err[0] ? err : strerror(-r));
                return r == -EINVAL || r == -ENOENT || r == -EBADMSG ? EXIT_USAGE : EXIT_FINDING;
        }
        return EXIT_OK;
}

/* ---- status ------------------------------------------------------------------------------- */

static void sim_status_usage(FILE *f)
{
        fputs(_("Usage: ghostvram sim status DIR\n\n"
               "What the simulated driver sees now, from this process's PID namespace:\n"
               "per GPU its memory (as the v2 query reports it) and faults, and each\n"
               "context with its owner (alive, dead, or in another PID namespace), or\n"
               "released and waiting for the free delay.\n"), f);
}

static int sim_cmd_status(int argc, char **argv)
{
        int pr = sim_plain_args("sim status", argc, argv, sim_status_usage);
        if (pr != EXIT_OK)
                return pr == CLI_HELP ? EXIT_OK : pr;
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
