/* vmlinux_min.h: the few kernel types holders.bpf.c reads, declared by hand so that the build
 * needs no /sys/kernel/btf/vmlinux (no `bpftool btf dump`). Every struct is marked
 * preserve_access_index: the field offsets below are placeholders that libbpf relocates (CO-RE)
 * against the running kernel's BTF at load time; only the field names and types must match the
 * kernel's. The iterator contexts (bpf_iter__*) are the kernel's stable BPF ABI
 * (include/linux/bpf.h, kernel/bpf/task_iter.c). */
#pragma once

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef __u16 umode_t;
typedef __u32 dev_t;
typedef int pid_t;

enum bpf_map_type {
        BPF_MAP_TYPE_HASH = 1,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct seq_file;

struct super_block {
        dev_t s_dev;
};

struct inode {
        umode_t i_mode;
        struct super_block *i_sb;
        unsigned long i_ino;
        dev_t i_rdev;
};

struct file {
        struct inode *f_inode;
};

struct mm_struct;

struct vm_area_struct {
        struct file *vm_file;
};

struct pid_namespace;

struct upid {
        int nr;
        struct pid_namespace *ns;
};

struct pid {
        unsigned int level;
        struct upid numbers[1];
};

struct task_struct {
        unsigned int __state;
        unsigned int flags;
        struct mm_struct *mm;
        int exit_state;
        pid_t pid;
        pid_t tgid;
        struct task_struct *group_leader;
        struct pid *thread_pid;
};

/* kernels before 5.14 call it `state` (a long) */
struct task_struct___old {
        long state;
};

struct bpf_iter_meta {
        struct seq_file *seq;
        __u64 session_id;
        __u64 seq_num;
};

struct bpf_iter__task {
        union {
                struct bpf_iter_meta *meta;
        };
        union {
                struct task_struct *task;
        };
};

struct bpf_iter__task_file {
        union {
                struct bpf_iter_meta *meta;
        };
        union {
                struct task_struct *task;
        };
        __u32 fd;
        union {
                struct file *file;
        };
};

struct bpf_iter__task_vma {
        union {
                struct bpf_iter_meta *meta;
        };
        union {
                struct task_struct *task;
        };
        union {
                struct vm_area_struct *vma;
        };
};

#pragma clang attribute pop
