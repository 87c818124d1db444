#!/usr/bin/env bash
# One JSON vocabulary across commands (docs/json.md): every document that snapshot, scan, xid,
# reclaim, doctor, watch, experiment and track write, and the error document, is checked by
# json_vocabulary.py (schema_version 2; a GPU is index + uuid + pci_bus_id "0000:1b:00.0",
# elsewhere gpu_index; PIDs are numbers, pids arrays of them; a time is RFC 3339 text to the
# second plus *_epoch). Then the same facts read through two commands agree.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/track_lib.sh"
need_tool python3 python3
VOCAB="$(dirname "$0")/json_vocabulary.py"
FIX="$GV_SRC/tests/fixtures/kmsg"
gvs() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" "$@"; }
out() { local f="$GV_TMP/$1.json"; shift; set +e; "$@" >"$f"; set -e; }

sim_new --gpus 2 --memory 16384 --reserved 512
note "a live job on GPU 0, a killed job's workers on GPU 1"
sim_run --gpu 0 --mib 1024
LIVE=$OWNER
sim_run --gpu 1 --mib 2048 --workers 2
DEAD=$OWNER W=("${WORKERS[@]}")
kill_wait "$DEAD"
sim_shm_large "$LIVE" # scan's host_shared_memory

out snapshot gvs snapshot --json
out scan gvs scan --json --confirm 300ms
out reclaim gvs reclaim --json --confirm 300ms
out reclaim_error gvs reclaim --json --gpu 7
out reclaim_stream gvs reclaim --json-stream --confirm 300ms
out reclaim_stream_error gvs reclaim --json-stream --gpu 7
out doctor gvs doctor --json
note "watch and xid --follow: a kernel event arriving while they run"
: >>"$SIM/kmsg"         # the simulated host's kernel log (a real host's /dev/kmsg is always there)
# (ghostvram itself in the background, not the function gvs: $! would be a subshell, and
# killing it would leave ghostvram running after the test)
GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch --json --interval 300ms --for 0 >"$GV_TMP/watch.json" 2>"$GV_TMP/watch.err" &
WATCH=$!
GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid --follow --json >"$GV_TMP/xid_follow.json" 2>"$GV_TMP/xid_follow.err" &
FOLLOW=$!
track "$WATCH" "$FOLLOW"
# what the log holds at watch's first cycle is history: append once that cycle has ended (its
# first state line; xid --follow, without --since, prints the whole log)
wait_for_line "$GV_TMP/watch.json" '"event":"state"'
printf '[%s] NVRM: Xid (PCI:0000:1b:00): 31, pid=%s, name=python3, MMU Fault: ENGINE GRAPHICS\n' 300.5 "$LIVE" >>"$SIM/kmsg"
for _ in $(seq 100); do
        grep -q '"event":"xid"' "$GV_TMP/watch.json" && grep -q '"kernel_event"' "$GV_TMP/xid_follow.json" && break
        sleep 0.1
done
kill -TERM "$WATCH" "$FOLLOW"
wait "$WATCH" "$FOLLOW" || true
assert_eq "$(jq -sc '[.[] | select(.event == "xid") | .kernel_event | [.xid, .gpu_index, .pid]][0]' "$GV_TMP/watch.json")" \
        "[31,0,$LIVE]" "watch's Xid line carries the event"
assert_eq "$(jq -sc '[.[].kernel_event | [.xid, .gpu_index, .pid]][-1]' "$GV_TMP/xid_follow.json")" \
        "[31,0,$LIVE]" "xid --follow's line: the same event, the same names"
out xid gvs xid --json --kmsg "$FIX/dmesg.txt"
out xid_explain "$GV_BIN" xid explain 79 --json
# track's report goes to stderr (stdout is the command's)
"$GV_BIN" track --json --ledger-dir "$GV_TMP/ledgers" -- \
        "$GV_SIMALLOC" --dir "$SIM" --gpu 0 --allocs 2 --size $MIB --free-every 2 \
        2>"$GV_TMP/track.json" >/dev/null
