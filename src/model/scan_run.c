#include "model/scan_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/deadline.h"

static bool default_wait(void *ctx, uint64_t ms)
{
        (void)ctx;
        struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        return true;
}

/* One sample; bundle_sub/save_sub name the bundle's subdirectory ("." / NULL: the top). */
static int collect_sample(const struct scan_once_opts *o, const char *bundle_sub, const char *save_sub,
                          struct facts **ret)
{
        struct facts_opts fo = o->facts;
        char gpu_dir[4096], proc_dir[4096], save_dir[4096], kmsg_path[4096];
        int n;
        if (o->from_bundle) {
                n = snprintf(gpu_dir, sizeof(gpu_dir), "%s/%s", o->from_bundle, bundle_sub);
                if (n < 0 || (size_t)n >= sizeof(gpu_dir))
                        return -ENAMETOOLONG;
                n = snprintf(proc_dir, sizeof(proc_dir), "%s/%s/proc", o->from_bundle, bundle_sub);
                if (n < 0 || (size_t)n >= sizeof(proc_dir))
                        return -ENAMETOOLONG;
                n = snprintf(kmsg_path, sizeof(kmsg_path), "%s/%s/kmsg", o->from_bundle, bundle_sub);
                if (n < 0 || (size_t)n >= sizeof(kmsg_path))
                        return -ENAMETOOLONG;
                fo.gpu.bundle_dir = gpu_dir;
                fo.host.proc_root = proc_dir;
                /* the kernel lines the bundle recorded (none: nothing was recorded) */
                fo.read_kernel = o->facts.read_kernel && access(kmsg_path, R_OK) == 0;
                fo.kernel.kmsg_path = kmsg_path;
                fo.kernel.this_boot = true;
        }
        if (o->save_bundle) {
                n = save_sub ? snprintf(save_dir, sizeof(save_dir), "%s/%s", o->save_bundle, save_sub)
                             : snprintf(save_dir, sizeof(save_dir), "%s", o->save_bundle);
                if (n < 0 || (size_t)n >= sizeof(save_dir))
                        return -ENAMETOOLONG;
                fo.save_bundle = save_dir;
                fo.host.save_dir = save_dir;
        }
        return facts_collect(&fo, ret);
}

/* A bundle has a confirming sample when DIR/confirm/nvml.json exists. */
static bool bundle_has_confirm(const char *dir)
{
        char p[4096];
        int n = snprintf(p, sizeof(p), "%s/confirm/nvml.json", dir);
        return n > 0 && (size_t)n < sizeof(p) && access(p, R_OK) == 0;
}

int scan_once_run(const struct scan_once_opts *o, struct scan_once **ret)
{
        double t0 = monotonic_s();
        struct scan_once *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        struct ledger_opts lo = o->ledger;
        lo.two_samples = false;
        int r = collect_sample(o, ".", NULL, &s->first);
        if (r < 0)
                goto fail;
        r = ledger_build(s->first, NULL, &lo, &s->res);
        if (r < 0)
                goto fail;
        /* a ghost or a stuck task must be seen twice: the driver frees memory with a delay */
        bool confirm = ledger_needs_confirmation(s->res);
        if (o->from_bundle)
                confirm = confirm && bundle_has_confirm(o->from_bundle);
        else
                confirm = confirm && o->confirm_ms > 0;
        if (!confirm)
                goto done;
        if (!o->from_bundle && !(o->wait ? o->wait : default_wait)(o->wait_ctx, o->confirm_ms)) {
                r = -EINTR;
                goto fail;
        }
        r = collect_sample(o, "confirm", "confirm", &s->second);
        if (r < 0)
                goto fail;
        scan_result_free(s->res);
        s->res = NULL;
        lo.two_samples = true;
        r = ledger_build(s->second, s->first, &lo, &s->res);
        if (r < 0)
                goto fail;
done:
        s->duration_s = monotonic_s() - t0;
        *ret = s;
        return 0;
fail:
        scan_once_free(s);
        return r;
}

void scan_once_free(struct scan_once *s)
{
        if (!s)
                return;
        scan_result_free(s->res);
        facts_free(s->first);
        facts_free(s->second);
        free(s);
}
