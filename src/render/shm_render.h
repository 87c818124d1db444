/* shm_render: host shared memory (collect/shm.h) in scan's JSON and text: said, when large, to be
 * host RAM and not GPU memory. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "collect/shm.h"

/* The `host_shared_memory` object of scan --json (docs/json.md): large, total_bytes and where it
 * came from, the rule's threshold_bytes, dev_shm and sysv (null when not read). NULL on ENOMEM. */
json_t *shm_json(const struct shm_report *r);

/* The note after the GPUs when r is large (nothing otherwise): its sizes and owners, and that
 * it is host RAM, not in nvidia-smi's used figure. 0 or -ENOMEM. */
int shm_note_text(FILE *out, const struct shm_report *r, bool color);

/* The clause that says what it is not: " — this is host RAM, ..." (translated). */
const char *shm_not_gpu_text(void);
