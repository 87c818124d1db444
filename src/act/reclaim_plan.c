/* reclaim_plan: the targets of `ghostvram reclaim`. Pure; the rules are in reclaim_plan.h and
 * docs/reclaim.md. */
#include "act/reclaim_plan.h"
#include "model/daemons.h"
#include "util/fileio.h"
#include "util/i18n.h"

#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>




static const char *const rule_names[RECLAIM_RULE_COUNT] = {
        [RECLAIM_TARGET] = "target",
        [RECLAIM_NOT_ATTRIBUTED] = "not-attributed",
        [RECLAIM_GHOST_UNCONFIRMED] = "ghost-unconfirmed",
        [RECLAIM_CANDIDATE] = "candidate-only",
        [RECLAIM_OTHER_GPU] = "other-gpu",
        [RECLAIM_NO_UVM] = "no-uvm",
        [RECLAIM_NVML_LISTED] = "nvml-listed",
        [RECLAIM_SHARES_SESSION] = "shares-session",
        [RECLAIM_SHARES_JOB] = "shares-job",
        [RECLAIM_NS_INIT] = "namespace-init",
        [RECLAIM_PID1] = "pid-1",
        [RECLAIM_KTHREAD] = "kernel-thread",
        [RECLAIM_SELF] = "ghostvram-itself",
        [RECLAIM_ANCESTOR] = "ghostvram-ancestor",
        [RECLAIM_PROTECTED_NAME] = "protected-name",
        [RECLAIM_POLICY_COMM] = "policy-comm",
        [RECLAIM_POLICY_CGROUP] = "policy-cgroup",
        [RECLAIM_POLICY_UNIT] = "policy-unit",
        [RECLAIM_DEAD] = "dead",
        [RECLAIM_NO_SUCH_PROCESS] = "no-such-process",
        [RECLAIM_NVML_BLIND] = "nvml-unknown",
        [RECLAIM_WEAK_LINK] = "weak-link",
        [RECLAIM_SHARES_GROUP] = "shares-group",
        [RECLAIM_NO_DEVICE] = "no-nvidia-device",
        [RECLAIM_GHOSTVRAM] = "ghostvram-process",
        [RECLAIM_LIVE_OWNER] = "live-owner",
        [RECLAIM_UNPROVEN] = "unproven",
        [RECLAIM_LIVE_FAMILY] = "live-family",
        [RECLAIM_FAMILY_KEPT] = "family-kept",
};

const char *reclaim_rule_name(enum reclaim_rule r)
{
        return (unsigned)r < RECLAIM_RULE_COUNT && rule_names[r] ? rule_names[r] : "unknown";
}

/* ---- the site policy ------------------------------------------------------------------------ */

/* A sentence into a caller's buffer (an error, a reason); NULL or empty buffers are fine. */
static void whyf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void whyf(char *err, size_t errlen, const char *fmt, ...)
{
        if (!err || !errlen)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
}

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

