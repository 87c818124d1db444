#!/usr/bin/env bash
# scan on the simulated driver with real processes: the ledger, the verdicts and who is
# attributed, for the scenarios of docs/verdicts.md.
. "$(dirname "$0")/lib.sh"

scan() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms "$@"; }
# scan, keeping the exit status in RC
scan_rc() { set +e; S=$(scan "$@"); RC=$?; set -e; }
verdict() { jq -r ".gpus[] | select(.index == $1) | .verdict" <<<"$S"; }
mem() { jq -r ".gpus[] | select(.index == $1) | .memory.$2" <<<"$S"; }
attributed() { jq -r "[.gpus[] | select(.index == $1) | .processes[] | select(.attribution != null) | .pid] | sort | map(tostring) | join(\" \")" <<<"$S"; }
link() { jq -r ".gpus[] | select(.index == $1) | .processes[] | select(.pid == $2) | .attribution.link" <<<"$S"; }
sorted() { printf '%s\n' "$@" | sort -n | tr '\n' ' ' | sed 's/ $//'; }
sums() { # the five parts add up to used on every inspected GPU
        assert_eq "$(jq -r '[.gpus[] | select(.memory.ghost_bytes != null) | (.memory.used_bytes - .memory.listed_bytes - .memory.foreign_bytes - .memory.ghost_bytes - .memory.unattributed_bytes - .memory.freeing_bytes)] | map(select(. != 0)) | length' <<<"$S")" 0 "ledger sums"
}

note "killed owner with workers holding: orphaned-holders, ghost = job size, workers attributed"
sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 1 --mib 1024 --workers 2
scan_rc
assert_eq "$RC" 0 "exit while the job is healthy"
assert_eq "$(verdict 1)" ok "healthy job"
assert_eq "$(mem 1 listed_bytes)" $((1024 * MIB)) "listed while alive"
kill_wait "$OWNER"
scan_rc
assert_eq "$RC" 1 "exit status with a confirmed ghost"
assert_eq "$(verdict 1)" orphaned-holders "verdict"
assert_eq "$(mem 1 ghost_bytes)" $((1024 * MIB)) "ghost bytes"
assert_eq "$(mem 1 listed_bytes)" 0 "listed bytes"
assert_eq "$(attributed 1)" "$(sorted "${WORKERS[@]}")" "attributed"
assert_eq "$(link 1 "${WORKERS[0]}")" process-group "link"
assert_eq "$(verdict 0)" ok "GPU 0 untouched"
assert_eq "$(jq -r '.gpus[1].findings[0].confidence' <<<"$S")" high "confidence"
grep -q "ghostvram reclaim --gpu 1" <<<"$(jq -r '.gpus[1].findings[0].next_step' <<<"$S")" || fail "next step"
sums
text=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --confirm 300ms || true)
grep -q "worker of dead PID $OWNER, same process group" <<<"$text" || fail "text names the link"
grep -q "orphaned-holders" <<<"$text" || fail "text headline"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --confirm 300ms --gpu 0 >/dev/null || fail "--gpu 0 alone has no ghost (exit 0)"
kill_wait "${WORKERS[@]}"
scan_rc
assert_eq "$RC" 0 "exit once the workers are gone"
assert_eq "$(mem 1 used_bytes)" 0 "memory back"

note "the same with the driver hiding dead owners: attributed through the gone group leader"
"$GV_BIN" sim set "$SIM" hidden_owner=on >/dev/null
sim_run --gpu 1 --mib 1024 --workers 2
kill_wait "$OWNER"
scan_rc
assert_eq "$(jq -r '.gpus[1].nvml_processes | length' <<<"$S")" 0 "nothing listed"
assert_eq "$(verdict 1)" orphaned-holders "hidden-owner verdict"
assert_eq "$(mem 1 ghost_bytes)" $((1024 * MIB)) "hidden-owner ghost"
assert_eq "$(attributed 1)" "$(sorted "${WORKERS[@]}")" "hidden-owner attributed"
assert_eq "$(link 1 "${WORKERS[0]}")" leader-gone "hidden-owner link"
kill_wait "${WORKERS[@]}"
"$GV_BIN" sim set "$SIM" hidden_owner=off >/dev/null

note "host-PID mode, and workers that closed their descriptors but kept the mappings"
"$GV_BIN" sim set "$SIM" pid_mode=host >/dev/null
sim_run --gpu 0 --mib 2048 --workers 2 --close-fds-in-workers
kill_wait "$OWNER"
scan_rc
assert_eq "$(verdict 0)" orphaned-holders "host-PID verdict"
assert_eq "$(mem 0 ghost_bytes)" $((2048 * MIB)) "host-PID ghost"
assert_eq "$(attributed 0)" "$(sorted "${WORKERS[@]}")" "mapping-only workers attributed"
kill_wait "${WORKERS[@]}"
"$GV_BIN" sim set "$SIM" pid_mode=auto >/dev/null

