#!/usr/bin/env bash
# ghostvram check on the simulated driver: the plugin's states and exit codes for each range
# form as a real job is killed and its workers end, the status line and performance data,
# --gpu, a lost GPU, no driver, usage errors (UNKNOWN), and a hung driver: UNKNOWN within -t.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

# check ARGS...: sets OUT and RC
check() {
        RC=0
        # -t 60: this host may be busy; the deadline itself is tested at the end
        OUT=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" check --confirm 300ms -t 60 "$@") || RC=$?
}
expect() { # RC PREFIX WHAT
        assert_eq "$RC" "$1" "$3: exit status (output: $OUT)"
        [[ "$OUT" == "$2"* ]] || fail "$3: output starts '${OUT:0:120}', expected '$2'"
}

sim_new --gpus 2 --memory 16384 --reserved 512

note "a live job: every byte is listed, OK"
sim_run --gpu 1 --mib 2048 --workers 2
check
expect 0 "GHOSTVRAM OK - 2 GPUs ok | 'gpu0_ghost'=0B;0;1073741824;0;17179869184 " "live job"
grep -q "'gpu1_listed'=2147483648B;;;0;17179869184" <<<"$OUT" || fail "listed bytes in perfdata: $OUT"
grep -q "'gpu1_reserved'=536870912B;;;0;17179869184" <<<"$OUT" || fail "reserved bytes in perfdata"
[ "$(wc -l <<<"$OUT")" -eq 1 ] || fail "an OK result is one line: $OUT"

note "kill -9 of the owner: 2048 MiB ghost held by the workers"
kill_wait "$OWNER"
check
expect 2 "GHOSTVRAM CRITICAL - GPU 1: 2048 MiB ghost (orphaned-holders, PIDs $OWNER ${WORKERS[0]} ${WORKERS[1]}); 1 GPU ok | " "default thresholds"
grep -q "'gpu1_ghost'=2147483648B;0;1073741824;0;17179869184 'gpu1_used'=2147483648B" <<<"$OUT" || fail "ghost perfdata: $OUT"
grep -q "^GPU 1 orphaned-holders: .*Next: free it safely .*ghostvram reclaim --gpu 1\` .*kill -TERM ${WORKERS[0]} ${WORKERS[1]}" <<<"$OUT" || fail "long output: $OUT"
[ "$(head -1 <<<"$OUT" | tr -cd '|' | wc -c)" -eq 1 ] || fail "one '|' on the status line"

note "each range form on GPU 1's 2048 MiB ghost (--gpu 1: GPU 0's 0 MiB would alert on some)"
g1() { check --gpu 1 "$@"; }
g1 -w 0 -c 4096;            expect 1 "GHOSTVRAM WARNING - GPU 1: 2048 MiB ghost" "-c 4096"
g1 -w 4096 -c 8192;         expect 0 "GHOSTVRAM OK - GPU 1: 2048 MiB ghost" "-w 4096 -c 8192"
g1 -w 2048 -c 2049;         expect 0 "GHOSTVRAM OK" "the end of a range is inside it"
g1 -w 2047 -c 4096;         expect 1 "GHOSTVRAM WARNING" "just above the warning end"
g1 -w 10: -c 4096;          expect 0 "GHOSTVRAM OK" "10: (alert below 10)"
g1 -w 0 -c 3000:;           expect 2 "GHOSTVRAM CRITICAL" "3000: (alert below 3000)"
g1 -w '~:100' -c '~:4096';  expect 1 "GHOSTVRAM WARNING" "~:100 (alert above 100)"
g1 -w 3000:4000 -c 8192;    expect 1 "GHOSTVRAM WARNING" "3000:4000 (alert outside)"
g1 -w 1000:3000 -c 8192;    expect 0 "GHOSTVRAM OK" "1000:3000 (inside: no alert)"
g1 -w 0 -c @1000:3000;      expect 2 "GHOSTVRAM CRITICAL" "@1000:3000 (alert inside)"
g1 -w @3000:4000 -c @5000:6000; expect 0 "GHOSTVRAM OK" "@ ranges that miss"
grep -q "'gpu1_ghost'=2147483648B;@3145728000:4194304000;@5242880000:6291456000;0;17179869184" <<<"$OUT" \
        || fail "ranges in the perfdata, in bytes: $OUT"
note "all GPUs count without --gpu: GPU 0's 0 MiB is below 10: and outside 1000:3000"
check -w 10: -c 4096;       expect 1 "GHOSTVRAM WARNING - GPU 0: 0 MiB ghost (ok); 1 GPU ok | " "10: on both GPUs"
check -w 0 -c 1000:3000;    expect 2 "GHOSTVRAM CRITICAL - GPU 0: 0 MiB ghost (ok); GPU 1: 2048 MiB ghost" "1000:3000 on both"
check --timeout 20 -c 4096;    expect 1 "GHOSTVRAM WARNING" "--timeout is -t"

