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
grep -q "Demo over" <<<"$(tail -4 <<<"$out")" || fail "end"
grep -q "No running processes found" <<<"$(sed -n '/5. ghostvram reclaim/,$p' <<<"$out")" || fail "nvidia-smi view after reclaim"
dir=$(sed -n 's/^ghostvram demo — on a temporary SIMULATED host in \([^ ]*\) .*/\1/p' <<<"$out")
[ -n "$dir" ] && [ ! -e "$dir" ] || fail "the temporary host $dir is left"
for p in $(sed -n 's/.*forked worker PID \([0-9]*\).*/\1/p; s/.*(simulated: PID \([0-9]*\) .*/\1/p' <<<"$out"); do
        is_dead "$p" || fail "demo left PID $p running"
done
echo "PASS"
