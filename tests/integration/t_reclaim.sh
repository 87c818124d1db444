#!/usr/bin/env bash
# reclaim on the simulated driver with real processes: the dry run changes nothing; --yes ends
# exactly the killed job's workers through pidfds, the memory comes back and the time is
# reported; a healthy job with live workers on another GPU, an NVML-only monitor holding device
# nodes and an unrelated process are untouched.
. "$(dirname "$0")/lib.sh"

reclaim() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 300ms "$@"; }
# reclaim --json, keeping the exit status in RC and the document in R
reclaim_rc() { set +e; R=$(reclaim --json "$@"); RC=$?; set -e; }
alive() { ! is_dead "$1"; }
sorted() { printf '%s\n' "$@" | sort -n | tr '\n' ' ' | sed 's/ $//'; }
targets() { jq -r '[.plan.targets[].pid] | sort | map(tostring) | join(" ")' <<<"$R"; }
result_of() { jq -r ".actions[] | select(.pid == $1) | .result" <<<"$R"; }
gpu() { jq -r ".gpus[] | select(.index == $1) | .$2" <<<"$R"; }

sim_new --gpus 2 --memory 16384 --reserved 512
note "a healthy job on GPU 0, a killed job's workers on GPU 1, a monitor and an unrelated process"
sim_run --gpu 0 --mib 1024 --workers 2
HEALTHY=("$OWNER" "${WORKERS[@]}")
sim_run --gpu 1 --mib 1536 --workers 2
DEAD=$OWNER
GHOSTW=("${WORKERS[@]}")
bash -c "exec 3<'$SIM/dev/nvidiactl' 4<'$SIM/dev/nvidia1'; exec sleep 600" &
MON=$!
sleep 600 &
OTHER=$!
track "$MON" "$OTHER"
kill_wait "$DEAD"
assert_eq "$(used 1)" $((1536 * MIB)) "the ghost holds GPU 1"

note "dry run: the plan names the workers and nothing changes"
reclaim_rc
assert_eq "$RC" 0 "dry-run exit status"
assert_eq "$(jq -r .dry_run <<<"$R")" true "dry_run"
assert_eq "$(jq -r .schema_version <<<"$R")" 2 "schema_version"
assert_eq "$(targets)" "$(sorted "${GHOSTW[@]}")" "planned targets"
assert_eq "$(jq -r '.plan.targets[0].link' <<<"$R")" process-group "link"
assert_eq "$(jq -r '.plan.targets[0].gpu_index' <<<"$R")" 1 "target GPU"
assert_eq "$(jq -r '.actions | length' <<<"$R")" 0 "no actions in a dry run"
assert_eq "$(gpu 1 recovery_seconds)" null "no recovery in a dry run"
assert_eq "$(gpu 1 before_bytes)" $((1536 * MIB)) "before bytes in the plan"
for p in "${GHOSTW[@]}" "${HEALTHY[@]}" "$MON" "$OTHER"; do alive "$p" || fail "dry run ended PID $p"; done
assert_eq "$(used 1)" $((1536 * MIB)) "memory still used after the dry run"
# the healthy owner is listed: a skipped line says so
assert_eq "$(jq -r ".plan.skipped[] | select(.pid == ${HEALTHY[0]}) | .rule" <<<"$R")" nvml-listed "healthy owner skipped"
text=$(reclaim </dev/null) || fail "text dry run"
grep -q "Dry run: 2 processes would get SIGTERM" <<<"$text" || fail "dry-run summary: $text"
grep -q "worker of dead PID $DEAD, same process group" <<<"$text" || fail "text names the link"

note "--yes: the workers end, the memory comes back, everything else lives"
reclaim_rc --yes --grace 2s --wait 10s
assert_eq "$RC" 0 "exit status after reclaiming"
assert_eq "$(jq -r .dry_run <<<"$R")" false "dry_run"
for w in "${GHOSTW[@]}"; do
        assert_eq "$(result_of "$w")" terminated "result of worker $w"
        assert_eq "$(jq -r ".actions[] | select(.pid == $w) | .signal" <<<"$R")" TERM "signal to $w"
        is_dead "$w" || fail "worker $w still alive"
done
assert_eq "$(jq -r '.actions | length' <<<"$R")" 2 "two actions"
assert_eq "$(gpu 1 before_bytes)" $((1536 * MIB)) "before"
assert_eq "$(gpu 1 after_bytes)" 0 "after"
assert_eq "$(gpu 1 freed_bytes)" $((1536 * MIB)) "freed"
assert_eq "$(gpu 1 recovered)" true "recovered"
jq -e '.gpus[] | select(.index == 1) | .recovery_seconds | type == "number" and . >= 0 and . < 10' <<<"$R" >/dev/null ||
        fail "recovery_seconds: $(gpu 1 recovery_seconds)"
