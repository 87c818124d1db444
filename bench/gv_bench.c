/* gv_bench: time the host reader's walk against fuser(1) and lsof(8) answering the same
 * question: which processes hold these device files?
 *
 * It creates plain files under a temporary prefix (like the simulated driver's device files),
 * starts a fork tree of --procs processes that hold --fds descriptors on them (every
 * --map-every-th one holds only a mapping, like a data-loader worker whose owner closed its
 * descriptors) plus --others processes holding as many descriptors on unrelated files, and
 * times, --runs times each, interleaved:
 *   ghostvram snapshot --json --holders bpf|proc   the whole command (--ghostvram PATH), its
 *                            holders read from the JSON (and its holder_source checked)
 *   host_scan (in-process)   host_scan() called here, BPF iterators and /proc walk
 *   fuser FILE...            PIDs on stdout
 *   lsof -t -w FILE...       PIDs on stdout
 * Each answer is checked against the set of PIDs started. Everything it started is killed
 * and its files removed at the end (and on SIGINT/SIGTERM).
 *
 * See bench/README.md for the results and the exact command. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "collect/host.h"
#include "util/deadline.h"
#include "util/fileio.h"
#include "util/parse.h"

extern char **environ;

#define MAX_FILES 16
#define FANOUT 50               /* workers per leader in the fork tree */

static const char *const node_names[] = { "nvidiactl", "nvidia-uvm", "nvidia0", "nvidia1", "nvidia2",
                                          "nvidia3", "nvidia4", "nvidia5", "nvidia6", "nvidia7" };
#define N_NODES (sizeof(node_names) / sizeof(node_names[0]))

struct opts {
        unsigned procs, fds, map_every, others, runs;
        bool no_fuser, no_lsof;
        const char *ghostvram;          /* the binary for the snapshot contenders (NULL: none) */
};

static char g_tmp[64];
static pid_t g_groups[2];
static unsigned g_n_groups;

static void cleanup(void)
{
        for (unsigned i = 0; i < g_n_groups; i++)
                kill(-g_groups[i], SIGKILL);
        while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
                ;
        if (g_tmp[0]) {
                char cmd[256];
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_tmp);
                if (system(cmd) != 0)
                        fprintf(stderr, "gv_bench: could not remove %s\n", g_tmp);
                g_tmp[0] = '\0';
        }
}

static void on_signal(int sig)
{
        (void)sig;
        cleanup();
        _exit(130);
}

static void die(const char *what)
{
        fprintf(stderr, "gv_bench: %s: %s\n", what, strerror(errno));
        cleanup();
        exit(1);
}

static double now_s(void)
{
        return monotonic_s();
}

/* --- the processes -------------------------------------------------------------------------- */

static void report_ready(int ready)
{
        pid_t me = getpid();
        if (write(ready, &me, sizeof(me)) != (ssize_t)sizeof(me))
                _exit(1);
}

static void idle(void)
{
        for (;;)
                pause();
}

/* One member of a tree: holds the inherited descriptors, or only a mapping. */
static void member(int ready, bool map_only, const char *map_file, int first_fd, int last_fd)
{
        if (map_only) {
                int fd = open(map_file, O_RDWR | O_CLOEXEC);
                if (fd < 0 || mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED)
                        _exit(1);
                close(fd);
                for (int k = first_fd; k <= last_fd; k++)
                        close(k);
        }
        report_ready(ready);
        idle();
}

/* A tree of n processes holding the descriptors [first_fd, last_fd] it inherits: leaders of
 * FANOUT-process groups fork their workers. Runs in its own process group. */
static void tree(int ready, unsigned n, unsigned map_every, const char *map_file, int first_fd, int last_fd)
{
        unsigned made = 0;
        while (made < n) {
                unsigned size = n - made < FANOUT ? n - made : FANOUT;
                unsigned base = made;
                pid_t leader = fork();
                if (leader < 0)
                        _exit(1);
                if (leader == 0) {
                        for (unsigned w = 1; w < size; w++) {
                                pid_t k = fork();
                                if (k < 0)
                                        _exit(1);
                                if (k == 0)
                                        member(ready, map_every && (base + w) % map_every == 0, map_file, first_fd,
                                               last_fd);
                        }
                        member(ready, map_every && base % map_every == 0, map_file, first_fd, last_fd);
                }
                made += size;
        }
        /* the spawner itself holds nothing */
        for (int k = first_fd; k <= last_fd; k++)
                close(k);
        idle();
}

/* Start a tree in its own process group; returns after every member said it is ready, with
 * their PIDs in pids. */
