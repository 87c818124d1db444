#!/usr/bin/env bash
# A GPU whose handle is lost (gpu_lost_handle: nvmlDeviceGetHandleByIndex returns GPU_IS_LOST,
# as after Xid 79) can still be named by its PCI bus id or UUID: NVML cannot give them, the
# nvidia module's /proc/driver/nvidia/gpus/<bus id>/information can (the simulated host has
# that tree under DIR/proc). A check configured by bus id goes CRITICAL for it.
. "$(dirname "$0")/lib.sh"

sim_new --gpus 2 --memory 16384 --reserved 512
BUS=0000:43:00.0
UUID=$(awk '$1 == "gpu=1" { for (i = 1; i <= NF; i++) if ($i ~ /^uuid=/) print substr($i, 6) }' "$SIM/gpus")
[ -n "$UUID" ] || fail "no UUID for GPU 1 in $SIM/gpus"

note "the simulated module's file of GPU 1"
info="$SIM/proc/driver/nvidia/gpus/$BUS/information"
[ -f "$info" ] || fail "sim init made no $info"
grep -q "^Bus Location: 	 $BUS$" "$info" || fail "bus location: $(cat "$info")"
grep -q "^GPU UUID: 	 $UUID$" "$info" || fail "UUID: $(cat "$info")"
grep -q "^Device Minor: 	 1$" "$info" || fail "minor: $(cat "$info")"

"$GV_BIN" sim set "$SIM" gpu_lost_handle=1:on
gv() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" "$@"; }

note "check --gpu by index, bus id, short bus id and UUID: CRITICAL lost"
for spec in 1 "$BUS" 43:00.0 "$UUID"; do
        rc=0
        out=$(gv check --gpu "$spec") || rc=$?
        assert_eq "$rc" 2 "check --gpu $spec"
        grep -q "^GHOSTVRAM CRITICAL - GPU 1: lost" <<<"$out" || fail "check --gpu $spec: $out"
done
note "check --gpu 0 still OK"
rc=0
gv check --gpu 0 >/dev/null || rc=$?
assert_eq "$rc" 0 "check --gpu 0"

note "scan --gpu by bus id and UUID: GPU 1, gpu-lost, with its bus id and UUID"
for spec in "$BUS" "$UUID"; do
        rc=0
        gv scan --json --gpu "$spec" >"$GV_TMP/s.json" || rc=$?
        assert_eq "$rc" 3 "scan --gpu $spec (a lost GPU)"
        assert_eq "$(jq -r '[.gpus[].index] | join(" ")' "$GV_TMP/s.json")" 1 "GPUs of scan --gpu $spec"
        assert_eq "$(jq -r '.gpus[0].verdict' "$GV_TMP/s.json")" gpu-lost "verdict of scan --gpu $spec"
        assert_eq "$(jq -r '.gpus[0].pci_bus_id' "$GV_TMP/s.json")" "$BUS" "bus id of scan --gpu $spec"
        assert_eq "$(jq -r '.gpus[0].uuid' "$GV_TMP/s.json")" "$UUID" "UUID of scan --gpu $spec"
done
note "watch and reclaim resolve it too (no 'this host has 2 GPUs')"
out=$(gv watch --count 1 --interval 1s --gpu "$BUS" 2>&1) || true
grep -q "this host has" <<<"$out" && fail "watch --gpu $BUS: $out"
grep -q "GPU 1 gpu-lost" <<<"$out" || fail "watch --gpu $BUS: $out"
out=$(gv reclaim --gpu "$UUID" 2>&1) || true
grep -q "this host has" <<<"$out" && fail "reclaim --gpu $UUID: $out"

note "a GPU that does not exist is still a usage error"
rc=0
gv scan --gpu 0000:99:00.0 >/dev/null 2>&1 || rc=$?
assert_eq "$rc" 2 "scan --gpu of a bus id this host lacks"
rc=0
out=$(gv check --gpu 0000:99:00.0) || rc=$?
assert_eq "$rc" 3 "check --gpu of a bus id this host lacks"

note "without the module's tree (an older simulated host), no name is guessed"
rm -rf "$SIM/proc"
rc=0
out=$(gv check --gpu "$BUS") || rc=$?
assert_eq "$rc" 3 "check --gpu $BUS without /proc/driver/nvidia/gpus"
echo "PASS"