assert_eq "$(gpu 0 before_bytes)" $((1024 * MIB)) "GPU 0 before"
assert_eq "$(gpu 0 after_bytes)" $((1024 * MIB)) "GPU 0 untouched"
assert_eq "$(gpu 0 recovery_seconds)" null "no recovery expected on GPU 0"
for p in "${HEALTHY[@]}" "$MON" "$OTHER"; do alive "$p" || fail "PID $p was touched"; done
assert_eq "$(used 1)" 0 "GPU 1 free"
assert_eq "$(used 0)" $((1024 * MIB)) "GPU 0 still used by the healthy job"
assert_eq "$(listed 0)" "${HEALTHY[0]}" "healthy owner still listed"

note "nothing left: exit 0, nothing to reclaim"
reclaim_rc --yes
assert_eq "$RC" 0 "exit with nothing to reclaim"
assert_eq "$(jq -r '.plan.targets | length' <<<"$R")" 0 "no targets"
grep -q "Nothing to reclaim" <<<"$(jq -r .summary <<<"$R")" || fail "summary: $(jq -r .summary <<<"$R")"

note "text output of a real reclaim, mapping-only workers, --gpu"
sim_run --gpu 1 --mib 512 --workers 1 --close-fds-in-workers
kill_wait "$OWNER"
W=${WORKERS[0]}
set +e
text=$(reclaim --yes --gpu 0 </dev/null)
rc=$?
set -e
assert_eq "$rc" 0 "--gpu 0 has no ghost: nothing to do"
alive "$W" || fail "--gpu 0 must not touch GPU 1's worker"
text=$(reclaim --yes --gpu 1 --grace 1s </dev/null) || fail "reclaim --gpu 1 exit $?"
grep -q "Memory recovered: 1 process ended" <<<"$text" || fail "text summary: $text"
grep -qE "GPU 1 +512 MiB → 0 MiB +freed 512 MiB +back in [0-9.]+ s" <<<"$text" || fail "text memory line: $text"
grep -qE "PID $W +terminated" <<<"$text" || fail "text action line: $text"
# as it happens: the memory's line each second, the one that says it is back once
assert_eq "$(grep -cE '^  \[ *[0-9.]+ s\] GPU 1: 0 MiB used: back \(512 MiB freed\)$' <<<"$text")" 1 "the line that says GPU 1 is back"
is_dead "$W" || fail "mapping-only worker still alive"

note "explicit --pid: an unrelated process only with --force; PID 1 and ghostvram's parent never"
reclaim_rc --yes --pid "$OTHER" --grace 1s
assert_eq "$RC" 3 "explicit --pid of a process holding no NVIDIA node, without --force"
alive "$OTHER" || fail "refused target ended"
reclaim_rc --yes --pid "$OTHER" --grace 1s --force
assert_eq "$RC" 0 "explicit --pid --force exit"
assert_eq "$(result_of "$OTHER")" terminated "explicit target"
is_dead "$OTHER" || fail "explicit target alive"
reclaim_rc --yes --pid 1
assert_eq "$RC" 3 "--pid 1 refused"
grep -qE "refused: --pid 1 \(.*\): PID 1" <<<"$(jq -r '.notes[]' <<<"$R")" || fail "PID 1 refusal: $(jq -c .notes <<<"$R")"
if [ $$ != 1 ]; then # the test's shell (PID 1 inside a new PID namespace)
        reclaim_rc --yes --pid $$
        assert_eq "$RC" 3 "--pid of an ancestor refused"
        grep -q "an ancestor of this ghostvram" <<<"$(jq -r '.notes[]' <<<"$R")" || fail "ancestor refusal: $(jq -c .notes <<<"$R")"
fi
# the subshell running ghostvram: its parent (or itself, if bash execs it)
set +e; R=$(reclaim --json --yes --pid "$BASHPID"); RC=$?; set -e
assert_eq "$RC" 3 "--pid of ghostvram's own subshell refused"
grep -qE "an ancestor of this ghostvram|ghostvram itself" <<<"$(jq -r '.notes[]' <<<"$R")" || fail "self refusal: $(jq -c .notes <<<"$R")"
for p in "${HEALTHY[@]}" "$MON"; do alive "$p" || fail "PID $p was touched"; done

