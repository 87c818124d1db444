/* host_internal: pieces of the host reader shared by its source files (host_parse.c,
 * host_scan.c, host_bundle.c, host_report.c) and its tests. Not part of the interface. */
#pragma once
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect/host.h"
#include "util/buf.h"

/* Caps on what a process controls (STYLE: every buffer an outsider can grow has a cap). */
#define HOST_CAP_STAT (64u << 10)       /* a kernel line is < 1 KiB; fixtures may be longer */
#define HOST_CAP_STATUS (64u << 10)
#define HOST_CAP_CGROUP (64u << 10)
#define HOST_CAP_SMALL (4u << 10)       /* wchan, ns links, self */
#define HOST_CAP_CMDLINE (64u << 10)    /* longer command lines are cut here */
#define HOST_CAP_ENVIRON (4u << 20)     /* longer environments are cut here */
#define HOST_CAP_MAPS (64u << 20)       /* thousands of mappings are normal for CUDA */
#define HOST_CAP_DEVICES (64u << 10)
#define HOST_CAP_ENV_VALUE 4096         /* an allow-listed value longer than this is dropped */
#define HOST_MAX_HOST_NODES 256         /* device nodes under the prefix that we stat */

/* stat flags (include/linux/sched.h) */
#define HOST_PF_EXITING 0x00000004u
#define HOST_PF_KTHREAD 0x00200000u

/* The initial PID namespace's inode (include/linux/proc_ns.h PROC_PID_INIT_INO). */
#define HOST_PROC_PID_INIT_INO 0xEFFFFFFCu

/* A character-device driver of the nvidia family, from /proc/devices. */
enum host_drv {
        HOST_DRV_FRONTEND,      /* "nvidia-frontend" or "nvidia": nvidiaN, nvidiactl, nvidia-modeset */
        HOST_DRV_UVM,           /* "nvidia-uvm": nvidia-uvm, nvidia-uvm-tools */
        HOST_DRV_CAPS,          /* "nvidia-caps": nvidia-caps/nvidia-capN */
        HOST_DRV_OTHER,         /* any other "nvidia*" driver: named DRIVER:MINOR */
};

#define HOST_MAX_MAJORS 8

struct host_major {
        unsigned major;
        enum host_drv kind;
        char name[32];
};

struct host_majors {
        struct host_major m[HOST_MAX_MAJORS];
        unsigned n;
};

/* One line of /proc/PID/maps taken apart. path points into the line (not NUL-terminated),
 * without a " (deleted)" suffix (then deleted is set); path is NULL for anonymous memory. */
struct host_maps_line {
        unsigned dev_major, dev_minor;
        uint64_t ino;
        const char *path;
        size_t pathlen;
        bool deleted;
};

/* --- parsers without I/O (host_parse.c); each returns 0 or -EINVAL ------------------------- */

/* The "Character devices:" section of /proc/devices: drivers whose name starts with
 * "nvidia". Zero drivers is a valid answer (no driver loaded). */
int host_parse_devices(const char *buf, size_t len, struct host_majors *ret);
/* The "btime N" line of /proc/stat. */
int host_parse_btime(const char *buf, size_t len, uint64_t *ret);
/* A namespace link text "pid:[4026531836]" (a trailing newline is allowed). */
int host_parse_ns_link(const char *buf, size_t len, uint64_t *ret_ino);
int host_parse_maps_line(const char *line, size_t len, struct host_maps_line *ret);
/* Are the areas of a maps text in address order, none overlapping the one before? false: the
 * process changed its mappings while the file was read (lines cut at a cap are skipped). */
bool host_maps_ordered(const char *buf, size_t len);
/* Does a wchan or kernel-stack text (/proc/PID/task/TID/wchan, stack) name a function of the
 * nvidia modules: a thread waiting in the driver? */
bool host_names_driver(const char *buf, size_t len);
/* Name of a character device of the nvidia family, or -ENOENT if major is not one. */
int host_majors_name(const struct host_majors *m, unsigned major, unsigned minor, char *out, size_t outlen);
/* Keep the allow-listed variables of an environ block (NUL-separated NAME=value) in p->env
 * (replacing what was there) and, if saved is not NULL, append the kept entries to it in
 * environ format. Returns 0 or -ENOMEM. */
int host_parse_environ(const char *buf, size_t len, struct host_proc *p, struct buf *saved);
/* Strip a " (deleted)" suffix: returns the new length and sets *deleted. */
size_t host_strip_deleted(const char *s, size_t len, bool *deleted);

/* -errno of the call that just failed, never 0 (a failure must not read as success). */
static inline int host_neg_errno(void)
{
        return errno > 0 ? -errno : -EIO;
}

/* --- report helpers (host_report.c) -------------------------------------------------------- */

/* Add node `name` with `via` bits to p (merging with an entry of the same name). Returns 0, or
 * -E2BIG when p already has HOST_MAX_NODES other nodes. */
int host_proc_add_node(struct host_proc *p, const char *name, unsigned via);
/* Remember a description p refers to (host.h struct host_desc), once: 0, or -E2BIG when there
 * are more than HOST_MAX_DESC (only the first are grouped: family_note TOO_MANY). */
int host_proc_add_desc(struct host_proc *p, uint64_t key, int fd);
/* Sort p's nodes by name, so that the order does not depend on directory order. */
void host_proc_sort_nodes(struct host_proc *p);
/* Make room for one more element in a growable array *arr of *alloc elements of size elem,
 * holding n. Returns 0 or -ENOMEM (the array is unchanged). */
int host_grow(void *arr, size_t *alloc, size_t n, size_t elem);
/* opendir of name relative to dfd (AT_FDCWD for a path; "." for dfd itself, with its own
 * position). NULL and errno set on failure. The DIR's fd is dirfd(d). */
