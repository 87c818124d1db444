#!/usr/bin/env bash
# nvidia-drm's "NVIDIA-GPU <pci>: DRM: Failed to reclaim vram for pid N" is a kernel event: xid
# lists it (kind drm, the GPU, the pid), and scan takes it as evidence when the pid is the dead
# owner of a ghost on that GPU.
. "$(dirname "$0")/lib.sh"
need_tool jq jq

sim_new --gpus 2 --memory 16384 --reserved 512
bus0=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json | jq -r '.gpus[0].pci_bus_id')
LOAD='6,100,4000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  560.35.03  Release Build  (dvs-builder@U16)  Thu Aug 22 00:00:00 UTC 2024'

note "xid: the line from a saved log, tied to its GPU"
printf '[ 5321.004211] NVIDIA-GPU %s: DRM: Failed to reclaim vram for pid 1234\n' "${bus0^^}" >"$GV_TMP/log"
J=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid --json --kmsg "$GV_TMP/log")
assert_eq "$(jq -r '.events | length' <<<"$J")" 1 "one event"
assert_eq "$(jq -r '.events[0].kind' <<<"$J")" drm "kind"
assert_eq "$(jq -r '.events[0].pid' <<<"$J")" 1234 "pid"
assert_eq "$(jq -r '.events[0].pci_bus_id' <<<"$J")" "$bus0" "PCI bus id"
assert_eq "$(jq -r '.events[0].gpu_index' <<<"$J")" null "a saved log is not mapped to this host's GPUs"
assert_eq "$(jq -r '.events[0].severity' <<<"$J")" warning "severity"
assert_eq "$(jq -r '.events[0].message' <<<"$J")" "Failed to reclaim vram for pid 1234" "message"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid --kmsg "$GV_TMP/log" | grep >/dev/null 'Failed to reclaim vram for pid 1234' || fail "text output"

note "xid: the simulated host's own kernel log maps it to GPU 0"
printf '%s\n3,300,95000000,-;NVIDIA-GPU %s: DRM: Failed to reclaim vram for pid 99\n' "$LOAD" "$bus0" >"$SIM/kmsg"
J=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid --json)
assert_eq "$(jq -r '[.events[] | select(.kind == "drm") | "\(.gpu_index):\(.pid)"] | join(",")' <<<"$J")" "0:99" "GPU and pid"

note "xid --gpu by UUID (the common lookup) and by bus id"
uuid0=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json | jq -r '.gpus[0].uuid')
uuid1=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json | jq -r '.gpus[1].uuid')
assert_eq "$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid --json --gpu "$uuid0" | jq '[.events[] | select(.kind == "drm")] | length')" 1 "--gpu UUID of GPU 0"
assert_eq "$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid --json --gpu "$uuid1" | jq '[.events[] | select(.kind == "drm")] | length')" 0 "--gpu UUID of GPU 1"
assert_eq "$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid --json --gpu "$bus0" | jq '[.events[] | select(.kind == "drm")] | length')" 1 "--gpu bus id"
rc=0; GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid --gpu GPU-00000000-0000-0000-0000-000000000000 2>/dev/null || rc=$?
assert_eq "$rc" 2 "an unknown UUID"

note "scan: the dead owner's reclaim failure is evidence for its ghost"
sim_run --gpu 0 --mib 1024 --workers 1
kill_wait "$OWNER"
printf '%s\n3,300,95000000,-;NVIDIA-GPU %s: DRM: Failed to reclaim vram for pid %s\n' "$LOAD" "$bus0" "$OWNER" >"$SIM/kmsg"
set +e; S=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms); set -e
assert_eq "$(jq -r '.gpus[0].verdict' <<<"$S")" orphaned-holders "killed job"
jq -r '.gpus[0].findings[].evidence[]' <<<"$S" | grep -q "kernel: nvidia-drm at .*: Failed to reclaim vram for pid $OWNER (the dead owner PID $OWNER)" ||
        fail "DRM evidence: $(jq -r '.gpus[0].findings[].evidence[]' <<<"$S")"
assert_eq "$(jq -r '[.gpus[0].kernel_events[] | select(.kind == "drm") | .pid] | join(",")' <<<"$S")" "$OWNER" "kernel events of GPU 0"
assert_eq "$(jq -r '[.gpus[1].kernel_events[] | select(.kind == "drm")] | length' <<<"$S")" 0 "none on GPU 1"
echo PASS
