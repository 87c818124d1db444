/* sim_render: `ghostvram sim`'s output (docs/simulator.md), in English only as the simulator's
 * messages are. */
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "run/sim_run.h"

/* `sim init`: the host made, and the commands to go on with (DIR quoted for the shell). */
void sim_init_text(FILE *f, const char *dir, unsigned gpus, uint64_t memory_mib, uint64_t reserved_mib);
/* `sim status`: the driver and its knobs, then per GPU its memory, faults, MIG instances and
 * contexts with their owners. */
void sim_status_text(FILE *f, const char *dir, const struct sim_status *s);
/* `sim run`: one line of the job's report ("owner PID", "worker PID"...) on the FILE ctx. */
void sim_job_line(void *ctx, const char *line);
