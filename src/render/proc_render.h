/* proc_render: a process (holder or NVML-listed PID) as JSON and as escaped terminal text. */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "collect/host.h"
#include "util/buf.h"

/* The holder facts of the snapshot schema. with_cmdline=false leaves "cmdline" null (the
 * exporter does not publish command lines: they carry secrets). */
json_t *host_proc_json(const struct host_proc *p, bool with_cmdline);
/* ["nvidiactl", "nvidia-uvm", ...] and the matching "via" object {"nvidiactl": ["fd","mmap"]}. */
json_t *host_proc_devices_json(const struct host_proc *p);
json_t *host_proc_via_json(const struct host_proc *p);
/* "nvidiactl(fd,mmap) nvidia-uvm(mmap) nvidia0(fd)" */
void host_proc_nodes_text(struct buf *out, const struct host_proc *p);
/* One escaped line: "PID 31301 alice S python train.py --lr 3e-4" (cmdline cut at maxlen). */
void host_proc_summary_text(struct buf *out, const struct host_proc *p, size_t maxlen);
/* "nvidiactl(fd) nvidia0(fd,mmap)  ppid 1 pgid 31300 sid 31300  docker 3f2a1c9e0b7d": the nodes,
 * the process's family and its container, escaped. */
void host_proc_detail_text(struct buf *out, const struct host_proc *p);
/* "docker 3f2a1c9e0b7d", "k8s pod 1234-…", "slurm job 77", "" */
void host_proc_container_text(struct buf *out, const struct host_proc *p);
/* Human bytes: "2048 MiB", "1.5 GiB" style used everywhere in text output. */
void fmt_mib(struct buf *out, uint64_t bytes);
