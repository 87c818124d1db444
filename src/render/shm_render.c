/* shm_render: host shared memory in scan's JSON and text (render/shm_render.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/json_util.h"
#include "render/shm_render.h"
#include "util/strf.h"
#include "util/i18n.h"


/* Bytes as an integer; a SysV size can be anything shmget was asked for (up to SHMMAX), and a
 * number beyond 2^53 would be rounded by JSON readers: null then. */
static json_t *bytes_json(uint64_t v, bool known)
{
        return json_u64_or_null(v, known && v <= (1ull << 53));
}

static json_t *dir_json(const struct shm_dir *d)
{
        json_t *o = json_object(), *top = json_array(), *own = json_array();
        if (!o || !top || !own) {
                json_decref(o);
                json_decref(top);
                json_decref(own);
                return NULL;
        }
        json_set(o, "path", json_text(d->path));
        json_set(o, "filesystem", json_string(d->tmpfs ? "tmpfs" : "directory"));
        json_set(o, "used_bytes", bytes_json(d->used, true));
        json_set(o, "size_bytes", bytes_json(d->size, d->tmpfs));
        json_set(o, "file_count", json_integer(d->files));
        json_set(o, "files_bytes", bytes_json(d->files_bytes, true));
        json_set(o, "skipped_dir_count", json_integer(d->skipped_dirs));
        json_set(o, "complete", json_boolean(d->complete));
        for (unsigned i = 0; i < d->n_top; i++)
                json_array_append_new(top, json_pack("{s:o, s:o, s:I, s:o}", "name", json_text(d->top[i].name),
                                                     "size_bytes", bytes_json(d->top[i].bytes, true), "uid",
                                                     (json_int_t)d->top[i].uid, "user", json_text(d->top[i].user)));
        for (unsigned i = 0; i < d->n_owners; i++)
                json_array_append_new(own, json_pack("{s:I, s:o, s:I, s:o}", "uid", (json_int_t)d->owners[i].uid, "user",
                                                     json_text(d->owners[i].user), "file_count",
                                                     (json_int_t)d->owners[i].files, "size_bytes",
                                                     bytes_json(d->owners[i].bytes, true)));
        json_set(o, "largest", top);
        json_set(o, "owners", own);
        json_set(o, "other_owner_file_count", json_integer(d->other_owner_files));
        return o;
}

static json_t *seg_json(const struct shm_seg *s)
{
        json_t *o = json_object();
        if (!o)
                return NULL;
        json_set(o, "key", json_integer((json_int_t)s->key));
        json_set(o, "shmid", s->shmid >= 0 ? json_integer((json_int_t)s->shmid) : json_null());
        json_set(o, "size_bytes", bytes_json(s->size, true));
        json_set(o, "rss_bytes", bytes_json(s->rss, s->rss_known));
        json_set(o, "swap_bytes", bytes_json(s->swap, s->rss_known));
        json_set(o, "creator_pid", s->cpid ? json_integer(s->cpid) : json_null());
        json_set(o, "last_pid", s->lpid ? json_integer(s->lpid) : json_null());
        json_set(o, "attach_count", json_integer((json_int_t)(s->nattch > (1ull << 53) ? 0 : s->nattch)));
        json_set(o, "uid", s->uid_known ? json_integer((json_int_t)s->uid) : json_null());
        json_set(o, "user", s->uid_known ? json_text(s->user) : json_null());
        json_set(o, "removed", json_boolean((s->perms & SHM_PERM_DEST) != 0));
        return o;
}

static json_t *sysv_json(const struct shm_sysv *s)
{
        json_t *o = json_object(), *segs = json_array(), *pids = json_array();
        if (!o || !segs || !pids) {
                json_decref(o);
                json_decref(segs);
                json_decref(pids);
                return NULL;
        }
        json_set(o, "segment_count", json_integer((json_int_t)s->n_total));
        json_set(o, "occupied_bytes", bytes_json(s->bytes, true));
        json_set(o, "skipped_line_count", json_integer((json_int_t)s->skipped_lines));
        for (size_t i = 0; i < s->n; i++) {
                json_array_append_new(segs, seg_json(&s->segs[i]));
                bool dup = s->segs[i].cpid == 0;
                for (size_t j = 0; j < i && !dup; j++)
                        dup = s->segs[j].cpid == s->segs[i].cpid;
                if (!dup)
                        json_array_append_new(pids, json_integer(s->segs[i].cpid));
        }
        json_set(o, "segments", segs);
        json_set(o, "creator_pids", pids);
        return o;
}

json_t *shm_json(const struct shm_report *r)
{
        json_t *o = json_object();
        char *sum STR_AUTOFREE = NULL;
        if (!o || shm_describe(r, &sum) < 0 || str_addf(&sum, "%s", shm_not_gpu_text()) < 0) {
                json_decref(o);
                return NULL;
        }
        json_set(o, "large", json_boolean(r->large));
        json_set(o, "total_bytes", bytes_json(r->total, true));
        json_set(o, "total_source", json_string(r->total_from_meminfo ? "meminfo" : "parts"));
        json_set(o, "threshold_bytes", bytes_json(r->threshold, true));
        json_set(o, "mem_total_bytes", bytes_json(r->mem_total, r->meminfo_read && r->mem_total_known));
        json_set(o, "shmem_bytes", bytes_json(r->shmem, r->meminfo_read && r->shmem_known));
        json_set(o, "gpu_memory", json_false());
        json_set(o, "summary", json_text(sum));
        json_set(o, "dev_shm", r->dir_read ? dir_json(&r->dir) : json_null());
        json_set(o, "sysv", r->sysv_read ? sysv_json(&r->sysv) : json_null());
        return o;
}

const char *shm_not_gpu_text(void)
{
        return _(" — this is host RAM, not GPU memory; nvidia-smi's used figure does not include it (free -h counts it "
                 "under shared and buff/cache)");
}

int shm_note_text(FILE *out, const struct shm_report *r, bool color)
{
        if (!r || !r->large)
                return 0;
        char *s STR_AUTOFREE = NULL;
        if (shm_describe(r, &s) < 0)
                return -ENOMEM;
        fprintf(out, "\n%s%s%s%s\n", color ? "\033[1m" : "", s, color ? "\033[0m" : "", shm_not_gpu_text());
        return 0;
}
