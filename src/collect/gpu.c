#include "collect/gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/parse.h"

int gpu_collect(const struct gpu_opts *o, struct gpu_report **ret)
{
        const struct gpu_backend *b = o->bundle_dir ? &gpu_backend_bundle : &gpu_backend_nvml;
        return b->collect(o, ret);
}

bool gpu_report_lists_all(const struct gpu_report *r)
{
        /* every failure of a call that names no GPU sets error (and the count stays 0) */
        return r && r->driver_present && !r->error[0];
}

void gpu_report_timeout_text(const struct gpu_report *r, char *out, size_t outlen)
{
        const struct gpu_info *first = NULL;
        size_t n = 0;
        for (size_t i = 0; r && gpu_report_lists_all(r) && i < r->n_gpus; i++)
                if (r->gpus[i].status == GPU_TIMEOUT && n++ == 0)
                        first = &r->gpus[i];
        if (!first)
                snprintf(out, outlen, "the NVIDIA driver did not answer in time");
        else if (n == 1)
                snprintf(out, outlen, "%s", first->status_message);
        else
                snprintf(out, outlen, "%s (and %zu more GPU%s not answering)", first->status_message, n - 1,
                         n == 2 ? "" : "s");
}

void gpu_report_free(struct gpu_report *r)
{
        if (!r)
                return;
        for (size_t i = 0; i < r->n_gpus; i++) {
                free(r->gpus[i].procs);
                free(r->gpus[i].errors);
        }
        free(r->gpus);
        free(r);
}

void gpu_telemetry_unknown(struct gpu_telemetry *t)
{
        *t = (struct gpu_telemetry){ .util_gpu = -1, .util_mem = -1, .temp_c = -1, .power_mw = -1,
                                     .power_limit_mw = -1, .clock_sm_mhz = -1, .clock_mem_mhz = -1,
                                     .clock_sm_max_mhz = -1, .clock_mem_max_mhz = -1, .fan_pct = -1,
                                     .pcie_tx_kbs = -1, .pcie_rx_kbs = -1, .enc_pct = -1, .dec_pct = -1 };
}

void gpu_info_ref(const struct gpu_info *g, char *out, size_t n)
{
        if (g->pci_bus_id[0])
                snprintf(out, n, "%s", g->pci_bus_id);
        else if (g->uuid[0])
                snprintf(out, n, "%s", g->uuid);
        else
                snprintf(out, n, "%u", g->index);
}

void gpu_info_add_error(struct gpu_info *g, const char *query, int nvml_code, const char *message)
{
        if (g->n_errors >= 16)
                return;
        struct gpu_query_error *e = realloc(g->errors, (g->n_errors + 1) * sizeof(*e));
        if (!e)
                return;
        g->errors = e;
        e = &g->errors[g->n_errors++];
        memset(e, 0, sizeof(*e));
        snprintf(e->query, sizeof(e->query), "%s", query);
        e->nvml_code = nvml_code;
        snprintf(e->message, sizeof(e->message), "%s", message ? message : "");
}

int pci_bus_id_normalize(const char *in, char *out, size_t outlen)
{
        /* [domain:]bus:device.function, hex; domain of 4 or 8 digits */
        uint64_t dom = 0, bus, dev, fn;
        const char *p = in, *end;
        if (!in || outlen < 13)
                return -EINVAL;
        while (*p == ' ')
                p++;
        if (parse_u64_prefix(p, 16, &bus, &end) < 0 || *end != ':')
                return -EINVAL;
        p = end + 1;
        if (parse_u64_prefix(p, 16, &dev, &end) < 0)
                return -EINVAL;
        if (*end == ':') { /* the first number was the domain */
                dom = bus;
                bus = dev;
                p = end + 1;
                if (parse_u64_prefix(p, 16, &dev, &end) < 0)
                        return -EINVAL;
        }
        if (*end != '.')
                return -EINVAL;
        p = end + 1;
        if (parse_u64_prefix(p, 16, &fn, &end) < 0 || (*end && *end != ' ' && *end != '\n'))
                return -EINVAL;
        if (dom > 0xffffffffu || bus > 0xff || dev > 0x1f || fn > 7)
                return -EINVAL;
        /* sysfs prints the domain with 4 digits (wider only if it needs them) */
        snprintf(out, outlen, "%04llx:%02llx:%02llx.%llx", (unsigned long long)dom, (unsigned long long)bus,
                 (unsigned long long)dev, (unsigned long long)fn);
        return 0;
}

bool driver_version_at_least(const char *v, unsigned major, unsigned minor, unsigned patch)
{
        /* "535.113.01" -> {535, 113, 1}; missing parts count as 0 */
        uint64_t a[3] = { 0, 0, 0 };
        const char *p = v, *end;
        if (!v)
                return false;
        for (int i = 0; i < 3; i++) {
                if (parse_u64_prefix(p, 10, &a[i], &end) < 0) {
                        if (i == 0)
                                return false;
                        break;
                }
                if (*end != '.')
                        break;
                p = end + 1;
        }
        if (a[0] != major)
                return a[0] > major;
        if (a[1] != minor)
                return a[1] > minor;
        return a[2] >= patch;
}
