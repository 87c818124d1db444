/* live_view, serve's page and top's screen on hand-built samples: the killed-job scenario's
 * view (rows, roles, links), the history ring (bounded, oldest first, gaps), HTML escaping,
 * the page's timeline and thinning, top's bar letters, sparkline, sorting and escaping. */
#include "facts_builder.h"

#include <locale.h>
#include <wchar.h>

#include "render/live_view.h"
#include "collect/xid.h"
#include "run/scan_run.h"
#include "render/top_screen.h"
#include "serve/page.h"

static struct live_view *killed_view(struct facts **ret_f, struct scan_result **ret_r)
{
        struct facts *f = killed_job(2, 1, true);
        /* a hostile comm on one worker */
        free(f->host->holders[1].comm);
        f->host->holders[1].comm = strdup("\033]0;x\a<b>&");
        struct facts *before = killed_job(2, 1, true);
        struct scan_result *r = build(f, before);
        assert_string_equal(verdict(r, 1), "orphaned-holders");
        struct live_view *v = NULL;
        assert_int_equal(live_view_build(r, false, true, 0.01, &v), 0);
        v->finished = T0;
        facts_destroy(before);
        *ret_f = f;
        *ret_r = r;
        return v;
}

static void test_view_rows(void **state)
{
        (void)state;
        struct facts *f;
        struct scan_result *r;
        struct live_view *v = killed_view(&f, &r);
        assert_int_equal(v->n_gpus, 2);
        const struct live_gpu *g = live_view_gpu(v, 1);
        assert_non_null(g);
        assert_string_equal(g->verdict, "orphaned-holders");
        assert_true(g->kind[LIVE_GHOST] == 2 * GIB);
        assert_true(g->kind[LIVE_RESERVED] == 512 * MIB);
        assert_int_equal(v->n_rows, 3);
        assert_int_equal(v->rows[0].pid, 31300);
        assert_string_equal(v->rows[0].role, "dead owner");
        assert_true(v->rows[0].listed_bytes == (int64_t)(2 * GIB));
        for (int i = 1; i <= 2; i++) {
                assert_int_equal(v->rows[i].pid, 31300 + i);
                assert_int_equal(v->rows[i].gpu, 1);
                assert_string_equal(v->rows[i].role, "worker of dead PID 31300");
                assert_true(v->rows[i].ghost_holder);
                assert_null(v->rows[i].cmdline);
        }
        live_view_free(v);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_ring(void **state)
{
        (void)state;
        struct live_history h = { 0 };
        struct live_view v;
        struct live_gpu g;
        memset(&v, 0, sizeof(v));
        memset(&g, 0, sizeof(g));
        g.index = 3;
        g.inspected = true;
        g.total = 16 * GIB;
        v.gpus = &g;
        v.n_gpus = 1;
        for (unsigned i = 0; i < LIVE_HISTORY_MAX + 80; i++) {
                g.kind[LIVE_GHOST] = (uint64_t)i * MIB;
                assert_int_equal(live_history_add(&h, i == 100 ? NULL : &v, 1000 + i), 0);
        }
        const struct live_ring *r = live_history_gpu(&h, 3);
        assert_non_null(r);
        assert_null(live_history_gpu(&h, 0));
        assert_int_equal(r->n, LIVE_HISTORY_MAX);
        assert_int_equal(live_ring_at(r, 0)->t, 1080);          /* the oldest 80 are gone */
        assert_int_equal(live_ring_at(r, 0)->mib[LIVE_GHOST], 80);
        assert_int_equal(live_ring_at(r, 20)->valid, 0);        /* the gap at i == 100 */
        assert_int_equal(live_ring_at(r, LIVE_HISTORY_MAX - 1)->mib[LIVE_GHOST], LIVE_HISTORY_MAX + 79);
        assert_int_equal(r->total_mib, 16384);
        assert_int_equal(live_history_bytes(&h), sizeof(struct live_ring));
        assert_true(sizeof(struct live_point) == 32);
        /* top's sparkline: 720 points in 8 columns of 90, each its most ghost (169, 259, ...,
         * 799 MiB) scaled to 799 */
        char sp[9];
        top_sparkline(r, sp, 8);
        assert_string_equal(sp, "::-==+*#");
        live_history_free(&h);
}

static void test_page_esc(void **state)
{
        (void)state;
        struct buf b = BUF_INIT(0);
        const char in[] = "<a href='x'>&\"\x01\xff";
        assert_int_equal(page_esc(&b, in, sizeof(in) - 1), 0);
        assert_string_equal(buf_str(&b), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;\xef\xbf\xbd\xef\xbf\xbd");
        buf_free(&b);
}

static void test_page(void **state)
{
        (void)state;
        struct facts *f;
        struct scan_result *r;
        struct live_view *v = killed_view(&f, &r);
        struct live_history h = { 0 };
        /* 720 samples, one a second; the ghost appears for 2 s only in the middle */
        struct live_gpu *g1 = &v->gpus[1];
        uint64_t ghost = g1->kind[LIVE_GHOST];
        for (unsigned i = 0; i < LIVE_HISTORY_MAX; i++) {
                g1->kind[LIVE_GHOST] = i == 400 || i == 401 ? ghost : 0;
                live_history_add(&h, v, T0 - LIVE_HISTORY_MAX + 1 + i);
        }
        g1->kind[LIVE_GHOST] = ghost;
        struct buf out = BUF_INIT(0);
        struct page_opts po = { .refresh_s = 15, .now = T0, .age_s = 0.5, .stale_after_s = 60, .status = "" };
        assert_int_equal(page_render(&out, v, &h, &po), 0);
        const char *p = buf_str(&out);
        assert_non_null(strstr(p, "<meta http-equiv=\"refresh\" content=\"15\">"));
        assert_non_null(strstr(p, "data-verdict=\"orphaned-holders\""));
        assert_non_null(strstr(p, "data-pid=\"31301\" data-role=\"worker of dead PID 31300\""));
        /* the hostile comm, escaped: no raw control byte, no tag */
        assert_non_null(strstr(p, "\xef\xbf\xbd]0;x\xef\xbf\xbd&lt;b&gt;&amp;"));
        assert_null(strchr(p, '\033'));
        assert_null(strstr(p, "<script"));
        /* the 2 s ghost survives the thinning to 240 points: its band reaches 2560 MiB of
         * 80 GiB (y = 158 - 2560 / 81920 * 150 = 153.3) */
        /* GPU 0 never had a ghost: its ghost series is there, empty */
        assert_non_null(strstr(p, "<path class=\"series ghost\" data-kind=\"ghost\" fill=\"#e53935\" d=\"\"><title>ghost: 0 MiB now"));
        const char *gp = strstr(p, "id=\"timeline-gpu1\"");
        assert_non_null(gp);
        gp = strstr(gp, "<path class=\"series ghost\" data-kind=\"ghost\" fill=\"#e53935\" d=\"M");
        assert_non_null(gp);
        const char *end = strstr(gp, "\">");          /* the end of d */
        size_t pts = 0;
        for (const char *q = gp; q < end; q++)
                pts += *q == 'L' || *q == 'M';
        assert_true(pts == 2 * 240);
        char *band = strndup(gp, (size_t)(end - gp));
        assert_non_null(strstr(band, ",153.3"));
        free(band);
        /* the page stays small with a full ring: a few tens of KiB a GPU */
        assert_true(out.len < 2 * 45000);
        buf_free(&out);
        /* a teardown: the freeing band and the equation's freeing term, no ghost */
        g1->kind[LIVE_FREEING] = g1->kind[LIVE_GHOST];
        g1->kind[LIVE_GHOST] = 0;
        buf_free(&out);
        assert_int_equal(page_render(&out, v, &h, &po), 0);
        assert_non_null(strstr(buf_str(&out), " + unattributed 0 MiB + freeing 2048 MiB; driver reservation 512 MiB apart"));
        assert_non_null(strstr(buf_str(&out), "<path class=\"series freeing\" data-kind=\"freeing\" fill=\"#8e24aa\""));
        g1->kind[LIVE_GHOST] = g1->kind[LIVE_FREEING];
        g1->kind[LIVE_FREEING] = 0;
        buf_free(&out);
        /* no data yet */
        po.age_s = -1;
        assert_int_equal(page_render(&out, NULL, &h, &po), 0);
        assert_non_null(strstr(buf_str(&out), "No data yet"));
        buf_free(&out);
        live_history_free(&h);
        live_view_free(v);
        scan_result_free(r);
        facts_destroy(f);
}

/* A timeline of serve's first seconds starts when serve started, not a minute before. */
static void test_page_starts_with_serve(void **state)
{
        (void)state;
        struct facts *f;
        struct scan_result *r;
        struct live_view *v = killed_view(&f, &r);
        struct live_history h = { 0 };
        for (int i = 2; i >= 0; i--)
                live_history_add(&h, v, T0 - i);
        struct buf out = BUF_INIT(0);
        struct page_opts po = { .refresh_s = 15, .now = T0, .age_s = 0.5, .stale_after_s = 60, .status = "",
                                .started = T0 - 3 };
        assert_int_equal(page_render(&out, v, &h, &po), 0);
        char from[40], to[40], want[160];
        xid_format_rfc3339(T0 - 3, from, sizeof(from));
        xid_format_rfc3339(T0, to, sizeof(to));
        snprintf(want, sizeof(want), "GPU 1 memory by kind from %s to %s (3 samples)", from, to);
        assert_non_null(strstr(buf_str(&out), want));
        buf_free(&out);
        /* started unknown: the last minute */
        po.started = 0;
        assert_int_equal(page_render(&out, v, &h, &po), 0);
        xid_format_rfc3339(T0 - 60, from, sizeof(from));
        snprintf(want, sizeof(want), "GPU 1 memory by kind from %s to %s (3 samples)", from, to);
        assert_non_null(strstr(buf_str(&out), want));
        buf_free(&out);
        live_history_free(&h);
        live_view_free(v);
        scan_result_free(r);
        facts_destroy(f);
}

static bool canvas_has(const struct top_canvas *c, const char *want)
{
        char line[2048];
        for (int y = 0; y < c->rows; y++) {
                top_canvas_line(c, y, line, sizeof(line));
                if (strstr(line, want))
                        return true;
        }
        return false;
}

/* The characters ghostvram's own texts use: kept in a UTF-8 terminal, ASCII elsewhere, never
 * one '?' a byte; a next step wraps instead of being cut; a teardown is the ~ band; without a
 * driver the reason shows once. */
static void test_top_texts(void **state)
{
        (void)state;
        struct facts *f;
        struct scan_result *r;
        struct live_view *v = killed_view(&f, &r);
        struct top_canvas c = { 0 };
        assert_int_equal(top_canvas_resize(&c, 30, 140), 0);
        struct top_state s = { .now = T0 + 1, .interval_s = 1, .focus = -1, .stale_after_s = 4, .status = "",
                               .message = "GPU 1  2048 MiB \u2192 0 MiB  caf\u00e9 \xff" };
        top_draw(&c, v, NULL, &s);
        assert_true(canvas_has(&c, "GPU 1  2048 MiB -> 0 MiB  caf? \\xff"));
        c.utf8 = true;
        top_draw(&c, v, NULL, &s);
        assert_true(canvas_has(&c, "GPU 1  2048 MiB \u2192 0 MiB  caf? \\xff"));
        assert_false(canvas_has(&c, "???"));
        c.utf8 = false;
        s.message = "";
        /* GPU 1 in focus: its whole next step, on two lines */
        s.focus = 1;
        top_draw(&c, v, NULL, &s);
        assert_true(canvas_has(&c, "  next: free it safely"));
        assert_true(canvas_has(&c, "(by hand: kill -TERM 31301 31302)"));
        s.focus = -1;
        /* a teardown: no G in the bar, the freeing figure beside it */
        struct live_gpu *g1 = &v->gpus[1];
        g1->kind[LIVE_FREEING] = g1->kind[LIVE_GHOST];
        g1->kind[LIVE_GHOST] = 0;
        g1->ghost_confirmed = false;
        top_draw(&c, v, NULL, &s);
        assert_true(canvas_has(&c, "  [R~"));
        assert_true(canvas_has(&c, "] used 2048/81920 MiB  ghost 0 MiB  freeing 2048 MiB  reserved 512 MiB apart"));
        assert_true(canvas_has(&c, "~ freeing"));
        /* no driver: said once */
        v->driver_present = false;
        str_set(&v->driver, "no NVIDIA driver on this host");
        s.status = "no NVIDIA driver: no NVIDIA driver on this host";
        s.status_in_view = true;
        top_draw(&c, v, NULL, &s);
        char line[512];
        int said = 0;
        for (int y = 0; y < c.rows; y++) {
                top_canvas_line(&c, y, line, sizeof(line));
                said += strstr(line, "no NVIDIA driver on this host") != NULL;
        }
        assert_int_equal(said, 1);
        top_canvas_free(&c);
        live_view_free(v);
        scan_result_free(r);
        facts_destroy(f);
}

static void test_top_screen(void **state)
{
        (void)state;
        struct facts *f;
        struct scan_result *r;
        struct live_view *v = killed_view(&f, &r);
        struct top_canvas c = { 0 };
        assert_int_equal(top_canvas_resize(&c, 30, 132), 0);    /* the bar, the figures beside it; the command at 92 */
        struct top_state s = { .now = T0 + 1, .interval_s = 1, .focus = -1, .stale_after_s = 4, .status = "",
                               .message = "" };
        top_draw(&c, v, NULL, &s);
        char line[200];
        bool bar = false, worker = false, esc = false;
        for (int y = 0; y < c.rows; y++) {
                top_canvas_line(&c, y, line, sizeof(line));
                /* 80 GiB on 60 cells: 512 MiB reserved rounds to 0 cells but shows as 1; the
                 * ghost ends at 2560 MiB: cell 2 */
                bar |= !strncmp(line, "  [RG..........", 15) &&
                       strstr(line, "] used 2048/81920 MiB  ghost 2048 MiB (confirmed)  reserved 512 MiB apart");
                worker |= strstr(line, "31301 ") && strstr(line, "worker of dead PID 31300");
                esc |= strstr(line, "\\e]0;x\\x07<b>&") != NULL;
                for (const char *q = line; *q; q++)
                        assert_true(*q >= 0x20 && *q < 0x7f);
        }
        assert_true(bar);
        assert_true(worker);
        assert_true(esc);
        /* sorted by memory: the listed dead owner first; focus on GPU 0: no rows */
        size_t idx[8];
        s.sort = TOP_SORT_MEM;
        assert_int_equal(top_rows(v, &s, idx, 8), 3);
        assert_int_equal(v->rows[idx[0]].pid, 31300);
        s.sort = TOP_SORT_PID;
        s.focus = 0;
        assert_int_equal(top_rows(v, &s, idx, 8), 0);
        /* stale: the reason shows on line 2 */
        s.focus = -1;
        s.now = T0 + 30;
        s.status = "the NVIDIA driver did not answer in time";
        top_draw(&c, v, NULL, &s);
        top_canvas_line(&c, 1, line, sizeof(line));
        assert_true(!strncmp(line, "STALE sample ", 13) && strstr(line, ", 30.0 s old"));
        top_canvas_line(&c, 2, line, sizeof(line));
        assert_string_equal(line, "the NVIDIA driver did not answer in time");
        top_canvas_free(&c);
        live_view_free(v);
        scan_result_free(r);
        facts_destroy(f);
}

/* Is line part of the GPU's next step (its first line "  next: ", or one under it)? *in: the
 * next step has begun. 1 yes, 0 not yet, -1 the line after it. */
static int next_step_line(const char *line, bool *in)
{
        bool first = !strncmp(line, "  next: ", 8);
        bool more = *in && strlen(line) > 8 && !strncmp(line, "        ", 8) && line[8] != ' ';
        if (!first && !more)
                return *in ? -1 : 0;
        *in = true;
        return 1;
}

/* The screen is narrower than a next step: top wraps it at spaces, every line starting under the
 * first, so the whole command is there; on a screen too narrow for it in 4 lines, the last line is
 * cut at a word and says so with "..." (a command cut mid-word looks runnable). */
static void next_lines(const struct live_view *v, int cols, char *joined, size_t len, char *last, size_t lastlen)
{
        struct top_canvas c = { 0 };
        assert_int_equal(top_canvas_resize(&c, 40, cols), 0);
        struct top_state s = { .now = T0 + 1, .interval_s = 1, .focus = 1, .stale_after_s = 4, .status = "",
                               .message = "" };
        top_draw(&c, v, NULL, &s);
        char line[400];
        joined[0] = last[0] = '\0';
        bool in = false;
        for (int y = 0; y < c.rows; y++) {
                top_canvas_line(&c, y, line, sizeof(line));
                int part = next_step_line(line, &in);
                if (part < 0)
                        break;
                if (!part)
                        continue;
                assert_true(strlen(line) <= (size_t)cols);
                if (joined[0])
                        strncat(joined, " ", len - strlen(joined) - 1);
                strncat(joined, line + 8, len - strlen(joined) - 1);
                snprintf(last, lastlen, "%s", line + 8);
        }
        top_canvas_free(&c);
}

static void test_top_cuts_at_a_word(void **state)
{
        (void)state;
        struct facts *f;
        struct scan_result *r;
        struct live_view *v = killed_view(&f, &r);
        const char *next = live_view_gpu(v, 1)->next_step;
        assert_true(strlen(next) > 104);
        char joined[2048], last[400];
        next_lines(v, 104, joined, sizeof(joined), last, sizeof(last));
        assert_string_equal(joined, next);
        /* 30 columns: 4 lines of 22 cannot hold it */
        assert_true(strlen(next) > 4 * 22);
        next_lines(v, 30, joined, sizeof(joined), last, sizeof(last));
        size_t n = strlen(joined);
        assert_true(n > 3);
        assert_string_equal(joined + n - 3, "...");
        size_t shown = n - 3;
        assert_memory_equal(joined, next, shown);
        assert_true(next[shown] == ' ' && next[shown - 1] != ' ');
        live_view_free(v);
        scan_result_free(r);
        facts_destroy(f);
}

/* The columns a UTF-8 line takes on a terminal (wcwidth: a Chinese character two); fails the
 * test on a broken character. */
static size_t line_cols(const char *s)
{
        mbstate_t st;
        memset(&st, 0, sizeof(st));
        size_t cols = 0, n = strlen(s);
        while (n) {
                wchar_t wc;
                size_t k = mbrtowc(&wc, s, n, &st);
                assert_true(k != (size_t)-1 && k != (size_t)-2 && k != 0);
                int w = wcwidth(wc);
                assert_true(w >= 1);
                cols += (size_t)w;
                s += k;
                n -= k;
        }
        return cols;
}

/* s without its spaces, into out[len] */
static void no_spaces(const char *s, char *out, size_t len)
{
        size_t k = 0;
        for (; *s && k + 1 < len; s++)
                if (*s != ' ')
                        out[k++] = *s;
        out[k] = '\0';
}

/* Chinese on a UTF-8 screen: a Chinese character takes two columns and a line may end between
 * two of them (Chinese has no spaces). A next step wraps within the screen, whole, each line under
 * the first; a summary too long for its row is cut between two characters with "..."; no line is
 * wider than the screen, no character is broken. */
static void test_top_wide(void **state)
{
        (void)state;
        assert_non_null(setlocale(LC_CTYPE, "C.UTF-8"));
        struct facts *f;
        struct scan_result *r;
        struct live_view *v = killed_view(&f, &r);
        struct live_gpu *g = (struct live_gpu *)live_view_gpu(v, 1);
        const char *next = "安全地释放它（每个进程都会被重新检查、通过 pidfd 发送信号并测量显存）："
                           "`sudo ghostvram reclaim --gpu 1` 显示计划，加上 --yes 即执行（手动：kill -TERM 31301 31302）";
        str_set(&g->next_step, next);
        str_set(&g->summary, "2048 MiB 残留显存由已终止作业的 2 个孤儿进程持有，它们仍打开着设备文件并占用着上下文");
        struct top_canvas c = { 0 };
        const int cols = 61;            /* odd: a wide character cannot fill the last column */
        assert_int_equal(top_canvas_resize(&c, 40, cols), 0);
        c.utf8 = true;
        struct top_state s = { .now = T0 + 1, .interval_s = 1, .focus = 1, .stale_after_s = 4, .status = "",
                               .message = "" };
        top_draw(&c, v, NULL, &s);
        char line[1024], joined[2048] = "", want[2048], got[2048];
        int next_n = 0;
        bool in = false, summary_cut = false;
        for (int y = 0; y < c.rows; y++) {
                top_canvas_line(&c, y, line, sizeof(line));
                assert_true(line_cols(line) <= (size_t)cols);
                if (strstr(line, "2048 MiB \u6b8b\u7559") && strstr(line, "...")) {
                        /* cut between two Chinese characters, the "..." right after one */
                        const char *dots = strstr(line, "...");
                        assert_true(dots - line >= 3 && (unsigned char)dots[-3] >= 0xe0);
                        summary_cut = true;
                }
                int part = next_step_line(line, &in);
                if (part < 0)
                        break;
                if (!part)
                        continue;
                next_n++;
                strncat(joined, line + 8, sizeof(joined) - strlen(joined) - 1);
        }
        assert_true(summary_cut);
        assert_true(next_n >= 3 && next_n <= 4);
        no_spaces(next, want, sizeof(want));
        no_spaces(joined, got, sizeof(got));
        assert_string_equal(got, want);
        /* a dialog over a wide character leaves no half of it */
        s.dialog = TOP_DIALOG_HELP;
        top_draw(&c, v, NULL, &s);
        for (int y = 0; y < c.rows; y++) {
                top_canvas_line(&c, y, line, sizeof(line));
                assert_true(line_cols(line) <= (size_t)cols);
        }
        top_canvas_free(&c);
        live_view_free(v);
        scan_result_free(r);
        facts_destroy(f);
        setlocale(LC_CTYPE, "C");
}

/* Why there is no driver, whole (the view kept 80 bytes of it) */
static void test_view_driver_error_whole(void **state)
{
        (void)state;
        struct facts *f = facts_new(1, true, 0);
        f->gpu->driver_present = false;
        snprintf(f->gpu->error, sizeof(f->gpu->error), "no NVIDIA driver on this host (libnvidia-ml.so.1 not found: "
                 "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1: cannot open shared object file: No such file or "
                 "directory; tried /usr/lib64/libnvidia-ml.so.1 too)");
        struct scan_result *r = build(f, NULL);
        struct live_view *v = NULL;
        assert_int_equal(live_view_build(r, false, true, 0.01, &v), 0);
        assert_string_equal(v->driver, f->gpu->error);
        live_view_free(v);
        /* and the status top and serve show for the cycle: whole (it was cut at 150 bytes) */
        struct sample smp = { .res = r, .errors = SCAN_ERR_GPU, .why = "" };
        char status[LIVE_STATUS_MAX], want[LIVE_STATUS_MAX];
        live_sample_status(&smp, status, sizeof(status));
        snprintf(want, sizeof(want), "no NVIDIA driver: %s", f->gpu->error);
        assert_string_equal(status, want);
        scan_result_free(r);
        facts_destroy(f);
}

/* Rows by hand: pid, ppid, tie, user, comm, figures. */
static struct live_row row(pid_t pid, pid_t ppid, pid_t tie, const char *user, const char *comm, int64_t mem, int sm,
                           double cpu, uint64_t rss, double start)
{
        struct live_row w;
        memset(&w, 0, sizeof(w));
        w.pid = pid;
        w.ppid = ppid;
        w.tie_pid = tie;
        w.gpu = 0;
        w.state = 'S';
        snprintf(w.user, sizeof(w.user), "%s", user);
        snprintf(w.comm, sizeof(w.comm), "%s", comm);
        w.listed_bytes = mem;
        w.sm_util = sm;
        w.cpu_pct = cpu;
        w.rss_known = true;
        w.rss_bytes = rss;
        w.start_time = start;
        w.mig_instance = GPU_INSTANCE_NONE;
        return w;
}

static void order(const struct live_view *v, struct top_state *s, const char *want)
{
        size_t idx[16];
        unsigned depth[16];
        size_t n = s->tree ? top_rows_tree(v, s, idx, depth, 16) : top_rows(v, s, idx, 16);
        char got[128] = "";
        for (size_t i = 0; i < n; i++) {
                size_t l = strlen(got);
                if (s->tree)
                        snprintf(got + l, sizeof(got) - l, "%s%d:%u", i ? " " : "", (int)v->rows[idx[i]].pid, depth[i]);
                else
                        snprintf(got + l, sizeof(got) - l, "%s%d", i ? " " : "", (int)v->rows[idx[i]].pid);
        }
        assert_string_equal(got, want);
}

/* Sorting by every column (and reversed), the filter, the tree: parent by PID, else the owner
 * the link names; a cycle of reused PIDs still lists every row once. */
static void test_top_rows(void **state)
{
        (void)state;
        struct live_row rows[6];
        rows[0] = row(100, 1, 0, "alice", "python", 4 * (int64_t)GIB, 60, 12.5, 3 * GIB, T0 - 100);   /* a job's owner */
        rows[1] = row(101, 100, 0, "alice", "pt_worker", -1, 0, 80.0, 1 * GIB, T0 - 90);            /* its worker */
        rows[2] = row(102, 1, 100, "alice", "pt_worker", -1, -1, 1.0, 2 * GIB, T0 - 90);            /* setsid'd worker: tied */
        rows[3] = row(200, 1, 0, "bob", "nvidia-smi", -1, -1, -1, 64 * MIB, T0 - 5);                /* a monitor */
        rows[4] = row(300, 301, 0, "carol", "train", 1 * (int64_t)GIB, 20, 3.0, 512 * MIB, T0 - 1000); /* a cycle: 300 <- 301 */
        rows[5] = row(301, 300, 0, "carol", "train", -1, -1, 0.5, 256 * MIB, T0 - 999);
        char cmd[] = "python -m worker";
        rows[1].cmdline = cmd;
        struct live_view v;
        memset(&v, 0, sizeof(v));
        v.rows = rows;
        v.n_rows = 6;
        struct top_state s = { .focus = -1 };
        static const struct {
                enum top_sort sort;
                const char *order;
        } by[] = {
                { TOP_SORT_PID, "100 101 102 200 300 301" },  { TOP_SORT_MEM, "100 300 101 102 200 301" },
                { TOP_SORT_SM, "100 300 101 102 200 301" },   { TOP_SORT_CPU, "101 100 300 102 301 200" },
                { TOP_SORT_RSS, "100 102 101 300 301 200" },  { TOP_SORT_TIME, "300 301 100 101 102 200" },
                { TOP_SORT_USER, "100 101 102 200 300 301" },
                /* the command line where it was read, else comm */
                { TOP_SORT_COMMAND, "200 102 100 101 300 301" },
        };
        for (size_t i = 0; i < sizeof(by) / sizeof(by[0]); i++) {
                s.sort = by[i].sort;
                order(&v, &s, by[i].order);
        }
        s.sort_reverse = true;
        order(&v, &s, "300 301 101 100 102 200");
        s.sort_reverse = false;
        s.sort = TOP_SORT_PID;
        /* the filter: any case in user, command, role, link; digits: a PID exactly */
        s.filter = "WORKER";
        order(&v, &s, "101 102");
        s.filter = "20";
        order(&v, &s, "");
        s.filter = "200";
        order(&v, &s, "200");
        s.filter = "bob";
        order(&v, &s, "200");
        s.filter = "-m w";      /* in 101's command line */
        order(&v, &s, "101");
        s.filter = "";
        /* the tree: 101 under 100 (its parent), 102 under 100 (tied to it); 300/301 a cycle */
        s.tree = true;
        order(&v, &s, "100:0 101:1 102:1 200:0 300:0 301:1");
        s.filter = "pt_";
        order(&v, &s, "101:0 102:0");
}

static void test_top_sizes(void **state)
{
        (void)state;
        static const struct {
                uint64_t bytes;
                const char *text;
        } sizes[] = { { 0, "0" }, { 712 * 1024, "712K" }, { 2 * MIB, "2.0M" }, { 1536 * MIB, "1.5G" },
                      { 999 * 1024, "999K" }, { 1000 * 1024, "1.0M" } };
        static const struct {
                double s;
                const char *text;
        } times[] = { { 59, "0:59" }, { 3599, "59:59" }, { 3600 + 62, "1:01:02" },
                      { 3 * 86400 + 4 * 3600 + 5 * 60 + 6, "3-04:05:06" }, { -5, "0:00" } };
        char b[32];
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                top_size_text(sizes[i].bytes, b, sizeof(b));
                assert_string_equal(b, sizes[i].text);
        }
        for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
                top_elapsed_text(times[i].s, b, sizeof(b));
                assert_string_equal(b, times[i].text);
        }
}

