#!/usr/bin/env bash
# PIDs across PID namespaces. Translating drivers (>= 535.113.01, variant "current") list
# PIDs in the caller's namespace and drop owners it cannot see; older ones (pid_mode=host,
# the default of older variants) list host PIDs whatever the caller. A dead owner's PID is
# listed only where it was recorded (its own namespace, the /proc it saw).
. "$(dirname "$0")/lib.sh"
need_unshare

sim_new --gpus 1
# LeakSanitizer (ASan builds) reads /proc/<its pid>/task: inside a PID namespace that shares
# our /proc that is another process's entry, so it cannot work there.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
GIB_HALF=$((512 * MIB))

# query from inside the PID namespace of process $1 (sharing our /proc)
listed_in_ns_of() { nsenter -t "$1" --pid -- env GHOSTVRAM_SIM="$SIM" "$GV_QUERY" | jq -r '[.gpus[0].procs[].pid] | map(tostring) | join(" ")'; }
# query from a new PID namespace with its own /proc: it sees none of our processes
query_new_ns() { unshare --pid --fork --mount-proc env GHOSTVRAM_SIM="$SIM" "$GV_QUERY"; }
listed_new_ns() { query_new_ns | jq -r '[.gpus[0].procs[].pid] | map(tostring) | join(" ")'; }

note "a job in a child PID namespace"
unshare --pid --fork --kill-child bash -c '"$0" sim run "$1" --gpu 0 --mib 512 --workers 1 >"$2"; exec sleep 100000' \
        "$GV_BIN" "$SIM" "$GV_TMP/ns.out" &
UPID=$!
disown "$UPID" # no "Killed" notice when the cleanup ends it
track "$UPID"
wait_for_line "$GV_TMP/ns.out" '^worker '
NSINIT=$(pgrep -P "$UPID")
track "$NSINIT"
INNER=$(awk '$1 == "owner" {print $2}' "$GV_TMP/ns.out")
INNER_W=$(awk '$1 == "worker" {print $2}' "$GV_TMP/ns.out")
OWNER_HERE=$(pid_in_ns_of "$NSINIT" "$INNER") || fail "cannot find the owner in our namespace"
WORKER_HERE=$(pid_in_ns_of "$NSINIT" "$INNER_W") || fail "cannot find the worker in our namespace"
track "$OWNER_HERE" "$WORKER_HERE"
[ "$INNER" != "$OWNER_HERE" ] || fail "the job's namespace should number its owner differently"

note "translated: each caller sees the owner under its own PID, or not at all"
assert_eq "$(listed 0)" "$OWNER_HERE" "listed from our namespace"
assert_eq "$(listed_in_ns_of "$NSINIT")" "$INNER" "listed from the job's namespace"
assert_eq "$(listed_new_ns)" "" "listed from a namespace that cannot see the owner"
assert_eq "$(query_new_ns | jq -r '.gpus[0].memory.used')" "$GIB_HALF" "used seen from that namespace"

note "host PIDs (older drivers): the outermost PID, whatever the caller"
"$GV_BIN" sim set "$SIM" pid_mode=host
assert_eq "$(listed 0)" "$OWNER_HERE" "host mode, our namespace"
assert_eq "$(listed_in_ns_of "$NSINIT")" "$OWNER_HERE" "host mode, the job's namespace"
assert_eq "$(listed_new_ns)" "$OWNER_HERE" "host mode, a new namespace"
"$GV_BIN" sim set "$SIM" pid_mode=auto

note "the owner dies, its worker keeps the context: the recorded PID where it was recorded"
kill_wait "$OWNER_HERE"
assert_eq "$(used 0)" "$GIB_HALF" "used after the owner died"
assert_eq "$(listed 0)" "$OWNER_HERE" "stale PID from our namespace (the /proc the owner saw)"
assert_eq "$(listed_in_ns_of "$NSINIT")" "$INNER" "stale PID from the owner's namespace"
assert_eq "$(listed_new_ns)" "" "stale PID from an unrelated namespace"
kill_wait "$WORKER_HERE"
assert_eq "$(used 0)" 0 "used after the worker died"

note "a job here, queried from a namespace of its own (a container)"
sim_run --gpu 0 --mib 256 --workers 1
assert_eq "$(listed_new_ns)" "" "translated: the container sees no process"
assert_eq "$(query_new_ns | jq -r '.gpus[0].memory.used')" $((256 * MIB)) "but the memory is used"
"$GV_BIN" sim set "$SIM" driver=535.98 # before 535.113.01: host PIDs by default
assert_eq "$(listed_new_ns)" "$OWNER" "535.98: host PID seen from the container"
assert_eq "$(query_new_ns | jq -r '.driver')" "535.98" "driver version"
kill_wait "$OWNER"
assert_eq "$(listed_new_ns)" "$OWNER" "535.98: stale host PID seen from the container"
"$GV_BIN" sim set "$SIM" driver=current
assert_eq "$(listed_new_ns)" "" "current: a dead owner outside the container is not listed"
assert_eq "$(listed 0)" "$OWNER" "current: stale PID listed here"
echo PASS
