/* gpu_json: a gpu_report as JSON (snapshot/scan output and the bundle's nvml.json) and back. */
#pragma once
#include <jansson.h>
#include "collect/gpu.h"

/* One GPU's facts as the snapshot schema has them (index, uuid, pci_bus_id, name, memory{},
 * nvml_processes[], ...). */
json_t *gpu_info_to_json(const struct gpu_info *g);
/* The driver part: driver_present, backend, library, driver_version, pid_mode, error. */
json_t *gpu_report_driver_json(const struct gpu_report *r);
/* Whole report for a bundle: {"driver": {...}, "gpus": [...]} */
json_t *gpu_report_to_json(const struct gpu_report *r);
/* Parse what gpu_report_to_json wrote. Returns 0, -EINVAL (not a report) or -ENOMEM. */
int gpu_report_from_json(const json_t *doc, struct gpu_report **ret);
/* Can DIR/nvml.json be read back? 0, or a negative errno and why in err ("nvml.json: not
 * JSON (line 3, column 1: ...)"). */
int gpu_bundle_check(const char *dir, char *err, size_t errlen);
/* Write DIR/nvml.json. */
int gpu_report_save_bundle(const struct gpu_report *r, const char *dir);

const char *gpu_pid_mode_name(enum gpu_pid_mode m);
const char *gpu_status_name(enum gpu_status s);
