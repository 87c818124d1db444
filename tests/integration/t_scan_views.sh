#!/usr/bin/env bash
# scan from other points of view: from inside a new PID namespace (a container's view), and from
# bundles made from a live scan and edited by hand for the static cases (a task stuck in the
# driver, full vs partial visibility).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scan_lib.sh"

verdicts() { jq -r '[.gpus[] | .verdict] | join(",")' <<<"$1"; }
codes() { jq -r "[.gpus[$2].findings[].code] | join(\",\")" <<<"$1"; }

sim_new --gpus 2 --memory 16384 --reserved 512

note "from a new PID namespace, a live job outside is invisible-here (never a driver leak), exit 0"
need_unshare
sim_run --gpu 0 --mib 2048 --workers 1
set +e
S=$(GHOSTVRAM_SIM="$SIM" unshare --pid --fork --mount-proc "$GV_BIN" scan --json --confirm 300ms)
RC=$?
set -e
assert_eq "$RC" 0 "exit status inside the namespace"
assert_eq "$(jq -r '.host.initial_pidns' <<<"$S")" false "not the initial namespace"
assert_eq "$(jq -r '.gpus[0].verdict' <<<"$S")" invisible-here "verdict inside the namespace"
assert_eq "$(jq -r '.gpus[0].nvml_processes | length' <<<"$S")" 0 "the translating driver drops the owner"
grep -q driver-leak <<<"$(codes "$S" 0)" && fail "invisible owners must never make a driver leak"
grep -q "on the host" <<<"$(jq -r '.gpus[0].findings[0].next_step' <<<"$S")" || fail "next step says: run on the host"

note "the same with a host-PID driver (R470): the listed PID is foreign"
"$GV_BIN" sim set "$SIM" driver=470.42.01 >/dev/null
S=$(GHOSTVRAM_SIM="$SIM" unshare --pid --fork --mount-proc "$GV_BIN" scan --json --confirm 300ms)
assert_eq "$(jq -r '.gpus[0].verdict' <<<"$S")" foreign-namespace "host-PID verdict inside the namespace"
assert_eq "$(jq -r '.gpus[0].memory.foreign_bytes' <<<"$S")" $((2048 * MIB)) "foreign bytes"
"$GV_BIN" sim set "$SIM" driver=default >/dev/null
kill_wait "$OWNER" "${WORKERS[@]}"

note "a bundle of a killed job reproduces the live verdict"
sim_run --gpu 1 --mib 1024 --workers 2
kill_wait "$OWNER"
B="$GV_TMP/bundle"
set +e
LIVE=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms --save-bundle "$B")
assert_eq $? 1 "live exit"
OFF=$("$GV_BIN" scan --json --from-bundle "$B")
assert_eq $? 1 "bundle exit"
set -e
pick='[.gpus[] | {index, verdict, memory, ghost_confirmed, p: [.processes[] | {pid, attribution}]}]'
assert_eq "$(jq -c "$pick" <<<"$OFF")" "$(jq -c "$pick" <<<"$LIVE")" "bundle reproduces the scan"
# the comparison holds only if both are right: pin the values too (two wrong alike would pass)
for S in "$LIVE" "$OFF"; do
        assert_eq "$(jq -r '.gpus[1].verdict' <<<"$S")" orphaned-holders "verdict of GPU 1"
        assert_eq "$(jq -r '.gpus[1].memory.ghost_bytes' <<<"$S")" $((1024 * MIB)) "ghost bytes of GPU 1"
        assert_eq "$(jq -r '.gpus[1].memory.used_bytes' <<<"$S")" $((1024 * MIB)) "used bytes of GPU 1"
        assert_eq "$(jq -r '.gpus[1].ghost_confirmed' <<<"$S")" true "confirmed"
        assert_eq "$(jq -r '[.gpus[1].processes[] | select(.attribution != null) | .pid] | sort | map(tostring) | join(" ")' <<<"$S")" \
                "$(printf '%s\n' "${WORKERS[@]}" | sort | tr '\n' ' ' | sed 's/ $//')" "attributed workers"
        assert_eq "$(jq -r '[.gpus[1].processes[] | select(.attribution != null) | .attribution.link] | unique | join(",")' <<<"$S")" \
                process-group "link"
        assert_eq "$(jq -r '.gpus[0].verdict' <<<"$S")" ok "verdict of GPU 0"
        assert_eq "$(jq -r '.gpus[0].memory.used_bytes' <<<"$S")" 0 "used bytes of GPU 0"
done
[ -d "$B/confirm/proc" ] || fail "the bundle holds the confirming sample"
kill_wait "${WORKERS[@]}"

note "D-state worker in both samples: stuck-in-driver; in one sample only: a suspect"
D="$GV_TMP/dstate"
cp -a "$B" "$D"
w=${WORKERS[0]}
bundle_dstate "$D" "$w"
set +e
S=$("$GV_BIN" scan --json --from-bundle "$D")
set -e
assert_eq "$(jq -r '.gpus[1].verdict' <<<"$S")" stuck-in-driver "two samples in D"
assert_eq "$(jq -r '.gpus[1].findings[0].confidence' <<<"$S")" high "wait inside the nvidia modules"
assert_eq "$(jq -r '.gpus[1].findings[0].pids | join(",")' <<<"$S")" "$w" "the stuck PID"
rm -rf "$D/confirm"
set +e
S=$("$GV_BIN" scan --json --from-bundle "$D")
set -e
assert_eq "$(jq -r '.gpus[1].verdict' <<<"$S")" orphaned-holders "one sample: not stuck yet"
assert_eq "$(jq -r '.gpus[1].findings[] | select(.code == "stuck-in-driver") | .confidence' <<<"$S")" low "one sample: a suspect"

note "no holder and full visibility: driver-leak; the same without root: not a driver leak"
L="$GV_TMP/leak"
cp -a "$B" "$L"
bundle_leak "$L" "${WORKERS[@]}"
set +e
S=$("$GV_BIN" scan --json --from-bundle "$L")
RC=$?
set -e
assert_eq "$(jq -r '.full_visibility' <<<"$S")" true "full visibility"
assert_eq "$(jq -r '.gpus[1].verdict' <<<"$S")" driver-leak "driver leak"
assert_eq "$RC" 1 "exit with a driver leak"
for dir in "$L" "$L/confirm"; do
        jq '.euid = 1000' "$dir/host.json" > "$dir/h" && mv "$dir/h" "$dir/host.json"
done
set +e
S=$("$GV_BIN" scan --json --from-bundle "$L")
set -e
assert_eq "$(jq -r '.full_visibility' <<<"$S")" false "not root"
grep -q driver-leak <<<"$(codes "$S" 1)" && fail "partial visibility must never make a driver leak"
assert_eq "$(jq -r '.gpus[1].verdict' <<<"$S")" unknown "partial visibility verdict"

note "hostile process names stay escaped in the text output"
H="$GV_TMP/hostile"
cp -a "$B" "$H"
w=${WORKERS[1]}
for dir in "$H" "$H/confirm"; do printf 'evil\033[2J\nname\0--flag\0' > "$dir/proc/$w/cmdline"; done
set +e
T=$("$GV_BIN" scan --from-bundle "$H")
set -e
if grep -q $'\033\\[2J' <<<"$T"; then fail "a raw escape sequence reached the terminal"; fi
grep -qF 'evil\e[2J\nname --flag' <<<"$T" || fail "the escaped command line is not shown"
echo "PASS"
