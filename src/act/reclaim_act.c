#define _GNU_SOURCE 1 /* O_CLOEXEC friends, syscall numbers */
/* reclaim_act: signals through pidfds after a start-time re-check, waiting on the pidfds,
 * memory sampling, the host lock and whole-cgroup kills. See reclaim_act.h. */
#include "act/reclaim_act.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/deadline.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/pidfd.h"

#define MAX_CGROUP_PIDS (1u << 20)
#define MAX_CGROUP_DEPTH 32

static const char *const result_names[RECLAIM_RES_COUNT] = {
        [RECLAIM_RES_PENDING] = "pending",
        [RECLAIM_RES_EXITED] = "exited",
        [RECLAIM_RES_TERMINATED] = "terminated",
        [RECLAIM_RES_KILLED] = "killed",
        [RECLAIM_RES_STUCK_IN_D] = "stuck-in-D",
        [RECLAIM_RES_SURVIVED] = "survived",
        [RECLAIM_RES_GONE] = "gone-before-signal",
        [RECLAIM_RES_PID_REUSED] = "pid-reused",
        [RECLAIM_RES_NOT_PERMITTED] = "not-permitted",
        [RECLAIM_RES_ERROR] = "error",
        [RECLAIM_RES_LEFT] = "left",
};

const char *reclaim_result_name(enum reclaim_result r)
{
        return (unsigned)r < RECLAIM_RES_COUNT ? result_names[r] : "unknown";
}

bool reclaim_result_ended(enum reclaim_result r)
{
        /* a reused PID means the target itself is gone */
        return r == RECLAIM_RES_EXITED || r == RECLAIM_RES_TERMINATED || r == RECLAIM_RES_KILLED ||
               r == RECLAIM_RES_GONE || r == RECLAIM_RES_PID_REUSED;
}

/* ---- the real system -------------------------------------------------------------------------- */

static int real_pidfd_open(void *ctx, pid_t pid)
{
        (void)ctx;
        return pidfd_open_fd(pid);
}

static int real_read_stat(void *ctx, pid_t pid, uint64_t *ret_start, char *ret_state)
{
        const char *proc_root = ctx ? ctx : "/proc";
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s/%d/stat", proc_root, (int)pid);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        char *buf = NULL;
        size_t len = 0;
        int r = read_file_at(AT_FDCWD, path, 64 * 1024, &buf, &len);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        struct host_proc p;
        memset(&p, 0, sizeof(p));
        r = host_parse_stat(buf, len, &p);
        free(buf);
        if (r == 0) {
                *ret_start = p.start_ticks;
                *ret_state = p.state;
        }
        free(p.comm);
        return r;
}

static int real_send_signal(void *ctx, int pidfd, int sig)
{
        (void)ctx;
        return pidfd_signal(pidfd, sig);
}

static int real_wait_exit(void *ctx, const int *pidfds, size_t n, bool *exited, unsigned timeout_ms)
{
        (void)ctx;
        struct pollfd pfd[256];
        size_t m = n < 256 ? n : 256;
        for (size_t i = 0; i < m; i++)
                pfd[i] = (struct pollfd){ .fd = pidfds[i], .events = POLLIN };
        int r = poll(pfd, (nfds_t)m, (int)timeout_ms);
        if (r < 0)
                return errno == EINTR ? 0 : -errno;
        int got = 0;
        for (size_t i = 0; i < m; i++)
                if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                        exited[i] = true;
                        got++;
                }
        return got;
}

static uint64_t real_now_ms(void *ctx)
{
        (void)ctx;
        return monotonic_ms();
}

static void real_close(void *ctx, int fd)
{
        (void)ctx;
        if (fd >= 0)
                close(fd);
}

void reclaim_sys_real(struct reclaim_sys *s, const char *proc_root)
{
        memset(s, 0, sizeof(*s));
        s->ctx = (void *)(proc_root ? proc_root : "/proc");
        s->pidfd_open = real_pidfd_open;
        s->read_stat = real_read_stat;
        s->send_signal = real_send_signal;
        s->wait_exit = real_wait_exit;
        s->now_ms = real_now_ms;
        s->close_fd = real_close;
}

