/* i18n: the human sentences in the reader's language (GNU gettext), everything else unchanged.
 *
 * Every sentence a person reads (a verdict's summary, evidence, next step, a help line, an
 * error) is marked: _("…") where it is formatted or printed, N_("…") in a static table (the
 * table's entry is translated where it is printed, with _(entry)), P_("one", "many", n) for a
 * plural. What a program reads is never marked and never translated: JSON field names and
 * values, metric names and labels, perfdata, command lines and option names, syslog and audit
 * lines, and the codes (verdicts, doctor codes, Xid names).
 *
 * The language is the user's: LANGUAGE, then LC_ALL, LC_MESSAGES, LANG (gettext's order). A C or
 * POSIX locale asked for by name means English. The output is UTF-8 whatever the locale's
 * character set. Only LC_MESSAGES is taken from the environment: numbers, times and character
 * classes stay the C locale's, so every figure reads the same in every language.
 *
 * A document for programs (--json, --json-stream, the exporter's API) must carry the English
 * sentences whatever the language: such paths call i18n_off() for the process before any
 * sentence is made, or i18n_thread_off() for one thread (serve's sampler and API). */
#pragma once
#include <stdbool.h>

#define GV_TEXT_DOMAIN "ghostvram"

/* Choose the language from the environment and find the catalogue: $GHOSTVRAM_LOCALEDIR, the
 * build tree's, then the installed one. Call once, first thing in main, before any thread. */
void i18n_init(void);

/* From now on every sentence of the process is English. */
void i18n_off(void);
/* Every sentence of the calling thread is English (off) or in the process's language again. */
void i18n_thread_off(bool off);
/* Whether sentences made now by this thread are translated. */
bool i18n_active(void);

/* The translation of msgid, or msgid itself (never NULL for a non-NULL msgid). */
const char *i18n_text(const char *msgid) __attribute__((format_arg(1)));
const char *i18n_plural(const char *one, const char *many, unsigned long n)
        __attribute__((format_arg(1), format_arg(2)));

/* A sentence made twice, for a report that both programs and people read (host limits): *ret_en
 * in English (JSON, bundles) and *ret_text in the reader's language, NULL when that is English.
 * The format and its arguments (a _(), a P_(), a strerror) are evaluated once in each mode; both
 * are heap strings (util/strf.h) the caller frees. 0 or -ENOMEM. */
#define I18N_SETF2(ret_en, ret_text, ...)                                                          \
        ({                                                                                         \
                bool i18n_on_ = i18n_active();                                                     \
                if (i18n_on_)                                                                      \
                        i18n_thread_off(true);                                                     \
                int i18n_e_ = str_setf((ret_en), __VA_ARGS__);                                     \
                if (i18n_on_) {                                                                    \
                        i18n_thread_off(false);                                                    \
                        if (i18n_e_ == 0)                                                          \
                                i18n_e_ = str_setf((ret_text), __VA_ARGS__);                       \
                }                                                                                  \
                i18n_e_;                                                                           \
        })

#define _(s) i18n_text(s)
#define N_(s) (s)
#define P_(one, many, n) i18n_plural(one, many, n)
