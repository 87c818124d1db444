/* gv-simcuda: the simulated CUDA application (started by `ghostvram sim run`).
 *
 * It is a CUDA program: it links the simulated libcuda.so.1 (sim/cuda/cuda_sim.c) and calls the
 * driver API — cuInit (which opens nvidiactl, nvidia-uvm and the node of every visible GPU with
 * O_CLOEXEC and maps each, as the real driver does to /dev/nvidia*), cuCtxCreate (the context,
 * on its own open description of nvidiactl) and allocations of --mib through the route --alloc
 * names (by symbol, through cuGetProcAddress, VMM), which charge the context. So ghostvram's
 * allocation tracker (`ghostvram track`) sees it as it sees a real job. Then, like a training job with data-loader
 * workers, it forks workers that inherit the descriptors and the mappings, and optionally a
 * child that execs `sleep` (close-on-exec and exec leave it holding nothing).
 *
 * Process shapes real jobs have: --worker-setsid (each worker starts its own session, as a
 * daemonising data loader does; --setsid-workers N: only the first N workers do, the others
 * stay in the owner's group), --launcher (this process is a launcher such as torchrun or a
 * shell script: it holds no device file, forks the owner, which stays in its process group and
 * session, and reaps its children like a shell), --launcher-exits (the launcher exits once the
 * job is ready: the owner is reparented and leads no group).
 *
 * Under MIG (--mig-instance GI, passed to the simulated libcuda with gvsim_set_mig_instance) the
 * driver also opens the capability nodes of the GPU instance and of its compute instance 0,
 * DIR/dev/nvidia-caps/nvidia-capN, as CUDA does to reach a MIG device (the GPU's own node stays
 * open too); like nvidia-modprobe, it creates a missing one. The context then charges that
 * instance.
 *
 * For the context it starts the driver's teardown watcher (gv-simteardown) in a session of its
 * own, holding nothing of the job's: it records when the context's description is released and,
 * with --busy (the job had GPU work pending), logs Xid 45 when the owner dies.
 *
 * It reports on --report-fd: "launcher PID" (with --launcher), "owner PID", "worker PID"...,
 * "child PID", then "ready" — or "error MESSAGE" — and closes it; then every process sleeps
 * until killed (the launcher: until its children are gone). */
#define _GNU_SOURCE 1 /* close_range */
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simcuda_api.h"
#include "simstate.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/parse.h"
#include "util/spawn.h"

static int report_fd = 1;

/* One read() of up to len bytes (retried on EINTR), then close(fd): the parent's side of a
 * fork_pipe, where a child reports "started" or why it failed. Returns what read() returned. */
static ssize_t read_closing(int fd, void *b, size_t len)
{
        ssize_t n;
        while ((n = read(fd, b, len)) < 0 && errno == EINTR)
                ;
        close(fd);
        return n;
}

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
        struct buf b = BUF_INIT(4096);
        va_list ap;
        va_start(ap, fmt);
        int r = buf_vprintf(&b, fmt, ap);
        va_end(ap);
        if (r == 0 && buf_putc(&b, '\n') == 0)
                (void)write_all(report_fd, buf_str(&b), b.len);
        buf_free(&b);
}

static void reap(int sig)
{
        int saved = errno;
        (void)sig;
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
        errno = saved;
}

static void __attribute__((noreturn)) sleep_forever(void)
{
        for (;;)
                pause();
}

static void usage(FILE *f)
{
        fprintf(f, "Usage: gv-simcuda --dir DIR --gpu I --mib M [--workers K] [--close-fds-in-workers]\n"
                   "                  [--exec-child] [--worker-setsid | --setsid-workers N]\n"
                   "                  [--launcher] [--launcher-exits]\n"
                   "                  [--busy] [--mig-instance GI] [--mps] [--alloc ROUTE] [--report-fd FD]\n"
                   "ROUTE: how the memory is allocated through libcuda.so.1: symbol (default: one\n"
                   "cuMemAlloc_v2), mixed (half by symbol, half through cuGetProcAddress_v2), procaddr,\n"
                   "procaddr-v1 (cuGetProcAddress), dlsym (dlopen + dlsym of cuGetProcAddress_v2),\n"
                   "vmm (cuMemCreate + cuMemMap), async (cuMemAllocAsync)\n"
                   "The simulated CUDA application; use 'ghostvram sim run', which starts it.\n");
}

