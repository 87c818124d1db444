#!/usr/bin/env bash
# scan reads the kernel's side: a simulated host's kernel log (DIR/kmsg, raw /dev/kmsg records)
# shapes the findings. Xid 79 after the driver's load with NVML not answering: gpu-lost; the same
# event from before the load: history. Xid 45 naming the dead owner confirms its death.
. "$(dirname "$0")/lib.sh"

scan_rc() { set +e; S=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms "$@"); RC=$?; set -e; }
verdict() { jq -r ".gpus[] | select(.index == $1) | .verdict" <<<"$S"; }
evidence() { jq -r ".gpus[] | select(.index == $1) | .findings[].evidence[]" <<<"$S"; }

sim_new --gpus 2 --memory 16384 --reserved 512
bus1=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json | jq -r '.gpus[1].pci_bus_id')
assert_eq "$bus1" "0000:43:00.0" "GPU 1 bus id"
LOAD='6,100,4000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  560.35.03  Release Build  (dvs-builder@U16)  Thu Aug 22 00:00:00 UTC 2024'
XID79='3,200,90000000,-;NVRM: Xid (PCI:0000:43:00): 79, pid=0, name=, GPU has fallen off the bus.'

note "GPU 1 fell off the bus after the driver loaded and NVML does not answer for it: gpu-lost"
printf '%s\n%s\n' "$LOAD" "$XID79" > "$SIM/kmsg"
"$GV_BIN" sim set "$SIM" hang=1:nvmlDeviceGetMemoryInfo_v2 >/dev/null
scan_rc --call-timeout 1s
assert_eq "$(verdict 1)" gpu-lost "verdict with Xid 79 and a silent GPU"
grep -q "Xid 79" <<<"$(evidence 1)" || fail "the Xid 79 is named as evidence"
assert_eq "$(verdict 0)" ok "GPU 0 untouched"
assert_eq "$RC" 3 "exit status"
"$GV_BIN" sim set "$SIM" hang=none >/dev/null

note "the same without the kernel's word: the silent GPU is only unknown"
rm -f "$SIM/kmsg"
scan_rc --call-timeout 1s
assert_eq "$(verdict 1)" ok "NVML answers again: fine"
"$GV_BIN" sim set "$SIM" hang=1:nvmlDeviceGetMemoryInfo_v2 >/dev/null
scan_rc --call-timeout 1s
assert_eq "$(verdict 1)" unknown "a silent GPU without an Xid"
"$GV_BIN" sim set "$SIM" hang=none >/dev/null

note "an Xid 79 from before the driver's load is history while NVML answers"
printf '%s\n%s\n' "${XID79/3,200,/3,50,}" "$LOAD" > "$SIM/kmsg"
scan_rc
assert_eq "$(verdict 1)" ok "old Xid 79"
grep -q "predates the current driver load" <<<"$(evidence 1)" || fail "the old Xid 79 is mentioned as history"

note "Xid 45 naming the killed owner confirms its death"
sim_run --gpu 0 --mib 1024 --workers 1
kill_wait "$OWNER"
printf '%s\n3,300,95000000,-;NVRM: Xid (PCI:0000:1b:00): 45, pid=%s, name=python, Ch 00000010\n' "$LOAD" "$OWNER" > "$SIM/kmsg"
scan_rc
assert_eq "$(verdict 0)" orphaned-holders "killed job"
grep -q "Xid 45 .* for PID $OWNER (python): the driver tore its channels down" <<<"$(evidence 0)" || fail "Xid 45 evidence"

note "a bundle keeps the kernel lines it used"
set +e
GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms --save-bundle "$GV_TMP/b" >/dev/null
set -e
[ -s "$GV_TMP/b/kmsg" ] || fail "no kernel lines in the bundle"
[ -d "$GV_TMP/b/confirm" ] || fail "no confirming sample in the bundle"
[ -e "$GV_TMP/b/confirm/kmsg" ] && fail "the kernel log is read (and kept) once, with the first sample"
set +e
S=$("$GV_BIN" scan --json --from-bundle "$GV_TMP/b")
set -e
grep -q "Xid 45 .* for PID $OWNER" <<<"$(evidence 0)" || fail "Xid 45 evidence from the bundle"
kill_wait "${WORKERS[@]}"

note "a --kmsg FILE that cannot be read is a usage error, as in xid (the host's own log: a limit)"
set +e; ERR=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --confirm 0 --kmsg "$GV_TMP/does-not-exist" 2>&1 >/dev/null); RC=$?; set -e
assert_eq "$RC" 2 "scan --kmsg of a missing file"
assert_eq "$ERR" "ghostvram scan: --kmsg cannot open $GV_TMP/does-not-exist: No such file or directory" "its one line"
echo "PASS"
