/* snapshot rendering: the raw facts, no verdicts. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "collect/sample.h"
#include "render/show.h"


/* The snapshot document: schema_version, simulated, driver, gpus[], holders[], limits[]. */
json_t *snapshot_json(const struct facts *f);
/* Text for people. Process-controlled text escaped; colour only if color. */
void snapshot_text(FILE *out, const struct facts *f, bool color, bool verbose);

/* Shared pieces (scan uses them too). */
json_t *facts_nvml_process_json(const struct facts *f, const struct gpu_proc *p);
json_t *facts_holders_json(const struct facts *f, bool with_cmdline);
json_t *facts_limits_json(const struct facts *f);
void text_gpu_header(FILE *out, const struct gpu_info *g, bool color);
void text_memory_line(FILE *out, const struct gpu_info *g);
void text_limits(FILE *out, const struct facts *f);

/* The facts as s says: snapshot_json, or snapshot_text after the banner. */
void snapshot_show(const struct show *s, const struct facts *f);