struct job {
        const char *dir;
        unsigned gpu;
        uint64_t mib;
        unsigned workers;
        bool close_fds;         /* workers close their device descriptors, keep the mappings */
        bool exec_child;        /* a child that execs sleep */
        unsigned setsid_workers; /* the first setsid_workers workers start their own session */
        bool launcher;          /* this process is the launcher; a child is the owner */
        bool launcher_exits;    /* the launcher exits once the job is ready */
        bool busy;              /* work pending: the owner's death logs Xid 45 */
        unsigned gi;            /* MIG GPU instance, SIM_GI_NONE outside MIG */
        bool mps;               /* an MPS client: NVML lists it in the MPS list */
        const char *alloc;      /* the allocation route (usage) */
};

static int run(const struct job *j);
static int launch(const struct job *j);

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "dir", required_argument, NULL, 'd' },
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
                { "report-fd", required_argument, NULL, 'r' },
                { "alloc", required_argument, NULL, 'a' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct job j = { .alloc = "symbol", .gi = SIM_GI_NONE };
        unsigned rfd;
        bool have_gpu = false;
        int c;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'd': j.dir = optarg; break;
                case 'g':
                        if (parse_uint_range(optarg, 0, SIM_MAX_GPUS - 1, &j.gpu) < 0)
                                goto bad;
                        have_gpu = true;
                        break;
                case 'm':
                        if (parse_u64(optarg, &j.mib) < 0 || j.mib == 0 || j.mib > ((uint64_t)1 << 24))
                                goto bad;
                        break;
                case 'w':
                        if (parse_uint_range(optarg, 0, 64, &j.workers) < 0)
                                goto bad;
                        break;
                case 'c': j.close_fds = true; break;
                case 'x': j.exec_child = true; break;
                case 's': j.setsid_workers = 64; break;
                case 'S':
                        if (parse_uint_range(optarg, 0, 64, &j.setsid_workers) < 0)
                                goto bad;
                        break;
                case 'l': j.launcher = true; break;
                case 'e': j.launcher = j.launcher_exits = true; break;
                case 'b': j.busy = true; break;
                case 'M': j.mps = true; break;
                case 'a':
                        if (strcmp(optarg, "mixed") && strcmp(optarg, "symbol") && strcmp(optarg, "procaddr") &&
                            strcmp(optarg, "procaddr-v1") && strcmp(optarg, "dlsym") && strcmp(optarg, "vmm") &&
                            strcmp(optarg, "async"))
                                goto bad;
                        j.alloc = optarg;
                        break;
                case 'i':
                        if (parse_uint_range(optarg, 1, SIM_MAX_MIG, &j.gi) < 0)
                                goto bad;
                        break;
                case 'r':
                        if (parse_uint_range(optarg, 0, 1024, &rfd) < 0)
                                goto bad;
                        report_fd = (int)rfd;
                        break;
                case 'h': usage(stdout); return 0;
                default: goto bad;
                }
        }
        if (!j.dir || !have_gpu || !j.mib || optind != argc)
                goto bad;
        /* the report pipe must not leak into the exec'd child or the workers */
        if (report_fd != 1)
                (void)fcntl(report_fd, F_SETFD, FD_CLOEXEC);
        return j.launcher ? launch(&j) : run(&j);
bad:
        usage(stderr);
        return 2;
}

/* Start the teardown watcher of context id: gv-simteardown, double-forked into a session of
 * its own (not the job's group: killing the job must not kill the driver), with no descriptor
 * of the job's, and exec'd, which drops the inherited mappings of the device files — a watcher
 * holding any of them would keep the very context it waits for alive. Returns once it waits
 * (it reports on a pipe), 0 or a negative errno (a message in err). */
static int start_watcher(const char *dir, unsigned id, bool busy, char *err, size_t errlen)
{
        char path[PATH_MAX], log[PATH_MAX], id_s[16], name[17] = "";
        int p[2], r;
        if (simstate_find_file("gv-simteardown", path, sizeof(path)) < 0) {
                snprintf(err, errlen, "cannot find gv-simteardown (the simulated driver's teardown)");
                return -ENOENT;
        }
        snprintf(id_s, sizeof(id_s), "%u", id);
        snprintf(log, sizeof(log), "%s/jobs.log", dir);
        /* the name the driver will log for this client: the owner's comm */
        (void)prctl(PR_GET_NAME, name, 0, 0, 0);
        char *argv[] = { path, (char *)"--dir", (char *)dir, (char *)"--ctx", id_s, (char *)"--ready-fd",
                         (char *)"3", busy ? (char *)"--xid45" : NULL, name, NULL };
        pid_t a;
        r = fork_pipe(p, &a);
        if (r < 0) {
                snprintf(err, errlen, "fork: %s", strerror(-r));
                return r;
        }
        if (a == 0) {
                /* async-signal-safe calls only from here to the exec */
                if (setsid() < 0)
                        _exit(126);
                pid_t b = fork();
                if (b != 0)
                        _exit(b < 0 ? 126 : 0); /* the watcher is reparented: nobody waits for it */
                int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
                int lg = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
                if (nul < 0 || lg < 0 || dup2(nul, 0) < 0 || dup2(lg, 1) < 0 || dup2(lg, 2) < 0)
                        _exit(126);
                if (p[1] == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(p[1], 3) < 0)
                        _exit(126);
                close_range(4, ~0u, 0);
                execv(path, argv);
                _exit(127);
        }
        while (waitpid(a, NULL, 0) < 0 && errno == EINTR)
                ;
        char byte;
        if (read_closing(p[0], &byte, 1) != 1) {
                snprintf(err, errlen, "the teardown watcher did not start (see jobs.log)");
                return -ECHILD;
        }
        return 0;
}

