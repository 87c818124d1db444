#!/usr/bin/env bash
# A call stuck in the driver while it holds the driver's lock (the simulator's hang_holds_lock:
# an orphaned RM lock hangs every NVML call of every process): every GPU, and nvmlInit itself,
# stop answering. scan and check end in bounded time with exit 3, say the driver did not
# answer and list the processes using the driver (D-state ones first, with where they wait,
# from a bundle edited to show one; as another user, that they cannot be seen); serve keeps
# answering with a 503 and bounded threads, and recovers by itself once the stuck caller is gone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"
need_tool flock util-linux

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024
job=$OWNER
"$GV_BIN" sim set "$SIM" hang=1:nvmlDeviceGetMemoryInfo_v2 hang_holds_lock=on >/dev/null

note "the stuck caller: a snapshot whose call on GPU 1 hangs, holding the driver's lock"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --call-timeout 600s >/dev/null 2>&1 &
stuck=$!
track "$stuck"
# (the lock file is made by the first call that takes it: until then nothing holds it)
lock_held() { [ -e "$SIM/driver/api.lock" ] && ! flock -n "$SIM/driver/api.lock" true; }
wait_until 30 lock_held || fail "the stuck caller never took the driver's lock"

grep -q "^  a hung call holds the driver's API lock (every later NVML call waits behind it): held now$" \
        <<<"$("$GV_BIN" sim status "$SIM")" || fail "sim status: $("$GV_BIN" sim status "$SIM")"
note "the simulator: GPU 0's memory query, which no hang names, now waits behind the lock too"
rc=0; timeout 3 env GHOSTVRAM_SIM="$SIM" "$GV_QUERY" --gpu 0 >/dev/null || rc=$?
assert_eq "$rc" 124 "a query of GPU 0 while the lock is held"

note "scan: bounded, exit 3, the driver did not answer, the processes using it listed"
t0=$(now_ms)
rc=0; GHOSTVRAM_SIM="$SIM" timeout 60 "$GV_BIN" scan --call-timeout 300ms --confirm 0 >"$GV_TMP/scan.out" 2>&1 || rc=$?
t=$(($(now_ms) - t0))
assert_eq "$rc" 3 "scan's exit status"
[ "$t" -lt 20000 ] || fail "scan took $t ms with a 300 ms call deadline"
grep -q "^NVIDIA driver: the NVIDIA driver did not answer within 0.3 s (nvmlInit)$" "$GV_TMP/scan.out" ||
        fail "no driver line: $(cat "$GV_TMP/scan.out")"
grep -q "Processes using the driver now:" "$GV_TMP/scan.out" || fail "no list of processes: $(cat "$GV_TMP/scan.out")"
# (the command is cut to 60 characters: the build's path may take them all)
grep -A1 -E "^    PID $stuck root S " "$GV_TMP/scan.out" | grep -qE "^        nvidiactl\(fd\)  ppid " ||
        fail "the stuck caller is not listed with nvidiactl: $(cat "$GV_TMP/scan.out")"
grep -qE "^    PID $job " "$GV_TMP/scan.out" || fail "the job holding GPU 0 is not listed: $(cat "$GV_TMP/scan.out")"
grep -q "next: .*reset the GPU (\`nvidia-smi -r\`) or reboot" "$GV_TMP/scan.out" || fail "no next step: $(cat "$GV_TMP/scan.out")"
grep -q "/proc/PID/stack" "$GV_TMP/scan.out" && fail "a /proc/PID/stack step with no task in D state"

rc=0; GHOSTVRAM_SIM="$SIM" timeout 60 "$GV_BIN" scan --json --call-timeout 300ms --confirm 0 >"$GV_TMP/scan.json" || rc=$?
assert_eq "$rc" 3 "scan --json's exit status"
assert_eq "$(jq -r '[.driver.present, .driver.timed_out] | map(tostring) | join(" ")' "$GV_TMP/scan.json")" "false true" \
        "driver.present, driver.timed_out"
assert_eq "$(jq -r ".holders[] | select(.pid == $stuck) | .devices | join(\",\")" "$GV_TMP/scan.json")" nvidiactl \
        "the stuck caller's nodes in holders[]"

rc=0; out=$(GHOSTVRAM_SIM="$SIM" timeout 60 "$GV_BIN" check --call-timeout 300ms) || rc=$?
assert_eq "$rc" 3 "check's exit status"
assert_eq "$out" "GHOSTVRAM UNKNOWN - the NVIDIA driver did not answer within 0.3 s (nvmlInit)" "check's line"

