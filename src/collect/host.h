/* host: one walk over /proc that finds every process holding an NVIDIA device node, by open
 * descriptor and by memory mapping, with the facts needed to explain it. Pure data out; the
 * reader never prints. Roots are parameters (proc root, device prefix) so tests point them at
 * fixture trees without special cases.
 *
 * Matching: a descriptor whose link target starts with dev_prefix, or (fstatat, only for
 * targets under /dev/ not matched by path) is one of the host's nodes under the prefix (same
 * inode or device number) or a character device of a driver /proc/devices names nvidia*
 * (nodes made inside containers); a maps line whose path starts with dev_prefix, or whose
 * (device, inode) is that of a host node under the prefix. Nodes are named by the path after
 * the prefix's directory ("nvidia-uvm", "nvidia-caps/nvidia-cap1") or by major/minor. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/strf.h"

#define HOST_MAX_NSPID 8
#define HOST_MAX_NODES 32
#define HOST_MAX_ENV 8

enum host_via {
        HOST_VIA_FD = 1 << 0,
        HOST_VIA_MMAP = 1 << 1,
};

/* What could not be read for one process (bits). */
enum host_skipped {
        HOST_SKIP_MAPS = 1 << 0,        /* D state, missed deadline, or permission */
        HOST_SKIP_CMDLINE = 1 << 1,     /* D state, or a read of this task missed its deadline */
        HOST_SKIP_ENVIRON = 1 << 2,     /* the same, or permission (only with read_env) */
        HOST_SKIP_FDS = 1 << 3,         /* fd/ not readable (another user's, no ptrace rights) */
        HOST_SKIP_CGROUP = 1 << 4,
};

struct host_node {
        char name[48];          /* "nvidiactl", "nvidia-uvm", "nvidia0", "nvidia-caps/nvidia-cap1" */
        unsigned via;           /* enum host_via bits */
};

/* One open file description of an NVIDIA node that a process refers to, kept only while the
 * walk groups processes into families (never printed or saved: key is a kernel address). */
struct host_desc {
        uint64_t key;           /* the BPF walk's struct file pointer; 0 on the /proc walk */
        int fd;                 /* the descriptor's number, -1 for a mapping */
};
#define HOST_MAX_DESC 48

/* Why a holder is a family of its own without having been compared with the others. */
enum host_family_note {
        HOST_FAMILY_COMPARED = 0,       /* grouped by the kernel's answer (or alone after it) */
        HOST_FAMILY_MAPPING_ONLY,       /* it refers to its nodes by mapping only: kcmp compares descriptors */
        HOST_FAMILY_NO_RIGHTS,          /* kcmp refused (another user's process, no ptrace rights) */
        HOST_FAMILY_UNKNOWN,            /* not grouped: a fixture tree, whose PIDs are not processes */
        HOST_FAMILY_TOO_MANY,           /* more than HOST_MAX_DESC descriptions: only the first were compared */
};

struct host_env {
        char name[32];
        char *value;
};

/* Facts about one process; also used for NVML-listed PIDs that hold nothing. */
struct host_proc {
        pid_t pid, ppid, pgid, sid;
        char state;             /* R S D Z T t X I ... ; '?' unknown */
        bool exiting;           /* PF_EXITING in stat flags */
        bool kernel_thread;     /* PF_KTHREAD */
        unsigned num_threads;   /* stat field 20 */
        uint64_t start_ticks;   /* stat field 22, clock ticks since boot */
        uint64_t cpu_ticks;     /* stat fields 14 + 15: user and system time, clock ticks */
        uint64_t rss_pages;     /* stat field 24: resident pages (valid if rss_known) */
        bool rss_known;
        double start_time;      /* epoch seconds (btime + ticks / CLK_TCK) */
        char wchan[64];
        uid_t uid;
        char user[64];          /* from the passwd database, else the number */
        char *comm;             /* raw (hostile) text; the kernel's comm holds no NUL */
        char *cmdline;          /* joined with spaces; NULL if not read */
        pid_t nspid[HOST_MAX_NSPID]; /* NSpid chain, outermost (this /proc's namespace) first */
        unsigned n_nspid;
        uint64_t pidns_ino;     /* inode of /proc/PID/ns/pid, 0 if unreadable */
        char *cgroup;           /* the cgroup path (v2 line, else the first v1 line) */
        char container_runtime[16]; /* "docker", "containerd", "cri-o", "podman", "" */
        char container_id[72];
        char k8s_pod_uid[40];
        char slurm_job[24];
        char systemd_unit[128];
        struct host_env env[HOST_MAX_ENV];
        unsigned n_env;
        struct host_node nodes[HOST_MAX_NODES];
        unsigned n_nodes;
        unsigned skipped;       /* enum host_skipped bits */
        /* Its description family: the holders that share an open file description of an
         * NVIDIA node with it (fork, dup, SCM_RIGHTS, pidfd_getfd; descriptor or mapping), and
         * those that share one with them. Numbered 1.. in the report (by lowest PID); 0 outside
         * a report's holders. */
        unsigned family;
        enum host_family_note family_note;
        struct host_desc descs[HOST_MAX_DESC]; /* transient, see struct host_desc */
        unsigned n_descs;
};

