#!/usr/bin/env bash
# deploy/nhc/ghostvram.nhc against LBNL NHC's documented interface for checks (NHC is not
# packaged in Debian): the file is sourced into a bash shell that provides NHC's die(RC, MSG...)
# and log(), and check_ghostvram is called as nhc.conf would call it, on the simulated driver.
# A failing check calls die 1 with "check_ghostvram:  <what>" and returns 1; a passing one
# neither dies nor logs; an inspection failure is logged, and dies only with -e; the check
# leaves no variable behind in NHC's shell and stays within its time limit.
. "$(dirname "$0")/lib.sh"
: "${GV_SRC:?GV_SRC must name the source tree}"

# What NHC provides to a check (nhc: die() marks the node offline with the message; log()
# writes NHC's log).
DIED="" DIE_RC="" LOGGED=""
die() {
        DIE_RC=$1
        shift
        DIED="$*"
}
log() { LOGGED+="$*"$'\n'; }
dbg() { :; }
# shellcheck source=../../deploy/nhc/ghostvram.nhc
. "$GV_SRC/deploy/nhc/ghostvram.nhc"
declare -F check_ghostvram >/dev/null || fail "ghostvram.nhc defines no check_ghostvram"
GHOSTVRAM=$GV_BIN

# nhc.conf line "* || check_ghostvram ARGS": RC, DIED, DIE_RC, LOGGED
nhc() {
        DIED="" DIE_RC="" LOGGED=""
        local before after
        before=$(compgen -v | grep -vE '^(BASH_|FUNCNAME|LINENO|RANDOM|SECONDS|_$|PIPESTATUS|BASHPID|EPOCH|SRANDOM|RC$|before$|after$)' | sort)
        check_ghostvram "$@" && RC=0 || RC=$?
        after=$(compgen -v | grep -vE '^(BASH_|FUNCNAME|LINENO|RANDOM|SECONDS|_$|PIPESTATUS|BASHPID|EPOCH|SRANDOM|RC$|before$|after$)' | sort)
        [ "$before" = "$after" ] || fail "check_ghostvram $* left variables: $(comm -3 <(echo "$before") <(echo "$after") | tr '\n' ' ')"
}

sim_new --gpus 2 --memory 16384 --reserved 512
export GHOSTVRAM_SIM="$SIM"

note "a clean node passes, silently"
nhc
assert_eq "$RC/$DIED/$LOGGED" "0//" "clean node"

note "a killed job's workers hold 3072 MiB of GPU 1: die 1 with the ghost"
sim_run --gpu 1 --mib 3072 --workers 2
kill_wait "$OWNER"
nhc -c 300ms
assert_eq "$RC" 1 "check's return"
assert_eq "$DIE_RC" 1 "die's code"
assert_eq "$DIED" "check_ghostvram:  GPU 1: 3072 MiB ghost (orphaned-holders, PIDs $OWNER ${WORKERS[*]})" "die's message"
note "   -g 0 (the clean GPU) and -w 4096 (a ghost below the limit) pass"
nhc -c 300ms -g 0
assert_eq "$RC/$DIED" "0/" "-g 0"
nhc -c 300ms -w 4096
assert_eq "$RC/$DIED" "0/" "-w 4096"
nhc -c 300ms -w 2048
assert_eq "$RC" 1 "-w 2048"

note "inspection failures: logged, the node stays online; -e fails the check, saying so"
"$GV_BIN" sim set "$SIM" notsup=1:processes >/dev/null
nhc -c 300ms
assert_eq "$RC/$DIED" "0/" "no process list: not a failure"
grep -q "^check_ghostvram:  cannot inspect GPUs (node left online; -e to fail): GPU 1: no process list" <<<"$LOGGED" ||
        fail "logged: $LOGGED"
nhc -c 300ms -e
assert_eq "$RC" 1 "-e"
case $DIED in
"check_ghostvram:  cannot inspect GPUs: GPU 1: no process list"*) ;;
*) fail "-e message: $DIED" ;;
esac
"$GV_BIN" sim set "$SIM" notsup=none hang=any >/dev/null
t=$SECONDS
nhc -t 2 -c 300ms
[ $((SECONDS - t)) -le 5 ] || fail "a hung driver held the check $((SECONDS - t)) s (-t 2)"
assert_eq "$RC/$DIED" "0/" "hung driver: not a failure"
grep -q "cannot inspect GPUs (node left online; -e to fail): " <<<"$LOGGED" || fail "logged: $LOGGED"
"$GV_BIN" sim set "$SIM" hang=none >/dev/null

note "configuration errors die"
nhc -b /nonexistent/ghostvram
assert_eq "$RC/$DIED" "1/check_ghostvram:  /nonexistent/ghostvram not found or not runnable" "missing binary"
nhc -x
assert_eq "$RC/$DIED" "1/check_ghostvram:  unknown option -x" "unknown option"
nhc -w lots
assert_eq "$RC/$DIED" "1/check_ghostvram:  -w, -t and -g take whole numbers" "bad number"

note "reclaimed: passes again"
kill_wait "${WORKERS[@]}"
nhc -c 300ms
assert_eq "$RC/$DIED/$LOGGED" "0//" "after the workers ended"
echo "PASS"
