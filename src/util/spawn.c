#define _GNU_SOURCE 1 /* pipe2 */
#include "util/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int fork_pipe(int fds[2], pid_t *ret_pid)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        fflush(NULL); /* nothing buffered is written twice */
        pid_t pid = fork();
        if (pid < 0) {
                int e = -errno;
                close(p[0]);
                close(p[1]);
                return e;
        }
        if (pid == 0) {
                close(p[0]);
                fds[0] = -1;
                fds[1] = p[1];
        } else {
                close(p[1]);
                fds[0] = p[0];
                fds[1] = -1;
        }
        *ret_pid = pid;
        return 0;
}
