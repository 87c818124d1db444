/* Unit tests for render/metrics: both exposition formats on hand-built scans, label escaping
 * of hostile process names, the holder cap, content negotiation and the atomic textfile. */
#include "facts_builder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "render/metrics.h"
#include "util/fileio.h"

static char *render(const struct metrics_input *in, enum metrics_format fmt)
{
        struct buf b = BUF_INIT(0);
        assert_int_equal(metrics_render(&b, in, fmt), 0);
        return buf_steal(&b);
}

/* The number of lines of s that start with prefix. */
static size_t count_lines(const char *s, const char *prefix)
{
        size_t n = 0, len = strlen(prefix);
        for (const char *p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                n += strncmp(p, prefix, len) == 0;
        return n;
}

/* A sample line is NAME{LABELS} VALUE with every label value properly quoted and escaped:
 * walk it like a parser would. */
static void assert_well_formed(const char *text)
{
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n');
                assert_non_null(nl); /* every line ends with \n */
                if (*p != '#') {
                        const char *q = p;
                        while (q < nl && (*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9')))
                                q++;
                        assert_true(q > p);
                        if (*q == '{') {
                                q++;
                                while (*q != '}') {
                                        const char *k = q;
                                        while (*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9'))
                                                q++;
                                        assert_true(q > k);
                                        assert_int_equal(*q++, '=');
                                        assert_int_equal(*q++, '"');
                                        while (*q != '"') {
                                                assert_true(q < nl);
                                                if (*q == '\\') {
                                                        q++;
                                                        assert_true(*q == '\\' || *q == '"' || *q == 'n');
                                                }
                                                q++;
                                        }
                                        q++;
                                        if (*q == ',')
                                                q++;
                                }
                                q++;
                        }
                        assert_int_equal(*q, ' ');
                        char *end;
                        strtod(q + 1, &end);
                        assert_true(end == nl);
                }
                p = nl + 1;
        }
}

static struct facts *ghost_scan_facts(void)
{
        struct facts *f = killed_job(2, 1, true);
        snprintf(f->gpu->gpus[0].uuid, sizeof(f->gpu->gpus[0].uuid), "GPU-0000");
        snprintf(f->gpu->gpus[1].uuid, sizeof(f->gpu->gpus[1].uuid), "GPU-1111");
        finish(f, NULL, 0);
        return f;
}

static void test_text_format(void **state)
{
        (void)state;
        struct facts *f = ghost_scan_facts();
        struct scan_result *r = build(f, f);
        struct metrics_counters c = { .scans_full = 3, .scans_light = 7 };
        c.scan_errors[METRICS_SRC_GPU] = 2;
        struct metrics_input in = { .res = r, .counters = &c, .scan_duration_s = 0.0125, .last_scan_time = 1700000000.5 };
        char *s = render(&in, METRICS_TEXT_004);
        assert_well_formed(s);
        const char *g1 = "{gpu=\"1\",uuid=\"GPU-1111\",pci_bus_id=\"0000:1c:00.0\"";
        char want[512];
        snprintf(want, sizeof(want), "\nghostvram_gpu_memory_used_bytes%s,kind=\"ghost\"} 2147483648\n", g1);
        assert_non_null(strstr(s, want));
        snprintf(want, sizeof(want), "\nghostvram_gpu_memory_used_bytes%s,kind=\"listed\"} 0\n", g1);
        assert_non_null(strstr(s, want));
        snprintf(want, sizeof(want), "\nghostvram_gpu_memory_total_bytes%s} 85899345920\n", g1);
        assert_non_null(strstr(s, want));
        snprintf(want, sizeof(want), "\nghostvram_gpu_memory_reserved_bytes%s} 536870912\n", g1);
        assert_non_null(strstr(s, want));
        snprintf(want, sizeof(want), "\nghostvram_gpu_ghost_confirmed%s} 1\n", g1);
        assert_non_null(strstr(s, want));
        snprintf(want, sizeof(want), "\nghostvram_gpu_verdict%s,verdict=\"orphaned-holders\"} 1\n", g1);
        assert_non_null(strstr(s, want));
        snprintf(want, sizeof(want), "\nghostvram_gpu_verdict%s,verdict=\"ok\"} 0\n", g1);
        assert_non_null(strstr(s, want));
        snprintf(want, sizeof(want), "\nghostvram_holder_info%s,pid=\"31301\",comm=\"pt_data_worker\",user=\"alice\","
                                     "container_id=\"\",k8s_pod_uid=\"\",slurm_job=\"\",attribution=\"process-group\"} 1\n", g1);
        assert_non_null(strstr(s, want));
        /* every verdict code once per GPU, exactly one of them 1 */
        assert_int_equal(count_lines(s, "ghostvram_gpu_verdict{"), 2 * VERDICT_COUNT);
        assert_int_equal(count_lines(s, "ghostvram_gpu_verdict{gpu=\"0\""), VERDICT_COUNT);
        size_t ones = 0;
        for (const char *p = strstr(s, "ghostvram_gpu_verdict{"); p; p = strstr(p + 1, "ghostvram_gpu_verdict{"))
                ones += strncmp(strchr(p, '}'), "} 1\n", 4) == 0;
        assert_int_equal(ones, 2);
        /* the kinds of each GPU: five series (freeing 0: no teardown) */
        assert_int_equal(count_lines(s, "ghostvram_gpu_memory_used_bytes{"), 10);
        snprintf(want, sizeof(want), "\nghostvram_gpu_memory_used_bytes%s,kind=\"freeing\"} 0\n", g1);
        assert_non_null(strstr(s, want));
        assert_int_equal(count_lines(s, "ghostvram_holder_info{"), 2);
        /* 0.0.4: family named after the samples, info as a gauge, no UNIT, no EOF */
        assert_non_null(strstr(s, "# TYPE ghostvram_build_info gauge\nghostvram_build_info{version=\""));
        assert_non_null(strstr(s, "# TYPE ghostvram_xid_events_total counter\n# HELP ghostvram_scans_total"));
        assert_non_null(strstr(s, "# TYPE ghostvram_holder_info gauge\n"));
        assert_non_null(strstr(s, "\nghostvram_scans_total{mode=\"full\"} 3\nghostvram_scans_total{mode=\"light\"} 7\n"));
        assert_non_null(strstr(s, "\nghostvram_scan_errors_total{source=\"gpu\"} 2\n"));
        assert_non_null(strstr(s, "\nghostvram_scan_errors_total{source=\"kernel\"} 0\n"));
        assert_non_null(strstr(s, "\nghostvram_scan_duration_seconds 0.012500\n"));
        assert_non_null(strstr(s, "\nghostvram_last_scan_timestamp_seconds 1700000000.500\n"));
        assert_null(strstr(s, "# UNIT"));
        assert_null(strstr(s, "# EOF"));
        assert_null(strstr(s, "ghostvram_data_age_seconds"));
        /* each family's HELP and TYPE once */
        assert_int_equal(count_lines(s, "# TYPE ghostvram_gpu_verdict "), 1);
        assert_int_equal(count_lines(s, "# HELP ghostvram_gpu_verdict "), 1);
        free(s);

        /* the tail: data age, no EOF */
        struct buf t = BUF_INIT(0);
        assert_int_equal(metrics_render_tail(&t, true, 12.25, METRICS_TEXT_004), 0);
        assert_string_equal(buf_str(&t), "# HELP ghostvram_data_age_seconds Seconds since the latest completed scan (grows while the driver hangs).\n"
                                         "# TYPE ghostvram_data_age_seconds gauge\nghostvram_data_age_seconds 12.250\n");
        buf_reset(&t);
        assert_int_equal(metrics_render_tail(&t, false, 12.25, METRICS_TEXT_004), 0);
        assert_string_equal(buf_str(&t), "");
        buf_free(&t);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_openmetrics(void **state)
{
        (void)state;
        struct facts *f = ghost_scan_facts();
        struct scan_result *r = build(f, f);
        struct metrics_counters c = { 0 };
        metrics_count_xid(&c, 79, 1);
        metrics_count_xid(&c, 13, 2);
        metrics_count_xid(&c, 79, 4);
        struct metrics_input in = { .res = r, .counters = &c, .scan_duration_s = 0.5, .last_scan_time = 1700000000 };
        char *s = render(&in, METRICS_OPENMETRICS);
        struct buf t = BUF_INIT(0);
        assert_int_equal(buf_puts(&t, s), 0);
        assert_int_equal(metrics_render_tail(&t, true, 3, METRICS_OPENMETRICS), 0);
        const char *all = buf_str(&t);
        assert_well_formed(all);
        /* families: counters without _total, info types, units */
        assert_non_null(strstr(all, "# TYPE ghostvram_xid_events counter\n# HELP ghostvram_xid_events "));
        assert_non_null(strstr(all, "\nghostvram_xid_events_total{xid=\"79\"} 5\nghostvram_xid_events_total{xid=\"13\"} 2\n"));
        assert_non_null(strstr(all, "# TYPE ghostvram_build info\n"));
        assert_non_null(strstr(all, "# TYPE ghostvram_holder info\n"));
        assert_non_null(strstr(all, "# TYPE ghostvram_scan_errors counter\n"));
        assert_non_null(strstr(all, "# TYPE ghostvram_gpu_memory_total_bytes gauge\n# UNIT ghostvram_gpu_memory_total_bytes bytes\n"));
        assert_non_null(strstr(all, "# UNIT ghostvram_data_age_seconds seconds\n"));
        assert_null(strstr(all, "# TYPE ghostvram_xid_events_total"));
        /* EOF once, at the very end */
        size_t len = strlen(all);
        assert_true(len > 6 && strcmp(all + len - 6, "# EOF\n") == 0);
        assert_int_equal(count_lines(all, "# EOF"), 1);
        assert_null(strstr(s, "# EOF"));
        buf_free(&t);
        free(s);

        /* no result yet: only the process series */
        in.res = NULL;
        s = render(&in, METRICS_OPENMETRICS);
        assert_null(strstr(s, "ghostvram_gpu_"));
        assert_null(strstr(s, "ghostvram_scan_duration_seconds"));
        assert_non_null(strstr(s, "ghostvram_scans_total{mode=\"full\"} 0"));
        free(s);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_label_escaping(void **state)
{
        (void)state;
        struct buf b = BUF_INIT(0);
        const char hostile[] = "ev\"il\\ na\nme\xff\xfe\x00z";
        assert_int_equal(metrics_label_value(&b, hostile, sizeof(hostile) - 1), 0);
        assert_string_equal(buf_str(&b), "ev\\\"il\\\\ na\\nme\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz");
        buf_reset(&b);
        /* valid UTF-8 passes */
        assert_int_equal(metrics_label_value(&b, "gr\xc3\xbc\xc3\x9f \xe6\x97\xa5", 10), 0);
        assert_string_equal(buf_str(&b), "gr\xc3\xbc\xc3\x9f \xe6\x97\xa5");
        buf_reset(&b);
        /* long values are cut on a character boundary */
        char big[1200];
        memset(big, 'a', sizeof(big));
        big[METRICS_LABEL_MAX - 1] = '\xc3'; /* a 2-byte character across the cut */
        big[METRICS_LABEL_MAX] = '\xa9';
        assert_int_equal(metrics_label_value(&b, big, sizeof(big)), 0);
        assert_int_equal(b.len, METRICS_LABEL_MAX - 1);
        buf_reset(&b);
        assert_int_equal(metrics_label_value(&b, NULL, 0), 0);
        assert_string_equal(buf_str(&b), "");
        buf_free(&b);

        /* a hostile holder in a full render: the scrape stays well formed */
        struct facts *f = ghost_scan_facts();
        for (size_t i = 0; i < f->host->n_holders; i++) {
                free(f->host->holders[i].comm);
                f->host->holders[i].comm = strdup("x\"}\n# EOF\n\\\xc3(");
                snprintf(f->host->holders[i].user, sizeof(f->host->holders[i].user), "u\"s\\er");
                snprintf(f->host->holders[i].container_id, sizeof(f->host->holders[i].container_id), "c\nid");
        }
        struct scan_result *r = build(f, f);
        struct metrics_input in = { .res = r };
        for (int fmt = 0; fmt < 2; fmt++) {
                char *s = render(&in, (enum metrics_format)fmt);
                assert_well_formed(s);
                assert_non_null(strstr(s, "comm=\"x\\\"}\\n# EOF\\n\\\\\xef\xbf\xbd(\",user=\"u\\\"s\\\\er\",container_id=\"c\\nid\""));
                assert_int_equal(count_lines(s, "# EOF"), 0);
                free(s);
        }
        scan_result_free(r);
        facts_destroy(f);
}

static void test_holder_cap(void **state)
{
        (void)state;
        struct facts *f = ghost_scan_facts();
        struct scan_result *r = build(f, f);
        struct metrics_input in = { .res = r, .max_holders_per_gpu = 1 };
        char *s = render(&in, METRICS_TEXT_004);
        assert_int_equal(count_lines(s, "ghostvram_holder_info{"), 1);
        assert_non_null(strstr(s, "\nghostvram_gpu_attributed_holders{gpu=\"1\",uuid=\"GPU-1111\",pci_bus_id=\"0000:1c:00.0\"} 2\n"));
        free(s);
        /* the sum of the kinds is NVML's used on every GPU */
        for (size_t i = 0; i < r->n_gpus; i++)
                assert_true(r->gpus[i].listed + r->gpus[i].foreign + r->gpus[i].ghost + r->gpus[i].unattributed ==
                            r->gpus[i].used);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_uninspected_gpu(void **state)
{
        (void)state;
        struct facts *f = facts_new(2, true, 0);
        f->gpu->gpus[1].status = GPU_LOST;
        f->gpu->gpus[1].memory_known = false;
        struct scan_result *r = build(f, NULL);
        struct metrics_input in = { .res = r };
        char *s = render(&in, METRICS_TEXT_004);
        assert_well_formed(s);
        /* memory series only for the inspected GPU; a verdict for both */
        assert_int_equal(count_lines(s, "ghostvram_gpu_memory_total_bytes{"), 1);
        assert_int_equal(count_lines(s, "ghostvram_gpu_memory_used_bytes{gpu=\"1\""), 0);
        assert_non_null(strstr(s, "ghostvram_gpu_verdict{gpu=\"1\",uuid=\"\",pci_bus_id=\"0000:1c:00.0\",verdict=\"gpu-lost\"} 1\n"));
        assert_non_null(strstr(s, "ghostvram_gpu_verdict{gpu=\"0\",uuid=\"\",pci_bus_id=\"0000:1b:00.0\",verdict=\"ok\"} 1\n"));
        /* no counters given: no counter families (a one-shot scan) */
        assert_null(strstr(s, "ghostvram_scans_total"));
        free(s);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_accept(void **state)
{
        (void)state;
        /* what Prometheus 2.x sends */
        assert_true(metrics_accept_openmetrics("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                                               "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
        assert_true(metrics_accept_openmetrics("application/openmetrics-text"));
        assert_true(metrics_accept_openmetrics("text/plain;q=0.5, Application/OpenMetrics-Text; version=1.0.0"));
        assert_false(metrics_accept_openmetrics(NULL));
        assert_false(metrics_accept_openmetrics(""));
        assert_false(metrics_accept_openmetrics("*/*"));
        assert_false(metrics_accept_openmetrics("text/plain"));
        assert_false(metrics_accept_openmetrics("application/openmetrics-text;q=0"));
        assert_false(metrics_accept_openmetrics("text/plain;q=1,application/openmetrics-text;q=0.5"));
        assert_false(metrics_accept_openmetrics("application/openmetrics-textual"));
        assert_false(metrics_accept_openmetrics("application/openmetrics-text;q=abc"));
}

static void test_xid_cap(void **state)
{
        (void)state;
        struct metrics_counters c = { 0 };
        for (unsigned x = 0; x < METRICS_MAX_XID + 10; x++)
                metrics_count_xid(&c, x, 1);
        assert_int_equal(c.n_xid, METRICS_MAX_XID);
        metrics_count_xid(&c, 3, 2);
        assert_int_equal(c.xid[3].count, 3);
}

static void test_textfile(void **state)
{
        (void)state;
        char dir[] = "/tmp/gv-textfile-XXXXXX";
        assert_non_null(mkdtemp(dir));
        struct facts *f = ghost_scan_facts();
        struct scan_result *r = build(f, f);
        struct metrics_input in = { .res = r, .scan_duration_s = 1, .last_scan_time = 1700000000 };
        assert_int_equal(metrics_write_textfile(dir, &in), 0);
        char path[256];
        snprintf(path, sizeof(path), "%s/ghostvram.prom", dir);
        char *data = NULL;
        size_t len = 0;
        assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 20, &data, &len), 0);
        char *want = render(&in, METRICS_TEXT_004);
        assert_string_equal(data, want);
        free(want);
        free(data);
        struct stat st1, st2;
        assert_int_equal(stat(path, &st1), 0);
        assert_int_equal(st1.st_mode & 0777, 0644);
        /* a rewrite replaces the file (a new inode: rename, never an in-place write) and leaves no
         * temporary file behind; no temporary name ever ends in .prom */
        assert_int_equal(metrics_write_textfile(dir, &in), 0);
        assert_int_equal(stat(path, &st2), 0);
        assert_true(st1.st_ino != st2.st_ino);
        DIR *d = opendir(dir);
        struct dirent *de;
        size_t n = 0;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
                        continue;
                assert_string_equal(de->d_name, "ghostvram.prom");
                n++;
        }
        closedir(d);
        assert_int_equal(n, 1);
        /* no sample timestamps: every sample line has exactly two fields */
        assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 20, &data, &len), 0);
        for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
                if (line[0] == '#')
                        continue;
                char *close = strrchr(line, '}');
                char *value = strrchr(line, ' ');
                assert_true(value > (close ? close : line));
                assert_null(strchr(close ? close + 2 : strchr(line, ' ') + 1, ' '));
        }
        free(data);
        /* a directory that does not exist: an error, nothing written */
        char missing[300];
        snprintf(missing, sizeof(missing), "%s/nope", dir);
        assert_int_equal(metrics_write_textfile(missing, &in), -ENOENT);
        unlink(path);
        rmdir(dir);
        scan_result_free(r);
        facts_destroy(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_text_format),
                cmocka_unit_test(test_openmetrics),
                cmocka_unit_test(test_label_escaping),
                cmocka_unit_test(test_holder_cap),
                cmocka_unit_test(test_uninspected_gpu),
                cmocka_unit_test(test_accept),
                cmocka_unit_test(test_xid_cap),
                cmocka_unit_test(test_textfile),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
