/* teardown: the driver's side of a context's end — when it is released, when its owner died,
 * and what the driver logs.
 *
 * The real driver frees a client's memory in its file release handler, which the kernel
 * runs when the last reference to the open file description goes (__fput). A teardown
 * watcher stands for that handler: it waits, with F_OFD_SETLKW, for the context's OFD lock on
 * nvidiactl to go, which happens in the same __fput (locks_remove_file), so it wakes at the
 * moment of the release without looking at any process. It reaches nvidiactl through a hard
 * link outside DIR/dev, because the driver's teardown is not a process holding the device. */
#define _GNU_SOURCE 1 /* F_OFD_SETLKW */
#include "simstate.h"
#include "simstate_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fileio.h"
#include "util/parse.h"

/* DIR/driver, the driver's own files (made when missing). */
static int driver_dir(const char *dir)
{
        char p[PATH_MAX];
        int r = sim_path(p, sizeof(p), dir, "driver");
        if (r < 0)
                return r;
        return mkdir(p, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

int sim_driver_ctl_open(const char *dir)
{
        char link_path[PATH_MAX], dev[PATH_MAX];
        int r = sim_path(link_path, sizeof(link_path), dir, "driver/nvidiactl");
        if (r == 0)
                r = sim_path(dev, sizeof(dev), dir, "dev/nvidiactl");
        if (r == 0)
                r = driver_dir(dir);
        if (r < 0)
                return r;
        if (link(dev, link_path) < 0 && errno != EEXIST)
                return -errno;
        int fd = sim_open(dir, "driver/nvidiactl", O_RDONLY);
        if (fd < 0)
                return fd;
        /* a stale link (dev/nvidiactl replaced) would wait on the wrong inode forever */
        struct stat a, b;
        if (fstat(fd, &a) < 0 || stat(dev, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
                close(fd);
                return -ESTALE;
        }
        return fd;
}

int sim_api_lock(const char *dir, bool exclusive)
{
        char path[PATH_MAX];
        int r = sim_path(path, sizeof(path), dir, "driver/api.lock");
        if (r == 0)
                r = driver_dir(dir);
        if (r < 0)
                return r;
        /* read-only: flock needs no more, and every user's calls wait on the driver's lock */
        int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return -errno;
        /* the wait is the point: no bound (a caller that must not wait bounds its own calls) */
        while (flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0) {
                if (errno != EINTR) {
                        r = -errno;
                        close(fd);
                        return r;
                }
        }
        if (exclusive)
                return fd;
        close(fd);
        return 0;
}

bool sim_api_lock_held(const char *dir)
{
        int fd = sim_open(dir, "driver/api.lock", O_RDONLY | O_NONBLOCK);
        if (fd < 0)
                return false;
        struct stat st;
        bool held = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
        close(fd);
        return held;
}

int sim_owners_open(const char *dir)
{
        return sim_open(dir, "owners", O_RDONLY);
}

int sim_teardown_wait(int fd, unsigned id)
{
        /* a read lock conflicts with the holder's write lock only (OFD and POSIX locks conflict
         * with each other): other bytes and readers' F_OFD_GETLK probes are untouched, and
         * nothing is held once we return */
        struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = (off_t)id, .l_len = 1 };
        if (fcntl(fd, F_OFD_SETLKW, &fl) < 0)
                return -errno;
        fl.l_type = F_UNLCK;
        if (fcntl(fd, F_OFD_SETLK, &fl) < 0)
                return -errno;
        return 0;
}

/* Sequence number of the last record of a /dev/kmsg-format text ("PRIO,SEQ,..."), or -1. */
static int64_t kmsg_last_seq(char *text)
{
        int64_t last = -1;
        char *cur = text, *line;
        while ((line = sim_next_line(&cur))) {
                uint64_t prio, seq;
                const char *end;
                if (parse_u64_prefix(line, 10, &prio, &end) < 0 || *end != ',' ||
                    parse_u64_prefix(end + 1, 10, &seq, &end) < 0 || *end != ',' || seq > INT64_MAX / 2)
                        continue;
                if ((int64_t)seq > last)
                        last = (int64_t)seq;
        }
        return last;
}

int sim_kmsg_xid(const char *dir, const struct sim_gpu *g, unsigned xid, pid_t pid, const char *name,
                 const char *msg)
{
        struct buf b = BUF_INIT(4096);
        char *old = NULL, path[PATH_MAX];
        size_t len;
        struct timespec ts;
        int fd = -1, lock = -1, r;

        r = sim_path(path, sizeof(path), dir, "kmsg");
        if (r < 0)
                return r;
        lock = sim_lock(dir);
        if (lock < 0)
                return lock;
        r = sim_read(dir, "kmsg", &old, &len);
        if (r == -ENOENT)
                r = 0;
        if (r < 0)
                goto out;
        /* /dev/kmsg's clock is the kernel's since boot; CLOCK_BOOTTIME keeps it consistent with
         * the boot time (/proc/stat btime) that the reader adds to date a record */
        clock_gettime(CLOCK_BOOTTIME, &ts);
        r = buf_printf(&b, "3,%lld,%llu,-;NVRM: Xid (PCI:%04x:%02x:%02x): %u, pid=%d, name=",
                       (long long)(old ? kmsg_last_seq(old) + 1 : 0),
                       (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000u,
                       g->pci_domain, g->pci_bus, g->pci_device, xid, (int)pid);
        /* /dev/kmsg escapes unprintable bytes of a message as \xNN (printk_safe's rule) */
        for (const unsigned char *p = (const unsigned char *)name; r == 0 && *p; p++)
                r = *p < 0x20 || *p >= 0x7f || *p == '\\' ? buf_printf(&b, "\\x%02x", *p) : buf_putc(&b, (char)*p);
        if (r == 0)
                r = buf_printf(&b, ", %s\n", msg);
        if (r < 0)
                goto out;
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0) {
                r = -errno;
                goto out;
        }
        r = write_all(fd, buf_str(&b), b.len);
out:
        if (fd >= 0)
                close(fd);
        sim_unlock(lock);
        free(old);
        buf_free(&b);
        return r;
}