note "not root: no process using the driver is visible; scan says so, the way to see them, its limits"
nobody_copy
rc=0; out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env GHOSTVRAM_SIM="$SIM" \
        timeout 60 "$NOBODY_BIN" scan --call-timeout 300ms --confirm 0 2>&1) || rc=$?
assert_eq "$rc" 3 "scan's exit status as nobody"
grep -q "^NVIDIA driver: the NVIDIA driver did not answer within 0.3 s (nvmlInit)$" <<<"$out" ||
        fail "as nobody, the calls did not wait behind the lock: $out"
grep -q "^No process using the driver can be seen as this user .*\`sudo ghostvram scan\` lists them" <<<"$out" ||
        fail "as nobody, no word that the holders are out of sight: $out"
grep -q "^Limits of this result:$" <<<"$out" || fail "as nobody, no limits: $out"
grep -qE "^    PID [0-9]+ " <<<"$out" && fail "as nobody, processes listed: $out"

note "a task in D state leads the list, with where it waits (a bundle of this host, edited)"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --call-timeout 300ms --confirm 0 --save-bundle "$GV_TMP/b" >/dev/null || true
[ -f "$GV_TMP/b/proc/$job/stat" ] || fail "the bundle has no stat of the job ($job)"
sed -i -E 's/^(.*\)) [A-Z] /\1 D /' "$GV_TMP/b/proc/$job/stat"
printf 'uvm_va_space_destroy' >"$GV_TMP/b/proc/$job/wchan"
rc=0; "$GV_BIN" scan --from-bundle "$GV_TMP/b" >"$GV_TMP/b.out" 2>&1 || rc=$?
assert_eq "$rc" 3 "scan of the bundle"
grep -q "Processes using the driver now (in D state first: the likely stuck ones):" "$GV_TMP/b.out" ||
        fail "no D-state heading: $(cat "$GV_TMP/b.out")"
first=$(grep -m1 -E '^    PID [0-9]+ ' "$GV_TMP/b.out")
grep -qE "^    PID $job root D .*— in D state, waiting in uvm_va_space_destroy$" <<<"$first" ||
        fail "the D-state task is not first: $(cat "$GV_TMP/b.out")"
grep -q 'next: `sudo cat /proc/PID/stack` for each task in D state' "$GV_TMP/b.out" ||
        fail "no /proc/PID/stack step: $(cat "$GV_TMP/b.out")"

note "serve: 503 with the reason, bounded threads, then it recovers when the stuck caller goes"
serve_start --interval 1s --call-timeout 300ms
wait_until 30 bash -c "curl -s '$URL/api/v1/scan' | jq -e '.error | test(\"not returned from an earlier call yet\")' >/dev/null" ||
        fail "/api/v1/scan: $(curl -s "$URL/api/v1/scan")"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/api/v1/scan")" 503 "/api/v1/scan while the driver hangs"
assert_eq "$(scrape | grep '^ghostvram_driver_up ')" "ghostvram_driver_up 0" "driver_up while the driver hangs"
threads() { awk '/^Threads:/ { print $2 }' "/proc/$SERVE_PID/status"; }
sleep 3
t1=$(threads)
sleep 4
t2=$(threads)
note "  threads: $t1, then $t2 after 4 more cycles"
[ "$t2" -le "$t1" ] || fail "serve's threads grew from $t1 to $t2 over 4 cycles: calls pile up behind the lock"
[ "$t2" -le 8 ] || fail "serve has $t2 threads"
"$GV_BIN" sim set "$SIM" hang=none >/dev/null
kill_wait "$stuck"
grep -q "^  a hung call holds the driver's API lock (every later NVML call waits behind it)$" \
        <<<"$("$GV_BIN" sim status "$SIM")" || fail "sim status after the release: $("$GV_BIN" sim status "$SIM")"
wait_until 30 bash -c "! flock -n '$SIM/driver/api.lock' true && exit 1; curl -fsS '$URL/api/v1/scan' -o '$GV_TMP/after.json' 2>/dev/null" ||
        fail "serve did not recover after the lock was released: $(curl -s "$URL/api/v1/scan")"
assert_eq "$(jq -r '[.gpus[].status] | join(" ")' "$GV_TMP/after.json")" "ok ok" "both GPUs after the release"
assert_eq "$(jq -r '.gpus[] | select(.index == 0) | .memory.listed_bytes' "$GV_TMP/after.json")" $((1024 * MIB)) \
        "GPU 0's listed bytes after the release"
serve_stop
echo "PASS"
