#!/usr/bin/env bash
# ghostvram xid end to end: saved kernel logs in, JSON and text out, checked with jq.
# Needs GV_BIN and GV_FIXTURES (set by ctest), and jq (scripts/install-deps --test installs it:
# missing, the test fails).
set -u
: "${GV_BIN:?GV_BIN is not set}" "${GV_FIXTURES:?GV_FIXTURES is not set}"
command -v jq >/dev/null || { echo "FAIL: jq is not installed (Debian package jq): run scripts/install-deps --test"; exit 1; }

K=$GV_FIXTURES/kmsg
export TZ=UTC NO_COLOR=
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }
# check NAME JQ-EXPRESSION FILE: the expression must print true
check() {
        if [ "$(jq -r "$2" "$3" 2>&1)" = "true" ]; then ok "$1"; else bad "$1: $2 on $3"; jq . "$3" | head -60; fi
}
# status NAME EXPECTED COMMAND...
status() {
        local want=$1 name=$2; shift 2
        "$@" >"$tmp/out" 2>"$tmp/err"
        local got=$?
        if [ "$got" = "$want" ]; then ok "$name (exit $got)"; else bad "$name: exit $got, wanted $want"; cat "$tmp/err"; fi
}

# --- a raw dmesg file -------------------------------------------------------------------------
status 0 "xid --kmsg dmesg.txt --json" "$GV_BIN" xid --kmsg "$K/dmesg.txt" --json
cp "$tmp/out" "$tmp/dmesg.json"
J=$tmp/dmesg.json
check "schema_version and source" '.schema_version == 2 and .source == "file" and .overruns == 0' "$J"
check "13 events, other NVIDIA lines hidden" '(.events | length) == 13 and .hidden == 6' "$J"
check "Xid 79 with its process" '[.events[] | select(.xid == 79)] | length == 1 and
        (.[0] | .kind == "xid" and .pci_bus_id == "0000:af:00.0" and .pid == 1234 and .process_name == "python3"
         and .severity == "critical" and .action == "reboot" and .message == "GPU has fallen off the bus.")' "$J"
check "companion 'GPU has fallen off the bus.' line not counted twice" \
        '[.events[] | select(.kind == "fallen_off_bus")] | length == 0' "$J"
check "no wall-clock time without --this-boot, monotonic kept" \
        '.events[] | select(.xid == 79) | .time == null and .monotonic == 5107.644336 and .gpu_index == null' "$J"
check "pid='<unknown>' gives null pid and name" \
        '.events[] | select(.xid == 48) | .pid == null and .process_name == null and .action == "reset_gpu"' "$J"
check "MIG instances" '.events[] | select(.xid == 94) | .gpu_instance == 5 and .compute_instance == 1' "$J"
check "SXid is not an Xid" '.events[] | select(.kind == "sxid") | .xid == null and .sxid == 12028' "$J"
check "Xid 119 and the GSP rate-limit line" \
        '[.events[] | select(.xid == 119 or .kind == "gsp_error")] | length == 2 and .[0].process_name == "nvidia-smi"' "$J"
check "driver load with its version" '.events[0] | .kind == "driver_load" and .driver_version == "535.183.01" and .xid == null' "$J"
check "non-Xid events have null xid" '[.events[] | select(.kind != "xid" and .kind != "fallen_off_bus") | .xid] | all(. == null)' "$J"

status 0 "xid -v shows every NVIDIA line" "$GV_BIN" xid --kmsg "$K/dmesg.txt" --json -v
check "-v: 19 events" '(.events | length) == 19 and .hidden == 0' "$tmp/out"

# --- other formats ------------------------------------------------------------------------------
status 0 "dmesg -T from stdin" sh -c "\"$GV_BIN\" xid --kmsg - --json < \"$K/dmesg-T.txt\""
cp "$tmp/out" "$tmp/t.json"
check "stdin source, wall-clock times" '.source == "stdin" and (.events | length) == 4 and
        .events[1].time == "2024-08-30T11:43:09Z" and .events[1].xid == 109' "$tmp/t.json"
check "Xid 154 names the reset" '.events[] | select(.xid == 154) | .action == "reset_gpu"' "$tmp/t.json"
check "caused by previous Xid" '.events[] | select(.xid == 45) | .caused_by_xid == 109 and .action == "follow_other_xid"' "$tmp/t.json"

status 0 "journalctl short-iso" "$GV_BIN" xid --kmsg "$K/journal-short-iso.txt" --json
check "journal: times with zones, fallen off the bus as Xid 79, unknown code kept" \
        '(.events | length) == 7 and .events[0].time == "2026-11-30T09:11:12Z" and
         (.events[] | select(.kind == "fallen_off_bus") | .xid == 79 and .pci_bus_id == "0000:02:00.0") and
         (.events[] | select(.xid == 999) | .severity == "unknown" and .action == "unknown")' "$tmp/out"

