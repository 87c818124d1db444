/* Unit tests for src/util: buf, escape, parse, fileio, deadline. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/buf.h"
#include "util/deadline.h"
#include "util/escape.h"
#include "util/fileio.h"
#include "util/parse.h"
#include "util/spawn.h"

static void test_buf_cap(void **state)
{
        (void)state;
        struct buf b = BUF_INIT(8);
        assert_int_equal(buf_puts(&b, "abcd"), 0);
        assert_int_equal(buf_puts(&b, "efgh"), 0);
        assert_int_equal(buf_puts(&b, "i"), -E2BIG);       /* cap reached: unchanged */
        assert_string_equal(buf_str(&b), "abcdefgh");
        assert_int_equal(b.len, 8);
        buf_reset(&b);
        assert_int_equal(buf_printf(&b, "%d-%s", 42, "x"), 0);
        assert_string_equal(buf_str(&b), "42-x");
        char *s = buf_steal(&b);
        assert_string_equal(s, "42-x");
        free(s);
        assert_null(b.data);
        buf_free(&b);
}

struct esc_case {
        const char *in;
        size_t len;
        const char *out;
};

static void test_esc_terminal(void **state)
{
        (void)state;
        static const struct esc_case cases[] = {
                { "plain text", 10, "plain text" },
                { "a\nb\tc", 5, "a\\nb\\tc" },
                { "\033[31mred\033[0m", 12, "\\e[31mred\\e[0m" },       /* escape sequence defused */
                { "back\\slash", 10, "back\\\\slash" },
                { "nul\0x", 5, "nul\\x00x" },
                { "caf\xc3\xa9", 5, "caf\xc3\xa9" },                    /* valid UTF-8 passes */
                { "bad\xff\xfe", 5, "bad\\xff\\xfe" },                  /* invalid bytes escaped */
                { "\xc2\x9b" "31m", 5, "\\xc2\\x9b31m" },               /* C1 CSI escaped */
                { "\xe2\x80\xa8", 3, "\\xe2\\x80\\xa8" },               /* U+2028 line separator */
                { "\xc0\xaf", 2, "\\xc0\\xaf" },                        /* overlong */
                { "\x7f", 1, "\\x7f" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct buf b = BUF_INIT(0);
                assert_int_equal(esc_terminal(&b, cases[i].in, cases[i].len), 0);
                assert_string_equal(buf_str(&b), cases[i].out);
                /* nothing below 0x20 and no DEL may come out */
                for (size_t k = 0; k < b.len; k++)
                        assert_true((unsigned char)b.data[k] >= 0x20 && (unsigned char)b.data[k] != 0x7f);
                buf_free(&b);
        }
}

/* Each output, read back by bash, is the input again (the integration test t_printed_commands
 * pastes such words into a shell); here the exact forms. */
static void test_esc_shell(void **state)
{
        (void)state;
        static const struct esc_case cases[] = {
                { "/tmp/gpu-1_a.b:c,d@e%f+g=h", 26, "/tmp/gpu-1_a.b:c,d@e%f+g=h" },      /* bare */
                { "", 0, "''" },
                { "/tmp/a b", 8, "'/tmp/a b'" },
                { "it's", 4, "'it'\\''s'" },
                { "$HOME `x` \\ *", 13, "'$HOME `x` \\ *'" },                /* no expansion in '' */
                { "caf\xc3\xa9 x", 7, "'caf\xc3\xa9 x'" },
                { "/tmp/a\nb", 8, "$'/tmp/a\\nb'" },
                { "q'\033\\", 4, "$'q\\'\\e\\\\'" },
                { "bad\xff", 4, "$'bad\\xff'" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct buf b = BUF_INIT(0);
                assert_int_equal(esc_shell(&b, cases[i].in, cases[i].len), 0);
                assert_string_equal(buf_str(&b), cases[i].out);
                for (size_t k = 0; k < b.len; k++)
                        assert_true((unsigned char)b.data[k] >= 0x20 && (unsigned char)b.data[k] != 0x7f);
                buf_free(&b);
        }
        char *q = esc_shell_dup("/tmp/a b");
        assert_string_equal(q, "'/tmp/a b'");
        free(q);
}

static void test_utf8_repair(void **state)
{
        (void)state;
        struct buf b = BUF_INIT(0);
        assert_int_equal(esc_utf8_repair(&b, "ok\xff" "x\0y", 6), 0);
        assert_string_equal(buf_str(&b), "ok\xef\xbf\xbdx\xef\xbf\xbdy");
        assert_true(utf8_valid_all(b.data, b.len));
        assert_false(utf8_valid_all("a\xffz", 3));
        assert_false(utf8_valid_all("a\0z", 3));
        buf_free(&b);
        char *j = cmdline_join("python\0train.py\0--lr\0" "3e-4\0", 26);
        assert_string_equal(j, "python train.py --lr 3e-4");
        free(j);
}

static void test_parse_numbers(void **state)
{
        (void)state;
        uint64_t v;
        int64_t i;
        unsigned u;
        assert_int_equal(parse_u64("18446744073709551615", &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(parse_u64("18446744073709551616", &v), -ERANGE);
        assert_int_equal(parse_u64("12x", &v), -EINVAL);
        assert_int_equal(parse_u64("", &v), -EINVAL);
        assert_int_equal(parse_u64("-1", &v), -EINVAL);
        assert_int_equal(parse_i64("-9223372036854775808", &i), 0);
        assert_true(i == INT64_MIN);
        assert_int_equal(parse_i64("9223372036854775808", &i), -ERANGE);
        assert_int_equal(parse_uint_range("7", 0, 7, &u), 0);
        assert_int_equal(u, 7);
        assert_int_equal(parse_uint_range("8", 0, 7, &u), -ERANGE);
        const char *end;
        assert_int_equal(parse_u64_prefix("0x1B:00", 16, &v, &end), 0);
        assert_int_equal(v, 0x1b);
        assert_string_equal(end, ":00");
}

static void test_parse_duration_size(void **state)
{
        (void)state;
        static const struct { const char *s; int ret; uint64_t ms; } d[] = {
                { "5s", 0, 5000 }, { "250ms", 0, 250 }, { "1.5s", 0, 1500 }, { "2m", 0, 120000 },
                { "1h", 0, 3600000 }, { "3", 0, 3000 }, { "0", 0, 0 }, { "-1s", -EINVAL, 0 },
                { "5x", -EINVAL, 0 }, { "", -EINVAL, 0 }, { "s", -EINVAL, 0 }, { " 5s", -EINVAL, 0 },
        };
        for (size_t k = 0; k < sizeof(d) / sizeof(d[0]); k++) {
                uint64_t ms = 12345;
                assert_int_equal(parse_duration_ms(d[k].s, &ms), d[k].ret);
                if (d[k].ret == 0)
                        assert_int_equal(ms, d[k].ms);
                else
                        assert_int_equal(ms, 12345); /* untouched on error */
        }
        uint64_t m;
        assert_int_equal(parse_size_mib("2GiB", &m), 0);
        assert_int_equal(m, 2048);
        assert_int_equal(parse_size_mib("512", &m), 0);
        assert_int_equal(m, 512);
        assert_int_equal(parse_size_mib("2 GiB", &m), -EINVAL);
}

static void test_read_file_at(void **state)
{
        (void)state;
        char dir[] = "/tmp/gv-test-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[256];
        snprintf(path, sizeof(path), "%s/f", dir);
        /* larger than the first read so the retry path runs */
        char big[10000];
        memset(big, 'a', sizeof(big));
        assert_int_equal(write_file_atomic(path, big, sizeof(big)), 0);
        char *data;
        size_t len;
        assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 20, &data, &len), 0);
        assert_int_equal(len, sizeof(big));
        assert_int_equal(data[len], '\0');
        free(data);
        assert_int_equal(read_file_at(AT_FDCWD, path, 5000, &data, &len), -EFBIG);
        snprintf(path, sizeof(path), "%s/missing", dir);
        assert_int_equal(read_file_at(AT_FDCWD, path, 100, &data, &len), -ENOENT);
        snprintf(path, sizeof(path), "%s/a/b/c", dir);
        assert_int_equal(mkdir_p(path), 0);
        assert_int_equal(access(path, F_OK), 0);
        /* only regular files: a device never ends, a FIFO blocks (here: neither is read) */
        char *d = NULL;
        size_t dl = 0;
        assert_int_equal(read_file_at(AT_FDCWD, "/dev/zero", 1 << 20, &d, &dl), -FILEIO_ENOTREG);
        char fifo[300];
        snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(read_file_at(AT_FDCWD, fifo, 1 << 20, &d, &dl), -FILEIO_ENOTREG);
        assert_int_equal(read_file_at(AT_FDCWD, dir, 1 << 20, &d, &dl), -FILEIO_ENOTREG);
        assert_string_equal(fileio_strerror(-FILEIO_ENOTREG), "not a regular file");
        /* a file known too large is refused by its size, before a byte is read */
        char bigf[300];
        snprintf(bigf, sizeof(bigf), "%s/big", dir);
        int bfd = open(bigf, O_WRONLY | O_CREAT, 0600);
        assert_true(bfd >= 0);
        assert_int_equal(ftruncate(bfd, 200 << 20), 0);
        close(bfd);
        assert_int_equal(read_file_at(AT_FDCWD, bigf, 1 << 20, &d, &dl), -EFBIG);
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
}

static int quick(void *arg)
{
        return *(int *)arg * 2;
}

static int slow(void *arg)
{
        usleep(400 * 1000);
        *(int *)arg = 7; /* writes after the caller stopped waiting: must be its own memory */
        return 0;
}

static void test_deadline(void **state)
{
        (void)state;
        struct deadline_runner r = { 0 };
        int x = 21, res = 0;
        assert_int_equal(deadline_run(&r, quick, &x, NULL, 1000, &res), 0);
        assert_int_equal(res, 42);
        int *heap = malloc(sizeof(int));
        unsigned long long t0 = monotonic_ms();
        assert_int_equal(deadline_run(&r, slow, heap, free, 100, &res), -ETIMEDOUT);
        unsigned long long took = monotonic_ms() - t0;
        assert_true(took >= 90 && took < 350);
        assert_int_equal(r.abandoned, 1);
        /* the next call gets a fresh worker and works */
        assert_int_equal(deadline_run(&r, quick, &x, NULL, 1000, &res), 0);
        assert_int_equal(res, 42);
        deadline_runner_done(&r);
        usleep(500 * 1000); /* let the abandoned worker finish and free its argument */
}

/* The environment of a hook or a job, made before fork: the base without the names set, then
 * the names with their values; a NULL value removes only. */
static void test_env_build(void **state)
{
        (void)state;
        char *base[] = { (char *)"PATH=/bin", (char *)"GHOSTVRAM_GPU=7", (char *)"GHOSTVRAM_GPUX=keep",
                         (char *)"DROP=1", NULL };
        const char *names[] = { "GHOSTVRAM_GPU", "DROP", "NEW" };
        const char *values[] = { "0", NULL, "a=b c" };
        char **env = NULL;
        assert_int_equal(env_build(base, names, values, 3, &env), 0);
        assert_string_equal(env[0], "PATH=/bin");
        assert_string_equal(env[1], "GHOSTVRAM_GPUX=keep");
        assert_string_equal(env[2], "GHOSTVRAM_GPU=0");
        assert_string_equal(env[3], "NEW=a=b c");
        assert_null(env[4]);
        env_free(env);
        assert_int_equal(env_build(NULL, names, values, 3, &env), 0);
        assert_string_equal(env[0], "GHOSTVRAM_GPU=0");
        assert_string_equal(env[1], "NEW=a=b c");
        assert_null(env[2]);
        env_free(env);
        env_free(NULL);
}

/* The child of fork_pipe blocks no signal, whatever its parent blocks (watch and serve block
 * SIGINT/SIGTERM to take them by sigwait; a reclaim they start must still hear a stop). */
static void test_fork_pipe_unblocks(void **state)
{
        (void)state;
        sigset_t term, old;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        sigprocmask(SIG_BLOCK, &term, &old);
        int p[2];
        pid_t pid;
        assert_int_equal(fork_pipe(p, &pid), 0);
        if (pid == 0) {
                sigset_t now;
                sigprocmask(SIG_SETMASK, NULL, &now);
                char c = sigismember(&now, SIGTERM) ? 'B' : 'U';
                _exit(write(p[1], &c, 1) == 1 ? 0 : 1);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        char c = 0;
        assert_int_equal(read(p[0], &c, 1), 1);
        close(p[0]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_int_equal(c, 'U');
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_buf_cap),         cmocka_unit_test(test_esc_terminal),
                cmocka_unit_test(test_utf8_repair),     cmocka_unit_test(test_parse_numbers),
                cmocka_unit_test(test_parse_duration_size), cmocka_unit_test(test_read_file_at),
                cmocka_unit_test(test_deadline),        cmocka_unit_test(test_env_build),
                cmocka_unit_test(test_esc_shell),       cmocka_unit_test(test_fork_pipe_unblocks),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
