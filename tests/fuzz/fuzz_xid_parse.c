/* Fuzz the NVRM/Xid parser: arbitrary bytes as one record's text (xid_parse_message), and as a
 * stream of records ('\n' separated) through the stateful parser, then everything an event
 * goes through afterwards (assessment, GPU mapping, JSON). Nothing may crash, leak or hang. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collect/xid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use_event(const struct xid_event *e)
{
        struct xid_assessment a;
        xid_event_assess(e, &a);
        struct xid_explanation x;
        xid_explain(e->xid, &x);
        json_t *j = xid_event_to_json(e);
        char *s = json_dumps(j, JSON_ENSURE_ASCII);
        free(s);
        json_decref(j);
        j = xid_explanation_to_json(&x);
        json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *text = (const char *)data;
        if (size > 1 << 20)
                return 0;
        struct xid_event e;
        if (xid_parse_message(text, size, &e) == 1) {
                use_event(&e);
                xid_event_free(&e);
        }

        /* records: each line a record; seq/monotonic from the line number, prio from the first byte */
        struct xid_parser p;
        struct xid_list l = { .max = 64 };
        xid_parser_init(&p, "fuzz");
        size_t start = 0, line = 0;
        while (start <= size) {
                const char *nl = memchr(text + start, '\n', size - start);
                size_t end = nl ? (size_t)(nl - text) : size;
                char *rec_text = malloc(end - start + 1);
                if (!rec_text)
                        break;
                memcpy(rec_text, text + start, end - start);
                rec_text[end - start] = '\0';
                struct kmsg_record rec = {
                        .seq_known = line % 2 == 0, .seq = line, .prio = size ? (int)(data[0] % 16) - 1 : -1,
                        .monotonic_known = line % 3 != 0, .monotonic = (double)line * 0.5,
                        .time_known = line % 5 == 0, .time = 1.7e9 + (double)line,
                        .text = rec_text, .text_len = end - start, .raw = rec_text, .raw_len = end - start,
                };
                int r = xid_parser_feed(&p, &rec, &l);
                free(rec_text);
                if (r < 0 || !nl)
                        break;
                start = end + 1;
                line++;
        }
        xid_parser_flush(&p, &l);
        xid_parser_free(&p);

        struct gpu_info gpus[2];
        memset(gpus, 0, sizeof(gpus));
        strcpy(gpus[0].pci_bus_id, "0000:3b:00.0");
        gpus[1].index = 1;
        memcpy(gpus[1].pci_bus_id, text, size < sizeof(gpus[1].pci_bus_id) - 1 ? size : sizeof(gpus[1].pci_bus_id) - 1);
        struct gpu_report rep = { .driver_present = true, .gpus = gpus, .n_gpus = 2 };
        xid_map_gpus(l.ev, l.n, &rep);
        for (size_t i = 0; i < l.n; i++)
                use_event(&l.ev[i]);
        struct xid_list other = { 0 };
        if (l.n) {
                struct xid_event c;
                if (xid_event_copy(&c, &l.ev[0]) == 0)
                        xid_list_push(&other, &c);
        }
        xid_list_merge(&l, &other, "nvml");
        xid_list_free(&l);
        return 0;
}
