/* track_bench: the cost of one tracked allocation and free (docs/track.md, bench/README.md).
 * Linked against bench/track's null libcuda.so.1 (a driver call costs nothing there), it times
 * --pairs cuMemAlloc_v2 + cuMemFree_v2 pairs, by symbol, and prints the median over --runs of
 * the nanoseconds per call. Run it with and without the tracker preloaded (bench/track/run). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "track/cuda_abi.h"

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);

static double now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
        long pairs = 100000, runs = 7;
        for (int i = 1; i + 1 < argc; i += 2) {
                if (strcmp(argv[i], "--pairs") == 0)
                        pairs = strtol(argv[i + 1], NULL, 10);
                else if (strcmp(argv[i], "--runs") == 0)
                        runs = strtol(argv[i + 1], NULL, 10);
        }
        if (pairs <= 0 || pairs > 100000000 || runs <= 0 || runs > 99) {
                fprintf(stderr, "usage: track_bench [--pairs N] [--runs R]\n");
                return 2;
        }
        double per[99];
        for (long r = 0; r < runs; r++) {
                double t0 = now_ns();
                for (long i = 0; i < pairs; i++) {
                        CUdeviceptr p;
                        if (cuMemAlloc_v2(&p, 4096) != CUDA_SUCCESS || cuMemFree_v2(p) != CUDA_SUCCESS)
                                return 1;
                }
                per[r] = (now_ns() - t0) / (double)(2 * pairs);
        }
        qsort(per, (size_t)runs, sizeof(per[0]), cmp);
        printf("%.1f %.1f %.1f\n", per[runs / 2], per[0], per[runs - 1]);
        return 0;
}
