/* host_parse: parsers of the /proc files the host reader uses. No I/O; every parser takes
 * (buf, len), never reads past len, needs no NUL terminator, and writes its output only on
 * success. Formats: proc(5) and Documentation/filesystems/proc.rst. */
#define _GNU_SOURCE 1 /* memmem */
#include "collect/host_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/parse.h"

/* Copy a token of at most 31 bytes into tok (NUL-terminated) for the number parsers. */
static int token_copy(const char *s, size_t len, char tok[32])
{
        if (len == 0 || len >= 32)
                return -EINVAL;
        memcpy(tok, s, len);
        tok[len] = '\0';
        return 0;
}

static int tok_u64(const char *s, size_t len, uint64_t *ret)
{
        char tok[32];
        if (token_copy(s, len, tok) < 0 || tok[0] == '+')
                return -EINVAL;
        return parse_u64(tok, ret);
}

static int tok_i64(const char *s, size_t len, int64_t *ret)
{
        char tok[32];
        if (token_copy(s, len, tok) < 0 || tok[0] == '+')
                return -EINVAL;
        return parse_i64(tok, ret);
}

static int tok_pid(const char *s, size_t len, pid_t *ret)
{
        int64_t v;
        if (tok_i64(s, len, &v) < 0 || v < -1 || v > INT32_MAX)
                return -EINVAL;
        *ret = (pid_t)v;
        return 0;
}

/* The next line of buf[*pos..len): sets *line and *linelen (without the newline), advances *pos.
 * Returns false at the end. */
static bool next_line(const char *buf, size_t len, size_t *pos, const char **line, size_t *linelen)
{
        if (*pos >= len)
                return false;
        const char *s = buf + *pos;
        const char *nl = memchr(s, '\n', len - *pos);
        size_t n = nl ? (size_t)(nl - s) : len - *pos;
        *line = s;
        *linelen = n;
        *pos += n + (nl ? 1 : 0);
        return true;
}

static bool starts_with(const char *s, size_t len, const char *prefix)
{
        size_t n = strlen(prefix);
        return len >= n && memcmp(s, prefix, n) == 0;
}

/* Fields of /proc/PID/stat after the command name, counted from field 3 (state). */
enum {
        STAT_STATE = 0,
        STAT_PPID = 1,
        STAT_PGRP = 2,
        STAT_SESSION = 3,
        STAT_FLAGS = 6,
        STAT_UTIME = 11,
        STAT_STIME = 12,
        STAT_NUM_THREADS = 17,
        STAT_STARTTIME = 19,
        STAT_MIN_FIELDS = 20,
        STAT_RSS = 21,          /* read when there (every kernel writes it; a fixture may not) */
        STAT_FIELDS_READ = 22,
};

