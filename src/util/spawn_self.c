/* spawn_self (util/spawn.h): apart from spawn.c, which the simulator's libraries link, so that
 * they carry no stop-signal state. */
#include "util/spawn.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/stopsig.h"

int spawn_self(const char *path, const char *const args[], struct buf *out, bool pass_stop)
{
        char exe[4096];
        if (path) {
                snprintf(exe, sizeof(exe), "%s", path);
        } else {
                ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
                if (len < 0)
                        return -errno;
                exe[len] = '\0';
        }
        int p[2];
        pid_t pid;
        int r = fork_pipe(p, &pid);
        if (r < 0)
                return r;
        if (pid == 0) {
                if (out)
                        dup2(p[1], STDOUT_FILENO);
                execv(exe, (char *const *)args);
                _exit(127);
        }
        char chunk[512];
        ssize_t n;
        bool passed = false;
        for (;;) {
                /* a stop signal is passed on once: the child stops and writes its report
                 * (looked at every 100 ms: a signal can land before the read blocks) */
                if (pass_stop && !passed && stopsig_pending()) {
                        kill(pid, stopsig_pending());
                        passed = true;
                }
                struct pollfd pfd = { .fd = p[0], .events = POLLIN };
                if (pass_stop && !passed && poll(&pfd, 1, 100) <= 0)
                        continue;
                n = read(p[0], chunk, sizeof(chunk));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                if (out)
                        buf_append(out, chunk, (size_t)n);
        }
        close(p[0]);
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}
