/* escape: make hostile text (command lines, comm, cgroup paths, kernel messages) safe.
 * Every function appends to a struct buf and returns 0 or a negative errno. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/buf.h"

/* For a terminal: printable ASCII and valid UTF-8 (except C1 controls and U+2028/9) pass,
 * backslash becomes "\\", control bytes become \n \t \r \e or \xNN, invalid UTF-8 bytes \xNN.
 * No raw control character can come out of it. */
int esc_terminal(struct buf *out, const char *s, size_t len);

/* For a shell command line a user will paste: s as one word. Text of only [A-Za-z0-9_@%+=:,./-]
 * (and not empty) is left bare; printable text goes in single quotes ('\'' for a quote); text
 * with control bytes or invalid UTF-8 becomes $'...' (bash, zsh, ksh, POSIX.1-2024 sh) with
 * \n \t \r \e \xNN, \\ and \' inside, so no raw control character reaches the terminal. */
int esc_shell(struct buf *out, const char *s, size_t len);

/* esc_shell of the C string s, malloc'd (the caller frees it); NULL on ENOMEM. */
char *esc_shell_dup(const char *s);

/* Repair to valid UTF-8: each invalid byte becomes U+FFFD. NUL bytes become U+FFFD too. */
int esc_utf8_repair(struct buf *out, const char *s, size_t len);

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if the bytes there are not one. */
size_t utf8_seq_len(const unsigned char *s, size_t len);
/* The code point of the valid n-byte sequence at s (n from utf8_seq_len). */
uint32_t utf8_decode(const unsigned char *s, size_t n);

/* A command line from /proc/PID/cmdline: NUL separators become spaces, a trailing NUL
 * is dropped. Returns a malloc'd string (not escaped), or NULL on ENOMEM. */
char *cmdline_join(const char *raw, size_t len);

/* Is the whole buffer valid UTF-8 without NUL bytes? */
int utf8_valid_all(const char *s, size_t len);
