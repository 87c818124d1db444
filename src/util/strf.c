#define _GNU_SOURCE 1   /* vasprintf */
#include "util/strf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int str_vsetf(char **dst, const char *fmt, va_list ap)
{
        char *s;
        if (vasprintf(&s, fmt, ap) < 0)
                return -ENOMEM;
        free(*dst);
        *dst = s;
        return 0;
}

int str_setf(char **dst, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = str_vsetf(dst, fmt, ap);
        va_end(ap);
        return r;
}

int str_addf(char **dst, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *tail;
        int n = vasprintf(&tail, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        if (!*dst) {
                *dst = tail;
                return 0;
        }
        size_t hl = strlen(*dst);
        char *s = realloc(*dst, hl + (size_t)n + 1);
        if (!s) {
                free(tail);
                return -ENOMEM;
        }
        memcpy(s + hl, tail, (size_t)n + 1);
        free(tail);
        *dst = s;
        return 0;
}

int str_set(char **dst, const char *s)
{
        if (!s) {
                str_clear(dst);
                return 0;
        }
        char *c = strdup(s);
        if (!c)
                return -ENOMEM;
        free(*dst);
        *dst = c;
        return 0;
}

void str_autofree(char **s)
{
        free(*s);
}

void str_clear(char **dst)
{
        free(*dst);
        *dst = NULL;
}
