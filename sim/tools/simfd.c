/* gv-simfd: tests only. Hands a simulated job's open file descriptions of the device nodes to
 * a process that is not of the job — the two ways the kernel lets an unrelated process come to
 * share an open file description (the same struct file, which keeps a context alive exactly as
 * the job's own descriptors do; docs/simulator.md, "The core rule"):
 *
 *   gv-simfd take PID PATH...      pidfd_open(PID) and pidfd_getfd() every descriptor of PID
 *                                  whose /proc/PID/fd link is one of the PATHs (each resolved
 *                                  with realpath first); prints "ready N" (N descriptors
 *                                  taken) and holds them until killed
 *   gv-simfd recv SOCKET           listens on the unix socket SOCKET (created; removed first
 *                                  if there), prints "listening", accepts one connection,
 *                                  receives descriptors sent with SCM_RIGHTS, prints
 *                                  "ready N" and holds them until killed
 *   gv-simfd send PID SOCKET PATH...
 *                                  takes PID's descriptors as `take` does, sends them over
 *                                  SOCKET in one SCM_RIGHTS message, prints "sent N", exits
 *
 * A descriptor from pidfd_getfd or SCM_RIGHTS refers to the sender's open file description
 * (kcmp(KCMP_FILE) says the same file): no new open, no new description. Opening
 * /proc/PID/fd/N instead would open the file again — a description of its own — which is why
 * this helper exists.
 *
 * Errors: one line "error MESSAGE" on stdout and exit 1; exit 3 when pidfd_open or pidfd_getfd
 * is refused (EPERM: not allowed to ptrace PID — not root, Yama), so that a test can tell a
 * restriction of the machine from a failure. Holders only ever sleep (pause); SIGTERM and
 * SIGKILL end them. */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define MAX_TAKEN 64

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
        va_list ap;
        fputs("error ", stdout);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
        return code;
}

static void __attribute__((noreturn)) hold(int n)
{
        printf("ready %d\n", n);
        fflush(stdout);
        for (;;)
                pause();
}

/* pidfd_getfd() each descriptor of pid whose link is one of paths into out (up to max);
 * returns how many (> 0), or the exit code after an error line. */
static int take(pid_t pid, char **paths, int npaths, int *out, int max, int *n)
{
        char want[MAX_TAKEN][PATH_MAX], dirp[64], lp[PATH_MAX], link[PATH_MAX];
        if (npaths > MAX_TAKEN)
                return fail(1, "too many paths");
        for (int i = 0; i < npaths; i++)
                if (!realpath(paths[i], want[i]))
                        return fail(1, "%s: %s", paths[i], strerror(errno));
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
                return fail(errno == EPERM ? 3 : 1, "pidfd_open %d: %s", (int)pid, strerror(errno));
        snprintf(dirp, sizeof(dirp), "/proc/%d/fd", (int)pid);
        DIR *d = opendir(dirp);
        if (!d)
                return fail(errno == EACCES || errno == EPERM ? 3 : 1, "%s: %s", dirp, strerror(errno));
        struct dirent *e;
        *n = 0;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                snprintf(lp, sizeof(lp), "%s/%s", dirp, e->d_name);
                ssize_t len = readlink(lp, link, sizeof(link) - 1);
                if (len < 0)
                        continue;
                link[len] = 0;
                int match = 0;
                for (int i = 0; i < npaths && !match; i++)
                        match = strcmp(link, want[i]) == 0;
                if (!match)
                        continue;
                if (*n >= max) {
                        closedir(d);
                        return fail(1, "more than %d descriptors", max);
                }
                int fd = (int)syscall(SYS_pidfd_getfd, pidfd, atoi(e->d_name), 0);
                if (fd < 0) {
                        int err = errno;
                        closedir(d);
                        return fail(err == EPERM ? 3 : 1, "pidfd_getfd %d fd %s: %s", (int)pid, e->d_name,
                                    strerror(err));
                }
                out[(*n)++] = fd;
        }
        closedir(d);
        close(pidfd);
        if (*n == 0)
                return fail(1, "process %d holds none of the paths", (int)pid);
        return 0;
}

