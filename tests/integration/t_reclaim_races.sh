#!/usr/bin/env bash
# reclaim against targets that do not behave: one ignores SIGTERM (SIGKILL after the grace), one
# ends by itself between the check and the signal, one is gone before reclaim opens it, one's
# PID is reused by an unrelated process between the plan and the act (never signalled); and a
# second reclaim while one runs (exit 3). The test hook GHOSTVRAM_TEST_PAUSE=STAGE:FILE stops
# reclaim at a stage ("plan": before any pidfd is opened; "open": after the re-checks) until
# FILE.go exists. D state is covered by tests/unit/test_reclaim_act.c (a fake system): nothing
# here can put a real task in D state on purpose.
. "$(dirname "$0")/lib.sh"

: "${GV_BIN_HOOKS:?GV_BIN_HOOKS must name ghostvram-testhooks (the build with the test hooks)}"
reclaim() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 300ms "$@"; }
result_of() { jq -r ".actions[] | select(.pid == $1) | .result" <<<"$R"; }
signals_of() { jq -r ".actions[] | select(.pid == $1) | .signals | join(\",\")" <<<"$R"; }
# Start reclaim in the background, stopped at STAGE; sets BG (its PID) and PAUSE (the file).
reclaim_paused() {
        local stage=$1
        shift
        PAUSE="$GV_TMP/pause.$RANDOM"
        GHOSTVRAM_TEST_PAUSE="$stage:$PAUSE" GHOSTVRAM_SIM="$SIM" "$GV_BIN_HOOKS" reclaim --confirm 300ms --json "$@" \
                >"$PAUSE.out" 2>"$PAUSE.err" &
        BG=$!
        track "$BG"
        wait_for_file "$PAUSE.ready"
}
wait_for_file() {
        local i
        for i in $(seq 1000); do [ -e "$1" ] && return 0; sleep 0.01; done
        fail "no $1"
}
# Let the paused reclaim go on and collect its exit status (RC) and JSON (R).
reclaim_resume() {
        touch "$PAUSE.go"
        set +e
        wait "$BG"
        RC=$?
        set -e
        R=$(cat "$PAUSE.out")
}
gone() { # not even a zombie: the PID is free
        local i
        for i in $(seq 500); do [ -e "/proc/$1" ] || return 0; sleep 0.01; done
        return 1
}

sim_new --gpus 2 --memory 16384 --reserved 512

note "the shipped ghostvram carries no test hook: GHOSTVRAM_TEST_PAUSE does nothing there"
grep -q GHOSTVRAM_TEST_PAUSE "$GV_BIN" && fail "GHOSTVRAM_TEST_PAUSE is compiled into $GV_BIN"
grep -q GHOSTVRAM_TEST_PAUSE "$GV_BIN_HOOKS" || fail "the test build has no hook"
sim_run --gpu 0 --mib 256 --workers 1
kill_wait "$OWNER"
set +e
GHOSTVRAM_TEST_PAUSE="plan:$GV_TMP/nohook" GHOSTVRAM_SIM="$SIM" timeout 20 "$GV_BIN" reclaim --confirm 300ms --json \
        --yes --grace 1s --wait 5s >/dev/null 2>&1
rc=$?
set -e
assert_eq "$rc" 0 "the shipped binary did not pause"
[ -e "$GV_TMP/nohook.ready" ] && fail "the shipped binary paused for GHOSTVRAM_TEST_PAUSE"

note "a job whose processes ignore SIGTERM: SIGKILL after the grace period"
trap '' TERM    # ignored signals stay ignored across fork and exec: the job inherits it
sim_run --gpu 1 --mib 1024 --workers 2
trap - TERM
grep -qE '^SigIgn:.*[4-7]...$' "/proc/${WORKERS[0]}/status" || fail "worker does not ignore SIGTERM"
kill_wait "$OWNER"
set +e; R=$(reclaim --json --yes --grace 500ms --wait 10s); RC=$?; set -e
assert_eq "$RC" 0 "exit after SIGKILL"
for w in "${WORKERS[@]}"; do
        assert_eq "$(result_of "$w")" killed "result of $w"
        assert_eq "$(signals_of "$w")" TERM,KILL "signals to $w"
        jq -e ".actions[] | select(.pid == $w) | .seconds >= 0.5" <<<"$R" >/dev/null || fail "SIGKILL before the grace"
done
assert_eq "$(used 1)" 0 "memory back"

