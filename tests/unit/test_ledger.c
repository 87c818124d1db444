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
#include "render/scan_render.h"

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
        bool mps_seen = false;
        for (size_t i = 0; i < fd->n_evidence; i++) {
                mps_seen |= strstr(fd->evidence[i], "PID 900") && strstr(fd->evidence[i], "MPS");
                assert_null(strstr(fd->evidence[i], "PID 800")); /* it keeps no client memory */
        }
        assert_true(mps_seen);
        for (size_t i = 0; i < fd->n_pids; i++)
                assert_int_not_equal(fd->pids[i], 800);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_monitor_daemon_blocks_reset_only(void **state)
{
        (void)state;
        /* a DCGM exporter (nvidiactl + nvidia0, no nvidia-uvm) next to a ghost no process holds */
        struct facts *f = facts_new(1, true, 0);
        gpu_used(f, 0, 2 * GIB);
        nvml_proc(f, 0, 31300, 2 * GIB);
        struct host_proc dc = proc(700, 1, 700, 700, 'S', "dcgm-exporter");
        node(&dc, "nvidiactl");
        node(&dc, "nvidia0");
        holder(f, dc);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 0), "stale-owner");
        const struct finding *fd = &r->gpus[0].findings[0];
        assert_int_equal(fd->confidence, CONF_HIGH);
        assert_int_equal(r->gpus[0].n_attr, 0);
        bool blocker = false;
        for (size_t i = 0; i < fd->n_evidence; i++)
                blocker |= strstr(fd->evidence[i], "PID 700") && strstr(fd->evidence[i], "reset needs it stopped") &&
                           strstr(fd->evidence[i], "not the ghost");
        assert_true(blocker);
        for (size_t i = 0; i < fd->n_pids; i++)
                assert_int_not_equal(fd->pids[i], 700);
        assert_non_null(strstr(fd->next_step, "--gpu-reset -i 0000:1b:00.0"));
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


/* ---- issue: attribution beyond the classic case -------------------------------------------- */

static const struct finding *main_finding(const struct scan_result *r, unsigned gpu)
{
        return &r->gpus[gpu].findings[0];
}

static bool any_text(const struct finding *fd, const char *needle)
{
        if (strstr(fd->summary, needle) || strstr(fd->next_step, needle))
                return true;
        for (size_t i = 0; i < fd->n_evidence; i++)
                if (strstr(fd->evidence[i], needle))
                        return true;
        return false;
}

/* In a PID namespace, nothing listed, memory used: out of sight, unless a CUDA process in sight
 * holds the GPU, listed nowhere and tied to no listed job (a list that missed a job here, or a
 * dead job's worker): then unknown, naming both. */
static void test_invisible_here_with_holder_in_sight(void **state)
{
        (void)state;
        struct facts *f = facts_new(2, false, 0);
        gpu_used(f, 0, 6 * GIB);
        struct host_proc lone = proc(4100, 1, 4100, 4100, 'S', "python");
        cuda_nodes(&lone, 2);
        holder(f, lone);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 0), "unknown");
        assert_int_equal(main_finding(r, 0)->confidence, CONF_LOW);
        assert_true(any_text(main_finding(r, 0), "held out of sight of this PID namespace, or by the 1 CUDA process here"));
        assert_true(any_text(main_finding(r, 0), "PID 4100 (python) holds /dev/nvidia0 and nvidia-uvm, is listed on no GPU"));
        assert_true(main_finding(r, 0)->bytes == 6 * GIB);
        assert_false(r->any_confirmed_ghost);
        assert_sums(r);
        scan_result_free(r);
        /* the same process listed alive on GPU 1 (its job), a worker of it beside it: both are
         * explained, and GPU 0's memory is out of sight again */
        gpu_used(f, 1, 2 * GIB);
        nvml_proc(f, 1, 4100, 2 * GIB);
        struct host_proc w = proc(4101, 4100, 4100, 4100, 'S', "pt_data_worker");
        cuda_nodes(&w, 2);
        holder(f, w);
        finish(f, NULL, 0);
        r = build(f, f);
        assert_string_equal(verdict(r, 0), "invisible-here");
        assert_string_equal(verdict(r, 1), "ok");
        scan_result_free(r);
        facts_destroy(f);
}

static const struct attribution *attr_of(const struct scan_result *r, unsigned gpu, pid_t pid)
{
        const struct gpu_ledger *l = &r->gpus[gpu];
        for (size_t a = 0; a < l->n_attr; a++)
                if (r->facts->host->holders[l->attr[a].holder].pid == pid)
                        return &l->attr[a];
        return NULL;
}

static void leader(struct facts *f, pid_t pid, bool present)
{
        f->leaders = realloc(f->leaders, (f->n_leaders + 1) * sizeof(*f->leaders));
        f->leaders[f->n_leaders++] = (struct pid_presence){ .pid = pid, .present = present, .state = present ? 'S' : '?' };
}

