/* host_bundle: record what the host reader read, and read such a record back.
 *
 * Layout of a bundle directory DIR:
 *   DIR/host.json          machine facts (format "ghostvram-host-bundle"), limits, and per
 *                          process: role (holder, unverified, lookup), skipped bits, user name;
 *                          what the judgement used beyond the holders: ghostvram's own process
 *                          ("self_saved": its files are a lookup of "self_pid"; and
 *                          "self_ancestors", by number) and the processes whose descriptors we
 *                          could not read ("opaque": [pid, pgid, sid] each)
 *   DIR/proc/stat          the btime line only
 *   DIR/proc/devices       /proc/devices as read
 *   DIR/proc/PID/stat, status, cmdline, cgroup, wchan   as read
 *   DIR/proc/PID/environ   only the allow-listed variables
 *   DIR/proc/PID/maps      only the matched lines, their paths rewritten to /dev/NODE
 *   DIR/proc/PID/ns/pid    a plain file "pid:[INODE]"
 *   DIR/proc/PID/fd/N      -> /dev/NODE for each matched descriptor
 * so that host_scan with proc_root=DIR/proc and dev_prefix=/dev/nvidia reproduces the report. */
#include "collect/host_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "util/escape.h"
#include "util/fileio.h"
#include "util/parse.h"

#define BUNDLE_FORMAT "ghostvram-host-bundle"
#define BUNDLE_VERSION 1
#define BUNDLE_JSON_CAP (16u << 20)

static const char *const role_names[] = { [HOST_ROLE_HOLDER] = "holder", [HOST_ROLE_UNVERIFIED] = "unverified",
                                          [HOST_ROLE_LOOKUP] = "lookup" };

static int write_at(int dfd, const char *name, const char *data, size_t len)
{
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return host_neg_errno();
        while (len > 0) {
                ssize_t w = write(fd, data, len);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        int e = host_neg_errno();
                        close(fd);
                        return e;
                }
                data += w;
                len -= (size_t)w;
        }
        return close(fd) < 0 ? -errno : 0;
}

/* Write name, or remove it when data is NULL (not read this time). */
static int put_file(int dfd, const char *name, const char *data, size_t len)
{
        if (!data) {
                if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
                        return host_neg_errno();
                return 0;
        }
        return write_at(dfd, name, data, len);
}

/* mkdir -p save_dir/sub and open it. */
static int open_dir_p(const char *save_dir, const char *sub)
{
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s/%s", save_dir, sub);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        int e = mkdir_p(path);
        if (e < 0)
                return e;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static int subdir(int dfd, const char *name)
{
        if (mkdirat(dfd, name, 0755) < 0 && errno != EEXIST)
                return host_neg_errno();
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

/* Empty a directory of plain entries (an earlier save's fd links). */
static void clear_dir(int dfd)
{
        DIR *d = host_opendirat(dfd, ".");
        if (!d)
                return;
        struct dirent *e;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.')
                        unlinkat(dfd, e->d_name, 0);
        closedir(d);
}

static int save_fds(int pdfd, const struct host_save_proc *s)
{
        int fdd = subdir(pdfd, "fd");
        if (fdd < 0)
                return fdd;
        clear_dir(fdd);
        int r = 0;
        for (size_t i = 0; i < s->n_fds && r == 0; i++) {
                char name[16], target[64];
                snprintf(name, sizeof(name), "%d", s->fds[i].fd);
                int n = snprintf(target, sizeof(target), "/dev/%s", s->fds[i].name);
                if (n < 0 || (size_t)n >= sizeof(target))
                        continue;
                if (symlinkat(target, fdd, name) < 0 && errno != EEXIST)
                        r = host_neg_errno();
        }
        close(fdd);
        return r;
}

int host_bundle_save_proc(const char *save_dir, const struct host_save_proc *s)
{
        char sub[32];
        snprintf(sub, sizeof(sub), "proc/%d", (int)s->pid);
        int dfd = open_dir_p(save_dir, sub);
        if (dfd < 0)
                return dfd;
        int r = 0;
        const struct { const char *name; const char *data; size_t len; } files[] = {
                { "stat", s->stat, s->stat_len },
                { "status", s->status, s->status_len },
                { "cmdline", s->cmdline, s->cmdline_len },
                { "cgroup", s->cgroup, s->cgroup_len },
                { "wchan", s->wchan, s->wchan_len },
                { "environ", s->environ, s->environ_len },
                { "maps", s->maps, s->maps_len },
        };
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]) && r == 0; i++)
                r = put_file(dfd, files[i].name, files[i].data, files[i].len);
        if (r == 0 && s->pidns_ino) {
                int nsd = subdir(dfd, "ns");
                if (nsd < 0) {
                        r = nsd;
                } else {
                        char text[64];
                        int k = snprintf(text, sizeof(text), "pid:[%llu]\n", (unsigned long long)s->pidns_ino);
                        r = write_at(nsd, "pid", text, (size_t)k);
                        close(nsd);
                }
        }
        if (r == 0)
                r = save_fds(dfd, s);
        close(dfd);
        return r;
}

