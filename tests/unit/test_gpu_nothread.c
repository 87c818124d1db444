/* Unit tests for the NVML backend (collect/gpu_nvml) when no thread can be made for a driver
 * call: pthread_create fails with EAGAIN (a process at its thread limit). Each driver call runs
 * on a worker thread under a deadline (util/deadline); a call whose worker cannot be made runs
 * nothing, its job stays with the caller, and the collection goes on. The collection must then
 * neither crash nor free a job twice, read one after its free or leak one (this file is run
 * under ASan and valgrind), and must say what it could not learn rather than make it up.
 *
 * Linked with -Wl,--wrap=pthread_create -Wl,--wrap=gpu_procfs_read (tests/CMakeLists.txt):
 * the core is a static library, so its calls come to the wrappers below.
 *
 * One worker serves every call of a collection; a new one is made only at the first call and
 * after a call that missed its deadline (its worker is abandoned). So a failing creation
 * reaches the first calls (the library's version, nvmlInit), and, after a missed deadline, the
 * next GPU's first call or the shutdown. The tests below reach each of these on a simulated
 * host (`ghostvram sim init`), with the simulator's hang knob or a held /proc read for the
 * missed deadline. A hung simulated call never returns: the tests that hang a GPU come last. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim_host.h"

#include "collect/gpu.h"
#include "collect/gpu_procfs.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/spawn.h"

#define N_GPUS 3

static char sim_dir[] = "/tmp/gv-test-nothread-XXXXXX";
static char driver_proc[256];

/* ---- the wrappers ------------------------------------------------------------------------ */

/* Calls to pthread_create since the last reset; those numbered in [fail_from, fail_to) (from
 * 0) fail with EAGAIN and make no thread. */
static atomic_int creations;
static atomic_int fail_from = INT_MAX, fail_to = INT_MAX;

int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
        int n = atomic_fetch_add(&creations, 1);
        if (n >= atomic_load(&fail_from) && n < atomic_load(&fail_to))
                return EAGAIN;
        return __real_pthread_create(t, a, fn, arg);
}

/* The creations numbered [from, to) fail from now on; the count starts again. */
static void fail_creations(int from, int to)
{
        atomic_store(&fail_from, from);
        atomic_store(&fail_to, to);
        atomic_store(&creations, 0);
}

/* While procfs_hold is set, a read of the module's /proc files waits (a /proc file stuck in the
 * driver): it misses its deadline and its worker is abandoned. procfs_reads counts the reads
 * that returned. */
static atomic_bool procfs_hold;
static atomic_int procfs_reads;

int __real_gpu_procfs_read(const char *dir, struct gpu_procfs_entry *out, size_t max);
int __wrap_gpu_procfs_read(const char *dir, struct gpu_procfs_entry *out, size_t max);

int __wrap_gpu_procfs_read(const char *dir, struct gpu_procfs_entry *out, size_t max)
{
        while (atomic_load(&procfs_hold))
                usleep(10 * 1000);
        int r = __real_gpu_procfs_read(dir, out, max);
        atomic_fetch_add(&procfs_reads, 1);
        return r;
}

/* ---- the simulated host ------------------------------------------------------------------ */

/* `ghostvram sim ARGS...` on the test's host; its exit status. */
static int sim(const char *const args[])
{
        struct buf out = BUF_INIT(1 << 16);
        int r = spawn_self(GV_BUILD_DIR "/ghostvram", args, &out, false);
        buf_free(&out);
        return r;
}

/* `ghostvram sim set DIR knob`: asserts it was taken. */
static void sim_set(const char *knob)
{
        const char *const args[] = { "ghostvram", "sim", "set", sim_dir, knob, NULL };
        assert_int_equal(sim(args), 0);
}

static int setup(void **state)
{
        (void)state;
        if (!mkdtemp(sim_dir))
                return -1;
        const char *const init[] = { "ghostvram", "sim", "init", sim_dir, "--gpus", "3", NULL };
        int r = sim(init);
        if (r != 0) {
                fprintf(stderr, "ghostvram sim init %s: exit %d\n", sim_dir, r);
                return -1;
        }
        setenv("GHOSTVRAM_SIM", sim_dir, 1); /* the simulated library finds its state through it */
        snprintf(driver_proc, sizeof(driver_proc), "%s/proc/driver/nvidia", sim_dir);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        sim_host_remove(sim_dir);
        return 0;
}

/* One collection from the simulated driver with calls' deadline timeout_ms; asserts that it
 * produced a report (a missing thread is not a failure of the collection). */
