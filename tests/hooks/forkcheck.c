#define _GNU_SOURCE 1
/* forkcheck: an LD_PRELOAD library for the tests. In the child of a fork() (until it execs), a
 * call that is not async-signal-safe and that the tools are known to have made there — setenv,
 * unsetenv, putenv, dlopen — writes "forkcheck: NAME between fork and exec" to stderr and ends
 * the child with status 99. A threaded process (ghostvram runs driver calls on threads) may
 * deadlock in such a call after fork, so the tests preload this to catch them. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int in_child;

static void after_fork_child(void)
{
        in_child = 1;
}

__attribute__((constructor)) static void forkcheck_init(void)
{
        pthread_atfork(NULL, NULL, after_fork_child);
}

static void caught(const char *name)
{
        static const char a[] = "forkcheck: ", b[] = " between fork and exec\n";
        (void)!write(2, a, sizeof(a) - 1);
        (void)!write(2, name, strlen(name));
        (void)!write(2, b, sizeof(b) - 1);
        _exit(99);
}

int setenv(const char *name, const char *value, int overwrite)
{
        if (in_child)
                caught("setenv");
        int (*real)(const char *, const char *, int) = (int (*)(const char *, const char *, int))dlsym(RTLD_NEXT, "setenv");
        return real(name, value, overwrite);
}

int unsetenv(const char *name)
{
        if (in_child)
                caught("unsetenv");
        int (*real)(const char *) = (int (*)(const char *))dlsym(RTLD_NEXT, "unsetenv");
        return real(name);
}

int putenv(char *s)
{
        if (in_child)
                caught("putenv");
        int (*real)(char *) = (int (*)(char *))dlsym(RTLD_NEXT, "putenv");
        return real(s);
}

void *dlopen(const char *file, int mode)
{
        if (in_child)
                caught("dlopen");
        void *(*real)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
        return real(file, mode);
}
