#!/usr/bin/env bash
# ghostvram doctor on the simulated driver: every check code, each made to fire by a knob or by
# a file under --root, its level, evidence and exit status; --gpu by index, UUID and PCI bus id;
# --explain; the command line (help CMD, a one-line unknown option, --version).
. "$(dirname "$0")/lib.sh"
need_tool jq jq

sim_new --gpus 2
R="$GV_TMP/root"
mkdir -p "$R/proc/driver/nvidia" "$R/proc/sys/kernel" "$R/etc"
ver=$(GHOSTVRAM_SIM="$SIM" "$GV_QUERY" | jq -r .driver)
[ -n "$ver" ] && [ "$ver" != null ] || fail "the simulated driver has no version"
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Thu Aug 22 00:00:00 UTC 2024\nGCC version:  gcc version 12.2.0\n' "$ver" \
        >"$R/proc/driver/nvidia/version"
printf 'ResmanDebugLevel: 4294967295\nPreserveVideoMemoryAllocations: 1\nTemporaryFilePath: "/var/tmp"\nRestrictProfilingToAuthUsers: 1\n' \
        >"$R/proc/driver/nvidia/params"
printf 'nvidia_uvm 1437696 0 - Live 0x0000000000000000 (PO)\nnvidia 56512512 1 nvidia_uvm, Live 0x0000000000000000 (PO)\n' \
        >"$R/proc/modules"
echo 0 >"$R/proc/sys/kernel/dmesg_restrict"

