/* knobs: the simulated driver's switches (DIR/knobs), set with `ghostvram sim set`.
 *
 * The file holds one assignment a line, exactly as given on the command line after
 * validation: "KEY=VALUE" for every GPU or "KEY=GPU:VALUE" for one. Lines apply in order;
 * setting a key for every GPU removes its per-GPU lines, so the last word wins. Unknown
 * keys and invalid values in the file are skipped (the library must survive any file). */
#include "simstate.h"
#include "simstate_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/parse.h"

/* NVML functions that the hang knob may name (every function the stand-in implements
 * that talks to the driver; nvmlErrorString does not). */
static const char *const sim_hang_functions[] = {
        "nvmlInit_v2", "nvmlInit", "nvmlInitWithFlags", "nvmlShutdown",
        "cuInit", /* the simulated libcuda's (named only: "any" is NVML's calls) */
        "nvmlSystemGetDriverVersion", "nvmlSystemGetNVMLVersion",
        "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount",
        "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex",
        "nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetMinorNumber",
        "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo",
        "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetPersistenceMode", "nvmlDeviceGetMigMode",
        "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex", "nvmlDeviceIsMigDeviceHandle",
        "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId",
        "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
        "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2",
        "nvmlDeviceGetGraphicsRunningProcesses",
        "nvmlDeviceGetMPSComputeRunningProcesses_v3", "nvmlDeviceGetMPSComputeRunningProcesses_v2",
        "nvmlDeviceGetMPSComputeRunningProcesses",
        "nvmlDeviceGetRunningProcessDetailList", "nvmlDeviceGetConfComputeMemSizeInfo",
        "nvmlEventSetCreate", "nvmlDeviceRegisterEvents", "nvmlEventSetWait_v2", "nvmlEventSetWait",
        "nvmlEventSetFree",
        "nvmlDeviceGetRemappedRows", "nvmlDeviceGetRetiredPagesPendingStatus", "nvmlDeviceGetTotalEccErrors",
        "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetTemperature", "nvmlDeviceGetTemperatureThreshold",
        "nvmlDeviceGetPowerUsage", "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetClockInfo",
        "nvmlDeviceGetMaxClockInfo", "nvmlDeviceGetFanSpeed", "nvmlDeviceGetPcieThroughput",
        "nvmlDeviceGetEncoderUtilization", "nvmlDeviceGetDecoderUtilization", "nvmlDeviceGetProcessUtilization",
        "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkWidth",
};

/* The metrics' knobs: name, default (an idle H100 SXM: 33 C, 71 W of 700 W, SM 345 MHz, memory
 * 2619 MHz, no fan), the largest value, and the NVML unit's factor (W -> mW) */
static const struct {
        const char *name;
        bool na;
        unsigned def, max, factor;
} sim_metrics[SIM_M_COUNT] = {
        [SIM_M_UTIL_GPU] = { "util_gpu", false, 0, 100, 1 },
        [SIM_M_UTIL_MEM] = { "util_mem", false, 0, 100, 1 },
        [SIM_M_TEMP] = { "temp", false, 33, 200, 1 },
        [SIM_M_POWER] = { "power", false, 71, 4000, 1000 },
        [SIM_M_POWER_LIMIT] = { "power_limit", false, 700, 4000, 1000 },
        [SIM_M_CLOCK_SM] = { "clock_sm", false, 345, 10000, 1 },
        [SIM_M_CLOCK_MEM] = { "clock_mem", false, 2619, 20000, 1 },
        [SIM_M_FAN] = { "fan", true, 0, 100, 1 },
        [SIM_M_PCIE_TX] = { "pcie_tx", false, 0, 100000000, 1 },
        [SIM_M_PCIE_RX] = { "pcie_rx", false, 0, 100000000, 1 },
        [SIM_M_ENC] = { "enc", false, 0, 100, 1 },
        [SIM_M_DEC] = { "dec", false, 0, 100, 1 },
};

