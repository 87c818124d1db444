/* contexts: GPU contexts of the simulated driver and the rule that decides their lifetime.
 *
 * A context lives exactly as long as the open file description of dev/nvidiactl it was
 * created on — the real driver frees a client's memory when the last reference to that
 * description goes (the last descriptor, inherited or not, or the last mapping). The
 * context holds an OFD write lock on byte <id> of that description: OFD locks belong to
 * the description and are dropped only when it is finally released (__fput ->
 * locks_remove_file), which a mapping postpones like a descriptor does. Readers test it
 * with F_OFD_GETLK from their own description. No /proc walk decides anything here.
 *
 * The owner holds a classic POSIX lock on byte <id> of DIR/owners: not inherited by fork,
 * dropped when the owner dies, and a lock test reports its PID translated into the caller's
 * PID namespace (0 when not visible there) — what a translating driver does. */
#define _GNU_SOURCE 1 /* F_OFD_GETLK, F_OFD_SETLK */
#include "simstate.h"
#include "simstate_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fileio.h"
#include "util/parse.h"

struct ctx_list {
        unsigned next;
        size_t n;
        struct sim_ctx ctx[SIM_MAX_CONTEXTS];
};

static int ctx_parse_nspid(const char *s, struct sim_ctx *c)
{
        c->n_nspid = 0;
        while (*s) {
                uint64_t v;
                const char *end;
                if (c->n_nspid >= SIM_MAX_NSPID || parse_u64_prefix(s, 10, &v, &end) < 0 || v == 0 ||
                    v > INT32_MAX)
                        return -EBADMSG;
                c->nspid[c->n_nspid++] = (pid_t)v;
                s = end;
                if (*s == ',')
                        s++;
                else if (*s)
                        return -EBADMSG;
        }
        return c->n_nspid ? 0 : -EBADMSG;
}

static int ctx_parse(const char *line, struct sim_ctx *c)
{
        uint64_t id, gpu, bytes, ons, pns, created, released, watcher = 0;
        char nspid[128];
        memset(c, 0, sizeof(*c));
        if (sim_kv_u64(line, "ctx", &id) < 0 || id == 0 || id > INT32_MAX ||
            sim_kv_u64(line, "gpu", &gpu) < 0 || gpu >= SIM_MAX_GPUS ||
            sim_kv_u64(line, "bytes", &bytes) < 0 || bytes > ((uint64_t)1 << 44) ||
            sim_kv_u64(line, "ownerns", &ons) < 0 || sim_kv_u64(line, "procns", &pns) < 0 ||
            sim_kv_u64(line, "created", &created) < 0 || sim_kv_u64(line, "released", &released) < 0 ||
            sim_kv(line, "nspid", false, nspid, sizeof(nspid)) < 0 || ctx_parse_nspid(nspid, c) < 0)
                return -EBADMSG;
        /* optional (lines written before the teardown watcher existed have none), and only
         * informative: a bad value is dropped, never the context with its memory */
        if (sim_kv(line, "watcher", false, nspid, sizeof(nspid)) < 0 || parse_u64(nspid, &watcher) < 0 ||
            watcher > INT32_MAX)
                watcher = 0;
        c->watcher = (pid_t)watcher;
        /* optional: only contexts in a MIG GPU instance have one; a bad value is no instance */
        uint64_t gi;
        c->gi = sim_kv(line, "gi", false, nspid, sizeof(nspid)) == 0 && parse_u64(nspid, &gi) == 0 && gi >= 1 &&
                                gi <= SIM_MAX_MIG
                        ? (unsigned)gi
                        : SIM_GI_NONE;
        /* optional: an MPS client's context says mps=1 */
        c->mps = sim_kv(line, "mps", false, nspid, sizeof(nspid)) == 0 && !strcmp(nspid, "1");
        c->id = (unsigned)id;
        c->gpu = (unsigned)gpu;
        c->bytes = bytes;
        c->owner_pidns = ons;
        c->proc_pidns = pns;
        c->created_ms = created;
        c->released_ms = released;
        return 0;
}

