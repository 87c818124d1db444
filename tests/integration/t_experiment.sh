#!/usr/bin/env bash
# experiment on the simulated driver: while the killed job's workers live the residual is the
# job's size and does not come back; after reclaim it is zero; the driver's teardown delay shows
# in the recovery time; the table is printed; the JSON holds the samples; nothing it started is
# left running. Without a driver or GHOSTVRAM_SIM it says so.
. "$(dirname "$0")/lib.sh"

exp_rc() { set +e; E=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" experiment --confirm 300ms "$@" 2>"$GV_TMP/err"); RC=$?; set -e; }

sim_new --gpus 2 --memory 16384 --reserved 512

note "kill, then reclaim: residual = job size, then 0"
exp_rc --gpu 1 --mib 512 --workers 2 --wait 1s --reclaim --json
assert_eq "$RC" 0 "exit status"
assert_eq "$(jq -r .schema_version <<<"$E")" 2 "schema_version"
assert_eq "$(jq -r '.runs | length' <<<"$E")" 1 "one run"
run='.runs[0]'
assert_eq "$(jq -r "$run.allocated_bytes" <<<"$E")" $((512 * MIB)) "allocated"
assert_eq "$(jq -r "$run.after_kill.residual_bytes" <<<"$E")" $((512 * MIB)) "residual while the workers live"
assert_eq "$(jq -r "$run.after_kill.recovered" <<<"$E")" false "not back"
assert_eq "$(jq -r "$run.after_kill.recovery_seconds" <<<"$E")" null "no recovery time"
# every raw sample of the kill phase: the job's 512 MiB, over the whole second
n=$(jq -r "$run.after_kill.samples | length" <<<"$E")
[ "$n" -ge 10 ] || fail "only $n samples in a second"
assert_eq "$(jq -r "[$run.after_kill.samples[][1]] | unique | map(tostring) | join(\",\")" <<<"$E")" $((512 * MIB)) "samples"
jq -e "$run.after_kill.samples[-1][0] >= 1" <<<"$E" >/dev/null || fail "sampled until the timeout"
assert_eq "$(jq -r "$run.after_reclaim.reclaim_exit_status" <<<"$E")" 0 "reclaim exit"
assert_eq "$(jq -r "$run.after_reclaim.residual_bytes" <<<"$E")" 0 "residual after reclaim"
assert_eq "$(jq -r "$run.after_reclaim.recovered" <<<"$E")" true "back after reclaim"
assert_eq "$(jq -r "[$run.after_reclaim.reclaim_actions[].result] | join(\",\")" <<<"$E")" terminated,terminated "reclaim actions"
assert_eq "$(jq -r "$run.kernel.read" <<<"$E")" true "kernel log read (the simulated host's)"
assert_eq "$(jq -r "$run.kernel.error_count" <<<"$E")" 0 "no kernel errors"
assert_eq "$(jq -r '.summary.after_kill.residual_bytes_stats.median' <<<"$E")" $((512 * MIB)) "summary residual"
assert_eq "$(jq -r '.summary.after_reclaim.residual_bytes_stats.median' <<<"$E")" 0 "summary residual after reclaim"
for p in $(jq -r "$run.owner_pid, $run.worker_pids[]" <<<"$E"); do is_dead "$p" || fail "PID $p was left running"; done
assert_eq "$(used 1)" 0 "memory back at the end"

note "the driver's teardown delay shows in the recovery time"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=400 >/dev/null
exp_rc --gpu 0 --mib 1024 --workers 1 --wait 3s --reclaim --json
assert_eq "$RC" 0 "exit status"
jq -e '.runs[0].after_reclaim.recovery_seconds | . >= 0.35 and . < 2' <<<"$E" >/dev/null ||
        fail "recovery time with a 400 ms/GiB teardown: $(jq -r '.runs[0].after_reclaim.recovery_seconds' <<<"$E")"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=0 >/dev/null

note "the table, with --repeat: median and spread"
exp_rc --gpu 1 --mib 256 --workers 1 --wait 500ms --reclaim --repeat 2
assert_eq "$RC" 0 "exit status"
grep -qE "after kill -KILL +256 \[256–256\] +— \(not within 0.5 s\) +Xid 45: 0, errors: 0" <<<"$E" || fail "kill row: $E"
grep -qE "after ghostvram reclaim +0 \[0–0\] +[0-9.]+ \[[0-9.]+–[0-9.]+\] s" <<<"$E" || fail "reclaim row: $E"
grep -q "2 runs (median \[min–max\])" <<<"$E" || fail "header"

note "without --reclaim, killed with SIGTERM: the workers still hold it"
exp_rc --gpu 1 --mib 256 --workers 2 --signal TERM --wait 300ms --json
assert_eq "$RC" 0 "exit status"
assert_eq "$(jq -r .signal <<<"$E")" TERM "signal"
assert_eq "$(jq -r '.runs[0].after_kill.residual_bytes' <<<"$E")" $((256 * MIB)) "residual"
assert_eq "$(jq -r '.runs[0].after_reclaim' <<<"$E")" null "no reclaim"
for p in $(jq -r '.runs[0].owner_pid, .runs[0].worker_pids[]' <<<"$E"); do is_dead "$p" || fail "PID $p was left running"; done
assert_eq "$(used 1)" 0 "memory back at the end"

note "no driver and no GHOSTVRAM_SIM: a clear message"
set +e
msg=$(env -u GHOSTVRAM_SIM "$GV_BIN" experiment --nvml-lib "$GV_TMP/none/libnvidia-ml.so.1" 2>&1)
rc=$?
set -e
assert_eq "$rc" 3 "exit without a driver"
grep -q "the experiment needs an NVIDIA GPU, or a simulated host" <<<"$msg" || fail "message: $msg"
set +e
GHOSTVRAM_SIM="$SIM" "$GV_BIN" experiment --workers 99 >/dev/null 2>&1; assert_eq $? 2 "bad --workers"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" experiment --gpu 5 >/dev/null 2>&1; assert_eq $? 2 "bad --gpu"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" experiment --mib 99999999 >/dev/null 2>&1; assert_eq $? 2 "bad --mib"
set -e
grep -q "Reproduce the ghost on purpose" <<<"$("$GV_BIN" experiment --help)" || fail "help"

note "--reclaim touches only the processes the experiment started, never another job's ghost"
sim_run --gpu 1 --mib 512 --workers 2
FOREIGN_OWNER=$OWNER
FOREIGN=("${WORKERS[@]}")
kill_wait "$FOREIGN_OWNER"
exp_rc --gpu 1 --mib 256 --workers 2 --wait 1s --reclaim --json
for p in "${FOREIGN[@]}"; do is_dead "$p" && fail "experiment --reclaim ended PID $p, another job's worker"; done
own=$(jq -r '[.runs[0].worker_pids[]] | sort | map(tostring) | join(" ")' <<<"$E")
acted=$(jq -r '[.runs[0].after_reclaim.reclaim_actions[].pid] | sort | map(tostring) | join(" ")' <<<"$E")
assert_eq "$acted" "$own" "reclaim acted on the experiment's own workers only"
assert_eq "$(jq -r '.runs[0].after_reclaim.residual_bytes' <<<"$E")" 0 "its own memory back"
assert_eq "$(used 1)" $((512 * MIB)) "the other job's ghost is still there"

kill_wait "${FOREIGN[@]}" # the other job's ghost: gone before the stop cases
for _ in $(seq 100); do [ "$(used 1)" = 0 ] && break; sleep 0.05; done

note "SIGTERM while a run measures: the stop is reported (JSON stopped_by, the run not counted), exit 143, nothing left"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" experiment --gpu 0 --mib 256 --workers 2 --wait 30s --json >"$GV_TMP/stop.json" \
        2>"$GV_TMP/err" &
BG=$!
track "$BG"
for _ in $(seq 300); do [ "$(used 0)" = $((256 * MIB)) ] && break; sleep 0.05; done
sleep 1 # the owner is killed; its workers hold the memory for the whole --wait
T=$(now_ms)
kill -TERM "$BG"
RC=0
wait "$BG" || RC=$?
MS=$(($(now_ms) - T))
assert_eq "$RC" 143 "exit status after SIGTERM"
[ "$MS" -lt 4000 ] || fail "experiment took $MS ms to stop"
E=$(cat "$GV_TMP/stop.json")
assert_eq "$(jq -r .stopped_by <<<"$E")" TERM "stopped_by"
assert_eq "$(jq -r '.runs[0].stopped' <<<"$E")" true "the run is marked stopped"
assert_eq "$(jq -r '.summary.after_kill.run_count' <<<"$E")" 0 "a stopped run is not counted"
for p in $(jq -r '.runs[0].owner_pid, .runs[0].worker_pids[]' <<<"$E"); do is_dead "$p" || fail "PID $p was left running"; done

note "SIGTERM while its reclaim waits for the memory: passed on to reclaim, which reports what it did"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=20000 >/dev/null
GHOSTVRAM_SIM="$SIM" "$GV_BIN" experiment --gpu 1 --mib 512 --workers 2 --wait 4s --reclaim --json \
        >"$GV_TMP/stop.json" 2>"$GV_TMP/err" &
BG=$!
track "$BG"
# this experiment's own reclaim (its child): another test's, in another PID namespace, matches too
RPID=""
for _ in $(seq 600); do RPID=$(pgrep -P "$BG" -f "^ghostvram reclaim --yes --json --gpu 1 " || true); [ -z "$RPID" ] || break; sleep 0.05; done
for _ in $(seq 600); do pgrep -f "gv-simcuda --dir $SIM --gpu 1" >/dev/null || break; sleep 0.05; done
[ -n "$RPID" ] && kill -0 "$RPID" 2>/dev/null || fail "reclaim is not waiting for the memory"
kill -TERM "$BG"
RC=0
wait "$BG" || RC=$?
assert_eq "$RC" 143 "exit status after SIGTERM"
E=$(cat "$GV_TMP/stop.json")
assert_eq "$(jq -r '.runs[0].after_reclaim.reclaim_exit_status' <<<"$E")" 143 "reclaim was stopped too"
assert_eq "$(jq -r '[.runs[0].after_reclaim.reclaim_actions[].result] | join(",")' <<<"$E")" terminated,terminated \
        "what reclaim did"
! kill -0 "$RPID" 2>/dev/null || fail "reclaim still runs"
set +e
GHOSTVRAM_SIM="$SIM" timeout 30 "$GV_BIN" experiment --gpu 0 --mib 64 --workers 1 --wait 20s >"$GV_TMP/stop.txt" 2>&1 &
BG=$!
set -e
track "$BG"
sleep 1.5
kill -HUP "$BG"
RC=0
wait "$BG" || RC=$?
assert_eq "$RC" 129 "exit status after SIGHUP (text)"
grep -q "^Stopped by SIGHUP during a run (not counted): 0 of 1 run done; every process the experiment started was stopped.$" \
        "$GV_TMP/stop.txt" || fail "the text: $(cat "$GV_TMP/stop.txt")"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=0 >/dev/null
echo "PASS"
