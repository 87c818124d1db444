#!/usr/bin/env bash
# A MIG GPU on the simulated driver with real processes: two GPU instances, a live job in one and
# a killed job whose workers keep its memory in the other. As root: the verdict, every part of
# the ledger in MiB, the attributed PIDs with their instance, the capability nodes they hold, and
# reclaim's planned targets (dry run), and the ledger of each MIG instance. Without root (setpriv): NVML gives a MIG GPU's own process
# list only to a privileged caller, so the GPU is `unknown`, exit 3, no target, never a reset —
# with NO_PERMISSION and with an empty list; with the mig/monitor capability granted the list
# comes back. Rules: docs/verdicts.md (MIG), docs/simulator.md (MIG).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scan_lib.sh"

sim_new --gpus 2 --memory 16384 --reserved 512
"$GV_BIN" sim set "$SIM" mig_instances=0:2 >/dev/null
# (16384 - 512) / 2 = 7936 MiB an instance; capability nodes of GPU 0's instance G: 3 + 9 G, + 1
CAP_GI2=21 CAP_CI2=22

note "a MIG GPU needs an instance; each instance has its own memory"
set +e
out=$("$GV_BIN" sim run "$SIM" --gpu 0 --mib 64 2>&1)
rc=$?
set -e
assert_eq "$rc" 1 "a job on a MIG GPU without an instance fails"
grep -q "MIG mode" <<<"$out" || fail "says why: $out"
set +e
out=$("$GV_BIN" sim run "$SIM" --gpu 0 --mib 8000 --mig-instance 1 2>&1)
rc=$?
set -e
assert_eq "$rc" 1 "8000 MiB does not fit in a 7936 MiB instance"
grep -q "MIG instance 1 has a total capacity of 7936 MiB" <<<"$out" || fail "out of memory in the instance: $out"

sim_run --gpu 0 --mib 1024 --mig-instance 1
LIVE=$OWNER
sim_run --gpu 0 --mib 2048 --mig-instance 2 --workers 2
DEAD=$OWNER DEAD_WORKERS=("${WORKERS[@]}")
sim_run --gpu 1 --mib 512
OTHER=$OWNER
for w in "${DEAD_WORKERS[@]}"; do
        ls -l "/proc/$w/fd" | grep -q "$SIM/dev/nvidia-caps/nvidia-cap$CAP_GI2\$" || fail "worker $w holds GI 2's capability node"
        ls -l "/proc/$w/fd" | grep -q "$SIM/dev/nvidia0\$" || fail "worker $w holds the GPU's own node"
done
kill_wait "$DEAD"

