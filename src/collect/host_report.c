/* host_report: ownership and look-ups on the host reader's results. */
#include "collect/host_internal.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

void host_proc_clear(struct host_proc *p)
{
        if (!p)
                return;
        free(p->comm);
        free(p->cmdline);
        free(p->cgroup);
        for (unsigned i = 0; i < p->n_env && i < HOST_MAX_ENV; i++)
                free(p->env[i].value);
        memset(p, 0, sizeof(*p));
}

const char *host_holder_source_name(enum host_holder_source s)
{
        switch (s) {
        case HOST_SOURCE_BPF: return "bpf";
        case HOST_SOURCE_OWNERS: return "owners";
        case HOST_SOURCE_BUNDLE: return "bundle";
        case HOST_SOURCE_PROC: break;
        }
        return "proc";
}

void host_report_free(struct host_report *r)
{
        host_report_release(r);
        free(r);
}

void host_report_release(struct host_report *r)
{
        if (!r)
                return;
        for (size_t i = 0; i < r->n_holders; i++)
                host_proc_clear(&r->holders[i]);
        for (size_t i = 0; i < r->n_unverified; i++)
                host_proc_clear(&r->unverified[i]);
        for (size_t i = 0; i < r->n_limits; i++) {
                free(r->limits[i]);
                free(r->limits_text[i]);
        }
        free(r->limits_text);
        free(r->holders);
        free(r->unverified);
        free(r->opaque);
        free(r->limits);
        free(r->bpf_error);
}

const struct host_proc *host_report_find(const struct host_report *r, pid_t pid)
{
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_holders; i++)
                if (r->holders[i].pid == pid)
                        return &r->holders[i];
        return NULL;
}

bool host_proc_holds(const struct host_proc *p, const char *name)
{
        for (unsigned i = 0; i < p->n_nodes && i < HOST_MAX_NODES; i++)
                if (strcmp(p->nodes[i].name, name) == 0)
                        return p->nodes[i].via != 0;
        return false;
}

const char *host_proc_env(const struct host_proc *p, const char *name)
{
        for (unsigned i = 0; i < p->n_env && i < HOST_MAX_ENV; i++)
                if (strcmp(p->env[i].name, name) == 0)
                        return p->env[i].value;
        return NULL;
}

int host_proc_add_node(struct host_proc *p, const char *name, unsigned via)
{
        for (unsigned i = 0; i < p->n_nodes; i++) {
                if (strcmp(p->nodes[i].name, name) == 0) {
                        p->nodes[i].via |= via;
                        return 0;
                }
        }
        size_t n = strlen(name);
        if (n >= sizeof(p->nodes[0].name))
                return -ENAMETOOLONG;
        if (p->n_nodes >= HOST_MAX_NODES)
                return -E2BIG;
        memcpy(p->nodes[p->n_nodes].name, name, n + 1);
        p->nodes[p->n_nodes].via = via;
        p->n_nodes++;
        return 0;
}

int host_proc_add_desc(struct host_proc *p, uint64_t key, int fd)
{
        for (unsigned i = 0; i < p->n_descs; i++)
                if (p->descs[i].fd == fd && p->descs[i].key == key)
                        return 0;
        if (p->n_descs >= HOST_MAX_DESC)
                return -E2BIG;
        p->descs[p->n_descs++] = (struct host_desc){ .key = key, .fd = fd };
        return 0;
}

static int node_cmp(const void *a, const void *b)
{
        return strcmp(((const struct host_node *)a)->name, ((const struct host_node *)b)->name);
}

void host_proc_sort_nodes(struct host_proc *p)
{
        qsort(p->nodes, p->n_nodes, sizeof(p->nodes[0]), node_cmp);
}

int host_report_add_limit(struct host_report *r, const char *en, const char *text)
{
        bool other = text && strcmp(text, en) != 0;
        char *copy = strdup(en), *copy_text = other ? strdup(text) : NULL;
        char **l = copy && (!other || copy_text) ? realloc(r->limits, (r->n_limits + 1) * sizeof(*l)) : NULL;
        if (l)
                r->limits = l;
        char **t = l ? realloc(r->limits_text, (r->n_limits + 1) * sizeof(*t)) : NULL;
        if (!t) {
                free(copy);
                free(copy_text);
                return -ENOMEM;
        }
        r->limits_text = t;
        l[r->n_limits] = copy;
        t[r->n_limits++] = copy_text;
        return 0;
}

const char *host_report_limit_text(const struct host_report *r, size_t i)
{
        return r->limits_text && r->limits_text[i] ? r->limits_text[i] : r->limits[i];
}

DIR *host_opendirat(int dfd, const char *name)
{
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        DIR *d = fdopendir(fd);
        if (!d) {
                int e = errno;
                close(fd);
                errno = e;
        }
        return d;
}

int host_grow(void *arr, size_t *alloc, size_t n, size_t elem)
{
        void **pa = arr;
        if (n < *alloc)
                return 0;
        size_t na = *alloc ? *alloc * 2 : 16;
        void *a = realloc(*pa, na * elem);
        if (!a)
                return -ENOMEM;
        *pa = a;
        *alloc = na;
        return 0;
}

int host_procs_append(struct host_proc **arr, size_t *n, size_t *alloc, struct host_proc *p)
{
        if (host_grow(arr, alloc, *n, sizeof(**arr)) < 0)
                return -ENOMEM;
        (*arr)[(*n)++] = *p;
        memset(p, 0, sizeof(*p));
        return 0;
}

static int proc_cmp(const void *a, const void *b)
{
        pid_t x = ((const struct host_proc *)a)->pid, y = ((const struct host_proc *)b)->pid;
        return (x > y) - (x < y);
}

void host_procs_sort(struct host_proc *arr, size_t n)
{
        if (n > 1)
                qsort(arr, n, sizeof(*arr), proc_cmp);
}