int reclaim_pidfd_supported(const struct reclaim_sys *s)
{
        int fd = s->pidfd_open(s->ctx, getpid());
        if (fd == -ENOSYS)
                return -ENOSYS;
        if (fd >= 0)
                s->close_fd(s->ctx, fd);
        return 0;
}

/* *d gets fmt (an English sentence marked N_()) in the reader's language; *en (when en is not
 * NULL) the English one where the two differ, else NULL: syslog lines stay English. */
static void pair_vsetf(char **d, char **en, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
static void pair_vsetf(char **d, char **en, const char *fmt, va_list ap)
{
        const char *tr = _(fmt);
        va_list aq;
        va_copy(aq, ap);
        str_vsetf(d, tr, ap);
        if (en && strcmp(tr, fmt) != 0)
                str_vsetf(en, fmt, aq);
        else if (en)
                str_clear(en);
        va_end(aq);
}

static void pair_setf(char **d, char **en, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pair_setf(char **d, char **en, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        pair_vsetf(d, en, fmt, ap);
        va_end(ap);
}

void reclaim_action_detailf(struct reclaim_action *a, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        pair_vsetf(&a->detail, &a->detail_en, fmt, ap);
        va_end(ap);
}

static int verify_start(const struct reclaim_sys *s, pid_t pid, uint64_t expected, char **detail, char **detail_en);

int reclaim_verify_start(const struct reclaim_sys *s, pid_t pid, uint64_t expected, char **detail)
{
        return verify_start(s, pid, expected, detail, NULL);
}

static int verify_start(const struct reclaim_sys *s, pid_t pid, uint64_t expected, char **detail, char **detail_en)
{
        uint64_t start = 0;
        char state = '?';
        int r = s->read_stat(s->ctx, pid, &start, &state);
        if (r == -ESRCH || r == -ENOENT) {
                pair_setf(detail, detail_en, N_("no process %d any more"), (int)pid);
                return -ESRCH;
        }
        if (r < 0) {
                pair_setf(detail, detail_en, N_("cannot read its start time: %s"), strerror(-r));
                return r;
        }
        if (start != expected) {
                pair_setf(detail, detail_en, N_("PID %d started at tick %llu, the scan's process at tick %llu: another process"),
                         (int)pid, (unsigned long long)start, (unsigned long long)expected);
                return -ESTALE;
        }
        if (state == 'Z' || state == 'X') {
                pair_setf(detail, detail_en, N_("already dead (zombie)"));
                return -ESRCH;
        }
        return 0;
}

/* ---- the act ------------------------------------------------------------------------------------ */

struct slot {
        int fd;
        bool signalled;
};

static void emit(const struct reclaim_act_opts *o, const struct reclaim_action *a, enum reclaim_event ev)
{
        if (o->log)
                o->log(o->log_ctx, a, ev);
}

static void resolve(const struct reclaim_act_opts *o, struct reclaim_action *a, struct slot *sl,
                    enum reclaim_result r, double seconds)
{
        a->result = r;
        a->seconds = seconds;
        if (sl->fd >= 0) {
                o->sys->close_fd(o->sys->ctx, sl->fd);
                sl->fd = -1;
        }
        emit(o, a, RECLAIM_EV_RESULT);
}

static void send_one(const struct reclaim_act_opts *o, struct reclaim_action *a, struct slot *sl, int sig,
                     double t)
{
        int r = o->sys->send_signal(o->sys->ctx, sl->fd, sig);
        if (r == 0) {
                if (a->n_signals < 2)
                        a->signals[a->n_signals++] = sig;
                sl->signalled = true;
                emit(o, a, RECLAIM_EV_SIGNAL);
                return;
        }
        if (r == -ESRCH) {
                /* it ended between our look and the signal: by itself, or from an earlier one */
                resolve(o, a, sl, sl->signalled ? (a->n_signals > 1 || a->signals[0] == SIGKILL ? RECLAIM_RES_KILLED
                                                                                                  : RECLAIM_RES_TERMINATED)
                                                : RECLAIM_RES_EXITED,
                        t);
                return;
        }
        reclaim_action_detailf(a, sig == SIGKILL ? "SIGKILL: %s" : N_("signal: %s"), strerror(-r));
        resolve(o, a, sl, r == -EPERM ? RECLAIM_RES_NOT_PERMITTED : RECLAIM_RES_ERROR, t);
}

void reclaim_actions_free(struct reclaim_action *a, size_t n)
{
        for (size_t i = 0; a && i < n; i++) {
                free(a[i].detail);
                free(a[i].detail_en);
        }
        free(a);
}

static int stopped(const struct reclaim_act_opts *o)
{
        return o->stop ? o->stop() : 0;
}

/* A stop came: every target not over is left as it is (no SIGKILL follows the first signal),
 * after a last look whether it ended meanwhile. */
static void leave_rest(const struct reclaim_act_opts *o, struct reclaim_action *acts, struct slot *sl, size_t n,
                       double t)
{
        const struct reclaim_sys *s = o->sys;
        for (size_t i = 0; i < n; i++) {
                struct reclaim_action *a = &acts[i];
                if (a->result != RECLAIM_RES_PENDING)
                        continue;
                bool gone = false;
                if (sl[i].fd >= 0)
                        s->wait_exit(s->ctx, &sl[i].fd, 1, &gone, 0);
                if (gone && sl[i].signalled) {
                        bool by_kill = a->signals[a->n_signals - 1] == SIGKILL;
                        resolve(o, a, &sl[i], by_kill ? RECLAIM_RES_KILLED : RECLAIM_RES_TERMINATED, t);
                        continue;
                }
                if (gone) {
                        reclaim_action_detailf(a, N_("ended by itself before the signal"));
                        resolve(o, a, &sl[i], RECLAIM_RES_EXITED, t);
                        continue;
                }
                if (sl[i].signalled)
                        reclaim_action_detailf(a, N_("still running when reclaim was stopped (no further signal)"));
                else
                        reclaim_action_detailf(a, N_("not signalled: reclaim was stopped first"));
                resolve(o, a, &sl[i], RECLAIM_RES_LEFT, t);
        }
}

/* One run of reclaim_act_run: the targets' actions and pidfds, and the scratch of the wait. */
struct act_run {
        const struct reclaim_plan *p;
        const struct reclaim_act_opts *o;
        const struct reclaim_sys *s;
        size_t n;
        struct reclaim_action *acts;
        struct slot *sl;
        int *fds;               /* the pidfds still open, and their targets' indexes */
        size_t *idx;
        bool *ex;
        uint64_t t0;            /* the first signal */
        bool killing;           /* SIGKILL was sent (or was the signal) */
        unsigned poll_ms;
};

/* 1. open and re-check every target before any signal */
static void open_all(struct act_run *r)
{
        const struct reclaim_act_opts *o = r->o;
        const struct reclaim_sys *s = r->s;
        for (size_t i = 0; i < r->n && !stopped(o); i++) {
                struct reclaim_action *a = &r->acts[i];
                int fd = s->pidfd_open(s->ctx, a->pid);
                if (fd < 0) {
                        if (fd == -ESRCH) {
                                reclaim_action_detailf(a, N_("no process %d any more"), (int)a->pid);
                                resolve(o, a, &r->sl[i], RECLAIM_RES_GONE, 0);
                        } else {
                                reclaim_action_detailf(a, "pidfd_open: %s", strerror(-fd));
                                resolve(o, a, &r->sl[i], RECLAIM_RES_ERROR, 0);
                        }
                        continue;
                }
                r->sl[i].fd = fd;
                int v = verify_start(s, a->pid, r->p->targets[i].start_ticks, &a->detail, &a->detail_en);
                if (v == -ESTALE)
                        resolve(o, a, &r->sl[i], RECLAIM_RES_PID_REUSED, 0);
                else if (v == -ESRCH)
                        resolve(o, a, &r->sl[i], RECLAIM_RES_GONE, 0);
                else if (v < 0)
                        resolve(o, a, &r->sl[i], RECLAIM_RES_ERROR, 0);
        }
}

/* 2. the first signal, through the pidfds */
static void signal_all(struct act_run *r)
{
        const struct reclaim_act_opts *o = r->o;
        const struct reclaim_sys *s = r->s;
        r->t0 = s->now_ms(s->ctx);
        if (o->tick)
                o->tick(o->tick_ctx, 0);
        r->killing = o->signal == SIGKILL;
        for (size_t i = 0; i < r->n; i++) {
                if (r->sl[i].fd < 0)
                        continue;
                if (stopped(o))
                        break; /* the rest are left, unsignalled */
                bool gone = false;
                s->wait_exit(s->ctx, &r->sl[i].fd, 1, &gone, 0);
                if (gone) {
                        reclaim_action_detailf(&r->acts[i], N_("ended by itself before the signal"));
                        resolve(o, &r->acts[i], &r->sl[i], RECLAIM_RES_EXITED, 0);
                        continue;
                }
                send_one(o, &r->acts[i], &r->sl[i], o->signal, 0);
        }
}

/* The timeout: each of the m targets still open survived, is stuck in D, or ended just now. */
static void resolve_at_timeout(struct act_run *r, size_t m, uint64_t el)
{
        for (size_t k = 0; k < m; k++) {
                struct reclaim_action *a = &r->acts[r->idx[k]];
                struct slot *sl = &r->sl[r->idx[k]];
                uint64_t st;
                char state = '?';
                int rs = r->s->read_stat(r->s->ctx, a->pid, &st, &state);
                if (rs == 0 && state != 'Z' && state != 'X') {
                        a->state = state;
                        if (r->killing)
                                reclaim_action_detailf(a,
                                         state == 'D' ? N_("still in D state after SIGKILL: it ends when its driver call returns")
                                                      : N_("still there after SIGKILL (state %c)"),
                                         state);
                        else
                                reclaim_action_detailf(a, N_("still there after its signal (state %c); no SIGKILL was sent (--grace none)"),
                                                       state);
                        resolve(r->o, a, sl, state == 'D' ? RECLAIM_RES_STUCK_IN_D : RECLAIM_RES_SURVIVED, (double)el / 1000.0);
                } else {
                        resolve(r->o, a, sl, r->killing ? RECLAIM_RES_KILLED : RECLAIM_RES_TERMINATED, (double)el / 1000.0);
                }
        }
}

/* One wait on the m open pidfds, until the next deadline (grace or timeout) or poll_ms; those
 * that ended are resolved. */
static void wait_some(struct act_run *r, size_t m, uint64_t el)
{
        const struct reclaim_act_opts *o = r->o;
        const struct reclaim_sys *s = r->s;
        uint64_t next = r->killing ? o->timeout_ms : (o->grace_ms < o->timeout_ms ? o->grace_ms : o->timeout_ms);
        uint64_t wait = next - el;
        if (wait > r->poll_ms)
                wait = r->poll_ms;
        memset(r->ex, 0, m * sizeof(*r->ex));
        int got = s->wait_exit(s->ctx, r->fds, m, r->ex, (unsigned)wait);
        double t = (double)(s->now_ms(s->ctx) - r->t0) / 1000.0;
        for (size_t k = 0; got > 0 && k < m; k++) {
                if (!r->ex[k])
                        continue;
                struct reclaim_action *a = &r->acts[r->idx[k]];
                bool by_kill = a->n_signals && a->signals[a->n_signals - 1] == SIGKILL;
                resolve(o, a, &r->sl[r->idx[k]], by_kill ? RECLAIM_RES_KILLED : RECLAIM_RES_TERMINATED, t);
        }
        if (o->tick)
                o->tick(o->tick_ctx, s->now_ms(s->ctx) - r->t0);
}

/* 3. wait on the pidfds; SIGKILL after the grace period; give up at the timeout */
static void wait_all(struct act_run *r)
{
        const struct reclaim_act_opts *o = r->o;
        for (;;) {
                size_t m = 0;
                for (size_t i = 0; i < r->n; i++)
                        if (r->sl[i].fd >= 0) {
                                r->fds[m] = r->sl[i].fd;
                                r->idx[m++] = i;
                        }
                if (m == 0)
                        break;
                uint64_t el = r->s->now_ms(r->s->ctx) - r->t0;
                if (stopped(o)) {
                        leave_rest(o, r->acts, r->sl, r->n, (double)el / 1000.0);
                        break;
                }
                if (!r->killing && o->grace_ms != RECLAIM_GRACE_NONE && el >= o->grace_ms) {
                        r->killing = true;
                        for (size_t k = 0; k < m; k++)
                                send_one(o, &r->acts[r->idx[k]], &r->sl[r->idx[k]], SIGKILL, (double)el / 1000.0);
                        continue;
                }
                if (el >= o->timeout_ms) {
                        resolve_at_timeout(r, m, el);
                        break;
                }
                wait_some(r, m, el);
        }
}

static int act_run_init(struct act_run *r, const struct reclaim_plan *p, const struct reclaim_act_opts *o)
{
        size_t n = p->n_targets;
        *r = (struct act_run){ .p = p, .o = o, .s = o->sys, .n = n, .poll_ms = o->poll_ms ? o->poll_ms : 50 };
        r->acts = calloc(n ? n : 1, sizeof(*r->acts));
        r->sl = calloc(n ? n : 1, sizeof(*r->sl));
        r->fds = calloc(n ? n : 1, sizeof(*r->fds));
        r->idx = calloc(n ? n : 1, sizeof(*r->idx));
        r->ex = calloc(n ? n : 1, sizeof(*r->ex));
        if (!r->acts || !r->sl || !r->fds || !r->idx || !r->ex)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const struct reclaim_target *t = &p->targets[i];
                r->acts[i].pid = t->pid;
                snprintf(r->acts[i].comm, sizeof(r->acts[i].comm), "%s", t->comm);
                r->acts[i].gpu = t->gpu;
                r->acts[i].state = t->state;
                r->sl[i].fd = -1;
        }
        return 0;
}

static void act_run_free(struct act_run *r)
{
        for (size_t i = 0; r->sl && i < r->n; i++)
                if (r->sl[i].fd >= 0)
                        r->s->close_fd(r->s->ctx, r->sl[i].fd);
        reclaim_actions_free(r->acts, r->n);
        free(r->sl);
        free(r->fds);
        free(r->idx);
        free(r->ex);
}

int reclaim_act_run(const struct reclaim_plan *p, const struct reclaim_act_opts *o, struct reclaim_action **ret,
                    size_t *ret_n)
{
        struct act_run r;
        int e = act_run_init(&r, p, o);
        if (e == 0 && reclaim_pidfd_supported(o->sys) < 0)
                e = -ENOSYS;
        if (e < 0) {
                act_run_free(&r);
                return e;
        }
        if (o->pause)
                o->pause(o->pause_ctx, "plan");
        open_all(&r);
        if (o->pause)
                o->pause(o->pause_ctx, "open");
        if (stopped(o)) {
                leave_rest(o, r.acts, r.sl, r.n, 0);
        } else {
                signal_all(&r);
                wait_all(&r);
        }
        *ret = r.acts;
        *ret_n = r.n;
        r.acts = NULL;
        act_run_free(&r);
        return 0;
}

/* ---- memory recovery --------------------------------------------------------------------------- */

void recovery_init(struct recovery_gpu *g, unsigned index, uint64_t expected, uint64_t noise_floor)
{
        memset(g, 0, sizeof(*g));
        g->index = index;
        g->expected = expected;
        uint64_t tenth = expected / 10;
        g->tolerance = noise_floor && noise_floor < tenth ? noise_floor : tenth;
}

void recovery_observe(struct recovery_gpu *g, uint64_t used, double t)
{
        if (t < 0) {
                g->before = used;
                g->before_known = true;
                return;
        }
        g->after = used;
        g->after_known = true;
        g->samples++;
        if (!g->recovered && g->expected > 0 && g->before_known && used + g->expected <= g->before + g->tolerance) {
                g->recovered = true;
                g->recovery_s = t;
        }
}

bool recovery_all_done(const struct recovery_gpu *g, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (g[i].expected > 0 && !g[i].recovered)
                        return false;
        return true;
}

int recovery_sample(const struct gpu_opts *o, struct recovery_gpu *g, size_t n, uint64_t t0_ms)
{
        struct gpu_opts mo = *o;
        mo.memory_only = true;
        struct gpu_report *rep = NULL;
        int r = gpu_collect(&mo, &rep);
        if (r < 0)
                return r;
        int seen = 0;
        double t = t0_ms ? (double)(monotonic_ms() - t0_ms) / 1000.0 : -1;
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < rep->n_gpus; k++)
                        if (rep->gpus[k].index == g[i].index && rep->gpus[k].memory_known) {
                                recovery_observe(&g[i], rep->gpus[k].used_bytes, t);
                                seen++;
                        }
        gpu_report_free(rep);
        return seen || n == 0 ? 0 : -ENODEV;
}

