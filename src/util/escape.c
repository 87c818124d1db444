#include "util/escape.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t utf8_seq_len(const unsigned char *s, size_t len)
{
        if (len == 0)
                return 0;
        unsigned char c = s[0];
        if (c < 0x80)
                return 1;
        size_t n;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
                n = 2;
                cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                cp = c & 0x07;
        } else {
                return 0;
        }
        if (len < n)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        /* overlong forms, surrogates, beyond U+10FFFF */
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

uint32_t utf8_decode(const unsigned char *s, size_t n)
{
        static const unsigned char mask[] = { 0, 0x7f, 0x1f, 0x0f, 0x07 };
        uint32_t cp = s[0] & mask[n];
        for (size_t i = 1; i < n; i++)
                cp = (cp << 6) | (s[i] & 0x3f);
        return cp;
}

int esc_terminal(struct buf *out, const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t i = 0;
        int r = 0;
        while (i < len && r == 0) {
                unsigned char c = p[i];
                if (c == '\\') {
                        r = buf_puts(out, "\\\\");
                        i++;
                } else if (c >= 0x20 && c < 0x7f) {
                        r = buf_putc(out, (char)c);
                        i++;
                } else if (c < 0x80) {
                        switch (c) {
                        case '\n': r = buf_puts(out, "\\n"); break;
                        case '\t': r = buf_puts(out, "\\t"); break;
                        case '\r': r = buf_puts(out, "\\r"); break;
                        case 0x1b: r = buf_puts(out, "\\e"); break;
                        default: r = buf_printf(out, "\\x%02x", c); break;
                        }
                        i++;
                } else {
                        size_t n = utf8_seq_len(p + i, len - i);
                        uint32_t cp = n ? utf8_decode(p + i, n) : 0;
                        if (n && !(cp >= 0x80 && cp < 0xa0) && cp != 0x2028 && cp != 0x2029) {
                                r = buf_append(out, p + i, n);
                                i += n;
                        } else if (n) {
                                for (size_t k = 0; k < n && r == 0; k++)
                                        r = buf_printf(out, "\\x%02x", p[i + k]);
                                i += n;
                        } else {
                                r = buf_printf(out, "\\x%02x", c);
                                i++;
                        }
                }
        }
        return r;
}

int esc_utf8_repair(struct buf *out, const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s;
        size_t i = 0;
        int r = 0;
        while (i < len && r == 0) {
                size_t n = p[i] ? utf8_seq_len(p + i, len - i) : 0;
                if (n) {
                        r = buf_append(out, p + i, n);
                        i += n;
                } else {
                        r = buf_puts(out, "\xef\xbf\xbd");
                        i++;
                }
        }
        return r;
}

char *cmdline_join(const char *raw, size_t len)
{
        while (len > 0 && raw[len - 1] == '\0')
                len--;
        char *s = malloc(len + 1);
        if (!s)
                return NULL;
        for (size_t i = 0; i < len; i++)
                s[i] = raw[i] ? raw[i] : ' ';
        s[len] = '\0';
        return s;
}

int utf8_valid_all(const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s;
        for (size_t i = 0; i < len;) {
                size_t n = p[i] ? utf8_seq_len(p + i, len - i) : 0;
                if (!n)
                        return 0;
                i += n;
        }
        return 1;
}

static bool shell_bare(unsigned char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("_@%+=:,./-", c));
}

/* Printable for the terminal (what esc_terminal lets through unchanged, but a backslash)? */
static bool shell_printable(const unsigned char *p, size_t len)
{
        for (size_t i = 0; i < len;) {
                if (p[i] >= 0x20 && p[i] < 0x7f) {
                        i++;
                        continue;
                }
                size_t n = p[i] >= 0x80 ? utf8_seq_len(p + i, len - i) : 0;
                uint32_t cp = n ? utf8_decode(p + i, n) : 0;
                if (!n || (cp >= 0x80 && cp < 0xa0) || cp == 0x2028 || cp == 0x2029)
                        return false;
                i += n;
        }
        return true;
}

int esc_shell(struct buf *out, const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s;
        bool bare = len > 0;
        for (size_t i = 0; i < len && bare; i++)
                bare = shell_bare(p[i]);
        if (bare)
                return buf_append(out, s, len);
        int r;
        if (shell_printable(p, len)) {
                r = buf_putc(out, '\'');
                for (size_t i = 0; i < len && r == 0; i++)
                        r = p[i] == '\'' ? buf_puts(out, "'\\''") : buf_putc(out, (char)p[i]);
                return r ? r : buf_putc(out, '\'');
        }
        /* $'...' decodes the same escapes esc_terminal writes, but a quote must be \' there */
        r = buf_puts(out, "$'");
        for (size_t i = 0; i < len && r == 0; i++) {
                size_t j = i;
                while (j < len && p[j] != '\'')
                        j++;
                r = esc_terminal(out, s + i, j - i);
                if (r == 0 && j < len)
                        r = buf_puts(out, "\\'");
                i = j;
        }
        return r ? r : buf_putc(out, '\'');
}

char *esc_shell_dup(const char *s)
{
        struct buf b = BUF_INIT(0);
        if (esc_shell(&b, s, strlen(s)) < 0) {
                buf_free(&b);
                return NULL;
        }
        return buf_steal(&b);
}
