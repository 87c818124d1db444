/* ledger_read: the allocation ledgers of `ghostvram track`, read back. See ledger_read.h. */
#define _GNU_SOURCE 1
#include "track/ledger_read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "track/elf_sym.h"
#include "util/parse.h"

/* ---- the table of outstanding allocations ---------------------------------------------------- */

static size_t home_of(uint8_t cls, uint64_t addr, size_t mask)
{
        uint64_t k = addr ^ ((uint64_t)cls << 61);
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdull;
        k ^= k >> 33;
        k *= 0xc4ceb9fe1a85ec53ull;
        k ^= k >> 33;
        return (size_t)k & mask;
}

static struct track_alloc *lookup(const struct track_ledger *l, uint8_t cls, uint64_t addr)
{
        if (!l->cap)
                return NULL;
        size_t mask = l->cap - 1;
        for (size_t i = home_of(cls, addr, mask);; i = (i + 1) & mask) {
                struct track_alloc *a = &l->slots[i];
                if (!a->cls)
                        return NULL;
                if (a->cls == cls && a->addr == addr)
                        return a;
        }
}

static int grow(struct track_ledger *l)
{
        size_t ncap = l->cap ? l->cap * 2 : 1024;
        struct track_alloc *ns = calloc(ncap, sizeof(*ns));
        if (!ns)
                return -ENOMEM;
        for (size_t i = 0; i < l->cap; i++) {
                const struct track_alloc *a = &l->slots[i];
                if (!a->cls)
                        continue;
                size_t j = home_of(a->cls, a->addr, ncap - 1);
                while (ns[j].cls)
                        j = (j + 1) & (ncap - 1);
                ns[j] = *a;
        }
        free(l->slots);
        l->slots = ns;
        l->cap = ncap;
        return 0;
}

/* Insert (or replace) an entry; NULL when the table is full or memory ran out. */
static struct track_alloc *insert(struct track_ledger *l, uint8_t cls, uint64_t addr)
{
        struct track_alloc *a = lookup(l, cls, addr);
        if (a)
                return a;
        if (l->n >= TRACK_LIVE_MAX) {
                l->live_full = true;
                return NULL;
        }
        if ((l->n + 1) * 4 > l->cap * 3 && grow(l) < 0)
                return NULL;
        size_t mask = l->cap - 1, i = home_of(cls, addr, mask);
        while (l->slots[i].cls)
                i = (i + 1) & mask;
        a = &l->slots[i];
        memset(a, 0, sizeof(*a));
        a->cls = cls;
        a->addr = addr;
        l->n++;
        return a;
}

/* Remove an entry, shifting later members of its cluster back (no tombstones). */
static void erase(struct track_ledger *l, struct track_alloc *a)
{
        size_t mask = l->cap - 1, i = (size_t)(a - l->slots), j = i;
        for (;;) {
                j = (j + 1) & mask;
                if (!l->slots[j].cls)
                        break;
                size_t k = home_of(l->slots[j].cls, l->slots[j].addr, mask);
                /* move j into the hole at i unless its home lies cyclically in (i, j] */
                bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
                if (!stays) {
                        l->slots[i] = l->slots[j];
                        i = j;
                }
        }
        memset(&l->slots[i], 0, sizeof(l->slots[i]));
        l->n--;
}

static void clear(struct track_ledger *l)
{
        if (l->slots)
                memset(l->slots, 0, l->cap * sizeof(*l->slots));
        l->n = 0;
}

/* ---- replay ------------------------------------------------------------------------------------ */

static bool header_valid(const struct gvl_header *h)
{
        return memcmp(h->magic, GVL_MAGIC, sizeof(h->magic)) == 0 && h->version == GVL_VERSION &&
               h->rec_size == GVL_REC_SIZE && h->bom == GVL_BOM && h->check == gvl_check(h);
}

static bool record_valid(const struct gvl_record *r)
{
        return r->kind >= 1 && r->kind <= GVL_KIND_MAX && r->api <= GVL_API_MAX && r->nframes <= GVL_FRAMES &&
               r->check == gvl_check(r);
}

static void handle_settle(struct track_ledger *l, struct track_alloc *h)
{
        if (h->released && h->maps == 0)
                erase(l, h);
}

