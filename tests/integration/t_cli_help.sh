#!/usr/bin/env bash
# Help fits 80 columns: every line of `ghostvram --help`, of `ghostvram help CMD` and
# `ghostvram CMD --help` for every command `ghostvram --help` lists, of the sim and xid
# subcommands' help. Each over-long line is named.
. "$(dirname "$0")/lib.sh"

cmds=$("$GV_BIN" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
[ "$(wc -l <<<"$cmds")" -ge 13 ] || fail "commands from --help: $cmds"

long=0
# check_width WHAT ARGS...: the help ARGS print, and none of its lines is over 80 columns
check_width() {
        local what=$1 rc=0
        shift
        "$GV_BIN" "$@" >"$GV_TMP/help" 2>&1 || rc=$?
        assert_eq "$rc" 0 "$what: exit status"
        [ "$(wc -l <"$GV_TMP/help")" -ge 3 ] || fail "$what: no help: $(cat "$GV_TMP/help")"
        # columns, not bytes: the help may hold UTF-8
        local over
        over=$(LC_ALL=C.UTF-8 awk -v w="$what" 'length($0) > 80 { printf "%s: %d columns: %s\n", w, length($0), $0 }' \
                "$GV_TMP/help")
        if [ -n "$over" ]; then
                echo "$over" >&2
                long=$((long + $(wc -l <<<"$over")))
        fi
}

check_width "ghostvram --help" --help
for cmd in $cmds; do
        check_width "help $cmd" help "$cmd"
        check_width "$cmd --help" "$cmd" --help
done
for sub in init run set status; do
        check_width "sim $sub --help" sim "$sub" --help
done
check_width "xid explain --help" xid explain --help
[ "$long" -eq 0 ] || fail "$long help lines are over 80 columns (above)"

note "docs/metrics.md's watch section: every option of watch's own (those scan lacks), nothing said to be unbuilt"
doc=$(sed -n '/^## `ghostvram watch`/,/^## /p' "$GV_SRC/docs/metrics.md")
[ -n "$doc" ] || fail "no watch section in docs/metrics.md"
opts() { "$GV_BIN" "$1" --help | sed -n 's/^  \(-[a-z], \)\{0,1\}\(--[a-z][a-z-]*\).*/\2/p' | LC_ALL=C sort -u; }
own=$(LC_ALL=C comm -23 <(opts watch) <(opts scan))
[ "$(wc -l <<<"$own")" -ge 8 ] || fail "watch's own options: $own"
for o in $own; do
        grep -qE -- "$o([^a-z-]|$)" <<<"$doc" || fail "docs/metrics.md (watch) does not mention $o"
done
! grep -i 'not built\|refused for now' <<<"$doc" || fail "docs/metrics.md says a part of watch is not built (above)"
note "sim: every option of each subcommand's table in cmd_sim.c is in 'sim --help' (under it) and 'sim SUB --help'"
sim_help=$("$GV_BIN" sim --help)
# SUB OPTION pairs from the option tables (struct cli_opt), function by function (sim_cmd_SUB)
pairs=$(awk '/^static int sim_cmd_[a-z]+\(/ { sub(/^static int sim_cmd_/, ""); sub(/\(.*/, ""); sub_ = $0 }
             sub_ != "" && /\{ "[a-z][a-z-]*", [^,]+, CO_[A-Z0-9]+[,} ]/ {
                     match($0, /"[a-z][a-z-]*"/); o = substr($0, RSTART + 1, RLENGTH - 2)
                     if (o != "help") print sub_, o }' "$GV_SRC/src/cli/cmd_sim.c")
[ "$(wc -l <<<"$pairs")" -ge 15 ] || fail "options read from cmd_sim.c: $pairs"
grep -q "^run alloc$" <<<"$pairs" || fail "run --alloc not read from cmd_sim.c: $pairs"
while read -r sub o; do
        # the subcommand's lines in 'sim --help': from "  SUB " to the next command or blank line
        block=$(awk -v s="$sub" '$0 ~ "^  " s " " { on = 1; print; next }
                                 on && (/^  [a-z]+ / || /^$/) { on = 0 } on' <<<"$sim_help")
        grep -q -- "--$o\b" <<<"$block" || fail "'sim --help' does not list --$o under $sub"
        "$GV_BIN" sim "$sub" --help | grep >/dev/null -- "--$o\b" || fail "'sim $sub --help' does not list --$o"
done <<<"$pairs"
echo PASS