DIR *host_opendirat(int dfd, const char *name);
/* Append *p to an array (moving ownership of its strings). */
int host_procs_append(struct host_proc **arr, size_t *n, size_t *alloc, struct host_proc *p);
void host_procs_sort(struct host_proc *arr, size_t n);

/* --- bundles (host_bundle.c) ---------------------------------------------------------------- */

enum host_role {
        HOST_ROLE_HOLDER = 1,
        HOST_ROLE_UNVERIFIED = 2,
        HOST_ROLE_LOOKUP = 3,
};

/* What a bundle's host.json says about the machine it was taken on. */
struct host_bundle_in {
        uint64_t self_pidns_ino;
        bool initial_pidns;
        pid_t self_pid;
        uid_t euid;
        long clk_tck;
        double sample_time;
        unsigned procs_scanned;
        char **limits;
        size_t n_limits;
        bool self_saved;                        /* ghostvram's own process recorded (host.h) */
        pid_t self_ancestors[HOST_MAX_ANCESTORS];
        unsigned n_self_ancestors;
        struct host_pid_ref *opaque;            /* "opaque": absent in older bundles */
        size_t n_opaque;
        struct host_bundle_proc {
                pid_t pid;
                enum host_role role;
                unsigned skipped;
                char user[64];
                unsigned family;                /* 0: the bundle does not say */
                enum host_family_note family_note;
        } *procs;
        size_t n_procs;
};

/* Load host.json from the directory above proc_root. 0 and *ret (NULL when proc_root is not a
 * bundle), or a negative errno for a bundle whose host.json is damaged. */
int host_bundle_load(const char *proc_root, struct host_bundle_in **ret);
/* Parse a bundle's host.json from memory (len bytes, no NUL needed). 0 and *ret (NULL: another
 * format's file, why in err), or a negative errno and why in err. */
int host_bundle_parse(const char *data, size_t len, struct host_bundle_in **ret, char *err, size_t errlen);
void host_bundle_in_free(struct host_bundle_in *b);
const struct host_bundle_proc *host_bundle_proc(const struct host_bundle_in *b, pid_t pid);

/* Files of one process, as the walk used them, to copy into save_dir/proc/PID/. Any member
 * may be NULL (not read). */
struct host_save_proc {
        pid_t pid;
        enum host_role role;
        unsigned skipped;
        const char *user;
        const char *stat; size_t stat_len;
        const char *status; size_t status_len;
        const char *cmdline; size_t cmdline_len;
        const char *cgroup; size_t cgroup_len;
        const char *wchan; size_t wchan_len;
        const char *environ; size_t environ_len;     /* already filtered */
        const char *maps; size_t maps_len;           /* already filtered and rewritten */
        uint64_t pidns_ino;
        const struct host_save_fd { int fd; char name[48]; } *fds;
        size_t n_fds;
};

/* Write save_dir/proc/PID/... for one process. 0 or a negative errno. */
int host_bundle_save_proc(const char *save_dir, const struct host_save_proc *s);
/* Write save_dir/proc/stat (btime line) and save_dir/proc/devices (raw). */
int host_bundle_save_host_files(const char *save_dir, uint64_t btime, bool have_btime, const char *devices,
                                size_t devices_len);
/* Create or update save_dir/host.json. With is_scan, the machine facts and limits of `facts`
 * are (re)written; otherwise (a lookup) they are written only if host.json does not exist yet.
 * Process entries are merged in (a holder stays a holder). 0 or a negative errno. */
int host_bundle_write_json(const char *save_dir, const struct host_report *facts, bool is_scan,
                           const struct host_bundle_proc *procs, size_t n_procs);

/* --- the BPF iterators (host_bpf.c) ---------------------------------------------------------- */

/* A host node to look for: by (dev, ino), and a character device also by rdev. */
struct host_bpf_target {
        dev_t dev;
        ino_t ino;
        bool chr;
        dev_t rdev;
};

struct host_bpf_spec {
        const struct host_bpf_target *targets;
        size_t n_targets;
        const unsigned *majors;         /* nvidia* character-device majors (/proc/devices) */
        size_t n_majors;
};

/* A process of our PID namespace (seen_only: a record that only says the mapping iterator read
 * its address space). flags and state are the kernel's (PF_*, TASK_*). */
struct host_bpf_task {
        pid_t pid;
        bool seen_only;
        unsigned flags, state, exit_state;
        bool has_mm;
};

/* A descriptor (via HOST_VIA_FD, fd) or a mapping (HOST_VIA_MMAP) on a candidate file. */
struct host_bpf_hit {
        pid_t pid;
        uint64_t file;                  /* the struct file's address: which description */
        unsigned via;
        int fd;
        bool chr;
        dev_t dev, rdev;
        ino_t ino;
};

struct host_bpf_result {
        struct host_bpf_task *tasks;
        size_t n_tasks, tasks_alloc;
        struct host_bpf_hit *hits;
        size_t n_hits, hits_alloc;
};

/* Test builds only (the ghostvram-testhooks binary): load the iterators with the full
 * skeleton (libbpf's own CO-RE relocation), as on a kernel older than 5.17 where the light one
 * cannot load. false in the shipped ghostvram. */
extern bool host_bpf_full_only;

/* Load the iterators, look for s's targets, read them once. 0 and *ret (free with
 * host_bpf_result_free), or a negative errno and a sentence in err (not built in, no BTF, not
 * privileged, ...): the caller falls back to /proc. */
int host_bpf_collect(const struct host_bpf_spec *s, struct host_bpf_result *ret, char **err);
void host_bpf_result_free(struct host_bpf_result *r);
