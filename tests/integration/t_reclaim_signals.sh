#!/usr/bin/env bash
# reclaim's report as it happens, and under a stop signal. With the simulator's slow teardown
# (free_delay_ms_per_gib=20000: 1 GiB comes back over 20 s) `reclaim --yes >out` shows the plan,
# each signal and result and a memory line each second while it waits, not only at the end;
# --json-stream writes one JSON object a line (plan, action, sample, result). SIGTERM, SIGHUP or
# SIGINT stops it: no signal is sent after the stop (a worker that ignores SIGTERM keeps running:
# no SIGKILL follows), the report says what was done and what is left, text or JSON, and the exit
# status is 128+N; a stop during the scan or at the last step before the first signal signals
# nothing.
. "$(dirname "$0")/lib.sh"
need_tool jq jq
need_tool python3 python3
: "${GV_BIN_HOOKS:?GV_BIN_HOOKS must name ghostvram-testhooks (the build with the test hooks)}"
VOCAB="$(dirname "$0")/json_vocabulary.py"

sim_new --gpus 6 --memory 16384 --reserved 512
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=20000 >/dev/null
OUT="$GV_TMP/out"

# a killed job on GPU $1 whose two workers hold 1024 MiB (a GPU of its own each time: the
# teardown of the one before takes 20 s)
ghost() {
        G=$1
        sim_run --gpu "$G" --mib 1024 --workers 2
        kill_wait "$OWNER"
        assert_eq "$(used "$G")" $((1024 * MIB)) "the ghost on GPU $G"
}
# start reclaim in the background (stdout to OUT): BG, T0
start() { # BINARY ARGS...
        local bin=$1
        shift
        : >"$OUT"
        T0=$(now_ms)
        GHOSTVRAM_SIM="$SIM" "$bin" reclaim --confirm 300ms --gpu "$G" "$@" >"$OUT" 2>"$GV_TMP/err" &
        BG=$!
        track "$BG"
}
stop() { # SIGNAL: RC after it
        kill -"$1" "$BG"
        RC=0
        wait "$BG" || RC=$?
}
wait_out() { wait_for_line "$OUT" "$1"; }

note "the issue's scenario: reclaim --yes >out shows its lines as they happen"
ghost 1
start "$GV_BIN" --yes --grace 2s
wait_out "SIGTERM to PID ${WORKERS[0]} "
MS=$(($(now_ms) - T0))
note "   plan and first signal in out after $MS ms (the scan's confirming sample alone is 300 ms)"
[ "$MS" -lt 2500 ] || fail "the first lines took $MS ms to reach the file"
grep -q "^Plan:" "$OUT" || fail "no plan before acting: $(cat "$OUT")"
grep -qE "^    PID ${WORKERS[0]} +gv-simcuda" "$OUT" || fail "the plan does not name worker ${WORKERS[0]}"
wait_out "PID ${WORKERS[1]} (gv-simcuda): terminated"
wait_out "GPU 1: [0-9]* MiB used (1024 MiB expected back)"
kill -0 "$BG" 2>/dev/null || fail "reclaim ended already: the memory cannot be back yet ($(cat "$OUT"))"
grep -q "^Memory recovered\|^Stopped" "$OUT" && fail "the summary came before the end"

note "SIGTERM while the memory comes back: the report of what was done, exit 143"
sleep 1.2
stop TERM
assert_eq "$RC" 143 "exit status after SIGTERM"
grep -qE "^Stopped by SIGTERM [0-9.]+ s after the first signal: 2 of 2 processes ended; no signal was sent after the stop\.$" "$OUT" ||
        fail "the summary: $(tail -3 "$OUT")"
grep -qE "^  PID ${WORKERS[0]} +terminated " "$OUT" || fail "the actions: $(cat "$OUT")"
grep -qE "^  GPU 1  1024 MiB → [0-9]+ MiB  freed [0-9]+ MiB  not back yet when reclaim was stopped after" "$OUT" ||
        fail "the memory line: $(grep "GPU 1" "$OUT")"
assert_eq "$(grep -c "^Plan:" "$OUT")" 1 "the plan is printed once"
for w in "${WORKERS[@]}"; do is_dead "$w" || fail "worker $w survived"; done