/* ---- the lock ----------------------------------------------------------------------------------- */

/* A directory fit to hold the lock: a real directory (not a symlink), owned by us or root, that
 * no one else can write into (a world-writable /tmp lets anyone plant a symlink or a file). */
static int safe_lock_dir(const char *dir)
{
        struct stat st;
        if (lstat(dir, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (st.st_uid != geteuid() && st.st_uid != 0)
                return -EPERM;
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return -EPERM;
        return 0;
}

static int try_lock(const char *dir, char *path, size_t pathlen, pid_t *ret_holder)
{
        if (snprintf(path, pathlen, "%s/reclaim.lock", dir) >= (int)pathlen)
                return -ENAMETOOLONG;
        int r = safe_lock_dir(dir);
        if (r < 0)
                return r;
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0644);
        if (fd < 0)
                return -errno;
        /* never truncate something that is not our own plain file */
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid()) {
                close(fd);
                return -EPERM;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                int e = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
                char buf[32];
                ssize_t got = pread(fd, buf, sizeof(buf) - 1, 0);
                unsigned holder = 0;
                if (got > 0) {
                        buf[got] = '\0';
                        buf[strcspn(buf, "\n")] = '\0';
                        if (parse_uint_range(buf, 1, INT_MAX, &holder) < 0)
                                holder = 0;
                }
                *ret_holder = (pid_t)holder;
                close(fd);
                return e;
        }
        char pid[24];
        int len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
        if (ftruncate(fd, 0) == 0)
                (void)!pwrite(fd, pid, (size_t)len, 0);
        return fd;
}

