#!/usr/bin/env bash
# Inputs at the edges: an empty path is refused in one line (exit 2), never taken for the current
# or the root directory; files and directories that cannot serve are refused before a command
# runs, with each command's documented status; an empty or malformed --pid list never falls back
# to the default targets; bad options are one line and a hint; impossible dates and thresholds
# are refused.
. "$(dirname "$0")/lib.sh"

sim_new --gpus 1 --memory 16384 --reserved 512
gv() { timeout 30 env GHOSTVRAM_SIM="$SIM" "$GV_BIN" "$@" </dev/null; }
# expect RC TEXT ARGS...: exit RC, TEXT on stderr, and stderr one line
expect() {
        local want=$1 text=$2 rc=0
        shift 2
        gv "$@" >"$GV_TMP/out" 2>"$GV_TMP/err" || rc=$?
        [ "$rc" = "$want" ] || fail "$*: exit $rc, expected $want; stderr: $(cat "$GV_TMP/err")"
        grep -qF -- "$text" "$GV_TMP/err" || fail "$*: no '$text' in: $(cat "$GV_TMP/err")"
        [ "$(wc -l <"$GV_TMP/err")" = 1 ] || fail "$*: more than one line on stderr: $(cat "$GV_TMP/err")"
}

note "sim: an empty DIR is a usage error in every subcommand, and init never builds over / or a full directory"
# a build that took '' for the root directory would build a host at / (its dev/ the host's
# /dev): probe with the harmless status first, and try nothing that writes unless it refuses
rc=0; gv sim status '' >/dev/null 2>"$GV_TMP/err" || rc=$?
[ "$rc" = 2 ] && grep -q "an empty path" "$GV_TMP/err" ||
        fail "sim status '' is not refused (exit $rc: $(cat "$GV_TMP/err")): the writing forms are not tried"
expect 2 "DIR: an empty path" sim init ''
expect 2 "DIR: an empty path" sim init '' --gpus 1
expect 2 "DIR: an empty path" sim run '' --gpu 0 --mib 64
expect 2 "DIR: an empty path" sim set '' driver=535.98
expect 2 "refused: the root directory" sim init /
expect 2 "refused: the root directory" sim init /.
mkdir "$GV_TMP/full" && touch "$GV_TMP/full/keep"
expect 2 "not empty and not a simulated host" sim init "$GV_TMP/full"
[ ! -e "$GV_TMP/full/sim.conf" ] && [ ! -e "$GV_TMP/full/dev" ] || fail "sim init wrote into a full directory"
mkdir "$GV_TMP/empty"
gv sim init "$GV_TMP/empty" --gpus 1 >/dev/null || fail "sim init into an empty directory failed"
expect 2 "already holds a simulated host" sim init "$GV_TMP/empty"

note "empty path options: one line, exit 2"
expect 2 "--textfile: an empty path" scan --textfile ''
expect 2 "--textfile: an empty path" watch --textfile '' --count 1
[ ! -e /ghostvram.prom ] || fail "/ghostvram.prom exists"
expect 2 "--save-bundle: an empty path" scan --save-bundle ''
expect 2 "--from-bundle: an empty path" scan --from-bundle ''
expect 2 "--kmsg: an empty path" scan --kmsg ''
expect 2 "--ledger-dir: an empty path" scan --ledger-dir ''
expect 2 "--proc: an empty path" scan --proc ''
expect 2 "--dev-prefix: an empty path" scan --dev-prefix ''
expect 2 "--nvml-lib: an empty path" scan --nvml-lib ''
expect 2 "--kmsg: an empty path" xid --kmsg ''
expect 2 "--root: an empty path" doctor --root ''
expect 2 "--ledger-dir: an empty path" serve --ledger-dir ''
expect 2 "--policy: an empty path" reclaim --policy ''
expect 2 "--cgroup: an empty path" reclaim --cgroup ''
expect 2 "--ledger-dir: an empty path" track --ledger-dir '' -- true
expect 2 "--report: an empty path" track --report '' -- true
expect 2 "--preload: an empty path" track --preload '' -- true
expect 2 "--show: an empty path" track --show ''

note "reclaim --pid: an empty or malformed list is exit 2, nothing signalled"
sleep 600 &
VICTIM=$!
track "$VICTIM"
for p in '' ',' "$VICTIM," ",$VICTIM" "1,,$VICTIM"; do
        expect 2 "--pid: '$p' is not a PID" reclaim --pid "$p" --yes --force --grace 1s --wait 2s
        ! is_dead "$VICTIM" || fail "--pid '$p' ended a process"
