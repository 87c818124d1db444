#include "render/snapshot.h"

#include <string.h>
#include <time.h>

#include "collect/gpu_json.h"
#include "config.h"
#include "util/json_util.h"
#include "render/proc_render.h"
#include "util/escape.h"
#include "util/i18n.h"

#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_RED "\033[31m"
#define C_OFF "\033[0m"

json_t *facts_nvml_process_json(const struct facts *f, const struct gpu_proc *p)
{
        json_t *o = json_object();
        json_set(o, "pid", json_integer(p->pid));
        json_set(o, "used_bytes", json_u64_or_null(p->used_bytes, p->used_known));
        /* MIG: the GPU and compute instance NVML listed it in (null outside MIG) */
        json_set(o, "gpu_instance", p->gpu_instance != GPU_INSTANCE_NONE ? json_integer(p->gpu_instance) : json_null());
        json_set(o, "compute_instance",
                 p->compute_instance != GPU_INSTANCE_NONE ? json_integer(p->compute_instance) : json_null());
        const struct pid_fact *pf = facts_pid(f, p->pid);
        json_t *h = json_object();
        bool present = pf && pf->present;
        json_set(h, "present", json_boolean(present));
        json_set(h, "zombie", present ? json_boolean(pf->proc.state == 'Z') : json_null());
        json_set(h, "exiting", present ? json_boolean(pf->proc.exiting) : json_null());
        json_set_time(h, "start_time", present ? pf->proc.start_time : 0, present && pf->proc.start_time > 0);
        json_set(h, "holds_nodes", json_boolean(pf && pf->holder));
        json_set(h, "comm", present ? json_text(pf->proc.comm) : json_null());
        json_set(h, "user", present ? json_text(pf->proc.user) : json_null());
        json_set(o, "host", h);
        return o;
}

json_t *facts_holders_json(const struct facts *f, bool with_cmdline)
{
        json_t *a = json_array();
        for (size_t i = 0; f->host && i < f->host->n_holders; i++)
                json_array_append_new(a, host_proc_json(&f->host->holders[i], with_cmdline));
        return a;
}

json_t *facts_limits_json(const struct facts *f)
{
        json_t *a = json_array();
        if (!f->gpu->driver_present && f->gpu->error[0])
                json_array_append_new(a, json_text(f->gpu->error));
        for (size_t i = 0; f->host && i < f->host->n_limits; i++)
                json_array_append_new(a, json_text(f->host->limits[i]));
        if (!f->host)
                json_array_append_new(a, json_string("device holders were not read"));
        if (f->kernel_error[0])
                json_array_append_new(a, json_text(f->kernel_error));
        return a;
}

