#include "collect/gpu_json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_util.h"
#include "util/fileio.h"

/* the largest nvml.json a bundle may have (a real one is a few MiB at most) */
#define GPU_JSON_CAP (32u << 20)

const char *gpu_pid_mode_name(enum gpu_pid_mode m)
{
        switch (m) {
        case GPU_PID_TRANSLATED: return "translated";
        case GPU_PID_HOST: return "host";
        default: return "unknown";
        }
}

const char *gpu_status_name(enum gpu_status s)
{
        switch (s) {
        case GPU_OK: return "ok";
        case GPU_LOST: return "lost";
        case GPU_TIMEOUT: return "timeout";
        default: return "error";
        }
}

static json_t *proc_kinds_json(unsigned kinds)
{
        json_t *a = json_array();
        if (kinds & GPU_PROC_COMPUTE)
                json_array_append_new(a, json_string("compute"));
        if (kinds & GPU_PROC_GRAPHICS)
                json_array_append_new(a, json_string("graphics"));
        if (kinds & GPU_PROC_MPS)
                json_array_append_new(a, json_string("mps"));
        return a;
}

static json_t *instance_json(uint32_t id)
{
        return id == GPU_INSTANCE_NONE ? json_null() : json_integer(id);
}

json_t *gpu_info_to_json(const struct gpu_info *g)
{
        json_t *o = json_object();
        json_set(o, "index", json_integer(g->index));
        json_set(o, "minor", json_u64_or_null(g->minor, g->minor_known));
        json_set(o, "uuid", g->uuid[0] ? json_text(g->uuid) : json_null());
        json_set(o, "pci_bus_id", g->pci_bus_id[0] ? json_text(g->pci_bus_id) : json_null());
        json_set(o, "name", g->name[0] ? json_text(g->name) : json_null());
        json_set(o, "status", json_string(gpu_status_name(g->status)));
        json_set(o, "status_message", g->status_message[0] ? json_text(g->status_message) : json_null());
        json_t *m = json_object();
        json_set(m, "total_bytes", json_u64_or_null(g->total_bytes, g->memory_known));
        json_set(m, "used_bytes", json_u64_or_null(g->used_bytes, g->memory_known));
        json_set(m, "reserved_bytes", json_u64_or_null(g->reserved_bytes, g->memory_known && g->memory_api == 2));
        json_set(m, "free_bytes", json_u64_or_null(g->free_bytes, g->memory_known));
        json_set(m, "api", g->memory_known ? json_integer(g->memory_api) : json_null());
        json_set(m, "used_includes_reserved", g->memory_known ? json_boolean(g->memory_api == 1) : json_null());
        json_set(o, "memory", m);
        json_set(o, "persistence_mode", g->persistence < 0 ? json_null() : json_boolean(g->persistence));
        json_set(o, "mig_mode", g->mig_mode < 0 ? json_null() : json_boolean(g->mig_mode));
        json_set(o, "processes_known", json_boolean(g->procs_known));
        json_set(o, "processes_api", g->procs_api[0] ? json_string(g->procs_api) : json_null());
        json_t *ps = json_array();
        for (size_t i = 0; i < g->n_procs; i++) {
                const struct gpu_proc *p = &g->procs[i];
                json_t *po = json_object();
                json_set(po, "pid", json_integer(p->pid));
                json_set(po, "used_bytes", json_u64_or_null(p->used_bytes, p->used_known));
                json_set(po, "types", proc_kinds_json(p->kinds));
                json_set(po, "gpu_instance", instance_json(p->gpu_instance));
                json_set(po, "compute_instance", instance_json(p->compute_instance));
                json_array_append_new(ps, po);
        }
        json_set(o, "nvml_processes", ps);
        /* MIG: its MIG devices with their own memory (null figures when NVML did not say) */
        json_t *ms = json_array();
        for (size_t i = 0; i < g->n_mig; i++) {
                const struct gpu_mig_device *md = &g->mig[i];
                json_t *mo = json_object();
                json_set(mo, "gpu_instance", instance_json(md->gpu_instance));
                json_set(mo, "compute_instance", instance_json(md->compute_instance));
                json_set(mo, "total_bytes", json_u64_or_null(md->total_bytes, md->memory_known));
                json_set(mo, "used_bytes", json_u64_or_null(md->used_bytes, md->memory_known));
                json_array_append_new(ms, mo);
        }
        json_set(o, "mig_devices", ms);
        json_t *es = json_array();
        for (size_t i = 0; i < g->n_errors; i++) {
                const struct gpu_query_error *e = &g->errors[i];
                json_t *eo = json_object();
                json_set(eo, "query", json_text(e->query));
                json_set(eo, "nvml_code", e->nvml_code < 0 ? json_null() : json_integer(e->nvml_code));
                json_set(eo, "message", json_text(e->message));
                json_array_append_new(es, eo);
        }
        json_set(o, "errors", es);
        return o;
}

