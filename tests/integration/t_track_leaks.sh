#!/usr/bin/env bash
# ghostvram track's leak check at a normal exit: what each process of the command left
# allocated, by call site (text and JSON), per process (forked before CUDA: their own ledgers;
# a worker that allocates nothing: none), exit statuses, and the pruning of old ledgers.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/track_lib.sh"

sim_new --gpus 1
LEDGER="$GV_TMP/ledger"

note "leaks: 2 threads x 10 allocations of 1 MiB, every second one freed"
"$GV_BIN" track --ledger-dir "$LEDGER" --json --report "$GV_TMP/r.json" -- \
        "$GV_SIMALLOC" --dir "$SIM" --gpu 0 --allocs 10 --size $MIB --free-every 2 --threads 2 >/dev/null ||
        fail "track -- gv-simalloc: exit $?"
r=$(cat "$GV_TMP/r.json")
assert_eq "$(jq -r .schema_version <<<"$r")" 2 "schema"
assert_eq "$(jq -r .exit_status <<<"$r")" 0 "exit status in the report"
assert_eq "$(jq -r .leaked_bytes <<<"$r")" $((10 * MIB)) "leaked bytes"
assert_eq "$(jq -r .leaked_allocations <<<"$r")" 10 "leaked allocations"
assert_eq "$(jq -r '.processes | length' <<<"$r")" 1 "processes"
p=$(jq -c '.processes[0]' <<<"$r")
assert_eq "$(jq -r '[.alive, .allocs, .frees, .allocations, .outstanding_bytes] | join(" ")' <<<"$p")" \
        "false 20 10 10 $((10 * MIB))" "the process's counts"
assert_eq "$(jq -r .comm <<<"$p")" gv-simalloc "comm"
# both threads allocate at the same call site (work()), reached the same way
assert_eq "$(jq -r '.sites | length' <<<"$p")" 1 "one call site"
assert_eq "$(jq -r '.sites[0] | [.bytes, .allocations, .api] | join(" ")' <<<"$p")" "$((10 * MIB)) 10 cuMemAlloc_v2" "site"
[[ "$(jq -r '.sites[0].frames[0]' <<<"$p")" =~ ^gv-simalloc\+0x ]] || fail "site frame: $p"
[[ "$(jq -r '.sites[0].function' <<<"$p")" =~ ^gv-simalloc!(one|work)\+0x[0-9a-f]+$ ]] || fail "site function: $p" # one() where it is not inlined
# the simulated driver agrees: nothing left charged once the process is gone
assert_eq "$(used 0)" 0 "GPU memory after the exit"

note "the same as text, on standard error"
"$GV_BIN" track --ledger-dir "$LEDGER" -- "$GV_SIMALLOC" --dir "$SIM" --gpu 0 --allocs 3 --size $MIB \
        >/dev/null 2>"$GV_TMP/r.txt" || fail "track (text)"
grep -q "^PID [0-9]* (gv-simalloc) exited with 3 MiB in 3 allocations never freed:" "$GV_TMP/r.txt" ||
        fail "text report: $(cat "$GV_TMP/r.txt")"
grep -qE "^    gv-simalloc!(one|work)\+0x[0-9a-f]+ <- .* \(3 MiB in 3, cuMemAlloc_v2\)$" "$GV_TMP/r.txt" ||
        fail "text site: $(cat "$GV_TMP/r.txt")"
grep -q "^LEAK SUMMARY: 3 MiB (3145728 bytes) leaked in 3 allocations by 1 tracked process; command exit status 0$" \
        "$GV_TMP/r.txt" || fail "summary: $(cat "$GV_TMP/r.txt")"

note "no leak, through cuGetProcAddress"
"$GV_BIN" track --ledger-dir "$LEDGER" --json --report "$GV_TMP/r.json" -- \
        "$GV_SIMALLOC" --dir "$SIM" --gpu 0 --allocs 4 --size $MIB --free-every 1 --route procaddr >/dev/null || fail "no leak"
assert_eq "$(jq -r '[.leaked_bytes, .processes[0].allocs, .processes[0].frees] | join(" ")' "$GV_TMP/r.json")" "0 4 4" \
        "a clean run"

note "stream-ordered, per-thread default stream, through cuGetProcAddress_v2 (the _ptsz variants)"
"$GV_BIN" track --ledger-dir "$LEDGER" --json --report "$GV_TMP/r.json" -- \
        "$GV_SIMALLOC" --dir "$SIM" --gpu 0 --allocs 6 --size $MIB --free-every 3 --route ptsz >/dev/null || fail "ptsz"
assert_eq "$(jq -r '[.leaked_bytes, .processes[0].allocs, .processes[0].frees, .processes[0].sites[0].api, .processes[0].sites[0].via] | join(" ")' "$GV_TMP/r.json")" \
        "$((4 * MIB)) 6 2 cuMemAllocAsync cuGetProcAddress" "per-thread-stream allocations"

note "managed and pitched allocations"
"$GV_BIN" track --ledger-dir "$LEDGER" --json --report "$GV_TMP/r.json" -- \
        "$GV_SIMALLOC" --dir "$SIM" --gpu 0 --allocs 2 --size 1000 --route pitch >/dev/null || fail "pitch"