int host_parse_stat(const char *buf, size_t len, struct host_proc *p)
{
        /* "pid (comm) state ppid ..." where comm may hold anything but NUL: the name ends at
         * the LAST ')' (proc(5)). */
        const char *lp = memchr(buf, '(', len);
        const char *rp = NULL;
        for (size_t i = len; i > 0; i--) {
                if (buf[i - 1] == ')') {
                        rp = buf + i - 1;
                        break;
                }
        }
        if (!lp || !rp || rp < lp)
                return -EINVAL;

        size_t pidlen = (size_t)(lp - buf);
        while (pidlen > 0 && buf[pidlen - 1] == ' ')
                pidlen--;
        pid_t pid;
        if (tok_pid(buf, pidlen, &pid) < 0 || pid <= 0)
                return -EINVAL;

        /* fields after ") " separated by single spaces; the line ends with '\n' */
        const char *f[STAT_FIELDS_READ];
        size_t fl[STAT_FIELDS_READ];
        unsigned nf = 0;
        const char *s = rp + 1, *end = buf + len;
        while (end > s && (end[-1] == '\n' || end[-1] == '\0'))
                end--;
        if (s >= end || *s != ' ')
                return -EINVAL;
        s++;
        while (s < end && nf < STAT_FIELDS_READ) {
                const char *sp = memchr(s, ' ', (size_t)(end - s));
                const char *e = sp ? sp : end;
                f[nf] = s;
                fl[nf] = (size_t)(e - s);
                nf++;
                s = sp ? sp + 1 : end;
        }
        if (nf < STAT_MIN_FIELDS || fl[STAT_STATE] != 1)
                return -EINVAL;

        pid_t ppid, pgid, sid;
        uint64_t flags, start, threads, ut, st, rss = 0;
        if (tok_pid(f[STAT_PPID], fl[STAT_PPID], &ppid) < 0 || tok_pid(f[STAT_PGRP], fl[STAT_PGRP], &pgid) < 0 ||
            tok_pid(f[STAT_SESSION], fl[STAT_SESSION], &sid) < 0 ||
            tok_u64(f[STAT_FLAGS], fl[STAT_FLAGS], &flags) < 0 ||
            tok_u64(f[STAT_UTIME], fl[STAT_UTIME], &ut) < 0 || tok_u64(f[STAT_STIME], fl[STAT_STIME], &st) < 0 ||
            (nf > STAT_RSS && tok_u64(f[STAT_RSS], fl[STAT_RSS], &rss) < 0) ||
            tok_u64(f[STAT_NUM_THREADS], fl[STAT_NUM_THREADS], &threads) < 0 || threads > UINT32_MAX ||
            tok_u64(f[STAT_STARTTIME], fl[STAT_STARTTIME], &start) < 0)
                return -EINVAL;

        size_t commlen = (size_t)(rp - lp - 1);
        char *comm = malloc(commlen + 1);
        if (!comm)
                return -ENOMEM;
        memcpy(comm, lp + 1, commlen);
        comm[commlen] = '\0';   /* the kernel's comm never holds a NUL (strscpy) */

        free(p->comm);
        p->comm = comm;
        p->pid = pid;
        p->state = f[STAT_STATE][0];
        p->ppid = ppid;
        p->pgid = pgid;
        p->sid = sid;
        p->exiting = (flags & HOST_PF_EXITING) != 0;
        p->kernel_thread = (flags & HOST_PF_KTHREAD) != 0;
        p->num_threads = (unsigned)threads;
        p->start_ticks = start;
        p->cpu_ticks = ut > UINT64_MAX - st ? UINT64_MAX : ut + st;
        p->rss_pages = rss;
        p->rss_known = nf > STAT_RSS;
        return 0;
}

/* "Key:\tv1\tv2 ..." -> up to max numbers (whitespace separated). */
static int status_numbers(const char *s, size_t len, uint64_t *out, unsigned max, unsigned *ret_n)
{
        unsigned n = 0;
        size_t i = 0;
        for (;;) {
                while (i < len && (s[i] == ' ' || s[i] == '\t'))
                        i++;
                if (i >= len)
                        break;
                size_t j = i;
                while (j < len && s[j] != ' ' && s[j] != '\t')
                        j++;
                if (n < max) {
                        if (tok_u64(s + i, j - i, &out[n]) < 0)
                                return -EINVAL;
                        n++;
                }
                i = j;
        }
        *ret_n = n;
        return 0;
}

int host_parse_status(const char *buf, size_t len, struct host_proc *p)
{
        uint64_t uid[4], nspid[HOST_MAX_NSPID];
        unsigned n_uid = 0, n_nspid = 0;
        bool have_uid = false;
        const char *line;
        size_t ll, pos = 0;
        while (next_line(buf, len, &pos, &line, &ll)) {
                if (starts_with(line, ll, "Uid:")) {
                        if (status_numbers(line + 4, ll - 4, uid, 4, &n_uid) < 0 || n_uid == 0 ||
                            uid[0] > UINT32_MAX - 1)
                                return -EINVAL;
                        have_uid = true;
                } else if (starts_with(line, ll, "NSpid:")) {
                        if (status_numbers(line + 6, ll - 6, nspid, HOST_MAX_NSPID, &n_nspid) < 0)
                                return -EINVAL;
                        for (unsigned i = 0; i < n_nspid; i++)
                                if (nspid[i] == 0 || nspid[i] > INT32_MAX)
                                        return -EINVAL;
                }
        }
        if (!have_uid)
                return -EINVAL;
        p->uid = (uid_t)uid[0];
        for (unsigned i = 0; i < n_nspid; i++)
                p->nspid[i] = (pid_t)nspid[i];
        p->n_nspid = n_nspid;
        return 0;
}

