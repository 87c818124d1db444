/* buf: a growable byte buffer with a hard cap (curl's dynbuf idea).
 * Every buffer an outsider can grow has a cap; appending past it fails with -E2BIG
 * and leaves the buffer as it was. The content is always NUL-terminated. */
#pragma once
#include <stdarg.h>
#include <stddef.h>

struct buf {
        char *data;     /* NULL until the first append */
        size_t len;
        size_t alloc;
        size_t cap;     /* maximum len; 0 means the default (64 MiB) */
};

#define BUF_INIT(c) ((struct buf){ .cap = (c) })

/* Append len bytes. Returns 0, -ENOMEM or -E2BIG (cap reached; buffer unchanged). */
int buf_append(struct buf *b, const void *p, size_t len);
int buf_puts(struct buf *b, const char *s);
int buf_putc(struct buf *b, char c);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Empty the buffer, keep the allocation. */
void buf_reset(struct buf *b);
/* Give the string to the caller (never NULL on success; "" for an empty buffer). */
char *buf_steal(struct buf *b);
void buf_free(struct buf *b);
/* The content as a C string ("" when empty). */
const char *buf_str(const struct buf *b);
