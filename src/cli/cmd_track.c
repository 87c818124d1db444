/* ghostvram track: run a command with the allocation tracker preloaded (docs/track.md). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/json_util.h"
#include "render/proc_render.h"
#include "render/track_render.h"
#include "track/ledger_read.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/spawn.h"

#define TRACK_DEFAULT_DIR "/run/ghostvram/ledger"
#define TRACK_LIB_NAME "libghostvram-track.so"
#define TRACK_REPORT_MAX 256            /* ledgers in one leak report */
/* After passing a stop signal on to CMD, how long track waits for CMD before it reports
 * without it: shorter than the grace a supervisor gives before its SIGKILL (docker stop: 10 s,
 * Slurm's KillWait: 30 s, systemd: 90 s), so that the report is written. */
#define TRACK_STOP_WAIT_MS 5000

/* The signals track passes on to CMD. */
static const int track_stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static const char *stop_signal_name(int sig)
{
        switch (sig) {
        case SIGINT: return "SIGINT";
        case SIGTERM: return "SIGTERM";
        case SIGHUP: return "SIGHUP";
        case SIGQUIT: return "SIGQUIT";
        }
        return "a signal";
}

/* How CMD's run ended: the report says it, and track exits with status. */
struct track_end {
        int status;     /* CMD's (128+N when signal N ended it); 128+signal when it still runs */
        int signal;     /* the first stop signal a process sent track (passed on to CMD); 0 none */
        bool running;   /* CMD still ran TRACK_STOP_WAIT_MS after that signal */
        pid_t child;
};

static void track_usage(FILE *f)
{
        fputs(_("Usage: ghostvram track [OPTIONS] -- CMD [ARGS...]\n\n"
              "Run CMD with ghostvram's allocation tracker preloaded (LD_PRELOAD). Every GPU\n"
              "memory allocation and free made through the CUDA driver API (cuMemAlloc_v2,\n"
              "cuMemAllocPitch_v2, cuMemAllocManaged, cuMemAllocAsync,\n"
              "cuMemAllocFromPoolAsync, cuMemFree_v2, cuMemFreeAsync,\n"
              "cuMemCreate/Release/Map/Unmap; also when the CUDA runtime fetches them through\n"
              "cuGetProcAddress) is appended to a per-process ledger file before the call\n"
              "returns, with its device, size and call site. A ledger survives kill -9:\n"
              "`ghostvram scan --ledger-dir DIR` then says what a dead owner still had\n"
              "allocated and where.\n\n"), f);
        fputs(_("When CMD exits, track reports what its processes left allocated by call site\n"
              "(the leak check) and exits with CMD's status. Processes of CMD that still run\n"
              "(a daemonised job) are listed; their ledgers stay in DIR. SIGINT, SIGTERM,\n"
              "SIGHUP or SIGQUIT sent to track by a process is passed on to CMD (the\n"
              "terminal's ^C already reaches it); track waits for CMD at most 5 s more, then\n"
              "reports.\n\n"), f);
        fprintf(f, _("Options:\n"
              "  --ledger-dir DIR     where ledgers go (default %s;\n"
              "                       created)\n"
              "  --json               the report as JSON (schema_version inside)\n"
              "  --report FILE        write the report to FILE instead of standard error\n"
              "                       (CMD's standard output stays CMD's)\n"
              "  --max-age DURATION   prune ledgers of dead processes older than this\n"
              "                       (default 7d)\n"
              "  --max-total SIZE     then keep at most SIZE MiB of them, oldest go first\n"
              "                       (default 256)\n"
              "  --show FILE          print what one ledger file holds (JSON) and exit:\n"
              "                       0 a ledger, 1 not one\n"
              "  --preload PATH       the tracker library (default: %s\n"
              "                       next to ghostvram, or in ../lib/ghostvram/)\n"),
                TRACK_DEFAULT_DIR, TRACK_LIB_NAME);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\nExamples:\n"
              "  ghostvram track -- python train.py\n"
              "  ghostvram track --ledger-dir /tmp/l -- \\\n"
              "      torchrun --nproc-per-node 8 train.py\n"
              "  ghostvram scan --ledger-dir /run/ghostvram/ledger   # after a kill -9\n\n"), f);
        fputs(_("Exit status: CMD's (128+N when a signal N ended it); 128+N when track passed\n"
              "signal N on and CMD still ran 5 s later; 2 usage error; 125 track itself\n"
              "failed (no ledger directory, no tracker library); 127 CMD could not be run.\n"),
              f);
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