static void test_worker_in_own_session(void **state)
{
        (void)state;
        struct facts *f = facts_new(2, true, 0);
        gpu_used(f, 1, 2 * GIB);
        nvml_proc(f, 1, 31300, 2 * GIB);
        struct host_proc w = proc(31301, 1, 31301, 31301, 'S', "pt_data_worker"); /* setsid() after the fork */
        cuda_nodes(&w, 2);
        holder(f, w);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 1), "orphaned-holders");
        const struct attribution *a = attr_of(r, 1, 31301);
        assert_non_null(a);
        /* the only family no link explains, for the only dead owner: elimination, not a proof */
        assert_int_equal(a->link, LINK_ELIMINATION);
        assert_int_equal(a->confidence, CONF_MEDIUM);
        assert_false(a->proof);
        assert_null(attr_of(r, 0, 31301)); /* GPU 0 has nothing to explain */
        const struct finding *fd = main_finding(r, 1);
        assert_int_equal(fd->confidence, CONF_MEDIUM);
        assert_false(any_text(fd, "nothing here holds"));
        assert_non_null(strstr(fd->next_step, "reclaim --gpu 1 --pid 31301"));
        assert_true(r->gpus[1].ghost == 2 * GIB);
        assert_sums(r);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_launcher_child_owner(void **state)
{
        (void)state;
        /* the owner 31300 was a launcher's (31000) child: its workers are in the launcher's group */
        for (int gone = 0; gone <= 1; gone++) {
                struct facts *f = facts_new(1, true, 0);
                gpu_used(f, 0, 2 * GIB);
                nvml_proc(f, 0, 31300, 2 * GIB);
                for (pid_t p = 31301; p <= 31302; p++) {
                        struct host_proc w = proc(p, 1, 31000, 31000, 'S', "pt_data_worker");
                        cuda_nodes(&w, 1);
                        holder(f, w);
                }
                leader(f, 31000, !gone);
                family(f, 31301, 1); /* the workers share the owner's descriptions */
                family(f, 31302, 1);
                finish(f, NULL, 0);
                struct scan_result *r = build(f, f);
                assert_string_equal(verdict(r, 0), "orphaned-holders");
                assert_true(attributed(r, 0, 31301) && attributed(r, 0, 31302));
                assert_int_equal(attr_of(r, 0, 31301)->link, LINK_ELIMINATION);
                assert_int_equal(attr_of(r, 0, 31301)->confidence, CONF_MEDIUM);
                assert_int_equal(attr_of(r, 0, 31302)->proof, gone); /* a default target once the leader is gone */
                if (gone)
                        assert_non_null(strstr(main_finding(r, 0)->next_step, "reclaim --gpu 0`"));
                else
                        assert_non_null(strstr(main_finding(r, 0)->next_step, "--pid 31301,31302"));
                scan_result_free(r);
                facts_destroy(f);
        }
}

/* Description families (docs/verdicts.md): the kernel's proof of who keeps a context. */

/* (a) a setsid worker that shares its description with a worker in the dead owner's group is
 * that job's, at that link's confidence; the other GPU's setsid job is found by elimination */
static void test_family_ties_setsid_worker(void **state)
{
        (void)state;
        struct facts *f = facts_new(2, true, 0);
        gpu_used(f, 0, 2 * GIB);
        gpu_used(f, 1, 1 * GIB);
        nvml_proc(f, 0, 1000, 2 * GIB);
        nvml_proc(f, 1, 2000, 1 * GIB);
        struct host_proc x1 = proc(1001, 1, 1001, 1001, 'S', "worker"); /* setsid */
        struct host_proc x2 = proc(1002, 1, 1000, 1000, 'S', "worker");
        struct host_proc y1 = proc(2001, 1, 2001, 2001, 'S', "worker");
        struct host_proc y2 = proc(2002, 1, 2002, 2002, 'S', "worker");
        struct host_proc *all[] = { &x1, &x2, &y1, &y2 };
        for (size_t i = 0; i < 4; i++) {
                cuda_nodes(all[i], 2); /* CUDA opens every GPU's node */
                holder(f, *all[i]);
        }
        family(f, 1001, 1);
        family(f, 1002, 1);
        family(f, 2001, 2);
        family(f, 2002, 2);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_true(attributed(r, 0, 1001) && attributed(r, 0, 1002));
        assert_false(attributed(r, 0, 2001) || attributed(r, 0, 2002));
        assert_int_equal(attr_of(r, 0, 1002)->link, LINK_PGID);
        assert_int_equal(attr_of(r, 0, 1001)->link, LINK_FAMILY);
        assert_int_equal(attr_of(r, 0, 1001)->confidence, CONF_HIGH);
        assert_true(attr_of(r, 0, 1001)->proof);
        assert_int_equal(main_finding(r, 0)->confidence, CONF_HIGH);
        assert_non_null(strstr(main_finding(r, 0)->next_step, "reclaim --gpu 0`"));
        assert_true(attributed(r, 1, 2001) && attributed(r, 1, 2002));
        assert_false(attributed(r, 1, 1001) || attributed(r, 1, 1002));
        assert_int_equal(attr_of(r, 1, 2001)->link, LINK_ELIMINATION);
        assert_int_equal(attr_of(r, 1, 2001)->to_pid, 2000);
        assert_int_equal(main_finding(r, 1)->confidence, CONF_MEDIUM);
        assert_non_null(strstr(main_finding(r, 1)->next_step, "--pid 2001,2002"));
        assert_sums(r);
        scan_result_free(r);
        facts_destroy(f);
}

/* two dead jobs on one GPU: B's plain workers by their group, A's setsid workers by
 * elimination (A's owner is the only dead one no holder explains) */
static void test_family_two_dead_jobs_one_gpu(void **state)
{
        (void)state;
        struct facts *f = facts_new(1, true, 0);
        gpu_used(f, 0, 4 * GIB);
        nvml_proc(f, 0, 1000, 3 * GIB);
        nvml_proc(f, 0, 2000, 1 * GIB);
        struct host_proc a1 = proc(1001, 1, 1001, 1001, 'S', "a"), a2 = proc(1002, 1, 1002, 1002, 'S', "a");
        struct host_proc b1 = proc(2001, 1, 2000, 2000, 'S', "b"), b2 = proc(2002, 1, 2000, 2000, 'S', "b");
        struct host_proc *all[] = { &a1, &a2, &b1, &b2 };
        for (size_t i = 0; i < 4; i++) {
                cuda_nodes(all[i], 1);
                holder(f, *all[i]);
        }
        family(f, 1001, 1);
        family(f, 1002, 1);
        family(f, 2001, 2);
        family(f, 2002, 2);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        for (pid_t p = 1001; p <= 1002; p++) {
                assert_int_equal(attr_of(r, 0, p)->link, LINK_ELIMINATION);
                assert_int_equal(attr_of(r, 0, p)->to_pid, 1000);
        }
        for (pid_t p = 2001; p <= 2002; p++) {
                assert_int_equal(attr_of(r, 0, p)->link, LINK_PGID);
                assert_true(attr_of(r, 0, p)->proof);
        }
        assert_int_equal(r->gpus[0].n_attr, 4);
        scan_result_free(r);
        facts_destroy(f);
}