static void replay(struct track_ledger *l, const struct gvl_record *r)
{
        struct track_alloc *a;
        l->records++;
        if (r->time_ns > l->last_time_ns)
                l->last_time_ns = r->time_ns;
        switch (r->kind) {
        case GVL_ALLOC:
        case GVL_CREATE:
                l->allocs++;
                a = insert(l, r->kind == GVL_ALLOC ? TC_MEM : TC_HANDLE, r->addr);
                if (!a)
                        return;
                a->size = r->size;
                a->time_ns = r->time_ns;
                a->device = r->device;
                a->api = r->api;
                a->flags = r->flags;
                a->nframes = r->nframes;
                a->maps = 0;
                a->released = false;
                memcpy(a->frames, r->u.site.frames, sizeof(a->frames));
                memcpy(a->uuid, r->u.site.uuid, sizeof(a->uuid));
                return;
        case GVL_FREE:
                l->frees++;
                a = lookup(l, TC_MEM, r->addr);
                if (a)
                        erase(l, a);
                else
                        l->unmatched_frees++;
                return;
        case GVL_RELEASE:
                l->frees++;
                a = lookup(l, TC_HANDLE, r->addr);
                if (!a) {
                        l->unmatched_frees++;
                        return;
                }
                a->released = true;
                handle_settle(l, a);
                return;
        case GVL_MAP: {
                a = insert(l, TC_MAP, r->addr);
                if (!a)
                        return;
                a->size = r->size;
                a->handle = r->aux;
                struct track_alloc *h = lookup(l, TC_HANDLE, r->aux);
                if (h && h->maps < UINT32_MAX)
                        h->maps++;
                return;
        }
        case GVL_UNMAP: {
                a = lookup(l, TC_MAP, r->addr);
                if (!a)
                        return;
                uint64_t hv = a->handle;
                erase(l, a);
                struct track_alloc *h = lookup(l, TC_HANDLE, hv);
                if (h && h->maps) {
                        h->maps--;
                        handle_settle(l, h);
                }
                return;
        }
        case GVL_MODULE: {
                if (l->n_modules >= TRACK_MODULES_MAX || r->size == 0 || r->aux + r->size < r->aux)
                        return;
                struct track_module *m = &l->modules[l->n_modules++];
                m->bias = r->addr;
                m->lo = r->aux;
                m->hi = r->aux + r->size;
                memcpy(m->path, r->u.path, sizeof(r->u.path));
                m->path[sizeof(m->path) - 1] = '\0';
                return;
        }
        case GVL_EXEC:
                /* a new image: the old one's memory went with its context */
                l->execs++;
                clear(l);
                l->n_modules = 0;
                return;
        default:
                return;
        }
}

void track_ledger_init(struct track_ledger *l)
{
        memset(l, 0, sizeof(*l));
}

void track_ledger_free(struct track_ledger *l)
{
        if (!l)
                return;
        free(l->slots);
        track_ledger_init(l);
}

/* Take one candidate record at p (GVL_REC_SIZE bytes): 1 taken, 0 not a record. */
static int take(struct track_ledger *l, const uint8_t *p)
{
        if (!l->have_header) {
                memcpy(&l->hdr, p, sizeof(l->hdr));
                if (!header_valid(&l->hdr))
                        return -EBADMSG;
                l->have_header = true;
                return 1;
        }
        struct gvl_record r;
        memcpy(&r, p, sizeof(r));
        if (!record_valid(&r))
                return 0;
        replay(l, &r);
        return 1;
}