int reclaim_policy_parse(const char *buf, size_t len, const char *source, struct reclaim_policy *p,
                         char *err, size_t errlen)
{
        static const struct { const char *word; enum reclaim_policy_kind kind; } words[] = {
                { "comm", RECLAIM_POLICY_KIND_COMM },
                { "cgroup", RECLAIM_POLICY_KIND_CGROUP },
                { "unit", RECLAIM_POLICY_KIND_UNIT },
        };
        const char *src = source ? source : "policy";
        size_t pos = 0;
        unsigned lineno = 0;
        snprintf(p->source, sizeof(p->source), "%s", src);
        while (pos < len) {
                const char *line = buf + pos;
                const char *nl = memchr(line, '\n', len - pos);
                size_t ll = nl ? (size_t)(nl - line) : len - pos;
                pos += ll + (nl ? 1 : 0);
                lineno++;
                /* a comment: '#' at the start or after whitespace */
                for (size_t i = 0; i < ll; i++)
                        if (line[i] == '#' && (i == 0 || is_space(line[i - 1]))) {
                                ll = i;
                                break;
                        }
                while (ll && is_space(line[ll - 1]))
                        ll--;
                size_t s = 0;
                while (s < ll && is_space(line[s]))
                        s++;
                if (s == ll)
                        continue;
                for (size_t i = s; i < ll; i++)
                        if ((unsigned char)line[i] < 0x20 && line[i] != '\t') {
                                whyf(err, errlen, _("%s:%u: control character in the line"), src, lineno);
                                return -EINVAL;
                        }
                size_t w = s;
                while (w < ll && !is_space(line[w]))
                        w++;
                size_t wl = w - s;
                int kind = -1;
                for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                        if (strlen(words[i].word) == wl && memcmp(line + s, words[i].word, wl) == 0)
                                kind = (int)words[i].kind;
                if (kind < 0) {
                        /* the file may be anything (--policy /etc/shadow): only its first word's
                         * leading letters, digits, '_', '-' and '.' are shown, at most 40 */
                        size_t tl = 0;
                        while (tl < wl && tl < 40 && (isalnum((unsigned char)line[s + tl]) || strchr("_-.", line[s + tl])))
                                tl++;
                        whyf(err, errlen, _("%s:%u: unknown keyword '%.*s%s' (expected comm, cgroup or unit)"), src, lineno,
                             (int)tl, line + s, tl < wl ? "..." : "");
                        return -EINVAL;
                }
                while (w < ll && is_space(line[w]))
                        w++;
                size_t vl = ll - w;
                const char *v = line + w;
                if (vl == 0) {
                        whyf(err, errlen, _("%s:%u: '%.*s' needs a value"), src, lineno, (int)wl, line + s);
                        return -EINVAL;
                }
                if (vl >= RECLAIM_POLICY_VALUE_MAX) {
                        whyf(err, errlen, _("%s:%u: value longer than %d characters"), src, lineno,
                                RECLAIM_POLICY_VALUE_MAX - 1);
                        return -EINVAL;
                }
                if (kind == RECLAIM_POLICY_KIND_CGROUP && v[0] != '/') {
                        whyf(err, errlen, _("%s:%u: cgroup '%.*s' must be a path from the cgroup root, starting with '/'"),
                                src, lineno, (int)vl, v);
                        return -EINVAL;
                }
                if ((kind == RECLAIM_POLICY_KIND_UNIT || kind == RECLAIM_POLICY_KIND_COMM) &&
                    memchr(v, '/', vl)) {
                        whyf(err, errlen, _("%s:%u: '%.*s' is a name, not a path (no '/')"), src, lineno, (int)vl, v);
                        return -EINVAL;
                }
                if (kind == RECLAIM_POLICY_KIND_UNIT && (!memchr(v, '.', vl) || memchr(v, ' ', vl))) {
                        whyf(err, errlen, _("%s:%u: unit '%.*s' must be a full unit name such as nvidia-dcgm.service"),
                                src, lineno, (int)vl, v);
                        return -EINVAL;
                }
                if (p->n >= RECLAIM_POLICY_MAX_ENTRIES) {
                        whyf(err, errlen, _("%s:%u: more than %d entries"), src, lineno, RECLAIM_POLICY_MAX_ENTRIES);
                        return -E2BIG;
                }
                struct reclaim_policy_entry *n = realloc(p->entries, (p->n + 1) * sizeof(*n));
                if (!n) {
                        whyf(err, errlen, _("out of memory"));
                        return -ENOMEM;
                }
                p->entries = n;
                struct reclaim_policy_entry *e = &p->entries[p->n++];
                memset(e, 0, sizeof(*e));
                e->kind = (enum reclaim_policy_kind)kind;
                memcpy(e->value, v, vl);
                e->line = lineno;
        }
        return 0;
}

void reclaim_policy_free(struct reclaim_policy *p)
{
        if (!p)
                return;
        free(p->entries);
        p->entries = NULL;
        p->n = 0;
}

/* ---- matching -------------------------------------------------------------------------------- */

/* Is path `cg` the cgroup `prefix` or below it? */
static bool cgroup_under(const char *cg, const char *prefix)
{
        if (!cg || !prefix)
                return false;
        size_t pl = strlen(prefix);
        while (pl > 1 && prefix[pl - 1] == '/')
                pl--;
        if (pl == 1 && prefix[0] == '/')
                return true;
        return strncmp(cg, prefix, pl) == 0 && (cg[pl] == '\0' || cg[pl] == '/');
}

/* Is unit one of the components of the process's cgroup path (or its unit)? */
static bool in_unit(const struct host_proc *p, const char *unit)
{
        if (p->systemd_unit[0] && strcmp(p->systemd_unit, unit) == 0)
                return true;
        const char *cg = p->cgroup;
        size_t ul = strlen(unit);
        while (cg && *cg) {
                while (*cg == '/')
                        cg++;
                size_t n = strcspn(cg, "/");
                if (n == ul && strncmp(cg, unit, ul) == 0)
                        return true;
                cg += n;
        }
        return false;
}


/* The rules no option overrides. */
static enum reclaim_rule hard_protection(const struct host_proc *p, const struct reclaim_plan_opts *o, char **why)
{
        if (p->pid == 1) {
                str_setf(why, _("PID 1 (init) is never signalled"));
                return RECLAIM_PID1;
        }
        if (p->kernel_thread) {
                str_setf(why, _("a kernel thread"));
                return RECLAIM_KTHREAD;
        }
        if (p->pid == o->self_pid) {
                str_setf(why, _("ghostvram itself"));
                return RECLAIM_SELF;
        }
        for (size_t i = 0; i < o->n_ancestors; i++)
                if (o->ancestors[i] == p->pid) {
                        str_setf(why, _("an ancestor of this ghostvram (its shell, sudo, a scheduler)"));
                        return RECLAIM_ANCESTOR;
                }
        return RECLAIM_TARGET;
}

