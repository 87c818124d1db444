#!/usr/bin/env bash
# deploy/: every file through its validator (scripts/install-deps --test installs them all: a
# missing one is a failure, never a skip). Prometheus rules: promtool check
# rules and promtool test rules (the alerts fire and stay quiet where they should). systemd
# units: systemd-analyze verify (no warning at all) and its offline security score; none of
# the settings that would blind the tool. Grafana: valid JSON that uses only documented
# metrics. Kubernetes: valid YAML with the privileges the DaemonSet must have and no more.
. "$(dirname "$0")/lib.sh"
: "${GV_SRC:?GV_SRC must name the source tree}"
D="$GV_SRC/deploy"
DOC="$GV_SRC/docs/metrics.md"
need_tool promtool prometheus
need_tool systemd-analyze systemd
python3 -c 'import yaml' 2>/dev/null || fail "python3 cannot import yaml (Debian package python3-yaml): run scripts/install-deps --test"

note "Prometheus rules"
promtool check rules "$D/prometheus/ghostvram-rules.yml" >/dev/null || fail "promtool check rules"
out=$(cd "$D/prometheus" && promtool test rules ghostvram-rules.test.yml 2>&1) || fail "promtool test rules: $out"
grep -q SUCCESS <<<"$out" || fail "promtool test rules: $out"
# the rule tests pin every alert: an alert without a test is an untested alert
for a in $(sed -n 's/^ *- alert: *//p' "$D/prometheus/ghostvram-rules.yml"); do
        grep -q "alertname: $a\$" "$D/prometheus/ghostvram-rules.test.yml" || fail "alert $a has no promtool test"
done

note "every metric the rules and the dashboard use is documented"
used=$( { grep -o 'ghostvram_[a-z_]*' "$D/prometheus/ghostvram-rules.yml"
          jq -r '.panels[].targets[].expr, .templating.list[].definition // empty' "$D/grafana/ghostvram-dashboard.json" |
                  grep -o 'ghostvram_[a-z_]*'; } | sort -u)
[ -n "$used" ] || fail "no metric found in the rules and the dashboard"
for m in $used; do
        grep -q "\`$m\`" "$DOC" || fail "$m is used in deploy/ but not documented in docs/metrics.md"
done

note "Grafana dashboard"
jq -e '.uid == "ghostvram" and (.panels | length) >= 8 and all(.panels[]; (.targets | length) >= 1 and .datasource.uid == "${datasource}")' \
        "$D/grafana/ghostvram-dashboard.json" >/dev/null || fail "dashboard structure"
assert_eq "$(jq '[.panels[].id] | length' "$D/grafana/ghostvram-dashboard.json")" \
        "$(jq '[.panels[].id] | unique | length' "$D/grafana/ghostvram-dashboard.json")" "unique panel ids"

note "systemd units"
for u in "$D"/systemd/*.service; do
        for bad in 'ProtectProc=invisible' 'ProtectKernelLogs=yes' 'PrivateDevices=yes' 'ProcSubset=pid'; do
                grep -q "^$bad" "$u" && fail "$(basename "$u") sets $bad, which blinds the tool"
        done
        grep -q '^CapabilityBoundingSet=CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG$' "$u" || fail "$(basename "$u"): capabilities"
done
{
        T="$GV_TMP/units"
        mkdir -p "$T"
        for f in "$D"/systemd/*; do sed "s|/usr/bin/ghostvram|$GV_BIN|g" "$f" >"$T/$(basename "$f")"; done
        if out=$(systemd-analyze verify --man=no "$T"/*.service "$T"/*.timer 2>&1) && [ -z "$out" ]; then
                :
        elif grep -qi "Failed to .*manager\|Failed to initialize\|System has not been booted" <<<"$out"; then
                skip "systemd-analyze verify cannot run in this environment: $out"
        else
                fail "systemd-analyze verify: $out"
        fi
        for s in "$T"/*.service; do
                out=$(systemd-analyze security --offline=yes --threshold=40 "$s" 2>&1) \
                        || fail "$(basename "$s"): exposure above 4.0: $(tail -1 <<<"$out")"
                note "  $(tail -1 <<<"$out" | sed 's/→ //')"
        done
}

note "Kubernetes DaemonSet"
{
        python3 - "$D/kubernetes/ghostvram-daemonset.yaml" <<'PY' || fail "DaemonSet checks"
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
kinds = [d["kind"] for d in docs]
assert kinds == ["Namespace", "DaemonSet", "Service", "NetworkPolicy"], kinds
ds = docs[1]["spec"]["template"]["spec"]
assert ds["hostPID"] is True, "hostPID"
assert not ds.get("hostNetwork"), "hostNetwork"
c = ds["containers"][0]
sc = c["securityContext"]
assert sc["readOnlyRootFilesystem"] is True, "read-only root"
assert sc["allowPrivilegeEscalation"] is False, "privilege escalation"
assert not sc.get("privileged"), "privileged"
assert sc["capabilities"]["drop"] == ["ALL"], "drop ALL"
assert sorted(sc["capabilities"]["add"]) == ["DAC_READ_SEARCH", "SYSLOG", "SYS_PTRACE"], sc["capabilities"]["add"]
assert c["args"][0] == "serve", c["args"]
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
assert mounts["/dev/kmsg"]["readOnly"] is True, "kmsg read-only"
assert c["readinessProbe"]["httpGet"]["path"] == "/healthz"
assert docs[3]["spec"]["egress"] == [], "no egress"
PY
}
echo "PASS"
