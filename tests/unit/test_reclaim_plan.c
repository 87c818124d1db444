/* Unit tests for act/reclaim_plan: every rule that makes (or keeps) a process a target of
 * `ghostvram reclaim`, on hand-built scan results, and the site policy parser. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "act/reclaim_plan.h"
#include "model/daemons.h"

#define MIB (1024ull * 1024ull)
#define GIB (1024ull * MIB)
#define DEAD 31300      /* the killed job's owner */
#define W1 31301        /* its workers */
#define W2 31302
#define SELF 4000
#define PARENT 3999

/* ---- a hand-built scan ------------------------------------------------------------------ */

struct world {
        struct facts f;
        struct gpu_report gpu;
        struct gpu_info gpus[2];
        struct host_report host;
        struct host_proc holders[16];
        struct pid_fact pids[8];
        struct scan_result res;
        struct gpu_ledger led[2];
        struct attribution attr[2][16];
        struct owner owners[2][8];
        struct reclaim_policy policy;
        struct reclaim_plan_opts o;
        pid_t ancestors[2];
        struct reclaim_plan *plan;
};

static void node(struct host_proc *p, const char *name)
{
        struct host_node *n = &p->nodes[p->n_nodes++];
        snprintf(n->name, sizeof(n->name), "%s", name);
        n->via = HOST_VIA_FD | HOST_VIA_MMAP;
}

static struct host_proc *add_holder(struct world *w, pid_t pid, pid_t pgid, pid_t sid, const char *comm, bool uvm)
{
        struct host_proc *p = &w->holders[w->host.n_holders++];
        memset(p, 0, sizeof(*p));
        p->pid = pid;
        p->ppid = 1;
        p->pgid = pgid;
        p->sid = sid;
        p->state = 'S';
        p->start_ticks = 5000 + (uint64_t)pid;
        p->uid = 1000;
        p->comm = (char *)comm;
        p->cmdline = (char *)comm;
        p->nspid[0] = pid;
        p->n_nspid = 1;
        node(p, "nvidiactl");
        if (uvm)
                node(p, "nvidia-uvm");
        node(p, "nvidia0");
        return p;
}

/* Tie holder `pid` to GPU g's ghost. */
static struct attribution *attribute(struct world *w, unsigned g, pid_t pid, enum link_kind k, bool candidate)
{
        size_t hi = 0;
        while (hi < w->host.n_holders && w->holders[hi].pid != pid)
                hi++;
        assert_true(hi < w->host.n_holders);
        struct gpu_ledger *l = &w->led[g];
        struct attribution *a = &l->attr[l->n_attr++];
        memset(a, 0, sizeof(*a));
        a->holder = hi;
        a->link = k;
        a->to_pid = DEAD;
        a->candidate = candidate;
        a->confidence = CONF_HIGH;
        /* as the ledger has it: a link by number is a proof, elimination and PID order are not */
        a->proof = k != LINK_ELIMINATION && k != LINK_PID_ORDER && k != LINK_ORPHAN && !candidate;
        a->text = (char *)"worker of dead PID 31300, same process group"; /* as DEAD; the world owns no text */
        return a;
}

/* A live NVML-listed owner on GPU g (also a holder, with its facts). */
static struct host_proc *live_owner(struct world *w, unsigned g, pid_t pid, pid_t sid)
{
        struct host_proc *p = add_holder(w, pid, pid, sid, "python", true);
        struct gpu_info *gi = &w->gpus[g];
        gi->procs = realloc(gi->procs, (gi->n_procs + 1) * sizeof(*gi->procs));
        gi->procs[gi->n_procs++] = (struct gpu_proc){ .pid = (uint32_t)pid, .used_bytes = GIB, .used_known = true };
        struct gpu_ledger *l = &w->led[g];
        l->owners[l->n_owners++] = (struct owner){ .pid = (uint32_t)pid, .used_bytes = GIB, .used_known = true,
                                                   .cls = OWNER_LIVE };
        struct pid_fact *pf = &w->f.pids[w->f.n_pids++];
        memset(pf, 0, sizeof(*pf));
        pf->pid = (uint32_t)pid;
        pf->present = pf->holder = true;
        pf->proc = *p;
        return p;
}

