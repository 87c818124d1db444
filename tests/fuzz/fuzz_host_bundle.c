/* Fuzz the reader of a bundle's host.json (outsider-controlled: bundles travel in bug
 * reports): the facts, the limits, the processes' roles, ghostvram's own process and the
 * processes out of sight. Nothing may crash, leak or hang; what it accepts is checked for what
 * must always hold. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct host_bundle_in *b = NULL;
        char err[256] = "";
        int r = host_bundle_parse((const char *)data, size, &b, err, sizeof(err));
        if (r == 0 && b) {
                for (size_t i = 0; i < b->n_procs; i++) {
                        check(b->procs[i].pid > 0);
                        check(host_bundle_proc(b, b->procs[i].pid) != NULL);
                        check(strlen(b->procs[i].user) < sizeof(b->procs[i].user));
                }
                for (size_t i = 0; i < b->n_limits; i++)
                        check(b->limits[i] != NULL);
                check(b->n_self_ancestors <= HOST_MAX_ANCESTORS);
                for (unsigned i = 0; i < b->n_self_ancestors; i++)
                        check(b->self_ancestors[i] > 0);
                check(b->n_opaque <= HOST_MAX_OPAQUE);
                for (size_t i = 0; i < b->n_opaque; i++)
                        check(b->opaque[i].pid > 0 && b->opaque[i].pgid >= 0 && b->opaque[i].sid >= 0);
        } else {
                /* a refusal always says why */
                check(err[0] != '\0' && memchr(err, '\0', sizeof(err)) != NULL);
        }
        host_bundle_in_free(b);
        return 0;
}
