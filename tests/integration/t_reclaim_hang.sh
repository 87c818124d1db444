#!/usr/bin/env bash
# A driver that hangs while reclaim measures the memory coming back: at most one thread stays
# stuck per GPU (the NVML backend does not call a GPU again while an earlier call is stuck in
# it), and the report blames the driver, not the memory.
. "$(dirname "$0")/lib.sh"
: "${GV_BIN_HOOKS:?GV_BIN_HOOKS must name ghostvram-testhooks (the build with the test hooks)}"

threads() { awk '/^Threads:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 1 --mib 1024 --workers 2
kill_wait "$OWNER"

P="$GV_TMP/pause"
GHOSTVRAM_TEST_PAUSE="open:$P" GHOSTVRAM_SIM="$SIM" "$GV_BIN_HOOKS" reclaim --confirm 300ms --json --yes --gpu 1 \
        --grace 1s --wait 5s >"$P.out" 2>"$P.err" &
BG=$!
track "$BG"
for i in $(seq 1000); do [ -e "$P.ready" ] && break; sleep 0.01; done
[ -e "$P.ready" ] || fail "reclaim did not reach the pause"
note "GPU 1's memory query hangs from now on; sampling goes on for 5 s"
"$GV_BIN" sim set "$SIM" hang=1:nvmlDeviceGetMemoryInfo_v2 >/dev/null
touch "$P.go"
max=0
while ! is_dead "$BG"; do
        t=$(threads "$BG")
        [ "$t" -gt "$max" ] && max=$t
        sleep 0.1
done
set +e
wait "$BG"
rc=$?
set -e
R=$(cat "$P.out")
note "threads at most: $max"
[ "$max" -le 3 ] || fail "stuck threads piled up: $max threads (at most one stuck call per GPU expected)"
assert_eq "$rc" 1 "exit status"
for w in "${WORKERS[@]}"; do is_dead "$w" || fail "worker $w alive"; done
jq -r .summary <<<"$R" | grep -q "the NVIDIA driver stopped answering the memory queries" ||
        fail "summary blames the memory: $(jq -r .summary <<<"$R")"
assert_eq "$(jq -r '.gpus[] | select(.index == 1) | .recovered' <<<"$R")" false "not recovered"
"$GV_BIN" sim set "$SIM" hang=none >/dev/null