/* Two GPUs; GPU 1 has a confirmed 2 GiB ghost held by W1 and W2 (process-group link). */
static struct world *world_new(void)
{
        struct world *w = calloc(1, sizeof(*w));
        w->f.gpu = &w->gpu;
        w->f.host = &w->host;
        w->f.pids = w->pids;
        w->gpu.driver_present = true;
        w->gpu.gpus = w->gpus;
        w->gpu.n_gpus = 2;
        w->host.holders = w->holders;
        w->host.initial_pidns = true;
        for (unsigned g = 0; g < 2; g++) {
                w->gpus[g].index = g;
                w->gpus[g].procs_known = true;
                snprintf(w->gpus[g].pci_bus_id, sizeof(w->gpus[g].pci_bus_id), "0000:%02x:00.0", 0x1b + g);
                w->led[g].index = g;
                w->led[g].inspected = true;
                w->led[g].noise_floor = 800 * MIB;
                w->led[g].attr = w->attr[g];
                w->led[g].owners = w->owners[g];
        }
        w->led[1].used = w->led[1].ghost = 2 * GIB;
        w->led[1].ghost_confirmed = true;
        w->res.facts = &w->f;
        w->res.gpus = w->led;
        w->res.n_gpus = 2;
        add_holder(w, W1, DEAD, DEAD, "pt_data_worker", true);
        add_holder(w, W2, DEAD, DEAD, "pt_data_worker", true);
        attribute(w, 1, W1, LINK_PGID, false);
        attribute(w, 1, W2, LINK_PGID, false);
        w->o.self_pid = SELF;
        w->ancestors[0] = PARENT;
        w->ancestors[1] = 1;
        w->o.ancestors = w->ancestors;
        w->o.n_ancestors = 2;
        w->o.only_gpu = -1;
        w->o.policy = &w->policy;
        return w;
}

static void world_free(struct world *w)
{
        reclaim_plan_free(w->plan);
        reclaim_policy_free(&w->policy);
        for (unsigned g = 0; g < 2; g++)
                free(w->gpus[g].procs);
        free(w);
}

static struct reclaim_plan *plan(struct world *w)
{
        reclaim_plan_free(w->plan);
        w->plan = NULL;
        assert_int_equal(reclaim_plan_build(&w->res, &w->o, &w->plan), 0);
        return w->plan;
}

static const struct reclaim_target *target(const struct reclaim_plan *p, pid_t pid)
{
        for (size_t i = 0; i < p->n_targets; i++)
                if (p->targets[i].pid == pid)
                        return &p->targets[i];
        return NULL;
}

static const struct reclaim_skip *skipped(const struct reclaim_plan *p, pid_t pid)
{
        for (size_t i = 0; i < p->n_skipped; i++)
                if (p->skipped[i].pid == pid)
                        return &p->skipped[i];
        return NULL;
}

/* W1 is skipped for `rule` and W2 (unchanged) is still a target. */
static void assert_w1_skipped(struct world *w, enum reclaim_rule rule, const char *reason_part)
{
        const struct reclaim_plan *p = plan(w);
        const struct reclaim_skip *s = skipped(p, W1);
        assert_non_null(s);
        assert_string_equal(reclaim_rule_name(s->rule), reclaim_rule_name(rule));
        if (reason_part)
                assert_non_null(strstr(s->reason, reason_part));
        assert_null(target(p, W1));
        assert_non_null(target(p, W2));
}

static struct host_proc *holder_of(struct world *w, pid_t pid)
{
        for (size_t i = 0; i < w->host.n_holders; i++)
                if (w->holders[i].pid == pid)
                        return &w->holders[i];
        fail();
        return NULL;
}

/* ---- default targets ---------------------------------------------------------------------- */

static void test_orphans_are_targets(void **state)
{
        (void)state;
        struct world *w = world_new();
        const struct reclaim_plan *p = plan(w);
        assert_int_equal(p->n_targets, 2);
        const struct reclaim_target *t = target(p, W1);
        assert_non_null(t);
        assert_int_equal(t->gpu, 1);
        assert_int_equal(t->link, LINK_PGID);
        assert_int_equal(t->to_pid, DEAD);
        assert_int_equal(t->start_ticks, 5000 + W1);
        assert_false(t->explicit_pid);
        assert_string_equal(t->comm, "pt_data_worker");
        assert_null(t->warning);
        assert_true(p->any_confirmed_ghost);
        assert_int_equal(p->n_gpus, 2);
        assert_int_equal(p->gpus[1].n_targets, 2);
        assert_int_equal(p->gpus[0].n_targets, 0);
        assert_int_equal(p->n_skipped, 0);
        world_free(w);
}

static void test_not_attributed(void **state)
{
        (void)state;
        struct world *w = world_new();
        add_holder(w, 5000, 5000, 5000, "python", true); /* a CUDA process tied to nothing */
        add_holder(w, 5001, 5001, 5001, "nvidia-smi", false); /* a monitor: not even a line */
        const struct reclaim_plan *p = plan(w);
        assert_int_equal(p->n_targets, 2);
        assert_int_equal(skipped(p, 5000)->rule, RECLAIM_NOT_ATTRIBUTED);
        assert_null(skipped(p, 5001));
        assert_null(target(p, 5001));
        world_free(w);
}

