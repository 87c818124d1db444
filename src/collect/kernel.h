/* kernel: the kernel log as records, from /dev/kmsg or from a saved log (file or stdin).
 *
 * Two layers:
 *  - pure decoders, (buf, len) in and a record out, no I/O: kmsg_parse_record() for one
 *    /dev/kmsg record ("prio,seq,usec,flags;message\n KEY=value\n..."), kmsg_parse_line()
 *    for one line of a saved log (raw dmesg, dmesg -T, dmesg -x, syslog, journalctl -k in
 *    short / short-iso / short-precise / short-monotonic, Talos, raw kmsg records, bare);
 *  - a reader over a file descriptor (struct kmsg_reader) that yields records one by one,
 *    counts EPIPE overruns, grows its buffer on EINVAL, joins continuation lines, caps every
 *    line, and never prints or exits. Its read() is injectable so tests can simulate the
 *    kernel's answers.
 *
 * Record format of /dev/kmsg: Documentation/ABI/testing/dev-kmsg in the kernel sources.
 * Timestamps of /dev/kmsg are microseconds since boot; they become wall-clock time by adding
 * the boot time, as `dmesg -T` does (approximate: suspend is not accounted for). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/buf.h"

/* Longest line (or record message) kept; longer ones are cut there and counted. */
#define KMSG_LINE_MAX 8192
/* An err buffer for the readers' "why it could not be read" (a path, strerror and the next step,
 * in any language): room enough that the sentence is never cut */
#define KMSG_ERR_MAX 1024
/* First read() buffer for /dev/kmsg and the most it grows to on EINVAL. */
#define KMSG_RECORD_BUF 8192
#define KMSG_RECORD_BUF_MAX (1u << 20)
/* A saved log (or standard input) read whole is at most this large. */
#define KMSG_FILE_MAX (256u << 20)
/* Most continuation lines joined to one record of a saved log. */
#define KMSG_MAX_CONT_LINES 16

enum kmsg_source {
        KMSG_SRC_KMSG = 0,      /* /dev/kmsg (one record per read) */
        KMSG_SRC_FILE,          /* a saved log, line by line */
        KMSG_SRC_STDIN,         /* the same, from standard input */
};

/* How the decoders turn the stamps they find into wall-clock time. */
struct kmsg_time_opts {
        double boot_time;       /* epoch seconds of boot, or < 0: monotonic stamps stay monotonic */
        double now;             /* epoch seconds; for year-less syslog stamps (< 0: unknown) */
};

/* One decoded record. text/raw point into storage owned by whoever produced the record (the
 * reader: valid until its next call; kmsg_parse_*: the caller's struct buf). */
struct kmsg_record {
        bool seq_known;
        uint64_t seq;
        int prio;               /* syslog facility << 3 | level, or -1 if unknown */
        bool monotonic_known;
        double monotonic;       /* seconds since boot */
        bool time_known;
        double time;            /* epoch seconds */
        const char *text;       /* the message, prefix stripped, unescaped; several lines of one
                                 * message are joined with '\n'; NUL-terminated, never holds NUL */
        size_t text_len;
        const char *raw;        /* the input as read (line(s) or record without dictionary) */
        size_t raw_len;
        bool truncated;         /* something was cut at KMSG_LINE_MAX */
};

/* Decode one /dev/kmsg record (as one read() returns it): header, message with \xNN
 * escapes undone, dictionary lines (starting with a space) ignored. The message is cut at
 * KMSG_LINE_MAX. text and raw are stored in *storage (reset first) and point into it.
 * Returns 0 or -EINVAL (not a record: no "prio,seq,usec,flags;" header). */
int kmsg_parse_record(const char *buf, size_t len, const struct kmsg_time_opts *t,
                      struct buf *storage, struct kmsg_record *ret);

/* Decode one line of a saved kernel log (no trailing newline): find its timestamp (if any),
 * strip the prefixes seen in the wild (dmesg "[  123.456789] ", dmesg -T "[Mon Nov 30
 * 10:11:12 2026] ", dmesg -x "kern  :err   : ", syslog "Nov 30 10:11:12 host kernel: ",
 * ISO 8601 stamps with or without zone, Talos "ip: kern: warning: [iso]: ", "<6>", bare
 * "kernel: "), and give the message. A line in /dev/kmsg record format is decoded with
 * kmsg_parse_record() (is_kmsg set). Local times use the TZ of the process.
 * Returns 0, or -EINVAL for an empty line. */
int kmsg_parse_line(const char *line, size_t len, const struct kmsg_time_opts *t,
                    struct buf *storage, struct kmsg_record *ret, bool *ret_is_kmsg);

