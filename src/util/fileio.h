/* fileio: read small files (procfs, sysfs, fixtures) safely. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* Read the whole file `name` relative to dirfd (AT_FDCWD for a path) into a malloc'd,
 * NUL-terminated buffer (the NUL is not counted in *ret_len). Reads with one read() of
 * size+1 so truncation shows and retries larger, up to max bytes; a longer file gives
 * -EFBIG. Returns 0 or a negative errno (-ENOENT/-ESRCH when a process vanished). */
int read_file_at(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len);

/* Write data to path atomically: a temporary file in the same directory, fsync, rename.
 * The temporary name starts with '.' and does not end in the final suffix. */
int write_file_atomic(const char *path, const void *data, size_t len);

/* mkdir -p with mode 0755. */
int mkdir_p(const char *path);
