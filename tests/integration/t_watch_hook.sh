#!/usr/bin/env bash
# ghostvram watch: a hook that runs too long is stopped (with its children) and watch goes on;
# usage errors (--reclaim has its own test, t_watch_reclaim); SIGINT stops it (exit 0);
# --json lines; a hung driver is reported once, never hangs the loop.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

sim_new --gpus 1 --memory 16384 --reserved 512

note "usage errors"
for bad in "--reclaim-every 10ms" "--interval 10ms" "--interval x" "--for -1s" "--threshold abc" "--exec-timeout 0" "--count 0" "--gpu -1" "extra"; do
        rc=0
        # shellcheck disable=SC2086
        GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch $bad >/dev/null 2>&1 || rc=$?
        assert_eq "$rc" 2 "watch $bad"
done

note "a hook that runs too long is stopped with its children; watch carries on"
sim_run --gpu 0 --mib 1024 --workers 1
kill_wait "$OWNER"
LOG="$GV_TMP/watch.log"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch --interval 300ms --for 0 --exec-timeout 1s \
        --exec "echo \$\$ > '$GV_TMP/hook.pid'; sleep 300 & echo \$! > '$GV_TMP/child.pid'; wait" >"$LOG" 2>&1 &
WATCH=$!
track "$WATCH"
wait_until 20 grep -q "ALERT GPU 0: 1024 MiB ghost" "$LOG" || fail "no alert: $(cat "$LOG")"
wait_until 20 grep -q "the hook ran longer than 1 s; stopping it" "$LOG" || fail "the hook was not stopped: $(cat "$LOG")"
hook=$(cat "$GV_TMP/hook.pid")
child=$(cat "$GV_TMP/child.pid")
track "$hook" "$child"
wait_until 10 is_dead "$child" || fail "the hook's child survived"
is_dead "$hook" || fail "the hook survived"
kill_wait "${WORKERS[@]}"
wait_until 20 grep -q "CLEAR GPU 0" "$LOG" || fail "watch did not carry on after the hook: $(cat "$LOG")"

note "SIGINT stops it cleanly"
stop_within 15 "$WATCH" INT

note "the hook's environment is made before the fork: nothing but async-signal-safe calls until exec"
: "${GV_FORKCHECK:?GV_FORKCHECK must name the gv-forkcheck preload library}"
sim_run --gpu 0 --mib 1024 --workers 1
kill_wait "$OWNER"
LOG3="$GV_TMP/watch3.log"
# an ASan build wants its runtime first in the library list: preloading before it is fine here
asan_opts=${ASAN_OPTIONS:-}
# (ldd's whole output first: `ldd | grep -q` under pipefail fails when grep quits before ldd
# has written its last line, and the option was then sometimes missing)
case $(ldd "$GV_BIN") in *libasan*) asan_opts="${asan_opts:+$asan_opts:}verify_asan_link_order=0" ;; esac
ASAN_OPTIONS="$asan_opts" LD_PRELOAD="$GV_FORKCHECK" GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch --interval 300ms --for 0 \
        --exec "echo \"\$GHOSTVRAM_EVENT \$GHOSTVRAM_GPU \$GHOSTVRAM_GHOST_BYTES \$GHOSTVRAM_VERDICT\" >> '$GV_TMP/env.txt'" \
        >"$LOG3" 2>&1 &
W3=$!
track "$W3"
wait_until 20 test -s "$GV_TMP/env.txt" || fail "the hook did not run: $(cat "$LOG3")"
stop_within 15 "$W3" INT
grep -q "forkcheck:" "$LOG3" && fail "a call that is not async-signal-safe between fork and exec: $(cat "$LOG3")"
assert_eq "$(head -1 "$GV_TMP/env.txt")" "alert 0 $((1024 * MIB)) orphaned-holders" "the hook's environment"
kill_wait "${WORKERS[@]}"

note "--json and --count: one object a line"
out=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch --json --count 2 --interval 200ms)
assert_eq "$(jq -sc 'map(.event)' <<<"$out")" '["state"]' "events of an idle GPU"
assert_eq "$(jq -r '.verdict' <<<"$out")" ok "verdict in JSON"
assert_eq "$(jq -r '.ghost_bytes' <<<"$out")" 0 "ghost bytes in JSON"

note "a hung driver: reported once, the loop keeps its pace and stops on SIGTERM"
"$GV_BIN" sim set "$SIM" hang=any
LOG2="$GV_TMP/watch2.log"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch --interval 300ms --call-timeout 500ms >"$LOG2" 2>&1 &
W2=$!
track "$W2"
wait_until 20 grep -q "scan error: the NVIDIA driver did not answer in time" "$LOG2" || fail "no error line: $(cat "$LOG2")"
sleep 2
[ "$(grep -c "scan error" "$LOG2")" -eq 1 ] || fail "the error is printed once: $(cat "$LOG2")"
# stopped without a single good sample: exit 3, and it says so
kill -TERM "$W2"
wait_until 10 is_dead "$W2" || fail "watch did not stop on SIGTERM"
rc=0
wait "$W2" || rc=$?
assert_eq "$rc" 3 "exit status of a watch that never got a good sample"
grep -q "ghostvram watch: no sample succeeded: scan error: the NVIDIA driver did not answer in time" "$LOG2" ||
        fail "no final word: $(cat "$LOG2")"
"$GV_BIN" sim set "$SIM" hang=none

note "no driver at all: --count 2 ends with 3; with the driver, 0"
rc=0
env -u GHOSTVRAM_SIM "$GV_BIN" watch --count 2 --interval 1s --nvml-lib "$GV_TMP/none/libnvidia-ml.so.1" \
        >"$GV_TMP/nd.out" 2>"$GV_TMP/nd.err" || rc=$?
assert_eq "$rc" 3 "watch without a driver"
grep -q "no sample succeeded: scan error: cannot load NVML library" "$GV_TMP/nd.err" || fail "message: $(cat "$GV_TMP/nd.err")"
rc=0
GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch --count 1 >/dev/null 2>&1 || rc=$?
assert_eq "$rc" 0 "watch with a driver"
echo "PASS"