int reclaim_lock_at(const char *dir, char *path, size_t pathlen, pid_t *ret_holder)
{
        *ret_holder = 0;
        return try_lock(dir, path, pathlen, ret_holder);
}

int reclaim_lock(const char *sim_dir, char *path, size_t pathlen, pid_t *ret_holder)
{
        *ret_holder = 0;
        if (sim_dir)
                return try_lock(sim_dir, path, pathlen, ret_holder);
        /* root: /run/ghostvram only (never a world-writable directory such as /tmp) */
        if (mkdir("/run/ghostvram", 0755) < 0 && errno != EEXIST && geteuid() == 0) {
                int e = -errno;
                snprintf(path, pathlen, "/run/ghostvram/reclaim.lock");
                return e;
        }
        int r = try_lock("/run/ghostvram", path, pathlen, ret_holder);
        if (r >= 0 || r == -EWOULDBLOCK || geteuid() == 0)
                return r;
        /* not root: the user's own runtime directory (it only ever signals the user's processes) */
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        if (!xdg || xdg[0] != '/')
                return r;
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", xdg);
        r = try_lock(dir, path, pathlen, ret_holder);
        return r;
}

/* ---- a whole cgroup ---------------------------------------------------------------------------- */

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape_mount(char *s)
{
        char *w = s;
        for (char *r = s; *r; r++) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
                        *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
                        r += 3;
                } else {
                        *w++ = *r;
                }
        }
        *w = '\0';
}

