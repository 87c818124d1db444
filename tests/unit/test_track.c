/* Unit tests for track/ledger_read: the ledger parser on hand-built files — pairing of
 * allocations and frees, VMM handles that outlive their release while mapped, exec, torn
 * tails, corrupt and misaligned records (re-synchronisation), bad headers, chunked feeding,
 * summaries by device and call site, frame names, file names, UUIDs, and the table of
 * outstanding allocations against a reference under heavy churn. */
#define _GNU_SOURCE 1 /* dl_iterate_phdr */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include "track/elf_sym.h"
#include "track/ledger_read.h"

struct img {
        uint8_t *b;
        size_t len, cap;
};

static void put(struct img *m, const void *p, size_t n)
{
        if (m->len + n > m->cap) {
                m->cap = (m->len + n) * 2 + 4096;
                m->b = realloc(m->b, m->cap);
                assert_non_null(m->b);
        }
        memcpy(m->b + m->len, p, n);
        m->len += n;
}

static void header(struct img *m)
{
        struct gvl_header h;
        memset(&h, 0, sizeof(h));
        memcpy(h.magic, GVL_MAGIC, sizeof(h.magic));
        h.version = GVL_VERSION;
        h.rec_size = GVL_REC_SIZE;
        h.pid = 4242;
        h.ppid = 1;
        h.start_ticks = 777;
        h.session = 99;
        h.bom = GVL_BOM;
        memcpy(h.comm, "python", 6);
        h.check = gvl_check(&h);
        put(m, &h, sizeof(h));
}

static const uint8_t uuid_a[16] = { 0xd0, 0x0d, 0xc1, 0xe4, 0x4f, 0xc8, 0xd7, 0x11,
                                    0xb5, 0x21, 0xde, 0x56, 0xe5, 0xe9, 0xe4, 0x6f };