note "--json: one document at the end, also after SIGHUP (exit 129)"
ghost 2
start "$GV_BIN" --yes --json --grace 2s
for _ in $(seq 300); do [ "$(used 2)" -lt $((1024 * MIB)) ] && break; sleep 0.05; done
[ "$(used 2)" -lt $((1024 * MIB)) ] || fail "no worker ended before the SIGHUP"
sleep 0.5
stop HUP
assert_eq "$RC" 129 "exit status after SIGHUP"
R=$(cat "$OUT")
assert_eq "$(jq -r .stopped_by <<<"$R")" HUP "stopped_by"
jq -e '.stopped_after_seconds > 0' <<<"$R" >/dev/null || fail "stopped_after_seconds: $R"
assert_eq "$(jq -r .exit_status <<<"$R")" 129 "exit_status in the document"
assert_eq "$(jq -r '[.actions[].result] | join(" ")' <<<"$R")" "terminated terminated" "results"
assert_eq "$(jq -r '.gpus[] | select(.index == 2) | .recovered' <<<"$R")" false "not recovered when stopped"

note "--json-stream: a JSON object a line as it happens; SIGTERM: the last line is the result"
ghost 3
start "$GV_BIN" --yes --json-stream --grace 2s
wait_out '"event":"sample".*"gpu_index":3,"before":false'
stop TERM
assert_eq "$RC" 143 "exit status after SIGTERM"
while IFS= read -r line; do jq -e . <<<"$line" >/dev/null || fail "not one JSON object: $line"; done <"$OUT"
assert_eq "$(jq -r .event "$OUT" | uniq | tr '\n' ' ')" "plan sample action sample result " "the events in order"
assert_eq "$(jq -r 'select(.event == "plan") | [.plan.targets[].pid] | sort | join(" ")' "$OUT")" \
        "$(printf '%s\n' "${WORKERS[@]}" | sort -n | tr '\n' ' ' | sed 's/ $//')" "the plan's targets"
assert_eq "$(jq -r 'select(.event == "action" and .action == "signal") | .signal' "$OUT" | sort -u)" TERM "signals sent"
assert_eq "$(jq -r 'select(.event == "action" and .action == "result") | .result' "$OUT" | sort -u)" terminated "results"
assert_eq "$(tail -1 "$OUT" | jq -r '.stopped_by + " " + (.exit_status | tostring)')" "TERM 143" "the result line"
python3 "$VOCAB" "reclaim --json-stream=$OUT" >/dev/null || fail "the stream breaks the JSON vocabulary"

note "workers that ignore SIGTERM, stopped during the grace: no SIGKILL follows, they are left (SIGINT: 130)"
trap '' TERM # the job inherits an ignored SIGTERM
ghost 4
trap - TERM
grep -qE '^SigIgn:.*[4-7]...$' "/proc/${WORKERS[0]}/status" || fail "worker does not ignore SIGTERM"
: >"$OUT"
GHOSTVRAM_SIM="$SIM" env --default-signal=INT "$GV_BIN" reclaim --confirm 300ms --gpu 4 --yes --json-stream --grace 30s \
        --wait 60s >"$OUT" 2>"$GV_TMP/err" &
BG=$!
track "$BG"
wait_out '"action":"signal".*"pid":'"${WORKERS[1]},"
wait_out '"action":"signal".*"pid":'"${WORKERS[0]},"
stop INT
assert_eq "$RC" 130 "exit status after SIGINT"
R=$(tail -1 "$OUT")
assert_eq "$(jq -r .stopped_by <<<"$R")" INT "stopped_by"
for w in "${WORKERS[@]}"; do
        assert_eq "$(jq -r ".actions[] | select(.pid == $w) | .result" <<<"$R")" left "worker $w's result"
        assert_eq "$(jq -r ".actions[] | select(.pid == $w) | .signals | join(\",\")" <<<"$R")" TERM "worker $w's signals"
        is_dead "$w" && fail "worker $w was ended after the stop"
done
jq -r .summary <<<"$R" | grep -qE "^Stopped by SIGINT .*: 0 of 2 processes ended; left: PID ${WORKERS[0]}, ${WORKERS[1]}; no signal" ||
        fail "the summary: $(jq -r .summary <<<"$R")"
kill_wait "${WORKERS[@]}"

