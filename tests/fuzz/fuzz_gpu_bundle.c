/* Fuzz the readers of outsider-controlled GPU text: a bundle's nvml.json, PCI bus ids, driver
 * version strings and the nvidia module's /proc/driver/nvidia/gpus/BUS/information (with the
 * filling of unnamed GPUs from it). Nothing may crash, leak or hang. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collect/gpu.h"
#include "collect/gpu_json.h"
#include "collect/gpu_procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_error_t err;
        json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &err);
        if (doc) {
                struct gpu_report *r;
                if (gpu_report_from_json(doc, &r) == 0) {
                        /* what we read back must render again */
                        json_t *again = gpu_report_to_json(r);
                        char *s = json_dumps(again, 0);
                        free(s);
                        json_decref(again);
                        gpu_report_free(r);
                }
                json_decref(doc);
        }
        char s[64];
        size_t n = size < sizeof(s) - 1 ? size : sizeof(s) - 1;
        memcpy(s, data, n);
        s[n] = '\0';
        char out[32];
        pci_bus_id_normalize(s, out, sizeof(out));
        driver_version_at_least(s, 535, 113, 1);

        struct gpu_procfs_entry e;
        if (gpu_procfs_parse_information((const char *)data, size, &e) == 0) {
                /* the entry against two GPUs NVML could not name, one with a UUID */
                struct gpu_info g[2];
                memset(g, 0, sizeof(g));
                g[1].index = 1;
                memcpy(g[1].uuid, e.uuid, sizeof(g[1].uuid));
                struct gpu_report r = { .gpus = g, .n_gpus = 2 };
                gpu_procfs_fill(&r, &e, 1);
        }
        return 0;
}