# 1000 bytes wide, 1 row: the driver pads the row to its 512-byte pitch
assert_eq "$(jq -r '[.leaked_bytes, .processes[0].sites[0].api] | join(" ")' "$GV_TMP/r.json")" "2048 cuMemAllocPitch_v2" "pitch"
"$GV_BIN" track --ledger-dir "$LEDGER" --json --report "$GV_TMP/r.json" -- \
        "$GV_SIMALLOC" --dir "$SIM" --gpu 0 --allocs 2 --size $MIB --route managed >/dev/null || fail "managed"
assert_eq "$(jq -r '[.leaked_bytes, .processes[0].sites[0].api] | join(" ")' "$GV_TMP/r.json")" "$((2 * MIB)) cuMemAllocManaged" "managed"

note "processes: 2 forked before CUDA (their own ledgers), a worker forked after that allocates nothing (none)"
rm -rf "$LEDGER"
"$GV_BIN" track --ledger-dir "$LEDGER" --json --report "$GV_TMP/r.json" -- \
        "$GV_SIMALLOC" --dir "$SIM" --gpu 0 --allocs 2 --size $MIB --fork-first 2 --no-cuda-child >/dev/null || fail "fork"
assert_eq "$(ls "$LEDGER" | wc -l)" 3 "ledger files (parent and 2 children; not the idle worker)"
assert_eq "$(jq -r '"\(.processes | length) \(.leaked_bytes)"' "$GV_TMP/r.json")" "3 $((6 * MIB))" "3 processes, 6 MiB"
pids=$(jq -r '[.processes[].pid] | unique | length' "$GV_TMP/r.json")
assert_eq "$pids" 3 "three different PIDs"

note "exit statuses"
rc=0; "$GV_BIN" track --ledger-dir "$LEDGER" -- sh -c 'exit 7' 2>/dev/null || rc=$?
assert_eq "$rc" 7 "CMD's status"
rc=0; "$GV_BIN" track --ledger-dir "$LEDGER" -- sh -c 'kill -TERM $$' 2>/dev/null || rc=$?
assert_eq "$rc" 143 "CMD killed by SIGTERM"
rc=0; "$GV_BIN" track --ledger-dir "$LEDGER" -- /nonexistent/cmd 2>"$GV_TMP/err" || rc=$?
assert_eq "$rc" 127 "CMD not found"
grep -q "cannot run /nonexistent/cmd" "$GV_TMP/err" || fail "message: $(cat "$GV_TMP/err")"
rc=0; "$GV_BIN" track --ledger-dir "$LEDGER" 2>/dev/null || rc=$?
assert_eq "$rc" 2 "no command"
rc=0; "$GV_BIN" track --ledger-dir "$LEDGER" --preload /nonexistent.so -- true 2>/dev/null || rc=$?
assert_eq "$rc" 125 "no tracker library"
rc=0; "$GV_BIN" track --ledger-dir /proc/1/nope -- true 2>/dev/null || rc=$?
assert_eq "$rc" 125 "no ledger directory"

note "pruning: old ledgers of dead processes go, by age and then by total size; live ones stay"
rm -rf "$LEDGER"
mkdir -p "$LEDGER"
"$GV_BIN" track --ledger-dir "$LEDGER" -- "$GV_SIMALLOC" --dir "$SIM" --gpu 0 --size $MIB 2>/dev/null >/dev/null || fail "seed"
seed=$(ls "$LEDGER"/*.gvl)
cp "$seed" "$LEDGER/4000000-1.gvl"; touch -d '10 days ago' "$LEDGER/4000000-1.gvl"   # too old
cp "$seed" "$LEDGER/4000001-1.gvl"; head -c $((3 * MIB)) /dev/zero >>"$LEDGER/4000001-1.gvl"
touch -d '1 hour ago' "$LEDGER/4000001-1.gvl"                                       # big and oldest of the rest
cp "$seed" "$LEDGER/4000002-1.gvl"                                                  # recent and small
: >"$LEDGER/.4000003-1.tmp"; touch -d '1 hour ago' "$LEDGER/.4000003-1.tmp"         # a creation cut short
# a live process's ledger (this shell's PID and start time) is never pruned, however old and big
me_start=$(awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[20] }' /proc/$$/stat)
cp "$seed" "$LEDGER/$$-$me_start.gvl"; head -c $((3 * MIB)) /dev/zero >>"$LEDGER/$$-$me_start.gvl"
touch -d '30 days ago' "$LEDGER/$$-$me_start.gvl"
"$GV_BIN" track --ledger-dir "$LEDGER" --max-age 7d --max-total 2 -- true 2>/dev/null || fail "prune run"
left=$(cd "$LEDGER" && ls -A | sort | tr '\n' ' ')
want=$(printf '%s\n' "$(basename "$seed")" 4000002-1.gvl "$$-$me_start.gvl" | sort | tr '\n' ' ')
assert_eq "$left" "$want" "ledgers left after pruning"
echo "PASS"
