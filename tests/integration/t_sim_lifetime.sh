#!/usr/bin/env bash
# The core rule with real processes and real kill -9: a context lives as long as the open
# file description it was created on — inherited descriptors or mappings alone keep it,
# an exec'd child keeps nothing — and a dead owner's PID stays listed with its bytes.
. "$(dirname "$0")/lib.sh"

sim_new --gpus 2

note "owner alive: listed with its bytes"
sim_run --gpu 1 --mib 1024 --workers 2
assert_eq "$(listed 1)" "$OWNER" "listed PIDs on GPU 1"
assert_eq "$(listed_bytes 1 "$OWNER")" $((1024 * MIB)) "owner's bytes"
assert_eq "$(used 1)" $((1024 * MIB)) "used on GPU 1"
assert_eq "$(used 0)" 0 "used on GPU 0"
assert_eq "$(listed 0)" "" "listed on GPU 0"
for w in "${WORKERS[@]}"; do
        holds_fd "$w" || fail "worker $w should hold the inherited descriptors"
        [ "$(ps -o pgid= -p "$w" | tr -d ' ')" = "$OWNER" ] || fail "worker $w is not in the owner's process group"
done
[ "$(ps -o sid= -p "$OWNER" | tr -d ' ')" = "$OWNER" ] || fail "the owner does not lead its own session"

note "kill -9 the owner, workers alive: memory stays, the stale PID stays listed"
kill_wait "$OWNER"
assert_eq "$(used 1)" $((1024 * MIB)) "used after the owner died"
assert_eq "$(listed 1)" "$OWNER" "stale PID listed"
assert_eq "$(listed_bytes 1 "$OWNER")" $((1024 * MIB)) "stale PID's bytes"

note "hidden-owner mode: not listed, memory still used"
"$GV_BIN" sim set "$SIM" hidden_owner=on
assert_eq "$(listed 1)" "" "listed with hidden owners"
assert_eq "$(used 1)" $((1024 * MIB)) "used with hidden owners"
"$GV_BIN" sim set "$SIM" hidden_owner=off
"$GV_BIN" sim status "$SIM" | grep -q "context 1: 1024 MiB, alive, owner dead" || fail "sim status does not show the dead owner"

note "kill the last worker: memory freed"
kill_wait "${WORKERS[0]}"
assert_eq "$(used 1)" $((1024 * MIB)) "used with one worker left"
kill_wait "${WORKERS[1]}"
assert_eq "$(used 1)" 0 "used after every holder died"
assert_eq "$(listed 1)" "" "listed after every holder died"

note "workers that closed their descriptors but kept the mappings still keep it"
sim_run --gpu 0 --mib 2048 --workers 1 --close-fds-in-workers
w=${WORKERS[0]}
holds_fd "$w" && fail "worker $w should have closed its device descriptors"
holds_map "$w" || fail "worker $w should still map the device files"
kill_wait "$OWNER"
assert_eq "$(used 0)" $((2048 * MIB)) "used, held by a mapping only"
assert_eq "$(listed 0)" "$OWNER" "stale PID listed (mapping only)"
kill_wait "$w"
assert_eq "$(used 0)" 0 "used after the mapping went"

note "an exec'd child holds nothing"
sim_run --gpu 0 --mib 512 --workers 1 --exec-child
[ -n "$CHILD" ] || fail "no child printed"
holds_fd "$CHILD" && fail "exec'd child holds a device descriptor"
holds_map "$CHILD" && fail "exec'd child maps a device file"
kill_wait "$OWNER" "${WORKERS[0]}"
is_dead "$CHILD" && fail "the exec'd child should still run"
assert_eq "$(used 0)" 0 "used with only the exec'd child alive"
kill_wait "$CHILD"

note "free delay: still used right after the release, freed after the delay"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=2000
sim_run --gpu 0 --mib 1024
kill_wait "$OWNER"
assert_eq "$(used 0)" $((1024 * MIB)) "used right after the release"
assert_eq "$(listed 0)" "" "a released context is not listed"
"$GV_BIN" sim status "$SIM" | grep -q "released, freed in" || fail "sim status does not show the pending free"
sleep 1
assert_eq "$(used 0)" $((1024 * MIB)) "used 1 s after the release (delay 2 s)"
sleep 1.5
assert_eq "$(used 0)" 0 "used after the delay"
echo PASS
