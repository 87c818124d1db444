#!/usr/bin/env bash
# ghostvram track under a stop signal. SIGTERM, SIGHUP, SIGINT or SIGQUIT sent to track by a
# process (`track -- CMD & kill -TERM $!`) reaches CMD; track waits for it, writes the whole
# report (the leak of a process that exited before, the signal, CMD's status) and exits as CMD
# did (128+N). A CMD that ends well on the signal gives its own status; one that ignores it is
# reported still running 5 s later (exit 128+N, JSON command_running). The terminal's ^C
# reaches CMD once: track does not send it a second time.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/track_lib.sh"
need_tool jq jq
need_tool python3 python3

sim_new --gpus 1
LEDGER="$GV_TMP/ledger"
# CMD: a CUDA process leaks 3 MiB and exits, then CMD becomes `sleep 60` (its PID stays CMD's)
LEAK_THEN_SLEEP="\"$GV_SIMALLOC\" --dir \"$SIM\" --gpu 0 --allocs 3 --size $MIB >/dev/null && exec sleep 60"

# started LAUNCHER-PID: TRACK (track's PID) and CMD (its child) once CMD has become sleep
started() {
        TRACK=$1 CMD=""
        track "$TRACK"
        local i comm=""
        for i in $(seq 3000); do
                CMD=$(pgrep -P "$TRACK" | head -1) || true
                [ -n "$CMD" ] && comm=$(cat "/proc/$CMD/comm" 2>/dev/null) && [ "$comm" = sleep ] && break
                sleep 0.01
        done
        [ "$comm" = sleep ] || fail "track's command did not start (child '$CMD', comm '$comm')"
        track "$CMD"
}

# finish: wait for track; RC its status, MS how long it took after the signal
finish() {
        RC=0
        wait "$TRACK" || RC=$?
        MS=$(($(now_ms) - T0))
}

leak_line='^PID [0-9]+ \(gv-simalloc\) exited with 3 MiB in 3 allocations never freed:$'
summary='LEAK SUMMARY: 3 MiB (3145728 bytes) leaked in 3 allocations by 1 tracked process'

note "the issue's scenario: track -- CMD & kill -TERM \$!: CMD ends, the report is whole, exit 143"
"$GV_BIN" track --ledger-dir "$LEDGER" --report "$GV_TMP/r.txt" -- sh -c "$LEAK_THEN_SLEEP" &
started $!
T0=$(now_ms)
kill -TERM "$TRACK"
finish
assert_eq "$RC" 143 "track's exit status after SIGTERM"
is_dead "$CMD" || fail "the command (PID $CMD) still runs after track got SIGTERM"
[ "$MS" -lt 4000 ] || fail "track took $MS ms to end after its command was killed"
grep -Eq "$leak_line" "$GV_TMP/r.txt" || fail "the report lacks the leak: $(cat "$GV_TMP/r.txt")"
assert_eq "$(tail -1 "$GV_TMP/r.txt")" \
        "$summary; SIGTERM passed on to the command; command exit status 143" "the report's last line"

