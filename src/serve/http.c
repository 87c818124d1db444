#include "serve/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "util/json_util.h"
#include "render/metrics.h"
#include "serve/page.h"
#include "util/deadline.h"
#include "util/i18n.h"
#include "util/parse.h"

struct http_server {
        struct MHD_Daemon *d;
        struct exporter *e;
        uint16_t port;
};

int http_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len)
{
        char host[64];
        const char *port;
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof(ss));
        if (!s || !*s)
                return -EINVAL;
        if (s[0] == '[') {
                const char *close = strchr(s, ']');
                if (!close || close[1] != ':' || (size_t)(close - s - 1) >= sizeof(host))
                        return -EINVAL;
                memcpy(host, s + 1, (size_t)(close - s - 1));
                host[close - s - 1] = '\0';
                port = close + 2;
        } else {
                const char *colon = strrchr(s, ':');
                if (!colon || (size_t)(colon - s) >= sizeof(host) || strchr(s, ':') != colon)
                        return -EINVAL;
                memcpy(host, s, (size_t)(colon - s));
                host[colon - s] = '\0';
                port = colon + 1;
                /* ":9835" every IPv4 address, "localhost:9835" the loopback (as node_exporter and
                 * Prometheus take them); no name lookup otherwise */
                if (!host[0])
                        snprintf(host, sizeof(host), "0.0.0.0");
                else if (strcmp(host, "localhost") == 0)
                        snprintf(host, sizeof(host), "127.0.0.1");
        }
        unsigned p;
        if (parse_uint_range(port, 0, 65535, &p) < 0 || !*port)
                return -EINVAL;
        struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
        if (s[0] != '[' && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
                v4->sin_family = AF_INET;
                v4->sin_port = htons((uint16_t)p);
                *ret_len = sizeof(*v4);
        } else if (s[0] == '[' && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
                v6->sin6_family = AF_INET6;
                v6->sin6_port = htons((uint16_t)p);
                *ret_len = sizeof(*v6);
        } else {
                return -EINVAL;
        }
        *ret = ss;
        return 0;
}

/* Queue response r (then dropped: the connection keeps it) with the common headers. */
static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, const char *type, struct MHD_Response *r,
                             const char *allow)
{
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
        if (allow)
                MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
        enum MHD_Result ok = MHD_queue_response(c, status, r);
        MHD_destroy_response(r);
        return ok;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len,
                             const char *allow)
{
        /* body is malloc'd and given to the response (freed when it has been sent) */
        struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(len, body, free);
        if (!r) {
                free(body);
                return MHD_NO;
        }
        return queue(c, status, type, r, allow);
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *allow, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *allow, const char *fmt, ...)
{
        char tmp[512];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
        va_end(ap);
        if (n < 0)
                return MHD_NO;
        if ((size_t)n >= sizeof(tmp))
                n = (int)sizeof(tmp) - 1;
        char *body = malloc((size_t)n + 1);
        if (!body)
                return MHD_NO;
        memcpy(body, tmp, (size_t)n + 1);
        return reply(c, status, "text/plain; charset=utf-8", body, (size_t)n, allow);
}

/* A /metrics answer in flight: the published bodies (referenced, not copied) and its own tail. */
struct metrics_answer {
        struct exporter_bodies *b;
        size_t tail_len;
        char tail[EXPORTER_TAIL_MAX];
};

static void metrics_answer_free(void *cls)
{
        struct metrics_answer *a = cls;
        exporter_bodies_put(a->b);
        free(a);
}

static enum MHD_Result serve_metrics(struct http_server *s, struct MHD_Connection *c)
{
        const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
        enum metrics_format fmt = metrics_accept_openmetrics(accept) ? METRICS_OPENMETRICS : METRICS_TEXT_004;
        struct metrics_answer *a = malloc(sizeof(*a));
        if (!a)
                return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory\n");
        a->b = exporter_bodies_get(s->e);
        if (exporter_metrics_tail(a->b, fmt, monotonic_s(), a->tail, sizeof(a->tail), &a->tail_len) < 0) {
                metrics_answer_free(a);
                return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory\n");
        }
        const struct MHD_IoVec iov[2] = {
                { .iov_base = a->b->metrics[fmt], .iov_len = a->b->metrics_len[fmt] },
                { .iov_base = a->tail, .iov_len = a->tail_len },
        };
        struct MHD_Response *r = MHD_create_response_from_iovec(iov, 2, metrics_answer_free, a);
        if (!r) {
                metrics_answer_free(a);
                return MHD_NO;
        }
        return queue(c, MHD_HTTP_OK, fmt == METRICS_OPENMETRICS ? metrics_content_type_openmetrics : metrics_content_type_004,
                     r, NULL);
}

static enum MHD_Result serve_healthz(struct http_server *s, struct MHD_Connection *c)
{
        struct exporter_bodies *b = exporter_bodies_get(s->e);
        double age = monotonic_s() - b->data_mono;
        double limit = exporter_stale_after(s->e);
        enum MHD_Result r;
        if (!b->have_data)
                r = reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "no data yet: %s\n",
                               b->status[0] ? b->status : "the first collection has not finished");
        else if (age > limit)
                r = reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "stale: data is %.1f s old (limit %.0f s)%s%s\n",
                               age, limit, b->status[0] ? ": " : "", b->status);
        else
                r = reply_text(c, MHD_HTTP_OK, NULL, "ok: data is %.1f s old%s%s\n", age,
                               b->status[0] ? "; latest collection: " : "", b->status);
        exporter_bodies_put(b);
        return r;
}

