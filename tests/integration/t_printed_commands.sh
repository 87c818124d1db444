#!/usr/bin/env bash
# Every command ghostvram prints is tested by running it. In each situation of the integration
# suite (a ghost of orphaned workers, setsid families, a hidden owner, a live job, not root, a lost
# GPU after Xid 79, no process list, a hung GPU, no driver, memory being freed, MIG, unattributed
# memory, recorded bundles of a task stuck in the driver and of a driver leak), the printers (scan,
# check, reclaim's dry runs, doctor and doctor --explain, top's batch frame, xid and xid explain;
# text and JSON; stdout and stderr) write what they say, and printed_commands.py collects every
# next step, hint, fix and banner from it and runs each in its dry form on the same simulated
# host (the rules: the top of printed_commands.py). A usage error, a refusal the printer could
# have foreseen, or a path split by the shell fails. Every simulated host lies under a path
# with a space (one under a newline too): the printed paths must be quoted for the shell.
# Known failures, fixed elsewhere, are listed in KNOWN_FAILURES there and print KNOWN.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scan_lib.sh"
. "$(dirname "$0")/track_lib.sh"
need_tool jq jq
need_tool python3 python3
need_tool setpriv util-linux
PC="$(dirname "$0")/printed_commands.py"
FAILED=()
N=0

sleep 600 &
SPARE=$! # a harmless live process for a PID placeholder (reclaim refuses it: no NVIDIA node)
track "$SPARE"

# A fresh simulated host under a path with a space; sets SIM, keeps sim init's words in $OUT.
host_new() { # NAME [sim init options]
        SIM="$GV_TMP/host $1.$RANDOM"
        OUT="$GV_TMP/out $1"
        mkdir -p "$OUT"
        shift
        "$GV_BIN" sim init "$SIM" "$@" >"$OUT/sim-init.out" 2>"$OUT/sim-init.err"
}

# The situation's view: the user (PFX, GVB: setpriv to nobody and a copy of the binary) and the
# options its host needs (EXTRA: a bundle, a missing driver, a short call deadline).
PFX=(env)
GVB=$GV_BIN
EXTRA=()

