/* xid: recognising NVIDIA kernel lines. The shapes and why each rule exists are in
 * docs/xid.md; the formats come from the project's Xid reference (driver sources
 * kernel_rc.c krcReportXid_IMPL, osinit.c, osapi.c, nv.c, kernel_gsp.c, and real logs). */
#include "collect/xid.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/kernel_text.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/strf.h"

/* ---- events and lists ---------------------------------------------------------------------- */

static void event_init(struct xid_event *e)
{
        memset(e, 0, sizeof(*e));
        e->xid = XID_NONE;
        e->caused_by = XID_NONE;
        e->sxid = XID_NONE;
        e->gpu_index = -1;
        e->gpu_instance = -1;
        e->compute_instance = -1;
        e->kind = XID_KIND_OTHER;
}

void xid_event_free(struct xid_event *e)
{
        if (!e)
                return;
        free(e->message);
        free(e->raw);
        e->message = NULL;
        e->raw = NULL;
}

int xid_event_copy(struct xid_event *dst, const struct xid_event *src)
{
        struct xid_event c = *src;
        c.message = src->message ? strdup(src->message) : NULL;
        c.raw = src->raw ? strdup(src->raw) : NULL;
        if ((src->message && !c.message) || (src->raw && !c.raw)) {
                xid_event_free(&c);
                return -ENOMEM;
        }
        *dst = c;
        return 0;
}

int xid_list_push(struct xid_list *l, struct xid_event *e)
{
        size_t max = l->max ? l->max : XID_LIST_MAX;
        if (l->n >= max) {
                size_t drop = max / 4 ? max / 4 : 1;
                if (drop > l->n)
                        drop = l->n;
                for (size_t i = 0; i < drop; i++)
                        xid_event_free(&l->ev[i]);
                memmove(l->ev, l->ev + drop, (l->n - drop) * sizeof(*l->ev));
                l->n -= drop;
                l->dropped += drop;
        }
        if (l->n == l->alloc) {
                size_t na = l->alloc ? l->alloc * 2 : 16;
                struct xid_event *p = realloc(l->ev, na * sizeof(*p));
                if (!p) {
                        xid_event_free(e);
                        return -ENOMEM;
                }
                l->ev = p;
                l->alloc = na;
        }
        l->ev[l->n++] = *e;
        e->message = NULL;
        e->raw = NULL;
        return 0;
}

void xid_list_free(struct xid_list *l)
{
        if (!l)
                return;
        for (size_t i = 0; i < l->n; i++)
                xid_event_free(&l->ev[i]);
        free(l->ev);
        l->ev = NULL;
        l->n = l->alloc = 0;
}

/* Events with a time first, by time; the rest keep arrival order (stable insertion sort on
 * the appended tail only, so a merge of a few live events is cheap). */
static bool ev_before(const struct xid_event *a, const struct xid_event *b)
{
        if (a->time_known && b->time_known)
                return a->time < b->time;
        return a->time_known && !b->time_known;
}

int xid_list_merge(struct xid_list *dst, struct xid_list *src, const char *source)
{
        int r = 0;
        for (size_t i = 0; i < src->n; i++) {
                struct xid_event e = src->ev[i];
                src->ev[i].message = src->ev[i].raw = NULL;
                if (source)
                        e.source = source;
                if (r == 0) {
                        r = xid_list_push(dst, &e);
                        if (r < 0)
                                continue;
                        for (size_t j = dst->n - 1; j > 0 && ev_before(&dst->ev[j], &dst->ev[j - 1]); j--) {
                                struct xid_event t = dst->ev[j];
                                dst->ev[j] = dst->ev[j - 1];
                                dst->ev[j - 1] = t;
                        }
                } else {
                        xid_event_free(&e);
                }
        }
        xid_list_free(src);
        return r;
}

/* ---- PCI bus ids ----------------------------------------------------------------------------- */

static int hexn(const char *p, const char *end, int min, int max, unsigned *ret)
{
        unsigned v = 0;
        int n = 0;
        while (p + n < end && n < max) {
                char c = p[n];
                int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
                        c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                if (d < 0)
                        break;
                v = v * 16 + (unsigned)d;
                n++;
        }
        if (n < min)
                return -1;
        *ret = v;
        return n;
}