/* Parse a date-time at the start of s: "YYYY-MM-DD", "YYYY-MM-DDTHH:MM[:SS[.frac]]" (also with
 * a space or '_' instead of 'T', ',' as decimal mark) with an optional zone "Z", "+HH:MM",
 * "+HHMM" or "+HH"; without a zone it is local time. Returns the number of characters
 * used (> 0) and stores epoch seconds, or -EINVAL. */
int kmsg_parse_iso8601(const char *s, size_t len, double *ret_epoch);

/* Boot time as `dmesg -T` computes it: CLOCK_REALTIME - CLOCK_BOOTTIME, else /proc/stat
 * "btime" under proc_root. Returns 0 or a negative errno. */
int kmsg_boot_time(const char *proc_root, double *ret_epoch);

/* read() as the reader sees it: return bytes read, or -1 with errno set. */
typedef ssize_t (*kmsg_read_fn)(int fd, void *buf, size_t len, void *ctx);

struct kmsg_reader {
        int fd;
        bool owns_fd;
        enum kmsg_source source;
        bool follow;            /* wait for more at the end instead of reporting it */
        struct kmsg_time_opts time;
        kmsg_read_fn read_fn;
        void *read_ctx;

        unsigned long overruns;         /* EPIPE: records overwritten before we read them */
        unsigned long truncated;        /* lines or records cut at KMSG_LINE_MAX */
        unsigned long records;          /* records returned */
        size_t record_buf_size;         /* current /dev/kmsg read size (grows on EINVAL) */
        uint64_t bytes;                 /* read so far in line mode (capped at KMSG_FILE_MAX) */

        /* private */
        char *rbuf;
        size_t rbuf_alloc;
        char *chunk;                    /* line mode: bytes read, not yet split */
        size_t chunk_len, chunk_off;
        struct buf line;                /* the line being read */
        bool line_overflow;
        struct buf head;                /* the record being assembled (head + continuations) */
        bool head_valid, head_is_kmsg;
        unsigned head_conts;
        struct buf out_text, out_raw, scratch;
        bool eof;
        bool regular;                   /* a regular file: follow it like tail -f */
};

/* Open /dev/kmsg (path; NULL means "/dev/kmsg") non-blocking for reading. On EACCES/EPERM
 * returns that error and writes into err (if errlen > 0) one line that says why and what to
 * do instead (run as root, or pass a saved log with --kmsg FILE); other errors likewise.
 * The reader then belongs to the caller (kmsg_reader_close). */
int kmsg_reader_open_kmsg(struct kmsg_reader *r, const char *path, bool follow,
                          const struct kmsg_time_opts *t, char *err, size_t errlen);

/* The one-line message kmsg_reader_open_kmsg gives for errno err (EACCES/EPERM: why, and the
 * alternatives). */
void kmsg_open_error(int err, const char *path, char *out, size_t outlen);

/* Open a saved log (path; "-" means standard input, which is not closed): a regular file (at
 * most KMSG_FILE_MAX unless following), or /dev/kmsg under any name (read as /dev/kmsg).
 * Anything else — /dev/zero, a FIFO, a socket — is refused with -FILEIO_ENOTREG and a line in
 * err; a directory -EISDIR; a larger file -EFBIG. */
int kmsg_reader_open_file(struct kmsg_reader *r, const char *path, bool follow,
                          const struct kmsg_time_opts *t, char *err, size_t errlen);

/* Set up a reader on an fd the caller keeps (mode KMSG_SRC_KMSG: one record per read;
 * otherwise lines). read_fn NULL means read(2). Never fails. */
void kmsg_reader_init_fd(struct kmsg_reader *r, int fd, enum kmsg_source source, bool follow,
                         const struct kmsg_time_opts *t, kmsg_read_fn read_fn, void *read_ctx);

/* Next record. Returns 1 with *ret filled (valid until the next call), 0 at the end (EOF of a
 * file; EAGAIN of /dev/kmsg), -EAGAIN when following and nothing is there yet (poll
 * kmsg_reader_fd() and call again; a file is polled by calling again after a pause), or a
 * negative errno (-EINVAL: a /dev/kmsg record longer than KMSG_RECORD_BUF_MAX). EPIPE and
 * EINTR are handled inside (EPIPE counted in overruns). */
int kmsg_reader_next(struct kmsg_reader *r, struct kmsg_record *ret);

/* The fd to poll for more (-1 if none). */
int kmsg_reader_fd(const struct kmsg_reader *r);

/* Free buffers and close an owned fd. Accepts a zeroed reader. */
void kmsg_reader_close(struct kmsg_reader *r);

/* "kmsg", "file", "stdin". */
const char *kmsg_source_name(enum kmsg_source s);
