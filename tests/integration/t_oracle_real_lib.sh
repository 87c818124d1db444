#!/usr/bin/env bash
# NVIDIA's real libnvidia-ml (535.261.03 from Debian) on a host with no NVIDIA kernel module -
# this machine, and CI's:
#  1. what it answers before init, at init and after the failed init, and its error strings,
#     equal what every stand-in variant answers without a simulated host (only the version
#     string differs); every name a stand-in exports, it exports;
#  2. every ghostvram command on it, through --nvml-lib and through the default loader: the
#     exit codes, no crash, no hang (the messages are printed for docs/simulator.md, and not
#     asserted: their wording is the edges issue's);
#  3. nvidia-smi: refuses the stand-in ("Mismatch in versions"), fails on the real library;
#  4. a library that can be unloaded, as NVIDIA's can (no NODELETE flag): a dlclose under a
#     stuck call crashes, and ghostvram survives stuck calls on it.
# The real library runs in a private /dev: as root it creates /dev/nvidiactl.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/oracle_lib.sh"
oracle_fetch
oracle_foreign_env
PY=/usr/bin/python3
[ -x "$PY" ] || fail "$PY is missing (Debian package python3)"
ORACLE=$GV_SRC/tests/oracle
REAL=$NV/libnvidia-ml.so.1
real_version=$(oracle_version libnvidia-ml1 bookworm)
real_version=${real_version%-*}
[ -n "$real_version" ] || fail "no libnvidia-ml1 in $NV/manifest"
[ ! -e /sys/module/nvidia ] || fail "this host has an NVIDIA kernel module: the test needs a host without one"
host_ctl_before=$([ -e /dev/nvidiactl ] && echo yes || echo no)

note "1. no kernel module: NVIDIA's $real_version library against the stand-in"
in_private_dev "$PY" "$ORACLE/nvml_nodriver.py" "$REAL" >"$GV_TMP/real.json" || fail "the probe failed on the real library"
jq -e '.init == 9 and .init_with_flags == 9' "$GV_TMP/real.json" >/dev/null ||
        fail "the real library's init did not return DRIVER_NOT_LOADED (9): $(jq -c '{init, init_with_flags}' "$GV_TMP/real.json")"
assert_eq "$(jq -r '.before_init.nvml_version[1]' "$GV_TMP/real.json")" "12.$real_version" "real NVML version before init"
assert_eq "$(jq -r '.error_strings["21"]' "$GV_TMP/real.json")" "No data" "real nvmlErrorString(21)"
jq -c 'del(.error_strings)' "$GV_TMP/real.json"
# what the real library does without a driver, as root: it makes the control node
if [ "$(id -u)" = 0 ]; then
        in_private_dev bash -c "LD_LIBRARY_PATH=$NV $PY -c 'import ctypes; ctypes.CDLL(\"libnvidia-ml.so.1\").nvmlInit_v2()'; stat -c '%F %t:%T' /dev/nvidiactl" \
                >"$GV_TMP/ctl" 2>&1 || true
        assert_eq "$(cat "$GV_TMP/ctl")" "character special file c3:ff" "/dev/nvidiactl made by the real library's init (as root)"
fi
# Without $GHOSTVRAM_SIM a stand-in is a library on a host without the module: same answers
for v in current 535.54.03 535.98 470.42.01 440.33.01; do
        env -u GHOSTVRAM_SIM "${FOREIGN_ENV[@]}" "$PY" "$ORACLE/nvml_nodriver.py" "$GV_BUILD/sim/$v/libnvidia-ml.so.1" >"$GV_TMP/$v.json" ||
                fail "the probe failed on the $v stand-in"
        # only the library's own version differs
        filter='del(.before_init.nvml_version[1], .after_failed_init.nvml_version[1])'
        if ! diff <(jq -S "$filter" "$GV_TMP/real.json") <(jq -S "$filter" "$GV_TMP/$v.json"); then
                fail "the $v stand-in answers differently from NVIDIA's library without a driver (diff above: < real, > stand-in)"
        fi
        jq -e '.before_init.nvml_version[1] | test("^[0-9]+\\.[0-9.]+$")' "$GV_TMP/$v.json" >/dev/null ||
                fail "$v: no NVML version before init"
