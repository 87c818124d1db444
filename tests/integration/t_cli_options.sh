#!/usr/bin/env bash
# One command line: a command's help lists only options it accepts, and a common option it does
# not take (the table in cli/common.c) is refused in one line at parsing, never ignored;
# --timeout means one thing: the per-call deadline is --call-timeout everywhere, -t/--timeout is
# only check's time limit, and the old --timeout elsewhere names its new option (exit 2).
. "$(dirname "$0")/lib.sh"

sim_new --gpus 1
gv() { timeout 20 env GHOSTVRAM_SIM="$SIM" "$GV_BIN" "$@" </dev/null; }
common="--json --verbose --call-timeout --nvml-lib --proc --dev-prefix --holders --save-bundle --from-bundle"

# listed CMD: the options a command's help defines (lines "  -x, --name ARG  text"): the
# option column only, so an option named in a description does not count
listed() {
        "$GV_BIN" help "$1" | grep -E '^  (--?[a-zA-Z])' | sed -E 's/^  //; s/ {2,}.*//' |
                grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z0-9-]*' | tr -d ' ,' | sort -u
}

bad=0
for cmd in scan snapshot check watch top serve xid reclaim experiment doctor track; do
        opts=$(listed "$cmd")
        [ "$(wc -l <<<"$opts")" -ge 2 ] || fail "$cmd: options from its help: $opts"
        note "$cmd: $(tr '\n' ' ' <<<"$opts")"
        for o in $opts; do
                # the option, then options nobody has: parsing stops at the first of those
                # (or at the option's value) and never acts; the option itself is accepted
                rc=0; out=$(gv "$cmd" "$o" --zz-first --zz-second 2>&1) || rc=$?
                if grep -qE -- "(option '$o'|'$o' is unknown|\b$o is now|not accepted)" <<<"$out"; then
                        echo "FAIL: $cmd lists $o but refuses it: $out" >&2
                        bad=$((bad + 1))
                fi
        done
        # a common option the command does not list is refused in words, not ignored
        [ "$cmd" = track ] && continue
        for o in $common; do
                grep -qx -- "$o" <<<"$opts" && continue
                rc=0; out=$(gv "$cmd" "$o" /tmp --zz-second 2>&1) || rc=$?
                if ! grep -qF -- "ghostvram $cmd: option '$o' is not accepted by $cmd; see 'ghostvram help $cmd'" <<<"$out" &&
                        ! { [ "$cmd/$o" = check/--json ] && grep -q "check prints a plugin status line" <<<"$out"; }; then
                        echo "FAIL: $cmd does not list $o, and does not refuse it: $out" >&2
                        bad=$((bad + 1))
                fi
        done
        grep -qx -- --call-timeout <<<"$opts" || [ "$cmd" = track ] ||
                { echo "FAIL: $cmd has no --call-timeout" >&2; bad=$((bad + 1)); }
done
[ "$bad" -eq 0 ] || fail "$bad options listed and refused, or not listed and taken (above)"

note "the old --timeout: one line naming the new option, exit 2"
for cmd in scan snapshot watch top serve xid doctor; do
        rc=0; gv "$cmd" --timeout 5s >"$GV_TMP/out" 2>"$GV_TMP/err" || rc=$?
        assert_eq "$rc" 2 "$cmd --timeout"
        assert_eq "$(cat "$GV_TMP/err")" \
                "ghostvram $cmd: --timeout is now --call-timeout (the deadline for each driver call)" "$cmd --timeout"
done
rc=0; gv reclaim --timeout 5s >/dev/null 2>"$GV_TMP/err" || rc=$?
assert_eq "$rc" 2 "reclaim --timeout"
assert_eq "$(cat "$GV_TMP/err")" "ghostvram reclaim: --timeout is now --wait (how long to wait for the processes to end and the memory to come back)" "reclaim --timeout"
rc=0; gv experiment --timeout=5s >/dev/null 2>"$GV_TMP/err" || rc=$?
assert_eq "$rc" 2 "experiment --timeout"
assert_eq "$(cat "$GV_TMP/err")" "ghostvram experiment: --timeout is now --wait (how long to wait for the memory each time)" "experiment --timeout"

note "the new names take their values"
rc=0; gv scan --call-timeout 2s --confirm 0 >/dev/null || rc=$?
assert_eq "$rc" 0 "scan --call-timeout 2s"
rc=0; gv scan --call-timeout 0 2>"$GV_TMP/err" >/dev/null || rc=$?
assert_eq "$rc" 2 "scan --call-timeout 0"
grep -q -- "--call-timeout: '0' is not a duration" "$GV_TMP/err" || fail "scan --call-timeout 0: $(cat "$GV_TMP/err")"
rc=0; gv reclaim --wait 2s --grace 1s --json >/dev/null || rc=$?
assert_eq "$rc" 0 "reclaim --wait 2s (a dry run with nothing to do)"
rc=0; gv reclaim --wait 1s --grace 5s 2>"$GV_TMP/err" >/dev/null || rc=$?
assert_eq "$rc" 2 "reclaim --grace over --wait"
grep -q -- "--grace must be shorter than --wait" "$GV_TMP/err" || fail "reclaim: $(cat "$GV_TMP/err")"

note "check keeps -t/--timeout, the plugin's time limit, and takes --call-timeout"
rc=0; out=$(gv check --timeout 20 --call-timeout 2s --confirm 0) || rc=$?
assert_eq "$rc" 0 "check --timeout 20 --call-timeout 2s"
grep -q "^GHOSTVRAM OK" <<<"$out" || fail "check: $out"
rc=0; out=$(gv check -t 0) || rc=$?
assert_eq "$rc" 3 "check -t 0"
grep -q -- "-t: '0' is not a number of seconds" <<<"$out" || fail "check -t 0: $out"
echo PASS
