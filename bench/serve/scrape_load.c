#define _GNU_SOURCE 1 /* strcasestr */
/* scrape_load: concurrent HTTP GETs against one URL on loopback, for `ghostvram serve`'s
 * benchmark (bench/serve/run). Each of --conns threads sends --requests / --conns requests,
 * on one keep-alive connection (or a new connection each, with --new-conn), checks every answer
 * (status 200, the body's length, a marker string) and records its latency: from the first byte
 * sent to the last byte of the body. Prints the median, p90, p99 and max in milliseconds and
 * the throughput as a markdown table row. Bench code: no cmocka, no ghostvram_core. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct opts {
        unsigned port, conns, requests;
        const char *path, *accept, *marker, *label;
        int new_conn;
};

struct worker {
        const struct opts *o;
        unsigned n;
        double *lat;            /* seconds, n of them */
        unsigned errors;
        pthread_t t;
};

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dial(unsigned port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -1;
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct timeval tv = { .tv_sec = 10 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

/* One request on fd; 0 when the answer is a complete 200 with the marker in its body. */
static int one_request(int fd, const struct opts *o, const char *req, size_t reqlen, char *buf, size_t bufsz)
{
        if (send(fd, req, reqlen, MSG_NOSIGNAL) != (ssize_t)reqlen)
                return -1;
        size_t have = 0, need = 0, body_at = 0;
        for (;;) {
                if (have + 1 >= bufsz)
                        return -1;
                ssize_t r = recv(fd, buf + have, bufsz - 1 - have, 0);
                if (r <= 0)
                        return -1;
                have += (size_t)r;
                buf[have] = '\0';
                if (!body_at) {
                        char *end = strstr(buf, "\r\n\r\n");
                        if (!end)
                                continue;
                        body_at = (size_t)(end - buf) + 4;
                        if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
                                return -1;
                        char *cl = strcasestr(buf, "\r\nContent-Length:");
                        if (!cl || cl > end)
                                return -1;
                        need = body_at + strtoul(cl + 17, NULL, 10);
                }
                if (have >= need)
                        break;
        }
        return have == need && strstr(buf + body_at, o->marker) ? 0 : -1;
}

static void *worker_main(void *p)
{
        struct worker *w = p;
        const struct opts *o = w->o;
        char req[512];
        int reqlen = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%s\r\n", o->path,
                              o->accept ? "Accept: " : "", o->accept ? o->accept : "", o->accept ? "\r\n" : "");
        size_t bufsz = 8u << 20;
        char *buf = malloc(bufsz);
        int fd = -1;
        for (unsigned i = 0; i < w->n && buf; i++) {
                double t0 = now_s();
                if (fd < 0)
                        fd = dial(o->port);
                int r = fd < 0 ? -1 : one_request(fd, o, req, (size_t)reqlen, buf, bufsz);
                w->lat[i] = now_s() - t0;
                if (r < 0) {
                        w->errors++;
                        w->lat[i] = -1;
                }
                if (r < 0 || o->new_conn) {
                        if (fd >= 0)
                                close(fd);
                        fd = -1;
                }
        }
        if (fd >= 0)
                close(fd);
        free(buf);
        return NULL;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
        struct opts o = { .conns = 16, .requests = 2000, .path = "/metrics", .marker = "ghostvram_data_age_seconds" };
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
                if (!strcmp(a, "--port") && v) { o.port = (unsigned)strtoul(v, NULL, 10); i++; }
                else if (!strcmp(a, "--conns") && v) { o.conns = (unsigned)strtoul(v, NULL, 10); i++; }
                else if (!strcmp(a, "--requests") && v) { o.requests = (unsigned)strtoul(v, NULL, 10); i++; }
                else if (!strcmp(a, "--path") && v) { o.path = v; i++; }
                else if (!strcmp(a, "--accept") && v) { o.accept = v; i++; }
                else if (!strcmp(a, "--marker") && v) { o.marker = v; i++; }
                else if (!strcmp(a, "--label") && v) { o.label = v; i++; }
                else if (!strcmp(a, "--new-conn")) { o.new_conn = 1; }
                else {
                        fprintf(stderr, "usage: scrape_load --port P [--conns C] [--requests N] [--path /metrics] "
                                        "[--accept TYPE] [--marker TEXT] [--label TEXT] [--new-conn]\n");
                        return 2;
                }
        }
        if (!o.port || !o.conns || o.requests < o.conns || o.conns > 4096) {
                fprintf(stderr, "scrape_load: --port, and --requests >= --conns (<= 4096) please\n");
                return 2;
        }
        struct worker *w = calloc(o.conns, sizeof(*w));
        double *all = calloc(o.requests, sizeof(double));
        if (!w || !all)
                return 1;
        unsigned per = o.requests / o.conns, total = per * o.conns;
        double t0 = now_s();
        for (unsigned i = 0; i < o.conns; i++) {
                w[i] = (struct worker){ .o = &o, .n = per, .lat = all + (size_t)i * per };
                if (pthread_create(&w[i].t, NULL, worker_main, &w[i]) != 0) {
                        fprintf(stderr, "scrape_load: cannot start thread %u\n", i);
                        return 1;
                }
        }
        unsigned errors = 0;
        for (unsigned i = 0; i < o.conns; i++) {
                pthread_join(w[i].t, NULL);
                errors += w[i].errors;
        }
        double wall = now_s() - t0;
        size_t n = 0;
        for (unsigned i = 0; i < total; i++)
                if (all[i] >= 0)
                        all[n++] = all[i];
        qsort(all, n, sizeof(double), cmp);
        if (!n) {
                printf("no answer (%u errors)\n", errors);
                return 1;
        }
#define PCT(p) (all[(size_t)((double)(n - 1) * (p))] * 1000.0)
        printf("| %s | %u | %s | %zu | %u | %.3f | %.3f | %.3f | %.3f | %.0f |\n", o.label ? o.label : o.path, o.conns,
               o.new_conn ? "new each" : "keep-alive", n, errors, PCT(0.5), PCT(0.9), PCT(0.99), all[n - 1] * 1000.0,
               (double)n / wall);
        free(all);
        free(w);
        return errors ? 1 : 0;
}