static void test_candidate_only(void **state)
{
        (void)state;
        struct world *w = world_new();
        w->attr[1][0].candidate = true;
        w->attr[1][0].link = LINK_LEADER_GONE;
        assert_w1_skipped(w, RECLAIM_CANDIDATE, "candidate");
        /* the hidden-owner rule with a single ghost GPU is not a candidate: a target */
        w->attr[1][0].candidate = false;
        assert_non_null(target(plan(w), W1));
        world_free(w);
}

static void test_ghost_unconfirmed(void **state)
{
        (void)state;
        struct world *w = world_new();
        w->led[1].ghost_confirmed = false;
        const struct reclaim_plan *p = plan(w);
        assert_int_equal(p->n_targets, 0);
        assert_int_equal(skipped(p, W1)->rule, RECLAIM_GHOST_UNCONFIRMED);
        assert_false(p->any_confirmed_ghost);
        world_free(w);
}

static void test_no_uvm(void **state)
{
        (void)state;
        struct world *w = world_new();
        struct host_proc *h = holder_of(w, W1);
        h->n_nodes = 0;
        node(h, "nvidiactl");
        node(h, "nvidia1");
        assert_w1_skipped(w, RECLAIM_NO_UVM, "nvidia-uvm");
        world_free(w);
}

static void test_nvml_listed(void **state)
{
        (void)state;
        struct world *w = world_new();
        /* NVML lists W1 on GPU 0 (its PID, whatever the ledger made of it) */
        w->gpus[0].procs = calloc(1, sizeof(*w->gpus[0].procs));
        w->gpus[0].procs[0] = (struct gpu_proc){ .pid = W1, .used_bytes = GIB, .used_known = true };
        w->gpus[0].n_procs = 1;
        assert_w1_skipped(w, RECLAIM_NVML_LISTED, "GPU 0");
        world_free(w);
}

static void test_nvml_blind(void **state)
{
        (void)state;
        struct world *w = world_new();
        w->gpus[0].procs_known = false; /* NOT_SUPPORTED, or it did not answer */
        const struct reclaim_plan *p = plan(w);
        assert_int_equal(p->n_targets, 0);
        assert_string_equal(reclaim_rule_name(skipped(p, W1)->rule), "nvml-unknown");
        assert_non_null(strstr(skipped(p, W1)->reason, "GPU 0 gave no process list"));
        world_free(w);
}

static void test_shares_session_with_live_owner(void **state)
{
        (void)state;
        struct world *w = world_new();
        holder_of(w, W1)->sid = 7000;
        live_owner(w, 0, 7001, 7000);   /* a healthy job in the same session */
        assert_w1_skipped(w, RECLAIM_SHARES_SESSION, "PID 7001");
        /* the same owner, not alive: no longer a reason */
        w->owners[0][0].cls = OWNER_STALE;
        assert_non_null(target(plan(w), W1));
        world_free(w);
}

static void test_shares_job_cgroup_with_live_owner(void **state)
{
        (void)state;
        struct world *w = world_new();
        char job[] = "/system.slice/slurmstepd.scope/job_77/step_0";
        holder_of(w, W1)->cgroup = job;
        struct host_proc *ow = live_owner(w, 0, 7001, 7001);
        ow->cgroup = job;
        w->pids[0].proc.cgroup = job;
        assert_w1_skipped(w, RECLAIM_SHARES_JOB, "same cgroup as PID 7001");

        /* pods too */
        char other[] = "/elsewhere";
        holder_of(w, W1)->cgroup = other;
        snprintf(holder_of(w, W1)->k8s_pod_uid, sizeof(ow->k8s_pod_uid), "0b1c");
        snprintf(w->pids[0].proc.k8s_pod_uid, sizeof(ow->k8s_pod_uid), "0b1c");
        assert_w1_skipped(w, RECLAIM_SHARES_JOB, "same pod");
        w->pids[0].proc.k8s_pod_uid[0] = '\0';

        /* the root cgroup ties nothing, and neither does a cgroup ghostvram itself is in */
        char root[] = "/";
        holder_of(w, W1)->cgroup = root;
        w->pids[0].proc.cgroup = root;
        assert_non_null(target(plan(w), W1));
        holder_of(w, W1)->cgroup = job;
        w->pids[0].proc.cgroup = job;
        struct host_proc self;
        memset(&self, 0, sizeof(self));
        self.pid = SELF;
        self.cgroup = job;
        w->o.self_proc = &self;
        assert_non_null(target(plan(w), W1));
        world_free(w);
}