/* The numbers of a process whose descriptors we cannot read (another user's, not root). */
struct host_pid_ref {
        pid_t pid, pgid, sid;
};
#define HOST_MAX_OPAQUE 65536
#define HOST_MAX_ANCESTORS 64

/* Which mechanism found the holders of a report. */
enum host_holder_source {
        HOST_SOURCE_PROC = 0,   /* the /proc walk (fd links, maps) */
        HOST_SOURCE_BPF,        /* the kernel's iter/task_file and iter/task_vma (host_bpf.c) */
        HOST_SOURCE_OWNERS,     /* no walk: only the listed owners were looked at */
        HOST_SOURCE_BUNDLE,     /* read back from a recorded bundle */
};

/* How the walk finds holders (host_opts.holders). */
enum host_holders_mode {
        HOST_HOLDERS_AUTO = 0,  /* the BPF iterators when they load, else /proc */
        HOST_HOLDERS_PROC,      /* /proc only */
        HOST_HOLDERS_BPF,       /* the BPF iterators or fail (-EOPNOTSUPP, -EPERM, ...) */
};

struct host_report {
        struct host_proc *holders;      /* every process holding a node, by pid */
        size_t n_holders;
        /* Processes whose maps could not be read (D state, a missed deadline) and that hold no
         * node by descriptor: they may hold one by mapping. Same facts as holders, no nodes. */
        struct host_proc *unverified;
        size_t n_unverified;
        /* Processes whose descriptors are unreadable to us (not root), by number only: a dead
         * owner's process group or session may live on there, out of sight. Live walks, and
         * bundles that recorded them (host.json "opaque"). */
        struct host_pid_ref *opaque;
        size_t n_opaque;
        char **limits;                  /* what could not be seen, one sentence each, in English
                                         * (JSON, bundles) */
        char **limits_text;             /* the same in the reader's language (util/i18n.h): n_limits
                                         * entries, NULL where English; host_report_limit_text */
        size_t n_limits;
        uint64_t self_pidns_ino;        /* our own PID namespace */
        bool initial_pidns;             /* the namespace is the initial one (inode 0xEFFFFFFC) */
        uid_t euid;
        double btime;                   /* boot time, epoch seconds */
        long clk_tck;
        double sample_time;             /* epoch seconds when the walk started */
        unsigned procs_scanned;
        pid_t self_pid;                 /* our own PID as proc_root shows it, 0 if not there */
        /* A walk recorded into a bundle records ghostvram's own process too, since the judgement
         * uses it (its cgroup, job, session: model/jobs.h; reclaim protects it and its
         * ancestors): its /proc files saved as a lookup of self_pid, and its ancestors (parent,
         * grandparent, ... up to PID 1) by number. self_saved: the bundle read back has them
         * (bundles made before it do not); set on the walk that recorded them too. */
        bool self_saved;
        pid_t self_ancestors[HOST_MAX_ANCESTORS];
        unsigned n_self_ancestors;
        /* The device nodes a live walk found under the prefix (nodes_known; a bundle does not
         * say): GPU nodes nvidia<N> (bit N of gpu_nodes, N < 256) and nvidia-uvm. Without a
         * GPU's node nobody can be seen holding it. */
        bool nodes_known;
        bool uvm_node;
        uint64_t gpu_nodes[4];
        unsigned nvidia_majors[8];      /* from /proc/devices */
        unsigned n_nvidia_majors;
        enum host_holder_source holder_source;
        /* Families: how the holders were grouped by open file description. */
        enum host_family_source {
                HOST_FAMILIES_NONE = 0, /* not grouped (a fixture tree, an old bundle): every holder alone */
                HOST_FAMILIES_KCMP,     /* kcmp(KCMP_FILE) over descriptors; mappings not compared */
                HOST_FAMILIES_BPF,      /* the kernel's struct file pointers, descriptors and mappings */
                HOST_FAMILIES_BUNDLE,   /* as recorded in the bundle */
        } family_source;
        unsigned n_families;
        /* Why the BPF iterators did not answer (NULL if they did or were not tried; a heap
         * string, util/strf.h). */
        char *bpf_error;
};

struct host_opts {
        const char *proc_root;          /* default "/proc" */
        const char *dev_prefix;         /* default "/dev/nvidia" */
        unsigned timeout_ms;            /* deadline for a read that may block (default 2000) */
        /* If set, record a bundle: the /proc files used for holders, unverified processes and
         * lookups go to save_dir/proc/PID/ (environ: allow-listed variables only; maps: the
         * matched lines, paths rewritten to /dev/NODE; fd/N: links to /dev/NODE for matched
         * descriptors only), with save_dir/proc/stat (btime), save_dir/proc/devices and
         * save_dir/host.json (machine facts, limits, per process: role, skipped bits, user;
         * ghostvram's own process and ancestors; the numbers of the processes we cannot
         * inspect).
         * When proc_root is such a save_dir/proc (host.json one level up), it is read back and
         * the report is the one that was saved (use dev_prefix "/dev/nvidia"). */
        const char *save_dir;
        bool read_env;                  /* read the allow-listed environment variables */
        enum host_holders_mode holders; /* live walks only; bundles and save_dir use /proc */
};

