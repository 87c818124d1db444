#include "render/proc_render.h"

#include <string.h>

#include "util/json_util.h"
#include "util/escape.h"

static const char *const skipped_names[] = { "maps", "cmdline", "environ", "fds", "cgroup" };

json_t *host_proc_devices_json(const struct host_proc *p)
{
        json_t *a = json_array();
        for (unsigned i = 0; i < p->n_nodes && i < HOST_MAX_NODES; i++)
                json_array_append_new(a, json_text(p->nodes[i].name));
        return a;
}

json_t *host_proc_via_json(const struct host_proc *p)
{
        json_t *o = json_object();
        for (unsigned i = 0; i < p->n_nodes && i < HOST_MAX_NODES; i++) {
                json_t *a = json_array();
                if (p->nodes[i].via & HOST_VIA_FD)
                        json_array_append_new(a, json_string("fd"));
                if (p->nodes[i].via & HOST_VIA_MMAP)
                        json_array_append_new(a, json_string("mmap"));
                json_set(o, p->nodes[i].name, a);
        }
        return o;
}

static json_t *container_json(const struct host_proc *p)
{
        if (!p->container_runtime[0] && !p->container_id[0] && !p->k8s_pod_uid[0] && !p->slurm_job[0] &&
            !p->systemd_unit[0])
                return json_null();
        json_t *c = json_object();
        json_set(c, "runtime", p->container_runtime[0] ? json_text(p->container_runtime) : json_null());
        json_set(c, "id", p->container_id[0] ? json_text(p->container_id) : json_null());
        json_set(c, "k8s_pod_uid", p->k8s_pod_uid[0] ? json_text(p->k8s_pod_uid) : json_null());
        json_set(c, "slurm_job", p->slurm_job[0] ? json_text(p->slurm_job) : json_null());
        json_set(c, "systemd_unit", p->systemd_unit[0] ? json_text(p->systemd_unit) : json_null());
        return c;
}

json_t *host_proc_json(const struct host_proc *p, bool with_cmdline)
{
        json_t *o = json_object();
        char st[2] = { p->state, 0 };
        json_set(o, "pid", json_integer(p->pid));
        json_set(o, "devices", host_proc_devices_json(p));
        json_set(o, "via", host_proc_via_json(p));
        json_set(o, "ppid", json_integer(p->ppid));
        json_set(o, "pgid", json_integer(p->pgid));
        json_set(o, "sid", json_integer(p->sid));
        json_set(o, "family", p->family ? json_integer(p->family) : json_null());
        json_set(o, "family_note", host_family_note_text(p->family_note) ? json_string(host_family_note_text(p->family_note))
                                                                          : json_null());
        json_set(o, "state", json_text(st));
        json_set(o, "exiting", json_boolean(p->exiting));
        json_set(o, "kernel_thread", json_boolean(p->kernel_thread));
        json_set_time(o, "start_time", p->start_time, p->start_time > 0);
        json_set(o, "wchan", p->wchan[0] ? json_text(p->wchan) : json_null());
        json_set(o, "uid", json_integer(p->uid));
        json_set(o, "user", json_text(p->user));
        json_set(o, "comm", json_text(p->comm));
        json_set(o, "cmdline", with_cmdline ? json_text(p->cmdline) : json_null());
        json_t *ns = json_array();
        for (unsigned i = 0; i < p->n_nspid && i < HOST_MAX_NSPID; i++)
                json_array_append_new(ns, json_integer(p->nspid[i]));
        json_set(o, "nspid", ns);
        json_set(o, "pidns", p->pidns_ino ? json_integer((json_int_t)p->pidns_ino) : json_null());
        json_set(o, "cgroup", json_text(p->cgroup));
        json_set(o, "container", container_json(p));
        json_t *env = json_object();
        for (unsigned i = 0; i < p->n_env && i < HOST_MAX_ENV; i++)
                json_set(env, p->env[i].name, json_text(p->env[i].value));
        json_set(o, "env", env);
        json_t *sk = json_array();
        for (unsigned i = 0; i < sizeof(skipped_names) / sizeof(skipped_names[0]); i++)
                if (p->skipped & (1u << i))
                        json_array_append_new(sk, json_string(skipped_names[i]));
        json_set(o, "skipped", sk);
        return o;
}

