/* Unit tests for act/escalate: every reason a GPU reset or an nvidia_uvm reload is refused, on
 * hand-built scans (the real-host cases the simulator cannot show: not root, no libkmod, the
 * module not loaded or in use, a lost GPU, pre-Hopper NVLink), and running a program with a
 * deadline. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "act/escalate.h"
#include "util/deadline.h"

struct world {
        struct facts f;
        struct gpu_report gpu;
        struct gpu_info gpus[1];
        struct host_report host;
        struct host_proc holders[4];
        struct scan_result res;
        struct gpu_ledger led[1];
        struct escalate_report out;
};

static void node(struct host_proc *p, const char *name)
{
        struct host_node *n = &p->nodes[p->n_nodes++];
        snprintf(n->name, sizeof(n->name), "%s", name);
        n->via = HOST_VIA_FD;
}

static struct host_proc *holder(struct world *w, pid_t pid, const char *comm)
{
        struct host_proc *p = &w->holders[w->host.n_holders++];
        memset(p, 0, sizeof(p[0]));
        p->pid = pid;
        p->comm = (char *)comm;
        p->cmdline = (char *)comm;
        return p;
}

/* One idle GPU 0 (an A100: pre-Hopper), persistence off, MIG off, nothing holding it. */
static struct world *world_new(void)
{
        struct world *w = calloc(1, sizeof(*w));
        w->f.gpu = &w->gpu;
        w->f.host = &w->host;
        w->gpu.driver_present = true;
        w->gpu.gpus = w->gpus;
        w->gpu.n_gpus = 1;
        snprintf(w->gpus[0].name, sizeof(w->gpus[0].name), "NVIDIA A100-SXM4-80GB");
        snprintf(w->gpus[0].pci_bus_id, sizeof(w->gpus[0].pci_bus_id), "0000:07:00.0");
        w->gpus[0].minor_known = true;
        w->gpus[0].persistence = 0;
        w->gpus[0].mig_mode = 0;
        w->host.holders = w->holders;
        w->res.facts = &w->f;
        w->res.gpus = w->led;
        w->res.n_gpus = 1;
        return w;
}

static bool has(char *const *lines, size_t n, const char *part)
{
        for (size_t i = 0; i < n; i++)
                if (strstr(lines[i], part))
                        return true;
        return false;
}

#define REASON(w, part) assert_true(has((w)->out.reasons, (w)->out.n_reasons, part))
#define NO_REASON(w, part) assert_false(has((w)->out.reasons, (w)->out.n_reasons, part))
#define FIX(w, part) assert_true(has((w)->out.fixes, (w)->out.n_fixes, part))
#define WARNING(w, part) assert_true(has((w)->out.warnings, (w)->out.n_warnings, part))

static void reset(struct world *w, bool force, bool root, bool simulated)
{
        struct escalate_reset_opts o = { .gpu = 0, .force = force, .simulated = simulated, .root = root, .self_pid = 999 };
        escalate_report_clear(&w->out);
        assert_int_equal(escalate_reset_check(&w->res, &o, &w->out), 0);
}

static void test_reset_clear(void **state)
{
        (void)state;
        struct world *w = world_new();
        reset(w, false, true, false);
        assert_false(w->out.refuse);
        assert_int_equal(w->out.n_reasons, 0);
        assert_string_equal(w->out.command, "nvidia-smi --gpu-reset -i 0000:07:00.0");
        WARNING(w, "NVLink peers"); /* an A100 */
        snprintf(w->gpus[0].name, sizeof(w->gpus[0].name), "NVIDIA H100 80GB HBM3");
        reset(w, false, true, false);
        assert_false(has(w->out.warnings, w->out.n_warnings, "NVLink peers"));
        /* the step before a reset, for this GPU (0) */
        WARNING(w, "`sudo ghostvram reclaim --poke --gpu 0`");
        /* not beside a live job: the poke would refuse (it takes memory next to it), and the
         * reset refuses too */
        struct owner live = { .pid = 4300, .cls = OWNER_LIVE };
        w->led[0].owners = &live;
        w->led[0].n_owners = 1;
        reset(w, false, true, false);
        assert_true(w->out.refuse);
        assert_false(has(w->out.warnings, w->out.n_warnings, "reclaim --poke"));
        w->led[0].owners = NULL;
        w->led[0].n_owners = 0;
        /* the same on a simulated host: every check passed, nothing is run */
        reset(w, false, true, true);
        assert_true(w->out.refuse);
        assert_int_equal(w->out.n_reasons, 1);
        REASON(w, "simulated host: `nvidia-smi --gpu-reset -i 0000:07:00.0` is not run");
        escalate_report_clear(&w->out);
        free(w);
}

