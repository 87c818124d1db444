/* fileio: read small files (procfs, sysfs, fixtures) safely. */
#pragma once
#include <errno.h>
#include <stddef.h>
#include <sys/types.h>

/* read_file_at's "not a regular file" (a FIFO, a device such as /dev/zero, a socket, a
 * directory): EBADFD, which no open or read of a regular file gives. */
#define FILEIO_ENOTREG EBADFD

/* Read the whole file `name` relative to dirfd (AT_FDCWD for a path) into a malloc'd,
 * NUL-terminated buffer (the NUL is not counted in *ret_len). Only regular files are read
 * (opened non-blocking, so a FIFO never blocks): anything else gives -FILEIO_ENOTREG. Reads
 * with one read() of size+1 so truncation shows and retries larger, up to max bytes; a longer
 * file gives -EFBIG (at once when its size says so). Returns 0 or a negative errno
 * (-ENOENT/-ESRCH when a process vanished). */
int read_file_at(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len);

/* strerror() for read_file_at's errors: "not a regular file", "too large", else strerror. */
const char *fileio_strerror(int err);

/* Write data to path atomically: a temporary file in the same directory, fsync, rename.
 * The temporary name starts with '.' and does not end in the final suffix. */
int write_file_atomic(const char *path, const void *data, size_t len);

/* write() all of data to fd, retrying on EINTR and short writes. Returns 0 or a negative
 * errno (-EIO when write() returned 0). Async-signal-safe. */
int write_all(int fd, const void *data, size_t len);

/* mkdir -p with mode 0755. */
int mkdir_p(const char *path);

/* Read fd until end of file into out (capped by out's cap; what does not fit is read and
 * dropped), waiting at most until deadline_ms (monotonic_ms() clock). Returns 0 at end of
 * file, -ETIMEDOUT at the deadline, -EINTR when a signal interrupted the wait (call again to
 * go on; what was read stays in out), or another negative errno. */
struct buf;
int fd_read_deadline(int fd, struct buf *out, unsigned long long deadline_ms);

/* Remove dir and everything under it, depth first, following no symlink (nftw FTW_PHYS); an
 * entry already gone is no error. 0, or a negative errno (the first entry that could not be
 * removed stops it). */
int remove_tree(const char *dir);

/* "a directory", "a FIFO"... of a file that is not a regular one (for messages). */
const char *file_kind(unsigned mode);
/* dir is a directory: 0, or -1 with why ("no such directory", "not a directory (a file)", or
 * the error) for a message "OPTION DIR: why". */
int dir_why(const char *dir, char *why, size_t len);