/* The launcher (torchrun, a shell script): holds no device file, forks the owner — which stays
 * in the launcher's process group and session — relays the owner's report after its own line,
 * then either exits (--launcher-exits: a wrapper that is gone, its workers reparented) or
 * waits for its children like a shell and exits with the owner's status. */
static int launch(const struct job *j)
{
        struct buf b = BUF_INIT(1 << 16);
        int p[2];
        char chunk[512];
        report("launcher %d", (int)getpid());
        pid_t owner;
        int r = fork_pipe(p, &owner);
        if (r < 0) {
                report("error fork: %s", strerror(-r));
                return 1;
        }
        if (owner == 0) {
                if (report_fd != 1)
                        close(report_fd);
                report_fd = p[1];
                _exit(run(j));
        }
        (void)prctl(PR_SET_NAME, "gv-simlauncher", 0, 0, 0);
        for (;;) {
                ssize_t n = read(p[0], chunk, sizeof(chunk));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0 || buf_append(&b, chunk, (size_t)n) < 0)
                        break;
        }
        close(p[0]);
        bool ready = b.len && (strncmp(b.data, "ready\n", 6) == 0 || strstr(buf_str(&b), "\nready\n"));
        (void)write_all(report_fd, b.data, b.len);
        buf_free(&b);
        if (ready && j->launcher_exits)
                _exit(0); /* sim run waits for this exit: the owner is reparented by then */
        if (report_fd != 1)
                close(report_fd);
        int st = 0, last = 0;
        for (;;) {
                pid_t w = waitpid(-1, &st, 0);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        break; /* ECHILD: every child is gone */
                if (w == owner)
                        last = st;
        }
        return WIFEXITED(last) ? WEXITSTATUS(last) : 128 + WTERMSIG(last);
}

/* cuMemAlloc_v2 as the CUDA runtime finds it: through cuGetProcAddress_v2 (or the 11.x
 * cuGetProcAddress), itself looked up by symbol or with dlsym on a dlopen'ed libcuda.so.1. */
static cu_mem_alloc_fn alloc_fn_by_procaddr(const char *route)
{
        void *fn = NULL;
        if (strcmp(route, "procaddr-v1") == 0) {
                return cuGetProcAddress("cuMemAlloc", &fn, 11030, CU_GET_PROC_ADDRESS_DEFAULT) == CUDA_SUCCESS
                               ? (cu_mem_alloc_fn)fn
                               : NULL;
        }
        cu_get_proc_address_v2_fn gpa = cuGetProcAddress_v2;
        if (strcmp(route, "dlsym") == 0) {
                void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
                gpa = h ? (cu_get_proc_address_v2_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
                if (!gpa)
                        return NULL;
        }
        CUdriverProcAddressQueryResult status = -1;
        if (gpa("cuMemAlloc", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
            status != CU_GET_PROC_ADDRESS_SUCCESS)
                return NULL;
        return (cu_mem_alloc_fn)fn;
}

/* Allocate `bytes` on the current context the way the route says (usage). Returns a CUresult;
 * the memory stays allocated (a job holds its tensors until it dies). */
static CUresult allocate(const char *route, CUdevice dev, uint64_t bytes)
{
        CUdeviceptr p;
        if (strcmp(route, "symbol") == 0)
                return cuMemAlloc_v2(&p, bytes);
        if (strcmp(route, "async") == 0)
                return cuMemAllocAsync(&p, bytes, NULL);
        if (strcmp(route, "vmm") == 0) {
                /* PyTorch's expandable segments: physical memory in 2 MiB granules, mapped */
                CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                             .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev } };
                uint64_t gran = (uint64_t)2 << 20, size = (bytes + gran - 1) / gran * gran;
                CUmemGenericAllocationHandle h;
                CUresult r = cuMemCreate(&h, size, &prop, 0);
                if (r == CUDA_SUCCESS)
                        r = cuMemMap(0x7e0000000000ull, size, 0, h, 0);
                return r;
        }
        if (strcmp(route, "mixed") == 0) {
                /* two call sites, two routes; out of memory is reported for the whole request
                 * (what `sim run` always said): what was allocated is freed and the whole is
                 * asked for once, which fails with the driver's message for it */
                uint64_t half = bytes / 2;
                CUdeviceptr first = 0;
                CUresult r = half ? cuMemAlloc_v2(&first, half) : CUDA_SUCCESS;
                cu_mem_alloc_fn f = alloc_fn_by_procaddr("procaddr");
                if (r == CUDA_SUCCESS)
                        r = f ? f(&p, bytes - half) : CUDA_ERROR_NOT_FOUND;
                if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                        if (first)
                                (void)cuMemFree_v2(first);
                        r = cuMemAlloc_v2(&p, bytes);
                }
                return r;
        }
        cu_mem_alloc_fn f = alloc_fn_by_procaddr(route);
        return f ? f(&p, bytes) : CUDA_ERROR_NOT_FOUND;
}

