/* gpu_procfs: what the nvidia kernel module itself says of each GPU it drives, in
 * /proc/driver/nvidia/gpus/<bus id>/information. NVML cannot name a GPU whose handle is lost
 * (NVML_ERROR_GPU_IS_LOST from nvmlDeviceGetHandleByIndex, as after Xid 79), but the module
 * still lists the device it probed: its bus location, UUID and device minor. The parser does no
 * I/O; the reader takes the directory as a parameter (the simulated host has its own). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "collect/gpu.h"

#define GPU_PROCFS_MAX 64       /* GPUs read (a host has at most 16 or so) */

struct gpu_procfs_entry {
        char pci_bus_id[32];    /* normalised, dddd:bb:dd.f */
        char uuid[96];          /* "" when the file gives none usable */
        unsigned minor;
        bool minor_known;
};

/* Parse one `information` file (buf, len; need not be NUL-terminated). The module writes one
 * "Key: \t value" line a field (kernel-open/nvidia/nv-procfs.c, nv_procfs_read_gpu_info):
 * "Bus Location", "GPU UUID", "Device Minor" are read; other lines are skipped. A UUID that is
 * not "GPU-" and hex digits (a placeholder of question marks, "N/A") is left empty. Returns 0,
 * or -EINVAL when no valid bus location is found. */
int gpu_procfs_parse_information(const char *buf, size_t len, struct gpu_procfs_entry *ret);

/* Read DIR/gpus/<bus id>/information for every GPU of the module, sorted by bus id, into
 * out (at most max). NULL dir: /proc/driver/nvidia. Returns the number read, or a negative
 * errno when DIR/gpus cannot be opened (-ENOENT: no module, or an older simulated host). */
int gpu_procfs_read(const char *dir, struct gpu_procfs_entry *out, size_t max);

/* Give the GPUs NVML could not name (no bus id, as after a lost handle) the bus id, UUID and
 * minor of a module entry that no named GPU has, tied by a fact only: the same UUID, the same
 * device minor, or elimination (exactly one such GPU and one such entry left, nothing of
 * theirs disagreeing). Never by order: NVML documents no stable index order, and a guess that
 * names the wrong GPU is worse than none. A filled GPU's status message says how it was tied.
 * Returns how many GPUs were filled. No I/O. */
size_t gpu_procfs_fill(struct gpu_report *r, const struct gpu_procfs_entry *e, size_t n);
