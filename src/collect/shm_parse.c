/* shm_parse: /proc/sysvipc/shm and /proc/meminfo, without I/O (collect/shm.h). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "collect/shm.h"
#include "util/parse.h"

/* The columns we use; the kernel prints more (gid, cgid, the times). */
enum shm_col { COL_KEY, COL_SHMID, COL_PERMS, COL_SIZE, COL_CPID, COL_LPID, COL_NATTCH, COL_UID, COL_CUID,
               COL_RSS, COL_SWAP, COL_N };
static const char *const col_names[COL_N] = { "key", "shmid", "perms", "size", "cpid", "lpid",
                                              "nattch", "uid", "cuid", "rss", "swap" };

#define SHM_MAX_FIELDS 64       /* a header wider than this is not the kernel's */
#define SHM_TOKEN_MAX 32        /* a field longer than this is not a number of ours */

struct tokens {
        const char *p[SHM_MAX_FIELDS];
        size_t len[SHM_MAX_FIELDS];
        size_t n;
        bool too_many;
};

/* Split line[0..len) at blanks. */
static void tokenize(const char *line, size_t len, struct tokens *t)
{
        size_t i = 0;
        t->n = 0;
        t->too_many = false;
        while (i < len) {
                while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
                        i++;
                if (i >= len)
                        break;
                size_t s = i;
                while (i < len && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
                        i++;
                if (t->n == SHM_MAX_FIELDS) {
                        t->too_many = true;
                        return;
                }
                t->p[t->n] = line + s;
                t->len[t->n++] = i - s;
        }
}

/* A token as a NUL-terminated copy; false when it is too long to be a number. */
static bool tok_copy(const struct tokens *t, size_t i, char out[SHM_TOKEN_MAX])
{
        if (t->len[i] == 0 || t->len[i] >= SHM_TOKEN_MAX)
                return false;
        memcpy(out, t->p[i], t->len[i]);
        out[t->len[i]] = '\0';
        return true;
}

static bool tok_u64(const struct tokens *t, int idx, uint64_t *ret)
{
        char s[SHM_TOKEN_MAX];
        return idx >= 0 && tok_copy(t, (size_t)idx, s) && parse_u64(s, ret) == 0;
}

static bool tok_i64(const struct tokens *t, int idx, int64_t *ret)
{
        char s[SHM_TOKEN_MAX];
        return idx >= 0 && tok_copy(t, (size_t)idx, s) && parse_i64(s, ret) == 0;
}

/* The kernel prints perms with %4o. */
static bool tok_octal(const struct tokens *t, int idx, unsigned *ret)
{
        if (idx < 0 || t->len[idx] == 0 || t->len[idx] > 8)
                return false;
        unsigned v = 0;
        for (size_t i = 0; i < t->len[idx]; i++) {
                char c = t->p[idx][i];
                if (c < '0' || c > '7')
                        return false;
                v = v * 8 + (unsigned)(c - '0');
        }
        *ret = v;
        return true;
}

/* One segment line with the header's columns; false when it is not one. */
static bool parse_seg(const struct tokens *t, const int col[COL_N], struct shm_seg *s)
{
        uint64_t v;
        memset(s, 0, sizeof(*s));
        s->shmid = -1;
        if (!tok_u64(t, col[COL_SIZE], &s->size))
                return false;
        if (col[COL_KEY] >= 0 && !tok_i64(t, col[COL_KEY], &s->key))
                return false;
        if (col[COL_SHMID] >= 0 && (!tok_i64(t, col[COL_SHMID], &s->shmid) || s->shmid < 0))
                return false;
        if (col[COL_PERMS] >= 0 && !tok_octal(t, col[COL_PERMS], &s->perms))
                return false;
        static const enum shm_col pids[2] = { COL_CPID, COL_LPID };
        for (int k = 0; k < 2; k++) {
                if (col[pids[k]] < 0)
                        continue;
                if (!tok_u64(t, col[pids[k]], &v) || v > INT_MAX)
                        return false;
                *(k ? &s->lpid : &s->cpid) = (pid_t)v;
        }
        if (col[COL_NATTCH] >= 0 && !tok_u64(t, col[COL_NATTCH], &s->nattch))
                return false;
        int uc = col[COL_UID] >= 0 ? col[COL_UID] : col[COL_CUID];
        if (uc >= 0) {
                if (!tok_u64(t, uc, &v) || v >= UINT32_MAX)
                        return false;
                s->uid = (uid_t)v;
                s->uid_known = true;
        }
        if (col[COL_RSS] >= 0) {
                if (!tok_u64(t, col[COL_RSS], &s->rss))
                        return false;
                s->rss_known = true;
        }
        if (col[COL_SWAP] >= 0 && !tok_u64(t, col[COL_SWAP], &s->swap))
                return false;
        return true;
}

/* The line at *pos of buf[0..len), without its newline; *pos goes past it. false at the end. */
static bool line_next(const char *buf, size_t len, size_t *pos, const char **ret, size_t *ret_len)
{
        if (*pos >= len)
                return false;
        const char *line = buf + *pos;
        const char *nl = memchr(line, '\n', len - *pos);
        *ret_len = nl ? (size_t)(nl - line) : len - *pos;
        *ret = line;
        *pos += *ret_len + 1;
        return true;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* What a segment occupies: its resident and swapped pages when the kernel says, else its size
 * (an old kernel without the rss column; a segment is created empty, so this is the most). */
static uint64_t seg_bytes(const struct shm_seg *s)
{
        return s->rss_known ? add_sat(s->rss, s->swap) : s->size;
}

static int header(const struct tokens *t, int col[COL_N])
{
        for (int c = 0; c < COL_N; c++)
                col[c] = -1;
        if (t->too_many)
                return -EINVAL;
        for (size_t i = 0; i < t->n; i++)
                for (int c = 0; c < COL_N; c++)
                        if (col[c] < 0 && t->len[i] == strlen(col_names[c]) && memcmp(t->p[i], col_names[c], t->len[i]) == 0)
                                col[c] = (int)i;
        return col[COL_SIZE] >= 0 ? 0 : -EINVAL;
}

int shm_parse_sysv(const char *buf, size_t len, struct shm_sysv *ret)
{
        struct shm_sysv out = { 0 };
        struct tokens t;
        int col[COL_N];
        size_t nfields = 0, pos = 0, cap = 0;
        bool have_header = false;
        const char *line;
        size_t ll;
        while (line_next(buf, len, &pos, &line, &ll)) {
                tokenize(line, ll, &t);
                if (t.n == 0 && !t.too_many)
                        continue;
                if (!have_header) {
                        if (header(&t, col) < 0)
                                return -EINVAL;
                        have_header = true;
                        nfields = t.n;
                        continue;
                }
                struct shm_seg s;
                if (t.too_many || t.n != nfields || !parse_seg(&t, col, &s)) {
                        out.skipped_lines++;
                        continue;
                }
                out.n_total++;
                out.bytes = add_sat(out.bytes, seg_bytes(&s));
                if (out.n == SHM_MAX_SEGS)
                        continue;
                if (out.n == cap) {
                        size_t nc = cap ? cap * 2 : 16;
                        struct shm_seg *v = realloc(out.segs, nc * sizeof(*v));
                        if (!v) {
                                free(out.segs);
                                return -ENOMEM;
                        }
                        out.segs = v;
                        cap = nc;
                }
                out.segs[out.n++] = s;
        }
        if (!have_header)
                return -EINVAL;
        *ret = out;
        return 0;
}

void shm_sysv_clear(struct shm_sysv *s)
{
        if (!s)
                return;
        free(s->segs);
        memset(s, 0, sizeof(*s));
}

/* "Name:   12345 kB" at line[0..len): the value in bytes. */
static bool meminfo_value(const char *line, size_t len, const char *name, uint64_t *ret)
{
        size_t nl = strlen(name);
        if (len <= nl || memcmp(line, name, nl) != 0 || line[nl] != ':')
                return false;
        size_t i = nl + 1;
        while (i < len && line[i] == ' ')
                i++;
        char num[SHM_TOKEN_MAX];
        size_t s = i;
        while (i < len && line[i] >= '0' && line[i] <= '9')
                i++;
        if (i == s || i - s >= sizeof(num))
                return false;
        memcpy(num, line + s, i - s);
        num[i - s] = '\0';
        uint64_t v;
        if (parse_u64(num, &v) < 0)
                return false;
        while (i < len && line[i] == ' ')
                i++;
        /* the kernel writes these two in kB (KiB), always: a line without the unit is not its */
        bool kb = len - i >= 2 && memcmp(line + i, "kB", 2) == 0 && (len - i == 2 || line[i + 2] == ' ');
        if (!kb || v > UINT64_MAX / 1024)
                return false;
        *ret = v * 1024;
        return true;
}

int shm_parse_meminfo(const char *buf, size_t len, uint64_t *ret_mem_total, bool *ret_total_known,
                      uint64_t *ret_shmem, bool *ret_shmem_known)
{
        uint64_t total = 0, shmem = 0;
        bool tk = false, sk = false;
        size_t pos = 0;
        const char *line;
        size_t ll;
        while (line_next(buf, len, &pos, &line, &ll)) {
                if (!tk)
                        tk = meminfo_value(line, ll, "MemTotal", &total);
                if (!sk)
                        sk = meminfo_value(line, ll, "Shmem", &shmem);
        }
        if (!tk && !sk)
                return -EINVAL;
        *ret_mem_total = total;
        *ret_total_known = tk;
        *ret_shmem = shmem;
        *ret_shmem_known = sk;
        return 0;
}

uint64_t shm_threshold(uint64_t mem_total)
{
        uint64_t tenth = mem_total / 10;
        return tenth && tenth < SHM_GIB ? tenth : SHM_GIB; /* never 0: nothing is "large" by itself */
}

void shm_judge(struct shm_report *r)
{
        uint64_t parts = 0;
        if (r->dir_read)
                parts = add_sat(parts, r->dir.used);
        if (r->sysv_read)
                parts = add_sat(parts, r->sysv.bytes);
        r->total_from_meminfo = r->meminfo_read && r->shmem_known;
        r->total = r->total_from_meminfo ? r->shmem : parts;
        r->threshold = shm_threshold(r->meminfo_read && r->mem_total_known ? r->mem_total : 0);
        r->large = r->total >= r->threshold;
}
