/* Unit tests for model/jobs: the one rule for "same job" and the ties to live owners. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "model/jobs.h"

static struct host_proc p_of(pid_t pid, pid_t ppid, pid_t pgid, pid_t sid, char *cgroup)
{
        struct host_proc p;
        memset(&p, 0, sizeof(p));
        p.pid = pid;
        p.ppid = ppid;
        p.pgid = pgid;
        p.sid = sid;
        p.cgroup = cgroup;
        return p;
}

static void test_same_job_keys(void **state)
{
        (void)state;
        char job[] = "/system.slice/slurmstepd.scope/job_77/step_0";
        char slice[] = "/user.slice/user-1000.slice";
        char root[] = "/";
        char other[] = "/system.slice/slurmstepd.scope/job_78/step_0";
        struct host_proc a = p_of(10, 1, 10, 10, job), b = p_of(20, 1, 20, 20, job);
        const char *what = NULL;
        assert_true(job_same(&a, &b, NULL, &what));
        assert_string_equal(what, "cgroup");
        b.cgroup = other;
        assert_false(job_same(&a, &b, NULL, NULL));
        /* the root and catch-all slices tie nothing */
        a.cgroup = b.cgroup = root;
        assert_false(job_same(&a, &b, NULL, NULL));
        a.cgroup = b.cgroup = slice;
        assert_false(job_same(&a, &b, NULL, NULL));
        /* the environment ghostvram runs in ties nothing */
        a.cgroup = b.cgroup = job;
        struct host_proc env = p_of(30, 1, 30, 30, job);
        assert_false(job_same(&a, &b, &env, NULL));
        /* pods, Slurm jobs and containers by their ids */
        a.cgroup = b.cgroup = NULL;
        snprintf(a.k8s_pod_uid, sizeof(a.k8s_pod_uid), "0b1c");
        snprintf(b.k8s_pod_uid, sizeof(b.k8s_pod_uid), "0b1c");
        assert_true(job_same(&a, &b, NULL, &what));
        assert_string_equal(what, "pod");
        b.k8s_pod_uid[0] = '\0';
        snprintf(a.slurm_job, sizeof(a.slurm_job), "77");
        snprintf(b.slurm_job, sizeof(b.slurm_job), "77");
        assert_true(job_same(&a, &b, NULL, &what));
        assert_string_equal(what, "Slurm job");
        snprintf(env.slurm_job, sizeof(env.slurm_job), "77");
        assert_false(job_same(&a, &b, &env, NULL));
        a.slurm_job[0] = '\0';
        snprintf(a.container_id, sizeof(a.container_id), "abc");
        snprintf(b.container_id, sizeof(b.container_id), "abc");
        assert_true(job_same(&a, &b, NULL, &what));
        assert_string_equal(what, "container");
}

static void test_ties_strongest_first(void **state)
{
        (void)state;
        struct host_proc o1 = p_of(100, 1, 100, 100, NULL); /* a live owner */
        struct host_proc o2 = p_of(200, 1, 150, 150, NULL); /* another, in group 150 */
        const struct host_proc *owners[] = { &o1, &o2 };
        pid_t who = 0;
        /* child of o1 and in o2's group: the parent tie wins */
        struct host_proc p = p_of(101, 100, 150, 150, NULL);
        assert_int_equal(job_tie_to(&p, owners, 2, NULL, &who, NULL), JOB_TIE_PARENT);
        assert_int_equal(who, 100);
        p.ppid = 1;
        assert_int_equal(job_tie_to(&p, owners, 2, NULL, &who, NULL), JOB_TIE_GROUP);
        assert_int_equal(who, 200);
        p.pgid = 101;
        assert_int_equal(job_tie_to(&p, owners, 2, NULL, &who, NULL), JOB_TIE_SESSION);
        p.sid = 101;
        assert_int_equal(job_tie_to(&p, owners, 2, NULL, &who, NULL), JOB_TIE_NONE);
        /* an owner is never tied to itself */
        assert_int_equal(job_tie_to(&o1, owners, 2, NULL, NULL, NULL), JOB_TIE_NONE);
        assert_string_equal(job_tie_name(JOB_TIE_SESSION), "session");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_same_job_keys),
                cmocka_unit_test(test_ties_strongest_first),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