static void test_reset_refusals(void **state)
{
        (void)state;
        struct world *w = world_new();
        node(holder(w, 4242, "nvidia-persistenced"), "nvidia0");
        node(holder(w, 4243, "nvidia-cuda-mps-server"), "nvidia0");
        node(holder(w, 4244, "ghostvram"), "nvidia0");
        struct host_proc *other = holder(w, 4245, "python");
        node(other, "nvidia1"); /* another GPU's node: not in the way */
        w->gpus[0].persistence = 1;
        w->gpus[0].mig_mode = 1;
        reset(w, false, false, false);
        assert_true(w->out.refuse);
        REASON(w, "PID 4242 (nvidia-persistenced) holds /dev/nvidia0");
        REASON(w, "PID 4243 (nvidia-cuda-mps-server) holds /dev/nvidia0");
        REASON(w, "PID 4244 (ghostvram) holds /dev/nvidia0");
        NO_REASON(w, "PID 4245");
        REASON(w, "MIG is enabled on GPU 0");
        REASON(w, "persistence mode is on for GPU 0");
        REASON(w, "a GPU reset needs root");
        FIX(w, "systemctl stop nvidia-persistenced");
        FIX(w, "echo quit | nvidia-cuda-mps-control");
        FIX(w, "stop the running ghostvram (PID 4244");
        FIX(w, "nvidia-smi -pm 0 -i 0000:07:00.0");
        FIX(w, "then add --force");
        /* --force turns MIG into a warning; the poke, which cannot run on MIG, is not offered */
        reset(w, true, true, false);
        NO_REASON(w, "MIG");
        WARNING(w, "destroys every GPU and compute instance");
        assert_false(has(w->out.warnings, w->out.n_warnings, "reclaim --poke"));
        /* ghostvram itself is not in the way of its own reset */
        w->host.n_holders = 0;
        node(holder(w, 999, "ghostvram"), "nvidia0");
        w->gpus[0].persistence = 0;
        reset(w, true, true, false);
        assert_false(w->out.refuse);
        escalate_report_clear(&w->out);
        free(w);
}

static void test_reset_lost_and_xid79(void **state)
{
        (void)state;
        struct world *w = world_new();
        w->gpus[0].status = GPU_LOST;
        reset(w, false, true, false);
        REASON(w, "is lost (NVML: GPU_IS_LOST)");
        FIX(w, "reboot");
        w->gpus[0].status = GPU_OK;
        /* an Xid 79 of this GPU after the driver's load */
        struct xid_event load = { .kind = XID_KIND_DRIVER_LOAD, .xid = XID_NONE, .gpu_index = -1, .seq_known = true, .seq = 1 };
        struct xid_event lost = { .kind = XID_KIND_XID, .xid = 79, .gpu_index = 0, .seq_known = true, .seq = 2 };
        snprintf(lost.pci_bus_id, sizeof(lost.pci_bus_id), "0000:07:00.0");
        struct xid_event ev[2] = { load, lost };
        w->f.kernel.ev = ev;
        w->f.kernel.n = 2;
        w->f.kernel_this_host = true;
        reset(w, false, true, false);
        REASON(w, "had an Xid 79 since the driver loaded");
        /* before the load: history, no reason */
        ev[1].seq = 0;
        reset(w, false, true, false);
        NO_REASON(w, "Xid 79");
        escalate_report_clear(&w->out);
        free(w);
}

static void uvm(struct world *w, bool force, bool root, bool simulated, struct escalate_uvm_state st)
{
        struct escalate_uvm_opts o = { .force = force, .simulated = simulated, .root = root, .self_pid = 999 };
        escalate_report_clear(&w->out);
        assert_int_equal(escalate_uvm_check(&w->res, &o, &st, &w->out), 0);
}

