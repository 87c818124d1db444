/* http: the read-only HTTP side of `ghostvram serve`, on libmicrohttpd. Two polling threads
 * (epoll, no thread per connection) answer from the exporter's pre-rendered bodies, so no
 * request waits for a collection; /metrics sends the published buffer without copying it:
 *
 *   GET /metrics        Prometheus text 0.0.4, or OpenMetrics 1.0.0 when Accept asks for it
 *   GET /healthz        200 while the data is fresh, 503 when older than the limit or absent
 *   GET /api/v1/scan    the latest scan as JSON (no command lines unless --expose-cmdline)
 *   GET /               a short index
 *
 * Only GET and HEAD exist (405 with Allow otherwise); nothing can act through HTTP. The
 * connection count, each connection's memory and its idle time are limited. */
#pragma once
#include <stdint.h>
#include <sys/socket.h>

#include "serve/exporter.h"

struct http_opts {
        const char *listen;             /* "127.0.0.1:9835", "[::1]:9835", "0.0.0.0:9835"; port 0 picks one */
        unsigned max_connections;       /* 0: 64 */
        unsigned timeout_s;             /* idle time a connection may take; 0: 10 */
        size_t memory_limit;            /* per connection (request headers); 0: 32 KiB */
};

/* Parse "HOST:PORT" with an IPv4 address or a bracketed IPv6 one ("[::1]:9835"). Returns 0 or
 * -EINVAL. */
int http_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);

struct http_server;

/* Listen and serve e's bodies. Returns 0, -EINVAL (bad address) or -EADDRINUSE-like errors
 * (-EIO when libmicrohttpd does not say why). */
int http_server_start(const struct http_opts *o, struct exporter *e, struct http_server **ret);
/* The port listened on (useful with port 0). */
uint16_t http_server_port(const struct http_server *s);
/* Stop listening, close every connection, free. */
void http_server_stop(struct http_server *s);