static void start_tree(unsigned n, unsigned fds, unsigned map_every, char files[][256], unsigned n_files,
                       const char *map_file, pid_t *pids)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                die("pipe");
        pid_t spawner = fork();
        if (spawner < 0)
                die("fork");
        if (spawner == 0) {
                if (n_files == 0)
                        _exit(1);
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                setpgid(0, 0);
                close(p[0]);
                int first = -1, last = -1;
                int base[MAX_FILES];
                for (unsigned i = 0; i < n_files; i++)
                        if ((base[i] = open(files[i], O_RDWR)) < 0)
                                _exit(1);
                for (unsigned i = 0; i < fds; i++) {
                        int fd = dup(base[i % n_files]);
                        if (fd < 0)
                                _exit(1);
                        if (first < 0)
                                first = fd;
                        last = fd;
                }
                for (unsigned i = 0; i < n_files; i++)
                        close(base[i]);
                tree(p[1], n, map_every, map_file, first, last);
        }
        setpgid(spawner, spawner);
        g_groups[g_n_groups++] = spawner;
        close(p[1]);
        size_t got = 0;
        while (got < n * sizeof(pid_t)) {
                struct pollfd pfd = { .fd = p[0], .events = POLLIN };
                if (poll(&pfd, 1, 60000) != 1) {
                        errno = ETIMEDOUT;
                        die("waiting for the processes");
                }
                ssize_t k = read(p[0], (char *)pids + got, n * sizeof(pid_t) - got);
                if (k <= 0)
                        die("reading ready PIDs");
                got += (size_t)k;
        }
        close(p[0]);
}

/* --- the contenders ------------------------------------------------------------------------ */

static int pid_cmp(const void *a, const void *b)
{
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
        return (x > y) - (x < y);
}

/* Sort and deduplicate. */
static size_t pid_set(pid_t *p, size_t n)
{
        qsort(p, n, sizeof(*p), pid_cmp);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (k == 0 || p[k - 1] != p[i])
                        p[k++] = p[i];
        return k;
}

/* Run argv with stdout captured (stderr to /dev/null); returns what it printed (malloc'd). */
static char *run_capture(char *const argv[])
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                die("pipe");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        pid_t pid;
        int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        if (e) {
                errno = e;
                die(argv[0]);
        }
        size_t cap = 1 << 20, len = 0;
        char *buf = malloc(cap + 1);
        if (!buf)
                die("malloc");
        ssize_t k;
        while ((k = read(p[0], buf + len, cap - len)) > 0) {
                len += (size_t)k;
                if (len == cap) {       /* a snapshot of thousands of holders is many MiB */
                        char *nb = realloc(buf, 2 * cap + 1);
                        if (!nb)
                                die("realloc");
                        buf = nb;
                        cap *= 2;
                }
        }
        close(p[0]);
        buf[len] = '\0';
        waitpid(pid, NULL, 0);
        return buf;
}

/* Run argv; the PIDs it prints are stored in out. */
static size_t run_pids(char *const argv[], pid_t *out, size_t max)
{
        char *buf = run_capture(argv);
        size_t n = 0;
        char *save = NULL;
        for (char *t = strtok_r(buf, " \t\n", &save); t && n < max; t = strtok_r(NULL, " \t\n", &save)) {
                uint64_t v;
                /* "holders N" from --scan, PIDs from fuser and lsof */
                if (parse_u64(t, &v) == 0 && v > 0 && v <= INT32_MAX)
                        out[n++] = (pid_t)v;
        }
        free(buf);
        return n;
}

/* `ghostvram snapshot --json ...`: the holders' PIDs from its JSON; 0 PIDs and *ret_ok false
 * when the walk was not the one asked for (holder_source). */
static size_t snapshot_pids(char *const argv[], const char *source, pid_t *out, size_t max, bool *ret_ok)
{
        char *buf = run_capture(argv);
        json_error_t err;
        json_t *doc = json_loads(buf, 0, &err);
        free(buf);
        size_t n = 0, i;
        json_t *h;
        *ret_ok = doc && json_is_string(json_object_get(json_object_get(doc, "host"), "holder_source")) &&
                  strcmp(json_string_value(json_object_get(json_object_get(doc, "host"), "holder_source")), source) == 0;
        json_array_foreach(json_object_get(doc, "holders"), i, h)
                if (n < max)
                        out[n++] = (pid_t)json_integer_value(json_object_get(h, "pid"));
        json_decref(doc);
        return n;
}

static size_t scan_pids(const char *prefix, enum host_holders_mode mode, pid_t *out, size_t max)
{
        struct host_opts o = { .dev_prefix = prefix, .timeout_ms = 2000, .holders = mode };
        struct host_report *r;
        int e = host_scan(&o, &r);
        if (e < 0) {
                errno = -e;
                die("host_scan");
        }
        size_t n = 0;
        for (size_t i = 0; i < r->n_holders && n < max; i++)
                out[n++] = r->holders[i].pid;
        host_report_free(r);
        return n;
}