/* (b) a family with a live owner is that live job's, whatever its numbers say; (d) two free
 * families and two dead owners: PID order, low; a process holding no nvidiactl keeps no context */
static void test_family_live_pid_order_no_ctl(void **state)
{
        (void)state;
        struct facts *f = facts_new(2, true, 0);
        gpu_used(f, 0, 2 * GIB);
        gpu_used(f, 1, 3 * GIB);
        nvml_proc(f, 0, 1000, 2 * GIB);
        nvml_proc(f, 1, 2000, 2 * GIB);
        nvml_proc(f, 1, 3000, 1 * GIB); /* live */
        struct host_proc w1 = proc(1001, 1, 1001, 1001, 'S', "w"), w2 = proc(2001, 1, 2001, 2001, 'S', "w");
        struct host_proc live = proc(3000, 500, 3000, 500, 'S', "live"), lw = proc(3001, 1, 3001, 3001, 'S', "lw");
        struct host_proc noctl = proc(2500, 1, 2500, 2500, 'S', "sleep");
        struct host_proc *all[] = { &w1, &w2, &live, &lw };
        for (size_t i = 0; i < 4; i++) {
                cuda_nodes(all[i], 2);
                holder(f, *all[i]);
        }
        node(&noctl, "nvidia0");
        node(&noctl, "nvidia1");
        node(&noctl, "nvidia-uvm");
        holder(f, noctl);
        family(f, 1001, 1);
        family(f, 2001, 2);
        family(f, 2500, 3);
        family(f, 3000, 4);
        family(f, 3001, 4); /* shares the live owner's description, though it left its session */
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_int_equal(attr_of(r, 0, 1001)->link, LINK_PID_ORDER);
        assert_int_equal(attr_of(r, 0, 1001)->confidence, CONF_LOW);
        assert_int_equal(attr_of(r, 1, 2001)->link, LINK_PID_ORDER);
        assert_false(attributed(r, 1, 1001) || attributed(r, 0, 2001));
        for (unsigned g = 0; g < 2; g++) {
                assert_false(attributed(r, g, 2500));
                assert_false(attributed(r, g, 3001));
        }
        pid_t owner = 0;
        assert_int_equal(ledger_live_tie(r, &f->host->holders[3], NULL, &owner, NULL), JOB_TIE_FAMILY);
        assert_int_equal(owner, 3000);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_holder_needs_the_gpus_node(void **state)
{
        (void)state;
        /* the dead job of GPU 0; a dead job's worker on GPU 1 (its own group) holds only nvidia1 */
        struct facts *f = facts_new(2, true, 0);
        gpu_used(f, 0, 2 * GIB);
        nvml_proc(f, 0, 31300, 2 * GIB);
        struct host_proc w = proc(31301, 1, 31300, 31300, 'S', "pt_data_worker");
        node(&w, "nvidiactl");
        node(&w, "nvidia-uvm");
        node(&w, "nvidia1");
        holder(f, w);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_false(attributed(r, 0, 31301));
        assert_string_equal(verdict(r, 0), "stale-owner");
        scan_result_free(r);
        facts_destroy(f);
}

static void test_legacy_v1_ghost_is_the_stale_bytes(void **state)
{
        (void)state;
        struct facts *f = killed_job(1, 0, true);
        f->gpu->gpus[0].memory_api = 1;
        gpu_used(f, 0, 2 * GIB + 579 * MIB); /* v1: used includes the reservation */
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 0), "orphaned-holders");
        assert_true(r->gpus[0].ghost == 2 * GIB);
        assert_true(r->gpus[0].unattributed == 579 * MIB);
        assert_true(any_text(main_finding(r, 0), "likely the driver's reservation"));
        assert_sums(r);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_hidden_owner_beside_wrapped_live_job(void **state)
{
        (void)state;
        /* hidden dead owners; GPU 0: a live job whose wrapper (39999) exited — its workers' group
         * leader is gone, their parent is the live owner; GPU 1: a dead job's orphans */
        struct facts *f = facts_new(2, true, 0);
        gpu_used(f, 0, 4 * GIB + 1 * GIB); /* 1 GiB of a dead job beside the live one */
        nvml_proc(f, 0, 40000, 4 * GIB);
        struct host_proc ow = proc(40000, 1, 39999, 39999, 'R', "python");
        cuda_nodes(&ow, 2);
        holder(f, ow);
        for (pid_t p = 40001; p <= 40002; p++) {
                struct host_proc w = proc(p, 40000, 39999, 39999, 'S', "pt_data_worker");
                cuda_nodes(&w, 2);
                holder(f, w);
        }
        gpu_used(f, 1, 2 * GIB);
        struct host_proc o1 = proc(31301, 1, 31300, 31300, 'S', "pt_data_worker");
        node(&o1, "nvidiactl");
        node(&o1, "nvidia-uvm");
        node(&o1, "nvidia1");
        holder(f, o1);
        struct host_proc o0 = proc(32301, 1, 32300, 32300, 'S', "pt_data_worker");
        node(&o0, "nvidiactl");
        node(&o0, "nvidia-uvm");
        node(&o0, "nvidia0");
        holder(f, o0);
        leader(f, 39999, false);
        leader(f, 31300, false);
        leader(f, 32300, false);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        for (pid_t p = 40000; p <= 40002; p++) {
                assert_false(attributed(r, 0, p));
                assert_false(attributed(r, 1, p));
        }
        assert_true(attributed(r, 1, 31301) && !attributed(r, 0, 31301));
        assert_true(attributed(r, 0, 32301) && !attributed(r, 1, 32301));
        assert_string_equal(verdict(r, 1), "orphaned-holders");
        assert_string_equal(verdict(r, 0), "orphaned-holders"); /* a ghost beside a live job */
        assert_true(r->gpus[0].listed == 4 * GIB && r->gpus[0].ghost == 1 * GIB);
        assert_int_equal(attr_of(r, 0, 32301)->confidence, CONF_MEDIUM);
        assert_false(attr_of(r, 0, 32301)->candidate);
        assert_sums(r);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_pid_reused_by_gpu_processes(void **state)
{
        (void)state;
        /* by a monitor: nvidiactl and nvidia0, no nvidia-uvm */
        struct facts *f = killed_job(1, 0, true);
        struct host_proc mon = proc(31300, 1, 500, 500, 'S', "nvidia-smi");
        node(&mon, "nvidiactl");
        node(&mon, "nvidia0");
        holder(f, mon);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_int_equal(r->gpus[0].owners[0].cls, OWNER_STALE);
        assert_non_null(strstr(r->gpus[0].owners[0].why, "no nvidia-uvm"));
        assert_string_equal(verdict(r, 0), "orphaned-holders");
        assert_true(r->gpus[0].ghost == 2 * GIB);
        assert_true(attributed(r, 0, 31301) && attributed(r, 0, 31302) && !attributed(r, 0, 31300));
        scan_result_free(r);
        facts_destroy(f);

        /* by a CUDA job on another GPU, listed there */
        f = killed_job(2, 1, true);
        for (size_t i = 0; i < f->host->n_holders; i++) { /* the dead job ran on GPU 1 only */
                f->host->holders[i].n_nodes = 3;
                snprintf(f->host->holders[i].nodes[2].name, sizeof(f->host->holders[i].nodes[2].name), "nvidia1");
        }
        gpu_used(f, 0, 1 * GIB);
        nvml_proc(f, 0, 31300, 1 * GIB);
        struct host_proc job = proc(31300, 1, 31300, 31300, 'R', "python");
        node(&job, "nvidiactl");
        node(&job, "nvidia-uvm");
        node(&job, "nvidia0");
        holder(f, job);
        finish(f, NULL, 0);
        r = build(f, f);
        assert_int_equal(r->gpus[0].owners[0].cls, OWNER_LIVE);
        assert_int_equal(r->gpus[1].owners[0].cls, OWNER_STALE);
        assert_non_null(strstr(r->gpus[1].owners[0].why, "holds no /dev/nvidia1"));
        assert_string_equal(verdict(r, 0), "ok");
        assert_true(r->gpus[1].ghost == 2 * GIB);
        assert_string_equal(verdict(r, 1), "orphaned-holders");
        /* the new job took the number, and so leads the workers' old group: named, not a default target */
        assert_int_equal(attr_of(r, 1, 31301)->tie, JOB_TIE_GROUP);
        assert_non_null(strstr(main_finding(r, 1)->next_step, "--pid 31301,31302"));
        scan_result_free(r);
        facts_destroy(f);
}

static void test_next_steps_without_pci(void **state)
{
        (void)state;
        struct facts *f = facts_new(2, true, 0);
        gpu_used(f, 1, 2 * GIB);
        nvml_proc(f, 1, 31300, 2 * GIB);
        f->gpu->gpus[1].pci_bus_id[0] = '\0';
        snprintf(f->gpu->gpus[1].uuid, sizeof(f->gpu->gpus[1].uuid), "GPU-1111");
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 1), "stale-owner");
        assert_non_null(strstr(main_finding(r, 1)->next_step, "--gpu-reset -i GPU-1111` (by UUID"));
        assert_null(strstr(main_finding(r, 1)->next_step, "-i 0"));
        scan_result_free(r);
        f->gpu->gpus[1].uuid[0] = '\0';
        r = build(f, f);
        assert_non_null(strstr(main_finding(r, 1)->next_step, "--gpu-reset -i 1` (by index"));
        scan_result_free(r);
        facts_destroy(f);
}

