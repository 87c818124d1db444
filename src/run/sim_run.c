/* sim_run: `ghostvram sim`'s use cases (run/sim_run.h). */
#define _GNU_SOURCE 1 /* close_range */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/sim_run.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/spawn.h"

/* ---- init --------------------------------------------------------------------------------- */

int sim_init_target(const char *dir, unsigned *ret_mode)
{
        struct stat st;
        char real[PATH_MAX], conf[PATH_MAX];
        if (stat(dir, &st) < 0)
                return 0; /* created (or the error said) by sim_init_dir */
        if (!S_ISDIR(st.st_mode)) {
                *ret_mode = st.st_mode;
                return -ENOTDIR;
        }
        if (realpath(dir, real) && strcmp(real, "/") == 0)
                return -EPERM;
        if (snprintf(conf, sizeof(conf), "%s/sim.conf", dir) < (int)sizeof(conf) && access(conf, F_OK) == 0)
                return -EEXIST;
        DIR *d = opendir(dir);
        if (!d)
                return -errno;
        struct dirent *e;
        bool empty = true;
        while (empty && (e = readdir(d)))
                empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        closedir(d);
        return empty ? 0 : -ENOTEMPTY;
}

/* sim_init_target's refusal in words: 0 (init may go on: nothing there, or a host sim_init_dir
 * refuses), or -1 with err. */
static int init_refusal(const char *dir, char *err, size_t len)
{
        unsigned mode = 0;
        int r = sim_init_target(dir, &mode);
        if (r == 0 || r == -EEXIST)
                return 0;
        if (r == -ENOTDIR)
                snprintf(err, len, "%s: not a directory (%s)", dir, S_ISREG(mode) ? "a file" : file_kind(mode));
        else if (r == -EPERM)
                snprintf(err, len, "%s: refused: the root directory (its dev/ is this host's /dev); give a new or an "
                                   "empty directory", dir);
        else if (r == -ENOTEMPTY)
                snprintf(err, len, "%s: not empty and not a simulated host: give a new or an empty directory", dir);
        else
                snprintf(err, len, "%s: %s", dir, strerror(-r));
        return -1;
}

enum sim_outcome sim_init_run(const char *dir, unsigned gpus, uint64_t memory_mib, uint64_t reserved_mib, char *err,
                              size_t len)
{
        if (init_refusal(dir, err, len) < 0)
                return SIM_BAD_USAGE;
        int r = sim_init_dir(dir, gpus, memory_mib, reserved_mib);
        if (r == -EEXIST) {
                snprintf(err, len, "%s already holds a simulated host; remove it first", dir);
                return SIM_BAD_USAGE;
        }
        if (r < 0) {
                snprintf(err, len, "cannot create a simulated host in %s: %s", dir, strerror(-r));
                return SIM_FAILED;
        }
        return SIM_DONE;
}

/* ---- run ---------------------------------------------------------------------------------- */