/* Read DIR/contexts; lines that do not parse are skipped. */
static int ctx_load(const char *dir, struct ctx_list *l)
{
        char *data = NULL, *cur, *line;
        size_t len;
        l->next = 1;
        l->n = 0;
        int r = sim_read(dir, "contexts", &data, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        for (cur = data; (line = sim_next_line(&cur));) {
                uint64_t v;
                if (strncmp(line, "next=", 5) == 0) {
                        if (parse_u64(line + 5, &v) == 0 && v > 0 && v < INT32_MAX && v > l->next)
                                l->next = (unsigned)v;
                        continue;
                }
                if (l->n >= SIM_MAX_CONTEXTS || ctx_parse(line, &l->ctx[l->n]) < 0)
                        continue;
                if (l->ctx[l->n].id >= l->next)
                        l->next = l->ctx[l->n].id + 1;
                l->n++;
        }
        free(data);
        return 0;
}

static int ctx_store(const char *dir, const struct ctx_list *l)
{
        struct buf b = BUF_INIT(SIM_FILE_MAX);
        int r = buf_printf(&b, "next=%u\n", l->next);
        for (size_t i = 0; r == 0 && i < l->n; i++) {
                const struct sim_ctx *c = &l->ctx[i];
                r = buf_printf(&b, "ctx=%u gpu=%u bytes=%llu ownerns=%llu procns=%llu nspid=", c->id, c->gpu,
                               (unsigned long long)c->bytes, c->owner_pidns, c->proc_pidns);
                for (unsigned k = 0; r == 0 && k < c->n_nspid; k++)
                        r = buf_printf(&b, "%s%d", k ? "," : "", (int)c->nspid[k]);
                if (r == 0)
                        r = buf_printf(&b, " created=%llu released=%llu", (unsigned long long)c->created_ms,
                                       (unsigned long long)c->released_ms);
                if (r == 0 && c->watcher > 0)
                        r = buf_printf(&b, " watcher=%d", (int)c->watcher);
                if (r == 0 && c->gi != SIM_GI_NONE)
                        r = buf_printf(&b, " gi=%u", c->gi);
                if (r == 0 && c->mps)
                        r = buf_printf(&b, " mps=1");
                if (r == 0)
                        r = buf_putc(&b, '\n');
        }
        if (r == 0)
                r = sim_write(dir, "contexts", buf_str(&b), b.len);
        buf_free(&b);
        return r;
}

/* Is byte `id` of fd locked by another owner (another open description for OFD locks, any
 * process's POSIX lock)? Returns 1 locked, 0 free, negative errno; *ret_pid gets l_pid: -1
 * for an OFD lock, for a POSIX lock its owner's PID in the caller's namespace (0: not
 * visible there). */
static int lock_probe(int fd, unsigned id, pid_t *ret_pid)
{
        struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = (off_t)id, .l_len = 1 };
        if (fd < 0)
                return -EBADF;
        if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
                return -errno;
        if (ret_pid)
                *ret_pid = fl.l_pid;
        return fl.l_type != F_UNLCK;
}

static uint64_t ctx_free_delay_ms(const struct sim_knobs *k, const struct sim_ctx *c)
{
        /* ms per GiB, counted in MiB so that nothing overflows */
        return k->free_delay_ms_per_gib * (c->bytes >> 20) / 1024u;
}

static bool ctx_alive(const struct sim_client *cl, const struct sim_ctx *c)
{
        /* a probe that fails says nothing: keep the context rather than free it by mistake */
        return lock_probe(cl->ctl_fd, c->id, NULL) != 0;
}

/* Record first sightings of released contexts and forget freed ones. Returns true if the
 * list changed. Read-only callers cannot time a delay: they free at once. */
static bool ctx_update(const struct sim_client *cl, const struct sim_knobs *k, struct ctx_list *l,
                       uint64_t now, bool readonly)
{
        bool changed = false;
        size_t w = 0;
        for (size_t i = 0; i < l->n; i++) {
                struct sim_ctx *c = &l->ctx[i];
                bool keep = true;
                if (!ctx_alive(cl, c)) {
                        uint64_t delay = ctx_free_delay_ms(k, c);
                        if (c->released_ms == 0 && delay > 0 && !readonly) {
                                c->released_ms = now ? now : 1;
                                changed = true;
                        } else if (c->released_ms == 0 || now < c->released_ms || now - c->released_ms >= delay) {
                                keep = false; /* (a clock that went back counts as elapsed) */
                                changed = true;
                        }
                }
                if (keep)
                        l->ctx[w++] = *c;
        }
        l->n = w;
        return changed;
}

