/* gv_top_frame: how long one frame of `ghostvram top` takes to draw, at fleet size.
 *
 * A view of --gpus GPUs (every figure set) and --procs processes (owners, workers tied to them,
 * a dead job's workers, monitors), each GPU's history ring full (LIVE_HISTORY_MAX points), is
 * drawn --runs times into a COLSxROWS canvas: sorted by GPU, by %CPU (a numeric key), and as a
 * tree, the rows filtered by a text in a fourth pass. Prints the median and the slowest frame
 * of each, in microseconds. No terminal, no driver: top_draw is what every frame runs on the
 * main thread (painting the grid with curses then writes only the cells that changed). */
#define _GNU_SOURCE 1
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render/live_view.h"
#include "render/top_screen.h"
#include "util/parse.h"
#include "util/strf.h"

static double now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static void build_view(struct live_view *v, unsigned n_gpus, unsigned n_procs, double t0)
{
        memset(v, 0, sizeof(*v));
        v->finished = t0;
        v->driver_present = v->full_walk = v->simulated = true;
        v->gpus = calloc(n_gpus, sizeof(*v->gpus));
        v->rows = calloc(n_procs, sizeof(*v->rows));
        v->n_gpus = n_gpus;
        for (unsigned g = 0; g < n_gpus; g++) {
                struct live_gpu *x = &v->gpus[g];
                x->index = g;
                snprintf(x->name, sizeof(x->name), "NVIDIA H100 80GB HBM3");
                snprintf(x->bus, sizeof(x->bus), "0000:%02x:00.0", 0x1b + g);
                x->inspected = x->reserved_known = true;
                x->total = 80ull << 30;
                x->kind[LIVE_RESERVED] = 512ull << 20;
                x->kind[LIVE_LISTED] = (uint64_t)(g + 1) << 32;
                x->kind[LIVE_GHOST] = g == 3 ? 4ull << 30 : 0;
                x->used = x->kind[LIVE_LISTED] + x->kind[LIVE_GHOST];
                snprintf(x->verdict, sizeof(x->verdict), g == 3 ? "orphaned-holders" : "ok");
                snprintf(x->confidence, sizeof(x->confidence), "high");
                str_set(&x->summary, g == 3 ? "4096 MiB ghost held by 24 orphaned processes of a dead job"
                                            : "every byte accounted for");
                gpu_telemetry_unknown(&x->tel);
                x->tel = (struct gpu_telemetry){ .queried = true, .util_gpu = (int)(g * 12 % 100), .util_mem = 30,
                                                 .temp_c = 60, .power_mw = 400000, .power_limit_mw = 700000,
                                                 .clock_sm_mhz = 1980, .clock_mem_mhz = 2619, .fan_pct = -1,
                                                 .pcie_tx_kbs = 1200, .pcie_rx_kbs = 3400, .enc_pct = 0, .dec_pct = 0 };
                x->health_queried = true;
                x->remap_pending = x->remap_failed = x->retired_pending = 0;
        }
        for (unsigned i = 0; i < n_procs; i++) {
                struct live_row *w = &v->rows[v->n_rows++];
                unsigned g = i % n_gpus, job = i / n_gpus;
                pid_t owner = (pid_t)(10000 + g * 1000);
                w->pid = job ? (pid_t)(owner + (pid_t)job) : owner;
                w->ppid = job ? owner : 1;
                w->tie_pid = job ? owner : 0;
                w->gpu = (int)g;
                w->state = 'S';
                snprintf(w->user, sizeof(w->user), "user%u", g);
                snprintf(w->comm, sizeof(w->comm), job ? "pt_data_worker" : "python");
                w->listed_bytes = job ? -1 : (int64_t)(g + 1) << 32;
                w->sm_util = job ? 0 : v->gpus[g].tel.util_gpu;
                w->cpu_pct = (double)((i * 37) % 1000) / 10.0;
                w->rss_known = w->cpu_known = true;
                w->rss_bytes = (uint64_t)(1 + i % 8) << 30;
                w->start_time = t0 - 3600 - i;
                w->mig_instance = GPU_INSTANCE_NONE;
                w->ghost_holder = g == 3 && job;
                str_set(&w->role, !job ? "owner" : g == 3 ? "worker of dead PID 13000" : "worker of live PID 10000");
                str_set(&w->link, job ? "same process group" : "alive here");
                str_set(&w->detail, "nvidiactl(fd,mmap) nvidia-uvm(fd,mmap) nvidia0(fd,mmap)  ppid 1");
                str_set(&w->cmdline, "python train.py --config configs/large.yaml --data /datasets/imagenet");
        }
}

int main(int argc, char **argv)
{
        unsigned n_gpus = 8, n_procs = 200, runs = 200, cols = 200, rows = 60;
        static const struct option opts[] = { { "gpus", required_argument, NULL, 'g' },
                                              { "procs", required_argument, NULL, 'p' },
                                              { "runs", required_argument, NULL, 'r' },
                                              { "cols", required_argument, NULL, 'c' },
                                              { "rows", required_argument, NULL, 'l' },
                                              { 0 } };
        int o;
        while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                unsigned *dst = o == 'g' ? &n_gpus : o == 'p' ? &n_procs : o == 'r' ? &runs : o == 'c' ? &cols : &rows;
                if (o == '?' || parse_uint_range(optarg, 1, o == 'p' ? LIVE_MAX_ROWS : 100000, dst) < 0) {
                        fprintf(stderr, "usage: gv_top_frame [--gpus N] [--procs N (<= %d)] [--runs N] [--cols N] [--rows N]\n",
                                LIVE_MAX_ROWS);
                        return 2;
                }
        }
        double t0 = 1.8e9;
        struct live_view v;
        build_view(&v, n_gpus, n_procs, t0);
        struct live_history h = { 0 };
        for (unsigned i = 0; i < LIVE_HISTORY_MAX; i++)
                live_history_add(&h, &v, t0 - LIVE_HISTORY_MAX + i);
        struct top_canvas c = { 0 };
        top_canvas_resize(&c, (int)rows, (int)cols);
        static const struct {
                const char *name;
                enum top_sort sort;
                bool tree;
                const char *filter;
        } modes[] = { { "sorted by gpu", TOP_SORT_GPU, false, "" },
                      { "sorted by %CPU", TOP_SORT_CPU, false, "" },
                      { "tree", TOP_SORT_GPU, true, "" },
                      { "filtered (/worker)", TOP_SORT_GPU, false, "worker" } };
        double *t = calloc(runs, sizeof(*t));
        printf("%u GPUs, %u processes, history %d points a GPU, a %ux%u screen, %u frames each:\n\n", n_gpus, n_procs,
               LIVE_HISTORY_MAX, cols, rows, runs);
        printf("| frame | median (us) | slowest (us) |\n| --- | ---: | ---: |\n");
        for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
                struct top_state s = { .now = t0 + 0.5, .interval_s = 1, .focus = -1, .stale_after_s = 4, .status = "",
                                       .message = "", .sort = modes[m].sort, .tree = modes[m].tree,
                                       .filter = modes[m].filter };
                for (unsigned r = 0; r < runs; r++) {
                        double a = now_us();
                        top_draw(&c, &v, &h, &s);
                        t[r] = now_us() - a;
                }
                qsort(t, runs, sizeof(*t), cmp_d);
                printf("| %s | %.0f | %.0f |\n", modes[m].name, t[runs / 2], t[runs - 1]);
        }
        free(t);
        top_canvas_free(&c);
        live_history_free(&h);
        return 0;
}
