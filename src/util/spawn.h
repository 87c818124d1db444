/* spawn: fork with a pipe from the child to the parent, the start of every "run it and read
 * what it says" (nvidia-smi, a job reporting its PIDs, ghostvram running itself). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Create a close-on-exec pipe and fork. In the parent: *ret_pid is the child, fds[0] the read
 * end (the write end is closed). In the child: *ret_pid is 0, fds[1] the write end (the read
 * end is closed; it is close-on-exec: dup2 it where an exec'd program must see it) and no signal
 * is blocked (the parent's mask would survive exec). Returns 0
 * or a negative errno (nothing forked, nothing left open). */
int fork_pipe(int fds[2], pid_t *ret_pid);

/* An environment for execve(), built before fork (between fork and exec only async-signal-safe
 * calls may run, and setenv/malloc are not): a copy of `base` (NULL-terminated NAME=value
 * strings, e.g. environ) without the names in `names`, then NAME=value for each pair
 * names[i]/values[i] (a NULL value: the name is removed only). Returns 0 and *ret (free with
 * env_free), or -ENOMEM. */
int env_build(char *const *base, const char *const *names, const char *const *values, size_t n, char ***ret);
void env_free(char **env);

/* Run a ghostvram again (path, or NULL: this one, /proc/self/exe) with args (args[0] is the
 * name) and capture its standard output into out (capped by out's cap; NULL: not redirected).
 * With pass_stop, a stop signal (util/stopsig) that comes meanwhile is passed on to the child,
 * once. Returns the exit status (128+N for signal N) or a negative errno. */
struct buf;
int spawn_self(const char *path, const char *const args[], struct buf *out, bool pass_stop);