static enum MHD_Result serve_scan(struct http_server *s, struct MHD_Connection *c)
{
        struct exporter_bodies *b = exporter_bodies_get(s->e);
        enum MHD_Result r;
        char *body = b->scan_json ? malloc(b->scan_json_len + 1) : NULL;
        if (!b->scan_json) {
                /* the JSON API answers JSON, an error too (docs/json.md) */
                json_t *doc = json_object();
                char msg[LIVE_STATUS_MAX + 32];
                snprintf(msg, sizeof(msg), "no data yet: %s", b->status[0] ? b->status : "the first collection has not finished");
                json_set(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
                json_set(doc, "command", json_string("serve"));
                json_set(doc, "error", json_text(msg));
                json_set(doc, "http_status", json_integer(MHD_HTTP_SERVICE_UNAVAILABLE));
                char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
                json_decref(doc);
                r = text ? reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json", text, strlen(text), NULL) : MHD_NO;
        } else if (!body) {
                r = reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory\n");
        } else {
                memcpy(body, b->scan_json, b->scan_json_len + 1);
                r = reply(c, MHD_HTTP_OK, "application/json", body, b->scan_json_len, NULL);
        }
        exporter_bodies_put(b);
        return r;
}

/* A page answer in flight: the published bodies, referenced while libmicrohttpd sends. */
static void page_answer_free(void *cls)
{
        exporter_bodies_put(cls);
}

static enum MHD_Result serve_page(struct http_server *s, struct MHD_Connection *c)
{
        struct exporter_bodies *b = exporter_bodies_get(s->e);
        if (!b->page) {
                exporter_bodies_put(b);
                return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "the page could not be rendered\n");
        }
        const struct MHD_IoVec iov = { .iov_base = b->page, .iov_len = b->page_len };
        struct MHD_Response *r = MHD_create_response_from_iovec(&iov, 1, page_answer_free, b);
        if (!r) {
                exporter_bodies_put(b);
                return MHD_NO;
        }
        /* no script, no external resource: only the page's own inline style may apply */
        MHD_add_response_header(r, "Content-Security-Policy", page_csp);
        MHD_add_response_header(r, "X-Frame-Options", "DENY");
        MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
        MHD_add_response_header(r, "Cross-Origin-Resource-Policy", "same-origin");
        return queue(c, MHD_HTTP_OK, "text/html; charset=utf-8", r, NULL);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload_data, size_t *upload_data_size,
                               void **req_cls)
{
        static int seen;
        struct http_server *s = cls;
        (void)version;
        (void)upload_data;
        /* every answer built here is for programs (JSON, metrics, plain errors): English */
        i18n_thread_off(true);
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                /* at once, without reading a body: the connection closes after the answer */
                return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET, HEAD",
                                  "ghostvram serve is read-only: only GET and HEAD\n");
        if (!*req_cls) {
                /* the headers are in; answering on the next call keeps the connection alive */
                *req_cls = &seen;
                return MHD_YES;
        }
        if (*upload_data_size) {
                *upload_data_size = 0;  /* a GET with a body: ignore the body */
                return MHD_YES;
        }
        if (strcmp(url, "/metrics") == 0)
                return serve_metrics(s, c);
        if (strcmp(url, "/healthz") == 0)
                return serve_healthz(s, c);
        if (strcmp(url, "/api/v1/scan") == 0)
                return serve_scan(s, c);
        if (strcmp(url, "/") == 0)
                return serve_page(s, c);
        return reply_text(c, MHD_HTTP_NOT_FOUND, NULL, "not found: try /, /metrics, /healthz, /api/v1/scan\n");
}

/* libmicrohttpd's own messages (a client sending garbage) are not ours to print. */
static void quiet_log(void *cls, const char *fmt, va_list ap)
{
        (void)cls;
        (void)fmt;
        (void)ap;
}

/* Percent-decoding of the path and arguments, except that a path holding "%00" stays as it came:
 * decoded, the NUL would end the C string early and "/%00" would be served as "/". */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
        (void)cls;
        (void)c;
        if (strstr(s, "%00"))
                return strlen(s);
        return MHD_http_unescape(s);
}

int http_server_start(const struct http_opts *o, struct exporter *e, struct http_server **ret)
{
        struct sockaddr_storage ss;
        socklen_t sslen;
        if (http_parse_listen(o->listen, &ss, &sslen) < 0)
                return -EINVAL;
        struct http_server *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->e = e;
        unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
        if (ss.ss_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        unsigned max = o->max_connections ? o->max_connections : 64;
        unsigned timeout = o->timeout_s ? o->timeout_s : 10;
        size_t mem = o->memory_limit ? o->memory_limit : 32 * 1024;
        errno = 0;
        s->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, s,
                                MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                                MHD_OPTION_CONNECTION_LIMIT, max,
                                MHD_OPTION_CONNECTION_TIMEOUT, timeout,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, mem,
                                MHD_OPTION_LISTEN_BACKLOG_SIZE, 128u,
                                MHD_OPTION_STRICT_FOR_CLIENT, 1,
                                MHD_OPTION_THREAD_POOL_SIZE, 2u,
                                MHD_OPTION_EXTERNAL_LOGGER, quiet_log, NULL,
                                MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
                                MHD_OPTION_END);
        if (!s->d) {
                int err = errno ? errno : EIO;
                free(s);
                return -err;
        }
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
        s->port = info ? info->port : 0;
        *ret = s;
        return 0;
}

uint16_t http_server_port(const struct http_server *s)
{
        return s->port;
}

void http_server_stop(struct http_server *s)
{
        if (!s)
                return;
        MHD_stop_daemon(s->d);
        free(s);
}
