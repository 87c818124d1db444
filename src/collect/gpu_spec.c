/* gpu_spec: --gpu SPEC as nvidia-smi -i takes it (collect/gpu_spec.h). */
#include "collect/gpu_spec.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "util/parse.h"

/* PCI bus id in any of nvidia-smi's forms ("3b:00.0" has domain 0), normalised; 0 or -EINVAL. */
static int gpu_spec_pci(const char *spec, char *out, size_t outlen)
{
        if (strlen(spec) > 31 || strchr(spec, ' '))
                return -EINVAL;
        return pci_bus_id_normalize(spec, out, outlen);
}

int gpu_spec_check(const char *spec)
{
        unsigned u;
        char pci[32];
        if (parse_uint_range(spec, 0, 1023, &u) == 0)
                return 0;
        if ((strncasecmp(spec, "GPU-", 4) == 0 || strncasecmp(spec, "MIG-", 4) == 0) && strlen(spec) > 4 &&
            strlen(spec) < 96 && strspn(spec + 4, "0123456789abcdefABCDEF-") == strlen(spec + 4))
                return 0;
        return gpu_spec_pci(spec, pci, sizeof(pci));
}

int gpu_spec_resolve(const char *spec, const struct gpu_report *r, unsigned *ret_index)
{
        unsigned u;
        char pci[32];
        if (parse_uint_range(spec, 0, 1023, &u) == 0) {
                for (size_t i = 0; i < r->n_gpus; i++)
                        if (r->gpus[i].index == u) {
                                *ret_index = u;
                                return 0;
                        }
                return -ENOENT;
        }
        bool is_pci = gpu_spec_pci(spec, pci, sizeof(pci)) == 0;
        for (size_t i = 0; i < r->n_gpus; i++) {
                const struct gpu_info *g = &r->gpus[i];
                if ((is_pci && strcmp(g->pci_bus_id, pci) == 0) || (!is_pci && g->uuid[0] && strcasecmp(g->uuid, spec) == 0)) {
                        *ret_index = g->index;
                        return 0;
                }
        }
        return -ENOENT;
}
