/* holders.bpf.c: who holds the NVIDIA device files, from inside the kernel. Three iterators,
 * each read once per walk by src/collect/host_bpf.c:
 *   iter/task       one GV_REC_TASK per thread-group leader (the processes there are);
 *   iter/task_file  one GV_REC_FD per descriptor on a candidate file (the kernel skips threads
 *                   that share their leader's descriptor table);
 *   iter/task_vma   one GV_REC_VMA per mapping of a candidate file (b = 1 on the first record of
 *                   a process), else GV_REC_VMA_SEEN once per address space read (the kernel
 *                   skips a task whose mmap lock it cannot take at once: such a process is
 *                   "unverified", as in the /proc walk).
 * A candidate: a file whose (s_dev, i_ino) is in `targets`, or for descriptors a character
 * device whose i_rdev or major is. The naming is done in user space with the /proc walk's own
 * rule (host_scan.c match_stat), so both paths answer alike. PIDs are translated into the
 * reader's PID namespace (the iterators walk only that namespace's tasks). */
#include "vmlinux_min.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "holders_bpf.h"

#define GV_S_IFMT 0170000
#define GV_S_IFCHR 0020000

char LICENSE[] SEC("license") = "GPL";

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 1024);
        __type(key, struct gv_key);
        __type(value, __u32);
} targets SEC(".maps");

/* Filled and reset by user space (struct gv_cfg, holders_bpf.h); in .bss, so that both
 * skeletons map it the same way. */
struct gv_cfg cfg = {};

/* The reader's PID namespace level: the iterator runs in read(), on the reader's task, the
 * same for every call of a walk, so it is read once (cfg.reader_lvl holds level + 1). */
static __always_inline unsigned int reader_level(void)
{
        if (!cfg.reader_lvl) {
                struct task_struct *cur = (struct task_struct *)bpf_get_current_task();
                cfg.reader_lvl = BPF_CORE_READ(cur, thread_pid, level) + 1;
        }
        return cfg.reader_lvl - 1;
}

/* The task's thread group as numbered at `level`, or 0 when it has no number there. Read
 * with bpf_probe_read_kernel, not with plain loads: the verifier checks every task_struct
 * pointer a program loads against its lists of trusted fields, which costs milliseconds at
 * each load of the programs — more than these reads cost at run time (once a process). */
static __always_inline __u32 tgid_at(struct task_struct *t, unsigned int level)
{
        struct pid *p = BPF_CORE_READ(t, group_leader, thread_pid);
        int nr = 0;
        if (!p || BPF_CORE_READ(p, level) < level)
                return 0;
        bpf_core_read(&nr, sizeof(nr), &p->numbers[level].nr);
        return nr > 0 ? (__u32)nr : 0;
}

/* Is a file of filesystem dev possibly a target (a cheap test before the map lookup)? */
static __always_inline int on_target_fs(__u64 dev)
{
        for (__u32 i = 0; i < GV_MAX_SDEVS; i++) {
                if (i >= cfg.n_s_devs)
                        return 0;
                if (cfg.s_devs[i] == dev)
                        return 1;
        }
        return 0;
}

static __always_inline int is_target(__u64 dev, __u64 ino)
{
        struct gv_key k = { .dev = dev, .ino = ino };
        return bpf_map_lookup_elem(&targets, &k) != 0;
}

SEC("iter/task")
int gv_tasks(struct bpf_iter__task *ctx)
{
        struct task_struct *t = ctx->task;
        if (!t)
                return 0;
        if (t->pid != t->tgid)
                return 0;       /* one record a process */
        struct gv_rec r = { .kind = GV_REC_TASK };
        r.pid = tgid_at(t, reader_level());
        if (!r.pid)
                return 0;
        r.a = t->flags;
        if (bpf_core_field_exists(t->__state)) {
                r.b = t->__state;
        } else {
                struct task_struct___old *o = (void *)t;
                r.b = (__u32)o->state;
        }
        r.ino = (__u32)t->exit_state;
        r.dev = BPF_CORE_READ(t, mm) != 0;     /* a task_struct pointer: see tgid_at */
        bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
        return 0;
}

SEC("iter/task_file")
int gv_files(struct bpf_iter__task_file *ctx)
{
        struct task_struct *t = ctx->task;
        struct file *f = ctx->file;
        if (!t || !f)
                return 0;
        /* plain loads: the file is a BTF pointer, which the verifier makes fault-safe, far
         * cheaper than a bpf_probe_read_kernel call on every descriptor */
        struct inode *in = f->f_inode;
        if (!in)
                return 0;
        struct gv_rec r = { .kind = GV_REC_FD, .a = ctx->fd };
        umode_t mode = in->i_mode;
        r.dev = in->i_sb->s_dev;
        if ((mode & GV_S_IFMT) == GV_S_IFCHR) {
                /* a character device is one of ours by its number: an nvidia major, or a host
                 * node's device number (which a node with the same st_dev, st_ino also has) */
                r.b = 1;
                r.rdev = in->i_rdev;
                __u32 maj = (__u32)(r.rdev >> 20);
                if (maj >= GV_MAX_MAJOR || !cfg.chr_majors[maj])
                        return 0;
                if (!is_target(r.rdev, GV_KEY_RDEV) && !is_target(maj, GV_KEY_MAJOR))
                        return 0;
                r.ino = in->i_ino;
        } else {
                if (!on_target_fs(r.dev))
                        return 0;
                r.ino = in->i_ino;
                if (!is_target(r.dev, r.ino))
                        return 0;
        }
        r.pid = tgid_at(t, reader_level());
        if (!r.pid)
                return 0;
        r.file = (__u64)(unsigned long)f;
        bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
        return 0;
}

SEC("iter/task_vma")
int gv_vmas(struct bpf_iter__task_vma *ctx)
{
        struct task_struct *t = ctx->task;
        struct vm_area_struct *v = ctx->vma;
        if (!t || !v)
                return 0;
        /* a task's mappings come one after the other: its number is looked up once a task,
         * the task known by its kernel-wide TID (two tasks in a row with the same one would
         * need the PID space to wrap around during the walk) */
        __u32 pid, tid = (__u32)t->pid;
        if (cfg.last_tid == tid && tid) {
                pid = cfg.last_pid;
        } else {
                pid = tgid_at(t, reader_level());
                cfg.last_tid = tid;
                cfg.last_pid = pid;
        }
        if (!pid)
                return 0;
        /* One write per call: when the seq_file buffer overflows, the kernel drops what this
         * call wrote and calls it again for the same mapping, so last_seen moves only once the
         * record is in. */
        struct gv_rec r = { .kind = GV_REC_VMA_SEEN, .pid = pid };
        struct file *f = v->vm_file;
        struct inode *in = f ? f->f_inode : 0;
        if (in) {
                r.dev = in->i_sb->s_dev;
                if (on_target_fs(r.dev)) {
                        r.ino = in->i_ino;
                        if (is_target(r.dev, r.ino)) {
                                r.kind = GV_REC_VMA;
                                r.b = cfg.last_seen != pid; /* also the first mapping seen of it */
                                r.file = (__u64)(unsigned long)f;
                        }
                }
        }
        if (r.kind == GV_REC_VMA_SEEN && cfg.last_seen == pid)
                return 0;
        if (bpf_seq_write(ctx->meta->seq, &r, sizeof(r)) == 0)
                cfg.last_seen = pid;
        return 0;
}