/* Names and the site policy. */
static enum reclaim_rule soft_protection(const struct host_proc *p, const struct reclaim_plan_opts *o, char **why)
{
        for (size_t i = 0; gpu_daemons[i].name; i++)
                if (proc_name_matches(p->comm, p->cmdline, gpu_daemons[i].name)) {
                        str_setf(why, _("protected: %s (a GPU daemon, display server, device plugin or ghostvram)"),
                             gpu_daemons[i].name);
                        return RECLAIM_PROTECTED_NAME;
                }
        const struct reclaim_policy *pol = o->policy;
        for (size_t i = 0; pol && i < pol->n; i++) {
                const struct reclaim_policy_entry *e = &pol->entries[i];
                switch (e->kind) {
                case RECLAIM_POLICY_KIND_COMM:
                        if (proc_name_matches(p->comm, p->cmdline, e->value)) {
                                str_setf(why, _("protected by %s:%u (comm %s)"), pol->source, e->line, e->value);
                                return RECLAIM_POLICY_COMM;
                        }
                        break;
                case RECLAIM_POLICY_KIND_CGROUP:
                        if (cgroup_under(p->cgroup, e->value)) {
                                str_setf(why, _("protected by %s:%u (cgroup %s)"), pol->source, e->line, e->value);
                                return RECLAIM_POLICY_CGROUP;
                        }
                        break;
                case RECLAIM_POLICY_KIND_UNIT:
                        if (in_unit(p, e->value)) {
                                str_setf(why, _("protected by %s:%u (unit %s)"), pol->source, e->line, e->value);
                                return RECLAIM_POLICY_UNIT;
                        }
                        break;
                }
        }
        return RECLAIM_TARGET;
}

enum reclaim_rule reclaim_protection(const struct host_proc *p, const struct reclaim_plan_opts *o, char **why)
{
        enum reclaim_rule r = hard_protection(p, o, why);
        return r != RECLAIM_TARGET ? r : soft_protection(p, o, why);
}

/* ---- the plan --------------------------------------------------------------------------------- */

/* A tie to a live owner (the ledger's rule, model/jobs.h) as a reason not to act by default. */
static enum reclaim_rule tie_rule(const struct scan_result *r, const struct reclaim_plan_opts *o,
                                  const struct host_proc *h, char **why)
{
        pid_t live = 0;
        const char *what = NULL;
        switch (ledger_live_tie(r, h, o->self_proc, &live, &what)) {
        case JOB_TIE_FAMILY:
                str_setf(why, _("shares an open file description with PID %d, a live owner: that job's"), (int)live);
                return RECLAIM_LIVE_FAMILY;
        case JOB_TIE_PARENT:
                str_setf(why, _("a child of PID %d, a live owner"), (int)live);
                return RECLAIM_SHARES_GROUP;
        case JOB_TIE_GROUP:
                str_setf(why, _("in the process group of PID %d, a live owner"), (int)live);
                return RECLAIM_SHARES_GROUP;
        case JOB_TIE_SESSION:
                str_setf(why, _("shares session %d with PID %d, a live owner"), (int)h->sid, (int)live);
                return RECLAIM_SHARES_SESSION;
        case JOB_TIE_JOB:
                str_setf(why, _("same %s as PID %d, a live owner"), what ? _(what) : _("job"), (int)live);
                return RECLAIM_SHARES_JOB;
        default:
                return RECLAIM_TARGET;
        }
}

