/* host_scan: one walk over /proc that finds every process holding an NVIDIA device node, by
 * open descriptor (fd/N links) and by memory mapping (maps lines), plus the facts that explain
 * each holder.
 *
 * Cost: per process, stat is read and each descriptor stat'ed (fstatat on fd/N: the file
 * itself, the rule the BPF walk uses too) on the walking thread (they never wait on the target);
 * maps is read on that thread's deadline worker, because it takes the target's mmap lock, which
 * a thread stuck in the driver may hold forever. Facts (status, cgroup, wchan, ns, cmdline,
 * environ) are read only for holders. The processes are shared among up to one thread per CPU
 * (walk_all): the kernel's work for each descriptor is most of a walk. */
#define _GNU_SOURCE 1 /* getdents64, struct dirent64 */
#include "collect/host_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "util/deadline.h"
#include "util/escape.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/strf.h"

#define HOST_DEFAULT_PROC "/proc"
#define HOST_DEFAULT_PREFIX "/dev/nvidia"
#define HOST_DEFAULT_TIMEOUT_MS 2000u
/* After this many timeouts' worth of waiting, further blocking reads get a short deadline, so
 * that a host with many stuck tasks still ends in bounded time. */
#define HOST_WAIT_BUDGET_TIMEOUTS 4u
#define HOST_SHORT_TIMEOUT_MS 50u
/* Reads of one maps file at most, within one deadline (read_maps). */
#define HOST_MAPS_TRIES 3u
/* Threads of one process whose wchan and stack are looked at (thread_in_driver). */
#define HOST_MAX_TASKS_ASKED 1024u

/* A limit's sentence, in English and in the reader's language (util/i18n.h I18N_SETF2: the
 * arguments are evaluated in each): LIMIT(r, _("..."), args) or LIMIT(r, P_("...", "...", n), args). */
#define LIMIT(r, ...)                                                                              \
        do {                                                                                       \
                char *lim_en_ STR_AUTOFREE = NULL, *lim_text_ STR_AUTOFREE = NULL;                 \
                if (I18N_SETF2(&lim_en_, &lim_text_, __VA_ARGS__) == 0)                            \
                        (void)host_report_add_limit((r), lim_en_, lim_text_);                      \
        } while (0)

/* A device node found under the prefix on this host: maps lines carry the filesystem's
 * (st_dev, st_ino), not the device number, so mappings are matched against these. */
struct host_devnode {
        dev_t dev;
        ino_t ino;
        dev_t rdev;
        bool chr;
        char name[48];
};

struct host_user {
        uid_t uid;
        char name[64];
};

/* What a walk could not see, for limits[] (summed over the walk's threads). */
struct walk_counts {
        unsigned n_pid_denied, n_fd_denied_other, n_fd_denied_own, n_fd_error;
        unsigned n_pid_symlinks;                /* PID entries that are symlinks (a bundle): not followed */
        unsigned n_symlinks_named;
        char symlink_pids[96];                  /* the first of them, for the limit line */
        unsigned n_maps_denied_other, n_maps_denied_own, n_maps_error, n_maps_dstate, n_maps_timeout;
        unsigned n_text_timeout, n_node_overflow, n_dl_error;
        unsigned n_maps_timeout_driver;         /* of n_maps_timeout: a thread of it waits in the driver */
        unsigned n_maps_changing;               /* its mappings changed during every read */
        int fd_errno, maps_errno;
};

struct host_ctx {
        char proc_root[PATH_MAX];
        char dev_prefix[PATH_MAX];
        size_t prefix_len;
        unsigned timeout_ms;
        unsigned long long waited_ms;           /* lost to missed deadlines, by all the walk's threads */
        unsigned long long *waited;             /* &waited_ms of the walk's first context */
        const char *save_dir;
        bool read_env;
        int proc_fd;
        struct host_report *r;                  /* machine facts, limits, results */
        struct host_majors majors;
        bool have_majors, have_btime;
        uint64_t btime;
        char *devices;                          /* raw /proc/devices, for bundles */
        size_t devices_len;
        struct host_devnode nodes[HOST_MAX_HOST_NODES];
        size_t n_nodes;
        struct deadline_runner dl;
        struct host_bundle_in *bundle;          /* proc_root is a bundle */
        bool live;                              /* proc_root is the real /proc (is_live_proc) */
        bool hidepid_invisible, hidepid_noaccess;
        struct host_user users[64];
        unsigned n_users;
        struct walk_counts k;                   /* what could not be seen, for limits[] */
        /* scratch, reused from process to process */
        char *rbuf;                             /* blocking reads land here */
        size_t rbuf_alloc;
        struct host_save_fd *sfds;
        size_t n_sfds, sfds_alloc;
        struct buf smaps;
        struct host_bundle_proc *saved;         /* host.json entries of the processes saved */
        size_t n_saved, saved_alloc;
        /* the BPF walk: what the iterators found for the process being inspected (NULL: read
         * its fd/ and maps) */
        const struct bpf_preset *preset;
};

/* What the BPF iterators found for one process. */
struct bpf_preset {
        const struct host_bpf_hit *hits;
        size_t n_hits;
        bool maps_unread;                       /* its mmap lock was taken: mappings read from /proc */
};

/* One process being inspected. */
struct pid_scan {
        struct host_proc p;
        pid_t pid;
        int dfd;
        uid_t owner;                    /* owner of /proc/PID (its effective uid), once known */
        bool owner_known;
        unsigned forced;                /* skipped bits recorded in a bundle */
        enum host_role bundle_role;
        bool locked;                    /* a blocking read missed its deadline: skip the others */
        bool unverifiable;              /* maps not read because of D state or a deadline */
        bool vanished;
        bool overflow;                  /* more than HOST_MAX_NODES nodes */
        char *stat, *status, *cgroup, *wchan, *cmdline;
        size_t stat_len, status_len, cgroup_len, wchan_len, cmdline_len;
        struct buf env_saved;
};

/* --- reading files ----------------------------------------------------------------------- */

/* Read fd to EOF into *data (grown as needed; *alloc is its size), at most max bytes: with
 * truncate the rest is left unread, else -EFBIG. Always NUL-terminates. */
static int read_all(int fd, size_t max, bool truncate, char **data, size_t *len, size_t *alloc)
{
        size_t n = 0;
        for (;;) {
                if (n + 1 >= *alloc) {
                        /* room for one more byte than max shows truncation; +1 for the NUL */
                        size_t na = *alloc ? *alloc * 2 : 4096;
                        if (na > max + 2)
                                na = max + 2;
                        char *p = realloc(*data, na);
                        if (!p)
                                return -ENOMEM;
                        *data = p;
                        *alloc = na;
                }
                size_t room = *alloc - 1 - n;
                if (room > max + 1 - n)
                        room = max + 1 - n;
                ssize_t k = read(fd, *data + n, room);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return host_neg_errno();
                }
                if (k == 0)
                        break;
                n += (size_t)k;
                if (n > max) {
                        if (!truncate)
                                return -EFBIG;
                        n = max;
                        break;
                }
        }
        (*data)[n] = '\0';
        *len = n;
        return 0;
}

/* Read a file that does not wait on the target (stat, status, cgroup, ...). O_NONBLOCK keeps
 * a FIFO planted in a fixture or bundle from blocking the open. *ret is malloc'd. */
static int read_small(int dfd, const char *name, size_t max, char **ret, size_t *ret_len)
{
        int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return host_neg_errno();
        char *data = NULL;
        size_t len = 0, alloc = 0;
        int r = read_all(fd, max, false, &data, &len, &alloc);
        close(fd);
        if (r < 0) {
                free(data);
                return r;
        }
        *ret = data;
        *ret_len = len;
        return 0;
}

/* A read that may block forever (maps, cmdline, environ take the target's mmap lock; a FIFO
 * blocks in open): it runs on the deadline worker, which owns everything it touches. */
struct read_job {
        int dfd;                /* a dup of the /proc/PID fd, owned by the job */
        char name[16];
        size_t max;
        bool truncate;
        char *data;
        size_t len, alloc;
};