struct report_proc {
        char file[96];
        struct track_ledger *l;
        struct track_summary s;
        bool alive;
};

static void report_free(struct report_proc *rp, size_t n)
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
static int collect(const char *dir, uint64_t session, struct report_proc **ret, size_t *ret_n)
{
        DIR *d = opendir(dir);
        if (!d)
                return -errno;
        struct report_proc *rp = calloc(TRACK_REPORT_MAX, sizeof(*rp));
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

static json_t *report_json(char **cmd, const struct track_end *end, const char *dir, const struct report_proc *rp,
                           size_t n)
{
        json_t *doc = json_object();
        json_set(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_t *c = json_array();
        for (char **a = cmd; *a; a++)
                json_array_append_new(c, json_text(*a));
        json_set(doc, "command", json_string("track"));
        json_set(doc, "argv", c);
        json_set(doc, "exit_status", json_integer(end->status));
        json_set(doc, "forwarded_signal", end->signal ? json_string(stop_signal_name(end->signal)) : json_null());
        json_set(doc, "command_running", json_boolean(end->running));
        json_set(doc, "ledger_dir", json_text(dir));
        uint64_t leaked = 0, leaked_n = 0;
        json_t *pa = json_array();
        for (size_t i = 0; i < n; i++) {
                const struct report_proc *p = &rp[i];
                json_t *o = json_object();
                json_set(o, "pid", json_integer(p->l->hdr.pid));
                json_set(o, "ppid", json_integer(p->l->hdr.ppid));
                json_set(o, "comm", json_textn(p->l->hdr.comm, strnlen(p->l->hdr.comm, sizeof(p->l->hdr.comm))));
                json_set(o, "alive", json_boolean(p->alive));
                json_set(o, "file", json_text(p->file));
                json_set(o, "allocs", json_integer((json_int_t)p->l->allocs));
                json_set(o, "frees", json_integer((json_int_t)p->l->frees));
                json_set(o, "outstanding_bytes", json_integer((json_int_t)p->s.outstanding_bytes));
                json_set(o, "allocations", json_integer((json_int_t)p->s.allocations));
                json_set(o, "sites", track_sites_json(p->l, &p->s, TRACK_SITES_MAX));
                json_set(o, "skipped_bytes", json_integer((json_int_t)p->l->skipped_bytes));
                json_set(o, "torn_tail_bytes", json_integer((json_int_t)p->l->tail_bytes));
                json_array_append_new(pa, o);
                if (!p->alive) {
                        leaked += p->s.outstanding_bytes;
                        leaked_n += p->s.allocations;
                }
        }
        json_set(doc, "processes", pa);
        json_set(doc, "leaked_bytes", json_integer((json_int_t)leaked));
        json_set(doc, "leaked_allocations", json_integer((json_int_t)leaked_n));
        return doc;
}

static void put_esc(FILE *out, const char *s, size_t max)
{
        struct buf b = BUF_INIT(0);
        esc_terminal(&b, s, strnlen(s, max));
        fputs(buf_str(&b), out);
        buf_free(&b);
}

static void report_text(FILE *out, const struct track_end *end, const char *dir, const struct report_proc *rp,
                        size_t n)
{
        uint64_t leaked = 0, leaked_n = 0;
        unsigned running = 0;
        for (size_t i = 0; i < n; i++) {
                const struct report_proc *p = &rp[i];
                struct buf mib = BUF_INIT(0);
                fmt_mib(&mib, p->s.outstanding_bytes);
                fprintf(out, "PID %u (", p->l->hdr.pid);
                put_esc(out, p->l->hdr.comm, sizeof(p->l->hdr.comm));
                if (p->alive) {
                        running++;
                        fprintf(out, ") still runs: %s in %llu allocation%s so far (ledger %s/%s)\n", buf_str(&mib),
                                (unsigned long long)p->s.allocations, p->s.allocations == 1 ? "" : "s", dir, p->file);
                } else if (p->s.allocations) {
                        leaked += p->s.outstanding_bytes;
                        leaked_n += p->s.allocations;
                        fprintf(out, ") exited with %s in %llu allocation%s never freed:\n", buf_str(&mib),
                                (unsigned long long)p->s.allocations, p->s.allocations == 1 ? "" : "s");
                } else {
                        fprintf(out, ") freed all %llu allocation%s\n", (unsigned long long)p->l->allocs,
                                p->l->allocs == 1 ? "" : "s");
                }
                buf_free(&mib);
                for (size_t k = 0; !p->alive && k < p->s.n_sites; k++) {
                        struct track_summary one = p->s;
                        one.sites[0] = p->s.sites[k];
                        one.n_sites = 1;
                        fputs("    ", out);
                        track_sites_text(out, p->l, &one, 1, GVL_FRAMES);
                        fputc('\n', out);
                }
        }
        struct buf mib = BUF_INIT(0);
        fmt_mib(&mib, leaked);
        fprintf(out, "LEAK SUMMARY: %s (%llu bytes) leaked in %llu allocation%s by %zu tracked process%s",
                buf_str(&mib), (unsigned long long)leaked, (unsigned long long)leaked_n, leaked_n == 1 ? "" : "s", n,
                n == 1 ? "" : "es");
        if (running) {
                char *q = esc_shell_dup(dir);
                fprintf(out, "; %u still running (`ghostvram scan --ledger-dir %s` once they are gone)", running,
                        q ? q : dir);
                free(q);
        }
        if (end->running)
                fprintf(out, "; %s passed on to the command, which still runs %d s later (PID %d); exit status %d\n",
                        stop_signal_name(end->signal), TRACK_STOP_WAIT_MS / 1000, (int)end->child, end->status);
        else if (end->signal)
                fprintf(out, "; %s passed on to the command; command exit status %d\n", stop_signal_name(end->signal),
                        end->status);
        else
                fprintf(out, "; command exit status %d\n", end->status);
        buf_free(&mib);
}

/* Close the --report file (not stderr); returns status. */
static int report_close(FILE *out, const char *path, int status)
{
        if (out != stderr && fclose(out) != 0)
                cli_error("track", "--report %s: %s", path, strerror(errno));
        return status;
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
 * signal mask and SIGCHLD's disposition track started with. Returns status. */
static int signals_restore(const sigset_t *set, const sigset_t *old_mask, const struct sigaction *old_chld,
                           int status)
{
        const struct timespec zero = { 0, 0 };
        while (sigtimedwait(set, NULL, &zero) > 0)
                ;
        sigprocmask(SIG_SETMASK, old_mask, NULL);
        sigaction(SIGCHLD, old_chld, NULL);
        return status;
}

/* --show FILE: the ledger's header, counts and outstanding allocations as JSON. */
static int track_show(const char *path)
{
        struct track_ledger *l = malloc(sizeof(*l));
        if (!l)
                return EXIT_INCOMPLETE;
        struct stat st;
        int r = stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? -EISDIR : track_ledger_load(AT_FDCWD, path, l);
        if (r == -EISDIR) {
                cli_error("track", "--show %s: a directory, not an allocation ledger (give one file of it)", path);
                free(l);
                return EXIT_FINDING;
        }
        if (r < 0) {
                cli_error("track", "%s: %s", path, r == -EBADMSG ? "not an allocation ledger (bad header)" : strerror(-r));
                free(l);
                return EXIT_FINDING;
        }
        struct track_summary *s = malloc(sizeof(*s));
        if (!s) {
                track_ledger_free(l);
                free(l);
                return EXIT_INCOMPLETE;
        }
        track_ledger_summary(l, NULL, s);
        json_t *o = json_object();
        json_set(o, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_set(o, "file", json_text(path));
        json_set(o, "pid", json_integer(l->hdr.pid));
        json_set(o, "ppid", json_integer(l->hdr.ppid));
        json_set(o, "start_ticks", json_integer((json_int_t)l->hdr.start_ticks));
        /* a 64-bit identifier: text, as JSON numbers past 2^53 lose digits in most readers */
        char session[24];
        snprintf(session, sizeof(session), "%016llx", (unsigned long long)l->hdr.session);
        json_set(o, "session", l->hdr.session ? json_string(session) : json_null());
        json_set(o, "comm", json_textn(l->hdr.comm, strnlen(l->hdr.comm, sizeof(l->hdr.comm))));
        json_set(o, "exe", json_textn(l->hdr.exe, strnlen(l->hdr.exe, sizeof(l->hdr.exe))));
        json_set(o, "records", json_integer((json_int_t)l->records));
        json_set(o, "skipped_bytes", json_integer((json_int_t)l->skipped_bytes));
        json_set(o, "torn_tail_bytes", json_integer((json_int_t)l->tail_bytes));
        json_set(o, "gave_up", json_boolean(l->gave_up));
        json_set(o, "allocs", json_integer((json_int_t)l->allocs));
        json_set(o, "frees", json_integer((json_int_t)l->frees));
        json_set(o, "unmatched_frees", json_integer((json_int_t)l->unmatched_frees));
        json_set(o, "execs", json_integer((json_int_t)l->execs));
        json_set(o, "modules", json_integer((json_int_t)l->n_modules));
        json_set(o, "outstanding_bytes", json_integer((json_int_t)s->outstanding_bytes));
        json_set(o, "allocations", json_integer((json_int_t)s->allocations));
        json_set(o, "sites", track_sites_json(l, s, TRACK_SITES_MAX));
        cli_print_json(o);
        free(s);
        track_ledger_free(l);
        free(l);
        return EXIT_OK;
}

int cmd_track(int argc, char **argv)
{
        static const struct option opts[] = {
                { "ledger-dir", required_argument, NULL, 'd' },
                { "json", no_argument, NULL, 'j' },
                { "max-age", required_argument, NULL, 'a' },
                { "max-total", required_argument, NULL, 't' },
                { "preload", required_argument, NULL, 'p' },
                { "report", required_argument, NULL, 'r' },
                { "show", required_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        const char *dir_arg = TRACK_DEFAULT_DIR, *preload_arg = NULL, *report_path = NULL;
        bool json = false;
        uint64_t max_age_ms = 7ull * 24 * 3600 * 1000, max_total_mib = 256;
        int opt;
        optind = 1;
        opterr = 0;     /* a bad option is said in one line (cli_bad_option) */
        /* '+': stop at the first non-option, CMD's own options are CMD's */
        while ((opt = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                switch (opt) {
                case 'h':
                        track_usage(stdout);
                        return EXIT_OK;
                case 'd':
                        if (cli_path_arg("track", "--ledger-dir", optarg) < 0)
                                return EXIT_USAGE;
                        dir_arg = optarg;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'a':
                        if (parse_duration_ms(optarg, &max_age_ms) < 0) {
                                cli_error("track", "--max-age: '%s' is not a duration (e.g. 7d, 12h)", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 't':
                        if (parse_u64(optarg, &max_total_mib) < 0 || max_total_mib > (1u << 24)) {
                                cli_error("track", "--max-total: '%s' is not a number of MiB", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'p':
                        if (cli_path_arg("track", "--preload", optarg) < 0)
                                return EXIT_USAGE;
                        preload_arg = optarg;
                        break;
                case 'r':
                        if (cli_path_arg("track", "--report", optarg) < 0)
                                return EXIT_USAGE;
                        report_path = optarg;
                        break;
                case 's':
                        if (cli_path_arg("track", "--show", optarg) < 0)
                                return EXIT_USAGE;
                        return track_show(optarg);
                default:
                        cli_bad_option("track", argc, argv, opt);
                        return EXIT_USAGE;
                }
        }
        if (optind >= argc) {
                cli_error("track", "no command to run (ghostvram track [OPTIONS] -- CMD [ARGS...])");
                return EXIT_USAGE;
        }
        char **cmd = argv + optind;

        char dir[PATH_MAX], lib[PATH_MAX];
        int r = mkdir_p(dir_arg);
        if (r == 0 && mkdir(dir_arg, 0755) < 0 && errno != EEXIST)
                r = -errno;
        if (r < 0 || !realpath(dir_arg, dir)) {
                cli_error("track", "cannot create the ledger directory %s: %s%s", dir_arg, strerror(r < 0 ? -r : errno),
                          strcmp(dir_arg, TRACK_DEFAULT_DIR) == 0 ? " (run as root, or choose one with --ledger-dir)" : "");
                return 125;
        }
        struct stat sb;
        if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
                cli_error("track", "--ledger-dir %s: not a directory", dir_arg);
                return 125;
        }
        r = find_preload(preload_arg, lib, sizeof(lib));
        if (r < 0) {
                cli_error("track", "cannot find the tracker library %s: %s (--preload PATH)",
                          preload_arg ? preload_arg : TRACK_LIB_NAME, strerror(-r));
                return 125;
        }
        const char *why = not_preloadable(lib);
        if (why) {
                cli_error("track", "the tracker library %s: %s (--preload PATH)", lib, why);
                return 125;
        }
        /* the report's file is opened before CMD runs: one that cannot be written loses nothing */
        FILE *out = stderr;
        if (report_path) {
                bool is_dir = stat(report_path, &sb) == 0 && S_ISDIR(sb.st_mode);
                out = is_dir ? NULL : fopen(report_path, "we");
                if (!out) {
                        cli_error("track", "--report %s: %s", report_path, is_dir ? "a directory: give a file" : strerror(errno));
                        return 125;
                }
        }
        if (strchr(lib, ' ') || strchr(lib, ':')) {
                cli_error("track", "the tracker library's path %s contains a space or ':', which LD_PRELOAD cannot carry",
                          lib);
                return 125;
        }
        struct track_prune_opts po = { .max_age_s = max_age_ms / 1000, .max_total_bytes = max_total_mib << 20,
                                       .proc_root = "/proc" };
        struct track_prune_result pr;
        (void)track_prune(dir, &po, &pr); /* best effort: a full directory is no reason not to run */

        uint64_t session = 0;
        if (getrandom(&session, sizeof(session), GRND_NONBLOCK) != (ssize_t)sizeof(session))
                session = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
        session &= (1ull << 62) - 1;
        if (!session)
                session = 1;
        char session_s[24], preload[PATH_MAX * 2 + 2];
        snprintf(session_s, sizeof(session_s), "%llu", (unsigned long long)session);
        const char *old = getenv("LD_PRELOAD");
        if (snprintf(preload, sizeof(preload), "%s%s%s", lib, old && old[0] ? " " : "", old ? old : "") >=
            (int)sizeof(preload)) {
                cli_error("track", "LD_PRELOAD is too long");
                return report_close(out, report_path, 125);
        }
        /* CMD's environment is made before the fork: between fork and exec only
         * async-signal-safe calls (setenv allocates) */
        static const char *const env_names[] = { "LD_PRELOAD", GVL_ENV_DIR, GVL_ENV_SESSION };
        const char *const env_values[] = { preload, dir, session_s };
        char **envp = NULL;
        if (env_build(environ, env_names, env_values, 3, &envp) < 0) {
                cli_error("track", "out of memory");
                return report_close(out, report_path, 125);
        }

        /* The stop signals (those not ignored when track started: a shell's background job
         * ignores SIGINT and SIGQUIT, and so will CMD) and SIGCHLD are blocked and taken in
         * wait_child(); CMD gets the mask and dispositions track started with. SIGCHLD is
         * not left ignored here, or CMD's status would be lost. */
        sigset_t set, old_mask;
        sigemptyset(&set);
        for (size_t i = 0; i < sizeof(track_stop_signals) / sizeof(track_stop_signals[0]); i++) {
                struct sigaction cur;
                if (sigaction(track_stop_signals[i], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN)
                        sigaddset(&set, track_stop_signals[i]);
        }
        sigaddset(&set, SIGCHLD);
        struct sigaction dfl = { .sa_handler = SIG_DFL }, old_chld;
        sigemptyset(&dfl.sa_mask);
        sigaction(SIGCHLD, &dfl, &old_chld);
        sigprocmask(SIG_BLOCK, &set, &old_mask);
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
                cli_error("track", "pipe: %s", strerror(errno));
                env_free(envp);
                return report_close(out, report_path, signals_restore(&set, &old_mask, &old_chld, 125));
        }
        fflush(NULL);
        pid_t child = fork();
        if (child < 0) {
                cli_error("track", "fork: %s", strerror(errno));
                close(p[0]);
                close(p[1]);
                env_free(envp);
                return report_close(out, report_path, signals_restore(&set, &old_mask, &old_chld, 125));
        }
        if (child == 0) {
                /* only async-signal-safe calls from here to exec (glibc's execvpe searches PATH
                 * in stack buffers) */
                sigaction(SIGCHLD, &old_chld, NULL);
                sigprocmask(SIG_SETMASK, &old_mask, NULL);
                close(p[0]);
                execvpe(cmd[0], cmd, envp);
                int e = errno;
                (void)!write(p[1], &e, sizeof(e));
                _exit(127);
        }
        env_free(envp);
        close(p[1]);
        int e = 0;
        ssize_t got;
        while ((got = read(p[0], &e, sizeof(e))) < 0 && errno == EINTR)
                ;
        close(p[0]);
        /* the command's lifetime is the user's: this wait ends when CMD does (a daemonising
         * CMD returns at once; its processes' ledgers are reported as still running), or a
         * while after a stop signal was passed on to it */
        struct track_end end = { 0 };
        wait_child(child, &set, &end);
        if (got == (ssize_t)sizeof(e)) {
                cli_error("track", "cannot run %s: %s", cmd[0], strerror(e));
                return report_close(out, report_path, signals_restore(&set, &old_mask, &old_chld, 127));
        }

        struct report_proc *rp = NULL;
        size_t n = 0;
        r = collect(dir, session, &rp, &n);
        if (r < 0) {
                cli_error("track", "cannot read the ledgers in %s: %s", dir, strerror(-r));
                return report_close(out, report_path, signals_restore(&set, &old_mask, &old_chld, end.status));
        }
        if (json) {
                json_t *doc = report_json(cmd, &end, dir, rp, n);
                char *s = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_ENSURE_ASCII) : NULL;
                if (s)
                        fprintf(out, "%s\n", s);
                free(s);
                json_decref(doc);
        } else {
                report_text(out, &end, dir, rp, n);
        }
        report_free(rp, n);
        return report_close(out, report_path, signals_restore(&set, &old_mask, &old_chld, end.status));
}