done
expect 2 "--pid: '' is not a PID" reclaim -n --pid ''

note "files and directories that cannot serve: refused before the command runs"
expect 2 "--kmsg cannot open /nonexistent" scan --kmsg /nonexistent
expect 2 "is a directory, not a kernel log" scan --kmsg /tmp
expect 2 "not a regular file (a character device)" scan --kmsg /dev/zero
# watch: 3, as scan's failed write (its help: could not start), before any sample
expect 3 "--textfile /nonexistent: no such directory" watch --textfile /nonexistent --count 1
expect 3 "not a directory (a file)" watch --textfile /etc/passwd --count 1
[ ! -s "$GV_TMP/out" ] || fail "watch sampled before refusing: $(cat "$GV_TMP/out")"
# scan: the same, before the scan
expect 3 "--textfile /nonexistent: no such directory" scan --textfile /nonexistent --confirm 0
expect 2 "--ledger-dir /nonexistent: no such directory" scan --ledger-dir /nonexistent --confirm 0
echo untouched >"$GV_TMP/flag"
expect 125 "--report /tmp: a directory" track --report /tmp -- touch "$GV_TMP/ran"
expect 125 "--report /nonexistent/x: No such file" track --report /nonexistent/x -- touch "$GV_TMP/ran"
expect 125 "--ledger-dir /etc/passwd: not a directory" track --ledger-dir /etc/passwd -- touch "$GV_TMP/ran"
expect 125 "not an ELF shared object" track --ledger-dir "$GV_TMP/l" --preload /etc/passwd -- touch "$GV_TMP/ran"
[ ! -e "$GV_TMP/ran" ] || fail "track ran the command after a refusal"
expect 1 "--show /tmp: a directory, not an allocation ledger" track --show /tmp
expect 2 "--root /nonexistent: no such directory" doctor --root /nonexistent
expect 2 "--ledger-dir /nonexistent: no such directory" serve --ledger-dir /nonexistent --listen 127.0.0.1:0
expect 2 "--proc /nonexistent: no such directory" serve --proc /nonexistent --listen 127.0.0.1:0
expect 2 "--proc /nonexistent: no such directory" top --proc /nonexistent --iterations 1
expect 2 "--proc /etc/passwd: not a directory" scan --proc /etc/passwd

note "a damaged bundle: the user's input, exit 2 and the file and place, never a driver that failed (3)"
gv snapshot --save-bundle "$GV_TMP/bundle" >/dev/null
gv scan --from-bundle "$GV_TMP/bundle" --confirm 0 >/dev/null || fail "the intact bundle does not read back"
damaged() { # FILE CONTENT: a copy of the bundle with FILE replaced
        rm -rf "$GV_TMP/bad" && cp -r "$GV_TMP/bundle" "$GV_TMP/bad" && mkdir -p "$(dirname "$GV_TMP/bad/$1")"
        printf '%s' "$2" >"$GV_TMP/bad/$1"
}
damaged nvml.json '{"driver": {'
expect 2 "--from-bundle $GV_TMP/bad: nvml.json: not JSON (line 1, column 12" scan --from-bundle "$GV_TMP/bad"
expect 2 "nvml.json: not JSON" snapshot --from-bundle "$GV_TMP/bad"
expect 2 "nvml.json: not JSON" reclaim -n --from-bundle "$GV_TMP/bad"
damaged nvml.json '{"gpus": 7}'
expect 2 "nvml.json: not the driver's answers of a ghostvram bundle" scan --from-bundle "$GV_TMP/bad"
damaged host.json '{"format": "ghostvram-host-bundle", "procs": {'
expect 2 "host.json: not JSON (line 1" scan --from-bundle "$GV_TMP/bad"
damaged host.json '{"format": "something-else"}'
expect 2 "host.json: not a ghostvram bundle's" snapshot --from-bundle "$GV_TMP/bad"
damaged host.json '{"format": "ghostvram-host-bundle"}'
expect 2 "host.json: a field of the bundle's host facts is missing" scan --from-bundle "$GV_TMP/bad"
# the confirming sample's files are checked too, by their own name
damaged confirm/nvml.json '['
cp "$GV_TMP/bundle/host.json" "$GV_TMP/bad/confirm/host.json"
expect 2 "--from-bundle $GV_TMP/bad: confirm/nvml.json: not JSON" scan --from-bundle "$GV_TMP/bad"

