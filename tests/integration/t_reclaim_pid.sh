#!/usr/bin/env bash
# reclaim's refusals at the edges, with real processes on the simulated driver: --pid naming a
# process that holds no NVIDIA device node, another ghostvram, or a live NVML-listed owner (a
# running job) is refused (exit 3) unless --force; ending a process that held no ghost never reports "recovered"; --yes with --proc or
# --from-bundle is refused; on a terminal the plan is made again after the answer, and a plan
# that changed meanwhile is shown and asked again, never acted on.
. "$(dirname "$0")/lib.sh"

reclaim() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 300ms "$@"; }
reclaim_rc() { set +e; R=$(reclaim --json "$@"); RC=$?; set -e; }
alive() { ! is_dead "$1"; }

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 1 --mib 1024 --workers 2
DEAD=$OWNER
GHOSTW=("${WORKERS[@]}")
kill_wait "$DEAD"
sleep 600 &
SLEEPER=$!
# a ghostvram serve holds nvidiactl (NVML opens it); this one only looks like it
bash -c "exec 3<'$SIM/dev/nvidiactl'; exec -a ghostvram sleep 600" &
FAKEGV=$!
track "$SLEEPER" "$FAKEGV"
for i in $(seq 200); do grep -q nvidiactl <(ls -l "/proc/$FAKEGV/fd" 2>/dev/null) && break; sleep 0.01; done

note "--pid naming a process with no NVIDIA node: refused, exit 3, nothing signalled"
reclaim_rc --pid "$SLEEPER" --yes --grace 1s --wait 5s
assert_eq "$RC" 3 "exit status"
alive "$SLEEPER" || fail "the sleeper was ended"
assert_eq "$(jq -r '.actions | length' <<<"$R")" 0 "no actions"
assert_eq "$(jq -r ".plan.skipped[] | select(.pid == $SLEEPER) | .rule" <<<"$R")" no-nvidia-device "rule"
jq -r '.notes[]' <<<"$R" | grep -q "refused: --pid $SLEEPER (sleep): it holds no NVIDIA device node" ||
        fail "notes: $(jq -c .notes <<<"$R")"
jq -r .summary <<<"$R" | grep -q "Nothing was signalled" || fail "summary: $(jq -r .summary <<<"$R")"

note "--pid naming a ghostvram process: refused, exit 3"
reclaim_rc --pid "$FAKEGV" --yes --grace 1s --wait 5s
assert_eq "$RC" 3 "exit status"
alive "$FAKEGV" || fail "the ghostvram process was ended"
assert_eq "$(jq -r ".plan.skipped[] | select(.pid == $FAKEGV) | .rule" <<<"$R")" ghostvram-process "rule"
text=$(reclaim --pid "$FAKEGV" --yes --grace 1s --wait 5s </dev/null) && fail "text mode acted"
grep -q "a ghostvram process" <<<"$text" || fail "text says why: $text"

note "--force: the sleeper is ended, but nothing is claimed recovered (the ghost is still there)"
reclaim_rc --pid "$SLEEPER" --force --yes --grace 1s --wait 2s
assert_eq "$RC" 1 "exit status (the ghost stays)"
is_dead "$SLEEPER" || fail "the sleeper is alive"
assert_eq "$(jq -r '.actions[0].result' <<<"$R")" terminated "result"
jq -r .summary <<<"$R" | grep -q "recovered" && fail "claims recovered: $(jq -r .summary <<<"$R")"
jq -r .summary <<<"$R" | grep -q "none held a confirmed ghost, so no memory was expected back (the ghost is still there)" ||
        fail "summary: $(jq -r .summary <<<"$R")"
assert_eq "$(used 1)" $((1024 * MIB)) "the ghost is untouched"
for w in "${GHOSTW[@]}"; do alive "$w" || fail "worker $w was ended"; done

note "--pid naming a live owner (a running job on GPU 0): refused, exit 3; --force ends it, tied to GPU 0"
sim_run --gpu 0 --mib 512
LIVE=$OWNER
reclaim_rc --pid "$LIVE" --yes --grace 1s --wait 5s
assert_eq "$RC" 3 "exit status"
alive "$LIVE" || fail "the live owner was ended"
assert_eq "$(jq -c ".plan.skipped[] | select(.pid == $LIVE) | [.rule, .gpu_index]" <<<"$R")" '["live-owner",0]' "rule and GPU"
jq -r '.notes[]' <<<"$R" | grep -q "refused: --pid $LIVE (gv-simcuda): a live owner: NVML lists it on GPU 0 with 512 MiB" ||
        fail "notes: $(jq -c .notes <<<"$R")"