note "root: the dead job's instance is a ghost held by its workers; the live instance is listed"
scan_rc
assert_eq "$RC" 1 "exit: a confirmed ghost"
assert_eq "$(verdict 0)" orphaned-holders "the MIG GPU's verdict"
assert_eq "$(ledger 0)" "1024 0 2048 0" "ledger of the MIG GPU (the sum over its instances)"
assert_eq "$(jq -r '.gpus[0].memory.used_bytes' <<<"$S")" $((3072 * MIB)) "used: both instances"
assert_eq "$(attributed 0)" "$(sorted "${DEAD_WORKERS[@]}")" "the dead job's workers"
# per MIG instance: GI:CI total used listed foreign ghost unattributed, in MiB
mig_ledger() {
        jq -r ".gpus[] | select(.index == $1) | .mig_instances | map([.gpu_instance, .compute_instance, .total_bytes, .used_bytes,
               .listed_bytes, .foreign_bytes, .ghost_bytes, .unattributed_bytes]
               | map(if . == null then \"null\" elif . > 1000 then (. / 1048576 | floor | tostring) else tostring end) | join(\" \"))
               | join(\", \")" <<<"$S"
}
assert_eq "$(mig_ledger 0)" "1 0 7936 1024 1024 0 0 0, 2 0 7936 2048 0 0 2048 0" "each instance's ledger"
assert_eq "$(jq -r '.gpus[1].mig_instances | length' <<<"$S")" 0 "no MIG instance on GPU 1"
assert_eq "$(verdict 1)" ok "the GPU without MIG"
assert_eq "$(ledger 1)" "512 0 0 0" "ledger of GPU 1"
assert_eq "$(attributed 1)" "" "the workers hold nvidia1 too (CUDA opens every node), but nothing ties them to GPU 1"
inst() { jq -r ".gpus[0].processes[] | select(.pid == $1) | [.gpu_instance, .compute_instance, .owner_class] | map(tostring) | join(\" \")" <<<"$S"; }
assert_eq "$(inst "$LIVE")" "1 0 live" "the live owner: GPU instance 1, compute instance 0"
assert_eq "$(inst "$DEAD")" "2 0 stale" "the dead owner: GPU instance 2"
for w in "${DEAD_WORKERS[@]}"; do
        assert_eq "$(jq -r ".gpus[0].processes[] | select(.pid == $w) | .devices | map(select(startswith(\"nvidia-caps/\"))) | join(\" \")" <<<"$S")" \
                "nvidia-caps/nvidia-cap$CAP_GI2 nvidia-caps/nvidia-cap$CAP_CI2" "worker $w shows the instance's capability nodes"
done
assert_eq "$(jq -r '.gpus[0].nvml_processes | map("\(.pid):\(.gpu_instance):\(.compute_instance)") | sort | join(" ")' <<<"$S")" \
        "$(sorted "$LIVE:1:0" "$DEAD:2:0" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')" "NVML's records with their instance ids"
sums
text=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --confirm 300ms || true)
grep -q "NVML lists PID $DEAD (2048 MiB, MIG GPU instance 2, compute instance 0)" <<<"$text" || fail "text names the instance: $text"
grep -q "nvidia-caps/nvidia-cap$CAP_GI2(fd)" <<<"$text" || fail "text shows the holder's capability node"
grep -q "MIG GPU instance 2 (compute instance 0, 7936 MiB): used 2048 MiB = listed 0 MiB + foreign 0 MiB + ghost 2048 MiB + unattributed 0 MiB" <<<"$text" ||
        fail "text gives instance 2's ledger: $text"
# a saved bundle gives the same MIG answers back (instance ids, each instance's memory)
LIVE_DOC=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms --save-bundle "$GV_TMP/bundle" || true)
S=$("$GV_BIN" scan --json --from-bundle "$GV_TMP/bundle" || true)
assert_eq "$(mig_ledger 0)" "1 0 7936 1024 1024 0 0 0, 2 0 7936 2048 0 0 2048 0" "each instance's ledger, from the bundle"
assert_eq "$(jq -c '.gpus[0].mig_devices' <<<"$S")" "$(jq -c '.gpus[0].mig_devices' <<<"$LIVE_DOC")" "MIG devices, from the bundle"
assert_eq "$(inst "$DEAD")" "2 0 stale" "the dead owner's instance, from the bundle"
plan_rc
assert_eq "$(targets)" "$(sorted "${DEAD_WORKERS[@]}")" "reclaim's targets"
assert_eq "$(jq -r '[.plan.targets[].gpu_index] | unique | join(",")' <<<"$R")" 0 "targets tied to the MIG GPU"

note "not root: the MIG GPU's own list is NO_PERMISSION: unknown, exit 3, no target, never a reset"
chmod 755 "$GV_TMP" "$SIM"
nobody_copy
GV_BIN_ROOT=$GV_BIN
GV_BIN=$NOBODY_BIN # another user runs a copy (the build tree may be closed to it)
PFX=(setpriv --reuid=65534 --regid=65534 --clear-groups env)
unprivileged() { # WHAT: the assertions every unprivileged view of the MIG GPU must pass
        scan_rc
        assert_eq "$RC" 3 "$1: exit 3"
        assert_eq "$(verdict 0)" unknown "$1: the MIG GPU"
        assert_eq "$(confidence 0)" low "$1: confidence"
        assert_eq "$(ledger 0)" "0 0 0 3072" "$1: nothing listed, nothing called a ghost"
        assert_eq "$(attributed 0)" "" "$1: nobody attributed"
        assert_eq "$(jq -r '.gpus[0].processes_known' <<<"$S")" false "$1: no process list"
        jq -r '.gpus[0].findings[0].summary' <<<"$S" | grep -q "only to a privileged caller" || fail "$1: says why"
        finding_text 0 | grep -q "mig/monitor capability" || fail "$1: names the capability"
        next_step 0 | grep -qF "sudo ghostvram scan --gpu 0" || fail "$1: next step is sudo: $(next_step 0)"
        finding_text 0 | grep -qi "reset" && fail "$1: never reset advice"
        assert_eq "$(mig_ledger 0)" "1 0 7936 1024 0 0 0 1024, 2 0 7936 2048 0 0 0 2048" "$1: each instance's memory still known"
        finding_text 0 | grep -q "MIG GPU instance 2 (compute instance 0): 2048 MiB used of 7936 MiB" || fail "$1: where the memory is"
        assert_eq "$(verdict 1)" ok "$1: GPU 1 is not MIG: its list is given"
        plan_rc
        assert_eq "$(targets)" "" "$1: reclaim has no target"
        for w in "${DEAD_WORKERS[@]}"; do is_dead "$w" && fail "$1: worker $w was ended"; done
        return 0
}
unprivileged NO_PERMISSION
finding_text 0 | grep -q "query compute: Insufficient Permissions" || fail "NO_PERMISSION is quoted"
assert_eq "$(jq -r '[.gpus[0].errors[] | select(.query == "compute") | .nvml_code] | join(",")' <<<"$S")" 4 "compute list: NVML_ERROR_NO_PERMISSION"

note "not root, a driver that gives an empty list instead"
"$GV_BIN" sim set "$SIM" mig_unprivileged=empty >/dev/null
unprivileged "empty list"
finding_text 0 | grep -q "an empty list given to a caller that is not root proves nothing" || fail "the empty list is said untrusted"

note "not root, with the mig/monitor capability granted: the list is given again"
chmod 0444 "$SIM/dev/nvidia-caps/nvidia-cap2"
scan_rc
assert_eq "$(jq -r '.gpus[0].processes_known' <<<"$S")" true "the monitor capability gives the list"
assert_eq "$(jq -r '.gpus[0].nvml_processes | length' <<<"$S")" 2 "both instances' owners"
assert_eq "$(verdict 0)" stale-owner "root's workers are out of this user's sight"
assert_eq "$(confidence 0)" low "not high while resting on not seeing a holder"
assert_eq "$(ledger 0)" "1024 0 2048 0" "the live owner (unreadable, taken as live) listed; the dead PID's bytes the ghost"
next_step 0 | grep -q "gpu-reset" && fail "never a reset on a partial view"
chmod 0400 "$SIM/dev/nvidia-caps/nvidia-cap2"
PFX=(env)
GV_BIN=$GV_BIN_ROOT

note "the workers gone: the instance's memory comes back"
kill_wait "${DEAD_WORKERS[@]}"
for i in $(seq 200); do
        [ "$(used 0)" = $((1024 * MIB)) ] && break
        sleep 0.02
done
scan_rc
assert_eq "$RC" 0 "exit 0"
assert_eq "$(verdict 0)" ok "the MIG GPU after the workers"
assert_eq "$(ledger 0)" "1024 0 0 0" "only the live instance remains"
assert_eq "$(mig_ledger 0)" "1 0 7936 1024 1024 0 0 0, 2 0 7936 0 0 0 0 0" "instance 2 is empty again"
kill_wait "$LIVE" "$OTHER"
echo "PASS"
