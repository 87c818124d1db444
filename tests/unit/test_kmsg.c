/* Unit tests for src/collect/kernel.c: /dev/kmsg records, saved-log lines, and the reader
 * (driven through an injectable read() that plays the kernel's answers: EINVAL for a small
 * buffer, EPIPE overruns, EAGAIN at the end). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "collect/kernel.h"

static const struct kmsg_time_opts no_boot = { .boot_time = -1, .now = -1 };

/* ---- records --------------------------------------------------------------------------------- */

static void test_record(void **state)
{
        (void)state;
        struct buf st = BUF_INIT(0);
        struct kmsg_record r;
        const char *rec = "6,1234,5678901,-;NVRM: hello world\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n";
        assert_int_equal(kmsg_parse_record(rec, strlen(rec), &no_boot, &st, &r), 0);
        assert_true(r.seq_known);
        assert_int_equal(r.seq, 1234);
        assert_int_equal(r.prio, 6);
        assert_true(r.monotonic_known);
        assert_true(fabs(r.monotonic - 5.678901) < 1e-9);
        assert_false(r.time_known);
        assert_string_equal(r.text, "NVRM: hello world");
        assert_int_equal(r.text_len, 17);
        assert_string_equal(r.raw, "6,1234,5678901,-;NVRM: hello world");
        assert_false(r.truncated);

        /* escapes undone: newline of a multi-line printk, backslash, ESC, UTF-8 bytes; NUL defused */
        rec = "4,1,2,-,caller=T77;a\\x0ab\\x5cc\\x1bd\\xe2\\x80\\xa6\\x00e\\xZZ\\x4";
        struct kmsg_time_opts t = { .boot_time = 1000, .now = -1 };
        assert_int_equal(kmsg_parse_record(rec, strlen(rec), &t, &st, &r), 0);
        assert_string_equal(r.text, "a\nb\\c\033d\xe2\x80\xa6?e\\xZZ\\x4");
        assert_int_equal(r.prio, 4);
        assert_true(r.time_known);
        assert_true(fabs(r.time - 1000.000002) < 1e-9);

        static const char *const bad[] = { "", "6,1,2;x", "a,1,2,-;x", "6,1,2,-", "6,,2,-;x",
                                           "99999999999999999999,1,2,-;x", "NVRM: Xid (PCI:0000:3b:00): 79" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(kmsg_parse_record(bad[i], strlen(bad[i]), &no_boot, &st, &r), -EINVAL);

        /* an overlong message is cut at KMSG_LINE_MAX */
        size_t n = 3 * KMSG_LINE_MAX;
        char *big = malloc(n + 32);
        int h = snprintf(big, 32, "3,9,9,-;");
        memset(big + h, 'x', n);
        assert_int_equal(kmsg_parse_record(big, (size_t)h + n, &no_boot, &st, &r), 0);
        assert_int_equal(r.text_len, KMSG_LINE_MAX);
        assert_true(r.truncated);
        assert_true(r.raw_len <= KMSG_LINE_MAX);
        free(big);
        buf_free(&st);
}

static void test_line_basics(void **state)
{
        (void)state;
        struct buf st = BUF_INIT(0);
        struct kmsg_record r;
        bool is_kmsg;
        assert_int_equal(kmsg_parse_line("", 0, &no_boot, &st, &r, &is_kmsg), -EINVAL);
        assert_int_equal(kmsg_parse_line("\r\n", 2, &no_boot, &st, &r, &is_kmsg), -EINVAL);
        const char *l = "[  1.500000] NVRM: x\r\n";
        assert_int_equal(kmsg_parse_line(l, strlen(l), &no_boot, &st, &r, &is_kmsg), 0);
        assert_false(is_kmsg);
        assert_string_equal(r.text, "NVRM: x");
        assert_string_equal(r.raw, "[  1.500000] NVRM: x");
        assert_true(r.monotonic_known);
        assert_false(r.seq_known);
        l = "6,5,1500000,-;NVRM: y";
        assert_int_equal(kmsg_parse_line(l, strlen(l), &no_boot, &st, &r, &is_kmsg), 0);
        assert_true(is_kmsg);
        assert_int_equal(r.seq, 5);
        /* a message that itself starts with a bracket is not eaten as a prefix */
        l = "[drm] Initialized nvidia-drm 0.0.0";
        assert_int_equal(kmsg_parse_line(l, strlen(l), &no_boot, &st, &r, &is_kmsg), 0);
        assert_string_equal(r.text, "[drm] Initialized nvidia-drm 0.0.0");
        /* NUL bytes in a line never reach the text */
        assert_int_equal(kmsg_parse_line("NVRM: a\0b", 9, &no_boot, &st, &r, &is_kmsg), 0);
        assert_int_equal(r.text_len, 9);
        assert_int_equal(memcmp(r.text, "NVRM: a?b", 9), 0);
        buf_free(&st);
}

static void test_iso8601(void **state)
{
        (void)state;
        static const struct { const char *s; int used; double t; } cases[] = {
                { "2026-11-30T10:11:12Z", 20, 1796033472 },
                { "2026-11-30T10:11:12+0100 host", 24, 1796029872 },
                { "2026-11-30T10:11:12.123456+01:00", 32, 1796029872.123456 },
                { "2025-01-25T10:34:54,859532+00:00", 32, 1737801294.859532 },
                { "2026-11-30 10:11", 16, 1796033460 },               /* local: TZ=UTC here */
                { "2026-11-30", 10, 1795996800 },
                { "2026-11-30_10:11:12-05", 22, 1796051472 },
                { "2026-02-30T00:00:00Z", -EINVAL, 0 },               /* no such day, not March 2 */
                { "2024-02-29T00:00:00Z", 20, 1709164800 },           /* a leap day */
                { "2100-02-29", -EINVAL, 0 },                         /* 2100 is no leap year */
                { "2026-04-31", -EINVAL, 0 },
                { "2026-13-01", -EINVAL, 0 },
                { "2026-11-30T24:00:00Z", -EINVAL, 0 },
                { "26-11-30", -EINVAL, 0 },
                { "2026-11-30T10:11:12+25:00", -EINVAL, 0 },
                { "", -EINVAL, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                double t = -1;
                print_message("%s\n", cases[i].s);
                assert_int_equal(kmsg_parse_iso8601(cases[i].s, strlen(cases[i].s), &t), cases[i].used);
                if (cases[i].used > 0)
                        assert_true(fabs(t - cases[i].t) < 1e-6);
        }
}

static void test_boot_time(void **state)
{
        (void)state;
        double b;
        assert_int_equal(kmsg_boot_time(NULL, &b), 0);
        double now = (double)time(NULL);
        assert_true(b <= now + 1 && b > now - 50.0 * 365 * 86400);
}

static void test_open_errors(void **state)
{
        (void)state;
        char msg[512];
        kmsg_open_error(EACCES, "/dev/kmsg", msg, sizeof(msg));
        assert_non_null(strstr(msg, "cannot read /dev/kmsg"));
        assert_non_null(strstr(msg, "dmesg_restrict"));
        assert_non_null(strstr(msg, "Run as root"));
        assert_non_null(strstr(msg, "journalctl -k -o short-iso > FILE"));
        assert_non_null(strstr(msg, "dmesg > FILE"));
        assert_non_null(strstr(msg, "--kmsg FILE"));
        assert_null(strchr(msg, '\n'));
        kmsg_open_error(EPERM, "/dev/kmsg", msg, sizeof(msg));
        assert_non_null(strstr(msg, "dmesg_restrict"));

        struct kmsg_reader r;
        assert_int_equal(kmsg_reader_open_kmsg(&r, "/nonexistent/kmsg", false, &no_boot, msg, sizeof(msg)), -ENOENT);
        assert_non_null(strstr(msg, "cannot open /nonexistent/kmsg"));
        kmsg_reader_close(&r);
        assert_int_equal(kmsg_reader_open_file(&r, "/nonexistent/log", false, &no_boot, msg, sizeof(msg)), -ENOENT);
        assert_non_null(strstr(msg, "/nonexistent/log"));
        kmsg_reader_close(&r);
        assert_int_equal(kmsg_reader_open_file(&r, GV_FIXTURES, false, &no_boot, msg, sizeof(msg)), -EISDIR);
        assert_non_null(strstr(msg, "is a directory"));
        kmsg_reader_close(&r);
}

/* ---- the reader over a scripted read() --------------------------------------------------- */

struct step {
        int err;                /* errno to fail with, or 0 */
        const char *data;       /* one record (kmsg mode) or some bytes (line mode) */
        size_t need;            /* kmsg mode: EINVAL while the buffer is smaller */
};

struct script {
        const struct step *steps;
        size_t n, next;
        unsigned calls;
        size_t last_len;
        size_t chunk;           /* line mode: hand out at most this many bytes per read */
        size_t off;             /* inside the current step's data */
};

static ssize_t scripted_read(int fd, void *buf, size_t len, void *ctx)
{
        struct script *s = ctx;
        (void)fd;
        s->calls++;
        s->last_len = len;
        if (s->calls > 10000)
                fail_msg("the reader keeps calling read()");
        if (s->next >= s->n)
                return 0;
        const struct step *st = &s->steps[s->next];
        if (st->err) {
                s->next++;
                errno = st->err;
                return -1;
        }
        size_t dl = strlen(st->data);
        if (s->chunk == 0) {
                if (len < st->need) {
                        errno = EINVAL;
                        return -1;
                }
                if (dl > len)
                        dl = len;
                memcpy(buf, st->data, dl);
                s->next++;
                return (ssize_t)dl;
        }
        size_t n = dl - s->off;
        if (n > s->chunk)
                n = s->chunk;
        if (n > len)
                n = len;
        memcpy(buf, st->data + s->off, n);
        s->off += n;
        if (s->off == dl) {
                s->off = 0;
                s->next++;
        }
        return (ssize_t)n;
}

static void test_reader_kmsg(void **state)
{
        (void)state;
        static const struct step steps[] = {
                { 0, "6,10,1000000,-;NVRM: first\n SUBSYSTEM=pci\n", 0 },
                { EPIPE, NULL, 0 },                                     /* records 11-19 overwritten */
                { 0, "3,20,2000000,-;NVRM: big record", 10000 },        /* EINVAL until the buffer grows */
                { 0, "garbage without a header", 0 },                   /* skipped, never fatal */
                { EINTR, NULL, 0 },
                { 0, "3,21,3000000,-;NVRM: a\\x0amulti-line\\x0amessage", 0 },
                { EAGAIN, NULL, 0 },                                    /* the end of a dump */
        };
        struct script s = { .steps = steps, .n = sizeof(steps) / sizeof(steps[0]) };
        struct kmsg_reader r;
        struct kmsg_record rec;
        kmsg_reader_init_fd(&r, -1, KMSG_SRC_KMSG, false, &no_boot, scripted_read, &s);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_int_equal(rec.seq, 10);
        assert_string_equal(rec.text, "NVRM: first");
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_int_equal(rec.seq, 20);
        assert_string_equal(rec.text, "NVRM: big record");
        assert_int_equal(r.overruns, 1);
        assert_int_equal(r.record_buf_size, 2 * KMSG_RECORD_BUF);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_int_equal(rec.seq, 21);
        assert_string_equal(rec.text, "NVRM: a\nmulti-line\nmessage");
        assert_int_equal(kmsg_reader_next(&r, &rec), 0);
        assert_int_equal(r.records, 3);
        kmsg_reader_close(&r);

        /* following: EAGAIN means "nothing yet", and reading goes on afterwards */
        static const struct step follow_steps[] = {
                { 0, "6,1,1,-;NVRM: one", 0 },
                { EAGAIN, NULL, 0 },
                { 0, "6,2,2,-;NVRM: two", 0 },
                { EIO, NULL, 0 },
        };
        struct script f = { .steps = follow_steps, .n = 4 };
        kmsg_reader_init_fd(&r, -1, KMSG_SRC_KMSG, true, &no_boot, scripted_read, &f);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_int_equal(kmsg_reader_next(&r, &rec), -EAGAIN);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_string_equal(rec.text, "NVRM: two");
        assert_int_equal(kmsg_reader_next(&r, &rec), -EIO);
        kmsg_reader_close(&r);
}

static void test_reader_kmsg_einval_bounded(void **state)
{
        (void)state;
        static const struct step steps[] = { { 0, "6,1,1,-;x", 4u << 20 } };
        struct script s = { .steps = steps, .n = 1 };
        struct kmsg_reader r;
        struct kmsg_record rec;
        kmsg_reader_init_fd(&r, -1, KMSG_SRC_KMSG, false, &no_boot, scripted_read, &s);
        assert_int_equal(kmsg_reader_next(&r, &rec), -EINVAL);
        assert_int_equal(r.record_buf_size, KMSG_RECORD_BUF_MAX);
        assert_int_equal(s.last_len, KMSG_RECORD_BUF_MAX);
        assert_true(s.calls < 16);
        kmsg_reader_close(&r);
}

/* A saved log with every kind of line; the result must not depend on how read() splits it. */
static const char saved_log[] =
        "[   49.261458] NVRM: The NVIDIA GPU 0000:01:00.0\r\n"
        "               NVRM: (PCI ID: 10de:1b80) installed in this system has\n"
        "               NVRM: fallen off the bus and is not responding to commands.\n"
        "\n"
        "6,1002,90000000,-;NVRM: Xid (PCI:0000:3b:00): 45, pid=1, name=p, Ch 00000001\n"
        " SUBSYSTEM=pci\n"
        " DEVICE=+pci:0000:3b:00.0\n"
        "Nov 29 11:28:11 zeus kernel: [  219.470994] NVRM: Xid (PCI:0000:0c:00): 31, pid=11461, x\n"
        "   \n"
        "NVRM: last line without newline";

static void check_saved_log(size_t chunk)
{
        struct script s = { .steps = (const struct step[]){ { 0, saved_log, 0 } }, .n = 1, .chunk = chunk };
        struct kmsg_reader r;
        struct kmsg_record rec;
        print_message("chunk %zu\n", chunk);
        kmsg_reader_init_fd(&r, -1, KMSG_SRC_FILE, false, &no_boot, scripted_read, &s);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_string_equal(rec.text, "NVRM: The NVIDIA GPU 0000:01:00.0\n"
                                      "NVRM: (PCI ID: 10de:1b80) installed in this system has\n"
                                      "NVRM: fallen off the bus and is not responding to commands.");
        assert_non_null(strstr(rec.raw, "\n               NVRM: fallen off"));
        assert_true(fabs(rec.monotonic - 49.261458) < 1e-9);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_true(rec.seq_known);
        assert_int_equal(rec.seq, 1002);
        assert_string_equal(rec.text, "NVRM: Xid (PCI:0000:3b:00): 45, pid=1, name=p, Ch 00000001");
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_string_equal(rec.text, "NVRM: Xid (PCI:0000:0c:00): 31, pid=11461, x");
        assert_true(rec.monotonic_known);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_string_equal(rec.text, "NVRM: last line without newline");
        assert_int_equal(kmsg_reader_next(&r, &rec), 0);
        assert_int_equal(kmsg_reader_next(&r, &rec), 0);
        assert_int_equal(r.records, 4);
        assert_int_equal(r.truncated, 0);
        kmsg_reader_close(&r);
}

static void test_reader_lines(void **state)
{
        (void)state;
        check_saved_log(0);     /* all at once */
        check_saved_log(1);     /* one byte per read */
        check_saved_log(7);
        check_saved_log(64);
}

static void test_reader_overlong(void **state)
{
        (void)state;
        size_t n = 3 * KMSG_LINE_MAX;
        char *log = malloc(n + 64);
        memset(log, 'A', n);
        strcpy(log + n, "\nNVRM: next\n");
        struct script s = { .steps = (const struct step[]){ { 0, log, 0 } }, .n = 1, .chunk = 1000 };
        struct kmsg_reader r;
        struct kmsg_record rec;
        kmsg_reader_init_fd(&r, -1, KMSG_SRC_FILE, false, &no_boot, scripted_read, &s);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_int_equal(rec.text_len, KMSG_LINE_MAX);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_string_equal(rec.text, "NVRM: next");
        assert_int_equal(kmsg_reader_next(&r, &rec), 0);
        assert_int_equal(r.truncated, 1);
        kmsg_reader_close(&r);

        /* continuation lines are capped too: a record never grows past KMSG_LINE_MAX */
        size_t lines = 40, per = 1000;
        char *cont = malloc(lines * (per + 2) + 32);
        size_t off = (size_t)snprintf(cont, 32, "NVRM: head\n");
        for (size_t i = 0; i < lines; i++) {
                cont[off++] = ' ';
                memset(cont + off, 'c', per);
                off += per;
                cont[off++] = '\n';
        }
        cont[off] = '\0';
        struct script s2 = { .steps = (const struct step[]){ { 0, cont, 0 } }, .n = 1 };
        kmsg_reader_init_fd(&r, -1, KMSG_SRC_FILE, false, &no_boot, scripted_read, &s2);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_true(rec.text_len <= KMSG_LINE_MAX);
        assert_true(rec.truncated);
        assert_int_equal(kmsg_reader_next(&r, &rec), 0);
        kmsg_reader_close(&r);
        free(cont);
        free(log);
}

static void test_reader_follow_pipe(void **state)
{
        (void)state;
        int p[2];
        assert_int_equal(pipe(p), 0);
        struct kmsg_reader r;
        struct kmsg_record rec;
        kmsg_reader_init_fd(&r, p[0], KMSG_SRC_STDIN, true, &no_boot, NULL, NULL);
        assert_int_equal(kmsg_reader_next(&r, &rec), -EAGAIN);        /* nothing yet: no blocking */
        assert_int_equal(write(p[1], "NVRM: a\nNVRM: b\n", 16), 16);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_string_equal(rec.text, "NVRM: a");
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);             /* given out while waiting */
        assert_string_equal(rec.text, "NVRM: b");
        assert_int_equal(kmsg_reader_next(&r, &rec), -EAGAIN);
        assert_int_equal(write(p[1], "NVRM: c\n", 8), 8);
        assert_int_equal(kmsg_reader_next(&r, &rec), 1);
        assert_string_equal(rec.text, "NVRM: c");
        close(p[1]);
        assert_int_equal(kmsg_reader_next(&r, &rec), 0);              /* writer gone: the end */
        kmsg_reader_close(&r);
        close(p[0]);
}

static void test_reader_fixture(void **state)
{
        (void)state;
        char path[512], err[256];
        snprintf(path, sizeof(path), "%s/kmsg/kmsg-raw.txt", GV_FIXTURES);
        struct kmsg_reader r;
        struct kmsg_record rec;
        assert_int_equal(kmsg_reader_open_file(&r, path, false, &no_boot, err, sizeof(err)), 0);
        assert_string_equal(kmsg_source_name(r.source), "file");
        uint64_t seqs[8];
        size_t n = 0;
        int k;
        while ((k = kmsg_reader_next(&r, &rec)) > 0 && n < 8) {
                assert_true(rec.seq_known);
                seqs[n++] = rec.seq;
                assert_null(strstr(rec.text, "SUBSYSTEM="));
        }
        assert_int_equal(k, 0);
        assert_int_equal(n, 6);
        assert_int_equal(seqs[0], 1001);
        assert_int_equal(seqs[5], 1006);
        kmsg_reader_close(&r);
        assert_string_equal(kmsg_source_name(KMSG_SRC_KMSG), "kmsg");
        assert_string_equal(kmsg_source_name(KMSG_SRC_STDIN), "stdin");
}

int main(void)
{
        setenv("TZ", "UTC", 1);
        tzset();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_record),                  cmocka_unit_test(test_line_basics),
                cmocka_unit_test(test_iso8601),                 cmocka_unit_test(test_boot_time),
                cmocka_unit_test(test_open_errors),             cmocka_unit_test(test_reader_kmsg),
                cmocka_unit_test(test_reader_kmsg_einval_bounded), cmocka_unit_test(test_reader_lines),
                cmocka_unit_test(test_reader_overlong),         cmocka_unit_test(test_reader_follow_pipe),
                cmocka_unit_test(test_reader_fixture),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