# printer FILE SUBCOMMAND ARGS...: run a printer as the situation's user, on its host, with each
# EXTRA option the subcommand takes; stdout in FILE.out, stderr in FILE.err. Its exit status does
# not matter here (the other tests judge it): what it prints does.
printer() {
        local f=$1 sub=$2 e=() i
        shift 2
        for ((i = 0; i < ${#EXTRA[@]}; i++)); do
                if [[ ${EXTRA[i]} == --* ]] && "$GV_BIN" help "$sub" | grep -- "${EXTRA[i]}\b" >/dev/null; then
                        e+=("${EXTRA[i]}")
                        [[ ${EXTRA[i + 1]:-} == --* || -z ${EXTRA[i + 1]:-} ]] || e+=("${EXTRA[i + 1]}")
                fi
        done
        local env=(env -u GHOSTVRAM_SIM)
        [ -z "$SIM" ] || env+=("GHOSTVRAM_SIM=$SIM")
        local rc=0
        timeout 60 "${PFX[@]}" "${env[@]}" NO_COLOR=1 "$GVB" "$sub" "$@" "${e[@]}" >"$OUT/$f.out" 2>"$OUT/$f.err" || rc=$?
        # exit 1 or 3 are answers; a printer that hung, crashed or tripped a sanitizer printed
        # less than it should, and what it did not print cannot be judged
        if [ "$rc" -ge 124 ] || grep -qE 'AddressSanitizer|runtime error:' "$OUT/$f.err"; then
                echo "  FAIL  printer '$sub $*' ended with status $rc: $(head -c 400 "$OUT/$f.err")"
                FAILED+=("$f")
        fi
}

# The printers of every situation; bundle situations skip those that read the live host only.
print_all() {
        local live=yes i
        [[ " ${EXTRA[*]} " == *" --from-bundle "* ]] && live=no
        printer scan scan --confirm 300ms
        printer scan-v scan --confirm 300ms --verbose
        printer scan-json scan --confirm 300ms --json
        printer check check --confirm 300ms
        printer reclaim reclaim --confirm 300ms
        printer reclaim-json reclaim --confirm 300ms --json
        for i in 0 1; do
                printer "reset$i" reclaim --confirm 300ms --reset-gpu --gpu "$i"
                printer "reset$i-json" reclaim --confirm 300ms --reset-gpu --gpu "$i" --json
        done
        printer uvm reclaim --confirm 300ms --reload-uvm --force
        printer uvm-json reclaim --confirm 300ms --reload-uvm --force --json
        printer xid xid
        printer xid-json xid --json
        if [ "$live" = yes ]; then
                printer doctor doctor
                printer doctor-json doctor --json
                printer top top --batch --iterations 2 --interval 300ms
        fi
}

# judge NAME: run every command the situation printed; a failure is remembered, the next
# situation still runs.
judge() { # NAME [printed_commands.py options]
        local extra user=() name=$1
        shift
        extra=$(printf '%s\n' "${EXTRA[@]}" | jq -R . | jq -cs 'map(select(. != ""))')
        [ "${PFX[0]}" = env ] || user=(--user-prefix "$(printf '%s\n' "${PFX[@]}" | jq -R . | jq -cs .)" --user-bin "$GVB")
        N=$((N + 1))
        if ! python3 "$PC" check --situation "$name" --bin "$GV_BIN" --sim "$SIM" --spare-pid "$SPARE" \
                --extra "$extra" "${user[@]}" "$@" "$OUT"/*.out "$OUT"/*.err; then
                FAILED+=("$name")
        fi
}

# the words of the command line, not only of the binary: the quoting itself, read back by bash
note "sim init under a path with a space and with a newline: its next steps, read by bash, name it"
host_new "sim init"
judge sim-init
eval "words=($(sed -n 's/^next: ghostvram sim run //p' "$OUT/sim-init.out"))"
assert_eq "${words[0]}" "$SIM" "sim init's next step, split by bash"
SIM="$GV_TMP/host new"$'\n'"line"
OUT="$GV_TMP/out newline"
mkdir -p "$OUT"
"$GV_BIN" sim init "$SIM" >"$OUT/sim-init.out" 2>"$OUT/sim-init.err"
[ "$(grep -c '' "$OUT/sim-init.out")" = 3 ] || fail "a newline in the path broke sim init's lines: $(cat "$OUT/sim-init.out")"
printer scan scan --confirm 300ms
printer run-missing sim run "$SIM/nothing here" --gpu 0 --mib 1
judge sim-init-newline
grep -qF "\$'$GV_TMP/host new\\nline'" "$OUT/scan.out" || fail "the banner quotes the newline: $(head -1 "$OUT/scan.out")"

note "a ghost: a killed owner's workers hold its memory (and doctor --explain)"
host_new ghost --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 2048 --workers 2
kill_wait "$OWNER"
sim_shm_large "$SPARE" # doctor's host-shm next step, under the path with a space
print_all
grep -F "host-shm" "$OUT/doctor.out" | grep -F info >/dev/null || fail "no host-shm info: $(cat "$OUT/doctor.out")"
printer explain doctor --explain
printer explain-json doctor --explain --json
judge ghost
kill_wait "${WORKERS[@]}"

note "track's report of a job still running, its ledgers under a path with a space"
host_new track --gpus 2 --memory 16384 --reserved 512
LEDGER="$GV_TMP/ledger dir"
track_sim_run --gpu 0 --mib 256 --workers 1
cp "$GV_TMP/report" "$OUT/track-report.out"
grep -qF "\`ghostvram scan --ledger-dir '$LEDGER'\`" "$OUT/track-report.out" ||
        fail "track's report does not name the ledger directory quoted: $(cat "$OUT/track-report.out")"
kill_wait "$OWNER"
printer scan-ledger scan --confirm 300ms --ledger-dir "$LEDGER"
judge track
kill_wait "${WORKERS[@]}"

note "setsid workers and a launcher: families"
host_new families --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 2048 --workers 2 --setsid-workers 1
A=("$OWNER" "${WORKERS[@]}")
sim_run --gpu 1 --mib 1024 --workers 2 --worker-setsid --launcher-exits
B=("$OWNER" "${WORKERS[@]}")
kill_wait "${A[0]}" "${B[0]}"
print_all
judge families
kill_wait "${A[@]:1}" "${B[@]:1}"

note "a hidden dead owner (the driver drops its PID), workers holding by mapping only"
host_new hidden --gpus 2 --memory 16384 --reserved 512
"$GV_BIN" sim set "$SIM" hidden_owner=on >/dev/null
sim_run --gpu 1 --mib 1024 --workers 2 --close-fds-in-workers
kill_wait "$OWNER"
print_all
judge hidden-owner
kill_wait "${WORKERS[@]}"

note "a live job on GPU 0 (a reset of it is refused), a ghost on GPU 1"
host_new "live job" --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024 --workers 1
LIVE=("$OWNER" "${WORKERS[@]}")
sim_run --gpu 1 --mib 512 --workers 1
kill_wait "$OWNER"
DEADW=("${WORKERS[@]}")
print_all
judge live-job
kill_wait "${LIVE[@]}" "${DEADW[@]}"

note "memory no process is charged for beside a live job: unattributed"
host_new unattributed --gpus 2 --memory 16384 --reserved 512
"$GV_BIN" sim set "$SIM" uncharged_mib=0:512 >/dev/null
sim_run --gpu 0 --mib 1024
print_all
judge unattributed
kill_wait "$OWNER"

note "not root: root's dead job and live job are out of sight"
host_new "not root" --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024 --workers 2
kill_wait "$OWNER"
DEADW=("${WORKERS[@]}")
sim_run --gpu 1 --mib 512
LIVE=("$OWNER")
chmod 755 "$GV_TMP" "$SIM"
nobody_copy
PFX=(setpriv --reuid=65534 --regid=65534 --clear-groups)
GVB=$NOBODY_BIN
rm "$OUT"/sim-init.* # root's words: its next steps are for root
print_all
judge not-root --partial-view
PFX=(env)
GVB=$GV_BIN
kill_wait "${DEADW[@]}" "${LIVE[@]}"

note "GPU 1 lost after an Xid 79 (the kernel log says so), a ghost on GPU 0; xid explain"
host_new "lost gpu" --gpus 2 --memory 16384 --reserved 512
printf '%s\n%s\n' '6,100,4000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  560.35.03  Release Build  (dvs-builder@U16)  Thu Aug 22 00:00:00 UTC 2024' \
        '3,200,90000000,-;NVRM: Xid (PCI:0000:43:00): 79, pid=0, name=, GPU has fallen off the bus.' >"$SIM/kmsg"
"$GV_BIN" sim set "$SIM" gpu_lost=1:on >/dev/null
sim_run --gpu 0 --mib 1024 --workers 1
kill_wait "$OWNER"
print_all
printer explain79 xid explain 79 48 95 13 45
printer explain79-json xid explain 79 48 95 13 45 --json
judge lost-gpu
kill_wait "${WORKERS[@]}"

note "no process list on GPU 1 (NOT_SUPPORTED) under a live job"
host_new "no list" --gpus 2 --memory 16384 --reserved 512
"$GV_BIN" sim set "$SIM" notsup=1:processes >/dev/null
sim_run --gpu 1 --mib 1024 --workers 1
JOB=("$OWNER" "${WORKERS[@]}")
print_all
judge no-process-list
kill_wait "${JOB[@]}"

note "GPU 1's driver hangs (a short call deadline for every command)"
host_new hung --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024 --workers 1
kill_wait "$OWNER"
"$GV_BIN" sim set "$SIM" hang=1:nvmlDeviceGetMemoryInfo_v2 >/dev/null
EXTRA=(--call-timeout 1s)
print_all
judge hung-gpu
EXTRA=()
"$GV_BIN" sim set "$SIM" hang=none >/dev/null
kill_wait "${WORKERS[@]}"

note "memory being freed: a slow teardown"
host_new freeing --gpus 2 --memory 16384 --reserved 512
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=120000 >/dev/null
sim_run --gpu 0 --mib 1024
kill_wait "$OWNER"
print_all
judge freeing

note "MIG: a dead job's instance held by its workers beside a live instance"
host_new mig --gpus 2 --memory 16384 --reserved 512
"$GV_BIN" sim set "$SIM" mig_instances=0:2 >/dev/null
sim_run --gpu 0 --mib 1024 --mig-instance 1
LIVE=("$OWNER")
sim_run --gpu 0 --mib 2048 --mig-instance 2 --workers 2
kill_wait "$OWNER"
DEADW=("${WORKERS[@]}")
print_all
judge mig
kill_wait "${LIVE[@]}" "${DEADW[@]}"

note "recorded bundles: a worker stuck in the driver (D state), and a driver leak"
host_new bundles --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 1 --mib 1024 --workers 2
kill_wait "$OWNER"
B="$GV_TMP/bundle of a ghost"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms --save-bundle "$B" >/dev/null || true
D="$GV_TMP/bundle stuck"
cp -a "$B" "$D"
bundle_dstate "$D" "${WORKERS[0]}"
L="$GV_TMP/bundle leak"
cp -a "$B" "$L"
bundle_leak "$L" "${WORKERS[@]}"
SIM_LIVE=$SIM
SIM=""
OUT="$GV_TMP/out stuck" && mkdir -p "$OUT"
EXTRA=(--from-bundle "$D")
print_all
grep -q stuck-in-driver "$OUT/scan-json.out" || { jq -c ".gpus[] | [.index, .verdict, .findings]" "$OUT/scan-json.out" >&2; cat "$OUT/scan-json.out" | head -c 3000 >&2; fail "the stuck bundle is not stuck-in-driver"; }
judge bundle-stuck
OUT="$GV_TMP/out leak" && mkdir -p "$OUT"
EXTRA=(--from-bundle "$L")
print_all
grep -q driver-leak "$OUT/scan-json.out" || fail "the leak bundle is not a driver leak"
judge bundle-leak
EXTRA=()
SIM=$SIM_LIVE
kill_wait "${WORKERS[@]}"

note "no driver (no NVML library, no simulated host)"
SIM=""
OUT="$GV_TMP/out no driver" && mkdir -p "$OUT"
EXTRA=(--nvml-lib /nonexistent/libnvidia-ml.so.1)
print_all
judge no-driver
EXTRA=()

[ "${#FAILED[@]}" = 0 ] || fail "printed commands that fail when pasted, in: ${FAILED[*]} (each listed above)"
echo "PASS ($N situations)"
