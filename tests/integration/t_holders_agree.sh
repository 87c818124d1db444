#!/usr/bin/env bash
# The two holder walks agree: on trees with known holders — descriptors, mappings only, a hard
# link to a device file outside the prefix, a character-device alias made with mknod, holders in
# another PID namespace (seen from outside and from inside) — the BPF iterators
# (--holders bpf) and the /proc walk (--holders proc) name the same processes, nodes and ways,
# and both name what was set up. Root only (the iterators need CAP_BPF/CAP_SYS_ADMIN); under CI
# a missing privilege or a BPF path that cannot load is a failure, never a skip.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "the BPF iterators need root"

pick='[.holders[] | {pid, devices: (.devices | sort), via}] | sort_by(.pid)'
# snapshot by both paths into $GV_TMP/bpf.json and $GV_TMP/proc.json; they must be equal
# (the exit status is the snapshot's, not the walk's: without a driver it is not 0).
# With ONLY="PID..." set, only those holders are compared: a device number that is not this
# test's own (the mknod case below) is held by other processes of the host too, which may
# start or end between the two walks (another test run in parallel does the same mknod)
both() {
        local pick=$pick
        [ -z "${ONLY:-}" ] ||
                pick="[.holders[] | select(.pid | IN($(echo $ONLY | tr " " ",")))] | {holders: .} | $pick"
        "$@" --holders bpf >"$GV_TMP/bpf.json" || true
        [ "$(jq -r '.host.holder_source' "$GV_TMP/bpf.json" 2>/dev/null)" = bpf ] ||
                fail "--holders bpf did not answer: $("$@" | jq -r '.host.bpf_error' || true)"
        "$@" --holders proc >"$GV_TMP/proc.json" || true
        assert_eq "$(jq -r '.host.holder_source' "$GV_TMP/proc.json")" proc "source of the /proc run"
        assert_eq "$(jq -c "$pick" "$GV_TMP/bpf.json")" "$(jq -c "$pick" "$GV_TMP/proc.json")" "BPF = /proc"
}
# holder $2's nodes and ways in $1 ("nvidia0:fd,mmap nvidiactl:mmap ...")
nodes_of() {
        jq -r ".holders[] | select(.pid == $2) | [.via | to_entries[] | \"\(.key):\(.value | join(\",\"))\"] | sort | join(\" \")" "$1"
}
expect() { # PID EXPECTED WHAT: in both files
        local f
        for f in "$GV_TMP/bpf.json" "$GV_TMP/proc.json"; do
                assert_eq "$(nodes_of "$f" "$1")" "$2" "$3 ($(basename "$f" .json))"
        done
}
snap() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json "$@"; }

sim_new --gpus 2 --memory 16384 --reserved 512
all="nvidia-uvm:fd,mmap nvidia0:fd,mmap nvidia1:fd,mmap nvidiactl:fd,mmap"

note "descriptors and mappings: a job and its two workers"
sim_run --gpu 1 --mib 1024 --workers 2
job=("$OWNER" "${WORKERS[@]}")
note "mappings only: a worker that closed its descriptors, its owner killed"
sim_run --gpu 0 --mib 512 --workers 1 --close-fds-in-workers
maponly=${WORKERS[0]}
kill_wait "$OWNER"
note "a hard link to nvidia1 outside the prefix, held open: the same file (st_dev, st_ino)"
ln "$SIM/dev/nvidia1" "$GV_TMP/hardlink"
sleep 1000 5<"$GV_TMP/hardlink" & hl=$!; track "$hl"
note "a bystander with unrelated descriptors"
sleep 1000 5</dev/null 6<"$0" & by=$!; track "$by"

both snap
for p in "${job[@]}"; do expect "$p" "$all" "job process $p"; done
expect "$maponly" "nvidia-uvm:mmap nvidia0:mmap nvidia1:mmap nvidiactl:mmap" "mapping-only worker"
expect "$hl" "nvidia1:fd" "holder of the hard link"
expect "$by" "" "bystander"
note "description families: the same partition of the holders from the kernel's file pointers and from kcmp"
fam_sets() { jq -c '[.holders | group_by(.family)[] | map(.pid) | sort] | sort' "$1"; }
assert_eq "$(fam_sets "$GV_TMP/bpf.json")" "$(fam_sets "$GV_TMP/proc.json")" "families: BPF = /proc"
assert_eq "$(jq -r "[.holders[] | select(.pid | IN($(IFS=,; echo "${job[*]}"))) | .family] | unique | length" "$GV_TMP/bpf.json")" 1 \
        "the job and its workers are one family"
assert_eq "$(jq -r ".holders[] | select(.pid == ${job[0]}) | .family" "$GV_TMP/bpf.json")" \
        "$(jq -r ".holders[] | select(.pid == ${job[0]}) | .family" "$GV_TMP/proc.json")" "the same family number"
assert_eq "$(jq -r ".holders[] | select(.pid == $maponly) | .family_note" "$GV_TMP/proc.json")" \
        "it refers to the nodes by mapping only, which kcmp cannot compare" "/proc: the mapping-only worker stands alone, and says why"