static const uint8_t uuid_b[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static struct gvl_record rec(uint8_t kind, uint8_t api, uint64_t addr, uint64_t size, uint64_t aux)
{
        struct gvl_record r;
        memset(&r, 0, sizeof(r));
        r.kind = kind;
        r.api = api;
        r.addr = addr;
        r.size = size;
        r.aux = aux;
        r.device = 0;
        r.time_ns = 1000 + addr;
        return r;
}

static void emit(struct img *m, struct gvl_record r)
{
        r.check = gvl_check(&r);
        put(m, &r, sizeof(r));
}

static void alloc_at(struct img *m, uint64_t addr, uint64_t size, const uint8_t *uuid, uint64_t site)
{
        struct gvl_record r = rec(GVL_ALLOC, GVL_API_MEM_ALLOC, addr, size, 0);
        memcpy(r.u.site.uuid, uuid, 16);
        r.nframes = 2;
        r.u.site.frames[0] = site;
        r.u.site.frames[1] = 0x400100;
        emit(m, r);
}

static int parse(const struct img *m, struct track_ledger *l)
{
        return track_ledger_parse(m->b, m->len, l);
}

static void test_pairs(void **state)
{
        (void)state;
        struct img m = { 0 };
        struct track_ledger *l = malloc(sizeof(*l));
        header(&m);
        assert_int_equal(parse(&m, l), 0);
        assert_int_equal(l->records, 0);
        assert_int_equal(l->hdr.pid, 4242);
        assert_int_equal(l->hdr.session, 99);
        track_ledger_free(l);

        alloc_at(&m, 0x1000, 100, uuid_a, 0x400010);
        alloc_at(&m, 0x2000, 200, uuid_a, 0x400020);
        alloc_at(&m, 0x3000, 300, uuid_b, 0x400010);
        emit(&m, rec(GVL_FREE, GVL_API_MEM_FREE, 0x2000, 0, 0));
        emit(&m, rec(GVL_FREE, GVL_API_MEM_FREE, 0x9999, 0, 0)); /* never allocated here */
        assert_int_equal(parse(&m, l), 0);
        assert_int_equal(l->records, 5);
        assert_int_equal(l->allocs, 3);
        assert_int_equal(l->frees, 2);
        assert_int_equal(l->unmatched_frees, 1);
        assert_int_equal(l->skipped_bytes, 0);
        assert_int_equal(l->tail_bytes, 0);
        struct track_summary s;
        track_ledger_summary(l, NULL, &s);
        assert_int_equal(s.outstanding_bytes, 400);
        assert_int_equal(s.allocations, 2);
        /* one site (same frames) across both devices: 400 bytes in 2 */
        assert_int_equal(s.n_sites, 1);
        assert_int_equal(s.sites[0].bytes, 400);
        assert_int_equal(s.sites[0].count, 2);
        track_ledger_summary(l, uuid_a, &s);
        assert_int_equal(s.outstanding_bytes, 100);
        track_ledger_summary(l, uuid_b, &s);
        assert_int_equal(s.outstanding_bytes, 300);
        track_ledger_free(l);
        free(l);
        free(m.b);
}

static void test_sites_sorted(void **state)
{
        (void)state;
        struct img m = { 0 };
        struct track_ledger l;
        header(&m);
        alloc_at(&m, 0x1000, 10, uuid_a, 0x400010);
        alloc_at(&m, 0x2000, 500, uuid_a, 0x400020);
        alloc_at(&m, 0x3000, 20, uuid_a, 0x400010);
        alloc_at(&m, 0x4000, 7, uuid_a, 0x400030);
        assert_int_equal(parse(&m, &l), 0);
        struct track_summary s;
        track_ledger_summary(&l, uuid_a, &s);
        assert_int_equal(s.n_sites, 3);
        assert_int_equal(s.sites[0].bytes, 500);
        assert_int_equal(s.sites[0].frames[0], 0x400020);
        assert_int_equal(s.sites[1].bytes, 30);
        assert_int_equal(s.sites[1].count, 2);
        assert_int_equal(s.sites[2].bytes, 7);
        track_ledger_free(&l);
        free(m.b);
}

/* What the image m still has outstanding, parsed from scratch. */
static uint64_t outstanding(const struct img *m, uint8_t *ret_first_api)
{
        struct track_ledger l;
        struct track_summary s;
        assert_int_equal(parse(m, &l), 0);
        track_ledger_summary(&l, NULL, &s);
        if (ret_first_api)
                *ret_first_api = s.n_sites ? s.sites[0].api : 0;
        if (s.outstanding_bytes == 0)
                assert_int_equal(l.n, 0); /* nothing left in the table either (maps included) */
        track_ledger_free(&l);
        return s.outstanding_bytes;
}

static void test_vmm(void **state)
{
        (void)state;
        struct img m = { 0 };
        uint8_t api;
        header(&m);
        emit(&m, rec(GVL_CREATE, GVL_API_MEM_CREATE, 7, 2 << 20, 0));
        emit(&m, rec(GVL_MAP, GVL_API_MEM_MAP, 0x7e00000, 2 << 20, 7));
        emit(&m, rec(GVL_RELEASE, GVL_API_MEM_RELEASE, 7, 0, 0));
        /* released but still mapped: the memory stays (the VMM rule) */
        assert_int_equal(outstanding(&m, &api), 2 << 20);
        assert_int_equal(api, GVL_API_MEM_CREATE);
        emit(&m, rec(GVL_UNMAP, GVL_API_MEM_UNMAP, 0x7e00000, 2 << 20, 0));
        assert_int_equal(outstanding(&m, NULL), 0);
        /* unmapped first, released later */
        emit(&m, rec(GVL_CREATE, GVL_API_MEM_CREATE, 8, 4 << 20, 0));
        emit(&m, rec(GVL_MAP, GVL_API_MEM_MAP, 0x8000000, 4 << 20, 8));
        emit(&m, rec(GVL_UNMAP, GVL_API_MEM_UNMAP, 0x8000000, 4 << 20, 0));
        assert_int_equal(outstanding(&m, NULL), 4 << 20);
        emit(&m, rec(GVL_RELEASE, GVL_API_MEM_RELEASE, 8, 0, 0));
        assert_int_equal(outstanding(&m, NULL), 0);
        free(m.b);
}

static void test_exec(void **state)
{
        (void)state;
        struct img m = { 0 };
        header(&m);
        alloc_at(&m, 0x1000, 100, uuid_a, 1);
        emit(&m, rec(GVL_EXEC, 0, 0, 0, 0));
        alloc_at(&m, 0x1000, 5, uuid_a, 2);
        assert_int_equal(outstanding(&m, NULL), 5);
        free(m.b);
}

static void test_torn_and_corrupt(void **state)
{
        (void)state;
        struct img m = { 0 };
        struct track_ledger l;
        struct track_summary s;
        header(&m);
        alloc_at(&m, 0x1000, 100, uuid_a, 1);
        alloc_at(&m, 0x2000, 200, uuid_a, 1);
        size_t whole = m.len;
        alloc_at(&m, 0x3000, 300, uuid_a, 1);
        /* killed in the middle of the last append: 77 bytes of it */
        assert_int_equal(track_ledger_parse(m.b, whole + 77, &l), 0);
        assert_int_equal(l.records, 2);
        assert_int_equal(l.tail_bytes, 77);
        assert_int_equal(l.skipped_bytes, 0);
        track_ledger_free(&l);

        /* one flipped bit in the middle record: it is skipped, the others count */
        m.b[GVL_REC_SIZE * 2 + 20] ^= 0x10;
        assert_int_equal(parse(&m, &l), 0);
        assert_int_equal(l.records, 2);
        assert_int_equal(l.skipped_bytes, GVL_REC_SIZE);
        track_ledger_summary(&l, NULL, &s);
        assert_int_equal(s.outstanding_bytes, 400);
        track_ledger_free(&l);
        m.b[GVL_REC_SIZE * 2 + 20] ^= 0x10;

        /* a hole of zeros (a crash of the machine before the data reached the disk) */
        struct img z = { 0 };
        put(&z, m.b, GVL_REC_SIZE * 2);
        uint8_t zeros[GVL_REC_SIZE] = { 0 };
        put(&z, zeros, sizeof(zeros));
        put(&z, m.b + GVL_REC_SIZE * 2, m.len - GVL_REC_SIZE * 2);
        assert_int_equal(parse(&z, &l), 0);
        assert_int_equal(l.records, 3);
        assert_int_equal(l.skipped_bytes, GVL_REC_SIZE);
        track_ledger_free(&l);
        free(z.b);

        /* a short write misaligned everything after it: 7 stray bytes, then whole records */
        struct img mis = { 0 };
        put(&mis, m.b, GVL_REC_SIZE * 2);
        put(&mis, "garbage", 7);
        put(&mis, m.b + GVL_REC_SIZE * 2, m.len - GVL_REC_SIZE * 2);
        assert_int_equal(parse(&mis, &l), 0);
        assert_int_equal(l.records, 3);
        assert_int_equal(l.skipped_bytes, 7);
        assert_int_equal(l.tail_bytes, 0);
        track_ledger_free(&l);
        free(mis.b);
        free(m.b);
}

static void test_bad_headers(void **state)
{
        (void)state;
        struct img m = { 0 };
        struct track_ledger l;
        header(&m);
        alloc_at(&m, 0x1000, 100, uuid_a, 1);
        assert_int_equal(track_ledger_parse(m.b, 0, &l), -EBADMSG);
        assert_int_equal(track_ledger_parse(m.b, GVL_REC_SIZE - 1, &l), -EBADMSG);
        struct gvl_header *h = (struct gvl_header *)(void *)m.b;
        static const size_t offs[] = { offsetof(struct gvl_header, magic), offsetof(struct gvl_header, version),
                                       offsetof(struct gvl_header, rec_size), offsetof(struct gvl_header, bom),
                                       offsetof(struct gvl_header, pid) };
        for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
                m.b[offs[i]] ^= 0x40; /* the check no longer matches either */
                assert_int_equal(parse(&m, &l), -EBADMSG);
                m.b[offs[i]] ^= 0x40;
        }
        /* another version with a correct check: still refused */
        h->version = 2;
        h->check = gvl_check(h);
        assert_int_equal(parse(&m, &l), -EBADMSG);
        h->version = GVL_VERSION;
        h->bom = 0x04030201; /* a file from a host of the other byte order */
        h->check = gvl_check(h);
        assert_int_equal(parse(&m, &l), -EBADMSG);
        free(m.b);
}

