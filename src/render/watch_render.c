/* watch_render: `ghostvram watch`'s lines, as text or JSON (docs/json.md). */
#include "render/watch_render.h"

#include <jansson.h>

#include "collect/xid.h"
#include "util/json_util.h"
#include "util/timefmt.h"

#define MIB (1024ull * 1024ull)

/* The GPU's part of a JSON line: index, uuid, pci_bus_id, the verdict, the ghost and the PIDs
 * of the first finding (an array of numbers). */
static void watch_gpu_json(json_t *o, const struct gpu_info *g, const struct gpu_ledger *l)
{
        const struct finding *fd = l->n_findings ? &l->findings[0] : NULL;
        json_t *pids = json_array();
        for (size_t i = 0; fd && i < fd->n_pids; i++)
                json_array_append_new(pids, json_integer(fd->pids[i]));
        json_set(o, "index", json_integer(g->index));
        json_set(o, "uuid", g->uuid[0] ? json_text(g->uuid) : json_null());
        json_set(o, "pci_bus_id", g->pci_bus_id[0] ? json_text(g->pci_bus_id) : json_null());
        json_set(o, "verdict", json_string(fd ? fd->code : "unknown"));
        json_set(o, "ghost_bytes", json_integer((json_int_t)l->ghost));
        json_set(o, "ghost_confirmed", json_boolean(l->ghost_confirmed));
        json_set(o, "pids", pids);
}

void watch_line_print(FILE *out, const struct watch_line *wl, bool json, double now)
{
        if (!json) {
                char ts[40];
                if (rfc3339_format(now, false, ts, sizeof(ts)) < 0)
                        ts[0] = '\0';
                fprintf(out, "%s %s\n", ts, wl->text);
                fflush(out);
                return;
        }
        json_t *o = json_object();
        json_set(o, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_set_time(o, "time", now, 1);
        json_set(o, "event", json_string(wl->event));
        if (wl->g && wl->l)
                watch_gpu_json(o, wl->g, wl->l);
        if (wl->xid)
                json_set(o, "kernel_event", xid_event_to_json(wl->xid));
        json_set(o, "message", json_text(wl->text));
        json_dumpf(o, out, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
        json_decref(o);
        fputc('\n', out);
        fflush(out);
}

void watch_banner_print(FILE *out, uint64_t interval_ms, uint64_t threshold_bytes, uint64_t for_ms, bool exec)
{
        fprintf(out, "watching every %.3g s; alert when a confirmed ghost stays above %llu MiB for %.3g s%s\n",
                (double)interval_ms / 1000.0, (unsigned long long)(threshold_bytes / MIB), (double)for_ms / 1000.0,
                exec ? " (then run --exec)" : "");
        fflush(out);
}
