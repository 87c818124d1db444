#define _GNU_SOURCE 1
#include "util/pidfd.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

int pidfd_open_fd(pid_t pid)
{
        long fd = syscall(SYS_pidfd_open, pid, 0);
        return fd < 0 ? -errno : (int)fd;
}

int pidfd_signal(int pidfd, int sig)
{
        return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}