static void ctx_view(const struct sim_client *cl, const struct sim_knobs *k, const struct ctx_list *l,
                     uint64_t now, struct sim_observation *o)
{
        memset(o->charged_bytes, 0, sizeof(o->charged_bytes));
        memset(o->mig_charged, 0, sizeof(o->mig_charged));
        o->n = 0;
        for (size_t i = 0; i < l->n; i++) {
                const struct sim_ctx *c = &l->ctx[i];
                struct sim_ctx_view *v = &o->ctx[o->n];
                memset(v, 0, sizeof(*v));
                v->ctx = *c;
                if (ctx_alive(cl, c)) {
                        pid_t pid = 0;
                        v->state = SIM_CTX_ALIVE;
                        /* F_OFD_GETLK, not F_GETLK: an OFD probe also sees the caller's own
                         * POSIX locks (an owner asking about itself), and the kernel still
                         * translates the POSIX lock's PID into the caller's namespace */
                        v->owner_alive = lock_probe(cl->owners_fd, c->id, &pid) > 0;
                        v->owner_pid_here = v->owner_alive && pid > 0 ? pid : 0;
                        v->charged_bytes = c->bytes;
                } else {
                        uint64_t delay = ctx_free_delay_ms(k, c);
                        if (c->released_ms == 0 || now < c->released_ms || now - c->released_ms >= delay)
                                continue;
                        v->state = SIM_CTX_RELEASING;
                        v->free_in_ms = delay - (now - c->released_ms);
                        /* the teardown frees page by page: what is left falls linearly from the
                         * context's size at the release to 0 after the delay (128-bit: bytes up
                         * to 2^44 times a delay up to ~2^36 ms) */
                        v->charged_bytes = (uint64_t)((unsigned __int128)c->bytes * v->free_in_ms / delay);
                }
                if (c->gpu < SIM_MAX_GPUS)
                        o->charged_bytes[c->gpu] += v->charged_bytes;
                if (c->gpu < SIM_MAX_GPUS && c->gi >= 1 && c->gi <= SIM_MAX_MIG)
                        o->mig_charged[c->gpu][c->gi - 1] += v->charged_bytes;
                o->n++;
        }
}

/* Load, update (storing changes under the lock unless have_lock says we hold it already),
 * and view. */
static int ctx_observe(struct sim_client *cl, const struct sim_knobs *k, struct ctx_list *l,
                       struct sim_observation *o, bool have_lock)
{
        uint64_t now = sim_now_ms();
        int r = ctx_load(cl->dir, l);
        if (r < 0)
                return r;
        if (have_lock) {
                if (ctx_update(cl, k, l, now, false))
                        r = ctx_store(cl->dir, l);
        } else if (ctx_update(cl, k, l, now, false)) {
                int lock = sim_lock(cl->dir);
                if (lock >= 0) {
                        r = ctx_load(cl->dir, l);
                        if (r == 0 && ctx_update(cl, k, l, now, false))
                                r = ctx_store(cl->dir, l);
                        sim_unlock(lock);
                }
                if (lock < 0 || r < 0) {
                        /* read-only directory: decide without recording */
                        r = ctx_load(cl->dir, l);
                        if (r < 0)
                                return r;
                        ctx_update(cl, k, l, now, true);
                }
        }
        if (o)
                ctx_view(cl, k, l, now, o);
        return 0;
}

int sim_observe(struct sim_client *c, const struct sim_knobs *k, struct sim_observation *o)
{
        struct ctx_list *l = malloc(sizeof(*l));
        if (!l)
                return -ENOMEM;
        int r = ctx_observe(c, k, l, o, false);
        free(l);
        return r;
}

