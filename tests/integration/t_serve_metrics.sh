#!/usr/bin/env bash
# ghostvram serve on the simulated driver, scraped with curl on loopback: promtool check
# metrics passes on a real scrape (also with a process name full of quotes, backslashes and
# invalid UTF-8), the values are the ledger's, both formats by content negotiation, /healthz,
# /api/v1/scan without command lines (unless --expose-cmdline), read-only, IPv6, light cycles.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

need_tool promtool prometheus
sim_new --gpus 2 --memory 16384 --reserved 512

note "a job whose processes are named 'ev\"il\\<0xff>name': run the simulated app through such a link"
NAME=$'ev"il\\\xffname'
sim_run_named "$NAME" --gpu 1 --mib 2048 --workers 2
[ "${#WORKERS[@]}" -eq 2 ] || fail "the job reported ${#WORKERS[@]} workers"
kill_wait "$OWNER"

serve_start --interval 1s
wait_until 30 bash -c "curl -fsS '$URL/healthz' >/dev/null" || fail "/healthz never turned 200: $(curl -s "$URL/healthz")"
# the ghost needs a confirming cycle
wait_until 30 bash -c "curl -fsS '$URL/metrics' | grep -q 'ghostvram_gpu_ghost_confirmed{gpu=\"1\".*} 1'" \
        || fail "the ghost was never confirmed: $(scrape)"

note "promtool check metrics on a real scrape"
scrape >"$GV_TMP/scrape.txt"
promtool check metrics <"$GV_TMP/scrape.txt" || fail "promtool check metrics failed"

note "the values are the ledger's; the kinds sum to used"
g1='gpu="1",uuid="'
grep -q "^ghostvram_gpu_memory_used_bytes{${g1}GPU-[^\"]*\",pci_bus_id=\"0000:43:00.0\",kind=\"ghost\"} 2147483648$" "$GV_TMP/scrape.txt" \
        || fail "ghost series: $(grep used_bytes "$GV_TMP/scrape.txt")"
sum=$(awk 'index($0, "ghostvram_gpu_memory_used_bytes{gpu=\"1\"") == 1 { s += $NF } END { printf "%.0f", s }' "$GV_TMP/scrape.txt")
assert_eq "$sum" $((2048 * MIB)) "the kinds of GPU 1 sum to used"
grep -q "^ghostvram_gpu_memory_total_bytes{${g1}.*} 17179869184$" "$GV_TMP/scrape.txt" || fail "total"
grep -q "^ghostvram_gpu_memory_reserved_bytes{${g1}.*} 536870912$" "$GV_TMP/scrape.txt" || fail "reserved"
assert_eq "$(grep -c '^ghostvram_gpu_memory_used_bytes{gpu="1"' "$GV_TMP/scrape.txt")" 5 "five kinds"
grep -q "^ghostvram_gpu_memory_used_bytes{${g1}.*,kind=\"freeing\"} 0$" "$GV_TMP/scrape.txt" || fail "no freeing kind (0)"
grep -q "^ghostvram_gpu_verdict{${g1}.*,verdict=\"orphaned-holders\"} 1$" "$GV_TMP/scrape.txt" || fail "verdict"
assert_eq "$(grep -c '^ghostvram_gpu_verdict{gpu="1"' "$GV_TMP/scrape.txt")" 13 "every verdict code"
assert_eq "$(grep '^ghostvram_gpu_verdict{gpu="1"' "$GV_TMP/scrape.txt" | grep -c '} 1$')" 1 "one current verdict"
for w in "${WORKERS[@]}"; do
        grep -qF "pid=\"$w\",comm=\"ev\\\"il\\\\"$'\xef\xbf\xbd'"name\"," "$GV_TMP/scrape.txt" \
                || fail "holder $w with its escaped, repaired name: $(grep holder_info "$GV_TMP/scrape.txt")"
done
grep -q 'attribution="process-group"' "$GV_TMP/scrape.txt" || fail "attribution label"
grep -q hunter2 "$GV_TMP/scrape.txt" && fail "a command line leaked into the metrics"
grep -q "^ghostvram_build_info{version=\"[0-9.]*\"} 1$" "$GV_TMP/scrape.txt" || fail "build info"
grep -q "^ghostvram_scan_errors_total{source=\"gpu\"} 0$" "$GV_TMP/scrape.txt" || fail "no GPU errors"
grep -q "^# TYPE ghostvram_xid_events_total counter$" "$GV_TMP/scrape.txt" || fail "xid family"
head -c 3 "$GV_TMP/scrape.txt" | grep -q '^# ' || fail "starts with a comment"