static int cgroup2_mount(const char *proc_root, char *out, size_t outlen)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/self/mountinfo", proc_root ? proc_root : "/proc");
        char *buf = NULL;
        size_t len = 0;
        int r = read_file_at(AT_FDCWD, path, 4 << 20, &buf, &len);
        if (r < 0)
                return r;
        r = -ENOTSUP;
        char *save = NULL;
        for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
                char *fields[6];
                char *fs = NULL, *tok, *s2 = NULL;
                unsigned nf = 0;
                bool dash = false;
                for (tok = strtok_r(line, " ", &s2); tok; tok = strtok_r(NULL, " ", &s2)) {
                        if (dash) {
                                fs = tok;
                                break;
                        }
                        if (strcmp(tok, "-") == 0)
                                dash = true;
                        else if (nf < 6)
                                fields[nf++] = tok;
                }
                if (!fs || nf < 5 || strcmp(fs, "cgroup2") != 0)
                        continue;
                unescape_mount(fields[4]);
                snprintf(out, outlen, "%s", fields[4]);
                r = 0;
                break;
        }
        free(buf);
        return r;
}

int reclaim_cgroup_resolve(const char *proc_root, const char *arg, char *fs, size_t fslen, char *rel, size_t rellen)
{
        char mnt[PATH_MAX];
        if (!arg || !*arg || strstr(arg, "/../") || strncmp(arg, "../", 3) == 0 ||
            (strlen(arg) >= 3 && strcmp(arg + strlen(arg) - 3, "/..") == 0) || strcmp(arg, "..") == 0)
                return -EINVAL;
        int r = cgroup2_mount(proc_root, mnt, sizeof(mnt));
        if (r < 0)
                return r;
        size_t ml = strlen(mnt);
        const char *relp;
        int n;
        if (strncmp(arg, mnt, ml) == 0 && (arg[ml] == '/' || arg[ml] == '\0')) {
                relp = arg + ml;
                n = snprintf(fs, fslen, "%s", arg);
        } else {
                relp = arg;
                n = snprintf(fs, fslen, "%s%s%s", mnt, arg[0] == '/' ? "" : "/", arg);
        }
        if (n < 0 || (size_t)n >= fslen)
                return -ENAMETOOLONG;
        n = snprintf(rel, rellen, "%s%s", relp[0] == '/' ? "" : "/", relp);
        if (n < 0 || (size_t)n >= rellen)
                return -ENAMETOOLONG;
        /* no trailing slashes; the root cgroup is the whole host */
        size_t rl = strlen(rel);
        while (rl > 1 && rel[rl - 1] == '/')
                rel[--rl] = '\0';
        if (strcmp(rel, "/") == 0)
                return -EINVAL;
        char procs[PATH_MAX];
        n = snprintf(procs, sizeof(procs), "%s/cgroup.procs", fs);
        if (n < 0 || (size_t)n >= sizeof(procs))
                return -ENAMETOOLONG;
        struct stat st;
        if (stat(fs, &st) < 0 || !S_ISDIR(st.st_mode) || access(procs, R_OK) < 0)
                return -ENOENT;
        return 0;
}

