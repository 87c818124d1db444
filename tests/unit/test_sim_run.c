/* Unit tests for run/sim_run: `ghostvram sim`'s use cases called without argv: where init may
 * build a host, a simulated CUDA job started on a host made here (its processes as it reports
 * them, its context as the driver then sees it), and the errors of a GPU the host lacks and of
 * a directory that is no simulated host. (The command's bytes: t_sim*.sh.) */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim_host.h"

#include "render/sim_render.h"
#include "run/sim_run.h"
#include "util/fileio.h"

static char base[] = "/tmp/gv-test-simrun-XXXXXX";
static char host[256];

static int setup(void **state)
{
        (void)state;
        if (!mkdtemp(base))
                return -1;
        snprintf(host, sizeof(host), "%s/host", base);
        return sim_init_dir(host, 1, 4096, 100) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
        (void)state;
        /* the simulated driver's teardown may still write as a killed job's context goes */
        sim_host_remove(base);
        return 0;
}

static void test_init_target(void **state)
{
        (void)state;
        char path[512];
        unsigned mode = 0;
        snprintf(path, sizeof(path), "%s/new", base);
        assert_int_equal(sim_init_target(path, &mode), 0);            /* missing: init makes it */
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(sim_init_target(path, &mode), 0);            /* empty */
        snprintf(path, sizeof(path), "%s/new/file", base);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
        assert_int_equal(sim_init_target(path, &mode), -ENOTDIR);
        assert_true(S_ISREG(mode));
        snprintf(path, sizeof(path), "%s/new", base);
        assert_int_equal(sim_init_target(path, &mode), -ENOTEMPTY);
        assert_int_equal(sim_init_target(host, &mode), -EEXIST);
        assert_int_equal(sim_init_target("/", &mode), -EPERM);
}

/* sim init's refusals in words, and a host built where it may be. */
static void test_init_run(void **state)
{
        (void)state;
        char path[512], err[1024] = "";
        snprintf(path, sizeof(path), "%s/new", base);           /* test_init_target left a file in it */
        assert_int_equal(sim_init_run(path, 1, 4096, 100, err, sizeof(err)), SIM_BAD_USAGE);
        assert_non_null(strstr(err, "/new: not empty and not a simulated host: give a new or an empty directory"));
        snprintf(path, sizeof(path), "%s/new/file", base);
        assert_int_equal(sim_init_run(path, 1, 4096, 100, err, sizeof(err)), SIM_BAD_USAGE);
        assert_non_null(strstr(err, "/new/file: not a directory (a file)"));
        assert_int_equal(sim_init_run("/", 1, 4096, 100, err, sizeof(err)), SIM_BAD_USAGE);
        assert_string_equal(err, "/: refused: the root directory (its dev/ is this host's /dev); give a new or an empty directory");
        assert_int_equal(sim_init_run(host, 1, 4096, 100, err, sizeof(err)), SIM_BAD_USAGE);
        assert_non_null(strstr(err, "/host already holds a simulated host; remove it first"));
        snprintf(path, sizeof(path), "%s/second", base);
        assert_int_equal(sim_init_run(path, 2, 4096, 100, err, sizeof(err)), SIM_DONE);
        assert_int_equal(sim_init_target(path, &(unsigned){ 0 }), -EEXIST);
}

/* What the job said, in order. */
struct said {
        char lines[8][64];
        size_t n;
        char errors[1024];
};

static void on_process(void *ctx, const char *line)
{
        struct said *s = ctx;
        if (s->n < 8)
                snprintf(s->lines[s->n++], sizeof(s->lines[0]), "%s", line);
}

static void on_error(void *ctx, const char *msg)
{
        struct said *s = ctx;
        size_t w = strlen(s->errors);
        snprintf(s->errors + w, sizeof(s->errors) - w, "%s\n", msg);
}

static void test_job_and_status(void **state)
{
        (void)state;
        struct sim_job j = { .dir = host, .gpu = 0, .mib = 1024, .workers = 2, .have_gpu = true };
        struct said s = { .n = 0 };
        struct sim_job_cb cb = { .process = on_process, .error = on_error, .ctx = &s };
        assert_int_equal(sim_job_start(&j, &cb), SIM_DONE);
        assert_string_equal(s.errors, "");
        assert_int_equal(s.n, 3);
        int owner = 0, worker = 0;
        assert_int_equal(sscanf(s.lines[0], "owner %d", &owner), 1);
        assert_int_equal(sscanf(s.lines[1], "worker %d", &worker), 1);
        assert_int_equal(sscanf(s.lines[2], "worker %d", &worker), 1);
        assert_true(owner > 0 && worker > 0 && owner != worker);

        /* the driver now holds one context of 1024 MiB on GPU 0, its owner alive */
        struct sim_status st;
        char err[1024] = "";
        assert_int_equal(sim_status_read(host, &st, err, sizeof(err)), SIM_DONE);
        assert_int_equal(st.o->n, 1);
        assert_int_equal(st.o->ctx[0].ctx.gpu, 0);
        assert_int_equal(st.o->ctx[0].ctx.bytes >> 20, 1024);
        assert_true(st.o->ctx[0].owner_alive);
        assert_int_equal(st.o->ctx[0].owner_pid_here, owner);
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        assert_non_null(m);
        sim_status_text(m, host, &st);
        fclose(m);
        char want[128];
        snprintf(want, sizeof(want), ": 1024 MiB, alive, owner PID %d (alive)", owner);
        assert_non_null(strstr(text, want));
        assert_non_null(strstr(text, "  memory: 4096 MiB total, 100 MiB reserved, 1024 MiB used, 2972 MiB free"));
        free(text);
        sim_status_free(&st);

        /* the job leads its own session and group: end it whole (the owner is our child) */
        assert_int_equal(kill(-owner, SIGKILL), 0);
        assert_int_equal(waitpid(owner, NULL, 0), owner);
}

static void test_errors(void **state)
{
        (void)state;
        struct sim_job j = { .dir = host, .gpu = 3, .mib = 1024, .have_gpu = true };
        struct said s = { .n = 0 };
        struct sim_job_cb cb = { .process = on_process, .error = on_error, .ctx = &s };
        assert_int_equal(sim_job_start(&j, &cb), SIM_BAD_USAGE);
        assert_string_equal(s.errors, "--gpu 3: this simulated host has GPUs 0 to 0\n");
        assert_int_equal(s.n, 0);

        char err[1024] = "";
        struct sim_status st;
        assert_int_equal(sim_status_read(base, &st, err, sizeof(err)), SIM_BAD_USAGE);
        char want[512];
        snprintf(want, sizeof(want), "%s is not a simulated host (", base);
        assert_memory_equal(err, want, strlen(want));
        sim_status_free(&st);

        s.errors[0] = '\0';
        j.dir = base;
        j.gpu = 0;
        assert_int_equal(sim_job_start(&j, &cb), SIM_BAD_USAGE);
        assert_non_null(strstr(s.errors, "is not a simulated host"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_init_target),
                cmocka_unit_test(test_init_run),
                cmocka_unit_test(test_job_and_status),
                cmocka_unit_test(test_errors),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
