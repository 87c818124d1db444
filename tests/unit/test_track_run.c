/* Unit tests for run/track_run: track's use case called without argv, running real commands
 * with the tracker preloaded (its ledgers of real CUDA-like jobs: t_track*.sh). */
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

#include "render/track_render.h"
#include "run/track_run.h"
#include "track/ledger_format.h"
#include "util/fileio.h"

#define TRACK_LIB GV_BUILD_DIR "/libghostvram-track.so"

static char base[] = "/tmp/gv-test-track-XXXXXX";
static char ledger[256];

static int setup(void **state)
{
        (void)state;
        if (!mkdtemp(base))
                return -1;
        snprintf(ledger, sizeof(ledger), "%s/a/b/ledger", base);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        remove_tree(base);
        return 0;
}

static struct track_prep_opts opts(void)
{
        return (struct track_prep_opts){ .dir = ledger, .preload = TRACK_LIB, .max_age_ms = 3600000,
                                         .max_total_mib = 16 };
}

/* The directory is made (parents too), the library found by its real path, a session drawn. */
static void test_prepare(void **state)
{
        (void)state;
        struct track_prep_opts o = opts();
        struct track_prep p;
        char err[512] = "";
        assert_int_equal(track_prepare(&o, &p, err, sizeof(err)), 0);
        assert_string_equal(err, "");
        assert_string_equal(p.dir, ledger);
        struct stat st;
        assert_int_equal(stat(ledger, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        char lib[4096];
        assert_non_null(realpath(TRACK_LIB, lib));
        assert_string_equal(p.lib, lib);
        assert_true(p.session != 0 && p.session < (1ull << 62));
        struct track_prep q;
        assert_int_equal(track_prepare(&o, &q, err, sizeof(err)), 0);
        assert_true(q.session != p.session);
}

/* A library ld.so would refuse, a missing one, a directory that is a file: said, never run. */
static void test_prepare_refuses(void **state)
{
        (void)state;
        char text[300], err[512];
        snprintf(text, sizeof(text), "%s/not-a-library.so", base);
        FILE *f = fopen(text, "w");
        assert_non_null(f);
        fputs("not ELF\n", f);
        fclose(f);
        struct track_prep_opts o = opts();
        struct track_prep p;
        o.preload = text;
        assert_int_equal(track_prepare(&o, &p, err, sizeof(err)), -ENOEXEC);
        assert_non_null(strstr(err, "not an ELF shared object of this machine (--preload PATH)"));

        o.preload = "/nonexistent/libghostvram-track.so";
        assert_true(track_prepare(&o, &p, err, sizeof(err)) < 0);
        assert_string_equal(err, "cannot find the tracker library /nonexistent/libghostvram-track.so: "
                                 "No such file or directory (--preload PATH)");

        o = opts();
        o.dir = text; /* a file */
        assert_true(track_prepare(&o, &p, err, sizeof(err)) < 0);
        assert_non_null(strstr(err, text));
}

/* CMD runs with the tracker first in LD_PRELOAD and the directory and session in its
 * environment; its exit status is the result's. */
static void test_run_environment_and_status(void **state)
{
        (void)state;
        struct track_prep_opts o = opts();
        struct track_prep p;
        char err[512] = "", script[10240];
        assert_int_equal(track_prepare(&o, &p, err, sizeof(err)), 0);
        snprintf(script, sizeof(script),
                 "case \"$LD_PRELOAD\" in %s*) ;; *) exit 9 ;; esac; [ \"$%s\" = '%s' ] || exit 8; "
                 "[ \"$%s\" = %llu ] || exit 7; exit 3",
                 p.lib, GVL_ENV_DIR, p.dir, GVL_ENV_SESSION, (unsigned long long)p.session);
        char sh[] = "sh", dash_c[] = "-c";
        char *const cmd[] = { sh, dash_c, script, NULL };
        struct track_result res;
        assert_int_equal(track_run(&p, cmd, &res, err, sizeof(err)), 0);
        assert_int_equal(res.end.status, 3);
        assert_int_equal(res.end.signal, 0);
        assert_false(res.end.running);
        assert_int_equal(res.n, 0); /* no CUDA call: no ledger */
        track_result_free(&res);
}

/* The ledger directory gone while CMD ran (removed by it, or by a cleaner): CMD's status is
 * kept, and the error says where the ledgers could not be read. */
static void test_run_ledgers_gone(void **state)
{
        (void)state;
        char dir[300], err[4400] = "", script[4200];
        snprintf(dir, sizeof(dir), "%s/gone", base);
        struct track_prep_opts o = opts();
        o.dir = dir;
        struct track_prep p;
        assert_int_equal(track_prepare(&o, &p, err, sizeof(err)), 0);
        snprintf(script, sizeof(script), "rmdir '%s'; exit 4", p.dir);
        char sh[] = "sh", dash_c[] = "-c";
        char *const cmd[] = { sh, dash_c, script, NULL };
        struct track_result res;
        assert_int_equal(track_run(&p, cmd, &res, err, sizeof(err)), -ENOENT);
        assert_int_equal(res.end.status, 4);
        char want[4400];
        snprintf(want, sizeof(want), "cannot read the ledgers in %s: No such file or directory", p.dir);
        assert_string_equal(err, want);
        track_result_free(&res);
}

/* A command that cannot be executed: 127 and why. */
static void test_run_not_found(void **state)
{
        (void)state;
        struct track_prep_opts o = opts();
        struct track_prep p;
        char err[512] = "";
        assert_int_equal(track_prepare(&o, &p, err, sizeof(err)), 0);
        char prog[] = "/nonexistent/gv-cmd";
        char *const cmd[] = { prog, NULL };
        struct track_result res;
        assert_int_equal(track_run(&p, cmd, &res, err, sizeof(err)), TRACK_EXIT_NOT_RUN);
        assert_string_equal(err, "cannot run /nonexistent/gv-cmd: No such file or directory");
        assert_int_equal(res.end.status, 127);
        track_result_free(&res);
}

/* A SIGTERM sent to track by another process goes on to CMD, which ends with it. */
static void test_run_passes_stop_signal(void **state)
{
        (void)state;
        struct track_prep_opts o = opts();
        struct track_prep p;
        char err[512] = "";
        assert_int_equal(track_prepare(&o, &p, err, sizeof(err)), 0);
        pid_t me = getpid();
        pid_t helper = fork();
        assert_true(helper >= 0);
        if (helper == 0) {
                usleep(300 * 1000);
                kill(me, SIGTERM);
                _exit(0);
        }
        char sleep_[] = "sleep", thirty[] = "30";
        char *const cmd[] = { sleep_, thirty, NULL };
        struct track_result res;
        assert_int_equal(track_run(&p, cmd, &res, err, sizeof(err)), 0);
        assert_int_equal(res.end.signal, SIGTERM);
        assert_int_equal(res.end.status, 128 + SIGTERM);
        assert_false(res.end.running);
        assert_string_equal(track_stop_signal_name(res.end.signal), "SIGTERM");
        assert_int_equal(waitpid(helper, NULL, 0), helper);
        /* blocked until the result is freed: a SIGTERM while the report is written is dropped */
        sigset_t now;
        sigprocmask(SIG_BLOCK, NULL, &now);
        assert_true(sigismember(&now, SIGTERM));
        kill(getpid(), SIGTERM);
        track_result_free(&res);
        /* ...then the mask is given back: SIGTERM is not blocked any more, and none is pending */
        sigprocmask(SIG_BLOCK, NULL, &now);
        assert_false(sigismember(&now, SIGTERM));
        sigpending(&now);
        assert_false(sigismember(&now, SIGTERM));
}

/* A ledger's header (good, or with a bad magic) and nothing after it. */
static void write_header(const char *path, bool good)
{
        struct gvl_header h;
        memset(&h, 0, sizeof(h));
        memcpy(h.magic, good ? GVL_MAGIC : "NOTALDG", sizeof(h.magic));
        h.version = GVL_VERSION;
        h.rec_size = GVL_REC_SIZE;
        h.pid = 4242;
        h.ppid = 1;
        h.bom = GVL_BOM;
        memcpy(h.comm, "python", 6);
        h.check = gvl_check(&h);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(&h, sizeof(h), 1, f), 1);
        assert_int_equal(fclose(f), 0);
}

/* --show FILE: a ledger read and summed up; a directory, a bad header and a missing file told
 * apart. */
static void test_show(void **state)
{
        (void)state;
        char path[512];
        struct track_show *sh = track_show_new();
        assert_non_null(sh);
        snprintf(path, sizeof(path), "%s/good.gvl", base);
        write_header(path, true);
        assert_int_equal(track_show_load(sh, path), 0);
        assert_true(sh->loaded && sh->l.have_header);
        assert_int_equal(sh->l.hdr.pid, 4242);
        assert_int_equal(sh->l.records, 0);
        track_show_free(sh);
        sh = track_show_new();
        assert_non_null(sh);
        assert_int_equal(track_show_load(sh, base), -EISDIR);
        snprintf(path, sizeof(path), "%s/bad.gvl", base);
        write_header(path, false);
        assert_int_equal(track_show_load(sh, path), -EBADMSG);
        snprintf(path, sizeof(path), "%s/none.gvl", base);
        assert_int_equal(track_show_load(sh, path), -ENOENT);
        assert_false(sh->loaded);
        track_show_free(sh);
        track_show_free(NULL);
}

static char said[1024];
static int printed;

static void say(const char *msg)
{
        snprintf(said, sizeof(said), "%s", msg);
}

static int print_json(json_t *doc)
{
        printed += doc != NULL;
        json_decref(doc);
        return 0;
}

/* --show FILE as the command shows it: the ledger's document, or why there is none. */
static void test_show_print(void **state)
{
        (void)state;
        char path[512], want[700];
        snprintf(path, sizeof(path), "%s/good.gvl", base);
        write_header(path, true);
        assert_int_equal(track_show_print(path, print_json, say), 0);
        assert_int_equal(printed, 1);
        assert_int_equal(track_show_print(base, print_json, say), -1);
        snprintf(want, sizeof(want), "--show %s: a directory, not an allocation ledger (give one file of it)", base);
        assert_string_equal(said, want);
        snprintf(path, sizeof(path), "%s/bad.gvl", base);
        write_header(path, false);
        assert_int_equal(track_show_print(path, print_json, say), -1);
        snprintf(want, sizeof(want), "%s: not an allocation ledger (bad header)", path);
        assert_string_equal(said, want);
        assert_int_equal(printed, 1);
}

/* --report: stderr without it; a directory refused in words; a file opened and closed. */
static void test_report_file(void **state)
{
        (void)state;
        char path[512], err[1024] = "";
        assert_ptr_equal(track_report_open(NULL, err, sizeof(err)), stderr);
        assert_int_equal(track_report_close(stderr, NULL, err, sizeof(err)), 0);
        assert_null(track_report_open(base, err, sizeof(err)));
        snprintf(path, sizeof(path), "--report %s: a directory: give a file", base);
        assert_string_equal(err, path);
        snprintf(path, sizeof(path), "%s/report.txt", base);
        FILE *f = track_report_open(path, err, sizeof(err));
        assert_non_null(f);
        assert_int_equal(track_report_close(f, path, err, sizeof(err)), 0);
        assert_int_equal(access(path, F_OK), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_prepare),
                cmocka_unit_test(test_show_print),
                cmocka_unit_test(test_prepare_refuses),
                cmocka_unit_test(test_run_environment_and_status),
                cmocka_unit_test(test_run_not_found),
                cmocka_unit_test(test_run_ledgers_gone),
                cmocka_unit_test(test_run_passes_stop_signal),
                cmocka_unit_test(test_show),
                cmocka_unit_test(test_report_file),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
