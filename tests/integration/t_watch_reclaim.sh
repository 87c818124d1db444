#!/usr/bin/env bash
# watch --reclaim heals a simulated incident through reclaim's plan: the killed job's workers
# end, the memory comes back, the alert clears; a healthy job is untouched; and the rate limit
# holds a heal that does not heal (a worker that cannot be ended) to one attempt per period.
. "$(dirname "$0")/lib.sh"

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 512 --workers 1
HEALTHY=("$OWNER" "${WORKERS[@]}")
sim_run --gpu 1 --mib 1024 --workers 2
DEAD=$OWNER
ORPHANS=("${WORKERS[@]}")
kill_wait "$DEAD"

OUT="$GV_TMP/watch.json"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch --json --interval 500ms --for 0 --reclaim --no-kernel > "$OUT" 2>"$GV_TMP/err" &
W=$!
track "$W"
for _ in $(seq 300); do grep -q '"event":"clear"' "$OUT" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$W"
wait "$W" || true
grep -q '"event":"alert"' "$OUT" || fail "no alert: $(cat "$OUT" "$GV_TMP/err")"
grep -q '"event":"reclaim"' "$OUT" || fail "no reclaim: $(cat "$OUT" "$GV_TMP/err")"
grep -q '"event":"clear"' "$OUT" || fail "the alert did not clear: $(cat "$OUT")"
assert_eq "$(grep -c '"event":"reclaim"' "$OUT")" 1 "healed once"
grep -q 'RECLAIM GPU 1: 1024 MiB freed' "$OUT" || fail "reclaim line: $(grep reclaim "$OUT")"
# the line names what the heal signalled: the orphans, nothing else
sent=$(jq -r 'select(.event == "reclaim") | .message' "$OUT" | sed -n 's/.*; signalled PID \([0-9 ]*\)$/\1/p')
assert_eq "$(tr ' ' '\n' <<<"$sent" | sort -n | xargs)" "$(printf '%s\n' "${ORPHANS[@]}" | sort -n | xargs)" "PIDs the heal signalled"
for p in "${ORPHANS[@]}"; do is_dead "$p" || fail "orphan $p still runs"; done
for p in "${HEALTHY[@]}"; do is_dead "$p" && fail "healthy process $p was ended"; done
assert_eq "$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json | jq -r '.gpus[1].memory.used_bytes')" 0 "memory back"

note "a heal that cannot heal is tried once per --reclaim-every, not every sample"
# two ghosts while the driver hides dead owners: the orphans are candidates for each GPU, which
# reclaim never ends by default, so the alerts stand and watch must not retry every sample
sim_new --gpus 2 --memory 16384 --reserved 512
"$GV_BIN" sim set "$SIM" hidden_owner=on >/dev/null
sim_run --gpu 0 --mib 1024 --workers 1
kill_wait "$OWNER"
sim_run --gpu 1 --mib 1024 --workers 1
kill_wait "$OWNER"
OUT="$GV_TMP/watch2.json"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch --json --interval 300ms --for 0 --reclaim --reclaim-every 1h --no-kernel \
        > "$OUT" 2>"$GV_TMP/err2" &
W=$!
track "$W"
# the first attempt on each GPU (30 s at most), then 10 more samples' time, in which a watch
# that retried every sample would try again
for _ in $(seq 300); do
        grep -q "RECLAIM GPU 0:" "$OUT" && grep -q "RECLAIM GPU 1:" "$OUT" && break
        sleep 0.1
done
sleep 3
kill -TERM "$W"
wait "$W" || true
for g in 0 1; do
        n=$(grep -c "RECLAIM GPU $g:" "$OUT" || true)
        assert_eq "$n" 1 "one attempt on GPU $g per --reclaim-every: $(grep RECLAIM "$OUT")"
done
grep -q '"event":"clear"' "$OUT" && fail "nothing was healed, yet an alert cleared"
echo "PASS"
