/* doctor_run: the use case of `ghostvram doctor` (docs/doctor.md), without argv and without
 * printing: the facts gathered (NVML with the health queries, the device-node holders, the
 * nvidia module's files under a root, the kernel log, host shared memory) and judged by
 * model/doctor.c into findings and an exit status. What is shown: render/doctor_render.h. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "collect/gpu.h"
#include "collect/host.h"
#include "collect/shm.h"
#include "collect/xid.h"
#include "model/doctor.h"
#include "run/sources.h"

struct doctor_check_opts {
        struct gpu_opts gpu;            /* the health queries are added */
        struct host_opts host;          /* the environment is not read */
        const char *root;               /* the driver's files under ROOT ("/": this host's) */
        const char *sim_dir;            /* GHOSTVRAM_SIM's DIR (its kernel log), NULL */
        const char *proc_root;          /* the kernel log's boot time (DIR/stat) */
        double xid_window_s;            /* --xid-window */
        const struct shm_opts *shm;     /* where host shared memory is read; NULL: its paths
                                         * were too long */
        uint64_t cache_min_bytes;       /* allocator-cache */
        /* --gpu SPEC (NULL: every GPU), found in the driver's report by gpu_resolve (0 and the
         * index, or -ENOENT) */
        const char *gpu_spec;
        int (*gpu_resolve)(const char *spec, const struct gpu_report *r, unsigned *ret_index);
};

/* What doctor read (owned here; the facts point into it), and what it found. */
struct doctor_check {
        struct doctor_facts facts;
        struct doctor_finding *findings;
        size_t n_findings;
        int exit_status;                /* doctor_exit_status: 0 nothing to act on, 1 a warning,
                                         * 3 the driver could not be inspected */
        /* private: what the facts point into */
        struct gpu_report *gpus;
        struct host_report *host;
        struct doctor_holder *holders;
        char *version, *params, *modules, *restrict_txt, *toolkit_cfg;
        size_t version_len, params_len, modules_len, restrict_len, toolkit_len;
        char toolkit_path[256];
        struct xid_list kernel;
        char kernel_error[KMSG_ERR_MAX + 64];
        struct shm_report *shm;
        char *shm_sysv_file;
};

/* Gather and judge. 0 with *ret, -ENOENT (--gpu names no GPU of this host) or -ENOMEM; err
 * says why. Free ret with doctor_check_free in every case. */
int doctor_check(const struct doctor_check_opts *o, struct doctor_check *ret, char *err, size_t errlen);
void doctor_check_free(struct doctor_check *d);

/* o's sources from src: the driver, /proc, the simulated host's kernel log, --xid-window, where
 * host shared memory is read under o->root (sp and shm hold it; o->shm NULL when its paths are
 * too long), and --gpu's lookup. */
void doctor_check_opts_sources(struct doctor_check_opts *o, const struct sources *src, struct sources_shm_paths *sp,
                               struct shm_opts *shm);
