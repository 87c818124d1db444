#!/usr/bin/env bash
# deploy/kubernetes/ghostvram-npd.yaml: the manifests' structure (the objects NPD needs and
# their ties: the monitor config and the plugin mounted where the rules and the command look,
# the service account bound to a role that may patch node status and post events, the
# privileges ghostvram needs and no more, the image the container recipe builds), the custom
# plugin monitor config against Node Problem Detector's documented format, and the plugin
# script itself, taken from the ConfigMap and run on the simulated driver: NPD's exit
# convention (0 OK, 1 problem, other unknown) and a message within max_output_length.
. "$(dirname "$0")/lib.sh"
: "${GV_SRC:?GV_SRC must name the source tree}"
K="$GV_SRC/deploy/kubernetes"
python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing (scripts/install-deps --test)"

note "manifests and the custom plugin monitor config"
python3 - "$K/ghostvram-npd.yaml" "$K/Containerfile.npd" "$GV_TMP" <<'PY' || fail "structure checks"
import json, os, re, sys, yaml

docs = list(yaml.safe_load_all(open(sys.argv[1])))
kinds = [d["kind"] for d in docs]
assert kinds == ["Namespace", "ConfigMap", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet"], kinds
by = {d["kind"]: d for d in docs}
for d in docs:
    assert d["apiVersion"] in ("v1", "apps/v1", "rbac.authorization.k8s.io/v1"), d["apiVersion"]
    if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
        assert d["metadata"]["namespace"] == "ghostvram", d["kind"]

# --- the custom plugin monitor config (NPD docs/custom_plugin_monitor.md, config/custom-plugin-monitor.json)
cm = by["ConfigMap"]["data"]
mon = json.loads(cm["ghostvram-monitor.json"])
dur = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
def secs(d):
    assert dur.match(d), "not a Go duration: " + d
    return sum(float(n) * {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}[u]
               for n, _, u in re.findall(r"([0-9]+(\.[0-9]+)?)(ns|us|µs|ms|s|m|h)", d))
assert set(mon) <= {"plugin", "pluginConfig", "source", "metricsReporting", "conditions", "rules"}, set(mon)
assert mon["plugin"] == "custom"
assert isinstance(mon["source"], str) and mon["source"]
assert isinstance(mon["metricsReporting"], bool)
pc = mon["pluginConfig"]
assert set(pc) <= {"invoke_interval", "timeout", "max_output_length", "concurrency",
                   "enable_message_change_based_condition_update", "skip_initial_status"}, set(pc)
interval, timeout = secs(pc["invoke_interval"]), secs(pc["timeout"])
assert 0 < timeout <= interval, (timeout, interval)
assert isinstance(pc["max_output_length"], int) and pc["max_output_length"] >= 80
assert isinstance(pc["concurrency"], int) and pc["concurrency"] >= 1
camel = re.compile(r"^[A-Z][A-Za-z0-9]*$")
conds = {}
for c in mon["conditions"]:
    assert set(c) == {"type", "reason", "message"}, c
    assert camel.match(c["type"]) and camel.match(c["reason"]), c
    conds[c["type"]] = c
assert list(conds) == ["GPUMemoryGhost"], list(conds)
kinds_of_rules = set()
for r in mon["rules"]:
    assert set(r) <= {"type", "condition", "reason", "path", "args", "timeout"}, r
    assert r["type"] in ("temporary", "permanent"), r
    kinds_of_rules.add(r["type"])
    assert camel.match(r["reason"]), r
    if r["type"] == "permanent":
        assert r["condition"] in conds, r
        assert r["reason"] != conds[r["condition"]]["reason"], "a problem's reason differs from the default's"
    else:
        assert "condition" not in r, r
    assert secs(r["timeout"]) <= timeout, r
    # the plugin is the ConfigMap's script, mounted at /config
    assert r["path"].startswith("/config/") and r["path"][len("/config/"):] in cm, r["path"]
assert kinds_of_rules == {"temporary", "permanent"}, "a NodeCondition and events"

# --- RBAC: what NPD needs to set a condition and post events
sa = by["ServiceAccount"]["metadata"]["name"]
role = by["ClusterRole"]
grants = {(res, v) for rule in role["rules"] for res in rule["resources"] for v in rule["verbs"]}
for need in [("nodes", "get"), ("nodes/status", "patch"), ("events", "create")]:
    assert need in grants, need
assert all(v in ("get", "list", "watch", "patch", "create", "update") for _, v in grants), grants
b = by["ClusterRoleBinding"]
assert b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]}
assert b["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": "ghostvram"}]

