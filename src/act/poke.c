#define _GNU_SOURCE 1
/* poke: a tiny CUDA client on one GPU, run in a child with a deadline. See poke.h. */
#include "act/poke.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "collect/xid.h"
#include "track/cuda_abi.h"
#include "util/buf.h"
#include "util/deadline.h"
#include "util/exit_status.h"
#include "util/i18n.h"
#include "util/parse.h"
#include "util/strf.h"
#include "util/timefmt.h"

static const char *const step_names[POKE_STEP_COUNT] = {
        "load", "cuInit", "device", "cuCtxCreate", "cuMemAlloc", "cuMemFree", "cuCtxDestroy",
};

const char *poke_step_name(int step)
{
        return step >= 0 && step < POKE_STEP_COUNT ? step_names[step] : "none";
}

const char *poke_verdict_name(enum poke_verdict v)
{
        static const char *const names[] = { "gave-back", "nothing-changed", "failed", "hung", "no-library",
                                             "unmeasured" };
        return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "unmeasured";
}

void poke_steps_format(const struct poke_steps *s, char *out, size_t outlen)
{
        char err[sizeof(s->error)];
        size_t i = 0;
        for (; s->error[i] && i + 1 < sizeof(err); i++)
                err[i] = (unsigned char)s->error[i] < 0x20 ? ' ' : s->error[i]; /* one line */
        err[i] = '\0';
        snprintf(out, outlen, "poke done=%u failed=%d result=%d error=%s\n", s->done, s->failed, s->cu_result, err);
}

int poke_steps_parse(const char *buf, size_t len, struct poke_steps *ret)
{
        static const char mark[] = "poke done=";
        for (size_t at = 0; at < len;) {
                const char *ln = buf + at;
                const char *nl = memchr(ln, '\n', len - at);
                size_t ll = nl ? (size_t)(nl - ln) : len - at;
                char line[512];
                if (ll >= sizeof(mark) - 1 && ll < sizeof(line) && memcmp(ln, mark, sizeof(mark) - 1) == 0) {
                        memcpy(line, ln, ll);
                        line[ll] = '\0';
                        struct poke_steps s = { .failed = -1 };
                        int off = -1;
                        if (sscanf(line, "poke done=%u failed=%d result=%d error=%n", &s.done, &s.failed, &s.cu_result,
                                   &off) == 3 && off > 0 && s.done <= POKE_STEP_COUNT && s.failed >= -1 &&
                            s.failed < POKE_STEP_COUNT) {
                                snprintf(s.error, sizeof(s.error), "%s", line + off);
                                *ret = s;
                                return 0;
                        }
                }
                at += ll + 1;
        }
        return -EBADMSG;
}

/* ---- the child ------------------------------------------------------------------------------ */

typedef CUresult (*cu_device_get_count_fn)(int *count);
typedef CUresult (*cu_device_get_fn)(CUdevice *device, int ordinal);
typedef CUresult (*cu_ctx_create_fn)(CUcontext *pctx, unsigned int flags, CUdevice dev);
typedef CUresult (*cu_ctx_destroy_fn)(CUcontext ctx);
typedef CUresult (*cu_get_error_string_fn)(CUresult error, const char **pStr);

struct cu {
        void *h;
        cu_get_error_string_fn err;
};

static int step_fail(struct poke_steps *s, const struct cu *cu, int step, CUresult r, const char *why)
{
        const char *words = NULL;
        s->failed = step;
        s->cu_result = r;
        if (!why && cu->err && cu->err(r, &words) == CUDA_SUCCESS)
                why = words;
        snprintf(s->error, sizeof(s->error), "%s", why ? why : "");
        return -EIO;
}

static void *sym(const struct cu *cu, const char *name)
{
        return dlsym(cu->h, name);
}

