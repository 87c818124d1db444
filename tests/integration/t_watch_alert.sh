#!/usr/bin/env bash
# ghostvram watch on the simulated driver: a job is killed, its workers keep 1024 MiB; watch
# prints the change, raises an alert only after --for, runs the hook with the finding in its
# environment (its output passed through), writes the textfile, clears when the workers end,
# and stops cleanly (exit 0) on SIGTERM.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024 --workers 2
TEXTDIR="$GV_TMP/textfile"
mkdir -p "$TEXTDIR"
HOOK='env | grep ^GHOSTVRAM_ | sort > "$HOOKDIR/$GHOSTVRAM_EVENT.env"; echo "hook says $GHOSTVRAM_EVENT for GPU $GHOSTVRAM_GPU"'
export HOOKDIR="$GV_TMP"
LOG="$GV_TMP/watch.log"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch --interval 300ms --threshold 512 --for 2s --exec "$HOOK" \
        --textfile "$TEXTDIR" >"$LOG" 2>&1 &
WATCH=$!
track "$WATCH"

note "first sample: one line per GPU"
wait_until 20 grep -q "GPU 0 ok, ghost 0 MiB" "$LOG" || fail "no first line for GPU 0: $(cat "$LOG")"
grep -q "GPU 1 ok, ghost 0 MiB" "$LOG" || fail "no first line for GPU 1"
grep -q "^watching every 0.3 s; alert when a confirmed ghost stays above 512 MiB for 2 s (then run --exec)" "$LOG" \
        || fail "no header line"
wait_until 20 test -s "$TEXTDIR/ghostvram.prom" || fail "no textfile"
grep -q "^ghostvram_gpu_memory_used_bytes{gpu=\"0\",.*kind=\"listed\"} 1073741824$" "$TEXTDIR/ghostvram.prom" \
        || fail "textfile: listed bytes"

note "kill -9 of the owner: a change line at once, the alert only after --for"
kill_wait "$OWNER"
t0=$SECONDS
wait_until 20 grep -q "GPU 0 orphaned-holders, ghost 1024 MiB (was " "$LOG" || fail "no change line: $(cat "$LOG")"
grep -q "ALERT" "$LOG" && fail "the alert came before --for had passed: $(cat "$LOG")"
wait_until 20 grep -q "ALERT GPU 0: 1024 MiB ghost above 512 MiB for [0-9]* s (orphaned-holders, PIDs $OWNER ${WORKERS[0]} ${WORKERS[1]})" "$LOG" \
        || fail "no alert: $(cat "$LOG")"
[ $((SECONDS - t0)) -ge 2 ] || fail "the alert came within $((SECONDS - t0)) s (--for 2s)"
wait_until 20 test -s "$GV_TMP/alert.env" || fail "the hook did not run"
wait_until 10 grep -q "^hook says alert for GPU 0$" "$LOG" || fail "the hook's output was not passed through"
env_of() { sed -n "s/^$2=//p" "$GV_TMP/$1.env"; }
assert_eq "$(env_of alert GHOSTVRAM_EVENT)" alert "hook: event"
assert_eq "$(env_of alert GHOSTVRAM_GPU)" 0 "hook: GPU"
assert_eq "$(env_of alert GHOSTVRAM_VERDICT)" orphaned-holders "hook: verdict"
assert_eq "$(env_of alert GHOSTVRAM_GHOST_BYTES)" $((1024 * MIB)) "hook: ghost bytes"
assert_eq "$(env_of alert GHOSTVRAM_PIDS)" "$OWNER ${WORKERS[0]} ${WORKERS[1]}" "hook: PIDs"
assert_eq "$(env_of alert GHOSTVRAM_THRESHOLD_BYTES)" $((512 * MIB)) "hook: threshold"
assert_eq "$(env_of alert GHOSTVRAM_PCI_BUS_ID)" "0000:1b:00.0" "hook: PCI bus id"
grep -q "^GHOSTVRAM_UUID=GPU-" "$GV_TMP/alert.env" || fail "hook: UUID"
grep -q "^GHOSTVRAM_NEXT_STEP=free it safely .*ghostvram reclaim --gpu 0\` .*kill -TERM ${WORKERS[0]} ${WORKERS[1]}" "$GV_TMP/alert.env" \
        || fail "hook: next step"
since=$(env_of alert GHOSTVRAM_SINCE)
[ "$since" -le "$(date +%s)" ] && [ "$since" -gt $(( $(date +%s) - 60 )) ] || fail "hook: since $since"
[ "$(grep -c ALERT "$LOG")" -eq 1 ] || fail "one alert, not one per sample"
wait_until 20 grep -q "^ghostvram_gpu_memory_used_bytes{gpu=\"0\",.*kind=\"ghost\"} 1073741824$" "$TEXTDIR/ghostvram.prom" \
        || fail "textfile: ghost bytes"
grep -q "^ghostvram_holder_info{gpu=\"0\",.*pid=\"${WORKERS[0]}\"" "$TEXTDIR/ghostvram.prom" || fail "textfile: holder"

note "the workers end: the memory returns and the alert clears"
kill_wait "${WORKERS[@]}"
# (the clearing sample may be one taken across the workers' deaths: its NVML figures from
# before, its holder walk from after. The previous cycle's holders are gone: a teardown in
# progress, freeing — never a ghost or an owner out of sight; the sample after it is ok, below)
wait_until 30 grep -qE "CLEAR GPU 0: ghost 0 MiB, not above 512 MiB any more \((ok|freeing)\)" "$LOG" || fail "no clear: $(cat "$LOG")"
wait_until 10 test -s "$GV_TMP/clear.env" || fail "the hook did not run on clear"
assert_eq "$(env_of clear GHOSTVRAM_EVENT)" clear "clear hook: event"
assert_eq "$(env_of clear GHOSTVRAM_GHOST_BYTES)" 0 "clear hook: ghost bytes"
wait_until 10 grep -qE "GPU 0 ok, ghost 0 MiB \(was (orphaned-holders|freeing), [0-9]+ MiB\)" "$LOG" || fail "no change line back to ok: $(cat "$LOG")"

note "SIGTERM: the sample in progress finishes, exit 0"
stop_within 10 "$WATCH" TERM
# (only once watch is gone: each cycle writes a temporary file beside it and renames it)
ls -a "$TEXTDIR" | grep -v '^\.\.\?$' | grep -qv '^ghostvram.prom$' && fail "textfile: a stray temporary file: $(ls -a "$TEXTDIR")"
echo "PASS"
