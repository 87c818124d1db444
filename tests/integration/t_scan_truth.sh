#!/usr/bin/env bash
# The diagnosis beyond the classic case, on the simulated driver with real processes: for each
# situation the verdict, every part of the ledger in MiB, the attributed PIDs and reclaim's
# planned targets (dry run). The situations with launchers, setsid workers, wrappers and a
# gradual teardown are in t_scan_shapes.sh. Rules: docs/verdicts.md.
. "$(dirname "$0")/lib.sh"
need_unshare
# LeakSanitizer cannot work in a PID namespace that shares our /proc (see t_sim_pidns.sh)
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"

. "$(dirname "$0")/scan_lib.sh"

# A job inside a PID namespace of its own (a container): sets NSINIT (the namespace's init, as
# we number it), NS_OWNER/NS_WORKERS (as the container numbers them) and OWNER/WORKERS (as we
# do). With own_proc the container mounts its own /proc (its owner then records no outer PID).
ns_job() { # GPU MIB WORKERS
        local out="$GV_TMP/ns.$RANDOM"
        unshare --pid --fork --kill-child bash -c '"$0" sim run "$1" --gpu "$2" --mib "$3" --workers "$4" >"$5"; echo done >>"$5"; exec sleep 100000' \
                "$GV_BIN" "$SIM" "$1" "$2" "$3" "$out" &
        local u=$!
        disown "$u"
        track "$u"
        wait_for_line "$out" '^done'
        NSINIT=$(pgrep -P "$u")
        track "$NSINIT"
        NS_OWNER=$(awk '$1 == "owner" {print $2}' "$out")
        mapfile -t NS_WORKERS < <(awk '$1 == "worker" {print $2}' "$out")
        OWNER=$(pid_in_ns_of "$NSINIT" "$NS_OWNER") || fail "owner not found"
        WORKERS=()
        local w
        for w in "${NS_WORKERS[@]}"; do WORKERS+=("$(pid_in_ns_of "$NSINIT" "$w")"); done
        track "$OWNER" "${WORKERS[@]}"
}
# a command prefix that runs inside NSINIT's PID namespace with that namespace's own /proc
in_container() { PFX=(nsenter -t "$NSINIT" --pid -- unshare --mount --mount-proc env); }

sim_new --gpus 2 --memory 16384 --reserved 512
FLOOR=163 # 1 % of 16 GiB, in MiB

note "3. scanned from inside the job's own PID namespace: GPU 1's owner lives outside"
sim_run --gpu 1 --mib 1024 --workers 1
HOSTJOB=("$OWNER" "${WORKERS[@]}")
ns_job 0 2048 2
in_container
scan_rc
assert_eq "$(verdict 0)" ok "the job's own GPU, seen from inside"
assert_eq "$(ledger 0)" "2048 0 0 0" "GPU 0 ledger from inside"
assert_eq "$(verdict 1)" invisible-here "the outside job's GPU"
assert_eq "$(ledger 1)" "0 0 0 1024" "GPU 1 ledger from inside"
assert_eq "$(attributed 1)" "" "never blamed on the job's workers"
sums
kill -9 "$OWNER"
for i in $(seq 200); do is_dead "$OWNER" && break; sleep 0.01; done
scan_rc
assert_eq "$RC" 1 "a confirmed ghost inside"
assert_eq "$(verdict 0)" orphaned-holders "the killed job's GPU, from inside"
assert_eq "$(ledger 0)" "0 0 2048 0" "GPU 0 ledger after the kill"
assert_eq "$(attributed 0)" "$(sorted "${NS_WORKERS[@]}")" "its workers, as the container numbers them"
assert_eq "$(verdict 1)" invisible-here "GPU 1 is still someone else's"
assert_eq "$(attributed 1)" "" "GPU 1: nobody here"
sums
plan_rc
assert_eq "$(targets)" "$(sorted "${NS_WORKERS[@]}")" "reclaim's targets from inside"
assert_eq "$(jq -r '[.plan.targets[].gpu_index] | unique | join(",")' <<<"$R")" 0 "targets tied to GPU 0 only"
PFX=(env)
kill_wait "${WORKERS[@]}" "${HOSTJOB[@]}"