/* The workers that held a dead job's memory have just exited: the first sample after them still
 * shows the memory (the driver's teardown starts when the last holder goes). Not a ghost, not an
 * owner out of sight, until a later sample shows it staying. */
static void test_holders_just_gone_is_freeing(void **state)
{
        (void)state;
        for (int initial = 1; initial >= 0; initial--) {
                struct facts *before = killed_job(1, 0, true);
                before->host->initial_pidns = initial;
                finish(before, NULL, 0);
                struct facts *now = dead_owner(initial, 0);
                struct scan_result *r = build(now, before);
                assert_string_equal(verdict(r, 0), "freeing");
                assert_false(r->gpus[0].ghost_confirmed);
                assert_false(r->any_confirmed_ghost);
                assert_int_equal(r->gpus[0].n_gone_holders, 2);
                bool said = false;
                for (size_t e = 0; e < r->gpus[0].findings[0].n_evidence; e++)
                        said |= strstr(r->gpus[0].findings[0].evidence[e], "PIDs 31301, 31302 held it in the earlier sample") != NULL;
                assert_true(said);
                scan_result_free(r);
                /* the memory stays over the next two samples: no longer a teardown */
                r = build(now, now);
                assert_string_equal(verdict(r, 0), initial ? "stale-owner" : "invisible-here");
                scan_result_free(r);
                /* this sample walked no holders (only the listed owners): nothing says they went */
                now->host->holder_source = HOST_SOURCE_OWNERS;
                r = build(now, before);
                assert_string_not_equal(verdict(r, 0), "freeing");
                assert_int_equal(r->gpus[0].n_gone_holders, 0);
                scan_result_free(r);
                facts_destroy(before);
                facts_destroy(now);
        }
}