int sim_client_open(const char *dir, struct sim_client *c)
{
        char p[PATH_MAX];
        int r;
        memset(c, 0, sizeof(*c));
        c->ctl_fd = c->owners_fd = -1;
        if (strlen(dir) >= sizeof(c->dir))
                return -ENAMETOOLONG;
        memcpy(c->dir, dir, strlen(dir) + 1);
        r = sim_host_load(dir, &c->host);
        if (r < 0)
                goto fail;
        r = sim_path(p, sizeof(p), dir, "dev/nvidiactl");
        if (r < 0)
                goto fail;
        c->ctl_fd = open(p, O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (c->ctl_fd < 0)
                c->ctl_fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (c->ctl_fd < 0) {
                r = -errno;
                goto fail;
        }
        r = sim_path(p, sizeof(p), dir, "owners");
        if (r < 0)
                goto fail;
        c->owners_fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (c->owners_fd < 0) {
                r = -errno;
                goto fail;
        }
        c->pidns = sim_pidns_of("self");
        return 0;
fail:
        sim_client_close(c);
        return r;
}

void sim_client_close(struct sim_client *c)
{
        if (!c)
                return;
        if (c->ctl_fd >= 0)
                close(c->ctl_fd);
        if (c->owners_fd >= 0)
                close(c->owners_fd);
        c->ctl_fd = c->owners_fd = -1;
}

/* The PID this caller should see for a context's owner, 0 for none (not listed). */
static unsigned ctx_listed_pid(const struct sim_client *cl, const struct sim_knobs *k, enum sim_pid_mode mode,
                               const struct sim_ctx_view *v)
{
        const struct sim_ctx *c = &v->ctx;
        if (!v->owner_alive && k->hidden_owner)
                return 0;
        if (mode == SIM_PID_HOST)
                return (unsigned)c->nspid[0]; /* the outermost PID recorded */
        if (v->owner_alive)
                return (unsigned)v->owner_pid_here; /* the kernel translated it; 0: not visible */
        /* a dead owner: its PID as recorded for the caller's namespace, if any */
        if (cl->pidns && cl->pidns == c->owner_pidns)
                return (unsigned)c->nspid[c->n_nspid - 1];
        if (cl->pidns && cl->pidns == c->proc_pidns)
                return (unsigned)c->nspid[0];
        return 0;
}

void sim_proc_list_gi(const struct sim_client *c, const struct sim_knobs *k, enum sim_pid_mode mode,
                      const struct sim_observation *o, unsigned gpu, unsigned gi, struct sim_proc *out,
                      size_t max, size_t *ret_n)
{
        size_t n = 0;
        for (size_t i = 0; i < o->n; i++) {
                const struct sim_ctx_view *v = &o->ctx[i];
                if (v->ctx.gpu != gpu || v->state != SIM_CTX_ALIVE || (gi != SIM_GI_ANY && v->ctx.gi != gi))
                        continue;
                unsigned pid = ctx_listed_pid(c, k, mode, v);
                if (!pid)
                        continue;
                size_t j;
                /* one entry per PID, instance and list: a process in two instances is listed twice */
                for (j = 0; j < n && j < max; j++)
                        if (out[j].pid == pid && out[j].gi == v->ctx.gi && out[j].mps == v->ctx.mps)
                                break;
                if (j < n && j < max) {
                        out[j].bytes += v->ctx.bytes;
                        continue;
                }
                /* entries past max are counted but not stored (a PID there could repeat,
                 * which can only make the count larger than needed: harmless) */
                if (n < max) {
                        out[n].pid = pid;
                        out[n].bytes = v->ctx.bytes;
                        out[n].gi = v->ctx.gi;
                        out[n].mps = v->ctx.mps;
                }
                n++;
        }
        *ret_n = n;
}

void sim_proc_list(const struct sim_client *c, const struct sim_knobs *k, enum sim_pid_mode mode,
                   const struct sim_observation *o, unsigned gpu, struct sim_proc *out, size_t max,
                   size_t *ret_n)
{
        sim_proc_list_gi(c, k, mode, o, gpu, SIM_GI_ANY, out, max, ret_n);
}

uint64_t sim_used_bytes(const struct sim_host *h, const struct sim_knobs *k, const struct sim_observation *o,
                        unsigned gpu)
{
        if (gpu >= h->n_gpus)
                return 0;
        uint64_t room = h->gpus[gpu].total_bytes - h->gpus[gpu].reserved_bytes;
        uint64_t used = o->charged_bytes[gpu];
        /* memory no process is charged for: managed memory and kernel clients, and a dead
         * context's memory the driver kept (leaked_mib) */
        uint64_t unch = (k->gpu[gpu].uncharged_mib + k->gpu[gpu].leaked_mib) << 20;
        used = used > room ? room : used;
        return unch > room - used ? room : used + unch;
}

uint64_t sim_mig_instance_total(const struct sim_host *h, unsigned gpu, unsigned n)
{
        if (gpu >= h->n_gpus || n == 0)
                return 0;
        uint64_t room = h->gpus[gpu].total_bytes - h->gpus[gpu].reserved_bytes;
        return (room / n) >> 20 << 20;
}

uint64_t sim_mig_used_bytes(const struct sim_host *h, const struct sim_knobs *k, const struct sim_observation *o,
                            unsigned gpu, unsigned gi)
{
        if (gpu >= h->n_gpus || gi < 1 || gi > SIM_MAX_MIG)
                return 0;
        uint64_t size = sim_mig_instance_total(h, gpu, k->gpu[gpu].mig_instances);
        uint64_t used = o->mig_charged[gpu][gi - 1];
        return used < size ? used : size;
}

/* NSpid of the calling process, outermost first ([getpid()] without an NSpid line). */
static void ctx_read_nspid(struct sim_ctx *c)
{
        char *data = NULL;
        size_t len;
        c->n_nspid = 0;
        if (read_file_at(AT_FDCWD, "/proc/self/status", 1 << 16, &data, &len) == 0) {
                char *cur = data, *line;
                while ((line = sim_next_line(&cur))) {
                        if (strncmp(line, "NSpid:", 6))
                                continue;
                        for (char *p = line + 6; *p && c->n_nspid < SIM_MAX_NSPID;) {
                                uint64_t v;
                                const char *end;
                                p += strspn(p, " \t");
                                if (parse_u64_prefix(p, 10, &v, &end) < 0 || v == 0 || v > INT32_MAX)
                                        break;
                                c->nspid[c->n_nspid++] = (pid_t)v;
                                p = (char *)end;
                        }
                        break;
                }
        }
        free(data);
        if (c->n_nspid == 0 || c->nspid[c->n_nspid - 1] != getpid()) {
                c->nspid[0] = getpid();
                c->n_nspid = 1;
        }
}

/* The PID namespace of the /proc this process sees: that of /proc/1, or (when pid 1 may not
 * be inspected) of the first process whose NSpid has one entry, i.e. lives in it. Only used
 * to label a new context's NSpid[0]; never to decide liveness. 0 if unknown. */
static unsigned long long ctx_proc_pidns(void)
{
        unsigned long long ns = sim_pidns_of("1");
        DIR *d;
        struct dirent *e;
        unsigned seen = 0;
        if (ns || !(d = opendir("/proc")))
                return ns;
        while (!ns && seen++ < 4096 && (e = readdir(d))) {
                char path[64], *data = NULL, *cur, *line;
                size_t len;
                if (e->d_name[0] < '1' || e->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%.20s/status", e->d_name);
                if (read_file_at(AT_FDCWD, path, 1 << 16, &data, &len) < 0)
                        continue;
                for (cur = data; (line = sim_next_line(&cur));)
                        if (!strncmp(line, "NSpid:", 6) && !strchr(line + 7, '\t'))
                                ns = sim_pidns_of(e->d_name);
                free(data);
        }
        closedir(d);
        return ns;
}

static int lock_take(int fd, int cmd, unsigned id)
{
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)id, .l_len = 1 };
        return fcntl(fd, cmd, &fl) < 0 ? -errno : 0;
}

