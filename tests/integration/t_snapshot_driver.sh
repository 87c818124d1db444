#!/usr/bin/env bash
# The NVML reader against the simulated driver's generations and faults: symbol variants and
# strides, struct versions, list growth, a lost GPU, NOT_SUPPORTED, and a hanging call that
# must end in a deadline message, never a hung ghostvram.
. "$(dirname "$0")/lib.sh"

snap() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json "$@"; }

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024 --workers 1
JOB1=$OWNER
sim_run --gpu 0 --mib 512
JOB2=$OWNER
want_pids=$(printf '%s\n' "$JOB1" "$JOB2" | sort -n | tr '\n' ',' | sed 's/,$//')

check_variant() { # DRIVER PROCS_API MEMORY_API PID_MODE [VERSION]
        "$GV_BIN" sim set "$SIM" "driver=$1" >/dev/null
        local s
        s=$(snap)
        assert_eq "$(jq -r '.driver.version' <<<"$s")" "${5:-$1}" "driver version ($1)"
        assert_eq "$(jq -r '.gpus[0].processes_api' <<<"$s")" "$2" "process API ($1)"
        assert_eq "$(jq -r '.gpus[0].memory.api' <<<"$s")" "$3" "memory API ($1)"
        assert_eq "$(jq -r '.driver.pid_mode' <<<"$s")" "$4" "PID mode ($1)"
        # the right PIDs and bytes whatever the stride
        assert_eq "$(jq -r '.gpus[0].nvml_processes | map(.pid) | sort | map(tostring) | join(",")' <<<"$s")" "$want_pids" "PIDs ($1)"
        assert_eq "$(jq -r ".gpus[0].nvml_processes[] | select(.pid == $JOB1) | .used_bytes" <<<"$s")" $((1024 * MIB)) "bytes ($1)"
        assert_eq "$(jq -r '[.gpus[0].errors[] | select(.message | test("implausible"))] | length' <<<"$s")" 0 "no stride garbage ($1)"
        if [ "$3" = 2 ]; then
                assert_eq "$(jq -r '.gpus[0].memory.used_bytes' <<<"$s")" $((1536 * MIB)) "v2 used ($1)"
                assert_eq "$(jq -r '.gpus[0].memory.reserved_bytes' <<<"$s")" $((512 * MIB)) "v2 reserved ($1)"
        else
                # v1: used includes the reservation, which is unknown
                assert_eq "$(jq -r '.gpus[0].memory.used_bytes' <<<"$s")" $((2048 * MIB)) "v1 used ($1)"
                assert_eq "$(jq -r '.gpus[0].memory.reserved_bytes' <<<"$s")" null "v1 reserved ($1)"
        fi
}
note "driver generations: symbols, strides and memory queries"
check_variant current v3/24 2 translated 560.35.03
check_variant 535.54.03 v3/32 2 host
check_variant 535.98 v2 2 host
check_variant 470.42.01 v2 1 host
check_variant 440.33.01 v1 1 host
"$GV_BIN" sim set "$SIM" driver=default >/dev/null

note "strict struct versions: the v2 memory query works because the version is set exactly"
"$GV_BIN" sim set "$SIM" strict_versions=on >/dev/null
assert_eq "$(snap | jq -r '.gpus[0].memory.api')" 2 "v2 memory with strict versions"

note "the process list grows between the sizing call and the fill call"
"$GV_BIN" sim set "$SIM" list_growth=1 >/dev/null
assert_eq "$(snap | jq -r '.gpus[0].nvml_processes | map(.pid) | sort | map(tostring) | join(",")')" "$want_pids" "all PIDs despite growth"
"$GV_BIN" sim set "$SIM" list_growth=5 >/dev/null
# the sizing call now says "nothing runs" (SUCCESS, 0): asked again with room, not taken for an
# empty list on a GPU whose memory is used (a false ghost)
assert_eq "$(snap | jq -r '.gpus[0].nvml_processes | map(.pid) | sort | map(tostring) | join(",")')" "$want_pids" "all PIDs when the sizing call saw none"
"$GV_BIN" sim set "$SIM" list_growth=default >/dev/null

note "NOT_SUPPORTED for one query is recorded and does not fail the rest"
"$GV_BIN" sim set "$SIM" notsup=persistence >/dev/null
s=$(snap)
assert_eq "$(jq -r '.gpus[0].persistence_mode' <<<"$s")" null "persistence unknown"
assert_eq "$(jq -r '.gpus[0].errors[] | select(.query == "persistence") | .nvml_code' <<<"$s")" 3 "NOT_SUPPORTED recorded"
assert_eq "$(jq -r '.gpus[0].memory.used_bytes' <<<"$s")" $((1536 * MIB)) "memory still read"
"$GV_BIN" sim set "$SIM" notsup=none >/dev/null

note "a lost GPU does not fail the other"
"$GV_BIN" sim set "$SIM" gpu_lost=1:on >/dev/null
s=$(snap)
assert_eq "$(jq -r '.gpus[1].status' <<<"$s")" lost "GPU 1 lost"
assert_eq "$(jq -r '.gpus[0].status' <<<"$s")" ok "GPU 0 fine"
assert_eq "$(jq -r '.gpus[0].nvml_processes | length' <<<"$s")" 2 "GPU 0 processes"
"$GV_BIN" sim set "$SIM" gpu_lost=1:off >/dev/null

note "a hanging call on one GPU: a deadline message for it, the other GPU answers"
"$GV_BIN" sim set "$SIM" hang=1:nvmlDeviceGetMemoryInfo_v2 >/dev/null
t0=$(date +%s%N)
s=$(timeout 20 env GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json --call-timeout 1s) || true
t1=$(date +%s%N)
[ -n "$s" ] || fail "snapshot printed nothing (hung?)"
[ $(((t1 - t0) / 1000000)) -lt 6000 ] || fail "snapshot took $(((t1 - t0) / 1000000)) ms with a 1 s deadline"
assert_eq "$(jq -r '.gpus[1].status' <<<"$s")" timeout "GPU 1 timed out"
assert_eq "$(jq -r '.gpus[1].status_message' <<<"$s")" "GPU 1: driver did not answer within 1 s" "deadline message"
assert_eq "$(jq -r '.gpus[0].memory.used_bytes' <<<"$s")" $((1536 * MIB)) "GPU 0 still read"
text=$(timeout 20 env GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --call-timeout 1s) || true
grep -q "GPU 1: driver did not answer within 1 s" <<<"$text" || fail "text output lacks the deadline message"

note "a driver that hangs on every call: one clear message, quickly"
"$GV_BIN" sim set "$SIM" hang=any >/dev/null
t0=$(date +%s%N)
s=$(timeout 20 env GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json --call-timeout 1s) || true
t1=$(date +%s%N)
[ $(((t1 - t0) / 1000000)) -lt 6000 ] || fail "a wedged driver took $(((t1 - t0) / 1000000)) ms"
assert_eq "$(jq -r '.driver.error' <<<"$s")" "the NVIDIA driver did not answer within 1 s (nvmlInit)" "wedged driver message"
"$GV_BIN" sim set "$SIM" hang=none >/dev/null

note "no driver at all: a plain message"
s=$("$GV_BIN" snapshot --json --nvml-lib "$GV_TMP/no-such-lib.so" || true)
assert_eq "$(jq -r '.driver.present' <<<"$s")" false "driver absent"
grep -q "cannot load NVML library" <<<"$(jq -r '.driver.error' <<<"$s")" || fail "no clear message for a missing library"
echo "PASS"
