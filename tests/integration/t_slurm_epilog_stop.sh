#!/usr/bin/env bash
# deploy/slurm/epilog.sh stopped before its end keeps its audit log. The Epilog is run by hand
# as slurmd runs it (its own process group) on the simulated driver with a slow teardown, so
# that reclaim is still waiting for the memory when the Epilog is stopped; no Slurm is needed:
#   A. killed as slurmd kills an Epilog past PrologEpilogTimeout (SIGTERM to its process group,
#      SIGKILL 10 ms later): the log has reclaim's plan, its signals and their results, logged
#      as they happened (it used to log reclaim's output only once reclaim had finished);
#   B. its own time limit (GV_TIME_LIMIT) ends reclaim: reclaim's stop report is logged line by
#      line, then "exit 124".
. "$(dirname "$0")/lib.sh"
: "${GV_SRC:?GV_SRC must name the source tree}"
DS="$GV_SRC/deploy/slurm"

sim_new --gpus 2 --memory 16384 --reserved 512
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=8000 >/dev/null
SETTINGS="$GV_TMP/ghostvram-slurm.conf"
GVLOG="$GV_TMP/ghostvram-slurm.log"
settings() { # extra lines
        cat >"$SETTINGS" <<EOF
GHOSTVRAM=$GV_BIN
GHOSTVRAM_SIM=$SIM
GV_NODENAME=node-test
GV_CONFIRM=300ms
GV_GRACE=1s
GV_RECLAIM_WAIT=30s
GV_DRAIN=no
GV_LOG_FILE=$GVLOG
$1
EOF
}
log_has() { grep -qE -- "$1" "$GVLOG" || fail "the Epilog's log has no '$1':$(printf '\n%s' "$(cat "$GVLOG")")"; }
# epilog JOB: the Epilog in the background, leading its own process group (EPI: its PID)
epilog() {
        : >"$GVLOG"
        GHOSTVRAM_SLURM_CONF="$SETTINGS" SLURM_JOB_ID=$1 PATH="$PATH" setsid "$DS/epilog.sh" &
        EPI=$!
        track "$EPI"
}
ours() { # the reclaims on this test's host (the pidns twin runs the same binary on its own)
        local p
        for p in $(pgrep -f "$GV_BIN reclaim --gpu [0-9]" || true); do
                grep -qzxF "GHOSTVRAM_SIM=$SIM" "/proc/$p/environ" 2>/dev/null && echo "$p"
        done
        return 0
}
reclaim_gone() { # the reclaim the Epilog started (in timeout's process group) has ended
        for _ in $(seq 600); do [ -z "$(ours)" ] && return 0; sleep 0.1; done
        fail "reclaim still runs: $(ours)"
}

note "A. the Epilog killed as slurmd kills it at its time limit: the log keeps what reclaim did"
settings "GV_TIME_LIMIT=55"
sim_run --gpu 1 --mib 1024 --workers 2
kill_wait "$OWNER"
epilog 41
wait_for_line "$GVLOG" "reclaim GPU 1: .*PID ${WORKERS[1]} (gv-simcuda): terminated"
wait_for_line "$GVLOG" "reclaim GPU 1: .*PID ${WORKERS[0]} (gv-simcuda): terminated"
kill -TERM -- -"$EPI"
sleep 0.01
kill -KILL -- -"$EPI" 2>/dev/null || true
wait "$EPI" 2>/dev/null || true
log_has "epilog job 41: left behind: GPU 1 1024 MiB ghost \(orphaned-holders, PIDs $OWNER ${WORKERS[*]}\)"
log_has "epilog job 41: reclaim GPU 1: Plan:"
log_has "epilog job 41: reclaim GPU 1:     PID ${WORKERS[0]} +gv-simcuda \(state S\): worker of dead PID $OWNER"
log_has "epilog job 41: reclaim GPU 1:   \[ *[0-9.]+ s\] SIGTERM to PID ${WORKERS[0]} \(gv-simcuda\) through its pidfd"
log_has "epilog job 41: reclaim GPU 1:   \[ *[0-9.]+ s\] SIGTERM to PID ${WORKERS[1]} \(gv-simcuda\) through its pidfd"
for w in "${WORKERS[@]}"; do is_dead "$w" || fail "worker $w survived"; done
reclaim_gone

note "B. the Epilog's own time limit ends reclaim: its stop report is logged, then exit 124"
for _ in $(seq 300); do [ "$(used 1)" = 0 ] && break; sleep 0.1; done
[ "$(used 1)" = 0 ] || fail "A's memory did not come back before B"
settings "GV_TIME_LIMIT=10"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=60000 >/dev/null
sim_run --gpu 1 --mib 1024 --workers 2
kill_wait "$OWNER"
epilog 42
RC=0
wait "$EPI" || RC=$?
assert_eq "$RC" 0 "the Epilog's exit status"
log_has "epilog job 42: reclaim GPU 1:   \[ *[0-9.]+ s\] PID ${WORKERS[0]} \(gv-simcuda\): terminated"
log_has "epilog job 42: reclaim GPU 1: Stopped by SIGTERM [0-9.]+ s after the first signal: 2 of 2 processes ended; no signal was sent after the stop\.$"
log_has "epilog job 42: reclaim GPU 1: exit 124: GPU 1 1024 MiB → [0-9]+ MiB freed [0-9]+ MiB not back yet when reclaim was stopped"
reclaim_gone

note "C. a SIGTERM to the Epilog's process group (no SIGKILL after it) reaches reclaim: it stops, its report logged"
settings "GV_TIME_LIMIT=55"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=20000 >/dev/null
sim_run --gpu 0 --mib 1024 --workers 2
kill_wait "$OWNER"
epilog 43
wait_for_line "$GVLOG" "reclaim GPU 0: .*SIGTERM to PID ${WORKERS[1]} (gv-simcuda)"
[ -n "$(ours)" ] || fail "no reclaim of this host runs"
kill -TERM -- -"$EPI"
RC=0
wait "$EPI" || RC=$?
assert_eq "$RC" 0 "the Epilog's exit status"
log_has "epilog job 43: reclaim GPU 0: Stopped by SIGTERM [0-9.]+ s after the first signal"
log_has "epilog job 43: stopped by SIGTERM after [0-9]+ s"
reclaim_gone
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=0 >/dev/null
echo "PASS"
