#!/usr/bin/env bash
# scripts/run-main (`make run`): where the NVIDIA library is installed but its kernel module is not
# loaded, scan says which (library found, with its version, and the next steps), and run-main
# falls back to the demo on a simulated host instead of failing. ldconfig is made to list the
# library, as on such a host.
. "$(dirname "$0")/lib.sh"
: "${GV_SRC:?GV_SRC must name the source tree}"

mkdir -p "$GV_TMP/bin" "$GV_TMP/td"
printf '#!/bin/sh\necho "\tlibnvidia-ml.so.1 (libc6,x86-64) => %s/sim/current/libnvidia-ml.so.1"\n' "$GV_BUILD" >"$GV_TMP/bin/ldconfig"
chmod +x "$GV_TMP/bin/ldconfig"
export LD_LIBRARY_PATH="$GV_BUILD/sim/current"   # libnvidia-ml.so.1 found; no GHOSTVRAM_SIM: no module
unset GHOSTVRAM_SIM

note "scan: library found, module not loaded, with the version and the next steps"
set +e
out=$("$GV_BIN" scan 2>&1); rc=$?
set -e
assert_eq "$rc" 3 "scan exit status"
grep -q "NVIDIA driver library found (.*libnvidia-ml.so.1, NVML [0-9.]*) but the kernel module is not loaded: \`sudo modprobe nvidia\`" <<<"$out" ||
        fail "scan says: $out"
grep -q "dkms status" <<<"$out" || fail "no dkms step: $out"
j=$("$GV_BIN" scan --json 2>/dev/null || true)
assert_eq "$(jq -r .driver.library_found <<<"$j")" true "library_found"
assert_eq "$(jq -r .driver.module_loaded <<<"$j")" false "module_loaded"
note "a host without the library says so differently"
set +e
out2=$(LD_LIBRARY_PATH= "$GV_BIN" scan --nvml-lib "$GV_TMP/none/libnvidia-ml.so.1" 2>&1)
set -e
grep -q "kernel module is not loaded" <<<"$out2" && fail "no library reported as a missing module: $out2"

note "run-main falls back to the demo"
set +e
out=$(PATH="$GV_TMP/bin:$PATH" TMPDIR="$GV_TMP/td" bash "$GV_SRC/scripts/run-main" "$GV_BUILD" 2>&1); rc=$?
set -e
assert_eq "$rc" 0 "run-main exit status (output: ${out:0:600})"
grep -q "The NVIDIA driver cannot be read on this host: NVIDIA driver library found" <<<"$out" || fail "reason: ${out:0:600}"
grep -q "ghostvram demo — on a temporary SIMULATED host" <<<"$out" || fail "no demo: ${out:0:600}"
grep -q "Memory recovered" <<<"$out" || fail "demo incomplete"
assert_eq "$(ls -A "$GV_TMP/td")" "" "the demo's host removed"
echo "PASS"
