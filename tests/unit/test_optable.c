/* Unit tests for cli/optable: a table read by cli_parse, each kind stored where its offset says,
 * each bad value said in its sentence (with the range's top), a path "" refused, the given
 * flag, an alias, an option that ends the options, a short-only one, an unexpected argument,
 * --help, a common option through the same reading, and the rules between options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <getopt.h>
#include <cmocka.h>

#include "cli/cli.h"

struct t_opts {
        struct cli_common c;
        bool flag, seen;
        const char *path, *gpu;
        unsigned n;
        uint64_t ms, mib;
        int fn_calls;
};

static int fn(void *ctx, const char *arg, const char *cmd)
{
        (void)arg, (void)cmd;
        ((struct t_opts *)ctx)->fn_calls++;
        return 0;
}

#define F(f) offsetof(struct t_opts, f)
static const struct cli_opt table[] = {
        { "flag", 'f', CO_FLAG, F(flag), .fn = fn },
        { "path", 'p', CO_PATH, F(path) },
        { "count", 'n', CO_UINT, F(n), 1, 9, "--count: '%s' is not from 1 to %llu", CO_SEEN(F(seen)), .alias = 'N' },
        { "wait", 'w', CO_MS, F(ms), 1, 60000, "--wait: '%s' is not a duration up to a minute" },
        { "mib", 'm', CO_MIB, F(mib), 1, 1024, "--mib: '%s' is not a size up to 1 GiB" },
        { "gpu", 'g', CO_GPU, F(gpu) },
        { "d", 'd', CO_FN, .fn = fn, .short_only = true },
        { "last", 'l', CO_FLAG, F(flag), .last = true },
        { 0 },
};
#undef F

static void usage(FILE *f)
{
        fputs("usage\n", f);
}

/* Standard error into a temporary file from capture_begin to capture_end, which reads it into
 * said. */
static int saved_fd = -1;
static FILE *captured;

static void capture_begin(void)
{
        fflush(stderr);
        saved_fd = dup(STDERR_FILENO);
        captured = tmpfile();
        assert_non_null(captured);
        dup2(fileno(captured), STDERR_FILENO);
}

static void capture_end(char *said, size_t len)
{
        fflush(stderr);
        dup2(saved_fd, STDERR_FILENO);
        close(saved_fd);
        rewind(captured);
        size_t n = fread(said, 1, len - 1, captured);
        said[n] = '\0';
        fclose(captured);
}

/* cli_parse of argv (NULL-ended) into o, what it said on stderr into said: its return. */
static int parse(struct t_opts *o, char *said, size_t len, const char *const *args)
{
        int argc = 0;
        while (args[argc])
                argc++;
        memset(o, 0, sizeof(*o));
        cli_common_init(&o->c, CLI_JSON | CLI_CALL_TIMEOUT);
        cli_argc = argc;
        cli_argv = (char **)args;
        const struct cli_parse p = { "t", "hd:", table, o, &o->c, usage, .english = true };
        capture_begin();
        int r = cli_parse(&p, argc, (char **)args);
        capture_end(said, len);
        return r;
}

static void test_kinds(void **state)
{
        (void)state;
        struct t_opts o;
        char said[512];
        const char *const a[] = { "t", "--flag", "--path", "/x", "--count", "7", "--wait", "2s", "--mib", "1GiB",
                                  "--gpu", "0000:3b:00.0", "-d", "5", "--json", "--call-timeout", "3s", NULL };
        assert_int_equal(parse(&o, said, sizeof(said), a), EXIT_OK);
        assert_string_equal(said, "");
        assert_true(o.flag && o.seen && o.c.json);
        assert_string_equal(o.path, "/x");
        assert_int_equal(o.n, 7);
        assert_int_equal(o.ms, 2000);
        assert_int_equal(o.mib, 1024);
        assert_string_equal(o.gpu, "0000:3b:00.0");
        assert_int_equal(o.fn_calls, 2); /* --flag's, -d's */
        assert_int_equal(o.c.src.timeout_ms, 3000);
        assert_int_equal(o.c.given, CLI_JSON | CLI_CALL_TIMEOUT);
        /* an abbreviation, and the alias */
        const char *const b[] = { "t", "--cou", "2", NULL };
        assert_int_equal(parse(&o, said, sizeof(said), b), EXIT_OK);
        assert_int_equal(o.n, 2);
        assert_false(o.flag);
}

static void test_refused(void **state)
{
        (void)state;
        struct t_opts o;
        char said[512];
        static const struct {
                const char *args[4];
                const char *said;
        } cases[] = {
                { { "t", "--count", "10" }, "ghostvram t: --count: '10' is not from 1 to 9\n" },
                { { "t", "--wait", "0" }, "ghostvram t: --wait: '0' is not a duration up to a minute\n" },
                { { "t", "--mib", "2GiB" }, "ghostvram t: --mib: '2GiB' is not a size up to 1 GiB\n" },
                { { "t", "--gpu", "x" }, "ghostvram t: --gpu: 'x' is not a GPU index, UUID or PCI bus id\n" },
                { { "t", "--path", "" }, "ghostvram t: --path: an empty path; see 'ghostvram help t'\n" },
                { { "t", "extra" }, "ghostvram t: unexpected argument 'extra' (see --help)\n" },
                { { "t", "--bogus" }, "ghostvram t: unknown option '--bogus'; see 'ghostvram help t'\n" },
                { { "t", "--proc", "/p" }, "ghostvram t: option '--proc' is not accepted by t; see 'ghostvram help t'\n" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                assert_int_equal(parse(&o, said, sizeof(said), cases[i].args), EXIT_USAGE);
                assert_string_equal(said, cases[i].said);
        }
}

static void test_help_and_last(void **state)
{
        (void)state;
        struct t_opts o;
        char said[512];
        const char *const h[] = { "t", "--flag", "-h", "--count", "99", NULL };
        assert_int_equal(parse(&o, said, sizeof(said), h), CLI_HELP);
        /* --last ends the options: what follows is left for the command */
        const char *const l[] = { "t", "--last", "--count", "99", NULL };
        assert_int_equal(parse(&o, said, sizeof(said), l), EXIT_OK);
        assert_int_equal(optind, 2);
        assert_int_equal(o.n, 0);
}

static void test_rules(void **state)
{
        (void)state;
        struct t_opts o;
        char said[512];
        const char *const a[] = { "t", NULL };
        parse(&o, said, sizeof(said), a); /* cli_argv for the messages */
        assert_int_equal(CLI_RULES("t", { false, "first" }, { false, "second" }), 0);
        capture_begin();
        int r = CLI_RULES("t", { false, "first" }, { true, "second" }, { true, "third" });
        capture_end(said, sizeof(said));
        assert_int_equal(r, -1);
        assert_string_equal(said, "ghostvram t: second\n");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kinds),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_help_and_last),
                cmocka_unit_test(test_rules),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
