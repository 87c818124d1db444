/* page_render: what serve's page costs with a full history: 8 GPUs with LIVE_HISTORY_MAX
 * points each (a ghost coming and going), 40 process rows; renders the page N times and prints
 * the median and worst render time, the page's size and the history's memory. The page is
 * rendered once per collection, on the collection thread; a request never renders. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render/live_view.h"
#include "serve/page.h"

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
        int runs = argc > 1 ? atoi(argv[1]) : 200;
        if (runs < 1 || runs > 100000)
                runs = 200;
        struct live_view v;
        memset(&v, 0, sizeof(v));
        struct live_gpu gpus[8];
        struct live_row rows[40];
        memset(gpus, 0, sizeof(gpus));
        memset(rows, 0, sizeof(rows));
        v.gpus = gpus;
        v.n_gpus = 8;
        v.rows = rows;
        v.n_rows = 40;
        v.finished = 1.8e9;
        v.driver_present = true;
        v.full_visibility = true;
        for (unsigned i = 0; i < 8; i++) {
                struct live_gpu *g = &gpus[i];
                g->index = i;
                snprintf(g->name, sizeof(g->name), "NVIDIA H100 80GB HBM3");
                snprintf(g->bus, sizeof(g->bus), "0000:%02x:00.0", 0x1b + i);
                g->inspected = g->reserved_known = true;
                g->total = 80ull << 30;
                g->kind[LIVE_RESERVED] = 512ull << 20;
                g->kind[i < 4 ? LIVE_GHOST : LIVE_LISTED] = (uint64_t)(i + 1) << 30;
                g->used = g->kind[LIVE_GHOST] + g->kind[LIVE_LISTED];
                snprintf(g->verdict, sizeof(g->verdict), i < 4 ? "orphaned-holders" : "ok");
                snprintf(g->confidence, sizeof(g->confidence), "high");
                str_setf(&g->summary, "a summary of what holds GPU %u's memory", i);
        }
        for (unsigned i = 0; i < 40; i++) {
                struct live_row *w = &rows[i];
                w->pid = (pid_t)(31300 + i);
                w->gpu = (int)(i / 5);
                w->listed_bytes = i % 5 ? -1 : 1 << 30;
                w->state = 'S';
                snprintf(w->user, sizeof(w->user), "alice");
                str_setf(&w->role, i % 5 ? "worker of dead PID %u" : "owner", 31300 + i / 5 * 5);
                str_setf(&w->link, "worker of dead PID %u, same process group", 31300 + i / 5 * 5);
                str_setf(&w->detail, "nvidiactl(fd) nvidia-uvm(fd,mmap) nvidia%u(fd)  ppid 1", i / 5);
                snprintf(w->comm, sizeof(w->comm), "pt_data_worker");
        }
        struct live_history h = { 0 };
        for (unsigned t = 0; t < LIVE_HISTORY_MAX; t++) {
                for (unsigned i = 0; i < 4; i++)
                        gpus[i].kind[LIVE_GHOST] = (t / 60) % 2 ? (uint64_t)(i + 1) << 30 : 0;
                live_history_add(&h, &v, v.finished - LIVE_HISTORY_MAX + t);
        }
        double *ms = calloc((size_t)runs, sizeof(double));
        size_t size = 0;
        struct page_opts po = { .refresh_s = 15, .now = v.finished, .age_s = 0.2, .stale_after_s = 60, .status = "" };
        for (int r = 0; r < runs; r++) {
                struct buf out = BUF_INIT(16u << 20);
                double t0 = now_ms();
                if (page_render(&out, &v, &h, &po) < 0) {
                        fprintf(stderr, "page_render failed\n");
                        return 1;
                }
                ms[r] = now_ms() - t0;
                size = out.len;
                buf_free(&out);
        }
        qsort(ms, (size_t)runs, sizeof(double), cmp);
        printf("page with 8 GPUs x %u points, 40 rows: %zu bytes; render median %.3f ms, max %.3f ms (%d runs); "
               "history %zu bytes (%zu a GPU, %zu a point)\n",
               LIVE_HISTORY_MAX, size, ms[runs / 2], ms[runs - 1], runs, live_history_bytes(&h),
               sizeof(struct live_ring), sizeof(struct live_point));
        free(ms);
        live_history_free(&h);
        for (unsigned i = 0; i < 8; i++)
                free(gpus[i].summary);
        for (unsigned i = 0; i < 40; i++) {
                free(rows[i].role);
                free(rows[i].link);
                free(rows[i].detail);
        }
        return 0;
}
