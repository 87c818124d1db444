/* facts_builder: hand-built samples for unit tests (the ledger's, the renderers', the
 * sampler's): GPUs, NVML processes, holders and the killed-job scenario. Include after cmocka. */
#pragma once
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

static inline struct facts *facts_new(unsigned n_gpus, bool initial_pidns, uid_t euid)
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
                g->minor = i;
                g->minor_known = true;
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

static inline void gpu_used(struct facts *f, unsigned gpu, uint64_t used)
{
        struct gpu_info *g = &f->gpu->gpus[gpu];
        g->used_bytes = used;
        g->free_bytes = g->total_bytes - g->reserved_bytes - used;
}

static inline void nvml_proc(struct facts *f, unsigned gpu, uint32_t pid, uint64_t bytes)
{
        struct gpu_info *g = &f->gpu->gpus[gpu];
        g->procs = realloc(g->procs, (g->n_procs + 1) * sizeof(*g->procs));
        g->procs[g->n_procs++] = (struct gpu_proc){ .pid = pid, .used_bytes = bytes, .used_known = true,
                                                    .gpu_instance = GPU_INSTANCE_NONE,
                                                    .compute_instance = GPU_INSTANCE_NONE,
                                                    .kinds = GPU_PROC_COMPUTE };
}

static inline struct host_proc proc(pid_t pid, pid_t ppid, pid_t pgid, pid_t sid, char state, const char *comm)
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

static inline void node(struct host_proc *p, const char *name)
{
        struct host_node *n = &p->nodes[p->n_nodes++];
        snprintf(n->name, sizeof(n->name), "%s", name);
        n->via = HOST_VIA_FD | HOST_VIA_MMAP;
}

/* A CUDA process as the runtime leaves it: nvidiactl, nvidia-uvm and every GPU node. */
static inline void cuda_nodes(struct host_proc *p, unsigned n_gpus)
{
        node(p, "nvidiactl");
        node(p, "nvidia-uvm");
        for (unsigned i = 0; i < n_gpus; i++) {
                char name[24];
                snprintf(name, sizeof(name), "nvidia%u", i);
                node(p, name);
        }
}

static inline void holder(struct facts *f, struct host_proc p)
{
        struct host_report *h = f->host;
        h->holders = realloc(h->holders, (h->n_holders + 1) * sizeof(*h->holders));
        h->holders[h->n_holders++] = p;
}

/* Put holder pid in description family fam (the report's families then count as compared). */
static inline void family(struct facts *f, pid_t pid, unsigned fam)
{
        struct host_report *h = f->host;
        for (size_t i = 0; i < h->n_holders; i++)
                if (h->holders[i].pid == pid)
                        h->holders[i].family = fam;
        h->family_source = HOST_FAMILIES_KCMP;
        if (fam > h->n_families)
                h->n_families = fam;
}

/* Fill the NVML-PID facts from the holders (what facts_collect does with /proc). A PID listed in
 * `present` but not a holder is an unrelated live process (a reused PID). */
static inline void finish(struct facts *f, const struct host_proc *present, size_t n_present)
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

static inline void facts_destroy(struct facts *f)
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

static inline struct scan_result *build(const struct facts *now, const struct facts *before)
{
        struct ledger_opts o;
        ledger_opts_default(&o);
        o.self_pid = 1; /* not any test PID */
        o.two_samples = before != NULL;
        struct scan_result *r = NULL;
        assert_int_equal(ledger_build(now, before, &o, &r), 0);
        return r;
}

static inline const char *verdict(const struct scan_result *r, unsigned gpu)
{
        return r->gpus[gpu].n_findings ? r->gpus[gpu].findings[0].code : "(none)";
}

static inline bool attributed(const struct scan_result *r, unsigned gpu, pid_t pid)
{
        const struct gpu_ledger *l = &r->gpus[gpu];
        for (size_t a = 0; a < l->n_attr; a++)
                if (r->facts->host->holders[l->attr[a].holder].pid == pid)
                        return true;
        return false;
}

static inline void assert_sums(const struct scan_result *r)
{
        for (size_t i = 0; i < r->n_gpus; i++) {
                const struct gpu_ledger *l = &r->gpus[i];
                if (l->inspected)
                        assert_true(l->listed + l->foreign + l->ghost + l->unattributed == l->used);
        }
}

/* A GPU 0 using 2 GiB that NVML charges to PID 31300, which nothing holds (finished). */
static inline struct facts *dead_owner(bool initial_pidns, uid_t euid)
{
        struct facts *f = facts_new(1, initial_pidns, euid);
        gpu_used(f, 0, 2 * GIB);
        nvml_proc(f, 0, 31300, 2 * GIB);
        finish(f, NULL, 0);
        return f;
}

/* The killed-job scenario: owner 31300 dead, workers 31301/31302 in its process group. */
static inline struct facts *killed_job(unsigned n_gpus, unsigned gpu, bool listed)
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