static int read_job_run(void *arg)
{
        struct read_job *j = arg;
        int fd = openat(j->dfd, j->name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return host_neg_errno();
        int r = read_all(fd, j->max, j->truncate, &j->data, &j->len, &j->alloc);
        close(fd);
        return r;
}

static void read_job_free(void *arg)
{
        struct read_job *j = arg;
        if (!j)
                return;
        if (j->dfd >= 0)
                close(j->dfd);
        free(j->data);
        free(j);
}

/* Read name under the deadline. 0 and a buffer owned by c (valid until the next call),
 * -ETIMEDOUT (the worker was abandoned), -EDEADLK (no worker could be started), or the
 * read's own error. */
static int read_blocking(struct host_ctx *c, int dfd, const char *name, size_t max, char **ret, size_t *ret_len)
{
        struct read_job *j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->dfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (j->dfd < 0) {
                int e = host_neg_errno();
                free(j);
                return e;
        }
        snprintf(j->name, sizeof(j->name), "%s", name);
        j->max = max;
        j->truncate = true;
        j->data = c->rbuf;
        j->alloc = c->rbuf_alloc;
        c->rbuf = NULL;
        c->rbuf_alloc = 0;

        unsigned timeout = c->timeout_ms;
        if (timeout > HOST_SHORT_TIMEOUT_MS && __atomic_load_n(c->waited, __ATOMIC_RELAXED) >=
                                                       (unsigned long long)HOST_WAIT_BUDGET_TIMEOUTS * c->timeout_ms)
                timeout = HOST_SHORT_TIMEOUT_MS;
        int res = 0;
        int r = deadline_run(&c->dl, read_job_run, j, read_job_free, timeout, &res);
        if (r == -ETIMEDOUT) {
                /* the job is the worker's now */
                __atomic_add_fetch(c->waited, timeout, __ATOMIC_RELAXED);
                return -ETIMEDOUT;
        }
        size_t len = j->len;
        c->rbuf = j->data;
        c->rbuf_alloc = j->alloc;
        j->data = NULL;
        read_job_free(j);
        if (r < 0) {
                c->k.n_dl_error++;
                return -EDEADLK;
        }
        if (res < 0)
                return res;
        *ret = c->rbuf;
        *ret_len = len;
        return 0;
}

/* --- the machine: proc root, device numbers, our own namespace ---------------------------- */

/* A link's text, or, where the entry is a plain file (fixtures, bundles), its content. */
static int read_link_or_file(int dfd, const char *name, char *out, size_t outlen)
{
        ssize_t n = readlinkat(dfd, name, out, outlen - 1);
        if (n >= 0) {
                out[n] = '\0';
                return 0;
        }
        if (errno != EINVAL)
                return host_neg_errno();
        char *data = NULL;
        size_t len = 0;
        int r = read_small(dfd, name, HOST_CAP_SMALL, &data, &len);
        if (r < 0 || !data)
                return r < 0 ? r : -EIO;
        while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\0'))
                len--;
        if (len >= outlen) {
                free(data);
                return -ENAMETOOLONG;
        }
        memcpy(out, data, len);
        out[len] = '\0';
        free(data);
        return 0;
}

static int read_ns_ino(int dfd, const char *name, uint64_t *ret)
{
        char text[128];
        int r = read_link_or_file(dfd, name, text, sizeof(text));
        if (r < 0)
                return r;
        return host_parse_ns_link(text, strlen(text), ret);
}

/* Device nodes under the prefix (and one level of subdirectories: nvidia-caps/). */
static void collect_devnodes(struct host_ctx *c)
{
        char dir[PATH_MAX];
        const char *slash = strrchr(c->dev_prefix, '/');
        const char *base = slash ? slash + 1 : c->dev_prefix;
        size_t dl = slash ? (size_t)(slash - c->dev_prefix) + 1 : 0;
        if (dl == 0)
                snprintf(dir, sizeof(dir), ".");
        else
                snprintf(dir, sizeof(dir), "%.*s", (int)dl, c->dev_prefix);
        DIR *d = host_opendirat(AT_FDCWD, dir);
        if (!d)
                return;
        int dfd = dirfd(d);
        struct dirent *e;
        size_t bl = strlen(base);
        while ((e = readdir(d)) && c->n_nodes < HOST_MAX_HOST_NODES) {
                if (strncmp(e->d_name, base, bl) != 0)
                        continue;
                struct stat st;
                if (fstatat(dfd, e->d_name, &st, 0) < 0)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        DIR *sd = host_opendirat(dfd, e->d_name);
                        if (!sd)
                                continue;
                        int sfd = dirfd(sd);
                        struct dirent *se;
                        while ((se = readdir(sd)) && c->n_nodes < HOST_MAX_HOST_NODES) {
                                struct stat sst;
                                if (se->d_name[0] == '.' || fstatat(sfd, se->d_name, &sst, 0) < 0 ||
                                    S_ISDIR(sst.st_mode))
                                        continue;
                                struct host_devnode *n = &c->nodes[c->n_nodes];
                                int k = snprintf(n->name, sizeof(n->name), "%s/%s", e->d_name, se->d_name);
                                if (k < 0 || (size_t)k >= sizeof(n->name))
                                        continue;
                                n->dev = sst.st_dev;
                                n->ino = sst.st_ino;
                                n->chr = S_ISCHR(sst.st_mode);
                                n->rdev = sst.st_rdev;
                                c->n_nodes++;
                        }
                        closedir(sd);
                        continue;
                }
                struct host_devnode *n = &c->nodes[c->n_nodes];
                size_t nl = strlen(e->d_name);
                if (nl >= sizeof(n->name))
                        continue;
                memcpy(n->name, e->d_name, nl + 1);
                n->dev = st.st_dev;
                n->ino = st.st_ino;
                n->chr = S_ISCHR(st.st_mode);
                n->rdev = st.st_rdev;
                c->n_nodes++;
        }
        closedir(d);
}

/* Which GPU nodes and whether nvidia-uvm are under the prefix (host_report.nodes_known); with
 * nothing there, a limit: nobody can be seen holding a GPU. */
static void note_devnodes(struct host_ctx *c, struct host_report *r)
{
        r->nodes_known = true;
        for (unsigned i = 0; i < c->n_nodes; i++) {
                const char *n = c->nodes[i].name;
                unsigned minor;
                if (strcmp(n, "nvidia-uvm") == 0)
                        r->uvm_node = true;
                else if (strncmp(n, "nvidia", 6) == 0 && n[6] >= '0' && n[6] <= '9' &&
                         parse_uint_range(n + 6, 0, 255, &minor) == 0) {
                        r->gpu_nodes[minor / 64] |= 1ull << (minor % 64);
                }
        }
        /* a prefix given (--dev-prefix) under which nothing is: said once for the whole host (the
         * default's absence is the driver's state, told by the GPU report) */
        if (c->n_nodes == 0 && strcmp(c->dev_prefix, HOST_DEFAULT_PREFIX) != 0) {
                LIMIT(r, _("no device node under %s: holders of the GPUs cannot be seen"), c->dev_prefix);
        }
}

bool host_report_has_gpu_node(const struct host_report *r, unsigned minor)
{
        if (!r->nodes_known || minor >= 256)
                return true;
        return (r->gpu_nodes[minor / 64] >> (minor % 64)) & 1;
}

/* hidepid=/subset= options of the proc mount at proc_root (proc(5)), from our mountinfo. */
static void detect_hidepid(struct host_ctx *c)
{
        char real[PATH_MAX];
        char *mi = NULL;
        size_t len = 0;
        if (!realpath(c->proc_root, real) || read_small(c->proc_fd, "self/mountinfo", 1u << 20, &mi, &len) < 0)
                return;
        char *save = NULL;
        for (char *line = strtok_r(mi, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                /* "id parent maj:min root mountpoint options ... - fstype source superopts" */
                char *sep = strstr(line, " - ");
                if (!sep)
                        continue;
                char mp[PATH_MAX];
                if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 || strcmp(mp, real) != 0)
                        continue;
                if (strncmp(sep + 3, "proc ", 5) != 0)
                        continue;
                const char *opts = strrchr(sep + 3, ' ');
                if (!opts)
                        continue;
                c->hidepid_invisible = strstr(opts, "hidepid=2") || strstr(opts, "hidepid=invisible") ||
                                       strstr(opts, "subset=pid");
                c->hidepid_noaccess = strstr(opts, "hidepid=1") || strstr(opts, "hidepid=noaccess");
        }
        free(mi);
}

/* What a context has for itself alone: its deadline worker and scratch. */
static void ctx_free_scratch(struct host_ctx *c)
{
        deadline_runner_done(&c->dl);
        free(c->rbuf);
        free(c->sfds);
        free(c->saved);
        buf_free(&c->smaps);
}

static void ctx_free(struct host_ctx *c)
{
        ctx_free_scratch(c);
        if (c->proc_fd >= 0)
                close(c->proc_fd);
        free(c->devices);
        host_bundle_in_free(c->bundle);
}

/* A context for another thread of src's walk: the machine facts shared with src (read only;
 * the proc fd, /proc/devices and the bundle stay src's), the budget of missed deadlines too;
 * its own deadline worker, scratch and counts. Free with ctx_free_scratch, before src. */
static void ctx_clone(struct host_ctx *dst, const struct host_ctx *src)
{
        *dst = *src;
        memset(&dst->k, 0, sizeof(dst->k));
        memset(&dst->dl, 0, sizeof(dst->dl));
        dst->rbuf = NULL;
        dst->rbuf_alloc = 0;
        dst->sfds = NULL;
        dst->n_sfds = dst->sfds_alloc = 0;
        dst->smaps = BUF_INIT(HOST_CAP_MAPS);
        dst->saved = NULL;
        dst->n_saved = dst->saved_alloc = 0;
        dst->preset = NULL;
}

