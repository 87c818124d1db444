/* gpu_events: NVML critical-error (Xid) events of every GPU, received on a background thread.
 * A hung driver never blocks the caller: opening waits at most the deadline, reading never
 * waits, closing waits at most 2 s and then leaves the thread behind. */
#pragma once
#include <stddef.h>

#include "collect/gpu.h"
#include "collect/xid.h"

struct gpu_events;

/* Load NVML (o->nvml_lib or libnvidia-ml.so.1) and register every GPU for Xid events.
 * Returns 0, or a negative errno with one line in err (-ENOENT no library, -ENOTSUP no event
 * API or no GPU supports it, -ETIMEDOUT the driver did not answer). */
int gpu_events_open(const struct gpu_opts *o, struct gpu_events **ret, char *err, size_t errlen);
/* How many GPUs deliver events. */
unsigned gpu_events_gpus(const struct gpu_events *e);
/* Move the events received so far into out (kind xid, source "nvml", time of arrival). */
int gpu_events_read(struct gpu_events *e, struct xid_list *out);
void gpu_events_close(struct gpu_events *e);
