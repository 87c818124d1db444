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

#define MIB (1024ull * 1024ull)
#define GIB (1024ull * MIB)
#define T0 1000000.0            /* sample time */

/* ---- builders --------------------------------------------------------------------------- */

static struct facts *facts_new(unsigned n_gpus, bool initial_pidns, uid_t euid)
{
        struct facts *f = calloc(1, sizeof(*f));
        f->gpu = calloc(1, sizeof(*f->gpu));
        f->gpu->driver_present = true;
        f->gpu->pid_mode = GPU_PID_TRANSLATED;
        f->gpu->sample_time = T0;
        f->gpu->n_gpus = n_gpus;
        f->gpu->gpus = calloc(n_gpus, sizeof(struct gpu_info));
        for (unsigned i = 0; i < n_gpus; i++) {
                struct gpu_info *g = &f->gpu->gpus[i];
                g->index = i;
                g->memory_known = true;
                g->memory_api = 2;
                g->total_bytes = 80 * GIB;
                g->reserved_bytes = 512 * MIB;
                g->free_bytes = g->total_bytes - g->reserved_bytes;
                g->procs_known = true;
                snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "0000:%02x:00.0", 0x1b + i);
        }
        f->host = calloc(1, sizeof(*f->host));
        f->host->initial_pidns = initial_pidns;
        f->host->euid = euid;
        return f;
}

static void gpu_used(struct facts *f, unsigned gpu, uint64_t used)
{
        struct gpu_info *g = &f->gpu->gpus[gpu];
        g->used_bytes = used;
        g->free_bytes = g->total_bytes - g->reserved_bytes - used;
}

static void nvml_proc(struct facts *f, unsigned gpu, uint32_t pid, uint64_t bytes)
{
        struct gpu_info *g = &f->gpu->gpus[gpu];
        g->procs = realloc(g->procs, (g->n_procs + 1) * sizeof(*g->procs));
        g->procs[g->n_procs++] = (struct gpu_proc){ .pid = pid, .used_bytes = bytes, .used_known = true,
                                                    .gpu_instance = GPU_INSTANCE_NONE,
                                                    .compute_instance = GPU_INSTANCE_NONE,
                                                    .kinds = GPU_PROC_COMPUTE };
}

static struct host_proc proc(pid_t pid, pid_t ppid, pid_t pgid, pid_t sid, char state, const char *comm)
{
        struct host_proc p;
        memset(&p, 0, sizeof(p));
        p.pid = pid;
        p.ppid = ppid;
        p.pgid = pgid;
        p.sid = sid;
        p.state = state;
        p.start_time = T0 - 100;
        p.start_ticks = 1000;
        p.comm = strdup(comm);
        p.cmdline = strdup(comm);
        snprintf(p.user, sizeof(p.user), "alice");
        return p;
}

static void node(struct host_proc *p, const char *name)
{
        struct host_node *n = &p->nodes[p->n_nodes++];
        snprintf(n->name, sizeof(n->name), "%s", name);
        n->via = HOST_VIA_FD | HOST_VIA_MMAP;
}

/* A CUDA process as the runtime leaves it: nvidiactl, nvidia-uvm and every GPU node. */
static void cuda_nodes(struct host_proc *p, unsigned n_gpus)
{
        node(p, "nvidiactl");
        node(p, "nvidia-uvm");
        for (unsigned i = 0; i < n_gpus; i++) {
                char name[24];
                snprintf(name, sizeof(name), "nvidia%u", i);
                node(p, name);
        }
}

static void holder(struct facts *f, struct host_proc p)
{
        struct host_report *h = f->host;
        h->holders = realloc(h->holders, (h->n_holders + 1) * sizeof(*h->holders));
        h->holders[h->n_holders++] = p;
}

/* Fill the NVML-PID facts from the holders (what facts_collect does with /proc). A PID listed in
 * `present` but not a holder is an unrelated live process (a reused PID). */
