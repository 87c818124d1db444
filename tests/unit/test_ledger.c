/* Unit tests for model/ledger: the account and the verdicts on hand-built samples. Each case
 * is a scenario from docs/verdicts.md; the live versions run in tests/integration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model/ledger.h"

#include "facts_builder.h"

/* ---- scenarios -------------------------------------------------------------------------- */

static void test_orphaned_holders(void **state)
{
        (void)state;
        struct facts *f = killed_job(1, 0, true);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 0), "orphaned-holders");
        assert_true(r->gpus[0].ghost == 2 * GIB);
        assert_true(r->gpus[0].ghost_confirmed);
        assert_int_equal(r->gpus[0].n_attr, 2);
        assert_true(attributed(r, 0, 31301) && attributed(r, 0, 31302));
        assert_int_equal(r->gpus[0].attr[0].link, LINK_PGID);
        assert_int_equal(r->gpus[0].findings[0].confidence, CONF_HIGH);
        assert_non_null(strstr(r->gpus[0].attr[0].text, "dead PID 31300, same process group"));
        assert_non_null(strstr(r->gpus[0].findings[0].next_step, "ghostvram reclaim --gpu 0"));
        assert_non_null(strstr(r->gpus[0].findings[0].next_step, "kill -TERM 31301 31302"));
        assert_true(r->any_confirmed_ghost);
        assert_sums(r);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_hidden_owner(void **state)
{
        (void)state;
        struct facts *f = killed_job(1, 0, false); /* the driver does not list the dead owner */
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 0), "orphaned-holders");
        assert_true(r->gpus[0].ghost == 2 * GIB);
        assert_int_equal(r->gpus[0].n_attr, 2);
        assert_int_equal(r->gpus[0].attr[0].link, LINK_LEADER_GONE);
        assert_int_equal(r->gpus[0].attr[0].confidence, CONF_MEDIUM);
        assert_false(r->gpus[0].attr[0].candidate);
        scan_result_free(r);

        /* two GPUs with a ghost: candidates for each, low confidence */
        gpu_used(f, 0, 2 * GIB);
        facts_destroy(f);
        f = killed_job(2, 0, false);
        gpu_used(f, 1, 1 * GIB);
        finish(f, NULL, 0);
        r = build(f, f);
        assert_true(r->gpus[0].n_attr == 2 && r->gpus[1].n_attr == 2);
        assert_true(r->gpus[1].attr[0].candidate);
        assert_int_equal(r->gpus[1].attr[0].confidence, CONF_LOW);
        assert_int_equal(r->gpus[1].findings[0].confidence, CONF_LOW);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_healthy_job_not_attributed(void **state)
{
        (void)state;
        /* GPU 1: the killed job; GPU 0: a healthy job 40000 with live workers */
        struct facts *f = killed_job(2, 1, true);
        gpu_used(f, 0, 4 * GIB);
        nvml_proc(f, 0, 40000, 4 * GIB);
        struct host_proc owner = proc(40000, 1, 40000, 40000, 'R', "python");
        cuda_nodes(&owner, 2);
        holder(f, owner);
        for (pid_t w = 40001; w <= 40002; w++) {
                struct host_proc p = proc(w, 40000, 40000, 40000, 'S', "pt_data_worker");
                cuda_nodes(&p, 2);
                holder(f, p);
        }
        /* an NVML-only monitor: nvidiactl and every GPU node, no nvidia-uvm */
        struct host_proc mon = proc(500, 1, 500, 500, 'S', "nvidia-smi");
        node(&mon, "nvidiactl");
        node(&mon, "nvidia0");
        node(&mon, "nvidia1");
        holder(f, mon);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 0), "ok");
        assert_true(r->gpus[0].listed == 4 * GIB && r->gpus[0].ghost == 0);
        assert_int_equal(r->gpus[0].n_attr, 0);
        assert_string_equal(verdict(r, 1), "orphaned-holders");
        assert_int_equal(r->gpus[1].n_attr, 2);
        for (pid_t p = 40000; p <= 40002; p++)
                assert_false(attributed(r, 1, p));
        assert_false(attributed(r, 1, 500));
        assert_sums(r);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_reused_pid(void **state)
{
        (void)state;
        struct facts *f = facts_new(1, true, 0);
        gpu_used(f, 0, 2 * GIB);
        nvml_proc(f, 0, 31300, 2 * GIB);
        /* PID 31300 now belongs to an unrelated shell that holds no device node */
        struct host_proc other = proc(31300, 1, 31300, 31300, 'S', "bash");
        finish(f, &other, 1);
        struct scan_result *r = build(f, f);
        assert_int_equal(r->gpus[0].owners[0].cls, OWNER_STALE);
        assert_non_null(strstr(r->gpus[0].owners[0].why, "reused"));
        assert_true(r->gpus[0].ghost == 2 * GIB && r->gpus[0].listed == 0);
        assert_string_equal(verdict(r, 0), "stale-owner");
        scan_result_free(r);

        /* reused by a process that started after the sample: not the owner either */
        f->pids[0].proc.start_time = T0 + 5;
        node(&f->pids[0].proc, "nvidiactl");
        node(&f->pids[0].proc, "nvidia-uvm");
        r = build(f, f);
        assert_int_equal(r->gpus[0].owners[0].cls, OWNER_STALE);
        free(other.comm);
        free(other.cmdline);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_driver_leak_needs_full_visibility(void **state)
{
        (void)state;
        struct facts *f = facts_new(1, true, 0);
        gpu_used(f, 0, 3 * GIB);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_true(r->full_visibility);
        assert_string_equal(verdict(r, 0), "driver-leak");
        assert_true(r->gpus[0].ghost == 3 * GIB);
        scan_result_free(r);

        f->host->euid = 1000; /* not root: other users' descriptors are out of sight */
        r = build(f, f);
        assert_false(r->full_visibility);
        assert_string_not_equal(verdict(r, 0), "driver-leak");
        for (size_t k = 0; k < r->gpus[0].n_findings; k++)
                assert_string_not_equal(r->gpus[0].findings[k].code, "driver-leak");
        scan_result_free(r);
        facts_destroy(f);
}

static void test_unattributed_live(void **state)
{
        (void)state;
        struct facts *f = facts_new(1, true, 0);
        gpu_used(f, 0, 5 * GIB);
        nvml_proc(f, 0, 40000, 4 * GIB); /* 1 GiB of managed memory is charged to nobody */
        struct host_proc owner = proc(40000, 1, 40000, 40000, 'R', "python");
        cuda_nodes(&owner, 1);
        holder(f, owner);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_true(r->gpus[0].listed == 4 * GIB);
        assert_true(r->gpus[0].unattributed == 1 * GIB);
        assert_true(r->gpus[0].ghost == 0);
        assert_string_equal(verdict(r, 0), "unattributed-live");
        assert_false(r->any_confirmed_ghost);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_free_delay_not_confirmed(void **state)
{
        (void)state;
        struct facts *before = facts_new(1, true, 0);
        gpu_used(before, 0, 2 * GIB);
        nvml_proc(before, 0, 31300, 2 * GIB);
        finish(before, NULL, 0);
        struct facts *now = facts_new(1, true, 0); /* the memory came back meanwhile */
        finish(now, NULL, 0);
        struct scan_result *r = build(now, before);
        assert_string_equal(verdict(r, 0), "ok");
        assert_false(r->any_confirmed_ghost);
        scan_result_free(r);
        /* and a ghost seen only in the second sample is not confirmed either */
        r = build(before, now);
        assert_false(r->gpus[0].ghost_confirmed);
        assert_false(r->any_confirmed_ghost);
        scan_result_free(r);
        facts_destroy(before);
        facts_destroy(now);
}

static void test_noise_floor(void **state)
{
        (void)state;
        struct facts *f = facts_new(1, true, 0);
        gpu_used(f, 0, 600 * MIB); /* below 1 % of 80 GiB (819 MiB) */
        nvml_proc(f, 0, 31300, 600 * MIB);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_true(r->gpus[0].noise_floor == 80 * GIB / 1000 * 10);
        assert_false(r->gpus[0].ghost_confirmed);
        assert_string_equal(verdict(r, 0), "ok");
        scan_result_free(r);
        facts_destroy(f);
}

static void test_stuck_in_driver(void **state)
{
        (void)state;
        struct facts *f = killed_job(1, 0, true);
        f->host->holders[0].state = 'D';
        snprintf(f->host->holders[0].wchan, sizeof(f->host->holders[0].wchan), "uvm_va_space_destroy");
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f); /* D in both samples */
        assert_string_equal(verdict(r, 0), "stuck-in-driver");
        assert_int_equal(r->gpus[0].findings[0].confidence, CONF_HIGH);
        assert_int_equal(r->gpus[0].findings[0].pids[0], 31301);
        scan_result_free(r);

        r = build(f, NULL); /* one sample: a suspect only */
        assert_string_equal(verdict(r, 0), "orphaned-holders");
        bool suspect = false;
        for (size_t k = 0; k < r->gpus[0].n_findings; k++)
                if (!strcmp(r->gpus[0].findings[k].code, "stuck-in-driver"))
                        suspect = r->gpus[0].findings[k].confidence == CONF_LOW;
        assert_true(suspect);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_stuck_unverified(void **state)
{
        (void)state;
        /* the killed owner's last worker is in D with no descriptor: its maps were not read */
        struct facts *f = facts_new(1, true, 0);
        gpu_used(f, 0, 2 * GIB);
        nvml_proc(f, 0, 31300, 2 * GIB);
        f->host->unverified = calloc(1, sizeof(struct host_proc));
        f->host->unverified[0] = proc(31301, 1, 31300, 31000, 'D', "pt_data_worker");
        snprintf(f->host->unverified[0].wchan, sizeof(f->host->unverified[0].wchan), "os_acquire_mutex");
        f->host->n_unverified = 1;
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 0), "stuck-in-driver");
        assert_int_equal(r->gpus[0].findings[0].pids[0], 31301);
        assert_int_equal(r->gpus[0].findings[0].confidence, CONF_HIGH);
        scan_result_free(r);
        free(f->host->unverified[0].comm);
        free(f->host->unverified[0].cmdline);
        free(f->host->unverified);
        facts_destroy(f);
}

