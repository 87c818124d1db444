#include "util/i18n.h"

#include <libintl.h>
#include <limits.h>
#include <locale.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"

static atomic_bool enabled;            /* a catalogue was bound and a language asked for */
static _Thread_local bool thread_off;
static locale_t english;               /* the process's locale with LC_MESSAGES "C" (made before any thread) */

/* "C" and "POSIX" ask for English; "C.UTF-8" (a container's usual LANG) only for UTF-8, so
 * LANGUAGE still chooses, as in gettext */
static bool names_c_locale(const char *v)
{
        return strcmp(v, "C") == 0 || strcmp(v, "POSIX") == 0;
}

/* The locale name LC_MESSAGES comes from, in POSIX order, or NULL when none is set. */
static const char *messages_env(void)
{
        static const char *const vars[] = { "LC_ALL", "LC_MESSAGES", "LANG" };
        for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
                const char *v = getenv(vars[i]);
                if (v && *v)
                        return v;
        }
        return NULL;
}

static bool is_dir(const char *p)
{
        struct stat st;
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether this program is the build tree's (its directory is the build directory): only then
 * are the build tree's catalogues its own; an installed copy never reads them */
static bool run_from_build_tree(void)
{
        char exe[PATH_MAX], build[PATH_MAX];
        if (!realpath("/proc/self/exe", exe) || !realpath(GV_BUILD_DIR, build))
                return false;
        char *slash = strrchr(exe, '/');
        if (!slash)
                return false;
        *slash = '\0';
        return strcmp(exe, build) == 0;
}

static const char *catalogue_dir(void)
{
        const char *env = getenv("GHOSTVRAM_LOCALEDIR");
        if (env && *env)
                return env;
        if (run_from_build_tree() && is_dir(GV_LOCALEDIR_BUILD))
                return GV_LOCALEDIR_BUILD;
        return GV_LOCALEDIR_INSTALL;
}

void i18n_init(void)
{
        const char *lang = getenv("LANGUAGE");
        const char *msgs = messages_env();
        if (msgs && names_c_locale(msgs))
                return;                 /* LC_ALL=C and its kind: English, as asked */
        bool has_lang = lang && *lang;
        if (!has_lang && (!msgs || strncmp(msgs, "C.", 2) == 0))
                return;
        /* gettext ignores LANGUAGE in the C locale, and a host may lack the locale LANG names
         * (zh_CN.UTF-8 not generated): C.UTF-8 for messages then, with the language asked
         * for in LANGUAGE, which gettext reads first */
        if (!setlocale(LC_MESSAGES, "") || names_c_locale(setlocale(LC_MESSAGES, NULL))) {
                if (!setlocale(LC_MESSAGES, "C.UTF-8"))
                        return;
                if (!has_lang)
                        setenv("LANGUAGE", msgs, 1);
        }
        if (!bindtextdomain(GV_TEXT_DOMAIN, catalogue_dir()) ||
            !bind_textdomain_codeset(GV_TEXT_DOMAIN, "UTF-8"))
                return;
        /* glibc's own messages (strerror's) follow LC_MESSAGES too: UTF-8 like ours (in the
         * charset of a C LC_CTYPE they would read "?????") */
        (void)bind_textdomain_codeset("libc", "UTF-8");
        locale_t base = duplocale(LC_GLOBAL_LOCALE);
        english = base ? newlocale(LC_MESSAGES_MASK, "C", base) : (locale_t)0;
        if (base && !english)
                freelocale(base);
        atomic_store(&enabled, true);
}

void i18n_off(void)
{
        atomic_store(&enabled, false);
        /* strerror's words English too: a JSON document's error field is */
        (void)setlocale(LC_MESSAGES, "C");
}

void i18n_thread_off(bool off)
{
        /* the thread's strerror English (a locale of its own: LC_MESSAGES "C") or the process's */
        if (english)
                (void)uselocale(off ? english : LC_GLOBAL_LOCALE);
        thread_off = off;
}

bool i18n_active(void)
{
        return !thread_off && atomic_load(&enabled);
}

const char *i18n_text(const char *msgid)
{
        if (!msgid || !*msgid || !i18n_active())
                return msgid;
        return dgettext(GV_TEXT_DOMAIN, msgid);
}

const char *i18n_plural(const char *one, const char *many, unsigned long n)
{
        if (!i18n_active())
                return n == 1 ? one : many;
        return dngettext(GV_TEXT_DOMAIN, one, many, n);
}
