/* Helpers shared by the host reader's tests (test_host_*.c): temporary copies of fixture
 * trees, look-ups in a report, and a field-by-field comparison of two reports. Include after
 * <cmocka.h>. */
#pragma once
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/host.h"

/* A fresh directory /tmp/gvtestXXXXXX (0755, so that a test may drop privileges). */
static inline void th_tmpdir(char out[64])
{
        snprintf(out, 64, "/tmp/gvtestXXXXXX");
        assert_non_null(mkdtemp(out));
        assert_int_equal(chmod(out, 0755), 0);
}

static inline void th_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void th_sh(const char *fmt, ...)
{
        char cmd[8192];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        assert_true(n > 0 && (size_t)n < sizeof(cmd));
        assert_int_equal(system(cmd), 0);
}

/* Copy fixture tree tests/fixtures/NAME into dir/NAME; returns the copy's path in out. */
static inline void th_copy_fixture(const char *name, const char *dir, char out[256])
{
        char src[4096];
        snprintf(src, sizeof(src), "%s/%s", GV_FIXTURES, name);
        th_sh("cp -a '%s' '%s'", src, dir);
        snprintf(out, 256, "%s/%s", dir, name);
}

static inline void th_rmrf(const char *dir)
{
        th_sh("chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
}

static inline const struct host_proc *th_find(const struct host_proc *a, size_t n, pid_t pid)
{
        for (size_t i = 0; i < n; i++)
                if (a[i].pid == pid)
                        return &a[i];
        return NULL;
}

/* The via bits of node `name` in p (0 if p does not hold it). */
static inline unsigned th_via(const struct host_proc *p, const char *name)
{
        for (unsigned i = 0; i < p->n_nodes; i++)
                if (strcmp(p->nodes[i].name, name) == 0)
                        return p->nodes[i].via;
        return 0;
}

/* p holds exactly the nodes given as NULL-terminated (name, via) pairs, in this order. */
static inline void th_assert_nodes(const struct host_proc *p, const char *const *names, const unsigned *via)
{
        unsigned n = 0;
        while (names[n])
                n++;
        if (p->n_nodes != n) {
                for (unsigned i = 0; i < p->n_nodes; i++)
                        print_message("pid %d holds %s (%u)\n", (int)p->pid, p->nodes[i].name, p->nodes[i].via);
        }
        assert_int_equal(p->n_nodes, n);
        for (unsigned i = 0; i < n; i++) {
                assert_string_equal(p->nodes[i].name, names[i]);
                assert_int_equal(p->nodes[i].via, via[i]);
        }
}

static inline bool th_has_limit(const struct host_report *r, const char *text)
{
        for (size_t i = 0; i < r->n_limits; i++)
                if (strstr(r->limits[i], text))
                        return true;
        return false;
}

static inline void th_assert_str_or_null(const char *a, const char *b)
{
        if (!a || !b)
                assert_ptr_equal(a, b);
        else
                assert_string_equal(a, b);
}

static inline void th_assert_same_proc(const struct host_proc *a, const struct host_proc *b)
{
        print_message("comparing pid %d\n", (int)a->pid);
        assert_int_equal(a->pid, b->pid);
        assert_int_equal(a->ppid, b->ppid);
        assert_int_equal(a->pgid, b->pgid);
        assert_int_equal(a->sid, b->sid);
        assert_int_equal(a->state, b->state);
        assert_int_equal(a->exiting, b->exiting);
        assert_int_equal(a->kernel_thread, b->kernel_thread);
        assert_int_equal(a->start_ticks, b->start_ticks);
        assert_true(a->start_time == b->start_time);
        assert_string_equal(a->wchan, b->wchan);
        assert_int_equal(a->uid, b->uid);
        assert_string_equal(a->user, b->user);
        th_assert_str_or_null(a->comm, b->comm);
        th_assert_str_or_null(a->cmdline, b->cmdline);
        assert_int_equal(a->n_nspid, b->n_nspid);
        for (unsigned i = 0; i < a->n_nspid; i++)
                assert_int_equal(a->nspid[i], b->nspid[i]);
        assert_int_equal(a->pidns_ino, b->pidns_ino);
        th_assert_str_or_null(a->cgroup, b->cgroup);
        assert_string_equal(a->container_runtime, b->container_runtime);
        assert_string_equal(a->container_id, b->container_id);
        assert_string_equal(a->k8s_pod_uid, b->k8s_pod_uid);
        assert_string_equal(a->slurm_job, b->slurm_job);
        assert_string_equal(a->systemd_unit, b->systemd_unit);
        assert_int_equal(a->n_env, b->n_env);
        for (unsigned i = 0; i < a->n_env; i++) {
                assert_string_equal(a->env[i].name, b->env[i].name);
                assert_string_equal(a->env[i].value, b->env[i].value);
        }
        assert_int_equal(a->n_nodes, b->n_nodes);
        for (unsigned i = 0; i < a->n_nodes; i++) {
                assert_string_equal(a->nodes[i].name, b->nodes[i].name);
                assert_int_equal(a->nodes[i].via, b->nodes[i].via);
        }
        assert_int_equal(a->skipped, b->skipped);
}

static inline void th_assert_same_report(const struct host_report *a, const struct host_report *b)
{
        assert_int_equal(a->n_holders, b->n_holders);
        for (size_t i = 0; i < a->n_holders; i++)
                th_assert_same_proc(&a->holders[i], &b->holders[i]);
        assert_int_equal(a->n_unverified, b->n_unverified);
        for (size_t i = 0; i < a->n_unverified; i++)
                th_assert_same_proc(&a->unverified[i], &b->unverified[i]);
        assert_int_equal(a->n_limits, b->n_limits);
        for (size_t i = 0; i < a->n_limits; i++)
                assert_string_equal(a->limits[i], b->limits[i]);
        assert_int_equal(a->self_pidns_ino, b->self_pidns_ino);
        assert_int_equal(a->initial_pidns, b->initial_pidns);
        assert_int_equal(a->euid, b->euid);
        assert_true(a->btime == b->btime);
        assert_int_equal(a->clk_tck, b->clk_tck);
        assert_true(a->sample_time == b->sample_time);
        assert_int_equal(a->procs_scanned, b->procs_scanned);
        assert_int_equal(a->self_pid, b->self_pid);
        assert_int_equal(a->n_nvidia_majors, b->n_nvidia_majors);
        for (unsigned i = 0; i < a->n_nvidia_majors; i++)
                assert_int_equal(a->nvidia_majors[i], b->nvidia_majors[i]);
}

/* Let an abandoned deadline worker blocked opening a FIFO finish: open the write side (a
 * reader is waiting, so a non-blocking open succeeds) and close it (the reader sees EOF). */
static inline void th_unblock_fifo(const char *path)
{
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0)
                close(fd);
}
