#!/usr/bin/env bash
# ghostvram track: a job's allocations recorded by the preload library on the simulated
# libcuda.so.1 (by symbol, through cuGetProcAddress both versions, dlsym on a dlopen'ed handle,
# VMM, stream-ordered), read back by `scan --ledger-dir` and serve's /api/v1/scan after the
# owner's kill -9; forked workers that allocate nothing leave no ledger.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/track_lib.sh"
. "$(dirname "$0")/serve_lib.sh"

sim_new --gpus 2
LEDGER="$GV_TMP/ledger"

note "the issue's scenario: track -- sim run --gpu 1 --mib 3072 --workers 2, kill -9 of the owner"
track_sim_run --gpu 1 --mib 3072 --workers 2
assert_eq "${#WORKERS[@]}" 2 "workers"
grep -q "^PID $OWNER (gv-simcuda) still runs: 3072 MiB in 1 allocation so far" "$GV_TMP/report" ||
        fail "track's report on a daemonised job: $(cat "$GV_TMP/report")"
# one ledger: the owner's; the workers (forked after, allocating nothing) have none, nor has
# `sim run` itself (it loads the tracker but allocates nothing)
files=$(cd "$LEDGER" && ls)
[[ "$files" =~ ^$OWNER-[0-9]+\.gvl$ ]] || fail "ledger files: '$files' (expected only the owner's)"
assert_eq "$(scan_ledger 1)" null "no ledger shown while the owner lives"
kill_wait "$OWNER"
l=$(scan_ledger 1)
assert_eq "$(jq -r .owner_pid <<<"$l")" "$OWNER" "ledger owner"
assert_eq "$(jq -r .outstanding_bytes <<<"$l")" $((3072 * MIB)) "outstanding bytes"
assert_eq "$(jq -r .allocations <<<"$l")" 1 "allocations"
assert_eq "$(jq -r '.top_sites[0].api' <<<"$l")" cuMemAlloc_v2 "api"
assert_eq "$(jq -r '.top_sites[0].via' <<<"$l")" symbol "route"
assert_eq "$(jq -r '.top_sites[0].bytes' <<<"$l")" $((3072 * MIB)) "site bytes"
[[ "$(jq -r '.top_sites[0].frames[0]' <<<"$l")" =~ ^gv-simcuda\+0x[0-9a-f]+$ ]] ||
        fail "the call site is not in gv-simcuda: $l"
# symbolised when reported, from gv-simcuda's own symbol table: allocate(), or run() where it is inlined
[[ "$(jq -r '.top_sites[0].function' <<<"$l")" =~ ^gv-simcuda!(allocate|run)\+0x[0-9a-f]+$ ]] ||
        fail "the calling function: $l"
assert_eq "$(jq -r '.torn_tail_bytes, .skipped_bytes' <<<"$l" | tr '\n' ' ')" "0 0 " "a clean ledger"
assert_eq "$(scan_ledger 0)" null "GPU 0 has no ledger"
text=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --confirm 0 --ledger-dir "$LEDGER" || true)
grep -q "ledger: dead PID $OWNER still had 3072 MiB in 1 allocation; top sites: gv-simcuda!\(allocate\|run\)+0x[0-9a-f]* <- gv-simcuda+0x[0-9a-f]* (3072 MiB in 1, cuMemAlloc_v2)" <<<"$text" ||
        fail "scan text: $text"
# without --ledger-dir scan says nothing of ledgers
doc=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 0 || true)
jq -e '.gpus[1] | has("ledger") | not' <<<"$doc" >/dev/null || fail "a ledger key without --ledger-dir"
note "serve's /api/v1/scan with --ledger-dir carries the same ledger"
serve_start --interval 1s --ledger-dir "$LEDGER"
api_ledger() { curl -gfsS --max-time 10 "$URL/api/v1/scan" | jq -c '.gpus[] | select(.index == 1) | .ledger'; }
# (503 until the first complete scan: its text body is no JSON, jq fails on it)
wait_until 20 sh -c "curl -gsS --max-time 10 '$URL/api/v1/scan' | jq -e '.gpus[1].ledger.owner_pid == $OWNER' >/dev/null 2>&1" ||
        fail "/api/v1/scan: $(curl -gsS --max-time 10 "$URL/api/v1/scan" | head -c 600)"
a=$(api_ledger)
assert_eq "$(jq -r '[.outstanding_bytes, .allocations, .top_sites[0].api] | join(" ")' <<<"$a")" \
        "$((3072 * MIB)) 1 cuMemAlloc_v2" "/api/v1/scan ledger"
serve_stop
kill_wait "${WORKERS[@]}"

note "each allocation route of the simulated CUDA application"
check_route() { # ROUTE EXPECTED(api/via/bytes;...)
        local route=$1 want=$2 got
        track_sim_run --gpu 0 --mib 64 --workers 1 --alloc "$route"
        kill_wait "$OWNER"
        got=$(scan_ledger 0 | jq -r '[.top_sites[] | "\(.api)/\(.via)/\(.bytes)"] | sort | join(";")')
        assert_eq "$got" "$want" "route $route"
        kill_wait "${WORKERS[@]}"
}
check_route mixed "cuMemAlloc_v2/cuGetProcAddress/$((32 * MIB));cuMemAlloc_v2/symbol/$((32 * MIB))"
check_route procaddr "cuMemAlloc_v2/cuGetProcAddress/$((64 * MIB))"
check_route procaddr-v1 "cuMemAlloc_v2/cuGetProcAddress/$((64 * MIB))"
check_route dlsym "cuMemAlloc_v2/cuGetProcAddress/$((64 * MIB))"
check_route vmm "cuMemCreate/symbol/$((64 * MIB))"
check_route async "cuMemAllocAsync/symbol/$((64 * MIB))"

note "no tracker: no ledger"
n=$(ls "$LEDGER" | wc -l)
sim_run --gpu 0 --mib 16 --workers 1
assert_eq "$(ls "$LEDGER" | wc -l)" "$n" "ledger files after an untracked job"
kill_wait "$OWNER" "${WORKERS[@]}"

note "the same ledgers, read by hand (track --show)"
f=$(ls "$LEDGER"/*.gvl | head -1)
"$GV_BIN" track --show "$f" | jq -e '.records > 0 and .skipped_bytes == 0 and .torn_tail_bytes == 0 and .unmatched_frees == 0' >/dev/null ||
        fail "track --show $f"
printf 'not a ledger' >"$GV_TMP/bad.gvl"
rc=0
"$GV_BIN" track --show "$GV_TMP/bad.gvl" 2>"$GV_TMP/err" >/dev/null || rc=$?
assert_eq "$rc" 1 "track --show of a non-ledger"
grep -q "not an allocation ledger" "$GV_TMP/err" || fail "message: $(cat "$GV_TMP/err")"
echo "PASS"