/* --- cgroup path -> container, pod, job, unit ----------------------------------------------- */

struct cg_facts {
        char runtime[16];
        char id[72];
        char pod[40];
        char slurm[24];
        char unit[128];
};

static bool all_hex(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
                        return false;
        }
        return true;
}

static bool all_digits(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (s[i] < '0' || s[i] > '9')
                        return false;
        return n > 0;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
        size_t n = strlen(suffix);
        return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static void set_field(char *dst, size_t dstlen, const char *s, size_t n)
{
        if (n >= dstlen)
                return;         /* never keep a truncated identifier */
        memcpy(dst, s, n);
        dst[n] = '\0';
}

/* A container id: 12..64 hex digits. */
static bool container_id_ok(const char *s, size_t n)
{
        return n >= 12 && n <= 64 && all_hex(s, n);
}

/* A pod UID as it appears in a path: hex digits and '-' or '_' (systemd driver), <= 39. */
static bool pod_uid_ok(const char *s, size_t n)
{
        if (n < 8 || n > 39)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!all_hex(s + i, 1) && s[i] != '-' && s[i] != '_')
                        return false;
        return true;
}

static void set_pod(struct cg_facts *f, const char *s, size_t n)
{
        if (f->pod[0] || !pod_uid_ok(s, n))
                return;
        for (size_t i = 0; i < n; i++)
                f->pod[i] = s[i] == '_' ? '-' : s[i];
        f->pod[n] = '\0';
}

static void set_container(struct cg_facts *f, const char *runtime, const char *id, size_t n)
{
        if (f->id[0] || !container_id_ok(id, n))
                return;
        set_field(f->runtime, sizeof(f->runtime), runtime, strlen(runtime));
        set_field(f->id, sizeof(f->id), id, n);
}

/* Systemd scopes that are a container, not a unit: PREFIX<id>.scope. */
static const struct {
        const char *prefix;
        const char *runtime;    /* NULL: a container monitor (conmon), neither unit nor container */
} container_scopes[] = {
        { "docker-", "docker" },
        { "cri-containerd-", "containerd" },
        { "crio-conmon-", NULL },
        { "crio-", "cri-o" },
        { "libpod-conmon-", NULL },
        { "libpod-", "podman" },
};

/* Component c is PREFIX<id> or PREFIX<id>.scope of a container runtime: the entry or -1. */
static int container_scope(const char *c, size_t n, size_t *ret_idoff, size_t *ret_idlen)
{
        size_t base = ends_with(c, n, ".scope") ? n - 6 : n;
        for (size_t i = 0; i < sizeof(container_scopes) / sizeof(container_scopes[0]); i++) {
                size_t pl = strlen(container_scopes[i].prefix);
                if (base > pl && memcmp(c, container_scopes[i].prefix, pl) == 0) {
                        *ret_idoff = pl;
                        *ret_idlen = base - pl;
                        return (int)i;
                }
        }
        return -1;
}

/* "kubepods[-qos]-pod<uid>.slice" (systemd cgroup driver) */
static void kubepods_slice(struct cg_facts *f, const char *c, size_t n)
{
        if (!starts_with(c, n, "kubepods") || !ends_with(c, n, ".slice"))
                return;
        size_t end = n - 6;
        for (size_t i = end; i >= 4; i--) {
                if (memcmp(c + i - 4, "-pod", 4) == 0) {
                        set_pod(f, c + i, end - i);
                        return;
                }
        }
}

