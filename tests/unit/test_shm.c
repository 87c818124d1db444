/* Unit tests for collect/shm: the /proc/sysvipc/shm parser on the kernel's format (normal, a
 * kernel without the rss/swap columns, columns in another order, numbers at and past 64 bits,
 * garbage lines), /proc/meminfo, the "large" rule and the note's sentence; the /dev/shm reader
 * on a directory of its own (sizes, owners, the largest first, the entry cap). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "collect/shm.h"

#define S(x) x, sizeof(x) - 1
#define HDR "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n"

static void test_sysv_normal(void **state)
{
        (void)state;
        struct shm_sysv s;
        assert_int_equal(shm_parse_sysv(S(HDR
                "         0          3  1600               4194304  4242  4250      2  1000  1000  1000  1000 1700000100 1700000000 1700000000               2097152                  4096\n"
                "  -1091715  1507329   600             536870912  4242  4242      0  1001  1001     0     0          0          0 1700000000             536870912                     0\n"),
                                        &s), 0);
        assert_int_equal(s.n, 2);
        assert_int_equal(s.n_total, 2);
        assert_int_equal(s.skipped_lines, 0);
        assert_int_equal(s.segs[0].key, 0);
        assert_int_equal(s.segs[0].shmid, 3);
        assert_int_equal(s.segs[0].perms, 01600);
        assert_true(s.segs[0].perms & SHM_PERM_DEST);
        assert_int_equal(s.segs[0].size, 4194304);
        assert_int_equal(s.segs[0].cpid, 4242);
        assert_int_equal(s.segs[0].lpid, 4250);
        assert_int_equal(s.segs[0].nattch, 2);
        assert_true(s.segs[0].uid_known);
        assert_int_equal(s.segs[0].uid, 1000);
        assert_true(s.segs[0].rss_known);
        assert_int_equal(s.segs[0].rss, 2097152);
        assert_int_equal(s.segs[0].swap, 4096);
        assert_int_equal(s.segs[1].key, -1091715);
        assert_int_equal(s.segs[1].uid, 1001);
        /* what they occupy: rss + swap, not the size asked for */
        assert_int_equal(s.bytes, 2097152 + 4096 + 536870912ull);
        shm_sysv_clear(&s);
        /* a header and no segment: read, empty */
        assert_int_equal(shm_parse_sysv(S(HDR), &s), 0);
        assert_int_equal(s.n_total, 0);
        assert_int_equal(s.bytes, 0);
        shm_sysv_clear(&s);
}

static void test_sysv_missing_columns(void **state)
{
        (void)state;
        struct shm_sysv s;
        /* an old kernel: no rss, no swap; the size is what a segment may occupy */
        assert_int_equal(shm_parse_sysv(S("key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime ctime\n"
                                          "0 7 666 8192 12 13 1 0 0 0 0 0 0 0\n"),
                                        &s), 0);
        assert_int_equal(s.n, 1);
        assert_false(s.segs[0].rss_known);
        assert_int_equal(s.bytes, 8192);
        assert_int_equal(s.segs[0].perms, 0666);
        shm_sysv_clear(&s);
        /* another order, only size and cuid: columns by name; no uid column, cuid is the owner */
        assert_int_equal(shm_parse_sysv(S("cuid size\n77 100\n"), &s), 0);
        assert_int_equal(s.n, 1);
        assert_int_equal(s.segs[0].size, 100);
        assert_int_equal(s.segs[0].uid, 77);
        assert_int_equal(s.segs[0].shmid, -1);
        assert_int_equal(s.segs[0].cpid, 0);
        shm_sysv_clear(&s);
        /* no size column, no header, nothing: not this file */
        assert_int_equal(shm_parse_sysv(S("key shmid perms\n1 2 600\n"), &s), -EINVAL);
        assert_int_equal(shm_parse_sysv(S(""), &s), -EINVAL);
        assert_int_equal(shm_parse_sysv(S("\n\n  \n"), &s), -EINVAL);
}

static void test_sysv_huge_and_garbage(void **state)
{
        (void)state;
        struct shm_sysv s;
        assert_int_equal(shm_parse_sysv(S("key shmid perms size cpid rss swap\n"
                                          /* the largest size: kept, and the sum saturates */
                                          "1 1 600 18446744073709551615 10 18446744073709551615 18446744073709551615\n"
                                          "2 2 600 1 11 1 0\n"
                                          /* past 64 bits: not a segment */
                                          "3 3 600 18446744073709551616 12 0 0\n"
                                          /* a PID past int, negative size, 9 in an octal mode */
                                          "4 4 600 10 99999999999 0 0\n"
                                          "5 5 600 -10 13 0 0\n"
                                          "6 6 690 10 14 0 0\n"
                                          /* too few and too many fields, words */
                                          "7 7 600 10\n"
                                          "8 8 600 10 15 0 0 0\n"
                                          "key shmid perms size cpid rss swap\n"
                                          "\x01\xff garbage \n"
                                          "9 9 600 4096 16 4096 0"), /* no newline at the end */
                                        &s), 0);
        assert_int_equal(s.n_total, 3);
        assert_int_equal(s.skipped_lines, 8);
        assert_int_equal(s.segs[0].size, UINT64_MAX);
        assert_int_equal(s.bytes, UINT64_MAX);
        assert_int_equal(s.segs[2].shmid, 9);
        assert_int_equal(s.segs[2].cpid, 16);
        shm_sysv_clear(&s);
}

