/* shm: host shared memory — the tmpfs at /dev/shm (POSIX shm_open, multiprocessing, NCCL's
 * and DataLoader's buffers) and System V segments (/proc/sysvipc/shm) — read so that scan and
 * doctor can say when it is large and that it is NOT GPU memory: it is host RAM, counted in
 * free(1)'s "shared" and "buff/cache", never in nvidia-smi's used figure.
 *
 * The headline figure is the kernel's own total, Shmem in /proc/meminfo (tmpfs + SysV + shared
 * anonymous memory); the parts are detail. Large: the headline is at least 1 GiB, or at least
 * 10% of MemTotal when that is smaller (shm_threshold). Roots are parameters (the /proc root,
 * the /dev/shm directory), so tests and the simulated host point them at their own files. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SHM_MAX_SEGS 4096       /* segments kept (more are counted and summed, not kept) */
#define SHM_TOP_FILES 8         /* the largest /dev/shm files kept */
#define SHM_MAX_OWNERS 16       /* distinct file owners kept (more are counted as "others") */
#define SHM_DEFAULT_ENTRIES 4096 /* /dev/shm entries looked at (shm_opts.max_entries) */
#define SHM_GIB (1ull << 30)

/* SysV shmctl flags in the perms column (include/uapi/linux/shm.h: SHM_DEST, SHM_LOCKED). */
#define SHM_PERM_DEST 01000u    /* removed (IPC_RMID) but still attached: goes at the last detach */

/* One System V segment, a line of /proc/sysvipc/shm (ipc/shm.c sysvipc_shm_proc_show). */
struct shm_seg {
        int64_t key;            /* printed as a signed decimal (IPC_PRIVATE is 0) */
        int64_t shmid;          /* -1 when the column is missing */
        unsigned perms;         /* the octal mode, with SHM_PERM_DEST and SHM_LOCKED bits */
        uint64_t size;          /* the segment's size, as asked of shmget: not all of it is in RAM */
        uint64_t rss, swap;     /* bytes resident / swapped (columns of kernels since 3.x) */
        bool rss_known;
        pid_t cpid, lpid;       /* creator, last shmat/shmdt; 0 when missing */
        uint64_t nattch;        /* processes attached */
        uid_t uid;              /* owner (the uid column; else cuid) */
        bool uid_known;
        char user[64];          /* from the passwd database, else the number ("" before lookup) */
};

/* What /proc/sysvipc/shm held. */
struct shm_sysv {
        struct shm_seg *segs;   /* the first SHM_MAX_SEGS segments, in file order */
        size_t n;
        size_t n_total;         /* every segment line parsed (n_total > n: truncated) */
        uint64_t bytes;         /* the memory they occupy: rss + swap when known, else size */
        size_t skipped_lines;   /* lines that are not a segment (garbage, bad numbers) */
};

/* Parse /proc/sysvipc/shm: a header line naming the columns (key shmid perms size cpid lpid
 * nattch uid gid cuid cgid atime dtime ctime rss swap), then one line a segment. Columns are
 * found by their header name, so a kernel without some of them (rss, swap) is read; "size" must
 * be there. A line whose number of fields differs from the header's, or whose numbers do not
 * parse (or overflow 64 bits), is skipped and counted. Reads only buf[0..len); *ret is written
 * on success (free with shm_sysv_clear). 0, -EINVAL (no header with a size column), -ENOMEM. */
int shm_parse_sysv(const char *buf, size_t len, struct shm_sysv *ret);
void shm_sysv_clear(struct shm_sysv *s);

/* /proc/meminfo: MemTotal and Shmem in bytes (the file says kB, meaning KiB; a line without it is
 * not the kernel's and is not read). Either may be
 * missing (*ret_*_known false). 0, or -EINVAL when neither is there. Reads only buf[0..len). */
int shm_parse_meminfo(const char *buf, size_t len, uint64_t *ret_mem_total, bool *ret_total_known,
                      uint64_t *ret_shmem, bool *ret_shmem_known);

/* A file in /dev/shm. */
struct shm_file {
        char *name;             /* raw (hostile) text: the caller escapes it */
        uint64_t bytes;         /* what it occupies: min(size, allocated blocks) (a sparse file
                                 * occupies only its blocks) */
        uid_t uid;
        char user[64];
};

/* A user owning /dev/shm files. */
struct shm_owner {
        uid_t uid;
        char user[64];
        unsigned files;
        uint64_t bytes;
};

/* What the /dev/shm directory held. */
struct shm_dir {
        char *path;
        bool tmpfs;             /* a tmpfs of its own (TMPFS_MAGIC, a mount's root): used and size are the filesystem's */
        uint64_t used, size;    /* tmpfs: statvfs; else used is the sum of the files seen, size 0 */
        struct shm_file top[SHM_TOP_FILES];     /* the largest, largest first */
        unsigned n_top;
        unsigned files;         /* regular files seen */
        uint64_t files_bytes;   /* their bytes */
        unsigned skipped_dirs;  /* subdirectories (not walked) */
        struct shm_owner owners[SHM_MAX_OWNERS]; /* by bytes, largest first */
        unsigned n_owners;
        unsigned other_owner_files;     /* files of owners beyond SHM_MAX_OWNERS */
        bool complete;          /* every entry was seen (false: max_entries or the deadline) */
};

struct shm_report {
        bool meminfo_read;
        bool mem_total_known, shmem_known;
        uint64_t mem_total, shmem;
        bool sysv_read;
        struct shm_sysv sysv;
        bool dir_read;
        struct shm_dir dir;
        /* judged (shm_judge): the headline, whether it came from Shmem, the rule */
        uint64_t total;
        bool total_from_meminfo;
        uint64_t threshold;
        bool large;
};

struct shm_opts {
        const char *proc_root;  /* meminfo and sysvipc/shm under it; default "/proc"; NULL: not read */
        const char *shm_dir;    /* default "/dev/shm"; NULL: not read */
        unsigned max_entries;   /* directory entries looked at (0: SHM_DEFAULT_ENTRIES) */
        unsigned timeout_ms;    /* the directory walk stops after this (0: 1000); checked between
                                 * entries: /dev/shm is memory, its stat calls do not block */
};

/* Read the sources (each is optional: one that is absent or unreadable is left unread, its
 * *_read false), then shm_judge. Owners' names from the passwd database. Which processes map a
 * /dev/shm file is not looked for (that is a walk over every process's maps). Returns 0 and *ret
 * (free with shm_report_free), -ENODATA when no source could be read, or -ENOMEM. */
int shm_collect(const struct shm_opts *o, struct shm_report **ret);
void shm_report_free(struct shm_report *r);

/* The "large" rule's threshold: 1 GiB, or 10% of mem_total when that is smaller (mem_total 0:
 * unknown, 1 GiB). */
uint64_t shm_threshold(uint64_t mem_total);

/* No I/O: set r's total (Shmem when known, else the parts: /dev/shm's used plus the SysV
 * segments' bytes), threshold and large. */
void shm_judge(struct shm_report *r);

/* The note's sentence into *ret (util/strf.h, replaced): "host shared memory 6.2 GiB
 * (/dev/shm 6.0 GiB: 3 files of user alice; SysV 0.2 GiB: 2 segments of PID 4242)". Names are
 * escaped for the terminal. 0 or -ENOMEM. */
int shm_describe(const struct shm_report *r, char **ret);

/* "6.2 GiB", "12.0 MiB", "512 KiB", "100 bytes" into *ret (replaced). 0 or -ENOMEM. */
int shm_size_text(uint64_t bytes, char **ret);