# --- the DaemonSet
ds = by["DaemonSet"]
assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
pod = ds["spec"]["template"]["spec"]
assert pod["serviceAccountName"] == sa
assert pod["hostPID"] is True and not pod.get("hostNetwork")
assert pod["runtimeClassName"] == "nvidia"
c = pod["containers"][0]
cmd = c["command"]
assert cmd[0] == "/usr/bin/node-problem-detector", cmd
assert "--config.custom-plugin-monitor=/config/ghostvram-monitor.json" in cmd, cmd
env = {e["name"]: e for e in c["env"]}
assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
sc = c["securityContext"]
assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False and not sc.get("privileged")
assert sc["capabilities"]["drop"] == ["ALL"]
assert sorted(sc["capabilities"]["add"]) == ["DAC_READ_SEARCH", "SYS_PTRACE"], sc["capabilities"]["add"]
mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["volumes"]}
cfg = vols[mounts["/config"]]["configMap"]
assert cfg["name"] == by["ConfigMap"]["metadata"]["name"]
assert cfg["defaultMode"] == 0o555, oct(cfg["defaultMode"])
# the image is the one the container recipe builds
recipe = open(sys.argv[2]).read()
tag = re.search(r"build -t (\S+) -f deploy/kubernetes/Containerfile.npd", recipe).group(1)
assert c["image"] == tag, (c["image"], tag)
assert "/usr/bin/node-problem-detector" in recipe and "/usr/bin/ghostvram" in recipe

# hand the plugin and its limit to the shell
out = sys.argv[3]
with open(os.path.join(out, "plugin.sh"), "w") as f:
    f.write(cm["ghostvram-npd-check.sh"])
os.chmod(os.path.join(out, "plugin.sh"), 0o555)
with open(os.path.join(out, "max_output_length"), "w") as f:
    f.write(str(pc["max_output_length"]))
PY
PLUGIN="$GV_TMP/plugin.sh"
MAXLEN=$(cat "$GV_TMP/max_output_length")

# Run the plugin as NPD does: its exit status and first line of output.
plugin() { OUT=$(GHOSTVRAM="$GV_BIN" GHOSTVRAM_SIM="$SIM" "$PLUGIN") && RC=0 || RC=$?; }

note "the plugin on the simulated driver (NPD's exit convention)"
sim_new --gpus 2 --memory 16384 --reserved 512
plugin
assert_eq "$RC" 0 "clean: OK"
assert_eq "$OUT" "no GPU memory held by dead jobs: 2 GPUs ok" "clean message"
sim_run --gpu 1 --mib 3072 --workers 2
kill_wait "$OWNER"
plugin
assert_eq "$RC" 1 "ghost: problem"
assert_eq "$OUT" "GPU 1: 3072 MiB ghost (orphaned-holders, PIDs $OWNER ${WORKERS[*]}); 1 GPU ok" "ghost message"
[ "${#OUT}" -le "$MAXLEN" ] || fail "message longer than max_output_length ($MAXLEN)"
"$GV_BIN" sim set "$SIM" notsup=1:processes >/dev/null
plugin
assert_eq "$RC" 3 "no process list: unknown"
case $OUT in
"cannot inspect GPUs: GPU 1: no process list"*) ;;
*) fail "unknown message: $OUT" ;;
esac
"$GV_BIN" sim set "$SIM" notsup=none >/dev/null
kill_wait "${WORKERS[@]}"
plugin
assert_eq "$RC" 0 "after the workers ended: OK"
echo "PASS"
