/* teardown: the driver's side of a context's end — when it is released, when its owner died,
 * and what the driver logs.
 *
 * The real driver frees a client's memory in its file release handler, which the kernel
 * runs when the last reference to the open file description goes (__fput). A teardown
 * watcher stands for that handler: it waits, with F_OFD_SETLKW, for the context's OFD lock on
 * nvidiactl to go, which happens in the same __fput (locks_remove_file), so it wakes at the
 * moment of the release without looking at any process. It holds no descriptor of nvidiactl
 * while it waits — the driver's teardown is no process holding the device, and a holder walk
 * matches the inode whatever the path: an inotify watch wakes it when a description of the
 * node is released, and /proc/locks tells whether the context's lock went with it. */
#define _GNU_SOURCE 1 /* F_OFD_SETLKW */
#include "simstate.h"
#include "simstate_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
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

/* /proc/locks, the kernel's list of every file lock: "N: OFDLCK ADVISORY WRITE -1 MAJ:MIN:INO
 * START END" (fs/locks.c lock_get_status; "N: -> ..." is a waiter, not a lock). A lock on byte
 * `start` of class OFDLCK and type `type` on file `key` ("" any): 1 found (its file into
 * ret_key when given), 0 none, or a negative errno. */
static int locks_find(const char *type, const char *key, long long start, char *ret_key, size_t keylen)
{
        char *text = NULL, *cur, *line;
        size_t len;
        int r = read_file_at(AT_FDCWD, "/proc/locks", 64u << 20, &text, &len);
        if (r < 0)
                return r;
        r = 0;
        cur = text;
        while (r == 0 && (line = sim_next_line(&cur))) {
                char *t[8], *save = NULL;
                size_t n = 0;
                for (char *w = strtok_r(line, " \t", &save); w && n < 8; w = strtok_r(NULL, " \t", &save))
                        t[n++] = w;
                int64_t a, b;
                if (n < 8 || strcmp(t[1], "OFDLCK") || strcmp(t[3], type) || (key[0] && strcmp(t[5], key)) ||
                    parse_i64(t[6], &a) < 0 ||
                    parse_i64(t[7], &b) < 0 || a != start || b != start)
                        continue;
                if (ret_key)
                        snprintf(ret_key, keylen, "%s", t[5]);
                r = 1;
        }
        free(text);
        return r;
}

/* A byte no context uses, to find nvidiactl in /proc/locks by a lock of our own */
#define LOCKS_PROBE_BASE (1ll << 40)

/* nvidiactl as /proc/locks names it: the superblock's device, which stat's st_dev is not on
 * overlayfs or btrfs. Found by a read lock of our own, on a description opened for this look
 * only and closed at once (before the watcher says it is ready). */
static int ctl_locks_key(const char *dir, char *key, size_t keylen)
{
        int fd = sim_open(dir, "dev/nvidiactl", O_RDONLY);
        if (fd < 0)
                return fd;
        long long at = LOCKS_PROBE_BASE + getpid();
        struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = (off_t)at, .l_len = 1 };
        int r = fcntl(fd, F_OFD_SETLK, &fl) < 0 ? -errno : locks_find("READ", "", at, key, keylen);
        close(fd);
        return r < 0 ? r : r == 0 ? -ENOENT : 0;
}

int sim_ctx_release_watch(const char *dir, struct sim_release_watch *w)
{
        char path[PATH_MAX];
        int r = sim_path(path, sizeof(path), dir, "dev/nvidiactl");
        if (r < 0)
                return r;
        r = ctl_locks_key(dir, w->key, sizeof(w->key));
        if (r < 0)
                return r;
        /* inotify holds the inode, never a description: nothing a holder walk sees. Out of
         * inotify instances or watches (fs.inotify.max_user_instances is 128 by default, one a
         * context): -1, and the wait looks every few milliseconds instead */
        w->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (w->fd >= 0 && inotify_add_watch(w->fd, path, IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) < 0) {
                r = errno;
                close(w->fd);
                w->fd = -1;
                if (r != ENOSPC && r != ENOMEM)
                        return -r;
        } else if (w->fd < 0 && errno != EMFILE && errno != ENFILE && errno != ENOMEM) {
                return -errno;
        }
        return 0;
}

int sim_ctx_release_wait(struct sim_release_watch *w, unsigned id)
{
        /* __fput reports the close (fsnotify_close) just before it drops the description's
         * locks (locks_remove_file): after an event, look again a few times, 2 ms apart; a
         * look every second besides, should an event be lost (queue overflow) */
        unsigned quick = 0;
        for (;;) {
                int r = locks_find("WRITE", w->key, id, NULL, 0);
                if (r <= 0)
                        return r;
                struct pollfd p = { .fd = w->fd, .events = POLLIN };
                int n = poll(&p, 1, quick ? 2 : w->fd < 0 ? 10 : 1000);
                if (n < 0 && errno != EINTR)
                        return -errno;
                if (n > 0) {
                        char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
                        while (read(w->fd, ev, sizeof(ev)) > 0)
                                ;
                        quick = 10;
                } else if (quick) {
                        quick--;
                }
        }
}

void sim_ctx_release_unwatch(struct sim_release_watch *w)
{
        if (w->fd >= 0)
                close(w->fd);
        w->fd = -1;
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