# A killed job with two workers; reclaim stopped at STAGE while the first worker is killed:
# its result is RESULT, the other one ends on SIGTERM.
first_worker_dies_at() { # STAGE RESULT
        sim_run --gpu 1 --mib 1024 --workers 2
        kill_wait "$OWNER"
        reclaim_paused "$1" --yes --grace 2s --wait 10s
        kill_wait "${WORKERS[0]}"
        reclaim_resume
        assert_eq "$RC" 0 "exit"
        assert_eq "$(result_of "${WORKERS[0]}")" "$2" "the worker that died at stage $1"
        assert_eq "$(signals_of "${WORKERS[0]}")" "" "no signal to it"
        assert_eq "$(result_of "${WORKERS[1]}")" terminated "the other one"
        assert_eq "$(used 1)" 0 "memory back"
}
note "a worker that ends by itself after the check, before the signal: exited"
first_worker_dies_at open exited
note "a worker gone before reclaim opens it: gone-before-signal"
first_worker_dies_at plan gone-before-signal

note "one reclaim at a time: a second one exits 3"
sim_run --gpu 1 --mib 1024 --workers 1
kill_wait "$OWNER"
reclaim_paused plan --yes
set +e; R2=$(reclaim --json --yes); RC2=$?; set -e
assert_eq "$RC2" 3 "second reclaim"
grep -q "another reclaim is running as PID $BG" <<<"$(jq -r '.notes[]' <<<"$R2")" || fail "lock message: $(jq -c .notes <<<"$R2")"
alive=1; is_dead "${WORKERS[0]}" && alive=0
assert_eq "$alive" 1 "the second reclaim did nothing"
set +e; reclaim --dry-run >/dev/null; assert_eq $? 0 "a dry run needs no lock"; set -e
reclaim_resume
assert_eq "$RC" 0 "the first one finished"
assert_eq "$(result_of "${WORKERS[0]}")" terminated "first reclaim acted"

note "a PID reused between the plan and the act is never signalled"
# Reusing a PID on purpose needs a PID namespace of our own (nothing else forks there) and a
# writable ns_last_pid (root).
if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
        skip "unshare --pid is not allowed here (tests/unit/test_reclaim_act.c covers the re-check)"
fi
cat >"$GV_TMP/reuse.sh" <<'EOF'
set -euo pipefail
out=$("$GV_BIN" sim run "$SIM" --gpu 0 --mib 1024 --workers 2)
owner=$(awk '/^owner/ {print $2}' <<<"$out")
w1=$(awk '/^worker/ {print $2; exit}' <<<"$out")
w2=$(awk '/^worker/ {p=$2} END {print p}' <<<"$out")
kill -9 "$owner"
while [ -e "/proc/$owner" ]; do sleep 0.01; done
GHOSTVRAM_TEST_PAUSE="plan:$P" GHOSTVRAM_SIM="$SIM" "$GV_BIN_HOOKS" reclaim --confirm 300ms --json --yes --grace 1s \
        --wait 10s >"$P.out" 2>"$P.err" &
bg=$!
for i in $(seq 1000); do [ -e "$P.ready" ] && break; sleep 0.01; done
kill -9 "$w1"
for i in $(seq 500); do [ -e "/proc/$w1" ] || break; sleep 0.01; done
if ! echo $((w1 - 1)) >/proc/sys/kernel/ns_last_pid 2>/dev/null; then
        echo "noreuse ns_last_pid not writable"
        touch "$P.go"; wait "$bg" || true; kill -9 "$w2" 2>/dev/null || true
        exit 0
fi
sleep 600 &
new=$!
touch "$P.go"
set +e; wait "$bg"; rc=$?; set -e
alive=yes; kill -0 "$new" 2>/dev/null || alive=no
echo "w1 $w1"; echo "w2 $w2"; echo "new $new"; echo "rc $rc"; echo "alive $alive"
kill -9 "$new" "$w2" 2>/dev/null || true
EOF
P="$GV_TMP/reuse"
out=$(GV_BIN="$GV_BIN" GV_BIN_HOOKS="$GV_BIN_HOOKS" SIM="$SIM" P="$P" unshare --pid --fork --mount-proc bash "$GV_TMP/reuse.sh")
echo "$out" | sed "s/^/    /"
if grep -q '^noreuse' <<<"$out"; then
        skip "$(grep '^noreuse' <<<"$out") (tests/unit/test_reclaim_act.c covers the re-check)"
else
        w1=$(awk '/^w1/ {print $2}' <<<"$out")
        new=$(awk '/^new/ {print $2}' <<<"$out")
        assert_eq "$new" "$w1" "the unrelated process got the worker's PID"
        R=$(cat "$P.out")
        assert_eq "$(result_of "$w1")" pid-reused "result for the reused PID"
        assert_eq "$(signals_of "$w1")" "" "no signal to the reused PID"
        grep -q "another process" <<<"$(jq -r ".actions[] | select(.pid == $w1) | .detail" <<<"$R")" || fail "detail"
        assert_eq "$(awk '/^alive/ {print $2}' <<<"$out")" yes "the unrelated process lives"
        assert_eq "$(result_of "$(awk '/^w2/ {print $2}' <<<"$out")")" terminated "the other worker"
        assert_eq "$(awk '/^rc/ {print $2}' <<<"$out")" 0 "exit status"
fi
echo "PASS"
