/* pidfd: the two process-descriptor system calls (Linux 5.1/5.3), for every caller that
 * signals a process: a pidfd names one process for good, a PID may be reused. */
#pragma once
#include <sys/types.h>

/* pidfd_open(2): a descriptor for process pid (close-on-exec). Returns it, or -ESRCH (no such
 * process), -ENOSYS (the kernel lacks it), another negative errno. */
int pidfd_open_fd(pid_t pid);
/* pidfd_send_signal(2): sig to the process of pidfd. Returns 0, -ESRCH (it has exited), -EPERM,
 * or another negative errno. */
int pidfd_signal(int pidfd, int sig);
