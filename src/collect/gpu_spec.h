/* gpu_spec: --gpu SPEC, an index ("0"), a UUID ("GPU-5fd2...", "MIG-...") or a PCI bus id
 * ("0000:3b:00.0", "00000000:3B:00.0", "3b:00.0"), as nvidia-smi -i takes. */
#pragma once

#include "collect/gpu.h"

/* The form of SPEC, checked when the option is parsed: 0 or -EINVAL. */
int gpu_spec_check(const char *spec);
/* The GPU SPEC names in a report: 0 and its index, -ENOENT when no GPU matches. */
int gpu_spec_resolve(const char *spec, const struct gpu_report *r, unsigned *ret_index);
