/* kernel_text: bounded text helpers shared by the kernel-log decoders (kernel.c, xid*.c).
 * Private to src/collect; everything works on [p, end) ranges that need not be NUL-terminated. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static inline bool kt_digit(char c)
{
        return c >= '0' && c <= '9';
}

/* Does [p, end) start with lit? */
static inline bool kt_starts(const char *p, const char *end, const char *lit)
{
        size_t n = strlen(lit);
        return end - p >= (ptrdiff_t)n && memcmp(p, lit, n) == 0;
}

/* First occurrence of lit in [p, end), or NULL. */
static inline const char *kt_find(const char *p, const char *end, const char *lit)
{
        size_t n = strlen(lit);
        for (; n && end - p >= (ptrdiff_t)n; p++)
                if (*p == lit[0] && memcmp(p, lit, n) == 0)
                        return p;
        return NULL;
}