static void test_meminfo_and_rule(void **state)
{
        (void)state;
        uint64_t t, sh;
        bool tk, sk;
        assert_int_equal(shm_parse_meminfo(S("MemTotal:       16303412 kB\nMemFree:  100 kB\nShmemHugePages: 7 kB\n"
                                             "Shmem:            654321 kB\nShmemPmdMapped: 0 kB\n"),
                                           &t, &tk, &sh, &sk), 0);
        assert_true(tk && sk);
        assert_int_equal(t, 16303412ull * 1024);
        assert_int_equal(sh, 654321ull * 1024);
        assert_int_equal(shm_parse_meminfo(S("MemTotal: 1024 kB\n"), &t, &tk, &sh, &sk), 0);
        assert_true(tk);
        assert_false(sk);
        assert_int_equal(shm_parse_meminfo(S("ShmemHugePages: 7 kB\nMemTotal: x kB\n"), &t, &tk, &sh, &sk), -EINVAL);
        assert_int_equal(shm_parse_meminfo(S("MemTotal: 99999999999999999999 kB\n"), &t, &tk, &sh, &sk), -EINVAL);
        /* the kernel's unit or nothing (a fuzzer's "MemTotal: 4 2683": 4 bytes, a threshold of 0) */
        assert_int_equal(shm_parse_meminfo(S("MemTotal:      4 268375ey\nShmem: 9 kBx\n"), &t, &tk, &sh, &sk), -EINVAL);
        assert_int_equal(shm_parse_meminfo(S("MemTotal: 4\nShmem: 9 kB"), &t, &tk, &sh, &sk), 0);
        assert_false(tk);
        assert_true(sk && sh == 9 * 1024);
        assert_int_equal(shm_threshold(9), SHM_GIB);

        /* 1 GiB, or 10% of RAM when that is less */
        assert_int_equal(shm_threshold(0), SHM_GIB);
        assert_int_equal(shm_threshold(64 * SHM_GIB), SHM_GIB);
        assert_int_equal(shm_threshold(4 * SHM_GIB), 4 * SHM_GIB / 10);
        struct shm_report r = { .meminfo_read = true, .mem_total_known = true, .mem_total = 64 * SHM_GIB,
                                .shmem_known = true, .shmem = SHM_GIB, .sysv_read = true };
        r.sysv.bytes = 5;
        shm_judge(&r);
        assert_true(r.large);
        assert_true(r.total_from_meminfo);
        assert_int_equal(r.total, SHM_GIB);
        r.shmem = SHM_GIB - 1;
        shm_judge(&r);
        assert_false(r.large);
        /* no Shmem line: the parts */
        r.shmem_known = false;
        r.dir_read = true;
        r.dir.used = 7;
        shm_judge(&r);
        assert_false(r.total_from_meminfo);
        assert_int_equal(r.total, 12);
}

static void write_file(const char *dir, const char *name, size_t bytes)
{
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", dir, name);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        char buf[4096];
        memset(buf, 'x', sizeof(buf));
        for (size_t done = 0; done < bytes;) {
                size_t n = bytes - done < sizeof(buf) ? bytes - done : sizeof(buf);
                assert_int_equal(write(fd, buf, n), (ssize_t)n);
                done += n;
        }
        close(fd);
}

