/* xid_json: events and catalogue entries as JSON (fields in docs/xid.md, vocabulary in docs/json.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "collect/xid.h"
#include "util/json_util.h"
#include "util/escape.h"
#include "util/timefmt.h"

int xid_format_rfc3339(double epoch, char *out, size_t outlen)
{
        return rfc3339_format(epoch, true, out, outlen);
}

/* A JSON string from hostile bytes: repaired to UTF-8 (jansson needs it). */
static json_t *jstr(const char *s)
{
        if (!s)
                return json_null();
        struct buf b = BUF_INIT(0);
        json_t *j = NULL;
        if (esc_utf8_repair(&b, s, strlen(s)) == 0)
                j = json_stringn(buf_str(&b), b.len);
        buf_free(&b);
        return j;
}

static json_t *jint_or_null(bool known, long long v)
{
        return known ? json_integer(v) : json_null();
}

json_t *xid_event_to_json(const struct xid_event *e)
{
        struct xid_assessment a;
        xid_event_assess(e, &a);
        json_t *o = json_object();
        if (!o)
                return NULL;
        int bad = json_set_time(o, "time", e->time, e->time_known);
        bad |= json_object_set_new(o, "monotonic", e->monotonic_known ? json_real(e->monotonic) : json_null());
        bad |= json_object_set_new(o, "seq", jint_or_null(e->seq_known && e->seq <= (uint64_t)INT64_MAX,
                                                          (long long)e->seq));
        bad |= json_object_set_new(o, "source", jstr(e->source ? e->source : "unknown"));
        bad |= json_object_set_new(o, "kind", json_string(xid_kind_name(e->kind)));
        bad |= json_object_set_new(o, "xid", jint_or_null(e->xid != XID_NONE, e->xid));
        bad |= json_object_set_new(o, "name", jstr(a.title));
        if (e->kind == XID_KIND_XID)
                bad |= json_object_set_new(o, "caused_by_xid", jint_or_null(e->caused_by != XID_NONE, e->caused_by));
        if (e->kind == XID_KIND_SXID)
                bad |= json_object_set_new(o, "sxid", json_integer(e->sxid));
        bad |= json_object_set_new(o, "pci_bus_id", e->pci_bus_id[0] ? json_string(e->pci_bus_id) : json_null());
        bad |= json_object_set_new(o, "gpu_index", jint_or_null(e->gpu_index >= 0, e->gpu_index));
        bad |= json_object_set_new(o, "gpu_instance", jint_or_null(e->gpu_instance >= 0, e->gpu_instance));
        bad |= json_object_set_new(o, "compute_instance", jint_or_null(e->compute_instance >= 0, e->compute_instance));
        bad |= json_object_set_new(o, "pid", jint_or_null(e->pid_known, e->pid));
        bad |= json_object_set_new(o, "process_name", e->process_name[0] ? jstr(e->process_name) : json_null());
        if (e->kind == XID_KIND_DRIVER_LOAD)
                bad |= json_object_set_new(o, "driver_version",
                                           e->driver_version[0] ? jstr(e->driver_version) : json_null());
        bad |= json_object_set_new(o, "message", jstr(e->message ? e->message : ""));
        bad |= json_object_set_new(o, "severity", json_string(xid_severity_name(a.severity)));
        bad |= json_object_set_new(o, "action", json_string(xid_action_name(a.action)));
        bad |= json_object_set_new(o, "advice", jstr(a.advice));
        bad |= json_object_set_new(o, "note", jstr(a.note));
        bad |= json_object_set_new(o, "raw", jstr(e->raw ? e->raw : ""));
        if (bad) {
                json_decref(o);
                return NULL;
        }
        return o;
}

json_t *xid_explanation_to_json(const struct xid_explanation *x)
{
        json_t *o = json_object();
        if (!o)
                return NULL;
        const struct xid_info *i = x->info;
        struct buf causes = BUF_INIT(0);
        int bad = 0;
        bad |= json_object_set_new(o, "xid", json_integer(x->code));
        bad |= json_object_set_new(o, "known", json_boolean(i != NULL));
        bad |= json_object_set_new(o, "name", jstr(x->name));
        bad |= json_object_set_new(o, "mnemonic", i ? json_string(i->mnemonic) : json_null());
        bad |= json_object_set_new(o, "description", i ? jstr(i->description) : json_null());
        bad |= json_object_set_new(o, "meaning", jstr(x->meaning ? x->meaning : i ? i->description : NULL));
        if (!x->cause && i)
                bad |= xid_causes_text(i->causes, &causes) < 0;
        bad |= json_object_set_new(o, "cause", jstr(x->cause ? x->cause : buf_str(&causes)));
        bad |= json_object_set_new(o, "todo", jstr(x->todo));
        bad |= json_object_set_new(o, "note", jstr(x->note));
        bad |= json_object_set_new(o, "severity", json_string(xid_severity_name(x->severity)));
        bad |= json_object_set_new(o, "action", json_string(xid_action_name(x->action)));
        bad |= json_object_set_new(o, "reset", jstr(xid_reset_text(x->reset)));
        if (i) {
                json_t *c = json_object();
                bad |= !c;
                if (c) {
                        bad |= json_object_set_new(c, "applies_to", jstr(i->applies_to));
                        bad |= json_object_set_new(c, "immediate_action", jstr(i->immediate));
                        bad |= json_object_set_new(c, "investigatory_action", jstr(i->investigatory));
                        bad |= json_object_set_new(c, "xid154_linkage", jstr(i->xid154));
                        bad |= json_object_set_new(c, "pre_ampere_name", jstr(i->old_name));
                        bad |= json_object_set_new(c, "pre_ampere_causes", jstr(i->causes));
                        bad |= json_object_set_new(o, "catalog", c);
                }
        }
        buf_free(&causes);
        if (bad) {
                json_decref(o);
                return NULL;
        }
        return o;
}