/* A GPU's figures: every one shown, n/a where the driver gives none; the graphs. */
static void test_top_telemetry(void **state)
{
        (void)state;
        struct facts *f;
        struct scan_result *r;
        struct live_view *v = killed_view(&f, &r);
        struct live_gpu *g = &v->gpus[1];
        gpu_telemetry_unknown(&g->tel);
        g->tel.queried = true;
        g->tel.util_gpu = 60;
        g->tel.util_mem = 12;
        g->tel.temp_c = 58;
        g->tel.power_mw = 250400;
        g->tel.power_limit_mw = 700000;
        g->tel.clock_sm_mhz = 1410;
        g->tel.clock_mem_mhz = 2619;
        g->tel.pcie_rx_kbs = 3000;
        g->tel.pcie_tx_kbs = 512;
        g->tel.enc_pct = 0;
        g->tel.dec_pct = 7;
        g->health_queried = true;
        g->ecc_uncorrected = 2;
        g->remap_pending = 1;
        g->remap_failed = 0;
        g->retired_pending = 0;
        gpu_telemetry_unknown(&v->gpus[0].tel);
        v->gpus[0].tel.queried = true;
        v->gpus[0].ecc_uncorrected = v->gpus[0].remap_pending = v->gpus[0].remap_failed = -1;
        v->gpus[0].retired_pending = -1;
        struct live_history h = { 0 };
        for (int i = 0; i < 8; i++) {
                g->tel.util_gpu = i < 4 ? 0 : 100;
                assert_int_equal(live_history_add(&h, v, T0 - 8 + i), 0);
        }
        g->tel.util_gpu = 60;
        struct top_canvas c = { 0 };
        assert_int_equal(top_canvas_resize(&c, 60, 160), 0);
        struct top_state s = { .now = T0 + 1, .interval_s = 1, .focus = -1, .stale_after_s = 4, .status = "",
                               .message = "" };
        top_draw(&c, v, &h, &s);
        assert_true(canvas_has(&c, "  GPU 60%  MEM 12%  TEMP 58C  POW 250/700 W  CLK 1410/2619 MHz  FAN n/a  "
                                   "PCIe RX 3 MB/s TX 512 KB/s  ENC 0% DEC 7%  ECC 2  REMAP pending"));
        assert_true(canvas_has(&c, "  GPU n/a  MEM n/a  TEMP n/a  POW n/a/n/a  CLK n/a/n/a  FAN n/a  PCIe RX n/a TX n/a  "
                                   "ENC n/a DEC n/a  ECC n/a  REMAP n/a"));
        /* GPU 1's graph: 4 idle points then 4 at 100% (_ then #), right-aligned in 24 cells; used
         * 2048 of 81920 MiB (2%); GPU 0's utilisation unknown: ? */
        assert_true(canvas_has(&c, "  util                  ____####  60%   used                  ________   2%"));
        assert_true(canvas_has(&c, "  util                  ????????  n/a   used                  ________   0%"));
        top_canvas_free(&c);
        live_history_free(&h);
        live_view_free(v);
        scan_result_free(r);
        facts_destroy(f);
}