note "--gpu: only that GPU counts"
check --gpu 0;  expect 0 "GHOSTVRAM OK - GPU 0: ok | 'gpu0_ghost'=0B;0;1073741824;0;17179869184" "--gpu 0"
grep -q gpu1_ <<<"$OUT" && fail "--gpu 0 shows GPU 1's perfdata"
check --gpu 1;  expect 2 "GHOSTVRAM CRITICAL - GPU 1: 2048 MiB ghost" "--gpu 1"
check --gpu 5;  expect 3 "GHOSTVRAM UNKNOWN - --gpu 5: this host has 2 GPUs" "--gpu 5"

note "-t covers the whole scan, the confirming wait included: -t 6 with a ghost still finds it"
# the default --confirm (2 s) shrinks to a quarter of -t (1.5 s): both samples and the wait
# between them fit in -t (a result past -t is UNKNOWN, not CRITICAL); the margin over -t is
# for the process's own start and exit (ASan), which -t does not cover
start=$(date +%s%N)
RC=0
OUT=$(timeout 30 env GHOSTVRAM_SIM="$SIM" "$GV_BIN" check -t 6) || RC=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect 2 "GHOSTVRAM CRITICAL - GPU 1: 2048 MiB ghost" "-t 6 with the default --confirm"
[ "$ms" -ge 1500 ] || fail "check -t 6 took $ms ms: no confirming wait of a quarter of -t"
[ "$ms" -lt 9000 ] || fail "check -t 6 took $ms ms"
note "  check -t 6: CRITICAL after $ms ms"
RC=0
OUT=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" check -t 2 --confirm 2s) || RC=$?
expect 3 "GHOSTVRAM UNKNOWN - -t 2 s is too short for --confirm 2 s" "--confirm longer than -t allows"

note "usage errors are UNKNOWN (3), as plugins report them"
check -w 20:10;        expect 3 "GHOSTVRAM UNKNOWN - invalid range '20:10'" "start above end"
check -c abc;          expect 3 "GHOSTVRAM UNKNOWN - invalid range 'abc'" "junk range"
check -t 0;            expect 3 "GHOSTVRAM UNKNOWN - -t: '0'" "zero timeout"
check --bogus 2>/dev/null; expect 3 "GHOSTVRAM UNKNOWN - invalid option" "unknown option"
check --json;          expect 3 "GHOSTVRAM UNKNOWN - check prints a plugin status line" "--json"

note "the workers end: the memory returns, OK again"
kill_wait "${WORKERS[@]}"
wait_until 10 bash -c "[ \"\$(GHOSTVRAM_SIM='$SIM' '$GV_BIN' check --confirm 0 >/dev/null; echo \$?)\" = 0 ]" \
        || fail "check did not return to OK after the workers ended"
check
expect 0 "GHOSTVRAM OK - 2 GPUs ok" "after the workers ended"

note "a lost GPU is CRITICAL, whatever the thresholds"
"$GV_BIN" sim set "$SIM" gpu_lost=0:on
check -w 100000 -c 200000
expect 2 "GHOSTVRAM CRITICAL - GPU 0: lost (the driver cannot reach it); 1 GPU ok | 'gpu1_ghost'=0B" "lost GPU"
"$GV_BIN" sim set "$SIM" gpu_lost=default

note "no driver: UNKNOWN"
RC=0
OUT=$(env -u GHOSTVRAM_SIM "$GV_BIN" check --nvml-lib "$GV_TMP/nonexistent/libnvidia-ml.so.1") || RC=$?
expect 3 "GHOSTVRAM UNKNOWN - " "no driver"

note "a hung driver: UNKNOWN within -t, never a hang"
"$GV_BIN" sim set "$SIM" hang=any
start=$(date +%s%N)
RC=0
OUT=$(timeout 20 env GHOSTVRAM_SIM="$SIM" "$GV_BIN" check -t 2) || RC=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
assert_eq "$RC" 3 "hung driver: exit status ($OUT)"
# the driver's own call deadline (half of -t) fires first; the whole-check deadline is the backstop
[[ "$OUT" == "GHOSTVRAM UNKNOWN - the NVIDIA driver did not answer within 1 s (nvmlInit)"* ||
   "$OUT" == "GHOSTVRAM UNKNOWN - no result within 2 s: the NVIDIA driver or /proc did not answer"* ]] \
        || fail "hung driver: $OUT"
[ "$ms" -lt 6000 ] || fail "check took $ms ms with -t 2"
note "  answered UNKNOWN after $ms ms"
"$GV_BIN" sim set "$SIM" hang=1:nvmlDeviceGetComputeRunningProcesses_v3
RC=0
OUT=$(timeout 20 env GHOSTVRAM_SIM="$SIM" "$GV_BIN" check -t 3 --timeout 3 --confirm 0) || RC=$?
assert_eq "$RC" 3 "one GPU hung: UNKNOWN ($OUT)"
echo "PASS"
