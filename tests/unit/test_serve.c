/* Unit tests for serve/: the bodies a scrape gets (data age at scrape time, # EOF, JSON
 * without command lines) and the HTTP side on a real loopback socket: status codes, content
 * types, read-only methods, oversized and malformed requests, idle clients, IPv6. */
#include "facts_builder.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "serve/exporter.h"
#include "serve/http.h"
#include "serve/serve_run.h"
#include "util/deadline.h"

static void test_parse_listen(void **state)
{
        (void)state;
        struct sockaddr_storage ss;
        socklen_t len;
        assert_int_equal(http_parse_listen("127.0.0.1:9835", &ss, &len), 0);
        assert_int_equal(ss.ss_family, AF_INET);
        assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 9835);
        assert_int_equal(len, sizeof(struct sockaddr_in));
        assert_int_equal(http_parse_listen("[::1]:9835", &ss, &len), 0);
        assert_int_equal(ss.ss_family, AF_INET6);
        assert_int_equal(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port), 9835);
        assert_int_equal(http_parse_listen("0.0.0.0:0", &ss, &len), 0);
        /* ":PORT" every IPv4 address, "localhost:PORT" the loopback */
        assert_int_equal(http_parse_listen(":9835", &ss, &len), 0);
        assert_int_equal(ss.ss_family, AF_INET);
        assert_int_equal(((struct sockaddr_in *)&ss)->sin_addr.s_addr, htonl(INADDR_ANY));
        assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 9835);
        assert_int_equal(http_parse_listen("localhost:9835", &ss, &len), 0);
        assert_int_equal(((struct sockaddr_in *)&ss)->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
        assert_int_equal(http_parse_listen("localhostx:9835", &ss, &len), -EINVAL);
        assert_int_equal(http_parse_listen(":", &ss, &len), -EINVAL);
        assert_int_equal(http_parse_listen("[::]:80", &ss, &len), 0);
        static const char *const bad[] = { "", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536",
                                           "[::1]9835", "::1:9835", "[::1]:x", "1.2.3.4:80:90", "[127.0.0.1]:80",
                                           "::1", "127.0.0.1:-1", "127.0.0.1:+80x", "[::1]:" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (http_parse_listen(bad[i], &ss, &len) != -EINVAL)
                        fail_msg("'%s' accepted", bad[i]);
}

/* The body a scrape sends: the published metrics, then the tail. */
static char *metrics_body(const struct exporter_bodies *b, enum metrics_format fmt, double now)
{
        char tail[EXPORTER_TAIL_MAX];
        size_t n;
        assert_int_equal(exporter_metrics_tail(b, fmt, now, tail, sizeof(tail), &n), 0);
        assert_int_equal(strlen(tail), n);
        struct buf out = BUF_INIT(0);
        assert_int_equal(buf_append(&out, b->metrics[fmt], b->metrics_len[fmt]), 0);
        assert_int_equal(buf_append(&out, tail, n), 0);
        return buf_steal(&out);
}

static void test_bodies(void **state)
{
        (void)state;
        struct facts *f = killed_job(1, 0, true);
        finish(f, NULL, 0);
        free(f->host->holders[0].cmdline);
        f->host->holders[0].cmdline = strdup("python train.py --token=s3cr3t");
        struct scan_result *r = build(f, f);
        struct metrics_counters c = { .scans_full = 1 };
        struct exporter_published p = { 0 };

        /* before any scan: no data age, no JSON */
        struct exporter_bodies *b = exporter_compose(&p, &c, "starting");
        char *body = metrics_body(b, METRICS_TEXT_004, 100.0);
        assert_null(strstr(body, "ghostvram_data_age_seconds"));
        assert_null(strstr(body, "ghostvram_gpu_"));
        assert_non_null(strstr(body, "ghostvram_scans_total{mode=\"full\"} 1\n"));
        free(body);
        /* a tail buffer too small is an error, not a cut */
        char tiny[4]; /* "# EOF\n" does not fit */
        size_t len;
        assert_int_equal(exporter_metrics_tail(b, METRICS_OPENMETRICS, 100.0, tiny, sizeof(tiny), &len), -E2BIG);
        assert_null(b->scan_json);
        assert_false(b->have_data);
        assert_string_equal(b->status, "starting");
        exporter_bodies_put(b);

        assert_int_equal(exporter_publish(&p, r, 0.25, 1700000000.0, 50.0, false, "full"), 0);
        b = exporter_compose(&p, &c, NULL);
        assert_true(b->have_data);
        body = metrics_body(b, METRICS_TEXT_004, 57.5);
        assert_non_null(strstr(body, "\nghostvram_data_age_seconds 7.500\n"));
        assert_non_null(strstr(body, "kind=\"ghost\"} 2147483648\n"));
        assert_non_null(strstr(body, "\nghostvram_scan_duration_seconds 0.250000\n"));
        assert_null(strstr(body, "# EOF"));
        free(body);
        body = metrics_body(b, METRICS_OPENMETRICS, 60.0);
        len = strlen(body);
        assert_true(len > 6 && strcmp(body + len - 6, "# EOF\n") == 0);
        assert_non_null(strstr(body, "\nghostvram_data_age_seconds 10.000\n# EOF\n"));
        free(body);
        /* the JSON: a document with the walk, no command line */
        assert_non_null(b->scan_json);
        assert_int_equal(b->scan_json[b->scan_json_len - 1], '\n');
        assert_null(strstr(b->scan_json, "s3cr3t"));
        json_error_t err;
        json_t *doc = json_loads(b->scan_json, 0, &err);
        assert_non_null(doc);
        assert_string_equal(json_string_value(json_object_get(doc, "walk")), "full");
        assert_int_equal(json_array_size(json_object_get(doc, "gpus")), 1);
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "gpus"), 0), "verdict")),
                            "orphaned-holders");
        json_decref(doc);
        exporter_bodies_put(b);

        /* --expose-cmdline */
        assert_int_equal(exporter_publish(&p, r, 0.25, 1700000000.0, 50.0, true, "light"), 0);
        b = exporter_compose(&p, &c, NULL);
        assert_non_null(strstr(b->scan_json, "s3cr3t"));
        assert_non_null(strstr(b->scan_json, "\"walk\":\"light\""));
        /* a reference taken by a scrape outlives a newer publication */
        atomic_fetch_add(&b->refs, 1);
        exporter_bodies_put(b);
        assert_non_null(strstr(b->scan_json, "s3cr3t"));
        exporter_bodies_put(b);
        exporter_published_clear(&p);
        scan_result_free(r);
        facts_destroy(f);
}