static void test_gpu_lost_and_legacy(void **state)
{
        (void)state;
        struct facts *f = facts_new(2, true, 0);
        f->gpu->gpus[1].status = GPU_LOST;
        f->gpu->gpus[1].memory_known = false;
        /* GPU 0: a v1-only driver on an idle GPU shows the reservation as used */
        f->gpu->gpus[0].memory_api = 1;
        gpu_used(f, 0, 400 * MIB);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 1), "gpu-lost");
        assert_string_equal(verdict(r, 0), "reserved-only");
        assert_false(r->gpus[0].ghost_evidence);
        assert_true(r->any_uninspected);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_invisible_here(void **state)
{
        (void)state;
        struct facts *f = facts_new(1, false, 0); /* a container's PID namespace */
        gpu_used(f, 0, 6 * GIB);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 0), "invisible-here");
        for (size_t k = 0; k < r->gpus[0].n_findings; k++)
                assert_string_not_equal(r->gpus[0].findings[k].code, "driver-leak");
        assert_false(r->any_confirmed_ghost);
        assert_sums(r);
        scan_result_free(r);

        /* host-PID driver inside a container: the listed PID is someone else's */
        f->gpu->pid_mode = GPU_PID_HOST;
        nvml_proc(f, 0, 777777, 6 * GIB);
        finish(f, NULL, 0);
        r = build(f, f);
        assert_true(r->gpus[0].foreign == 6 * GIB);
        assert_string_equal(verdict(r, 0), "foreign-namespace");
        scan_result_free(r);
        facts_destroy(f);
}