/* %CPU: from the CPU time between two views of the same process; over its life in the first. */
static void test_view_cpu(void **state)
{
        (void)state;
        struct live_row a = row(10, 1, 0, "u", "c", -1, -1, -1, 0, T0 - 100);
        struct live_row b = row(11, 1, 0, "u", "c", -1, -1, -1, 0, T0 - 100);
        a.cpu_known = b.cpu_known = true;
        a.cpu_ticks = 1000; /* 10 s of 100 at 100 ticks a second */
        b.cpu_ticks = 50;
        struct live_view prev;
        memset(&prev, 0, sizeof(prev));
        struct live_row pr[2] = { a, b };
        prev.rows = pr;
        prev.n_rows = 2;
        prev.finished = T0;
        live_view_cpu(&prev, NULL, 100);
        assert_true(pr[0].cpu_pct > 9.99 && pr[0].cpu_pct < 10.01);
        struct live_view now = prev;
        struct live_row nr[2] = { a, b };
        nr[0].cpu_ticks = 1200;         /* 2 s of CPU in 4 s: 50% */
        nr[1].start_time = T0 - 5;      /* another process with PID 11: no figure */
        nr[1].cpu_ticks = 60;
        now.rows = nr;
        now.finished = T0 + 4;
        live_view_cpu(&now, &prev, 100);
        assert_true(nr[0].cpu_pct > 49.99 && nr[0].cpu_pct < 50.01);
        assert_true(nr[1].cpu_pct < 0);
}