static int add_skip(struct reclaim_plan *p, const struct host_proc *h, pid_t pid, int gpu, enum reclaim_rule rule,
                    const char *reason)
{
        for (size_t i = 0; i < p->n_skipped; i++)
                if (p->skipped[i].pid == pid)
                        return 0;
        struct reclaim_skip *n = realloc(p->skipped, (p->n_skipped + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        p->skipped = n;
        struct reclaim_skip *s = &p->skipped[p->n_skipped++];
        memset(s, 0, sizeof(*s));
        s->pid = pid;
        snprintf(s->comm, sizeof(s->comm), "%s", h && h->comm ? h->comm : "");
        s->gpu = gpu;
        s->rule = rule;
        return str_set(&s->reason, reason);
}

static int add_target(struct reclaim_plan *p, const struct host_proc *h, int gpu, const struct attribution *a,
                      bool explicit_pid, const char *warning)
{
        struct reclaim_target *n = realloc(p->targets, (p->n_targets + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        p->targets = n;
        struct reclaim_target *t = &p->targets[p->n_targets++];
        memset(t, 0, sizeof(*t));
        t->pid = h->pid;
        t->start_ticks = h->start_ticks;
        t->uid = h->uid;
        t->state = h->state;
        snprintf(t->comm, sizeof(t->comm), "%s", h->comm ? h->comm : "");
        t->gpu = gpu;
        t->explicit_pid = explicit_pid;
        t->family = h->family;
        if (a) {
                t->link = a->link;
                t->to_pid = a->to_pid;
                str_set(&t->why, a->text);
        } else {
                str_set(&t->why, _("named by --pid"));
        }
        if (warning && *warning)
                str_set(&t->warning, warning);
        else if (h->state == 'D')
                str_set(&t->warning,
                         _("in D state: a queued SIGKILL takes effect only when its driver call returns"));
        for (size_t g = 0; gpu >= 0 && g < p->n_gpus; g++)
                if (p->gpus[g].index == (unsigned)gpu)
                        p->gpus[g].n_targets++;
        return 0;
}

static const struct gpu_ledger *ledger_of(const struct scan_result *r, unsigned index)
{
        for (size_t g = 0; g < r->n_gpus; g++)
                if (r->gpus[g].index == index)
                        return &r->gpus[g];
        return NULL;
}

/* The best attribution of holder hi: a non-candidate one on a selected GPU with a confirmed
 * ghost if there is one, else the first. Returns NULL if none. */
static const struct attribution *best_attribution(const struct scan_result *r, size_t hi, int only_gpu,
                                                  unsigned *ret_gpu)
{
        const struct attribution *best = NULL;
        int best_score = -1;
        for (size_t g = 0; g < r->n_gpus; g++) {
                const struct gpu_ledger *l = &r->gpus[g];
                for (size_t a = 0; a < l->n_attr; a++) {
                        if (l->attr[a].holder != hi)
                                continue;
                        int score = (only_gpu < 0 || (unsigned)only_gpu == l->index) * 4 + l->ghost_confirmed * 2 +
                                    !l->attr[a].candidate;
                        if (score > best_score) {
                                best = &l->attr[a];
                                best_score = score;
                                *ret_gpu = l->index;
                        }
                }
        }
        return best;
}

static int whole_families(const struct scan_result *r, struct reclaim_plan *p);

static int plan_default(const struct scan_result *r, const struct reclaim_plan_opts *o, struct reclaim_plan *p)
{
        const struct facts *f = r->facts;
        const struct host_report *h = f->host;
        char *why STR_AUTOFREE = NULL;
        int blind = -1;
        for (size_t g = 0; f->gpu && g < f->gpu->n_gpus && blind < 0; g++)
                if (!f->gpu->gpus[g].procs_known)
                        blind = (int)f->gpu->gpus[g].index;
        for (size_t i = 0; h && i < h->n_holders; i++) {
                const struct host_proc *hp = &h->holders[i];
                str_clear(&why);        /* this holder's reason, never the one before's */
                unsigned gpu = 0, lgpu = 0;
                const struct attribution *a = best_attribution(r, i, o->only_gpu, &gpu);
                bool uvm = host_proc_holds(hp, "nvidia-uvm");
                bool listed = ledger_listed_anywhere(f, hp->pid, &lgpu);
                int r_ = 0;
                if (!a) {
                        /* only CUDA processes are worth a line: monitors are not candidates at all */
                        if (!uvm)
                                continue;
                        if (listed) {
                                str_setf(&why, _("NVML lists it on GPU %u: an owner, not an orphan"), lgpu);
                                r_ = add_skip(p, hp, hp->pid, (int)lgpu, RECLAIM_NVML_LISTED, why);
                        } else {
                                r_ = add_skip(p, hp, hp->pid, -1, RECLAIM_NOT_ATTRIBUTED,
                                              _("holds nvidia-uvm, but no link ties it to a dead owner's ghost"));
                        }
                        if (r_ < 0)
                                return r_;
                        continue;
                }
                const struct gpu_ledger *l = ledger_of(r, gpu);
                enum reclaim_rule rule = reclaim_protection(hp, o, &why);
                if (rule == RECLAIM_TARGET && hp->n_nspid > 1 && hp->nspid[hp->n_nspid - 1] == 1) {
                        rule = RECLAIM_NS_INIT;
                        str_setf(&why, _("PID 1 of its own PID namespace (a container's init)"));
                }
                if (rule == RECLAIM_TARGET && (hp->state == 'Z' || hp->state == 'X' || hp->exiting)) {
                        rule = RECLAIM_DEAD;
                        str_setf(&why, _("already dead (%s)"), hp->exiting ? _("exiting") : _("zombie"));
                }
                if (rule == RECLAIM_TARGET && o->only_gpu >= 0 && gpu != (unsigned)o->only_gpu) {
                        rule = RECLAIM_OTHER_GPU;
                        str_setf(&why, _("attributed to GPU %u; --gpu %d selects another"), gpu, o->only_gpu);
                }
                if (rule == RECLAIM_TARGET && (!l || !l->ghost_confirmed)) {
                        rule = RECLAIM_GHOST_UNCONFIRMED;
                        str_setf(&why, _("GPU %u's ghost is not confirmed (below the noise floor or seen once)"), gpu);
                }
                if (rule == RECLAIM_TARGET && a->candidate) {
                        rule = RECLAIM_CANDIDATE;
                        str_setf(&why, _("only a candidate: several GPUs have a ghost and nothing says which is its"));
                }
                if (rule == RECLAIM_TARGET && a->confidence < CONF_MEDIUM) {
                        rule = RECLAIM_WEAK_LINK;
                        str_setf(&why, _("the link to GPU %u's ghost is weak (%s): name it with --pid to end it"), gpu,
                             link_name(a->link));
                }
                if (rule == RECLAIM_TARGET && !a->proof) {
                        rule = RECLAIM_UNPROVEN;
                        str_setf(&why, _("tied to GPU %u's ghost by %s only, not by a link to the dead owner: "
                             "name it with --pid to end it"), gpu, link_name(a->link));
                }
                /* a member of a proven family keeps the context whatever it holds besides */
                if (rule == RECLAIM_TARGET && !uvm && a->link != LINK_FAMILY) {
                        rule = RECLAIM_NO_UVM;
                        str_setf(&why, _("holds no nvidia-uvm: not a CUDA process (a monitor?)"));
                }
                if (rule == RECLAIM_TARGET && blind >= 0) {
                        rule = RECLAIM_NVML_BLIND;
                        str_setf(&why, _("GPU %d gave no process list: whether NVML lists it (an owner) cannot be checked"),
                             blind);
                }
                if (rule == RECLAIM_TARGET && listed) {
                        rule = RECLAIM_NVML_LISTED;
                        str_setf(&why, _("NVML lists it on GPU %u: an owner, not an orphan"), lgpu);
                }
                if (rule == RECLAIM_TARGET)
                        rule = tie_rule(r, o, hp, &why);
                r_ = rule == RECLAIM_TARGET ? add_target(p, hp, (int)gpu, a, false, NULL)
                                            : add_skip(p, hp, hp->pid, (int)gpu, rule, why);
                if (r_ < 0)
                        return r_;
        }
        return whole_families(r, p);
}

/* Is pid a target of p? */
static bool is_target(const struct reclaim_plan *p, pid_t pid)
{
        for (size_t t = 0; t < p->n_targets; t++)
                if (p->targets[t].pid == pid)
                        return true;
        return false;
}

/* A member of target t's description family that is not a target, or 0. */
static pid_t family_keeper(const struct host_report *h, const struct reclaim_plan *p, const struct reclaim_target *t)
{
        if (!h || !t->family || h->family_source == HOST_FAMILIES_NONE)
                return 0;
        for (size_t i = 0; i < h->n_holders; i++) {
                pid_t m = h->holders[i].pid;
                bool kept = false;      /* left for this rule itself: name the member that is not ended on its own */
                for (size_t k = 0; k < p->n_skipped && !kept; k++)
                        kept = p->skipped[k].pid == m && p->skipped[k].rule == RECLAIM_FAMILY_KEPT;
                if (h->holders[i].family == t->family && !is_target(p, m) && !kept)
                        return m;
        }
        return 0;
}

/* The default plan ends a family whole or not at all: the context lives as long as one member
 * keeps its description, so ending the others would free nothing. */
static int whole_families(const struct scan_result *r, struct reclaim_plan *p)
{
        const struct host_report *h = r->facts->host;
        char *why STR_AUTOFREE = NULL;
        for (size_t t = 0; t < p->n_targets;) {
                pid_t keeper = family_keeper(h, p, &p->targets[t]);
                if (!keeper) {
                        t++;
                        continue;
                }
                struct reclaim_target dropped = p->targets[t];
                const struct host_proc *hp = host_report_find(h, dropped.pid);
                const char *rule = _("not attributed");
                for (size_t k = 0; k < p->n_skipped; k++)
                        if (p->skipped[k].pid == keeper)
                                rule = reclaim_rule_name(p->skipped[k].rule);
                str_setf(&why, _("PID %d shares its open file description and is not a target (%s): "
                     "ending this one would free nothing"), (int)keeper, rule);
                memmove(&p->targets[t], &p->targets[t + 1], (p->n_targets - t - 1) * sizeof(*p->targets));
                p->n_targets--;
                for (size_t g = 0; g < p->n_gpus; g++)
                        if (dropped.gpu >= 0 && p->gpus[g].index == (unsigned)dropped.gpu && p->gpus[g].n_targets)
                                p->gpus[g].n_targets--;
                int e = add_skip(p, hp, dropped.pid, dropped.gpu, RECLAIM_FAMILY_KEPT, why);
                free(dropped.why);
                free(dropped.warning);
                if (e < 0)
                        return e;
                t = 0;  /* a family's targets may stand before this one */
        }
        return 0;
}

/* Is p a ghostvram (its comm or argv[0]'s base name starts with "ghostvram")? */
static bool is_ghostvram(const struct host_proc *p)
{
        static const char nm[] = "ghostvram";
        if (p->comm && strncmp(p->comm, nm, sizeof(nm) - 1) == 0)
                return true;
        if (!p->cmdline)
                return false;
        size_t a0 = strcspn(p->cmdline, " ");
        const char *base = p->cmdline;
        for (size_t i = 0; i < a0; i++)
                if (p->cmdline[i] == '/')
                        base = p->cmdline + i + 1;
        return (size_t)(p->cmdline + a0 - base) >= sizeof(nm) - 1 && strncmp(base, nm, sizeof(nm) - 1) == 0;
}

static void family_rest(const struct host_report *h, const struct reclaim_plan_opts *o, struct reclaim_plan *p);

/* --pid names pid and every rule lets it be signalled: the target, with a warning where a
 * soft protection or a tie to a running job would have kept it (named on purpose). */
static int explicit_target(const struct scan_result *r, const struct reclaim_plan_opts *o, struct reclaim_plan *p,
                           const struct host_proc *hp, size_t hi, bool holder, pid_t fam_live)
{
        unsigned owner_gpu = 0;
        uint64_t owner_bytes = 0;
        bool live_owner = ledger_live_owner_of(r, hp->pid, &owner_gpu, &owner_bytes);
        char *warn STR_AUTOFREE = NULL, *soft STR_AUTOFREE = NULL, *tie STR_AUTOFREE = NULL;
        if (fam_live && !live_owner)
                str_setf(&warn, _("shares an open file description with PID %d, a live owner: ending it "
                     "may end that running job"), (int)fam_live);
        else if (!live_owner && tie_rule(r, o, hp, &tie) != RECLAIM_TARGET)
                str_setf(&warn, _("%s: ending it may end that running job"), tie);
        else if (live_owner)
                str_setf(&warn, _("a live owner of GPU %u (%llu MiB listed): ending it ends a running job"),
                     owner_gpu, (unsigned long long)(owner_bytes >> 20));
        else if (soft_protection(hp, o, &soft) != RECLAIM_TARGET)
                str_setf(&warn, _("%s; signalled because --pid names it"), soft);
        else if (hp->n_nspid > 1 && hp->nspid[hp->n_nspid - 1] == 1)
                str_setf(&warn, _("PID 1 of its own PID namespace: ending it ends that container"));
        unsigned gpu = 0;
        const struct attribution *a = holder ? best_attribution(r, hi, o->only_gpu, &gpu) : NULL;
        int target_gpu = a ? (int)gpu : live_owner ? (int)owner_gpu : -1;
        return add_target(p, hp, target_gpu, a, true, warn);
}

/* Why --pid's process hp is not signalled without --force (RECLAIM_TARGET: it may be), the
 * sentence in *why and the GPU it is tied to in *gpu. */
static enum reclaim_rule explicit_refusal(const struct scan_result *r, const struct reclaim_plan_opts *o,
                                          const struct host_proc *hp, bool holder, pid_t fam_live, char **why, int *gpu)
{
        *gpu = -1;
        enum reclaim_rule rule = hard_protection(hp, o, why);
        if (rule == RECLAIM_TARGET && (hp->state == 'Z' || hp->state == 'X' || hp->exiting)) {
                str_setf(why, _("already dead (%s)"), hp->exiting ? _("exiting") : _("zombie"));
                return RECLAIM_DEAD;
        }
        if (rule != RECLAIM_TARGET || o->force)
                return rule;
        /* a process that holds no NVIDIA node frees no GPU memory; another ghostvram (serve,
         * watch) is a monitor: both only with --force */
        if (!holder) {
                str_setf(why, _("it holds no NVIDIA device node, so ending it frees no GPU memory "
                                "(--force to end it anyway)"));
                return RECLAIM_NO_DEVICE;
        }
        if (is_ghostvram(hp)) {
                str_setf(why, _("a ghostvram process (a running serve or watch), not a GPU job "
                                "(--force to end it anyway)"));
                return RECLAIM_GHOSTVRAM;
        }
        /* a live NVML-listed owner is a running job: its memory is no ghost, ending it ends the
         * job (a mistyped PID, an owner taken for an orphan): only with --force */
        unsigned owner_gpu = 0;
        uint64_t owner_bytes = 0;
        if (ledger_live_owner_of(r, hp->pid, &owner_gpu, &owner_bytes)) {
                str_setf(why,
                     _("a live owner: NVML lists it on GPU %u with %llu MiB, a running job, not a ghost "
                     "(--force to end it anyway)"),
                     owner_gpu, (unsigned long long)(owner_bytes >> 20));
                *gpu = (int)owner_gpu;
                return RECLAIM_LIVE_OWNER;
        }
        /* sharing a live owner's description is being that job (its contexts live on it) */
        if (fam_live) {
                str_setf(why,
                     _("shares an open file description with PID %d, a live owner: it keeps that running job's "
                     "contexts, not a ghost (--force to end it anyway)"), (int)fam_live);
                return RECLAIM_LIVE_FAMILY;
        }
        return RECLAIM_TARGET;
}

/* One PID --pid names: a target, or skipped with its rule (refused by number even without
 * facts: no such process here). */
static int explicit_one(const struct scan_result *r, const struct reclaim_plan_opts *o, struct reclaim_plan *p, pid_t pid)
{
        const struct host_report *h = r->facts->host;
        char *why STR_AUTOFREE = NULL;
        for (size_t t = 0; t < p->n_targets; t++)
                if (p->targets[t].pid == pid)
                        return 0;
        const struct host_proc *hp = NULL;
        size_t hi = 0;
        for (size_t i = 0; h && i < h->n_holders && !hp; i++)
                if (h->holders[i].pid == pid) {
                        hp = &h->holders[i];
                        hi = i;
                }
        bool holder = hp != NULL;
        for (size_t i = 0; i < o->n_extra && !hp; i++)
                if (o->extra[i].pid == pid)
                        hp = &o->extra[i];
        if (!hp) {
                struct host_proc bare;
                memset(&bare, 0, sizeof(bare));
                bare.pid = pid;
                enum reclaim_rule rule = hard_protection(&bare, o, &why);
                if (rule == RECLAIM_TARGET) {
                        rule = RECLAIM_NO_SUCH_PROCESS;
                        str_setf(&why, _("no process %d here"), (int)pid);
                }
                return add_skip(p, NULL, pid, -1, rule, why);
        }
        pid_t fam_live = holder ? ledger_family_live_owner(r, hp) : 0;
        unsigned og = 0;
        uint64_t ob = 0;
        if (ledger_live_owner_of(r, pid, &og, &ob))
                fam_live = 0; /* a live owner itself: its own rule, not its family's */
        int gpu;
        enum reclaim_rule rule = explicit_refusal(r, o, hp, holder, fam_live, &why, &gpu);
        if (rule != RECLAIM_TARGET)
                return add_skip(p, hp, pid, gpu, rule, why);
        return explicit_target(r, o, p, hp, hi, holder, fam_live);
}

static int plan_explicit(const struct scan_result *r, const struct reclaim_plan_opts *o, struct reclaim_plan *p)
{
        for (size_t e = 0; e < o->n_explicit; e++) {
                int rr = explicit_one(r, o, p, o->explicit_pids[e]);
                if (rr < 0)
                        return rr;
        }
        family_rest(r->facts->host, o, p);
        return 0;
}

/* Is pid named by --pid? */
static bool named(const struct reclaim_plan_opts *o, pid_t pid)
{
        for (size_t e = 0; e < o->n_explicit; e++)
                if (o->explicit_pids[e] == pid)
                        return true;
        return false;
}

/* --pid: the members of each target's family that it does not name keep the memory. */
static void family_rest(const struct host_report *h, const struct reclaim_plan_opts *o, struct reclaim_plan *p)
{
        for (size_t t = 0; h && t < p->n_targets; t++) {
                struct reclaim_target *x = &p->targets[t];
                if (!x->family || h->family_source == HOST_FAMILIES_NONE)
                        continue;
                for (size_t i = 0; i < h->n_holders; i++) {
                        const struct host_proc *m = &h->holders[i];
                        if (m->family != x->family || m->pid == x->pid || named(o, m->pid) || m->pid == o->self_pid)
                                continue;
                        if (x->n_family_rest < sizeof(x->family_rest) / sizeof(x->family_rest[0]))
                                x->family_rest[x->n_family_rest] = m->pid;
                        x->n_family_rest++;
                }
        }
}

/* The bytes ending p's targets on GPU pg should give back: what NVML charged the dead owners
 * they are tied to (two dead jobs on one GPU, one of them left alone: only the other's), capped
 * by the ghost; the whole ghost when an owner's bytes are not known. */
static uint64_t expected_back(const struct scan_result *r, const struct reclaim_plan *p, const struct reclaim_gpu *pg)
{
        const struct gpu_ledger *l = ledger_of(r, pg->index);
        if (!l || !pg->n_targets)
                return 0;
        uint64_t sum = 0;
        for (size_t t = 0; t < p->n_targets; t++) {
                const struct reclaim_target *x = &p->targets[t];
                if (x->gpu != (int)pg->index)
                        continue;
                bool seen = false;
                for (size_t u = 0; u < t && !seen; u++)
                        seen = p->targets[u].gpu == x->gpu && p->targets[u].to_pid == x->to_pid;
                if (seen)
                        continue;
                const struct owner *ow = NULL;
                for (size_t k = 0; k < l->n_owners && !ow; k++)
                        if ((pid_t)l->owners[k].pid == x->to_pid && l->owners[k].cls != OWNER_LIVE)
                                ow = &l->owners[k];
                if (!x->to_pid || !ow || !ow->used_known)
                        return pg->ghost;
                sum += ow->used_bytes;
        }
        return sum < pg->ghost ? sum : pg->ghost;
}

int reclaim_plan_build(const struct scan_result *r, const struct reclaim_plan_opts *o, struct reclaim_plan **ret)
{
        struct reclaim_plan *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        int e = 0;
        p->explicit_mode = o->n_explicit > 0;
        p->gpus = calloc(r->n_gpus ? r->n_gpus : 1, sizeof(*p->gpus));
        if (!p->gpus) {
                e = -ENOMEM;
                goto fail;
        }
        for (size_t g = 0; g < r->n_gpus; g++) {
                const struct gpu_ledger *l = &r->gpus[g];
                if (o->only_gpu >= 0 && l->index != (unsigned)o->only_gpu)
                        continue;
                struct reclaim_gpu *pg = &p->gpus[p->n_gpus++];
                pg->index = l->index;
                pg->inspected = l->inspected;
                pg->used = l->used;
                pg->ghost = l->ghost;
                pg->noise_floor = l->noise_floor;
                pg->ghost_confirmed = l->ghost_confirmed;
                if (r->facts->gpu && g < r->facts->gpu->n_gpus) {
                        snprintf(pg->uuid, sizeof(pg->uuid), "%s", r->facts->gpu->gpus[g].uuid);
                        snprintf(pg->pci_bus_id, sizeof(pg->pci_bus_id), "%s", r->facts->gpu->gpus[g].pci_bus_id);
                }
                p->any_confirmed_ghost |= l->ghost_confirmed;
        }
        e = p->explicit_mode ? plan_explicit(r, o, p) : plan_default(r, o, p);
        if (e < 0)
                goto fail;
        for (size_t g = 0; g < p->n_gpus; g++)
                p->gpus[g].expected_bytes = expected_back(r, p, &p->gpus[g]);
        *ret = p;
        return 0;
fail:
        reclaim_plan_free(p);
        return e;
}

void reclaim_plan_clear(struct reclaim_plan *p)
{
        for (size_t i = 0; i < p->n_targets; i++) {
                free(p->targets[i].why);
                free(p->targets[i].warning);
        }
        for (size_t i = 0; i < p->n_skipped; i++)
                free(p->skipped[i].reason);
        free(p->targets);
        free(p->skipped);
        p->targets = NULL;
        p->skipped = NULL;
        p->n_targets = p->n_skipped = 0;
        for (size_t g = 0; g < p->n_gpus; g++)
                p->gpus[g].n_targets = 0;
}

void reclaim_plan_free(struct reclaim_plan *p)
{
        if (!p)
                return;
        reclaim_plan_clear(p);
        free(p->gpus);
        free(p);
}

int reclaim_policy_load(const char *path, bool given, struct reclaim_policy *p, char *err, size_t errlen)
{
        char *buf = NULL;
        size_t len = 0;
        struct stat st;
        memset(p, 0, sizeof(*p));
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
                snprintf(err, errlen, _("--policy %s: a directory, not a policy file"), path);
                return -1;
        }
        int r = read_file_at(AT_FDCWD, path, 1 << 20, &buf, &len);
        if (r == -ENOENT && !given)
                return 0; /* no site policy: the built-in names only */
        if (r < 0) {
                snprintf(err, errlen, "--policy %s: %s", path, strerror(-r));
                return -1;
        }
        r = reclaim_policy_parse(buf, len, path, p, err, errlen);
        free(buf);
        return r < 0 ? -1 : 0;
}
