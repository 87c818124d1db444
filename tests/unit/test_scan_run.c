/* Unit tests for model/scan_run: when the continuous sampler may skip the /proc walk, and
 * when a listed PID is still the owner the walk saw. The cycles themselves run in the
 * integration tests (t_serve_*, t_watch_*) against the simulated driver. */
#include "facts_builder.h"

#include "run/scan_run.h"

/* A healthy job: PID 4000 alive, holding the device nodes, listed with all of GPU 0's used. */
static struct facts *healthy(uint64_t used, uint64_t listed_bytes)
{
        struct facts *f = facts_new(2, true, 0);
        gpu_used(f, 0, used);
        nvml_proc(f, 0, 4000, listed_bytes);
        struct host_proc p = proc(4000, 1, 4000, 4000, 'R', "python");
        cuda_nodes(&p, 2);
        holder(f, p);
        finish(f, NULL, 0);
        return f;
}

static bool need(const struct facts *now, const struct facts *full, const struct scan_result *last,
                 unsigned since, char **why)
{
        struct ledger_opts lo;
        ledger_opts_default(&lo);
        str_clear(why);
        return sampler_need_full(now->gpu, full, last, &lo, since, 40, why);
}

static void test_light_when_explained(void **state)
{
        (void)state;
        char *why STR_AUTOFREE = NULL;
        struct facts *full = healthy(2 * GIB, 2 * GIB);
        struct facts *now = healthy(2 * GIB, 2 * GIB);
        struct scan_result *last = build(full, NULL);
        assert_string_equal(verdict(last, 0), "ok");
        assert_false(need(now, full, last, 0, &why));
        assert_false(need(now, full, last, 38, &why));
        /* a residue below the noise floor (800 MiB on 80 GiB) is not unexplained */
        gpu_used(now, 0, 2 * GIB + 700 * MIB);
        assert_false(need(now, full, last, 0, &why));
        /* no driver: nothing to explain */
        now->gpu->driver_present = false;
        assert_false(need(now, full, last, 0, &why));
        scan_result_free(last);
        facts_destroy(full);
        facts_destroy(now);
}

static void test_full_walk_reasons(void **state)
{
        (void)state;
        char *why STR_AUTOFREE = NULL;
        struct facts *full = healthy(2 * GIB, 2 * GIB);
        struct facts *now = healthy(2 * GIB, 2 * GIB);
        struct scan_result *last = build(full, NULL);

        assert_true(need(now, NULL, NULL, 0, &why));
        assert_string_equal(why, "no earlier /proc walk");

        assert_true(need(now, full, last, 39, &why));
        assert_string_equal(why, "periodic walk (every 40 cycles)");

        gpu_used(now, 0, 3 * GIB);      /* 1 GiB more than the listed PIDs hold */
        assert_true(need(now, full, last, 0, &why));
        assert_string_equal(why, "GPU 0: 1024 MiB not charged to a listed PID");
        gpu_used(now, 0, 2 * GIB);

        now->gpu->gpus[0].procs[0].used_known = false;
        assert_true(need(now, full, last, 0, &why));
        assert_string_equal(why, "GPU 0: NVML gives no bytes for PID 4000");
        now->gpu->gpus[0].procs[0].used_known = true;

        now->gpu->gpus[0].procs[0].pid = 4001;  /* a new job the walk has not seen */
        assert_true(need(now, full, last, 0, &why));
        assert_string_equal(why, "GPU 0: PID 4001 was not a live holder in the last walk");
        now->gpu->gpus[0].procs[0].pid = 4000;

        now->gpu->n_gpus = 1;
        assert_true(need(now, full, last, 0, &why));
        assert_string_equal(why, "the number of GPUs changed");
        now->gpu->n_gpus = 2;

        /* the walk saw the owner in D state / exiting: follow it with walks */
        full->pids[0].proc.state = 'D';
        assert_true(need(now, full, last, 0, &why));
        full->pids[0].proc.state = 'R';
        full->pids[0].proc.exiting = true;
        assert_true(need(now, full, last, 0, &why));
        full->pids[0].proc.exiting = false;
        assert_false(need(now, full, last, 0, &why));

        /* an uninspected GPU does not force a walk (the ledger cannot use /proc for it) */
        now->gpu->gpus[1].status = GPU_TIMEOUT;
        now->gpu->gpus[1].used_bytes = 5 * GIB;
        assert_false(need(now, full, last, 0, &why));
        scan_result_free(last);
        facts_destroy(full);
        facts_destroy(now);
}

static void test_follow_a_ghost(void **state)
{
        (void)state;
        char *why STR_AUTOFREE = NULL;
        struct facts *ghost = killed_job(2, 0, true);
        finish(ghost, NULL, 0);
        struct scan_result *last = build(ghost, ghost);
        struct facts *now = healthy(2 * GIB, 2 * GIB);
        /* the previous result has a ghost: keep walking while it is followed */
        assert_true(need(now, ghost, last, 0, &why));
        assert_string_equal(why, "a ghost or a stuck task to follow");
        scan_result_free(last);
        facts_destroy(ghost);
        facts_destroy(now);
}

static void test_same_live_owner(void **state)
{
        (void)state;
        struct host_proc then = proc(4000, 1, 4000, 4000, 'S', "python");
        struct host_proc now = then;
        assert_true(sampler_same_live_owner(&then, &now));
        now.state = 'R';
        assert_true(sampler_same_live_owner(&then, &now));
        now.state = 'Z';
        assert_false(sampler_same_live_owner(&then, &now));
        now.state = 'X';
        assert_false(sampler_same_live_owner(&then, &now));
        now.state = 'D';
        assert_false(sampler_same_live_owner(&then, &now));
        now.state = 'S';
        now.exiting = true;
        assert_false(sampler_same_live_owner(&then, &now));
        now.exiting = false;
        now.start_ticks = then.start_ticks + 1; /* the PID was reused */
        assert_false(sampler_same_live_owner(&then, &now));
        free(then.comm);
        free(then.cmdline);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_light_when_explained),
                cmocka_unit_test(test_full_walk_reasons),
                cmocka_unit_test(test_follow_a_ghost),
                cmocka_unit_test(test_same_live_owner),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
