#!/usr/bin/env bash
# Injected faults seen through a real dlopen of the stand-in library: a call that hangs (on
# every GPU or one), NOT_SUPPORTED queries, the legacy symbol set.
. "$(dirname "$0")/lib.sh"

sim_new --gpus 2
sim_run --gpu 1 --mib 300

# returns QUERY-ARGS...: the query finishes (within 30 s: a loaded machine, ASan's start and
# exit); hangs QUERY-ARGS...: it is still running after 2 s (a hung call never returns, so a
# short wait tells it; 124 from timeout), the status of the query otherwise
returns() { timeout 30 env GHOSTVRAM_SIM="$SIM" "$GV_QUERY" "$@" >/dev/null; }
hangs() { timeout 2 env GHOSTVRAM_SIM="$SIM" "$GV_QUERY" "$@" >/dev/null; }

note "hang on one function, on every GPU"
returns || fail "the query should return without a hang knob"
"$GV_BIN" sim set "$SIM" hang=nvmlDeviceGetMemoryInfo_v2
rc=0; hangs || rc=$?
assert_eq "$rc" 124 "a hung call does not return"

note "hang on one GPU only"
"$GV_BIN" sim set "$SIM" hang=none hang=1:nvmlDeviceGetComputeRunningProcesses_v3
returns --gpu 0 || fail "GPU 0 should answer"
rc=0; hangs --gpu 1 || rc=$?
assert_eq "$rc" 124 "GPU 1's process list hangs"
returns --gpu 1 --api v2 || fail "GPU 1's _v2 call does not hang"

note "hang=any: even nvmlInit"
"$GV_BIN" sim set "$SIM" hang=any
rc=0; hangs || rc=$?
assert_eq "$rc" 124 "hang=any"
"$GV_BIN" sim set "$SIM" hang=none
returns || fail "hang=none"

note "NOT_SUPPORTED per query"
"$GV_BIN" sim set "$SIM" notsup=memory_v2 notsup=1:processes
q=$(query)
assert_eq "$(jq -r '.gpus[0].memory_error' <<<"$q")" 3 "memory_v2 on GPU 0"
assert_eq "$(jq -r '.gpus[0].procs | length' <<<"$q")" 0 "GPU 0 processes still answered"
assert_eq "$(jq -r '.gpus[1].procs_error' <<<"$q")" 3 "GPU 1 processes"
assert_eq "$(jq -r '.gpus[1].memory.used' <<<"$q")" $((300 * MIB)) "GPU 1 memory_v2 (its own line wins)"
"$GV_BIN" sim set "$SIM" notsup=none

note "legacy driver: v1 calls only, host PIDs, v1 memory"
"$GV_BIN" sim set "$SIM" driver=440.33.01
q=$(query)
assert_eq "$(jq -r '.driver' <<<"$q")" "440.33.01" "driver"
assert_eq "$(jq -r '.gpus[1].procs_api' <<<"$q")" "v1" "process API"
assert_eq "$(jq -r '.gpus[1].procs[0].pid' <<<"$q")" "$OWNER" "v1 record PID"
assert_eq "$(jq -r '.gpus[1].procs[0].bytes' <<<"$q")" $((300 * MIB)) "v1 record bytes"
assert_eq "$(jq -r '.gpus[1] | has("memory")' <<<"$q")" false "no MemoryInfo_v2 in 440"
assert_eq "$(jq -r '.gpus[1].memory_v1.used' <<<"$q")" $(((579 + 300) * MIB)) "v1 used = reserved + allocated"

note "535.54.03: _v3 with 32-byte records"
"$GV_BIN" sim set "$SIM" v3_stride=32
q=$(query)
assert_eq "$(jq -r '.gpus[1].procs_api' <<<"$q")" "v3/32" "process API"
assert_eq "$(jq -r '.gpus[1].procs[0].pid' <<<"$q")" "$OWNER" "v3/32 record PID"
echo PASS
