#!/usr/bin/env bash
# reclaim --cgroup on a cgroup made for the test under the cgroup2 mount: refused (nothing
# signalled) while a live NVML-listed owner is inside; a finished job's cgroup is ended
# (cgroup.kill where the kernel has it) and the memory comes back.
. "$(dirname "$0")/lib.sh"

CG2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CG2" ] || skip "no cgroup2 mount here"
BASE="$CG2/gv-test.${GV_TMP##*/}" # unique: $$ is 1 in every PID namespace
mkdir "$BASE" 2>/dev/null || skip "cannot create a cgroup under $CG2 (not writable here)"
cleanup_cg() {
        local d
        for d in "$BASE"/*/ "$BASE"; do
                [ -d "$d" ] || continue
                [ -e "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null
                for _ in $(seq 100); do rmdir "$d" 2>/dev/null && break; sleep 0.02; done
        done
}
gv_on_exit cleanup_cg
mkdir "$BASE/job_live" "$BASE/job_done"
# moving a process needs write access to the common ancestor's cgroup.procs
ORIG=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
echo $$ >"$BASE/job_live/cgroup.procs" 2>/dev/null && echo $$ >"$CG2$ORIG/cgroup.procs" ||
        skip "cannot move processes between cgroups here"
REL="/${BASE#"$CG2"/}"

into() { # CGROUP PID...
        local cg=$1 p
        shift
        for p in "$@"; do echo "$p" >"$BASE/$cg/cgroup.procs"; done
}
reclaim_rc() { set +e; R=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 300ms --json "$@"); RC=$?; set -e; }

sim_new --gpus 2 --memory 16384 --reserved 512
note "a live job in its cgroup: refused, naming the owner"
sim_run --gpu 0 --mib 1024 --workers 2
LIVE=("$OWNER" "${WORKERS[@]}")
into job_live "${LIVE[@]}"
reclaim_rc --cgroup "$REL/job_live" --yes
assert_eq "$RC" 3 "refused"
grep -q "PID $OWNER (gv-simcuda) in $REL/job_live is a live owner on GPU 0" <<<"$(jq -r '.notes[]' <<<"$R")" ||
        fail "the owner is named: $(jq -c .notes <<<"$R")"
assert_eq "$(jq -r ".plan.skipped[] | select(.pid == $OWNER) | .rule" <<<"$R")" live-owner "the owner in the plan's skipped"
assert_eq "$(jq -r '.actions | length' <<<"$R")" 0 "no action"
for p in "${LIVE[@]}"; do is_dead "$p" && fail "PID $p was signalled"; done
[ -n "$(cat "$BASE/job_live/cgroup.procs")" ] || fail "the cgroup was emptied"

note "a finished job's cgroup: dry run, then ended; the memory comes back"
sim_run --gpu 1 --mib 2048 --workers 3
DONE=("${WORKERS[@]}")
into job_done "$OWNER" "${DONE[@]}"
kill_wait "$OWNER"
"$GV_BIN" sim set "$SIM" notsup=1:processes >/dev/null
reclaim_rc --cgroup "$REL/job_done" --yes
assert_eq "$RC" 3 "refused without a process list"
grep -q "GPU 1: NVML gave no process list" <<<"$(jq -r '.notes[]' <<<"$R")" || fail "blind refusal: $(jq -c .notes <<<"$R")"
for p in "${DONE[@]}"; do is_dead "$p" && fail "a blind reclaim ended $p"; done
"$GV_BIN" sim set "$SIM" notsup=none >/dev/null
reclaim_rc --cgroup "$BASE/job_done"
assert_eq "$RC" 0 "dry run"
assert_eq "$(jq -r .cgroup.process_count <<<"$R")" 3 "three processes"
# a plan as the other modes have: the cgroup's members are its targets
assert_eq "$(jq -r '[.plan.targets[].pid] | sort | map(tostring) | join(" ")' <<<"$R")" \
        "$(printf '%s\n' "${DONE[@]}" | sort -n | tr '\n' ' ' | sed 's/ $//')" "the plan's targets"
# a dry run recovers nothing: null on every GPU, the idle GPU 0 too
assert_eq "$(jq -r '[.gpus[].recovered] | map(tostring) | join(",")' <<<"$R")" null,null "recovered in a dry run"
for p in "${DONE[@]}"; do is_dead "$p" && fail "dry run ended $p"; done
reclaim_rc --cgroup "$REL/job_done" --yes --wait 10s
assert_eq "$RC" 0 "ended"
assert_eq "$(jq -r .cgroup.path <<<"$R")" "$REL/job_done" "cgroup path"
method=$(jq -r .cgroup.method <<<"$R")
[ -e "$BASE/job_done/cgroup.kill" ] && assert_eq "$method" cgroup.kill "method" || assert_eq "$method" pidfd "method"
assert_eq "$(jq -r .cgroup.remaining <<<"$R")" 0 "nothing left"
assert_eq "$(jq -r '[.actions[].result] | unique | join(",")' <<<"$R")" killed "results"
for p in "${DONE[@]}"; do is_dead "$p" || fail "PID $p survived"; done
assert_eq "$(jq -r '.gpus[] | select(.index == 1) | .freed_bytes' <<<"$R")" $((2048 * MIB)) "freed"
jq -e '.gpus[] | select(.index == 1) | .recovery_seconds | type == "number"' <<<"$R" >/dev/null || fail "recovery time"
assert_eq "$(used 1)" 0 "GPU 1 free"
for p in "${LIVE[@]}"; do is_dead "$p" && fail "the live job ($p) was touched"; done

note "the text report of a cgroup ended: how it was ended, after the streamed lines"
sim_run --gpu 1 --mib 1024 --workers 1
TXT=("${WORKERS[@]}")
mkdir "$BASE/job_text"
into job_text "$OWNER" "${TXT[@]}"
kill_wait "$OWNER"
set +e
T=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 300ms --yes --wait 10s --cgroup "$REL/job_text")
RC=$?
set -e
assert_eq "$RC" 0 "text --yes"
grep -qE "^  ended with (cgroup.kill|SIGKILL through pidfds).*; 0 left after [0-9.]+ s$" <<<"$T" || fail "no 'ended with' line: $T"
assert_eq "$(grep -c "^cgroup $REL/job_text " <<<"$T")" 1 "the cgroup's header, once"
for p in "${TXT[@]}"; do is_dead "$p" || fail "PID $p survived"; done

note "refusals: the root cgroup, a cgroup that does not exist, ghostvram's own cgroup"
reclaim_rc --cgroup / --yes
assert_eq "$RC" 2 "root cgroup"
reclaim_rc --cgroup "$REL/nope" --yes
assert_eq "$RC" 2 "missing cgroup"
mkdir "$BASE/mine"
set +e
R=$(sh -c "echo \$\$ >'$BASE/mine/cgroup.procs'; exec env GHOSTVRAM_SIM='$SIM' '$GV_BIN' reclaim --confirm 300ms --json --yes --cgroup '$REL/mine'")
RC=$?
set -e
assert_eq "$RC" 3 "ghostvram's own cgroup"
grep -q "ghostvram itself" <<<"$(jq -r '.notes[]' <<<"$R")" || fail "self refusal: $(jq -c .notes <<<"$R")"
echo "PASS"
