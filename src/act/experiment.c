#define _GNU_SOURCE 1
/* experiment: the CUDA job of a real host, statistics, kernel events of a run. */
#include "act/experiment.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/i18n.h"
#include "util/strf.h"

/* ---- the job on a real host -------------------------------------------------------------------- */

/* The few CUDA driver API types and calls needed, declared here (no cuda.h needed to build):
 * CUresult is an enum (int), CUdevice an int, contexts opaque pointers, device pointers 64-bit
 * (the _v2 entry points). */
typedef int cu_result;
typedef int cu_device;
typedef void *cu_context;
typedef unsigned long long cu_deviceptr;

static void report(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(int fd, const char *fmt, ...)
{
        char line[512];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        if ((size_t)n > sizeof(line) - 2)
                n = (int)sizeof(line) - 2;
        line[n++] = '\n';
        (void)write_all(fd, line, (size_t)n);
}

/* An "error SENTENCE" line: the token stays English, the sentence is the reader's. */
static void report_error(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report_error(int fd, const char *fmt, ...)
{
        char *s STR_AUTOFREE = NULL;
        va_list ap;
        va_start(ap, fmt);
        str_vsetf(&s, fmt, ap);
        va_end(ap);
        report(fd, "error %s", str_or_empty(s));
}

static void __attribute__((noreturn)) sleep_forever(void)
{
        for (;;)
                pause();
}

static const char *cu_error(void *lib, cu_result r)
{
        cu_result (*get)(cu_result, const char **) = (cu_result(*)(cu_result, const char **))dlsym(lib, "cuGetErrorString");
        const char *s = NULL;
        if (get && get(r, &s) == 0 && s)
                return s;
        return _("CUDA error");
}

void cuda_job_main(unsigned gpu, uint64_t mib, unsigned workers, int report_fd)
{
        setsid();
        signal(SIGCHLD, SIG_IGN); /* the owner never waits for its workers */
        /* CUDA_DEVICE_ORDER=PCI_BUS_ID is in the environment the caller gave this process */
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
                report_error(report_fd, _("cannot load libcuda.so.1 (the CUDA driver): %s"), dlerror());
                _exit(1);
        }
        cu_result (*init)(unsigned) = (cu_result(*)(unsigned))dlsym(lib, "cuInit");
        cu_result (*dev_get)(cu_device *, int) = (cu_result(*)(cu_device *, int))dlsym(lib, "cuDeviceGet");
        cu_result (*retain)(cu_context *, cu_device) = (cu_result(*)(cu_context *, cu_device))dlsym(lib, "cuDevicePrimaryCtxRetain");
        cu_result (*set_current)(cu_context) = (cu_result(*)(cu_context))dlsym(lib, "cuCtxSetCurrent");
        cu_result (*create)(cu_context *, unsigned, cu_device) =
                (cu_result(*)(cu_context *, unsigned, cu_device))dlsym(lib, "cuCtxCreate_v2");
        cu_result (*alloc)(cu_deviceptr *, size_t) = (cu_result(*)(cu_deviceptr *, size_t))dlsym(lib, "cuMemAlloc_v2");
        if (!init || !dev_get || !alloc || !((retain && set_current) || create)) {
                report_error(report_fd, _("libcuda.so.1 lacks the driver API calls (cuInit, cuDeviceGet, cuMemAlloc_v2)"));
                _exit(1);
        }
        cu_result r = init(0);
        if (r != 0) {
                report(report_fd, "error cuInit: %s (%d)", cu_error(lib, r), r);
                _exit(1);
        }
        cu_device dev;
        r = dev_get(&dev, (int)gpu);
        if (r != 0) {
                report(report_fd, "error cuDeviceGet(%u): %s (%d)", gpu, cu_error(lib, r), r);
                _exit(1);
        }
        cu_context ctx = NULL;
        r = retain && set_current ? retain(&ctx, dev) : -1;
        if (r == 0)
                r = set_current(ctx);
        if (r != 0 && create)
                r = create(&ctx, 0, dev);
        if (r != 0) {
                report_error(report_fd, _("no CUDA context on device %u: %s (%d)"), gpu, cu_error(lib, r), r);
                _exit(1);
        }
        cu_deviceptr ptr = 0;
        r = alloc(&ptr, (size_t)(mib << 20));
        if (r != 0) {
                report(report_fd, "error cuMemAlloc_v2(%llu MiB): %s (%d)", (unsigned long long)mib, cu_error(lib, r), r);
                _exit(1);
        }
        report(report_fd, "owner %d", (int)getpid());
        for (unsigned i = 0; i < workers; i++) {
                pid_t w = fork();
                if (w < 0) {
                        report(report_fd, "error fork: %s", strerror(errno));
                        _exit(1);
                }
                if (w == 0) {
                        close(report_fd);
                        sleep_forever(); /* holds the inherited descriptors and mappings */
                }
                report(report_fd, "worker %d", (int)w);
        }
        report(report_fd, "ready");
        close(report_fd);
        sleep_forever();
}

/* ---- statistics ------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

int exp_stats_of(const double *v, size_t n, struct exp_stats *ret)
{
        memset(ret, 0, sizeof(*ret));
        if (n == 0)
                return 0;
        double *s = malloc(n * sizeof(*s));
        if (!s)
                return -ENOMEM;
        memcpy(s, v, n * sizeof(*s));
        qsort(s, n, sizeof(*s), cmp_double);
        ret->n = n;
        ret->min = s[0];
        ret->max = s[n - 1];
        ret->median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
        free(s);
        return 0;
}

/* ---- kernel events of a run -------------------------------------------------------------------- */

void exp_kernel_delta(const struct xid_list *before, const struct xid_list *after, struct exp_kernel *ret)
{
        memset(ret, 0, sizeof(*ret));
        bool seqs = before->n > 0 && after->n > 0;
        uint64_t last = 0;
        for (size_t i = 0; seqs && i < before->n; i++) {
                seqs &= before->ev[i].seq_known;
                if (before->ev[i].seq > last)
                        last = before->ev[i].seq;
        }
        for (size_t i = 0; seqs && i < after->n; i++)
                seqs &= after->ev[i].seq_known;
        size_t from = 0;
        if (seqs) {
                while (from < after->n && after->ev[from].seq <= last)
                        from++;
        } else {
                from = after->n >= before->n ? before->n : after->n;
        }
        ret->first_new = from < after->n ? &after->ev[from] : NULL;
        ret->n_new = after->n - from;
        for (size_t i = from; i < after->n; i++) {
                const struct xid_event *e = &after->ev[i];
                if (e->xid == 45)
                        ret->xid45++;
                else if (e->xid != XID_NONE || e->kind == XID_KIND_FALLEN_OFF_BUS || e->kind == XID_KIND_GSP_ERROR ||
                         e->kind == XID_KIND_RC_WATCHDOG || e->kind == XID_KIND_UVM_ERROR ||
                         e->kind == XID_KIND_INIT_FAILED)
                        ret->errors++;
                else
                        ret->other++;
        }
}