note "content types: 0.0.4 by default, OpenMetrics when asked"
ct=$(curl -fsS -o /dev/null -w '%{content_type}' "$URL/metrics")
assert_eq "$ct" "text/plain; version=0.0.4; charset=utf-8" "default content type"
OM_ACCEPT='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
ct=$(curl -fsS -o "$GV_TMP/om.txt" -w '%{content_type}' -H "Accept: $OM_ACCEPT" "$URL/metrics")
assert_eq "$ct" "application/openmetrics-text; version=1.0.0; charset=utf-8" "OpenMetrics content type"
assert_eq "$(tail -1 "$GV_TMP/om.txt")" "# EOF" "OpenMetrics ends with # EOF"
assert_eq "$(grep -c '^# EOF' "$GV_TMP/om.txt")" 1 "one # EOF"
grep -q '^# TYPE ghostvram_scan_errors counter$' "$GV_TMP/om.txt" || fail "OM counter family without _total"
grep -q '^# TYPE ghostvram_holder info$' "$GV_TMP/om.txt" || fail "OM info family"
grep -q '^# UNIT ghostvram_gpu_memory_total_bytes bytes$' "$GV_TMP/om.txt" || fail "OM unit"

note "/api/v1/scan: the scan as JSON, no command lines"
curl -fsS "$URL/api/v1/scan" >"$GV_TMP/scan.json"
assert_eq "$(jq -r '.gpus[] | select(.index == 1) | .verdict' "$GV_TMP/scan.json")" orphaned-holders "JSON verdict"
assert_eq "$(jq -r '.gpus[] | select(.index == 1) | .memory.ghost_bytes' "$GV_TMP/scan.json")" $((2048 * MIB)) "JSON ghost"
assert_eq "$(jq -r '.walk' "$GV_TMP/scan.json")" full "a ghost is followed with full walks"
grep -q hunter2 "$GV_TMP/scan.json" && fail "a command line leaked into /api/v1/scan"

note "read-only: 405 for every other method"
for m in POST PUT DELETE PATCH; do
        code=$(curl -s -o /dev/null -w '%{http_code}' -X "$m" --data 'x' "$URL/metrics")
        assert_eq "$code" 405 "$m /metrics"
done
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/nothing")" 404 "unknown path"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/%00")" 404 "a NUL in the path is not the page"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/metrics%00.html")" 404 "nor the metrics"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "$URL/%6detrics")" 200 "other escapes are decoded"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -I "$URL/metrics")" 200 "HEAD"

note "the workers end: the teardown is kind=\"freeing\", never ghost; then with nothing unexplained the cycles turn light"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=8000 >/dev/null
kill_wait "${WORKERS[@]}"
# kind_of BODY KIND: GPU 1's bytes of that kind in a scrape
kind_of() { awk -v k="kind=\"$2\"" 'index($0, "ghostvram_gpu_memory_used_bytes{gpu=\"1\"") == 1 && index($0, k) { print $NF }' <<<"$1"; }
freeing_seen() {
        local body
        body=$(scrape) || return 1
        grep -q '^ghostvram_gpu_verdict{gpu="1".*verdict="freeing"} 1$' <<<"$body" || return 1
        [ "$(kind_of "$body" freeing)" -gt 0 ] && [ "$(kind_of "$body" ghost)" = 0 ] && [ "$(kind_of "$body" unattributed)" = 0 ]
}
wait_until 15 freeing_seen || fail "no scrape with the teardown as freeing (and no ghost): $(scrape | grep 'gpu="1"' | grep -E 'used_bytes|verdict=\"(freeing|ok|orphaned-holders)')"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=0 >/dev/null
wait_until 30 bash -c "[ \"\$(curl -fsS '$URL/api/v1/scan' | jq -r '.walk')\" = light ]" \
        || fail "no light cycle once everything is explained"
light=$(metric 'ghostvram_scans_total{mode="light"}')
[ "$light" -ge 1 ] || fail "light cycles counted: $light"
assert_eq "$(ghost_of 1)" 0 "ghost gone"
serve_stop

note "--expose-cmdline and IPv6"
sim_run --gpu 0 --mib 256
if grep -qs " lo$" /proc/net/if_inet6; then
        SERVE_LISTEN='[::1]:0' serve_start --interval 1s --expose-cmdline
        [[ "$URL" == "http://[::1]:"* ]] || fail "IPv6 URL: $URL"
        wait_until 30 bash -c "curl -gfsS '$URL/api/v1/scan' >/dev/null" || fail "no scan over IPv6"
        curl -gfsS "$URL/api/v1/scan" | jq -e ".holders[] | select(.pid == $OWNER) | .cmdline | test(\"gv-simcuda\")" >/dev/null \
                || fail "--expose-cmdline: the command line is missing"
        serve_stop
else
        note "  no IPv6 loopback here: skipped"
fi

note "usage errors"
for bad in "--listen gpu-node-7:9835" "--listen 127.0.0.1" "--interval 100ms" "--max-connections 0" "--from-bundle /tmp"; do
        rc=0
        # shellcheck disable=SC2086
        GHOSTVRAM_SIM="$SIM" "$GV_BIN" serve $bad >/dev/null 2>&1 || rc=$?
        assert_eq "$rc" 2 "serve $bad"
done
echo "PASS"