/* Add the counts of another thread's context. */
static void counts_add(struct walk_counts *dst, const struct walk_counts *src)
{
        dst->n_pid_denied += src->n_pid_denied;
        dst->n_fd_denied_other += src->n_fd_denied_other;
        dst->n_fd_denied_own += src->n_fd_denied_own;
        dst->n_fd_error += src->n_fd_error;
        dst->n_maps_denied_other += src->n_maps_denied_other;
        dst->n_maps_denied_own += src->n_maps_denied_own;
        dst->n_maps_error += src->n_maps_error;
        dst->n_maps_dstate += src->n_maps_dstate;
        dst->n_maps_timeout += src->n_maps_timeout;
        dst->n_text_timeout += src->n_text_timeout;
        dst->n_node_overflow += src->n_node_overflow;
        dst->n_dl_error += src->n_dl_error;
        dst->n_maps_timeout_driver += src->n_maps_timeout_driver;
        dst->n_maps_changing += src->n_maps_changing;
        if (src->fd_errno)
                dst->fd_errno = src->fd_errno;
        if (src->maps_errno)
                dst->maps_errno = src->maps_errno;
        /* symbolic links as PID entries: only a bundle has them, and a bundle is walked by one
         * thread; added all the same */
        dst->n_pid_symlinks += src->n_pid_symlinks;
        size_t used = strlen(dst->symlink_pids);
        if (src->symlink_pids[0] && used + strlen(src->symlink_pids) + 3 < sizeof(dst->symlink_pids)) {
                snprintf(dst->symlink_pids + used, sizeof(dst->symlink_pids) - used, "%s%s", used ? ", " : "",
                         src->symlink_pids);
                dst->n_symlinks_named += src->n_symlinks_named;
        }
}

static int copy_opt(char *dst, size_t dstlen, const char *v, const char *def)
{
        const char *s = v && *v ? v : def;
        size_t n = strlen(s);
        while (n > 1 && s[n - 1] == '/')
                n--;
        if (n >= dstlen)
                return -ENAMETOOLONG;
        memcpy(dst, s, n);
        dst[n] = '\0';
        return 0;
}

/* Is the walk's proc root the real /proc of this PID namespace (not a fixture tree or a bundle)? */
static bool is_live_proc(const struct host_ctx *c)
{
        char real[PATH_MAX];
        return !c->bundle && realpath(c->proc_root, real) && strcmp(real, "/proc") == 0;
}

/* Open proc_root and learn the machine facts (into r); for_walk: also what only the walk's
 * limits need. */