note "messages: a directory is called one; a file that is no policy is not echoed"
expect 2 "--policy /tmp: a directory, not a policy file" reclaim --policy /tmp
printf 'root:$6$SECRETSALT$SECRETHASH:19000:0:99999:7:::\n' >"$GV_TMP/shadow"
expect 2 "unknown keyword 'root...'" reclaim --policy "$GV_TMP/shadow"
! grep -q SECRET "$GV_TMP/err" "$GV_TMP/out" || fail "the policy file's content was echoed: $(cat "$GV_TMP/err")"
rc=0; gv reclaim --cgroup /no/such/job --yes >/dev/null 2>"$GV_TMP/err" || rc=$?
[ "$rc" -ne 0 ] || fail "reclaim --cgroup /no/such/job exited 0"
grep -q -- "--cgroup /no/such/job\|cgroup v2" "$GV_TMP/err" || fail "reclaim --cgroup: the error is not on stderr"

note "options: one line and a hint, extra arguments refused"
expect 2 "unknown option '--json'; see 'ghostvram help demo'" demo --json
expect 2 "unexpected argument 'extra-arg'" demo extra-arg
expect 2 "--workers: '0' is not a number from 1" demo --workers 0
expect 2 "unknown option '--bogus'; see 'ghostvram help sim init'" sim init "$GV_TMP/new" --bogus
[ ! -e "$GV_TMP/new" ] || fail "sim init --bogus created the host"
expect 2 "unknown option '--bogus'; see 'ghostvram help sim status'" sim status "$SIM" --bogus
expect 2 "explain: '-1' is not an Xid number" xid explain -1
expect 2 "option '--json' takes no value" scan --json=yes
expect 2 "unexpected argument 'extra'" help scan extra
expect 2 "unexpected argument 'extra'" --version extra
gv help help | grep -q "^Usage: ghostvram COMMAND" || fail "help help does not print help's usage"
gv help sim init | grep -q "^Usage: ghostvram sim init" || fail "help sim init"
expect 2 "xid has no subcommand 'bogus'" help xid bogus
expect 2 "sim has no subcommand 'nope'" help sim nope
expect 2 "--launcher and --launcher-exits cannot be used together" sim run "$SIM" --gpu 0 --mib 64 --launcher --launcher-exits

note "dates and thresholds that cannot be"
: >"$GV_TMP/k.log"
expect 2 "--since: '2026-02-30' is not" xid --kmsg "$GV_TMP/k.log" --since 2026-02-30
gv xid --kmsg "$GV_TMP/k.log" --since 2024-02-29 >/dev/null || fail "a leap day refused"
rc=0; out=$(gv check -w 99999999999999999999) || rc=$?
assert_eq "$rc" 3 "check -w beyond 2^64 bytes"
grep -q "^GHOSTVRAM UNKNOWN" <<<"$out" || fail "check -w 99999999999999999999: $out"
rc=0; out=$(gv check -c 0.0000001) || rc=$?
assert_eq "$rc" 3 "check -c under a byte"
out=$(gv check -w 10000000000000 -c 10000000000000 --confirm 0) || true
grep -q "B;10485760000000000000;10485760000000000000;" <<<"$out" || fail "thresholds not whole bytes: $out"
! grep -q "e+" <<<"$out" || fail "a threshold in exponent form: $out"

note "scan --dev-prefix with no node of the GPU: a live owner is never called stale"
sim_run --gpu 0 --mib 1024 --workers 1
rc=0; gv scan --confirm 0 --dev-prefix "$GV_TMP/nonexistent/nvidia" >"$GV_TMP/out" 2>&1 || rc=$?
assert_eq "$rc" 3 "scan with no device node under the prefix"
! grep -q "stale-owner\|gpu-reset" "$GV_TMP/out" || fail "a live owner called stale: $(cat "$GV_TMP/out")"
grep -q "^  unknown " "$GV_TMP/out" || fail "verdict not unknown: $(cat "$GV_TMP/out")"
grep -q "no device node under $GV_TMP/nonexistent/nvidia" "$GV_TMP/out" || fail "no limit line: $(cat "$GV_TMP/out")"
# with its nodes the same owner is live
rc=0; gv scan --confirm 0 >"$GV_TMP/out" 2>&1 || rc=$?
assert_eq "$rc" 0 "scan with the nodes"
grep -q "^  ok " "$GV_TMP/out" || fail "not ok with the nodes: $(cat "$GV_TMP/out")"
echo PASS
