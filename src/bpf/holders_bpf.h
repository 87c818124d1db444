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

struct gv_rec {
        __u32 kind;
        __u32 pid;              /* the thread group, as numbered in the reader's PID namespace */
        __u32 a, b;
        __u64 dev, ino, rdev;
};
