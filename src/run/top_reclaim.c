#include "run/top_reclaim.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/i18n.h"
#include "util/spawn.h"
#include "util/strf.h"

#define PLAN_OUTPUT_MAX (256u << 10)

/* ---- reclaim's plan: `ghostvram reclaim` in a child, on a worker thread ------------------- */

struct plan_job {
        struct top_reclaim *rc;
        char gpu[16];
        bool act;
};

/* The child inherits the worker's mask (every signal blocked): give it none. */
static void unblock_signals(void)
{
        sigset_t none;
        sigemptyset(&none);
        pthread_sigmask(SIG_SETMASK, &none, NULL);
}

/* What a child wrote to stderr since the last look (the screen's stderr is a file meanwhile). */
static void add_stderr(struct top_reclaim *rc, struct buf *out)
{
        if (rc->err_fd < 0)
                return;
        char chunk[4096];
        ssize_t got;
        while ((got = pread(rc->err_fd, chunk, sizeof(chunk), rc->err_seen)) > 0) {
                buf_append(out, chunk, (size_t)got);
                rc->err_seen += got;
        }
}

/* The finished output into rc for the screen (under the lock). */
static void publish_text(struct top_reclaim *rc, char *text)
{
        top_run_lock(rc->run);
        free(rc->text);
        rc->text = text;
        rc->running = false;
        top_run_unlock(rc->run);
}

static void *plan_main(void *arg)
{
        struct plan_job *j = arg;
        struct top_reclaim *rc = j->rc;
        const char *args[16] = { "ghostvram", "reclaim", j->act ? "--yes" : "--dry-run" };
        size_t n = 3;
        if (j->gpu[0]) {
                args[n++] = "--gpu";
                args[n++] = j->gpu;
        }
        if (strcmp(rc->proc_root, "/proc") != 0) {
                args[n++] = "--proc";
                args[n++] = rc->proc_root;
        }
        if (rc->nvml_lib) {
                args[n++] = "--nvml-lib";
                args[n++] = rc->nvml_lib;
        }
        args[n] = NULL;
        unblock_signals();
        struct buf out = BUF_INIT(PLAN_OUTPUT_MAX);
        int status = spawn_self(NULL, args, &out, false);
        add_stderr(rc, &out);
        /* TRANSLATORS: the first %s%s%s is reclaim's options, e.g. "--dry-run --gpu 1" */
        buf_printf(&out, _("\n(ghostvram reclaim %s%s%s exited %d)\n"), j->act ? "--yes" : "--dry-run",
                   j->gpu[0] ? " --gpu " : "", j->gpu, status);
        if (!j->act)
                buf_printf(&out, _("To act on a fresh plan with the same rules: press A here (root only, asks first),\n"
                                   "or run `sudo ghostvram reclaim%s%s --yes`.\n"),
                           j->gpu[0] ? " --gpu " : "", j->gpu);
        char *text = buf_steal(&out);
        buf_free(&out);
        publish_text(rc, text);
        free(j);
        return NULL;
}

/* Claim the worker for a job titled by title_fn (under the lock); false when it is busy. */
static bool claim(struct top_reclaim *rc, void (*title_fn)(struct top_reclaim *, const void *), const void *arg)
{
        top_run_lock(rc->run);
        bool busy = rc->running;
        if (!busy) {
                rc->running = true;
                title_fn(rc, arg);
        }
        top_run_unlock(rc->run);
        return !busy;
}

/* The worker could not start: free it again. */
static void unclaim(struct top_reclaim *rc)
{
        top_run_lock(rc->run);
        rc->running = false;
        top_run_unlock(rc->run);
}

static void plan_title(struct top_reclaim *rc, const void *arg)
{
        const struct plan_job *j = arg;
        if (j->gpu[0])
                snprintf(rc->title, sizeof(rc->title),
                         j->act ? _("Reclaim (acting): GPU %s") : _("Reclaim plan (dry run): GPU %s"), j->gpu);
        else
                snprintf(rc->title, sizeof(rc->title), "%s",
                         j->act ? _("Reclaim (acting): every GPU") : _("Reclaim plan (dry run): every GPU"));
}

const char *top_reclaim_plan(struct top_reclaim *rc, int focus, bool act)
{
        struct plan_job *j = calloc(1, sizeof(*j));
        if (!j)
                return _("out of memory");
        j->rc = rc;
        j->act = act;
        if (focus >= 0)
                snprintf(j->gpu, sizeof(j->gpu), "%d", focus);
        if (!claim(rc, plan_title, j)) {
                free(j);
                return _("reclaim is still running");
        }
        pthread_t th;
        if (top_run_thread(&th, plan_main, j, true) < 0) {
                unclaim(rc);
                free(j);
                return _("cannot start reclaim");
        }
        return NULL;
}

/* ---- k: one process, through reclaim's rules (run/top_kill.h) ------------------------------------ */

/* The kill k asked for, checked again and run: its outcome and text. */
static struct top_kill_result kill_run(const struct top_kill *k)
{
        char pid[16];
        const char *args[TOP_KILL_ARGS];
        top_kill_args(k, pid, args);
        struct top_kill_result res = { .outcome = TOP_KILL_ENDED, .text = NULL };
        if (!top_kill_same_process(k, k->proc_root)) {
                str_setf(&res.text, _("PID %d is not the process you chose any more (it ended, or its number went to "
                                      "another process): nothing was sent.\n"),
                         (int)k->pid);
                return res;
        }
        struct buf out = BUF_INIT(PLAN_OUTPUT_MAX);
        int status = spawn_self(NULL, args, &out, false);
        if (top_kill_judge(k, out.data, out.len, status, &res) < 0)
                res = (struct top_kill_result){ .outcome = TOP_KILL_FAILED, .text = NULL };
        buf_free(&out);
        return res;
}

static void *kill_main(void *arg)
{
        struct top_reclaim *rc = arg;
        top_run_lock(rc->run);
        struct top_kill k = rc->kill;
        top_run_unlock(rc->run);
        unblock_signals();
        struct top_kill_result res = kill_run(&k);
        top_run_lock(rc->run);
        free(rc->text);
        rc->text = res.text ? res.text : strdup(_("out of memory"));
        rc->kill_done = true;
        rc->kill_outcome = res.outcome;
        rc->running = false;
        top_run_unlock(rc->run);
        return NULL;
}

struct kill_ask {
        const struct top_kill *k;
        const char *comm;
};

static void kill_title(struct top_reclaim *rc, const void *arg)
{
        const struct kill_ask *a = arg;
        rc->kill = *a->k;
        rc->kill.proc_root = rc->proc_root;
        rc->kill.nvml_lib = rc->nvml_lib;
        snprintf(rc->title, sizeof(rc->title), _("SIG%s to PID %d (%.40s)%s"), a->k->sig == SIGKILL ? "KILL" : "TERM",
                 (int)a->k->pid, a->comm, a->k->force ? " --force" : "");
}

const char *top_reclaim_kill(struct top_reclaim *rc, const struct top_kill *k, const char *comm)
{
        struct kill_ask a = { k, comm };
        if (!claim(rc, kill_title, &a))
                return _("reclaim is still running");
        pthread_t th;
        if (top_run_thread(&th, kill_main, rc, true) < 0) {
                unclaim(rc);
                return _("cannot start reclaim");
        }
        return NULL;
}