reclaim_rc --pid "$LIVE" --force --grace 1s --wait 5s
assert_eq "$RC" 0 "dry run with --force"
assert_eq "$(jq -c ".plan.targets[] | select(.pid == $LIVE) | [.gpu_index, .warning]" <<<"$R")" \
        '[0,"a live owner of GPU 0 (512 MiB listed): ending it ends a running job"]' "target tied to GPU 0, with a warning"
alive "$LIVE" || fail "a dry run ended the owner"

note "--yes with --proc or --from-bundle: refused, exit 2"
set +e
reclaim --yes --proc /proc >/dev/null 2>"$GV_TMP/err"; rc=$?
set -e
assert_eq "$rc" 2 "--yes --proc"
grep -q "cannot be used with --proc" "$GV_TMP/err" || fail "message: $(cat "$GV_TMP/err")"
mkdir "$GV_TMP/b"
set +e
reclaim --yes --from-bundle "$GV_TMP/b" >/dev/null 2>"$GV_TMP/err"; rc=$?
set -e
assert_eq "$rc" 2 "--yes --from-bundle"
grep -q "cannot be used with --from-bundle" "$GV_TMP/err" || fail "message: $(cat "$GV_TMP/err")"
for w in "${GHOSTW[@]}"; do alive "$w" || fail "worker $w was ended"; done

note "a terminal: the plan is made again after the answer; a changed plan is shown and asked again"
mkfifo "$GV_TMP/in"
OUT="$GV_TMP/tty.out"
GHOSTVRAM_SIM="$SIM" script -qfec "'$GV_BIN' reclaim --confirm 300ms --grace 1s --wait 5s" "$OUT" \
        <"$GV_TMP/in" >/dev/null 2>&1 &
SCRIPT=$!
track "$SCRIPT"
exec 7>"$GV_TMP/in"
wait_for_line "$OUT" "Send SIGTERM to these 2 processes now"
kill_wait "${GHOSTW[0]}"        # the world changes while the question is open
echo y >&7
for i in $(seq 500); do [ "$(grep -c 'now? \[y/N\]' "$OUT")" -ge 2 ] && break; sleep 0.01; done
grep -q "the plan changed while the question was open" "$OUT" || fail "no changed-plan note: $(cat "$OUT")"
grep -q "Send SIGTERM to these 1 process now" "$OUT" || fail "not asked again about the new plan: $(cat "$OUT")"
alive "${GHOSTW[1]}" || fail "acted on the changed plan without asking"
echo y >&7
exec 7>&-
for i in $(seq 1000); do is_dead "$SCRIPT" && break; sleep 0.01; done
is_dead "${GHOSTW[1]}" || fail "the confirmed new plan was not carried out: $(cat "$OUT")"
grep -q "Memory recovered: 1 process ended" "$OUT" || fail "summary: $(cat "$OUT")"
assert_eq "$(used 1)" 0 "GPU 1 free"

note "with --json, errors are JSON on stdout too"
set +e
J=$(env -u GHOSTVRAM_SIM "$GV_BIN" reclaim --json --nvml-lib "$GV_TMP/none/libnvidia-ml.so.1" 2>/dev/null); rc=$?
set -e
assert_eq "$rc" 3 "reclaim --json without a driver"
assert_eq "$(jq -r .exit_status <<<"$J")" 3 "exit_status in the JSON"
jq -r .error <<<"$J" | grep -q "cannot load NVML library" || fail "reclaim JSON error: $J"
set +e
J=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --json --yes --proc /proc 2>/dev/null); rc=$?
set -e
assert_eq "$rc" 2 "reclaim --json usage error"
jq -r .error <<<"$J" | grep -q "cannot be used with --proc" || fail "usage error JSON: $J"
set +e
J=$(env -u GHOSTVRAM_SIM "$GV_BIN" experiment --json --nvml-lib "$GV_TMP/none/libnvidia-ml.so.1" 2>/dev/null); rc=$?
set -e
assert_eq "$rc" 3 "experiment --json without a driver"
assert_eq "$(jq -r .command <<<"$J")" experiment "command"
jq -r .error <<<"$J" | grep -q "the experiment needs an NVIDIA GPU" || fail "experiment JSON error: $J"