/* One error line to cb (formatted as cli_error would: at most 1023 bytes). */
static void job_error(const struct sim_job_cb *cb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void job_error(const struct sim_job_cb *cb, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (cb->error)
                cb->error(cb->ctx, msg);
}

/* Fork and exec app with args, detached, its report on the pipe *ret_fd. 0 or a negative errno. */
static int job_spawn(const char *app, const char *dir, char **args, int *ret_fd, pid_t *ret_pid)
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

/* The simulated application's arguments (into args, strings into s; at most 24). */
struct job_strings {
        char gpu[16], mib[32], workers[16], gi[16], setsid[16];
};

static void job_argv(const struct sim_job *a, char *app, struct job_strings *s, char *args[24])
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

/* Read the job's report until "ready", "error ..." or EOF; its lines handed to cb. true when
 * it is ready. */
static bool job_report(int fd, const char *dir, const struct sim_job_cb *cb)
{
        struct buf out = BUF_INIT(1 << 16);
        bool ready = false;
        for (;;) {
                char chunk[512];
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                int pr = poll(&pfd, 1, SIM_RUN_TIMEOUT_MS);
                if (pr < 0 && errno == EINTR)
                        continue;
                if (pr <= 0) {
                        job_error(cb, "the job did not report within %d s", SIM_RUN_TIMEOUT_MS / 1000);
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
                        if (cb->process)
                                cb->process(cb->ctx, line);
                } else if (!strcmp(line, "ready")) {
                        ready = true;
                } else if (!strncmp(line, "error ", 6)) {
                        job_error(cb, "%s", line + 6);
                }
        }
        if (!ready && out.len == 0)
                job_error(cb, "the job ended before it created its context (see %s/jobs.log)", dir);
        buf_free(&out);
        return ready;
}

/* After the report: a job that did not start must not linger; a launcher that exits once the
 * job is ready is waited for. */
static void job_settle(const struct sim_job *j, pid_t pid, bool ready)
{
        if (!ready) {
                /* its whole group (the child leads it after setsid; a launcher's owner and workers
                 * are in it), and the child itself in case it had not reached setsid yet (our
                 * child, not reaped: its PID is ours) */
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        } else if (j->launcher_exits) {
                /* wait for it, so that the caller finds it gone and the owner already reparented
                 * (the kernel reparents before the exit is reported) */
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
}

enum sim_outcome sim_job_start(const struct sim_job *j, const struct sim_job_cb *cb)
{
        struct sim_host h;
        int r = sim_host_load(j->dir, &h);
        if (r < 0) {
                char *q = esc_shell_dup(j->dir);
                job_error(cb, "%s is not a simulated host (%s); create one with `ghostvram sim init %s`",
                          q ? q : j->dir, strerror(-r), q ? q : j->dir);
                free(q);
                return SIM_BAD_USAGE;
        }
        if (j->gpu >= h.n_gpus) {
                job_error(cb, "--gpu %u: this simulated host has GPUs 0 to %u", j->gpu, h.n_gpus - 1);
                return SIM_BAD_USAGE;
        }
        char app[PATH_MAX];
        if (simstate_find_file("gv-simcuda", app, sizeof(app)) < 0) {
                job_error(cb, "cannot find gv-simcuda (the simulated CUDA application) next to ghostvram or in "
                              "the build or install directory");
                return SIM_FAILED;
        }
        struct job_strings strs;
        char *args[24];
        job_argv(j, app, &strs, args);
        int fd = -1;
        pid_t pid = -1;
        r = job_spawn(app, j->dir, args, &fd, &pid);
        if (r < 0) {
                job_error(cb, "cannot start the job: %s", strerror(-r));
                return SIM_FAILED;
        }
        bool ready = job_report(fd, j->dir, cb);
        close(fd);
        job_settle(j, pid, ready);
        return ready ? SIM_DONE : SIM_FAILED;
}

/* ---- status ------------------------------------------------------------------------------- */

enum sim_outcome sim_status_read(const char *dir, struct sim_status *ret, char *err, size_t errlen)
{
        memset(ret, 0, sizeof(*ret));
        ret->cl = malloc(sizeof(*ret->cl));
        ret->k = malloc(sizeof(*ret->k));
        ret->o = malloc(sizeof(*ret->o));
        if (!ret->cl || !ret->k || !ret->o) {
                snprintf(err, errlen, "out of memory");
                return SIM_FAILED;
        }
        int r = sim_client_open(dir, ret->cl);
        if (r < 0) {
                snprintf(err, errlen, "%s is not a simulated host (%s)", dir, strerror(-r));
                return SIM_BAD_USAGE;
        }
        ret->open = true;
        r = sim_knobs_load(dir, ret->k);
        if (r == 0)
                r = sim_observe(ret->cl, ret->k, ret->o);
        if (r < 0) {
                snprintf(err, errlen, "cannot read %s: %s", dir, strerror(-r));
                return SIM_FAILED;
        }
        ret->api_lock_held = ret->k->hang_holds_lock && sim_api_lock_held(dir);
        return SIM_DONE;
}

void sim_status_free(struct sim_status *s)
{
        if (s->open)
                sim_client_close(s->cl);
        free(s->o);
        free(s->k);
        free(s->cl);
        memset(s, 0, sizeof(*s));
}
