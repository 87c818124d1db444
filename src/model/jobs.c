/* jobs: "same job" and ties to live owners; see jobs.h and docs/verdicts.md. */
#include "model/jobs.h"

#include <string.h>

#include "util/i18n.h"

const char *job_tie_name(enum job_tie t)
{
        switch (t) {
        case JOB_TIE_PARENT: return "parent";
        case JOB_TIE_GROUP: return "process-group";
        case JOB_TIE_SESSION: return "session";
        case JOB_TIE_JOB: return "job";
        case JOB_TIE_FAMILY: return "description";
        default: return "none";
        }
}

/* A cgroup that can be a job's own: not the root and not a catch-all slice. */
static bool job_cgroup(const char *cg)
{
        if (!cg || !cg[0] || strcmp(cg, "/") == 0)
                return false;
        size_t n = strlen(cg);
        while (n > 1 && cg[n - 1] == '/')
                n--;
        return !(n >= 6 && strncmp(cg + n - 6, ".slice", 6) == 0);
}

bool job_same(const struct host_proc *a, const struct host_proc *b, const struct host_proc *env,
              const char **ret_what)
{
        const struct {
                const char *what, *a, *b, *env;
                bool cgroup;
        } keys[] = {
                { N_("pod"), a->k8s_pod_uid, b->k8s_pod_uid, env ? env->k8s_pod_uid : NULL, false },
                { N_("Slurm job"), a->slurm_job, b->slurm_job, env ? env->slurm_job : NULL, false },
                { N_("container"), a->container_id, b->container_id, env ? env->container_id : NULL, false },
                { N_("cgroup"), a->cgroup, b->cgroup, env ? env->cgroup : NULL, true },
        };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                if (!keys[i].a || !keys[i].b || !keys[i].a[0] || strcmp(keys[i].a, keys[i].b) != 0)
                        continue;
                if (keys[i].cgroup && !job_cgroup(keys[i].a))
                        continue;
                if (keys[i].env && strcmp(keys[i].env, keys[i].a) == 0)
                        continue; /* the environment ghostvram runs in, not a job */
                if (ret_what)
                        *ret_what = keys[i].what;
                return true;
        }
        return false;
}

enum job_tie job_tie_to(const struct host_proc *p, const struct host_proc *const *owners, size_t n,
                        const struct host_proc *env, pid_t *ret_owner, const char **ret_what)
{
        enum job_tie best = JOB_TIE_NONE;
        pid_t who = 0;
        const char *what = NULL;
        for (size_t i = 0; i < n; i++) {
                const struct host_proc *o = owners[i];
                if (!o || o->pid == p->pid)
                        continue;
                enum job_tie t = JOB_TIE_NONE;
                const char *w = NULL;
                if (p->ppid > 0 && p->ppid == o->pid)
                        t = JOB_TIE_PARENT;
                else if (p->pgid > 0 && p->pgid == o->pgid)
                        t = JOB_TIE_GROUP;
                else if (p->sid > 0 && p->sid == o->sid)
                        t = JOB_TIE_SESSION;
                else if (job_same(p, o, env, &w))
                        t = JOB_TIE_JOB;
                if (t != JOB_TIE_NONE && (best == JOB_TIE_NONE || t < best)) {
                        best = t;
                        who = o->pid;
                        what = w;
                }
        }
        if (best != JOB_TIE_NONE) {
                if (ret_owner)
                        *ret_owner = who;
                if (ret_what)
                        *ret_what = what;
        }
        return best;
}