/* The NVML form of a CUDA UUID: "GPU-" and 32 hex digits in 8-4-4-4-12. */
static void uuid_text(const CUuuid *u, char *out, size_t outlen)
{
        const unsigned char *b = (const unsigned char *)u->bytes;
        snprintf(out, outlen, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Device 0 of CUDA_VISIBLE_DEVICES=uuid, and its UUID is uuid (CUDA's ordinals are not NVML's
 * indices: never trust an ordinal alone). */
static int find_device(struct poke_steps *s, const struct cu *cu, const char *uuid, CUdevice *ret)
{
        cu_device_get_count_fn count = (cu_device_get_count_fn)sym(cu, "cuDeviceGetCount");
        cu_device_get_fn get = (cu_device_get_fn)sym(cu, "cuDeviceGet");
        cu_device_get_uuid_fn getu = (cu_device_get_uuid_fn)sym(cu, "cuDeviceGetUuid_v2");
        if (!getu)
                getu = (cu_device_get_uuid_fn)sym(cu, "cuDeviceGetUuid");
        if (!count || !get || !getu)
                return step_fail(s, cu, POKE_STEP_DEVICE, CUDA_ERROR_NOT_FOUND, "no cuDeviceGetCount, cuDeviceGet or cuDeviceGetUuid");
        int n = 0;
        CUresult r = count(&n);
        if (r != CUDA_SUCCESS || n < 1)
                return step_fail(s, cu, POKE_STEP_DEVICE, r ? r : CUDA_ERROR_NO_DEVICE, r ? NULL : "no device visible");
        CUdevice dev;
        CUuuid u;
        char got[64];
        if ((r = get(&dev, 0)) != CUDA_SUCCESS || (r = getu(&u, dev)) != CUDA_SUCCESS)
                return step_fail(s, cu, POKE_STEP_DEVICE, r, NULL);
        uuid_text(&u, got, sizeof(got));
        if (strcasecmp(got, uuid) != 0) {
                char why[160];
                snprintf(why, sizeof(why), "CUDA device 0 is %s, not %s", got, uuid);
                return step_fail(s, cu, POKE_STEP_DEVICE, CUDA_ERROR_INVALID_DEVICE, why);
        }
        *ret = dev;
        return 0;
}

int poke_child_run(const char *lib, const char *uuid, uint64_t bytes, struct poke_steps *ret)
{
        struct poke_steps *s = ret;
        memset(s, 0, sizeof(*s));
        s->failed = -1;
        struct cu cu = { 0 };
        /* the GPU by UUID: CUDA orders devices its own way (CUDA_DEVICE_ORDER), not as NVML */
        if (setenv("CUDA_VISIBLE_DEVICES", uuid, 1) < 0)
                return step_fail(s, &cu, POKE_STEP_LOAD, 0, strerror(errno));
        cu.h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        if (!cu.h) {
                const char *e = dlerror();
                return step_fail(s, &cu, POKE_STEP_LOAD, 0, e ? e : "cannot load");
        }
        cu.err = (cu_get_error_string_fn)sym(&cu, "cuGetErrorString");
        s->done = POKE_STEP_INIT;
        cu_init_fn init = (cu_init_fn)sym(&cu, "cuInit");
        CUresult r = init ? init(0) : CUDA_ERROR_NOT_FOUND;
        if (r != CUDA_SUCCESS)
                return step_fail(s, &cu, POKE_STEP_INIT, r, init ? NULL : "no cuInit");
        s->done = POKE_STEP_DEVICE;
        CUdevice dev = 0;
        if (find_device(s, &cu, uuid, &dev) < 0)
                return -EIO;
        s->done = POKE_STEP_CONTEXT;
        cu_ctx_create_fn create = (cu_ctx_create_fn)sym(&cu, "cuCtxCreate_v2");
        CUcontext ctx = NULL;
        if ((r = create ? create(&ctx, 0, dev) : CUDA_ERROR_NOT_FOUND) != CUDA_SUCCESS)
                return step_fail(s, &cu, POKE_STEP_CONTEXT, r, create ? NULL : "no cuCtxCreate_v2");
        s->done = POKE_STEP_ALLOC;
        cu_mem_alloc_fn alloc = (cu_mem_alloc_fn)sym(&cu, "cuMemAlloc_v2");
        CUdeviceptr p = 0;
        if ((r = alloc ? alloc(&p, (size_t)bytes) : CUDA_ERROR_NOT_FOUND) != CUDA_SUCCESS)
                return step_fail(s, &cu, POKE_STEP_ALLOC, r, alloc ? NULL : "no cuMemAlloc_v2");
        s->done = POKE_STEP_FREE;
        cu_mem_free_fn mfree = (cu_mem_free_fn)sym(&cu, "cuMemFree_v2");
        if ((r = mfree ? mfree(p) : CUDA_ERROR_NOT_FOUND) != CUDA_SUCCESS)
                return step_fail(s, &cu, POKE_STEP_FREE, r, mfree ? NULL : "no cuMemFree_v2");
        s->done = POKE_STEP_DESTROY;
        cu_ctx_destroy_fn destroy = (cu_ctx_destroy_fn)sym(&cu, "cuCtxDestroy_v2");
        if ((r = destroy ? destroy(ctx) : CUDA_ERROR_NOT_FOUND) != CUDA_SUCCESS)
                return step_fail(s, &cu, POKE_STEP_DESTROY, r, destroy ? NULL : "no cuCtxDestroy_v2");
        s->done = POKE_STEP_COUNT;
        /* never dlclose'd: the process ends, and the driver's library is not made to be unloaded */
        return 0;
}

/* ---- the parent ----------------------------------------------------------------------------- */

int poke_run(const struct poke_run_opts *o, struct poke_result *ret)
{
        memset(ret, 0, sizeof(*ret));
        char bytes[32];
        snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)o->bytes);
        char *argv[] = { (char *)o->exe, (char *)"__poke", (char *)o->lib, (char *)o->uuid, bytes, NULL };
        struct buf out = BUF_INIT(16384);
        ret->started = wall_clock_now();
        unsigned long long t0 = monotonic_ms();
        int status = 0;
        pid_t stuck = 0;
        /* escalate_run: fork_pipe, only async-signal-safe calls before the exec, a deadline and
         * SIGKILL through a pidfd, a bounded wait for a task stuck in the driver */
        int r = escalate_run(argv, o->timeout_ms, &out, &status, &stuck);
        ret->seconds = (double)(monotonic_ms() - t0) / 1000.0;
        if (r < 0 && r != -ETIMEDOUT && r != -EDEADLK) {
                buf_free(&out);
                return r;
        }
        ret->ran = true;
        ret->timed_out = r == -ETIMEDOUT || r == -EDEADLK;
        ret->stuck_pid = r == -EDEADLK ? stuck : 0;
        ret->exit_status = r == 0 ? status : -1;
        ret->steps_known = poke_steps_parse(buf_str(&out), strlen(buf_str(&out)), &ret->steps) == 0;
        buf_free(&out);
        return 0;
}

