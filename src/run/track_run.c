#define _GNU_SOURCE 1 /* execvpe, environ, pipe2 */
#include "run/track_run.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/deadline.h"
#include "util/fileio.h"
#include "util/spawn.h"

/* The signals track passes on to CMD. */
static const int track_stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

const char *track_stop_signal_name(int sig)
{
        switch (sig) {
        case SIGINT: return "SIGINT";
        case SIGTERM: return "SIGTERM";
        case SIGHUP: return "SIGHUP";
        case SIGQUIT: return "SIGQUIT";
        }
        return "a signal";
}

static int find_preload(const char *given, char *out, size_t outlen)
{
        const char *env = getenv("GHOSTVRAM_TRACK_LIB");
        if (given || (env && env[0])) {
                const char *p = given ? given : env;
                if (access(p, R_OK) < 0)
                        return -errno;
                if (!realpath(p, out) || strlen(out) >= outlen)
                        return -ENAMETOOLONG;
                return 0;
        }
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
                return -ENOENT;
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (!slash)
                return -ENOENT;
        *slash = '\0';
        static const char *const rel[] = { "/" TRACK_LIB_NAME, "/../lib/ghostvram/" TRACK_LIB_NAME,
                                           "/../lib64/ghostvram/" TRACK_LIB_NAME };
        for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
                char p[PATH_MAX + 64];
                snprintf(p, sizeof(p), "%s%s", exe, rel[i]);
                if (access(p, R_OK) == 0 && realpath(p, out) && strlen(out) < outlen)
                        return 0;
        }
        return -ENOENT;
}

/* The ELF header of path (a regular file, read without blocking): 0 or a negative errno
 * (-ENOEXEC: not ELF, or not of this process's class). */
static int read_ehdr(const char *path, ElfW(Ehdr) *ret)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        struct stat st;
        int r = fstat(fd, &st) < 0 ? -errno : !S_ISREG(st.st_mode) ? (S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL) : 0;
        if (r == 0 && (read(fd, ret, sizeof(*ret)) != (ssize_t)sizeof(*ret) || memcmp(ret->e_ident, ELFMAG, SELFMAG) != 0 ||
                       ret->e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)))
                r = -ENOEXEC;
        close(fd);
        return r;
}

/* Would ld.so preload path? A readable ELF shared object for this machine: NULL, or why not (the
 * dynamic loader would only print "cannot be preloaded" and run CMD untracked). */
static const char *not_preloadable(const char *path)
{
        ElfW(Ehdr) h, self;
        int r = read_ehdr(path, &h);
        if (r == -ENOEXEC)
                return "not an ELF shared object of this machine";
        if (r == -EINVAL)
                return "not a regular file";
        if (r < 0)
                return strerror(-r);
        if (h.e_type != ET_DYN)
                return "an ELF file, but not a shared object";
        if (read_ehdr("/proc/self/exe", &self) == 0 && self.e_machine != h.e_machine)
                return "a shared object for another machine";
        return NULL;
}


static void report_free(struct track_report_proc *rp, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                track_ledger_free(rp[i].l);
                free(rp[i].l);
        }
        free(rp);
}

/* Does the ledger dir/name belong to this session? Only its header is read. */
static bool of_session(int dirfd, const char *name, uint64_t session)
{
        struct gvl_header h;
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
                return false;
        bool ok = read(fd, &h, sizeof(h)) == (ssize_t)sizeof(h) && h.session == session;
        close(fd);
        return ok;
}

/* The ledgers of this session in dir (at most TRACK_REPORT_MAX). */
static int collect(const char *dir, uint64_t session, struct track_report_proc **ret, size_t *ret_n)
{
        DIR *d = opendir(dir);
        if (!d)
                return -errno;
        struct track_report_proc *rp = calloc(TRACK_REPORT_MAX, sizeof(*rp));
        size_t n = 0;
        unsigned seen = 0;
        struct dirent *e;
        while (rp && (e = readdir(d)) && seen++ < TRACK_DIR_FILES_MAX && n < TRACK_REPORT_MAX) {
                pid_t pid;
                uint64_t start;
                if (!track_ledger_name(e->d_name, &pid, &start) || strlen(e->d_name) >= sizeof(rp[n].file))
                        continue;
                if (!of_session(dirfd(d), e->d_name, session))
                        continue; /* another run's: not read further */
                struct track_ledger *l = malloc(sizeof(*l));
                if (!l)
                        break;
                if (track_ledger_load(dirfd(d), e->d_name, l) < 0 || l->hdr.session != session) {
                        track_ledger_free(l);
                        free(l);
                        continue;
                }
                memcpy(rp[n].file, e->d_name, strlen(e->d_name) + 1);
                rp[n].l = l;
                rp[n].alive = track_process_alive("/proc", pid, start);
                track_ledger_summary(l, NULL, &rp[n].s);
                n++;
        }
        closedir(d);
        if (!rp)
                return -ENOMEM;
        *ret = rp;
        *ret_n = n;
        return 0;
}