done
note "every stand-in variant answers as NVIDIA's library does"

# every name a stand-in exports is a name NVIDIA's library exports (535.261.03 has all of them)
syms() { nm -D --defined-only "$1" | awk '{ sub(/@.*/, "", $3); print $3 }' | sort -u; }
syms "$REAL" >"$GV_TMP/real.syms"
[ "$(wc -l <"$GV_TMP/real.syms")" -gt 200 ] || fail "nm found too few symbols in the real library"
for v in current 535.54.03 535.98 470.42.01 440.33.01; do
        extra=$(syms "$GV_BUILD/sim/$v/libnvidia-ml.so.1" | comm -23 - "$GV_TMP/real.syms")
        [ -z "$extra" ] || fail "the $v stand-in exports names NVIDIA's library does not: $extra"
done
assert_eq "$(syms "$GV_BUILD/sim/current/libnvidia-ml.so.1" | wc -l)" \
        "$(syms "$GV_BUILD/sim/current/libnvidia-ml.so.1" | comm -12 - "$GV_TMP/real.syms" | wc -l)" \
        "the current stand-in's exports found in NVIDIA's library"

note "2. ghostvram on the real library (messages recorded, exit codes asserted)"
kmsg=$GV_FIXTURES/kmsg/dmesg.txt
[ -r "$kmsg" ] || fail "no $kmsg"
# run_cmd WANT_RC HOW ARGS...: HOW is "opt" (--nvml-lib) or "env" (the default loader finds it)
run_cmd() {
        local want=$1 how=$2 rc=0 out
        shift 2
        if [ "$how" = opt ]; then
                out=$(in_private_dev env -u GHOSTVRAM_SIM timeout 60 "$GV_BIN" "$@" --nvml-lib "$REAL" 2>&1) || rc=$?
        else
                out=$(in_private_dev env -u GHOSTVRAM_SIM LD_LIBRARY_PATH="$NV" timeout 60 "$GV_BIN" "$@" 2>&1) || rc=$?
        fi
        printf '$ ghostvram %s   [%s]\n%s\n(exit %d)\n' "$*" "$how" "$(head -n 4 <<<"$out")" "$rc"
        [ "$rc" -ne 124 ] || fail "ghostvram $* hung on the real library"
        [ "$rc" -lt 128 ] || fail "ghostvram $* died of signal $((rc - 128)) on the real library"
        assert_eq "$rc" "$want" "exit status of ghostvram $* on the real library ($how)"
        LAST=$out
}
for how in opt env; do
        run_cmd 3 $how scan
        grep -q "NVIDIA driver library found (.*NVML 12.535.261.03) but the kernel module is not loaded" <<<"$LAST" ||
                fail "scan tells a library without its module from no driver"
        run_cmd 3 $how scan --json
        jq -e '.driver.present == false and .gpus == []' <<<"$LAST" >/dev/null || fail "scan --json: driver present or GPUs listed"
        run_cmd 3 $how snapshot
        run_cmd 3 $how snapshot --json
        jq -e '.driver.present == false and .gpus == [] and (.driver.error | type) == "string"' <<<"$LAST" >/dev/null ||
                fail "snapshot --json: $(jq -c .driver <<<"$LAST")"
        if [ $how = opt ]; then
                assert_eq "$(jq -r .driver.library <<<"$LAST")" "$REAL" "snapshot --json: the library loaded"
        fi
        run_cmd 3 $how check
        run_cmd 3 $how watch --count 1
        grep -q "the kernel module is not loaded" <<<"$LAST" || fail "watch says the module is not loaded"
        run_cmd 3 $how reclaim
        run_cmd 3 $how reclaim --gpu 0 --yes
        run_cmd 3 $how experiment --gpu 0 --mib 16
        run_cmd 0 $how xid --kmsg "$kmsg"