static void test_dir_reader(void **state)
{
        (void)state;
        char root[] = "/tmp/gv-shm-XXXXXX";
        assert_non_null(mkdtemp(root));
        char dir[256], proc[256], sub[300];
        snprintf(dir, sizeof(dir), "%s/shm", root);
        snprintf(proc, sizeof(proc), "%s/proc", root);
        snprintf(sub, sizeof(sub), "%s/sub", dir);
        assert_int_equal(mkdir(dir, 0700), 0);
        assert_int_equal(mkdir(sub, 0700), 0);
        write_file(dir, "small", 8192);
        write_file(dir, "big", 3 << 20);
        write_file(dir, "mid", 1 << 20);
        /* sparse: 1 GiB long, one block written: it occupies the block */
        char sp[300];
        snprintf(sp, sizeof(sp), "%s/sparse", dir);
        int fd = open(sp, O_WRONLY | O_CREAT, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 1 << 30), 0);
        close(fd);

        struct shm_opts o = { .proc_root = proc, .shm_dir = dir };
        struct shm_report *r = NULL;
        assert_int_equal(shm_collect(&o, &r), 0);
        assert_false(r->meminfo_read);
        assert_false(r->sysv_read);
        assert_true(r->dir_read);
        assert_true(r->dir.complete);
        assert_int_equal(r->dir.files, 4);
        assert_int_equal(r->dir.skipped_dirs, 1);
        assert_int_equal(r->dir.n_top, 4);
        assert_string_equal(r->dir.top[0].name, "big");
        assert_int_equal(r->dir.top[0].bytes, 3 << 20);
        assert_string_equal(r->dir.top[1].name, "mid");
        assert_string_equal(r->dir.top[2].name, "small");
        assert_string_equal(r->dir.top[3].name, "sparse");
        assert_int_equal(r->dir.top[3].bytes, 0);
        assert_int_equal(r->dir.files_bytes, (3 << 20) + (1 << 20) + 8192);
        /* a directory, not a filesystem's root (also where /tmp is a tmpfs): its files' sum */
        assert_false(r->dir.tmpfs);
        assert_int_equal(r->dir.used, r->dir.files_bytes);
        assert_int_equal(r->dir.n_owners, 1);
        assert_int_equal(r->dir.owners[0].uid, getuid());
        assert_int_equal(r->dir.owners[0].files, 4);
        assert_int_equal(r->total, r->dir.used);
        char *s = NULL;
        assert_int_equal(shm_describe(r, &s), 0);
        assert_non_null(strstr(s, ": 4 files of user "));
        assert_non_null(strstr(s, "host shared memory "));
        free(s);
        shm_report_free(r);

        /* the entry cap: not all looked at, and said */
        o.max_entries = 2;
        assert_int_equal(shm_collect(&o, &r), 0);
        assert_false(r->dir.complete);
        assert_int_equal(r->dir.files + r->dir.skipped_dirs, 2);
        s = NULL;
        assert_int_equal(shm_describe(r, &s), 0);
        assert_non_null(strstr(s, ", not all looked at)"));
        free(s);
        shm_report_free(r);

        /* a directory on a tmpfs it is not the root of (one in /dev/shm): still its files' sum,
         * never the whole filesystem's usage */
        char inshm[] = "/dev/shm/gv-shm-XXXXXX";
        assert_non_null(mkdtemp(inshm));
        write_file(inshm, "one", 1 << 20);
        struct shm_opts in = { .proc_root = proc, .shm_dir = inshm };
        assert_int_equal(shm_collect(&in, &r), 0);
        assert_false(r->dir.tmpfs);
        assert_int_equal(r->dir.used, 1 << 20);
        shm_report_free(r);
        snprintf(sp, sizeof(sp), "%s/one", inshm);
        assert_int_equal(unlink(sp), 0);
        assert_int_equal(rmdir(inshm), 0);

        /* nothing to read */
        struct shm_opts none = { .proc_root = proc, .shm_dir = proc };
        assert_int_equal(shm_collect(&none, &r), -ENODATA);
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

static void test_describe(void **state)
{
        (void)state;
        struct shm_report r = { .sysv_read = true, .total = 6 * SHM_GIB + SHM_GIB / 5 };
        struct shm_seg segs[4] = { { .cpid = 4242 }, { .cpid = 4242 }, { .cpid = 7 }, { .cpid = 0 } };
        r.sysv.segs = segs;
        r.sysv.n = r.sysv.n_total = 2;
        r.sysv.bytes = SHM_GIB / 5;
        char *s = NULL;
        assert_int_equal(shm_describe(&r, &s), 0);
        assert_string_equal(s, "host shared memory 6.2 GiB (SysV 204.8 MiB: 2 segments of PID 4242)");
        r.sysv.n = r.sysv.n_total = 4;
        assert_int_equal(shm_describe(&r, &s), 0);
        assert_string_equal(s, "host shared memory 6.2 GiB (SysV 204.8 MiB: 4 segments of PIDs 4242 and 7, 1 of them by a creator in another PID namespace)");
        /* every creator in a PID namespace the reader cannot see (the kernel shows 0) */
        r.sysv.segs = segs + 3;
        r.sysv.n = r.sysv.n_total = 1;
        assert_int_equal(shm_describe(&r, &s), 0);
        assert_string_equal(s, "host shared memory 6.2 GiB (SysV 204.8 MiB: 1 segment, its creator in another PID namespace)");
        /* only meminfo: the headline alone */
        struct shm_report m = { .meminfo_read = true, .total = 512 };
        assert_int_equal(shm_describe(&m, &s), 0);
        assert_string_equal(s, "host shared memory 512 bytes");
        /* one decimal never reads 1024 of the smaller unit */
        char *t = NULL;
        assert_int_equal(shm_size_text(SHM_GIB - 1, &t), 0);
        assert_string_equal(t, "1.0 GiB");
        assert_int_equal(shm_size_text(3 << 20, &t), 0);
        assert_string_equal(t, "3.0 MiB");
        assert_int_equal(shm_size_text(4096, &t), 0);
        assert_string_equal(t, "4 KiB");
        free(t);
        free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sysv_normal),      cmocka_unit_test(test_sysv_missing_columns),
                cmocka_unit_test(test_sysv_huge_and_garbage), cmocka_unit_test(test_meminfo_and_rule),
                cmocka_unit_test(test_dir_reader),       cmocka_unit_test(test_describe),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