json_t *gpu_report_driver_json(const struct gpu_report *r)
{
        json_t *d = json_object();
        json_set(d, "present", json_boolean(r->driver_present));
        json_set(d, "library_found", json_boolean(r->library_found || r->driver_present));
        json_set(d, "module_loaded", r->module_not_loaded ? json_false() : r->driver_present ? json_true() : json_null());
        json_set(d, "backend", json_string(r->backend));
        json_set(d, "library", r->library[0] ? json_text(r->library) : json_null());
        json_set(d, "version", r->driver_version[0] ? json_text(r->driver_version) : json_null());
        json_set(d, "nvml_version", r->nvml_version[0] ? json_text(r->nvml_version) : json_null());
        json_set(d, "pid_mode", json_string(gpu_pid_mode_name(r->pid_mode)));
        json_set(d, "error", r->error[0] ? json_text(r->error) : json_null());
        json_set(d, "timed_out", json_boolean(r->timed_out));
        json_set_time(d, "sample_time", r->sample_time, r->sample_time > 0);
        return d;
}

json_t *gpu_report_to_json(const struct gpu_report *r)
{
        json_t *o = json_object();
        json_set(o, "driver", gpu_report_driver_json(r));
        json_t *a = json_array();
        for (size_t i = 0; i < r->n_gpus; i++)
                json_array_append_new(a, gpu_info_to_json(&r->gpus[i]));
        json_set(o, "gpus", a);
        return o;
}

static void copy_str(char *dst, size_t n, const json_t *o, const char *key)
{
        snprintf(dst, n, "%s", json_get_str(o, key, ""));
}

static uint32_t instance_from(const json_t *o, const char *key)
{
        const json_t *v = json_object_get(o, key);
        return json_is_integer(v) ? (uint32_t)json_integer_value(v) : GPU_INSTANCE_NONE;
}

