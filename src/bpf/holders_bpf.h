/* holders_bpf.h: the records the holder iterators write (src/bpf/holders.bpf.c) and
 * src/collect/host_bpf.c reads, shared by both sides. Fixed-size, native byte order. */
#pragma once

enum gv_rec_kind {
        GV_REC_TASK = 1,        /* a thread-group leader: a = task flags, b = state, dev = has mm,
                                 * ino = exit_state */
        GV_REC_FD = 2,          /* a descriptor on a candidate file: a = fd, b = 1 if a character
                                 * device (rdev = i_rdev); dev = s_dev, ino = i_ino */
        GV_REC_VMA = 3,         /* a mapping of a candidate file: dev = s_dev, ino = i_ino; b = 1:
                                 * the first record of this process (it counts as SEEN too) */
        GV_REC_VMA_SEEN = 4,    /* the mapping iterator read this process's address space */
};

/* Keys of the `targets` map: a file by (s_dev, i_ino), a character device by i_rdev
 * (ino = GV_KEY_RDEV), or a driver's major number (ino = GV_KEY_MAJOR). Kernel dev_t encoding
 * (major << 20 | minor). */
#define GV_MAX_MAJOR 4096             /* majors are 12 bits */
#define GV_MAX_SDEVS 16
#define GV_KEY_RDEV 0xffffffffffffffffULL
#define GV_KEY_MAJOR 0xfffffffffffffffeULL

struct gv_key {
        __u64 dev;
        __u64 ino;
};

/* The programs' settings and state, one global (`cfg`, in .bss) that user space maps. */
struct gv_cfg {
        /* set before the walk, so that most files are turned away without a map lookup:
         * chr_majors[M] is 1 when a character device of major M can be a candidate (an nvidia
         * driver's, or a host node's), s_devs[] the filesystems the target files live on */
        __u8 chr_majors[GV_MAX_MAJOR];
        __u32 s_devs[GV_MAX_SDEVS];
        __u32 n_s_devs;
        /* the reader's PID namespace level + 1, once known (0: not yet) */
        __u32 reader_lvl;
        /* the mapping iterator's state, reset before its read: the last process a record was
         * written for, the last task seen (kernel-wide TID) and its number */
        __u32 last_seen;
        __u32 last_tid;
        __u32 last_pid;
};

struct gv_rec {
        __u32 kind;
        __u32 pid;              /* the thread group, as numbered in the reader's PID namespace */
        __u32 a, b;
        __u64 dev, ino, rdev;
        __u64 file;             /* FD, VMA: the struct file's address, which says which open file
                                 * description (user space groups by it, never prints it) */
};