const char *sim_metric_name(enum sim_metric m)
{
        return m < SIM_M_COUNT ? sim_metrics[m].name : "?";
}

bool sim_metric_value(const struct sim_metric_knob *k, enum sim_metric m, unsigned *ret)
{
        if (m >= SIM_M_COUNT || (k->set ? k->na : sim_metrics[m].na))
                return false;
        *ret = (k->set ? k->value : sim_metrics[m].def) * sim_metrics[m].factor;
        return true;
}

static int metric_find(const char *key)
{
        for (int m = 0; m < SIM_M_COUNT; m++)
                if (!strcmp(sim_metrics[m].name, key))
                        return m;
        return -1;
}

static const struct {
        const char *name;
        unsigned bit;
} sim_query_names[] = {
        { "memory", SIM_Q_MEMORY }, { "memory_v2", SIM_Q_MEMORY_V2 }, { "processes", SIM_Q_PROCESSES },
        { "persistence", SIM_Q_PERSISTENCE }, { "mig", SIM_Q_MIG }, { "pci", SIM_Q_PCI },
        { "minor", SIM_Q_MINOR }, { "events", SIM_Q_EVENTS }, { "health", SIM_Q_HEALTH },
};

enum knob_type { K_BOOL, K_U64, K_ENUM, K_VARIANT, K_HANG, K_NOTSUP, K_XID, K_METRIC };

struct knob_def {
        const char *key;
        enum knob_type type;
        bool per_gpu;           /* accepts "GPU:VALUE" */
        bool gpu_required;      /* only "GPU:VALUE" */
        uint64_t max;           /* K_U64 */
        const char *const *choices; /* K_ENUM, NULL-terminated */
        const char *values;
        const char *help;
};

static const char *const pid_modes[] = { "auto", "translated", "host", NULL };
static const char *const strides[] = { "24", "32", "none", NULL };
static const char *const mig_views[] = { "no_permission", "empty", NULL };