int host_bundle_save_host_files(const char *save_dir, uint64_t btime, bool have_btime, const char *devices,
                                size_t devices_len)
{
        int dfd = open_dir_p(save_dir, "proc");
        if (dfd < 0)
                return dfd;
        int r = 0;
        if (have_btime) {
                char line[64];
                int k = snprintf(line, sizeof(line), "btime %llu\n", (unsigned long long)btime);
                r = write_at(dfd, "stat", line, (size_t)k);
        }
        if (r == 0 && devices)
                r = write_at(dfd, "devices", devices, devices_len);
        close(dfd);
        return r;
}

/* A JSON string for text we do not control (a user name, a path in a limit sentence):
 * jansson needs UTF-8. */
static json_t *text(const char *s)
{
        struct buf b = BUF_INIT(1u << 20);
        json_t *j = esc_utf8_repair(&b, s, strlen(s)) == 0 ? json_string(buf_str(&b)) : NULL;
        buf_free(&b);
        return j;
}

static int jset(json_t *o, const char *key, json_t *v)
{
        return v && json_object_set_new(o, key, v) == 0 ? 0 : -ENOMEM;
}

static int set_facts(json_t *root, const struct host_report *f)
{
        json_t *limits = json_array();
        int r = jset(root, "format", json_string(BUNDLE_FORMAT));
        r |= jset(root, "version", json_integer(BUNDLE_VERSION));
        r |= jset(root, "self_pidns_ino", json_integer((json_int_t)f->self_pidns_ino));
        r |= jset(root, "initial_pidns", json_boolean(f->initial_pidns));
        r |= jset(root, "self_pid", json_integer(f->self_pid));
        r |= jset(root, "euid", json_integer((json_int_t)f->euid));
        r |= jset(root, "clk_tck", json_integer(f->clk_tck));
        r |= jset(root, "sample_time", json_real(f->sample_time));
        r |= jset(root, "procs_scanned", json_integer(f->procs_scanned));
        for (size_t i = 0; limits && i < f->n_limits; i++)
                r |= json_array_append_new(limits, text(f->limits[i])) == 0 ? 0 : -ENOMEM;
        r |= jset(root, "limits", limits);
        if (f->self_saved) {
                json_t *anc = json_array();
                for (unsigned i = 0; anc && i < f->n_self_ancestors; i++)
                        r |= json_array_append_new(anc, json_integer(f->self_ancestors[i])) == 0 ? 0 : -ENOMEM;
                r |= jset(root, "self_saved", json_true());
                r |= jset(root, "self_ancestors", anc);
        }
        json_t *opaque = json_array();
        for (size_t i = 0; opaque && i < f->n_opaque; i++) {
                const struct host_pid_ref *o = &f->opaque[i];
                json_t *e = json_pack("[iii]", (int)o->pid, (int)o->pgid, (int)o->sid);
                r |= e && json_array_append_new(opaque, e) == 0 ? 0 : -ENOMEM;
        }
        r |= jset(root, "opaque", opaque);
        return r ? -ENOMEM : 0;
}