note "4. legacy driver (v1 memory, host PIDs), a job in a PID namespace, owner killed"
"$GV_BIN" sim set "$SIM" driver=440.33.01 >/dev/null
ns_job 1 2048 2
kill_wait "$OWNER"
scan_rc
assert_eq "$RC" 1 "exit with the ghost"
assert_eq "$(verdict 1)" orphaned-holders "verdict seen from outside"
# v1: used = 2048 + the 512 MiB reservation; the ghost is what NVML listed for the dead PID
assert_eq "$(ledger 1)" "0 0 2048 512" "ledger: the reservation stays unattributed"
finding_text 1 | grep -q "likely the driver's reservation" || fail "the remainder is said to be the reservation"
assert_eq "$(attributed 1)" "$(sorted "${WORKERS[@]}")" "the workers"
assert_eq "$(verdict 0)" reserved-only "the idle v1 GPU"
sums
plan_rc
assert_eq "$(targets)" "$(sorted "${WORKERS[@]}")" "reclaim's targets from outside"
assert_eq "$(jq -r '.gpus[] | select(.index == 1) | .ghost_bytes' <<<"$R")" $((2048 * MIB)) "what reclaim sets out to free"
note "   ... and from inside that container"
in_container
scan_rc
assert_eq "$RC" 1 "exit with the ghost, inside"
assert_eq "$(verdict 1)" orphaned-holders "not foreign 'not a leak' inside"
assert_eq "$(ledger 1)" "0 0 2048 512" "ledger inside"
assert_eq "$(attributed 1)" "$(sorted "${NS_WORKERS[@]}")" "the workers, as the container numbers them"
[ "$(jq -r '[.gpus[1].findings[].code] | index("foreign-namespace")' <<<"$S")" = null ] || fail "no foreign finding"
plan_rc
assert_eq "$(targets)" "$(sorted "${NS_WORKERS[@]}")" "reclaim's targets inside"
PFX=(env)
note "   ... reclaim --yes: what it set out to free (the dead PID's 2048 MiB) comes back; the reservation stays"
plan_rc --yes --grace 1s
assert_eq "$PRC" 0 "reclaim's exit: the memory it set out to free came back"
assert_eq "$(jq -r '.gpus[] | select(.index == 1) | .recovered' <<<"$R")" true "recovered on GPU 1"
assert_eq "$(query | jq -r ".gpus[1].memory_v1.used")" $((512 * MIB)) "v1 used after the reclaim: the reservation only"
kill_wait "${WORKERS[@]}"
"$GV_BIN" sim set "$SIM" driver=default >/dev/null

note "6. memory no process is charged for on GPU 0 while GPU 1 has a ghost, or a live job"
"$GV_BIN" sim set "$SIM" uncharged_mib=0:512 >/dev/null
sim_run --gpu 1 --mib 1024 --workers 2
kill_wait "$OWNER"
scan_rc
assert_eq "$(attributed 0)" "" "nobody blamed for GPU 0's uncharged memory"
assert_eq "$(verdict 1)" orphaned-holders "GPU 1"
assert_eq "$(attributed 1)" "$(sorted "${WORKERS[@]}")" "GPU 1's workers"
if [ $INITIAL = yes ]; then
        assert_eq "$(ledger 0)" "0 0 512 0" "GPU 0: no owner at all, a ghost of its own"
else
        assert_eq "$(ledger 0)" "0 0 0 512" "GPU 0 in a namespace: unattributed"
