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
"$GV_BIN" sim status "$SIM" | grep >/dev/null "context 1: 1024 MiB, alive, owner dead" || fail "sim status does not show the dead owner"

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

note "teardown watcher: started with the context, in its own session, holding nothing of the job's"
# a teardown of 10 s per GiB: long enough to sample on a loaded machine
D=10000
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=$D
sim_run --gpu 0 --mib 1024 --workers 1
id=$(grep -o '^ctx=[0-9]*' "$SIM/contexts" | tail -1 | cut -d= -f2)
wt=$(ctx_field "$id" watcher)
[ -n "$wt" ] || fail "no teardown watcher recorded for context $id"
assert_eq "$(cat "/proc/$wt/comm")" gv-simteardown "the watcher's name"
[ "$(ps -o sid= -p "$wt" | tr -d ' ')" = "$(ps -o sid= -p "$OWNER" | tr -d ' ')" ] && fail "the watcher is in the job's session"
[ "$(ps -o pgid= -p "$wt" | tr -d ' ')" = "$OWNER" ] && fail "the watcher is in the job's process group"
holds_fd "$wt" && fail "the watcher holds a device descriptor"
holds_map "$wt" && fail "the watcher maps a device file"
# by no path either: a holder walk matches the node's inode (the driver's teardown is no process)
ctl_ino=$(stat -Lc '%d:%i' "$SIM/dev/nvidiactl")
for f in /proc/"$wt"/fd/*; do
        [ "$(stat -Lc '%d:%i' "$f" 2>/dev/null)" != "$ctl_ino" ] || fail "the watcher holds nvidiactl as $(readlink "$f")"
done
grep -q "anon_inode:inotify" <<<"$(ls -l "/proc/$wt/fd")" || fail "the watcher does not watch nvidiactl with inotify"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json >"$GV_TMP/snap.json"
jq -e --argjson w "$wt" '[.holders[] | select(.pid == $w)] | length == 0' "$GV_TMP/snap.json" >/dev/null ||
        fail "snapshot lists the teardown watcher as a holder"
jq -e --argjson o "$OWNER" '[.holders[] | select(.pid == $o)] | length == 1' "$GV_TMP/snap.json" >/dev/null ||
        fail "snapshot does not list the owner (the test would prove nothing)"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --verbose >"$GV_TMP/scan.json" 2>/dev/null || true
jq -e --argjson w "$wt" '[.. | objects | select(.pid? == $w)] | length == 0' "$GV_TMP/scan.json" >/dev/null ||
        fail "scan lists the teardown watcher as a holder"

note "the release is the moment the last holder goes, not the first read"
kill_wait "$OWNER"
sleep 0.3
assert_eq "$(ctx_field "$id" released)" 0 "released while a worker holds the description"
t_kill=$(now_ms)
kill_wait "${WORKERS[0]}"
t_dead=$(now_ms)
for i in $(seq 3000); do rel=$(ctx_field "$id" released); [ "${rel:-0}" != 0 ] && break; sleep 0.01; done
[ "${rel:-0}" != 0 ] || fail "the watcher did not record the release"
# the watcher records when it wakes: scheduling latency, up to seconds on a loaded machine
# (nothing reads the context here, so a first reader cannot have recorded it)
[ "$rel" -ge "$t_kill" ] && [ "$rel" -le $((t_dead + 2000)) ] ||
        fail "release recorded at $rel, the last holder was killed in [$t_kill, $t_dead] ms"
for i in $(seq 3000); do is_dead "$wt" && break; sleep 0.01; done
is_dead "$wt" || fail "the watcher is still running after the release"

note "freed linearly over $((D / 1000)) s (1 GiB x $D ms): partly freed at the first read, falling, 0 at the end"
size=$((1024 * MIB))
sleep 1
prev=$((size + 1)) n_pos=0
while :; do
        tp=$(now_ms)
        u=$(used 0)
        tq=$(now_ms)
        # what is left at time t: size * (1 - (t - rel) / D), clamped at 0; the query read its
        # clock between tp and tq (1 MiB of slack for rounding)
        hi=$((size - size * (tp - rel) / D + MIB)) lo=$((size - size * (tq - rel) / D - MIB))
        [ "$lo" -lt 0 ] && lo=0
        [ "$hi" -lt 0 ] && hi=0
        [ "$u" -le "$hi" ] && [ "$u" -ge "$lo" ] ||
                fail "used $u at $((tp - rel))..$((tq - rel)) ms after the release, expected $lo..$hi"
        if [ "$u" -gt 0 ]; then
                [ "$u" -lt "$prev" ] || fail "used did not fall: $prev then $u"
                n_pos=$((n_pos + 1))
        fi
        [ "$n_pos" = 1 ] && [ "$u" -ge "$size" ] && fail "nothing freed 1 s after the release (first read: $u)"
        echo "    $((tp - rel)) ms after the release: used $((u / MIB)) MiB"
        prev=$u
        [ "$((tp - rel))" -gt $((D + 300)) ] && break
        sleep 0.3
done
[ "$n_pos" -ge 3 ] || fail "only $n_pos samples while the memory was being freed"
assert_eq "$u" 0 "used after the delay"
assert_eq "$(ctx_field "$id" released)" "" "a freed context is forgotten"

note "a killed watcher: the first reader times the release (the fallback)"
sim_run --gpu 0 --mib 1024
id=$(grep -o '^ctx=[0-9]*' "$SIM/contexts" | tail -1 | cut -d= -f2)
wt=$(ctx_field "$id" watcher)
kill_wait "$wt"
kill_wait "$OWNER"
sleep 1
t0=$(now_ms)
assert_eq "$(used 0)" "$size" "the first read after the release: nothing freed yet"
rel=$(ctx_field "$id" released)
[ "$rel" -ge "$t0" ] || fail "release recorded at $rel, before the first read at $t0"
sleep 1.5
u=$(used 0)
[ "$u" -gt 0 ] && [ "$u" -lt "$size" ] || fail "used $u half-way through the delay"
"$GV_BIN" sim status "$SIM" | grep >/dev/null -E "context $id: 1024 MiB, released, [0-9]+ MiB left, freed in" ||
        fail "sim status does not show the teardown: $("$GV_BIN" sim status "$SIM")"

note "--busy: the owner's death logs Xid 45 naming it, while a worker still keeps the context"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=0
rm -f "$SIM/kmsg"
sim_run --gpu 1 --mib 1024 --workers 1 --busy
sleep 0.3
[ -e "$SIM/kmsg" ] && fail "Xid logged while the owner lives: $(cat "$SIM/kmsg")"
kill_wait "$OWNER"
wait_for_line "$SIM/kmsg" "Xid"
grep -qE "^3,[0-9]+,[0-9]+,-;NVRM: Xid \(PCI:0000:43:00\): 45, pid=$OWNER, name=gv-simcuda, Ch 00000010\$" "$SIM/kmsg" ||
        fail "Xid 45 line: $(cat "$SIM/kmsg")"
assert_eq "$(used 1)" $((1024 * MIB)) "used: the worker keeps the context"
X=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid --json)
jq -e --argjson p "$OWNER" '[.events[] | select(.xid == 45 and .pid == $p and .gpu_index == 1 and .process_name == "gv-simcuda")] | length == 1' <<<"$X" >/dev/null ||
        fail "ghostvram xid does not read the Xid 45: $X"
set +e
S=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms)
set -e
assert_eq "$(jq -r '.gpus[] | select(.index == 1) | .verdict' <<<"$S")" orphaned-holders "scan's verdict"
jq -r '.gpus[] | select(.index == 1) | .findings[].evidence[]' <<<"$S" |
        grep -q "Xid 45 .* for PID $OWNER (gv-simcuda): the driver tore its channels down" || fail "scan's Xid 45 evidence: $S"
kill_wait "${WORKERS[0]}"
sleep 0.3
assert_eq "$(grep -c Xid "$SIM/kmsg")" 1 "Xid lines after the release (one per death)"
sim_run --gpu 1 --mib 256 --busy
kill_wait "$OWNER"
for i in $(seq 200); do [ "$(grep -c Xid "$SIM/kmsg")" = 2 ] && break; sleep 0.01; done
assert_eq "$(grep -c Xid "$SIM/kmsg")" 2 "a second Xid 45"
s1=$(sed -n 1p "$SIM/kmsg" | cut -d, -f2) s2=$(sed -n 2p "$SIM/kmsg" | cut -d, -f2)
assert_eq "$s2" $((s1 + 1)) "sequence numbers follow"
grep -q "pid=$OWNER," "$SIM/kmsg" || fail "the second Xid names $OWNER"

note "without --busy a kill logs nothing"
sim_run --gpu 1 --mib 256
id=$(grep -o '^ctx=[0-9]*' "$SIM/contexts" | tail -1 | cut -d= -f2)
wt=$(ctx_field "$id" watcher)
kill_wait "$OWNER"
for i in $(seq 200); do is_dead "$wt" && break; sleep 0.01; done
is_dead "$wt" || fail "the watcher is still running"
assert_eq "$(grep -c Xid "$SIM/kmsg")" 2 "Xid lines after a job without pending work"
echo PASS