/* Take the writers' lock (into *ret_lock, for sim_unlock) and look at every context under it.
 * Returns 0 or a negative errno with a message in err. */
static int lock_observe(const char *dir, struct sim_client *cl, const struct sim_knobs *k, struct ctx_list *l,
                        struct sim_observation *o, int *ret_lock, char *err, size_t errlen)
{
        int r = sim_lock(dir);
        *ret_lock = r;
        if (r < 0) {
                snprintf(err, errlen, "cannot lock %s/lock: %s", dir, strerror(-r));
                return r;
        }
        r = ctx_observe(cl, k, l, o, true);
        if (r < 0)
                snprintf(err, errlen, "cannot read %s/contexts: %s", dir, strerror(-r));
        return r;
}

/* CUDA's out-of-memory message (what PyTorch prints); returns -ENOMEM. */
static int oom_message(char *err, size_t errlen, uint64_t bytes, unsigned gpu, const struct sim_gpu *g, uint64_t avail)
{
        snprintf(err, errlen,
                 "CUDA error: out of memory (tried to allocate %llu MiB; GPU %u has a total capacity of %llu MiB of "
                 "which %llu MiB is free)",
                 (unsigned long long)(bytes >> 20), gpu, (unsigned long long)(g->total_bytes >> 20),
                 (unsigned long long)(avail >> 20));
        return -ENOMEM;
}