done
# serve: keeps serving, says the driver is absent, ends cleanly
cat >"$GV_TMP/serve.sh" <<EOF
set -e
"$GV_BIN" serve --listen 127.0.0.1:0 --interval 1s --nvml-lib "$REAL" >"$GV_TMP/serve.out" 2>&1 &
p=\$!
for i in \$(seq 600); do grep -q 'listening on' "$GV_TMP/serve.out" && break; sleep 0.05; done
url=http://\$(grep -o '127.0.0.1:[0-9]*' "$GV_TMP/serve.out" | head -n1)
# /healthz turns 200 after the first collection (30 s at most)
for i in \$(seq 300); do
        code=\$(curl -s -o /dev/null -w '%{http_code}' "\$url/healthz" || true)
        [ "\$code" = 200 ] && break
        sleep 0.1
done
echo "\$code"
curl -s "\$url/api/v1/scan" | jq -c '{present: .driver.present, gpus: (.gpus | length)}'
kill -TERM \$p
rc=0; wait \$p || rc=\$?
echo "exit \$rc"
EOF
serve_out=$(in_private_dev timeout 60 bash "$GV_TMP/serve.sh") || fail "serve on the real library: $serve_out"
printf '$ ghostvram serve --nvml-lib REAL\n%s\n%s\n' "$(head -n 2 "$GV_TMP/serve.out")" "$serve_out"
assert_eq "$serve_out" $'200\n{"present":false,"gpus":0}\nexit 0' "serve on the real library: /healthz, the scan, the exit"
if [ "$host_ctl_before" = no ] && [ -e /dev/nvidiactl ]; then
        fail "the host's /dev/nvidiactl appeared: the private /dev leaked"
fi

note "3. nvidia-smi $(oracle_version nvidia-smi bookworm)"
sim_new --gpus 2
rc=0
out=$(env "${FOREIGN_ENV[@]}" GHOSTVRAM_SIM="$SIM" LD_LIBRARY_PATH="$GV_BUILD/sim/current" timeout 30 "$NV/nvidia-smi" 2>&1) || rc=$?
printf '$ nvidia-smi   [stand-in]\n%s\n(exit %d)\n' "$out" "$rc"
# it needs NVIDIA's private export table (nvmlInternalGetExportTable): not emulated
assert_eq "$rc" 255 "nvidia-smi on the stand-in"
grep -q "Mismatch in versions between nvidia-smi and NVML" <<<"$out" || fail "nvidia-smi on the stand-in: unexpected message"
rc=0
out=$(in_private_dev env LD_LIBRARY_PATH="$NV" timeout 30 "$NV/nvidia-smi" 2>&1) || rc=$?
printf '$ nvidia-smi   [real library, no module]\n%s\n(exit %d)\n' "$out" "$rc"
assert_eq "$rc" 9 "nvidia-smi on the real library without a module (NVML_ERROR_DRIVER_NOT_LOADED)"

note "4. a library that can be unloaded, as NVIDIA's can"
grep -q NODELETE <<<"$(readelf -d "$REAL")" && fail "NVIDIA's library is marked NODELETE: the premise of this test is wrong"
grep -q NODELETE <<<"$(readelf -d "$GV_BUILD/sim/current/libnvidia-ml.so.1")" || fail "the stand-in is no longer -z nodelete"
UNL=$GV_BUILD/sim-unloadable/current/libnvidia-ml.so.1
[ -e "$UNL" ] || fail "no $UNL (target nvml_sim_unloadable)"
"$GV_BIN" sim set "$SIM" hang=nvmlDeviceGetCount_v2 >/dev/null
echo "(a segmentation fault is expected next)"
rc=0
env "${FOREIGN_ENV[@]}" GHOSTVRAM_SIM="$SIM" timeout 20 "$PY" "$ORACLE/nvml_unload.py" "$UNL" >/dev/null 2>&1 || rc=$?
assert_eq "$rc" 139 "dlclose under a stuck call on the unloadable stand-in (SIGSEGV)"
out=$(env "${FOREIGN_ENV[@]}" GHOSTVRAM_SIM="$SIM" timeout 20 "$PY" "$ORACLE/nvml_unload.py" "$GV_BUILD/sim/current/libnvidia-ml.so.1") ||
        fail "the -z nodelete stand-in did not survive a dlclose under a stuck call"
