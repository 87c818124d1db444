#!/usr/bin/env bash
# xid --follow listens to NVML critical-error events beside the kernel log, says which source
# each event came from, and stops cleanly on SIGTERM; a hung driver does not stop the kernel side.
. "$(dirname "$0")/lib.sh"

sim_new --gpus 2
: > "$SIM/kmsg"
OUT="$GV_TMP/follow.json"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid --follow --json > "$OUT" 2>"$GV_TMP/err" &
F=$!
track "$F"
sleep 1
"$GV_BIN" sim set "$SIM" xid_event=1:79 >/dev/null
printf '3,10,5000000,-;NVRM: Xid (PCI:0000:1b:00): 31, pid=4242, name=python, Ch 00000008, intr 00000000. MMU Fault\n' >> "$SIM/kmsg"
for _ in $(seq 100); do [ "$(grep -c . "$OUT")" -ge 2 ] && break; sleep 0.1; done
kill -TERM "$F"
wait "$F"
rc=$?
assert_eq "$rc" 0 "clean stop on SIGTERM"
assert_eq "$(jq -r 'select(.kernel_event.source == "nvml") | "\(.kernel_event.xid) \(.kernel_event.gpu_index) \(.kernel_event.pci_bus_id)"' "$OUT")" "79 1 0000:43:00.0" "NVML event"
assert_eq "$(jq -r 'select(.kernel_event.source != "nvml") | "\(.kernel_event.xid) \(.kernel_event.gpu_index) \(.kernel_event.pid)"' "$OUT")" "31 0 4242" "kernel event"

note "a driver that hangs: the kernel log is still followed"
"$GV_BIN" sim set "$SIM" hang=any >/dev/null
: > "$OUT"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid --follow --json --call-timeout 1s > "$OUT" 2>"$GV_TMP/err" &
F=$!
track "$F"
sleep 0.5
printf '3,11,6000000,-;NVRM: Xid (PCI:0000:1b:00): 13, pid=77, name=x, Graphics Exception\n' >> "$SIM/kmsg"
for _ in $(seq 100); do [ "$(grep -c . "$OUT")" -ge 1 ] && break; sleep 0.1; done
kill -TERM "$F"
wait "$F" || true
assert_eq "$(jq -r '.kernel_event.xid' "$OUT" | tail -1)" 13 "kernel event despite a hung driver"
echo "PASS"
