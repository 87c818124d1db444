/* Fuzz target for host shared memory's parsers (collect/shm.h): /proc/sysvipc/shm and
 * /proc/meminfo get the same bytes (each reads only within len, needs no NUL); then what must
 * hold whatever the input: counts within their caps, a sum that never wraps, a judgement and a
 * sentence for any parse. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collect/shm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond)
{
        if (!cond)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* a private copy without a terminator, so that an overread is caught by ASan */
        char *buf = malloc(size ? size : 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        struct shm_report r = { 0 };
        if (shm_parse_sysv(buf, size, &r.sysv) == 0) {
                r.sysv_read = true;
                check(r.sysv.n <= SHM_MAX_SEGS && r.sysv.n <= r.sysv.n_total);
                uint64_t max = 0;
                for (size_t i = 0; i < r.sysv.n; i++) {
                        const struct shm_seg *s = &r.sysv.segs[i];
                        uint64_t b = s->rss_known ? s->rss : s->size;
                        max = b > max ? b : max;
                        check(s->cpid >= 0 && s->lpid >= 0);
                }
                check(r.sysv.bytes >= max); /* saturates, never wraps */
        }
        r.meminfo_read = shm_parse_meminfo(buf, size, &r.mem_total, &r.mem_total_known, &r.shmem, &r.shmem_known) == 0;
        if (r.meminfo_read)
                check(r.mem_total_known || r.shmem_known);
        shm_judge(&r);
        check(r.threshold > 0 && r.threshold <= SHM_GIB);
        check(r.large == (r.total >= r.threshold));
        char *s = NULL;
        if (shm_describe(&r, &s) == 0)
                check(s && strncmp(s, "host shared memory ", 19) == 0);
        free(s);
        shm_sysv_clear(&r.sysv);
        free(buf);
        return 0;
}