static int sock_addr(const char *path, struct sockaddr_un *a)
{
        memset(a, 0, sizeof(*a));
        a->sun_family = AF_UNIX;
        if (strlen(path) >= sizeof(a->sun_path))
                return -1;
        strcpy(a->sun_path, path);
        return 0;
}

static int do_recv(const char *path)
{
        struct sockaddr_un a;
        if (sock_addr(path, &a) < 0)
                return fail(1, "%s: path too long for a unix socket", path);
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return fail(1, "socket: %s", strerror(errno));
        (void)unlink(path);
        if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 1) < 0)
                return fail(1, "%s: %s", path, strerror(errno));
        printf("listening\n");
        fflush(stdout);
        int c;
        while ((c = accept4(s, NULL, NULL, SOCK_CLOEXEC)) < 0 && errno == EINTR)
                ;
        if (c < 0)
                return fail(1, "accept: %s", strerror(errno));
        char byte;
        union {
                char buf[CMSG_SPACE(sizeof(int) * MAX_TAKEN)];
                struct cmsghdr align;
        } u;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        ssize_t r;
        while ((r = recvmsg(c, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
                ;
        if (r <= 0)
                return fail(1, "recvmsg: %s", r < 0 ? strerror(errno) : "connection closed with no message");
        if (m.msg_flags & MSG_CTRUNC)
                return fail(1, "recvmsg: descriptors truncated");
        int n = 0;
        for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
                if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
                        n += (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        close(c);
        close(s);
        (void)unlink(path);
        if (n == 0)
                return fail(1, "no descriptor received");
        hold(n);
}

static int do_send(pid_t pid, const char *path, char **paths, int npaths)
{
        int fds[MAX_TAKEN], n, r;
        struct sockaddr_un a;
        if (sock_addr(path, &a) < 0)
                return fail(1, "%s: path too long for a unix socket", path);
        r = take(pid, paths, npaths, fds, MAX_TAKEN, &n);
        if (r)
                return r;
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
                return fail(1, "connect %s: %s", path, strerror(errno));
        union {
                char buf[CMSG_SPACE(sizeof(int) * MAX_TAKEN)];
                struct cmsghdr align;
        } u;
        memset(&u, 0, sizeof(u));
        char byte = 0;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                            .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n) };
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        if (!h)
                return fail(1, "no room for the descriptors");
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
        memcpy(CMSG_DATA(h), fds, sizeof(int) * (size_t)n);
        ssize_t w;
        while ((w = sendmsg(s, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
                ;
        if (w != 1)
                return fail(1, "sendmsg: %s", w < 0 ? strerror(errno) : "short write");
        /* the receiver has its references once sendmsg returns (they are in flight in its socket
         * buffer until it reads them); wait for it to close its end, so that when this helper
         * is gone the descriptions are in the receiver's table */
        while (read(s, &byte, 1) < 0 && errno == EINTR)
                ;
        close(s);
        printf("sent %d\n", n);
        return 0;
}

static int usage(void)
{
        fprintf(stderr, "Usage: gv-simfd take PID PATH... | recv SOCKET | send PID SOCKET PATH...\n"
                        "Tests only: share a process's open file descriptions (pidfd_getfd, SCM_RIGHTS).\n");
        return 2;
}

static int parse_pid(const char *s, pid_t *pid)
{
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || *end || v <= 0 || v > INT_MAX)
                return -1;
        *pid = (pid_t)v;
        return 0;
}

int main(int argc, char **argv)
{
        pid_t pid;
        signal(SIGPIPE, SIG_IGN);
        if (argc >= 4 && !strcmp(argv[1], "take")) {
                int fds[MAX_TAKEN], n;
                if (parse_pid(argv[2], &pid) < 0)
                        return usage();
                int r = take(pid, argv + 3, argc - 3, fds, MAX_TAKEN, &n);
                if (r)
                        return r;
                hold(n);
        }
        if (argc == 3 && !strcmp(argv[1], "recv"))
                return do_recv(argv[2]);
        if (argc >= 5 && !strcmp(argv[1], "send")) {
                if (parse_pid(argv[2], &pid) < 0)
                        return usage();
                return do_send(pid, argv[3], argv + 4, argc - 4);
        }
        return usage();
}
