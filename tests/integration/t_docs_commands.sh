#!/usr/bin/env bash
# The commands the FAQ and the Chinese pages tell readers to paste are real: every `ghostvram ...`
# span inside backquotes (and every ghostvram line of a fenced block) in docs/faq.md,
# docs/zh-CN/*.md and README.zh-CN.md names a command of `ghostvram --help`, each of its options
# is one that `ghostvram CMD --help` lists, and the words parse: run with --help appended (the
# options before it are parsed first, values checked), placeholders (N, PID, P,Q) given a value,
# it exits 0. A span with an unknown option must fail the check (tried first).
. "$(dirname "$0")/lib.sh"
: "${GV_SRC:?GV_SRC must name the source tree}"

# Options documented before they reach main, each "CMD --option": skipped by the check, which
# fails once the command's help lists it, so that the entry is removed.
PENDING=()

cmds=$("$GV_BIN" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
[ "$(wc -l <<<"$cmds")" -ge 13 ] || fail "commands from --help: $cmds"

# help_opts CMD...: the options the command's help lists, one a line
help_opts() { "$GV_BIN" "$@" --help </dev/null | grep -oE -- '(^|[ ,[(])--?[a-zA-Z][a-zA-Z-]*' | sed 's/^[ ,[(]//' | LC_ALL=C sort -u; }

# spans FILE: the ghostvram commands of a markdown file, one a line: backquoted spans outside
# fenced blocks (a bare `ghostvram` is a name), and the lines of fenced blocks; a leading sudo and VAR=VALUE words dropped, cut
# at a comment, a pipe, a list operator or a redirection, and at `--` (track's command follows)
spans() {
        awk '/^```/ { fence = !fence; next }
             fence { print; next }
             { while (match($0, /`[^`]+`/)) { print substr($0, RSTART + 1, RLENGTH - 2); $0 = substr($0, RSTART + RLENGTH) } }' "$1" |
                sed -E 's/^ *(sudo +)?([A-Z_][A-Z0-9_]*=[^ ]* +)*//' |
                grep -E '^ghostvram ' |
                sed -E 's/ +#.*//; s/ *(\||;|&&|>).*//; s/ -- .*//; s/ +$//' || true
}

CHECKED=0
declare -A KNOWN # CMD -> help_opts CMD
PENDING_SEEN=()
# check_span WHERE SPAN: fails the test with WHERE when SPAN is not a real command line
check_span() {
        local where=$1 span=$2 w sub words=() args=() opt
        read -ra words <<<"$span"
        sub=${words[1]:-}
        [ -n "$sub" ] || fail "$where: '$span' names no command"
        grep -qx -- "$sub" <<<"$cmds" || [ "$sub" = help ] || fail "$where: '$span': no command '$sub' in ghostvram --help"
        local helpcmd=("$sub") rest=("${words[@]:2}")
        if [ "$sub" = help ]; then # ghostvram help CMD: CMD is a command (or the placeholder)
                [ "${#rest[@]}" -eq 1 ] && { [ "${rest[0]}" = CMD ] || grep -qx -- "${rest[0]}" <<<"$cmds"; } ||
                        fail "$where: '$span': help takes one command"
                CHECKED=$((CHECKED + 1))
                return 0
        fi
        if [ "$sub" = xid ] && [ "${rest[0]:-}" = explain ]; then helpcmd=(xid explain); rest=("${rest[@]:1}"); fi
        local known=${KNOWN[${helpcmd[*]}]:-}
        [ -n "$known" ] || known=$(help_opts "${helpcmd[@]}")
        KNOWN[${helpcmd[*]}]=$known
        for w in "${rest[@]}"; do
                case $w in
                -*)
                        opt=${w%%=*}
                        local p pending=
                        for p in "${PENDING[@]}"; do [ "$p" = "${helpcmd[*]} $opt" ] && pending=1; done
                        if [ -n "$pending" ]; then
                                PENDING_SEEN+=("${helpcmd[*]} $opt")
                                continue
                        fi
                        grep -qx -- "$opt" <<<"$known" || fail "$where: '$span': ghostvram ${helpcmd[*]} --help lists no $opt"
                        args+=("$w") ;;
                N | GPU | ID) args+=(0) ;;
                PID | P) args+=(1) ;;
                P,Q) args+=(1,2) ;;
                *) args+=("$w") ;;
                esac
        done
        local rc=0
        "$GV_BIN" "${helpcmd[@]}" "${args[@]}" --help </dev/null >"$GV_TMP/parse.out" 2>&1 || rc=$?
        [ "$rc" -eq 0 ] || fail "$where: '$span' does not parse (exit $rc): $(head -3 "$GV_TMP/parse.out")"
        CHECKED=$((CHECKED + 1))
}

note "the check refuses what is not a command line"
for bad in "ghostvram scan --no-such-option" "ghostvram frobnicate" "ghostvram reclaim --gpu 0 --wait forever" \
           "ghostvram xid explain --yes"; do
        if (check_span self-test "$bad") 2>"$GV_TMP/bad.err"; then fail "the check accepts '$bad'"; fi
        grep -q "self-test: '$bad'" "$GV_TMP/bad.err" || fail "no reason for '$bad': $(cat "$GV_TMP/bad.err")"
done

files=("$GV_SRC/README.zh-CN.md" "$GV_SRC/docs/faq.md" "$GV_SRC"/docs/zh-CN/*.md)
[ "${#files[@]}" -ge 6 ] || fail "docs to check: ${files[*]}"
all=
for f in "${files[@]}"; do
        [ -s "$f" ] || fail "$f is missing"
        note "${f#"$GV_SRC"/}"
        n=0
        while IFS= read -r span; do
                [ -n "$span" ] || continue
                check_span "${f#"$GV_SRC"/}" "$span"
                n=$((n + 1))
                all+="$span"$'\n'
        done < <(spans "$f")
        [ "$n" -ge 3 ] || [ "${f##*/}" = README.md ] || fail "${f#"$GV_SRC"/}: only $n ghostvram commands found"
        echo "$n commands"
done
# the answers the FAQ promises, in both languages
for f in docs/faq.md docs/zh-CN/faq.md; do
        s=$(spans "$GV_SRC/$f")
        for want in "ghostvram scan" "ghostvram reclaim --gpu 0" "ghostvram reclaim --gpu 0 --yes" \
                    "ghostvram reclaim --poke --gpu 0 --yes" "ghostvram reclaim --reset-gpu --gpu 0" \
                    "ghostvram scan --gpu 0000:1b:00.0" "ghostvram xid" "ghostvram doctor"; do
                grep -qxF -- "$want" <<<"$s" || fail "$f does not give '$want'"
        done
done
[ "$CHECKED" -ge 60 ] || fail "only $CHECKED commands checked"

for p in "${PENDING[@]}"; do
        read -ra pw <<<"$p"
        if grep -qx -- "${pw[-1]}" <<<"$(help_opts "${pw[@]:0:${#pw[@]}-1}")"; then
                fail "'ghostvram $p' is in its help now: remove it from PENDING"
        fi
        seen=$(printf '%s\n' "${PENDING_SEEN[@]}")
        grep -qx -- "$p" <<<"$seen" || fail "PENDING '$p' is used by no doc: remove it"
        echo "PENDING: ghostvram $p ($(grep -cx -- "$p" <<<"$seen") uses, not checked)"
done
echo "$CHECKED commands parse"
echo PASS