static int gpu_info_from_json(const json_t *o, struct gpu_info *g)
{
        if (!json_is_object(o))
                return -EINVAL;
        g->index = (unsigned)json_get_u64(o, "index", 0);
        const json_t *minor = json_object_get(o, "minor");
        g->minor_known = json_is_integer(minor);
        g->minor = g->minor_known ? (unsigned)json_integer_value(minor) : 0;
        copy_str(g->uuid, sizeof(g->uuid), o, "uuid");
        copy_str(g->pci_bus_id, sizeof(g->pci_bus_id), o, "pci_bus_id");
        copy_str(g->name, sizeof(g->name), o, "name");
        const char *st = json_get_str(o, "status", "ok");
        g->status = !strcmp(st, "ok") ? GPU_OK : !strcmp(st, "lost") ? GPU_LOST : !strcmp(st, "timeout") ? GPU_TIMEOUT : GPU_ERROR;
        copy_str(g->status_message, sizeof(g->status_message), o, "status_message");
        const json_t *m = json_object_get(o, "memory");
        g->memory_known = json_is_integer(json_object_get(m, "total_bytes"));
        g->memory_api = (int)json_get_i64(m, "api", 0);
        g->total_bytes = json_get_u64(m, "total_bytes", 0);
        g->used_bytes = json_get_u64(m, "used_bytes", 0);
        g->reserved_bytes = json_get_u64(m, "reserved_bytes", 0);
        g->free_bytes = json_get_u64(m, "free_bytes", 0);
        const json_t *pm = json_object_get(o, "persistence_mode");
        g->persistence = json_is_boolean(pm) ? json_is_true(pm) : -1;
        const json_t *mig = json_object_get(o, "mig_mode");
        g->mig_mode = json_is_boolean(mig) ? json_is_true(mig) : -1;
        g->procs_known = json_get_bool(o, "processes_known", 0);
        copy_str(g->procs_api, sizeof(g->procs_api), o, "processes_api");
        const json_t *ps = json_object_get(o, "nvml_processes");
        size_t n = json_is_array(ps) ? json_array_size(ps) : 0;
        if (n) {
                g->procs = calloc(n, sizeof(*g->procs));
                if (!g->procs)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                const json_t *po = json_array_get(ps, i);
                struct gpu_proc *p = &g->procs[g->n_procs];
                p->pid = (uint32_t)json_get_u64(po, "pid", 0);
                if (!p->pid)
                        continue;
                const json_t *u = json_object_get(po, "used_bytes");
                p->used_known = json_is_integer(u);
                p->used_bytes = p->used_known ? (uint64_t)json_integer_value(u) : 0;
                p->gpu_instance = instance_from(po, "gpu_instance");
                p->compute_instance = instance_from(po, "compute_instance");
                const json_t *ty = json_object_get(po, "types");
                size_t k;
                const json_t *t;
                json_array_foreach(ty, k, t) {
                        const char *s = json_string_value(t);
                        if (!s)
                                continue;
                        p->kinds |= !strcmp(s, "compute") ? GPU_PROC_COMPUTE : !strcmp(s, "graphics") ? GPU_PROC_GRAPHICS
                                  : !strcmp(s, "mps") ? GPU_PROC_MPS : 0;
                }
                g->n_procs++;
        }
        const json_t *ms = json_object_get(o, "mig_devices");
        size_t mi;
        const json_t *mo;
        json_array_foreach(ms, mi, mo) {
                if (g->n_mig >= GPU_MAX_MIG)
                        break;
                struct gpu_mig_device *md = &g->mig[g->n_mig++];
                md->gpu_instance = instance_from(mo, "gpu_instance");
                md->compute_instance = instance_from(mo, "compute_instance");
                md->memory_known = json_is_integer(json_object_get(mo, "used_bytes"));
                md->total_bytes = json_get_u64(mo, "total_bytes", 0);
                md->used_bytes = json_get_u64(mo, "used_bytes", 0);
        }
        const json_t *es = json_object_get(o, "errors");
        size_t k;
        const json_t *e;
        json_array_foreach(es, k, e) {
                const json_t *code = json_object_get(e, "nvml_code");
                gpu_info_add_error(g, json_get_str(e, "query", "?"), json_is_integer(code) ? (int)json_integer_value(code) : -1,
                                   json_get_str(e, "message", ""));
        }
        return 0;
}