/* Walk the components of one cgroup path. */
static void cgroup_path_facts(const char *path, size_t len, struct cg_facts *f, bool want_unit)
{
        bool in_kubepods = false, prev_docker = false, prev_pod = false;
        size_t i = 0;
        while (i < len) {
                while (i < len && path[i] == '/')
                        i++;
                size_t j = i;
                while (j < len && path[j] != '/')
                        j++;
                const char *c = path + i;
                size_t n = j - i;
                i = j;
                if (n == 0)
                        break;

                size_t idoff, idlen;
                int k = container_scope(c, n, &idoff, &idlen);
                if (k >= 0 && container_scopes[k].runtime)
                        set_container(f, container_scopes[k].runtime, c + idoff, idlen);
                /* "kubepods-…-pod<uid>.slice:cri-containerd:<id>" (containerd's systemd-style
                 * cgroupsPath used as a plain path) */
                const char *colon = memchr(c, ':', n);
                if (colon) {
                        size_t pre = (size_t)(colon - c);
                        const char *rest = colon + 1;
                        size_t rn = n - pre - 1;
                        const char *colon2 = memchr(rest, ':', rn);
                        kubepods_slice(f, c, pre);
                        if (colon2) {
                                size_t rtl = (size_t)(colon2 - rest);
                                const char *id = colon2 + 1;
                                size_t il = rn - rtl - 1;
                                if (rtl == 14 && memcmp(rest, "cri-containerd", 14) == 0)
                                        set_container(f, "containerd", id, il);
                                else if (rtl == 4 && memcmp(rest, "crio", 4) == 0)
                                        set_container(f, "cri-o", id, il);
                                else if (rtl == 6 && memcmp(rest, "docker", 6) == 0)
                                        set_container(f, "docker", id, il);
                        }
                }
                kubepods_slice(f, c, n);
                if (starts_with(c, n, "kubepods"))
                        in_kubepods = true;
                if (in_kubepods && n > 3 && memcmp(c, "pod", 3) == 0 && pod_uid_ok(c + 3, n - 3)) {
                        set_pod(f, c + 3, n - 3);
                        prev_pod = true;
                } else {
                        /* cgroupfs driver: /kubepods/<qos>/pod<uid>/<id>, runtime unknown */
                        if (prev_pod && !f->id[0] && container_id_ok(c, n) && n == 64)
                                set_field(f->id, sizeof(f->id), c, n);
                        prev_pod = false;
                }
                /* cgroupfs driver: /docker/<64 hex> */
                if (prev_docker && n == 64 && all_hex(c, n))
                        set_container(f, "docker", c, n);
                prev_docker = n == 6 && memcmp(c, "docker", 6) == 0;
                /* Slurm: /slurm/uid_N/job_N/... (v1) or .../job_N/step_... (v2) */
                if (!f->slurm[0] && n > 4 && memcmp(c, "job_", 4) == 0 && all_digits(c + 4, n - 4))
                        set_field(f->slurm, sizeof(f->slurm), c + 4, n - 4);
                /* the last *.service / *.scope that is not a container scope */
                if (want_unit && k < 0 && (ends_with(c, n, ".service") || ends_with(c, n, ".scope")) &&
                    n < sizeof(f->unit))
                        set_field(f->unit, sizeof(f->unit), c, n);
        }
}