static struct gpu_report *collect(unsigned timeout_ms)
{
        struct gpu_opts o = { .nvml_lib = GV_BUILD_DIR "/sim/current/libnvidia-ml.so.1",
                              .timeout_ms = timeout_ms, .driver_proc_dir = driver_proc };
        struct gpu_report *rep = NULL;
        assert_int_equal(gpu_collect(&o, &rep), 0);
        assert_non_null(rep);
        assert_string_equal(rep->backend, "nvml");
        assert_true(rep->library_found);
        return rep;
}

/* GPU g answered every question: its name, UUID, bus id and memory, status OK. */
static void assert_gpu_whole(const struct gpu_report *rep, unsigned g)
{
        const struct gpu_info *gi = &rep->gpus[g];
        assert_int_equal(gi->index, g);
        assert_int_equal(gi->status, GPU_OK);
        assert_string_equal(gi->status_message, "");
        assert_int_equal(strncmp(gi->uuid, "GPU-", 4), 0);
        assert_true(gi->name[0] && gi->pci_bus_id[0]);
        assert_true(gi->memory_known);
        assert_true(gi->total_bytes > 0);
        assert_int_equal(gi->used_bytes + gi->free_bytes + gi->reserved_bytes, gi->total_bytes);
}

/* GPU g could not be asked: it says why, and gives no figures. */
static void assert_gpu_unasked(const struct gpu_report *rep, unsigned g, enum gpu_status status)
{
        const struct gpu_info *gi = &rep->gpus[g];
        assert_int_equal(gi->index, g);
        assert_int_equal(gi->status, status);
        assert_true(gi->status_message[0]);
        assert_false(gi->memory_known);
        assert_true(gi->total_bytes == 0 && gi->used_bytes == 0 && gi->free_bytes == 0);
        assert_false(gi->procs_known);
        assert_int_equal(gi->n_procs, 0);
}

/* The driver and all its GPUs, as the simulator has them. */
static void assert_report_whole(const struct gpu_report *rep)
{
        assert_true(rep->driver_present);
        assert_string_equal(rep->error, "");
        assert_false(rep->timed_out);
        assert_true(rep->driver_version[0] && rep->nvml_version[0]);
        assert_int_equal(rep->n_gpus, N_GPUS);
        for (unsigned g = 0; g < N_GPUS; g++)
                assert_gpu_whole(rep, g);
        assert_string_not_equal(rep->gpus[0].uuid, rep->gpus[1].uuid);
}

/* ---- the tests --------------------------------------------------------------------------- */

/* Every thread made: the whole report, from one worker for all of the collection's calls. */
static void test_no_failure(void **state)
{
        (void)state;
        fail_creations(INT_MAX, INT_MAX);
        struct gpu_report *rep = collect(5000);
        assert_report_whole(rep);
        assert_int_equal(atomic_load(&creations), 1);
        gpu_report_free(rep);
}

/* The first k creations fail, for k = 1, 2, ...: each call that finds no worker tries to make
 * one, so the first k calls run nothing; the sweep ends at the first k at which every creation
 * the collection tried failed. The first call is the library's own version (its answer is asked
 * again after nvmlInit: nothing is lost); the second is nvmlInit: without it, no driver. */
static void test_first_calls_without_thread(void **state)
{
        (void)state;
        int k;
        for (k = 1; k < 20; k++) {
                fail_creations(0, k);
                struct gpu_report *rep = collect(5000);
                int tried = atomic_load(&creations);
                if (tried > k) {
                        /* a later call made the worker: the collection is whole */
                        assert_int_equal(k, 1);
                        assert_int_equal(tried, 2);
                        assert_report_whole(rep);
                        gpu_report_free(rep);
                        continue;
                }
                /* no call ran: nvmlInit did not, and nothing was asked after it */
                assert_int_equal(tried, k);
                assert_false(rep->driver_present);
                assert_false(rep->timed_out);
                assert_null(rep->gpus);
                assert_int_equal(rep->n_gpus, 0);
                /* said as ghostvram's own fault, not the driver's */
                assert_string_equal(rep->error, "nvmlInit was not called: no thread could be started for it "
                                                "(Resource temporarily unavailable)");
                gpu_report_free(rep);
                break;
        }
        assert_int_equal(k, 2); /* the library's version, then nvmlInit */
}

/* A /proc read (names for a GPU NVML cannot name: here a lost one) misses its deadline, so its
 * worker is abandoned; the shutdown then finds none and cannot make one. Its job is freed, not
 * leaked; the report is as the driver said it. */