static int add_pid(pid_t **v, size_t *n, size_t *alloc, pid_t pid)
{
        for (size_t i = 0; i < *n; i++)
                if ((*v)[i] == pid)
                        return 0;
        if (*n >= MAX_CGROUP_PIDS)
                return -E2BIG;
        if (*n == *alloc) {
                size_t na = *alloc ? *alloc * 2 : 64;
                pid_t *nv = realloc(*v, na * sizeof(*nv));
                if (!nv)
                        return -ENOMEM;
                *v = nv;
                *alloc = na;
        }
        (*v)[(*n)++] = pid;
        return 0;
}

static int cgroup_walk(const char *dir, unsigned depth, pid_t **v, size_t *n, size_t *alloc)
{
        char path[PATH_MAX];
        int r = snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
        if (r < 0 || (size_t)r >= sizeof(path))
                return -ENAMETOOLONG;
        char *buf = NULL;
        size_t len = 0;
        r = read_file_at(AT_FDCWD, path, 16u << 20, &buf, &len);
        if (r < 0)
                return r == -ENOENT ? 0 : r; /* removed meanwhile */
        char *save = NULL;
        for (char *line = strtok_r(buf, "\n", &save); line && r >= 0; line = strtok_r(NULL, "\n", &save)) {
                unsigned pid;
                if (parse_uint_range(line, 0, INT_MAX, &pid) < 0 || pid == 0)
                        continue; /* 0: a process outside our PID namespace */
                r = add_pid(v, n, alloc, (pid_t)pid);
        }
        free(buf);
        if (r < 0)
                return r;
        if (depth >= MAX_CGROUP_DEPTH)
                return 0;
        DIR *d = opendir(dir);
        if (!d)
                return 0;
        struct dirent *de;
        while (r >= 0 && (de = readdir(d))) {
                if (de->d_name[0] == '.' || de->d_type != DT_DIR)
                        continue;
                char sub[PATH_MAX];
                int m = snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
                if (m < 0 || (size_t)m >= sizeof(sub))
                        continue;
                r = cgroup_walk(sub, depth + 1, v, n, alloc);
        }
        closedir(d);
        return r < 0 ? r : 0;
}

