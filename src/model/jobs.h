/* jobs: the one rule for "same job", and a process's ties to the live GPU owners. The ledger
 * (who is an orphan of a dead job) and reclaim's plan (who may be signalled by default) both
 * use these, so that a diagnosis and an action never disagree about what belongs together.
 * Pure: facts in, answers out. The rules are written down in docs/verdicts.md. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "collect/host.h"

/* How a process is tied to a live NVML-listed owner, strongest first. */
enum job_tie {
        JOB_TIE_NONE = 0,
        JOB_TIE_PARENT,         /* its parent is a live owner: that owner's worker */
        JOB_TIE_GROUP,          /* same process group as a live owner */
        JOB_TIE_SESSION,        /* same session as a live owner */
        JOB_TIE_JOB,            /* same pod, Slurm job, container or job cgroup as a live owner */
        JOB_TIE_FAMILY,         /* shares an open file description of an NVIDIA node with a live
                                 * owner (fork, SCM_RIGHTS, ...): it keeps that job's contexts.
                                 * The strongest of all; the ledger decides it (families are a
                                 * report's), job_tie_to never returns it. */
};

const char *job_tie_name(enum job_tie t);

/* Do a and b belong to the same job: the same Kubernetes pod, Slurm job, container, or cgroup?
 * A cgroup counts only when it is a job's own: not the root, not a catch-all slice
 * (`….slice`), and not the one `env` (ghostvram itself, may be NULL) runs in — a job that
 * ghostvram shares is the environment (a CI container, a login scope), which ties nothing.
 * *ret_what (may be NULL) names the key: "pod", "Slurm job", "container", "cgroup". */
bool job_same(const struct host_proc *a, const struct host_proc *b, const struct host_proc *env,
              const char **ret_what);

/* The strongest tie of p to one of the live owners owners[0..n) (p itself excluded), with the
 * owner's PID in *ret_owner and, for JOB_TIE_JOB, the key in *ret_what. */
enum job_tie job_tie_to(const struct host_proc *p, const struct host_proc *const *owners, size_t n,
                        const struct host_proc *env, pid_t *ret_owner, const char **ret_what);