static const struct knob_def knob_defs[] = {
        { "driver", K_VARIANT, false, false, 0, NULL, "VARIANT",
          "driver generation: a variant below, by name or version" },
        { "v3_stride", K_ENUM, false, false, 0, strides, "24|32|none",
          "alias: 24 -> current, 32 -> 535.54.03, none -> 535.98" },
        { "pid_mode", K_ENUM, false, false, 0, pid_modes, "auto|translated|host",
          "PIDs in the caller's namespace (>= 535.113.01) or host\n"
          "PIDs (older drivers); auto follows the driver" },
        { "hidden_owner", K_BOOL, false, false, 0, NULL, "on|off",
          "dead owners are not listed; their memory stays used" },
        { "free_delay_ms_per_gib", K_U64, false, false, 3600000, NULL, "MS",
          "the teardown of a released context takes MS ms per GiB:\n"
          "its memory falls linearly to 0 from the release\n"
          "(default 0)" },
        { "strict_versions", K_BOOL, false, false, 0, NULL, "on|off",
          "versioned structs need the exact version (default on;\n"
          "MemoryInfo_v2 returns 13 otherwise)" },
        { "hang", K_HANG, true, false, 0, NULL, "FUNCTION|any|none",
          "that NVML call (or any) never returns: a wedged driver" },
        { "hang_holds_lock", K_BOOL, false, false, 0, NULL, "on|off",
          "a hung call holds the driver's API lock: every later\n"
          "NVML call, of any process and on any GPU, waits behind\n"
          "it until the hung caller is gone (default off)" },
        { "gpu_lost", K_BOOL, true, false, 0, NULL, "on|off",
          "per-device calls return NVML_ERROR_GPU_IS_LOST (15)" },
        { "gpu_lost_handle", K_BOOL, true, false, 0, NULL, "on|off",
          "gpu_lost, and getting the handle fails with 15 too\n"
          "(as on many hosts after Xid 79)" },
        { "notsup", K_NOTSUP, true, false, 0, NULL, "LIST|none",
          "these queries return NOT_SUPPORTED (3), comma-separated:\n"
          "memory, memory_v2, processes, persistence, mig, pci,\n"
          "minor, events, health" },
        { "uncharged_mib", K_U64, true, false, (uint64_t)1 << 24, NULL, "MIB",
          "used memory no process is charged for (managed\n"
          "memory, kernel clients)" },
        { "leaked_mib", K_U64, true, false, (uint64_t)1 << 24, NULL, "MIB",
          "used memory a dead context left that the driver keeps:\n"
          "charged to no process, held by no file; only a reset\n"
          "frees it (a real driver leak; default 0)" },
        { "flush_on_new_context", K_BOOL, true, false, 0, NULL, "on|off",
          "the next context created on the GPU frees its\n"
          "leaked_mib (ASSUMPTION: a deferred teardown some\n"
          "drivers process on the next client; default off)" },
        { "list_growth", K_U64, true, false, 1000, NULL, "N",
          "the sizing call of a process list under-reports by N" },
        { "persistence", K_BOOL, true, false, 0, NULL, "on|off", "persistence mode (default on)" },
        { "mig", K_BOOL, true, false, 0, NULL, "on|off", "MIG mode (default off)" },
        { "mig_instances", K_U64, true, false, SIM_MAX_MIG, NULL, "N",
          "MIG GPU instances (ids 1..N, one compute instance\n"
          "each, memory split evenly); N > 0 turns MIG mode on" },
        { "mig_unprivileged", K_ENUM, false, false, 0, mig_views, "no_permission|empty",
          "what a caller without the MIG monitor capability gets\n"
          "from a MIG GPU's own process lists (default\n"
          "no_permission: NVML_ERROR_NO_PERMISSION)" },
        { "xid_event", K_XID, true, true, 0, NULL, "GPU:CODE|GPU:none",
          "deliver one Xid critical-error event with CODE to the\n"
          "next event wait on that GPU" },
        { "remap_pending", K_BOOL, true, false, 0, NULL, "on|off",
          "a row remapping is pending: it takes effect at the next\n"
          "GPU reset (nvmlDeviceGetRemappedRows isPending)" },
        { "retired_pending", K_BOOL, true, false, 0, NULL, "on|off",
          "retired pages wait for a reset\n"
          "(nvmlDeviceGetRetiredPagesPendingStatus)" },
        { "ecc_uncorrected", K_U64, true, false, 1000000000, NULL, "N",
          "volatile uncorrected ECC errors since the driver loaded\n"
          "(nvmlDeviceGetTotalEccErrors; default 0)" },
        { "mig_pending", K_BOOL, true, false, 0, NULL, "on|off",
          "the MIG mode was changed and waits for a reset (the\n"
          "pending mode of nvmlDeviceGetMigMode is the other one)" },
        { "reset_required", K_BOOL, true, false, 0, NULL, "on|off",
          "the health queries answer NVML_ERROR_RESET_REQUIRED (16)" },
        { "util_gpu", K_METRIC, true, false, 100, NULL, "PERCENT|na",
          "GPU (SM) utilisation; each live context's process gets\n"
          "an equal share of it (nvmlDeviceGetProcessUtilization;\n"
          "default 0)" },
        { "util_mem", K_METRIC, true, false, 100, NULL, "PERCENT|na", "memory utilisation (default 0)" },
        { "temp", K_METRIC, true, false, 200, NULL, "CELSIUS|na", "GPU temperature (default 33)" },
        { "power", K_METRIC, true, false, 4000, NULL, "WATTS|na", "power draw (default 71)" },
        { "power_limit", K_METRIC, true, false, 4000, NULL, "WATTS|na", "enforced power limit (default 700)" },
        { "clock_sm", K_METRIC, true, false, 10000, NULL, "MHZ|na", "SM clock (default 345)" },
        { "clock_mem", K_METRIC, true, false, 20000, NULL, "MHZ|na", "memory clock (default 2619)" },
        { "fan", K_METRIC, true, false, 100, NULL, "PERCENT|na", "fan speed (default na: an SXM board has none)" },
        { "pcie_tx", K_METRIC, true, false, 100000000, NULL, "KBPS|na", "PCIe transmit throughput, KB/s (default 0)" },
        { "pcie_rx", K_METRIC, true, false, 100000000, NULL, "KBPS|na", "PCIe receive throughput, KB/s (default 0)" },
        { "enc", K_METRIC, true, false, 100, NULL, "PERCENT|na", "encoder utilisation (default 0)" },
        { "dec", K_METRIC, true, false, 100, NULL, "PERCENT|na", "decoder utilisation (default 0)" },
};