enum poke_verdict poke_judge(const struct poke_result *p, const struct recovery_gpu *g, uint64_t *ret_freed)
{
        *ret_freed = 0;
        if (p->timed_out)
                return POKE_HUNG;
        if (p->steps_known && p->steps.failed == POKE_STEP_LOAD)
                return POKE_NO_LIBRARY;
        if (!g || !g->before_known || !g->after_known)
                return POKE_UNMEASURED;
        uint64_t freed = g->before > g->after ? g->before - g->after : 0;
        *ret_freed = freed;
        if (freed >= POKE_MIN_FREED)
                return POKE_GAVE_BACK;
        bool made = p->steps_known && p->steps.done > POKE_STEP_CONTEXT;
        return made ? POKE_NOTHING : POKE_FAILED;
}

/* ---- the check ------------------------------------------------------------------------------ */

/* The live listed owners of ledger l, "1234, 1240" (at most 8 named). */
static size_t live_owners(const struct gpu_ledger *l, struct buf *pids)
{
        size_t n = 0;
        for (size_t k = 0; l && k < l->n_owners; k++) {
                if (l->owners[k].cls != OWNER_LIVE && l->owners[k].cls != OWNER_FOREIGN)
                        continue;
                if (n++ < 8)
                        buf_printf(pids, "%s%u", n > 1 ? ", " : "", l->owners[k].pid);
        }
        if (n > 8)
                buf_printf(pids, " (+%zu)", n - 8);
        return n;
}

int poke_check(const struct scan_result *r, const struct poke_check_opts *o, struct escalate_report *out)
{
        memset(out, 0, sizeof(*out));
        const struct gpu_ledger *l = NULL;
        const struct gpu_info *g = NULL;
        for (size_t i = 0; i < r->n_gpus && r->facts->gpu && i < r->facts->gpu->n_gpus; i++)
                if (r->facts->gpu->gpus[i].index == o->gpu) {
                        l = &r->gpus[i];
                        g = &r->facts->gpu->gpus[i];
                }
        if (!g) {
                out->refuse = true;
                escalate_line(out->reasons, &out->n_reasons,
                              P_("GPU %u is not on this host (%zu GPU)", "GPU %u is not on this host (%zu GPUs)", r->n_gpus),
                              o->gpu, r->n_gpus);
                return 0;
        }
        if (g->status == GPU_LOST || ledger_lost_event(r->facts, o->gpu)) {
                out->refuse = true;
                escalate_line(out->reasons, &out->n_reasons, _("GPU %u is lost (or had an Xid 79): no context can be made on it"),
                         o->gpu);
                escalate_line(out->fixes, &out->n_fixes, _("drain the node and reboot it (`ghostvram xid explain 79`)"));
        }
        if (g->mig_mode == 1) {
                out->refuse = true;
                escalate_line(out->reasons, &out->n_reasons,
                         _("MIG is enabled on GPU %u: a context there needs a MIG instance, and the poke makes none"), o->gpu);
        }
        struct buf pids = BUF_INIT(512);
        size_t n = live_owners(l, &pids);
        if (n && !o->force) {
                out->refuse = true;
                escalate_line(out->reasons, &out->n_reasons,
                         _("GPU %u has live jobs (NVML lists PID %s): the poke makes a context and takes memory next to "
                           "them, and may disturb them"), o->gpu, buf_str(&pids));
                escalate_line(out->fixes, &out->n_fixes,
                         _("wait for them to end, or add --force to poke anyway"));
        } else if (n) {
                escalate_line(out->warnings, &out->n_warnings,
                         _("GPU %u has live jobs (PID %s): poking anyway (--force)"), o->gpu, buf_str(&pids));
        }
        buf_free(&pids);
        if (!o->have_lib) {
                out->refuse = true;
                escalate_line(out->reasons, &out->n_reasons, _("no CUDA driver library (%s) was found"),
                         o->lib ? o->lib : "libcuda.so.1");
        }
        return 0;
}

int poke_child_main(int argc, char **argv)
{
        uint64_t bytes;
        if (argc != 4 || parse_u64(argv[3], &bytes) < 0 || bytes == 0 || bytes > ((uint64_t)1 << 30))
                return EXIT_USAGE;
        struct poke_steps st;
        int r = poke_child_run(argv[1], argv[2], bytes, &st);
        char line[512];
        poke_steps_format(&st, line, sizeof(line));
        fputs(line, stdout);
        fflush(stdout);
        return r == 0 ? EXIT_OK : EXIT_FINDING;
}
