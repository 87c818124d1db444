#!/usr/bin/env bash
# One GPU whose driver call hangs must not blind the continuous commands for the others:
# serve (/api/v1/scan, /metrics), watch and top --batch keep sampling GPU 0 and show GPU 1 as
# not inspected, with the reason and how long its call has hung; the hung GPU is not asked again
# while its call is stuck, so serve's threads stay bounded however many cycles run.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024
"$GV_BIN" sim set "$SIM" hang=1:nvmlDeviceGetMemoryInfo_v2

note "serve: GPU 0's figures, GPU 1 not inspected"
serve_start --interval 1s --call-timeout 300ms
wait_until 30 bash -c "curl -fsS -o '$GV_TMP/scan.json' '$URL/api/v1/scan' 2>/dev/null" ||
        fail "/api/v1/scan never answered 200: $(curl -s "$URL/api/v1/scan")"
assert_eq "$(jq -r '.gpus[] | select(.index == 0) | .memory.listed_bytes' "$GV_TMP/scan.json")" $((1024 * MIB)) \
        "GPU 0's listed bytes in /api/v1/scan"
assert_eq "$(jq -r '.gpus[] | select(.index == 0) | .verdict' "$GV_TMP/scan.json")" ok "GPU 0's verdict"
assert_eq "$(jq -r '.gpus[] | select(.index == 1) | .status' "$GV_TMP/scan.json")" timeout "GPU 1's status"
assert_eq "$(jq -r '.gpus[] | select(.index == 1) | .verdict' "$GV_TMP/scan.json")" unknown "GPU 1's verdict"
# after the first cycle GPU 1 is not asked again: the reason says for how long its call hangs
wait_until 20 bash -c "curl -fsS '$URL/api/v1/scan' | jq -e '.gpus[1].status_message | test(\"^GPU 1: not inspected: a call on it has not returned for [0-9]+ s\")' >/dev/null" ||
        fail "GPU 1's reason: $(curl -s "$URL/api/v1/scan" | jq -c '.gpus[1].status_message')"
m=$(scrape)
grep -q "^ghostvram_gpu_memory_used_bytes{gpu=\"0\",.*kind=\"listed\"} $((1024 * MIB))$" <<<"$m" ||
        fail "GPU 0's listed bytes missing from /metrics: $(grep '^ghostvram_gpu_memory_used_bytes' <<<"$m")"
grep -q '^ghostvram_gpu_verdict{gpu="1",.*verdict="unknown"} 1$' <<<"$m" ||
        fail "GPU 1 is not unknown in /metrics: $(grep '^ghostvram_gpu_verdict{gpu="1"' <<<"$m" | grep ' 1$')"
grep -q '^ghostvram_gpu_memory_used_bytes{gpu="1"' <<<"$m" && fail "/metrics gives figures for GPU 1, which did not answer"

note "serve: threads stay bounded over many cycles with the hang in place"
sleep 3 # several cycles of 1 s
t1=$(steady_threads "$SERVE_PID")
sleep 4
t2=$(steady_threads "$SERVE_PID")
note "  threads: $t1, then $t2 after 4 more cycles (between walks)"
assert_eq "$t2" "$t1" "serve's thread count over 4 cycles with GPU 1 hung"
# main, the collector, the HTTP side (at most a few) and one thread stuck on GPU 1
[ "$t2" -le 8 ] || fail "serve has $t2 threads: calls pile up in the hung driver"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/api/v1/scan")" 200 "/api/v1/scan after many cycles"
serve_stop

note "watch --count 3: GPU 0's state, an error line for GPU 1, exit 0"
rc=0
GHOSTVRAM_SIM="$SIM" timeout 30 "$GV_BIN" watch --count 3 --interval 300ms --call-timeout 300ms >"$GV_TMP/w.out" 2>&1 || rc=$?
assert_eq "$rc" 0 "watch's exit status with GPU 1 hung"
grep -q "GPU 0 ok, ghost 0 MiB" "$GV_TMP/w.out" || fail "no state line for GPU 0: $(cat "$GV_TMP/w.out")"
grep -q "scan error: GPU 1: driver did not answer within 0.3 s" "$GV_TMP/w.out" ||
        fail "no error line for GPU 1: $(cat "$GV_TMP/w.out")"
grep -q "GPU 1 unknown" "$GV_TMP/w.out" || fail "no state line for GPU 1: $(cat "$GV_TMP/w.out")"
grep -q "no sample succeeded" "$GV_TMP/w.out" && fail "watch says nothing succeeded: $(cat "$GV_TMP/w.out")"

note "top --batch: GPU 0 shown, GPU 1 not inspected"
GHOSTVRAM_SIM="$SIM" timeout 30 "$GV_BIN" top --batch --iterations 4 --interval 300ms --call-timeout 300ms \
        >"$GV_TMP/top.out" 2>&1 || fail "top --batch failed: $(cat "$GV_TMP/top.out")"
last=$(awk '/^ghostvram top/ { n++ } { s[n] = s[n] $0 "\n" } END { printf "%s", s[n] }' "$GV_TMP/top.out")
grep -q "waiting for the first sample" <<<"$last" && fail "top still waits for a sample: $last"
grep -q "^GPU 0 .*0000:1b:00.0  ok" <<<"$last" || fail "GPU 0 not shown: $last"
grep -q "^GPU 1 .*unknown" <<<"$last" || fail "GPU 1 not shown as unknown: $last"
grep -q "GPU 1: not inspected: a call on it has not returned for" <<<"$last" || fail "no reason for GPU 1: $last"

note "the hang is lifted: a fresh process inspects both GPUs"
"$GV_BIN" sim set "$SIM" hang=none
rc=0
GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --call-timeout 300ms >"$GV_TMP/s.json" || rc=$?
assert_eq "$(jq -r '[.gpus[].status] | join(" ")' "$GV_TMP/s.json")" "ok ok" "both GPUs after the hang"
echo "PASS"