enum tool { T_SNAP_BPF, T_SNAP_PROC, T_INPROC_BPF, T_INPROC_PROC, T_FUSER, T_LSOF, N_TOOLS };
static const char *const tool_names[] = { "ghostvram snapshot --json (BPF iterators)",
                                          "ghostvram snapshot --json (/proc walk)",
                                          "host_scan() in-process (BPF iterators)",
                                          "host_scan() in-process (/proc walk)",
                                          "fuser FILE...", "lsof -t -w FILE..." };

static int dbl_cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
        qsort(v, n, sizeof(*v), dbl_cmp);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int usage(FILE *f)
{
        fprintf(f, "usage: gv_bench [--procs N] [--fds M] [--map-every K] [--others N] [--runs R]\n"
                   "                [--no-fuser] [--no-lsof] [--ghostvram PATH]\n"
                   "       gv_bench --scan PREFIX   (one walk; prints the holders' PIDs)\n");
        return f == stdout ? 0 : 2;
}

static int scan_only(const char *prefix)
{
        static pid_t pids[1 << 16];
        size_t n = scan_pids(prefix, HOST_HOLDERS_AUTO, pids, sizeof(pids) / sizeof(pids[0]));
        for (size_t i = 0; i < n; i++)
                printf("%d\n", (int)pids[i]);
        return 0;
}

