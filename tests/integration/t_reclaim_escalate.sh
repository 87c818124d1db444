#!/usr/bin/env bash
# The escalations refuse, with the reason and what would make them safe: --reset-gpu while a
# process holds the GPU, with persistence mode on, on a MIG GPU without --force, after an Xid 79,
# and always on a simulated host (nothing real is ever run); --reload-uvm on a simulated host,
# while CUDA processes hold nvidia-uvm, without --force.
. "$(dirname "$0")/lib.sh"

esc_rc() { set +e; R=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 0 --json "$@"); RC=$?; set -e; }
reasons() { jq -r '.escalation.reasons[]' <<<"$R"; }
fixes() { jq -r '.escalation.fixes[]' <<<"$R"; }
has_reason() { grep -q -- "$1" <<<"$(reasons)" || fail "no reason matching '$1' in: $(jq -c .escalation.reasons <<<"$R")"; }
no_reason() { grep -q -- "$1" <<<"$(reasons)" && fail "unexpected reason '$1'"; return 0; }

sim_new --gpus 2 --memory 16384 --reserved 512
BUS1=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json | jq -r '.gpus[1].pci_bus_id')

note "--reset-gpu: a live job holds the GPU, persistence mode is on (the simulator's default)"
# it sees GPU 1 only: CUDA opens the node of every visible GPU
CUDA_VISIBLE_DEVICES=1 sim_run --gpu 0 --mib 1024 --workers 1
JOB=("$OWNER" "${WORKERS[@]}")
esc_rc --reset-gpu --gpu 1 --yes
assert_eq "$RC" 3 "refused"
assert_eq "$(jq -r .mode <<<"$R")" reset-gpu "mode"
assert_eq "$(jq -r .escalation.refused <<<"$R")" true "refused flag"
assert_eq "$(jq -r .escalation.ran <<<"$R")" false "nothing ran"
has_reason "PID $OWNER (gv-simcuda) holds /dev/nvidia1"
has_reason "PID ${WORKERS[0]} (gv-simcuda) holds /dev/nvidia1"
has_reason "persistence mode is on for GPU 1"
grep -q "nvidia-smi -pm 0 -i $BUS1" <<<"$(fixes)" || fail "persistence fix: $(jq -c .escalation.fixes <<<"$R")"
grep -q "systemctl stop nvidia-persistenced" <<<"$(fixes)" || fail "persistenced fix"
# a live job's process: reclaim --pid refuses it without --force (exit 3), so the advice says
# --force, and its dry form is accepted
fix=$(grep -o "\`ghostvram reclaim --pid $OWNER [^\`]*\`" <<<"$(fixes)" | tr -d '\`') || fail "how to end the holder: $(fixes)"
assert_eq "$fix" "ghostvram reclaim --pid $OWNER --force --yes" "the advised command"
set +e
GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 0 --pid "$OWNER" >/dev/null 2>&1
assert_eq $? 3 "without --force reclaim refuses the live owner"
fix_dry=${fix% --yes}
dry=$(GHOSTVRAM_SIM="$SIM" ${fix_dry/ghostvram/$GV_BIN} --confirm 0 --json </dev/null 2>&1)
rc=$?
set -e
assert_eq "$rc" 0 "the advised command, dry: accepted"
assert_eq "$(jq -r '[.plan.targets[].pid] | join(" ")' <<<"$dry")" "$OWNER" "it would end the owner"
assert_eq "$(jq -r .escalation.command <<<"$R")" "nvidia-smi --gpu-reset -i $BUS1" "the command it would run"
grep -q "NVLink peers" <<<"$(jq -r '.escalation.warnings[]' <<<"$R")" && fail "H100 (simulated) needs no NVLink warning"
for p in "${JOB[@]}"; do is_dead "$p" && fail "a refused reset touched $p"; done

note "GPU 0 is not held: only persistence mode, then MIG without --force"
esc_rc --reset-gpu --gpu 0 --yes
assert_eq "$RC" 3 "refused"
no_reason "holds /dev/nvidia0"
has_reason "persistence mode is on for GPU 0"
"$GV_BIN" sim set "$SIM" persistence=0:off mig=0:on >/dev/null
esc_rc --reset-gpu --gpu 0 --yes
assert_eq "$RC" 3 "MIG refused"
has_reason "MIG is enabled on GPU 0: a reset destroys every GPU and compute instance, other tenants' too"
no_reason "persistence"
note "--force on MIG: every check passes, and the simulated host still runs nothing"
esc_rc --reset-gpu --gpu 0 --force --yes
assert_eq "$RC" 3 "simulated host"
has_reason "simulated host: \`nvidia-smi --gpu-reset -i"
no_reason "MIG"
grep -q "destroys every GPU and compute instance" <<<"$(jq -r '.escalation.warnings[]' <<<"$R")" || fail "MIG warning"
note "dry run of the same: the checks and the refusal, without --yes"
esc_rc --reset-gpu --gpu 0 --force
assert_eq "$RC" 3 "dry run refused as well"
assert_eq "$(jq -r .dry_run <<<"$R")" true "dry run"

note "after an Xid 79 for the GPU a reboot is needed, not a reset"
"$GV_BIN" sim set "$SIM" mig=0:off >/dev/null
BUS0=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json | jq -r '.gpus[0].pci_bus_id')
printf '%s\n%s\n' \
        '6,100,4000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  560.35.03  Release Build  (dvs-builder@U16)  Thu Aug 22 00:00:00 UTC 2024' \
        "3,200,90000000,-;NVRM: Xid (PCI:${BUS0%.*}): 79, pid=0, name=, GPU has fallen off the bus." >"$SIM/kmsg"
esc_rc --reset-gpu --gpu 0 --yes
assert_eq "$RC" 3 "refused after Xid 79"
has_reason "GPU 0 had an Xid 79 since the driver loaded: a reset does not bring back a GPU that fell off the bus"
grep -q "reboot" <<<"$(fixes)" || fail "reboot advice"
rm -f "$SIM/kmsg"

note "--reload-uvm: simulated host, holders of nvidia-uvm, no --force"
esc_rc --reload-uvm --yes
assert_eq "$RC" 3 "refused"
assert_eq "$(jq -r .mode <<<"$R")" reload-uvm "mode"
has_reason "simulated host: there is no nvidia_uvm module to reload"
has_reason "PID $OWNER (gv-simcuda) holds nvidia-uvm"
has_reason "--force is required"
grep -q "major number may change" <<<"$(jq -r '.escalation.warnings[]' <<<"$R")" || fail "major number warning"
kill_wait "${JOB[@]}"
esc_rc --reload-uvm --force --yes
assert_eq "$RC" 3 "still refused on a simulated host"
no_reason "holds nvidia-uvm"
no_reason "--force is required"
has_reason "simulated host"

note "text"
set +e
text=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 0 --reset-gpu --gpu 1 2>&1)
set -e
grep -q "reset-gpu refused:" <<<"$text" || fail "text headline: $text"
grep -q "✗ persistence mode is on for GPU 1" <<<"$text" || fail "text reason"
grep -q "→ turn it off: \`nvidia-smi -pm 0" <<<"$text" || fail "text fix"
echo "PASS"