int reclaim_cgroup_pids(const char *fs, pid_t **ret, size_t *ret_n)
{
        pid_t *v = NULL;
        size_t n = 0, alloc = 0;
        int r = cgroup_walk(fs, 0, &v, &n, &alloc);
        if (r < 0) {
                free(v);
                return r;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

/* Is pid (through its /proc entry) in cgroup rel or below? The v2 line "0::PATH". */
static bool pid_in_cgroup(const char *proc_root, pid_t pid, const char *rel)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%d/cgroup", proc_root, (int)pid);
        char *buf = NULL;
        size_t len = 0;
        if (read_file_at(AT_FDCWD, path, 64 * 1024, &buf, &len) < 0)
                return false;
        bool in = false;
        size_t rl = strlen(rel);
        char *save = NULL;
        for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                if (strncmp(line, "0::", 3) == 0) {
                        const char *p = line + 3;
                        in = strncmp(p, rel, rl) == 0 && (p[rl] == '\0' || p[rl] == '/');
                }
        free(buf);
        return in;
}

static void sleep_ms(unsigned ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int reclaim_cgroup_kill(const char *fs, const char *rel, const struct reclaim_sys *s, unsigned timeout_ms,
                        void (*tick)(void *ctx, uint64_t t_ms), void *tick_ctx, int (*stop)(void),
                        struct reclaim_cgroup_result *ret)
{
        memset(ret, 0, sizeof(*ret));
        const char *proc_root = s->ctx ? s->ctx : "/proc";
        uint64_t t0 = s->now_ms(s->ctx);
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s/cgroup.kill", fs);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        if (tick)
                tick(tick_ctx, 0); /* the "before" sample */
        int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
                ret->used_kill_file = write(fd, "1", 1) == 1;
                close(fd);
        }
        if (!ret->used_kill_file && reclaim_pidfd_supported(s) < 0)
                return -ENOSYS;
        for (;;) {
                pid_t *pids = NULL;
                size_t np = 0;
                int r = reclaim_cgroup_pids(fs, &pids, &np);
                if (r < 0)
                        return r;
                uint64_t el = s->now_ms(s->ctx) - t0;
                ret->remaining = np;
                ret->seconds = (double)el / 1000.0;
                ret->stopped = stop ? stop() : 0;
                if (np == 0 || el >= timeout_ms || ret->stopped) {
                        free(pids);
                        break;
                }
                if (!ret->used_kill_file) {
                        for (size_t i = 0; i < np; i++) {
                                int pfd = s->pidfd_open(s->ctx, pids[i]);
                                if (pfd < 0)
                                        continue;
                                /* the pidfd pins the process: is it still the cgroup's? */
                                if (pid_in_cgroup(proc_root, pids[i], rel))
                                        s->send_signal(s->ctx, pfd, SIGKILL);
                                s->close_fd(s->ctx, pfd);
                        }
                        ret->rounds++;
                }
                free(pids);
                if (tick)
                        tick(tick_ctx, el);
                sleep_ms(20);
        }
        return 0;
}

/* ---- the signals reclaim accepts ---------------------------------------------------------------- */

static const struct { int sig; const char *name; } signals[] = {
        { SIGHUP, "HUP" }, { SIGINT, "INT" }, { SIGQUIT, "QUIT" }, { SIGUSR1, "USR1" },
        { SIGUSR2, "USR2" }, { SIGTERM, "TERM" }, { SIGKILL, "KILL" },
};

const char *reclaim_signal_name(int sig)
{
        for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
                if (signals[i].sig == sig)
                        return signals[i].name;
        return NULL;
}

int reclaim_signal_parse(const char *s, int *ret)
{
        if (!s)
                return -EINVAL;
        const char *n = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
        for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
                if (strcasecmp(n, signals[i].name) == 0) {
                        *ret = signals[i].sig;
                        return 0;
                }
        unsigned v;
        if (parse_uint_range(s, 1, 64, &v) == 0 && reclaim_signal_name((int)v)) {
                *ret = (int)v;
                return 0;
        }
        return -EINVAL;
}