static const struct knob_def *knob_find(const char *key, size_t klen)
{
        for (size_t i = 0; i < sizeof(knob_defs) / sizeof(knob_defs[0]); i++)
                if (strlen(knob_defs[i].key) == klen && strncmp(knob_defs[i].key, key, klen) == 0)
                        return &knob_defs[i];
        return NULL;
}

static int parse_bool(const char *v, bool *ret)
{
        if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"))
                *ret = true;
        else if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no"))
                *ret = false;
        else
                return -EINVAL;
        return 0;
}

static int parse_notsup(const char *v, unsigned *ret)
{
        unsigned mask = 0;
        if (strcmp(v, "none") == 0) {
                *ret = 0;
                return 0;
        }
        while (*v) {
                size_t n = strcspn(v, ",");
                bool found = false;
                for (size_t i = 0; i < sizeof(sim_query_names) / sizeof(sim_query_names[0]); i++)
                        if (strlen(sim_query_names[i].name) == n && !strncmp(v, sim_query_names[i].name, n)) {
                                mask |= sim_query_names[i].bit;
                                found = true;
                        }
                if (!found)
                        return -EINVAL;
                v += n;
                if (*v == ',' && *++v == '\0')
                        return -EINVAL;
        }
        *ret = mask;
        return 0;
}

static bool hang_name_ok(const char *v)
{
        if (!strcmp(v, "any") || !strcmp(v, "none"))
                return true;
        for (size_t i = 0; i < sizeof(sim_hang_functions) / sizeof(sim_hang_functions[0]); i++)
                if (!strcmp(v, sim_hang_functions[i]))
                        return true;
        return false;
}

/* One parsed assignment. */
struct knob_assign {
        const struct knob_def *def;
        int gpu;                /* -1: every GPU */
        char value[SIM_HANG_LEN];
};