ledger=$(ls "$GV_TMP/ledgers"/*.gvl | head -1)
out track_show "$GV_BIN" track --show "$ledger" --json
# experiment's --gpu takes a bus id as every command's does
P0=$(jq -r '.gpus[0].pci_bus_id' "$GV_TMP/snapshot.json")
out experiment gvs experiment --json --confirm 300ms --gpu "$P0" --mib 256 --workers 1 --reclaim

note "every document follows the vocabulary"
args=()
for f in "$GV_TMP"/*.json; do
        [ -s "$f" ] || fail "$(basename "$f") is empty"
        args+=("$(basename "$f" .json)=$f")
done
seen=$(python3 "$VOCAB" "${args[@]}") || fail "vocabulary broken (above)"
echo "$seen"
# the checks must have had something to check: GPU objects, bus ids, PIDs, times
for want in "gpu objects" "pci_bus_id" "pids values" "times" "gpu_index"; do
        n=$(grep -o "$want=[0-9]*" <<<"$seen" | cut -d= -f2)
        [ "${n:-0}" -gt 0 ] || fail "nothing of '$want' was seen: $seen"
done

note "the rule can fail: a document of the old vocabulary is refused"
printf '%s\n' '{"schema_version":2,"time":"2026-12-01T10:00:00Z","time_epoch":1796119200.5,"event":"state","gpu":1,"pids":"12 13"}' >"$GV_TMP/old.ndjson"
if python3 "$VOCAB" old="$GV_TMP/old.ndjson" 2>"$GV_TMP/old.err"; then fail "the old vocabulary passed"; fi
grep -q "a key named 'gpu'" "$GV_TMP/old.err" || fail "$(cat "$GV_TMP/old.err")"
grep -q "is not an array of numbers" "$GV_TMP/old.err" || fail "$(cat "$GV_TMP/old.err")"
printf '%s\n' '{"schema_version":2,"pci_bus_id":"00000000:1B:00.0","time":"2026-12-01T10:00:00Z","time_epoch":1796119300}' >"$GV_TMP/old2.ndjson"
if python3 "$VOCAB" old2="$GV_TMP/old2.ndjson" 2>"$GV_TMP/old2.err"; then fail "NVML's bus id form passed"; fi
grep -q "is not dddd:bb:dd.f" "$GV_TMP/old2.err" || fail "$(cat "$GV_TMP/old2.err")"
grep -q "are not the same second" "$GV_TMP/old2.err" || fail "$(cat "$GV_TMP/old2.err")"

note "the same facts, the same names, across commands"
J="$GV_TMP"
assert_eq "$(jq -c '[.gpus[] | {index, uuid, pci_bus_id}]' "$J/scan.json")" \
        "$(jq -c '[.gpus[] | {index, uuid, pci_bus_id}]' "$J/snapshot.json")" "scan's GPUs = snapshot's"
assert_eq "$(jq -sc '[.[] | select(.event == "state") | {index, uuid, pci_bus_id}] | unique' "$J/watch.json")" \
        "$(jq -c '[.gpus[] | {index, uuid, pci_bus_id}]' "$J/scan.json")" "watch's GPUs = scan's"
assert_eq "$(jq -c '[.gpus[] | {index, uuid, pci_bus_id}]' "$J/reclaim.json")" \
        "$(jq -c '[.gpus[] | {index, uuid, pci_bus_id}]' "$J/scan.json")" "reclaim's GPUs = scan's"
want=$(printf '%s\n' "$DEAD" "${W[@]}" | sort -n | paste -sd, -)
assert_eq "$(jq -c '.gpus[1].findings[0].pids | sort | map(tostring) | join(",")' -r "$J/scan.json")" "$want" "scan's PIDs"
assert_eq "$(jq -sr '[.[] | select(.event == "state" and .index == 1)][-1].pids | sort | map(tostring) | join(",")' "$J/watch.json")" \
        "$want" "watch's PIDs: the same array"
assert_eq "$(jq -r '[.plan.targets[].pid] | sort | map(tostring) | join(",")' "$J/reclaim.json")" \
        "$(printf '%s\n' "${W[@]}" | sort -n | paste -sd, -)" "reclaim's targets"
assert_eq "$(jq -r '[.plan.targets[].gpu_index] | unique | join(",")' "$J/reclaim.json")" 1 "targets' gpu_index"
# a process's start time: the same second in scan and snapshot, the text and the epoch agreeing
st=$(jq -r --argjson p "${W[0]}" '.holders[] | select(.pid == $p) | "\(.start_time) \(.start_time_epoch | floor)"' "$J/snapshot.json")
[ -n "$st" ] && [ "${st%% *}" = "$(date -u -d "@${st##* }" +%Y-%m-%dT%H:%M:%SZ)" ] || fail "start_time of ${W[0]}: '$st'"
assert_eq "$(jq -r '.time == .driver.sample_time' "$J/scan.json")" true "scan's time is its sample's"
assert_eq "$(jq -c '.host_shared_memory | [.large, .total_bytes, .sysv.creator_pids, .sysv.segments[0].creator_pid]' "$J/scan.json")" \
        "[true,3145728,[$LIVE],$LIVE]" "scan's host_shared_memory: bytes, PIDs as numbers"
assert_eq "$(jq -r .exit_status "$J/reclaim_error.json")" 2 "the error document's status"
assert_eq "$(jq -r .event "$J/reclaim_stream.json" | paste -sd, -)" plan,result "reclaim --json-stream's events (a dry run)"
assert_eq "$(wc -l <"$J/reclaim_stream_error.json") $(jq -r .exit_status "$J/reclaim_stream_error.json")" "1 2" \
        "--json-stream's error: one line"
assert_eq "$(jq -r .gpu_index "$J/experiment.json")" 0 "experiment --gpu $P0 is GPU 0"
is_dead "$LIVE" && fail "the live owner was ended"
true