/* May a context in gpu (MIG GPU instance gi, or SIM_GI_NONE) take bytes more? Under MIG, CUDA
 * sees instances, not the GPU: a context lives in one instance and only that instance's memory
 * is its to take. Returns 0, -ENODEV or -ENOMEM with CUDA's message in err. */
static int room_check(const struct sim_client *cl, const struct sim_knobs *k, const struct sim_observation *o,
                      unsigned gpu, unsigned gi, uint64_t bytes, char *err, size_t errlen)
{
        const struct sim_gpu *g = &cl->host.gpus[gpu];
        uint64_t avail = g->total_bytes - g->reserved_bytes - sim_used_bytes(&cl->host, k, o, gpu);
        if (k->gpu[gpu].mig_instances && gi == SIM_GI_NONE) {
                snprintf(err, errlen, "CUDA error: no CUDA-capable device is detected (GPU %u is in MIG mode: run "
                                      "in one of its %u GPU instances, --mig-instance 1..%u)",
                         gpu, k->gpu[gpu].mig_instances, k->gpu[gpu].mig_instances);
                return -ENODEV;
        }
        if (gi != SIM_GI_NONE && (gi < 1 || gi > k->gpu[gpu].mig_instances)) {
                snprintf(err, errlen, "CUDA error: invalid device ordinal (GPU %u has no MIG GPU instance %u)", gpu, gi);
                return -ENODEV;
        }
        if (gi != SIM_GI_NONE) {
                uint64_t size = sim_mig_instance_total(&cl->host, gpu, k->gpu[gpu].mig_instances);
                uint64_t in = size - sim_mig_used_bytes(&cl->host, k, o, gpu, gi);
                /* the parent's uncharged memory may leave less than the instance's share */
                in = in < avail ? in : avail;
                if (bytes > in) {
                        snprintf(err, errlen,
                                 "CUDA error: out of memory (tried to allocate %llu MiB; GPU %u MIG instance %u has a "
                                 "total capacity of %llu MiB of which %llu MiB is free)",
                                 (unsigned long long)(bytes >> 20), gpu, gi, (unsigned long long)(size >> 20),
                                 (unsigned long long)(in >> 20));
                        return -ENOMEM;
                }
        }
        return bytes > avail ? oom_message(err, errlen, bytes, gpu, g, avail) : 0;
}

int sim_context_create(const char *dir, unsigned gpu, uint64_t bytes, int ctl_fd, int owners_fd,
                       unsigned *ret_id, char *err, size_t errlen)
{
        return sim_context_create_gi(dir, gpu, SIM_GI_NONE, bytes, ctl_fd, owners_fd, ret_id, err, errlen);
}

/* The flush_on_new_context knob (docs/simulator.md, an ASSUMPTION): the driver processes the
 * deferred teardown of a dead context when the next client makes one on the GPU, so what it
 * kept (leaked_mib) is freed. Done as `sim set leaked_mib=G:0` would, after the context's own
 * lock is dropped (sim_knobs_set takes it). Best effort: the new context stands either way. */
static void flush_leak(const char *dir, unsigned gpu)
{
        char a[64], err[SIM_ERR_LEN];
        snprintf(a, sizeof(a), "leaked_mib=%u:0", gpu);
        char *as[] = { a };
        (void)sim_knobs_set(dir, as, 1, err, sizeof(err));
}