static void test_shutdown_without_thread(void **state)
{
        (void)state;
        sim_set("gpu_lost_handle=2:on");
        atomic_store(&procfs_hold, true);
        atomic_store(&procfs_reads, 0);
        fail_creations(1, INT_MAX);
        struct gpu_report *rep = collect(1000);
        atomic_store(&procfs_hold, false);
        /* the first worker, then the shutdown's, which failed */
        assert_int_equal(atomic_load(&creations), 2);
        assert_true(rep->driver_present);
        assert_string_equal(rep->error, "");
        assert_int_equal(rep->n_gpus, N_GPUS);
        assert_gpu_whole(rep, 0);
        assert_gpu_whole(rep, 1);
        assert_gpu_unasked(rep, 2, GPU_LOST);
        assert_string_equal(rep->gpus[2].uuid, ""); /* its /proc read did not come back in time */
        gpu_report_free(rep);
        /* the abandoned read returns (its worker frees its job) before the knob is undone */
        for (int i = 0; i < 500 && atomic_load(&procfs_reads) == 0; i++)
                usleep(10 * 1000);
        assert_int_equal(atomic_load(&procfs_reads), 1);
        sim_set("gpu_lost_handle=2:default");
        fail_creations(INT_MAX, INT_MAX);
        rep = collect(5000);
        assert_report_whole(rep);
        gpu_report_free(rep);
}

/* GPU 0's memory call hangs in the driver: its worker is abandoned, and the next GPU's first
 * call (its handle) cannot make another. That GPU is reported in error with no figures; the
 * GPU after it gets a worker again and is whole. Leaves GPU 0's call stuck for good. */
static void test_gpu_without_thread(void **state)
{
        (void)state;
        sim_set("hang=0:nvmlDeviceGetMemoryInfo_v2");
        fail_creations(1, 2);
        struct gpu_report *rep = collect(1000);
        assert_int_equal(atomic_load(&creations), 3);
        assert_true(rep->driver_present);
        assert_true(rep->timed_out);
        assert_int_equal(rep->n_gpus, N_GPUS);
        assert_gpu_unasked(rep, 0, GPU_TIMEOUT);
        assert_int_equal(strncmp(rep->gpus[0].uuid, "GPU-", 4), 0); /* named before the hang */
        assert_gpu_unasked(rep, 1, GPU_ERROR);
        /* NVML_ERROR_MEMORY's words, then where its bus id came from */
        assert_string_equal(rep->gpus[1].status_message, "Insufficient Memory; bus id from /proc/driver/nvidia/gpus "
                                                          "(the only GPU and the only entry left)");
        assert_gpu_whole(rep, 2);
        /* GPU 1's bus id and UUID from /proc, read on the worker GPU 2 made */
        assert_int_equal(strncmp(rep->gpus[1].uuid, "GPU-", 4), 0);
        assert_true(rep->gpus[1].pci_bus_id[0]);
        gpu_report_free(rep);
}

/* Then GPU 1's memory call hangs too (GPU 0 is skipped: its call is still stuck), and no
 * thread can be made after it: GPU 2 and the /proc read for the unnamed GPUs run nothing. */
static void test_gpus_and_procfs_without_thread(void **state)
{
        (void)state;
        sim_set("hang=1:nvmlDeviceGetMemoryInfo_v2");
        fail_creations(1, INT_MAX);
        struct gpu_report *rep = collect(1000);
        assert_int_equal(atomic_load(&creations), 3); /* the first worker, GPU 2's, /proc's */
        assert_true(rep->driver_present);
        assert_true(rep->timed_out);
        assert_int_equal(rep->n_gpus, N_GPUS);
        assert_gpu_unasked(rep, 0, GPU_TIMEOUT);
        assert_string_equal(rep->gpus[0].uuid, ""); /* skipped: nothing asked, /proc not read */
        assert_gpu_unasked(rep, 1, GPU_TIMEOUT);
        assert_gpu_unasked(rep, 2, GPU_ERROR);
        assert_string_equal(rep->gpus[2].status_message, "Insufficient Memory");
        assert_string_equal(rep->gpus[2].uuid, "");
        gpu_report_free(rep);
        fail_creations(INT_MAX, INT_MAX);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_no_failure),
                cmocka_unit_test(test_first_calls_without_thread),
                cmocka_unit_test(test_shutdown_without_thread),
                /* these two leave simulated calls hung for good: last, in this order */
                cmocka_unit_test(test_gpu_without_thread),
                cmocka_unit_test(test_gpus_and_procfs_without_thread),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