int xid_pci_parse(const char *s, size_t len, char out[16])
{
        const char *p = s, *end = s + len;
        unsigned a, b, c, dom = 0, bus, dev, fn = 0;
        int na = hexn(p, end, 2, 8, &a);
        if (na < 0 || p + na >= end || p[na] != ':')
                return -EINVAL;
        p += na + 1;
        int nb = hexn(p, end, 2, 2, &b);
        if (nb != 2)
                return -EINVAL;
        p += 2;
        if (p < end && *p == ':') {
                /* domain:bus:device */
                if (na != 4 && na != 8)
                        return -EINVAL;
                p++;
                if (hexn(p, end, 2, 2, &c) != 2)
                        return -EINVAL;
                p += 2;
                dom = a;
                bus = b;
                dev = c;
        } else {
                if (na != 2)
                        return -EINVAL;
                bus = a;
                dev = b;
        }
        if (p + 1 < end && *p == '.' && p[1] >= '0' && p[1] <= '7') {
                fn = (unsigned)(p[1] - '0');
                p += 2;
        }
        if (p < end && (kt_digit(*p) || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
                return -EINVAL; /* more hex digits than a field holds */
        if (dom > 0xffff || dev > 0x1f)
                return -EINVAL;
        snprintf(out, 16, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
        return (int)(p - s);
}

/* Same domain:bus:device (the Xid line has no function number). */
static bool same_device(const char *a, const char *b)
{
        if (!*a || !*b)
                return !*a && !*b;
        return strncmp(a, b, 10) == 0;
}

/* ---- message parsing ------------------------------------------------------------------------- */

static const char *skip_sp(const char *p, const char *end)
{
        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        return p;
}

static const char *rtrim(const char *p, const char *end)
{
        while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
                end--;
        return end;
}

static bool take_uint(const char **pp, const char *end, unsigned max_digits, uint64_t *ret)
{
        const char *p = *pp;
        uint64_t v = 0;
        unsigned n = 0;
        while (p < end && kt_digit(*p) && n < max_digits) {
                v = v * 10 + (uint64_t)(*p - '0');
                p++;
                n++;
        }
        if (n == 0 || (p < end && kt_digit(*p)))
                return false;
        *pp = p;
        *ret = v;
        return true;
}

static void copy_name(char *dst, size_t dstlen, const char *p, const char *end)
{
        size_t n = (size_t)(end - p);
        if (n >= dstlen)
                n = dstlen - 1;
        memcpy(dst, p, n);
        dst[n] = '\0';
        if (strcmp(dst, "<unknown>") == 0 || strcmp(dst, "'<unknown>'") == 0)
                dst[0] = '\0';
}

/* A PCI id right at p (optionally after "PCI:"). */
static bool pci_at(const char *p, const char *end, char out[16])
{
        if (kt_starts(p, end, "PCI:"))
                p += 4;
        return xid_pci_parse(p, (size_t)(end - p), out) > 0;
}

/* After a device field's ')': ": <code>", then an optional ',' and blanks. */
static bool take_code(const char *close, const char *le, int *ret_code, const char **ret_after)
{
        uint64_t code;
        if (close + 1 >= le || close[1] != ':')
                return false;
        const char *p = skip_sp(close + 2, le);
        if (!take_uint(&p, le, 9, &code))
                return false;
        if (p < le && *p == ',')
                p++;
        *ret_code = (int)code;
        *ret_after = skip_sp(p, le);
        return true;
}

/* "NVRM: Xid (<dev>): <n>[, [pid=…, ][name=…, ]<message>]" */
static bool parse_xid_line(const char *l, const char *le, struct xid_event *e, const char **ret_msg)
{
        const char *dev = l + strlen("NVRM: Xid (");
        const char *close = memchr(dev, ')', (size_t)(le - dev));
        const char *p;
        if (!close || !take_code(close, le, &e->xid, &p)) {
                e->xid = XID_NONE;
                return false;
        }
        /* device field: [PCI:]dddd:bb:dd[.f] [GPU-I:nn] [GPU-CI:nn]; redacted values tolerated */
        const char *q = skip_sp(dev, close);
        if (pci_at(q, close, e->pci_bus_id) == false)
                e->pci_bus_id[0] = '\0';
        while (q < close) {
                const char *t = q;
                while (q < close && *q != ' ')
                        q++;
                uint64_t v;
                const char *vp;
                if (kt_starts(t, q, "GPU-I:")) {
                        vp = t + 6;
                        if (take_uint(&vp, q, 6, &v) && vp == q)
                                e->gpu_instance = (int)v;
                } else if (kt_starts(t, q, "GPU-CI:")) {
                        vp = t + 7;
                        if (take_uint(&vp, q, 6, &v) && vp == q)
                                e->compute_instance = (int)v;
                }
                q = skip_sp(q, close);
        }
        e->kind = XID_KIND_XID;
        if (kt_starts(p, le, "pid=")) {
                const char *v = p + 4;
                uint64_t pid;
                if (kt_starts(v, le, "'<unknown>'"))
                        v += 11;
                else if (kt_starts(v, le, "<unknown>"))
                        v += 9;
                else if (take_uint(&v, le, 10, &pid) && pid <= UINT32_MAX) {
                        e->pid_known = true;
                        e->pid = (uint32_t)pid;
                }
                while (v < le && *v != ',')
                        v++;
                p = skip_sp(v < le ? v + 1 : v, le);
        }
        if (kt_starts(p, le, "name=")) {
                const char *v = p + 5;
                const char *sep = kt_find(v, le, ", ");
                const char *ve = sep ? sep : rtrim(v, le);
                copy_name(e->process_name, sizeof(e->process_name), v, ve);
                p = sep ? sep + 2 : le;
        }
        *ret_msg = p;
        return true;
}

/* "nvidia-nvswitchN: SXid (PCI:dddd:bb:dd.f): <n>, <message>" */
static bool parse_sxid_line(const char *l, const char *le, struct xid_event *e, const char **ret_msg)
{
        const char *p = l + strlen("nvidia-nvswitch");
        while (p < le && kt_digit(*p))
                p++;
        if (!kt_starts(p, le, ": SXid ("))
                return false;
        p += 8;
        const char *close = memchr(p, ')', (size_t)(le - p));
        const char *dev = p;
        if (!close || !take_code(close, le, &e->sxid, ret_msg)) {
                e->sxid = XID_NONE;
                return false;
        }
        if (!pci_at(dev, close, e->pci_bus_id))
                e->pci_bus_id[0] = '\0';
        e->kind = XID_KIND_SXID;
        return true;
}

/* The PCI id an NVRM line names: "GPU dddd:bb:dd.f: …" (NV_DEV_PRINTF), "GPU at PCI:…",
 * "GPU at dddd:…" (old), "The NVIDIA GPU dddd:…", "… for VF dddd:…". */
static void nvrm_pci(const char *b, const char *be, char out[16])
{
        static const char *const lead[] = { "GPU at PCI:", "GPU at ", "The NVIDIA GPU ", "for VF ", "GPU " };
        out[0] = '\0';
        for (size_t i = 0; i < sizeof(lead) / sizeof(lead[0]); i++) {
                const char *f = kt_find(b, be, lead[i]);
                if (f && pci_at(f + strlen(lead[i]), be, out))
                        return;
        }
        out[0] = '\0';
}

static bool has_any(const char *p, const char *end, const char *const *words, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (kt_find(p, end, words[i]))
                        return true;
        return false;
}

/* GSP trouble: a GSP function or the word GSP, plus a word of failure; not the indented body
 * of a CrashCat report (those follow their header line). */
static bool is_gsp_error(const char *b, const char *be)
{
        static const char *const gsp[] = { "GSP", "kgsp", "Gsp" };
        static const char *const bad[] = { "imeout", "timed out", "TIMEOUT", "CrashCat", "rror", "ERROR",
                                           "failed", "exception", "panic", "alted" };
        const char *p = b;
        if (kt_starts(p, be, "GPU") && p + 3 < be && kt_digit(p[3])) {
                p += 3;
                while (p < be && kt_digit(*p))
                        p++;
                p = skip_sp(p, be);
        }
        const char *colon = memchr(p, ':', (size_t)(be - p));
        if (colon && colon + 3 < be && colon[1] == ' ' && colon[2] == ' ' && colon[3] == ' ')
                return false;
        return has_any(b, be, gsp, 3) && has_any(b, be, bad, sizeof(bad) / sizeof(bad[0]));
}

/* "loading NVIDIA UNIX … Kernel Module  570.158.01  …": the first dotted number. */
static void driver_version(const char *b, const char *be, char *out, size_t outlen)
{
        const char *p = kt_find(b, be, "Kernel Module");
        p = p ? p : b;
        out[0] = '\0';
        for (; p < be; p++) {
                if (!kt_digit(*p) || (p > b && p[-1] != ' '))
                        continue;
                const char *q = p;
                bool dot = false;
                while (q < be && (kt_digit(*q) || *q == '.')) {
                        dot = dot || *q == '.';
                        q++;
                }
                if (dot && (q == be || *q == ' ')) {
                        copy_name(out, outlen, p, q);
                        return;
                }
                p = q;
        }
}

/* Classify an NVRM line body (after "NVRM: "). whole/we is the whole record (several lines).
 * Sets kind, pci and friends; *expect: continuation lines expected when the record holds only
 * the first line. */
static void classify_nvrm(const char *b, const char *be, const char *whole, const char *we, int nlines,
                          struct xid_event *e, int *expect)
{
        nvrm_pci(b, be, e->pci_bus_id);
        if (kt_starts(b, be, "loading NVIDIA UNIX")) {
                e->kind = XID_KIND_DRIVER_LOAD;
                driver_version(b, be, e->driver_version, sizeof(e->driver_version));
                return;
        }
        if (kt_find(whole, we, "fallen off the bus")) {
                e->kind = XID_KIND_FALLEN_OFF_BUS;
                e->xid = 79;
                return;
        }
        if (kt_starts(b, be, "The NVIDIA GPU ")) {
                /* "The NVIDIA GPU X\n(PCI ID: …) installed in this system has\nfallen off the bus…"
                 * or "… is not supported by the\nNVIDIA NNN driver release." */
                if (kt_find(whole, we, "not supported"))
                        e->kind = XID_KIND_INIT_FAILED;
                else if (nlines < 3)
                        *expect = 3 - nlines;
                return;
        }
        if (kt_starts(b, be, "A GPU crash dump has been created")) {
                e->kind = XID_KIND_CRASH_DUMP;
                if (nlines < 3)
                        *expect = 3 - nlines;
                return;
        }
        if (kt_starts(b, be, "API mismatch: the client")) {
                e->kind = XID_KIND_API_MISMATCH;
                const char *q = b + strlen("API mismatch: the client");
                int lines = 4;
                if (kt_starts(q, be, " '")) {
                        /* 575+: "the client '%s' (pid %u)" */
                        lines = 5;
                        const char *n0 = q + 2;
                        const char *n1 = kt_find(n0, be, "' (pid ");
                        if (n1) {
                                copy_name(e->process_name, sizeof(e->process_name), n0, n1);
                                const char *v = n1 + 7;
                                uint64_t pid;
                                if (take_uint(&v, be, 10, &pid) && pid <= UINT32_MAX) {
                                        e->pid_known = true;
                                        e->pid = (uint32_t)pid;
                                }
                        }
                }
                if (nlines < lines)
                        *expect = lines - nlines;
                return;
        }
        static const char *const init[] = { "RmInitAdapter failed", "rm_init_adapter failed",
                                            "probe routine failed", "No NVIDIA devices probed" };
        if (has_any(b, be, init, 4)) {
                e->kind = XID_KIND_INIT_FAILED;
                return;
        }
        if (kt_find(b, be, "RC watchdog")) {
                e->kind = XID_KIND_RC_WATCHDOG;
                return;
        }
        if (kt_starts(b, be, "Rate limiting GSP") || is_gsp_error(b, be)) {
                e->kind = XID_KIND_GSP_ERROR;
                return;
        }
        if (kt_starts(b, be, "GPU at PCI:") && kt_find(b, be, ": GPU-")) {
                e->kind = XID_KIND_GPU_UUID;
                return;
        }
}

/* nvidia-uvm: "<file>.c:<line> <func>[pid:<pid>] <msg>" (UVM_ERR_PRINT) or a plain print. */
static void classify_uvm(const char *b, const char *be, struct xid_event *e)
{
        static const char *const bad[] = { "rror", "ERROR", "fail", "Fail", "imeout" };
        const char *pid = kt_find(b, be, "[pid:");
        const char *dotc = kt_find(b, be, ".c:");
        if (pid && dotc && dotc < pid) {
                const char *v = pid + 5;
                uint64_t n;
                if (take_uint(&v, be, 10, &n) && n <= UINT32_MAX && v < be && *v == ']') {
                        e->pid_known = true;
                        e->pid = (uint32_t)n;
                }
                e->kind = XID_KIND_UVM_ERROR;
                return;
        }
        if (has_any(b, be, bad, 5))
                e->kind = XID_KIND_UVM_ERROR;
}

/* nvidia-drm lines: "NVIDIA-GPU dddd:bb:dd.f: DRM: <msg>" (dev_err style, as the guide quotes
 * "Failed to reclaim vram for pid 1234") and "[drm:FUNC [nvidia_drm]] *ERROR* [nvidia-drm]
 * [GPU ID 0x…] <msg>" / "[drm] [nvidia-drm] [GPU ID 0x…] <msg>" (NV_DRM_DEV_LOG_*; the GPU ID
 * is NVKMS's, not a PCI id: not mapped). "for pid N" in the message gives the pid. */
static bool parse_drm_line(const char *l, const char *le, struct xid_event *e, const char **ret_msg)
{
        const char *msg;
        if (kt_starts(l, le, "NVIDIA-GPU ")) {
                const char *d = kt_find(l, le, ": DRM: ");
                if (!d)
                        return false;
                const char *p = l + strlen("NVIDIA-GPU ");
                char pci[16];
                if (xid_pci_parse(p, (size_t)(d - p), pci) != (int)(d - p))
                        return false; /* "NVIDIA-GPU" in some other sentence */
                memcpy(e->pci_bus_id, pci, sizeof(e->pci_bus_id));
                msg = d + strlen(": DRM: ");
        } else if (kt_starts(l, le, "[drm")) {
                const char *f = kt_find(l, le, "[nvidia-drm] ");
                if (!f)
                        return false;
                msg = f + strlen("[nvidia-drm] ");
                if (kt_starts(msg, le, "[GPU ID ")) {
                        const char *c = memchr(msg, ']', (size_t)(le - msg));
                        if (c)
                                msg = skip_sp(c + 1, le);
                }
        } else {
                return false;
        }
        e->kind = XID_KIND_DRM;
        const char *pid = kt_find(msg, le, "for pid ");
        if (pid) {
                const char *v = pid + strlen("for pid ");
                uint64_t n;
                if (take_uint(&v, le, 10, &n) && n > 0 && n <= UINT32_MAX) {
                        e->pid_known = true;
                        e->pid = (uint32_t)n;
                }
        }
        *ret_msg = msg;
        return true;
}

/* Join the message: [msg, first line end) and the bodies of the following lines. */
static int join_message(struct buf *out, const char *msg, const char *le, const char *rest, const char *end)
{
        int r = buf_append(out, msg, (size_t)(rtrim(msg, le) - msg));
        for (const char *p = rest; r == 0 && p && p < end;) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *e2 = nl ? nl : end;
                const char *s = skip_sp(p, e2);
                if (kt_starts(s, e2, "NVRM: "))
                        s += 6;
                s = skip_sp(s, e2);
                const char *t = rtrim(s, e2);
                if (t > s) {
                        if (out->len)
                                r = buf_putc(out, ' ');
                        if (r == 0)
                                r = buf_append(out, s, (size_t)(t - s));
                }
                p = nl ? nl + 1 : NULL;
        }
        return r;
}

static int parse_message_ex(const char *text, size_t len, struct xid_event *ret, int *ret_expect)
{
        const char *end = text + len;
        const char *l = skip_sp(text, end);
        const char *nl = memchr(l, '\n', (size_t)(end - l));
        const char *le = rtrim(l, nl ? nl : end);
        int nlines = 1;
        for (const char *q = l; q < end; q++)
                if (*q == '\n' && q + 1 < end)
                        nlines++;
        struct xid_event e;
        event_init(&e);
        int expect = 0;
        const char *msg = NULL;
        if (kt_starts(l, le, "NVRM: Xid (") && parse_xid_line(l, le, &e, &msg)) {
                /* the caused-by suffix (R575+, Xid 45) */
                const char *cb = kt_find(msg, le, " caused by previous Xid ");
                if (cb) {
                        const char *v = cb + 24;
                        uint64_t n;
                        if (take_uint(&v, le, 9, &n) && rtrim(v, le) == v)
                                e.caused_by = (int)n;
                }
        } else if (kt_starts(l, le, "nvidia-nvswitch") && parse_sxid_line(l, le, &e, &msg)) {
                /* an NVSwitch SXid: never a GPU Xid */
        } else if (kt_starts(l, le, "NVRM: ") || kt_starts(l, le, "NVRM ")) {
                e.kind = XID_KIND_OTHER;
                msg = skip_sp(l + 5, le);
                classify_nvrm(msg, le, l, end, nlines, &e, &expect);
        } else if ((kt_starts(l, le, "NVIDIA-GPU ") || kt_starts(l, le, "[drm")) && parse_drm_line(l, le, &e, &msg)) {
                /* nvidia-drm */
        } else if (kt_starts(l, le, "nvidia-uvm: ")) {
                msg = l + 12;
                classify_uvm(msg, le, &e);
        } else if (kt_starts(l, le, "nvidia-") || kt_starts(l, le, "nvidia: ")) {
                msg = l;
        } else {
                return 0;
        }
        struct buf m = BUF_INIT(2 * KMSG_LINE_MAX);
        if (join_message(&m, msg, le, nl ? nl + 1 : NULL, end) < 0) {
                buf_free(&m);
                return -ENOMEM;
        }
        e.message = buf_steal(&m);
        if (!e.message)
                return -ENOMEM;
        *ret = e;
        if (ret_expect)
                *ret_expect = expect;
        return 1;
}

int xid_parse_message(const char *text, size_t len, struct xid_event *ret)
{
        if (!text)
                return 0;
        return parse_message_ex(text, len, ret, NULL);
}

/* ---- the stateful parser --------------------------------------------------------------------- */

void xid_parser_init(struct xid_parser *p, const char *source)
{
        memset(p, 0, sizeof(*p));
        p->source = source;
        p->pend_text = BUF_INIT(2 * KMSG_LINE_MAX);
        event_init(&p->pend);
}

void xid_parser_free(struct xid_parser *p)
{
        if (!p)
                return;
        xid_event_free(&p->pend);
        buf_free(&p->pend_text);
        p->pending = false;
}

/* "GPU6" of "GPU6 _kgspLogRpcTimeout: …" (590+ RM prefix), "" otherwise. */
static void gsp_tag(const char *msg, char *out, size_t outlen)
{
        out[0] = '\0';
        if (!msg || strncmp(msg, "GPU", 3) != 0 || !kt_digit(msg[3]))
                return;
        size_t n = 3;
        while (kt_digit(msg[n]) && n + 1 < outlen)
                n++;
        memcpy(out, msg, n);
        out[n] = '\0';
}

static bool close_in_time(const struct xid_event *a, const struct xid_event *b, double secs)
{
        if (a->monotonic_known && b->monotonic_known)
                return fabs(a->monotonic - b->monotonic) <= secs;
        if (a->time_known && b->time_known)
                return fabs(a->time - b->time) <= secs;
        return true; /* no clock: adjacency (records_since_last) decides */
}

/* A line that only repeats the event given out just before. */
static bool is_companion(const struct xid_parser *p, const struct xid_event *e, const char *tag)
{
        const struct xid_event *l = &p->last;
        if (!p->last_valid || p->records_since_last > 8)
                return false;
        switch (e->kind) {
        case XID_KIND_FALLEN_OFF_BUS:
                /* osHandleGpuLost prints the Xid 79 line, then "GPU …: GPU has fallen off the bus." */
                return l->xid == 79 && same_device(l->pci_bus_id, e->pci_bus_id) && close_in_time(l, e, 5);
        case XID_KIND_INIT_FAILED:
                return l->kind == XID_KIND_INIT_FAILED && same_device(l->pci_bus_id, e->pci_bus_id) &&
                       e->message && strstr(e->message, "rm_init_adapter failed") && close_in_time(l, e, 5);
        case XID_KIND_GSP_ERROR:
                return l->kind == XID_KIND_GSP_ERROR && strcmp(p->last_gsp_tag, tag) == 0 &&
                       same_device(l->pci_bus_id, e->pci_bus_id) && close_in_time(l, e, 2);
        default:
                return false;
        }
}

static int emit(struct xid_parser *p, struct xid_event *e, struct xid_list *out)
{
        char tag[32];
        gsp_tag(e->kind == XID_KIND_GSP_ERROR ? e->message : NULL, tag, sizeof(tag));
        if (is_companion(p, e, tag)) {
                if (e->kind == XID_KIND_GSP_ERROR) {
                        /* a burst: measure the next line from this one */
                        p->last.monotonic_known = e->monotonic_known;
                        p->last.monotonic = e->monotonic;
                        p->last.time_known = e->time_known;
                        p->last.time = e->time;
                }
                p->records_since_last = 0;
                xid_event_free(e);
                return 0;
        }
        p->last = *e;
        p->last.message = p->last.raw = NULL;
        p->last_valid = true;
        p->records_since_last = 0;
        snprintf(p->last_gsp_tag, sizeof(p->last_gsp_tag), "%s", tag);
        return xid_list_push(out, e);
}

static void set_meta(struct xid_event *e, const struct kmsg_record *rec, const char *source)
{
        e->time_known = rec->time_known;
        e->time = rec->time;
        e->monotonic_known = rec->monotonic_known;
        e->monotonic = rec->monotonic;
        e->seq_known = rec->seq_known;
        e->seq = rec->seq;
        e->source = source;
}

static int finish_pending(struct xid_parser *p, struct xid_list *out)
{
        if (!p->pending)
                return 0;
        p->pending = false;
        struct xid_event e;
        int r = parse_message_ex(buf_str(&p->pend_text), p->pend_text.len, &e, NULL);
        buf_reset(&p->pend_text);
        if (r <= 0) {
                xid_event_free(&p->pend);
                event_init(&p->pend);
                return r;
        }
        e.time_known = p->pend.time_known;
        e.time = p->pend.time;
        e.monotonic_known = p->pend.monotonic_known;
        e.monotonic = p->pend.monotonic;
        e.seq_known = p->pend.seq_known;
        e.seq = p->pend.seq;
        e.source = p->pend.source;
        e.raw = p->pend.raw;
        p->pend.raw = NULL;
        xid_event_free(&p->pend);
        event_init(&p->pend);
        return emit(p, &e, out);
}

/* Could this record be a later line of the pending message? */
static bool continues_pending(const struct xid_parser *p, const struct kmsg_record *rec)
{
        const char *t = rec->text, *end = rec->text + rec->text_len;
        t = skip_sp(t, end);
        if (!kt_starts(t, end, "NVRM: ") || kt_starts(t, end, "NVRM: Xid") || kt_starts(t, end, "NVRM: GPU") ||
            kt_starts(t, end, "NVRM: loading") || memchr(t, '\n', (size_t)(end - t)))
                return false;
        struct xid_event tmp = { 0 };
        set_meta(&tmp, rec, NULL);
        return close_in_time(&p->pend, &tmp, 1);
}

static char *raw_dup(const struct kmsg_record *rec)
{
        return strndup(rec->raw ? rec->raw : "", rec->raw ? rec->raw_len : 0);
}

int xid_parser_feed(struct xid_parser *p, const struct kmsg_record *rec, struct xid_list *out)
{
        int r;
        p->records_since_last++;
        /* A process can write to /dev/kmsg, but never with the kernel's facility (devkmsg_write
         * turns facility 0 into LOG_USER): such a record cannot be a driver line. */
        if (rec->prio >= 0 && (rec->prio >> 3) != 0)
                return 0;
        if (p->pending) {
                if (p->pending_more > 0 && continues_pending(p, rec)) {
                        char *raw = p->pend.raw;
                        size_t rl = raw ? strlen(raw) : 0;
                        size_t add = rec->raw_len < KMSG_LINE_MAX ? rec->raw_len : KMSG_LINE_MAX;
                        char *nraw = realloc(raw, rl + 1 + add + 1);
                        if (!nraw)
                                return -ENOMEM;
                        nraw[rl] = '\n';
                        memcpy(nraw + rl + 1, rec->raw, add);
                        nraw[rl + 1 + add] = '\0';
                        p->pend.raw = nraw;
                        if (buf_putc(&p->pend_text, '\n') < 0 ||
                            buf_append(&p->pend_text, rec->text, rec->text_len) < 0)
                                return -ENOMEM;
                        if (--p->pending_more == 0)
                                return finish_pending(p, out);
                        return 0;
                }
                r = finish_pending(p, out);
                if (r < 0)
                        return r;
        }
        struct xid_event e;
        int expect = 0;
        r = parse_message_ex(rec->text, rec->text_len, &e, &expect);
        if (r <= 0)
                return r;
        set_meta(&e, rec, p->source);
        e.raw = raw_dup(rec);
        if (!e.raw) {
                xid_event_free(&e);
                return -ENOMEM;
        }
        if (expect > 0) {
                xid_event_free(&p->pend);
                p->pend = e;
                free(p->pend.message);
                p->pend.message = NULL;
                p->pending = true;
                p->pending_more = expect;
                buf_reset(&p->pend_text);
                if (buf_append(&p->pend_text, rec->text, rec->text_len) < 0)
                        return -ENOMEM;
                return 0;
        }
        return emit(p, &e, out);
}

int xid_parser_flush(struct xid_parser *p, struct xid_list *out)
{
        return finish_pending(p, out);
}

/* read() over a memory buffer, for xid_parse_log. */
struct mem_src {
        const char *buf;
        size_t len, off;
};

static ssize_t mem_read(int fd, void *b, size_t len, void *ctx)
{
        struct mem_src *m = ctx;
        (void)fd;
        size_t n = m->len - m->off;
        if (n > len)
                n = len;
        memcpy(b, m->buf + m->off, n);
        m->off += n;
        return (ssize_t)n;
}

int xid_parse_log(const char *buf, size_t len, const struct kmsg_time_opts *t, const char *source,
                  struct xid_list *out)
{
        struct mem_src m = { .buf = buf, .len = buf ? len : 0 };
        struct kmsg_reader rd;
        kmsg_reader_init_fd(&rd, -1, KMSG_SRC_FILE, false, t, mem_read, &m);
        int r = xid_read_all(&rd, source, out);
        kmsg_reader_close(&rd);
        return r;
}

/* ---- mapping and filters ----------------------------------------------------------------- */

size_t xid_map_gpus(struct xid_event *ev, size_t n, const struct gpu_report *r)
{
        size_t mapped = 0;
        if (!r)
                return 0;
        for (size_t i = 0; i < n; i++) {
                struct xid_event *e = &ev[i];
                if (!e->pci_bus_id[0] || e->kind == XID_KIND_SXID)
                        continue;
                for (size_t g = 0; g < r->n_gpus; g++) {
                        char norm[16];
                        const char *id = r->gpus[g].pci_bus_id;
                        if (xid_pci_parse(id, strnlen(id, sizeof(r->gpus[g].pci_bus_id)), norm) <= 0)
                                continue;
                        if (same_device(norm, e->pci_bus_id)) {
                                e->gpu_index = (int)r->gpus[g].index;
                                mapped++;
                                break;
                        }
                }
        }
        return mapped;
}

bool xid_event_on_gpu(const struct xid_event *e, const struct gpu_info *g, bool by_index)
{
        if (e->kind == XID_KIND_SXID)
                return false;
        if (by_index && e->gpu_index >= 0)
                return (unsigned)e->gpu_index == g->index;
        return e->pci_bus_id[0] && g->pci_bus_id[0] && strcmp(e->pci_bus_id, g->pci_bus_id) == 0;
}

bool xid_event_after(const struct xid_event *a, const struct xid_event *b)
{
        if (a->seq_known && b->seq_known)
                return a->seq > b->seq;
        if (a->monotonic_known && b->monotonic_known)
                return a->monotonic > b->monotonic;
        if (a->time_known && b->time_known)
                return a->time > b->time;
        return true;
}

const struct xid_event *xid_driver_load(const struct xid_event *ev, size_t n)
{
        const struct xid_event *load = NULL;
        for (size_t i = 0; i < n; i++)
                if (ev[i].kind == XID_KIND_DRIVER_LOAD && (!load || xid_event_after(&ev[i], load)))
                        load = &ev[i];
        return load;
}

/* A stamp this far ahead of the clock is another clock's: it cannot be placed in the window */
#define XID_FUTURE_SLACK_S 60.0

static void age_text(double s, char *out, size_t n)
{
        if (s < 120)
                snprintf(out, n, "%.0f s", s);
        else if (s < 7200)
                snprintf(out, n, "%.0f min", s / 60);
        else
                snprintf(out, n, "%.1f h", s / 3600);
}

/* What to do after it, as a command where there is one; an Xid 79 after the driver's load is
 * what makes a reset pointless (ledger_lost_event, reclaim --reset-gpu): the node reboots */
static void recent_next_step(struct xid_recent *r, unsigned index, const char *ref)
{
        int code = r->event->xid;
        if (code == 79 || r->action == XID_ACT_REBOOT)
                str_setf(&r->next_step,
                         _("drain the node and reboot it; a GPU reset does not bring back GPU %u (`ghostvram xid explain %d`)"),
                         index, code);
        else if (r->action == XID_ACT_RESET_GPU || r->action == XID_ACT_DRAIN_AND_RESET)
                str_setf(&r->next_step,
                         _("stop new work on GPU %u, then reset it once no process uses it: `sudo nvidia-smi --gpu-reset -i %s` "
                           "(`ghostvram xid explain %d`)"), index, ref, code);
        else
                str_setf(&r->next_step, _("%s (`ghostvram xid explain %d`)"), _(xid_action_text(r->action)),
                         code);
}

void xid_recent_clear(struct xid_recent *r)
{
        str_clear(&r->summary);
        str_clear(&r->next_step);
}

bool xid_recent_worst(const struct xid_event *ev, size_t n, const struct gpu_info *g, bool by_index,
                      const char *gpu_ref, double now, double window_s, struct xid_recent *ret)
{
        if (window_s <= 0)
                return false;
        const struct xid_event *load = xid_driver_load(ev, n);
        struct xid_recent best = { 0 };
        for (size_t i = 0; i < n; i++) {
                const struct xid_event *e = &ev[i];
                if ((e->kind != XID_KIND_XID && e->kind != XID_KIND_FALLEN_OFF_BUS) || e->xid == XID_NONE ||
                    !e->time_known || !xid_event_on_gpu(e, g, by_index) || (load && !xid_event_after(e, load)))
                        continue;
                double age = now - e->time;
                if (age > window_s || age < -XID_FUTURE_SLACK_S)
                        continue;
                struct xid_assessment as;
                xid_event_assess(e, &as);
                if (as.severity < XID_SEV_ERROR || as.severity < best.severity ||
                    (best.event && as.severity == best.severity && !xid_event_after(e, best.event)))
                        continue;
                best.event = e;
                best.severity = as.severity;
                best.action = as.action;
                best.age_s = age > 0 ? age : 0;
        }
        if (!best.event)
                return false;
        char age[32];
        struct xid_assessment as;
        xid_event_assess(best.event, &as);
        age_text(best.age_s, age, sizeof(age));
        str_setf(&best.summary, _("Xid %d (%s) %s ago"), best.event->xid, _(as.title), age);
        char ref[112];
        gpu_info_ref(g, ref, sizeof(ref));
        recent_next_step(&best, g->index, gpu_ref && *gpu_ref ? gpu_ref : ref);
        *ret = best;
        return true;
}

int xid_parse_since(const char *s, double now, double *ret_epoch)
{
        uint64_t v;
        if (!s || !*s)
                return -EINVAL;
        if (s[0] == '@') {
                if (parse_u64(s + 1, &v) < 0)
                        return -EINVAL;
                *ret_epoch = (double)v;
                return 0;
        }
        if (strcmp(s, "now") == 0) {
                *ret_epoch = now;
                return 0;
        }
        if (parse_duration_ms(s, &v) == 0) {
                *ret_epoch = now - (double)v / 1000.0;
                return 0;
        }
        size_t len = strlen(s);
        double t;
        if (len <= 64 && kmsg_parse_iso8601(s, len, &t) == (int)len) {
                *ret_epoch = t;
                return 0;
        }
        return -EINVAL;
}
