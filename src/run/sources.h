/* sources: where a command's facts come from (this host's /proc, device nodes and NVML library;
 * a simulated host named by GHOSTVRAM_SIM; a recorded bundle), how long a driver call may take,
 * and the options of the collectors and of a scan made from them. The command line fills one
 * from the common options (cli/common.c), then sources_open checks and completes it; a test
 * fills one by hand. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "collect/gpu.h"
#include "collect/host.h"

struct sources {
        const char *nvml_lib;           /* NULL: libnvidia-ml.so.1 (or the simulated host's) */
        const char *proc_root;          /* /proc, a --proc tree, or the bundle's proc/ */
        const char *dev_prefix;         /* /dev/nvidia, or the simulated host's */
        unsigned timeout_ms;            /* each driver call and blocking /proc read */
        const char *save_bundle;        /* record every answer into this directory */
        const char *from_bundle;        /* read a recorded bundle instead of this host */
        enum host_holders_mode holders;
        double xid_window_s;            /* an Xid this recent pages (0: none) */
        bool simulated;                 /* GHOSTVRAM_SIM named a simulated host */
        const char *sim_dir;
        char sim_lib[4096];
        char sim_prefix[4096];
        char sim_driver_proc[4096];     /* the simulated host's /proc/driver/nvidia */
        char bundle_proc[4096];
};

/* This host, a 5 s call deadline, the default Xid window. */
void sources_init(struct sources *s);
/* Check what the options named and complete s: --save-bundle a new or empty directory and not
 * with --from-bundle; a bundle readable, its files plain and parseable; a --proc tree there;
 * sim_env (GHOSTVRAM_SIM, NULL or "" for none) a simulated host, whose library and device nodes
 * are then used. Returns 0, or -1 with one sentence in err. */
int sources_open(struct sources *s, const char *sim_env, char *err, size_t errlen);

void sources_gpu_opts(const struct sources *s, struct gpu_opts *o);
void sources_host_opts(const struct sources *s, struct host_opts *o);
/* One sample's options (collect/sample.h): the GPU's and the host's, recorded into
 * --save-bundle; no kernel log. */
struct facts_opts;
void sources_facts_opts(const struct sources *s, struct facts_opts *o);

/* Where host shared memory (collect/shm.h) is read: root (doctor's --root; NULL or "/" none)
 * gives ROOT/proc and ROOT/dev/shm; else the simulated host's DIR/proc and DIR/dev/shm; else a
 * --proc tree's meminfo and sysvipc/shm (no /dev/shm: the tree is not this host's); else /proc
 * and /dev/shm. A recorded bundle keeps none of it: false (not read). The paths live in p. */
struct sources_shm_paths {
        char proc[4096];
        char dir[4096];
};
struct shm_opts;
bool sources_shm_opts(const struct sources *s, const char *root, struct sources_shm_paths *p, struct shm_opts *o);

/* The sources, ledger defaults and bundles of one scan (confirm 2s). */
struct scan_once_opts;
void sources_scan_once_opts(const struct sources *s, struct scan_once_opts *o);

/* --gpu SPEC as an index into *ret_index (-1 when spec is NULL). A UUID or PCI bus id is looked
 * up in one collection; so is an index when check_index (else the caller checks it against its
 * own sample). Returns EXIT_OK, EXIT_USAGE (no such GPU) or EXIT_INCOMPLETE (no driver to look a
 * UUID or bus id up, out of memory), the reason in err. */
int sources_gpu_resolve(const struct sources *s, const char *spec, bool check_index, int *ret_index, char *err,
                        size_t errlen);