note "SIGHUP, SIGINT, SIGQUIT alike (track started with them not ignored, as a foreground job is)"
for sig in HUP INT QUIT; do
        rm -f "$LEDGER"/*.gvl
        env --default-signal=INT,QUIT "$GV_BIN" track --ledger-dir "$LEDGER" --report "$GV_TMP/r.txt" -- \
                sh -c "$LEAK_THEN_SLEEP" &
        started $!
        T0=$(now_ms)
        kill -"$sig" "$TRACK"
        finish
        want=$((128 + $(kill -l "$sig")))
        assert_eq "$RC" "$want" "track's exit status after SIG$sig"
        is_dead "$CMD" || fail "the command still runs after track got SIG$sig"
        grep -Eq "$leak_line" "$GV_TMP/r.txt" || fail "SIG$sig: the report lacks the leak: $(cat "$GV_TMP/r.txt")"
        assert_eq "$(tail -1 "$GV_TMP/r.txt")" \
                "$summary; SIG$sig passed on to the command; command exit status $want" "SIG$sig: the report's last line"
done

note "a command that ends well on SIGTERM: its status (0), and the report says the signal was passed on"
"$GV_BIN" track --ledger-dir "$LEDGER" --report "$GV_TMP/r.txt" -- \
        sh -c 'trap "kill \$!; exit 0" TERM; sleep 60 & wait' &
TRACK=$!
track "$TRACK"
for i in $(seq 3000); do pgrep -P "$(pgrep -P "$TRACK" | head -1)" -x sleep >/dev/null 2>&1 && break; sleep 0.01; done
T0=$(now_ms)
kill -TERM "$TRACK"
finish
assert_eq "$RC" 0 "track's exit status: the command's"
assert_eq "$(tail -1 "$GV_TMP/r.txt")" \
        "LEAK SUMMARY: 0 MiB (0 bytes) leaked in 0 allocations by 0 tracked processes; SIGTERM passed on to the command; command exit status 0" \
        "the report's last line"

note "a command that ignores SIGTERM: reported still running 5 s later, exit 143, left running"
rm -f "$LEDGER"/*.gvl
"$GV_BIN" track --json --ledger-dir "$LEDGER" --report "$GV_TMP/r.json" -- \
        sh -c "trap '' TERM; $LEAK_THEN_SLEEP" &
started $!
T0=$(now_ms)
kill -TERM "$TRACK"
finish
assert_eq "$RC" 143 "track's exit status"
[ "$MS" -ge 4500 ] && [ "$MS" -lt 15000 ] || fail "track waited $MS ms for a command that ignores SIGTERM (5 s expected)"
is_dead "$CMD" && fail "the command that ignores SIGTERM was ended"
assert_eq "$(jq -c '[.exit_status, .forwarded_signal, .command_running, .leaked_bytes]' "$GV_TMP/r.json")" \
        "[143,\"SIGTERM\",true,$((3 * MIB))]" "the JSON report"
kill_wait "$CMD"

note "no signal: the JSON report says none"
"$GV_BIN" track --json --ledger-dir "$LEDGER" --report "$GV_TMP/r.json" -- true
assert_eq "$(jq -c '[.exit_status, .forwarded_signal, .command_running]' "$GV_TMP/r.json")" "[0,null,false]" \
        "the JSON report of a plain run"

note "^C on the terminal: the command gets SIGINT once (track does not send it again), the report follows"
# count_int READY: exits with the number of SIGINTs it got (waits for one, then 0.5 s more)
cat >"$GV_TMP/count_int.py" <<'PY'
import signal, sys, time
n = 0
def got(s, f):
    global n
    n += 1
signal.signal(signal.SIGINT, got)
open(sys.argv[1], "w").close()
end = time.monotonic() + 20
while n == 0 and time.monotonic() < end:
    time.sleep(0.01)
time.sleep(0.5)
sys.exit(n)
PY
# on_tty READY CMD...: CMD as the foreground job of a new pseudo-terminal; ^C typed once READY
# exists; exits with CMD's status (128+N for a signal)
cat >"$GV_TMP/on_tty.py" <<'PY'
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
end = time.monotonic() + 20
while not os.path.exists(sys.argv[1]) and time.monotonic() < end:
    time.sleep(0.01)
os.write(fd, b"\x03")
while True:
    try:
        if not os.read(fd, 4096):
            break
    except OSError:
        break
_, st = os.waitpid(pid, 0)
sys.exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))
PY
RC=0
timeout 60 python3 "$GV_TMP/on_tty.py" "$GV_TMP/ready" "$GV_BIN" track --ledger-dir "$LEDGER" --report "$GV_TMP/r.txt" -- \
        python3 "$GV_TMP/count_int.py" "$GV_TMP/ready" || RC=$?
assert_eq "$RC" 1 "SIGINTs the command got from one ^C (track's exit status, the command's)"
grep -q "; command exit status 1$" "$GV_TMP/r.txt" || fail "the report after ^C: $(cat "$GV_TMP/r.txt")"
grep -q "passed on" "$GV_TMP/r.txt" && fail "the terminal's ^C was passed on again: $(cat "$GV_TMP/r.txt")"
echo PASS