/* ---- HTTP on a real socket -------------------------------------------------------------------- */

static int dial(int family, uint16_t port)
{
        int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        struct timeval tv = { .tv_sec = 5 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        int r;
        if (family == AF_INET) {
                struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
                a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                r = connect(fd, (struct sockaddr *)&a, sizeof(a));
        } else {
                struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
                a.sin6_addr = in6addr_loopback;
                r = connect(fd, (struct sockaddr *)&a, sizeof(a));
        }
        assert_int_equal(r, 0);
        return fd;
}

/* Send req, read the answer until the server closes (requests say Connection: close). */
static char *exchange_fd(int fd, const char *req, size_t reqlen)
{
        size_t off = 0;
        while (off < reqlen) {
                ssize_t w = send(fd, req + off, reqlen - off, MSG_NOSIGNAL);
                if (w <= 0)
                        break;  /* the server may close early on a bad request */
                off += (size_t)w;
        }
        struct buf b = BUF_INIT(4u << 20);
        char tmp[4096];
        ssize_t n;
        while ((n = recv(fd, tmp, sizeof(tmp), 0)) > 0)
                assert_int_equal(buf_append(&b, tmp, (size_t)n), 0);
        close(fd);
        return buf_steal(&b);
}

static char *exchange(int family, uint16_t port, const char *req)
{
        return exchange_fd(dial(family, port), req, strlen(req));
}

static char *get(uint16_t port, const char *path, const char *extra)
{
        char req[1024];
        snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\n%sConnection: close\r\n\r\n", path,
                 extra ? extra : "");
        return exchange(AF_INET, port, req);
}

