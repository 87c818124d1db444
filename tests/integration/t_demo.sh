#!/usr/bin/env bash
# demo: the story end to end on a temporary simulated host, its last act a real
# `ghostvram reclaim --yes` that gets the memory back; nothing it started is left.
. "$(dirname "$0")/lib.sh"

set +e
out=$("$GV_BIN" demo --mib 1024 --workers 2 2>&1)
rc=$?
set -e
assert_eq "$rc" 0 "demo exit status"
grep -q "4. ghostvram scan names what holds the memory" <<<"$out" || fail "scan act"
grep -q "orphaned-holders  1024 MiB ghost held by 2 orphaned processes" <<<"$out" || fail "scan verdict"
grep -q "5. ghostvram reclaim ends them safely, and the memory comes back" <<<"$out" || fail "reclaim act"
grep -qE "GPU 0 +1024 MiB → 0 MiB +freed 1024 MiB +back in [0-9.]+ s" <<<"$out" || fail "memory back: $out"
grep -q "Memory recovered: 2 processes ended." <<<"$out" || fail "reclaim summary"
# the simulated driver's teardown is no process, as the real one: nothing else holds a node
grep -q "other process" <<<"$out" && fail "the demo's scan counts another holder (the teardown watcher?): $out"
grep -q "Demo over" <<<"$(tail -4 <<<"$out")" || fail "end"
grep -q "No running processes found" <<<"$(sed -n '/5. ghostvram reclaim/,$p' <<<"$out")" || fail "nvidia-smi view after reclaim"
dir=$(sed -n 's/^ghostvram demo — on a temporary SIMULATED host in \([^ ]*\) .*/\1/p' <<<"$out")
[ -n "$dir" ] && [ ! -e "$dir" ] || fail "the temporary host $dir is left"
for p in $(sed -n 's/.*forked worker PID \([0-9]*\).*/\1/p; s/.*(simulated: PID \([0-9]*\) .*/\1/p' <<<"$out"); do
        is_dead "$p" || fail "demo left PID $p running"
done

note "below the noise floor: refused in words, nothing started"
set +e
err=$("$GV_BIN" demo --mib 256 2>&1 >/dev/null); rc=$?
set -e
assert_eq "$rc" 2 "demo --mib 256"
grep -q "under the noise floor of the simulated 81559 MiB GPU (816 MiB" <<<"$err" || fail "message: $err"

note "SIGTERM in the middle: its processes are stopped and its directory removed"
mkdir "$GV_TMP/td1"
TMPDIR="$GV_TMP/td1" "$GV_BIN" demo --mib 1024 --workers 2 >"$GV_TMP/d1.out" 2>"$GV_TMP/d1.err" &
DEMO=$!
track "$DEMO"
wait_for_line "$GV_TMP/d1.out" "3. nvidia-smi"
kill -TERM "$DEMO"
set +e
wait "$DEMO"; rc=$?
set -e
assert_eq "$rc" 143 "exit status after SIGTERM"
grep -q "interrupted (signal 15)" "$GV_TMP/d1.err" || fail "says it was interrupted: $(cat "$GV_TMP/d1.err")"
assert_eq "$(ls -A "$GV_TMP/td1")" "" "temporary directory left behind"
pids=$(sed -n 's/.*forked worker PID \([0-9]*\).*/\1/p; s/.*(simulated: PID \([0-9]*\) .*/\1/p' "$GV_TMP/d1.out")
[ -n "$pids" ] || fail "no PIDs in the output"
for p in $pids; do
        for i in $(seq 200); do is_dead "$p" && break; sleep 0.01; done
        is_dead "$p" || fail "interrupted demo left PID $p running"
done

note "demo | head: the reader goes away; the demo ends quietly with SIGPIPE's status (as yes | head -1) and cleans up"
# head -1: gone after the first line; head -40: gone while scan (a child of the demo) writes
for lines in 1 40; do
        mkdir "$GV_TMP/td2-$lines"
        set +e
        TMPDIR="$GV_TMP/td2-$lines" "$GV_BIN" demo --mib 1024 --workers 2 2>"$GV_TMP/d2.err" | head -"$lines" >"$GV_TMP/d2.out"
        rc=${PIPESTATUS[0]}
        set -e
        assert_eq "$rc" 141 "demo | head -$lines: exit status"
        assert_eq "$(cat "$GV_TMP/d2.err")" "" "demo | head -$lines: standard error"
        assert_eq "$(wc -l <"$GV_TMP/d2.out")" "$lines" "demo | head -$lines: lines read"
        assert_eq "$(ls -A "$GV_TMP/td2-$lines")" "" "temporary directory left behind after | head -$lines"
        for i in $(seq 300); do pgrep -f "$GV_TMP/td2-$lines" >/dev/null || break; sleep 0.01; done
        pgrep -af "$GV_TMP/td2-$lines" && fail "processes of the demo left running after | head -$lines"
done
note "a host without a driver: scan says so and points to the demo"
set +e
out=$(env -u GHOSTVRAM_SIM "$GV_BIN" scan --nvml-lib "$GV_TMP/no-libnvidia-ml.so.1" 2>&1)
rc=$?
set -e
assert_eq "$rc" 3 "scan without a driver: exit status"
grep -q "^NVIDIA driver: cannot load NVML library" <<<"$out" || fail "no driver said: $out"
grep -q "next: without a GPU, \`ghostvram demo\` shows ghostvram at work on a simulated host" <<<"$out" \
        || fail "scan without a driver does not point to the demo: $out"
echo "PASS"