int track_ledger_feed(struct track_ledger *l, const void *buf, size_t len)
{
        const uint8_t *p = buf;
        while (len && !l->gave_up) {
                if (l->npend == 0 && len >= GVL_REC_SIZE) {
                        int t = take(l, p);
                        if (t < 0)
                                return t;
                        if (t == 1) {
                                p += GVL_REC_SIZE;
                                len -= GVL_REC_SIZE;
                                continue;
                        }
                        /* not a record here: slide by one byte (a short write misaligned the
                         * rest, or a hole); bounded */
                        l->skipped_bytes++;
                        p++;
                        len--;
                        if (l->skipped_bytes > TRACK_RESYNC_MAX)
                                l->gave_up = true;
                        continue;
                }
                size_t k = GVL_REC_SIZE - l->npend < len ? GVL_REC_SIZE - l->npend : len;
                memcpy(l->pend + l->npend, p, k);
                l->npend += k;
                p += k;
                len -= k;
                if (l->npend < GVL_REC_SIZE)
                        break;
                int t = take(l, l->pend);
                if (t < 0)
                        return t;
                if (t == 1) {
                        l->npend = 0;
                } else {
                        memmove(l->pend, l->pend + 1, GVL_REC_SIZE - 1);
                        l->npend--;
                        if (++l->skipped_bytes > TRACK_RESYNC_MAX)
                                l->gave_up = true;
                }
        }
        return 0;
}

void track_ledger_finish(struct track_ledger *l)
{
        l->tail_bytes = l->npend;
        l->npend = 0;
}

int track_ledger_parse(const void *buf, size_t len, struct track_ledger *l)
{
        track_ledger_init(l);
        int r = track_ledger_feed(l, buf, len);
        if (r == 0 && !l->have_header)
                r = -EBADMSG;
        if (r < 0) {
                track_ledger_free(l);
                return r;
        }
        track_ledger_finish(l);
        return 0;
}

/* ---- summaries ----------------------------------------------------------------------------------- */

static int site_cmp(const void *a, const void *b)
{
        const struct track_site *x = a, *y = b;
        return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : (x->count < y->count) - (x->count > y->count);
}

void track_ledger_summary(const struct track_ledger *l, const uint8_t *uuid, struct track_summary *ret)
{
        memset(ret, 0, sizeof(*ret));
        for (size_t i = 0; i < l->cap; i++) {
                const struct track_alloc *a = &l->slots[i];
                if (a->cls != TC_MEM && a->cls != TC_HANDLE)
                        continue;
                if (uuid && memcmp(a->uuid, uuid, 16) != 0)
                        continue;
                ret->outstanding_bytes += a->size;
                ret->allocations++;
                struct track_site *s = NULL;
                for (size_t k = 0; k < ret->n_sites && !s; k++)
                        if (ret->sites[k].nframes == a->nframes && ret->sites[k].api == a->api &&
                            memcmp(ret->sites[k].frames, a->frames, a->nframes * sizeof(a->frames[0])) == 0)
                                s = &ret->sites[k];
                if (!s && ret->n_sites < TRACK_SITES_MAX) {
                        s = &ret->sites[ret->n_sites++];
                        memcpy(s->frames, a->frames, sizeof(s->frames));
                        s->nframes = a->nframes;
                        s->api = a->api;
                        s->procaddr = a->flags & GVL_F_PROCADDR;
                }
                if (!s) {
                        ret->other_sites_bytes += a->size;
                        continue;
                }
                s->bytes += a->size;
                s->count++;
        }
        qsort(ret->sites, ret->n_sites, sizeof(ret->sites[0]), site_cmp);
}

void track_frame_name(const struct track_ledger *l, uint64_t addr, char *out, size_t outlen)
{
        for (size_t i = 0; i < l->n_modules; i++) {
                const struct track_module *m = &l->modules[i];
                if (addr < m->lo || addr >= m->hi)
                        continue;
                const char *base = strrchr(m->path, '/');
                base = base ? base + 1 : m->path;
                /* the return address points after the call: -1 names the call's line */
                snprintf(out, outlen, "%s+0x%llx", base[0] ? base : "?", (unsigned long long)(addr - m->bias));
                return;
        }
        snprintf(out, outlen, "0x%llx", (unsigned long long)addr);
}

void track_frame_symbol(const struct track_ledger *l, uint64_t addr, char *out, size_t outlen)
{
        for (size_t i = 0; i < l->n_modules && addr; i++) {
                const struct track_module *m = &l->modules[i];
                if (addr < m->lo || addr >= m->hi || m->path[0] != '/')
                        continue;
                char fn[128];
                uint64_t off;
                /* a return address is just after its call: the call is in the function that
                 * holds addr - 1 (a call that ends a function returns past its end) */
                if (elf_symbolise(m->path, addr - 1 - m->bias, fn, sizeof(fn), &off) < 0)
                        break;
                const char *base = strrchr(m->path, '/') + 1;
                snprintf(out, outlen, "%s!%s+0x%llx", base, fn, (unsigned long long)(off + 1));
                return;
        }
        track_frame_name(l, addr, out, outlen);
}