/* Returns the document, or NULL with *ret_err: a negative errno (-FILEIO_ENOTREG, -EFBIG, ...)
 * or -EBADMSG (not JSON). */
static json_t *load_json(const char *path, int *ret_err)
{
        char *data;
        size_t len;
        int r = read_file_at(AT_FDCWD, path, BUNDLE_JSON_CAP, &data, &len);
        if (r < 0) {
                *ret_err = r;
                return NULL;
        }
        json_t *j = json_loadb(data, len, 0, NULL);
        free(data);
        *ret_err = j ? 0 : -EBADMSG;
        return j;
}

int host_bundle_write_json(const char *save_dir, const struct host_report *facts, bool is_scan,
                           const struct host_bundle_proc *procs, size_t n_procs)
{
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s/host.json", save_dir);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        int r = -ENOMEM;
        char *out = NULL;
        json_t *pj;
        int le;
        json_t *root = load_json(path, &le);
        bool fresh = !root || !json_is_object(root);
        if (fresh) {
                json_decref(root);
                root = json_object();
        }
        if (!root)
                goto out;
        if ((is_scan || fresh) && set_facts(root, facts) < 0)
                goto out;
        pj = json_object_get(root, "procs");
        if (!json_is_object(pj)) {
                pj = json_object();
                if (jset(root, "procs", pj) < 0)
                        goto out;
        }
        for (size_t i = 0; i < n_procs; i++) {
                const struct host_bundle_proc *p = &procs[i];
                char key[16];
                snprintf(key, sizeof(key), "%d", (int)p->pid);
                enum host_role role = p->role;
                const char *old = json_string_value(json_object_get(json_object_get(pj, key), "role"));
                /* a holder stays a holder when a lookup saves it again */
                if (old && role == HOST_ROLE_LOOKUP &&
                    (strcmp(old, role_names[HOST_ROLE_HOLDER]) == 0 || strcmp(old, role_names[HOST_ROLE_UNVERIFIED]) == 0))
                        role = strcmp(old, role_names[HOST_ROLE_HOLDER]) == 0 ? HOST_ROLE_HOLDER : HOST_ROLE_UNVERIFIED;
                /* its family, from the walk's report; a lookup saved later keeps the walk's */
                const struct host_proc *hp = is_scan && facts ? host_report_find(facts, p->pid) : NULL;
                json_t *oldf = json_object_get(json_object_get(pj, key), "family");
                json_t *oldn = json_object_get(json_object_get(pj, key), "family_note");
                json_t *fam = hp && hp->family ? json_integer(hp->family) : json_incref(oldf);
                json_t *note = hp && hp->family ? json_integer(hp->family_note) : json_incref(oldn);
                json_t *e = json_object();
                /* json_object_set_new takes the value, also when it fails */
                if (e && fam)
                        (void)json_object_set_new(e, "family", fam);
                if (e && note)
                        (void)json_object_set_new(e, "family_note", note);
                if (!e) {
                        json_decref(fam);
                        json_decref(note);
                }
                if (!e || jset(pj, key, e) < 0 || jset(e, "role", json_string(role_names[role])) < 0 ||
                    jset(e, "skipped", json_integer(p->skipped)) < 0 || jset(e, "user", text(p->user)) < 0)
                        goto out;
        }
        out = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (!out)
                goto out;
        r = mkdir_p(save_dir);
        if (r == 0)
                r = write_file_atomic(path, out, strlen(out));
out:
        free(out);
        json_decref(root);
        return r;
}

/* --- reading a bundle back ------------------------------------------------------------------ */

void host_bundle_in_free(struct host_bundle_in *b)
{
        if (!b)
                return;
        for (size_t i = 0; i < b->n_limits; i++)
                free(b->limits[i]);
        free(b->limits);
        free(b->opaque);
        free(b->procs);
        free(b);
}

const struct host_bundle_proc *host_bundle_proc(const struct host_bundle_in *b, pid_t pid)
{
        for (size_t i = 0; b && i < b->n_procs; i++)
                if (b->procs[i].pid == pid)
                        return &b->procs[i];
        return NULL;
}

