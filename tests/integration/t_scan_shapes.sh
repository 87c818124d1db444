#!/usr/bin/env bash
# The diagnosis on the process shapes of real jobs (sim run --worker-setsid, --launcher,
# --launcher-exits), a driver that hides dead owners beside a live job, a PID reused by GPU
# processes, and memory still being freed. For each: the verdict, every part of the ledger in
# MiB, the attributed PIDs and reclaim's planned targets (dry run). Rules: docs/verdicts.md.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scan_lib.sh"
need_unshare
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
link_of() { jq -r ".gpus[] | select(.index == $1) | .processes[] | select(.pid == $2) | .attribution.link" <<<"$S"; }
skipped_rule() { jq -r ".plan.skipped[] | select(.pid == $1) | .rule" <<<"$R"; }

sim_new --gpus 2 --memory 16384 --reserved 512

note "1. a worker in its own session (setsid after the fork); the owner killed"
sim_run --gpu 1 --mib 1024 --workers 2 --worker-setsid --busy
kill_wait "$OWNER"
scan_rc
assert_eq "$RC" 1 "exit with the ghost"
assert_eq "$(verdict 1)" orphaned-holders "verdict"
assert_eq "$(ledger 1)" "0 0 1024 0" "ledger"
assert_eq "$(attributed 1)" "$(sorted "${WORKERS[@]}")" "the setsid workers are named"
assert_eq "$(link_of 1 "${WORKERS[0]}")" elimination "their link: the only family no link explains"
assert_eq "$(confidence 1)" medium "weaker than a group or session link"
finding_text 1 | grep -q "nothing here holds" && fail "never 'nothing here holds the GPU' with holders in sight"
w_csv=$(sorted "${WORKERS[@]}" | tr ' ' ',')
next_step 1 | grep -qF "reclaim --gpu 1 --pid $w_csv" || fail "next step names reclaim --pid: $(next_step 1)"
finding_text 1 | grep -q "Xid 45" || fail "the driver's Xid 45 for the killed owner is evidence"
assert_eq "$(verdict 0)" ok "GPU 0"
sums
plan_rc
assert_eq "$(targets)" "" "not default targets"
for w in "${WORKERS[@]}"; do assert_eq "$(skipped_rule "$w")" unproven "skipped: elimination is no proof"; done
plan_rc --pid "$w_csv"
assert_eq "$(targets)" "$(sorted "${WORKERS[@]}")" "named with --pid they are the plan"
kill_wait "${WORKERS[@]}"

note "2. the owner was a launcher's child; the launcher alive, then killed too"
sim_run --gpu 0 --mib 2048 --workers 2 --launcher
# a launcher that outlives its child (an elastic agent, a script that goes on): the simulated one
# exits with its child like a shell script, so it is stopped here and cannot
kill -STOP "$LAUNCHER"
kill_wait "$OWNER"
scan_rc
assert_eq "$(verdict 0)" orphaned-holders "verdict with the launcher alive"
assert_eq "$(ledger 0)" "0 0 2048 0" "ledger"
assert_eq "$(attributed 0)" "$(sorted "${WORKERS[@]}")" "the workers are named"
[ "$(jq -r "[.gpus[0].processes[] | select(.pid == $LAUNCHER)] | length" <<<"$S")" = 0 ] || fail "the launcher holds nothing"
assert_eq "$(confidence 0)" medium "by elimination; the launcher (their group leader) is alive"
plan_rc
assert_eq "$(targets)" "" "no default target while the launcher lives"
kill -9 "$LAUNCHER"
kill -CONT "$LAUNCHER" 2>/dev/null || true
kill_wait "$LAUNCHER"
scan_rc
assert_eq "$(verdict 0)" orphaned-holders "verdict with the launcher killed"
assert_eq "$(attributed 0)" "$(sorted "${WORKERS[@]}")" "the workers, again"
assert_eq "$(confidence 0)" medium "their group's leader is gone"
next_step 0 | grep -qF "reclaim --gpu 0\`" || fail "default targets now: $(next_step 0)"
plan_rc
assert_eq "$(targets)" "$(sorted "${WORKERS[@]}")" "reclaim's targets"
sums
kill_wait "${WORKERS[@]}"

