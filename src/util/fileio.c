#define _GNU_SOURCE 1 /* nftw */
#include "util/fileio.h"

#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"

const char *fileio_strerror(int err)
{
        if (err < 0)
                err = -err;
        if (err == FILEIO_ENOTREG)
                return "not a regular file";
        if (err == EFBIG)
                return "too large";
        return strerror(err);
}

int read_file_at(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len)
{
        /* non-blocking: a FIFO must not block the open (nor a read); regular files ignore it */
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return -FILEIO_ENOTREG; /* /dev/zero, a FIFO, a socket, a directory: never read */
        }
        if ((uint64_t)st.st_size > (uint64_t)max) {
                close(fd);
                return -EFBIG; /* known too large before reading a byte */
        }
        size_t size = 4096;
        char *data = NULL;
        size_t len = 0;
        int r = 0;
        for (;;) {
                if (size > max + 1)
                        size = max + 1;
                char *p = realloc(data, size + 1);
                if (!p) {
                        r = -ENOMEM;
                        goto out;
                }
                data = p;
                ssize_t n = read(fd, data + len, size - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        goto out;
                }
                len += (size_t)n;
                if (n == 0)
                        break;
                if (len > max) {
                        r = -EFBIG;
                        goto out;
                }
                if (len == size)
                        size *= 2;
        }
        data[len] = '\0';
        *ret = data;
        *ret_len = len;
        data = NULL;
out:
        free(data);
        close(fd);
        return r;
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
        char tmp[4096];
        const char *slash = strrchr(path, '/');
        int n;
        if (slash)
                n = snprintf(tmp, sizeof(tmp), "%.*s/.%s.tmp.%ld", (int)(slash - path), path, slash + 1,
                             (long)getpid());
        else
                n = snprintf(tmp, sizeof(tmp), ".%s.tmp.%ld", path, (long)getpid());
        if (n < 0 || (size_t)n >= sizeof(tmp))
                return -ENAMETOOLONG;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, data, len);
        if (r < 0) {
                close(fd);
                unlink(tmp);
                return r;
        }
        if (fsync(fd) < 0 || close(fd) < 0) {
                int e = -errno;
                unlink(tmp);
                return e;
        }
        if (rename(tmp, path) < 0) {
                int e = -errno;
                unlink(tmp);
                return e;
        }
        return 0;
}

int mkdir_p(const char *path)
{
        char p[4096];
        size_t len = strlen(path);
        if (len == 0 || len >= sizeof(p))
                return -EINVAL;
        memcpy(p, path, len + 1);
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int fd_read_deadline(int fd, struct buf *out, unsigned long long deadline_ms)
{
        for (;;) {
                /* the clock of monotonic_ms() (util/deadline.h, not linked into the simulator) */
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                unsigned long long now = (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000ull;
                if (now >= deadline_ms)
                        return -ETIMEDOUT;
                unsigned long long left = deadline_ms - now;
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                int r = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
                if (r < 0)
                        return -errno;
                if (r == 0)
                        return -ETIMEDOUT;
                char chunk[4096];
                ssize_t got = read(fd, chunk, sizeof(chunk));
                if (got < 0)
                        return -errno;
                if (got == 0)
                        return 0;
                (void)buf_append(out, chunk, (size_t)got);
        }
}

int write_all(int fd, const void *data, size_t len)
{
        const char *p = data;
        while (len) {
                ssize_t w = write(fd, p, len);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                if (w == 0)
                        return -EIO;
                p += w;
                len -= (size_t)w;
        }
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

int remove_tree(const char *dir)
{
        return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -(errno ? errno : EIO) : 0;
}

const char *file_kind(unsigned m)
{
        return S_ISLNK(m) ? "a symbolic link" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
             : S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket" : "a special file";
}

int dir_why(const char *dir, char *why, size_t len)
{
        struct stat st;
        if (stat(dir, &st) < 0) {
                snprintf(why, len, "%s", errno == ENOENT ? "no such directory" : strerror(errno));
                return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
                snprintf(why, len, "not a directory (%s)", S_ISREG(st.st_mode) ? "a file" : file_kind(st.st_mode));
                return -1;
        }
        return 0;
}
