/* strf: sentences on the heap, as long as they need to be.
 *
 * Every human sentence (evidence, summary, next step, why, reason, note) is formatted by
 * str_setf or str_addf, never into a fixed array: a fixed array cuts a message mid-word
 * ("... the only GPU and the only entr"), and a cut next step is a command that fails when
 * pasted. A renderer that must fit a width cuts on its own, at a word, with an ellipsis.
 *
 * The strings are owned by the field they are stored in; NULL is the empty sentence. */
#pragma once
#include <stdarg.h>
#include <stdbool.h>

/* Replace *dst (freed; may be NULL) with the formatted text. Returns 0, or -ENOMEM with *dst
 * left as it was. */
int str_setf(char **dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int str_vsetf(char **dst, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Append the formatted text to *dst (NULL: the empty string). Returns 0, or -ENOMEM with *dst
 * left as it was. */
int str_addf(char **dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Replace *dst with a copy of s (NULL: the empty sentence). Returns 0, or -ENOMEM with *dst
 * left as it was. */
int str_set(char **dst, const char *s);
/* Free *dst and make it the empty sentence (NULL). */
void str_clear(char **dst);

/* A local sentence freed on every path out of its block:
 *   char *why STR_AUTOFREE = NULL; */
void str_autofree(char **s);
#define STR_AUTOFREE __attribute__((cleanup(str_autofree)))

/* s, or "" for the empty sentence. */
static inline const char *str_or_empty(const char *s)
{
        return s ? s : "";
}

static inline bool str_empty(const char *s)
{
        return !s || !*s;
}