static void test_freeing_is_not_a_ghost(void **state)
{
        (void)state;
        struct facts *before = facts_new(1, true, 0);
        gpu_used(before, 0, 2 * GIB);
        nvml_proc(before, 0, 31300, 2 * GIB);
        finish(before, NULL, 0);
        struct facts *now = facts_new(1, true, 0);
        gpu_used(now, 0, 1536 * MIB); /* the driver is giving it back */
        nvml_proc(now, 0, 31300, 1536 * MIB);
        finish(now, NULL, 0);
        struct scan_result *r = build(now, before);
        assert_string_equal(verdict(r, 0), "freeing");
        assert_false(r->gpus[0].ghost_confirmed);
        assert_false(r->any_confirmed_ghost);
        assert_true(r->gpus[0].freed_bytes == 512 * MIB);
        /* one figure, one meaning: the bytes are freeing, not ghost (the equation, the metrics) */
        assert_true(r->gpus[0].freeing_bytes == 1536 * MIB);
        assert_true(r->gpus[0].ghost == 0 && r->gpus[0].unattributed == 0);
        assert_true(r->gpus[0].findings[0].bytes == 1536 * MIB);
        for (size_t k = 0; k < r->gpus[0].n_findings; k++) {
                assert_string_not_equal(r->gpus[0].findings[k].code, "driver-leak");
                assert_null(strstr(r->gpus[0].findings[k].next_step, "reset"));
        }
        scan_result_free(r);
        /* the same bytes twice: a ghost */
        r = build(now, now);
        assert_string_equal(verdict(r, 0), "stale-owner");
        assert_true(r->gpus[0].freeing_bytes == 0 && r->gpus[0].ghost == 1536 * MIB);
        scan_result_free(r);
        facts_destroy(before);
        facts_destroy(now);
        /* a teardown that stalls: freeing in the earlier sample (its owner exiting), the same
         * bytes now that the owner is gone: a confirmed ghost, not "not in the earlier sample" */
        before = facts_new(1, true, 0);
        gpu_used(before, 0, 2 * GIB);
        nvml_proc(before, 0, 31300, 2 * GIB);
        struct host_proc ex = proc(31300, 1, 31300, 31300, 'R', "python");
        ex.exiting = true;
        finish(before, &ex, 1);
        now = facts_new(1, true, 0);
        gpu_used(now, 0, 2 * GIB);
        nvml_proc(now, 0, 31300, 2 * GIB);
        finish(now, NULL, 0);
        r = build(before, NULL);
        assert_string_equal(verdict(r, 0), "freeing");
        scan_result_free(r);
        r = build(now, before);
        assert_string_equal(verdict(r, 0), "stale-owner");
        assert_true(r->gpus[0].ghost_confirmed);
        scan_result_free(r);
        facts_destroy(before);
        facts_destroy(now);
        free(ex.comm);
        free(ex.cmdline);
}

/* The tail of a teardown, below the noise floor (64 MiB of an 80 GiB GPU's 819 MiB floor): still
 * falling, so freeing, never "every byte accounted for" beside a ghost figure; a residue that
 * stays (or moves by less than a MiB) is ok, and its headline says how much is unexplained. */
static void test_freeing_below_the_floor(void **state)
{
        (void)state;
        struct facts *before = facts_new(1, true, 0);
        gpu_used(before, 0, 96 * MIB);
        finish(before, NULL, 0);
        struct facts *now = facts_new(1, true, 0);
        gpu_used(now, 0, 82 * MIB);
        finish(now, NULL, 0);
        struct scan_result *r = build(now, before);
        assert_string_equal(verdict(r, 0), "freeing");
        assert_true(r->gpus[0].freeing_bytes == 82 * MIB && r->gpus[0].ghost == 0);
        assert_string_equal(r->gpus[0].findings[0].summary, "82 MiB still being released by the driver");
        scan_result_free(r);
        /* the same residue twice: ok, the residue named */
        r = build(now, now);
        assert_string_equal(verdict(r, 0), "ok");
        assert_true(r->gpus[0].ghost == 82 * MIB && r->gpus[0].freeing_bytes == 0);
        assert_string_equal(r->gpus[0].findings[0].summary, "no ghost: 82 MiB unexplained, below the noise floor (819 MiB)");
        /* and the equation beside it does not call those bytes a ghost outright */
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        assert_non_null(m);
        scan_text(m, r, false, false);
        fclose(m);
        assert_non_null(strstr(text, "+ ghost 82 MiB (unconfirmed) + unattributed 0 MiB"));
        free(text);
        scan_result_free(r);
        /* a jitter of the used figure (less than a MiB) below the floor is no teardown */
        gpu_used(before, 0, 82 * MIB + 4096);
        r = build(now, before);
        assert_string_equal(verdict(r, 0), "ok");
        scan_result_free(r);
        facts_destroy(before);
        facts_destroy(now);
}

static void test_no_process_list(void **state)
{
        (void)state;
        struct facts *f = facts_new(2, true, 0);
        gpu_used(f, 1, 3 * GIB);
        f->gpu->gpus[1].procs_known = false;
        gpu_info_add_error(&f->gpu->gpus[1], "processes", 3, "Not Supported");
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 1), "unknown");
        assert_false(r->gpus[1].ghost_confirmed);
        assert_true(r->gpus[1].ghost == 0 && r->gpus[1].unattributed == 3 * GIB);
        assert_true(r->any_uninspected);
        assert_false(r->any_confirmed_ghost);
        assert_true(any_text(main_finding(r, 1), "Not Supported"));
        assert_null(strstr(main_finding(r, 1)->next_step, "reset"));
        assert_string_equal(verdict(r, 0), "ok");
        scan_result_free(r);
        free(f->gpu->gpus[1].errors);
        facts_destroy(f);
}

