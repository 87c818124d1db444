#!/usr/bin/env bash
# ghostvram_driver_up says whether the latest collection got answers from NVML: 1 on a working
# (simulated) driver, 0 while it hangs, 0 on a host without a driver — where /healthz still
# answers 200, because /healthz is about the exporter's own data being fresh, not the driver.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

sim_new --gpus 1 --memory 16384 --reserved 512
serve_start --interval 1s --call-timeout 300ms
wait_until 30 bash -c "curl -fsS '$URL/healthz' >/dev/null" || fail "/healthz never turned 200"
assert_eq "$(metric 'ghostvram_driver_up ')" 1 "driver_up on a working driver"
grep -q "^# TYPE ghostvram_driver_up gauge$" <<<"$(scrape)" || fail "ghostvram_driver_up is not a gauge"

note "the driver hangs: 0"
"$GV_BIN" sim set "$SIM" hang=any
wait_until 20 bash -c "curl -fsS '$URL/metrics' | grep -q '^ghostvram_driver_up 0$'" || fail "driver_up stayed $(metric 'ghostvram_driver_up ')"
serve_stop
"$GV_BIN" sim set "$SIM" hang=none

note "no driver at all: /healthz 200 (the exporter's data is fresh), ghostvram_driver_up 0"
OUT2="$GV_TMP/serve-nodriver.out"
env -u GHOSTVRAM_SIM "$GV_BIN" serve --listen 127.0.0.1:0 --interval 1s --nvml-lib "$GV_TMP/none/libnvidia-ml.so.1" \
        >"$OUT2" 2>&1 &
P2=$!
track "$P2"
wait_for_line "$OUT2" "listening on"
URL=$(sed -n 's|.*listening on \(http://.*\):\([0-9]*\)/metrics.*|\1:\2|p' "$OUT2")
wait_until 30 bash -c "curl -fsS '$URL/metrics' | grep -q '^ghostvram_driver_up '" || fail "no ghostvram_driver_up: $(scrape)"
assert_eq "$(metric 'ghostvram_driver_up ')" 0 "driver_up without a driver"
code=$(curl -s -o "$GV_TMP/h.txt" -w '%{http_code}' "$URL/healthz")
note "  /healthz without a driver: $code $(cat "$GV_TMP/h.txt")"
stop_within 15 "$P2" TERM

note "scan --textfile carries it too"
mkdir "$GV_TMP/tf"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --confirm 0 --textfile "$GV_TMP/tf" >/dev/null || true
grep -q "^ghostvram_driver_up 1$" "$GV_TMP/tf/ghostvram.prom" || fail "textfile: $(grep driver_up "$GV_TMP/tf/ghostvram.prom")"
echo "PASS"