int main(int argc, char **argv)
{
        struct opts o = { .procs = 2000, .fds = 100, .map_every = 10, .others = 500, .runs = 7 };
        static const struct option longopts[] = {
                { "procs", required_argument, NULL, 'p' }, { "fds", required_argument, NULL, 'f' },
                { "map-every", required_argument, NULL, 'm' }, { "others", required_argument, NULL, 'o' },
                { "runs", required_argument, NULL, 'r' }, { "no-fuser", no_argument, NULL, 'F' },
                { "no-lsof", no_argument, NULL, 'L' }, { "scan", required_argument, NULL, 's' },
                { "ghostvram", required_argument, NULL, 'g' }, { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        int c;
        while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
                unsigned *dst = c == 'p' ? &o.procs : c == 'f' ? &o.fds : c == 'm' ? &o.map_every :
                                c == 'o' ? &o.others : c == 'r' ? &o.runs : NULL;
                if (dst) {
                        if (parse_uint_range(optarg, 0, 30000, dst) < 0) {
                                fprintf(stderr, "gv_bench: bad number '%s'\n", optarg);
                                return 2;
                        }
                } else if (c == 'F') {
                        o.no_fuser = true;
                } else if (c == 'L') {
                        o.no_lsof = true;
                } else if (c == 'g') {
                        o.ghostvram = optarg;
                } else if (c == 's') {
                        return scan_only(optarg);
                } else {
                        return usage(c == 'h' ? stdout : stderr);
                }
        }
        if (o.procs == 0 || o.runs == 0 || o.fds == 0)
                return usage(stderr);

        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < o.fds + 64) {
                fprintf(stderr, "gv_bench: RLIMIT_NOFILE %llu is too low for --fds %u\n",
                        (unsigned long long)rl.rlim_cur, o.fds);
                return 1;
        }
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        /* orphaned tree members come back to us: cleanup() reaps every one of them, so the
         * next measurement does not overlap their teardown */
        prctl(PR_SET_CHILD_SUBREAPER, 1);

        snprintf(g_tmp, sizeof(g_tmp), "/tmp/gvbenchXXXXXX");
        if (!mkdtemp(g_tmp))
                die("mkdtemp");
        char dev[128], prefix[160], other[160];
        snprintf(dev, sizeof(dev), "%s/dev", g_tmp);
        if (mkdir(dev, 0755) < 0)
                die("mkdir");
        snprintf(prefix, sizeof(prefix), "%s/nvidia", dev);
        static char files[MAX_FILES][256];
        char page[8192];
        memset(page, 'x', sizeof(page));
        for (unsigned i = 0; i < N_NODES; i++) {
                snprintf(files[i], sizeof(files[i]), "%s/%s", dev, node_names[i]);
                if (write_file_atomic(files[i], page, sizeof(page)) < 0)
                        die("create node file");
        }
        snprintf(other, sizeof(other), "%s/other.dat", g_tmp);
        if (write_file_atomic(other, page, sizeof(page)) < 0)
                die("create other file");
        static char other_files[2][256];
        snprintf(other_files[0], sizeof(other_files[0]), "%s", other);
        snprintf(other_files[1], sizeof(other_files[1]), "/dev/null");

        pid_t *expect = calloc(o.procs + 1, sizeof(pid_t));
        pid_t *others = calloc(o.others + 1, sizeof(pid_t));
        size_t cap = (size_t)o.procs + o.others + 4096;
        pid_t *got = calloc(cap, sizeof(pid_t));
        if (!expect || !others || !got)
                die("calloc");
        double t0 = now_s();
        start_tree(o.procs, o.fds, o.map_every, files, N_NODES, files[2], expect);
        if (o.others)
                start_tree(o.others, o.fds, 0, other_files, 2, other, others);
        size_t n_expect = pid_set(expect, o.procs);
        fprintf(stderr, "gv_bench: %u holders x %u descriptors (every %u-th by mapping only), %u others, "
                        "started in %.1f s\n", o.procs, o.fds, o.map_every, o.others, now_s() - t0);

        /* no NVML (a library that is not there): the walk is what is timed, as for fuser */
        char *snap_argv[2][11];
        for (int m = 0; m < 2; m++) {
                char *const a[] = { (char *)o.ghostvram, (char *)"snapshot", (char *)"--json", (char *)"--holders",
                                    (char *)(m == 0 ? "bpf" : "proc"), (char *)"--dev-prefix", prefix,
                                    (char *)"--nvml-lib", (char *)"/nonexistent/libnvidia-ml.so.1", NULL };
                memcpy(snap_argv[m], a, sizeof(a));
        }
        char *fuser_argv[N_NODES + 2], *lsof_argv[N_NODES + 4];
        fuser_argv[0] = (char *)"fuser";
        lsof_argv[0] = (char *)"lsof";
        lsof_argv[1] = (char *)"-t";
        lsof_argv[2] = (char *)"-w";
        for (unsigned i = 0; i < N_NODES; i++)
                fuser_argv[1 + i] = lsof_argv[3 + i] = files[i];
        fuser_argv[N_NODES + 1] = lsof_argv[N_NODES + 3] = NULL;

        double *t[N_TOOLS];
        for (int k = 0; k < N_TOOLS; k++)
                if (!(t[k] = calloc(o.runs, sizeof(double))))
                        die("calloc");
        bool skip[N_TOOLS] = { !o.ghostvram, !o.ghostvram, false, false, o.no_fuser, o.no_lsof };
        int bad = 0;
        for (unsigned run = 0; run < o.runs; run++) {
                for (int k = 0; k < N_TOOLS; k++) {
                        if (skip[k])
                                continue;
                        double s = now_s();
                        bool ok = true;
                        size_t n = k == T_SNAP_BPF ? snapshot_pids(snap_argv[0], "bpf", got, cap, &ok) :
                                   k == T_SNAP_PROC ? snapshot_pids(snap_argv[1], "proc", got, cap, &ok) :
                                   k == T_INPROC_BPF ? scan_pids(prefix, HOST_HOLDERS_BPF, got, cap) :
                                   k == T_INPROC_PROC ? scan_pids(prefix, HOST_HOLDERS_PROC, got, cap) :
                                   k == T_FUSER ? run_pids(fuser_argv, got, cap) : run_pids(lsof_argv, got, cap);
                        t[k][run] = now_s() - s;
                        if (!ok) {
                                fprintf(stderr, "gv_bench: %s did not use the path asked for\n", tool_names[k]);
                                bad = 1;
                        }
                        n = pid_set(got, n);
                        if (n != n_expect || memcmp(got, expect, n * sizeof(pid_t)) != 0) {
                                fprintf(stderr, "gv_bench: %s found %zu holders, expected %zu\n", tool_names[k], n,
                                        n_expect);
                                bad = 1;
                        }
                }
        }

        printf("| tool | median of %u runs (s) | min (s) | max (s) | vs fuser |\n", o.runs);
        printf("| --- | ---: | ---: | ---: | ---: |\n");
        double med[N_TOOLS];
        for (int k = 0; k < N_TOOLS; k++)
                med[k] = skip[k] ? 0 : median(t[k], o.runs);
        for (int k = 0; k < N_TOOLS; k++) {
                if (skip[k])
                        continue;
                char ratio[32] = "-";
                if (!skip[T_FUSER] && med[k] > 0)
                        snprintf(ratio, sizeof(ratio), "%.2fx", med[T_FUSER] / med[k]);
                printf("| %s | %.3f | %.3f | %.3f | %s |\n", tool_names[k], med[k], t[k][0], t[k][o.runs - 1], ratio);
        }
        printf("\n(`vs fuser` = fuser's median / this tool's median: above 1 is faster than fuser. Every answer "
               "was checked against the %zu PIDs started%s.)\n", n_expect, bad ? " -- AND SOME DIFFERED" : "");
        for (int k = 0; k < N_TOOLS; k++)
                free(t[k]);
        free(expect);
        free(others);
        free(got);
        cleanup();
        return bad;
}
