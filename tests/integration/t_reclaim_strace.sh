#!/usr/bin/env bash
# reclaim under strace: ghostvram makes no kill/tkill/tgkill system call at all, and every
# pidfd_send_signal goes to a pidfd that pidfd_open opened for a planned target (the PID is
# read from the pidfd_open call of the same trace).
. "$(dirname "$0")/lib.sh"

need_tool strace strace
strace -f -qq -o /dev/null true 2>/dev/null || skip "ptrace is not allowed here"
# LeakSanitizer stops the world with ptrace, which a traced process cannot do
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024 --workers 1
HEALTHY=("$OWNER" "${WORKERS[@]}")
trap '' TERM    # one job ignores SIGTERM: its workers get SIGKILL too
sim_run --gpu 1 --mib 1024 --workers 2
trap - TERM
STUBBORN=("${WORKERS[@]}")
kill_wait "$OWNER"
sim_run --gpu 1 --mib 512 --workers 2
PLAIN=("${WORKERS[@]}")
kill_wait "$OWNER"
sleep 600 &
OTHER=$!
track "$OTHER"

TRACE="$GV_TMP/trace"
set +e
R=$(GHOSTVRAM_SIM="$SIM" strace -f -qq -e trace=kill,tkill,tgkill,pidfd_open,pidfd_send_signal -o "$TRACE" \
        "$GV_BIN" reclaim --confirm 300ms --json --yes --grace 1s --wait 20s)
RC=$?
set -e
assert_eq "$RC" 0 "reclaim under strace"
PLANNED=$(jq -r '[.plan.targets[].pid] | sort | map(tostring) | join(" ")' <<<"$R")
want=$(printf '%s\n' "${STUBBORN[@]}" "${PLAIN[@]}" | sort -n | tr '\n' ' ' | sed 's/ $//')
assert_eq "$PLANNED" "$want" "planned targets"

note "no kill, tkill or tgkill"
if grep -E '^[0-9]+ +(kill|tkill|tgkill)\(' "$TRACE"; then
        fail "ghostvram made a kill-family system call"
fi

note "every pidfd_send_signal goes to a planned process, through its pidfd"
# "PID pidfd_open(TARGET, 0) = FD" and "PID pidfd_send_signal(FD, SIGNAL, NULL, 0) = 0"
SIGNALLED=$(awk '
        / pidfd_open\(/ {
                match($0, /pidfd_open\([0-9]+/); pid = substr($0, RSTART + 11, RLENGTH - 11)
                n = split($0, parts, "= "); fd = parts[n] + 0
                if (fd >= 0) owner[fd] = pid
        }
        / pidfd_send_signal\(/ {
                match($0, /pidfd_send_signal\([0-9]+/); fd = substr($0, RSTART + 18, RLENGTH - 18) + 0
                match($0, /SIG[A-Z0-9]+/); sig = substr($0, RSTART, RLENGTH)
                print ((fd in owner) ? owner[fd] : "unknown-fd-" fd), sig
        }' "$TRACE")
[ -n "$SIGNALLED" ] || fail "no pidfd_send_signal in the trace"
while read -r pid sig; do
        grep -qw -- "$pid" <<<"$PLANNED" || fail "$sig went to PID $pid, which is not a planned target"
done <<<"$SIGNALLED"
for p in $PLANNED; do
        grep -q "^$p SIGTERM$" <<<"$SIGNALLED" || fail "no SIGTERM to $p"
done
for p in "${STUBBORN[@]}"; do
        grep -q "^$p SIGKILL$" <<<"$SIGNALLED" || fail "no SIGKILL to the SIGTERM-ignoring $p"
done
for p in "${PLAIN[@]}"; do
        grep -q "^$p SIGKILL$" <<<"$SIGNALLED" && fail "SIGKILL to $p, which ended on SIGTERM"
done
assert_eq "$(wc -l <<<"$SIGNALLED")" 6 "signals sent (4 SIGTERM, 2 SIGKILL)"
for p in "${HEALTHY[@]}" "$OTHER"; do is_dead "$p" && fail "PID $p was touched"; done
assert_eq "$(used 1)" 0 "memory back"
echo "PASS"