static void test_chunked(void **state)
{
        (void)state;
        struct img m = { 0 };
        header(&m);
        for (uint64_t i = 1; i <= 40; i++)
                alloc_at(&m, i << 12, i, uuid_a, i % 3);
        for (uint64_t i = 1; i <= 40; i += 3)
                emit(&m, rec(GVL_FREE, GVL_API_MEM_FREE, i << 12, 0, 0));
        put(&m, "junk", 4);
        alloc_at(&m, 0x99000, 1000, uuid_a, 1);
        put(&m, "tail", 4);
        struct track_ledger whole, part;
        struct track_summary a, b;
        assert_int_equal(parse(&m, &whole), 0);
        static const size_t chunks[] = { 1, 3, 127, 128, 129, 1000 };
        for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
                track_ledger_init(&part);
                for (size_t off = 0; off < m.len; off += chunks[c]) {
                        size_t n = m.len - off < chunks[c] ? m.len - off : chunks[c];
                        assert_int_equal(track_ledger_feed(&part, m.b + off, n), 0);
                }
                track_ledger_finish(&part);
                assert_int_equal(part.records, whole.records);
                assert_int_equal(part.skipped_bytes, whole.skipped_bytes);
                assert_int_equal(part.tail_bytes, whole.tail_bytes);
                track_ledger_summary(&whole, NULL, &a);
                track_ledger_summary(&part, NULL, &b);
                assert_int_equal(a.outstanding_bytes, b.outstanding_bytes);
                assert_int_equal(a.allocations, b.allocations);
                track_ledger_free(&part);
        }
        assert_int_equal(whole.skipped_bytes, 4);
        assert_int_equal(whole.tail_bytes, 4);
        track_ledger_free(&whole);
        free(m.b);
}

