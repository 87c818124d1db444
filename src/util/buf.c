#include "util/buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_DEFAULT_CAP ((size_t)64 << 20)

static size_t buf_cap(const struct buf *b)
{
        return b->cap ? b->cap : BUF_DEFAULT_CAP;
}

static int buf_reserve(struct buf *b, size_t extra)
{
        if (extra > buf_cap(b) || b->len > buf_cap(b) - extra)
                return -E2BIG;
        size_t need = b->len + extra + 1;
        if (need <= b->alloc)
                return 0;
        size_t n = b->alloc ? b->alloc : 64;
        while (n < need)
                n *= 2;
        char *p = realloc(b->data, n);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->alloc = n;
        return 0;
}

int buf_append(struct buf *b, const void *p, size_t len)
{
        int r = buf_reserve(b, len);
        if (r < 0)
                return r;
        if (len)
                memcpy(b->data + b->len, p, len);
        b->len += len;
        b->data[b->len] = '\0';
        return 0;
}

int buf_puts(struct buf *b, const char *s)
{
        return buf_append(b, s, strlen(s));
}

int buf_putc(struct buf *b, char c)
{
        return buf_append(b, &c, 1);
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
        va_list aq;
        va_copy(aq, ap);
        int n = vsnprintf(NULL, 0, fmt, aq);
        va_end(aq);
        if (n < 0)
                return -EINVAL;
        int r = buf_reserve(b, (size_t)n);
        if (r < 0)
                return r;
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
        b->len += (size_t)n;
        return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = buf_vprintf(b, fmt, ap);
        va_end(ap);
        return r;
}

void buf_reset(struct buf *b)
{
        b->len = 0;
        if (b->data)
                b->data[0] = '\0';
}

char *buf_steal(struct buf *b)
{
        char *s = b->data ? b->data : strdup("");
        b->data = NULL;
        b->len = b->alloc = 0;
        return s;
}

void buf_free(struct buf *b)
{
        if (!b)
                return;
        free(b->data);
        b->data = NULL;
        b->len = b->alloc = 0;
}

const char *buf_str(const struct buf *b)
{
        return b->data ? b->data : "";
}