/* Wait for CMD (child), taking the stop signals of `set` (blocked, with SIGCHLD) meanwhile. One
 * sent by a process (kill(1), a scheduler, a supervisor: si_code <= 0) is passed on to CMD,
 * after which track waits at most TRACK_STOP_WAIT_MS more. One from the terminal (^C, ^\, a
 * hangup: SI_KERNEL) went to the whole foreground process group, CMD included, and one that CMD
 * sent (to its process group) reached CMD too: neither is sent again (a second SIGINT would
 * interrupt a Python job's KeyboardInterrupt cleanup), and track waits for CMD as system(3)
 * does. Fills end. */
static void wait_child(pid_t child, const sigset_t *set, struct track_end *end)
{
        unsigned long long deadline = 0;
        end->child = child;
        for (;;) {
                int st = 0;
                pid_t w = waitpid(child, &st, WNOHANG);
                if (w == child) {
                        end->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                        return;
                }
                if (w < 0 && errno != EINTR) {
                        end->status = 125; /* cannot happen: SIGCHLD is not ignored here */
                        return;
                }
                struct timespec ts = { 0, 0 };
                if (deadline) {
                        unsigned long long now = monotonic_ms();
                        if (now >= deadline) {
                                end->running = true;
                                end->status = 128 + end->signal;
                                return;
                        }
                        ts.tv_sec = (time_t)((deadline - now) / 1000);
                        ts.tv_nsec = (long)((deadline - now) % 1000) * 1000000L;
                }
                siginfo_t si;
                int sig = deadline ? sigtimedwait(set, &si, &ts) : sigwaitinfo(set, &si);
                if (sig <= 0 || sig == SIGCHLD)
                        continue; /* the time is up, or CMD changed state: look again */
                if (si.si_code > 0 || si.si_pid == child)
                        continue;
                (void)kill(child, sig); /* not reaped yet: the PID is still CMD's */
                if (!end->signal) {
                        end->signal = sig;
                        deadline = monotonic_ms() + TRACK_STOP_WAIT_MS;
                }
        }
}

/* Take the stop signals still pending (CMD has had its signal, or is gone), then give back the
 * signal mask and SIGCHLD's disposition track started with. */
static void signals_restore(const sigset_t *set, const sigset_t *old_mask, const struct sigaction *old_chld)
{
        const struct timespec zero = { 0, 0 };
        while (sigtimedwait(set, NULL, &zero) > 0)
                ;
        sigprocmask(SIG_SETMASK, old_mask, NULL);
        sigaction(SIGCHLD, old_chld, NULL);
}