int host_parse_cgroup(const char *buf, size_t len, struct host_proc *p)
{
        /* Lines "hierarchy-ID:controller-list:cgroup-path" (cgroups(7)); the path is everything
         * after the second ':' and may itself contain ':'. */
        struct { const char *path; size_t len; bool v2, systemd; } lines[32];
        unsigned n = 0;
        const char *line;
        size_t ll, pos = 0;
        while (next_line(buf, len, &pos, &line, &ll)) {
                const char *c1 = memchr(line, ':', ll);
                if (!c1)
                        continue;
                const char *c2 = memchr(c1 + 1, ':', ll - (size_t)(c1 + 1 - line));
                if (!c2 || n >= sizeof(lines) / sizeof(lines[0]))
                        continue;
                size_t ctl = (size_t)(c2 - c1 - 1);
                lines[n].path = c2 + 1;
                lines[n].len = ll - (size_t)(c2 + 1 - line);
                lines[n].v2 = c1 == line + 1 && line[0] == '0' && ctl == 0;
                lines[n].systemd = ctl == 12 && memcmp(c1 + 1, "name=systemd", 12) == 0;
                n++;
        }
        if (n == 0)
                return -EINVAL;

        /* The path: the v2 line, unless it is the root and a v1 line says more (hybrid setups
         * keep the containers in the v1 hierarchies); name=systemd first among v1 lines. */
        int best = -1;
        for (unsigned i = 0; i < n && best < 0; i++)
                if (lines[i].v2 && !(lines[i].len == 1 && lines[i].path[0] == '/'))
                        best = (int)i;
        for (unsigned i = 0; i < n && best < 0; i++)
                if (lines[i].systemd && !(lines[i].len == 1 && lines[i].path[0] == '/'))
                        best = (int)i;
        for (unsigned i = 0; i < n && best < 0; i++)
                if (!lines[i].v2 && !(lines[i].len == 1 && lines[i].path[0] == '/'))
                        best = (int)i;
        for (unsigned i = 0; i < n && best < 0; i++)
                if (lines[i].v2)
                        best = (int)i;
        if (best < 0)
                best = 0;

        struct cg_facts f;
        memset(&f, 0, sizeof(f));
        cgroup_path_facts(lines[best].path, lines[best].len, &f, true);
        for (unsigned i = 0; i < n; i++)
                if ((int)i != best)
                        cgroup_path_facts(lines[i].path, lines[i].len, &f, false);

        char *path = malloc(lines[best].len + 1);
        if (!path)
                return -ENOMEM;
        memcpy(path, lines[best].path, lines[best].len);
        path[lines[best].len] = '\0';
        free(p->cgroup);
        p->cgroup = path;
        memcpy(p->container_runtime, f.runtime, sizeof(f.runtime));
        memcpy(p->container_id, f.id, sizeof(f.id));
        memcpy(p->k8s_pod_uid, f.pod, sizeof(f.pod));
        memcpy(p->slurm_job, f.slurm, sizeof(f.slurm));
        memcpy(p->systemd_unit, f.unit, sizeof(f.unit));
        return 0;
}

/* --- maps ------------------------------------------------------------------------------------ */

size_t host_strip_deleted(const char *s, size_t len, bool *deleted)
{
        static const char suffix[] = " (deleted)";
        size_t n = sizeof(suffix) - 1;
        *deleted = len > n && memcmp(s + len - n, suffix, n) == 0;
        return *deleted ? len - n : len;
}

/* The next field of a maps line: [*i, end of field), skipping leading spaces. */
static bool maps_field(const char *line, size_t len, size_t *i, const char **f, size_t *fl)
{
        while (*i < len && line[*i] == ' ')
                (*i)++;
        size_t j = *i;
        while (j < len && line[j] != ' ')
                j++;
        if (j == *i)
                return false;
        *f = line + *i;
        *fl = j - *i;
        *i = j;
        return true;
}