note "a stop at the last step before the first signal: nothing is signalled"
ghost 5
PAUSE="$GV_TMP/pause"
: >"$OUT"
GHOSTVRAM_TEST_PAUSE="open:$PAUSE" GHOSTVRAM_SIM="$SIM" "$GV_BIN_HOOKS" reclaim --confirm 300ms --gpu 5 --yes >"$OUT" \
        2>"$GV_TMP/err" &
BG=$!
track "$BG"
for _ in $(seq 1000); do [ -e "$PAUSE.ready" ] && break; sleep 0.01; done
[ -e "$PAUSE.ready" ] || fail "reclaim did not reach the pause"
kill -TERM "$BG"
sleep 0.2
touch "$PAUSE.go"
RC=0
wait "$BG" || RC=$?
assert_eq "$RC" 143 "exit status"
grep -q "SIGTERM to PID" "$OUT" && fail "a signal was sent after the stop: $(cat "$OUT")"
grep -qE "^  PID ${WORKERS[0]} +left .*not signalled: reclaim was stopped first" "$OUT" || fail "the actions: $(cat "$OUT")"
grep -q "^Stopped by SIGTERM .*: 0 of 2 processes ended; left: PID" "$OUT" || fail "the summary: $(tail -2 "$OUT")"
for w in "${WORKERS[@]}"; do is_dead "$w" && fail "worker $w was signalled"; done

note "a stop during the scan: nothing is done, at once"
start "$GV_BIN" --yes --confirm 10s
wait_out "^Scanning (a ghost is confirmed by a second sample 10 s after the first) \.\.\.$"
MS=$(($(now_ms) - T0))
note "   the first line after $MS ms (the plan needs the confirming sample, 10 s later)"
[ "$MS" -lt 1000 ] || fail "the first line took $MS ms"
sleep 1
T1=$(now_ms)
stop TERM
MS=$(($(now_ms) - T1))
assert_eq "$RC" 143 "exit status"
[ "$MS" -lt 1000 ] || fail "reclaim took $MS ms to stop during its scan"
assert_eq "$(tail -1 "$OUT")" "Stopped by SIGTERM before acting: nothing was signalled." "the summary"
for w in "${WORKERS[@]}"; do is_dead "$w" && fail "worker $w was signalled"; done
kill_wait "${WORKERS[@]}"

note "--grace none (top's k): only the first signal; a worker that ignores SIGTERM is left, said so, exit 1; SIGKILL then ends it"
sim_new --gpus 1 --memory 16384 --reserved 512
trap '' TERM
sim_run --gpu 0 --mib 1024 --workers 2
trap - TERM
kill_wait "$OWNER"
W=${WORKERS[0]}
RC=0
GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --pid "$W" --signal TERM --grace none --wait 2s --confirm 200ms --yes --json \
        >"$OUT" 2>"$GV_TMP/err" || RC=$?
assert_eq "$RC" 1 "exit status: the process did not end"
assert_eq "$(jq -r '[.grace_seconds, (.actions[] | .pid, .result, (.signals | join(",")))] | map(tostring) | join(" ")' "$OUT")" \
        "null $W survived TERM" "the action: SIGTERM only, survived"
jq -r '.actions[0].detail' "$OUT" | grep -qF "no SIGKILL was sent (--grace none)" || fail "the detail: $(cat "$OUT")"
is_dead "$W" && fail "worker $W was killed"
is_dead "${WORKERS[1]}" && fail "worker ${WORKERS[1]} was signalled (not named)"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --pid "$W" --signal TERM --grace none --wait 2s --confirm 200ms >"$OUT" 2>&1 || true
grep -qF "Dry run: 1 process would get SIGTERM (no SIGKILL: --grace none)." "$OUT" || fail "the dry run: $(cat "$OUT")"
RC=0
GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --pid "$W" --signal KILL --grace none --wait 2s --confirm 200ms --yes --json \
        >"$OUT" 2>"$GV_TMP/err" || RC=$?
assert_eq "$(jq -r '.actions[0].result' "$OUT")" killed "SIGKILL ends it"
for _ in $(seq 200); do is_dead "$W" && break; sleep 0.01; done
is_dead "$W" || fail "worker $W survived SIGKILL"
kill_wait "${WORKERS[@]}"
echo "PASS"
