#!/usr/bin/env bash
# A real Prometheus server (Debian package prometheus) scrapes `ghostvram serve` on the
# simulated driver over loopback, with the project's alert rules loaded: the ghost series of a
# killed job appears in its query API with the ledger's value, the holder with a hostile name
# arrives intact (escaped and repaired), the scrape is healthy, the rules load. Bounded waits;
# Prometheus is the project's to install (scripts/install-deps --test): missing, the test fails;
# a server that cannot run in this environment is a skip (a failure under CI).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

need_tool prometheus prometheus
: "${GV_SRC:?GV_SRC must name the source tree}"

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run_named $'q"uo\\te\xfe' --gpu 1 --mib 1024 --workers 1
kill_wait "$OWNER"
serve_start --interval 1s

# start_prometheus: on a free port; 0 once it is ready, 1 if it exited (its log says why)
start_prometheus() {
        PPORT=$(free_port)
        cat >"$GV_TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files:
  - $GV_SRC/deploy/prometheus/ghostvram-rules.yml
scrape_configs:
  - job_name: ghostvram
    static_configs:
      - targets: ["127.0.0.1:$PORT"]
YML
        rm -rf "$GV_TMP/tsdb"
        prometheus --config.file="$GV_TMP/prometheus.yml" --storage.tsdb.path="$GV_TMP/tsdb" \
                --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$GV_TMP/prometheus.log" 2>&1 &
        PROM=$!
        track "$PROM"
        local end=$((SECONDS + 60))
        while [ "$SECONDS" -lt "$end" ]; do
                curl -fs "http://127.0.0.1:$PPORT/-/ready" -o /dev/null && return 0
                kill -0 "$PROM" 2>/dev/null || return 1
                sleep 0.2
        done
        fail "prometheus never became ready within 60 s: $(tail -5 "$GV_TMP/prometheus.log")"
}
started=no
for attempt in 1 2 3; do       # a port taken between the probe and the bind: try another
        if start_prometheus; then started=yes; break; fi
done
[ "$started" = yes ] || skip "prometheus cannot run here: $(tail -3 "$GV_TMP/prometheus.log")"
API="http://127.0.0.1:$PPORT/api/v1"

query() { curl -fsS --max-time 5 -G "$API/query" --data-urlencode "query=$1"; }

note "the ghost series appears in Prometheus with the ledger's value"
has_ghost() { [ "$(query 'ghostvram_gpu_memory_used_bytes{kind="ghost",gpu="1"} > 0' | jq -r '.data.result[0].value[1]')" = $((1024 * MIB)) ]; }
wait_until 60 has_ghost || fail "no ghost series in Prometheus: $(query 'ghostvram_gpu_memory_used_bytes' | head -c 2000)"
r=$(query 'ghostvram_gpu_memory_used_bytes{kind="ghost",gpu="1"}')
assert_eq "$(jq -r '.data.result | length' <<<"$r")" 1 "one ghost series for GPU 1"
assert_eq "$(jq -r '.data.result[0].metric.pci_bus_id' <<<"$r")" "0000:43:00.0" "pci_bus_id label"
jq -e '.data.result[0].metric.uuid | startswith("GPU-")' <<<"$r" >/dev/null || fail "uuid label"
assert_eq "$(query 'up{job="ghostvram"}' | jq -r '.data.result[0].value[1]')" 1 "up"
wait_until 30 bash -c "[ \"\$(curl -fsS -G '$API/query' --data-urlencode 'query=ghostvram_gpu_verdict{gpu=\"1\",verdict=\"orphaned-holders\"}' | jq -r '.data.result[0].value[1]')\" = 1 ]" \
        || fail "verdict series"

note "the holder with a hostile name arrives escaped and repaired"
r=$(query 'ghostvram_holder_info{gpu="1"}')
assert_eq "$(jq -r '.data.result | length' <<<"$r")" 1 "one holder"
assert_eq "$(jq -r '.data.result[0].metric.pid' <<<"$r")" "${WORKERS[0]}" "holder pid"
assert_eq "$(jq -r '.data.result[0].metric.comm' <<<"$r")" $'q"uo\\te\xef\xbf\xbd' "holder comm (U+FFFD for the invalid byte)"
assert_eq "$(jq -r '.data.result[0].metric.attribution' <<<"$r")" process-group "attribution"
all=$(query '{__name__=~"ghostvram_.*"}') || fail "query of every ghostvram series failed"
grep -q hunter2 <<<"$all" && fail "a command line reached Prometheus"

note "the scrape is healthy and the rules are loaded"
t=$(curl -fsS "$API/targets")
assert_eq "$(jq -r '.data.activeTargets[0].health' <<<"$t")" up "target health ($(jq -r '.data.activeTargets[0].lastError' <<<"$t"))"
rules=$(curl -fsS "$API/rules")
# every alert of the rules file, counted from the file itself (and at least the 9 of today)
want=$(grep -c '^ *- alert:' "$GV_SRC/deploy/prometheus/ghostvram-rules.yml")
[ "$want" -ge 9 ] || fail "only $want alerts in the rules file"
assert_eq "$(jq -r '[.data.groups[].rules[]] | length' <<<"$rules")" "$want" "rules loaded"
assert_eq "$(jq -r '[.data.groups[].rules[] | select(.health != "ok")] | length' <<<"$rules")" 0 "rules healthy"
assert_eq "$(query 'count(ghostvram_scan_errors_total)' | jq -r '.data.result[0].value[1]')" 3 "error counters of every source"
note "every query of the Grafana dashboard runs on this server"
while IFS= read -r expr; do
        q=${expr//\$instance/.*}
        q=${q//\$gpu/.*}
        q=${q//\$__rate_interval/1m}
        st=$(curl -sS --max-time 5 -G "$API/query" --data-urlencode "query=$q" | jq -r '.status')
        assert_eq "$st" success "dashboard query: $expr"
done < <(jq -r '.panels[].targets[].expr' "$GV_SRC/deploy/grafana/ghostvram-dashboard.json")
r=$(query 'sum(ghostvram_gpu_memory_used_bytes{kind="ghost", instance=~".*", gpu=~".*"} and on (instance, gpu) ghostvram_gpu_ghost_confirmed == 1) or vector(0)')
assert_eq "$(jq -r '.data.result[0].value[1]' <<<"$r")" $((1024 * MIB)) "the dashboard's confirmed-ghost stat"
echo "PASS"