static int ctx_init(struct host_ctx *c, const struct host_opts *o, struct host_report *r, bool for_walk)
{
        memset(c, 0, sizeof(*c));
        c->proc_fd = -1;
        c->r = r;
        c->smaps = BUF_INIT(HOST_CAP_MAPS);
        int e = copy_opt(c->proc_root, sizeof(c->proc_root), o->proc_root, HOST_DEFAULT_PROC);
        if (e < 0)
                return e;
        e = copy_opt(c->dev_prefix, sizeof(c->dev_prefix), o->dev_prefix, HOST_DEFAULT_PREFIX);
        if (e < 0)
                return e;
        c->prefix_len = strlen(c->dev_prefix);
        c->timeout_ms = o->timeout_ms ? o->timeout_ms : HOST_DEFAULT_TIMEOUT_MS;
        c->waited = &c->waited_ms;
        c->save_dir = o->save_dir && *o->save_dir ? o->save_dir : NULL;
        c->read_env = o->read_env;

        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        r->sample_time = (double)now.tv_sec + (double)now.tv_nsec / 1e9;

        c->proc_fd = open(c->proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (c->proc_fd < 0)
                return host_neg_errno();
        e = host_bundle_load(c->proc_root, &c->bundle);
        if (e < 0)
                return e;
        c->live = is_live_proc(c);

        char *data = NULL;
        size_t len = 0;
        if (read_small(c->proc_fd, "devices", HOST_CAP_DEVICES, &data, &len) == 0) {
                c->have_majors = host_parse_devices(data, len, &c->majors) == 0;
                c->devices = data;
                c->devices_len = len;
        }
        for (unsigned i = 0; i < c->majors.n && i < sizeof(r->nvidia_majors) / sizeof(r->nvidia_majors[0]); i++)
                r->nvidia_majors[r->n_nvidia_majors++] = c->majors.m[i].major;
        if (read_small(c->proc_fd, "stat", HOST_CAP_STATUS, &data, &len) == 0) {
                c->have_btime = host_parse_btime(data, len, &c->btime) == 0;
                free(data);
        }
        r->btime = c->have_btime ? (double)c->btime : 0;

        if (c->bundle) {
                r->self_pidns_ino = c->bundle->self_pidns_ino;
                r->initial_pidns = c->bundle->initial_pidns;
                r->self_pid = c->bundle->self_pid;
                r->euid = c->bundle->euid;
                r->clk_tck = c->bundle->clk_tck;
                r->sample_time = c->bundle->sample_time;
                r->self_saved = c->bundle->self_saved;
                r->n_self_ancestors = c->bundle->n_self_ancestors;
                memcpy(r->self_ancestors, c->bundle->self_ancestors, sizeof(r->self_ancestors));
                return 0;
        }
        uint64_t ino;
        if (read_ns_ino(c->proc_fd, "self/ns/pid", &ino) == 0) {
                r->self_pidns_ino = ino;
                r->initial_pidns = ino == HOST_PROC_PID_INIT_INO;
        }
        char self[32];
        ssize_t n = readlinkat(c->proc_fd, "self", self, sizeof(self) - 1);
        if (n > 0) {
                self[n] = '\0';
                unsigned v;
                if (parse_uint_range(self, 1, INT32_MAX, &v) == 0)
                        r->self_pid = (pid_t)v;
        }
        r->euid = geteuid();
        r->clk_tck = sysconf(_SC_CLK_TCK);
        collect_devnodes(c);
        note_devnodes(c, r);
        if (for_walk)
                detect_hidepid(c);
        return 0;
}

/* --- matching ------------------------------------------------------------------------------ */

/* The user name of uid (cached), else the number. In a bundle: the name recorded there. */
static void user_name(struct host_ctx *c, const struct pid_scan *s, uid_t uid, char *out, size_t outlen)
{
        const struct host_bundle_proc *bp = c->bundle ? host_bundle_proc(c->bundle, s->pid) : NULL;
        if (bp && bp->user[0]) {
                snprintf(out, outlen, "%s", bp->user);
                return;
        }
        for (unsigned i = 0; i < c->n_users; i++) {
                if (c->users[i].uid == uid) {
                        snprintf(out, outlen, "%s", c->users[i].name);
                        return;
                }
        }
        struct passwd pw, *res = NULL;
        char pbuf[4096];
        if (getpwuid_r(uid, &pw, pbuf, sizeof(pbuf), &res) == 0 && res && res->pw_name &&
            strlen(res->pw_name) < outlen)
                snprintf(out, outlen, "%s", res->pw_name);
        else
                snprintf(out, outlen, "%u", (unsigned)uid);
        if (c->n_users < sizeof(c->users) / sizeof(c->users[0])) {
                c->users[c->n_users].uid = uid;
                snprintf(c->users[c->n_users].name, sizeof(c->users[0].name), "%s", out);
                c->n_users++;
        }
}

/* A path under the prefix: its node name. path need not be NUL-terminated. */
static bool match_prefix(const struct host_ctx *c, const char *path, size_t len, char name[48])
{
        if (len < c->prefix_len || memcmp(path, c->dev_prefix, c->prefix_len) != 0 || len >= PATH_MAX)
                return false;
        char tmp[PATH_MAX];
        memcpy(tmp, path, len);
        tmp[len] = '\0';
        return host_node_name(tmp, c->dev_prefix, name, 48) == 0;
}

/* What st (a descriptor's file) is: one of the host's nodes (same inode, or same device
 * number), or a character device of an nvidia driver (a node made inside a container). */
static bool match_stat(const struct host_ctx *c, const struct stat *st, char name[48])
{
        for (size_t i = 0; i < c->n_nodes; i++) {
                const struct host_devnode *n = &c->nodes[i];
                if ((n->dev == st->st_dev && n->ino == st->st_ino) ||
                    (S_ISCHR(st->st_mode) && n->chr && n->rdev == st->st_rdev)) {
                        snprintf(name, 48, "%s", n->name);
                        return true;
                }
        }
        return S_ISCHR(st->st_mode) &&
               host_majors_name(&c->majors, major(st->st_rdev), minor(st->st_rdev), name, 48) == 0;
}

static bool match_devino(const struct host_ctx *c, const struct host_maps_line *m, char name[48])
{
        if (m->ino == 0)
                return false;
        dev_t dev = makedev(m->dev_major, m->dev_minor);
        for (size_t i = 0; i < c->n_nodes; i++) {
                if (c->nodes[i].dev == dev && (uint64_t)c->nodes[i].ino == m->ino) {
                        snprintf(name, 48, "%s", c->nodes[i].name);
                        return true;
                }
        }
        return false;
}

static void add_node(struct host_ctx *c, struct pid_scan *s, const char *name, unsigned via)
{
        if (host_proc_add_node(&s->p, name, via) == -E2BIG && !s->overflow) {
                s->overflow = true;
                c->k.n_node_overflow++;
        }
}

/* A description s refers to, for the families; past HOST_MAX_DESC only the first are grouped. */
static void desc_add(struct pid_scan *s, uint64_t key, int fd)
{
        if (host_proc_add_desc(&s->p, key, fd) == -E2BIG)
                s->p.family_note = HOST_FAMILY_TOO_MANY;
}

static void note_denied(const struct host_ctx *c, struct pid_scan *s, unsigned *other, unsigned *own)
{
        if (!s->owner_known) {
                /* only needed here: an fstat per process would cost a syscall each */
                struct stat st;
                s->owner = fstat(s->dfd, &st) == 0 ? st.st_uid : (uid_t)-1;
                s->owner_known = true;
        }
        if (c->r->euid != 0 && s->owner != c->r->euid)
                (*other)++;
        else
                (*own)++;
}

static bool is_gone(int e)
{
        return e == -ENOENT || e == -ESRCH;
}

/* One entry nm of the fd directory fdd: a node held by that descriptor is added to s. false:
 * stop (the descriptors cannot be read). */
static bool scan_fd_entry(struct host_ctx *c, struct pid_scan *s, int fdd, const char *nm)
{
        if (nm[0] < '0' || nm[0] > '9')
                return true;
        /* the file itself, as the BPF walk sees it: a character device by its device number,
         * anything else by (st_dev, st_ino) (match_stat) */
        struct stat st;
        char name[48];
        bool hit;
        if (fstatat(fdd, nm, &st, 0) == 0) {
                hit = match_stat(c, &st, name);
        } else if (errno == EACCES || errno == EPERM) {
                /* the directory lists, but the links need ptrace rights */
                s->p.skipped |= HOST_SKIP_FDS;
                note_denied(c, s, &c->k.n_fd_denied_other, &c->k.n_fd_denied_own);
                return false;
        } else {
                /* a link to nothing: closed meanwhile, or a fixture's or bundle's link text
                 * naming a node of another machine: matched by its path */
                char target[PATH_MAX];
                ssize_t n = readlinkat(fdd, nm, target, sizeof(target) - 1);
                if (n <= 0)
                        return true;
                target[n] = '\0';
                bool deleted;
                size_t tl = host_strip_deleted(target, (size_t)n, &deleted);
                hit = match_prefix(c, target, tl, name);
        }
        if (!hit)
                return true;
        add_node(c, s, name, HOST_VIA_FD);
        unsigned fdnum;
        if (parse_uint_range(nm, 0, INT32_MAX, &fdnum) < 0)
                return true;
        desc_add(s, 0, (int)fdnum);
        if (!c->save_dir)
                return true;
        if (host_grow(&c->sfds, &c->sfds_alloc, c->n_sfds, sizeof(*c->sfds)) < 0)
                return true;
        c->sfds[c->n_sfds].fd = (int)fdnum;
        snprintf(c->sfds[c->n_sfds].name, sizeof(c->sfds[0].name), "%s", name);
        c->n_sfds++;
        return true;
}

static void scan_fds(struct host_ctx *c, struct pid_scan *s)
{
        if (s->forced & HOST_SKIP_FDS) {
                s->p.skipped |= HOST_SKIP_FDS;
                return;
        }
        int fdd = openat(s->dfd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fdd < 0) {
                int e = host_neg_errno();
                if (is_gone(e))
                        return;         /* no table (any more), or a fixture without descriptors */
                s->p.skipped |= HOST_SKIP_FDS;
                if (e == -EACCES || e == -EPERM) {
                        note_denied(c, s, &c->k.n_fd_denied_other, &c->k.n_fd_denied_own);
                } else {
                        c->k.n_fd_error++;
                        c->k.fd_errno = -e;
                }
                return;
        }
        /* getdents64 on the descriptor, not fdopendir: no fstat, fcntl and 32 KiB buffer for
         * each of thousands of processes */
        char dents[8192] __attribute__((aligned(8)));
        bool go = true;
        ssize_t k;
        while (go && (k = getdents64(fdd, dents, sizeof(dents))) > 0) {
                for (ssize_t off = 0; go && off < k;) {
                        const struct dirent64 *e = (const void *)(dents + off);
                        off += e->d_reclen;
                        go = scan_fd_entry(c, s, fdd, e->d_name);
                }
        }
        close(fdd);
}

/* The maps line rewritten for a bundle: its path replaced by the canonical /dev/NAME. */
static void save_maps_line(struct host_ctx *c, const char *line, const struct host_maps_line *m,
                           const char *name)
{
        size_t head = (size_t)(m->path - line);
        if (buf_append(&c->smaps, line, head) < 0 || buf_printf(&c->smaps, "/dev/%s%s\n", name,
                                                                 m->deleted ? " (deleted)" : "") < 0)
                c->smaps.len = 0;       /* the cap: save nothing rather than half */
}

/* Does a thread of s wait in the nvidia modules? Its wchan names one of their functions. wchan
 * takes no lock (the kernel stack would: exec_update_lock, which a hung exec holds), so it is
 * read on the walking thread. */
static bool thread_in_driver(const struct pid_scan *s)
{
        DIR *d = host_opendirat(s->dfd, "task");
        if (!d)
                return false;
        bool in = false;
        unsigned n = 0;
        struct dirent *e;
        while (!in && n < HOST_MAX_TASKS_ASKED && (e = readdir(d))) {
                if (e->d_name[0] < '1' || e->d_name[0] > '9')
                        continue;
                n++;
                int thr = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (thr < 0)
                        continue;
                char *data = NULL;
                size_t len = 0;
                in = read_small(thr, "wchan", HOST_CAP_STAT, &data, &len) == 0 && data && host_names_driver(data, len);
                free(data);
                close(thr);
        }
        closedir(d);
        return in;
}

/* Read maps under the deadline; on the live /proc read again (HOST_MAPS_TRIES in all, within
 * one deadline) when the read failed or the mappings changed between the chunks of a read
 * (host_maps_ordered: a process that maps and unmaps all the time). *ret_steady: the text
 * returned was in order. */
static int read_maps(struct host_ctx *c, struct pid_scan *s, char **data, size_t *len, bool *ret_steady)
{
        unsigned long long t0 = monotonic_ms();
        int e;
        for (unsigned k = 1;; k++) {
                e = read_blocking(c, s->dfd, "maps", HOST_CAP_MAPS, data, len);
                *ret_steady = e == 0 && (!c->live || host_maps_ordered(*data, *len));
                if (*ret_steady || e == -ETIMEDOUT || e == -EDEADLK || e == -ENOMEM || e == -EACCES || e == -EPERM ||
                    is_gone(e) || !c->live || k >= HOST_MAPS_TRIES || monotonic_ms() - t0 >= c->timeout_ms)
                        return e;
        }
}

/* state: of the task whose maps are read (a thread's, for a zombie leader) */
static void scan_maps(struct host_ctx *c, struct pid_scan *s, char state)
{
        if (s->forced & HOST_SKIP_MAPS) {
                s->p.skipped |= HOST_SKIP_MAPS;
                s->unverifiable = true;
                return;
        }
        if (state == 'D') {
                /* reading maps would wait for the mmap lock of a task stuck in the kernel */
                s->p.skipped |= HOST_SKIP_MAPS;
                s->unverifiable = true;
                c->k.n_maps_dstate++;
                return;
        }
        char *data = NULL;
        size_t len = 0;
        bool steady;
        int e = read_maps(c, s, &data, &len, &steady);
        if (e < 0) {
                /* ESRCH: no address space (an exiting task that released it, still holding
                 * descriptors), not a vanished process: only stat and status decide that */
                if (is_gone(e))
                        return;
                s->p.skipped |= HOST_SKIP_MAPS;
                if (e == -ETIMEDOUT) {
                        s->locked = s->unverifiable = true;
                        c->k.n_maps_timeout++;
                        /* the driver is blamed only when a thread of it is seen there */
                        c->k.n_maps_timeout_driver += thread_in_driver(s);
                } else if (e == -EACCES || e == -EPERM) {
                        note_denied(c, s, &c->k.n_maps_denied_other, &c->k.n_maps_denied_own);
                } else if (e != -EDEADLK) {
                        c->k.n_maps_error++;
                        c->k.maps_errno = -e;
                }
                return;
        }
        if (!steady) {
                /* what the last read showed is kept; a mapping may have been missed */
                s->p.skipped |= HOST_SKIP_MAPS;
                s->unverifiable = true;
                c->k.n_maps_changing++;
        }
        size_t pos = 0;
        while (pos < len) {
                const char *line = data + pos;
                const char *nl = memchr(line, '\n', len - pos);
                size_t ll = nl ? (size_t)(nl - line) : len - pos;
                pos += ll + 1;
                struct host_maps_line m;
                if (host_parse_maps_line(line, ll, &m) < 0 || !m.path)
                        continue;
                char name[48];
                if (!match_prefix(c, m.path, m.pathlen, name) && !match_devino(c, &m, name))
                        continue;
                add_node(c, s, name, HOST_VIA_MMAP);
                desc_add(s, 0, -1);
                if (c->save_dir)
                        save_maps_line(c, line, &m, name);
        }
}

/* The nodes the BPF iterators found for s, named with the /proc walk's rule: a descriptor's
 * file by match_stat, a mapping's by its (st_dev, st_ino) (match_devino, as a maps line). */
static void apply_preset(struct host_ctx *c, struct pid_scan *s)
{
        const struct bpf_preset *b = c->preset;
        for (size_t i = 0; i < b->n_hits; i++) {
                const struct host_bpf_hit *h = &b->hits[i];
                char name[48];
                bool hit;
                if (h->via == HOST_VIA_FD) {
                        struct stat st;
                        memset(&st, 0, sizeof(st));
                        st.st_mode = h->chr ? S_IFCHR : S_IFREG;
                        st.st_dev = h->dev;
                        st.st_ino = h->ino;
                        st.st_rdev = h->chr ? h->rdev : 0;
                        hit = match_stat(c, &st, name);
                } else {
                        struct host_maps_line m = { .dev_major = major(h->dev), .dev_minor = minor(h->dev),
                                                    .ino = (uint64_t)h->ino };
                        hit = match_devino(c, &m, name);
                }
                if (hit) {
                        add_node(c, s, name, h->via);
                        desc_add(s, h->file, h->via == HOST_VIA_FD ? h->fd : -1);
                }
        }
        /* the iterator skips an address space whose lock it cannot take at once: a writer holds
         * it (mmap, munmap: any busy process) or a thread stuck in the driver. /proc's maps
         * waits for the lock, under the deadline, and says which. */
        if (b->maps_unread)
                scan_maps(c, s, s->p.state);
}

/* A zombie thread-group leader (its main thread called pthread_exit) whose other threads
 * still run: its own fd/ and maps are empty, but a live thread's task/TID/ shows the shared
 * descriptor table and address space. Reads them through the first live thread. */
static void scan_live_thread(struct host_ctx *c, struct pid_scan *s)
{
        DIR *d = host_opendirat(s->dfd, "task");
        if (!d)
                return;
        int tfd = dirfd(d);
        struct dirent *e;
        while ((e = readdir(d))) {
                unsigned tid;
                if (e->d_name[0] < '1' || e->d_name[0] > '9' || parse_uint_range(e->d_name, 1, INT32_MAX, &tid) < 0 ||
                    (pid_t)tid == s->pid)
                        continue;
                int thr = openat(tfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (thr < 0)
                        continue;
                char *st = NULL;
                size_t sl = 0;
                struct host_proc t;
                memset(&t, 0, sizeof(t));
                bool live = read_small(thr, "stat", HOST_CAP_STAT, &st, &sl) == 0 &&
                            host_parse_stat(st, sl, &t) == 0 && t.state != 'Z' && t.state != 'X';
                if (live) {
                        int leader = s->dfd;
                        s->dfd = thr;
                        scan_fds(c, s);
                        scan_maps(c, s, t.state);
                        s->dfd = leader;
                }
                free(st);
                host_proc_clear(&t);
                close(thr);
                if (live)
                        break;
        }
        closedir(d);
}

/* --- facts --------------------------------------------------------------------------------- */

static void read_text_files(struct host_ctx *c, struct pid_scan *s)
{
        bool blocked = s->p.state == 'D' || s->locked;
        unsigned env_bit = c->read_env ? HOST_SKIP_ENVIRON : 0;
        if (blocked) {
                s->p.skipped |= HOST_SKIP_CMDLINE | env_bit;
                return;
        }
        char *data = NULL;
        size_t len = 0;
        if (s->forced & HOST_SKIP_CMDLINE) {
                s->p.skipped |= HOST_SKIP_CMDLINE;
        } else {
                int e = read_blocking(c, s->dfd, "cmdline", HOST_CAP_CMDLINE, &data, &len);
                if (e == 0 && data) {
                        s->p.cmdline = cmdline_join(data, len);
                        if (c->save_dir && (s->cmdline = malloc(len + 1)) != NULL) {
                                memcpy(s->cmdline, data, len + 1);
                                s->cmdline_len = len;
                        }
                } else if (e == -ETIMEDOUT) {
                        s->locked = true;
                        c->k.n_text_timeout++;
                        s->p.skipped |= HOST_SKIP_CMDLINE | env_bit;
                        return;
                } else {
                        s->p.skipped |= HOST_SKIP_CMDLINE;
                }
        }
        if (!c->read_env)
                return;
        if (s->forced & HOST_SKIP_ENVIRON) {
                s->p.skipped |= HOST_SKIP_ENVIRON;
                return;
        }
        int e = read_blocking(c, s->dfd, "environ", HOST_CAP_ENVIRON, &data, &len);
        if (e == 0) {
                s->env_saved = BUF_INIT(HOST_CAP_ENVIRON);
                host_parse_environ(data, len, &s->p, c->save_dir ? &s->env_saved : NULL);
        } else if (e == -ETIMEDOUT) {
                s->locked = true;
                c->k.n_text_timeout++;
                s->p.skipped |= HOST_SKIP_ENVIRON;
        } else if (!is_gone(e)) {
                s->p.skipped |= HOST_SKIP_ENVIRON;  /* another user's, without ptrace rights */
        }
        /* ESRCH: no address space (a zombie leader, an exiting task): no variables */
}

static void collect_facts(struct host_ctx *c, struct pid_scan *s)
{
        char *data = NULL;
        size_t len = 0;
        /* with stat, the one file that says whether the process is still there */
        int e = read_small(s->dfd, "status", HOST_CAP_STATUS, &s->status, &s->status_len);
        if (is_gone(e)) {
                s->vanished = true;
                return;
        }
        if (e == 0 && host_parse_status(s->status, s->status_len, &s->p) == 0)
                user_name(c, s, s->p.uid, s->p.user, sizeof(s->p.user));
        if (!s->p.user[0]) {
                s->p.uid = (uid_t)-1;
                snprintf(s->p.user, sizeof(s->p.user), "?");
        }
        e = (s->forced & HOST_SKIP_CGROUP) ? -EPERM :
            read_small(s->dfd, "cgroup", HOST_CAP_CGROUP, &s->cgroup, &s->cgroup_len);
        if (e == 0)
                host_parse_cgroup(s->cgroup, s->cgroup_len, &s->p);
        else if (e != -ENOENT)
                s->p.skipped |= HOST_SKIP_CGROUP;
        if (read_small(s->dfd, "wchan", HOST_CAP_SMALL, &s->wchan, &s->wchan_len) == 0) {
                len = s->wchan_len;
                data = s->wchan;
                while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\0'))
                        len--;
                /* "0": not sleeping, or hidden from us */
                if (!(len == 1 && data[0] == '0') && len < sizeof(s->p.wchan)) {
                        memcpy(s->p.wchan, data, len);
                        s->p.wchan[len] = '\0';
                }
        }
        uint64_t ino;
        if (read_ns_ino(s->dfd, "ns/pid", &ino) == 0)
                s->p.pidns_ino = ino;
        if (c->have_btime && c->r->clk_tck > 0)
                s->p.start_time = (double)c->btime + (double)s->p.start_ticks / (double)c->r->clk_tck;
        read_text_files(c, s);
}

static void save_pid(struct host_ctx *c, struct pid_scan *s, enum host_role role)
{
        struct host_save_proc sp = {
                .pid = s->pid,
                .role = role,
                .skipped = s->p.skipped,
                .user = s->p.user,
                .stat = s->stat, .stat_len = s->stat_len,
                .status = s->status, .status_len = s->status_len,
                .cmdline = s->cmdline, .cmdline_len = s->cmdline_len,
                .cgroup = s->cgroup, .cgroup_len = s->cgroup_len,
                .wchan = s->wchan, .wchan_len = s->wchan_len,
                .environ = c->read_env && !(s->p.skipped & HOST_SKIP_ENVIRON) ? buf_str(&s->env_saved) : NULL,
                .environ_len = s->env_saved.len,
                .maps = (s->p.skipped & HOST_SKIP_MAPS) ? NULL : buf_str(&c->smaps),
                .maps_len = c->smaps.len,
                .pidns_ino = s->p.pidns_ino,
                .fds = c->sfds,
                .n_fds = c->n_sfds,
        };
        if (host_bundle_save_proc(c->save_dir, &sp) < 0)
                return;
        if (host_grow(&c->saved, &c->saved_alloc, c->n_saved, sizeof(*c->saved)) < 0)
                return;
        struct host_bundle_proc *bp = &c->saved[c->n_saved++];
        memset(bp, 0, sizeof(*bp));
        bp->pid = s->pid;
        bp->role = role;
        bp->skipped = s->p.skipped;
        snprintf(bp->user, sizeof(bp->user), "%s", s->p.user);
}

static void pid_scan_free(struct pid_scan *s)
{
        if (s->dfd >= 0)
                close(s->dfd);
        host_proc_clear(&s->p);
        free(s->stat);
        free(s->status);
        free(s->cgroup);
        free(s->wchan);
        free(s->cmdline);
        buf_free(&s->env_saved);
}

enum pid_class {
        PID_NONE,               /* holds nothing (or vanished) */
        PID_HOLDER,
        PID_UNVERIFIED,
        PID_OPAQUE,             /* its descriptors are unreadable to us (another user's) */
};

/* Inspect one process. With want_facts (a lookup) the facts are read whatever it holds.
 * Returns 0 and *ret filled for a holder, an unverified process or a lookup; -ESRCH when it
 * vanished or holds nothing; -EACCES when its stat cannot be read. */
static int inspect_pid(struct host_ctx *c, pid_t pid, const char *dirname, bool want_facts, struct host_proc *ret,
                       enum pid_class *ret_class)
{
        struct pid_scan s;
        enum pid_class cls = PID_NONE;
        int e, r = -ESRCH;
        memset(&s, 0, sizeof(s));
        s.pid = pid;
        c->smaps.len = 0;
        c->n_sfds = 0;

        s.dfd = openat(c->proc_fd, dirname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (s.dfd < 0) {
                if (errno == EACCES || errno == EPERM) {
                        c->k.n_pid_denied++;
                        r = -EACCES;
                } else if (errno == ELOOP || errno == ENOTDIR) {
                        /* a symlink (or a file) where a process directory belongs: only a planted
                         * bundle has one; never followed, but said */
                        size_t used = strlen(c->k.symlink_pids);
                        if (used + strlen(dirname) + 3 < sizeof(c->k.symlink_pids)) {
                                snprintf(c->k.symlink_pids + used, sizeof(c->k.symlink_pids) - used, "%s%s", used ? ", " : "",
                                         dirname);
                                c->k.n_symlinks_named++;
                        }
                        c->k.n_pid_symlinks++;
                }
                goto out;
        }
        if (c->bundle) {
                const struct host_bundle_proc *bp = host_bundle_proc(c->bundle, pid);
                if (bp) {
                        s.forced = bp->skipped;
                        s.bundle_role = bp->role;
                }
        }
        e = read_small(s.dfd, "stat", HOST_CAP_STAT, &s.stat, &s.stat_len);
        if (e == -EACCES || e == -EPERM) {
                c->k.n_pid_denied++;
                r = -EACCES;
                goto out;
        }
        if (e < 0 || host_parse_stat(s.stat, s.stat_len, &s.p) < 0)
                goto out;
        s.p.pid = pid;

        /* kernel threads have no descriptors; zombies have released theirs and their memory,
         * unless other threads of a zombie leader still run (a bundle keeps what they held at
         * the PID's level) */
        if (c->preset) {
                apply_preset(c, &s);
        } else if (!s.p.kernel_thread && ((s.p.state != 'Z' && s.p.state != 'X') || c->bundle)) {
                scan_fds(c, &s);
                scan_maps(c, &s, s.p.state);
        } else if (!s.p.kernel_thread && s.p.num_threads > 1) {
                scan_live_thread(c, &s);
        }
        if (s.vanished)
                goto out;
        if (s.p.n_nodes > 0)
                cls = PID_HOLDER;
        else if (c->bundle ? s.bundle_role == HOST_ROLE_UNVERIFIED : s.unverifiable)
                cls = PID_UNVERIFIED;
        if (cls == PID_NONE && !want_facts && (s.p.skipped & HOST_SKIP_FDS) && !s.p.kernel_thread && !c->bundle) {
                /* another user's process: what it holds is out of sight, its group is not */
                *ret = s.p;
                memset(&s.p, 0, sizeof(s.p));
                cls = PID_OPAQUE;
                r = 0;
                goto out;
        }
        if (cls == PID_NONE && !want_facts)
                goto out;
        collect_facts(c, &s);
        if (s.vanished)
                goto out;
        host_proc_sort_nodes(&s.p);
        if (c->save_dir)
                save_pid(c, &s, cls == PID_HOLDER ? HOST_ROLE_HOLDER :
                                cls == PID_UNVERIFIED ? HOST_ROLE_UNVERIFIED : HOST_ROLE_LOOKUP);
        *ret = s.p;
        memset(&s.p, 0, sizeof(s.p));
        r = 0;
out:
        *ret_class = r == 0 ? cls : PID_NONE;
        pid_scan_free(&s);
        return r;
}

/* --- limits -------------------------------------------------------------------------------- */

static void compose_limits(struct host_ctx *c, struct host_report *r)
{
        unsigned n;
        if ((n = c->k.n_pid_symlinks))
                LIMIT(r, P_("%u process entry of %s is not a directory (a symbolic link?) and is left out, not followed: %s%s",
                            "%u process entries of %s are not directories (symbolic links?) and are left out, not followed: %s%s",
                            n),
                      n, c->proc_root, c->k.symlink_pids, n > c->k.n_symlinks_named ? ", ..." : "");
        if (c->bundle) {
                for (size_t i = 0; i < c->bundle->n_limits; i++)
                        (void)host_report_add_limit(r, c->bundle->limits[i], NULL);
                return;
        }
        if (!c->have_majors)
                LIMIT(r, _("%s/devices could not be read: device nodes were recognised by path only"), c->proc_root);
        if (r->self_pidns_ino && !r->initial_pidns)
                LIMIT(r, "%s", _("this is not the initial PID namespace: holders in other namespaces (the host, other "
                                 "containers) are not visible from here"));
        if (c->hidepid_invisible && r->euid != 0)
                LIMIT(r, _("%s is mounted with hidepid=invisible: processes of other users are not listed (not root)"),
                      c->proc_root);
        if ((n = c->k.n_pid_denied))
                LIMIT(r, P_("%u process could not be inspected at all (permission denied%s)",
                            "%u processes could not be inspected at all (permission denied%s)", n),
                      n, c->hidepid_noaccess ? _("; /proc is mounted with hidepid=noaccess") : "");
        if ((n = c->k.n_fd_denied_other))
                LIMIT(r, P_("fd tables of %u process owned by other users could not be read (not root)",
                            "fd tables of %u processes owned by other users could not be read (not root)", n), n);
        if ((n = c->k.n_fd_denied_own))
                LIMIT(r, P_("fd tables of %u process could not be read (permission denied)",
                            "fd tables of %u processes could not be read (permission denied)", n), n);
        if ((n = c->k.n_fd_error))
                LIMIT(r, P_("fd tables of %u process could not be read (%s)", "fd tables of %u processes could not be read (%s)",
                            n),
                      n, strerror(c->k.fd_errno));
        if ((n = c->k.n_maps_denied_other))
                LIMIT(r, P_("memory maps of %u process owned by other users could not be read (not root)",
                            "memory maps of %u processes owned by other users could not be read (not root)", n), n);
        if ((n = c->k.n_maps_denied_own))
                LIMIT(r, P_("memory maps of %u process could not be read (permission denied)",
                            "memory maps of %u processes could not be read (permission denied)", n), n);
        if ((n = c->k.n_maps_error))
                LIMIT(r, P_("memory maps of %u process could not be read (%s)", "memory maps of %u processes could not be read (%s)",
                            n),
                      n, strerror(c->k.maps_errno));
        if ((n = c->k.n_maps_dstate))
                LIMIT(r, P_("memory maps of %u process in D state (uninterruptible) were not read, so as not to hang "
                            "behind them: a mapping they hold is not seen",
                            "memory maps of %u processes in D state (uninterruptible) were not read, so as not to hang "
                            "behind them: a mapping they hold is not seen", n), n);
        unsigned drv = c->k.n_maps_timeout_driver, other = c->k.n_maps_timeout - drv;
        if (drv)
                LIMIT(r, P_("reading the memory maps of %u process did not finish within the deadline (the address space "
                            "stayed locked while a thread of it waits in the driver, its wchan shows: probably stuck "
                            "there): a mapping they hold is not seen",
                            "reading the memory maps of %u processes did not finish within the deadline (the address space "
                            "stayed locked while a thread of it waits in the driver, its wchan shows: probably stuck "
                            "there): a mapping they hold is not seen", drv), drv);
        if (other)
                LIMIT(r, P_("reading the memory maps of %u process did not finish within the deadline (the address space "
                            "stayed locked; no thread of it was seen in the driver): a mapping they hold is not seen",
                            "reading the memory maps of %u processes did not finish within the deadline (the address space "
                            "stayed locked; no thread of them was seen in the driver): a mapping they hold is not seen",
                            other), other);
        if ((n = c->k.n_maps_changing))
                LIMIT(r, P_("the memory maps of %u process changed during each of %u reads (it maps and unmaps memory "
                            "all the time): a mapping they hold may not be seen",
                            "the memory maps of %u processes changed during each of %u reads (it maps and unmaps memory "
                            "all the time): a mapping they hold may not be seen", n), n, HOST_MAPS_TRIES);
        if ((n = c->k.n_text_timeout))
                LIMIT(r, P_("reading the command line or environment of %u process did not finish within the deadline",
                            "reading the command line or environment of %u processes did not finish within the deadline", n),
                      n);
        if ((n = c->k.n_dl_error))
                LIMIT(r, P_("%u blocking read was not attempted (no worker thread could be started)",
                            "%u blocking reads were not attempted (no worker thread could be started)", n), n);
        if ((n = c->k.n_node_overflow))
                LIMIT(r, P_("%u process holds more than %d distinct device nodes: the rest are not listed",
                            "%u processes hold more than %d distinct device nodes: the rest are not listed", n),
                      n, HOST_MAX_NODES);
}

/* --- entry points -------------------------------------------------------------------------- */

static bool pid_name(const char *s, pid_t *ret)
{
        unsigned v;
        if (s[0] < '1' || s[0] > '9' || parse_uint_range(s, 1, INT32_MAX, &v) < 0)
                return false;
        *ret = (pid_t)v;
        return true;
}

/* ghostvram's own process, for a walk recorded into a bundle: the judgement uses its facts
 * (model/jobs.h: the cgroup it runs in ties nothing) and reclaim protects it and its
 * ancestors, so that a replay answers as this walk did. Its files are saved as a lookup (a
 * holder is saved already), its ancestors kept by number. */
static void record_self(struct host_ctx *c, struct host_report *r)
{
        pid_t pid = r->self_pid;
        if (pid <= 0)
                return;
        char name[16];
        snprintf(name, sizeof(name), "%d", (int)pid);
        if (!host_report_find(r, pid)) {
                struct host_proc p;
                enum pid_class cls;
                if (inspect_pid(c, pid, name, true, &p, &cls) < 0)
                        return;
                host_proc_clear(&p);
        }
        for (pid_t a = pid; a > 1 && r->n_self_ancestors < HOST_MAX_ANCESTORS;) {
                char path[32], *st = NULL;
                size_t len = 0;
                struct host_proc hp;
                memset(&hp, 0, sizeof(hp));
                snprintf(path, sizeof(path), "%d/stat", (int)a);
                bool ok = read_small(c->proc_fd, path, HOST_CAP_STAT, &st, &len) == 0 &&
                          host_parse_stat(st, len, &hp) == 0 && hp.ppid > 0 && hp.ppid != a;
                pid_t pp = hp.ppid;
                free(st);
                host_proc_clear(&hp);
                if (!ok)
                        break;
                r->self_ancestors[r->n_self_ancestors++] = pp;
                a = pp;
        }
        r->self_saved = true;
}

static void save_host(struct host_ctx *c, struct host_report *r, bool is_scan)
{
        if (!c->save_dir)
                return;
        host_bundle_save_host_files(c->save_dir, c->btime, c->have_btime, c->devices, c->devices_len);
        host_bundle_write_json(c->save_dir, r, is_scan, c->saved, c->n_saved);
}

/* Keep the numbers of a process we cannot inspect (bounded: HOST_MAX_OPAQUE). */
static int host_refs_append(struct host_report *r, size_t *alloc, const struct host_proc *p)
{
        if (r->n_opaque >= HOST_MAX_OPAQUE)
                return 0;
        if (r->n_opaque == *alloc) {
                size_t n = *alloc ? *alloc * 2 : 64;
                struct host_pid_ref *m = realloc(r->opaque, n * sizeof(*m));
                if (!m)
                        return -ENOMEM;
                r->opaque = m;
                *alloc = n;
        }
        r->opaque[r->n_opaque++] = (struct host_pid_ref){ .pid = p->pid, .pgid = p->pgid, .sid = p->sid };
        return 0;
}

/* The sizes of a report's growing arrays. */
struct report_allocs {
        size_t holders, unverified, opaque;
};

/* Inspect one process of a walk and file it in r as the walk classes it (nothing when it holds
 * nothing or vanished). 0 or -ENOMEM. */
static int walk_pid(struct host_ctx *c, struct host_report *r, struct report_allocs *al, pid_t pid, const char *name)
{
        struct host_proc p;
        enum pid_class cls;
        if (inspect_pid(c, pid, name, false, &p, &cls) < 0)
                return 0;
        int a = cls == PID_HOLDER ? host_procs_append(&r->holders, &r->n_holders, &al->holders, &p) :
                cls == PID_UNVERIFIED ? host_procs_append(&r->unverified, &r->n_unverified, &al->unverified, &p) :
                cls == PID_OPAQUE ? host_refs_append(r, &al->opaque, &p) : 0;
        host_proc_clear(&p);
        return a;
}

/* --- the walk over several threads ------------------------------------------------------- */

/* Most of a walk is the kernel's work for each descriptor (a stat of /proc/PID/fd/N), one
 * process at a time: threads, each with its own share of the PIDs, use the other CPUs. */
#define HOST_MAX_WALKERS 8              /* threads at most, the caller's one included */
#define HOST_WALK_CHUNK 16              /* PIDs a thread takes at a time */
#define HOST_WALK_MIN_PIDS 64           /* a further thread for every so many PIDs */

/* One process to inspect: its PID and, on the BPF walk, what the iterators found for it. */
struct walk_item {
        pid_t pid;
        bool has_preset;
        struct bpf_preset preset;
};

struct walk_share {
        const struct walk_item *items;
        size_t n;
        size_t next;                    /* the first item no thread has taken (atomic) */
};

/* Another thread of the walk, with its own context and findings. */
struct walker {
        struct host_ctx c;
        struct host_report *part;       /* holders, unverified and opaque only */
        struct report_allocs al;
        struct walk_share *share;
        int err;
        pthread_t thread;
};

/* Inspect items taken from sh until none are left. 0 or -ENOMEM. */
static int walk_items(struct host_ctx *c, struct host_report *r, struct report_allocs *al, struct walk_share *sh)
{
        for (;;) {
                size_t i = __atomic_fetch_add(&sh->next, HOST_WALK_CHUNK, __ATOMIC_RELAXED);
                if (i >= sh->n)
                        return 0;
                size_t end = sh->n - i < HOST_WALK_CHUNK ? sh->n : i + HOST_WALK_CHUNK;
                for (; i < end; i++) {
                        const struct walk_item *it = &sh->items[i];
                        char name[16];
                        snprintf(name, sizeof(name), "%d", (int)it->pid);
                        c->preset = it->has_preset ? &it->preset : NULL;
                        int e = walk_pid(c, r, al, it->pid, name);
                        c->preset = NULL;
                        if (e < 0)
                                return e;
                }
        }
}

static void *walker_main(void *arg)
{
        struct walker *w = arg;
        w->err = walk_items(&w->c, w->part, &w->al, w->share);
        return NULL;
}

/* Move another thread's findings into r. 0 or -ENOMEM (what is left stays in part). */
static int report_take(struct host_report *r, struct report_allocs *al, struct host_report *part)
{
        for (; part->n_holders; part->n_holders--)
                if (host_procs_append(&r->holders, &r->n_holders, &al->holders,
                                      &part->holders[part->n_holders - 1]) < 0)
                        return -ENOMEM;
        for (; part->n_unverified; part->n_unverified--)
                if (host_procs_append(&r->unverified, &r->n_unverified, &al->unverified,
                                      &part->unverified[part->n_unverified - 1]) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < part->n_opaque; i++) {
                struct host_proc p = { .pid = part->opaque[i].pid, .pgid = part->opaque[i].pgid,
                                       .sid = part->opaque[i].sid };
                if (host_refs_append(r, &al->opaque, &p) < 0)
                        return -ENOMEM;
        }
        part->n_opaque = 0;
        return 0;
}

/* Inspect items[0..n) and file each process in r as the walk classes it, on this thread and up
 * to HOST_MAX_WALKERS - 1 more (one per online CPU, one per HOST_WALK_MIN_PIDS items), each
 * with a ctx_clone of c; their counts are added to c's. A bundle, read or recorded, is walked
 * by this thread alone (its files are written in order). 0 or -ENOMEM. */
static int walk_all(struct host_ctx *c, struct host_report *r, struct report_allocs *al, const struct walk_item *items,
                    size_t n)
{
        struct walk_share sh = { .items = items, .n = n, .next = 0 };
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        size_t nw = cpus > 1 ? (size_t)cpus : 1;
        if (nw > HOST_MAX_WALKERS)
                nw = HOST_MAX_WALKERS;
        if (nw > n / HOST_WALK_MIN_PIDS + 1)
                nw = n / HOST_WALK_MIN_PIDS + 1;
        if (c->bundle || c->save_dir)
                nw = 1;
        struct walker *ws = nw > 1 ? calloc(nw - 1, sizeof(*ws)) : NULL;
        size_t started = 0;
        for (; ws && started < nw - 1; started++) {
                struct walker *w = &ws[started];
                w->part = calloc(1, sizeof(*w->part));
                if (!w->part)
                        break;
                ctx_clone(&w->c, c);
                w->share = &sh;
                if (pthread_create(&w->thread, NULL, walker_main, w) != 0) {
                        ctx_free_scratch(&w->c);
                        free(w->part);
                        break;  /* fewer threads: the others take its share */
                }
        }
        int e = walk_items(c, r, al, &sh);
        for (size_t i = 0; i < started; i++) {
                struct walker *w = &ws[i];
                pthread_join(w->thread, NULL);
                if (e == 0)
                        e = w->err;
                if (e == 0)
                        e = report_take(r, al, w->part);
                counts_add(&c->k, &w->c.k);
                ctx_free_scratch(&w->c);
                host_report_free(w->part);
        }
        free(ws);
        return e;
}

/* Families: as the bundle recorded them, else grouped now (kcmp only on the real /proc). */
static int group_families(struct host_ctx *c, struct host_report *r)
{
        if (c->bundle) {
                for (size_t i = 0; i < r->n_holders; i++) {
                        const struct host_bundle_proc *bp = host_bundle_proc(c->bundle, r->holders[i].pid);
                        r->holders[i].n_descs = 0;
                        if (bp && bp->family) {
                                r->holders[i].family = bp->family;
                                r->holders[i].family_note = bp->family_note;
                                r->n_families = bp->family > r->n_families ? bp->family : r->n_families;
                        }
                }
                if (r->n_families) {
                        r->family_source = HOST_FAMILIES_BUNDLE;
                        return 0;
                }
        }
        return host_families_group(r, c->live);
}

/* The iterators see the live kernel: only for the live /proc (not a fixture tree or a bundle),
 * and not while recording a bundle (which keeps the /proc files the walk read). */
static bool bpf_eligible(const struct host_ctx *c, const struct host_opts *o)
{
        return o->holders != HOST_HOLDERS_PROC && !c->save_dir && c->live;
}

static int cmp_hit(const void *a, const void *b)
{
        const struct host_bpf_hit *x = a, *y = b;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

static int cmp_task(const void *a, const void *b)
{
        const struct host_bpf_task *x = a, *y = b;
        if (x->pid != y->pid)
                return (x->pid > y->pid) - (x->pid < y->pid);
        return (int)x->seen_only - (int)y->seen_only;
}

/* The walk by the BPF iterators: every process of the namespace counted, the facts read from
 * /proc only for those that hold a node or whose mappings the iterator could not see. */
static int bpf_walk(struct host_ctx *c, struct host_report *r)
{
        struct host_bpf_target targets[HOST_MAX_HOST_NODES];
        unsigned majors[HOST_MAX_MAJORS];
        struct host_bpf_result res;
        struct report_allocs al = { 0, 0, 0 };
        for (size_t i = 0; i < c->n_nodes; i++)
                targets[i] = (struct host_bpf_target){ .dev = c->nodes[i].dev, .ino = c->nodes[i].ino,
                                                       .chr = c->nodes[i].chr, .rdev = c->nodes[i].rdev };
        for (unsigned i = 0; i < c->majors.n; i++)
                majors[i] = c->majors.m[i].major;
        struct host_bpf_spec spec = { .targets = targets, .n_targets = c->n_nodes, .majors = majors,
                                      .n_majors = c->majors.n };
        memset(&res, 0, sizeof(res));
        int e = host_bpf_collect(&spec, &res, &r->bpf_error);
        if (e < 0)
                return e;
        if (res.n_hits) /* qsort's base must not be NULL, even for no element */
                qsort(res.hits, res.n_hits, sizeof(*res.hits), cmp_hit);
        if (res.n_tasks)
                qsort(res.tasks, res.n_tasks, sizeof(*res.tasks), cmp_task);
        struct walk_item *items = calloc(res.n_tasks ? res.n_tasks : 1, sizeof(*items));
        if (!items) {
                host_bpf_result_free(&res);
                return -ENOMEM;
        }
        size_t n = 0, h = 0;
        for (size_t i = 0; i < res.n_tasks; i++) {
                const struct host_bpf_task *t = &res.tasks[i];
                if (t->seen_only)
                        continue;       /* a pid the task iterator did not list: started since */
                bool seen = i + 1 < res.n_tasks && res.tasks[i + 1].pid == t->pid && res.tasks[i + 1].seen_only;
                r->procs_scanned++;
                while (h < res.n_hits && res.hits[h].pid < t->pid)
                        h++;
                size_t h0 = h;
                while (h < res.n_hits && res.hits[h].pid == t->pid)
                        h++;
                struct bpf_preset b = { .hits = res.hits + h0, .n_hits = h - h0,
                                        .maps_unread = t->has_mm && !seen && !(t->flags & HOST_PF_KTHREAD) };
                if (b.n_hits || b.maps_unread)
                        items[n++] = (struct walk_item){ .pid = t->pid, .has_preset = true, .preset = b };
        }
        e = walk_all(c, r, &al, items, n);
        free(items);
        if (e < 0) {
                host_bpf_result_free(&res);
                return e;
        }
        host_bpf_result_free(&res);
        r->holder_source = HOST_SOURCE_BPF;
        return 0;
}

int host_scan(const struct host_opts *o, struct host_report **ret)
{
        struct host_ctx c;
        struct report_allocs al = { 0, 0, 0 };
        DIR *d = NULL;
        struct dirent *de;
        struct walk_item *items = NULL;
        size_t items_alloc = 0;
        int e;
        struct host_report *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        e = ctx_init(&c, o, r, true);
        if (e < 0)
                goto out;
        if (bpf_eligible(&c, o)) {
                e = bpf_walk(&c, r);
                if (e == 0)
                        goto done;
                if (e == -ENOMEM || o->holders == HOST_HOLDERS_BPF)
                        goto out;
                /* the /proc walk answers; r->bpf_error says why the iterators did not */
        } else if (o->holders == HOST_HOLDERS_BPF) {
                str_setf(&r->bpf_error, "%s", _("BPF iterators are used only on the live /proc, without --save-bundle"));
                e = -EOPNOTSUPP;
                goto out;
        }
        d = host_opendirat(c.proc_fd, ".");
        if (!d) {
                e = host_neg_errno();
                goto out;
        }
        while ((de = readdir(d))) {
                pid_t pid;
                if (!pid_name(de->d_name, &pid))
                        continue;
                if (c.bundle) {
                        const struct host_bundle_proc *bp = host_bundle_proc(c.bundle, pid);
                        if (bp && bp->role == HOST_ROLE_LOOKUP)
                                continue;       /* saved for a lookup, not part of the walk */
                }
                if (host_grow(&items, &items_alloc, r->procs_scanned, sizeof(*items)) < 0) {
                        e = -ENOMEM;
                        goto out;
                }
                items[r->procs_scanned++] = (struct walk_item){ .pid = pid };
        }
        e = walk_all(&c, r, &al, items, r->procs_scanned);
        if (e < 0)
                goto out;
        if (c.bundle) {
                r->procs_scanned = c.bundle->procs_scanned;
                r->holder_source = HOST_SOURCE_BUNDLE;
                /* the bundle's own, taken over */
                r->opaque = c.bundle->opaque;
                r->n_opaque = c.bundle->n_opaque;
                c.bundle->opaque = NULL;
                c.bundle->n_opaque = 0;
        } else if (c.save_dir) {
                record_self(&c, r);
        }
done:
        host_procs_sort(r->holders, r->n_holders);
        host_procs_sort(r->unverified, r->n_unverified);
        e = group_families(&c, r);
        if (e < 0)
                goto out;
        compose_limits(&c, r);
        save_host(&c, r, true);
        *ret = r;
        r = NULL;
        e = 0;
out:
        if (d)
                closedir(d);
        free(items);
        ctx_free(&c);
        host_report_free(r);
        return e;
}

int host_scan_pids(const struct host_opts *o, const pid_t *pids, size_t n, struct host_report **ret)
{
        struct host_ctx c;
        struct report_allocs al = { 0, 0, 0 };
        int e;
        if (o->save_dir && *o->save_dir)
                return -EINVAL;
        struct host_report *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        e = ctx_init(&c, o, r, true);
        if (e < 0)
                goto out;
        if (c.bundle) {
                e = -EINVAL;
                goto out;
        }
        r->holder_source = HOST_SOURCE_OWNERS;
        for (size_t i = 0; i < n; i++) {
                bool seen = pids[i] <= 0;
                for (size_t k = 0; k < i && !seen; k++)
                        seen = pids[k] == pids[i];
                if (seen)
                        continue;
                char name[16];
                snprintf(name, sizeof(name), "%d", (int)pids[i]);
                r->procs_scanned++;
                e = walk_pid(&c, r, &al, pids[i], name);
                if (e < 0)
                        goto out;
        }
        host_procs_sort(r->holders, r->n_holders);
        host_procs_sort(r->unverified, r->n_unverified);
        e = group_families(&c, r);
        if (e < 0)
                goto out;
        compose_limits(&c, r);
        *ret = r;
        r = NULL;
        e = 0;
out:
        ctx_free(&c);
        host_report_free(r);
        return e;
}

int host_proc_lookup(const struct host_opts *o, pid_t pid, struct host_proc *ret)
{
        struct host_ctx c;
        struct host_report facts;
        memset(&facts, 0, sizeof(facts));
        int e = ctx_init(&c, o, &facts, false);
        if (e < 0)
                goto out;
        if (pid <= 0) {
                e = -ESRCH;
                goto out;
        }
        char name[16];
        snprintf(name, sizeof(name), "%d", (int)pid);
        struct host_proc p;
        enum pid_class cls;
        e = inspect_pid(&c, pid, name, true, &p, &cls);
        if (e < 0)
                goto out;
        save_host(&c, &facts, false);
        *ret = p;
out:
        ctx_free(&c);
        host_report_release(&facts);
        return e;
}