const char *track_api_name(uint8_t api)
{
        static const char *const names[] = {
                [GVL_API_NONE] = "?",
                [GVL_API_MEM_ALLOC] = "cuMemAlloc_v2",
                [GVL_API_MEM_ALLOC_PITCH] = "cuMemAllocPitch_v2",
                [GVL_API_MEM_ALLOC_MANAGED] = "cuMemAllocManaged",
                [GVL_API_MEM_ALLOC_ASYNC] = "cuMemAllocAsync",
                [GVL_API_MEM_ALLOC_POOL_ASYNC] = "cuMemAllocFromPoolAsync",
                [GVL_API_MEM_FREE] = "cuMemFree_v2",
                [GVL_API_MEM_FREE_ASYNC] = "cuMemFreeAsync",
                [GVL_API_MEM_CREATE] = "cuMemCreate",
                [GVL_API_MEM_RELEASE] = "cuMemRelease",
                [GVL_API_MEM_MAP] = "cuMemMap",
                [GVL_API_MEM_UNMAP] = "cuMemUnmap",
        };
        return api < sizeof(names) / sizeof(names[0]) && names[api] ? names[api] : "?";
}

int track_uuid_parse(const char *s, uint8_t out[16])
{
        uint8_t b[16];
        unsigned k = 0;
        if (strncmp(s, "GPU-", 4) == 0)
                s += 4;
        for (; *s; s++) {
                if (*s == '-')
                        continue;
                int v = *s >= '0' && *s <= '9' ? *s - '0'
                      : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
                      : *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
                                               : -1;
                if (v < 0 || k >= 32)
                        return -EINVAL;
                if (k % 2 == 0)
                        b[k / 2] = (uint8_t)(v << 4);
                else
                        b[k / 2] = (uint8_t)(b[k / 2] | v);
                k++;
        }
        if (k != 32)
                return -EINVAL;
        memcpy(out, b, 16);
        return 0;
}

/* ---- files --------------------------------------------------------------------------------------- */

int track_ledger_load(int dirfd, const char *name, struct track_ledger *l)
{
        int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
                return -errno;
        struct stat st;
        int r = 0;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                goto out;
        }
        if (!S_ISREG(st.st_mode)) {
                r = -EBADMSG;
                goto out;
        }
        track_ledger_init(l);
        uint8_t chunk[1 << 16];
        uint64_t total = 0;
        for (;;) {
                ssize_t n = read(fd, chunk, sizeof(chunk));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = -errno;
                        break;
                }
                if (n == 0)
                        break;
                total += (uint64_t)n;
                r = track_ledger_feed(l, chunk, (size_t)n);
                if (r < 0 || total >= TRACK_FILE_MAX || l->gave_up)
                        break;
        }
        if (r == 0 && !l->have_header)
                r = -EBADMSG;
        if (r < 0)
                track_ledger_free(l);
        else
                track_ledger_finish(l);
out:
        close(fd);
        return r;
}

bool track_ledger_name(const char *name, pid_t *ret_pid, uint64_t *ret_start)
{
        uint64_t pid, start;
        const char *end;
        if (parse_u64_prefix(name, 10, &pid, &end) < 0 || pid == 0 || pid > INT32_MAX || *end != '-')
                return false;
        if (parse_u64_prefix(end + 1, 10, &start, &end) < 0 || strcmp(end, GVL_SUFFIX) != 0)
                return false;
        if (!(name[0] >= '1' && name[0] <= '9'))
                return false;
        *ret_pid = (pid_t)pid;
        *ret_start = start;
        return true;
}

