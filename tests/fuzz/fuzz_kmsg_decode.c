/* Fuzz the kernel-log decoders: arbitrary bytes as one /dev/kmsg record, as one saved-log line,
 * as a whole saved log (reader in line mode, split into reads of varying size), and as a
 * stream of /dev/kmsg records (reader in record mode, records separated by NUL bytes, with
 * EPIPE/EINVAL/EAGAIN answers mixed in). Nothing may crash, leak or hang. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collect/kernel.h"
#include "collect/xid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct feed {
        const uint8_t *data;
        size_t size, off;
        size_t chunk;
        unsigned calls;
        bool records;
};

static ssize_t feed_read(int fd, void *buf, size_t len, void *ctx)
{
        struct feed *f = ctx;
        (void)fd;
        if (++f->calls > 100000 || f->off >= f->size)
                return 0;
        if (f->records) {
                /* one NUL-separated piece per read; a leading 0x01/0x02/0x03 plays EPIPE/EINVAL/EAGAIN */
                const uint8_t *p = f->data + f->off;
                size_t left = f->size - f->off;
                const uint8_t *z = memchr(p, 0, left);
                size_t n = z ? (size_t)(z - p) : left;
                if (n >= 1 && p[0] >= 1 && p[0] <= 3) {
                        int err = p[0] == 1 ? EPIPE : p[0] == 2 ? EINVAL : EAGAIN;
                        if (err != EINVAL || len >= 65536)
                                f->off += 1;    /* EINVAL repeats until the reader grows its buffer */
                        errno = err;
                        return -1;
                }
                f->off += n + (z ? 1 : 0);
                if (n > len)
                        n = len;
                memcpy(buf, p, n);
                return (ssize_t)n;
        }
        size_t n = f->size - f->off;
        if (n > f->chunk)
                n = f->chunk;
        if (n > len)
                n = len;
        memcpy(buf, f->data + f->off, n);
        f->off += n;
        return (ssize_t)n;
}

static void drain(struct kmsg_reader *r, struct xid_list *l)
{
        struct xid_parser p;
        struct kmsg_record rec;
        xid_parser_init(&p, "fuzz");
        for (int i = 0, idle = 0; i < 100000 && idle < 8; i++) {
                int k = kmsg_reader_next(r, &rec);
                if (k == -EAGAIN) {
                        idle++; /* following: nothing yet; the feed may hold more after it */
                        continue;
                }
                if (k <= 0)
                        break;
                idle = 0;
                if (rec.text[rec.text_len] != '\0' || memchr(rec.text, 0, rec.text_len))
                        abort(); /* the contract: NUL-terminated, never holds NUL */
                xid_parser_feed(&p, &rec, l);
        }
        xid_parser_flush(&p, l);
        xid_parser_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *text = (const char *)data;
        if (size > 1 << 20)
                return 0;
        struct kmsg_time_opts t = { .boot_time = 1.7e9, .now = 1.8e9 };
        struct buf st = BUF_INIT(0);
        struct kmsg_record rec;
        bool is_kmsg;
        kmsg_parse_record(text, size, &t, &st, &rec);
        kmsg_parse_line(text, size, &t, &st, &rec, &is_kmsg);
        buf_free(&st);
        double d;
        kmsg_parse_iso8601(text, size, &d);
        char small[80];
        size_t n = size < sizeof(small) - 1 ? size : sizeof(small) - 1;
        memcpy(small, text, n);
        small[n] = '\0';
        xid_parse_since(small, 1.8e9, &d);
        char pci[16];
        xid_pci_parse(text, size, pci);

        struct xid_list l = { .max = 32 };
        struct feed f = { .data = data, .size = size, .chunk = size ? (size_t)data[0] % 97 + 1 : 1 };
        struct kmsg_reader r;
        kmsg_reader_init_fd(&r, -1, KMSG_SRC_FILE, false, &t, feed_read, &f);
        drain(&r, &l);
        kmsg_reader_close(&r);

        struct feed g = { .data = data, .size = size, .records = true };
        kmsg_reader_init_fd(&r, -1, KMSG_SRC_KMSG, size && data[0] & 1, &t, feed_read, &g);
        drain(&r, &l);
        kmsg_reader_close(&r);
        xid_list_free(&l);
        return 0;
}