static void test_namespace_init(void **state)
{
        (void)state;
        struct world *w = world_new();
        struct host_proc *h = holder_of(w, W1);
        h->nspid[1] = 1;        /* PID 1 inside its container */
        h->n_nspid = 2;
        assert_w1_skipped(w, RECLAIM_NS_INIT, "PID 1 of its own PID namespace");
        h->nspid[1] = 12;
        assert_non_null(target(plan(w), W1));
        world_free(w);
}

static void test_pid1_kthread_self_ancestor(void **state)
{
        (void)state;
        static const struct { pid_t pid; bool kthread; enum reclaim_rule rule; } cases[] = {
                { 1, false, RECLAIM_PID1 },
                { 2, true, RECLAIM_KTHREAD },
                { SELF, false, RECLAIM_SELF },
                { PARENT, false, RECLAIM_ANCESTOR },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct world *w = world_new();
                struct host_proc *h = add_holder(w, cases[i].pid, DEAD, DEAD, "worker", true);
                h->kernel_thread = cases[i].kthread;
                attribute(w, 1, cases[i].pid, LINK_PGID, false);
                const struct reclaim_plan *p = plan(w);
                assert_null(target(p, cases[i].pid));
                assert_non_null(skipped(p, cases[i].pid));
                assert_string_equal(reclaim_rule_name(skipped(p, cases[i].pid)->rule), reclaim_rule_name(cases[i].rule));
                assert_int_equal(p->n_targets, 2);
                world_free(w);
        }
}

static void test_each_protected_name(void **state)
{
        (void)state;
        for (size_t i = 0; gpu_daemons[i].name; i++) {
                const char *name = gpu_daemons[i].name;
                char comm[16];
                snprintf(comm, sizeof(comm), "%s", name); /* what the kernel keeps: 15 characters */
                /* by comm */
                struct world *w = world_new();
                holder_of(w, W1)->comm = comm;
                holder_of(w, W1)->cmdline = (char *)"something-else --flag";
                assert_w1_skipped(w, RECLAIM_PROTECTED_NAME, comm); /* mps-server and -control share a comm */
                world_free(w);
                /* by argv[0] (comm changed with prctl, or a wrapper) */
                char cmd[128];
                snprintf(cmd, sizeof(cmd), "/usr/bin/%s --verbose", name);
                w = world_new();
                holder_of(w, W1)->comm = (char *)"renamed";
                holder_of(w, W1)->cmdline = cmd;
                assert_w1_skipped(w, RECLAIM_PROTECTED_NAME, name);
                world_free(w);
        }
}

static void test_name_matching(void **state)
{
        (void)state;
        assert_true(proc_name_matches("nvidia-persiste", NULL, "nvidia-persistenced"));
        assert_false(proc_name_matches("nvidia-persis", NULL, "nvidia-persistenced"));
        assert_true(proc_name_matches("X", NULL, "X"));
        assert_false(proc_name_matches("Xfoo", NULL, "X"));
        assert_false(proc_name_matches("python", "python train.py", "X"));
        assert_true(proc_name_matches("python", "/opt/bin/Xorg :0", "Xorg"));
        assert_false(proc_name_matches("python", "/opt/Xorg/python :0", "Xorg"));
        assert_false(proc_name_matches(NULL, NULL, "Xorg"));
        assert_false(proc_name_matches("Xorg", NULL, ""));
}

static void policy(struct world *w, const char *text)
{
        char err[256] = "";
        assert_int_equal(reclaim_policy_parse(text, strlen(text), "/etc/ghostvram/protected", &w->policy, err,
                                              sizeof(err)), 0);
        assert_string_equal(err, "");
}

static void test_policy_comm_cgroup_unit(void **state)
{
        (void)state;
        struct world *w = world_new();
        policy(w, "# site policy\ncomm pt_data_worker\n");
        const struct reclaim_plan *p = plan(w);
        assert_int_equal(p->n_targets, 0);
        assert_int_equal(skipped(p, W1)->rule, RECLAIM_POLICY_COMM);
        assert_non_null(strstr(skipped(p, W1)->reason, "/etc/ghostvram/protected:2"));
        world_free(w);

        w = world_new();
        char cg[] = "/system.slice/inference.service/replica-3";
        holder_of(w, W1)->cgroup = cg;
        policy(w, "cgroup /system.slice/inference.service\n");
        assert_w1_skipped(w, RECLAIM_POLICY_CGROUP, "cgroup /system.slice/inference.service");
        /* a prefix must end at a component: inference.service-2 is not below it */
        char cg2[] = "/system.slice/inference.service-2";
        holder_of(w, W1)->cgroup = cg2;
        assert_non_null(target(plan(w), W1));
        world_free(w);

        w = world_new();
        char cg3[] = "/system.slice/nvidia-dcgm.service";
        holder_of(w, W1)->cgroup = cg3;
        policy(w, "unit nvidia-dcgm.service   # DCGM\n");
        assert_w1_skipped(w, RECLAIM_POLICY_UNIT, "unit nvidia-dcgm.service");
        /* through the unit the cgroup parser found */
        holder_of(w, W1)->cgroup = NULL;
        snprintf(holder_of(w, W1)->systemd_unit, sizeof(holder_of(w, W1)->systemd_unit), "nvidia-dcgm.service");
        assert_w1_skipped(w, RECLAIM_POLICY_UNIT, NULL);
        world_free(w);
}

