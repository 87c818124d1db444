/* gv-simquery: a test helper. Loads the NVML library that $GHOSTVRAM_SIM selects (or
 * --lib), asks it what a monitoring tool asks, and prints the answers as JSON:
 *   {"init":0,"driver":"560.35.03","gpus":[{"index":0,"memory":{"total":..,"reserved":..,
 *    "used":..,"free":..},"procs_api":"v3/24","procs":[{"pid":..,"bytes":..}]}]}
 * A failed call appears as "<what>_error": NVML code. Not installed; tests only. */
#include <dlfcn.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "collect/nvml_abi.h"
#include "simstate.h"
#include "util/parse.h"

#define MAX_RECORDS 256

struct lib {
        void *h;
        nvmlInit_fn init;
        nvmlDeviceGetCount_fn count;
        nvmlDeviceGetHandleByIndex_fn handle;
        nvmlSystemGetString_fn driver;
        nvmlDeviceGetMemoryInfo_v2_fn mem_v2;
        nvmlDeviceGetMemoryInfo_fn mem_v1;
        nvmlDeviceGetProcesses_fn procs;
        size_t stride;
        const char *api;
};

static void *sym(void *h, const char *a, const char *b)
{
        void *p = dlsym(h, a);
        return p || !b ? p : dlsym(h, b);
}

/* The process-list call, by nvitop's rule (docs/nvml-abi.md pitfall 2) unless forced. */
static void pick_procs(struct lib *l, const char *api)
{
        bool v3_32 = dlsym(l->h, "nvmlDeviceGetConfComputeMemSizeInfo") &&
                     !dlsym(l->h, "nvmlDeviceGetRunningProcessDetailList");
        void *v3 = dlsym(l->h, "nvmlDeviceGetComputeRunningProcesses_v3");
        void *v2 = dlsym(l->h, "nvmlDeviceGetComputeRunningProcesses_v2");
        void *v1 = dlsym(l->h, "nvmlDeviceGetComputeRunningProcesses");
        if ((!strcmp(api, "auto") || !strcmp(api, "v3")) && v3) {
                *(void **)&l->procs = v3;
                l->stride = v3_32 ? 32 : 24;
                l->api = v3_32 ? "v3/32" : "v3/24";
        } else if ((!strcmp(api, "auto") || !strcmp(api, "v2")) && v2) {
                *(void **)&l->procs = v2;
                l->stride = 24;
                l->api = "v2";
        } else if (strcmp(api, "v3") && strcmp(api, "v2") && v1) {
                *(void **)&l->procs = v1;
                l->stride = 16;
                l->api = "v1";
        }
}

static json_t *query_procs(const struct lib *l, nvmlDevice_t dev, json_t *g)
{
        unsigned char buf[MAX_RECORDS * 32];
        unsigned count = 0;
        int r = l->procs(dev, &count, NULL);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
                count = count + 4 > MAX_RECORDS ? MAX_RECORDS : count + 4; /* slack: the list may grow */
                r = l->procs(dev, &count, buf);
        } else if (r == NVML_SUCCESS) {
                count = 0;
        }
        if (r != NVML_SUCCESS) {
                json_object_set_new(g, "procs_error", json_integer(r));
                return g;
        }
        json_t *arr = json_array();
        for (unsigned i = 0; i < count; i++) {
                unsigned pid;
                unsigned long long bytes;
                memcpy(&pid, buf + i * l->stride, sizeof(pid));
                memcpy(&bytes, buf + i * l->stride + 8, sizeof(bytes));
                json_array_append_new(arr, json_pack("{s:I,s:I}", "pid", (json_int_t)pid, "bytes", (json_int_t)bytes));
        }
        json_object_set_new(g, "procs_api", json_string(l->api));
        json_object_set_new(g, "procs", arr);
        return g;
}

