/* demo_render: the story `ghostvram demo` tells around run/demo_run's steps: the step headings,
 * the commands as typed (scan and reclaim run as by hand), nvidia-smi's view of the simulated
 * GPUs, the end. Not translated: the demo's story is in English, as the commands it shows. */
#pragma once
#include <stdbool.h>
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

/* ---- the story, on standard output ----------------------------------------------------------- */

/* How the story says what went wrong: one line, "ghostvram demo: MSG" (the command's cli_error). */
typedef void demo_error_fn(const char *msg);

/* The story on d's host (made by demo_host_create): the job and its workers, the kill,
 * nvidia-smi's view, then scan and reclaim run as by hand (their output is the story's). Its
 * exit status: EXIT_OK when scan found the ghost and reclaim got the memory back, else
 * EXIT_INCOMPLETE (said, unless a stop signal or a reader gone stopped it). */
int demo_story(struct demo *d, unsigned mib, unsigned workers, demo_error_fn *error);
/* The end: every process stopped and the host removed (or kept with keep), what is said, the
 * stop signals given back (saved). The exit status: status, or 128+N after a stop signal N,
 * 141 when the reader went away (as `yes | head -1`), EXIT_INCOMPLETE when the story could not
 * be written. */
int demo_end(struct demo *d, bool keep, int status, const struct demo_signals *saved, demo_error_fn *error);

/* `ghostvram demo`: the stop signals taken, the host made in $TMPDIR, the title, the story, and
 * its end (demo_end: everything stopped, the host removed unless keep, the signals given back).
 * The exit status: demo_end's, or EXIT_INCOMPLETE when no host could be made (said). */
int demo_execute(unsigned mib, unsigned workers, bool keep, demo_error_fn *error);