assert_eq "$out" alive "the -z nodelete stand-in under a dlclose"
# ghostvram abandons stuck calls and must never unload the library under them
"$GV_BIN" sim set "$SIM" hang=none >/dev/null
"$GV_BIN" sim set "$SIM" hang=1:nvmlDeviceGetMemoryInfo_v2 >/dev/null
sim_run --gpu 0 --mib 512
unl() { # WANT_RC ARGS...
        local want=$1 rc=0
        shift
        LAST=$(GHOSTVRAM_SIM=$SIM timeout 60 "$GV_BIN" "$@" --nvml-lib "$UNL" 2>&1) || rc=$?
        [ "$rc" -lt 128 ] || fail "ghostvram $* died of signal $((rc - 128)) on the unloadable library"
        assert_eq "$rc" "$want" "exit status of ghostvram $* with a stuck call on the unloadable library"
}
unl 0 snapshot --json --call-timeout 1s
assert_eq "$(jq -r '[.gpus[].status] | join(" ")' <<<"$LAST")" "ok timeout" "snapshot: GPU 0 read, GPU 1 stuck"
assert_eq "$(jq -r '.gpus[0].nvml_processes[0].pid' <<<"$LAST")" "$OWNER" "snapshot: GPU 0's process"
unl 3 scan --call-timeout 1s
unl 3 check --timeout 2
# one GPU hung, the other answering: watch samples GPU 0, says GPU 1 is not inspected, exits 0
# (t_watch_hook: a driver that hangs on every call is no sample that succeeded, exit 3)
unl 0 watch --count 3 --interval 1s --call-timeout 1s
grep -q "GPU 1: driver did not answer" <<<"$LAST" || fail "watch says GPU 1 did not answer: $LAST"
grep -q "GPU 0 ok" <<<"$LAST" || fail "watch shows GPU 0: $LAST"
grep -q "no sample succeeded" <<<"$LAST" && fail "watch: GPU 0 was sampled: $LAST"
cat >"$GV_TMP/serve-unl.sh" <<EOF
GHOSTVRAM_SIM=$SIM "$GV_BIN" serve --listen 127.0.0.1:0 --interval 1s --call-timeout 1s --nvml-lib "$UNL" >"$GV_TMP/serve-unl.out" 2>&1 &
p=\$!
for i in \$(seq 600); do grep -q 'listening on' "$GV_TMP/serve-unl.out" && break; sleep 0.05; done
url=http://\$(grep -o '127.0.0.1:[0-9]*' "$GV_TMP/serve-unl.out" | head -n1)
# 4 collections with the call stuck (30 s at most)
for i in \$(seq 300); do
        n=\$(curl -s "\$url/metrics" | awk '/^ghostvram_scans_total/ { n += \$2 } END { print n + 0 }' || true)
        [ "\${n:-0}" -ge 4 ] && break
        sleep 0.1
done
echo "collections: \$n" >&2
kill -0 \$p || { echo "serve died"; exit 1; }
curl -s -o /dev/null -w '%{http_code}\n' "\$url/metrics"
curl -s -o /dev/null -w 'healthz %{http_code}\n' "\$url/healthz" >&2
kill -0 \$p || { echo "serve died"; exit 1; }
kill -TERM \$p
rc=0; wait \$p || rc=\$?
echo "exit \$rc"
EOF
out=$(timeout 60 bash "$GV_TMP/serve-unl.sh") || fail "serve with stuck calls on the unloadable library: $out"
assert_eq "$out" $'200\nexit 0' "serve with stuck calls on the unloadable library: /metrics, the exit"
echo "PASS"