status 0 "raw kmsg records" "$GV_BIN" xid --kmsg "$K/kmsg-raw.txt" --json
check "kmsg: seq numbers, forged user record ignored" \
        '[.events[].seq] == [1001, 1002, 1003, 1004, 1006] and ([.events[] | select(.process_name == "forged")] | length == 0)' "$tmp/out"
check "kmsg: hostile process name kept as data" '.events[] | select(.pid == 77) | .process_name == "evil\u001b[31mred\\n"' "$tmp/out"

# --- text output never lets a control character through -------------------------------------------
status 0 "text output" "$GV_BIN" xid --kmsg "$K/kmsg-raw.txt"
if LC_ALL=C grep -q $'\x1b' "$tmp/out"; then bad "raw ESC reached the terminal output"; else ok "no raw ESC in text output"; fi
if grep -q 'evil\\e\[31mred' "$tmp/out"; then ok "process name escaped"; else bad "escaped name missing"; cat "$tmp/out"; fi
grep -q "Xid 45" "$tmp/out" && grep -q "caused by Xid 149" "$tmp/out" && ok "text shows Xid 45 and its cause" || bad "text Xid 45"

# --- filters ------------------------------------------------------------------------------------
status 0 "--since a date-time" "$GV_BIN" xid --kmsg "$K/dmesg-T.txt" --since 2024-08-30T11:43:10Z --json
check "--since keeps the later events" '[.events[].xid] == [154, 45]' "$tmp/out"
status 0 "--since on untimed lines" "$GV_BIN" xid --kmsg "$K/dmesg.txt" --since 2h --json
check "untimed lines left out and counted" '(.events | length) == 0 and .untimed_events == 13' "$tmp/out"
status 0 "--this-boot dates [seconds] stamps" "$GV_BIN" xid --kmsg "$K/dmesg.txt" --this-boot --json --nvml-lib /nonexistent/libnvidia-ml.so.1
check "--this-boot gives times" '[.events[].time] | all(. != null)' "$tmp/out"
status 0 "--gpu by PCI bus id" "$GV_BIN" xid --kmsg "$K/dmesg.txt" --gpu 0000:86:00.0 --json
check "--gpu PCI keeps that GPU's events" '[.events[].xid] == [31, 48, 63]' "$tmp/out"
status 3 "--gpu N without a driver" "$GV_BIN" xid --kmsg "$K/dmesg.txt" --gpu 0 --nvml-lib /nonexistent/libnvidia-ml.so.1
grep -q "PCI bus id" "$tmp/err" && ok "--gpu N says to use a PCI bus id" || { bad "--gpu N message"; cat "$tmp/err"; }

# --- bad input ------------------------------------------------------------------------------------
status 2 "bad --since" "$GV_BIN" xid --kmsg "$K/dmesg.txt" --since yesterday
grep -q "is not a duration" "$tmp/err" && ok "--since error explains" || bad "--since message"
status 2 "bad --gpu" "$GV_BIN" xid --kmsg "$K/dmesg.txt" --gpu foo
status 2 "missing --kmsg file" "$GV_BIN" xid --kmsg "$tmp/nonexistent"
grep -q "nonexistent" "$tmp/err" && ok "missing file named" || bad "missing file message"
status 2 "unknown option" "$GV_BIN" xid --nope
status 2 "stray argument" "$GV_BIN" xid 79
status 2 "explain without a code" "$GV_BIN" xid explain
status 2 "explain a non-number" "$GV_BIN" xid explain abc

# --- explain --------------------------------------------------------------------------------------
status 0 "xid explain 79" "$GV_BIN" xid explain 79
for w in "Xid 79: GPU has fallen off the bus" "What it means" "Likely cause" "What to do" \
         "Reset/reboot    Yes: reboot the machine; a GPU reset is not enough." "RESTART_BM"; do
        grep -qF "$w" "$tmp/out" && ok "explain 79 says '$w'" || { bad "explain 79 lacks '$w'"; cat "$tmp/out"; }
done
status 0 "xid explain 45 119 --json" "$GV_BIN" xid explain 45 119 --json
check "explain JSON" '.schema_version == 2 and .explanations[0].xid == 45 and .explanations[0].action == "follow_other_xid"
        and (.explanations[1].note | test("not necessarily the culprit"))' "$tmp/out"
status 0 "xid explain of an unknown code" "$GV_BIN" xid explain 4000
grep -q "Unknown Xid" "$tmp/out" && ok "unknown code said so" || bad "unknown code"
status 0 "xid --help" "$GV_BIN" xid --help
grep -q "Examples:" "$tmp/out" && grep -q "GHOSTVRAM_SIM" "$tmp/out" && ok "--help teaches" || bad "--help"