note "5. a driver hiding dead owners: a live job whose wrapper exited, a ghost beside it, and another GPU's ghost"
"$GV_BIN" sim set "$SIM" hidden_owner=on >/dev/null
sim_run --gpu 0 --mib 1024 --workers 2 --launcher-exits
LIVE=("$OWNER" "${WORKERS[@]}")
CUDA_VISIBLE_DEVICES=0 sim_run --gpu 0 --mib 512 --workers 1
kill_wait "$OWNER"
DEAD0=("${WORKERS[@]}")
CUDA_VISIBLE_DEVICES=1 sim_run --gpu 0 --mib 1536 --workers 2
kill_wait "$OWNER"
DEAD1=("${WORKERS[@]}")
scan_rc
assert_eq "$RC" 1 "exit"
assert_eq "$(verdict 0)" orphaned-holders "a ghost beside a live job is a ghost"
assert_eq "$(ledger 0)" "1024 0 512 0" "GPU 0 ledger"
assert_eq "$(attributed 0)" "$(sorted "${DEAD0[@]}")" "GPU 0: only the dead job's worker"
assert_eq "$(verdict 1)" orphaned-holders "GPU 1"
assert_eq "$(ledger 1)" "0 0 1536 0" "GPU 1 ledger"
assert_eq "$(attributed 1)" "$(sorted "${DEAD1[@]}")" "GPU 1: only its own dead job's workers"
for p in "${LIVE[@]}"; do
        [ "$(jq -r "[.gpus[].processes[] | select(.pid == $p and .attribution != null)] | length" <<<"$S")" = 0 ] ||
                fail "PID $p of the live job must never be an orphan"
done
sums
plan_rc
assert_eq "$(targets)" "$(sorted "${DEAD0[@]}" "${DEAD1[@]}")" "reclaim: the dead jobs' workers, each under its own GPU"
for p in "${DEAD1[@]}"; do assert_eq "$(jq -r ".plan.targets[] | select(.pid == $p) | .gpu_index" <<<"$R")" 1 "GPU of $p"; done
kill_wait "${DEAD0[@]}" "${DEAD1[@]}" "${LIVE[@]}"
"$GV_BIN" sim set "$SIM" hidden_owner=off >/dev/null

note "10. memory still being freed after a kill: freeing, exit 0, no reset advice"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=4000 >/dev/null
sim_run --gpu 1 --mib 2048
kill_wait "$OWNER"
scan_rc
assert_eq "$RC" 0 "a teardown is not a confirmed ghost"
assert_eq "$(verdict 1)" freeing "verdict during the teardown"
assert_eq "$(jq -r '.gpus[1].ghost_confirmed' <<<"$S")" false "not confirmed"
# one figure, one meaning: the bytes are freeing, never ghost (the equation sums with them)
sums
assert_eq "$(jq '.gpus[1].memory | .ghost_bytes == 0 and .unattributed_bytes == 0 and .freeing_bytes == .used_bytes and .used_bytes > 0' <<<"$S")" true "the teardown's bytes are freeing_bytes"
assert_eq "$(jq '.gpus[1].findings[0].bytes == .gpus[1].memory.freeing_bytes' <<<"$S")" true "the finding's bytes are the freeing part"
for c in $(jq -r '.gpus[1].findings[].code' <<<"$S"); do
        case "$c" in driver-leak | stale-owner | unknown) fail "no $c during a teardown" ;; esac
done
jq -r '.gpus[1].findings[].next_step' <<<"$S" | grep -q "reset" && fail "never reset advice during a teardown"
assert_eq "$(attributed 1)" "" "nobody attributed"
plan_rc
assert_eq "$(targets)" "" "nothing to reclaim"
for i in $(seq 120); do [ "$(used 1)" = 0 ] && break; sleep 0.1; done
scan_rc
assert_eq "$(verdict 1)" ok "after the teardown"
assert_eq "$(ledger 1)" "0 0 0 0" "ledger after the teardown"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=0 >/dev/null

