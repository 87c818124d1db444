#!/usr/bin/env bash
# The sentences in the reader's language (docs/i18n.md): the catalogue of each language of
# po/LINGUAS translates every sentence marked in src/ (none untranslated, fuzzy or left over
# from a sentence that is gone), its format directives match (msgfmt --check), and the language
# is chosen as gettext users expect: LANGUAGE, then LC_ALL / LC_MESSAGES / LANG; a C locale
# named means English, also with LANGUAGE set; a LANG whose locale the host lacks still works.
. "$(dirname "$0")/lib.sh"

note "every marked sentence has a translation, nothing fuzzy, nothing obsolete"
"$GV_SRC/scripts/i18n-pot" "$GV_TMP/ghostvram.pot"
marked=$(grep -c '^msgid ' "$GV_TMP/ghostvram.pot")
[ "$marked" -ge 10 ] || fail "only $marked marked sentences in src/"
while read -r lang; do
        po=$GV_SRC/po/$lang.po
        msgmerge --quiet --no-fuzzy-matching "$po" "$GV_TMP/ghostvram.pot" -o "$GV_TMP/$lang.po"
        # the catalogue as `make po-update` would leave it: what it lacks is untranslated there,
        # a sentence gone from src/ is obsolete (#~)
        stats=$(LC_ALL=C msgfmt --check --statistics -o /dev/null "$GV_TMP/$lang.po" 2>&1)
        grep -E "^[0-9]+ translated messages\.$" >/dev/null <<<"$stats" ||
                fail "po/$lang.po against src/: $stats (run 'make po-update' and translate: $(msgattrib --untranslated --only-fuzzy "$GV_TMP/$lang.po" | grep -A1 '^msgid' | head -20))"
        gone=$(grep -A1 '^#~ msgid' "$GV_TMP/$lang.po" | head -20 || true)
        [ -z "$gone" ] || fail "po/$lang.po: sentences no longer in src/ (run 'make po-update'): $gone"
        stats=$(LC_ALL=C msgfmt --check --statistics -o /dev/null "$po" 2>&1)
        grep -E "^[0-9]+ translated messages\.$" >/dev/null <<<"$stats" || fail "po/$lang.po: $stats"
        [ -s "$GV_BUILD/locale/$lang/LC_MESSAGES/ghostvram.mo" ] || fail "no catalogue $lang built"
done < <(grep -v '^#' "$GV_SRC/po/LINGUAS")

note "no sentence of the translated commands is left unmarked (scripts/i18n-unmarked)"
left=$("$GV_SRC/scripts/i18n-unmarked" 2>&1) || fail "sentences not marked for translation (mark them with _(), or say why not with /* i18n: no ... */):
$left"
# the check can fail: an unmarked sentence in a file of its own is found
printf 'void f(char **s)\n{\n        str_setf(s, "%%d workers of a dead job", 2);\n}\n' >"$GV_TMP/unmarked.c"
found=$("$GV_SRC/scripts/i18n-unmarked" "$GV_TMP/unmarked.c" 2>&1) && fail "an unmarked sentence not found"
grep -F 'unmarked.c:3: "%d workers of a dead job"' >/dev/null <<<"$found" || fail "i18n-unmarked said: $found"

note "the language is the user's"
# first_line ENV...: the first line of `ghostvram --help` under ENV
first_line() {
        env -u LANGUAGE -u LC_ALL -u LC_MESSAGES -u LANG "$@" "$GV_BIN" --help | head -n 1
}
en="Usage: ghostvram COMMAND [OPTIONS]"
zh="用法：ghostvram 命令 [选项]"
assert_eq "$(first_line)" "$en" "no language set"
assert_eq "$(first_line LANGUAGE=zh_CN)" "$zh" "LANGUAGE=zh_CN"
assert_eq "$(first_line LANGUAGE=zh_CN:en)" "$zh" "LANGUAGE=zh_CN:en"
assert_eq "$(first_line LANG=zh_CN.UTF-8)" "$zh" "LANG=zh_CN.UTF-8 (with or without the locale on this host)"
assert_eq "$(first_line LC_MESSAGES=zh_CN.UTF-8 LANG=en_US.UTF-8)" "$zh" "LC_MESSAGES outranks LANG"
assert_eq "$(first_line LANG=zh_CN.UTF-8 LC_ALL=C)" "$en" "LC_ALL=C outranks LANG"
assert_eq "$(first_line LANGUAGE=zh_CN LC_ALL=C)" "$en" "LC_ALL=C with LANGUAGE: English, as in gettext"
assert_eq "$(first_line LANGUAGE=zh_CN LANG=C.UTF-8)" "$zh" "LANG=C.UTF-8 leaves LANGUAGE the choice"
assert_eq "$(first_line LANGUAGE=fr_FR)" "$en" "a language without a catalogue: English"
assert_eq "$(first_line LANGUAGE=zh_CN GHOSTVRAM_LOCALEDIR=$GV_TMP/none)" "$en" "no catalogue found: English"
# the characters are UTF-8 whatever the locale's character set (C: ASCII)
first_line LANGUAGE=zh_CN | iconv -f UTF-8 -t UTF-8 >/dev/null || fail "not UTF-8"
# a number reads the same in every language (only LC_MESSAGES is the user's, never LC_NUMERIC)
v1=$(env LANGUAGE=zh_CN LANG=de_DE.UTF-8 "$GV_BIN" --version)
assert_eq "$v1" "$("$GV_BIN" --version)" "--version under another locale"

echo PASS