/* A client of the MPS server (NVML's MPS list) and a MIG instance's process, as rows; a row's
 * share of its GPU from the driver's per-process samples. */
static void test_view_mps_mig(void **state)
{
        (void)state;
        struct facts *f = facts_new(1, true, 0);
        gpu_used(f, 0, 3 * GIB);
        nvml_proc(f, 0, 500, 1 * GIB);
        f->gpu->gpus[0].procs[0].kinds = GPU_PROC_MPS;
        nvml_proc(f, 0, 600, 2 * GIB);
        f->gpu->gpus[0].procs[1].gpu_instance = 3;
        for (pid_t p = 500; p <= 600; p += 100) {
                struct host_proc h = proc(p, 1, p, p, 'S', "python");
                cuda_nodes(&h, 1);
                holder(f, h);
        }
        struct gpu_telemetry *t = &f->gpu->gpus[0].tel;
        gpu_telemetry_unknown(t);
        t->queried = t->procs_known = true;
        t->procs[t->n_procs++] = (struct gpu_proc_util){ .pid = 600, .sm = 70, .mem = 20 };
        finish(f, NULL, 0);
        struct scan_result *r = build(f, f);
        struct live_view *v = NULL;
        assert_int_equal(live_view_build(r, false, true, 0.01, &v), 0);
        assert_int_equal(v->n_rows, 2);
        assert_string_equal(v->rows[0].role, "owner, MPS client");
        assert_true(v->rows[0].mps);
        assert_int_equal(v->rows[0].sm_util, 0); /* known: no sample, nothing ran */
        assert_string_equal(v->rows[1].role, "owner");
        assert_int_equal(v->rows[1].mig_instance, 3);
        assert_int_equal(v->rows[1].sm_util, 70);
        assert_int_equal(v->rows[1].mem_util, 20);
        struct top_canvas c = { 0 };
        assert_int_equal(top_canvas_resize(&c, 30, 132), 0);
        struct top_state s = { .now = T0 + 1, .interval_s = 1, .focus = -1, .stale_after_s = 4, .status = "",
                               .message = "" };
        top_draw(&c, v, NULL, &s);
        assert_true(canvas_has(&c, "    600 alice      S 0/3       2048   70 "));
        assert_true(canvas_has(&c, "owner, MPS client"));
        top_canvas_free(&c);
        live_view_free(v);
        scan_result_free(r);
        facts_destroy(f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_view_rows), cmocka_unit_test(test_ring), cmocka_unit_test(test_page_esc),
                cmocka_unit_test(test_page), cmocka_unit_test(test_top_screen),
                cmocka_unit_test(test_page_starts_with_serve), cmocka_unit_test(test_top_texts),
                cmocka_unit_test(test_top_cuts_at_a_word), cmocka_unit_test(test_top_wide),
                cmocka_unit_test(test_view_driver_error_whole), cmocka_unit_test(test_top_rows),
                cmocka_unit_test(test_top_sizes), cmocka_unit_test(test_top_telemetry), cmocka_unit_test(test_view_cpu),
                cmocka_unit_test(test_view_mps_mig),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
