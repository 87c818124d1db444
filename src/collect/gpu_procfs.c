/* gpu_procfs: the nvidia module's own list of its GPUs (/proc/driver/nvidia/gpus). */
#include "collect/gpu_procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/strf.h"
#include "util/parse.h"

#define INFO_MAX 8192   /* the file is about 400 bytes */

/* Trim spaces and tabs at both ends of [*s, *s + *n). */
static void trim(const char **s, size_t *n)
{
        while (*n && (**s == ' ' || **s == '\t')) {
                (*s)++;
                (*n)--;
        }
        while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\r'))
                (*n)--;
}

static bool uuid_ok(const char *v, size_t n)
{
        if (n <= 4 || n >= sizeof(((struct gpu_procfs_entry *)0)->uuid) || strncasecmp(v, "GPU-", 4) != 0)
                return false;
        for (size_t i = 4; i < n; i++)
                if (!strchr("0123456789abcdefABCDEF-", v[i]))
                        return false;
        return true;
}

int gpu_procfs_parse_information(const char *buf, size_t len, struct gpu_procfs_entry *ret)
{
        struct gpu_procfs_entry e;
        memset(&e, 0, sizeof(e));
        const char *p = buf, *end = buf + len;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *le = nl ? nl : end;
                const char *colon = memchr(p, ':', (size_t)(le - p));
                if (colon) {
                        const char *k = p, *v = colon + 1;
                        size_t kn = (size_t)(colon - p), vn = (size_t)(le - v);
                        trim(&k, &kn);
                        trim(&v, &vn);
                        char val[64];
                        if (vn < sizeof(val)) {
                                memcpy(val, v, vn);
                                val[vn] = '\0';
                                if (kn == 12 && memcmp(k, "Bus Location", 12) == 0) {
                                        if (pci_bus_id_normalize(val, e.pci_bus_id, sizeof(e.pci_bus_id)) < 0)
                                                e.pci_bus_id[0] = '\0';
                                } else if (kn == 8 && memcmp(k, "GPU UUID", 8) == 0 && uuid_ok(val, vn)) {
                                        memcpy(e.uuid, val, vn + 1);
                                } else if (kn == 12 && memcmp(k, "Device Minor", 12) == 0) {
                                        unsigned m;
                                        if (parse_uint_range(val, 0, 1u << 20, &m) == 0) {
                                                e.minor = m;
                                                e.minor_known = true;
                                        }
                                }
                        }
                }
                p = nl ? nl + 1 : end;
        }
        if (!e.pci_bus_id[0])
                return -EINVAL;
        *ret = e;
        return 0;
}

static int entry_cmp(const void *a, const void *b)
{
        return strcmp(((const struct gpu_procfs_entry *)a)->pci_bus_id, ((const struct gpu_procfs_entry *)b)->pci_bus_id);
}

int gpu_procfs_read(const char *dir, struct gpu_procfs_entry *out, size_t max)
{
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s/gpus", dir ? dir : "/proc/driver/nvidia");
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        DIR *d = fdopendir(dfd);
        if (!d) {
                int e = -errno;
                close(dfd);
                return e;
        }
        size_t count = 0;
        struct dirent *de;
        while (count < max && (de = readdir(d))) {
                char name[300], norm[32];
                if (de->d_name[0] == '.' || pci_bus_id_normalize(de->d_name, norm, sizeof(norm)) < 0)
                        continue;
                snprintf(name, sizeof(name), "%s/information", de->d_name);
                char *buf = NULL;
                size_t len = 0;
                if (read_file_at(dirfd(d), name, INFO_MAX, &buf, &len) < 0)
                        continue;
                struct gpu_procfs_entry e;
                /* the directory names the device; the file's own field says the same */
                if (gpu_procfs_parse_information(buf, len, &e) == 0 && strcmp(e.pci_bus_id, norm) == 0)
                        out[count++] = e;
                free(buf);
        }
        closedir(d);
        qsort(out, count, sizeof(*out), entry_cmp);
        return (int)count;
}

static bool claimed(const struct gpu_report *r, const char *bus)
{
        for (size_t i = 0; i < r->n_gpus; i++)
                if (strcmp(r->gpus[i].pci_bus_id, bus) == 0)
                        return true;
        return false;
}

/* Give GPU g entry e's identity; what NVML said is kept. */
static void fill_one(struct gpu_info *g, const struct gpu_procfs_entry *e, const char *how)
{
        snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", e->pci_bus_id);
        if (!g->uuid[0])
                snprintf(g->uuid, sizeof(g->uuid), "%s", e->uuid);
        if (!g->minor_known && e->minor_known) {
                g->minor = e->minor;
                g->minor_known = true;
        }
        /* whole or not at all: a cut note ends mid-word ("... the only entr") */
        size_t len = strlen(g->status_message);
        char *note = NULL;
        if (str_setf(&note, "%sbus id from /proc/driver/nvidia/gpus (%s)", len ? "; " : "", how) == 0 &&
            len + strlen(note) < sizeof(g->status_message))
                memcpy(g->status_message + len, note, strlen(note) + 1);
        free(note);
}

/* Only facts tie an entry to a GPU: the same UUID, or the same device minor (the number of
 * its /dev/nvidia node); else elimination when exactly one GPU and one entry are left. Never
 * the order: NVML's indexes and the bus order need not agree. */
size_t gpu_procfs_fill(struct gpu_report *r, const struct gpu_procfs_entry *e, size_t n)
{
        size_t filled = 0;
        for (size_t i = 0; i < r->n_gpus; i++) {
                struct gpu_info *g = &r->gpus[i];
                if (g->pci_bus_id[0])
                        continue;
                for (size_t k = 0; k < n; k++) {
                        if (claimed(r, e[k].pci_bus_id))
                                continue;
                        if (g->uuid[0] && e[k].uuid[0] && strcasecmp(g->uuid, e[k].uuid) == 0) {
                                fill_one(g, &e[k], "same UUID");
                                filled++;
                                break;
                        }
                        if (!g->uuid[0] && g->minor_known && e[k].minor_known && g->minor == e[k].minor) {
                                fill_one(g, &e[k], "same device minor");
                                filled++;
                                break;
                        }
                }
        }
        size_t unnamed = 0, free_entries = 0, gi = 0, ek = 0;
        for (size_t i = 0; i < r->n_gpus; i++)
                if (!r->gpus[i].pci_bus_id[0]) {
                        unnamed++;
                        gi = i;
                }
        for (size_t k = 0; k < n; k++)
                if (!claimed(r, e[k].pci_bus_id)) {
                        free_entries++;
                        ek = k;
                }
        struct gpu_info *g = unnamed == 1 && free_entries == 1 ? &r->gpus[gi] : NULL;
        /* a UUID that disagrees rules the entry out */
        if (g && !(g->uuid[0] && e[ek].uuid[0] && strcasecmp(g->uuid, e[ek].uuid) != 0) &&
            !(g->minor_known && e[ek].minor_known && g->minor != e[ek].minor)) {
                fill_one(g, &e[ek], "the only GPU and the only entry left");
                filled++;
        }
        return filled;
}