/* Split and validate "KEY=VALUE" / "KEY=GPU:VALUE". n_gpus 0 skips the GPU range check. */
static int knob_parse(const char *s, unsigned n_gpus, struct knob_assign *a, char *err, size_t errlen)
{
        const char *eq = strchr(s, '=');
        if (!eq || eq == s) {
                snprintf(err, errlen, "'%.60s' is not KEY=VALUE", s);
                return -EINVAL;
        }
        a->def = knob_find(s, (size_t)(eq - s));
        if (!a->def) {
                snprintf(err, errlen, "unknown knob '%.*s' (see 'ghostvram sim set --help')",
                         (int)((size_t)(eq - s) > 40 ? 40 : eq - s), s);
                return -EINVAL;
        }
        const char *v = eq + 1;
        a->gpu = -1;
        const char *colon = strchr(v, ':');
        if (colon && colon > v && strspn(v, "0123456789") == (size_t)(colon - v)) {
                char idx[16];
                unsigned g;
                size_t n = (size_t)(colon - v);
                if (n >= sizeof(idx) || !a->def->per_gpu) {
                        snprintf(err, errlen, "%s applies to every GPU; drop the 'GPU:' prefix", a->def->key);
                        return -EINVAL;
                }
                memcpy(idx, v, n);
                idx[n] = '\0';
                if (parse_uint_range(idx, 0, SIM_MAX_GPUS - 1, &g) < 0 || (n_gpus && g >= n_gpus)) {
                        snprintf(err, errlen, "%s: no GPU %s on this simulated host (it has %u)", a->def->key,
                                 idx, n_gpus);
                        return -EINVAL;
                }
                a->gpu = (int)g;
                v = colon + 1;
        }
        if (strlen(v) >= sizeof(a->value)) {
                snprintf(err, errlen, "%s: value too long", a->def->key);
                return -EINVAL;
        }
        memcpy(a->value, v, strlen(v) + 1);
        if (strcmp(v, "default") == 0 && a->def->type != K_XID)
                return 0;
        if (a->def->gpu_required && a->gpu < 0) {
                snprintf(err, errlen, "%s needs a GPU: %s=%s", a->def->key, a->def->key, a->def->values);
                return -EINVAL;
        }
        bool b;
        uint64_t u;
        unsigned mask;
        int r = 0;
        switch (a->def->type) {
        case K_BOOL: r = parse_bool(v, &b); break;
        case K_U64: r = parse_u64(v, &u) < 0 || u > a->def->max ? -EINVAL : 0; break;
        case K_ENUM:
                r = -EINVAL;
                for (const char *const *c = a->def->choices; *c; c++)
                        if (!strcmp(*c, v))
                                r = 0;
                break;
        case K_VARIANT: r = sim_variant_find(v) ? 0 : -EINVAL; break;
        case K_HANG: r = hang_name_ok(v) ? 0 : -EINVAL; break;
        case K_NOTSUP: r = parse_notsup(v, &mask); break;
        case K_XID:
                r = strcmp(v, "none") && (parse_u64(v, &u) < 0 || u < 1 || u > 999) ? -EINVAL : 0;
                break;
        case K_METRIC: r = strcmp(v, "na") && (parse_u64(v, &u) < 0 || u > a->def->max) ? -EINVAL : 0; break;
        }
        if (r < 0) {
                if (a->def->type == K_VARIANT) {
                        struct buf names = BUF_INIT(1024);
                        for (size_t i = 0; i < sim_n_variants; i++)
                                buf_printf(&names, "%s%s", i ? ", " : "", sim_variants[i].name);
                        snprintf(err, errlen, "driver: unknown variant '%.40s' (one of: %s)", v, buf_str(&names));
                        buf_free(&names);
                } else if (a->def->type == K_U64 || a->def->type == K_METRIC) {
                        snprintf(err, errlen, "%s: '%.40s' is not a number from 0 to %llu", a->def->key, v,
                                 (unsigned long long)a->def->max);
                } else if (a->def->type == K_HANG) {
                        snprintf(err, errlen, "hang: '%.60s' is not an NVML function of the simulator, 'any' or 'none'",
                                 v);
                } else {
                        snprintf(err, errlen, "%s: '%.40s' is not one of %s", a->def->key, v, a->def->values);
                }
                return -EINVAL;
        }
        return 0;
}

int sim_knob_check(const char *assignment, unsigned n_gpus, char *err, size_t errlen)
{
        struct knob_assign a;
        return knob_parse(assignment, n_gpus, &a, err, errlen);
}

