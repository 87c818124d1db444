/* shm: the reader of host shared memory and its sentence (collect/shm.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "collect/shm.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/strf.h"
#include "util/i18n.h"


#define SHM_FILE_MAX (4u << 20)         /* /proc/sysvipc/shm: ~200 bytes a segment */
#define SHM_MEMINFO_MAX (64u << 10)
#define SHM_TMPFS_MAGIC 0x01021994      /* linux/magic.h TMPFS_MAGIC */

static void user_name(uid_t uid, char *out, size_t outlen)
{
        struct passwd pw, *res = NULL;
        char pbuf[4096];
        if (getpwuid_r(uid, &pw, pbuf, sizeof(pbuf), &res) == 0 && res && res->pw_name && strlen(res->pw_name) < outlen)
                snprintf(out, outlen, "%s", res->pw_name);
        else
                snprintf(out, outlen, "%u", (unsigned)uid);
}

static int path_join(const char *root, const char *rel, char *out, size_t outlen)
{
        int n = snprintf(out, outlen, "%s/%s", root, rel);
        return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static void read_proc(const char *proc_root, struct shm_report *r)
{
        char path[4096];
        char *buf = NULL;
        size_t len = 0;
        if (path_join(proc_root, "meminfo", path, sizeof(path)) == 0 &&
            read_file_at(AT_FDCWD, path, SHM_MEMINFO_MAX, &buf, &len) == 0)
                r->meminfo_read = shm_parse_meminfo(buf, len, &r->mem_total, &r->mem_total_known, &r->shmem,
                                                    &r->shmem_known) == 0;
        free(buf);
        buf = NULL;
        if (path_join(proc_root, "sysvipc/shm", path, sizeof(path)) == 0 &&
            read_file_at(AT_FDCWD, path, SHM_FILE_MAX, &buf, &len) == 0)
                r->sysv_read = shm_parse_sysv(buf, len, &r->sysv) == 0;
        free(buf);
        for (size_t i = 0; i < r->sysv.n; i++)
                if (r->sysv.segs[i].uid_known)
                        user_name(r->sysv.segs[i].uid, r->sysv.segs[i].user, sizeof(r->sysv.segs[i].user));
}

/* Keep f among the largest (top is sorted, largest first); takes f->name or frees it. */
static void top_insert(struct shm_dir *d, struct shm_file *f)
{
        unsigned i = d->n_top;
        if (i == SHM_TOP_FILES) {
                if (f->bytes <= d->top[i - 1].bytes) {
                        free(f->name);
                        return;
                }
                free(d->top[--i].name);
        } else {
                d->n_top++;
        }
        while (i > 0 && d->top[i - 1].bytes < f->bytes) {
                d->top[i] = d->top[i - 1];
                i--;
        }
        d->top[i] = *f;
}

static void owner_add(struct shm_dir *d, uid_t uid, uint64_t bytes)
{
        unsigned i = 0;
        while (i < d->n_owners && d->owners[i].uid != uid)
                i++;
        if (i == d->n_owners) {
                if (i == SHM_MAX_OWNERS) {
                        d->other_owner_files++;
                        return;
                }
                d->n_owners++;
                d->owners[i] = (struct shm_owner){ .uid = uid };
                user_name(uid, d->owners[i].user, sizeof(d->owners[i].user));
        }
        d->owners[i].files++;
        d->owners[i].bytes += bytes;
        /* by bytes, largest first */
        while (i > 0 && d->owners[i - 1].bytes < d->owners[i].bytes) {
                struct shm_owner t = d->owners[i - 1];
                d->owners[i - 1] = d->owners[i];
                d->owners[i] = t;
                i--;
        }
}

/* The directory's entries, bounded by count and time; 0, or -ENOMEM. */
static int walk_dir(DIR *dir, const struct shm_opts *o, struct shm_dir *d)
{
        unsigned max = o->max_entries ? o->max_entries : SHM_DEFAULT_ENTRIES;
        unsigned long long end = monotonic_ms() + (o->timeout_ms ? o->timeout_ms : 1000);
        unsigned seen = 0;
        struct dirent *e;
        d->complete = true;
        while ((e = readdir(dir))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                        continue;
                if (seen++ == max || monotonic_ms() > end) {
                        d->complete = false;
                        break;
                }
                struct stat st;
                if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* removed meanwhile */
                if (S_ISDIR(st.st_mode)) {
                        d->skipped_dirs++;
                        continue;
                }
                if (!S_ISREG(st.st_mode))
                        continue;
                struct shm_file f = { .uid = st.st_uid };
                uint64_t alloc = (uint64_t)st.st_blocks * 512;
                f.bytes = (uint64_t)st.st_size < alloc ? (uint64_t)st.st_size : alloc;
                d->files++;
                d->files_bytes += f.bytes;
                owner_add(d, st.st_uid, f.bytes);
                if (d->n_top == SHM_TOP_FILES && f.bytes <= d->top[SHM_TOP_FILES - 1].bytes)
                        continue;
                f.name = strdup(e->d_name);
                if (!f.name)
                        return -ENOMEM;
                user_name(f.uid, f.user, sizeof(f.user));
                top_insert(d, &f);
        }
        return 0;
}

/* Whether the directory is the root of a filesystem of its own (a mount point, or /): only then
 * is the filesystem's usage the directory's. The simulated host's dev/shm is a directory on
 * whatever holds it, often a tmpfs /tmp shared with everything else there. */
static bool fs_root(int dfd)
{
        struct stat self, parent;
        if (fstat(dfd, &self) != 0 || fstatat(dfd, "..", &parent, 0) != 0)
                return false;
        return self.st_dev != parent.st_dev || self.st_ino == parent.st_ino;
}

static int read_dir(const struct shm_opts *o, struct shm_report *r)
{
        struct shm_dir *d = &r->dir;
        int fd = open(o->shm_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 0; /* not there, not ours: left unread */
        DIR *dir = fdopendir(fd);
        if (!dir) {
                close(fd);
                return 0;
        }
        d->path = strdup(o->shm_dir);
        int ret = d->path ? walk_dir(dir, o, d) : -ENOMEM;
        struct statfs sf;
        struct statvfs sv;
        d->tmpfs = fs_root(dirfd(dir)) && fstatfs(dirfd(dir), &sf) == 0 && sf.f_type == SHM_TMPFS_MAGIC &&
                   fstatvfs(dirfd(dir), &sv) == 0;
        if (d->tmpfs) {
                /* the whole filesystem, also what the walk did not see */
                d->size = (uint64_t)sv.f_blocks * sv.f_frsize;
                d->used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
        } else {
                d->used = d->files_bytes; /* a directory on another filesystem (the simulated host's) */
        }
        closedir(dir);
        r->dir_read = ret == 0;
        return ret;
}

int shm_collect(const struct shm_opts *o, struct shm_report **ret)
{
        struct shm_report *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        if (o->proc_root)
                read_proc(o->proc_root, r);
        if (o->shm_dir && read_dir(o, r) < 0) {
                shm_report_free(r);
                return -ENOMEM;
        }
        if (!r->meminfo_read && !r->sysv_read && !r->dir_read) {
                shm_report_free(r);
                return -ENODATA;
        }
        shm_judge(r);
        *ret = r;
        return 0;
}

void shm_report_free(struct shm_report *r)
{
        if (!r)
                return;
        shm_sysv_clear(&r->sysv);
        for (unsigned i = 0; i < r->dir.n_top; i++)
                free(r->dir.top[i].name);
        free(r->dir.path);
        free(r);
}

int shm_size_text(uint64_t bytes, char **ret)
{
        /* the unit that its one decimal does not round up to 1024 ("1024.0 MiB" is 1.0 GiB) */
        if ((double)bytes / (double)(1u << 20) >= 1023.95)
                return str_setf(ret, "%.1f GiB", (double)bytes / (double)SHM_GIB);
        if (bytes >= (1u << 20))
                return str_setf(ret, "%.1f MiB", (double)bytes / (double)(1u << 20));
        if (bytes >= 1024)
                return str_setf(ret, "%llu KiB", (unsigned long long)(bytes / 1024));
        return str_setf(ret, _("%llu bytes"), (unsigned long long)bytes);
}

/* "3 files of user alice", "5 files of users alice, bob and 1 other" */
static int describe_files(const struct shm_dir *d, struct buf *b)
{
        int r = buf_printf(b, P_("%u file", "%u files", d->files), d->files);
        unsigned shown = d->n_owners < 3 ? d->n_owners : 3;
        if (r < 0 || !shown)
                return r;
        r = buf_puts(b, shown == 1 && d->n_owners == 1 && !d->other_owner_files ? _(" of user ") : _(" of users "));
        for (unsigned i = 0; r == 0 && i < shown; i++) {
                if (i)
                        r = buf_puts(b, i + 1 == shown && shown == d->n_owners && !d->other_owner_files ? _(" and ") : ", ");
                if (r == 0)
                        r = esc_terminal(b, d->owners[i].user, strlen(d->owners[i].user));
        }
        unsigned others = d->n_owners - shown + (d->other_owner_files ? 1 : 0);
        if (r == 0 && others)
                r = buf_printf(b, P_(" and %u other", " and %u others", others), others);
        return r;
}

/* "2 segments of PID 4242", "3 segments of PIDs 4242, 4250 and 1 other" (by creator); a creator
 * the kernel shows as 0 lives in a PID namespace the reader cannot see (ipc/shm.c translates
 * shm_cprid into the reader's): ", 1 of them by a creator in another PID namespace" */
static int describe_sysv(const struct shm_sysv *s, struct buf *b)
{
        int r = buf_printf(b, P_("%zu segment", "%zu segments", s->n_total), s->n_total);
        pid_t pids[3];
        unsigned n = 0, more = 0;
        size_t hidden = 0;
        for (size_t i = 0; i < s->n; i++) {
                pid_t p = s->segs[i].cpid;
                bool dup = p == 0;
                hidden += p == 0;
                for (size_t j = 0; j < i && !dup; j++)
                        dup = s->segs[j].cpid == p;
                if (dup)
                        continue;
                if (n < 3)
                        pids[n++] = p;
                else
                        more++;
        }
        if (r == 0 && n)
                r = buf_puts(b, n == 1 && !more ? _(" of PID ") : _(" of PIDs "));
        for (unsigned i = 0; r == 0 && i < n; i++)
                r = buf_printf(b, "%s%d", !i ? "" : i + 1 == n && !more ? _(" and ") : ", ", (int)pids[i]);
        if (r == 0 && more)
                r = buf_printf(b, P_(" and %u other", " and %u others", more), more);
        if (r == 0 && hidden && n)
                r = buf_printf(b, P_(", %zu of them by a creator in another PID namespace",
                                     ", %zu of them by creators in other PID namespaces", hidden), hidden);
        else if (r == 0 && hidden)
                r = buf_puts(b, P_(", its creator in another PID namespace", ", their creators in other PID namespaces",
                                   hidden));
        return r;
}

int shm_describe(const struct shm_report *rep, char **ret)
{
        char *tot STR_AUTOFREE = NULL, *dir STR_AUTOFREE = NULL, *sv STR_AUTOFREE = NULL;
        struct buf b = BUF_INIT(0);
        int r = shm_size_text(rep->total, &tot);
        if (r == 0)
                r = buf_printf(&b, _("host shared memory %s"), tot);
        const char *sep = " (";
        if (r == 0 && rep->dir_read && (r = shm_size_text(rep->dir.used, &dir)) == 0) {
                r = buf_puts(&b, sep);
                if (r == 0)
                        r = esc_terminal(&b, rep->dir.path, strlen(rep->dir.path));
                if (r == 0)
                        r = buf_printf(&b, " %s: ", dir);
                if (r == 0)
                        r = describe_files(&rep->dir, &b);
                if (r == 0 && !rep->dir.complete)
                        r = buf_puts(&b, _(", not all looked at"));
                sep = "; ";
        }
        if (r == 0 && rep->sysv_read && rep->sysv.n_total && (r = shm_size_text(rep->sysv.bytes, &sv)) == 0) {
                r = buf_printf(&b, _("%sSysV %s: "), sep, sv);
                if (r == 0)
                        r = describe_sysv(&rep->sysv, &b);
                sep = "; ";
        }
        if (r == 0 && sep[0] == ';')
                r = buf_putc(&b, ')');
        if (r == 0)
                r = str_set(ret, buf_str(&b));
        buf_free(&b);
        return r < 0 ? -ENOMEM : 0;
}
