/* gv-simcuda: the simulated CUDA application (started by `ghostvram sim run`).
 *
 * It does to the simulated device files what the CUDA runtime does to /dev/nvidia*: opens
 * nvidiactl, nvidia-uvm and the node of every visible GPU (CUDA_VISIBLE_DEVICES) with
 * O_CLOEXEC, maps each (MAP_SHARED, one page), and creates its context on its own open
 * description of nvidiactl (sim_context_create). Then, like a training job with data-loader
 * workers, it forks workers that inherit the descriptors and the mappings, and optionally a
 * child that execs `sleep` (close-on-exec and exec leave it holding nothing).
 *
 * It reports on --report-fd: "owner PID", "worker PID"..., "child PID", then "ready" — or
 * "error MESSAGE" — and closes it; then every process sleeps until killed. */
#define _GNU_SOURCE 1 /* pipe2 */
#include <errno.h>
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
#include <sys/wait.h>
#include <unistd.h>

#include "simstate.h"
#include "util/buf.h"
#include "util/parse.h"

#define MAX_FDS (SIM_MAX_GPUS + 2)

static int report_fd = 1;

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
        struct buf b = BUF_INIT(4096);
        va_list ap;
        va_start(ap, fmt);
        int r = buf_vprintf(&b, fmt, ap);
        va_end(ap);
        if (r == 0 && buf_putc(&b, '\n') == 0) {
                const char *p = buf_str(&b);
                size_t left = b.len;
                while (left) {
                        ssize_t w = write(report_fd, p, left);
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w <= 0)
                                break;
                        p += w;
                        left -= (size_t)w;
                }
        }
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

/* CUDA_VISIBLE_DEVICES: indices or GPU-UUID prefixes, comma-separated; like CUDA, parsing
 * stops at the first entry that names no device. Unset: every GPU. */
static unsigned visible_devices(const struct sim_host *h, unsigned *out)
{
        const char *env = getenv("CUDA_VISIBLE_DEVICES");
        unsigned n = 0;
        if (!env) {
                for (unsigned i = 0; i < h->n_gpus; i++)
                        out[n++] = i;
                return n;
        }
        char tok[128];
        while (*env && n < h->n_gpus) {
                size_t len = strcspn(env, ",");
                int found = -1;
                if (len < sizeof(tok)) {
                        memcpy(tok, env, len);
                        tok[len] = '\0';
                        unsigned idx;
                        if (parse_uint_range(tok, 0, h->n_gpus - 1, &idx) == 0)
                                found = (int)idx;
                        else if (strncmp(tok, "GPU-", 4) == 0)
                                for (unsigned i = 0; i < h->n_gpus; i++)
                                        if (strncmp(h->gpus[i].uuid, tok, len) == 0)
                                                found = (int)i;
                }
                for (unsigned i = 0; i < n; i++)
                        if (found >= 0 && out[i] == (unsigned)found)
                                found = -1; /* a repeated device ends the list too */
                if (found < 0)
                        break;
                out[n++] = (unsigned)found;
                env += len;
                if (*env == ',')
                        env++;
        }
        return n;
}

static int open_and_map(const char *dir, const char *node, int *ret_fd)
{
        char p[PATH_MAX];
        int n = snprintf(p, sizeof(p), "%s/dev/%s", dir, node);
        if (n < 0 || (size_t)n >= sizeof(p))
                return -ENAMETOOLONG;
        int fd = open(p, O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        void *m = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
                int e = -errno;
                close(fd);
                return e;
        }
        *ret_fd = fd;
        return 0;
}

static void usage(FILE *f)
{
        fprintf(f, "Usage: gv-simcuda --dir DIR --gpu I --mib M [--workers K] [--close-fds-in-workers]\n"
                   "                  [--exec-child] [--report-fd FD]\n"
                   "The simulated CUDA application; use 'ghostvram sim run', which starts it.\n");
}

static int run(const char *dir, unsigned gpu, uint64_t mib, unsigned workers, bool close_fds, bool exec_child);

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "dir", required_argument, NULL, 'd' },
                { "gpu", required_argument, NULL, 'g' },
                { "mib", required_argument, NULL, 'm' },
                { "workers", required_argument, NULL, 'w' },
                { "close-fds-in-workers", no_argument, NULL, 'c' },
                { "exec-child", no_argument, NULL, 'x' },
                { "report-fd", required_argument, NULL, 'r' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *dir = NULL;
        unsigned gpu = 0, workers = 0, rfd;
        uint64_t mib = 0;
        bool have_gpu = false, close_fds = false, exec_child = false;
        int c;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'd': dir = optarg; break;
                case 'g':
                        if (parse_uint_range(optarg, 0, SIM_MAX_GPUS - 1, &gpu) < 0)
                                goto bad;
                        have_gpu = true;
                        break;
                case 'm':
                        if (parse_u64(optarg, &mib) < 0 || mib == 0 || mib > ((uint64_t)1 << 24))
                                goto bad;
                        break;
                case 'w':
                        if (parse_uint_range(optarg, 0, 64, &workers) < 0)
                                goto bad;
                        break;
                case 'c': close_fds = true; break;
                case 'x': exec_child = true; break;
                case 'r':
                        if (parse_uint_range(optarg, 0, 1024, &rfd) < 0)
                                goto bad;
                        report_fd = (int)rfd;
                        break;
                case 'h': usage(stdout); return 0;
                default: goto bad;
                }
        }
        if (!dir || !have_gpu || !mib || optind != argc)
                goto bad;
        /* the report pipe must not leak into the exec'd child or the workers */
        if (report_fd != 1)
                (void)fcntl(report_fd, F_SETFD, FD_CLOEXEC);
        return run(dir, gpu, mib, workers, close_fds, exec_child);