# --- --follow stops cleanly on SIGTERM and streams appended lines -------------------------------------
cp "$K/dmesg-T.txt" "$tmp/live.log"
"$GV_BIN" xid --kmsg "$tmp/live.log" --follow --json >"$tmp/follow.out" 2>"$tmp/follow.err" &
pid=$!
sleep 1
echo "[Sat Aug 31 02:00:00 2024] NVRM: Xid (PCI:0000:17:00): 79, pid=9, name=late, GPU has fallen off the bus." >>"$tmp/live.log"
sleep 1.5
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 0 ] && ok "--follow exits 0 on SIGTERM" || { bad "--follow exit $rc"; cat "$tmp/follow.err"; }
if [ "$(jq -s '[.[].kernel_event.xid] == [null, 109, 154, 45, 79] and all(.[]; .schema_version == 2)' "$tmp/follow.out")" = true ]; then
        ok "--follow streamed the old and the appended events"
else
        bad "--follow output"; cat "$tmp/follow.out"
fi

# --- /dev/kmsg: readable (root) or one clear line ---------------------------------------------------
"$GV_BIN" xid --json >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" = 0 ]; then
        check "/dev/kmsg read" '.source == "kmsg" and .schema_version == 2' "$tmp/out"
elif [ "$rc" = 3 ]; then
        [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q -- "--kmsg FILE" "$tmp/err" && ok "/dev/kmsg refused: one clear line" \
                || { bad "/dev/kmsg refusal message"; cat "$tmp/err"; }
else
        bad "/dev/kmsg: exit $rc"; cat "$tmp/err"
fi

# --- GHOSTVRAM_SIM: the simulated host's kernel log ------------------------------------------------
# the simulator is built with the binary: a failing `sim init` is a failure, never a skip
if "$GV_BIN" sim init "$tmp/sim" >"$tmp/init.out" 2>&1; then
        cp "$K/kmsg-raw.txt" "$tmp/sim/kmsg"
        GHOSTVRAM_SIM=$tmp/sim "$GV_BIN" xid --json >"$tmp/out" 2>"$tmp/err"
        check "GHOSTVRAM_SIM reads DIR/kmsg" '.source == "file" and (.events | length) == 5' "$tmp/out"
        # the simulated driver names GPU indexes: find GPU 1's bus id and log an Xid 79 for it
        GHOSTVRAM_SIM=$tmp/sim "$GV_BIN" snapshot --json >"$tmp/snap.json" 2>/dev/null
        bus=$(jq -r '.gpus[] | select(.index == 1) | .pci_bus_id' "$tmp/snap.json")
        if [ -n "$bus" ] && [ "$bus" != null ]; then
                short=${bus%.*}
                printf '3,1,5000000,-;NVRM: Xid (PCI:%s): 79, pid=7, name=train, GPU has fallen off the bus.\n' "$short" >"$tmp/sim/kmsg"
                printf '3,2,6000000,-;NVRM: Xid (PCI:0000:ee:00): 13, pid=8, name=other, not a GPU of this host\n' >>"$tmp/sim/kmsg"
                GHOSTVRAM_SIM=$tmp/sim "$GV_BIN" xid --json >"$tmp/out" 2>"$tmp/err"
                check "GHOSTVRAM_SIM: PCI bus ids named by GPU index" \
                        '[.events[].gpu_index] == [1, null] and .events[0].time != null' "$tmp/out"
                GHOSTVRAM_SIM=$tmp/sim "$GV_BIN" xid --gpu 1 --json >"$tmp/out" 2>"$tmp/err"
                check "GHOSTVRAM_SIM: --gpu 1" '[.events[].xid] == [79]' "$tmp/out"
                status 2 "--gpu with an index the driver does not list" env GHOSTVRAM_SIM="$tmp/sim" "$GV_BIN" xid --gpu 7
                GHOSTVRAM_SIM=$tmp/sim "$GV_BIN" xid >"$tmp/out" 2>"$tmp/err"
                grep -q "SIMULATED HOST" "$tmp/out" && grep -q "GPU 1 $bus" "$tmp/out" && ok "text names GPU 1 on the simulated host" \
                        || { bad "text on the simulated host"; cat "$tmp/out"; }
        else
                bad "snapshot of the simulated host gave no GPU 1"
        fi
        rm "$tmp/sim/kmsg"
        GHOSTVRAM_SIM=$tmp/sim "$GV_BIN" xid --json >"$tmp/out" 2>"$tmp/err"
        check "GHOSTVRAM_SIM without DIR/kmsg: no events" '(.events | length) == 0' "$tmp/out"
else
        bad "ghostvram sim init failed: $(cat "$tmp/init.out")"
fi

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all xid checks passed"