static void assert_status(const char *resp, const char *status)
{
        if (strncmp(resp, status, strlen(status)) != 0)
                fail_msg("expected '%s', got '%.60s'", status, resp);
}

struct server {
        struct exporter *e;
        struct http_server *h;
        uint16_t port;
};

/* The exporter options of a host without a driver (fast cycles). */
static void no_driver_exporter(struct exporter_opts *eo)
{
        memset(eo, 0, sizeof(*eo));
        eo->sampler.facts.gpu.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
        eo->sampler.facts.gpu.timeout_ms = 1000;
        eo->sampler.facts.host.proc_root = "/proc";
        eo->sampler.facts.host.dev_prefix = "/nonexistent/nvidia";
        eo->sampler.facts.host.timeout_ms = 1000;
        ledger_opts_default(&eo->sampler.ledger);
        eo->sampler.light = true;
        eo->interval_ms = 200;
        eo->stale_after_s = 30;
}

static void server_start(struct server *s, const char *listen, unsigned max_conns, unsigned timeout_s)
{
        struct exporter_opts eo;
        no_driver_exporter(&eo);
        assert_int_equal(exporter_start(&eo, &s->e), 0);
        struct http_opts ho = { .listen = listen, .max_connections = max_conns, .timeout_s = timeout_s };
        assert_int_equal(http_server_start(&ho, s->e, &s->h), 0);
        s->port = http_server_port(s->h);
        assert_true(s->port != 0);
}

static void server_stop(struct server *s)
{
        http_server_stop(s->h);
        exporter_stop(s->e);
}