static void test_not_root_never_high_or_reset(void **state)
{
        (void)state;
        struct facts *f = dead_owner(true, 1000);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 0), "stale-owner");
        const struct finding *fd = main_finding(r, 0);
        assert_int_equal(fd->confidence, CONF_LOW);
        assert_non_null(strstr(fd->summary, "no holder is visible to this user"));
        assert_null(strstr(fd->summary, "nothing here holds"));
        assert_non_null(strstr(fd->next_step, "sudo ghostvram scan --gpu 0"));
        assert_null(strstr(fd->next_step, "--gpu-reset"));
        scan_result_free(r);

        /* root in the initial namespace with limits: unknown says what to look at, not "as root" */
        f->host->euid = 0;
        f->gpu->gpus[0].n_procs = 0;
        char *lim = strdup("PID 1: descriptors unreadable");
        f->host->limits = &lim;
        f->host->n_limits = 1;
        r = build(f, f);
        assert_string_equal(verdict(r, 0), "unknown");
        assert_null(strstr(main_finding(r, 0)->next_step, "as root"));
        assert_non_null(strstr(main_finding(r, 0)->next_step, "--verbose"));
        scan_result_free(r);
        f->host->limits = NULL;
        f->host->n_limits = 0;
        free(lim);
        facts_destroy(f);
}

/* MIG: the GPU's ledger over its instances, each instance's own share, the holders tied by the
 * GPU's node; without a process list (withheld from a non-root caller) unknown, and where the
 * memory is said per instance. */
static void test_mig_instances(void **state)
{
        (void)state;
        struct facts *f = killed_job(1, 0, true); /* dead 31300 (2 GiB), workers 31301/31302 */
        struct gpu_info *g = &f->gpu->gpus[0];
        gpu_used(f, 0, 3 * GIB);
        g->mig_mode = 1;
        g->procs[0].gpu_instance = 2;
        g->procs[0].compute_instance = 0;
        nvml_proc(f, 0, 40000, 1 * GIB);
        g->procs[1].gpu_instance = 1;
        g->procs[1].compute_instance = 0;
        struct host_proc owner = proc(40000, 1, 40000, 40000, 'R', "python");
        cuda_nodes(&owner, 1);
        node(&owner, "nvidia-caps/nvidia-cap12");
        holder(f, owner);
        g->mig[0] = (struct gpu_mig_device){ 1, 0, true, 40 * GIB, 1 * GIB };
        g->mig[1] = (struct gpu_mig_device){ 2, 0, true, 40 * GIB, 2 * GIB };
        g->n_mig = 2;
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        const struct gpu_ledger *l = &r->gpus[0];
        assert_string_equal(verdict(r, 0), "orphaned-holders");
        assert_true(l->listed == 1 * GIB && l->ghost == 2 * GIB && l->unattributed == 0);
        assert_true(attributed(r, 0, 31301) && attributed(r, 0, 31302) && !attributed(r, 0, 40000));
        assert_int_equal(l->n_mig, 2);
        assert_int_equal(l->mig[0].gpu_instance, 1);
        assert_true(l->mig[0].listed == 1 * GIB && l->mig[0].ghost == 0 && l->mig[0].unattributed == 0);
        assert_int_equal(l->mig[1].gpu_instance, 2);
        assert_true(l->mig[1].listed == 0 && l->mig[1].ghost == 2 * GIB && l->mig[1].unattributed == 0);
        assert_int_equal(l->owners[0].gpu_instance, 2);
        assert_int_equal(l->owners[1].gpu_instance, 1);
        assert_sums(r);
        scan_result_free(r);

        /* not root, the list withheld (NO_PERMISSION): unknown, each instance's memory unattributed */
        f->host->euid = 1000;
        g->procs_known = false;
        g->n_procs = 0;
        gpu_info_add_error(g, "compute", 4, "Insufficient Permissions");
        r = build(f, f);
        l = &r->gpus[0];
        assert_string_equal(verdict(r, 0), "unknown");
        assert_true(l->listed == 0 && l->ghost == 0 && l->unattributed == 3 * GIB);
        assert_int_equal(l->n_attr, 0);
        assert_true(l->mig[1].unattributed == 2 * GIB && l->mig[1].ghost == 0);
        assert_true(r->any_uninspected);
        assert_false(r->any_confirmed_ghost);
        const struct finding *fd = main_finding(r, 0);
        assert_non_null(strstr(fd->summary, "only to a privileged caller"));
        assert_true(any_text(fd, "Insufficient Permissions"));
        assert_true(any_text(fd, "mig/monitor capability"));
        assert_true(any_text(fd, "MIG GPU instance 2 (compute instance 0): 2048 MiB used of 40960 MiB"));
        assert_non_null(strstr(fd->next_step, "sudo ghostvram scan --gpu 0"));
        assert_null(strstr(fd->next_step, "reset"));
        scan_result_free(r);
        g->n_procs = 2; /* freed by facts_destroy */
        free(g->errors);
        g->errors = NULL;
        facts_destroy(f);
}