int host_parse_maps_line(const char *line, size_t len, struct host_maps_line *ret)
{
        /* "start-end perms offset major:minor inode   path" (proc(5)); the path starts after
         * the padding following the inode and runs to the end of the line: it may contain
         * spaces (the kernel escapes only '\n'). */
        if (len > 0 && line[len - 1] == '\n')
                len--;
        const char *f[5];
        size_t fl[5], i = 0;
        for (unsigned k = 0; k < 5; k++)
                if (!maps_field(line, len, &i, &f[k], &fl[k]))
                        return -EINVAL;
        const char *dash = memchr(f[0], '-', fl[0]);
        if (!dash || fl[1] != 4)
                return -EINVAL;
        const char *colon = memchr(f[3], ':', fl[3]);
        if (!colon)
                return -EINVAL;
        char tok[32];
        uint64_t maj, min, ino;
        const char *end;
        if (token_copy(f[3], (size_t)(colon - f[3]), tok) < 0 || parse_u64_prefix(tok, 16, &maj, &end) < 0 || *end ||
            token_copy(colon + 1, fl[3] - (size_t)(colon - f[3]) - 1, tok) < 0 ||
            parse_u64_prefix(tok, 16, &min, &end) < 0 || *end || tok_u64(f[4], fl[4], &ino) < 0 ||
            maj > UINT32_MAX || min > UINT32_MAX)
                return -EINVAL;

        struct host_maps_line m = { .dev_major = (unsigned)maj, .dev_minor = (unsigned)min, .ino = ino };
        while (i < len && line[i] == ' ')
                i++;
        if (i < len) {
                m.path = line + i;
                m.pathlen = host_strip_deleted(line + i, len - i, &m.deleted);
        }
        *ret = m;
        return 0;
}

const char *host_maps_line_path(const char *line, size_t len, size_t *ret_pathlen)
{
        struct host_maps_line m;
        if (host_parse_maps_line(line, len, &m) < 0 || !m.path)
                return NULL;
        /* the full path as the kernel printed it, " (deleted)" included */
        size_t n = len;
        if (n > 0 && line[n - 1] == '\n')
                n--;
        *ret_pathlen = (size_t)(line + n - m.path);
        return m.path;
}

bool host_maps_ordered(const char *buf, size_t len)
{
        /* the kernel prints the areas in address order, one read() chunk at a time, dropping
         * the mmap lock between chunks: an area that starts below the end of the one before
         * shows that the mappings changed between two chunks of the read */
        uint64_t prev_end = 0;
        size_t pos = 0;
        const char *line;
        size_t ll;
        while (next_line(buf, len, &pos, &line, &ll)) {
                const char *dash = memchr(line, '-', ll < 40 ? ll : 40);
                char tok[24];
                uint64_t start, end;
                const char *e;
                if (!dash || (size_t)(dash - line) >= sizeof(tok))
                        continue;
                memcpy(tok, line, (size_t)(dash - line));
                tok[dash - line] = '\0';
                if (parse_u64_prefix(tok, 16, &start, &e) < 0 || *e)
                        continue;
                size_t rest = ll - (size_t)(dash + 1 - line), k = 0;
                while (k < rest && k < sizeof(tok) - 1 && dash[1 + k] != ' ') {
                        tok[k] = dash[1 + k];
                        k++;
                }
                tok[k] = '\0';
                if (parse_u64_prefix(tok, 16, &end, &e) < 0 || *e)
                        continue;       /* a line cut at the cap: not a sign of change */
                if (end < start || start < prev_end)
                        return false;
                prev_end = end;
        }
        return true;
}

/* A function of the nvidia modules, by its name: the prefixes of nvidia.ko, nvidia-uvm.ko and
 * nvidia-modeset.ko (nv_, nvidia_, the resource manager's obfuscated _nv000123rm, uvm_, nvkms,
 * and the os_/rm_ layers between the kernel interface and the resource manager). */
static bool driver_symbol(const char *s, size_t n)
{
        static const char *const prefixes[] = { "nv_", "nvidia", "_nv", "uvm", "nvkms", "nvUvm", "os_", "rm_", NULL };
        for (size_t i = 0; prefixes[i]; i++)
                if (starts_with(s, n, prefixes[i]))
                        return true;
        return false;
}