/* The ledger directory: made when missing, a directory, its real path into out. */
static int ledger_dir(const char *arg, char *out, char *err, size_t errlen)
{
        int r = mkdir_p(arg);
        if (r == 0 && mkdir(arg, 0755) < 0 && errno != EEXIST)
                r = -errno;
        if (r < 0 || !realpath(arg, out)) {
                int e = r < 0 ? -r : errno;
                snprintf(err, errlen, "cannot create the ledger directory %s: %s%s", arg, strerror(e),
                         strcmp(arg, TRACK_DEFAULT_DIR) == 0 ? " (run as root, or choose one with --ledger-dir)" : "");
                return -e;
        }
        struct stat sb;
        if (stat(out, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
                snprintf(err, errlen, "--ledger-dir %s: not a directory", arg);
                return -ENOTDIR;
        }
        return 0;
}

int track_prepare(const struct track_prep_opts *o, struct track_prep *ret, char *err, size_t errlen)
{
        memset(ret, 0, sizeof(*ret));
        int r = ledger_dir(o->dir ? o->dir : TRACK_DEFAULT_DIR, ret->dir, err, errlen);
        if (r < 0)
                return r;
        r = find_preload(o->preload, ret->lib, sizeof(ret->lib));
        if (r < 0) {
                snprintf(err, errlen, "cannot find the tracker library %s: %s (--preload PATH)",
                         o->preload ? o->preload : TRACK_LIB_NAME, strerror(-r));
                return r;
        }
        const char *why = not_preloadable(ret->lib);
        if (why) {
                snprintf(err, errlen, "the tracker library %s: %s (--preload PATH)", ret->lib, why);
                return -ENOEXEC;
        }
        if (strchr(ret->lib, ' ') || strchr(ret->lib, ':')) {
                snprintf(err, errlen, "the tracker library's path %s contains a space or ':', which LD_PRELOAD cannot carry",
                         ret->lib);
                return -EINVAL;
        }
        struct track_prune_opts po = { .max_age_s = o->max_age_ms / 1000, .max_total_bytes = o->max_total_mib << 20,
                                       .proc_root = "/proc" };
        struct track_prune_result pr;
        (void)track_prune(ret->dir, &po, &pr); /* best effort: a full directory is no reason not to run */
        if (getrandom(&ret->session, sizeof(ret->session), GRND_NONBLOCK) != (ssize_t)sizeof(ret->session))
                ret->session = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
        ret->session &= (1ull << 62) - 1;
        if (!ret->session)
                ret->session = 1;
        return 0;
}

/* CMD's environment, made before the fork (between fork and exec only async-signal-safe
 * calls: setenv allocates): the tracker first in LD_PRELOAD, the directory and session. */
static int cmd_env(const struct track_prep *p, char ***envp, char *err, size_t errlen)
{
        char session_s[24], preload[PATH_MAX * 2 + 2];
        snprintf(session_s, sizeof(session_s), "%llu", (unsigned long long)p->session);
        const char *old = getenv("LD_PRELOAD");
        if (snprintf(preload, sizeof(preload), "%s%s%s", p->lib, old && old[0] ? " " : "", old ? old : "") >=
            (int)sizeof(preload)) {
                snprintf(err, errlen, "LD_PRELOAD is too long");
                return -E2BIG;
        }
        static const char *const env_names[] = { "LD_PRELOAD", GVL_ENV_DIR, GVL_ENV_SESSION };
        const char *const env_values[] = { preload, p->dir, session_s };
        if (env_build(environ, env_names, env_values, 3, envp) < 0) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        return 0;
}

/* The stop signals (those not ignored when track started: a shell's background job ignores
 * SIGINT and SIGQUIT, and so will CMD) and SIGCHLD are blocked and taken in wait_child(); CMD
 * gets the mask and dispositions track started with. SIGCHLD is not left ignored here, or
 * CMD's status would be lost. */
static void signals_take(struct track_result *s)
{
        sigemptyset(&s->sig_set);
        for (size_t i = 0; i < sizeof(track_stop_signals) / sizeof(track_stop_signals[0]); i++) {
                struct sigaction cur;
                if (sigaction(track_stop_signals[i], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN)
                        sigaddset(&s->sig_set, track_stop_signals[i]);
        }
        sigaddset(&s->sig_set, SIGCHLD);
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        sigemptyset(&dfl.sa_mask);
        sigaction(SIGCHLD, &dfl, &s->sig_old_chld);
        sigprocmask(SIG_BLOCK, &s->sig_set, &s->sig_old_mask);
        s->signals_taken = true;
}

/* Fork and exec CMD; returns its PID, or a negative errno (*exec_errno: why exec failed, the
 * child having reported it through a close-on-exec pipe). */
static pid_t cmd_start(char *const cmd[], char **envp, const struct track_result *s, int *exec_errno)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        fflush(NULL);
        pid_t child = fork();
        if (child < 0) {
                int e = -errno;
                close(p[0]);
                close(p[1]);
                return e;
        }
        if (child == 0) {
                /* only async-signal-safe calls from here to exec (glibc's execvpe searches PATH
                 * in stack buffers) */
                sigaction(SIGCHLD, &s->sig_old_chld, NULL);
                sigprocmask(SIG_SETMASK, &s->sig_old_mask, NULL);
                close(p[0]);
                execvpe(cmd[0], cmd, envp);
                int e = errno;
                (void)!write(p[1], &e, sizeof(e));
                _exit(127);
        }
        close(p[1]);
        int e = 0;
        ssize_t got;
        while ((got = read(p[0], &e, sizeof(e))) < 0 && errno == EINTR)
                ;
        close(p[0]);
        *exec_errno = got == (ssize_t)sizeof(e) ? e : 0;
        return child;
}

int track_run(const struct track_prep *p, char *const cmd[], struct track_result *ret, char *err, size_t errlen)
{
        memset(ret, 0, sizeof(*ret));
        char **envp = NULL;
        if (cmd_env(p, &envp, err, errlen) < 0)
                return TRACK_EXIT_FAILED;
        signals_take(ret);
        int exec_errno = 0;
        pid_t child = cmd_start(cmd, envp, ret, &exec_errno);
        env_free(envp);
        if (child < 0) {
                snprintf(err, errlen, "cannot start %s: %s", cmd[0], strerror(-child));
                return TRACK_EXIT_FAILED;
        }
        /* the command's lifetime is the user's: this wait ends when CMD does (a daemonising
         * CMD returns at once; its processes' ledgers are reported as still running), or a
         * while after a stop signal was passed on to it */
        wait_child(child, &ret->sig_set, &ret->end);
        if (exec_errno) {
                snprintf(err, errlen, "cannot run %s: %s", cmd[0], strerror(exec_errno));
                return TRACK_EXIT_NOT_RUN;
        }
        int r = collect(p->dir, p->session, &ret->procs, &ret->n);
        if (r < 0)
                snprintf(err, errlen, "cannot read the ledgers in %s: %s", p->dir, strerror(-r));
        return r;
}

void track_result_free(struct track_result *r)
{
        report_free(r->procs, r->n);
        r->procs = NULL;
        r->n = 0;
        if (r->signals_taken)
                signals_restore(&r->sig_set, &r->sig_old_mask, &r->sig_old_chld);
        r->signals_taken = false;
}

/* ---- --show FILE ----------------------------------------------------------------------------- */

struct track_show *track_show_new(void)
{
        return calloc(1, sizeof(struct track_show));
}

int track_show_load(struct track_show *sh, const char *path)
{
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
                return -EISDIR;
        int r = track_ledger_load(AT_FDCWD, path, &sh->l);
        if (r < 0)
                return r;
        sh->loaded = true;
        track_ledger_summary(&sh->l, NULL, &sh->s);
        return 0;
}

void track_show_free(struct track_show *sh)
{
        if (sh && sh->loaded)
                track_ledger_free(&sh->l);
        free(sh);
}

/* ---- the report's file ------------------------------------------------------------------------- */

FILE *track_report_open(const char *path, char *err, size_t len)
{
        if (!path)
                return stderr;
        struct stat sb;
        bool is_dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
        FILE *out = is_dir ? NULL : fopen(path, "we");
        if (!out)
                snprintf(err, len, "--report %s: %s", path, is_dir ? "a directory: give a file" : strerror(errno));
        return out;
}

int track_report_close(FILE *out, const char *path, char *err, size_t len)
{
        if (out == stderr || fclose(out) == 0)
                return 0;
        snprintf(err, len, "--report %s: %s", path, strerror(errno));
        return -1;
}

/* Close the --report file (not stderr); returns status. */
static int report_close(FILE *out, const char *path, int status, void (*say)(const char *msg))
{
        char err[PATH_MAX + 256];
        if (track_report_close(out, path, err, sizeof(err)) < 0)
                say(err);
        return status;
}

int track_execute(const struct track_prep_opts *o, const char *report, char *const *cmd,
                  const struct track_execute_cb *cb)
{
        char err[PATH_MAX + 256] = "";
        struct track_prep prep;
        if (track_prepare(o, &prep, err, sizeof(err)) < 0) {
                cb->say(err);
                return TRACK_EXIT_FAILED;
        }
        FILE *out = track_report_open(report, err, sizeof(err));
        if (!out) {
                cb->say(err);
                return TRACK_EXIT_FAILED;
        }
        struct track_result res;
        int r = track_run(&prep, cmd, &res, err, sizeof(err));
        if (r != 0) {
                cb->say(err);
                track_result_free(&res);
                return report_close(out, report, r > 0 ? r : res.end.status, cb->say);
        }
        cb->report(cb->ctx, out, cmd, &prep, &res);
        track_result_free(&res);
        return report_close(out, report, res.end.status, cb->say);
}
