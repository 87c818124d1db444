/* Fuzz the allocation ledger parser (track/ledger_read): arbitrary bytes as a ledger file,
 * whole and fed in uneven chunks (the two must agree), then everything a report does with it
 * (summaries, frame names, the JSON of the sites). A ledger is hostile input: another user or a
 * crash may have written it. Nothing may crash, leak, hang or disagree. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "render/track_render.h"
#include "track/ledger_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > 1 << 20)
                return 0;
        struct track_ledger *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
        struct track_summary *s = malloc(sizeof(*s));
        if (!a || !b || !s)
                goto out;
        int ra = track_ledger_parse(data, size, a);
        track_ledger_init(b);
        int rb = 0;
        size_t step = size ? 1 + data[0] % 200 : 1;
        for (size_t off = 0; off < size && rb == 0; off += step)
                rb = track_ledger_feed(b, data + off, size - off < step ? size - off : step);
        if (rb == 0 && !b->have_header)
                rb = -22;
        track_ledger_finish(b);
        if ((ra == 0) != (rb == 0))
                abort();
        if (ra == 0) {
                if (a->records != b->records || a->skipped_bytes != b->skipped_bytes || a->n != b->n)
                        abort();
                uint8_t uuid[16];
                memcpy(uuid, data + (size > 16 ? size - 16 : 0), size >= 16 ? 16 : 0);
                track_ledger_summary(a, size >= 16 ? uuid : NULL, s);
                track_ledger_summary(a, NULL, s);
                uint64_t sum = 0;
                for (size_t i = 0; i < s->n_sites; i++)
                        sum += s->sites[i].bytes;
                if (sum + s->other_sites_bytes != s->outstanding_bytes)
                        abort();
                json_t *j = track_sites_json(a, s, TRACK_SITES_MAX);
                char *txt = json_dumps(j, JSON_ENSURE_ASCII);
                free(txt);
                json_decref(j);
                char name[128];
                for (size_t i = 0; i < a->n_modules; i++)
                        track_frame_name(a, a->modules[i].lo, name, sizeof(name));
                track_ledger_free(a);
        }
        track_ledger_free(b);
out:
        free(a);
        free(b);
        free(s);
        return 0;
}