static void test_churn(void **state)
{
        (void)state;
        /* 20000 allocations, frees in a scattered order: the table against a reference */
        enum { N = 20000 };
        static uint64_t size_of[N];
        static bool live[N];
        struct img m = { 0 };
        header(&m);
        uint64_t x = 12345, want = 0, want_n = 0;
        for (unsigned i = 0; i < N; i++) {
                size_of[i] = 1 + i % 977;
                live[i] = true;
                alloc_at(&m, 0x7f0000000000ull + (uint64_t)i * 0x200000, size_of[i], uuid_a, i % 5);
                if (i % 3 == 0) {
                        x = x * 6364136223846793005ull + 1442695040888963407ull;
                        unsigned j = (unsigned)((x >> 33) % (i + 1));
                        if (live[j]) {
                                live[j] = false;
                                emit(&m, rec(GVL_FREE, GVL_API_MEM_FREE, 0x7f0000000000ull + (uint64_t)j * 0x200000, 0, 0));
                        }
                }
        }
        for (unsigned i = 0; i < N; i++)
                if (live[i]) {
                        want += size_of[i];
                        want_n++;
                }
        struct track_ledger *l = malloc(sizeof(*l));
        struct track_summary *s = malloc(sizeof(*s));
        assert_int_equal(parse(&m, l), 0);
        assert_int_equal(l->unmatched_frees, 0);
        track_ledger_summary(l, NULL, s);
        assert_int_equal(s->outstanding_bytes, want);
        assert_int_equal(s->allocations, want_n);
        assert_int_equal(l->n, want_n);
        track_ledger_free(l);
        free(l);
        free(s);
        free(m.b);
}