int gpu_report_from_json(const json_t *doc, struct gpu_report **ret)
{
        const json_t *d = json_object_get(doc, "driver");
        const json_t *gs = json_object_get(doc, "gpus");
        if (!json_is_object(d) || !json_is_array(gs))
                return -EINVAL;
        struct gpu_report *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->driver_present = json_get_bool(d, "present", 0);
        r->library_found = json_get_bool(d, "library_found", r->driver_present);
        r->module_not_loaded = json_is_false(json_object_get(d, "module_loaded"));
        snprintf(r->backend, sizeof(r->backend), "bundle");
        copy_str(r->library, sizeof(r->library), d, "library");
        copy_str(r->driver_version, sizeof(r->driver_version), d, "version");
        copy_str(r->nvml_version, sizeof(r->nvml_version), d, "nvml_version");
        copy_str(r->error, sizeof(r->error), d, "error");
        r->timed_out = json_get_bool(d, "timed_out", 0);
        const char *pm = json_get_str(d, "pid_mode", "unknown");
        r->pid_mode = !strcmp(pm, "translated") ? GPU_PID_TRANSLATED : !strcmp(pm, "host") ? GPU_PID_HOST : GPU_PID_UNKNOWN;
        /* schema 2 writes sample_time as text and sample_time_epoch; bundles of schema 1 have the number */
        r->sample_time = json_get_real(d, "sample_time_epoch", json_get_real(d, "sample_time", 0));
        size_t n = json_array_size(gs);
        if (n > 1024)
                n = 1024;
        r->gpus = calloc(n ? n : 1, sizeof(*r->gpus));
        if (!r->gpus) {
                free(r);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                int e = gpu_info_from_json(json_array_get(gs, i), &r->gpus[r->n_gpus]);
                r->n_gpus++;
                if (e < 0) {
                        gpu_report_free(r);
                        return e;
                }
        }
        *ret = r;
        return 0;
}

int gpu_report_save_bundle(const struct gpu_report *r, const char *dir)
{
        int e = mkdir_p(dir);
        if (e < 0)
                return e;
        json_t *doc = gpu_report_to_json(r);
        char *s = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(doc);
        if (!s)
                return -ENOMEM;
        char path[4096];
        snprintf(path, sizeof(path), "%s/nvml.json", dir);
        e = write_file_atomic(path, s, strlen(s));
        free(s);
        return e;
}

/* Read and parse DIR/nvml.json. 0 and *ret, or a negative errno and why in err ("nvml.json: ..."). */
static int load_bundle_report(const char *dir, struct gpu_report **ret, char *err, size_t errlen)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/nvml.json", dir);
        /* a regular file of at most GPU_JSON_CAP: never a FIFO or a device, never read whole
         * however large */
        char *data = NULL;
        size_t len = 0;
        int fr = read_file_at(AT_FDCWD, path, GPU_JSON_CAP, &data, &len);
        if (fr == -EFBIG) {
                snprintf(err, errlen, "nvml.json: too large (more than %u MiB)", GPU_JSON_CAP >> 20);
                return fr;
        }
        if (fr < 0) {
                snprintf(err, errlen, "nvml.json: %s", fileio_strerror(fr));
                return fr;
        }
        json_error_t je;
        json_t *doc = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
        free(data);
        if (!doc) {
                snprintf(err, errlen, "nvml.json: not JSON (line %d, column %d: %.100s)", je.line, je.column, je.text);
                return -EBADMSG;
        }
        int r = gpu_report_from_json(doc, ret);
        json_decref(doc);
        if (r == -ENOMEM)
                snprintf(err, errlen, "nvml.json: %s", strerror(ENOMEM));
        else if (r < 0)
                snprintf(err, errlen, "nvml.json: not the driver's answers of a ghostvram bundle (a field is "
                                      "missing or has a wrong type)");
        return r < 0 ? (r == -ENOMEM ? r : -EBADMSG) : 0;
}

int gpu_bundle_check(const char *dir, char *err, size_t errlen)
{
        struct gpu_report *r;
        int e = load_bundle_report(dir, &r, err, errlen);
        if (e == 0)
                gpu_report_free(r);
        return e;
}

static int bundle_collect(const struct gpu_opts *o, struct gpu_report **ret)
{
        char why[256];
        struct gpu_report *r;
        int e = load_bundle_report(o->bundle_dir, &r, why, sizeof(why));
        if (e == -ENOMEM)
                return e;
        if (e < 0) {
                r = calloc(1, sizeof(*r));
                if (!r)
                        return -ENOMEM;
                snprintf(r->backend, sizeof(r->backend), "bundle");
                snprintf(r->error, sizeof(r->error), "%.180s/%.60s", o->bundle_dir, why);
        }
        *ret = r;
        return 0;
}

const struct gpu_backend gpu_backend_bundle = {
        .name = "bundle",
        .collect = bundle_collect,
};