note "a site policy protects the dead job's workers"
sim_run --gpu 1 --mib 512 --workers 1
kill_wait "$OWNER"
printf '# site\ncomm gv-simcuda\n' >"$GV_TMP/policy"
reclaim_rc --yes --policy "$GV_TMP/policy"
assert_eq "$RC" 1 "a ghost no process may be ended for"
assert_eq "$(jq -r ".plan.skipped[] | select(.pid == ${WORKERS[0]}) | .rule" <<<"$R")" policy-comm "policy rule"
alive "${WORKERS[0]}" || fail "protected worker was signalled"
note "a GPU without a process list: no default target can be checked"
"$GV_BIN" sim set "$SIM" notsup=0:processes >/dev/null
reclaim_rc --yes
assert_eq "$RC" 1 "nothing may be ended"
assert_eq "$(jq -r ".plan.skipped[] | select(.pid == ${WORKERS[0]}) | .rule" <<<"$R")" nvml-unknown "blind rule"
alive "${WORKERS[0]}" || fail "signalled without GPU 0's process list"
"$GV_BIN" sim set "$SIM" notsup=none >/dev/null
printf 'comm ok\nbogus line\n' >"$GV_TMP/bad"
set +e
err=$(reclaim --policy "$GV_TMP/bad" 2>&1 >/dev/null); rc=$?
set -e
assert_eq "$rc" 2 "bad policy file"
grep -q "$GV_TMP/bad:2: unknown keyword 'bogus'" <<<"$err" || fail "policy error message: $err"
set +e
reclaim --policy "$GV_TMP/missing" >/dev/null 2>&1; assert_eq $? 2 "missing policy file"
reclaim --signal STOP >/dev/null 2>&1; assert_eq $? 2 "bad signal"
reclaim --grace 10s --wait 5s >/dev/null 2>&1; assert_eq $? 2 "grace longer than --wait"
reclaim --pid 1 --cgroup /x >/dev/null 2>&1; assert_eq $? 2 "--pid with --cgroup"
reclaim --reset-gpu >/dev/null 2>&1; assert_eq $? 2 "--reset-gpu without --gpu"
reclaim --yes --dry-run >/dev/null 2>&1; assert_eq $? 2 "--yes with --dry-run"
reclaim --gpu 9 >/dev/null 2>&1; assert_eq $? 2 "--gpu beyond the GPUs"
reclaim --json --json-stream >/dev/null 2>&1; assert_eq $? 2 "--json with --json-stream"
set -e
grep -q "A process is a default target only if ALL of these hold" <<<"$("$GV_BIN" reclaim --help)" || fail "help"

note "a CUDA process tied to nothing: no empty 'left alone:' heading without --verbose"
sim_new --gpus 2 --memory 16384 --reserved 512 # a host of its own: nothing else holds its nodes
bash -c "exec 3<'$SIM/dev/nvidia-uvm' 4<'$SIM/dev/nvidiactl' 5<'$SIM/dev/nvidia0'; exec sleep 600" &
LONE=$!
track "$LONE"
wait_holder "$LONE" sleep
text=$(reclaim </dev/null)
grep -q "PID $LONE " <<<"$text" && fail "listed without --verbose: $text"
awk '/^  left alone:$/ { getline n; if (n !~ /^    PID /) bad = 1 } END { exit bad }' <<<"$text" ||
        fail "a heading with nothing under it: $text"
text=$(reclaim -v </dev/null)
grep -qE "^    PID $LONE +not-attributed" <<<"$text" || fail "--verbose lists it: $text"
kill_wait "$LONE"

note "not root, a root job's ghost: the reason is that other users' processes are out of sight; no reset offered"
chmod 755 "$GV_TMP" "$SIM"
nobody_copy
sim_run --gpu 1 --mib 512 --workers 2
kill_wait "$OWNER"
set +e
text=$(GHOSTVRAM_SIM="$SIM" setpriv --reuid=65534 --regid=65534 --clear-groups "$NOBODY_BIN" reclaim --confirm 300ms \
        --gpu 1 </dev/null 2>&1)
rc=$?
set -e
assert_eq "$rc" 1 "not root: a ghost no process may be ended for"
assert_eq "$(tail -1 <<<"$text")" "A confirmed ghost, but not root: other users' processes are out of sight, and the holders may be among them. Run \`sudo ghostvram reclaim --gpu 1\` before anything else (never reset a GPU on this view)." "the summary"
grep -q "see why above\|--reset-gpu\|--reload-uvm" <<<"$text" && fail "says 'see why above' or offers a last resort: $text"
kill_wait "${WORKERS[@]}"
echo "PASS"