static void test_names(void **state)
{
        (void)state;
        struct img m = { 0 };
        struct track_ledger l;
        char out[128];
        header(&m);
        struct gvl_record r = rec(GVL_MODULE, 0, 0x55550000, 0x2000, 0x55551000);
        snprintf(r.u.path, sizeof(r.u.path), "/opt/app/bin/train");
        emit(&m, r);
        assert_int_equal(parse(&m, &l), 0);
        assert_int_equal(l.n_modules, 1);
        track_frame_name(&l, 0x55551234, out, sizeof(out));
        assert_string_equal(out, "train+0x1234");
        track_frame_name(&l, 0x55553000, out, sizeof(out)); /* past the span */
        assert_string_equal(out, "0x55553000");
        track_ledger_free(&l);
        free(m.b);

        pid_t pid;
        uint64_t start;
        assert_true(track_ledger_name("1234-5678.gvl", &pid, &start));
        assert_int_equal(pid, 1234);
        assert_int_equal(start, 5678);
        static const char *const bad[] = { "0-1.gvl", "-1-2.gvl", "12-.gvl", "12-3.gvlx", ".12-3.tmp", "12-3",
                                           "a-3.gvl", "99999999999-1.gvl", "12--3.gvl", "+1-2.gvl" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (track_ledger_name(bad[i], &pid, &start))
                        fail_msg("'%s' accepted as a ledger name", bad[i]);

        uint8_t u[16];
        assert_int_equal(track_uuid_parse("GPU-d00dc1e4-4fc8-d711-b521-de56e5e9e46f", u), 0);
        assert_memory_equal(u, uuid_a, 16);
        assert_int_equal(track_uuid_parse("GPU-D00DC1E4-4FC8-D711-B521-DE56E5E9E46F", u), 0);
        assert_memory_equal(u, uuid_a, 16);
        assert_int_equal(track_uuid_parse("GPU-d00dc1e4", u), -EINVAL);
        assert_int_equal(track_uuid_parse("GPU-d00dc1e4-4fc8-d711-b521-de56e5e9e46f00", u), -EINVAL);
        assert_int_equal(track_uuid_parse("MIG-d00dc1e4-4fc8-d711-b521-de56e5e9e46f", u), -EINVAL);
        assert_string_equal(track_api_name(GVL_API_MEM_ALLOC_ASYNC), "cuMemAllocAsync");
        assert_string_equal(track_api_name(200), "?");
}

static int main_bias(struct dl_phdr_info *info, size_t size, void *data)
{
        (void)size;
        if (info->dlpi_name && info->dlpi_name[0])
                return 0;
        *(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
        return 1;
}

/* elf_symbolise on this very program, then on broken copies of it */
static void test_elf(void **state)
{
        (void)state;
        uintptr_t bias = 0;
        dl_iterate_phdr(main_bias, &bias);
        char name[64];
        uint64_t off = 0;
        uintptr_t fn = (uintptr_t)&test_names;
        assert_int_equal(elf_symbolise("/proc/self/exe", fn + 5 - bias, name, sizeof(name), &off), 0);
        assert_string_equal(name, "test_names");
        assert_int_equal(off, 5);
        /* a name longer than the buffer is cut, still terminated */
        assert_int_equal(elf_symbolise("/proc/self/exe", fn - bias, name, 5, &off), 0);
        assert_string_equal(name, "test");
        /* nothing there (the ELF header's own address) */
        assert_int_equal(elf_symbolise("/proc/self/exe", 0, name, sizeof(name), &off), -ENOENT);
        assert_int_equal(elf_symbolise("/", 0, name, sizeof(name), &off), -EBADMSG);
        assert_int_equal(elf_symbolise("/nonexistent/x", 0, name, sizeof(name), &off), -ENOENT);

        /* 300 copies of the first 256 KiB with bytes flipped in the headers and anywhere:
         * errors, never a crash or a read out of bounds */
        int in = open("/proc/self/exe", O_RDONLY);
        assert_true(in >= 0);
        static uint8_t img[256 * 1024];
        ssize_t len = read(in, img, sizeof(img));
        close(in);
        assert_true(len > 4096);
        char path[] = "/tmp/gv-test-elf.XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        uint64_t x = 99;
        for (int it = 0; it < 300; it++) {
                static uint8_t m[256 * 1024];
                memcpy(m, img, (size_t)len);
                for (int k = 0; k < 8; k++) {
                        x = x * 6364136223846793005ull + 1442695040888963407ull;
                        size_t at = (x >> 33) % (k < 4 ? 128 : (uint64_t)len);
                        m[at] ^= (uint8_t)(x >> 20);
                }
                size_t keep = it % 3 == 0 ? (size_t)((x >> 40) % (uint64_t)len) : (size_t)len;
                assert_int_equal(ftruncate(fd, 0), 0);
                assert_int_equal(pwrite(fd, m, keep, 0), (ssize_t)keep);
                int r = elf_symbolise(path, fn - bias, name, sizeof(name), &off);
                assert_true(r == 0 || r == -ENOENT || r == -EBADMSG || r == -ENOMEM);
                if (r == 0)
                        assert_true(strlen(name) < sizeof(name));
        }
        close(fd);
        unlink(path);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pairs),         cmocka_unit_test(test_sites_sorted),
                cmocka_unit_test(test_vmm),           cmocka_unit_test(test_exec),
                cmocka_unit_test(test_torn_and_corrupt), cmocka_unit_test(test_bad_headers),
                cmocka_unit_test(test_chunked),       cmocka_unit_test(test_churn),
                cmocka_unit_test(test_names),         cmocka_unit_test(test_elf),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
