#!/usr/bin/env bash
# A recent Xid pages (--xid-window, default 10m): an Xid 79 on GPU 1 seconds old, NVML still
# answering, makes check CRITICAL and scan exit 3, named with its age and what to do; doctor
# warns. Per the catalogue's severity: critical (79) CRITICAL, error (48) WARNING and scan exit 1,
# warning (31) does not page. Older than the window, or before the driver's load (history: the
# rule that makes a reset pointless after a 79 holds only after the load), it does not page.
. "$(dirname "$0")/lib.sh"

sim_new --gpus 2 --memory 16384 --reserved 512
LOAD='6,100,4000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  560.35.03  Release Build  (dvs-builder@U16)  Thu Aug 22 00:00:00 UTC 2024'
BUS0=0000:1b:00 BUS1=0000:43:00
# rec SEQ AGE_S XID BUS TEXT: one raw /dev/kmsg record, AGE_S seconds old by the boot clock
rec() {
        printf '3,%s,%s,-;NVRM: Xid (PCI:%s): %s, pid=0, name=, %s\n' "$1" \
                $(( ($(cut -d. -f1 /proc/uptime) - $2) * 1000000 )) "$4" "$3" "$5"
}
X79="GPU has fallen off the bus."
X48="An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6."
X31="Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_c0000000."
log() { printf '%s\n' "$@" > "$SIM/kmsg"; }
check() { RC=0; OUT=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" check --confirm 0 -t 60 "$@") || RC=$?; }
scan() { SRC=0; S=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 0 "$@") || SRC=$?; }
doctor_level() { # GPU: the level of its recent-xid finding
        GHOSTVRAM_SIM="$SIM" "$GV_BIN" doctor --json "${@:2}" |
                jq -r ".findings[] | select(.code == \"recent-xid\" and .gpu_index == $1) | .level"
}

note "an Xid 79 on GPU 1, 5 s old, NVML answering: check CRITICAL, scan 3, doctor warns"
log "$LOAD" "$(rec 200 5 79 $BUS1 "$X79")"
check
assert_eq "$RC" 2 "check: exit status (output: $OUT)"
[[ "$(head -1 <<<"$OUT")" =~ ^"GHOSTVRAM CRITICAL - GPU 1: Xid 79 (GPU has fallen off the bus) "[5-9]" s ago; 1 GPU ok | " ]] \
        || fail "check's status line: $OUT"
grep -qF 'GPU 1 xid-79: Xid 79 (GPU has fallen off the bus)' <<<"$OUT" || fail "check's long output names the Xid: $OUT"
grep -qF 'Next: drain the node and reboot it; a GPU reset does not bring back GPU 1 (`ghostvram xid explain 79`)' <<<"$OUT" \
        || fail "check's next step: reboot, not reset: $OUT"
scan
assert_eq "$SRC" 3 "scan: exit status"
assert_eq "$(jq -r '.exit_status' <<<"$S")" 3 "scan's JSON exit_status"
assert_eq "$(jq -r '.gpus[1].verdict' <<<"$S")" ok "the memory's verdict stands (NVML answers)"
assert_eq "$(jq -r '.gpus[1].recent_xid | "\(.kernel_event.xid) \(.severity) \(.action)"' <<<"$S")" "79 critical reboot" "scan's recent_xid"
age=$(jq -r '.gpus[1].recent_xid.age_seconds' <<<"$S")
jq -e --argjson a "$age" -n '$a >= 3 and $a < 30' >/dev/null || fail "age of the Xid: $age"
assert_eq "$(jq -r '.gpus[0].recent_xid' <<<"$S")" null "GPU 0 has none"
text=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --confirm 0 || true)
grep -qE '^  recent critical: Xid 79 \(GPU has fallen off the bus\) [0-9]+ s ago: it pages \(--xid-window\)$' <<<"$text" \
        || fail "scan's text names the Xid: $text"
assert_eq "$(doctor_level 1)" warn "doctor: GPU 1"
assert_eq "$(doctor_level 0)" ok "doctor: GPU 0"
set +e; GHOSTVRAM_SIM="$SIM" "$GV_BIN" doctor >/dev/null; RC=$?; set -e
assert_eq "$RC" 1 "doctor: exit status"

note "--xid-window 2s: the same Xid is older than the window and does not page (nor with 0)"
check --xid-window 2s
assert_eq "$RC" 0 "check --xid-window 2s (output: $OUT)"
[[ "$OUT" == "GHOSTVRAM OK - 2 GPUs ok | "* ]] || fail "check --xid-window 2s: $OUT"
scan --xid-window 2s
assert_eq "$SRC" 0 "scan --xid-window 2s"
scan --xid-window 0
assert_eq "$SRC" 0 "scan --xid-window 0"
assert_eq "$(doctor_level 1 --xid-window 2s)" ok "doctor --xid-window 2s"

