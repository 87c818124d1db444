#!/usr/bin/env bash
# Busy processes beside a ghost: one maps and unmaps memory all the time (its address space
# locked for writing again and again), another starts children that map memory and exit at once
# (seen by the BPF task iterator, their address space gone by the time the mapping iterator
# comes). Nothing is in the driver, so no scan may say so; an address space the iterator did not
# read is read from /proc instead (which waits for the lock): the first process holds GPU 1's
# node by a mapping only, and every scan must list it. Rules: docs/json.md (limits),
# src/collect/host_scan.c (read_maps).
. "$(dirname "$0")/lib.sh"
SCAN_AGREE=no # 60 scans: each checks the maps, not the replay (t_scan_truth and the others do)
. "$(dirname "$0")/scan_lib.sh"

CHURN_BIN="$GV_BUILD/sim/gv-simchurn"
[ -x "$CHURN_BIN" ] || fail "$CHURN_BIN is not built"
SCANS=60

sim_new --gpus 2 --memory 16384
sim_run --gpu 0 --mib 1024 --workers 1
W=${WORKERS[0]}
kill_wait "$OWNER"

note "a process mapping GPU 1's node, then mapping and unmapping memory in a loop"
setsid "$CHURN_BIN" "$SIM/dev/nvidia1" >"$GV_TMP/churn.out" 2>&1 </dev/null &
C=$!
track "$C"
wait_for_line "$GV_TMP/churn.out" '^ready'
holds_map "$C" || fail "the churn process does not map GPU 1's node"
setsid "$CHURN_BIN" --fork >"$GV_TMP/forks.out" 2>&1 </dev/null &
F=$!
track "$F"
wait_for_line "$GV_TMP/forks.out" '^ready'

note "$SCANS scans"
stuck=0 unread=0 bpf=0
for i in $(seq "$SCANS"); do
        scan_rc
        assert_eq "$RC" 1 "scan $i: exit with the ghost"
        assert_eq "$(verdict 0)" orphaned-holders "scan $i: the ghost's verdict"
        assert_eq "$(attributed 0)" "$W" "scan $i: the worker"
        jq -e '.limits | map(select(test("stuck in the driver"))) | length == 0' <<<"$S" >/dev/null || stuck=$((stuck + 1))
        via=$(jq -r ".holders[] | select(.pid == $C) | .via.nvidia1 // [] | join(\",\")" <<<"$S")
        if [ "$via" != mmap ]; then
                unread=$((unread + 1))
                echo "scan $i: the churn process's mapping not seen (via '$via'); limits: $(jq -c .limits <<<"$S")"
        fi
        [ "$(jq -r .host.holder_source <<<"$S")" = bpf ] && bpf=$((bpf + 1))
done
echo "of $SCANS scans ($bpf by the BPF iterators): $stuck said a thread is stuck in the driver, $unread missed the mapping"
assert_eq "$stuck" 0 "scans that blamed the driver"
assert_eq "$unread" 0 "scans that did not read the churn process's maps"
assert_eq "$(jq -c '[.limits[] | select(test("memory maps"))]' <<<"$S")" "[]" "no maps left unread in the last scan"

kill_wait "$C" "$F" "$W"
echo "PASS"