static void knob_apply_one(struct sim_knobs *k, unsigned g, const struct knob_assign *a)
{
        struct sim_gpu_knobs *gk = &k->gpu[g];
        bool b = false;
        uint64_t u = 0;
        const char *v = a->value;
        int m = a->def->type == K_METRIC ? metric_find(a->def->key) : -1;
        if (m >= 0) {
                struct sim_metric_knob *mk = &gk->metric[m];
                mk->set = strcmp(v, "default") != 0;
                mk->na = !strcmp(v, "na");
                mk->value = mk->set && !mk->na && parse_u64(v, &u) == 0 ? (unsigned)u : 0;
        } else if (!strcmp(a->def->key, "hang")) {
                snprintf(gk->hang, sizeof(gk->hang), "%s", strcmp(v, "none") ? v : "");
        } else if (!strcmp(a->def->key, "gpu_lost") && parse_bool(v, &b) == 0) {
                gk->lost = b;
        } else if (!strcmp(a->def->key, "gpu_lost_handle") && parse_bool(v, &b) == 0) {
                gk->lost_handle = b;
        } else if (!strcmp(a->def->key, "notsup")) {
                (void)parse_notsup(v, &gk->notsup);
        } else if (!strcmp(a->def->key, "uncharged_mib") && parse_u64(v, &u) == 0) {
                gk->uncharged_mib = u;
        } else if (!strcmp(a->def->key, "leaked_mib") && parse_u64(v, &u) == 0) {
                gk->leaked_mib = u;
        } else if (!strcmp(a->def->key, "flush_on_new_context") && parse_bool(v, &b) == 0) {
                gk->flush_on_new_context = b;
        } else if (!strcmp(a->def->key, "list_growth") && parse_u64(v, &u) == 0) {
                gk->list_growth = (unsigned)u;
        } else if (!strcmp(a->def->key, "persistence") && parse_bool(v, &b) == 0) {
                gk->persistence = b;
        } else if (!strcmp(a->def->key, "mig") && parse_bool(v, &b) == 0) {
                gk->mig = b;
        } else if (!strcmp(a->def->key, "mig_instances") && parse_u64(v, &u) == 0 && u <= SIM_MAX_MIG) {
                gk->mig_instances = (unsigned)u;
        } else if (!strcmp(a->def->key, "remap_pending") && parse_bool(v, &b) == 0) {
                gk->remap_pending = b;
        } else if (!strcmp(a->def->key, "retired_pending") && parse_bool(v, &b) == 0) {
                gk->retired_pending = b;
        } else if (!strcmp(a->def->key, "ecc_uncorrected") && parse_u64(v, &u) == 0) {
                gk->ecc_uncorrected = u;
        } else if (!strcmp(a->def->key, "mig_pending") && parse_bool(v, &b) == 0) {
                gk->mig_pending = b;
        } else if (!strcmp(a->def->key, "reset_required") && parse_bool(v, &b) == 0) {
                gk->reset_required = b;
        } else if (!strcmp(a->def->key, "xid_event")) {
                gk->xid_event = parse_u64(v, &u) == 0 ? (int)u : -1;
        }
}

static void knob_apply(struct sim_knobs *k, const struct knob_assign *a)
{
        bool b;
        uint64_t u;
        const char *v = a->value;
        const struct sim_variant *var;
        switch (a->def->type) {
        case K_VARIANT:
                var = sim_variant_find(v);
                snprintf(k->driver, sizeof(k->driver), "%s", var ? var->name : "current");
                return;
        case K_ENUM:
                if (!strcmp(a->def->key, "pid_mode"))
                        k->pid_mode = !strcmp(v, "host") ? SIM_PID_HOST
                                      : !strcmp(v, "translated") ? SIM_PID_TRANSLATED : SIM_PID_AUTO;
                else if (!strcmp(a->def->key, "mig_unprivileged"))
                        k->mig_unprivileged = !strcmp(v, "empty") ? SIM_MIG_VIEW_EMPTY : SIM_MIG_VIEW_NO_PERMISSION;
                return;
        default:
                break;
        }
        if (!strcmp(a->def->key, "hidden_owner") && parse_bool(v, &b) == 0)
                k->hidden_owner = b;
        else if (!strcmp(a->def->key, "strict_versions") && parse_bool(v, &b) == 0)
                k->strict_versions = b;
        else if (!strcmp(a->def->key, "hang_holds_lock") && parse_bool(v, &b) == 0)
                k->hang_holds_lock = b;
        else if (!strcmp(a->def->key, "free_delay_ms_per_gib") && parse_u64(v, &u) == 0)
                k->free_delay_ms_per_gib = u;
        if (!a->def->per_gpu)
                return;
        if (a->gpu >= 0) {
                knob_apply_one(k, (unsigned)a->gpu, a);
                return;
        }
        if (!strcmp(a->def->key, "hang"))
                snprintf(k->hang, sizeof(k->hang), "%s", strcmp(v, "none") ? v : "");
        for (unsigned g = 0; g < SIM_MAX_GPUS; g++)
                knob_apply_one(k, g, a);
}