json_t *snapshot_json(const struct facts *f)
{
        json_t *o = json_object();
        json_set(o, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_set(o, "tool", json_string("ghostvram " GV_VERSION));
        json_set(o, "simulated", json_boolean(f->simulated));
        json_set(o, "from_bundle", json_boolean(f->from_bundle));
        json_set_time(o, "time", f->gpu->sample_time, f->gpu->sample_time > 0);
        json_set(o, "driver", gpu_report_driver_json(f->gpu));
        json_t *gs = json_array();
        for (size_t i = 0; i < f->gpu->n_gpus; i++) {
                const struct gpu_info *g = &f->gpu->gpus[i];
                json_t *go = gpu_info_to_json(g);
                json_t *ps = json_array();
                for (size_t k = 0; k < g->n_procs; k++)
                        json_array_append_new(ps, facts_nvml_process_json(f, &g->procs[k]));
                json_set(go, "nvml_processes", ps);
                json_array_append_new(gs, go);
        }
        json_set(o, "gpus", gs);
        json_t *host = json_object();
        if (f->host) {
                json_set(host, "pidns", json_integer((json_int_t)f->host->self_pidns_ino));
                json_set(host, "initial_pidns", json_boolean(f->host->initial_pidns));
                json_set(host, "euid", json_integer(f->host->euid));
                json_set(host, "processes_scanned", json_integer(f->host->procs_scanned));
                json_set(host, "holder_source", json_string(host_holder_source_name(f->host->holder_source)));
                json_set(host, "bpf_error", !str_empty(f->host->bpf_error) ? json_text(f->host->bpf_error) : json_null());
                json_set(host, "family_source", json_string(host_family_source_name(f->host->family_source)));
                json_set(host, "family_count", json_integer(f->host->n_families));
        }
        json_set(o, "host", host);
        json_set(o, "holders", facts_holders_json(f, true));
        json_set(o, "limits", facts_limits_json(f));
        return o;
}

static void put_escaped(FILE *out, const char *s)
{
        struct buf b = BUF_INIT(0);
        if (s)
                esc_terminal(&b, s, strlen(s));
        fputs(buf_str(&b), out);
        buf_free(&b);
}

void text_gpu_header(FILE *out, const struct gpu_info *g, bool color)
{
        fprintf(out, "%sGPU %u%s  ", color ? C_BOLD : "", g->index, color ? C_OFF : "");
        put_escaped(out, g->name[0] ? g->name : _("(name unknown)"));
        fprintf(out, "  %s  ", g->pci_bus_id[0] ? g->pci_bus_id : _("(bus id unknown)"));
        put_escaped(out, g->uuid);
        fputc('\n', out);
        if (g->status != GPU_OK) {
                fprintf(out, "  %s", color ? C_RED : "");
                put_escaped(out, g->status_message[0] ? g->status_message : gpu_status_name(g->status));
                fprintf(out, "%s\n", color ? C_OFF : "");
        }
}

void text_memory_line(FILE *out, const struct gpu_info *g)
{
        if (!g->memory_known) {
                fprintf(out, "%s", _("  memory: unknown\n"));
                return;
        }
        struct buf b = BUF_INIT(0);
        struct buf total = BUF_INIT(0), reserved = BUF_INIT(0), used = BUF_INIT(0), free_ = BUF_INIT(0);
        fmt_mib(&total, g->total_bytes);
        fmt_mib(&reserved, g->reserved_bytes);
        fmt_mib(&used, g->used_bytes);
        fmt_mib(&free_, g->free_bytes);
        if (g->memory_api == 2)
                buf_printf(&b, _("  memory: total %s, reserved by the driver %s, used %s, free %s"), buf_str(&total),
                           buf_str(&reserved), buf_str(&used), buf_str(&free_));
        else
                buf_printf(&b, _("  memory: total %s, used %s, free %s"), buf_str(&total), buf_str(&used), buf_str(&free_));
        if (g->memory_api == 1)
                buf_puts(&b, _("  (old driver: used includes the driver's reservation)"));
        buf_free(&total);
        buf_free(&reserved);
        buf_free(&used);
        buf_free(&free_);
        fprintf(out, "%s\n", buf_str(&b));
        buf_free(&b);
}

void text_limits(FILE *out, const struct facts *f)
{
        size_t n = f->host ? f->host->n_limits : 0;
        if (!n && !f->kernel_error[0])
                return;
        fprintf(out, "\n%s\n", _("Limits of this result:"));
        for (size_t i = 0; i < n; i++) {
                fputs("  - ", out);
                put_escaped(out, host_report_limit_text(f->host, i));
                fputc('\n', out);
        }
        if (f->kernel_error[0]) {
                fputs("  - ", out);
                put_escaped(out, f->kernel_error);
                fputc('\n', out);
        }
}

static void text_holder(FILE *out, const struct host_proc *p)
{
        struct buf b = BUF_INIT(0);
        buf_puts(&b, "  ");
        host_proc_summary_text(&b, p, 80);
        buf_puts(&b, "\n      ");
        host_proc_nodes_text(&b, p);
        buf_printf(&b, "  ppid %d pgid %d sid %d", (int)p->ppid, (int)p->pgid, (int)p->sid); /* i18n: no (field names) */
        if (p->exiting)
                buf_puts(&b, _(" exiting"));
        struct buf c = BUF_INIT(0);
        host_proc_container_text(&c, p);
        if (c.len)
                buf_printf(&b, "  %s", buf_str(&c));
        buf_free(&c);
        if (p->skipped)
                buf_puts(&b, _("  (some files not read: see --json skipped)"));
        fprintf(out, "%s\n", buf_str(&b));
        buf_free(&b);
}

void snapshot_text(FILE *out, const struct facts *f, bool color, bool verbose)
{
        const struct gpu_report *r = f->gpu;
        if (!r->driver_present) {
                fputs(_("NVIDIA driver: "), out);
                put_escaped(out, r->error[0] ? r->error : _("not available"));
                fputc('\n', out);
        } else {
                fprintf(out, P_("NVIDIA driver %s, %zu GPU, NVML PIDs: %s\n", "NVIDIA driver %s, %zu GPUs, NVML PIDs: %s\n",
                                r->n_gpus),
                        r->driver_version[0] ? r->driver_version : _("(version unknown)"), r->n_gpus,
                        r->pid_mode == GPU_PID_TRANSLATED ? _("translated into this PID namespace")
                        : r->pid_mode == GPU_PID_HOST    ? _("host PIDs (driver older than 535.113.01)")
                                                         : _("mode unknown"));
        }
        for (size_t i = 0; i < r->n_gpus; i++) {
                const struct gpu_info *g = &r->gpus[i];
                fputc('\n', out);
                text_gpu_header(out, g, color);
                text_memory_line(out, g);
                if (!g->procs_known) {
                        fprintf(out, "%s", _("  processes: not available from the driver\n"));
                } else if (!g->n_procs) {
                        fprintf(out, "%s", _("  processes: none listed by NVML\n"));
                }
                for (size_t k = 0; k < g->n_procs; k++) {
                        const struct gpu_proc *p = &g->procs[k];
                        const struct pid_fact *pf = facts_pid(f, p->pid);
                        struct buf b = BUF_INIT(0);
                        buf_printf(&b, _("  NVML lists PID %u  "), p->pid);
                        if (p->used_known)
                                fmt_mib(&b, p->used_bytes);
                        else
                                buf_puts(&b, _("(bytes n/a)"));
                        if (!pf || !pf->present)
                                buf_puts(&b, _("  -- no such process here"));
                        else if (pf->proc.state == 'Z')
                                buf_puts(&b, _("  -- zombie"));
                        else {
                                buf_puts(&b, "  ");
                                host_proc_summary_text(&b, &pf->proc, 60);
                                if (pf->proc.exiting)
                                        buf_puts(&b, _(" (exiting)"));
                                if (!pf->holder)
                                        buf_puts(&b, _("  -- holds no device node"));
                        }
                        fprintf(out, "%s\n", buf_str(&b));
                        buf_free(&b);
                }
                if (verbose)
                        for (size_t e = 0; e < g->n_errors; e++) {
                                fprintf(out, _("  query %s: "), g->errors[e].query);
                                put_escaped(out, g->errors[e].message);
                                fputc('\n', out);
                        }
        }
        if (f->host) {
                fprintf(out, P_("\nHolders of NVIDIA device nodes (%zu of %u process, found by %s):\n",
                                "\nHolders of NVIDIA device nodes (%zu of %u processes, found by %s):\n",
                                f->host->procs_scanned),
                        f->host->n_holders, f->host->procs_scanned, host_holder_source_name(f->host->holder_source));
                for (size_t i = 0; i < f->host->n_holders; i++)
                        text_holder(out, &f->host->holders[i]);
                if (!f->host->n_holders)
                        fprintf(out, "%s", _("  none\n"));
        }
        text_limits(out, f);
}

void snapshot_show(const struct show *s, const struct facts *f)
{
        if (s->json) {
                s->print_json(snapshot_json(f));
                return;
        }
        show_banner(s);
        snapshot_text(stdout, f, s->color, s->verbose);
}