static void test_other_gpu(void **state)
{
        (void)state;
        struct world *w = world_new();
        w->o.only_gpu = 0;
        const struct reclaim_plan *p = plan(w);
        assert_int_equal(p->n_targets, 0);
        assert_int_equal(skipped(p, W1)->rule, RECLAIM_OTHER_GPU);
        assert_int_equal(p->n_gpus, 1);
        assert_int_equal(p->gpus[0].index, 0);
        w->o.only_gpu = 1;
        assert_int_equal(plan(w)->n_targets, 2);
        world_free(w);
}

static void test_dead_and_d_state(void **state)
{
        (void)state;
        struct world *w = world_new();
        holder_of(w, W1)->state = 'Z';
        holder_of(w, W2)->state = 'D';
        const struct reclaim_plan *p = plan(w);
        assert_int_equal(skipped(p, W1)->rule, RECLAIM_DEAD);
        /* a task in D state stays a target, with a warning */
        assert_non_null(target(p, W2));
        assert_non_null(strstr(target(p, W2)->warning, "D state"));
        world_free(w);
}

/* ---- explicit --pid ------------------------------------------------------------------------- */

static void test_explicit_pids(void **state)
{
        (void)state;
        struct world *w = world_new();
        struct host_proc *k = add_holder(w, 2, 0, 0, "kthreadd", false);
        k->kernel_thread = true;
        add_holder(w, 1, 1, 1, "systemd", true);
        add_holder(w, 6000, 6000, 6000, "nvidia-persistenced", true);
        struct host_proc *ct = add_holder(w, 6001, 6001, 6001, "python", true);
        ct->nspid[1] = 1;
        ct->n_nspid = 2;
        /* a process that holds nothing, looked up by the caller */
        struct host_proc extra;
        memset(&extra, 0, sizeof(extra));
        extra.pid = 6002;
        extra.state = 'S';
        extra.start_ticks = 777;
        extra.comm = (char *)"sleep";
        w->o.extra = &extra;
        w->o.n_extra = 1;
        pid_t pids[] = { 1, 2, SELF, PARENT, 9999, 6000, 6001, 6002, W1, W1 };
        w->o.explicit_pids = pids;
        w->o.n_explicit = sizeof(pids) / sizeof(pids[0]);
        const struct reclaim_plan *p = plan(w);
        assert_true(p->explicit_mode);
        assert_int_equal(skipped(p, 1)->rule, RECLAIM_PID1);
        assert_int_equal(skipped(p, 2)->rule, RECLAIM_KTHREAD);
        /* refused by number even when the sample has no facts for them */
        assert_int_equal(skipped(p, SELF)->rule, RECLAIM_SELF);
        assert_int_equal(skipped(p, PARENT)->rule, RECLAIM_ANCESTOR);
        assert_int_equal(skipped(p, 9999)->rule, RECLAIM_NO_SUCH_PROCESS);
        /* named on purpose: protected names and a container's init become warnings */
        assert_non_null(target(p, 6000));
        assert_non_null(strstr(target(p, 6000)->warning, "--pid names it"));
        assert_non_null(strstr(target(p, 6001)->warning, "ends that container"));
        /* a process holding no NVIDIA node frees nothing: refused without --force */
        assert_null(target(p, 6002));
        assert_int_equal(skipped(p, 6002)->rule, RECLAIM_NO_DEVICE);
        assert_string_equal(reclaim_rule_name(RECLAIM_NO_DEVICE), "no-nvidia-device");
        /* an attributed holder keeps its GPU; W2 was not named */
        assert_int_equal(target(p, W1)->gpu, 1);
        assert_null(target(p, W2));
        assert_int_equal(p->n_targets, 3); /* 6000 6001 W1 (once) */
        world_free(w);

        /* with --force the process holding no node is a target, with no GPU */
        w = world_new();
        w->o.extra = &extra;
        w->o.n_extra = 1;
        pid_t pids3[] = { 6002 };
        w->o.explicit_pids = pids3;
        w->o.n_explicit = 1;
        w->o.force = true;
        p = plan(w);
        assert_int_equal(target(p, 6002)->gpu, -1);
        assert_int_equal(target(p, 6002)->start_ticks, 777);
        assert_true(target(p, 6002)->explicit_pid);
        world_free(w);

        /* another ghostvram (a running serve holds nvidiactl) is refused without --force */
        w = world_new();
        struct host_proc *gv = add_holder(w, 6100, 6100, 6100, "ghostvram", false);
        gv->cmdline = (char *)"/usr/bin/ghostvram serve";
        struct host_proc *gv2 = add_holder(w, 6101, 6101, 6101, "sleep", false);
        gv2->cmdline = (char *)"/opt/ghostvram-testhooks watch";
        pid_t pids4[] = { 6100, 6101 };
        w->o.explicit_pids = pids4;
        w->o.n_explicit = 2;
        p = plan(w);
        assert_int_equal(p->n_targets, 0);
        assert_int_equal(skipped(p, 6100)->rule, RECLAIM_GHOSTVRAM);
        assert_int_equal(skipped(p, 6101)->rule, RECLAIM_GHOSTVRAM);
        assert_non_null(strstr(skipped(p, 6100)->reason, "--force"));
        world_free(w);

        /* ghostvram itself and an ancestor are refused even by --pid */
        w = world_new();
        add_holder(w, SELF, SELF, SELF, "ghostvram", false);
        add_holder(w, PARENT, PARENT, PARENT, "bash", false);
        pid_t pids2[] = { SELF, PARENT };
        w->o.explicit_pids = pids2;
        w->o.n_explicit = 2;
        p = plan(w);
        assert_int_equal(p->n_targets, 0);
        assert_int_equal(skipped(p, SELF)->rule, RECLAIM_SELF);
        assert_int_equal(skipped(p, PARENT)->rule, RECLAIM_ANCESTOR);
        world_free(w);
}