int sim_context_create_gi(const char *dir, unsigned gpu, unsigned gi, uint64_t bytes, int ctl_fd,
                          int owners_fd, unsigned *ret_id, char *err, size_t errlen)
{
        return sim_context_create_ex(dir, gpu, gi, false, bytes, ctl_fd, owners_fd, ret_id, err, errlen);
}

int sim_context_create_ex(const char *dir, unsigned gpu, unsigned gi, bool mps, uint64_t bytes, int ctl_fd,
                          int owners_fd, unsigned *ret_id, char *err, size_t errlen)
{
        struct sim_client *cl = malloc(sizeof(*cl));
        struct sim_knobs *k = malloc(sizeof(*k));
        struct ctx_list *l = malloc(sizeof(*l));
        struct sim_observation *o = malloc(sizeof(*o));
        struct sim_ctx *c;
        int lock = -1, r;

        if (!cl || !k || !l || !o) {
                r = -ENOMEM;
                snprintf(err, errlen, "out of host memory");
                goto out_free;
        }
        r = sim_client_open(dir, cl);
        if (r < 0) {
                snprintf(err, errlen, "%s is not a simulated host (%s)", dir, strerror(-r));
                goto out_free;
        }
        r = sim_knobs_load(dir, k);
        if (r < 0) {
                snprintf(err, errlen, "cannot read %s/knobs: %s", dir, strerror(-r));
                goto out;
        }
        if (gpu >= cl->host.n_gpus || k->gpu[gpu].lost) {
                r = -ENODEV;
                snprintf(err, errlen, gpu >= cl->host.n_gpus ? "CUDA error: invalid device ordinal (GPU %u)"
                                                              : "CUDA error: GPU %u has fallen off the bus", gpu);
                goto out;
        }
        r = lock_observe(dir, cl, k, l, o, &lock, err, errlen);
        if (r < 0)
                goto out;
        r = room_check(cl, k, o, gpu, gi, bytes, err, errlen);
        if (r < 0)
                goto out;
        if (l->n >= SIM_MAX_CONTEXTS || l->next >= INT32_MAX) {
                r = -ENOSPC;
                snprintf(err, errlen, "too many contexts on this simulated host");
                goto out;
        }
        c = &l->ctx[l->n];
        memset(c, 0, sizeof(*c));
        c->id = l->next;
        c->gpu = gpu;
        c->gi = gi;
        c->mps = mps;
        c->bytes = bytes;
        c->created_ms = sim_now_ms();
        c->owner_pidns = sim_pidns_of("self");
        ctx_read_nspid(c);
        c->proc_pidns = c->n_nspid == 1 ? c->owner_pidns : ctx_proc_pidns();
        /* Closing any descriptor of a file drops every POSIX lock the process holds on it:
         * the client's own descriptor of owners must be gone before the owner lock exists. */
        sim_client_close(cl);
        /* the locks first: once the line is visible the context must already be alive */
        r = lock_take(ctl_fd, F_OFD_SETLK, c->id);
        if (r == 0)
                r = lock_take(owners_fd, F_SETLK, c->id);
        if (r < 0) {
                snprintf(err, errlen, "cannot lock context %u: %s", c->id, strerror(-r));
                goto out;
        }
        l->n++;
        l->next = c->id + 1;
        r = ctx_store(dir, l);
        if (r < 0) {
                snprintf(err, errlen, "cannot write %s/contexts: %s", dir, strerror(-r));
                goto out;
        }
        *ret_id = c->id;
out:
        sim_unlock(lock);
        sim_client_close(cl);
        if (r == 0 && k->gpu[gpu].flush_on_new_context && k->gpu[gpu].leaked_mib)
                flush_leak(dir, gpu);
out_free:
        free(o);
        free(l);
        free(k);
        free(cl);
        return r;
}

int sim_context_get(const char *dir, unsigned id, struct sim_ctx *ret)
{
        struct ctx_list *l = malloc(sizeof(*l));
        if (!l)
                return -ENOMEM;
        int r = ctx_load(dir, l);
        if (r == 0) {
                r = -ENOENT;
                for (size_t i = 0; i < l->n; i++)
                        if (l->ctx[i].id == id) {
                                *ret = l->ctx[i];
                                r = 0;
                                break;
                        }
        }
        free(l);
        return r;
}