static json_t *query_gpu(const struct lib *l, unsigned i)
{
        json_t *g = json_pack("{s:I}", "index", (json_int_t)i);
        nvmlDevice_t dev;
        int r = l->handle(i, &dev);
        if (r != NVML_SUCCESS) {
                json_object_set_new(g, "handle_error", json_integer(r));
                return g;
        }
        if (l->mem_v2) {
                nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };
                r = l->mem_v2(dev, &m);
                if (r == NVML_SUCCESS)
                        json_object_set_new(g, "memory",
                                            json_pack("{s:I,s:I,s:I,s:I}", "total", (json_int_t)m.total, "reserved",
                                                      (json_int_t)m.reserved, "used", (json_int_t)m.used, "free",
                                                      (json_int_t)m.free));
                else
                        json_object_set_new(g, "memory_error", json_integer(r));
        }
        if (l->mem_v1) {
                nvmlMemory_t m;
                r = l->mem_v1(dev, &m);
                if (r == NVML_SUCCESS)
                        json_object_set_new(g, "memory_v1",
                                            json_pack("{s:I,s:I,s:I}", "total", (json_int_t)m.total, "used",
                                                      (json_int_t)m.used, "free", (json_int_t)m.free));
                else
                        json_object_set_new(g, "memory_v1_error", json_integer(r));
        }
        if (l->procs)
                query_procs(l, dev, g);
        return g;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "lib", required_argument, NULL, 'l' },
                { "api", required_argument, NULL, 'a' },
                { "gpu", required_argument, NULL, 'g' },
                {},
        };
        const char *lib_path = NULL, *api = "auto";
        char path[PATH_MAX];
        int gpu = -1, c;
        unsigned u;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'l': lib_path = optarg; break;
                case 'a': api = optarg; break;
                case 'g':
                        if (parse_uint_range(optarg, 0, SIM_MAX_GPUS - 1, &u) < 0)
                                return 2;
                        gpu = (int)u;
                        break;
                default:
                        fprintf(stderr, "usage: gv-simquery [--lib PATH] [--api auto|v3|v2|v1] [--gpu I]\n");
                        return 2;
                }
        }
        if (!lib_path) {
                const char *dir = getenv("GHOSTVRAM_SIM");
                if (!dir || simstate_library(dir, path, sizeof(path)) < 0) {
                        fprintf(stderr, "gv-simquery: set GHOSTVRAM_SIM to a simulated host\n");
                        return 2;
                }
                lib_path = path;
        }
        struct lib l = { .api = "none" };
        l.h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
        if (!l.h) {
                fprintf(stderr, "gv-simquery: %s\n", dlerror());
                return 1;
        }
        *(void **)&l.init = sym(l.h, "nvmlInit_v2", "nvmlInit");
        *(void **)&l.count = sym(l.h, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
        *(void **)&l.handle = sym(l.h, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
        *(void **)&l.driver = sym(l.h, "nvmlSystemGetDriverVersion", NULL);
        *(void **)&l.mem_v2 = sym(l.h, "nvmlDeviceGetMemoryInfo_v2", NULL);
        *(void **)&l.mem_v1 = sym(l.h, "nvmlDeviceGetMemoryInfo", NULL);
        pick_procs(&l, api);
        nvmlShutdown_fn shutdown;
        *(void **)&shutdown = sym(l.h, "nvmlShutdown", NULL);

        json_t *doc = json_object();
        int r = l.init();
        json_object_set_new(doc, "init", json_integer(r));
        if (r == NVML_SUCCESS) {
                char v[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
                unsigned n = 0;
                if (l.driver(v, sizeof(v)) == NVML_SUCCESS)
                        json_object_set_new(doc, "driver", json_string(v));
                json_t *gpus = json_array();
                if (l.count(&n) == NVML_SUCCESS)
                        for (unsigned i = 0; i < n; i++)
                                if (gpu < 0 || (unsigned)gpu == i)
                                        json_array_append_new(gpus, query_gpu(&l, i));
                json_object_set_new(doc, "gpus", gpus);
                shutdown();
        }
        json_dumpf(doc, stdout, JSON_COMPACT);
        fputc('\n', stdout);
        json_decref(doc);
        dlclose(l.h);
        return 0;
}
