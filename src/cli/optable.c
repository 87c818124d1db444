#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/optable.h"
#include "util/i18n.h"
#include "util/parse.h"

#define MAX_OPTS 64
#define GPU_BAD N_("--gpu: '%s' is not a GPU index, UUID or PCI bus id")
#define LAST_TAKEN 1 /* one_option: a `last` option was taken */

/* A table's sentence for a bad value has a %s, given the value, and may then have a %llu, given
 * the range's top (hi); no other conversion. A table that breaks this is a programming error,
 * caught by the first run of the command. */
static void check_bad(const struct cli_opt *o)
{
        const char *s = o->bad;
        bool ok = s != NULL;
        int conv = 0;
        for (; s && (s = strchr(s, '%')); s += 2) {
                if (s[1] == '%')
                        continue;
                ok = ok && conv < 2 && !strncmp(s + 1, conv ? "llu" : "s", conv ? 3 : 1);
                conv++;
        }
        if (o->bad && (!ok || !conv)) {
                fprintf(stderr, "ghostvram: --%s: its sentence must have a %%s, then at most a %%llu\n", o->name);
                abort();
        }
}

static void *field(const struct cli_parse *p, size_t off)
{
        return (char *)p->ctx + off;
}

static int bad_value(const struct cli_parse *p, const struct cli_opt *o, const char *arg)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral" /* checked by check_bad */
#pragma GCC diagnostic ignored "-Wformat-extra-args"
        const char *bad = o->bad ? o->bad : GPU_BAD;
        char sentence[1024];
        snprintf(sentence, sizeof(sentence), p->english ? bad : _(bad), arg, (unsigned long long)o->hi);
#pragma GCC diagnostic pop
        if (p->say)
                p->say(p->ctx, sentence);
        else
                cli_error(p->cmd, "%s", sentence);
        return -1;
}

/* A number of kind o->kind in [lo, hi] into *v: 0, or -1 (does not parse, or out of range). */
static int number(const struct cli_opt *o, const char *arg, uint64_t *v)
{
        unsigned u;
        switch (o->kind) {
        case CO_UINT:
                if (parse_uint_range(arg, (unsigned)o->lo, (unsigned)o->hi, &u) < 0)
                        return -1;
                *v = u;
                return 0;
        case CO_U64:
                if (parse_u64(arg, v) < 0)
                        return -1;
                break;
        case CO_MS:
                if (parse_duration_ms(arg, v) < 0)
                        return -1;
                break;
        default:
                if (parse_size_mib(arg, v) < 0)
                        return -1;
                break;
        }
        return *v >= o->lo && *v <= o->hi ? 0 : -1;
}

/* One of the table's options: its value stored, then its function. 0, or -1 (said). */
static int take(const struct cli_parse *p, const struct cli_opt *o, const char *arg)
{
        uint64_t v;
        char name[80];
        switch (o->kind) {
        case CO_FLAG: *(bool *)field(p, o->off) = true; break;
        case CO_PATH:
                snprintf(name, sizeof(name), "--%s", o->name);
                if (cli_path_arg(p->cmd, name, arg) < 0)
                        return -1;
                /* fallthrough */
        case CO_STR: *(const char **)field(p, o->off) = arg; break;
        case CO_FN: break;
        case CO_GPU:
                if (gpu_spec_check(arg) < 0)
                        return bad_value(p, o, arg);
                *(const char **)field(p, o->off) = arg;
                break;
        default:
                if (number(o, arg, &v) < 0)
                        return bad_value(p, o, arg);
                if (o->kind == CO_UINT)
                        *(unsigned *)field(p, o->off) = (unsigned)v;
                else
                        *(uint64_t *)field(p, o->off) = v;
                break;
        }
        if (o->seen)
                *(bool *)field(p, o->seen - 1) = true;
        return o->fn ? o->fn(p->ctx, arg, p->cmd) : 0;
}

int cli_opt_take(const struct cli_opt *o, void *ctx, const char *cmd, const char *arg)
{
        const struct cli_parse p = { .cmd = cmd, .ctx = ctx };
        return take(&p, o, arg);
}

/* getopt's table: the command's options, the common ones (each named, so that one the command
 * does not take is refused in words), --help. */
static void getopt_table(const struct cli_parse *p, struct option *t)
{
        size_t n = 0;
        for (const struct cli_opt *o = p->opts; o && o->name; o++) {
                check_bad(o);
                if (!o->short_only)
                        t[n++] = (struct option){ o->name, o->kind == CO_FLAG ? no_argument : required_argument, NULL, o->val };
        }
        if (p->common)
                n += cli_common_longopts(t + n);
        t[n++] = (struct option){ "help", no_argument, NULL, 'h' };
        t[n] = (struct option){ 0 };
}

static int one_option(const struct cli_parse *p, int opt, const char *arg, int argc, char **argv)
{
        for (const struct cli_opt *o = p->opts; o && o->name; o++)
                if (o->val == opt || (o->alias && o->alias == opt))
                        return take(p, o, arg) < 0 ? EXIT_USAGE : o->last ? LAST_TAKEN : EXIT_OK;
        if (p->common) {
                int r = cli_common_option(p->common, opt, arg, p->cmd);
                if (r == 0)
                        p->usage(stderr); /* in getopt's table, in neither's: a programming error */
                return r > 0 ? EXIT_OK : EXIT_USAGE;
        }
        (p->bad_option ? p->bad_option : cli_bad_option)(p->cmd, argc, argv, opt);
        return EXIT_USAGE;
}

int cli_parse(const struct cli_parse *p, int argc, char **argv)
{
        struct option t[MAX_OPTS];
        size_t n = 0;
        while (p->opts && p->opts[n].name)
                n++;
        if (n + CLI_COMMON_LONGOPTS_MAX + 2 > MAX_OPTS) /* and --help, and the end */
                abort(); /* a programming error: the table outgrew getopt's */
        getopt_table(p, t);
        opterr = 0; /* a bad option is said in one line (cli_bad_option) */
        optind = 1;
        int opt;
        while ((opt = getopt_long(argc, argv, p->shortopts, t, NULL)) != -1) {
                if (opt == 'h') {
                        p->usage(stdout);
                        return CLI_HELP;
                }
                int r = one_option(p, opt, optarg, argc, argv);
                if (r == LAST_TAKEN)
                        return EXIT_OK;
                if (r != EXIT_OK)
                        return EXIT_USAGE;
        }
        if (!p->operands && optind < argc) {
                if (p->english)
                        cli_error(p->cmd, "unexpected argument '%s' (see --help)", argv[optind]);
                else
                        cli_error(p->cmd, _("unexpected argument '%s' (see --help)"), argv[optind]);
                return EXIT_USAGE;
        }
        if (p->finish && cli_common_finish(p->common, p->cmd) < 0)
                return EXIT_USAGE;
        return EXIT_OK;
}

int cli_rules(const char *cmd, const struct cli_rule *rules, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (rules[i].broken) {
                        cli_error(cmd, "%s", _(rules[i].why));
                        return -1;
                }
        return 0;
}