int sim_context_mark(const char *dir, unsigned id, pid_t watcher, uint64_t released_ms)
{
        struct ctx_list *l = malloc(sizeof(*l));
        int lock = -1, r;
        if (!l)
                return -ENOMEM;
        lock = sim_lock(dir);
        if (lock < 0) {
                r = lock;
                goto out;
        }
        r = ctx_load(dir, l);
        if (r < 0)
                goto out;
        r = -ENOENT;
        for (size_t i = 0; i < l->n; i++) {
                struct sim_ctx *c = &l->ctx[i];
                if (c->id != id)
                        continue;
                if (watcher > 0)
                        c->watcher = watcher;
                /* a reader may have seen the release between the kernel's wake-up and now:
                 * the earlier time is the closer one */
                if (released_ms && (c->released_ms == 0 || released_ms < c->released_ms))
                        c->released_ms = released_ms;
                r = ctx_store(dir, l);
                break;
        }
out:
        sim_unlock(lock);
        free(l);
        return r;
}

int sim_context_charge(const char *dir, unsigned id, int64_t delta, int owners_fd, char *err, size_t errlen)
{
        struct sim_client *cl = malloc(sizeof(*cl));
        struct sim_knobs *k = malloc(sizeof(*k));
        struct ctx_list *l = malloc(sizeof(*l));
        struct sim_observation *o = malloc(sizeof(*o));
        int lock = -1, r;
        char p[PATH_MAX];

        if (!cl || !k || !l || !o) {
                r = -ENOMEM;
                snprintf(err, errlen, "out of host memory");
                goto out;
        }
        /* a client by hand: its own description of nvidiactl (closing it drops no lock of
         * ours: the context's is an OFD lock on another description), and the owner's own
         * descriptor of owners — opening and closing another one would drop the owner's
         * POSIX lock */
        memset(cl, 0, sizeof(*cl));
        cl->ctl_fd = -1;
        cl->owners_fd = -1;
        if (strlen(dir) >= sizeof(cl->dir)) {
                r = -ENAMETOOLONG;
                snprintf(err, errlen, "directory name too long");
                goto out;
        }
        memcpy(cl->dir, dir, strlen(dir) + 1);
        r = sim_host_load(dir, &cl->host);
        if (r == 0)
                r = sim_knobs_load(dir, k);
        if (r == 0)
                r = sim_path(p, sizeof(p), dir, "dev/nvidiactl");
        if (r == 0 && (cl->ctl_fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0)
                r = -errno;
        if (r < 0) {
                snprintf(err, errlen, "%s is not a simulated host (%s)", dir, strerror(-r));
                goto out;
        }
        cl->owners_fd = owners_fd;
        r = lock_observe(dir, cl, k, l, o, &lock, err, errlen);
        if (r < 0)
                goto out;
        struct sim_ctx *c = NULL;
        for (size_t i = 0; i < l->n; i++)
                if (l->ctx[i].id == id)
                        c = &l->ctx[i];
        if (!c) {
                r = -ENOENT;
                snprintf(err, errlen, "context %u is gone", id);
                goto out;
        }
        if (delta > 0) {
                if (k->gpu[c->gpu].lost) {
                        r = -ENODEV;
                        snprintf(err, errlen, "CUDA error: GPU %u has fallen off the bus", c->gpu);
                        goto out;
                }
                r = c->bytes + (uint64_t)delta > ((uint64_t)1 << 44)
                            ? oom_message(err, errlen, (uint64_t)delta, c->gpu, &cl->host.gpus[c->gpu], 0)
                            : room_check(cl, k, o, c->gpu, c->gi, (uint64_t)delta, err, errlen);
                if (r < 0)
                        goto out;
                c->bytes += (uint64_t)delta;
        } else {
                uint64_t d = (uint64_t)(-(delta + 1)) + 1;
                c->bytes = d > c->bytes ? 0 : c->bytes - d;
        }
        r = ctx_store(dir, l);
        if (r < 0)
                snprintf(err, errlen, "cannot write %s/contexts: %s", dir, strerror(-r));
out:
        sim_unlock(lock);
        if (cl) {
                cl->owners_fd = -1; /* the caller's */
                sim_client_close(cl);
        }
        free(o);
        free(l);
        free(k);
        free(cl);
        return r;
}