/* nvidiactl and nvidia-uvm first (what makes a CUDA process), then the rest by name */
static int node_rank(const char *name)
{
        return !strcmp(name, "nvidiactl") ? 0 : !strcmp(name, "nvidia-uvm") ? 1 : 2;
}

void host_proc_nodes_text(struct buf *out, const struct host_proc *p)
{
        unsigned n = p->n_nodes < HOST_MAX_NODES ? p->n_nodes : HOST_MAX_NODES;
        const struct host_node *order[HOST_MAX_NODES];
        for (unsigned i = 0; i < n; i++) {
                unsigned j = i;
                const struct host_node *x = &p->nodes[i];
                while (j > 0 && (node_rank(order[j - 1]->name) > node_rank(x->name) ||
                                 (node_rank(order[j - 1]->name) == node_rank(x->name) &&
                                  strcmp(order[j - 1]->name, x->name) > 0))) {
                        order[j] = order[j - 1];
                        j--;
                }
                order[j] = x;
        }
        for (unsigned i = 0; i < n; i++) {
                const struct host_node *nd = order[i];
                if (i)
                        buf_putc(out, ' ');
                esc_terminal(out, nd->name, strlen(nd->name));
                buf_printf(out, "(%s%s%s)", nd->via & HOST_VIA_FD ? "fd" : "",
                           (nd->via & HOST_VIA_FD) && (nd->via & HOST_VIA_MMAP) ? "," : "",
                           nd->via & HOST_VIA_MMAP ? "mmap" : "");
        }
}

void host_proc_summary_text(struct buf *out, const struct host_proc *p, size_t maxlen)
{
        buf_printf(out, "PID %d ", (int)p->pid);
        esc_terminal(out, p->user, strlen(p->user));
        buf_printf(out, " %c ", p->state ? p->state : '?');
        const char *cmd = p->cmdline && p->cmdline[0] ? p->cmdline : NULL;
        if (cmd) {
                size_t len = strlen(cmd);
                bool cut = maxlen && len > maxlen;
                esc_terminal(out, cmd, cut ? maxlen : len);
                if (cut)
                        buf_puts(out, "…");
        } else {
                buf_putc(out, '[');
                if (p->comm)
                        esc_terminal(out, p->comm, strlen(p->comm));
                buf_putc(out, ']');
        }
}

void host_proc_container_text(struct buf *out, const struct host_proc *p)
{
        /* parsed from cgroup paths, which a process can name: escape them too */
        if (p->k8s_pod_uid[0]) {
                buf_puts(out, "k8s pod ");
                esc_terminal(out, p->k8s_pod_uid, strnlen(p->k8s_pod_uid, 36));
        } else if (p->container_id[0]) {
                const char *rt = p->container_runtime[0] ? p->container_runtime : "container";
                esc_terminal(out, rt, strlen(rt));
                buf_putc(out, ' ');
                esc_terminal(out, p->container_id, strnlen(p->container_id, 12));
        } else if (p->slurm_job[0]) {
                /* i18n: no: a job identifier as Slurm writes it */
                buf_puts(out, "slurm job ");
                esc_terminal(out, p->slurm_job, strlen(p->slurm_job));
        }
}

void host_proc_detail_text(struct buf *out, const struct host_proc *p)
{
        host_proc_nodes_text(out, p);
        /* i18n: no: the kernel's field names */
        buf_printf(out, "  ppid %d pgid %d sid %d", (int)p->ppid, (int)p->pgid, (int)p->sid);
        struct buf c = BUF_INIT(0);
        host_proc_container_text(&c, p);
        if (c.len)
                buf_printf(out, "  %s", buf_str(&c));
        buf_free(&c);
}

void fmt_mib(struct buf *out, uint64_t bytes)
{
        uint64_t mib = (bytes + (1u << 19)) >> 20;
        if (bytes && mib == 0)
                buf_puts(out, "<1 MiB");
        else
                buf_printf(out, "%llu MiB", (unsigned long long)mib);
}