static void test_daemon_holder(void **state)
{
        (void)state;
        /* a dead MPS client: its memory stays with the MPS server, which is no orphan */
        struct facts *f = facts_new(1, true, 0);
        gpu_used(f, 0, 2 * GIB);
        nvml_proc(f, 0, 31300, 2 * GIB);
        struct host_proc mps = proc(900, 1, 900, 900, 'S', "nvidia-cuda-mps");
        free(mps.cmdline);
        mps.cmdline = strdup("/usr/bin/nvidia-cuda-mps-server");
        cuda_nodes(&mps, 1);
        holder(f, mps);
        /* the persistence daemon holds nodes too, by its 15-character comm */
        struct host_proc pd = proc(800, 1, 800, 800, 'S', "nvidia-persiste");
        node(&pd, "nvidiactl");
        node(&pd, "nvidia0");
        holder(f, pd);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 0), "daemon-holder");
        assert_int_equal(r->gpus[0].n_attr, 0); /* daemons are never attributed */
        const struct finding *fd = &r->gpus[0].findings[0];
        assert_int_equal(fd->confidence, CONF_LOW);
        assert_non_null(strstr(fd->next_step, "echo quit | nvidia-cuda-mps-control"));
        bool mps_seen = false, pd_seen = false;
        for (size_t i = 0; i < fd->n_evidence; i++) {
                mps_seen |= strstr(fd->evidence[i], "PID 900") && strstr(fd->evidence[i], "MPS");
                pd_seen |= strstr(fd->evidence[i], "PID 800") && strstr(fd->evidence[i], "persistence daemon");
        }
        assert_true(mps_seen && pd_seen);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_zombie_owner_children(void **state)
{
        (void)state;
        /* the owner is a zombie (not reaped); a child in another group still names it as parent */
        struct facts *f = facts_new(1, true, 0);
        gpu_used(f, 0, 1 * GIB);
        nvml_proc(f, 0, 50000, 1 * GIB);
        struct host_proc z = proc(50000, 49999, 49999, 49999, 'Z', "python");
        struct host_proc c = proc(50001, 50000, 50001, 50001, 'S', "worker");
        cuda_nodes(&c, 1);
        holder(f, c);
        finish(f, &z, 1);
        struct scan_result *r = build(f, f);
        assert_int_equal(r->gpus[0].owners[0].cls, OWNER_STALE);
        assert_true(attributed(r, 0, 50001));
        assert_int_equal(r->gpus[0].attr[0].link, LINK_PPID);
        free(z.comm);
        free(z.cmdline);
        scan_result_free(r);
        facts_destroy(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_orphaned_holders),
                cmocka_unit_test(test_hidden_owner),
                cmocka_unit_test(test_healthy_job_not_attributed),
                cmocka_unit_test(test_reused_pid),
                cmocka_unit_test(test_driver_leak_needs_full_visibility),
                cmocka_unit_test(test_unattributed_live),
                cmocka_unit_test(test_free_delay_not_confirmed),
                cmocka_unit_test(test_noise_floor),
                cmocka_unit_test(test_stuck_in_driver),
                cmocka_unit_test(test_stuck_unverified),
                cmocka_unit_test(test_gpu_lost_and_legacy),
                cmocka_unit_test(test_invisible_here),
                cmocka_unit_test(test_daemon_holder),
                cmocka_unit_test(test_zombie_owner_children),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
