#include "run/demo_run.h"
#include "run/sources.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect/sample.h"
#include "model/ledger.h"
#include "simstate.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/pidfd.h"
#include "util/spawn.h"

static int demo_signal(const struct demo_proc *p, int sig)
{
        if (p->pidfd >= 0)
                return pidfd_signal(p->pidfd, sig);
        return -EBADF; /* never signal by a bare PID: it may have been reused */
}

static void pause_ms(long ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

unsigned long long demo_floor_mib(void)
{
        struct ledger_opts lo;
        ledger_opts_default(&lo);
        uint64_t floor_b = (uint64_t)DEMO_GPU_MIB * 1048576 / 1000 * lo.floor_permille;
        if (floor_b < lo.floor_min_bytes)
                floor_b = lo.floor_min_bytes;
        return (floor_b + 1048575) / 1048576;
}

int demo_host_create(struct demo *d, const char *tmpdir)
{
        d->n_procs = 0;
        if (snprintf(d->dir, sizeof(d->dir), "%s/ghostvram-demo-XXXXXX", tmpdir && tmpdir[0] == '/' ? tmpdir : "/tmp") >=
            (int)sizeof(d->dir))
                snprintf(d->dir, sizeof(d->dir), "/tmp/ghostvram-demo-XXXXXX");
        if (!mkdtemp(d->dir)) {
                int e = -errno;
                d->dir[0] = '\0';
                return e;
        }
        const char *const args[] = { "ghostvram", "sim", "init", d->dir, "--gpus", "2", NULL };
        struct buf out = BUF_INIT(4096);
        int r = spawn_self(d->self, args, &out, false);
        buf_free(&out);
        return r == 0 ? 0 : -EIO;
}

int demo_job_start(struct demo *d, unsigned mib, unsigned workers)
{
        char mibs[16], wks[16];
        snprintf(mibs, sizeof(mibs), "%u", mib);
        snprintf(wks, sizeof(wks), "%u", workers);
        const char *const args[] = { "ghostvram", "sim", "run", d->dir, "--gpu", "0", "--mib", mibs, "--workers", wks, NULL };
        /* every process it starts is ended through its pidfd: without pidfd_open, none is started */
        int self = pidfd_open_fd(getpid());
        if (self < 0)
                return self == -ENOSYS ? -ENOSYS : self;
        close(self);
        struct buf out = BUF_INIT(4096);
        if (spawn_self(d->self, args, &out, false) != 0) {
                buf_free(&out);
                return -EIO;
        }
        /* "owner PID" / "worker PID" lines */
        char *save = NULL;
        for (char *line = out.data ? strtok_r(out.data, "\n", &save) : NULL; line && d->n_procs < DEMO_MAX_PROCS;
             line = strtok_r(NULL, "\n", &save)) {
                char role[16];
                int pid;
                if (sscanf(line, "%15s %d", role, &pid) != 2 || pid <= 0)
                        continue;
                struct demo_proc *p = &d->procs[d->n_procs++];
                snprintf(p->role, sizeof(p->role), "%s", role);
                p->pid = pid;
                p->pidfd = pidfd_open_fd(pid);
        }
        buf_free(&out);
        return d->n_procs && !strcmp(d->procs[0].role, "owner") ? 0 : -ECHILD;
}

int demo_kill_owner(struct demo *d)
{
        int r = demo_signal(&d->procs[0], SIGKILL);
        if (r < 0)
                return r;
        for (int i = 0; i < 50 && kill(d->procs[0].pid, 0) == 0; i++)
                pause_ms(100); /* wait until it is gone (its parent, init, reaps it) */
        return 0;
}

int demo_finish(struct demo *d, bool keep)
{
        for (size_t i = 0; i < d->n_procs && !keep; i++)
                demo_signal(&d->procs[i], SIGKILL);
        /* wait (bounded) until they are gone: a pidfd becomes readable when its process exits */
        for (size_t i = 0; i < d->n_procs; i++) {
                if (d->procs[i].pidfd < 0)
                        continue;
                if (!keep) {
                        struct pollfd pf = { .fd = d->procs[i].pidfd, .events = POLLIN };
                        while (poll(&pf, 1, 1000) < 0 && errno == EINTR)
                                ;
                }
                close(d->procs[i].pidfd);
                d->procs[i].pidfd = -1;
        }
        if (keep || !d->dir[0])
                return 0;
        /* in this process (no fork of a threaded process): depth first, no symlink followed.
         * The simulated driver's teardown watchers record the release of the contexts as the
         * jobs die, and may write into the host meanwhile: again until it is gone (2 s at most) */
        int gone = -1;
        for (int i = 0; i < 40 && (gone = remove_tree(d->dir)) < 0; i++)
                pause_ms(50);
        return gone;
}

/* A stop signal seen (demo_signals_take's handler). */
static volatile sig_atomic_t demo_stop;

static void on_demo_stop(int sig)
{
        demo_stop = sig;
}

void demo_signals_take(struct demo_signals *s)
{
        struct sigaction sa = { .sa_handler = on_demo_stop }, ign = { .sa_handler = SIG_IGN };
        sigemptyset(&sa.sa_mask);
        sigemptyset(&ign.sa_mask);
        sigaction(SIGINT, &sa, &s->old_int);
        sigaction(SIGTERM, &sa, &s->old_term);
        sigaction(SIGHUP, &sa, &s->old_hup);
        sigaction(SIGPIPE, &ign, &s->old_pipe);
}

void demo_signals_restore(const struct demo_signals *s)
{
        sigaction(SIGINT, &s->old_int, NULL);
        sigaction(SIGTERM, &s->old_term, NULL);
        sigaction(SIGHUP, &s->old_hup, NULL);
        sigaction(SIGPIPE, &s->old_pipe, NULL);
}

int demo_stop_signal(void)
{
        return (int)demo_stop;
}

bool demo_reader_gone(int fd)
{
        struct pollfd pf = { .fd = fd, .events = 0 };
        return poll(&pf, 1, 0) == 1 && (pf.revents & (POLLERR | POLLHUP));
}

/* ---- nvidia-smi's view --------------------------------------------------------------------- */

int demo_smi_facts(const char *dir, struct facts **ret, char *err, size_t len)
{
        setenv("GHOSTVRAM_SIM", dir, 1);
        struct sources *src = malloc(sizeof(*src));
        if (!src)
                return -ENOMEM;
        sources_init(src);
        int r = sources_open(src, dir, err, len);
        if (r == 0) {
                struct facts_opts fo = { .simulated = true };
                sources_gpu_opts(src, &fo.gpu);
                sources_host_opts(src, &fo.host);
                r = facts_collect(&fo, ret) < 0 ? -ENOMEM : 0;
        }
        free(src);
        return r;
}