fi
case "$(verdict 0)" in orphaned-holders | daemon-holder) fail "GPU 0 blamed on someone: $(verdict 0)" ;; esac
plan_rc
assert_eq "$(targets)" "$(sorted "${WORKERS[@]}")" "reclaim: only GPU 1's workers"
kill_wait "${WORKERS[@]}"
sim_run --gpu 1 --mib 1024 --workers 2
LIVE=("$OWNER" "${WORKERS[@]}")
scan_rc
assert_eq "$(attributed 0)" "" "a live job's workers hold GPU 0's node too, but are never orphans"
assert_eq "$(verdict 1)" ok "the live job"
assert_eq "$(ledger 1)" "1024 0 0 0" "GPU 1 ledger with the live job"
plan_rc
assert_eq "$(targets)" "" "no target"
kill_wait "${LIVE[@]}"
note "   ... and with a driver that hides dead owners: a job restricted to GPU 1"
"$GV_BIN" sim set "$SIM" hidden_owner=on >/dev/null
CUDA_VISIBLE_DEVICES=1 sim_run --gpu 0 --mib 1024 --workers 2
kill_wait "$OWNER"
scan_rc
assert_eq "$(attributed 0)" "" "GPU 0: its node was never opened by the workers"
assert_eq "$(attributed 1)" "$(sorted "${WORKERS[@]}")" "GPU 1: the workers (leader gone)"
assert_eq "$(verdict 1)" orphaned-holders "GPU 1 verdict"
assert_eq "$(ledger 1)" "0 0 1024 0" "GPU 1 ledger"
plan_rc
assert_eq "$(targets)" "$(sorted "${WORKERS[@]}")" "reclaim: GPU 1's workers only"
kill_wait "${WORKERS[@]}"
"$GV_BIN" sim set "$SIM" hidden_owner=off uncharged_mib=default >/dev/null

