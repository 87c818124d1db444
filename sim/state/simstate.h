/* simstate: the simulated driver's state directory, shared by the stand-in NVML library
 * (sim/nvml), the simulated CUDA application (sim/app) and `ghostvram sim`.
 * The model and its rules: docs/simulator.md. */
#pragma once
#include <stddef.h>

/* The NVML library that a process reading the simulated host in `dir` must load (the variant
 * chosen by the `driver` knob). Returns 0 or a negative errno (-ENOENT: not a sim dir, or the
 * variant is not built). */
int simstate_library(const char *dir, char *out, size_t outlen);

/* The device-node prefix of the simulated host: "<dir>/dev/nvidia". */
int simstate_dev_prefix(const char *dir, char *out, size_t outlen);
