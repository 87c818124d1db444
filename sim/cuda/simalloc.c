/* gv-simalloc: an allocation-heavy CUDA program on the simulated libcuda.so.1, for the tests
 * and the benchmark of `ghostvram track` (docs/track.md). Not started by `sim run`.
 *
 * It initialises CUDA on GHOSTVRAM_SIM's host (or --dir), creates a context on --gpu, then in
 * each of --threads threads makes --allocs allocations of --size bytes through --route, freeing
 * every --free-every-th one right after it (0: none), and exits 0 leaving the rest allocated
 * (a leak for the leak check) — or, with --loop, allocates and frees forever (a process for
 * the crash test to kill at random instants). --fork-first C forks C children before CUDA is
 * initialised (the pattern of a multiprocessing pool started before CUDA): each does the same
 * work in its own context; the parent waits for them. --no-cuda-child forks one child after
 * the work that allocates nothing (it must leave no ledger). Prints "ready PID" on stdout
 * before the work and "done N" after it. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simcuda_api.h"
#include "util/parse.h"

struct opts {
        unsigned gpu, threads, free_every, fork_first;
        uint64_t allocs, size;
        bool loop, no_cuda_child;
        const char *route;
};

static struct opts o = { .threads = 1, .allocs = 1, .size = 1 << 20, .route = "symbol" };
static cu_mem_alloc_fn alloc_fn;
static cu_mem_free_fn free_fn;
static cu_mem_alloc_async_fn async_alloc_fn;
static cu_mem_free_async_fn async_free_fn;

/* the stream-ordered pair behind the plain signatures (the default stream) */
static CUresult via_async_alloc(CUdeviceptr *p, size_t n)
{
        return async_alloc_fn(p, n, NULL);
}
static CUresult via_async_free(CUdeviceptr p)
{
        return async_free_fn(p, NULL);
}

static void usage(FILE *f)
{
        fprintf(f, "Usage: gv-simalloc [--dir DIR] --gpu I [--allocs N] [--size BYTES] [--free-every K]\n"
                   "                   [--threads T] [--fork-first C] [--no-cuda-child] [--loop]\n"
                   "                   [--route symbol|procaddr|ptsz|managed|pitch]\n"
                   "ptsz: cuMemAllocAsync/cuMemFreeAsync through cuGetProcAddress_v2 with\n"
                   "CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (the _ptsz variants)\n");
}

static CUresult one(CUdeviceptr *p)
{
        size_t pitch;
        if (strcmp(o.route, "managed") == 0)
                return cuMemAllocManaged(p, o.size, 1);
        if (strcmp(o.route, "pitch") == 0)
                return cuMemAllocPitch_v2(p, &pitch, o.size, 1, 4);
        return alloc_fn(p, o.size);
}

static void *work(void *arg)
{
        uint64_t *done = arg;
        for (uint64_t i = 0; o.loop || i < o.allocs; i++) {
                CUdeviceptr p;
                if (one(&p) != CUDA_SUCCESS) {
                        fprintf(stderr, "gv-simalloc: allocation %llu: %s\n", (unsigned long long)i, gvsim_last_error());
                        return NULL;
                }
                (*done)++;
                if (o.loop || (o.free_every && (i + 1) % o.free_every == 0)) {
                        if (free_fn(p) != CUDA_SUCCESS) {
                                fprintf(stderr, "gv-simalloc: free: %s\n", gvsim_last_error());
                                return NULL;
                        }
                }
        }
        return NULL;
}