static void test_live_owner_unreadable_to_user(void **state)
{
        (void)state;
        /* another user's live job: its descriptors are unreadable, so its holdings are unknown */
        struct facts *f = facts_new(1, true, 1000);
        gpu_used(f, 0, 2 * GIB);
        nvml_proc(f, 0, 40000, 2 * GIB);
        struct host_proc o = proc(40000, 1, 40000, 40000, 'R', "python");
        o.skipped = HOST_SKIP_FDS | HOST_SKIP_MAPS;
        finish(f, &o, 1);
        struct scan_result *r = build(f, f);
        assert_int_equal(r->gpus[0].owners[0].cls, OWNER_LIVE);
        assert_string_equal(verdict(r, 0), "ok");
        free(o.comm);
        free(o.cmdline);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_unlinked_cuda_holder_is_never_nothing(void **state)
{
        (void)state;
        /* DDP under a launcher (30000, holds nothing): rank 0 (30001, GPU 0) killed, rank 1
         * (30002, GPU 1) alive; rank 0's worker is in the launcher's group with the live rank */
        struct facts *f = facts_new(2, true, 0);
        gpu_used(f, 0, 2 * GIB);
        nvml_proc(f, 0, 30001, 2 * GIB);
        gpu_used(f, 1, 2 * GIB);
        nvml_proc(f, 1, 30002, 2 * GIB);
        struct host_proc r1 = proc(30002, 30000, 30000, 30000, 'R', "python");
        cuda_nodes(&r1, 2);
        holder(f, r1);
        struct host_proc w = proc(30011, 1, 30000, 30000, 'S', "pt_data_worker");
        cuda_nodes(&w, 2);
        holder(f, w);
        leader(f, 30000, true);
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_false(attributed(r, 0, 30011)); /* a group member of a live owner is never an orphan */
        assert_string_equal(verdict(r, 0), "stale-owner");
        const struct finding *fd = main_finding(r, 0);
        assert_false(any_text(fd, "nothing here holds"));
        assert_non_null(strstr(fd->summary, "1 CUDA process holds the GPU with no link to it"));
        assert_true(any_text(fd, "PID 30011 (pt_data_worker) holds /dev/nvidia0 and nvidia-uvm with no link to the dead owner (process-group of live PID 30002)"));
        assert_int_equal(fd->confidence, CONF_MEDIUM);
        assert_null(strstr(fd->next_step, "--gpu-reset"));
        assert_non_null(strstr(fd->next_step, "reclaim --gpu 0 --pid"));
        assert_string_equal(verdict(r, 1), "ok");
        scan_result_free(r);
        facts_destroy(f);
}

/* ---- no sentence is cut ------------------------------------------------------------------ */

/* A sentence arrives whole: its brackets and backquotes close, and it ends at a word (not inside
 * one, the way a fixed-size buffer cuts). */
static void assert_whole(const char *s, const char *ending)
{
        assert_non_null(s);
        int paren = 0, tick = 0;
        for (const char *c = s; *c; c++) {
                paren += *c == '(' ? 1 : *c == ')' ? -1 : 0;
                tick ^= *c == '`';
                assert_true(paren >= 0);
        }
        if (paren || tick)
                fail_msg("unbalanced: \"%s\"", s);
        size_t n = strlen(s), m = strlen(ending);
        if (n < m || strcmp(s + n - m, ending) != 0)
                fail_msg("\"%s\" does not end with \"%s\"", s, ending);
}

/* Every sentence of every finding, attribution and owner of r is whole. */
static void assert_all_whole(const struct scan_result *r)
{
        for (size_t g = 0; g < r->n_gpus; g++) {
                const struct gpu_ledger *l = &r->gpus[g];
                for (size_t k = 0; k < l->n_findings; k++) {
                        const struct finding *fd = &l->findings[k];
                        assert_whole(fd->summary, "");
                        for (size_t e = 0; e < fd->n_evidence; e++)
                                assert_whole(fd->evidence[e], "");
                        if (fd->next_step)
                                assert_whole(fd->next_step, "");
                }
                for (size_t a = 0; a < l->n_attr; a++)
                        assert_whole(l->attr[a].text, "");
                for (size_t k = 0; k < l->n_owners; k++)
                        assert_whole(l->owners[k].why, "");
        }
}

/* The longest texts: 40 workers with 7-digit PIDs (every one in the command: a command that
 * names some leaves the rest holding the memory), an orphan of two GPUs with its leader gone,
 * a PID reused by a process with a long name. Each arrives whole. */
static void test_long_texts_arrive_whole(void **state)
{
        (void)state;
        struct facts *f = facts_new(1, true, 0);
        gpu_used(f, 0, 2 * GIB);
        nvml_proc(f, 0, 4194300, 2 * GIB);
        for (pid_t w = 4194301; w <= 4194340; w++) {
                struct host_proc p = proc(w, 1, 4194300, 4194000, 'S', "pt_data_worker");
                cuda_nodes(&p, 1);
                holder(f, p);
        }
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        assert_string_equal(verdict(r, 0), "orphaned-holders");
        const struct finding *fd = main_finding(r, 0);
        assert_int_equal(fd->n_pids, LEDGER_MAX_PIDS);
        assert_whole(fd->next_step, "(by hand: kill -TERM 4194301 4194302 4194303 4194304 4194305 4194306 4194307 "
                                    "4194308 4194309 4194310 4194311 4194312 4194313 4194314 4194315 4194316 4194317 "
                                    "4194318 4194319 4194320 4194321 4194322 4194323 4194324 4194325 4194326 4194327 "
                                    "4194328 4194329 4194330 4194331 4194332 4194333 4194334 4194335 4194336 4194337 "
                                    "4194338 4194339 4194340)");
        assert_all_whole(r);
        scan_result_free(r);
        facts_destroy(f);

        /* a hidden owner's workers on two GPUs with a ghost: candidates, their leader gone */
        f = facts_new(2, true, 0);
        for (unsigned g = 0; g < 2; g++)
                gpu_used(f, g, 2 * GIB);
        for (pid_t w = 4194301; w <= 4194302; w++) {
                struct host_proc p = proc(w, 1, 4194300, 4194000, 'S', "pt_data_worker");
                cuda_nodes(&p, 2);
                holder(f, p);
        }
        finish(f, NULL, 0);
        r = build(f, f);
        const struct attribution *a = attr_of(r, 1, 4194302);
        assert_non_null(a);
        assert_true(a->candidate);
        assert_whole(a->text, "is gone (candidate: it holds 2 GPUs with a ghost)");
        assert_all_whole(r);
        scan_result_free(r);
        facts_destroy(f);

        /* PID 31300 reused by a process with a long name (a bundle's comm is not 16 bytes) */
        static const char long_comm[] = "a_data_preprocessing_service_with_a_very_long_name_indeed";
        f = facts_new(1, true, 0);
        gpu_used(f, 0, 2 * GIB);
        nvml_proc(f, 0, 31300, 2 * GIB);
        struct host_proc other = proc(31300, 1, 31300, 31300, 'S', long_comm);
        finish(f, &other, 1);
        r = build(f, f);
        assert_int_equal(r->gpus[0].owners[0].cls, OWNER_STALE);
        assert_whole(r->gpus[0].owners[0].why,
                     "PID reused by a_data_preprocessing_service_with_a_very_long_name_indeed, which holds no nvidia-uvm "
                     "(not a CUDA process)");
        assert_all_whole(r);
        free(other.comm);
        free(other.cmdline);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_orphan_beside_gpu_without_list(void **state)
{
        (void)state;
        /* a launcher's job (31000, alive, holds nothing) on GPU 0: its owner 31300 killed, its
         * worker 31301 reparented, in the launcher's group; GPU 1 gives no process list */
        struct facts *f = facts_new(2, true, 0);
        gpu_used(f, 0, 2 * GIB);
        nvml_proc(f, 0, 31300, 2 * GIB);
        struct host_proc w = proc(31301, 1, 31000, 31000, 'S', "pt_data_worker");
        cuda_nodes(&w, 2);
        holder(f, w);
        leader(f, 31000, true);
        family(f, 31301, 1);
        f->gpu->gpus[1].procs_known = false;
        gpu_info_add_error(&f->gpu->gpus[1], "processes", 3, "Not Supported");
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        /* the worker may be GPU 1's live job: only a link by number names it, and it has none */
        assert_false(attributed(r, 0, 31301));
        assert_string_equal(verdict(r, 0), "stale-owner");
        assert_string_equal(verdict(r, 1), "unknown");
        const struct finding *fd = main_finding(r, 0);
        assert_int_equal(fd->confidence, CONF_MEDIUM);
        assert_non_null(strstr(fd->summary, "1 CUDA process holds the GPU with no link to it"));
        assert_true(any_text(fd, "GPU 1 gives no process list and 1 unlinked CUDA process holds its node too: "
                                 "each may be that GPU's live job"));
        assert_true(any_text(fd, "PID 31301 (pt_data_worker) holds /dev/nvidia0 and nvidia-uvm with no link"));
        assert_null(strstr(fd->next_step, "--gpu-reset"));
        assert_non_null(strstr(fd->next_step, "reclaim --gpu 0 --pid"));
        scan_result_free(r);

        /* GPU 1's list back: the worker's family is free, the only one for the only dead owner
         * (not a default target: its group's leader lives) */
        f->gpu->gpus[1].procs_known = true;
        r = build(f, f);
        assert_string_equal(verdict(r, 0), "orphaned-holders");
        assert_int_equal(attr_of(r, 0, 31301)->link, LINK_ELIMINATION);
        assert_int_equal(attr_of(r, 0, 31301)->confidence, CONF_MEDIUM);
        assert_false(attr_of(r, 0, 31301)->proof);
        assert_false(any_text(main_finding(r, 0), "gives no process list"));
        assert_string_equal(verdict(r, 1), "ok");
        scan_result_free(r);

        /* its parent alive (a descriptor taken by a process of the launcher's): a candidate by
         * the orphan rule, and again none while GPU 1 gives no list */
        f->host->holders[0].ppid = 31000;
        r = build(f, f);
        assert_string_equal(verdict(r, 0), "orphaned-holders");
        assert_int_equal(attr_of(r, 0, 31301)->link, LINK_ORPHAN);
        assert_int_equal(attr_of(r, 0, 31301)->confidence, CONF_LOW);
        scan_result_free(r);
        f->gpu->gpus[1].procs_known = false;
        r = build(f, f);
        assert_string_equal(verdict(r, 0), "stale-owner");
        assert_true(any_text(main_finding(r, 0), "GPU 1 gives no process list"));
        scan_result_free(r);
        /* in a PID namespace the dead PID may be out of sight: nothing points to its death */
        f->host->initial_pidns = false;
        r = build(f, f);
        assert_string_equal(verdict(r, 0), "invisible-here");
        assert_false(r->gpus[0].ghost_confirmed);
        scan_result_free(r);
        free(f->gpu->gpus[1].errors);
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
                cmocka_unit_test(test_invisible_here_with_holder_in_sight),
                cmocka_unit_test(test_daemon_holder),
                cmocka_unit_test(test_monitor_daemon_blocks_reset_only),
                cmocka_unit_test(test_worker_in_own_session),
                cmocka_unit_test(test_launcher_child_owner),
                cmocka_unit_test(test_family_ties_setsid_worker),
                cmocka_unit_test(test_family_two_dead_jobs_one_gpu),
                cmocka_unit_test(test_family_live_pid_order_no_ctl),
                cmocka_unit_test(test_holder_needs_the_gpus_node),
                cmocka_unit_test(test_legacy_v1_ghost_is_the_stale_bytes),
                cmocka_unit_test(test_hidden_owner_beside_wrapped_live_job),
                cmocka_unit_test(test_pid_reused_by_gpu_processes),
                cmocka_unit_test(test_next_steps_without_pci),
                cmocka_unit_test(test_freeing_is_not_a_ghost),
                cmocka_unit_test(test_freeing_below_the_floor),
                cmocka_unit_test(test_holders_just_gone_is_freeing),
                cmocka_unit_test(test_no_process_list),
                cmocka_unit_test(test_not_root_never_high_or_reset),
                cmocka_unit_test(test_mig_instances),
                cmocka_unit_test(test_live_owner_unreadable_to_user),
                cmocka_unit_test(test_unlinked_cuda_holder_is_never_nothing),
                cmocka_unit_test(test_orphan_beside_gpu_without_list),
                cmocka_unit_test(test_zombie_owner_children),
                cmocka_unit_test(test_long_texts_arrive_whole),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
