/* poke: `ghostvram reclaim --poke` — a tiny CUDA client on one GPU (cuInit, a context, a 2 MiB
 * allocation, free, destroy) in a child process with a deadline. Some drivers process the
 * deferred teardown of a dead context when the next client makes one on the GPU; operators try
 * such a program before a GPU reset or a driver reload and watch whether the residue goes.
 * This module checks whether a poke may run (pure), runs it (the child is this very binary,
 * exec'd: `ghostvram __poke`), and judges what the memory did (pure). Nothing here prints.
 * docs/reclaim.md, "The poke". */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "act/escalate.h"
#include "act/reclaim_act.h"
#include "model/ledger.h"

#define POKE_DEFAULT_BYTES ((uint64_t)2 << 20)  /* the allocation: 2 MiB */
#define POKE_DEFAULT_TIMEOUT_MS 10000           /* cuInit initialises a GPU without persistence mode: seconds */
#define POKE_DEFAULT_WAIT_MS 3000               /* then how long the memory is watched */
#define POKE_MIN_FREED ((uint64_t)16 << 20)     /* less than this is noise (the poke's own 2 MiB) */

/* The child's steps, in order. */
enum poke_step {
        POKE_STEP_LOAD = 0,     /* dlopen the CUDA driver library */
        POKE_STEP_INIT,         /* cuInit(0) */
        POKE_STEP_DEVICE,       /* the CUDA device that is the GPU (CUDA_VISIBLE_DEVICES=UUID, UUID checked) */
        POKE_STEP_CONTEXT,      /* cuCtxCreate_v2 */
        POKE_STEP_ALLOC,        /* cuMemAlloc_v2 */
        POKE_STEP_FREE,         /* cuMemFree_v2 */
        POKE_STEP_DESTROY,      /* cuCtxDestroy_v2 */
        POKE_STEP_COUNT,
};

/* What the child did: the steps that succeeded (0..POKE_STEP_COUNT), the one that failed. */
struct poke_steps {
        unsigned done;                  /* steps done: POKE_STEP_COUNT when all */
        int failed;                     /* the step that failed (enum poke_step), -1 none */
        int cu_result;                  /* its CUresult (0 for the load) */
        char error[256];                /* the driver's or the loader's words */
};

/* "load", "cuInit", ... (JSON values, never translated). */
const char *poke_step_name(int step);

/* The child's line: "poke done=N failed=K result=R error=TEXT" (TEXT to the end of the line,
 * control characters replaced). poke_steps_format writes it into out (outlen > 0);
 * poke_steps_parse reads it from (buf, len): 0, or -EBADMSG when no such line is there. */
void poke_steps_format(const struct poke_steps *s, char *out, size_t outlen);
int poke_steps_parse(const char *buf, size_t len, struct poke_steps *ret);

/* The child's work (run in the exec'd `ghostvram __poke`, single-threaded): with
 * CUDA_VISIBLE_DEVICES set to uuid, load lib, cuInit, device 0 (its UUID must be uuid), a
 * context, a `bytes` allocation, free, destroy. Fills *ret; returns 0 when every step was done,
 * else -EIO. */
int poke_child_run(const char *lib, const char *uuid, uint64_t bytes, struct poke_steps *ret);

struct poke_check_opts {
        unsigned gpu;
        bool force;             /* --force: poke a GPU whose listed owners are alive */
        bool have_lib;          /* a CUDA driver library to load was found */
        const char *lib;        /* its name or path (for the sentences) */
};

/* May GPU o->gpu be poked? Refused when the GPU is not in the scan, is lost or had an Xid 79,
 * has MIG on (a context there needs an instance), has live listed owners without force (the
 * poke takes memory and a context next to them; their PIDs named), or no CUDA driver library
 * was found. out->command stays NULL. Returns 0 (see out->refuse). */
int poke_check(const struct scan_result *r, const struct poke_check_opts *o, struct escalate_report *out);

struct poke_run_opts {
        const char *exe;        /* this ghostvram ("/proc/self/exe" read by the caller) */
        const char *lib;        /* the CUDA driver library to load */
        const char *uuid;       /* the GPU, as NVML names it */
        uint64_t bytes;
        unsigned timeout_ms;    /* the child's deadline; then SIGKILL */
};

struct poke_result {
        bool ran;               /* the child was started */
        bool timed_out;         /* killed at the deadline (a hung driver call) */
        pid_t stuck_pid;        /* still there after SIGKILL (D state): its PID, 0 none */
        int exit_status;        /* the child's (128+N for signal N); valid when ran and !timed_out */
        bool steps_known;       /* its line was read */
        struct poke_steps steps;
        double seconds;         /* from start to end (or to the kill) */
        double started;         /* wall clock, seconds since the epoch */
};

/* Run the poke in a child (this binary with `__poke`) and wait at most o->timeout_ms for it.
 * Returns 0 with *ret filled (a hang is ret->timed_out, not an error), or a negative errno when
 * no child could be started. */
int poke_run(const struct poke_run_opts *o, struct poke_result *ret);

enum poke_verdict {
        POKE_GAVE_BACK = 0,     /* used memory fell by at least POKE_MIN_FREED */
        POKE_NOTHING,           /* the poke ran; the memory stayed */
        POKE_FAILED,            /* a CUDA call failed (no context made); the memory stayed */
        POKE_HUNG,              /* killed at the deadline */
        POKE_NO_LIBRARY,        /* no CUDA driver library could be loaded */
        POKE_UNMEASURED,        /* the driver gave no figure before or after */
};

/* "gave-back", "nothing-changed", ... (JSON values). */
const char *poke_verdict_name(enum poke_verdict v);

/* What the poke did to GPU g's memory: g->before (before the poke) against g->after (the last
 * sample). *ret_freed: the bytes that went (0 when none or unknown). Pure. */
enum poke_verdict poke_judge(const struct poke_result *p, const struct recovery_gpu *g, uint64_t *ret_freed);

/* The child of --poke (`ghostvram __poke LIB UUID BYTES`, exec'd by poke_run, never typed; argv[0]
 * is "__poke"): the steps' line on stdout. Returns the exit status: 0 every step was done, 1
 * otherwise, 2 bad arguments. */
int poke_child_main(int argc, char **argv);