bool host_names_driver(const char *buf, size_t len)
{
        size_t pos = 0;
        const char *line;
        size_t ll;
        while (next_line(buf, len, &pos, &line, &ll)) {
                /* a stack line "[<0>] uvm_va_space_destroy+0x2c/0x90 [nvidia_uvm]": the module's
                 * tag, else the symbol after the address; a wchan line is the symbol alone */
                if (ll >= 8 && memmem(line, ll, " [nvidia", 8))
                        return true;
                size_t i = 0;
                if (ll > 0 && line[0] == '[') {
                        const char *close = memchr(line, ']', ll);
                        i = close ? (size_t)(close - line) + 1 : ll;
                }
                while (i < ll && line[i] == ' ')
                        i++;
                if (driver_symbol(line + i, ll - i))
                        return true;
        }
        return false;
}

/* --- device nodes ---------------------------------------------------------------------------- */

int host_node_name(const char *path, const char *dev_prefix, char *out, size_t outlen)
{
        size_t pl = strlen(dev_prefix);
        if (pl == 0 || strncmp(path, dev_prefix, pl) != 0)
                return -EINVAL;
        const char *slash = strrchr(dev_prefix, '/');
        const char *name = path + (slash ? (size_t)(slash - dev_prefix) + 1 : 0);
        size_t n = strlen(name);
        if (n == 0 || n >= outlen)
                return -EINVAL;
        memcpy(out, name, n + 1);
        return 0;
}

int host_parse_devices(const char *buf, size_t len, struct host_majors *ret)
{
        /* "Character devices:\n  1 mem\n195 nvidia-frontend\n...\n\nBlock devices:\n..." */
        struct host_majors m;
        memset(&m, 0, sizeof(m));
        bool chr = false, seen = false;
        const char *line;
        size_t ll, pos = 0;
        while (next_line(buf, len, &pos, &line, &ll)) {
                if (starts_with(line, ll, "Character devices:")) {
                        chr = seen = true;
                        continue;
                }
                if (starts_with(line, ll, "Block devices:")) {
                        chr = false;
                        continue;
                }
                if (!chr)
                        continue;
                size_t i = 0;
                while (i < ll && line[i] == ' ')
                        i++;
                size_t j = i;
                while (j < ll && line[j] >= '0' && line[j] <= '9')
                        j++;
                uint64_t major;
                if (j == i || j >= ll || line[j] != ' ' || tok_u64(line + i, j - i, &major) < 0 ||
                    major > 0xfff)
                        continue;
                const char *name = line + j + 1;
                size_t nl = ll - j - 1;
                if (!starts_with(name, nl, "nvidia") || nl >= sizeof(m.m[0].name) || m.n >= HOST_MAX_MAJORS)
                        continue;
                struct host_major *d = &m.m[m.n++];
                d->major = (unsigned)major;
                memcpy(d->name, name, nl);
                d->name[nl] = '\0';
                if (strcmp(d->name, "nvidia-frontend") == 0 || strcmp(d->name, "nvidia") == 0)
                        d->kind = HOST_DRV_FRONTEND;
                else if (strcmp(d->name, "nvidia-uvm") == 0)
                        d->kind = HOST_DRV_UVM;
                else if (strcmp(d->name, "nvidia-caps") == 0)
                        d->kind = HOST_DRV_CAPS;
                else
                        d->kind = HOST_DRV_OTHER;
        }
        if (!seen)
                return -EINVAL;
        *ret = m;
        return 0;
}

int host_majors_name(const struct host_majors *m, unsigned major, unsigned minor, char *out, size_t outlen)
{
        for (unsigned i = 0; i < m->n; i++) {
                if (m->m[i].major != major)
                        continue;
                int n;
                switch (m->m[i].kind) {
                case HOST_DRV_FRONTEND:
                        /* kernel-open/nvidia/nv.c: minor 255 control, 254 modeset, else GPU */
                        if (minor == 255)
                                n = snprintf(out, outlen, "nvidiactl");
                        else if (minor == 254)
                                n = snprintf(out, outlen, "nvidia-modeset");
                        else
                                n = snprintf(out, outlen, "nvidia%u", minor);
                        break;
                case HOST_DRV_UVM:
                        if (minor == 0)
                                n = snprintf(out, outlen, "nvidia-uvm");
                        else if (minor == 1)
                                n = snprintf(out, outlen, "nvidia-uvm-tools");
                        else
                                n = snprintf(out, outlen, "nvidia-uvm:%u", minor);
                        break;
                case HOST_DRV_CAPS:
                        n = snprintf(out, outlen, "nvidia-caps/nvidia-cap%u", minor);
                        break;
                default:
                        n = snprintf(out, outlen, "%s:%u", m->m[i].name, minor);
                        break;
                }
                return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
        }
        return -ENOENT;
}