note "an Xid 79 twenty minutes old: outside the default window"
log "$LOAD" "$(rec 200 1200 79 $BUS1 "$X79")"
check
assert_eq "$RC" 0 "check: old Xid 79 (output: $OUT)"
scan
assert_eq "$SRC" 0 "scan: old Xid 79"
assert_eq "$(doctor_level 1)" ok "doctor: old Xid 79"

note "a fresh Xid 79 from before the driver's load: history"
log "$(rec 50 5 79 $BUS1 "$X79")" "${LOAD/6,100,4000000,/6,100,$(( ($(cut -d. -f1 /proc/uptime) - 2) * 1000000 )),}"
check
assert_eq "$RC" 0 "check: Xid 79 before the load (output: $OUT)"
scan
assert_eq "$SRC" 0 "scan: Xid 79 before the load"

note "Xid 31 (severity warning: the application's fault) in the window does not page"
log "$LOAD" "$(rec 200 5 31 $BUS1 "$X31")"
check
assert_eq "$RC" 0 "check: Xid 31 (output: $OUT)"
scan
assert_eq "$SRC" 0 "scan: Xid 31"
assert_eq "$(jq -r '.gpus[1].recent_xid' <<<"$S")" null "Xid 31 is no recent_xid"

note "Xid 48 (severity error: reset the GPU): check WARNING, scan 1, the reset command"
log "$LOAD" "$(rec 200 5 48 $BUS1 "$X48")"
check
assert_eq "$RC" 1 "check: Xid 48 (output: $OUT)"
[[ "$(head -1 <<<"$OUT")" =~ ^"GHOSTVRAM WARNING - GPU 1: Xid 48 (Double-bit ECC error) "[0-9]+" s ago; 1 GPU ok | " ]] \
        || fail "check's status line for Xid 48: $OUT"
grep -qF 'then reset it once no process uses it: `sudo nvidia-smi --gpu-reset -i 0000:43:00.0`' <<<"$OUT" \
        || fail "Xid 48's next step: $OUT"
scan
assert_eq "$SRC" 1 "scan: Xid 48"
assert_eq "$(jq -r '.gpus[1].recent_xid.severity' <<<"$S")" error "Xid 48's severity"

note "Xid 48 then Xid 79 on GPU 1: the worse names the GPU; a ghost on GPU 0 beside an Xid 48 there"
sim_run --gpu 0 --mib 2048 --workers 1
kill_wait "$OWNER"
log "$LOAD" "$(rec 200 30 48 $BUS1 "$X48")" "$(rec 201 5 79 $BUS1 "$X79")" "$(rec 202 5 48 $BUS0 "$X48")"
check --confirm 300ms
assert_eq "$RC" 2 "check: ghost and Xids (output: $OUT)"
line=$(head -1 <<<"$OUT")
[[ "$line" =~ "GPU 1: Xid 79 (GPU has fallen off the bus) "[0-9]+" s ago" ]] || fail "GPU 1 named by its worst Xid: $line"
[[ "$line" =~ "GPU 0: 2048 MiB ghost (orphaned-holders, PIDs $OWNER ${WORKERS[0]}), Xid 48 (Double-bit ECC error) "[0-9]+" s ago" ]] \
        || fail "GPU 0's part has its ghost and its Xid: $line"
grep -q "^GPU 0 orphaned-holders: " <<<"$OUT" || fail "GPU 0's ghost in the long output: $OUT"
grep -q "^GPU 0 xid-48: " <<<"$OUT" || fail "GPU 0's Xid in the long output: $OUT"
kill_wait "${WORKERS[@]}"

note "usage: a bad window, and a command that does not judge Xids"
set +e
ERR=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --xid-window soon 2>&1 >/dev/null); RC=$?
set -e
assert_eq "$RC" 2 "scan --xid-window soon"
assert_eq "$ERR" "ghostvram scan: --xid-window: 'soon' is not a duration up to a year (e.g. 10m, 2h, 0 for never)" "its one line"
set +e
ERR=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --xid-window 1m 2>&1 >/dev/null); RC=$?
set -e
assert_eq "$RC" 2 "snapshot --xid-window"
grep -q "option '--xid-window' is not accepted by snapshot" <<<"$ERR" || fail "snapshot refuses it: $ERR"
for cmd in scan check doctor; do
        grep -q -- "--xid-window DURATION" <<<"$("$GV_BIN" "$cmd" --help)" || fail "$cmd --help lists --xid-window"
done
echo PASS