static int get_u64(json_t *root, const char *key, uint64_t max, uint64_t *ret)
{
        json_t *v = json_object_get(root, key);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
                return -EBADMSG;
        *ret = (uint64_t)json_integer_value(v);
        return 0;
}

/* A PID in a JSON array: 1..INT32_MAX, or 0 where zero_ok (a session of the kernel's). */
static int get_pid_at(json_t *a, size_t i, bool zero_ok, pid_t *ret)
{
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < (zero_ok ? 0 : 1) || json_integer_value(v) > INT32_MAX)
                return -EBADMSG;
        *ret = (pid_t)json_integer_value(v);
        return 0;
}

/* What the judgement used beyond the holders (absent in older bundles: they read as before). */
static int parse_self_and_opaque(json_t *root, struct host_bundle_in *b)
{
        b->self_saved = json_is_true(json_object_get(root, "self_saved"));
        json_t *anc = json_object_get(root, "self_ancestors");
        if (anc && (!json_is_array(anc) || json_array_size(anc) > HOST_MAX_ANCESTORS))
                return -EBADMSG;
        for (size_t i = 0; i < json_array_size(anc); i++)
                if (get_pid_at(anc, i, false, &b->self_ancestors[b->n_self_ancestors++]) < 0)
                        return -EBADMSG;
        json_t *op = json_object_get(root, "opaque");
        size_t n = json_array_size(op);
        if (op && (!json_is_array(op) || n > HOST_MAX_OPAQUE))
                return -EBADMSG;
        b->opaque = calloc(n ? n : 1, sizeof(*b->opaque));
        if (!b->opaque)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *e = json_array_get(op, i);
                struct host_pid_ref *o = &b->opaque[i];
                if (json_array_size(e) != 3 || get_pid_at(e, 0, false, &o->pid) < 0 || get_pid_at(e, 1, true, &o->pgid) < 0 ||
                    get_pid_at(e, 2, true, &o->sid) < 0)
                        return -EBADMSG;
                b->n_opaque++;
        }
        return 0;
}

static int parse_bundle(json_t *root, struct host_bundle_in *b)
{
        uint64_t v = 0;
        int r = get_u64(root, "self_pidns_ino", UINT64_MAX >> 1, &b->self_pidns_ino);
        b->initial_pidns = json_is_true(json_object_get(root, "initial_pidns"));
        r |= get_u64(root, "self_pid", INT32_MAX, &v);
        b->self_pid = (pid_t)v;
        r |= get_u64(root, "euid", UINT32_MAX, &v);
        b->euid = (uid_t)v;
        r |= get_u64(root, "clk_tck", 1000000, &v);
        b->clk_tck = (long)v;
        r |= get_u64(root, "procs_scanned", UINT32_MAX, &v);
        b->procs_scanned = (unsigned)v;
        json_t *t = json_object_get(root, "sample_time");
        if (!json_is_number(t) || r)
                return -EBADMSG;
        b->sample_time = json_number_value(t);

        json_t *limits = json_object_get(root, "limits");
        size_t n = json_array_size(limits);
        b->limits = calloc(n ? n : 1, sizeof(*b->limits));
        if (!b->limits)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *s = json_string_value(json_array_get(limits, i));
                if (!s)
                        return -EBADMSG;
                if (!(b->limits[b->n_limits] = strdup(s)))
                        return -ENOMEM;
                b->n_limits++;
        }
        r = parse_self_and_opaque(root, b);
        if (r < 0)
                return r;

        json_t *procs = json_object_get(root, "procs");
        n = json_object_size(procs);
        b->procs = calloc(n ? n : 1, sizeof(*b->procs));
        if (!b->procs)
                return -ENOMEM;
        const char *key;
        json_t *e;
        json_object_foreach(procs, key, e) {
                struct host_bundle_proc *p = &b->procs[b->n_procs];
                unsigned pid;
                const char *role = json_string_value(json_object_get(e, "role"));
                const char *user = json_string_value(json_object_get(e, "user"));
                if (parse_uint_range(key, 1, INT32_MAX, &pid) < 0 || !role || get_u64(e, "skipped", UINT32_MAX, &v) < 0)
                        return -EBADMSG;
                p->pid = (pid_t)pid;
                p->skipped = (unsigned)v;
                for (int k = HOST_ROLE_HOLDER; k <= HOST_ROLE_LOOKUP; k++)
                        if (strcmp(role, role_names[k]) == 0)
                                p->role = (enum host_role)k;
                if (!p->role)
                        return -EBADMSG;
                snprintf(p->user, sizeof(p->user), "%s", user ? user : "");
                /* families: absent in bundles made before them (every holder then stands alone) */
                if (json_object_get(e, "family")) {
                        if (get_u64(e, "family", INT32_MAX, &v) < 0)
                                return -EBADMSG;
                        p->family = (unsigned)v;
                        v = 0;
                        if (json_object_get(e, "family_note") && get_u64(e, "family_note", HOST_FAMILY_TOO_MANY, &v) < 0)
                                return -EBADMSG;
                        p->family_note = (enum host_family_note)v;
                }
                b->n_procs++;
        }
        return 0;
}

