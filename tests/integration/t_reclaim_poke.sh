#!/usr/bin/env bash
# reclaim --poke: a tiny CUDA client (cuInit, a context, 2 MiB allocated and freed) on one GPU,
# in a child with a deadline, the memory measured before and after. On the simulated driver:
# with flush_on_new_context the residue a dead context left (leaked_mib) goes, exactly; without
# it nothing changes and the next step (the reset's dry run) is printed and runs; no libcuda is
# said and exits 3; a hung cuInit is killed at the deadline; a GPU with live jobs is refused
# (PIDs named) unless --force; --json is one document in the project's vocabulary.
. "$(dirname "$0")/lib.sh"

poke() { set +e; R=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 200ms --poke "$@" 2>"$GV_TMP/err"); RC=$?; set -e; }
vocab() { printf '%s\n' "$R" >"$GV_TMP/$1.json"; python3 "$(dirname "$0")/json_vocabulary.py" "$1=$GV_TMP/$1.json" >/dev/null ||
        fail "$1: not the project's JSON vocabulary"; }

sim_new --gpus 2 --memory 16384 --reserved 512
"$GV_BIN" sim set "$SIM" leaked_mib=1:1536

note "a dry run without --yes: the checks, nothing done"
poke --gpu 1 --json
assert_eq "$RC" 0 "dry run exit"
assert_eq "$(jq -r '.mode, .dry_run, .poke.ran, .escalation.refused' <<<"$R" | tr '\n' ' ')" "poke true false false " "dry run"
assert_eq "$(used 1)" $((1536 << 20)) "nothing changed by a dry run"

note "knob off: the poke runs, nothing changes, the next step is printed and runs"
poke --gpu 1 --yes
assert_eq "$RC" 1 "nothing changed: exit 1"
grep -q "cuInit ok, device ok, cuCtxCreate ok, cuMemAlloc ok, cuMemFree ok, cuCtxDestroy ok" <<<"$R" || fail "steps: $R"
grep -q "Nothing changed" <<<"$R" || fail "verdict: $R"
next=$(grep -o 'Next: `[^`]*`' <<<"$R" | head -1 | sed 's/^Next: `//; s/`$//')
assert_eq "$next" "sudo ghostvram reclaim --reset-gpu --gpu 1" "the next step"
set +e
out=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" ${next#sudo ghostvram } --confirm 0 --json 2>&1)
rc=$?
set -e
assert_eq "$(jq -r .mode <<<"$out")" reset-gpu "the next step runs reclaim's reset check (exit $rc)"
[ "$rc" != 2 ] || fail "the next step is a usage error: $out"
assert_eq "$(used 1)" $((1536 << 20)) "the residue stays"

note "knob on: the poke gives back the residue, exactly"
"$GV_BIN" sim set "$SIM" flush_on_new_context=1:on
poke --gpu 1 --yes --json
assert_eq "$RC" 0 "gave back: exit 0"
vocab flushed
assert_eq "$(jq -r '.poke.verdict' <<<"$R")" gave-back "verdict"
assert_eq "$(jq -r '.poke.freed_bytes' <<<"$R")" $((1536 << 20)) "freed bytes"
assert_eq "$(jq -r '.gpus[] | select(.index == 1) | "\(.before_bytes) \(.after_bytes)"' <<<"$R")" "$((1536 << 20)) 0" "before/after"
assert_eq "$(jq -r '.poke.steps_done | join(",")' <<<"$R")" "load,cuInit,device,cuCtxCreate,cuMemAlloc,cuMemFree,cuCtxDestroy" "steps"
UUID1=$(jq -r '.poke.uuid' <<<"$R")
assert_eq "$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json | jq -r '.gpus[1].uuid')" "$UUID1" "the poked GPU by UUID"
grep -q "The poke gave back 1536 MiB on GPU 1." <<<"$(jq -r .summary <<<"$R")" || fail "summary: $(jq -r .summary <<<"$R")"
assert_eq "$(used 1)" 0 "the residue is gone"
assert_eq "$(used 0)" 0 "GPU 0 untouched"

note "the GPU by UUID and by bus id, as --gpu takes them"
BUS1=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json | jq -r '.gpus[1].pci_bus_id')
poke --gpu "$UUID1" --json
assert_eq "$RC $(jq -r .poke.index <<<"$R")" "0 1" "by UUID"
poke --gpu "$BUS1" --json
assert_eq "$RC $(jq -r .poke.index <<<"$R")" "0 1" "by bus id"

note "no libcuda: said, exit 3, no crash"
mkdir -p "$GV_TMP/empty"
poke --gpu 1 --yes --cuda-lib "$GV_TMP/empty/libcuda.so.1" --json
assert_eq "$RC" 3 "no library: exit 3"
assert_eq "$(jq -r .escalation.refused <<<"$R")" true "refused"
grep -q "no CUDA driver library ($GV_TMP/empty/libcuda.so.1) was found" <<<"$(jq -r '.escalation.reasons[]' <<<"$R")" ||
        fail "reason: $(jq -c .escalation.reasons <<<"$R")"
# a name the loader searches for (no slash): the child tries, and says it could not
poke --gpu 1 --yes --cuda-lib libcuda-not-here.so.1 --json
assert_eq "$RC" 3 "not loadable: exit 3"
assert_eq "$(jq -r '.poke.verdict, .poke.failed_step' <<<"$R" | tr '\n' ' ')" "no-library load " "the load failed"

note "a hung cuInit: the child is killed at the deadline"
"$GV_BIN" sim set "$SIM" hang=cuInit
t0=$(now_ms)
poke --gpu 1 --yes --call-timeout 1s --json
t=$(($(now_ms) - t0))
"$GV_BIN" sim set "$SIM" hang=none
assert_eq "$RC" 1 "hung: exit 1"
assert_eq "$(jq -r '.poke.verdict, .poke.timed_out' <<<"$R" | tr '\n' ' ')" "hung true " "hung"
[ "$t" -lt 15000 ] || fail "the hang took $t ms (deadline 1 s)"
# this host's child only (its GPU's UUID is in its command line): the pidns twin of this test
# pokes a hung cuInit of its own at the same time
uuid=$(jq -r '.poke.uuid' <<<"$R")
[[ $uuid == GPU-* ]] || fail "no UUID in the poke's JSON: $uuid"
pgrep -f "ghostvram __poke .*$uuid" >/dev/null && fail "a poke child is left"

note "a GPU with live jobs: refused without --force (PIDs named), runs with it"
CUDA_VISIBLE_DEVICES=0 sim_run --gpu 0 --mib 1024
poke --gpu 0 --yes
assert_eq "$RC" 3 "refused: exit 3"
grep -q "GPU 0 has live jobs (NVML lists PID $OWNER)" <<<"$R" || fail "refusal: $R"
grep -q "may disturb them" <<<"$R" || fail "refusal says why: $R"
assert_eq "$(listed 0)" "$OWNER" "the job is untouched"
poke --gpu 0 --yes --force --json
assert_eq "$(jq -r '.poke.ran, (.escalation.warnings | length)' <<<"$R" | tr '\n' ' ')" "true 1 " "with --force it runs"
vocab forced
assert_eq "$(listed 0)" "$OWNER" "the job is still there"

note "usage: --poke needs --gpu; it is a mode of its own"
set +e
GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --poke >/dev/null 2>&1; assert_eq $? 2 "no --gpu"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --poke --gpu 0 --reset-gpu >/dev/null 2>&1; assert_eq $? 2 "two modes"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --cuda-lib /x --gpu 0 >/dev/null 2>&1; assert_eq $? 2 "--cuda-lib without --poke"
set -e
echo "ok"
