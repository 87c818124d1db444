/* demo_render: the story `ghostvram demo` tells around run/demo_run's steps: the step headings,
 * the commands as typed, nvidia-smi's view of the simulated GPUs, the end. Not translated: the
 * demo's story is in English, as the commands it shows. */
#pragma once
#include <stdio.h>

#include "collect/sample.h"
#include "run/demo_run.h"

/* The first line: the temporary host, said to be simulated. */
void demo_title_print(FILE *out, const char *dir);
/* "── N. TITLE ───…" between blank lines, flushed. */
void demo_step_print(FILE *out, int n, const char *title);
/* The job started: the owner's allocation, then each forked worker. */
void demo_job_print(FILE *out, const struct demo *d, unsigned mib);
/* "  $ kill -9 PID". */
void demo_kill_print(FILE *out, int pid);
/* The usual next steps a person would take without ghostvram. */
void demo_stuck_print(FILE *out);
/* "  $ CMDLINE" and a blank line, flushed: a command the demo then runs. */
void demo_command_print(FILE *out, const char *cmdline);
/* What nvidia-smi would show for f's GPUs: each GPU's used and total memory, then its
 * processes (a PID with no process here: "No such process"). */
void demo_smi_print(FILE *out, const struct facts *f);
/* --keep: where the host stays, and how to explore it (the directory quoted for the shell). */
void demo_kept_print(FILE *out, const char *dir);
/* The end of a complete story. */
void demo_over_print(FILE *out, const char *dir);