assert_eq "$(jq -r ".holders[] | select(.pid == $maponly) | .family_note" "$GV_TMP/bpf.json")" null "BPF compares mappings too"
assert_eq "$(jq -r '.host.family_source' "$GV_TMP/bpf.json") $(jq -r '.host.family_source' "$GV_TMP/proc.json")" "bpf kcmp" "how each grouped"

note "the two BPF loaders: the light skeleton (the kernel relocates, no BTF read here) and the"
note "full one (libbpf reads the kernel's BTF, as on a kernel older than 5.17) answer alike"
need_tool strace strace
: "${GV_BIN_HOOKS:?GV_BIN_HOOKS must name ghostvram-testhooks (the build with the test hooks)}"
loaders() { # LABEL ENV...: snapshot --holders bpf into $GV_TMP/LABEL.json, its openat calls in LABEL.st
        local label=$1; shift
        # LeakSanitizer (ASan builds) cannot work under ptrace
        env "$@" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" GHOSTVRAM_SIM="$SIM" \
                strace -f -qq -e trace=openat -o "$GV_TMP/$label.st" \
                "$GV_BIN_HOOKS" snapshot --json --holders bpf >"$GV_TMP/$label.json" || true
        assert_eq "$(jq -r '.host.holder_source' "$GV_TMP/$label.json")" bpf "source ($label)"
        assert_eq "$(jq -c "$pick" "$GV_TMP/$label.json")" "$(jq -c "$pick" "$GV_TMP/bpf.json")" "BPF ($label) = BPF"
}
loaders light GHOSTVRAM_TEST_BPF_FULL=0
loaders full GHOSTVRAM_TEST_BPF_FULL=1
grep -q '"/sys/kernel/btf/vmlinux"' "$GV_TMP/light.st" && fail "the light skeleton read the kernel's BTF"
grep -q '"/sys/kernel/btf/vmlinux"' "$GV_TMP/full.st" || fail "the full skeleton did not load (GHOSTVRAM_TEST_BPF_FULL)"

note "a character-device alias made with mknod: matched by its device number"
mkdir -p "$GV_TMP/cdev" "$GV_TMP/elsewhere"
# the numbers of /dev/full (1:7): a device anyone can open, that nothing here holds
mknod "$GV_TMP/cdev/nvidia0" c 1 7
mknod "$GV_TMP/elsewhere/alias" c 1 7
sleep 1000 5<"$GV_TMP/elsewhere/alias" & al=$!; track "$al"
sleep 1000 5<"$GV_TMP/cdev/nvidia0" & di=$!; track "$di"
ONLY="$al $di $hl" both "$GV_BIN" snapshot --json --nvml-lib "$GV_TMP/no-such-lib.so" --dev-prefix "$GV_TMP/cdev/nvidia"
expect "$al" "nvidia0:fd" "holder of the alias"
expect "$di" "nvidia0:fd" "holder of the node itself"
expect "$hl" "" "the hard link to a sim node (not under this prefix)"

note "another PID namespace: holders seen from outside by their PIDs here, from inside by theirs"
need_unshare
inner=$(cat <<'INNER'
set -e
exec 7<"$SIM/dev/nvidia0"
sleep 1000 & echo "$!" >"$GV_TMP/ns-sleep"
for h in bpf proc; do
        GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json --holders "$h" 7<&- >"$GV_TMP/ns-$h.json"
done
echo ready >"$GV_TMP/ns-ready"
exec sleep 1000
INNER
)
SIM="$SIM" GV_BIN="$GV_BIN" GV_TMP="$GV_TMP" unshare --pid --fork --mount-proc --kill-child bash -c "$inner" &
ns_launcher=$!; track "$ns_launcher"
wait_for_line "$GV_TMP/ns-ready" ready
inner_sleep=$(cat "$GV_TMP/ns-sleep")
for h in bpf proc; do
        f="$GV_TMP/ns-$h.json"
        assert_eq "$(jq -r '.host.holder_source' "$f")" "$h" "source inside the namespace ($h)"
        assert_eq "$(jq -r '.host.initial_pidns' "$f")" false "inside: not the initial namespace ($h)"
        assert_eq "$(jq -r '[.holders[].pid] | sort | map(tostring) | join(" ")' "$f")" "1 $inner_sleep" "holders inside, by their PIDs there ($h)"
        assert_eq "$(jq -r '.holders[] | select(.pid == 1) | .via.nvidia0 | join(",")' "$f")" fd "PID 1 inside holds nvidia0 by fd ($h)"
done
assert_eq "$(jq -c "$pick" "$GV_TMP/ns-bpf.json")" "$(jq -c "$pick" "$GV_TMP/ns-proc.json")" "BPF = /proc inside the namespace"
out1=$(pgrep -P "$ns_launcher") || fail "PID 1 of the namespace not found"
assert_eq "$(pid_in_ns_of "$out1" 1)" "$out1" "unshare's child is PID 1 there"
out2=$(pid_in_ns_of "$out1" "$inner_sleep") || fail "the namespace's sleep not found"
track "$out1" "$out2"
both snap
expect "$out1" "nvidia0:fd" "the namespace's PID 1, seen from outside"
expect "$out2" "nvidia0:fd" "the namespace's sleep, seen from outside"
for p in "${job[@]}"; do expect "$p" "$all" "job process $p, again"; done
echo "PASS"
