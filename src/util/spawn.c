#define _GNU_SOURCE 1 /* pipe2 */
#include "util/spawn.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
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
                /* a child that execs starts with no signal blocked: a mask survives exec, and
                 * a parent that takes its stop signals by sigwait (watch, serve) would leave
                 * its reclaim deaf to them (async-signal-safe) */
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
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

static bool env_named(const char *entry, const char *const *names, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                size_t l = strlen(names[i]);
                if (strncmp(entry, names[i], l) == 0 && entry[l] == '=')
                        return true;
        }
        return false;
}

int env_build(char *const *base, const char *const *names, const char *const *values, size_t n, char ***ret)
{
        size_t nb = 0;
        while (base && base[nb])
                nb++;
        char **env = calloc(nb + n + 1, sizeof(*env));
        if (!env)
                return -ENOMEM;
        size_t k = 0;
        for (size_t i = 0; i < nb; i++) {
                if (env_named(base[i], names, n))
                        continue;
                if (!(env[k++] = strdup(base[i])))
                        goto oom;
        }
        for (size_t i = 0; i < n; i++) {
                if (!values[i])
                        continue;
                size_t len = strlen(names[i]) + strlen(values[i]) + 2;
                if (!(env[k] = malloc(len)))
                        goto oom;
                snprintf(env[k++], len, "%s=%s", names[i], values[i]);
        }
        env[k] = NULL;
        *ret = env;
        return 0;
oom:
        env_free(env);
        return -ENOMEM;
}

void env_free(char **env)
{
        for (size_t i = 0; env && env[i]; i++)
                free(env[i]);
        free(env);
}