static void finish(struct facts *f, const struct host_proc *present, size_t n_present)
{
        for (size_t g = 0; g < f->gpu->n_gpus; g++)
                for (size_t i = 0; i < f->gpu->gpus[g].n_procs; i++) {
                        uint32_t pid = f->gpu->gpus[g].procs[i].pid;
                        if (facts_pid(f, pid))
                                continue;
                        f->pids = realloc(f->pids, (f->n_pids + 1) * sizeof(*f->pids));
                        struct pid_fact *pf = &f->pids[f->n_pids++];
                        memset(pf, 0, sizeof(*pf));
                        pf->pid = pid;
                        for (size_t k = 0; k < f->host->n_holders; k++)
                                if ((uint32_t)f->host->holders[k].pid == pid) {
                                        pf->present = pf->holder = true;
                                        pf->proc = f->host->holders[k];
                                        pf->proc.comm = strdup(pf->proc.comm);
                                        pf->proc.cmdline = strdup(pf->proc.cmdline);
                                }
                        for (size_t k = 0; k < n_present; k++)
                                if ((uint32_t)present[k].pid == pid) {
                                        pf->present = true;
                                        pf->proc = present[k];
                                        pf->proc.comm = strdup(present[k].comm);
                                        pf->proc.cmdline = strdup(present[k].cmdline);
                                }
                }
}

static void facts_destroy(struct facts *f)
{
        for (size_t i = 0; i < f->host->n_holders; i++) {
                free(f->host->holders[i].comm);
                free(f->host->holders[i].cmdline);
        }
        free(f->host->holders);
        free(f->host);
        f->host = NULL;
        for (size_t g = 0; g < f->gpu->n_gpus; g++)
                free(f->gpu->gpus[g].procs);
        free(f->gpu->gpus);
        free(f->gpu);
        for (size_t i = 0; i < f->n_pids; i++) {
                free(f->pids[i].proc.comm);
                free(f->pids[i].proc.cmdline);
        }
        free(f->pids);
        free(f->leaders);
        free(f);
}

static struct scan_result *build(const struct facts *now, const struct facts *before)
{
        struct ledger_opts o;
        ledger_opts_default(&o);
        o.self_pid = 1; /* not any test PID */
        o.two_samples = before != NULL;
        struct scan_result *r = NULL;
        assert_int_equal(ledger_build(now, before, &o, &r), 0);
        return r;
}

static const char *verdict(const struct scan_result *r, unsigned gpu)
{
        return r->gpus[gpu].n_findings ? r->gpus[gpu].findings[0].code : "(none)";
}

static bool attributed(const struct scan_result *r, unsigned gpu, pid_t pid)
{
        const struct gpu_ledger *l = &r->gpus[gpu];
        for (size_t a = 0; a < l->n_attr; a++)
                if (r->facts->host->holders[l->attr[a].holder].pid == pid)
                        return true;
        return false;
}

static void assert_sums(const struct scan_result *r)
{
        for (size_t i = 0; i < r->n_gpus; i++) {
                const struct gpu_ledger *l = &r->gpus[i];
                if (l->inspected)
                        assert_true(l->listed + l->foreign + l->ghost + l->unattributed == l->used);
        }
}

/* The killed-job scenario: owner 31300 dead, workers 31301/31302 in its process group. */
static struct facts *killed_job(unsigned n_gpus, unsigned gpu, bool listed)
{
        struct facts *f = facts_new(n_gpus, true, 0);
        gpu_used(f, gpu, 2 * GIB);
        if (listed)
                nvml_proc(f, gpu, 31300, 2 * GIB);
        for (pid_t w = 31301; w <= 31302; w++) {
                struct host_proc p = proc(w, 1, 31300, 31000, 'S', "pt_data_worker");
                cuda_nodes(&p, n_gpus);
                holder(f, p);
        }
        return f;
}

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
                cmocka_unit_test(test_zombie_owner_children),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
