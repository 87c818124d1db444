#!/usr/bin/env bash
# A healthy host is not walked: when every GPU's used bytes are charged to live listed owners,
# scan, check and watch read the fd tables of those owners and of nobody else (counted with
# strace: openat(..., "fd")). A host with something unexplained is walked, and snapshot (the raw
# facts) always walks.
. "$(dirname "$0")/lib.sh"
need_tool strace strace
# LeakSanitizer (ASan builds) cannot work under ptrace
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

sim_new --gpus 8 --memory 16384 --reserved 512
owners=()
for g in 0 1 2 3 4 5 6 7; do
        sim_run --gpu "$g" --mib $((256 + 64 * g))
        owners+=("$OWNER")
done
# bystanders: 150 processes with descriptors of their own, which a walk would have to read
for i in $(seq 150); do sleep 1000 3</dev/null 4<"$0" & track $!; done

gv() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" "$@"; }
# openat(..., "fd") calls of a command, counted; the command's stdout goes to $GV_TMP/out
fd_opens() {
        GHOSTVRAM_SIM="$SIM" strace -f -qq -e trace=openat -o "$GV_TMP/st" "$GV_BIN" "$@" >"$GV_TMP/out" || true
        grep -c 'openat([0-9]*, "fd",' "$GV_TMP/st" || true
}

note "scan on a healthy host: only the 8 listed owners' fd tables are read"
assert_eq "$(fd_opens scan --json)" 8 "fd tables read by scan"
assert_eq "$(jq -r '.host.holder_source' "$GV_TMP/out")" owners "scan's holder source"
assert_eq "$(jq -r '[.gpus[].verdict] | unique | join(",")' "$GV_TMP/out")" ok "verdicts"
assert_eq "$(jq -r '.exit_status' "$GV_TMP/out")" 0 "scan exit status"
assert_eq "$(jq -r '[.gpus[].memory.ghost_bytes] | add' "$GV_TMP/out")" 0 "no ghost bytes"
# the maps of the same 8, nothing else
assert_eq "$(grep -c 'openat([0-9]*, "maps",' "$GV_TMP/st")" 8 "maps read by scan"
grep -q "Holders: not walked" <<<"$(gv scan --verbose)" || fail "scan --verbose does not say it did not walk"

note "check: the same"
assert_eq "$(fd_opens check)" 8 "fd tables read by check"
grep -q '^GHOSTVRAM OK - 8 GPUs ok' "$GV_TMP/out" || fail "check is not OK: $(cat "$GV_TMP/out")"

note "watch, 3 cycles: the owners' tables each cycle, no walk"
assert_eq "$(fd_opens watch --count 3 --interval 200ms --json)" 24 "fd tables read by 3 watch cycles"

note "snapshot still walks every process"
assert_eq "$(gv snapshot --json --holders proc | jq -r '.host.holder_source')" proc "snapshot's holder source"
n=$(fd_opens snapshot --json --holders proc)
[ "$n" -gt 150 ] || fail "snapshot read only $n fd tables"

note "a dead owner whose worker holds its memory: scan walks and finds the worker"
sim_run --gpu 3 --mib 512 --workers 1
kill_wait "$OWNER"
s=$(gv scan --json --confirm 0 || true)
assert_eq "$(jq -r '.host.holder_source' <<<"$s")" "$(gv snapshot --json | jq -r '.host.holder_source')" "walked, by the same path as snapshot"
assert_eq "$(jq -r '.gpus[3].verdict' <<<"$s")" orphaned-holders "verdict of GPU 3"
assert_eq "$(jq -r "[.holders[].pid] | index(${WORKERS[0]}) != null" <<<"$s")" true "the worker is among the holders"
echo "PASS"