static void test_http(void **state)
{
        (void)state;
        struct server s;
        server_start(&s, "127.0.0.1:0", 16, 2);

        /* /healthz turns 200 once the first collection is published */
        unsigned long long until = monotonic_ms() + 10000;
        char *r = NULL;
        for (;;) {
                r = get(s.port, "/healthz", NULL);
                if (strncmp(r, "HTTP/1.1 200", 12) == 0 || monotonic_ms() > until)
                        break;
                /* no answer within the client's own timeout (the first collection loads the BPF
                 * iterators, slow under valgrind): not ready yet; any answer before 200 is 503 */
                if (r[0])
                        assert_status(r, "HTTP/1.1 503");
                free(r);
                usleep(50000);
        }
        assert_status(r, "HTTP/1.1 200");
        assert_non_null(strstr(r, "\r\n\r\nok: data is "));
        free(r);

        r = get(s.port, "/metrics", NULL);
        assert_status(r, "HTTP/1.1 200 OK\r\n");
        assert_non_null(strstr(r, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
        assert_non_null(strstr(r, "\r\n\r\n# HELP ghostvram_build_info "));
        assert_non_null(strstr(r, "\nghostvram_data_age_seconds "));
        assert_non_null(strstr(r, "ghostvram_scan_errors_total{source=\"gpu\"} ")); /* no driver here */
        assert_null(strstr(r, "# EOF"));
        free(r);

        r = get(s.port, "/metrics", "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n");
        assert_status(r, "HTTP/1.1 200 OK\r\n");
        assert_non_null(strstr(r, "\r\nContent-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"));
        size_t len = strlen(r);
        assert_true(strcmp(r + len - 6, "# EOF\n") == 0);
        free(r);

        r = get(s.port, "/api/v1/scan", NULL);
        assert_status(r, "HTTP/1.1 200 OK\r\n");
        assert_non_null(strstr(r, "\r\nContent-Type: application/json\r\n"));
        assert_non_null(strstr(r, "\"schema_version\""));
        free(r);

        r = get(s.port, "/nope", NULL);
        assert_status(r, "HTTP/1.1 404");
        free(r);
        r = get(s.port, "/metrics?x=1", NULL);
        assert_status(r, "HTTP/1.1 200");
        free(r);

        /* read-only: every other method gets 405 with Allow, a body is never read */
        static const char *const methods[] = { "POST", "PUT", "DELETE", "PATCH", "OPTIONS" };
        for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
                char req[256];
                snprintf(req, sizeof(req), "%s /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                         methods[i]);
                r = exchange(AF_INET, s.port, req);
                assert_status(r, "HTTP/1.1 405");
                assert_non_null(strstr(r, "\r\nAllow: GET, HEAD\r\n"));
                free(r);
        }
        r = exchange(AF_INET, s.port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert_status(r, "HTTP/1.1 200");
        assert_non_null(strstr(r, "\r\n\r\n"));
        assert_string_equal(strstr(r, "\r\n\r\n"), "\r\n\r\n"); /* no body */
        free(r);

        /* malformed and oversized requests: an error or a closed connection, never a crash */
        r = exchange(AF_INET, s.port, "GARBAGE\r\n\r\n");
        assert_true(r[0] == '\0' || strncmp(r, "HTTP/1.1 4", 10) == 0);
        free(r);
        r = exchange(AF_INET, s.port, "GET /metrics HTTP/1.1\r\nHost: x\r\nBad Header\r\nConnection: close\r\n\r\n");
        assert_true(r[0] == '\0' || strncmp(r, "HTTP/1.1 4", 10) == 0);
        free(r);
        size_t big = 256 * 1024;
        char *huge = malloc(big + 128);
        int n = snprintf(huge, 128, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
        memset(huge + n, 'a', big);
        memcpy(huge + n + big, "\r\n\r\n", 5);
        r = exchange_fd(dial(AF_INET, s.port), huge, (size_t)n + big + 4);
        assert_true(r[0] == '\0' || strncmp(r, "HTTP/1.1 431", 12) == 0 || strncmp(r, "HTTP/1.1 413", 12) == 0 ||
                    strncmp(r, "HTTP/1.1 400", 12) == 0);
        free(r);
        memcpy(huge, "GET /", 5);
        memset(huge + 5, 'p', big);
        memcpy(huge + 5 + big, " HTTP/1.1\r\n\r\n", 14);
        r = exchange_fd(dial(AF_INET, s.port), huge, 5 + big + 13);
        assert_true(r[0] == '\0' || strncmp(r, "HTTP/1.1 414", 12) == 0 || strncmp(r, "HTTP/1.1 4", 10) == 0);
        free(r);
        free(huge);

        /* idle clients hold every slot; they are dropped after the timeout and service resumes */
        int idle[40];
        for (size_t i = 0; i < 40; i++) {
                idle[i] = dial(AF_INET, s.port);
                send(idle[i], "GET /metr", 9, MSG_NOSIGNAL);
        }
        usleep(3500 * 1000);
        r = get(s.port, "/metrics", NULL);
        assert_status(r, "HTTP/1.1 200");
        free(r);
        for (size_t i = 0; i < 40; i++)
                close(idle[i]);
        /* keep-alive: two requests on one connection */
        r = exchange(AF_INET, s.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        const char *second = strstr(r + 1, "HTTP/1.1 200");
        assert_status(r, "HTTP/1.1 200");
        assert_non_null(second);
        free(r);
        server_stop(&s);
}

static void test_http_ipv6(void **state)
{
        (void)state;
        int probe = socket(AF_INET6, SOCK_STREAM, 0);
        struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
        if (probe < 0 || bind(probe, (struct sockaddr *)&a, sizeof(a)) < 0) {
                if (probe >= 0)
                        close(probe);
                skip(); /* no IPv6 loopback in this sandbox */
        }
        close(probe);
        struct server s;
        server_start(&s, "[::1]:0", 8, 2);
        char *r = exchange(AF_INET6, s.port, "GET /metrics HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n");
        assert_status(r, "HTTP/1.1 200");
        free(r);
        server_stop(&s);
}

/* What serve_run's wait saw while it served. */
struct run_probe {
        FILE *out;
        char **text;            /* the memstream's buffer */
        uint16_t port;
        char *index, *missing;  /* the answers to GET / and GET /nope */
        unsigned waits;
};

static bool probe_wait(void *ctx, uint64_t ms)
{
        struct run_probe *p = ctx;
        assert_true(ms == UINT64_MAX);
        p->waits++;
        fflush(p->out);
        const char *at = strstr(*p->text, "listening on http://127.0.0.1:");
        assert_non_null(at);
        p->port = (uint16_t)atoi(at + strlen("listening on http://127.0.0.1:"));
        assert_true(p->port != 0);
        p->index = get(p->port, "/", NULL);
        p->missing = get(p->port, "/nope", NULL);
        return false;
}

static struct serve_run_opts run_opts(struct run_probe *p, const char *listen)
{
        struct serve_run_opts o;
        memset(&o, 0, sizeof(o));
        no_driver_exporter(&o.exporter);
        o.http = (struct http_opts){ .listen = listen, .max_connections = 4, .timeout_s = 2 };
        o.family = AF_INET;
        o.simulated = true;
        o.out = p->out;
        o.wait = probe_wait;
        o.ctx = p;
        return o;
}

/* serve's use case: the line names the port picked (port 0), the server answers while the wait
 * runs, then "stopping" and nothing is left listening. */
static void test_serve_run(void **state)
{
        (void)state;
        char *text = NULL;
        size_t len = 0;
        struct run_probe p = { .text = &text };
        p.out = open_memstream(&text, &len);
        assert_non_null(p.out);
        struct serve_run_opts o = run_opts(&p, "127.0.0.1:0");
        enum serve_fail fail = SERVE_FAIL_COLLECTOR;
        assert_int_equal(serve_run(&o, &fail), 0);
        assert_int_equal(fail, SERVE_FAIL_NONE);
        assert_int_equal(p.waits, 1);
        assert_status(p.index, "HTTP/1.1 200");
        assert_status(p.missing, "HTTP/1.1 404");
        fclose(p.out);
        char want[256];
        snprintf(want, sizeof(want),
                 "ghostvram serve: listening on http://127.0.0.1:%u/metrics (collection every 0.2 s, SIMULATED HOST; "
                 "the page: http://127.0.0.1:%u/)\nghostvram serve: stopping\n", p.port, p.port);
        assert_string_equal(text, want);
        /* nothing listens any more */
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(p.port) };
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), -1);
        assert_int_equal(errno, ECONNREFUSED);
        close(fd);
        free(p.index);
        free(p.missing);
        free(text);
}

/* A port another server holds: the HTTP side fails, the collector is stopped, nothing said. */
static void test_serve_run_port_taken(void **state)
{
        (void)state;
        struct server s;
        server_start(&s, "127.0.0.1:0", 4, 2);
        char listen[64];
        snprintf(listen, sizeof(listen), "127.0.0.1:%u", s.port);
        char *text = NULL;
        size_t len = 0;
        struct run_probe p = { .text = &text };
        p.out = open_memstream(&text, &len);
        assert_non_null(p.out);
        struct serve_run_opts o = run_opts(&p, listen);
        enum serve_fail fail = SERVE_FAIL_NONE;
        assert_true(serve_run(&o, &fail) < 0);
        assert_int_equal(fail, SERVE_FAIL_LISTEN);
        assert_int_equal(p.waits, 0);
        fclose(p.out);
        assert_string_equal(text, "");
        free(text);
        char *r = get(s.port, "/nope", NULL); /* the first server still answers */
        assert_status(r, "HTTP/1.1 404");
        free(r);
        server_stop(&s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_listen),
                cmocka_unit_test(test_bodies),
                cmocka_unit_test(test_http),
                cmocka_unit_test(test_http_ipv6),
                cmocka_unit_test(test_serve_run),
                cmocka_unit_test(test_serve_run_port_taken),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