int host_bundle_parse(const char *data, size_t len, struct host_bundle_in **ret, char *err, size_t errlen)
{
        *ret = NULL;
        json_error_t je;
        json_t *root = json_loadb(data, len, 0, &je);
        if (!root) {
                snprintf(err, errlen, "host.json: not JSON (line %d, column %d: %.100s)", je.line, je.column, je.text);
                return -EBADMSG;
        }
        int r = 0;
        struct host_bundle_in *b;
        const char *fmt = json_string_value(json_object_get(root, "format"));
        if (!fmt || strcmp(fmt, BUNDLE_FORMAT) != 0) {
                snprintf(err, errlen, "host.json: not a ghostvram bundle's (its \"format\" is not \"" BUNDLE_FORMAT "\")");
                goto out;       /* somebody else's host.json: not a bundle */
        }
        b = calloc(1, sizeof(*b));
        if (!b) {
                r = -ENOMEM;
                goto out;
        }
        r = parse_bundle(root, b);
        if (r < 0) {
                snprintf(err, errlen, "host.json: %s", r == -ENOMEM ? strerror(ENOMEM) :
                         "a field of the bundle's host facts is missing or out of range");
                host_bundle_in_free(b);
                goto out;
        }
        *ret = b;
out:
        json_decref(root);
        return r;
}

/* Read and parse PATH (a bundle's host.json), as host_bundle_parse. */
static int load_host_json(const char *path, struct host_bundle_in **ret, char *err, size_t errlen)
{
        char *data;
        size_t len;
        *ret = NULL;
        int r = read_file_at(AT_FDCWD, path, BUNDLE_JSON_CAP, &data, &len);
        if (r < 0) {
                snprintf(err, errlen, "host.json: %s", r == -EFBIG ? "too large" : fileio_strerror(r));
                return r;
        }
        r = host_bundle_parse(data, len, ret, err, errlen);
        free(data);
        return r;
}

int host_bundle_load(const char *proc_root, struct host_bundle_in **ret)
{
        char path[PATH_MAX], why[256];
        const char *slash = strrchr(proc_root, '/');
        int n = slash ? snprintf(path, sizeof(path), "%.*s/host.json", (int)(slash - proc_root), proc_root)
                      : snprintf(path, sizeof(path), "host.json");
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        *ret = NULL;
        struct stat st;
        if (lstat(path, &st) < 0)
                return 0;
        return load_host_json(path, ret, why, sizeof(why));
}

int host_bundle_check(const char *dir, char *err, size_t errlen)
{
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s/host.json", dir);
        if (n < 0 || (size_t)n >= sizeof(path)) {
                snprintf(err, errlen, "host.json: %s", strerror(ENAMETOOLONG));
                return -ENAMETOOLONG;
        }
        struct host_bundle_in *b;
        int r = load_host_json(path, &b, err, errlen);
        if (r == 0 && !b)
                return -EBADMSG;        /* another format: why is in err */
        host_bundle_in_free(b);
        return r;
}