bool track_process_alive(const char *proc_root, pid_t pid, uint64_t start_ticks)
{
        char p[PATH_MAX], b[1024];
        snprintf(p, sizeof(p), "%s/%d/stat", proc_root ? proc_root : "/proc", (int)pid);
        int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return false;
        ssize_t n = read(fd, b, sizeof(b) - 1);
        close(fd);
        if (n <= 0)
                return false;
        b[n] = '\0';
        char *s = strrchr(b, ')');
        if (!s || s[1] != ' ')
                return false;
        /* fields after ")": 3 state ... 22 starttime */
        s += 2;
        if (*s == 'Z' || *s == 'X')
                return false; /* a zombie has let go of everything */
        for (int field = 3; field < 22; field++) {
                s = strchr(s, ' ');
                if (!s)
                        return false;
                s++;
        }
        uint64_t v;
        const char *end;
        return parse_u64_prefix(s, 10, &v, &end) == 0 && v == start_ticks;
}

int track_find_dead(const char *dir, const char *proc_root, pid_t pid, char *ret_name, size_t namelen)
{
        DIR *d = opendir(dir);
        if (!d)
                return -errno;
        struct dirent *e;
        unsigned seen = 0;
        struct timespec best = { 0, 0 };
        int r = -ENOENT;
        while ((e = readdir(d)) && seen < TRACK_DIR_FILES_MAX) {
                pid_t p;
                uint64_t start;
                seen++;
                if (!track_ledger_name(e->d_name, &p, &start) || p != pid)
                        continue;
                if (track_process_alive(proc_root, p, start))
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (r == 0 && (st.st_mtim.tv_sec < best.tv_sec ||
                               (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec <= best.tv_nsec)))
                        continue;
                if (strlen(e->d_name) >= namelen)
                        continue;
                memcpy(ret_name, e->d_name, strlen(e->d_name) + 1);
                best = st.st_mtim;
                r = 0;
        }
        closedir(d);
        return r;
}

struct prune_entry {
        char name[64];
        int64_t mtime;
        uint64_t size;
};

static int prune_cmp(const void *a, const void *b)
{
        const struct prune_entry *x = a, *y = b;
        return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

int track_prune(const char *dir, const struct track_prune_opts *o, struct track_prune_result *ret)
{
        struct track_prune_result res = { 0 };
        DIR *d = opendir(dir);
        if (!d)
                return -errno;
        struct prune_entry *ents = calloc(TRACK_DIR_FILES_MAX, sizeof(*ents));
        if (!ents) {
                closedir(d);
                return -ENOMEM;
        }
        size_t n = 0;
        unsigned seen = 0;
        int64_t now = (int64_t)time(NULL);
        uint64_t total = 0;
        struct dirent *e;
        while ((e = readdir(d)) && seen++ < TRACK_DIR_FILES_MAX) {
                struct stat st;
                pid_t pid;
                uint64_t start;
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                size_t len = strlen(e->d_name);
                if (e->d_name[0] == '.' && len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0) {
                        /* a header that never became a ledger (killed between create and rename) */
                        if (now - st.st_mtim.tv_sec > 60 && unlinkat(dirfd(d), e->d_name, 0) == 0)
                                res.removed++;
                        continue;
                }
                if (!track_ledger_name(e->d_name, &pid, &start) || len >= sizeof(ents[0].name))
                        continue;
                if (track_process_alive(o->proc_root, pid, start))
                        continue; /* never removed, and not counted against the cap */
                if (o->max_age_s && now - st.st_mtim.tv_sec > (int64_t)o->max_age_s) {
                        if (unlinkat(dirfd(d), e->d_name, 0) == 0) {
                                res.removed++;
                                res.removed_bytes += (uint64_t)st.st_size;
                        }
                        continue;
                }
                memcpy(ents[n].name, e->d_name, len + 1);
                ents[n].mtime = st.st_mtim.tv_sec;
                ents[n].size = (uint64_t)st.st_size;
                total += ents[n].size;
                n++;
        }
        qsort(ents, n, sizeof(*ents), prune_cmp);
        for (size_t i = 0; i < n && o->max_total_bytes && total > o->max_total_bytes; i++) {
                if (unlinkat(dirfd(d), ents[i].name, 0) == 0) {
                        res.removed++;
                        res.removed_bytes += ents[i].size;
                        total -= ents[i].size;
                }
        }
        res.kept_bytes = total;
        free(ents);
        closedir(d);
        *ret = res;
        return 0;
}
