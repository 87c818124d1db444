#define _GNU_SOURCE 1
/* test_hooks: linked only into ghostvram-testhooks, the binary the integration tests use where
 * they must stop reclaim at an exact point. The shipped ghostvram has none of this.
 *
 * GHOSTVRAM_TEST_PAUSE=STAGE:FILE: at STAGE ("plan": before any pidfd is opened; "open": after
 * the re-checks, before the first signal) create FILE.ready and wait (60 s at most) for FILE.go.
 * It lets a test end a target or reuse its PID at an exact point.
 *
 * GHOSTVRAM_TEST_BPF_FULL=1: the holder walk loads its BPF iterators with the full skeleton
 * (libbpf's CO-RE), the way a kernel older than 5.17 has them loaded. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "run/reclaim_run.h"
#include "collect/host_internal.h"
#include "util/fileio.h"

static void test_pause(void *ctx, const char *stage)
{
        (void)ctx;
        const char *spec = getenv("GHOSTVRAM_TEST_PAUSE");
        if (!spec)
                return;
        size_t sl = strcspn(spec, ":");
        if (spec[sl] != ':' || sl != strlen(stage) || strncmp(spec, stage, sl) != 0)
                return;
        char ready[PATH_MAX], go[PATH_MAX];
        if (snprintf(ready, sizeof(ready), "%s.ready", spec + sl + 1) >= (int)sizeof(ready) ||
            snprintf(go, sizeof(go), "%s.go", spec + sl + 1) >= (int)sizeof(go))
                return;
        char pid[24];
        int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
        if (write_file_atomic(ready, pid, (size_t)n) < 0)
                return;
        for (int i = 0; i < 6000 && access(go, F_OK) != 0; i++) {
                struct timespec ts = { 0, 10 * 1000000L };
                nanosleep(&ts, NULL);
        }
}

__attribute__((constructor)) static void install_test_hooks(void)
{
        reclaim_run_pause = test_pause;
        const char *full = getenv("GHOSTVRAM_TEST_BPF_FULL");
        host_bpf_full_only = full && strcmp(full, "1") == 0;
}