static void knob_alias(struct knob_assign *a)
{
        /* v3_stride picks the driver generation that has that stride */
        if (strcmp(a->def->key, "v3_stride"))
                return;
        if (!strcmp(a->value, "default")) {
                a->def = knob_find("driver", 6);
                return;
        }
        const char *var = !strcmp(a->value, "24") ? "current" : !strcmp(a->value, "32") ? "535.54.03" : "535.98";
        a->def = knob_find("driver", 6);
        snprintf(a->value, sizeof(a->value), "%s", var);
}

static void knobs_defaults(struct sim_knobs *k)
{
        memset(k, 0, sizeof(*k));
        snprintf(k->driver, sizeof(k->driver), "current");
        k->strict_versions = true;
        for (unsigned g = 0; g < SIM_MAX_GPUS; g++) {
                k->gpu[g].persistence = true; /* datacenter default: nvidia-persistenced runs */
                k->gpu[g].xid_event = -1;
        }
}

int sim_knobs_load(const char *dir, struct sim_knobs *ret)
{
        char *data = NULL, *cur, *line, err[SIM_ERR_LEN];
        size_t len;
        knobs_defaults(ret);
        int r = sim_read(dir, "knobs", &data, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        for (cur = data; (line = sim_next_line(&cur));) {
                struct knob_assign a;
                if (line[0] == '#' || line[0] == '\0' || knob_parse(line, 0, &a, err, sizeof(err)) < 0)
                        continue;
                if (strcmp(a.value, "default") == 0)
                        continue;
                knob_alias(&a);
                knob_apply(ret, &a);
        }
        free(data);
        return 0;
}

/* Does a line of the knobs file set the same key for a GPU that `a` covers? */
static bool knob_line_replaced(const char *line, const struct knob_assign *a)
{
        struct knob_assign old;
        char err[SIM_ERR_LEN];
        if (knob_parse(line, 0, &old, err, sizeof(err)) < 0)
                return false;
        if (old.def != a->def)
                return false;
        return a->gpu < 0 || old.gpu == a->gpu;
}

/* Rewrite the knobs text with the assignments applied. */
static int knobs_rewrite(const char *old, struct knob_assign *as, size_t n, struct buf *out)
{
        char *copy = strdup(old), *cur, *line;
        int r = 0;
        if (!copy)
                return -ENOMEM;
        for (cur = copy; r == 0 && (line = sim_next_line(&cur));) {
                bool drop = false;
                for (size_t i = 0; i < n && !drop; i++)
                        drop = line[0] != '#' && knob_line_replaced(line, &as[i]);
                if (!drop)
                        r = buf_printf(out, "%s\n", line);
        }
        for (size_t i = 0; r == 0 && i < n; i++) {
                if (!strcmp(as[i].value, "default"))
                        continue;
                if (as[i].gpu >= 0)
                        r = buf_printf(out, "%s=%d:%s\n", as[i].def->key, as[i].gpu, as[i].value);
                else
                        r = buf_printf(out, "%s=%s\n", as[i].def->key, as[i].value);
        }
        free(copy);
        return r;
}

int sim_knobs_set(const char *dir, char **assignments, size_t n, char *err, size_t errlen)
{
        struct sim_host *h = malloc(sizeof(*h));
        struct knob_assign *as = calloc(n ? n : 1, sizeof(*as));
        struct buf out = BUF_INIT(SIM_FILE_MAX);
        char *data = NULL;
        size_t len;
        int lock = -1, r;

        if (!h || !as) {
                r = -ENOMEM;
                goto out;
        }
        r = sim_host_load(dir, h);
        if (r < 0) {
                snprintf(err, errlen, "%s is not a simulated host (%s)", dir, strerror(-r));
                goto out;
        }
        for (size_t i = 0; i < n; i++) {
                r = knob_parse(assignments[i], h->n_gpus, &as[i], err, errlen);
                if (r < 0)
                        goto out;
                knob_alias(&as[i]);
        }
        lock = sim_lock(dir);
        if (lock < 0) {
                r = lock;
                snprintf(err, errlen, "cannot lock %s/lock: %s", dir, strerror(-r));
                goto out;
        }
        r = sim_read(dir, "knobs", &data, &len);
        if (r == -ENOENT) {
                data = strdup("");
                r = data ? 0 : -ENOMEM;
        }
        if (r < 0)
                goto out;
        r = knobs_rewrite(data, as, n, &out);
        if (r < 0)
                goto out;
        r = sim_write(dir, "knobs", buf_str(&out), out.len);
        if (r < 0)
                snprintf(err, errlen, "cannot write %s/knobs: %s", dir, strerror(-r));
out:
        sim_unlock(lock);
        free(data);
        buf_free(&out);
        free(as);
        free(h);
        return r;
}

int sim_event_take(const char *dir, unsigned gpu, unsigned *ret_code)
{
        char *data = NULL, *cur, *line, err[SIM_ERR_LEN];
        struct buf out = BUF_INIT(SIM_FILE_MAX);
        size_t len;
        int code = -1, r;
        int lock = sim_lock(dir);
        if (lock < 0)
                return lock;
        r = sim_read(dir, "knobs", &data, &len);
        if (r < 0)
                goto out;
        for (cur = data; r == 0 && (line = sim_next_line(&cur));) {
                struct knob_assign a;
                uint64_t u;
                if (line[0] != '#' && knob_parse(line, 0, &a, err, sizeof(err)) == 0 &&
                    !strcmp(a.def->key, "xid_event") && a.gpu == (int)gpu) {
                        if (parse_u64(a.value, &u) == 0)
                                code = (int)u;
                        continue; /* consumed */
                }
                r = buf_printf(&out, "%s\n", line);
        }
        if (r < 0 || code < 0)
                goto out;
        r = sim_write(dir, "knobs", buf_str(&out), out.len);
        if (r < 0)
                goto out;
        *ret_code = (unsigned)code;
        r = 1;
out:
        sim_unlock(lock);
        free(data);
        buf_free(&out);
        return r;
}

bool sim_knobs_hang(const struct sim_knobs *k, int gpu, const char *fn)
{
        const char *h = gpu >= 0 && gpu < SIM_MAX_GPUS ? k->gpu[gpu].hang : k->hang;
        return h[0] && (!strcmp(h, "any") || !strcmp(h, fn));
}

enum sim_pid_mode sim_pid_mode_effective(const struct sim_knobs *k, const struct sim_variant *v)
{
        if (k->pid_mode != SIM_PID_AUTO)
                return k->pid_mode;
        return v && v->translates_pids ? SIM_PID_TRANSLATED : SIM_PID_HOST;
}

int sim_knobs_help(struct buf *out)
{
        int r = 0;
        for (size_t i = 0; r == 0 && i < sizeof(knob_defs) / sizeof(knob_defs[0]); i++) {
                const struct knob_def *d = &knob_defs[i];
                char left[64];
                snprintf(left, sizeof(left), "%s=%s%s", d->key, d->per_gpu && !d->gpu_required ? "[GPU:]" : "",
                         d->values);
                if (strlen(left) >= 22)
                        r = buf_printf(out, "  %s\n%24s", left, "");
                else
                        r = buf_printf(out, "  %-22s", left);
                /* continuation lines of the help text line up under its first line */
                for (const char *h = d->help; r == 0 && *h;) {
                        size_t n = strcspn(h, "\n");
                        r = buf_printf(out, "%.*s\n", (int)n, h);
                        h += n;
                        if (*h == '\n' && *++h && r == 0)
                                r = buf_printf(out, "%24s", "");
                }
        }
        for (size_t i = 0; r == 0 && i < sim_n_variants; i++)
                r = buf_printf(out, "%s  %-10s %s\n", i ? "" : "\nDriver variants (driver=...):\n",
                               sim_variants[i].name, sim_variants[i].summary);
        return r;
}