/* "proc", "bpf", "owners", "bundle". */
const char *host_holder_source_name(enum host_holder_source s);

/* The environment variables ghostvram reads, nothing else from the environment. */
extern const char *const host_env_allowlist[];

/* Walk proc_root. Returns 0 and a report (free with host_report_free; holders and unverified
 * sorted by pid), or a negative errno if proc_root cannot be read at all (-EBADMSG: a bundle
 * whose host.json is damaged). Vanishing processes are skipped silently; what could not be
 * seen is in limits[], never an error. maps, cmdline and environ are read on a worker under
 * timeout_ms (never for D-state tasks); once four timeouts' worth of waiting is lost, further
 * blocking reads get 50 ms, so the walk ends in bounded time. A live walk runs on up to one
 * thread per CPU (8 at most); a bundle is read or recorded on the caller's thread. */
int host_scan(const struct host_opts *o, struct host_report **ret);

/* Can DIR/host.json (a bundle's host facts) be read back? 0, or a negative errno and why in err
 * ("host.json: not JSON (line 1, column 9: ...)"). */
int host_bundle_check(const char *dir, char *err, size_t errlen);
void host_report_free(struct host_report *r);
/* What a report holds, freed, for one that is not malloc'd itself (the struct stays). */
void host_report_release(struct host_report *r);

/* No walk: a report with the machine facts (as host_scan gives them) whose holders are the
 * processes among pids[0..n) that hold a node, found by reading only their own fd tables and
 * maps (holder_source HOST_SOURCE_OWNERS). PIDs that are absent or hold nothing are left out;
 * procs_scanned counts the PIDs looked at. Returns 0 and *ret, or a negative errno as host_scan.
 * Not for bundles or save_dir (-EINVAL): those record a walk. */
int host_scan_pids(const struct host_opts *o, const pid_t *pids, size_t n, struct host_report **ret);

/* Facts for one PID (for NVML-listed PIDs), nodes included: 0, -ESRCH if there is no such
 * process here, -EACCES if its /proc entry cannot be read (hidepid). *ret is written only on
 * success; clear it with host_proc_clear. With save_dir, what it read is saved too. */
int host_proc_lookup(const struct host_opts *o, pid_t pid, struct host_proc *ret);
void host_proc_clear(struct host_proc *p);

/* "none", "kcmp", "bpf", "bundle"; a holder's note: NULL when compared, else why it is alone. */
const char *host_family_source_name(enum host_family_source s);
const char *host_family_note_text(enum host_family_note n);

/* Group r's holders into families (host_family.c): by their descriptions' keys (BPF), else by
 * kcmp over their descriptors when live_proc (the real /proc of this PID namespace: never on a
 * fixture tree, whose PIDs are not processes). Sets each holder's family, family_note,
 * r->n_families and r->family_source, and drops the transient descriptions. 0 or -ENOMEM. */
int host_families_group(struct host_report *r, bool live_proc);

/* Find a holder by pid in a report, or NULL. */
const struct host_proc *host_report_find(const struct host_report *r, pid_t pid);
/* Append copies of a limit's sentence to the report: en in English, text in the reader's
 * language (NULL: the same as en). 0 or -ENOMEM (the report unchanged). */
int host_report_add_limit(struct host_report *r, const char *en, const char *text);
/* Limit i in the reader's language (its English where it has no other). */
const char *host_report_limit_text(const struct host_report *r, size_t i);
/* Did the walk find node nvidia<minor> under the prefix? true when it does not know (a bundle). */
bool host_report_has_gpu_node(const struct host_report *r, unsigned minor);

/* Does p hold node `name` (exact) by any means? */
bool host_proc_holds(const struct host_proc *p, const char *name);
/* The value of allow-listed environment variable `name` in p, or NULL. */
const char *host_proc_env(const struct host_proc *p, const char *name);

/* Parsers without I/O, for tests and fuzzing. Each reads only buf[0..len), writes p only on
 * success and returns 0, -EINVAL, or -ENOMEM (the strings it allocates). */
int host_parse_stat(const char *buf, size_t len, struct host_proc *p);
int host_parse_status(const char *buf, size_t len, struct host_proc *p);
/* cgroup file content -> cgroup path, container runtime/id, pod uid, slurm job, unit. */
int host_parse_cgroup(const char *buf, size_t len, struct host_proc *p);
/* One line of /proc/PID/maps: the path after the inode (" (deleted)" included; it may hold
 * spaces), or NULL if none or the line is malformed. */
const char *host_maps_line_path(const char *line, size_t len, size_t *ret_pathlen);
/* Node name for a path under dev_prefix ("/dev/nvidia-uvm" -> "nvidia-uvm"), or -EINVAL. */
int host_node_name(const char *path, const char *dev_prefix, char *out, size_t outlen);
