/* optable: a command's own options declared in one table (name, getopt value, what the value
 * must be, where it goes, the sentence a bad value gets), read from argv by cli_parse together
 * with the common options (cli_common_option) and --help. A command's file holds its table,
 * its usage and the checks between options; the reading is written once, here. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cli_common;

enum cli_opt_kind {
        CO_FLAG,        /* bool: true */
        CO_STR,         /* const char *: the value as given */
        CO_PATH,        /* const char *: the value, "" refused (cli_path_arg) */
        CO_UINT,        /* unsigned in [lo, hi] (parse_uint_range) */
        CO_U64,         /* uint64_t in [lo, hi] (parse_u64) */
        CO_MS,          /* uint64_t milliseconds in [lo, hi] (parse_duration_ms: 5s, 500ms, 2m) */
        CO_MIB,         /* uint64_t MiB in [lo, hi] (parse_size_mib: 512, 2GiB) */
        CO_GPU,         /* const char *: a GPU index, UUID or PCI bus id (gpu_spec_check) */
        CO_FN,          /* nothing stored: fn alone reads the value (CO_FLAG with fn: one without a value) */
};

struct cli_opt {
        const char *name;       /* the long name, without "--" */
        int val;                /* getopt's value: the letter of a short form in the command's shortopts, or a code */
        enum cli_opt_kind kind;
        size_t off;             /* offsetof the value in the command's options (ctx) */
        uint64_t lo, hi;        /* the accepted range of CO_UINT, CO_U64, CO_MS and CO_MIB */
        /* a value that does not parse or is out of range (CO_GPU: not a GPU's name; NULL there
         * is the common sentence): one sentence with a %s (the value), then perhaps a %llu
         * (hi), marked N_() where the command's sentences are translated */
        const char *bad;
        size_t seen;            /* CO_SEEN(offset) of a bool set when the option is given, or 0 */
        /* after the value is stored (CO_FN: instead): 0, or -1 with the reason said (cli_error) */
        int (*fn)(void *ctx, const char *arg, const char *cmd);
        bool short_only;        /* no long form: name is the letter (val), for messages */
        /* 0, or a second getopt value that reads this option: the letter of its short form when
         * val must be a common option's code, the long name being one of theirs too (check's -t
         * and --timeout: CLI_OPT_TIMEOUT); an abbreviation then stays unambiguous */
        int alias;
        bool last;              /* the options end with this one: what follows is not read (track --show) */
};
#define CO_SEEN(off) ((off) + 1)

struct cli_parse {
        const char *cmd;                /* the command's name in messages ("sim init") */
        const char *shortopts;          /* getopt's: the short forms ("hvyn") */
        const struct cli_opt *opts;     /* the command's own, ended by { 0 } */
        void *ctx;                      /* the command's options: what opts' offsets are in */
        struct cli_common *common;      /* the common options' values; NULL: the command takes none */
        void (*usage)(FILE *f);         /* --help to stdout */
        bool operands;                  /* arguments may follow the options (optind says where) */
        /* without common options: an option not in the table (getopt's '?' or ':') is said by
         * this instead of cli_bad_option (xid explain: "-1" is a code, not an option); NULL:
         * cli_bad_option. With them, cli_common_option says it. */
        void (*bad_option)(const char *cmd, int argc, char **argv, int opt);
        bool english;                   /* its sentences are not in the catalogue: never translated */
        bool finish;                    /* then cli_common_finish (its failure EXIT_USAGE) */
        /* NULL, or where a bad value's sentence (the table's, made) goes instead of cli_error:
         * check says it as its plugin's UNKNOWN line on stdout */
        void (*say)(void *ctx, const char *sentence);
};

#define CLI_HELP (-1) /* cli_parse: --help was printed */

/* One option's value arg read as o says into ctx (the common options' reading): 0, or -1 (said,
 * in cmd's name). */
int cli_opt_take(const struct cli_opt *o, void *ctx, const char *cmd, const char *arg);

/* Read argv's options with p: EXIT_OK (optind at the first operand, or after a `last` option's
 * value), CLI_HELP, or EXIT_USAGE (said in one line: a bad value, an option the command does not
 * take, an unexpected argument). */
int cli_parse(const struct cli_parse *p, int argc, char **argv);

/* A rule between options: broken when the options given go against it, said by why (marked
 * N_(); a sentence with no conversion). */
struct cli_rule {
        bool broken;
        const char *why;
};
/* The first broken rule of the n said in cmd's name: -1; none broken: 0. */
int cli_rules(const char *cmd, const struct cli_rule *rules, size_t n);
#define CLI_RULES(cmd, ...) \
        cli_rules(cmd, (const struct cli_rule[]){ __VA_ARGS__ }, sizeof((const struct cli_rule[]){ __VA_ARGS__ }) / sizeof(struct cli_rule))
