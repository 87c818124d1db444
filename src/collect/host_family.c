/* Description families: the holders that share an open file description of an NVIDIA node.
 *
 * The driver frees a context when the last reference to the open file description of
 * /dev/nvidiactl it was created on goes away (the file's release frees the resource-manager
 * clients made through it). A description is shared by fork (inherited descriptors and
 * mappings), dup, SCM_RIGHTS and pidfd_getfd, never by opening the node again: so the
 * processes that share one keep the same contexts, and a process that shares none with a job
 * keeps none of its memory. Families are the connected groups of "shares a description with".
 *
 * Two ways to know "the same description":
 *   - the BPF iterators see the struct file itself, for descriptors and mappings alike;
 *   - kcmp(KCMP_FILE) compares two descriptors (kernel/kcmp.c: a total order of the obfuscated
 *     pointers, so a sort groups them in O(n log n) calls). It needs ptrace read access to both
 *     processes, and it cannot compare a mapping: a holder that refers to its nodes by mapping
 *     only, or whose descriptors kcmp refuses, stays a family of its own and says why. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collect/host.h"

#define NUM_(x) #x
#define NUM(x) NUM_(x)

#ifndef KCMP_FILE
#define KCMP_FILE 0
#endif

const char *host_family_source_name(enum host_family_source s)
{
        switch (s) {
        case HOST_FAMILIES_KCMP: return "kcmp";
        case HOST_FAMILIES_BPF: return "bpf";
        case HOST_FAMILIES_BUNDLE: return "bundle";
        default: return "none";
        }
}

const char *host_family_note_text(enum host_family_note n)
{
        switch (n) {
        case HOST_FAMILY_MAPPING_ONLY: return "it refers to the nodes by mapping only, which kcmp cannot compare";
        case HOST_FAMILY_NO_RIGHTS: return "kcmp was refused (no ptrace rights over it)";
        case HOST_FAMILY_UNKNOWN: return "descriptions were not compared";
        case HOST_FAMILY_TOO_MANY: return "more than " NUM(HOST_MAX_DESC) " descriptions: only the first were compared";
        default: return NULL;
        }
}

/* --- union-find over holder indexes ---------------------------------------------------------- */

static size_t uf_find(size_t *up, size_t i)
{
        while (up[i] != i) {
                up[i] = up[up[i]];
                i = up[i];
        }
        return i;
}

static void uf_union(size_t *up, size_t a, size_t b)
{
        a = uf_find(up, a);
        b = uf_find(up, b);
        if (a != b)
                up[a > b ? a : b] = a < b ? a : b;      /* the lower index (lower PID) leads */
}

/* One descriptor or mapping to group: whose (holder index) and which. */
struct desc_ref {
        size_t holder;
        pid_t pid;
        uint64_t key;
        int fd;
};

static int cmp_key(const void *a, const void *b)
{
        const struct desc_ref *x = a, *y = b;
        return (x->key > y->key) - (x->key < y->key);
}

static long kcmp_file(pid_t a, int fa, pid_t b, int fb)
{
        return syscall(SYS_kcmp, a, b, KCMP_FILE, fa, fb);
}

/* The order of two descriptors by kcmp: 0 equal, <0, >0. A pair kcmp refuses (a process that
 * exited since it was checked) compares by PID and descriptor, so the sort ends; equality is
 * asked again of neighbours only. */
static int cmp_kcmp(const void *a, const void *b)
{
        const struct desc_ref *x = a, *y = b;
        long r = kcmp_file(x->pid, x->fd, y->pid, y->fd);
        if (r == 0)
                return 0;
        if (r == 1)
                return -1;
        if (r == 2)
                return 1;
        if (x->pid != y->pid)
                return (x->pid > y->pid) - (x->pid < y->pid);
        return (x->fd > y->fd) - (x->fd < y->fd);
}

/* The references to group, for the BPF keys or the kcmp descriptors; notes on holders that
 * cannot take part. *ret is malloc'd (NULL when none). */
static int collect_refs(struct host_report *r, bool by_key, bool live_proc, struct desc_ref **ret, size_t *ret_n)
{
        size_t n = 0, alloc = 0;
        struct desc_ref *v = NULL;
        for (size_t i = 0; i < r->n_holders; i++) {
                struct host_proc *p = &r->holders[i];
                bool any = false, mapped = false, refused = false;
                for (unsigned d = 0; d < p->n_descs; d++) {
                        const struct host_desc *hd = &p->descs[d];
                        if (by_key ? !hd->key : hd->fd < 0) {
                                mapped |= hd->fd < 0;
                                continue;
                        }
                        /* kcmp with itself: ptrace access to it, and the descriptor is still there */
                        if (!by_key && (!live_proc || kcmp_file(p->pid, hd->fd, p->pid, hd->fd) != 0)) {
                                refused = true;
                                continue;
                        }
                        if (n == alloc) {
                                size_t na = alloc ? alloc * 2 : 64;
                                struct desc_ref *nv = realloc(v, na * sizeof(*nv));
                                if (!nv) {
                                        free(v);
                                        return -ENOMEM;
                                }
                                v = nv;
                                alloc = na;
                        }
                        v[n++] = (struct desc_ref){ .holder = i, .pid = p->pid, .key = hd->key, .fd = hd->fd };
                        any = true;
                }
                if (!any)
                        p->family_note = !live_proc && !by_key ? HOST_FAMILY_UNKNOWN
                                         : refused ? HOST_FAMILY_NO_RIGHTS
                                         : mapped ? HOST_FAMILY_MAPPING_ONLY
                                                  : HOST_FAMILY_UNKNOWN;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

int host_families_group(struct host_report *r, bool live_proc)
{
        bool by_key = r->holder_source == HOST_SOURCE_BPF;
        struct desc_ref *v = NULL;
        size_t n = 0;
        size_t *up = calloc(r->n_holders ? r->n_holders : 1, sizeof(*up));
        if (!up)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_holders; i++)
                up[i] = i;
        int e = collect_refs(r, by_key, live_proc, &v, &n);
        if (e < 0) {
                free(up);
                return e;
        }
        if (n)
                qsort(v, n, sizeof(*v), by_key ? cmp_key : cmp_kcmp);
        for (size_t k = 1; k < n; k++) {
                bool same = by_key ? v[k].key == v[k - 1].key
                                   : kcmp_file(v[k].pid, v[k].fd, v[k - 1].pid, v[k - 1].fd) == 0;
                if (same)
                        uf_union(up, v[k].holder, v[k - 1].holder);
        }
        /* number the families by their lowest PID (holders are sorted by PID) */
        unsigned next = 0;
        for (size_t i = 0; i < r->n_holders; i++) {
                size_t root = uf_find(up, i);
                r->holders[i].family = root == i ? ++next : r->holders[root].family;
        }
        for (size_t i = 0; i < r->n_holders; i++) {
                memset(r->holders[i].descs, 0, sizeof(r->holders[i].descs));
                r->holders[i].n_descs = 0;
        }
        r->n_families = next;
        r->family_source = by_key ? HOST_FAMILIES_BPF : live_proc ? HOST_FAMILIES_KCMP : HOST_FAMILIES_NONE;
        free(v);
        free(up);
        return 0;
}