bad:
        usage(stderr);
        return 2;
}

static int run(const char *dir, unsigned gpu, uint64_t mib, unsigned workers, bool close_fds, bool exec_child)
{
        struct sim_host h;
        unsigned visible[SIM_MAX_GPUS];
        int fds[MAX_FDS], nfds = 0, owners_fd, r;
        char err[SIM_ERR_LEN], node[32];
        r = sim_host_load(dir, &h);
        if (r < 0) {
                report("error %s is not a simulated host (%s)", dir, strerror(-r));
                return 1;
        }
        unsigned nvis = visible_devices(&h, visible);
        if (nvis == 0) {
                report("error CUDA error: no CUDA-capable device is detected (CUDA_VISIBLE_DEVICES)");
                return 1;
        }
        if (gpu >= nvis) {
                report("error CUDA error: invalid device ordinal (GPU %u; %u visible)", gpu, nvis);
                return 1;
        }
        /* fds[0] is nvidiactl: the context lives on its open file description */
        r = open_and_map(dir, "nvidiactl", &fds[nfds]);
        if (r == 0)
                r = open_and_map(dir, "nvidia-uvm", &fds[++nfds]);
        for (unsigned i = 0; r == 0 && i < nvis; i++) {
                snprintf(node, sizeof(node), "nvidia%u", h.gpus[visible[i]].minor);
                r = open_and_map(dir, node, &fds[++nfds]);
        }
        if (r < 0) {
                report("error cannot open the simulated device files in %s/dev: %s", dir, strerror(-r));
                return 1;
        }
        nfds++;
        char owners[PATH_MAX];
        snprintf(owners, sizeof(owners), "%s/owners", dir);
        owners_fd = open(owners, O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (owners_fd < 0) {
                report("error cannot open %s: %s", owners, strerror(errno));
                return 1;
        }
        unsigned id;
        r = sim_context_create(dir, visible[gpu], mib << 20, fds[0], owners_fd, &id, err, sizeof(err));
        if (r < 0) {
                report("error %s", err);
                return 1;
        }
        report("owner %d", (int)getpid());

        struct sigaction sa = { .sa_handler = reap, .sa_flags = SA_RESTART | SA_NOCLDSTOP };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGCHLD, &sa, NULL);

        for (unsigned i = 0; i < workers; i++) {
                int p[2];
                char byte = 0;
                if (pipe2(p, O_CLOEXEC) < 0) {
                        report("error pipe: %s", strerror(errno));
                        return 1;
                }
                pid_t w = fork();
                if (w < 0) {
                        report("error fork: %s", strerror(errno));
                        return 1;
                }
                if (w == 0) {
                        close(p[0]);
                        if (report_fd != 1)
                                close(report_fd);
                        if (close_fds)
                                for (int k = 0; k < nfds; k++)
                                        close(fds[k]); /* the mappings stay */
                        (void)!write(p[1], &byte, 1);
                        close(p[1]);
                        sleep_forever();
                }
                close(p[1]);
                while (read(p[0], &byte, 1) < 0 && errno == EINTR)
                        ;
                close(p[0]);
                report("worker %d", (int)w);
        }
        if (exec_child) {
                int p[2], e = 0;
                if (pipe2(p, O_CLOEXEC) < 0) {
                        report("error pipe: %s", strerror(errno));
                        return 1;
                }
                pid_t ch = fork();
                if (ch < 0) {
                        report("error fork: %s", strerror(errno));
                        return 1;
                }
                if (ch == 0) {
                        close(p[0]);
                        signal(SIGCHLD, SIG_DFL);
                        execlp("sleep", "sleep", "infinity", (char *)NULL);
                        e = errno;
                        (void)!write(p[1], &e, sizeof(e));
                        _exit(127);
                }
                close(p[1]);
                ssize_t n;
                while ((n = read(p[0], &e, sizeof(e))) < 0 && errno == EINTR)
                        ;
                close(p[0]);
                if (n > 0) { /* the pipe closes on a successful exec: data means it failed */
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