/* ---- the policy file -------------------------------------------------------------------------- */

static int parse(const char *text, struct reclaim_policy *p, char *err, size_t errlen)
{
        memset(p, 0, sizeof(*p));
        return reclaim_policy_parse(text, strlen(text), "site.policy", p, err, errlen);
}

static void test_policy_parse(void **state)
{
        (void)state;
        struct reclaim_policy p;
        char err[256];
        const char *ok = "# protected processes\n"
                         "\n"
                         "   comm  triton_server   \n"
                         "comm Web Content # a name with a space\n"
                         "cgroup /system.slice/inference.service\r\n"
                         "unit nvidia-dcgm.service\n"
                         "comm a#b\n"
                         "\t# indented comment\n"
                         "unit last.scope"; /* no final newline */
        assert_int_equal(parse(ok, &p, err, sizeof(err)), 0);
        assert_int_equal(p.n, 6);
        assert_int_equal(p.entries[0].kind, RECLAIM_POLICY_KIND_COMM);
        assert_string_equal(p.entries[0].value, "triton_server");
        assert_int_equal(p.entries[0].line, 3);
        assert_string_equal(p.entries[1].value, "Web Content");
        assert_int_equal(p.entries[2].kind, RECLAIM_POLICY_KIND_CGROUP);
        assert_string_equal(p.entries[2].value, "/system.slice/inference.service");
        assert_int_equal(p.entries[3].kind, RECLAIM_POLICY_KIND_UNIT);
        assert_string_equal(p.entries[4].value, "a#b");
        assert_string_equal(p.entries[5].value, "last.scope");
        assert_int_equal(p.entries[5].line, 9);
        reclaim_policy_free(&p);
        assert_int_equal(parse("", &p, err, sizeof(err)), 0);
        assert_int_equal(p.n, 0);
        reclaim_policy_free(&p);

        static const struct { const char *text; const char *err; } bad[] = {
                { "comm ok\nkill everything\n", "site.policy:2: unknown keyword 'kill' (expected comm, cgroup or unit)" },
                { "comm\n", "site.policy:1: 'comm' needs a value" },
                { "\n\ncgroup   \n", "site.policy:3: 'cgroup' needs a value" },
                { "cgroup system.slice\n", "site.policy:1: cgroup 'system.slice' must be a path from the cgroup root, starting with '/'" },
                { "unit nvidia-dcgm\n", "site.policy:1: unit 'nvidia-dcgm' must be a full unit name such as nvidia-dcgm.service" },
                { "comm /usr/bin/python\n", "site.policy:1: '/usr/bin/python' is a name, not a path (no '/')" },
                { "comm a\x01z\n", "site.policy:1: control character in the line" },
                { "COMM x\n", "site.policy:1: unknown keyword 'COMM' (expected comm, cgroup or unit)" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                err[0] = '\0';
                assert_int_equal(parse(bad[i].text, &p, err, sizeof(err)), -EINVAL);
                assert_string_equal(err, bad[i].err);
                reclaim_policy_free(&p);
        }
        /* a value too long, and too many entries */
        char longv[600];
        memset(longv, 'a', sizeof(longv));
        memcpy(longv, "comm ", 5);
        longv[sizeof(longv) - 1] = '\0';
        assert_int_equal(parse(longv, &p, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "site.policy:1: value longer than 255 characters");
        reclaim_policy_free(&p);
        size_t cap = (RECLAIM_POLICY_MAX_ENTRIES + 1) * 8 + 1;
        char *many = malloc(cap);
        size_t len = 0;
        for (int i = 0; i <= RECLAIM_POLICY_MAX_ENTRIES; i++)
                len += (size_t)snprintf(many + len, cap - len, "comm x%c\n", 'a' + i % 26);
        assert_int_equal(parse(many, &p, err, sizeof(err)), -E2BIG);
        assert_int_equal(p.n, RECLAIM_POLICY_MAX_ENTRIES);
        reclaim_policy_free(&p);
        free(many);
}

/* Families: the default plan ends a description family whole or not at all. W1 and W2 share
 * a description with W3, another user's process reclaim may still end, and with a protected
 * daemon in the second case. */
static void test_family_whole_or_nothing(void **state)
{
        (void)state;
        struct world *w = world_new();
        w->host.family_source = HOST_FAMILIES_KCMP;
        w->host.n_families = 1;
        struct host_proc *w3 = add_holder(w, 31303, 31303, 31303, "pt_data_worker", true); /* setsid */
        w->holders[0].family = w->holders[1].family = w3->family = 1;
        attribute(w, 1, 31303, LINK_FAMILY, false);
        struct reclaim_plan *p = plan(w);
        assert_non_null(target(p, W1));
        assert_non_null(target(p, W2));
        assert_non_null(target(p, 31303));
        assert_int_equal(target(p, W1)->family, 1);
        /* one member protected by name: none of them is ended */
        struct host_proc *d = add_holder(w, 31304, 31304, 31304, "nvidia-persiste", true);
        d->family = 1;
        p = plan(w);
        assert_int_equal(p->n_targets, 0);
        assert_string_equal(reclaim_rule_name(skipped(p, W1)->rule), "family-kept");
        assert_string_equal(reclaim_rule_name(skipped(p, 31303)->rule), "family-kept");
        assert_non_null(strstr(skipped(p, W2)->reason, "31304"));
        assert_int_equal(p->gpus[1].n_targets, 0);
        world_free(w);
}

/* --pid: a member of a live owner's family is refused without --force; naming part of a
 * family lists the rest, which keeps the memory; a tie to a live job is a warning */
static void test_family_explicit(void **state)
{
        (void)state;
        struct world *w = world_new();
        w->host.family_source = HOST_FAMILIES_KCMP;
        w->host.n_families = 2;
        w->holders[0].family = w->holders[1].family = 1;
        live_owner(w, 0, 5000, 5000);
        struct host_proc *lw = add_holder(w, 5001, 5001, 5001, "worker", true);
        w->holders[2].family = lw->family = 2;
        w->pids[0].proc.family = 2;
        pid_t pids[] = { W1, 5001 };
        w->o.explicit_pids = pids;
        w->o.n_explicit = 2;
        struct reclaim_plan *p = plan(w);
        assert_non_null(target(p, W1));
        assert_int_equal(target(p, W1)->n_family_rest, 1);
        assert_int_equal(target(p, W1)->family_rest[0], W2);
        assert_null(target(p, 5001));
        assert_string_equal(reclaim_rule_name(skipped(p, 5001)->rule), "live-family");
        w->o.force = true;
        p = plan(w);
        assert_non_null(target(p, 5001));
        assert_non_null(strstr(target(p, 5001)->warning, "PID 5000, a live owner"));
        world_free(w);
}

static void test_rule_names(void **state)
{
        (void)state;
        for (int r = 0; r < RECLAIM_RULE_COUNT; r++)
                assert_string_not_equal(reclaim_rule_name((enum reclaim_rule)r), "unknown");
        assert_string_equal(reclaim_rule_name(RECLAIM_RULE_COUNT), "unknown");
        assert_string_equal(reclaim_rule_name(RECLAIM_NVML_LISTED), "nvml-listed");
}

static void test_weak_link_and_group_ties(void **state)
{
        (void)state;
        struct world *w = world_new();
        /* an orphan link with low confidence: named by scan, ended only with --pid */
        w->attr[1][0].link = LINK_ORPHAN;
        w->attr[1][0].confidence = CONF_LOW;
        assert_w1_skipped(w, RECLAIM_WEAK_LINK, "--pid");
        w->attr[1][0].confidence = CONF_MEDIUM;
        assert_non_null(target(plan(w), W1));
        world_free(w);

        /* in the process group of a live owner */
        w = world_new();
        holder_of(w, W1)->pgid = 7100;
        struct host_proc *ow = live_owner(w, 0, 7101, 7101);
        ow->pgid = 7100;
        w->pids[0].proc.pgid = 7100;
        assert_w1_skipped(w, RECLAIM_SHARES_GROUP, "process group of PID 7101");
        world_free(w);

        /* a child of a live owner */
        w = world_new();
        holder_of(w, W1)->ppid = 7201;
        live_owner(w, 0, 7201, 7201);
        assert_w1_skipped(w, RECLAIM_SHARES_GROUP, "a child of PID 7201");
        world_free(w);
}

/* A protection by a long cgroup path is said whole: the reason ends with the path and its
 * bracket (it was cut at 200 bytes) */
static void test_long_reason_arrives_whole(void **state)
{
        (void)state;
        struct world *w = world_new();
        char cg[] = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0123456789abcdef.slice/"
                    "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope";
        holder_of(w, W1)->cgroup = cg;
        char text[300];
        snprintf(text, sizeof(text), "cgroup %s\n", cg);
        policy(w, text);
        const struct reclaim_skip *s = skipped(plan(w), W1);
        assert_non_null(s);
        assert_int_equal(s->rule, RECLAIM_POLICY_CGROUP);
        char want[300];
        snprintf(want, sizeof(want), "protected by /etc/ghostvram/protected:1 (cgroup %s)", cg);
        assert_string_equal(s->reason, want);
        world_free(w);
}

/* reclaim_policy_load: a missing default file is no policy, a missing named one and a directory
 * are errors said with the option's name, a file is parsed. */
static void test_policy_load(void **state)
{
        (void)state;
        char dir[] = "/tmp/gv-policy.XXXXXX", path[64], missing[64], err[1024];
        struct reclaim_policy p;
        assert_non_null(mkdtemp(dir));
        snprintf(missing, sizeof(missing), "%s/none", dir);
        assert_int_equal(reclaim_policy_load(missing, false, &p, err, sizeof(err)), 0);
        assert_int_equal(p.n, 0);
        reclaim_policy_free(&p);
        assert_int_equal(reclaim_policy_load(missing, true, &p, err, sizeof(err)), -1);
        char want[160];
        snprintf(want, sizeof(want), "--policy %s: No such file or directory", missing);
        assert_string_equal(err, want);
        reclaim_policy_free(&p);
        assert_int_equal(reclaim_policy_load(dir, false, &p, err, sizeof(err)), -1);
        snprintf(want, sizeof(want), "--policy %s: a directory, not a policy file", dir);
        assert_string_equal(err, want);
        reclaim_policy_free(&p);
        snprintf(path, sizeof(path), "%s/protected", dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs("comm pt_data_worker\nkill x\n", f);
        fclose(f);
        assert_int_equal(reclaim_policy_load(path, true, &p, err, sizeof(err)), -1);
        snprintf(want, sizeof(want), "%s:2: unknown keyword 'kill' (expected comm, cgroup or unit)", path);
        assert_string_equal(err, want);
        reclaim_policy_free(&p);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs("comm pt_data_worker\n", f);
        fclose(f);
        assert_int_equal(reclaim_policy_load(path, false, &p, err, sizeof(err)), 0);
        assert_int_equal(p.n, 1);
        reclaim_policy_free(&p);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_orphans_are_targets),
                cmocka_unit_test(test_not_attributed),
                cmocka_unit_test(test_candidate_only),
                cmocka_unit_test(test_ghost_unconfirmed),
                cmocka_unit_test(test_no_uvm),
                cmocka_unit_test(test_nvml_listed),
                cmocka_unit_test(test_nvml_blind),
                cmocka_unit_test(test_shares_session_with_live_owner),
                cmocka_unit_test(test_shares_job_cgroup_with_live_owner),
                cmocka_unit_test(test_weak_link_and_group_ties),
                cmocka_unit_test(test_namespace_init),
                cmocka_unit_test(test_pid1_kthread_self_ancestor),
                cmocka_unit_test(test_each_protected_name),
                cmocka_unit_test(test_name_matching),
                cmocka_unit_test(test_policy_comm_cgroup_unit),
                cmocka_unit_test(test_policy_load),
                cmocka_unit_test(test_long_reason_arrives_whole),
                cmocka_unit_test(test_other_gpu),
                cmocka_unit_test(test_dead_and_d_state),
                cmocka_unit_test(test_explicit_pids),
                cmocka_unit_test(test_policy_parse),
                cmocka_unit_test(test_rule_names),
                cmocka_unit_test(test_family_whole_or_nothing),
                cmocka_unit_test(test_family_explicit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