# doctor ARGS...: JSON in $GV_TMP/d.json, exit status in RC
doctor() {
        RC=0
        GHOSTVRAM_SIM="$SIM" "$GV_BIN" doctor --root "$R" --json "$@" >"$GV_TMP/d.json" || RC=$?
        jq -e .findings "$GV_TMP/d.json" >/dev/null || fail "doctor $* printed no findings: $(cat "$GV_TMP/d.json")"
}
# level CODE [GPU]: the level of that finding ("" if absent; host findings have gpu null)
level() {
        if [ $# -ge 2 ]; then
                jq -r --arg c "$1" --argjson g "$2" '[.findings[] | select(.code == $c and .gpu_index == $g) | .level] | join(",")' "$GV_TMP/d.json"
        else
                jq -r --arg c "$1" '[.findings[] | select(.code == $c and .gpu_index == null) | .level] | join(",")' "$GV_TMP/d.json"
        fi
}
field() { # CODE GPU|null FIELD
        jq -r --arg c "$1" --argjson g "$2" --arg f "$3" '[.findings[] | select(.code == $c and .gpu_index == $g) | .[$f]] | first' "$GV_TMP/d.json"
}

note "a healthy simulated host: every check ok, exit 0"
doctor
assert_eq "$RC" 0 "exit status of a healthy host"
for code in persistence-off row-remap-pending retired-pages-pending mig-pending ecc-uncorrectable reset-required allocator-cache; do
        assert_eq "$(level $code 0)" ok "$code on GPU 0"
        assert_eq "$(level $code 1)" ok "$code on GPU 1"
done
for code in driver-known-issue uvm-not-loaded uvm-in-use kernel-log-restricted version-mismatch container-toolkit; do
        assert_eq "$(level $code)" ok "$code"
done
assert_eq "$(level module-params)" info "module-params"
assert_eq "$(jq -r .driver_version "$GV_TMP/d.json")" "$ver" "driver version"
field module-params null evidence | grep -q 'PreserveVideoMemoryAllocations=1' || fail "module-params evidence: $(field module-params null evidence)"
field module-params null evidence | grep -q 'RestrictProfilingToAuthUsers=1' || fail "RestrictProfilingToAuthUsers not shown"
field module-params null next_step | grep -q 'suspend' || fail "PreserveVideoMemoryAllocations not explained"
field module-params null evidence | grep -q ResmanDebugLevel && fail "a parameter without a note was listed"
assert_eq "$(field version-mismatch null evidence)" "NVML library $ver; kernel module $ver (/proc/driver/nvidia/version)" "version evidence"

note "persistence-off on one GPU, with whether nvidia-persistenced runs"
"$GV_BIN" sim set "$SIM" persistence=1:off
doctor
assert_eq "$RC" 1 "a warning exits 1"
assert_eq "$(level persistence-off 1)" warn "persistence-off GPU 1"
assert_eq "$(level persistence-off 0)" ok "persistence-off GPU 0"
field persistence-off 1 evidence | grep -q 'nvidia-persistenced is not running' || fail "evidence: $(field persistence-off 1 evidence)"
field persistence-off 1 next_step | grep -q 'does not free a ghost' || fail "persistence next step must say what it does not do"
field persistence-off 1 next_step | grep -q 'nvidia-smi -i 1 -pm 1' || fail "persistence next step names the GPU"
"$GV_BIN" sim set "$SIM" persistence=default

note "the health knobs: each its own code on its own GPU"
for pair in remap_pending=0:on:row-remap-pending retired_pending=1:on:retired-pages-pending \
            mig_pending=0:on:mig-pending ecc_uncorrected=1:7:ecc-uncorrectable reset_required=0:on:reset-required; do
        knob=${pair%%:*}:$(echo "$pair" | cut -d: -f2); code=${pair##*:}
        gpu=$(echo "$pair" | cut -d= -f2 | cut -d: -f1); other=$((1 - gpu))
        "$GV_BIN" sim set "$SIM" "$knob"
        doctor
        assert_eq "$RC" 1 "$code exits 1"
        assert_eq "$(level "$code" "$gpu")" warn "$code on GPU $gpu ($knob)"
        assert_eq "$(level "$code" "$other")" ok "$code on GPU $other"
        field "$code" "$gpu" next_step | grep -q "nvidia-smi -r -i $gpu" || fail "$code: next step $(field "$code" "$gpu" next_step)"
        "$GV_BIN" sim set "$SIM" "${knob%%=*}=default"
done
"$GV_BIN" sim set "$SIM" ecc_uncorrected=1:7
doctor
assert_eq "$(field ecc-uncorrectable 1 evidence)" "nvmlDeviceGetTotalEccErrors(uncorrected, volatile) = 7" "ECC count"
"$GV_BIN" sim set "$SIM" ecc_uncorrected=default mig_pending=1:on
doctor
assert_eq "$(field mig-pending 1 evidence)" "nvmlDeviceGetMigMode: current disabled, pending enabled" "MIG pending evidence"
"$GV_BIN" sim set "$SIM" mig_pending=default

note "health queries not supported: unknown, not ok"
"$GV_BIN" sim set "$SIM" notsup=0:health
doctor
assert_eq "$RC" 0 "unknown health is not a warning"
assert_eq "$(level row-remap-pending 0)" unknown "remap unsupported"
assert_eq "$(level ecc-uncorrectable 0)" unknown "ECC unsupported"
assert_eq "$(level row-remap-pending 1)" ok "GPU 1 still answers"
"$GV_BIN" sim set "$SIM" notsup=none

note "gpu-unreachable: a lost GPU"
"$GV_BIN" sim set "$SIM" gpu_lost=1:on
doctor
assert_eq "$RC" 1 "a lost GPU is a warning"
assert_eq "$(level gpu-unreachable 1)" warn "lost GPU 1"
assert_eq "$(level persistence-off 1)" "" "no per-GPU checks of a lost GPU"
"$GV_BIN" sim set "$SIM" gpu_lost=default

note "allocator-cache and uvm-in-use: a live job holding memory and /dev/nvidia-uvm"
sim_run --gpu 0 --mib 600
printf 'nvidia_uvm 1437696 2 - Live 0x0000000000000000 (PO)\n' >"$R/proc/modules"
doctor --cache-min 512M
assert_eq "$RC" 0 "info findings do not change the exit status"
assert_eq "$(level allocator-cache 0)" info "600 MiB above a 512 MiB threshold"
assert_eq "$(level allocator-cache 1)" ok "nothing on GPU 1"
field allocator-cache 0 summary | grep -q "PID $OWNER " || fail "allocator-cache names the owner $OWNER: $(field allocator-cache 0 summary)"
field allocator-cache 0 next_step | grep -q 'torch.cuda.empty_cache()' || fail "allocator-cache says how to release it"
doctor --cache-min 1G
assert_eq "$(level allocator-cache 0)" ok "600 MiB under 1 GiB"
assert_eq "$(level uvm-in-use)" info "uvm in use"
field uvm-in-use null evidence | grep -q "use count 2" || fail "uvm evidence: $(field uvm-in-use null evidence)"
field uvm-in-use null evidence | grep -q "$OWNER (" || fail "the uvm holder $OWNER is named: $(field uvm-in-use null evidence)"

note "uvm-not-loaded"
printf 'nvidia 56512512 0 - Live 0x0000000000000000 (PO)\n' >"$R/proc/modules"
doctor
assert_eq "$(level uvm-not-loaded)" warn "no nvidia_uvm line"
assert_eq "$(level uvm-in-use)" "" "no uvm-in-use without the module"
assert_eq "$RC" 1 "uvm-not-loaded exits 1"
printf 'nvidia_uvm 1437696 0 - Live 0x0000000000000000 (PO)\n' >"$R/proc/modules"

note "kernel-log-restricted follows dmesg_restrict and who asks"
echo 1 >"$R/proc/sys/kernel/dmesg_restrict"
doctor
if [ "$(id -u)" = 0 ]; then
        assert_eq "$(level kernel-log-restricted)" ok "root reads a restricted log"
        field kernel-log-restricted null evidence | grep -q 'dmesg_restrict = 1; running as root' || fail "evidence"
else
        assert_eq "$(level kernel-log-restricted)" warn "a user cannot read a restricted log"
fi
echo 0 >"$R/proc/sys/kernel/dmesg_restrict"

note "version-mismatch: the module is another version than the library"
sed -i "s/$ver/550.54.15/" "$R/proc/driver/nvidia/version"
doctor
assert_eq "$(level version-mismatch)" warn "library and module differ"
field version-mismatch null summary | grep -q "($ver) and the loaded kernel module (550.54.15)" || fail "$(field version-mismatch null summary)"
assert_eq "$RC" 1 "version-mismatch exits 1"

note "driver-known-issue from the module's version when NVML cannot be asked; nvml-unavailable exits 3"
printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.161.07  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Feb 29 00:00:00 UTC 2024\n' \
        >"$R/proc/driver/nvidia/version"
doctor --nvml-lib "$GV_TMP/no-such-libnvidia-ml.so.1"
assert_eq "$RC" 3 "no NVML: could not inspect"
assert_eq "$(level nvml-unavailable)" unknown "nvml-unavailable"
assert_eq "$(level driver-known-issue)" warn "535.161.07 open module is in the table"
field driver-known-issue null source | grep -q 'open-gpu-kernel-modules/issues/613' || fail "the row's source"
assert_eq "$(level persistence-off 0)" "" "no GPU checks without NVML"
sed -i 's/Open Kernel Module for x86_64/Kernel Module/' "$R/proc/driver/nvidia/version"
doctor --nvml-lib "$GV_TMP/no-such-libnvidia-ml.so.1"
assert_eq "$(level driver-known-issue)" ok "the proprietary module of 535.161.07 is not affected"
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Thu Aug 22 00:00:00 UTC 2024\n' "$ver" >"$R/proc/driver/nvidia/version"

note "container-toolkit: presence and mode"
mkdir -p "$R/etc/nvidia-container-runtime"
printf '[nvidia-container-cli]\nmode = "wrong-table"\n\n[nvidia-container-runtime]\n  log-level = "info"\n  mode = "cdi"\n' \
        >"$R/etc/nvidia-container-runtime/config.toml"
doctor
assert_eq "$(level container-toolkit)" info "toolkit installed"
field container-toolkit null summary | grep -q 'mode cdi' || fail "toolkit mode: $(field container-toolkit null summary)"
rm -r "$R/etc/nvidia-container-runtime"

note "--gpu by index, UUID and PCI bus id; unknown GPUs are errors"
snap=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json)
uuid=$(jq -r '.gpus[1].uuid' <<<"$snap"); pci=$(jq -r '.gpus[1].pci_bus_id' <<<"$snap")
for spec in 1 "$uuid" "$pci" "${pci^^}" "0000${pci^^}" "${pci#0000:}"; do
        doctor --gpu "$spec"
        assert_eq "$(jq -r '[.findings[] | select(.gpu_index != null) | .gpu_index] | unique | map(tostring) | join(",")' "$GV_TMP/d.json")" 1 "--gpu $spec"
done
for spec in 99 GPU-00000000-0000-0000-0000-000000000000 0000:ff:00.0; do
        rc=0; GHOSTVRAM_SIM="$SIM" "$GV_BIN" doctor --gpu "$spec" >/dev/null 2>"$GV_TMP/err" || rc=$?
        assert_eq "$rc" 2 "--gpu $spec"
        grep -q "this host has 2 GPUs" "$GV_TMP/err" || fail "--gpu $spec: $(cat "$GV_TMP/err")"
done
rc=0; "$GV_BIN" doctor --gpu banana 2>"$GV_TMP/err" || rc=$?
assert_eq "$rc" 2 "--gpu banana"

note "--explain: prevention and the sourced table"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" doctor --root "$R" --explain >"$GV_TMP/explain.txt"
for s in 'process group' PR_SET_PDEATHSIG 'persistent workers' 'cgroup kill\|kill by cgroup' \
         'CUDA_LAUNCH_BLOCKING=1 is a debugging aid, not a fix' 'source: https://github.com/NVIDIA/open-gpu-kernel-modules/issues/613'; do
        grep -q "$s" "$GV_TMP/explain.txt" || fail "--explain lacks '$s'"
done
doctor --explain
assert_eq "$(jq '[.known_issues[] | select((.source | test("https://")) | not)] | length' "$GV_TMP/d.json")" 0 "every table row has a link"
[ "$(jq '.known_issues | length' "$GV_TMP/d.json")" -ge 4 ] || fail "the table has its sourced rows"
[ "$(jq '.prevention | length' "$GV_TMP/d.json")" -ge 6 ] || fail "prevention paragraphs"

note "every ghostvram command --explain recommends can be pasted: with --help appended, none is a usage error"
# the commands are quoted in the text (`...` or '...'), perhaps after sudo; each is run split into
# words, never through a shell, with --help last: an unknown option or command still exits 2
GHOSTVRAM_SIM="$SIM" "$GV_BIN" doctor --root "$R" --explain --verbose >"$GV_TMP/explain.txt"
grep -o "[\`'][^\`']*ghostvram [^\`']*[\`']" "$GV_TMP/explain.txt" | tr -d "\`'" | sed 's/^sudo //' | sort -u \
        >"$GV_TMP/commands"
grep -q '^ghostvram watch ' "$GV_TMP/commands" || fail "the watch advice was not found: $(cat "$GV_TMP/commands")"
[ "$(wc -l <"$GV_TMP/commands")" -ge 3 ] || fail "commands found: $(cat "$GV_TMP/commands")"
while read -ra words; do
        [ "${words[0]}" = ghostvram ] || fail "not a ghostvram command: ${words[*]}"
        rc=0
        GHOSTVRAM_SIM="$SIM" "$GV_BIN" "${words[@]:1}" --help >/dev/null 2>"$GV_TMP/err" || rc=$?
        [ "$rc" -ne 2 ] || fail "doctor --explain prints '${words[*]}', a usage error: $(cat "$GV_TMP/err")"
done <"$GV_TMP/commands"

note "the command line: help CMD, a one-line unknown option, --version after the command"
# (each help read whole before matching: grep -q in a pipe may quit before a long text is
# written, and the writer's SIGPIPE fails the pipeline under pipefail)
grep -q '^Usage: ghostvram doctor' <<<"$("$GV_BIN" help doctor)" || fail "ghostvram help doctor"
grep -q '^Usage: ghostvram scan' <<<"$("$GV_BIN" help scan)" || fail "ghostvram help scan"
[ "$("$GV_BIN" help doctor | wc -L)" -le 80 ] || fail "doctor's help is wider than 80 columns"
rc=0; "$GV_BIN" help nosuch 2>/dev/null || rc=$?
assert_eq "$rc" 2 "help of an unknown command"
rc=0; "$GV_BIN" doctor --frobnicate >"$GV_TMP/out" 2>"$GV_TMP/err" || rc=$?
assert_eq "$rc" 2 "unknown option"
assert_eq "$(wc -l <"$GV_TMP/err")" 1 "one line for an unknown option"
assert_eq "$(cat "$GV_TMP/err")" "ghostvram doctor: unknown option '--frobnicate'; see 'ghostvram help doctor'" "the line"
rc=0; "$GV_BIN" doctor --cache-min 2>"$GV_TMP/err" || rc=$?
assert_eq "$rc" 2 "missing value"
assert_eq "$(cat "$GV_TMP/err")" "ghostvram doctor: option '--cache-min' needs a value; see 'ghostvram help doctor'" "missing value line"
assert_eq "$("$GV_BIN" doctor --version)" "$("$GV_BIN" --version)" "--version after a command"
assert_eq "$("$GV_BIN" scan --version)" "$("$GV_BIN" --version)" "--version after scan"
rc=0; "$GV_BIN" nosuch 2>"$GV_TMP/err" || rc=$?
assert_eq "$rc" 2 "unknown command"
assert_eq "$(wc -l <"$GV_TMP/err")" 1 "one line for an unknown command"
echo PASS