static int run(const struct job *j)
{
        const char *dir = j->dir;
        int fds[SIM_MAX_GPUS + 4], nfds, r;
        char err[SIM_ERR_LEN];
        CUdevice dev;
        CUcontext ctx;
        unsigned id;
        /* the simulated libcuda.so.1 reads the host named here, as the stand-in NVML does */
        if (setenv("GHOSTVRAM_SIM", dir, 1) < 0) {
                report("error setenv: %s", strerror(errno));
                return 1;
        }
        /* a MIG device (CUDA_VISIBLE_DEVICES=MIG-... on a real host): the simulator's own call */
        gvsim_set_mig_instance(j->gi);
        gvsim_set_mps_client(j->mps);
        if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, (int)j->gpu) != CUDA_SUCCESS ||
            cuCtxCreate_v2(&ctx, 0, dev) != CUDA_SUCCESS || allocate(j->alloc, dev, j->mib << 20) != CUDA_SUCCESS ||
            gvsim_ctx_id(&id) != CUDA_SUCCESS) {
                report("error %s", gvsim_last_error()[0] ? gvsim_last_error() : "CUDA error: the allocation route failed");
                return 1;
        }
        nfds = gvsim_device_fds(fds, SIM_MAX_GPUS + 4);
        r = start_watcher(dir, id, j->busy, err, sizeof(err));
        if (r < 0) {
                report("error %s", err);
                return 1;
        }
        report("owner %d", (int)getpid());

        struct sigaction sa = { .sa_handler = reap, .sa_flags = SA_RESTART | SA_NOCLDSTOP };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGCHLD, &sa, NULL);

        for (unsigned i = 0; i < j->workers; i++) {
                int p[2];
                char byte = 0;
                pid_t w;
                r = fork_pipe(p, &w);
                if (r < 0) {
                        report("error fork: %s", strerror(-r));
                        return 1;
                }
                if (w == 0) {
                        if (report_fd != 1)
                                close(report_fd);
                        /* a data loader that daemonises: its own session and group, still
                         * holding what it inherited */
                        if (i < j->setsid_workers)
                                (void)setsid();
                        if (j->close_fds)
                                for (int k = 0; k < nfds; k++)
                                        close(fds[k]); /* the mappings stay */
                        (void)!write(p[1], &byte, 1);
                        close(p[1]);
                        sleep_forever();
                }
                (void)read_closing(p[0], &byte, 1);
                report("worker %d", (int)w);
        }
        if (j->exec_child) {
                int p[2], e = 0;
                pid_t ch;
                r = fork_pipe(p, &ch);
                if (r < 0) {
                        report("error fork: %s", strerror(-r));
                        return 1;
                }
                if (ch == 0) {
                        signal(SIGCHLD, SIG_DFL);
                        execlp("sleep", "sleep", "infinity", (char *)NULL);
                        e = errno;
                        (void)!write(p[1], &e, sizeof(e));
                        _exit(127);
                }
                /* the pipe closes on a successful exec: data means it failed */
                if (read_closing(p[0], &e, sizeof(e)) > 0) {
                        report("error cannot exec sleep: %s", strerror(e));
                        return 1;
                }
                report("child %d", (int)ch);
        }
        report("ready");
        if (report_fd != 1)
                close(report_fd);
        sleep_forever();
}