static int run(void)
{
        CUdevice dev;
        CUcontext ctx;
        if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, (int)o.gpu) != CUDA_SUCCESS ||
            cuCtxCreate_v2(&ctx, 0, dev) != CUDA_SUCCESS) {
                fprintf(stderr, "gv-simalloc: %s\n", gvsim_last_error());
                return 1;
        }
        alloc_fn = cuMemAlloc_v2;
        free_fn = cuMemFree_v2;
        if (strcmp(o.route, "procaddr") == 0) {
                void *a = NULL, *f = NULL;
                CUdriverProcAddressQueryResult st;
                if (cuGetProcAddress_v2("cuMemAlloc", &a, 12000, 0, &st) != CUDA_SUCCESS ||
                    cuGetProcAddress_v2("cuMemFree", &f, 12000, 0, &st) != CUDA_SUCCESS) {
                        fprintf(stderr, "gv-simalloc: cuGetProcAddress_v2 failed\n");
                        return 1;
                }
                alloc_fn = (cu_mem_alloc_fn)a;
                free_fn = (cu_mem_free_fn)f;
        } else if (strcmp(o.route, "ptsz") == 0) {
                void *a = NULL, *f = NULL;
                CUdriverProcAddressQueryResult st;
                if (cuGetProcAddress_v2("cuMemAllocAsync", &a, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) !=
                            CUDA_SUCCESS ||
                    cuGetProcAddress_v2("cuMemFreeAsync", &f, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) !=
                            CUDA_SUCCESS) {
                        fprintf(stderr, "gv-simalloc: cuGetProcAddress_v2 (per-thread stream) failed\n");
                        return 1;
                }
                async_alloc_fn = (cu_mem_alloc_async_fn)a;
                async_free_fn = (cu_mem_free_async_fn)f;
                alloc_fn = via_async_alloc;
                free_fn = via_async_free;
        }
        printf("ready %d\n", (int)getpid());
        fflush(stdout);
        pthread_t th[64];
        uint64_t done[64] = { 0 }, total = 0;
        for (unsigned t = 0; t < o.threads; t++)
                if (pthread_create(&th[t], NULL, work, &done[t]) != 0)
                        return 1;
        for (unsigned t = 0; t < o.threads; t++) {
                pthread_join(th[t], NULL);
                total += done[t];
        }
        if (o.no_cuda_child) {
                pid_t c = fork();
                if (c == 0)
                        _exit(0); /* a data-loader worker: inherits everything, allocates nothing */
                while (c > 0 && waitpid(c, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        printf("done %llu\n", (unsigned long long)total);
        fflush(stdout);
        return total == o.allocs * o.threads ? 0 : 1;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "dir", required_argument, NULL, 'd' },
                { "gpu", required_argument, NULL, 'g' },
                { "allocs", required_argument, NULL, 'n' },
                { "size", required_argument, NULL, 's' },
                { "free-every", required_argument, NULL, 'f' },
                { "threads", required_argument, NULL, 't' },
                { "fork-first", required_argument, NULL, 'F' },
                { "no-cuda-child", no_argument, NULL, 'N' },
                { "loop", no_argument, NULL, 'l' },
                { "route", required_argument, NULL, 'r' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'd':
                        if (setenv("GHOSTVRAM_SIM", optarg, 1) < 0)
                                return 2;
                        break;
                case 'g':
                        if (parse_uint_range(optarg, 0, 15, &o.gpu) < 0)
                                goto bad;
                        break;
                case 'n':
                        if (parse_u64(optarg, &o.allocs) < 0 || o.allocs > 1000000)
                                goto bad;
                        break;
                case 's':
                        if (parse_u64(optarg, &o.size) < 0 || o.size == 0 || o.size > ((uint64_t)1 << 40))
                                goto bad;
                        break;
                case 'f':
                        if (parse_uint_range(optarg, 0, 1000000, &o.free_every) < 0)
                                goto bad;
                        break;
                case 't':
                        if (parse_uint_range(optarg, 1, 64, &o.threads) < 0)
                                goto bad;
                        break;
                case 'F':
                        if (parse_uint_range(optarg, 0, 16, &o.fork_first) < 0)
                                goto bad;
                        break;
                case 'N': o.no_cuda_child = true; break;
                case 'l': o.loop = true; break;
                case 'r':
                        if (strcmp(optarg, "symbol") && strcmp(optarg, "procaddr") && strcmp(optarg, "ptsz") &&
                            strcmp(optarg, "managed") && strcmp(optarg, "pitch"))
                                goto bad;
                        o.route = optarg;
                        break;
                case 'h': usage(stdout); return 0;
                default: goto bad;
                }
        }
        if (optind != argc)
                goto bad;
        pid_t kids[16];
        for (unsigned i = 0; i < o.fork_first; i++) {
                fflush(stdout);
                kids[i] = fork();
                if (kids[i] < 0)
                        return 1;
                if (kids[i] == 0)
                        _exit(run());
        }
        int rc = run();
        for (unsigned i = 0; i < o.fork_first; i++) {
                int st;
                while (waitpid(kids[i], &st, 0) < 0 && errno == EINTR)
                        ;
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                        rc = 1;
        }
        return rc;
bad:
        usage(stderr);
        return 2;
}