note "9. the dead owner's PID taken by a monitor, then by a CUDA job on GPU 0"
# A PID that leads a process group or session stays allocated while the group lives, so only an
# owner that led neither can be reused while its workers live: a wrapper's child. Reusing a PID
# on purpose needs a PID namespace of our own and its ns_last_pid.
cat >"$GV_TMP/reuse.sh" <<'EOF'
set -euo pipefail
q() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" "$@"; }
out=$(q sim run "$SIM" --gpu 1 --mib 1024 --workers 2 --launcher-exits)
owner=$(awk '/^owner/ {print $2}' <<<"$out")
workers=$(awk '/^worker/ {print $2}' <<<"$out" | sort -n | tr '\n' ' ' | sed 's/ $//')
kill -9 "$owner"
while [ -e "/proc/$owner" ]; do sleep 0.01; done
echo $((owner - 1)) >/proc/sys/kernel/ns_last_pid
bash -c "exec 3<'$SIM/dev/nvidiactl' 4<'$SIM/dev/nvidia1'; exec -a nvidia-smi sleep 600" &
mon=$!
# until it runs as nvidia-smi (its descriptors opened before the exec)
for i in $(seq 3000); do [ "$(tr '\0' ' ' <"/proc/$mon/cmdline" 2>/dev/null)" = "nvidia-smi 600 " ] && break; sleep 0.01; done
[ "$mon" = "$owner" ] || { echo "noreuse monitor got $mon, not $owner"; exit 0; }
set +e; s1=$(q scan --json --confirm 300ms); r1=$(q reclaim --json --confirm 300ms); set -e
kill -9 "$mon"; while [ -e "/proc/$mon" ]; do sleep 0.01; done
# sim run forks before the owner (its own process) and after it (the teardown watcher): aim at
# the owner's number from a few PIDs below until the owner gets it
for k in 1 2 3 4 5 6 7 8; do
        echo $((owner - k)) >/proc/sys/kernel/ns_last_pid
        CUDA_VISIBLE_DEVICES=0 q sim run "$SIM" --gpu 0 --mib 512 >"$GV_TMP/job2" </dev/null
        job=$(awk '/^owner/ {print $2}' "$GV_TMP/job2")
        [ "$job" = "$owner" ] && break
        kill -9 -- "-$job"; while [ -e "/proc/$job" ]; do sleep 0.01; done
        while [ "$(GHOSTVRAM_SIM="$SIM" "$GV_QUERY" | jq '.gpus[0].memory.used')" != 0 ]; do sleep 0.05; done
done
[ "$job" = "$owner" ] || { echo "noreuse job got $job, not $owner"; exit 0; }
set +e; s2=$(q scan --json --confirm 300ms); r2=$(q reclaim --json --confirm 300ms); set -e
kill -9 -- "-$job" $workers 2>/dev/null || true
jq -nc --arg owner "$owner" --arg workers "$workers" --argjson s1 "$s1" --argjson r1 "$r1" --argjson s2 "$s2" --argjson r2 "$r2" \
        '{owner: $owner, workers: $workers, s1: $s1, r1: $r1, s2: $s2, r2: $r2}'
EOF
out=$(GV_BIN="$GV_BIN" GV_QUERY="$GV_QUERY" SIM="$SIM" GV_TMP="$GV_TMP" unshare --pid --fork --mount-proc bash "$GV_TMP/reuse.sh")
grep -q '^noreuse' <<<"$out" && fail "could not reuse the PID on purpose: $out"
REUSED=$(jq -r .owner <<<"$out")
RW=$(jq -r .workers <<<"$out")
S=$(jq -c .s1 <<<"$out"); R=$(jq -c .r1 <<<"$out")
assert_eq "$(verdict 1)" orphaned-holders "reused by a monitor: the ghost stays"
assert_eq "$(ledger 1)" "0 0 1024 0" "ledger with the monitor"
assert_eq "$(attributed 1)" "$RW" "the workers, not the monitor"
jq -r ".gpus[1].processes[] | select(.pid == $REUSED and .nvml_listed) | .owner_status" <<<"$S" | grep -q "no nvidia-uvm" ||
        fail "the listed PID is a reused one: $(jq -c '.gpus[1].nvml_processes' <<<"$S")"
assert_eq "$(targets)" "$RW" "reclaim: the workers, never the monitor"
S=$(jq -c .s2 <<<"$out"); R=$(jq -c .r2 <<<"$out")
assert_eq "$(verdict 0)" ok "the new job on GPU 0"
assert_eq "$(ledger 0)" "512 0 0 0" "GPU 0 ledger"
assert_eq "$(verdict 1)" orphaned-holders "reused by a CUDA job of GPU 0: the ghost stays"
assert_eq "$(ledger 1)" "0 0 1024 0" "GPU 1 ledger with the new job"
assert_eq "$(attributed 1)" "$RW" "the workers"
jq -r ".gpus[1].processes[] | select(.pid == $REUSED and .nvml_listed) | .owner_status" <<<"$S" | grep -q "holds no /dev/nvidia1" ||
        fail "the listed PID is a CUDA process of another GPU"
[ "$(jq -r "[.plan.targets[].pid] | index($REUSED)" <<<"$R")" = null ] || fail "the new job is never a target"
assert_eq "$(targets)" "$RW" "reclaim: the workers"

echo "PASS"
