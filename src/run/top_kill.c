#include "run/top_kill.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "act/reclaim_act.h"
#include "util/i18n.h"
#include "util/strf.h"

size_t top_kill_args(const struct top_kill *k, char pid_buf[16], const char *args[TOP_KILL_ARGS])
{
        size_t n = 0;
        snprintf(pid_buf, 16, "%d", (int)k->pid);
        static const char *const fixed[] = { "ghostvram", "reclaim", "--pid", NULL, "--grace", "none", "--wait", "3s",
                                             "--confirm", "200ms", "--yes", "--json" };
        for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
                args[n++] = fixed[i] ? fixed[i] : pid_buf;
        args[n++] = "--signal";
        args[n++] = k->sig == SIGKILL ? "KILL" : "TERM";
        if (k->force)
                args[n++] = "--force";
        if (k->proc_root && strcmp(k->proc_root, "/proc") != 0) {
                args[n++] = "--proc";
                args[n++] = k->proc_root;
        }
        if (k->nvml_lib) {
                args[n++] = "--nvml-lib";
                args[n++] = k->nvml_lib;
        }
        args[n] = NULL;
        return n;
}

bool top_kill_same_process(const struct top_kill *k, const char *proc_root)
{
        if (!k->start_ticks)
                return true;
        struct reclaim_sys sys;
        reclaim_sys_real(&sys, proc_root);
        uint64_t ticks = 0;
        char state = '?';
        return sys.read_stat(sys.ctx, k->pid, &ticks, &state) == 0 && ticks == k->start_ticks;
}

static const char *jstr(const json_t *o, const char *key)
{
        const char *s = json_string_value(json_object_get(o, key));
        return s ? s : "";
}

/* the rules a second confirmation (--force) lifts for --pid (act/reclaim_plan.h) */
static bool forcible(const char *rule)
{
        return !strcmp(rule, "live-owner") || !strcmp(rule, "live-family") || !strcmp(rule, "ghostvram-process");
}

static int judge_skipped(const struct top_kill *k, const json_t *skipped, struct top_kill_result *ret)
{
        size_t i;
        const json_t *sk;
        int e = 0;
        json_array_foreach(skipped, i, sk)
        {
                if (json_integer_value(json_object_get(sk, "pid")) != k->pid)
                        continue;
                const char *rule = jstr(sk, "rule");
                e |= str_addf(&ret->text, _("PID %d was not signalled: %s\n"), (int)k->pid, jstr(sk, "reason"));
                if (forcible(rule) && !k->force) {
                        ret->outcome = TOP_KILL_NEEDS_FORCE;
                        e |= str_addf(&ret->text, _("\nIt belongs to a running job (%s): ending it ends that job's work. "
                                                    "Press F to send SIG%s anyway, any other key to leave it.\n"),
                                      rule, k->sig == SIGKILL ? "KILL" : "TERM");
                } else {
                        ret->outcome = TOP_KILL_REFUSED;
                }
        }
        return e;
}

static int judge_actions(const struct top_kill *k, const json_t *actions, struct top_kill_result *ret)
{
        size_t i;
        const json_t *a;
        int e = 0;
        json_array_foreach(actions, i, a)
        {
                if (json_integer_value(json_object_get(a, "pid")) != k->pid)
                        continue;
                const char *res = jstr(a, "result");
                e |= str_addf(&ret->text, _("PID %d (%s): %s after %.3g s (signals: SIG%s)\n"), (int)k->pid, jstr(a, "comm"),
                              res, json_number_value(json_object_get(a, "seconds")), jstr(a, "signal"));
                if (json_string_value(json_object_get(a, "detail")))
                        e |= str_addf(&ret->text, "  %s\n", jstr(a, "detail"));
                bool still = !strcmp(res, "survived") || !strcmp(res, "stuck-in-D") || !strcmp(res, "left");
                ret->outcome = still ? TOP_KILL_STILL_THERE
                               : !strcmp(res, "not-permitted") || !strcmp(res, "error") ? TOP_KILL_FAILED
                                                                                          : TOP_KILL_ENDED;
                if (still && k->sig != SIGKILL)
                        e |= str_addf(&ret->text, "%s", _("\nIt is still there: press k again to send SIGKILL.\n"));
        }
        return e;
}

int top_kill_judge(const struct top_kill *k, const char *json, size_t len, int rc, struct top_kill_result *ret)
{
        ret->outcome = TOP_KILL_FAILED;
        ret->text = NULL;
        json_error_t je;
        json_t *doc = json && len ? json_loadb(json, len, 0, &je) : NULL;
        int e = 0;
        if (!doc) {
                e = str_setf(&ret->text, _("ghostvram reclaim exited %d without a report\n"), rc);
                return e < 0 ? -ENOMEM : 0;
        }
        const json_t *plan = json_object_get(doc, "plan");
        e |= judge_skipped(k, json_object_get(plan, "skipped"), ret);
        e |= judge_actions(k, json_object_get(doc, "actions"), ret);
        const char *err = json_string_value(json_object_get(doc, "error"));
        if (err)
                e |= str_addf(&ret->text, "%s\n", err);
        if (!ret->text) /* neither signalled nor skipped: said in the summary */
                e |= str_addf(&ret->text, "%s\n", jstr(doc, "summary"));
        e |= str_addf(&ret->text, _("\n(ghostvram reclaim --pid %d --signal %s%s exited %d; logged to syslog)\n"), (int)k->pid,
                      k->sig == SIGKILL ? "KILL" : "TERM", k->force ? " --force" : "", rc);
        json_decref(doc);
        return e < 0 ? -ENOMEM : 0;
}