note "7. no PCI answer from NVML: the bus id comes from the module's file of GPU 1's UUID; next steps address GPU 1 by it"
"$GV_BIN" sim set "$SIM" notsup=1:pci,memory,memory_v2 >/dev/null
scan_rc
UUID1=$(jq -r '.gpus[1].uuid' <<<"$S")
BUS1=$(grep -lF "$UUID1" "$SIM"/proc/driver/nvidia/gpus/*/information | xargs -n1 dirname | xargs -n1 basename)
assert_eq "$(jq -r '.gpus[1].pci_bus_id' <<<"$S")" "$BUS1" "the bus id of the module's entry with GPU 1's UUID"
jq -r '.gpus[1].status_message' <<<"$S" | grep -q "bus id from /proc/driver/nvidia/gpus (same UUID)" ||
        fail "says where the bus id comes from: $(jq -r '.gpus[1].status_message' <<<"$S")"
assert_eq "$(verdict 1)" unknown "GPU 1 cannot be inspected"
next_step 1 | grep -qF -- "-i $BUS1" || fail "next step names GPU 1 by its bus id: $(next_step 1)"
next_step 1 | grep -qF -- "-i 0\`" && fail "next step must not name GPU 0"
note "   ... and without the module's files (an older simulated host): by UUID"
mv "$SIM/proc" "$SIM/proc.off"
scan_rc
mv "$SIM/proc.off" "$SIM/proc"
[ "$(jq -r '.gpus[1].pci_bus_id' <<<"$S")" = null ] || fail "the PCI bus id is not known"
next_step 1 | grep -qF -- "-i $UUID1\` (by UUID" || fail "next step names GPU 1 by UUID: $(next_step 1)"
next_step 1 | grep -qF -- "-i 0\`" && fail "next step must not name GPU 0"
"$GV_BIN" sim set "$SIM" notsup=default >/dev/null

note "8. a monitoring daemon next to memory no process holds: a reset blocker, not the holder"
"$GV_BIN" sim set "$SIM" uncharged_mib=1:2048 >/dev/null
bash -c "exec 3<'$SIM/dev/nvidiactl' 4<'$SIM/dev/nvidia1'; exec -a dcgm-exporter sleep 600" &
DCGM=$!
track "$DCGM"
wait_holder "$DCGM" dcgm-exporter
scan_rc
case "$(verdict 1)" in daemon-holder | orphaned-holders) fail "the exporter taken for the holder: $(verdict 1)" ;; esac
assert_eq "$(attributed 1)" "" "nobody attributed"
jq -e ".gpus[1].findings[] | select(.pids | index($DCGM))" <<<"$S" >/dev/null && fail "the exporter is named in a finding's PIDs"
if [ $INITIAL = yes ]; then
        assert_eq "$(ledger 1)" "0 0 2048 0" "GPU 1 ledger"
        finding_text 1 | grep -q "PID $DCGM (.*DCGM exporter) holds /dev/nvidia1 but not the ghost" ||
                fail "the exporter is named as what blocks a reset: $(finding_text 1)"
fi
kill_wait "$DCGM"
"$GV_BIN" sim set "$SIM" uncharged_mib=default >/dev/null

note "11. no process list for GPU 1 while a healthy job runs: unknown, exit 3, no target"
"$GV_BIN" sim set "$SIM" notsup=1:processes >/dev/null
sim_run --gpu 1 --mib 1024 --workers 2
scan_rc
assert_eq "$RC" 3 "exit status without a process list"
assert_eq "$(verdict 1)" unknown "verdict"
assert_eq "$(ledger 1)" "0 0 0 1024" "ledger: nothing is a ghost"
finding_text 1 | grep -q "no process list" || fail "the reason is said"
next_step 1 | grep -q "gpu-reset" && fail "never reset advice without a process list"
assert_eq "$(attributed 1)" "" "nobody attributed"
kill_wait "$OWNER"
scan_rc
assert_eq "$RC" 3 "a killed job without a process list: still unknown"
assert_eq "$(verdict 1)" unknown "verdict after the kill"
plan_rc
assert_eq "$(targets)" "" "reclaim has no default target there"
kill_wait "${WORKERS[@]}"
"$GV_BIN" sim set "$SIM" notsup=default hang=1:nvmlDeviceGetComputeRunningProcesses_v3 >/dev/null
sim_run --gpu 1 --mib 1024 --workers 1
set +e
S=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms --call-timeout 1s)
RC=$?
set -e
assert_eq "$RC" 3 "a hung process call: exit 3"
assert_eq "$(verdict 1)" unknown "hung process call: unknown"
next_step 1 | grep -q "gpu-reset" && fail "never reset advice on a hung process call"
kill_wait "$OWNER" "${WORKERS[@]}"
"$GV_BIN" sim set "$SIM" hang=none >/dev/null

note "12. not root: root's orphaned workers are out of sight"
chmod 755 "$GV_TMP" "$SIM"
nobody_copy
sim_run --gpu 1 --mib 1024 --workers 2
kill_wait "$OWNER"
PFX=(setpriv --reuid=65534 --regid=65534 --clear-groups env)
GV_BIN_ROOT=$GV_BIN
GV_BIN=$NOBODY_BIN
scan_rc
GV_BIN=$GV_BIN_ROOT
assert_eq "$RC" 1 "exit: the ghost is confirmed all the same"
assert_eq "$(verdict 1)" stale-owner "verdict without root"
assert_eq "$(confidence 1)" low "never high confidence when resting on not seeing a holder"
assert_eq "$(ledger 1)" "0 0 1024 0" "ledger without root"
jq -r '.gpus[1].findings[0].summary' <<<"$S" | grep -q "no holder is visible to this user" || fail "says: no holder visible to this user"
finding_text 1 | grep -q "nothing here holds" && fail "must not say nothing holds the GPU"
finding_text 1 | grep -q "2 processes in dead PID $OWNER's process group or session cannot be inspected by this user" ||
        fail "the dead owner's group, out of sight, is said: $(finding_text 1)"
next_step 1 | grep -qF "sudo ghostvram scan --gpu 1" || fail "next step: sudo ghostvram scan"
next_step 1 | grep -q "gpu-reset" && fail "never a reset on a partial view"
PFX=(env)
scan_rc
assert_eq "$(verdict 1)" orphaned-holders "as root the workers are seen"
kill_wait "${WORKERS[@]}"

echo "PASS"
