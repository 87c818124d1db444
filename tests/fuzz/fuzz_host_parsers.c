/* Fuzz target for the host reader's parsers: stat, status, cgroup, maps lines, /proc/devices,
 * btime, namespace links, the environment allow-list, the order of maps areas, driver symbols
 * in a wchan or stack. Every parser gets the same bytes (each
 * reads only within len, needs no NUL), then the results are checked for what must always
 * hold whatever the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collect/host_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
        if (!cond)
                abort();
}

static void maps_lines(const char *buf, size_t len)
{
        size_t pos = 0;
        while (pos < len) {
                const char *line = buf + pos;
                const char *nl = memchr(line, '\n', len - pos);
                size_t ll = nl ? (size_t)(nl - line) : len - pos;
                pos += ll + 1;
                size_t pl = 0;
                const char *p = host_maps_line_path(line, ll, &pl);
                if (p)
                        check(p >= line && pl > 0 && p + pl <= line + ll);
                struct host_maps_line m;
                if (host_parse_maps_line(line, ll, &m) == 0 && m.path)
                        check(m.path >= line && m.path + m.pathlen <= line + ll);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* a private copy without a terminator, so that an overread is caught by ASan */
        char *buf = malloc(size ? size : 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);

        struct host_proc p;
        memset(&p, 0, sizeof(p));
        if (host_parse_stat(buf, size, &p) == 0) {
                check(p.comm != NULL && p.pid > 0);
                check(strlen(p.comm) <= size);
        }
        if (host_parse_status(buf, size, &p) == 0)
                check(p.n_nspid <= HOST_MAX_NSPID);
        if (host_parse_cgroup(buf, size, &p) == 0) {
                check(p.cgroup != NULL);
                check(strlen(p.container_runtime) < sizeof(p.container_runtime));
                check(strlen(p.container_id) < sizeof(p.container_id));
                check(strlen(p.k8s_pod_uid) < sizeof(p.k8s_pod_uid));
                check(strlen(p.slurm_job) < sizeof(p.slurm_job));
                check(strlen(p.systemd_unit) < sizeof(p.systemd_unit));
        }
        struct buf saved = BUF_INIT(0);
        if (host_parse_environ(buf, size, &p, &saved) == 0) {
                check(p.n_env <= HOST_MAX_ENV);
                for (unsigned i = 0; i < p.n_env; i++)
                        check(p.env[i].value && strlen(p.env[i].value) <= HOST_CAP_ENV_VALUE);
        }
        buf_free(&saved);
        host_proc_clear(&p);

        maps_lines(buf, size);
        /* answers only; read within len (ASan) */
        (void)host_maps_ordered(buf, size);
        (void)host_names_driver(buf, size);

        struct host_majors m;
        if (host_parse_devices(buf, size, &m) == 0) {
                check(m.n <= HOST_MAX_MAJORS);
                char name[48];
                for (unsigned i = 0; i < m.n; i++)
                        (void)host_majors_name(&m, m.m[i].major, 255, name, sizeof(name));
        }
        uint64_t v;
        (void)host_parse_btime(buf, size, &v);
        (void)host_parse_ns_link(buf, size, &v);
        free(buf);
        return 0;
}
