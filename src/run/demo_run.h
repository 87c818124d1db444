/* demo_run: the steps of `ghostvram demo` that act, without printing: a temporary simulated
 * host, the training job on it (an owner and its workers, each opened with pidfd_open), the
 * owner killed, nvidia-smi's view read, and the end: every process stopped and the host
 * removed. render/demo_render.c tells the story between them (and runs scan and reclaim, whose
 * output is the story). */
#pragma once
#include <stdbool.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#define DEMO_MAX_PROCS 8
#define DEMO_GPU_MIB 81559 /* the simulated GPU: an H100 80GB, as `sim init` makes it */

struct demo_proc {
        char role[16];          /* "owner", "worker" */
        pid_t pid;
        int pidfd;              /* -1: not opened (never signalled by a bare PID) */
};

struct demo {
        const char *self;       /* the ghostvram to run (sim init, sim run); NULL: this one */
        char dir[4096];         /* the simulated host */
        struct demo_proc procs[DEMO_MAX_PROCS];
        size_t n_procs;         /* procs[0] is the owner */
};

/* The temporary host: DIR/ghostvram-demo-XXXXXX under tmpdir (an absolute $TMPDIR; else /tmp),
 * made with `ghostvram sim init DIR --gpus 2`. 0, or a negative errno: d->dir is "" when no
 * directory could be made, and names it when `sim init` failed (-EIO). */
int demo_host_create(struct demo *d, const char *tmpdir);
/* `ghostvram sim run DIR --gpu 0 --mib MIB --workers K`: its processes into d->procs, each
 * with a pidfd. 0, -EIO (the job did not start), -ECHILD (it did not report an owner first),
 * -ENOSYS (no pidfd_open, Linux < 5.3: no job is started, none could be ended safely). */
int demo_job_start(struct demo *d, unsigned mib, unsigned workers);
/* SIGKILL to the owner through its pidfd, then wait (5 s at most) until it is gone. 0, or the
 * signal's negative errno. */
int demo_kill_owner(struct demo *d);
/* The end: with !keep, SIGKILL to every process and a bounded wait for each (1 s), then the
 * host removed (again for 2 s while the simulated driver's teardown watchers still write).
 * The pidfds are closed in both cases. Returns 0, or -errno of the removal. */
int demo_finish(struct demo *d, bool keep);
/* What nvidia-smi would show of the host in dir: its facts, read as every command reads them
 * under GHOSTVRAM_SIM=dir (set here, for the commands the demo runs next): its NVML stand-in,
 * its device files and its driver's /proc directory. 0, or -1 with err (dir is no simulated
 * host: said as the commands say it), or -ENOMEM. Free *ret with facts_free. */
struct facts;
int demo_smi_facts(const char *dir, struct facts **ret, char *err, size_t len);
/* The noise floor of the simulated GPU in MiB: scan calls no less a ghost. */
unsigned long long demo_floor_mib(void);

/* ---- stopping early ----------------------------------------------------------------------
 * A stop signal (Ctrl-C, SIGTERM, SIGHUP) ends the story early; the cleanup still runs.
 * SIGPIPE is ignored, so a write fails instead of killing the demo before it cleans up. */
struct demo_signals {
        struct sigaction old_int, old_term, old_hup, old_pipe;
};

/* Catch the stop signals and ignore SIGPIPE, the old actions into *s. */
void demo_signals_take(struct demo_signals *s);
/* The actions demo_signals_take found, back. */
void demo_signals_restore(const struct demo_signals *s);
/* The stop signal caught since demo_signals_take (0: none). */
int demo_stop_signal(void);
/* Has the reader of fd (a pipe or socket) gone away (`demo | head -1`)? It says so in poll()
 * even when nothing was written since (a step's output written by the child it ran). */
bool demo_reader_gone(int fd);
