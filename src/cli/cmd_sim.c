/* ghostvram sim: the simulated driver — create a simulated host, run jobs on it, set its
 * knobs, show its state. The model: docs/simulator.md. */
#define _GNU_SOURCE 1 /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "simstate.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/spawn.h"

#define SIM_RUN_TIMEOUT_MS 30000

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

/* Where init may build a host: a new or an empty directory, never the root directory (its dev/
 * would be the host's /dev) nor one holding other files. 0, -EEXIST (a simulated host is there:
 * sim_init_dir says so) or -1 (printed). */
static int init_target_ok(const char *dir)
{
        struct stat st;
        char real[PATH_MAX], conf[PATH_MAX];
        if (cli_path_arg("sim init", "DIR", dir) < 0)
                return -1;
        if (stat(dir, &st) < 0)
                return 0; /* created (or the error said) by sim_init_dir */
        if (!S_ISDIR(st.st_mode)) {
                cli_error("sim init", "%s: not a directory (%s)", dir, S_ISREG(st.st_mode) ? "a file" : cli_file_kind(st.st_mode));
                return -1;
        }
        if (realpath(dir, real) && strcmp(real, "/") == 0) {
                cli_error("sim init", "%s: refused: the root directory (its dev/ is this host's /dev); give a new or an "
                                      "empty directory", dir);
                return -1;
        }
        if (snprintf(conf, sizeof(conf), "%s/sim.conf", dir) < (int)sizeof(conf) && access(conf, F_OK) == 0)
                return -EEXIST;
        DIR *d = opendir(dir);
        if (!d) {
                cli_error("sim init", "%s: %s", dir, strerror(errno));
                return -1;
        }
        struct dirent *e;
        bool empty = true;
        while (empty && (e = readdir(d)))
                empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        closedir(d);
        if (!empty) {
                cli_error("sim init", "%s: not empty and not a simulated host: give a new or an empty directory", dir);
                return -1;
        }
        return 0;
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
        char *q = esc_shell_dup(dir); /* the commands are pasted: a path with a space is one word */
        printf("simulated host in %s: %u GPU%s, %llu MiB each (%llu MiB reserved)\n"
               "next: ghostvram sim run %s --gpu 0 --mib 1024 --workers 2\n"
               "      GHOSTVRAM_SIM=%s ghostvram scan\n",
               q ? q : dir, gpus, gpus == 1 ? "" : "s", (unsigned long long)memory, (unsigned long long)reserved,
               q ? q : dir, q ? q : dir);
        free(q);
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

static int sim_run_spawn(const char *app, const char *dir, char **args, int *ret_fd, pid_t *ret_pid)
{
        int p[2];
        char log[PATH_MAX];
        if (snprintf(log, sizeof(log), "%s/jobs.log", dir) >= (int)sizeof(log))
                return -ENAMETOOLONG;
        char failed[PATH_MAX + 32];
        int failed_len = snprintf(failed, sizeof(failed), "error cannot run %s\n", app);
        if (failed_len < 0 || (size_t)failed_len >= sizeof(failed))
                return -ENAMETOOLONG;
        pid_t pid;
        int r = fork_pipe(p, &pid);
        if (r < 0)
                return r;
        if (pid == 0) {
                /* detach: own session and process group, stdio away from the caller's pipes */
                setsid();
                int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
                int lg = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
                if (nul < 0 || lg < 0 || dup2(nul, 0) < 0 || dup2(lg, 1) < 0 || dup2(lg, 2) < 0 || dup2(p[1], 3) < 0)
                        _exit(126);
                /* nothing else of the caller's (its pipes, a test harness's) goes with the job */
                close_range(4, ~0u, 0);
                execv(app, args);
                /* only async-signal-safe calls here: the message was made before the fork */
                (void)!write(3, failed, (size_t)failed_len);
                _exit(127);
        }
        *ret_fd = p[0];
        *ret_pid = pid;
        return 0;
}

struct sim_run_args {
        const char *dir, *alloc;
        unsigned gpu, workers, gi, setsid_workers;
        uint64_t mib;
        bool have_gpu, close_fds, exec_child, worker_setsid, launcher, launcher_exits, busy, have_setsid_workers, mps;
};

/* One option into a: 1 taken, 0 --help printed, -1 a usage error (said). */
static int sim_run_option(struct sim_run_args *a, int c, const char *arg, int argc, char **argv)
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
static int sim_run_parse(int argc, char **argv, const struct option *opts, struct sim_run_args *a)
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

/* The simulated application's arguments (into args, strings into s; at most 24). */
struct sim_run_strings {
        char gpu[16], mib[32], workers[16], gi[16], setsid[16];
};

static void sim_run_argv(const struct sim_run_args *a, char *app, struct sim_run_strings *s, char *args[24])
{
        snprintf(s->gpu, sizeof(s->gpu), "%u", a->gpu);
        snprintf(s->mib, sizeof(s->mib), "%llu", (unsigned long long)a->mib);
        snprintf(s->workers, sizeof(s->workers), "%u", a->workers);
        char *base[] = { app, (char *)"--dir", (char *)a->dir, (char *)"--gpu", s->gpu, (char *)"--mib", s->mib,
                         (char *)"--workers", s->workers, (char *)"--report-fd", (char *)"3" };
        int n = 0;
        for (; n < 11; n++)
                args[n] = base[n];
        if (a->close_fds)
                args[n++] = (char *)"--close-fds-in-workers";
        if (a->exec_child)
                args[n++] = (char *)"--exec-child";
        if (a->worker_setsid)
                args[n++] = (char *)"--worker-setsid";
        if (a->have_setsid_workers) {
                snprintf(s->setsid, sizeof(s->setsid), "%u", a->setsid_workers);
                args[n++] = (char *)"--setsid-workers";
                args[n++] = s->setsid;
        }
        if (a->launcher)
                args[n++] = (char *)(a->launcher_exits ? "--launcher-exits" : "--launcher");
        if (a->busy)
                args[n++] = (char *)"--busy";
        if (a->mps)
                args[n++] = (char *)"--mps";
        if (a->alloc) {
                args[n++] = (char *)"--alloc";
                args[n++] = (char *)a->alloc;
        }
        if (a->gi) {
                snprintf(s->gi, sizeof(s->gi), "%u", a->gi);
                args[n++] = (char *)"--mig-instance";
                args[n++] = s->gi;
        }
        args[n] = NULL;
}

/* Read the job's report until "ready", "error ..." or EOF; its processes printed. true when
 * it is ready. */
static bool sim_run_report(int fd, const char *dir)
{
        const char *cmd = "sim run";
        struct buf out = BUF_INIT(1 << 16);
        bool ready = false;
        for (;;) {
                char chunk[512];
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                int pr = poll(&pfd, 1, SIM_RUN_TIMEOUT_MS);
                if (pr < 0 && errno == EINTR)
                        continue;
                if (pr <= 0) {
                        cli_error(cmd, "the job did not report within %d s", SIM_RUN_TIMEOUT_MS / 1000);
                        buf_free(&out);
                        return false;
                }
                ssize_t got = read(fd, chunk, sizeof(chunk));
                if (got < 0 && errno == EINTR)
                        continue;
                if (got <= 0)
                        break;
                if (buf_append(&out, chunk, (size_t)got) < 0)
                        break;
        }
        char *text = out.len ? out.data : NULL, *line;
        while (text && (line = strsep(&text, "\n"))) {
                if (!strncmp(line, "launcher ", 9) || !strncmp(line, "owner ", 6) || !strncmp(line, "worker ", 7) ||
                    !strncmp(line, "child ", 6)) {
                        printf("%s\n", line);
                } else if (!strcmp(line, "ready")) {
                        ready = true;
                } else if (!strncmp(line, "error ", 6)) {
                        cli_error(cmd, "%s", line + 6);
                }
        }
        if (!ready && out.len == 0)
                cli_error(cmd, "the job ended before it created its context (see %s/jobs.log)", dir);
        buf_free(&out);
        return ready;
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
        const char *cmd = "sim run";
        struct sim_run_args a = { 0 };
        int pr = sim_run_parse(argc, argv, opts, &a);
        if (pr != EXIT_OK)
                return pr == SIM_RUN_HELP ? EXIT_OK : pr;
        struct sim_host h;
        int r = sim_host_load(a.dir, &h);
        if (r < 0) {
                char *q = esc_shell_dup(a.dir);
                cli_error(cmd, "%s is not a simulated host (%s); create one with `ghostvram sim init %s`",
                          q ? q : a.dir, strerror(-r), q ? q : a.dir);
                free(q);
                return EXIT_USAGE;
        }
        if (a.gpu >= h.n_gpus) {
                cli_error(cmd, "--gpu %u: this simulated host has GPUs 0 to %u", a.gpu, h.n_gpus - 1);
                return EXIT_USAGE;
        }
        char app[PATH_MAX];
        if (simstate_find_file("gv-simcuda", app, sizeof(app)) < 0) {
                cli_error(cmd, "cannot find gv-simcuda (the simulated CUDA application) next to ghostvram or in "
                               "the build or install directory");
                return EXIT_FINDING;
        }
        struct sim_run_strings strs;
        char *args[24];
        sim_run_argv(&a, app, &strs, args);
        int fd = -1;
        pid_t pid = -1;
        r = sim_run_spawn(app, a.dir, args, &fd, &pid);
        if (r < 0) {
                cli_error(cmd, "cannot start the job: %s", strerror(-r));
                return EXIT_FINDING;
        }
        bool ready = sim_run_report(fd, a.dir);
        close(fd);
        if (!ready) {
                /* a job that did not start must not linger: its whole group (the child leads it
                 * after setsid; a launcher's owner and workers are in it), and the child itself
                 * in case it had not reached setsid yet (our child, not reaped: its PID is ours) */
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        } else if (a.launcher_exits) {
                /* the launcher exits right after "ready": wait for it, so that the caller finds it
                 * gone and the owner already reparented (the kernel reparents before the exit is
                 * reported) */
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        fflush(stdout);
        return ready ? EXIT_OK : EXIT_FINDING;
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

static void sim_status_ctx(const struct sim_ctx_view *v)
{
        const struct sim_ctx *c = &v->ctx;
        printf("  context %u: %llu MiB, ", c->id, (unsigned long long)(c->bytes >> 20));
        if (c->gi != SIM_GI_NONE)
                printf("MIG GPU instance %u, ", c->gi);
        if (v->state == SIM_CTX_RELEASING) {
                printf("released, %llu MiB left, freed in %.1f s\n", (unsigned long long)(v->charged_bytes >> 20),
                       (double)v->free_in_ms / 1000.0);
                return;
        }
        printf("alive, owner ");
        if (v->owner_alive && v->owner_pid_here)
                printf("PID %d (alive)", (int)v->owner_pid_here);
        else if (v->owner_alive)
                printf("alive in another PID namespace");
        else
                printf("dead");
        printf(", NSpid");
        for (unsigned k = 0; k < c->n_nspid; k++)
                printf("%s%d", k ? "/" : " ", (int)c->nspid[k]);
        printf("%s\n", v->owner_alive ? "" : " (kept alive by inherited descriptors or mappings)");
}

static void sim_status_print(const char *dir, const struct sim_client *cl, const struct sim_knobs *k,
                             const struct sim_observation *o);

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
        struct sim_client *cl = malloc(sizeof(*cl));
        struct sim_knobs *k = malloc(sizeof(*k));
        struct sim_observation *o = malloc(sizeof(*o));
        int ret = EXIT_FINDING, r;
        const char *dir = argv[1];
        if (!cl || !k || !o) {
                cli_error("sim status", "out of memory");
                goto out_free;
        }
        r = sim_client_open(dir, cl);
        if (r < 0) {
                cli_error("sim status", "%s is not a simulated host (%s)", dir, strerror(-r));
                ret = EXIT_USAGE;
                goto out_free;
        }
        r = sim_knobs_load(dir, k);
        if (r == 0)
                r = sim_observe(cl, k, o);
        if (r < 0) {
                cli_error("sim status", "cannot read %s: %s", dir, strerror(-r));
                goto out;
        }
        sim_status_print(dir, cl, k, o);
        ret = EXIT_OK;
out:
        sim_client_close(cl);
out_free:
        free(o);
        free(k);
        free(cl);
        return ret;
}

static void sim_status_print(const char *dir, const struct sim_client *cl, const struct sim_knobs *k,
                             const struct sim_observation *o)
{
        const struct sim_variant *var = sim_variant_find(k->driver);
        enum sim_pid_mode mode = sim_pid_mode_effective(k, var);
        printf("simulated host %s\n  driver %s (variant %s), PIDs %s, struct versions %s%s\n", dir,
               var ? var->driver_version : "?", k->driver,
               mode == SIM_PID_HOST ? "as host PIDs" : "translated into the caller's namespace",
               k->strict_versions ? "strict" : "relaxed", k->hidden_owner ? ", dead owners hidden" : "");
        if (k->free_delay_ms_per_gib)
                printf("  a released context's memory falls to 0 over %llu ms per GiB from its release\n",
                       (unsigned long long)k->free_delay_ms_per_gib);
        if (k->hang_holds_lock)
                printf("  a hung call holds the driver's API lock (every later NVML call waits behind it)%s\n",
                       sim_api_lock_held(dir) ? ": held now" : "");
        for (unsigned g = 0; g < cl->host.n_gpus; g++) {
                const struct sim_gpu *gp = &cl->host.gpus[g];
                const struct sim_gpu_knobs *gk = &k->gpu[g];
                uint64_t used = sim_used_bytes(&cl->host, k, o, g);
                printf("GPU %u: %s  %s  %s  /dev/nvidia%u\n", g, gp->name, gp->pci_bus_id, gp->uuid, gp->minor);
                printf("  memory: %llu MiB total, %llu MiB reserved, %llu MiB used, %llu MiB free",
                       (unsigned long long)(gp->total_bytes >> 20), (unsigned long long)(gp->reserved_bytes >> 20),
                       (unsigned long long)(used >> 20),
                       (unsigned long long)((gp->total_bytes - gp->reserved_bytes - used) >> 20));
                if (gk->uncharged_mib)
                        printf(" (%llu MiB uncharged)", (unsigned long long)gk->uncharged_mib);
                printf("\n  persistence %s, MIG %s%s%s%s%s\n", gk->persistence ? "on" : "off", sim_mig_on(gk) ? "on" : "off",
                       gk->lost ? ", LOST (GPU_IS_LOST)" : "", gk->hang[0] ? ", hangs in " : "", gk->hang,
                       gk->notsup ? ", some queries NOT_SUPPORTED" : "");
                for (unsigned m = 1; m <= gk->mig_instances; m++)
                        printf("  MIG GPU instance %u (compute instance 0): %llu MiB, %llu MiB used, capability nodes "
                               "nvidia-caps/nvidia-cap%u and nvidia-cap%u\n",
                               m, (unsigned long long)(sim_mig_instance_total(&cl->host, g, gk->mig_instances) >> 20),
                               (unsigned long long)(sim_mig_used_bytes(&cl->host, k, o, g, m) >> 20),
                               sim_mig_cap_minor(gp->minor, m, false), sim_mig_cap_minor(gp->minor, m, true));
                for (size_t i = 0; i < o->n; i++)
                        if (o->ctx[i].ctx.gpu == g)
                                sim_status_ctx(&o->ctx[i]);
        }
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