note "a healthy job on GPU 0 and an NVML-only monitor while GPU 1 has a ghost"
sim_run --gpu 0 --mib 1024 --workers 2
HEALTHY=("$OWNER" "${WORKERS[@]}")
sim_run --gpu 1 --mib 1536 --workers 1
DEADJOB=$OWNER
GHOSTW=("${WORKERS[@]}")
# a monitor: nvidiactl and a GPU node open, no nvidia-uvm, not listed by NVML
bash -c "exec 3<'$SIM/dev/nvidiactl' 4<'$SIM/dev/nvidia1'; exec sleep 600" &
MON=$!
track "$MON"
wait_holder "$MON" sleep
kill_wait "$DEADJOB"
scan_rc
assert_eq "$(verdict 0)" ok "healthy GPU 0"
assert_eq "$(mem 0 listed_bytes)" $((1024 * MIB)) "GPU 0 listed"
assert_eq "$(attributed 0)" "" "nothing attributed on GPU 0"
assert_eq "$(verdict 1)" orphaned-holders "GPU 1 ghost"
assert_eq "$(attributed 1)" "$(sorted "${GHOSTW[@]}")" "only the dead job's worker"
jq -e ".holders[] | select(.pid == $MON)" <<<"$S" >/dev/null || fail "the monitor is shown as a holder"
for p in "${HEALTHY[@]}" "$MON"; do
        [ "$(jq -r "[.gpus[].processes[] | select(.pid == $p and .attribution != null)] | length" <<<"$S")" = 0 ] ||
                fail "PID $p must not be attributed"
done
kill_wait "${GHOSTW[@]}" "$MON" "${HEALTHY[@]}"

note "memory no process is charged for, with a live owner: unattributed-live, exit 0"
"$GV_BIN" sim set "$SIM" uncharged_mib=1:512 >/dev/null
sim_run --gpu 1 --mib 1024
scan_rc
assert_eq "$RC" 0 "exit with uncharged memory"
assert_eq "$(verdict 1)" unattributed-live "uncharged verdict"
assert_eq "$(mem 1 unattributed_bytes)" $((512 * MIB)) "unattributed bytes"
assert_eq "$(mem 1 ghost_bytes)" 0 "no ghost"
kill_wait "$OWNER"
"$GV_BIN" sim set "$SIM" uncharged_mib=default >/dev/null

note "teardown with a free delay: no ghost once the memory returns within the confirmation"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=1500 >/dev/null
sim_run --gpu 0 --mib 1024
kill_wait "$OWNER"
set +e
S=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 2500ms)
RC=$?
set -e
assert_eq "$RC" 0 "no ghost after the delayed free"
assert_eq "$(verdict 0)" ok "verdict after the delayed free"
assert_eq "$(mem 0 used_bytes)" 0 "memory returned"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=0 >/dev/null

note "GPU lost on one of two GPUs; a legacy driver's idle GPU is reserved-only"
"$GV_BIN" sim set "$SIM" gpu_lost=1:on driver=440.33.01 >/dev/null
scan_rc
assert_eq "$(verdict 1)" gpu-lost "lost GPU"
assert_eq "$(verdict 0)" reserved-only "v1 idle GPU"
assert_eq "$(mem 0 used_bytes)" $((512 * MIB)) "v1 used is the reservation"
assert_eq "$RC" 3 "exit when a GPU could not be inspected"
"$GV_BIN" sim set "$SIM" gpu_lost=default driver=default >/dev/null

note "a confirmed ghost on GPU 0 does not hide a lost GPU 1: the worse wins (3)"
sim_run --gpu 0 --mib 1024 --workers 1
kill_wait "$OWNER"
"$GV_BIN" sim set "$SIM" gpu_lost=1:on >/dev/null
scan_rc
assert_eq "$(verdict 0)" orphaned-holders "the ghost is still reported"
assert_eq "$(verdict 1)" gpu-lost "the lost GPU"
assert_eq "$RC" 3 "exit with a ghost and a lost GPU"
assert_eq "$(jq -r .exit_status <<<"$S")" 3 "exit_status in the JSON"
"$GV_BIN" sim set "$SIM" gpu_lost=default >/dev/null
kill_wait "${WORKERS[@]}"

note "usage errors"
set +e
GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --gpu 7 >/dev/null 2>&1; assert_eq $? 2 "--gpu beyond the GPUs"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --confirm soon >/dev/null 2>&1; assert_eq $? 2 "bad duration"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --bogus >/dev/null 2>&1; assert_eq $? 2 "unknown option"
set -e
echo "PASS"