static void test_reload_uvm(void **state)
{
        (void)state;
        struct world *w = world_new();
        struct escalate_uvm_state ok = { .module_loaded = true, .refcnt = 0, .major = 508, .have_kmod = true };
        uvm(w, true, true, false, ok);
        assert_false(w->out.refuse);
        WARNING(w, "major number may change on reload (now 508)");
        uvm(w, false, false, false, ok);
        REASON(w, "--force is required");
        REASON(w, "needs root");
        struct escalate_uvm_state bad = { .module_loaded = false, .refcnt = -1, .have_kmod = false };
        uvm(w, true, true, false, bad);
        REASON(w, "built without libkmod");
        REASON(w, "nvidia_uvm is not loaded");
        struct escalate_uvm_state busy = ok;
        busy.refcnt = 3;
        uvm(w, true, true, false, busy);
        REASON(w, "in use (reference count 3)");
        /* holders of nvidia-uvm, named (at most 8, then a count) */
        for (pid_t p = 100; p < 104; p++)
                node(holder(w, p, "python"), "nvidia-uvm");
        uvm(w, true, true, false, ok);
        REASON(w, "PID 100 (python) holds nvidia-uvm");
        REASON(w, "PID 103 (python) holds nvidia-uvm");
        FIX(w, "end them first");
        /* a simulated host: no module at all, whatever this host has */
        uvm(w, true, true, true, bad);
        REASON(w, "simulated host");
        NO_REASON(w, "libkmod");
        escalate_report_clear(&w->out);
        free(w);
}

static void test_run_program(void **state)
{
        (void)state;
        char sh[256];
        assert_int_equal(escalate_find_program("sh", sh, sizeof(sh)), 0);
        assert_int_equal(escalate_find_program("no-such-program-here", sh + 100, 50), -ENOENT);
        char *argv[] = { sh, (char *)"-c", (char *)"echo resetting; echo oops >&2; exit 3", NULL };
        struct buf out = BUF_INIT(4096);
        int status = -1;
        pid_t stuck = -1;
        assert_int_equal(escalate_run(argv, 5000, &out, &status, &stuck), 0);
        assert_int_equal(stuck, 0);
        assert_int_equal(status, 3);
        assert_string_equal(buf_str(&out), "resetting\noops\n");
        buf_free(&out);
        /* a program that does not finish is ended at the deadline */
        char *slow[] = { sh, (char *)"-c", (char *)"exec sleep 3", NULL };
        unsigned long long t0 = monotonic_ms();
        assert_int_equal(escalate_run(slow, 200, NULL, &status, &stuck), -ETIMEDOUT);
        assert_true(monotonic_ms() - t0 < 5000);
        /* one that closes its output and goes on (a reset hanging in the driver after its last
         * line): the deadline still holds — the wait for its exit is bounded too */
        char *quiet[] = { sh, (char *)"-c", (char *)"exec >/dev/null 2>&1; exec sleep 4", NULL };
        t0 = monotonic_ms();
        assert_int_equal(escalate_run(quiet, 300, NULL, &status, &stuck), -ETIMEDOUT);
        unsigned long long took = monotonic_ms() - t0;
        assert_true(took >= 300);
        assert_true(took < 1500);
        assert_int_equal(stuck, 0);
}

/* A holder with a long name (a bundle's comm, a command line): the fix that names it still ends
 * with its command (a fix was cut at 320 bytes, the command first) */
static void test_long_fix_arrives_whole(void **state)
{
        (void)state;
        struct world *w = world_new();
        char comm[301];
        memset(comm, 'x', 300);
        comm[300] = '\0';
        node(holder(w, 4242, comm), "nvidia0");
        reset(w, false, true, false);
        assert_true(w->out.refuse);
        char named[310];
        snprintf(named, sizeof(named), "(%s)", comm);
        bool seen = false;
        for (size_t i = 0; i < w->out.n_fixes; i++) {
                const char *f = w->out.fixes[i];
                if (!strstr(f, named))
                        continue;
                /* its command after the name, whole: the backquotes close */
                size_t ticks = 0;
                for (const char *c = strstr(f, named); *c; c++)
                        ticks += *c == '`';
                assert_true(ticks >= 2 && ticks % 2 == 0 && f[strlen(f) - 1] == '`');
                seen = true;
        }
        assert_true(seen);
        escalate_report_clear(&w->out);
        free(w);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_long_fix_arrives_whole),
                cmocka_unit_test(test_reset_clear),
                cmocka_unit_test(test_reset_refusals),
                cmocka_unit_test(test_reset_lost_and_xid79),
                cmocka_unit_test(test_reload_uvm),
                cmocka_unit_test(test_run_program),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