int host_parse_btime(const char *buf, size_t len, uint64_t *ret)
{
        const char *line;
        size_t ll, pos = 0;
        while (next_line(buf, len, &pos, &line, &ll)) {
                if (!starts_with(line, ll, "btime "))
                        continue;
                size_t i = 6;
                while (i < ll && line[i] == ' ')
                        i++;
                return tok_u64(line + i, ll - i, ret);
        }
        return -EINVAL;
}

int host_parse_ns_link(const char *buf, size_t len, uint64_t *ret_ino)
{
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\0'))
                len--;
        const char *lb = memchr(buf, '[', len);
        if (!lb || len < 3 || buf[len - 1] != ']' || lb == buf || lb[-1] != ':')
                return -EINVAL;
        uint64_t v;
        if (tok_u64(lb + 1, (size_t)(buf + len - 1 - lb - 1), &v) < 0)
                return -EINVAL;
        *ret_ino = v;
        return 0;
}

/* --- environment ----------------------------------------------------------------------------- */

const char *const host_env_allowlist[] = {
        "CUDA_VISIBLE_DEVICES", /* which GPUs the process may use */
        "NVIDIA_VISIBLE_DEVICES", /* the container toolkit's view */
        "SLURM_JOB_ID",
        "SLURM_JOBID",          /* older Slurm spelling */
        "TORCHELASTIC_RUN_ID",  /* torchrun job */
        "KUBERNETES_POD_NAME",
        "LOCAL_RANK",
        "RANK",
        NULL,
};

int host_parse_environ(const char *buf, size_t len, struct host_proc *p, struct buf *saved)
{
        struct host_env env[HOST_MAX_ENV];
        unsigned n = 0;
        int r = 0;
        size_t i = 0;
        memset(env, 0, sizeof(env));
        while (i < len && n < HOST_MAX_ENV) {
                const char *e = buf + i;
                const char *nul = memchr(e, '\0', len - i);
                size_t el = nul ? (size_t)(nul - e) : len - i;
                i += el + 1;
                const char *eq = memchr(e, '=', el);
                if (!eq)
                        continue;
                size_t nl = (size_t)(eq - e), vl = el - nl - 1;
                const char *name = NULL;
                for (const char *const *a = host_env_allowlist; *a; a++)
                        if (strlen(*a) == nl && memcmp(*a, e, nl) == 0)
                                name = *a;
                if (!name || vl > HOST_CAP_ENV_VALUE || nl >= sizeof(env[0].name))
                        continue;
                bool dup = false;
                for (unsigned k = 0; k < n; k++)
                        dup |= strcmp(env[k].name, name) == 0;
                if (dup)
                        continue;       /* the C library's getenv() returns the first one too */
                env[n].value = malloc(vl + 1);
                if (!env[n].value) {
                        r = -ENOMEM;
                        goto out;
                }
                memcpy(env[n].value, eq + 1, vl);
                env[n].value[vl] = '\0';
                memcpy(env[n].name, name, nl + 1);
                n++;
                if (saved && (buf_append(saved, e, el) < 0 || buf_putc(saved, '\0') < 0)) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        for (unsigned k = 0; k < p->n_env && k < HOST_MAX_ENV; k++)
                free(p->env[k].value);
        memcpy(p->env, env, sizeof(env));
        p->n_env = n;
        n = 0;
out:
        for (unsigned k = 0; k < n; k++)
                free(env[k].value);
        return r;
}
